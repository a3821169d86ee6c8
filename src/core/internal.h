/* SPDX-License-Identifier: MIT */
/*
 * Internal helpers shared by the core sources; not installed. Names with the
 * idm__ prefix are library-internal and not exported from the shared library.
 */
#ifndef IDM_INTERNAL_H
#define IDM_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <idmint/idmint.h>

#if defined(__GNUC__)
#define IDM__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define IDM__LIKELY(x) __builtin_expect(!!(x), 1)
#define IDM__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define IDM__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define IDM__ALWAYS_INLINE inline
#define IDM__PRINTF(a, b)
#define IDM__LIKELY(x) (x)
#define IDM__UNLIKELY(x) (x)
#endif

#define IDM__NS_PER_MS INT64_C(1000000)

/* Set the calling thread's error detail and return err. */
int idm__fail(int err, const char *fmt, ...) IDM__PRINTF(2, 3);
/* Clear it, at the start of a public call that may set one. */
void idm__clear_detail(void);

/* Up to 40 bytes of text for an error detail, with "..." if cut. Returns
 * buf (at least 44 bytes). */
const char *idm__quote(const char *text, char *buf);
#define IDM__QUOTE_MAX 44

/* Floor division for a possibly negative numerator and positive divisor. */
static inline int64_t idm__floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* CLOCK_REALTIME in ns: the system clock's wall_ns, inlined into the
 * generator's hot path so the common case pays no indirect call. */
#include <time.h>
static inline idm_wall_ns idm__sys_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CLOCK_MONOTONIC in ns: the system clock's mono_ns. */
static inline idm_mono_ns idm__sys_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CRC-32 (IEEE 802.3), as zlib's crc32(0, buf, len). */
uint32_t idm__crc32(const void *buf, size_t len);

/* ---- randomness (rng.c) ---- */

/* Bumped in every forked child (pthread_atfork): state that must differ
 * between parent and child compares it against what it saw last. */
uint64_t idm__fork_generation(void);
/* The same without making sure the handler is registered: for hot paths of
 * objects whose constructor called idm__fork_generation once. */
extern _Atomic uint64_t idm__fork_gen;
#define idm__fork_gen_now() atomic_load_explicit(&idm__fork_gen, memory_order_relaxed)
/* Fill from rng (NULL: the system CSPRNG). */
int idm__rng_fill(const idm_rng *rng, void *buf, size_t n);
/* ChaCha20 (RFC 8439) keystream: nblocks 64-byte blocks of key, a zero
 * nonce and block counters counter, counter+1, ... Exposed for tests. */
void idm__chacha20_blocks(const uint32_t key[8], const uint32_t nonce[3], uint32_t counter,
                          uint8_t *out, size_t nblocks);

#ifdef IDM_TEST_HOOKS
/* Test builds only (tests/CMakeLists.txt, idm_test_with_hooks). */
#include <sys/types.h>
struct idm_snowflake;
/* rng.c: when set, seeds come from this function, called as getrandom(2)
 * is (tests/unit/test_chacha.c counts reseeds and chooses the keys). */
extern ssize_t (*idm__rng_getrandom_test_hook)(void *buf, size_t n, unsigned flags);
/* snowflake.c: called at named points of a mint, to park it there
 * (tests/unit/test_inflight.c). */
extern void (*idm__snowflake_test_hook)(const char *point, struct idm_snowflake *g);
#endif

/* ---- a short lock for critical sections of a few instructions ---- */

/*
 * The lock of the UUIDv7 and ULID generators' shared state. Taking it free
 * is one exchange and letting it go one store, as cheap as a plain
 * spinlock. A thread that finds it taken spins on loads with exponential
 * backoff for a bounded time (a running holder needs a few instructions),
 * yields the CPU a few times, then sleeps (a futex on Linux, yields
 * elsewhere) until the holder lets go, so nobody spins long on a lock
 * whose holder was descheduled. spin.c holds the slow paths and the
 * reasoning.
 */
typedef struct idm__spin {
    _Atomic uint32_t w;        /* 0 free, 1 held */
    _Atomic uint32_t sleepers; /* threads asleep, or about to be, on w */
    uint32_t shared;           /* 1: in memory several processes map */
} idm__spin;

void idm__spin_lock_slow(idm__spin *s);
void idm__spin_wake(idm__spin *s);

/* Free, with nobody asleep on it (also for a lock a forked child found
 * held: nobody of the child can hold it or sleep on it yet). */
static inline void idm__spin_init(idm__spin *s, int shared)
{
    atomic_store_explicit(&s->w, 0, memory_order_relaxed);
    atomic_store_explicit(&s->sleepers, 0, memory_order_relaxed);
    s->shared = shared != 0;
}

