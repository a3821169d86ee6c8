/* SPDX-License-Identifier: MIT */
/*
 * What idmint's own programs (the CLI and idmintd link the static library)
 * use of the ticket stores beyond the public header: two more ways of
 * opening one and its call health. Not installed, not exported from the
 * shared library.
 */
#ifndef IDM_STORE_WITHIN_H
#define IDM_STORE_WITHIN_H

#include <stdbool.h>
#include <stdint.h>

#include <idmint/segment.h>

/*
 * idm_store_open, the open itself bounded by timeout_ms (1 ms to an hour,
 * else IDM_EINVAL) instead of IDM_STORE_TIMEOUT_MS, and the store's timeout
 * set to it: every call, the first connection included, ends within
 * timeout_ms (a frozen PostgreSQL server answers nothing, and a caller that
 * asked for 500 ms must not wait 5 s for the connection).
 */
int idm__store_open_within(idm_store **out, const char *url, int64_t timeout_ms);

/*
 * A store for url whose backend is opened by its first call, not now: the
 * URL is checked (a known scheme of this build) and kept, password and all,
 * until then. Each call tries the open until one gets it open (within the
 * store's timeout, timeout_ms until set), and fails as the open failed
 * (IDM_EUNAVAIL for a server that is down): a server can start with one of
 * its stores down and take it in when it answers.
 */
int idm__store_open_late(idm_store **out, const char *url, int64_t timeout_ms);

/* How a store's calls went, for health reports. */
typedef struct idm__store_health_info {
    uint64_t calls;       /* calls made (the late open's failures included) */
    uint64_t failures;    /* calls the store did not answer (IDM_EUNAVAIL,
                             IDM_EIO, IDM_ENOMEM); refusals are answers */
    int last_rc;          /* the last call's failure, 0 if it was answered */
    bool down;            /* the last call was not answered */
    int64_t down_ms;      /* since when (the first such call in a row
                             ended), ms; 0 if up */
    int64_t call_ms;      /* the call in progress: how long it has run, ms;
                             0 if none */
    char last_detail[256]; /* the last failure's detail ("" if none yet) */
} idm__store_health_info;

/* Read without waiting for a call in progress (not under the store's
 * mutex). Thread-safe. */
void idm__store_health(idm_store *s, idm__store_health_info *out);

#endif /* IDM_STORE_WITHIN_H */
