/* SPDX-License-Identifier: MIT */
/*
 * ULIDs per the ULID specification: 48 bits of Unix ms, then 80 random
 * bits, written as 26 characters of Crockford's base32
 * (0123456789ABCDEFGHJKMNPQRSTVWXYZ; no I, L, O or U).
 *
 * Monotonic mode (the spec's): within one millisecond each ULID is the
 * previous one plus 1 in the random part; when the random part would
 * overflow, the generator fails with IDM_EOVERFLOW and never wraps. A clock
 * step back keeps the last timestamp, as the spec's monotonic factory does.
 * Without monotonic mode each ULID takes 80 fresh random bits. Either way a
 * fresh random part is one 10-byte request to the generator's rng, used as
 * in idm_ulid_build.
 */
#ifndef IDMINT_ULID_H
#define IDMINT_ULID_H

#include <stdbool.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"
#include "rng.h"
#include "uuid.h"

/* A ULID as its 16 bytes, big-endian: the same 128 bits as its UUID form. */
typedef struct idm_ulid {
    uint8_t b[16];
} idm_ulid;

/* Text: 26 characters and a NUL. */
#define IDM_ULID_TEXT_MAX 27

/* A ULID from its parts: ms (0 to 2^48-1, else IDM_ERANGE) and 10 random
 * bytes. */
IDM_EXTERN int idm_ulid_build(idm_unix_ms ms, const uint8_t rand[10], idm_ulid *out);

/* A ULID generator. Thread-safe: any number of threads may call
 * idm_ulid_next on one generator; in monotonic mode they share one sequence
 * under a short lock, in the order of the calls, and take turns in runs as
 * idm_uuid7_next's threads do (uuid.h). */
typedef struct idm_ulid_gen idm_ulid_gen;

/* clock and rng may be NULL for the system's. */
IDM_EXTERN int idm_ulid_gen_new(idm_ulid_gen **out, const idm_clock *clock,
                                const idm_rng *rng, bool monotonic);
IDM_EXTERN void idm_ulid_gen_free(idm_ulid_gen *g);
/* A generator in memory that several processes map at one address, as
 * idm_uuid7_gen_init_shared (uuid.h) describes. */
IDM_EXTERN size_t idm_ulid_gen_shared_size(void);
IDM_EXTERN int idm_ulid_gen_init_shared(idm_ulid_gen **out, void *mem, size_t size,
                                        const idm_clock *clock, const idm_rng *rng,
                                        bool monotonic);
/* IDM_EOVERFLOW (monotonic mode, random part full within one ms),
 * IDM_ERANGE (clock outside 0 to 2^48-1 ms), IDM_ERANDOM. On failure *out
 * is untouched and the state did not move. */
IDM_EXTERN int idm_ulid_next(idm_ulid_gen *g, idm_ulid *out);
/* A ULID from g's per-thread sequence, as idm_uuid7_next_local (uuid.h):
 * monotonic within the calling thread in monotonic mode, no shared write;
 * without monotonic mode the same as idm_ulid_next. Errors as
 * idm_ulid_next. */
IDM_EXTERN int idm_ulid_next_local(idm_ulid_gen *g, idm_ulid *out);

/* Upper-case canonical text. */
IDM_EXTERN void idm_ulid_format(const idm_ulid *u, char out[IDM_ULID_TEXT_MAX]);
/*
 * Parse 26 characters of Crockford base32, either case. IDM_EPARSE for a
 * wrong length or a character outside the alphabet (I, L, O and U included),
 * IDM_ERANGE for a value above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ (more than 128
 * bits).
 */
IDM_EXTERN int idm_ulid_parse(const char *text, idm_ulid *out);
IDM_EXTERN idm_unix_ms idm_ulid_time(const idm_ulid *u);

/* The same 128 bits in the other form; nothing is checked or changed. */
IDM_EXTERN void idm_ulid_to_uuid(const idm_ulid *in, idm_uuid *out);
IDM_EXTERN void idm_uuid_to_ulid(const idm_uuid *in, idm_ulid *out);

#endif /* IDMINT_ULID_H */
