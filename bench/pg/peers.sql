-- SPDX-License-Identifier: MIT
-- The peers idmint's functions are measured against, in PL/pgSQL, as people
-- paste them into their schemas (functions.sh loads this file).

-- Instagram Engineering's function as published (insta5.next_id()), kept
-- once for the tests and this benchmark.
\ir ../../pg/sql/include/instagram_published.sql

-- UUIDv7 as RFC 9562 section 5.7 lays it out: the 48-bit Unix ms of
-- clock_timestamp() big-endian in bytes 0-5, the version (7) in the high
-- nibble of byte 6, the variant (binary 10) in the two high bits of byte 8,
-- everything else random (the bytes of gen_random_uuid(), so that no
-- extension such as pgcrypto is needed). Not monotonic within a ms.
CREATE FUNCTION bench_uuidv7_plpgsql() RETURNS uuid AS $$
DECLARE
    b bytea := uuid_send(gen_random_uuid());
    unix_ms bigint := FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000);
BEGIN
    b := overlay(b PLACING substring(int8send(unix_ms) FROM 3) FROM 1 FOR 6);
    b := set_byte(b, 6, (get_byte(b, 6) & 15) | 112);
    b := set_byte(b, 8, (get_byte(b, 8) & 63) | 128);
    RETURN encode(b, 'hex')::uuid;
END;
$$ LANGUAGE PLPGSQL VOLATILE;
