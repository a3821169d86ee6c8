/* SPDX-License-Identifier: MIT */
/*
 * Resuming a zk:// claim after a crash: the backend's handle and reattach
 * ops (backend.h), called directly, against a real standalone ZooKeeper
 * server this program starts with scripts/zk-test-server.sh (stopped in
 * the group's teardown and at exit; the script's watcher kills it if this
 * program dies). Each claim is made in a child process that tells its
 * worker id, handle (the session's id and password) and last mark through
 * a pipe and is then killed with SIGKILL: a real crash, its session left
 * for the server to expire. Then this process, with new handles:
 *   - reattaches at once: the same worker id, the claim moved to a new
 *     session (a new node, so a new generation and handle), the mark kept,
 *     then renews and releases, and the id is free (Z3, E12);
 *   - resumes a saved claim once: the same handle again is IDM_ELEASE, the
 *     first reattach still renewing; two copies racing, one wins (Z3r);
 *   - reattaches while the holder that saved the handle is alive: its next
 *     renewal finds the claim lost (IDM_ELEASE), and through the lease
 *     layer its generator stops (H5r);
 *   - finds the session expired while the holder was dead: IDM_ELEASE,
 *     nothing changed (Z2), also once another holder has the id;
 *   - finds the worker node another session's (deleted by hand and claimed
 *     again): IDM_ELEASE, the other holder untouched (E4);
 *   - gives garbled handles (IDM_EINVAL, the handle never shown) or a handle
 *     with another worker id (IDM_ELEASE), after which the saved claim
 *     still resumes: a refused reattach changes nothing;
 *   - finds the server frozen (SIGSTOP) or stopped: IDM_EIO (never
 *     IDM_ELEASE) within the bound, and the claim resumes once it is back
 *     (E2);
 *   - asks for another scope than the one recorded: refused with
 *     IDM_EINVAL, nothing changed.
 *
 * IDM_TEST_FILTER (a cmocka pattern) runs only the tests whose names match.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"
#include "backend.h"
#include "zktest.h"
#include "zookeeper_internal.h"

static zktest_server g_srv;
static zktest_conn *g_c; /* the test's own session, see conn() */

static const idm__lease_backend *const zk = &idm__lease_zk;

/* ------------------------------------------------------------- helpers */

/* The test's session, made when first needed; dropped before each fork: a
 * process that forks with threads running may not start any in the child
 * (ThreadSanitizer refuses it). */
static zktest_conn *conn(void)
{
    if (g_c == NULL)
        g_c = zktest_connect(g_srv.eps);
    return g_c;
}

static void conn_drop(void)
{
    zktest_close(g_c);
    g_c = NULL;
}

static char *url_for(const char *name)
{
    return leasetest_url_for("zk", g_srv.eps, name);
}

static char *path_of(const char *name, const char *kind, uint32_t id)
{
    char *p = malloc(256);
    assert_non_null(p);
    if (kind == NULL)
        snprintf(p, 256, "/idmint/%s/scope", name);
    else
        snprintf(p, 256, "/idmint/%s/%s/%u", name, kind, (unsigned)id);
    return p;
}

/* A backend handle on url (the part after zk://), asking for ttl_ms. */
static void *be_open(const char *url, int64_t ttl_ms)
{
    idm_lease_opts o;
    void *be = NULL;
    idm_lease_opts_init(&o);
    o.url = url;
    o.ttl_ms = ttl_ms;
    IDM_ASSERT_OK(zk->open(&be, url + strlen("zk://"), &o));
    assert_non_null(be);
    return be;
}

/* What a crashed holder left behind, as a restart would find it saved. */
typedef struct saved {
    int rc;                /* its claim's result: 0 */
    uint32_t worker;
    uint64_t generation;
    idm_unix_ms mark;      /* the mark its last renewal recorded */
    int64_t granted;
    char handle[IDM_LEASE_HANDLE_MAX];
} saved;

/* A holder process: claims one of max ids at url (ttl_ms, scope), renews
 * once with a higher mark, sends what it saved through a pipe, and waits to
 * be killed with SIGKILL: a crash, with no release and its connection left
 * for the kernel to close. */
