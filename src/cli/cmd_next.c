/* SPDX-License-Identifier: MIT */
/*
 * `idmint next`: mint ids with a Snowflake generator and print one per line,
 * in decimal, hex or JSON. By default the generator keeps a state file so
 * that two runs never repeat an id (see state.c). With --lease, the worker
 * field comes from a worker-id lease instead, and the lease record carries
 * the high-water mark from one holder to the next; node fields not given
 * are leased from a file coordinator under the state directory (the
 * embedded default). Leased runs keep claim files in the state directory,
 * so a run killed and started again resumes its claim (leased.h).
 */
#include "cli.h"

#include <idmint/leased.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Most ids minted with one call (and held in memory at once). */
#define CHUNK_MAX 65536u

static const char usage_text[] =
    "usage: idmint next [-n N] [--layout NAME|TEXT] [--epoch T]\n"
    "                   [--node NAME=VALUE]... [--format dec|hex|json]\n"
    "                   [--state FILE | --no-state]\n"
    "                   [--lease URL [--lease-field NAME] [--lease-ttl MS] [-v]]\n"
    "                   [--policy logical|refuse|wait|change-worker]\n"
    "                   [--exhaust wait|borrow]\n"
    "\n"
    "Mint N new ids (default 1) and print one per line.\n"
    "\n"
    "  -n, --count N          how many ids, 1 to 10000000\n"
    CLI_HELP_LAYOUT
    "      --node NAME=VALUE  value of a node field (twitter: datacenter,\n"
    "                         worker); those not given are leased together\n"
    "                         from a file coordinator in the state directory,\n"
    "                         so two runs at once never share them\n"
    "      --format FMT       dec (default), hex (0x + 16 digits) or json\n"
    "      --state FILE       keep the high-water mark in FILE\n"
    "      --no-state         keep none: two runs within one tick with the\n"
    "                         same node values can repeat ids\n"
    "      --policy P         when the clock moves back: logical (default),\n"
    "                         refuse, wait, or change-worker (leased only:\n"
    "                         claim another worker id past a large step)\n"
    "      --exhaust P        when a tick's ids run out: wait (default) or\n"
    "                         borrow\n"
    "      --lease URL        claim the worker field's value from a lease\n"
    "                         (file:///DIR, etcd://, etcds://, zk:// or\n"
    "                         postgres://: see idmint lease --help)\n"
    "                         instead of --node, and keep it renewed while\n"
    "                         minting; a run killed and started again\n"
    "                         resumes its claim (claim files in the state\n"
    "                         directory; none with --no-state)\n"
    "      --lease-field NAME the node field the lease fills (default: the\n"
    "                         layout's worker, shard or machine field)\n"
    "      --lease-ttl MS     the lease's TTL, 1000 to 3600000 (default 10000)\n"
    "                         and at least twice the layout's tick\n"
    "  -v, --verbose          say on stderr which worker id was claimed\n"
    "  -h, --help             show this help\n"
    "\n"
    "The default state file is under $IDMINT_STATE_DIR, else\n"
    "$XDG_STATE_HOME/idmint, else ~/.local/state/idmint; see idmint(1).\n";

enum {
    OPT_STATE = CLI_ID_OWN,
    OPT_NO_STATE,
    OPT_POLICY,
    OPT_EXHAUST,
    OPT_LEASE,
    OPT_LEASE_FIELD,
    OPT_LEASE_TTL,
    OPT_VERBOSE,
    OPT_END_
};
_Static_assert((int)OPT_END_ <= (int)CLI_ID_MAX, "too many options for cli_args");

