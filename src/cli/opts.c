/* SPDX-License-Identifier: MIT */
/*
 * idmint CLI helpers: the option parser every command's table goes through
 * (getopt_long-style: long and short options in any order with the
 * arguments, "--opt value" and "--opt=value"), with the options several
 * commands share (cli.h: the layout group, --node, --json, --format,
 * --count); one-line error messages; the layout the layout group names; and
 * the formatting of ids, times and decoded ids.
 *
 * A --node value may be the platform's ordinal, StatefulSet style:
 * --node FIELD=ordinal (the trailing number of the host name, web-3 -> 3)
 * or --node FIELD=ordinal:VAR (the number in environment variable VAR). The
 * parser resolves it into FIELD=N for the command (which checks N against
 * the layout as any value) and takes the ordinal's lock,
 * STATE-DIR/ordinal-FIELD-N.lock, for the rest of the process: a second
 * idmint on this host with the same ordinal refuses, naming the file and the
 * holder (see src/common/ordinal.h). This trusts the platform to give each
 * host its own ordinal; no coordinator is asked.
 *
 * Output goes through cli_out() and cli_err(): stdout and stderr, or in a
 * captured run (tools.c) the calling thread's buffers. The sinks and the
 * captured flag are thread-local, so runs on several threads never see each
 * other's; a captured run refuses --help and an ordinal --node (which would
 * take a lock for the rest of the process) before touching anything shared.
 */
#include "cli.h"
#include "ordinal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- output sinks ---- */

/* This thread's captured run's buffers, NULL when not captured. */
static _Thread_local FILE *capture_out, *capture_err;

FILE *cli_out(void)
{
    return capture_out != NULL ? capture_out : stdout;
}

FILE *cli_err(void)
{
    return capture_err != NULL ? capture_err : stderr;
}

void cli_capture_begin(FILE *out, FILE *err)
{
    capture_out = out;
    capture_err = err;
}

void cli_capture_end(void)
{
    capture_out = NULL;
    capture_err = NULL;
}

bool cli_captured(void)
{
    return capture_out != NULL;
}

/* ---- option parsing ---- */

typedef struct cli_parser {
    const char *cmd;
    const cli_opt *opts; /* ends with an entry whose name is NULL */
    int argc;
    char **argv;
    int next;
    bool only_positional;
} cli_parser;

/* cli_next_opt results besides an option id (ids are >= 0). */
#define CLI_OPT_END (-1)   /* no arguments left */
#define CLI_OPT_POS (-2)   /* a positional argument, in *value */
#define CLI_OPT_ERROR (-3) /* bad option; message already printed */

static const cli_opt *find_long(const cli_opt *opts, const char *name,
                                size_t len)
{
    for (; opts->name != NULL; opts++) {
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    }
    return NULL;
}

static const cli_opt *find_id(const cli_opt *opts, int id)
{
    while (opts->name != NULL && opts->id != id)
        opts++;
    return opts;
}

static const cli_opt *find_short(const cli_opt *opts, char c)
{
    for (; opts->name != NULL; opts++) {
        if (opts->short_name != 0 && opts->short_name == c)
            return opts;
    }
    return NULL;
}

/* The next option's id (value in *value when it takes one), CLI_OPT_POS,
 * CLI_OPT_END or CLI_OPT_ERROR. */
