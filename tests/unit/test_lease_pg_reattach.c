/* SPDX-License-Identifier: MIT */
/*
 * Restarts within the lease on the PostgreSQL backend (postgres://): the
 * backend's handle and reattach ops (backend.h), called directly, against a
 * real PostgreSQL server this program starts with scripts/pg-test-server.sh
 * (tests/util/pgtest.h). Each claim to resume is made by a forked child that
 * sends its worker id, handle and mark through a pipe and is then killed
 * with SIGKILL: a crash, its connection left for the kernel to close, its
 * row held until it expires. Each test keeps its table in a schema of its
 * own (the URL's search_path).
 *
 * Rows of the fault catalogue: E12 a holder killed with kill -9 and
 * restarted at once (it resumes its claim: same worker id, no new claim, no
 * wait; a second process with the same saved claim is refused); P13 the
 * server down or frozen when a restarted holder reattaches (an error that
 * is not IDM_ELEASE, within the reattach's budget; the row untouched; the
 * reattach works once the server is back); P14 a saved claim that is no
 * longer the row's (expired, claimed again since, a handle of another
 * worker id, garbled, another scope): refused, the row untouched.
 *
 * No test measures elapsed time: waits for an event are bounded only to end
 * a hung test.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"
#include "pgtest.h"
#include "../../src/lease/backend.h"
#include "../../src/lease/postgres_internal.h"

#define BE (&idm__lease_pg)
#define SCOPE "worker of twitter (a test)"

static int g_port;

/* ------------------------------------------------------------- helpers */

