/* SPDX-License-Identifier: MIT */
/*
 * idm_bench_threads: how idmint's generators scale with threads. For each
 * generator and mode, the total ids/s of 1, 2, 4 and 8 threads minting at
 * once, each figure as a ratio to the same mode's 1-thread figure of the
 * same round.
 *
 *   T1  UUIDv7 shared: idm_uuid7_next, all threads on one generator
 *   T2  UUIDv7 per-thread: idm_uuid7_next_local on one generator
 *   T3  ULID shared: idm_ulid_next, one monotonic generator
 *   T4  ULID per-thread: idm_ulid_next_local, one monotonic generator
 *   T5  Snowflake shared: idm_snowflake_next on one generator, layout
 *       time:41@1ms,worker:1,seq:21 (2,097,152 ids a tick: never exhausted
 *       here, so the figure is the generator's, not the layout's ceiling)
 *   T6  Snowflake per-thread: idm_snowflake_next_local, the same layout,
 *       local_block 0 (auto)
 *   T7  UUIDv4: idm_uuid4(NULL, ...), no shared state at all: what the
 *       machine allows (the scaling reference)
 *
 * Targets (BELOW never fails the run): the per-thread modes (T2, T4, T6)
 * >= 1.7 x their 1-thread figure at 2 threads; the shared modes (T1, T3,
 * T5) >= 1.0 x at 2, 4 and 8 threads (never below one thread alone). Each
 * round also measures the physical limit of the shared modes: the time a
 * cache line takes to move between two cores, against one thread's time
 * per id (line_move_ns). With
 * fewer cores than threads the 4- and 8-thread rows are oversubscribed: the
 * total cannot grow past the cores, and a shared mode shows whether it
 * collapses when a thread is descheduled at the wrong moment.
 *
 * Rounds and medians as in idm_bench: IDM_BENCH_ROUNDS rounds (default 3),
 * every measurement IDM_BENCH_SECONDS of wall time (default 1), interleaved
 * (each round measures every mode at every thread count, the thread counts
 * in alternating order); the table gives the median figure, the median of
 * the per-round ratios and the range of the figure. The threads of a
 * measurement are created first and start together at a barrier; each mints
 * until the deadline, counting its ids; the total is the ids of all threads
 * over the time from the barrier to the last thread's stop.
 *
 * Checks. Every timed loop checks that each thread's ids strictly increase
 * (not for UUIDv4). Before the rounds a short check run (8 threads, and 8
 * threads mixing the shared and the per-thread call on one generator, each
 * thread yielding every CHUNK ids so that they interleave on any number of
 * cores) records ids and checks: none repeats within a generator, each
 * thread's increase, UUID version and variant bits, times within the run,
 * the Snowflake worker field. A failed check prints WRONG and makes the exit
 * status 2: a fast wrong result is never a figure.
 *
 * Usage: idm_bench_threads
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <idmint/idmint.h>

#include "bench_util.h"

#define CHUNK 256               /* calls between two reads of the clock */
#define NTHREADS 4              /* thread counts measured: */
static const int g_threads[NTHREADS] = {1, 2, 4, 8};
#define MAX_THREADS 8
#define WARMUP_NS INT64_C(50000000)
#define CHECK_NS INT64_C(100000000)  /* each check run, at most */
#define CHECK_CAP 131072        /* ids recorded per thread in a check run */
#define SF_SPEC "time:41@1ms,worker:1,seq:21"
#define SF_EPOCH "1288834974657"
#define TARGET_LOCAL 1.7        /* per-thread modes, 2 threads */
#define TARGET_SHARED 1.0       /* shared modes, 2, 4 and 8 threads */

/* ------------------------------------------------------------- the modes */

enum gkind { G_UUID7, G_ULID, G_SNOW, G_UUID4 };
enum mclass { C_SHARED, C_LOCAL, C_REF };

/* An id as the loops keep it: 128-bit ids as two big-endian halves, a
 * Snowflake id in lo, so that one comparison orders both. */
typedef struct pair {
    uint64_t hi, lo;
} pair;

