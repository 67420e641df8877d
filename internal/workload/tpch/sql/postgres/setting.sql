-- A setting as the session sees it; %s is its name.
SELECT current_setting('%s')
