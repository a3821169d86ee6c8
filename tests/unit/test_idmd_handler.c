/* SPDX-License-Identifier: MIT */
/*
 * idmintd's request handler (src/server/handler.c), called directly with no
 * HTTP layer: every endpoint's answer (status, content type, body parsed or
 * matched exactly), the strict input checks of FAULTS N1 (400 naming the
 * parameter, nothing minted), the count cap, methods and odd paths, bearer
 * authentication, sequence exhaustion and a clock gone back (503 with
 * Retry-After), uniqueness under threads, and a ticket store that is down
 * or stuck (the memstore's hold keeps a store call waiting for as long as a
 * test likes): sequences opened without blocking anything else, /healthz's
 * reasons and warnings, shutdown with an open in progress, the floor files.
 * No test measures time: a deadline is tested by a call returning, or by
 * moving a manual clock. Refused requests are checked to mint nothing
 * against the generators themselves: the next id after a refusal is
 * exactly the one a twin generator gives (and the 128-bit generators draw
 * not one random byte for it). The app is built by hand: the twitter
 * layout, datacenter 1 worker 2, no lease (but for the test of a lease
 * about to expire, which claims a real file:// one), an in-memory ticket
 * store holding the sequence "orders".
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>
#include <idmint/segment.h>

#include "app.h"
#include "config.h"
#include "memstore.h"
#include "tools.h"
#include "ui.h"
#include "testutil.h"

/* ------------------------------------------------------- in-memory store */
/* (from test_seq.c: a counter per sequence under a mutex) */

/* The in-memory ticket store (tests/util/memstore.h). */
typedef idm_test_memstore mstore;
#define ms_next idm_test_memstore_next

/* Wait until the allocator's prefetch thread has stopped taking blocks: the
 * store's counter stays put for 200 ms (at most 5 s). */
static void ms_settle(mstore *m, const char *name)
{
    int64_t last = ms_next(m, name);
    int still = 0;
    for (int i = 0; i < 500 && still < 20; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        int64_t v;
        nanosleep(&ts, NULL);
        v = ms_next(m, name);
        still = v == last ? still + 1 : 0;
        last = v;
    }
}

/* ------------------------------------------------------------------ app */

#define TOKEN "s3cret-token-0123456789"

typedef struct tapp {
    idmd_config cfg;
    idmd_app app;
    idm_manual_clock *mc; /* NULL: the system clock */
    mstore *ms;
} tapp;

/* Open *out on t's layout and clock as datacenter 1, worker worker, with
 * o's other options. */
static void sf_open(tapp *t, idm_snowflake **out, idm_snowflake_opts *o, uint64_t worker)
{
    o->layout = t->app.layout;
    o->clock = t->app.clock;
    IDM_ASSERT_OK(idm_snowflake_opts_node(o, "datacenter", 1));
    IDM_ASSERT_OK(idm_snowflake_opts_node(o, "worker", worker));
    IDM_ASSERT_OK(idm_snowflake_open(out, o));
}

/* layout_text NULL: the twitter preset; a name without ':' another preset
 * (its node fields all 1, its name in cfg.layout). mc NULL: the system
 * clock. guarded: the generator mints only under idm_snowflake_guard, as
 * with a lease (the app has none). backwards: its clock policy. */
static tapp *tapp_new_ex(const char *layout_text, idm_manual_clock *mc, bool guarded,
                         idm_backwards_policy backwards)
{
    tapp *t = calloc(1, sizeof *t);
    idm_snowflake_opts o;
    assert_non_null(t);
    idmd_config_defaults(&t->cfg);
    t->mc = mc;
    t->app.cfg = &t->cfg;
    t->app.clock = mc != NULL ? idm_manual_clock_clock(mc) : idm_clock_system();
    idm_snowflake_opts_init(&o);
    o.guarded = guarded;
    o.backwards = backwards;
    if (layout_text != NULL && strchr(layout_text, ':') == NULL) {
        IDM_ASSERT_OK(idm_layout_preset(&t->app.layout, layout_text));
        snprintf(t->cfg.layout, sizeof t->cfg.layout, "%s", layout_text);
        o.layout = t->app.layout;
        o.clock = t->app.clock;
        for (size_t i = 0; i < idm_layout_field_count(t->app.layout); i++) {
            idm_field_info f;
            IDM_ASSERT_OK(idm_layout_field(t->app.layout, i, &f));
            if (f.kind == IDM_FIELD_NODE)
                IDM_ASSERT_OK(idm_snowflake_opts_node(&o, f.name, 1));
        }
        IDM_ASSERT_OK(idm_snowflake_open(&t->app.gen, &o));
    } else {
        if (layout_text == NULL)
            IDM_ASSERT_OK(idm_layout_preset(&t->app.layout, "twitter"));
        else
            IDM_ASSERT_OK(idm_layout_parse(&t->app.layout, layout_text, INT64_C(1577836800000)));
        sf_open(t, &t->app.gen, &o, 2);
    }
    IDM_ASSERT_OK(idm_uuid7_gen_new(&t->app.uuid7, t->app.clock, NULL));
    IDM_ASSERT_OK(idm_ulid_gen_new(&t->app.ulid, t->app.clock, NULL, true));
    t->ms = idm_test_memstore_new(&t->app.store);
    assert_non_null(t->ms);
    IDM_ASSERT_OK(idm_store_create(t->app.store, "orders", 1, 0, 1));
    assert_int_equal(idmd_seqs_init(&t->app), 0);
    return t;
}

static tapp *tapp_new(const char *layout_text, idm_manual_clock *mc)
{
    return tapp_new_ex(layout_text, mc, false, IDM_BACKWARDS_LOGICAL);
}

static void tapp_free(tapp *t)
{
    if (t->app.lease != NULL) /* stops the keeper and the generator, releases */
        IDM_ASSERT_OK(idm_lease_close(t->app.lease));
    idmd_seqs_close(&t->app);
    idm_test_memstore_free(t->ms, t->app.store);
    idm_snowflake_close(t->app.gen);
    idm_uuid7_gen_free(t->app.uuid7);
    idm_ulid_gen_free(t->app.ulid);
    idm_layout_free(t->app.layout);
    pthread_mutex_destroy(&t->app.seq_mu);
    pthread_cond_destroy(&t->app.seq_cv);
    free(t);
}

/* The app most tests run on (tapp_new(NULL, NULL)), as cmocka's state: made
 * before the test, freed after it, also after a failure (with the store
 * up again and let go, so that nothing waits on it). */
static int app_setup(void **state)
{
    *state = tapp_new(NULL, NULL);
    return 0;
}

static int app_teardown(void **state)
{
    tapp *t = *state;
    atomic_store(&t->ms->down, 0);
    idm_test_memstore_hold(t->ms, 0);
    tapp_free(t);
    return 0;
}
#define APP_TEST(f) cmocka_unit_test_setup_teardown(f, app_setup, app_teardown)

/* Give t a real worker-id lease, as idmintd takes one: claimed from url
 * (file://) on t's clock with ttl_ms and margin_ms, the generator reopened
 * guarded for the leased worker id above the previous mark (datacenter 1),
 * then attached. The claim stands as the first renewal, so the guard's
 * deadline is the claim's monotonic time + ttl_ms - margin_ms. The keeper
 * renews every ttl_ms/3 of real time: with a TTL of an hour, never while a
 * test runs, so only the test's (manual) clock moves the deadline nearer. */
static void tapp_lease(tapp *t, const char *url, int64_t ttl_ms, int64_t margin_ms)
{
    idm_lease_opts lo;
    idm_snowflake_opts o;
    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.ttl_ms = ttl_ms;
    lo.margin_ms = margin_ms;
    lo.clock = t->app.clock;
    lo.holder = "test_idmd_handler";
    IDM_ASSERT_OK(idm_lease_open(&t->app.lease, &lo));
    idm_snowflake_close(t->app.gen);
    idm_snowflake_opts_init(&o);
    o.guarded = true;
    o.after_ms = idm_lease_mark(t->app.lease);
    sf_open(t, &t->app.gen, &o, idm_lease_worker(t->app.lease));
    IDM_ASSERT_OK(idm_lease_attach(t->app.lease, t->app.gen));
    t->app.lease_ttl_ms = ttl_ms;
    t->app.lease_margin_ms = margin_ms;
}

static void tapp_token(tapp *t, const char *tok)
{
    snprintf(t->app.token, sizeof t->app.token, "%s", tok);
    t->app.token_len = strlen(t->app.token);
}

/* Handle one request; checks the body is there and NUL-terminated at len. */
static void call_auth(tapp *t, const char *method, const char *path, const char *query,
                      const char *auth, idmd_response *rs)
{
    idmd_request rq = {method, path, query, auth};
    memset(rs, 0, sizeof *rs);
    idmd_handle(&t->app, &rq, rs);
    assert_non_null(rs->body);
    assert_int_equal(rs->body[rs->len], '\0');
    assert_int_equal(strlen(rs->body), rs->len);
    assert_non_null(rs->content_type);
    assert_false(rs->oom);
}

static void call(tapp *t, const char *path, const char *query, idmd_response *rs)
{
    call_auth(t, "GET", path, query, NULL, rs);
}

static const char CT_JSON[] = "application/json";
static const char CT_TEXT[] = "text/plain; charset=utf-8";
static const char CT_PROM[] = "text/plain; version=0.0.4; charset=utf-8";

/* An error answer: status, JSON, {"error":{"status":S,("param":P,)"message":"..."}}. */
static void assert_error(const idmd_response *rs, int status, const char *param)
{
    char head[160];
    if (rs->status != status)
        fail_msg("status %d, expected %d; body %s", rs->status, status, rs->body);
    assert_string_equal(rs->content_type, CT_JSON);
    if (param != NULL)
        snprintf(head, sizeof head,
                 "{\"error\":{\"status\":%d,\"param\":\"%s\",\"message\":\"", status, param);
    else
        snprintf(head, sizeof head, "{\"error\":{\"status\":%d,\"message\":\"", status);
    CHECK(strncmp(rs->body, head, strlen(head)) == 0, "body %s, expected it to start %s",
          rs->body, head);
    CHECK(rs->len >= 4 && strcmp(rs->body + rs->len - 4, "\"}}\n") == 0, "body %s", rs->body);
}

/* GET path?query (query NULL: none), answered with status; the answer is
 * dropped. */
static void get_status(tapp *t, const char *path, const char *query, int status)
{
    idmd_response rs;
    call(t, path, query, &rs);
    CHECK(rs.status == status, "GET %s?%s: %d %s, want %d", path, query != NULL ? query : "",
          rs.status, rs.body, status);
    free(rs.body);
}

/* GET path?query answered with the error status naming param (assert_error). */
static void get_error(tapp *t, const char *path, const char *query, int status,
                      const char *param)
{
    idmd_response rs;
    call(t, path, query, &rs);
    assert_error(&rs, status, param);
    free(rs.body);
}

/* GET path?query answered 200 with exactly body. */
static void get_body(tapp *t, const char *path, const char *query, const char *body)
{
    idmd_response rs;
    call(t, path, query, &rs);
    CHECK(rs.status == 200 && strcmp(rs.body, body) == 0, "GET %s?%s: %d %s, want 200 %s",
          path, query != NULL ? query : "", rs.status, rs.body, body);
    free(rs.body);
}

/* ---------------------------------------------------------- ids bodies */

typedef struct idlist {
    char *buf;
    char **v;
    size_t n;
} idlist;

static void idlist_free(idlist *l)
{
    free(l->buf);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Parse {"ids":["a","b",...]}\n exactly. */
static void parse_json_ids(const char *body, idlist *out)
{
    static const char head[] = "{\"ids\":[";
    size_t cap = 16;
    char *p;
    memset(out, 0, sizeof *out);
    CHECK(strncmp(body, head, sizeof head - 1) == 0, "body %.200s", body);
    out->buf = strdup(body + sizeof head - 1);
    out->v = malloc(cap * sizeof *out->v);
    assert_non_null(out->buf);
    assert_non_null(out->v);
    p = out->buf;
    if (strcmp(p, "]}\n") == 0)
        return;
    for (;;) {
        char *end;
        CHECK(*p == '"', "expected '\"' at %.40s", p);
        end = strchr(p + 1, '"');
        assert_non_null(end);
        *end = '\0';
        if (out->n == cap) {
            cap *= 2;
            out->v = realloc(out->v, cap * sizeof *out->v);
            assert_non_null(out->v);
        }
        out->v[out->n++] = p + 1;
        p = end + 1;
        if (*p == ',') {
            p++;
            continue;
        }
        CHECK(strcmp(p, "]}\n") == 0, "trailer %.40s", p);
        return;
    }
}

/* Parse one id a line, each line ending in '\n'. */
static void parse_text_ids(const char *body, idlist *out)
{
    size_t cap = 16;
    char *p;
    memset(out, 0, sizeof *out);
    out->buf = strdup(body);
    out->v = malloc(cap * sizeof *out->v);
    assert_non_null(out->buf);
    assert_non_null(out->v);
    p = out->buf;
    while (*p != '\0') {
        char *nl = strchr(p, '\n');
        CHECK(nl != NULL, "line without newline: %.40s", p);
        *nl = '\0';
        if (out->n == cap) {
            cap *= 2;
            out->v = realloc(out->v, cap * sizeof *out->v);
            assert_non_null(out->v);
        }
        out->v[out->n++] = p;
        p = nl + 1;
    }
}

/* Strict decimal, no leading zero. */
static uint64_t dec(const char *s)
{
    uint64_t v = 0;
    CHECK(s[0] >= '1' && s[0] <= '9', "not decimal: '%s'", s);
    for (const char *c = s; *c != '\0'; c++)
        CHECK(*c >= '0' && *c <= '9', "not decimal: '%s'", s);
    IDM_ASSERT_OK(idm_u64_parse(s, &v));
    return v;
}

static void check_snowflakes(tapp *t, const idlist *l, size_t n, uint64_t *first)
{
    uint64_t prev = 0;
    int dc = idm_layout_field_index(t->app.layout, "datacenter");
    int wk = idm_layout_field_index(t->app.layout, "worker");
    assert_true(dc > 0 && wk > 0);
    assert_int_equal(l->n, n);
    for (size_t i = 0; i < l->n; i++) {
        uint64_t v = dec(l->v[i]);
        idm_decoded d;
        CHECK(i == 0 || v > prev, "ids not increasing at %zu: %s after %llu", i, l->v[i],
              ULL(prev));
        IDM_ASSERT_OK(idm_layout_decode(t->app.layout, v, &d));
        assert_int_equal(d.value[dc], 1);
        assert_int_equal(d.value[wk], 2);
        if (i == 0 && first != NULL)
            *first = v;
        prev = v;
    }
}

/* The value of the metrics line "NAME VALUE" (NAME with its labels). */
static double metric_value(const char *body, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = body; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p) {
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    fail_msg("metric %s missing in:\n%s", name, body);
    return -1;
}

static uint64_t minted(tapp *t, int kind)
{
    return atomic_load(&t->app.m.minted[kind]);
}

static idm_unix_ms last_ms(tapp *t)
{
    idm_snowflake_stats st;
    idm_snowflake_stats_get(t->app.gen, &st);
    return st.last_unix_ms;
}

/* ------------------------------------------------------------- endpoints */

static void test_snowflake(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    idlist l;
    uint64_t first = 0, first2 = 0;

    call(t, "/v1/snowflake", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_int_equal(rs.retry_after_s, 0);
    assert_false(rs.www_authenticate);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 1, &first);
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/snowflake", "", &rs); /* an empty query is no query */
    assert_int_equal(rs.status, 200);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 1, NULL);
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/snowflake", "count=5", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 5, &first2);
    assert_true(first2 > first);
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/snowflake", "count=5&format=text", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    parse_text_ids(rs.body, &l);
    check_snowflakes(t, &l, 5, NULL);
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/snowflake", "format=json&count=3", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 3, NULL);
    idlist_free(&l);
    free(rs.body);

    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 1 + 1 + 5 + 5 + 3);
}