static saved crashed_holder(const char *url, int64_t ttl_ms, uint32_t max, const char *scope)
{
    saved s;
    int p[2], status;
    pid_t pid;
    conn_drop();
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        void *be = NULL;
        idm_unix_ms prev = 0, rec = 0;
        idm_lease_opts o;
        close(p[0]);
        memset(&s, 0, sizeof s);
        idm_lease_opts_init(&o);
        o.url = url;
        o.ttl_ms = ttl_ms;
        s.rc = zk->open(&be, url + strlen("zk://"), &o);
        if (s.rc == 0)
            s.rc = zk->claim(be, max, ttl_ms, "crashed", scope, leasetest_wall_ms() + ttl_ms,
                             &s.worker, &prev, &rec, &s.granted);
        s.mark = leasetest_wall_ms() + ttl_ms + 500;
        if (s.rc == 0)
            s.rc = zk->renew(be, s.mark, &s.granted);
        if (s.rc == 0)
            s.rc = zk->handle(be, s.handle, sizeof s.handle);
        if (s.rc == 0)
            s.generation = zk->generation(be);
        if (write(p[1], &s, sizeof s) != (ssize_t)sizeof s)
            _exit(5);
        for (;;)
            pause(); /* until killed: no atexit, the servers stay */
    }
    close(p[1]);
    assert_int_equal(read(p[0], &s, sizeof s), (ssize_t)sizeof s);
    close(p[0]);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    IDM_ASSERT_OK(s.rc);
    return s;
}

/* The session id a handle names (its first 16 hex digits). */
static int64_t session_of(const char *handle)
{
    char id[17];
    memcpy(id, handle, 16);
    id[16] = '\0';
    return (int64_t)strtoull(id, NULL, 16);
}

/* A detail must never show the session's password (the handle's tail). */
static void password_not_shown(const char *handle)
{
    CHECK(strstr(idm_error_detail(), handle + 17) == NULL, "the password shows: %s",
          idm_error_detail());
}

/* Reattach on a new handle (into *be; the caller closes it). */
static int reattach(void **be, const char *url, int64_t ttl_ms, uint32_t worker,
                    const char *handle, const char *scope, idm_unix_ms *rec, int64_t *granted)
{
    *be = be_open(url, ttl_ms);
    *rec = -1;
    *granted = -1;
    return zk->reattach(*be, worker, handle, ttl_ms, "restarted", scope,
                        leasetest_wall_ms() + ttl_ms, rec, granted);
}

/* A claim on a new handle: 0 and the worker id, or the error. */
static int claim(void **be, const char *url, int64_t ttl_ms, uint32_t max, const char *scope,
                 uint32_t *worker, idm_unix_ms *prev)
{
    idm_unix_ms rec;
    int64_t granted;
    *be = be_open(url, ttl_ms);
    return zk->claim(*be, max, ttl_ms, "other", scope, leasetest_wall_ms() + ttl_ms, worker, prev,
                     &rec, &granted);
}

/* What reattach must leave alone: the worker node (owner, data and its
 * version), the mark (value and version), the scope. */
typedef struct snap {
    int64_t owner, czxid;
    int32_t wversion, hversion;
    char wdata[64], mark[32], scope[IDM_LEASE_SCOPE_MAX];
} snap;

static void snap_take(snap *s, const char *name, uint32_t id)
{
    char *w = path_of(name, "workers", id), *h = path_of(name, "hwm", id);
    char *sc = path_of(name, NULL, 0);
    memset(s, 0, sizeof *s);
    s->owner = s->czxid = -1;
    (void)zktest_get(conn(), w, s->wdata, sizeof s->wdata, &s->owner, &s->czxid);
    (void)zktest_get(conn(), h, s->mark, sizeof s->mark, NULL, NULL);
    (void)zktest_get(conn(), sc, s->scope, sizeof s->scope, NULL, NULL);
    s->wversion = zktest_version(conn(), w);
    s->hversion = zktest_version(conn(), h);
    free(w);
    free(h);
    free(sc);
}

static void snap_same(const snap *a, const snap *b)
{
    CHECK(a->owner == b->owner && a->czxid == b->czxid && a->wversion == b->wversion &&
              strcmp(a->wdata, b->wdata) == 0,
          "the worker node changed: owner %llx -> %llx, version %d -> %d, '%s' -> '%s'",
          ULL(a->owner), ULL(b->owner), a->wversion, b->wversion, a->wdata, b->wdata);
    CHECK(a->hversion == b->hversion && strcmp(a->mark, b->mark) == 0,
          "the mark changed: %s (version %d) -> %s (version %d)", a->mark, a->hversion, b->mark,
          b->hversion);
    CHECK(strcmp(a->scope, b->scope) == 0, "the scope changed");
}

