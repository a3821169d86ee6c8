/* SPDX-License-Identifier: MIT */
/*
 * The ZooKeeper lease backend (zk://host:port[,host:port...]/prefix), on
 * the multi-threaded C client (libzookeeper-mt): one session per handle,
 * opened with the lease's TTL as the session timeout it asks for (the
 * server grants one within its bounds, 2 to 20 ticks by default: that is
 * the TTL granted). Worker id N is the ephemeral node <prefix>/workers/N
 * (data: the holder), which the server deletes when the session ends or
 * expires; its high-water mark is the persistent node <prefix>/hwm/N (data:
 * decimal Unix ms), which outlives the claim and passes to the next holder;
 * the scope is the persistent node <prefix>/scope, created once and never
 * changed. Parents are created when missing.
 *
 *   claim    1. getChildren(<prefix>/workers) and get(<prefix>/scope),
 *               pipelined: the taken ids, and the scope compared (refused
 *               here, before anything changes) or found absent. The free ids
 *               come from this one list, never from trying ids one by one.
 *               A child name that is not canonical decimal below the number
 *               of ids is no worker id ("-2147483648", "abc", "1024" of
 *               1,024: idm__zk_parse_id) and is ignored, but one of digits
 *               with leading zeros ("0012") keeps the id it may mean from
 *               being chosen: idmint never writes such names, so whoever did
 *               may mean that id.
 *            2. multi{check(scope, its version) or create(scope),
 *               create(workers/N, EPHEMERAL)}, and behind it on the session
 *               get(hwm/N) and exists(workers/N): the claim, its node's
 *               owner and czxid (the fencing token), the previous mark and
 *               its version. ZNODEEXISTS: a race lost, the next free id.
 *            3. setData(hwm/N, max(previous, first mark), version), or
 *               create(hwm/N) if it has none: always a write, even of the
 *               same value, so that its version moves and fences out any
 *               earlier holder's late write. The claim is the first renewal.
 *            ZooKeeper answers the requests of one session in the order
 *            they were sent, so a read sent right behind a write sees it:
 *            three round trips from start to the first id at any
 *            occupancy; a claim refused for its scope, or finding every id
 *            held, costs one (and one more the first time a prefix is used,
 *            to create its parents).
 *   renew    multi{check(workers/N, its version), setData(hwm/N, mark,
 *            the version of our last write)}: one round trip. A version
 *            that moved (someone wrote the mark) or an answer that was lost
 *            makes the next write re-read first: get(hwm/N) and
 *            exists(workers/N), in that order (MARK_FIRST); a node gone, or
 *            owned by another session, is a lost claim (IDM_ELEASE), else
 *            the mark is raised to at least what is stored (never lowered)
 *            with the version read. Nothing is ever re-sent blindly.
 *   reattach (after a restart: backend.h) with the handle a claim gave, the
 *            session's id and password as hex: the claim is moved to a new
 *            session of its own. On it, get(hwm/N), exists(workers/N) and
 *            get(scope), pipelined: workers/N gone or not the saved
 *            session's is IDM_ELEASE, another scope refused; then one multi
 *            deletes workers/N at the version read, creates it again as
 *            the new session's ephemeral node (its holder as data) and
 *            raises the mark at the version read, with exists(workers/N)
 *            right behind it. The handle and the generation (czxid) are
 *            then the new session's and node's, so a saved claim resumes
 *            once: the same handle again finds the node another session's
 *            (IDM_ELEASE), and a holder still alive on the saved session
 *            finds its claim lost at its next renewal. The saved session is
 *            never resumed (zookeeper_init2 with its clientid_t would move
 *            it to the newest connection: two live processes on it would
 *            both renew one claim). Three round trips, one a session
 *            handshake; see zk_reattach.
 *   release  the same guarded write with the exact final mark (lower than
 *            the last renewal's: the generator has stopped; only when the
 *            version shows the mark is still our own write, else never
 *            below what is stored), then close closes the session, which
 *            deletes workers/N at once. A versioned delete of workers/N
 *            could remove another session's node of the same version (a
 *            node deleted by hand and claimed again); the session close
 *            only ever removes our own.
 *
 * Expiry: the server expires a session it has not heard from for the
 * session timeout, counted from when it last heard the client. The keeper
 * stops the generator at the send time of the last answered renewal plus
 * the session timeout minus the margin, which is never later: a client
 * disconnected (CONNECTING, Curator's SUSPENDED) may be expired on the
 * server already, and stops there. A session the server says expired
 * (ZOO_EXPIRED_SESSION_STATE, ZSESSIONEXPIRED) is a lost claim; the C client
 * never makes a new session by itself after that, and every renewal also
 * checks that the session id is still the one that claimed.
 *
 * Every request is sent asynchronously and waited for with a bound on
 * CLOCK_MONOTONIC (claim 2/3 TTL, renew and release TTL/3): an answer that
 * comes after the wait gave up is dropped by its completion, which owns the
 * request from then on. Other errors (no answer, connection lost, a mark
 * that is not a number) are IDM_EIO, "unknown, try again"; only the server
 * saying the claim is gone is IDM_ELEASE.
 *
 * The C client's own log lines go to a callback that drops them (they may
 * name hosts, never secrets: zk:// carries none, and user:password@ is
 * refused), and its logging is turned off for the whole process the first
 * time a zk:// handle opens (zoo_set_debug_level(0)): formatting a line
 * writes static buffers that every handle's threads share (the client's
 * format_endpoint_info), a data race inside the client; an application
 * that wants the client's log back can set its level again afterwards.
 *
 * Threads: the C client runs an I/O and a completion thread per handle;
 * lease.c calls claim, release and close from the owner thread and renew
 * from the keeper thread, never two at once on one handle.
 *
 * Open checks the URL and sends nothing: the session starts with the first
 * call that needs one (claim, list, scope, reattach: always a new one),
 * within the connect bound (the TTL, 1 s to 10 s; reattach: TTL/3, 1 s to
 * 10 s, for all of it), so a coordinator that is down fails there with
 * IDM_EIO.
 *
 * What it does not do: ZooKeeper authentication (digest, SASL) or TLS,
 * chroot in the connect string, or watches (a deleted worker node is
 * noticed at the next renewal). A forked child's close sends nothing: the
 * session, the socket and the client's threads are the parent's (the
 * child's copy of the client's memory is left as it is, since its threads
 * do not exist there).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/proto.h>
#include <zookeeper/zookeeper.h>

#include "backend.h"
#include "common.h"
#include "lease_internal.h"
#include "zookeeper_internal.h"

#define MAX_HOSTS 1024            /* the connect string */
#define MAX_PREFIX 256
#define MAX_PATH (MAX_PREFIX + 32)
#define MAX_DATA 4096             /* the most of a node's data kept */
#define MARK_LEN 24
#define CLAIM_PASSES 3            /* fresh lists of the taken ids after lost races */
#define WRITE_TRIES 4             /* re-reads of a mark whose version moved */
#define NS_PER_MS INT64_C(1000000)

static atomic_uint_fast64_t round_trips, requests;

void idm__zk_counters(uint64_t *rt, uint64_t *rq)
{
    *rt = atomic_load(&round_trips);
    *rq = atomic_load(&requests);
}

typedef struct zk_be {
    zhandle_t *zh;
    pid_t pid;                /* the process that opened it */
    pthread_mutex_t mu;       /* guards the requests' results and the session state */
    pthread_cond_t cv;        /* on CLOCK_MONOTONIC */
    int state;                /* the last session state the watcher saw */
    bool expired;
    char hosts[MAX_HOSTS + 1];
    char prefix[MAX_PREFIX + 1];
    char where[MAX_HOSTS + MAX_PREFIX + 16]; /* zk://host:port[,...]/prefix */
    int64_t deadline_ns;      /* the current operation's budget */
    int64_t ttl_ms, margin_ms; /* what open was given: the session timeout asked for */
    int64_t granted_ms;
    int64_t session;          /* the session's id */
    clientid_t cid;           /* the session's id and password (handle) */
    bool resumed;             /* reattach was tried on this handle */
    /* the claim */
    bool held;
    uint32_t worker;
    int64_t czxid;            /* of workers/N: the fencing token */
    int32_t wversion;         /* of workers/N */
    int32_t hversion;         /* of hwm/N after our last write, -1: none */
    bool stale;               /* an answer was lost: re-read before writing */
    idm_unix_ms floor;        /* the highest mark found stored by others (the
                                 previous holder, a hand): never written below */
    char wpath[MAX_PATH], hpath[MAX_PATH], spath[MAX_PATH];
} zk_be;

