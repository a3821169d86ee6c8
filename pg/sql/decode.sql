-- SPDX-License-Identifier: MIT
-- Decoding: idmint_decode and idmint_time on ids composed by hand, with the
-- server's layout (twitter, datacenter 1, worker 7) and each preset's; and
-- round trips of minted ids. Every expected time is also computed apart, as
-- the epoch plus the time field, so a wrong epoch or shift shows twice.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idmint;
RESET client_min_messages;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- Unix ms to timestamptz, for the expected times.
CREATE FUNCTION pg_temp.at_ms(ms bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT 'epoch'::timestamptz + ms * interval '1 ms' $$;

-- ---- twitter: time:41@1ms,datacenter:5,worker:5,seq:12, epoch 1288834974657 ----

-- 2021-01-01 00:00:00.123 UTC, datacenter 3, worker 17, sequence 42.
SELECT ((1609459200123 - 1288834974657) << 22) | (3 << 17) | (17 << 12) | 42 AS id \gset
SELECT :id AS twitter_id;
SELECT *, time = pg_temp.at_ms(1609459200123) AS time_right FROM idmint_decode(:id, 'twitter');
-- The server's layout (NULL, the default) is twitter here: the same.
SELECT * FROM idmint_decode(:id);
SELECT * FROM idmint_decode(:id, NULL);
SELECT idmint_time(:id) AS server_layout, idmint_time(:id, 'twitter') AS twitter;
-- The extremes: 0 is the epoch; the largest bigint has every field full.
SELECT *, time = pg_temp.at_ms(1288834974657) AS time_right FROM idmint_decode(0, 'twitter');
SELECT *, time = pg_temp.at_ms(1288834974657 + (1::bigint << 41) - 1) AS time_right
FROM idmint_decode(9223372036854775807, 'twitter');

-- ---- discord: time:42@1ms,worker:5,process:5,seq:12, epoch 1420070400000 ----

-- Discord's own example (its API reference, "Snowflakes"): 175928847299117063
-- is 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
SELECT *, time = pg_temp.at_ms(1462015105796) AS time_right
FROM idmint_decode(175928847299117063, 'discord');
-- By hand: 2024-02-29 23:59:59.999 UTC, worker 31, process 2, increment 4095.
SELECT ((1709251199999 - 1420070400000) << 22) | (31 << 17) | (2 << 12) | 4095 AS id \gset
SELECT *, time = pg_temp.at_ms(1709251199999) AS time_right FROM idmint_decode(:id, 'discord');
SELECT idmint_time(:id, 'discord');

-- ---- instagram: time:41@1ms,shard:13,seq:10, epoch 1314220021721 ----

-- The fields of Instagram's own example ("Sharding & IDs at Instagram"):
-- 1387263000 ms into the epoch, shard 1341, nextval 5001 % 1024 = 905.
SELECT (1387263000::bigint << 23) | (1341 << 10) | (5001 % 1024) AS id \gset
SELECT :id AS instagram_id;
SELECT *, time = pg_temp.at_ms(1314220021721 + 1387263000) AS time_right
FROM idmint_decode(:id, 'instagram');
-- The largest bigint: shard 8191, sequence 1023, the last ms below the sign bit.
SELECT *, time = pg_temp.at_ms(1314220021721 + (1::bigint << 40) - 1) AS time_right
FROM idmint_decode(9223372036854775807, 'instagram');

-- ---- sonyflake: time:39@10ms,seq:8,machine:16, epoch 1409529600000 ----

-- 2021-01-01 00:00:00.120 UTC (tick 19992960012 of 10 ms), sequence 200,
-- machine 0xBEEF.
SELECT (((1609459200120 - 1409529600000) / 10) << 24) | (200 << 16) | 48879 AS id \gset
SELECT :id AS sonyflake_id;
SELECT *, time = pg_temp.at_ms(1609459200120) AS time_right FROM idmint_decode(:id, 'sonyflake');
-- A time inside a tick decodes to the tick's start: 2021-01-01 00:00:00.129
-- is in the tick that starts at .120.
SELECT idmint_time((((1609459200129 - 1409529600000) / 10) << 24), 'sonyflake')
    = pg_temp.at_ms(1609459200120) AS tick_start;
SELECT *, time = pg_temp.at_ms(1409529600000 + ((1::bigint << 39) - 1) * 10) AS time_right
FROM idmint_decode(9223372036854775807, 'sonyflake');

-- ---- NULL in, NULL out ----

SELECT idmint_time(NULL) IS NULL AS time_null, idmint_time(NULL, 'discord') IS NULL AS preset_null;
SELECT * FROM idmint_decode(NULL);

-- ---- round trips of minted ids ----

-- 2,000 ids: their fields put back together with twitter's shifts give the
-- id again; the node fields are this server's. (In SQL, << and | bind
-- alike, left to right: every shift is parenthesized.)
CREATE TEMP TABLE minted AS SELECT idmint_next() AS id FROM generate_series(1, 2000);
SELECT count(*) AS ids,
       count(*) FILTER (WHERE (((floor(extract(epoch FROM d.time) * 1000)::bigint - 1288834974657)
                                    << 22)
                               | ((d.node->>'datacenter')::bigint << 17)
                               | ((d.node->>'worker')::bigint << 12)
                               | d.sequence) = m.id) AS reassembled,
       count(DISTINCT d.node) AS node_values, min(d.node::text) AS node,
       count(*) FILTER (WHERE idmint_time(m.id) = d.time) AS idmint_time_agrees
FROM minted AS m, idmint_decode(m.id) AS d;
