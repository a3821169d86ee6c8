/* SPDX-License-Identifier: MIT */
/*
 * idmintd's request handler: routes a request to the libraries and formats
 * the answer. Nothing here touches a socket (see app.h). The endpoints are
 * the rows of routes[] (see "routing" below):
 *
 *   GET /v1/snowflake?count=N      {"ids":["...",...]} (decimal strings: ids
 *   GET /v1/segment/NAME?count=N     pass 2^53, which JSON numbers cannot hold)
 *   GET /v1/uuid7?count=N, /v1/uuid4?count=N, /v1/ulid?count=N
 *   GET /v1/decode/ID              the id's parts (Snowflake, UUID, ULID,
 *                                  ObjectId); ?layout=NAME|TEXT&epoch=T
 *                                  decodes a Snowflake id in that layout
 *   GET /v1/plan, /v1/estimate,    the CLI's planning tools run in-process
 *       /v1/birthday               (src/cli/tools.h): the query is their
 *                                  options, the answer their --json document
 *   GET /v1/status                 the console's status document: health,
 *                                  layout, lease, clock watch, counts, rates
 *   GET /api/snowflake/get/KEY     the bare number, as Meituan's Leaf answers
 *   GET /api/segment/get/KEY       (KEY: Leaf's biz tag = the sequence name)
 *   GET /healthz                   200 minting, 503 with the reason
 *   GET /metrics                   Prometheus text format
 *   GET /ping                      a static answer (the framework's ceiling)
 *   GET /ui, /ui/, /ui/FILE        the web console's embedded files (ui.h),
 *                                  without the token, with a strict CSP
 * ?format=text gives one id a line (text/plain) instead of JSON;
 * ?format=opaque (Snowflake and segment ids, with opaque-key-file set)
 * gives each id as an opaque public id (idmint/opaque.h, base32), in JSON.
 *
 * Input is checked strictly (FAULTS N1): count is 1 to count-max in plain
 * decimal (no sign, no space, no 0x, no exponent, no leading zero); unknown
 * or repeated parameters, percent-encoding and any byte outside the path
 * alphabet are 400 with a JSON error naming the parameter. A count above
 * count-max is 400 naming count-max, the most ids one request gets (the
 * configuration check lowers it to what the layout mints within the wait
 * bound, so a count the server accepts is never refused for the layout's
 * sake). Nothing is minted for a request that is refused. Batches are all
 * or nothing: the generator reserves the whole batch with one CAS under the
 * lease guard, so no batch straddles the lease deadline (N6).
 *
 * Sequences: any number can be in use (no limit but the sequences the
 * store holds, which only `idmint seq create` makes; an unknown name is 404
 * and takes no room), each opened on first use (seq_for; the table's rules
 * are in app.h) and kept until shutdown; all share the store's one prefetch
 * thread. With several stores (the store key's list, idmd_stores_set),
 * each sequence is opened over all of them, store k of n handing out the
 * ids that are k mod n (Flickr's ticket servers): one store down, the
 * others serve; /healthz warns of it and /metrics reports each store.
 *
 * /healthz answers 503 naming the first reason minting would fail now
 * (health_eval), or 200 with a "warnings" array for store trouble that
 * leaves ids in hand (health_seqs_locked). It never waits for a store or an
 * open. /v1/status shows the same computation's verdict (one health_eval
 * for both), with what the monitor thread (monitor.h) keeps of the clock
 * watch and the recent rates.
 *
 * The tools' parameters are checked here before the tool runs (tool_args):
 * each one of the tool's options (cli_tool_params), given once (plan's
 * node aside), a flag's value "", "1", "true" (given) or "0", "false" (not
 * given), another's a non-empty value of letters, digits and . _ ~ : @ , -
 * = (no percent-encoding; '+' is refused: a time zone is written Z). A
 * refusal is 400 naming the parameter; what the tool itself refuses is 400
 * with its message, its failure 500. decode's layout= and epoch= take the
 * same bytes.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <idmint/version.h>

#include "../cli/tools.h"
#include "app.h"
#include "common.h"
#include "store_within.h"
#include "ui.h"

/* ---------------------------------------------------------------- output */

static void put(idmd_response *rs, const char *s, size_t n)
{
    if (rs->oom)
        return;
    if (rs->len + n + 1 > rs->cap) {
        size_t cap = rs->cap != 0 ? rs->cap : 256;
        char *grown;
        while (cap < rs->len + n + 1)
            cap *= 2;
        grown = realloc(rs->body, cap);
        if (grown == NULL) {
            rs->oom = true;
            return;
        }
        rs->body = grown;
        rs->cap = cap;
    }
    memcpy(rs->body + rs->len, s, n);
    rs->len += n;
    rs->body[rs->len] = '\0';
}