static inline void idm__spin_lock(idm__spin *s)
{
    if (IDM__UNLIKELY(atomic_exchange_explicit(&s->w, 1, memory_order_acquire) != 0))
        idm__spin_lock_slow(s);
}

static inline void idm__spin_unlock(idm__spin *s)
{
    atomic_store_explicit(&s->w, 0, memory_order_release);
    if (IDM__UNLIKELY(atomic_load_explicit(&s->sleepers, memory_order_relaxed) != 0))
        idm__spin_wake(s);
}

/* ---- runs: one thread at a time mints a run on a contended line ---- */

/*
 * When threads take turns at a shared generator id by id, its cache line
 * moves between cores for every id, and the line's trip costs more than an
 * id: two threads together mint less than one alone. A run is a few
 * microseconds in which one thread mints alone while the others wait
 * without touching the line, so the line stays put and the total stays at
 * one thread's. Nothing about the ids depends on runs: they only decide
 * when a thread goes to the lock or the compare-and-swap, which decide
 * everything else.
 *
 * The word holds the last minter's tag (a per-thread number) and the low
 * 48 bits of its wall-clock reading. A thread about to mint compares with
 * its own reading (which the generator reads anyway): the same tag, or a
 * stamp older than IDM__RUN_WINDOW_NS, means no run is on and costs
 * nothing more; another thread's recent stamp means one is, and the thread
 * waits in idm__runs_defer (spin.c) until that thread goes quiet or
 * IDM__RUN_MAX_NS passes, then reads the clock again, stamps the word (so
 * that the other thread's next call waits, rather than race it to the lock)
 * and mints: its own run. Only generators on the system clock form runs: an injected
 * clock's readings say nothing about the present.
 */
typedef struct idm__runs {
    _Atomic uint64_t last; /* (wall ns mod 2^48) << 16 | tag; 0 none */
} idm__runs;

#define IDM__RUN_WINDOW_NS 500 /* a stamp this recent: a run is on */
#define IDM__RUN_MAX_NS 16000  /* the longest a thread waits for a run */
#define IDM__RUN_STAMP_MASK ((UINT64_C(1) << 48) - 1)

extern _Thread_local uint64_t idm__run_tag_tls __attribute__((tls_model("initial-exec")));
uint64_t idm__runs_tag_new(void);
void idm__runs_defer(const idm__runs *r);

/* This thread's tag, 1 to 65535 (two threads may share one: they then do
 * not wait for each other, which costs speed, never correctness). */
static inline uint64_t idm__runs_tag(void)
{
    uint64_t t = idm__run_tag_tls;
    return IDM__LIKELY(t != 0) ? t : idm__runs_tag_new();
}

/* Is another thread's run on, judged by this thread's reading now_ns? */
static inline bool idm__runs_other(const idm__runs *r, idm_wall_ns now_ns)
{
    uint64_t v = atomic_load_explicit(&r->last, memory_order_relaxed);
    return (v & 0xFFFF) != idm__runs_tag() &&
           (((uint64_t)now_ns - (v >> 16)) & IDM__RUN_STAMP_MASK) < IDM__RUN_WINDOW_NS;
}

/* After a mint: stamp the word with this thread and its reading (a store
 * to a line the minter owns at that moment anyway). */
static inline void idm__runs_mark(idm__runs *r, idm_wall_ns now_ns)
{
    atomic_store_explicit(&r->last, ((uint64_t)now_ns & IDM__RUN_STAMP_MASK) << 16 | idm__runs_tag(),
                          memory_order_relaxed);
}

/* The start of a mint on the system clock, now_ns its reading: if another
 * thread's run is on, wait for its end, read the clock again and take the
 * run (so that the other thread's next call waits rather than race this one
 * to the lock). Returns the reading to mint on. */
static inline idm_wall_ns idm__runs_turn(idm__runs *r, idm_wall_ns now_ns)
{
    if (IDM__LIKELY(!idm__runs_other(r, now_ns)))
        return now_ns;
    idm__runs_defer(r);
    now_ns = idm__sys_wall_ns();
    idm__runs_mark(r, now_ns);
    return now_ns;
}

/* Make a spinlocked generator whose *fork_gen differs from the process's
 * usable in this forked child. See rng.c. */
void idm__spin_after_fork(_Atomic uint64_t *fork_gen, idm__spin *lock, idm_unix_ms *last_ms);
/* The fork generation of a generator in shared memory: its users are forked
 * processes, so idm__spin_after_fork never resets it. */
#define IDM__FORK_SHARED UINT64_MAX

/* A UUIDv7 or ULID generator's lock, for tests that hold it across fork(). */
idm__spin *idm__uuid7_gen_lock(idm_uuid7_gen *g);
idm__spin *idm__ulid_gen_lock(idm_ulid_gen *g);

