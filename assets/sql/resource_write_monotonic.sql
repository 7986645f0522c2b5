UPDATE resource_state SET fence = $1, value = $2
WHERE id = 1 AND fence <= $1
RETURNING fence, value
