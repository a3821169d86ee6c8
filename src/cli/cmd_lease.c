/* SPDX-License-Identifier: MIT */
/*
 * `idmint lease`: look at and hold worker-id leases (see <idmint/lease.h>).
 *   lease list URL   one line per worker id that has a record
 *   lease hold URL   claim a worker id and keep it until SIGINT or SIGTERM
 * Also the helpers `idmint next --lease` shares: the TTL option and
 * reporting a lease error in one line.
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
    "DIR (created if missing; one machine only);\n"
    "etcd://HOST:PORT[,HOST:PORT...]/PREFIX, an etcd v3 cluster;\n"
    "etcds://HOST:PORT[,...]/PREFIX[?cacert=F&cert=F&key=F&user=U&password-file=F],\n"
    "the same over TLS, with etcd authentication;\n"
    "zk://HOST:PORT[,HOST:PORT...]/PREFIX, a ZooKeeper ensemble; or\n"
    "postgres://USER@HOST:PORT/DB[?...], a PostgreSQL table (libpq URI;\n"
    "keep passwords in ~/.pgpass or passfile=FILE, not in the URL).\n"
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

enum { OPT_MAX = CLI_ID_OWN, OPT_TTL };

static const cli_opt list_options[] = {
    CLI_ROW_HELP, {"max", 0, true, OPT_MAX}, CLI_ROW_JSON, CLI_ROW_END,
};

static const cli_opt hold_options[] = {
    CLI_ROW_HELP, {"max", 0, true, OPT_MAX}, {"ttl", 0, true, OPT_TTL}, CLI_ROW_END,
};

static int check_opt(void *ctx, const char *cmd, int id, const char *v);

static const cli_spec list_spec = {"lease list", usage_text, list_options, 1, 0, 0, check_opt};
static const cli_spec hold_spec = {"lease hold", usage_text, hold_options, 1, 0, 0, check_opt};

/* ---- helpers shared with `idmint next --lease` ---- */

