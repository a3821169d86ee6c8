/* SPDX-License-Identifier: MIT */
/*
 * The etcd lease backend (etcd://host:port[,host:port...]/prefix): worker id
 * N is the key <prefix>/workers/N, bound to an etcd lease that the keeper
 * keeps alive; etcd deletes the key when the lease expires or is revoked, so
 * a dead holder frees its id after its TTL. Each id's high-water mark lives
 * in <prefix>/hwm/N (decimal Unix ms, bound to no lease), so it outlives the
 * claim and passes to the next holder.
 *
 * It speaks etcd v3's HTTP/JSON gateway (POST /v3/...) with one libcurl easy
 * handle per backend, used by one thread at a time, and parses answers with
 * json-c, strictly: one JSON object and nothing after it, no duplicate keys,
 * at most 1 MiB; 64-bit integers only as JSON strings, converted with
 * overflow checks (lease ids exceed 2^53 and never go through a double); a
 * field left out means zero or false, as the gateway omits default values.
 *
 *   claim    one kv/txn that ranges <prefix>/workers/ (keys only) for the
 *            ids taken and, for a claimant with a scope, creates
 *            <prefix>/scope (no lease) holding it if that key was never
 *            created, else reads it: a recorded scope that differs refuses
 *            the claim here, before any lease exists, as does "no free
 *            worker id". Then lease/grant (etcd may raise the TTL: the
 *            granted one is used), then for each free id in order one
 *            kv/txn: if the key was never created (and the scope key still
 *            holds our scope), read the id's mark, put the key bound to the
 *            lease and raise the mark to the claim's own first mark, in the
 *            same txn; else (a race lost) the next free id. The claim is the
 *            first renewal too: three round trips from start to the first id
 *            when no race is lost, at any occupancy below 2,048 ids taken
 *            (each further 2,048 add a kv/range page).
 *   renew    lease/keepalive (no TTL in the answer: the lease is gone), then
 *            a kv/txn that raises the mark only if the worker key is still
 *            bound to our lease and was last written by our claim or resume
 *            (its mod revision: the generation). Deleted, re-bound or written
 *            since (a copy of our handle resumed elsewhere): the claim is
 *            gone. Two round trips.
 *   release  the same guarded txn setting the exact final mark (it may be
 *            lower: the generator has stopped), then lease/revoke: the id is
 *            free at once.
 *   reattach (a restarted holder resuming its claim, from its handle
 *            "etcd:lease=HEX,rev=N,cluster=N") lease/grant of a new lease,
 *            then one kv/txn that compares the worker key's lease and mod
 *            revision with the saved ones (and the scope with ours,
 *            recording it if none is), puts the key again bound to the new
 *            lease and raises the mark, reading it back. Two round trips,
 *            no wait for the old mark. A saved claim resumes once: the key
 *            now has another lease and revision, so the same handle again,
 *            or a holder still renewing under the saved lease, is told the
 *            claim is gone. The key deleted, bound to another lease or
 *            written since, or another cluster answering: IDM_ELEASE, the
 *            new lease revoked (a third round trip).
 *
 * Marks are stored as 16 zero-padded decimal digits of Unix ms, so that
 * etcd's bytewise comparison orders them as numbers, and every write but the
 * release's is a raise: put only if the stored mark is smaller (or absent),
 * then read it back in the same txn. A write applied late (its answer lost,
 * the next one already through) can therefore never lower a mark that the
 * generator is minting under.
 *
 * Every answer's header carries the cluster id; one that differs from the
 * first answer's means another cluster answered (re-created with a wiped
 * data directory, or a misrouted endpoint): the claim is lost and nothing
 * more is sent. A transport error (no connection, timeout) moves to the next
 * endpoint, as does "unavailable" (no leader); the one that answered is used
 * first from then on. Transport errors, 5xx, timeouts and malformed answers
 * are IDM_EIO ("unknown, try again"); only etcd saying the lease or key is
 * gone is IDM_ELEASE. Each request times out after TTL/6 (at most 5 s) and
 * each operation has a budget (renew and release TTL/3, claim 2/3 TTL) on
 * CLOCK_MONOTONIC, whatever clock the lease is given: network time is real.
 *
 * etcds://host:port[,...]/prefix[?cacert=F&cert=F&key=F&user=U&password-file=F]
 * is the same over HTTPS: the server's certificate always verified (its CA:
 * cacert's alone if given, else the system's; and the host name or IP
 * address), a client certificate if cert and key are given, and a handle
 * that speaks HTTPS only, so nothing ever falls back to plain HTTP. Options
 * are checked at open (files regular and readable, pairs complete, none
 * unknown or twice) and shown by name only, never by value. With user and
 * password-file, etcd authentication: the first request of a handle is
 * preceded by /v3/auth/authenticate (one more round trip), the token goes
 * in the Authorization header of every request after it, and when etcd
 * refuses it (3.4's answers: 401 "invalid auth token" when it expired,
 * "revision of auth store is old" after a change of users or roles, "user
 * name is empty" when none was sent) it is made anew and the refused
 * request sent once more: etcd checks the token before it applies
 * anything, so the request was not applied. The password is read from its
 * file for each authentication (a rotated file is picked up) and wiped
 * from memory with the request that carried it; neither it nor the token is
 * ever part of a detail. A wrong password, and a user without permission on
 * the prefix, fail with a detail naming the user and the cause (IDM_EIO, as
 * every answer from etcd that is not "the claim is gone").
 *
 * The claim's fencing token (generation) is the worker key's mod revision
 * as of the claim or the resume: the revision of the txn that created it,
 * then of each resume's txn that put it again. It rises at every claim of
 * the id and at every resume, and the renewals' and the release's writes
 * are guarded on it.
 *
 * What it does not do: HTTP proxies (none is used, whatever the
 * environment says), or watches (a deleted key is noticed at the next
 * renewal).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "backend.h"
#include "common.h"
#include "etcd_internal.h"
#include "lease_internal.h"

#define MAX_ENDPOINTS 16
#define MAX_HOST 256
#define MAX_PREFIX 256
#define MAX_BODY (1024 * 1024) /* largest answer accepted */
#define MAX_KEY 1024           /* largest key decoded */
#define RANGE_PAGE 2048        /* keys per range request */
#define CLAIM_PASSES 3         /* re-reads of the taken ids after lost races */
#define MARK_DIGITS 16          /* stored marks: zero-padded to this many digits */
#define MARK_MAX INT64_C(9999999999999999)
#define GRPC_NOT_FOUND 5
#define GRPC_UNAVAILABLE 14

typedef struct etcd_be {
    char *eps[MAX_ENDPOINTS]; /* "host:port" */
    size_t neps;
    size_t cur;               /* the endpoint tried first */
    char prefix[MAX_PREFIX + 1];
    CURL *curl;
    struct curl_slist *hdrs;
    char errbuf[CURL_ERROR_SIZE];
    int64_t ttl_ms;           /* for timeouts */
    int64_t deadline_ns;      /* the current operation's budget */
    /* the last answer */
    char *buf;
    size_t len, cap;
    bool overflow;
    int grpc_code;            /* of the last error answer, 0 if none */
    const char *ep;           /* endpoint of the last answer */
    /* the cluster */
    uint64_t cluster_id;
    bool have_cluster;
    bool foreign;             /* another cluster answered: send nothing more */
    idm__etcd_post_fn post;   /* libcurl, or a fuzz target's (etcd_internal.h) */
    /* etcds:// (tls): the files its options name, NULL if not given */
    bool tls;
    char *cacert, *cert, *key;
    /* authentication (user and pwfile both set, or neither): the token
     * from /v3/auth/authenticate (NULL until needed; dropped when etcd
     * refuses it), the headers that carry it */
    char *user, *pwfile;
    char *token;
    struct curl_slist *auth_hdrs;
    bool auth_off;            /* etcd said authentication is not enabled */
    /* the claim */
    bool held;
    int64_t lease_id;
    uint32_t worker;
    uint64_t generation;      /* the worker key's mod revision as of our claim or resume */
    /* the scope: <prefix>/scope, and the claimant's (has_scope) */
    char scope_key[MAX_PREFIX + 8];
    char scope_key64[4 * (MAX_PREFIX + 8) / 3 + 8];
    bool has_scope;
    char scope[IDM_LEASE_SCOPE_MAX];
    char scope64[4 * IDM_LEASE_SCOPE_MAX / 3 + 8];
    char where[MAX_HOST + MAX_PREFIX + 16]; /* etcd[s]://host:port[,...]/prefix, for details */
} etcd_be;

/* ---------------------------------------------------------------- helpers */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void begin_op(etcd_be *e, int64_t budget_ms)
{
    e->deadline_ns = idm__mono_ns() + budget_ms * 1000000;
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with padding; out must hold 4 * ((n + 2) / 3) + 1. */
static void b64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t i, o = 0;
    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = b64_alphabet[(v >> 6) & 63];
        out[o++] = b64_alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
}

/* Strict standard base64 (padding required) into out[0..cap); -1 if
 * malformed or longer than cap. */
static int b64_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *outlen)
{
    size_t o = 0;
    if (n % 4 != 0)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        bool last = i + 4 == n;
        for (int k = 0; k < 4; k++) {
            char c = in[i + (size_t)k];
            const char *p = c != '\0' ? strchr(b64_alphabet, c) : NULL;
            v[k] = p != NULL ? (int)(p - b64_alphabet) : -1;
            if (v[k] < 0 && !(last && k >= 2 && c == '='))
                return -1;
        }
        if (v[2] < 0 && v[3] >= 0)
            return -1; /* "x=y" */
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                     (uint32_t)(v[2] < 0 ? 0 : v[2]) << 6 | (uint32_t)(v[3] < 0 ? 0 : v[3]);
        size_t k = v[2] < 0 ? 1 : v[3] < 0 ? 2 : 3;
        if ((k == 1 && (w & 0xffff) != 0) || (k == 2 && (w & 0xff) != 0))
            return -1; /* non-canonical padding bits */
        if (o + k > cap)
            return -1;
        out[o++] = (unsigned char)(w >> 16);
        if (k > 1)
            out[o++] = (unsigned char)(w >> 8);
        if (k > 2)
            out[o++] = (unsigned char)w;
    }
    *outlen = o;
    return 0;
}

/* Strict decimal: an optional '-' (if allowed), then 1 to 20 digits, no
 * white space, no '+', no leading zeros; overflow checked digit by digit. */
static int dec_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20 || (s[0] == '0' && n > 1))
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d;
        if (s[i] < '0' || s[i] > '9')
            return -1;
        d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int dec_i64(const char *s, size_t n, int64_t *out)
{
    uint64_t u;
    bool neg = n > 0 && s[0] == '-';
    if (dec_u64(s + neg, n - neg, &u) != 0)
        return -1;
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1 || u == 0)
            return -1;
        *out = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
    } else {
        if (u > (uint64_t)INT64_MAX)
            return -1;
        *out = (int64_t)u;
    }
    return 0;
}

/* Field readers: 0 and the value (zero, false or NULL when the field is
 * absent, as the gateway leaves out defaults), -1 when present with the
 * wrong type or form. */
static int get_field(json_object *o, const char *k, json_type t, json_object **out)
{
    json_object *v = NULL;
    *out = NULL;
    if (o == NULL || !json_object_object_get_ex(o, k, &v) || v == NULL)
        return 0;
    if (!json_object_is_type(v, t))
        return -1;
    *out = v;
    return 0;
}

/* 64-bit fields are JSON strings; *present tells an absent one from 0. */
static int get_i64(json_object *o, const char *k, int64_t *out, bool *present)
{
    json_object *v;
    *out = 0;
    if (get_field(o, k, json_type_string, &v) != 0)
        return -1;
    if (present != NULL)
        *present = v != NULL;
    return v == NULL ? 0
                     : dec_i64(json_object_get_string(v), (size_t)json_object_get_string_len(v), out);
}

static int get_bool(json_object *o, const char *k, bool *out)
{
    json_object *v;
    *out = false;
    if (get_field(o, k, json_type_boolean, &v) != 0)
        return -1;
    *out = v != NULL && json_object_get_boolean(v);
    return 0;
}

/* A base64 field (key, value) decoded into out (NUL-terminated); absent is
 * empty. */
static int get_bytes(json_object *o, const char *k, unsigned char *out, size_t cap, size_t *len)
{
    json_object *v;
    *len = 0;
    out[0] = '\0';
    if (get_field(o, k, json_type_string, &v) != 0)
        return -1;
    if (v == NULL)
        return 0;
    if (b64_decode(json_object_get_string(v), (size_t)json_object_get_string_len(v), out,
                   cap - 1, len) != 0)
        return -1;
    out[*len] = '\0';
    return 0;
}

/* Members in the text (each ':' outside strings separates one) and in the
 * parsed tree (json-c keeps the last of duplicate keys): they differ if a
 * key repeats. */
