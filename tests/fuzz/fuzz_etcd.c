/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the etcd lease backend's answer handling (src/lease/etcd.c,
 * compiled into this file so that its static functions are reachable, with
 * the HTTP transport replaced by a stand-in). One backend life is played:
 * claim (the txn that reads the taken ids and records or reads the scope,
 * grant, the claiming txn), renew (keepalive, raising txn), release (final
 * txn, revoke), then list (two ranges), then the recorded scope (a range).
 * Every request gets a well-formed answer from an etcd that behaves, except
 * one: the input's first byte picks which (mod 10, in that order), the
 * second its HTTP status (bits 0-2, or a transport error) and the claimant
 * (bits 3-4: with a scope that etcd records now, with one it had recorded,
 * without one), the rest is its body, delivered in two pieces. Whatever the
 * answer, the backend must not crash, leak or read out of bounds, must fail
 * with an error it documents and a detail, must never claim an id outside
 * the range asked for, must never report a mark that was not in an answer,
 * and must report a recorded scope only as printable text that fits.
 */
#include "../../src/lease/etcd.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX 4
#define FZ_H "{\"cluster_id\":\"7\",\"member_id\":\"1\",\"revision\":\"9\",\"raft_term\":\"2\"}"
#define FZ_SCOPE "worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657"

typedef struct fz {
    int call;            /* requests so far */
    int scope_mode;      /* 0: scope, none recorded; 1: scope, recorded; 2: no scope */
    int target;          /* the one that gets the input */
    long status;         /* its status; 0: a transport error */
    const uint8_t *body; /* its body */
    size_t len;
} fz;

static fz g_fz;

static void deliver(etcd_be *e, const char *p, size_t n)
{
    /* two pieces, as a network would */
    size_t half = n / 2;
    if (half > 0)
        on_data((char *)p, 1, half, e);
    if (n - half > 0)
        on_data((char *)p + half, 1, n - half, e);
}

/* The answer a well-behaved etcd would give to this request. */
static void canned(const char *url, const char *body, char *out, size_t cap)
{
    char hwm64[64], key64[64], scope64[4 * sizeof FZ_SCOPE / 3 + 8];
    b64_str("/fz/hwm/0", hwm64);
    b64_str("/fz/scope", key64);
    b64_str(FZ_SCOPE, scope64);
    if (strstr(url, "/v3/kv/txn") != NULL && strstr(body, "range_end") != NULL) {
        /* the claim's first txn: no id taken; the scope created or read */
        if (strstr(body, "\"CREATE\"") == NULL)
            snprintf(out, cap,
                     "{\"header\":" FZ_H ",\"succeeded\":true,\"responses\":[{\"response_range\":{"
                     "\"header\":{\"revision\":\"9\"}}}]}");
        else if (g_fz.scope_mode == 0)
            snprintf(out, cap,
                     "{\"header\":" FZ_H ",\"succeeded\":true,\"responses\":[{\"response_put\":{"
                     "\"header\":{\"revision\":\"9\"}}},{\"response_range\":{}}]}");
        else
            snprintf(out, cap,
                     "{\"header\":" FZ_H ",\"responses\":[{\"response_range\":{\"kvs\":[{\"key\":"
                     "\"%s\",\"value\":\"%s\"}],\"count\":\"1\"}},{\"response_range\":{}}]}",
                     key64, scope64);
    } else if (strstr(url, "/v3/kv/range") != NULL && strstr(body, "range_end") == NULL) {
        /* the recorded scope */
        snprintf(out, cap,
                 "{\"header\":" FZ_H ",\"kvs\":[{\"key\":\"%s\",\"value\":\"%s\"}],"
                 "\"count\":\"1\"}",
                 key64, scope64);
    } else if (strstr(url, "/v3/lease/grant") != NULL)
        snprintf(out, cap, "{\"header\":" FZ_H ",\"ID\":\"42\",\"TTL\":\"2\"}");
    else if (strstr(url, "/v3/lease/keepalive") != NULL)
        snprintf(out, cap, "{\"result\":{\"header\":" FZ_H ",\"ID\":\"42\",\"TTL\":\"2\"}}\n");
    else if (strstr(url, "/v3/kv/txn") != NULL && strstr(body, "\"CREATE\"") != NULL)
        snprintf(out, cap,
                 "{\"header\":" FZ_H ",\"succeeded\":true,\"responses\":[{\"response_range\":{"
                 "\"kvs\":[{\"key\":\"%s\",\"value\":\"MDAwMDAwMDAwMDAwMDEyMw==\"}]}},"
                 "{\"response_put\":{}},{\"response_txn\":{}},{\"response_range\":{\"kvs\":[{"
                 "\"key\":\"%s\",\"value\":\"OTk5OTk5OTk5OTk5OTk5OQ==\"}]}}]}",
                 hwm64, hwm64);
    else if (strstr(url, "/v3/kv/txn") != NULL && strstr(body, "request_txn") != NULL)
        snprintf(out, cap,
                 "{\"header\":" FZ_H ",\"succeeded\":true,\"responses\":[{\"response_txn\":{}},"
                 "{\"response_range\":{\"kvs\":[{\"key\":\"%s\",\"value\":"
                 "\"OTk5OTk5OTk5OTk5OTk5OQ==\"}]}}]}",
                 hwm64);
    else if (strstr(url, "/v3/kv/txn") != NULL)
        snprintf(out, cap, "{\"header\":" FZ_H ",\"succeeded\":true}");
    else
        snprintf(out, cap, "{\"header\":" FZ_H "}"); /* range (empty), revoke */
}

