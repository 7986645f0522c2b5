SELECT owner, fence, lease_version, expires_at
FROM leases
WHERE name = $1