static size_t text_members(const char *s, size_t n)
{
    size_t c = 0;
    bool in = false;
    for (size_t i = 0; i < n; i++) {
        if (in) {
            if (s[i] == '\\')
                i++;
            else if (s[i] == '"')
                in = false;
        } else if (s[i] == '"') {
            in = true;
        } else if (s[i] == ':') {
            c++;
        }
    }
    return c;
}

static size_t tree_members(json_object *o)
{
    size_t c = 0;
    if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            c += 1 + (v != NULL ? tree_members(v) : 0);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        size_t n = json_object_array_length(o);
        for (size_t i = 0; i < n; i++) {
            json_object *v = json_object_array_get_idx(o, i);
            if (v != NULL)
                c += tree_members(v);
        }
    }
    return c;
}

static int garbage(etcd_be *e, const char *path, const char *what)
{
    return idm_error_fail(IDM_EIO, "lease: etcd %s%s: malformed answer (%s)",
                          e->ep != NULL ? e->ep : "?", path, what);
}

/* The last answer as one JSON object: strict, whole, no duplicate keys. */
static int parse_answer(etcd_be *e, const char *path, json_object **out)
{
    json_tokener *tok;
    json_object *o;
    size_t end;
    *out = NULL;
    if (e->len == 0)
        return garbage(e, path, "empty");
    if (memchr(e->buf, '\0', e->len) != NULL)
        return garbage(e, path, "a NUL byte");
    tok = json_tokener_new_ex(IDM__ETCD_JSON_DEPTH);
    if (tok == NULL)
        return IDM_ENOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    o = json_tokener_parse_ex(tok, e->buf, (int)e->len);
    if (o == NULL || json_tokener_get_error(tok) != json_tokener_success) {
        enum json_tokener_error je = json_tokener_get_error(tok);
        json_object_put(o);
        json_tokener_free(tok);
        return garbage(e, path,
                       je == json_tokener_continue ? "truncated JSON" : json_tokener_error_desc(je));
    }
    end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    for (size_t i = end; i < e->len; i++) {
        if (e->buf[i] != ' ' && e->buf[i] != '\n' && e->buf[i] != '\r' && e->buf[i] != '\t') {
            json_object_put(o);
            return garbage(e, path, "text after the JSON object");
        }
    }
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return garbage(e, path, "not a JSON object");
    }
    if (text_members(e->buf, end) != tree_members(o)) {
        json_object_put(o);
        return garbage(e, path, "a key repeats");
    }
    *out = o;
    return 0;
}

/* The answer's header: present, with a cluster id, and the same cluster as
 * the first answer's. */
static int check_header(etcd_be *e, json_object *resp, const char *path)
{
    json_object *h, *c;
    uint64_t cid;
    if (get_field(resp, "header", json_type_object, &h) != 0 || h == NULL)
        return garbage(e, path, "no header");
    if (get_field(h, "cluster_id", json_type_string, &c) != 0 || c == NULL ||
        dec_u64(json_object_get_string(c), (size_t)json_object_get_string_len(c), &cid) != 0 ||
        cid == 0)
        return garbage(e, path, "no cluster id in the header");
    if (!e->have_cluster) {
        e->cluster_id = cid;
        e->have_cluster = true;
        return 0;
    }
    if (cid != e->cluster_id) {
        e->foreign = true;
        return idm_error_fail(IDM_ELEASE,
                              "lease: etcd %s answered for cluster %" PRIu64 ", not %" PRIu64
                              " (re-created, or a misrouted endpoint): the claim is lost",
                              e->ep, cid, e->cluster_id);
    }
    return 0;
}

size_t idm__etcd_on_data(char *p, size_t size, size_t n, void *ud)
{
    etcd_be *e = ud;
    size_t len = size * n;
    if (len > MAX_BODY - e->len) {
        e->overflow = true;
        return 0; /* aborts the transfer */
    }
    if (e->len + len + 1 > e->cap) {
        size_t cap = e->cap != 0 ? e->cap : 4096;
        char *grown;
        while (cap < e->len + len + 1)
            cap *= 2;
        if (cap > MAX_BODY + 1)
            cap = MAX_BODY + 1;
        grown = realloc(e->buf, cap);
        if (grown == NULL)
            return 0;
        e->buf = grown;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, p, len);
    e->len += len;
    e->buf[e->len] = '\0';
    return len;
}

/* The gRPC code and message of an error answer, if it has them. */
static void error_answer(etcd_be *e, int *code, char *msg, size_t msglen)
{
    json_object *o = NULL, *v;
    json_tokener *tok;
    *code = 0;
    snprintf(msg, msglen, "(no message)");
    if (e->len == 0 || memchr(e->buf, '\0', e->len) != NULL)
        return;
    tok = json_tokener_new_ex(IDM__ETCD_JSON_DEPTH);
    if (tok == NULL)
        return;
    o = json_tokener_parse_ex(tok, e->buf, (int)e->len);
    json_tokener_free(tok);
    if (o == NULL || !json_object_is_type(o, json_type_object)) {
        /* Not JSON: its first line as text (etcd's gateway answers some
         * refusals so, e.g. a client certificate with a Common Name). */
        size_t n = strcspn(e->buf, "\r\n");
        json_object_put(o);
        if (n > 0)
            snprintf(msg, msglen, "%.*s", (int)n, e->buf);
        for (char *p = msg; *p != '\0'; p++)
            if (*p < ' ' || *p > '~')
                *p = '?';
        return;
    }
    if (json_object_object_get_ex(o, "code", &v) && json_object_is_type(v, json_type_int))
        *code = (int)json_object_get_int(v);
    if (json_object_object_get_ex(o, "message", &v) && json_object_is_type(v, json_type_string))
        snprintf(msg, msglen, "%s", json_object_get_string(v));
    json_object_put(o);
    for (char *p = msg; *p != '\0'; p++)
        if (*p < ' ' || *p > '~')
            *p = '?';
}

void idm__etcd_set_post(void *be, idm__etcd_post_fn post)
{
    ((etcd_be *)be)->post = post;
}

idm__etcd_post_fn idm__etcd_get_post(const void *be)
{
    return ((const etcd_be *)be)->post;
}

bool idm__etcd_overflowed(const void *be)
{
    return ((const etcd_be *)be)->overflow;
}

void idm__etcd_transport_error(void *be, const char *text)
{
    etcd_be *e = be;
    snprintf(e->errbuf, sizeof e->errbuf, "%s", text);
}

/* What a TLS failure (libcurl's code cc) likely means, for the detail:
 * short, as libcurl's own text says why and both share one line. */
static const char *tls_hint(const etcd_be *e, CURLcode cc)
{
    if (!e->tls)
        return "";
    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
        return " (TLS: the server's certificate was refused)";
    case CURLE_SSL_CONNECT_ERROR:
        if (strstr(e->errbuf, "wrong version number") != NULL ||
            strstr(e->errbuf, "packet length too long") != NULL)
            return " (TLS: the server does not speak TLS there)";
        /* fall through */
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
        return e->cert == NULL ? " (TLS: a client certificate, cert= and key=, may be required)"
                               : " (TLS: the server may have refused the client certificate)";
    default:
        return "";
    }
}

static int post_curl(void *be, const char *url, const char *body, long timeout_ms, long *status)
{
    etcd_be *e = be;
    CURLcode cc;
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->token != NULL ? e->auth_hdrs : e->hdrs);
    curl_easy_setopt(e->curl, CURLOPT_URL, url);
    curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    cc = curl_easy_perform(e->curl);
    if (cc != CURLE_OK) {
        size_t n;
        if (e->errbuf[0] == '\0')
            snprintf(e->errbuf, sizeof e->errbuf, "%s", curl_easy_strerror(cc));
        n = strlen(e->errbuf);
        snprintf(e->errbuf + n, sizeof e->errbuf - n, "%s", tls_hint(e, cc));
        return -1;
    }
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

/* ---------------------------------------------------- authentication */

#define MAX_PASSWORD 1024 /* longest first line of a password file */
#define MAX_TOKEN 8192    /* longest token accepted */
#define GRPC_INVALID_ARGUMENT 3
#define GRPC_PERMISSION_DENIED 7
#define GRPC_FAILED_PRECONDITION 9
#define GRPC_UNAUTHENTICATED 16

/* The first line of the password file into pw (cap bytes), its trailing
 * "\n" or "\r\n" cut; IDM_EINVAL naming the file (never its content) if it
 * cannot be read, is no regular file, or the line is empty or too long.
 * The caller wipes pw. */
static int read_password(const char *path, char *pw, size_t cap)
{
    const char *kind;
    char why[160];
    ssize_t got = idm__read_regular(path, pw, cap - 1, &kind, why, sizeof why);
    size_t len = got > 0 ? (size_t)got : 0;
    pw[len] = '\0';
    if (got < 0) {
        explicit_bzero(pw, cap);
        return kind != NULL
                   ? idm_error_fail(IDM_EINVAL, "lease: etcds option password-file: '%.120s' is "
                                                "%s, not a regular file",
                                    path, kind)
                   : idm_error_fail(IDM_EINVAL, "lease: etcds option password-file: cannot read "
                                                "'%.120s': %s",
                                    path, strerror(errno));
    }
    len = strcspn(pw, "\n");
    if (pw[len] != '\n' && len == cap - 1)
        return idm_error_fail(IDM_EINVAL, "lease: etcds option password-file: the first line "
                                          "of '%.120s' is longer than %zu bytes",
                              path, cap - 2);
    if (len > 0 && pw[len - 1] == '\r')
        len--;
    explicit_bzero(pw + len, cap - len);
    if (len == 0)
        return idm_error_fail(IDM_EINVAL, "lease: etcds option password-file: the first line "
                                          "of '%.120s' is empty",
                              path);
    return 0;
}

/* s as the inside of a JSON string into out (cap bytes): -1 if it does
 * not fit. */
static int json_escape(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        char esc[8];
        size_t n;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            n = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
        } else {
            esc[0] = (char)*p;
            n = 1;
        }
        if (o + n >= cap)
            return -1;
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
    return 0;
}

/* Forget the token, wiping it. */
static void drop_token(etcd_be *e)
{
    for (struct curl_slist *h = e->auth_hdrs; h != NULL; h = h->next)
        explicit_bzero(h->data, strlen(h->data));
    curl_slist_free_all(e->auth_hdrs);
    e->auth_hdrs = NULL;
    if (e->token != NULL) {
        explicit_bzero(e->token, strlen(e->token));
        free(e->token);
        e->token = NULL;
    }
}

/* Keep token (len bytes): the headers of every request carry it. */
static int keep_token(etcd_be *e, const char *token, size_t len)
{
    struct curl_slist *h = NULL;
    char *line = malloc(len + 32);
    drop_token(e);
    if (line == NULL)
        return IDM_ENOMEM;
    snprintf(line, len + 32, "Authorization: %.*s", (int)len, token);
    for (const struct curl_slist *b = e->hdrs; b != NULL; b = b->next) {
        struct curl_slist *n = curl_slist_append(h, b->data);
        if (n == NULL)
            break;
        h = n;
    }
    e->auth_hdrs = h != NULL ? curl_slist_append(h, line) : NULL;
    e->token = e->auth_hdrs != NULL ? strndup(token, len) : NULL;
    explicit_bzero(line, len + 32);
    free(line);
    if (e->token == NULL) {
        if (e->auth_hdrs == NULL)
            curl_slist_free_all(h);
        drop_token(e);
        return IDM_ENOMEM;
    }
    return 0;
}

/* Whether etcd refused a request for its token (expired, invalid, from
 * before a change of users or roles, or none sent): then a new token and
 * one more try. The error answers of etcd 3.4's gateway. */
static bool token_refused(int code, const char *msg)
{
    return (code == GRPC_UNAUTHENTICATED && strcmp(msg, "etcdserver: invalid auth token") == 0) ||
           (code == GRPC_INVALID_ARGUMENT &&
            (strcmp(msg, "etcdserver: revision of auth store is old") == 0 ||
             strcmp(msg, "etcdserver: user name is empty") == 0));
}

/* An answer's user, shown: at most 64 bytes, printable. */
static void user_shown(const etcd_be *e, char *out, size_t cap)
{
    snprintf(out, cap, "%.64s", e->user != NULL ? e->user : "");
    for (char *p = out; *p != '\0'; p++)
        if (*p < ' ' || *p > '~')
            *p = '?';
}

/* What a call to one endpoint came to (AT_ANSWERED: post_at only). */
enum { AT_DONE, AT_NEXT, AT_RETRY, AT_ANSWERED };

/* POST body to endpoint k's base + path within t ms: AT_ANSWERED with
 * *status (the answer in e->buf); else AT_DONE with *rc (an answer too
 * large) or AT_NEXT (a transport error: last says what). */
