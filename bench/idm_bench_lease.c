/* SPDX-License-Identifier: MIT */
/*
 * idm_bench_lease: what it costs to claim a worker id and to keep it, with
 * every coordinator: file://, etcd://, etcds:// (etcd over HTTPS with a
 * client certificate), zk:// (ZooKeeper) and postgres:// (PostgreSQL).
 *
 * Per coordinator (row letter: F file, E etcd, T etcds, Z zk, P postgres):
 *   xRT   its bare round trip, over one warm connection with the client
 *         library the backend uses (the unit of the ratios): etcd and etcds
 *         POST /v3/kv/range of a missing key (libcurl), zk a synchronous
 *         zoo_exists of a missing node on one session, postgres SELECT 1 on
 *         one libpq connection. file:// has none: its rows give times only.
 *   xWR   its bare write round trip, for reference (a claim's and a
 *         renewal's requests are writes, which wait for the coordinator's
 *         log): etcd put of one key, zk setData of one node, postgres an
 *         UPDATE of one row in its own commit.
 *   xCN   a bare connection setup with the same library, as a claim's first
 *         request makes it: etcd TCP connect, etcds TCP + TLS handshake, zk
 *         TCP + session handshake, postgres TCP + startup + authentication.
 *   x0    claim with 0 of 1,024 ids held: idm_lease_open .. the first id of
 *         a guarded generator after idm_lease_attach (the use lease.h shows)
 *   x1    the same with 1,000 of 1,024 held by someone else: file 1,000
 *         leases open in this process; etcd/etcds 1,000 keys
 *         <prefix>/workers/0..999 bound to one long etcd lease; zk 1,000
 *         ephemeral nodes <prefix>/workers/0..999 of this program's own
 *         session; postgres rows 0..999 of the backend's table held by
 *         another holder with an expiry an hour away.
 *   xRN   a renewal: idm_lease_status.renew_ns (send to answer) of a lease
 *         held with a 1 s TTL (renewed every ~333 ms) feeding a guarded
 *         generator that mints all along; median of the renewals seen.
 *
 * A claim row shows its ratio to RT (round trips' worth), the part of it
 * idm_lease_open takes, and (claim - xCN) / RT, the claim without the cost
 * of opening its connection. Target: a claim of at most 3 RT at either
 * occupancy (PASS, else BELOW, which never fails the run).
 *
 * Each claim is followed (untimed) by idm_lease_close and
 * idm_snowflake_close, so the same id is claimed again and again. Rounds
 * are interleaved: each round measures, per coordinator, RT, WR, CN, x0 and
 * x1 (each claim row for IDM_BENCH_SECONDS of wall time and at least
 * MIN_CLAIMS claims; a round's figure is its median), then the renewals of
 * all coordinators at once (their leases started 60 ms apart). The table
 * gives the median over the rounds, the median of the per-round ratios and
 * the spread (min..max of the per-round figures).
 *
 * Checks (a failure prints WRONG and makes the exit status 2): no claim got
 * an id that is held; the first id decodes to the claimed worker id and its
 * time lies above the previous holder's mark; every claim of an id carries
 * a fencing token (idm_lease_generation) above the previous claim's of that
 * id (not file://, which has none); the generator under renewal is never
 * refused and the claim is never lost.
 *
 * Usage: idm_bench_lease [--dir DIR]
 *          [--etcd HOST:PORT | --no-etcd REASON]
 *          [--etcds HOST:PORT --etcds-cacert FILE [--etcds-cert FILE
 *           --etcds-key FILE] | --no-etcds REASON]
 *          [--zk HOST:PORT | --no-zk REASON]
 *          [--pg URL | --no-pg REASON]
 *   --dir: where the file:// coordinators live (a fresh temporary directory
 *   under it; default $TMPDIR or /tmp). --pg: a libpq URI of a database
 *   this program may create schemas in (it works in two schemas of its own
 *   and drops them at the end). A coordinator not given is skipped, and its
 *   rows say so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <libpq-fe.h>
#include <zookeeper/zookeeper.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>

#include "bench_util.h"
/* The backends' own counts of their round trips (hidden functions of the
 * static library, as the unit tests use them). */
#include "postgres_internal.h"
#include "zookeeper_internal.h"

#define MAX_WORKERS 1024
#define HELD 1000
#define MIN_CLAIMS 20
#define MAX_CLAIMS 5000
#define RT_COUNT 200   /* bare round trips per round */
#define WR_COUNT 50    /* bare writes per round */
#define CN_COUNT 20    /* bare connection setups per round */
#define RK_COUNT 10    /* bare reads of the held ids per round */
#define RENEW_TTL_MS 1000
#define RENEWALS 5     /* renewals per coordinator per round */
#define STAGGER_MS 60  /* between the renewal leases' starts */
#define RENEW_WINDOW_MS 4000 /* the most a round's renewals take */
#define PROBE_RT_MS 100 /* after a renewal: one bare RT, the connection idle */
#define PROBE_WR_MS 200 /* and one bare write */
#define COUNT_CLAIMS 3 /* claims per occupancy whose round trips are counted */
#define LAYOUT "time:41@1ms,worker:10,seq:12"
#define EPOCH INT64_C(1288834974657)

enum { K_FILE, K_ETCD, K_ETCDS, K_ZK, K_PG, K_COUNT };

typedef int (*op_fn)(void *st);
typedef int (*conn_fn)(void *st, double *us);
/* The round trips made to the coordinator so far (a running count). */
typedef int (*count_fn)(void *st, uint64_t *n);

/* One coordinator: its URLs, its bare operations and its figures. */
typedef struct coord {
    const char *letter;     /* row prefix */
    const char *scheme;     /* "etcd://" */
    const char *rt_what, *wr_what, *cn_what, *rn_what;
    bool on;                /* runs; else why says why not */
    char why[400];
    char url[2][1024];      /* [0] none held, [1] HELD of MAX_WORKERS held */
    bool held[2][MAX_WORKERS];
    uint32_t last_worker[2];
    uint64_t last_gen[2][MAX_WORKERS];
    void *st;               /* its client state for the bare operations */
    op_fn rt, wr;           /* NULL: none (file://) */
    conn_fn cn;
    count_fn count;         /* NULL: not counted */
    bool count_server;      /* count counts on the server: the bench's own
                               requests are in it */
    op_fn rk;               /* a bare read of the HELD taken ids, or NULL */
    const char *rk_what;
    uint64_t n_claim[2][2], n_rn[2]; /* counted round trips: min, max */
    bool rn_counted;
    double f_rt[BENCH_ROUNDS_MAX], f_wr[BENCH_ROUNDS_MAX], f_cn[BENCH_ROUNDS_MAX];
    double f_rk[BENCH_ROUNDS_MAX];
    double f_claim[2][BENCH_ROUNDS_MAX], f_open[2][BENCH_ROUNDS_MAX];
    double f_rn[BENCH_ROUNDS_MAX];
    double f_irt[BENCH_ROUNDS_MAX], f_iwr[BENCH_ROUNDS_MAX]; /* idle probes */
    int rn_count, rn_refused;
} coord;

static coord g_c[K_COUNT];
static int g_rounds;
static idm_layout *g_layout;
static int g_worker_field;
static long g_pid;

/* ------------------------------------------------------------ etcd HTTP */

typedef struct http {
    CURL *c;
    struct curl_slist *h;
    char base[160];
    const char *cacert, *cert, *key; /* NULL for plain HTTP */
    char err[CURL_ERROR_SIZE];
    char rk_body[512];   /* kv/range of the full prefix's worker keys */
    char *buf;
    size_t len, cap;
} http;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    http *h = ud;
    size_t k = size * n;
    if (h->len + k + 1 > h->cap) {
        size_t cap = (h->len + k + 1) * 2;
        char *b = realloc(h->buf, cap);
        if (b == NULL)
            return 0;
        h->buf = b;
        h->cap = cap;
    }
    memcpy(h->buf + h->len, p, k);
    h->len += k;
    h->buf[h->len] = '\0';
    return k;
}