static void test_segment(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    idlist l;

    call(t, "/v1/segment/orders", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_string_equal(rs.body, "{\"ids\":[\"1\"]}\n");
    free(rs.body);

    get_body(t, "/v1/segment/orders", "count=4", "{\"ids\":[\"2\",\"3\",\"4\",\"5\"]}\n");

    call(t, "/v1/segment/orders", "count=3&format=text", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    assert_string_equal(rs.body, "6\n7\n8\n");
    free(rs.body);

    /* dense across block boundaries (blocks are 1000 at first) */
    call(t, "/v1/segment/orders", "count=5000", &rs);
    assert_int_equal(rs.status, 200);
    parse_json_ids(rs.body, &l);
    assert_int_equal(l.n, 5000);
    for (size_t i = 0; i < l.n; i++)
        assert_int_equal(dec(l.v[i]), 9 + i);
    idlist_free(&l);
    free(rs.body);

    call(t, "/api/segment/get/orders", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    assert_string_equal(rs.body, "5009");
    free(rs.body);

    assert_int_equal(minted(t, IDMD_K_SEGMENT), 1 + 4 + 3 + 5000 + 1);

    get_error(t, "/v1/segment/missing", NULL, 404, NULL);
    get_error(t, "/api/segment/get/missing", NULL, 404, NULL);
    /* a name longer than 64 */
    call(t, "/v1/segment/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL,
         &rs);
    assert_error(&rs, 400, "name");
    free(rs.body);
    /* the refusals took nothing */
    get_body(t, "/v1/segment/orders", NULL, "{\"ids\":[\"5010\"]}\n");
    assert_int_equal(minted(t, IDMD_K_SEGMENT), 5010);
}

static void test_segment_no_store(void **state)
{
    tapp *t = *state;
    idm_store *s = t->app.store;
    idmd_response rs;
    t->app.store = NULL;
    call(t, "/v1/segment/orders", NULL, &rs);
    t->app.store = s; /* before the checks: the teardown closes it */
    assert_error(&rs, 404, NULL);
    free(rs.body);
}

static void test_uuid_ulid(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    idlist l;
    idm_unix_ms before = idm_clock_system()->wall_ns(NULL) / 1000000;

    call(t, "/v1/uuid7", "count=3&format=text", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    parse_text_ids(rs.body, &l);
    assert_int_equal(l.n, 3);
    for (size_t i = 0; i < l.n; i++) {
        idm_uuid u;
        idm_unix_ms ms;
        assert_int_equal(strlen(l.v[i]), 36);
        IDM_ASSERT_OK(idm_uuid_parse(l.v[i], &u));
        assert_int_equal(idm_uuid_version(&u), 7);
        IDM_ASSERT_OK(idm_uuid7_time(&u, &ms));
        assert_true(ms >= before && ms < before + 60000);
        if (i > 0)
            assert_true(strcmp(l.v[i - 1], l.v[i]) < 0);
    }
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/uuid7", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    parse_json_ids(rs.body, &l);
    assert_int_equal(l.n, 1);
    assert_int_equal(strlen(l.v[0]), 36);
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/uuid4", "count=4", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    parse_json_ids(rs.body, &l);
    assert_int_equal(l.n, 4);
    for (size_t i = 0; i < l.n; i++) {
        idm_uuid u;
        IDM_ASSERT_OK(idm_uuid_parse(l.v[i], &u));
        assert_int_equal(idm_uuid_version(&u), 4);
        assert_int_equal(idm_uuid_variant(&u), IDM_UUID_VARIANT_RFC);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(l.v[i], l.v[j]);
    }
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/ulid", "count=3", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    parse_json_ids(rs.body, &l);
    assert_int_equal(l.n, 3);
    for (size_t i = 0; i < l.n; i++) {
        idm_ulid u;
        assert_int_equal(strlen(l.v[i]), 26);
        IDM_ASSERT_OK(idm_ulid_parse(l.v[i], &u));
        assert_true(idm_ulid_time(&u) >= before && idm_ulid_time(&u) < before + 60000);
        if (i > 0) /* monotonic */
            assert_true(strcmp(l.v[i - 1], l.v[i]) < 0);
    }
    idlist_free(&l);
    free(rs.body);

    assert_int_equal(minted(t, IDMD_K_UUID7), 4);
    assert_int_equal(minted(t, IDMD_K_UUID4), 4);
    assert_int_equal(minted(t, IDMD_K_ULID), 3);
}

static void test_decode(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    idlist l;
    char exp[512], iso[64], id[32];
    uint64_t v;
    idm_decoded d;

    /* a snowflake minted here */
    call(t, "/v1/snowflake", NULL, &rs);
    parse_json_ids(rs.body, &l);
    snprintf(id, sizeof id, "%s", l.v[0]);
    idlist_free(&l);
    free(rs.body);
    v = dec(id);
    IDM_ASSERT_OK(idm_layout_decode(t->app.layout, v, &d));
    IDM_ASSERT_OK(idm_time_format(d.unix_ms, iso, sizeof iso));
    snprintf(exp, sizeof exp,
             "{\"id\":\"%s\",\"kind\":\"snowflake\",\"layout\":\"twitter\",\"time\":\"%s\","
             "\"unix_ms\":%lld,\"datacenter\":1,\"worker\":2,\"seq\":%llu}\n",
             id, iso, LL(d.unix_ms), ULL(d.seq));
    {
        char path[64];
        snprintf(path, sizeof path, "/v1/decode/%s", id);
        call(t, path, NULL, &rs);
    }
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_string_equal(rs.body, exp);
    free(rs.body);

    /* a UUIDv7 with a known time (RFC 9562's example), in either case: the
     * answer is `idmint decode --json`'s, the id in its canonical text */
    IDM_ASSERT_OK(idm_time_format(INT64_C(0x017f22e279b0), iso, sizeof iso));
    snprintf(exp, sizeof exp,
             "{\"id\":\"017f22e2-79b0-7cc3-98c4-dc0c0c07398f\",\"kind\":\"uuid\",\"version\":7,"
             "\"variant\":\"rfc9562\",\"time\":\"%s\",\"unix_ms\":%lld}\n",
             iso, LL(INT64_C(0x017f22e279b0)));
    call(t, "/v1/decode/017f22e2-79b0-7cc3-98c4-dc0c0c07398f", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_string_equal(rs.body, exp);
    free(rs.body);
    call(t, "/v1/decode/017F22E2-79B0-7CC3-98C4-DC0C0C07398F", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.body, exp);
    free(rs.body);

    /* a UUIDv4: version and variant, no time; then one of Microsoft's
     * variant (the top bits of byte 8: 110) */
    static const char *const v4[][2] = {
        {"919108f7-52d1-4320-9bac-f847db4148a8", "rfc9562"},
        {"919108f7-52d1-4320-cbac-f847db4148a8", "microsoft"},
    };
    for (size_t i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/decode/%s", v4[i][0]);
        snprintf(exp, sizeof exp,
                 "{\"id\":\"%s\",\"kind\":\"uuid\",\"version\":4,\"variant\":\"%s\"}\n", v4[i][0],
                 v4[i][1]);
        call(t, path, NULL, &rs);
        assert_int_equal(rs.status, 200);
        assert_string_equal(rs.body, exp);
        free(rs.body);
    }

    /* a ULID (the spec's example; its time is 0x01563E3AB5D3 ms), with
     * its UUID form; lower case in, the canonical upper case out */
    call(t, "/v1/decode/01arz3ndektsv4rrffq69g5fav", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    IDM_ASSERT_OK(idm_time_format(INT64_C(0x01563E3AB5D3), iso, sizeof iso));
    snprintf(exp, sizeof exp,
             "{\"id\":\"01ARZ3NDEKTSV4RRFFQ69G5FAV\",\"kind\":\"ulid\",\"time\":\"%s\","
             "\"unix_ms\":%lld,\"uuid\":\"01563e3a-b5d3-d676-4c61-efb99302bd5b\"}\n",
             iso, LL(INT64_C(0x01563E3AB5D3)));
    assert_string_equal(rs.body, exp);
    free(rs.body);

    /* bad ids */
    static const char *const bad[] = {
        "/v1/decode/18446744073709551616",                 /* 2^64 */
        "/v1/decode/99999999999999999999",                 /* 20 digits, too big */
        "/v1/decode/123456789012345678901",                /* 21 digits */
        "/v1/decode/18446744073709551615",                 /* bit 63: above twitter's 63 */
        "/v1/decode/0123",                                 /* leading zero */
        "/v1/decode/017f22e2-79b0-7cc3-98c4-dc0c0c07398g", /* not hex */
        "/v1/decode/017f22e2079b0-7cc3-98c4-dc0c0c07398f", /* dash moved */
        "/v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAU",           /* U is not Crockford */
        "/v1/decode/8ZZZZZZZZZZZZZZZZZZZZZZZZZ",           /* above 128 bits */
        "/v1/decode/abc",
        "/v1/decode/-1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        call(t, bad[i], NULL, &rs);
        print_message("%s -> %d %s", bad[i], rs.status, rs.body);
        assert_error(&rs, 400, "id");
        free(rs.body);
    }
    /* decode takes format=json but not text, and no count */
    get_status(t, "/v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAV", "format=json", 200);
    get_error(t, "/v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAV", "format=text", 400, "format");
    get_error(t, "/v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAV", "count=1", 400, "count");
    get_error(t, "/v1/decode/", NULL, 404, NULL);
    get_error(t, "/v1/decode/1/2", NULL, 404, NULL);
}

static void test_leaf(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    uint64_t a, b;
    idm_decoded d;
    call(t, "/api/snowflake/get/x", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    a = dec(rs.body);
    free(rs.body);
    IDM_ASSERT_OK(idm_layout_decode(t->app.layout, a, &d));
    assert_int_equal(d.value[idm_layout_field_index(t->app.layout, "datacenter")], 1);
    assert_int_equal(d.value[idm_layout_field_index(t->app.layout, "worker")], 2);
    call(t, "/api/snowflake/get/anything-else", NULL, &rs);
    assert_int_equal(rs.status, 200);
    b = dec(rs.body);
    assert_true(b > a);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 2);

    call(t, "/api/segment/get/orders", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    assert_string_equal(rs.body, "1");
    free(rs.body);
    get_body(t, "/api/segment/get/orders", NULL, "2");

    get_error(t, "/api/snowflake/get/x", "count=2", 400, "count");
    get_error(t, "/api/snowflake/get/", NULL, 404, NULL);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 2);
}

static void test_health_ping(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    call(t, "/healthz", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_string_equal(rs.body, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n");
    free(rs.body);

    call(t, "/ping", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_TEXT);
    assert_string_equal(rs.body, "ok\n");
    free(rs.body);

    atomic_store(&t->app.draining, 1);
    call(t, "/healthz", NULL, &rs);
    assert_int_equal(rs.status, 503);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_string_equal(rs.body, "{\"status\":\"unavailable\",\"reason\":\"shutting down\"}\n");
    free(rs.body);
}

/* The ticket store down: segments are served from the blocks in hand, then
 * 503 (Retry-After), and /healthz says 503 naming the sequence until the
 * store is back. */
static void test_health_store_down(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    int served = 0;
    t->cfg.segment_wait_ms = 50;
    call(t, "/v1/segment/orders", NULL, &rs); /* opens the allocator */
    assert_int_equal(rs.status, 200);
    free(rs.body);
    atomic_store(&t->ms->down, 1);
    for (int i = 0; i < 100000; i++) {
        call(t, "/v1/segment/orders", "count=100", &rs);
        if (rs.status != 200) {
            assert_int_equal(rs.status, 503);
            assert_true(rs.retry_after_s > 0);
            free(rs.body);
            break;
        }
        served++;
        free(rs.body);
    }
    CHECK(served > 0, "nothing served from the blocks in hand");
    call(t, "/healthz", NULL, &rs);
    assert_int_equal(rs.status, 503);
    CHECK(strstr(rs.body, "sequence orders") != NULL && strstr(rs.body, "store") != NULL,
          "health: %s", rs.body);
    free(rs.body);
    atomic_store(&t->ms->down, 0);
    for (int i = 0; i < 200; i++) { /* the allocator retries by itself */
        call(t, "/v1/segment/orders", NULL, &rs);
        free(rs.body);
        if (rs.status == 200)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(rs.status, 200);
    get_status(t, "/healthz", NULL, 200);
}

/* ------------------------------------------- a ticket store that is stuck */

/* Wait (at most 10 s, polling every 2 ms) until /healthz's body holds
 * needle (or, needle NULL, is the plain ok answer); rs keeps that answer,
 * or the last one if it never came (the caller's checks then fail). */
static void health_until(tapp *t, const char *needle, idmd_response *rs)
{
    for (int i = 0; i < 5000; i++) {
        call(t, "/healthz", NULL, rs);
        if (needle != NULL ? strstr(rs->body, needle) != NULL
                           : strcmp(rs->body, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n") == 0)
            return;
        free(rs->body);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    call(t, "/healthz", NULL, rs);
}

/* A request made while the store is held: on a thread of its own, so that
 * a handler that waits for the store (as seq_for did, under seq_mu) fails
 * the test with a message instead of hanging it. 60 s is a bound for a
 * broken handler, not a measure: a working one answers within segment-wait. */
typedef struct held_call {
    tapp *t;
    const char *path, *query;
    idmd_response rs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} held_call;

static void *held_call_main(void *p)
{
    held_call *h = p;
    idmd_request rq = {"GET", h->path, h->query, NULL};
    idmd_response rs;
    memset(&rs, 0, sizeof rs);
    idmd_handle(&h->t->app, &rq, &rs);
    pthread_mutex_lock(&h->mu);
    h->rs = rs;
    h->done = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void call_held(tapp *t, const char *path, const char *query, idmd_response *rs)
{
    held_call *h = calloc(1, sizeof *h);
    pthread_condattr_t ca;
    struct timespec until;
    pthread_t th;
    bool done;
    assert_non_null(h);
    h->t = t;
    h->path = path;
    h->query = query;
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    assert_int_equal(pthread_create(&th, NULL, held_call_main, h), 0);
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&h->mu);
    while (!h->done && pthread_cond_timedwait(&h->cv, &h->mu, &until) == 0)
        ;
    done = h->done;
    pthread_mutex_unlock(&h->mu);
    if (!done) {
        pthread_detach(th); /* it and h stay: it is blocked for good */
        fail_msg("GET %s%s%s: no answer within 60 s while the store is held (the handler "
                 "waits for the store)",
                 path, query != NULL ? "?" : "", query != NULL ? query : "");
    }
    assert_int_equal(pthread_join(th, NULL), 0);
    *rs = h->rs;
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
    assert_non_null(rs->body);
    assert_int_equal(strlen(rs->body), rs->len);
}

/* The body holds each of the NULL-terminated needles. */
static void body_has(const idmd_response *rs, ...)
{
    va_list ap;
    va_start(ap, rs);
    for (const char *want = va_arg(ap, const char *); want != NULL;
         want = va_arg(ap, const char *))
        CHECK(strstr(rs->body, want) != NULL, "%d %s: no '%s'", rs->status, rs->body, want);
    va_end(ap);
}

/* Issue 13: opening a sequence held seq_mu across its store round trips,
 * so with a store that did not answer (a row lock held elsewhere) the
 * request hung, and so did /healthz, /metrics and every other sequence.
 * With the store held: a new sequence is 503 with Retry-After once
 * segment-wait has passed, naming why (the open goes on, one for the
 * name); /healthz says which sequence's store is stuck, /metrics and /ping
 * answer, a sequence already open serves from its blocks. Let go, the
 * open ends and the sequence serves. (It hung at the first request.) */
static void test_open_store_stuck(void **state)
{
    tapp *t = tapp_new(NULL, NULL);
    idmd_response rs;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(t->app.store, "fresh", 100, 0, 1));
    get_body(t, "/v1/segment/orders", NULL, "{\"ids\":[\"1\"]}\n");
    ms_settle(t->ms, "orders"); /* its spare block is in */
    /* Short from here on: the first open above, on a loaded machine under
     * TSan, may take longer than the 50 ms the held store's requests wait. */
    t->cfg.segment_wait_ms = 50;

    idm_test_memstore_hold(t->ms, 1);
    call_held(t, "/v1/segment/fresh", NULL, &rs);
    print_message("store held, a new sequence: %d %s", rs.status, rs.body);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    body_has(&rs, "sequence fresh", "has not answered within 50 ms", NULL);
    free(rs.body);
    assert_int_equal(idm_test_memstore_wait_held(t->ms, 1, 60000), 0); /* the open is stuck */
    call_held(t, "/api/segment/get/fresh", NULL, &rs); /* waits for the same open */
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    free(rs.body);

    /* it has been opening for segment-wait at least: the first request
     * waited that long for it */
    call_held(t, "/healthz", NULL, &rs);
    print_message("store held: healthz %d %s", rs.status, rs.body);
    assert_int_equal(rs.status, 503);
    assert_string_equal(rs.content_type, CT_JSON);
    body_has(&rs, "{\"status\":\"unavailable\",\"reason\":\"sequence fresh: ", "opening", NULL);
    free(rs.body);
    call_held(t, "/metrics", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_true(metric_value(rs.body, "idmint_segment_sequences_opening") == 1);
    assert_true(metric_value(rs.body, "idmint_segment_sequences_open") == 1);
    assert_true(metric_value(rs.body, "idmint_segment_store_call_seconds") >= 0.05);
    free(rs.body);
    call_held(t, "/ping", NULL, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
    call_held(t, "/v1/segment/orders", "count=3", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.body, "{\"ids\":[\"2\",\"3\",\"4\"]}\n");
    free(rs.body);
    assert_int_equal(idm_test_memstore_held(t->ms), 1);

    idm_test_memstore_hold(t->ms, 0);
    t->cfg.segment_wait_ms = 60000; /* now: wait for the open to end */
    get_body(t, "/v1/segment/fresh", "count=2", "{\"ids\":[\"100\",\"101\"]}\n");
    get_body(t, "/healthz", NULL, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n");
    call(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_segment_sequences_opening") == 0);
    assert_true(metric_value(rs.body, "idmint_segment_sequences_open") == 2);
    assert_true(metric_value(rs.body, "idmint_segment_open_failures_total") == 0);
    free(rs.body);
    assert_int_equal(t->app.nseqs, 2);
    tapp_free(t);
}

/* At most IDMD_OPENERS_MAX opens at once: with the store held, that many
 * new names are each 503 "not answered", one more is 503 at once naming
 * the limit (no thread for it); let go, every one of them opens. (It hung
 * at the first request.) */
static void test_open_limit(void **state)
{
    tapp *t = tapp_new(NULL, NULL);
    idmd_response rs;
    char path[64];
    (void)state;
    IDM_ASSERT_OK(idm_test_memstore_create_many(t->app.store, "s", IDMD_OPENERS_MAX + 1, 1, 0,
                                                1));
    t->cfg.segment_wait_ms = 0;
    idm_test_memstore_hold(t->ms, 1);
    for (int i = 0; i <= IDMD_OPENERS_MAX; i++) {
        snprintf(path, sizeof path, "/v1/segment/s%03d", i);
        call_held(t, path, NULL, &rs);
        assert_error(&rs, 503, NULL);
        assert_true(rs.retry_after_s > 0);
        if (i < IDMD_OPENERS_MAX)
            body_has(&rs, "has not answered", NULL);
        else
            body_has(&rs, "being opened already", NULL);
        free(rs.body);
    }
    call_held(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_segment_sequences_opening") == IDMD_OPENERS_MAX);
    free(rs.body);
    idm_test_memstore_hold(t->ms, 0);
    t->cfg.segment_wait_ms = 60000;
    for (int i = 0; i <= IDMD_OPENERS_MAX; i++) {
        snprintf(path, sizeof path, "/v1/segment/s%03d", i);
        call(t, path, NULL, &rs);
        if (rs.status != 200)
            fail_msg("%s: %d %s", path, rs.status, rs.body);
        assert_string_equal(rs.body, "{\"ids\":[\"1\"]}\n");
        free(rs.body);
    }
    tapp_free(t);
}

typedef struct closer {
    tapp *t;
    atomic_int done;
} closer;

static void *closer_main(void *p)
{
    closer *c = p;
    idmd_seqs_close(&c->t->app);
    atomic_store(&c->done, 1);
    return NULL;
}

/* Shutdown with an open stuck in the store: idmd_seqs_close refuses new
 * opens at once, answers /healthz and /ping meanwhile, returns once the
 * store call returns, and closes the allocator that open made (none is
 * left behind: its prefetch thread is gone too). (It hung at the first
 * request.) */
static void test_close_while_opening(void **state)
{
    tapp *t = tapp_new(NULL, NULL);
    idmd_response rs;
    closer c;
    pthread_t th;
    int before, now = 0;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(t->app.store, "fresh", 100, 0, 1));
    t->cfg.segment_wait_ms = 0;
    before = idm_test_threads_now();
    idm_test_memstore_hold(t->ms, 1);
    call_held(t, "/v1/segment/fresh", NULL, &rs);
    assert_error(&rs, 503, NULL);
    free(rs.body);
    assert_int_equal(idm_test_memstore_wait_held(t->ms, 1, 60000), 0);

    c.t = t;
    atomic_store(&c.done, 0);
    assert_int_equal(pthread_create(&th, NULL, closer_main, &c), 0);
    /* once the close has begun, a sequence is refused, not opened */
    for (int i = 0; i < 5000; i++) {
        call_held(t, "/v1/segment/orders", NULL, &rs);
        assert_error(&rs, 503, NULL);
        if (strstr(rs.body, "shutting down") != NULL)
            break;
        free(rs.body);
        rs.body = NULL;
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_non_null(rs.body);
    body_has(&rs, "sequence orders: shutting down", NULL);
    free(rs.body);
    call_held(t, "/healthz", NULL, &rs);
    assert_int_equal(rs.status, 503); /* fresh's store is stuck */
    body_has(&rs, "sequence fresh", NULL);
    free(rs.body);
    call_held(t, "/ping", NULL, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
    /* the store call has not returned: neither has the close */
    assert_int_equal(idm_test_memstore_held(t->ms), 1);
    assert_int_equal(atomic_load(&c.done), 0);

    idm_test_memstore_hold(t->ms, 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(atomic_load(&c.done), 1);
    assert_null(t->app.seqs);
    assert_int_equal(t->app.nseqs, 0);
    CHECK(ms_next(t->ms, "fresh") > 100, "the open took no block: %lld",
          (long long)ms_next(t->ms, "fresh"));
    /* the opener and the prefetch thread its allocator started are gone
     * (a joined thread leaves the count a moment later) */
    for (int i = 0; i < 5000 && (now = idm_test_threads_now()) != before; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(now == before, "%d threads, %d before", now, before);
    tapp_free(t);
}

/* An open that fails is remembered for IDMD_SEQ_RETRY_MS: requests for
 * the name get its error (503 for a store down) without asking the store
 * again, /healthz says so (503: no ids for it and its store fails), the
 * metrics count it; afterwards the next request opens again. (It asked the
 * store again at once, and hung on the held store.) */
static void test_open_failure_remembered(void **state)
{
    tapp *t = tapp_new(NULL, NULL);
    idmd_response rs;
    (void)state;
    t->cfg.segment_wait_ms = 1000;
    atomic_store(&t->ms->down, 1);
    call(t, "/v1/segment/orders", NULL, &rs);
    print_message("store down, a new sequence: %d %s", rs.status, rs.body);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    body_has(&rs, "memstore: connection refused", NULL);
    free(rs.body);

    /* the store is not asked again: held, it would hold the open */
    idm_test_memstore_hold(t->ms, 1);
    call_held(t, "/v1/segment/orders", NULL, &rs);
    assert_error(&rs, 503, NULL);
    body_has(&rs, "memstore: connection refused", NULL);
    free(rs.body);
    assert_int_equal(idm_test_memstore_held(t->ms), 0);
    call_held(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_segment_sequences_opening") == 0);
    assert_true(metric_value(rs.body, "idmint_segment_open_failures_total") == 1);
    free(rs.body);
    idm_test_memstore_hold(t->ms, 0);
    call(t, "/healthz", NULL, &rs);
    print_message("healthz: %d %s", rs.status, rs.body);
    if (rs.status == 503) /* it may have been forgotten already */
        body_has(&rs, "sequence orders: cannot be opened (IDM_EUNAVAIL)", NULL);
    free(rs.body);

    /* the store back: within IDMD_SEQ_RETRY_MS the next request opens it */
    atomic_store(&t->ms->down, 0);
    for (int i = 0; i < 5000; i++) {
        call(t, "/v1/segment/orders", NULL, &rs);
        if (rs.status == 200)
            break;
        assert_error(&rs, 503, NULL);
        free(rs.body);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.body, "{\"ids\":[\"1\"]}\n");
    free(rs.body);
    get_status(t, "/healthz", NULL, 200);
    tapp_free(t);
}

/* A new app whose sequence orders is open with two blocks of 1000 in hand
 * (ids 1 to 2000, id 1 handed out); then with the store set up by how
 * (down or held), the first block is used up and the second past its
 * prefetch point: the prefetch thread asks the store for a block, ids are
 * left (149). */
static tapp *tapp_prefetching(void (*how)(tapp *t))
{
    tapp *t = tapp_new(NULL, NULL);
    idmd_response rs;
    t->cfg.segment_wait_ms = 1000;
    get_body(t, "/v1/segment/orders", NULL, "{\"ids\":[\"1\"]}\n");
    ms_settle(t->ms, "orders");
    assert_int_equal(ms_next(t->ms, "orders"), 2001); /* two blocks of 1000 in hand */
    how(t);
    get_status(t, "/v1/segment/orders", "count=1000", 200);
    call(t, "/v1/segment/orders", "count=850&format=text", &rs); /* to 1851 */
    assert_int_equal(rs.status, 200);
    assert_non_null(strstr(rs.body, "\n1851\n"));
    free(rs.body);
    return t;
}

static void store_down(tapp *t)
{
    atomic_store(&t->ms->down, 1);
}

static void store_held(tapp *t)
{
    idm_test_memstore_hold(t->ms, 1);
}

/* A store whose fetches fail while ids are left: /healthz is 200 and warns,
 * naming the sequence and the store's problem; the metrics count the store
 * down; back, no warning. (No warning: 200 with the plain body.) */
static void test_health_store_down_warns(void **state)
{
    tapp *t = tapp_prefetching(store_down);
    idmd_response rs;
    (void)state;
    health_until(t, "warnings", &rs);
    print_message("store down, ids left: healthz %d %s", rs.status, rs.body);
    assert_int_equal(rs.status, 200);
    body_has(&rs, "{\"status\":\"ok\",\"layout\":\"twitter\",\"warnings\":[\"sequence orders: ",
             "store(s) down", "ids left", "connection refused", NULL);
    free(rs.body);
    call(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_segment_fetch_errors_total") >= 1);
    assert_true(metric_value(rs.body, "idmint_segment_down_stores") == 1);
    free(rs.body);
    atomic_store(&t->ms->down, 0);
    health_until(t, NULL, &rs);
    assert_string_equal(rs.body, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n");
    free(rs.body);
    call(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_segment_down_stores") == 0);
    free(rs.body);
    tapp_free(t);
}

/* A store call running past store-timeout (a custom store's calls are its
 * own to bound; here 1 ms, the store held) while ids are left: /healthz is
 * 200 and warns, naming the sequence, the store and how long; the metrics
 * show the call; let go, no warning. (No warning.) */
static void test_health_store_call_stuck(void **state)
{
    tapp *t = tapp_prefetching(store_held);
    idmd_response rs;
    (void)state;
    t->cfg.store_timeout_ms = 1;
    assert_int_equal(idm_test_memstore_wait_held(t->ms, 1, 60000), 0);
    health_until(t, "past store-timeout", &rs);
    print_message("a fetch held: healthz %d %s", rs.status, rs.body);
    assert_int_equal(rs.status, 200);
    body_has(&rs, "\"warnings\":[\"sequence orders: a call to store 0 has run ",
             "past store-timeout (1 ms); 149 ids left", NULL);
    free(rs.body);
    call_held(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_segment_store_call_seconds") > 0);
    free(rs.body);
    call_held(t, "/v1/segment/orders", "count=149", &rs); /* what is left still serves */
    assert_int_equal(rs.status, 200);
    free(rs.body);
    idm_test_memstore_hold(t->ms, 0);
    health_until(t, NULL, &rs);
    assert_string_equal(rs.body, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n");
    free(rs.body);
    tapp_free(t);
}

/* Issue 13 item 1: with floors_dir set (idmintd: DATA-DIR/floors) each
 * sequence's allocator keeps its store's floor in FLOORS/NAME.floor (also
 * for names that are "." or end in ".lock"), so a store rewound under the
 * same data directory is refused, across restarts. (No file; the rewound
 * store served ids again.) */
static void test_floor_files(void **state)
{
    static const char *const names[] = {"orders", ".", "..", "orders.lock"};
    char *dir = idm_test_tmpdir();
    char path[1200];
    tapp *t = tapp_new(NULL, NULL);
    idmd_response rs;
    struct stat st;
    (void)state;
    for (size_t i = 1; i < sizeof names / sizeof names[0]; i++)
        IDM_ASSERT_OK(idm_store_create(t->app.store, names[i], 1, 0, 1));
    snprintf(t->app.floors_dir, sizeof t->app.floors_dir, "%s", dir);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "/v1/segment/%s", names[i]);
        call(t, path, NULL, &rs);
        if (rs.status != 200)
            fail_msg("%s: %d %s", path, rs.status, rs.body);
        assert_string_equal(rs.body, "{\"ids\":[\"1\"]}\n");
        free(rs.body);
        snprintf(path, sizeof path, "%s/%s.floor", dir, names[i]);
        CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode), "no floor file %s", path);
    }
    tapp_free(t);

    /* a restart on a store rewound to before those blocks */
    t = tapp_new(NULL, NULL);
    snprintf(t->app.floors_dir, sizeof t->app.floors_dir, "%s", dir);
    call(t, "/v1/segment/orders", NULL, &rs);
    print_message("a rewound store: %d %s", rs.status, rs.body);
    CHECK(rs.status != 200, "a rewound store served: %s", rs.body);
    assert_true(rs.status >= 500);
    body_has(&rs, "orders", NULL);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SEGMENT), 0);
    tapp_free(t);
    idm_test_rmtree(dir);
    free(dir);
}

/* 300 sequences in use at once (more than the 256 a fixed table held: the
 * 257th was a 500), each answering from its own counter, looked up again
 * in another order, all of them on one prefetch thread; a name the store
 * does not have is 404 and takes no room; /healthz and /metrics go through
 * them all. */
static void test_many_sequences(void **state)
{
    enum { N = 300 };
    tapp *t = tapp_new(NULL, NULL);
    idm_store *big, *mem = t->app.store;
    mstore *b = idm_test_memstore_new(&big);
    idmd_response rs;
    char path[64];
    int before, n;
    (void)state;
    assert_non_null(b);
    IDM_ASSERT_OK(idm_test_memstore_create_many(big, "q", N, 1, 0, 1));
    t->app.store = big;
    before = idm_test_threads_now();
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "/v1/segment/q%03d", i);
        call(t, path, "count=3", &rs);
        if (rs.status != 200)
            fail_msg("sequence %d of %d: %d %s", i + 1, N, rs.status, rs.body);
        assert_string_equal(rs.body, "{\"ids\":[\"1\",\"2\",\"3\"]}\n");
        free(rs.body);
    }
    assert_int_equal(t->app.nseqs, N);
    /* (each was opened on a thread of its own, joined by now: a joined
     * thread leaves the count a moment later) */
    for (int i = 0; i < 5000 && (n = idm_test_threads_now()) - before > 1; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(n - before <= 1, "%d sequences in use: %d threads more (want the one keeper)", N,
          n - before);
    for (int i = N - 1; i >= 0; i -= 7) {
        snprintf(path, sizeof path, "/api/segment/get/q%03d", i);
        get_body(t, path, NULL, "4");
    }
    get_error(t, "/v1/segment/q300", NULL, 404, NULL);
    assert_int_equal(t->app.nseqs, N);
    get_status(t, "/healthz", NULL, 200);
    call(t, "/metrics", NULL, &rs);
    assert_int_equal(rs.status, 200);
    CHECK(metric_value(rs.body, "idmint_segment_fetches_total") >= N, "fetches: %s",
          rs.body);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SEGMENT), 3 * N + (N + 6) / 7);
    idmd_seqs_close(&t->app);
    assert_null(t->app.seqs);
    idm_test_memstore_free(b, big);
    t->app.store = mem;
    tapp_free(t);
}

/* ?format=opaque: each id as its opaque public id under the service's key
 * (base32), which the key's holder turns back into the id; refused without
 * a key and on the 128-bit endpoints. */
static void test_opaque_format(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    idm_opaque_key key;
    const char *p;
    int n = 0;
    get_error(t, "/v1/snowflake", "format=opaque", 400, "format");
    IDM_ASSERT_OK(idm_opaque_key_parse("000102030405060708090a0b0c0d0e0f", &key));
    t->app.opaque_key = key;
    t->app.has_opaque = true;
    get_error(t, "/v1/uuid7", "format=opaque", 400, "format");
    call(t, "/v1/snowflake", "count=5&format=opaque", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_true(strncmp(rs.body, "{\"ids\":[\"", 9) == 0);
    for (p = strchr(rs.body, '"'); p != NULL && (p = strchr(p + 1, '"')) != NULL;) {
        char text[IDM_OPAQUE_TEXT_MAX];
        uint64_t y, id;
        idm_decoded d;
        const char *end;
        if (strncmp(p, "\"ids\"", 5) == 0 || p[1] == ']' || p[1] == ',' || p[1] == ':') {
            p++;
            continue;
        }
        end = strchr(p + 1, '"');
        assert_non_null(end);
        assert_int_equal(end - p - 1, IDM_OPAQUE_BASE32_LEN);
        snprintf(text, sizeof text, "%.*s", (int)(end - p - 1), p + 1);
        IDM_ASSERT_OK(idm_opaque_parse(text, IDM_OPAQUE_BASE32, &y));
        IDM_ASSERT_OK(idm_opaque_decrypt(&key, y, &id));
        IDM_ASSERT_OK(idm_layout_decode(t->app.layout, id, &d));
        assert_int_equal(d.value[1], 1); /* datacenter */
        assert_int_equal(d.value[2], 2); /* worker */
        n++;
        p = end;
    }
    assert_int_equal(n, 5);
    free(rs.body);
    get_status(t, "/v1/segment/orders", "count=2&format=opaque", 200);
}

static void test_metrics(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    get_status(t, "/v1/snowflake", "count=7", 200);
    call(t, "/api/snowflake/get/a", NULL, &rs);
    free(rs.body);
    call(t, "/v1/segment/orders", "count=3", &rs);
    free(rs.body);
    call(t, "/v1/uuid7", "count=2", &rs);
    free(rs.body);
    call(t, "/v1/ulid", NULL, &rs);
    free(rs.body);
    call(t, "/v1/snowflake", "count=0", &rs); /* refused: not counted */
    free(rs.body);
    /* what the HTTP layer counts: 30 us (first bucket), 2 ms, 2 s (+Inf) */
    idmd_count(&t->app, 200, 30000);
    idmd_count(&t->app, 404, 2000000);
    idmd_count(&t->app, 418, INT64_C(2000000000));

    call(t, "/metrics", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_PROM);
    assert_true(metric_value(rs.body, "idmint_ids_minted_total{kind=\"snowflake\"}") == 8);
    assert_true(metric_value(rs.body, "idmint_ids_minted_total{kind=\"segment\"}") == 3);
    assert_true(metric_value(rs.body, "idmint_ids_minted_total{kind=\"uuid7\"}") == 2);
    assert_true(metric_value(rs.body, "idmint_ids_minted_total{kind=\"uuid4\"}") == 0);
    assert_true(metric_value(rs.body, "idmint_ids_minted_total{kind=\"ulid\"}") == 1);
    assert_true(metric_value(rs.body, "idmint_http_requests_total{code=\"200\"}") == 1);
    assert_true(metric_value(rs.body, "idmint_http_requests_total{code=\"404\"}") == 1);
    assert_true(metric_value(rs.body, "idmint_http_requests_total{code=\"other\"}") == 1);
    assert_true(metric_value(rs.body, "idmint_request_duration_seconds_bucket{le=\"5e-05\"}") ==
                1);
    assert_true(metric_value(rs.body, "idmint_request_duration_seconds_bucket{le=\"0.001\"}") ==
                1);
    assert_true(metric_value(rs.body, "idmint_request_duration_seconds_bucket{le=\"0.0025\"}") ==
                2);
    assert_true(metric_value(rs.body, "idmint_request_duration_seconds_bucket{le=\"1\"}") == 2);
    assert_true(metric_value(rs.body, "idmint_request_duration_seconds_bucket{le=\"+Inf\"}") ==
                3);
    assert_true(metric_value(rs.body, "idmint_request_duration_seconds_count") == 3);
    {
        double sum = metric_value(rs.body, "idmint_request_duration_seconds_sum");
        assert_true(sum > 2.002029 && sum < 2.002031);
    }
    assert_non_null(strstr(rs.body, "# TYPE idmint_request_duration_seconds histogram\n"));
    assert_non_null(strstr(rs.body, "# TYPE idmint_ids_minted_total counter\n"));
    assert_true(metric_value(rs.body, "idmint_segment_fetches_total") >= 1);
    assert_true(metric_value(rs.body, "idmint_clock_regressions_total") == 0);
    /* every line is a comment or "name value" */
    for (const char *p = rs.body; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        if (*p != '#')
            CHECK(memchr(p, ' ', (size_t)(nl - p)) != NULL, "line %.*s", (int)(nl - p), p);
        p = nl + 1;
    }
    free(rs.body);
}

/* ---------------------------------------------------------- N1: count */

static const char *const bad_counts[] = {
    "count=0",
    "count=-5",
    "count=-1",
    "count=10001",
    "count=+5",
    "count= 5",
    "count=%205",
    "count=5%20",
    "count=0x10",
    "count=1e3",
    "count=123456789012345678901",
    "count=18446744073709551617",
    "count=4294967297",
    "count=99999999",
    "count=",
    "count",
    "count=\xd9\xa1",     /* ARABIC-INDIC DIGIT ONE */
    "count=\xef\xbc\x95", /* FULLWIDTH DIGIT FIVE */
    "count=01",
    "count=00",
    "count=1.0",
    "count=5x",
    "count=5 ",
    "count=5\t",
    "count=5&count=5",
    "count=5&format=text&count=5",
    "format=text&count=0",
    "count=5&format=xml", /* count parsed, then the batch refused */
};

/* A deterministic rng that counts what it hands out: byte i of its stream
 * is a hash of (seed, i), so two with one seed give one stream, and drawn
 * is how far along it this one is. */
typedef struct crng {
    idm_rng rng;
    uint64_t seed;
    _Atomic uint64_t drawn;
} crng;

static int crng_fill(void *ctx, void *buf, size_t n)
{
    crng *c = ctx;
    uint64_t at = atomic_fetch_add(&c->drawn, n);
    uint8_t *b = buf;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = c->seed + (at + i) * UINT64_C(0x9e3779b97f4a7c15);
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        b[i] = (uint8_t)(x ^ (x >> 31));
    }
    return 0;
}

static void crng_init(crng *c, uint64_t seed)
{
    c->rng.ctx = c;
    c->rng.fill = crng_fill;
    c->seed = seed;
    atomic_init(&c->drawn, 0);
}

/*
 * What the app's generators mint next had they minted only what the test
 * asked for: a twin of each (the same clock, node, policy and rng stream,
 * fed one id whenever the app answers one), and the sequence's next value.
 * The app's 128-bit generators draw from rng[kind] (the twins from their
 * own copies of those streams), so the test also sees every byte they draw.
 */
typedef struct twins {
    crng rng[IDMD_K_N], twin_rng[IDMD_K_N]; /* UUID7, UUID4, ULID only */
    idm_snowflake *sf;
    idm_uuid7_gen *u7;
    idm_ulid_gen *ul;
    int64_t seg_next;
} twins;

static const char *const kind_path[IDMD_K_N] = {"/v1/snowflake", "/v1/segment/orders",
                                                "/v1/uuid7", "/v1/uuid4", "/v1/ulid"};

/* Make t's 128-bit generators draw from tw's counting rngs and open their
 * twins, and a twin of its Snowflake generator (as tapp_new_ex opens it). */
static void twins_new(tapp *t, twins *tw, int64_t seg_next)
{
    idm_snowflake_opts o;
    for (int k = IDMD_K_UUID7; k <= IDMD_K_ULID; k++) {
        crng_init(&tw->rng[k], UINT64_C(0x1d3a) + (uint64_t)k);
        crng_init(&tw->twin_rng[k], UINT64_C(0x1d3a) + (uint64_t)k);
    }
    idm_uuid7_gen_free(t->app.uuid7);
    idm_ulid_gen_free(t->app.ulid);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&t->app.uuid7, t->app.clock, &tw->rng[IDMD_K_UUID7].rng));
    IDM_ASSERT_OK(idm_ulid_gen_new(&t->app.ulid, t->app.clock, &tw->rng[IDMD_K_ULID].rng, true));
    t->app.uuid4_rng = &tw->rng[IDMD_K_UUID4].rng; /* the handler's UUIDv4s */
    IDM_ASSERT_OK(idm_uuid7_gen_new(&tw->u7, t->app.clock, &tw->twin_rng[IDMD_K_UUID7].rng));
    IDM_ASSERT_OK(idm_ulid_gen_new(&tw->ul, t->app.clock, &tw->twin_rng[IDMD_K_ULID].rng, true));
    idm_snowflake_opts_init(&o);
    o.backwards = IDM_BACKWARDS_LOGICAL;
    sf_open(t, &tw->sf, &o, 2);
    tw->seg_next = seg_next;
}

static void twins_free(twins *tw)
{
    idm_snowflake_close(tw->sf);
    idm_uuid7_gen_free(tw->u7);
    idm_ulid_gen_free(tw->ul);
}

/* Mint one id of kind through the handler: it must be exactly the twin's
 * next id, the one the generator gives if nothing was minted since the
 * last id the test saw. */
static void expect_successor(tapp *t, twins *tw, int kind, const char *after)
{
    char want[48];
    idmd_response rs;
    idlist l;
    switch (kind) {
    case IDMD_K_SNOWFLAKE: {
        uint64_t v;
        IDM_ASSERT_OK(idm_snowflake_next(tw->sf, &v));
        snprintf(want, sizeof want, "%llu", ULL(v));
        break;
    }
    case IDMD_K_SEGMENT:
        snprintf(want, sizeof want, "%lld", LL(tw->seg_next++));
        break;
    case IDMD_K_UUID7: {
        idm_uuid u;
        IDM_ASSERT_OK(idm_uuid7_next(tw->u7, &u));
        idm_uuid_format(&u, want);
        break;
    }
    case IDMD_K_UUID4: {
        idm_uuid u;
        IDM_ASSERT_OK(idm_uuid4(&tw->twin_rng[IDMD_K_UUID4].rng, &u));
        idm_uuid_format(&u, want);
        break;
    }
    default: {
        idm_ulid u;
        IDM_ASSERT_OK(idm_ulid_next(tw->ul, &u));
        idm_ulid_format(&u, want);
        break;
    }
    }
    call(t, kind_path[kind], NULL, &rs);
    if (rs.status != 200)
        fail_msg("%s after %s: %d %s", kind_path[kind], after, rs.status, rs.body);
    parse_json_ids(rs.body, &l);
    assert_int_equal(l.n, 1);
    CHECK(strcmp(l.v[0], want) == 0,
          "%s after %s: got %s, but the generator's next id had nothing been minted is %s",
          kind_path[kind], after, l.v[0], want);
    idlist_free(&l);
    free(rs.body);
}

/* Every malformed count on path: 400 naming param, and nothing minted: no
 * kind's counter moved, the Snowflake state, the store's counter and every
 * byte the 128-bit generators drew are where they were, and the next id of
 * path's kind is exactly the one its generator gives had the refused
 * request never come (the test's clock moved 1 ms before it, so a mint
 * would have moved the state; the next id is minted in that same ms). */
static void check_n1(tapp *t, twins *tw, const char *path, int kind, const char *param)
{
    for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        idmd_response rs;
        uint64_t before[IDMD_K_N], drawn[IDMD_K_N];
        idm_unix_ms ms = last_ms(t);
        int64_t store = ms_next(t->ms, "orders");
        const char *want = param;
        char what[80];
        for (int k = 0; k < IDMD_K_N; k++) {
            before[k] = minted(t, k);
            drawn[k] = atomic_load(&tw->rng[k].drawn);
        }
        idm_manual_clock_advance(t->mc, 1); /* a mint would move the state */
        if (strstr(bad_counts[i], "xml") != NULL)
            want = "format";
        call(t, path, bad_counts[i], &rs);
        if (rs.status != 400)
            fail_msg("%s?%s: %d %s", path, bad_counts[i], rs.status, rs.body);
        assert_error(&rs, 400, want);
        assert_int_equal(rs.retry_after_s, 0);
        free(rs.body);
        for (int k = 0; k < IDMD_K_N; k++) {
            assert_int_equal(minted(t, k), before[k]);
            CHECK(atomic_load(&tw->rng[k].drawn) == drawn[k],
                  "%s?%s drew %llu random bytes for %s", path, bad_counts[i],
                  ULL(atomic_load(&tw->rng[k].drawn) - drawn[k]), kind_path[k]);
        }
        assert_int_equal(last_ms(t), ms);
        assert_int_equal(ms_next(t->ms, "orders"), store);
        snprintf(what, sizeof what, "refused ?%s", bad_counts[i]);
        expect_successor(t, tw, kind, what);
    }
}

static void test_n1_count(void **state)
{
    const size_t nbad = sizeof bad_counts / sizeof bad_counts[0];
    static twins tw; /* not on the stack: the app's rngs point into it */
    idm_manual_clock *mc;
    tapp *t;
    (void)state;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), true));
    t = tapp_new(NULL, mc);
    twins_new(t, &tw, 1);
    /* one of each first, so that the generators have a state (and the
     * twins are seen to follow them) */
    for (int k = 0; k < IDMD_K_N; k++)
        expect_successor(t, &tw, k, "nothing");

    ms_settle(t->ms, "orders");
    check_n1(t, &tw, "/v1/snowflake", IDMD_K_SNOWFLAKE, "count");
    check_n1(t, &tw, "/v1/segment/orders", IDMD_K_SEGMENT, "count");
    check_n1(t, &tw, "/v1/uuid7", IDMD_K_UUID7, "count");
    check_n1(t, &tw, "/v1/uuid4", IDMD_K_UUID4, "count");
    check_n1(t, &tw, "/v1/ulid", IDMD_K_ULID, "count");

    /* the sequence went on densely: 1, then one after each refusal */
    assert_int_equal(tw.seg_next, 2 + (int64_t)nbad);
    for (int k = 0; k < IDMD_K_N; k++)
        assert_int_equal(minted(t, k), 1 + nbad);
    twins_free(&tw);
    tapp_free(t);
    idm_manual_clock_free(mc);
}

static void test_count_cap(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    idlist l;
    assert_int_equal(t->cfg.count_max, 10000);
    call(t, "/v1/snowflake", "count=10000", &rs);
    assert_int_equal(rs.status, 200);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 10000, NULL);
    idlist_free(&l);
    free(rs.body);

    call(t, "/v1/uuid4", "count=10000&format=text", &rs);
    assert_int_equal(rs.status, 200);
    parse_text_ids(rs.body, &l);
    assert_int_equal(l.n, 10000);
    idlist_free(&l);
    free(rs.body);

    get_error(t, "/v1/snowflake", "count=10001", 400, "count");
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 10000);

    /* count-max is the config's */
    t->cfg.count_max = 3;
    get_status(t, "/v1/snowflake", "count=3", 200);
    call(t, "/v1/snowflake", "count=4", &rs);
    assert_error(&rs, 400, "count");
    CHECK(strstr(rs.body, "at most 3,") != NULL && strstr(rs.body, "count-max") != NULL,
          "count=4 over count-max 3: %s", rs.body);
    free(rs.body);
    /* any number above, however long, is named as such */
    call(t, "/v1/snowflake", "count=123456789012345678901234567890", &rs);
    assert_error(&rs, 400, "count");
    CHECK(strstr(rs.body, "at most 3,") != NULL, "a 30-digit count: %s", rs.body);
    free(rs.body);
    /* what is no number says what a count is */
    call(t, "/v1/snowflake", "count=4x", &rs);
    assert_error(&rs, 400, "count");
    CHECK(strstr(rs.body, "from 1 to 3") != NULL, "count=4x: %s", rs.body);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 10003);
}

/* count-max is the most ids one request mints. For a layout that mints
 * fewer than the default 10,000 within the wait bound (instagram: 1024 a
 * ms; sonyflake: 256 per 10 ms; the wait bound is 5 ms and a tick), the
 * configuration check lowers it, and then count=count-max is minted, again
 * and again back to back (each batch starting where the last left its
 * tick), never a 503; count-max + 1 is a 400 naming count-max, minting
 * nothing. Leaf's endpoints mint one id. (It was a 503 with Retry-After
 * that no retry could ever satisfy.) */
static void test_count_max_layouts(void **state)
{
    static const char *const layouts[] = {"instagram", "sonyflake"};
    (void)state;
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++) {
        idm_manual_clock *mc;
        tapp *t;
        idmd_response rs;
        idlist l;
        char err[512], q[64], want[64];
        uint32_t max;
        uint64_t last = 0;
        IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), true));
        t = tapp_new(layouts[li], mc);
        if (idmd_config_check(&t->cfg, err, sizeof err) != 0)
            fail_msg("%s: idmd_config_check: %s", layouts[li], err);
        max = t->cfg.count_max;
        print_message("layout %s: count-max %u\n", layouts[li], (unsigned)max);
        CHECK(max >= 1 && max < 10000,
              "layout %s: count-max %u: it mints fewer within the wait bound", layouts[li],
              (unsigned)max);
        for (int round = 0; round < 4; round++) {
            snprintf(q, sizeof q, "count=%u", (unsigned)max);
            call(t, "/v1/snowflake", q, &rs);
            if (rs.status != 200)
                fail_msg("%s, batch %d of count-max %u: %d %s", layouts[li], round,
                         (unsigned)max, rs.status, rs.body);
            parse_json_ids(rs.body, &l);
            assert_int_equal(l.n, max);
            for (size_t i = 0; i < l.n; i++) {
                uint64_t v = dec(l.v[i]);
                CHECK(v > last, "%s: id %zu of batch %d not above the one before", layouts[li],
                      i, round);
                last = v;
            }
            idlist_free(&l);
            free(rs.body);
        }
        snprintf(q, sizeof q, "count=%u", (unsigned)max + 1);
        call(t, "/v1/snowflake", q, &rs);
        assert_error(&rs, 400, "count");
        snprintf(want, sizeof want, "at most %u,", (unsigned)max);
        CHECK(strstr(rs.body, want) != NULL, "%s: count-max + 1: %s", layouts[li], rs.body);
        assert_int_equal(rs.retry_after_s, 0);
        free(rs.body);
        call(t, "/v1/snowflake", "count=1000000", &rs);
        assert_error(&rs, 400, "count");
        CHECK(strstr(rs.body, want) != NULL, "%s: count=1000000: %s", layouts[li], rs.body);
        free(rs.body);
        assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 4 * (uint64_t)max);
        call(t, "/api/snowflake/get/x", NULL, &rs);
        assert_int_equal(rs.status, 200);
        CHECK(dec(rs.body) > last, "%s: Leaf's id not above the last", layouts[li]);
        free(rs.body);
        tapp_free(t);
        idm_manual_clock_free(mc);
    }
}

static void test_params(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    static const struct {
        const char *path, *query, *param;
    } cases[] = {
        {"/v1/snowflake", "counts=5", "counts"},
        {"/v1/snowflake", "Count=5", "Count"},
        {"/v1/snowflake", "x", "x"},
        {"/v1/snowflake", "count=1&x=1", "x"},
        {"/v1/snowflake", "count=1&count=1", "count"},
        {"/v1/snowflake", "count=1&count=2", "count"},
        {"/v1/snowflake", "format=text&format=text", "format"},
        {"/v1/snowflake", "format=json&format=text", "format"},
        {"/v1/snowflake", "format=xml", "format"},
        {"/v1/snowflake", "format=", "format"},
        {"/v1/snowflake", "format", "format"},
        {"/v1/snowflake", "format=TEXT", "format"},
        {"/v1/snowflake", "format=text%00", "format"},
        {"/v1/snowflake", "&count=1", ""},
        {"/v1/snowflake", "count=1&&format=text", ""},
        {"/v1/snowflake", "=1", ""},
        {"/v1/segment/orders", "limit=5", "limit"},
        {"/v1/segment/orders", "count=2&count=2", "count"},
        {"/v1/uuid7", "format=csv", "format"},
        {"/v1/ulid", "seed=1", "seed"},
        {"/v1/decode/1", "id=1", "id"},
        /* an odd key is quoted safely: control bytes and non-ASCII become '?' */
        {"/v1/snowflake", "a\"b=1", "a\\\"b"},
        {"/v1/snowflake", "\x01\xff=1", "??"},
        /* a long key is cut to 31 bytes */
        {"/v1/snowflake", "abcdefghijklmnopqrstuvwxyz0123456789=1",
         "abcdefghijklmnopqrstuvwxyz01234"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        call(t, cases[i].path, cases[i].query, &rs);
        print_message("%s?%s -> %d %s", cases[i].path, cases[i].query, rs.status, rs.body);
        assert_error(&rs, 400, cases[i].param);
        free(rs.body);
    }
    /* a trailing '&': 400, naming the '&' (there is no parameter to name) */
    call(t, "/v1/snowflake", "count=1&", &rs);
    assert_error(&rs, 400, NULL);
    assert_non_null(strstr(rs.body, "'&'"));
    free(rs.body);
    get_error(t, "/v1/snowflake", "format=text&", 400, NULL);
    /* parameters on /healthz, /metrics, /ping */
    call(t, "/healthz", "verbose=1", &rs);
    assert_error(&rs, 400, "verbose");
    assert_non_null(strstr(rs.body, "/healthz takes no parameters"));
    free(rs.body);
    call(t, "/metrics", "format=text", &rs);
    assert_error(&rs, 400, "format");
    assert_non_null(strstr(rs.body, "/metrics takes no parameters"));
    free(rs.body);
    get_status(t, "/healthz", "", 200);
    for (int k = 0; k < IDMD_K_N; k++)
        assert_int_equal(minted(t, k), 0);
}

/* A parameter on /healthz, /metrics or Leaf's endpoints is named in the
 * 400, like every other unknown parameter. */
static void test_no_param_endpoints_name_it(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    call(t, "/healthz", "verbose=1", &rs);
    print_message("GET /healthz?verbose=1 -> %d %s", rs.status, rs.body);
    assert_error(&rs, 400, "verbose");
    free(rs.body);
    call(t, "/api/snowflake/get/x", "count=2", &rs);
    print_message("GET /api/snowflake/get/x?count=2 -> %d %s", rs.status, rs.body);
    assert_error(&rs, 400, "count");
    free(rs.body);
}

/* The auth scheme is case-insensitive (RFC 9110, section 11.1): "bearer
 * TOKEN" is a valid credential. */
static void test_scheme_case_insensitive(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    tapp_token(t, TOKEN);
    call_auth(t, "GET", "/healthz", NULL, "bearer " TOKEN, &rs);
    print_message("GET /healthz, Authorization: bearer <token> -> %d %s", rs.status, rs.body);
    assert_int_equal(rs.status, 200);
    free(rs.body);
}

/* ------------------------------------------------------ methods, paths */

static void test_methods_paths(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS",
                                          "get",  "GETX", "",     "TRACE"};
    static const struct {
        const char *path;
        int status;
        const char *param;
    } paths[] = {
        {"/v1/snow%66lake", 400, "path"},
        {"/v1/snow flake", 400, "path"},
        {"/v1/snowflak\xc3\xa9", 400, "path"},
        {"/v1/snowflake\t", 400, "path"},
        {"/v1/snowflake?count=1", 400, "path"}, /* the query is not the path's */
        {"/v1/segment/ord~ers", 400, "path"},
        {"/v1/segment/ord+ers", 400, "path"},
        {"", 400, "path"},
        {"v1/snowflake", 400, "path"},
        {"*", 400, "path"},
        {"//", 404, NULL},
        {"/", 404, NULL},
        {"//v1/snowflake", 404, NULL},
        {"/v1/snowflake/", 404, NULL},
        {"/v1//snowflake", 404, NULL},
        {"/V1/snowflake", 404, NULL},
        {"/v1/segment/", 404, NULL},
        {"/v1/segment/orders/", 404, NULL},
        {"/v1/segment/a/b", 404, NULL},
        {"/v1/../v1/snowflake", 404, NULL},
        {"/v2/snowflake", 404, NULL},
        {"/nope", 404, NULL},
        {"/healthz/", 404, NULL},
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        call_auth(t, methods[i], "/v1/snowflake", NULL, NULL, &rs);
        assert_error(&rs, 405, NULL);
        free(rs.body);
    }
    call_auth(t, NULL, "/v1/snowflake", NULL, NULL, &rs);
    assert_error(&rs, 405, NULL);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 0);

    /* HEAD mints nothing: refused where it would, and Allow says GET */
    call_auth(t, "HEAD", "/v1/snowflake", NULL, NULL, &rs);
    assert_error(&rs, 405, NULL);
    assert_string_equal(rs.allow, "GET");
    free(rs.body);
    call_auth(t, "POST", "/healthz", NULL, NULL, &rs);
    assert_error(&rs, 405, NULL);
    assert_string_equal(rs.allow, "GET, HEAD");
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 0);
    call_auth(t, "HEAD", "/healthz", NULL, NULL, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        call(t, paths[i].path, NULL, &rs);
        print_message("'%s' -> %d %s", paths[i].path, rs.status, rs.body);
        assert_error(&rs, paths[i].status, paths[i].param);
        free(rs.body);
    }
    /* a NULL path is an empty one */
    get_error(t, NULL, NULL, 400, "path");
    /* the 404 quotes at most 80 bytes of the path */
    {
        char p[300];
        memset(p, 'a', sizeof p - 1);
        p[0] = '/';
        p[sizeof p - 1] = '\0';
        call(t, p, NULL, &rs);
        assert_error(&rs, 404, NULL);
        assert_true(rs.len < 200);
        free(rs.body);
    }
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 0);
}

