/* SPDX-License-Identifier: MIT */
/*
 * idmint CLI helpers: a small getopt_long-style option parser (long and short
 * options in any order with the positional arguments, "--opt value" and
 * "--opt=value"), one-line error messages, layout building from the common
 * --layout/--epoch options and the formatting of ids, times and decoded ids.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

/* ---- option parsing ---- */

void cli_parser_init(cli_parser *p, const char *cmd, const cli_opt *opts,
                     int argc, char **argv)
{
    p->cmd = cmd;
    p->opts = opts;
    p->argc = argc;
    p->argv = argv;
    p->next = 1;
    p->only_positional = false;
}

static const cli_opt *find_long(const cli_opt *opts, const char *name,
                                size_t len)
{
    for (; opts->name != NULL; opts++) {
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    }
    return NULL;
}

static const cli_opt *find_short(const cli_opt *opts, char c)
{
    for (; opts->name != NULL; opts++) {
        if (opts->short_name != 0 && opts->short_name == c)
            return opts;
    }
    return NULL;
}

int cli_next_opt(cli_parser *p, const char **value)
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

    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = find_long(p->opts, name, len);
        if (o == NULL) {
            cli_error(p->cmd, "unknown option '%.*s'", (int)len + 2, arg);
            return CLI_OPT_ERROR;
        }
        if (!o->has_arg) {
            if (eq != NULL) {
                cli_error(p->cmd, "option '--%s' takes no value (got '%s')",
                          o->name, arg);
                return CLI_OPT_ERROR;
            }
            return o->id;
        }
        if (eq != NULL) {
            *value = eq + 1;
            return o->id;
        }
        if (p->next >= p->argc) {
            cli_error(p->cmd, "option '--%s' needs a value", o->name);
            return CLI_OPT_ERROR;
        }
        *value = p->argv[p->next++];
        return o->id;
    }

    const cli_opt *o = find_short(p->opts, arg[1]);
    if (o == NULL || (!o->has_arg && arg[2] != '\0')) {
        cli_error(p->cmd, "unknown option '%s'", arg);
        return CLI_OPT_ERROR;
    }
    if (!o->has_arg)
        return o->id;
    if (arg[2] != '\0') {
        *value = arg + 2;
        return o->id;
    }
    if (p->next >= p->argc) {
        cli_error(p->cmd, "option '-%c' needs a value", o->short_name);
        return CLI_OPT_ERROR;
    }
    *value = p->argv[p->next++];
    return o->id;
}

/* ---- messages ---- */

/* Write "idmint: [cmd: ]msg" on one line: control bytes become "\xHH". */
static void emit_line(const char *cmd, const char *msg)
{
    char line[4096];
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)msg;
         *s != '\0' && n + 5 < sizeof line; s++) {
        if (*s < 0x20 || *s == 0x7f) {
            static const char hex[] = "0123456789abcdef";
            line[n++] = '\\';
            line[n++] = 'x';
            line[n++] = hex[*s >> 4];
            line[n++] = hex[*s & 15];
        } else {
            line[n++] = (char)*s;
        }
    }
    line[n] = '\0';
    fflush(stdout);
    if (cmd != NULL)
        fprintf(stderr, "idmint: %s: %s\n", cmd, line);
    else
        fprintf(stderr, "idmint: %s\n", line);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit_line(cmd, msg);
}

void cli_note(const char *cmd, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit_line(cmd, msg);
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
    int rc = idm_u64_parse(text, count);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad count '%s'", text);
        return CLI_USAGE;
    }
    if (*count < 1 || *count > CLI_COUNT_MAX) {
        cli_error(cmd, "bad count '%s': must be 1 to %u", text, CLI_COUNT_MAX);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_output_status(const char *cmd, int write_errno)
{
    if (write_errno == 0 && fflush(stdout) != 0)
        write_errno = errno;
    if (write_errno != 0 || ferror(stdout)) {
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

int cli_build_layout(const char *cmd, const cli_layout_args *args,
                     idm_layout **out)
{
    const char *spec = args->spec != NULL ? args->spec : CLI_DEFAULT_LAYOUT;
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
    if (args->epoch != NULL) {
        idm_unix_ms t;
        int rc = idm_time_parse(args->epoch, &t);
        if (rc != 0) {
            cli_lib_error(cmd, rc, "bad --epoch '%s'", args->epoch);
            return CLI_USAGE;
        }
    } else if (!preset) {
        cli_error(cmd, "layout '%s' is a text form and needs --epoch T "
                  "(unix ms or ISO-8601)", spec);
        return CLI_USAGE;
    }
    int rc = idm_layout_from_spec(out, spec, args->epoch);
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

void cli_print_decoded(FILE *out, const idm_layout *l, uint64_t id,
                       const idm_decoded *d, bool json)
{
    char idtext[CLI_U64_TEXT_MAX];
    char when[IDM_TIME_TEXT_MAX];
    cli_u64_dec(id, idtext);
    bool have_time = cli_time_text(d->unix_ms, when);

    if (json) {
        fprintf(out, "{\"id\":\"%s\",\"time\":", idtext);
        if (have_time)
            fprintf(out, "\"%s\"", when);
        else
            fputs("null", out);
        fprintf(out, ",\"unix_ms\":%lld", (long long)d->unix_ms);
    } else {
        fprintf(out, "%s time=%s unix_ms=%lld", idtext,
                have_time ? when : "-", (long long)d->unix_ms);
    }
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || f.kind == IDM_FIELD_TIME)
            continue;
        char v[CLI_U64_TEXT_MAX];
        cli_u64_dec(d->value[i], v);
        if (json)
            fprintf(out, ",\"%s\":%s", f.name, v);
        else
            fprintf(out, " %s=%s", f.name, v);
    }
    fputs(json ? "}\n" : "\n", out);
}