/* ---------------------------------------------------------------- requests */

enum { R_VOID, R_STAT, R_DATA, R_CHILDREN };

/* One request in flight. Its completion fills it under z->mu; a waiter that
 * gives up marks it abandoned, and the completion frees it then. */
typedef struct zreq {
    zk_be *z;
    int kind;
    bool done, abandoned;
    int rc;
    struct Stat stat;
    char *data;               /* R_DATA: a copy, NUL-terminated, of at most MAX_DATA */
    int datalen;              /* the node's whole length */
    char **names;             /* R_CHILDREN */
    int nnames;
    /* list: the id and the kind of node it reads */
    uint32_t tag_id;
    bool tag_hwm;
    /* a multi */
    int nops;
    zoo_op_result_t res[3];
    struct Stat stats[3];
} zreq;

static void req_free(zreq *r)
{
    if (r == NULL)
        return;
    free(r->data);
    for (int i = 0; i < r->nnames; i++)
        free(r->names[i]);
    free(r->names);
    free(r);
}

/* Under z->mu: the request is answered; free it if nobody waits. */
static void req_finish(zreq *r)
{
    zk_be *z = r->z;
    if (r->abandoned) {
        req_free(r);
        return;
    }
    r->done = true;
    pthread_cond_broadcast(&z->cv);
}

static void on_void(int rc, const void *data)
{
    zreq *r = (zreq *)data;
    zk_be *z = r->z;
    pthread_mutex_lock(&z->mu);
    r->rc = rc;
    req_finish(r);
    pthread_mutex_unlock(&z->mu);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
    zreq *r = (zreq *)data;
    zk_be *z = r->z;
    pthread_mutex_lock(&z->mu);
    r->rc = rc;
    if (rc == ZOK && stat != NULL)
        r->stat = *stat;
    req_finish(r);
    pthread_mutex_unlock(&z->mu);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    zreq *r = (zreq *)data;
    zk_be *z = r->z;
    pthread_mutex_lock(&z->mu);
    r->rc = rc;
    if (rc == ZOK) {
        int keep = len < 0 ? 0 : len > MAX_DATA ? MAX_DATA : len;
        if (stat != NULL)
            r->stat = *stat;
        r->datalen = len < 0 ? 0 : len;
        r->data = malloc((size_t)keep + 1);
        if (r->data == NULL) {
            r->rc = ZSYSTEMERROR;
        } else {
            if (keep > 0)
                memcpy(r->data, value, (size_t)keep);
            r->data[keep] = '\0';
        }
    }
    req_finish(r);
    pthread_mutex_unlock(&z->mu);
}

static void on_string(int rc, const char *value, const void *data)
{
    (void)value;
    on_void(rc, data);
}

static void on_children(int rc, const struct String_vector *v, const void *data)
{
    zreq *r = (zreq *)data;
    zk_be *z = r->z;
    pthread_mutex_lock(&z->mu);
    r->rc = rc;
    if (rc == ZOK && v != NULL && v->count > 0) {
        r->names = calloc((size_t)v->count, sizeof *r->names);
        if (r->names == NULL)
            r->rc = ZSYSTEMERROR;
        for (int i = 0; r->names != NULL && i < v->count; i++) {
            r->names[i] = strdup(v->data[i] != NULL ? v->data[i] : "");
            if (r->names[i] == NULL) {
                r->rc = ZSYSTEMERROR;
                break;
            }
            r->nnames = i + 1;
        }
    }
    req_finish(r);
    pthread_mutex_unlock(&z->mu);
}

static zreq *req_new(zk_be *z, int kind)
{
    zreq *r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->z = z;
        r->kind = kind;
        r->rc = ZSYSTEMERROR;
    }
    return r;
}

/* The C client refused the request at once (its completion will never
 * run): free it. */
static int sent(zreq *r, int rc, zreq **out)
{
    if (rc != ZOK) {
        req_free(r);
        *out = NULL;
        return rc;
    }
    atomic_fetch_add(&requests, 1);
    *out = r;
    return ZOK;
}

static int send_get(zk_be *z, const char *path, zreq **out)
{
    zreq *r = req_new(z, R_DATA);
    if (r == NULL)
        return ZSYSTEMERROR;
    return sent(r, zoo_aget(z->zh, path, 0, on_data, r), out);
}

static int send_exists(zk_be *z, const char *path, zreq **out)
{
    zreq *r = req_new(z, R_STAT);
    if (r == NULL)
        return ZSYSTEMERROR;
    return sent(r, zoo_aexists(z->zh, path, 0, on_stat, r), out);
}

static int send_children(zk_be *z, const char *path, zreq **out)
{
    zreq *r = req_new(z, R_CHILDREN);
    if (r == NULL)
        return ZSYSTEMERROR;
    return sent(r, zoo_aget_children(z->zh, path, 0, on_children, r), out);
}

static int send_create(zk_be *z, const char *path, const char *data, int mode, zreq **out)
{
    zreq *r = req_new(z, R_VOID);
    if (r == NULL)
        return ZSYSTEMERROR;
    return sent(r,
                zoo_acreate(z->zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, mode,
                            on_string, r),
                out);
}

/* A multi of ops[0..n): r->res and r->stats receive the results. */
static int send_multi(zk_be *z, zoo_op_t *ops, int n, zreq **out)
{
    zreq *r = req_new(z, R_VOID);
    if (r == NULL)
        return ZSYSTEMERROR;
    r->nops = n;
    for (int i = 0; i < n; i++) {
        r->res[i].err = ZSYSTEMERROR;
        if (ops[i].type == ZOO_SETDATA_OP)
            ops[i].set_op.stat = &r->stats[i];
    }
    return sent(r, zoo_amulti(z->zh, n, ops, r->res, on_void, r), out);
}

/* Wait for every request of rs[0..n) (NULL entries skipped) until the
 * operation's deadline: 0, or -1 if some did not come (those are left to
 * their completions, and set to NULL here). One round trip. */
static int wait_all(zk_be *z, zreq **rs, int n)
{
    int missing = 0;
    struct timespec ts = {(time_t)(z->deadline_ns / 1000000000),
                          (long)(z->deadline_ns % 1000000000)};
    atomic_fetch_add(&round_trips, 1);
    pthread_mutex_lock(&z->mu);
    for (int i = 0; i < n; i++) {
        while (rs[i] != NULL && !rs[i]->done) {
            if (pthread_cond_timedwait(&z->cv, &z->mu, &ts) == ETIMEDOUT && !rs[i]->done)
                break;
        }
    }
    for (int i = 0; i < n; i++) {
        if (rs[i] != NULL && !rs[i]->done) {
            rs[i]->abandoned = true;
            rs[i] = NULL;
            missing = 1;
        }
    }
    pthread_mutex_unlock(&z->mu);
    return missing ? -1 : 0;
}

static void free_all(zreq **rs, int n)
{
    for (int i = 0; i < n; i++) {
        req_free(rs[i]);
        rs[i] = NULL;
    }
}

static void begin_op(zk_be *z, int64_t budget_ms)
{
    z->deadline_ns = idm__mono_ns() + budget_ms * NS_PER_MS;
}

static bool session_expired(zk_be *z)
{
    bool e;
    pthread_mutex_lock(&z->mu);
    e = z->expired;
    pthread_mutex_unlock(&z->mu);
    return e || zoo_state(z->zh) == ZOO_EXPIRED_SESSION_STATE;
}

static int expired_error(zk_be *z)
{
    return idm_error_fail(IDM_ELEASE,
                          "lease: zk %.200s: the ZooKeeper session expired: the claim on worker "
                          "id %u is lost",
                          z->where, (unsigned)z->worker);
}

