/* SPDX-License-Identifier: MIT */
/*
 * idmintd's configuration (see config.h): defaults < config file <
 * environment < flags. Every key is one row of cfg_keys (redis's
 * standardConfig is the model): its name, kind, field, bounds, default and
 * --help text; its environment variable, its flag, its default, its parsing,
 * its printing and its --help line are all derived from that row. Every value
 * is checked, strictly, when it is set; what needs more than one key (a text
 * layout needs an epoch) is checked once all sources are in. Nothing here
 * prints, and the only global state is the --help text, built once: errors
 * are one line in the caller's buffer, naming the source, the key and the
 * value.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>
#include <idmint/segment.h>

#include "common.h"
#include "ordinal.h"

/* The manual page says so. */
_Static_assert(IDM_STORE_TIMEOUT_MS == 5000, "store-timeout's default is documented as 5000");

/* Longest config file line, without its newline. */
#define CFG_LINE_MAX 4096
/* How much of a bad value an error message quotes. */
#define CFG_SHOW_MAX 128

/* ---- small helpers ---- */

__attribute__((format(printf, 3, 4))) static int cfg_fail(char *err, size_t errlen,
                                                       const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* "source: key 'value': why", the value cut at CFG_SHOW_MAX bytes. */
__attribute__((format(printf, 6, 7))) static int cfg_bad(char *err, size_t errlen,
                                                      const char *source,
                                                      const char *key,
                                                      const char *value,
                                                      const char *fmt, ...)
{
    char why[256], shown[CFG_SHOW_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    /* A URL's password never reaches a message (every URL's, for a value
     * that holds several). */
    idmd_mask_urls(value, shown, sizeof shown);
    size_t n = strlen(shown);
    return cfg_fail(err, errlen, "%s: %s '%.*s%s': %s", source, key,
                (int)(n > CFG_SHOW_MAX ? CFG_SHOW_MAX : n), shown,
                n > CFG_SHOW_MAX ? "..." : "", why);
}

/* Strict decimal: one or more ASCII digits, nothing else, fits in 64 bits. */
static bool dec_u64(const char *s, uint64_t *out)
{
    if (*s == '\0')
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return idm_u64_parse(s, out) == 0;
}

static bool is_name(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
            return false;
    }
    return true;
}

static bool is_preset(const char *name)
{
    for (const char *const *p = idm_layout_preset_names(); *p != NULL; p++)
        if (strcmp(*p, name) == 0)
            return true;
    return false;
}

/* ---- output into a caller's buffer, cut, never overrun ---- */

typedef struct outbuf {
    char *p;
    size_t len, used;
} outbuf;

__attribute__((format(printf, 2, 3))) static void cfg_out(outbuf *o, const char *fmt, ...)
{
    if (o->len == 0 || o->used >= o->len - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->p + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    o->used += (size_t)w;
    if (o->used > o->len - 1)
        o->used = o->len - 1;
}

/* ---- the keys ---- */

typedef enum cfg_kind {
    CFG_NUM,    /* a decimal in lo..hi, into an unsigned or int64_t field of 4 or 8 bytes */
    CFG_STR,    /* text into a char array (valid checks it first) */
    CFG_CHOICE, /* one of choices, into a char array */
    CFG_LISTEN, /* HOST:PORT: the host into a char array, the port into the int at off2 */
    CFG_EPOCH   /* Unix ms or ISO-8601 into an int64_t; the bool at off2 says it is set */
} cfg_kind;

typedef struct cfg_key cfg_key;

/* A value's syntax, beyond its kind's: 0, or -1 with err (cfg_bad). */
typedef int (*cfg_valid)(const cfg_key *k, const char *value, const char *source, char *err,
                         size_t errlen);

struct cfg_key {
    const char *name;       /* the file's key, --name, IDMINT_NAME (upper case, '_' for '-') */
    cfg_kind kind;
    size_t off, size;       /* the field in idmd_config */
    size_t off2;            /* CFG_LISTEN: the port; CFG_EPOCH: epoch_set */
    uint64_t lo, hi, dflt;  /* CFG_NUM: bounds and default */
    const char *def;        /* other kinds: the default, set as any value is (NULL: none) */
    bool empty_ok;          /* "" is a value (CFG_LISTEN: no listener) */
    cfg_valid valid;        /* CFG_STR */
    const char *const *choices; /* CFG_CHOICE: NULL-terminated */
    const char *arg, *help; /* --help: "--name ARG" and what the key is */
    const char *def_help;   /* --help: the default told, for a default that is not a plain
                               value; after CFG_NUM's number. A '\n' continues the line. */
};

/* ---- values ---- */

/* listen and admin-listen: HOST:PORT into host_out[256] and *port_out. */
static int set_listen(const char *key, char *host_out, int *port_out, const char *source,
                      const char *value, char *err, size_t errlen)
{
    char host[256];
    const char *port;
    if (value[0] == '[') {
        const char *close = strchr(value, ']');
        if (close == NULL)
            return cfg_bad(err, errlen, source, key, value, "no ']' after the IPv6 address");
        if (close[1] != ':')
            return cfg_bad(err, errlen, source, key, value, "expected HOST:PORT");
        size_t n = (size_t)(close - value - 1);
        if (n == 0 || n >= sizeof host)
            return cfg_bad(err, errlen, source, key, value, "bad IPv6 address");
        memcpy(host, value + 1, n);
        host[n] = '\0';
        unsigned char addr[16];
        if (inet_pton(AF_INET6, host, addr) != 1)
            return cfg_bad(err, errlen, source, key, value, "'%s' is not an IPv6 address", host);
        port = close + 2;
    } else {
        const char *colon = strrchr(value, ':');
        if (colon == NULL)
            return cfg_bad(err, errlen, source, key, value, "expected HOST:PORT");
        size_t n = (size_t)(colon - value);
        if (n == 0)
            return cfg_bad(err, errlen, source, key, value, "no host before the port");
        if (memchr(value, ':', n) != NULL)
            return cfg_bad(err, errlen, source, key, value,
                       "an IPv6 address goes in brackets: [::1]:7070");
        if (n >= sizeof host)
            return cfg_bad(err, errlen, source, key, value, "host too long");
        memcpy(host, value, n);
        host[n] = '\0';
        unsigned char addr[4];
        if (strcmp(host, "localhost") != 0 && inet_pton(AF_INET, host, addr) != 1)
            return cfg_bad(err, errlen, source, key, value,
                       "host must be a dotted IPv4 address, localhost or [IPv6]");
        port = colon + 1;
    }
    uint64_t p = 0;
    if (!dec_u64(port, &p) || p > 65535)
        return cfg_bad(err, errlen, source, key, value, "port must be a decimal 0..65535");
    memcpy(host_out, host, strlen(host) + 1);
    *port_out = (int)p;
    return 0;
}

/* node: name=value pairs, syntax only (idmd_config_check holds them
 * against the layout). */
static int valid_node(const cfg_key *k, const char *value, const char *source, char *err,
                      size_t errlen)
{
    const char *key = k->name;
    int ordinals = 0;
    if (strlen(value) >= k->size)
        return cfg_bad(err, errlen, source, key, value, "longer than %zu bytes", k->size - 1);
    const char *p = value;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq == NULL)
            return cfg_bad(err, errlen, source, key, value,
                       "expected name=value pairs separated by commas");
        size_t nlen = (size_t)(eq - p);
        if (!is_name(p, nlen))
            return cfg_bad(err, errlen, source, key, value,
                       "a field name is [a-z0-9_]+");
        char num[96] = "";
        size_t vlen = len - nlen - 1;
        uint64_t v = 0;
        if (vlen < sizeof num)
            memcpy(num, eq + 1, vlen);
        if (vlen < sizeof num && idm__ordinal_is(num)) {
            /* the platform's ordinal: resolved by idmd_config_check */
            if (++ordinals > 1)
                return cfg_bad(err, errlen, source, key, value,
                               "only one field may take the ordinal");
        } else if (vlen >= sizeof num || !dec_u64(num, &v)) {
            return cfg_bad(err, errlen, source, key, value,
                           "'%.*s' needs a decimal value, ordinal or ordinal:VAR", (int)nlen, p);
        }
        /* the same field twice */
        for (const char *q = value; q < p;) {
            const char *qe = strchr(q, '=');
            if ((size_t)(qe - q) == nlen && memcmp(q, p, nlen) == 0)
                return cfg_bad(err, errlen, source, key, value, "field '%.*s' given twice",
                           (int)nlen, p);
            q = strchr(q, ',') + 1;
        }
        if (end == NULL)
            break;
        if (end[1] == '\0')
            return cfg_bad(err, errlen, source, key, value, "trailing comma");
        p = end + 1;
    }
    return 0;
}