static const cli_opt options[] = {
    CLI_ROW_HELP,
    CLI_ROW_COUNT,
    CLI_ROWS_LAYOUT,
    CLI_ROW_NODE,
    CLI_ROW_FORMAT,
    {"state", 0, true, OPT_STATE},
    {"no-state", 0, false, OPT_NO_STATE},
    {"policy", 0, true, OPT_POLICY},
    {"exhaust", 0, true, OPT_EXHAUST},
    {"lease", 0, true, OPT_LEASE},
    {"lease-field", 0, true, OPT_LEASE_FIELD},
    {"lease-ttl", 0, true, OPT_LEASE_TTL},
    {"verbose", 'v', false, OPT_VERBOSE},
    CLI_ROW_END,
};

static const cli_spec spec = {
    "next", usage_text, options, 0, CLI_ID_NODE, CLI_LIST_MAX, NULL,
};

/* In the order of the names below. */
typedef enum out_format { FMT_DEC, FMT_HEX, FMT_JSON } out_format;

static const char *const format_names[] = {"dec", "hex", "json", NULL};
static const char *const policy_names[] = {"logical", "refuse", "wait", "change-worker", NULL};
static const idm_backwards_policy policies[] = {
    IDM_BACKWARDS_LOGICAL,
    IDM_BACKWARDS_REFUSE,
    IDM_BACKWARDS_WAIT,
    IDM_BACKWARDS_CHANGE_WORKER,
};
static const char *const exhaust_names[] = {"wait", "borrow", NULL};
static const idm_exhaust_policy exhausts[] = {IDM_EXHAUST_WAIT, IDM_EXHAUST_BORROW};

typedef struct next_args {
    cli_args in; /* the options as given */
    const char *state_path;
    const char *lease_url;
    int64_t lease_ttl_ms;
    bool verbose;
    /* The embedded default: node fields not given, leased together from
     * file://<state dir>/leases ("datacenter+worker"); "" if none. */
    char embedded[256];
    char *state_dir;   /* the claim files of a lease; NULL: none */
    char *embedded_url;
} next_args;

/* Check the options that need no layout; fill count, format, policies and
 * the lease's TTL. */
static int check_simple(next_args *a, uint64_t *count, out_format *fmt,
                        idm_snowflake_opts *opts)
{
    const char *const *in = a->in.opt;
    if (cli_parse_count("next", in[CLI_ID_COUNT], count) != CLI_OK)
        return CLI_USAGE;
    /* Not given: the first of each list, the library's default. */
    int f = cli_choice("next", "--format", in[CLI_ID_FORMAT], format_names, FMT_DEC);
    int p = f < 0 ? -1 : cli_choice("next", "--policy", in[OPT_POLICY], policy_names, 0);
    int e = p < 0 ? -1 : cli_choice("next", "--exhaust", in[OPT_EXHAUST], exhaust_names, 0);
    if (e < 0)
        return CLI_USAGE;
    *fmt = (out_format)f;
    opts->backwards = policies[p];
    opts->exhaust = exhausts[e];
    a->state_path = in[OPT_STATE];
    a->lease_url = in[OPT_LEASE];
    a->verbose = in[OPT_VERBOSE] != NULL;
    if (in[OPT_NO_STATE] != NULL && a->state_path != NULL) {
        cli_error("next", "--state and --no-state exclude each other");
        return CLI_USAGE;
    }
    if (a->state_path != NULL && a->state_path[0] == '\0') {
        cli_error("next", "bad --state '': empty path");
        return CLI_USAGE;
    }
    if (a->lease_url == NULL) {
        const char *needs = in[OPT_LEASE_FIELD] != NULL ? "--lease-field"
                            : in[OPT_LEASE_TTL] != NULL ? "--lease-ttl"
                                                        : NULL;
        if (needs != NULL) {
            cli_error("next", "%s needs --lease URL", needs);
            return CLI_USAGE;
        }
        return CLI_OK;
    }
    if (a->state_path != NULL) {
        cli_error("next", "--lease and --state exclude each other (the lease "
                  "record keeps the mark)");
        return CLI_USAGE;
    }
    a->lease_ttl_ms = IDM_LEASE_TTL_DEFAULT_MS;
    if (in[OPT_LEASE_TTL] != NULL &&
        cli_parse_lease_ttl("next", "--lease-ttl", in[OPT_LEASE_TTL], &a->lease_ttl_ms) != CLI_OK)
        return CLI_USAGE;
    return CLI_OK;
}