/* A request's ZooKeeper error rc as ours: IDM_ELEASE only for an expired
 * session, IDM_EIO otherwise, naming what. */
static int zk_error(zk_be *z, const char *what, int rc)
{
    if (rc == ZSESSIONEXPIRED || (rc == ZINVALIDSTATE && session_expired(z)))
        return expired_error(z);
    return idm_error_fail(IDM_EIO, "lease: zk %.200s: %s: %s", z->where, what, zerror(rc));
}

static int no_answer(zk_be *z, const char *what)
{
    if (session_expired(z))
        return expired_error(z);
    return idm_error_fail(IDM_EIO, "lease: zk %.200s: %s: no answer in time (ZooKeeper %s)",
                          z->where, what,
                          zoo_state(z->zh) == ZOO_CONNECTED_STATE ? "connected" : "disconnected");
}

/* The answers to rs[0..n), sent (send: ZOK, or the error that stopped the
 * sending): 0 when all came; else the error, every request freed. */
static int answers(zk_be *z, zreq **rs, int n, int send, const char *what)
{
    if (send != ZOK) {
        if (n > 0)
            (void)wait_all(z, rs, n);
        free_all(rs, n);
        return zk_error(z, what, send);
    }
    if (wait_all(z, rs, n) != 0) {
        free_all(rs, n);
        return no_answer(z, what);
    }
    return 0;
}

/* ------------------------------------------------------------ node names */

int idm__zk_parse_id(const char *name, uint32_t max, uint32_t *id)
{
    uint64_t v = 0;
    size_t n = strlen(name);
    if (n == 0)
        return IDM__ZK_NOT_ID;
    for (size_t i = 0; i < n; i++) {
        if (name[i] < '0' || name[i] > '9')
            return IDM__ZK_NOT_ID;
        v = v * 10 + (uint64_t)(name[i] - '0');
        if (v >= max)
            return IDM__ZK_NOT_ID; /* also stops any overflow */
    }
    *id = (uint32_t)v;
    return name[0] == '0' && n > 1 ? IDM__ZK_AMBIGUOUS : IDM__ZK_ID;
}

/* A stored mark: 1 to 19 decimal digits (leading zeros allowed), at most
 * INT64_MAX; -1 otherwise. */
static int parse_mark(const char *s, int len, idm_unix_ms *mark)
{
    int64_t m = 0;
    if (len <= 0 || len > 19 || (int)strlen(s) != len)
        return -1;
    for (int i = 0; i < len; i++) {
        int d = s[i] - '0';
        if (s[i] < '0' || s[i] > '9' || m > (INT64_MAX - d) / 10)
            return -1;
        m = m * 10 + d;
    }
    *mark = m;
    return 0;
}

static int not_a_mark(zk_be *z, uint32_t id)
{
    return idm_error_fail(IDM_EIO,
                          "lease: zk %.200s: %s/hwm/%u does not hold a mark (decimal Unix ms); "
                          "refusing to use worker id %u without knowing its last mark",
                          z->where, z->prefix, (unsigned)id, (unsigned)id);
}

/*
 * MARK_FIRST: whoever reads workers/N and hwm/N to write with the versions
 * read reads hwm/N first. The two reads are two requests, and between them
 * a reattach may replace workers/N by a node of another session (its
 * version is 0 again) and raise hwm/N, in one multi. Read in this order,
 * such a move either comes before the read of workers/N (which then shows
 * the other session) or after the read of hwm/N (whose version then moved,
 * so the write fails and reads again); read the other way, an old holder
 * could see its own node and the new mark's version, and a check of
 * workers/N's version 0 would let its write through.
 */
static void paths_of(zk_be *z, uint32_t id)
{
    snprintf(z->wpath, sizeof z->wpath, "%s/workers/%u", z->prefix, (unsigned)id);
    snprintf(z->hpath, sizeof z->hpath, "%s/hwm/%u", z->prefix, (unsigned)id);
}

/* ------------------------------------------------------------------ open */

/* The URL is shown masked (a refused one may hold user:password@). */
static int bad_url(const char *why, const char *rest)
{
    char url[128], shown[128];
    snprintf(url, sizeof url, "zk://%.120s", rest);
    idm__url_mask(url, shown, sizeof shown);
    return idm_error_fail(IDM_EINVAL,
                          "lease: zk URL '%.90s': %s (want zk://host:port[,host:port...]/prefix)",
                          shown, why);
}

/* The prefix: an absolute znode path of printable bytes ('!'..'~'), no
 * trailing '/', no "//", no "." or ".." component, not under /zookeeper
 * (the server's own). */
static const char *check_prefix(const char *p, size_t n)
{
    if (n < 2)
        return "the prefix is empty";
    if (n > MAX_PREFIX)
        return "the prefix is longer than 256 bytes";
    if (p[n - 1] == '/')
        return "the prefix ends with '/'";
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '!' || p[i] > '~')
            return "the prefix holds a byte that is not printable (or a space)";
        if (p[i] == '/' && p[i + 1] == '/')
            return "the prefix holds '//'";
        if (p[i] == '/') {
            size_t e = i + 1;
            while (e < n && p[e] != '/')
                e++;
            if ((e - i - 1 == 1 && p[i + 1] == '.') ||
                (e - i - 1 == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
                return "the prefix holds a '.' or '..' component";
        }
    }
    if (strncmp(p, "/zookeeper", 10) == 0 && (p[10] == '/' || p[10] == '\0'))
        return "the prefix is under /zookeeper, the server's own";
    return NULL;
}

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

static void quiet_client(void)
{
    zoo_set_debug_level((ZooLogLevel)0);
}

static void silent_log(const char *message)
{
    (void)message; /* the C client's chatter: host names and session ids only */
}

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zk_be *z = ctx;
    (void)zh;
    (void)path;
    if (type != ZOO_SESSION_EVENT || z == NULL)
        return;
    pthread_mutex_lock(&z->mu);
    z->state = state;
    if (state == ZOO_EXPIRED_SESSION_STATE)
        z->expired = true;
    pthread_cond_broadcast(&z->cv);
    pthread_mutex_unlock(&z->mu);
}

static void zk_close(void *be)
{
    zk_be *z = be;
    if (z == NULL)
        return;
    if (z->pid != getpid()) {
        /* A forked child: the session, its socket and the client's threads
         * are the parent's; zookeeper_close here would end the parent's
         * session (and join threads that do not exist in the child). The
         * child's copy of the client's memory is left alone. */
        free(z);
        return;
    }
    if (z->zh != NULL)
        zookeeper_close(z->zh); /* ends the session: workers/N goes at once */
    pthread_cond_destroy(&z->cv);
    pthread_mutex_destroy(&z->mu);
    free(z);
}

/* Open checks the URL and starts nothing: no round trip. The session is
 * started by the first request that needs one (start_session): a new one
 * for claim, list and scope, the saved one for reattach. */
static int zk_open(void **be, const char *rest, const idm_lease_opts *opts)
{
    const char *slash = strchr(rest, '/'), *why;
    size_t hlen, plen;
    int64_t ttl = opts->ttl_ms > 0 ? opts->ttl_ms : IDM_LEASE_TTL_DEFAULT_MS;
    zk_be *z;

    if (strchr(rest, '?') != NULL)
        return bad_url("zk:// takes no options", rest);
    if (slash == NULL)
        return bad_url("no /prefix", rest);
    hlen = (size_t)(slash - rest);
    if (memchr(rest, '@', hlen) != NULL)
        return bad_url("credentials (user@) are not supported", rest);
    if (hlen == 0)
        return bad_url("no host:port", rest);
    if (hlen > MAX_HOSTS)
        return bad_url("the host list is longer than 1024 bytes", rest);
    for (const char *p = rest; p < slash;) {
        const char *c = memchr(p, ',', (size_t)(slash - p));
        size_t n = (size_t)((c != NULL ? c : slash) - p);
        if (idm__lease_endpoint_check(p, n) != 0)
            return bad_url("an endpoint is not host:port (port 1 to 65535)", rest);
        p += n;
        if (c != NULL && ++p == slash)
            return bad_url("an endpoint is empty", rest);
    }
    plen = strlen(slash);
    if ((why = check_prefix(slash, plen)) != NULL)
        return bad_url(why, rest);

    z = calloc(1, sizeof *z);
    if (z == NULL)
        return IDM_ENOMEM;
    z->pid = getpid();
    z->hversion = -1;
    z->ttl_ms = ttl;
    z->margin_ms = opts->margin_ms >= 0 ? opts->margin_ms : ttl / 5;
    memcpy(z->hosts, rest, hlen);
    memcpy(z->prefix, slash, plen + 1);
    snprintf(z->spath, sizeof z->spath, "%s/scope", z->prefix);
    snprintf(z->where, sizeof z->where, "zk://%s", rest);
    pthread_mutex_init(&z->mu, NULL);
    idm__cond_init_mono(&z->cv);
    pthread_once(&quiet_once, quiet_client);
    *be = z;
    return 0;
}

