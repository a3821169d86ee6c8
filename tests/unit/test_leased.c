/* SPDX-License-Identifier: MIT */
/*
 * Leased generators (leased.h) on the file:// coordinator: a restart that
 * resumes its claim (E12 for file://), a loss and the re-claim after it
 * (E4 for file://: the lock file removed), a clock step back under the
 * change-worker policy (C15), the claim files two processes share, and bad
 * options. The same behaviours on etcd, ZooKeeper and PostgreSQL are shown
 * by the CLI tests (tests/cli/test_fleet_*.sh).
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/leased.h>

#include "testutil.h"
#include "leasetest.h"

typedef struct fixture {
    leasetest_dir t;
    char *state;
    idm_layout *layout;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->t = leasetest_begin();
    f->state = idm_test_path(f->t.dir, "state");
    IDM_ASSERT_OK(idm_layout_preset(&f->layout, "twitter"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    idm_layout_free(f->layout);
    free(f->state);
    leasetest_end(&f->t);
    free(f);
    return 0;
}

static void opts_for(idm_leased_opts *o, fixture *f, const idm_clock *clock)
{
    char *leases = idm_test_path(f->t.dir, "leases");
    static char url[1024];
    snprintf(url, sizeof url, "file://%s", leases);
    free(leases);
    idm_leased_opts_init(o);
    o->lease.url = url;
    o->lease.ttl_ms = 1500;
    o->gen.layout = f->layout;
    o->gen.clock = clock;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o->gen, "datacenter", 1));
    o->field = "worker";
    o->state_dir = f->state;
    o->reclaim = true;
}

static uint32_t worker_of(uint64_t id)
{
    return (uint32_t)((id >> 12) & 31);
}

/* No id twice, and the ids of each worker id strictly increasing in the
 * order they were minted. */
static void check_fleet_ids(const idm_test_idvec *iv)
{
    uint64_t last[32] = {0};
    leasetest_no_duplicates(iv);
    for (size_t i = 0; i < iv->n; i++) {
        uint32_t w = worker_of(iv->v[i]);
        assert_true(iv->v[i] > last[w]);
        last[w] = iv->v[i];
    }
}

/* A clean run: claimed, minted, released, and its claim file gone, so the
 * next run claims anew (no wait: the mark released is the exact last
 * tick). */
static void test_clean_runs(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *lg;
    idm_leased_status st;
    uint64_t a, b;
    opts_for(&o, f, NULL);
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.origin, IDM_LEASED_CLAIMED);
    assert_true(st.minting);
    IDM_ASSERT_OK(idm_leased_next(lg, &a));
    IDM_ASSERT_OK(idm_leased_close(lg));
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.origin, IDM_LEASED_CLAIMED);
    IDM_ASSERT_OK(idm_leased_next(lg, &b));
    assert_true(b > a);
    assert_int_equal(worker_of(a), worker_of(b));
    IDM_ASSERT_OK(idm_leased_close(lg));
}

/* Two at once from one state directory: two claim files, two worker ids. */
static void test_two_at_once(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *a, *b;
    uint64_t x, y;
    opts_for(&o, f, NULL);
    IDM_ASSERT_OK(idm_leased_open(&a, &o));
    IDM_ASSERT_OK(idm_leased_open(&b, &o));
    IDM_ASSERT_OK(idm_leased_next(a, &x));
    IDM_ASSERT_OK(idm_leased_next(b, &y));
    assert_int_not_equal(worker_of(x), worker_of(y));
    IDM_ASSERT_OK(idm_leased_close(a));
    IDM_ASSERT_OK(idm_leased_close(b));
}

/* E12 (file://): a holder killed with SIGKILL, restarted at once: the same
 * worker id, resumed (no new claim, no wait for the coordinator's mark),
 * every id above the dead holder's. */