/* The TLS settings the backend uses for etcds:// (verified CA and host). */
static void http_tls(const http *h, CURL *c)
{
    if (h->cacert == NULL)
        return;
    curl_easy_setopt(c, CURLOPT_CAINFO, h->cacert);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->cert != NULL) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, h->cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, h->key);
    }
}

static int http_open(http *h, const char *ep, const char *cacert, const char *cert,
                     const char *key)
{
    memset(h, 0, sizeof *h);
    snprintf(h->base, sizeof h->base, "%s://%s", cacert != NULL ? "https" : "http", ep);
    h->cacert = cacert;
    h->cert = cert;
    h->key = key;
    h->c = curl_easy_init();
    h->h = curl_slist_append(NULL, "Content-Type: application/json");
    h->h = curl_slist_append(h->h, "Expect:");
    if (h->c == NULL || h->h == NULL)
        return -1;
    curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->h);
    curl_easy_setopt(h->c, CURLOPT_POST, 1L);
    curl_easy_setopt(h->c, CURLOPT_PROXY, "");
    curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(h->c, CURLOPT_ERRORBUFFER, h->err);
    http_tls(h, h->c);
    return 0;
}

static void http_close(http *h)
{
    if (h->c != NULL)
        curl_easy_cleanup(h->c);
    curl_slist_free_all(h->h);
    free(h->buf);
    memset(h, 0, sizeof *h);
}

/* POST body to path, or GET path if body is NULL; 0 on HTTP 200 (the
 * answer in h->buf, which a GET must have), else -1 (a POST says why in
 * h->err). */
static int http_call(http *h, const char *path, const char *body)
{
    char url[256];
    long status = 0;
    snprintf(url, sizeof url, "%s%s", h->base, path);
    h->len = 0;
    h->err[0] = '\0';
    if (h->buf != NULL)
        h->buf[0] = '\0';
    curl_easy_setopt(h->c, CURLOPT_URL, url);
    if (body != NULL) {
        curl_easy_setopt(h->c, CURLOPT_POST, 1L);
        curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(h->c, CURLOPT_HTTPGET, 1L);
    }
    if (curl_easy_perform(h->c) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &status);
    if (body == NULL)
        return status == 200 && h->buf != NULL ? 0 : -1;
    if (status != 200)
        snprintf(h->err, sizeof h->err, "HTTP status %ld", status);
    return status == 200 ? 0 : -1;
}

static void b64(const char *s, char *out)
{
    static const char a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s), i, o = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (i = 0; i + 2 < n; i += 3) {
        out[o++] = a[p[i] >> 2];
        out[o++] = a[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
        out[o++] = a[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
        out[o++] = a[p[i + 2] & 63];
    }
    if (i < n) {
        out[o++] = a[p[i] >> 2];
        if (i + 1 < n) {
            out[o++] = a[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
            out[o++] = a[(p[i + 1] & 15) << 2];
        } else {
            out[o++] = a[(p[i] & 3) << 4];
            out[o++] = '=';
        }
        out[o++] = '=';
    }
    out[o] = '\0';
}

/* The ID of a lease granted for ttl_s, or 0. */
static long long etcd_grant(http *h, int ttl_s)
{
    char body[64];
    snprintf(body, sizeof body, "{\"TTL\":\"%d\",\"ID\":\"0\"}", ttl_s);
    if (http_call(h, "/v3/lease/grant", body) != 0)
        return 0;
    const char *p = strstr(h->buf, "\"ID\":\"");
    return p != NULL ? strtoll(p + 6, NULL, 10) : 0;
}

/* Put <prefix>/workers/0..n-1 bound to lease id; 0 if all worked. */
static int etcd_fill(http *h, const char *prefix, int n, long long id)
{
    for (int w = 0; w < n; w++) {
        char key[300], key64[420], body[600];
        snprintf(key, sizeof key, "%s/workers/%d", prefix, w);
        b64(key, key64);
        snprintf(body, sizeof body,
                 "{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%lld\"}", key64,
                 "YmVuY2g=" /* "bench" */, id);
        if (http_call(h, "/v3/kv/put", body) != 0)
            return -1;
    }
    return 0;
}

/* One bare round trip: a linearizable range on a key that does not exist. */
static int etcd_rt(void *st)
{
    return http_call(st, "/v3/kv/range",
                     "{\"key\":\"L2lkbWludC1iZW5jaC9ub25l\"}"); /* /idmint-bench/none */
}

/* One bare write: a put of one key (a raft write, as grant and txn are). */
static int etcd_wr(void *st)
{
    char key[64], key64[100], body[256];
    snprintf(key, sizeof key, "/idmint-bench/%ld/write", g_pid);
    b64(key, key64);
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"value\":\"eA==\"}", key64);
    return http_call(st, "/v3/kv/put", body);
}

/* One bare connection setup, as the claim's first request makes it: a
 * fresh handle (no connection or TLS session to reuse), TCP connect and,
 * for https, the TLS handshake with the same certificates. */
static int etcd_cn(void *st, double *us)
{
    const http *h = st;
    CURL *c = curl_easy_init();
    if (c == NULL)
        return -1;
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_URL, h->base);
    curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
    http_tls(h, c);
    int64_t t0 = bench_mono_ns();
    CURLcode rc = curl_easy_perform(c);
    *us = (double)(bench_mono_ns() - t0) / 1e3;
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

/* What the claim's first request reads at 1,000 held: the keys of the
 * full prefix's workers (keys only), one answer of about 90 KB. */
static int etcd_rk(void *st)
{
    http *h = st;
    return http_call(h, "/v3/kv/range", h->rk_body);
}

/* The gRPC calls etcd has started, from its /metrics: each request of the
 * HTTP gateway is one call (a keepalive opens one stream), so the
 * difference around a claim is the requests it made. */
static int etcd_count(void *st, uint64_t *n)
{
    static const char tag[] = "grpc_server_started_total{";
    http *h = st;
    uint64_t sum = 0;
    if (http_call(h, "/metrics", NULL) != 0)
        return -1;
    for (const char *p = h->buf; (p = strstr(p, tag)) != NULL; p++) {
        if (p != h->buf && p[-1] != '\n')
            continue;
        const char *v = strchr(p, '}');
        if (v == NULL)
            return -1;
        sum += strtoull(v + 1, NULL, 10);
    }
    *n = sum;
    return 0;
}

/* Everything under /idmint-bench/<pid>/ (the fill keys, the marks and
 * scopes the claims wrote, the write key). */
static void etcd_cleanup(http *h)
{
    char from[64], to[64], f64[100], t64[100], body[256];
    snprintf(from, sizeof from, "/idmint-bench/%ld/", g_pid);
    snprintf(to, sizeof to, "/idmint-bench/%ld0", g_pid); /* '/' + 1 */
    b64(from, f64);
    b64(to, t64);
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"range_end\":\"%s\"}", f64, t64);
    http_call(h, "/v3/kv/deleterange", body);
}

/* Set up etcd:// or etcds:// on ep: the bench's connection (kept for the
 * bare round trips), HELD keys under the full prefix, a first round trip
 * and write. 0, or -1 with c->why set. */