/* End the session (if connected: the C client sends closeSession only
 * then) and forget it: the handle may start another. */
static void end_session(zk_be *z)
{
    zookeeper_close(z->zh);
    z->zh = NULL;
    pthread_mutex_lock(&z->mu);
    z->state = 0;
    z->expired = false;
    pthread_mutex_unlock(&z->mu);
}

/*
 * Start a new session, asked for with ttl_ms as its timeout. Connected
 * before z->deadline_ns (begin_op), or an error: a server where nothing
 * listens must not hang the caller. IDM_EIO if no server answered in time;
 * IDM_EINVAL if the timeout granted leaves no room for the margin. A
 * session that failed to start is closed at once. Saved sessions are never
 * resumed (zookeeper_init2 with a clientid_t): reattach moves a saved
 * claim to a new session instead (see zk_reattach).
 */
static int start_session(zk_be *z, int64_t ttl_ms)
{
    int64_t wait_ms = (z->deadline_ns - idm__mono_ns()) / NS_PER_MS;
    int state, rc = 0, e;
    sigset_t old;
    /* The client's I/O and completion threads start here: they inherit a
     * full block (see idm__signals_block). */
    idm__signals_block(&old);
    errno = 0;
    z->zh = zookeeper_init2(z->hosts, watcher, (int)(ttl_ms > INT32_MAX ? INT32_MAX : ttl_ms),
                            NULL, z, ZOO_NO_LOG_CLIENTENV, silent_log);
    e = errno;
    idm__signals_restore(&old);
    if (z->zh == NULL) {
        return idm_error_fail(IDM_EIO, "lease: zk %.200s: cannot start a ZooKeeper client (%s)",
                              z->where, e != 0 ? strerror(e) : "no reason");
    }
    pthread_mutex_lock(&z->mu);
    {
        struct timespec ts = {(time_t)(z->deadline_ns / 1000000000),
                              (long)(z->deadline_ns % 1000000000)};
        while (z->state != ZOO_CONNECTED_STATE && !z->expired &&
               pthread_cond_timedwait(&z->cv, &z->mu, &ts) != ETIMEDOUT)
            ;
        state = z->state;
    }
    pthread_mutex_unlock(&z->mu);
    if (state != ZOO_CONNECTED_STATE) {
        rc = idm_error_fail(IDM_EIO,
                            "lease: zk %.200s: no ZooKeeper server answered within %lld ms",
                            z->where, (long long)(wait_ms > 0 ? wait_ms : 0));
    } else {
        z->granted_ms = zoo_recv_timeout(z->zh);
        z->cid = *zoo_client_id(z->zh);
        z->session = z->cid.client_id;
        if (z->granted_ms <= 0 || z->margin_ms >= z->granted_ms * 2 / 3)
            rc = idm_error_fail(IDM_EINVAL,
                                "lease: zk %.200s: the server grants a session timeout of %lld "
                                "ms for a TTL of %lld ms, too short for a margin of %lld ms",
                                z->where, (long long)z->granted_ms, (long long)ttl_ms,
                                (long long)z->margin_ms);
    }
    if (rc != 0)
        end_session(z);
    return rc;
}

/* A new session for claim, list and scope, if the handle has none yet. */
static int ensure_session(zk_be *z)
{
    if (z->zh != NULL)
        return 0;
    /* The connect bound a claim has always had: the TTL, 1 s to 10 s. */
    begin_op(z, z->ttl_ms < 1000 ? 1000 : z->ttl_ms > 10000 ? 10000 : z->ttl_ms);
    return start_session(z, z->ttl_ms);
}

/* ----------------------------------------------------------------- claim */

/* Create the prefix, each of its parents, <prefix>/workers and <prefix>/hwm
 * where missing: pipelined, parents first (one round trip). */
static int ensure_parents(zk_be *z)
{
    char path[MAX_PATH];
    zreq *rs[MAX_PREFIX / 2 + 4] = {NULL};
    int n = 0, rc = 0;
    for (size_t i = 1; z->prefix[i - 1] != '\0'; i++) {
        if (z->prefix[i] != '/' && z->prefix[i] != '\0')
            continue;
        memcpy(path, z->prefix, i);
        path[i] = '\0';
        if (n < (int)(sizeof rs / sizeof rs[0]) - 2 &&
            (rc = send_create(z, path, "", ZOO_PERSISTENT, &rs[n])) == ZOK)
            n++;
        if (rc != ZOK)
            break;
    }
    if (rc == ZOK) {
        snprintf(path, sizeof path, "%s/workers", z->prefix);
        rc = send_create(z, path, "", ZOO_PERSISTENT, &rs[n]);
        if (rc == ZOK)
            n++;
    }
    if (rc == ZOK) {
        snprintf(path, sizeof path, "%s/hwm", z->prefix);
        rc = send_create(z, path, "", ZOO_PERSISTENT, &rs[n]);
        if (rc == ZOK)
            n++;
    }
    if ((rc = answers(z, rs, n, rc, "creating the prefix")) != 0)
        return rc;
    for (int i = 0; i < n && rc == ZOK; i++)
        if (rs[i]->rc != ZOK && rs[i]->rc != ZNODEEXISTS)
            rc = rs[i]->rc;
    free_all(rs, n);
    return rc == ZOK ? 0 : zk_error(z, "creating the prefix", rc);
}

/* What step 1 found: the ids taken, and the scope. */
typedef struct view {
    uint8_t *taken;
    uint32_t max;
    bool scope_present;
    int32_t scope_version;
} view;

/* Step 1: getChildren(workers) and get(scope), pipelined. *missing when
 * <prefix>/workers does not exist yet. */
static int read_view(zk_be *z, const char *scope, view *v, bool *missing)
{
    char path[MAX_PATH];
    zreq *rs[2] = {NULL, NULL};
    int rc;
    *missing = false;
    memset(v->taken, 0, v->max);
    v->scope_present = false;
    snprintf(path, sizeof path, "%s/workers", z->prefix);
    rc = send_children(z, path, &rs[0]);
    if (rc == ZOK && scope != NULL)
        rc = send_get(z, z->spath, &rs[1]);
    if ((rc = answers(z, rs, 2, rc, "reading the taken ids")) != 0)
        return rc;
    if (rs[1] != NULL) {
        if (rs[1]->rc == ZOK) {
            if (rs[1]->datalen != (int)strlen(scope) || memcmp(rs[1]->data, scope,
                                                               strlen(scope)) != 0)
                rc = idm__lease_scope_refuse(z->where, rs[1]->data,
                                             rs[1]->datalen > MAX_DATA ? MAX_DATA
                                                                       : (size_t)rs[1]->datalen,
                                             scope);
            v->scope_present = true;
            v->scope_version = rs[1]->stat.version;
        } else if (rs[1]->rc != ZNONODE) {
            rc = zk_error(z, "reading the scope", rs[1]->rc);
        }
    }
    if (rc == 0) {
        if (rs[0]->rc == ZNONODE) {
            *missing = true;
        } else if (rs[0]->rc != ZOK) {
            rc = zk_error(z, "reading the taken ids", rs[0]->rc);
        } else {
            for (int i = 0; i < rs[0]->nnames; i++) {
                uint32_t id;
                /* An ambiguous name is no id of ours, but the id it may
                 * mean is not chosen either. */
                if (idm__zk_parse_id(rs[0]->names[i], v->max, &id) != IDM__ZK_NOT_ID)
                    v->taken[id] = 1;
            }
        }
    }
    free_all(rs, 2);
    return rc;
}

