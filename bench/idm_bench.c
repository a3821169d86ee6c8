/* SPDX-License-Identifier: MIT */
/*
 * idm_bench: throughput and latency of idmint's Snowflake generator, each
 * figure next to a ratio against a limit or a peer measured in the same
 * round.
 *
 *   1   next(), twitter preset, 1 thread: ids/s / layout ceiling
 *   2   next(), 22 sequence bits, 1 thread: ns per id / ns per clock read
 *   2f  the floor of a lock-free generator: clock read + load + CAS per id
 *   2t  item 2 with 2 threads on one generator (no target)
 *   3   next(), twitter preset, 2 threads on one generator: ids/s / ceiling
 *   4   next_batch(1000), 22 sequence bits: ids/s / rate of storing the
 *       same 1000 uint64 values
 *   5   sonyflake preset, 1 thread: ids/s / ceiling (25,600/s)
 *   P*  the C peers (Twitter's mutex algorithm, Sonyflake's) on the layouts
 *       they use, with idmint/peer throughput ratios
 *
 * All of it runs IDM_BENCH_ROUNDS times (default 3), each measurement for
 * IDM_BENCH_SECONDS of wall time (default 1); the table gives the median
 * figure, the median of the per-round ratios and the range of the figure.
 *
 * Every timed loop checks what it measures: ids from one thread strictly
 * increase, ids of two threads never collide, no run mints more ids than the
 * ticks it spans hold, and ids decode to the node values given and to a time
 * within the run. A failed check prints WRONG and makes the exit status 2.
 *
 * Usage: idm_bench [--ref-out FILE]   (FILE gets figures for the Node.js
 * peers' ratio columns).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <idmint/idmint.h>

#include "bench_util.h"
#include "peers/peers.h"

#define CHUNK 256 /* calls between two reads of the monotonic clock */
#define BATCH 1000
#define TWITTER_EPOCH_MS INT64_C(1288834974657)
#define SONY_EPOCH_MS INT64_C(1409529600000)
#define SEQ22_SPEC "time:41@1ms,worker:1,seq:22"
#define SEQ22_EPOCH "1288834974657"

/* ---------------------------------------------------------------- results */

typedef struct run_result {
    uint64_t count;    /* ids minted */
    uint64_t errors;   /* calls that failed */
    int last_error;    /* the last failure's code */
    uint64_t bad;      /* ids not above the previous one */
    uint64_t first;
    uint64_t last;
    int64_t end_ns;    /* monotonic time the loop stopped */
    size_t recorded;   /* ids stored in rec[] */
} run_result;

static double rate(uint64_t count, int64_t ns)
{
    return ns > 0 ? (double)count * 1e9 / (double)ns : 0.0;
}

/*
 * The timed loop, once per kind of generator so that every call is direct.
 * Runs until the monotonic clock reaches deadline; stores ids into rec while
 * there is room (for the cross-thread uniqueness check).
 */
#define DEFINE_LOOP(NAME, TYPE, NEXT)                                          \
    static void NAME(TYPE *g, int64_t deadline, uint64_t *rec, size_t cap,     \
                     run_result *r)                                            \
    {                                                                          \
        uint64_t last = 0, count = 0, errors = 0, bad = 0, first = 0;          \
        size_t nrec = 0;                                                       \
        int last_error = 0;                                                    \
        int64_t now;                                                           \
        for (;;) {                                                             \
            for (int i = 0; i < CHUNK; i++) {                                  \
                uint64_t id;                                                   \
                int rc = NEXT(g, &id);                                         \
                if (rc != 0) {                                                 \
                    errors++;                                                  \
                    last_error = rc;                                           \
                    continue;                                                  \
                }                                                              \
                if (id <= last && count != 0)                                  \
                    bad++;                                                     \
                if (count == 0)                                                \
                    first = id;                                                \
                last = id;                                                     \
                count++;                                                       \
                if (nrec < cap)                                                \
                    rec[nrec++] = id;                                          \
            }                                                                  \
            now = bench_mono_ns();                                             \
            if (now >= deadline)                                               \
                break;                                                         \
        }                                                                      \
        r->count = count;                                                      \
        r->errors = errors;                                                    \
        r->last_error = last_error;                                            \
        r->bad = bad;                                                          \
        r->first = first;                                                      \
        r->last = last;                                                        \
        r->end_ns = now;                                                       \
        r->recorded = nrec;                                                    \
    }

