/* SPDX-License-Identifier: MIT */
/*
 * `idmint lease`: look at and hold worker-id leases (see <idmint/lease.h>).
 *   lease list URL   one line per worker id that has a record
 *   lease hold URL   claim a worker id and keep it until SIGINT or SIGTERM
 * Also the helpers `idmint next --lease` shares: claiming, reporting a
 * lease error in one line, and waiting out a dead holder's mark.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The layout of the generator `lease hold` attaches (it never mints): a
 * 16-bit worker field holds any id the library hands out. Its epoch is
 * 1970, so that a generator that minted nothing reports its last tick as
 * time 0 and releasing the lease keeps the record's mark as it was (with a
 * later epoch, a fresh record would get that epoch as its mark). */
#define HOLD_LAYOUT "time:47@1ms,worker:16,seq:1"
#define HOLD_EPOCH INT64_C(0)

static const char usage_text[] =
    "usage: idmint lease list URL [--max N] [--json]\n"
    "       idmint lease hold URL [--max N] [--ttl MS]\n"
    "\n"
    "Worker-id leases: a process claims a worker id from a coordinator, so\n"
    "that no two processes mint with the same one (see idmint next --lease).\n"
    "URL names the coordinator: file:///DIR, one lock file per worker id in\n"
    "DIR (created if missing; one machine only), or\n"
    "etcd://HOST:PORT[,HOST:PORT...]/PREFIX, an etcd v3 cluster.\n"
    "\n"
    "  list                   print each worker id that has a record:\n"
    "                         worker=N held=yes|no mark=ISO mark_ms=MS holder=TEXT\n"
    "  hold                   claim a free worker id, print\n"
    "                         worker=N mark_ms=MS (the previous holder's mark)\n"
    "                         and keep it, renewed, until SIGINT or SIGTERM\n"
    "\n"
    "      --max N            worker ids 0 to N-1 (1 to 65536, default 1024)\n"
    "      --json             list: one JSON object per line\n"
    "      --ttl MS           hold: the lease's TTL in ms, 1000 to 3600000\n"
    "                         (default 10000)\n"
    "  -h, --help             show this help\n";

enum { OPT_HELP, OPT_MAX, OPT_JSON, OPT_TTL };

static const cli_opt list_options[] = {
    {"help", 'h', false, OPT_HELP},
    {"max", 0, true, OPT_MAX},
    {"json", 0, false, OPT_JSON},
    {NULL, 0, false, 0},
};

static const cli_opt hold_options[] = {
    {"help", 'h', false, OPT_HELP},
    {"max", 0, true, OPT_MAX},
    {"ttl", 0, true, OPT_TTL},
    {NULL, 0, false, 0},
};

/* ---- helpers shared with `idmint next --lease` ---- */

int cli_parse_lease_ttl(const char *cmd, const char *opt, const char *text,
                        int64_t *ttl_ms)
{
    uint64_t v;
    int rc = idm_u64_parse(text, &v);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad %s '%s'", opt, text);
        return CLI_USAGE;
    }
    if (v < CLI_LEASE_TTL_MIN || v > CLI_LEASE_TTL_MAX) {
        cli_error(cmd, "bad %s '%s': must be %d to %d ms", opt, text,
                  CLI_LEASE_TTL_MIN, CLI_LEASE_TTL_MAX);
        return CLI_USAGE;
    }
    *ttl_ms = (int64_t)v;
    return CLI_OK;
}

int cli_lease_error(const char *cmd, int rc, const char *what)
{
    /* The library's codes name state files (IDM_EBUSY: "state file is
     * locked..."); its detail line says what happened to the lease. */
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", idm_error_detail());
    const char *d = detail;
    if (strncmp(d, "lease: ", 7) == 0)
        d += 7;
    if (d[0] != '\0')
        cli_error(cmd, "%s: %s", what, d);
    else
        cli_error(cmd, "%s: %s", what, idm_strerror(rc));
    return rc == IDM_EINVAL ? CLI_USAGE : CLI_FAIL;
}

int cli_lease_claim(const char *cmd, const char *url, uint32_t max_workers,
                    int64_t ttl_ms, const char *scope, idm_lease **out)
{
    idm_lease_opts lo;
    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.max_workers = max_workers;
    lo.ttl_ms = ttl_ms;
    lo.scope = scope;
    int rc = idm_lease_open(out, &lo);
    if (rc != 0)
        return cli_lease_error(cmd, rc, "cannot claim a worker id");
    return CLI_OK;
}

static idm_unix_ms wall_ms(void)
{
    const idm_clock *c = idm_clock_system();
    idm_wall_ns ns = c->wall_ns(c->ctx);
    return ns >= 0 ? ns / 1000000 : -((-ns + 999999) / 1000000);
}