/* The index of the op that failed a multi: the first error that is not the
 * roll-back of an op after it (ZRUNTIMEINCONSISTENCY); -1 if the multi
 * failed as a whole (a system error: connection lost, closing). */
static int failed_op(const zreq *r)
{
    if (r->rc > ZAPIERROR)
        return -1;
    for (int i = 0; i < r->nops; i++)
        if (r->res[i].err != ZOK && r->res[i].err != ZRUNTIMEINCONSISTENCY)
            return i;
    return -1;
}

enum { WON, RACE_LOST, SCOPE_MOVED, PARENT_GONE };

/* Step 2 on id: the claiming multi, with get(hwm/N) and exists(workers/N)
 * right behind it. On WON, *prev and its version (-1: no hwm/N). */
static int try_claim(zk_be *z, uint32_t id, const char *holder, const char *scope, const view *v,
                     int *outcome, idm_unix_ms *prev, int32_t *prev_version)
{
    zoo_op_t ops[2];
    zreq *rs[3] = {NULL, NULL, NULL};
    int n = 0, rc, w;
    *outcome = RACE_LOST;
    paths_of(z, id);
    if (scope != NULL && v->scope_present)
        zoo_check_op_init(&ops[n++], z->spath, v->scope_version);
    else if (scope != NULL)
        zoo_create_op_init(&ops[n++], z->spath, scope, (int)strlen(scope), &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_PERSISTENT, NULL, 0);
    w = n;
    zoo_create_op_init(&ops[n++], z->wpath, holder, (int)strlen(holder), &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL, NULL, 0);
    rc = send_multi(z, ops, n, &rs[0]);
    if (rc == ZOK) /* the mark first (see MARK_FIRST) */
        rc = send_get(z, z->hpath, &rs[2]);
    if (rc == ZOK)
        rc = send_exists(z, z->wpath, &rs[1]);
    if ((rc = answers(z, rs, 3, rc, "claiming a worker id")) != 0)
        return rc;
    if (rs[0]->rc != ZOK) {
        int f = failed_op(rs[0]);
        int err = f >= 0 ? rs[0]->res[f].err : rs[0]->rc;
        if (f == w && err == ZNODEEXISTS)
            *outcome = RACE_LOST;
        else if (f == w && err == ZNONODE)
            *outcome = PARENT_GONE;
        else if (f >= 0 && f < w && (err == ZNODEEXISTS || err == ZBADVERSION || err == ZNONODE))
            *outcome = SCOPE_MOVED;
        else
            rc = zk_error(z, "claiming a worker id", err);
        /* The exists right behind it tells whether an earlier attempt of
         * ours holds the node: never, since each attempt is on another id
         * or its answer was seen. */
    } else if (rs[1]->rc != ZOK || rs[1]->stat.ephemeralOwner != z->session) {
        rc = idm_error_fail(IDM_EIO,
                            "lease: zk %.200s: %s was created but is not this session's right "
                            "after (deleted by hand?)",
                            z->where, z->wpath);
    } else {
        *outcome = WON;
        z->czxid = rs[1]->stat.czxid;
        z->wversion = rs[1]->stat.version;
        if (rs[2]->rc == ZNONODE) {
            *prev = 0;
            *prev_version = -1;
        } else if (rs[2]->rc != ZOK) {
            rc = zk_error(z, "reading the mark", rs[2]->rc);
        } else if (parse_mark(rs[2]->data, rs[2]->datalen, prev) != 0) {
            rc = not_a_mark(z, id);
        } else {
            *prev_version = rs[2]->stat.version;
        }
    }
    free_all(rs, 3);
    return rc;
}

/* Re-read our claim: get(hwm/N) and exists(workers/N), pipelined. IDM_ELEASE
 * if workers/N is gone or another session's; else the stored mark (0 if
 * none) and the versions to write with. */
static int reread(zk_be *z, idm_unix_ms *stored)
{
    zreq *rs[2] = {NULL, NULL};
    /* The mark first (see MARK_FIRST). */
    int rc = send_get(z, z->hpath, &rs[1]);
    if (rc == ZOK)
        rc = send_exists(z, z->wpath, &rs[0]);
    if ((rc = answers(z, rs, 2, rc, "re-reading the claim")) != 0)
        return rc;
    if (rs[0]->rc == ZNONODE || (rs[0]->rc == ZOK && (rs[0]->stat.ephemeralOwner != z->session ||
                                                      rs[0]->stat.czxid != z->czxid))) {
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: zk %.200s: %s was deleted or belongs to another session: the "
                            "claim is lost",
                            z->where, z->wpath);
    } else if (rs[0]->rc != ZOK) {
        rc = zk_error(z, "re-reading the claim", rs[0]->rc);
    } else if (rs[1]->rc == ZNONODE) {
        *stored = 0;
        z->hversion = -1;
        z->wversion = rs[0]->stat.version;
    } else if (rs[1]->rc != ZOK) {
        rc = zk_error(z, "re-reading the mark", rs[1]->rc);
    } else if (parse_mark(rs[1]->data, rs[1]->datalen, stored) != 0) {
        rc = not_a_mark(z, z->worker);
    } else {
        z->hversion = rs[1]->stat.version;
        z->wversion = rs[0]->stat.version;
    }
    free_all(rs, 2);
    if (rc == 0)
        z->stale = false;
    return rc;
}

/*
 * Write mark into hwm/N: if guarded, in a multi with check(workers/N, its
 * version) (renew, release), or with setData(workers/N, holder, its
 * version) if holder is not NULL (reattach: the new holder shown by list);
 * a setData with the version of our last write, or a create if there is no
 * hwm/N. 0 when written; *moved when the version moved (or the node came or
 * went): re-read and try again; the claim lost (IDM_ELEASE) if workers/N is
 * gone.
 */
static int write_mark(zk_be *z, idm_unix_ms mark, bool guarded, const char *holder, bool *moved)
{
    char val[MARK_LEN];
    zoo_op_t ops[2];
    zreq *rs[1] = {NULL};
    int n = 0, rc, m;
    *moved = false;
    snprintf(val, sizeof val, "%lld", (long long)(mark < 0 ? 0 : mark));
    if (guarded && holder != NULL)
        zoo_set_op_init(&ops[n++], z->wpath, holder, (int)strlen(holder), z->wversion, NULL);
    else if (guarded)
        zoo_check_op_init(&ops[n++], z->wpath, z->wversion);
    m = n;
    if (z->hversion >= 0)
        zoo_set_op_init(&ops[n++], z->hpath, val, (int)strlen(val), z->hversion, NULL);
    else
        zoo_create_op_init(&ops[n++], z->hpath, val, (int)strlen(val), &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_PERSISTENT, NULL, 0);
    rc = send_multi(z, ops, n, &rs[0]);
    if (rc != ZOK)
        return zk_error(z, "recording the mark", rc);
    if (wait_all(z, rs, 1) != 0) {
        z->stale = true; /* it may be applied yet: read before writing again */
        return no_answer(z, "recording the mark");
    }
    rc = 0;
    if (rs[0]->rc == ZOK) {
        z->hversion = z->hversion >= 0 ? rs[0]->stats[m].version : 0;
        if (guarded && holder != NULL)
            z->wversion = rs[0]->stats[0].version;
    } else {
        int f = failed_op(rs[0]);
        int err = f >= 0 ? rs[0]->res[f].err : rs[0]->rc;
        if (guarded && f == 0 && err == ZNONODE)
            rc = idm_error_fail(IDM_ELEASE,
                                "lease: zk %.200s: %s was deleted: the claim is lost", z->where,
                                z->wpath);
        else if (f == m && err == ZNONODE && z->hversion < 0 && (rc = ensure_parents(z)) == 0)
            *moved = true; /* <prefix>/hwm was removed by hand: made again */
        else if (rc != 0)
            ;
        else if (f >= 0 && (err == ZBADVERSION || err == ZNONODE || err == ZNODEEXISTS))
            *moved = true;
        else
            rc = zk_error(z, "recording the mark", err);
        if (*moved)
            z->stale = true;
        else if (rc != 0 && rc != IDM_ELEASE)
            z->stale = true;
    }
    free_all(rs, 1);
    return rc;
}

