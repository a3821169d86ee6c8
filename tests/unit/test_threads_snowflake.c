/* SPDX-License-Identifier: MIT */
/*
 * idm_snowflake_next on 8 threads: ids unique and in the order of the
 * calls. idm_snowflake_next_local, the per-thread blocks: ids unique across 8
 * threads and across every kind of call, increasing within each thread,
 * carrying the generator's node values; a block never outlives its tick and
 * its leftover states are never handed out; a clock stepped back goes
 * through the backwards policy; the lease guard stops a thread's block at
 * once; a restart after a state file's close or a crash mints above every
 * block; local_block is validated; a freed generator's block never serves
 * a new generator at the same address; a forked child's copy of a private
 * generator refuses, and a child of a shared one gets blocks of its own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define T0 INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define MS INT64_C(1000000)
#define WORKER 9

enum { NTHREADS = 8, PER_THREAD = 20000 };

typedef enum { KIND_LOCAL, KIND_NEXT, KIND_BATCH } mint_kind;

typedef struct worker_arg {
    idm_snowflake *g;
    mint_kind kind;
    uint64_t *ids; /* PER_THREAD of them */
    int rc;
    char detail[256]; /* the thread's error detail, if rc != 0 */
} worker_arg;

static pthread_barrier_t start_line;

static void *worker_main(void *p)
{
    worker_arg *a = p;
    size_t i = 0;
    pthread_barrier_wait(&start_line);
    while (i < PER_THREAD && a->rc == 0) {
        if (a->kind == KIND_LOCAL) {
            a->rc = idm_snowflake_next_local(a->g, &a->ids[i++]);
        } else if (a->kind == KIND_NEXT) {
            a->rc = idm_snowflake_next(a->g, &a->ids[i++]);
        } else {
            size_t n = PER_THREAD - i < 16 ? PER_THREAD - i : 16;
            a->rc = idm_snowflake_next_batch(a->g, &a->ids[i], n);
            i += n;
        }
    }
    if (a->rc != 0)
        snprintf(a->detail, sizeof a->detail, "%s", idm_error_detail());
    return NULL;
}

static void open_on(idm_snowflake **g, idm_layout *l, const idm_clock *clock,
                    uint32_t local_block)
{
    idm_snowflake_opts o;
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = clock;
    o.local_block = local_block;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
    IDM_ASSERT_OK(idm_snowflake_open(g, &o));
}

