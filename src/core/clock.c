/* SPDX-License-Identifier: MIT */
/*
 * Clocks: the system clock, a manual clock for tests, and the clock watch
 * that health checks use to notice steps and drift. Nothing here caches a
 * reading: every call asks its clock.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

/* ---- system clock ---- */

static idm_wall_ns sys_wall_ns(void *ctx)
{
    (void)ctx;
    return idm__sys_wall_ns();
}

static idm_mono_ns sys_mono_ns(void *ctx)
{
    (void)ctx;
    return idm__sys_mono_ns();
}

/* Spin for the last stretch: nanosleep on Linux overshoots by tens of
 * microseconds, which at a 1 ms tick would waste a noticeable share of the
 * next tick's sequence space. */
#define SPIN_NS 100000

static void sys_sleep_ns(void *ctx, int64_t ns)
{
    idm_mono_ns target = sys_mono_ns(ctx) + ns;
    if (ns > SPIN_NS) {
        int64_t coarse = ns - SPIN_NS;
        struct timespec req = {(time_t)(coarse / 1000000000), (long)(coarse % 1000000000)};
        while (nanosleep(&req, &req) != 0 && errno == EINTR)
            ;
    }
    while (sys_mono_ns(ctx) < target)
        ;
}

static const idm_clock system_clock = {NULL, sys_wall_ns, sys_mono_ns, sys_sleep_ns};

const idm_clock *idm_clock_system(void)
{
    return &system_clock;
}

/* ---- manual clock ---- */

/* ms to ns, saturating at the ends of int64 nanoseconds (years 1677 and
 * 2262) rather than overflow. */
static int64_t ms_to_ns(int64_t ms)
{
    if (ms > INT64_MAX / IDM__NS_PER_MS)
        return INT64_MAX;
    if (ms < INT64_MIN / IDM__NS_PER_MS)
        return INT64_MIN;
    return ms * IDM__NS_PER_MS;
}

struct idm_manual_clock {
    idm_clock iface;
    _Atomic int64_t wall_ns;
    _Atomic int64_t mono_ns;
    _Atomic int64_t slept_ns;
    _Atomic int64_t sleeps;
    atomic_bool advance_on_sleep;
};

static idm_wall_ns man_wall_ns(void *ctx)
{
    idm_manual_clock *mc = ctx;
    return atomic_load(&mc->wall_ns);
}

static idm_mono_ns man_mono_ns(void *ctx)
{
    idm_manual_clock *mc = ctx;
    return atomic_load(&mc->mono_ns);
}

static void man_sleep_ns(void *ctx, int64_t ns)
{
    idm_manual_clock *mc = ctx;
    if (ns < 0)
        ns = 0;
    atomic_fetch_add(&mc->slept_ns, ns);
    atomic_fetch_add(&mc->sleeps, 1);
    atomic_fetch_add(&mc->mono_ns, ns);
    if (atomic_load(&mc->advance_on_sleep))
        atomic_fetch_add(&mc->wall_ns, ns);
}

int idm_manual_clock_new(idm_manual_clock **out, idm_unix_ms start, bool advance_on_sleep)
{
    idm_manual_clock *mc;
    idm__clear_detail();
    if (out == NULL)
        return idm__fail(IDM_EINVAL, "manual clock: no output pointer");
    mc = calloc(1, sizeof *mc);
    if (mc == NULL)
        return IDM_ENOMEM;
    mc->iface.ctx = mc;
    mc->iface.wall_ns = man_wall_ns;
    mc->iface.mono_ns = man_mono_ns;
    mc->iface.sleep_ns = man_sleep_ns;
    atomic_init(&mc->wall_ns, ms_to_ns(start));
    /* An arbitrary origin, far from zero, so that code subtracting monotonic
     * readings cannot lean on it being zero. */
    atomic_init(&mc->mono_ns, INT64_C(1000000000000));
    atomic_init(&mc->slept_ns, 0);
    atomic_init(&mc->sleeps, 0);
    atomic_init(&mc->advance_on_sleep, advance_on_sleep);
    *out = mc;
    return 0;
}