int cli_lease_wait_mark(const char *cmd, idm_unix_ms mark,
                        int64_t max_wait_ms, bool verbose)
{
    idm_unix_ms now = wall_ms();
    if (now > mark)
        return CLI_OK;
    if (mark - now > max_wait_ms) {
        char when[IDM_TIME_TEXT_MAX];
        if (!cli_time_text(mark, when))
            snprintf(when, sizeof when, "%lld", (long long)mark);
        cli_error(cmd, "the previous holder's mark, %s, is %lld ms ahead of "
                  "the clock, more than the %lld ms this waits (was the "
                  "clock set back?)", when, (long long)(mark - now),
                  (long long)max_wait_ms);
        return CLI_FAIL;
    }
    if (verbose)
        cli_note(cmd, "waiting %lld ms for the clock to pass the previous "
                 "holder's mark", (long long)(mark - now + 1));
    /* The claim holds meanwhile: no renewal is needed before attach for the
     * file backend, whose lock lasts as long as the process. */
    while ((now = wall_ms()) <= mark) {
        int64_t step = mark - now + 1;
        if (step > 100)
            step = 100;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
    }
    return CLI_OK;
}

/* ---- lease list / lease hold ---- */

static int parse_max(const char *cmd, const char *text, uint32_t *out)
{
    uint64_t v;
    int rc = idm_u64_parse(text, &v);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad --max '%s'", text);
        return CLI_USAGE;
    }
    if (v < 1 || v > CLI_LEASE_MAX_WORKERS) {
        cli_error(cmd, "bad --max '%s': must be 1 to %u", text,
                  CLI_LEASE_MAX_WORKERS);
        return CLI_USAGE;
    }
    *out = (uint32_t)v;
    return CLI_OK;
}

/* Common arguments of list and hold. */
typedef struct lease_args {
    const char *url;
    uint32_t max_workers;
    bool json;
    int64_t ttl_ms;
} lease_args;

static int parse_args(const char *cmd, const cli_opt *options, int argc,
                      char **argv, lease_args *a, bool *help)
{
    cli_parser p;
    const char *v;
    int id;
    a->url = NULL;
    a->max_workers = 1024;
    a->json = false;
    a->ttl_ms = CLI_LEASE_TTL_DEFAULT;
    cli_parser_init(&p, cmd, options, argc, argv);
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR:
            return CLI_USAGE;
        case CLI_OPT_POS:
            if (a->url != NULL) {
                cli_error(cmd, "unexpected argument '%s'", v);
                return CLI_USAGE;
            }
            a->url = v;
            break;
        case OPT_HELP:
            *help = true;
            return CLI_OK;
        case OPT_MAX:
            if (parse_max(cmd, v, &a->max_workers) != CLI_OK)
                return CLI_USAGE;
            break;
        case OPT_JSON:
            a->json = true;
            break;
        case OPT_TTL:
            if (cli_parse_lease_ttl(cmd, "--ttl", v, &a->ttl_ms) != CLI_OK)
                return CLI_USAGE;
            break;
        default:
            break;
        }
    }
    if (a->url == NULL) {
        cli_error(cmd, "missing URL (file:///DIR or etcd://HOST:PORT/PREFIX)");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* The holder text, made safe for one line of text or a JSON string. */
static void holder_text(const char *in, bool json, char *out, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)in; *s != '\0'; s++) {
        char e[8];
        size_t k = 0;
        if (*s <= ' ' || *s >= 0x7f) {
            if (json && *s == ' ') {
                e[k++] = ' ';
            } else if (json) {
                memcpy(e, "\\u00", 4);
                k = 4;
                e[k++] = hex[*s >> 4];
                e[k++] = hex[*s & 15];
            } else {
                e[k++] = '\\';
                e[k++] = 'x';
                e[k++] = hex[*s >> 4];
                e[k++] = hex[*s & 15];
            }
        } else if (json && (*s == '"' || *s == '\\')) {
            e[k++] = '\\';
            e[k++] = (char)*s;
        } else if (!json && *s == '\\') {
            e[k++] = '\\';
            e[k++] = '\\';
        } else {
            e[k++] = (char)*s;
        }
        if (n + k + 1 > len)
            break;
        memcpy(out + n, e, k);
        n += k;
    }
    out[n] = '\0';
}

