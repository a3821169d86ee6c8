/* SPDX-License-Identifier: MIT */
/*
 * Mints in flight on other threads when a lease is closed or a deadline
 * passes, forked children, and the edges of the generator's bounds.
 *
 * This program compiles src/core/snowflake.c in with IDM_TEST_HOOKS, so a
 * minting thread can be parked at a named point inside the generator
 * ("before-cas": its states decided, the compare-and-swap not yet made;
 * "after-raise-limit": a state-file mark just written), and its clock can
 * park it inside a sleep of the wait policies or hand it scripted readings.
 * While it is parked the main thread closes the lease (idm_lease_close on the
 * file coordinator) or moves the clock; then a second holder of the same
 * worker id mints, and no id may repeat. Each test here failed before the
 * fix it names (issue: "ids after a lease is closed or a deadline passed,
 * forked children, and edges").
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "internal.h"
#include "testutil.h"

#define T0 INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define MS INT64_C(1000000)

/* ---- parking a thread at a named point ---- */

typedef struct parker {
    const char *point; /* park at the first hit of this point; NULL: never */
    int state;         /* 0 running, 1 parked, 2 let go */
} parker;

static _Thread_local parker *tl_parker;
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;

static void park_point(const char *point)
{
    parker *p = tl_parker;
    if (p == NULL || p->point == NULL || strcmp(p->point, point) != 0)
        return;
    pthread_mutex_lock(&park_mu);
    p->point = NULL; /* once */
    p->state = 1;
    pthread_cond_broadcast(&park_cv);
    while (p->state != 2)
        pthread_cond_wait(&park_cv, &park_mu);
    pthread_mutex_unlock(&park_mu);
}

/* The generator's hook (declared in internal.h under IDM_TEST_HOOKS). */
static void hook(const char *point, struct idm_snowflake *g)
{
    (void)g;
    park_point(point);
}

/* Wait until p's thread is parked. A thread that never gets there fails the
 * test (bounded, so a broken build cannot hang the suite). */
static void wait_parked(parker *p, const char *what)
{
    struct timespec ts;
    int rc = 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 20;
    pthread_mutex_lock(&park_mu);
    while (p->state != 1 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&park_cv, &park_mu, &ts);
    pthread_mutex_unlock(&park_mu);
    CHECK(rc != ETIMEDOUT, "the minting thread never reached %s", what);
}

static void unpark(parker *p)
{
    pthread_mutex_lock(&park_mu);
    p->state = 2;
    pthread_cond_broadcast(&park_cv);
    pthread_mutex_unlock(&park_mu);
}

/* ---- a clock that can script wall readings, oversleep, park in a sleep ---- */

typedef struct sclock {
    idm_manual_clock *mc;
    const idm_clock *base;
    idm_clock clock;
    pthread_mutex_t mu;
    int64_t script[8]; /* wall readings (ns) to return next, in order */
    int nscript;
    int64_t oversleep_ns; /* each sleep moves wall time this much further */
} sclock;

static idm_wall_ns sc_wall(void *ctx)
{
    sclock *c = ctx;
    int64_t v;
    pthread_mutex_lock(&c->mu);
    if (c->nscript > 0) {
        v = c->script[0];
        memmove(c->script, c->script + 1, sizeof c->script[0] * (size_t)(--c->nscript));
        pthread_mutex_unlock(&c->mu);
        return v;
    }
    pthread_mutex_unlock(&c->mu);
    return c->base->wall_ns(c->base->ctx);
}

static idm_mono_ns sc_mono(void *ctx)
{
    sclock *c = ctx;
    return c->base->mono_ns(c->base->ctx);
}

static void sc_sleep(void *ctx, int64_t ns)
{
    sclock *c = ctx;
    park_point("sleep");
    c->base->sleep_ns(c->base->ctx, ns);
    if (c->oversleep_ns > 0)
        idm_manual_clock_advance_ns(c->mc, c->oversleep_ns);
}

