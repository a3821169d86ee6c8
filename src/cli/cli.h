/* SPDX-License-Identifier: MIT */
/*
 * The idmint command-line program: declarations shared by its files. The
 * program uses libidmint through its public header only; these helpers parse
 * options, report errors in one format and format values, nothing more.
 */
#ifndef IDMINT_CLI_H
#define IDMINT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <idmint/idmint.h>
#include <idmint/lease.h>

/* Exit statuses. */
#define CLI_OK 0
#define CLI_FAIL 1  /* runtime failure: clock, state file, output */
#define CLI_USAGE 2 /* bad usage or bad input */

/* Room for a decimal or hex 64-bit value with its NUL. */
#define CLI_U64_TEXT_MAX 24

/* Most ids one run of a minting command prints (-n). */
#define CLI_COUNT_MAX 10000000u

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* ---- option parsing (opts.c) ---- */

/* One option a subcommand takes. */
typedef struct cli_opt {
    const char *name;  /* long name, without the leading "--" */
    char short_name;   /* 0 if none */
    bool has_arg;      /* takes a value: "--name V", "--name=V", "-x V", "-xV" */
    int id;            /* returned by cli_next_opt */
} cli_opt;

/* cli_next_opt results besides an option id (ids must be >= 0). */
#define CLI_OPT_END (-1)   /* no arguments left */
#define CLI_OPT_POS (-2)   /* a positional argument, in *value */
#define CLI_OPT_ERROR (-3) /* bad option; message already printed */

/*
 * An option parser over argv[1..argc-1] (argv[0] is the subcommand name).
 * Options and positional arguments may come in any order; "--" ends the
 * options; "-" and words that start with "-" and a digit (negative numbers)
 * are positional, so that the commands can report them as bad values.
 */
typedef struct cli_parser {
    const char *cmd;
    const cli_opt *opts; /* ends with an entry whose name is NULL */
    int argc;
    char **argv;
    int next;
    bool only_positional;
} cli_parser;

void cli_parser_init(cli_parser *p, const char *cmd, const cli_opt *opts,
                     int argc, char **argv);
/* The next option's id (value in *value when it takes one), CLI_OPT_POS,
 * CLI_OPT_END or CLI_OPT_ERROR. */
int cli_next_opt(cli_parser *p, const char **value);

/* ---- messages (opts.c) ---- */

/* Print "idmint: CMD: MESSAGE" as one line on stderr (control characters in
 * the message are escaped so it stays one line). cmd may be NULL. */
void cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* The same, ending with ": <idm_strerror(rc)>" and " (<detail>)" when the
 * library left a detail line. */
void cli_lib_error(const char *cmd, int rc, const char *fmt, ...)
    CLI_PRINTF(3, 4);
