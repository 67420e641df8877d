-- A system variable as the session sees it; %s is its name.
SELECT @@%s