/* sql (printf-style) in database postgres; the test fails if it does. */
__attribute__((format(printf, 1, 2))) static void sql(const char *fmt, ...)
{
    char q[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    idm_test_pg_sql("postgres", q);
}

/* The first line of sql's answer (printf-style) into out (128 bytes). */
__attribute__((format(printf, 2, 3))) static void query(char *out, const char *fmt, ...)
{
    char q[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    idm_test_pg_query("postgres", q, out, 128);
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

/* Worker w's row as text, "holder|generation|mark|expires", into out (128
 * bytes): what "untouched" compares. */
static void row_of(const char *schema, uint32_t w, char *out)
{
    query(out,
          "SELECT holder || '|' || generation || '|' || mark || '|' ||"
          " coalesce((extract(epoch FROM expires) * 1000000)::bigint::text, 'free')"
          " FROM %s.idmint_workers WHERE worker = %u",
          schema, (unsigned)w);
}

/* Whether worker w's row has expired by the server's clock. */
static bool expired(const char *schema, uint32_t w)
{
    char out[128];
    query(out,
          "SELECT coalesce(expires <= clock_timestamp(), true) FROM %s.idmint_workers"
          " WHERE worker = %u",
          schema, (unsigned)w);
    return strcmp(out, "t") == 0;
}

/* Wait until worker w's row has expired on the server (a TTL of 1 s). */
static void wait_expired(const char *schema, uint32_t w)
{
    int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    while (!expired(schema, w)) {
        CHECK(leasetest_mono_ms() < until, "worker %u's row did not expire", (unsigned)w);
        leasetest_sleep_ms(100);
    }
}

static void opts_for(idm_lease_opts *o, const char *url, int64_t ttl_ms)
{
    idm_lease_opts_init(o);
    o->url = url;
    o->ttl_ms = ttl_ms;
}

/* A new backend handle on url (open connects to nothing). */
static void *open_be(const char *url, int64_t ttl_ms)
{
    idm_lease_opts o;
    void *be = NULL;
    opts_for(&o, url, ttl_ms);
    IDM_ASSERT_OK(BE->open(&be, url, &o));
    return be;
}

/* What a crashed holder left: its claim. */
typedef struct crashed {
    int rc;                /* its claim's result */
    uint32_t worker;
    uint64_t generation;
    idm_unix_ms recorded;  /* the mark its claim recorded */
    char handle[IDM_LEASE_HANDLE_MAX];
} crashed;

/* A child claims an id of url (4 ids, ttl_ms, holder "child", scope) with a
 * first mark a TTL ahead, sends what it claimed, and is killed with SIGKILL
 * before it could release anything. */
static crashed crashed_claim(const char *url, int64_t ttl_ms, const char *scope)
{
    crashed c;
    int p[2], status;
    pid_t pid, parent;
    memset(&c, 0, sizeof c);
    assert_int_equal(pipe(p), 0);
    parent = getpid();
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_lease_opts o;
        void *be = NULL;
        idm_unix_ms prev = 0;
        int64_t granted = 0;
        /* Gone with the test, should it fail before killing us. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(p[0]);
        opts_for(&o, url, ttl_ms);
        c.rc = BE->open(&be, url, &o);
        if (c.rc == 0)
            c.rc = BE->claim(be, 4, ttl_ms, "child", scope, leasetest_wall_ms() + ttl_ms,
                             &c.worker, &prev, &c.recorded, &granted);
        if (c.rc == 0) {
            c.generation = BE->generation(be);
            c.rc = BE->handle(be, c.handle, sizeof c.handle);
        }
        if (write(p[1], &c, sizeof c) != (ssize_t)sizeof c)
            _exit(2);
        pause(); /* until killed */
        _exit(0);
    }
    close(p[1]);
    assert_int_equal(read(p[0], &c, sizeof c), (ssize_t)sizeof c);
    close(p[0]);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    IDM_ASSERT_OK(c.rc);
    assert_true(c.generation > 0 && c.recorded > 0 && c.handle[0] != '\0');
    return c;
}

/* reattach on be with ttl_ms, holder "restarted", mark: its result. */
static int reattach(void *be, uint32_t worker, const char *handle, int64_t ttl_ms,
                    const char *scope, idm_unix_ms mark, idm_unix_ms *recorded)
{
    int64_t granted = 0;
    idm_unix_ms rec = 0;
    int rc = BE->reattach(be, worker, handle, ttl_ms, "restarted", scope, mark, &rec, &granted);
    if (rc == 0)
        assert_int_equal(granted, ttl_ms);
    if (recorded != NULL)
        *recorded = rec;
    return rc;
}

/* The detail of the last error names want. */
static void detail_has(const char *want)
{
    CHECK(strstr(idm_error_detail(), want) != NULL, "detail '%s' does not say '%s'",
          idm_error_detail(), want);
}

/* ------------------------------------------------------------- tests */

/* E12: a holder killed with kill -9 and restarted at once resumes its
 * claim: the same worker id, no new claim, the mark raised to the dead
 * holder's (never lowered), the generation bumped (a fencing store refuses
 * the dead holder's writes), in one connection and two statements (the
 * session's setup, the reattach). The saved claim resumes once: a second
 * process with the same handle is refused, the first untouched. Renewals
 * and the release act on the resumed claim, and the id is then free for a
 * new claim. */
static void e12_reattach_after_kill9(void **unused)
{
    char *url = url_for("e12");
    crashed c = crashed_claim(url, 3000, SCOPE);
    void *be = open_be(url, 3000), *other = open_be(url, 3000);
    char row[128], again[128], h[IDM_LEASE_HANDLE_MAX], want[48];
    idm_unix_ms rec = 0, prev = 0, r2 = 0;
    int64_t granted = 0;
    uint64_t connects, trips;
    uint32_t w = 99;
    (void)unused;
    assert_int_equal(c.worker, 0);
    /* Its row is held: a claim anew would get another id. */
    IDM_ASSERT_OK(BE->claim(other, 4, 3000, "other", SCOPE, leasetest_wall_ms(), &w, &prev, &r2,
                            &granted));
    assert_int_equal(w, 1);
    IDM_ASSERT_OK(BE->release(other, r2));
    BE->close(other);
    /* Reattached at once, with a mark below the one the dead holder
     * recorded: the recorded one stands. */
    connects = idm__lease_pg_connects();
    trips = idm__lease_pg_round_trips();
    IDM_ASSERT_OK(reattach(be, 0, c.handle, 3000, SCOPE, leasetest_wall_ms(), &rec));
    CHECK(idm__lease_pg_connects() - connects == 1 && idm__lease_pg_round_trips() - trips == 2,
          "a reattach took %llu connections and %llu round trips",
          ULL(idm__lease_pg_connects() - connects), ULL(idm__lease_pg_round_trips() - trips));
    CHECK(rec == c.recorded, "recorded %lld, the dead holder's %lld", LL(rec), LL(c.recorded));
    assert_int_equal(BE->generation(be), c.generation + 1);
    IDM_ASSERT_OK(BE->handle(be, h, sizeof h));
    snprintf(want, sizeof want, "0:%llu", ULL(c.generation + 1));
    assert_string_equal(h, want);
    row_of("e12", 0, row);
    CHECK(strncmp(row, "restarted|", 10) == 0, "row %s", row);
    /* The same saved claim, resumed by another process: refused. */
    other = open_be(url, 3000);
    IDM_ASSERT_RC(reattach(other, 0, c.handle, 3000, SCOPE, leasetest_wall_ms(), NULL),
                  IDM_ELEASE);
    detail_has("claimed or resumed again since");
    BE->close(other);
    row_of("e12", 0, again);
    assert_string_equal(row, again);
    /* A renewal, one round trip, raises the mark. */
    trips = idm__lease_pg_round_trips();
    IDM_ASSERT_OK(BE->renew(be, rec + 5, &granted));
    assert_int_equal(idm__lease_pg_round_trips() - trips, 1);
    assert_int_equal(granted, 3000);
    query(row, "SELECT mark FROM e12.idmint_workers WHERE worker = 0");
    assert_int_equal(strtoll(row, NULL, 10), rec + 5);
    /* The release frees the id with the exact final mark. */
    IDM_ASSERT_OK(BE->release(be, rec + 3));
    BE->close(be);
    other = open_be(url, 3000);
    IDM_ASSERT_OK(BE->claim(other, 4, 3000, "other", SCOPE, leasetest_wall_ms(), &w, &prev, &r2,
                            &granted));
    assert_int_equal(w, 0);
    assert_int_equal(prev, rec + 3);
    assert_int_equal(BE->generation(other), c.generation + 2);
    /* The resumed claim's handle names a claim that is gone now. */
    be = open_be(url, 3000);
    IDM_ASSERT_RC(reattach(be, 0, h, 3000, SCOPE, leasetest_wall_ms(), NULL), IDM_ELEASE);
    detail_has("claimed or resumed again since");
    BE->close(be);
    IDM_ASSERT_OK(BE->release(other, r2));
    BE->close(other);
    free(url);
}

/* P14: a saved claim whose row expired (by the server's clock) meanwhile:
 * IDM_ELEASE, the row untouched. */
static void p14_reattach_expired(void **unused)
{
    char *url = url_for("p14x");
    crashed c = crashed_claim(url, 1000, SCOPE);
    void *be = open_be(url, 1000);
    char before[128], after[128];
    (void)unused;
    wait_expired("p14x", c.worker);
    row_of("p14x", c.worker, before);
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, 1000, SCOPE, leasetest_wall_ms(), NULL),
                  IDM_ELEASE);
    detail_has("expired");
    row_of("p14x", c.worker, after);
    assert_string_equal(before, after);
    /* The handle is done with: a renewal on it has no claim. */
    IDM_ASSERT_RC(BE->renew(be, leasetest_wall_ms(), &(int64_t){0}), IDM_ELEASE);
    BE->close(be);
    free(url);
}