DEFINE_LOOP(loop_idm, idm_snowflake, idm_snowflake_next)
DEFINE_LOOP(loop_twitter, peer_twitter, peer_twitter_next)
DEFINE_LOOP(loop_sony, peer_sonyflake, peer_sonyflake_next)

/* ------------------------------------------------------------- generators */

/* A generator on spec; guarded: under a lease guard whose deadlines and
 * mark are far away, so every mint pays the guard's checks and none fails. */
static idm_snowflake *open_gen_opt(const char *spec, const char *epoch_text, bool guarded)
{
    idm_layout *l = NULL;
    idm_snowflake *g = NULL;
    int rc = idm_layout_from_spec(&l, spec, epoch_text);
    if (rc != 0) {
        fprintf(stderr, "idm_bench: layout %s: %s (%s)\n", spec,
                idm_strerror(rc), idm_error_detail());
        exit(1);
    }
    idm_snowflake_opts o;
    idm_snowflake_opts_init(&o);
    o.layout = l;
    size_t nf = idm_layout_field_count(l);
    for (size_t i = 0; i < nf; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE) {
            o.node[i] = 1;
            o.node_set |= UINT32_C(1) << i;
        }
    }
    o.guarded = guarded;
    rc = idm_snowflake_open(&g, &o);
    idm_layout_free(l);
    if (rc == 0 && guarded)
        rc = idm_snowflake_guard(g, INT64_MAX, INT64_MAX, INT64_C(253402300799999));
    if (rc != 0) {
        fprintf(stderr, "idm_bench: open %s: %s (%s)\n", spec,
                idm_strerror(rc), idm_error_detail());
        exit(1);
    }
    return g;
}

static idm_snowflake *open_gen(const char *spec, const char *epoch_text)
{
    return open_gen_opt(spec, epoch_text, false);
}

static double layout_ceiling(const idm_layout *l)
{
    return (double)(UINT64_C(1) << idm_layout_seq_bits(l)) * 1000.0 /
           (double)idm_layout_tick_ms(l);
}

/* Check one id of g's: every node field is 1 (as open_gen set them) and its
 * time lies in [lo_ms - tick, hi_ms]. */
static void check_id(const idm_snowflake *g, const char *what, uint64_t id,
                     int64_t lo_ms, int64_t hi_ms)
{
    const idm_layout *l = idm_snowflake_layout(g);
    idm_decoded d;
    int rc = idm_layout_decode(l, id, &d);
    if (rc != 0) {
        bench_wrong("%s: id %" PRIu64 " does not decode: %s", what, id,
                    idm_strerror(rc));
        return;
    }
    size_t nf = idm_layout_field_count(l);
    for (size_t i = 0; i < nf; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE &&
            d.value[i] != 1)
            bench_wrong("%s: id %" PRIu64 " has %s=%" PRIu64 ", want 1", what,
                        id, fi.name, d.value[i]);
    }
    int64_t tick = idm_layout_tick_ms(l);
    if (d.unix_ms < lo_ms - tick || d.unix_ms > hi_ms) {
        idm_snowflake_stats st;
        idm_snowflake_stats_get(g, &st);
        if (st.ahead_mints == 0)
            bench_wrong("%s: id %" PRIu64 " carries time %" PRId64
                        " outside the run [%" PRId64 ", %" PRId64 "]",
                        what, id, (int64_t)d.unix_ms, lo_ms, hi_ms);
    }
}

/* No more ids than the ticks between first and last hold: a generator that
 * beats its layout's ceiling is handing out ids ahead of the clock. */
static void check_ceiling(const idm_snowflake *g, const char *what,
                          uint64_t first, uint64_t last, uint64_t count)
{
    const idm_layout *l = idm_snowflake_layout(g);
    idm_decoded a, b;
    if (idm_layout_decode(l, first, &a) != 0 ||
        idm_layout_decode(l, last, &b) != 0 || b.tick < a.tick) {
        bench_wrong("%s: first/last ids do not decode in order", what);
        return;
    }
    uint64_t room = (b.tick - a.tick + 1) << idm_layout_seq_bits(l);
    if (count > room)
        bench_wrong("%s: %" PRIu64 " ids in %" PRIu64 " ticks that hold %"
                    PRIu64, what, count, b.tick - a.tick + 1, room);
}

