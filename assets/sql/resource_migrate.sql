-- Tables kept in a schema a client chose, from a leaserace before the
-- columns were named fence (they were epoch and stored_epoch), take the
-- new names, so resource_schema.sql and every write find them. Run before
-- resource_schema.sql, and only on a schema that may predate this one.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass('resource_state')
               AND attname = 'epoch' AND NOT attisdropped) THEN
        ALTER TABLE resource_state RENAME COLUMN epoch TO fence;
    END IF;
    IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass('effects')
               AND attname = 'epoch' AND NOT attisdropped) THEN
        ALTER TABLE effects RENAME COLUMN epoch TO fence;
        ALTER TABLE effects RENAME COLUMN stored_epoch TO stored_fence;
    END IF;
END
$$;
