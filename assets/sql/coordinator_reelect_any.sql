INSERT INTO leases (name, owner, fence, lease_version, expires_at)
VALUES ($1, $2, $3, $4::bigint + 1, $5::bigint + $6::bigint)
ON CONFLICT (name) DO UPDATE
SET expires_at = $5::bigint + $6::bigint
WHERE EXCLUDED.owner = $2
