-- Every query of the session without parallel workers.
SET max_parallel_workers_per_gather = 0
