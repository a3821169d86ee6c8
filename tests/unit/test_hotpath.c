/* SPDX-License-Identifier: MIT */
/*
 * The minting path's budget, counted rather than timed. The promises:
 *   - ARCHITECTURE.md, "The generator": a mint "reads the wall clock, then
 *     the word, and moves it with one compare-and-swap"; libidmint "never
 *     allocates on the minting path".
 *   - ARCHITECTURE.md, "Worker-id leases": a guarded generator checks the
 *     monotonic deadline (CLOCK_MONOTONIC_COARSE) before reading the wall
 *     clock; the hot-path budget: one vDSO clock read plus one CAS, no
 *     system calls, no locks, no allocation.
 * So in the common case (the state is not ahead of the clock: no
 * exhaustion, no regression, no contention) every idm_snowflake_next and
 * every idm_snowflake_next_batch reads the wall clock exactly once, the
 * monotonic clock never (once under a guard), sleeps never, and neither
 * allocates nor frees.
 *
 * Clock reads are counted through an injected clock that wraps a manual
 * one, and, for the system clock (which the generator reads inline, not
 * through its idm_clock), through clock_gettime defined here: it takes the
 * place of libc's for the whole program and forwards to the system call.
 *
 * Allocations are counted by malloc and its relatives defined here, which
 * forward to glibc's own (__libc_malloc ...). Under a sanitizer that does
 * not work: AddressSanitizer and ThreadSanitizer both replace malloc
 * themselves (their runtimes define malloc, calloc, aligned_alloc ... and
 * memory from one allocator must not be freed by the other), so in those
 * builds malloc is not defined here and the sanitizer's own allocation
 * hooks (__sanitizer_install_malloc_and_free_hooks) do the counting
 * instead; TSan does not run them from its aligned allocators, so under
 * TSan those alone are wrapped here (see below). Either way the counting is
 * checked to see every kind of allocation before it is trusted to see none.
 *
 * Counting is per thread (a thread-local switch), so nothing a runtime
 * does on a thread of its own is counted against the generator.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define T0 INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define MS INT64_C(1000000)
#define HOUR_NS (INT64_C(3600000) * MS)

/* Mints per shape: far below the 4096 states of a twitter tick, so no
 * shape below can fill a tick and leave the common case. */
enum { N = 1000, BATCHES = 100, BATCH = 8 };

/* ---- allocation counting ---- */

static _Thread_local int alloc_counting;
static _Atomic int64_t allocs, frees;

static void note_alloc(void)
{
    if (alloc_counting)
        atomic_fetch_add(&allocs, 1);
}

static void note_free(void)
{
    if (alloc_counting)
        atomic_fetch_add(&frees, 1);
}

/* Which sanitizer owns malloc. __has_feature is clang's; GCC (before 14)
 * defines __SANITIZE_*__ only, and cannot parse __has_feature(...) in an
 * #if at all, hence the nesting. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#if defined(UNDER_ASAN) || defined(UNDER_TSAN)
/* ASan and TSan own malloc: count through their hooks (declared here:
 * GCC's headers do not ship sanitizer/allocator_interface.h). */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static void san_malloc_hook(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    note_alloc();
}

static void san_free_hook(const volatile void *p)
{
    (void)p;
    note_free();
}

#ifdef UNDER_TSAN
/* ThreadSanitizer runs the hooks from its malloc, calloc, realloc and free
 * only, not from aligned_alloc, posix_memalign or memalign (GCC 12's
 * libtsan; allocation_counting_is_live found it). Those three are counted
 * here and passed on to the runtime's own, which its runtimes export as
 * __interceptor_NAME (GCC's libtsan and clang's compiler-rt alike), so the
 * memory still comes from TSan's allocator and goes back to it. A runtime
 * that drops those names fails to link: loud, never green by accident. */
void *__interceptor_aligned_alloc(size_t align, size_t n);
int __interceptor_posix_memalign(void **out, size_t align, size_t n);
void *__interceptor_memalign(size_t align, size_t n);

