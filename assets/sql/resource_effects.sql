SELECT seq, actor, epoch, value, accepted, reason, stored_epoch
FROM effects
ORDER BY seq