static void open_twitter(idm_snowflake **g, idm_layout **l, const idm_clock *clock,
                         uint32_t local_block)
{
    idm_snowflake_opts o;
    IDM_ASSERT_OK(idm_layout_preset(l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = *l;
    o.clock = clock;
    o.local_block = local_block;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
    IDM_ASSERT_OK(idm_snowflake_open(g, &o));
}

/* 8 threads on one generator with the given kinds; every id unique, each
 * thread's increasing, each carrying the generator's node values. */
static void run_threads(const mint_kind kinds[NTHREADS], uint32_t local_block)
{
    idm_layout *l;
    idm_snowflake *g;
    worker_arg a[NTHREADS];
    pthread_t th[NTHREADS];
    uint64_t *all = malloc(sizeof *all * NTHREADS * PER_THREAD);

    assert_non_null(all);
    open_twitter(&g, &l, NULL, local_block);
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int t = 0; t < NTHREADS; t++) {
        a[t] = (worker_arg){g, kinds[t], all + (size_t)t * PER_THREAD, 0, ""};
        assert_int_equal(pthread_create(&th[t], NULL, worker_main, &a[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    pthread_barrier_destroy(&start_line);
    for (int t = 0; t < NTHREADS; t++) {
        CHECK(a[t].rc == 0, "thread %d (kind %d): %s: %s", t, (int)a[t].kind,
              idm_err_name(a[t].rc), a[t].detail);
        CHECK(idm_test_strictly_increasing(a[t].ids, PER_THREAD),
              "thread %d (kind %d): ids do not strictly increase", t, (int)a[t].kind);
        for (size_t i = 0; i < PER_THREAD; i += 101) {
            idm_decoded d;
            IDM_ASSERT_OK(idm_layout_decode(l, a[t].ids[i], &d));
            CHECK(d.value[1] == 3 && d.value[2] == WORKER, "thread %d id %llu: node %llu/%llu",
                  t, ULL(a[t].ids[i]), ULL(d.value[1]), ULL(d.value[2]));
        }
    }
    size_t dups = idm_test_count_duplicates(all, (size_t)NTHREADS * PER_THREAD);
    CHECK(dups == 0, "%zu ids minted twice", dups);
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(l);
    free(all);
}

/* One idm_snowflake_next and the values of a process-wide counter taken
 * just before the call began and just after it returned. */
typedef struct ordered_rec {
    uint64_t id, before, after;
} ordered_rec;

typedef struct ordered_arg {
    idm_snowflake *g;
    ordered_rec *recs; /* PER_THREAD of them */
    int rc;
} ordered_arg;

static _Atomic uint64_t ticket;

static void *ordered_worker(void *p)
{
    ordered_arg *a = p;
    pthread_barrier_wait(&start_line);
    for (size_t i = 0; i < PER_THREAD && a->rc == 0; i++) {
        ordered_rec *r = &a->recs[i];
        r->before = atomic_fetch_add(&ticket, 1);
        a->rc = idm_snowflake_next(a->g, &r->id);
        r->after = atomic_fetch_add(&ticket, 1);
    }
    return NULL;
}

static int rec_by_id(const void *x, const void *y)
{
    uint64_t a = ((const ordered_rec *)x)->id, b = ((const ordered_rec *)y)->id;
    return a < b ? -1 : a > b;
}

/*
 * 8 threads calling idm_snowflake_next on one generator on the system clock
 * (threads then take turns in runs, internal.h): every id unique, and ids
 * in the order of the calls: if a call returned before another began (its
 * after ticket is below the other's before ticket), its id is the lower.
 * Sorted by id, that is: no id has a lower one whose call began after it
 * returned.
 */
static void eight_threads_next_in_call_order(void **unused)
{
    idm_layout *l;
    idm_snowflake *g;
    ordered_arg a[NTHREADS];
    pthread_t th[NTHREADS];
    ordered_rec *all = malloc(sizeof *all * NTHREADS * PER_THREAD);
    uint64_t max_before = 0;
    (void)unused;

    assert_non_null(all);
    open_twitter(&g, &l, NULL, 0);
    pthread_barrier_init(&start_line, NULL, NTHREADS);
    for (int t = 0; t < NTHREADS; t++) {
        a[t] = (ordered_arg){g, all + (size_t)t * PER_THREAD, 0};
        assert_int_equal(pthread_create(&th[t], NULL, ordered_worker, &a[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    pthread_barrier_destroy(&start_line);
    for (int t = 0; t < NTHREADS; t++)
        CHECK(a[t].rc == 0, "thread %d: %s", t, idm_err_name(a[t].rc));
    qsort(all, (size_t)NTHREADS * PER_THREAD, sizeof *all, rec_by_id);
    for (size_t k = 0; k < (size_t)NTHREADS * PER_THREAD; k++) {
        CHECK(k == 0 || all[k - 1].id != all[k].id, "id %llu minted twice", ULL(all[k].id));
        CHECK(k == 0 || max_before < all[k].after,
              "id %llu: a lower id was minted by a call that began (ticket %llu) after this "
              "one returned (ticket %llu)",
              ULL(all[k].id), ULL(max_before), ULL(all[k].after));
        if (all[k].before > max_before)
            max_before = all[k].before;
    }
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(l);
    free(all);
}

static void eight_threads_local(void **unused)
{
    static const mint_kind k[NTHREADS] = {KIND_LOCAL, KIND_LOCAL, KIND_LOCAL, KIND_LOCAL,
                                          KIND_LOCAL, KIND_LOCAL, KIND_LOCAL, KIND_LOCAL};
    (void)unused;
    run_threads(k, 0);
    run_threads(k, 1);    /* one state a block: every call takes one */
    run_threads(k, 4096); /* a whole tick */
}

static void local_mixed_with_next_and_batch(void **unused)
{
    static const mint_kind k[NTHREADS] = {KIND_LOCAL, KIND_NEXT,  KIND_LOCAL, KIND_BATCH,
                                          KIND_LOCAL, KIND_NEXT,  KIND_LOCAL, KIND_BATCH};
    (void)unused;
    run_threads(k, 0);
    run_threads(k, 100);
}

/* ---- one thread, the manual clock ---- */

typedef struct mfx {
    idm_manual_clock *mc;
    idm_layout *l;
    idm_snowflake *g;
} mfx;

static void mfx_open(mfx *f, idm_backwards_policy pol, bool guarded, uint32_t local_block)
{
    idm_snowflake_opts o;
    memset(f, 0, sizeof *f);
    IDM_ASSERT_OK(idm_manual_clock_new(&f->mc, T0, false));
    IDM_ASSERT_OK(idm_layout_preset(&f->l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = f->l;
    o.clock = idm_manual_clock_clock(f->mc);
    o.backwards = pol;
    o.guarded = guarded;
    o.local_block = local_block;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
    IDM_ASSERT_OK(idm_snowflake_open(&f->g, &o));
}

static void mfx_close(mfx *f)
{
    idm_snowflake_close(f->g);
    idm_layout_free(f->l);
    idm_manual_clock_free(f->mc);
}

static idm_decoded dec(const idm_layout *l, uint64_t id)
{
    idm_decoded d;
    IDM_ASSERT_OK(idm_layout_decode(l, id, &d));
    return d;
}

static uint64_t local(idm_snowflake *g)
{
    uint64_t id = 0;
    IDM_ASSERT_OK(idm_snowflake_next_local(g, &id));
    return id;
}

/*
 * A block of 8 taken at T0: its states are reserved (next mints above all
 * of them), the thread hands them out in order; at T0 + 1 ms the next
 * local id is of the new tick, and the 5 states left of the old block are
 * never handed out: not by this thread after the clock steps back to T0
 * (logical time mints above), nor by next.
 */
static void block_never_outlives_its_tick(void **unused)
{
    mfx f;
    uint64_t a, b, c, n1, n2;
    (void)unused;
    mfx_open(&f, IDM_BACKWARDS_LOGICAL, false, 8);
    a = local(f.g);
    CHECK(dec(f.l, a).unix_ms == T0 && dec(f.l, a).seq == 0, "first id %llu", ULL(a));
    IDM_ASSERT_OK(idm_snowflake_next(f.g, &n1));
    CHECK(dec(f.l, n1).seq == 8, "next minted seq %llu inside the thread's block (0 to 7)",
          ULL(dec(f.l, n1).seq));
    b = local(f.g);
    c = local(f.g);
    CHECK(dec(f.l, b).seq == 1 && dec(f.l, c).seq == 2, "the block's states out of order: %llu %llu",
          ULL(dec(f.l, b).seq), ULL(dec(f.l, c).seq));
    /* The next tick: a new block, not the old one's seq 3. */
    idm_manual_clock_advance(f.mc, 1);
    b = local(f.g);
    CHECK(dec(f.l, b).unix_ms == T0 + 1 && dec(f.l, b).seq == 0,
          "at T0 + 1 ms next_local gave %lld ms seq %llu: the old block outlived its tick",
          LL(dec(f.l, b).unix_ms), ULL(dec(f.l, b).seq));
    /* Back to T0: the T0 block's seq 3 to 7 are a gap. */
    idm_manual_clock_set(f.mc, T0);
    c = local(f.g);
    CHECK(c > b, "after the step back next_local gave %llu (%lld ms seq %llu), not above %llu", ULL(c),
          LL(dec(f.l, c).unix_ms), ULL(dec(f.l, c).seq), ULL(b));
    IDM_ASSERT_OK(idm_snowflake_next(f.g, &n2));
    CHECK(n2 > c, "next minted %llu, not above the thread's %llu", ULL(n2), ULL(c));
    mfx_close(&f);
}

/*
 * A block takes only the states left in the clock's tick: with 6 left, a
 * block of 64 is those 6 (no wait, nothing borrowed from the next tick),
 * and once the tick is full next_local goes through the exhaustion policy
 * as next does (here a frozen clock: IDM_EEXHAUSTED, nothing minted).
 */
static void block_capped_to_the_tick(void **unused)
{
    mfx f;
    uint64_t *batch = malloc(4090 * sizeof *batch), id = 0;
    idm_snowflake_stats st;
    (void)unused;
    assert_non_null(batch);
    mfx_open(&f, IDM_BACKWARDS_LOGICAL, false, 64);
    IDM_ASSERT_OK(idm_snowflake_next_batch(f.g, batch, 4090));
    for (uint64_t seq = 4090; seq < 4096; seq++) {
        id = local(f.g);
        CHECK(dec(f.l, id).unix_ms == T0 && dec(f.l, id).seq == seq,
              "expected T0 seq %llu, got %lld ms seq %llu", ULL(seq), LL(dec(f.l, id).unix_ms),
              ULL(dec(f.l, id).seq));
    }
    idm_snowflake_stats_get(f.g, &st);
    assert_int_equal(st.waits, 0);
    assert_int_equal(st.ahead_mints, 0);
    id = 0;
    IDM_ASSERT_RC(idm_snowflake_next_local(f.g, &id), IDM_EEXHAUSTED);
    assert_int_equal(id, 0);
    IDM_ASSERT_RC(idm_snowflake_next(f.g, &id), IDM_EEXHAUSTED);
    idm_snowflake_stats_get(f.g, &st);
    assert_int_equal(st.refused_exhausted, 2);
    /* The next tick: a block again. */
    idm_manual_clock_advance(f.mc, 1);
    id = local(f.g);
    CHECK(dec(f.l, id).unix_ms == T0 + 1 && dec(f.l, id).seq == 0, "next tick: %lld ms seq %llu",
          LL(dec(f.l, id).unix_ms), ULL(dec(f.l, id).seq));
    IDM_ASSERT_OK(idm_snowflake_next(f.g, &id));
    assert_int_equal(dec(f.l, id).seq, 64);
    free(batch);
    mfx_close(&f);
}

/* The refuse policy refuses next_local as it does next once the clock is
 * behind the thread's block; minting resumes when the clock gets back. */
static void step_back_refused(void **unused)
{
    mfx f;
    uint64_t a, b, id = 0;
    idm_snowflake_stats st;
    (void)unused;
    mfx_open(&f, IDM_BACKWARDS_REFUSE, false, 0);
    (void)local(f.g);
    idm_manual_clock_advance(f.mc, 5);
    a = local(f.g);
    idm_manual_clock_advance(f.mc, -2);
    IDM_ASSERT_RC(idm_snowflake_next_local(f.g, &id), IDM_ECLOCKBACK);
    IDM_ASSERT_RC(idm_snowflake_next(f.g, &id), IDM_ECLOCKBACK);
    assert_int_equal(id, 0);
    idm_snowflake_stats_get(f.g, &st);
    assert_int_equal(st.refused_backwards, 2);
    idm_manual_clock_advance(f.mc, 3);
    b = local(f.g);
    CHECK(b > a && dec(f.l, b).unix_ms == T0 + 6, "after the clock came back: %llu (%lld ms)",
          ULL(b), LL(dec(f.l, b).unix_ms));
    mfx_close(&f);
}

static void guard_for(mfx *f, int64_t ms)
{
    const idm_clock *c = idm_manual_clock_clock(f->mc);
    idm_mono_ns mono = c->mono_ns(c->ctx);
    idm_wall_ns wall = c->wall_ns(c->ctx);
    IDM_ASSERT_OK(idm_snowflake_guard(f->g, mono + ms * MS, wall + ms * MS, T0 + 86400000));
}

/*
 * The guard on every call, with the thread's block still good for the
 * clock's tick: refused before the first guard, after a drop, at the
 * monotonic deadline (wall time standing still, so the block's tick holds)
 * and at the wall deadline; each refusal counted, and minting resumes on
 * a renewal.
 */
static void guard_stops_the_block(void **unused)
{
    mfx f;
    uint64_t id = 0, a, b;
    idm_snowflake_stats st;
    (void)unused;
    mfx_open(&f, IDM_BACKWARDS_LOGICAL, true, 0);
    IDM_ASSERT_RC(idm_snowflake_next_local(f.g, &id), IDM_ELEASE);
    guard_for(&f, 8000);
    a = local(f.g);
    idm_snowflake_guard_drop(f.g);
    IDM_ASSERT_RC(idm_snowflake_next_local(f.g, &id), IDM_ELEASE);
    assert_int_equal(id, 0);
    guard_for(&f, 8000);
    b = local(f.g);
    CHECK(b > a && dec(f.l, b).unix_ms == T0, "after renewal: %llu", ULL(b));
    /* The monotonic deadline, the wall clock still in the block's tick. */
    idm_manual_clock_skew(f.mc, 0, 8000 * MS);
    IDM_ASSERT_RC(idm_snowflake_next_local(f.g, &id), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "monotonic") != NULL, "detail: %s", idm_error_detail());
    guard_for(&f, 8000);
    a = local(f.g);
    CHECK(a > b && dec(f.l, a).unix_ms == T0, "after renewal: %llu", ULL(a));
    /* The wall deadline: a guard that ends within this tick. */
    {
        const idm_clock *c = idm_manual_clock_clock(f.mc);
        IDM_ASSERT_OK(idm_snowflake_guard(f.g, c->mono_ns(c->ctx) + 8000 * MS,
                                          c->wall_ns(c->ctx) + MS / 2, T0 + 86400000));
        b = local(f.g);
        idm_manual_clock_advance_ns(f.mc, MS / 2);
        CHECK(dec(f.l, b).unix_ms == idm_manual_clock_now_ms(f.mc), "left the tick");
        IDM_ASSERT_RC(idm_snowflake_next_local(f.g, &id), IDM_ELEASE);
        CHECK(strstr(idm_error_detail(), "wall") != NULL, "detail: %s", idm_error_detail());
    }
    idm_snowflake_stats_get(f.g, &st);
    assert_int_equal(st.refused_lease, 4);
    mfx_close(&f);
}

/*
 * A state file: a restart after next_local ids mints above every id of the
 * thread's block, handed out or not: after a clean close, and after a
 * process that minted from a block died without closing. The clock moves
 * only when the generator sleeps on it.
 */
static void state_open(idm_snowflake **g, idm_layout *l, idm_manual_clock *mc,
                           const char *path)
{
    idm_snowflake_opts o;
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = idm_manual_clock_clock(mc);
    o.state_path = path;
    o.state_fresh = true;
    o.local_block = 64;
    /* A restart behind the mark waits for the clock (which moves when
     * slept on) instead of refusing. */
    o.backwards = IDM_BACKWARDS_WAIT;
    o.max_wait_ms = 5000;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
    IDM_ASSERT_OK(idm_snowflake_open(g, &o));
}

static void restart_above_blocks(void **unused)
{
    char *dir = idm_test_tmpdir(), *path = idm_test_path(dir, "sf.state");
    idm_manual_clock *mc;
    idm_layout *l;
    idm_snowflake *g;
    uint64_t a, b, max_block;
    int status;
    pid_t pid;
    (void)unused;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, true));
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));

    state_open(&g, l, mc, path);
    a = local(g);
    (void)local(g);
    IDM_ASSERT_OK(idm_snowflake_close(g));
    /* The block held 64 states of T0; two were handed out. */
    max_block = a + 63; /* twitter: the sequence is the low 12 bits */
    state_open(&g, l, mc, path);
    b = local(g);
    CHECK(b > max_block, "after a clean close: %llu (%lld ms seq %llu), not above the block's last "
                         "%llu",
          ULL(b), LL(dec(l, b).unix_ms), ULL(dec(l, b).seq), ULL(max_block));
    IDM_ASSERT_OK(idm_snowflake_close(g));

    /* A process minting from a block dies without closing. */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_snowflake *cg;
        uint64_t id;
        state_open(&cg, l, mc, path);
        for (int i = 0; i < 3; i++)
            if (idm_snowflake_next_local(cg, &id) != 0)
                _exit(2);
        _exit(id > b ? 0 : 3);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exited with %d",
          WEXITSTATUS(status));
    state_open(&g, l, mc, path);
    a = local(g);
    /* The child's block was in the tick after b's (the restart starts above
     * the mark), and a crash leaves the lookahead mark: far above. */
    CHECK(dec(l, a).unix_ms > dec(l, b).unix_ms + 1, "after a crash: %llu (%lld ms), the block "
                                                     "before it at %lld ms",
          ULL(a), LL(dec(l, a).unix_ms), LL(dec(l, b).unix_ms + 1));
    IDM_ASSERT_OK(idm_snowflake_close(g));

    idm_layout_free(l);
    idm_manual_clock_free(mc);
    idm_test_rmtree(dir);
    free(path);
    free(dir);
}

static void local_block_validated(void **unused)
{
    idm_layout *l, *l1;
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter")); /* 12 sequence bits */
    idm_snowflake_opts_init(&o);
    assert_int_equal(o.local_block, 0);
    o.layout = l;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
    o.local_block = 4097;
    IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "local_block") != NULL, "detail: %s", idm_error_detail());
    assert_null(g);
    o.local_block = UINT32_MAX;
    IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EINVAL);
    static const uint32_t good[] = {0, 1, 64, 4096};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t id;
        o.local_block = good[i];
        IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
        IDM_ASSERT_OK(idm_snowflake_next_local(g, &id));
        IDM_ASSERT_OK(idm_snowflake_close(g));
    }
    /* One sequence bit: 2 states a tick; auto is 1 (a quarter rounds to
     * 0), and 3 is refused. */
    IDM_ASSERT_OK(idm_layout_parse(&l1, "time:41@1ms,worker:10,seq:1", T0 - 86400000));
    idm_snowflake_opts_init(&o);
    o.layout = l1;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 1));
    o.local_block = 3;
    IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EINVAL);
    o.local_block = 2;
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_snowflake_close(g));
    o.local_block = 0;
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    {
        uint64_t ids[200];
        for (int i = 0; i < 200; i++)
            IDM_ASSERT_OK(idm_snowflake_next_local(g, &ids[i]));
        CHECK(idm_test_strictly_increasing(ids, 200), "one-bit sequence: not increasing");
    }
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(l1);
    idm_layout_free(l);
}