static void sclock_init(sclock *c, idm_unix_ms start, bool advance_on_sleep)
{
    memset(c, 0, sizeof *c);
    IDM_ASSERT_OK(idm_manual_clock_new(&c->mc, start, advance_on_sleep));
    c->base = idm_manual_clock_clock(c->mc);
    pthread_mutex_init(&c->mu, NULL);
    c->clock.ctx = c;
    c->clock.wall_ns = sc_wall;
    c->clock.mono_ns = sc_mono;
    c->clock.sleep_ns = sc_sleep;
}

static void sclock_script(sclock *c, int n, const int64_t *readings_ns)
{
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < n; i++)
        c->script[c->nscript++] = readings_ns[i];
    pthread_mutex_unlock(&c->mu);
}

static void sclock_free(sclock *c)
{
    idm_manual_clock_free(c->mc);
    pthread_mutex_destroy(&c->mu);
}

/* ---- a minting thread ---- */

typedef struct job {
    parker park;
    idm_snowflake *g;
    size_t n; /* 1: idm_snowflake_next; more: _next_batch */
    uint64_t *ids;
    int rc;
    int64_t slept_before, slept_after; /* the manual clock's sleep count */
    idm_manual_clock *mc;
    pthread_t t;
} job;

static void *job_main(void *arg)
{
    job *j = arg;
    tl_parker = &j->park;
    if (j->n == 1)
        j->rc = idm_snowflake_next(j->g, j->ids);
    else
        j->rc = idm_snowflake_next_batch(j->g, j->ids, j->n);
    return NULL;
}

static void job_start(job *j, idm_snowflake *g, size_t n, const char *park_at)
{
    memset(j, 0, sizeof *j);
    j->g = g;
    j->n = n;
    j->ids = calloc(n, sizeof *j->ids);
    assert_non_null(j->ids);
    j->park.point = park_at;
    assert_int_equal(pthread_create(&j->t, NULL, job_main, j), 0);
}

static void job_join(job *j)
{
    pthread_join(j->t, NULL);
}

/* ---- one holder: a file lease on the manual clock and its generator ---- */

typedef struct holder {
    idm_lease *lease;
    idm_snowflake *g;
    char *state_path;
} holder;

typedef struct fx {
    char *dir;
    char url[600];
    sclock clk;
    idm_layout *layout;
    idm_test_idvec handed; /* every id holder 1 handed out */
} fx;

static void fx_init(fx *f, const char *layout_text, idm_unix_ms epoch, idm_unix_ms start)
{
    memset(f, 0, sizeof *f);
    f->dir = idm_test_tmpdir();
    snprintf(f->url, sizeof f->url, "file://%s", f->dir);
    sclock_init(&f->clk, start, true);
    if (layout_text == NULL)
        IDM_ASSERT_OK(idm_layout_preset(&f->layout, "twitter"));
    else
        IDM_ASSERT_OK(idm_layout_parse(&f->layout, layout_text, epoch));
    idm__snowflake_test_hook = hook;
}

static void fx_free(fx *f)
{
    idm__snowflake_test_hook = NULL;
    idm_layout_free(f->layout);
    sclock_free(&f->clk);
    idm_test_rmtree(f->dir);
    free(f->dir);
    idm_test_idvec_free(&f->handed);
}

/* Claim the one worker id (max_workers 1) and open a guarded generator on
 * it, starting above the previous holder's mark; state file optional. */