static void test_restart_resumes(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *lg;
    idm_leased_status st;
    int p[2], status;
    uint64_t last = 0, id;
    pid_t pid;
    opts_for(&o, f, NULL);
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t v = 0;
        close(p[0]);
        if (idm_leased_open(&lg, &o) != 0)
            _exit(3);
        for (int i = 0; i < 20000; i++)
            if (idm_leased_next(lg, &v) != 0)
                _exit(4);
        if (write(p[1], &v, sizeof v) != (ssize_t)sizeof v)
            _exit(5);
        raise(SIGKILL);
        _exit(6);
    }
    close(p[1]);
    assert_int_equal(read(p[0], &last, sizeof last), (ssize_t)sizeof last);
    close(p[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.origin, IDM_LEASED_REATTACHED);
    assert_int_equal(st.worker, worker_of(last));
    IDM_ASSERT_OK(idm_leased_next(lg, &id));
    assert_true(id > last);
    assert_int_equal(worker_of(id), worker_of(last));
    IDM_ASSERT_OK(idm_leased_close(lg));
}

/* E4 (file://): the lock file removed under a live holder: the renewal
 * finds the claim lost, the supervisor re-claims another worker id (never
 * the lost one again in this process), and minting goes on under it; every
 * id unique and increasing per worker id. */
/* Take worker id w from the leased generator lg (its lock file removed, as
 * an operator or a lost claim would), then mint until an id comes under
 * another worker id; every id minted goes to iv. Until then the ids under w
 * keep increasing above *last (updated) and every refusal is IDM_ELEASE; no
 * re-claim within within_ms fails the test. The first id under the new worker id. */
static uint64_t lose_worker(fixture *f, idm_leased *lg, uint32_t w, idm_test_idvec *iv,
                            uint64_t *last, int64_t within_ms)
{
    char name[64], *rec;
    int64_t start;
    uint64_t id;
    snprintf(name, sizeof name, "leases/worker-%04u.lease", (unsigned)w);
    rec = idm_test_path(f->t.dir, name);
    assert_int_equal(unlink(rec), 0);
    free(rec);
    start = leasetest_mono_ms();
    for (;;) {
        int rc = idm_leased_next(lg, &id);
        if (rc == 0) {
            idm_test_idvec_push(iv, id);
            if (worker_of(id) != w)
                return id;
            assert_true(id > *last);
            *last = id;
        } else {
            /* A loss with a re-claim to come is no refusal: the mint
             * waits for the new worker id (from the moment the lease is
             * marked lost, before its guard drops). */
            fail_msg("worker id %u lost: a mint was refused (%s: %s) instead of waiting for "
                     "the re-claim",
                     (unsigned)w, idm_err_name(rc), idm_error_detail());
        }
        if (leasetest_mono_ms() - start > within_ms) {
            idm_leased_status st;
            idm_leased_status_get(lg, &st);
            fail_msg("worker id %u taken: no re-claim in %lld ms (%s)", (unsigned)w,
                     (long long)within_ms, st.last_detail);
        }
    }
}

static void test_loss_reclaims(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *lg;
    idm_leased_status st;
    idm_test_idvec iv = {0};
    uint64_t id, last_old = 0, first_new = 0;
    uint32_t w0;
    opts_for(&o, f, NULL);
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    idm_leased_status_get(lg, &st);
    w0 = st.worker;
    for (int i = 0; i < 1000; i++) {
        IDM_ASSERT_OK(idm_leased_next(lg, &id));
        idm_test_idvec_push(&iv, id);
        last_old = id;
    }
    assert_int_equal(w0, 0);
    first_new = lose_worker(f, lg, w0, &iv, &last_old, 20000);
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.losses, 1);
    assert_int_equal(st.reclaims, 1);
    assert_int_not_equal(st.worker, w0);
    assert_int_equal(worker_of(first_new), st.worker);
    /* Nothing more under the lost id once the new one mints. */
    for (int i = 0; i < 1000; i++) {
        IDM_ASSERT_OK(idm_leased_next(lg, &id));
        assert_int_equal(worker_of(id), st.worker);
        idm_test_idvec_push(&iv, id);
    }
    check_fleet_ids(&iv);
    idm_test_idvec_free(&iv);
    IDM_ASSERT_OK(idm_leased_close(lg));
}