static int cli_next_opt(cli_parser *p, const char **value)
{
    *value = NULL;
    if (p->next >= p->argc)
        return CLI_OPT_END;
    const char *arg = p->argv[p->next++];

    if (p->only_positional || arg[0] != '-' || arg[1] == '\0' ||
        (arg[1] >= '0' && arg[1] <= '9')) {
        *value = arg;
        return CLI_OPT_POS;
    }
    if (strcmp(arg, "--") == 0) {
        p->only_positional = true;
        return cli_next_opt(p, value);
    }

    const cli_opt *o;
    const char *attached; /* a value in the same word: "--name=V", "-xV" */
    bool is_long = arg[1] == '-';
    if (is_long) {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        o = find_long(p->opts, name, len);
        if (o == NULL) {
            cli_error(p->cmd, "unknown option '%.*s'", (int)len + 2, arg);
            return CLI_OPT_ERROR;
        }
        if (!o->has_arg && eq != NULL) {
            cli_error(p->cmd, "option '--%s' takes no value (got '%s')",
                      o->name, arg);
            return CLI_OPT_ERROR;
        }
        attached = eq != NULL ? eq + 1 : NULL;
    } else {
        o = find_short(p->opts, arg[1]);
        if (o == NULL || (!o->has_arg && arg[2] != '\0')) {
            cli_error(p->cmd, "unknown option '%s'", arg);
            return CLI_OPT_ERROR;
        }
        attached = arg[2] != '\0' ? arg + 2 : NULL;
    }
    if (!o->has_arg)
        return o->id;
    if (attached == NULL && p->next >= p->argc) {
        if (is_long)
            cli_error(p->cmd, "option '--%s' needs a value", o->name);
        else
            cli_error(p->cmd, "option '-%c' needs a value", o->short_name);
        return CLI_OPT_ERROR;
    }
    *value = attached != NULL ? attached : p->argv[p->next++];
    return o->id;
}

/* mkdir -p with mode 0700, as the state files' directory is made
 * (state.c): 0, or -1 with errno. */
static int make_dirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
        *p = saved;
        if (bad)
            return -1;
        if (saved == '\0')
            return 0;
    }
}

/* The state directory (as state.c finds it: $IDMINT_STATE_DIR, else
 * $XDG_STATE_HOME/idmint, else $HOME/.local/state/idmint), made if missing,
 * into dir; false after printing why. */
static bool ordinal_dir(const char *cmd, char *dir, size_t size)
{
    const char *v;
    int n;
    if ((v = getenv("IDMINT_STATE_DIR")) != NULL && v[0] != '\0')
        n = snprintf(dir, size, "%s", v);
    else if ((v = getenv("XDG_STATE_HOME")) != NULL && v[0] == '/')
        n = snprintf(dir, size, "%s/idmint", v);
    else if ((v = getenv("HOME")) != NULL && v[0] != '\0')
        n = snprintf(dir, size, "%s/.local/state/idmint", v);
    else {
        cli_error(cmd, "--node ...=ordinal: no state directory for its lock: set "
                  "IDMINT_STATE_DIR, XDG_STATE_HOME or HOME");
        return false;
    }
    if (n < 0 || (size_t)n >= size) {
        cli_error(cmd, "state directory path is too long");
        return false;
    }
    if (make_dirs(dir) != 0) {
        cli_error(cmd, "cannot create state directory '%s': %s", dir, strerror(errno));
        return false;
    }
    return true;
}

/*
 * A --node value FIELD=ordinal[:VAR]: resolved into FIELD=N (*value points
 * at it from then on) and its lock taken, held until the process ends.
 * Other values are left alone. CLI_OK, or the exit status after printing
 * why. A captured run refuses the ordinal before reading the statics below
 * (they belong to the one command line run of the process).
 */
