-- This process leaves the room, taking its seats with it.
DELETE FROM servers WHERE id = $1