/* F5, found by the whole-system fault suite: a process that lost claims
 * one after another. Each re-claim meets the ids it held before first (the
 * coordinator hands out the lowest free id, and a lost id's record is
 * free again); those are never taken again, and skipping them must not use
 * up the claims it may try (max_tries), or after max_tries losses it could
 * never mint again although most ids are free. */
static void test_reclaims_past_held_ids(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *lg;
    idm_leased_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    opts_for(&o, f, NULL);
    o.max_tries = 2;
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    for (uint32_t loss = 0; loss < 5; loss++) {
        uint64_t last = 0;
        uint32_t w;
        idm_leased_status_get(lg, &st);
        w = st.worker;
        assert_int_equal(w, loss); /* the lowest id it never held */
        IDM_ASSERT_OK(idm_leased_next(lg, &id));
        idm_test_idvec_push(&iv, id);
        last = id;
        (void)lose_worker(f, lg, w, &iv, &last, 10000);
    }
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.losses, 5);
    assert_int_equal(st.reclaims, 5);
    assert_int_equal(st.worker, 5);
    check_fleet_ids(&iv);
    idm_test_idvec_free(&iv);
    IDM_ASSERT_OK(idm_leased_close(lg));
}

/* C15: the clock stepped back 10 s under the change-worker policy: minting
 * goes on at once under another worker id (its mark behind the clock), no
 * duplicate, and the old id's mark still covers every id minted under it. */
static void test_change_worker(void **state)
{
    fixture *f = *state;
    idm_manual_clock *mc;
    idm_leased_opts o;
    idm_leased *lg;
    idm_leased_status st;
    idm_test_idvec iv = {0};
    idm_lease_entry *e = NULL;
    size_t n = 0;
    uint64_t id;
    idm_unix_ms last_old_ms = 0;
    uint32_t w0;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, leasetest_wall_ms(), true));
    opts_for(&o, f, idm_manual_clock_clock(mc));
    o.gen.backwards = IDM_BACKWARDS_CHANGE_WORKER;
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    idm_leased_status_get(lg, &st);
    w0 = st.worker;
    for (int i = 0; i < 100; i++) {
        IDM_ASSERT_OK(idm_leased_next(lg, &id));
        idm_test_idvec_push(&iv, id);
        idm_manual_clock_advance(mc, 1);
    }
    last_old_ms = leasetest_time_of(f->layout, id);
    idm_manual_clock_advance(mc, -10000);
    IDM_ASSERT_OK(idm_leased_next(lg, &id));
    assert_int_not_equal(worker_of(id), w0);
    idm_test_idvec_push(&iv, id);
    for (int i = 0; i < 100; i++) {
        IDM_ASSERT_OK(idm_leased_next(lg, &id));
        assert_int_not_equal(worker_of(id), w0);
        idm_test_idvec_push(&iv, id);
    }
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.changes, 1);
    assert_int_equal(st.reclaims, 1);
    check_fleet_ids(&iv);
    idm_test_idvec_free(&iv);
    /* The old id was released with its mark: at or past its last id. */
    IDM_ASSERT_OK(idm_lease_list(o.lease.url, 32, &e, &n));
    {
        bool seen = false;
        for (size_t i = 0; i < n; i++)
            if (e[i].worker == w0) {
                seen = true;
                assert_false(e[i].held);
                assert_true(e[i].mark_ms >= last_old_ms);
            }
        assert_true(seen);
    }
    free(e);
    IDM_ASSERT_OK(idm_leased_close(lg));
    idm_manual_clock_free(mc);
}

