/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the idmint benchmark programs: monotonic timing, the
 * fixed-wall-time loop, compiler barriers and the result table.
 */
#ifndef IDM_BENCH_UTIL_H
#define IDM_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keep the compiler from dropping or merging stores into memory at p. */
#define BENCH_CLOBBER(p) __asm__ __volatile__("" : : "r"(p) : "memory")

/* CLOCK_MONOTONIC in ns. */
int64_t bench_mono_ns(void);
/* The physical floor of a time-based id: bare clock_gettime(CLOCK_REALTIME)
 * calls for about secs seconds. Returns the ns taken; *count the calls. */
int64_t bench_run_clock_reads(double secs, uint64_t *count);
/* CLOCK_REALTIME in ms, as the C peers read the wall clock. */
int64_t bench_wall_ms(void);
/* CLOCK_REALTIME in ns. */
int64_t bench_wall_ns(void);

/* Seconds each timed measurement runs: IDM_BENCH_SECONDS (0.1 to 60) or 1. */
double bench_seconds(void);

/* Rounds each measurement is repeated: IDM_BENCH_ROUNDS (1 to
 * BENCH_ROUNDS_MAX) or 3. */
#define BENCH_ROUNDS_MAX 9
int bench_rounds(void);

/* The median of v[0..n-1] (sorts v). */
double bench_median(double *v, int n);

/* The 1, 5 and 15 minute load averages ("0.12 0.30 0.25"), or "unknown". */
const char *bench_loadavg(char *buf, size_t len);

/* Print the "machine:" line: CPU model, cores online, kernel, clocksource,
 * load. */
void bench_print_machine(void);

/* Print a formatted line to stdout and flush. */
void bench_printf(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Format n with an SI suffix into buf ("4.05M"). */
const char *bench_si(char *buf, size_t len, double n);

/*
 * One row of the results table:
 *   item    "1", "2", "P1"...
 *   what    what was run
 *   figure  the measured figure, formatted
 *   ratio   the ratio and what it is against, formatted
 *   spread  the figure's range over the rounds
 *   target  the target, formatted ("" if none)
 *   status  "PASS", "BELOW", "WRONG", "" ...
 */
void bench_row(const char *item, const char *what, const char *figure,
               const char *ratio, const char *spread, const char *target,
               const char *status);
void bench_table_header(const char *title);

/* Count correctness failures; main() exits non-zero when any were seen. */
void bench_wrong(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned bench_wrong_count(void);

#endif /* IDM_BENCH_UTIL_H */
