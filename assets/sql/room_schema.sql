-- A room's shared state, in a schema of the room's own. Times come from the
-- server's clock (now()), so serve processes on machines whose clocks
-- disagree still agree on who is stale.

-- Every process serving the room (a serve process, the presenter): it beats
-- every idle_ms / 3, and a process silent for longer than its own idle_ms
-- is gone. Its seats, and their votes and goals, go with it.
CREATE TABLE IF NOT EXISTS servers (
    id      text        PRIMARY KEY,
    name    text        NOT NULL,
    idle_ms bigint      NOT NULL CHECK (idle_ms > 0),
    beat    timestamptz NOT NULL DEFAULT now()
);

-- One row per attendee; ord keeps join order.
CREATE TABLE IF NOT EXISTS seats (
    id        text        PRIMARY KEY,
    ord       bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    server_id text        NOT NULL REFERENCES servers (id) ON DELETE CASCADE,
    name      text        NOT NULL,
    scenario  text        NOT NULL DEFAULT '',
    renewal   text        NOT NULL DEFAULT '',
    fencing   text        NOT NULL DEFAULT '',
    pos       integer     NOT NULL DEFAULT 0,
    t         bigint      NOT NULL DEFAULT 0,
    following boolean     NOT NULL DEFAULT false,
    joined    timestamptz NOT NULL DEFAULT now(),
    seen      timestamptz NOT NULL DEFAULT now()
);

-- One choice per seat and question; a new choice replaces the old one. A
-- seat that leaves takes its votes with it, so an attendee who reconnects
-- and votes again is counted once.
CREATE TABLE IF NOT EXISTS votes (
    seat     text NOT NULL REFERENCES seats (id) ON DELETE CASCADE,
    question text NOT NULL,
    choice   text NOT NULL,
    PRIMARY KEY (seat, question)
);

-- The goals each seat reached, with the fewest moves it took.
CREATE TABLE IF NOT EXISTS goals (
    seat     text    NOT NULL REFERENCES seats (id) ON DELETE CASCADE,
    scenario text    NOT NULL,
    goal     text    NOT NULL,
    moves    integer NOT NULL CHECK (moves >= 0),
    PRIMARY KEY (seat, scenario, goal)
);

-- Where the presenter is: at most one row; seq counts every lead set.
CREATE TABLE IF NOT EXISTS lead (
    id       integer PRIMARY KEY CHECK (id = 1),
    seq      bigint  NOT NULL,
    scenario text    NOT NULL,
    renewal  text    NOT NULL,
    fencing  text    NOT NULL,
    pos      integer NOT NULL,
    t        bigint  NOT NULL,
    push     boolean NOT NULL
)
