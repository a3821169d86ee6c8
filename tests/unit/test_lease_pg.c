/* SPDX-License-Identifier: MIT */
/*
 * Worker-id leases on the PostgreSQL backend (postgres://), against a real
 * PostgreSQL server this program starts with scripts/pg-test-server.sh
 * (tests/util/pgtest.h), and a second one run under libfaketime for P6.
 * Each test keeps its table in a schema of its own (the URL's search_path).
 *
 * Rows of the fault catalogue: P6 the database's clock jumps forward past a
 * holder's expiry, P7 expiry judged and written by the statement's own time
 * (clock_timestamp(), not now()), P11 the holder's session ended by the
 * server (pg_terminate_backend), P12 a role that may not create the table;
 * and the etcd rows as they apply here: E1 racing claimants (on a table
 * that does not exist yet), E3 the claim taken over by another holder
 * (generation changed: lost, and the late renewal leaves the new holder's
 * row alone), E11 the server stopped and restarted under a holder (it
 * stops at its deadline, exactly, and resumes), E13 a clean release, E14
 * every id taken (1,024: the 1,025th claimant is refused); plus scopes,
 * marks that only rise, bad URLs, a handoff to a holder whose clock is
 * behind and a forked child closing its copy. Every test checks that no id
 * is minted twice. The process-level tests (kill -9 churn, SIGSTOP past the
 * TTL) are in tests/cli/test_lease_pg.sh.
 *
 * No test measures elapsed time: deadlines are checked on an injected
 * clock, and waits for an event are bounded only to end a hung test.
 *
 * IDM_TEST_FILTER (a cmocka pattern, e.g. "p7*") runs only the tests whose
 * names match.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>
#include <libpq-fe.h> /* the test's own sessions: locks held open */

#include "leasetest.h"
#include "pgtest.h"
#include "testutil.h"
#include "../../src/lease/postgres_internal.h"

static int g_port;

/* ------------------------------------------------------------- helpers */