static int post_at(etcd_be *e, size_t k, const char *base, const char *path, const char *body,
                   long t, long *status, char *last, size_t lastcap, int *rc)
{
    char url[MAX_HOST + 64];
    snprintf(url, sizeof url, "%s%s", base, path);
    e->len = 0;
    e->overflow = false;
    e->errbuf[0] = '\0';
    if (e->post(e, url, body, t, status) == 0)
        return AT_ANSWERED;
    if (e->overflow) {
        *rc = idm_error_fail(IDM_EIO, "lease: etcd %s%s: answer larger than %d bytes", e->eps[k],
                             path, MAX_BODY);
        return AT_DONE;
    }
    snprintf(last, lastcap, "%s%s: %s", e->eps[k], path, e->errbuf);
    return AT_NEXT;
}

/* Authenticate at endpoint k (url prefix base) within t ms: AT_DONE with
 * *rc 0 (a token kept, or etcd has authentication off) or an error;
 * AT_NEXT (transport error, no leader: last says what) for the next
 * endpoint. The password is read from its file for this request only, and
 * wiped with the request's body and the answer. */
static int authenticate(etcd_be *e, size_t k, const char *base, long t, char *last,
                        size_t lastcap, int *rc)
{
    static const char path[] = "/v3/auth/authenticate";
    char pw[MAX_PASSWORD + 2], who[80];
    char body[6 * (MAX_PASSWORD + 2) + 6 * 256 + 64], epw[6 * (MAX_PASSWORD + 2)];
    char euser[6 * 256 + 8];
    long status = 0;
    int r;
    *rc = read_password(e->pwfile, pw, sizeof pw);
    if (*rc != 0)
        return AT_DONE;
    r = json_escape(pw, epw, sizeof epw) | json_escape(e->user, euser, sizeof euser);
    explicit_bzero(pw, sizeof pw);
    if (r == 0)
        r = snprintf(body, sizeof body, "{\"name\":\"%s\",\"password\":\"%s\"}", euser, epw) >=
                    (int)sizeof body
                ? -1
                : 0;
    explicit_bzero(epw, sizeof epw);
    if (r != 0) {
        explicit_bzero(body, sizeof body);
        *rc = idm_error_fail(IDM_EINVAL, "lease: etcds: the user name or password is too long");
        return AT_DONE;
    }
    drop_token(e);
    r = post_at(e, k, base, path, body, t, &status, last, lastcap, rc);
    explicit_bzero(body, sizeof body);
    user_shown(e, who, sizeof who);
    if (r != AT_ANSWERED)
        return r;
    if (status == 200) {
        json_object *resp = NULL, *tok = NULL;
        e->cur = k;
        *rc = parse_answer(e, path, &resp);
        if (*rc == 0)
            *rc = check_header(e, resp, path);
        if (*rc == 0 && (get_field(resp, "token", json_type_string, &tok) != 0 || tok == NULL ||
                         json_object_get_string_len(tok) == 0 ||
                         json_object_get_string_len(tok) > MAX_TOKEN))
            *rc = garbage(e, path, "no token");
        if (*rc == 0) {
            const char *s = json_object_get_string(tok);
            size_t n = (size_t)json_object_get_string_len(tok);
            for (size_t i = 0; i < n && *rc == 0; i++)
                if (s[i] <= ' ' || s[i] > '~')
                    *rc = garbage(e, path, "a token that no header can carry");
            if (*rc == 0)
                *rc = keep_token(e, s, n);
        }
        if (tok != NULL)
            explicit_bzero((char *)json_object_get_string(tok),
                           (size_t)json_object_get_string_len(tok));
        json_object_put(resp);
        explicit_bzero(e->buf, e->len);
        return AT_DONE;
    }
    {
        int code;
        char msg[160];
        error_answer(e, &code, msg, sizeof msg);
        explicit_bzero(e->buf, e->len);
        if (status == 502 || status == 503 || status == 504 || code == GRPC_UNAVAILABLE) {
            snprintf(last, lastcap, "%s%s: HTTP %ld: %s", e->eps[k], path, status, msg);
            return AT_NEXT;
        }
        e->cur = k;
        if (code == GRPC_FAILED_PRECONDITION &&
            strcmp(msg, "etcdserver: authentication is not enabled") == 0) {
            e->auth_off = true; /* no token needed; asked again if etcd says one is */
            *rc = 0;
        } else if (code == GRPC_INVALID_ARGUMENT &&
                   strstr(msg, "authentication failed") != NULL) {
            *rc = idm_error_fail(IDM_EIO, "lease: etcd %s: authentication as user '%s' failed: "
                                          "wrong password, or no such user (%s)",
                                 e->eps[k], who, msg);
        } else {
            *rc = idm_error_fail(IDM_EIO, "lease: etcd %s: authentication as user '%s' failed: "
                                          "HTTP %ld: %s",
                                 e->eps[k], who, status, msg);
        }
        return AT_DONE;
    }
}

/* One request to endpoint k within t ms: AT_DONE with *rc and *out as
 * call gives them, AT_NEXT for the next endpoint (last says why), or
 * AT_RETRY: etcd refused the token, which is dropped (once per call). */
static int call_at(etcd_be *e, size_t k, const char *path, const char *body, long t,
                   bool may_retry, json_object **out, char *last, size_t lastcap, int *rc)
{
    char base[MAX_HOST + 16];
    long status = 0;
    int code, r;
    char msg[160];
    snprintf(base, sizeof base, "%s://%s", e->tls ? "https" : "http", e->eps[k]);
    e->ep = e->eps[k];
    if (e->user != NULL && e->token == NULL && !e->auth_off) {
        r = authenticate(e, k, base, t, last, lastcap, rc);
        if (r != AT_DONE || *rc != 0)
            return r;
    }
    r = post_at(e, k, base, path, body, t, &status, last, lastcap, rc);
    if (r != AT_ANSWERED)
        return r;
    if (status == 200) {
        e->cur = k;
        *rc = parse_answer(e, path, out);
        return AT_DONE;
    }
    error_answer(e, &code, msg, sizeof msg);
    if (status == 502 || status == 503 || status == 504 || code == GRPC_UNAVAILABLE) {
        snprintf(last, lastcap, "%s%s: HTTP %ld: %s", e->eps[k], path, status, msg);
        return AT_NEXT;
    }
    e->cur = k;
    e->grpc_code = code;
    if (e->user != NULL && token_refused(code, msg) && may_retry) {
        drop_token(e);
        e->auth_off = false;
        return AT_RETRY;
    }
    if (code == GRPC_PERMISSION_DENIED || (code == GRPC_INVALID_ARGUMENT &&
                                           strcmp(msg, "etcdserver: user name is empty") == 0)) {
        char who[80];
        user_shown(e, who, sizeof who);
        *rc = e->user != NULL
                  ? idm_error_fail(IDM_EIO, "lease: etcd %s%s: permission denied to user '%s' "
                                            "(it needs a role with readwrite on %s/): %s",
                                   e->eps[k], path, who, e->prefix, msg)
                  : idm_error_fail(IDM_EIO, "lease: etcd %s%s: etcd asks for authentication "
                                            "(etcds://...?user=NAME&password-file=FILE): %s",
                                   e->eps[k], path, msg);
        return AT_DONE;
    }
    *rc = idm_error_fail(IDM_EIO, "lease: etcd %s%s: HTTP %ld: %s", e->eps[k], path, status, msg);
    return AT_DONE;
}

/* POST body to path; 0 and the answer (a JSON object, status 200), or an
 * error: IDM_EIO with e->grpc_code set for an error answer (0 if it had no
 * code). Each endpoint is tried once (see the comment at the top), and the
 * one that refused a token once more with a new one. */
static int call(etcd_be *e, const char *path, const char *body, json_object **out)
{
    char last[320] = "no endpoint tried";
    bool retried = false;
    *out = NULL;
    e->grpc_code = 0;
    if (e->foreign)
        return idm_error_fail(IDM_ELEASE,
                              "lease: a different etcd cluster answered earlier: the claim is lost");
    for (size_t i = 0; i < e->neps;) {
        size_t k = (e->cur + i) % e->neps;
        int64_t left_ms = (e->deadline_ns - idm__mono_ns()) / 1000000, t;
        int rc = 0, r;
        if (left_ms < 10) {
            snprintf(last, sizeof last, "out of time before %s%s", e->eps[k], path);
            break;
        }
        t = e->ttl_ms / 6;
        if (t < 100)
            t = 100;
        if (t > 5000)
            t = 5000;
        if (t > left_ms)
            t = left_ms;
        r = call_at(e, k, path, body, (long)t, !retried, out, last, sizeof last, &rc);
        if (r == AT_DONE)
            return rc;
        if (r == AT_RETRY) {
            retried = true; /* the same endpoint, with a new token */
            e->cur = k;
            i = 0;
            continue;
        }
        i++;
    }
    return idm_error_fail(IDM_EIO, "lease: etcd unreachable: %s", last);
}

/* call, then check_header: 0 and the answer, or an error and *out NULL. */
static int call_checked(etcd_be *e, const char *path, const char *body, json_object **out)
{
    int rc = call(e, path, body, out);
    if (rc == 0 && (rc = check_header(e, *out, path)) != 0) {
        json_object_put(*out);
        *out = NULL;
    }
    return rc;
}

/* The object k in a txn's answer op; NULL if op is no object or has none. */
static json_object *op_member(json_object *op, const char *k)
{
    json_object *v = NULL;
    if (op != NULL && json_object_is_type(op, json_type_object))
        (void)get_field(op, k, json_type_object, &v);
    return v;
}

/* The one kv of a range answer's kvs, whose key must be key: 0 and *kv
 * (NULL if kvs is empty), or -1. */
static int only_kv(json_object *kvs, const char *key, json_object **kv)
{
    unsigned char k[MAX_KEY + 1];
    size_t klen;
    *kv = NULL;
    if (kvs == NULL || json_object_array_length(kvs) == 0)
        return 0;
    *kv = json_object_array_get_idx(kvs, 0);
    if (json_object_array_length(kvs) != 1 || *kv == NULL ||
        !json_object_is_type(*kv, json_type_object) ||
        get_bytes(*kv, "key", k, sizeof k, &klen) != 0 || klen != strlen(key) ||
        memcmp(k, key, klen) != 0)
        return -1;
    return 0;
}

static void key_of(const etcd_be *e, const char *kind, uint32_t id, char *out, size_t len)
{
    snprintf(out, len, "%s/%s/%u", e->prefix, kind, (unsigned)id);
}

void idm__etcd_b64_str(const char *s, char *out)
{
    b64_encode((const unsigned char *)s, strlen(s), out);
}

/* The id in a key <prefix>/<kind>/<id>, if it is one of ours (canonical
 * decimal below max); else -1. */
static int64_t id_of_key(const etcd_be *e, const char *kind, const unsigned char *key,
                         size_t len, uint32_t max)
{
    size_t pl = strlen(e->prefix), kl = strlen(kind);
    uint64_t id;
    if (len <= pl + kl + 2 || memcmp(key, e->prefix, pl) != 0 || key[pl] != '/' ||
        memcmp(key + pl + 1, kind, kl) != 0 || key[pl + 1 + kl] != '/')
        return -1;
    if (dec_u64((const char *)key + pl + kl + 2, len - pl - kl - 2, &id) != 0 || id >= max)
        return -1;
    return (int64_t)id;
}

/* A stored mark, read leniently (any decimal, leading zeros allowed): a
 * short form left by hand then fails the "raised to at least" check after a
 * write. Above INT64_MAX (19 digits can be) is refused, never wrapped. */
static int parse_mark(const unsigned char *v, size_t len, idm_unix_ms *mark)
{
    int64_t m = 0;
    if (len == 0 || len > 19)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int d = v[i] - '0';
        if (v[i] < '0' || v[i] > '9' || m > (INT64_MAX - d) / 10)
            return -1;
        m = m * 10 + d;
    }
    *mark = m;
    return 0;
}

/* ------------------------------------------------------------ range pages */

/* One kv of a range answer, with its key (decoded, klen bytes). */
typedef int (*kv_fn)(etcd_be *e, json_object *kv, const unsigned char *key, size_t klen,
                     void *ud);

/* A range request's body (a kv/range call, or a txn's request_range) for
 * keys from from[0..fromlen) up to <prefix>/<kind>0 ('/' + 1), a page. */
static void range_request(const etcd_be *e, const char *kind, const char *from, size_t fromlen,
                          bool keys_only, char *out, size_t cap)
{
    char end[MAX_PREFIX + 32], from64[4 * (MAX_KEY + 2) / 3 + 8], end64[4 * sizeof end / 3 + 8];
    snprintf(end, sizeof end, "%s/%s0", e->prefix, kind);
    b64_encode((const unsigned char *)from, fromlen, from64);
    idm__etcd_b64_str(end, end64);
    snprintf(out, cap, "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\"%s}", from64,
             end64, RANGE_PAGE, keys_only ? ",\"keys_only\":true" : "");
}

#define RANGE_REQUEST_MAX (4 * (MAX_KEY + 2) / 3 + 4 * (MAX_PREFIX + 32) / 3 + 160)

