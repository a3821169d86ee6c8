/* SPDX-License-Identifier: MIT */
/*
 * Ticket stores: URL dispatch to a backend (one file each), the checks every
 * call gets before a backend sees it (names, sizes, k of n), and one mutex a
 * store so that the allocator's prefetch thread and its callers never use
 * one database connection at once.
 *
 * Local units and ids: store k of n keeps a counter of local values; the
 * local value v is the id v * n + k. A block of size local values starting
 * at v is the ids v*n + k, (v+1)*n + k, ... So stores never overlap,
 * whatever the block sizes.
 *
 * That holds only if the n stores are n different stores: one database
 * listed twice (under two spellings of its URL) would be asked to be store
 * 0 and store 1 at once. idm_store_identity names the database a handle
 * reaches (the file for SQLite, the server and database for PostgreSQL) so
 * that a caller can check a list before writing anything.
 *
 * Each call is bounded by the store's timeout (idm_store_set_timeout): the
 * backends keep it and enforce it, since only they know where a call can
 * wait (a socket, a lock); a custom store bounds its own calls.
 *
 * For idmint's own programs (store_within.h): a store may be opened late,
 * by its first call (a server that starts while one of its stores is down
 * serves from the others, and takes that one in when it answers), and every
 * store keeps how its calls went (idm__store_health), read without its
 * mutex, so a health check never waits behind a call in progress.
 *
 * A store belongs to the process that opened it: in a forked child its
 * calls fail with IDM_EFORKED before its mutex (which a thread of the
 * parent may have held at fork) is touched, and its close frees the
 * child's copy without closing the backend's connection, which is the
 * parent's (SQLite forbids using or closing a connection across fork;
 * closing a libpq one would say goodbye on the parent's socket).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment_internal.h"

/* URL schemes and their backends (libpq takes both spellings). A backend
 * left out of the build keeps its rows, so that its URLs are refused as
 * such, not as an unknown scheme. */
#ifdef IDM_WITH_SQLITE
#define SQLITE_BACKEND (&idm__store_sqlite)
#else
#define SQLITE_BACKEND NULL
#endif
#ifdef IDM_WITH_POSTGRES
#define POSTGRES_BACKEND (&idm__store_postgres)
#else
#define POSTGRES_BACKEND NULL
#endif
static const idm__scheme schemes[] = {
    {"sqlite", SQLITE_BACKEND, "IDM_WITH_SQLITE=OFF"},
    {"postgres", POSTGRES_BACKEND, "IDM_WITH_POSTGRES=OFF"},
    {"postgresql", POSTGRES_BACKEND, "IDM_WITH_POSTGRES=OFF"},
};
#define NSCHEMES (sizeof schemes / sizeof schemes[0])

struct idm_store {
    const idm_store_ops *ops;
    const idm__store_backend *be; /* NULL for a custom store */
    void *ctx;
    pid_t pid; /* the process that opened it: a forked child is another */
    pthread_mutex_t mu;
    int64_t timeout_ms; /* under mu; what the backend was given */
    char url[256]; /* for messages; password masked */
    /* A late open (idm__store_open_late): the whole URL, password and
     * all, until the backend is opened by the first call that gets it
     * open (ctx NULL until then); wiped and freed then. Under mu. */
    char *late_url;
    /* How the calls went (idm__store_health): atomics, and the detail of
     * the last failure under hmu (never held across a call). */
    _Atomic int64_t call_since; /* CLOCK_MONOTONIC ns a call began; 0: none */
    _Atomic int64_t down_since; /* ns the first failure in a row ended; 0: up */
    _Atomic uint64_t calls, failures;
    _Atomic int last_rc;
    pthread_mutex_t hmu;
    char last_detail[256];
};

/* Clear a buffer that held a secret (a plain memset may be optimised away). */
static void wipe(char *p)
{
    volatile char *v = p;
    while (*v != '\0')
        *v++ = '\0';
}

/* Whether s was opened by another process: this is a forked child. */
static bool forked(const idm_store *s)
{
    return s->pid != getpid();
}

static int refuse_forked(const idm_store *s)
{
    return idm__seg_fail(IDM_EFORKED, "store %s: opened in the parent process; a forked child "
                                      "must open its own stores",
                         s->url);
}

/* A call starts, under mu: a store opened late gets its backend first (its
 * failure is the call's). 0, or the error. */
