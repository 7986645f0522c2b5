UPDATE resource_state SET epoch = $1, value = $2
WHERE id = 1
RETURNING epoch, value
