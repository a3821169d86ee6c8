/* SPDX-License-Identifier: MIT */
/*
 * The planning tools run in-process with their output captured (tools.h):
 * each run opens two memory streams, makes them this thread's cli_out() and
 * cli_err() (opts.c) for the length of the command, and hands their bytes
 * to the caller. The commands themselves are the CLI's own (cmd_plan.c,
 * cmd_birthday.c, cmd_decode.c), unchanged but for writing through those
 * sinks: what idmintd answers is byte for byte what `idmint plan --json`
 * (or `idmint decode --json`) prints.
 *
 * What makes this safe from several threads: the sinks and the "captured"
 * flag are thread-local; the commands keep no state between runs (their
 * tables are const, their buffers on the stack); the library calls they
 * make (layouts, times, the system clock) are thread-safe; and what would
 * touch the process (a file, a lock, the environment) is refused in a
 * captured run before it is tried.
 */
#include "tools.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tools and their parameters ---- */

static const cli_tool_param plan_params[] = {
    {"layout", false, false}, {"epoch", false, false}, {"workers", false, false},
    {"peak", false, false},   {"node", false, true},   {"at", false, false},
    {NULL, false, false},
};

static const cli_tool_param estimate_params[] = {
    {"rate", false, false},   {"processes", false, false}, {"skew", false, false},
    {"surge", false, false},  {"rows", false, false},      {"indexes", false, false},
    {"layout", false, false}, {"epoch", false, false},     {NULL, false, false},
};

static const cli_tool_param birthday_params[] = {
    {"bits", false, false},  {"rate", false, false},   {"duration", false, false},
    {"per-ms", true, false}, {"points", false, false}, {NULL, false, false},
};

/* decode takes the id itself as its argument (idmintd's /v1/decode/ID
 * passes it, with --kind): no option comes from a query. */
static const cli_tool_param decode_params[] = {
    {NULL, false, false},
};

typedef struct tool {
    const char *name;
    int (*run)(int argc, char **argv);
    const cli_tool_param *params;
} tool;

static const tool tools[] = {
    {"plan", cli_cmd_plan, plan_params},
    {"estimate", cli_cmd_estimate, estimate_params},
    {"birthday", cli_cmd_birthday, birthday_params},
    {"decode", cli_cmd_decode, decode_params},
};

static const tool *find_tool(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof tools / sizeof tools[0]; i++) {
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    }
    return NULL;
}

const cli_tool_param *cli_tool_params(const char *name)
{
    const tool *t = find_tool(name);
    return t != NULL ? t->params : NULL;
}

/* ---- a captured run ---- */

/* A run that could not be made: r->status CLI_FAIL, r->err why (if even
 * that can be allocated), -1. */
static int run_failed(cli_tool_result *r, const char *why)
{
    free(r->out);
    free(r->err);
    r->out = NULL;
    r->out_len = 0;
    r->status = CLI_FAIL;
    r->err = strdup(why);
    r->err_len = r->err != NULL ? strlen(r->err) : 0;
    return -1;
}

int cli_tool_run(const char *name, int argc, char **argv, cli_tool_result *r)
{
    memset(r, 0, sizeof *r);
    const tool *t = find_tool(name);
    if (t == NULL) {
        char why[160];
        snprintf(why, sizeof why, "idmint: unknown tool '%.60s': use plan, estimate, "
                 "birthday or decode\n", name != NULL ? name : "");
        return run_failed(r, why);
    }
    if (argc < 1 || argv == NULL)
        return run_failed(r, "idmint: a tool run needs argv[0], the tool's name\n");

    FILE *out = open_memstream(&r->out, &r->out_len);
    FILE *err = out != NULL ? open_memstream(&r->err, &r->err_len) : NULL;
    if (err == NULL) {
        if (out != NULL)
            fclose(out);
        return run_failed(r, "idmint: out of memory\n");
    }
    cli_capture_begin(out, err);
    r->status = t->run(argc, argv);
    cli_capture_end();

    /* Closing a memory stream stores its final buffer and length; a
     * stream that ran out of memory fails here (or already did). */
    bool lost = ferror(out) != 0 || ferror(err) != 0;
    lost = (fclose(out) != 0) || lost;
    lost = (fclose(err) != 0) || lost;
    if (lost || r->out == NULL || r->err == NULL)
        return run_failed(r, "idmint: out of memory for the output\n");
    return 0;
}

void cli_tool_result_free(cli_tool_result *r)
{
    if (r == NULL)
        return;
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}