/* C15 with no usable worker id: with every other id held, the change
 * fails ("no free worker id"); with the only free one's mark ahead of the
 * stepped-back clock, it fails for that; each failure is counted, mints
 * keep being refused for the clock under the old id. Once an id whose mark
 * is behind the clock is free, the next try (after ttl/3) changes to it. */
static void test_change_worker_none_free(void **state)
{
    fixture *f = *state;
    idm_manual_clock *mc;
    idm_layout *four = NULL;
    idm_leased_opts o;
    idm_leased *lg;
    idm_leased_status st;
    idm_lease_opts lo;
    idm_lease *held[3] = {NULL, NULL, NULL};
    idm_snowflake *g1 = NULL;
    idm_snowflake_opts go;
    char scope[IDM_LEASE_SCOPE_MAX];
    uint64_t id;
    int rc;
    IDM_ASSERT_OK(idm_layout_parse(&four, "time:41@1ms,worker:2,seq:12", 1288834974657));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, leasetest_wall_ms(), true));
    opts_for(&o, f, idm_manual_clock_clock(mc));
    o.gen.layout = four;
    memset(o.gen.node, 0, sizeof o.gen.node);
    o.gen.node_set = 0;
    o.gen.backwards = IDM_BACKWARDS_CHANGE_WORKER;
    o.switch_wait_ms = 200;
    IDM_ASSERT_OK(idm_leased_open(&lg, &o));
    IDM_ASSERT_OK(idm_leased_next(lg, &id));
    /* Ids 1, 2 and 3 held by other claimants; 1 mints (its mark will be
     * ahead of the clock once it is stepped back). */
    IDM_ASSERT_OK(idm_lease_scope(four, "worker", scope, sizeof scope));
    idm_lease_opts_init(&lo);
    lo.url = o.lease.url;
    lo.ttl_ms = 1500;
    lo.scope = scope;
    idm_snowflake_opts_init(&go);
    go.layout = four;
    go.clock = idm_manual_clock_clock(mc);
    IDM_ASSERT_OK(idm_lease_start(&held[0], &g1, &lo, &go, "worker"));
    assert_int_equal(idm_lease_worker(held[0]), 1);
    IDM_ASSERT_OK(idm_snowflake_next(g1, &id));
    lo.max_workers = 4;
    lo.clock = idm_manual_clock_clock(mc);
    IDM_ASSERT_OK(idm_lease_open(&held[1], &lo));
    IDM_ASSERT_OK(idm_lease_open(&held[2], &lo));
    idm_manual_clock_advance(mc, 5);

    idm_manual_clock_advance(mc, -10000);
    assert_int_equal(idm_leased_next(lg, &id), IDM_ECLOCKBACK);
    /* The supervisor's try may outlast the mint's switch_wait_ms on a
     * loaded machine: its failure is counted when it ends. */
    idm_leased_status_get(lg, &st);
    for (int i = 0; i < 200 && st.switch_failures == 0; i++) {
        leasetest_sleep_ms(25);
        idm_leased_status_get(lg, &st);
    }
    assert_int_equal(st.worker, 0);
    assert_int_equal(st.changes, 0);
    assert_int_equal(st.switch_failures, 1);
    assert_int_equal(st.last_error, IDM_EBUSY); /* "no free worker id" */

    /* Id 1 released with its mark (ahead of the clock now): free, not
     * usable. */
    IDM_ASSERT_OK(idm_lease_close(held[0]));
    idm_snowflake_close(g1);
    for (int i = 0; i < 100 && st.switch_failures < 2; i++) {
        assert_int_equal(idm_leased_next(lg, &id), IDM_ECLOCKBACK);
        idm_leased_status_get(lg, &st);
        leasetest_sleep_ms(50);
    }
    assert_int_equal(st.switch_failures, 2);
    assert_int_equal(st.last_error, IDM_ECLOCKBACK);
    assert_non_null(strstr(st.last_detail, "mark behind the clock"));
    assert_int_equal(st.worker, 0);

    /* Id 2 released with no mark: the next try changes to it. */
    IDM_ASSERT_OK(idm_lease_close(held[1]));
    for (int i = 0; i < 100; i++) {
        rc = idm_leased_next(lg, &id);
        if (rc == 0)
            break;
        assert_int_equal(rc, IDM_ECLOCKBACK);
        leasetest_sleep_ms(50);
    }
    IDM_ASSERT_OK(rc);
    idm_leased_status_get(lg, &st);
    assert_int_equal(st.worker, 2);
    assert_int_equal(st.changes, 1);
    assert_int_equal((id >> 12) & 3, 2);
    IDM_ASSERT_OK(idm_lease_close(held[2]));
    IDM_ASSERT_OK(idm_leased_close(lg));
    idm_layout_free(four);
    idm_manual_clock_free(mc);
}