static int etcd_setup(coord *c, http *h, const char *ep, const char *cacert, const char *cert,
                      const char *key, long long *fill_lease)
{
    char p0[96], p1[96], query[3200] = "";
    snprintf(p0, sizeof p0, "/idmint-bench/%ld/%s-empty", g_pid, c->letter);
    snprintf(p1, sizeof p1, "/idmint-bench/%ld/%s-full", g_pid, c->letter);
    if (cacert != NULL) {
        /* The option values go into the URL as they are: refuse what a
         * query would read otherwise. */
        const char *f[3] = {cacert, cert, key};
        for (int i = 0; i < 3; i++) {
            if (f[i] != NULL && strpbrk(f[i], "&?#% ") != NULL) {
                snprintf(c->why, sizeof c->why, "the file name '%.120s' holds one of & ? # %% "
                         "or a space, which the URL cannot carry as it is", f[i]);
                return -1;
            }
        }
        snprintf(query, sizeof query, "?cacert=%s", cacert);
        if (cert != NULL)
            snprintf(query + strlen(query), sizeof query - strlen(query),
                     "&cert=%s&key=%s", cert, key);
    }
    snprintf(c->url[0], sizeof c->url[0], "%s%s%s%s", c->scheme, ep, p0, query);
    snprintf(c->url[1], sizeof c->url[1], "%s%s%s%s", c->scheme, ep, p1, query);
    if (http_open(h, ep, cacert, cert, key) != 0) {
        snprintf(c->why, sizeof c->why, "libcurl did not start");
        return -1;
    }
    char from[128], to[128], f64[200], t64[200];
    snprintf(from, sizeof from, "%s/workers/", p1);
    snprintf(to, sizeof to, "%s/workers0", p1); /* '/' + 1 */
    b64(from, f64);
    b64(to, t64);
    snprintf(h->rk_body, sizeof h->rk_body,
             "{\"key\":\"%s\",\"range_end\":\"%s\",\"keys_only\":true}", f64, t64);
    if ((*fill_lease = etcd_grant(h, 3600)) == 0)
        snprintf(c->why, sizeof c->why, "POST %s/v3/lease/grant failed: %.100s", h->base, h->err);
    else if (etcd_fill(h, p1, HELD, *fill_lease) != 0)
        snprintf(c->why, sizeof c->why, "POST %s/v3/kv/put failed: %.100s", h->base, h->err);
    else if (etcd_rt(h) != 0)
        snprintf(c->why, sizeof c->why, "POST %s/v3/kv/range failed: %.100s", h->base, h->err);
    else if (etcd_wr(h) != 0)
        snprintf(c->why, sizeof c->why, "POST %s/v3/kv/put failed: %.100s", h->base, h->err);
    else {
        for (int w = 0; w < HELD; w++)
            c->held[1][w] = true;
        c->st = h;
        return 0;
    }
    return -1;
}

/* ------------------------------------------------------------ ZooKeeper */

typedef struct zk_sess {
    zhandle_t *zh;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
} zk_sess;

static const char *g_zk_hosts;

static void zk_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zk_sess *s = ctx;
    (void)zh;
    (void)path;
    if (type != ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&s->mu);
    s->state = state;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Open a session on hosts and wait (at most 5 s) until it is connected;
 * *us: zookeeper_init .. connected (TCP connect + session handshake).
 * 0, or -1 (s->zh may be set: zk_close it). */
static int zk_open(zk_sess *s, const char *hosts, int timeout_ms, double *us)
{
    struct timespec until;
    int64_t t0;
    int st;
    s->zh = NULL;
    s->state = 0;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    t0 = bench_mono_ns();
    s->zh = zookeeper_init(hosts, zk_watcher, timeout_ms, NULL, s, 0);
    if (s->zh == NULL)
        return -1;
    pthread_mutex_lock(&s->mu);
    while (s->state != ZOO_CONNECTED_STATE && s->state != ZOO_EXPIRED_SESSION_STATE &&
           s->state != ZOO_AUTH_FAILED_STATE &&
           pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
        ;
    st = s->state;
    pthread_mutex_unlock(&s->mu);
    if (us != NULL)
        *us = (double)(bench_mono_ns() - t0) / 1e3;
    return st == ZOO_CONNECTED_STATE ? 0 : -1;
}

static void zk_close(zk_sess *s)
{
    if (s->zh != NULL)
        zookeeper_close(s->zh);
    s->zh = NULL;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

/* One bare round trip: exists on a node that is not there. */
static int zk_rt(void *st)
{
    zk_sess *s = st;
    int rc = zoo_exists(s->zh, "/idmint-bench/none", 0, NULL);
    return rc == ZNONODE || rc == ZOK ? 0 : -1;
}

/* One bare write: setData of one node (a transaction through the leader,
 * logged, as the claim's creates and the mark's setData are). */
static int zk_wr(void *st)
{
    zk_sess *s = st;
    char path[64];
    snprintf(path, sizeof path, "/idmint-bench/%ld/write", g_pid);
    return zoo_set(s->zh, path, "x", 1, -1) == ZOK ? 0 : -1;
}

/* One bare connection setup: a new session, connected, then closed
 * (untimed). */
static int zk_cn(void *st, double *us)
{
    zk_sess s;
    (void)st;
    int rc = zk_open(&s, g_zk_hosts, 10000, us);
    zk_close(&s);
    return rc;
}

/* The backend's own count: waits for answers (pipelined requests count
 * once). */
static int zk_count(void *st, uint64_t *n)
{
    uint64_t rq;
    (void)st;
    idm__zk_counters(n, &rq);
    return 0;
}

/* Create path and its parents as persistent nodes (those there are kept). */
static int zk_mkpath(zhandle_t *zh, const char *path)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    for (char *q = p + 1;; q++) {
        if (*q == '/' || *q == '\0') {
            char save = *q;
            *q = '\0';
            int rc = zoo_create(zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            if (rc != ZOK && rc != ZNODEEXISTS)
                return rc;
            *q = save;
            if (save == '\0')
                return ZOK;
        }
    }
}

static atomic_int g_zk_done, g_zk_bad;

static void zk_created(int rc, const char *value, const void *data)
{
    (void)value;
    (void)data;
    if (rc != ZOK)
        atomic_fetch_add(&g_zk_bad, 1);
    atomic_fetch_add(&g_zk_done, 1);
}

/* The ephemeral nodes <prefix>/workers/0..n-1 of session s, the creates
 * pipelined (all sent, then the answers awaited). */
static int zk_fill(zk_sess *s, const char *prefix, int n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/workers", prefix);
    if (zk_mkpath(s->zh, path) != ZOK)
        return -1;
    atomic_store(&g_zk_done, 0);
    atomic_store(&g_zk_bad, 0);
    int sent = 0;
    for (int w = 0; w < n; w++) {
        snprintf(path, sizeof path, "%s/workers/%d", prefix, w);
        if (zoo_acreate(s->zh, path, "bench", 5, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, zk_created,
                        NULL) != ZOK)
            break;
        sent++;
    }
    int64_t end = bench_mono_ns() + INT64_C(30000000000);
    while (atomic_load(&g_zk_done) < sent && bench_mono_ns() < end)
        usleep(1000);
    return sent == n && atomic_load(&g_zk_done) == n && atomic_load(&g_zk_bad) == 0 ? 0 : -1;
}

/* Remove path and everything below it (best effort). */
static void zk_rmtree(zhandle_t *zh, const char *path)
{
    struct String_vector kids = {0, NULL};
    if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
        for (int i = 0; i < kids.count; i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s/%s", path, kids.data[i]);
            zk_rmtree(zh, sub);
        }
        deallocate_String_vector(&kids);
    }
    zoo_delete(zh, path, -1);
}

static zk_sess g_zk;

static int zk_setup(coord *c, const char *hosts)
{
    char p0[96], p1[96], wr[96];
    double us;
    snprintf(p0, sizeof p0, "/idmint-bench/%ld/empty", g_pid);
    snprintf(p1, sizeof p1, "/idmint-bench/%ld/full", g_pid);
    snprintf(wr, sizeof wr, "/idmint-bench/%ld/write", g_pid);
    snprintf(c->url[0], sizeof c->url[0], "zk://%s%s", hosts, p0);
    snprintf(c->url[1], sizeof c->url[1], "zk://%s%s", hosts, p1);
    g_zk_hosts = hosts;
    /* A long session: it holds the HELD ephemeral nodes for the whole run. */
    if (zk_open(&g_zk, hosts, 30000, &us) != 0)
        snprintf(c->why, sizeof c->why, "no ZooKeeper session with %s", hosts);
    else if (zk_mkpath(g_zk.zh, p0) != ZOK || zk_mkpath(g_zk.zh, wr) != ZOK)
        snprintf(c->why, sizeof c->why, "cannot create /idmint-bench/%ld/... on %s", g_pid, hosts);
    else if (zk_fill(&g_zk, p1, HELD) != 0)
        snprintf(c->why, sizeof c->why, "cannot create %d ephemeral nodes %s/workers/N", HELD, p1);
    else if (zk_rt(&g_zk) != 0 || zk_wr(&g_zk) != 0)
        snprintf(c->why, sizeof c->why, "exists or setData on %s failed", hosts);
    else {
        for (int w = 0; w < HELD; w++)
            c->held[1][w] = true;
        c->st = &g_zk;
        return 0;
    }
    return -1;
}

static void zk_cleanup(void)
{
    char p[64];
    if (g_zk.zh == NULL)
        return;
    snprintf(p, sizeof p, "/idmint-bench/%ld", g_pid);
    zk_rmtree(g_zk.zh, p);
    zk_close(&g_zk);
}

/* ----------------------------------------------------------- PostgreSQL */

static PGconn *g_pg;
static const char *g_pg_url;
static char g_pg_schema[3][64]; /* [0] empty, [1] full, [2] the bench's write table */

static int pg_exec(PGconn *conn, const char *sql, char *why, size_t len)
{
    PGresult *r = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok && why != NULL)
        snprintf(why, len, "%.60s...: %s", sql, PQerrorMessage(conn));
    PQclear(r);
    return ok ? 0 : -1;
}

