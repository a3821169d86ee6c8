/* SPDX-License-Identifier: MIT */
/*
 * `idmint audit`: read ids people already have (a table's ids and the
 * times their rows were recorded, one per line, as psql -At or a CSV
 * export gives them) and say what went wrong with them: duplicates, two
 * processes on one worker id, clock steps, ids from the future or before
 * the epoch, skewed hosts, busy ticks. The engine is audit.c; this file
 * reads the options and the files, and turns the findings into an exit
 * status. Every line is checked before the report is printed: bad input
 * prints no report, only the file and line that was wrong.
 */
#include "audit.h"
#include "audit_pg.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: idmint audit [--layout NAME|TEXT] [--epoch T] [--kind KIND] [--json]\n"
    "                    [--plot FILE.svg] [--future-ms N] [--skew-ms N] [--step-ms N]\n"
    "                    [--memory SIZE] [FILE... | --postgres URL --query SQL]\n"
    "\n"
    "Audit ids already minted. Each line of the FILEs (stdin when none or\n"
    "\"-\") holds one id, optionally followed by a space, tab, comma or '|'\n"
    "and the time its row was recorded (ISO 8601 or Unix ms), in recorded\n"
    "order, e.g. the output of\n"
    "  psql -At -c \"SELECT id, created_at FROM t ORDER BY created_at\"\n"
    "Blank lines and lines starting with '#' are skipped, and so is a CSV\n"
    "header line. The report's line numbers count across the FILEs as if\n"
    "they were one; messages about bad input name the file and its line.\n"
    "\n"
    "Findings, most serious first: duplicate, two-writers (two processes on\n"
    "one worker id), clock-step (a worker's id time going backwards), future,\n"
    "before-epoch, skew (a worker's ids off the recorded time), and as\n"
    "information capacity (busiest tick) and workers (worker ids in use).\n"
    "\n"
    "      --kind KIND        snowflake, uuid7, ulid or objectid (default: told\n"
    "                         from the first id's form)\n"
    CLI_HELP_LAYOUT
    "      --json             the report as one JSON document\n"
    "      --plot FILE.svg    also draw each worker's offset over time, steps\n"
    "                         marked (needs recorded times)\n"
    "      --future-ms N      an id more than N ms past its recorded time is\n"
    "                         from the future (default 60000)\n"
    "      --skew-ms N        report a worker whose median offset is beyond N ms\n"
    "                         (default 1000)\n"
    "      --step-ms N        a worker's id time going back by N ms or less is\n"
    "                         rows recorded out of mint order, not a clock step\n"
    "                         (default 0; give it when recorded times come\n"
    "                         from inserts racing each other)\n"
    "      --memory SIZE      memory for the duplicate check (bytes, or with K,\n"
    "                         M or G; default 2G): beyond it, sorted runs go to\n"
    "                         files in $TMPDIR (default /tmp)\n"
    "      --postgres URL     read the rows of --query from PostgreSQL (a libpq\n"
    "      --query SQL        URI) through a server-side cursor: column 1 the id,\n"
    "                         column 2 (optional) the recorded time\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 clean (or findings that are not errors), 1 a duplicate, two\n"
    "writers or a clock step, 2 bad usage or input (FILE:LINE: what was wrong).\n";

enum {
    OPT_KIND = CLI_ID_OWN,
    OPT_PLOT,
    OPT_FUTURE,
    OPT_SKEW,
    OPT_STEP,
    OPT_MEMORY,
    OPT_POSTGRES,
    OPT_QUERY
};

static const cli_opt options[] = {
    CLI_ROW_HELP,
    CLI_ROWS_LAYOUT,
    CLI_ROW_JSON,
    {"kind", 0, true, OPT_KIND},
    {"plot", 0, true, OPT_PLOT},
    {"future-ms", 0, true, OPT_FUTURE},
    {"skew-ms", 0, true, OPT_SKEW},
    {"step-ms", 0, true, OPT_STEP},
    {"memory", 0, true, OPT_MEMORY},
    {"postgres", 0, true, OPT_POSTGRES},
    {"query", 0, true, OPT_QUERY},
    CLI_ROW_END,
};

static const cli_spec spec = {"audit", usage_text, options, CLI_POS_ANY, 0, 0, NULL};

static const char *const kind_names[] = {"snowflake", "uuid7", "ulid", "objectid", "uuid",
                                         NULL};

/* Read one file (or stdin) into the audit. CLI_OK, or the exit status after
 * printing why. Messages name the file's own line; the report numbers the
 * lines across all the files as if they were one (*base: lines before this
 * file). */
