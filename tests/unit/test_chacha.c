/* SPDX-License-Identifier: MIT */
/*
 * The ChaCha20 block function under the system CSPRNG: RFC 8439's block
 * test vector (section 2.3.2), and the four-lane path agreeing with the
 * one-block path for every count of blocks and counter start.
 *
 * And when the system CSPRNG takes a new seed, counted exactly through an
 * injected entropy source: before a thread's first byte, then once for
 * every 1 MiB boundary its output crosses and never before (after T bytes
 * a thread has taken exactly ceil(T / 1 MiB) seeds), whatever the sizes of
 * the requests, also when one request crosses several boundaries, in each
 * thread on its own; and in a forked child before its first byte, after
 * which the child's next seed is 1 MiB away, while the parent's schedule
 * goes on untouched. With chosen seeds, the output is byte for byte the
 * fast-key-erasure stream of seed 1 for 1 MiB, then of seed 2, and so on.
 *
 * This program is built with src/core/rng.c compiled in with
 * IDM_TEST_HOOKS (tests/CMakeLists.txt), so that its seeds come from the
 * counting source below instead of getrandom(2); the rest comes from the
 * library, whose own rng.o is then not linked. internal.h declares the hook.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "testids.h" /* idm_test_write_all, idm_test_read_all */

static const uint32_t key[8] = {0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c,
                                0x13121110, 0x17161514, 0x1b1a1918, 0x1f1e1d1c};

static void rfc8439_block_vector(void **unused)
{
    static const uint32_t nonce[3] = {0x09000000, 0x4a000000, 0x00000000};
    static const uint8_t want[64] = {
        0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3,
        0x20, 0x71, 0xc4, 0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22,
        0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e, 0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa,
        0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2, 0xb5, 0x12, 0x9c, 0xd1,
        0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e};
    uint8_t out[64 * 5];
    (void)unused;
    idm__chacha20_blocks(key, nonce, 1, out, 1);
    assert_memory_equal(out, want, 64);
    /* The same block as the first of a four-lane run. */
    memset(out, 0, sizeof out);
    idm__chacha20_blocks(key, nonce, 1, out, 5);
    assert_memory_equal(out, want, 64);
}

static void lanes_agree_with_single_blocks(void **unused)
{
    static const uint32_t nonce[3] = {0, 0, 0};
    uint8_t many[64 * 16], one[64];
    (void)unused;
    for (uint32_t start = 0; start < 3; start++) {
        for (size_t n = 1; n <= 16; n++) {
            memset(many, 0, sizeof many);
            idm__chacha20_blocks(key, nonce, start, many, n);
            for (size_t b = 0; b < n; b++) {
                idm__chacha20_blocks(key, nonce, start + (uint32_t)b, one, 1);
                assert_memory_equal(many + 64 * b, one, 64);
            }
        }
    }
}

/* ---- the reseed schedule ---- */

/* The promise, stated here and not taken from rng.c: a new seed every MiB. */
#define MIB ((size_t)1 << 20)

/* Seeds (entropy requests) this thread has taken, and all threads. */
static _Thread_local uint64_t seeds_here;
static _Atomic uint64_t seeds_total;
/* Set only while no thread draws: seed k of a thread is chosen_seed(k)
 * instead of getrandom's bytes. */
static int chosen_seeds;

/* Seed k (1, 2, ...) when the test chooses the seeds: 32 bytes no other k
 * gives. */
static void chosen_seed(uint64_t k, uint8_t out[32])
{
    for (size_t i = 0; i < 32; i++)
        out[i] = (uint8_t)(k * 73 + i * 29 + 5);
}

/* The entropy source the rng is given (IDM_TEST_HOOKS): getrandom(2),
 * counted. It always fills the whole request, so one request is one seed. */
static ssize_t counting_getrandom(void *buf, size_t n, unsigned flags)
{
    uint8_t *b = buf;
    size_t got = 0;
    seeds_here++;
    atomic_fetch_add_explicit(&seeds_total, 1, memory_order_relaxed);
    if (chosen_seeds && n == 32) {
        chosen_seed(seeds_here, b);
        return (ssize_t)n;
    }
    while (got < n) {
        ssize_t r = getrandom(b + got, n - got, flags);
        if (r < 0)
            return r;
        got += (size_t)r;
    }
    return (ssize_t)n;
}