/* sql (printf-style) in database postgres; the test fails if it does. */
__attribute__((format(printf, 1, 2))) static void sql(const char *fmt, ...)
{
    char q[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    idm_test_pg_sql("postgres", q);
}

/* The first value of sql's answer as an int64 (0 if empty). */
__attribute__((format(printf, 1, 2))) static int64_t sql_i64(const char *fmt, ...)
{
    char q[4096], out[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    idm_test_pg_query("postgres", q, out, sizeof out);
    return strtoll(out, NULL, 10);
}

/* A fresh schema and the URL whose search_path names it (malloc'd). */
static char *url_for(const char *schema)
{
    char *u = malloc(512);
    assert_non_null(u);
    sql("SET client_min_messages = warning; DROP SCHEMA IF EXISTS %s CASCADE; CREATE SCHEMA %s",
        schema, schema);
    snprintf(u, 512,
             "postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&"
             "options=-csearch_path%%3D%s",
             g_port, schema);
    return u;
}

/* For the test bodies every coordinator shares (leasetest.h). */
static const leasetest_coord k_coord = {url_for, 1500}; /* renewals every 500 ms */

static void lease_opts(idm_lease_opts *o, const char *url, uint32_t max)
{
    leasetest_opts(o, url, max, k_coord.ttl_ms);
}

/* The pid of the one lease session the server has, 0 if none. */
static int64_t lease_backend(void)
{
    return sql_i64("SELECT coalesce(max(pid), 0) FROM pg_stat_activity"
                   " WHERE application_name = '" IDM__LEASE_PG_APP "'");
}

/* Column col of worker w's row, as a number (epoch ms for expires). */
static int64_t row_i64(const char *schema, const char *col, uint32_t w)
{
    if (strcmp(col, "expires") == 0)
        return sql_i64("SELECT coalesce((extract(epoch FROM expires) * 1000)::bigint, 0)"
                       " FROM %s.idmint_workers WHERE worker = %u",
                       schema, (unsigned)w);
    return sql_i64("SELECT %s FROM %s.idmint_workers WHERE worker = %u", col, schema,
                   (unsigned)w);
}

/* A libpq session of the test's own (the URL's schema), which must work. */
static PGconn *session(const char *url)
{
    PGconn *c = PQconnectdb(url);
    CHECK(PQstatus(c) == CONNECTION_OK, "cannot connect: %s", PQerrorMessage(c));
    return c;
}

/* Run sql on c; its first value, in out if not NULL. */
static void exec_ok(PGconn *c, const char *q, char *out, size_t cap)
{
    PGresult *r = PQexec(c, q);
    ExecStatusType st = PQresultStatus(r);
    CHECK(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", q, PQerrorMessage(c));
    if (out != NULL)
        snprintf(out, cap, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
}

/* ------------------------------------------------------------- tests */

/* Bad URLs: refused with IDM_EINVAL before any connection, the password
 * never in the detail; an address where nothing listens is IDM_EIO. */
static void bad_urls(void **unused)
{
    static const char *const bad[] = {
        "postgres://u:s3cretpw@[::1/db",
        "postgres://u:s3cretpw@h:1/db?no_such_option=1",
        "postgresql://u@h:1/db?password=s3cretpw&sslmode=bogus%zz",
        "postgres://u:s3cretpw@h:x1/db",
    };
    idm_lease_opts o;
    idm_lease *l = NULL;
    char url[256];
    (void)unused;
    lease_opts(&o, NULL, 4);
    leasetest_bad_urls(&o, bad, sizeof bad / sizeof bad[0], "PostgreSQL URL", "s3cretpw");
    /* Nothing listens on port 1. */
    snprintf(url, sizeof url, "postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable");
    lease_opts(&o, url, 4);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
    CHECK(strstr(idm_error_detail(), "cannot connect") != NULL &&
              strstr(idm_error_detail(), "s3cretpw") == NULL &&
              strstr(idm_error_detail(), "u:***@127.0.0.1:1") != NULL,
          "detail %s", idm_error_detail());
    IDM_ASSERT_RC(idm_lease_list(url, 4, &(idm_lease_entry *){NULL}, &(size_t){0}), IDM_EIO);
}

/* A claim, renewals, a release (E13): one statement each; the generation
 * is the row's and rises with every claim; the release frees the id at
 * once with the exact last tick as its mark, which the next holder gets. */
static void e13_claim_renew_release(void **unused)
{
    char *url = url_for("crr");
    idm_lease_opts o;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_lease_entry *e = NULL;
    idm_test_idvec iv = {0};
    size_t n = 0;
    uint64_t trips, gen;
    idm_unix_ms last;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    assert_int_equal(idm_lease_mark(l), 0);
    gen = idm_lease_generation(l);
    assert_int_equal(gen, (uint64_t)row_i64("crr", "generation", 0));
    g = leasetest_gen(layout, l, NULL);
    trips = idm__lease_pg_round_trips();
    IDM_ASSERT_OK(idm_lease_attach(l, g)); /* the claim was the first renewal */
    assert_int_equal(idm__lease_pg_round_trips(), trips);
    leasetest_mint_n(g, &iv, 1000);
    leasetest_wait_status(l, &st, false, 1);
    CHECK(st.renewals >= 2 && st.last_error == 0 && !st.lost, "renewals %llu, %s",
          ULL(st.renewals), idm_err_name(st.last_error));
    /* One renewal, one round trip: count across the next one. */
    trips = idm__lease_pg_round_trips();
    leasetest_wait_status(l, &st, false, st.renewals);
    assert_int_equal(st.last_error, 0);
    CHECK(idm__lease_pg_round_trips() - trips == 1, "a renewal took %llu round trips",
          ULL(idm__lease_pg_round_trips() - trips));
    CHECK(row_i64("crr", "mark", 0) >= st.mark_ms, "the row's mark is below the last recorded");
    IDM_ASSERT_OK(idm_lease_list(url, 4, &e, &n));
    CHECK(n == 1 && e[0].worker == 0 && e[0].held && strcmp(e[0].holder, "test") == 0,
          "%zu entries", n);
    free(e);
    leasetest_mint_n(g, &iv, 1000);
    last = leasetest_time_of(layout, iv.v[iv.n - 1]);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);

    /* Released: free at once, with the exact last tick. */
    assert_int_equal(row_i64("crr", "expires", 0), 0);
    assert_int_equal(row_i64("crr", "mark", 0), last);
    IDM_ASSERT_OK(idm_lease_list(url, 4, &e, &n));
    CHECK(n == 1 && !e[0].held && e[0].mark_ms == last, "%zu entries", n);
    free(e);
    IDM_ASSERT_OK(idm_lease_open(&l2, &o));
    assert_int_equal(idm_lease_worker(l2), 0);
    assert_int_equal(idm_lease_mark(l2), last);
    CHECK(idm_lease_generation(l2) == gen + 1, "generation %llu after %llu",
          ULL(idm_lease_generation(l2)), ULL(gen));
    leasetest_successor(layout, l2, false, &iv, 1000, NULL, NULL);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E1: 20 claimants at once for 16 ids, on a table none has created yet:
 * 16 get distinct ids, 4 are refused "no free worker id". */
static void e1_racing_claimants(void **unused)
{
    (void)unused;
    leasetest_racing_claimants(&k_coord, "e1", 20, 16, 500);
}

/* One claim's cost: connections and statement round trips. */
static void claim_cost(const char *url, uint32_t max, int want_rc, uint32_t want_worker,
                       uint64_t *connects, uint64_t *trips)
{
    idm_lease_opts o;
    idm_lease *l = NULL;
    uint64_t c0 = idm__lease_pg_connects(), t0 = idm__lease_pg_round_trips();
    lease_opts(&o, url, max);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), want_rc);
    *connects = idm__lease_pg_connects() - c0;
    *trips = idm__lease_pg_round_trips() - t0;
    if (want_rc == 0) {
        assert_int_equal(idm_lease_worker(l), want_worker);
        IDM_ASSERT_OK(idm_lease_close(l));
    }
}

/* E14: 1,024 ids. A claim costs one statement after the session's setup
 * (one more on a table it creates), at 0 and at 1,000 of 1,024 held; with
 * all 1,024 held the 1,025th claimant is refused "no free worker id". */
static void e14_all_1024_taken(void **unused)
{
    char *url = url_for("e14");
    uint64_t conn, trips;
    (void)unused;
    claim_cost(url, 1024, 0, 0, &conn, &trips);
    printf("  E14: a claim on a new table: %llu connection, %llu round trips\n", ULL(conn),
           ULL(trips));
    CHECK(conn == 1 && trips == 3, "%llu connections, %llu round trips (setup, create, claim)",
          ULL(conn), ULL(trips));
    claim_cost(url, 1024, 0, 0, &conn, &trips);
    CHECK(conn == 1 && trips == 2, "%llu connections, %llu round trips (setup, claim)",
          ULL(conn), ULL(trips));
    sql("UPDATE e14.idmint_workers SET holder = 'other', generation = generation + 1,"
        " expires = clock_timestamp() + interval '1 hour', mark = worker + 1"
        " WHERE worker BETWEEN 0 AND 999");
    claim_cost(url, 1024, 0, 1000, &conn, &trips);
    printf("  E14: a claim at 1,000 of 1,024 held: %llu connection, %llu round trips\n",
           ULL(conn), ULL(trips));
    CHECK(conn == 1 && trips == 2, "%llu connections, %llu round trips", ULL(conn), ULL(trips));
    sql("UPDATE e14.idmint_workers SET holder = 'other', generation = generation + 1,"
        " expires = clock_timestamp() + interval '1 hour' WHERE worker BETWEEN 1000 AND 1023");
    claim_cost(url, 1024, IDM_EBUSY, 0, &conn, &trips);
    CHECK(strstr(idm_error_detail(), "no free worker id: all 1024") != NULL, "detail %s",
          idm_error_detail());
    CHECK(conn == 1 && trips == 2, "refused after %llu round trips", ULL(trips));
    /* A claimant of more ids makes their rows and takes the first. */
    claim_cost(url, 1100, 0, 1024, &conn, &trips);
    CHECK(trips == 4, "%llu round trips (setup, claim, rows, claim)", ULL(trips));
    assert_int_equal(sql_i64("SELECT count(*) FROM e14.idmint_workers WHERE worker >= 0"), 1100);
    free(url);
}

/* Scopes: the first claimant records its scope; one with another is
 * refused naming both, and nothing changes; one without is not checked. */
static void scope_refused(void **unused)
{
    char *url = url_for("scope");
    char a[IDM_LEASE_SCOPE_MAX], b[IDM_LEASE_SCOPE_MAX], rec[IDM_LEASE_SCOPE_MAX];
    idm_lease_opts o;
    idm_lease *l, *l2 = NULL;
    int64_t gen1, exp1, mark1;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", a);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", b);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, rec, sizeof rec));
    assert_string_equal(rec, "");
    lease_opts(&o, url, 4);
    o.scope = a;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    IDM_ASSERT_OK(idm_lease_close(l));
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, rec, sizeof rec));
    assert_string_equal(rec, a);
    gen1 = row_i64("scope", "generation", 0);
    exp1 = row_i64("scope", "expires", 0);
    mark1 = row_i64("scope", "mark", 0);
    o.scope = b;
    IDM_ASSERT_RC(idm_lease_open(&l2, &o), IDM_EINVAL);
    assert_null(l2);
    CHECK(strstr(idm_error_detail(), "hands out ids for 'worker of") != NULL &&
              strstr(idm_error_detail(), "asks for 'datacenter of") != NULL,
          "detail %s", idm_error_detail());
    /* Nothing moved. */
    assert_int_equal(row_i64("scope", "generation", 0), gen1);
    assert_int_equal(row_i64("scope", "expires", 0), exp1);
    assert_int_equal(row_i64("scope", "mark", 0), mark1);
    assert_int_equal(sql_i64("SELECT count(*) FROM scope.idmint_workers WHERE holder IS NOT NULL"),
                     1);
    o.scope = a;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    o.scope = NULL;
    IDM_ASSERT_OK(idm_lease_open(&l2, &o)); /* not checked */
    assert_int_equal(idm_lease_worker(l2), 1);
    IDM_ASSERT_OK(idm_lease_close(l));
    IDM_ASSERT_OK(idm_lease_close(l2));
    free(url);
}

