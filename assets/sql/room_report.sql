-- Where an attendee is now; zero rows means the seat is gone.
UPDATE seats
SET scenario = $2, renewal = $3, fencing = $4, pos = $5, t = $6, following = $7, seen = now()
WHERE id = $1
RETURNING seen
