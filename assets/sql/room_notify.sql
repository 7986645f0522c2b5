-- Tells every process listening on the room channel ($1) what changed
-- ($2, a JSON payload naming the room). Sent when the transaction commits.
SELECT pg_notify($1, $2)