/* ------------------------------------------------------------------ auth */

static void test_auth(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    static const char *const wrong[] = {
        NULL,
        "",
        "Bearer",
        "Bearer ",
        "Basic " TOKEN,
        "Token " TOKEN,
        TOKEN,
        "Bearer  " TOKEN,
        "Bearer " TOKEN " ",
        "Bearer s3cret-token-012345678",    /* a prefix */
        "Bearer s3cret-token-01234567890",  /* longer */
        "Bearer s3cret-token-0123456788",   /* last byte */
        "Bearer S3cret-token-0123456789",   /* first byte */
        "Bearer x",
    };
    static const char *const paths[] = {"/v1/snowflake", "/healthz", "/metrics", "/ping",
                                        "/v1/segment/orders", "/nope", "/bad path"};
    tapp_token(t, TOKEN);
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
            call_auth(t, "GET", paths[p], NULL, wrong[i], &rs);
            if (rs.status != 401)
                fail_msg("%s with '%s': %d", paths[p], wrong[i] ? wrong[i] : "(none)",
                         rs.status);
            assert_error(&rs, 401, NULL);
            assert_true(rs.www_authenticate);
            free(rs.body);
        }
    }
    for (int k = 0; k < IDMD_K_N; k++)
        assert_int_equal(minted(t, k), 0);
    assert_int_equal(t->app.nseqs, 0);

    call_auth(t, "GET", "/v1/snowflake", NULL, "Bearer " TOKEN, &rs);
    assert_int_equal(rs.status, 200);
    assert_false(rs.www_authenticate);
    assert_string_equal(rs.content_type, CT_JSON);
    free(rs.body);
    call_auth(t, "GET", "/healthz", NULL, "Bearer " TOKEN, &rs);
    assert_int_equal(rs.status, 200);
    assert_false(rs.www_authenticate);
    assert_string_equal(rs.body, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n");
    free(rs.body);
    call_auth(t, "HEAD", "/metrics", NULL, "Bearer " TOKEN, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
    /* the method is checked first */
    call_auth(t, "POST", "/v1/snowflake", NULL, NULL, &rs);
    assert_error(&rs, 405, NULL);
    assert_false(rs.www_authenticate);
    free(rs.body);
    /* an authenticated bad request is a 400 */
    call_auth(t, "GET", "/v1/snowflake", "count=0", "Bearer " TOKEN, &rs);
    assert_error(&rs, 400, "count");
    assert_false(rs.www_authenticate);
    free(rs.body);
}

/* Tokens are kept and compared whole, up to IDMD_TOKEN_MAX bytes (it was
 * cut to 255: the first 255 bytes of a 305-byte token passed, the token
 * itself did not). For a 305-byte and a 4096-byte token, only the token
 * itself passes: not its first 255 or 4095 bytes, not one byte changed
 * after them or at its start, not one byte more or less. */
static void test_auth_long_tokens(void **state)
{
    static const size_t lens[] = {305, IDMD_TOKEN_MAX};
    static char tok[IDMD_TOKEN_MAX + 1], auth[IDMD_TOKEN_MAX + 16];
    (void)state;
    assert_int_equal(IDMD_TOKEN_MAX, 4096);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t len = lens[li];
        tapp *t = tapp_new(NULL, NULL);
        idmd_response rs;
        struct {
            size_t n;   /* bytes of the token presented */
            long flip;  /* the byte changed, -1: none */
            const char *tail;
        } wrong[] = {
            {255, -1, ""},       {256, -1, ""},      {len - 1, -1, ""}, {4095, -1, ""},
            {len, 255, ""},      {len, 256, ""},     {len, (long)len - 1, ""},
            {len, 0, ""},        {len, -1, "x"},     {255, -1, "x"},
        };
        for (size_t i = 0; i < len; i++)
            tok[i] = (char)('!' + (i * 7 + i / 94) % 94); /* printable, no space */
        tok[len] = '\0';
        tapp_token(t, tok);
        assert_int_equal(t->app.token_len, len);
        for (size_t w = 0; w < sizeof wrong / sizeof wrong[0]; w++) {
            size_t n = wrong[w].n < len ? wrong[w].n : len;
            snprintf(auth, sizeof auth, "Bearer %.*s%s", (int)n, tok, wrong[w].tail);
            if (wrong[w].flip >= 0)
                auth[7 + wrong[w].flip] ^= 0x01;
            if (strcmp(auth + 7, tok) == 0)
                continue; /* {4095} with a 305-byte token is the token */
            call_auth(t, "GET", "/v1/snowflake", NULL, auth, &rs);
            if (rs.status != 401)
                fail_msg("a %zu-byte token; presented %zu bytes%s, byte %ld changed: %d %s",
                         len, strlen(auth + 7), wrong[w].tail[0] ? " plus one" : "",
                         wrong[w].flip, rs.status, rs.body);
            assert_error(&rs, 401, NULL);
            assert_true(rs.www_authenticate);
            free(rs.body);
        }
        assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 0);
        snprintf(auth, sizeof auth, "Bearer %s", tok);
        call_auth(t, "GET", "/v1/snowflake", NULL, auth, &rs);
        if (rs.status != 200)
            fail_msg("the %zu-byte token itself: %d %s", len, rs.status, rs.body);
        assert_false(rs.www_authenticate);
        free(rs.body);
        assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 1);
        tapp_free(t);
    }
}

