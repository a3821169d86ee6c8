/* SPDX-License-Identifier: MIT */
/*
 * idm_bench_seg: the segment (ticket) allocator of segment.h, each figure
 * next to a floor or a peer measured in the same round.
 *
 *   F1  the physical floor: a bare atomic fetch_add on one 64-bit counter,
 *       1 thread (ns per op)
 *   S1  idm_seq_next, 1 thread, a real SQLite store (sqlite:// in a
 *       temporary directory): ids/s, ratio to F1
 *   F2  2 threads doing fetch_add on one shared counter (combined ns per op)
 *   S2  idm_seq_next, 2 threads on one allocator: combined ids/s, ratio to F2
 *   P1  a C rendering of Meituan Leaf's segment mode (peers/leaf_segment.c)
 *       over the same SQLite store, 1 thread and 2 threads, against S1, S2
 *   R1  store round trips per million ids at a steady 200,000 ids/s with
 *       target_ms 200 (adaptive block size), against a fixed block of
 *       min_block (min_block = max_block = 1000)
 *   W1  time consumers waited on the store per million ids, same pace, over
 *       a slow store (SQLite plus 2 ms per take), prefetch_pct 20; target:
 *       no wait at steady load (after the first quarter of the run, once
 *       the allocator has seen the rate and the store's latency)
 *   W2  the same with prefetch_pct 0 (no prefetch), for comparison
 *   W3  W1 with a floor file (opts.floor_file: every block recorded on
 *       disk, two fsyncs, before any of its ids is handed out); target: no
 *       wait at steady load either
 *
 * All of it runs IDM_BENCH_ROUNDS times (default 3), interleaved; the fast
 * rows each for IDM_BENCH_SECONDS of wall time (default 1), the paced rows
 * (R1, W1, W2, W3) for twice that. The table gives the median figure, the median
 * of the per-round ratios and the range of the figure.
 *
 * Checks (a failure prints WRONG and makes the exit status 2): every call
 * succeeds; ids of one thread strictly increase (S1 over all its rounds, each
 * thread of S2, the paced runs, the peer); the two threads of S2 (and of the
 * peer) never hand out the same id (the first REC_CAP ids of each thread of
 * every round are recorded and compared); the allocator's own count of ids
 * handed out matches the calls made (for S2 only a note: a position lost
 * in a race at a block switch is counted as used). The peer's failed calls
 * (Leaf's "both segments are not ready") are its result, noted, not a
 * failed check.
 *
 * Usage: idm_bench_seg [--dir DIR]   (the SQLite files go to a fresh
 * temporary directory under DIR; default $TMPDIR or /tmp).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <idmint/idmint.h>
#include <idmint/segment.h>

#include "bench_util.h"

/* The Leaf peer (peers/leaf_segment.c). */
typedef int (*peer_leaf_take_fn)(void *ctx, int64_t step, int64_t *first);
typedef struct peer_leaf peer_leaf;
peer_leaf *peer_leaf_open(peer_leaf_take_fn take, void *ctx, int64_t step);
int peer_leaf_next(peer_leaf *p, int64_t *id);
void peer_leaf_close(peer_leaf *p);

#define CHUNK 256                    /* calls between two reads of the clock */
#define REC_CAP ((size_t)4 << 20)    /* ids recorded per thread for the check */
#define S_MAX_BLOCK INT64_C(100000000)
#define LEAF_STEP INT64_C(1000)      /* Leaf's default step */
#define PACE_RATE 200000.0           /* ids/s of the paced rows */
#define PACE_TARGET_MS 200
#define PACE_MIN_BLOCK INT64_C(1000)
#define SLOW_TAKE_NS INT64_C(2000000) /* the slow store's added latency */

