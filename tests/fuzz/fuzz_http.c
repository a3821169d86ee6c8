/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: idmintd's request handler (src/server/handler.c, linked with
 * idmintd's code but main.c; the libmicrohttpd layer is never started). The
 * input is split at '\n' into method, path, query and Authorization value (a
 * missing part is NULL), each NUL-terminated, and handled against one app built on
 * the first call: the twitter layout, datacenter 1 worker 2, the system
 * clock, no lease, an in-memory ticket store holding "orders"; a bearer token
 * ("fuzz-token-0123456789") is required on every other call, so both the open
 * and the authenticated paths are reached. Whatever the request, the
 * answer must have a known status, a body NUL-terminated at its length, a
 * well-formed error body for a failure, and for a 200 on /v1/ an id list
 * (JSON or text) or, for /v1/decode/, a JSON object. And the properties
 * that matter (each an abort, as libFuzzer expects):
 *   - with the token set, a request without exactly "Bearer <token>" (the
 *     scheme in any case) is 401, or 405 for a method never served; one
 *     with it is never 401, nor is any request while no token is set;
 *   - a 200 with ids holds exactly count of them: the request's count (a
 *     plain decimal from 1 to count-max, or it would not be a 200), 1
 *     without one;
 *   - no id is handed out twice in a run: every id answered (by kind:
 *     Snowflake, segment, UUIDv7, UUIDv4, ULID; Leaf's endpoints count as
 *     Snowflake and segment) is checked against the last 2^16 handed out.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <idmint/idmint.h>

#include "app.h"
#include "config.h"
#include "memstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_TOKEN "fuzz-token-0123456789"

/* ------------------------------------------------------------- the app */

static idmd_config g_cfg;
static idmd_app g_app;
static idm_test_memstore *g_store;
static unsigned long g_calls;

static void fz_die(const char *what)
{
    fprintf(stderr, "fuzz_http: %s: %s\n", what, idm_error_detail());
    abort();
}

static void fz_setup(void)
{
    idm_snowflake_opts o;
    idmd_config_defaults(&g_cfg);
    g_app.cfg = &g_cfg;
    g_app.clock = idm_clock_system();
    if (idm_layout_preset(&g_app.layout, "twitter") != 0)
        fz_die("layout");
    idm_snowflake_opts_init(&o);
    o.layout = g_app.layout;
    o.clock = g_app.clock;
    if (idm_snowflake_opts_node(&o, "datacenter", 1) != 0 ||
        idm_snowflake_opts_node(&o, "worker", 2) != 0 || idm_snowflake_open(&g_app.gen, &o) != 0)
        fz_die("snowflake");
    g_app.lease = NULL;
    if (idm_uuid7_gen_new(&g_app.uuid7, g_app.clock, NULL) != 0 ||
        idm_ulid_gen_new(&g_app.ulid, g_app.clock, NULL, true) != 0)
        fz_die("uuid7/ulid");
    g_store = idm_test_memstore_new(&g_app.store);
    if (g_store == NULL || idm_store_create(g_app.store, "orders", 1, 0, 1) != 0)
        fz_die("store");
    if (idmd_seqs_init(&g_app) != 0)
        fz_die("sequence table");
}

static void fz_check(bool ok, const char *what, const idmd_request *rq, const idmd_response *rs)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz_http: %s\n  method %s\n  path %s\n  query %s\n  auth %s\n  -> %d %s\n",
            what, rq->method ? rq->method : "(null)", rq->path ? rq->path : "(null)",
            rq->query ? rq->query : "(null)", rq->authorization ? rq->authorization : "(null)",
            rs->status, rs->body ? rs->body : "(null)");
    abort();
}

/* ------------------------------------------------------ ids handed out */

/* The property checks below are left out of the coverage libFuzzer steers
 * by (clang's no_sanitize("coverage")): their loops over ids and digits
 * would otherwise reward ever longer counts, making runs slow without
 * reaching any more of the handler. */
#if defined(__clang__)
#define FZ_UNSTEERED __attribute__((no_sanitize("coverage")))
#else
#define FZ_UNSTEERED
#endif

