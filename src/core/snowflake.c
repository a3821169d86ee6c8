/* SPDX-License-Identifier: MIT */
/*
 * The Snowflake generator. The hot path (mint) is one wall-clock read, one
 * load and one compare-and-swap of the state word, plus compares against
 * values that change rarely. It takes no lock, makes no system call (the
 * clock is a vDSO read), and allocates nothing. Sleeping, refusing and
 * writing the state file are slow paths reached only when the state runs
 * ahead of the clock or past the stored mark.
 *
 * What it does not do: decide worker ids (leases do) or guess at clock
 * health (the clock watch does, off this path).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "layout_internal.h"
#include "state.h"

#define CACHELINE 64
/* Test builds only (see internal.h): park a mint at a named point. */
#ifdef IDM_TEST_HOOKS
void (*idm__snowflake_test_hook)(const char *point, struct idm_snowflake *g);
#define TEST_HOOK(point, g)                                                   \
    do {                                                                      \
        if (idm__snowflake_test_hook != NULL)                                 \
            idm__snowflake_test_hook(point, g);                               \
    } while (0)
#else
#define TEST_HOOK(point, g) ((void)0)
#endif

/* The longest pause after a failed compare-and-swap: 2 << this many
 * pauses, at most (see cas_backoff). */
#define CAS_BACKOFF_MAX_SHIFT 5u
#if defined(__GNUC__)
#define SF_NOINLINE __attribute__((noinline))
#else
#define SF_NOINLINE
#endif

/* The longest max_drift_ms and max_wait_ms accepted: one day. */
#define IDM__MAX_BOUND_MS INT64_C(86400000)

struct idm_snowflake {
    /* Written on every mint: the state word and the highest wall tick a
     * successful mint has seen, on one line of their own. */
    _Alignas(CACHELINE) _Atomic uint64_t state;
    _Atomic uint64_t max_wall_tick;
    idm__runs runs; /* which thread mints a run now (internal.h) */

    /* Read on every mint, written only by slow paths: the highest tick
     * allowed (the lower of the state file's and the lease's limits) and
     * the lease guard's deadlines. */
    _Alignas(CACHELINE) _Atomic uint64_t limit_tick;
    _Atomic int64_t mono_deadline;
    _Atomic int64_t wall_deadline;
    bool guarded;
    uint64_t fork_gen; /* idm__fork_gen when opened: a forked child differs */
    idm_wall_ns (*wall_ns)(void *ctx); /* NULL: the system clock, inlined */
    void *clock_ctx;
    const idm_clock *clock;
    int64_t epoch_ns;
    int64_t tick_ns;
    int64_t epoch_ms;
    int64_t tick_ms;
    uint64_t max_tick;
    uint64_t max_state;
    uint64_t seq_mask;
    uint64_t node_bits;
    unsigned sb; /* sequence bits: the state's tick sits above them */
    unsigned time_shift;
    unsigned seq_shift;
    idm_backwards_policy backwards;
    idm_exhaust_policy exhaust;
    int64_t max_drift_ns;
    int64_t max_wait_ns;
    uint64_t serial;      /* never the same for two generators: what threads'
                             block caches key on (an address is reused) */
    uint64_t local_block; /* most states a next_local block takes */

    /* Counters, touched only on slow paths. */
    _Alignas(CACHELINE) _Atomic uint64_t refused_backwards;
    _Atomic uint64_t refused_exhausted;
    _Atomic uint64_t waits;
    _Atomic uint64_t ahead_mints;
    _Atomic int64_t max_backwards_ms;
    _Atomic int64_t last_backwards_ms;
    _Atomic int64_t state_mark_ms;
    _Atomic uint64_t state_writes;
    _Atomic int state_error;
    _Atomic uint64_t refused_lease;
    _Atomic int64_t lease_limit_ms;

    /* Limits (slow path, under the mutex). */
    pthread_mutex_t state_mu;
    uint64_t state_limit_tick; /* UINT64_MAX without a state file */
    uint64_t lease_limit_tick; /* UINT64_MAX unless guarded */
    bool has_lease_limit;      /* guarded and a guard has been given */
    bool has_state;
    idm__state st;
    int64_t lookahead_ms;

    idm_layout *layout;
    bool shared;  /* in memory several processes map (open_shared) */
    pid_t opener; /* shared: the process that opened it, the only one that
                     may close it */
    char *paths;  /* shared: where the state file's paths are kept */
};

/* A shared generator's memory: the generator, its layout, then room for its
 * state file's four paths (each at most PATH_MAX once resolved). */
#define SHARED_GEN_BYTES ((sizeof(idm_snowflake) + CACHELINE - 1) / CACHELINE * CACHELINE)
#define SHARED_LAYOUT_BYTES ((sizeof(idm_layout) + CACHELINE - 1) / CACHELINE * CACHELINE)
#define SHARED_PATH_BYTES 4096
#define SHARED_PATHS_BYTES (4 * (SHARED_PATH_BYTES + 8))

void idm_snowflake_opts_init(idm_snowflake_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->backwards = IDM_BACKWARDS_LOGICAL;
    opts->exhaust = IDM_EXHAUST_WAIT;
    opts->max_drift_ms = -1;
    opts->max_wait_ms = -1;
    opts->state_lookahead_ms = 1000;
    opts->after_ms = -1;
}

int idm_snowflake_opts_node(idm_snowflake_opts *opts, const char *name, uint64_t value)
{
    int idx;
    idm_field_info fi;
    idm__clear_detail();
    if (opts == NULL || opts->layout == NULL || name == NULL)
        return idm__fail(IDM_EINVAL, "node: set the layout before node values");
    idx = idm_layout_field_index(opts->layout, name);
    if (idx < 0)
        return idx;
    idm_layout_field(opts->layout, (size_t)idx, &fi);
    if (fi.kind != IDM_FIELD_NODE)
        return idm__fail(IDM_EINVAL, "node: '%s' is not a node field", name);
    if (value > fi.max)
        return idm__fail(IDM_ERANGE, "node: %s=%llu exceeds %llu (%u bits)", name,
                         (unsigned long long)value, (unsigned long long)fi.max, fi.bits);
    opts->node[idx] = value;
    opts->node_set |= UINT32_C(1) << idx;
    return 0;
}

static inline idm_wall_ns read_wall(const idm_snowflake *g)
{
    return IDM__LIKELY(g->wall_ns == NULL) ? idm__sys_wall_ns() : g->wall_ns(g->clock_ctx);
}

/* The monotonic clock for the lease guard: CLOCK_MONOTONIC_COARSE for the
 * system clock (a vDSO read of a few ns, millisecond resolution, nothing
 * against a safety margin of seconds). */
