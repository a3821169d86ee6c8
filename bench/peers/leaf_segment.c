/* SPDX-License-Identifier: MIT */
/*
 * A C rendering of Meituan Leaf's segment mode (Leaf-segment), as published
 * in Meituan's open-source "Leaf" project (SegmentIDGenImpl.java, 2017) and
 * described in its announcement ("Leaf: Meituan's distributed id generator",
 * Meituan tech blog, 2017):
 *
 * A SegmentBuffer holds two Segments (each an AtomicLong value, a max and a
 * step), the index of the current one, nextReady, a ReadWriteLock and an
 * AtomicBoolean threadRunning. getIdFromSegmentBuffer loops:
 *
 *     rLock.lock()
 *       segment = current
 *       if (!nextReady && segment.idle < 0.9 * segment.step &&
 *           threadRunning.compareAndSet(false, true))
 *           executor: load the other segment from the database;
 *                     wLock { nextReady = true }; threadRunning = false
 *       value = segment.value.getAndIncrement()
 *       if (value < segment.max) return value
 *     rLock.unlock()
 *     waitAndSleep: spin while threadRunning, at most 10,000 times, then
 *                   sleep 10 ms
 *     wLock.lock()
 *       value = current.value.getAndIncrement()
 *       if (value < current.max) return value
 *       if (nextReady) { switch to the other segment; nextReady = false }
 *       else fail ("Both two segments are not ready")
 *     wLock.unlock()
 *
 * (idle = max - value: the load starts once 10% of the segment is used.)
 * updateSegmentFromDb adapts the step: a segment used up in less than
 * SEGMENT_DURATION (15 minutes) doubles it (up to MAX_STEP, 1,000,000), one
 * that lasted more than twice that halves it (not below the configured
 * step). The database call is a function given at init (the benchmark
 * passes an idmint ticket store); the executor is one worker thread.
 *
 * The pthread rwlock stands for Java's ReentrantReadWriteLock, a C11 atomic
 * for AtomicLong / AtomicBoolean. This file is the peer the segment
 * benchmark compares against; it is not part of the library.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The peer's interface (declared again in idm_bench_seg.c). */
typedef int (*peer_leaf_take_fn)(void *ctx, int64_t step, int64_t *first);
typedef struct peer_leaf peer_leaf;
peer_leaf *peer_leaf_open(peer_leaf_take_fn take, void *ctx, int64_t step);
int peer_leaf_next(peer_leaf *p, int64_t *id);
void peer_leaf_close(peer_leaf *p);

#define LEAF_MAX_STEP INT64_C(1000000)
#define LEAF_SEGMENT_DURATION_NS (INT64_C(15) * 60 * 1000000000)

typedef struct leaf_segment {
    _Atomic int64_t value;
    int64_t max;
    int64_t step;
} leaf_segment;

struct peer_leaf {
    pthread_rwlock_t lock;
    leaf_segment segments[2];
    int current_pos;
    bool next_ready;        /* written under the write lock */
    _Atomic bool thread_running;
    int64_t step, min_step; /* the buffer's step (adapted), the configured one */
    int64_t update_ns;      /* when the last segment was loaded */
    peer_leaf_take_fn take;
    void *ctx;
    /* the executor */
    pthread_t worker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool job, stop;
};

static int64_t leaf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* updateSegmentFromDb: the step adapts to how long the last one lasted. */
static int leaf_update(peer_leaf *p, leaf_segment *s, bool first_load)
{
    int64_t step = p->step, first = 0, now = leaf_now_ns();
    if (!first_load) {
        int64_t took = now - p->update_ns;
        if (took < LEAF_SEGMENT_DURATION_NS) {
            if (step * 2 <= LEAF_MAX_STEP)
                step *= 2;
        } else if (took >= LEAF_SEGMENT_DURATION_NS * 2) {
            step = step / 2 >= p->min_step ? step / 2 : step;
        }
    }
    if (p->take(p->ctx, step, &first) != 0)
        return -1;
    p->step = step;
    p->update_ns = now;
    atomic_store_explicit(&s->value, first, memory_order_relaxed);
    s->max = first + step;
    s->step = step;
    return 0;
}

static void *leaf_worker(void *arg)
{
    peer_leaf *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->job && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        p->job = false;
        pthread_mutex_unlock(&p->mu);
        /* Only this thread writes the other segment, while nextReady is
         * false; readers use the current one. */
        leaf_segment *next = &p->segments[(p->current_pos + 1) % 2];
        bool ok = leaf_update(p, next, false) == 0;
        if (ok) {
            pthread_rwlock_wrlock(&p->lock);
            p->next_ready = true;
            pthread_rwlock_unlock(&p->lock);
        }
        atomic_store(&p->thread_running, false);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

peer_leaf *peer_leaf_open(peer_leaf_take_fn take, void *ctx, int64_t step)
{
    peer_leaf *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    pthread_rwlock_init(&p->lock, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->take = take;
    p->ctx = ctx;
    p->step = p->min_step = step;
    atomic_init(&p->thread_running, false);
    if (leaf_update(p, &p->segments[0], true) != 0 ||
        pthread_create(&p->worker, NULL, leaf_worker, p) != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        pthread_rwlock_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

static void leaf_wait_and_sleep(peer_leaf *p)
{
    int roll = 0;
    while (atomic_load(&p->thread_running)) {
        if (++roll > 10000) {
            struct timespec ts = {0, 10 * 1000000};
            nanosleep(&ts, NULL);
            break;
        }
    }
}

int peer_leaf_next(peer_leaf *p, int64_t *id)
{
    for (;;) {
        pthread_rwlock_rdlock(&p->lock);
        leaf_segment *s = &p->segments[p->current_pos];
        int64_t idle = s->max - atomic_load_explicit(&s->value, memory_order_relaxed);
        if (!p->next_ready && (double)idle < 0.9 * (double)s->step) {
            bool expect = false;
            if (atomic_compare_exchange_strong(&p->thread_running, &expect, true)) {
                pthread_mutex_lock(&p->mu);
                p->job = true;
                pthread_cond_signal(&p->cv);
                pthread_mutex_unlock(&p->mu);
            }
        }
        int64_t v = atomic_fetch_add_explicit(&s->value, 1, memory_order_relaxed);
        if (v < s->max) {
            pthread_rwlock_unlock(&p->lock);
            *id = v;
            return 0;
        }
        pthread_rwlock_unlock(&p->lock);

        leaf_wait_and_sleep(p);

        pthread_rwlock_wrlock(&p->lock);
        s = &p->segments[p->current_pos];
        v = atomic_fetch_add_explicit(&s->value, 1, memory_order_relaxed);
        if (v < s->max) {
            pthread_rwlock_unlock(&p->lock);
            *id = v;
            return 0;
        }
        if (p->next_ready) {
            p->current_pos = (p->current_pos + 1) % 2;
            p->next_ready = false;
        } else {
            pthread_rwlock_unlock(&p->lock);
            return -1; /* both segments are not ready */
        }
        pthread_rwlock_unlock(&p->lock);
    }
}

void peer_leaf_close(peer_leaf *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->worker, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    pthread_rwlock_destroy(&p->lock);
    free(p);
}