static int cmd_list(int argc, char **argv)
{
    const char *cmd = "lease list";
    lease_args a;
    bool help = false;
    int status = parse_args(cmd, list_options, argc, argv, &a, &help);
    if (status != CLI_OK || help) {
        if (help)
            fputs(usage_text, stdout);
        return status;
    }

    idm_lease_entry *e = NULL;
    size_t count = 0;
    int rc = idm_lease_list(a.url, a.max_workers, &e, &count);
    if (rc != 0)
        return cli_lease_error(cmd, rc, "cannot list the leases");

    signal(SIGPIPE, SIG_IGN);
    int write_errno = 0;
    for (size_t i = 0; i < count && write_errno == 0; i++) {
        char when[IDM_TIME_TEXT_MAX];
        char holder[4 * sizeof e[i].holder + 1];
        bool have_time = e[i].mark_ms > 0 && cli_time_text(e[i].mark_ms, when);
        holder_text(e[i].holder, a.json, holder, sizeof holder);
        if (a.json) {
            printf("{\"worker\":%u,\"held\":%s,\"mark\":", (unsigned)e[i].worker,
                   e[i].held ? "true" : "false");
            if (have_time)
                printf("\"%s\"", when);
            else
                fputs("null", stdout);
            printf(",\"mark_ms\":%lld,\"holder\":\"%s\"}\n",
                   (long long)e[i].mark_ms, holder);
        } else {
            printf("worker=%u held=%s mark=%s mark_ms=%lld holder=%s\n",
                   (unsigned)e[i].worker, e[i].held ? "yes" : "no",
                   have_time ? when : "-", (long long)e[i].mark_ms,
                   holder[0] != '\0' ? holder : "-");
        }
        if (ferror(stdout))
            write_errno = errno;
    }
    free(e);
    return cli_output_status(cmd, write_errno);
}

static volatile sig_atomic_t hold_signal = 0;

static void on_hold_signal(int sig)
{
    hold_signal = sig;
}

static int cmd_hold(int argc, char **argv)
{
    const char *cmd = "lease hold";
    lease_args a;
    bool help = false;
    int status = parse_args(cmd, hold_options, argc, argv, &a, &help);
    if (status != CLI_OK || help) {
        if (help)
            fputs(usage_text, stdout);
        return status;
    }

    /* Handlers first: a SIGTERM right after the claim still releases it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_hold_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    idm_layout *l = NULL;
    int rc = idm_layout_parse(&l, HOLD_LAYOUT, HOLD_EPOCH);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "cannot build the holding layout");
        return CLI_FAIL;
    }
    idm_lease *lease = NULL;
    status = cli_lease_claim(cmd, a.url, a.max_workers, a.ttl_ms, NULL, &lease);
    if (status != CLI_OK) {
        idm_layout_free(l);
        return status;
    }
    uint32_t worker = idm_lease_worker(lease);

    /* The lease feeds a guarded generator; this one never mints, so it
     * needs no after_ms, and closing the lease records the previous
     * holder's mark unchanged. */
    idm_snowflake_opts so;
    idm_snowflake_opts_init(&so);
    so.layout = l;
    so.guarded = true;
    idm_snowflake *g = NULL;
    rc = idm_snowflake_opts_node(&so, "worker", worker);
    if (rc == 0)
        rc = idm_snowflake_open(&g, &so);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "cannot start the holding generator");
        idm_lease_close(lease);
        idm_layout_free(l);
        return CLI_FAIL;
    }
    rc = idm_lease_attach(lease, g);
    if (rc != 0) {
        cli_lease_error(cmd, rc, "cannot renew the lease");
        idm_lease_close(lease);
        idm_snowflake_close(g);
        idm_layout_free(l);
        return CLI_FAIL;
    }

    printf("worker=%u mark_ms=%lld\n", (unsigned)worker,
           (long long)idm_lease_mark(lease));
    int write_errno = fflush(stdout) != 0 || ferror(stdout) ? errno : 0;
    status = CLI_OK;
    if (write_errno != 0 || ferror(stdout)) {
        cli_output_status(cmd, write_errno);
        status = CLI_FAIL;
    }

    while (status == CLI_OK && hold_signal == 0) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        idm_lease_status st;
        idm_lease_status_get(lease, &st);
        if (st.lost) {
            cli_error(cmd, "the lease on worker %u was lost (its record was "
                      "removed or replaced)", (unsigned)worker);
            status = CLI_FAIL;
        }
    }

    rc = idm_lease_close(lease);
    if (rc != 0 && status == CLI_OK) {
        cli_lease_error(cmd, rc, "releasing the lease");
        status = CLI_FAIL;
    }
    idm_snowflake_close(g);
    idm_layout_free(l);
    return status;
}

int cli_cmd_lease(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("lease", "missing subcommand: list or hold (try 'idmint "
                  "lease --help')");
        return CLI_USAGE;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        if (argc > 2) {
            cli_error("lease", "unexpected argument '%s' after %s", argv[2],
                      sub);
            return CLI_USAGE;
        }
        fputs(usage_text, stdout);
        return CLI_OK;
    }
    if (strcmp(sub, "list") == 0)
        return cmd_list(argc - 1, argv + 1);
    if (strcmp(sub, "hold") == 0)
        return cmd_hold(argc - 1, argv + 1);
    cli_error("lease", "unknown subcommand '%s': use list or hold", sub);
    return CLI_USAGE;
}