/*
 * What the layout's tick asks of the state file and the lease.
 *
 * The state file's mark is stored ahead of use, one lookahead at a time,
 * and the library takes a lookahead of one tick to one day: 1 s, or the
 * tick if longer (one write per tick).
 *
 * Under a lease no id may carry a time past the mark the lease recorded
 * (a renewal's send time + TTL), and renewals come every TTL/3, so the mark
 * stays at least 2/3 of a TTL ahead of the clock. A run must be able to
 * mint the next tick's ids while the clock is anywhere in this one: the
 * second run within a tick starts at the next tick, and so does a run whose
 * tick's sequence ran out. That next tick can start a whole tick ahead, so
 * the TTL must be at least 1.5 ticks; twice the tick leaves room for a
 * renewal's round trip. A shorter TTL would fail mid-run with "past the
 * mark the lease recorded"; it is refused here, before anything is
 * claimed.
 */
static int check_tick(const next_args *a, const idm_layout *l,
                      idm_snowflake_opts *opts)
{
    int64_t tick = idm_layout_tick_ms(l);
    opts->state_lookahead_ms = tick > 1000 ? tick : 1000;
    if (a->lease_url == NULL || a->lease_ttl_ms >= 2 * tick)
        return CLI_OK;
    cli_error("next", "tick %lld ms is too long for --lease-ttl %lld%s: ids "
              "are never minted past the mark the lease records (a "
              "renewal's time + the TTL), and the next tick starts up to "
              "one tick ahead of the clock; set --lease-ttl to at least "
              "%lld (twice the tick)", (long long)tick,
              (long long)a->lease_ttl_ms,
              a->in.opt[OPT_LEASE_TTL] == NULL ? " (the default)" : "",
              (long long)(2 * tick));
    return CLI_USAGE;
}

/*
 * The node field --lease fills: --lease-field NAME, else the first of
 * worker, shard and machine the layout has as a node field. *index: its
 * field index.
 */
static int find_lease_field(const next_args *a, const idm_layout *l,
                            int *index)
{
    const char *name = a->in.opt[OPT_LEASE_FIELD];
    char label[IDM_LAYOUT_TEXT_MAX];
    cli_layout_label(l, label, sizeof label);
    size_t count = idm_layout_field_count(l);
    idm_field_info f;

    if (name != NULL) {
        for (size_t i = 0; i < count; i++) {
            if (idm_layout_field(l, i, &f) == 0 &&
                strcmp(f.name, name) == 0) {
                if (f.kind != IDM_FIELD_NODE) {
                    cli_error("next", "bad --lease-field '%s': it is the %s "
                              "field, not a node field", name,
                              f.kind == IDM_FIELD_TIME ? "time" : "sequence");
                    return CLI_USAGE;
                }
                *index = (int)i;
                return CLI_OK;
            }
        }
        cli_error("next", "bad --lease-field '%s': layout %s has no such "
                  "field", name, label);
        return CLI_USAGE;
    }

    static const char *const names[] = {"worker", "shard", "machine"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        for (size_t i = 0; i < count; i++) {
            if (idm_layout_field(l, i, &f) == 0 && f.kind == IDM_FIELD_NODE &&
                strcmp(f.name, names[n]) == 0) {
                *index = (int)i;
                return CLI_OK;
            }
        }
    }
    char nodes[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < count; i++) {
        if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        int w = snprintf(nodes + len, sizeof nodes - len, "%s%s",
                         len > 0 ? ", " : "", f.name);
        if (w > 0 && (size_t)w < sizeof nodes - len)
            len += (size_t)w;
    }
    if (len == 0)
        cli_error("next", "layout %s has no node field for --lease to fill",
                  label);
    else
        cli_error("next", "layout %s has no worker, shard or machine field "
                  "for --lease to fill: name one of its node fields (%s) "
                  "with --lease-field NAME", label, nodes);
    return CLI_USAGE;
}