/* Seeds a thread must have taken after t bytes: ceil(t / 1 MiB). */
static uint64_t seeds_for(uint64_t t) { return (t + MIB - 1) / MIB; }

/* A list of request sizes, run on a new thread (so its rng state starts
 * unseeded), checking the thread's seed count after every request of at
 * least one byte. A zero-byte request is not checked: whether it reseeds
 * at a boundary is not promised, only that the next byte then finds
 * exactly one new seed. No cmocka call on the thread: the first failure is
 * left in err. */
typedef struct plan {
    size_t *sizes;
    size_t n, cap;
    uint64_t total;
    uint8_t *out;    /* if set: the whole output, request after request */
    uint8_t *buf;    /* else each request is drawn here */
    uint64_t seeds;  /* the thread's count at the end */
    char err[256];   /* empty: every check held */
} plan;

static void plan_add(plan *p, size_t n)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 1024;
        p->sizes = realloc(p->sizes, p->cap * sizeof *p->sizes);
        assert_non_null(p->sizes);
    }
    p->sizes[p->n++] = n;
    p->total += n;
}

/* Requests of n bytes each until the plan's total reaches t. The last one
 * may be shorter. */
static void plan_fill_to(plan *p, size_t n, uint64_t t)
{
    while (p->total < t)
        plan_add(p, t - p->total < n ? (size_t)(t - p->total) : n);
}

/* Allocates the buffer the plan draws into (or the whole output). */
static void plan_ready(plan *p, int keep_output)
{
    size_t biggest = 1;
    for (size_t i = 0; i < p->n; i++)
        if (p->sizes[i] > biggest)
            biggest = p->sizes[i];
    if (keep_output) {
        p->out = malloc(p->total + 1);
        assert_non_null(p->out);
    } else {
        p->buf = malloc(biggest);
        assert_non_null(p->buf);
    }
}

static void plan_free(plan *p)
{
    free(p->sizes);
    free(p->out);
    free(p->buf);
}

static void *run_plan(void *arg)
{
    plan *p = arg;
    uint64_t t = 0;
    for (size_t i = 0; i < p->n; i++) {
        size_t n = p->sizes[i];
        uint8_t *dst = p->out != NULL ? p->out + t : p->buf;
        int rc = idm_random_bytes(dst, n);
        if (rc != 0) {
            snprintf(p->err, sizeof p->err, "request %zu (%zu bytes) returned %s", i, n,
                     idm_err_name(rc));
            break;
        }
        t += n;
        if (n > 0 && seeds_here != seeds_for(t)) {
            snprintf(p->err, sizeof p->err,
                     "after request %zu (%zu bytes; %llu bytes in all, %.6f MiB) the thread "
                     "had taken %llu seeds, expected exactly %llu",
                     i, n, ULL(t), (double)t / (double)MIB, ULL(seeds_here), ULL(seeds_for(t)));
            break;
        }
    }
    p->seeds = seeds_here;
    return NULL;
}

/* Runs the plan on a new thread and fails the test with its first failed
 * check. */