static int valid_layout(const cfg_key *k, const char *value, const char *source, char *err,
                        size_t errlen)
{
    const char *key = k->name;
    if (value[0] == '\0')
        return cfg_bad(err, errlen, source, key, value, "empty");
    if (strlen(value) >= k->size)
        return cfg_bad(err, errlen, source, key, value, "longer than %zu bytes", k->size - 1);
    if (is_preset(value))
        return 0;
    if (strchr(value, ':') == NULL) {
        char names[128] = "";
        outbuf o = {names, sizeof names, 0};
        for (const char *const *p = idm_layout_preset_names(); *p != NULL; p++)
            cfg_out(&o, "%s%s", o.used > 0 ? ", " : "", *p);
        return cfg_bad(err, errlen, source, key, value,
                   "not a preset (%s) nor a text form like time:41@1ms,worker:10,seq:12", names);
    }
    /* The epoch may come later, from another source; only the form is checked
     * here (idmd_config_build checks that an epoch was given). */
    idm_layout *l = NULL;
    if (idm_layout_parse(&l, value, 0) != 0)
        return cfg_bad(err, errlen, source, key, value, "%s", idm_error_detail());
    idm_layout_free(l);
    return 0;
}

static int valid_url(const cfg_key *k, const char *value, const char *source, char *err,
                     size_t errlen)
{
    const char *sep = strstr(value, "://");
    if (sep == NULL || sep == value)
        return cfg_bad(err, errlen, source, k->name, value, "not a URL (scheme://...)");
    return 0;
}

/* Calls fn(ctx, url, len) on each white-space separated word of text, in
 * order, until it returns non-zero (returned); 0 when all were seen. */
static int each_word(const char *text, int (*fn)(void *ctx, const char *w, size_t len),
                     void *ctx)
{
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')
            p++;
        if (*p == '\0')
            return 0;
        size_t n = strcspn(p, " \t\n\r\f\v");
        int rc = fn(ctx, p, n);
        if (rc != 0)
            return rc;
        p += n;
    }
}

typedef struct store_scan {
    const char *words[IDMD_STORES_MAX + 1];
    size_t lens[IDMD_STORES_MAX + 1];
    size_t n;
} store_scan;

static int scan_word(void *ctx, const char *w, size_t len)
{
    store_scan *sc = ctx;
    if (sc->n == IDMD_STORES_MAX + 1)
        return 1;
    sc->words[sc->n] = w;
    sc->lens[sc->n++] = len;
    return 0;
}

/* store: 1 to IDMD_STORES_MAX URLs separated by white space, each a URL
 * (scheme://...) below IDMD_URL_MAX bytes, none given twice (store k and
 * store j of n at once). Their schemes are checked by check_url. */
static int valid_store(const cfg_key *k, const char *value, const char *source, char *err,
                       size_t errlen)
{
    store_scan sc = {.n = 0};
    if (strlen(value) >= k->size)
        return cfg_bad(err, errlen, source, k->name, value, "longer than %zu bytes", k->size - 1);
    each_word(value, scan_word, &sc);
    if (sc.n == 0)
        return cfg_bad(err, errlen, source, k->name, value, "empty");
    if (sc.n > IDMD_STORES_MAX)
        return cfg_bad(err, errlen, source, k->name, value,
                       "more than %d stores (URLs separated by white space)", IDMD_STORES_MAX);
    for (size_t i = 0; i < sc.n; i++) {
        char url[IDMD_URL_MAX];
        if (sc.lens[i] >= sizeof url)
            return cfg_bad(err, errlen, source, k->name, value,
                           "store %zu of %zu is longer than %zu bytes", i + 1, sc.n,
                           sizeof url - 1);
        memcpy(url, sc.words[i], sc.lens[i]);
        url[sc.lens[i]] = '\0';
        const char *sep = strstr(url, "://");
        if (sep == NULL || sep == url)
            return cfg_bad(err, errlen, source, k->name, value,
                           "store %zu of %zu is not a URL (scheme://...; several stores are "
                           "separated by white space)",
                           i + 1, sc.n);
        for (size_t j = 0; j < i; j++)
            if (sc.lens[j] == sc.lens[i] && memcmp(sc.words[j], sc.words[i], sc.lens[i]) == 0)
                return cfg_bad(err, errlen, source, k->name, value,
                               "stores %zu and %zu of %zu are the same URL: give each store "
                               "once",
                               j + 1, i + 1, sc.n);
    }
    return 0;
}

static int valid_field(const cfg_key *k, const char *value, const char *source, char *err,
                       size_t errlen)
{
    if (!is_name(value, strlen(value)))
        return cfg_bad(err, errlen, source, k->name, value, "a field name is [a-z0-9_]+");
    return 0;
}

static int valid_clock(const cfg_key *k, const char *value, const char *source, char *err,
                       size_t errlen)
{
    static const char pre[] = "offset-file:";
    if (strcmp(value, "system") != 0 &&
        (strncmp(value, pre, sizeof pre - 1) != 0 || value[sizeof pre - 1] != '/' ||
         value[sizeof pre] == '\0'))
        return cfg_bad(err, errlen, source, k->name, value,
                   "must be system or offset-file:/ABSOLUTE/PATH");
    return 0;
}

/* ---- the key table ---- */

#define AT(f) .off = offsetof(idmd_config, f), .size = sizeof(((idmd_config *)0)->f)
#define NUM(f, l, h, d) .kind = CFG_NUM, AT(f), .lo = (uint64_t)(l), .hi = (uint64_t)(h), \
                        .dflt = (uint64_t)(d)
#define STR(f) .kind = CFG_STR, AT(f)
#define PAIR(k, f, f2) .kind = k, AT(f), .off2 = offsetof(idmd_config, f2)

static const char *const policies[] = {"logical", "refuse", "wait", "change-worker", NULL};
static const char *const exhausts[] = {"wait", "borrow", NULL};