static void holder_open(fx *f, holder *h, const char *state_name, int64_t lookahead_ms)
{
    idm_lease_opts lo;
    idm_snowflake_opts o;
    int rc;
    memset(h, 0, sizeof *h);
    idm_lease_opts_init(&lo);
    lo.url = f->url;
    lo.max_workers = 1;
    lo.ttl_ms = 10000;
    lo.clock = &f->clk.clock;
    lo.holder = "test";
    IDM_ASSERT_OK(idm_lease_open(&h->lease, &lo));
    idm_snowflake_opts_init(&o);
    o.layout = f->layout;
    o.clock = &f->clk.clock;
    o.guarded = true;
    o.after_ms = idm_lease_mark(h->lease);
    for (size_t i = 0; i < idm_layout_field_count(f->layout); i++) {
        idm_field_info fi;
        idm_layout_field(f->layout, i, &fi);
        if (fi.kind == IDM_FIELD_NODE)
            IDM_ASSERT_OK(idm_snowflake_opts_node(&o, fi.name, idm_lease_worker(h->lease) % (fi.max + 1)));
    }
    if (state_name != NULL) {
        h->state_path = idm_test_path(f->dir, state_name);
        o.state_path = h->state_path;
        o.state_fresh = true;
        o.state_lookahead_ms = lookahead_ms;
    }
    rc = idm_snowflake_open(&h->g, &o);
    if (rc == IDM_ECLOCKBACK) {
        /* The previous mark is ahead of the clock: wait it out, as the CLI
         * does (on the manual clock, at once). */
        idm_manual_clock_set(f->clk.mc, idm_lease_mark(h->lease) + 1);
        rc = idm_snowflake_open(&h->g, &o);
    }
    IDM_ASSERT_OK(rc);
    IDM_ASSERT_OK(idm_lease_attach(h->lease, h->g));
}

static void holder_close(holder *h)
{
    if (h->lease != NULL)
        IDM_ASSERT_OK(idm_lease_close(h->lease));
    idm_snowflake_close(h->g);
    free(h->state_path);
}

static uint64_t mint1(fx *f, holder *h)
{
    uint64_t id = 0;
    IDM_ASSERT_OK(idm_snowflake_next(h->g, &id));
    idm_test_idvec_push(&f->handed, id);
    return id;
}

/* The next holder of the worker id mints at the clock's time now (and a
 * little later): none of its ids may be one holder 1 handed out, and all
 * must be above them. */
static void second_holder_checks(fx *f)
{
    holder h2;
    uint64_t max1 = 0;
    holder_open(f, &h2, NULL, 0);
    for (size_t i = 0; i < f->handed.n; i++)
        if (f->handed.v[i] > max1)
            max1 = f->handed.v[i];
    for (int i = 0; i < 3; i++) {
        uint64_t id;
        IDM_ASSERT_OK(idm_snowflake_next(h2.g, &id));
        for (size_t k = 0; k < f->handed.n; k++)
            CHECK(id != f->handed.v[k], "the second holder repeated id %llu", ULL(id));
        CHECK(id > max1, "the second holder minted %llu, not above the first holder's %llu",
              ULL(id), ULL(max1));
        idm_manual_clock_advance(f->clk.mc, 1);
    }
    holder_close(&h2);
}

/* Join j; it must have handed out nothing (IDM_ELEASE). Whatever it did
 * hand out is recorded, so the second holder's check shows the repeat. */
static void expect_refused(fx *f, job *j)
{
    job_join(j);
    if (j->rc == 0)
        for (size_t i = 0; i < j->n; i++)
            idm_test_idvec_push(&f->handed, j->ids[i]);
    second_holder_checks(f);
    CHECK(j->rc == IDM_ELEASE, "the parked mint returned %s after the lease was closed",
          idm_err_name(j->rc));
    free(j->ids);
}

/*
 * The shape of the close-while-parked scenarios: holder 1 mints premints
 * ids, the clock moves advance_ms, a minting thread is parked at point, the
 * main thread does before_close (if any), closes the lease, does after_close
 * (if any), lets the thread go; the thread must hand nothing out, and the
 * second holder checks for repeats.
 */
typedef void (*step_fn)(fx *f, holder *h);

