/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the etcd lease backend's answer handling (src/lease/etcd.c,
 * reached through its backend table, idm__lease_etcd, with the HTTP
 * transport replaced by a stand-in: etcd_internal.h). One backend life is played:
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
 * the range asked for, and must report a recorded scope only as printable
 * text that fits. And, checked against what went over the wire (the
 * requests and answers parsed here on their own, abort() on a violation):
 *
 *   - a mark it reports (the previous holder's, from the claim; a listed
 *     one) was in an answer: the one to the claiming txn, or to the list's
 *     ranges (0, "none", is always allowed);
 *   - marks never go down: every mark a request writes is at least the
 *     last one written, every write but the release's is a raise (a put
 *     only if the stored mark is LESS), and a claim or renewal that works
 *     read back, in the answer to its txn, a mark at least the one it
 *     asked for;
 *   - an HTTP error (4xx, 5xx) or a transport error on a step of the
 *     claim fails the claim, and one on a step of the renewal fails it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "../../src/lease/backend.h"
#include "../../src/lease/etcd_internal.h"

#define b64_str idm__etcd_b64_str
#define JSON_DEPTH IDM__ETCD_JSON_DEPTH
#define MAX_TTL_S IDM__ETCD_MAX_TTL_S

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX 4
#define FZ_H "{\"cluster_id\":\"7\",\"member_id\":\"1\",\"revision\":\"9\",\"raft_term\":\"2\"}"
#define FZ_SCOPE "worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657"

#define FZ_MARKS 64 /* marks kept from the answers of one phase */

/* The operation the requests belong to. */
enum { PH_CLAIM, PH_RENEW, PH_RELEASE, PH_LIST, PH_SCOPE, PH_NONE };

typedef struct fz {
    int call;            /* requests so far */
    int scope_mode;      /* 0: scope, none recorded; 1: scope, recorded; 2: no scope */
    int target;          /* the one that gets the input */
    long status;         /* its status; 0: a transport error */
    const uint8_t *body; /* its body */
    size_t len;
    /* what went over the wire */
    int phase;                 /* PH_*: the operation under way */
    int target_phase;          /* the phase the target request came in, PH_NONE if none */
    int64_t last_written;      /* the last mark a request wrote, -1 if none */
    int64_t read_back;         /* the largest mark in the answer to the last txn that
                                  raised a mark, -1 if it held none */
    int64_t raise_marks[FZ_MARKS]; /* the marks in that answer */
    size_t nraise;
    bool raise_full;           /* more marks than raise_marks holds: not checked */
    int64_t list_marks[FZ_MARKS];  /* the marks in the answers while listing */
    size_t nlist;
    bool list_full;            /* more marks than list_marks holds: not checked */
} fz;

static fz g_fz;

/* ----------------------------------------------- the wire, read on its own */

/* Standard base64 with padding, decoded without etcd.c's helpers (and
 * leniently: a superset of what etcd.c accepts); -1 if not base64. */
static int fz_b64(const char *in, size_t n, char *out, size_t cap, size_t *outlen)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    if (n % 4 != 0)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w = 0;
        int pad = 0;
        for (size_t k = 0; k < 4; k++) {
            const char *p = in[i + k] != '\0' ? strchr(abc, in[i + k]) : NULL;
            if (in[i + k] == '=' && i + 4 == n && k >= 2) {
                pad++;
                w <<= 6;
            } else if (p == NULL || pad > 0) {
                return -1;
            } else {
                w = w << 6 | (uint32_t)(p - abc);
            }
        }
        for (int k = 0; k < 3 - pad; k++) {
            if (o == cap)
                return -1;
            out[o++] = (char)(w >> (16 - 8 * k));
        }
    }
    *outlen = o;
    return 0;
}

/* A mark as etcd.c may read one: base64 of 1 to 19 decimal digits whose
 * value fits an int64. */
static bool fz_mark(const char *s, size_t n, int64_t *mark)
{
    char d[64];
    size_t len;
    int64_t m = 0;
    if (fz_b64(s, n, d, sizeof d, &len) != 0 || len == 0 || len > 19)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (d[i] < '0' || d[i] > '9' || m > (INT64_MAX - (d[i] - '0')) / 10)
            return false;
        m = m * 10 + (d[i] - '0');
    }
    *mark = m;
    return true;
}

/* Every mark in a JSON tree: each string that reads as one. */
static void fz_marks_in(json_object *o, int64_t *marks, size_t *n, bool *full)
{
    if (o == NULL)
        return;
    if (json_object_is_type(o, json_type_string)) {
        int64_t m;
        if (fz_mark(json_object_get_string(o), (size_t)json_object_get_string_len(o), &m)) {
            if (*n < FZ_MARKS)
                marks[(*n)++] = m;
            else
                *full = true;
        }
    } else if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            fz_marks_in(v, marks, n, full);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            fz_marks_in(json_object_array_get_idx(o, i), marks, n, full);
    }
}

