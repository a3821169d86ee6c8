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
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "segment_internal.h"

/* URL schemes and their backends; libpq takes both spellings. */
static const struct {
    const char *scheme;
    const idm__store_backend *be;
} schemes[] = {
    {"sqlite", &idm__store_sqlite},
    {"postgres", &idm__store_postgres},
    {"postgresql", &idm__store_postgres},
};

struct idm_store {
    const idm_store_ops *ops;
    const idm__store_backend *be; /* NULL for a custom store */
    void *ctx;
    pthread_mutex_t mu;
    int64_t timeout_ms; /* under mu; what the backend was given */
    char url[256]; /* for messages; password masked */
};


/* The URL for messages, passwords masked: postgres://user:***@host and
 * ...?password=*** (the value up to the next '&'). SQLite paths are shown
 * as they are. */
static void mask_url(const char *url, char *out, size_t cap)
{
    const char *scheme = strstr(url, "://"), *auth_end, *at = NULL, *colon = NULL, *p;
    size_t n = 0;
    if (scheme == NULL || strncmp(url, "sqlite://", 9) == 0) {
        snprintf(out, cap, "%s", url);
        return;
    }
    auth_end = scheme + 3 + strcspn(scheme + 3, "/?");
    for (p = scheme + 3; p < auth_end; p++) {
        if (*p == '@')
            at = p;
    }
    if (at != NULL)
        colon = memchr(scheme + 3, ':', (size_t)(at - (scheme + 3)));
    for (p = url; *p != '\0' && n + 4 < cap; p++) {
        if (p == colon) {
            memcpy(out + n, ":***", 4);
            n += 4;
            p = at - 1;
            continue;
        }
        out[n++] = *p;
        if ((*p == '?' || *p == '&') && strncmp(p + 1, "password=", 9) == 0 && n + 13 < cap) {
            memcpy(out + n, "password=***", 12);
            n += 12;
            p += 9;
            while (p[1] != '\0' && p[1] != '&')
                p++;
        }
    }
    out[n] = '\0';
}

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
    pthread_mutex_init(&s->mu, NULL);
    mask_url(url, s->url, sizeof s->url);
    *out = s;
    return 0;
}

int idm_store_open(idm_store **out, const char *url)
{
    const char *sep = url != NULL ? strstr(url, "://") : NULL;
    if (out == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: no output");
    *out = NULL;
    if (sep == NULL)
        return idm__seg_fail(IDM_EINVAL,
                             "store: '%.80s' is not a URL (want sqlite:///path/file.db or "
                             "postgres://...)",
                             url != NULL ? url : "");
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].scheme);
        if ((size_t)(sep - url) == n && strncmp(url, schemes[i].scheme, n) == 0) {
            void *ctx = NULL;
            int rc = schemes[i].be->open(&ctx, url);
            if (rc != 0)
                return rc;
            return wrap(out, schemes[i].be, schemes[i].be->ops, ctx, url);
        }
    }
    {
        char masked[256];
        mask_url(url, masked, sizeof masked);
        return idm__seg_fail(IDM_EINVAL,
                             "store: unknown scheme in '%.80s' (known: sqlite://, "
                             "postgres://, postgresql://)",
                             masked);
    }
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

int64_t idm__seg_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 1 to IDM_SEQ_NAME_MAX of [A-Za-z0-9_.-]. */
int idm__seq_check_name(const char *name)
{
    size_t n;
    if (name == NULL || name[0] == '\0')
        return idm__seg_fail(IDM_EINVAL, "sequence: the name is empty");
    n = strlen(name);
    if (n > IDM_SEQ_NAME_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence: name '%.20s...' is longer than %d bytes", name,
                             IDM_SEQ_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return idm__seg_fail(IDM_EINVAL,
                                 "sequence: name '%.64s' has a character other than letters, "
                                 "digits, '_', '.' and '-' at byte %zu",
                                 name, i + 1);
    }
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
    pthread_mutex_lock(&s->mu);
    rc = s->ops->create(s->ctx, name, local, k, n);
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
    pthread_mutex_lock(&s->mu);
    rc = s->ops->take(s->ctx, name, size, k, n, limit, &start);
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
    pthread_mutex_lock(&s->mu);
    rc = s->ops->list(s->ctx, out, count);
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
    pthread_mutex_lock(&s->mu);
    rc = s->ops->floor_get(s->ctx, name, k, floor);
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
    pthread_mutex_lock(&s->mu);
    rc = s->ops->floor_raise(s->ctx, name, k, floor);
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
    pthread_mutex_lock(&s->mu);
    if (s->ops == idm__store_sqlite.ops)
        rc = idm__sqlite_identity(s->ctx, out, cap);
    else if (s->ops == idm__store_postgres.ops)
        rc = idm__postgres_identity(s->ctx, out, cap);
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
    pthread_mutex_lock(&s->mu);
    s->timeout_ms = ms;
    if (s->be != NULL && s->be->set_timeout != NULL)
        s->be->set_timeout(s->ctx, ms);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void idm_store_close(idm_store *s)
{
    if (s == NULL)
        return;
    s->ops->close(s->ctx);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
