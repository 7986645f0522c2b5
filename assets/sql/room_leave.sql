-- An attendee leaves, with their votes and goals.
DELETE FROM seats WHERE id = $1