static void close_while_parked(const char *layout_text, idm_unix_ms epoch, const char *state,
                               int premints, int64_t advance_ms, const char *point,
                               step_fn before_close, step_fn after_close)
{
    fx f;
    holder h;
    job a;
    fx_init(&f, layout_text, epoch, T0);
    holder_open(&f, &h, state, 1); /* lookahead one tick: a state write per tick */
    for (int i = 0; i < premints; i++)
        mint1(&f, &h);
    idm_manual_clock_advance(f.clk.mc, advance_ms);
    job_start(&a, h.g, 1, point);
    wait_parked(&a.park, point);
    if (before_close != NULL)
        before_close(&f, &h);
    IDM_ASSERT_OK(idm_lease_close(h.lease));
    h.lease = NULL;
    if (after_close != NULL)
        after_close(&f, &h);
    unpark(&a.park);
    expect_refused(&f, &a);
    holder_close(&h);
    fx_free(&f);
}

/* 1. A mint parked after its guard check and clock read, before its CAS,
 *    while the lease is closed: it must hand nothing out. (Before the fix it
 *    minted a tick above the final mark close recorded.) */
static void close_while_parked_before_cas(void **unused)
{
    (void)unused;
    close_while_parked(NULL, 0, NULL, 1, 5, "before-cas", NULL, NULL);
}

/* 2. The same, on the CAS retry path: while the mint is parked another
 *    thread mints a lower tick (the clock stepped back), so its CAS fails
 *    and it retries after close recorded the lower tick. */
static void step_back_and_mint(fx *f, holder *h)
{
    idm_manual_clock_set(f->clk.mc, T0); /* stepped back 5 ms */
    mint1(f, h);                         /* T0, next sequence: the word moves */
}

static void clock_forward_again(fx *f, holder *h)
{
    (void)h;
    idm_manual_clock_set(f->clk.mc, T0 + 5);
}

static void close_while_retrying_cas(void **unused)
{
    (void)unused;
    close_while_parked(NULL, 0, NULL, 1, 5, "before-cas", step_back_and_mint, clock_forward_again);
}

/* 3. A mint parked right after raise_limit wrote the state file's new mark
 *    (the mutex and the fsync behind it) while the lease is closed. */
static void close_while_in_raise_limit(void **unused)
{
    (void)unused;
    close_while_parked(NULL, 0, "state1", 1, 5, "after-raise-limit", NULL, NULL);
}

/* 4. A mint parked in a sleep of the wait policy (its states reserved
 *    before close read the word) while the lease is closed: it wakes to a
 *    dropped guard and hands nothing out. 4 ids a tick: fill the tick, then
 *    one more waits for T0 + 1. */
static void close_while_waiting(void **unused)
{
    (void)unused;
    close_while_parked("time:41@1ms,worker:10,seq:2", T0 - 1000, NULL, 4, 0, "sleep", NULL, NULL);
}

/* ---- item 2: every reading an id is handed out on is checked ---- */

/* A guarded generator on the scripted clock with a lease-like guard: wall
 * deadline T0 + 8 s, mark T0 + 10 s (TTL 10 s, margin 2 s). */
static idm_snowflake *guarded_gen(sclock *c, idm_layout *layout, idm_backwards_policy pol)
{
    idm_snowflake_opts o;
    idm_snowflake *g;
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    o.clock = &c->clock;
    o.guarded = true;
    o.backwards = pol;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 3));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_snowflake_guard(g, INT64_MAX, (T0 + 8000) * MS, T0 + 10000));
    return g;
}

/* The state is ahead of the first reading (the clock stepped back 1 ms), so
 * the mint reads the clock again; that second reading is past the wall
 * deadline (and below the mark). Before the fix the id was handed out. */
static void deadline_after_second_read(void **unused)
{
    sclock c;
    idm_layout *layout;
    idm_snowflake *g;
    uint64_t id;
    int64_t script[2] = {(T0 - 1) * MS, (T0 + 9000) * MS};
    (void)unused;
    sclock_init(&c, T0, true);
    IDM_ASSERT_OK(idm_layout_parse(&layout, "time:41@1ms,worker:10,seq:12", T0 - 100000));
    g = guarded_gen(&c, layout, IDM_BACKWARDS_LOGICAL);
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    sclock_script(&c, 2, script);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    CHECK(c.nscript == 0, "the mint did not read the clock twice");
    idm_snowflake_close(g);
    idm_layout_free(layout);
    sclock_free(&c);
}