static int node_ordinal(const char *cmd, const char **value)
{
    static char resolved[IDM_FIELD_NAME_MAX + CLI_U64_TEXT_MAX + 2];
    static bool taken;
    const char *eq = strchr(*value, '=');
    char field[IDM_FIELD_NAME_MAX + 1], from[160], why[700], dir[4096], who[64];
    uint64_t n;
    if (eq == NULL || !idm__ordinal_is(eq + 1))
        return CLI_OK;
    if (cli_captured()) {
        cli_error(cmd, "--node %s: the platform's ordinal takes a lock for the whole "
                  "process: not available here (give a number)", *value);
        return CLI_USAGE;
    }
    if ((size_t)(eq - *value) > IDM_FIELD_NAME_MAX || eq == *value) {
        cli_error(cmd, "bad --node '%s': no field name of 1 to %d bytes before '='", *value,
                  IDM_FIELD_NAME_MAX);
        return CLI_USAGE;
    }
    if (taken) {
        cli_error(cmd, "--node %s: only one field may take the ordinal", *value);
        return CLI_USAGE;
    }
    memcpy(field, *value, (size_t)(eq - *value));
    field[eq - *value] = '\0';
    for (const char *p = field; *p != '\0'; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) {
            cli_error(cmd, "bad --node '%s': a field name is [a-z0-9_]+", *value);
            return CLI_USAGE;
        }
    }
    if (idm__ordinal_resolve(eq + 1, &n, from, sizeof from, why, sizeof why) != 0) {
        cli_error(cmd, "--node %s: %s", *value, why);
        return CLI_USAGE;
    }
    if (!ordinal_dir(cmd, dir, sizeof dir))
        return CLI_FAIL;
    snprintf(who, sizeof who, "idmint %s", cmd);
    if (idm__ordinal_lock(dir, field, n, who, why, sizeof why) < 0) {
        cli_error(cmd, "--node %s (%s=%llu from %s): %s", *value, field, (unsigned long long)n,
                  from, why);
        return CLI_FAIL;
    }
    snprintf(resolved, sizeof resolved, "%s=%llu", field, (unsigned long long)n);
    *value = resolved;
    taken = true;
    return CLI_OK;
}

int cli_parse_args(const cli_spec *s, int argc, char **argv, cli_args *a, void *ctx)
{
    cli_parser p = {s->cmd, s->opts, argc, argv, 1, false};
    const char *v;
    int id;
    memset(a, 0, sizeof *a);
    a->pos = argv + 1;
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        if (id == CLI_OPT_ERROR)
            return CLI_USAGE;
        if (id == CLI_OPT_POS) {
            if (a->pos_count == s->pos_max) {
                cli_error(s->cmd, "unexpected argument '%s'", v);
                return CLI_USAGE;
            }
            /* The k-th argument (from 1) goes to argv[k]: k words at
             * least have been read by then, so that slot is one read. */
            argv[1 + a->pos_count++] = (char *)v;
            continue;
        }
        if (id >= CLI_ID_MAX) { /* a table's mistake, not the user's */
            cli_error(s->cmd, "option id %d out of range", id);
            return CLI_FAIL;
        }
        if (id == CLI_ID_HELP) {
            if (cli_captured()) {
                cli_error(s->cmd, "--help prints the usage: not available here");
                return CLI_USAGE;
            }
            fputs(s->usage, cli_out());
            a->help = true;
            return CLI_OK;
        }
        if (id == CLI_ID_NODE) {
            int status = node_ordinal(s->cmd, &v);
            if (status != CLI_OK)
                return status;
        }
        if (id == s->list_id && id != 0) {
            size_t max = s->list_max < CLI_LIST_MAX ? s->list_max : CLI_LIST_MAX;
            if (a->list_count == max) {
                cli_error(s->cmd, "more than %zu --%s options", max,
                          find_id(s->opts, id)->name);
                return CLI_USAGE;
            }
            a->list[a->list_count++] = v;
        }
        a->opt[id] = v != NULL ? v : "";
        if (s->check != NULL) {
            int status = s->check(ctx, s->cmd, id, v);
            if (status != CLI_OK)
                return status;
        }
    }
    return CLI_OK;
}

int cli_choice(const char *cmd, const char *opt, const char *text, const char *const *names,
               int def)
{
    if (text == NULL)
        return def;
    size_t n = 0;
    for (; names[n] != NULL; n++) {
        if (strcmp(text, names[n]) == 0)
            return (int)n;
    }
    char list[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s",
                         i == 0 ? "" : i + 1 < n ? ", " : " or ", names[i]);
        if (w > 0 && (size_t)w < sizeof list - len)
            len += (size_t)w;
    }
    cli_error(cmd, "bad %s '%s': use %s", opt, text, list);
    return -1;
}

/* ---- messages ---- */

