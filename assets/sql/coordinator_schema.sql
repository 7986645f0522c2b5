-- The coordinator: one row per lease. Logical time is plain numbers passed
-- in as parameters, never now(), so every run is deterministic.
CREATE TABLE IF NOT EXISTS leases (
    name          text   PRIMARY KEY,
    owner         text   NOT NULL,
    fence         bigint NOT NULL CHECK (fence >= 0),
    lease_version bigint NOT NULL CHECK (lease_version >= 0),
    expires_at    bigint NOT NULL
)