/* One page of a range answer rr (kv/range, or a txn's response_range): each
 * kv to fn; *more and *n as the answer says; from[0..*fromlen) just after
 * the last key, where the next page starts. */
static int range_page(etcd_be *e, const char *path, json_object *rr, kv_fn fn, void *ud,
                      char *from, size_t *fromlen, bool *more, size_t *n)
{
    json_object *kvs;
    int rc = 0;
    *n = 0;
    if (get_field(rr, "kvs", json_type_array, &kvs) != 0 || get_bool(rr, "more", more) != 0)
        return garbage(e, path, "kvs or more");
    *n = kvs != NULL ? json_object_array_length(kvs) : 0;
    if (*n > RANGE_PAGE)
        return garbage(e, path, "more keys than asked for");
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        json_object *kv = json_object_array_get_idx(kvs, i);
        unsigned char key[MAX_KEY + 1];
        size_t klen;
        if (kv == NULL || !json_object_is_type(kv, json_type_object) ||
            get_bytes(kv, "key", key, sizeof key, &klen) != 0 || klen == 0)
            rc = garbage(e, path, "a key");
        else
            rc = fn(e, kv, key, klen, ud);
        if (rc == 0 && i + 1 == *n) {
            if (klen + 1 > MAX_KEY) {
                rc = garbage(e, path, "a key too long");
            } else {
                memcpy(from, key, klen);
                from[klen] = '\0';
                *fromlen = klen + 1;
            }
        }
    }
    return rc;
}

/* Every key under <prefix>/<kind>/ from from[0..fromlen) on, a page at a
 * time, to fn; pages counts those already read. */
static int range_from(etcd_be *e, const char *kind, bool keys_only, kv_fn fn, void *ud,
                      char *from, size_t fromlen, int pages)
{
    static const char path[] = "/v3/kv/range";
    for (;;) {
        char body[RANGE_REQUEST_MAX];
        json_object *resp;
        bool more = false;
        size_t n = 0;
        int rc;
        range_request(e, kind, from, fromlen, keys_only, body, sizeof body);
        rc = call_checked(e, path, body, &resp);
        if (rc != 0)
            return rc;
        rc = range_page(e, path, resp, fn, ud, from, &fromlen, &more, &n);
        json_object_put(resp);
        if (rc != 0)
            return rc;
        if (!more || n == 0)
            return 0;
        if (++pages > (int)(IDM_LEASE_WORKERS_MAX / RANGE_PAGE) + 4)
            return garbage(e, path, "pages without end");
    }
}

/* Every key under <prefix>/<kind>/, a page at a time, to fn. */
static int range_all(etcd_be *e, const char *kind, bool keys_only, kv_fn fn, void *ud)
{
    char from[MAX_KEY + 2];
    size_t fromlen = (size_t)snprintf(from, sizeof from, "%s/%s/", e->prefix, kind);
    return range_from(e, kind, keys_only, fn, ud, from, fromlen, 0);
}

/* ------------------------------------------------------------------ open */

/* The URL (of scheme etcd, or etcds if tls) is shown with any password
 * masked (an endpoint may not hold user:password@, but a refused URL may),
 * and never its options: they are shown by name only. */
static int bad_url_of(bool tls, const char *why, const char *rest)
{
    char url[128], shown[128];
    snprintf(url, sizeof url, "%s://%.*s", tls ? "etcds" : "etcd", (int)strcspn(rest, "?"),
             rest); /* as much as fits */
    idm__url_mask(url, shown, sizeof shown);
    return idm_error_fail(IDM_EINVAL, "lease: %s URL '%.87s': %s (want %s)",
                          tls ? "etcds" : "etcd", shown, why,
                          tls ? "etcds://host:port[,host:port...]/prefix[?option=value&...]"
                              : "etcd://host:port[,host:port...]/prefix");
}

/* Also the backend's close: a claim still held here was lost (lease.c
 * releases the others), and its lease expires by itself. Revoking it could
 * reach another cluster. */
static void eb_free(void *be)
{
    etcd_be *e = be;
    if (e == NULL)
        return;
    for (size_t i = 0; i < e->neps; i++)
        free(e->eps[i]);
    if (e->curl != NULL)
        curl_easy_cleanup(e->curl);
    drop_token(e);
    curl_slist_free_all(e->hdrs);
    if (e->buf != NULL)
        explicit_bzero(e->buf, e->cap); /* it may have held a token */
    free(e->buf);
    free(e->cacert);
    free(e->cert);
    free(e->key);
    free(e->user);
    free(e->pwfile);
    free(e);
}

/* The endpoints, rest up to slash, "host:port[,host:port...]", into e. */
static int parse_endpoints(etcd_be *e, const char *rest, const char *slash)
{
    for (const char *p = rest; p < slash;) {
        const char *c = memchr(p, ',', (size_t)(slash - p));
        size_t n = (size_t)((c != NULL ? c : slash) - p);
        if (n > MAX_HOST || idm__lease_endpoint_check(p, n) != 0)
            return bad_url_of(e->tls, "an endpoint is not host:port (port 1 to 65535)", rest);
        if (e->neps == MAX_ENDPOINTS)
            return bad_url_of(e->tls, "more than 16 endpoints", rest);
        e->eps[e->neps] = strndup(p, n);
        if (e->eps[e->neps] == NULL)
            return IDM_ENOMEM;
        e->neps++;
        p += n;
        if (c != NULL && ++p == slash)
            return bad_url_of(e->tls, "an endpoint is empty", rest);
    }
    return 0;
}

/* e's libcurl handle: JSON POSTs over plain HTTP, no proxy, no redirect. */
static int curl_setup(etcd_be *e)
{
    struct curl_slist *h;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return idm_error_fail(IDM_EIO, "lease: libcurl does not start: %s",
                              curl_easy_strerror(curl_init_rc));
    e->curl = curl_easy_init();
    h = curl_slist_append(NULL, "Content-Type: application/json");
    e->hdrs = h;
    if (h != NULL)
        e->hdrs = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
    if (e->curl == NULL || e->hdrs == NULL) {
        if (e->hdrs == NULL)
            curl_slist_free_all(h);
        return IDM_ENOMEM;
    }
    e->post = post_curl;
    curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, e->hdrs);
    curl_easy_setopt(e->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, idm__etcd_on_data);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
    curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, e->errbuf);
    curl_easy_setopt(e->curl, CURLOPT_PROXY, "");
    curl_easy_setopt(e->curl, CURLOPT_FOLLOWLOCATION, 0L);
    /* One protocol per handle: an etcds:// handle never speaks plain HTTP. */
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, e->tls ? "https" : "http");
#else
    curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS, (long)(e->tls ? CURLPROTO_HTTPS : CURLPROTO_HTTP));
#endif
    if (e->tls) {
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        if (v == NULL || !(v->features & CURL_VERSION_SSL))
            return idm_error_fail(IDM_EINVAL, "lease: etcds:// needs a libcurl with TLS; this "
                                              "one has none");
        /* Verified always: the CA and the host name (or IP address). */
        if (curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
            curl_easy_setopt(e->curl, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK)
            return idm_error_fail(IDM_EINVAL, "lease: etcds: libcurl cannot verify certificates");
        if (e->cacert != NULL) {
            /* A private CA: that one only, not the system's as well. */
            curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->cacert);
            curl_easy_setopt(e->curl, CURLOPT_CAPATH, NULL);
        }
        if (e->cert != NULL) {
            curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
            curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
        }
    }
    return 0;
}

/* A handle for rest, "host:port[,...]/prefix" (the whole rest of an
 * etcd:// URL; of an etcds:// one, the part before '?'), of scheme etcds if
 * tls, into *out: no transport yet. */
static int open_url(etcd_be **out, const char *rest, const char *shown, const idm_lease_opts *opts,
                    bool tls)
{
    const char *slash = strchr(rest, '/');
    size_t plen = slash != NULL ? strlen(slash) : 0;
    etcd_be *e;
    int rc;
    *out = NULL;
    if (slash == NULL)
        return bad_url_of(tls, "no /prefix", shown);
    /* The prefix: "/" and then 1 to MAX_PREFIX - 1 bytes of letters, digits,
     * '.', '-', '_' and single '/' inside. */
    if (plen < 2)
        return bad_url_of(tls, "the prefix is empty", shown);
    if (plen > MAX_PREFIX)
        return bad_url_of(tls, "the prefix is longer than 256 bytes", shown);
    if (slash[plen - 1] == '/')
        return bad_url_of(tls, "the prefix ends with '/'", shown);
    for (size_t i = 0; i < plen; i++) {
        if (!idm__lease_host_char(slash[i]) && slash[i] != '/')
            return bad_url_of(tls,
                              "the prefix may hold only letters, digits, '.', '-', '_' and '/'",
                              shown);
        if (slash[i] == '/' && slash[i + 1] == '/')
            return bad_url_of(tls, "the prefix holds '//'", shown);
    }
    if (slash == rest)
        return bad_url_of(tls, "no host:port", shown);
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return IDM_ENOMEM;
    e->tls = tls;
    memcpy(e->prefix, slash, plen + 1);
    rc = parse_endpoints(e, rest, slash);
    if (rc == 0) {
        e->ttl_ms = opts->ttl_ms > 0 ? opts->ttl_ms : IDM_LEASE_TTL_DEFAULT_MS;
        snprintf(e->scope_key, sizeof e->scope_key, "%s/scope", e->prefix);
        idm__etcd_b64_str(e->scope_key, e->scope_key64);
        snprintf(e->where, sizeof e->where, "%s://%s%s%s", tls ? "etcds" : "etcd", e->eps[0],
                 e->neps > 1 ? ",..." : "", e->prefix);
    }
    if (rc != 0) {
        eb_free(e);
        return rc;
    }
    *out = e;
    return 0;
}

static int eb_open(void **be, const char *rest, const idm_lease_opts *opts)
{
    etcd_be *e;
    int rc = open_url(&e, rest, rest, opts, false);
    if (rc == 0 && (rc = curl_setup(e)) != 0)
        eb_free(e);
    if (rc == 0)
        *be = e;
    return rc;
}

/* ------------------------------------------------------- etcds options */

static int hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* An option's name, shown: at most 40 bytes, printable. */
static void name_shown(const char *s, size_t n, char *out, size_t cap)
{
    if (n > 40)
        n = 40;
    idm__lease_scope_copy(s, n, out, cap);
}

/* The value v[0..n) of option name, %XX-decoded, into a malloc'd *out;
 * IDM_EINVAL naming the option (never showing the value) if it is empty,
 * badly escaped, or holds a NUL. */
static int option_value(const char *name, const char *v, size_t n, char **out)
{
    char *d;
    size_t o = 0;
    if (n == 0)
        return idm_error_fail(IDM_EINVAL, "lease: etcds option %s: the value is empty", name);
    d = malloc(n + 1);
    if (d == NULL)
        return IDM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (v[i] != '%') {
            d[o++] = v[i];
            continue;
        }
        if (i + 2 >= n || hex_digit(v[i + 1]) < 0 || hex_digit(v[i + 2]) < 0 ||
            (hex_digit(v[i + 1]) == 0 && hex_digit(v[i + 2]) == 0)) {
            free(d);
            return idm_error_fail(IDM_EINVAL, "lease: etcds option %s: a bad %%-escape in the "
                                              "value (%%XX, not %%00)",
                                  name);
        }
        d[o++] = (char)(hex_digit(v[i + 1]) * 16 + hex_digit(v[i + 2]));
        i += 2;
    }
    d[o] = '\0';
    *out = d;
    return 0;
}

/* A file an option names must be a regular file this process can read. */
static int check_file(const char *name, const char *path)
{
    const char *kind;
    int fd = idm__open_regular(path, O_RDONLY, 0, &kind);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (kind != NULL)
        return idm_error_fail(IDM_EINVAL,
                              "lease: etcds option %s: '%.120s' is %s, not a regular file", name,
                              path, kind);
    return idm_error_fail(IDM_EINVAL, "lease: etcds option %s: cannot read '%.120s': %s", name,
                          path, strerror(errno));
}