void *aligned_alloc(size_t align, size_t n)
{
    note_alloc();
    return __interceptor_aligned_alloc(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    note_alloc();
    return __interceptor_posix_memalign(out, align, n);
}

void *memalign(size_t align, size_t n)
{
    note_alloc();
    return __interceptor_memalign(align, n);
}
#endif

static int install_alloc_counting(void)
{
    return __sanitizer_install_malloc_and_free_hooks(san_malloc_hook, san_free_hook) != 0;
}
#else
/* The plain build: glibc's allocator under our names. glibc allows malloc
 * to be replaced, and its own calls (strdup, fopen ...) then come here too;
 * all of them end in glibc's allocator, so every pointer is freed by the
 * allocator that made it. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t align, size_t n);

void *malloc(size_t n)
{
    note_alloc();
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n)
{
    note_alloc();
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n)
{
    note_alloc();
    return __libc_realloc(p, n);
}

void free(void *p)
{
    if (p != NULL)
        note_free();
    __libc_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
    note_alloc();
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
    note_alloc();
    return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    note_alloc();
    p = __libc_memalign(align, n);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

static int install_alloc_counting(void)
{
    return 1;
}
#endif /* UNDER_ASAN || UNDER_TSAN */

static void alloc_count_start(void)
{
    atomic_store(&allocs, 0);
    atomic_store(&frees, 0);
    alloc_counting = 1;
}

static void alloc_count_stop(void)
{
    alloc_counting = 0;
}

/* ---- clock_gettime counting (the system clock's inlined reads) ---- */

static _Thread_local int clock_counting;
static _Atomic int64_t realtime_reads, coarse_reads, other_reads;

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    if (clock_counting) {
        if (clk == CLOCK_REALTIME)
            atomic_fetch_add(&realtime_reads, 1);
        else if (clk == CLOCK_MONOTONIC_COARSE)
            atomic_fetch_add(&coarse_reads, 1);
        else
            atomic_fetch_add(&other_reads, 1);
    }
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

/* ---- a counting clock around a manual one ---- */

typedef struct counting_clock {
    idm_clock iface;
    idm_manual_clock *mc;
    const idm_clock *base;
    _Atomic int64_t wall_reads, mono_reads, sleeps;
} counting_clock;

typedef struct reads {
    int64_t wall, mono, sleeps;
} reads;

static idm_wall_ns cc_wall(void *ctx)
{
    counting_clock *cc = ctx;
    atomic_fetch_add(&cc->wall_reads, 1);
    return cc->base->wall_ns(cc->base->ctx);
}

static idm_mono_ns cc_mono(void *ctx)
{
    counting_clock *cc = ctx;
    atomic_fetch_add(&cc->mono_reads, 1);
    return cc->base->mono_ns(cc->base->ctx);
}

static void cc_sleep(void *ctx, int64_t ns)
{
    counting_clock *cc = ctx;
    atomic_fetch_add(&cc->sleeps, 1);
    cc->base->sleep_ns(cc->base->ctx, ns);
}

static void cc_init(counting_clock *cc)
{
    /* Frozen unless told: a sleep would not move wall time on. */
    IDM_ASSERT_OK(idm_manual_clock_new(&cc->mc, T0, false));
    cc->base = idm_manual_clock_clock(cc->mc);
    cc->iface.ctx = cc;
    cc->iface.wall_ns = cc_wall;
    cc->iface.mono_ns = cc_mono;
    cc->iface.sleep_ns = cc_sleep;
    atomic_init(&cc->wall_reads, 0);
    atomic_init(&cc->mono_reads, 0);
    atomic_init(&cc->sleeps, 0);
}

/* The counts since the last take, and zero them. */
static reads cc_take(counting_clock *cc)
{
    reads r;
    r.wall = atomic_exchange(&cc->wall_reads, 0);
    r.mono = atomic_exchange(&cc->mono_reads, 0);
    r.sleeps = atomic_exchange(&cc->sleeps, 0);
    return r;
}

/* ---- generators ---- */

static idm_snowflake *open_gen(idm_layout *l, const idm_clock *clock, bool guarded)
{
    idm_snowflake_opts o;
    idm_snowflake *g;
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = clock;
    o.guarded = guarded;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 5));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    return g;
}

/* A guard an hour wide on the generator's own clocks (c NULL: the system
 * clock, read with the system call; else a manual clock's own interface),
 * read so that no counter sees it: the deadlines and the mark are never
 * near in these tests, so the guard only adds its checks. */