/* ------------------------------------------------ exhaustion, clock back */

static void test_exhaustion(void **state)
{
    idm_manual_clock *mc;
    tapp *t;
    idmd_response rs;
    idlist l;
    idm_unix_ms ms;
    (void)state;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), false));
    t = tapp_new("time:41@1ms,datacenter:5,worker:5,seq:2", mc);
    assert_int_equal(idm_layout_seq_bits(t->app.layout), 2);

    call(t, "/v1/snowflake", "count=2", &rs);
    assert_int_equal(rs.status, 200);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 2, NULL);
    idlist_free(&l);
    free(rs.body);
    ms = last_ms(t);

    call(t, "/v1/snowflake", "count=1000", &rs);
    print_message("count=1000 -> %d %s", rs.status, rs.body);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    assert_non_null(strstr(rs.body, "more ids than the layout makes per tick"));
    free(rs.body);
    call(t, "/api/snowflake/get/x", NULL, &rs); /* 2 of 4 left in this tick */
    assert_int_equal(rs.status, 200);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 3);
    assert_int_equal(last_ms(t), ms);
    assert_int_equal(atomic_load(&t->app.m.exhaustion_refusals), 1);

    call(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_sequence_exhaustions_total") == 1);
    assert_true(metric_value(rs.body, "idmint_ids_minted_total{kind=\"snowflake\"}") == 3);
    free(rs.body);

    /* the clock moves: minting goes on */
    idm_manual_clock_advance(mc, 1);
    call(t, "/v1/snowflake", "count=4", &rs);
    assert_int_equal(rs.status, 200);
    assert_int_equal(rs.retry_after_s, 0);
    free(rs.body);
    tapp_free(t);
    idm_manual_clock_free(mc);
}

