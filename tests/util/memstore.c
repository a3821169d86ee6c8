/* SPDX-License-Identifier: MIT */
/* An in-memory ticket store for tests: see memstore.h. */
#include "memstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <idmint/idmint.h>

static idm_test_memseq *find(idm_test_memstore *m, const char *name)
{
    for (size_t i = 0; i < m->nseq; i++)
        if (strcmp(m->seqs[i].name, name) == 0)
            return &m->seqs[i];
    return NULL;
}

/* Room for twice as many sequences (8 at first); m->mu held. */
static int grow_seqs(idm_test_memstore *m)
{
    size_t cap = m->capseq != 0 ? 2 * m->capseq : 8;
    idm_test_memseq *grown = realloc(m->seqs, cap * sizeof *m->seqs);
    if (grown == NULL)
        return -1;
    m->seqs = grown;
    m->capseq = cap;
    return 0;
}

/* Note the calling thread among the takers, if it is new; m->mu held. */
static void note_taker(idm_test_memstore *m)
{
    pthread_t self = pthread_self();
    for (size_t t = 0; t < m->ntakers; t++)
        if (pthread_equal(m->takers[t], self))
            return;
    if (m->ntakers < IDM_TEST_MS_TAKERS)
        m->takers[m->ntakers++] = self;
}

/* Wait while the store is held; m->mu held. */
static void hold_locked(idm_test_memstore *m)
{
    if (!m->hold)
        return;
    m->held++;
    pthread_cond_broadcast(&m->hold_cv);
    while (m->hold)
        pthread_cond_wait(&m->hold_cv, &m->mu);
    m->held--;
    pthread_cond_broadcast(&m->hold_cv);
}

