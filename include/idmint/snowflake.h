/* SPDX-License-Identifier: MIT */
/*
 * The Snowflake generator: mints 64-bit ids for one set of node values (one
 * worker) on one layout.
 *
 * Its whole mutable state is one 64-bit word, (tick << seq_bits) | seq, moved
 * forward with compare-and-swap: the next state is
 *     max(now_tick << seq_bits, last + 1),
 * so ids from one generator strictly increase and none repeats. When that
 * state runs ahead of the wall clock, the policies below decide. Threads
 * calling idm_snowflake_next at once on a generator on the system clock
 * take turns in runs of some microseconds (a thread waits, without touching
 * the state, while another mints), so together they mint about as many
 * ids as one thread alone; idm_snowflake_next_local scales with threads.
 *
 * Clock regression (the wall clock is behind the last tick minted):
 *   IDM_BACKWARDS_REFUSE   fail with IDM_ECLOCKBACK, mint nothing.
 *   IDM_BACKWARDS_WAIT     sleep until the clock catches up, if that takes at
 *                          most max_wait_ms; otherwise IDM_ECLOCKBACK at once
 *                          (or after the bound, if the clock stalls meanwhile).
 *   IDM_BACKWARDS_LOGICAL  (default) keep minting from the last tick, running
 *                          ahead of the wall clock by at most max_drift_ms;
 *                          beyond that IDM_ECLOCKBACK.
 *   IDM_BACKWARDS_CHANGE_WORKER  leased generators only (see leased.h):
 *                          logical time as above, and beyond its bound
 *                          another worker id, whose past ids cannot collide.
 * Minting resumes by itself once the clock passes the last tick.
 *
 * Sequence exhaustion (all 2^seq_bits ids of the current tick are taken):
 *   IDM_EXHAUST_WAIT       (default) reserve the next tick's states, sleep
 *                          until the clock reaches it (at most max_wait_ms),
 *                          then hand them out; a clock that does not get
 *                          there gets IDM_EEXHAUSTED and the states are given
 *                          back. The sequence never wraps within a tick.
 *   IDM_EXHAUST_BORROW     mint from the next tick at once while that runs at
 *                          most max_drift_ms ahead of the clock; past that,
 *                          wait as above.
 *
 * Which case applies: the generator remembers the highest wall-clock tick it
 * has minted on. A reading below that is a regression; a state ahead of a
 * reading that is not below it (the tick is full, or earlier calls borrowed or
 * ran on logical time) is exhaustion.
 *
 * Time is read before the state is read; a call that finds the state ahead of
 * its reading reads the clock once more before applying a policy (another
 * thread may simply have read the clock a moment later). Waits are bounded by
 * the sum of the sleeps asked for. Ids never carry a tick past the time field
 * (IDM_ETIMEOVER) nor before the epoch (IDM_EEPOCH).
 *
 * State file (optional): the generator persists a high-water mark, a Unix ms
 * at or past every tick it may have minted, ahead of use (state_lookahead_ms
 * at a time: one atomic, fsync'd rewrite per lookahead period, not per id),
 * and on open never mints at or below the stored mark. A clean close stores
 * the exact last tick, so a restart need not wait out the lookahead. The file
 * is locked (flock on "<state_path>.lock") while open: a second generator on
 * the same file gets IDM_EBUSY. Rewrites go through "<state_path>.tmp",
 * renamed over the file, so a crash leaves the old mark or the new one. If the file cannot be written, minting stops at the last stored
 * mark (IDM_EIO) rather than run past it.
 *
 * Lease guard (optional, opts.guarded): a generator whose node values come
 * from a worker-id lease mints only while the lease is known to hold. Whoever
 * renews the lease calls idm_snowflake_guard after each successful renewal
 * with two deadlines, one on the generator's monotonic clock and one on its
 * wall clock (both: the renewal's send time + TTL - a safety margin), and the
 * highest time the lease record allows (the mark it recorded). A mint checks
 * the monotonic deadline (CLOCK_MONOTONIC_COARSE for the system clock, a few
 * ns) before every clock reading it may hand an id out on, and the wall
 * deadline after it: a process paused between the two, or a machine resumed
 * from suspend (monotonic time stood still, wall time did not), fails the
 * second. That holds on every path: the first reading, the re-reading when
 * the state is ahead, the reading after a state-file write, and each
 * reading after a sleep of the wait policies. Past either deadline, or past
 * the mark, minting fails with IDM_ELEASE until the next renewal.
 * idm_snowflake_guard_drop stops minting at once, also for calls already in
 * flight on other threads: a call that had not yet taken its states when the
 * drop landed hands nothing out, and one that had shows them in the state a
 * reader sees after the drop (idm_snowflake_stats_get's last_unix_ms), which
 * is how idm_lease_close records an exact final mark while other threads
 * still call idm_snowflake_next. opts.after_ms makes a new holder start above
 * the previous holder's mark.
 *
 * Processes: a generator belongs to the process that opened it. After fork()
 * the child's copy keeps the parent's state and node values, so every call on
 * it in the child fails with IDM_EFORKED (idm_snowflake_close frees the copy
 * and writes nothing); a child opens its own generator, on its own worker id
 * (its own lease) and its own state file.
 *
 * Thread-safety, call by call, on one generator:
 *   idm_snowflake_next, _next_batch,  any number of threads at once, and at
 *   _next_local                       the same time as _stats_get, _guard,
 *                                     _guard_drop and _layout.
 *   idm_snowflake_guard, _guard_drop  any thread, at the same time as mints
 *                                     and each other (the lease keeper calls
 *                                     them while the owner's threads mint).
 *   idm_snowflake_stats_get, _layout  any thread, any time the generator is
 *                                     open.
 *   idm_snowflake_open, _close        _close must not run at the same time as
 *                                     any other call on the generator (it
 *                                     frees it): stop every minting thread
 *                                     first. (idm_lease_close does not free
 *                                     the generator and may run while other
 *                                     threads mint.)
 */