static int read_file(audit *au, const char *path, uint64_t *base)
{
    bool is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "stdin" : path;
    FILE *f = is_stdin ? stdin : fopen(path, "r");
    if (f == NULL) {
        cli_error("audit", "%s: cannot open: %s", name, strerror(errno));
        return CLI_USAGE;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t line_no = 0;
    int status = CLI_OK;
    char err[256];
    while (status == CLI_OK && (n = getline(&line, &cap, f)) >= 0) {
        line_no++;
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        err[0] = '\0';
        int rc = audit_add_line(au, line, len, *base + line_no, err, sizeof err);
        if (rc == 0)
            continue;
        if (err[0] != '\0') {
            /* The engine says "line N: what"; the command "FILE:N: what". */
            const char *what = err;
            if (strncmp(what, "line ", 5) == 0 && (what = strstr(what, ": ")) != NULL)
                what += 2;
            else
                what = err;
            cli_error("audit", "%s:%llu: %s", name, (unsigned long long)line_no, what);
            status = CLI_USAGE;
        } else {
            cli_lib_error("audit", rc, "%s:%llu", name, (unsigned long long)line_no);
            status = CLI_FAIL;
        }
    }
    if (status == CLI_OK && ferror(f)) {
        cli_error("audit", "%s: cannot read: %s", name, strerror(errno));
        status = CLI_USAGE;
    }
    free(line);
    if (!is_stdin)
        fclose(f);
    *base += line_no;
    return status;
}

static int write_plot(const audit *au, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        cli_error("audit", "%s: cannot write the plot: %s", path, strerror(errno));
        return CLI_FAIL;
    }
    int rc = audit_write_svg(au, f);
    if (fclose(f) != 0 || rc != 0) {
        cli_error("audit", "%s: cannot write the plot", path);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* A size: a whole number of bytes, or of KiB, MiB, GiB or TiB with a
 * suffix K, M, G or T (KiB, MiB, ... and KB, MB, ... say the same). */
static int parse_size(const char *opt, const char *text, size_t *out)
{
    static const char units[] = "KMGT";
    const char *s = text;
    uint64_t v = 0;
    bool digits = false;
    for (; *s >= '0' && *s <= '9'; s++) {
        digits = true;
        if (v > (UINT64_MAX - 9) / 10)
            goto bad;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (!digits)
        goto bad;
    if (*s != '\0') {
        const char *u = strchr(units, *s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s);
        if (u == NULL || *u == '\0')
            goto bad;
        s++;
        if (strcmp(s, "") != 0 && strcmp(s, "B") != 0 && strcmp(s, "iB") != 0)
            goto bad;
        for (long i = 0; i <= u - units; i++) {
            if (v > UINT64_MAX / 1024)
                goto bad;
            v *= 1024;
        }
    }
    if (v < AUDIT_MEM_MIN || v > SIZE_MAX / 2) {
        cli_error("audit", "bad %s '%s': must be at least %zuM", opt, text,
                  AUDIT_MEM_MIN >> 20);
        return CLI_USAGE;
    }
    *out = (size_t)v;
    return CLI_OK;
bad:
    cli_error("audit", "bad %s '%s': must be a size in bytes, or with K, M, G or T", opt,
              text);
    return CLI_USAGE;
}

/* Where the rows come from: FILEs (or stdin), or --postgres and --query. */
static int check_source(const cli_args *a)
{
    bool pg = cli_given(a, OPT_POSTGRES), q = cli_given(a, OPT_QUERY);
    if (pg != q) {
        cli_error("audit", "--%s needs --%s", pg ? "postgres" : "query",
                  pg ? "query" : "postgres");
        return CLI_USAGE;
    }
    if (pg && a->pos_count > 0) {
        cli_error("audit", "'%s': give either files or --postgres, not both", a->pos[0]);
        return CLI_USAGE;
    }
    if (q && a->opt[OPT_QUERY][0] == '\0') {
        cli_error("audit", "--query needs a query");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* The rows of --query into the audit. */
static int read_postgres(audit *au, const cli_args *a)
{
    char err[512];
    uint64_t rows = 0;
    err[0] = '\0';
    int rc = audit_read_postgres(au, a->opt[OPT_POSTGRES], a->opt[OPT_QUERY], &rows, err,
                                 sizeof err);
    if (rc == 0)
        return CLI_OK;
    if (err[0] != '\0')
        cli_error("audit", "%s", err);
    else
        cli_lib_error("audit", rc, "after row %llu", (unsigned long long)rows);
    return rc == IDM_EINVAL || rc == IDM_EPARSE ? CLI_USAGE : CLI_FAIL;
}

/* The options into o (and the layout, for Snowflake ids). */
static int build_opts(const cli_args *a, audit_opts *o, idm_layout **l)
{
    audit_opts_init(o);
    int kind = cli_choice("audit", "--kind", a->opt[OPT_KIND], kind_names, 100);
    if (kind < 0)
        return CLI_USAGE;
    /* "uuid" (the fifth name) is "uuid7"; no --kind: told from the ids. */
    o->kind = kind == 100 ? AUDIT_AUTO : kind == 4 ? AUDIT_UUID7 : (audit_kind)kind;
    uint64_t v;
    if (cli_given(a, OPT_FUTURE)) {
        if (cli_parse_u64("audit", "--future-ms", a->opt[OPT_FUTURE], 0, INT64_C(1) << 40,
                          "0 to 2^40", &v) != CLI_OK)
            return CLI_USAGE;
        o->future_ms = (int64_t)v;
    }
    if (cli_given(a, OPT_SKEW)) {
        if (cli_parse_u64("audit", "--skew-ms", a->opt[OPT_SKEW], 0, INT64_C(1) << 40,
                          "0 to 2^40", &v) != CLI_OK)
            return CLI_USAGE;
        o->skew_ms = (int64_t)v;
    }
    if (cli_given(a, OPT_STEP)) {
        if (cli_parse_u64("audit", "--step-ms", a->opt[OPT_STEP], 0, INT64_C(1) << 40,
                          "0 to 2^40", &v) != CLI_OK)
            return CLI_USAGE;
        o->step_ms = (int64_t)v;
    }
    if (cli_given(a, OPT_MEMORY) &&
        parse_size("--memory", a->opt[OPT_MEMORY], &o->mem_bytes) != CLI_OK)
        return CLI_USAGE;
    if (check_source(a) != CLI_OK)
        return CLI_USAGE;
    if (cli_given(a, OPT_PLOT) && a->opt[OPT_PLOT][0] == '\0') {
        cli_error("audit", "--plot needs a file name");
        return CLI_USAGE;
    }
    bool wide = o->kind == AUDIT_UUID7 || o->kind == AUDIT_ULID || o->kind == AUDIT_OBJECTID;
    if (wide && (cli_given(a, CLI_ID_LAYOUT) || cli_given(a, CLI_ID_EPOCH))) {
        cli_error("audit", "--%s applies to Snowflake-style ids only, not to --kind %s",
                  cli_given(a, CLI_ID_LAYOUT) ? "layout" : "epoch", a->opt[OPT_KIND]);
        return CLI_USAGE;
    }
    if (!wide) {
        int status = cli_build_layout("audit", a, l);
        if (status != CLI_OK)
            return status;
        o->layout = *l;
    }
    return CLI_OK;
}

int cli_cmd_audit(int argc, char **argv)
{
    cli_args a;
    int status = cli_parse_args(&spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    audit_opts o;
    idm_layout *l = NULL;
    audit *au = NULL;
    status = build_opts(&a, &o, &l);
    if (status == CLI_OK) {
        int rc = audit_new(&au, &o);
        if (rc != 0) {
            cli_lib_error("audit", rc, "cannot start the audit");
            status = rc == IDM_EINVAL ? CLI_USAGE : CLI_FAIL;
        }
    }
    uint64_t base = 0;
    if (status == CLI_OK && cli_given(&a, OPT_POSTGRES))
        status = read_postgres(au, &a);
    else if (status == CLI_OK && a.pos_count == 0)
        status = read_file(au, "-", &base);
    for (size_t i = 0; status == CLI_OK && i < a.pos_count; i++)
        status = read_file(au, a.pos[i], &base);
    if (status == CLI_OK) {
        int rc = audit_finish(au);
        if (rc != 0) {
            cli_lib_error("audit", rc, "cannot finish the audit");
            status = CLI_FAIL;
        }
    }
    if (status == CLI_OK && cli_given(&a, OPT_PLOT))
        status = write_plot(au, a.opt[OPT_PLOT]);
    if (status == CLI_OK) {
        if (cli_given(&a, CLI_ID_JSON))
            audit_write_json(au, stdout);
        else
            audit_write_text(au, stdout);
        status = audit_exit_status(au) ? CLI_FAIL : CLI_OK;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            cli_error("audit", "cannot write the report: %s", strerror(errno));
            status = CLI_FAIL;
        }
    }
    audit_free(au);
    idm_layout_free(l);
    return status;
}
