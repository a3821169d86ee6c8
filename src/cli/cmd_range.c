/* SPDX-License-Identifier: MIT */
/*
 * `idmint range`: the smallest and largest id whose time lies in a window
 * [FROM, TO), for selecting rows by time through their id.
 *
 * The bounds are unsigned. When they pass 2^63-1 (a layout that uses the
 * sign bit, late enough), a warning on stderr says that signed 64-bit
 * columns cannot hold them and gives the condition for ids kept there by
 * their bits (as a Java long or a PostgreSQL bigint takes them: the id
 * minus 2^64); stdout stays as it is.
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

static const char usage_text[] =
    "usage: idmint range FROM TO [--layout NAME|TEXT] [--epoch T] [--json]\n"
    "\n"
    "Print the smallest and largest id whose time lies in [FROM, TO):\n"
    "  min=ID max=ID\n"
    "  WHERE id BETWEEN MIN AND MAX\n"
    "Bounds above 2^63-1 (a layout that uses the sign bit) come with a\n"
    "warning on stderr: signed 64-bit columns cannot hold them.\n"
    "\n"
    "  FROM, TO               unix ms or ISO-8601 (2026-01-01,\n"
    "                         2026-01-01T12:00:00Z, ...); TO is excluded\n"
    CLI_HELP_LAYOUT
    "      --json             one JSON object: from, to, min, max\n"
    "  -h, --help             show this help\n";

static const cli_opt options[] = {CLI_ROW_HELP, CLI_ROWS_LAYOUT, CLI_ROW_JSON, CLI_ROW_END};

static const cli_spec spec = {"range", usage_text, options, 2, 0, 0, NULL};

/* v as a signed 64-bit column holds its bits: v - 2^64 from 2^63 up. */
static long long as_signed(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? (long long)v
                                    : -(long long)(UINT64_MAX - v) - 1;
}

/* Warn when the bounds pass 2^63-1: say so, when the layout's ids get
 * there, and the condition for ids stored in a signed 64-bit column. */
static void warn_sign_bit(const idm_layout *l, const char *label, uint64_t lo,
                          uint64_t hi)
{
    char from_text[IDM_TIME_TEXT_MAX] = "";
    char where[160];
    idm_unix_ms from = 0;
    if (hi <= (uint64_t)INT64_MAX)
        return;
    if (!idm_layout_sign_bit(l, &from) || !cli_time_text(from, from_text))
        snprintf(from_text, sizeof from_text, "unix ms %lld", (long long)from);
    if (lo > (uint64_t)INT64_MAX)
        snprintf(where, sizeof where, "WHERE id BETWEEN %lld AND %lld",
                 as_signed(lo), as_signed(hi));
    else
        snprintf(where, sizeof where, "WHERE id >= %" PRIu64 " OR id <= %lld",
                 lo, as_signed(hi));
    cli_error("range",
              "warning: %s %s above 2^63-1, as are the ids of layout %s from "
              "%s: a signed 64-bit column (PostgreSQL bigint, Java long) "
              "cannot hold %s; keep such ids in a numeric(20) column, where "
              "the bounds work as printed, or, if they are stored in a signed "
              "column by their bits (the id minus 2^64), select them with %s",
              lo > (uint64_t)INT64_MAX ? "min and max" : "max",
              lo > (uint64_t)INT64_MAX ? "are" : "is", label, from_text,
              lo > (uint64_t)INT64_MAX ? "them" : "it", where);
}

int cli_cmd_range(int argc, char **argv)
{
    cli_args a;
    int status = cli_parse_args(&spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    char **pos = a.pos;
    size_t n = a.pos_count;
    if (n < 2) {
        cli_error("range", "%s (try 'idmint range --help')",
                  n == 0 ? "missing FROM and TO" : "missing TO");
        return CLI_USAGE;
    }

    idm_unix_ms t[2];
    static const char *const names[2] = {"FROM", "TO"};
    for (int i = 0; i < 2; i++) {
        int rc = idm_time_parse(pos[i], &t[i]);
        if (rc != 0) {
            cli_lib_error("range", rc, "bad %s time '%s'", names[i], pos[i]);
            return CLI_USAGE;
        }
    }
    if (t[1] <= t[0]) {
        cli_error("range", "empty window: TO '%s' is not after FROM '%s'",
                  pos[1], pos[0]);
        return CLI_USAGE;
    }

    idm_layout *l = NULL;
    status = cli_build_layout("range", &a, &l);
    if (status != CLI_OK)
        return status;

    /* Made first: the library's detail line must survive until printed. */
    char label[IDM_LAYOUT_TEXT_MAX];
    cli_layout_label(l, label, sizeof label);
    uint64_t lo, hi;
    int rc = idm_layout_range(l, t[0], t[1], &lo, &hi);
    if (rc != 0) {
        cli_lib_error("range", rc, "no ids of layout %s in [%s, %s)", label,
                      pos[0], pos[1]);
        idm_layout_free(l);
        return CLI_USAGE;
    }

    warn_sign_bit(l, label, lo, hi);
    char lo_text[CLI_U64_TEXT_MAX], hi_text[CLI_U64_TEXT_MAX];
    cli_u64_dec(lo, lo_text);
    cli_u64_dec(hi, hi_text);
    if (cli_given(&a, CLI_ID_JSON)) {
        char from[IDM_TIME_TEXT_MAX], to[IDM_TIME_TEXT_MAX];
        cli_time_text(t[0], from);
        cli_time_text(t[1], to);
        printf("{\"from\":\"%s\",\"to\":\"%s\",\"min\":\"%s\",\"max\":\"%s\"}\n",
               from, to, lo_text, hi_text);
    } else {
        printf("min=%s max=%s\nWHERE id BETWEEN %s AND %s\n", lo_text,
               hi_text, lo_text, hi_text);
    }
    idm_layout_free(l);
    return CLI_OK;
}