/* DROP ... CASCADE's notice says what the bench knows. */
static void pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* One bare round trip: SELECT 1 (the simple query protocol: one message
 * out, one batch of messages back). */
static int pg_rt(void *st)
{
    return pg_exec(st, "SELECT 1", NULL, 0);
}

/* One bare write: an UPDATE of one row in its own commit (a WAL flush, as
 * a claim's and a renewal's statements are). */
static int pg_wr(void *st)
{
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE %s.w SET n = n + 1", g_pg_schema[2]);
    return pg_exec(st, sql, NULL, 0);
}

/* One bare connection setup: TCP, startup, authentication, up to ready
 * for a query; closed untimed. */
static int pg_cn(void *st, double *us)
{
    (void)st;
    int64_t t0 = bench_mono_ns();
    PGconn *conn = PQconnectdb(g_pg_url);
    *us = (double)(bench_mono_ns() - t0) / 1e3;
    int ok = PQstatus(conn) == CONNECTION_OK;
    PQfinish(conn);
    return ok ? 0 : -1;
}

/* The backend's own count of statements sent and answered (its connection
 * setup, counted apart, is not in it). */
static int pg_count(void *st, uint64_t *n)
{
    (void)st;
    *n = idm__lease_pg_round_trips();
    return 0;
}

/* url with the libpq option that makes schema the search path. */
static void pg_url_schema(char *out, size_t len, const char *url, const char *schema)
{
    snprintf(out, len, "%s%coptions=-csearch_path%%3D%s", url, strchr(url, '?') ? '&' : '?',
             schema);
}

/* Make ids 0..HELD-1 of the full coordinator held by another holder for
 * an hour: one claim through the library makes the backend's table (a row
 * per id) and frees its id again; then the rows are marked as a claim
 * marks them (holder, generation + 1, expiry by the database's clock). */
static int pg_fill(coord *c)
{
    idm_lease_opts lo;
    idm_lease *l = NULL;
    char sql[512];
    idm_lease_opts_init(&lo);
    lo.url = c->url[1];
    lo.max_workers = MAX_WORKERS;
    int rc = idm_lease_open(&l, &lo);
    if (rc == 0)
        rc = idm_lease_close(l);
    if (rc != 0) {
        snprintf(c->why, sizeof c->why, "the first claim failed: %s (%s)", idm_strerror(rc),
                 idm_error_detail());
        return -1;
    }
    snprintf(sql, sizeof sql,
             "UPDATE %s.idmint_workers SET holder = 'idm_bench_lease filler',"
             " generation = generation + 1, expires = clock_timestamp() + interval '1 hour'"
             " WHERE worker >= 0 AND worker < %d", g_pg_schema[1], HELD);
    PGresult *r = PQexec(g_pg, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK && atoi(PQcmdTuples(r)) == HELD;
    if (!ok)
        snprintf(c->why, sizeof c->why, "marking %d rows held: %s%s", HELD,
                 PQerrorMessage(g_pg), PQcmdTuples(r));
    PQclear(r);
    if (!ok)
        return -1;
    for (int w = 0; w < HELD; w++)
        c->held[1][w] = true;
    return 0;
}

static int pg_setup(coord *c, const char *url)
{
    char sql[512];
    g_pg_url = url;
    snprintf(g_pg_schema[0], sizeof g_pg_schema[0], "idmint_bench_%ld_empty", g_pid);
    snprintf(g_pg_schema[1], sizeof g_pg_schema[1], "idmint_bench_%ld_full", g_pid);
    snprintf(g_pg_schema[2], sizeof g_pg_schema[2], "idmint_bench_%ld", g_pid);
    pg_url_schema(c->url[0], sizeof c->url[0], url, g_pg_schema[0]);
    pg_url_schema(c->url[1], sizeof c->url[1], url, g_pg_schema[1]);
    g_pg = PQconnectdb(url);
    if (PQstatus(g_pg) != CONNECTION_OK) {
        snprintf(c->why, sizeof c->why, "cannot connect: %s", PQerrorMessage(g_pg));
        return -1;
    }
    PQsetNoticeProcessor(g_pg, pg_quiet, NULL);
    for (int i = 0; i < 3; i++) {
        snprintf(sql, sizeof sql, "CREATE SCHEMA %s", g_pg_schema[i]);
        if (pg_exec(g_pg, sql, c->why, sizeof c->why) != 0)
            return -1;
    }
    snprintf(sql, sizeof sql, "CREATE TABLE %s.w (n bigint); INSERT INTO %s.w VALUES (0)",
             g_pg_schema[2], g_pg_schema[2]);
    if (pg_exec(g_pg, sql, c->why, sizeof c->why) != 0 || pg_fill(c) != 0)
        return -1;
    if (pg_rt(g_pg) != 0 || pg_wr(g_pg) != 0) {
        snprintf(c->why, sizeof c->why, "SELECT 1 or the write failed: %s",
                 PQerrorMessage(g_pg));
        return -1;
    }
    c->st = g_pg;
    return 0;
}

static void pg_cleanup(void)
{
    char sql[512];
    if (g_pg == NULL)
        return;
    if (PQstatus(g_pg) == CONNECTION_OK) {
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s, %s, %s CASCADE", g_pg_schema[0],
                 g_pg_schema[1], g_pg_schema[2]);
        pg_exec(g_pg, sql, NULL, 0);
    }
    PQfinish(g_pg);
    g_pg = NULL;
}

/* ---------------------------------------------------------------- claims */

/* One claim on c's coordinator at occupancy occ, timed: open .. first id;
 * with counted, also the round trips from open to the first id (counted
 * outside the timed part). Returns 0, or an error (reported). */