/* Apply the --node assignments; every node field must get exactly one,
 * but the one a lease fills (lease_index, -1 if none), which gets none. */
static int set_nodes(const next_args *a, const idm_layout *l, int lease_index,
                     idm_snowflake_opts *opts)
{
    /* Made first: the library's detail line must survive until printed. */
    char label[IDM_LAYOUT_TEXT_MAX];
    cli_layout_label(l, label, sizeof label);

    for (size_t i = 0; i < a->in.list_count; i++) {
        const char *given = a->in.list[i];
        uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
        uint32_t set = 0;
        int rc = idm_layout_parse_node(l, given, node, &set);
        if (rc != 0) {
            if (rc == IDM_EINVAL)
                cli_lib_error("next", rc, "bad --node '%s' for layout %s", given, label);
            else
                cli_lib_error("next", rc, "bad --node '%s'", given);
            return CLI_USAGE;
        }
        for (unsigned b = 0; b < IDM_LAYOUT_MAX_FIELDS; b++) {
            if ((set & (UINT32_C(1) << b)) == 0)
                continue;
            idm_field_info f;
            idm_layout_field(l, b, &f);
            if ((int)b == lease_index) {
                cli_error("next", "--node %s and --lease exclude each other "
                          "(the lease gives %s)", f.name, f.name);
                return CLI_USAGE;
            }
            if (opts->node_set & (UINT32_C(1) << b)) {
                cli_error("next", "--node %s is given twice", f.name);
                return CLI_USAGE;
            }
            opts->node[b] = node[b];
            opts->node_set |= UINT32_C(1) << b;
        }
    }

    char missing[1024] = "";
    size_t len = 0;
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        if ((opts->node_set & (UINT32_C(1) << i)) || (int)i == lease_index)
            continue;
        int w = snprintf(missing + len, sizeof missing - len,
                         " --node %s=N", f.name);
        if (w > 0 && (size_t)w < sizeof missing - len)
            len += (size_t)w;
    }
    if (len > 0 && (lease_index >= 0 || a->state_path != NULL ||
                    cli_given(&a->in, OPT_NO_STATE))) {
        cli_error("next", "layout %s needs%s%s", label, missing,
                  lease_index >= 0 ? ""
                                   : " (or neither --state nor --no-state, to lease the "
                                     "missing ones)");
        return CLI_USAGE;
    }
    if (len > 0) {
        /* The embedded default: the missing node fields are leased
         * together from the file coordinator under the state directory. */
        next_args *w = (next_args *)a;
        size_t k = 0;
        for (size_t i = 0; i < count; i++) {
            idm_field_info f;
            if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE ||
                (opts->node_set & (UINT32_C(1) << i)))
                continue;
            int n = snprintf(w->embedded + k, sizeof w->embedded - k, "%s%s", k > 0 ? "+" : "",
                             f.name);
            if (n < 0 || (size_t)n >= sizeof w->embedded - k) {
                cli_error("next", "layout %s has too many node fields to lease", label);
                return CLI_USAGE;
            }
            k += (size_t)n;
        }
    }
    return CLI_OK;
}

