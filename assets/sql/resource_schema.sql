-- The protected resource's own state, kept apart from the coordinator's
-- tables: the epoch it last accepted, its value, and every write it saw.
CREATE TABLE IF NOT EXISTS resource_state (
    id    int    PRIMARY KEY CHECK (id = 1),
    epoch bigint NOT NULL CHECK (epoch >= 0),
    value jsonb  NOT NULL
);
CREATE TABLE IF NOT EXISTS effects (
    seq      bigserial PRIMARY KEY,
    actor    text    NOT NULL,
    epoch    bigint  NOT NULL,
    value    jsonb   NOT NULL,
    accepted boolean NOT NULL,
    reason   text    NOT NULL,
    stored_epoch bigint NOT NULL
)
