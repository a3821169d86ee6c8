/* SPDX-License-Identifier: MIT */
/*
 * `idmint decode`: split ids into their time and fields. Every argument is
 * checked before anything is printed, so bad input prints no partial result.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: idmint decode ID... [--layout NAME|TEXT] [--epoch T] [--json]\n"
    "\n"
    "Print each ID's time and fields, one line per id:\n"
    "  ID time=ISO-8601 unix_ms=MS FIELD=VALUE...\n"
    "\n"
    "  ID                     decimal, or 0x and 1 to 16 hex digits\n"
    CLI_HELP_LAYOUT
    "      --json             one JSON object per line\n"
    "  -h, --help             show this help\n";

enum { OPT_HELP, OPT_LAYOUT, OPT_EPOCH, OPT_JSON };

static const cli_opt options[] = {
    {"help", 'h', false, OPT_HELP},
    {"layout", 0, true, OPT_LAYOUT},
    {"epoch", 0, true, OPT_EPOCH},
    {"json", 0, false, OPT_JSON},
    {NULL, 0, false, 0},
};

int cli_cmd_decode(int argc, char **argv)
{
    cli_layout_args la = {NULL, NULL};
    bool json = false;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (inputs == NULL) {
        cli_error("decode", "out of memory");
        return CLI_FAIL;
    }
    size_t n = 0;

    cli_parser p;
    const char *v;
    int id;
    cli_parser_init(&p, "decode", options, argc, argv);
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR:
            free(inputs);
            return CLI_USAGE;
        case OPT_HELP:
            fputs(usage_text, stdout);
            free(inputs);
            return CLI_OK;
        case CLI_OPT_POS:
            inputs[n++] = v;
            break;
        case OPT_LAYOUT:
            la.spec = v;
            break;
        case OPT_EPOCH:
            la.epoch = v;
            break;
        case OPT_JSON:
            json = true;
            break;
        default:
            break;
        }
    }
    if (n == 0) {
        cli_error("decode", "no ID given (try 'idmint decode --help')");
        free(inputs);
        return CLI_USAGE;
    }

    idm_layout *l = NULL;
    int status = cli_build_layout("decode", &la, &l);
    uint64_t *ids = NULL;
    idm_decoded *dec = NULL;
    if (status == CLI_OK) {
        ids = calloc(n, sizeof *ids);
        dec = calloc(n, sizeof *dec);
        if (ids == NULL || dec == NULL) {
            cli_error("decode", "out of memory");
            status = CLI_FAIL;
        }
    }
    for (size_t i = 0; status == CLI_OK && i < n; i++) {
        int rc = idm_u64_parse(inputs[i], &ids[i]);
        if (rc != 0) {
            cli_lib_error("decode", rc, "bad ID '%s'", inputs[i]);
            status = CLI_USAGE;
            break;
        }
        rc = idm_layout_decode(l, ids[i], &dec[i]);
        if (rc == IDM_ERANGE) {
            char label[IDM_LAYOUT_TEXT_MAX];
            cli_layout_label(l, label, sizeof label);
            cli_error("decode", "bad ID '%s': it has bits above the %u bits "
                      "of layout %s", inputs[i], idm_layout_bits(l), label);
            status = CLI_USAGE;
            break;
        }
        if (rc != 0) {
            cli_lib_error("decode", rc, "bad ID '%s'", inputs[i]);
            status = CLI_USAGE;
            break;
        }
    }
    for (size_t i = 0; status == CLI_OK && i < n; i++)
        cli_print_decoded(stdout, l, ids[i], &dec[i], json);

    free(dec);
    free(ids);
    idm_layout_free(l);
    free(inputs);
    return status;
}
