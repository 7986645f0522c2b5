-- This process is alive: register it, or move its beat on. $1 its id, $2
-- the name the board shows, $3 its idle bound in milliseconds.
INSERT INTO servers (id, name, idle_ms) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET beat = now(), idle_ms = excluded.idle_ms