/* A notice (what -v prints): the same one-line format as cli_error. */
void cli_note(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Parse the -n/--count value of a minting command: 1 to CLI_COUNT_MAX,
 * strictly (see idm_u64_parse). On failure prints the message and returns
 * CLI_USAGE. */
int cli_parse_count(const char *cmd, const char *text, uint64_t *count);

/*
 * After ids were written to stdout: flush it, and if a write failed print
 * why (not when the reader went away, EPIPE) and return CLI_FAIL; else
 * CLI_OK. write_errno: errno taken right after the write that failed (when
 * ferror(stdout) turned true), or 0.
 */
int cli_output_status(const char *cmd, int write_errno);

/* ---- layouts (opts.c) ---- */

/* The common layout options: --layout NAME|TEXT and --epoch T. */
typedef struct cli_layout_args {
    const char *spec;  /* NULL: "twitter" */
    const char *epoch; /* NULL: the preset's */
} cli_layout_args;

#define CLI_DEFAULT_LAYOUT "twitter"

/* Build the layout the arguments name. On failure prints the message and
 * returns CLI_USAGE. */
int cli_build_layout(const char *cmd, const cli_layout_args *args,
                     idm_layout **out);
/* True if name is one of the library's presets. */
bool cli_is_preset(const char *name);
/* A name for the layout in messages: the preset name or the text form.
 * May clear the library's detail line: call it before a fallible call whose
 * detail is to be printed. */
void cli_layout_label(const idm_layout *l, char *buf, size_t len);

/* ---- formatting (opts.c) ---- */

/* Decimal digits of v; returns the length. buf: CLI_U64_TEXT_MAX bytes. */
size_t cli_u64_dec(uint64_t v, char *buf);
/* "0x" and 16 lowercase hex digits; returns the length (18). */
size_t cli_u64_hex(uint64_t v, char *buf);
/* n bytes as 2n lower-case hex digits and a NUL; returns 2n. */
size_t cli_hex_bytes(const uint8_t *b, size_t n, char *buf);
/* ISO-8601 text of t, or false if the library cannot format it (a year
 * past 9999). buf: IDM_TIME_TEXT_MAX bytes. */
bool cli_time_text(idm_unix_ms t, char *buf);

/*
 * One decoded id, in text ("<id> time=... unix_ms=... field=v ...") or JSON
 * ({"id":"...","time":"...","unix_ms":...,"field":v,...}) form, with a
 * newline, into out. Fields follow the layout's order after the time.
 */
void cli_print_decoded(FILE *out, const idm_layout *l, uint64_t id,
                       const idm_decoded *d, bool json);

/* ---- state files (state.c) ---- */

/*
 * The default state file for generators of layout l with node values node
 * (by field index): see idmint(1), FILES. Named after what decides the ids
 * (epoch, tick, field positions, node bits), never after a preset or field
 * name, so every spelling of one layout gets the same file. Creates its
 * directory (mode 0700) if missing. Returns a malloc'd path, or NULL after
 * printing why.
 */
char *cli_default_state_path(const char *cmd, const idm_layout *l,
                             const uint64_t *node);

/*
 * The state files that earlier builds named for the same layout and node
 * values (<preset or "custom">-<hash>.state in the same directory) and that
 * exist: a NULL-terminated malloc'd list, often empty, for
 * cli_free_paths; NULL after printing why.
 */
char **cli_legacy_state_paths(const char *cmd, const idm_layout *l,
                              const uint64_t *node);
void cli_free_paths(char **paths);

/* Open a generator, retrying for up to two seconds while another process
 * holds its state file. Sets opts->state_fresh when the file is missing. */
int cli_open_generator(idm_snowflake **out, idm_snowflake_opts *opts);

/* ---- worker-id leases (cmd_lease.c) ---- */

/* Default --lease-ttl / --ttl, and the range the library takes. */
#define CLI_LEASE_TTL_DEFAULT 10000
#define CLI_LEASE_TTL_MIN 1000
#define CLI_LEASE_TTL_MAX 3600000
/* Most worker ids one lease directory can hand out (the library's limit). */
#define CLI_LEASE_MAX_WORKERS 65536u

/* Parse a TTL in ms (CLI_LEASE_TTL_MIN to _MAX) given to option opt. On
 * failure prints the message and returns CLI_USAGE. */
int cli_parse_lease_ttl(const char *cmd, const char *opt, const char *text,
                        int64_t *ttl_ms);

/*
 * Report a failed lease call (idm_lease_open, _attach, _list, _close) as one
 * line, "idmint: CMD: WHAT: <the library's detail>", and return the exit
 * status: CLI_USAGE for a bad URL or option, else CLI_FAIL.
 */
int cli_lease_error(const char *cmd, int rc, const char *what);

/* Claim a worker id below max_workers from url, for scope (what the ids
 * are ids of, from idm_lease_scope; NULL for `lease hold`, which has no
 * layout). On failure prints the message and returns the exit status: a
 * coordinator that hands out ids of another scope is a usage error (2). */
int cli_lease_claim(const char *cmd, const char *url, uint32_t max_workers,
                    int64_t ttl_ms, const char *scope, idm_lease **out);

/*
 * A previous holder that died without releasing left a mark up to its TTL
 * ahead of the clock: sleep until the wall clock has passed mark, so that a
 * generator opened with after_ms = mark can start. Gives up (printing why,
 * returning CLI_FAIL) if the mark is more than max_wait_ms ahead.
 */
int cli_lease_wait_mark(const char *cmd, idm_unix_ms mark,
                        int64_t max_wait_ms, bool verbose);

/* ---- subcommands: each gets argv[0] = its own name ---- */

int cli_cmd_next(int argc, char **argv);
int cli_cmd_decode(int argc, char **argv);
int cli_cmd_range(int argc, char **argv);
int cli_cmd_layout(int argc, char **argv);
int cli_cmd_uuid7(int argc, char **argv);
int cli_cmd_uuid4(int argc, char **argv);
int cli_cmd_ulid(int argc, char **argv);
int cli_cmd_objectid(int argc, char **argv);
int cli_cmd_lease(int argc, char **argv);
int cli_cmd_seq(int argc, char **argv);
int cli_cmd_plan(int argc, char **argv);
int cli_cmd_estimate(int argc, char **argv);
int cli_cmd_birthday(int argc, char **argv);
int cli_cmd_encrypt(int argc, char **argv);
int cli_cmd_decrypt(int argc, char **argv);

/* Help lines for the --layout and --epoch options every subcommand that
 * builds a layout shares. */
#define CLI_HELP_LAYOUT                                                        \
    "      --layout NAME|TEXT preset name or text form (default twitter)\n"   \
    "      --epoch T          epoch, unix ms or ISO-8601 (needed for a text\n" \
    "                         form; overrides a preset's)\n"

#endif /* IDMINT_CLI_H */