#ifndef IDMINT_SNOWFLAKE_H
#define IDMINT_SNOWFLAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"
#include "layout.h"

typedef enum idm_backwards_policy {
    IDM_BACKWARDS_LOGICAL = 0,
    IDM_BACKWARDS_REFUSE = 1,
    IDM_BACKWARDS_WAIT = 2,
    /* Leased generators only (<idmint/leased.h>; idm_snowflake_open refuses
     * it with IDM_EINVAL): logical time up to max_drift_ms, and a step back
     * beyond that makes the process claim another worker id whose recorded
     * mark is below the clock and mint under it; refuse when there is none. */
    IDM_BACKWARDS_CHANGE_WORKER = 3
} idm_backwards_policy;

typedef enum idm_exhaust_policy {
    IDM_EXHAUST_WAIT = 0,
    IDM_EXHAUST_BORROW = 1
} idm_exhaust_policy;

/* How a generator is built. Call idm_snowflake_opts_init first: fields may
 * be added in later versions and get their defaults there. */
typedef struct idm_snowflake_opts {
    const idm_layout *layout;      /* required; the generator keeps a copy */
    uint64_t node[IDM_LAYOUT_MAX_FIELDS]; /* node values by field index */
    uint32_t node_set;             /* bit i set: node[i] was given; every
                                      node field must be given */
    const idm_clock *clock;        /* NULL: idm_clock_system() */
    idm_backwards_policy backwards;
    idm_exhaust_policy exhaust;
    int64_t max_drift_ms;          /* < 0: auto, max(10, tick); at most
                                      one day (86400000) */
    int64_t max_wait_ms;           /* < 0: auto, 5 + one tick; at most one
                                      day */
    const char *state_path;        /* NULL: no state file */
    bool state_fresh;              /* a missing or corrupt state file starts
                                      from the clock instead of failing */
    int64_t state_lookahead_ms;    /* default 1000; one tick to one day */
    bool guarded;                  /* mint only under idm_snowflake_guard */
    idm_unix_ms after_ms;          /* < 0: none; else never mint at or below
                                      this time (a previous holder's mark),
                                      as with a state file's mark */
    uint32_t local_block;          /* states a thread takes at once for
                                      idm_snowflake_next_local: 0 auto (64,
                                      at most a quarter of a tick's); else
                                      1 to a tick's states */
} idm_snowflake_opts;

typedef struct idm_snowflake idm_snowflake;

