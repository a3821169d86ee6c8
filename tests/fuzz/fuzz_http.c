/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: idmintd's request handler (src/server/handler.c, compiled in
 * with src/server/config.c; the libmicrohttpd layer is not). The input is
 * split at '\n' into method, path, query and Authorization value (a missing
 * part is NULL), each NUL-terminated, and handled against one app built on
 * the first call: the twitter layout, datacenter 1 worker 2, the system
 * clock, no lease, an in-memory ticket store holding "orders"; a bearer token
 * ("fuzz-token-0123456789") is required on every other call, so both the open
 * and the authenticated paths are reached. Whatever the request, the
 * answer must have a known status, a body NUL-terminated at its length, a
 * well-formed error body for a failure, and for a 200 on /v1/ an id list
 * (JSON or text) or, for /v1/decode/, a JSON object.
 */
#include "../../src/server/config.c"
#include "../../src/server/handler.c"
#include "memstore.h"

#include <stdlib.h>

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
    case 200: case 400: case 401: case 404: case 405: case 413: case 500: case 503:
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
    if (rs.status != 200)
        fz_check(strcmp(rs.content_type, "application/json") == 0, "an error that is not JSON",
                 &rq, &rs);
    if (rs.status == 200 && rq.path != NULL && strncmp(rq.path, "/v1/", 4) == 0) {
        if (strncmp(rq.path, "/v1/decode/", 11) == 0)
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
    idmd_count(&g_app, rs.status, 1000);
    free(rs.body);
    free(buf);
    return 0;
}