/* The last SEEN_N ids handed out, as "K:id" (K the kind's letter), in a
 * ring, and an open-addressed table of them (linear probing; a slot holds
 * a ring index + 1, 0 if empty; an id leaving the ring leaves the table by
 * backward-shift deletion, so no tombstones build up). */
#define SEEN_N (1u << 16)
#define SEEN_SLOTS (1u << 17)
#define SEEN_LEN 48

static char g_seen[SEEN_N][SEEN_LEN];
static uint32_t g_slot[SEEN_SLOTS];
static uint32_t g_seen_n, g_seen_at;

FZ_UNSTEERED static uint32_t seen_home(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    h ^= h >> 29;
    return (uint32_t)h & (SEEN_SLOTS - 1);
}

/* The slot holding s, or the empty slot where it would go. */
FZ_UNSTEERED static uint32_t seen_find(const char *s)
{
    uint32_t i = seen_home(s);
    while (g_slot[i] != 0 && strcmp(g_seen[g_slot[i] - 1], s) != 0)
        i = (i + 1) & (SEEN_SLOTS - 1);
    return i;
}

/* Take ring entry r out of the table. */
FZ_UNSTEERED static void seen_forget(uint32_t r)
{
    uint32_t i = seen_find(g_seen[r]), j = i;
    g_slot[i] = 0;
    for (;;) {
        uint32_t k;
        bool stays;
        j = (j + 1) & (SEEN_SLOTS - 1);
        if (g_slot[j] == 0)
            return;
        k = seen_home(g_seen[g_slot[j] - 1]);
        /* the entry at j stays if its home is cyclically in (i, j] */
        stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            g_slot[i] = g_slot[j];
            g_slot[j] = 0;
            i = j;
        }
    }
}

/* Record id (n bytes) of kind: 1, or 0 if it is among the last SEEN_N,
 * or -1 if it is longer than any id. */
FZ_UNSTEERED static int seen_new(char kind, const char *id, size_t n)
{
    char key[SEEN_LEN];
    uint32_t at;
    if (n + 3 > sizeof key)
        return -1;
    key[0] = kind;
    key[1] = ':';
    memcpy(key + 2, id, n);
    key[n + 2] = '\0';
    if (g_seen_n == SEEN_N)
        seen_forget(g_seen_at); /* the oldest goes */
    at = seen_find(key);
    if (g_slot[at] != 0)
        return 0;
    memcpy(g_seen[g_seen_at], key, n + 3);
    g_slot[at] = g_seen_at + 1;
    g_seen_at = (g_seen_at + 1) % SEEN_N;
    if (g_seen_n < SEEN_N)
        g_seen_n++;
    return 1;
}

/* The kind of ids path hands out (its letter), or 0 for none. */
FZ_UNSTEERED static char ids_kind(const char *path)
{
    if (strcmp(path, "/v1/snowflake") == 0 || strncmp(path, "/api/snowflake/get/", 19) == 0)
        return 'S';
    if (strncmp(path, "/v1/segment/", 12) == 0 || strncmp(path, "/api/segment/get/", 17) == 0)
        return 'Q';
    if (strcmp(path, "/v1/uuid7") == 0)
        return '7';
    if (strcmp(path, "/v1/uuid4") == 0)
        return '4';
    if (strcmp(path, "/v1/ulid") == 0)
        return 'U';
    return 0;
}

/* The count a request asks for: its count parameter as a plain decimal
 * from 1 to max (0 if it is anything else), 1 if it has none. */
FZ_UNSTEERED static uint32_t asked_count(const char *query, uint32_t max)
{
    const char *q = query;
    while (q != NULL && *q != '\0') {
        size_t len = strcspn(q, "&");
        if (len >= 6 && memcmp(q, "count=", 6) == 0) {
            uint64_t v = 0;
            if (len == 6 || q[6] == '0')
                return 0;
            for (size_t i = 6; i < len; i++) {
                if (q[i] < '0' || q[i] > '9' || v > max)
                    return 0;
                v = v * 10 + (uint64_t)(q[i] - '0');
            }
            return v <= max ? (uint32_t)v : 0;
        }
        q += len;
        if (*q == '&')
            q++;
    }
    return 1;
}

