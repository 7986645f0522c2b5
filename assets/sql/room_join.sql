-- A new seat: $1 its id, $2 the process it is on, $3 the attendee's name.
INSERT INTO seats (id, server_id, name) VALUES ($1, $2, $3)
RETURNING joined, seen