/* Step 3: record max(prev, want) in hwm/N; prev rises to what a re-read
 * finds, if another write came between. */
static int first_mark(zk_be *z, idm_unix_ms want, idm_unix_ms *prev)
{
    for (int i = 0; i < WRITE_TRIES; i++) {
        bool moved;
        int rc = write_mark(z, want > *prev ? want : *prev, false, NULL, &moved);
        if (rc != 0 || !moved)
            return rc;
        if (!z->stale)
            continue;
        {
            idm_unix_ms stored = 0;
            rc = reread(z, &stored);
            if (rc != 0)
                return rc;
            if (stored > *prev)
                *prev = stored;
        }
    }
    return idm_error_fail(IDM_EIO, "lease: zk %.200s: %s kept changing during the claim", z->where,
                          z->hpath);
}

static int zk_claim(void *be, uint32_t max_workers, int64_t ttl_ms, const char *holder,
                    const char *scope, idm_unix_ms want, uint32_t *worker, idm_unix_ms *prev_mark,
                    idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    zk_be *z = be;
    view v = {NULL, max_workers, false, 0};
    bool parents_made = false;
    int rc = 0;

    if (z->held || z->resumed)
        return idm_error_fail(IDM_EINVAL, "lease: this zk handle holds a claim already");
    if ((rc = ensure_session(z)) != 0)
        return rc;
    v.taken = calloc(max_workers, 1);
    if (v.taken == NULL)
        return IDM_ENOMEM;
    begin_op(z, ttl_ms * 2 / 3 > 1000 ? ttl_ms * 2 / 3 : 1000);
    for (int pass = 0; rc == 0 && pass < CLAIM_PASSES; pass++) {
        bool missing, lost_race = false, again = false;
        rc = read_view(z, scope, &v, &missing);
        if (rc == 0 && missing && !parents_made) {
            rc = ensure_parents(z);
            parents_made = true;
            pass--; /* a new prefix: not a lost race */
            continue;
        }
        if (rc != 0)
            break;
        for (uint32_t id = 0; id < max_workers && rc == 0 && !again; id++) {
            int outcome;
            idm_unix_ms prev = 0;
            int32_t pv = -1;
            if (v.taken[id])
                continue;
            rc = try_claim(z, id, holder, scope, &v, &outcome, &prev, &pv);
            if (rc != 0)
                break;
            if (outcome == RACE_LOST) {
                lost_race = true;
                continue;
            }
            if (outcome == SCOPE_MOVED || outcome == PARENT_GONE) {
                /* Read again: the scope now recorded may refuse us. */
                if (outcome == PARENT_GONE && !parents_made) {
                    rc = ensure_parents(z);
                    parents_made = true;
                }
                lost_race = again = true;
                break;
            }
            z->worker = id;
            z->hversion = pv;
            z->stale = false;
            rc = first_mark(z, want, &prev);
            if (rc != 0)
                break; /* the session's close removes workers/N */
            z->floor = prev;
            free(v.taken);
            z->held = true;
            *worker = id;
            *prev_mark = prev;
            *recorded = want;
            *granted_ttl_ms = z->granted_ms;
            return 0;
        }
        if (rc != 0 || !lost_race)
            break;
    }
    free(v.taken);
    if (rc == 0)
        rc = idm_error_fail(IDM_EBUSY,
                            "lease: no free worker id: all %u under %.200s/workers/ are held",
                            (unsigned)max_workers, z->where);
    return rc;
}

/* ----------------------------------------------------------------- renew */

/* Record mark, guarded on still holding workers/N, never below the floor
 * (the previous holder's mark, and any higher one a re-read found: written
 * by hand, or by a write of ours whose answer was lost). Above the floor,
 * mark is written as it is: the release's exact final mark may be below the
 * last renewal's, since the generator has stopped and minted nothing above
 * it. A lost answer or a moved version makes it re-read first. */
static int guarded_write(zk_be *z, idm_unix_ms mark, const char *holder)
{
    for (int i = 0; i < WRITE_TRIES; i++) {
        bool moved;
        int rc;
        if (session_expired(z))
            return expired_error(z);
        if (zoo_client_id(z->zh)->client_id != z->session)
            return idm_error_fail(IDM_ELEASE,
                                  "lease: zk %.200s: the ZooKeeper session changed: the claim "
                                  "is lost",
                                  z->where);
        if (z->stale) {
            idm_unix_ms stored = 0;
            rc = reread(z, &stored);
            if (rc != 0)
                return rc;
            if (stored > z->floor)
                z->floor = stored;
        }
        rc = write_mark(z, mark > z->floor ? mark : z->floor, true, holder, &moved);
        if (rc != 0 || !moved)
            return rc;
    }
    return idm_error_fail(IDM_EIO, "lease: zk %.200s: %s kept changing", z->where, z->hpath);
}

static int zk_renew(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms)
{
    zk_be *z = be;
    int rc;
    if (!z->held)
        return idm_error_fail(IDM_ELEASE, "lease: no claim to renew");
    begin_op(z, z->granted_ms / 3 > 300 ? z->granted_ms / 3 : 300);
    rc = guarded_write(z, mark, NULL);
    if (rc == 0)
        *granted_ttl_ms = z->granted_ms;
    return rc;
}

static int zk_release(void *be, idm_unix_ms mark)
{
    zk_be *z = be;
    int rc;
    if (!z->held)
        return 0;
    begin_op(z, z->granted_ms / 3 > 300 ? z->granted_ms / 3 : 300);
    rc = guarded_write(z, mark, NULL);
    z->held = false;
    return rc;
}

static uint64_t zk_generation(void *be)
{
    return (uint64_t)((zk_be *)be)->czxid;
}

/* ------------------------------------------------------ handle, reattach */

/* A handle is the session's id and password, what zookeeper_init2 needs to
 * resume it: 16 hex digits, '-', 32 hex digits (49 bytes). */
#define HANDLE_LEN (16 + 1 + 32)

