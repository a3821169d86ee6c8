-- SPDX-License-Identifier: MIT
-- idmint_instagram(shard, seq) against Instagram's published PL/pgSQL
-- function (Instagram Engineering, "Sharding & IDs at Instagram"): for the
-- same sequence values and clock, the same id. Called in alternation at a
-- low rate, on two sequences with the same state, the shard and sequence
-- bits agree exactly and the time bits within the time between the clock
-- readings around the pair. (Bit for bit under a frozen clock, and what
-- happens past 1,024 ids a millisecond, is a scenario of
-- tests/pg/test_extension.sh: it needs a server under libfaketime.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idmint;
RESET client_min_messages;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- Their function as published: one copy (pg_regress names its input
-- directory in PG_ABS_SRCDIR).
\getenv abs_srcdir PG_ABS_SRCDIR
\set published :abs_srcdir '/sql/include/instagram_published.sql'
\i :published
CREATE SEQUENCE insta5.our_seq;

-- 300 pairs, 1 ms apart, ours first on odd rounds and theirs first on even
-- ones; the clock (Unix ms) read before and after each pair.
CREATE TEMP TABLE pairs (i int, t0 bigint, ours bigint, theirs bigint, t1 bigint);
DO $$
DECLARE
    t0 bigint;
    a bigint;
    b bigint;
BEGIN
    FOR i IN 1..300 LOOP
        t0 := floor(extract(epoch FROM clock_timestamp()) * 1000);
        IF i % 2 = 1 THEN
            a := idmint_instagram(5, 'insta5.our_seq');
            b := insta5.next_id();
        ELSE
            b := insta5.next_id();
            a := idmint_instagram(5, 'insta5.our_seq');
        END IF;
        INSERT INTO pairs
        VALUES (i, t0, a, b, floor(extract(epoch FROM clock_timestamp()) * 1000));
        PERFORM pg_sleep(0.001);
    END LOOP;
END $$;
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE ours & 8388607 = theirs & 8388607) AS shard_and_seq_bits_equal,
       count(*) FILTER (WHERE (ours & 1023) = i % 1024) AS seq_bits_are_nextval,
       count(*) FILTER (WHERE (ours >> 10) & 8191 = 5) AS shard_5,
       count(*) FILTER (WHERE (ours >> 23) + 1314220021721 BETWEEN t0 AND t1 AND
                              (theirs >> 23) + 1314220021721 BETWEEN t0 AND t1) AS times_within_reads,
       count(*) FILTER (WHERE abs((ours >> 23) - (theirs >> 23)) <= t1 - t0) AS times_agree,
       count(DISTINCT ours) AS distinct_ours
FROM pairs;

-- The instagram preset decodes them: shard 5, the sequence's residue, the
-- time of the clock.
SELECT count(*) AS decoded,
       count(*) FILTER (WHERE d.node = '{"shard": 5}' AND d.sequence = p.i % 1024 AND
                              d.time BETWEEN 'epoch'::timestamptz + p.t0 * interval '1 ms'
                                         AND 'epoch'::timestamptz + p.t1 * interval '1 ms')
           AS fields_right
FROM pairs AS p, idmint_decode(p.ours, 'instagram') AS d;

-- Past 1,023 the residue comes round (nextval 1024 is residue 0), and the
-- two still agree.
SELECT setval('insta5.table_id_seq', 1023), setval('insta5.our_seq', 1023);
SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t0 \gset
SELECT idmint_instagram(5, 'insta5.our_seq') AS ours \gset
SELECT insta5.next_id() AS theirs \gset
SELECT :ours & 8388607 AS ours_low_bits, :theirs & 8388607 AS theirs_low_bits,
       abs((:ours >> 23) - (:theirs >> 23))
           <= floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - :t0 AS times_agree;

-- A column default, as Instagram used theirs.
CREATE TABLE insta5.photos (id bigint PRIMARY KEY DEFAULT idmint_instagram(5, 'insta5.our_seq'),
                            caption text);
INSERT INTO insta5.photos (caption) SELECT 'photo ' || n FROM generate_series(1, 3000) AS n;
SELECT count(*) AS photos, count(DISTINCT id) AS distinct_ids,
       count(DISTINCT (id >> 10) & 8191) AS shards
FROM insta5.photos;

SET client_min_messages = warning;
DROP SCHEMA insta5 CASCADE;
RESET client_min_messages;