enum {
    M_F1,   /* ns/op */
    M_S1,   /* ns/id */
    M_F2,   /* ns/op, combined */
    M_S2,   /* ns/id, combined */
    M_P1,   /* ns/id, leaf 1 thread */
    M_P2,   /* ns/id, leaf 2 threads combined */
    M_R1,   /* fetches per 1M ids, adaptive */
    M_R1F,  /* fetches per 1M ids, fixed block */
    M_W1,   /* wait ms per 1M ids, prefetch */
    M_W1N,  /* waits, prefetch */
    M_W2,   /* wait ms per 1M ids, no prefetch */
    M_W2N,  /* waits, no prefetch */
    M_R1B,  /* the adaptive block size at the end of R1 */
    M_W2E,  /* ms per wait, no prefetch */
    M_W1L,  /* waits after the first quarter, prefetch */
    M_W3,   /* wait ms per 1M ids, prefetch, floor file */
    M_W3N,  /* waits, the same */
    M_W3L,  /* waits after the first quarter, the same */
    M_COUNT
};

static double g_m[BENCH_ROUNDS_MAX][M_COUNT];
static int g_rounds;

static void die(const char *what, int rc)
{
    fprintf(stderr, "idm_bench_seg: %s: %s (%s)\n", what, idm_strerror(rc),
            idm_error_detail());
    exit(1);
}

/* ------------------------------------------------------------- slow store */

/* A store that wraps a real one (store 0 of 1) and sleeps before each take:
 * a remote database's round trip. */
typedef struct slow_store {
    idm_store *inner;
    int64_t delay_ns;
} slow_store;

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int slow_create(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    slow_store *s = ctx;
    if (k != 0 || n != 1)
        return IDM_EINVAL;
    return idm_store_create(s->inner, name, start, 0, 1);
}

static int slow_take(void *ctx, const char *name, int64_t size, uint32_t k, uint32_t n,
                     int64_t limit, int64_t *start)
{
    slow_store *s = ctx;
    int64_t first = 0;
    int rc;
    (void)limit; /* for 0 of 1, the inner store applies the same limit */
    if (k != 0 || n != 1)
        return IDM_EINVAL;
    sleep_ns(s->delay_ns);
    rc = idm_store_take(s->inner, name, size, 0, 1, &first);
    if (rc == 0)
        *start = first; /* 0 of 1: local units are ids */
    return rc;
}

static int slow_list(void *ctx, idm_seq_info **out, size_t *count)
{
    slow_store *s = ctx;
    return idm_store_list(s->inner, out, count);
}

/* One store only: the allocator never asks for floors of other stores. */
static int slow_floor_get(void *ctx, const char *name, uint32_t k, int64_t *floor)
{
    (void)ctx;
    (void)name;
    (void)k;
    *floor = 0;
    return 0;
}

static int slow_floor_raise(void *ctx, const char *name, uint32_t k, int64_t floor)
{
    (void)ctx;
    (void)name;
    (void)k;
    (void)floor;
    return 0;
}

static void slow_close(void *ctx)
{
    slow_store *s = ctx;
    idm_store_close(s->inner);
    free(s);
}

static const idm_store_ops slow_ops = {slow_create, slow_take, slow_list, slow_floor_get,
                                       slow_floor_raise, slow_close};

/* ------------------------------------------------------------ allocators */

static idm_store *g_store; /* the real SQLite store */
static idm_store *g_slow;  /* the slow wrapper (over its own file) */
static int g_seq_no;
static char g_floor_file[4200]; /* for W3 */

/* A fresh sequence in st, and an allocator over it. */
static idm_seq *open_seq_file(idm_store *st, int64_t min_block, int64_t max_block,
                              int64_t target_ms, int pct, const char *floor_file)
{
    char name[32];
    idm_seq_opts o;
    idm_seq *q = NULL;
    int rc;
    snprintf(name, sizeof name, "bench%d", ++g_seq_no);
    if ((rc = idm_store_create(st, name, 1, 0, 1)) != 0)
        die("idm_store_create", rc);
    idm_seq_opts_init(&o);
    o.name = name;
    o.stores = &st;
    o.nstores = 1;
    if (min_block > 0)
        o.min_block = min_block;
    if (max_block > 0)
        o.max_block = max_block;
    if (target_ms > 0)
        o.target_ms = target_ms;
    if (pct >= 0)
        o.prefetch_pct = pct;
    o.floor_file = floor_file;
    if ((rc = idm_seq_open(&q, &o)) != 0)
        die("idm_seq_open", rc);
    return q;
}

