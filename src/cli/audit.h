/* SPDX-License-Identifier: MIT */
/*
 * The engine of `idmint audit` (audit.c): reads the ids people already have,
 * one record at a time, and says what went wrong with them. cmd_audit.c is
 * the command around it (options, files and stdin, PostgreSQL, exit
 * statuses); the engine does no I/O but its spill files and the reports it
 * is asked to write.
 *
 * A record is one id and, optionally, the time its row was recorded (the
 * row's created_at), in the order the input gives them (which should be
 * the recorded order). Ids are of one kind per audit: Snowflake-style ids
 * of one layout (decimal or 0x hex), or UUIDv7, ULID or ObjectId (their
 * time and randomness only: they carry no worker).
 *
 * What an audit finds (audit_finding_kind), most serious first:
 *   DUPLICATE      an id seen more than once: how many, which, and for a
 *                  Snowflake id its decoded worker and time.
 *   TWO_WRITERS    signs of two live processes on one worker id: within one
 *                  tick of one worker, ids from two interleaved increasing
 *                  sequences (the sequence field goes down and up again
 *                  within the tick in recorded order), or duplicates within
 *                  one worker.
 *   CLOCK_STEP     per worker, the id's time running backwards in recorded
 *                  order: when (the recorded time, else the id's time of the
 *                  last id before the step), how far (ms), and for how long
 *                  (until the ids' time passed the time before the step).
 *   FUTURE         an id whose time is past the row's recorded time (or the
 *                  audit's start, with no recorded time) by more than
 *                  future_ms.
 *   BEFORE_EPOCH   an id whose time is before its epoch: a Snowflake id
 *                  that does not fit its layout (bits set above the
 *                  layout's width, so its time cannot be read from the
 *                  epoch up), or a row recorded before the layout's epoch;
 *                  a 128-bit id whose time is 0 (before any real clock).
 *   RANDOMNESS     UUIDv7 and ULID: bits of the random part that were the
 *                  same in the first id of every millisecond (of at least
 *                  64): a broken random source, or bits that are a counter
 *                  starting at a fixed value. How many bits, of how many,
 *                  over how many milliseconds.
 *   SKEW           per worker, the offset between the id's time and the
 *                  recorded time (median over a window), when it is beyond
 *                  skew_ms: which worker is off, by how much, since when.
 *   CAPACITY       per worker, the busiest tick against the layout's
 *                  sequence capacity (reported when above 50%: a worker
 *                  that waits on exhaustion shows as a full tick).
 *   WORKERS        the worker ids in use against the field's size (always
 *                  reported, as information, for Snowflake ids).
 *
 * Memory is bounded by the number of workers plus the duplicate check; the
 * duplicate check keeps up to mem_bytes of ids in memory (16 bytes an id
 * for Snowflake ids, 24 for 128-bit ones, twice over while sorting), and
 * beyond that sorts runs to files in tmpdir and merges them. At most
 * AUDIT_RUNS_MAX runs are made: an audit of more ids than AUDIT_RUNS_MAX
 * times what fits in memory fails with IDM_ERANGE, naming --memory (with
 * the default 2 GiB, 64 billion Snowflake ids).
 */
#ifndef IDMINT_AUDIT_H
#define IDMINT_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <idmint/idmint.h>

/* The smallest mem_bytes (64 MiB), and the most runs spilled. */
#define AUDIT_MEM_MIN ((size_t)64 << 20)
#define AUDIT_RUNS_MAX 1000

typedef enum audit_kind {
    AUDIT_SNOWFLAKE,
    AUDIT_UUID7,
    AUDIT_ULID,
    AUDIT_OBJECTID,
    AUDIT_AUTO /* told from the first record's form */
} audit_kind;

typedef struct audit_opts {
    audit_kind kind;
    const idm_layout *layout; /* required for Snowflake ids (and AUTO) */
    int64_t future_ms;        /* default 60000 */
    int64_t skew_ms;          /* default 1000 */
    size_t examples;          /* ids shown per finding; default 10 */
    int64_t step_ms;          /* a worker's id time going back by this
                                 much or less is rows recorded out of mint
                                 order, not a clock step; default 0 */
    const char *tmpdir;       /* spill files; NULL: $TMPDIR or /tmp */
    size_t mem_bytes;         /* memory for the duplicate check's keys
                                 (and the sort's second array); 0: 2 GiB,
                                 at least AUDIT_MEM_MIN */
    size_t mem_ids;           /* if not 0, ids held before a run is
                                 spilled (tests); else from mem_bytes */
    int64_t now_ms;           /* the audit's clock (for FUTURE without a
                                 recorded time); 0: the system clock */
} audit_opts;

