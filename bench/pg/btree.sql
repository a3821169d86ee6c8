-- SPDX-License-Identifier: MIT
-- btree.sh's tables and helpers, loaded once the idmint extension (or
-- stand-ins.sql) is in place.

-- One table per primary key; the rest is the same: when the row was
-- inserted, its number in insertion order, and a little payload. The text
-- key is compared bytewise (COLLATE "C"), as ULIDs sort.
CREATE TABLE bt_snowflake (id bigint PRIMARY KEY DEFAULT idmint_next(),
    created timestamptz NOT NULL DEFAULT clock_timestamp(), n bigint NOT NULL, payload text);
CREATE TABLE bt_uuidv7 (id uuid PRIMARY KEY DEFAULT idmint_uuidv7(),
    created timestamptz NOT NULL DEFAULT clock_timestamp(), n bigint NOT NULL, payload text);
CREATE TABLE bt_uuidv4 (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    created timestamptz NOT NULL DEFAULT clock_timestamp(), n bigint NOT NULL, payload text);
CREATE TABLE bt_ulid (id text COLLATE "C" PRIMARY KEY DEFAULT idmint_ulid(),
    created timestamptz NOT NULL DEFAULT clock_timestamp(), n bigint NOT NULL, payload text);

-- What each batch cost: the INSERT's EXPLAIN (ANALYZE, BUFFERS, WAL), and
-- after it the sizes and the primary key's cumulative pg_statio counters
-- (batch 0: before the first batch, the baseline).
CREATE TABLE bench_batches (key text, batch int, rows bigint, started timestamptz,
    finished timestamptz, plan json, index_bytes bigint, table_bytes bigint,
    idx_blks_read bigint, idx_blks_hit bigint, PRIMARY KEY (key, batch));

-- What each range scan cost (run = 0: the first, after a restart).
CREATE TABLE bench_range (key text, access text, run int, plan json);

-- EXPLAIN (ANALYZE, BUFFERS, WAL) of a statement, run for real. Timing per
-- node is off: only the total time is wanted, without the clock reads.
CREATE FUNCTION bench_explain(q text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE
    j json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING OFF, FORMAT JSON) ' || q INTO j;
    RETURN j;
END;
$$;

-- The first Unix ms at or after ts.
CREATE FUNCTION bench_ms_ceil(ts timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT ceil(extract(epoch FROM ts) * 1000)::bigint
$$;

-- The smallest UUIDv7 of the first ms at or after ts (the 48-bit ms, then
-- zeros): with b's the same, id >= bound(a) AND id < bound(b) is [a, b).
CREATE FUNCTION bench_uuidv7_bound(ts timestamptz) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
    SELECT (lpad(to_hex(bench_ms_ceil(ts)), 12, '0') || repeat('0', 20))::uuid
$$;

-- v in n characters of Crockford's base32, most significant first.
CREATE FUNCTION bench_crockford(v bigint, n int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ',
                             ((v >> (5 * (n - 1 - i))) & 31)::int + 1, 1), '' ORDER BY i)
    FROM generate_series(0, n - 1) AS i
$$;

-- The smallest ULID of the first ms at or after ts (10 characters of time,
-- then 16 zeros).
CREATE FUNCTION bench_ulid_bound(ts timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT bench_crockford(bench_ms_ceil(ts), 10) || repeat('0', 16)
$$;

-- The Unix ms a UUIDv7 carries (its first 48 bits), read from its text:
-- the check of the ranges found through the primary key.
CREATE FUNCTION bench_uuidv7_ms(u uuid) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT ('x' || lpad(replace(substr(u::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
$$;

-- The Unix ms a ULID carries (its first 10 characters), the same way.
CREATE FUNCTION bench_ulid_ms(u text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT sum((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(u, i + 1, 1)) - 1)::bigint
               << (5 * (9 - i)))::bigint
    FROM generate_series(0, 9) AS i
$$;