/* Write "idmint: [cmd: ]msg" on one line: control bytes become "\xHH". */
static void emit_line(const char *cmd, const char *msg)
{
    char line[4096];
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)msg;
         *s != '\0' && n + 5 < sizeof line; s++) {
        if (*s < 0x20 || *s == 0x7f)
            n += (size_t)snprintf(line + n, sizeof line - n, "\\x%02x", *s);
        else
            line[n++] = (char)*s;
    }
    line[n] = '\0';
    fflush(cli_out());
    if (cmd != NULL)
        fprintf(cli_err(), "idmint: %s: %s\n", cmd, line);
    else
        fprintf(cli_err(), "idmint: %s\n", line);
}

static void vemit(const char *cmd, const char *fmt, va_list ap) CLI_PRINTF(2, 0);

static void vemit(const char *cmd, const char *fmt, va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    emit_line(cmd, msg);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vemit(cmd, fmt, ap);
    va_end(ap);
}

/* A notice has the error's form; it is its own function so that callers
 * say which they mean. */
void cli_note(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vemit(cmd, fmt, ap);
    va_end(ap);
}

void cli_lib_error(const char *cmd, int rc, const char *fmt, ...)
{
    /* Read the detail first: nothing below calls the library before. */
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", idm_error_detail());
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof msg) {
        if (detail[0] != '\0')
            snprintf(msg + n, sizeof msg - (size_t)n, ": %s (%s)",
                     idm_strerror(rc), detail);
        else
            snprintf(msg + n, sizeof msg - (size_t)n, ": %s",
                     idm_strerror(rc));
    }
    emit_line(cmd, msg);
}

int cli_parse_count(const char *cmd, const char *text, uint64_t *count)
{
    *count = 1;
    if (text == NULL)
        return CLI_OK;
    _Static_assert(CLI_COUNT_MAX == 10000000u, "the range text below spells it");
    return cli_parse_u64(cmd, "count", text, 1, CLI_COUNT_MAX, "1 to 10000000", count);
}

int cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
                  uint64_t max, const char *range, uint64_t *out)
{
    int rc = idm_u64_parse(text, out);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad %s '%s'", opt, text);
        return CLI_USAGE;
    }
    if (*out < min || *out > max) {
        cli_error(cmd, "bad %s '%s': must be %s", opt, text, range);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_output_status(const char *cmd, int write_errno)
{
    FILE *out = cli_out();
    if (write_errno == 0 && fflush(out) != 0)
        write_errno = errno;
    if (write_errno != 0 || ferror(out)) {
        /* A reader that went away (EPIPE) is not worth a message. */
        if (write_errno != EPIPE)
            cli_error(cmd, "cannot write the output: %s",
                      strerror(write_errno != 0 ? write_errno : EIO));
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* ---- layouts ---- */

bool cli_is_preset(const char *name)
{
    for (const char *const *p = idm_layout_preset_names(); *p != NULL; p++) {
        if (strcmp(*p, name) == 0)
            return true;
    }
    return false;
}

static void preset_list(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const char *const *p = idm_layout_preset_names(); *p != NULL; p++) {
        int w = snprintf(buf + n, len - n, "%s%s", n > 0 ? ", " : "", *p);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
    }
}

int cli_build_layout(const char *cmd, const cli_args *a, idm_layout **out)
{
    const char *given = a->opt[CLI_ID_LAYOUT], *epoch = a->opt[CLI_ID_EPOCH];
    const char *spec = given != NULL ? given : CLI_DEFAULT_LAYOUT;
    bool preset = cli_is_preset(spec);

    if (spec[0] == '\0') {
        cli_error(cmd, "bad --layout '': empty layout");
        return CLI_USAGE;
    }
    if (!preset && strchr(spec, ':') == NULL) {
        char names[256];
        preset_list(names, sizeof names);
        cli_error(cmd, "unknown layout '%s' (presets: %s; or a text form "
                  "such as time:41@1ms,worker:10,seq:12)", spec, names);
        return CLI_USAGE;
    }
    if (epoch != NULL) {
        idm_unix_ms t;
        int rc = idm_time_parse(epoch, &t);
        if (rc != 0) {
            cli_lib_error(cmd, rc, "bad --epoch '%s'", epoch);
            return CLI_USAGE;
        }
    } else if (!preset) {
        cli_error(cmd, "layout '%s' is a text form and needs --epoch T "
                  "(unix ms or ISO-8601)", spec);
        return CLI_USAGE;
    }
    int rc = idm_layout_from_spec(out, spec, epoch);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad --layout '%s'", spec);
        return CLI_USAGE;
    }
    return CLI_OK;
}

void cli_layout_label(const idm_layout *l, char *buf, size_t len)
{
    const char *name = idm_layout_name(l);
    if (strcmp(name, "custom") != 0 || idm_layout_format(l, buf, len) != 0)
        snprintf(buf, len, "%s", name);
}

/* ---- formatting ---- */

size_t cli_u64_dec(uint64_t v, char *buf)
{
    char tmp[CLI_U64_TEXT_MAX];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

size_t cli_u64_hex(uint64_t v, char *buf)
{
    static const char hex[] = "0123456789abcdef";
    buf[0] = '0';
    buf[1] = 'x';
    for (int i = 0; i < 16; i++)
        buf[2 + i] = hex[(v >> (60 - 4 * i)) & 15];
    buf[18] = '\0';
    return 18;
}

size_t cli_hex_bytes(const uint8_t *b, size_t n, char *buf)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = hex[b[i] >> 4];
        buf[2 * i + 1] = hex[b[i] & 15];
    }
    buf[2 * n] = '\0';
    return 2 * n;
}

