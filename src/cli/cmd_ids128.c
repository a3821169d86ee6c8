/* SPDX-License-Identifier: MIT */
/*
 * `idmint uuid7`, `idmint uuid4`, `idmint ulid`, `idmint objectid`: mint
 * UUIDs (RFC 9562), ULIDs and MongoDB ObjectIds and print them as canonical
 * text, plain hex or raw bytes. One generator serves a whole run, so the
 * UUIDv7s and ULIDs of one run strictly increase. These ids need no node
 * values and no state file: their random bits keep them apart.
 */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

typedef enum gen_kind { GEN_UUID7, GEN_UUID4, GEN_ULID, GEN_OBJECTID } gen_kind;

/* In the order of format_names. */
typedef enum out_format { FMT_TEXT, FMT_HEX, FMT_BINARY } out_format;

static const char *const format_names[] = {"text", "hex", "binary", NULL};

enum { OPT_NO_MONOTONIC = CLI_ID_OWN };

static const cli_opt options[] = {CLI_ROW_HELP, CLI_ROW_COUNT, CLI_ROW_FORMAT, CLI_ROW_END};

static const cli_opt ulid_options[] = {
    CLI_ROW_HELP, CLI_ROW_COUNT, CLI_ROW_FORMAT, {"no-monotonic", 0, false, OPT_NO_MONOTONIC},
    CLI_ROW_END,
};

#define HELP_COUNT "  -n, --count N          how many ids, 1 to 10000000 (default 1)\n"
#define HELP_TAIL                                                             \
    "  -h, --help             show this help\n"                               \
    "\n"                                                                      \
    "--format binary refuses to write to a terminal.\n"

#define HELP_UUID_FORMAT                                                      \
    "      --format FMT       text (default; 8-4-4-4-12 lower-case hex), hex\n" \
    "                         (32 digits, no dashes) or binary (16 bytes per\n" \
    "                         id, back to back, no newline)\n"

static const char uuid7_usage[] =
    "usage: idmint uuid7 [-n N] [--format text|hex|binary]\n"
    "\n"
    "Mint N version 7 UUIDs (RFC 9562): 48 bits of Unix time in ms, then\n"
    "random bits. The UUIDs of one run strictly increase: later ones in the\n"
    "same millisecond add a random increment to the previous one.\n"
    "\n"
    HELP_COUNT
    HELP_UUID_FORMAT
    HELP_TAIL;

static const char uuid4_usage[] =
    "usage: idmint uuid4 [-n N] [--format text|hex|binary]\n"
    "\n"
    "Mint N version 4 UUIDs (RFC 9562): 122 random bits each.\n"
    "\n"
    HELP_COUNT
    HELP_UUID_FORMAT
    HELP_TAIL;

static const char ulid_usage[] =
    "usage: idmint ulid [-n N] [--format text|hex|binary] [--no-monotonic]\n"
    "\n"
    "Mint N ULIDs: 48 bits of Unix time in ms, then 80 random bits, as 26\n"
    "upper-case characters of Crockford's base32. The ULIDs of one run\n"
    "strictly increase: later ones in the same millisecond add 1 to the\n"
    "previous one.\n"
    "\n"
    HELP_COUNT
    "      --format FMT       text (default; 26 characters), hex (32\n"
    "                         lower-case digits) or binary (16 bytes per id,\n"
    "                         back to back, no newline)\n"
    "      --no-monotonic     80 fresh random bits for every ULID (ids of one\n"
    "                         millisecond then come in no particular order)\n"
    HELP_TAIL;

static const char objectid_usage[] =
    "usage: idmint objectid [-n N] [--format text|hex|binary]\n"
    "\n"
    "Mint N MongoDB ObjectIds: 4 bytes of Unix seconds, 5 random bytes\n"
    "chosen once per process, and a 3-byte counter that starts at a random\n"
    "value and wraps.\n"
    "\n"
    HELP_COUNT
    "      --format FMT       text or hex (the same: 24 lower-case hex\n"
    "                         digits; text is the default) or binary (12\n"
    "                         bytes per id, back to back, no newline)\n"
    HELP_TAIL;

typedef struct gen_info {
    cli_spec spec;
    size_t size; /* bytes per id */
} gen_info;

static const gen_info gens[] = {
    [GEN_UUID7] = {{"uuid7", uuid7_usage, options, 0, 0, 0, NULL}, 16},
    [GEN_UUID4] = {{"uuid4", uuid4_usage, options, 0, 0, 0, NULL}, 16},
    [GEN_ULID] = {{"ulid", ulid_usage, ulid_options, 0, 0, 0, NULL}, 16},
    [GEN_OBJECTID] = {{"objectid", objectid_usage, options, 0, 0, 0, NULL}, 12},
};

/* One generator for the whole run. */
typedef struct minter {
    gen_kind kind;
    idm_uuid7_gen *uuid7;
    idm_ulid_gen *ulid;
    idm_objectid_gen *objectid;
} minter;