static void run_plan_on_thread(plan *p)
{
    pthread_t th;
    uint64_t before = atomic_load(&seeds_total);
    assert_int_equal(pthread_create(&th, NULL, run_plan, p), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    CHECK(p->err[0] == '\0', "%s", p->err);
    CHECK(p->seeds == seeds_for(p->total), "%llu seeds for %llu bytes", ULL(p->seeds),
          ULL(p->total));
    CHECK(atomic_load(&seeds_total) - before == p->seeds,
          "seeds were taken outside the drawing thread");
}

/* The sizes ids ask for: 10 bytes (a ULID's or UUIDv7's random part, which
 * does not divide 1 MiB, so requests straddle the boundaries) to 3 MiB and
 * a bit; 16 bytes (which does) to exactly 2 MiB, then 1 byte more. The
 * first seed comes with the first byte. */
static void rng_reseed_small_requests(void **unused)
{
    (void)unused;
    plan p = {0};
    plan_fill_to(&p, 10, 3 * MIB + 25);
    plan_ready(&p, 0);
    run_plan_on_thread(&p);
    assert_int_equal(p.seeds, 4);
    plan_free(&p);

    plan q = {0};
    plan_fill_to(&q, 16, 2 * MIB);
    plan_add(&q, 1);
    plan_ready(&q, 0);
    run_plan_on_thread(&q);
    assert_int_equal(q.seeds, 3);
    plan_free(&q);
}

/* Long requests: one of 3 MiB + 1 crosses three boundaries and must take
 * four seeds; one request ending exactly on a boundary takes none for the
 * next MiB; requests straddling a boundary by one byte either way. */
static void rng_reseed_long_requests(void **unused)
{
    (void)unused;
    plan p = {0};
    plan_add(&p, 3 * MIB + 1);         /* 4 seeds */
    plan_add(&p, MIB - 1);             /* exactly 4 MiB: still 4 */
    plan_add(&p, 0);
    plan_add(&p, MIB);                 /* 5 MiB: 5 */
    plan_add(&p, 1);                   /* 6 */
    plan_add(&p, MIB - 2);             /* one byte short of 6 MiB: 6 */
    plan_add(&p, 2);                   /* one byte past it: 7 */
    plan_add(&p, 2 * MIB - 1);         /* exactly 8 MiB: 8 */
    plan_add(&p, 5 * MIB + 3);         /* 14 */
    plan_ready(&p, 0);
    run_plan_on_thread(&p);
    assert_int_equal(p.seeds, 14);
    plan_free(&p);
}

/* Seeded random request sizes (0 to 70,000 bytes, a fifth of them 0 to 40)
 * over 8 MiB: the count is exact after every request. */
static void rng_reseed_random_requests(void **unused)
{
    idm_test_rng r;
    plan p = {0};
    (void)unused;
    idm_test_rng_init(&r, idm_test_seed());
    while (p.total < 8 * MIB) {
        uint64_t hi = idm_test_rng_range(&r, 0, 4) == 0 ? 40 : 70000;
        plan_add(&p, (size_t)idm_test_rng_range(&r, 0, hi));
    }
    plan_ready(&p, 0);
    run_plan_on_thread(&p);
    plan_free(&p);
}

enum { PLAN_THREADS = 4 };

/* Four threads at once, each with its own random sizes over 3 MiB: each
 * thread's count follows its own output only (another thread's draws never
 * reseed it), and the seeds taken in all are the sum. */
static void rng_reseed_per_thread(void **unused)
{
    idm_test_rng r;
    plan p[PLAN_THREADS];
    pthread_t th[PLAN_THREADS];
    uint64_t before = atomic_load(&seeds_total), sum = 0;
    (void)unused;
    idm_test_rng_init(&r, idm_test_seed() ^ 0x5eed);
    memset(p, 0, sizeof p);
    for (int i = 0; i < PLAN_THREADS; i++) {
        uint64_t t = 3 * MIB + idm_test_rng_range(&r, 0, MIB);
        while (p[i].total < t)
            plan_add(&p[i], (size_t)idm_test_rng_range(&r, 0, 20000));
        plan_ready(&p[i], 0);
    }
    for (int i = 0; i < PLAN_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, run_plan, &p[i]), 0);
    for (int i = 0; i < PLAN_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < PLAN_THREADS; i++) {
        CHECK(p[i].err[0] == '\0', "thread %d: %s", i, p[i].err);
        CHECK(p[i].seeds == seeds_for(p[i].total), "thread %d: %llu seeds for %llu bytes", i,
              ULL(p[i].seeds), ULL(p[i].total));
        sum += p[i].seeds;
        plan_free(&p[i]);
    }
    CHECK(atomic_load(&seeds_total) - before == sum, "%llu seeds in all, the threads took %llu",
          ULL(atomic_load(&seeds_total) - before), ULL(sum));
}