/*
 * A generator freed and a new one opened at the same address: the new one's
 * first local id comes from a block of its own (seq 0 at T0, the clock
 * unchanged), never from what was left of the old one's block (seq 1).
 * Private generators land where the allocator puts them (perhaps at a freed
 * one's address); shared ones are opened in the same memory on purpose.
 */
static void freed_generator_block_not_shared(void **unused)
{
    idm_manual_clock *mc;
    idm_layout *l;
    int same = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    for (int i = 0; i < 8; i++) {
        idm_snowflake *g1, *g2;
        uintptr_t p1;
        uint64_t id;
        open_on(&g1, l, idm_manual_clock_clock(mc), 64);
        id = local(g1);
        assert_int_equal(dec(l, id).seq, 0);
        p1 = (uintptr_t)g1;
        IDM_ASSERT_OK(idm_snowflake_close(g1));
        open_on(&g2, l, idm_manual_clock_clock(mc), 64);
        same += (uintptr_t)g2 == p1;
        id = local(g2);
        CHECK(dec(l, id).seq == 0, "round %d: the new generator%s handed out seq %llu: the freed "
                                   "one's block",
              i, (uintptr_t)g2 == p1 ? " (at the freed one's address)" : "", ULL(dec(l, id).seq));
        IDM_ASSERT_OK(idm_snowflake_close(g2));
    }
    if (same == 0)
        print_message("note: no private generator landed at a freed one's address\n");
    {
        size_t size = idm_snowflake_shared_size();
        void *mem = aligned_alloc(64, (size + 63) / 64 * 64);
        idm_snowflake_opts o;
        assert_non_null(mem);
        idm_snowflake_opts_init(&o);
        o.layout = l;
        o.clock = idm_manual_clock_clock(mc);
        IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
        IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
        for (int i = 0; i < 6; i++) {
            idm_snowflake *g;
            uint64_t id;
            IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
            id = local(g);
            CHECK(dec(l, id).seq == 0, "round %d: the shared generator opened again in the same "
                                       "memory handed out seq %llu: the old one's block",
                  i, ULL(dec(l, id).seq));
            IDM_ASSERT_OK(idm_snowflake_close(g));
        }
        free(mem);
    }
    idm_layout_free(l);
    idm_manual_clock_free(mc);
}