static idm_seq *open_seq(idm_store *st, int64_t min_block, int64_t max_block,
                         int64_t target_ms, int pct)
{
    return open_seq_file(st, min_block, max_block, target_ms, pct, NULL);
}

static int leaf_take(void *ctx, int64_t step, int64_t *first)
{
    return idm_store_take(ctx, "leaf", step, 0, 1, first);
}

/* ------------------------------------------------------------ timed loops */

enum kind { K_FLOOR, K_SEQ, K_LEAF };

typedef struct loop_arg {
    enum kind kind;
    void *gen;              /* idm_seq, peer_leaf, or the _Atomic counter */
    int64_t deadline;       /* CLOCK_MONOTONIC ns */
    int64_t *rec;           /* the first ids, for the collision check */
    size_t cap;
    atomic_int *ready, *go; /* two-thread start */
    /* results */
    uint64_t count, errors, bad, recorded;
    int last_error;
    int64_t prev;           /* in: the id before the run; out: the last id */
    int64_t end_ns;
} loop_arg;

/* Calls in chunks of CHUNK until the deadline; counts ids that do not go
 * above the previous one of this thread. */
static void run_loop(loop_arg *a)
{
    uint64_t count = 0, errors = 0, bad = 0;
    size_t n = 0;
    int64_t prev = a->prev, now;
    int last = 0;
    do {
        switch (a->kind) {
        case K_FLOOR: {
            _Atomic int64_t *c = a->gen;
            for (int i = 0; i < CHUNK; i++) {
                int64_t id = atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
                bad += id <= prev;
                prev = id;
                if (n < a->cap)
                    a->rec[n++] = id;
            }
            break;
        }
        case K_SEQ:
            for (int i = 0; i < CHUNK; i++) {
                int64_t id;
                int rc = idm_seq_next(a->gen, &id);
                if (rc != 0) {
                    errors++;
                    last = rc;
                    continue;
                }
                bad += id <= prev;
                prev = id;
                if (n < a->cap)
                    a->rec[n++] = id;
            }
            break;
        case K_LEAF:
            for (int i = 0; i < CHUNK; i++) {
                int64_t id;
                if (peer_leaf_next(a->gen, &id) != 0) {
                    errors++;
                    last = -1;
                    continue;
                }
                bad += id <= prev;
                prev = id;
                if (n < a->cap)
                    a->rec[n++] = id;
            }
            break;
        }
        count += CHUNK;
        now = bench_mono_ns();
    } while (now < a->deadline);
    a->count = count - errors;
    a->errors = errors;
    a->last_error = last;
    a->bad = bad;
    a->prev = prev;
    a->recorded = n;
    a->end_ns = now;
}

static void *thread_main(void *p)
{
    loop_arg *a = p;
    atomic_fetch_add(a->ready, 1);
    while (atomic_load(a->go) == 0) {
    }
    run_loop(a);
    return NULL;
}

static uint64_t g_leaf_errors[2]; /* the peer's failed calls, 1 and 2 threads */

static void check_loop(const char *what, const loop_arg *a)
{
    if (a->kind == K_LEAF && a->errors != 0)
        bench_printf("note: %s: %" PRIu64 " calls failed (Leaf's \"both segments are "
                     "not ready\": the peer's result, not a failed check)\n", what, a->errors);
    else if (a->errors != 0)
        bench_wrong("%s: %" PRIu64 " calls failed (last: %s)", what, a->errors,
                    a->last_error > 0 ? idm_strerror(a->last_error) : "peer error");
    if (a->bad != 0)
        bench_wrong("%s: %" PRIu64 " ids not above the previous one of the thread", what,
                    a->bad);
}

/* Both arrays strictly increase: the ids in both. */
static uint64_t count_common(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
    uint64_t c = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else {
            c++;
            i++;
            j++;
        }
    }
    return c;
}

