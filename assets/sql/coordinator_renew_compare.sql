UPDATE leases
SET lease_version = lease_version + 1, expires_at = $5 + $6
WHERE name = $1 AND owner = $2 AND fence = $3 AND lease_version = $4
  AND expires_at > $5