static int fz_post(etcd_be *e, const char *url, const char *body, long timeout_ms, long *status)
{
    char out[2048];
    (void)timeout_ms;
    if (g_fz.call++ != g_fz.target) {
        canned(url, body, out, sizeof out);
        deliver(e, out, strlen(out));
        *status = 200;
        return 0;
    }
    if (g_fz.status == 0) {
        snprintf(e->errbuf, sizeof e->errbuf, "connection refused");
        return -1;
    }
    deliver(e, (const char *)g_fz.body, g_fz.len);
    if (e->overflow)
        return -1;
    *status = g_fz.status;
    return 0;
}

static void check_rc(int rc)
{
    if (rc == 0)
        return;
    if (rc != IDM_EIO && rc != IDM_ELEASE && rc != IDM_EBUSY && rc != IDM_EINVAL &&
        rc != IDM_ENOMEM)
        abort();
    if (idm_error_detail()[0] == '\0')
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long statuses[] = {200, 200, 200, 200, 500, 503, 404, 0};
    idm_lease_opts o;
    void *be = NULL;
    etcd_be *e;
    uint32_t worker = UINT32_MAX;
    idm_unix_ms prev = -1, recorded = -1;
    int64_t ttl = 0;
    idm_lease_entry *entries = NULL;
    size_t n = 0;
    int rc;

    if (size < 2)
        return 0;
    memset(&g_fz, 0, sizeof g_fz);
    g_fz.target = data[0] % 10;
    g_fz.status = statuses[data[1] % 8];
    g_fz.scope_mode = (data[1] >> 3) % 3;
    g_fz.body = data + 2;
    g_fz.len = size - 2;

    memset(&o, 0, sizeof o);
    o.ttl_ms = 2000;
    if (eb_open(&be, "127.0.0.1:1/fz", &o) != 0)
        abort();
    e = be;
    e->post = fz_post;
    rc = eb_claim(be, FZ_MAX, 2000, "fuzz", g_fz.scope_mode == 2 ? NULL : FZ_SCOPE, 1000,
                  &worker, &prev, &recorded, &ttl);
    check_rc(rc);
    if (rc == 0) {
        idm_unix_ms mark = 5000;
        /* id 0 is the only one the canned range leaves free; a fuzzed range
         * may say it is taken, but never hand out one beyond the range */
        if (worker >= FZ_MAX || recorded != 1000 || ttl <= 0 || ttl > MAX_TTL_S * 1000)
            abort();
        /* a mark from an answer: the canned 123, or a fuzzed decimal */
        if (prev < 0)
            abort();
        rc = eb_renew(be, mark, &ttl);
        check_rc(rc);
        if (rc == 0 && (ttl <= 0 || ttl > MAX_TTL_S * 1000))
            abort();
        check_rc(eb_release(be, mark));
    }
    check_rc(eb_list(be, FZ_MAX, &entries, &n));
    if (n > FZ_MAX)
        abort();
    for (size_t i = 0; i < n; i++)
        if (entries[i].worker >= FZ_MAX || entries[i].mark_ms < 0 ||
            memchr(entries[i].holder, '\0', sizeof entries[i].holder) == NULL)
            abort();
    free(entries);
    {
        char scope[IDM_LEASE_SCOPE_MAX];
        rc = eb_scope(be, scope, sizeof scope);
        check_rc(rc);
        if (memchr(scope, '\0', sizeof scope) == NULL)
            abort();
        for (const char *p = scope; *p != '\0'; p++)
            if (*p < ' ' || *p > '~')
                abort();
        if (rc != 0 && scope[0] != '\0')
            abort();
    }
    eb_close(be);
    return 0;
}
