/* SPDX-License-Identifier: MIT */
/*
 * Worker-id leases on the ZooKeeper backend (zk://), against real ZooKeeper
 * servers this program starts with scripts/zk-test-server.sh (a standalone
 * server for most tests, a three-member ensemble for the leader's loss;
 * each group stops its servers in its teardown, and the script's watcher
 * kills them if this program dies). A session of the test's own
 * (tests/util/zktest.h) looks at and changes nodes behind the backend's
 * back; tests/util/tcpproxy.h cuts a holder's connection.
 *
 * The ZooKeeper rows of the fault catalogue: Z1 connection lost (the holder
 * stops at its deadline and resumes when the connection comes back within
 * the session timeout), Z2 a partition longer than the session timeout
 * (expired: lost, another holder takes the id above the first one's mark),
 * Z3 a holder killed with kill -9 and a claimant at once (another id while
 * the dead session lives, the same one after it expires), Z4 the leader of
 * an ensemble killed (sessions and worker ids kept, no stop), Z5 node
 * names that are no worker id. Also: claim, renew and release; the round
 * trips of a claim (3, at 0 and at 1,000 of 1,024 ids taken), the
 * 1,025th claimant refused after one; scopes refused before anything
 * changes; marks that only rise; a mark that is not a number; a worker
 * node deleted by hand; a holder stopped with SIGSTOP past its session
 * timeout; a handoff to a holder whose clock is behind; the TTL granted is
 * the session timeout the server grants; a forked child's close; close
 * with the server gone; bad URLs. Every test checks that no id is minted
 * twice.
 *
 * IDM_TEST_FILTER (a cmocka pattern, e.g. "z1*") runs only the tests whose
 * names match.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"
#include "lease_internal.h"
#include "tcpproxy.h"
#include "zktest.h"
#include "zookeeper_internal.h"

static zktest_server g_one;   /* standalone */
static zktest_server g_three; /* ensemble */
static zktest_conn *g_c;      /* the test's session with g_one, see conn() */

/* ------------------------------------------------------------- helpers */

static char *url_for(const char *eps, const char *name)
{
    return leasetest_url_for("zk", eps, name);
}

/* The URL of a proxy in front of the standalone server. */
static char *proxy_url(idm_tcpproxy *px, const char *name)
{
    char eps[64];
    snprintf(eps, sizeof eps, "127.0.0.1:%d", idm_tcpproxy_port(px));
    return url_for(eps, name);
}

static idm_tcpproxy *proxy_start(void)
{
    const char *colon = strrchr(g_one.eps, ':');
    idm_tcpproxy *px;
    assert_non_null(colon);
    px = idm_tcpproxy_start(atoi(colon + 1));
    assert_non_null(px);
    return px;
}

static char *coord_url(const char *name)
{
    return url_for(g_one.eps, name);
}

/* For the test bodies every coordinator shares (leasetest.h). */
static const leasetest_coord k_coord = {coord_url, 2000};

static void lease_opts(idm_lease_opts *o, const char *url, uint32_t max)
{
    leasetest_opts(o, url, max, k_coord.ttl_ms);
}

/* The test's session with the standalone server, made when first needed.
 * Dropped before a fork whose child starts threads: a process that forks
 * with threads running may not start any in the child (ThreadSanitizer
 * refuses it). */
static zktest_conn *conn(void)
{
    if (g_c == NULL)
        g_c = zktest_connect(g_one.eps);
    return g_c;
}

static void conn_drop(void)
{
    zktest_close(g_c);
    g_c = NULL;
}

/* The mark stored in <name>/hwm/<id>, -1 if none or not a number. */
static idm_unix_ms stored_mark(const char *name, uint32_t id)
{
    char path[256], buf[64];
    snprintf(path, sizeof path, "/idmint/%s/hwm/%u", name, (unsigned)id);
    if (zktest_get(conn(), path, buf, sizeof buf, NULL, NULL) != 0 || buf[0] == '\0')
        return -1;
    return strtoll(buf, NULL, 10);
}

static bool worker_node(const char *name, uint32_t id, int64_t *owner)
{
    char path[256], buf[128];
    snprintf(path, sizeof path, "/idmint/%s/workers/%u", name, (unsigned)id);
    return zktest_get(conn(), path, buf, sizeof buf, owner, NULL) == 0;
}

static void round_trips(uint64_t *rt)
{
    uint64_t rq;
    idm__zk_counters(rt, &rq);
}

/* ------------------------------------------------------ no server needed */

