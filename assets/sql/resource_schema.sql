-- The protected resource's own state, kept apart from the coordinator's
-- tables: the fence it last accepted, its value, and every write it saw.
CREATE TABLE IF NOT EXISTS resource_state (
    id    int    PRIMARY KEY CHECK (id = 1),
    fence bigint NOT NULL CHECK (fence >= 0),
    value jsonb  NOT NULL
);
-- seq counts from 1 after every reset (see resource_record.sql), so replays
-- and transcripts number their effects the same way each time.
CREATE TABLE IF NOT EXISTS effects (
    seq          bigint  PRIMARY KEY,
    actor        text    NOT NULL,
    fence        bigint  NOT NULL,
    value        jsonb   NOT NULL,
    accepted     boolean NOT NULL,
    reason       text    NOT NULL,
    stored_fence bigint  NOT NULL
);
-- The row always exists, so every write and reset can lock it.
INSERT INTO resource_state (id, fence, value) VALUES (1, 0, 'null')
ON CONFLICT (id) DO NOTHING