/* Marks only rise: a renewal never lowers a mark recorded above its own
 * (a late write, or a mark set by hand), nor does a claim; the claim
 * reports the higher one as the previous holder's. */
static void marks_only_rise(void **unused)
{
    char *url = url_for("marks");
    idm_lease_opts o;
    idm_lease *l;
    idm_lease_status st;
    idm_layout *layout;
    idm_snowflake *g;
    int64_t high = leasetest_wall_ms() + 3600 * 1000;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    g = leasetest_claim(&l, &o, layout);
    sql("UPDATE marks.idmint_workers SET mark = %lld WHERE worker = 0", LL(high));
    idm_lease_status_get(l, &st);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(st.last_error == 0 && st.mark_ms < high, "renewal: %s", idm_err_name(st.last_error));
    assert_int_equal(row_i64("marks", "mark", 0), high); /* not lowered */
    /* The release records the exact final tick (the generator stopped). */
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    CHECK(row_i64("marks", "mark", 0) < high, "the release's exact mark was not recorded");
    sql("UPDATE marks.idmint_workers SET mark = %lld WHERE worker = 0", LL(high));
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_mark(l), high);
    assert_int_equal(row_i64("marks", "mark", 0), high); /* the claim's own mark is lower */
    IDM_ASSERT_OK(idm_lease_close(l)); /* nothing minted: the mark stays */
    assert_int_equal(row_i64("marks", "mark", 0), high);
    idm_layout_free(layout);
    free(url);
}