/* The options q ("name=value&..."), each optional, none twice, into e. */
static int parse_options(etcd_be *e, const char *q)
{
    static const char *const names[] = {"cacert", "cert", "key", "user", "password-file"};
    char **slots[] = {&e->cacert, &e->cert, &e->key, &e->user, &e->pwfile};
    char pw[MAX_PASSWORD + 2];
    int rc = 0;
    for (const char *p = q; rc == 0;) {
        size_t n = strcspn(p, "&"), nl = strcspn(p, "=&");
        size_t which = sizeof names / sizeof names[0];
        char shown[48];
        name_shown(p, nl, shown, sizeof shown);
        if (n == 0)
            return idm_error_fail(IDM_EINVAL, "lease: etcds URL: an empty option (a stray '&' "
                                              "or '?')");
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i]) == nl && memcmp(p, names[i], nl) == 0)
                which = i;
        if (which == sizeof names / sizeof names[0])
            return idm_error_fail(IDM_EINVAL, "lease: etcds URL: unknown option '%s' (known: "
                                              "cacert, cert, key, user, password-file)",
                                  shown);
        if (*slots[which] != NULL)
            return idm_error_fail(IDM_EINVAL, "lease: etcds option %s given twice", names[which]);
        if (nl == n)
            return idm_error_fail(IDM_EINVAL, "lease: etcds option %s: no value (%s=...)",
                                  names[which], names[which]);
        rc = option_value(names[which], p + nl + 1, n - nl - 1, slots[which]);
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    if (rc != 0)
        return rc;
    if ((e->cert == NULL) != (e->key == NULL))
        return idm_error_fail(IDM_EINVAL, "lease: etcds option %s without %s: give both or "
                                          "neither",
                              e->cert != NULL ? "cert" : "key", e->cert != NULL ? "key" : "cert");
    if ((e->user == NULL) != (e->pwfile == NULL))
        return idm_error_fail(IDM_EINVAL, "lease: etcds option %s without %s: give both or "
                                          "neither",
                              e->user != NULL ? "user" : "password-file",
                              e->user != NULL ? "password-file" : "user");
    if (e->user != NULL) {
        for (const char *c = e->user; *c != '\0'; c++)
            if ((unsigned char)*c < ' ' || *c == 0x7f)
                return idm_error_fail(IDM_EINVAL, "lease: etcds option user: a control "
                                                  "character in the name");
        if (strlen(e->user) > 255)
            return idm_error_fail(IDM_EINVAL, "lease: etcds option user: longer than 255 bytes");
    }
    for (size_t i = 0; rc == 0 && i < 3; i++)
        if (*slots[i] != NULL)
            rc = check_file(names[i], *slots[i]);
    if (rc == 0 && e->pwfile != NULL) {
        rc = read_password(e->pwfile, pw, sizeof pw); /* checked now, read again when needed */
        explicit_bzero(pw, sizeof pw);
    }
    return rc;
}

/* etcds://host:port[,...]/prefix[?options]: the same over HTTPS. */
static int eb_open_tls(void **be, const char *rest, const idm_lease_opts *opts)
{
    const char *q = strchr(rest, '?');
    char *path = strndup(rest, q != NULL ? (size_t)(q - rest) : strlen(rest));
    etcd_be *e = NULL;
    int rc;
    if (path == NULL)
        return IDM_ENOMEM;
    rc = open_url(&e, path, rest, opts, true);
    free(path);
    if (rc == 0 && q != NULL)
        rc = parse_options(e, q + 1);
    if (rc == 0)
        rc = curl_setup(e);
    if (rc != 0) {
        eb_free(e);
        return rc;
    }
    *be = e;
    return 0;
}

/* ----------------------------------------------------------------- claim */

static int grant(etcd_be *e, int64_t ttl_ms, int64_t *granted_s)
{
    static const char path[] = "/v3/lease/grant";
    char body[96];
    json_object *resp, *err;
    int64_t id, ttl;
    bool has_id, has_ttl;
    int rc;
    snprintf(body, sizeof body, "{\"TTL\":\"%lld\",\"ID\":\"0\"}",
             (long long)((ttl_ms + 999) / 1000));
    rc = call_checked(e, path, body, &resp);
    if (rc != 0)
        return rc;
    if (get_i64(resp, "ID", &id, &has_id) != 0 || get_i64(resp, "TTL", &ttl, &has_ttl) != 0 ||
        get_field(resp, "error", json_type_string, &err) != 0)
        rc = garbage(e, path, "ID, TTL or error");
    if (rc == 0 && err != NULL && json_object_get_string_len(err) > 0)
        rc = idm_error_fail(IDM_EIO, "lease: etcd %s%s: %.100s", e->ep, path,
                            json_object_get_string(err));
    if (rc == 0 && (!has_id || id == 0))
        rc = garbage(e, path, "no lease ID");
    if (rc == 0 && (!has_ttl || ttl <= 0 || ttl > IDM__ETCD_MAX_TTL_S))
        rc = garbage(e, path, "no TTL, or one out of range");
    json_object_put(resp);
    if (rc == 0) {
        e->lease_id = id;
        *granted_s = ttl;
    }
    return rc;
}

/* Give the lease back. After a failure rc (not 0), the result is rc with
 * its detail, whatever the revoke says: the first error is the one
 * reported. */
static int revoke_lease(etcd_be *e, int rc)
{
    static const char path[] = "/v3/lease/revoke";
    char body[64], keep[256];
    json_object *resp;
    int r;
    snprintf(keep, sizeof keep, "%s", idm_error_detail());
    snprintf(body, sizeof body, "{\"ID\":\"%" PRId64 "\"}", e->lease_id);
    r = call_checked(e, path, body, &resp);
    json_object_put(resp);
    if (r == IDM_EIO && e->grpc_code == GRPC_NOT_FOUND)
        r = 0; /* expired already: as good */
    return rc == 0 ? r : idm_error_fail(rc, "%s", keep);
}

typedef struct taken_set {
    uint8_t *taken;
    uint32_t max;
} taken_set;

static int note_taken(etcd_be *e, json_object *kv, const unsigned char *key, size_t klen, void *ud)
{
    taken_set *t = ud;
    int64_t id = id_of_key(e, "workers", key, klen, t->max);
    (void)kv;
    if (id >= 0)
        t->taken[id] = 1;
    return 0;
}

/* The mark in a txn's range answer for <prefix>/hwm/<id>: 0 if none. */
static int mark_of(etcd_be *e, json_object *op, uint32_t id, idm_unix_ms *mark)
{
    static const char path[] = "/v3/kv/txn";
    json_object *rr = op_member(op, "response_range"), *kvs, *kv;
    char key[MAX_PREFIX + 32];
    unsigned char val[64];
    size_t vlen;
    *mark = 0;
    if (rr == NULL || get_field(rr, "kvs", json_type_array, &kvs) != 0)
        return garbage(e, path, "the mark's range");
    key_of(e, "hwm", id, key, sizeof key);
    if (only_kv(kvs, key, &kv) != 0)
        return garbage(e, path, "the mark's key");
    if (kv == NULL)
        return 0;
    if (get_bytes(kv, "value", val, sizeof val, &vlen) != 0 || parse_mark(val, vlen, mark) != 0)
        return idm_error_fail(IDM_EIO,
                              "lease: etcd %s/hwm/%u does not hold a mark (decimal Unix ms); "
                              "refusing to use worker id %u without knowing its last mark",
                              e->prefix, (unsigned)id, (unsigned)id);
    return 0;
}

/* After a raise: the mark stored (read back in the same txn, into *stored)
 * must be at least the one we meant to record; else it was not written (a
 * value that is no 16-digit mark compares wrongly) and we must not mint up
 * to it. */
static int check_raised_to(etcd_be *e, json_object *op, uint32_t id, idm_unix_ms want,
                           idm_unix_ms *stored)
{
    idm_unix_ms now = 0;
    int rc = mark_of(e, op, id, &now);
    *stored = now;
    if (rc == 0 && now < want)
        rc = idm_error_fail(IDM_EIO,
                            "lease: etcd %s/hwm/%u holds %lld, which a write of %lld did not "
                            "raise (is it a %d-digit mark?); not minting up to %lld",
                            e->prefix, (unsigned)id, (long long)now, (long long)want, MARK_DIGITS,
                            (long long)want);
    return rc;
}

static int check_raised(etcd_be *e, json_object *op, uint32_t id, idm_unix_ms want)
{
    idm_unix_ms stored;
    return check_raised_to(e, op, id, want, &stored);
}

/*
 * id's worker and mark keys, their base64 forms, and raise: a txn operation
 * that puts want in the mark key if the stored value is smaller bytewise
 * (as numerically, at equal widths) or the key does not exist (a VALUE
 * comparison with a missing key is false: the inner txn checks that). One
 * put per branch: etcd refuses two puts of one key in a txn.
 */
typedef struct keys64 {
    char key[MAX_PREFIX + 32], hwm[MAX_PREFIX + 32];
    char key64[4 * (MAX_PREFIX + 32) / 3 + 8], hwm64[4 * (MAX_PREFIX + 32) / 3 + 8];
    char val64[4 * (MARK_DIGITS + 1) / 3 + 8];
    char raise[8 * (MAX_PREFIX + 32) / 3 + 2 * (MARK_DIGITS + 1) + 1024];
} keys64;

static int keys_of(etcd_be *e, uint32_t id, idm_unix_ms want, keys64 *k)
{
    char val[MARK_DIGITS + 1];
    int n;
    key_of(e, "workers", id, k->key, sizeof k->key);
    key_of(e, "hwm", id, k->hwm, sizeof k->hwm);
    snprintf(val, sizeof val, "%0*lld", MARK_DIGITS,
             (long long)(want < 0 ? 0 : want > MARK_MAX ? MARK_MAX : want));
    idm__etcd_b64_str(k->key, k->key64);
    idm__etcd_b64_str(k->hwm, k->hwm64);
    idm__etcd_b64_str(val, k->val64);
    n = snprintf(k->raise, sizeof k->raise,
                 "{\"request_txn\":{\"compare\":[{\"target\":\"VALUE\",\"result\":\"LESS\","
                 "\"key\":\"%s\",\"value\":\"%s\"}],\"success\":[{\"request_put\":{\"key\":"
                 "\"%s\",\"value\":\"%s\"}}],\"failure\":[{\"request_txn\":{\"compare\":[{"
                 "\"target\":\"MOD\",\"result\":\"EQUAL\",\"key\":\"%s\",\"mod_revision\":"
                 "\"0\"}],\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}]}}]}}",
                 k->hwm64, k->val64, k->hwm64, k->val64, k->hwm64, k->hwm64, k->val64);
    if (n <= 0 || (size_t)n >= sizeof k->raise)
        return idm_error_fail(IDM_EINVAL, "lease: etcd request too long");
    return 0;
}

/*
 * The scope recorded under <prefix>/scope, in a txn's range answer op: 0 if
 * it is the claimant's; the refusal naming both if it is another;
 * IDM_EIO if the key is gone (removed by hand while we claimed: it is
 * never removed by idmint) or the answer is malformed.
 */
static int scope_check(etcd_be *e, const char *path, json_object *op)
{
    json_object *rr = op_member(op, "response_range"), *kvs, *kv;
    unsigned char val[2 * IDM_LEASE_SCOPE_MAX];
    size_t vlen;
    if (rr == NULL || get_field(rr, "kvs", json_type_array, &kvs) != 0)
        return garbage(e, path, "the scope's range");
    if (only_kv(kvs, e->scope_key, &kv) != 0)
        return garbage(e, path, "the scope's key");
    if (kv == NULL)
        return idm_error_fail(IDM_EIO,
                              "lease: etcd %s vanished during the claim (removed by hand?); "
                              "not claiming",
                              e->scope_key);
    if (get_bytes(kv, "value", val, sizeof val, &vlen) != 0)
        return garbage(e, path, "the scope's value");
    if (vlen == strlen(e->scope) && memcmp(val, e->scope, vlen) == 0)
        return 0;
    return idm__lease_scope_refuse(e->where, (const char *)val, vlen, e->scope);
}

/* The claim's first txn (see the comment at the top): the taken ids into t,
 * and the scope recorded or compared. Further pages of taken ids (more than
 * RANGE_PAGE) follow as kv/range calls. */
static int claim_view(etcd_be *e, taken_set *t)
{
    static const char path[] = "/v3/kv/txn";
    char from[MAX_KEY + 2], rq[RANGE_REQUEST_MAX];
    char body[2 * RANGE_REQUEST_MAX + 3 * sizeof e->scope_key64 + sizeof e->scope64 + 512];
    size_t fromlen, n = 0, nops;
    json_object *resp, *ops = NULL, *rr;
    bool ok = false, more = false;
    int rc;
    fromlen = (size_t)snprintf(from, sizeof from, "%s/workers/", e->prefix);
    range_request(e, "workers", from, fromlen, true, rq, sizeof rq);
    if (e->has_scope)
        snprintf(body, sizeof body,
                 "{\"compare\":[{\"target\":\"CREATE\",\"result\":\"EQUAL\",\"key\":\"%s\","
                 "\"create_revision\":\"0\"}],"
                 "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}},"
                 "{\"request_range\":%s}],"
                 "\"failure\":[{\"request_range\":{\"key\":\"%s\"}},{\"request_range\":%s}]}",
                 e->scope_key64, e->scope_key64, e->scope64, rq, e->scope_key64, rq);
    else
        snprintf(body, sizeof body, "{\"success\":[{\"request_range\":%s}]}", rq);
    rc = call_checked(e, path, body, &resp);
    if (rc != 0)
        return rc;
    nops = e->has_scope ? 2 : 1;
    /* Without a compare the txn always succeeds. */
    if (get_bool(resp, "succeeded", &ok) != 0 ||
        get_field(resp, "responses", json_type_array, &ops) != 0 || ops == NULL ||
        json_object_array_length(ops) != nops || (!e->has_scope && !ok))
        rc = garbage(e, path, "succeeded or responses");
    if (rc == 0 && e->has_scope) {
        json_object *op0 = json_object_array_get_idx(ops, 0);
        if (!ok)
            rc = scope_check(e, path, op0); /* recorded already */
        else if (op_member(op0, "response_put") == NULL)
            rc = garbage(e, path, "no response_put for the scope");
    }
    if (rc == 0) {
        rr = op_member(json_object_array_get_idx(ops, nops - 1), "response_range");
        if (rr == NULL)
            rc = garbage(e, path, "the taken ids' range");
        else
            rc = range_page(e, path, rr, note_taken, t, from, &fromlen, &more, &n);
    }
    json_object_put(resp);
    if (rc == 0 && more && n > 0)
        rc = range_from(e, "workers", true, note_taken, t, from, fromlen, 1);
    return rc;
}