static int64_t *g_rec[2];

/* One thread for secs; returns ns per call. */
static double run_1t(enum kind kind, void *gen, double secs, int64_t *prev,
                     const char *what, uint64_t *count)
{
    loop_arg a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.gen = gen;
    a.prev = *prev;
    int64_t t0 = bench_mono_ns();
    a.deadline = t0 + (int64_t)(secs * 1e9);
    run_loop(&a);
    check_loop(what, &a);
    if (kind == K_LEAF)
        g_leaf_errors[0] += a.errors;
    *prev = a.prev;
    *count = a.count;
    return (double)(a.end_ns - t0) / (double)(a.count > 0 ? a.count : 1);
}

/* Two threads on gen for secs; returns combined ns per call (elapsed to the
 * later thread's stop over both counts). Checks the threads' first REC_CAP
 * ids for collisions. */
static double run_2t(enum kind kind, void *gen, double secs, const char *what,
                     uint64_t *count)
{
    loop_arg a[2];
    pthread_t th[2];
    atomic_int ready = 0, go = 0;
    for (int i = 0; i < 2; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].kind = kind;
        a[i].gen = gen;
        a[i].rec = g_rec[i];
        a[i].cap = REC_CAP;
        a[i].ready = &ready;
        a[i].go = &go;
        a[i].prev = -1;
    }
    for (int i = 0; i < 2; i++) {
        int rc = pthread_create(&th[i], NULL, thread_main, &a[i]);
        if (rc != 0) {
            fprintf(stderr, "idm_bench_seg: pthread_create: %s\n", strerror(rc));
            exit(1);
        }
    }
    while (atomic_load(&ready) < 2) {
    }
    int64_t t0 = bench_mono_ns();
    a[0].deadline = a[1].deadline = t0 + (int64_t)(secs * 1e9);
    atomic_store(&go, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    int64_t end = a[0].end_ns > a[1].end_ns ? a[0].end_ns : a[1].end_ns;
    char buf[96];
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof buf, "%s, thread %d", what, i + 1);
        check_loop(buf, &a[i]);
        if (kind == K_LEAF)
            g_leaf_errors[1] += a[i].errors;
    }
    uint64_t common = count_common(g_rec[0], a[0].recorded, g_rec[1], a[1].recorded);
    if (common != 0)
        bench_wrong("%s: %" PRIu64 " ids handed out to both threads", what, common);
    *count = a[0].count + a[1].count;
    return (double)(end - t0) / (double)(*count > 0 ? *count : 1);
}

/* ------------------------------------------------------------ paced runs */

typedef struct paced_result {
    uint64_t ids, fetches, waits, wait_ns;
    uint64_t late_waits; /* waits after the first quarter of the run */
    int64_t block;
} paced_result;

/* Draws ids from q at PACE_RATE for secs (bursts every ~200 us to keep up
 * with the schedule). The figures are the allocator's stats over the whole
 * life of q, which starts here (the fetch at open included). */
static void run_paced(idm_seq *q, double secs, const char *what, paced_result *out)
{
    uint64_t drawn = 0, bad = 0, errors = 0;
    int64_t prev = -1;
    int last = 0;
    int64_t t0 = bench_mono_ns(), end = t0 + (int64_t)(secs * 1e9), now;
    int64_t quarter = t0 + (int64_t)(secs * 0.25e9);
    idm_seq_stats st;
    uint64_t early_waits = UINT64_MAX;
    while ((now = bench_mono_ns()) < end) {
        if (early_waits == UINT64_MAX && now >= quarter) {
            idm_seq_stats_get(q, &st);
            early_waits = st.waits;
        }
        uint64_t due = (uint64_t)((double)(now - t0) * (PACE_RATE / 1e9));
        while (drawn < due) {
            int64_t id;
            int rc = idm_seq_next(q, &id);
            drawn++;
            if (rc != 0) {
                errors++;
                last = rc;
                continue;
            }
            bad += id <= prev;
            prev = id;
        }
        sleep_ns(200000);
    }
    if (errors != 0)
        bench_wrong("%s: %" PRIu64 " calls failed (last: %s)", what, errors,
                    idm_strerror(last));
    if (bad != 0)
        bench_wrong("%s: %" PRIu64 " ids not above the previous one", what, bad);
    idm_seq_stats_get(q, &st);
    if (early_waits == UINT64_MAX)
        early_waits = st.waits;
    if (st.ids != drawn - errors)
        bench_wrong("%s: the allocator counts %" PRIu64 " ids handed out, %" PRIu64
                    " were drawn", what, st.ids, drawn - errors);
    out->ids = drawn - errors;
    out->fetches = st.fetches;
    out->waits = st.waits;
    out->late_waits = st.waits - early_waits;
    out->wait_ns = st.wait_ns;
    out->block = st.block;
}