static int zk_handle(void *be, char *buf, size_t len)
{
    zk_be *z = be;
    const unsigned char *pw = (const unsigned char *)z->cid.passwd;
    char *p = buf;
    if (!z->held || z->zh == NULL) {
        buf[0] = '\0';
        return idm_error_fail(IDM_EINVAL, "lease: this zk handle holds no claim");
    }
    if (len < HANDLE_LEN + 1) {
        buf[0] = '\0';
        return idm_error_fail(IDM_EINVAL, "lease: a zk claim's handle takes %d bytes; %zu given",
                              HANDLE_LEN, len > 0 ? len - 1 : 0);
    }
    p += snprintf(p, len, "%016llx-", (unsigned long long)z->cid.client_id);
    for (size_t i = 0; i < sizeof z->cid.passwd; i++)
        p += snprintf(p, len - (size_t)(p - buf), "%02x", pw[i]);
    return 0;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A handle as zk_handle writes it into *cid: 0, or -1 (session id 0 too,
 * which would ask for a new session). */
static int parse_handle(const char *s, clientid_t *cid)
{
    uint64_t id = 0;
    if (s == NULL || strnlen(s, HANDLE_LEN + 1) != HANDLE_LEN || s[16] != '-')
        return -1;
    for (int i = 0; i < 16; i++) {
        int d = hex_digit(s[i]);
        if (d < 0)
            return -1;
        id = id << 4 | (uint64_t)d;
    }
    for (int i = 0; i < 16; i++) {
        int hi = hex_digit(s[17 + 2 * i]), lo = hex_digit(s[18 + 2 * i]);
        if (hi < 0 || lo < 0)
            return -1;
        cid->passwd[i] = (char)(hi << 4 | lo);
    }
    if (id == 0)
        return -1;
    cid->client_id = (int64_t)id;
    return 0;
}

/* Record the scope if none is (the claim was made without one, or its node
 * was removed by hand): created once, and compared with what is there then
 * (a racing claimant's, perhaps). */
static int record_scope(zk_be *z, const char *scope)
{
    zreq *rs[2] = {NULL, NULL};
    int rc = send_create(z, z->spath, scope, ZOO_PERSISTENT, &rs[0]);
    if (rc == ZOK)
        rc = send_get(z, z->spath, &rs[1]);
    if ((rc = answers(z, rs, 2, rc, "recording the scope")) != 0)
        return rc;
    if (rs[0]->rc != ZOK && rs[0]->rc != ZNODEEXISTS)
        rc = zk_error(z, "recording the scope", rs[0]->rc);
    else if (rs[1]->rc != ZOK)
        rc = zk_error(z, "reading the scope", rs[1]->rc);
    else if (rs[1]->datalen != (int)strlen(scope) ||
             memcmp(rs[1]->data, scope, strlen(scope)) != 0)
        rc = idm__lease_scope_refuse(
            z->where, rs[1]->data, rs[1]->datalen > MAX_DATA ? MAX_DATA : (size_t)rs[1]->datalen,
            scope);
    free_all(rs, 2);
    return rc;
}

/* What reattach's read found on the worker node and the mark. */
typedef struct saved_view {
    int32_t wversion, hversion; /* hversion -1: no hwm/N */
    idm_unix_ms stored;         /* the mark stored, 0 if none */
    bool need_scope;            /* no scope recorded: record ours */
} saved_view;

/* Reattach's read: get(hwm/N), exists(workers/N) and, with a scope,
 * get(scope), pipelined (one round trip). 0 if workers/N is still the
 * saved session's (cid) with our scope (or none recorded: *v says so), and
 * the mark readable; IDM_ELEASE if workers/N is gone or another session's;
 * the scope refused; IDM_EIO otherwise. */
static int read_saved(zk_be *z, const clientid_t *cid, const char *scope, saved_view *v)
{
    zreq *rs[3] = {NULL, NULL, NULL};
    /* The mark first (see MARK_FIRST). */
    int rc = send_get(z, z->hpath, &rs[1]);
    if (rc == ZOK)
        rc = send_exists(z, z->wpath, &rs[0]);
    if (rc == ZOK && scope != NULL)
        rc = send_get(z, z->spath, &rs[2]);
    if ((rc = answers(z, rs, 3, rc, "reading the saved claim")) != 0)
        return rc;
    v->need_scope = false;
    v->stored = 0;
    v->hversion = -1;
    if (rs[0]->rc == ZNONODE) {
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: zk %.200s: %s is gone (the saved session 0x%llx expired, or "
                            "the node was deleted): the claim on worker id %u is lost",
                            z->where, z->wpath, (unsigned long long)cid->client_id,
                            (unsigned)z->worker);
    } else if (rs[0]->rc != ZOK) {
        rc = zk_error(z, "reading the saved claim", rs[0]->rc);
    } else if (rs[0]->stat.ephemeralOwner != cid->client_id) {
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: zk %.200s: %s is another session's (0x%llx, not the saved "
                            "0x%llx): worker id %u was claimed or resumed again since; the saved "
                            "claim is lost",
                            z->where, z->wpath, (unsigned long long)rs[0]->stat.ephemeralOwner,
                            (unsigned long long)cid->client_id, (unsigned)z->worker);
    } else if (rs[2] != NULL && rs[2]->rc == ZOK) {
        if (rs[2]->datalen != (int)strlen(scope) ||
            memcmp(rs[2]->data, scope, strlen(scope)) != 0)
            rc = idm__lease_scope_refuse(z->where, rs[2]->data,
                                         rs[2]->datalen > MAX_DATA ? MAX_DATA
                                                                   : (size_t)rs[2]->datalen,
                                         scope);
    } else if (rs[2] != NULL && rs[2]->rc == ZNONODE) {
        v->need_scope = true;
    } else if (rs[2] != NULL) {
        rc = zk_error(z, "reading the scope", rs[2]->rc);
    }
    if (rc == 0) {
        v->wversion = rs[0]->stat.version;
        if (rs[1]->rc == ZOK && parse_mark(rs[1]->data, rs[1]->datalen, &v->stored) != 0)
            rc = not_a_mark(z, z->worker);
        else if (rs[1]->rc == ZOK)
            v->hversion = rs[1]->stat.version;
        else if (rs[1]->rc != ZNONODE)
            rc = zk_error(z, "reading the mark", rs[1]->rc);
    }
    free_all(rs, 3);
    return rc;
}

/* Reattach's write, on the new session, as read in v: multi{delete(
 * workers/N, its version), create(workers/N, holder, EPHEMERAL),
 * setData(hwm/N, max(stored, mark), its version) or create(hwm/N)}, and
 * right behind it exists(workers/N) for the new node's czxid and version
 * (one round trip). *moved if a version moved or a node came or went
 * between the read and the write: nothing was applied, read again. */
static int move_claim(zk_be *z, const saved_view *v, const char *holder, idm_unix_ms mark,
                      bool *moved)
{
    char val[MARK_LEN];
    zoo_op_t ops[3];
    zreq *rs[2] = {NULL, NULL};
    int rc;
    *moved = false;
    snprintf(val, sizeof val, "%lld", (long long)(mark < 0 ? 0 : mark));
    zoo_delete_op_init(&ops[0], z->wpath, v->wversion);
    zoo_create_op_init(&ops[1], z->wpath, holder, (int)strlen(holder), &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL, NULL, 0);
    if (v->hversion >= 0)
        zoo_set_op_init(&ops[2], z->hpath, val, (int)strlen(val), v->hversion, NULL);
    else
        zoo_create_op_init(&ops[2], z->hpath, val, (int)strlen(val), &ZOO_OPEN_ACL_UNSAFE,
                           ZOO_PERSISTENT, NULL, 0);
    rc = send_multi(z, ops, 3, &rs[0]);
    if (rc == ZOK)
        rc = send_exists(z, z->wpath, &rs[1]);
    if ((rc = answers(z, rs, 2, rc, "moving the saved claim to a new session")) != 0)
        return rc;
    if (rs[0]->rc != ZOK) {
        int f = failed_op(rs[0]);
        int err = f >= 0 ? rs[0]->res[f].err : rs[0]->rc;
        if (f == 2 && err == ZNONODE && v->hversion < 0)
            rc = ensure_parents(z); /* <prefix>/hwm was removed by hand */
        if (rc == 0 && f >= 0 && (err == ZBADVERSION || err == ZNONODE || err == ZNODEEXISTS))
            *moved = true;
        else if (rc == 0)
            rc = zk_error(z, "moving the saved claim to a new session", err);
    } else if (rs[1]->rc != ZOK || rs[1]->stat.ephemeralOwner != z->session) {
        rc = idm_error_fail(IDM_EIO,
                            "lease: zk %.200s: %s was made this session's but is not right "
                            "after (deleted by hand?)",
                            z->where, z->wpath);
    } else {
        z->czxid = rs[1]->stat.czxid;
        z->wversion = rs[1]->stat.version;
        z->hversion = v->hversion >= 0 ? rs[0]->stats[2].version : 0;
    }
    free_all(rs, 2);
    return rc;
}