/* E3: the row is taken over (made to look expired, then claimed by
 * another): the first holder's next renewal finds the generation changed,
 * the claim lost, and it stops at once; its renewal does not touch the
 * new holder's row, and the new holder starts above its mark. */
static void e3_taken_over(void **unused)
{
    char *url = url_for("e3");
    idm_lease_opts o;
    idm_lease *a, *b;
    idm_layout *layout;
    idm_snowflake *ga;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t b_exp, b_mark;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    ga = leasetest_claim(&a, &o, layout);
    leasetest_mint_n(ga, &iv, 1000);
    /* B takes the row between two of A's renewals: wait for one, then
     * expire and claim (a renewal in between would hold it; try again). */
    for (int tries = 0;; tries++) {
        int rc;
        CHECK(tries < 20, "B never got the row");
        idm_lease_status_get(a, &st);
        leasetest_wait_status(a, &st, false, st.renewals);
        sql("UPDATE e3.idmint_workers SET expires = clock_timestamp() - interval '1 s'"
            " WHERE worker = 0");
        o.holder = "b";
        rc = idm_lease_open(&b, &o);
        o.holder = "test";
        if (rc == 0)
            break;
        IDM_ASSERT_RC(rc, IDM_EBUSY);
    }
    CHECK(idm_lease_generation(b) == idm_lease_generation(a) + 1, "generations %llu, %llu",
          ULL(idm_lease_generation(a)), ULL(idm_lease_generation(b)));
    b_exp = row_i64("e3", "expires", 0);
    b_mark = row_i64("e3", "mark", 0);
    leasetest_wait_status(a, &st, true, 0);
    CHECK(st.lost && st.last_error == IDM_ELEASE, "A: lost %d, %s", st.lost,
          idm_err_name(st.last_error));
    IDM_ASSERT_RC(idm_snowflake_next(ga, &id), IDM_ELEASE);
    CHECK(idm_lease_mark(b) >= st.mark_ms, "B's mark %lld below A's %lld",
          LL(idm_lease_mark(b)), LL(st.mark_ms));
    /* A's renewal left B's row as B wrote it. */
    assert_int_equal(row_i64("e3", "expires", 0), b_exp);
    assert_int_equal(row_i64("e3", "mark", 0), b_mark);
    assert_int_equal(sql_i64("SELECT count(*) FROM e3.idmint_workers WHERE holder = 'b'"), 1);
    IDM_ASSERT_RC(idm_lease_close(a), 0); /* lost: nothing released */
    idm_snowflake_close(ga);
    assert_int_equal(row_i64("e3", "expires", 0) != 0, 1);
    leasetest_successor(layout, b, true, &iv, 1000, NULL, NULL); /* above all of A's ids */
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

/* P12: a role that may not create the table gets a clear error naming the
 * table and what to do; once it exists and the role may use it, it claims. */
static void p12_create_denied(void **unused)
{
    char url[512];
    char *own = url_for("weak");
    idm_lease_opts o;
    idm_lease *l = NULL;
    (void)unused;
    sql("SET client_min_messages = warning; DROP ROLE IF EXISTS weak; CREATE ROLE weak LOGIN;"
        " GRANT USAGE ON SCHEMA weak TO weak");
    snprintf(url, sizeof url,
             "postgres://weak@127.0.0.1:%d/postgres?sslmode=disable&"
             "options=-csearch_path%%3Dweak",
             g_port);
    lease_opts(&o, url, 4);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
    assert_null(l);
    CHECK(strstr(idm_error_detail(), "cannot create table idmint_workers") != NULL &&
              strstr(idm_error_detail(), "permission denied") != NULL &&
              strstr(idm_error_detail(), "grant this role CREATE") != NULL,
          "detail %s", idm_error_detail());
    printf("  P12: %s\n", idm_error_detail());
    /* The owner creates it (its first claim) and lets the role use it. */
    lease_opts(&o, own, 4);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    IDM_ASSERT_OK(idm_lease_close(l));
    sql("GRANT SELECT, INSERT, UPDATE ON weak.idmint_workers TO weak");
    lease_opts(&o, url, 4);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    IDM_ASSERT_OK(idm_lease_close(l));
    sql("SET client_min_messages = warning; DROP SCHEMA weak CASCADE; DROP ROLE weak");
    free(own);
}

typedef struct opener {
    idm_lease_opts o;
    idm_lease *l;
    int rc;
    char detail[256];
} opener;

static void *open_thread(void *arg)
{
    opener *op = arg;
    op->rc = idm_lease_open(&op->l, &op->o);
    snprintf(op->detail, sizeof op->detail, "%s", idm_error_detail());
    return NULL;
}

/* Wait until a lease session waits for a lock. */
static void wait_lock_waiter(void)
{
    int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    while (sql_i64("SELECT count(*) FROM pg_stat_activity WHERE application_name = '"
                   IDM__LEASE_PG_APP "' AND wait_event_type = 'Lock'") == 0) {
        CHECK(leasetest_mono_ms() < until, "no lease session waits for the lock");
        leasetest_sleep_ms(20);
    }
}

/* P7: a statement that waited (here for a table lock another session
 * holds) judges expiry and writes it by the time it runs at,
 * clock_timestamp(), not its transaction's start, now(): a row that
 * expired while the claim waited is free to it, and the expiry it writes
 * is a full TTL from when it ran. The same for a renewal. */
static void p7_clock_timestamp(void **unused)
{
    char *url = url_for("p7");
    char t_u[64], t_r[64];
    idm_lease_opts o;
    idm_lease *l;
    idm_lease_status st;
    idm_layout *layout;
    idm_snowflake *g;
    opener op;
    pthread_t th;
    PGconn *lk;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    IDM_ASSERT_OK(idm_lease_open(&l, &o)); /* makes the table */
    IDM_ASSERT_OK(idm_lease_close(l));
    sql("UPDATE p7.idmint_workers SET holder = 'other', generation = generation + 1,"
        " expires = clock_timestamp() + interval '1 hour' WHERE worker = 0");

    lk = session(url);
    exec_ok(lk, "BEGIN", NULL, 0);
    exec_ok(lk, "LOCK TABLE idmint_workers IN ACCESS EXCLUSIVE MODE", NULL, 0);
    lease_opts(&op.o, url, 1);
    op.o.ttl_ms = 10000; /* the claim may wait 6.6 s */
    op.l = NULL;
    assert_int_equal(pthread_create(&th, NULL, open_thread, &op), 0);
    wait_lock_waiter(); /* the claim's statement has started, and waits */
    /* The row expires now, after the claim's transaction started. */
    exec_ok(lk, "UPDATE idmint_workers SET expires = clock_timestamp() WHERE worker = 0", NULL, 0);
    exec_ok(lk, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", t_u, sizeof t_u);
    exec_ok(lk, "COMMIT", NULL, 0);
    pthread_join(th, NULL);
    CHECK(op.rc == 0, "P7: the claim after the wait: %s: %s", idm_err_name(op.rc), op.detail);
    assert_int_equal(idm_lease_worker(op.l), 0);
    CHECK(row_i64("p7", "expires", 0) >= strtoll(t_u, NULL, 10) + 10000,
          "P7: the claim wrote an expiry %lld ms from the lock's release, not a TTL",
          LL(row_i64("p7", "expires", 0) - strtoll(t_u, NULL, 10)));

    /* A renewal that waits for the lock. */
    g = leasetest_gen(layout, op.l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(op.l, g));
    exec_ok(lk, "BEGIN", NULL, 0);
    exec_ok(lk, "LOCK TABLE idmint_workers IN ACCESS EXCLUSIVE MODE", NULL, 0);
    idm_lease_status_get(op.l, &st);
    wait_lock_waiter(); /* the keeper's renewal waits */
    leasetest_sleep_ms(200);      /* now() and clock_timestamp() now differ by this at least */
    exec_ok(lk, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", t_r, sizeof t_r);
    exec_ok(lk, "COMMIT", NULL, 0);
    leasetest_wait_status(op.l, &st, false, st.renewals);
    CHECK(st.last_error == 0, "renewal: %s", idm_err_name(st.last_error));
    CHECK(row_i64("p7", "expires", 0) >= strtoll(t_r, NULL, 10) + 10000,
          "P7: the renewal wrote an expiry %lld ms from the lock's release, not a TTL",
          LL(row_i64("p7", "expires", 0) - strtoll(t_r, NULL, 10)));
    PQfinish(lk);
    IDM_ASSERT_OK(idm_lease_close(op.l));
    idm_snowflake_close(g);
    idm_layout_free(layout);
    free(url);
}

/* P11: the server ends the holder's session (pg_terminate_backend): the
 * next renewal connects again and works, the claim is kept, nothing lost
 * or minted twice. */
static void p11_session_killed(void **unused)
{
    char *url = url_for("p11");
    idm_lease_opts o;
    idm_lease *l;
    idm_lease_status st;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec iv = {0};
    int64_t pid, pid2;
    uint64_t connects;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 1000);
    pid = lease_backend();
    assert_true(pid > 0);
    connects = idm__lease_pg_connects();
    for (int k = 0; k < 2; k++) {
        sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = '" IDM__LEASE_PG_APP "'");
        idm_lease_status_get(l, &st);
        leasetest_wait_status(l, &st, false, st.renewals);
        CHECK(st.last_error == 0 && !st.lost && st.failures == 0,
              "P11: after the kill: %s, %llu failures", idm_err_name(st.last_error),
              ULL(st.failures));
        leasetest_mint_n(g, &iv, 1000);
    }
    pid2 = lease_backend();
    CHECK(pid2 > 0 && pid2 != pid, "P11: the session was not made again (%lld, %lld)", LL(pid),
          LL(pid2));
    CHECK(idm__lease_pg_connects() - connects == 2, "%llu connections for two kills",
          ULL(idm__lease_pg_connects() - connects));
    assert_int_equal(idm_lease_worker(l), 0);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_test_check_ids(&iv);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* A forked child closing its copy of the lease (lease.c: IDM_EFORKED)
 * leaves the parent's session alone: no goodbye sent on it. */
static void forked_child_close(void **unused)
{
    char *url = url_for("fork");
    idm_lease_opts o;
    idm_lease *l;
    int64_t pid;
    pid_t child;
    int status;
    (void)unused;
    lease_opts(&o, url, 4);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    pid = lease_backend();
    assert_true(pid > 0);
    child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(idm_lease_close(l) == IDM_EFORKED ? 0 : 1);
    assert_int_equal(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's close: status %d", status);
    /* The parent's session is the same one, and still works. */
    leasetest_sleep_ms(100);
    assert_int_equal(lease_backend(), pid);
    IDM_ASSERT_OK(idm_lease_close(l));
    free(url);
}

/* E11: the server stopped (immediate mode) and started again under a
 * holder on an injected clock: renewals fail, the holder mints until its
 * deadline T + TTL - margin (T the last renewal's send), exactly, and not
 * at it; it is not called lost; after the restart its renewals work again,
 * under the same worker id, and it mints again. */
static void e11_server_restarted(void **unused)
{
    char *url = url_for("e11");
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_manual_clock *mc;
    idm_test_idvec iv = {0};
    int64_t at;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_clocked_claim(&l, &o, layout, &mc, &st, &iv, &at);

    idm_test_pg_halt();
    idm_lease_status_get(l, &st);
    leasetest_deadline_exact(l, g, mc, at, 1500, 300, &st, &iv); /* E11 */
    printf("  E11: renewals fail with the server stopped (%s)\n", idm_err_name(st.last_error));

    idm_test_pg_restart();
    idm_lease_status_get(l, &st);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(st.last_error == 0 && !st.lost, "E11: after the restart: %s, lost %d",
          idm_err_name(st.last_error), st.lost);
    assert_int_equal(idm_lease_worker(l), 0);
    leasetest_mint_n(g, &iv, 100); /* resumed */
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_manual_clock_free(mc);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* P6: the database's clock jumps forward (libfaketime) past a holder's
 * expiry. Another claimant takes the id (the row looks expired: allowed),
 * starting above the first holder's recorded mark; the first holder's next
 * renewal finds the generation changed, the claim lost; no id repeats. */
static void p6_db_clock_forward(void **unused)
{
    char *url = url_for("p6");
    char off[32];
    idm_lease_opts o;
    idm_lease *a, *b = NULL;
    idm_layout *layout;
    idm_snowflake *ga;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t ahead = 0;
    int rc = -1;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1);
    ga = leasetest_claim(&a, &o, layout);
    leasetest_mint_n(ga, &iv, 1000);
    /* Jump right after one of A's renewals, so that B claims before the
     * next; if A renewed first (the row held again by the new clock),
     * jump further and try again. */
    for (int k = 1; rc != 0 && k <= 10; k++) {
        idm_lease_status_get(a, &st);
        leasetest_wait_status(a, &st, false, st.renewals);
        snprintf(off, sizeof off, "+%d", k * 600);
        idm_test_pg_faketime(off);
        ahead = sql_i64("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint") -
                leasetest_wall_ms();
        CHECK(ahead > k * 600000 - 60000, "P6: the server's clock is %lld ms ahead, not %d s",
              LL(ahead), k * 600);
        o.holder = "b";
        rc = idm_lease_open(&b, &o);
        if (rc != 0)
            IDM_ASSERT_RC(rc, IDM_EBUSY);
    }
    IDM_ASSERT_OK(rc);
    printf("  P6: the server's clock is %lld s ahead; B claimed worker %u\n", LL(ahead / 1000),
           (unsigned)idm_lease_worker(b));
    assert_int_equal(idm_lease_worker(b), idm_lease_worker(a));
    CHECK(idm_lease_generation(b) > idm_lease_generation(a), "generations %llu, %llu",
          ULL(idm_lease_generation(a)), ULL(idm_lease_generation(b)));
    leasetest_wait_status(a, &st, true, 0);
    CHECK(st.lost && st.last_error == IDM_ELEASE, "P6: A: lost %d, %s", st.lost,
          idm_err_name(st.last_error));
    IDM_ASSERT_RC(idm_snowflake_next(ga, &id), IDM_ELEASE);
    CHECK(idm_lease_mark(b) >= st.mark_ms, "P6: B's mark %lld below A's %lld",
          LL(idm_lease_mark(b)), LL(st.mark_ms));
    leasetest_successor(layout, b, true, &iv, 1000, a, ga); /* above every one of A's ids */
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* ------------------------------------------------------------- groups */

static int setup_plain(void **state)
{
    (void)state;
    return (g_port = idm_test_pg_start()) < 0 ? -1 : 0;
}

static int setup_faketime(void **state)
{
    (void)state;
    return (g_port = idm_test_pg_start_faketime("+0")) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    idm_test_pg_stop();
    return 0;
}

int main(void)
{
    const struct CMUnitTest plain[] = {
        cmocka_unit_test(bad_urls),
        cmocka_unit_test(e13_claim_renew_release),
        cmocka_unit_test(e1_racing_claimants),
        cmocka_unit_test(e14_all_1024_taken),
        cmocka_unit_test(scope_refused),
        cmocka_unit_test(marks_only_rise),
        cmocka_unit_test(e3_taken_over),
        cmocka_unit_test(skewed_handoff),
        cmocka_unit_test(p12_create_denied),
        cmocka_unit_test(p7_clock_timestamp),
        cmocka_unit_test(p11_session_killed),
        cmocka_unit_test(forked_child_close),
        cmocka_unit_test(e11_server_restarted), /* last: the server restarts */
    };
    const struct CMUnitTest faketime[] = {
        cmocka_unit_test(p6_db_clock_forward),
    };
    const char *filter = getenv("IDM_TEST_FILTER");
    int failed;
    signal(SIGPIPE, SIG_IGN);
    if (idm_test_pg_init("test_lease_pg") != 0)
        return 1;
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    failed = cmocka_run_group_tests_name("postgres", plain, setup_plain, teardown);
    failed += cmocka_run_group_tests_name("postgres under libfaketime", faketime, setup_faketime,
                                          teardown);
    return failed;
}
