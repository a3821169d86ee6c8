/* SPDX-License-Identifier: MIT */
/*
 * The interface every lease backend implements: one file per backend, each
 * linking only its own client library, chosen by URL scheme in lease.c.
 * Internal to idmint_lease.
 */
#ifndef IDM_LEASE_BACKEND_H
#define IDM_LEASE_BACKEND_H

#include <idmint/lease.h>

/* The TTLs idm_lease_open accepts. A backend that must guess a lost mark
 * (file.c, a damaged record) adds the longest. */
#define IDM__LEASE_TTL_MIN_MS INT64_C(1000)
#define IDM__LEASE_TTL_MAX_MS INT64_C(3600000)

typedef struct idm__lease_backend {
    const char *scheme; /* "file" for file:// */
    /* Open a handle on the coordinator named by the rest of the URL. */
    int (*open)(void **be, const char *rest, const idm_lease_opts *opts);
    /* Claim a free id below max_workers for ttl_ms; report the previous
     * holder's mark and the TTL granted. In the same step, raise the id's
     * stored mark to at least mark (never lower it) and report the mark now
     * recorded for us: mark, or 0 if nothing was recorded (then the first
     * renewal records one). The claim then counts as the first renewal,
     * from the moment it was started. */
    int (*claim)(void *be, uint32_t max_workers, int64_t ttl_ms, const char *holder,
                 idm_unix_ms mark, uint32_t *worker, idm_unix_ms *prev_mark,
                 idm_unix_ms *recorded, int64_t *granted_ttl_ms);
    /* Extend the claim and record mark. IDM_ELEASE if the claim is gone;
     * other errors mean "unknown, try again". */
    int (*renew)(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms);
    /* Record the final mark and release. */
    int (*release)(void *be, idm_unix_ms mark);
    int (*list)(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count);
    void (*close)(void *be);
} idm__lease_backend;

extern const idm__lease_backend idm__lease_file;
extern const idm__lease_backend idm__lease_etcd;

#endif /* IDM_LEASE_BACKEND_H */
