-- SPDX-License-Identifier: MIT
-- idmint 1.0: the functions of the extension (see docs/postgres.md).
\echo Use "CREATE EXTENSION idmint" to load this file. \quit

-- Snowflake ids from the server's one shared generator (idmint.layout,
-- idmint.epoch, idmint.node or idmint.lease); needs
-- shared_preload_libraries = 'idmint'.
CREATE FUNCTION idmint_next() RETURNS bigint
AS 'MODULE_PATHNAME', 'idmint_next' LANGUAGE C VOLATILE PARALLEL SAFE;

-- Instagram's scheme: 41 bits of ms since 1314220021721, 13 bits of shard,
-- 10 bits of nextval(seq) % 1024; never repeats past 1,024 a millisecond.
CREATE FUNCTION idmint_instagram(shard integer, seq regclass) RETURNS bigint
AS 'MODULE_PATHNAME', 'idmint_instagram' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

-- RFC 9562 UUIDv7, monotonic across every session of the server.
CREATE FUNCTION idmint_uuidv7() RETURNS uuid
AS 'MODULE_PATHNAME', 'idmint_uuidv7' LANGUAGE C VOLATILE PARALLEL SAFE;

-- A ULID (26 characters of Crockford base32), monotonic across the server.
CREATE FUNCTION idmint_ulid() RETURNS text
AS 'MODULE_PATHNAME', 'idmint_ulid' LANGUAGE C VOLATILE PARALLEL SAFE;

-- The millisecond a UUIDv7 carries; an error for any other version.
CREATE FUNCTION idmint_uuidv7_time(id uuid) RETURNS timestamptz
AS 'MODULE_PATHNAME', 'idmint_uuidv7_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Decoding Snowflake ids: layout NULL is the server's (idmint.layout and
-- idmint.epoch); else a preset name with its own epoch ('twitter',
-- 'discord', 'instagram', 'sonyflake').
CREATE FUNCTION idmint_time(id bigint, layout text DEFAULT NULL) RETURNS timestamptz
AS 'MODULE_PATHNAME', 'idmint_time' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION idmint_decode(id bigint, layout text DEFAULT NULL,
                              OUT "time" timestamptz, OUT node jsonb, OUT sequence bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'idmint_decode' LANGUAGE C STABLE PARALLEL SAFE;

-- The smallest id whose time is at or after ts: with b the same for the end,
-- WHERE id >= idmint_lower_bound(a) AND id < idmint_lower_bound(b)
-- selects exactly the ids minted in [a, b).
CREATE FUNCTION idmint_lower_bound(ts timestamptz, layout text DEFAULT NULL) RETURNS bigint
AS 'MODULE_PATHNAME', 'idmint_lower_bound' LANGUAGE C STABLE PARALLEL SAFE;

-- The shared generator: whether it mints, under which node values, its
-- lease, marks and refusals.
CREATE FUNCTION idmint_status(OUT ready boolean, OUT layout text, OUT epoch timestamptz,
                              OUT node jsonb, OUT lease text, OUT lease_state text,
                              OUT last_time timestamptz, OUT state_mark timestamptz,
                              OUT refused bigint, OUT message text)
RETURNS record
AS 'MODULE_PATHNAME', 'idmint_status' LANGUAGE C VOLATILE PARALLEL SAFE;