static void check_result(const char *what, const run_result *r, bool idm)
{
    if (r->bad != 0)
        bench_wrong("%s: %" PRIu64 " ids were not above the previous one",
                    what, r->bad);
    if (r->count == 0)
        bench_wrong("%s: no id minted (last error %d)", what, r->last_error);
    if (r->errors != 0)
        bench_printf("note: %s: %" PRIu64 " calls failed, last with %s (%d)\n",
                     what, r->errors,
                     idm ? idm_err_name(r->last_error) : "peer error",
                     r->last_error);
}

/* Anything unusual the generator's counters saw during a run. */
static void check_stats(const idm_snowflake *g, const char *what)
{
    idm_snowflake_stats st;
    idm_snowflake_stats_get(g, &st);
    if (st.ahead_mints != 0 || st.refused_exhausted != 0 ||
        st.refused_backwards != 0)
        bench_printf("note: %s: stats ahead_mints=%" PRIu64
                     " refused_exhausted=%" PRIu64 " refused_backwards=%" PRIu64
                     "\n", what, st.ahead_mints, st.refused_exhausted,
                     st.refused_backwards);
}

/* Two strictly increasing lists share no value. */
static uint64_t count_common(const uint64_t *a, size_t na, const uint64_t *b,
                             size_t nb)
{
    size_t i = 0, j = 0;
    uint64_t common = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else {
            common++;
            i++;
            j++;
        }
    }
    return common;
}

/* ---------------------------------------------------------- single thread */

/* Warm up for ~50 ms, then run the timed loop for secs seconds. */
static int64_t run_idm_1t(idm_snowflake *g, double secs, run_result *r)
{
    run_result warm;
    loop_idm(g, bench_mono_ns() + 50000000, NULL, 0, &warm);
    check_result("warm-up", &warm, true);
    int64_t w0 = bench_wall_ms();
    int64_t t0 = bench_mono_ns();
    loop_idm(g, t0 + (int64_t)(secs * 1e9), NULL, 0, r);
    int64_t w1 = bench_wall_ms();
    check_id(g, "first id", r->first, w0, w1);
    check_id(g, "last id", r->last, w0, w1);
    check_ceiling(g, "single thread", r->first, r->last, r->count);
    if (r->first <= warm.last)
        bench_wrong("timed ids do not follow the warm-up's");
    check_stats(g, "single thread");
    return r->end_ns - t0;
}

/* --------------------------------------------------------- two threads */

enum gen_kind { KIND_IDM, KIND_TWITTER };

typedef struct thread_arg {
    enum gen_kind kind;
    void *gen;
    atomic_int *ready;
    atomic_int *go;
    int64_t deadline;
    uint64_t *rec;
    size_t cap;
    run_result r;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    atomic_fetch_add(a->ready, 1);
    while (atomic_load(a->go) == 0) {
    }
    if (a->kind == KIND_IDM)
        loop_idm(a->gen, a->deadline, a->rec, a->cap, &a->r);
    else
        loop_twitter(a->gen, a->deadline, a->rec, a->cap, &a->r);
    return NULL;
}

static uint64_t *g_rec[2]; /* record buffers for the collision check */
static size_t g_rec_cap;

static void alloc_records(size_t cap)
{
    for (int i = 0; i < 2; i++) {
        g_rec[i] = malloc(cap * sizeof(uint64_t));
        if (g_rec[i] == NULL) {
            fprintf(stderr, "idm_bench: out of memory\n");
            exit(1);
        }
        memset(g_rec[i], 0, cap * sizeof(uint64_t)); /* fault the pages in */
    }
    g_rec_cap = cap;
}

static void free_records(void)
{
    free(g_rec[0]);
    free(g_rec[1]);
}

/* Runs two threads on gen for secs; returns the elapsed ns (start to the
 * later thread's stop) and the combined count. With record true, checks that
 * the two threads' ids never collide. */