static void test_clock_back(void **state)
{
    idm_manual_clock *mc;
    tapp *t;
    idmd_response rs;
    idlist l;
    uint64_t before = 0, after = 0;
    (void)state;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), true));
    t = tapp_new(NULL, mc);
    call(t, "/v1/snowflake", "count=3", &rs);
    assert_int_equal(rs.status, 200);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 3, NULL);
    before = dec(l.v[2]);
    idlist_free(&l);
    free(rs.body);

    idm_manual_clock_advance(mc, -5000);
    call(t, "/v1/snowflake", NULL, &rs);
    print_message("clock back: %d %s", rs.status, rs.body);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    assert_non_null(strstr(rs.body, "clock"));
    free(rs.body);
    call(t, "/api/snowflake/get/x", NULL, &rs);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    free(rs.body);
    call(t, "/healthz", NULL, &rs);
    print_message("healthz: %d %s", rs.status, rs.body);
    assert_int_equal(rs.status, 503);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_true(strncmp(rs.body, "{\"status\":\"unavailable\",\"reason\":\"", 34) == 0);
    assert_non_null(strstr(rs.body, "clock"));
    free(rs.body);
    /* the 128-bit kinds and segments do not depend on the snowflake state */
    get_status(t, "/v1/segment/orders", NULL, 200);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 3);
    assert_int_equal(atomic_load(&t->app.m.clock_refusals), 2);

    call(t, "/metrics", NULL, &rs);
    assert_true(metric_value(rs.body, "idmint_clock_regressions_total") == 2);
    free(rs.body);

    idm_manual_clock_advance(mc, 5001);
    call(t, "/v1/snowflake", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_int_equal(rs.retry_after_s, 0);
    parse_json_ids(rs.body, &l);
    check_snowflakes(t, &l, 1, &after);
    assert_true(after > before);
    idlist_free(&l);
    free(rs.body);
    get_body(t, "/healthz", NULL, "{\"status\":\"ok\",\"layout\":\"twitter\"}\n");
    tapp_free(t);
    idm_manual_clock_free(mc);
}

