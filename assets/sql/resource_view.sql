-- The state and its effects in one statement, hence from one snapshot: the
-- first row (seq NULL) is the state, the rest are the effects in order.
SELECT NULL::bigint AS seq, NULL::text AS actor, fence, value,
       NULL::boolean AS accepted, NULL::text AS reason, NULL::bigint AS stored_fence
FROM resource_state
WHERE id = 1
UNION ALL
SELECT seq, actor, fence, value, accepted, reason, stored_fence
FROM effects
ORDER BY seq NULLS FIRST