typedef struct idm_snowflake_stats {
    uint64_t refused_backwards;  /* calls failed with IDM_ECLOCKBACK */
    uint64_t refused_exhausted;  /* calls failed with IDM_EEXHAUSTED */
    uint64_t waits;              /* sleeps taken by the wait policies */
    uint64_t ahead_mints;        /* mints ahead of the wall clock (logical
                                    time or borrowed ticks) */
    int64_t max_backwards_ms;    /* largest regression seen */
    int64_t last_backwards_ms;   /* most recent regression (0 if none) */
    idm_unix_ms last_unix_ms;    /* time of the last tick minted */
    idm_unix_ms state_mark_ms;   /* mark stored in the state file, or 0 */
    uint64_t state_writes;       /* state file rewrites */
    int state_error;             /* last state file error, 0 if none */
    uint64_t refused_lease;      /* calls failed with IDM_ELEASE */
    idm_unix_ms lease_limit_ms;  /* the guard's mark (0 if none) */
} idm_snowflake_stats;

/* Defaults: logical time, wait on exhaustion, auto bounds, no state file. */
IDM_EXTERN void idm_snowflake_opts_init(idm_snowflake_opts *opts);

/* Set a node value by name ("worker", 7), checked against opts->layout. */
IDM_EXTERN int idm_snowflake_opts_node(idm_snowflake_opts *opts,
                                       const char *name, uint64_t value);

/*
 * Build a generator. Fails with IDM_ENODE if a node field has no value,
 * IDM_EEPOCH if the clock is before the epoch (a dead RTC) or the epoch is
 * in the future, IDM_ETIMEOVER if the time field is already exhausted,
 * IDM_ENOENT / IDM_ECORRUPT / IDM_EIO / IDM_EBUSY for the state file, and
 * IDM_ECLOCKBACK if the clock is behind the state file's mark by more than
 * the backwards policy allows (a restart with the clock set back).
 */
IDM_EXTERN int idm_snowflake_open(idm_snowflake **out,
                                  const idm_snowflake_opts *opts);

/* Store the exact high-water mark (if there is a state file), release the
 * lock and free. Returns the error of that last write, if any; the generator
 * is freed either way. NULL is a no-op. */
IDM_EXTERN int idm_snowflake_close(idm_snowflake *g);

/*
 * Mint one id into *id. On failure *id is untouched and no id is handed out.
 * The state does not move either, with one exception: a wait that times out
 * while another thread mints on the same generator leaves the states it had
 * reserved as a gap (skipped, never reused).
 */
IDM_EXTERN int idm_snowflake_next(idm_snowflake *g, uint64_t *id);

/*
 * Mint n consecutive states with one compare-and-swap into ids[0..n-1],
 * strictly increasing. All or nothing: on failure nothing is minted. A batch
 * that would run ahead of the clock is treated as exhaustion (wait or
 * borrow), so n larger than max_wait_ms worth of ticks fails with
 * IDM_EEXHAUSTED; n == 0 is IDM_EINVAL.
 */
IDM_EXTERN int idm_snowflake_next_batch(idm_snowflake *g, uint64_t *ids,
                                        size_t n);

/*
 * Mint one id from the calling thread's block: a run of up to
 * opts.local_block consecutive states of the current tick, taken from the
 * generator with one compare-and-swap (the same path as a batch: the
 * clock policies, the state file and the lease guard apply to it as to
 * any mint) and handed out one per call with no shared write. A block
 * holds only the states left in the clock's tick; when the tick is full
 * (or the state runs ahead of the clock), a call mints one id through the
 * exhaustion and backwards policies as idm_snowflake_next does. Ids are
 * unique across every thread and every call of any kind, and the ids a
 * thread gets from this call strictly increase (an idm_snowflake_next or
 * _next_batch by the same thread in between may be above the rest of its
 * block); across threads they are k-sorted within a tick (a thread's id
 * may be below an id another thread got earlier in the same tick). A block
 * never outlives its tick: a call whose clock reading is in another tick
 * than the block's (a later one, or an earlier one after a step back)
 * takes a new block, and the states left in the old one are a gap, never
 * handed out. The lease guard (both deadlines) and the process
 * (IDM_EFORKED) are checked on every call; the lease's mark and the state
 * file's were checked for the block's tick when it was taken. A thread
 * keeps blocks for a few generators at once; minting on more abandons a
 * block (a gap), and so does the thread's exit. Shared generators
 * (idm_snowflake_open_shared) work too: each process's threads take their
 * own blocks from the shared state, and a child forked while its parent's
 * thread holds a block never hands that block out. Errors as
 * idm_snowflake_next.
 */
