/* SPDX-License-Identifier: MIT */
/*
 * `idmint encrypt` and `idmint decrypt`: opaque public ids. encrypt maps
 * 63-bit ids through the keyed permutation of idmint/opaque.h and prints
 * their fixed-length text; decrypt maps such texts back to the ids. The key
 * is read from a regular file (one line of 32 hex digits; a FIFO or a
 * device is refused, never waited on) and never printed: error messages
 * name the file and what is wrong with it, not its content, and the buffer
 * that held it is cleared. Every argument is checked before anything is
 * printed.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

enum { OPT_HELP, OPT_KEY_FILE, OPT_FORMAT };

static const cli_opt options[] = {
    {"help", 'h', false, OPT_HELP},
    {"key-file", 0, true, OPT_KEY_FILE},
    {"format", 0, true, OPT_FORMAT},
    {NULL, 0, false, 0},
};

typedef enum text_format { FMT_BASE32, FMT_BASE62, FMT_DEC } text_format;

#define LIMIT63 (UINT64_C(1) << 63)

/* Longest key file taken: 32 hex digits and a line end, with room to spare
 * so that a longer file is told apart. */
#define KEY_FILE_MAX 64

static bool parse_format(const char *text, text_format *out)
{
    if (strcmp(text, "base32") == 0)
        *out = FMT_BASE32;
    else if (strcmp(text, "base62") == 0)
        *out = FMT_BASE62;
    else if (strcmp(text, "dec") == 0)
        *out = FMT_DEC;
    else
        return false;
    return true;
}

/* Clear memory in a way the compiler does not drop as a dead store. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *q = p;
    while (n-- > 0)
        *q++ = 0;
}

/* What a file that is not a regular one is, for messages. */
static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "of an unknown type";
}

/*
 * Read and parse the key file. On failure prints one line naming the file
 * and the problem (never the content) and returns CLI_USAGE (the file
 * cannot be opened, is not a regular file or does not hold a key) or
 * CLI_FAIL (a read error).
 */
static int read_key(const char *cmd, const char *path, idm_opaque_key *key)
{
    char buf[KEY_FILE_MAX + 1];
    int fd;
    /* O_NONBLOCK so that a FIFO with no writer does not hang us before the
     * type check (a regular file's reads ignore it). */
    do
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        cli_error(cmd, "cannot open key file '%s': %s", path, strerror(errno));
        return CLI_USAGE;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        cli_error(cmd, "cannot stat key file '%s': %s", path, strerror(e));
        return CLI_FAIL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        cli_error(cmd, "bad key file '%s': not a regular file (it is %s)", path,
                  kind_of(st.st_mode));
        return CLI_USAGE;
    }
    size_t n = 0;
    int status = CLI_OK;
    while (n < sizeof buf - 1) {
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            cli_error(cmd, "cannot read key file '%s': %s", path, strerror(e));
            status = CLI_FAIL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (status == CLI_OK) {
        if (n == sizeof buf - 1) {
            cli_error(cmd, "bad key file '%s': longer than one line of 32 hex digits", path);
            status = CLI_USAGE;
        } else if (memchr(buf, '\0', n) != NULL) {
            cli_error(cmd, "bad key file '%s': it holds a NUL byte, not 32 hex digits", path);
            status = CLI_USAGE;
        } else {
            int rc = idm_opaque_key_parse(buf, key);
            if (rc != 0) {
                cli_lib_error(cmd, rc, "bad key file '%s'", path);
                status = CLI_USAGE;
            }
        }
    }
    wipe(buf, sizeof buf);
    return status;
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

static int run(int argc, char **argv, bool encrypt)
{
    const char *cmd = encrypt ? "encrypt" : "decrypt";
    const char *key_path = NULL, *format_text = NULL;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    if (inputs == NULL) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    size_t n = 0;

    cli_parser p;
    const char *v;
    int id;
    cli_parser_init(&p, cmd, options, argc, argv);
    while ((id = cli_next_opt(&p, &v)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR:
            free(inputs);
            return CLI_USAGE;
        case OPT_HELP:
            fputs(encrypt ? encrypt_usage : decrypt_usage, stdout);
            free(inputs);
            return CLI_OK;
        case CLI_OPT_POS:
            inputs[n++] = v;
            break;
        case OPT_KEY_FILE:
            key_path = v;
            break;
        case OPT_FORMAT:
            format_text = v;
            break;
        default:
            break;
        }
    }

    int status = CLI_OK;
    text_format fmt = FMT_BASE32;
    if (format_text != NULL && !parse_format(format_text, &fmt)) {
        cli_error(cmd, "bad --format '%s': use base32, base62 or dec", format_text);
        status = CLI_USAGE;
    } else if (key_path == NULL) {
        cli_error(cmd, "no --key-file given (try 'idmint %s --help')", cmd);
        status = CLI_USAGE;
    } else if (n == 0) {
        cli_error(cmd, "no %s given (try 'idmint %s --help')", encrypt ? "ID" : "TEXT", cmd);
        status = CLI_USAGE;
    }

    idm_opaque_key key;
    memset(&key, 0, sizeof key);
    if (status == CLI_OK)
        status = read_key(cmd, key_path, &key);

    uint64_t *out = NULL;
    if (status == CLI_OK) {
        out = calloc(n, sizeof *out);
        if (out == NULL) {
            cli_error(cmd, "out of memory");
            status = CLI_FAIL;
        }
    }
    idm_opaque_encoding enc = fmt == FMT_BASE62 ? IDM_OPAQUE_BASE62 : IDM_OPAQUE_BASE32;
    for (size_t i = 0; status == CLI_OK && i < n; i++) {
        uint64_t in = 0;
        int rc;
        if (encrypt || fmt == FMT_DEC) {
            status = parse_63(cmd, encrypt ? "ID" : "TEXT", inputs[i], &in);
            if (status != CLI_OK)
                break;
        } else {
            rc = idm_opaque_parse(inputs[i], enc, &in);
            if (rc != 0) {
                cli_lib_error(cmd, rc, "bad TEXT '%s'", inputs[i]);
                status = CLI_USAGE;
                break;
            }
        }
        rc = encrypt ? idm_opaque_encrypt(&key, in, &out[i]) : idm_opaque_decrypt(&key, in, &out[i]);
        if (rc != 0) {
            /* Cannot happen: the value was checked to be below 2^63. */
            cli_lib_error(cmd, rc, "cannot %s '%s'", cmd, inputs[i]);
            status = CLI_FAIL;
        }
    }
    wipe(&key, sizeof key);

    int write_errno = 0;
    for (size_t i = 0; status == CLI_OK && i < n; i++) {
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
    if (status == CLI_OK)
        status = cli_output_status(cmd, write_errno);

    free(out);
    free(inputs);
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
