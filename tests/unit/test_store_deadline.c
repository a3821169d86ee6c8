/* SPDX-License-Identifier: MIT */
/*
 * The store's timeout (idm_store_set_timeout): every call on a store ends
 * within it, whatever the database or the network does, and a take that
 * ran past it is a gap, never handed out.
 *
 * PostgreSQL (a server this program starts with scripts/pg-test-server.sh,
 * as test_store.c does, reached directly or through tests/util/tcpproxy):
 * a take through a proxy that stops forwarding (a silent network) fails
 * with IDM_EUNAVAIL "no answer within", and once the proxy forwards again
 * the next take works, above every block taken before; the same with a row
 * lock another session holds open; connecting into the silence (open, and
 * the first call after a drop) fails the same way, and a refusing proxy
 * fails at once; an allocator over two databases keeps handing out unique
 * ids from the one that answers while the other is silent.
 *
 * SQLite: the wait for another connection's write lock ends at the store's
 * timeout (shorter and longer than the old fixed 5 s), and so does the
 * wait for this process's other writers on the file.
 *
 * And the bounds: 1 ms to an hour, else IDM_EINVAL naming the value.
 *
 * No test measures time: they rely on calls returning (ctest's timeout
 * turns a hang into a failure) and on what the calls say.
 *
 * IDM_TEST_FILTER (a cmocka pattern, e.g. "pg_row*") runs only the tests
 * whose names match.
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <idmint/segment.h>
#include <libpq-fe.h> /* a second session that holds a row lock */
#include <sqlite3.h>  /* a connection that holds the write lock */

#include "tcpproxy.h"
#include "pgtest.h"
#include "testutil.h"
#include "../../src/segment/segment_internal.h" /* the floor calls */

static char *g_tmp;   /* SQLite files, for the whole run */
static int g_pgport;

#define stop_pg idm_test_pg_stop
#define pg_sql(sql) idm_test_pg_sql("postgres", (sql))
static char g_pg_url[256]; /* straight to the server, database postgres */

/* ------------------------------------------------------------- helpers */

static idm_store *open_ok(const char *url)
{
    idm_store *s = NULL;
    IDM_ASSERT_OK(idm_store_open(&s, url));
    assert_non_null(s);
    return s;
}

/* A URL for database db through port. */
static void url_at(char *out, size_t cap, int port, const char *db)
{
    snprintf(out, cap, "postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db);
}

static idm_tcpproxy *proxy_ok(void)
{
    idm_tcpproxy *px = idm_tcpproxy_start(g_pgport);
    assert_non_null(px);
    return px;
}

/* rc was want and the detail (saved in detail) holds every one of the
 * NULL-terminated strings that follow. */
static void expect_fail(int rc, int want, const char *detail, ...)
{
    va_list ap;
    const char *part;
    CHECK(rc == want, "got %s, not %s; detail: %s", idm_err_name(rc), idm_err_name(want),
          detail);
    va_start(ap, detail);
    while ((part = va_arg(ap, const char *)) != NULL)
        CHECK(strstr(detail, part) != NULL, "the detail lacks '%s': %s", part, detail);
    va_end(ap);
    CHECK(strchr(detail, '\n') == NULL, "the detail has a newline: %s", detail);
}

/* The call's rc, its detail saved before anything else can replace it. */
#define SAVE(call, rc, detail)                                                  \
    do {                                                                        \
        (rc) = (call);                                                          \
        snprintf((detail), sizeof(detail), "%s", idm_error_detail());           \
    } while (0)

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* ------------------------------------------------------------- groups */

static int setup_pg(void **state)
{
    (void)state;
    if ((g_pgport = idm_test_pg_start()) < 0)
        return -1;
    url_at(g_pg_url, sizeof g_pg_url, g_pgport, "postgres");
    return 0;
}

static int teardown_pg(void **state)
{
    (void)state;
    stop_pg();
    return 0;
}

/* ------------------------------------------------------------ the bounds */

static void set_timeout_bounds(void **state)
{
    static const struct {
        int64_t ms;
        const char *text;
    } bad[] = {
        {0, "timeout 0 ms"},
        {-1, "timeout -1 ms"},
        {3600001, "timeout 3600001 ms"},
        {INT64_MIN, "timeout -9223372036854775808 ms"},
        {INT64_MAX, "timeout 9223372036854775807 ms"},
    };
    char url[4400], detail[512];
    idm_store *stores[2];
    int rc;
    (void)state;
    snprintf(url, sizeof url, "sqlite://%s/bounds.db", g_tmp);
    stores[0] = open_ok(url);
    stores[1] = open_ok(g_pg_url);
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            SAVE(idm_store_set_timeout(stores[i], bad[j].ms), rc, detail);
            expect_fail(rc, IDM_EINVAL, detail, bad[j].text, idm_store_url(stores[i]), NULL);
        }
        IDM_ASSERT_OK(idm_store_set_timeout(stores[i], 1));
        IDM_ASSERT_OK(idm_store_set_timeout(stores[i], 3600000));
        IDM_ASSERT_OK(idm_store_set_timeout(stores[i], IDM_STORE_TIMEOUT_MS));
        /* the store still works */
        IDM_ASSERT_OK(idm_store_create(stores[i], "bounds", 1, 0, 1));
        idm_store_close(stores[i]);
    }
    SAVE(idm_store_set_timeout(NULL, 100), rc, detail);
    expect_fail(rc, IDM_EINVAL, detail, "no store", NULL);
}