typedef struct worker worker;
typedef void (*loop_fn)(void *gen, worker *w);

typedef struct mode {
    const char *item;
    const char *name;
    const char *call;
    enum gkind kind;
    enum mclass cls;
    loop_fn loop;
} mode;

/* One thread of a measurement: what it runs, then what it saw. */
struct worker {
    loop_fn loop;
    void *gen;
    pthread_barrier_t *bar;
    const int64_t *deadline;     /* read after the barrier */
    bool ordered;                /* check that ids increase */
    bool yield;                  /* sched_yield every CHUNK ids (checks) */
    pair *rec;                   /* record up to cap ids (checks), or NULL */
    size_t cap;
    /* results */
    size_t nrec;
    uint64_t count;
    uint64_t errors;
    int last_error;
    uint64_t bad;                /* ids not above the thread's previous */
    int64_t end_ns;
} __attribute__((aligned(64)));

static uint64_t be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

static inline int uuid4_next(void *gen, idm_uuid *u)
{
    (void)gen;
    return idm_uuid4(NULL, u);
}

/*
 * The loop, once per call so that every call is direct: mint until the
 * monotonic clock (read every CHUNK calls) reaches the deadline, or until
 * rec is full when recording. TO_PAIR turns the id into a pair.
 */
#define DEFINE_LOOP(NAME, GEN_T, ID_T, CALL, TO_PAIR)                          \
    static void NAME(void *gen, worker *w)                                     \
    {                                                                          \
        GEN_T *g = gen;                                                        \
        const int64_t deadline = *w->deadline;                                 \
        const bool ordered = w->ordered;                                       \
        pair *rec = w->rec;                                                    \
        size_t nrec = 0, cap = w->cap;                                         \
        uint64_t count = 0, errors = 0, bad = 0;                               \
        pair prev = {0, 0};                                                    \
        int last_error = 0;                                                    \
        int64_t now;                                                           \
        for (;;) {                                                             \
            for (int i = 0; i < CHUNK; i++) {                                  \
                ID_T id;                                                       \
                int rc = CALL(g, &id);                                         \
                if (rc != 0) {                                                 \
                    errors++;                                                  \
                    last_error = rc;                                           \
                    continue;                                                  \
                }                                                              \
                pair p = TO_PAIR(id);                                          \
                if (ordered && count != 0 &&                                   \
                    !(p.hi > prev.hi || (p.hi == prev.hi && p.lo > prev.lo)))  \
                    bad++;                                                     \
                prev = p;                                                      \
                count++;                                                       \
                if (rec != NULL && nrec < cap)                                 \
                    rec[nrec++] = p;                                           \
            }                                                                  \
            BENCH_CLOBBER(&prev);                                              \
            now = bench_mono_ns();                                             \
            if (now >= deadline || (rec != NULL && nrec >= cap))               \
                break;                                                         \
            if (w->yield)                                                      \
                sched_yield();                                                 \
        }                                                                      \
        w->nrec = nrec;                                                        \
        w->count = count;                                                      \
        w->errors = errors;                                                    \
        w->last_error = last_error;                                            \
        w->bad = bad;                                                          \
        w->end_ns = now;                                                       \
    }

#define PAIR_UUID(u) ((pair){be64((u).b), be64((u).b + 8)})
#define PAIR_U64(x) ((pair){0, (x)})

DEFINE_LOOP(loop_u7, idm_uuid7_gen, idm_uuid, idm_uuid7_next, PAIR_UUID)
DEFINE_LOOP(loop_u7l, idm_uuid7_gen, idm_uuid, idm_uuid7_next_local, PAIR_UUID)
DEFINE_LOOP(loop_ul, idm_ulid_gen, idm_ulid, idm_ulid_next, PAIR_UUID)
DEFINE_LOOP(loop_ull, idm_ulid_gen, idm_ulid, idm_ulid_next_local, PAIR_UUID)
DEFINE_LOOP(loop_sf, idm_snowflake, uint64_t, idm_snowflake_next, PAIR_U64)
DEFINE_LOOP(loop_sfl, idm_snowflake, uint64_t, idm_snowflake_next_local, PAIR_U64)
DEFINE_LOOP(loop_u4, void, idm_uuid, uuid4_next, PAIR_UUID)

