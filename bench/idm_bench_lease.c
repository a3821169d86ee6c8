/* SPDX-License-Identifier: MIT */
/*
 * idm_bench_lease: what it costs to claim a worker id, from idm_lease_open
 * to the first id of a guarded generator fed by idm_lease_attach (the use
 * shown in lease.h), at two occupancies, with each coordinator:
 *
 *   L0  file://, 0 of 1,024 ids held
 *   L1  file://, 1,000 of 1,024 held (1,000 open leases in this process)
 *   L2  etcd://, 0 of 1,024 held
 *   L3  etcd://, 1,000 of 1,024 held (1,000 keys <prefix>/workers/<n> put
 *       here through the HTTP gateway, bound to one long etcd lease)
 *   RT  one bare HTTP round trip to the same etcd: POST /v3/kv/range on a
 *       missing key, libcurl reusing one connection (the unit of the ratios)
 *   WR  one bare write round trip: POST /v3/kv/put of one key (a raft
 *       commit, as the claim's grant and transactions are), for reference
 *
 * Each claim is followed (untimed) by idm_lease_close and
 * idm_snowflake_close. Rounds are interleaved: every round measures RT, then
 * L0..L3, each for IDM_BENCH_SECONDS of wall time (at least MIN_CLAIMS
 * claims); a round's figure is the median claim of that round. The table
 * gives the median over the rounds, the median of the per-round ratios to RT
 * ("N round trips' worth") and the spread. Target: at most 3 round trips at
 * any occupancy (BELOW never fails the run).
 *
 * Checks (a failure prints WRONG and makes the exit status 2): every claim
 * got a worker id that is not one of the held ones; the first id decodes to
 * the claimed worker id, and its time lies above the previous holder's mark.
 *
 * Usage: idm_bench_lease [--etcd HOST:PORT | --no-etcd REASON] [--dir DIR]
 *   --dir: where the file:// coordinators live (a fresh temporary directory
 *   under it; default $TMPDIR or /tmp).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>

#include "bench_util.h"

#define MAX_WORKERS 1024
#define HELD 1000
#define MIN_CLAIMS 20
#define MAX_CLAIMS 5000
#define RT_COUNT 200
#define LAYOUT "time:41@1ms,worker:10,seq:12"
#define EPOCH INT64_C(1288834974657)

enum { M_RT, M_WR, M_F0, M_F1, M_E0, M_E1, M_COUNT };

static double g_fig[M_COUNT][BENCH_ROUNDS_MAX];  /* median claim, us */
static double g_open[M_COUNT][BENCH_ROUNDS_MAX]; /* its idm_lease_open part */
static int g_rounds;
static idm_layout *g_layout;
static int g_worker_field;

/* ------------------------------------------------------------ etcd HTTP */

typedef struct http {
    CURL *c;
    struct curl_slist *h;
    char base[128];
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

static int http_open(http *h, const char *ep)
{
    memset(h, 0, sizeof *h);
    snprintf(h->base, sizeof h->base, "http://%s", ep);
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
    return 0;
}

static void http_close(http *h)
{
    if (h->c != NULL)
        curl_easy_cleanup(h->c);
    curl_slist_free_all(h->h);
    free(h->buf);
}

/* POST body to path; 0 on HTTP 200 (the answer in h->buf). */
static int http_post(http *h, const char *path, const char *body)
{
    char url[256];
    long status = 0;
    snprintf(url, sizeof url, "%s%s", h->base, path);
    h->len = 0;
    if (h->buf != NULL)
        h->buf[0] = '\0';
    curl_easy_setopt(h->c, CURLOPT_URL, url);
    curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    if (curl_easy_perform(h->c) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &status);
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
    if (http_post(h, "/v3/lease/grant", body) != 0)
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
        if (http_post(h, "/v3/kv/put", body) != 0)
            return -1;
    }
    return 0;
}

/* One bare round trip: a linearizable range on a key that does not exist. */
static int etcd_rt(http *h)
{
    return http_post(h, "/v3/kv/range",
                     "{\"key\":\"L2lkbWludC1iZW5jaC9ub25l\"}"); /* /idmint-bench/none */
}

/* One bare write: a put of one key (a raft write, as grant and txn are). */
static int etcd_wr(http *h, const char *key64)
{
    char body[512];
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"value\":\"eA==\"}", key64);
    return http_post(h, "/v3/kv/put", body);
}

/* ---------------------------------------------------------------- claims */