static int one_claim(coord *c, int occ, double *us, double *open_us, uint64_t *counted)
{
    const char *url = c->url[occ];
    idm_lease_opts lo;
    idm_lease *l = NULL;
    idm_snowflake *g = NULL;
    idm_snowflake_opts so;
    uint64_t id = 0;
    int rc;

    uint64_t n0 = 0, n1 = 0;
    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.max_workers = MAX_WORKERS;
    if (counted != NULL && c->count(c->st, &n0) != 0) {
        bench_printf("%s: cannot count round trips\n", c->scheme);
        return -1;
    }
    int64_t t0 = bench_mono_ns();
    rc = idm_lease_open(&l, &lo);
    int64_t t1 = bench_mono_ns();
    if (rc != 0) {
        bench_printf("%s claim failed: %s (%s)\n", c->scheme, idm_strerror(rc),
                     idm_error_detail());
        return rc;
    }
    uint32_t w = idm_lease_worker(l);
    idm_unix_ms mark = idm_lease_mark(l);
    idm_snowflake_opts_init(&so);
    so.layout = g_layout;
    so.guarded = true;
    so.after_ms = mark;
    rc = idm_snowflake_opts_node(&so, "worker", w);
    if (rc == 0)
        rc = idm_snowflake_open(&g, &so);
    if (rc == 0)
        rc = idm_lease_attach(l, g);
    if (rc == 0)
        rc = idm_snowflake_next(g, &id);
    int64_t t2 = bench_mono_ns();
    if (rc != 0) {
        bench_printf("%s claim: worker %u: %s (%s)\n", c->scheme, (unsigned)w,
                     idm_strerror(rc), idm_error_detail());
        idm_lease_close(l);
        idm_snowflake_close(g);
        return rc;
    }
    *us = (double)(t2 - t0) / 1e3;
    *open_us = (double)(t1 - t0) / 1e3;
    if (counted != NULL) {
        if (c->count(c->st, &n1) != 0) {
            bench_printf("%s: cannot count round trips\n", c->scheme);
            idm_lease_close(l);
            idm_snowflake_close(g);
            return -1;
        }
        *counted = n1 - n0;
    }

    /* Checks, untimed. */
    idm_decoded d;
    uint64_t gen = idm_lease_generation(l);
    if (w >= MAX_WORKERS || c->held[occ][w])
        bench_wrong("%s: claimed worker id %u, which is held", c->scheme, (unsigned)w);
    else if (c->rt != NULL && gen <= c->last_gen[occ][w])
        bench_wrong("%s: a claim of worker id %u has the fencing token %" PRIu64
                    ", the previous one had %" PRIu64, c->scheme, (unsigned)w, gen,
                    c->last_gen[occ][w]);
    if (w < MAX_WORKERS)
        c->last_gen[occ][w] = gen;
    if (idm_layout_decode(g_layout, id, &d) != 0)
        bench_wrong("%s: the first id %" PRIu64 " does not decode", c->scheme, id);
    else if (d.value[g_worker_field] != w)
        bench_wrong("%s: the first id %" PRIu64 " holds worker %" PRIu64
                    ", the claim was %u", c->scheme, id, d.value[g_worker_field],
                    (unsigned)w);
    else if (mark > 0 && d.unix_ms <= mark)
        bench_wrong("%s: the first id's time %lld is not above the previous "
                    "holder's mark %lld", c->scheme, (long long)d.unix_ms,
                    (long long)mark);
    c->last_worker[occ] = w;
    rc = idm_lease_close(l);
    if (rc != 0)
        bench_printf("%s: idm_lease_close: %s (%s)\n", c->scheme, idm_strerror(rc),
                     idm_error_detail());
    idm_snowflake_close(g);
    return 0;
}

static double *g_buf, *g_obuf;

/* Claims for secs of wall time (MIN_CLAIMS..MAX_CLAIMS); medians into fig
 * and open_fig. */
static int measure_claims(coord *c, int occ, double secs, double *fig, double *open_fig)
{
    int n = 0;
    int64_t end = bench_mono_ns() + (int64_t)(secs * 1e9);
    while (n < MAX_CLAIMS && (n < MIN_CLAIMS || bench_mono_ns() < end)) {
        if (one_claim(c, occ, &g_buf[n], &g_obuf[n], NULL) != 0)
            return -1;
        n++;
    }
    *fig = bench_median(g_buf, n);
    *open_fig = bench_median(g_obuf, n);
    return 0;
}

/* count bare operations (one warm-up first), median in us into fig. */
static int measure_op(coord *c, op_fn op, int count, double *fig)
{
    if (op(c->st) != 0)
        return -1;
    for (int i = 0; i < count; i++) {
        int64_t t0 = bench_mono_ns();
        if (op(c->st) != 0)
            return -1;
        g_buf[i] = (double)(bench_mono_ns() - t0) / 1e3;
    }
    *fig = bench_median(g_buf, count);
    return 0;
}

static int measure_cn(coord *c, double *fig)
{
    for (int i = 0; i < CN_COUNT; i++)
        if (c->cn(c->st, &g_buf[i]) != 0)
            return -1;
    *fig = bench_median(g_buf, CN_COUNT);
    return 0;
}

/* Keep the least and the most of the counts seen. */
static void count_seen(uint64_t mm[2], bool first, uint64_t n)
{
    if (first || n < mm[0])
        mm[0] = n;
    if (first || n > mm[1])
        mm[1] = n;
}

/* One round of c: RT, WR, CN, then both claim rows. */
static int coord_round(coord *c, int r, double secs)
{
    if (c->rt != NULL && measure_op(c, c->rt, RT_COUNT, &c->f_rt[r]) != 0) {
        bench_printf("%s: %s failed\n", c->scheme, c->rt_what);
        return -1;
    }
    if (c->wr != NULL && measure_op(c, c->wr, WR_COUNT, &c->f_wr[r]) != 0) {
        bench_printf("%s: %s failed\n", c->scheme, c->wr_what);
        return -1;
    }
    if (c->rk != NULL && measure_op(c, c->rk, RK_COUNT, &c->f_rk[r]) != 0) {
        bench_printf("%s: %s failed\n", c->scheme, c->rk_what);
        return -1;
    }
    if (c->cn != NULL && measure_cn(c, &c->f_cn[r]) != 0) {
        bench_printf("%s: %s failed\n", c->scheme, c->cn_what);
        return -1;
    }
    for (int occ = 0; occ < 2; occ++) {
        if (measure_claims(c, occ, secs, &c->f_claim[occ][r], &c->f_open[occ][r]) != 0)
            return -1;
        /* In the first round, after the timed claims (so that the prefix's
         * parents, made by its first claim, are there), a few claims whose
         * round trips are counted, not timed: the count does not depend on
         * the machine. */
        for (int i = 0; r == 0 && c->count != NULL && i < COUNT_CLAIMS; i++) {
            double us, open_us;
            uint64_t n;
            if (one_claim(c, occ, &us, &open_us, &n) != 0)
                return -1;
            count_seen(c->n_claim[occ], i == 0, n);
        }
    }
    return 0;
}

/* -------------------------------------------------------------- renewals */

/* Round r's renewals: one lease per coordinator that runs, TTL 1 s, their
 * starts STAGGER_MS apart so that their renewals do not meet, each feeding
 * a guarded generator that mints at every poll; renew_ns taken at every
 * new renewal until each has RENEWALS. */
