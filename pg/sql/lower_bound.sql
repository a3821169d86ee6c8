-- SPDX-License-Identifier: MIT
-- idmint_lower_bound: the smallest id whose time is at or after ts. Exact at
-- tick boundaries, rounding a time inside a tick up, 0 before the epoch, an
-- error past the layout's end (and past what a bigint holds); and range
-- scans with it select exactly the rows that a filter on idmint_time does.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idmint;
RESET client_min_messages;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

CREATE FUNCTION pg_temp.at_ms(ms bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT 'epoch'::timestamptz + ms * interval '1 ms' $$;
-- The SQLSTATE and message of the error q raises, or 'no error: ' and its
-- first column.
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v text;
BEGIN
    EXECUTE q INTO v;
    RETURN 'no error: ' || coalesce(v, 'NULL');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- ---- exact values (the server's layout, twitter: time << 22) ----

-- On a millisecond: that millisecond's first id.
SELECT idmint_lower_bound('2021-01-01 00:00:00.123+00') AS at_123,
       idmint_lower_bound('2021-01-01 00:00:00.123+00') = (1609459200123 - 1288834974657) << 22
           AS is_time_shifted,
       idmint_lower_bound('2021-01-01 00:00:00.123+00', 'twitter') AS twitter_at_123;
-- Inside a millisecond: rounded up to the next one, never down.
SELECT idmint_lower_bound('2021-01-01 00:00:00.122001+00') = ((1609459200123 - 1288834974657) << 22)
           AS from_122_001,
       idmint_lower_bound('2021-01-01 00:00:00.1225+00') = ((1609459200123 - 1288834974657) << 22)
           AS from_122_5,
       idmint_lower_bound('2021-01-01 00:00:00.122999+00') = ((1609459200123 - 1288834974657) << 22)
           AS from_122_999,
       idmint_lower_bound('2021-01-01 00:00:00.123001+00') = ((1609459200124 - 1288834974657) << 22)
           AS from_123_001;
-- An id composed by hand (datacenter 3, worker 17, sequence 42 at .123):
-- at or above its millisecond's bound, below the next one's.
SELECT ((1609459200123 - 1288834974657) << 22) | (3 << 17) | (17 << 12) | 42 AS id \gset
SELECT :id >= idmint_lower_bound(idmint_time(:id)) AS at_or_above_own_ms,
       :id < idmint_lower_bound(idmint_time(:id) + interval '1 ms') AS below_next_ms,
       :id >= idmint_lower_bound('2021-01-01 00:00:00.123+00') AND
       :id < idmint_lower_bound('2021-01-01 00:00:00.124+00') AS in_its_ms;
-- At and before the epoch: 0 (every id is at or after it); a microsecond
-- after it: tick 1.
SELECT idmint_lower_bound(pg_temp.at_ms(1288834974657)) AS at_epoch,
       idmint_lower_bound(pg_temp.at_ms(1288834974656)) AS ms_before_epoch,
       idmint_lower_bound('1970-01-01 00:00:00+00') AS unix_epoch,
       idmint_lower_bound('0001-01-01 00:00:00+00') AS year_1,
       idmint_lower_bound(pg_temp.at_ms(1288834974657) + interval '1 us') AS us_after_epoch;
-- The layout's last millisecond has a bound (time field all ones); any time
-- after it has none.
SELECT idmint_lower_bound(pg_temp.at_ms(1288834974657 + (1::bigint << 41) - 1)) AS last_ms,
       ((1::bigint << 41) - 1) << 22 AS expected;
SELECT pg_temp.error_of(format('SELECT idmint_lower_bound(%L)',
                               pg_temp.at_ms(1288834974657 + (1::bigint << 41) - 1)
                               + interval '1 us')) AS past_the_end;
SELECT pg_temp.error_of($$SELECT idmint_lower_bound('3000-01-01 00:00:00+00')$$) AS year_3000;
SELECT idmint_lower_bound(NULL) IS NULL AS null_in_null_out;

-- ---- each preset ----

SELECT p AS layout, idmint_lower_bound(epoch, p) AS at_epoch,
       idmint_lower_bound(epoch - interval '1 ms', p) AS before_epoch,
       idmint_lower_bound(epoch + interval '1 us', p) AS us_after_epoch
FROM (VALUES ('twitter', pg_temp.at_ms(1288834974657)), ('discord', pg_temp.at_ms(1420070400000)),
             ('instagram', pg_temp.at_ms(1314220021721)), ('sonyflake', pg_temp.at_ms(1409529600000)))
     AS v(p, epoch);
-- Sonyflake's tick is 10 ms: .121 rounds up to .130, .120 is exact.
SELECT idmint_lower_bound('2021-01-01 00:00:00.120+00', 'sonyflake')
           = (((1609459200120 - 1409529600000) / 10) << 24) AS at_120,
       idmint_lower_bound('2021-01-01 00:00:00.121+00', 'sonyflake')
           = (((1609459200130 - 1409529600000) / 10) << 24) AS from_121;
-- Discord's example id (2016-04-30 11:18:25.796 UTC) within its ms's bounds.
SELECT 175928847299117063 >= idmint_lower_bound('2016-04-30 11:18:25.796+00', 'discord') AND
       175928847299117063 < idmint_lower_bound('2016-04-30 11:18:25.797+00', 'discord')
           AS discord_example_in_its_ms;
-- Discord's and Instagram's layouts have 64 bits: a time whose ids need the
-- sign bit has no bigint id. The last ms below it has a bound; the next one
-- is an error (22008), never a negative bound.
SELECT idmint_lower_bound(pg_temp.at_ms(1420070400000 + (1::bigint << 41) - 1), 'discord')
           = ((1::bigint << 41) - 1) << 22 AS discord_last_ms,
       idmint_lower_bound(pg_temp.at_ms(1314220021721 + (1::bigint << 40) - 1), 'instagram')
           = ((1::bigint << 40) - 1) << 23 AS instagram_last_ms;
SELECT p AS layout, split_part(pg_temp.error_of(format('SELECT idmint_lower_bound(%L, %L)', ts, p)),
                               ':', 1) AS sqlstate
FROM (VALUES ('discord', pg_temp.at_ms(1420070400000 + (1::bigint << 41))),
             ('discord', '2100-01-01 00:00:00+00'),
             ('instagram', pg_temp.at_ms(1314220021721 + (1::bigint << 40))),
             ('instagram', '2050-01-01 00:00:00+00')) AS v(p, ts);

-- ---- minted ids ----

-- Each id minted between two clock readings t0 and t1 lies at or above the
-- bound of t0's millisecond and below the bound of the millisecond after
-- t1's; and within its own millisecond's bounds.
CREATE TEMP TABLE batches (t0 timestamptz, id bigint, t1 timestamptz);
DO $$
DECLARE
    t0 timestamptz;
BEGIN
    FOR i IN 1..30 LOOP
        t0 := clock_timestamp();
        INSERT INTO batches (t0, id) SELECT t0, idmint_next() FROM generate_series(1, 100);
        UPDATE batches SET t1 = clock_timestamp() WHERE t1 IS NULL;
        PERFORM pg_sleep(0.001);
    END LOOP;
END $$;
SELECT count(*) AS ids,
       count(*) FILTER (WHERE id >= idmint_lower_bound(date_trunc('milliseconds', t0)) AND
                              id < idmint_lower_bound(date_trunc('milliseconds', t1)
                                                      + interval '1 ms')) AS within_clock_reads,
       count(*) FILTER (WHERE id >= idmint_lower_bound(idmint_time(id)) AND
                              id < idmint_lower_bound(idmint_time(id) + interval '1 ms'))
           AS within_own_ms
FROM batches;

-- ---- range scans ----

-- The same ids (minted over 30 ms or more) in a table keyed by id: for
-- windows [a, b) starting on and between milliseconds, shorter and longer
-- than one, the bounds select exactly the rows whose idmint_time is in
-- [a, b).
CREATE TABLE idmint_scan (id bigint PRIMARY KEY);
INSERT INTO idmint_scan SELECT id FROM batches;
ANALYZE idmint_scan;
SELECT min(idmint_time(id)) AS tmin FROM idmint_scan \gset
-- 640 windows from 2 ms before the first id on, 0.25 ms apart.
CREATE TEMP TABLE windows AS
SELECT a, a + len AS b
FROM (SELECT :'tmin'::timestamptz - interval '2 ms' + k * interval '0.25 ms' AS a
      FROM generate_series(0, 159) AS k) AS s,
     (VALUES (interval '0.5 ms'), (interval '1 ms'), (interval '1.75 ms'), (interval '7 ms'))
         AS l(len);
SELECT count(*) AS windows, count(*) FILTER (WHERE by_bounds <> by_time) AS mismatched,
       sum(by_bounds) > 0 AS rows_selected
FROM (SELECT (SELECT count(*) FROM idmint_scan
              WHERE id >= idmint_lower_bound(w.a) AND id < idmint_lower_bound(w.b)) AS by_bounds,
             (SELECT count(*) FROM idmint_scan
              WHERE idmint_time(id) >= w.a AND idmint_time(id) < w.b) AS by_time
      FROM windows AS w) AS c;
-- The bounds are stable within a statement, so the primary key's B-tree
-- answers the scan.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM idmint_scan
WHERE id >= idmint_lower_bound('2026-01-01 00:00:00+00') AND id < idmint_lower_bound('2026-01-02 00:00:00+00');
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE idmint_scan;