static void scope_a(char *s)
{
    idm_test_scope_of("twitter", NULL, 0, "worker", s);
}

static uint64_t requests_sent(void)
{
    uint64_t rt, rq;
    idm__zk_counters(&rt, &rq);
    return rq;
}

static uint64_t round_trips(void)
{
    uint64_t rt, rq;
    idm__zk_counters(&rt, &rq);
    return rt;
}

/* ---------------------------------------------------------------- tests */

/* Z3, E12: a holder killed with kill -9 and restarted at once reattaches
 * with its saved handle: the same worker id, its node moved to a session of
 * the restart's own (a new node: a new czxid, the generation, and a new
 * handle, what the next restart needs), a mark at or above the dead
 * holder's, with two requests' round trips (a read, then the moving multi;
 * besides them the new session's handshake); then it renews and releases
 * as after a claim, and the id is free for the next claimant at once,
 * above every mark. */
static void z3_e12_reattach_at_once(void **unused)
{
    char *url = url_for("r1"), *w = path_of("r1", "workers", 0), *h = path_of("r1", "hwm", 0);
    char scope[IDM_LEASE_SCOPE_MAX], again[IDM_LEASE_HANDLE_MAX], buf[64];
    saved s;
    void *be, *next;
    idm_unix_ms rec, prev, mark2;
    int64_t granted, owner = 0, czxid = 0, t0;
    uint64_t rt0;
    uint32_t worker = 99;
    (void)unused;
    scope_a(scope);
    s = crashed_holder(url, 2000, 1, scope);
    assert_int_equal(s.worker, 0);
    CHECK(strlen(s.handle) == 49 && s.handle[16] == '-', "handle '%.*s...'", 17, s.handle);
    t0 = leasetest_mono_ns();
    rt0 = round_trips();
    IDM_ASSERT_OK(reattach(&be, url, 2000, s.worker, s.handle, scope, &rec, &granted));
    printf("  Z3: reattached in %lld us: %llu requests' round trips, with a session's "
           "handshake\n",
           LL((leasetest_mono_ns() - t0) / 1000), ULL(round_trips() - rt0));
    assert_int_equal(round_trips() - rt0, 2);
    CHECK(rec >= s.mark, "recorded %lld below the dead holder's mark %lld", LL(rec), LL(s.mark));
    assert_int_equal(granted, s.granted);
    CHECK(zk->generation(be) > s.generation, "generation %llu, the saved claim's %llu",
          ULL(zk->generation(be)), ULL(s.generation));
    IDM_ASSERT_OK(zk->handle(be, again, sizeof again));
    CHECK(strlen(again) == 49 && strcmp(again, s.handle) != 0 &&
              session_of(again) != session_of(s.handle),
          "the handle is the saved session's");
    /* A node of the new session, showing the new holder. */
    assert_int_equal(zktest_get(conn(), w, buf, sizeof buf, &owner, &czxid), 0);
    assert_int_equal(owner, session_of(again));
    assert_int_equal((uint64_t)czxid, zk->generation(be));
    assert_string_equal(buf, "restarted");
    assert_int_equal(zktest_get(conn(), h, buf, sizeof buf, NULL, NULL), 0);
    assert_int_equal(strtoll(buf, NULL, 10), rec);
    /* Renewals work on it, and only raise the mark. */
    mark2 = rec + 1000;
    IDM_ASSERT_OK(zk->renew(be, mark2, &granted));
    assert_int_equal(zktest_get(conn(), h, buf, sizeof buf, NULL, NULL), 0);
    assert_int_equal(strtoll(buf, NULL, 10), mark2);
    /* Released: the exact final mark, the node gone with the session. */
    IDM_ASSERT_OK(zk->release(be, mark2 - 10));
    zk->close(be);
    assert_false(zktest_exists(conn(), w));
    assert_int_equal(zktest_get(conn(), h, buf, sizeof buf, NULL, NULL), 0);
    assert_int_equal(strtoll(buf, NULL, 10), mark2 - 10);
    /* The one id is free at once, with that mark. */
    IDM_ASSERT_OK(claim(&next, url, 2000, 1, scope, &worker, &prev));
    assert_int_equal(worker, 0);
    assert_int_equal(prev, mark2 - 10);
    IDM_ASSERT_OK(zk->release(next, prev));
    zk->close(next);
    free(url);
    free(w);
    free(h);
}

