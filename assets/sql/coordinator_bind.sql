-- A pooled connection serves many actors and runs: each batch first points
-- it at its run's schema and names who it acts for, so pg_stat_activity
-- shows which attendee and actor a statement belongs to.
SELECT set_config('search_path', $1, false), set_config('application_name', $2, false)