/*
 * Resume a saved claim by moving it to a new session of this handle's own:
 *   1. the new session (its handshake), and on it read_saved: workers/N
 *      gone (the saved session expired, or the node was deleted) or
 *      another session's (claimed by another, or resumed already by a
 *      copy of the saved claim): IDM_ELEASE; another scope recorded:
 *      refused; no scope recorded: created (one more round trip); a mark
 *      that is not a number: IDM_EIO;
 *   2. move_claim: the saved session's node replaced by one of the new
 *      session, the mark raised, in one multi. A version that moved since
 *      1 (the saved session's holder, alive, renewed; another reattach of
 *      the same handle won) applies nothing: 1 and 2 again, where the node
 *      is then another session's (IDM_ELEASE) or still the saved one's.
 * The handle (handle()) is then the new session's, and the generation the
 * new node's czxid: a later restart needs them, the saved handle resumes
 * nothing any more. A saved claim so resumes once: two copies of it racing
 * both read the saved session's node, but every multi that moves it also
 * writes hwm/N at the version read, so one applies and the other finds the
 * node another session's; and since every claim and every reattach writes
 * hwm/N before its node is relied on, a delete that matched a node made
 * again since (the version of a new node is 0 again) is undone by that
 * same multi. A holder still alive on the saved session finds its claim
 * lost at its next renewal: its write of hwm/N at its version fails, and
 * the re-read finds the node another session's. The saved session itself
 * is left to expire (if its process is dead) or to its process: ending it
 * would cost its handshake and its close, and it holds nothing.
 * Nothing is changed before 2, and 2 changes all or nothing, so every
 * refusal leaves the claim as it was. A failure of 2 with no answer in time
 * is IDM_EIO: the caller closes this handle, which ends the new session,
 * and with it the node if the multi was applied (the next try then finds
 * it gone: IDM_ELEASE; the mark written covers it).
 * Round trips: the new session's handshake, 1's read, 2's write: three,
 * two of them requests counted by idm__zk_counters.
 */
static int zk_reattach(void *be, uint32_t worker, const char *handle, int64_t ttl_ms,
                       const char *holder, const char *scope, idm_unix_ms mark,
                       idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    zk_be *z = be;
    clientid_t cid;
    saved_view v = {0, -1, 0, false};
    bool scope_made = false;
    int rc;

    if (z->zh != NULL || z->held || z->resumed)
        return idm_error_fail(IDM_EINVAL, "lease: reattach needs a zk handle with no session yet");
    /* Never the handle itself in a detail: it holds the session's password. */
    memset(&cid, 0, sizeof cid);
    if (parse_handle(handle, &cid) != 0)
        return idm_error_fail(IDM_EINVAL,
                              "lease: zk %.200s: the saved handle is not a ZooKeeper session "
                              "(want 16 hex digits of its id, '-', 32 of its password)",
                              z->where);
    /* One budget for the whole step: a renewal's, TTL/3, but at least 1 s
     * for the session's handshake and at most the usual connect bound. */
    begin_op(z, ttl_ms / 3 < 1000 ? 1000 : ttl_ms / 3 > 10000 ? 10000 : ttl_ms / 3);
    z->resumed = true;
    z->worker = worker;
    paths_of(z, worker);
    if ((rc = start_session(z, ttl_ms)) != 0)
        return rc;
    for (int i = 0; i < WRITE_TRIES; i++) {
        bool moved;
        idm_unix_ms want;
        if ((rc = read_saved(z, &cid, scope, &v)) != 0)
            return rc;
        if (v.need_scope && !scope_made) {
            if ((rc = record_scope(z, scope)) != 0)
                return rc;
            scope_made = true;
        }
        want = mark > v.stored ? mark : v.stored;
        if ((rc = move_claim(z, &v, holder, want, &moved)) != 0)
            return rc;
        if (moved)
            continue;
        z->floor = v.stored;
        z->stale = false;
        z->held = true;
        *recorded = want;
        *granted_ttl_ms = z->granted_ms;
        return 0;
    }
    return idm_error_fail(IDM_EIO, "lease: zk %.200s: %s kept changing during the reattach",
                          z->where, z->hpath);
}

/* ------------------------------------------------------------------ list */

static int zk_list(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count)
{
    zk_be *z = be;
    char path[MAX_PATH];
    zreq *kids[2] = {NULL, NULL}, **rs = NULL;
    uint8_t *seen = NULL;
    idm_lease_entry *all = NULL;
    size_t n = 0;
    int rc, nrs = 0;
    *entries = NULL;
    *count = 0;
    if ((rc = ensure_session(z)) != 0)
        return rc;
    begin_op(z, z->granted_ms > 2000 ? z->granted_ms : 2000);
    snprintf(path, sizeof path, "%s/workers", z->prefix);
    rc = send_children(z, path, &kids[0]);
    snprintf(path, sizeof path, "%s/hwm", z->prefix);
    if (rc == ZOK)
        rc = send_children(z, path, &kids[1]);
    if ((rc = answers(z, kids, 2, rc, "listing")) != 0)
        return rc;
    for (int k = 0; k < 2; k++)
        if (kids[k]->rc != ZOK && kids[k]->rc != ZNONODE) {
            rc = zk_error(z, "listing", kids[k]->rc);
            free_all(kids, 2);
            return rc;
        }
    all = calloc(max_workers, sizeof *all);
    seen = calloc(max_workers, 1);
    rs = calloc((size_t)kids[0]->nnames + (size_t)kids[1]->nnames + 1, sizeof *rs);
    if (all == NULL || seen == NULL || rs == NULL) {
        rc = IDM_ENOMEM;
        goto out;
    }
    /* Every id's node read, pipelined: one more round trip. */
    rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        for (int i = 0; i < kids[k]->nnames; i++) {
            uint32_t id;
            int zr;
            if (idm__zk_parse_id(kids[k]->names[i], max_workers, &id) != IDM__ZK_ID)
                continue;
            snprintf(path, sizeof path, "%s/%s/%u", z->prefix, k == 0 ? "workers" : "hwm",
                     (unsigned)id);
            zr = send_get(z, path, &rs[nrs]);
            if (zr != ZOK) {
                rc = zk_error(z, "listing", zr);
                break;
            }
            rs[nrs]->tag_id = id;
            rs[nrs]->tag_hwm = k == 1;
            nrs++;
        }
    }
    if (wait_all(z, rs, nrs) != 0 && rc == 0)
        rc = no_answer(z, "listing");
    for (int i = 0; i < nrs && rc == 0; i++) {
        uint32_t id = rs[i]->tag_id;
        bool hwm = rs[i]->tag_hwm;
        if (rs[i]->rc == ZNONODE)
            continue; /* gone between the two reads */
        if (rs[i]->rc != ZOK) {
            rc = zk_error(z, "listing", rs[i]->rc);
            break;
        }
        seen[id] = 1;
        if (!hwm) {
            all[id].held = true;
            idm__lease_scope_copy(rs[i]->data, strlen(rs[i]->data), all[id].holder,
                                  sizeof all[id].holder);
        } else if (parse_mark(rs[i]->data, rs[i]->datalen, &all[id].mark_ms) != 0) {
            all[id].mark_ms = 0;
            if (!all[id].held)
                snprintf(all[id].holder, sizeof all[id].holder, "(unreadable mark)");
        }
    }
    if (rc == 0) {
        for (uint32_t id = 0; id < max_workers; id++) {
            if (!seen[id])
                continue;
            all[n] = all[id];
            all[n].worker = id;
            n++;
        }
    }
out:
    free_all(kids, 2);
    if (rs != NULL)
        free_all(rs, nrs);
    free(rs);
    free(seen);
    if (rc != 0 || n == 0) {
        free(all);
        all = NULL;
        n = 0;
    }
    *entries = all;
    *count = n;
    return rc;
}

/* ----------------------------------------------------------------- scope */

static int zk_scope(void *be, char *buf, size_t cap)
{
    zk_be *z = be;
    zreq *rs[1] = {NULL};
    int rc;
    buf[0] = '\0';
    if ((rc = ensure_session(z)) != 0)
        return rc;
    begin_op(z, z->granted_ms > 2000 ? z->granted_ms : 2000);
    rc = send_get(z, z->spath, &rs[0]);
    if (rc != ZOK)
        return zk_error(z, "reading the scope", rc);
    if (wait_all(z, rs, 1) != 0)
        return no_answer(z, "reading the scope");
    if (rs[0]->rc == ZOK)
        rc = idm__lease_scope_text(z->where, rs[0]->data,
                                   rs[0]->datalen > MAX_DATA ? MAX_DATA : (size_t)rs[0]->datalen,
                                   buf, cap);
    else if (rs[0]->rc == ZNONODE)
        rc = 0;
    else
        rc = zk_error(z, "reading the scope", rs[0]->rc);
    free_all(rs, 1);
    return rc;
}

const idm__lease_backend idm__lease_zk = {
    zk_open, zk_claim, zk_renew, zk_release, zk_list, zk_scope, zk_close, zk_generation, zk_handle,
    zk_reattach,
};