/* The fast-key-erasure stream of one seed, as rng.h describes it and
 * written apart from rng.c: 16 ChaCha20 blocks (zero nonce, counters 0 to
 * 15) under the key, whose first 32 bytes become the next key and the
 * other 992 are output. */
typedef struct stream_model {
    uint32_t k[8];
    uint8_t blocks[16 * 64];
    size_t at;
} stream_model;

static void model_next_blocks(stream_model *m)
{
    static const uint32_t zero_nonce[3] = {0, 0, 0};
    idm__chacha20_blocks(m->k, zero_nonce, 0, m->blocks, 16);
    memcpy(m->k, m->blocks, 32);
    m->at = 32;
}

static void model_stream(const uint8_t seed[32], uint8_t *out, size_t n)
{
    stream_model m;
    memcpy(m.k, seed, 32);
    model_next_blocks(&m);
    while (n > 0) {
        size_t take;
        if (m.at == sizeof m.blocks)
            model_next_blocks(&m);
        take = sizeof m.blocks - m.at < n ? sizeof m.blocks - m.at : n;
        memcpy(out, m.blocks + m.at, take);
        m.at += take;
        out += take;
        n -= take;
    }
}

/* With chosen seeds, 3 MiB + 100 bytes drawn in uneven requests (one of
 * them 1.5 MiB) are exactly: 1 MiB of seed 1's stream, 1 MiB of seed 2's,
 * 1 MiB of seed 3's, 100 bytes of seed 4's. So each seed is used, from its
 * first byte, for exactly 1 MiB of output. */
static void rng_reseed_where_the_stream_changes(void **unused)
{
    static const size_t pattern[] = {1, 7, 992, 33, 1024, 4095, 65537, 10, 16, 250000};
    plan p = {0};
    uint8_t *want;
    (void)unused;
    plan_add(&p, 5);
    plan_add(&p, MIB + MIB / 2);
    for (size_t i = 0; p.total < 3 * MIB + 100; i++)
        plan_add(&p, pattern[i % (sizeof pattern / sizeof pattern[0])]);
    /* Cut the last request so the total is exactly 3 MiB + 100. */
    p.total -= p.sizes[p.n - 1];
    p.sizes[p.n - 1] = (size_t)(3 * MIB + 100 - p.total);
    p.total = 3 * MIB + 100;
    plan_ready(&p, 1);
    chosen_seeds = 1;
    run_plan_on_thread(&p);
    chosen_seeds = 0;
    assert_int_equal(p.seeds, 4);

    want = malloc(p.total);
    assert_non_null(want);
    for (uint64_t k = 1; k <= 4; k++) {
        uint8_t seed[32];
        size_t from = (size_t)(k - 1) * MIB;
        size_t n = p.total - from < MIB ? (size_t)(p.total - from) : MIB;
        chosen_seed(k, seed);
        model_stream(seed, want + from, n);
    }
    for (size_t i = 0; i < p.total; i++) {
        if (p.out[i] != want[i])
            fail_msg("output byte %zu (%.6f MiB) is not byte %zu of seed %zu's stream", i,
                     (double)i / (double)MIB, i % MIB, i / MIB + 1);
    }
    free(want);
    plan_free(&p);
}

/* What fork_scenario saw, in the parent and (sent over a pipe) in the
 * child. Counts are this thread's seeds. */
typedef struct fork_counts {
    uint64_t before_fork;      /* after 1000 bytes: 1 */
    uint64_t parent_at_mib;    /* the parent, 1 MiB drawn in all: still 1 */
    uint64_t parent_past_mib;  /* one byte more: 2 */
    uint64_t child[3];         /* the child's new seeds after its first byte (1), after
                                * 1 MiB since the fork (1), after one byte more (2) */
    size_t child_bytes;
    int status;                /* the child's wait status */
    char err[128];
} fork_counts;