#define NMODES 7
static const mode g_modes[NMODES] = {
    {"T1", "UUIDv7 shared", "idm_uuid7_next", G_UUID7, C_SHARED, loop_u7},
    {"T2", "UUIDv7 per-thread", "idm_uuid7_next_local", G_UUID7, C_LOCAL, loop_u7l},
    {"T3", "ULID shared", "idm_ulid_next", G_ULID, C_SHARED, loop_ul},
    {"T4", "ULID per-thread", "idm_ulid_next_local", G_ULID, C_LOCAL, loop_ull},
    {"T5", "Snowflake shared", "idm_snowflake_next", G_SNOW, C_SHARED, loop_sf},
    {"T6", "Snowflake per-thread", "idm_snowflake_next_local", G_SNOW, C_LOCAL, loop_sfl},
    {"T7", "UUIDv4", "idm_uuid4", G_UUID4, C_REF, loop_u4},
};

/* ------------------------------------------------------------ generators */

static void die_rc(const char *what, int rc)
{
    fprintf(stderr, "idm_bench_threads: %s: %s (%s)\n", what, idm_strerror(rc),
            idm_error_detail());
    exit(1);
}

static void *gen_open(enum gkind k)
{
    int rc;
    switch (k) {
    case G_UUID7: {
        idm_uuid7_gen *g = NULL;
        if ((rc = idm_uuid7_gen_new(&g, NULL, NULL)) != 0)
            die_rc("idm_uuid7_gen_new", rc);
        return g;
    }
    case G_ULID: {
        idm_ulid_gen *g = NULL;
        if ((rc = idm_ulid_gen_new(&g, NULL, NULL, true)) != 0)
            die_rc("idm_ulid_gen_new", rc);
        return g;
    }
    case G_SNOW: {
        idm_layout *l = NULL;
        idm_snowflake *g = NULL;
        if ((rc = idm_layout_from_spec(&l, SF_SPEC, SF_EPOCH)) != 0)
            die_rc("layout " SF_SPEC, rc);
        idm_snowflake_opts o;
        idm_snowflake_opts_init(&o);
        o.layout = l;
        if ((rc = idm_snowflake_opts_node(&o, "worker", 1)) != 0)
            die_rc("worker 1", rc);
        rc = idm_snowflake_open(&g, &o);
        idm_layout_free(l);
        if (rc != 0)
            die_rc("idm_snowflake_open " SF_SPEC, rc);
        return g;
    }
    case G_UUID4:
        break;
    }
    return NULL;
}

static void gen_close(enum gkind k, void *g)
{
    switch (k) {
    case G_UUID7:
        idm_uuid7_gen_free(g);
        break;
    case G_ULID:
        idm_ulid_gen_free(g);
        break;
    case G_SNOW:
        idm_snowflake_close(g);
        break;
    case G_UUID4:
        break;
    }
}

/* Anything unusual a Snowflake generator's counters saw. */
static void note_stats(enum gkind k, void *g, const char *what)
{
    if (k != G_SNOW)
        return;
    idm_snowflake_stats st;
    idm_snowflake_stats_get(g, &st);
    if (st.ahead_mints != 0 || st.refused_exhausted != 0 ||
        st.refused_backwards != 0 || st.waits != 0)
        bench_printf("note: %s: stats ahead_mints=%" PRIu64 " refused_exhausted=%"
                     PRIu64 " refused_backwards=%" PRIu64 " waits=%" PRIu64 "\n",
                     what, st.ahead_mints, st.refused_exhausted,
                     st.refused_backwards, st.waits);
}

/* ------------------------------------------------------------ a run */

static void *thread_main(void *p)
{
    worker *w = p;
    pthread_barrier_wait(w->bar);
    w->loop(w->gen, w);
    return NULL;
}

