/* SPDX-License-Identifier: MIT */
/*
 * A C rendering of Twitter's Snowflake id worker, as published in Twitter's
 * open-source "snowflake" project (IdWorker.scala, 2010) and described in
 * its announcement "Announcing Snowflake" (Twitter engineering blog, June
 * 2010): nextId() is `synchronized`; it reads System.currentTimeMillis(),
 * refuses a clock behind lastTimestamp, increments and masks the sequence
 * within one millisecond and, when the sequence wraps to 0, spins in
 * tilNextMillis() until the clock passes lastTimestamp:
 *
 *     if (timestamp < lastTimestamp) throw InvalidSystemClock
 *     if (lastTimestamp == timestamp) {
 *         sequence = (sequence + 1) & sequenceMask
 *         if (sequence == 0) timestamp = tilNextMillis(lastTimestamp)
 *     } else sequence = 0
 *     lastTimestamp = timestamp
 *     id = (timestamp - twepoch) << 22 | datacenterId << 17
 *          | workerId << 12 | sequence
 *
 * The mutex stands for Java's monitor. This file is the peer the idmint
 * benchmark compares against; it is not part of the library.
 */
#include "peers.h"

#include <time.h>

static int64_t time_gen(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t til_next_millis(int64_t last)
{
    int64_t ts = time_gen();
    while (ts <= last)
        ts = time_gen();
    return ts;
}

void peer_twitter_init(peer_twitter *p, int64_t epoch_ms, uint64_t node,
                       unsigned node_bits, unsigned seq_bits)
{
    pthread_mutex_init(&p->lock, NULL);
    p->epoch_ms = epoch_ms;
    p->last_ms = -1;
    p->node = node;
    p->node_bits = node_bits;
    p->seq_bits = seq_bits;
    p->seq_mask = (UINT64_C(1) << seq_bits) - 1;
    p->seq = 0;
}

void peer_twitter_destroy(peer_twitter *p)
{
    pthread_mutex_destroy(&p->lock);
}

int peer_twitter_next(peer_twitter *p, uint64_t *id)
{
    pthread_mutex_lock(&p->lock);
    int64_t ts = time_gen();
    if (ts < p->last_ms) {
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    if (ts == p->last_ms) {
        p->seq = (p->seq + 1) & p->seq_mask;
        if (p->seq == 0)
            ts = til_next_millis(p->last_ms);
    } else {
        p->seq = 0;
    }
    p->last_ms = ts;
    *id = ((uint64_t)(ts - p->epoch_ms) << (p->node_bits + p->seq_bits)) |
          (p->node << p->seq_bits) | p->seq;
    pthread_mutex_unlock(&p->lock);
    return 0;
}
