/* SPDX-License-Identifier: MIT */
/*
 * idmint: entry point of the command-line program. Handles the global
 * options (--help, --version) and hands the rest to a subcommand.
 */
#include "cli.h"
#include "common.h"

#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"next", cli_cmd_next, "mint new Snowflake-style ids"},
    {"uuid7", cli_cmd_uuid7, "mint version 7 UUIDs (time-ordered)"},
    {"uuid4", cli_cmd_uuid4, "mint version 4 UUIDs (random)"},
    {"ulid", cli_cmd_ulid, "mint ULIDs"},
    {"objectid", cli_cmd_objectid, "mint MongoDB ObjectIds"},
    {"decode", cli_cmd_decode,
     "split ids (Snowflake, UUID, ULID, ObjectId) into their parts"},
    {"range", cli_cmd_range, "the smallest and largest id of a time window"},
    {"layout", cli_cmd_layout, "describe a layout, or list the presets"},
    {"lease", cli_cmd_lease, "list or hold worker-id leases (file, etcd, zk, postgres)"},
    {"seq", cli_cmd_seq, "named sequences of dense ids from ticket stores"},
    {"birthday", cli_cmd_birthday, "the chance that random ids collide"},
    {"encrypt", cli_cmd_encrypt, "turn ids into opaque public ids (keyed)"},
    {"decrypt", cli_cmd_decrypt, "turn opaque public ids back into ids"},
    {"plan", cli_cmd_plan, "what a layout gives; check needs, suggest a layout"},
    {"estimate", cli_cmd_estimate, "back-of-envelope fleet sizing for a layout"},
    {"audit", cli_cmd_audit, "check existing ids: duplicates, clock steps, two writers, skew"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fputs("usage: idmint [--version] [--help] COMMAND [ARGS]\n"
          "\n"
          "Mint and inspect unique ids: 64-bit Snowflake-style ids, UUIDs\n"
          "(versions 7 and 4), ULIDs and MongoDB ObjectIds.\n"
          "\n"
          "commands:\n", out);
    for (const command *c = commands; c->name != NULL; c++)
        fprintf(out, "  %-8s %s\n", c->name, c->summary);
    fputs("\n"
          "Run 'idmint COMMAND --help' for a command's options; see idmint(1).\n"
          "Exit status: 0 success, 1 runtime failure, 2 bad usage or input.\n",
          out);
}

static const command *find_command(const char *name)
{
    for (const command *c = commands; c->name != NULL; c++) {
        if (strcmp(c->name, name) == 0)
            return c;
    }
    return NULL;
}

/* Flush what a command printed. A command that succeeded but whose output
 * could not be written fails with the reason (cli_output_status: "cannot
 * write the output: No space left on device"); one that failed already
 * said why and keeps its status. */
static int finish(const char *cmd, int status)
{
    if (status != CLI_OK) {
        fflush(stdout);
        return status;
    }
    return cli_output_status(cmd, 0);
}

int main(int argc, char **argv)
{
    idm__argv_hide_secrets(argc, argv);
    if (argc < 2) {
        cli_error(NULL, "missing command (try 'idmint --help')");
        return CLI_USAGE;
    }
    const char *first = argv[1];
    bool help = strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0;
    if (help || strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        if (argc > 2) {
            cli_error(NULL, "unexpected argument '%s' after %s", argv[2],
                      first);
            return CLI_USAGE;
        }
        if (help)
            usage(stdout);
        else
            printf("idmint %s\n", idm_version());
        return finish(NULL, CLI_OK);
    }
    if (strcmp(first, "help") == 0) {
        /* "idmint help [COMMAND]" is "idmint [COMMAND] --help". */
        if (argc == 2) {
            usage(stdout);
            return finish(NULL, CLI_OK);
        }
        const command *c = find_command(argv[2]);
        if (c == NULL || argc > 3) {
            if (c == NULL)
                cli_error(NULL, "unknown command '%s' (try 'idmint --help')",
                          argv[2]);
            else
                cli_error(NULL, "unexpected argument '%s'", argv[3]);
            return CLI_USAGE;
        }
        char *help_argv[] = {argv[2], (char *)"--help", NULL};
        return finish(c->name, c->run(2, help_argv));
    }
    if (first[0] == '-') {
        cli_error(NULL, "unknown option '%s' (try 'idmint --help')", first);
        return CLI_USAGE;
    }
    const command *c = find_command(first);
    if (c == NULL) {
        cli_error(NULL, "unknown command '%s' (try 'idmint --help')", first);
        return CLI_USAGE;
    }
    return finish(c->name, c->run(argc - 1, argv + 1));
}
