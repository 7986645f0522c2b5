-- Stress only: puts one lane's lease row back to free before each run: no
-- owner, fence 0 and expired at 0, so the first acquire at any time wins.
INSERT INTO leases (name, owner, fence, lease_version, expires_at)
VALUES ($1, '', 0, 0, 0)
ON CONFLICT (name) DO UPDATE
SET owner = EXCLUDED.owner, fence = EXCLUDED.fence,
    lease_version = EXCLUDED.lease_version, expires_at = EXCLUDED.expires_at
