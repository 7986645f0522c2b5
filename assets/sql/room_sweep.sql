-- Removes the processes that stopped beating (each by its own idle bound),
-- and with them their seats, votes and goals; returns how many went.
WITH gone AS (
    DELETE FROM servers
    WHERE beat < now() - idle_ms * interval '1 millisecond'
    RETURNING id
)
SELECT count(*) FROM gone
