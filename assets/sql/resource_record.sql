-- The writer holds the state row's lock (resource_lock.sql) until it
-- commits, so recorders run one at a time and max(seq) + 1 cannot collide.
INSERT INTO effects (seq, actor, fence, value, accepted, reason, stored_fence)
SELECT coalesce(max(seq), 0) + 1, $1::text, $2::bigint, $3::jsonb, $4::boolean, $5::text, $6::bigint
FROM effects
RETURNING seq, value