static int64_t run_2t(enum gen_kind kind, void *gen, double secs, bool record,
                      const char *what, uint64_t *count)
{
    thread_arg a[2];
    pthread_t th[2];
    atomic_int ready = 0, go = 0;
    size_t rec_cap = record ? g_rec_cap : 0;
    uint64_t *rec[2] = {record ? g_rec[0] : NULL, record ? g_rec[1] : NULL};
    for (int i = 0; i < 2; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].kind = kind;
        a[i].gen = gen;
        a[i].ready = &ready;
        a[i].go = &go;
        a[i].rec = rec[i];
        a[i].cap = rec_cap;
    }
    for (int i = 0; i < 2; i++) {
        int rc = pthread_create(&th[i], NULL, thread_main, &a[i]);
        if (rc != 0) {
            fprintf(stderr, "idm_bench: pthread_create: %s\n", strerror(rc));
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
    int64_t end = a[0].r.end_ns > a[1].r.end_ns ? a[0].r.end_ns : a[1].r.end_ns;
    char buf[96];
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof buf, "%s, thread %d", what, i + 1);
        check_result(buf, &a[i].r, kind == KIND_IDM);
    }
    if (rec_cap > 0) {
        uint64_t common = count_common(rec[0], a[0].r.recorded, rec[1],
                                       a[1].r.recorded);
        if (common != 0)
            bench_wrong("%s: %" PRIu64 " ids minted by both threads", what,
                        common);
        for (int i = 0; i < 2; i++)
            if (a[i].r.recorded < a[i].r.count)
                bench_printf("note: %s: only %zu of thread %d's %" PRIu64
                             " ids checked for collisions\n", what,
                             a[i].r.recorded, i + 1, a[i].r.count);
    }
    *count = a[0].r.count + a[1].r.count;
    if (kind == KIND_IDM && a[0].r.count != 0 && a[1].r.count != 0) {
        uint64_t lo = a[0].r.first < a[1].r.first ? a[0].r.first : a[1].r.first;
        uint64_t hi = a[0].r.last > a[1].r.last ? a[0].r.last : a[1].r.last;
        check_ceiling(gen, what, lo, hi, *count);
    }
    return end - t0;
}

/* ------------------------------------------------------------ clock read */


/*
 * The floor for a lock-free generator: per id one wall-clock read, one load
 * and one compare-and-swap of a state word (uncontended), nothing else.
 */
static int64_t run_clock_cas(double secs, uint64_t *count)
{
    struct timespec ts;
    static _Atomic uint64_t word;
    uint64_t n = 0;
    int64_t t0 = bench_mono_ns(), deadline = t0 + (int64_t)(secs * 1e9), now;
    for (;;) {
        for (int i = 0; i < CHUNK; i++) {
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t old = atomic_load_explicit(&word, memory_order_relaxed);
            uint64_t t = (uint64_t)ts.tv_nsec;
            uint64_t next = old + 1 > t ? old + 1 : t;
            while (!atomic_compare_exchange_weak_explicit(
                &word, &old, next, memory_order_relaxed, memory_order_relaxed))
                next = old + 1 > t ? old + 1 : t;
        }
        n += CHUNK;
        now = bench_mono_ns();
        if (now >= deadline)
            break;
    }
    *count = n;
    return now - t0;
}

/* ------------------------------------------------------------ batches */

static int check_batch_full(const uint64_t *ids, size_t n, uint64_t prev)
{
    if (ids[0] <= prev)
        return 0;
    for (size_t i = 1; i < n; i++)
        if (ids[i] <= ids[i - 1])
            return 0;
    return 1;
}

