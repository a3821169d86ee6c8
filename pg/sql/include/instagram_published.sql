-- SPDX-License-Identifier: MIT
-- Instagram Engineering's id function from "Sharding & IDs at Instagram",
-- as published (their schema insta5, shard 5, insta5.table_id_seq): 41 bits
-- of ms since 1314220021721, 13 bits of shard, 10 bits of nextval() % 1024.
-- One typo mended: the post has `%%` (a format string's escape) where
-- PL/pgSQL's modulo is `%`. It does not wait when the sequence wraps within
-- a millisecond, so past 1,024 ids a millisecond it repeats ids.
-- The one copy the tests (pg/sql/instagram.sql, tests/pg/test_extension.sh)
-- and the benchmark (bench/pg/peers.sql) load.
CREATE SCHEMA insta5;
CREATE SEQUENCE insta5.table_id_seq;
CREATE OR REPLACE FUNCTION insta5.next_id(OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    seq_id bigint;
    now_millis bigint;
    shard_id int := 5;
BEGIN
    SELECT nextval('insta5.table_id_seq') % 1024 INTO seq_id;

    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
    $$ LANGUAGE PLPGSQL;
