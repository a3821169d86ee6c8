/* SPDX-License-Identifier: MIT */
/*
 * The slow paths of the short lock (idm__spin, internal.h) that guards the
 * shared state of a UUIDv7 or ULID generator.
 *
 * A holder keeps the lock for a few instructions, so a thread that finds
 * it taken first spins: it reads the word without writing it (a write
 * would take the cache line from the holder), pausing between reads for
 * twice as long each time, and tries the exchange again only when it reads
 * the lock free. Under contention the backoff also lets one thread mint
 * several ids in a row while its cache line stays put, instead of the line
 * moving between cores for every id. If the lock is still taken after a
 * few microseconds of that, its holder was most likely descheduled: the
 * thread yields the CPU a few times (with more threads than cores the
 * holder may be waiting for this very CPU), then sleeps: it counts itself
 * in sleepers and waits on the word (a futex on Linux) while it still
 * reads held; an unlock that sees a sleeper wakes one.
 *
 * Under contention a lock taken by each thread in turn moves its cache
 * line between cores for every id, so threads sharing a generator mint
 * fewer ids together than one alone (about 0.6 of one thread's on two
 * cores). Generators therefore form runs (internal.h, idm__runs): a thread
 * that finds another thread minting right now waits, without touching the
 * line, until that thread goes quiet or a few microseconds pass; the
 * waiting is idm__runs_defer below. The per-thread sequences (local.c) are
 * the way to scale beyond one thread's figure.
 *
 * The unlock is a plain store and then a load of sleepers, so that an
 * uncontended lock and unlock cost one atomic exchange, as the spinlock
 * before did. Nothing orders that store before that load, so in principle
 * an unlock may read no sleeper just as a thread decides to sleep on the
 * old value; but the kernel compares the word again when the thread
 * enters the wait, by which time the store has long been visible (a
 * system call takes far longer than a store takes to leave the core). Each
 * sleep is bounded all the same (SLEEP_NS), so such a lost wake could cost
 * a tenth of a second, never a hang. Without futexes a thread yields
 * instead of sleeping.
 *
 * In memory several processes map, the futex calls are the non-private
 * ones, which key on the mapped page rather than on the process. A process
 * that dies holding the lock leaves it held, as before: the others sleep
 * (waking every SLEEP_NS to look) until the memory is re-initialised.
 */
#include <sched.h>
#include <unistd.h>

#include "internal.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define HAVE_FUTEX 1
#endif

/* Reads with pauses before sleeping: 1 + 2 + ... + 128 pauses, some
 * microseconds, far longer than a running holder needs. */
#define BACKOFF_MAX 128
/* Yields after the spinning and before the first sleep. */
#define YIELDS 16
/* The longest sleep before looking at the word again: long enough that a
 * sleeper costs nothing, short enough to bound a lost wake. */
#define SLEEP_NS 100000000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static int try_lock(idm__spin *s)
{
    return atomic_load_explicit(&s->w, memory_order_relaxed) == 0 &&
           atomic_exchange_explicit(&s->w, 1, memory_order_acquire) == 0;
}

void idm__spin_lock_slow(idm__spin *s)
{
    for (unsigned delay = 1; delay <= BACKOFF_MAX; delay *= 2) {
        for (unsigned i = 0; i < delay; i++)
            cpu_relax();
        if (try_lock(s))
            return;
    }
    /* Give the CPU away a few times: a holder preempted on this CPU (more
     * threads than cores) runs at once and lets go. */
    for (int i = 0; i < YIELDS; i++) {
        sched_yield();
        if (try_lock(s))
            return;
    }
    for (;;) {
        /* The count is a full barrier on the architectures we know, and
         * the kernel checks the word again before it puts us to sleep. */
        atomic_fetch_add_explicit(&s->sleepers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(&s->w, memory_order_seq_cst) != 0) {
#if HAVE_FUTEX
            struct timespec ts = {0, SLEEP_NS};
            (void)syscall(SYS_futex, &s->w, s->shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, 1,
                          &ts, NULL, 0);
#else
            sched_yield();
#endif
        }
        atomic_fetch_sub_explicit(&s->sleepers, 1, memory_order_relaxed);
        if (try_lock(s))
            return;
    }
}

void idm__spin_wake(idm__spin *s)
{
#if HAVE_FUTEX
    (void)syscall(SYS_futex, &s->w, s->shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
                  0);
#else
    (void)s;
#endif
}

/* ------------------------------------------------------------------ runs */

_Thread_local uint64_t idm__run_tag_tls __attribute__((tls_model("initial-exec")));

uint64_t idm__runs_tag_new(void)
{
    static _Atomic uint32_t next;
    uint64_t t;
    /* 1 to 65535 in turn; threads of different processes sharing a
     * generator's memory start apart (the process id mixed in). */
    do
        t = (atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) +
             (uint32_t)getpid() * UINT32_C(40503)) & 0xFFFF;
    while (t == 0);
    idm__run_tag_tls = t;
    return t;
}

/* The first look at the word after RUN_LOOK_NS, each next one twice as
 * long after the last: a look moves the line to this core and makes the
 * minter wait for it, so a waiting thread looks seldom. A minter that has
 * stopped is seen at the first look. */
#define RUN_LOOK_NS 2000
/* Pauses between two readings of the clock: some hundreds of ns (a pause
 * is 10 to 150 cycles, depending on the CPU). */
#define RUN_PAUSES 32

void idm__runs_defer(const idm__runs *r)
{
    uint64_t me = idm__runs_tag();
    uint64_t seen = atomic_load_explicit(&r->last, memory_order_relaxed);
    int64_t start = idm__sys_mono_ns(), gap = RUN_LOOK_NS, look = start + gap;

    for (;;) {
        int64_t now;
        for (int i = 0; i < RUN_PAUSES; i++)
            cpu_relax();
        now = idm__sys_mono_ns();
        if (now - start >= IDM__RUN_MAX_NS)
            return;
        if (now >= look) {
            uint64_t cur = atomic_load_explicit(&r->last, memory_order_relaxed);
            /* The minter went quiet (its stamp has not moved), or the run
             * has passed to this thread's tag: stop waiting. */
            if (cur == seen || (cur & 0xFFFF) == me)
                return;
            seen = cur;
            gap *= 2;
            look = now + gap;
        }
    }
}