/* The wait path: the clock stepped back 3 ms under the wait policy, the
 * mint sleeps to catch up and the sleep overshoots past the wall deadline.
 * Before the fix it handed the id out after waking. */
static void deadline_during_wait(void **unused)
{
    sclock c;
    idm_layout *layout;
    idm_snowflake *g;
    uint64_t id;
    idm_snowflake_stats st;
    (void)unused;
    sclock_init(&c, T0 + 7990, true);
    IDM_ASSERT_OK(idm_layout_parse(&layout, "time:41@1ms,worker:10,seq:12", T0 - 100000));
    g = guarded_gen(&c, layout, IDM_BACKWARDS_WAIT);
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    idm_manual_clock_set(c.mc, T0 + 7987);
    c.oversleep_ns = 20 * MS; /* wakes at T0 + 8010: past the deadline */
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    idm_snowflake_stats_get(g, &st);
    CHECK(st.waits >= 1, "the mint did not wait");
    CHECK(st.last_unix_ms == T0 + 7990, "the refused mint left the state at %lld ms",
          LL(st.last_unix_ms));
    idm_snowflake_close(g);
    idm_layout_free(layout);
    sclock_free(&c);
}

/* After raise_limit (a state-file write) the clock is read again, with the
 * deadlines: a write that took past the wall deadline hands nothing out. */
static void deadline_after_state_write(void **unused)
{
    sclock c;
    idm_layout *layout;
    idm_snowflake *g;
    idm_snowflake_opts o;
    char *dir = idm_test_tmpdir(), *path = idm_test_path(dir, "state");
    uint64_t id;
    job a;
    (void)unused;
    sclock_init(&c, T0, true);
    IDM_ASSERT_OK(idm_layout_parse(&layout, "time:41@1ms,worker:10,seq:12", T0 - 100000));
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    o.clock = &c.clock;
    o.guarded = true;
    o.state_path = path;
    o.state_fresh = true;
    o.state_lookahead_ms = 1;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 3));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_snowflake_guard(g, INT64_MAX, (T0 + 8000) * MS, T0 + 10000));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    idm__snowflake_test_hook = hook;
    idm_manual_clock_set(c.mc, T0 + 7999);
    job_start(&a, g, 1, "after-raise-limit");
    wait_parked(&a.park, "after-raise-limit");
    idm_manual_clock_set(c.mc, T0 + 8001); /* the write took 2 ms */
    unpark(&a.park);
    job_join(&a);
    idm__snowflake_test_hook = NULL;
    CHECK(a.rc == IDM_ELEASE, "a mint whose state write ended past the wall deadline returned %s",
          idm_err_name(a.rc));
    free(a.ids);
    idm_snowflake_close(g);
    idm_layout_free(layout);
    sclock_free(&c);
    idm_test_rmtree(dir);
    free(dir);
    free(path);
}

/* ---- item 5: the policy is decided afresh after a failed CAS ---- */

/* B reserves two ticks ahead (a batch) and sleeps; A finds the word ahead,
 * decides to wait, and is parked before its CAS; B's wait runs out and it
 * gives its states back; A's CAS fails and it retries on a state that is
 * not ahead of the clock at all. Before the fix A kept its stale decision:
 * it slept for nothing and failed with a spurious IDM_EEXHAUSTED. */