static int64_t run_batch(idm_snowflake *g, double secs, uint64_t *count)
{
    static uint64_t ids[BATCH];
    uint64_t prev = 0, n = 0, errors = 0, batches = 0;
    int last_error = 0;
    /* Untimed: full check of 2000 batches (also the warm-up). */
    for (int b = 0; b < 2000; b++) {
        int rc = idm_snowflake_next_batch(g, ids, BATCH);
        if (rc != 0) {
            errors++;
            last_error = rc;
            continue;
        }
        if (!check_batch_full(ids, BATCH, prev)) {
            bench_wrong("next_batch: ids not strictly increasing (batch %d)", b);
            break;
        }
        prev = ids[BATCH - 1];
        n += BATCH;
    }
    check_stats(g, "next_batch warm-up");
    int64_t w0 = bench_wall_ms();
    int64_t t0 = bench_mono_ns(), deadline = t0 + (int64_t)(secs * 1e9), now;
    uint64_t bad = 0;
    n = 0;
    for (;;) {
        for (int i = 0; i < 16; i++) {
            int rc = idm_snowflake_next_batch(g, ids, BATCH);
            if (rc != 0) {
                errors++;
                last_error = rc;
                continue;
            }
            /* Cheap check on every batch, a full one on every 64th. */
            if (ids[0] <= prev || ids[BATCH - 1] <= ids[0])
                bad++;
            else if ((batches & 63) == 0 && !check_batch_full(ids, BATCH, prev))
                bad++;
            prev = ids[BATCH - 1];
            batches++;
            n += BATCH;
        }
        now = bench_mono_ns();
        if (now >= deadline)
            break;
    }
    int64_t w1 = bench_wall_ms();
    check_id(g, "next_batch last id", prev, w0, w1);
    if (bad != 0)
        bench_wrong("next_batch: %" PRIu64 " batches out of order", bad);
    if (errors != 0)
        bench_printf("note: next_batch: %" PRIu64 " calls failed, last with %s\n",
                     errors, idm_err_name(last_error));
    *count = n;
    return now - t0;
}

/* Storing the same number of distinct uint64 values: the floor for a batch. */
static int64_t run_store(double secs, uint64_t *count)
{
    static uint64_t buf[BATCH];
    uint64_t base = 1, n = 0;
    int64_t t0 = bench_mono_ns(), deadline = t0 + (int64_t)(secs * 1e9), now;
    for (;;) {
        for (int i = 0; i < 16; i++) {
            for (size_t k = 0; k < BATCH; k++)
                buf[k] = base + k;
            BENCH_CLOBBER(buf);
            base += BATCH;
            n += BATCH;
        }
        now = bench_mono_ns();
        if (now >= deadline)
            break;
    }
    *count = n;
    return now - t0;
}

/* ----------------------------------------------------------------- rounds */

enum metric {
    M_TW1,     /* item 1: ids/s */
    M_TW2,     /* item 3: ids/s */
    M_CLK,     /* ns per bare clock read */
    M_FLOOR,   /* ns per clock read + load + CAS */
    M_S22,     /* item 2: ns/id */
    M_S22G,    /* item 2g: ns/id under a lease guard */
    M_S22_2T,  /* item 2t: ns/id */
    M_BATCH,   /* item 4: ids/s */
    M_STORE,   /* ids/s of storing 1000 u64 */
    M_SF,      /* item 5: ids/s */
    M_P1,      /* peers: ids/s or ns/id as in the table */
    M_P2,
    M_P3,
    M_P4,
    M_P5,
    M_COUNT
};

static double g_m[BENCH_ROUNDS_MAX][M_COUNT];
static int g_rounds;

/* Median over the rounds of metric a, divided by metric b of the same round
 * (b < 0: by the constant div). */
static double med_ratio(int a, int b, double div)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = g_m[r][a] / (b >= 0 ? g_m[r][b] : div);
    return bench_median(v, g_rounds);
}

static double med(int a)
{
    return med_ratio(a, -1, 1.0);
}

static void minmax(int a, double *lo, double *hi)
{
    *lo = *hi = g_m[0][a];
    for (int r = 1; r < g_rounds; r++) {
        if (g_m[r][a] < *lo)
            *lo = g_m[r][a];
        if (g_m[r][a] > *hi)
            *hi = g_m[r][a];
    }
}

/* "4.05M..4.09M" or "20.1..22.3" */
static const char *spread(char *buf, size_t len, int a, bool si)
{
    double lo, hi;
    char x[32], y[32];
    minmax(a, &lo, &hi);
    if (g_rounds == 1)
        snprintf(buf, len, "-");
    else if (si)
        snprintf(buf, len, "%s..%s", bench_si(x, sizeof x, lo),
                 bench_si(y, sizeof y, hi));
    else
        snprintf(buf, len, "%.1f..%.1f", lo, hi);
    return buf;
}

static double g_tw_ceiling, g_sf_ceiling;

