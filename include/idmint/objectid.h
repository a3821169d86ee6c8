/* SPDX-License-Identifier: MIT */
/*
 * ObjectIds per MongoDB's specification: 12 bytes, big-endian: 4 bytes of
 * Unix seconds, a 5-byte random value chosen once per process (and again in
 * a forked child), and a 3-byte counter that starts at a random value and
 * wraps modulo 2^24. Written as 24 hex digits.
 */
#ifndef IDMINT_OBJECTID_H
#define IDMINT_OBJECTID_H

#include <stdint.h>
#include "clock.h"
#include "export.h"
#include "rng.h"

typedef struct idm_objectid {
    uint8_t b[12];
} idm_objectid;

/* Text: 24 hex digits and a NUL. */
#define IDM_OBJECTID_TEXT_MAX 25

/* An ObjectId from its parts; counter is taken modulo 2^24. */
IDM_EXTERN void idm_objectid_build(uint32_t seconds, const uint8_t process[5],
                                   uint32_t counter, idm_objectid *out);

/* An ObjectId generator. Thread-safe (the counter is one atomic add). */
typedef struct idm_objectid_gen idm_objectid_gen;

/* clock and rng may be NULL for the system's. */
IDM_EXTERN int idm_objectid_gen_new(idm_objectid_gen **out, const idm_clock *clock,
                                    const idm_rng *rng);
IDM_EXTERN void idm_objectid_gen_free(idm_objectid_gen *g);
/* IDM_ERANGE if the clock is outside 1970 to 2106 (4 bytes of seconds);
 * IDM_ERANDOM if a forked child cannot draw its new process value. */
IDM_EXTERN int idm_objectid_next(idm_objectid_gen *g, idm_objectid *out);

/* Lower-case hex. */
IDM_EXTERN void idm_objectid_format(const idm_objectid *o,
                                    char out[IDM_OBJECTID_TEXT_MAX]);
/* Exactly 24 hex digits, either case; anything else is IDM_EPARSE. */
IDM_EXTERN int idm_objectid_parse(const char *text, idm_objectid *out);
/* The timestamp, in ms (seconds * 1000). */
IDM_EXTERN idm_unix_ms idm_objectid_time(const idm_objectid *o);

#endif /* IDMINT_OBJECTID_H */
