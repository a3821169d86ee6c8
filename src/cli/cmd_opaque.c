/* SPDX-License-Identifier: MIT */
/*
 * `idmint encrypt` and `idmint decrypt`: opaque public ids. encrypt maps
 * 63-bit ids through the keyed permutation of idmint/opaque.h and prints
 * their fixed-length text; decrypt maps such texts back to the ids. The key
 * is read by idm_opaque_key_load from a regular file (one line of 32 hex
 * digits; a FIFO or a device is refused, never waited on) and never
 * printed: error messages name the file and what is wrong with it, not its
 * content. Every argument is checked before anything is printed.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char encrypt_usage[] =
    "usage: idmint encrypt --key-file FILE [--format FORMAT] ID...\n"
    "\n"
    "Print each ID's opaque public id, one per line: a keyed permutation of\n"
    "the ids 0 to 2^63-1 that hides their time and order and that only the\n"
    "key's holder can turn back (idmint decrypt).\n"
    "\n"
    "  ID                     decimal, or 0x and 1 to 16 hex digits; below 2^63\n"
    "      --key-file FILE    the key: one line of 32 hex digits (128 bits),\n"
    "                         e.g. from 'head -c 16 /dev/urandom | xxd -p'\n"
    "      --format FORMAT    base32 (13 characters of Crockford's base32, the\n"
    "                         default), base62 (11 characters of 0-9A-Za-z) or\n"
    "                         dec (the 63-bit value in decimal)\n"
    "  -h, --help             show this help\n";

static const char decrypt_usage[] =
    "usage: idmint decrypt --key-file FILE [--format FORMAT] TEXT...\n"
    "\n"
    "Print the id behind each opaque public id that idmint encrypt printed\n"
    "with the same key and format, in decimal, one per line.\n"
    "\n"
    "  TEXT                   an opaque id in FORMAT\n"
    "      --key-file FILE    the key: one line of 32 hex digits (128 bits)\n"
    "      --format FORMAT    how TEXT is written: base32 (13 characters of\n"
    "                         Crockford's base32, either case; the default),\n"
    "                         base62 (11 characters of 0-9A-Za-z) or dec\n"
    "  -h, --help             show this help\n";

enum { OPT_KEY_FILE = CLI_ID_OWN };

static const cli_opt options[] = {
    CLI_ROW_HELP, {"key-file", 0, true, OPT_KEY_FILE}, CLI_ROW_FORMAT, CLI_ROW_END,
};

static const cli_spec encrypt_spec = {"encrypt", encrypt_usage, options, CLI_POS_ANY, 0, 0, NULL};
static const cli_spec decrypt_spec = {"decrypt", decrypt_usage, options, CLI_POS_ANY, 0, 0, NULL};

/* In the order of format_names. */
typedef enum text_format { FMT_BASE32, FMT_BASE62, FMT_DEC } text_format;

static const char *const format_names[] = {"base32", "base62", "dec", NULL};

#define LIMIT63 (UINT64_C(1) << 63)

/* Clear memory in a way the compiler does not drop as a dead store. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *q = p;
    while (n-- > 0)
        *q++ = 0;
}

/*
 * Read the key file. On failure prints one line naming the file and the
 * problem (never the content) and returns CLI_USAGE (the file cannot be
 * opened, is not a regular file or does not hold a key) or CLI_FAIL (a
 * read error). The library's detail, "key file 'PATH': WHY", is worded as
 * the CLI's messages have always been: "cannot open key file 'PATH': ...",
 * "bad key file 'PATH': ...".
 */
static int load_key(const char *cmd, const char *path, idm_opaque_key *key)
{
    int rc = idm_opaque_key_load(path, key);
    if (rc == 0)
        return CLI_OK;
    char detail[1024], prefix[256];
    snprintf(detail, sizeof detail, "%s", idm_error_detail());
    int n = snprintf(prefix, sizeof prefix, "key file '%.160s': ", path);
    const char *why = detail;
    if (n > 0 && strncmp(detail, prefix, (size_t)n) == 0)
        why += n;
    if (rc == IDM_EIO) {
        /* "cannot open it: ..." / "cannot read it: ...": a file that cannot
         * be opened is bad input; one that fails midway is not. */
        bool read = strncmp(why, "cannot read it: ", 16) == 0;
        if (read || strncmp(why, "cannot open it: ", 16) == 0)
            why += 16;
        cli_error(cmd, "cannot %s key file '%s': %s", read ? "read" : "open", path, why);
        return read ? CLI_FAIL : CLI_USAGE;
    }
    /* idm_opaque_key_parse's reasons come with the error's name, as
     * cli_lib_error words them. */
    if (rc == IDM_EPARSE && strncmp(why, "opaque key: ", 12) == 0)
        cli_error(cmd, "bad key file '%s': %s (%s)", path, idm_strerror(rc), why);
    else
        cli_error(cmd, "bad key file '%s': %s", path, why);
    return CLI_USAGE;
}

