UPDATE leases
SET owner = $2, fence = fence + 1, lease_version = lease_version + 1,
    expires_at = $3::bigint + $4::bigint
WHERE name = $1 AND expires_at <= $3
