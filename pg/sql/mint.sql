-- SPDX-License-Identifier: MIT
-- Minting: idmint_next (the server is started with idmint.layout twitter and
-- idmint.node 'datacenter=1,worker=7'), idmint_status, idmint_uuidv7,
-- idmint_uuidv7_time and idmint_ulid. Times are compared with the clock,
-- never printed.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idmint;
RESET client_min_messages;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- ---- idmint_next ----

-- This server's node values, the sequence within its 12 bits, the time
-- between the clock readings around the call (an id's time is the start of
-- its millisecond).
SELECT clock_timestamp() AS t0 \gset
SELECT idmint_next() AS id \gset
SELECT node, sequence BETWEEN 0 AND 4095 AS seq_in_12_bits,
       time BETWEEN date_trunc('milliseconds', :'t0'::timestamptz) AND clock_timestamp()
           AS time_between_clock_reads,
       idmint_time(:id) = time AS idmint_time_agrees
FROM idmint_decode(:id);

-- 1,000 ids of one statement, in the order minted: distinct, strictly
-- increasing.
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids, bool_and(id > prev) AS increasing
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
      FROM (SELECT n, idmint_next() AS id FROM generate_series(1, 1000) AS n) AS s) AS t;

-- A later statement, a later transaction and another session mint above.
SELECT idmint_next() AS first \gset
SELECT idmint_next() > :first AS later_statement_higher;
BEGIN;
SELECT idmint_next() > :first AS later_transaction_higher;
ROLLBACK;
SELECT idmint_next() AS before_reconnect \gset
\c -
SELECT idmint_next() > :before_reconnect AS other_session_higher;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- A column default: every row its own id, in insertion order.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT idmint_next(), n int NOT NULL);
INSERT INTO orders (n) SELECT generate_series(1, 500);
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       bool_and(id > prev) AS ids_follow_insertion_order
FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM orders) AS t;
DROP TABLE orders;

-- ---- idmint_status ----

SELECT ready, layout, epoch, node, lease, lease_state,
       last_time BETWEEN now() - interval '1 min' AND clock_timestamp() AS last_time_recent,
       state_mark >= last_time AS mark_covers_last_time, refused, message
FROM idmint_status();

-- ---- idmint_uuidv7 ----

-- 10,000 of one statement: version 7, RFC 9562 variant, strictly increasing
-- (uuid order is byte order, the order RFC 9562 sorts by).
SELECT count(*) AS uuids, count(DISTINCT u) AS distinct_uuids,
       bool_and(substr(u::text, 15, 1) = '7') AS version_7,
       bool_and(substr(u::text, 20, 1) IN ('8', '9', 'a', 'b')) AS variant_rfc9562,
       bool_and(u > prev) AS increasing
FROM (SELECT u, lag(u) OVER (ORDER BY n) AS prev
      FROM (SELECT n, idmint_uuidv7() AS u FROM generate_series(1, 10000) AS n) AS s) AS t;
SELECT idmint_uuidv7() AS u1 \gset
SELECT idmint_uuidv7() > :'u1'::uuid AS later_statement_higher;

-- ---- idmint_uuidv7_time ----

-- RFC 9562's test vector (appendix A.6): 2022-02-22 19:22:22 UTC,
-- 1645557742000 ms; the text's case does not matter.
SELECT idmint_uuidv7_time('017F22E2-79B0-7CC3-98C4-DC0C0C07398F'),
       idmint_uuidv7_time('017f22e2-79b0-7cc3-98c4-dc0c0c07398f') =
           'epoch'::timestamptz + 1645557742000 * interval '1 ms' AS is_1645557742000_ms;
-- The smallest and the largest 48-bit times.
SELECT idmint_uuidv7_time('00000000-0000-7000-8000-000000000000') AS first_ms,
       idmint_uuidv7_time('ffffffff-ffff-7fff-bfff-ffffffffffff') AS last_ms;
-- A minted one carries the time it was minted at.
SELECT clock_timestamp() AS t0 \gset
SELECT idmint_uuidv7_time(idmint_uuidv7())
           BETWEEN date_trunc('milliseconds', :'t0'::timestamptz) AND clock_timestamp()
           AS time_between_clock_reads;
SELECT idmint_uuidv7_time(NULL) IS NULL AS null_in_null_out;

-- ---- idmint_ulid ----

-- ULID text to its Unix ms: the first 10 characters, Crockford base32.
CREATE FUNCTION pg_temp.ulid_ms(u text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT sum((strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(u, i, 1)) - 1)::bigint
               << (5 * (10 - i)))::bigint
    FROM generate_series(1, 10) AS i $$;
-- The helper itself, on the ULID spec's example of a ULID made at
-- 1469918176385 ms.
SELECT pg_temp.ulid_ms('01ARYZ6S41TSV4RRFFQ69G5FAV');

-- 10,000 of one statement: 26 characters of Crockford base32 (the first at
-- most 7: 128 bits), strictly increasing as text (byte order).
SELECT count(*) AS ulids, count(DISTINCT u) AS distinct_ulids,
       bool_and(u ~ '^[0-7][0-9A-HJKMNP-TV-Z]{25}$') AS crockford_base32,
       bool_and(u COLLATE "C" > prev COLLATE "C") AS increasing
FROM (SELECT u, lag(u) OVER (ORDER BY n) AS prev
      FROM (SELECT n, idmint_ulid() AS u FROM generate_series(1, 10000) AS n) AS s) AS t;
SELECT idmint_ulid() AS l1 \gset
SELECT idmint_ulid() COLLATE "C" > :'l1' AS later_statement_higher;
-- Its first 10 characters are the ms it was minted at.
SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t0 \gset
SELECT pg_temp.ulid_ms(idmint_ulid())
           BETWEEN :t0 AND floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
           AS time_between_clock_reads;