static int ms_create(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    idm_test_memstore *m = ctx;
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    if (find(m, name) != NULL) {
        rc = idm_error_fail(IDM_EEXIST, "memstore: %s exists", name);
    } else if (m->nseq == m->capseq && grow_seqs(m) != 0) {
        rc = idm_error_fail(IDM_ENOMEM, "memstore: out of memory");
    } else {
        idm_test_memseq *s = &m->seqs[m->nseq++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", name);
        s->next = start;
        s->k = k;
        s->n = n;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int ms_take(void *ctx, const char *name, int64_t size, uint32_t k, uint32_t n,
                   int64_t limit, int64_t *start)
{
    idm_test_memstore *m = ctx;
    int rc = 0;
    int delay = atomic_load(&m->delay_ms);
    idm_test_memseq *s;
    if (delay > 0) {
        struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&m->mu);
    hold_locked(m);
    note_taker(m);
    if (atomic_load(&m->down)) {
        pthread_mutex_unlock(&m->mu);
        return idm_error_fail(IDM_EUNAVAIL, "memstore: connection refused (test)");
    }
    s = find(m, name);
    if (s == NULL) {
        rc = idm_error_fail(IDM_ENOSEQ, "memstore: no %s", name);
    } else if (s->k != k || s->n != n) {
        rc = idm_error_fail(IDM_EINVAL, "memstore: %s is store %u of %u, not %u of %u", name,
                            (unsigned)s->k, (unsigned)s->n, (unsigned)k, (unsigned)n);
    } else if (s->next > limit - size) {
        rc = idm_error_fail(IDM_ERANGE, "memstore: %s would pass its limit", name);
    } else {
        if (m->nlog == m->caplog) {
            size_t cap = m->caplog != 0 ? 2 * m->caplog : 64;
            int64_t(*grown)[2] = realloc(m->log, cap * sizeof *m->log);
            if (grown == NULL) {
                pthread_mutex_unlock(&m->mu);
                return idm_error_fail(IDM_ENOMEM, "memstore: out of memory");
            }
            m->log = grown;
            m->caplog = cap;
        }
        *start = s->next;
        s->next += size;
        m->log[m->nlog][0] = *start;
        m->log[m->nlog][1] = size;
        m->nlog++;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int ms_list(void *ctx, idm_seq_info **out, size_t *count)
{
    idm_test_memstore *m = ctx;
    pthread_mutex_lock(&m->mu);
    hold_locked(m);
    *out = calloc(m->nseq + 1, sizeof **out);
    if (*out == NULL) {
        pthread_mutex_unlock(&m->mu);
        return idm_error_fail(IDM_ENOMEM, "memstore: out of memory");
    }
    for (size_t i = 0; i < m->nseq; i++) {
        snprintf((*out)[i].name, sizeof(*out)[i].name, "%s", m->seqs[i].name);
        (*out)[i].next = m->seqs[i].next;
        (*out)[i].k = m->seqs[i].k;
        (*out)[i].n = m->seqs[i].n;
    }
    *count = m->nseq;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int ms_floor_get(void *ctx, const char *name, uint32_t k, int64_t *floor)
{
    idm_test_memstore *m = ctx;
    idm_test_memseq *s;
    pthread_mutex_lock(&m->mu);
    hold_locked(m);
    if (atomic_load(&m->down)) {
        pthread_mutex_unlock(&m->mu);
        return idm_error_fail(IDM_EUNAVAIL, "memstore: connection refused (test)");
    }
    s = find(m, name);
    *floor = s != NULL && k < IDM_TEST_MS_KS ? s->floors[k] : 0;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int ms_floor_raise(void *ctx, const char *name, uint32_t k, int64_t floor)
{
    idm_test_memstore *m = ctx;
    idm_test_memseq *s;
    pthread_mutex_lock(&m->mu);
    hold_locked(m);
    if (atomic_load(&m->down)) {
        pthread_mutex_unlock(&m->mu);
        return idm_error_fail(IDM_EUNAVAIL, "memstore: connection refused (test)");
    }
    s = find(m, name);
    if (s != NULL && k < IDM_TEST_MS_KS && s->floors[k] < floor)
        s->floors[k] = floor;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static void ms_close(void *ctx)
{
    (void)ctx; /* freed by idm_test_memstore_free */
}

static const idm_store_ops ops = {ms_create,    ms_take,        ms_list,
                                  ms_floor_get, ms_floor_raise, ms_close};

idm_test_memstore *idm_test_memstore_new(idm_store **store)
{
    idm_test_memstore *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    pthread_condattr_t ca;
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->hold_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (idm_store_custom(store, &ops, m) != 0) {
        pthread_cond_destroy(&m->hold_cv);
        pthread_mutex_destroy(&m->mu);
        free(m);
        return NULL;
    }
    return m;
}

void idm_test_memstore_free(idm_test_memstore *m, idm_store *store)
{
    idm_store_close(store);
    pthread_cond_destroy(&m->hold_cv);
    pthread_mutex_destroy(&m->mu);
    free(m->seqs);
    free(m->log);
    free(m);
}

int64_t idm_test_memstore_next(idm_test_memstore *m, const char *name)
{
    idm_test_memseq *s;
    int64_t v;
    pthread_mutex_lock(&m->mu);
    s = find(m, name);
    v = s != NULL ? s->next : -1;
    pthread_mutex_unlock(&m->mu);
    return v;
}

void idm_test_memstore_set_next(idm_test_memstore *m, const char *name, int64_t v)
{
    idm_test_memseq *s;
    pthread_mutex_lock(&m->mu);
    s = find(m, name);
    if (s != NULL)
        s->next = v;
    pthread_mutex_unlock(&m->mu);
}

int idm_test_memstore_owns(idm_test_memstore *m, uint32_t k, uint32_t n, int64_t id)
{
    int64_t v;
    size_t lo = 0, hi;
    if (id < 0 || id % n != k)
        return 0;
    v = (id - (int64_t)k) / (int64_t)n;
    pthread_mutex_lock(&m->mu);
    hi = m->nlog;
    while (lo < hi) { /* the first block starting after v */
        size_t mid = lo + (hi - lo) / 2;
        if (m->log[mid][0] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    v = lo > 0 && v < m->log[lo - 1][0] + m->log[lo - 1][1];
    pthread_mutex_unlock(&m->mu);
    return (int)v;
}

int idm_test_memstore_create_many(idm_store *store, const char *prefix, int count, int64_t start,
                                  uint32_t k, uint32_t n)
{
    char name[IDM_SEQ_NAME_MAX + 1];
    for (int i = 0; i < count; i++) {
        int rc;
        snprintf(name, sizeof name, "%s%03d", prefix, i);
        rc = idm_store_create(store, name, start, k, n);
        if (rc != 0)
            return rc;
    }
    return 0;
}

size_t idm_test_memstore_takers(idm_test_memstore *m, pthread_t *out, size_t max)
{
    size_t n;
    pthread_mutex_lock(&m->mu);
    n = m->ntakers;
    for (size_t t = 0; t < n && t < max; t++)
        out[t] = m->takers[t];
    pthread_mutex_unlock(&m->mu);
    return n;
}

void idm_test_memstore_hold(idm_test_memstore *m, int on)
{
    pthread_mutex_lock(&m->mu);
    m->hold = on != 0;
    pthread_cond_broadcast(&m->hold_cv);
    pthread_mutex_unlock(&m->mu);
}

size_t idm_test_memstore_held(idm_test_memstore *m)
{
    size_t n;
    pthread_mutex_lock(&m->mu);
    n = m->held;
    pthread_mutex_unlock(&m->mu);
    return n;
}

int idm_test_memstore_wait_held(idm_test_memstore *m, size_t n, int64_t timeout_ms)
{
    struct timespec until;
    int rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(timeout_ms / 1000);
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&m->mu);
    while (m->held < n && rc == 0)
        rc = pthread_cond_timedwait(&m->hold_cv, &m->mu, &until);
    rc = m->held >= n ? 0 : -1;
    pthread_mutex_unlock(&m->mu);
    return rc;
}
