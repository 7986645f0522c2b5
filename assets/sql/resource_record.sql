INSERT INTO effects (actor, epoch, value, accepted, reason, stored_epoch)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING seq
