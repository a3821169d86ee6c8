/* SPDX-License-Identifier: MIT */
/*
 * Clocks. Everything in idmint that needs time asks an idm_clock, so tests
 * can inject one and nothing reads the system clock behind the caller's back.
 *
 * Two kinds of time never mix: wall time (idm_wall_ns, nanoseconds since
 * 1970-01-01T00:00:00Z, may step backwards; idm_unix_ms is the same clock in
 * milliseconds, the unit ids carry) and monotonic time (idm_mono_ns,
 * nanoseconds from an arbitrary origin, never steps back), which is for
 * measuring intervals and deadlines.
 */
#ifndef IDMINT_CLOCK_H
#define IDMINT_CLOCK_H

#include <stdint.h>
#include <stdbool.h>
#include "export.h"

typedef int64_t idm_unix_ms; /* wall clock, ms since the Unix epoch */
typedef int64_t idm_wall_ns; /* wall clock, ns since the Unix epoch */
typedef int64_t idm_mono_ns; /* monotonic clock, ns, arbitrary origin */

/*
 * A clock: three function pointers and a context. All three must be set and
 * safe to call from any thread at once.
 *   wall_ns:  the wall time now.
 *   mono_ns:  the monotonic time now.
 *   sleep_ns: block the caller for about ns nanoseconds (ns > 0).
 */
typedef struct idm_clock {
    void *ctx;
    idm_wall_ns (*wall_ns)(void *ctx);
    idm_mono_ns (*mono_ns)(void *ctx);
    void (*sleep_ns)(void *ctx, int64_t ns);
} idm_clock;

/*
 * The system clock: CLOCK_REALTIME for wall time (a vDSO read, no syscall on
 * Linux), CLOCK_MONOTONIC for intervals. Sleeping uses nanosleep for all but
 * the last ~100 us, then spins on CLOCK_MONOTONIC, so a generator waiting for
 * the next millisecond wakes on time. The returned pointer is to a static
 * object. Thread-safe.
 */
IDM_EXTERN const idm_clock *idm_clock_system(void);

/*
 * A manual clock for tests and simulations. Time moves only when told:
 * idm_manual_clock_set / _advance move the wall time; sleeping advances the
 * monotonic time by the slept amount and, if advance_on_sleep is true, the
 * wall time too (a clock that ticks while the caller waits). With
 * advance_on_sleep false the wall clock is frozen, as in a stopped RTC.
 * All operations are atomic and thread-safe.
 */
typedef struct idm_manual_clock idm_manual_clock;

IDM_EXTERN int idm_manual_clock_new(idm_manual_clock **out, idm_unix_ms start,
                                    bool advance_on_sleep);
IDM_EXTERN void idm_manual_clock_free(idm_manual_clock *mc);
/* The clock interface of mc; valid until idm_manual_clock_free. */
IDM_EXTERN const idm_clock *idm_manual_clock_clock(idm_manual_clock *mc);
IDM_EXTERN void idm_manual_clock_set(idm_manual_clock *mc, idm_unix_ms now);
/* Move wall time by delta_ms (negative steps it back). Monotonic time moves
 * forward by |delta_ms| when delta_ms > 0 and stays when it is negative. */
IDM_EXTERN void idm_manual_clock_advance(idm_manual_clock *mc, int64_t delta_ms);
/* The same in nanoseconds. */
IDM_EXTERN void idm_manual_clock_advance_ns(idm_manual_clock *mc, int64_t delta_ns);
/* The manual clock's wall time now, in ms (floor). */
IDM_EXTERN idm_unix_ms idm_manual_clock_now_ms(const idm_manual_clock *mc);
/* Move wall and monotonic time at different rates, e.g. to model a clock
 * that runs fast: wall by wall_ms, monotonic by mono_ns. Either may be 0 to
 * move one clock alone: (mc, ms, 0) is a resumed suspend or a wall step,
 * (mc, 0, ns) monotonic time passing under a stopped wall clock. */
IDM_EXTERN void idm_manual_clock_skew(idm_manual_clock *mc, int64_t wall_ms,
                                      int64_t mono_ns);
IDM_EXTERN void idm_manual_clock_set_advance_on_sleep(idm_manual_clock *mc,
                                                      bool on);
/* Total nanoseconds callers have asked to sleep, and how many times. */
IDM_EXTERN int64_t idm_manual_clock_slept_ns(const idm_manual_clock *mc);
IDM_EXTERN int64_t idm_manual_clock_sleeps(const idm_manual_clock *mc);

/*
 * A clock watch compares the wall clock against the monotonic clock between
 * samples, to catch steps (NTP stepping, a VM restored from a snapshot) and
 * drift (a clock running fast or slow). It is meant for health checks, off
 * the minting path. Not thread-safe: one owner samples it.
 *
 * A step is a change of (wall - monotonic) larger than step_alert_ms between
 * two samples. Drift is the rate of change of that offset, in parts per
 * million of elapsed monotonic time, measured over at least min_window_ms;
 * slews within drift_alert_ppm (NTP slews at most 500 ppm; leap smears about
 * 11.6 ppm) are normal.
 */
typedef struct idm_clock_watch {
    const idm_clock *clock;
    int64_t step_alert_ms;   /* default 100 */
    int64_t drift_alert_ppm; /* default 1000 */
    int64_t min_window_ms;   /* default 1000 */
    /* private: */
    int64_t last_offset_ns;  /* wall - mono at the last sample */
    idm_mono_ns window_mono; /* start of the drift window */
    int64_t window_offset_ns;
    bool started;
} idm_clock_watch;

typedef struct idm_clock_report {
    int64_t step_ms;   /* offset change since the previous sample, signed */
    int64_t drift_ppm; /* offset change rate over the last full window */
    bool stepped;      /* |step_ms| > step_alert_ms */
    bool drifting;     /* |drift_ppm| > drift_alert_ppm */
} idm_clock_report;

IDM_EXTERN void idm_clock_watch_init(idm_clock_watch *w, const idm_clock *clock);
/* Take a sample; fills *report. Returns true if anything needs an alert. */
IDM_EXTERN bool idm_clock_watch_sample(idm_clock_watch *w,
                                       idm_clock_report *report);

#endif /* IDMINT_CLOCK_H */
