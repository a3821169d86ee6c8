/* SPDX-License-Identifier: MIT */
/*
 * The interface every lease backend implements: one file per backend, each
 * linking only its own client library, chosen by URL scheme in lease.c (one
 * row of its idm__scheme table per backend). Internal to idmint_lease.
 */
#ifndef IDM_LEASE_BACKEND_H
#define IDM_LEASE_BACKEND_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <idmint/error.h>
#include <idmint/lease.h>

typedef struct idm__lease_backend {
    /* Open a handle on the coordinator named by the rest of the URL. */
    int (*open)(void **be, const char *rest, const idm_lease_opts *opts);
    /* Claim a free id below max_workers for ttl_ms; report the previous
     * holder's mark and the TTL granted. In the same step, raise the id's
     * stored mark to at least mark (never lower it) and report the mark now
     * recorded for us: mark, or 0 if nothing was recorded (then the first
     * renewal records one). The claim then counts as the first renewal,
     * from the moment it was started.
     * scope (checked by lease.c: printable, shorter than
     * IDM_LEASE_SCOPE_MAX), if not NULL: record it in the coordinator if
     * none is recorded, once and atomically; if another is, fail with
     * idm__lease_scope_refuse before changing anything. */
    int (*claim)(void *be, uint32_t max_workers, int64_t ttl_ms, const char *holder,
                 const char *scope, idm_unix_ms mark, uint32_t *worker,
                 idm_unix_ms *prev_mark, idm_unix_ms *recorded, int64_t *granted_ttl_ms);
    /* Extend the claim and record mark. IDM_ELEASE if the claim is gone;
     * other errors mean "unknown, try again". */
    int (*renew)(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms);
    /* Record the final mark and release. */
    int (*release)(void *be, idm_unix_ms mark);
    int (*list)(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count);
    /* The recorded scope into buf (len >= 1), "" if none: at most len - 1
     * bytes, else IDM_EINVAL; bytes outside ' '..'~' as '?'. */
    int (*scope)(void *be, char *buf, size_t len);
    void (*close)(void *be);
    /* The fencing token of the claim this handle made (after claim): a
     * number that rises at every claim of its worker id, by any holder,
     * and at every resume (postgres, etcd; zk: a new node) (postgres: the row's
     * generation; zk: the worker node's czxid; etcd:
     * the worker key's mod revision as of the claim or the last resume,
     * its create revision for a claim). NULL: the backend has none
     * (file://), idm_lease_generation reports 0. */
    uint64_t (*generation)(void *be);
    /* The claim's handle as text, after claim or reattach: what reattach
     * needs to prove, after a restart, that the claim is still this one.
     * 1 to IDM_LEASE_HANDLE_MAX - 1 bytes of ' '..'~' other than ' '
     * (it goes into a claim file line), into buf (len >= 1); IDM_EINVAL if
     * it does not fit. What each backend puts there: etcd: the lease id,
     * the worker key's mod revision as of the claim or resume, and the
     * cluster id; zk: the session
     * id and its password (never shown in a message); postgres:
     * "<worker>:<generation>";
     * file: the claim's token (a random number written into the lock
     * record at the claim). NULL: the backend cannot reattach. */
    int (*handle)(void *be, char *buf, size_t len);
    /* Resume, on a handle just opened, the claim of worker id `worker` a
     * process made before (handle from handle() of that claim, perhaps in
     * another process that has since died): 0 if the coordinator confirms
     * the claim is still that one (etcd: <prefix>/workers/N is still bound
     * to the saved lease and unwritten since, and it moves to a new lease; zk: the worker node is still the
     * saved session's; postgres: the row's generation is the saved one and
     * it has not expired; file: the lock is free or ours to
     * take and the lock record still holds the claim's token). Then, in
     * the same step where the coordinator allows, it is renewed for
     * ttl_ms, the scope compared (as claim does; a different recorded
     * scope is idm__lease_scope_refuse, nothing changed), the id's mark
     * raised to at least mark (never lowered) and the mark now recorded
     * reported in *recorded, the TTL granted in *granted_ttl_ms; renew,
     * release, generation and handle then act on it as after a claim.
     * IDM_ELEASE (with a detail) if the coordinator says it is not that
     * claim any more (expired, revoked, deleted, taken by another): nothing
     * changed, and the caller closes this handle. Any other error: unknown
     * (unreachable, an answer not understood), try again later with a new
     * handle. On zk the claim moves to a new session (a new node: the handle
     * and the generation change), on postgres the generation rises, on etcd
     * the worker key is written again (its revision changes): a saved claim
     * resumes once, and a holder still alive finds its claim lost at its
     * next renewal.
     * NULL: the backend cannot reattach (a restart claims anew). */
    int (*reattach)(void *be, uint32_t worker, const char *handle, int64_t ttl_ms,
                    const char *holder, const char *scope, idm_unix_ms mark,
                    idm_unix_ms *recorded, int64_t *granted_ttl_ms);
} idm__lease_backend;

/* Scopes, for every backend: their text and the refusal's detail. */

/* A scope as text: at most cap - 1 bytes of s[0..n), those outside
 * ' '..'~' as '?'. */
