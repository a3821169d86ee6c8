-- SPDX-License-Identifier: MIT
-- STAND-INS, for developing btree.sh without the idmint extension
-- (btree.sh --stand-ins): plain SQL functions under the extension's names,
-- with ids of the same types, sizes and order. Their figures are not
-- idmint's and are never written to docs/btree.

-- Snowflake-like: 41 bits of ms since Twitter's epoch, then 22 bits of a
-- sequence (unique up to 4M rows a millisecond).
CREATE SEQUENCE standin_next_seq;
CREATE FUNCTION idmint_next() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1288834974657) << 22)
           | (nextval('standin_next_seq') % 4194304)
$$;

-- The smallest stand-in id at or after ts.
CREATE FUNCTION idmint_lower_bound(ts timestamptz) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT (ceil(extract(epoch FROM ts) * 1000)::bigint - 1288834974657) << 22
$$;

-- The time of a stand-in id.
CREATE FUNCTION idmint_time(id bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT to_timestamp(((id >> 22) + 1288834974657) / 1000.0)
$$;

-- UUIDv7 (RFC 9562): the ms, version 7, variant 10, random rest; not
-- monotonic within a millisecond.
CREATE FUNCTION idmint_uuidv7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_byte(set_byte(b, 6, (get_byte(b, 6) & 15) | 112), 8, (get_byte(b, 8) & 63) | 128),
                  'hex')::uuid
    FROM (SELECT overlay(uuid_send(gen_random_uuid()) PLACING
                         substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                   FROM 3) FROM 1 FOR 6) AS b) AS s
$$;

CREATE FUNCTION standin_crockford(v bigint, n int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ',
                             ((v >> (5 * (n - 1 - i))) & 31)::int + 1, 1), '' ORDER BY i)
    FROM generate_series(0, n - 1) AS i
$$;

-- ULID: 10 characters of ms, 16 of randomness (random(), not a CSPRNG).
CREATE FUNCTION idmint_ulid() RETURNS text LANGUAGE sql VOLATILE AS $$
    SELECT standin_crockford(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint, 10)
           || standin_crockford((random() * 1099511627776)::bigint, 8)
           || standin_crockford((random() * 1099511627776)::bigint, 8)
$$;

COMMENT ON FUNCTION idmint_next() IS 'STAND-IN, not idmint';
COMMENT ON FUNCTION idmint_lower_bound(timestamptz) IS 'STAND-IN, not idmint';
COMMENT ON FUNCTION idmint_time(bigint) IS 'STAND-IN, not idmint';
COMMENT ON FUNCTION idmint_uuidv7() IS 'STAND-IN, not idmint';
COMMENT ON FUNCTION idmint_ulid() IS 'STAND-IN, not idmint';