bool cli_time_text(idm_unix_ms t, char *buf)
{
    if (idm_time_format(t, buf, IDM_TIME_TEXT_MAX) != 0) {
        buf[0] = '\0';
        return false;
    }
    return true;
}

const char *cli_time_or_far(idm_unix_ms t, char *buf)
{
    if (!cli_time_text(t, buf))
        snprintf(buf, IDM_TIME_TEXT_MAX, "after year 9999");
    return buf;
}

const char *cli_json_time(idm_unix_ms t, char *buf)
{
    char iso[IDM_TIME_TEXT_MAX];
    if (cli_time_text(t, iso))
        snprintf(buf, CLI_JSON_TIME_MAX, "\"%s\"", iso);
    else
        snprintf(buf, CLI_JSON_TIME_MAX, "null");
    return buf;
}

void cli_print_time(FILE *out, idm_unix_ms ms, bool json)
{
    char when[CLI_JSON_TIME_MAX];
    if (json)
        fprintf(out, ",\"time\":%s,\"unix_ms\":%lld", cli_json_time(ms, when), (long long)ms);
    else
        fprintf(out, " time=%s unix_ms=%lld", cli_time_text(ms, when) ? when : "-",
                (long long)ms);
}

void cli_print_fields(FILE *out, const idm_layout *l, const idm_decoded *d, bool json)
{
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || f.kind == IDM_FIELD_TIME)
            continue;
        char v[CLI_U64_TEXT_MAX];
        cli_u64_dec(d->value[i], v);
        fprintf(out, json ? ",\"%s\":%s" : " %s=%s", f.name, v);
    }
}

void cli_print_decoded(FILE *out, const idm_layout *l, uint64_t id,
                       const idm_decoded *d, bool json)
{
    char idtext[CLI_U64_TEXT_MAX];
    cli_u64_dec(id, idtext);
    fprintf(out, json ? "{\"id\":\"%s\"" : "%s", idtext);
    cli_print_time(out, d->unix_ms, json);
    cli_print_fields(out, l, d, json);
    fputs(json ? "}\n" : "\n", out);
}

void cli_json_double(FILE *out, double v)
{
    char buf[40];
    if (!isfinite(v)) {
        fputs("null", out);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, out);
}