static void bad_urls(void **unused)
{
    static const char *const bad[] = {
        "zk://",
        "zk://127.0.0.1:2181",
        "zk:///idmint",
        "zk://127.0.0.1:2181/",
        "zk://127.0.0.1:2181/idmint/",
        "zk://127.0.0.1:2181/idmint//x",
        "zk://127.0.0.1:2181/idmint/./x",
        "zk://127.0.0.1:2181/idmint/../x",
        "zk://127.0.0.1:2181/..",
        "zk://127.0.0.1:2181/id mint",
        "zk://127.0.0.1:2181/zookeeper",
        "zk://127.0.0.1:2181/zookeeper/x",
        "zk://127.0.0.1:2181/idmint?user=x",
        "zk://127.0.0.1/idmint",
        "zk://127.0.0.1:0/idmint",
        "zk://127.0.0.1:65536/idmint",
        "zk://127.0.0.1:2181,/idmint",
        "zk://127.0.0.1:2181,,127.0.0.1:2182/idmint",
        "zk://host name:2181/idmint",
        "zk://[::1/idmint",
    };
    idm_lease_opts o;
    idm_lease *l = NULL;
    (void)unused;
    lease_opts(&o, NULL, 4);
    leasetest_bad_urls(&o, bad, sizeof bad / sizeof bad[0], "zk", NULL);
    /* Credentials are refused, and never shown. */
    lease_opts(&o, "zk://admin:s3cr3t@127.0.0.1:2181/idmint", 4);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "s3cr3t") == NULL, "the password shows: %s",
          idm_error_detail());
    /* Nothing listens: a clear error within a bounded time. */
    {
        int64_t t0 = leasetest_mono_ms();
        lease_opts(&o, "zk://127.0.0.1:1/idmint", 4);
        o.ttl_ms = 1000;
        IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
        CHECK(strstr(idm_error_detail(), "no ZooKeeper server answered") != NULL, "detail %s",
              idm_error_detail());
        printf("  nothing listens: refused after %lld ms (%s)\n", LL(leasetest_mono_ms() - t0),
               idm_error_detail());
        CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "hung");
    }
}

/* Z5: node names under <prefix>/workers/ that are no worker id. */
static void z5_node_names(void **unused)
{
    static const struct {
        const char *name;
        uint32_t max;
        int kind;
        uint32_t id;
    } cases[] = {
        {"0", 1024, IDM__ZK_ID, 0},
        {"7", 1024, IDM__ZK_ID, 7},
        {"1023", 1024, IDM__ZK_ID, 1023},
        {"1024", 1024, IDM__ZK_NOT_ID, 0},
        {"65535", 65536, IDM__ZK_ID, 65535},
        {"65536", 65536, IDM__ZK_NOT_ID, 0},
        {"-2147483648", 1024, IDM__ZK_NOT_ID, 0}, /* a wrapped sequence counter */
        {"-1", 1024, IDM__ZK_NOT_ID, 0},
        {"+1", 1024, IDM__ZK_NOT_ID, 0},
        {"2147483647", 1024, IDM__ZK_NOT_ID, 0},
        {"4294967296", 4294967295u, IDM__ZK_NOT_ID, 0},
        {"18446744073709551617", 1024, IDM__ZK_NOT_ID, 0}, /* 2^64 + 1: no wrap */
        {"99999999999999999999999999", 1024, IDM__ZK_NOT_ID, 0},
        {"abc", 1024, IDM__ZK_NOT_ID, 0},
        {"12a", 1024, IDM__ZK_NOT_ID, 0},
        {" 12", 1024, IDM__ZK_NOT_ID, 0},
        {"12 ", 1024, IDM__ZK_NOT_ID, 0},
        {"0x1", 1024, IDM__ZK_NOT_ID, 0},
        {"1e3", 1024, IDM__ZK_NOT_ID, 0},
        {"", 1024, IDM__ZK_NOT_ID, 0},
        {"worker-0000000001", 1024, IDM__ZK_NOT_ID, 0},
        {"0012", 1024, IDM__ZK_AMBIGUOUS, 12},
        {"00", 1024, IDM__ZK_AMBIGUOUS, 0},
        {"01024", 1024, IDM__ZK_NOT_ID, 0},
        {"0000000000000000000000005", 1024, IDM__ZK_AMBIGUOUS, 5},
    };
    (void)unused;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t id = 99999;
        int kind = idm__zk_parse_id(cases[i].name, cases[i].max, &id);
        CHECK(kind == cases[i].kind, "'%s' (max %u): kind %d, want %d", cases[i].name,
              (unsigned)cases[i].max, kind, cases[i].kind);
        if (kind != IDM__ZK_NOT_ID)
            CHECK(id == cases[i].id, "'%s': id %u, want %u", cases[i].name, (unsigned)id,
                  (unsigned)cases[i].id);
    }
}

/* Z5 against the server: names that are no id are ignored, "0012" keeps
 * id 12 from being chosen, and -2147483648 is no claim on anything. */
static void z5_foreign_names_on_server(void **unused)
{
    static const char *names[] = {"-2147483648", "abc", "0000", "0001", "1024", "99999999999"};
    char *url = url_for(g_one.eps, "z5");
    zktest_conn *zombie = zktest_connect(g_one.eps);
    idm_lease_opts o;
    idm_lease *l[2];
    (void)unused;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "/idmint/z5/workers/%s", names[i]);
        assert_int_equal(zktest_create(zombie, path, "foreign", true), 0);
    }
    lease_opts(&o, url, 4);
    IDM_ASSERT_OK(idm_lease_open(&l[0], &o));
    IDM_ASSERT_OK(idm_lease_open(&l[1], &o));
    /* 0 and 1 may be meant by "0000" and "0001": 2 and 3 are chosen. */
    assert_int_equal(idm_lease_worker(l[0]), 2);
    assert_int_equal(idm_lease_worker(l[1]), 3);
    {
        idm_lease *x = NULL;
        IDM_ASSERT_RC(idm_lease_open(&x, &o), IDM_EBUSY);
    }
    {
        idm_lease_entry *e = NULL;
        size_t n = 0;
        IDM_ASSERT_OK(idm_lease_list(url, 4, &e, &n));
        CHECK(n == 2 && e[0].worker == 2 && e[1].worker == 3, "%zu listed", n);
        free(e);
    }
    IDM_ASSERT_OK(idm_lease_close(l[0]));
    IDM_ASSERT_OK(idm_lease_close(l[1]));
    zktest_close(zombie);
    free(url);
}

