/* SPDX-License-Identifier: MIT */
/*
 * idmintd's monitor (monitor.h): a tick a second samples the clock watch
 * and the minted counters into a ring of rates, for /v1/status.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "common.h"
#include "monitor.h"

/* A step stays "stepped" in the status this long after it was seen. */
#define STEP_SHOWN_NS ((int64_t)IDMD_RATE_SLOTS * 1000000000)

static uint64_t minted_total(idmd_app *app)
{
    uint64_t total = 0;
    for (int k = 0; k < IDMD_K_N; k++)
        total += atomic_load(&app->m.minted[k]);
    return total;
}

static int64_t clock_offset_ns(const idm_clock *c)
{
    return c->wall_ns(c->ctx) - c->mono_ns(c->ctx);
}

int idmd_monitor_init(idmd_app *app)
{
    idmd_monitor *m = &app->mon;
    idm_clock_report first;
    if (pthread_mutex_init(&m->mu, NULL) != 0)
        return -1;
    if (idm__cond_init_mono(&m->cv) != 0) {
        pthread_mutex_destroy(&m->mu);
        return -1;
    }
    idm_clock_watch_init(&m->watch, app->clock);
    (void)idm_clock_watch_sample(&m->watch, &first); /* the baseline */
    m->start_mono = app->clock->mono_ns(app->clock->ctx);
    m->start_offset_ns = clock_offset_ns(app->clock);
    m->offset_ns = m->start_offset_ns;
    m->last_mono = m->start_mono;
    m->last_total = minted_total(app);
    m->head = m->nrate = 0;
    atomic_store(&m->stop, 0);
    m->ready = true;
    return 0;
}

void idmd_monitor_tick(idmd_app *app, idm_mono_ns mono_now)
{
    idmd_monitor *m = &app->mon;
    idm_clock_report rep;
    uint64_t total = minted_total(app);
    int64_t offset = clock_offset_ns(app->clock);
    if (!m->ready)
        return;
    pthread_mutex_lock(&m->mu);
    (void)idm_clock_watch_sample(&m->watch, &rep);
    m->offset_ns = offset;
    if (rep.stepped) {
        m->steps++;
        m->last_step_ms = rep.step_ms;
        m->last_step_mono = mono_now;
    }
    m->drift_ppm = rep.drift_ppm;
    m->drifting = rep.drifting;
    /* The ids since the last tick over the time since it: a tick a little
     * late is no spike. A tick at the same time as the last adds nothing. */
    if (mono_now > m->last_mono) {
        m->rate[m->head] =
            (double)(total - m->last_total) * 1e9 / (double)(mono_now - m->last_mono);
        m->head = (m->head + 1) % IDMD_RATE_SLOTS;
        if (m->nrate < IDMD_RATE_SLOTS)
            m->nrate++;
        m->last_mono = mono_now;
        m->last_total = total;
    }
    pthread_mutex_unlock(&m->mu);
}

void idmd_monitor_view_get(idmd_app *app, idm_mono_ns mono_now, idmd_monitor_view *v)
{
    idmd_monitor *m = &app->mon;
    memset(v, 0, sizeof *v);
    if (!m->ready)
        return;
    pthread_mutex_lock(&m->mu);
    v->ready = true;
    v->uptime_ms = (mono_now - m->start_mono) / 1000000;
    v->offset_ms = (m->offset_ns - m->start_offset_ns) / 1000000;
    v->last_step_ms = m->last_step_ms;
    v->steps = m->steps;
    v->stepped = m->steps > 0 && mono_now - m->last_step_mono < STEP_SHOWN_NS;
    v->drift_ppm = m->drift_ppm;
    v->drifting = m->drifting;
    v->nrate = m->nrate;
    for (size_t i = 0; i < m->nrate; i++) /* oldest first */
        v->rate[i] = m->rate[(m->head + IDMD_RATE_SLOTS - m->nrate + i) % IDMD_RATE_SLOTS];
    pthread_mutex_unlock(&m->mu);
}

/* A tick a second on the real monotonic clock (the app's clock is read by
 * the tick itself), until stop. */
static void *monitor_loop(void *arg)
{
    idmd_app *app = arg;
    idmd_monitor *m = &app->mon;
    int64_t next = idm__mono_ns();
    pthread_mutex_lock(&m->mu);
    while (!atomic_load(&m->stop)) {
        struct timespec ts;
        next += 1000000000;
        ts.tv_sec = (time_t)(next / 1000000000);
        ts.tv_nsec = (long)(next % 1000000000);
        while (!atomic_load(&m->stop) && idm__mono_ns() < next)
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        if (atomic_load(&m->stop))
            break;
        pthread_mutex_unlock(&m->mu);
        idmd_monitor_tick(app, app->clock->mono_ns(app->clock->ctx));
        pthread_mutex_lock(&m->mu);
        if (idm__mono_ns() > next + 1000000000) /* fell behind: no burst */
            next = idm__mono_ns();
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int idmd_monitor_start(idmd_app *app)
{
    idmd_monitor *m = &app->mon;
    if (!m->ready || m->running)
        return -1;
    atomic_store(&m->stop, 0);
    if (pthread_create(&m->th, NULL, monitor_loop, app) != 0)
        return -1;
    m->running = true;
    return 0;
}

void idmd_monitor_stop(idmd_app *app)
{
    idmd_monitor *m = &app->mon;
    if (!m->running)
        return;
    pthread_mutex_lock(&m->mu);
    atomic_store(&m->stop, 1);
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->th, NULL);
    m->running = false;
}

void idmd_monitor_destroy(idmd_app *app)
{
    idmd_monitor *m = &app->mon;
    if (!m->ready)
        return;
    idmd_monitor_stop(app);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    m->ready = false;
}