static void one_round(double *m, double secs)
{
    run_result r;
    uint64_t c, c2;
    int64_t ns, t0;

    /* 1 and 3: twitter, one thread, then two on the same generator */
    idm_snowflake *g = open_gen("twitter", NULL);
    g_tw_ceiling = layout_ceiling(idm_snowflake_layout(g));
    ns = run_idm_1t(g, secs, &r);
    check_result("twitter 1 thread", &r, true);
    m[M_TW1] = rate(r.count, ns);
    ns = run_2t(KIND_IDM, g, secs, true, "twitter 2 threads", &c);
    check_stats(g, "twitter 2 threads");
    m[M_TW2] = rate(c, ns);
    idm_snowflake_close(g);

    /* 2: 22 sequence bits, with the clock read and the CAS floor around it */
    ns = bench_run_clock_reads(secs / 2, &c);
    m[M_CLK] = (double)ns / (double)c;
    g = open_gen(SEQ22_SPEC, SEQ22_EPOCH);
    ns = run_idm_1t(g, secs, &r);
    check_result("seq22 1 thread", &r, true);
    m[M_S22] = (double)ns / (double)r.count;
    idm_snowflake_close(g);
    ns = run_clock_cas(secs / 2, &c);
    m[M_FLOOR] = (double)ns / (double)c;
    g = open_gen_opt(SEQ22_SPEC, SEQ22_EPOCH, true);
    ns = run_idm_1t(g, secs, &r);
    check_result("seq22 guarded 1 thread", &r, true);
    m[M_S22G] = (double)ns / (double)r.count;
    idm_snowflake_close(g);

    /* 2t: the same, two threads */
    g = open_gen(SEQ22_SPEC, SEQ22_EPOCH);
    ns = run_2t(KIND_IDM, g, secs, false, "seq22 2 threads", &c);
    check_stats(g, "seq22 2 threads");
    m[M_S22_2T] = (double)ns / (double)c;
    idm_snowflake_close(g);

    /* 4: batches of 1000, and plain stores of 1000 values */
    g = open_gen(SEQ22_SPEC, SEQ22_EPOCH);
    ns = run_batch(g, secs, &c);
    m[M_BATCH] = rate(c, ns);
    idm_snowflake_close(g);
    ns = run_store(secs / 2, &c);
    m[M_STORE] = rate(c, ns);

    /* 5: sonyflake */
    g = open_gen("sonyflake", NULL);
    g_sf_ceiling = layout_ceiling(idm_snowflake_layout(g));
    ns = run_idm_1t(g, secs, &r);
    check_result("sonyflake 1 thread", &r, true);
    m[M_SF] = rate(r.count, ns);
    idm_snowflake_close(g);

    /* Peers: Twitter's algorithm on twitter (datacenter 1, worker 1)... */
    peer_twitter pt;
    peer_twitter_init(&pt, TWITTER_EPOCH_MS, (1u << 5) | 1u, 10, 12);
    loop_twitter(&pt, bench_mono_ns() + 50000000, NULL, 0, &r);
    t0 = bench_mono_ns();
    loop_twitter(&pt, t0 + (int64_t)(secs * 1e9), NULL, 0, &r);
    check_result("twitter_mutex 1 thread", &r, false);
    m[M_P1] = rate(r.count, r.end_ns - t0);
    ns = run_2t(KIND_TWITTER, &pt, secs, true, "twitter_mutex 2 threads", &c2);
    m[M_P2] = rate(c2, ns);
    peer_twitter_destroy(&pt);

    /* ...and on the 22-bit layout (worker 1), for the cost of a call */
    peer_twitter_init(&pt, TWITTER_EPOCH_MS, 1, 1, 22);
    loop_twitter(&pt, bench_mono_ns() + 50000000, NULL, 0, &r);
    t0 = bench_mono_ns();
    loop_twitter(&pt, t0 + (int64_t)(secs * 1e9), NULL, 0, &r);
    check_result("twitter_mutex seq22 1 thread", &r, false);
    m[M_P3] = (double)(r.end_ns - t0) / (double)r.count;
    ns = run_2t(KIND_TWITTER, &pt, secs, false, "twitter_mutex seq22 2 threads",
                &c2);
    m[M_P4] = (double)ns / (double)c2;
    peer_twitter_destroy(&pt);

    /* Sonyflake's algorithm on its own layout */
    peer_sonyflake ps;
    peer_sonyflake_init(&ps, SONY_EPOCH_MS, 1);
    loop_sony(&ps, bench_mono_ns() + 50000000, NULL, 0, &r);
    t0 = bench_mono_ns();
    loop_sony(&ps, t0 + (int64_t)(secs * 1e9), NULL, 0, &r);
    check_result("sonyflake_mutex 1 thread", &r, false);
    m[M_P5] = rate(r.count, r.end_ns - t0);
    peer_sonyflake_destroy(&ps);
}