/* Every key, in print order (idmd_config.source's). */
static const cfg_key cfg_keys[] = {
    {"listen", PAIR(CFG_LISTEN, listen_host, listen_port), .def = "127.0.0.1:7070",
     .arg = "HOST:PORT", .help = "where to listen: IPv4, localhost or [IPv6]"},
    {"admin-listen", PAIR(CFG_LISTEN, admin_host, admin_port), .empty_ok = true,
     .arg = "HOST:PORT", .help = "a listener of its own for /healthz, /metrics, /ping"},
    {"data-dir", STR(data_dir), .def = "./var", .arg = "DIR", .help = "where state lives"},
    {"lease", STR(lease), .valid = valid_url, .arg = "URL", .def_help = "file://DATA-DIR/leases",
     .help = "lease backend: file://, etcd://, etcds://, zk:// or postgres://"},
    {"lease-ttl", NUM(lease_ttl_ms, IDM_LEASE_TTL_MIN_MS, IDM_LEASE_TTL_MAX_MS,
                      IDM_LEASE_TTL_DEFAULT_MS), .arg = "MS", .help = "lease time to live"},
    {"store", STR(store), .valid = valid_store, .arg = "URL...",
     .help = "ticket store, or up to 16 separated by spaces",
     .def_help = "sqlite://DATA-DIR/segments.db"},
    {"layout", STR(layout), .valid = valid_layout, .def = "twitter", .arg = "LAYOUT",
     .help = "preset name or text form time:41@1ms,...,seq:12"},
    {"epoch", PAIR(CFG_EPOCH, epoch, epoch_set), .arg = "TIME", .def_help = "the preset's",
     .help = "Unix ms or ISO-8601; needed by a text layout"},
    {"policy", .kind = CFG_CHOICE, AT(policy), .choices = policies, .def = "logical",
     .arg = "POLICY", .help = "clock step back"},
    {"exhaust", .kind = CFG_CHOICE, AT(exhaust), .choices = exhausts, .def = "wait",
     .arg = "MODE", .help = "sequence exhausted"},
    {"node", STR(node), .valid = valid_node, .empty_ok = true, .arg = "NAME=N,...",
     .help = "extra node fields, e.g. datacenter=1, worker=ordinal"},
    {"lease-field", STR(lease_field), .valid = valid_field, .def = "worker", .arg = "NAME",
     .help = "the node field the lease fills",
     .def_help = "worker, shard or machine,\nwhichever the layout has, else its only node field"},
    {"count-max", NUM(count_max, 1, 1000000, 10000), .arg = "N",
     .help = "most ids one request may ask for",
     .def_help = ", or\nless: what the layout can always mint in one request"},
    /* Empty is refused: a blank variable must not turn authentication off
     * behind the file's back. Leave the key out for none. */
    {"token-file", STR(token_file), .arg = "FILE", .help = "file holding the bearer token",
     .def_help = "none: no authentication"},
    {"idle-timeout", NUM(idle_timeout_ms, 100, 3600000, 10000), .arg = "MS",
     .help = "idle connection timeout"},
    {"head-timeout", NUM(head_timeout_ms, 100, 3600000, 5000), .arg = "MS",
     .help = "time to send a whole request"},
    {"max-request", NUM(max_request, 1024, 1048576, 8192), .arg = "BYTES",
     .help = "request line + headers"},
    {"threads", NUM(threads, 1, 64, 2), .arg = "N", .help = "worker threads"},
    {"max-connections", NUM(max_connections, 1, 100000, 1024), .arg = "N",
     .help = "open connections"},
    {"max-connections-per-ip", NUM(max_connections_per_ip, 1, 100000, 256), .arg = "N",
     .help = "open connections from one address"},
    {"clock", STR(clock), .valid = valid_clock, .def = "system", .arg = "CLOCK",
     .help = "system or offset-file:/ABS/PATH"},
    {"segment-wait", NUM(segment_wait_ms, 0, 60000, 1000), .arg = "MS",
     .help = "how long a request waits for a block or an open"},
    {"store-timeout", NUM(store_timeout_ms, 1, 3600000, IDM_STORE_TIMEOUT_MS), .arg = "MS",
     .help = "how long one ticket-store call may take"},
    /* Like token-file: empty is refused; leave the key out for none. */
    {"opaque-key-file", STR(opaque_key_file), .arg = "FILE",
     .help = "key (32 hex digits) for ?format=opaque"},
};
#define NKEYS (sizeof cfg_keys / sizeof cfg_keys[0])
_Static_assert(NKEYS <= IDMD_KEYS_MAX, "IDMD_KEYS_MAX is too small for the keys");

/* The key whose field is at off (its first field for two). */
static const cfg_key *key_at(size_t off)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (cfg_keys[i].off == off)
            return &cfg_keys[i];
    abort(); /* KEY() of a field no row has: a mistake in this file */
}
#define KEY(f) key_at(offsetof(idmd_config, f))

static const cfg_key *key_named(const char *name, size_t len)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strlen(cfg_keys[i].name) == len && memcmp(cfg_keys[i].name, name, len) == 0)
            return &cfg_keys[i];
    return NULL;
}

/* IDMINT_ and the key's name, upper case, '_' for '-'. */
static void env_name(const cfg_key *k, char *out, size_t cap)
{
    int w = snprintf(out, cap, "IDMINT_%s", k->name);
    for (char *p = out + 7; w > 7 && *p != '\0'; p++)
        *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
}

/* Where key k's value came from, for a message. */
static const char *src_of(const idmd_config *c, const cfg_key *k)
{
    const char *s = c->source[k - cfg_keys];
    return s[0] != '\0' ? s : "default";
}

/* A message about key k of c, whose value is shown as value. */
#define BAD(k, value, ...) cfg_bad(err, errlen, src_of(c, (k)), (k)->name, (value), __VA_ARGS__)

/* A CFG_NUM field: 4 bytes (unsigned, uint32_t) or 8 (int64_t, size_t), and
 * never negative. */
static void num_put(idmd_config *c, const cfg_key *k, uint64_t v)
{
    uint32_t v32 = (uint32_t)v;
    memcpy((char *)c + k->off, k->size == sizeof v32 ? (void *)&v32 : (void *)&v, k->size);
}

static uint64_t num_get(const idmd_config *c, const cfg_key *k)
{
    uint32_t v32 = 0;
    uint64_t v = 0;
    memcpy(k->size == sizeof v32 ? (void *)&v32 : (void *)&v, (const char *)c + k->off, k->size);
    return k->size == sizeof v32 ? v32 : v;
}

/* "a, b or c": k's choices, into out. */
static void choice_list(const cfg_key *k, char *out, size_t cap)
{
    outbuf o = {out, cap, 0};
    out[0] = '\0';
    for (const char *const *p = k->choices; *p != NULL; p++)
        cfg_out(&o, "%s%s", p == k->choices ? "" : p[1] == NULL ? " or " : ", ", *p);
}

/* Set key k from value, checked whole before anything is stored (a refused
 * value leaves c as it was). */
static int set_value(idmd_config *c, const cfg_key *k, const char *value, const char *source,
                     char *err, size_t errlen)
{
    char *field = (char *)c + k->off;
    uint64_t v = 0;
    switch (k->kind) {
    case CFG_NUM:
        if (!dec_u64(value, &v))
            return cfg_bad(err, errlen, source, k->name, value,
                       "not a decimal number (digits only, %" PRIu64 "..%" PRIu64 ")", k->lo,
                       k->hi);
        if (v < k->lo || v > k->hi)
            return cfg_bad(err, errlen, source, k->name, value,
                       "out of range %" PRIu64 "..%" PRIu64, k->lo, k->hi);
        num_put(c, k, v);
        return 0;
    case CFG_CHOICE: {
        char list[128];
        for (const char *const *p = k->choices; *p != NULL; p++) {
            if (strcmp(*p, value) == 0) {
                memcpy(field, value, strlen(value) + 1);
                return 0;
            }
        }
        choice_list(k, list, sizeof list);
        return cfg_bad(err, errlen, source, k->name, value, "must be %s", list);
    }
    case CFG_STR:
        if (k->valid != NULL && k->valid(k, value, source, err, errlen) != 0)
            return -1;
        if (!k->empty_ok && value[0] == '\0')
            return cfg_bad(err, errlen, source, k->name, value, "empty");
        if (strlen(value) >= k->size)
            return cfg_bad(err, errlen, source, k->name, value, "longer than %zu bytes",
                       k->size - 1);
        memcpy(field, value, strlen(value) + 1);
        return 0;
    case CFG_LISTEN:
        if (k->empty_ok && value[0] == '\0') {
            field[0] = '\0';
            memset((char *)c + k->off2, 0, sizeof(int));
            return 0;
        }
        return set_listen(k->name, field, (int *)(void *)((char *)c + k->off2), source, value,
                          err, errlen);
    case CFG_EPOCH: {
        idm_unix_ms t = 0;
        bool set = true;
        if (value[0] == '\0' || idm_time_parse(value, &t) != 0)
            return cfg_bad(err, errlen, source, k->name, value,
                       "not Unix ms nor an ISO-8601 time (2024-01-01, 2024-01-01T00:00:00Z)");
        memcpy(field, &t, sizeof t);
        memcpy((char *)c + k->off2, &set, sizeof set);
        return 0;
    }
    }
    return cfg_fail(err, errlen, "%s: key '%s' of no kind", source, k->name);
}

/* ---- the interface ---- */

void idmd_config_defaults(idmd_config *c)
{
    memset(c, 0, sizeof *c);
    for (const cfg_key *k = cfg_keys; k < cfg_keys + NKEYS; k++) {
        if (k->kind == CFG_NUM)
            num_put(c, k, k->dflt);
        else if (k->def != NULL)
            set_value(c, k, k->def, "default", NULL, 0);
    }
}