/* Write ids[0..n-1] in the chosen format. Returns false on a write error. */
static bool print_ids(const idm_layout *l, const uint64_t *ids, size_t n,
                      out_format fmt, bool *warned)
{
    char buf[CLI_U64_TEXT_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        if ((ids[i] >> 63) != 0 && !*warned) {
            *warned = true;
            cli_error("next", "warning: ids have bit 63 set: they read as "
                      "negative signed 64-bit integers");
        }
        if (fmt == FMT_JSON) {
            idm_decoded d;
            if (idm_layout_decode(l, ids[i], &d) == 0)
                cli_print_decoded(stdout, l, ids[i], &d, true);
            continue;
        }
        size_t len = fmt == FMT_HEX ? cli_u64_hex(ids[i], buf)
                                    : cli_u64_dec(ids[i], buf);
        buf[len++] = '\n';
        fwrite(buf, 1, len, stdout);
    }
    return !ferror(stdout);
}

/* Report a failed idm_snowflake_open; returns the exit status. */
static int open_error(const next_args *a, const idm_snowflake_opts *opts,
                      int rc)
{
    int status = CLI_FAIL;
    if (rc == IDM_ECORRUPT) {
        /* The library's detail only repeats the path; say instead what the
         * user may do about it. */
        cli_error("next", "state file '%s': %s; delete it only if you are "
                  "sure no ids with a time ahead of now were minted with it",
                  opts->state_path, idm_strerror(rc));
    } else if (opts->state_path != NULL &&
               (rc == IDM_EBUSY || rc == IDM_EIO || rc == IDM_ENOENT)) {
        cli_lib_error("next", rc, "state file '%s'", opts->state_path);
    } else if (rc == IDM_EEPOCH || rc == IDM_ETIMEOVER) {
        /* With an --epoch given, that epoch cannot mint at this time: bad
         * input. Without one, the clock is at fault. */
        cli_lib_error("next", rc, "cannot mint with this layout now");
        if (cli_given(&a->in, CLI_ID_EPOCH))
            status = CLI_USAGE;
    } else {
        cli_lib_error("next", rc, "cannot start the generator");
        if (rc == IDM_EINVAL || rc == IDM_ENODE || rc == IDM_ELAYOUT)
            status = CLI_USAGE;
    }
    return status;
}

/* Set by SIGINT/SIGTERM while minting under a lease. */
static volatile sig_atomic_t stop_signal = 0;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* Mint count ids with g and print them; stops early on a failure or, under
 * a lease, a signal. Returns the exit status. */
static int mint_loop(idm_snowflake *g, idm_leased *lg, const idm_layout *l, uint64_t count,
                     out_format fmt)
{
    uint64_t per_tick = UINT64_C(1) << idm_layout_seq_bits(l);
    size_t chunk_max = per_tick < CHUNK_MAX ? (size_t)per_tick : CHUNK_MAX;
    if (count < chunk_max)
        chunk_max = (size_t)count;
    uint64_t *ids = malloc(chunk_max * sizeof *ids);
    if (ids == NULL) {
        cli_error("next", "out of memory");
        return CLI_FAIL;
    }

    /* A closed pipe must not kill us before the state file or the lease is
     * closed. */
    signal(SIGPIPE, SIG_IGN);

    int status = CLI_OK;
    bool warned = false;
    uint64_t done = 0;
    while (done < count && stop_signal == 0) {
        size_t n = count - done < chunk_max ? (size_t)(count - done) : chunk_max;
        int rc = g != NULL ? idm_snowflake_next_batch(g, ids, n)
                           : idm_leased_next_batch(lg, ids, n);
        if (rc != 0) {
            char d[CLI_U64_TEXT_MAX];
            cli_u64_dec(done, d);
            cli_lib_error("next", rc, "minting failed after %s ids", d);
            status = CLI_FAIL;
            break;
        }
        done += n;
        if (!print_ids(l, ids, n, fmt, &warned))
            break;
    }
    int write_errno = ferror(stdout) ? errno : 0;
    free(ids);
    if (cli_output_status("next", write_errno) != CLI_OK)
        status = CLI_FAIL;
    return status;
}

/*
 * Open a generator on each state file an earlier build named for these ids
 * (see state.c): each holds its file's lock while we mint, so that an older
 * idmint cannot mint the same ids meanwhile, and *after_ms rises to the last
 * tick its mark covers. On failure prints why, closes what it opened and
 * returns the exit status.
 */