/* A lease renewal at mc's time now (10 s on the monotonic clock, 8 s on the
 * wall clock), after which /healthz answers 200 and a snowflake is minted. */
static void renew_mints(tapp *t, idm_manual_clock *mc)
{
    const idm_clock *c = idm_manual_clock_clock(mc);
    int64_t s = INT64_C(1000000000);
    IDM_ASSERT_OK(idm_snowflake_guard(t->app.gen, c->mono_ns(c->ctx) + 10 * s,
                                      c->wall_ns(c->ctx) + 8 * s,
                                      idm_manual_clock_now_ms(mc) + 10000));
    get_status(t, "/healthz", NULL, 200);
    get_status(t, "/v1/snowflake", NULL, 200);
}

/* /healthz answers 503 whenever a mint would fail now, naming the reason
 * (idm_snowflake_check), and 200 again when it would work:
 *  - a wall clock stepped forward past the lease guard's wall deadline
 *    (monotonic time within its own): minting fails, and /healthz said 200;
 *    a renewal at the new time makes both work again; a dropped guard;
 *  - under the refuse policy, a clock 5 ms back (within the 10 ms /healthz
 *    used to allow whatever the policy): minting fails, /healthz said 200. */
static void test_health_mint_check(void **state)
{
    idm_manual_clock *mc;
    tapp *t;
    idmd_response rs;
    (void)state;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), false));
    t = tapp_new_ex(NULL, mc, true, IDM_BACKWARDS_LOGICAL);
    call(t, "/healthz", NULL, &rs); /* no guard given yet: nothing is minted */
    assert_int_equal(rs.status, 503);
    CHECK(strstr(rs.body, "lease") != NULL, "no guard: %s", rs.body);
    free(rs.body);
    renew_mints(t, mc); /* a renewal: both work */

    idm_manual_clock_skew(mc, 9000, 0); /* the wall clock steps 9 s forward */
    call(t, "/v1/snowflake", NULL, &rs);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    free(rs.body);
    call(t, "/healthz", NULL, &rs);
    print_message("wall clock past the lease's wall deadline: healthz %d %s", rs.status,
                  rs.body);
    assert_int_equal(rs.status, 503);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_true(strncmp(rs.body, "{\"status\":\"unavailable\",\"reason\":\"", 34) == 0);
    CHECK(strstr(rs.body, "lease") != NULL && strstr(rs.body, "wall") != NULL,
          "the reason names the lease's wall deadline: %s", rs.body);
    free(rs.body);
    renew_mints(t, mc); /* a renewal at the new time: both work again */
    idm_snowflake_guard_drop(t->app.gen);
    call(t, "/healthz", NULL, &rs);
    assert_int_equal(rs.status, 503);
    CHECK(strstr(rs.body, "lease") != NULL, "guard dropped: %s", rs.body);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 2);
    tapp_free(t);

    t = tapp_new_ex(NULL, mc, false, IDM_BACKWARDS_REFUSE);
    get_status(t, "/v1/snowflake", NULL, 200);
    idm_manual_clock_advance(mc, -5);
    get_error(t, "/v1/snowflake", NULL, 503, NULL);
    call(t, "/healthz", NULL, &rs);
    print_message("refuse policy, clock 5 ms back: healthz %d %s", rs.status, rs.body);
    assert_int_equal(rs.status, 503);
    CHECK(strstr(rs.body, "clock") != NULL, "refuse, 5 ms back: %s", rs.body);
    free(rs.body);
    idm_manual_clock_advance(mc, 6);
    get_status(t, "/healthz", NULL, 200);
    tapp_free(t);
    idm_manual_clock_free(mc);
}

