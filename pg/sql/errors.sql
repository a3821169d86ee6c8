-- SPDX-License-Identifier: MIT
-- Every bad input: an ERROR with its SQLSTATE (22003 out of range, 22008 a
-- time with no id, 22023 a bad parameter, 42809 not a sequence), never a
-- wrong answer; NULL in, NULL out.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS idmint;
RESET client_min_messages;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, YMD';

-- The SQLSTATE, message, detail and hint of the error q raises, or
-- 'no error: ' and its first column.
CREATE FUNCTION pg_temp.error_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v text;
    detail text;
    hint text;
BEGIN
    EXECUTE q INTO v;
    RETURN 'no error: ' || coalesce(v, 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ': ' || SQLERRM
           || CASE WHEN detail <> '' THEN E'\nDETAIL: ' || detail ELSE '' END
           || CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END;
END $$;
\pset format unaligned
\pset fieldsep '\n'

-- ---- negative ids: 22003 ----

SELECT q, pg_temp.error_of(q) FROM (VALUES
    ('SELECT idmint_time(-1)'),
    ('SELECT idmint_time(-9223372036854775808, ''sonyflake'')'),
    ('SELECT time FROM idmint_decode(-1)'),
    ('SELECT time FROM idmint_decode(-4096, ''discord'')')) AS v(q);

-- ---- ids with bits above the layout ----

-- Every preset has 63 or 64 bits, so every non-negative bigint fits it (the
-- largest decodes, see decode.sql); the error (22003, "does not fit the
-- layout") needs a narrower idmint.layout: tests/pg/test_extension.sh
-- starts a server with one.
SELECT q, pg_temp.error_of(q) FROM (VALUES
    ('SELECT idmint_time(9223372036854775807, ''twitter'')'),
    ('SELECT idmint_time(9223372036854775807, ''sonyflake'')')) AS v(q);

-- ---- layout names: 22023, the presets in the hint ----

SELECT q, pg_temp.error_of(q) FROM (VALUES
    ('SELECT idmint_time(1, ''nonsense'')'),
    ('SELECT idmint_time(1, '''')'),
    ('SELECT idmint_time(1, ''Twitter'')'),
    ('SELECT time FROM idmint_decode(1, ''time:41@1ms,worker:10,seq:12'')'),
    ('SELECT idmint_lower_bound(now(), ''snowflake'')'),
    ('SELECT idmint_time(1, repeat(''x'', 100))')) AS v(q);

-- ---- idmint_uuidv7_time: only version 7 of RFC 9562's variant (22023) ----

-- RFC 9562's examples of versions 1 and 4, the nil and max UUIDs, and the
-- version 7 example with its variant bits changed (0, then 110).
SELECT q, pg_temp.error_of(q) FROM (VALUES
    ('SELECT idmint_uuidv7_time(''c232ab00-9414-11ec-b3c8-9f6bdeced846'')'),
    ('SELECT idmint_uuidv7_time(''919108f7-52d1-4320-9bac-f847db4148a8'')'),
    ('SELECT idmint_uuidv7_time(''00000000-0000-0000-0000-000000000000'')'),
    ('SELECT idmint_uuidv7_time(''ffffffff-ffff-ffff-ffff-ffffffffffff'')'),
    ('SELECT idmint_uuidv7_time(''017f22e2-79b0-7cc3-18c4-dc0c0c07398f'')'),
    ('SELECT idmint_uuidv7_time(''017f22e2-79b0-7cc3-c8c4-dc0c0c07398f'')')) AS v(q);

-- ---- idmint_lower_bound: a time with no id (22008) ----

SELECT q, pg_temp.error_of(q) FROM (VALUES
    ('SELECT idmint_lower_bound(''infinity'')'),
    ('SELECT idmint_lower_bound(''-infinity'', ''discord'')'),
    ('SELECT idmint_lower_bound(''2080-07-10 17:30:30.209+00'')'),
    ('SELECT idmint_lower_bound(''2188-11-16 03:28:58.871+00'', ''sonyflake'')')) AS v(q);

-- ---- idmint_instagram ----

CREATE SEQUENCE ig_seq;
CREATE TABLE ig_table (id int);
CREATE VIEW ig_view AS SELECT 1 AS one;
-- Descending from -1; and from -2 up, through 0.
CREATE SEQUENCE ig_down INCREMENT BY -1;
CREATE SEQUENCE ig_up MINVALUE -2 START WITH -2;
CREATE SEQUENCE ig_short MAXVALUE 2;
SELECT q, pg_temp.error_of(q) FROM (VALUES
    -- shards have 13 bits (22023)
    ('SELECT idmint_instagram(-1, ''ig_seq'')'),
    ('SELECT idmint_instagram(8192, ''ig_seq'')'),
    ('SELECT idmint_instagram(-2147483648, ''ig_seq'')'),
    -- not a sequence (42809)
    ('SELECT idmint_instagram(1, ''ig_table'')'),
    ('SELECT idmint_instagram(1, ''ig_view'')'),
    ('SELECT idmint_instagram(1, ''pg_class'')'),
    ('SELECT idmint_instagram(1, 0)'),
    -- a name that is no relation at all: the regclass cast's own error
    ('SELECT idmint_instagram(1, ''no_such_seq'')'),
    -- negative values (22003), then 0 from the same sequence
    ('SELECT idmint_instagram(1, ''ig_down'')'),
    ('SELECT idmint_instagram(1, ''ig_up'')'),
    ('SELECT idmint_instagram(1, ''ig_up'')'),
    ('SELECT idmint_instagram(1, ''ig_up'') & 1023'),
    -- a sequence at its end: nextval's own error
    ('SELECT idmint_instagram(1, ''ig_short'') & 1023'),
    ('SELECT idmint_instagram(1, ''ig_short'') & 1023'),
    ('SELECT idmint_instagram(1, ''ig_short'')')) AS v(q);
-- The shard and the residue are what was asked, at the edges of the range.
SELECT ((idmint_instagram(0, 'ig_seq') >> 10) & 8191) AS shard_0,
       ((idmint_instagram(8191, 'ig_seq') >> 10) & 8191) AS shard_8191;

-- ---- NULL in, NULL out (the functions are strict or say so) ----

\pset format aligned
SELECT idmint_instagram(NULL, 'ig_seq') IS NULL AS null_shard,
       idmint_instagram(1, NULL) IS NULL AS null_seq,
       idmint_time(NULL, 'nonsense') IS NULL AS null_id_any_layout,
       idmint_lower_bound(NULL, 'nonsense') IS NULL AS null_time_any_layout;
-- A failed call moved no sequence it did not need: ig_seq was called twice.
SELECT last_value FROM ig_seq;
DROP VIEW ig_view;
DROP TABLE ig_table;
DROP SEQUENCE ig_seq, ig_down, ig_up, ig_short;