/* ----------------------------------------------------------- PostgreSQL */

/* A take through a network that went silent fails within the timeout;
 * once the network is back, takes work and never reach below a block
 * handed out before (the silent take's block, maybe committed, is a gap). */
static void pg_blackhole_take(void **state)
{
    idm_tcpproxy *px = proxy_ok();
    char url[256], detail[512];
    idm_store *s, *direct = open_ok(g_pg_url);
    int64_t first = -1, hi = 0;
    int rc;
    (void)state;
    url_at(url, sizeof url, idm_tcpproxy_port(px), "postgres");
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_set_timeout(s, 300));
    IDM_ASSERT_OK(idm_store_create(direct, "bh", 1, 0, 1));
    for (int i = 0; i < 3; i++) {
        IDM_ASSERT_OK(idm_store_take(s, "bh", 10, 0, 1, &first));
        CHECK(first >= hi, "block at %lld below %lld", LL(first), LL(hi));
        hi = first + 10;
        IDM_ASSERT_OK(idm_store_take(direct, "bh", 10, 0, 1, &first));
        CHECK(first >= hi, "block at %lld below %lld", LL(first), LL(hi));
        hi = first + 10;
    }

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    SAVE(idm_store_take(s, "bh", 10, 0, 1, &first), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 300 ms", "outcome is unknown",
                NULL);
    /* reads and floors too */
    SAVE(idm_store_list(s, &(idm_seq_info *){NULL}, &(size_t){0}), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 300 ms", NULL);

    /* The network is back: the next take connects again and works. */
    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD);
    IDM_ASSERT_OK(idm_store_take(s, "bh", 10, 0, 1, &first));
    CHECK(first >= hi, "after the silence a block at %lld, below %lld handed out before",
          LL(first), LL(hi));
    hi = first + 10;
    IDM_ASSERT_OK(idm_store_take(direct, "bh", 10, 0, 1, &first));
    CHECK(first >= hi, "the direct take's block at %lld, below %lld", LL(first), LL(hi));
    hi = first + 10;
    IDM_ASSERT_OK(idm_store_take(s, "bh", 10, 0, 1, &first));
    CHECK(first >= hi, "block at %lld below %lld", LL(first), LL(hi));
    idm_store_close(s);
    idm_store_close(direct);
    idm_tcpproxy_stop(px);
}