/* Keep where key k's value came from (its last bytes if it is long). */
static void note_source(idmd_config *c, const cfg_key *k, const char *source)
{
    size_t n = strlen(source);
    char *dst = c->source[k - cfg_keys];
    if (n < IDMD_SOURCE_MAX) {
        memcpy(dst, source, n + 1);
    } else {
        size_t keep = IDMD_SOURCE_MAX - 4;
        memcpy(dst, "...", 3);
        memcpy(dst + 3, source + n - keep, keep + 1);
    }
}

int idmd_config_set(idmd_config *c, const char *key, const char *value, const char *source,
                    char *err, size_t errlen)
{
    if (source == NULL)
        source = "?";
    if (key == NULL || value == NULL)
        return cfg_fail(err, errlen, "%s: no key or no value", source);
    const cfg_key *k = key_named(key, strlen(key));
    if (k == NULL)
        return cfg_fail(err, errlen, "%s: unknown key '%.*s'", source, CFG_SHOW_MAX, key);
    if (set_value(c, k, value, source, err, errlen) != 0)
        return -1;
    note_source(c, k, source);
    return 0;
}

/* ---- the config file ---- */

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* Trim s in place, returning its first non-space byte. */
static char *cfg_trim(char *s)
{
    while (is_space(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_space(s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* One line, already without its newline. */
static int file_line(idmd_config *c, const char *path, unsigned lineno, char *line,
                     unsigned *seen_at, char *err, size_t errlen)
{
    char *s = cfg_trim(line);
    if (*s == '\0' || *s == '#')
        return 0;
    char *eq = strchr(s, '=');
    if (eq == NULL)
        return cfg_fail(err, errlen, "%s:%u: expected 'key = value', found no '='", path, lineno);
    *eq = '\0';
    char *key = cfg_trim(s);
    char *value = cfg_trim(eq + 1);
    if (*key == '\0')
        return cfg_fail(err, errlen, "%s:%u: no key before '='", path, lineno);
    const cfg_key *k = key_named(key, strlen(key));
    if (k == NULL)
        return cfg_fail(err, errlen, "%s:%u: unknown key '%.*s'", path, lineno, CFG_SHOW_MAX, key);
    if (seen_at[k - cfg_keys] != 0)
        return cfg_fail(err, errlen, "%s:%u: key '%s' given twice (first on line %u)", path,
                    lineno, k->name, seen_at[k - cfg_keys]);
    seen_at[k - cfg_keys] = lineno;
    if (*value == '"') {
        size_t n = strlen(value);
        if (n < 2 || value[n - 1] != '"')
            return cfg_fail(err, errlen, "%s:%u: %s: unterminated quote (or text after it)", path,
                        lineno, k->name);
        value[n - 1] = '\0';
        value++;
    }
    char source[IDMD_PATH_MAX + 32];
    snprintf(source, sizeof source, "%s:%u", path, lineno);
    return idmd_config_set(c, k->name, value, source, err, errlen);
}

static int load_file(idmd_config *c, const char *path, const char *named_by, char *err,
                     size_t errlen)
{
    const char *kind;
    if (path[0] == '\0')
        return cfg_fail(err, errlen, "%s: empty config file name", named_by);
    int fd = idm__open_regular(path, O_RDONLY, 0, &kind);
    if (fd < 0 && kind != NULL)
        return cfg_fail(err, errlen, "%s: config file %s is not a regular file (it is %s)",
                    named_by, path, kind);
    if (fd < 0)
        return cfg_fail(err, errlen, "%s: cannot open config file %s: %s", named_by, path,
                    strerror(errno));
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        int e = errno;
        close(fd);
        return cfg_fail(err, errlen, "%s: cannot read config file %s: %s", named_by, path,
                    strerror(e));
    }
    unsigned seen_at[NKEYS] = {0};
    char line[CFG_LINE_MAX + 1];
    size_t n = 0;
    unsigned lineno = 1;
    int rc = 0;
    for (;;) {
        int ch = getc(f);
        if (ch == EOF && ferror(f)) {
            rc = cfg_fail(err, errlen, "%s:%u: read error: %s", path, lineno, strerror(errno));
            break;
        }
        if (ch == EOF || ch == '\n') { /* a last line without its newline counts too */
            line[n] = '\0';
            if (ch == '\n' || n > 0)
                rc = file_line(c, path, lineno, line, seen_at, err, errlen);
            if (rc != 0 || ch == EOF)
                break;
            n = 0;
            lineno++;
            continue;
        }
        if (ch == '\0') {
            rc = cfg_fail(err, errlen, "%s:%u: NUL byte in the line", path, lineno);
            break;
        }
        if (n >= CFG_LINE_MAX) {
            rc = cfg_fail(err, errlen, "%s:%u: line longer than %d bytes", path, lineno,
                      CFG_LINE_MAX);
            break;
        }
        line[n++] = (char)ch;
    }
    fclose(f);
    return rc;
}

/* ---- flags and the environment ---- */

enum flag_kind { F_ERROR = -1, F_HELP, F_CHECK, F_CONFIG, F_KEY };

/*
 * Parse the flag at argv[*i] (advancing *i past a separate value). For
 * F_KEY, *key is the key; for F_KEY and F_CONFIG, *value its value.
 */
static enum flag_kind next_flag(int argc, char **argv, int *i, const cfg_key **key,
                                const char **value, char *err, size_t errlen)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
        return F_HELP;
    if (strcmp(arg, "--check-config") == 0)
        return F_CHECK;
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
        if (arg[0] == '-')
            cfg_fail(err, errlen, "unknown flag '%.*s' (see --help)", CFG_SHOW_MAX, arg);
        else
            cfg_fail(err, errlen, "unexpected argument '%.*s' (see --help)", CFG_SHOW_MAX, arg);
        return F_ERROR;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq != NULL ? (size_t)(eq - name) : strlen(name);
    enum flag_kind kind;
    if (nlen == 6 && memcmp(name, "config", 6) == 0) {
        kind = F_CONFIG;
    } else if ((nlen == 12 && memcmp(name, "check-config", 12) == 0) ||
               (nlen == 4 && memcmp(name, "help", 4) == 0)) {
        cfg_fail(err, errlen, "--%.*s takes no value", (int)nlen, name);
        return F_ERROR;
    } else {
        kind = F_KEY;
        *key = key_named(name, nlen);
        if (*key == NULL) {
            cfg_fail(err, errlen, "unknown flag '--%.*s' (see --help)",
                     (int)(nlen > CFG_SHOW_MAX ? CFG_SHOW_MAX : nlen), name);
            return F_ERROR;
        }
    }
    if (eq != NULL) {
        *value = eq + 1;
    } else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
        *value = argv[++*i];
    } else {
        cfg_fail(err, errlen, "--%.*s needs a value", (int)nlen, name);
        return F_ERROR;
    }
    return kind;
}

/* The value of NAME in envp, or NULL. */
static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e != NULL && *e != NULL; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* Every IDMINT_ variable but IDMINT_CONFIG, IDMINT_STATE_DIR (which the
 * tests' helpers set) and IDMINT_BOOT_ID_FILE (a boot id injected by tests)
 * must be a key's. */
static int apply_env(idmd_config *c, char **envp, char *err, size_t errlen)
{
    static const char prefix[] = "IDMINT_";
    bool seen[NKEYS] = {false};
    char name[64];
    for (char **e = envp; e != NULL && *e != NULL; e++) {
        const char *var = *e;
        const char *eq = strchr(var, '=');
        if (strncmp(var, prefix, sizeof prefix - 1) != 0 || eq == NULL)
            continue;
        size_t nlen = (size_t)(eq - var);
        if ((nlen == 13 && memcmp(var, "IDMINT_CONFIG", 13) == 0) ||
            (nlen == 16 && memcmp(var, "IDMINT_STATE_DIR", 16) == 0) ||
            (nlen == 19 && memcmp(var, "IDMINT_BOOT_ID_FILE", 19) == 0))
            continue;
        const cfg_key *k = NULL;
        for (size_t j = 0; j < NKEYS && k == NULL; j++) {
            env_name(&cfg_keys[j], name, sizeof name);
            if (strlen(name) == nlen && memcmp(name, var, nlen) == 0)
                k = &cfg_keys[j];
        }
        if (k == NULL)
            return cfg_fail(err, errlen, "%.*s: unknown environment variable (not an idmintd key)",
                        (int)(nlen > CFG_SHOW_MAX ? CFG_SHOW_MAX : nlen), var);
        if (seen[k - cfg_keys])
            return cfg_fail(err, errlen, "%s: given twice in the environment", name);
        seen[k - cfg_keys] = true;
        if (idmd_config_set(c, k->name, eq + 1, name, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* The first pass over the flags: their shape, each key at most once,
 * --config, --check-config and --help. 0 or -1. */
static int scan_flags(int argc, char **argv, const char **config, bool *check, bool *help,
                      char *err, size_t errlen)
{
    bool seen[NKEYS] = {false};
    for (int i = 1; i < argc && !*help; i++) {
        const cfg_key *key = NULL;
        const char *value = NULL;
        switch (next_flag(argc, argv, &i, &key, &value, err, errlen)) {
        case F_ERROR:
            return -1;
        case F_HELP:
            *help = true; /* help needs nothing else to be right */
            break;
        case F_CHECK:
            *check = true;
            break;
        case F_CONFIG:
            if (*config != NULL)
                return cfg_fail(err, errlen, "--config given twice");
            *config = value;
            break;
        case F_KEY:
            if (seen[key - cfg_keys])
                return cfg_fail(err, errlen, "--%s given twice", key->name);
            seen[key - cfg_keys] = true;
            break;
        }
    }
    return 0;
}

int idmd_config_build(idmd_config *c, int argc, char **argv, char **envp, bool *check_only,
                      bool *help, char *err, size_t errlen)
{
    bool check = false, want_help = false;
    const char *config = NULL;
    idmd_config_defaults(c);
    if (check_only != NULL)
        *check_only = false;
    if (help != NULL)
        *help = false;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (scan_flags(argc, argv, &config, &check, &want_help, err, errlen) != 0)
        return -1;
    if (check_only != NULL)
        *check_only = check;
    if (want_help) {
        if (help != NULL)
            *help = true;
        return 0;
    }

    if (config != NULL) {
        if (load_file(c, config, "--config", err, errlen) != 0)
            return -1;
    } else {
        const char *ec = env_get(envp, "IDMINT_CONFIG");
        if (ec != NULL && load_file(c, ec, "IDMINT_CONFIG", err, errlen) != 0)
            return -1;
    }
    if (apply_env(c, envp, err, errlen) != 0)
        return -1;
    for (int i = 1; i < argc; i++) {
        const cfg_key *key = NULL;
        const char *value = NULL;
        char source[48];
        if (next_flag(argc, argv, &i, &key, &value, err, errlen) != F_KEY)
            continue; /* scan_flags saw them all well-formed */
        snprintf(source, sizeof source, "--%s", key->name);
        if (idmd_config_set(c, key->name, value, source, err, errlen) != 0)
            return -1;
    }

    if (!is_preset(c->layout) && !c->epoch_set)
        return cfg_fail(err, errlen,
                    "layout '%.*s' is a text form and needs epoch (--epoch, IDMINT_EPOCH or "
                    "epoch = in the config file)",
                    CFG_SHOW_MAX, c->layout);
    return 0;
}

/* ---- printing ---- */

/* key = value, quoting a value the file syntax would otherwise change. */
static void cfg_out_str(outbuf *o, const char *key, const char *text)
{
    /* A URL's password is never printed (as the token never is). */
    char value[2 * IDMD_STORE_TEXT_MAX];
    idmd_mask_urls(text, value, sizeof value);
    size_t n = strlen(value);
    bool quote = n == 0 || is_space(value[0]) || is_space(value[n - 1]) || value[0] == '"';
    cfg_out(o, quote ? "%s = \"%s\"\n" : "%s = %s\n", key, value);
}

static void print_value(const idmd_config *c, const cfg_key *k, outbuf *o)
{
    const char *field = (const char *)c + k->off;
    int port;
    int64_t epoch;
    bool set;
    switch (k->kind) {
    case CFG_NUM:
        cfg_out(o, "%s = %" PRIu64 "\n", k->name, num_get(c, k));
        break;
    case CFG_STR:
    case CFG_CHOICE:
        cfg_out_str(o, k->name, field);
        break;
    case CFG_LISTEN:
        memcpy(&port, (const char *)c + k->off2, sizeof port);
        if (field[0] == '\0')
            cfg_out_str(o, k->name, "");
        else
            cfg_out(o, strchr(field, ':') != NULL ? "%s = [%s]:%d\n" : "%s = %s:%d\n", k->name,
                    field, port);
        break;
    case CFG_EPOCH:
        memcpy(&epoch, field, sizeof epoch);
        memcpy(&set, (const char *)c + k->off2, sizeof set);
        if (set)
            cfg_out(o, "%s = %" PRId64 "\n", k->name, epoch);
        else
            cfg_out_str(o, k->name, "");
        break;
    }
}

void idmd_config_print(const idmd_config *c, char *buf, size_t len)
{
    outbuf o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    for (const cfg_key *k = cfg_keys; k < cfg_keys + NKEYS; k++)
        print_value(c, k, &o);
    /* Several stores: which is k of n (the order decides which ids each
     * hands out), as comment lines (the output stays a config file). */
    char(*urls)[IDMD_URL_MAX] = malloc(IDMD_STORES_MAX * sizeof *urls);
    size_t nst = urls != NULL ? idmd_config_stores(c, urls) : 0;
    for (size_t i = 0; nst > 1 && i < nst; i++) {
        char shown[2 * IDMD_URL_MAX];
        idm__url_mask(urls[i], shown, sizeof shown);
        cfg_out(&o, "# store %zu of %zu (ids = %zu mod %zu): %s\n", i, nst, i, nst, shown);
    }
    free(urls);
    if (c->ordinal_field[0] != '\0')
        cfg_out(&o, "# node: %s=%llu, the ordinal from %s%s\n", c->ordinal_field,
                (unsigned long long)c->ordinal, c->ordinal_from,
                c->lease_off ? " (no lease: the platform's ordinal stands in for it)" : "");
    /* What idmd_config_check changed, as comment lines (the output stays a
     * config file). */
    for (const char *p = c->note; *p != '\0';) {
        size_t n = strcspn(p, "\n");
        cfg_out(&o, "# %.*s\n", (int)n, p);
        p += n;
        if (*p == '\n')
            p++;
    }
}

/* ---- several stores in one value ---- */

size_t idmd_config_stores(const idmd_config *c, char (*urls)[IDMD_URL_MAX])
{
    store_scan sc = {.n = 0};
    if (c->store[0] == '\0') {
        snprintf(urls[0], IDMD_URL_MAX, "sqlite://%s/segments.db", c->data_dir);
        return 1;
    }
    each_word(c->store, scan_word, &sc);
    if (sc.n > IDMD_STORES_MAX)
        sc.n = IDMD_STORES_MAX; /* refused when set: not reached */
    for (size_t i = 0; i < sc.n; i++) {
        size_t len = sc.lens[i] < IDMD_URL_MAX ? sc.lens[i] : IDMD_URL_MAX - 1;
        memcpy(urls[i], sc.words[i], len);
        urls[i][len] = '\0';
    }
    return sc.n;
}

void idmd_config_lease_url(const idmd_config *c, char url[IDMD_URL_MAX])
{
    if (c->lease[0] != '\0')
        snprintf(url, IDMD_URL_MAX, "%s", c->lease);
    else
        snprintf(url, IDMD_URL_MAX, "file://%s/leases", c->data_dir);
}

void idmd_mask_urls(const char *text, char *out, size_t cap)
{
    size_t used = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (const char *p = text; *p != '\0' && used + 1 < cap;) {
        size_t sp = strspn(p, " \t\n\r\f\v"), n;
        if (sp > 0) {
            n = sp < cap - 1 - used ? sp : cap - 1 - used;
            memcpy(out + used, p, n);
            used += n;
            p += sp;
            continue;
        }
        n = strcspn(p, " \t\n\r\f\v");
        char *word = malloc(n + 1);
        if (word == NULL) { /* shown as nothing rather than unmasked */
            p += n;
            continue;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        idm__url_mask(word, out + used, cap - used);
        used += strlen(out + used);
        free(word);
        p += n;
    }
    out[used] = '\0';
}

/* ---- --help ---- */

/* Columns of the usage text: "  --flag ARG", the variable, then the meaning. */
enum { USAGE_FLAG = 24, USAGE_ENV = 19, USAGE_TEXT = 2 + USAGE_FLAG + USAGE_ENV };

/* One line of the usage text: the meaning's '\n' go on at its column. */
static void usage_line(outbuf *o, const char *flag, const char *env, const char *text)
{
    size_t fl = strlen(flag), el = strlen(env);
    cfg_out(o, "  %s%*s%s%*s", flag, fl < USAGE_FLAG ? (int)(USAGE_FLAG - fl) : 2, "", env,
            el < USAGE_ENV ? (int)(USAGE_ENV - el) : 2, "");
    for (const char *p = text; *p != '\0';) {
        size_t n = strcspn(p, "\n");
        cfg_out(o, "%.*s\n", (int)n, p);
        p += n;
        if (*p == '\n' && *++p != '\0')
            cfg_out(o, "%*s", USAGE_TEXT, "");
    }
}

/* Key k's line: its flag, its variable, its meaning, bounds and default. */
static void usage_key(outbuf *o, const cfg_key *k)
{
    char flag[64], env[64], text[256], list[128];
    snprintf(flag, sizeof flag, "--%s %s", k->name, k->arg);
    env_name(k, env, sizeof env);
    if (k->kind == CFG_NUM) {
        snprintf(text, sizeof text, "%s, %" PRIu64 "..%" PRIu64 "%s (default %" PRIu64 "%s)",
                 k->help, k->lo, k->hi, strcmp(k->arg, "MS") == 0 ? " ms" : "", k->dflt,
                 k->def_help != NULL ? k->def_help : "");
    } else if (k->kind == CFG_CHOICE) {
        choice_list(k, list, sizeof list);
        snprintf(text, sizeof text, "%s: %s (default %s)", k->help, list, k->def);
    } else {
        snprintf(text, sizeof text, "%s (default %s)", k->help,
                 k->def_help != NULL ? k->def_help : k->def != NULL ? k->def : "none");
    }
    usage_line(o, flag, env, text);
}

static char usage_text[8192];
static pthread_once_t usage_once = PTHREAD_ONCE_INIT;

static void usage_build(void)
{
    outbuf o = {usage_text, sizeof usage_text, 0};
    cfg_out(&o, "usage: idmintd [--config FILE] [--check-config] [--KEY VALUE]...\n"
                "\n"
                "Every key can be set in the config file (key = value), by its environment\n"
                "variable or by its flag (--key VALUE or --key=VALUE); flags beat the\n"
                "environment, which beats the file, which beats the defaults.\n"
                "\n");
    usage_line(&o, "--config FILE", "IDMINT_CONFIG",
               "config file of key = value lines (default none)");
    usage_line(&o, "--check-config", "", "check the configuration, print it and exit");
    usage_line(&o, "--help, -h", "", "print this text and exit");
    cfg_out(&o, "\n");
    for (const cfg_key *k = cfg_keys; k < cfg_keys + NKEYS; k++)
        usage_key(&o, k);
}

const char *idmd_config_usage(void)
{
    pthread_once(&usage_once, usage_build);
    return usage_text;
}

/* ---- the checks that need more than one value, or a file ---- */

/* Clear a buffer that held a secret (a plain memset may be optimised away). */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n-- > 0)
        *v++ = 0;
}

/* token-file: one token of 16..IDMD_TOKEN_MAX printable ASCII bytes without
 * spaces, then line ends only (CR, LF), as main.c reads it. The messages
 * never quote the token. */
static int check_token_file(const idmd_config *c, char *err, size_t errlen)
{
    /* room for the longest token, its line ends and a byte that says more
     * (as main.c reads it: a file that fills this is too long) */
    enum { MIN_TOKEN = 16, CAP = IDMD_TOKEN_MAX + 64 };
    const cfg_key *k = KEY(token_file);
    char why[256];
    char buf[CAP];
    int rc = 0;
    const char *kind;
    ssize_t got = idm__read_regular(c->token_file, buf, sizeof buf, &kind, why, sizeof why);
    size_t n = got > 0 ? (size_t)got : 0;
    bool more = n == sizeof buf;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (got < 0) {
        rc = BAD(k, c->token_file, "%s", why);
    } else if (more || n > IDMD_TOKEN_MAX) {
        rc = BAD(k, c->token_file, "the token is longer than %d bytes", IDMD_TOKEN_MAX);
    } else if (n == 0) {
        rc = BAD(k, c->token_file, "empty: it holds no token");
    } else if (n < MIN_TOKEN) {
        rc = BAD(k, c->token_file, "the token is %zu bytes; at least %d", n, MIN_TOKEN);
    } else {
        for (size_t i = 0; i < n; i++) {
            if (buf[i] <= ' ' || buf[i] > '~') {
                rc = BAD(k, c->token_file,
                         "byte %zu of the token is not printable ASCII (a token is one line "
                         "without spaces)",
                         i + 1);
                break;
            }
        }
    }
    wipe(buf, sizeof buf);
    return rc;
}

/* opaque-key-file: loaded as idmintd loads it at start. */
static int check_opaque_key_file(const idmd_config *c, char *err, size_t errlen)
{
    idm_opaque_key key;
    char prefix[256];
    if (idm_opaque_key_load(c->opaque_key_file, &key) == 0) {
        wipe(&key, sizeof key);
        return 0;
    }
    /* The detail names the file ("key file 'PATH': why"), as the message
     * does already: it is said once. */
    const char *why = idm_error_detail();
    snprintf(prefix, sizeof prefix, "key file '%.160s': ", c->opaque_key_file);
    if (strncmp(why, prefix, strlen(prefix)) == 0)
        why += strlen(prefix);
    return BAD(KEY(opaque_key_file), c->opaque_key_file, "%s", why);
}

/* clock offset-file:PATH: a signed ms offset, read as idmintd reads it (its
 * first 63 bytes). *offset_ms: the offset. */
static int check_offset_file(const idmd_config *c, int64_t *offset_ms, char *err,
                             size_t errlen)
{
    const char *path = c->clock + strlen("offset-file:");
    char why[256];
    char buf[64];
    const char *kind;
    ssize_t n = idm__read_regular(path, buf, sizeof buf - 1, &kind, why, sizeof why);
    if (n < 0)
        return BAD(KEY(clock), c->clock, "the offset file: %s", why);
    buf[n] = '\0';
    char *end = buf;
    errno = 0;
    long long ms = strtoll(buf, &end, 10);
    while (*end == '\n' || *end == ' ')
        end++;
    if (n == 0 || errno != 0 || end == buf || *end != '\0' || ms < -86400000000LL ||
        ms > 86400000000LL)
        return BAD(KEY(clock), c->clock,
                   "the offset file must hold a signed ms offset within a thousand days");
    *offset_ms = ms;
    return 0;
}

/* The lease URL or one store URL (key given; index/count: which store of
 * how many, 0/1 for the lease), or the one made from data-dir when the key
 * is not set (then data-dir is blamed, what says which URL): a scheme of
 * this build (the libraries say which); file:// and sqlite:// take an
 * absolute path (as the backends do at start). */
static int check_one_url(const idmd_config *c, const cfg_key *given, bool is_lease,
                         const char *url, size_t index, size_t count, char *err, size_t errlen)
{
    const char *value = (const char *)c + given->off, *what = "";
    const cfg_key *k = given;
    char which[160] = "";
    if (value[0] == '\0') {
        k = KEY(data_dir);
        value = c->data_dir;
        what = is_lease ? "the lease URL made from it: " : "the store URL made from it: ";
    } else if (count > 1) {
        char shown[64];
        idm__url_mask(url, shown, sizeof shown);
        snprintf(which, sizeof which, "store %zu of %zu (%s%s): ", index + 1, count, shown,
                 strlen(url) >= sizeof shown - 1 ? "..." : "");
        what = which;
    }
    if ((is_lease ? idm_lease_url_check(url) : idm_store_url_check(url)) != 0) {
        const char *d = idm_error_detail(), *colon = strstr(d, ": ");
        return BAD(k, value, "%s%s", what, colon != NULL ? colon + 2 : d);
    }
    bool file = strncmp(url, "file://", 7) == 0, sqlite = strncmp(url, "sqlite://", 9) == 0;
    const char *path = strstr(url, "://") + 3;
    if (!file && !sqlite)
        return 0;
    if (path[0] != '/')
        return BAD(k, value, "%sneeds an absolute path, as %s:///%s (three slashes)", what,
                   file ? "file" : "sqlite", file ? "dir" : "path/file.db");
    if (sqlite) {
        if (path[strlen(path) - 1] == '/')
            return BAD(k, value, "%snames a directory, not a file", what);
        for (const char *p = path; *p != '\0'; p++) {
            unsigned char u = (unsigned char)*p;
            if (u == '?' || u == '#' || u == '%' || u < 0x20 || u == 0x7f)
                return BAD(k, value,
                           "%shas a '%c' (sqlite:// paths take no options, escapes or control "
                           "characters)",
                           what, u >= 0x20 && u != 0x7f ? (char)u : '?');
        }
    }
    return 0;
}

static int check_url(const idmd_config *c, const cfg_key *given, bool is_lease, char *err,
                     size_t errlen)
{
    char made[IDMD_URL_MAX];
    if (is_lease) {
        idmd_config_lease_url(c, made);
        return check_one_url(c, given, true, made, 0, 1, err, errlen);
    }
    /* 16 URLs of 1 KiB: on the heap, not the stack. */
    char(*urls)[IDMD_URL_MAX] = malloc(IDMD_STORES_MAX * sizeof *urls);
    int rc = 0;
    if (urls == NULL)
        return cfg_fail(err, errlen, "store: out of memory checking the URLs");
    size_t n = idmd_config_stores(c, urls);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = check_one_url(c, given, false, urls[i], i, n, err, errlen);
    free(urls);
    return rc;
}

/* data-dir made absolute (the URLs made from it must be), and a directory if
 * it exists. */
static int check_data_dir(idmd_config *c, char *err, size_t errlen)
{
    const cfg_key *k = KEY(data_dir);
    if (c->data_dir[0] != '/') {
        char cwd[IDMD_PATH_MAX];
        const char *rel = c->data_dir;
        if (getcwd(cwd, sizeof cwd) == NULL)
            return BAD(k, c->data_dir,
                       "a relative directory, and the current one is unknown: %s",
                       strerror(errno));
        while (rel[0] == '.' && rel[1] == '/')
            for (rel += 2; *rel == '/'; rel++)
                ;
        char abs[2 * IDMD_PATH_MAX + 2];
        if (strcmp(rel, ".") == 0 || rel[0] == '\0')
            snprintf(abs, sizeof abs, "%s", cwd);
        else
            snprintf(abs, sizeof abs, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", rel);
        if (strlen(abs) >= sizeof c->data_dir)
            return BAD(k, c->data_dir, "made absolute, %.60s..., it is longer than %zu bytes",
                       abs, sizeof c->data_dir - 1);
        memcpy(c->data_dir, abs, strlen(abs) + 1);
    }
    struct stat st;
    if (stat(c->data_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return BAD(k, c->data_dir, "exists and is not a directory");
    return 0;
}

/* The node fields of l, "a, b", into out. */
static void node_names(const idm_layout *l, char *out, size_t len)
{
    outbuf o = {out, len, 0};
    out[0] = '\0';
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) == 0 && f.kind == IDM_FIELD_NODE)
            cfg_out(&o, "%s%s", o.used > 0 ? ", " : "", f.name);
    }
}

/*
 * lease-field: the named node field, or left to its default, as the CLI
 * picks it: worker, shard or machine, whichever the layout has first, else
 * the layout's only node field. Resolved into c->lease_field; *index its
 * field index.
 */
static int check_lease_field(idmd_config *c, const idm_layout *l, int *index, char *err,
                             size_t errlen)
{
    const cfg_key *k = KEY(lease_field);
    size_t count = idm_layout_field_count(l);
    idm_field_info f;
    char nodes[256];
    node_names(l, nodes, sizeof nodes);
    if (c->source[k - cfg_keys][0] != '\0') {
        for (size_t i = 0; i < count; i++) {
            if (idm_layout_field(l, i, &f) == 0 && strcmp(f.name, c->lease_field) == 0) {
                if (f.kind != IDM_FIELD_NODE)
                    return BAD(k, c->lease_field,
                               "it is layout %s's %s field, not a node field (node fields: %s)",
                               c->layout, f.kind == IDM_FIELD_TIME ? "time" : "sequence",
                               nodes[0] != '\0' ? nodes : "none");
                *index = (int)i;
                return 0;
            }
        }
        return BAD(k, c->lease_field, "layout %s has no such field (node fields: %s)",
                   c->layout, nodes[0] != '\0' ? nodes : "none");
    }
    static const char *const names[] = {"worker", "shard", "machine"};
    size_t rank = sizeof names / sizeof names[0]; /* of the best name found */
    int pick = -1, only = -1, nnodes = 0;
    for (size_t i = 0; i < count; i++) {
        if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        only = (int)i;
        nnodes++;
        for (size_t n = 0; n < rank; n++) {
            if (strcmp(f.name, names[n]) == 0) {
                rank = n;
                pick = (int)i;
            }
        }
    }
    if (pick >= 0 || nnodes == 1) {
        *index = pick >= 0 ? pick : only;
        idm_layout_field(l, (size_t)*index, &f);
        snprintf(c->lease_field, sizeof c->lease_field, "%s", f.name);
        return 0;
    }
    if (nnodes == 0)
        return BAD(KEY(layout), c->layout, "no node field for the lease to fill");
    return BAD(k, c->lease_field,
               "layout %s has no worker, shard or machine field: name the node field the lease "
               "fills, one of %s",
               c->layout, nodes);
}

/*
 * node: each name=value against the layout, the ordinal resolved (into
 * node_values, ordinal_field, ordinal, ordinal_from); none may be the
 * lease's field, but the ordinal's: with the lease field left to its
 * default and no lease URL given, the ordinal fills it and there is no
 * lease (lease_off).
 */
static int check_node(idmd_config *c, const idm_layout *l, int lease_index, char *err,
                      size_t errlen)
{
    char buf[sizeof c->node];
    char *save = NULL;
    uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
    uint32_t set = 0;
    int ordinal_index = -1;
    outbuf vals = {c->node_values, sizeof c->node_values, 0};
    c->node_values[0] = '\0';
    c->ordinal_field[0] = '\0';
    c->ordinal_from[0] = '\0';
    c->ordinal = 0;
    c->lease_off = false;
    memcpy(buf, c->node, sizeof buf);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char one[sizeof c->node + 32];
        char *eq = strchr(tok, '=');
        uint32_t before = set;
        snprintf(one, sizeof one, "%s", tok);
        if (eq != NULL && idm__ordinal_is(eq + 1)) {
            char why[300];
            uint64_t v;
            if (idm__ordinal_resolve(eq + 1, &v, c->ordinal_from, sizeof c->ordinal_from, why,
                                     sizeof why) != 0)
                return BAD(KEY(node), c->node, "%.*s: %s", (int)(eq - tok), tok, why);
            snprintf(one, sizeof one, "%.*s=%llu", (int)(eq - tok), tok, (unsigned long long)v);
            snprintf(c->ordinal_field, sizeof c->ordinal_field, "%.*s", (int)(eq - tok), tok);
            c->ordinal = v;
        }
        if (idm_layout_parse_node(l, one, node, &set) != 0) {
            char nodes[256];
            node_names(l, nodes, sizeof nodes);
            if (c->ordinal_field[0] != '\0' && eq != NULL &&
                strncmp(tok, c->ordinal_field, (size_t)(eq - tok)) == 0 &&
                c->ordinal_field[eq - tok] == '\0')
                return BAD(KEY(node), c->node, "%s, the ordinal from %s: %s (layout %s)", one,
                           c->ordinal_from, idm_error_detail(), c->layout);
            return BAD(KEY(node), c->node, "%s (layout %s; node fields: %s)", idm_error_detail(),
                       c->layout, nodes[0] != '\0' ? nodes : "none");
        }
        if (eq != NULL && idm__ordinal_is(eq + 1))
            for (int b = 0; b < IDM_LAYOUT_MAX_FIELDS; b++)
                if ((set & ~before) & (UINT32_C(1) << b))
                    ordinal_index = b;
        cfg_out(&vals, "%s%s", vals.used > 0 ? "," : "", one);
    }
    if (!(set & (UINT32_C(1) << lease_index)))
        return 0;
    if (lease_index != ordinal_index)
        return BAD(KEY(node), c->node,
                   "gives %s, the node field the lease fills (lease-field %s, from %s): leave it "
                   "out, or name another lease-field",
                   c->lease_field, c->lease_field, src_of(c, KEY(lease_field)));
    /* The ordinal fills the field the lease would: no lease, unless one is
     * asked for by name (then the two sources contradict each other). */
    if (c->source[KEY(lease_field) - cfg_keys][0] != '\0')
        return BAD(KEY(node), c->node,
                   "gives %s from the ordinal, and lease-field (from %s) names it for the lease: "
                   "one source for a field (leave lease-field out for no lease, or name another)",
                   c->lease_field, src_of(c, KEY(lease_field)));
    if (c->lease[0] != '\0')
        return BAD(KEY(node), c->node,
                   "gives %s from the ordinal, the field the lease would fill, and lease (from "
                   "%s) names a coordinator: with an ordinal there is no lease (leave lease out, "
                   "or name another lease-field)",
                   c->lease_field, src_of(c, KEY(lease)));
    c->lease_off = true;
    return 0;
}

/* The epoch and the time field against the clock idmintd will use: the
 * epoch not in the future, the time field not run out. */
static int check_time(const idmd_config *c, const idm_layout *l, char *err, size_t errlen)
{
    int64_t offset_ms = 0;
    char e[32];
    if (strcmp(c->clock, "system") != 0 && check_offset_file(c, &offset_ms, err, errlen) != 0)
        return -1;
    const idm_clock *sys = idm_clock_system();
    int64_t now_ms = sys->wall_ns(sys->ctx) / 1000000 + offset_ms;
    idm_unix_ms epoch = idm_layout_epoch(l);
    idm_unix_ms end = idm_layout_time_end(l);
    const cfg_key *k = c->epoch_set ? KEY(epoch) : KEY(layout);
    snprintf(e, sizeof e, "%" PRId64, c->epoch);
    const char *value = c->epoch_set ? e : c->layout;
    if (epoch > now_ms)
        return BAD(k, value, "the epoch %" PRId64 " is in the future (the clock reads %" PRId64 ")",
                   (int64_t)epoch, now_ms);
    if (now_ms >= end)
        return BAD(k, value, "the time field ran out at %" PRId64 " (the clock reads %" PRId64 ")",
                   (int64_t)end, now_ms);
    return 0;
}

/*
 * count-max against what one request can always get from the layout,
 * within the generator's default wait bound (5 ms + one tick; idmintd sets
 * no other). A batch is all or nothing: n ids that would run more than the
 * bound ahead of the clock are refused however long the caller retries. At
 * worst the batch starts on the last sequence value of the current tick, at
 * the tick's very start, so it may fill k = floor(bound / tick) whole ticks
 * after it: k * 2^seq_bits ids always fit (one more would, too, but a
 * request racing another may find less of the current tick left). A default
 * above that is lowered (said in note), a value set is refused.
 */
static int check_count_max(idmd_config *c, const idm_layout *l, char *err, size_t errlen)
{
    const cfg_key *k = KEY(count_max);
    int64_t tick = idm_layout_tick_ms(l);
    unsigned sb = idm_layout_seq_bits(l);
    uint64_t most = sb >= 32 ? UINT64_MAX : (uint64_t)((5 + tick) / tick) << sb;
    char v[32];
    if (most > k->hi)
        most = k->hi;
    c->count_max_layout = (uint32_t)most;
    if (c->count_max <= most)
        return 0;
    if (c->source[k - cfg_keys][0] != '\0') {
        snprintf(v, sizeof v, "%" PRIu32, c->count_max);
        return BAD(k, v,
                   "layout %s can always mint at most %" PRIu64 " ids in one request (%" PRIu64
                   " a %" PRId64 " ms tick, within the generator's %" PRId64
                   " ms wait): at most %" PRIu64,
                   c->layout, most, (uint64_t)1 << sb, tick, 5 + tick, most);
    }
    snprintf(c->note, sizeof c->note,
             "count-max: the default %" PRIu32 " lowered to %" PRIu64
             ", the most ids layout %s can always mint in one request",
             c->count_max, most, c->layout);
    c->count_max = (uint32_t)most;
    return 0;
}

/* admin-listen must not take listen's address (a wildcard host overlaps
 * every host). Port 0 picks a free port each time. */
static int check_admin_listen(const idmd_config *c, char *err, size_t errlen)
{
    if (c->admin_host[0] == '\0' || c->admin_port == 0 || c->admin_port != c->listen_port)
        return 0;
    const char *a = strcmp(c->admin_host, "localhost") == 0 ? "127.0.0.1" : c->admin_host;
    const char *m = strcmp(c->listen_host, "localhost") == 0 ? "127.0.0.1" : c->listen_host;
    bool v6a = strchr(a, ':') != NULL, v6m = strchr(m, ':') != NULL;
    bool wild = strcmp(a, "0.0.0.0") == 0 || strcmp(m, "0.0.0.0") == 0 || strcmp(a, "::") == 0 ||
                strcmp(m, "::") == 0;
    if (strcmp(a, m) != 0 &&
        !(wild && (v6a == v6m || strcmp(a, "::") == 0 || strcmp(m, "::") == 0)))
        return 0;
    char shown[300];
    snprintf(shown, sizeof shown, v6a ? "[%s]:%d" : "%s:%d", c->admin_host, c->admin_port);
    return BAD(KEY(admin_host), shown,
               "the same address as listen (from %s); give it a port of its own",
               src_of(c, KEY(listen_host)));
}

int idmd_config_check(idmd_config *c, char *err, size_t errlen)
{
    idm_layout *l = NULL;
    char e[32];
    int lease_index = -1;
    int rc = 0;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    snprintf(e, sizeof e, "%" PRId64, c->epoch);
    if (idm_layout_from_spec(&l, c->layout, c->epoch_set ? e : NULL) != 0) {
        if (c->epoch_set)
            return BAD(KEY(layout), c->layout, "with epoch %s (from %s): %s", e,
                       src_of(c, KEY(epoch)), idm_error_detail());
        return BAD(KEY(layout), c->layout, "%s", idm_error_detail());
    }
    if (check_time(c, l, err, errlen) != 0 ||
        check_lease_field(c, l, &lease_index, err, errlen) != 0 ||
        check_node(c, l, lease_index, err, errlen) != 0 ||
        check_count_max(c, l, err, errlen) != 0 || check_data_dir(c, err, errlen) != 0 ||
        check_url(c, KEY(lease), true, err, errlen) != 0 ||
        check_url(c, KEY(store), false, err, errlen) != 0 ||
        (c->token_file[0] != '\0' && check_token_file(c, err, errlen) != 0) ||
        (c->opaque_key_file[0] != '\0' && check_opaque_key_file(c, err, errlen) != 0) ||
        check_admin_listen(c, err, errlen) != 0)
        rc = -1;
    /* Another worker id comes from the lease: none without one. */
    else if (strcmp(c->policy, "change-worker") == 0 && c->lease_off)
        rc = BAD(KEY(policy), c->policy, "needs a leased worker id, and node %s=ordinal leaves "
                                         "none to lease",
                 c->ordinal_field);
    idm_layout_free(l);
    return rc;
}
