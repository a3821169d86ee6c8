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

/* ---- option tables and the parser (opts.c) ---- */

/* One option a command takes: a row of its table. */
typedef struct cli_opt {
    const char *name; /* long name, without the leading "--" */
    char short_name;  /* 0 if none */
    bool has_arg;     /* takes a value: "--name V", "--name=V", "-x V", "-xV" */
    int id;           /* where its value goes: cli_args.opt[id] */
} cli_opt;

/*
 * The ids of the options several commands share, each defined once by its
 * row (or rows) below and listed by the tables of the commands that take
 * it. A command's own options take ids from CLI_ID_OWN up, below
 * CLI_ID_MAX.
 */
enum {
    CLI_ID_HELP,   /* -h, --help: print the usage, do nothing else */
    CLI_ID_LAYOUT, /* the layout group: --layout NAME|TEXT, --epoch T */
    CLI_ID_EPOCH,
    CLI_ID_NODE,   /* --node NAME=VALUE, repeated (the command's list); VALUE
                      ordinal or ordinal:VAR is resolved by the parser, which
                      takes the ordinal's lock (opts.c) */
    CLI_ID_JSON,   /* --json */
    CLI_ID_FORMAT, /* --format NAME (each command names its own formats) */
    CLI_ID_COUNT,  /* -n, --count N */
    CLI_ID_OWN,
    CLI_ID_MAX = 24
};

#define CLI_ROW_HELP {"help", 'h', false, CLI_ID_HELP}
#define CLI_ROWS_LAYOUT {"layout", 0, true, CLI_ID_LAYOUT}, {"epoch", 0, true, CLI_ID_EPOCH}
#define CLI_ROW_NODE {"node", 0, true, CLI_ID_NODE}
#define CLI_ROW_JSON {"json", 0, false, CLI_ID_JSON}
#define CLI_ROW_FORMAT {"format", 0, true, CLI_ID_FORMAT}
#define CLI_ROW_COUNT {"count", 'n', true, CLI_ID_COUNT}
#define CLI_ROW_END {NULL, 0, false, 0}

/* Most values of a command's repeated option (--node, --store). */
#define CLI_LIST_MAX 64
/* pos_max of a command that takes any number of arguments. */
#define CLI_POS_ANY ((size_t)-1)

/* How a command's arguments are read. */
typedef struct cli_spec {
    const char *cmd;     /* for messages: "next", "lease hold" */
    const char *usage;   /* printed by -h/--help */
    const cli_opt *opts; /* ends with CLI_ROW_END */
    size_t pos_max;      /* most arguments; one more is "unexpected argument" */
    int list_id;         /* the option that repeats (0: none): cli_args.list */
    size_t list_max;     /* most values of it, up to CLI_LIST_MAX */
    /* NULL, or called with each option (not --help) as it comes, for a
     * value to be checked at once: CLI_OK, or the exit status after
     * printing why. */
    int (*check)(void *ctx, const char *cmd, int id, const char *value);
} cli_spec;

/* A command's arguments as given. */
typedef struct cli_args {
    const char *opt[CLI_ID_MAX]; /* each option's last value, by id; ""
                                    for an option without one; NULL if
                                    not given */
    const char *list[CLI_LIST_MAX]; /* every value of the repeated option */
    size_t list_count;
    char **pos; /* the arguments, in order (moved to the front of argv) */
    size_t pos_count;
    bool help; /* --help was given and the usage printed (on cli_out()) */
} cli_args;

/*
 * Read argv[1..argc-1] (argv[0] is the command's name) against the table
 * of s: options and arguments in any order; "--" ends the options; "-" and
 * words that start with "-" and a digit (negative numbers) are arguments,
 * so that the commands can report them as bad values. Returns CLI_OK (with
 * a->help set if the usage was printed: the command then stops with CLI_OK)
 * or the exit status after printing why. ctx is passed to s->check.
 */
int cli_parse_args(const cli_spec *s, int argc, char **argv, cli_args *a, void *ctx);

/* Whether option id was given. */
static inline bool cli_given(const cli_args *a, int id)
{
    return a->opt[id] != NULL;
}

/*
 * The index of text in names (NULL-terminated), def if text is NULL, or -1
 * after printing "bad OPT 'TEXT': use a, b or c". For the options that
 * pick one of a few words (--format, --policy, --kind...).
 */
int cli_choice(const char *cmd, const char *opt, const char *text, const char *const *names,
               int def);

/* ---- output sinks (opts.c) ---- */

/*
 * Where a command writes: cli_out() for what it prints (stdout's part),
 * cli_err() for its messages (stderr's part). On the command line these are
 * stdout and stderr; in a captured run (tools.c: idmintd's /v1/plan,
 * /v1/estimate and /v1/birthday) they are the calling thread's buffers, so
 * several threads run commands at once and none of them touches the
 * process's streams. Commands that may run captured (plan, estimate,
 * birthday) write through these only.
 */
FILE *cli_out(void);
FILE *cli_err(void);