/*
 * Run n threads (loops[i] for thread i) on gen, started together at a
 * barrier, for ns at most. Returns the ns from the barrier to the last
 * thread's stop; w[0..n-1] get what each thread saw.
 */
static int64_t run_threads(int n, loop_fn const *loops, void *gen, int64_t ns,
                           bool ordered, bool check, pair *const *rec,
                           worker *w)
{
    pthread_t th[MAX_THREADS];
    pthread_barrier_t bar;
    int64_t deadline = 0;
    int rc;
    if ((rc = pthread_barrier_init(&bar, NULL, (unsigned)n + 1)) != 0) {
        fprintf(stderr, "idm_bench_threads: pthread_barrier_init: %s\n",
                strerror(rc));
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].loop = loops[i];
        w[i].gen = gen;
        w[i].bar = &bar;
        w[i].deadline = &deadline;
        w[i].ordered = ordered;
        w[i].yield = check;
        w[i].rec = check ? rec[i] : NULL;
        w[i].cap = check ? CHECK_CAP : 0;
        if ((rc = pthread_create(&th[i], NULL, thread_main, &w[i])) != 0) {
            fprintf(stderr, "idm_bench_threads: pthread_create: %s\n",
                    strerror(rc));
            exit(1);
        }
    }
    int64_t t0 = bench_mono_ns();
    deadline = t0 + ns;
    pthread_barrier_wait(&bar); /* the threads read deadline after this */
    int64_t end = t0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (w[i].end_ns > end)
            end = w[i].end_ns;
    }
    pthread_barrier_destroy(&bar);
    return end - t0;
}

/* What every run checks: ids came, calls failed (noted), order held. */
static void check_workers(const char *what, int n, const worker *w)
{
    for (int i = 0; i < n; i++) {
        if (w[i].count == 0)
            bench_wrong("%s, thread %d: no id minted (last error %s)", what,
                        i + 1, idm_err_name(w[i].last_error));
        if (w[i].bad != 0)
            bench_wrong("%s, thread %d: %" PRIu64 " ids were not above the "
                        "thread's previous one", what, i + 1, w[i].bad);
        if (w[i].errors != 0)
            bench_printf("note: %s, thread %d: %" PRIu64 " calls failed, last "
                         "with %s (%d)\n", what, i + 1, w[i].errors,
                         idm_err_name(w[i].last_error), w[i].last_error);
    }
}

/* ------------------------------------------------------------ check runs */

static pair *g_rec[MAX_THREADS];
static pair *g_all;

static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The millisecond of a recorded id, and whether its form is right. */
static bool id_form(enum gkind k, const idm_layout *l, unsigned worker_ix,
                    const pair *p, int64_t *ms, char *why, size_t len)
{
    uint8_t b[16];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(p->hi >> (56 - 8 * i));
        b[8 + i] = (uint8_t)(p->lo >> (56 - 8 * i));
    }
    if (k == G_UUID7 || k == G_UUID4) {
        idm_uuid u;
        memcpy(u.b, b, 16);
        int want = k == G_UUID7 ? 7 : 4;
        if (idm_uuid_version(&u) != want ||
            idm_uuid_variant(&u) != IDM_UUID_VARIANT_RFC) {
            snprintf(why, len, "version %d variant %d, want %d and %d",
                     idm_uuid_version(&u), idm_uuid_variant(&u), want,
                     IDM_UUID_VARIANT_RFC);
            return false;
        }
        *ms = 0;
        if (k == G_UUID7 && idm_uuid7_time(&u, ms) != 0) {
            snprintf(why, len, "no UUIDv7 time");
            return false;
        }
        return true;
    }
    if (k == G_ULID) {
        idm_ulid u;
        memcpy(u.b, b, 16);
        *ms = idm_ulid_time(&u);
        return true;
    }
    idm_decoded d;
    int rc = idm_layout_decode(l, p->lo, &d);
    if (rc != 0 || p->hi != 0) {
        snprintf(why, len, "does not decode: %s", idm_strerror(rc));
        return false;
    }
    if (d.value[worker_ix] != 1) {
        snprintf(why, len, "worker %" PRIu64 ", want 1", d.value[worker_ix]);
        return false;
    }
    *ms = d.unix_ms;
    return true;
}

