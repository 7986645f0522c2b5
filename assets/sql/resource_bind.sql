-- A pooled connection serves many runs: each request first points it at
-- its run's schema and names the run and actor it acts for, so
-- pg_stat_activity shows whose write it is running.
SELECT set_config('search_path', $1, false), set_config('application_name', $2, false)
