UPDATE leases
SET owner = $2, fence = $3, lease_version = $4 + 1, expires_at = $5 + $6
WHERE name = $1