/* Z3r: a saved claim resumes once (a state directory copied, or restored
 * from a snapshot, and started twice). After a reattach, the same saved
 * handle again is IDM_ELEASE ("claimed or resumed again since"), nothing
 * changed, the handle's password never shown; the first reattach still
 * renews; and the handle the first reattach gave is what a later restart
 * resumes with. */
static void z3r_resumes_once(void **unused)
{
    char *url = url_for("r7"), *w = path_of("r7", "workers", 0), *h = path_of("r7", "hwm", 0);
    char scope[IDM_LEASE_SCOPE_MAX], h1[IDM_LEASE_HANDLE_MAX], h2[IDM_LEASE_HANDLE_MAX];
    char buf[64];
    saved s;
    snap before, after;
    void *first, *second, *third;
    idm_unix_ms rec, rec2, rec3;
    int64_t granted;
    (void)unused;
    scope_a(scope);
    s = crashed_holder(url, 3000, 1, scope);
    IDM_ASSERT_OK(reattach(&first, url, 3000, s.worker, s.handle, scope, &rec, &granted));
    IDM_ASSERT_OK(zk->handle(first, h1, sizeof h1));
    snap_take(&before, "r7", 0);
    IDM_ASSERT_RC(reattach(&second, url, 3000, s.worker, s.handle, scope, &rec2, &granted),
                  IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "claimed or resumed again since") != NULL, "detail: %s",
          idm_error_detail());
    password_not_shown(s.handle);
    printf("  Z3r: %s\n", idm_error_detail());
    zk->close(second);
    snap_take(&after, "r7", 0);
    snap_same(&before, &after);
    assert_int_equal(after.owner, session_of(h1));
    /* The first goes on. */
    IDM_ASSERT_OK(zk->renew(first, rec + 500, &granted));
    assert_int_equal(zktest_get(conn(), h, buf, sizeof buf, NULL, NULL), 0);
    assert_int_equal(strtoll(buf, NULL, 10), rec + 500);
    /* Its own handle is the one that resumes next (here while it lives: a
     * copy of its state; H5r shows what the first then finds). */
    IDM_ASSERT_OK(reattach(&third, url, 3000, s.worker, h1, scope, &rec3, &granted));
    CHECK(rec3 >= rec + 500, "recorded %lld below the mark %lld", LL(rec3), LL(rec + 500));
    IDM_ASSERT_OK(zk->handle(third, h2, sizeof h2));
    CHECK(strcmp(h2, h1) != 0, "the handle did not change");
    IDM_ASSERT_RC(zk->renew(first, rec3 + 1, &granted), IDM_ELEASE);
    IDM_ASSERT_OK(zk->renew(third, rec3 + 1, &granted));
    IDM_ASSERT_OK(zk->release(third, rec3 + 1));
    zk->close(third);
    zk->close(first);
    assert_false(zktest_exists(conn(), w));
    free(url);
    free(w);
    free(h);
}

/* One of two copies racing to reattach. */
typedef struct racer {
    void *be;
    const char *url, *handle;
    uint32_t worker;
    idm_unix_ms mark, rec;
    int rc;
    char detail[256];
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    int64_t granted;
    r->rc = zk->reattach(r->be, r->worker, r->handle, 3000, "racer", NULL, r->mark, &r->rec,
                         &granted);
    snprintf(r->detail, sizeof r->detail, "%s", r->rc != 0 ? idm_error_detail() : "");
    return NULL;
}

/* Z3r: two copies of one saved claim reattach at the same moment, over and
 * over: each time exactly one wins, the other is IDM_ELEASE (never "unknown"
 * and never both: the multi that moves the claim writes the mark at the
 * version both read), and the holder that saved it finds it lost at its
 * next renewal. */