/* A forked child's copy of a private generator refuses next_local, its
 * thread's block included. */
static void forked_child_refused(void **unused)
{
    idm_layout *l;
    idm_snowflake *g;
    uint64_t id;
    int status;
    pid_t pid;
    (void)unused;
    open_twitter(&g, &l, NULL, 64);
    IDM_ASSERT_OK(idm_snowflake_next_local(g, &id));
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t cid = 0;
        int rc = idm_snowflake_next_local(g, &cid);
        _exit(rc == IDM_EFORKED && cid == 0 ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child's next_local on the parent's generator was not refused with IDM_EFORKED");
    IDM_ASSERT_OK(idm_snowflake_next_local(g, &id));
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(l);
}

/*
 * A shared generator (idm_snowflake_open_shared): next_local works in every
 * process, and a child forked while its parent's thread holds a block does
 * not hand out that block (the parent goes on with it). The manual clock
 * stands still, so the parent's block stays good; the child writes its ids
 * down a pipe.
 */
static void shared_child_gets_its_own_block(void **unused)
{
    enum { N = 20 };
    idm_layout *l;
    idm_manual_clock *mc;
    idm_snowflake_opts o;
    idm_snowflake *g;
    size_t size = idm_snowflake_shared_size();
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint64_t ids[3 * N], child[N];
    int fds[2], status;
    pid_t pid;
    (void)unused;
    assert_true(mem != MAP_FAILED);
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = idm_manual_clock_clock(mc);
    o.local_block = 64;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", WORKER));
    IDM_ASSERT_OK(idm_snowflake_open_shared(&g, mem, size, &o));
    for (int i = 0; i < N; i++)
        ids[i] = local(g);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t mine[N];
        close(fds[0]);
        for (int i = 0; i < N; i++)
            if (idm_snowflake_next_local(g, &mine[i]) != 0)
                _exit(2);
        _exit(write(fds[1], mine, sizeof mine) == (ssize_t)sizeof mine ? 0 : 3);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], child, sizeof child), (ssize_t)sizeof child);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exited with %d",
          WEXITSTATUS(status));
    for (int i = N; i < 2 * N; i++)
        ids[i] = local(g);
    CHECK(idm_test_strictly_increasing(ids, 2 * N), "the parent's ids do not increase");
    CHECK(idm_test_strictly_increasing(child, N), "the child's ids do not increase");
    memcpy(ids + 2 * N, child, sizeof child);
    size_t dups = idm_test_count_duplicates(ids, 3 * N);
    CHECK(dups == 0, "%zu ids minted by both the parent and its child", dups);
    IDM_ASSERT_OK(idm_snowflake_close(g));
    munmap(mem, size);
    idm_layout_free(l);
    idm_manual_clock_free(mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(eight_threads_next_in_call_order),
        cmocka_unit_test(eight_threads_local),
        cmocka_unit_test(local_mixed_with_next_and_batch),
        cmocka_unit_test(block_never_outlives_its_tick),
        cmocka_unit_test(block_capped_to_the_tick),
        cmocka_unit_test(step_back_refused),
        cmocka_unit_test(guard_stops_the_block),
        cmocka_unit_test(restart_above_blocks),
        cmocka_unit_test(local_block_validated),
        cmocka_unit_test(freed_generator_block_not_shared),
        cmocka_unit_test(forked_child_refused),
        cmocka_unit_test(shared_child_gets_its_own_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
