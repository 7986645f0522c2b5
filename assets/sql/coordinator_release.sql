UPDATE leases
SET expires_at = $4
WHERE name = $1 AND owner = $2 AND fence = $3 AND expires_at > $4