/* ---------------------------------------------------------- standalone */

static void claim_renew_release(void **unused)
{
    char *url = url_for(g_one.eps, "basic");
    idm_lease_opts o;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    idm_lease_entry *e = NULL;
    size_t n = 0;
    char path[128], holder[128];
    int64_t owner = 0, czxid = 0;
    uint64_t gen1;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    o.holder = "holder-one";
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    assert_int_equal(idm_lease_mark(l), 0);
    assert_int_equal(idm__lease_ttl_ms(l), 2000); /* the session timeout granted */
    /* The generation is the worker node's czxid; the node holds the holder
     * and belongs to a session (ephemeral). */
    snprintf(path, sizeof path, "/idmint/basic/workers/0");
    assert_int_equal(zktest_get(conn(), path, holder, sizeof holder, &owner, &czxid), 0);
    assert_string_equal(holder, "holder-one");
    CHECK(owner != 0, "workers/0 is not ephemeral");
    assert_int_equal(idm_lease_generation(l), (uint64_t)czxid);
    gen1 = idm_lease_generation(l);
    /* The claim recorded the first mark. */
    CHECK(stored_mark("basic", 0) >= leasetest_wall_ms(), "mark %lld", LL(stored_mark("basic", 0)));

    g = leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    leasetest_mint_n(g, &iv, 1000);
    idm_lease_status_get(l, &st);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(st.renewals >= 2 && st.last_error == 0 && !st.lost, "renewals %llu, %s",
          ULL(st.renewals), idm_err_name(st.last_error));
    assert_int_equal(stored_mark("basic", 0), st.mark_ms);

    IDM_ASSERT_OK(idm_lease_list(url, 4, &e, &n));
    CHECK(n == 1 && e[0].worker == 0 && e[0].held && e[0].mark_ms == st.mark_ms &&
              strcmp(e[0].holder, "holder-one") == 0,
          "%zu listed", n);
    free(e);

    leasetest_mint_n(g, &iv, 1000);
    IDM_ASSERT_OK(idm_lease_close(l));
    /* Released at once (the session's close), the exact last tick recorded. */
    CHECK(!worker_node("basic", 0, NULL), "workers/0 is still there after close");
    assert_int_equal(stored_mark("basic", 0), leasetest_time_of(layout, iv.v[iv.n - 1]));
    IDM_ASSERT_OK(idm_lease_list(url, 4, &e, &n));
    CHECK(n == 1 && !e[0].held && e[0].holder[0] == '\0', "%zu listed", n);
    free(e);

    IDM_ASSERT_OK(idm_lease_open(&l2, &o));
    assert_int_equal(idm_lease_worker(l2), 0);
    assert_int_equal(idm_lease_mark(l2), leasetest_time_of(layout, iv.v[iv.n - 1]));
    CHECK(idm_lease_generation(l2) > gen1, "generation %llu after %llu",
          ULL(idm_lease_generation(l2)), ULL(gen1));
    idm_snowflake_close(g);
    leasetest_successor(layout, l2, false, &iv, 1000, NULL, NULL);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E1: 12 claimants at once for 8 ids, on a prefix none has created yet
 * (racing parent creations, racing ephemeral creates of one id): 8 get
 * distinct ids, 4 are refused "no free worker id", and the ids they mint
 * never repeat. */
static void e1_racing_claimants(void **unused)
{
    (void)unused;
    leasetest_racing_claimants(&k_coord, "e1", 12, 8, 500);
}

/* The round trips of a claim: 3 from start to the first id, with no id
 * taken and with 1,000 of 1,024 taken; the 1,025th claimant is refused
 * after 1, with a clear error. */
static void round_trips_and_1025th_claimant(void **unused)
{
    char *url = url_for(g_one.eps, "rt");
    char scope[IDM_LEASE_SCOPE_MAX];
    zktest_conn *zombie;
    idm_lease_opts o;
    idm_lease *l[25] = {NULL}, *x = NULL;
    uint64_t a, b;
    int64_t t0;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", scope);
    lease_opts(&o, url, 1024);
    o.scope = scope;
    /* The prefix made once (its first claim also creates the parents). */
    IDM_ASSERT_OK(idm_lease_open(&l[0], &o));
    IDM_ASSERT_OK(idm_lease_close(l[0]));

    round_trips(&a);
    t0 = leasetest_mono_ns();
    IDM_ASSERT_OK(idm_lease_open(&l[0], &o));
    round_trips(&b);
    printf("  claim, 0 of 1,024 taken: %llu round trips, %lld us (with the session's start)\n",
           ULL(b - a), LL((leasetest_mono_ns() - t0) / 1000));
    assert_int_equal(b - a, 3);
    IDM_ASSERT_OK(idm_lease_close(l[0]));

    zombie = zktest_connect(g_one.eps);
    zktest_create_many(zombie, "/idmint/rt/workers", 0, 1000);
    for (int i = 0; i < 24; i++) {
        round_trips(&a);
        t0 = leasetest_mono_ns();
        IDM_ASSERT_OK(idm_lease_open(&l[i], &o));
        round_trips(&b);
        assert_int_equal(idm_lease_worker(l[i]), 1000 + i);
        if (i == 0)
            printf("  claim, 1,000 of 1,024 taken: %llu round trips, %lld us\n", ULL(b - a),
                   LL((leasetest_mono_ns() - t0) / 1000));
        assert_int_equal(b - a, 3);
    }
    round_trips(&a);
    IDM_ASSERT_RC(idm_lease_open(&x, &o), IDM_EBUSY);
    round_trips(&b);
    CHECK(strstr(idm_error_detail(), "no free worker id") != NULL &&
              strstr(idm_error_detail(), "1024") != NULL,
          "detail: %s", idm_error_detail());
    printf("  the 1,025th claimant: refused after %llu round trip (%s)\n", ULL(b - a),
           idm_error_detail());
    assert_int_equal(b - a, 1);
    assert_null(x);
    for (int i = 0; i < 24; i++)
        IDM_ASSERT_OK(idm_lease_close(l[i]));
    zktest_close(zombie);
    free(url);
}

/* A claimant for another layout is refused before anything changes, after
 * one round trip; the scope recorded is the first claimant's. */
static void scope_refused(void **unused)
{
    char *url = url_for(g_one.eps, "scope");
    char s1[IDM_LEASE_SCOPE_MAX], s2[IDM_LEASE_SCOPE_MAX], rec[IDM_LEASE_SCOPE_MAX];
    idm_lease_opts o;
    idm_lease *a, *b = NULL, *c;
    uint64_t r0, r1;
    idm_unix_ms before;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", s1);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", 1, "worker", s2);
    lease_opts(&o, url, 4);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, rec, sizeof rec));
    assert_string_equal(rec, "");
    o.scope = s1;
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, rec, sizeof rec));
    assert_string_equal(rec, s1);
    before = stored_mark("scope", 0);
    o.scope = s2;
    round_trips(&r0);
    IDM_ASSERT_RC(idm_lease_open(&b, &o), IDM_EINVAL);
    round_trips(&r1);
    CHECK(strstr(idm_error_detail(), "hands out ids for") != NULL &&
              strstr(idm_error_detail(), "epoch 1") != NULL,
          "detail: %s", idm_error_detail());
    assert_int_equal(r1 - r0, 1);
    assert_null(b);
    CHECK(!worker_node("scope", 1, NULL), "the refused claimant created workers/1");
    assert_int_equal(stored_mark("scope", 0), before);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, rec, sizeof rec));
    assert_string_equal(rec, s1);
    /* The same scope again, and none at all, are not refused. */
    o.scope = s1;
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    o.scope = NULL;
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    IDM_ASSERT_OK(idm_lease_close(a));
    IDM_ASSERT_OK(idm_lease_close(b));
    IDM_ASSERT_OK(idm_lease_close(c));
    free(url);
}

