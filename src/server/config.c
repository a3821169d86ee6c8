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
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <idmint/idmint.h>

/* Longest config file line, without its newline. */
#define CFG_LINE_MAX 4096
/* How much of a bad value an error message quotes. */
#define CFG_SHOW_MAX 128

enum cfg_key {
    K_LISTEN,
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
    K_MAX_REQUEST,
    K_THREADS,
    K_MAX_CONNECTIONS,
    K_CLOCK,
    K_SEGMENT_WAIT,
    K_OPAQUE_KEY_FILE,
    K_COUNT
};

/* Key names and their environment variables, in print order. */
static const char *const cfg_names[K_COUNT] = {
    "listen", "data-dir", "lease", "lease-ttl", "store", "layout", "epoch",
    "policy", "exhaust", "node", "lease-field", "count-max", "token-file",
    "idle-timeout", "max-request", "threads", "max-connections", "clock",
    "segment-wait", "opaque-key-file",
};
static const char *const cfg_envs[K_COUNT] = {
    "IDMINT_LISTEN", "IDMINT_DATA_DIR", "IDMINT_LEASE", "IDMINT_LEASE_TTL",
    "IDMINT_STORE", "IDMINT_LAYOUT", "IDMINT_EPOCH", "IDMINT_POLICY",
    "IDMINT_EXHAUST", "IDMINT_NODE", "IDMINT_LEASE_FIELD", "IDMINT_COUNT_MAX",
    "IDMINT_TOKEN_FILE", "IDMINT_IDLE_TIMEOUT", "IDMINT_MAX_REQUEST",
    "IDMINT_THREADS", "IDMINT_MAX_CONNECTIONS", "IDMINT_CLOCK",
    "IDMINT_SEGMENT_WAIT", "IDMINT_OPAQUE_KEY_FILE",
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
    "  --data-dir DIR          IDMINT_DATA_DIR    where state lives (default ./var)\n"
    "  --lease URL             IDMINT_LEASE       lease backend, file:// or etcd:// (default file://DATA-DIR/leases)\n"
    "  --lease-ttl MS          IDMINT_LEASE_TTL   lease time to live, 1000..3600000 ms (default 10000)\n"
    "  --store URL             IDMINT_STORE       segment store (default sqlite://DATA-DIR/segments.db)\n"
    "  --layout LAYOUT         IDMINT_LAYOUT      preset name or text form time:41@1ms,...,seq:12 (default twitter)\n"
    "  --epoch TIME            IDMINT_EPOCH       Unix ms or ISO-8601; needed by a text layout (default the preset's)\n"
    "  --policy POLICY         IDMINT_POLICY      clock step back: logical, refuse or wait (default logical)\n"
    "  --exhaust MODE          IDMINT_EXHAUST     sequence exhausted: wait or borrow (default wait)\n"
    "  --node NAME=N,...       IDMINT_NODE        extra node fields, e.g. datacenter=1 (default none)\n"
    "  --lease-field NAME      IDMINT_LEASE_FIELD the node field the lease fills (default worker)\n"
    "  --count-max N           IDMINT_COUNT_MAX   most ids one request may ask for, 1..1000000 (default 10000)\n"
    "  --token-file FILE       IDMINT_TOKEN_FILE  file holding the bearer token (default none: no authentication)\n"
    "  --idle-timeout MS       IDMINT_IDLE_TIMEOUT  idle connection timeout, 100..3600000 ms (default 10000)\n"
    "  --max-request BYTES     IDMINT_MAX_REQUEST request line + headers, 1024..1048576 (default 8192)\n"
    "  --threads N             IDMINT_THREADS     worker threads, 1..64 (default 2)\n"
    "  --max-connections N     IDMINT_MAX_CONNECTIONS  open connections, 1..100000 (default 1024)\n"
    "  --clock CLOCK           IDMINT_CLOCK       system or offset-file:/ABS/PATH (default system)\n"
    "  --segment-wait MS       IDMINT_SEGMENT_WAIT  ms a request waits for a block, 0..60000 (default 1000)\n"
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

static int set_listen(idmd_config *c, const char *source, const char *value, char *err,
                      size_t errlen)
{
    const char *key = cfg_names[K_LISTEN];
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
    memcpy(c->listen_host, host, strlen(host) + 1);
    c->listen_port = (int)p;
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
    c->max_request = 8192;
    c->threads = 2;
    c->max_connections = 1024;
    strcpy(c->clock, "system");
    c->segment_wait_ms = 1000;
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
    uint64_t v = 0;
    switch ((enum cfg_key)k) {
    case K_LISTEN:
        return set_listen(c, source, value, err, errlen);
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
    case K_OPAQUE_KEY_FILE:
        /* Like token-file: empty is refused; leave the key out for none. */
        return set_string(source, key, value, c->opaque_key_file, sizeof c->opaque_key_file,
                          false, err, errlen);
    case K_COUNT:
        break;
    }
    return cfg_fail(err, errlen, "%s: unknown key '%s'", source, key);
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

int idmd_config_check(idmd_config *c, char *err, size_t errlen)
{
    idm_layout *l = NULL;
    char e[32];
    snprintf(e, sizeof e, "%lld", (long long)c->epoch);
    if (idm_layout_from_spec(&l, c->layout, c->epoch_set ? e : NULL) != 0) {
        snprintf(err, errlen, "layout %s: %s", c->layout, idm_error_detail());
        return -1;
    }
    idm_layout_free(l);
    return 0;
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
        case K_MAX_REQUEST:
            cfg_out(&o, "%s = %zu\n", key, c->max_request);
            break;
        case K_THREADS:
            cfg_out(&o, "%s = %u\n", key, c->threads);
            break;
        case K_MAX_CONNECTIONS:
            cfg_out(&o, "%s = %u\n", key, c->max_connections);
            break;
        case K_CLOCK:
            cfg_out_str(&o, key, c->clock);
            break;
        case K_SEGMENT_WAIT:
            cfg_out(&o, "%s = %" PRId64 "\n", key, c->segment_wait_ms);
            break;
        case K_OPAQUE_KEY_FILE:
            cfg_out_str(&o, key, c->opaque_key_file);
            break;
        case K_COUNT:
            break;
        }
    }
}