/* P14: a saved claim whose worker id was claimed by another holder since:
 * IDM_ELEASE, the other holder's row untouched, and it still renews. */
static void p14_reattach_claimed_since(void **unused)
{
    char *url = url_for("p14c");
    crashed c = crashed_claim(url, 1000, SCOPE);
    void *be = open_be(url, 1000), *other = open_be(url, 1000);
    char before[128], after[128];
    idm_unix_ms prev = 0, rec = 0;
    int64_t granted = 0;
    uint32_t w = 99;
    (void)unused;
    wait_expired("p14c", c.worker);
    IDM_ASSERT_OK(BE->claim(other, 4, 60000, "other", SCOPE, leasetest_wall_ms(), &w, &prev,
                            &rec, &granted));
    assert_int_equal(w, c.worker);
    assert_int_equal(BE->generation(other), c.generation + 1);
    row_of("p14c", w, before);
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, 1000, SCOPE, leasetest_wall_ms(), NULL),
                  IDM_ELEASE);
    detail_has("claimed or resumed again since");
    row_of("p14c", w, after);
    assert_string_equal(before, after);
    IDM_ASSERT_OK(BE->renew(other, rec + 1, &granted));
    IDM_ASSERT_OK(BE->release(other, rec + 1));
    BE->close(other);
    BE->close(be);
    free(url);
}