/* Marks only rise: a higher mark written by hand is never lowered by the
 * holder's renewals or its release; a lower one (a late write landing) is
 * raised again by the next renewal. */
static void marks_only_rise(void **unused)
{
    char *url = url_for(g_one.eps, "rise");
    char path[128], val[32];
    idm_lease_opts o;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    idm_unix_ms high;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    snprintf(path, sizeof path, "/idmint/rise/hwm/0");

    high = stored_mark("rise", 0) + 3000; /* above what the holder records for a while */
    snprintf(val, sizeof val, "%lld", LL(high));
    zktest_put(conn(), path, val);
    for (int k = 0; k < 2; k++) {
        idm_lease_status_get(l, &st);
        leasetest_wait_status(l, &st, false, st.renewals);
        CHECK(!st.lost && st.last_error == 0, "renewal: %s", idm_err_name(st.last_error));
        CHECK(stored_mark("rise", 0) >= high, "the mark went down from %lld to %lld", LL(high),
              LL(stored_mark("rise", 0)));
    }
    /* A late, lower write lands: the next renewal raises it again. */
    zktest_put(conn(), path, "1");
    idm_lease_status_get(l, &st);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(!st.lost && st.last_error == 0, "renewal: %s", idm_err_name(st.last_error));
    CHECK(stored_mark("rise", 0) >= high && stored_mark("rise", 0) >= st.mark_ms,
          "mark %lld after a low write", LL(stored_mark("rise", 0)));
    leasetest_mint_n(g, &iv, 100);
    IDM_ASSERT_OK(idm_lease_close(l));
    /* The release does not lower it either. */
    CHECK(stored_mark("rise", 0) >= high, "the release lowered the mark to %lld",
          LL(stored_mark("rise", 0)));
    IDM_ASSERT_OK(idm_lease_open(&l2, &o));
    CHECK(idm_lease_mark(l2) >= high, "the next holder's mark %lld", LL(idm_lease_mark(l2)));
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g);
    leasetest_no_duplicates(&iv);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* A mark that is not a number: a claim of that id fails clearly (and
 * leaves no worker node); a holder whose mark is overwritten with one
 * cannot renew (unknown, not lost: it stops at its deadline) until a number
 * is back. */