/* The reason of a 503 /healthz answer, checked to be one. */
static void assert_unhealthy(const idmd_response *rs, const char *what)
{
    CHECK(rs->status == 503, "%s: healthz %d %s", what, rs->status, rs->body);
    assert_string_equal(rs->content_type, CT_JSON);
    CHECK(strncmp(rs->body, "{\"status\":\"unavailable\",\"reason\":\"", 34) == 0, "%s: %s",
          what, rs->body);
}

/*
 * A real worker-id lease (file:// in a temporary directory, on the test's
 * manual clock): /healthz is 200 naming the leased worker while the lease
 * has more than a quarter of its TTL to run, and 503 naming the lease as
 * about to expire once less is left, while ids are still minted (health
 * says so before minting stops); past the guard's deadline minting stops
 * and /healthz still names the lease. TTL 1 h, margin 10 min: the claim's
 * deadline is 50 min after it, "about to expire" from 35 min on. No renewal
 * comes meanwhile (the keeper waits 20 min of real time), so the test's
 * clock alone moves the deadline nearer: the boundary is checked to the ms.
 */
static void test_health_lease_expiring(void **state)
{
    const int64_t ttl = 3600000, margin = 600000;
    char *dir = idm_test_tmpdir(), url[4200], want[96];
    idm_manual_clock *mc;
    const idm_clock *c;
    idm_lease_status ls;
    idmd_response rs;
    tapp *t;
    int64_t left_ms;
    (void)state;
    snprintf(url, sizeof url, "file://%s", dir);
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), false));
    c = idm_manual_clock_clock(mc);
    t = tapp_new_ex(NULL, mc, true, IDM_BACKWARDS_LOGICAL);
    tapp_lease(t, url, ttl, margin);
    idm_lease_status_get(t->app.lease, &ls);
    assert_false(ls.lost);
    /* the premise: the deadline is ttl - margin ahead on the test's clock */
    left_ms = (ls.deadline - c->mono_ns(c->ctx)) / 1000000;
    assert_int_equal(left_ms, ttl - margin);

    call(t, "/healthz", NULL, &rs);
    print_message("a fresh lease (worker %u): healthz %d %s", (unsigned)ls.worker, rs.status,
                  rs.body);
    assert_int_equal(rs.status, 200);
    snprintf(want, sizeof want, "{\"status\":\"ok\",\"layout\":\"twitter\",\"worker\":%u}\n",
             (unsigned)ls.worker);
    assert_string_equal(rs.body, want);
    free(rs.body);

    /* exactly a quarter of the TTL left: still 200 */
    idm_manual_clock_advance(mc, left_ms - ttl / 4);
    call(t, "/healthz", NULL, &rs);
    CHECK(rs.status == 200, "%lld ms left of the lease (ttl/4): healthz %d %s",
          LL(ttl / 4), rs.status, rs.body);
    free(rs.body);

    /* 1 ms less: 503, the reason naming the lease about to expire */
    idm_manual_clock_advance(mc, 1);
    call(t, "/healthz", NULL, &rs);
    print_message("%lld ms left of the lease: healthz %d %s", LL(ttl / 4 - 1), rs.status,
                  rs.body);
    assert_unhealthy(&rs, "less than ttl/4 left");
    snprintf(want, sizeof want, "the worker-id lease for worker %u is about to expire",
             (unsigned)ls.worker);
    CHECK(strstr(rs.body, want) != NULL, "the reason names the lease: %s", rs.body);
    free(rs.body);
    /* minting goes on meanwhile: /healthz says so before it stops */
    call(t, "/v1/snowflake", NULL, &rs);
    CHECK(rs.status == 200, "the lease still valid: snowflake %d %s", rs.status, rs.body);
    free(rs.body);

    /* at the guard's deadline minting stops, and /healthz still names the lease */
    idm_manual_clock_advance(mc, ttl / 4 - 1);
    call(t, "/v1/snowflake", NULL, &rs);
    assert_error(&rs, 503, NULL);
    assert_true(rs.retry_after_s > 0);
    free(rs.body);
    call(t, "/healthz", NULL, &rs);
    print_message("at the lease's deadline: healthz %d %s", rs.status, rs.body);
    assert_unhealthy(&rs, "at the lease's deadline");
    CHECK(strstr(rs.body, "lease") != NULL, "the reason names the lease: %s", rs.body);
    free(rs.body);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), 1);
    tapp_free(t);
    idm_manual_clock_free(mc);
    idm_test_rmtree(dir);
    free(dir);
}

/* --------------------------------------------------------------- threads */

#define TH_N 4
#define TH_REQ 2000
#define TH_COUNT 10

typedef struct th_arg {
    tapp *t;
    uint64_t *out; /* TH_REQ * TH_COUNT */
    int bad;
} th_arg;

static void *th_main(void *p)
{
    th_arg *a = p;
    size_t k = 0;
    for (int r = 0; r < TH_REQ; r++) {
        idmd_request rq = {"GET", "/v1/snowflake", "count=10&format=text", NULL};
        idmd_response rs;
        char *s;
        memset(&rs, 0, sizeof rs);
        idmd_handle(&a->t->app, &rq, &rs);
        if (rs.status != 200 || rs.body == NULL) {
            a->bad++;
            free(rs.body);
            continue;
        }
        s = rs.body;
        for (int i = 0; i < TH_COUNT; i++) {
            char *end;
            unsigned long long v = strtoull(s, &end, 10);
            if (end == s || *end != '\n') {
                a->bad++;
                break;
            }
            a->out[k++] = v;
            s = end + 1;
        }
        if (*s != '\0')
            a->bad++;
        free(rs.body);
    }
    return NULL;
}

static void test_threads(void **state)
{
    tapp *t = *state;
    pthread_t th[TH_N];
    th_arg a[TH_N];
    uint64_t *all = calloc((size_t)TH_N * TH_REQ * TH_COUNT, sizeof *all);
    assert_non_null(all);
    for (int i = 0; i < TH_N; i++) {
        a[i].t = t;
        a[i].out = all + (size_t)i * TH_REQ * TH_COUNT;
        a[i].bad = 0;
        assert_int_equal(pthread_create(&th[i], NULL, th_main, &a[i]), 0);
    }
    for (int i = 0; i < TH_N; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(a[i].bad, 0);
        /* each thread's ids increase */
        assert_true(idm_test_strictly_increasing(a[i].out, TH_REQ * TH_COUNT));
    }
    assert_int_equal(idm_test_count_duplicates(all, (size_t)TH_N * TH_REQ * TH_COUNT), 0);
    assert_int_equal(minted(t, IDMD_K_SNOWFLAKE), TH_N * TH_REQ * TH_COUNT);
    free(all);
}

/* ------------------------------------------------------- the console (i23) */

/* body holds want, or the test fails naming both. */
static void has(const idmd_response *rs, const char *want)
{
    CHECK(strstr(rs->body, want) != NULL, "expected %s in %s", want, rs->body);
}

/* /v1/status without a lease or a monitor: the document's parts, the node
 * values, the counts minted, the rates empty; a token needed. */
static void test_status_plain(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    char want[200];
    t->app.node[1] = 1; /* datacenter, as the generator was opened */
    t->app.node[2] = 2; /* worker */
    get_status(t, "/v1/snowflake", "count=3", 200);
    get_status(t, "/v1/uuid7", "count=2", 200);
    call(t, "/v1/status", NULL, &rs);
    print_message("status: %s", rs.body);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    snprintf(want, sizeof want, "{\"version\":\"%s\",\"now\":\"", idm_version());
    CHECK(strncmp(rs.body, want, strlen(want)) == 0, "%s", rs.body);
    has(&rs, ",\"uptime_s\":0,\"health\":{\"ok\":true,\"reason\":null,\"warnings\":[]},");
    has(&rs, "\"layout\":{\"name\":\"twitter\",\"text\":\"time:41@1ms,datacenter:5,worker:5,"
             "seq:12\",\"epoch_ms\":1288834974657,\"epoch\":\"2010-11-04T01:42:54.657Z\","
             "\"tick_ms\":1},");
    has(&rs, "\"node\":{\"datacenter\":1,\"worker\":2},\"worker_id\":null,\"lease\":null,");
    has(&rs, "\"clock\":{\"offset_ms\":0,\"last_step_ms\":0,\"steps\":0,\"drift_ppm\":0,"
             "\"stepped\":false,\"drifting\":false},");
    has(&rs, "\"minted\":{\"snowflake\":3,\"segment\":0,\"uuid7\":2,\"uuid4\":0,\"ulid\":0,"
             "\"total\":5},");
    has(&rs, "\"rates\":{\"interval_s\":1,\"ids_per_s\":[],\"last\":0,\"avg_60s\":0}}\n");
    free(rs.body);
    /* it mints nothing, and takes no parameter */
    get_error(t, "/v1/status", "x=1", 400, "x");
    call(t, "/v1/status", NULL, &rs);
    has(&rs, "\"total\":5}");
    free(rs.body);
    call_auth(t, "HEAD", "/v1/status", NULL, NULL, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
    tapp_token(t, TOKEN);
    call(t, "/v1/status", NULL, &rs);
    assert_error(&rs, 401, NULL);
    free(rs.body);
    call_auth(t, "GET", "/v1/status", NULL, "Bearer " TOKEN, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
}

/* The monitor driven by hand on a manual clock: rates from the minted
 * counters over the ticks' times, a wall step seen as a step and an
 * offset, uptime, the ring of 60. */
static void test_status_monitor(void **state)
{
    idm_manual_clock *mc;
    const idm_clock *c;
    idmd_response rs;
    tapp *t;
    (void)state;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), false));
    c = idm_manual_clock_clock(mc);
    t = tapp_new(NULL, mc);
    assert_int_equal(idmd_monitor_init(&t->app), 0);
    get_status(t, "/v1/snowflake", "count=10", 200);
    idm_manual_clock_advance(mc, 1000);
    idmd_monitor_tick(&t->app, c->mono_ns(c->ctx));
    get_status(t, "/v1/ulid", "count=5", 200);
    idm_manual_clock_advance(mc, 500); /* 5 ids in half a second */
    idmd_monitor_tick(&t->app, c->mono_ns(c->ctx));
    idm_manual_clock_advance(mc, 500);
    idmd_monitor_tick(&t->app, c->mono_ns(c->ctx));
    call(t, "/v1/status", NULL, &rs);
    print_message("after 3 ticks: %s", rs.body);
    has(&rs, "\"uptime_s\":2,");
    has(&rs, "\"rates\":{\"interval_s\":1,\"ids_per_s\":[10,10,0],\"last\":0,"
             "\"avg_60s\":6.667}}");
    has(&rs, "\"clock\":{\"offset_ms\":0,\"last_step_ms\":0,\"steps\":0,");
    free(rs.body);
    /* the wall clock stepped back 5 s: a step, and the offset since start */
    idm_manual_clock_skew(mc, -5000, 0);
    idm_manual_clock_advance(mc, 1000);
    idmd_monitor_tick(&t->app, c->mono_ns(c->ctx));
    call(t, "/v1/status", NULL, &rs);
    print_message("after a step back: %s", rs.body);
    has(&rs, "\"clock\":{\"offset_ms\":-5000,\"last_step_ms\":-5000,\"steps\":1,");
    has(&rs, "\"stepped\":true,");
    free(rs.body);
    /* a tick at the same time adds no slot; 70 more keep the last 60 */
    idmd_monitor_tick(&t->app, c->mono_ns(c->ctx));
    for (int i = 0; i < 70; i++) {
        get_status(t, "/v1/uuid4", i == 69 ? "count=7" : NULL, 200);
        idm_manual_clock_advance(mc, 1000);
        idmd_monitor_tick(&t->app, c->mono_ns(c->ctx));
    }
    call(t, "/v1/status", NULL, &rs);
    {
        const char *a = strstr(rs.body, "\"ids_per_s\":[");
        size_t n = 1;
        assert_non_null(a);
        for (const char *q = a; *q != ']'; q++)
            n += *q == ',';
        CHECK(n == IDMD_RATE_SLOTS, "%zu rates kept: %s", n, a);
    }
    has(&rs, ",1,7],\"last\":7,");
    /* a minute past the step it is no longer "stepped"; the count stays */
    has(&rs, "\"steps\":1,");
    has(&rs, "\"stepped\":false,");
    free(rs.body);
    idmd_monitor_destroy(&t->app);
    tapp_free(t);
    idm_manual_clock_free(mc);
}

