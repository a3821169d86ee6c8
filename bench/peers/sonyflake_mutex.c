/* SPDX-License-Identifier: MIT */
/*
 * A C rendering of Sonyflake's NextID, as published in Sony's open-source
 * "sonyflake" project (Go, MIT-licensed) and its README: a mutex held for
 * the whole call; time counted in 10 ms units elapsed since a start time
 * (2014-09-01 by default); 39 bits of time, then 8 bits of sequence, then
 * 16 bits of machine id:
 *
 *     current := elapsed 10 ms units now
 *     if elapsedTime < current { elapsedTime = current; sequence = 0 }
 *     else {
 *         sequence = (sequence + 1) & 0xff
 *         if sequence == 0 {
 *             elapsedTime++
 *             time.Sleep(overtime*10ms - now%10ms)   // overtime = elapsedTime - current
 *         }
 *     }
 *     id = elapsedTime << 24 | sequence << 16 | machineID
 *
 * The sleep happens with the mutex held, as in the original. The sequence
 * starts at 0xff, so the first call in a unit already found taken moves on.
 * This file is the peer the idmint benchmark compares against; it is not
 * part of the library.
 */
#include "peers.h"

#include <errno.h>
#include <time.h>

#define SONY_UNIT_NS INT64_C(10000000)
#define SONY_BITS_TIME 39
#define SONY_BITS_SEQ 8
#define SONY_BITS_MACHINE 16

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void peer_sonyflake_init(peer_sonyflake *p, int64_t start_ms, uint64_t machine)
{
    pthread_mutex_init(&p->lock, NULL);
    p->start_units = start_ms / 10;
    p->elapsed = 0;
    p->sequence = (UINT64_C(1) << SONY_BITS_SEQ) - 1;
    p->machine = machine & ((UINT64_C(1) << SONY_BITS_MACHINE) - 1);
}

void peer_sonyflake_destroy(peer_sonyflake *p)
{
    pthread_mutex_destroy(&p->lock);
}

int peer_sonyflake_next(peer_sonyflake *p, uint64_t *id)
{
    const uint64_t mask = (UINT64_C(1) << SONY_BITS_SEQ) - 1;
    pthread_mutex_lock(&p->lock);
    int64_t current = now_ns() / SONY_UNIT_NS - p->start_units;
    if (p->elapsed < current) {
        p->elapsed = current;
        p->sequence = 0;
    } else {
        p->sequence = (p->sequence + 1) & mask;
        if (p->sequence == 0) {
            p->elapsed++;
            int64_t overtime = p->elapsed - current;
            sleep_ns(overtime * SONY_UNIT_NS - now_ns() % SONY_UNIT_NS);
        }
    }
    if (p->elapsed >= (INT64_C(1) << SONY_BITS_TIME)) {
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    *id = ((uint64_t)p->elapsed << (SONY_BITS_SEQ + SONY_BITS_MACHINE)) |
          (p->sequence << SONY_BITS_MACHINE) | p->machine;
    pthread_mutex_unlock(&p->lock);
    return 0;
}
