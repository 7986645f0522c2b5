-- Serialises whoever creates or drops one room's schema: two serve
-- processes starting at once would otherwise race in CREATE SCHEMA IF NOT
-- EXISTS and CREATE TABLE IF NOT EXISTS, and one of them fail. The lock is
-- the transaction's and ends with it. $1 is the room's schema name.
SELECT pg_advisory_xact_lock(hashtext('leaserace room ' || $1))