typedef struct target {
    const char *url;
    const bool *held; /* held[w]: w is taken by someone else */
    uint32_t last_worker;
} target;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One claim, timed: open .. first id. Returns 0, or an error (reported). */
static int one_claim(target *t, double *us, double *open_us)
{
    idm_lease_opts lo;
    idm_lease *l = NULL;
    idm_snowflake *g = NULL;
    idm_snowflake_opts so;
    uint64_t id = 0;
    int rc;

    idm_lease_opts_init(&lo);
    lo.url = t->url;
    lo.max_workers = MAX_WORKERS;
    int64_t t0 = bench_mono_ns();
    rc = idm_lease_open(&l, &lo);
    int64_t t1 = bench_mono_ns();
    if (rc != 0) {
        bench_printf("claim on %s failed: %s (%s)\n", t->url, idm_strerror(rc),
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
        bench_printf("claim on %s: worker %u: %s (%s)\n", t->url, (unsigned)w,
                     idm_strerror(rc), idm_error_detail());
        idm_lease_close(l);
        idm_snowflake_close(g);
        return rc;
    }
    *us = (double)(t2 - t0) / 1e3;
    *open_us = (double)(t1 - t0) / 1e3;

    /* Checks, untimed. */
    idm_decoded d;
    if (w >= MAX_WORKERS || t->held[w])
        bench_wrong("%s: claimed worker id %u, which is held", t->url, (unsigned)w);
    if (idm_layout_decode(g_layout, id, &d) != 0)
        bench_wrong("%s: the first id %" PRIu64 " does not decode", t->url, id);
    else if (d.value[g_worker_field] != w)
        bench_wrong("%s: the first id %" PRIu64 " holds worker %" PRIu64
                    ", the claim was %u", t->url, id, d.value[g_worker_field],
                    (unsigned)w);
    else if (mark > 0 && d.unix_ms <= mark)
        bench_wrong("%s: the first id's time %lld is not above the previous "
                    "holder's mark %lld", t->url, (long long)d.unix_ms,
                    (long long)mark);
    t->last_worker = w;
    rc = idm_lease_close(l);
    if (rc != 0)
        bench_printf("%s: idm_lease_close: %s (%s)\n", t->url, idm_strerror(rc),
                     idm_error_detail());
    idm_snowflake_close(g);
    return 0;
}

static double *g_buf, *g_obuf;

/* Claims for secs of wall time (MIN_CLAIMS..MAX_CLAIMS); median into fig. */
static int measure(target *t, double secs, double *fig, double *open_fig)
{
    int n = 0;
    int64_t end = bench_mono_ns() + (int64_t)(secs * 1e9);
    while (n < MAX_CLAIMS && (n < MIN_CLAIMS || bench_mono_ns() < end)) {
        if (one_claim(t, &g_buf[n], &g_obuf[n]) != 0)
            return -1;
        n++;
    }
    qsort(g_obuf, (size_t)n, sizeof *g_obuf, cmp_d);
    *fig = bench_median(g_buf, n);
    *open_fig = g_obuf[n / 2];
    return 0;
}

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

static void claim_row(const char *item, const char *what, int m, bool etcd_ok)
{
    char fig[32], rat[96], spr[64];
    fmt_us(fig, sizeof fig, med(g_fig[m]));
    spread(spr, sizeof spr, g_fig[m]);
    if (etcd_ok) {
        double rts = med_ratio(g_fig[m], g_fig[M_RT]);
        snprintf(rat, sizeof rat, "%.2f RT = %.2f WR (open %.2f RT)", rts,
                 med_ratio(g_fig[m], g_fig[M_WR]), med_ratio(g_open[m], g_fig[M_RT]));
        bench_row(item, what, fig, rat, spr, "<= 3 RT", rts <= 3.0 ? "PASS" : "BELOW");
    } else {
        snprintf(rat, sizeof rat, "open alone %.0f%%",
                 100.0 * med_ratio(g_open[m], g_fig[m]));
        bench_row(item, what, fig, rat, spr, "", "");
    }
}

int main(int argc, char **argv)
{
    const char *ep = NULL, *no_etcd = "no --etcd given", *base = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--etcd") == 0 && i + 1 < argc)
            ep = argv[++i];
        else if (strcmp(argv[i], "--no-etcd") == 0 && i + 1 < argc)
            no_etcd = argv[++i];
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            base = argv[++i];
        else {
            fprintf(stderr, "usage: idm_bench_lease [--etcd HOST:PORT | "
                            "--no-etcd REASON] [--dir DIR]\n");
            return 1;
        }
    }
    if (base == NULL)
        base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    double secs = bench_seconds();
    g_rounds = bench_rounds();

    if (idm_layout_parse(&g_layout, LAYOUT, EPOCH) != 0 ||
        (g_worker_field = idm_layout_field_index(g_layout, "worker")) < 0) {
        fprintf(stderr, "idm_bench_lease: layout: %s\n", idm_error_detail());
        return 1;
    }
    g_buf = calloc(MAX_CLAIMS, sizeof *g_buf);
    g_obuf = calloc(MAX_CLAIMS, sizeof *g_obuf);
    static bool none_held[MAX_WORKERS], held[MAX_WORKERS];
    if (g_buf == NULL || g_obuf == NULL)
        return 1;

    /* 1,000 file leases need 1,000 descriptors. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < HELD + 64 &&
        rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    bench_printf("\nidmint %s lease claim benchmark: %d rounds, each "
                 "measurement %.1f s of wall time (at least %d claims),\n"
                 "claim = idm_lease_open .. first id of the guarded generator "
                 "after idm_lease_attach; figure = median\nclaim of the median "
                 "round, ratio = median of the per-round ratios to RT, spread "
                 "= min..max of the figure\n", idm_version(), g_rounds, secs,
                 MIN_CLAIMS);
    bench_print_machine();

    /* file:// coordinators: one empty, one with HELD ids held here. */
    char dir[4096], d0[4200], d1[4200], u0[4300], u1[4300];
    snprintf(dir, sizeof dir, "%s/idm-bench-lease.XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "idm_bench_lease: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(d0, sizeof d0, "%s/empty", dir);
    snprintf(d1, sizeof d1, "%s/full", dir);
    mkdir(d0, 0700);
    mkdir(d1, 0700);
    snprintf(u0, sizeof u0, "file://%s", d0);
    snprintf(u1, sizeof u1, "file://%s", d1);
    static idm_lease *hold[HELD];
    int nheld = 0, failed = 0;
    for (; nheld < HELD; nheld++) {
        idm_lease_opts lo;
        idm_lease_opts_init(&lo);
        lo.url = u1;
        lo.max_workers = MAX_WORKERS;
        int rc = idm_lease_open(&hold[nheld], &lo);
        if (rc != 0) {
            fprintf(stderr, "idm_bench_lease: holding file lease %d: %s (%s)\n",
                    nheld, idm_strerror(rc), idm_error_detail());
            failed = 1;
            break;
        }
        held[idm_lease_worker(hold[nheld])] = true;
    }

    /* etcd: one prefix empty, one with HELD keys bound to one long lease. */
    http h = {0};
    bool etcd_ok = false;
    char why[256] = "";
    char pfx0[64], pfx1[64], e0[320], e1[320];
    static bool eheld[MAX_WORKERS];
    char wkey[80], wkey64[128];
    long long fill_lease = 0;
    if (!failed && ep != NULL) {
        snprintf(pfx0, sizeof pfx0, "/idmint-bench/%ld/empty", (long)getpid());
        snprintf(pfx1, sizeof pfx1, "/idmint-bench/%ld/full", (long)getpid());
        snprintf(e0, sizeof e0, "etcd://%s%s", ep, pfx0);
        snprintf(e1, sizeof e1, "etcd://%s%s", ep, pfx1);
        snprintf(wkey, sizeof wkey, "/idmint-bench/%ld/write", (long)getpid());
        b64(wkey, wkey64);
        curl_global_init(CURL_GLOBAL_DEFAULT);
        if (http_open(&h, ep) != 0)
            snprintf(why, sizeof why, "libcurl did not start");
        else if ((fill_lease = etcd_grant(&h, 3600)) == 0)
            snprintf(why, sizeof why, "POST %s/v3/lease/grant failed", ep);
        else if (etcd_fill(&h, pfx1, HELD, fill_lease) != 0)
            snprintf(why, sizeof why, "POST %s/v3/kv/put failed", ep);
        else if (etcd_rt(&h) != 0)
            snprintf(why, sizeof why, "POST %s/v3/kv/range failed", ep);
        else if (etcd_wr(&h, wkey64) != 0)
            snprintf(why, sizeof why, "POST %s/v3/kv/put failed", ep);
        else
            etcd_ok = true;
        for (int w = 0; w < HELD; w++)
            eheld[w] = true;
        if (!etcd_ok)
            bench_printf("etcd rows: skipped: %s\n", why);
    } else if (ep == NULL) {
        snprintf(why, sizeof why, "%s", no_etcd);
        bench_printf("etcd rows: skipped: %s\n", why);
    }

    target tf0 = {u0, none_held, 0}, tf1 = {u1, held, 0};
    target te0 = {e0, none_held, 0}, te1 = {e1, eheld, 0};
    for (int r = 0; !failed && r < g_rounds; r++) {
        bench_printf("round %d of %d...\n", r + 1, g_rounds);
        if (etcd_ok) {
            /* warm the connection, then RT_COUNT round trips */
            double rt[RT_COUNT];
            etcd_rt(&h);
            for (int i = 0; i < RT_COUNT && !failed; i++) {
                int64_t t0 = bench_mono_ns();
                if (etcd_rt(&h) != 0) {
                    bench_printf("etcd round trip failed\n");
                    failed = 1;
                }
                rt[i] = (double)(bench_mono_ns() - t0) / 1e3;
            }
            g_fig[M_RT][r] = bench_median(rt, RT_COUNT);
            for (int i = 0; i < RT_COUNT && !failed; i++) {
                int64_t t0 = bench_mono_ns();
                if (etcd_wr(&h, wkey64) != 0) {
                    bench_printf("etcd write round trip failed\n");
                    failed = 1;
                }
                rt[i] = (double)(bench_mono_ns() - t0) / 1e3;
            }
            g_fig[M_WR][r] = bench_median(rt, RT_COUNT);
        }
        failed |= measure(&tf0, secs, &g_fig[M_F0][r], &g_open[M_F0][r]) != 0;
        failed |= !failed && measure(&tf1, secs, &g_fig[M_F1][r], &g_open[M_F1][r]) != 0;
        if (etcd_ok) {
            failed |= !failed && measure(&te0, secs, &g_fig[M_E0][r], &g_open[M_E0][r]) != 0;
            failed |= !failed && measure(&te1, secs, &g_fig[M_E1][r], &g_open[M_E1][r]) != 0;
        }
    }

    if (!failed) {
        char load[64], fig[32], spr[64];
        bench_printf("load average after the rounds: %s\n",
                     bench_loadavg(load, sizeof load));
        bench_printf("workers claimed last: file %u and %u, etcd %u and %u "
                     "(held: %d of %d)\n", tf0.last_worker, tf1.last_worker,
                     te0.last_worker, te1.last_worker, HELD, MAX_WORKERS);
        bench_table_header("idmint leases: claim to first id (RT = one bare "
                           "etcd HTTP round trip; BELOW never fails the run)");
        if (etcd_ok) {
            fmt_us(fig, sizeof fig, med(g_fig[M_RT]));
            spread(spr, sizeof spr, g_fig[M_RT]);
            bench_row("RT", "etcd POST /v3/kv/range, missing key", fig,
                      "the unit of the rows below", spr, "", "");
            fmt_us(fig, sizeof fig, med(g_fig[M_WR]));
            spread(spr, sizeof spr, g_fig[M_WR]);
            char rat[96];
            snprintf(rat, sizeof rat, "%.2f RT", med_ratio(g_fig[M_WR], g_fig[M_RT]));
            bench_row("WR", "etcd POST /v3/kv/put, one key", fig, rat, spr, "", "");
        } else {
            bench_row("RT", "etcd POST /v3/kv/range, missing key", "skipped",
                      why, "", "", "");
            bench_row("WR", "etcd POST /v3/kv/put, one key", "skipped", why, "",
                      "", "");
        }
        claim_row("L0", "file://, 0 of 1024 held", M_F0, etcd_ok);
        claim_row("L1", "file://, 1000 of 1024 held", M_F1, etcd_ok);
        if (etcd_ok) {
            claim_row("L2", "etcd://, 0 of 1024 held", M_E0, true);
            claim_row("L3", "etcd://, 1000 of 1024 held", M_E1, true);
        } else {
            bench_row("L2", "etcd://, 0 of 1024 held", "skipped", why, "", "", "");
            bench_row("L3", "etcd://, 1000 of 1024 held", "skipped", why, "", "", "");
        }
    }

    /* Clean up: the held leases, the etcd keys, the directories. */
    for (int i = 0; i < nheld; i++)
        idm_lease_close(hold[i]);
    if (fill_lease != 0) {
        char body[64];
        snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", fill_lease);
        http_post(&h, "/v3/lease/revoke", body);
    }
    if (etcd_ok) {
        char body[256];
        snprintf(body, sizeof body, "{\"key\":\"%s\"}", wkey64);
        http_post(&h, "/v3/kv/deleterange", body);
    }
    if (h.c != NULL)
        http_close(&h);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "idm_bench_lease: could not remove %s\n", dir);
    idm_layout_free(g_layout);
    free(g_buf);
    free(g_obuf);

    if (failed)
        return 1;
    if (bench_wrong_count() != 0) {
        bench_printf("%u correctness check(s) failed (WRONG above): the "
                     "figures above are not valid\n", bench_wrong_count());
        return 2;
    }
    return 0;
}