/* Each state of a plain lease in /v1/status, the coordinator's password
 * masked, the deadline in wall time, and health's reason the very one of
 * /healthz. */
static void test_status_lease(void **state)
{
    const int64_t ttl = 3600000, margin = 600000;
    char *dir = idm_test_tmpdir(), url[4200], want[300], reason[400];
    idm_manual_clock *mc;
    idm_lease_status ls;
    idmd_response rs, hz;
    const char *r;
    tapp *t;
    (void)state;
    snprintf(url, sizeof url, "file://%s", dir);
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000), false));
    t = tapp_new_ex(NULL, mc, true, IDM_BACKWARDS_LOGICAL);
    tapp_lease(t, url, ttl, margin);
    idm_lease_status_get(t->app.lease, &ls);
    snprintf(t->cfg.lease, sizeof t->cfg.lease, "etcd://user:hunter2@127.0.0.1:1/x");
    call(t, "/v1/status", NULL, &rs);
    print_message("held: %s", rs.body);
    CHECK(strstr(rs.body, "hunter2") == NULL, "the password shown: %s", rs.body);
    snprintf(want, sizeof want,
             "\"worker_id\":%u,\"lease\":{\"coordinator\":\"etcd://user:***@127.0.0.1:1/x\","
             "\"field\":\"worker\",\"state\":\"held\",\"lost_reason\":null,"
             "\"deadline_in_ms\":%lld,\"deadline\":\"2023-11-14T23:03:20.000Z\","
             "\"ttl_ms\":3600000,\"renewals\":1,\"failures\":0,\"last_error\":null,",
             (unsigned)ls.worker, LL(ttl - margin));
    has(&rs, want);
    snprintf(want, sizeof want, "\"node\":{\"datacenter\":0,\"worker\":%u}",
             (unsigned)ls.worker);
    has(&rs, want);
    free(rs.body);
    /* past the deadline: lost, health's reason that of /healthz */
    idm_manual_clock_advance(mc, ttl - margin + 1);
    call(t, "/v1/status", NULL, &rs);
    call(t, "/healthz", NULL, &hz);
    print_message("past the deadline: %s", rs.body);
    has(&rs, "\"state\":\"lost\",\"lost_reason\":\"the deadline passed");
    has(&rs, "\"deadline_in_ms\":-1,");
    has(&rs, "\"health\":{\"ok\":false,\"reason\":\"");
    assert_int_equal(hz.status, 503);
    r = strstr(hz.body, "\"reason\":\"");
    assert_non_null(r);
    snprintf(reason, sizeof reason, "%s", r);
    *strchr(reason + 10, '"') = '\0';
    has(&rs, reason);
    free(rs.body);
    free(hz.body);
    tapp_free(t);
    idm_manual_clock_free(mc);
    idm_test_rmtree(dir);
    free(dir);
}

/* The tools' endpoints: the CLI's --json document byte for byte (what
 * cli_tool_run prints), the server's checks (400 naming the parameter),
 * the tool's own refusals (400 with its message), nothing minted. */
static void test_tools(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    cli_tool_result r;
    char *argv[] = {"plan", "--json", "--layout=sonyflake", "--at=2026-01-01T00:00:00Z",
                    "--node=machine=3"};
    static const struct {
        const char *path, *query, *param;
    } bad[] = {
        {"/v1/plan", "nope=1", "nope"},
        {"/v1/plan", "json=1", "json"},
        {"/v1/plan", "help", "help"},
        {"/v1/birthday", "bits=64&plot=x.svg", "plot"},
        {"/v1/plan", "layout=twitter&layout=twitter", "layout"},
        {"/v1/plan", "layout=", "layout"},
        {"/v1/plan", "layout", "layout"},
        {"/v1/plan", "layout=twit%74er", "layout"},
        {"/v1/plan", "at=2026-01-01T00:00:00+00:00", "at"},
        {"/v1/plan", "layout=a b", "layout"},
        {"/v1/plan", "layout=tw\x01", "layout"},
        {"/v1/plan", "layout=tw\xc3\xa9", "layout"},
        {"/v1/plan", "layout=twitter&", ""},
        {"/v1/birthday", "bits=64&rate=1&duration=1d&per-ms=yes", "per-ms"},
        {"/v1/birthday", "bits=64&rate=1&duration=1d&per-ms=1&per-ms=1", "per-ms"},
        {"/v1/estimate", "rate=1&rate=2", "rate"},
    };
    static const struct {
        const char *path, *query;
    } refused[] = {
        {"/v1/plan", "layout=nope"},
        {"/v1/plan", "node=worker=ordinal"},
        {"/v1/plan", "workers=-1"},
        {"/v1/estimate", NULL}, /* no rate */
        {"/v1/birthday", "bits=64&rate=1&duration=1d&points=1"},
        {"/v1/birthday", "bits=64&rate=1&duration=1d&points=501"},
    };
    memset(&r, 0, sizeof r);
    IDM_ASSERT_OK(cli_tool_run("plan", 5, argv, &r));
    assert_int_equal(r.status, 0);
    call(t, "/v1/plan", "layout=sonyflake&at=2026-01-01T00:00:00Z&node=machine=3", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, CT_JSON);
    assert_int_equal(rs.len, r.out_len);
    assert_memory_equal(rs.body, r.out, r.out_len);
    free(rs.body);
    cli_tool_result_free(&r);
    get_status(t, "/v1/estimate", "rate=200000&processes=400&skew=5&surge=2&rows=100000000000",
               200);
    get_status(t, "/v1/birthday", "bits=74&rate=1000&duration=10000y&points=60&per-ms", 200);
    get_status(t, "/v1/birthday", "bits=74&rate=1000&duration=1y&per-ms=true", 200);
    /* per-ms=0 is per-ms not given: the same document as without it */
    {
        idmd_response a, b;
        call(t, "/v1/birthday", "bits=64&rate=1000&duration=1y&per-ms=0", &a);
        call(t, "/v1/birthday", "bits=64&rate=1000&duration=1y", &b);
        assert_int_equal(a.status, 200);
        assert_string_equal(a.body, b.body);
        call(t, "/v1/birthday", "bits=64&rate=1000&duration=1y&per-ms=false", &rs);
        assert_string_equal(rs.body, b.body);
        free(rs.body);
        call(t, "/v1/birthday", "bits=64&rate=1000&duration=1y&per-ms=1", &rs);
        CHECK(strcmp(rs.body, b.body) != 0, "per-ms=1 changed nothing: %s", rs.body);
        free(rs.body);
        free(a.body);
        free(b.body);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        call(t, bad[i].path, bad[i].query, &rs);
        print_message("%s?%s: %d %s", bad[i].path, bad[i].query, rs.status, rs.body);
        assert_error(&rs, 400, bad[i].param);
        free(rs.body);
    }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        call(t, refused[i].path, refused[i].query, &rs);
        print_message("%s?%s: %d %s", refused[i].path, refused[i].query ? refused[i].query : "",
                      rs.status, rs.body);
        assert_error(&rs, 400, NULL);
        CHECK(strstr(rs.body, "idmint:") == NULL, "the CLI's prefix kept: %s", rs.body);
        free(rs.body);
    }
    call_auth(t, "HEAD", "/v1/plan", "layout=twitter", NULL, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
    call(t, "/v1/status", NULL, &rs);
    has(&rs, "\"total\":0}");
    free(rs.body);
}

/* decode's layout= and epoch=, and ObjectIds. */
static void test_decode_layouts(void **state)
{
    tapp *t = *state;
    get_body(t, "/v1/decode/1541815603606036480", "layout=sonyflake",
             "{\"id\":\"1541815603606036480\",\"kind\":\"snowflake\",\"layout\":\"sonyflake\","
             "\"time\":\"2043-10-15T12:01:53.620Z\",\"unix_ms\":2328523313620,\"seq\":23,"
             "\"machine\":40960}\n");
    get_body(t, "/v1/decode/1541815603606036480",
             "layout=time:39@10ms,worker:16,seq:8&epoch=2014-09-01T00:00:00Z",
             "{\"id\":\"1541815603606036480\",\"kind\":\"snowflake\",\"layout\":\"time:39@10ms,"
             "worker:16,seq:8\",\"time\":\"2043-10-15T12:01:53.620Z\",\"unix_ms\":"
             "2328523313620,\"worker\":6048,\"seq\":0}\n");
    /* epoch alone: the server's layout from another epoch */
    get_body(t, "/v1/decode/1541815603606036480", "epoch=1288834974657&format=json",
             "{\"id\":\"1541815603606036480\",\"kind\":\"snowflake\",\"layout\":\"twitter\","
             "\"time\":\"2022-06-28T16:07:40.105Z\",\"unix_ms\":1656432460105,\"datacenter\":11,"
             "\"worker\":26,\"seq\":0}\n");
    get_body(t, "/v1/decode/507f1f77bcf86cd799439011", NULL,
             "{\"id\":\"507f1f77bcf86cd799439011\",\"kind\":\"objectid\",\"time\":"
             "\"2012-10-17T21:13:27.000Z\",\"unix_ms\":1350508407000,\"process\":\"bcf86cd799\","
             "\"counter\":4427793}\n");
    /* a layout given with a UUID is checked, and not used */
    get_status(t, "/v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAV", "layout=sonyflake", 200);
    get_error(t, "/v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAV", "layout=nope", 400, "layout");
    get_error(t, "/v1/decode/1", "layout=nope", 400, "layout");
    get_error(t, "/v1/decode/1", "layout=time:41@1ms,seq:22", 400, "epoch");
    get_error(t, "/v1/decode/1125899906842624", "layout=time:41@1ms,seq:2&epoch=0", 400,
              "id");
    get_error(t, "/v1/decode/1", "layout=time:41@1ms,nope&epoch=0", 400, "layout");
    get_error(t, "/v1/decode/1", "epoch=soon", 400, "epoch");
    get_error(t, "/v1/decode/1", "epoch=2020-01-01T00:00:00+01:00", 400, "epoch");
    get_error(t, "/v1/decode/1", "layout=twitter&layout=twitter", 400, "layout");
    get_error(t, "/v1/decode/1", "layout=", 400, "layout");
    get_error(t, "/v1/decode/1", "count=1", 400, "count");
    get_error(t, "/v1/decode/507f1f77bcf86cd79943901g", NULL, 400, "id");
}

/* The console's files: no token, their headers, HEAD, 404, the redirect. */
static void test_ui(void **state)
{
    tapp *t = *state;
    idmd_response rs;
    const unsigned char *data;
    size_t len;
    const char *type;
    assert_true(idmd_ui_file("index.html", &data, &len, &type));
    tapp_token(t, TOKEN);
    call(t, "/ui/", NULL, &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, type);
    assert_int_equal(rs.len, len);
    assert_memory_equal(rs.body, data, len);
    assert_non_null(rs.csp);
    has(&(idmd_response){.body = (char *)rs.csp}, "script-src 'self'");
    assert_true(rs.nosniff);
    assert_string_equal(rs.cache_control, "no-cache");
    free(rs.body);
    assert_true(idmd_ui_file("console.css", &data, &len, &type));
    call(t, "/ui/console.css", "every=200", &rs);
    assert_int_equal(rs.status, 200);
    assert_string_equal(rs.content_type, type);
    assert_int_equal(rs.len, len);
    free(rs.body);
    call_auth(t, "HEAD", "/ui/console.css", NULL, NULL, &rs);
    assert_int_equal(rs.status, 200);
    free(rs.body);
    call(t, "/ui", NULL, &rs);
    assert_int_equal(rs.status, 301);
    assert_string_equal(rs.location, "/ui/");
    assert_true(rs.nosniff);
    free(rs.body);
    call(t, "/ui/nope.html", NULL, &rs);
    assert_error(&rs, 404, NULL);
    assert_true(rs.nosniff);
    free(rs.body);
    get_error(t, "/ui/..", NULL, 404, NULL);
    get_error(t, "/ui/a/b", NULL, 401, NULL); /* no route: the token first */
    call_auth(t, "POST", "/ui/", NULL, NULL, &rs);
    assert_error(&rs, 405, NULL);
    free(rs.body);
    /* the API still needs it */
    get_error(t, "/v1/plan", NULL, 401, NULL);
    assert_false(idmd_route_admin("/ui/"));
    assert_false(idmd_route_admin("/v1/status"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        APP_TEST(test_snowflake),
        APP_TEST(test_segment),
        APP_TEST(test_segment_no_store),
        APP_TEST(test_uuid_ulid),
        APP_TEST(test_decode),
        APP_TEST(test_leaf),
        APP_TEST(test_health_ping),
        APP_TEST(test_health_store_down),
        cmocka_unit_test(test_open_store_stuck),
        cmocka_unit_test(test_open_limit),
        cmocka_unit_test(test_close_while_opening),
        cmocka_unit_test(test_open_failure_remembered),
        cmocka_unit_test(test_health_store_down_warns),
        cmocka_unit_test(test_health_store_call_stuck),
        cmocka_unit_test(test_floor_files),
        cmocka_unit_test(test_many_sequences),
        APP_TEST(test_opaque_format),
        APP_TEST(test_metrics),
        cmocka_unit_test(test_n1_count),
        APP_TEST(test_count_cap),
        cmocka_unit_test(test_count_max_layouts),
        APP_TEST(test_params),
        APP_TEST(test_no_param_endpoints_name_it),
        APP_TEST(test_methods_paths),
        APP_TEST(test_auth),
        cmocka_unit_test(test_auth_long_tokens),
        APP_TEST(test_scheme_case_insensitive),
        cmocka_unit_test(test_exhaustion),
        cmocka_unit_test(test_clock_back),
        cmocka_unit_test(test_health_mint_check),
        cmocka_unit_test(test_health_lease_expiring),
        APP_TEST(test_threads),
        APP_TEST(test_status_plain),
        cmocka_unit_test(test_status_monitor),
        cmocka_unit_test(test_status_lease),
        APP_TEST(test_tools),
        APP_TEST(test_decode_layouts),
        APP_TEST(test_ui),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