/* P14: handles that do not parse are IDM_EINVAL before any connection; a
 * handle of worker id 0 given with worker id 1, whose row is held by
 * another live holder at the same generation (every row counts its own
 * claims), is IDM_ELEASE with that row untouched. */
static void p14_reattach_bad_handles(void **unused)
{
    static const char *const garbled[] = {
        "",      "7",        ":",     "0:",   ":1",     "0:0",       "00:1", "0:01",
        "-1:1",  "0:-1",     "0:1:2", "0:1 ", " 0:1",   "0:x",       "x:1",  "65536:1",
        "1:9223372036854775807",      "1:9223372036854775808",       "99999999999999999999:1",
        "0:1\n",
    };
    char *url = url_for("p14h");
    crashed c = crashed_claim(url, 3000, SCOPE);
    void *be = open_be(url, 3000), *other = open_be(url, 3000);
    char before[128], after[128];
    idm_unix_ms prev = 0, rec = 0;
    int64_t granted = 0;
    uint64_t connects = idm__lease_pg_connects();
    uint32_t w = 99;
    (void)unused;
    assert_string_equal(c.handle, "0:1"); /* worker 0, its row's first claim */
    for (size_t i = 0; i < sizeof garbled / sizeof garbled[0]; i++) {
        int rc = reattach(be, 0, garbled[i], 3000, SCOPE, leasetest_wall_ms(), NULL);
        CHECK(rc == IDM_EINVAL, "handle '%s': %s (%s)", garbled[i], idm_err_name(rc),
              idm_error_detail());
    }
    assert_int_equal(idm__lease_pg_connects(), connects);
    /* Worker 1's first claim, live: generation 1 too. */
    IDM_ASSERT_OK(BE->claim(other, 4, 60000, "other", SCOPE, leasetest_wall_ms(), &w, &prev,
                            &rec, &granted));
    assert_int_equal(w, 1);
    assert_int_equal(BE->generation(other), 1);
    row_of("p14h", 1, before);
    IDM_ASSERT_RC(reattach(be, 1, c.handle, 3000, SCOPE, leasetest_wall_ms(), NULL), IDM_ELEASE);
    detail_has("worker id 0, not 1");
    row_of("p14h", 1, after);
    assert_string_equal(before, after);
    IDM_ASSERT_OK(BE->renew(other, rec, &granted));
    /* The handle with its own worker id resumes it. */
    IDM_ASSERT_OK(reattach(be, 0, c.handle, 3000, SCOPE, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    IDM_ASSERT_OK(BE->release(other, rec));
    BE->close(be);
    BE->close(other);
    free(url);
}

/* P14 (scopes): a reattach for another scope than the one recorded is
 * refused as a claim is (IDM_EINVAL naming both), the row untouched; with
 * the recorded scope, or none (not checked), it resumes. */
static void p14_reattach_other_scope(void **unused)
{
    char *url = url_for("p14s");
    crashed c = crashed_claim(url, 3000, SCOPE);
    void *be = open_be(url, 3000);
    char before[128], after[128];
    (void)unused;
    row_of("p14s", c.worker, before);
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, 3000, "another scope", leasetest_wall_ms(),
                           NULL),
                  IDM_EINVAL);
    detail_has("hands out ids for '" SCOPE "'; this claimant asks for 'another scope'");
    row_of("p14s", c.worker, after);
    assert_string_equal(before, after);
    BE->close(be);
    be = open_be(url, 3000);
    IDM_ASSERT_OK(reattach(be, c.worker, c.handle, 3000, NULL, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    free(url);
}

/* The postmaster's pid: the parent of its checkpointer. */
static pid_t postmaster(void)
{
    char out[128], path[160], line[256];
    long pid = 0;
    FILE *f;
    query(out, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
    snprintf(path, sizeof path, "/proc/%s/status", out);
    f = fopen(path, "r");
    CHECK(f != NULL, "no %s", path);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "PPid: %ld", &pid) == 1)
            break;
    fclose(f);
    CHECK(pid > 1, "no parent of the checkpointer %s", out);
    return (pid_t)pid;
}

/* P13: the server frozen (its postmaster stopped with SIGSTOP: a new
 * connection's start-up gets no answer) when a restarted holder
 * reattaches: IDM_EIO within the reattach's budget (TTL/3), never
 * IDM_ELEASE; once it runs again the row is untouched and the reattach
 * works. */
static void p13_reattach_server_frozen(void **unused)
{
    char *url = url_for("p13f");
    crashed c = crashed_claim(url, 3000, SCOPE);
    void *be = open_be(url, 3000);
    char before[128], after[128];
    pid_t pm = postmaster();
    int rc;
    (void)unused;
    row_of("p13f", c.worker, before);
    leasetest_freeze(pm);
    rc = reattach(be, c.worker, c.handle, 3000, SCOPE, leasetest_wall_ms(), NULL);
    leasetest_thaw(pm);
    CHECK(rc == IDM_EIO, "frozen server: %s (%s)", idm_err_name(rc), idm_error_detail());
    detail_has("no answer within 1000 ms");
    BE->close(be);
    row_of("p13f", c.worker, after);
    assert_string_equal(before, after);
    be = open_be(url, 3000);
    IDM_ASSERT_OK(reattach(be, c.worker, c.handle, 3000, SCOPE, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    free(url);
}

/* P13: the server stopped (immediate mode) when a restarted holder
 * reattaches: IDM_EIO "cannot connect", never IDM_ELEASE; started again on
 * its cluster, the claim (committed before the stop) is resumed. */
static void p13_reattach_server_stopped(void **unused)
{
    char *url = url_for("p13s");
    crashed c = crashed_claim(url, 20000, SCOPE);
    void *be = open_be(url, 20000);
    char row[128];
    int rc;
    (void)unused;
    idm_test_pg_halt();
    rc = reattach(be, c.worker, c.handle, 20000, SCOPE, leasetest_wall_ms(), NULL);
    CHECK(rc == IDM_EIO, "stopped server: %s (%s)", idm_err_name(rc), idm_error_detail());
    detail_has("cannot connect");
    BE->close(be);
    idm_test_pg_restart();
    be = open_be(url, 20000);
    IDM_ASSERT_OK(reattach(be, c.worker, c.handle, 20000, SCOPE, leasetest_wall_ms(), NULL));
    row_of("p13s", c.worker, row);
    CHECK(strncmp(row, "restarted|2|", 12) == 0, "row %s", row); /* resumed: bumped */
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    free(url);
}

/* ------------------------------------------------------------- groups */

static int setup(void **state)
{
    (void)state;
    return (g_port = idm_test_pg_start()) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    leasetest_thaw_any();
    idm_test_pg_stop();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(e12_reattach_after_kill9),
        cmocka_unit_test(p14_reattach_expired),
        cmocka_unit_test(p14_reattach_claimed_since),
        cmocka_unit_test(p14_reattach_bad_handles),
        cmocka_unit_test(p14_reattach_other_scope),
        cmocka_unit_test(p13_reattach_server_frozen),
        cmocka_unit_test(p13_reattach_server_stopped), /* last: the server restarts */
    };
    const char *filter = getenv("IDM_TEST_FILTER");
    signal(SIGPIPE, SIG_IGN);
    if (idm_test_pg_init("test_lease_pg_reattach") != 0)
        return 1;
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    return cmocka_run_group_tests_name("postgres reattach", tests, setup, teardown);
}