/* The change-worker policy needs a leased generator; bad options are named
 * and hold nothing. */
static void test_bad_options(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *lg = NULL;
    idm_snowflake *g = NULL;
    idm_snowflake_opts so;
    idm_snowflake_opts_init(&so);
    so.layout = f->layout;
    so.backwards = IDM_BACKWARDS_CHANGE_WORKER;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&so, "datacenter", 0));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&so, "worker", 0));
    assert_int_equal(idm_snowflake_open(&g, &so), IDM_EINVAL);
    assert_non_null(strstr(idm_error_detail(), "change-worker"));

    opts_for(&o, f, NULL);
    o.field = "sequence";
    assert_int_equal(idm_leased_open(&lg, &o), IDM_EINVAL);
    assert_null(lg);
    opts_for(&o, f, NULL);
    o.field = "worker+datacenter"; /* not in the layout's order */
    assert_int_equal(idm_leased_open(&lg, &o), IDM_EINVAL);
    assert_non_null(strstr(idm_error_detail(), "layout's order"));
    o.field = "datacenter+datacenter";
    assert_int_equal(idm_leased_open(&lg, &o), IDM_EINVAL);
    o.field = "datacenter+";
    assert_int_equal(idm_leased_open(&lg, &o), IDM_EINVAL);
    assert_null(lg);
    opts_for(&o, f, NULL);
    o.state_dir = "relative/dir";
    assert_int_equal(idm_leased_open(&lg, &o), IDM_EINVAL);
    assert_non_null(strstr(idm_error_detail(), "absolute"));
}

/* Two node fields leased together: one worker id spans both, the last
 * field taking its low digits; each run at once its own pair. */
static void test_fields_together(void **state)
{
    fixture *f = *state;
    idm_leased_opts o;
    idm_leased *a, *b;
    idm_decoded da, db;
    uint64_t x, y;
    opts_for(&o, f, NULL);
    memset(o.gen.node, 0, sizeof o.gen.node);
    o.gen.node_set = 0;
    o.field = "datacenter+worker";
    IDM_ASSERT_OK(idm_leased_open(&a, &o));
    IDM_ASSERT_OK(idm_leased_open(&b, &o));
    IDM_ASSERT_OK(idm_leased_next(a, &x));
    IDM_ASSERT_OK(idm_leased_next(b, &y));
    IDM_ASSERT_OK(idm_layout_decode(f->layout, x, &da));
    IDM_ASSERT_OK(idm_layout_decode(f->layout, y, &db));
    /* Worker ids 0 and 1: datacenter 0, workers 0 and 1. */
    assert_int_equal(da.value[1] + db.value[1], 0);
    assert_int_equal(da.value[2] + db.value[2], 1);
    IDM_ASSERT_OK(idm_leased_close(a));
    IDM_ASSERT_OK(idm_leased_close(b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_resumes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loss_reclaims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaims_past_held_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_change_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fields_together, setup, teardown),
        cmocka_unit_test_setup_teardown(test_change_worker_none_free, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