/* ------------------------------------------------------------ the rounds */

static idm_seq *g_s1, *g_s2;
static peer_leaf *g_leaf;
static int64_t g_s1_prev = -1, g_f1_prev = -1, g_leaf_prev = -1;
static _Alignas(64) _Atomic int64_t g_ctr1, g_ctr2;
static uint64_t g_s1_ids, g_s2_ids; /* handed out by g_s1, g_s2 so far */

static void one_round(double *m, double secs)
{
    uint64_t n;
    double pace = 2 * secs;
    paced_result pr;
    idm_seq *q;

    m[M_F1] = run_1t(K_FLOOR, &g_ctr1, secs, &g_f1_prev, "F1 floor", &n);
    m[M_S1] = run_1t(K_SEQ, g_s1, secs, &g_s1_prev, "S1 idm_seq_next, 1 thread", &n);
    g_s1_ids += n;
    atomic_store(&g_ctr2, 0);
    m[M_F2] = run_2t(K_FLOOR, &g_ctr2, secs, "F2 floor, 2 threads", &n);
    m[M_S2] = run_2t(K_SEQ, g_s2, secs, "S2 idm_seq_next, 2 threads", &n);
    g_s2_ids += n;
    m[M_P1] = run_1t(K_LEAF, g_leaf, secs, &g_leaf_prev, "P1 leaf, 1 thread", &n);
    m[M_P2] = run_2t(K_LEAF, g_leaf, secs, "P2 leaf, 2 threads", &n);
    /* The peer hands out from the same counter again after P2: its ids of
     * a later P1 only need to be above those of P2. */
    g_leaf_prev = -1;

    q = open_seq(g_store, PACE_MIN_BLOCK, 0, PACE_TARGET_MS, -1);
    run_paced(q, pace, "R1 adaptive", &pr);
    idm_seq_close(q);
    m[M_R1] = (double)pr.fetches * 1e6 / (double)pr.ids;
    m[M_R1B] = (double)pr.block;
    q = open_seq(g_store, PACE_MIN_BLOCK, PACE_MIN_BLOCK, PACE_TARGET_MS, -1);
    run_paced(q, pace, "R1 fixed block", &pr);
    idm_seq_close(q);
    m[M_R1F] = (double)pr.fetches * 1e6 / (double)pr.ids;

    q = open_seq(g_slow, PACE_MIN_BLOCK, 0, PACE_TARGET_MS, -1);
    run_paced(q, pace, "W1 prefetch", &pr);
    idm_seq_close(q);
    m[M_W1] = (double)pr.wait_ns / 1e6 * 1e6 / (double)pr.ids;
    m[M_W1N] = (double)pr.waits;
    m[M_W1L] = (double)pr.late_waits;
    q = open_seq(g_slow, PACE_MIN_BLOCK, 0, PACE_TARGET_MS, 0);
    run_paced(q, pace, "W2 no prefetch", &pr);
    idm_seq_close(q);
    m[M_W2] = (double)pr.wait_ns / 1e6 * 1e6 / (double)pr.ids;
    m[M_W2N] = (double)pr.waits;
    m[M_W2E] = pr.waits > 0 ? (double)pr.wait_ns / 1e6 / (double)pr.waits : 0;
    /* A new sequence each round: a new file for it (a file is one sequence's). */
    (void)unlink(g_floor_file);
    q = open_seq_file(g_slow, PACE_MIN_BLOCK, 0, PACE_TARGET_MS, -1, g_floor_file);
    run_paced(q, pace, "W3 prefetch, floor file", &pr);
    idm_seq_close(q);
    m[M_W3] = (double)pr.wait_ns / 1e6 * 1e6 / (double)pr.ids;
    m[M_W3N] = (double)pr.waits;
    m[M_W3L] = (double)pr.late_waits;
}

