UPDATE leases
SET owner = $2, fence = $3, lease_version = $4::bigint + 1,
    expires_at = $5::bigint + $6::bigint
WHERE name = $1