static void fresh_decision_after_give_back(void **unused)
{
    sclock c;
    idm_layout *layout;
    idm_snowflake *g;
    idm_snowflake_opts o;
    uint64_t id;
    job a, b;
    int64_t sleeps;
    (void)unused;
    sclock_init(&c, T0, false); /* the wall clock stands still */
    IDM_ASSERT_OK(idm_layout_parse(&layout, "time:41@1ms,worker:10,seq:2", T0 - 100000));
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    o.clock = &c.clock;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 3));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id)); /* T0, seq 0 */
    idm__snowflake_test_hook = hook;
    job_start(&b, g, 8, "sleep"); /* 8 ids: up to T0 + 2, wait ~2 ms */
    wait_parked(&b.park, "sleep");
    job_start(&a, g, 1, "before-cas");
    wait_parked(&a.park, "before-cas");
    unpark(&b.park);
    job_join(&b);
    IDM_ASSERT_RC(b.rc, IDM_EEXHAUSTED); /* the clock never got there */
    sleeps = idm_manual_clock_sleeps(c.mc);
    unpark(&a.park);
    job_join(&a);
    idm__snowflake_test_hook = NULL;
    CHECK(a.rc == 0, "after the give-back the mint returned %s; detail: %s", idm_err_name(a.rc),
          idm_error_detail());
    CHECK(idm_manual_clock_sleeps(c.mc) == sleeps, "the mint slept %lld times for nothing",
          LL(idm_manual_clock_sleeps(c.mc) - sleeps));
    CHECK(a.ids[0] > id, "not increasing");
    free(a.ids);
    free(b.ids);
    idm_snowflake_close(g);
    idm_layout_free(layout);
    sclock_free(&c);
}

/* ---- item 3: a forked child cannot mint its parent's ids ---- */

static void forked_child_refuses(void **unused)
{
    char *dir = idm_test_tmpdir(), *state = idm_test_path(dir, "state"), url[600];
    idm_layout *layout;
    idm_lease_opts lo;
    idm_lease *lease, *other = NULL;
    idm_snowflake_opts o;
    idm_snowflake *g, *g2 = NULL;
    uint64_t id, ids[4];
    int fds[2], rcs[5], status;
    pid_t pid;
    (void)unused;
    snprintf(url, sizeof url, "file://%s", dir);
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.max_workers = 1;
    IDM_ASSERT_OK(idm_lease_open(&lease, &lo));
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    o.guarded = true;
    o.after_ms = idm_lease_mark(lease);
    o.state_path = state;
    o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 0));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", idm_lease_worker(lease)));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_lease_attach(lease, g));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20);
        close(fds[0]);
        rcs[0] = idm_snowflake_next(g, &id);
        rcs[1] = idm_snowflake_next_batch(g, ids, 4);
        rcs[2] = idm_snowflake_guard(g, INT64_MAX, INT64_MAX, INT64_MAX / 2);
        rcs[3] = idm_lease_close(lease);
        rcs[4] = idm_snowflake_close(g);
        if (write(fds[1], rcs, sizeof rcs) != (ssize_t)sizeof rcs)
            _exit(3);
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], rcs, sizeof rcs), (ssize_t)sizeof rcs);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    CHECK(rcs[0] == IDM_EFORKED, "next in a child returned %s", idm_err_name(rcs[0]));
    CHECK(rcs[1] == IDM_EFORKED, "next_batch in a child returned %s", idm_err_name(rcs[1]));
    CHECK(rcs[2] == IDM_EFORKED, "guard in a child returned %s", idm_err_name(rcs[2]));
    CHECK(rcs[3] == IDM_EFORKED, "lease close in a child returned %s", idm_err_name(rcs[3]));
    CHECK(rcs[4] == IDM_EFORKED, "generator close in a child returned %s", idm_err_name(rcs[4]));
    CHECK(strstr(idm_strerror(IDM_EFORKED), "per process") != NULL, "message: %s",
          idm_strerror(IDM_EFORKED));
    /* The parent still holds everything the child's copies were of: the
     * worker id (the only one), the state file's lock, and it mints on. */
    IDM_ASSERT_RC(idm_lease_open(&other, &lo), IDM_EBUSY);
    o.after_ms = -1;
    IDM_ASSERT_RC(idm_snowflake_open(&g2, &o), IDM_EBUSY);
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    IDM_ASSERT_OK(idm_lease_close(lease));
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(layout);
    idm_test_rmtree(dir);
    free(dir);
    free(state);
}