static int call_begin(idm_store *s)
{
    int rc;
    atomic_store(&s->call_since, idm__mono_ns());
    if (s->ctx != NULL || s->late_url == NULL)
        return 0;
    if ((rc = s->be->open(&s->ctx, s->late_url, s->timeout_ms)) != 0) {
        s->ctx = NULL;
        return rc;
    }
    wipe(s->late_url);
    free(s->late_url);
    s->late_url = NULL;
    return 0;
}

/* A call ended with rc, under mu: what idm__store_health says. Only a store
 * that did not answer is down: a refusal (no such sequence, another k of
 * n, a counter at its end) is an answer. */
static int call_end(idm_store *s, int rc)
{
    bool failed = rc == IDM_EUNAVAIL || rc == IDM_EIO || rc == IDM_ENOMEM;
    atomic_fetch_add(&s->calls, 1);
    if (failed) {
        atomic_fetch_add(&s->failures, 1);
        pthread_mutex_lock(&s->hmu);
        snprintf(s->last_detail, sizeof s->last_detail, "%s", idm_error_detail());
        pthread_mutex_unlock(&s->hmu);
        if (atomic_load(&s->down_since) == 0)
            atomic_store(&s->down_since, idm__mono_ns());
    } else {
        atomic_store(&s->down_since, 0);
    }
    atomic_store(&s->last_rc, failed ? rc : 0);
    atomic_store(&s->call_since, 0);
    return rc;
}

/* A store over ops and ctx; shown as url, its password masked. */
static int wrap(idm_store **out, const idm__store_backend *be, const idm_store_ops *ops,
                void *ctx, const char *url)
{
    idm_store *s = calloc(1, sizeof *s);
    if (s == NULL) {
        ops->close(ctx);
        return idm__seg_fail(IDM_ENOMEM, "store: out of memory");
    }
    s->ops = ops;
    s->be = be;
    s->ctx = ctx;
    s->timeout_ms = IDM_STORE_TIMEOUT_MS;
    s->pid = getpid();
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hmu, NULL);
    idm__url_mask(url, s->url, sizeof s->url);
    *out = s;
    return 0;
}

/* What a store URL looks like, for messages. */
#define STORE_URL_FORMS "sqlite:///path/file.db or postgres://..."

int idm_store_url_check(const char *url)
{
    const idm__scheme *row;
    return idm__scheme_pick(schemes, NSCHEMES, "store", STORE_URL_FORMS, url, &row);
}

