/* SPDX-License-Identifier: MIT */
/*
 * `idmint seq`: named counters in ticket stores (see <idmint/segment.h>).
 *   seq create NAME --store URL... [--start N] [--store-timeout MS]
 *   seq next NAME --store URL... [-n N] [--store-timeout MS]
 *   seq list --store URL [--json] [--store-timeout MS]
 * With several --store options, store k of n hands out the ids that are k
 * mod n (Flickr's odd/even ticket servers): list them in the same order
 * every time. `seq next` takes exactly one block of N ids with one atomic
 * statement, from the first store that answers, and prints it: a process
 * that hands out ids for long (idmintd) uses the allocator instead.
 *
 * `seq create` checks the whole list before it writes anything: every store
 * reachable, no store listed twice (the same database under two URLs would
 * be store k and store j of n at once; the stores themselves say which
 * database they reach), and, with several stores, the sequence in none of
 * them yet. Only a store failing midway can still leave it in some.
 *
 * Every store call, the connection made at open included, ends within
 * --store-timeout (the library's IDM_STORE_TIMEOUT_MS unless given): a
 * PostgreSQL server that stopped answering (frozen, a silent network) makes
 * the command fail with "no answer within N ms", never hang. A store passed
 * over that way in `seq next` costs at most that much before the next.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <idmint/segment.h>

#include "store_within.h"

#define MAX_STORES 16

static const char usage_text[] =
    "usage: idmint seq create NAME --store URL [--store URL...] [--start N]\n"
    "       idmint seq next NAME --store URL [--store URL...] [-n N]\n"
    "       idmint seq list --store URL [--json]\n"
    "       (each also takes --store-timeout MS)\n"
    "\n"
    "Named sequences of small, dense ids, kept as counters in a ticket store\n"
    "and handed out in blocks: a crash leaves gaps, never repeats.\n"
    "URL names the store: sqlite:///PATH/FILE.db (created if missing; one\n"
    "machine, any number of processes) or postgres://USER@HOST:PORT/DB.\n"
    "Of n stores given, store k (0-based, in the order given) hands out the\n"
    "ids that are k mod n; give them in the same order every time.\n"
    "\n"
    "  create NAME            create sequence NAME in every store given\n"
    "  next NAME              print the next N ids of NAME, one per line\n"
    "  list                   print each sequence: name=NAME next=ID k=K n=N\n"
    "\n"
    "      --store URL        a ticket store (repeat for several, up to 16)\n"
    "      --start N          create: the first id (0 to 2^62-1, default 1)\n"
    "  -n, --count N          next: how many ids (1 to 10000000, default 1)\n"
    "      --json             list: one JSON object per line\n"
    "      --store-timeout MS the longest one store call may take, connecting\n"
    "                         included (1 to 3600000, default 5000): a store\n"
    "                         that does not answer in time fails the call\n"
    "  -h, --help             show this help\n";

enum { OPT_STORE = CLI_ID_OWN, OPT_START, OPT_STORE_TIMEOUT };

static const cli_opt options[] = {
    CLI_ROW_HELP, {"store", 0, true, OPT_STORE}, {"start", 0, true, OPT_START},
    {"store-timeout", 0, true, OPT_STORE_TIMEOUT}, CLI_ROW_COUNT, CLI_ROW_JSON, CLI_ROW_END,
};

typedef struct seq_args {
    unsigned takes; /* TAKES_*: what the subcommand takes */
    const char *name;
    const char *const *stores;
    size_t nstores;
    bool json;
    int64_t start;
    uint64_t count;
    int64_t timeout_ms; /* --store-timeout */
} seq_args;

/* The help text spells out the library's bounds. */
_Static_assert(IDM_STORE_TIMEOUT_MS == 5000, "seq --help names 5000 as --store-timeout's default");

/* Report a failed store call as one line; the exit status. */
static int store_error(const char *cmd, int rc, const char *what)
{
    const char *d = idm_error_detail();
    if (d[0] != '\0')
        cli_error(cmd, "%s: %s", what, d);
    else
        cli_error(cmd, "%s: %s", what, idm_strerror(rc));
    return rc == IDM_EINVAL ? CLI_USAGE : CLI_FAIL;
}

/* What a subcommand takes besides --store and --help. */
enum { TAKES_NAME = 1, TAKES_START = 2, TAKES_COUNT = 4, TAKES_JSON = 8 };

/* cli_spec.check: options the subcommand does not take are refused; the
 * values of --start and --count are checked as they come. */
