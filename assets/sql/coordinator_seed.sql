INSERT INTO leases (name, owner, fence, lease_version, expires_at)
VALUES ($1, $2, $3, $4, $5)