static void guard_for_an_hour(idm_snowflake *g, const idm_clock *c)
{
    idm_mono_ns mono;
    idm_wall_ns wall;
    if (c == NULL) {
        struct timespec ts;
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, &ts);
        mono = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
        wall = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    } else {
        mono = c->mono_ns(c->ctx);
        wall = c->wall_ns(c->ctx);
    }
    IDM_ASSERT_OK(idm_snowflake_guard(g, mono + HOUR_NS, wall + HOUR_NS, (wall + HOUR_NS) / MS));
}

/* All of ids[0..n-1] on the tick starting at ms, strictly increasing: the
 * calls counted were the common case, not a regression or a full tick. */
static void check_same_tick(const idm_layout *l, const uint64_t *ids, size_t n, idm_unix_ms ms)
{
    idm_decoded d;
    assert_true(idm_test_strictly_increasing(ids, n));
    for (size_t i = 0; i < n; i++) {
        IDM_ASSERT_OK(idm_layout_decode(l, ids[i], &d));
        CHECK(d.unix_ms == ms, "id %zu is on %lld, not %lld", i, LL(d.unix_ms), LL(ms));
    }
}

static void assert_reads(reads r, int64_t calls, int64_t mono_per_call, const char *shape)
{
    CHECK(r.wall == calls, "%s: %lld wall-clock reads for %lld calls, promised one each", shape,
          LL(r.wall), LL(calls));
    CHECK(r.mono == calls * mono_per_call,
          "%s: %lld monotonic reads for %lld calls, promised %lld each", shape, LL(r.mono),
          LL(calls), LL(mono_per_call));
    CHECK(r.sleeps == 0, "%s: %lld sleeps in the common case", shape, LL(r.sleeps));
}

/*
 * The three shapes of the common case on a manual clock, each counted:
 * N single mints in one tick, N single mints each on a tick of its own,
 * and BATCHES batches of BATCH ids in one tick. mono_per_call is 0 for an
 * unguarded generator and 1 under a guard.
 */
static void count_common_case(counting_clock *cc, idm_layout *l, bool guarded)
{
    static uint64_t ids[N > BATCHES * BATCH ? N : BATCHES * BATCH];
    int64_t mono_per_call = guarded ? 1 : 0;
    idm_snowflake *g = open_gen(l, &cc->iface, guarded);
    idm_unix_ms t;
    if (guarded)
        guard_for_an_hour(g, cc->base);

    /* One tick, a fresh one. */
    idm_manual_clock_advance(cc->mc, 1);
    t = idm_manual_clock_now_ms(cc->mc);
    cc_take(cc);
    for (size_t i = 0; i < N; i++)
        IDM_ASSERT_OK(idm_snowflake_next(g, &ids[i]));
    assert_reads(cc_take(cc), N, mono_per_call, "next, one tick");
    check_same_tick(l, ids, N, t);

    /* A tick each (the clock moved between calls, not by the generator). */
    for (size_t i = 0; i < N; i++) {
        idm_decoded d;
        idm_manual_clock_advance(cc->mc, 1);
        IDM_ASSERT_OK(idm_snowflake_next(g, &ids[i]));
        IDM_ASSERT_OK(idm_layout_decode(l, ids[i], &d));
        assert_int_equal(d.unix_ms, idm_manual_clock_now_ms(cc->mc));
    }
    assert_reads(cc_take(cc), N, mono_per_call, "next, a tick each");
    assert_true(idm_test_strictly_increasing(ids, N));

    /* Batches in one tick. */
    idm_manual_clock_advance(cc->mc, 1);
    t = idm_manual_clock_now_ms(cc->mc);
    cc_take(cc);
    for (size_t k = 0; k < BATCHES; k++)
        IDM_ASSERT_OK(idm_snowflake_next_batch(g, &ids[k * BATCH], BATCH));
    assert_reads(cc_take(cc), BATCHES, mono_per_call, "next_batch, one tick");
    check_same_tick(l, ids, BATCHES * BATCH, t);

    idm_snowflake_close(g);
}

/* Unguarded, on an injected clock: one wall-clock read a call, nothing else. */
static void one_wall_read_per_mint(void **unused)
{
    counting_clock cc;
    idm_layout *l;
    (void)unused;
    cc_init(&cc);
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    count_common_case(&cc, l, false);
    idm_layout_free(l);
    idm_manual_clock_free(cc.mc);
}