/*
 * Start a captured run on this thread: out and err (both non-NULL) take
 * the place of stdout and stderr until cli_capture_end. While captured,
 * what touches files, locks or the environment is refused with a message
 * and CLI_USAGE: --help, a --node value taken from the platform's ordinal,
 * birthday --plot.
 */
void cli_capture_begin(FILE *out, FILE *err);
void cli_capture_end(void);
/* Whether this thread is in a captured run. */
bool cli_captured(void);

/* ---- messages (opts.c) ---- */

/* Print "idmint: CMD: MESSAGE" as one line on cli_err() (control
 * characters in the message are escaped so it stays one line). cmd may be
 * NULL. */
void cli_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* The same, ending with ": <idm_strerror(rc)>" and " (<detail>)" when the
 * library left a detail line. */
void cli_lib_error(const char *cmd, int rc, const char *fmt, ...)
    CLI_PRINTF(3, 4);
/* A notice (what -v prints): the same one-line format as cli_error. */
void cli_note(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Parse the -n/--count value of a minting command: 1 to CLI_COUNT_MAX,
 * strictly (see idm_u64_parse); NULL (not given) is 1. On failure prints
 * the message and returns CLI_USAGE. */
int cli_parse_count(const char *cmd, const char *text, uint64_t *count);

/* Parse a whole number (idm_u64_parse's syntax) given to option opt,
 * from min to max ("bad OPT 'TEXT': must be RANGE" if outside). On failure
 * prints the message and returns CLI_USAGE. */
int cli_parse_u64(const char *cmd, const char *opt, const char *text, uint64_t min,
                  uint64_t max, const char *range, uint64_t *out);

/*
 * After ids were written to cli_out() (stdout, or a captured run's
 * buffer): flush it, and if a write failed print why (not when the reader
 * went away, EPIPE) and return CLI_FAIL; else CLI_OK. write_errno: errno
 * taken right after the write that failed (when ferror() of the output
 * turned true), or 0.
 */
int cli_output_status(const char *cmd, int write_errno);

/* ---- layouts (opts.c) ---- */

#define CLI_DEFAULT_LAYOUT "twitter"

/* Build the layout the layout group names: --layout (else twitter) and
 * --epoch (else the preset's). On failure prints the message and returns
 * CLI_USAGE. */
int cli_build_layout(const char *cmd, const cli_args *a, idm_layout **out);
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
/* The ISO-8601 text of t, or "after year 9999"; returns buf. */
const char *cli_time_or_far(idm_unix_ms t, char *buf);

/* A double as a JSON number, the fewest digits (15 to 17) that read back
 * as the same double; null if it is not finite. */
void cli_json_double(FILE *out, double v);

/* A time as a JSON value: "\"ISO\"", or null past year 9999; returns buf
 * (CLI_JSON_TIME_MAX bytes). */
#define CLI_JSON_TIME_MAX (IDM_TIME_TEXT_MAX + 2)
const char *cli_json_time(idm_unix_ms t, char *buf);

/* A time as ' time=ISO unix_ms=MS', or in JSON ',"time":"ISO","unix_ms":MS'
 * (the time is "-" or null past year 9999). */
void cli_print_time(FILE *out, idm_unix_ms ms, bool json);

/* The fields but time of a decoded id, in the layout's order: ' NAME=V'
 * each, or in JSON ',"NAME":V'. */
void cli_print_fields(FILE *out, const idm_layout *l, const idm_decoded *d, bool json);

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

/* The default state directory ($IDMINT_STATE_DIR, else
 * $XDG_STATE_HOME/idmint, else ~/.local/state/idmint), made (mode 0700) if
 * missing: a malloc'd path, or NULL after printing why. */
char *cli_state_dir(const char *cmd);

/* The embedded default's coordinator for node fields `fields` of layout l
 * ("datacenter+worker"): file://DIR/leases/<hash>, one directory per layout,
 * epoch and fields (a coordinator hands out ids of one scope). Malloc'd, or
 * NULL after printing why. */
char *cli_embedded_lease_url(const char *cmd, const char *dir, const idm_layout *l,
                             const char *fields);

/* ---- worker-id leases (cmd_lease.c) ---- */

/* The help texts spell out the library's lease limits. */
_Static_assert(IDM_LEASE_TTL_MIN_MS == 1000 && IDM_LEASE_TTL_MAX_MS == 3600000 &&
                   IDM_LEASE_TTL_DEFAULT_MS == 10000 && IDM_LEASE_WORKERS_MAX == 65536,
               "the help of next --lease-ttl and lease --ttl/--max names these");

/* Parse a TTL in ms (IDM_LEASE_TTL_MIN_MS to _MAX_MS) given to option opt.
 * On failure prints the message and returns CLI_USAGE. */
int cli_parse_lease_ttl(const char *cmd, const char *opt, const char *text,
                        int64_t *ttl_ms);

/*
 * Report a failed lease call (idm_lease_open, _start, _attach, _list,
 * _close) as one line, "idmint: CMD: WHAT: <the library's detail>", and
 * return the exit status: CLI_USAGE for a bad URL or option, else CLI_FAIL.
 */
int cli_lease_error(const char *cmd, int rc, const char *what);

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
int cli_cmd_audit(int argc, char **argv);
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