/*
 * The answers ops to a claiming txn whose compare failed: refused for the
 * scope; else lost, unless the key is bound to our own lease already (an
 * earlier attempt's answer was lost): then *won, with the mark stored.
 */
static int claim_failed(etcd_be *e, const char *path, json_object *ops, uint32_t id,
                        idm_unix_ms want, bool *won, idm_unix_ms *mark)
{
    json_object *rr = op_member(json_object_array_get_idx(ops, 0), "response_range");
    json_object *kvs, *kv, *hwm = json_object_array_get_idx(ops, 1);
    int64_t lease, mrev;
    int rc = e->has_scope ? scope_check(e, path, json_object_array_get_idx(ops, 2)) : 0;
    if (rc != 0)
        return rc;
    if (rr == NULL || get_field(rr, "kvs", json_type_array, &kvs) != 0)
        return garbage(e, path, "the key's range");
    if (kvs == NULL || json_object_array_length(kvs) == 0 ||
        (kv = json_object_array_get_idx(kvs, 0)) == NULL ||
        !json_object_is_type(kv, json_type_object))
        return 0;
    if (get_i64(kv, "lease", &lease, NULL) != 0 || get_i64(kv, "mod_revision", &mrev, NULL) != 0)
        return garbage(e, path, "the key's lease or mod revision");
    if (lease != e->lease_id)
        return 0;
    if (mrev <= 0)
        return garbage(e, path, "the key's mod revision");
    e->generation = (uint64_t)mrev; /* its create revision: written once since */
    rc = mark_of(e, hwm, id, mark);
    if (rc == 0)
        rc = check_raised(e, hwm, id, want);
    *won = rc == 0;
    return rc;
}

/* The revision of a txn that wrote: its header's. */
static int txn_revision(etcd_be *e, const char *path, json_object *resp, uint64_t *rev)
{
    json_object *h = NULL;
    int64_t r = 0;
    if (get_field(resp, "header", json_type_object, &h) != 0 || h == NULL ||
        get_i64(h, "revision", &r, NULL) != 0 || r <= 0)
        return garbage(e, path, "the header's revision");
    *rev = (uint64_t)r;
    return 0;
}

/*
 * One claim attempt on id, in one txn (see the comment at the top), raising
 * the mark to want: *won with the previous mark, or not won (a race lost).
 * If an earlier attempt of ours went through but its answer was lost (a
 * timeout, then the next endpoint), the key is already bound to our lease:
 * won too, with the mark stored now as the previous one (it may be our own
 * raise: safe, at worst a wait). A scope changed since claim_view (only by
 * hand) refuses the claim.
 */
static int try_claim(etcd_be *e, uint32_t id, const char *value64, idm_unix_ms want, bool *won,
                     idm_unix_ms *mark)
{
    static const char path[] = "/v3/kv/txn";
    keys64 k;
    char body[sizeof k.raise + 3 * sizeof k.key64 + 3 * sizeof k.hwm64 + 1024 + 600 +
              2 * sizeof e->scope_key64 + sizeof e->scope64 + 200];
    char scope_cmp[sizeof e->scope_key64 + sizeof e->scope64 + 100];
    char scope_rng[sizeof e->scope_key64 + 40];
    json_object *resp, *ops = NULL;
    bool ok;
    int rc;
    *won = false;
    rc = keys_of(e, id, want, &k);
    if (rc != 0)
        return rc;
    scope_cmp[0] = scope_rng[0] = '\0';
    if (e->has_scope) {
        snprintf(scope_cmp, sizeof scope_cmp,
                 ",{\"target\":\"VALUE\",\"result\":\"EQUAL\",\"key\":\"%s\",\"value\":\"%s\"}",
                 e->scope_key64, e->scope64);
        snprintf(scope_rng, sizeof scope_rng, ",{\"request_range\":{\"key\":\"%s\"}}",
                 e->scope_key64);
    }
    if (snprintf(body, sizeof body,
                 "{\"compare\":[{\"target\":\"CREATE\",\"result\":\"EQUAL\",\"key\":\"%s\","
                 "\"create_revision\":\"0\"}%s],"
                 "\"success\":[{\"request_range\":{\"key\":\"%s\"}},{\"request_put\":{\"key\":"
                 "\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}},%s,{\"request_range\":{"
                 "\"key\":\"%s\"}}],"
                 "\"failure\":[{\"request_range\":{\"key\":\"%s\"}},{\"request_range\":{\"key\":"
                 "\"%s\"}}%s]}",
                 k.key64, scope_cmp, k.hwm64, k.key64, value64, e->lease_id, k.raise, k.hwm64,
                 k.key64, k.hwm64, scope_rng) >= (int)sizeof body)
        return idm_error_fail(IDM_EINVAL, "lease: claim request too long");
    rc = call_checked(e, path, body, &resp);
    if (rc == IDM_EIO && e->grpc_code == GRPC_NOT_FOUND)
        return idm_error_fail(IDM_EIO, "lease: etcd: the new lease expired during the claim");
    if (rc != 0)
        return rc;
    if (get_bool(resp, "succeeded", &ok) != 0 ||
        get_field(resp, "responses", json_type_array, &ops) != 0 || ops == NULL ||
        json_object_array_length(ops) != (ok ? 4u : e->has_scope ? 3u : 2u))
        rc = garbage(e, path, "succeeded or responses");
    if (rc == 0 && ok) {
        /* The txn's revision is the one that created the key. */
        rc = txn_revision(e, path, resp, &e->generation);
        if (rc == 0 && op_member(json_object_array_get_idx(ops, 1), "response_put") == NULL)
            rc = garbage(e, path, "no response_put");
        if (rc == 0)
            rc = mark_of(e, json_object_array_get_idx(ops, 0), id, mark);
        if (rc == 0)
            rc = check_raised(e, json_object_array_get_idx(ops, 3), id, want);
        *won = rc == 0;
    } else if (rc == 0) {
        rc = claim_failed(e, path, ops, id, want, won, mark);
    }
    json_object_put(resp);
    return rc;
}

/* The worker key's value, base64: who holds it, for how long. */
static int holder_value(const char *holder, int64_t granted_s, char *value64, size_t cap)
{
    json_object *v = json_object_new_object();
    const char *s;
    int rc = 0;
    if (v == NULL)
        return IDM_ENOMEM;
    json_object_object_add(v, "holder", json_object_new_string(holder));
    json_object_object_add(v, "ttl_ms", json_object_new_int64(granted_s * 1000));
    s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (s != NULL && strlen(s) <= 3 * (cap / 4) - 8)
        idm__etcd_b64_str(s, value64);
    else
        rc = idm_error_fail(IDM_EINVAL, "lease: holder too long");
    json_object_put(v);
    return rc;
}

static int eb_claim(void *be, uint32_t max_workers, int64_t ttl_ms, const char *holder,
                    const char *scope, idm_unix_ms want, uint32_t *worker,
                    idm_unix_ms *prev_mark, idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    etcd_be *e = be;
    taken_set t = {NULL, max_workers};
    char value64[400];
    int64_t granted_s = 0;
    int rc = 0;

    if (e->held)
        return idm_error_fail(IDM_EINVAL, "lease: this etcd handle holds a claim already");
    e->has_scope = scope != NULL;
    if (scope != NULL) {
        snprintf(e->scope, sizeof e->scope, "%s", scope);
        idm__etcd_b64_str(e->scope, e->scope64);
    }
    t.taken = calloc(max_workers, 1);
    if (t.taken == NULL)
        return IDM_ENOMEM;
    e->lease_id = 0;
    begin_op(e, ttl_ms * 2 / 3 > 1000 ? ttl_ms * 2 / 3 : 1000);
    for (int pass = 0; rc == 0 && pass < CLAIM_PASSES; pass++) {
        bool lost_race = false, any_free = false;
        memset(t.taken, 0, max_workers);
        /* The scope and the taken ids first: a claimant refused for its
         * scope, or finding every id held, has granted no lease. */
        rc = claim_view(e, &t);
        if (rc != 0)
            break;
        for (uint32_t id = 0; id < max_workers && !any_free; id++)
            any_free = !t.taken[id];
        if (!any_free)
            break;
        if (e->lease_id == 0) {
            rc = grant(e, ttl_ms, &granted_s);
            if (rc == 0)
                rc = holder_value(holder, granted_s, value64, sizeof value64);
            if (rc != 0)
                break;
        }
        for (uint32_t id = 0; id < max_workers; id++) {
            bool won;
            idm_unix_ms mark;
            if (t.taken[id])
                continue;
            rc = try_claim(e, id, value64, want, &won, &mark);
            if (rc != 0)
                break;
            if (won) {
                free(t.taken);
                e->held = true;
                e->worker = id;
                e->ttl_ms = granted_s * 1000;
                *worker = id;
                *prev_mark = mark;
                *recorded = want;
                *granted_ttl_ms = granted_s * 1000;
                return 0;
            }
            lost_race = true; /* someone else took it meanwhile: the next one */
        }
        if (rc != 0 || !lost_race)
            break;
    }
    free(t.taken);
    if (rc == 0)
        rc = idm_error_fail(IDM_EBUSY, "lease: no free worker id: all %u under etcd %s/workers/ "
                                       "are held",
                            (unsigned)max_workers, e->prefix);
    /* Give the lease back, if one was granted (and any key a lost answer
     * bound to it); if this fails too, it expires by itself. */
    if (e->lease_id != 0 && !e->foreign) {
        begin_op(e, e->ttl_ms / 3 > 500 ? e->ttl_ms / 3 : 500);
        rc = revoke_lease(e, rc);
    }
    e->lease_id = 0;
    return rc;
}

/* ----------------------------------------------------------------- renew */

static int keepalive(etcd_be *e, int64_t *ttl_s)
{
    static const char path[] = "/v3/lease/keepalive";
    char body[64];
    json_object *root, *res, *err;
    int64_t id, ttl;
    bool has_id, retried = false;
    int rc;
again:
    snprintf(body, sizeof body, "{\"ID\":\"%" PRId64 "\"}", e->lease_id);
    rc = call(e, path, body, &root);
    if (rc != 0)
        return rc;
    /* A stream: {"result":{...}} or {"error":{...}}. etcd 3.4 checks no
     * token here; one that does would say so in the stream: then once more
     * with a new token. */
    if (get_field(root, "error", json_type_object, &err) != 0 || err != NULL) {
        json_object *m = NULL, *c = NULL;
        json_object_object_get_ex(err, "message", &m);
        json_object_object_get_ex(err, "grpc_code", &c);
        if (e->user != NULL && !retried && m != NULL && c != NULL &&
            json_object_is_type(m, json_type_string) && json_object_is_type(c, json_type_int) &&
            token_refused((int)json_object_get_int(c), json_object_get_string(m))) {
            json_object_put(root);
            drop_token(e);
            retried = true;
            goto again;
        }
        rc = idm_error_fail(IDM_EIO, "lease: etcd %s%s: %.100s", e->ep, path,
                            m != NULL && json_object_is_type(m, json_type_string)
                                ? json_object_get_string(m)
                                : "an error");
        json_object_put(root);
        return rc;
    }
    if (get_field(root, "result", json_type_object, &res) != 0 || res == NULL)
        rc = garbage(e, path, "no result");
    if (rc == 0)
        rc = check_header(e, res, path);
    if (rc == 0 && (get_i64(res, "ID", &id, &has_id) != 0 || get_i64(res, "TTL", &ttl, NULL) != 0))
        rc = garbage(e, path, "ID or TTL");
    if (rc == 0 && (!has_id || id != e->lease_id))
        rc = garbage(e, path, "another lease's ID");
    if (rc == 0 && ttl > IDM__ETCD_MAX_TTL_S)
        rc = garbage(e, path, "TTL out of range");
    if (rc == 0 && ttl <= 0)
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: etcd lease %" PRId64 " of worker id %u expired or was "
                            "revoked: the claim is lost",
                            e->lease_id, (unsigned)e->worker);
    json_object_put(root);
    if (rc == 0)
        *ttl_s = ttl;
    return rc;
}