static void z3r_racing_copies_one_wins(void **unused)
{
    char *url = url_for("r8"), hd[IDM_LEASE_HANDLE_MAX];
    void *orig;
    idm_unix_ms prev;
    uint32_t worker = 99;
    (void)unused;
    for (int round = 0; round < 16; round++) {
        racer r[2];
        pthread_t t[2];
        int64_t granted;
        int wins = 0;
        IDM_ASSERT_OK(claim(&orig, url, 3000, 1, NULL, &worker, &prev));
        IDM_ASSERT_OK(zk->handle(orig, hd, sizeof hd));
        for (int i = 0; i < 2; i++) {
            memset(&r[i], 0, sizeof r[i]);
            r[i].be = be_open(url, 3000);
            r[i].url = url;
            r[i].handle = hd;
            r[i].worker = worker;
            r[i].mark = leasetest_wall_ms() + 3000 + i;
        }
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_join(t[i], NULL), 0);
        for (int i = 0; i < 2; i++) {
            CHECK(r[i].rc == 0 || r[i].rc == IDM_ELEASE, "round %d: copy %d: %s (%s)", round, i,
                  idm_err_name(r[i].rc), r[i].detail);
            wins += r[i].rc == 0;
        }
        CHECK(wins == 1, "round %d: %d copies resumed the claim", round, wins);
        IDM_ASSERT_RC(zk->renew(orig, leasetest_wall_ms() + 3000, &granted), IDM_ELEASE);
        for (int i = 0; i < 2; i++) {
            if (r[i].rc == 0)
                IDM_ASSERT_OK(zk->release(r[i].be, r[i].rec));
            zk->close(r[i].be);
        }
        zk->close(orig);
    }
    printf("  Z3r: 16 races, one winner each\n");
    free(url);
}

/* What a lease's on_renew hook was given last. */
typedef struct keep {
    pthread_mutex_t mu;
    idm_lease_saved sv;
    int n;
} keep;

static int keep_saved(void *ctx, const idm_lease_saved *sv)
{
    keep *k = ctx;
    pthread_mutex_lock(&k->mu);
    k->sv = *sv;
    k->n++;
    pthread_mutex_unlock(&k->mu);
    return 0;
}

/* H5r: a copy reattaches while the holder that saved the handle is alive.
 * On the backend: the copy gets the claim, above the holder's last mark;
 * the holder's next renewal is IDM_ELEASE and its release changes nothing
 * (the copy's node and mark stay). Through the lease layer: a holder
 * minting under a lease whose saved claim (on_renew) a copy reattaches
 * learns at its next renewal that the claim is lost, and its generator
 * refuses from then on. */
static void h5r_reattach_while_holder_alive(void **unused)
{
    char *url = url_for("r9"), *w = path_of("r9", "workers", 0), *h = path_of("r9", "hwm", 0);
    char hd[IDM_LEASE_HANDLE_MAX];
    snap before, after;
    void *orig, *copy;
    idm_unix_ms prev, rec, m1;
    int64_t granted;
    uint32_t worker = 99;
    keep k = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    idm_lease_opts o;
    idm_lease *l;
    idm_lease_status st;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec iv = {0};
    uint64_t id;
    (void)unused;
    IDM_ASSERT_OK(claim(&orig, url, 3000, 1, NULL, &worker, &prev));
    m1 = leasetest_wall_ms() + 3000;
    IDM_ASSERT_OK(zk->renew(orig, m1, &granted));
    IDM_ASSERT_OK(zk->handle(orig, hd, sizeof hd));
    IDM_ASSERT_OK(reattach(&copy, url, 3000, worker, hd, NULL, &rec, &granted));
    CHECK(rec >= m1, "the copy's mark %lld is below the holder's %lld", LL(rec), LL(m1));
    IDM_ASSERT_RC(zk->renew(orig, m1 + 100, &granted), IDM_ELEASE);
    printf("  H5r: the holder's renewal: %s\n", idm_error_detail());
    snap_take(&before, "r9", 0);
    (void)zk->release(orig, m1 - 1000);
    zk->close(orig);
    snap_take(&after, "r9", 0);
    snap_same(&before, &after);
    IDM_ASSERT_OK(zk->renew(copy, rec + 1, &granted));
    IDM_ASSERT_OK(zk->release(copy, rec + 1));
    zk->close(copy);
    assert_false(zktest_exists(conn(), w));

    /* The lease layer (another prefix: worker id 0 of this one has a mark
     * ahead of the clock now). */
    free(url);
    url = url_for("r9b");
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    leasetest_opts(&o, url, 1, 3000);
    o.on_renew = keep_saved;
    o.hook_ctx = &k;
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    pthread_mutex_lock(&k.mu);
    CHECK(k.n > 0 && k.sv.handle[0] != '\0', "no saved claim");
    snprintf(hd, sizeof hd, "%s", k.sv.handle);
    pthread_mutex_unlock(&k.mu);
    IDM_ASSERT_OK(reattach(&copy, url, 3000, k.sv.worker, hd, NULL, &rec, &granted));
    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost, "the holder's lease is not lost (last error %s)", idm_err_name(st.last_error));
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    CHECK(rec >= st.mark_ms, "the copy's mark %lld is below the holder's %lld", LL(rec),
          LL(st.mark_ms));
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    IDM_ASSERT_OK(zk->renew(copy, rec + 1, &granted));
    IDM_ASSERT_OK(zk->release(copy, rec + 1));
    zk->close(copy);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
    free(w);
    free(h);
}