static void mark_not_a_number(void **unused)
{
    char *url = url_for(g_one.eps, "garbage"), *url2 = url_for(g_one.eps, "garbage2");
    idm_lease_opts o;
    idm_lease *l = NULL;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int rc = 0;
    int64_t until;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    zktest_put(conn(), "/idmint/garbage/hwm/0", "not a number");
    lease_opts(&o, url, 1);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
    CHECK(strstr(idm_error_detail(), "does not hold a mark") != NULL, "detail: %s",
          idm_error_detail());
    assert_null(l);
    CHECK(!worker_node("garbage", 0, NULL), "workers/0 left behind");

    lease_opts(&o, url2, 1);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    idm_lease_status_get(l, &st);
    zktest_put(conn(), "/idmint/garbage2/hwm/0", "12x");
    leasetest_wait_failure(l, &st);
    CHECK(st.last_error == IDM_EIO && !st.lost, "renewal: %s, lost %d",
          idm_err_name(st.last_error), st.lost);
    /* It stops at its deadline, with nobody saying the claim is gone. */
    until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    while (leasetest_mono_ms() < until && (rc = idm_snowflake_next(g, &id)) == 0) {
        idm_test_idvec_push(&iv, id);
        leasetest_sleep_ms(1);
    }
    IDM_ASSERT_RC(rc, IDM_ELEASE);
    idm_lease_status_get(l, &st);
    CHECK(!st.lost && st.last_error != IDM_ELEASE, "lost %d, %s", st.lost,
          idm_err_name(st.last_error));
    CHECK(stored_mark("garbage2", 0) == 12 || stored_mark("garbage2", 0) == -1,
          "the garbage was overwritten: %lld", LL(stored_mark("garbage2", 0)));
    /* A number back (above every id minted): renewals work again. */
    {
        char val[32];
        snprintf(val, sizeof val, "%lld", LL(st.mark_ms));
        zktest_put(conn(), "/idmint/garbage2/hwm/0", val);
    }
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(!st.lost && st.last_error == 0, "renewal: %s", idm_err_name(st.last_error));
    leasetest_mint_n(g, &iv, 100);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
    free(url2);
}

/* The worker node deleted by hand (its session alive): the next renewal
 * finds the claim lost and the holder stops at once; a new claimant gets
 * the id above every id the first minted. */