/*
 * One check run: n threads, thread i running loops[i % nloops], on a fresh
 * generator of kind k, recording ids. Checks every recorded id's form and
 * time, each thread's order (ordered), and that no id repeats.
 */
static void check_run(const char *what, enum gkind k, int n,
                      const loop_fn *loops, int nloops, bool ordered)
{
    worker w[MAX_THREADS];
    loop_fn per[MAX_THREADS];
    for (int i = 0; i < n; i++)
        per[i] = loops[i % nloops];
    unsigned wrong0 = bench_wrong_count();
    void *gen = gen_open(k);
    int64_t wall0 = bench_wall_ns(), mono0 = bench_mono_ns();
    run_threads(n, per, gen, CHECK_NS, ordered, true, g_rec, w);
    int64_t wall1 = bench_wall_ns(), mono1 = bench_mono_ns();
    check_workers(what, n, w);
    note_stats(k, gen, what);

    const idm_layout *l = k == G_SNOW ? idm_snowflake_layout(gen) : NULL;
    unsigned worker_ix = 0;
    int64_t slack_ms = 1;
    if (l != NULL) {
        int ix = idm_layout_field_index(l, "worker");
        if (ix < 0)
            die_rc("worker field", ix);
        worker_ix = (unsigned)ix;
        slack_ms = idm_layout_tick_ms(l);
    }
    /* The wall clock stepped against the monotonic one: times are only
     * noted then. */
    int64_t drift = (wall1 - wall0) - (mono1 - mono0);
    bool stepped = drift > 1000000 || drift < -1000000;
    int64_t lo_ms = wall0 / 1000000 - slack_ms, hi_ms = wall1 / 1000000 + 1;
    uint64_t bad_form = 0, bad_time = 0;
    char first[160] = "";
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        for (size_t j = 0; j < w[i].nrec; j++) {
            const pair *p = &g_rec[i][j];
            int64_t ms = 0;
            char why[96];
            if (!id_form(k, l, worker_ix, p, &ms, why, sizeof why)) {
                if (bad_form++ == 0)
                    snprintf(first, sizeof first, "thread %d id %016" PRIx64
                             "%016" PRIx64 ": %s", i + 1, p->hi, p->lo, why);
            } else if (k != G_UUID4 && (ms < lo_ms || ms > hi_ms)) {
                if (bad_time++ == 0 && bad_form == 0)
                    snprintf(first, sizeof first, "thread %d id %016" PRIx64
                             "%016" PRIx64 ": time %" PRId64 " outside [%" PRId64
                             ", %" PRId64 "]", i + 1, p->hi, p->lo, ms, lo_ms,
                             hi_ms);
            }
            g_all[total++] = *p;
        }
    }
    if (bad_form != 0 || (bad_time != 0 && !stepped))
        bench_wrong("%s: %" PRIu64 " ids of the wrong form, %" PRIu64
                    " with a time outside the run; first: %s", what, bad_form,
                    bad_time, first);
    else if (bad_time != 0)
        bench_printf("note: %s: the wall clock stepped; %" PRIu64 " ids carry a "
                     "time outside the run (%s)\n", what, bad_time, first);
    qsort(g_all, total, sizeof g_all[0], cmp_pair);
    uint64_t dups = 0;
    for (size_t j = 1; j < total; j++)
        if (g_all[j].hi == g_all[j - 1].hi && g_all[j].lo == g_all[j - 1].lo)
            dups++;
    if (dups != 0)
        bench_wrong("%s: %" PRIu64 " ids handed out twice among %zu", what,
                    dups, total);
    uint64_t minted = 0;
    for (int i = 0; i < n; i++)
        minted += w[i].count;
    bench_printf("check: %s: %zu ids recorded, %" PRIu64 " minted: %s\n",
                 what, total, minted,
                 bench_wrong_count() == wrong0 ? "ok" : "see WRONG above");
    gen_close(k, gen);
}