/* Guarded: the guard adds exactly one monotonic read a call, no more. */
static void guard_adds_one_monotonic_read(void **unused)
{
    counting_clock cc;
    idm_layout *l;
    (void)unused;
    cc_init(&cc);
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    count_common_case(&cc, l, true);
    idm_layout_free(l);
    idm_manual_clock_free(cc.mc);
}

/*
 * The system clock, which the generator reads inline (CLOCK_REALTIME; under
 * a guard CLOCK_MONOTONIC_COARSE first): one CLOCK_REALTIME read a call, one
 * CLOCK_MONOTONIC_COARSE read a call under a guard and none without, and no
 * other clock read. Real time moves on here, so ids may span ticks; the
 * N + BATCHES * BATCH states taken are fewer than one tick holds, so the
 * state is never ahead of the clock (short of the real clock stepping back
 * during the test).
 */
static void system_clock_reads(void **unused)
{
    static uint64_t ids[N + BATCHES * BATCH];
    idm_layout *l;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    for (int guarded = 0; guarded <= 1; guarded++) {
        idm_snowflake *g = open_gen(l, NULL, guarded != 0);
        int64_t rt, co, ot;
        if (guarded)
            guard_for_an_hour(g, NULL);
        atomic_store(&realtime_reads, 0);
        atomic_store(&coarse_reads, 0);
        atomic_store(&other_reads, 0);
        clock_counting = 1;
        for (size_t i = 0; i < N; i++)
            IDM_ASSERT_OK(idm_snowflake_next(g, &ids[i]));
        for (size_t k = 0; k < BATCHES; k++)
            IDM_ASSERT_OK(idm_snowflake_next_batch(g, &ids[N + k * BATCH], BATCH));
        clock_counting = 0;
        rt = atomic_load(&realtime_reads);
        co = atomic_load(&coarse_reads);
        ot = atomic_load(&other_reads);
        assert_true(idm_test_strictly_increasing(ids, N + BATCHES * BATCH));
        CHECK(rt == N + BATCHES, "guarded=%d: %lld CLOCK_REALTIME reads for %d calls", guarded,
              LL(rt), N + BATCHES);
        CHECK(co == (guarded ? N + BATCHES : 0),
              "guarded=%d: %lld CLOCK_MONOTONIC_COARSE reads for %d calls", guarded, LL(co),
              N + BATCHES);
        CHECK(ot == 0, "guarded=%d: %lld reads of other clocks", guarded, LL(ot));
        idm_snowflake_close(g);
    }
    idm_layout_free(l);
}

/* ---- allocations ---- */

/*
 * Before trusting a count of zero: the counting sees each kind of
 * allocation the library could make (called through volatile pointers, so
 * the compiler cannot pair a malloc with its free and drop both), and sees
 * idm_snowflake_open's (the generator is aligned_alloc'd, the layout
 * copied).
 */
static void allocation_counting_is_live(void **unused)
{
    void *(*volatile p_malloc)(size_t) = malloc;
    void *(*volatile p_calloc)(size_t, size_t) = calloc;
    void *(*volatile p_realloc)(void *, size_t) = realloc;
    void *(*volatile p_aligned_alloc)(size_t, size_t) = aligned_alloc;
    int (*volatile p_posix_memalign)(void **, size_t, size_t) = posix_memalign;
    void (*volatile p_free)(void *) = free;
    void *a, *b, *c, *d = NULL;
    int64_t n;
    idm_layout *l;
    idm_snowflake *g;
    (void)unused;

    alloc_count_start();
    a = p_malloc(24);
    CHECK(atomic_load(&allocs) >= 1, "malloc not counted");
    n = atomic_load(&allocs);
    b = p_calloc(3, 8);
    CHECK(atomic_load(&allocs) > n, "calloc not counted");
    n = atomic_load(&allocs);
    a = p_realloc(a, 4096);
    CHECK(atomic_load(&allocs) > n, "realloc not counted");
    n = atomic_load(&allocs);
    c = p_aligned_alloc(64, 128);
    CHECK(atomic_load(&allocs) > n, "aligned_alloc not counted");
    n = atomic_load(&allocs);
    assert_int_equal(p_posix_memalign(&d, 64, 128), 0);
    CHECK(atomic_load(&allocs) > n, "posix_memalign not counted");
    n = atomic_load(&frees);
    p_free(a);
    p_free(b);
    p_free(c);
    p_free(d);
    CHECK(atomic_load(&frees) >= n + 4, "free not counted");
    alloc_count_stop();
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(d);

    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    alloc_count_start();
    g = open_gen(l, NULL, false);
    alloc_count_stop();
    CHECK(atomic_load(&allocs) >= 2, "idm_snowflake_open: %lld allocations counted, expected >= 2",
          LL(atomic_load(&allocs)));
    idm_snowflake_close(g);
    idm_layout_free(l);
}