static void worker_node_deleted(void **unused)
{
    char *url = url_for(g_one.eps, "deleted");
    idm_lease_opts o;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 500);
    assert_int_equal(zktest_delete(conn(), "/idmint/deleted/workers/0"), 0);
    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost && st.last_error == IDM_ELEASE, "lost %d, %s", st.lost,
          idm_err_name(st.last_error));
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    IDM_ASSERT_OK(idm_lease_open(&l2, &o));
    CHECK(idm_lease_mark(l2) >= st.mark_ms, "mark %lld below %lld", LL(idm_lease_mark(l2)),
          LL(st.mark_ms));
    leasetest_successor(layout, l2, true, &iv, 500, l, g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* Z3: a holder killed with kill -9, and a claimant at once. While the dead
 * holder's session lives its id stays held (the claimant gets another);
 * once the server expires the session the id is free, with the dead
 * holder's last mark, above every id it minted. */
static bool z3_held(uint32_t id)
{
    return worker_node("z3", id, NULL);
}

static void z3_killed_holder_restarted(void **unused)
{
    char *url = url_for(g_one.eps, "z3");
    idm_lease_opts o;
    (void)unused;
    lease_opts(&o, url, 4);
    conn_drop(); /* the child starts threads */
    leasetest_killed_holder(&o, "Z3", z3_held);
    free(url);
}

/* What a holder process records of its mints, in shared memory. */
#define REC_MAX 200000
typedef struct mint_rec {
    atomic_int n;
    atomic_int worker;
    atomic_int renewed;        /* a keeper renewal worked (the claim was the first) */
    int64_t start_ns[REC_MAX]; /* CLOCK_MONOTONIC before the call that minted */
    uint64_t id[REC_MAX];
} mint_rec;

/* A holder stopped with SIGSTOP for longer than its session timeout:
 * another process takes its id meanwhile; resumed, the first mints nothing
 * (its deadline passed while it was stopped), and every id is unique, the
 * new holder's above the first one's. */
static void sigstop_holder_past_timeout(void **unused)
{
    char *url = url_for(g_one.eps, "sigstop");
    idm_lease_opts o;
    idm_lease *l = NULL;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec iv = {0};
    mint_rec *rec;
    int64_t t_stop, until;
    int rc, status, after = 0;
    pid_t pid;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    rec = mmap(NULL, sizeof *rec, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(rec != MAP_FAILED);
    atomic_store(&rec->worker, -1);
    conn_drop(); /* the child starts threads */
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_lease *cl;
        idm_snowflake *cg;
        if (idm_lease_open(&cl, &o) != 0)
            _exit(2);
        cg = leasetest_gen(layout, cl, NULL);
        if (idm_lease_attach(cl, cg) != 0)
            _exit(3);
        atomic_store(&rec->worker, (int)idm_lease_worker(cl));
        for (;;) {
            uint64_t id;
            int64_t t = leasetest_mono_ns();
            int n = atomic_load(&rec->n);
            idm_lease_status cst;
            idm_lease_status_get(cl, &cst);
            if (cst.renewals >= 2 && cst.last_error == 0)
                atomic_store(&rec->renewed, 1);
            if (idm_snowflake_next(cg, &id) == 0 && n < REC_MAX) {
                rec->start_ns[n] = t;
                rec->id[n] = id;
                atomic_store(&rec->n, n + 1);
            }
            usleep(200);
        }
    }
    until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    while ((atomic_load(&rec->n) < 200 || !atomic_load(&rec->renewed)) &&
           leasetest_mono_ms() < until)
        leasetest_sleep_ms(10);
    CHECK(atomic_load(&rec->n) >= 200 && atomic_load(&rec->renewed), "the holder minted %d ids",
          atomic_load(&rec->n));
    t_stop = leasetest_freeze(pid);
    /* Its session expires on the server: the id frees for us. */
    while ((rc = idm_lease_open(&l, &o)) == IDM_EBUSY && leasetest_mono_ms() < until)
        leasetest_sleep_ms(50);
    IDM_ASSERT_OK(rc);
    printf("  SIGSTOP: the stopped holder's id taken %lld ms after the stop\n",
           LL((leasetest_mono_ns() - t_stop) / 1000000));
    g = leasetest_gen_after_loss(layout, l);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    leasetest_mint_n(g, &iv, 500);
    leasetest_thaw(pid);
    leasetest_sleep_ms(700); /* it tries to mint, and its keeper to renew */
    leasetest_mint_n(g, &iv, 500);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    for (int i = 0; i < atomic_load(&rec->n); i++)
        if (rec->start_ns[i] >= t_stop)
            after++;
    CHECK(after == 0, "the stopped holder minted %d ids after SIGSTOP", after);
    {
        idm_test_idvec all = {0};
        for (int i = 0; i < atomic_load(&rec->n); i++)
            idm_test_idvec_push(&all, rec->id[i]);
        for (size_t i = 0; i < iv.n; i++)
            idm_test_idvec_push(&all, iv.v[i]);
        idm_test_check_ids(&all); /* one worker id: the new holder's above the old one's */
        idm_test_idvec_free(&all);
    }
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    munmap(rec, sizeof *rec);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* A handoff to a holder whose clock is 5 s behind the released mark: its
 * generator refuses to start, and starts once its clock has passed the
 * mark, above every id the last holder minted. */
static void skewed_handoff(void **unused)
{
    (void)unused;
    leasetest_skewed_handoff(&k_coord, "skew");
}

/* Z1: the connection lost (a proxy in front of ZooKeeper goes silent). The
 * holder runs on an injected clock that moves only when told (renewals go
 * out every TTL/3 of real time, each sent at the same injected instant T),
 * so its deadline is exact: T + session timeout - margin, from the last
 * renewal answered before the silence. With the connection silent (and a
 * renewal seen failing since, not lost), a mint 1 ns before that deadline
 * works and one at it is refused. The connection comes back before the
 * server expires the session: the next renewal works, and minting resumes. */
static void z1_connection_lost(void **unused)
{
    idm_tcpproxy *px = proxy_start();
    char *url = proxy_url(px, "z1");
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_manual_clock *mc;
    idm_test_idvec iv = {0};
    int64_t at, t_hold, owner_before = 0, owner_after = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    o.ttl_ms = 4500; /* margin 900 ms */
    g = leasetest_clocked_claim(&l, &o, layout, &mc, &st, &iv, &at); /* st: a renewal answered */
    assert_int_equal(idm__lease_ttl_ms(l), 4500);
    assert_true(worker_node("z1", 0, &owner_before));
    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    t_hold = leasetest_mono_ns();
    leasetest_deadline_exact(l, g, mc, at, 4500, 900, &st, &iv);
    printf("  Z1: a renewal failed %lld ms into the silence (%s); deadline T + %lld ms\n",
           LL((leasetest_mono_ns() - t_hold) / 1000000), idm_err_name(st.last_error),
           LL((st.deadline - at) / 1000000));

    /* Back within the session timeout: the same session, minting again. */
    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD);
    printf("  Z1: the connection back %lld ms into the silence (session timeout 4500 ms)\n",
           LL((leasetest_mono_ns() - t_hold) / 1000000));
    idm_lease_status_get(l, &st);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(!st.lost && st.last_error == 0, "lost %d, %s", st.lost, idm_err_name(st.last_error));
    idm_manual_clock_advance(mc, 1);
    leasetest_mint_n(g, &iv, 100);
    assert_true(worker_node("z1", 0, &owner_after));
    assert_int_equal(owner_after, owner_before);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_tcpproxy_stop(px);
    idm_manual_clock_free(mc);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* Z2: a partition longer than the session timeout, then healed. The holder
 * stops at its deadline; meanwhile the server expires its session and
 * another process takes the id, above the first one's last recorded mark;
 * after the heal the first hears that its session expired: lost, it mints
 * nothing more. No id repeats. */
static void z2_partition_expires_session(void **unused)
{
    idm_tcpproxy *px = proxy_start();
    char *url = proxy_url(px, "z2"), *direct = url_for(g_one.eps, "z2");
    idm_lease_opts o, o2;
    idm_lease *l, *l2 = NULL;
    idm_layout *layout;
    idm_snowflake *g, *g2;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    leasetest_minter m;
    uint64_t id;
    int64_t t_cut, until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    int rc;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    g = leasetest_claim(&l, &o, layout);
    leasetest_minter_start(&m, g, l);
    leasetest_minter_wait_minted(&m, 100);
    leasetest_wait_status(l, &st, false, 1); /* a keeper renewal (the claim was the first) */
    CHECK(st.renewals >= 2 && st.last_error == 0, "renewals %llu, %s", ULL(st.renewals),
          idm_err_name(st.last_error));
    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    t_cut = leasetest_mono_ns();
    lease_opts(&o2, direct, 1);
    while ((rc = idm_lease_open(&l2, &o2)) == IDM_EBUSY && leasetest_mono_ms() < until)
        leasetest_sleep_ms(50);
    IDM_ASSERT_OK(rc);
    printf("  Z2: the id taken by another %lld ms into the partition\n",
           LL((leasetest_mono_ns() - t_cut) / 1000000));
    idm_lease_status_get(l, &st);
    CHECK(idm_lease_mark(l2) >= st.mark_ms, "the new holder's mark %lld below the old one's %lld",
          LL(idm_lease_mark(l2)), LL(st.mark_ms));
    g2 = leasetest_gen_after_loss(layout, l2);
    IDM_ASSERT_OK(idm_lease_attach(l2, g2));
    leasetest_mint_n(g2, &iv, 500);

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD); /* heal */
    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost && st.last_error == IDM_ELEASE, "after the heal: lost %d, %s", st.lost,
          idm_err_name(st.last_error));
    printf("  Z2: healed; the first holder hears its session expired\n");
    leasetest_minter_stop(&m);
    CHECK(m.first_refused_ns != 0, "the partitioned holder did not stop");
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    CHECK(m.after_refusal == 0, "%d ids minted after the first refusal", m.after_refusal);
    CHECK(m.last_ok_before_ns < m.deadline_at_refusal + LEASETEST_COARSE_NS,
          "a mint started %lld ms past the deadline",
          LL((m.last_ok_before_ns - m.deadline_at_refusal) / 1000000));
    CHECK(m.deadline_at_refusal <= t_cut + INT64_C(2000) * 1000000,
          "the deadline %lld ms after the cut", LL((m.deadline_at_refusal - t_cut) / 1000000));
    leasetest_mint_n(g2, &iv, 500);
    {
        idm_test_idvec all = {0};
        for (size_t i = 0; i < m.iv.n; i++)
            idm_test_idvec_push(&all, m.iv.v[i]);
        for (size_t i = 0; i < iv.n; i++)
            idm_test_idvec_push(&all, iv.v[i]);
        idm_test_check_ids(&all); /* one worker id: the second holder's above the first's */
        idm_test_idvec_free(&all);
    }
    assert_true(worker_node("z2", 0, NULL)); /* the new holder's, untouched */
    IDM_ASSERT_RC(idm_lease_close(l), 0);    /* lost: nothing to release */
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g);
    idm_snowflake_close(g2);
    idm_tcpproxy_stop(px);
    idm_test_idvec_free(&m.iv);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
    free(direct);
}