/* ------------------------------------------------------------ the table */

static double med(int k)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = g_m[r][k];
    return bench_median(v, g_rounds);
}

static double max_of(int k)
{
    double x = g_m[0][k];
    for (int r = 1; r < g_rounds; r++)
        x = g_m[r][k] > x ? g_m[r][k] : x;
    return x;
}

/* The median of the per-round a / b. */
static double med_ratio(int a, int b)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = g_m[r][a] / g_m[r][b];
    return bench_median(v, g_rounds);
}

/* The range of a figure: ns/id, or as ids/s when rate. */
static const char *spread(char *buf, size_t len, int k, bool rate, const char *unit)
{
    double lo = g_m[0][k], hi = lo;
    for (int r = 1; r < g_rounds; r++) {
        lo = g_m[r][k] < lo ? g_m[r][k] : lo;
        hi = g_m[r][k] > hi ? g_m[r][k] : hi;
    }
    if (rate) {
        char a[32], b[32];
        snprintf(buf, len, "%s..%s/s", bench_si(a, sizeof a, 1e9 / hi),
                 bench_si(b, sizeof b, 1e9 / lo));
    } else {
        snprintf(buf, len, "%.4g..%.4g%s", lo, hi, unit);
    }
    return buf;
}

int main(int argc, char **argv)
{
    const char *base = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            base = argv[++i];
        else {
            fprintf(stderr, "usage: idm_bench_seg [--dir DIR]\n");
            return 1;
        }
    }
    if (base == NULL)
        base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    double secs = bench_seconds();
    g_rounds = bench_rounds();
    int rc;

    bench_printf("\nidmint %s segment allocator benchmark: %d rounds, fast rows %.1f s "
                 "each, paced rows %.1f s each\n(%.0f ids/s); figure = median over the "
                 "rounds, ratio = median of the per-round ratios, spread =\nmin..max of "
                 "the figure\n", idm_version(), g_rounds, secs, 2 * secs, PACE_RATE);
    bench_print_machine();

    char dir[4096], url[4200], url2[4200];
    snprintf(dir, sizeof dir, "%s/idm-bench-seg.XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "idm_bench_seg: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(url, sizeof url, "sqlite://%s/tickets.db", dir);
    snprintf(url2, sizeof url2, "sqlite://%s/slow.db", dir);
    snprintf(g_floor_file, sizeof g_floor_file, "%s/bench.floors", dir);
    if ((rc = idm_store_open(&g_store, url)) != 0)
        die(url, rc);
    {
        slow_store *ss = calloc(1, sizeof *ss);
        if (ss == NULL)
            return 1;
        ss->delay_ns = SLOW_TAKE_NS;
        if ((rc = idm_store_open(&ss->inner, url2)) != 0)
            die(url2, rc);
        if ((rc = idm_store_custom(&g_slow, &slow_ops, ss)) != 0)
            die("idm_store_custom", rc);
    }
    if ((rc = idm_store_create(g_store, "leaf", 1, 0, 1)) != 0)
        die("idm_store_create leaf", rc);

    for (int i = 0; i < 2; i++) {
        g_rec[i] = malloc(REC_CAP * sizeof(int64_t));
        if (g_rec[i] == NULL)
            return 1;
        memset(g_rec[i], 0, REC_CAP * sizeof(int64_t)); /* fault the pages in */
    }

    /* S1 and S2: default options but max_block, so that at full speed the
     * store is hit about once a second; warmed up until the block size
     * stops growing. */
    g_s1 = open_seq(g_store, 0, S_MAX_BLOCK, 0, -1);
    g_s2 = open_seq(g_store, 0, S_MAX_BLOCK, 0, -1);
    g_leaf = peer_leaf_open(leaf_take, g_store, LEAF_STEP);
    if (g_leaf == NULL) {
        fprintf(stderr, "idm_bench_seg: the Leaf peer did not start\n");
        return 1;
    }
    {
        uint64_t n;
        run_1t(K_SEQ, g_s1, 0.3, &g_s1_prev, "S1 warm-up", &n);
        g_s1_ids += n;
        run_2t(K_SEQ, g_s2, 0.3, "S2 warm-up", &n);
        g_s2_ids += n;
        run_1t(K_LEAF, g_leaf, 0.3, &g_leaf_prev, "P1 warm-up", &n);
        g_leaf_prev = -1;
    }

    for (int r = 0; r < g_rounds; r++) {
        bench_printf("round %d of %d...\n", r + 1, g_rounds);
        one_round(g_m[r], secs);
    }

    idm_seq_stats st1, st2;
    idm_seq_stats_get(g_s1, &st1);
    idm_seq_stats_get(g_s2, &st2);
    if (st1.ids != g_s1_ids)
        bench_wrong("S1: the allocator counts %" PRIu64 " ids handed out, %" PRIu64
                    " were drawn", st1.ids, g_s1_ids);
    if (st2.ids != g_s2_ids) /* positions abandoned in a race count as used */
        bench_printf("note: S2: the allocator counts %" PRIu64 " ids handed out, %" PRIu64
                    " were drawn", st2.ids, g_s2_ids);
    char load[64], b1[32], b2[32];
    bench_printf("load average after the rounds: %s\n", bench_loadavg(load, sizeof load));
    bench_printf("S1 allocator: %" PRIu64 " ids, %" PRIu64 " fetches, %" PRIu64
                 " waits (%.2f ms in all), block %s; S2: %" PRIu64 " ids, %" PRIu64
                 " fetches, %" PRIu64 " waits (%.2f ms), block %s\n",
                 st1.ids, st1.fetches, st1.waits, (double)st1.wait_ns / 1e6,
                 bench_si(b1, sizeof b1, (double)st1.block), st2.ids, st2.fetches,
                 st2.waits, (double)st2.wait_ns / 1e6, bench_si(b2, sizeof b2,
                                                                  (double)st2.block));

    char fig[64], rat[128], spr[64], s1[32];
    bench_table_header("idmint segment allocator (BELOW never fails the run)");
    snprintf(fig, sizeof fig, "%.2f ns/op", med(M_F1));
    bench_row("F1", "floor: fetch_add, 1 thread", fig, "the unit of S1",
              spread(spr, sizeof spr, M_F1, false, " ns"), "", "");
    double s1rate = 1e9 / med(M_S1);
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, s1rate));
    snprintf(rat, sizeof rat, "%.2f x F1 (%.2f ns/id)", med_ratio(M_S1, M_F1), med(M_S1));
    bench_row("S1", "idm_seq_next, 1 thread, sqlite", fig, rat,
              spread(spr, sizeof spr, M_S1, true, ""), ">= 100M/s",
              s1rate >= 100e6 ? "PASS" : "BELOW");
    snprintf(fig, sizeof fig, "%.2f ns/op", med(M_F2));
    bench_row("F2", "floor: fetch_add, 2 threads, shared", fig, "the unit of S2",
              spread(spr, sizeof spr, M_F2, false, " ns"), "", "");
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, 1e9 / med(M_S2)));
    snprintf(rat, sizeof rat, "%.2f x F2 (%.2f ns/id)", med_ratio(M_S2, M_F2), med(M_S2));
    bench_row("S2", "idm_seq_next, 2 threads, one allocator", fig, rat,
              spread(spr, sizeof spr, M_S2, true, ""), "", "");

    double r1 = med(M_R1);
    snprintf(fig, sizeof fig, "%.1f per 1M", r1);
    snprintf(rat, sizeof rat, "fixed %lld: %.0f/1M, %.1f x fewer; block %s",
             (long long)PACE_MIN_BLOCK, med(M_R1F), med_ratio(M_R1F, M_R1),
             bench_si(b1, sizeof b1, med(M_R1B)));
    bench_row("R1", "store round trips, 200k ids/s", fig, rat,
              spread(spr, sizeof spr, M_R1, false, ""), "", "");
    /* Steady load: after the first quarter of the run, once the allocator
     * has seen the rate and the store's latency (the first blocks are
     * fetched before either is known). */
    double w1late = max_of(M_W1L);
    snprintf(fig, sizeof fig, "%.2f ms/1M", med(M_W1));
    snprintf(rat, sizeof rat, "%.0f waits steady (%.0f in all, max %.0f); W2 %.0f", w1late,
             med(M_W1N), max_of(M_W1N), med(M_W2N));
    bench_row("W1", "waits, slow store, prefetch 20%", fig, rat,
              spread(spr, sizeof spr, M_W1, false, " ms"), "0 steady",
              w1late == 0 ? "PASS" : "BELOW");
    snprintf(fig, sizeof fig, "%.2f ms/1M", med(M_W2));
    snprintf(rat, sizeof rat, "%.0f waits, %.2f ms each", med(M_W2N), med(M_W2E));
    bench_row("W2", "waits, slow store, no prefetch", fig, rat,
              spread(spr, sizeof spr, M_W2, false, " ms"), "", "");
    {
        double w3late = max_of(M_W3L);
        snprintf(fig, sizeof fig, "%.2f ms/1M", med(M_W3));
        snprintf(rat, sizeof rat, "%.0f waits steady (%.0f in all, max %.0f); W1 %.0f", w3late,
                 med(M_W3N), max_of(M_W3N), med(M_W1N));
        bench_row("W3", "waits, as W1 with a floor file", fig, rat,
                  spread(spr, sizeof spr, M_W3, false, " ms"), "0 steady",
                  w3late == 0 ? "PASS" : "BELOW");
    }

    bench_table_header("C peer (idmint/peer: the peer's ns per id over idmint's, same "
                       "round; > 1: idmint faster)");
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, 1e9 / med(M_P1)));
    snprintf(rat, sizeof rat, "%.2f ns/id; idmint/peer %.2f (vs S1)%s", med(M_P1),
             med_ratio(M_P1, M_S1), g_leaf_errors[0] != 0 ? "; calls failed" : "");
    bench_row("P1", "leaf_segment, 1 thread, sqlite", fig, rat,
              spread(spr, sizeof spr, M_P1, true, ""), "", "");
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, 1e9 / med(M_P2)));
    snprintf(rat, sizeof rat, "%.2f ns/id; idmint/peer %.2f (vs S2)%s", med(M_P2),
             med_ratio(M_P2, M_S2), g_leaf_errors[1] != 0 ? "; calls failed" : "");
    bench_row("P2", "leaf_segment, 2 threads", fig, rat,
              spread(spr, sizeof spr, M_P2, true, ""), "", "");

    if (g_leaf_errors[0] + g_leaf_errors[1] != 0)
        bench_printf("Leaf peer: %" PRIu64 " calls failed at 1 thread, %" PRIu64 " at 2 "
                     "(both segments used up before the load of the next one ended)\n",
                     g_leaf_errors[0], g_leaf_errors[1]);
    peer_leaf_close(g_leaf);
    idm_seq_close(g_s1);
    idm_seq_close(g_s2);
    idm_store_close(g_store);
    idm_store_close(g_slow);
    free(g_rec[0]);
    free(g_rec[1]);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "idm_bench_seg: could not remove %s\n", dir);

    if (bench_wrong_count() != 0) {
        bench_printf("%u correctness check(s) failed (WRONG above): the figures above are "
                     "not valid\n", bench_wrong_count());
        return 2;
    }
    return 0;
}