static void check_all(void)
{
    for (int i = 0; i < MAX_THREADS; i++) {
        g_rec[i] = malloc(CHECK_CAP * sizeof(pair));
        if (g_rec[i] == NULL) {
            fprintf(stderr, "idm_bench_threads: out of memory\n");
            exit(1);
        }
    }
    g_all = malloc((size_t)MAX_THREADS * CHECK_CAP * sizeof(pair));
    if (g_all == NULL) {
        fprintf(stderr, "idm_bench_threads: out of memory\n");
        exit(1);
    }
    char what[96];
    for (int m = 0; m < NMODES; m++) {
        const mode *md = &g_modes[m];
        snprintf(what, sizeof what, "%s %s (%s), 8 threads", md->item,
                 md->name, md->call);
        check_run(what, md->kind, MAX_THREADS, &md->loop, 1,
                  md->cls != C_REF);
        /* A shared mode and its per-thread one on one generator: the two
         * calls never hand out the same id. */
        if (md->cls == C_LOCAL) {
            const loop_fn both[2] = {g_modes[m - 1].loop, md->loop};
            snprintf(what, sizeof what, "%s and %s mixed, 8 threads",
                     g_modes[m - 1].call, md->call);
            check_run(what, md->kind, MAX_THREADS, both, 2, true);
        }
    }
    for (int i = 0; i < MAX_THREADS; i++)
        free(g_rec[i]);
    free(g_all);
}

/* ------------------------------------------------------------ rounds */

static double g_m[BENCH_ROUNDS_MAX][NMODES][NTHREADS]; /* ids/s */
static int g_rounds;

/* Median over the rounds of (m, t) over (mb, tb) of the same round. */
static double med_ratio(int m, int t, int mb, int tb)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = g_m[r][m][t] / g_m[r][mb][tb];
    return bench_median(v, g_rounds);
}

/* Median over the rounds of mode m's scaling at t over T7's (UUIDv4, which
 * shares nothing) in the same round: how much of what the machine gave a
 * mode that shares nothing this mode got. */
static double med_vs_ref(int m, int t)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = (g_m[r][m][t] / g_m[r][m][0]) /
               (g_m[r][NMODES - 1][t] / g_m[r][NMODES - 1][0]);
    return bench_median(v, g_rounds);
}

static double med(int m, int t)
{
    double v[BENCH_ROUNDS_MAX];
    for (int r = 0; r < g_rounds; r++)
        v[r] = g_m[r][m][t];
    return bench_median(v, g_rounds);
}

static const char *spread(char *buf, size_t len, int m, int t)
{
    double lo = g_m[0][m][t], hi = lo;
    char x[32], y[32];
    for (int r = 1; r < g_rounds; r++) {
        if (g_m[r][m][t] < lo)
            lo = g_m[r][m][t];
        if (g_m[r][m][t] > hi)
            hi = g_m[r][m][t];
    }
    if (g_rounds == 1)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s..%s", bench_si(x, sizeof x, lo),
                 bench_si(y, sizeof y, hi));
    return buf;
}

static void one_round(int round, double secs)
{
    worker w[MAX_THREADS];
    loop_fn loops[MAX_THREADS];
    char what[96];
    for (int m = 0; m < NMODES; m++) {
        const mode *md = &g_modes[m];
        void *gen = gen_open(md->kind);
        for (int i = 0; i < MAX_THREADS; i++)
            loops[i] = md->loop;
        bool ordered = md->cls != C_REF;
        /* warm-up, one thread */
        run_threads(1, loops, gen, WARMUP_NS, ordered, false, NULL, w);
        snprintf(what, sizeof what, "%s warm-up", md->item);
        check_workers(what, 1, w);
        /* 1, 2, 4, 8 threads in even rounds, 8, 4, 2, 1 in odd ones */
        for (int k = 0; k < NTHREADS; k++) {
            int t = round % 2 == 0 ? k : NTHREADS - 1 - k;
            int n = g_threads[t];
            int64_t ns = run_threads(n, loops, gen, (int64_t)(secs * 1e9),
                                     ordered, false, NULL, w);
            uint64_t total = 0;
            for (int i = 0; i < n; i++)
                total += w[i].count;
            snprintf(what, sizeof what, "%s %s, %d thread%s", md->item,
                     md->name, n, n == 1 ? "" : "s");
            check_workers(what, n, w);
            g_m[round][m][t] = ns > 0 ? (double)total * 1e9 / (double)ns : 0.0;
        }
        snprintf(what, sizeof what, "%s %s, round %d", md->item, md->name,
                 round + 1);
        note_stats(md->kind, gen, what);
        gen_close(md->kind, gen);
    }
}