/* How many sessions other than h's wait for a lock, as h sees it; -1 if it
 * cannot tell. */
static int lock_waiters(PGconn *h)
{
    PGresult *r = PQexec(h, "SELECT count(*) FROM pg_stat_activity"
                            " WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
    int n = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
                ? atoi(PQgetvalue(r, 0, 0))
                : -1;
    PQclear(r);
    return n;
}

/* A session that holds the counter's row lock (BEGIN; SELECT ... FOR
 * UPDATE) and says nothing: a take waits for it only until the timeout.
 * The server abandons the statement of the connection the store dropped
 * (client_connection_check_interval, servers 14 and later) while the lock
 * is still held: it does not linger, to run when the lock comes free. */
static void pg_row_lock_held(void **state)
{
    static const char *const ends[] = {"COMMIT", "ROLLBACK"};
    idm_store *s = open_ok(g_pg_url), *other = open_ok(g_pg_url);
    int64_t first = -1, hi = 0;
    (void)state;
    IDM_ASSERT_OK(idm_store_set_timeout(s, 300));
    IDM_ASSERT_OK(idm_store_create(s, "locked", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "locked", 10, 0, 1, &first));
    hi = first + 10;
    for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
        PGconn *h = PQconnectdb(g_pg_url);
        PGresult *r1, *r2, *r3;
        char detail[512];
        int rc, held, waiters;
        assert_non_null(h);
        CHECK(PQstatus(h) == CONNECTION_OK, "holder: %s", PQerrorMessage(h));
        r1 = PQexec(h, "BEGIN");
        r2 = PQexec(h, "SELECT next FROM idmint_sequences WHERE name = 'locked' FOR UPDATE");
        held = PQresultStatus(r1) == PGRES_COMMAND_OK && PQresultStatus(r2) == PGRES_TUPLES_OK &&
               PQntuples(r2) == 1;
        /* No assertion while the lock is held: a failure would leave the
         * holder's transaction open. */
        SAVE(held ? idm_store_take(s, "locked", 10, 0, 1, &first) : IDM_EIO, rc, detail);
        waiters = 0;
        if (held && PQserverVersion(h) >= 140000) {
            /* Until it is gone (ctest's timeout bounds this). */
            while ((waiters = lock_waiters(h)) > 0)
                sleep_ms(50);
        }
        r3 = PQexec(h, ends[e]);
        CHECK(held, "the holder did not get the row lock: %s", PQerrorMessage(h));
        CHECK(PQresultStatus(r3) == PGRES_COMMAND_OK, "%s: %s", ends[e], PQerrorMessage(h));
        PQclear(r1);
        PQclear(r2);
        PQclear(r3);
        PQfinish(h);
        expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 300 ms", "cannot take a block",
                    NULL);
        CHECK(waiters == 0, "the holder could not count the sessions waiting for a lock");
        /* The lock is free: takes work, above everything handed out. (On
         * servers 14 and later the abandoned statement took nothing, but a
         * take past its deadline is a gap in general: no exact value is
         * asserted.) */
        IDM_ASSERT_OK(idm_store_take(s, "locked", 10, 0, 1, &first));
        CHECK(first >= hi, "after %s a block at %lld, below %lld handed out before", ends[e],
              LL(first), LL(hi));
        hi = first + 10;
        IDM_ASSERT_OK(idm_store_take(other, "locked", 10, 0, 1, &first));
        CHECK(first >= hi, "another store's block at %lld, below %lld", LL(first), LL(hi));
        hi = first + 10;
    }
    idm_store_close(other);
    idm_store_close(s);
}

/* Connecting into a silent network is bounded: open (its timeout is the
 * default) and the first call after a drop (the store's). A proxy that
 * refuses fails at once; once it forwards, the store works again. */