/* ------------------------------------------------------------------ main */

static const char *status_ge(double v, double target)
{
    return v >= target ? "PASS" : "BELOW";
}

static const char *status_le(double v, double target)
{
    return v <= target ? "PASS" : "BELOW";
}

int main(int argc, char **argv)
{
    const char *ref_out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ref-out") == 0 && i + 1 < argc)
            ref_out = argv[++i];
        else {
            fprintf(stderr, "usage: idm_bench [--ref-out FILE]\n");
            return 1;
        }
    }
    double secs = bench_seconds();
    g_rounds = bench_rounds();
    char fig[64], rat[96], spr[64], s1[32], s2[32];

    bench_printf("idmint %s benchmark: %d rounds, each measurement %.1f s of "
                 "wall time (CLOCK_MONOTONIC);\nfigure = median over the "
                 "rounds, ratio = median of the per-round ratios, spread = "
                 "min..max of the figure\n", idm_version(), g_rounds, secs);
    bench_print_machine();

    /* Room for every id one thread could mint at the twitter ceiling. */
    alloc_records((size_t)(4096000.0 * (secs + 0.5)) + 65536);
    for (int r = 0; r < g_rounds; r++) {
        bench_printf("round %d of %d...\n", r + 1, g_rounds);
        one_round(g_m[r], secs);
    }
    free_records();
    char load[64];
    bench_printf("load average after the rounds: %s\n",
                 bench_loadavg(load, sizeof load));

    bench_table_header("idmint (targets from the acceptance list; "
                       "BELOW never fails the run)");
    double frac1 = med_ratio(M_TW1, -1, g_tw_ceiling);
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, med(M_TW1)));
    snprintf(rat, sizeof rat, "%.3f of ceiling %s/s", frac1,
             bench_si(s2, sizeof s2, g_tw_ceiling));
    bench_row("1", "next, twitter, 1 thread", fig, rat,
              spread(spr, sizeof spr, M_TW1, true), ">= 0.97",
              status_ge(frac1, 0.97));

    double s22 = med(M_S22);
    snprintf(fig, sizeof fig, "%.1f ns/id", s22);
    snprintf(rat, sizeof rat, "%.2f x clock read (%.1f ns)",
             med_ratio(M_S22, M_CLK, 0), med(M_CLK));
    bench_row("2", "next, seq22, 1 thread", fig, rat,
              spread(spr, sizeof spr, M_S22, false), "<= 25 ns",
              status_le(s22, 25.0));
    snprintf(fig, sizeof fig, "%.1f ns/id", med(M_FLOOR));
    snprintf(rat, sizeof rat, "item 2 = %.2f x this floor",
             med_ratio(M_S22, M_FLOOR, 0));
    bench_row("2f", "floor: clock read + load + CAS", fig, rat,
              spread(spr, sizeof spr, M_FLOOR, false), "", "");
    {
        double v[BENCH_ROUNDS_MAX], cost;
        for (int i = 0; i < g_rounds; i++)
            v[i] = g_m[i][M_S22G] - g_m[i][M_S22];
        cost = bench_median(v, g_rounds);
        snprintf(fig, sizeof fig, "%.1f ns/id", med(M_S22G));
        snprintf(rat, sizeof rat, "guard costs %+.1f ns over item 2", cost);
        bench_row("2g", "next, seq22, under a lease guard", fig, rat,
                  spread(spr, sizeof spr, M_S22G, false), "<= +5 ns", status_le(cost, 5.0));
    }
    snprintf(fig, sizeof fig, "%.1f ns/id", med(M_S22_2T));
    snprintf(rat, sizeof rat, "%.2f x item 2 (1 thread)",
             med_ratio(M_S22_2T, M_S22, 0));
    bench_row("2t", "next, seq22, 2 threads, one generator", fig, rat,
              spread(spr, sizeof spr, M_S22_2T, false), "", "");

    double frac3 = med_ratio(M_TW2, -1, g_tw_ceiling);
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, med(M_TW2)));
    snprintf(rat, sizeof rat, "%.3f of ceiling %s/s", frac3,
             bench_si(s2, sizeof s2, g_tw_ceiling));
    bench_row("3", "next, twitter, 2 threads, one generator", fig, rat,
              spread(spr, sizeof spr, M_TW2, true), ">= 0.95",
              status_ge(frac3, 0.95));

    double batch = med(M_BATCH);
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, batch));
    snprintf(rat, sizeof rat, "%.3f of storing 1000 u64 (%s/s)",
             med_ratio(M_BATCH, M_STORE, 0),
             bench_si(s2, sizeof s2, med(M_STORE)));
    bench_row("4", "next_batch(1000), seq22", fig, rat,
              spread(spr, sizeof spr, M_BATCH, true), ">= 200M/s",
              status_ge(batch, 200e6));

    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, med(M_SF)));
    snprintf(rat, sizeof rat, "%.3f of ceiling %s/s",
             med_ratio(M_SF, -1, g_sf_ceiling),
             bench_si(s2, sizeof s2, g_sf_ceiling));
    bench_row("5", "next, sonyflake, 1 thread", fig, rat,
              spread(spr, sizeof spr, M_SF, true), "", "");

    bench_table_header("C peers (idmint/peer: idmint's ids/s over the peer's "
                       "on the same layout, same round; > 1: idmint faster)");
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, med(M_P1)));
    snprintf(rat, sizeof rat, "%.3f of ceiling; idmint/peer %.3f",
             med_ratio(M_P1, -1, g_tw_ceiling), med_ratio(M_TW1, M_P1, 0));
    bench_row("P1", "twitter_mutex, twitter, 1 thread", fig, rat,
              spread(spr, sizeof spr, M_P1, true), "", "");
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, med(M_P2)));
    snprintf(rat, sizeof rat, "%.3f of ceiling; idmint/peer %.3f",
             med_ratio(M_P2, -1, g_tw_ceiling), med_ratio(M_TW2, M_P2, 0));
    bench_row("P2", "twitter_mutex, twitter, 2 threads", fig, rat,
              spread(spr, sizeof spr, M_P2, true), "", "");
    snprintf(fig, sizeof fig, "%.1f ns/id", med(M_P3));
    snprintf(rat, sizeof rat, "idmint/peer %.2f (vs item 2)",
             med_ratio(M_P3, M_S22, 0));
    bench_row("P3", "twitter_mutex, seq22, 1 thread", fig, rat,
              spread(spr, sizeof spr, M_P3, false), "", "");
    snprintf(fig, sizeof fig, "%.1f ns/id", med(M_P4));
    snprintf(rat, sizeof rat, "idmint/peer %.2f (vs item 2t)",
             med_ratio(M_P4, M_S22_2T, 0));
    bench_row("P4", "twitter_mutex, seq22, 2 threads", fig, rat,
              spread(spr, sizeof spr, M_P4, false), "", "");
    snprintf(fig, sizeof fig, "%s ids/s", bench_si(s1, sizeof s1, med(M_P5)));
    snprintf(rat, sizeof rat, "%.3f of ceiling; idmint/peer %.3f",
             med_ratio(M_P5, -1, g_sf_ceiling), med_ratio(M_SF, M_P5, 0));
    bench_row("P5", "sonyflake_mutex, sonyflake, 1 thread", fig, rat,
              spread(spr, sizeof spr, M_P5, true), "", "");

    if (ref_out != NULL) {
        FILE *f = fopen(ref_out, "w");
        if (f == NULL) {
            fprintf(stderr, "idm_bench: %s: %s\n", ref_out, strerror(errno));
        } else {
            fprintf(f, "twitter_ids_per_s %.1f\nseq22_ns_per_id %.3f\n"
                       "twitter_ceiling %.1f\n", med(M_TW1), s22, g_tw_ceiling);
            fclose(f);
        }
    }
    if (bench_wrong_count() != 0) {
        bench_printf("\nidm_bench: %u correctness check(s) FAILED: the figures "
                     "above are not valid\n", bench_wrong_count());
        return 2;
    }
    bench_printf("\ncorrectness checks passed: ids strictly increase per "
                 "thread, two threads never mint the same id,\nno run beats "
                 "its layout's ceiling, ids decode to the node values and "
                 "times set\n");
    return 0;
}