/* ------------------------------------------------ the physical limit */

/*
 * What a shared mode is up against: the time a cache line takes to move
 * from one core to another, measured in each round. Two threads pass a
 * ball (one word on its own line) back and forth, each waiting for the
 * other's value before writing its own; the time of LINE_HOPS passes over
 * their number is one move. A shared mode whose threads took turns id by
 * id would pay that at every id; when it is longer than one thread's id,
 * one thread's figure is the ceiling and runs are how a shared mode
 * gets near it.
 */
#define LINE_HOPS 200000
static _Alignas(64) _Atomic uint64_t g_ball;
static double g_line_ns[BENCH_ROUNDS_MAX]; /* 0: not measured (one core) */

static void pass_ball(uint64_t first)
{
    for (uint64_t v = first; v < LINE_HOPS; v += 2) {
        while (atomic_load_explicit(&g_ball, memory_order_acquire) != v)
            ;
        atomic_store_explicit(&g_ball, v + 1, memory_order_release);
    }
}

static void *ball_thread(void *p)
{
    (void)p;
    pass_ball(1);
    return NULL;
}

static double line_move_ns(void)
{
    pthread_t th;
    int64_t t0;
    atomic_store(&g_ball, 0);
    if (pthread_create(&th, NULL, ball_thread, NULL) != 0)
        return 0.0;
    t0 = bench_mono_ns();
    pass_ball(0);
    while (atomic_load_explicit(&g_ball, memory_order_acquire) != LINE_HOPS)
        ;
    int64_t ns = bench_mono_ns() - t0;
    pthread_join(th, NULL);
    return (double)ns / LINE_HOPS;
}

/* ------------------------------------------------------------ main */