static void pg_connect_blackholed(void **state)
{
    idm_tcpproxy *px = proxy_ok();
    char url[256], detail[512];
    idm_store *s = NULL;
    int64_t first = -1, hi = 0, floor = -1;
    unsigned accepted;
    int rc;
    (void)state;
    url_at(url, sizeof url, idm_tcpproxy_port(px), "postgres");

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    SAVE(idm_store_open(&s, url), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "cannot connect", "no answer within", NULL);
    assert_null(s);
    CHECK(idm_tcpproxy_accepted(px) == 1, "the proxy accepted %u connections",
          idm_tcpproxy_accepted(px));

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD);
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_set_timeout(s, 300));
    IDM_ASSERT_OK(idm_store_create(s, "conn", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "conn", 10, 0, 1, &first));
    hi = first + 10;

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    SAVE(idm_store_take(s, "conn", 10, 0, 1, &first), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 300 ms", NULL);
    /* the connection was dropped: each call now connects, into the silence */
    accepted = idm_tcpproxy_accepted(px);
    SAVE(idm_store_take(s, "conn", 10, 0, 1, &first), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "cannot connect", "no answer within 300 ms", NULL);
    SAVE(idm_store_create(s, "conn2", 1, 0, 1), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 300 ms", NULL);
    SAVE(idm__store_floor_get(s, "conn", 0, &floor), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 300 ms", NULL);
    CHECK(idm_tcpproxy_accepted(px) >= accepted + 2, "no new connection after the drop");

    /* a proxy that refuses: at once, with libpq's reason */
    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_CLOSE);
    SAVE(idm_store_take(s, "conn", 10, 0, 1, &first), rc, detail);
    expect_fail(rc, IDM_EUNAVAIL, detail, "cannot connect", NULL);

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD);
    IDM_ASSERT_OK(idm_store_take(s, "conn", 10, 0, 1, &first));
    CHECK(first >= hi, "after the silence a block at %lld, below %lld", LL(first), LL(hi));
    idm_store_close(s);
    idm_tcpproxy_stop(px);
}

/* Two databases serve one sequence, the first through a proxy. When the
 * proxy goes silent the allocator keeps handing out ids from the other
 * (each call to the silent one fails within its timeout), and every id is
 * unique, also after the proxy forwards again. The allocator may skip a
 * store it knows to be down for a while: ids are drawn (1 ms apart) until
 * it has tried the silent one again and failed, or FO_SILENT_MAX. */
#define FO_BEFORE 300
#define FO_SILENT 1000
#define FO_SILENT_MAX 30000
#define FO_AFTER 300

static void pg_allocator_fails_over(void **state)
{
    idm_tcpproxy *px = proxy_ok();
    char url0[256], url1[256];
    idm_store *stores[2];
    idm_seq_opts o;
    idm_seq_stats st;
    idm_seq *q = NULL;
    uint64_t *ids = calloc(FO_BEFORE + FO_SILENT_MAX + FO_AFTER, sizeof *ids);
    size_t n = 0;
    (void)state;
    assert_non_null(ids);
    pg_sql("CREATE DATABASE deadline2");
    url_at(url0, sizeof url0, idm_tcpproxy_port(px), "postgres");
    url_at(url1, sizeof url1, g_pgport, "deadline2");
    stores[0] = open_ok(url0);
    stores[1] = open_ok(url1);
    IDM_ASSERT_OK(idm_store_set_timeout(stores[0], 300));
    IDM_ASSERT_OK(idm_store_create(stores[0], "fo", 1, 0, 2));
    IDM_ASSERT_OK(idm_store_create(stores[1], "fo", 1, 1, 2));
    idm_seq_opts_init(&o);
    o.name = "fo";
    o.stores = stores;
    o.nstores = 2;
    o.min_block = 20;
    o.max_block = 20;
    o.wait_ms = 60000;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < FO_BEFORE; i++, n++) {
        int64_t id = -1;
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n] = (uint64_t)id;
    }

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_BLACKHOLE);
    memset(&st, 0, sizeof st);
    for (int i = 0; i < FO_SILENT_MAX && (i < FO_SILENT || st.fetch_errors == 0); i++, n++) {
        int64_t id = -1;
        int rc = idm_seq_next(q, &id);
        if (rc != 0)
            idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD); /* let close finish */
        CHECK(rc == 0, "id %d with store 0 silent: %s: %s", i, idm_err_name(rc),
              idm_error_detail());
        ids[n] = (uint64_t)id;
        idm_seq_stats_get(q, &st);
        sleep_ms(1);
    }
    CHECK(st.fetch_errors > 0, "no failed fetch while store 0 was silent (%llu fetches)",
          ULL(st.fetches));
    CHECK(strstr(st.last_detail, "no answer within 300 ms") != NULL,
          "the last failed fetch: %s", st.last_detail);

    idm_tcpproxy_set_mode(px, IDM_TCPPROXY_FORWARD);
    for (int i = 0; i < FO_AFTER; i++, n++) {
        int64_t id = -1;
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n] = (uint64_t)id;
    }
    idm_seq_close(q);
    CHECK(idm_test_count_duplicates(ids, n) == 0, "an id was handed out twice");
    free(ids);
    idm_store_close(stores[0]);
    idm_store_close(stores[1]);
    idm_tcpproxy_stop(px);
}