IDM_EXTERN int idm_snowflake_next_local(idm_snowflake *g, uint64_t *id);

/*
 * Would a mint succeed now? Checks what idm_snowflake_next would check for
 * one id, without minting or moving anything and without counting a
 * refusal: the process (IDM_EFORKED), the lease guard's deadlines and mark
 * (IDM_ELEASE), the epoch and the end of the time field, the clock policies
 * (IDM_ECLOCKBACK, IDM_EEXHAUSTED: the bounds would be exceeded), and a
 * failed state-file write that would stop the next tick (IDM_EIO). Returns 0
 * or that code, with a detail. For health checks: a mint right after may
 * still fail (another thread may take the last state of a tick first).
 * Thread-safe, at the same time as mints.
 */
IDM_EXTERN int idm_snowflake_check(const idm_snowflake *g);

IDM_EXTERN const idm_layout *idm_snowflake_layout(const idm_snowflake *g);

/*
 * Extend a guarded generator's lease: minting is allowed while the monotonic
 * clock is before mono_deadline and the wall clock before wall_deadline, for
 * ids whose time is at or below limit_ms. A limit below the current one is
 * ignored (a mark once recorded stays recorded). IDM_EINVAL on a generator
 * that is not guarded.
 */
IDM_EXTERN int idm_snowflake_guard(idm_snowflake *g, idm_mono_ns mono_deadline,
                                   idm_wall_ns wall_deadline, idm_unix_ms limit_ms);
/* Stop minting at once (the lease is lost or being released). */
IDM_EXTERN void idm_snowflake_guard_drop(idm_snowflake *g);

/*
 * Shared generators: one generator in memory that several processes map, all
 * of them minting on it at once as threads do on one generator (a prefork
 * server's shared memory; PostgreSQL's, for the idmint extension). No lock
 * is taken on the minting path; the slow paths' mutex is process-shared.
 *
 *   mem    at least idm_snowflake_shared_size() bytes, 64-byte aligned,
 *          mapped at the same address in every process that uses it
 *          (MAP_SHARED before fork(), or PostgreSQL's shared memory). The
 *          generator keeps nothing outside it: its layout and its state
 *          file's paths are copied in. opts->clock must be NULL (the system
 *          clock) or one whose functions and context every process has at
 *          the same address (forked from one binary).
 *   fork   no fork check: processes forked from the opener are its users.
 *   state  the state file's lock is held by the opening process's
 *          descriptor, which processes forked after the open share: the
 *          lock is free again once the opener has closed and every such
 *          process has exited (or closed its copy). The file is rewritten
 *          by whichever process crosses the mark. Close in the process
 *          that opened it (anywhere else close is IDM_EFORKED and changes
 *          nothing).
 *   close  idm_snowflake_close by the opener, once no process mints any
 *          more (for instance after idm_snowflake_guard_drop, which stops
 *          minting in every process at once): it stores the exact mark and
 *          releases the lock; mem is the caller's to free.
 *   guard  works across processes: the deadlines are CLOCK_MONOTONIC and
 *          CLOCK_REALTIME, the same in every process of a machine.
 * A process that dies inside a slow path holds the mutex for good: a family
 * of processes that can lose one mid-call (PostgreSQL restarts them all
 * after any crash) must re-open the generator in fresh memory.
 */
IDM_EXTERN size_t idm_snowflake_shared_size(void);
/* Errors as idm_snowflake_open, and IDM_EINVAL for mem NULL, misaligned or
 * smaller than idm_snowflake_shared_size(), or a state path too long to keep
 * in it (4096 bytes once resolved). */
IDM_EXTERN int idm_snowflake_open_shared(idm_snowflake **out, void *mem,
                                         size_t size,
                                         const idm_snowflake_opts *opts);

/* A snapshot of the counters (each read atomically; not one instant). */
IDM_EXTERN void idm_snowflake_stats_get(const idm_snowflake *g,
                                        idm_snowflake_stats *out);

#endif /* IDMINT_SNOWFLAKE_H */