static int renew_round(int r)
{
    idm_lease *l[K_COUNT] = {0};
    idm_snowflake *g[K_COUNT] = {0};
    uint64_t seen[K_COUNT] = {0}, base[K_COUNT] = {0};
    double v[K_COUNT][RENEWALS], irt[K_COUNT][RENEWALS], iwr[K_COUNT][RENEWALS];
    int64_t probe_rt[K_COUNT] = {0}, probe_wr[K_COUNT] = {0};
    int n[K_COUNT] = {0}, nrt[K_COUNT] = {0}, nwr[K_COUNT] = {0}, slot[K_COUNT], failed = 0,
        want = 0;
    bool lost[K_COUNT] = {false};
    int64_t t0 = bench_mono_ns();
    /* A coordinator may grant more than the TTL asked for (etcd: at least
     * 2 s; ZooKeeper: at least two of its ticks), and renewals then come
     * less often: the round ends at RENEW_WINDOW_MS with what it saw. */
    int64_t end = t0 + (int64_t)RENEW_WINDOW_MS * 1000000;

    for (int k = 0; k < K_COUNT; k++)
        slot[k] = g_c[k].on ? want++ : -1;
    while (!failed && bench_mono_ns() < end) {
        int done = 0;
        for (int k = 0; k < K_COUNT && !failed; k++) {
            coord *c = &g_c[k];
            if (slot[k] < 0)
                continue;
            if (l[k] == NULL) {
                if (bench_mono_ns() - t0 < (int64_t)slot[k] * STAGGER_MS * 1000000)
                    continue;
                idm_lease_opts lo;
                idm_snowflake_opts so;
                idm_lease_status s;
                idm_lease_opts_init(&lo);
                lo.url = c->url[0];
                lo.max_workers = MAX_WORKERS;
                lo.ttl_ms = RENEW_TTL_MS;
                idm_snowflake_opts_init(&so);
                so.layout = g_layout;
                so.guarded = true;
                int rc = idm_lease_open(&l[k], &lo);
                if (rc == 0) {
                    so.after_ms = idm_lease_mark(l[k]);
                    rc = idm_snowflake_opts_node(&so, "worker", idm_lease_worker(l[k]));
                }
                if (rc == 0)
                    rc = idm_snowflake_open(&g[k], &so);
                if (rc == 0)
                    rc = idm_lease_attach(l[k], g[k]);
                if (rc != 0) {
                    bench_printf("%s renewal lease: %s (%s)\n", c->scheme, idm_strerror(rc),
                                 idm_error_detail());
                    failed = 1;
                    break;
                }
                idm_lease_status_get(l[k], &s);
                seen[k] = s.renewals;
                if (c->count != NULL && c->count(c->st, &base[k]) != 0) {
                    bench_printf("%s: cannot count round trips\n", c->scheme);
                    failed = 1;
                    break;
                }
            }
            idm_lease_status s;
            uint64_t id;
            idm_lease_status_get(l[k], &s);
            if (s.lost && !lost[k]) {
                lost[k] = true;
                bench_wrong("%s: the renewal lease was lost with nothing wrong (%s)", c->scheme,
                            idm_strerror(s.last_error));
            }
            if (s.renewals > seen[k]) {
                /* Polled every 2 ms, renewed every TTL/3: one renewal since
                 * the last look, and its requests all answered. */
                uint64_t now = 0;
                if (c->count != NULL && c->count(c->st, &now) != 0) {
                    bench_printf("%s: cannot count round trips\n", c->scheme);
                    failed = 1;
                    break;
                }
                if (c->count != NULL && s.renewals == seen[k] + 1) {
                    count_seen(c->n_rn, !c->rn_counted, now - base[k]);
                    c->rn_counted = true;
                }
                base[k] = now;
                seen[k] = s.renewals;
                if (n[k] < RENEWALS && s.renew_ns > 0)
                    v[k][n[k]++] = (double)s.renew_ns / 1e3;
                if (c->rt != NULL) {
                    int64_t t = bench_mono_ns();
                    probe_rt[k] = t + (int64_t)PROBE_RT_MS * 1000000;
                    probe_wr[k] = t + (int64_t)PROBE_WR_MS * 1000000;
                }
            }
            /* A renewal's request finds its connection idle since the last
             * one, which costs more than one sent right behind another (the
             * server's and this process's threads asleep): the reference for
             * a renewal is the same bare round trip and write, each sent on
             * a connection idle as long as the keeper's. */
            op_fn probe = NULL;
            double *into = NULL;
            if (probe_rt[k] != 0 && bench_mono_ns() >= probe_rt[k]) {
                probe = c->rt;
                probe_rt[k] = 0;
                into = nrt[k] < RENEWALS ? &irt[k][nrt[k]++] : NULL;
            } else if (probe_wr[k] != 0 && bench_mono_ns() >= probe_wr[k]) {
                probe = c->wr;
                probe_wr[k] = 0;
                into = nwr[k] < RENEWALS ? &iwr[k][nwr[k]++] : NULL;
            }
            if (probe != NULL) {
                int64_t t = bench_mono_ns();
                if (probe(c->st) != 0) {
                    bench_printf("%s: a bare round trip failed\n", c->scheme);
                    failed = 1;
                    break;
                }
                if (into != NULL)
                    *into = (double)(bench_mono_ns() - t) / 1e3;
                if (c->count_server)
                    base[k]++; /* the probe was one request, not the keeper's */
            }
            if (!lost[k] && idm_snowflake_next(g[k], &id) != 0)
                c->rn_refused++;
            done += (n[k] >= RENEWALS && (c->rt == NULL || nwr[k] >= RENEWALS)) || lost[k];
        }
        if (done == want)
            break;
        usleep(2000);
    }
    for (int k = 0; k < K_COUNT; k++) {
        coord *c = &g_c[k];
        if (l[k] != NULL) {
            idm_lease_status s;
            idm_lease_status_get(l[k], &s);
            if (s.failures > 0)
                bench_printf("%s: %" PRIu64 " renewal(s) failed, the last: %s\n", c->scheme,
                             s.failures, idm_strerror(s.last_error));
            int rc = idm_lease_close(l[k]);
            if (rc != 0)
                bench_printf("%s: idm_lease_close: %s (%s)\n", c->scheme, idm_strerror(rc),
                             idm_error_detail());
        }
        idm_snowflake_close(g[k]);
        if (!c->on || failed)
            continue;
        if (n[k] == 0) {
            bench_printf("%s: no renewal seen in the renewal round\n", c->scheme);
            failed = 1;
            continue;
        }
        c->rn_count += n[k];
        c->f_rn[r] = bench_median(v[k], n[k]);
        if (c->rt != NULL && (nrt[k] == 0 || nwr[k] == 0)) {
            bench_printf("%s: no idle round trip measured in the renewal round\n", c->scheme);
            failed = 1;
            continue;
        }
        if (c->rt != NULL) {
            c->f_irt[r] = bench_median(irt[k], nrt[k]);
            c->f_iwr[r] = bench_median(iwr[k], nwr[k]);
        }
    }
    return failed ? -1 : 0;
}

/* ---------------------------------------------------------------- output */

static double med(const double *v)
{
    double c[BENCH_ROUNDS_MAX];
    memcpy(c, v, sizeof c);
    return bench_median(c, g_rounds);
}