/* --------------------------------------------------------------- SQLite */

/* A connection of our own to the file that holds its write lock. */
static sqlite3 *hold_write_lock(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void release(sqlite3 *db, const char *how)
{
    assert_int_equal(sqlite3_exec(db, how, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* The wait for another connection's write lock ends at the timeout (not
 * at a fixed 5 s), nothing is written, and a rejected timeout leaves the
 * one set before in force. */
static void sqlite_busy_until_deadline(void **state)
{
    char path[4300], url[4400], detail[512];
    idm_store *s;
    sqlite3 *db;
    int64_t first = -1, hi;
    int rc, rc_floor;
    (void)state;
    snprintf(path, sizeof path, "%s/busy.db", g_tmp);
    snprintf(url, sizeof url, "sqlite://%s", path);
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_create(s, "busy", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "busy", 10, 0, 1, &first));
    hi = first + 10;
    IDM_ASSERT_OK(idm_store_set_timeout(s, 200));
    IDM_ASSERT_RC(idm_store_set_timeout(s, 0), IDM_EINVAL);
    for (int round = 0; round < 2; round++) {
        char fdetail[512];
        db = hold_write_lock(path);
        /* No assertion while the lock is held (it would stay held). */
        SAVE(idm_store_take(s, "busy", 10, 0, 1, &first), rc, detail);
        SAVE(idm__store_floor_raise(s, "busy", 0, 5), rc_floor, fdetail);
        release(db, round == 0 ? "COMMIT" : "ROLLBACK");
        expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 200 ms", "cannot take a block",
                    NULL);
        expect_fail(rc_floor, IDM_EUNAVAIL, fdetail, "no answer within 200 ms", NULL);
        IDM_ASSERT_OK(idm_store_take(s, "busy", 10, 0, 1, &first));
        CHECK(first == hi, "after the lock a block at %lld, not %lld (the failed take wrote "
              "nothing)", LL(first), LL(hi));
        hi = first + 10;
    }
    idm_store_close(s);
}

/* A timeout longer than the old fixed 5 s: a writer still waits for a lock
 * that is released after 6 s, and gets it. */
typedef struct late_release {
    sqlite3 *db;
    int rc;
} late_release;

static void *release_later(void *arg)
{
    late_release *r = arg;
    sleep_ms(6000);
    r->rc = sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    return NULL;
}

static void sqlite_busy_longer_than_5s(void **state)
{
    char path[4300], url[4400], detail[512];
    idm_store *s;
    late_release r = {NULL, -1};
    pthread_t th;
    int64_t first = -1;
    int rc;
    (void)state;
    snprintf(path, sizeof path, "%s/long.db", g_tmp);
    snprintf(url, sizeof url, "sqlite://%s", path);
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_create(s, "long", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_set_timeout(s, 120000));
    r.db = hold_write_lock(path);
    assert_int_equal(pthread_create(&th, NULL, release_later, &r), 0);
    SAVE(idm_store_take(s, "long", 10, 0, 1, &first), rc, detail);
    pthread_join(th, NULL);
    sqlite3_close(r.db);
    assert_int_equal(r.rc, SQLITE_OK);
    CHECK(rc == 0, "a take with a 120 s timeout gave up on a lock held for 6 s: %s: %s",
          idm_err_name(rc), detail);
    assert_int_equal(first, 1);
    idm_store_close(s);
}

/* Writers of one process on one file take turns: a writer with a short
 * timeout waits for the turn of one with a long timeout (itself waiting
 * for another connection's lock) only until its own deadline. */
typedef struct turn_taker {
    idm_store *s;
    int rc;
    int64_t first;
} turn_taker;

static void *take_in_thread(void *arg)
{
    turn_taker *t = arg;
    t->rc = idm_store_take(t->s, "turn", 10, 0, 1, &t->first);
    return NULL;
}

static void sqlite_turn_until_deadline(void **state)
{
    char path[4300], url[4400], detail[512];
    idm_store *patient, *hasty;
    turn_taker t = {NULL, -1, -1};
    sqlite3 *db;
    pthread_t th;
    int64_t first = -1;
    int rc;
    (void)state;
    snprintf(path, sizeof path, "%s/turn.db", g_tmp);
    snprintf(url, sizeof url, "sqlite://%s", path);
    patient = open_ok(url);
    hasty = open_ok(url);
    IDM_ASSERT_OK(idm_store_create(patient, "turn", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_set_timeout(patient, 120000));
    IDM_ASSERT_OK(idm_store_set_timeout(hasty, 200));
    t.s = patient;
    db = hold_write_lock(path);
    assert_int_equal(pthread_create(&th, NULL, take_in_thread, &t), 0);
    /* Let the patient writer take its turn and wait for the lock (if it
     * has not yet, the hasty one waits for the lock instead: the same
     * outcome). */
    sleep_ms(200);
    SAVE(idm_store_take(hasty, "turn", 10, 0, 1, &first), rc, detail);
    release(db, "COMMIT");
    pthread_join(th, NULL);
    expect_fail(rc, IDM_EUNAVAIL, detail, "no answer within 200 ms", NULL);
    IDM_ASSERT_RC(t.rc, 0);
    assert_int_equal(t.first, 1);
    IDM_ASSERT_OK(idm_store_take(hasty, "turn", 10, 0, 1, &first));
    assert_int_equal(first, 11);
    idm_store_close(hasty);
    idm_store_close(patient);
}

int main(void)
{
    const struct CMUnitTest sqlite_tests[] = {
        cmocka_unit_test(sqlite_busy_until_deadline),
        cmocka_unit_test(sqlite_turn_until_deadline),
        cmocka_unit_test(sqlite_busy_longer_than_5s),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(set_timeout_bounds),
        cmocka_unit_test(pg_blackhole_take),
        cmocka_unit_test(pg_row_lock_held),
        cmocka_unit_test(pg_connect_blackholed),
        cmocka_unit_test(pg_allocator_fails_over),
    };
    const char *filter = getenv("IDM_TEST_FILTER");
    int failed;
    if (idm_test_pg_init("test_store_deadline") != 0)
        return 1;
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    signal(SIGPIPE, SIG_IGN);
    g_tmp = idm_test_tmpdir();
    failed = cmocka_run_group_tests_name("deadline: sqlite", sqlite_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("deadline: postgres", pg_tests, setup_pg, teardown_pg);
    idm_test_rmtree(g_tmp);
    free(g_tmp);
    return failed;
}