/* Each id in a 200's body: JSON {"ids":["a",...]}, text lines, or (bare:
 * Leaf's endpoints) the body itself; each must be new for its kind. The
 * number of them, or -1 on a repeat, -2 for an id longer than any. */
FZ_UNSTEERED static long ids_each(const idmd_response *rs, char kind, bool bare)
{
    const char *p = rs->body, *end = rs->body + rs->len;
    long n = 0;
    int r;
    if (bare)
        return (r = seen_new(kind, p, rs->len)) == 1 ? 1 : r - 1;
    if (strncmp(rs->content_type, "text/plain", 10) == 0) {
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
            if ((r = seen_new(kind, p, len)) != 1)
                return r - 1;
            n++;
            p += len + 1;
        }
        return n;
    }
    p += 8; /* {"ids":[ */
    while (p < end && *p == '"') {
        const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
        if (q == NULL)
            break;
        if ((r = seen_new(kind, p + 1, (size_t)(q - p - 1))) != 1)
            return r - 1;
        n++;
        p = q + 1;
        if (p < end && *p == ',')
            p++;
    }
    return n;
}

/* ----------------------------------------------------------- the checks */

/* A JSON id list {"ids":["..",...]}\n or text lines, each id of the
 * characters ids are made of. */
static bool ids_ok(const idmd_response *rs)
{
    const char *p = rs->body;
    bool text = strncmp(rs->content_type, "text/plain", 10) == 0;
    if (text) {
        if (rs->len == 0)
            return false;
        for (; *p != '\0'; p++)
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
                  (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '\n'))
                return false;
        return rs->body[rs->len - 1] == '\n' && rs->body[0] != '\n';
    }
    if (strncmp(p, "{\"ids\":[\"", 9) != 0)
        return false;
    return rs->len >= 12 && strcmp(rs->body + rs->len - 4, "\"]}\n") == 0;
}

/* Whether path is the web console's (/ui, /ui/, /ui/FILE): served without
 * the token. */
static bool ui_path(const char *path)
{
    return path != NULL && (strcmp(path, "/ui") == 0 ||
                            (strncmp(path, "/ui/", 4) == 0 && strchr(path + 4, '/') == NULL));
}