static void *fork_scenario(void *arg)
{
    fork_counts *fc = arg;
    uint8_t *big = malloc(MIB);
    int fds[2];
    pid_t pid;
    fc->status = -1;
    if (big == NULL || pipe(fds) != 0) {
        snprintf(fc->err, sizeof fc->err, "no memory or no pipe");
        free(big);
        return NULL;
    }
    if (idm_random_bytes(big, 1000) != 0)
        snprintf(fc->err, sizeof fc->err, "draw before fork failed");
    fc->before_fork = seeds_here;
    pid = fork();
    if (pid < 0) {
        snprintf(fc->err, sizeof fc->err, "fork failed");
        close(fds[0]);
        close(fds[1]);
        free(big);
        return NULL;
    }
    if (pid == 0) {
        /* The child: this thread's copy, state seeded and part used. */
        uint64_t base = seeds_here, r[3];
        close(fds[0]);
        if (idm_random_bytes(big, 1) != 0)
            _exit(2);
        r[0] = seeds_here - base;
        if (idm_random_bytes(big, MIB - 1) != 0)
            _exit(2);
        r[1] = seeds_here - base;
        if (idm_random_bytes(big, 1) != 0)
            _exit(2);
        r[2] = seeds_here - base;
        _exit(idm_test_write_all(fds[1], r, sizeof r) == 0 ? 0 : 3);
    }
    close(fds[1]);
    if (idm_random_bytes(big, MIB - 1000) != 0)
        snprintf(fc->err, sizeof fc->err, "parent's draw failed");
    fc->parent_at_mib = seeds_here;
    if (idm_random_bytes(big, 1) != 0)
        snprintf(fc->err, sizeof fc->err, "parent's draw failed");
    fc->parent_past_mib = seeds_here;
    fc->child_bytes = idm_test_read_all(fds[0], fc->child, sizeof fc->child);
    close(fds[0]);
    if (waitpid(pid, &fc->status, 0) != pid)
        snprintf(fc->err, sizeof fc->err, "waitpid failed");
    free(big);
    return NULL;
}

/* A thread draws 1000 bytes (its first seed) and forks. The child, whose
 * copy of that thread's state is seeded and mostly unused, takes a new seed
 * before its first byte and its next one only after 1 MiB more; the
 * parent's schedule is untouched by the fork (no seed until its 1 MiB is
 * used up, then exactly one). */
static void rng_reseed_fork(void **unused)
{
    fork_counts fc;
    pthread_t th;
    (void)unused;
    memset(&fc, 0, sizeof fc);
    assert_int_equal(pthread_create(&th, NULL, fork_scenario, &fc), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    CHECK(fc.err[0] == '\0', "%s", fc.err);
    CHECK(WIFEXITED(fc.status) && WEXITSTATUS(fc.status) == 0, "child failed (wait status %d)",
          fc.status);
    CHECK(fc.child_bytes == sizeof fc.child, "the child sent %zu bytes", fc.child_bytes);
    CHECK(fc.before_fork == 1, "%llu seeds for the first 1000 bytes, expected 1",
          ULL(fc.before_fork));
    CHECK(fc.child[0] == 1, "the forked child took %llu new seeds before its first byte, "
          "expected exactly 1", ULL(fc.child[0]));
    CHECK(fc.child[1] == 1, "the child took %llu new seeds for its first 1 MiB, expected 1",
          ULL(fc.child[1]));
    CHECK(fc.child[2] == 2, "the child took %llu new seeds for 1 MiB + 1 byte, expected 2",
          ULL(fc.child[2]));
    CHECK(fc.parent_at_mib == 1, "the parent had %llu seeds after 1 MiB (fork in between), "
          "expected 1", ULL(fc.parent_at_mib));
    CHECK(fc.parent_past_mib == 2, "the parent had %llu seeds after 1 MiB + 1 byte, expected 2",
          ULL(fc.parent_past_mib));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc8439_block_vector),
        cmocka_unit_test(lanes_agree_with_single_blocks),
        cmocka_unit_test(rng_reseed_small_requests),
        cmocka_unit_test(rng_reseed_long_requests),
        cmocka_unit_test(rng_reseed_random_requests),
        cmocka_unit_test(rng_reseed_per_thread),
        cmocka_unit_test(rng_reseed_where_the_stream_changes),
        cmocka_unit_test(rng_reseed_fork),
    };
    /* Before any thread draws: every seed of this program is counted. */
    idm__rng_getrandom_test_hook = counting_getrandom;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