int cli_parse_lease_ttl(const char *cmd, const char *opt, const char *text,
                        int64_t *ttl_ms)
{
    char range[64];
    snprintf(range, sizeof range, "%lld to %lld ms", (long long)IDM_LEASE_TTL_MIN_MS,
             (long long)IDM_LEASE_TTL_MAX_MS);
    uint64_t v;
    if (cli_parse_u64(cmd, opt, text, (uint64_t)IDM_LEASE_TTL_MIN_MS,
                      (uint64_t)IDM_LEASE_TTL_MAX_MS, range, &v) != CLI_OK)
        return CLI_USAGE;
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

/* ---- lease list / lease hold ---- */

/* Common arguments of list and hold. */
typedef struct lease_args {
    uint32_t max_workers;
    int64_t ttl_ms;
} lease_args;

/* cli_spec.check: --max and --ttl, as they come. */
static int check_opt(void *ctx, const char *cmd, int id, const char *v)
{
    lease_args *a = ctx;
    if (id == OPT_TTL)
        return cli_parse_lease_ttl(cmd, "--ttl", v, &a->ttl_ms);
    if (id != OPT_MAX)
        return CLI_OK;
    char range[32];
    snprintf(range, sizeof range, "1 to %u", (unsigned)IDM_LEASE_WORKERS_MAX);
    uint64_t n;
    if (cli_parse_u64(cmd, "--max", v, 1, IDM_LEASE_WORKERS_MAX, range, &n) != CLI_OK)
        return CLI_USAGE;
    a->max_workers = (uint32_t)n;
    return CLI_OK;
}

/* The holder text, made safe for one line of text or a JSON string. */
static void holder_text(const char *in, bool json, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)in; *s != '\0'; s++) {
        char e[8];
        size_t k = 0;
        if (*s < ' ' || *s >= 0x7f || (!json && *s == ' ')) {
            k = (size_t)snprintf(e, sizeof e, json ? "\\u%04x" : "\\x%02x", *s);
        } else if (*s == '\\' || (json && *s == '"')) {
            e[k++] = '\\';
            e[k++] = (char)*s;
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

static int cmd_list(const char *url, const lease_args *a, bool json)
{
    const char *cmd = list_spec.cmd;
    idm_lease_entry *e = NULL;
    size_t count = 0;
    int rc = idm_lease_list(url, a->max_workers, &e, &count);
    if (rc != 0)
        return cli_lease_error(cmd, rc, "cannot list the leases");

    signal(SIGPIPE, SIG_IGN);
    int write_errno = 0;
    for (size_t i = 0; i < count && write_errno == 0; i++) {
        char when[IDM_TIME_TEXT_MAX];
        char holder[4 * sizeof e[i].holder + 1];
        bool have_time = e[i].mark_ms > 0 && cli_time_text(e[i].mark_ms, when);
        holder_text(e[i].holder, json, holder, sizeof holder);
        if (json) {
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

/*
 * Claim a worker id (no scope: `lease hold` has no layout) and attach it
 * to a generator of the holding layout that never mints, so that the lease
 * is renewed and, on release, records the previous holder's mark
 * unchanged. On failure prints why, holds nothing and returns the exit
 * status.
 */
static int hold_start(const char *cmd, const char *url, const lease_args *a,
                      idm_layout **l, idm_lease **lease, idm_snowflake **g)
{
    int rc = idm_layout_parse(l, HOLD_LAYOUT, HOLD_EPOCH);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "cannot build the holding layout");
        return CLI_FAIL;
    }
    idm_lease_opts lo;
    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.max_workers = a->max_workers;
    lo.ttl_ms = a->ttl_ms;
    rc = idm_lease_open(lease, &lo);
    if (rc != 0) {
        idm_layout_free(*l);
        return cli_lease_error(cmd, rc, "cannot claim a worker id");
    }
    idm_snowflake_opts so;
    idm_snowflake_opts_init(&so);
    so.layout = *l;
    so.guarded = true;
    rc = idm_snowflake_opts_node(&so, "worker", idm_lease_worker(*lease));
    if (rc == 0)
        rc = idm_snowflake_open(g, &so);
    if (rc != 0)
        cli_lib_error(cmd, rc, "cannot start the holding generator");
    else if ((rc = idm_lease_attach(*lease, *g)) != 0)
        cli_lease_error(cmd, rc, "cannot renew the lease");
    if (rc != 0) {
        idm_lease_close(*lease);
        idm_snowflake_close(*g);
        idm_layout_free(*l);
        return CLI_FAIL;
    }
    return CLI_OK;
}

static int cmd_hold(const char *url, const lease_args *a)
{
    const char *cmd = hold_spec.cmd;
    /* Handlers first: a SIGTERM right after the claim still releases it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_hold_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    idm_layout *l = NULL;
    idm_lease *lease = NULL;
    idm_snowflake *g = NULL;
    int status = hold_start(cmd, url, a, &l, &lease, &g);
    if (status != CLI_OK)
        return status;
    uint32_t worker = idm_lease_worker(lease);
    printf("worker=%u mark_ms=%lld\n", (unsigned)worker,
           (long long)idm_lease_mark(lease));
    int write_errno = fflush(stdout) != 0 || ferror(stdout) ? errno : 0;
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

    int rc = idm_lease_close(lease);
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
    const cli_spec *spec = strcmp(sub, "list") == 0   ? &list_spec
                           : strcmp(sub, "hold") == 0 ? &hold_spec
                                                      : NULL;
    if (spec == NULL) {
        cli_error("lease", "unknown subcommand '%s': use list or hold", sub);
        return CLI_USAGE;
    }
    cli_args args;
    lease_args a = {1024, IDM_LEASE_TTL_DEFAULT_MS};
    int status = cli_parse_args(spec, argc - 1, argv + 1, &args, &a);
    if (status != CLI_OK || args.help)
        return status;
    if (args.pos_count == 0) {
        cli_error(spec->cmd, "missing URL (file:///DIR, etcd://, etcds://, zk:// or postgres://)");
        return CLI_USAGE;
    }
    if (spec == &list_spec)
        return cmd_list(args.pos[0], &a, cli_given(&args, CLI_ID_JSON));
    return cmd_hold(args.pos[0], &a);
}
