WITH cleared AS (DELETE FROM effects)
INSERT INTO resource_state (id, epoch, value) VALUES (1, $1, $2)
ON CONFLICT (id) DO UPDATE SET epoch = EXCLUDED.epoch, value = EXCLUDED.value