/* Defaults: AUTO, no layout, the values above. */
void audit_opts_init(audit_opts *o);

typedef enum audit_finding_kind {
    AF_DUPLICATE,
    AF_TWO_WRITERS,
    AF_CLOCK_STEP,
    AF_FUTURE,
    AF_BEFORE_EPOCH,
    AF_RANDOMNESS,
    AF_SKEW,
    AF_CAPACITY,
    AF_WORKERS,
    AF_KINDS /* the number of kinds */
} audit_finding_kind;

/* "duplicate", "two-writers", "clock-step", ... as in the JSON. */
const char *audit_finding_name(audit_finding_kind k);

/* One id a finding shows, with where it came from. */
typedef struct audit_example {
    char id[40];      /* as given in the input (a duplicate's: in the
                         canonical form, decimal for a Snowflake id) */
    uint64_t line;    /* 1-based line (or row) number */
    int64_t id_ms;    /* the id's time, Unix ms */
    int64_t rec_ms;   /* the recorded time, Unix ms; INT64_MIN if none */
} audit_example;

typedef struct audit_finding {
    audit_finding_kind kind;
    bool has_worker;
    char worker[64];   /* the node fields, "datacenter=1 worker=7" */
    int64_t at_ms;     /* when (Unix ms) */
    int64_t size;      /* how far or how much: ms for a step, a skew or a
                          future id; ids for a duplicate (copies) or a tick
                          (ids in the busiest tick); workers in use;
                          random bits that never changed */
    int64_t span_ms;   /* for how long (steps, skew), else 0 */
    uint64_t count;    /* how many ids the finding covers (randomness:
                          the milliseconds judged) */
    uint64_t limit;    /* capacity: the sequence's ids per tick; workers:
                          the field's size; randomness: the random bits
                          of the kind; else 0 */
    size_t n_examples;
    audit_example ex[]; /* n_examples of them */
} audit_finding;

typedef struct audit audit;

/* IDM_EINVAL (with a detail) for options that cannot work, e.g. a
 * Snowflake kind without a layout. */
int audit_new(audit **out, const audit_opts *o);
void audit_free(audit *a);

/*
 * One input line (no newline): an id, optionally followed by a space, tab
 * or comma and the recorded time (ISO 8601, or Unix ms). Blank lines and
 * lines starting with '#' are skipped. On bad input returns IDM_EPARSE (or
 * IDM_EINVAL for a kind that differs from the audit's) with a message in
 * err that names the line number and what was wrong, and the record is not
 * counted.
 */
int audit_add_line(audit *a, const char *line, size_t len, uint64_t line_no, char *err,
                   size_t err_len);

/* The same for a record already split (as from a database row); rec may be
 * NULL. A row is never taken for a CSV header. */
int audit_add(audit *a, const char *id, const char *rec, uint64_t line_no, char *err,
              size_t err_len);

/* After the last record: the duplicate check and the per-worker summaries.
 * IDM_EIO if spill files fail. (audit_add and audit_add_line may fail so
 * too, or with IDM_ERANGE past AUDIT_RUNS_MAX runs, when keys spill.) */
int audit_finish(audit *a);

/* After audit_finish: the findings, most serious first. */
size_t audit_findings(const audit *a, const audit_finding *const **out);

/* Records read, and ids by kind. */
uint64_t audit_records(const audit *a);

/* The report: readable text (the findings, the busiest tick of all, a
 * summary), or one JSON document (the findings, and per worker its ids,
 * their time span and its busiest tick). */
int audit_write_text(const audit *a, FILE *out);
int audit_write_json(const audit *a, FILE *out);
/* Per worker, the offset of the ids' time from the recorded time over
 * time, steps marked; needs recorded times. */
int audit_write_svg(const audit *a, FILE *out);

/* 1 when a finding is a duplicate, two writers or a clock step; else 0. */
int audit_exit_status(const audit *a);

#endif /* IDMINT_AUDIT_H */