static int open_legacy(const next_args *a, const idm_snowflake_opts *opts,
                       const idm_layout *l, idm_snowflake **legacy,
                       size_t max, idm_unix_ms *after_ms)
{
    char **paths = cli_legacy_state_paths("next", l, opts->node);
    if (paths == NULL)
        return CLI_FAIL;
    int status = CLI_OK;
    for (size_t i = 0; i < max && paths[i] != NULL; i++) {
        idm_snowflake_opts lo = *opts;
        lo.state_path = paths[i];
        int rc = cli_open_generator(&legacy[i], &lo);
        if (rc != 0) {
            status = open_error(a, &lo, rc);
            break;
        }
        idm_snowflake_stats st;
        idm_snowflake_stats_get(legacy[i], &st);
        if (st.last_unix_ms > *after_ms)
            *after_ms = st.last_unix_ms;
    }
    if (status != CLI_OK) {
        for (size_t i = 0; i < max; i++) {
            idm_snowflake_close(legacy[i]);
            legacy[i] = NULL;
        }
    }
    cli_free_paths(paths);
    return status;
}

/* At most this many earlier-named files: one per preset, and "custom". */
#define LEGACY_MAX 16

static int mint(const next_args *a, idm_snowflake_opts *opts,
                const idm_layout *l, uint64_t count, out_format fmt)
{
    char *default_path = NULL;
    idm_snowflake *g = NULL;
    idm_snowflake *legacy[LEGACY_MAX] = {NULL};
    int rc = 0;
    if (!cli_given(&a->in, OPT_NO_STATE)) {
        /* Let the library check the layout, nodes and clock on a generator
         * without a state file first, so that bad input creates no file. */
        rc = idm_snowflake_open(&g, opts);
        if (rc == 0)
            idm_snowflake_close(g);
        g = NULL;
    }
    if (rc == 0 && !cli_given(&a->in, OPT_NO_STATE)) {
        if (a->state_path != NULL) {
            opts->state_path = a->state_path;
        } else {
            default_path = cli_default_state_path("next", l, opts->node);
            if (default_path == NULL)
                return CLI_FAIL;
            opts->state_path = default_path;
            /* Earlier builds' files first, always in the same order, then
             * ours: two runs never wait on each other's locks crosswise. */
            int status = open_legacy(a, opts, l, legacy, LEGACY_MAX,
                                     &opts->after_ms);
            if (status != CLI_OK) {
                free(default_path);
                return status;
            }
        }
    }

    if (rc == 0)
        rc = cli_open_generator(&g, opts);
    if (rc != 0) {
        int status = open_error(a, opts, rc);
        for (size_t i = 0; i < LEGACY_MAX; i++)
            idm_snowflake_close(legacy[i]);
        free(default_path);
        return status;
    }

    int status = mint_loop(g, NULL, l, count, fmt);
    rc = idm_snowflake_close(g);
    if (rc != 0) {
        cli_lib_error("next", rc, "closing state file '%s'",
                      opts->state_path != NULL ? opts->state_path : "");
        status = CLI_FAIL;
    }
    /* Closing writes each earlier-named file's own exact mark back (it
     * minted nothing); a failure there leaves the higher mark its open
     * stored, which is safe, and is not reported. */
    for (size_t i = 0; i < LEGACY_MAX; i++)
        idm_snowflake_close(legacy[i]);
    free(default_path);
    return status;
}

/* Report a failed idm_lease_start; returns the exit status. The lease's
 * own failures (the claim, the wait for the mark, the first renewal) have
 * a detail that starts "lease: "; the generator's (its check before the
 * claim, its start after) are reported as without a lease. */