static int check_opt(void *ctx, const char *cmd, int id, const char *v)
{
    static const struct {
        int id;
        unsigned need;
        const char *name;
    } gated[] = {{OPT_START, TAKES_START, "--start"},
                 {CLI_ID_COUNT, TAKES_COUNT, "-n/--count"},
                 {CLI_ID_JSON, TAKES_JSON, "--json"}};
    seq_args *a = ctx;
    for (size_t i = 0; i < sizeof gated / sizeof gated[0]; i++) {
        if (id == gated[i].id && !(a->takes & gated[i].need)) {
            cli_error(cmd, "%s does not apply here", gated[i].name);
            return CLI_USAGE;
        }
    }
    if (id == CLI_ID_COUNT)
        return cli_parse_count(cmd, v, &a->count);
    if (id == OPT_STORE_TIMEOUT) {
        uint64_t ms;
        if (cli_parse_u64(cmd, "--store-timeout", v, 1, 3600000, "1 to 3600000 (ms)", &ms) !=
            CLI_OK)
            return CLI_USAGE;
        a->timeout_ms = (int64_t)ms;
        return CLI_OK;
    }
    if (id != OPT_START)
        return CLI_OK;
    uint64_t start;
    if (cli_parse_u64(cmd, "--start", v, 0, (uint64_t)IDM_SEQ_MAX - 1, "0 to 2^62-1", &start) !=
        CLI_OK)
        return CLI_USAGE;
    a->start = (int64_t)start;
    return CLI_OK;
}

/* Read a subcommand's arguments into *a (args holds the texts). On --help
 * prints the usage and sets *done; on an error prints it. */
static int parse_args(const char *cmd, unsigned takes, int argc, char **argv, cli_args *args,
                      seq_args *a, bool *done)
{
    const cli_spec spec = {
        cmd, usage_text, options, (takes & TAKES_NAME) ? 1 : 0, OPT_STORE, MAX_STORES, check_opt,
    };
    memset(a, 0, sizeof *a);
    a->takes = takes;
    a->start = 1;
    a->count = 1;
    a->timeout_ms = IDM_STORE_TIMEOUT_MS;
    int status = cli_parse_args(&spec, argc, argv, args, a);
    *done = args->help;
    if (status != CLI_OK || *done)
        return status;
    a->name = args->pos_count > 0 ? args->pos[0] : NULL;
    a->stores = args->list;
    a->nstores = args->list_count;
    a->json = cli_given(args, CLI_ID_JSON);
    if ((takes & TAKES_NAME) && a->name == NULL) {
        cli_error(cmd, "missing NAME (try 'idmint seq --help')");
        return CLI_USAGE;
    }
    if (a->nstores == 0) {
        cli_error(cmd, "missing --store URL (sqlite:///PATH/FILE.db or postgres://...)");
        return CLI_USAGE;
    }
    return CLI_OK;
}

static void close_all(idm_store **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        idm_store_close(s[i]);
}

/* Open every store; on failure print why, close what was opened. */
static int open_all(const char *cmd, const seq_args *a, idm_store **s)
{
    for (size_t i = 0; i < a->nstores; i++) {
        int rc = idm__store_open_within(&s[i], a->stores[i], a->timeout_ms);
        if (rc != 0) {
            close_all(s, i);
            return store_error(cmd, rc, "cannot open the store");
        }
    }
    return CLI_OK;
}

/* The same database listed twice (any spelling)? Prints which and returns
 * CLI_USAGE; CLI_FAIL if a store cannot tell. */
static int check_distinct(const char *cmd, const seq_args *a, idm_store **s)
{
    char (*ids)[IDM_STORE_IDENTITY_MAX] = calloc(a->nstores, sizeof *ids);
    int status = CLI_OK;
    if (ids == NULL) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    for (size_t i = 0; i < a->nstores && status == CLI_OK; i++) {
        int rc = idm_store_identity(s[i], ids[i], sizeof ids[i]);
        if (rc != 0) {
            status = store_error(cmd, rc, "cannot tell which database a store is");
            break;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(ids[i], ids[j]) == 0) {
                cli_error(cmd,
                          "--store %s and --store %s are the same store (stores %zu and %zu "
                          "of %zu): give each store once (nothing created)",
                          idm_store_url(s[j]), idm_store_url(s[i]), j + 1, i + 1, a->nstores);
                status = CLI_USAGE;
                break;
            }
        }
    }
    free(ids);
    return status;
}

/* With several stores: is the sequence in none of them yet? Else prints
 * where it is and returns CLI_FAIL, as a create that found it would. */
static int check_absent(const char *cmd, const seq_args *a, idm_store **s)
{
    for (size_t k = 0; k < a->nstores; k++) {
        idm_seq_info *info = NULL;
        size_t count = 0;
        int rc = idm_store_list(s[k], &info, &count);
        if (rc != 0)
            return store_error(cmd, rc, "cannot create the sequence");
        for (size_t i = 0; i < count; i++) {
            if (strcmp(info[i].name, a->name) == 0) {
                cli_error(cmd,
                          "cannot create the sequence: sequence %s exists already in %s (as "
                          "store %u of %u; nothing created)",
                          a->name, idm_store_url(s[k]), (unsigned)info[i].k,
                          (unsigned)info[i].n);
                free(info);
                return CLI_FAIL;
            }
        }
        free(info);
    }
    return CLI_OK;
}