/* ---- per-thread sequences of the 128-bit generators (local.c) ---- */

/*
 * idm_uuid7_next_local and idm_ulid_next_local keep, per thread, the last
 * timestamp and random part of each generator the thread minted from,
 * keyed by the generator's serial: a number no other generator of the
 * process ever has, so a generator freed and another made at its address
 * never share a state. Process-local generators take 1, 2, 3, ...; one in
 * shared memory takes IDM__SERIAL_SHARED and 63 bits mixed from the time,
 * the process and the address, made anew by every initialisation.
 */
#define IDM__SERIAL_SHARED (UINT64_C(1) << 63)
uint64_t idm__serial_new(void);
uint64_t idm__serial_new_shared(const void *mem);

/* One generator's sequence in one thread. last_ms -1: never minted. hi
 * IDM__TSEQ_RESTART: a new state whose next id must start afresh above
 * last_ms (a floor, see idm__tseq_set); else the random part (UUIDv7: the
 * top 10 of 74 bits in hi; ULID: the top 16 of 80). */
typedef struct idm__tseq {
    uint64_t serial; /* 0: empty */
    idm_unix_ms last_ms;
    uint64_t hi, lo;
} idm__tseq;
#define IDM__TSEQ_RESTART UINT64_MAX

/*
 * A thread's states for one kind of generator: IDM__TSEQ_SETS sets of
 * IDM__TSEQ_WAYS, a generator always in set serial % IDM__TSEQ_SETS, most
 * recently used first. A full set drops its least recently used state and
 * raises its floor to that state's last_ms. A state made for a generator
 * that may have been dropped before (its serial is not above every serial
 * the set dropped) starts above the floor, so a dropped generator's ids
 * still increase in this thread; a generator made since the last drop
 * starts at its clock.
 */
#define IDM__TSEQ_SETS 4
#define IDM__TSEQ_WAYS 4
typedef struct idm__tseq_set {
    idm__tseq way[IDM__TSEQ_WAYS];
    idm_unix_ms floor_ms;    /* -1: nothing dropped */
    uint64_t dropped_serial; /* the highest serial dropped; 0: none */
} idm__tseq_set;

enum { IDM__TSEQ_UUID7, IDM__TSEQ_ULID, IDM__TSEQ_KINDS };

typedef struct idm__tseq_thread {
    uint64_t fork_gen; /* a forked child drops every state */
    idm__tseq_set set[IDM__TSEQ_KINDS][IDM__TSEQ_SETS];
} idm__tseq_thread;

/* The thread's states, on the heap behind one initial-exec pointer as the
 * rng's (rng.c says why); freed when the thread exits. */
extern _Thread_local idm__tseq_thread *idm__tseq_tls __attribute__((tls_model("initial-exec")));

/* The calling thread's state of the generator serial of kind, made (or
 * reset, in a forked child) if need be; NULL if there is no memory. */
idm__tseq *idm__tseq_find_slow(int kind, uint64_t serial);

static inline idm__tseq *idm__tseq_find(int kind, uint64_t serial)
{
    idm__tseq_thread *t = idm__tseq_tls;
    if (IDM__LIKELY(t != NULL && t->fork_gen == idm__fork_gen_now())) {
        idm__tseq *e = &t->set[kind][serial % IDM__TSEQ_SETS].way[0];
        if (IDM__LIKELY(e->serial == serial))
            return e;
    }
    return idm__tseq_find_slow(kind, serial);
}

/* Big-endian loads and stores of 64 bits. */
static inline uint64_t idm__load_be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void idm__store_be64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

/* Lower-case hex digits. */
extern const char idm__hex[16];
/* Value of a hex digit (either case), or -1. */
static inline int idm__unhex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Crockford base32 (ULIDs, opaque ids); idm__b32_rev holds value + 1 per byte. */
extern const char idm__b32_alphabet[32];
extern const uint8_t idm__b32_rev[256];
/* Crockford value of a character, either case; -1 outside the alphabet (I,
 * L, O and U included). */
static inline int idm__unbase32(unsigned char c)
{
    return (int)idm__b32_rev[c] - 1;
}

/* Wall time in ms from a clock (NULL: the system clock). */
static inline idm_wall_ns idm__clock_ns(const idm_clock *c)
{
    return c == NULL ? idm__sys_wall_ns() : c->wall_ns(c->ctx);
}

static inline idm_unix_ms idm__clock_ms(const idm_clock *c)
{
    return idm__floordiv(idm__clock_ns(c), IDM__NS_PER_MS);
}

/* Zeroed memory for a generator, starting on a cache line's boundary (its
 * first fields are the ones every mint writes); free() frees it. */
void *idm__alloc_lines(size_t size);

#endif /* IDM_INTERNAL_H */