int idm__store_open_within(idm_store **out, const char *url, int64_t timeout_ms)
{
    const idm__scheme *row;
    const idm__store_backend *be;
    void *ctx = NULL;
    int rc;
    if (out == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no output");
    *out = NULL;
    if (timeout_ms < 1 || timeout_ms > IDM__STORE_TIMEOUT_MAX_MS)
        return idm__seg_fail(IDM_EINVAL, "store: timeout %lld ms is outside 1 to %lld ms (an hour)",
                             (long long)timeout_ms, (long long)IDM__STORE_TIMEOUT_MAX_MS);
    if ((rc = idm__scheme_pick(schemes, NSCHEMES, "store", STORE_URL_FORMS, url, &row)) != 0)
        return rc;
    be = row->backend;
    if ((rc = be->open(&ctx, url, timeout_ms)) != 0)
        return rc;
    if ((rc = wrap(out, be, be->ops, ctx, url)) != 0)
        return rc;
    (*out)->timeout_ms = timeout_ms; /* what the backend was given at open */
    return 0;
}

int idm__store_open_late(idm_store **out, const char *url, int64_t timeout_ms)
{
    const idm__scheme *row;
    const idm_store_ops *ops;
    idm_store *s;
    int rc;
    if (out == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no output");
    *out = NULL;
    if (timeout_ms < 1 || timeout_ms > IDM__STORE_TIMEOUT_MAX_MS)
        return idm__seg_fail(IDM_EINVAL, "store: timeout %lld ms is outside 1 to %lld ms (an hour)",
                             (long long)timeout_ms, (long long)IDM__STORE_TIMEOUT_MAX_MS);
    if ((rc = idm__scheme_pick(schemes, NSCHEMES, "store", STORE_URL_FORMS, url, &row)) != 0)
        return rc;
    ops = ((const idm__store_backend *)row->backend)->ops;
    s = calloc(1, sizeof *s);
    if (s == NULL || (s->late_url = strdup(url)) == NULL) {
        free(s);
        return idm__seg_fail(IDM_ENOMEM, "store: out of memory");
    }
    s->ops = ops;
    s->be = row->backend;
    s->timeout_ms = timeout_ms;
    s->pid = getpid();
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hmu, NULL);
    idm__url_mask(url, s->url, sizeof s->url);
    *out = s;
    return 0;
}

void idm__store_health(idm_store *s, idm__store_health_info *out)
{
    int64_t since = atomic_load(&s->call_since), down = atomic_load(&s->down_since);
    int64_t now = idm__mono_ns();
    memset(out, 0, sizeof *out);
    out->calls = atomic_load(&s->calls);
    out->failures = atomic_load(&s->failures);
    out->last_rc = atomic_load(&s->last_rc);
    out->call_ms = since != 0 && now > since ? (now - since) / 1000000 : 0;
    out->down_ms = down != 0 && now > down ? (now - down) / 1000000 : 0;
    out->down = down != 0;
    pthread_mutex_lock(&s->hmu);
    snprintf(out->last_detail, sizeof out->last_detail, "%s", s->last_detail);
    pthread_mutex_unlock(&s->hmu);
}

int idm_store_open(idm_store **out, const char *url)
{
    return idm__store_open_within(out, url, IDM_STORE_TIMEOUT_MS);
}

int idm_store_custom(idm_store **out, const idm_store_ops *ops, void *ctx)
{
    if (out == NULL || ops == NULL || ops->create == NULL || ops->take == NULL ||
        ops->list == NULL || ops->floor_get == NULL || ops->floor_raise == NULL ||
        ops->close == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: a custom store needs every operation");
    return wrap(out, NULL, ops, ctx, "custom");
}

const char *idm_store_url(const idm_store *s)
{
    return s->url;
}

/* Where name breaks the rule (1 to IDM_SEQ_NAME_MAX of [A-Za-z0-9_.-]):
 * 0 if it keeps it, else -1 for empty, -2 for too long, or the 1-based byte
 * of the first character outside the set. */
static long name_fault(const char *name)
{
    size_t n;
    if (name == NULL || name[0] == '\0')
        return -1;
    n = strlen(name);
    if (n > IDM_SEQ_NAME_MAX)
        return -2;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return (long)i + 1;
    }
    return 0;
}

int idm_seq_name_valid(const char *name)
{
    return name_fault(name) == 0;
}

int idm__seq_check_name(const char *name)
{
    long f = name_fault(name);
    if (f == -1)
        return idm__seg_fail(IDM_EINVAL, "sequence: the name is empty");
    if (f == -2)
        return idm__seg_fail(IDM_EINVAL, "sequence: name '%.20s...' is longer than %d bytes", name,
                             IDM_SEQ_NAME_MAX);
    if (f > 0)
        return idm__seg_fail(IDM_EINVAL,
                             "sequence: name '%.64s' has a character other than letters, "
                             "digits, '_', '.' and '-' at byte %ld",
                             name, f);
    return 0;
}

static int check_kn(uint32_t k, uint32_t n)
{
    if (n == 0 || n > 1024 || k >= n)
        return idm__seg_fail(IDM_EINVAL, "store: store %u of %u: want 0 <= k < n <= 1024",
                             (unsigned)k, (unsigned)n);
    return 0;
}

int idm_store_create(idm_store *s, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    int64_t local;
    int rc;
    if (s == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no store");
    if ((rc = idm__seq_check_name(name)) != 0 || (rc = check_kn(k, n)) != 0)
        return rc;
    if (start < 0 || start >= IDM_SEQ_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence %s: start %lld is outside 0 to 2^62-1", name,
                             (long long)start);
    /* The first local value whose id (v*n + k) is at least start. */
    local = start <= (int64_t)k ? 0 : (start - (int64_t)k + (int64_t)n - 1) / (int64_t)n;
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    if ((rc = call_begin(s)) == 0)
        rc = s->ops->create(s->ctx, name, local, k, n);
    call_end(s, rc);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int idm_store_take(idm_store *s, const char *name, int64_t size, uint32_t k, uint32_t n,
                   int64_t *first)
{
    int64_t start = -1, limit;
    int rc;
    if (s == NULL || first == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no store or output");
    if ((rc = idm__seq_check_name(name)) != 0 || (rc = check_kn(k, n)) != 0)
        return rc;
    if (size <= 0 || size > IDM_SEQ_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence %s: block size %lld is outside 1 to 2^62",
                             name, (long long)size);
    /* The largest end of a block whose ids (v*n + k) all stay below 2^62:
     * the check is part of the statement, so a refused take changes
     * nothing, as is a mismatch of k or n (stores listed in another order
     * than at creation). */
    limit = (IDM_SEQ_MAX - 1 - (int64_t)k) / (int64_t)n + 1;
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    if ((rc = call_begin(s)) == 0)
        rc = s->ops->take(s->ctx, name, size, k, n, limit, &start);
    call_end(s, rc);
    pthread_mutex_unlock(&s->mu);
    if (rc != 0)
        return rc;
    if (start < 0 || start > limit - size)
        return idm__seg_fail(IDM_EIO, "sequence %s: store %s handed out %lld, outside 0 to %lld",
                             name, s->url, (long long)start, (long long)(limit - size));
    *first = start * (int64_t)n + (int64_t)k;
    return 0;
}

int idm_store_list(idm_store *s, idm_seq_info **out, size_t *count)
{
    int rc;
    if (s == NULL || out == NULL || count == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no store or output");
    *out = NULL;
    *count = 0;
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    if ((rc = call_begin(s)) == 0)
        rc = s->ops->list(s->ctx, out, count);
    call_end(s, rc);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Floors, for the allocator (src/segment/seq.c). */
int idm__store_floor_get(idm_store *s, const char *name, uint32_t k, int64_t *floor)
{
    int rc;
    if (s == NULL || floor == NULL || (rc = idm__seq_check_name(name)) != 0)
        return s == NULL || floor == NULL ? idm__seg_fail(IDM_EINVAL, "store: no store or output")
                                          : rc;
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    if ((rc = call_begin(s)) == 0)
        rc = s->ops->floor_get(s->ctx, name, k, floor);
    call_end(s, rc);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int idm__store_floor_raise(idm_store *s, const char *name, uint32_t k, int64_t floor)
{
    int rc;
    if (s == NULL || (rc = idm__seq_check_name(name)) != 0)
        return s == NULL ? idm__seg_fail(IDM_EINVAL, "store: no store") : rc;
    if (floor < 0 || floor > IDM_SEQ_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence %s: floor %lld is outside 0 to 2^62", name,
                             (long long)floor);
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    if ((rc = call_begin(s)) == 0)
        rc = s->ops->floor_raise(s->ctx, name, k, floor);
    call_end(s, rc);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* See segment.h. */
int idm_store_identity(idm_store *s, char *out, size_t cap)
{
    int rc;
    if (s == NULL || out == NULL || cap == 0)
        return idm__seg_fail(IDM_EINVAL, "store: no store or output");
    out[0] = '\0';
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    if (s->be != NULL && (rc = call_begin(s)) != 0)
        call_end(s, rc);
    else if (s->be != NULL)
        rc = call_end(s, s->be->identity(s->ctx, out, cap));
    else if (snprintf(out, cap, "custom:%p", (void *)s) < (int)cap)
        rc = 0;
    else
        rc = idm__seg_fail(IDM_EINVAL, "store %s: no room for its identity", s->url);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* See segment.h. Under the mutex: a call in progress keeps the timeout it
 * started with, and the next one gets the new value. */
int idm_store_set_timeout(idm_store *s, int64_t ms)
{
    if (s == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no store");
    if (ms < 1 || ms > IDM__STORE_TIMEOUT_MAX_MS)
        return idm__seg_fail(IDM_EINVAL,
                             "store %s: timeout %lld ms is outside 1 to %lld ms (an hour)", s->url,
                             (long long)ms, (long long)IDM__STORE_TIMEOUT_MAX_MS);
    if (forked(s))
        return refuse_forked(s);
    pthread_mutex_lock(&s->mu);
    s->timeout_ms = ms;
    if (s->be != NULL && s->be->set_timeout != NULL && s->ctx != NULL)
        s->be->set_timeout(s->ctx, ms);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void idm_store_close(idm_store *s)
{
    bool child;
    if (s == NULL)
        return;
    child = forked(s);
    /* In a forked child a backend's connection is the parent's: left as
     * it is (its memory too). A custom store's close is its own. */
    if ((s->ctx != NULL || s->late_url == NULL) && !(child && s->be != NULL))
        s->ops->close(s->ctx);
    if (s->late_url != NULL) {
        wipe(s->late_url);
        free(s->late_url);
    }
    /* The mutexes, copied into a child, may be held by a thread of the
     * parent that is not there: not destroyed (freeing them is safe). */
    if (!child) {
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->hmu);
    }
    free(s);
}