static void puts_(idmd_response *rs, const char *s)
{
    put(rs, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(idmd_response *rs, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(rs, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* s as the inside of a JSON string (ASCII printable kept, the rest \u00XX). */
static void put_json_text(idmd_response *rs, const char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            putf(rs, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            putf(rs, "\\u%04x", c);
        else
            put(rs, (const char *)&c, 1);
    }
}

static void reset(idmd_response *rs)
{
    rs->len = 0;
    if (rs->body != NULL)
        rs->body[0] = '\0';
    rs->retry_after_s = 0;
    rs->www_authenticate = false;
    rs->allow = NULL;
    rs->location = NULL;
    rs->csp = NULL;
    rs->nosniff = false;
    rs->cache_control = NULL;
}

void idmd_fail(idmd_response *rs, int status, const char *param, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reset(rs);
    rs->status = status;
    rs->content_type = "application/json";
    putf(rs, "{\"error\":{\"status\":%d,", status);
    if (param != NULL) {
        puts_(rs, "\"param\":\"");
        put_json_text(rs, param);
        puts_(rs, "\",");
    }
    puts_(rs, "\"message\":\"");
    put_json_text(rs, msg);
    puts_(rs, "\"}}\n");
}

/* A library error while minting: 503 (try again later) for the clock, the
 * lease and a full sequence; 500 otherwise. */
static void fail_mint(idmd_app *app, idmd_response *rs, const char *what, int rc)
{
    const char *d = idm_error_detail();
    switch (rc) {
    case IDM_ECLOCKBACK:
        atomic_fetch_add(&app->m.clock_refusals, 1);
        idmd_fail(rs, 503, NULL, "%s: the clock went back beyond the policy's bound: %s", what, d);
        break;
    case IDM_EEXHAUSTED:
        atomic_fetch_add(&app->m.exhaustion_refusals, 1);
        idmd_fail(rs, 503, NULL, "%s: more ids than the layout makes per tick: %s", what, d);
        break;
    case IDM_ELEASE:
        atomic_fetch_add(&app->m.lease_refusals, 1);
        idmd_fail(rs, 503, NULL, "%s: no valid worker-id lease (lost, or not renewed in time): %s",
             what, d);
        break;
    case IDM_EUNAVAIL:
        idmd_fail(rs, 503, NULL, "%s: %s", what, d);
        break;
    case IDM_ENOSEQ:
        idmd_fail(rs, 404, NULL, "%s", d);
        break;
    default:
        idmd_fail(rs, 500, NULL, "%s: %s: %s", what, idm_err_name(rc), d);
        break;
    }
    if (rs->status == 503)
        rs->retry_after_s = 1;
}

/* ------------------------------------------------------------------ input */

/* The name of a parameter (its first n bytes of q, at most 31) as printable
 * ASCII for a message: other bytes become '?'. */
static void param_name(char key[32], const char *q, size_t n)
{
    snprintf(key, 32, "%.*s", (int)(n < 31 ? n : 31), q);
    for (char *k = key; *k != '\0'; k++)
        if (*k < 0x20 || *k >= 0x7f)
            *k = '?';
}

/* What a request asks for: its parameters, and its route's kind of ids. */
typedef struct params {
    const char *arg; /* the path's {name} segment; NULL for a route without one */
    const char *path;  /* the route's path ("/v1/plan": the tool's name) */
    const char *query; /* the query as it came (the tools parse their own) */
    const char *layout; /* decode's layout=, epoch=: NUL-terminated copies */
    const char *epoch;  /* (in the two buffers below), NULL if not given */
    char layout_buf[IDM_LAYOUT_TEXT_MAX];
    char epoch_buf[64];
    uint32_t count;
    bool text;
    bool opaque; /* ids as opaque public ids (the key's permutation, base32) */
    bool bare;   /* one id as the bare number, text/plain (Leaf's endpoints) */
    int kind;    /* IDMD_K_*: what the route mints, its metric */
} params;

enum { COUNT_OK, COUNT_BAD, COUNT_ABOVE };

/* Strict decimal: digits only, no leading zero. COUNT_OK with *out in
 * 1..max, COUNT_ABOVE for such a number above max (of any length),
 * COUNT_BAD for anything else. */
static int parse_count(const char *s, size_t n, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    if (n == 0 || s[0] == '0')
        return COUNT_BAD;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return COUNT_BAD;
        if (v <= max) /* past max it only needs to stay past it */
            v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return COUNT_ABOVE;
    *out = (uint32_t)v;
    return COUNT_OK;
}

/* One "key=value" of a query. */
typedef struct qpair {
    const char *k, *v;
    size_t klen, vlen;
    bool eq; /* it has an '=' (a flag may come without one) */
} qpair;

/* The next pair of the query at *q into p, *q moved past it; false at the
 * query's end. Pairs are split at every '&': an empty one (a doubled or
 * trailing '&') is a pair with an empty key. */
static bool next_pair(const char **q, qpair *p)
{
    const char *s = *q, *amp, *eq;
    size_t len;
    if (s == NULL)
        return false;
    amp = strchr(s, '&');
    len = amp != NULL ? (size_t)(amp - s) : strlen(s);
    eq = memchr(s, '=', len);
    p->k = s;
    p->klen = eq != NULL ? (size_t)(eq - s) : len;
    p->eq = eq != NULL;
    p->v = eq != NULL ? eq + 1 : s + len;
    p->vlen = eq != NULL ? len - p->klen - 1 : 0;
    *q = amp != NULL ? amp + 1 : NULL;
    return true;
}

/* Parse the query of a route minting ids into p: count and format. 0 or an
 * answer sent. */
static int parse_query(idmd_app *app, const char *query, bool opaque_ok, params *p,
                       idmd_response *rs)
{
    bool seen_count = false, seen_format = false, first = true;
    const char *q = query != NULL && *query != '\0' ? query : NULL;
    qpair kv;
    while (next_pair(&q, &kv)) {
        const char *v = kv.v;
        size_t vlen = kv.vlen;
        char key[32];
        bool is_count, *seen;
        /* An empty last pair after another: the query ends with '&'. */
        if (!first && q == NULL && kv.klen == 0 && !kv.eq) {
            idmd_fail(rs, 400, NULL, "the query ends with '&'");
            return -1;
        }
        first = false;
        param_name(key, kv.k, kv.klen);
        is_count = kv.klen == 5 && memcmp(kv.k, "count", 5) == 0;
        if (!is_count && !(kv.klen == 6 && memcmp(kv.k, "format", 6) == 0)) {
            idmd_fail(rs, 400, key, "unknown parameter '%s' (known: count, format)", key);
            return -1;
        }
        seen = is_count ? &seen_count : &seen_format;
        if (*seen) {
            idmd_fail(rs, 400, key, "%s is given twice", key);
            return -1;
        }
        *seen = true;
        if (is_count) {
            switch (parse_count(v, vlen, app->cfg->count_max, &p->count)) {
            case COUNT_OK:
                break;
            case COUNT_ABOVE:
                idmd_fail(rs, 400, "count",
                     "count is at most %u, the most ids this server mints in one request "
                     "(count-max); got '%.*s'",
                     (unsigned)app->cfg->count_max, (int)(vlen < 24 ? vlen : 24), v);
                return -1;
            default:
                idmd_fail(rs, 400, "count",
                     "count must be a plain decimal number from 1 to %u (got '%.*s')",
                     (unsigned)app->cfg->count_max, (int)(vlen < 24 ? vlen : 24), v);
                return -1;
            }
        } else if (vlen == 4 && memcmp(v, "json", 4) == 0) {
            p->text = false;
        } else if (vlen == 4 && memcmp(v, "text", 4) == 0) {
            p->text = true;
        } else if (vlen == 6 && memcmp(v, "opaque", 6) == 0 && opaque_ok) {
            if (!app->has_opaque) {
                idmd_fail(rs, 400, "format",
                     "format=opaque needs the service's opaque-key-file setting");
                return -1;
            }
            p->opaque = true;
        } else {
            idmd_fail(rs, 400, "format", "format must be json or text%s",
                 opaque_ok ? " or opaque" : "");
            return -1;
        }
    }
    return 0;
}

/* The path's own alphabet: letters, digits, '/', '_', '.', '-'. Anything
 * else (percent-encoding, spaces, control bytes, non-ASCII) is refused. */
static bool path_ok(const char *p)
{
    for (; *p != '\0'; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* The bytes a value of the tools' and decode's parameters may hold:
 * letters, digits and . _ ~ : @ , - = (no percent-encoding, no '+': a time
 * zone is written Z; '=' for plan's node=NAME=VALUE: a key ends at the
 * first '='). */
static bool value_byte_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("._~:@,-=", c) != NULL);
}

/* 0 if v's bytes are all value_byte_ok; else an answer sent naming key. */
static int value_check(const char *key, const char *v, size_t n, idmd_response *rs)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (value_byte_ok((char)c))
            continue;
        if (c > 0x20 && c < 0x7f)
            idmd_fail(rs, 400, key,
                      "%s holds '%c': a value may hold only letters, digits and . _ ~ : @ , - = "
                      "(sent as they are: no percent-encoding, and no '+': write Z for UTC)",
                      key, c);
        else
            idmd_fail(rs, 400, key,
                      "%s holds the byte 0x%02x: a value may hold only letters, digits and . _ "
                      "~ : @ , - = (sent as they are: no percent-encoding)",
                      key, c);
        return -1;
    }
    return 0;
}

/* decode's query: format (json only, as before), layout and epoch (a
 * Snowflake id decoded in that layout). 0 or an answer sent. */
static int parse_decode_query(const char *query, params *p, idmd_response *rs)
{
    bool seen[3] = {false, false, false};
    static const char *const names[3] = {"format", "layout", "epoch"};
    const char *q = query != NULL && query[0] != '\0' ? query : NULL;
    qpair kv;
    while (next_pair(&q, &kv)) {
        char key[32];
        int i = 0;
        param_name(key, kv.k, kv.klen);
        while (i < 3 && !(kv.klen == strlen(names[i]) && memcmp(kv.k, names[i], kv.klen) == 0))
            i++;
        if (i == 3) {
            idmd_fail(rs, 400, key, "unknown parameter '%s' (known: format, layout, epoch)", key);
            return -1;
        }
        if (seen[i]) {
            idmd_fail(rs, 400, key, "%s is given twice", key);
            return -1;
        }
        seen[i] = true;
        if (i == 0) {
            if (kv.vlen == 4 && memcmp(kv.v, "json", 4) == 0)
                continue;
            if (kv.vlen == 4 && memcmp(kv.v, "text", 4) == 0) {
                p->text = true;
                continue;
            }
            idmd_fail(rs, 400, "format", "format must be json or text");
            return -1;
        }
        if (kv.vlen == 0) {
            idmd_fail(rs, 400, key, "%s needs a value", key);
            return -1;
        }
        if (value_check(key, kv.v, kv.vlen, rs) != 0)
            return -1;
        char *dst = i == 1 ? p->layout_buf : p->epoch_buf;
        size_t cap = i == 1 ? sizeof p->layout_buf : sizeof p->epoch_buf;
        if (kv.vlen >= cap) {
            idmd_fail(rs, 400, key, "%s is longer than %zu bytes", key, cap - 1);
            return -1;
        }
        memcpy(dst, kv.v, kv.vlen);
        dst[kv.vlen] = '\0';
        *(i == 1 ? &p->layout : &p->epoch) = dst;
    }
    return 0;
}

/* ------------------------------------------------------------------- ids */

/* The text of the answer's i-th id into t: ids[i] in decimal or in its
 * opaque form (the 64-bit kinds), or, ids NULL, a 128-bit id minted now. 0,
 * or an answer sent. */
static int id_text(idmd_app *app, const params *p, const uint64_t *ids, uint32_t i, char t[48],
                   idmd_response *rs)
{
    uint64_t y;
    int rc;
    if (ids != NULL && !p->opaque) {
        snprintf(t, 48, "%" PRIu64, ids[i]);
        return 0;
    }
    if (ids != NULL) {
        /* ids stay below 2^63 (the layouts and sequences are 63-bit here);
         * one that is not is an error, not a guess */
        if (idm_opaque_encrypt(&app->opaque_key, ids[i], &y) != 0 ||
            idm_opaque_format(y, IDM_OPAQUE_BASE32, t) != 0) {
            idmd_fail(rs, 500, "format", "id %" PRIu64 " has no opaque form (bit 63 set)", ids[i]);
            return -1;
        }
        return 0;
    }
    if (p->kind == IDMD_K_ULID) {
        idm_ulid u;
        rc = idm_ulid_next(app->ulid, &u);
        if (rc == 0)
            idm_ulid_format(&u, t);
    } else {
        idm_uuid u;
        rc = p->kind == IDMD_K_UUID7 ? idm_uuid7_next(app->uuid7, &u)
                                     : idm_uuid4(app->uuid4_rng, &u);
        if (rc == 0)
            idm_uuid_format(&u, t);
    }
    if (rc != 0)
        fail_mint(app, rs, "cannot mint", rc);
    return rc;
}

/* Answer with count ids (id_text): the ids list, or (bare: Leaf's
 * endpoints) the number ids[0] alone. */
static void reply_ids(idmd_app *app, const params *p, const uint64_t *ids, idmd_response *rs)
{
    char t[48];
    rs->status = 200;
    rs->content_type = p->text || p->bare ? "text/plain; charset=utf-8" : "application/json";
    if (p->bare) {
        putf(rs, "%" PRIu64, ids[0]);
    } else {
        puts_(rs, p->text ? "" : "{\"ids\":[");
        for (uint32_t i = 0; i < p->count; i++) {
            if (id_text(app, p, ids, i, t, rs) != 0)
                return;
            puts_(rs, p->text ? "" : i > 0 ? ",\"" : "\"");
            puts_(rs, t);
            puts_(rs, p->text ? "\n" : "\"");
        }
        puts_(rs, p->text ? "" : "]}\n");
    }
    atomic_fetch_add(&app->m.minted[p->kind], p->count);
}

/* Where name is in the table, sorted by name (*found), or where it goes.
 * Under seq_mu. */
static size_t seq_find(const idmd_app *app, const char *name, bool *found)
{
    size_t lo = 0, hi = app->nseqs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(app->seqs[mid]->name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* A failed open whose error requests still get (IDMD_SEQ_RETRY_MS). */
/* The stores of the store key (idmd_stores_set): one server, one app, one
 * list, set before the first request and fixed until the app is gone. An
 * app that was given none (the unit tests) has app->store alone. */
static struct {
    const idmd_app *app;
    idm_store *stores[IDMD_STORES_MAX];
    size_t n;
} g_stores;

int idmd_stores_set(idmd_app *app, idm_store *const *stores, size_t n)
{
    if (n == 0 || n > IDMD_STORES_MAX)
        return -1;
    memcpy(g_stores.stores, stores, n * sizeof *stores);
    g_stores.n = n;
    g_stores.app = app;
    app->store = stores[0];
    return 0;
}

/* app's stores: their list and count (app->store alone if it was given no
 * list). */
static idm_store *const *stores_of(const idmd_app *app, idm_store *const *one, size_t *n)
{
    if (g_stores.app == app && g_stores.n > 0) {
        *n = g_stores.n;
        return g_stores.stores;
    }
    *n = 1;
    return one;
}

static bool seq_remembered(const idmd_seq_slot *s, int64_t now_ns)
{
    return s->state == IDMD_SEQ_FAILED && s->rc != IDM_ENOSEQ &&
           now_ns - s->since_ns < (int64_t)IDMD_SEQ_RETRY_MS * 1000000;
}

/* Under seq_mu, s's open having ended: wait for its thread to exit. It set
 * the state under seq_mu and only has to return, so this is short. */
static void seq_reap_locked(idmd_seq_slot *s)
{
    if (s->has_opener) {
        pthread_join(s->opener, NULL);
        s->has_opener = false;
    }
}

/* Under seq_mu: take slot at (not opening, nobody waiting on it) out of the
 * table and free it. */
static void seq_drop_locked(idmd_app *app, size_t at)
{
    idmd_seq_slot *s = app->seqs[at];
    seq_reap_locked(s);
    memmove(&app->seqs[at], &app->seqs[at + 1], (app->nseqs - at - 1) * sizeof *app->seqs);
    app->nseqs--;
    free(s);
}

/* Under seq_mu: drop the failed slots that are no longer remembered and
 * that nobody waits on (names asked for while the store failed, or names
 * it does not have whose requester stopped waiting), and join the openers
 * that ended (those whose requests stopped waiting before). */
static void seq_prune_locked(idmd_app *app, int64_t now_ns)
{
    for (size_t i = app->nseqs; i-- > 0;) {
        idmd_seq_slot *s = app->seqs[i];
        if (s->state == IDMD_SEQ_OPENING)
            continue;
        if (s->state == IDMD_SEQ_FAILED && s->users == 0 && !seq_remembered(s, now_ns))
            seq_drop_locked(app, i);
        else
            seq_reap_locked(s);
    }
}

/* The opener thread of one slot: the store round trips of idm_seq_open,
 * without seq_mu; then the outcome, under it. The slot cannot go while it
 * runs (only slots whose open ended are dropped, after a join). */
static void *seq_opener(void *arg)
{
    idmd_seq_slot *s = arg;
    idmd_app *app = s->app;
    idm_seq_opts o;
    idm_seq *q = NULL;
    int rc;
    idm_seq_opts_init(&o);
    o.name = s->name;
    o.stores = (idm_store **)stores_of(app, &s->store, &o.nstores);
    o.wait_ms = s->wait_ms;
    o.clock = app->clock;
    o.floor_file = s->floor_file[0] != '\0' ? s->floor_file : NULL;
    rc = idm_seq_open(&q, &o);
    pthread_mutex_lock(&app->seq_mu);
    if (rc == 0) {
        s->q = q;
        s->state = IDMD_SEQ_OPEN;
    } else {
        s->rc = rc;
        snprintf(s->detail, sizeof s->detail, "%s", idm_error_detail());
        s->since_ns = idm__mono_ns();
        s->state = IDMD_SEQ_FAILED;
        if (rc != IDM_ENOSEQ)
            app->open_failures++;
    }
    app->nopening--;
    pthread_cond_broadcast(&app->seq_cv);
    pthread_mutex_unlock(&app->seq_mu);
    return NULL;
}

/* Under seq_mu: start opening s (its earlier opener, if any, reaped). 0, or
 * an error (s is then failed with it). */
static int seq_start_locked(idmd_app *app, idmd_seq_slot *s, int64_t now_ns)
{
    int err;
    seq_reap_locked(s);
    s->wait_ms = app->cfg->segment_wait_ms;
    s->state = IDMD_SEQ_OPENING;
    s->since_ns = now_ns;
    s->rc = 0;
    s->detail[0] = '\0';
    err = pthread_create(&s->opener, NULL, seq_opener, s);
    if (err != 0) {
        s->rc = idm_error_fail(IDM_EUNAVAIL, "sequence %s: cannot start a thread to open it: %s",
                               s->name, strerror(err));
        snprintf(s->detail, sizeof s->detail, "%s", idm_error_detail());
        s->state = IDMD_SEQ_FAILED;
        return s->rc;
    }
    s->has_opener = true;
    app->nopening++;
    return 0;
}

/* The answer for a sequence whose open has not ended. */
static int seq_not_yet(const idmd_app *app, const char *name)
{
    if (app->seqs_closed)
        return idm_error_fail(IDM_EUNAVAIL, "sequence %s: shutting down", name);
    return idm_error_fail(IDM_EUNAVAIL,
                          "sequence %s: the ticket store has not answered within %lld ms "
                          "(segment-wait; the sequence is being opened: try again)",
                          name, (long long)app->cfg->segment_wait_ms);
}

/* Under seq_mu: a new slot for name, opening from now (an earlier slot's
 * opener reaped and failed slots pruned first). 0, or the error. */
static int seq_add_locked(idmd_app *app, const char *name, int64_t now, idmd_seq_slot **out)
{
    idmd_seq_slot *s;
    bool found;
    size_t at;
    int rc;
    seq_prune_locked(app, now);
    at = seq_find(app, name, &found);
    if (app->nseqs == app->seqs_cap) {
        size_t cap = app->seqs_cap != 0 ? 2 * app->seqs_cap : 16;
        idmd_seq_slot **grown = realloc(app->seqs, cap * sizeof *grown);
        if (grown == NULL)
            goto nomem;
        app->seqs = grown;
        app->seqs_cap = cap;
    }
    s = calloc(1, sizeof *s);
    if (s == NULL)
        goto nomem;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->app = app;
    s->store = app->store;
    /* NAME.floor: no name's file is another's (the library adds .lock
     * to a floor file's path), and "." and ".." stay plain files. With N
     * stores NAME@N.floor ('@' is in no name): a floor file belongs to one
     * number of stores, and a list of stores changed leaves the old one. */
    size_t nstores;
    (void)stores_of(app, &s->store, &nstores);
    if (app->floors_dir[0] != '\0' && nstores == 1)
        snprintf(s->floor_file, sizeof s->floor_file, "%s/%s.floor", app->floors_dir, name);
    else if (app->floors_dir[0] != '\0')
        snprintf(s->floor_file, sizeof s->floor_file, "%s/%s@%zu.floor", app->floors_dir, name,
                 nstores);
    if ((rc = seq_start_locked(app, s, now)) != 0) {
        free(s);
        return rc;
    }
    memmove(&app->seqs[at + 1], &app->seqs[at], (app->nseqs - at) * sizeof *app->seqs);
    app->seqs[at] = s;
    app->nseqs++;
    *out = s;
    return 0;
nomem:
    return idm_error_fail(IDM_ENOMEM, "no room for one more sequence (%zu in use)", app->nseqs);
}

/* Under seq_mu: the slot of name, open or opening: a new one, or a failed
 * one no longer remembered, starts opening (*now_ns: when, CLOCK_MONOTONIC;
 * not read for an open slot). 0, or the error: the one remembered, or no
 * room for one more open (IDMD_OPENERS_MAX) or slot. */
static int seq_slot_locked(idmd_app *app, const char *name, idmd_seq_slot **out,
                           int64_t *now_ns)
{
    bool found;
    size_t at = seq_find(app, name, &found);
    idmd_seq_slot *s = found ? app->seqs[at] : NULL;
    *out = s;
    if (s != NULL && s->state == IDMD_SEQ_OPEN) {
        seq_reap_locked(s); /* joins once: for the first request after the open */
        return 0;
    }
    *now_ns = idm__mono_ns();
    if (s != NULL && seq_remembered(s, *now_ns))
        return idm_error_fail(s->rc, "%s", s->detail);
    if (s != NULL && s->state == IDMD_SEQ_OPENING)
        return 0;
    if (app->nopening >= IDMD_OPENERS_MAX)
        return idm_error_fail(IDM_EUNAVAIL,
                              "sequence %s: %d sequences are being opened already, the most at "
                              "once (the ticket store is slow to answer): try again",
                              name, IDMD_OPENERS_MAX);
    if (s != NULL) /* failed, and forgotten: open it again */
        return seq_start_locked(app, s, *now_ns);
    return seq_add_locked(app, name, *now_ns, out);
}

/* Under seq_mu (let go while waiting): wait for s, opening since now, at
 * most segment-wait, then the outcome: its allocator (*out), its error, or
 * IDM_EUNAVAIL if it is still opening. */
static int seq_wait_locked(idmd_app *app, idmd_seq_slot *s, int64_t now, idm_seq **out)
{
    int64_t deadline = now + app->cfg->segment_wait_ms * 1000000;
    bool found;
    size_t at;
    int rc = 0;
    s->users++;
    while (s->state == IDMD_SEQ_OPENING && !app->seqs_closed && idm__mono_ns() < deadline) {
        struct timespec ts = {(time_t)(deadline / 1000000000), (long)(deadline % 1000000000)};
        pthread_cond_timedwait(&app->seq_cv, &app->seq_mu, &ts);
    }
    s->users--;
    if (app->seqs_closed)
        pthread_cond_broadcast(&app->seq_cv); /* idmd_seqs_close waits for us */
    if (s->state != IDMD_SEQ_OPENING)
        seq_reap_locked(s);
    switch (s->state) {
    case IDMD_SEQ_OPEN:
        *out = s->q;
        break;
    case IDMD_SEQ_FAILED:
        rc = idm_error_fail(s->rc, "%s", s->detail);
        if (s->users == 0 && !seq_remembered(s, idm__mono_ns()) && !app->seqs_closed) {
            at = seq_find(app, s->name, &found);
            if (found && app->seqs[at] == s)
                seq_drop_locked(app, at);
        }
        break;
    case IDMD_SEQ_OPENING:
        rc = seq_not_yet(app, s->name);
        break;
    }
    return rc;
}

/* The allocator of sequence name, opened on first use (the table's rules
 * are in app.h). Requests wait for an open on seq_cv, which lets seq_mu go,
 * then get IDM_EUNAVAIL naming why; once a failed open is forgotten the
 * next request opens again, and an IDM_ENOSEQ slot goes as soon as nobody
 * waits on it. */
static int seq_for(idmd_app *app, const char *name, idm_seq **out)
{
    idmd_seq_slot *s = NULL;
    int64_t now = 0;
    int rc;
    pthread_mutex_lock(&app->seq_mu);
    if (app->seqs_closed)
        rc = seq_not_yet(app, name);
    else if ((rc = seq_slot_locked(app, name, &s, &now)) == 0 && s->state == IDMD_SEQ_OPEN)
        *out = s->q;
    else if (rc == 0)
        rc = seq_wait_locked(app, s, now, out);
    pthread_mutex_unlock(&app->seq_mu);
    return rc;
}

/* The 64-bit kinds: count ids from the generator, or from the allocator of
 * sequence p->arg. Leaf's key (p->arg, for Snowflake ids) picks no
 * generator here: one serves every key. */
static void h_numbers(idmd_app *app, const params *p, idmd_response *rs)
{
    idm_seq *q = NULL;
    uint64_t one, *ids;
    int rc = 0;
    if (p->kind == IDMD_K_SEGMENT) {
        if (!idm_seq_name_valid(p->arg)) {
            idmd_fail(rs, 400, "name",
                 "a sequence name is 1 to %d of letters, digits, '_', '.' and '-'",
                 IDM_SEQ_NAME_MAX);
            return;
        }
        if (app->store == NULL) {
            idmd_fail(rs, 404, NULL, "no ticket store is configured");
            return;
        }
        if ((rc = seq_for(app, p->arg, &q)) != 0) {
            fail_mint(app, rs, "cannot open the sequence", rc);
            return;
        }
    }
    ids = p->count > 1 ? malloc(p->count * sizeof *ids) : &one;
    if (ids == NULL) {
        idmd_fail(rs, 503, NULL, "out of memory");
        return;
    }
    if (q == NULL) /* all or nothing, under the lease guard (N6) */
        rc = app->leased != NULL ? idm_leased_next_batch(app->leased, ids, p->count)
                                 : idm_snowflake_next_batch(app->gen, ids, p->count);
    /* Each id is handed out once; ids drawn before a failure are gaps. */
    for (uint32_t i = 0; q != NULL && i < p->count && rc == 0; i++) {
        int64_t v = 0;
        rc = idm_seq_next(q, &v);
        ids[i] = (uint64_t)v;
    }
    if (rc != 0)
        fail_mint(app, rs, q == NULL ? "cannot mint" : "cannot take ids", rc);
    else
        reply_ids(app, p, ids, rs);
    if (ids != &one)
        free(ids);
}

/* The 128-bit kinds: each id is minted as the answer is written. */
static void h_128(idmd_app *app, const params *p, idmd_response *rs)
{
    reply_ids(app, p, NULL, rs);
}

/* ----------------------------------------------------------------- decode */

static void put_time(idmd_response *rs, idm_unix_ms ms)
{
    char iso[64];
    if (idm_time_format(ms, iso, sizeof iso) == 0)
        putf(rs, "\"time\":\"%s\",", iso);
    putf(rs, "\"unix_ms\":%lld", (long long)ms);
}

/* The layout a Snowflake id is decoded in: the server's, or the one
 * ?layout=NAME|TEXT&epoch=T names (epoch alone: the server's layout from
 * another epoch), into *l (*own: one made here, to free). 0 or an answer
 * sent naming the parameter. */
static int decode_layout(const idmd_app *app, const params *p, const idm_layout **l,
                         idm_layout **own, idmd_response *rs)
{
    char text[IDM_LAYOUT_TEXT_MAX];
    const char *spec = p->layout;
    idm_unix_ms e;
    *own = NULL;
    *l = app->layout;
    if (p->layout == NULL && p->epoch == NULL)
        return 0;
    if (p->epoch != NULL && idm_time_parse(p->epoch, &e) != 0) {
        idmd_fail(rs, 400, "epoch", "bad epoch '%s': %s", p->epoch, idm_error_detail());
        return -1;
    }
    if (spec == NULL && strcmp(idm_layout_name(app->layout), "custom") != 0) {
        spec = idm_layout_name(app->layout);
    } else if (spec == NULL) {
        if (idm_layout_format(app->layout, text, sizeof text) != 0) {
            idmd_fail(rs, 500, NULL, "the server's layout has no text form: %s",
                      idm_error_detail());
            return -1;
        }
        spec = text;
    }
    if (p->epoch == NULL && strchr(spec, ':') != NULL) {
        idmd_fail(rs, 400, "epoch", "a layout in text form needs epoch= (ISO-8601 or unix ms)");
        return -1;
    }
    if (idm_layout_from_spec(own, spec, p->epoch) != 0) {
        idmd_fail(rs, 400, p->layout != NULL ? "layout" : "epoch", "bad %s '%.200s': %s",
                  p->layout != NULL ? "layout" : "epoch", p->layout != NULL ? p->layout : p->epoch,
                  idm_error_detail());
        *own = NULL;
        return -1;
    }
    *l = *own;
    return 0;
}

/* A decimal Snowflake id in layout l ("layout" in the answer: the name of
 * the server's own, as always; a layout asked for by its name, or its text
 * form if it is a custom one). */
static void decode_snowflake(const idmd_app *app, const params *p, const char *id,
                             idmd_response *rs)
{
    const idm_layout *l;
    idm_layout *own;
    char text[IDM_LAYOUT_TEXT_MAX];
    uint64_t v;
    idm_decoded d;
    size_t n = strlen(id);
    if (idm_u64_parse(id, &v) != 0 || (n > 1 && id[0] == '0')) {
        idmd_fail(rs, 400, "id", "'%s' is not a 64-bit decimal id", id);
        return;
    }
    if (decode_layout(app, p, &l, &own, rs) != 0)
        return;
    const char *name = idm_layout_name(l);
    if (own != NULL && strcmp(name, "custom") == 0 && idm_layout_format(l, text, sizeof text) == 0)
        name = text;
    if (idm_layout_decode(l, v, &d) != 0) {
        idmd_fail(rs, 400, "id", "%s has bits above the %u bits of layout %s", id,
                  idm_layout_bits(l), name);
        idm_layout_free(own);
        return;
    }
    putf(rs, "{\"id\":\"%s\",\"kind\":\"snowflake\",\"layout\":\"", id);
    put_json_text(rs, name);
    puts_(rs, "\",");
    put_time(rs, d.unix_ms);
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || i == 0)
            continue;
        puts_(rs, ",\"");
        put_json_text(rs, f.name);
        putf(rs, "\":%" PRIu64, d.value[i]);
    }
    idm_layout_free(own);
}

/* The kinds of id decode tells apart by their form. */
static bool all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (strchr(set, s[i]) == NULL || s[i] == '\0')
            return false;
    return n > 0;
}

/* The tool's message for an answer: each line without its "idmint: TOOL: "
 * prefix, lines joined by a space. */
static void tool_message(const char *tool, const char *err, char *out, size_t cap)
{
    char prefix[64];
    size_t used = 0, plen;
    snprintf(prefix, sizeof prefix, "idmint: %s: ", tool);
    plen = strlen(prefix);
    out[0] = '\0';
    while (err != NULL && *err != '\0' && used + 1 < cap) {
        size_t n = strcspn(err, "\n");
        const char *line = err;
        size_t len = n;
        if (len >= plen && memcmp(line, prefix, plen) == 0) {
            line += plen;
            len -= plen;
        }
        if (len > 0) {
            int w = snprintf(out + used, cap - used, "%s%.*s", used > 0 ? " " : "", (int)len,
                             line);
            used = w < 0 ? used : used + (size_t)w < cap ? used + (size_t)w : cap - 1;
        }
        err += n;
        if (*err == '\n')
            err++;
    }
    if (out[0] == '\0')
        snprintf(out, cap, "%s failed with no message", tool);
}

/*
 * The CLI command tool run in this thread with argv, captured (tools.h):
 * 200 with what it printed (a JSON document: the callers give --json); for
 * what it refuses (exit status 2) 400 with its message, naming param (NULL:
 * none); for a failure 500.
 */
static void tool_answer(const char *tool, int argc, char **argv, const char *param,
                        idmd_response *rs)
{
    cli_tool_result r;
    char msg[400];
    if (cli_tool_run(tool, argc, argv, &r) == 0 && r.status == 0) {
        rs->status = 200;
        rs->content_type = "application/json";
        put(rs, r.out, r.out_len);
    } else {
        tool_message(tool, r.err, msg, sizeof msg);
        idmd_fail(rs, r.status == 2 ? 400 : 500, r.status == 2 ? param : NULL, "%s",
                  msg); /* CLI_USAGE, CLI_FAIL */
    }
    cli_tool_result_free(&r);
}

static void h_decode(idmd_app *app, const params *p, idmd_response *rs)
{
    const char *id = p->arg;
    size_t n = strlen(id);
    bool digits = n <= 20 && all_of(id, n, "0123456789");
    bool objectid = n == 24 && all_of(id, n, "0123456789abcdefABCDEF");
    rs->status = 200;
    rs->content_type = "application/json";
    if (p->text) {
        idmd_fail(rs, 400, "format", "decode answers in JSON only");
        return;
    }
    if (!digits && !objectid && n != 36 && n != 26) {
        idmd_fail(rs, 400, "id",
             "'%.40s' is no id idmintd knows: a decimal 64-bit id, a UUID (36 characters), a "
             "ULID (26) or an ObjectId (24 hex digits)",
             id);
        return;
    }
    if (digits) {
        decode_snowflake(app, p, id, rs);
        if (rs->status == 200)
            puts_(rs, "}\n");
        return;
    }
    /* layout= and epoch= are checked for every id, and used for Snowflake
     * ids only (a console may send them with any id). */
    const idm_layout *l;
    idm_layout *own;
    if (decode_layout(app, p, &l, &own, rs) != 0)
        return;
    idm_layout_free(own);
    /* A UUID, ULID or ObjectId: `idmint decode --json --kind KIND` run in
     * this thread (tools.h), so the answer is the command's, byte for byte. */
    const char *kind = objectid ? "objectid" : n == 36 ? "uuid" : "ulid";
    char *argv[] = {(char *)"decode", (char *)"--json", (char *)"--kind", (char *)kind,
                    (char *)"--", (char *)id, NULL};
    tool_answer("decode", 6, argv, "id", rs);
}

/* ---------------------------------------------------------------- health */

/* Warnings /healthz lists, at most; past them one more says how many more. */
#define HEALTH_WARN_MAX 16

typedef struct health {
    char why[400];                          /* the reason for 503, "" none */
    char warn[HEALTH_WARN_MAX][400];
    size_t nwarn, more;
} health;

__attribute__((format(printf, 3, 4))) static void health_add(health *h, bool down,
                                                            const char *fmt, ...)
{
    char *dst;
    va_list ap;
    if (down && h->why[0] == '\0') {
        dst = h->why;
    } else if (h->nwarn < HEALTH_WARN_MAX) {
        dst = h->warn[h->nwarn++];
    } else {
        h->more++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(dst, sizeof h->why, fmt, ap);
    va_end(ap);
}

/*
 * The sequences' part of /healthz, under seq_mu; it never waits for an open
 * or a store. down (503): a sequence with no ids in hand whose store fails
 * or is stuck: its allocator's ids are gone and its last fetch failed, or
 * its store call has run past store-timeout, or a store is down; an open
 * running past segment-wait (the store has not answered it); an open that
 * failed with IDM_EUNAVAIL (while remembered). Warnings (200, one for each
 * sequence at most): the same store problems while ids are left, stores
 * marked bad, and other failed opens (IDM_EINVAL, a refused floor...: one
 * sequence's trouble, not the store's).
 */
static void health_seqs_locked(idmd_app *app, health *h)
{
    int64_t now = idm__mono_ns();
    int64_t wait_ns = app->cfg->segment_wait_ms * 1000000;
    for (size_t i = 0; i < app->nseqs; i++) {
        const idmd_seq_slot *s = app->seqs[i];
        idm_seq_stats ss;
        bool stuck, failing;
        if (s->state == IDMD_SEQ_OPENING) {
            if (now - s->since_ns >= wait_ns)
                health_add(h, true,
                           "sequence %s: the ticket store has not answered for %lld ms while "
                           "opening it (segment-wait %lld ms)",
                           s->name, (long long)((now - s->since_ns) / 1000000),
                           (long long)app->cfg->segment_wait_ms);
            continue;
        }
        if (s->state == IDMD_SEQ_FAILED) {
            if (seq_remembered(s, now))
                health_add(h, s->rc == IDM_EUNAVAIL, "sequence %s: cannot be opened (%s): %s",
                           s->name, idm_err_name(s->rc), s->detail);
            continue;
        }
        idm_seq_stats_get(s->q, &ss);
        stuck = ss.call_ms > app->cfg->store_timeout_ms;
        failing = ss.last_error != 0 || ss.down_stores > 0;
        if (ss.left == 0 && ss.last_error != 0 && !stuck)
            health_add(h, true,
                       "sequence %s: the ticket store cannot be reached and no ids are left "
                       "(%s): %s",
                       s->name, idm_err_name(ss.last_error), ss.last_detail);
        else if (stuck)
            health_add(h, ss.left == 0,
                       "sequence %s: a call to store %zu has run %lld ms, past store-timeout "
                       "(%lld ms); %lld ids left",
                       s->name, ss.call_store, (long long)ss.call_ms,
                       (long long)app->cfg->store_timeout_ms, (long long)ss.left);
        else if (failing)
            health_add(h, ss.left == 0,
                       "sequence %s: %zu store(s) down, the last fetch %s (%s); %lld ids left",
                       s->name, ss.down_stores, ss.last_error != 0 ? "failed" : "worked",
                       ss.last_detail[0] != '\0' ? ss.last_detail : "no detail",
                       (long long)ss.left);
        else if (ss.bad_stores > 0)
            health_add(h, false, "sequence %s: %zu store(s) marked bad, never asked again: %s",
                       s->name, ss.bad_stores, ss.bad_detail);
    }
}

/*
 * Each store's part of /healthz, with several stores: a warning for each
 * store down (its last call not answered) or stuck (a call past
 * store-timeout), naming it as store k of n; the others serve, so it is no
 * reason for a 503 by itself (a sequence with no ids left is, above). One
 * store says what it says per sequence, as before.
 */
static void health_stores(const idmd_app *app, health *h)
{
    size_t n;
    idm_store *const *st = stores_of(app, &app->store, &n);
    if (n < 2)
        return;
    for (size_t k = 0; k < n; k++) {
        idm__store_health_info hi;
        idm__store_health(st[k], &hi);
        if (hi.call_ms > app->cfg->store_timeout_ms)
            health_add(h, false,
                       "store %zu of %zu (%s): a call has run %lld ms, past store-timeout (%lld "
                       "ms); the other stores serve",
                       k, n, idm_store_url(st[k]), (long long)hi.call_ms,
                       (long long)app->cfg->store_timeout_ms);
        else if (hi.down)
            health_add(h, false,
                       "store %zu of %zu (%s): down for %lld ms (%s): %s; the other stores serve",
                       k, n, idm_store_url(st[k]), (long long)hi.down_ms, idm_err_name(hi.last_rc),
                       hi.last_detail[0] != '\0' ? hi.last_detail : "no detail");
    }
}

/* What /healthz and /v1/status both read of the generator's lease, at
 * one instant of app->clock. */
typedef struct lease_view {
    bool leased;             /* a lease (app->leased or app->lease) */
    idm_lease_status ls;     /* the current lease's status */
    idm_leased_status lst;   /* app->leased's (zeroed without one) */
    idm_mono_ns now;         /* app->clock's monotonic time when read */
} lease_view;

/*
 * The one computation of health, for /healthz and /v1/status alike: the
 * first reason minting would fail now (h->why, "" if none) and the
 * warnings, and the lease as read for them (*lv).
 */
static void health_eval(idmd_app *app, health *h, lease_view *lv)
{
    idm_lease_status *ls = &lv->ls;
    int rc;
    memset(lv, 0, sizeof *lv);
    /* The lease's deadline is on the generator's (and lease's) monotonic
     * clock, app->clock, which need not be the system's: read that one. */
    lv->now = app->clock->mono_ns(app->clock->ctx);
    if (app->leased != NULL) {
        idm_leased_status_get(app->leased, &lv->lst);
        *ls = lv->lst.lease;
    } else if (app->lease != NULL) {
        idm_lease_status_get(app->lease, ls);
    }
    lv->leased = app->leased != NULL || app->lease != NULL;
    /* The first reason found. idm_snowflake_check gives every reason a mint
     * would fail with now, as the generator sees it: among them a wall
     * clock stepped past the lease's wall deadline, which the lease's own
     * (monotonic) status does not show. A full tick (IDM_EEXHAUSTED) is
     * load, gone within the wait bound: not a reason. */
    if (atomic_load(&app->draining))
        health_add(h, true, "shutting down");
    else if (lv->leased && ls->lost)
        health_add(h, true, "the worker-id lease for worker %u is lost%s", (unsigned)ls->worker,
                   app->leased != NULL && app->cfg != NULL ? "; re-claiming" : "");
    else if (app->leased != NULL && !lv->lst.minting)
        health_add(h, true, "changing worker id (from %u) after a clock step back",
                   (unsigned)lv->lst.worker);
    else if ((rc = app->leased != NULL ? idm_leased_check(app->leased)
                                       : idm_snowflake_check(app->gen)) != 0 &&
             rc != IDM_EEXHAUSTED)
        health_add(h, true, "Snowflake ids cannot be minted now (%s): %s", idm_err_name(rc),
                   idm_error_detail());
    else if (lv->leased && (ls->deadline - lv->now) / 1000000 < app->lease_ttl_ms / 4)
        health_add(h, true,
                   "the worker-id lease for worker %u is about to expire (renewals failing: %s)",
                   (unsigned)ls->worker,
                   ls->last_error != 0 ? idm_err_name(ls->last_error) : "no");
    if (h->why[0] == '\0' && app->leased != NULL && ls->offline)
        health_add(h, false,
                   "worker %u mints on the claim saved before a restart: the coordinator cannot "
                   "be reached (%s); it stops at that claim's deadline unless it answers",
                   (unsigned)ls->worker, idm_err_name(ls->last_error));
    pthread_mutex_lock(&app->seq_mu);
    health_seqs_locked(app, h);
    pthread_mutex_unlock(&app->seq_mu);
    if (app->cfg != NULL)
        health_stores(app, h);
}

/* h's warnings as a JSON array's items (the "and N more" last). */
static void put_warnings(idmd_response *rs, const health *h)
{
    for (size_t i = 0; i < h->nwarn; i++) {
        puts_(rs, i > 0 ? ",\"" : "\"");
        put_json_text(rs, h->warn[i]);
        puts_(rs, "\"");
    }
    if (h->more > 0)
        putf(rs, "%s\"and %zu more\"", h->nwarn > 0 ? "," : "", h->more);
}

static void h_health(idmd_app *app, const params *p, idmd_response *rs)
{
    health h = {.why = ""};
    lease_view lv;
    const idm_lease_status *ls = &lv.ls;
    (void)p;
    health_eval(app, &h, &lv);
    rs->content_type = "application/json";
    if (h.why[0] != '\0') {
        rs->status = 503;
        puts_(rs, "{\"status\":\"unavailable\",\"reason\":\"");
        put_json_text(rs, h.why);
        puts_(rs, "\"");
    } else {
        rs->status = 200;
        puts_(rs, "{\"status\":\"ok\",\"layout\":\"");
        put_json_text(rs, idm_layout_name(app->layout));
        puts_(rs, "\"");
        if (app->leased != NULL) {
            static const char *const origins[] = {"claimed", "reattached", "offline"};
            putf(rs,
                 ",\"worker\":%u,\"claim\":\"%s\",\"reclaims\":%" PRIu64 ",\"losses\":%" PRIu64
                 ",\"worker_changes\":%" PRIu64,
                 (unsigned)lv.lst.worker, origins[lv.lst.origin], lv.lst.reclaims, lv.lst.losses,
                 lv.lst.changes);
            if (lv.lst.reclaims > 0)
                putf(rs, ",\"last_switch_ms\":%lld",
                     (long long)(lv.lst.last_switch_ns / 1000000));
        } else if (app->lease != NULL)
            putf(rs, ",\"worker\":%u", (unsigned)ls->worker);
        else if (app->cfg != NULL && app->cfg->lease_off) /* the platform's ordinal */
            putf(rs, ",\"worker\":%llu,\"worker_from\":\"ordinal\"",
                 (unsigned long long)app->cfg->ordinal);
    }
    if (h.nwarn > 0) {
        puts_(rs, ",\"warnings\":[");
        put_warnings(rs, &h);
        puts_(rs, "]");
    }
    puts_(rs, "}\n");
}

/* ---------------------------------------------------------------- status */

/* A number for JSON: a whole one as an integer, else with 3 decimals. */
static void put_number(idmd_response *rs, double v)
{
    if (v > -1e15 && v < 1e15 && (double)(int64_t)v == v)
        putf(rs, "%lld", (long long)v);
    else
        putf(rs, "%.3f", v);
}

/* "KEY":"ISO time" (null if the time has no ISO form). */
static void put_iso(idmd_response *rs, const char *key, idm_unix_ms ms)
{
    char iso[64];
    if (idm_time_format(ms, iso, sizeof iso) == 0)
        putf(rs, "\"%s\":\"%s\"", key, iso);
    else
        putf(rs, "\"%s\":null", key);
}

static void status_layout(const idmd_app *app, idmd_response *rs)
{
    char text[IDM_LAYOUT_TEXT_MAX];
    if (idm_layout_format(app->layout, text, sizeof text) != 0)
        text[0] = '\0';
    puts_(rs, "\"layout\":{\"name\":\"");
    put_json_text(rs, idm_layout_name(app->layout));
    puts_(rs, "\",\"text\":\"");
    put_json_text(rs, text);
    putf(rs, "\",\"epoch_ms\":%lld,", (long long)idm_layout_epoch(app->layout));
    put_iso(rs, "epoch", idm_layout_epoch(app->layout));
    putf(rs, ",\"tick_ms\":%lld}", (long long)idm_layout_tick_ms(app->layout));
}

/* The node field the lease fills (the lease-field key; "worker" by
 * default). */
static const char *lease_field(const idmd_app *app)
{
    return app->cfg != NULL && app->cfg->lease_field[0] != '\0' ? app->cfg->lease_field
                                                                 : "worker";
}

/* "node": the current generator's node values, the leased field's the
 * lease's worker id now. */
static void status_node(const idmd_app *app, const lease_view *lv, idmd_response *rs)
{
    int leased = lv->leased ? idm_layout_field_index(app->layout, lease_field(app)) : -1;
    bool first = true;
    puts_(rs, "\"node\":{");
    for (size_t i = 0; i < idm_layout_field_count(app->layout); i++) {
        idm_field_info f;
        if (idm_layout_field(app->layout, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        puts_(rs, first ? "\"" : ",\"");
        put_json_text(rs, f.name);
        putf(rs, "\":%" PRIu64,
             (int)i == leased ? (uint64_t)(app->leased != NULL ? lv->lst.worker : lv->ls.worker)
                              : app->node[i]);
        first = false;
    }
    puts_(rs, "}");
}

/*
 * "lease": null without one; its state, from the status read for health:
 * lost (the coordinator said the claim is gone, or the deadline passed),
 * changing (the leased generator is changing worker id), offline (a
 * resumed claim not yet confirmed), failing (the last renewal failed, the
 * deadline ahead), held.
 */
static void status_lease(const idmd_app *app, const lease_view *lv, idm_wall_ns wall,
                         idmd_response *rs)
{
    const idm_lease_status *ls = &lv->ls;
    char url[IDMD_URL_MAX], shown[IDMD_URL_MAX];
    int64_t in_ns = ls->deadline - lv->now;
    const char *state, *why = NULL;
    char why_buf[160];
    if (!lv->leased) {
        puts_(rs, "\"worker_id\":null,\"lease\":null");
        return;
    }
    shown[0] = '\0'; /* the coordinator, its password masked */
    if (app->cfg != NULL) {
        idmd_config_lease_url(app->cfg, url);
        idm__url_mask(url, shown, sizeof shown);
    }
    if (ls->lost) {
        state = "lost";
        why = "the coordinator says the claim is gone";
    } else if (app->leased != NULL && !lv->lst.minting) {
        state = "changing";
    } else if (in_ns < 0) {
        state = "lost";
        snprintf(why_buf, sizeof why_buf, "the deadline passed with renewals failing (%s)",
                 ls->last_error != 0 ? idm_err_name(ls->last_error) : "no renewal in time");
        why = why_buf;
    } else if (ls->offline) {
        state = "offline";
    } else if (ls->last_error != 0) {
        state = "failing";
    } else {
        state = "held";
    }
    putf(rs, "\"worker_id\":%u,\"lease\":{\"coordinator\":\"",
         (unsigned)(app->leased != NULL ? lv->lst.worker : ls->worker));
    put_json_text(rs, shown);
    puts_(rs, "\",\"field\":\"");
    put_json_text(rs, lease_field(app));
    putf(rs, "\",\"state\":\"%s\",\"lost_reason\":", state);
    if (why != NULL) {
        puts_(rs, "\"");
        put_json_text(rs, why);
        puts_(rs, "\"");
    } else {
        puts_(rs, "null");
    }
    putf(rs, ",\"deadline_in_ms\":%lld,", (long long)(in_ns / 1000000));
    put_iso(rs, "deadline", (wall + in_ns) / 1000000);
    putf(rs,
         ",\"ttl_ms\":%lld,\"renewals\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"last_error\":",
         (long long)app->lease_ttl_ms, ls->renewals, ls->failures);
    if (ls->last_error != 0)
        putf(rs, "\"%s\"", idm_err_name(ls->last_error));
    else
        puts_(rs, "null");
    putf(rs, ",\"reclaims\":%" PRIu64 ",\"losses\":%" PRIu64 ",\"changes\":%" PRIu64 "}",
         lv->lst.reclaims, lv->lst.losses, lv->lst.changes);
}

static void status_clock_rates(idmd_app *app, const idmd_monitor_view *mv, idmd_response *rs)
{
    static const char *const kinds[IDMD_K_N] = {"snowflake", "segment", "uuid7", "uuid4",
                                                 "ulid"};
    uint64_t total = 0;
    double sum = 0;
    putf(rs,
         "\"clock\":{\"offset_ms\":%lld,\"last_step_ms\":%lld,\"steps\":%" PRIu64
         ",\"drift_ppm\":%lld,\"stepped\":%s,\"drifting\":%s},\"minted\":{",
         (long long)mv->offset_ms, (long long)mv->last_step_ms, mv->steps,
         (long long)mv->drift_ppm, mv->stepped ? "true" : "false",
         mv->drifting ? "true" : "false");
    for (int k = 0; k < IDMD_K_N; k++) {
        uint64_t v = atomic_load(&app->m.minted[k]);
        total += v;
        putf(rs, "\"%s\":%" PRIu64 ",", kinds[k], v);
    }
    putf(rs, "\"total\":%" PRIu64 "},\"rates\":{\"interval_s\":1,\"ids_per_s\":[", total);
    for (size_t i = 0; i < mv->nrate; i++) {
        if (i > 0)
            puts_(rs, ",");
        put_number(rs, mv->rate[i]);
        sum += mv->rate[i];
    }
    puts_(rs, "],\"last\":");
    put_number(rs, mv->nrate > 0 ? mv->rate[mv->nrate - 1] : 0);
    puts_(rs, ",\"avg_60s\":");
    put_number(rs, mv->nrate > 0 ? sum / (double)mv->nrate : 0);
    puts_(rs, "}");
}

/* GET /v1/status: the console's status page (the document is in
 * docs/man/idmintd.1). health is /healthz's own computation. */
static void h_status(idmd_app *app, const params *p, idmd_response *rs)
{
    health h = {.why = ""};
    lease_view lv;
    idmd_monitor_view mv;
    idm_wall_ns wall;
    (void)p;
    health_eval(app, &h, &lv);
    wall = app->clock->wall_ns(app->clock->ctx);
    idmd_monitor_view_get(app, lv.now, &mv);
    rs->status = 200;
    rs->content_type = "application/json";
    puts_(rs, "{\"version\":\"");
    put_json_text(rs, idm_version());
    puts_(rs, "\",");
    put_iso(rs, "now", wall / 1000000);
    putf(rs, ",\"now_ms\":%lld,\"uptime_s\":%lld,\"health\":{\"ok\":%s,\"reason\":",
         (long long)(wall / 1000000), (long long)(mv.uptime_ms / 1000),
         h.why[0] == '\0' ? "true" : "false");
    if (h.why[0] != '\0') {
        puts_(rs, "\"");
        put_json_text(rs, h.why);
        puts_(rs, "\"");
    } else {
        puts_(rs, "null");
    }
    puts_(rs, ",\"warnings\":[");
    put_warnings(rs, &h);
    puts_(rs, "]},");
    status_layout(app, rs);
    puts_(rs, ",");
    status_node(app, &lv, rs);
    puts_(rs, ",");
    status_lease(app, &lv, wall, rs);
    puts_(rs, ",");
    status_clock_rates(app, &mv, rs);
    puts_(rs, "}\n");
}

/* ---------------------------------------------------------------- metrics */

static const int64_t lat_bounds_us[IDMD_LAT_BUCKETS] = {50,   100,  250,   500,   1000,
                                                        2500, 5000, 10000, 100000, 1000000};

/* The status codes counted one by one, in IDMD_C_* order. */
static const int codes[IDMD_C_OTHER] = {
#define IDMD_CODE_NUM(c) c,
    IDMD_CODES(IDMD_CODE_NUM)
#undef IDMD_CODE_NUM
};

void idmd_count(idmd_app *app, int status, int64_t latency_ns)
{
    int c = 0; /* IDMD_C_OTHER if status is none of codes[] */
    int64_t us = latency_ns / 1000;
    size_t b = 0;
    while (c < IDMD_C_OTHER && codes[c] != status)
        c++;
    atomic_fetch_add(&app->m.requests[c], 1);
    while (b < IDMD_LAT_BUCKETS && us > lat_bounds_us[b])
        b++;
    atomic_fetch_add(&app->m.lat[b], 1);
    atomic_fetch_add(&app->m.lat_sum_us, (uint64_t)(us > 0 ? us : 0));
}

static void metric(idmd_response *rs, const char *name, const char *type, const char *help)
{
    putf(rs, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric of one value: its HELP and TYPE lines, then "NAME VALUE". */
__attribute__((format(printf, 5, 6))) static void metric1(idmd_response *rs, const char *name,
                                                          const char *type, const char *help,
                                                          const char *fmt, ...)
{
    char v[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    metric(rs, name, type, help);
    putf(rs, "%s %s\n", name, v);
}

/* The app's own counters: ids by kind, answers by status. */
static void metrics_counts(idmd_app *app, idmd_response *rs)
{
    static const char *const kinds[IDMD_K_N] = {"snowflake", "segment", "uuid7", "uuid4",
                                                 "ulid"};
    metric(rs, "idmint_ids_minted_total", "counter", "Ids handed out, by kind.");
    for (int k = 0; k < IDMD_K_N; k++)
        putf(rs, "idmint_ids_minted_total{kind=\"%s\"} %" PRIu64 "\n", kinds[k],
             atomic_load(&app->m.minted[k]));
    metric(rs, "idmint_http_requests_total", "counter", "Requests answered, by status code.");
    for (int c = 0; c < IDMD_C_N; c++) {
        uint64_t v = atomic_load(&app->m.requests[c]);
        if (c < IDMD_C_OTHER)
            putf(rs, "idmint_http_requests_total{code=\"%d\"} %" PRIu64 "\n", codes[c], v);
        else
            putf(rs, "idmint_http_requests_total{code=\"other\"} %" PRIu64 "\n", v);
    }
}

/* The generator's, and its lease's. */
static void metrics_generator(idmd_app *app, idmd_response *rs)
{
    idm_snowflake_stats st;
    idm_lease_status ls;
    idm_leased_status lst;
    if (app->leased != NULL)
        idm_leased_stats_get(app->leased, &st);
    else
        idm_snowflake_stats_get(app->gen, &st);
    metric1(rs, "idmint_sequence_exhaustions_total", "counter",
            "Mints refused because the layout's sequence ran out within a tick.", "%" PRIu64,
            st.refused_exhausted);
    metric1(rs, "idmint_sequence_waits_total", "counter",
            "Sleeps taken for a full tick or a clock gone back (wait policies).", "%" PRIu64,
            st.waits);
    metric1(rs, "idmint_clock_regressions_total", "counter",
            "Mints refused because the clock went back beyond the policy's bound.", "%" PRIu64,
            st.refused_backwards);
    metric1(rs, "idmint_clock_regression_max_ms", "gauge", "The largest clock regression seen.",
            "%lld", (long long)st.max_backwards_ms);
    metric1(rs, "idmint_clock_regression_last_ms", "gauge",
            "The most recent clock regression (0: none).", "%lld",
            (long long)st.last_backwards_ms);
    metric1(rs, "idmint_ahead_mints_total", "counter",
            "Ids minted ahead of the wall clock (logical time, borrowed ticks).", "%" PRIu64,
            st.ahead_mints);
    if (app->lease == NULL && app->leased == NULL)
        return;
    if (app->leased != NULL) {
        idm_leased_status_get(app->leased, &lst);
        ls = lst.lease;
        ls.worker = lst.worker;
        metric1(rs, "idmint_lease_reclaims_total", "counter",
                "Worker ids claimed after the first: after losses and clock steps.", "%" PRIu64,
                lst.reclaims);
        metric1(rs, "idmint_lease_losses_total", "counter",
                "Claims the coordinator said were gone.", "%" PRIu64, lst.losses);
        metric1(rs, "idmint_worker_changes_total", "counter",
                "Worker ids changed for a clock step back (policy change-worker).", "%" PRIu64,
                lst.changes);
        metric1(rs, "idmint_lease_switch_failures_total", "counter",
                "Re-claims or worker changes that found no usable worker id.", "%" PRIu64,
                lst.switch_failures);
        metric1(rs, "idmint_lease_last_switch_seconds", "gauge",
                "From the last loss (or clock refusal) to the new worker id's first possible id.",
                "%.6f", (double)lst.last_switch_ns / 1e9);
        metric1(rs, "idmint_lease_offline", "gauge",
                "1 while minting on a claim saved before a restart, the coordinator unreachable.",
                "%d", ls.offline != 0);
    } else {
        idm_lease_status_get(app->lease, &ls);
    }
    metric1(rs, "idmint_lease_renewals_total", "counter", "Worker-id lease renewals that worked.",
            "%" PRIu64, ls.renewals);
    metric1(rs, "idmint_lease_failures_total", "counter", "Worker-id lease renewals that failed.",
            "%" PRIu64, ls.failures);
    metric1(rs, "idmint_lease_lost", "gauge", "1 if the coordinator says the lease is gone.",
            "%d", ls.lost != 0);
    metric1(rs, "idmint_lease_worker", "gauge", "The worker id held.", "%u", (unsigned)ls.worker);
}

/* The sequences', summed over those open (or the most any has). */
static void metrics_segments(idmd_app *app, idmd_response *rs)
{
    uint64_t waits = 0, wait_ns = 0, fetches = 0, errors = 0, open_failures;
    int64_t call_ms = 0, now = idm__mono_ns();
    size_t down = 0, nstate[3] = {0, 0, 0};
    pthread_mutex_lock(&app->seq_mu);
    for (size_t i = 0; i < app->nseqs; i++) {
        const idmd_seq_slot *s = app->seqs[i];
        idm_seq_stats ss;
        nstate[s->state]++;
        if (s->state == IDMD_SEQ_OPENING && (now - s->since_ns) / 1000000 > call_ms)
            call_ms = (now - s->since_ns) / 1000000; /* an open is store calls too */
        if (s->state != IDMD_SEQ_OPEN)
            continue;
        idm_seq_stats_get(s->q, &ss);
        waits += ss.waits;
        wait_ns += ss.wait_ns;
        fetches += ss.fetches;
        errors += ss.fetch_errors;
        if (ss.call_ms > call_ms)
            call_ms = ss.call_ms;
        if (ss.down_stores > down)
            down = ss.down_stores;
    }
    open_failures = app->open_failures;
    pthread_mutex_unlock(&app->seq_mu);
    metric1(rs, "idmint_segment_prefetch_waits_total", "counter",
            "Requests that waited for a segment block.", "%" PRIu64, waits);
    metric1(rs, "idmint_segment_wait_seconds_total", "counter",
            "Time requests waited for segment blocks.", "%.6f", (double)wait_ns / 1e9);
    metric1(rs, "idmint_segment_fetches_total", "counter", "Blocks taken from ticket stores.",
            "%" PRIu64, fetches);
    metric1(rs, "idmint_segment_fetch_errors_total", "counter",
            "Ticket-store round trips that failed.", "%" PRIu64, errors);
    metric1(rs, "idmint_segment_store_call_seconds", "gauge",
            "How long the longest ticket-store call in progress has run (a block fetch, or a "
            "sequence being opened); 0 if none.",
            "%.3f", (double)call_ms / 1e3);
    metric1(rs, "idmint_segment_down_stores", "gauge",
            "Ticket stores whose last call failed, the most any sequence finds.", "%zu", down);
    metric1(rs, "idmint_segment_sequences_open", "gauge", "Sequences open (allocators).", "%zu",
            nstate[IDMD_SEQ_OPEN]);
    metric1(rs, "idmint_segment_sequences_opening", "gauge",
            "Sequences being opened (waiting on the ticket store).", "%zu",
            nstate[IDMD_SEQ_OPENING]);
    metric1(rs, "idmint_segment_open_failures_total", "counter",
            "Opens of a sequence that failed (a name the store does not have aside).",
            "%" PRIu64, open_failures);
}

/* A label value: backslash, quote and newline escaped, as Prometheus's text
 * format wants. */
static void put_label(idmd_response *rs, const char *v)
{
    for (; *v != '\0'; v++) {
        if (*v == '\\' || *v == '"')
            putf(rs, "\\%c", *v);
        else if (*v == '\n')
            puts_(rs, "\\n");
        else
            put(rs, v, 1);
    }
}

/* Each store of the store key: up or down, its calls and failures, the
 * call in progress (store k of n, its URL with the password masked). */
static void metrics_stores(const idmd_app *app, idmd_response *rs)
{
    static const struct {
        const char *name, *type, *help;
    } m[] = {
        {"idmint_store_up", "gauge",
         "1 if the ticket store answered its last call (store k of n; url, password masked)."},
        {"idmint_store_calls_total", "counter", "Calls made to the ticket store."},
        {"idmint_store_failures_total", "counter",
         "Calls the ticket store did not answer (down, or past store-timeout)."},
        {"idmint_store_call_seconds", "gauge",
         "How long the ticket store's call in progress has run; 0 if none."},
    };
    size_t n;
    idm_store *const *st = stores_of(app, &app->store, &n);
    idm__store_health_info hi[IDMD_STORES_MAX];
    if (g_stores.app != app)
        return;
    for (size_t k = 0; k < n; k++)
        idm__store_health(st[k], &hi[k]);
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        metric(rs, m[i].name, m[i].type, m[i].help);
        for (size_t k = 0; k < n; k++) {
            putf(rs, "%s{store=\"%zu\",stores=\"%zu\"", m[i].name, k, n);
            if (i == 0) {
                puts_(rs, ",url=\"");
                put_label(rs, idm_store_url(st[k]));
                puts_(rs, "\"");
            }
            switch (i) {
            case 0:
                putf(rs, "} %d\n", !hi[k].down);
                break;
            case 1:
                putf(rs, "} %" PRIu64 "\n", hi[k].calls);
                break;
            case 2:
                putf(rs, "} %" PRIu64 "\n", hi[k].failures);
                break;
            default:
                putf(rs, "} %.3f\n", (double)hi[k].call_ms / 1e3);
                break;
            }
        }
    }
}

static void metrics_duration(idmd_app *app, idmd_response *rs)
{
    uint64_t cum = 0;
    metric(rs, "idmint_request_duration_seconds", "histogram",
           "Time from a request's arrival to its answer.");
    for (size_t b = 0; b <= IDMD_LAT_BUCKETS; b++) {
        cum += atomic_load(&app->m.lat[b]);
        if (b < IDMD_LAT_BUCKETS)
            putf(rs, "idmint_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
                 (double)lat_bounds_us[b] / 1e6, cum);
        else
            putf(rs, "idmint_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
    }
    putf(rs, "idmint_request_duration_seconds_sum %.6f\n",
         (double)atomic_load(&app->m.lat_sum_us) / 1e6);
    putf(rs, "idmint_request_duration_seconds_count %" PRIu64 "\n", cum);
}

static void h_metrics(idmd_app *app, const params *p, idmd_response *rs)
{
    (void)p;
    rs->status = 200;
    rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
    metrics_counts(app, rs);
    metrics_generator(app, rs);
    metrics_segments(app, rs);
    metrics_stores(app, rs);
    metrics_duration(app, rs);
}

/* ------------------------------------------------------------------ tools */

/*
 * The query of /v1/TOOL as the tool's command line, into argv (from argv[2]
 * on; buf holds the "--NAME=VALUE" texts): each parameter one of the tool's
 * options (cli_tool_params), given once unless it repeats, a flag's value
 * "", "1" or "true" (given) or "0" or "false" (not given), another's a
 * non-empty value of value_byte_ok bytes. *argc counts what was added. 0,
 * or an answer sent naming the parameter.
 */
static int tool_args(const char *path, const cli_tool_param *t, const char *query, char **argv,
                     int *argc, char *buf, bool *seen, idmd_response *rs)
{
    const char *q = query != NULL && query[0] != '\0' ? query : NULL;
    qpair kv;
    while (next_pair(&q, &kv)) {
        char key[32], known[400] = "";
        size_t i = 0;
        param_name(key, kv.k, kv.klen);
        while (t[i].name != NULL &&
               !(kv.klen == strlen(t[i].name) && memcmp(kv.k, t[i].name, kv.klen) == 0))
            i++;
        if (t[i].name == NULL) {
            for (size_t j = 0; t[j].name != NULL; j++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         j > 0 ? ", " : "", t[j].name);
            idmd_fail(rs, 400, key, "unknown parameter '%s' for %s: it takes %s", key, path,
                      known);
            return -1;
        }
        if (seen[i] && !t[i].repeat) {
            idmd_fail(rs, 400, key, "%s is given twice", key);
            return -1;
        }
        seen[i] = true;
        if (value_check(key, kv.v, kv.vlen, rs) != 0)
            return -1;
        if (t[i].flag) {
            bool on = kv.vlen == 0 || (kv.vlen == 1 && kv.v[0] == '1') ||
                      (kv.vlen == 4 && memcmp(kv.v, "true", 4) == 0);
            bool off = (kv.vlen == 1 && kv.v[0] == '0') ||
                       (kv.vlen == 5 && memcmp(kv.v, "false", 5) == 0);
            if (!on && !off) {
                idmd_fail(rs, 400, key,
                          "%s is a flag: give %s, %s=1 or %s=true (or %s=0 or %s=false: not "
                          "given)",
                          key, key, key, key, key, key);
                return -1;
            }
            if (on) {
                argv[(*argc)++] = buf;
                buf += sprintf(buf, "--%s", t[i].name) + 1;
            }
            continue;
        }
        if (kv.vlen == 0) {
            idmd_fail(rs, 400, key, "%s needs a value (%s=VALUE)", key, key);
            return -1;
        }
        argv[(*argc)++] = buf;
        buf += sprintf(buf, "--%s=%.*s", t[i].name, (int)kv.vlen, kv.v) + 1;
    }
    return 0;
}

/*
 * GET /v1/plan, /v1/estimate, /v1/birthday: the CLI's tool run in-process
 * (cli_tool_run) with the query as its options and --json: 200 with its
 * JSON document as it prints it, 400 with its message for what it refuses
 * (exit status 2), 500 for a failure (1). The parameters are checked here
 * first (tool_args). Nothing is minted.
 */
static void h_tool(idmd_app *app, const params *p, idmd_response *rs)
{
    const char *tool = p->path + strlen("/v1/");
    const cli_tool_param *t = cli_tool_params(tool);
    size_t qlen = p->query != NULL ? strlen(p->query) : 0, nparams = 0, npairs = 1;
    char **argv = NULL, *buf = NULL;
    bool *seen = NULL;
    int argc = 2;
    (void)app;
    if (t == NULL) {
        idmd_fail(rs, 500, NULL, "%s: no such tool in this build", tool);
        return;
    }
    while (t[nparams].name != NULL)
        nparams++;
    for (size_t i = 0; i < qlen; i++)
        npairs += p->query[i] == '&';
    argv = calloc(npairs + 3, sizeof *argv);
    buf = malloc(qlen + 3 * npairs + 16); /* each pair: "--", its bytes, a NUL */
    seen = calloc(nparams + 1, sizeof *seen);
    if (argv == NULL || buf == NULL || seen == NULL) {
        idmd_fail(rs, 503, NULL, "out of memory");
        goto out;
    }
    argv[0] = (char *)tool;
    argv[1] = (char *)"--json";
    if (tool_args(p->path, t, p->query, argv, &argc, buf, seen, rs) == 0)
        tool_answer(tool, argc, argv, NULL, rs);
out:
    free(argv);
    free(buf);
    free(seen);
}

/* -------------------------------------------------------------------- ui */

/* The console's headers: its pages load nothing from elsewhere and run no
 * inline script or style; browsers take the types given; each load asks
 * whether a file changed (a new idmintd serves new files). */
static const char ui_csp[] = "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                             "script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

static void ui_headers(idmd_response *rs)
{
    rs->csp = ui_csp;
    rs->nosniff = true;
    rs->cache_control = "no-cache";
}

/* /ui/ (index.html) and /ui/FILE: an embedded file (ui.h), or 404. */
static void h_ui(idmd_app *app, const params *p, idmd_response *rs)
{
    const char *name = p->arg != NULL ? p->arg : "index.html";
    const unsigned char *data;
    size_t len;
    const char *type;
    (void)app;
    if (!idmd_ui_file(name, &data, &len, &type)) {
        idmd_fail(rs, 404, NULL, "the console has no file %.80s", name);
    } else {
        rs->status = 200;
        rs->content_type = type;
        put(rs, (const char *)data, len);
    }
    ui_headers(rs);
}

/* /ui: the console is at /ui/ (its pages' relative links need the '/'). */
static void h_ui_root(idmd_app *app, const params *p, idmd_response *rs)
{
    (void)app;
    (void)p;
    rs->status = 301;
    rs->content_type = "text/plain; charset=utf-8";
    rs->location = "/ui/";
    puts_(rs, "the console is at /ui/\n");
    ui_headers(rs);
}

/* ---------------------------------------------------------------- routing */

static void h_ping(idmd_app *app, const params *p, idmd_response *rs)
{
    (void)app;
    (void)p;
    rs->status = 200;
    rs->content_type = "text/plain; charset=utf-8";
    puts_(rs, "ok\n");
}

enum { M_GET = 1, M_HEAD = 2 };

/* What a route takes in its query. */
typedef enum query_kind {
    Q_IGNORED, /* not looked at (/ping: nothing parsed, the framework's ceiling) */
    Q_NONE,    /* no parameters: one is 400 naming it */
    Q_LEAF,    /* none either; the answer is one id, the bare number (Leaf's) */
    Q_IDS,     /* count and format (opaque too for the 64-bit kinds) */
    Q_DECODE,  /* format, layout, epoch (parse_decode_query) */
    Q_TOOL     /* the tool's options (h_tool checks them) */
} query_kind;

typedef void handler_fn(idmd_app *app, const params *p, idmd_response *rs);

/*
 * One row an endpoint. path is exact, or ends in a {name} segment: any one
 * segment (no '/'), the handler's arg. HEAD only where nothing is minted:
 * its answer has no body, so ids minted for it would be lost. admin: served
 * on the admin listener (admin-listen) too. Every route needs the bearer
 * token when one is set, the admin ones too, and so does a path no route
 * has (a 401 tells nothing of what exists); open ones aside: the console's
 * static files (no secret in them; the API calls they make carry the
 * token), never served on the admin listener.
 */
typedef struct route {
    const char *path;
    unsigned methods; /* M_GET | M_HEAD */
    int kind;         /* IDMD_K_*: what it mints, its metric; -1: nothing */
    query_kind query;
    bool admin;
    handler_fn *fn;
    bool open; /* served without the bearer token */
} route;

static const route routes[] = {
    {"/ping", M_GET | M_HEAD, -1, Q_IGNORED, true, h_ping, false},
    {"/healthz", M_GET | M_HEAD, -1, Q_NONE, true, h_health, false},
    {"/metrics", M_GET | M_HEAD, -1, Q_NONE, true, h_metrics, false},
    {"/v1/snowflake", M_GET, IDMD_K_SNOWFLAKE, Q_IDS, false, h_numbers, false},
    {"/v1/segment/{name}", M_GET, IDMD_K_SEGMENT, Q_IDS, false, h_numbers, false},
    {"/v1/uuid7", M_GET, IDMD_K_UUID7, Q_IDS, false, h_128, false},
    {"/v1/uuid4", M_GET, IDMD_K_UUID4, Q_IDS, false, h_128, false},
    {"/v1/ulid", M_GET, IDMD_K_ULID, Q_IDS, false, h_128, false},
    {"/v1/decode/{id}", M_GET, -1, Q_DECODE, false, h_decode, false},
    {"/v1/status", M_GET | M_HEAD, -1, Q_NONE, false, h_status, false},
    {"/v1/plan", M_GET | M_HEAD, -1, Q_TOOL, false, h_tool, false},
    {"/v1/estimate", M_GET | M_HEAD, -1, Q_TOOL, false, h_tool, false},
    {"/v1/birthday", M_GET | M_HEAD, -1, Q_TOOL, false, h_tool, false},
    {"/ui", M_GET | M_HEAD, -1, Q_IGNORED, false, h_ui_root, true},
    {"/ui/", M_GET | M_HEAD, -1, Q_IGNORED, false, h_ui, true},
    {"/ui/{file}", M_GET | M_HEAD, -1, Q_IGNORED, false, h_ui, true},
    {"/api/snowflake/get/{key}", M_GET, IDMD_K_SNOWFLAKE, Q_LEAF, false, h_numbers, false},
    {"/api/segment/get/{key}", M_GET, IDMD_K_SEGMENT, Q_LEAF, false, h_numbers, false},
};
#define NROUTES (sizeof routes / sizeof routes[0])

/* Whether path is r's; *arg is its {name} segment, or NULL. */
static bool route_match(const route *r, const char *path, const char **arg)
{
    const char *brace = strchr(r->path, '{');
    size_t n = brace != NULL ? (size_t)(brace - r->path) : 0;
    *arg = NULL;
    if (brace == NULL)
        return strcmp(path, r->path) == 0;
    if (strncmp(path, r->path, n) != 0 || path[n] == '\0' || strchr(path + n, '/') != NULL)
        return false;
    *arg = path + n;
    return true;
}

/* The route serving method m on path, or NULL; then *allowed is the
 * methods the routes of path serve (GET for a path no route has: it is
 * refused as any other, before it is looked at). */
static const route *route_find(const char *path, unsigned m, unsigned *allowed,
                               const char **arg)
{
    *allowed = 0;
    for (size_t i = 0; i < NROUTES; i++) {
        if (!route_match(&routes[i], path, arg))
            continue;
        if ((routes[i].methods & m) != 0)
            return &routes[i];
        *allowed |= routes[i].methods;
    }
    if (*allowed == 0)
        *allowed = M_GET;
    return NULL;
}

bool idmd_route_admin(const char *path)
{
    const char *arg;
    for (size_t i = 0; i < NROUTES; i++)
        if (routes[i].admin && route_match(&routes[i], path, &arg))
            return true;
    return false;
}

static unsigned method_bit(const char *m)
{
    return m == NULL ? 0 : strcmp(m, "GET") == 0 ? M_GET : strcmp(m, "HEAD") == 0 ? M_HEAD : 0;
}

/* 405 for a method path's routes do not serve (allowed: those they do). */
static void fail_method(idmd_response *rs, unsigned m, unsigned allowed)
{
    if (m != M_HEAD) {
        idmd_fail(rs, 405, NULL, "only GET%s is served here",
                  (allowed & M_HEAD) != 0 ? " (and HEAD)" : "");
    } else {
        char on[400] = "";
        size_t last = 0; /* the last route serving HEAD */
        for (size_t i = 0; i < NROUTES; i++)
            last = (routes[i].methods & M_HEAD) != 0 ? i : last;
        for (size_t i = 0; i < NROUTES; i++)
            if ((routes[i].methods & M_HEAD) != 0)
                snprintf(on + strlen(on), sizeof on - strlen(on), "%s%s",
                         on[0] == '\0' ? "" : i == last ? " and " : ", ", routes[i].path);
        idmd_fail(rs, 405, NULL, "HEAD is served on %s only: it would mint ids nobody sees", on);
    }
    rs->allow = (allowed & M_HEAD) != 0 ? "GET, HEAD" : "GET";
}

/* The request's parameters as r takes them (arg: the path's {name}), into
 * p. 0 or an answer sent. */
static int route_params(idmd_app *app, const route *r, const char *path, const char *arg,
                        const char *query, params *p, idmd_response *rs)
{
    char key[32];
    *p = (params){.arg = arg,
                  .path = r->path,
                  .query = query,
                  .count = 1,
                  .bare = r->query == Q_LEAF,
                  .kind = r->kind};
    switch (r->query) {
    case Q_IGNORED:
    case Q_TOOL:
        return 0;
    case Q_DECODE:
        return parse_decode_query(query, p, rs);
    case Q_LEAF:
    case Q_NONE: /* a query is 400 naming its first parameter */
        if (query == NULL || query[0] == '\0')
            return 0;
        param_name(key, query, strcspn(query, "=&"));
        idmd_fail(rs, 400, key, "unknown parameter '%s': %s takes no parameters", key, path);
        return -1;
    case Q_IDS: /* the 64-bit kinds have an opaque form */
        break;
    }
    return parse_query(app, query, r->kind == IDMD_K_SNOWFLAKE || r->kind == IDMD_K_SEGMENT, p,
                       rs);
}

/* Whether the presented token is ours, whole. The time taken depends on
 * the length of ours (every byte of it is compared, against 0 past the end
 * of a shorter one) and of the one presented, never on where they differ;
 * a difference in length joins the same result. */
static bool token_ok(const idmd_app *app, const char *auth)
{
    const unsigned char *t;
    size_t n;
    unsigned diff;
    /* The scheme is case-insensitive (RFC 9110, section 11.1). */
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    t = (const unsigned char *)auth + 7;
    n = strlen((const char *)t);
    diff = n != app->token_len;
    for (size_t i = 0; i < app->token_len; i++)
        diff |= (unsigned)((unsigned char)app->token[i] ^ (i < n ? t[i] : 0u));
    return diff == 0;
}

/*
 * The checks come in this order, each answer before the next is looked at:
 * a method no route serves is 405 (HEAD aside); no token, 401; a path
 * outside its alphabet, 400; HEAD where it is not served, 405; a path no
 * route has, 404; then the route's parameters (400) and its handler.
 */
void idmd_handle(idmd_app *app, const idmd_request *rq, idmd_response *rs)
{
    const char *path = rq->path != NULL ? rq->path : "", *arg = NULL;
    unsigned m = method_bit(rq->method), allowed;
    const route *r = route_find(path, m, &allowed, &arg);
    bool refused = r == NULL && (allowed & m) == 0; /* 405 */
    params p;
    reset(rs);
    rs->status = 500;
    rs->content_type = "application/json";
    if (refused && m != M_HEAD) {
        fail_method(rs, m, allowed);
        return;
    }
    if (app->token_len > 0 && !(r != NULL && r->open) && !token_ok(app, rq->authorization)) {
        idmd_fail(rs, 401, NULL, "a valid bearer token is required (Authorization: Bearer ...)");
        rs->www_authenticate = true;
        return;
    }
    if (path[0] != '/' || !path_ok(path)) {
        idmd_fail(rs, 400, "path",
             "the path may hold only letters, digits, '/', '_', '.' and '-' (no "
             "percent-encoding)");
        return;
    }
    if (refused) {
        fail_method(rs, m, allowed);
        return;
    }
    if (r == NULL) {
        idmd_fail(rs, 404, NULL, "no such endpoint: %.80s", path);
        return;
    }
    if (route_params(app, r, path, arg, rq->query, &p, rs) == 0)
        r->fn(app, &p, rs);
}

int idmd_seqs_init(idmd_app *app)
{
    bool cv_ok = idm__cond_init_mono(&app->seq_cv) == 0;
    if (cv_ok && pthread_mutex_init(&app->seq_mu, NULL) == 0)
        return 0;
    if (cv_ok)
        pthread_cond_destroy(&app->seq_cv);
    return -1;
}

void idmd_seqs_close(idmd_app *app)
{
    idmd_seq_slot **seqs;
    size_t n;
    bool waiting = true;
    pthread_mutex_lock(&app->seq_mu);
    app->seqs_closed = true;
    pthread_cond_broadcast(&app->seq_cv);
    /* Requests waiting on a slot see seqs_closed and leave. */
    while (waiting) {
        waiting = false;
        for (size_t i = 0; i < app->nseqs && !waiting; i++)
            waiting = app->seqs[i]->users > 0;
        if (waiting)
            pthread_cond_wait(&app->seq_cv, &app->seq_mu);
    }
    /* The opens in progress end (their store calls have deadlines); seq_mu
     * is let go meanwhile, for them and for /healthz and /metrics. Nothing
     * else changes the table now: no request starts an open or waits. */
    for (size_t i = 0; i < app->nseqs; i++) {
        idmd_seq_slot *s = app->seqs[i];
        if (s->has_opener) {
            pthread_t th = s->opener;
            s->has_opener = false;
            pthread_mutex_unlock(&app->seq_mu);
            pthread_join(th, NULL);
            pthread_mutex_lock(&app->seq_mu);
        }
    }
    seqs = app->seqs;
    n = app->nseqs;
    app->seqs = NULL;
    app->nseqs = app->seqs_cap = 0;
    pthread_mutex_unlock(&app->seq_mu);
    /* Every allocator opened is closed here, also one whose open ended
     * during shutdown: none is dropped. */
    for (size_t i = 0; i < n; i++) {
        if (seqs[i]->state == IDMD_SEQ_OPEN)
            idm_seq_close(seqs[i]->q);
        free(seqs[i]);
    }
    free(seqs);
}