static inline void idm__lease_scope_copy(const char *s, size_t n, char *out, size_t cap)
{
    if (n > cap - 1)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] >= ' ' && s[i] <= '~' ? s[i] : '?';
    out[n] = '\0';
}

/* Copy a recorded scope of len bytes into buf (cap >= 1) as text; IDM_EINVAL
 * naming where (and buf "") if it does not fit. */
static inline int idm__lease_scope_text(const char *where, const char *recorded, size_t len,
                                        char *buf, size_t cap)
{
    if (len >= cap) {
        buf[0] = '\0';
        return idm_error_fail(IDM_EINVAL,
                              "lease: %.80s records a scope of %zu bytes; the buffer holds %zu",
                              where, len, cap - 1);
    }
    idm__lease_scope_copy(recorded, len, buf, cap);
    return 0;
}

/* s (n bytes) in at most room bytes (out holds room + 1): whole if it fits,
 * else a window from a little before d (where it first differs from the
 * other scope), with "..." where it was cut. */
static inline void idm__lease_scope_window(const char *s, size_t n, size_t d, size_t room,
                                           char *out)
{
    size_t start, take;
    bool cut_head, cut_tail;
    if (n <= room) {
        memcpy(out, s, n);
        out[n] = '\0';
        return;
    }
    start = d > 12 ? d - 12 : 0;
    if (n - start < room - 3)
        start = n - (room - 3); /* show the end, cut only the head */
    cut_head = start > 0;
    take = room - (cut_head ? 3 : 0);
    cut_tail = start + take < n;
    if (cut_tail)
        take -= 3;
    snprintf(out, room + 1, "%s%.*s%s", cut_head ? "..." : "", (int)take, s + start,
             cut_tail ? "..." : "");
}

/*
 * Refuse a claimant whose scope (ours) differs from the one the
 * coordinator named by where ("file:///dir", "etcd://...") records
 * (recorded: len bytes, any bytes): IDM_EINVAL with a detail naming both,
 * each shortened around where they first differ if both do not fit the
 * detail line.
 */
static inline int idm__lease_scope_refuse(const char *where, const char *recorded, size_t len,
                                          const char *ours)
{
    /* The detail line holds 255 bytes; the text around the three parts
     * takes 55. */
    char rec[IDM_LEASE_SCOPE_MAX], r[IDM_LEASE_SCOPE_MAX], o[IDM_LEASE_SCOPE_MAX];
    size_t wlen = strnlen(where, 60), rn, on = strnlen(ours, sizeof o - 1), d = 0;
    size_t room = 255 - 55 - wlen;
    idm__lease_scope_copy(recorded, len, rec, sizeof rec);
    rn = strlen(rec);
    while (d < rn && d < on && rec[d] == ours[d])
        d++;
    if (rn + on <= room) {
        snprintf(r, sizeof r, "%s", rec);
        snprintf(o, sizeof o, "%.*s", (int)on, ours);
    } else {
        idm__lease_scope_window(rec, rn, d, room / 2, r);
        idm__lease_scope_window(ours, on, d, room / 2, o);
    }
    return idm_error_fail(IDM_EINVAL,
                          "lease: %.60s hands out ids for '%s'; this claimant asks for '%s'",
                          where, r, o);
}

/* Endpoints, for the backends that take a list of them (etcd, zk). */

/* A byte of a host name or IPv4 address. */
static inline bool idm__lease_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '-' || c == '_';
}

/* One "host:port" or "[v6]:port" of length n, the port 1 to 65535 in
 * decimal without a leading zero: 0, else -1. */
static inline int idm__lease_endpoint_check(const char *s, size_t n)
{
    size_t i = 0;
    unsigned long port = 0;
    if (n == 0)
        return -1;
    if (s[0] == '[') {
        for (i = 1; i < n && s[i] != ']'; i++)
            if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
                  (s[i] >= 'A' && s[i] <= 'F') || s[i] == ':' || s[i] == '.'))
                return -1;
        if (i >= n || i == 1)
            return -1;
        i++;
    } else {
        for (; i < n && s[i] != ':'; i++)
            if (!idm__lease_host_char(s[i]))
                return -1;
        if (i == 0)
            return -1;
    }
    if (i >= n || s[i] != ':' || i + 1 == n || n - i - 1 > 5 || s[i + 1] == '0')
        return -1;
    for (size_t k = i + 1; k < n; k++) {
        if (s[k] < '0' || s[k] > '9')
            return -1;
        port = port * 10 + (unsigned long)(s[k] - '0');
    }
    return port >= 1 && port <= 65535 ? 0 : -1;
}

extern const idm__lease_backend idm__lease_file;
extern const idm__lease_backend idm__lease_etcd;  /* if IDM_WITH_ETCD: etcd:// */
extern const idm__lease_backend idm__lease_etcds; /* if IDM_WITH_ETCD: etcds:// (TLS) */
extern const idm__lease_backend idm__lease_zk;    /* if IDM_WITH_ZOOKEEPER: zk:// */
extern const idm__lease_backend idm__lease_pg;    /* if IDM_WITH_POSTGRES: postgres://, postgresql:// */

#endif /* IDM_LEASE_BACKEND_H */