/* If <prefix>/workers/<id> is still bound to our lease and was last written
 * by our claim or resume (its mod revision is our generation: a resume of
 * a copy of our handle elsewhere re-puts it): raise the mark to mark
 * (renewal), or set it (release); else IDM_ELEASE. */
static int write_mark(etcd_be *e, idm_unix_ms mark, bool raise)
{
    static const char path[] = "/v3/kv/txn";
    keys64 k;
    char cmp[2 * sizeof k.key64 + 200];
    char body[sizeof k.raise + sizeof cmp + 2 * sizeof k.hwm64 + sizeof k.val64 + 512];
    json_object *resp, *ops = NULL;
    bool ok;
    int rc = keys_of(e, e->worker, mark, &k), n;
    if (rc != 0)
        return rc;
    snprintf(cmp, sizeof cmp,
             "{\"target\":\"LEASE\",\"result\":\"EQUAL\",\"key\":\"%s\",\"lease\":\"%" PRId64
             "\"},{\"target\":\"MOD\",\"result\":\"EQUAL\",\"key\":\"%s\","
             "\"mod_revision\":\"%" PRIu64 "\"}",
             k.key64, e->lease_id, k.key64, e->generation);
    if (raise)
        n = snprintf(body, sizeof body,
                     "{\"compare\":[%s],\"success\":[%s,{\"request_range\":{\"key\":\"%s\"}}]}",
                     cmp, k.raise, k.hwm64);
    else
        n = snprintf(body, sizeof body,
                     "{\"compare\":[%s],\"success\":[{\"request_put\":{\"key\":\"%s\","
                     "\"value\":\"%s\"}}]}",
                     cmp, k.hwm64, k.val64);
    if (n < 0 || (size_t)n >= sizeof body)
        return idm_error_fail(IDM_EINVAL, "lease: etcd request too long");
    rc = call_checked(e, path, body, &resp);
    if (rc != 0)
        return rc;
    if (get_bool(resp, "succeeded", &ok) != 0)
        rc = garbage(e, path, "succeeded");
    if (rc == 0 && !ok)
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: etcd %s was deleted, is bound to another lease or was "
                            "written since our claim (claimed by another holder, or our claim "
                            "resumed elsewhere): the claim is lost",
                            k.key);
    if (rc == 0 && raise &&
        (get_field(resp, "responses", json_type_array, &ops) != 0 || ops == NULL ||
         json_object_array_length(ops) != 2))
        rc = garbage(e, path, "responses");
    if (rc == 0 && raise)
        rc = check_raised(e, json_object_array_get_idx(ops, 1), e->worker, mark);
    json_object_put(resp);
    return rc;
}

static int eb_renew(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms)
{
    etcd_be *e = be;
    int64_t ttl_s = 0;
    int rc;
    if (!e->held)
        return idm_error_fail(IDM_ELEASE, "lease: no claim to renew");
    begin_op(e, e->ttl_ms / 3 > 300 ? e->ttl_ms / 3 : 300);
    rc = keepalive(e, &ttl_s);
    if (rc == 0)
        rc = write_mark(e, mark, true);
    if (rc == 0)
        *granted_ttl_ms = ttl_s * 1000;
    return rc;
}

/* --------------------------------------------------------------- release */

static int eb_release(void *be, idm_unix_ms mark)
{
    etcd_be *e = be;
    int rc;
    if (!e->held)
        return 0;
    begin_op(e, e->ttl_ms / 3 > 300 ? e->ttl_ms / 3 : 300);
    rc = write_mark(e, mark, false);
    /* Revoke even if the mark was refused (the key is not ours then; our
     * lease binds nothing of anyone else's), but never on another cluster. */
    if (!e->foreign)
        rc = revoke_lease(e, rc);
    e->held = false;
    return rc;
}

/* ------------------------------------------------------------------ list */

typedef struct list_state {
    idm_lease_entry *all; /* indexed by id */
    uint8_t *seen;
    uint32_t max;
} list_state;

static int list_worker(etcd_be *e, json_object *kv, const unsigned char *key, size_t klen,
                       void *ud)
{
    list_state *s = ud;
    unsigned char val[1024];
    size_t vlen;
    int64_t id = id_of_key(e, "workers", key, klen, s->max);
    if (id < 0)
        return 0;
    s->seen[id] = 1;
    s->all[id].held = 1;
    snprintf(s->all[id].holder, sizeof s->all[id].holder, "?");
    if (get_bytes(kv, "value", val, sizeof val, &vlen) == 0 && vlen > 0) {
        json_object *o = json_tokener_parse((const char *)val), *h;
        if (o != NULL && json_object_is_type(o, json_type_object) &&
            json_object_object_get_ex(o, "holder", &h) && json_object_is_type(h, json_type_string))
            snprintf(s->all[id].holder, sizeof s->all[id].holder, "%s", json_object_get_string(h));
        json_object_put(o);
    }
    return 0;
}

static int list_mark(etcd_be *e, json_object *kv, const unsigned char *key, size_t klen, void *ud)
{
    list_state *s = ud;
    unsigned char val[64];
    size_t vlen;
    int64_t id = id_of_key(e, "hwm", key, klen, s->max);
    if (id < 0)
        return 0;
    s->seen[id] = 1;
    if (get_bytes(kv, "value", val, sizeof val, &vlen) != 0 ||
        parse_mark(val, vlen, &s->all[id].mark_ms) != 0) {
        s->all[id].mark_ms = 0;
        snprintf(s->all[id].holder, sizeof s->all[id].holder, "(unreadable mark)");
    }
    return 0;
}

static int eb_list(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count)
{
    etcd_be *e = be;
    list_state s = {NULL, NULL, max_workers};
    size_t n = 0;
    int rc;
    s.all = calloc(max_workers, sizeof *s.all);
    s.seen = calloc(max_workers, 1);
    if (s.all == NULL || s.seen == NULL) {
        free(s.all);
        free(s.seen);
        return IDM_ENOMEM;
    }
    begin_op(e, e->ttl_ms > 2000 ? e->ttl_ms : 2000);
    rc = range_all(e, "workers", false, list_worker, &s);
    if (rc == 0)
        rc = range_all(e, "hwm", false, list_mark, &s);
    if (rc == 0) {
        for (uint32_t id = 0; id < max_workers; id++) {
            if (!s.seen[id])
                continue;
            s.all[n] = s.all[id];
            s.all[n].worker = id;
            n++;
        }
    }
    free(s.seen);
    if (rc != 0 || n == 0) {
        free(s.all);
        s.all = NULL;
    }
    *entries = s.all;
    *count = rc == 0 ? n : 0;
    return rc;
}

/* ----------------------------------------------------------------- scope */

static int eb_scope(void *be, char *buf, size_t cap)
{
    static const char path[] = "/v3/kv/range";
    etcd_be *e = be;
    char body[sizeof e->scope_key64 + 32];
    unsigned char val[2 * IDM_LEASE_SCOPE_MAX];
    size_t vlen;
    json_object *resp, *kvs = NULL, *kv = NULL;
    int rc;
    buf[0] = '\0';
    begin_op(e, e->ttl_ms > 2000 ? e->ttl_ms : 2000);
    snprintf(body, sizeof body, "{\"key\":\"%s\"}", e->scope_key64);
    rc = call_checked(e, path, body, &resp);
    if (rc != 0)
        return rc;
    if (get_field(resp, "kvs", json_type_array, &kvs) != 0)
        rc = garbage(e, path, "kvs");
    else if (only_kv(kvs, e->scope_key, &kv) != 0)
        rc = garbage(e, path, "the scope's key");
    else if (kv != NULL && get_bytes(kv, "value", val, sizeof val, &vlen) != 0)
        rc = garbage(e, path, "the scope's value");
    else if (kv != NULL)
        rc = idm__lease_scope_text(e->where, (const char *)val, vlen, buf, cap);
    json_object_put(resp);
    return rc;
}

/* The claim's fencing token: the worker key's revision as of the claim or
 * the resume (see the comment at the top). */
static uint64_t eb_generation(void *be)
{
    const etcd_be *e = be;
    return e->held ? e->generation : 0;
}

/* -------------------------------------------------------------- reattach */

/*
 * A claim's handle: "etcd:lease=<lease id>,rev=<the worker key's mod
 * revision as of the claim or the last resume: the generation>,
 * cluster=<cluster id>", the lease id in lowercase hex (as etcdctl shows
 * it), the others in decimal (as etcd's answers give them). A claim writes
 * the key once, so its mod revision is its create revision: a handle saved
 * by a build that named the create revision here reads the same. The lease
 * proves the claim (nothing but our claim or resume binds a worker key to
 * it); the revision also tells a key created or written again since, and
 * the cluster id a cluster re-created with a wiped data directory (or a
 * misrouted endpoint), where the same lease id would mean nothing. It is a
 * bearer proof that works once: two processes that present it (a state
 * directory copied, or restored from a snapshot twice) are told apart by
 * who comes first, since a resume moves the key to a new lease (see
 * eb_reattach).
 */
#define HANDLE_FORM "etcd:lease=HEX,rev=N,cluster=N"

static int eb_handle(void *be, char *buf, size_t len)
{
    const etcd_be *e = be;
    int n;
    buf[0] = '\0';
    if (!e->held || !e->have_cluster)
        return idm_error_fail(IDM_EINVAL, "lease: this etcd handle holds no claim");
    n = snprintf(buf, len, "etcd:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64,
                 (uint64_t)e->lease_id, e->generation, e->cluster_id);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return idm_error_fail(IDM_EINVAL,
                              "lease: an etcd claim's handle is %d bytes; the buffer holds %zu",
                              n, len - 1);
    }
    return 0;
}

/* Strict lowercase hex of n bytes: 1 to 16 digits, no leading zero. */
static int hex_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 16 || s[0] == '0')
        return -1;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(s[i]);
        if (d < 0 || (s[i] >= 'A' && s[i] <= 'F'))
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* At *p: name, then a nonzero number (hex or decimal) that ends at stop
 * (',' or the end); *p moves past it. 0, or -1 if it is not so. */
static int handle_field(const char **p, const char *name, char stop, bool hex, uint64_t *out)
{
    size_t nl = strlen(name), n;
    if (strncmp(*p, name, nl) != 0)
        return -1;
    *p += nl;
    n = strcspn(*p, ",");
    if ((*p)[n] != stop || (hex ? hex_u64(*p, n, out) : dec_u64(*p, n, out)) != 0 || *out == 0)
        return -1;
    *p += n + (stop != '\0');
    return 0;
}

/* A handle from eb_handle into its parts; IDM_EINVAL if it is none. The
 * text is never shown: a handle of another coordinator may hold a secret
 * (ZooKeeper's session password). */
static int parse_handle(const char *h, uint64_t *lease, uint64_t *rev, uint64_t *cluster)
{
    const char *p = h != NULL && strncmp(h, "etcd:", 5) == 0 ? h + 5 : NULL;
    if (p == NULL || handle_field(&p, "lease=", ',', true, lease) != 0 ||
        handle_field(&p, "rev=", ',', false, rev) != 0 || *rev > (uint64_t)INT64_MAX ||
        handle_field(&p, "cluster=", '\0', false, cluster) != 0)
        return idm_error_fail(IDM_EINVAL,
                              "lease: the saved handle is not an etcd claim's (" HANDLE_FORM
                              "): from another coordinator, or damaged");
    return 0;
}

/* The worker key in a range answer op (keys only): *kv NULL if it is not
 * there; else its lease and mod revision (and create revision, for a
 * detail). */
typedef struct key_seen {
    json_object *kv;
    int64_t lease, mod, create;
} key_seen;

static int key_seen_in(etcd_be *e, const char *path, json_object *op, const char *key,
                       key_seen *s)
{
    json_object *rr = op_member(op, "response_range"), *kvs = NULL;
    memset(s, 0, sizeof *s);
    if (rr == NULL || get_field(rr, "kvs", json_type_array, &kvs) != 0 ||
        only_kv(kvs, key, &s->kv) != 0)
        return garbage(e, path, "the worker key's range");
    if (s->kv != NULL &&
        (get_i64(s->kv, "lease", &s->lease, NULL) != 0 ||
         get_i64(s->kv, "mod_revision", &s->mod, NULL) != 0 ||
         get_i64(s->kv, "create_revision", &s->create, NULL) != 0 || s->mod <= 0))
        return garbage(e, path, "the worker key's lease or revisions");
    return 0;
}

/* Why a reattach's compare failed, from the worker key as the txn saw it
 * (s: not bound to our new lease): IDM_ELEASE saying how the claim went; a
 * malformed answer if the key is just as the handle says (the answer
 * contradicts the compare). */
