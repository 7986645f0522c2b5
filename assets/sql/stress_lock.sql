-- Stress only: reads the lease row and locks it, in the same batch (one
-- implicit transaction) as the coordinator statement that follows, so the
-- row seen here is exactly the row that statement acts on.
SELECT owner, fence, lease_version, expires_at
FROM leases
WHERE name = $1
FOR UPDATE