/* The TTL granted is the session timeout the server grants: its maximum
 * (60 s here) for a longer one asked for. */
static void granted_session_timeout(void **unused)
{
    char *url = url_for(g_one.eps, "granted");
    idm_lease_opts o;
    idm_lease *l;
    (void)unused;
    lease_opts(&o, url, 4);
    o.ttl_ms = 120000;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm__lease_ttl_ms(l), 60000);
    IDM_ASSERT_OK(idm_lease_close(l));
    o.ttl_ms = 1000;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm__lease_ttl_ms(l), 1000);
    IDM_ASSERT_OK(idm_lease_close(l));
    free(url);
}

/* A forked child's close frees its copy and sends nothing: the parent's
 * session, worker node and renewals go on. */
static void forked_child_close(void **unused)
{
    char *url = url_for(g_one.eps, "fork");
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    int64_t owner = 0, owner2 = 0;
    int status;
    pid_t pid;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    assert_true(worker_node("fork", 0, &owner));
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(idm_lease_close(l) == IDM_EFORKED ? 0 : 1); /* no atexit: the servers stay */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int k = 0; k < 2; k++) {
        idm_lease_status_get(l, &st);
        leasetest_wait_status(l, &st, false, st.renewals);
        CHECK(!st.lost && st.last_error == 0, "lost %d, %s", st.lost,
              idm_err_name(st.last_error));
    }
    assert_true(worker_node("fork", 0, &owner2));
    assert_int_equal(owner2, owner);
    leasetest_mint_n(g, &iv, 100);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* Close with the server gone silent returns by itself (the release gives
 * up after its budget; the session's close does not wait for long). */
static void close_with_server_gone(void **unused)
{
    idm_tcpproxy *px = proxy_start();
    char *url = proxy_url(px, "gone");
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec iv = {0};
    int64_t t0;
    int rc;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    t0 = leasetest_mono_ms();
    rc = idm_lease_close(l);
    printf("  close with the server silent: %s after %lld ms (session timeout 2000 ms)\n",
           idm_err_name(rc), LL(leasetest_mono_ms() - t0));
    CHECK(rc == IDM_EIO, "close: %s", idm_err_name(rc));
    CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "hung");
    idm_snowflake_close(g);
    idm_tcpproxy_stop(px);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* ----------------------------------------------------------- ensemble */

/* Z4: the leader of a three-member ensemble killed while three holders
 * mint: each keeps its session and worker id (its node's owner does not
 * change), renews again, never stops (the members elect a new leader well
 * within the session timeout), and no id repeats. */
static void z4_leader_killed(void **unused)
{
    char *url = url_for(g_three.eps, "z4");
    zktest_conn *c = zktest_connect(g_three.eps);
    idm_lease_opts o;
    idm_lease *l[3];
    idm_snowflake *g[3];
    idm_layout *layout;
    idm_lease_status st;
    leasetest_minter m[3];
    int64_t owner[3], t0;
    int leader;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 8);
    o.ttl_ms = 10000;
    for (int k = 0; k < 3; k++) {
        char path[64], buf[64];
        g[k] = leasetest_claim(&l[k], &o, layout);
        snprintf(path, sizeof path, "/idmint/z4/workers/%u", (unsigned)idm_lease_worker(l[k]));
        assert_int_equal(zktest_get(c, path, buf, sizeof buf, &owner[k], NULL), 0);
        leasetest_minter_start(&m[k], g[k], l[k]);
    }
    leader = zktest_leader(&g_three);
    t0 = leasetest_mono_ms();
    zktest_kill(&g_three, leader);
    printf("  Z4: leader %d killed\n", leader);
    /* Each renews again after the kill, with its session. */
    {
        uint64_t before[3];
        for (int k = 0; k < 3; k++) {
            idm_lease_status_get(l[k], &st);
            before[k] = st.renewals;
        }
        for (int k = 0; k < 3; k++) {
            leasetest_wait_status(l[k], &st, false, before[k]);
            CHECK(!st.lost && st.last_error == 0, "holder %d: lost %d, %s", k, st.lost,
                  idm_err_name(st.last_error));
        }
    }
    {
        uint64_t failures = 0;
        for (int k = 0; k < 3; k++) {
            idm_lease_status_get(l[k], &st);
            failures += st.failures;
        }
        printf("  Z4: every holder renewed %lld ms after the kill (%llu renewals failed "
               "meanwhile, none lost)\n",
               LL(leasetest_mono_ms() - t0), ULL(failures));
    }
    leasetest_sleep_ms(500);
    for (int k = 0; k < 3; k++) {
        char path[64], buf[64];
        int64_t now_owner = 0;
        leasetest_minter_stop(&m[k]);
        CHECK(atomic_load(&m[k].refused) == 0, "holder %d stopped: %d mints refused", k,
              atomic_load(&m[k].refused));
        snprintf(path, sizeof path, "/idmint/z4/workers/%u", (unsigned)idm_lease_worker(l[k]));
        assert_int_equal(zktest_get(c, path, buf, sizeof buf, &now_owner, NULL), 0);
        CHECK(now_owner == owner[k], "holder %d: the node's session changed", k);
    }
    {
        idm_test_idvec all = {0};
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < m[k].iv.n; i++)
                idm_test_idvec_push(&all, m[k].iv.v[i]);
            CHECK(m[k].iv.n > 100, "holder %d minted %zu", k, m[k].iv.n);
        }
        leasetest_no_duplicates(&all);
        idm_test_idvec_free(&all);
    }
    for (int k = 0; k < 3; k++) {
        IDM_ASSERT_OK(idm_lease_close(l[k]));
        idm_snowflake_close(g[k]);
        idm_test_idvec_free(&m[k].iv);
    }
    zktest_restart(&g_three, leader);
    zktest_close(c);
    idm_layout_free(layout);
    free(url);
}