/* An answer's text as JSON, as etcd.c's parser reads it (else as json-c
 * reads it by default; NULL if neither can). */
static json_object *fz_parse(const char *p, size_t n)
{
    json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
    json_object *o;
    if (tok == NULL || n > INT32_MAX || memchr(p, '\0', n) != NULL) {
        json_tokener_free(tok);
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, p, (int)n);
    if (o == NULL) {
        json_tokener_reset(tok);
        json_tokener_set_flags(tok, 0);
        o = json_tokener_parse_ex(tok, p, (int)n);
    }
    json_tokener_free(tok);
    return o;
}

/* The marks a request writes: the "value" beside a "key" that is a mark
 * key (<prefix>/hwm/<id>), anywhere in it (a raise names its mark in the
 * compare and in each put). */
static void fz_writes_in(json_object *o, const char (*hwm64)[64], int64_t *marks, size_t *n)
{
    json_object *k, *v;
    if (o == NULL)
        return;
    if (json_object_is_type(o, json_type_object)) {
        if (json_object_object_get_ex(o, "key", &k) && json_object_is_type(k, json_type_string) &&
            json_object_object_get_ex(o, "value", &v) && json_object_is_type(v, json_type_string)) {
            for (int id = 0; id < FZ_MAX; id++) {
                int64_t m;
                if (strcmp(json_object_get_string(k), hwm64[id]) != 0)
                    continue;
                if (!fz_mark(json_object_get_string(v), (size_t)json_object_get_string_len(v), &m))
                    abort(); /* a mark key written with no mark */
                if (*n == FZ_MARKS)
                    abort();
                marks[(*n)++] = m;
            }
        }
        json_object_object_foreach(o, kk, vv)
        {
            (void)kk;
            fz_writes_in(vv, hwm64, marks, n);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            fz_writes_in(json_object_array_get_idx(o, i), hwm64, marks, n);
    }
}

/* A request on its way out: the marks it writes go only up, and only by a
 * raise outside the release. Returns whether it writes one. */
static bool fz_request(const char *url, const char *body)
{
    char hwm64[FZ_MAX][64], key[32], raise[128];
    int64_t marks[FZ_MARKS];
    size_t n = 0;
    json_object *o;
    if (strstr(url, "/v3/kv/txn") == NULL)
        return false;
    for (int id = 0; id < FZ_MAX; id++) {
        snprintf(key, sizeof key, "/fz/hwm/%d", id);
        b64_str(key, hwm64[id]);
    }
    o = json_tokener_parse(body);
    if (o == NULL)
        abort(); /* etcd.c sent no JSON */
    fz_writes_in(o, (const char (*)[64])hwm64, marks, &n);
    json_object_put(o);
    for (size_t i = 0; i < n; i++) {
        if (marks[i] != marks[0] || marks[i] < g_fz.last_written)
            abort(); /* a mark written lower than an earlier one */
    }
    if (n > 0) {
        g_fz.last_written = marks[0];
        if (g_fz.phase != PH_RELEASE) {
            bool raised = false;
            for (int id = 0; id < FZ_MAX && !raised; id++) {
                snprintf(raise, sizeof raise,
                         "\"target\":\"VALUE\",\"result\":\"LESS\",\"key\":\"%s\"", hwm64[id]);
                raised = strstr(body, raise) != NULL;
            }
            if (!raised)
                abort(); /* a mark written without the raise's guard */
        }
    }
    return n > 0;
}

/* An answer on its way in: the marks in it, kept where a check needs them. */
static void fz_answer(const char *p, size_t n, bool raised)
{
    json_object *o = fz_parse(p, n);
    if (raised) {
        g_fz.nraise = 0;
        g_fz.raise_full = false;
        fz_marks_in(o, g_fz.raise_marks, &g_fz.nraise, &g_fz.raise_full);
        g_fz.read_back = -1;
        for (size_t i = 0; i < g_fz.nraise; i++)
            if (g_fz.raise_marks[i] > g_fz.read_back)
                g_fz.read_back = g_fz.raise_marks[i];
        if (g_fz.raise_full)
            g_fz.read_back = INT64_MAX; /* not all kept: not checked */
    }
    if (g_fz.phase == PH_LIST)
        fz_marks_in(o, g_fz.list_marks, &g_fz.nlist, &g_fz.list_full);
    json_object_put(o);
}

static bool fz_in(int64_t m, const int64_t *marks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (marks[i] == m)
            return true;
    return false;
}

static void deliver(void *be, const char *p, size_t n)
{
    /* two pieces, as a network would */
    size_t half = n / 2;
    if (half > 0)
        idm__etcd_on_data((char *)p, 1, half, be);
    if (n - half > 0)
        idm__etcd_on_data((char *)p + half, 1, n - half, be);
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

static int fz_post(void *e, const char *url, const char *body, long timeout_ms, long *status)
{
    char out[2048];
    bool raised = fz_request(url, body);
    (void)timeout_ms;
    if (g_fz.call++ != g_fz.target) {
        canned(url, body, out, sizeof out);
        deliver(e, out, strlen(out));
        fz_answer(out, strlen(out), raised);
        *status = 200;
        return 0;
    }
    g_fz.target_phase = g_fz.phase;
    if (g_fz.status == 0) {
        idm__etcd_transport_error(e, "connection refused");
        if (raised) {
            g_fz.read_back = -1; /* no answer: nothing read back */
            g_fz.nraise = 0;
            g_fz.raise_full = false;
        }
        return -1;
    }
    deliver(e, (const char *)g_fz.body, g_fz.len);
    fz_answer((const char *)g_fz.body, g_fz.len, raised);
    if (idm__etcd_overflowed(e))
        return -1;
    *status = g_fz.status;
    return 0;
}

/* The target request failed at the HTTP or transport level in phase. */
static bool fz_failed_in(int phase)
{
    return g_fz.target_phase == phase && (g_fz.status == 0 || g_fz.status >= 400);
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
    const idm__lease_backend *eb = &idm__lease_etcd;
    void *be = NULL;
    uint32_t worker = UINT32_MAX;
    idm_unix_ms prev = -1, recorded = -1;
    int64_t ttl = 0;
    idm_lease_entry *entries = NULL;
    size_t n = 0;
    int rc;

    if (size < 2)
        return 0;
    memset(&g_fz, 0, sizeof g_fz);
    g_fz.last_written = -1;
    g_fz.read_back = -1;
    g_fz.target_phase = PH_NONE;
    g_fz.target = data[0] % 10;
    g_fz.status = statuses[data[1] % 8];
    g_fz.scope_mode = (data[1] >> 3) % 3;
    g_fz.body = data + 2;
    g_fz.len = size - 2;

    memset(&o, 0, sizeof o);
    o.ttl_ms = 2000;
    if (eb->open(&be, "127.0.0.1:1/fz", &o) != 0)
        abort();
    idm__etcd_set_post(be, fz_post);
    g_fz.phase = PH_CLAIM;
    rc = eb->claim(be, FZ_MAX, 2000, "fuzz", g_fz.scope_mode == 2 ? NULL : FZ_SCOPE, 1000,
                  &worker, &prev, &recorded, &ttl);
    check_rc(rc);
    if (rc == 0 && fz_failed_in(PH_CLAIM))
        abort(); /* claimed through an error answer */
    if (rc == 0) {
        idm_unix_ms mark = 5000;
        /* id 0 is the only one the canned range leaves free; a fuzzed range
         * may say it is taken, but never hand out one beyond the range */
        if (worker >= FZ_MAX || recorded != 1000 || ttl <= 0 || ttl > MAX_TTL_S * 1000)
            abort();
        /* the previous mark: none, or one in the claiming txn's answer (the
         * canned 123, or a fuzzed one) */
        if (prev < 0 ||
            (prev != 0 && !g_fz.raise_full && !fz_in(prev, g_fz.raise_marks, g_fz.nraise)))
            abort();
        /* the first mark, 1000, read back recorded (or a higher one) */
        if (g_fz.read_back < recorded)
            abort();
        g_fz.phase = PH_RENEW;
        rc = eb->renew(be, mark, &ttl);
        check_rc(rc);
        if (rc == 0 && (ttl <= 0 || ttl > MAX_TTL_S * 1000))
            abort();
        if (rc == 0 && (fz_failed_in(PH_RENEW) || g_fz.read_back < mark))
            abort(); /* renewed through an error answer, or the mark not raised */
        g_fz.phase = PH_RELEASE;
        check_rc(eb->release(be, mark));
    }
    g_fz.phase = PH_LIST;
    check_rc(eb->list(be, FZ_MAX, &entries, &n));
    if (n > FZ_MAX)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (entries[i].worker >= FZ_MAX || entries[i].mark_ms < 0 ||
            memchr(entries[i].holder, '\0', sizeof entries[i].holder) == NULL)
            abort();
        /* a listed mark: none, or one in the list's answers */
        if (entries[i].mark_ms != 0 && !g_fz.list_full &&
            !fz_in(entries[i].mark_ms, g_fz.list_marks, g_fz.nlist))
            abort();
    }
    free(entries);
    g_fz.phase = PH_SCOPE;
    {
        char scope[IDM_LEASE_SCOPE_MAX];
        rc = eb->scope(be, scope, sizeof scope);
        check_rc(rc);
        if (memchr(scope, '\0', sizeof scope) == NULL)
            abort();
        for (const char *p = scope; *p != '\0'; p++)
            if (*p < ' ' || *p > '~')
                abort();
        if (rc != 0 && scope[0] != '\0')
            abort();
    }
    eb->close(be);
    return 0;
}
