/* SPDX-License-Identifier: MIT */
/*
 * idmintd's configuration (see config.h): defaults < config file <
 * environment < flags. Every value is checked here, strictly, when it is
 * set; what needs more than one key (a text layout needs an epoch) is checked
 * once all sources are in. Nothing here prints or keeps global state: errors
 * are one line in the caller's buffer, naming the source, the key and the
 * value.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <idmint/idmint.h>
#include <idmint/segment.h>

/* The usage text and the documentation say so. */
_Static_assert(IDM_STORE_TIMEOUT_MS == 5000, "store-timeout's default is documented as 5000");

/* Longest config file line, without its newline. */
#define CFG_LINE_MAX 4096
/* How much of a bad value an error message quotes. */
#define CFG_SHOW_MAX 128

enum cfg_key {
    K_LISTEN,
    K_ADMIN_LISTEN,
    K_DATA_DIR,
    K_LEASE,
    K_LEASE_TTL,
    K_STORE,
    K_LAYOUT,
    K_EPOCH,
    K_POLICY,
    K_EXHAUST,
    K_NODE,
    K_LEASE_FIELD,
    K_COUNT_MAX,
    K_TOKEN_FILE,
    K_IDLE_TIMEOUT,
    K_HEAD_TIMEOUT,
    K_MAX_REQUEST,
    K_THREADS,
    K_MAX_CONNECTIONS,
    K_MAX_CONNECTIONS_PER_IP,
    K_CLOCK,
    K_SEGMENT_WAIT,
    K_STORE_TIMEOUT,
    K_OPAQUE_KEY_FILE,
    K_COUNT
};
_Static_assert(K_COUNT <= IDMD_KEYS_MAX, "IDMD_KEYS_MAX is too small for the keys");

/* Key names and their environment variables, in print order. */
static const char *const cfg_names[K_COUNT] = {
    "listen", "admin-listen", "data-dir", "lease", "lease-ttl", "store", "layout",
    "epoch", "policy", "exhaust", "node", "lease-field", "count-max", "token-file",
    "idle-timeout", "head-timeout", "max-request", "threads", "max-connections",
    "max-connections-per-ip", "clock", "segment-wait", "store-timeout", "opaque-key-file",
};
static const char *const cfg_envs[K_COUNT] = {
    "IDMINT_LISTEN", "IDMINT_ADMIN_LISTEN", "IDMINT_DATA_DIR", "IDMINT_LEASE",
    "IDMINT_LEASE_TTL", "IDMINT_STORE", "IDMINT_LAYOUT", "IDMINT_EPOCH",
    "IDMINT_POLICY", "IDMINT_EXHAUST", "IDMINT_NODE", "IDMINT_LEASE_FIELD",
    "IDMINT_COUNT_MAX", "IDMINT_TOKEN_FILE", "IDMINT_IDLE_TIMEOUT",
    "IDMINT_HEAD_TIMEOUT", "IDMINT_MAX_REQUEST", "IDMINT_THREADS",
    "IDMINT_MAX_CONNECTIONS", "IDMINT_MAX_CONNECTIONS_PER_IP", "IDMINT_CLOCK",
    "IDMINT_SEGMENT_WAIT", "IDMINT_STORE_TIMEOUT", "IDMINT_OPAQUE_KEY_FILE",
};

const char idmd_usage[] =
    "usage: idmintd [--config FILE] [--check-config] [--KEY VALUE]...\n"
    "\n"
    "Every key can be set in the config file (key = value), by its environment\n"
    "variable or by its flag (--key VALUE or --key=VALUE); flags beat the\n"
    "environment, which beats the file, which beats the defaults.\n"
    "\n"
    "  --config FILE           IDMINT_CONFIG      config file of key = value lines (default none)\n"
    "  --check-config                             check the configuration, print it and exit\n"
    "  --help, -h                                 print this text and exit\n"
    "\n"
    "  --listen HOST:PORT      IDMINT_LISTEN      where to listen: IPv4, localhost or [IPv6] (default 127.0.0.1:7070)\n"
    "  --admin-listen HOST:PORT  IDMINT_ADMIN_LISTEN  a listener of its own for /healthz, /metrics, /ping (default none)\n"
    "  --data-dir DIR          IDMINT_DATA_DIR    where state lives (default ./var)\n"
    "  --lease URL             IDMINT_LEASE       lease backend, file:// or etcd:// (default file://DATA-DIR/leases)\n"
    "  --lease-ttl MS          IDMINT_LEASE_TTL   lease time to live, 1000..3600000 ms (default 10000)\n"
    "  --store URL             IDMINT_STORE       segment store (default sqlite://DATA-DIR/segments.db)\n"
    "  --layout LAYOUT         IDMINT_LAYOUT      preset name or text form time:41@1ms,...,seq:12 (default twitter)\n"
    "  --epoch TIME            IDMINT_EPOCH       Unix ms or ISO-8601; needed by a text layout (default the preset's)\n"
    "  --policy POLICY         IDMINT_POLICY      clock step back: logical, refuse or wait (default logical)\n"
    "  --exhaust MODE          IDMINT_EXHAUST     sequence exhausted: wait or borrow (default wait)\n"
    "  --node NAME=N,...       IDMINT_NODE        extra node fields, e.g. datacenter=1 (default none)\n"
    "  --lease-field NAME      IDMINT_LEASE_FIELD the node field the lease fills (default worker, shard or machine,\n"
    "                                             whichever the layout has, else its only node field)\n"
    "  --count-max N           IDMINT_COUNT_MAX   most ids one request may ask for, 1..1000000 (default 10000, or\n"
    "                                             less: what the layout can always mint in one request)\n"
    "  --token-file FILE       IDMINT_TOKEN_FILE  file holding the bearer token (default none: no authentication)\n"
    "  --idle-timeout MS       IDMINT_IDLE_TIMEOUT  idle connection timeout, 100..3600000 ms (default 10000)\n"
    "  --head-timeout MS       IDMINT_HEAD_TIMEOUT  time to send a whole request, 100..3600000 ms (default 5000)\n"
    "  --max-request BYTES     IDMINT_MAX_REQUEST request line + headers, 1024..1048576 (default 8192)\n"
    "  --threads N             IDMINT_THREADS     worker threads, 1..64 (default 2)\n"
    "  --max-connections N     IDMINT_MAX_CONNECTIONS  open connections, 1..100000 (default 1024)\n"
    "  --max-connections-per-ip N  IDMINT_MAX_CONNECTIONS_PER_IP  from one address, 1..100000 (default 256)\n"
    "  --clock CLOCK           IDMINT_CLOCK       system or offset-file:/ABS/PATH (default system)\n"
    "  --segment-wait MS       IDMINT_SEGMENT_WAIT  ms a request waits for a block or an open, 0..60000 (default 1000)\n"
    "  --store-timeout MS      IDMINT_STORE_TIMEOUT  ms one ticket-store call may take, 1..3600000 (default 5000)\n"
    "  --opaque-key-file FILE  IDMINT_OPAQUE_KEY_FILE  key (32 hex digits) for ?format=opaque (default none)\n";

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
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    size_t n = strlen(value);
    return cfg_fail(err, errlen, "%s: %s '%.*s%s': %s", source, key,
                (int)(n > CFG_SHOW_MAX ? CFG_SHOW_MAX : n), value,
                n > CFG_SHOW_MAX ? "..." : "", why);
}