static int cmd_create(int argc, char **argv)
{
    const char *cmd = "seq create";
    cli_args args;
    seq_args a;
    idm_store *s[MAX_STORES];
    bool done;
    int status = parse_args(cmd, TAKES_NAME | TAKES_START, argc, argv, &args, &a, &done);
    if (status != CLI_OK || done)
        return status;
    if ((status = open_all(cmd, &a, s)) != CLI_OK)
        return status;
    /* The whole list first: nothing is written unless every store can take
     * its part. (One store: its create alone decides.) */
    if (a.nstores > 1 && ((status = check_distinct(cmd, &a, s)) != CLI_OK ||
                          (status = check_absent(cmd, &a, s)) != CLI_OK)) {
        close_all(s, a.nstores);
        return status;
    }
    for (size_t k = 0; k < a.nstores; k++) {
        int rc = idm_store_create(s[k], a.name, a.start, (uint32_t)k, (uint32_t)a.nstores);
        if (rc != 0) {
            status = store_error(cmd, rc, "cannot create the sequence");
            if (k > 0)
                cli_note(cmd, "created in the first %zu of %zu stores only", k, a.nstores);
            break;
        }
    }
    close_all(s, a.nstores);
    return status;
}

static int cmd_next(int argc, char **argv)
{
    const char *cmd = "seq next";
    cli_args args;
    seq_args a;
    bool done;
    int64_t first = 0;
    int rc = IDM_EUNAVAIL;
    int status = parse_args(cmd, TAKES_NAME | TAKES_COUNT, argc, argv, &args, &a, &done);
    if (status != CLI_OK || done)
        return status;
    /* The first store that hands out a block. One that cannot be reached
     * (its server down) is passed over, with a note; any other error (a
     * bad URL, no such sequence, stores listed in another order) stops at
     * once. */
    for (size_t k = 0; k < a.nstores; k++) {
        idm_store *s = NULL;
        rc = idm__store_open_within(&s, a.stores[k], a.timeout_ms);
        if (rc == 0) {
            rc = idm_store_take(s, a.name, (int64_t)a.count, (uint32_t)k, (uint32_t)a.nstores,
                                &first);
            idm_store_close(s);
        }
        if (rc != IDM_EUNAVAIL)
            break;
        if (k + 1 < a.nstores)
            cli_note(cmd, "%s; trying the next store", idm_error_detail());
    }
    if (rc != 0)
        return store_error(cmd, rc, "cannot take ids");
    signal(SIGPIPE, SIG_IGN);
    int write_errno = 0;
    for (uint64_t i = 0; i < a.count && write_errno == 0; i++) {
        if (printf("%lld\n", (long long)(first + (int64_t)i * (int64_t)a.nstores)) < 0)
            write_errno = errno;
    }
    return cli_output_status(cmd, write_errno);
}

static int cmd_list(int argc, char **argv)
{
    const char *cmd = "seq list";
    cli_args args;
    seq_args a;
    idm_store *s[MAX_STORES];
    bool done;
    int write_errno = 0;
    int status = parse_args(cmd, TAKES_JSON, argc, argv, &args, &a, &done);
    if (status != CLI_OK || done)
        return status;
    if (a.nstores > 1) {
        cli_error(cmd, "give one --store to list");
        return CLI_USAGE;
    }
    if ((status = open_all(cmd, &a, s)) != CLI_OK)
        return status;
    idm_seq_info *info = NULL;
    size_t count = 0;
    int rc = idm_store_list(s[0], &info, &count);
    if (rc != 0) {
        status = store_error(cmd, rc, "cannot list the sequences");
        idm_store_close(s[0]);
        return status;
    }
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < count && write_errno == 0; i++) {
        /* the next id this store hands out: its local counter mapped */
        long long next = (long long)info[i].next * info[i].n + info[i].k;
        int r = a.json ? printf("{\"name\":\"%s\",\"next\":\"%lld\",\"k\":%u,\"n\":%u}\n",
                                info[i].name, next, (unsigned)info[i].k, (unsigned)info[i].n)
                       : printf("name=%s next=%lld k=%u n=%u\n", info[i].name, next,
                                (unsigned)info[i].k, (unsigned)info[i].n);
        if (r < 0)
            write_errno = errno;
    }
    free(info);
    idm_store_close(s[0]);
    return cli_output_status(cmd, write_errno);
}

int cli_cmd_seq(int argc, char **argv)
{
    const char *cmd = "seq";
    if (argc < 2) {
        cli_error(cmd, "missing subcommand: create, next or list (try 'idmint seq --help')");
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage_text, stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "create") == 0)
        return cmd_create(argc - 1, argv + 1);
    if (strcmp(argv[1], "next") == 0)
        return cmd_next(argc - 1, argv + 1);
    if (strcmp(argv[1], "list") == 0)
        return cmd_list(argc - 1, argv + 1);
    cli_error(cmd, "unknown subcommand '%s': create, next or list", argv[1]);
    return CLI_USAGE;
}
