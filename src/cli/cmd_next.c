/* SPDX-License-Identifier: MIT */
/*
 * `idmint next`: mint ids with a Snowflake generator and print one per line,
 * in decimal, hex or JSON. By default the generator keeps a state file so
 * that two runs never repeat an id (see state.c).
 */
#include "cli.h"

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
    "                   [--policy logical|refuse|wait] [--exhaust wait|borrow]\n"
    "\n"
    "Mint N new ids (default 1) and print one per line.\n"
    "\n"
    "  -n, --count N          how many ids, 1 to 10000000\n"
    CLI_HELP_LAYOUT
    "      --node NAME=VALUE  value of a node field; every node field of the\n"
    "                         layout must be given (twitter: datacenter, worker)\n"
    "      --format FMT       dec (default), hex (0x + 16 digits) or json\n"
    "      --state FILE       keep the high-water mark in FILE\n"
    "      --no-state         keep none: two runs within one tick with the\n"
    "                         same node values can repeat ids\n"
    "      --policy P         when the clock moves back: logical (default),\n"
    "                         refuse or wait\n"
    "      --exhaust P        when a tick's ids run out: wait (default) or\n"
    "                         borrow\n"
    "  -h, --help             show this help\n"
    "\n"
    "The default state file is under $IDMINT_STATE_DIR, else\n"
    "$XDG_STATE_HOME/idmint, else ~/.local/state/idmint; see idmint(1).\n";

enum {
    OPT_HELP,
    OPT_COUNT,
    OPT_LAYOUT,
    OPT_EPOCH,
    OPT_NODE,
    OPT_FORMAT,
    OPT_STATE,
    OPT_NO_STATE,
    OPT_POLICY,
    OPT_EXHAUST
};

static const cli_opt options[] = {
    {"help", 'h', false, OPT_HELP},
    {"count", 'n', true, OPT_COUNT},
    {"layout", 0, true, OPT_LAYOUT},
    {"epoch", 0, true, OPT_EPOCH},
    {"node", 0, true, OPT_NODE},
    {"format", 0, true, OPT_FORMAT},
    {"state", 0, true, OPT_STATE},
    {"no-state", 0, false, OPT_NO_STATE},
    {"policy", 0, true, OPT_POLICY},
    {"exhaust", 0, true, OPT_EXHAUST},
    {NULL, 0, false, 0},
};

typedef enum out_format { FMT_DEC, FMT_HEX, FMT_JSON } out_format;

typedef struct next_args {
    cli_layout_args layout;
    const char *count_text;
    const char *format_text;
    const char *state_path;
    bool no_state;
    const char *policy_text;
    const char *exhaust_text;
    const char **nodes; /* the --node values, in order */
    size_t node_count;
} next_args;

static int parse_args(int argc, char **argv, next_args *a, bool *help)
{
    cli_parser p;
    const char *v;
    int id;
    cli_parser_init(&p, "next", options, argc, argv);
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR:
            return CLI_USAGE;
        case CLI_OPT_POS:
            cli_error("next", "unexpected argument '%s'", v);
            return CLI_USAGE;
        case OPT_HELP:
            *help = true;
            return CLI_OK;
        case OPT_COUNT:
            a->count_text = v;
            break;
        case OPT_LAYOUT:
            a->layout.spec = v;
            break;
        case OPT_EPOCH:
            a->layout.epoch = v;
            break;
        case OPT_NODE:
            a->nodes[a->node_count++] = v;
            break;
        case OPT_FORMAT:
            a->format_text = v;
            break;
        case OPT_STATE:
            a->state_path = v;
            break;
        case OPT_NO_STATE:
            a->no_state = true;
            break;
        case OPT_POLICY:
            a->policy_text = v;
            break;
        case OPT_EXHAUST:
            a->exhaust_text = v;
            break;
        default:
            break;
        }
    }
    return CLI_OK;
}