void idm_manual_clock_free(idm_manual_clock *mc)
{
    free(mc);
}

const idm_clock *idm_manual_clock_clock(idm_manual_clock *mc)
{
    return &mc->iface;
}

void idm_manual_clock_set(idm_manual_clock *mc, idm_unix_ms now)
{
    int64_t target = ms_to_ns(now);
    int64_t old = atomic_exchange(&mc->wall_ns, target);
    if (target > old)
        atomic_fetch_add(&mc->mono_ns, target - old);
}

void idm_manual_clock_advance_ns(idm_manual_clock *mc, int64_t delta_ns)
{
    atomic_fetch_add(&mc->wall_ns, delta_ns);
    if (delta_ns > 0)
        atomic_fetch_add(&mc->mono_ns, delta_ns);
}

void idm_manual_clock_advance(idm_manual_clock *mc, int64_t delta_ms)
{
    idm_manual_clock_advance_ns(mc, ms_to_ns(delta_ms));
}

void idm_manual_clock_skew(idm_manual_clock *mc, int64_t wall_ms, int64_t mono_ns)
{
    atomic_fetch_add(&mc->wall_ns, ms_to_ns(wall_ms));
    atomic_fetch_add(&mc->mono_ns, mono_ns);
}

idm_unix_ms idm_manual_clock_now_ms(const idm_manual_clock *mc)
{
    return idm__floordiv(atomic_load(&mc->wall_ns), IDM__NS_PER_MS);
}

void idm_manual_clock_set_advance_on_sleep(idm_manual_clock *mc, bool on)
{
    atomic_store(&mc->advance_on_sleep, on);
}

int64_t idm_manual_clock_slept_ns(const idm_manual_clock *mc)
{
    return atomic_load(&mc->slept_ns);
}

int64_t idm_manual_clock_sleeps(const idm_manual_clock *mc)
{
    return atomic_load(&mc->sleeps);
}

/* ---- clock watch ---- */

void idm_clock_watch_init(idm_clock_watch *w, const idm_clock *clock)
{
    w->clock = clock != NULL ? clock : idm_clock_system();
    w->step_alert_ms = 100;
    w->drift_alert_ppm = 1000;
    w->min_window_ms = 1000;
    w->last_offset_ns = 0;
    w->window_mono = 0;
    w->window_offset_ns = 0;
    w->started = false;
}

bool idm_clock_watch_sample(idm_clock_watch *w, idm_clock_report *report)
{
    idm_mono_ns mono = w->clock->mono_ns(w->clock->ctx);
    idm_wall_ns wall = w->clock->wall_ns(w->clock->ctx);
    int64_t offset = wall - mono;
    idm_clock_report r = {0, 0, false, false};

    if (!w->started) {
        w->started = true;
        w->last_offset_ns = offset;
        w->window_mono = mono;
        w->window_offset_ns = offset;
    } else {
        int64_t step_ns = offset - w->last_offset_ns;
        int64_t elapsed = mono - w->window_mono;
        r.step_ms = step_ns / IDM__NS_PER_MS;
        r.stepped = r.step_ms > w->step_alert_ms || r.step_ms < -w->step_alert_ms;
        w->last_offset_ns = offset;
        if (r.stepped) {
            /* A step is reported once; restart the drift window after it so
             * the step is not also read as a rate. */
            w->window_mono = mono;
            w->window_offset_ns = offset;
        } else if (elapsed >= w->min_window_ms * IDM__NS_PER_MS) {
            double ppm = (double)(offset - w->window_offset_ns) * 1e6 / (double)elapsed;
            r.drift_ppm = (int64_t)ppm;
            r.drifting = r.drift_ppm > w->drift_alert_ppm || r.drift_ppm < -w->drift_alert_ppm;
            w->window_mono = mono;
            w->window_offset_ns = offset;
        }
    }
    if (report != NULL)
        *report = r;
    return r.stepped || r.drifting;
}