/* Z2 (its flavour for a restart): the holder died and its session expired
 * before the restart: IDM_ELEASE naming the expiry, nothing changed. And
 * once another holder has claimed the id, the old handle is refused the
 * same way, and the other holder's claim goes on. */
static void z2_expired_while_dead(void **unused)
{
    char *url = url_for("r2"), *w = path_of("r2", "workers", 0);
    char scope[IDM_LEASE_SCOPE_MAX];
    saved s;
    snap before, after;
    void *be, *other;
    idm_unix_ms rec, prev;
    int64_t granted, t0 = leasetest_mono_ms(), owner = 0;
    uint32_t worker = 99;
    bool still = true;
    (void)unused;
    scope_a(scope);
    s = crashed_holder(url, 1000, 1, scope);
    while (leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS && (still = zktest_exists(conn(), w)))
        leasetest_sleep_ms(20);
    CHECK(!still, "the dead holder's session did not expire");
    printf("  Z2: the dead holder's session expired %lld ms after kill -9 (timeout %lld ms)\n",
           LL(leasetest_mono_ms() - t0), LL(s.granted));
    snap_take(&before, "r2", 0);
    IDM_ASSERT_RC(reattach(&be, url, 1000, 0, s.handle, scope, &rec, &granted), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "expired") != NULL, "detail: %s", idm_error_detail());
    password_not_shown(s.handle);
    printf("  Z2: %s\n", idm_error_detail());
    zk->close(be);
    snap_take(&after, "r2", 0);
    snap_same(&before, &after);
    assert_int_equal(after.wversion, -1); /* no worker node made */

    /* Claimed by another since: the old handle is refused, the other's
     * claim untouched. */
    IDM_ASSERT_OK(claim(&other, url, 1000, 1, scope, &worker, &prev));
    assert_int_equal(worker, 0);
    CHECK(prev >= s.mark, "the next holder's mark %lld is below %lld", LL(prev), LL(s.mark));
    snap_take(&before, "r2", 0);
    IDM_ASSERT_RC(reattach(&be, url, 1000, 0, s.handle, scope, &rec, &granted), IDM_ELEASE);
    zk->close(be);
    snap_take(&after, "r2", 0);
    snap_same(&before, &after);
    assert_true(zktest_get(conn(), w, after.wdata, sizeof after.wdata, &owner, NULL) == 0);
    CHECK(owner != session_of(s.handle), "the node is the old session's");
    IDM_ASSERT_OK(zk->renew(other, leasetest_wall_ms() + 1000, &granted));
    IDM_ASSERT_OK(zk->release(other, leasetest_wall_ms() + 1000));
    zk->close(other);
    free(url);
    free(w);
}

/* E4 then a claim: the dead holder's session still lives, but its worker
 * node was deleted by hand and another holder claimed the id: IDM_ELEASE
 * (the node is another session's), the other holder's claim untouched and
 * still renewing. */
static void taken_by_another(void **unused)
{
    char *url = url_for("r3"), *w = path_of("r3", "workers", 0);
    saved s;
    snap before, after;
    void *be, *other;
    idm_unix_ms rec, prev;
    int64_t granted;
    uint32_t worker = 99;
    (void)unused;
    s = crashed_holder(url, 4000, 1, NULL);
    assert_int_equal(zktest_delete(conn(), w), 0);
    IDM_ASSERT_OK(claim(&other, url, 4000, 1, NULL, &worker, &prev));
    assert_int_equal(worker, 0);
    snap_take(&before, "r3", 0);
    IDM_ASSERT_RC(reattach(&be, url, 4000, 0, s.handle, NULL, &rec, &granted), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "another session's") != NULL, "detail: %s",
          idm_error_detail());
    password_not_shown(s.handle);
    zk->close(be);
    snap_take(&after, "r3", 0);
    snap_same(&before, &after);
    IDM_ASSERT_OK(zk->renew(other, leasetest_wall_ms() + 4000, &granted));
    IDM_ASSERT_OK(zk->release(other, leasetest_wall_ms() + 4000));
    zk->close(other);
    free(url);
    free(w);
}