/* A decimal or 0x-hex value below 2^63 (an id, or an opaque value written
 * with --format dec). */
static int parse_63(const char *cmd, const char *what, const char *text, uint64_t *out)
{
    int rc = idm_u64_parse(text, out);
    if (rc != 0) {
        cli_lib_error(cmd, rc, "bad %s '%s'", what, text);
        return CLI_USAGE;
    }
    if (*out >= LIMIT63) {
        cli_error(cmd, "bad %s '%s': above 2^63-1", what, text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* The arguments before the key is read: the format, or -1 after printing
 * why. */
static int check_args(const char *cmd, const cli_args *a, bool encrypt)
{
    int fmt = cli_choice(cmd, "--format", a->opt[CLI_ID_FORMAT], format_names, FMT_BASE32);
    if (fmt < 0)
        return -1;
    if (a->opt[OPT_KEY_FILE] == NULL) {
        cli_error(cmd, "no --key-file given (try 'idmint %s --help')", cmd);
        return -1;
    }
    if (a->pos_count == 0) {
        cli_error(cmd, "no %s given (try 'idmint %s --help')", encrypt ? "ID" : "TEXT", cmd);
        return -1;
    }
    return fmt;
}

/* Map every argument through the key into out; CLI_OK or the exit status
 * after printing why. */
static int map_all(const char *cmd, const cli_args *a, bool encrypt, text_format fmt,
                   const idm_opaque_key *key, uint64_t *out)
{
    idm_opaque_encoding enc = fmt == FMT_BASE62 ? IDM_OPAQUE_BASE62 : IDM_OPAQUE_BASE32;
    for (size_t i = 0; i < a->pos_count; i++) {
        const char *text = a->pos[i];
        uint64_t in = 0;
        int rc;
        if (encrypt || fmt == FMT_DEC) {
            int status = parse_63(cmd, encrypt ? "ID" : "TEXT", text, &in);
            if (status != CLI_OK)
                return status;
        } else if ((rc = idm_opaque_parse(text, enc, &in)) != 0) {
            cli_lib_error(cmd, rc, "bad TEXT '%s'", text);
            return CLI_USAGE;
        }
        rc = encrypt ? idm_opaque_encrypt(key, in, &out[i]) : idm_opaque_decrypt(key, in, &out[i]);
        if (rc != 0) {
            /* Cannot happen: the value was checked to be below 2^63. */
            cli_lib_error(cmd, rc, "cannot %s '%s'", cmd, text);
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

static int print_all(const char *cmd, const uint64_t *out, size_t n, bool encrypt,
                     text_format fmt)
{
    idm_opaque_encoding enc = fmt == FMT_BASE62 ? IDM_OPAQUE_BASE62 : IDM_OPAQUE_BASE32;
    int write_errno = 0;
    for (size_t i = 0; i < n; i++) {
        char text[CLI_U64_TEXT_MAX > IDM_OPAQUE_TEXT_MAX ? CLI_U64_TEXT_MAX : IDM_OPAQUE_TEXT_MAX];
        if (!encrypt || fmt == FMT_DEC)
            cli_u64_dec(out[i], text);
        else if (idm_opaque_format(out[i], enc, text) != 0)
            text[0] = '\0'; /* cannot happen: out[i] < 2^63 */
        if (printf("%s\n", text) < 0) {
            write_errno = errno;
            break;
        }
    }
    return cli_output_status(cmd, write_errno);
}

static int run(int argc, char **argv, bool encrypt)
{
    const cli_spec *spec = encrypt ? &encrypt_spec : &decrypt_spec;
    const char *cmd = spec->cmd;
    cli_args a;
    int status = cli_parse_args(spec, argc, argv, &a, NULL);
    if (status != CLI_OK || a.help)
        return status;
    int fmt = check_args(cmd, &a, encrypt);
    if (fmt < 0)
        return CLI_USAGE;

    idm_opaque_key key;
    if ((status = load_key(cmd, a.opt[OPT_KEY_FILE], &key)) != CLI_OK)
        return status;
    uint64_t *out = calloc(a.pos_count, sizeof *out);
    if (out == NULL) {
        cli_error(cmd, "out of memory");
        status = CLI_FAIL;
    }
    if (status == CLI_OK)
        status = map_all(cmd, &a, encrypt, (text_format)fmt, &key, out);
    wipe(&key, sizeof key);
    if (status == CLI_OK)
        status = print_all(cmd, out, a.pos_count, encrypt, (text_format)fmt);
    free(out);
    return status;
}

int cli_cmd_encrypt(int argc, char **argv)
{
    return run(argc, argv, true);
}

int cli_cmd_decrypt(int argc, char **argv)
{
    return run(argc, argv, false);
}
