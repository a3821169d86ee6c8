/* SPDX-License-Identifier: MIT */
/*
 * C peers for the idmint benchmark: the classic mutex-based generators,
 * written from the public descriptions of their algorithms. They share
 * idmint's clock source (CLOCK_REALTIME through the vDSO) so the comparison
 * is of the algorithms, not of clocks.
 */
#ifndef IDM_BENCH_PEERS_H
#define IDM_BENCH_PEERS_H

#include <pthread.h>
#include <stdint.h>

/*
 * Twitter's Snowflake, IdWorker.nextId: a synchronized method; on the same
 * millisecond the sequence is incremented and masked, and when it wraps to
 * zero the caller spins (tilNextMillis) until the clock shows a later
 * millisecond; a clock behind the last timestamp is refused.
 * Id: (ms - epoch) << (node_bits + seq_bits) | node << seq_bits | seq.
 */
typedef struct peer_twitter {
    pthread_mutex_t lock;
    int64_t epoch_ms;
    int64_t last_ms;
    uint64_t node;
    unsigned node_bits;
    unsigned seq_bits;
    uint64_t seq_mask;
    uint64_t seq;
} peer_twitter;

void peer_twitter_init(peer_twitter *p, int64_t epoch_ms, uint64_t node,
                       unsigned node_bits, unsigned seq_bits);
void peer_twitter_destroy(peer_twitter *p);
/* 0, or -1 when the clock moved backwards (InvalidSystemClock). */
int peer_twitter_next(peer_twitter *p, uint64_t *id);

/*
 * Sonyflake, NextID: a mutex; time in 10 ms units elapsed since a start
 * time; 39 time bits, 8 sequence bits, 16 machine bits, the sequence above
 * the machine. On the same unit the sequence is incremented; when it wraps
 * the elapsed time is moved one unit ahead and the caller sleeps until that
 * unit begins.
 */
typedef struct peer_sonyflake {
    pthread_mutex_t lock;
    int64_t start_units;  /* start time in 10 ms units since 1970 */
    int64_t elapsed;      /* units since start of the last id */
    uint64_t sequence;
    uint64_t machine;
} peer_sonyflake;

void peer_sonyflake_init(peer_sonyflake *p, int64_t start_ms,
                         uint64_t machine);
void peer_sonyflake_destroy(peer_sonyflake *p);
/* 0, or -1 when the time field is exhausted. */
int peer_sonyflake_next(peer_sonyflake *p, uint64_t *id);

#endif /* IDM_BENCH_PEERS_H */