static int start_error(const next_args *a, const idm_snowflake_opts *opts, int rc)
{
    const char *d = idm_error_detail();
    if (strncmp(d, "leased: ", 8) == 0)
        return cli_lease_error("next", rc, "cannot claim a worker id");
    if (strncmp(d, "lease: ", 7) != 0)
        return open_error(a, opts, rc);
    if (rc == IDM_ECLOCKBACK) {
        cli_error("next", "%s", d + 7);
        return CLI_FAIL;
    }
    return cli_lease_error("next", rc, "cannot claim a worker id");
}

/* The verbose notes of a claim, said before the wait for the mark. */
typedef struct claim_note {
    const char *field;
} claim_note;

/* The embedded lease's generators keep the state file a run with these
 * node values given by --node keeps: one lock and one mark for both. */
static int shared_state_name(void *ctx, const idm_snowflake_opts *gen, char *buf, size_t len)
{
    char *path = cli_default_state_path("next", gen->layout, gen->node);
    const char *base;
    (void)ctx;
    if (path == NULL)
        return idm_error_fail(IDM_EIO, "no default state file for these node values");
    base = strrchr(path, '/');
    snprintf(buf, len, "%s", base != NULL ? base + 1 : path);
    free(path);
    return 0;
}

static void note_event(void *ctx, const char *line)
{
    (void)ctx;
    cli_note("next", "%s", line);
}

static void note_claim(void *ctx, uint32_t worker, idm_unix_ms mark, int64_t wait_ms)
{
    const claim_note *n = ctx;
    cli_note("next", "lease: %s=%u mark_ms=%lld", n->field, (unsigned)worker, (long long)mark);
    if (wait_ms > 0)
        cli_note("next", "waiting %lld ms for the clock to pass the previous holder's mark",
                 (long long)wait_ms);
}

/*
 * Mint under a lease (--lease URL, or the embedded default): a leased
 * generator (leased.h) checks the layout, the other nodes and the clock,
 * resumes the claim a killed run left in the state directory or claims a
 * worker id for the field(s), waits out the previous holder's mark, and
 * mints under a lease it keeps renewed, re-claiming after a loss; closing
 * releases the lease (recording the last tick minted).
 */
static int mint_leased(const next_args *a, idm_snowflake_opts *opts, const idm_layout *l,
                       const char *fields, const char *url, int64_t ttl_ms, uint64_t count,
                       out_format fmt)
{
    idm_leased_opts lo;
    idm_leased *lg = NULL;
    claim_note note = {fields};
    idm_leased_opts_init(&lo);
    lo.lease.url = url;
    lo.lease.ttl_ms = ttl_ms;
    lo.gen = *opts;
    lo.field = fields;
    lo.state_dir = a->state_dir;
    lo.reclaim = true;
    if (a->lease_url == NULL)
        lo.state_name = shared_state_name;
    /* Tests inject a reboot (a saved claim from another boot is never
     * minted under without the coordinator's word). */
    lo.lease.boot_id_file = getenv("IDMINT_BOOT_ID_FILE");
    if (lo.lease.boot_id_file != NULL && lo.lease.boot_id_file[0] == '\0')
        lo.lease.boot_id_file = NULL;
    if (a->verbose) {
        lo.lease.on_claim = note_claim;
        lo.lease.on_claim_ctx = &note;
        lo.on_event = note_event;
    }
    int rc = idm_leased_open(&lg, &lo);
    if (rc != 0)
        return start_error(a, opts, rc);
    if (a->verbose) {
        idm_leased_status st;
        idm_leased_status_get(lg, &st);
        if (st.origin != IDM_LEASED_CLAIMED)
            cli_note("next", "lease: %s=%u resumed", fields, (unsigned)st.worker);
    }

    /* SIGINT and SIGTERM stop minting and release the lease with the exact
     * mark, so the next holder need not wait out the TTL. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    int status = mint_loop(NULL, lg, l, count, fmt);

    rc = idm_leased_close(lg);
    /* When minting already failed (a lease past its deadline, a coordinator
     * out of reach), the release usually fails for the same reason; one
     * line of error is the CLI's rule, and the first says what went wrong. */
    if (rc != 0 && status == CLI_OK) {
        cli_lease_error("next", rc, "releasing the lease");
        status = CLI_FAIL;
    }

    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (stop_signal != 0) {
        /* Die of the signal, as the caller expects, now that the lease is
         * released. */
        fflush(stdout);
        signal(stop_signal, SIG_DFL);
        raise(stop_signal);
    }
    return status;
}