/* Check the options that need no layout; fill count, format and policies. */
static int check_simple(const next_args *a, uint64_t *count, out_format *fmt,
                        idm_snowflake_opts *opts)
{
    *count = 1;
    if (a->count_text != NULL &&
        cli_parse_count("next", a->count_text, count) != CLI_OK)
        return CLI_USAGE;
    *fmt = FMT_DEC;
    if (a->format_text != NULL) {
        if (strcmp(a->format_text, "dec") == 0) {
            *fmt = FMT_DEC;
        } else if (strcmp(a->format_text, "hex") == 0) {
            *fmt = FMT_HEX;
        } else if (strcmp(a->format_text, "json") == 0) {
            *fmt = FMT_JSON;
        } else {
            cli_error("next", "bad --format '%s': use dec, hex or json",
                      a->format_text);
            return CLI_USAGE;
        }
    }
    if (a->policy_text != NULL) {
        if (strcmp(a->policy_text, "logical") == 0) {
            opts->backwards = IDM_BACKWARDS_LOGICAL;
        } else if (strcmp(a->policy_text, "refuse") == 0) {
            opts->backwards = IDM_BACKWARDS_REFUSE;
        } else if (strcmp(a->policy_text, "wait") == 0) {
            opts->backwards = IDM_BACKWARDS_WAIT;
        } else {
            cli_error("next", "bad --policy '%s': use logical, refuse or wait",
                      a->policy_text);
            return CLI_USAGE;
        }
    }
    if (a->exhaust_text != NULL) {
        if (strcmp(a->exhaust_text, "wait") == 0) {
            opts->exhaust = IDM_EXHAUST_WAIT;
        } else if (strcmp(a->exhaust_text, "borrow") == 0) {
            opts->exhaust = IDM_EXHAUST_BORROW;
        } else {
            cli_error("next", "bad --exhaust '%s': use wait or borrow",
                      a->exhaust_text);
            return CLI_USAGE;
        }
    }
    if (a->no_state && a->state_path != NULL) {
        cli_error("next", "--state and --no-state exclude each other");
        return CLI_USAGE;
    }
    if (a->state_path != NULL && a->state_path[0] == '\0') {
        cli_error("next", "bad --state '': empty path");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Apply the --node assignments; every node field must get exactly one. */
static int set_nodes(const next_args *a, const idm_layout *l,
                     idm_snowflake_opts *opts)
{
    /* Made first: the library's detail line must survive until printed. */
    char label[IDM_LAYOUT_TEXT_MAX];
    cli_layout_label(l, label, sizeof label);

    for (size_t i = 0; i < a->node_count; i++) {
        uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
        uint32_t set = 0;
        int rc = idm_layout_parse_node(l, a->nodes[i], node, &set);
        if (rc != 0) {
            if (rc == IDM_EINVAL)
                cli_lib_error("next", rc, "bad --node '%s' for layout %s",
                              a->nodes[i], label);
            else
                cli_lib_error("next", rc, "bad --node '%s'", a->nodes[i]);
            return CLI_USAGE;
        }
        for (unsigned b = 0; b < IDM_LAYOUT_MAX_FIELDS; b++) {
            if ((set & (UINT32_C(1) << b)) == 0)
                continue;
            if (opts->node_set & (UINT32_C(1) << b)) {
                idm_field_info f;
                idm_layout_field(l, b, &f);
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
        if (opts->node_set & (UINT32_C(1) << i))
            continue;
        int w = snprintf(missing + len, sizeof missing - len,
                         " --node %s=N", f.name);
        if (w > 0 && (size_t)w < sizeof missing - len)
            len += (size_t)w;
    }
    if (len > 0) {
        cli_error("next", "layout %s needs%s", label, missing);
        return CLI_USAGE;
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

static int mint(const next_args *a, idm_snowflake_opts *opts,
                const idm_layout *l, uint64_t count, out_format fmt)
{
    char *default_path = NULL;
    idm_snowflake *g = NULL;
    int rc = 0;
    if (!a->no_state) {
        /* Let the library check the layout, nodes and clock on a generator
         * without a state file first, so that bad input creates no file. */
        rc = idm_snowflake_open(&g, opts);
        if (rc == 0)
            idm_snowflake_close(g);
        g = NULL;
    }
    if (rc == 0 && !a->no_state) {
        if (a->state_path != NULL) {
            opts->state_path = a->state_path;
        } else {
            default_path = cli_default_state_path("next", l, opts->node);
            if (default_path == NULL)
                return CLI_FAIL;
            opts->state_path = default_path;
        }
    }

    if (rc == 0)
        rc = cli_open_generator(&g, opts);
    if (rc != 0) {
        int status = CLI_FAIL;
        if (rc == IDM_ECORRUPT) {
            /* The library's detail only repeats the path; say instead
             * what the user may do about it. */
            cli_error("next", "state file '%s': %s; delete it only if you "
                      "are sure no ids with a time ahead of now were minted "
                      "with it", opts->state_path, idm_strerror(rc));
        } else if (rc == IDM_EBUSY || rc == IDM_EIO || rc == IDM_ENOENT) {
            cli_lib_error("next", rc, "state file '%s'", opts->state_path);
        } else if (rc == IDM_EEPOCH || rc == IDM_ETIMEOVER) {
            /* With an --epoch given, that epoch cannot mint at this time:
             * bad input. Without one, the clock is at fault. */
            cli_lib_error("next", rc, "cannot mint with this layout now");
            if (a->layout.epoch != NULL)
                status = CLI_USAGE;
        } else {
            cli_lib_error("next", rc, "cannot start the generator");
            if (rc == IDM_EINVAL || rc == IDM_ENODE || rc == IDM_ELAYOUT)
                status = CLI_USAGE;
        }
        free(default_path);
        return status;
    }

    uint64_t per_tick = UINT64_C(1) << idm_layout_seq_bits(l);
    size_t chunk_max = per_tick < CHUNK_MAX ? (size_t)per_tick : CHUNK_MAX;
    if (count < chunk_max)
        chunk_max = (size_t)count;
    uint64_t *ids = malloc(chunk_max * sizeof *ids);
    if (ids == NULL) {
        cli_error("next", "out of memory");
        idm_snowflake_close(g);
        free(default_path);
        return CLI_FAIL;
    }

    /* A closed pipe must not kill us before the state file is closed. */
    signal(SIGPIPE, SIG_IGN);

    int status = CLI_OK;
    bool warned = false;
    uint64_t done = 0;
    while (done < count) {
        size_t n = count - done < chunk_max ? (size_t)(count - done) : chunk_max;
        rc = idm_snowflake_next_batch(g, ids, n);
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
    rc = idm_snowflake_close(g);
    if (rc != 0) {
        cli_lib_error("next", rc, "closing state file '%s'",
                      opts->state_path != NULL ? opts->state_path : "");
        status = CLI_FAIL;
    }
    free(default_path);
    return status;
}

int cli_cmd_next(int argc, char **argv)
{
    next_args a;
    memset(&a, 0, sizeof a);
    a.nodes = calloc((size_t)argc + 1, sizeof *a.nodes);
    if (a.nodes == NULL) {
        cli_error("next", "out of memory");
        return CLI_FAIL;
    }

    bool help = false;
    int status = parse_args(argc, argv, &a, &help);
    if (status != CLI_OK || help) {
        if (help)
            fputs(usage_text, stdout);
        free(a.nodes);
        return status;
    }

    idm_snowflake_opts opts;
    idm_snowflake_opts_init(&opts);
    uint64_t count;
    out_format fmt;
    idm_layout *l = NULL;
    status = check_simple(&a, &count, &fmt, &opts);
    if (status == CLI_OK)
        status = cli_build_layout("next", &a.layout, &l);
    if (status == CLI_OK) {
        opts.layout = l;
        status = set_nodes(&a, l, &opts);
    }
    if (status == CLI_OK)
        status = mint(&a, &opts, l, count, fmt);
    idm_layout_free(l);
    free(a.nodes);
    return status;
}
