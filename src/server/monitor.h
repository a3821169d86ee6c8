/* SPDX-License-Identifier: MIT */
/*
 * idmintd's monitor: what /v1/status shows of the recent past. Once a
 * second a thread of its own samples an idm_clock_watch on the generator's
 * clock (steps and drift of wall time against monotonic time) and the ids
 * minted so far (the metrics' counters), keeping the last 60 seconds' rates
 * in a ring. Everything it keeps is under its own mutex, never held across
 * anything but a copy: a status request waits for nothing else.
 *
 * The thread only calls idmd_monitor_tick; the unit tests call that
 * directly with the monotonic times they like (the thread is not started
 * there), so no test waits on real seconds.
 */
#ifndef IDMD_MONITOR_H
#define IDMD_MONITOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <idmint/clock.h>

/* Seconds of rates kept (one slot a tick). */
#define IDMD_RATE_SLOTS 60

struct idmd_app;

typedef struct idmd_monitor {
    bool ready;                 /* idmd_monitor_init ran (mu exists) */
    pthread_mutex_t mu;         /* everything below */
    idm_clock_watch watch;
    idm_mono_ns start_mono;     /* the app's clock at init: uptime's origin */
    int64_t start_offset_ns;    /* wall - mono at init */
    int64_t offset_ns;          /* wall - mono at the last tick */
    int64_t last_step_ms;       /* the last step seen (signed), 0: none */
    idm_mono_ns last_step_mono; /* when it was seen */
    uint64_t steps;             /* samples that saw a step */
    int64_t drift_ppm;          /* the watch's last drift figure */
    bool drifting;
    idm_mono_ns last_mono;      /* the last tick's time */
    uint64_t last_total;        /* ids minted (all kinds) at the last tick */
    double rate[IDMD_RATE_SLOTS]; /* ids a second, a ring: rate[head] next */
    size_t head, nrate;
    /* The thread (idmd_monitor_start). */
    bool running;
    atomic_int stop;
    pthread_cond_t cv;          /* CLOCK_MONOTONIC: stop is asked */
    pthread_t th;
} idmd_monitor;

/* What /v1/status shows of the monitor (a copy taken under its mutex). */
typedef struct idmd_monitor_view {
    bool ready;
    int64_t uptime_ms;
    int64_t offset_ms, last_step_ms, drift_ppm;
    uint64_t steps;
    bool stepped;               /* a step seen within the last 60 s */
    bool drifting;
    double rate[IDMD_RATE_SLOTS]; /* oldest first */
    size_t nrate;
} idmd_monitor_view;

/* Set app->mon up: its mutex, the watch's first sample, uptime's origin
 * (now on app->clock). 0, or -1 if the mutex cannot be made. */
int idmd_monitor_init(struct idmd_app *app);
/* One sample, at mono_now on app->clock: the watch, the minted counters
 * (the ids since the last tick over the time since it, one ring slot). */
void idmd_monitor_tick(struct idmd_app *app, idm_mono_ns mono_now);
/* The thread: a tick a second until idmd_monitor_stop. 0 or -1. */
int idmd_monitor_start(struct idmd_app *app);
void idmd_monitor_stop(struct idmd_app *app);
/* Frees what init made (after stop). */
void idmd_monitor_destroy(struct idmd_app *app);
/* A copy of what the monitor knows, at mono_now on app->clock. */
void idmd_monitor_view_get(struct idmd_app *app, idm_mono_ns mono_now, idmd_monitor_view *v);

#endif /* IDMD_MONITOR_H */