/* The properties that matter: the token, the count, no id twice. */
FZ_UNSTEERED static void check_properties(const idmd_request *rq, const idmd_response *rs)
{
    /* The token: nothing without it but 401 (405 for a method never
     * served, which is answered first); never 401 with it, or with none. */
    if (g_app.token_len > 0) {
        const char *a = rq->authorization;
        bool right = a != NULL && strncasecmp(a, "Bearer ", 7) == 0 && strcmp(a + 7, FZ_TOKEN) == 0;
        bool served_method = rq->method != NULL &&
                             (strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0);
        if (!right && !(ui_path(rq->path) && served_method))
            fz_check(rs->status == 401 || (rs->status == 405 && !served_method),
                     rs->status == 200 ? "200 without the token" : "no 401 without the token",
                     rq, rs);
        else
            fz_check(rs->status != 401, "401 with the right token", rq, rs);
    } else {
        fz_check(rs->status != 401, "401 with no token set", rq, rs);
    }
    /* Ids: exactly the count asked for, none handed out before. */
    if (rs->status == 200 && rq->path != NULL && ids_kind(rq->path) != 0) {
        bool bare = strncmp(rq->path, "/api/", 5) == 0;
        uint32_t want = bare ? 1 : asked_count(rq->query, g_cfg.count_max);
        long got = ids_each(rs, ids_kind(rq->path), bare);
        fz_check(got != -1, "an id handed out twice", rq, rs);
        fz_check(got != -2, "an id longer than any id", rq, rs);
        fz_check(want > 0, "200 for a count that is not 1 to count-max", rq, rs);
        fz_check(got == (long)want, "not as many ids as the count asked for", rq, rs);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *part[4] = {NULL, NULL, NULL, NULL};
    size_t np = 0;
    idmd_request rq;
    idmd_response rs;
    if (g_app.gen == NULL)
        fz_setup();
    buf = malloc(size + 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    part[np++] = buf;
    for (size_t i = 0; i < size && np < 4; i++) {
        if (buf[i] == '\n') {
            buf[i] = '\0';
            part[np++] = buf + i + 1;
        }
    }
    /* every other call needs the token (the last part's '\n's stay in it) */
    g_calls++;
    if (g_calls % 2 == 0) {
        snprintf(g_app.token, sizeof g_app.token, "%s", FZ_TOKEN);
        g_app.token_len = strlen(g_app.token);
    } else {
        g_app.token[0] = '\0';
        g_app.token_len = 0;
    }
    rq.method = part[0];
    rq.path = part[1];
    rq.query = part[2];
    rq.authorization = part[3];
    memset(&rs, 0, sizeof rs);
    idmd_handle(&g_app, &rq, &rs);

    switch (rs.status) {
    case 200: case 301: case 400: case 401: case 404: case 405: case 413: case 500: case 503:
        break;
    default:
        fz_check(false, "unknown status", &rq, &rs);
    }
    fz_check(rs.body != NULL, "no body", &rq, &rs);
    fz_check(rs.body[rs.len] == '\0' && strlen(rs.body) == rs.len, "body not NUL-terminated at len",
             &rq, &rs);
    fz_check(rs.len < rs.cap, "len past cap", &rq, &rs);
    fz_check(rs.content_type != NULL, "no content type", &rq, &rs);
    fz_check(!rs.oom, "out of memory", &rq, &rs);
    fz_check(rs.www_authenticate == (rs.status == 401), "WWW-Authenticate without 401 (or not)",
             &rq, &rs);
    fz_check(rs.retry_after_s >= 0 && (rs.retry_after_s == 0 || rs.status == 503),
             "Retry-After on a non-503", &rq, &rs);
    if (rs.status != 200 && strcmp(rs.content_type, "application/json") == 0 &&
        strncmp(rs.body, "{\"status\":\"unavailable\"", 23) != 0) {
        char head[32];
        snprintf(head, sizeof head, "{\"error\":{\"status\":%d,", rs.status);
        fz_check(strncmp(rs.body, head, strlen(head)) == 0 &&
                     strcmp(rs.body + rs.len - 4, "\"}}\n") == 0,
                 "malformed error body", &rq, &rs);
    }
    if (rs.status == 301)
        fz_check(rq.path != NULL && strcmp(rq.path, "/ui") == 0 && rs.location != NULL,
                 "a redirect but /ui's", &rq, &rs);
    if (rs.status != 200 && rs.status != 301)
        fz_check(strcmp(rs.content_type, "application/json") == 0, "an error that is not JSON",
                 &rq, &rs);
    if (rs.status == 200 && rq.path != NULL && strncmp(rq.path, "/v1/", 4) == 0) {
        if (strcmp(rq.path, "/v1/status") == 0 || strcmp(rq.path, "/v1/plan") == 0 ||
            strcmp(rq.path, "/v1/estimate") == 0 || strcmp(rq.path, "/v1/birthday") == 0)
            fz_check(rs.body[0] == '{' && strcmp(rs.body + rs.len - 2, "}\n") == 0,
                     "a status or tool answer that is not a JSON object", &rq, &rs);
        else if (strncmp(rq.path, "/v1/decode/", 11) == 0)
            fz_check(strncmp(rs.body, "{\"id\":\"", 7) == 0 &&
                         strcmp(rs.body + rs.len - 2, "}\n") == 0,
                     "decode answer is not a JSON object", &rq, &rs);
        else
            fz_check(ids_ok(&rs), "200 without an id list", &rq, &rs);
    }
    if (rs.status == 200 && rq.path != NULL && strncmp(rq.path, "/api/", 5) == 0) {
        const char *p = rs.body;
        fz_check(*p >= '1' && *p <= '9', "Leaf answer is not a number", &rq, &rs);
        for (; *p != '\0'; p++)
            fz_check(*p >= '0' && *p <= '9', "Leaf answer is not a number", &rq, &rs);
    }
    check_properties(&rq, &rs);
    idmd_count(&g_app, rs.status, 1000);
    free(rs.body);
    free(buf);
    return 0;
}