static void assert_no_allocation(const char *what)
{
    CHECK(atomic_load(&allocs) == 0 && atomic_load(&frees) == 0,
          "%s: %lld allocations and %lld frees while minting", what, LL(atomic_load(&allocs)),
          LL(atomic_load(&frees)));
}

/*
 * No allocation and no free in idm_snowflake_next or _next_batch once the
 * generator is open: on the system clock (the library's own path) and on
 * an injected clock, unguarded and guarded, within a tick and across ticks.
 */
static void no_allocation_while_minting(void **unused)
{
    static uint64_t ids[BATCH];
    idm_layout *l;
    idm_manual_clock *mc;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));

    for (int guarded = 0; guarded <= 1; guarded++) {
        const idm_clock *clocks[2] = {NULL, idm_manual_clock_clock(mc)};
        for (int k = 0; k < 2; k++) {
            idm_snowflake *g = open_gen(l, clocks[k], guarded != 0);
            if (guarded)
                guard_for_an_hour(g, clocks[k]);
            /* The first mint after open too: nothing is set up lazily. */
            alloc_count_start();
            for (size_t i = 0; i < N; i++) {
                IDM_ASSERT_OK(idm_snowflake_next(g, &ids[0]));
                if (k == 1 && i % 2 == 0)
                    idm_manual_clock_advance(mc, 1); /* counted calls cross ticks too */
            }
            for (size_t i = 0; i < BATCHES; i++)
                IDM_ASSERT_OK(idm_snowflake_next_batch(g, ids, BATCH));
            alloc_count_stop();
            assert_no_allocation(guarded ? (k ? "guarded, manual clock" : "guarded, system clock")
                                         : (k ? "manual clock" : "system clock"));
            idm_snowflake_close(g);
        }
    }
    idm_manual_clock_free(mc);
    idm_layout_free(l);
}

/*
 * The state file's rewrite, which a mint crossing the lookahead does, on the
 * minting path too: no allocation (the file's directory, synced after each
 * rename, is found at open). A manual clock moved 20 ms a mint with a
 * lookahead of 10 ms: every mint rewrites the file.
 */
static void no_allocation_with_a_state_file(void **unused)
{
    char *dir = idm_test_tmpdir(), path[4200];
    idm_layout *l;
    idm_manual_clock *mc;
    idm_snowflake_opts o;
    idm_snowflake *g;
    idm_snowflake_stats st;
    uint64_t id;
    uint64_t writes0;
    (void)unused;
    snprintf(path, sizeof path, "%s/ids.state", dir);
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = idm_manual_clock_clock(mc);
    o.state_path = path;
    o.state_lookahead_ms = 10;
    o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 5));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    idm_snowflake_stats_get(g, &st);
    writes0 = st.state_writes;
    alloc_count_start();
    for (int i = 0; i < 100; i++) {
        idm_manual_clock_advance(mc, 20);
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    }
    alloc_count_stop();
    idm_snowflake_stats_get(g, &st);
    CHECK(st.state_writes - writes0 == 100, "%llu state writes for 100 mints, want 100",
          (unsigned long long)(st.state_writes - writes0));
    assert_no_allocation("state file rewrites");
    idm_snowflake_close(g);
    idm_manual_clock_free(mc);
    idm_layout_free(l);
    idm_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    /* The allocation tests run first: their mints are the first of the
     * process, so an allocation made once and kept (lazily, on the first
     * call) is counted too. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allocation_counting_is_live),
        cmocka_unit_test(no_allocation_while_minting),
        cmocka_unit_test(no_allocation_with_a_state_file),
        cmocka_unit_test(one_wall_read_per_mint),
        cmocka_unit_test(guard_adds_one_monotonic_read),
        cmocka_unit_test(system_clock_reads),
    };
    if (!install_alloc_counting()) {
        fprintf(stderr, "test_hotpath: the sanitizer's allocation hooks could not be installed\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