static int minter_open(minter *m, gen_kind kind, bool monotonic)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    switch (kind) {
    case GEN_UUID7:
        return idm_uuid7_gen_new(&m->uuid7, NULL, NULL);
    case GEN_ULID:
        return idm_ulid_gen_new(&m->ulid, NULL, NULL, monotonic);
    case GEN_OBJECTID:
        return idm_objectid_gen_new(&m->objectid, NULL, NULL);
    case GEN_UUID4:
        break;
    }
    return 0;
}

static void minter_close(minter *m)
{
    idm_uuid7_gen_free(m->uuid7);
    idm_ulid_gen_free(m->ulid);
    idm_objectid_gen_free(m->objectid);
    memset(m, 0, sizeof *m);
}

/* The next id's bytes (gens[kind].size of them) into b. */
static int minter_next(minter *m, uint8_t b[16])
{
    idm_uuid u;
    idm_ulid ul;
    idm_objectid o;
    const uint8_t *got = u.b;
    int rc = 0;
    switch (m->kind) {
    case GEN_UUID7:
        rc = idm_uuid7_next(m->uuid7, &u);
        break;
    case GEN_UUID4:
        rc = idm_uuid4(NULL, &u);
        break;
    case GEN_ULID:
        rc = idm_ulid_next(m->ulid, &ul);
        got = ul.b;
        break;
    case GEN_OBJECTID:
        rc = idm_objectid_next(m->objectid, &o);
        got = o.b;
        break;
    }
    if (rc == 0)
        memcpy(b, got, gens[m->kind].size);
    return rc;
}

/* Room for the longest line: a UUID's 36 characters and a newline. */
#define LINE_MAX_LEN (IDM_UUID_TEXT_MAX + 1)

/* The id in b as one line of text or hex, with its newline; returns its
 * length. buf: LINE_MAX_LEN bytes. */
static size_t format_line(gen_kind kind, const uint8_t *b, out_format fmt,
                          char *buf)
{
    size_t len;
    if (fmt == FMT_HEX) {
        len = cli_hex_bytes(b, gens[kind].size, buf);
    } else {
        if (kind == GEN_ULID) {
            idm_ulid u;
            memcpy(u.b, b, sizeof u.b);
            idm_ulid_format(&u, buf);
        } else if (kind == GEN_OBJECTID) {
            idm_objectid o;
            memcpy(o.b, b, sizeof o.b);
            idm_objectid_format(&o, buf);
        } else {
            idm_uuid u;
            memcpy(u.b, b, sizeof u.b);
            idm_uuid_format(&u, buf);
        }
        len = strlen(buf);
    }
    buf[len++] = '\n';
    return len;
}

static int mint(gen_kind kind, uint64_t count, out_format fmt, bool monotonic)
{
    const char *cmd = gens[kind].spec.cmd;
    minter m;
    int rc = minter_open(&m, kind, monotonic);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "cannot start the generator");
        return CLI_FAIL;
    }

    /* A closed pipe ends the run with status 1, quietly (as for next). */
    signal(SIGPIPE, SIG_IGN);

    int status = CLI_OK;
    uint64_t done = 0;
    while (done < count && !ferror(stdout)) {
        uint8_t b[16];
        rc = minter_next(&m, b);
        if (rc != 0) {
            char d[CLI_U64_TEXT_MAX];
            cli_u64_dec(done, d);
            cli_lib_error(cmd, rc, "minting failed after %s ids", d);
            status = CLI_FAIL;
            break;
        }
        if (fmt == FMT_BINARY) {
            fwrite(b, 1, gens[kind].size, stdout);
        } else {
            char line[LINE_MAX_LEN];
            size_t len = format_line(kind, b, fmt, line);
            fwrite(line, 1, len, stdout);
        }
        done++;
    }
    int write_errno = ferror(stdout) ? errno : 0;
    minter_close(&m);
    if (cli_output_status(cmd, write_errno) != CLI_OK)
        status = CLI_FAIL;
    return status;
}

static int run(gen_kind kind, int argc, char **argv)
{
    const char *cmd = gens[kind].spec.cmd;
    cli_args a;
    int status = cli_parse_args(&gens[kind].spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    uint64_t count;
    if (cli_parse_count(cmd, a.opt[CLI_ID_COUNT], &count) != CLI_OK)
        return CLI_USAGE;
    int fmt = cli_choice(cmd, "--format", a.opt[CLI_ID_FORMAT], format_names, FMT_TEXT);
    if (fmt < 0)
        return CLI_USAGE;
    if (fmt == FMT_BINARY && isatty(STDOUT_FILENO)) {
        cli_error(cmd, "refusing to write binary ids to a terminal: redirect "
                  "the output, or use --format text or hex");
        return CLI_USAGE;
    }
    return mint(kind, count, (out_format)fmt, !cli_given(&a, OPT_NO_MONOTONIC));
}

int cli_cmd_uuid7(int argc, char **argv)
{
    return run(GEN_UUID7, argc, argv);
}

int cli_cmd_uuid4(int argc, char **argv)
{
    return run(GEN_UUID4, argc, argv);
}

int cli_cmd_ulid(int argc, char **argv)
{
    return run(GEN_ULID, argc, argv);
}

int cli_cmd_objectid(int argc, char **argv)
{
    return run(GEN_OBJECTID, argc, argv);
}