/* Garbled handles are IDM_EINVAL before anything is sent, the handle never
 * shown; a handle given with another worker id (one another holder has) is
 * IDM_ELEASE, nothing changed; after each the saved claim still resumes: a
 * refused reattach changes nothing. */
static void garbled_and_wrong_worker(void **unused)
{
    char *url = url_for("r4");
    char bad[8][IDM_LEASE_HANDLE_MAX];
    saved s;
    snap b0, b1, a0, a1;
    void *be, *other;
    idm_unix_ms rec, prev;
    int64_t granted;
    uint32_t worker = 99;
    uint64_t rq;
    (void)unused;
    s = crashed_holder(url, 4000, 2, NULL);
    assert_int_equal(s.worker, 0);
    snprintf(bad[0], sizeof bad[0], "%s", "");
    snprintf(bad[1], sizeof bad[1], "%s", "not a session");
    snprintf(bad[2], sizeof bad[2], "%.48s", s.handle);                  /* one short */
    snprintf(bad[3], sizeof bad[3], "%.49s0", s.handle);                  /* one long */
    snprintf(bad[4], sizeof bad[4], "0000000000000000%.33s", s.handle + 16); /* session 0 */
    snprintf(bad[5], sizeof bad[5], "%s", s.handle);
    bad[5][16] = ':';
    snprintf(bad[6], sizeof bad[6], "%s", s.handle);
    bad[6][30] = 'g';
    snprintf(bad[7], sizeof bad[7], "%s", s.handle);
    bad[7][3] = ' ';
    rq = requests_sent();
    for (int i = 0; i < 8; i++) {
        IDM_ASSERT_RC(reattach(&be, url, 4000, 0, bad[i], NULL, &rec, &granted), IDM_EINVAL);
        CHECK(strstr(idm_error_detail(), "not a ZooKeeper session") != NULL, "detail: %s",
              idm_error_detail());
        password_not_shown(s.handle);
        zk->close(be);
    }
    be = be_open(url, 4000);
    IDM_ASSERT_RC(zk->reattach(be, 0, NULL, 4000, "x", NULL, 1, &rec, &granted), IDM_EINVAL);
    zk->close(be);
    assert_int_equal(requests_sent(), rq);

    /* Worker id 1, another holder's, with the handle of 0. */
    IDM_ASSERT_OK(claim(&other, url, 4000, 2, NULL, &worker, &prev));
    assert_int_equal(worker, 1);
    snap_take(&b0, "r4", 0);
    snap_take(&b1, "r4", 1);
    IDM_ASSERT_RC(reattach(&be, url, 4000, 1, s.handle, NULL, &rec, &granted), IDM_ELEASE);
    zk->close(be);
    snap_take(&a0, "r4", 0);
    snap_take(&a1, "r4", 1);
    snap_same(&b0, &a0);
    snap_same(&b1, &a1);
    assert_int_equal(a0.owner, session_of(s.handle)); /* the session still holds 0 */
    IDM_ASSERT_OK(zk->renew(other, leasetest_wall_ms() + 4000, &granted));

    /* The saved claim, left alone by every failed try, resumes. */
    IDM_ASSERT_OK(reattach(&be, url, 4000, 0, s.handle, NULL, &rec, &granted));
    IDM_ASSERT_OK(zk->release(be, rec));
    zk->close(be);
    IDM_ASSERT_OK(zk->release(other, leasetest_wall_ms() + 4000));
    zk->close(other);
    free(url);
}

/* E2 at a restart: the server frozen (SIGSTOP), then stopped: reattach is
 * IDM_EIO, never IDM_ELEASE, within its bound, and its close returns at
 * once; the tries change nothing, so once the server is back the claim
 * resumes. */