static int key_index(const char *name, size_t len)
{
    for (int k = 0; k < K_COUNT; k++)
        if (strlen(cfg_names[k]) == len && memcmp(cfg_names[k], name, len) == 0)
            return k;
    return -1;
}

/* Copy s into dst[cap]; false if it does not fit. */
static bool copy_in(char *dst, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        return false;
    memcpy(dst, s, n + 1);
    return true;
}

/* Strict decimal: one or more ASCII digits, nothing else, fits in 64 bits. */
static bool dec_u64(const char *s, uint64_t *out)
{
    if (*s == '\0')
        return false;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    uint64_t v = 0;
    if (idm_u64_parse(s, &v) != 0)
        return false;
    *out = v;
    return true;
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

/* ---- values ---- */

static int set_number(const char *source, const char *key, const char *value,
                      uint64_t lo, uint64_t hi, uint64_t *out, char *err,
                      size_t errlen)
{
    uint64_t v = 0;
    if (!dec_u64(value, &v))
        return cfg_bad(err, errlen, source, key, value,
                   "not a decimal number (digits only, %" PRIu64 "..%" PRIu64 ")", lo, hi);
    if (v < lo || v > hi)
        return cfg_bad(err, errlen, source, key, value, "out of range %" PRIu64 "..%" PRIu64,
                   lo, hi);
    *out = v;
    return 0;
}

/* listen and admin-listen: HOST:PORT into host[256] and *port_out. */
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

static int set_node(idmd_config *c, const char *source, const char *value, char *err,
                    size_t errlen)
{
    const char *key = cfg_names[K_NODE];
    if (strlen(value) >= sizeof c->node)
        return cfg_bad(err, errlen, source, key, value, "longer than %zu bytes", sizeof c->node - 1);
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
        char num[32];
        size_t vlen = len - nlen - 1;
        uint64_t v = 0;
        if (vlen == 0 || vlen >= sizeof num)
            return cfg_bad(err, errlen, source, key, value, "'%.*s' needs a decimal value",
                       (int)nlen, p);
        memcpy(num, eq + 1, vlen);
        num[vlen] = '\0';
        if (!dec_u64(num, &v))
            return cfg_bad(err, errlen, source, key, value, "'%.*s' needs a decimal value",
                       (int)nlen, p);
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
    memcpy(c->node, value, strlen(value) + 1);
    return 0;
}

static int set_layout(idmd_config *c, const char *source, const char *value, char *err,
                      size_t errlen)
{
    const char *key = cfg_names[K_LAYOUT];
    if (value[0] == '\0')
        return cfg_bad(err, errlen, source, key, value, "empty");
    if (strlen(value) >= sizeof c->layout)
        return cfg_bad(err, errlen, source, key, value, "longer than %zu bytes",
                   sizeof c->layout - 1);
    if (!is_preset(value)) {
        if (strchr(value, ':') == NULL) {
            char names[128] = "";
            size_t used = 0;
            for (const char *const *p = idm_layout_preset_names(); *p != NULL; p++) {
                int w = snprintf(names + used, sizeof names - used, "%s%s",
                                 used > 0 ? ", " : "", *p);
                if (w < 0 || (size_t)w >= sizeof names - used)
                    break;
                used += (size_t)w;
            }
            return cfg_bad(err, errlen, source, key, value,
                       "not a preset (%s) nor a text form like time:41@1ms,worker:10,seq:12",
                       names);
        }
        /* The epoch may come later, from another source; only the form is
         * checked here (build checks that an epoch was given). */
        idm_layout *l = NULL;
        if (idm_layout_parse(&l, value, 0) != 0)
            return cfg_bad(err, errlen, source, key, value, "%s", idm_error_detail());
        idm_layout_free(l);
    }
    memcpy(c->layout, value, strlen(value) + 1);
    return 0;
}

static int set_string(const char *source, const char *key, const char *value, char *dst,
                      size_t cap, bool allow_empty, char *err, size_t errlen)
{
    if (!allow_empty && value[0] == '\0')
        return cfg_bad(err, errlen, source, key, value, "empty");
    if (!copy_in(dst, cap, value))
        return cfg_bad(err, errlen, source, key, value, "longer than %zu bytes", cap - 1);
    return 0;
}

/* ---- the interface ---- */

void idmd_config_defaults(idmd_config *c)
{
    memset(c, 0, sizeof *c);
    strcpy(c->listen_host, "127.0.0.1");
    c->listen_port = 7070;
    strcpy(c->data_dir, "./var");
    c->lease_ttl_ms = 10000;
    strcpy(c->layout, "twitter");
    c->epoch = 0;
    c->epoch_set = false;
    strcpy(c->policy, "logical");
    strcpy(c->exhaust, "wait");
    strcpy(c->lease_field, "worker");
    c->count_max = 10000;
    c->idle_timeout_ms = 10000;
    c->head_timeout_ms = 5000;
    c->max_request = 8192;
    c->threads = 2;
    c->max_connections = 1024;
    c->max_connections_per_ip = 256;
    strcpy(c->clock, "system");
    c->segment_wait_ms = 1000;
    c->store_timeout_ms = IDM_STORE_TIMEOUT_MS;
}

/* Keep where key k's value came from (its last bytes if it is long). */
static void note_source(idmd_config *c, int k, const char *source)
{
    size_t n = strlen(source);
    char *dst = c->source[k];
    if (n < IDMD_SOURCE_MAX) {
        memcpy(dst, source, n + 1);
    } else {
        size_t keep = IDMD_SOURCE_MAX - 4;
        memcpy(dst, "...", 3);
        memcpy(dst + 3, source + n - keep, keep + 1);
    }
}

/* Set key k from value; idmd_config_set notes the source when it is set. */
static int set_key(idmd_config *c, int k, const char *key, const char *value,
                   const char *source, char *err, size_t errlen)
{
    uint64_t v = 0;
    switch ((enum cfg_key)k) {
    case K_LISTEN:
        return set_listen(key, c->listen_host, &c->listen_port, source, value, err, errlen);
    case K_ADMIN_LISTEN:
        /* Empty: no admin listener (as when the key is left out). */
        if (value[0] == '\0') {
            c->admin_host[0] = '\0';
            c->admin_port = 0;
            return 0;
        }
        return set_listen(key, c->admin_host, &c->admin_port, source, value, err, errlen);
    case K_DATA_DIR:
        return set_string(source, key, value, c->data_dir, sizeof c->data_dir, false, err,
                          errlen);
    case K_LEASE:
    case K_STORE: {
        char *dst = k == K_LEASE ? c->lease : c->store;
        const char *sep = strstr(value, "://");
        if (sep == NULL || sep == value)
            return cfg_bad(err, errlen, source, key, value, "not a URL (scheme://...)");
        return set_string(source, key, value, dst, IDMD_PATH_MAX, false, err, errlen);
    }
    case K_LEASE_TTL:
        if (set_number(source, key, value, 1000, 3600000, &v, err, errlen) != 0)
            return -1;
        c->lease_ttl_ms = (int64_t)v;
        return 0;
    case K_LAYOUT:
        return set_layout(c, source, value, err, errlen);
    case K_EPOCH: {
        idm_unix_ms t = 0;
        if (value[0] == '\0' || idm_time_parse(value, &t) != 0)
            return cfg_bad(err, errlen, source, key, value,
                       "not Unix ms nor an ISO-8601 time (2024-01-01, 2024-01-01T00:00:00Z)");
        c->epoch = t;
        c->epoch_set = true;
        return 0;
    }
    case K_POLICY:
        if (strcmp(value, "logical") != 0 && strcmp(value, "refuse") != 0 &&
            strcmp(value, "wait") != 0)
            return cfg_bad(err, errlen, source, key, value, "must be logical, refuse or wait");
        strcpy(c->policy, value);
        return 0;
    case K_EXHAUST:
        if (strcmp(value, "wait") != 0 && strcmp(value, "borrow") != 0)
            return cfg_bad(err, errlen, source, key, value, "must be wait or borrow");
        strcpy(c->exhaust, value);
        return 0;
    case K_NODE:
        return set_node(c, source, value, err, errlen);
    case K_LEASE_FIELD:
        if (!is_name(value, strlen(value)))
            return cfg_bad(err, errlen, source, key, value, "a field name is [a-z0-9_]+");
        return set_string(source, key, value, c->lease_field, sizeof c->lease_field, false,
                          err, errlen);
    case K_COUNT_MAX:
        if (set_number(source, key, value, 1, 1000000, &v, err, errlen) != 0)
            return -1;
        c->count_max = (uint32_t)v;
        return 0;
    case K_TOKEN_FILE:
        /* Empty is refused: a blank variable must not turn authentication
         * off behind the file's back. Leave the key out for none. */
        return set_string(source, key, value, c->token_file, sizeof c->token_file, false,
                          err, errlen);
    case K_IDLE_TIMEOUT:
        if (set_number(source, key, value, 100, 3600000, &v, err, errlen) != 0)
            return -1;
        c->idle_timeout_ms = (int64_t)v;
        return 0;
    case K_HEAD_TIMEOUT:
        if (set_number(source, key, value, 100, 3600000, &v, err, errlen) != 0)
            return -1;
        c->head_timeout_ms = (int64_t)v;
        return 0;
    case K_MAX_REQUEST:
        if (set_number(source, key, value, 1024, 1048576, &v, err, errlen) != 0)
            return -1;
        c->max_request = (size_t)v;
        return 0;
    case K_THREADS:
        if (set_number(source, key, value, 1, 64, &v, err, errlen) != 0)
            return -1;
        c->threads = (unsigned)v;
        return 0;
    case K_MAX_CONNECTIONS:
        if (set_number(source, key, value, 1, 100000, &v, err, errlen) != 0)
            return -1;
        c->max_connections = (unsigned)v;
        return 0;
    case K_MAX_CONNECTIONS_PER_IP:
        if (set_number(source, key, value, 1, 100000, &v, err, errlen) != 0)
            return -1;
        c->max_connections_per_ip = (unsigned)v;
        return 0;
    case K_CLOCK:
        if (strcmp(value, "system") != 0) {
            static const char pre[] = "offset-file:";
            if (strncmp(value, pre, sizeof pre - 1) != 0 || value[sizeof pre - 1] != '/' ||
                value[sizeof pre] == '\0')
                return cfg_bad(err, errlen, source, key, value,
                           "must be system or offset-file:/ABSOLUTE/PATH");
        }
        return set_string(source, key, value, c->clock, sizeof c->clock, false, err, errlen);
    case K_SEGMENT_WAIT:
        if (set_number(source, key, value, 0, 60000, &v, err, errlen) != 0)
            return -1;
        c->segment_wait_ms = (int64_t)v;
        return 0;
    case K_STORE_TIMEOUT:
        if (set_number(source, key, value, 1, 3600000, &v, err, errlen) != 0)
            return -1;
        c->store_timeout_ms = (int64_t)v;
        return 0;
    case K_OPAQUE_KEY_FILE:
        /* Like token-file: empty is refused; leave the key out for none. */
        return set_string(source, key, value, c->opaque_key_file, sizeof c->opaque_key_file,
                          false, err, errlen);
    case K_COUNT:
        break;
    }
    return cfg_fail(err, errlen, "%s: unknown key '%s'", source, key);
}

int idmd_config_set(idmd_config *c, const char *key, const char *value, const char *source,
                    char *err, size_t errlen)
{
    if (source == NULL)
        source = "?";
    if (key == NULL || value == NULL)
        return cfg_fail(err, errlen, "%s: no key or no value", source);
    int k = key_index(key, strlen(key));
    if (k < 0)
        return cfg_fail(err, errlen, "%s: unknown key '%.*s'", source, CFG_SHOW_MAX, key);
    if (set_key(c, k, cfg_names[k], value, source, err, errlen) != 0)
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
    int k = key_index(key, strlen(key));
    if (k < 0)
        return cfg_fail(err, errlen, "%s:%u: unknown key '%.*s'", path, lineno, CFG_SHOW_MAX, key);
    if (seen_at[k] != 0)
        return cfg_fail(err, errlen, "%s:%u: key '%s' given twice (first on line %u)", path,
                    lineno, cfg_names[k], seen_at[k]);
    seen_at[k] = lineno;
    if (*value == '"') {
        size_t n = strlen(value);
        if (n < 2 || value[n - 1] != '"')
            return cfg_fail(err, errlen, "%s:%u: %s: unterminated quote (or text after it)", path,
                        lineno, cfg_names[k]);
        value[n - 1] = '\0';
        value++;
    }
    char source[IDMD_PATH_MAX + 32];
    snprintf(source, sizeof source, "%s:%u", path, lineno);
    return idmd_config_set(c, cfg_names[k], value, source, err, errlen);
}

static int load_file(idmd_config *c, const char *path, const char *named_by, char *err,
                     size_t errlen)
{
    if (path[0] == '\0')
        return cfg_fail(err, errlen, "%s: empty config file name", named_by);
    /* O_NONBLOCK so that a FIFO does not hang us before the type check */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return cfg_fail(err, errlen, "%s: cannot open config file %s: %s", named_by, path,
                    strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cfg_fail(err, errlen, "%s: cannot stat config file %s: %s", named_by, path,
                    strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cfg_fail(err, errlen, "%s: config file %s is not a regular file", named_by, path);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        int e = errno;
        close(fd);
        return cfg_fail(err, errlen, "%s: cannot read config file %s: %s", named_by, path,
                    strerror(e));
    }
    unsigned seen_at[K_COUNT] = {0};
    char line[CFG_LINE_MAX + 1];
    size_t n = 0;
    unsigned lineno = 1;
    int rc = 0;
    for (;;) {
        int ch = getc(f);
        if (ch == EOF) {
            if (ferror(f)) {
                rc = cfg_fail(err, errlen, "%s:%u: read error: %s", path, lineno, strerror(errno));
                break;
            }
            if (n > 0) {
                line[n] = '\0';
                rc = file_line(c, path, lineno, line, seen_at, err, errlen);
            }
            break;
        }
        if (ch == '\n') {
            line[n] = '\0';
            rc = file_line(c, path, lineno, line, seen_at, err, errlen);
            if (rc != 0)
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
 * F_KEY, *key is the key's index; for F_KEY and F_CONFIG, *value its value.
 */
static enum flag_kind next_flag(int argc, char **argv, int *i, int *key, const char **value,
                                char *err, size_t errlen)
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
        *key = key_index(name, nlen);
        if (*key < 0) {
            cfg_fail(err, errlen, "unknown flag '--%.*s' (see --help)", (int)(nlen > CFG_SHOW_MAX ? CFG_SHOW_MAX : nlen), name);
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

static int apply_env(idmd_config *c, char **envp, char *err, size_t errlen)
{
    static const char prefix[] = "IDMINT_";
    bool seen[K_COUNT] = {false};
    for (char **e = envp; e != NULL && *e != NULL; e++) {
        const char *var = *e;
        if (strncmp(var, prefix, sizeof prefix - 1) != 0)
            continue;
        const char *eq = strchr(var, '=');
        if (eq == NULL)
            continue;
        size_t nlen = (size_t)(eq - var);
        if ((nlen == 13 && memcmp(var, "IDMINT_CONFIG", 13) == 0) ||
            (nlen == 16 && memcmp(var, "IDMINT_STATE_DIR", 16) == 0))
            continue;
        int k = -1;
        for (int j = 0; j < K_COUNT; j++)
            if (strlen(cfg_envs[j]) == nlen && memcmp(cfg_envs[j], var, nlen) == 0)
                k = j;
        if (k < 0)
            return cfg_fail(err, errlen, "%.*s: unknown environment variable (not an idmintd key)",
                        (int)(nlen > CFG_SHOW_MAX ? CFG_SHOW_MAX : nlen), var);
        if (seen[k])
            return cfg_fail(err, errlen, "%s: given twice in the environment", cfg_envs[k]);
        seen[k] = true;
        if (idmd_config_set(c, cfg_names[k], eq + 1, cfg_envs[k], err, errlen) != 0)
            return -1;
    }
    return 0;
}

int idmd_config_build(idmd_config *c, int argc, char **argv, char **envp, bool *check_only,
                      bool *help, char *err, size_t errlen)
{
    bool check = false;
    bool want_help = false;
    idmd_config_defaults(c);
    if (check_only != NULL)
        *check_only = false;
    if (help != NULL)
        *help = false;
    if (err != NULL && errlen > 0)
        err[0] = '\0';

    /* First pass: the flags' shape, --config, --check-config, --help. */
    const char *config = NULL;
    bool seen[K_COUNT] = {false};
    for (int i = 1; i < argc; i++) {
        int key = -1;
        const char *value = NULL;
        enum flag_kind kind = next_flag(argc, argv, &i, &key, &value, err, errlen);
        switch (kind) {
        case F_ERROR:
            return -1;
        case F_HELP:
            want_help = true;
            break;
        case F_CHECK:
            check = true;
            break;
        case F_CONFIG:
            if (config != NULL)
                return cfg_fail(err, errlen, "--config given twice");
            config = value;
            break;
        case F_KEY:
            if (seen[key])
                return cfg_fail(err, errlen, "--%s given twice", cfg_names[key]);
            seen[key] = true;
            break;
        }
        if (want_help) {
            /* help needs nothing else to be right */
            if (help != NULL)
                *help = true;
            if (check_only != NULL)
                *check_only = check;
            return 0;
        }
    }
    if (check_only != NULL)
        *check_only = check;

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
        int key = -1;
        const char *value = NULL;
        enum flag_kind kind = next_flag(argc, argv, &i, &key, &value, err, errlen);
        if (kind == F_ERROR)
            return -1;
        if (kind != F_KEY)
            continue;
        char source[48];
        snprintf(source, sizeof source, "--%s", cfg_names[key]);
        if (idmd_config_set(c, cfg_names[key], value, source, err, errlen) != 0)
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

/* key = value, quoting a value the file syntax would otherwise change. */
static void cfg_out_str(outbuf *o, const char *key, const char *value)
{
    size_t n = strlen(value);
    bool quote = n == 0 || is_space(value[0]) || is_space(value[n - 1]) || value[0] == '"';
    cfg_out(o, quote ? "%s = \"%s\"\n" : "%s = %s\n", key, value);
}

/* ---- the checks that need more than one value, or a file ---- */

/* Where key k's value came from, for a message. */
static const char *src_of(const idmd_config *c, int k)
{
    return c->source[k][0] != '\0' ? c->source[k] : "default";
}

/* The value of key k as text, for a message about a number. */
#define BAD(k, value, ...) cfg_bad(err, errlen, src_of(c, (k)), cfg_names[(k)], (value), __VA_ARGS__)

/* Clear a buffer that held a secret (a plain memset may be optimised away). */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n-- > 0)
        *v++ = 0;
}

/*
 * Open path for reading. O_NONBLOCK, so that a FIFO does not hang us before
 * the type check; it must be a regular file. 0 with *out (blocking again),
 * or -1 with why.
 */
static int open_regular(const char *path, int *out, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, whylen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot stat it: %s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *out = fd;
    return 0;
}

/* Read up to cap bytes (all of a shorter file); the count, or -1. */
static ssize_t read_upto(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

/* token-file: one token of 16..IDMD_TOKEN_MAX printable ASCII bytes without
 * spaces, then line ends only (CR, LF), as main.c reads it. The messages
 * never quote the token. */
static int check_token_file(const idmd_config *c, char *err, size_t errlen)
{
    /* room for the longest token, its line ends and a byte that says more
     * (as main.c reads it: a file that fills this is too long) */
    enum { MIN_TOKEN = 16, CAP = IDMD_TOKEN_MAX + 64 };
    char why[256];
    char buf[CAP];
    int fd;
    int rc = 0;
    if (open_regular(c->token_file, &fd, why, sizeof why) != 0)
        return BAD(K_TOKEN_FILE, c->token_file, "%s", why);
    ssize_t got = read_upto(fd, buf, sizeof buf);
    int e = errno;
    close(fd);
    if (got < 0)
        return BAD(K_TOKEN_FILE, c->token_file, "cannot read it: %s", strerror(e));
    size_t n = (size_t)got;
    bool more = n == sizeof buf;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (more || n > IDMD_TOKEN_MAX) {
        rc = BAD(K_TOKEN_FILE, c->token_file, "the token is longer than %d bytes",
                 IDMD_TOKEN_MAX);
    } else if (n == 0) {
        rc = BAD(K_TOKEN_FILE, c->token_file, "empty: it holds no token");
    } else if (n < MIN_TOKEN) {
        rc = BAD(K_TOKEN_FILE, c->token_file, "the token is %zu bytes; at least %d", n,
                 MIN_TOKEN);
    } else {
        for (size_t i = 0; i < n; i++) {
            if (buf[i] <= ' ' || buf[i] > '~') {
                rc = BAD(K_TOKEN_FILE, c->token_file,
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

/* opaque-key-file: read as idmintd reads it at start (its first 79 bytes)
 * and parsed. */
static int check_opaque_key_file(const idmd_config *c, char *err, size_t errlen)
{
    char why[256];
    char hex[80];
    int fd;
    if (open_regular(c->opaque_key_file, &fd, why, sizeof why) != 0)
        return BAD(K_OPAQUE_KEY_FILE, c->opaque_key_file, "%s", why);
    ssize_t n = read_upto(fd, hex, sizeof hex - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return BAD(K_OPAQUE_KEY_FILE, c->opaque_key_file, "cannot read it: %s", strerror(e));
    hex[n] = '\0';
    idm_opaque_key key;
    int rc = idm_opaque_key_parse(hex, &key);
    wipe(hex, sizeof hex);
    wipe(&key, sizeof key);
    if (rc != 0)
        return BAD(K_OPAQUE_KEY_FILE, c->opaque_key_file, "%s", idm_error_detail());
    return 0;
}

/* clock offset-file:PATH: a signed ms offset, read as idmintd reads it (its
 * first 63 bytes). *offset_ms: the offset. */
static int check_offset_file(const idmd_config *c, int64_t *offset_ms, char *err,
                             size_t errlen)
{
    const char *path = c->clock + strlen("offset-file:");
    char why[256];
    char buf[64];
    int fd;
    if (open_regular(path, &fd, why, sizeof why) != 0)
        return BAD(K_CLOCK, c->clock, "the offset file: %s", why);
    ssize_t n = read_upto(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return BAD(K_CLOCK, c->clock, "cannot read the offset file: %s", strerror(e));
    buf[n] = '\0';
    char *end = buf;
    errno = 0;
    long long ms = strtoll(buf, &end, 10);
    while (*end == '\n' || *end == ' ')
        end++;
    if (n == 0 || errno != 0 || end == buf || *end != '\0' || ms < -86400000000LL ||
        ms > 86400000000LL)
        return BAD(K_CLOCK, c->clock,
                   "the offset file must hold a signed ms offset within a thousand days");
    *offset_ms = ms;
    return 0;
}

/* A lease or store URL: a known scheme; file:// and sqlite:// take an
 * absolute path (as the backends do at start). k names the key blamed, what
 * says which URL when it is made from data-dir. */
static int check_url(const idmd_config *c, int k, const char *url, bool is_lease,
                     const char *what, char *err, size_t errlen)
{
    const char *value = k == K_DATA_DIR ? c->data_dir : url;
    const char *sep = strstr(url, "://");
    size_t slen = sep != NULL ? (size_t)(sep - url) : 0;
    const char *path = sep != NULL ? sep + 3 : url;
    bool file = is_lease && slen == 4 && memcmp(url, "file", 4) == 0;
    bool sqlite = !is_lease && slen == 6 && memcmp(url, "sqlite", 6) == 0;
    bool known = file || sqlite ||
                 (is_lease && slen == 4 && memcmp(url, "etcd", 4) == 0) ||
                 (!is_lease && slen == 8 && memcmp(url, "postgres", 8) == 0) ||
                 (!is_lease && slen == 10 && memcmp(url, "postgresql", 10) == 0);
    if (!known)
        return BAD(k, value, "%sunknown scheme (known: %s)", what,
                   is_lease ? "file://, etcd://" : "sqlite://, postgres://, postgresql://");
    if (!file && !sqlite)
        return 0;
    if (path[0] != '/')
        return BAD(k, value, "%sneeds an absolute path, as %s:///%s (three slashes)", what,
                   file ? "file" : "sqlite", file ? "dir" : "path/file.db");
    if (sqlite) {
        size_t n = strlen(path);
        if (path[n - 1] == '/')
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

/* data-dir made absolute (the URLs made from it must be), and a directory if
 * it exists. */
static int check_data_dir(idmd_config *c, char *err, size_t errlen)
{
    if (c->data_dir[0] != '/') {
        char cwd[IDMD_PATH_MAX];
        const char *rel = c->data_dir;
        if (getcwd(cwd, sizeof cwd) == NULL)
            return BAD(K_DATA_DIR, c->data_dir,
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
            return BAD(K_DATA_DIR, c->data_dir, "made absolute, %.60s..., it is longer than %zu bytes",
                       abs, sizeof c->data_dir - 1);
        memcpy(c->data_dir, abs, strlen(abs) + 1);
    }
    struct stat st;
    if (stat(c->data_dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return BAD(K_DATA_DIR, c->data_dir, "exists and is not a directory");
    return 0;
}

/* The node fields of l, "a, b", into out. */
static void node_names(const idm_layout *l, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < idm_layout_field_count(l); i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        int w = snprintf(out + used, len - used, "%s%s", used > 0 ? ", " : "", f.name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
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
    size_t count = idm_layout_field_count(l);
    idm_field_info f;
    char nodes[256];
    node_names(l, nodes, sizeof nodes);
    if (c->source[K_LEASE_FIELD][0] != '\0') {
        for (size_t i = 0; i < count; i++) {
            if (idm_layout_field(l, i, &f) == 0 && strcmp(f.name, c->lease_field) == 0) {
                if (f.kind != IDM_FIELD_NODE)
                    return BAD(K_LEASE_FIELD, c->lease_field,
                               "it is layout %s's %s field, not a node field (node fields: %s)",
                               c->layout, f.kind == IDM_FIELD_TIME ? "time" : "sequence",
                               nodes[0] != '\0' ? nodes : "none");
                *index = (int)i;
                return 0;
            }
        }
        return BAD(K_LEASE_FIELD, c->lease_field, "layout %s has no such field (node fields: %s)",
                   c->layout, nodes[0] != '\0' ? nodes : "none");
    }
    static const char *const names[] = {"worker", "shard", "machine"};
    int only = -1, nnodes = 0;
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        for (size_t i = 0; i < count; i++) {
            if (idm_layout_field(l, i, &f) == 0 && f.kind == IDM_FIELD_NODE &&
                strcmp(f.name, names[n]) == 0) {
                *index = (int)i;
                snprintf(c->lease_field, sizeof c->lease_field, "%s", f.name);
                return 0;
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        if (idm_layout_field(l, i, &f) == 0 && f.kind == IDM_FIELD_NODE) {
            only = (int)i;
            nnodes++;
        }
    }
    if (nnodes == 1) {
        idm_layout_field(l, (size_t)only, &f);
        *index = only;
        snprintf(c->lease_field, sizeof c->lease_field, "%s", f.name);
        return 0;
    }
    if (nnodes == 0)
        return BAD(K_LAYOUT, c->layout, "no node field for the lease to fill");
    return BAD(K_LEASE_FIELD, c->lease_field,
               "layout %s has no worker, shard or machine field: name the node field the lease "
               "fills, one of %s",
               c->layout, nodes);
}

/* node: each name=value against the layout; none may be the lease's field. */
static int check_node(const idmd_config *c, const idm_layout *l, int lease_index, char *err,
                      size_t errlen)
{
    char buf[sizeof c->node];
    char *save = NULL;
    uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
    uint32_t set = 0;
    memcpy(buf, c->node, sizeof buf);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (idm_layout_parse_node(l, tok, node, &set) != 0) {
            char nodes[256];
            node_names(l, nodes, sizeof nodes);
            return BAD(K_NODE, c->node, "%s (layout %s; node fields: %s)", idm_error_detail(),
                       c->layout, nodes[0] != '\0' ? nodes : "none");
        }
    }
    if (set & (UINT32_C(1) << lease_index))
        return BAD(K_NODE, c->node,
                   "gives %s, the node field the lease fills (lease-field %s, from %s): leave it "
                   "out, or name another lease-field",
                   c->lease_field, c->lease_field, src_of(c, K_LEASE_FIELD));
    return 0;
}

/*
 * The most ids one request can always get from the layout, within the
 * generator's default wait bound (5 ms + one tick; idmintd sets no other).
 * A batch is all or nothing: n ids that would run more than the bound ahead
 * of the clock are refused however long the caller retries. At worst the
 * batch starts on the last sequence value of the current tick, at the
 * tick's very start, so it may fill k = floor(bound / tick) whole ticks
 * after it: k * 2^seq_bits ids always fit (one more would, too, but a
 * request racing another may find less of the current tick left).
 */
static uint64_t layout_count_max(const idm_layout *l)
{
    int64_t tick = idm_layout_tick_ms(l);
    uint64_t k = (uint64_t)((5 + tick) / tick);
    unsigned sb = idm_layout_seq_bits(l);
    if (sb >= 32)
        return UINT64_MAX;
    return k << sb;
}

int idmd_config_check(idmd_config *c, char *err, size_t errlen)
{
    idm_layout *l = NULL;
    char e[32];
    char v[32];
    int rc = -1;
    int lease_index = -1;
    int64_t offset_ms = 0;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    snprintf(e, sizeof e, "%" PRId64, c->epoch);
    if (idm_layout_from_spec(&l, c->layout, c->epoch_set ? e : NULL) != 0) {
        if (c->epoch_set)
            return BAD(K_LAYOUT, c->layout, "with epoch %s (from %s): %s", e, src_of(c, K_EPOCH),
                       idm_error_detail());
        return BAD(K_LAYOUT, c->layout, "%s", idm_error_detail());
    }

    /* The epoch and the time field against the clock idmintd will use. */
    if (strcmp(c->clock, "system") != 0 && check_offset_file(c, &offset_ms, err, errlen) != 0)
        goto out;
    {
        const idm_clock *sys = idm_clock_system();
        int64_t now_ms = sys->wall_ns(sys->ctx) / 1000000 + offset_ms;
        idm_unix_ms epoch = idm_layout_epoch(l);
        idm_unix_ms end = idm_layout_time_end(l);
        int k = c->epoch_set ? K_EPOCH : K_LAYOUT;
        const char *value = c->epoch_set ? e : c->layout;
        if (epoch > now_ms) {
            BAD(k, value, "the epoch %" PRId64 " is in the future (the clock reads %" PRId64 ")",
                (int64_t)epoch, now_ms);
            goto out;
        }
        if (now_ms >= end) {
            BAD(k, value, "the time field ran out at %" PRId64 " (the clock reads %" PRId64 ")",
                (int64_t)end, now_ms);
            goto out;
        }
    }

    if (check_lease_field(c, l, &lease_index, err, errlen) != 0 ||
        check_node(c, l, lease_index, err, errlen) != 0)
        goto out;

    /* count-max against what one request can get. */
    {
        uint64_t most = layout_count_max(l);
        if (most > 1000000)
            most = 1000000;
        c->count_max_layout = (uint32_t)most;
        if (c->count_max > most) {
            snprintf(v, sizeof v, "%" PRIu32, c->count_max);
            if (c->source[K_COUNT_MAX][0] != '\0') {
                BAD(K_COUNT_MAX, v,
                    "layout %s can always mint at most %" PRIu64 " ids in one request (%" PRIu64
                    " a %" PRId64 " ms tick, within the generator's %" PRId64
                    " ms wait): at most %" PRIu64,
                    c->layout, most, (uint64_t)1 << idm_layout_seq_bits(l),
                    idm_layout_tick_ms(l), 5 + idm_layout_tick_ms(l), most);
                goto out;
            }
            snprintf(c->note, sizeof c->note,
                     "count-max: the default %" PRIu32 " lowered to %" PRIu64
                     ", the most ids layout %s can always mint in one request",
                     c->count_max, most, c->layout);
            c->count_max = (uint32_t)most;
        }
    }

    if (check_data_dir(c, err, errlen) != 0)
        goto out;
    {
        char url[IDMD_PATH_MAX + 32];
        if (c->lease[0] != '\0') {
            if (check_url(c, K_LEASE, c->lease, true, "", err, errlen) != 0)
                goto out;
        } else {
            snprintf(url, sizeof url, "file://%s/leases", c->data_dir);
            if (check_url(c, K_DATA_DIR, url, true, "the lease URL made from it: ", err,
                          errlen) != 0)
                goto out;
        }
        if (c->store[0] != '\0') {
            if (check_url(c, K_STORE, c->store, false, "", err, errlen) != 0)
                goto out;
        } else {
            snprintf(url, sizeof url, "sqlite://%s/segments.db", c->data_dir);
            if (check_url(c, K_DATA_DIR, url, false, "the store URL made from it: ", err,
                          errlen) != 0)
                goto out;
        }
    }

    if (c->token_file[0] != '\0' && check_token_file(c, err, errlen) != 0)
        goto out;
    if (c->opaque_key_file[0] != '\0' && check_opaque_key_file(c, err, errlen) != 0)
        goto out;

    /* admin-listen must not take listen's address (a wildcard host overlaps
     * every host). Port 0 picks a free port each time. */
    if (c->admin_host[0] != '\0' && c->admin_port != 0 && c->admin_port == c->listen_port) {
        const char *a = strcmp(c->admin_host, "localhost") == 0 ? "127.0.0.1" : c->admin_host;
        const char *m = strcmp(c->listen_host, "localhost") == 0 ? "127.0.0.1" : c->listen_host;
        bool v6a = strchr(a, ':') != NULL, v6m = strchr(m, ':') != NULL;
        bool wild = strcmp(a, "0.0.0.0") == 0 || strcmp(m, "0.0.0.0") == 0 ||
                    strcmp(a, "::") == 0 || strcmp(m, "::") == 0;
        if (strcmp(a, m) == 0 || (wild && (v6a == v6m || strcmp(a, "::") == 0 ||
                                           strcmp(m, "::") == 0))) {
            char shown[300];
            snprintf(shown, sizeof shown, v6a ? "[%s]:%d" : "%s:%d", c->admin_host,
                     c->admin_port);
            BAD(K_ADMIN_LISTEN, shown, "the same address as listen (from %s); give it a port of "
                                       "its own",
                src_of(c, K_LISTEN));
            goto out;
        }
    }
    rc = 0;
out:
    idm_layout_free(l);
    return rc;
}

void idmd_config_print(const idmd_config *c, char *buf, size_t len)
{
    outbuf o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    for (int k = 0; k < K_COUNT; k++) {
        const char *key = cfg_names[k];
        switch ((enum cfg_key)k) {
        case K_LISTEN:
            cfg_out(&o, strchr(c->listen_host, ':') != NULL ? "%s = [%s]:%d\n" : "%s = %s:%d\n",
                key, c->listen_host, c->listen_port);
            break;
        case K_ADMIN_LISTEN:
            if (c->admin_host[0] == '\0')
                cfg_out_str(&o, key, "");
            else
                cfg_out(&o, strchr(c->admin_host, ':') != NULL ? "%s = [%s]:%d\n" : "%s = %s:%d\n",
                    key, c->admin_host, c->admin_port);
            break;
        case K_DATA_DIR:
            cfg_out_str(&o, key, c->data_dir);
            break;
        case K_LEASE:
            cfg_out_str(&o, key, c->lease);
            break;
        case K_LEASE_TTL:
            cfg_out(&o, "%s = %" PRId64 "\n", key, c->lease_ttl_ms);
            break;
        case K_STORE:
            cfg_out_str(&o, key, c->store);
            break;
        case K_LAYOUT:
            cfg_out_str(&o, key, c->layout);
            break;
        case K_EPOCH:
            if (c->epoch_set)
                cfg_out(&o, "%s = %" PRId64 "\n", key, c->epoch);
            else
                cfg_out_str(&o, key, "");
            break;
        case K_POLICY:
            cfg_out_str(&o, key, c->policy);
            break;
        case K_EXHAUST:
            cfg_out_str(&o, key, c->exhaust);
            break;
        case K_NODE:
            cfg_out_str(&o, key, c->node);
            break;
        case K_LEASE_FIELD:
            cfg_out_str(&o, key, c->lease_field);
            break;
        case K_COUNT_MAX:
            cfg_out(&o, "%s = %" PRIu32 "\n", key, c->count_max);
            break;
        case K_TOKEN_FILE:
            cfg_out_str(&o, key, c->token_file);
            break;
        case K_IDLE_TIMEOUT:
            cfg_out(&o, "%s = %" PRId64 "\n", key, c->idle_timeout_ms);
            break;
        case K_HEAD_TIMEOUT:
            cfg_out(&o, "%s = %" PRId64 "\n", key, c->head_timeout_ms);
            break;
        case K_MAX_REQUEST:
            cfg_out(&o, "%s = %zu\n", key, c->max_request);
            break;
        case K_THREADS:
            cfg_out(&o, "%s = %u\n", key, c->threads);
            break;
        case K_MAX_CONNECTIONS:
            cfg_out(&o, "%s = %u\n", key, c->max_connections);
            break;
        case K_MAX_CONNECTIONS_PER_IP:
            cfg_out(&o, "%s = %u\n", key, c->max_connections_per_ip);
            break;
        case K_CLOCK:
            cfg_out_str(&o, key, c->clock);
            break;
        case K_SEGMENT_WAIT:
            cfg_out(&o, "%s = %" PRId64 "\n", key, c->segment_wait_ms);
            break;
        case K_STORE_TIMEOUT:
            cfg_out(&o, "%s = %" PRId64 "\n", key, c->store_timeout_ms);
            break;
        case K_OPAQUE_KEY_FILE:
            cfg_out_str(&o, key, c->opaque_key_file);
            break;
        case K_COUNT:
            break;
        }
    }
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