/* --------------------------------------------------------------- setup */

static void stop_all(void)
{
    leasetest_thaw_any();
    zktest_stop(&g_one);
    zktest_stop(&g_three);
}

static int setup_one(void **unused)
{
    (void)unused;
    if (zktest_start(&g_one, 1) != 0)
        return -1;
    return 0;
}

static int teardown_one(void **unused)
{
    (void)unused;
    leasetest_thaw_any();
    conn_drop();
    zktest_stop(&g_one);
    return 0;
}

static int setup_three(void **unused)
{
    (void)unused;
    return zktest_start(&g_three, 3);
}

static int teardown_three(void **unused)
{
    (void)unused;
    zktest_stop(&g_three);
    return 0;
}

int main(void)
{
    const struct CMUnitTest one[] = {
        cmocka_unit_test(bad_urls),
        cmocka_unit_test(z5_node_names),
        cmocka_unit_test(z5_foreign_names_on_server),
        cmocka_unit_test(claim_renew_release),
        cmocka_unit_test(e1_racing_claimants),
        cmocka_unit_test(round_trips_and_1025th_claimant),
        cmocka_unit_test(scope_refused),
        cmocka_unit_test(marks_only_rise),
        cmocka_unit_test(mark_not_a_number),
        cmocka_unit_test(worker_node_deleted),
        cmocka_unit_test(granted_session_timeout),
        cmocka_unit_test(forked_child_close),
        cmocka_unit_test(skewed_handoff),
        cmocka_unit_test(z3_killed_holder_restarted),
        cmocka_unit_test(sigstop_holder_past_timeout),
        cmocka_unit_test(z1_connection_lost),
        cmocka_unit_test(z2_partition_expires_session),
        cmocka_unit_test(close_with_server_gone),
    };
    const struct CMUnitTest three[] = {
        cmocka_unit_test(z4_leader_killed),
    };
    const char *filter = getenv("IDM_TEST_FILTER");
    int failed;
    signal(SIGPIPE, SIG_IGN);
    atexit(stop_all);
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    failed = cmocka_run_group_tests_name("zk, standalone", one, setup_one, teardown_one);
    failed += cmocka_run_group_tests_name("zk, three members", three, setup_three,
                                          teardown_three);
    return failed;
}