static inline idm_mono_ns read_mono_coarse(const idm_snowflake *g)
{
    if (IDM__LIKELY(g->wall_ns == NULL)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    return g->clock->mono_ns(g->clock_ctx);
}

/* The tick of a time since the epoch (>= 0). Dividing by a constant compiles
 * to a multiply: the common 1 ms tick pays no hardware division per id. */
static inline uint64_t tick_of(const idm_snowflake *g, int64_t since_epoch_ns)
{
    if (g->tick_ns == IDM__NS_PER_MS)
        return (uint64_t)(since_epoch_ns / IDM__NS_PER_MS);
    return (uint64_t)(since_epoch_ns / g->tick_ns);
}

/* The start of a tick in Unix ms. The layout guarantees this fits for every
 * tick up to max_tick + 1; the same in nanoseconds would not (int64 ns end in
 * 2262), so everything that may meet a far tick works in ms. */
static inline int64_t tick_start_ms(const idm_snowflake *g, uint64_t tick)
{
    return g->epoch_ms + (int64_t)tick * g->tick_ms;
}

/* How far the start of end_tick is ahead of the wall time now_ns, which
 * falls in now_tick < end_tick. Saturates rather than overflow: anything
 * that large is past every bound anyway. */
static inline int64_t ahead_ns(const idm_snowflake *g, uint64_t end_tick, uint64_t now_tick,
                               int64_t now_ns)
{
    uint64_t dt = end_tick - now_tick;
    int64_t into = now_ns - g->epoch_ns - (int64_t)now_tick * g->tick_ns;
    if (dt > (uint64_t)(INT64_MAX / 4) / (uint64_t)g->tick_ns)
        return INT64_MAX / 4;
    return (int64_t)dt * g->tick_ns - into;
}

static inline uint64_t compose(const idm_snowflake *g, uint64_t s)
{
    return ((s >> g->sb) << g->time_shift) | ((s & g->seq_mask) << g->seq_shift) | g->node_bits;
}

static void note_backwards(idm_snowflake *g, int64_t ms)
{
    int64_t prev = atomic_load_explicit(&g->max_backwards_ms, memory_order_relaxed);
    atomic_store_explicit(&g->last_backwards_ms, ms, memory_order_relaxed);
    while (ms > prev &&
           !atomic_compare_exchange_weak_explicit(&g->max_backwards_ms, &prev, ms,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Recompute the combined limit; called with the mutex held. */
static void publish_limit(idm_snowflake *g)
{
    uint64_t l = g->state_limit_tick < g->lease_limit_tick ? g->state_limit_tick
                                                           : g->lease_limit_tick;
    atomic_store_explicit(&g->limit_tick, l, memory_order_release);
}

/* Store a state-file mark covering at least tick; mutex held. */
static int persist_state(idm_snowflake *g, uint64_t tick)
{
    int64_t mark = tick_start_ms(g, tick) + g->lookahead_ms;
    int rc = idm__state_write(&g->st, mark);
    if (rc != 0) {
        atomic_store_explicit(&g->state_error, rc, memory_order_relaxed);
        return rc;
    }
    g->state_limit_tick = (uint64_t)((mark - g->epoch_ms) / g->tick_ms);
    atomic_store_explicit(&g->state_mark_ms, mark, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->state_writes, 1, memory_order_relaxed);
    atomic_store_explicit(&g->state_error, 0, memory_order_relaxed);
    return 0;
}

/* A tick past the combined limit: refused past the lease's mark (only a
 * renewal raises it); past the state file's, a new mark is written. */
static int raise_limit(idm_snowflake *g, uint64_t tick)
{
    int rc = 0;
    pthread_mutex_lock(&g->state_mu);
    if (tick > g->lease_limit_tick) {
        pthread_mutex_unlock(&g->state_mu);
        atomic_fetch_add_explicit(&g->refused_lease, 1, memory_order_relaxed);
        return idm__fail(IDM_ELEASE,
                         g->has_lease_limit
                             ? "snowflake: tick %lld ms is past the mark the lease recorded"
                             : "snowflake: tick %lld ms: no lease yet",
                         (long long)tick_start_ms(g, tick));
    }
    if (g->has_state && tick > g->state_limit_tick)
        rc = persist_state(g, tick);
    publish_limit(g);
    pthread_mutex_unlock(&g->state_mu);
    return rc;
}

static int refuse_lease(idm_snowflake *g, const char *what)
{
    atomic_fetch_add_explicit(&g->refused_lease, 1, memory_order_relaxed);
    if (atomic_load_explicit(&g->wall_deadline, memory_order_relaxed) == INT64_MIN)
        return idm__fail(IDM_ELEASE, "snowflake: no lease holds: none was given yet, or it was "
                                     "dropped (lost or closed)");
    return idm__fail(IDM_ELEASE, "snowflake: the lease's %s deadline has passed", what);
}

static int refuse_forked(void)
{
    return idm__fail(IDM_EFORKED, "snowflake: this generator was opened in the parent process; "
                                  "a forked child must open its own (and claim its own worker id)");
}

/* A shared generator's users are forked processes: only a private one
 * belongs to the process that opened it. */
static inline bool forked(const idm_snowflake *g)
{
    return IDM__UNLIKELY(g->fork_gen != idm__fork_gen_now()) && !g->shared;
}

int idm_snowflake_guard(idm_snowflake *g, idm_mono_ns mono_deadline, idm_wall_ns wall_deadline,
                        idm_unix_ms limit_ms)
{
    idm__clear_detail();
    if (g == NULL || !g->guarded)
        return idm__fail(IDM_EINVAL, "snowflake: guard on a generator opened without guarded");
    if (forked(g))
        return refuse_forked();
    pthread_mutex_lock(&g->state_mu);
    if (limit_ms >= g->epoch_ms) {
        uint64_t t = (uint64_t)((limit_ms - g->epoch_ms) / g->tick_ms);
        if (t > g->max_tick)
            t = g->max_tick;
        if (!g->has_lease_limit || t > g->lease_limit_tick) {
            g->lease_limit_tick = t;
            atomic_store_explicit(&g->lease_limit_ms, limit_ms, memory_order_relaxed);
        }
        g->has_lease_limit = true;
    }
    publish_limit(g);
    atomic_store_explicit(&g->mono_deadline, mono_deadline, memory_order_release);
    atomic_store_explicit(&g->wall_deadline, wall_deadline, memory_order_release);
    pthread_mutex_unlock(&g->state_mu);
    return 0;
}

/*
 * Sequentially consistent, and so is every mint's compare-and-swap and its
 * reload of the wall deadline after it: a drop followed by a read of the
 * state (idm_lease_close) and a mint's CAS followed by a read of the
 * deadline cannot both miss each other. Either the mint sees the drop and
 * hands nothing out, or the reader sees the mint's state.
 */
void idm_snowflake_guard_drop(idm_snowflake *g)
{
    atomic_store_explicit(&g->mono_deadline, INT64_MIN, memory_order_seq_cst);
    atomic_store_explicit(&g->wall_deadline, INT64_MIN, memory_order_seq_cst);
}

/*
 * Every clock reading a mint may hand an id out on comes from here. Under a
 * guard the monotonic deadline is checked first, so no id's time is read
 * under a lease already past it, and the wall deadline after (a process
 * paused between the two, or a machine resumed from suspend, fails that one).
 */
static IDM__ALWAYS_INLINE int read_guarded(idm_snowflake *g, int64_t *now_ns)
{
    if (g->guarded &&
        read_mono_coarse(g) >= atomic_load_explicit(&g->mono_deadline, memory_order_seq_cst))
        return refuse_lease(g, "monotonic");
    *now_ns = read_wall(g);
    if (g->guarded && *now_ns >= atomic_load_explicit(&g->wall_deadline, memory_order_seq_cst))
        return refuse_lease(g, "wall-clock");
    return 0;
}

/* What a call may do when its states would run ahead of the clock. */
enum ahead_action {
    AHEAD_NONE, /* the states are not ahead of the clock: the common case */
    AHEAD_REFUSE_BACK,
    AHEAD_REFUSE_EXHAUSTED,
    AHEAD_MINT,
    AHEAD_MINT_AND_WAIT
};

/*
 * The one reading of the policy for states need_ns ahead of the clock (mint,
 * open and check). A regression (the clock below a tick minted on, or at open
 * below an earlier mark) goes by the backwards policy; else it is exhaustion.
 */
static enum ahead_action decide_ahead(const idm_snowflake *g, bool regression, int64_t need_ns)
{
    if (regression) {
        if (g->backwards == IDM_BACKWARDS_LOGICAL && need_ns <= g->max_drift_ns)
            return AHEAD_MINT;
        if (g->backwards == IDM_BACKWARDS_WAIT && need_ns <= g->max_wait_ns)
            return AHEAD_MINT_AND_WAIT;
        return AHEAD_REFUSE_BACK;
    }
    if (g->exhaust == IDM_EXHAUST_BORROW && need_ns <= g->max_drift_ns)
        return AHEAD_MINT;
    if (need_ns <= g->max_wait_ns)
        return AHEAD_MINT_AND_WAIT;
    return AHEAD_REFUSE_EXHAUSTED;
}

/* How far the clock (now_ns) is behind the start of wall_tick: at least 1 ms. */
static int64_t behind_ms(const idm_snowflake *g, uint64_t wall_tick, int64_t now_ns)
{
    int64_t ms = tick_start_ms(g, wall_tick) - idm__floordiv(now_ns, IDM__NS_PER_MS);
    return ms < 1 ? 1 : ms;
}

/* A call whose states would run further ahead than the policy allows
 * (decide_ahead's refusals): counted and refused. */
static int refuse_ahead(idm_snowflake *g, enum ahead_action act, uint64_t n, int64_t back_ms,
                        int64_t need_ns)
{
    if (act == AHEAD_REFUSE_BACK) {
        atomic_fetch_add_explicit(&g->refused_backwards, 1, memory_order_relaxed);
        return idm__fail(IDM_ECLOCKBACK,
                         "snowflake: the clock is %lld ms behind the last tick minted",
                         (long long)back_ms);
    }
    atomic_fetch_add_explicit(&g->refused_exhausted, 1, memory_order_relaxed);
    return idm__fail(IDM_EEXHAUSTED,
                     "snowflake: %llu ids would run %lld us ahead of the clock, past the %lld us "
                     "wait bound",
                     (unsigned long long)n, (long long)(need_ns / 1000),
                     (long long)(g->max_wait_ns / 1000));
}

static int refuse_before_epoch(const idm_snowflake *g, int64_t now_ns)
{
    return idm__fail(IDM_EEPOCH, "snowflake: the clock reads %lld ms, before the epoch %lld",
                     (long long)idm__floordiv(now_ns, IDM__NS_PER_MS),
                     (long long)(g->epoch_ns / IDM__NS_PER_MS));
}

static int refuse_time_over(const idm_snowflake *g)
{
    return idm__fail(IDM_ETIMEOVER, "snowflake: the time field ran out at %lld ms",
                     (long long)tick_start_ms(g, g->max_tick + 1));
}

/*
 * A reservation whose wait ran out: put the state word back so that the
 * failed call moved nothing. The CAS from end back to old succeeds only if
 * the word still holds end, i.e. no later reservation stands, and the word is
 * never below a state that was handed out, so no handed-out state can be
 * issued again. If another thread reserved meanwhile, the states stay a gap:
 * skipped, never reused.
 */
static void undo(idm_snowflake *g, uint64_t end, uint64_t old)
{
    atomic_compare_exchange_strong_explicit(&g->state, &end, old, memory_order_relaxed,
                                            memory_order_relaxed);
}

static int give_back(idm_snowflake *g, uint64_t end, uint64_t old, bool regression,
                     int64_t now_ns, int64_t target_ns)
{
    undo(g, end, old);
    if (regression) {
        atomic_fetch_add_explicit(&g->refused_backwards, 1, memory_order_relaxed);
        return idm__fail(IDM_ECLOCKBACK,
                         "snowflake: the clock stayed %lld us behind the last tick minted for "
                         "the whole %lld us wait bound",
                         (long long)((target_ns - now_ns) / 1000),
                         (long long)(g->max_wait_ns / 1000));
    }
    atomic_fetch_add_explicit(&g->refused_exhausted, 1, memory_order_relaxed);
    return idm__fail(IDM_EEXHAUSTED,
                     "snowflake: the clock did not reach the next tick within the %lld us wait "
                     "bound",
                     (long long)(g->max_wait_ns / 1000));
}

/*
 * Sleep until the clock reaches need_ns past now_ns, the reading states
 * old + 1 to end were reserved on, for at most max_wait_ns in all. The ids
 * are handed out on the reading after a sleep, so it goes through
 * read_guarded (a drop while we slept is seen there).
 */
static int wait_for_clock(idm_snowflake *g, uint64_t end, uint64_t old, bool regression,
                          int64_t now_ns, int64_t need_ns)
{
    int64_t target = now_ns + need_ns, waited = 0;
    while (now_ns < target) {
        int64_t step = target - now_ns;
        int rc;
        if (waited >= g->max_wait_ns)
            return give_back(g, end, old, regression, now_ns, target);
        if (step > g->max_wait_ns - waited)
            step = g->max_wait_ns - waited;
        atomic_fetch_add_explicit(&g->waits, 1, memory_order_relaxed);
        g->clock->sleep_ns(g->clock_ctx, step);
        waited += step;
        rc = read_guarded(g, &now_ns);
        if (rc != 0) {
            undo(g, end, old);
            return rc;
        }
    }
    return 0;
}

/*
 * Read the clock again, before a policy case is decided on the first
 * reading (another thread may just have read it a little later than we did)
 * or after a slow step. The highest tick seen goes to *wall_seen, loaded
 * before the clock is read: every reading behind it then happened before
 * ours, so only a clock that really stepped back reads below it. (Loaded
 * after, another thread's later reading could make ours look like a
 * regression.)
 */
static IDM__ALWAYS_INLINE int reread(idm_snowflake *g, uint64_t *wall_seen, int64_t *now_ns)
{
    *wall_seen = atomic_load_explicit(&g->max_wall_tick, memory_order_acquire);
    return read_guarded(g, now_ns);
}

/*
 * After the CAS reserved states old + 1 to end on the reading now_ns: a drop
 * (or a passed deadline) meanwhile hands nothing out (see undo). The highest
 * wall tick seen is raised with release: a thread that sees it (acquire, in
 * reread) must also see that our reading came first.
 */
static IDM__ALWAYS_INLINE int after_cas(idm_snowflake *g, enum ahead_action act, uint64_t end,
                                        uint64_t old, uint64_t now_tick, int64_t now_ns,
                                        int64_t need_ns, int64_t back_ms)
{
    uint64_t seen;
    if (g->guarded &&
        IDM__UNLIKELY(now_ns >= atomic_load_explicit(&g->wall_deadline, memory_order_seq_cst))) {
        undo(g, end, old);
        return refuse_lease(g, "wall-clock");
    }
    seen = atomic_load_explicit(&g->max_wall_tick, memory_order_relaxed);
    while (now_tick > seen &&
           !atomic_compare_exchange_weak_explicit(&g->max_wall_tick, &seen, now_tick,
                                                  memory_order_release, memory_order_relaxed))
        ;
    /* Counters live on their own cache line and are touched only here, off
     * the common path: a locked add on every mint would cost more than the
     * rest of the call and bounce a second line between threads. */
    if (IDM__UNLIKELY(act == AHEAD_MINT))
        atomic_fetch_add_explicit(&g->ahead_mints, 1, memory_order_relaxed);
    if (IDM__UNLIKELY(act == AHEAD_MINT_AND_WAIT))
        return wait_for_clock(g, end, old, back_ms > 0, now_ns, need_ns);
    return 0;
}

/*
 * After a failed compare-and-swap: another call moved the word first. Retrying
 * at once would take the state's cache line from the thread that just won it
 * and likely lose again; a short pause of random length, growing with each
 * failure (up to 64 pause instructions, a few microseconds), lets the winner
 * mint on with the line in its cache, so threads take it in turns instead of
 * all at once. Nothing is held meanwhile: a thread that is descheduled here
 * delays only itself. A call whose first CAS succeeds never comes here.
 */
static SF_NOINLINE void cas_backoff(unsigned *fails, uint64_t seed)
{
    unsigned cap = *fails < CAS_BACKOFF_MAX_SHIFT ? *fails : CAS_BACKOFF_MAX_SHIFT;
    /* A cheap mix of the call's stack address (one per thread) and a value
     * of the moment: threads that failed together pause for different
     * lengths. */
    uint64_t x = (seed ^ (uint64_t)(uintptr_t)&seed) * UINT64_C(0x9E3779B97F4A7C15);
    unsigned spins = 1 + (unsigned)((x >> 32) & ((UINT32_C(2) << cap) - 1));
    (*fails)++;
    while (spins-- > 0) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        atomic_signal_fence(memory_order_seq_cst);
#endif
    }
}

/*
 * Reserve n consecutive states; the first goes to *first_out. The whole policy
 * lives here so next, next_batch and next_local cannot disagree.
 *
 * With tick_block (next_local's blocks), n is the most to take: the call takes
 * the states left in the clock's current tick, at most n, and only one state
 * when the next state is not in the clock's tick (the tick is full, or the
 * state runs ahead on logical time or borrowed ticks: that one state goes
 * through the policies as next's would). The number taken goes to *n_out.
 *
 * Waiting reserves first and sleeps after: the states are taken with the CAS,
 * then handed out only once the clock has reached the tick of the last one.
 * (Sleeping first and retrying would let a batch spanning several ticks chase
 * the clock forever.) Under a guard, see idm_snowflake_guard_drop.
 */
static IDM__ALWAYS_INLINE int mint_run(idm_snowflake *g, uint64_t n, bool tick_block,
                                        uint64_t *first_out, uint64_t *n_out)
{
    int64_t now_ns = 0;
    bool fresh = false; /* now_ns was read after the state was first seen */
    uint64_t wall_seen = 0; /* max_wall_tick, loaded just before that read */
    uint64_t most = n;      /* tick_block: the largest block to take */
    unsigned fails = 0;     /* failed compare-and-swaps, for the backoff */
    /* Single ids on the system clock form runs (internal.h). */
    bool run = n == 1 && !tick_block && g->wall_ns == NULL;
    int rc;

    if (forked(g))
        return refuse_forked();
    rc = read_guarded(g, &now_ns);
    if (IDM__UNLIKELY(rc != 0))
        return rc;
    /* Another thread minting a run of single ids on this generator: wait
     * for its end, then read the clock again (see idm__runs). Batches and
     * next_local's blocks take many states with one CAS and go at once. */
    if (run && IDM__UNLIKELY(idm__runs_other(&g->runs, now_ns))) {
        idm__runs_defer(&g->runs);
        rc = read_guarded(g, &now_ns);
        if (IDM__UNLIKELY(rc != 0))
            return rc;
        idm__runs_mark(&g->runs, now_ns); /* this thread's run now */
    }

    for (;;) {
        int64_t since = now_ns - g->epoch_ns;
        uint64_t now_tick, old, first, end, end_tick;
        enum ahead_action act;
        int64_t need_ns, back_ms;

        if (IDM__UNLIKELY(since < 0))
            return refuse_before_epoch(g, now_ns);
        now_tick = tick_of(g, since);
        if (IDM__UNLIKELY(now_tick > g->max_tick))
            return refuse_time_over(g);
        old = atomic_load_explicit(&g->state, memory_order_relaxed);
    retry:
        /* Decided afresh on every try: after a failed CAS the word may have
         * moved either way (another call's give_back lowers it). */
        act = AHEAD_NONE;
        need_ns = 0;
        back_ms = 0;
        first = old + 1 > now_tick << g->sb ? old + 1 : now_tick << g->sb;
        if (tick_block) {
            /* The states left in first's tick (at least first itself). */
            uint64_t left = g->seq_mask - (first & g->seq_mask) + 1;
            n = (first >> g->sb) != now_tick ? 1 : most < left ? most : left;
        }
        if (IDM__UNLIKELY(old >= g->max_state || n - 1 > g->max_state - first))
            return refuse_time_over(g);
        end = first + (n - 1);
        end_tick = end >> g->sb;

        if (IDM__UNLIKELY(end_tick > now_tick)) {
            if (!fresh) {
                /* Look again before calling this a policy case. */
                rc = reread(g, &wall_seen, &now_ns);
                if (rc != 0)
                    return rc;
                fresh = true;
                continue;
            }
            need_ns = ahead_ns(g, end_tick, now_tick, now_ns);
            if (now_tick < wall_seen) {
                back_ms = behind_ms(g, wall_seen, now_ns);
                note_backwards(g, back_ms);
            }
            act = decide_ahead(g, back_ms > 0, need_ns);
            if (act == AHEAD_REFUSE_BACK || act == AHEAD_REFUSE_EXHAUSTED)
                return refuse_ahead(g, act, n, back_ms, need_ns);
        }

        if (IDM__UNLIKELY(end_tick > atomic_load_explicit(&g->limit_tick, memory_order_acquire))) {
            rc = raise_limit(g, end_tick);
            if (rc != 0)
                return rc;
            TEST_HOOK("after-raise-limit", g);
            /* raise_limit may have waited on the mutex and an fsync. */
            rc = reread(g, &wall_seen, &now_ns);
            if (rc != 0)
                return rc;
            fresh = true;
            continue;
        }

        TEST_HOOK("before-cas", g);
        if (IDM__UNLIKELY(!atomic_compare_exchange_weak_explicit(
                &g->state, &old, end, memory_order_seq_cst, memory_order_relaxed))) {
            cas_backoff(&fails, old ^ (uint64_t)now_ns);
            /* The value the CAS failed on is stale after the pause. And the
             * word moved since our reading: if it is now ahead of that
             * reading, read the clock again before calling it a policy case
             * (a thread descheduled between its reading and its CAS would
             * otherwise judge a state others minted on a later clock by its
             * old reading). */
            old = atomic_load_explicit(&g->state, memory_order_relaxed);
            fresh = false;
            goto retry;
        }
        rc = after_cas(g, act, end, old, now_tick, now_ns, need_ns, back_ms);
        if (rc == 0) {
            if (run)
                idm__runs_mark(&g->runs, now_ns);
            *first_out = first;
            if (tick_block)
                *n_out = n;
        }
        return rc;
    }
}

static IDM__ALWAYS_INLINE int mint(idm_snowflake *g, uint64_t n, uint64_t *first_out)
{
    return mint_run(g, n, false, first_out, NULL);
}

int idm_snowflake_check(const idm_snowflake *cg)
{
    /* Reads only; C11 atomic loads take non-const (see stats_get). */
    idm_snowflake *g = (idm_snowflake *)(uintptr_t)cg;
    int64_t now_ns, since, need_ns;
    uint64_t now_tick, old, first, end_tick, wall_seen, lease_limit, state_limit;
    enum ahead_action act;
    int state_error;

    idm__clear_detail();
    if (g == NULL)
        return idm__fail(IDM_EINVAL, "snowflake: no generator");
    if (forked(g))
        return refuse_forked();
    if (g->guarded) {
        int64_t mono = read_mono_coarse(g);
        if (atomic_load_explicit(&g->wall_deadline, memory_order_acquire) == INT64_MIN)
            return idm__fail(IDM_ELEASE, "snowflake: no lease holds: none was given yet, or it "
                                         "was dropped (lost or closed)");
        if (mono >= atomic_load_explicit(&g->mono_deadline, memory_order_acquire))
            return idm__fail(IDM_ELEASE, "snowflake: the lease's monotonic deadline has passed");
    }
    wall_seen = atomic_load_explicit(&g->max_wall_tick, memory_order_acquire);
    now_ns = read_wall(g);
    if (g->guarded && now_ns >= atomic_load_explicit(&g->wall_deadline, memory_order_acquire))
        return idm__fail(IDM_ELEASE, "snowflake: the lease's wall-clock deadline has passed "
                                     "(the wall clock is %lld ms past it)",
                         (long long)((now_ns - atomic_load(&g->wall_deadline)) / IDM__NS_PER_MS));
    since = now_ns - g->epoch_ns;
    if (since < 0)
        return refuse_before_epoch(g, now_ns);
    now_tick = tick_of(g, since);
    old = atomic_load_explicit(&g->state, memory_order_relaxed);
    if (now_tick > g->max_tick || old >= g->max_state)
        return refuse_time_over(g);
    first = old + 1 > now_tick << g->sb ? old + 1 : now_tick << g->sb;
    end_tick = first >> g->sb;
    if (end_tick > now_tick) {
        need_ns = ahead_ns(g, end_tick, now_tick, now_ns);
        act = decide_ahead(g, now_tick < wall_seen, need_ns);
        if (act == AHEAD_REFUSE_BACK)
            return idm__fail(IDM_ECLOCKBACK,
                             "snowflake: the clock is %lld ms behind the last tick minted",
                             (long long)behind_ms(g, wall_seen, now_ns));
        if (act == AHEAD_REFUSE_EXHAUSTED)
            return idm__fail(IDM_EEXHAUSTED,
                             "snowflake: the next id would run %lld us ahead of the clock",
                             (long long)(need_ns / 1000));
    }
    pthread_mutex_lock(&g->state_mu);
    lease_limit = g->lease_limit_tick;
    state_limit = g->state_limit_tick;
    pthread_mutex_unlock(&g->state_mu);
    if (end_tick > lease_limit)
        return idm__fail(IDM_ELEASE, "snowflake: tick %lld ms is past the mark the lease recorded",
                         (long long)tick_start_ms(g, end_tick));
    state_error = atomic_load_explicit(&g->state_error, memory_order_relaxed);
    if (g->has_state && end_tick > state_limit && state_error != 0)
        return idm__fail(state_error, "snowflake: the state file's mark cannot be raised (the "
                                      "last write failed: %s)",
                         idm_strerror(state_error));
    return 0;
}

int idm_snowflake_next(idm_snowflake *g, uint64_t *id)
{
    uint64_t s = 0;
    int rc = mint(g, 1, &s);
    if (IDM__LIKELY(rc == 0))
        *id = compose(g, s);
    return rc;
}

int idm_snowflake_next_batch(idm_snowflake *g, uint64_t *ids, size_t n)
{
    uint64_t s = 0;
    int rc;
    if (n == 0 || ids == NULL)
        return idm__fail(IDM_EINVAL, "snowflake: a batch needs n >= 1 and room for it");
    rc = mint(g, (uint64_t)n, &s);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        ids[i] = compose(g, s + i);
    return 0;
}

/*
 * next_local: each thread keeps, per generator, a block of consecutive states
 * taken with one mint (mint_run with tick_block) and hands them out with no
 * shared write. A block holds states of one tick, the clock's tick when it was
 * taken; a call finding the clock on another tick (or the block used up, or
 * no block) takes a new one through the full path, and what was left of the
 * old block is a gap. Every call checks the process and the lease guard as
 * a mint does (read_guarded), so a drop or a passed deadline stops a thread's
 * block at once; the state file's and the lease's limits held for the block's
 * tick when it was taken, and neither comes down.
 *
 * The cache is a few slots per thread, keyed by the generator's serial, which
 * no other generator has (a freed generator's address is reused; its serial
 * is not). A thread minting on more generators than slots abandons a block
 * (a gap) when it reuses a slot. The slots live on the heap behind one
 * initial-exec TLS pointer, as the CSPRNG's state does (rng.c); a pthread key
 * frees them when the thread exits. In a forked child the copy of the
 * forking thread's cache is emptied before use: its blocks stay the parent's.
 */
#define LOCAL_SLOTS 4

struct local_slot {
    uint64_t serial; /* the generator's serial; 0: empty */
    uint64_t tick;   /* the tick of the block's states */
    uint64_t next;   /* the next state to hand out */
    uint64_t end;    /* the block's last state */
};

struct local_cache {
    uint64_t fork_gen; /* idm__fork_gen the slots were filled under */
    unsigned victim;   /* the slot to reuse next when none is empty */
    struct local_slot slot[LOCAL_SLOTS];
};

static _Thread_local struct local_cache *tls_local __attribute__((tls_model("initial-exec")));
static pthread_key_t local_key;
static pthread_once_t local_key_once = PTHREAD_ONCE_INIT;

static void free_local(void *p)
{
    free(p);
    /* Runs in the exiting thread: a later destructor that mints gets a new
     * cache instead of this freed one. */
    tls_local = NULL;
}

static void make_local_key(void)
{
    pthread_key_create(&local_key, free_local);
}

/* Take a new block for g into a slot of the calling thread's cache (sl if
 * it is g's) and hand out its first state. */
static SF_NOINLINE int local_refill(idm_snowflake *g, struct local_cache *c,
                                      struct local_slot *sl, uint64_t *id)
{
    uint64_t gen = idm__fork_gen_now(), first = 0, n = 0;
    int rc;
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        if (c == NULL) /* no cache: one id as next mints it, still above the
                          thread's earlier ones */
            return idm_snowflake_next(g, id);
        c->fork_gen = gen;
        pthread_once(&local_key_once, make_local_key);
        pthread_setspecific(local_key, c);
        tls_local = c;
    }
    if (c->fork_gen != gen) {
        /* A forked child's copy of its parent thread's cache. */
        memset(c->slot, 0, sizeof c->slot);
        c->fork_gen = gen;
        sl = NULL;
    }
    if (sl == NULL) {
        for (unsigned i = 0; i < LOCAL_SLOTS && sl == NULL; i++)
            if (c->slot[i].serial == 0)
                sl = &c->slot[i];
        if (sl == NULL) {
            sl = &c->slot[c->victim];
            c->victim = (c->victim + 1) % LOCAL_SLOTS;
        }
    }
    /* What is left of the slot's block is a gap from here on, whether or not
     * a new block comes. */
    sl->serial = 0;
    rc = mint_run(g, g->local_block, true, &first, &n);
    if (rc != 0)
        return rc;
    sl->tick = first >> g->sb;
    sl->next = first + 1;
    sl->end = first + (n - 1);
    sl->serial = g->serial;
    *id = compose(g, first);
    return 0;
}

int idm_snowflake_next_local(idm_snowflake *g, uint64_t *id)
{
    struct local_cache *c = tls_local;
    uint64_t gen = idm__fork_gen_now();
    if (IDM__UNLIKELY(g->fork_gen != gen) && !g->shared)
        return refuse_forked();
    if (IDM__LIKELY(c != NULL) && IDM__LIKELY(c->fork_gen == gen)) {
        for (unsigned i = 0; i < LOCAL_SLOTS; i++) {
            struct local_slot *sl = &c->slot[i];
            int64_t now_ns = 0;
            int rc;
            if (sl->serial != g->serial)
                continue;
            if (IDM__UNLIKELY(sl->next > sl->end))
                return local_refill(g, c, sl, id);
            /* The same reading with the same guard checks as a mint's. */
            rc = read_guarded(g, &now_ns);
            if (IDM__UNLIKELY(rc != 0))
                return rc;
            if (IDM__LIKELY(now_ns >= g->epoch_ns) &&
                IDM__LIKELY(tick_of(g, now_ns - g->epoch_ns) == sl->tick)) {
                *id = compose(g, sl->next++);
                return 0;
            }
            return local_refill(g, c, sl, id);
        }
    }
    return local_refill(g, c, NULL, id);
}

const idm_layout *idm_snowflake_layout(const idm_snowflake *g)
{
    return g->layout;
}

void idm_snowflake_stats_get(const idm_snowflake *g, idm_snowflake_stats *out)
{
    /* The atomics are read-only here; C11 atomic loads take non-const. */
    idm_snowflake *m = (idm_snowflake *)(uintptr_t)g;
    uint64_t s = atomic_load(&m->state);
    memset(out, 0, sizeof *out);
    out->refused_backwards = atomic_load(&m->refused_backwards);
    out->refused_exhausted = atomic_load(&m->refused_exhausted);
    out->waits = atomic_load(&m->waits);
    out->ahead_mints = atomic_load(&m->ahead_mints);
    out->max_backwards_ms = atomic_load(&m->max_backwards_ms);
    out->last_backwards_ms = atomic_load(&m->last_backwards_ms);
    out->last_unix_ms = tick_start_ms(g, s >> g->sb);
    out->state_mark_ms = atomic_load(&m->state_mark_ms);
    out->state_writes = atomic_load(&m->state_writes);
    out->state_error = atomic_load(&m->state_error);
    out->refused_lease = atomic_load(&m->refused_lease);
    out->lease_limit_ms = atomic_load(&m->lease_limit_ms);
}

static void destroy(idm_snowflake *g)
{
    if (g->has_state)
        idm__state_close(&g->st);
    pthread_mutex_destroy(&g->state_mu);
    if (g->shared)
        return; /* the memory is the caller's, layout and paths included */
    idm_layout_free(g->layout);
    free(g);
}

static int check_opts(const idm_snowflake_opts *opts)
{
    const idm_layout *l = opts->layout;
    for (unsigned i = 0; i < l->nfields; i++) {
        if (l->f[i].kind != IDM_FIELD_NODE)
            continue;
        if (!(opts->node_set & (UINT32_C(1) << i)))
            return idm__fail(IDM_ENODE, "snowflake: node field '%s' has no value", l->f[i].name);
        if (opts->node[i] > l->f[i].max)
            return idm__fail(IDM_ERANGE, "snowflake: %s=%llu exceeds %llu", l->f[i].name,
                             (unsigned long long)opts->node[i], (unsigned long long)l->f[i].max);
    }
    if (opts->backwards == IDM_BACKWARDS_CHANGE_WORKER)
        return idm__fail(IDM_EINVAL, "snowflake: the change-worker policy needs a leased "
                                     "generator (idm_leased_open): a plain one has no other "
                                     "worker id to change to");
    if (opts->backwards != IDM_BACKWARDS_LOGICAL && opts->backwards != IDM_BACKWARDS_REFUSE &&
        opts->backwards != IDM_BACKWARDS_WAIT)
        return idm__fail(IDM_EINVAL, "snowflake: unknown backwards policy %d", (int)opts->backwards);
    if (opts->exhaust != IDM_EXHAUST_WAIT && opts->exhaust != IDM_EXHAUST_BORROW)
        return idm__fail(IDM_EINVAL, "snowflake: unknown exhaustion policy %d", (int)opts->exhaust);
    /* Bounded so that they stay far from overflow in nanoseconds. */
    if (opts->max_drift_ms > IDM__MAX_BOUND_MS)
        return idm__fail(IDM_EINVAL, "snowflake: max_drift_ms %lld is over one day (%lld)",
                         (long long)opts->max_drift_ms, (long long)IDM__MAX_BOUND_MS);
    if (opts->max_wait_ms > IDM__MAX_BOUND_MS)
        return idm__fail(IDM_EINVAL, "snowflake: max_wait_ms %lld is over one day (%lld)",
                         (long long)opts->max_wait_ms, (long long)IDM__MAX_BOUND_MS);
    /* A tick's states, max + 1, cannot overflow: the time field has bits. */
    if ((uint64_t)opts->local_block > l->f[l->seq_index].max + 1)
        return idm__fail(IDM_EINVAL, "snowflake: local_block %lu is over the %llu states of a tick",
                         (unsigned long)opts->local_block,
                         (unsigned long long)l->f[l->seq_index].max + 1);
    if (opts->state_path != NULL &&
        (opts->state_lookahead_ms < l->tick_ms || opts->state_lookahead_ms > 86400000))
        return idm__fail(IDM_EINVAL,
                         "snowflake: state lookahead %lld ms is outside one tick to one day",
                         (long long)opts->state_lookahead_ms);
    return 0;
}

/* A generator for checked opts, its clock not read yet, in mem (a shared
 * one, SHARED_* bytes) or the heap (mem NULL); NULL if out of memory. */
static idm_snowflake *new_gen(const idm_snowflake_opts *opts, void *mem)
{
    const idm_layout *l = opts->layout;
    int64_t tick_ms = l->tick_ms;
    idm_snowflake *g = mem != NULL ? mem : aligned_alloc(CACHELINE, SHARED_GEN_BYTES);
    if (g == NULL)
        return NULL;
    memset(g, 0, sizeof *g);
    if (mem != NULL) {
        pthread_mutexattr_t a;
        g->shared = true;
        g->opener = getpid();
        g->layout = (idm_layout *)((char *)mem + SHARED_GEN_BYTES);
        memcpy(g->layout, l, sizeof *l);
        g->paths = (char *)mem + SHARED_GEN_BYTES + SHARED_LAYOUT_BYTES;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&g->state_mu, &a);
        pthread_mutexattr_destroy(&a);
    } else {
        if (idm_layout_dup(&g->layout, l) != 0) {
            free(g);
            return NULL;
        }
        pthread_mutex_init(&g->state_mu, NULL);
    }
    g->fork_gen = idm__fork_generation();
    /* Serials as the 128-bit generators take them (local.c): a shared
     * generator's is made by its opener and never equals a process-local
     * one of any process using it. */
    g->serial = mem != NULL ? idm__serial_new_shared(mem) : idm__serial_new();
    if (opts->local_block > 0) {
        g->local_block = opts->local_block;
    } else {
        /* Auto: 64, at most a quarter of a tick's states, at least 1. */
        uint64_t quarter = (l->f[l->seq_index].max + 1) / 4;
        g->local_block = quarter < 64 ? quarter : 64;
        if (g->local_block == 0)
            g->local_block = 1;
    }
    g->clock = opts->clock != NULL ? opts->clock : idm_clock_system();
    g->wall_ns = g->clock == idm_clock_system() ? NULL : g->clock->wall_ns;
    g->clock_ctx = g->clock->ctx;
    g->epoch_ms = l->epoch;
    /* The wall clock in int64 ns ends in 2262: an epoch past that is always
     * in the future. */
    g->epoch_ns = l->epoch <= INT64_MAX / IDM__NS_PER_MS ? l->epoch * IDM__NS_PER_MS : INT64_MAX;
    g->tick_ms = tick_ms;
    g->tick_ns = tick_ms * IDM__NS_PER_MS;
    g->sb = l->seq_bits;
    g->time_shift = l->time_shift;
    g->seq_shift = l->seq_shift;
    g->seq_mask = l->f[l->seq_index].max;
    g->max_tick = l->max_tick;
    g->max_state = (l->max_tick << l->seq_bits) | g->seq_mask;
    for (unsigned i = 0; i < l->nfields; i++)
        if (l->f[i].kind == IDM_FIELD_NODE)
            g->node_bits |= opts->node[i] << l->f[i].shift;
    g->backwards = opts->backwards;
    g->exhaust = opts->exhaust;
    g->max_drift_ns = (opts->max_drift_ms >= 0 ? opts->max_drift_ms : (tick_ms > 10 ? tick_ms : 10)) *
                      IDM__NS_PER_MS;
    g->max_wait_ns = (opts->max_wait_ms >= 0 ? opts->max_wait_ms : 5 + tick_ms) * IDM__NS_PER_MS;
    g->lookahead_ms = opts->state_lookahead_ms;
    g->guarded = opts->guarded;
    g->state_limit_tick = UINT64_MAX;
    g->lease_limit_tick = opts->guarded ? 0 : UINT64_MAX;
    atomic_init(&g->mono_deadline, INT64_MIN);
    atomic_init(&g->wall_deadline, INT64_MIN);
    atomic_init(&g->limit_tick, g->lease_limit_tick);
    return g;
}

/* Read the clock the generator starts on: within the layout's time. */
static int read_start(idm_snowflake *g, int64_t *now_ns, uint64_t *now_tick)
{
    *now_ns = read_wall(g);
    if (*now_ns < g->epoch_ns)
        return idm__fail(IDM_EEPOCH,
                         "snowflake: the clock reads %lld ms, before the layout's epoch %lld "
                         "(a clock that lost its time, or an epoch in the future)",
                         (long long)idm__floordiv(*now_ns, IDM__NS_PER_MS),
                         (long long)g->epoch_ms);
    *now_tick = tick_of(g, *now_ns - g->epoch_ns);
    if (*now_tick > g->max_tick)
        return idm__fail(IDM_ETIMEOVER, "snowflake: the layout's time field ran out at %lld ms",
                         (long long)g->layout->time_end);
    atomic_init(&g->state, 0);
    atomic_init(&g->max_wall_tick, *now_tick);
    return 0;
}

/* Into *mark, the later of the state file's mark (the file is opened here)
 * and opts->after_ms, or -1; src names it for messages. */
static int find_mark(idm_snowflake *g, const idm_snowflake_opts *opts, idm_unix_ms *mark,
                     char *src, size_t cap)
{
    idm_unix_ms epoch = g->epoch_ms;
    *mark = -1;
    if (opts->state_path != NULL) {
        idm_unix_ms file_mark = 0;
        bool found = false;
        int rc = idm__state_open(&g->st, opts->state_path, opts->state_fresh, &file_mark, &found);
        if (rc != 0)
            return rc;
        g->has_state = true;
        if (g->shared) {
            rc = idm__state_move_paths(&g->st, g->paths, SHARED_PATHS_BYTES);
            if (rc != 0)
                return rc;
        }
        if (found && file_mark >= epoch) {
            *mark = file_mark;
            snprintf(src, cap, "the mark in %s", opts->state_path);
        }
    }
    if (opts->after_ms >= epoch && opts->after_ms > *mark) {
        *mark = opts->after_ms;
        snprintf(src, cap, "the previous holder's mark");
    }
    return 0;
}

/*
 * Start above mark: the next state is the first of the tick after it. A clock
 * behind the mark (set back over a restart, or behind an earlier holder)
 * goes by the backwards policy as a step back while running would.
 */
static int start_above(idm_snowflake *g, idm_unix_ms mark, const char *src, int64_t now_ns,
                       uint64_t now_tick)
{
    idm_unix_ms now_ms = idm__floordiv(now_ns, IDM__NS_PER_MS);
    uint64_t mark_tick;
    if (mark >= g->layout->time_end - g->tick_ms)
        return idm__fail(IDM_ETIMEOVER,
                         "snowflake: %s, %lld ms, is at the end of the layout's time", src,
                         (long long)mark);
    mark_tick = (uint64_t)((mark - g->epoch_ms) / g->tick_ms);
    if (now_ms < mark) {
        int64_t need_ns = ahead_ns(g, mark_tick + 1, now_tick, now_ns);
        int64_t back_ms = mark - now_ms;
        enum ahead_action act = decide_ahead(g, true, need_ns);
        note_backwards(g, back_ms);
        if (act == AHEAD_REFUSE_BACK)
            return idm__fail(IDM_ECLOCKBACK,
                             "snowflake: the clock is %lld ms behind %s; refusing to start until "
                             "it passes",
                             (long long)back_ms, src);
        if (act == AHEAD_MINT_AND_WAIT)
            g->clock->sleep_ns(g->clock_ctx, need_ns);
        atomic_store(&g->max_wall_tick, mark_tick);
    }
    atomic_store(&g->state, (mark_tick << g->sb) | g->seq_mask);
    if (g->has_state)
        atomic_store(&g->state_mark_ms, mark);
    return 0;
}

size_t idm_snowflake_shared_size(void)
{
    return SHARED_GEN_BYTES + SHARED_LAYOUT_BYTES + SHARED_PATHS_BYTES;
}

static int open_in(idm_snowflake **out, void *mem, const idm_snowflake_opts *opts);

int idm_snowflake_open(idm_snowflake **out, const idm_snowflake_opts *opts)
{
    idm__clear_detail();
    return open_in(out, NULL, opts);
}

int idm_snowflake_open_shared(idm_snowflake **out, void *mem, size_t size,
                              const idm_snowflake_opts *opts)
{
    idm__clear_detail();
    if (mem == NULL)
        return idm__fail(IDM_EINVAL, "snowflake: no shared memory given");
    if ((uintptr_t)mem % CACHELINE != 0)
        return idm__fail(IDM_EINVAL, "snowflake: shared memory %p is not %d-byte aligned", mem,
                         CACHELINE);
    if (size < idm_snowflake_shared_size())
        return idm__fail(IDM_EINVAL, "snowflake: %zu bytes of shared memory, under the %zu a "
                                     "shared generator takes",
                         size, idm_snowflake_shared_size());
    return open_in(out, mem, opts);
}

static int open_in(idm_snowflake **out, void *mem, const idm_snowflake_opts *opts)
{
    idm_snowflake *g;
    int64_t now_ns = 0;
    uint64_t now_tick = 0;
    idm_unix_ms mark = -1;
    char src[300] = "";
    int rc;

    if (out == NULL || opts == NULL || opts->layout == NULL)
        return idm__fail(IDM_EINVAL, "snowflake: no options or no layout");
    rc = check_opts(opts);
    if (rc != 0)
        return rc;
    g = new_gen(opts, mem);
    if (g == NULL)
        return IDM_ENOMEM;
    rc = read_start(g, &now_ns, &now_tick);
    if (rc == 0)
        rc = find_mark(g, opts, &mark, src, sizeof src);
    if (rc == 0 && mark >= 0)
        rc = start_above(g, mark, src, now_ns, now_tick);
    if (rc == 0 && g->has_state) {
        uint64_t first = atomic_load(&g->state) >> g->sb;
        pthread_mutex_lock(&g->state_mu);
        rc = persist_state(g, first > now_tick ? first : now_tick);
        publish_limit(g);
        pthread_mutex_unlock(&g->state_mu);
    }
    if (rc != 0) {
        destroy(g);
        return rc;
    }
    *out = g;
    return 0;
}

int idm_snowflake_close(idm_snowflake *g)
{
    int rc = 0;
    if (g == NULL)
        return 0;
    if (g->shared && g->opener != getpid())
        return idm__fail(IDM_EFORKED, "snowflake: a shared generator is closed by the process "
                                      "that opened it (pid %ld), not by one of its users",
                         (long)g->opener);
    if (forked(g)) {
        /* A child's copy: the state file and its lock belong to the parent
         * (closing our descriptors leaves the parent's lock in place), and
         * the child minted nothing. Free the copy, write nothing. */
        destroy(g);
        return refuse_forked();
    }
    if (g->has_state) {
        /* The exact mark: every id minted has a time at or below the start
         * of the last tick, so a restart need not wait out the lookahead. */
        uint64_t last_tick = atomic_load(&g->state) >> g->sb;
        rc = idm__state_write(&g->st, tick_start_ms(g, last_tick));
    }
    destroy(g);
    return rc;
}