static void e2_coordinator_down(void **unused)
{
    char *url = url_for("r5");
    saved s;
    void *be;
    idm_unix_ms rec;
    int64_t granted, t0;
    pid_t pid;
    int rc;
    (void)unused;
    s = crashed_holder(url, 6000, 1, NULL);

    pid = zktest_member_pid(&g_srv, 1);
    (void)leasetest_freeze(pid);
    t0 = leasetest_mono_ms();
    rc = reattach(&be, url, 6000, 0, s.handle, NULL, &rec, &granted);
    printf("  E2: server frozen: %s after %lld ms (%s)\n", idm_err_name(rc),
           LL(leasetest_mono_ms() - t0), idm_error_detail());
    CHECK(rc == IDM_EIO, "reattach with the server frozen: %s", idm_err_name(rc));
    password_not_shown(s.handle);
    zk->close(be);
    CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "hung");
    leasetest_thaw(pid);

    conn_drop();
    zktest_kill(&g_srv, 1);
    t0 = leasetest_mono_ms();
    rc = reattach(&be, url, 6000, 0, s.handle, NULL, &rec, &granted);
    printf("  E2: server stopped: %s after %lld ms\n", idm_err_name(rc),
           LL(leasetest_mono_ms() - t0));
    CHECK(rc == IDM_EIO, "reattach with the server stopped: %s", idm_err_name(rc));
    zk->close(be);
    CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "hung");
    zktest_restart(&g_srv, 1);

    IDM_ASSERT_OK(reattach(&be, url, 6000, 0, s.handle, NULL, &rec, &granted));
    CHECK(rec >= s.mark, "recorded %lld below %lld", LL(rec), LL(s.mark));
    IDM_ASSERT_OK(zk->renew(be, rec + 1, &granted));
    IDM_ASSERT_OK(zk->release(be, rec + 1));
    zk->close(be);
    free(url);
}

/* Another scope than the one recorded: refused with IDM_EINVAL naming both,
 * nothing changed (the claim, the mark, the scope, the session: the right
 * scope then reattaches). No scope recorded: reattach records it. */
static void scope_refused(void **unused)
{
    char *url = url_for("r6"), *sc = path_of("r6", NULL, 0);
    char s1[IDM_LEASE_SCOPE_MAX], s2[IDM_LEASE_SCOPE_MAX];
    saved s;
    snap before, after;
    void *be;
    idm_unix_ms rec;
    int64_t granted;
    (void)unused;
    scope_a(s1);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", 1, "worker", s2);
    s = crashed_holder(url, 4000, 1, s1);
    snap_take(&before, "r6", 0);
    IDM_ASSERT_RC(reattach(&be, url, 4000, 0, s.handle, s2, &rec, &granted), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "hands out ids for") != NULL, "detail: %s",
          idm_error_detail());
    password_not_shown(s.handle);
    zk->close(be);
    snap_take(&after, "r6", 0);
    snap_same(&before, &after);
    assert_int_equal(after.owner, session_of(s.handle));
    /* No scope recorded (removed by hand): recorded by the reattach. */
    assert_int_equal(zktest_delete(conn(), sc), 0);
    IDM_ASSERT_OK(reattach(&be, url, 4000, 0, s.handle, s1, &rec, &granted));
    snap_take(&after, "r6", 0);
    assert_string_equal(after.scope, s1);
    IDM_ASSERT_OK(zk->release(be, rec));
    zk->close(be);
    free(url);
    free(sc);
}

/* --------------------------------------------------------------- setup */

static void stop_all(void)
{
    leasetest_thaw_any();
    zktest_stop(&g_srv);
}

static int setup(void **unused)
{
    (void)unused;
    return zktest_start(&g_srv, 1);
}

static int teardown(void **unused)
{
    (void)unused;
    leasetest_thaw_any();
    conn_drop();
    zktest_stop(&g_srv);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(z3_e12_reattach_at_once),
        cmocka_unit_test(z3r_resumes_once),
        cmocka_unit_test(z3r_racing_copies_one_wins),
        cmocka_unit_test(h5r_reattach_while_holder_alive),
        cmocka_unit_test(z2_expired_while_dead),
        cmocka_unit_test(taken_by_another),
        cmocka_unit_test(garbled_and_wrong_worker),
        cmocka_unit_test(scope_refused),
        cmocka_unit_test(e2_coordinator_down),
    };
    const char *filter = getenv("IDM_TEST_FILTER");
    signal(SIGPIPE, SIG_IGN);
    atexit(stop_all);
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests_name("zk reattach", tests, setup, teardown);
}