static const char *status_ge(double v, double target)
{
    return v >= target ? "PASS" : "BELOW";
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: idm_bench_threads\n");
        return 1;
    }
    double secs = bench_seconds();
    g_rounds = bench_rounds();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int allowed = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        allowed = CPU_COUNT(&set);

    bench_printf("idmint %s thread-scaling benchmark: %d rounds, each "
                 "measurement %.1f s of wall time (CLOCK_MONOTONIC);\nfigure "
                 "= median over the rounds, ratio = median of the per-round "
                 "ratios, spread = min..max of the figure\n", idm_version(),
                 g_rounds, secs);
    bench_print_machine();
    bench_printf("cores: %ld online (sysconf), %d this process may run on; "
                 "rows with more threads than that are oversubscribed\n",
                 cores, allowed);

    /* Correctness first: a fast wrong result is never a figure. */
    check_all();
    if (bench_wrong_count() != 0) {
        bench_printf("\nidm_bench_threads: %u correctness check(s) FAILED: "
                     "nothing was timed\n", bench_wrong_count());
        return 2;
    }

    for (int r = 0; r < g_rounds; r++) {
        bench_printf("round %d of %d...\n", r + 1, g_rounds);
        one_round(r, secs);
        /* Two threads spinning on one core would wait for the scheduler,
         * not the line. */
        g_line_ns[r] = allowed >= 2 ? line_move_ns() : 0.0;
    }
    char load[64];
    bench_printf("load average after the rounds: %s\n",
                 bench_loadavg(load, sizeof load));

    bench_table_header("threads minting at once: total ids/s; ratio over the "
                       "same mode's 1 thread, same round (BELOW never fails "
                       "the run)");
    char what[64], fig[64], rat[96], spr[64], tgt[16], s1[32];
    for (int m = 0; m < NMODES; m++) {
        const mode *md = &g_modes[m];
        for (int t = 0; t < NTHREADS; t++) {
            int n = g_threads[t];
            const char *status = "";
            tgt[0] = '\0';
            snprintf(what, sizeof what, "%s, %d thread%s%s", md->name, n,
                     n == 1 ? "" : "s",
                     allowed > 0 && n > allowed ? " (over)" : "");
            snprintf(fig, sizeof fig, "%s ids/s",
                     bench_si(s1, sizeof s1, med(m, t)));
            if (t == 0) {
                double ns_id = 1e9 / med(m, 0);
                if (md->cls == C_LOCAL)
                    snprintf(rat, sizeof rat, "%.1f ns/id; %.2f x %s's",
                             ns_id, med_ratio(m, 0, m - 1, 0),
                             g_modes[m - 1].item);
                else
                    snprintf(rat, sizeof rat, "%.1f ns/id (the unit)", ns_id);
            } else {
                double x = med_ratio(m, t, m, 0);
                if (md->cls == C_REF)
                    snprintf(rat, sizeof rat, "%.2f x 1 thread", x);
                else
                    snprintf(rat, sizeof rat, "%.2f x 1 thread; %.2f of T7's", x,
                             med_vs_ref(m, t));
                if (md->cls == C_LOCAL && n == 2) {
                    snprintf(tgt, sizeof tgt, ">= %.1fx", TARGET_LOCAL);
                    status = status_ge(x, TARGET_LOCAL);
                } else if (md->cls == C_SHARED) {
                    snprintf(tgt, sizeof tgt, ">= %.1fx", TARGET_SHARED);
                    status = status_ge(x, TARGET_SHARED);
                }
            }
            bench_row(md->item, what, fig, rat, spread(spr, sizeof spr, m, t),
                      tgt, status);
        }
    }

    bench_printf("\nscaling (total ids/s over 1 thread's, medians):\n");
    bench_printf("%-3s %-22s %-26s %8s %8s %8s %8s\n", "#", "mode", "call",
                 "1 thread", "2", "4", "8");
    for (int m = 0; m < NMODES; m++) {
        const mode *md = &g_modes[m];
        char one[32];
        bench_si(one, sizeof one, med(m, 0));
        bench_printf("%-3s %-22s %-26s %8s %7.2fx %7.2fx %7.2fx\n", md->item,
                     md->name, md->call, one, med_ratio(m, 1, m, 0),
                     med_ratio(m, 2, m, 0), med_ratio(m, 3, m, 0));
    }
    if (allowed > 0 && allowed < g_threads[NTHREADS - 1])
        bench_printf("(over): more threads than the %d cores this process may "
                     "run on; the total cannot grow past the cores there, and "
                     "a shared mode must not fall below 1 thread\n", allowed);
    if (allowed >= 2) {
        double line = bench_median(g_line_ns, g_rounds);
        bench_printf("\nthe physical limit of the shared modes: a cache line takes "
                     "%.0f ns to move between two cores (median of the rounds);\none "
                     "thread mints an id in %.0f ns (T1), %.0f ns (T3), %.0f ns (T5). "
                     "Threads taking turns id by id\nwould move the line at every id, "
                     "so one thread's figure is the most a shared mode can mint\n"
                     "while the move takes longer than an id (%.1f x here); runs "
                     "(one thread mints, the others wait)\nare how it gets near that.\n",
                     line, 1e9 / med(0, 0), 1e9 / med(2, 0), 1e9 / med(4, 0),
                     line * med(0, 0) / 1e9);
    }

    if (bench_wrong_count() != 0) {
        bench_printf("\nidm_bench_threads: %u correctness check(s) FAILED: the "
                     "figures above are not valid\n", bench_wrong_count());
        return 2;
    }
    bench_printf("\ncorrectness checks passed: no id repeated within a "
                 "generator (8 threads, and the shared and per-thread calls "
                 "mixed),\neach thread's ids strictly increased (also in every "
                 "timed run), forms and times right\n");
    return 0;
}