static int reattach_lost(etcd_be *e, const char *path, const key_seen *s, const char *key,
                         int64_t saved, uint64_t rev)
{
    if (s->kv == NULL)
        return idm_error_fail(IDM_ELEASE,
                              "lease: etcd %s is gone (etcd lease %" PRIx64 " expired or was "
                              "revoked, or the key was deleted): the saved claim is lost",
                              key, (uint64_t)saved);
    if (s->lease != saved)
        return idm_error_fail(IDM_ELEASE,
                              "lease: etcd %s is bound to etcd lease %" PRIx64 ", not the saved "
                              "%" PRIx64 " (claimed by another holder, or the saved claim "
                              "resumed again, since): the saved claim is lost",
                              key, (uint64_t)s->lease, (uint64_t)saved);
    if (s->create > (int64_t)rev)
        return idm_error_fail(IDM_ELEASE,
                              "lease: etcd %s was created again since the saved claim (revision "
                              "%" PRId64 ", not %" PRIu64 "): the saved claim is lost",
                              key, s->create, rev);
    if (s->mod != (int64_t)rev)
        return idm_error_fail(IDM_ELEASE,
                              "lease: etcd %s was written again since the saved claim (revision "
                              "%" PRId64 ", not %" PRIu64 "): the saved claim is lost",
                              key, s->mod, rev);
    return garbage(e, path, "a failed compare of a key that is as it compared");
}

/*
 * The reattach's txn (see eb_reattach), e->lease_id being the new lease: if
 * <prefix>/workers/<id> is bound to the saved lease and was last written
 * at the saved revision (and the scope key holds our scope), put it again
 * bound to the new lease with our holder's value (value64), raise the mark
 * to want and read it back; else read the worker key, the mark and the
 * scope to say why not, and (with a scope) in a nested txn do the same as
 * on success if the only difference is that no scope is recorded,
 * recording ours (as a claim does). The revision the key now has (the
 * txn's) into *newrev. A key found bound to the new lease already is this
 * txn applied once before, its answer lost (a timeout, then the next
 * endpoint): resumed, at the key's revision, with the mark stored then.
 */
static int reattach_txn(etcd_be *e, int64_t saved, uint64_t rev, const char *value64,
                        idm_unix_ms want, idm_unix_ms *stored, uint64_t *newrev)
{
    static const char path[] = "/v3/kv/txn";
    keys64 k;
    char cmp[2 * sizeof k.key64 + 200];
    char put[sizeof k.key64 + 512];
    char body[2 * sizeof k.raise + 2 * sizeof cmp + 2 * sizeof put + 4 * sizeof k.hwm64 +
              sizeof k.key64 + 4 * sizeof e->scope_key64 + 2 * sizeof e->scope64 + 1024];
    json_object *resp, *ops = NULL;
    bool ok = false;
    int rc = keys_of(e, e->worker, want, &k), n;
    if (rc != 0)
        return rc;
    snprintf(cmp, sizeof cmp,
             "{\"target\":\"LEASE\",\"result\":\"EQUAL\",\"key\":\"%s\",\"lease\":\"%" PRId64
             "\"},{\"target\":\"MOD\",\"result\":\"EQUAL\",\"key\":\"%s\","
             "\"mod_revision\":\"%" PRIu64 "\"}",
             k.key64, saved, k.key64, rev);
    n = snprintf(put, sizeof put,
                 "{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":\"%" PRId64 "\"}}",
                 k.key64, value64, e->lease_id);
    if (n < 0 || (size_t)n >= sizeof put)
        return idm_error_fail(IDM_EINVAL, "lease: etcd request too long");
    if (e->has_scope)
        n = snprintf(body, sizeof body,
                     "{\"compare\":[%s,{\"target\":\"VALUE\",\"result\":\"EQUAL\",\"key\":\"%s\","
                     "\"value\":\"%s\"}],"
                     "\"success\":[%s,%s,{\"request_range\":{\"key\":\"%s\"}}],"
                     "\"failure\":[{\"request_range\":{\"key\":\"%s\",\"keys_only\":true}},"
                     "{\"request_range\":{\"key\":\"%s\"}},{\"request_range\":{\"key\":\"%s\"}},"
                     "{\"request_txn\":{\"compare\":[%s,{\"target\":\"CREATE\",\"result\":"
                     "\"EQUAL\",\"key\":\"%s\",\"create_revision\":\"0\"}],"
                     "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}},%s,%s,"
                     "{\"request_range\":{\"key\":\"%s\"}}]}}]}",
                     cmp, e->scope_key64, e->scope64, put, k.raise, k.hwm64, k.key64,
                     e->scope_key64, k.hwm64, cmp, e->scope_key64, e->scope_key64, e->scope64,
                     put, k.raise, k.hwm64);
    else
        n = snprintf(body, sizeof body,
                     "{\"compare\":[%s],\"success\":[%s,%s,{\"request_range\":{\"key\":\"%s\"}}],"
                     "\"failure\":[{\"request_range\":{\"key\":\"%s\",\"keys_only\":true}},"
                     "{\"request_range\":{\"key\":\"%s\"}}]}",
                     cmp, put, k.raise, k.hwm64, k.key64, k.hwm64);
    if (n < 0 || (size_t)n >= sizeof body)
        return idm_error_fail(IDM_EINVAL, "lease: etcd request too long");
    rc = call_checked(e, path, body, &resp);
    if (rc == IDM_EIO && e->grpc_code == GRPC_NOT_FOUND)
        return idm_error_fail(IDM_EIO, "lease: etcd: the new lease expired during the reattach");
    if (rc != 0)
        return rc;
    if (get_bool(resp, "succeeded", &ok) != 0 ||
        get_field(resp, "responses", json_type_array, &ops) != 0 || ops == NULL ||
        json_object_array_length(ops) != (ok ? 3u : e->has_scope ? 4u : 2u))
        rc = garbage(e, path, "succeeded or responses");
    if (rc == 0 && ok) {
        rc = txn_revision(e, path, resp, newrev);
        if (rc == 0 && op_member(json_object_array_get_idx(ops, 0), "response_put") == NULL)
            rc = garbage(e, path, "no response_put");
        if (rc == 0)
            rc = check_raised_to(e, json_object_array_get_idx(ops, 2), e->worker, want, stored);
    } else if (rc == 0) {
        json_object *in = NULL, *iops = NULL, *rr, *kvs = NULL, *kv = NULL;
        bool iok = false;
        key_seen s;
        if (e->has_scope) {
            in = op_member(json_object_array_get_idx(ops, 3), "response_txn");
            if (in == NULL || get_bool(in, "succeeded", &iok) != 0 ||
                get_field(in, "responses", json_type_array, &iops) != 0 ||
                (iok && (iops == NULL || json_object_array_length(iops) != 4 ||
                         op_member(json_object_array_get_idx(iops, 0), "response_put") == NULL ||
                         op_member(json_object_array_get_idx(iops, 1), "response_put") == NULL)))
                rc = garbage(e, path, "the nested txn");
        }
        if (rc == 0 && iok) {
            rc = txn_revision(e, path, resp, newrev);
            if (rc == 0)
                rc = check_raised_to(e, json_object_array_get_idx(iops, 3), e->worker, want,
                                     stored);
        } else if (rc == 0) {
            rc = key_seen_in(e, path, json_object_array_get_idx(ops, 0), k.key, &s);
            if (rc == 0 && s.kv != NULL && s.lease == e->lease_id) {
                /* Ours already: an earlier send of this txn went through. */
                *newrev = (uint64_t)s.mod;
                rc = check_raised_to(e, json_object_array_get_idx(ops, e->has_scope ? 2 : 1),
                                     e->worker, want, stored);
            } else if (rc == 0) {
                /* Refused: another scope (first, as a claim would be), else
                 * the worker key says how the claim went. */
                if (e->has_scope) {
                    rr = op_member(json_object_array_get_idx(ops, 1), "response_range");
                    if (rr == NULL || get_field(rr, "kvs", json_type_array, &kvs) != 0 ||
                        only_kv(kvs, e->scope_key, &kv) != 0)
                        rc = garbage(e, path, "the scope's range");
                    else if (kv != NULL)
                        rc = scope_check(e, path, json_object_array_get_idx(ops, 1));
                }
                if (rc == 0)
                    rc = reattach_lost(e, path, &s, k.key, saved, rev);
            }
        }
    }
    json_object_put(resp);
    return rc;
}

/*
 * Resume the claim a handle names (backend.h), in two round trips: a new
 * lease granted (for the TTL asked for now; etcd may raise it), then the
 * txn above, which moves the worker key from the saved lease to the new one
 * if it is still bound to the saved lease and was last written at the saved
 * revision (and the scope is ours), and raises the mark, reading it back.
 * A saved claim so resumes once: the key's lease and revision change, so a
 * second reattach with the same handle (a copied or snapshot-restored state
 * directory) is refused, and a holder still alive under the saved lease
 * finds the key bound to another lease (and written since) at its next
 * renewal: IDM_ELEASE there. The new handle (eb_handle) names the new lease
 * and revision, and the generation is that revision. The saved lease binds
 * nothing from then on: it runs out by itself (or is kept alive by a
 * holder that is about to learn its claim is lost, and then runs out).
 *
 * The key bound to the saved lease proves the lease was not revoked (etcd
 * deletes a lease's keys as it revokes it), so no other claimant can have
 * held the id since; a lease whose TTL ran out but which etcd has not
 * revoked yet may be resumed: every holder under it has stopped by then
 * (each stops at its renewal's send time plus the TTL, before etcd's
 * expiry). The saved cluster id is taken as the first answer's, so an
 * answer from another cluster is a lost claim, as on any handle. Only etcd
 * saying the key is gone or not as saved, or another cluster answering, is
 * IDM_ELEASE: nothing is changed then but the new lease, revoked again (a
 * third round trip) if not from another cluster. An unknown outcome
 * revokes it too: should the txn have gone through, its key goes with it
 * and the saved claim is lost (a new claim follows), never held twice.
 * open makes no round trip: a coordinator that is down shows here, as
 * IDM_EIO within the claim's budget (2/3 of the TTL, each request at most
 * TTL/6).
 */
static int eb_reattach(void *be, uint32_t worker, const char *handle, int64_t ttl_ms,
                       const char *holder, const char *scope, idm_unix_ms mark,
                       idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    etcd_be *e = be;
    uint64_t lease = 0, rev = 0, cluster = 0, newrev = 0;
    int64_t granted_s = 0;
    idm_unix_ms stored = 0;
    char value64[400];
    int rc;
    if (e->held)
        return idm_error_fail(IDM_EINVAL, "lease: this etcd handle holds a claim already");
    if (worker >= IDM_LEASE_WORKERS_MAX)
        return idm_error_fail(IDM_EINVAL, "lease: worker id %u is out of range",
                              (unsigned)worker);
    rc = parse_handle(handle, &lease, &rev, &cluster);
    if (rc != 0)
        return rc;
    if (e->have_cluster && e->cluster_id != cluster)
        return idm_error_fail(IDM_ELEASE,
                              "lease: etcd cluster %" PRIu64 " answers here, not the saved "
                              "claim's %" PRIu64 " (re-created, or a misrouted endpoint): the "
                              "saved claim is lost",
                              e->cluster_id, cluster);
    e->cluster_id = cluster;
    e->have_cluster = true;
    e->has_scope = scope != NULL;
    if (scope != NULL) {
        snprintf(e->scope, sizeof e->scope, "%s", scope);
        idm__etcd_b64_str(e->scope, e->scope64);
    }
    e->lease_id = 0;
    e->worker = worker;
    if (ttl_ms > 0)
        e->ttl_ms = ttl_ms;
    begin_op(e, e->ttl_ms * 2 / 3 > 1000 ? e->ttl_ms * 2 / 3 : 1000);
    rc = grant(e, e->ttl_ms, &granted_s);
    if (rc == 0)
        rc = holder_value(holder, granted_s, value64, sizeof value64);
    if (rc == 0)
        rc = reattach_txn(e, (int64_t)lease, rev, value64, mark, &stored, &newrev);
    if (rc != 0) {
        if (e->lease_id != 0 && !e->foreign) {
            begin_op(e, e->ttl_ms / 3 > 500 ? e->ttl_ms / 3 : 500);
            rc = revoke_lease(e, rc);
        }
        e->lease_id = 0;
        return rc;
    }
    e->held = true;
    e->generation = newrev;
    e->ttl_ms = granted_s * 1000;
    *recorded = stored;
    *granted_ttl_ms = granted_s * 1000;
    return 0;
}

const idm__lease_backend idm__lease_etcd = {
    eb_open,  eb_claim, eb_renew,      eb_release, eb_list,
    eb_scope, eb_free,  eb_generation, eb_handle,  eb_reattach,
};

const idm__lease_backend idm__lease_etcds = {
    eb_open_tls, eb_claim, eb_renew,      eb_release, eb_list,
    eb_scope,    eb_free,  eb_generation, eb_handle,  eb_reattach,
};
