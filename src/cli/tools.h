/* SPDX-License-Identifier: MIT */
/*
 * The CLI's planning tools (idmint plan, estimate and birthday) and its
 * decoder (idmint decode) run in-process with their output captured, for
 * idmintd's /v1/plan, /v1/estimate, /v1/birthday and /v1/decode: the same
 * code answers the command line and the web console, so the two can never
 * disagree.
 *
 * A captured run writes nothing to the process's stdout or stderr: what the
 * command would print goes to buffers of the calling thread (each thread
 * its own, so requests on several threads run at once). It never touches a
 * file, a lock or the environment: options that would (birthday --plot, a
 * --node value taken from the platform's ordinal, --help) are refused with
 * a message, exit status CLI_USAGE.
 */
#ifndef IDMINT_CLI_TOOLS_H
#define IDMINT_CLI_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

/* One option of a tool as a web parameter: its long name without "--". */
typedef struct cli_tool_param {
    const char *name; /* NULL ends a table */
    bool flag;        /* takes no value (birthday's per-ms) */
    bool repeat;      /* may be given more than once (plan's node) */
} cli_tool_param;

/* The parameters tool takes on the web ("plan", "estimate", "birthday",
 * "decode"), ending with a NULL name: its options but json, help and those
 * that touch files (plot); none for decode, whose id is its argument; NULL
 * if tool is none of those. */
const cli_tool_param *cli_tool_params(const char *tool);

/* What a captured run gave. */
typedef struct cli_tool_result {
    int status;  /* the command's exit status: CLI_OK, CLI_FAIL, CLI_USAGE */
    char *out;   /* what it printed on stdout, NUL-terminated (malloc'd) */
    size_t out_len;
    char *err;   /* its messages ("idmint: plan: bad --workers ..."), each
                    a line, NUL-terminated (malloc'd) */
    size_t err_len;
} cli_tool_result;

/*
 * Run tool with argv[0..argc-1] (argv[0] the tool's name, as the command
 * line gives it; the caller adds "--json" if it wants JSON), output
 * captured into *r (free with cli_tool_result_free, also after a failure).
 * Returns 0, or -1 if the run could not be made (unknown tool, out of
 * memory: r->status is then CLI_FAIL and r->err says why). Thread-safe.
 * The words of argv are read, never changed (the parser moves none). r->out and r->err are never
 * NULL after a return of 0.
 */
int cli_tool_run(const char *tool, int argc, char **argv, cli_tool_result *r);
void cli_tool_result_free(cli_tool_result *r);

#endif /* IDMINT_CLI_TOOLS_H */
