/* SPDX-License-Identifier: MIT */
/*
 * An in-memory ticket store for tests (idm_store_custom): sequences in a
 * growable array under a mutex (as many as a test creates), with switches a
 * test flips to make the store slow (delay_ms per take), down (take and
 * floors fail with IDM_EUNAVAIL) or stuck (hold: take, list and the floor
 * calls wait until it is cleared, so a test holds a store call for as long
 * as it likes, and knows when one is held), a log of every block taken and
 * a record of the distinct threads that called take. Plain C, no test
 * framework: the fuzz targets use it too.
 */
#ifndef IDM_TEST_MEMSTORE_H
#define IDM_TEST_MEMSTORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <idmint/segment.h>

#define IDM_TEST_MS_KS 8
#define IDM_TEST_MS_TAKERS 16 /* distinct taker threads recorded, at most */

typedef struct idm_test_memseq {
    char name[IDM_SEQ_NAME_MAX + 1];
    int64_t next;
    uint32_t k, n;
    int64_t floors[IDM_TEST_MS_KS];
} idm_test_memseq;

typedef struct idm_test_memstore {
    pthread_mutex_t mu;
    idm_test_memseq *seqs; /* in the order created */
    size_t nseq, capseq;
    atomic_int down;     /* take and floors fail with IDM_EUNAVAIL */
    atomic_int delay_ms; /* take sleeps this long */
    int64_t (*log)[2];   /* every block taken: local start, size */
    size_t nlog, caplog;
    pthread_t takers[IDM_TEST_MS_TAKERS]; /* distinct threads that called take */
    size_t ntakers;
    /* hold (idm_test_memstore_hold): under mu */
    int hold;
    size_t held;            /* calls waiting for hold to be cleared now */
    pthread_cond_t hold_cv; /* (CLOCK_MONOTONIC) hold cleared, held changed */
} idm_test_memstore;

/* A new empty store and its idm_store (*store); NULL if out of memory. */
idm_test_memstore *idm_test_memstore_new(idm_store **store);
/* Close store and free m. */
void idm_test_memstore_free(idm_test_memstore *m, idm_store *store);
/* The counter of sequence name (local units), -1 if none. */
int64_t idm_test_memstore_next(idm_test_memstore *m, const char *name);
void idm_test_memstore_set_next(idm_test_memstore *m, const char *name, int64_t v);
/* 1 if id is in a block that store k of n (m) handed out (m holding one
 * sequence: the log is searched as one increasing run of blocks). */
int idm_test_memstore_owns(idm_test_memstore *m, uint32_t k, uint32_t n, int64_t id);
/* Create count sequences through store (m's idm_store), named prefix
 * followed by their number of 3 or more digits (prefix000, prefix001, ...),
 * each starting at start, store k of n: 0, or the first failure's code. */
int idm_test_memstore_create_many(idm_store *store, const char *prefix, int count, int64_t start,
                                  uint32_t k, uint32_t n);
/* Hold the store (on 1) or let it go (on 0): while held, take, list,
 * floor_get and floor_raise wait (on entry, before anything else) until it
 * is let go. Thread-safe. */
void idm_test_memstore_hold(idm_test_memstore *m, int on);
/* How many calls are waiting on the hold now. */
size_t idm_test_memstore_held(idm_test_memstore *m);
/* Wait until at least n calls are waiting on the hold: 0, or -1 if that
 * did not happen within timeout_ms (a bound for a broken test, not a
 * measure of anything). */
int idm_test_memstore_wait_held(idm_test_memstore *m, size_t n, int64_t timeout_ms);
/* The distinct threads that have called take (down or not), in the order
 * of their first call: how many (at most IDM_TEST_MS_TAKERS), the first
 * max of them in out (out may be NULL when max is 0). */
size_t idm_test_memstore_takers(idm_test_memstore *m, pthread_t *out, size_t max);

#endif /* IDM_TEST_MEMSTORE_H */