static double med_ratio(const double *a, const double *b)
{
    double c[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        c[r] = a[r] / b[r];
    return bench_median(c, g_rounds);
}

/* The median over the rounds of (a - s) / b. */
static double med_ratio_less(const double *a, const double *s, const double *b)
{
    double c[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        c[r] = (a[r] - s[r]) / b[r];
    return bench_median(c, g_rounds);
}

static void fmt_us(char *buf, size_t len, double us)
{
    if (us >= 1000)
        snprintf(buf, len, "%.2f ms", us / 1000);
    else
        snprintf(buf, len, "%.1f us", us);
}

static void spread(char *buf, size_t len, const double *v)
{
    double lo = v[0], hi = v[0];
    for (int r = 1; r < g_rounds; r++) {
        lo = v[r] < lo ? v[r] : lo;
        hi = v[r] > hi ? v[r] : hi;
    }
    if (hi >= 1000)
        snprintf(buf, len, "%.2f..%.2f ms", lo / 1000, hi / 1000);
    else
        snprintf(buf, len, "%.1f..%.1f us", lo, hi);
}

/* A row of this program's table: bench_row's columns and "counted", the
 * round trips the backend was seen to make. */
static void row(const char *item, const char *what, const char *figure, const char *counted,
                const char *ratio, const char *spr, const char *target, const char *status)
{
    bench_printf("%-4s %-40s %-10s %-7s %-42s %-18s %-8s %s\n", item, what, figure, counted,
                 ratio, spr, target, status);
}

static void row_fig(const char *item, const char *what, const double *v, const char *counted,
                    const char *ratio)
{
    char fig[32], spr[64];
    fmt_us(fig, sizeof fig, med(v));
    spread(spr, sizeof spr, v);
    row(item, what, fig, counted, ratio, spr, "", "");
}

static void fmt_count(char *buf, size_t len, const uint64_t mm[2])
{
    if (mm[0] == mm[1])
        snprintf(buf, len, "%" PRIu64, mm[0]);
    else
        snprintf(buf, len, "%" PRIu64 "-%" PRIu64, mm[0], mm[1]);
}

static void coord_rows(const coord *c)
{
    char item[8], what[96], rat[128], cnt[32] = "";
    static const char *const occ_what[2] = {"0 of 1024 held", "1000 of 1024 held"};
    if (!c->on) {
        bench_printf("%-4s %s rows: skipped: %s\n", c->letter, c->scheme, c->why);
        return;
    }
    if (c->rt != NULL) {
        snprintf(item, sizeof item, "%sRT", c->letter);
        snprintf(rat, sizeof rat, "the unit of the %s rows", c->letter);
        row_fig(item, c->rt_what, c->f_rt, "1", rat);
        snprintf(item, sizeof item, "%sWR", c->letter);
        snprintf(rat, sizeof rat, "%.2f RT", med_ratio(c->f_wr, c->f_rt));
        row_fig(item, c->wr_what, c->f_wr, "1", rat);
        snprintf(item, sizeof item, "%sCN", c->letter);
        snprintf(rat, sizeof rat, "%.2f RT", med_ratio(c->f_cn, c->f_rt));
        row_fig(item, c->cn_what, c->f_cn, "", rat);
    }
    if (c->rk != NULL) {
        snprintf(item, sizeof item, "%sRK", c->letter);
        snprintf(rat, sizeof rat, "%.2f RT", med_ratio(c->f_rk, c->f_rt));
        row_fig(item, c->rk_what, c->f_rk, "1", rat);
    }
    for (int occ = 0; occ < 2; occ++) {
        char fig[32], spr[64];
        snprintf(item, sizeof item, "%s%d", c->letter, occ);
        snprintf(what, sizeof what, "%s claim, %s", c->scheme, occ_what[occ]);
        fmt_us(fig, sizeof fig, med(c->f_claim[occ]));
        spread(spr, sizeof spr, c->f_claim[occ]);
        if (c->rt != NULL) {
            double rts = med_ratio(c->f_claim[occ], c->f_rt);
            if (c->count != NULL) {
                char n[24];
                fmt_count(n, sizeof n, c->n_claim[occ]);
                snprintf(cnt, sizeof cnt, "CN+%s", n);
            }
            snprintf(rat, sizeof rat, "%.2f RT (open %.2f; less %sCN %.2f)", rts,
                     med_ratio(c->f_open[occ], c->f_rt), c->letter,
                     med_ratio_less(c->f_claim[occ], c->f_cn, c->f_rt));
            row(item, what, fig, cnt, rat, spr, "<= 3 RT", rts <= 3.0 ? "PASS" : "BELOW");
        } else {
            snprintf(rat, sizeof rat, "open alone %.0f%%",
                     100.0 * med_ratio(c->f_open[occ], c->f_claim[occ]));
            row(item, what, fig, "", rat, spr, "", "");
        }
    }
    if (c->count != NULL) {
        /* The issue's target in its own unit: round trips counted, after
         * the connection setup (xCN), the same at both occupancies. */
        char a[24], b[24], fig[64];
        uint64_t most = c->n_claim[0][1] > c->n_claim[1][1] ? c->n_claim[0][1] : c->n_claim[1][1];
        fmt_count(a, sizeof a, c->n_claim[0]);
        fmt_count(b, sizeof b, c->n_claim[1]);
        snprintf(item, sizeof item, "%sN", c->letter);
        snprintf(what, sizeof what, "%s claim: round trips counted", c->scheme);
        snprintf(fig, sizeof fig, "%s | %s", a, b);
        snprintf(rat, sizeof rat, "0 | 1000 held, after %sCN; %d claims each", c->letter,
                 COUNT_CLAIMS);
        row(item, what, fig, "", rat, "", "<= 3", most <= 3 ? "PASS" : "BELOW");
    }
    if (c->rt != NULL) {
        snprintf(item, sizeof item, "%sIR", c->letter);
        snprintf(what, sizeof what, "%sRT, its connection idle >= %d ms", c->letter,
                 PROBE_WR_MS - PROBE_RT_MS);
        snprintf(rat, sizeof rat, "%.2f RT", med_ratio(c->f_irt, c->f_rt));
        row_fig(item, what, c->f_irt, "1", rat);
        snprintf(item, sizeof item, "%sIW", c->letter);
        snprintf(what, sizeof what, "%sWR, its connection idle >= %d ms", c->letter,
                 PROBE_WR_MS - PROBE_RT_MS);
        snprintf(rat, sizeof rat, "%.2f RT", med_ratio(c->f_iwr, c->f_rt));
        row_fig(item, what, c->f_iwr, "1", rat);
    }
    snprintf(item, sizeof item, "%sRN", c->letter);
    if (c->rt != NULL)
        snprintf(rat, sizeof rat, "%.2f RT = %.2f %sIR = %.2f %sIW (%d)",
                 med_ratio(c->f_rn, c->f_rt), med_ratio(c->f_rn, c->f_irt), c->letter,
                 med_ratio(c->f_rn, c->f_iwr), c->letter, c->rn_count);
    else
        snprintf(rat, sizeof rat, "%d renewals", c->rn_count);
    if (c->rn_refused > 0)
        snprintf(rat + strlen(rat), sizeof rat - strlen(rat), "; %d mints refused",
                 c->rn_refused);
    cnt[0] = '\0';
    if (c->count != NULL && c->rn_counted)
        fmt_count(cnt, sizeof cnt, c->n_rn);
    row_fig(item, c->rn_what, c->f_rn, cnt, rat);
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr,
            "usage: idm_bench_lease [--dir DIR] [--etcd HOST:PORT | --no-etcd REASON]\n"
            "         [--etcds HOST:PORT --etcds-cacert FILE [--etcds-cert FILE --etcds-key FILE]"
            " | --no-etcds REASON]\n"
            "         [--zk HOST:PORT[,HOST:PORT...] | --no-zk REASON]"
            " [--pg URL | --no-pg REASON]\n");
}

int main(int argc, char **argv)
{
    const char *base = NULL, *ep = NULL, *eps = NULL, *cacert = NULL, *cert = NULL,
               *key = NULL, *zk = NULL, *pg = NULL;
    const char *no[K_COUNT] = {NULL, "no --etcd given", "no --etcds given", "no --zk given",
                               "no --pg given"};
    /* Every option takes a value: where it goes. */
    const struct {
        const char *name;
        const char **to;
    } opts[] = {
        {"--dir", &base},
        {"--etcd", &ep},
        {"--no-etcd", &no[K_ETCD]},
        {"--etcds", &eps},
        {"--etcds-cacert", &cacert},
        {"--etcds-cert", &cert},
        {"--etcds-key", &key},
        {"--no-etcds", &no[K_ETCDS]},
        {"--zk", &zk},
        {"--no-zk", &no[K_ZK]},
        {"--pg", &pg},
        {"--no-pg", &no[K_PG]},
    };
    for (int i = 1; i < argc; i += 2) {
        size_t k = 0;
        while (k < sizeof opts / sizeof opts[0] && strcmp(argv[i], opts[k].name) != 0)
            k++;
        if (i + 1 >= argc || k == sizeof opts / sizeof opts[0]) {
            usage();
            return 1;
        }
        *opts[k].to = argv[i + 1];
    }
    if (eps != NULL && (cacert == NULL || (cert == NULL) != (key == NULL))) {
        fprintf(stderr, "idm_bench_lease: --etcds needs --etcds-cacert, and --etcds-cert and "
                        "--etcds-key together or neither\n");
        return 1;
    }
    if (base == NULL)
        base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    double secs = bench_seconds();
    g_rounds = bench_rounds();
    g_pid = (long)getpid();

    if (idm_layout_parse(&g_layout, LAYOUT, EPOCH) != 0 ||
        (g_worker_field = idm_layout_field_index(g_layout, "worker")) < 0) {
        fprintf(stderr, "idm_bench_lease: layout: %s\n", idm_error_detail());
        return 1;
    }
    g_buf = calloc(MAX_CLAIMS, sizeof *g_buf);
    g_obuf = calloc(MAX_CLAIMS, sizeof *g_obuf);
    if (g_buf == NULL || g_obuf == NULL)
        return 1;

    /* 1,000 file leases need 1,000 descriptors. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < HELD + 64 &&
        rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* The ZooKeeper client logs every connect and close at INFO. */
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    bench_printf("\nidmint %s lease benchmark: %d rounds, each claim measurement %.1f s of "
                 "wall time (at least %d claims),\nclaim = idm_lease_open .. first id of the "
                 "guarded generator after idm_lease_attach; renewal = renew_ns of\n"
                 "idm_lease_status (send to answer) with a %d ms TTL; figure = median of the "
                 "median round, ratio =\nmedian of the per-round ratios to the coordinator's RT, "
                 "spread = min..max of the figure\n", idm_version(), g_rounds, secs,
                 MIN_CLAIMS, RENEW_TTL_MS);
    bench_print_machine();

    static const coord proto[K_COUNT] = {
        {"F", "file://", "", "", "", "file://: renewal (the mark written)", .rt = NULL},
        {"E", "etcd://", "etcd: POST /v3/kv/range, missing key", "etcd: POST /v3/kv/put, one key",
         "etcd: TCP connect (libcurl)", "etcd: renewal (keepalive + mark txn)", .rt = etcd_rt,
         .wr = etcd_wr, .cn = etcd_cn, .count = etcd_count, .count_server = true, .rk = etcd_rk,
         .rk_what = "etcd: kv/range of the 1000 held keys"},
        {"T", "etcds://", "etcds: POST /v3/kv/range, missing key",
         "etcds: POST /v3/kv/put, one key", "etcds: TCP + TLS handshake (libcurl)",
         "etcds: renewal (keepalive + mark txn)", .rt = etcd_rt, .wr = etcd_wr, .cn = etcd_cn,
         .count = etcd_count, .count_server = true, .rk = etcd_rk,
         .rk_what = "etcds: kv/range of the 1000 held keys"},
        {"Z", "zk://", "zk: zoo_exists, missing node", "zk: zoo_set, one node",
         "zk: TCP + session handshake", "zk: renewal (multi: check + setData)", .rt = zk_rt,
         .wr = zk_wr, .cn = zk_cn, .count = zk_count},
        {"P", "postgres://", "postgres: SELECT 1", "postgres: UPDATE of one row",
         "postgres: TCP + startup + auth (libpq)", "postgres: renewal (one UPDATE)", .rt = pg_rt,
         .wr = pg_wr, .cn = pg_cn, .count = pg_count},
    };
    for (int k = 0; k < K_COUNT; k++)
        g_c[k] = proto[k];

    /* file:// coordinators: one empty, one with HELD ids held here. */
    int failed = 0;
    char dir[4096], d0[4200], d1[4200];
    snprintf(dir, sizeof dir, "%s/idm-bench-lease.XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "idm_bench_lease: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(d0, sizeof d0, "%s/empty", dir);
    snprintf(d1, sizeof d1, "%s/full", dir);
    mkdir(d0, 0700);
    mkdir(d1, 0700);
    coord *cf = &g_c[K_FILE];
    snprintf(cf->url[0], sizeof cf->url[0], "file://%.1000s", d0);
    snprintf(cf->url[1], sizeof cf->url[1], "file://%.1000s", d1);
    static idm_lease *hold[HELD];
    int nheld = 0;
    for (; nheld < HELD; nheld++) {
        idm_lease_opts lo;
        idm_lease_opts_init(&lo);
        lo.url = cf->url[1];
        lo.max_workers = MAX_WORKERS;
        int rc = idm_lease_open(&hold[nheld], &lo);
        if (rc != 0) {
            fprintf(stderr, "idm_bench_lease: holding file lease %d: %s (%s)\n", nheld,
                    idm_strerror(rc), idm_error_detail());
            failed = 1;
            break;
        }
        cf->held[1][idm_lease_worker(hold[nheld])] = true;
    }
    cf->on = !failed;

    /* The others, each set up or skipped with its reason. */
    static http he, hs;
    long long fill[2] = {0, 0};
    const char *given[K_COUNT] = {NULL, ep, eps, zk, pg};
    for (int k = K_ETCD; k < K_COUNT && !failed; k++) {
        coord *c = &g_c[k];
        int rc = -1;
        if (given[k] == NULL) {
            snprintf(c->why, sizeof c->why, "%s", no[k]);
            continue;
        }
        if (k == K_ETCD)
            rc = etcd_setup(c, &he, ep, NULL, NULL, NULL, &fill[0]);
        else if (k == K_ETCDS)
            rc = etcd_setup(c, &hs, eps, cacert, cert, key, &fill[1]);
        else if (k == K_ZK)
            rc = zk_setup(c, zk);
        else
            rc = pg_setup(c, pg);
        c->on = rc == 0;
        if (!c->on)
            bench_printf("%s rows: skipped: %s\n", c->scheme, c->why);
    }

    for (int r = 0; !failed && r < g_rounds; r++) {
        bench_printf("round %d of %d...\n", r + 1, g_rounds);
        for (int k = 0; k < K_COUNT && !failed; k++)
            if (g_c[k].on)
                failed = coord_round(&g_c[k], r, secs) != 0;
        if (!failed)
            failed = renew_round(r) != 0;
    }

    if (!failed) {
        char load[64];
        bench_printf("load average after the rounds: %s\n", bench_loadavg(load, sizeof load));
        bench_printf("workers claimed last (0 held, 1000 held):");
        for (int k = 0; k < K_COUNT; k++)
            if (g_c[k].on)
                bench_printf(" %s %u, %u;", g_c[k].scheme, g_c[k].last_worker[0],
                             g_c[k].last_worker[1]);
        bench_printf("\n");
        bench_printf("\nidmint leases: claim to first id, and renewal (xRT = one bare round "
                     "trip to that coordinator;\nless xCN: the claim without its connection "
                     "setup; BELOW never fails the run)\n");
        row("#", "what", "figure", "counted", "ratio (same round)", "spread", "target", "");
        for (int k = 0; k < K_COUNT; k++)
            coord_rows(&g_c[k]);
    }

    /* Clean up: the held leases, what the bench wrote to each coordinator,
     * the directories. */
    for (int i = 0; i < nheld; i++)
        idm_lease_close(hold[i]);
    http *hh[2] = {&he, &hs};
    for (int i = 0; i < 2; i++) {
        if (hh[i]->c == NULL)
            continue;
        if (fill[i] != 0) {
            char body[64];
            snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", fill[i]);
            http_call(hh[i], "/v3/lease/revoke", body);
        }
        etcd_cleanup(hh[i]);
        http_close(hh[i]);
    }
    zk_cleanup();
    pg_cleanup();
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "idm_bench_lease: could not remove %s\n", dir);
    idm_layout_free(g_layout);
    free(g_buf);
    free(g_obuf);
    curl_global_cleanup();

    if (failed)
        return 1;
    if (bench_wrong_count() != 0) {
        bench_printf("%u correctness check(s) failed (WRONG above): the figures above are not "
                     "valid\n", bench_wrong_count());
        return 2;
    }
    return 0;
}
