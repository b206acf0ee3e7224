-- Row ids made in SQL are UUIDv7 (RFC 9562), like the ones the services make (libs/db
-- ids.ts): 48 bits of Unix milliseconds, then random bits. A random (v4) key puts each
-- insert on a random page of its primary key index; on a ledger of millions of rows almost
-- every such page is touched for the first time since the last checkpoint and written whole
-- to the WAL (bench:ledger measured 5.4 full pages and 5.5 times the WAL per message). Ids
-- that sort by time fill the index's newest pages instead.
-- PostgreSQL 18 has uuidv7(); this is the same layout for 15 to 17.
CREATE OR REPLACE FUNCTION nahida_uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;