/* ---- item 7: edges ---- */

static void drift_and_wait_bounds(void **unused)
{
    idm_layout *layout;
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 0));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 0));
    o.max_drift_ms = INT64_MAX / 1000; /* times 1e6 overflowed */
    IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "max_drift_ms") != NULL, "detail: %s", idm_error_detail());
    o.max_drift_ms = 86400001;
    IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EINVAL);
    o.max_drift_ms = 86400000;
    o.max_wait_ms = INT64_MAX;
    IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "max_wait_ms") != NULL, "detail: %s", idm_error_detail());
    o.max_wait_ms = 86400000;
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    idm_snowflake_close(g);
    idm_layout_free(layout);
}

/* The guard reads CLOCK_MONOTONIC_COARSE: the margin must be at least 10 ms
 * plus twice its resolution (a kernel tick). */
static void margin_covers_coarse_clock(void **unused)
{
    char *dir = idm_test_tmpdir(), url[600];
    struct timespec res;
    int64_t res_ms, min_ms;
    idm_lease_opts lo;
    idm_lease *l = NULL;
    (void)unused;
    assert_int_equal(clock_getres(CLOCK_MONOTONIC_COARSE, &res), 0);
    res_ms = ((int64_t)res.tv_sec * 1000000000 + res.tv_nsec + MS - 1) / MS;
    min_ms = 10 + 2 * res_ms;
    printf("  CLOCK_MONOTONIC_COARSE resolution %lld ns: minimum margin %lld ms\n",
           LL((int64_t)res.tv_sec * 1000000000 + res.tv_nsec), LL(min_ms));
    snprintf(url, sizeof url, "file://%s", dir);
    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.margin_ms = min_ms - 1;
    IDM_ASSERT_RC(idm_lease_open(&l, &lo), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "resolution") != NULL, "detail: %s", idm_error_detail());
    lo.margin_ms = 10; /* the old minimum */
    IDM_ASSERT_RC(idm_lease_open(&l, &lo), IDM_EINVAL);
    lo.margin_ms = min_ms;
    IDM_ASSERT_OK(idm_lease_open(&l, &lo));
    IDM_ASSERT_OK(idm_lease_close(l));
    /* An injected clock is read exactly: 10 ms stands. */
    {
        idm_manual_clock *mc;
        IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, true));
        lo.clock = idm_manual_clock_clock(mc);
        lo.margin_ms = 10;
        IDM_ASSERT_OK(idm_lease_open(&l, &lo));
        IDM_ASSERT_OK(idm_lease_close(l));
        idm_manual_clock_free(mc);
    }
    idm_test_rmtree(dir);
    free(dir);
}

/* A generator whose only mint was in tick 0 (the epoch is now): close must
 * record that tick, or the next holder mints it again. */
static void first_mint_in_tick_zero(void **unused)
{
    fx f;
    holder h;
    (void)unused;
    fx_init(&f, "time:41@1ms,worker:10,seq:12", T0, T0);
    holder_open(&f, &h, NULL, 0);
    mint1(&f, &h);
    holder_close(&h);
    second_holder_checks(&f);
    fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(close_while_parked_before_cas),
        cmocka_unit_test(close_while_retrying_cas),
        cmocka_unit_test(close_while_in_raise_limit),
        cmocka_unit_test(close_while_waiting),
        cmocka_unit_test(deadline_after_second_read),
        cmocka_unit_test(deadline_during_wait),
        cmocka_unit_test(deadline_after_state_write),
        cmocka_unit_test(fresh_decision_after_give_back),
        cmocka_unit_test(forked_child_refuses),
        cmocka_unit_test(drift_and_wait_bounds),
        cmocka_unit_test(margin_covers_coarse_clock),
        cmocka_unit_test(first_mint_in_tick_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
