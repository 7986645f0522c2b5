UPDATE leases
SET lease_version = lease_version + 1, expires_at = $5::bigint + $6::bigint
WHERE name = $1 AND owner = $2 AND fence = $3 AND lease_version = $4
  AND expires_at > $5