int cli_cmd_next(int argc, char **argv)
{
    next_args a;
    memset(&a, 0, sizeof a);
    int status = cli_parse_args(&spec, argc, argv, &a.in, NULL);
    if (status != CLI_OK || a.in.help)
        return status;

    idm_snowflake_opts opts;
    idm_snowflake_opts_init(&opts);
    uint64_t count;
    out_format fmt;
    idm_layout *l = NULL;
    int lease_index = -1;
    status = check_simple(&a, &count, &fmt, &opts);
    if (status == CLI_OK)
        status = cli_build_layout("next", &a.in, &l);
    if (status == CLI_OK)
        status = check_tick(&a, l, &opts);
    if (status == CLI_OK && a.lease_url != NULL)
        status = find_lease_field(&a, l, &lease_index);
    if (status == CLI_OK) {
        opts.layout = l;
        status = set_nodes(&a, l, lease_index, &opts);
    }
    if (status == CLI_OK && opts.backwards == IDM_BACKWARDS_CHANGE_WORKER &&
        a.lease_url == NULL && a.embedded[0] == '\0') {
        cli_error("next", "--policy change-worker needs a leased worker id (--lease URL, or "
                  "node fields left for the embedded lease)");
        status = CLI_USAGE;
    }
    if (status == CLI_OK && (a.lease_url != NULL || a.embedded[0] != '\0') &&
        !cli_given(&a.in, OPT_NO_STATE)) {
        a.state_dir = cli_state_dir("next");
        if (a.state_dir == NULL)
            status = CLI_FAIL;
    }
    if (status == CLI_OK && a.lease_url == NULL && a.embedded[0] != '\0') {
        /* The embedded lease's TTL: the default, or twice a longer tick
         * (check_tick's rule for --lease-ttl). */
        int64_t tick = idm_layout_tick_ms(l);
        a.lease_ttl_ms = 2 * tick > IDM_LEASE_TTL_DEFAULT_MS ? 2 * tick : IDM_LEASE_TTL_DEFAULT_MS;
        if (a.lease_ttl_ms > IDM_LEASE_TTL_MAX_MS) {
            cli_error("next", "tick %lld ms is too long for the embedded lease (its TTL would "
                      "pass %lld ms): give every node field with --node",
                      (long long)tick, (long long)IDM_LEASE_TTL_MAX_MS);
            status = CLI_USAGE;
        }
    }
    if (status == CLI_OK && a.lease_url == NULL && a.embedded[0] != '\0') {
        a.embedded_url = cli_embedded_lease_url("next", a.state_dir, l, a.embedded);
        if (a.embedded_url == NULL)
            status = CLI_FAIL;
    }
    if (status == CLI_OK) {
        if (a.lease_url != NULL) {
            idm_field_info f;
            idm_layout_field(l, (size_t)lease_index, &f);
            status = mint_leased(&a, &opts, l, f.name, a.lease_url, a.lease_ttl_ms, count, fmt);
        } else if (a.embedded[0] != '\0') {
            status = mint_leased(&a, &opts, l, a.embedded, a.embedded_url, a.lease_ttl_ms, count,
                                 fmt);
        } else {
            status = mint(&a, &opts, l, count, fmt);
        }
    }
    free(a.state_dir);
    free(a.embedded_url);
    idm_layout_free(l);
    return status;
}
