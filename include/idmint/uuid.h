/* SPDX-License-Identifier: MIT */
/*
 * UUIDs per RFC 9562: version 4 (random) and version 7 (Unix time in ms,
 * then random), their canonical text and 16-byte binary forms.
 *
 * UUIDv7 monotonicity (RFC 9562 section 6.2, method 2, "monotonic random"):
 * the 74 bits after the timestamp (rand_a, 12 bits, then rand_b, 62 bits)
 * are read as one number. The first UUID of a millisecond takes 74 fresh
 * random bits; each later UUID of the same generator in the same millisecond
 * adds a random increment from 1 to 2^32 to the previous value, so ids stay
 * unpredictable and strictly increase. If that addition would overflow the
 * 74 bits (after some 2^41 ids in one millisecond), the timestamp moves one
 * millisecond ahead and the bits start fresh. When the clock steps back the
 * generator keeps the last timestamp and keeps incrementing, so its ids never
 * go backwards; they carry the last timestamp until the clock passes it. A
 * generator that finds itself in a forked child starts afresh at its next id,
 * so parent and child do not continue the same sequence.
 *
 * What a generator asks an injected rng for: 4 bytes for every id (the
 * increment, 1 + that 32-bit number), then 10 more for the first id of a
 * millisecond, whose 74 bits are laid out as in idm_uuid7_build. (With the
 * system rng, increments are drawn eight at a time.) An injected rng that
 * answers every 10-byte request with the same bytes therefore reproduces
 * idm_uuid7_build for first ids.
 *
 * The byte layout, big-endian: octets 0-5 unix_ts_ms, octet 6 version (high
 * nibble) and rand_a's top 4 bits, octet 7 rand_a's low 8 bits, octet 8
 * variant (10) and rand_b's top 6 bits, octets 9-15 the rest of rand_b.
 */
#ifndef IDMINT_UUID_H
#define IDMINT_UUID_H

#include <stdbool.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"
#include "rng.h"

/* A UUID as its 16 bytes in network order. */
typedef struct idm_uuid {
    uint8_t b[16];
} idm_uuid;

/* Canonical text: 36 characters and a NUL. */
#define IDM_UUID_TEXT_MAX 37

/* RFC 9562 variant field values, as idm_uuid_variant returns them. */
#define IDM_UUID_VARIANT_NCS 0       /* 0xx */
#define IDM_UUID_VARIANT_RFC 2       /* 10x: RFC 9562 UUIDs */
#define IDM_UUID_VARIANT_MICROSOFT 6 /* 110 */
#define IDM_UUID_VARIANT_FUTURE 7    /* 111 */

/* A version 4 UUID from rng (NULL: the system CSPRNG). Thread-safe. */
IDM_EXTERN int idm_uuid4(const idm_rng *rng, idm_uuid *out);

/* Set the version and variant bits of 16 random bytes: a UUIDv4. */
IDM_EXTERN void idm_uuid4_from_bytes(const uint8_t random[16], idm_uuid *out);

/*
 * A version 7 UUID from its parts: ms (0 to 2^48-1, else IDM_ERANGE) and the
 * first 74 bits of rand (big-endian bit order: 12 bits of rand_a, then 62 of
 * rand_b; the last 6 bits of rand[9] are ignored).
 */
IDM_EXTERN int idm_uuid7_build(idm_unix_ms ms, const uint8_t rand[10], idm_uuid *out);

/* A UUIDv7 generator: monotonic as described above. Thread-safe: any
 * number of threads may call idm_uuid7_next on one generator at once, and
 * its ids are in the order of the calls (a call that returned before
 * another began has the lower id). Threads that call at once take turns in
 * runs of some microseconds, so together they mint about as many ids as
 * one thread alone (one sequence is one thread's work at a time); for ids
 * that scale with threads, see idm_uuid7_next_local. */
typedef struct idm_uuid7_gen idm_uuid7_gen;

/* clock and rng may be NULL for the system's. */
IDM_EXTERN int idm_uuid7_gen_new(idm_uuid7_gen **out, const idm_clock *clock,
                                 const idm_rng *rng);
IDM_EXTERN void idm_uuid7_gen_free(idm_uuid7_gen *g);
/* A generator in memory that several processes map at one address (see
 * idm_snowflake_open_shared): one monotonic sequence for all of them, never
 * reset in a forked process. mem: idm_uuid7_gen_shared_size() bytes, 8-byte
 * aligned; the clock and rng must be the system's (NULL) or at the same
 * address in every process. Nothing to free but mem (the caller's). A
 * process that dies holding its short lock stops the others: re-initialise
 * after a crash. IDM_EINVAL for bad memory. */
IDM_EXTERN size_t idm_uuid7_gen_shared_size(void);
IDM_EXTERN int idm_uuid7_gen_init_shared(idm_uuid7_gen **out, void *mem, size_t size,
                                         const idm_clock *clock, const idm_rng *rng);
/* IDM_ERANGE if the clock is before 1970 or past 2^48 ms; IDM_ERANDOM if
 * the rng fails. On failure *out is untouched and the state did not move. */
IDM_EXTERN int idm_uuid7_next(idm_uuid7_gen *g, idm_uuid *out);

/*
 * A UUIDv7 from g's per-thread sequence: the calling thread's own state for
 * g (made on first use, with g's clock and rng), so threads share no lock
 * and no written cache line, and throughput grows with cores. Order: ids of
 * one thread from one generator strictly increase (RFC 9562 section 6.2
 * allows a generator per thread); ids of different threads in the same
 * millisecond are in no particular order, and are not ordered against
 * idm_uuid7_next's. Each thread's sequence is built as above (74 random
 * bits at each new millisecond, random increments), so two threads repeat
 * a UUID no more often than random 74-bit values do. A thread keeps the
 * state of a few generators; one it had to drop restarts after the latest
 * millisecond dropped from its set, so its ids still increase: they run
 * ahead of the clock only while a thread uses, in turn within one
 * millisecond, more generators than it keeps. Resets in a forked child, as
 * idm_uuid7_next.
 * Errors as idm_uuid7_next.
 */
IDM_EXTERN int idm_uuid7_next_local(idm_uuid7_gen *g, idm_uuid *out);

/* Lower-case canonical text, e.g. "017f22e2-79b0-7cc3-98c4-dc0c0c07398f". */
IDM_EXTERN void idm_uuid_format(const idm_uuid *u, char out[IDM_UUID_TEXT_MAX]);
/*
 * Parse canonical text: exactly 36 characters, hex digits in either case,
 * dashes as the 9th, 14th, 19th and 24th characters. Anything else (braces, "urn:uuid:",
 * missing dashes, spaces) is IDM_EPARSE with a detail naming the position.
 */
IDM_EXTERN int idm_uuid_parse(const char *text, idm_uuid *out);

/* The version nibble (0-15) and the variant (IDM_UUID_VARIANT_*). */
IDM_EXTERN int idm_uuid_version(const idm_uuid *u);
IDM_EXTERN int idm_uuid_variant(const idm_uuid *u);
/* The timestamp of a UUIDv7; IDM_EINVAL for any other version or variant. */
IDM_EXTERN int idm_uuid7_time(const idm_uuid *u, idm_unix_ms *ms);

#endif /* IDMINT_UUID_H */
