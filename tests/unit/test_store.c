/* SPDX-License-Identifier: MIT */
/*
 * Ticket stores (src/segment/sqlite.c and postgres.c through store.c)
 * against real databases: SQLite files in a temporary directory and a
 * PostgreSQL server this program starts with scripts/pg-test-server.sh (its
 * group's teardown stops it; so does an atexit handler if a test aborts).
 *
 * For both backends: create/take/list round trips, k of n, create twice,
 * missing sequences, bad arguments and counters near 2^62 (each failure
 * with a detail and no change to the counter), floors, and P1 (8 threads,
 * each with its own handle, taking 500 blocks of random sizes at once: the
 * blocks are disjoint and together contiguous). SQLite also with 4
 * processes on one file. PostgreSQL also with P3 (a proxy cuts the
 * connection after the server has committed a take but before its answer
 * comes back: the take is retried on a new connection, the lost block is a
 * gap and never handed out) and a session killed by the server.
 *
 * Which database a store reaches (idm_store_identity): one SQLite file
 * under several names (., .., a symbolic and a hard link) is one store,
 * another file is another; one PostgreSQL database under URLs that differ
 * in spelling and parameter order is one store, another database or schema
 * another. And the PostgreSQL store's sessions commit with
 * synchronous_commit on although the database, the role or the URL set it
 * off, also after the server ended the session (a trigger records the
 * setting each take's session has). A SQLite store whose write lock
 * another connection holds still opens (its tables are there: nothing to
 * write) and answers reads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/segment.h>
#include <sqlite3.h> /* to hold a store's write lock from outside */

#include "pgtest.h"
#include "testutil.h"
#include "../../src/segment/segment_internal.h" /* the floor calls */

typedef struct backend {
    const char *kind;
    char url[4200];
} backend;

static backend g_sq = {"sqlite", ""}, g_pg = {"postgres", ""};
static char *g_tmp;   /* SQLite files */
static int g_pgport;

#define stop_pg idm_test_pg_stop
#define pg_sql(sql) idm_test_pg_sql("postgres", (sql))
#define pg_query idm_test_pg_query

/* ------------------------------------------------------------- helpers */

static idm_store *open_ok(const char *url)
{
    idm_store *s = NULL;
    IDM_ASSERT_OK(idm_store_open(&s, url));
    assert_non_null(s);
    return s;
}

/* The sequence's counter as list reports it; -1 if it is not listed. */
static int64_t next_of(idm_store *s, const char *name, uint32_t *k, uint32_t *n)
{
    idm_seq_info *v = NULL;
    size_t count = 0;
    int64_t next = -1;
    IDM_ASSERT_OK(idm_store_list(s, &v, &count));
    for (size_t i = 0; i < count; i++)
        if (strcmp(v[i].name, name) == 0) {
            next = v[i].next;
            if (k != NULL)
                *k = v[i].k;
            if (n != NULL)
                *n = v[i].n;
        }
    free(v);
    return next;
}

/* rc expected, with a detail line. */
#define EXPECT_FAIL(call, code)                                                         \
    do {                                                                                \
        IDM_ASSERT_RC(call, code);                                                      \
        CHECK(idm_error_detail()[0] != '\0', "%s gave no detail", #call);               \
    } while (0)

/* The identity of the store url names. */
static void identity_of(const char *url, char *out, size_t cap)
{
    idm_store *s = open_ok(url);
    IDM_ASSERT_OK(idm_store_identity(s, out, cap));
    CHECK(out[0] != '\0', "%s: empty identity", url);
    idm_store_close(s);
}

/* ------------------------------------------------------------- groups */

static int setup_sqlite(void **state)
{
    (void)state;
    g_tmp = idm_test_tmpdir();
    snprintf(g_sq.url, sizeof g_sq.url, "sqlite://%s/store.db", g_tmp);
    return 0;
}

static int teardown_sqlite(void **state)
{
    (void)state;
    idm_test_rmtree(g_tmp);
    free(g_tmp);
    g_tmp = NULL;
    return 0;
}

static int setup_pg(void **state)
{
    (void)state;
    if ((g_pgport = idm_test_pg_start()) < 0)
        return -1;
    snprintf(g_pg.url, sizeof g_pg.url,
             "postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", g_pgport);
    return 0;
}

static int teardown_pg(void **state)
{
    (void)state;
    stop_pg();
    return 0;
}

/* ------------------------------------------------- tests for both backends */

static void roundtrip(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url), *s2;
    idm_seq_info *v = NULL;
    size_t count = 0;
    int64_t first;
    IDM_ASSERT_OK(idm_store_create(s, "rt.b", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_create(s, "rt.a-Z_9", 1000, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "rt.b", 5, 0, 1, &first));
    assert_int_equal(first, 1);
    IDM_ASSERT_OK(idm_store_take(s, "rt.b", 7, 0, 1, &first));
    assert_int_equal(first, 6);
    IDM_ASSERT_OK(idm_store_take(s, "rt.b", 1, 0, 1, &first));
    assert_int_equal(first, 13);
    IDM_ASSERT_OK(idm_store_take(s, "rt.a-Z_9", 100, 0, 1, &first));
    assert_int_equal(first, 1000);

    /* list: sorted by name (bytes), with next, k and n */
    IDM_ASSERT_OK(idm_store_list(s, &v, &count));
    {
        size_t a = count, bi = count;
        for (size_t i = 0; i < count; i++) {
            if (strcmp(v[i].name, "rt.a-Z_9") == 0)
                a = i;
            if (strcmp(v[i].name, "rt.b") == 0)
                bi = i;
            if (i > 0)
                CHECK(strcmp(v[i - 1].name, v[i].name) < 0, "list not sorted at %zu", i);
        }
        assert_true(a < count && bi < count && a < bi);
        assert_int_equal(v[a].next, 1100);
        assert_int_equal(v[bi].next, 14);
        assert_int_equal(v[bi].k, 0);
        assert_int_equal(v[bi].n, 1);
    }
    free(v);

    /* another handle (another connection) continues where this one is */
    s2 = open_ok(b->url);
    IDM_ASSERT_OK(idm_store_take(s2, "rt.b", 2, 0, 1, &first));
    assert_int_equal(first, 14);
    idm_store_close(s2);
    idm_store_close(s);
    /* and so does a reopened one */
    s = open_ok(b->url);
    IDM_ASSERT_OK(idm_store_take(s, "rt.b", 1, 0, 1, &first));
    assert_int_equal(first, 16);
    assert_string_equal(idm_store_url(s), b->url);
    idm_store_close(s);
}

static void k_of_n(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    int64_t first;
    uint32_t k = 9, n = 9;
    /* store 1 of 2: odd ids; the first id at or after start 1 is 1 */
    IDM_ASSERT_OK(idm_store_create(s, "kn.odd", 1, 1, 2));
    IDM_ASSERT_OK(idm_store_take(s, "kn.odd", 3, 1, 2, &first));
    assert_int_equal(first, 1); /* ids 1, 3, 5 */
    IDM_ASSERT_OK(idm_store_take(s, "kn.odd", 2, 1, 2, &first));
    assert_int_equal(first, 7); /* ids 7, 9 */
    assert_int_equal(next_of(s, "kn.odd", &k, &n), 5); /* local units */
    assert_int_equal(k, 1);
    assert_int_equal(n, 2);
    /* store 0 of 2 starting at 10: local 5, ids 10, 12, ... */
    IDM_ASSERT_OK(idm_store_create(s, "kn.even", 10, 0, 2));
    IDM_ASSERT_OK(idm_store_take(s, "kn.even", 4, 0, 2, &first));
    assert_int_equal(first, 10);
    /* store 2 of 3 starting at 10: the first id = 2 mod 3 from 10 is 11 */
    IDM_ASSERT_OK(idm_store_create(s, "kn.three", 10, 2, 3));
    IDM_ASSERT_OK(idm_store_take(s, "kn.three", 1, 2, 3, &first));
    assert_int_equal(first, 11);
    /* the stores listed in another order: refused, and nothing taken (the
     * check is part of the statement) */
    EXPECT_FAIL(idm_store_take(s, "kn.odd", 2, 0, 2, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "kn.odd", 2, 1, 3, &first), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "store 1 of 2") != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(next_of(s, "kn.odd", &k, &n), 5);
    IDM_ASSERT_OK(idm_store_take(s, "kn.odd", 1, 1, 2, &first));
    assert_int_equal(first, 11); /* right after 7, 9: no gap */
    idm_store_close(s);
}

static void create_twice(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    int64_t first;
    uint32_t k = 9, n = 9;
    IDM_ASSERT_OK(idm_store_create(s, "twice", 100, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "twice", 5, 0, 1, &first));
    assert_int_equal(first, 100);
    EXPECT_FAIL(idm_store_create(s, "twice", 1, 0, 1), IDM_EEXIST);
    CHECK(strstr(idm_error_detail(), "twice") != NULL, "detail: %s", idm_error_detail());
    EXPECT_FAIL(idm_store_create(s, "twice", 7, 1, 2), IDM_EEXIST);
    assert_int_equal(next_of(s, "twice", &k, &n), 105);
    assert_int_equal(k, 0);
    assert_int_equal(n, 1);
    IDM_ASSERT_OK(idm_store_take(s, "twice", 1, 0, 1, &first));
    assert_int_equal(first, 105);
    idm_store_close(s);
}

static void missing(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    int64_t first = -7;
    EXPECT_FAIL(idm_store_take(s, "no-such", 1, 0, 1, &first), IDM_ENOSEQ);
    CHECK(strstr(idm_error_detail(), "no-such") != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(first, -7);
    assert_int_equal(next_of(s, "no-such", NULL, NULL), -1);
    idm_store_close(s);
}

static void bad_arguments(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    static const char *const names[] = {"",    "a b", "x/y", "caf\xc3\xa9", "semi;colon",
                                        "q'uote", "nl\n",
                                        "12345678901234567890123456789012345678901234567890"
                                        "123456789012345"};
    idm_seq_info *v = NULL;
    size_t before = 0, after = 0;
    int64_t first = -7;
    IDM_ASSERT_OK(idm_store_create(s, "args", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_list(s, &v, &before));
    free(v);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        EXPECT_FAIL(idm_store_create(s, names[i], 1, 0, 1), IDM_EINVAL);
        EXPECT_FAIL(idm_store_take(s, names[i], 1, 0, 1, &first), IDM_EINVAL);
    }
    EXPECT_FAIL(idm_store_take(s, NULL, 1, 0, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", 0, 0, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", -1, 0, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", INT64_MIN, 0, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", IDM_SEQ_MAX + 1, 0, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", INT64_MAX, 0, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", 1, 1, 1, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", 1, 0, 0, &first), IDM_EINVAL);
    EXPECT_FAIL(idm_store_take(s, "args", 1, 0, 1, NULL), IDM_EINVAL);
    EXPECT_FAIL(idm_store_create(s, "args2", -1, 0, 1), IDM_EINVAL);
    EXPECT_FAIL(idm_store_create(s, "args2", IDM_SEQ_MAX, 0, 1), IDM_EINVAL);
    EXPECT_FAIL(idm_store_create(s, "args2", 1, 2, 2), IDM_EINVAL);
    EXPECT_FAIL(idm_store_create(s, "args2", 1, 0, 1025), IDM_EINVAL);
    assert_int_equal(first, -7);
    /* nothing changed */
    assert_int_equal(next_of(s, "args", NULL, NULL), 1);
    IDM_ASSERT_OK(idm_store_list(s, &v, &after));
    free(v);
    assert_int_equal(after, before);
    idm_store_close(s);
}

static void near_max(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    int64_t first = -7;
    IDM_ASSERT_OK(idm_store_create(s, "edge", IDM_SEQ_MAX - 10, 0, 1));
    EXPECT_FAIL(idm_store_take(s, "edge", 11, 0, 1, &first), IDM_ERANGE);
    CHECK(strstr(idm_error_detail(), "edge") != NULL, "detail: %s", idm_error_detail());
    EXPECT_FAIL(idm_store_take(s, "edge", IDM_SEQ_MAX, 0, 1, &first), IDM_ERANGE);
    assert_int_equal(first, -7);
    assert_int_equal(next_of(s, "edge", NULL, NULL), IDM_SEQ_MAX - 10);
    IDM_ASSERT_OK(idm_store_take(s, "edge", 10, 0, 1, &first));
    assert_int_equal(first, IDM_SEQ_MAX - 10);
    EXPECT_FAIL(idm_store_take(s, "edge", 1, 0, 1, &first), IDM_ERANGE);
    assert_int_equal(next_of(s, "edge", NULL, NULL), IDM_SEQ_MAX);
    /* a block of the whole range at once */
    IDM_ASSERT_OK(idm_store_create(s, "whole", 0, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "whole", IDM_SEQ_MAX, 0, 1, &first));
    assert_int_equal(first, 0);
    EXPECT_FAIL(idm_store_take(s, "whole", 1, 0, 1, &first), IDM_ERANGE);
    idm_store_close(s);
}

static void floors(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    int64_t f = -7;
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 0, &f));
    assert_int_equal(f, 0);
    IDM_ASSERT_OK(idm__store_floor_raise(s, "fl", 0, 100));
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 0, &f));
    assert_int_equal(f, 100);
    IDM_ASSERT_OK(idm__store_floor_raise(s, "fl", 0, 50)); /* lower: no change */
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 0, &f));
    assert_int_equal(f, 100);
    IDM_ASSERT_OK(idm__store_floor_raise(s, "fl", 0, 100));
    IDM_ASSERT_OK(idm__store_floor_raise(s, "fl", 0, IDM_SEQ_MAX));
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 0, &f));
    assert_int_equal(f, IDM_SEQ_MAX);
    EXPECT_FAIL(idm__store_floor_raise(s, "fl", 0, -1), IDM_EINVAL);
    /* per store k and per name */
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 1, &f));
    assert_int_equal(f, 0);
    IDM_ASSERT_OK(idm__store_floor_raise(s, "fl", 1, 5));
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 1, &f));
    assert_int_equal(f, 5);
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl2", 0, &f));
    assert_int_equal(f, 0);
    idm_store_close(s);
    /* they persist */
    s = open_ok(b->url);
    IDM_ASSERT_OK(idm__store_floor_get(s, "fl", 1, &f));
    assert_int_equal(f, 5);
    idm_store_close(s);
}

/* P1: threads with their own handles take at once. */
#define P1_THREADS 8
#define P1_TAKES 500

typedef struct block {
    int64_t first, size;
} block;

typedef struct taker {
    const char *url, *name;
    uint64_t seed;
    int takes;
    block *blocks;
    int done, rc;
    char detail[256];
} taker;

static void *take_many(void *arg)
{
    taker *t = arg;
    idm_store *s = NULL;
    idm_test_rng rng;
    idm_test_rng_init(&rng, t->seed);
    t->rc = idm_store_open(&s, t->url);
    for (int i = 0; t->rc == 0 && i < t->takes; i++) {
        int64_t size = (int64_t)idm_test_rng_range(&rng, 1, 1000), first = 0;
        t->rc = idm_store_take(s, t->name, size, 0, 1, &first);
        if (t->rc == 0) {
            t->blocks[i].first = first;
            t->blocks[i].size = size;
            t->done++;
        }
    }
    if (t->rc != 0)
        snprintf(t->detail, sizeof t->detail, "%s", idm_error_detail());
    idm_store_close(s);
    return NULL;
}

static int cmp_block(const void *a, const void *b)
{
    const block *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* The blocks, sorted, are disjoint and together exactly [from, to). */
static void check_contiguous(block *v, size_t n, int64_t from, int64_t to)
{
    qsort(v, n, sizeof *v, cmp_block);
    for (size_t i = 0; i < n; i++) {
        int64_t want = i == 0 ? from : v[i - 1].first + v[i - 1].size;
        CHECK(v[i].first == want, "block %zu of %zu starts at %lld, not %lld (%s)", i, n,
              LL(v[i].first), LL(want), v[i].first < want ? "overlap" : "hole");
    }
    assert_int_equal(n > 0 ? v[n - 1].first + v[n - 1].size : from, to);
}

static void p1_threads(void **state)
{
    backend *b = *state;
    idm_store *s = open_ok(b->url);
    pthread_t th[P1_THREADS];
    taker t[P1_THREADS];
    block *all = calloc(P1_THREADS * P1_TAKES, sizeof *all);
    size_t n = 0;
    int64_t next;
    assert_non_null(all);
    IDM_ASSERT_OK(idm_store_create(s, "p1", 1, 0, 1));
    for (int i = 0; i < P1_THREADS; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].url = b->url;
        t[i].name = "p1";
        t[i].seed = idm_test_seed() + (uint64_t)i;
        t[i].takes = P1_TAKES;
        t[i].blocks = all + (size_t)i * P1_TAKES;
        assert_int_equal(pthread_create(&th[i], NULL, take_many, &t[i]), 0);
    }
    for (int i = 0; i < P1_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < P1_THREADS; i++) {
        CHECK(t[i].rc == 0, "thread %d: %s after %d takes: %s", i, idm_err_name(t[i].rc),
              t[i].done, t[i].detail);
        /* each thread's own blocks come in increasing order */
        for (int j = 1; j < t[i].done; j++)
            CHECK(t[i].blocks[j].first >= t[i].blocks[j - 1].first + t[i].blocks[j - 1].size,
                  "thread %d went backwards", i);
    }
    n = P1_THREADS * P1_TAKES;
    next = next_of(s, "p1", NULL, NULL);
    check_contiguous(all, n, 1, next);
    free(all);
    idm_store_close(s);
}

/* ------------------------------------------------------- SQLite only */

static void sqlite_bad_urls(void **state)
{
    char url[4400], dir[4300];
    static const char *const invalid[] = {
        "",
        "nourl",
        "/tmp/x.db",
        "mysql://localhost/x",
        "sqlite:",
        "sqlite://",
        "sqlite:///",
        "sqlite://relative/x.db",
        "sqlite://localhost/tmp/x.db",
        "sqlite:///tmp/x.db?mode=ro",
        "sqlite:///tmp/x.db#frag",
        "sqlite:///tmp/a%20b.db",
        "sqlite:///tmp/a\tb.db",
        "postgres://[::1/x",
        "postgres://postgres@127.0.0.1:5432/postgres?nosuchoption=1",
    };
    static int sentinel;
    idm_store *s;
    (void)state;
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        s = (idm_store *)(void *)&sentinel; /* must be cleared */
        IDM_ASSERT_RC(idm_store_open(&s, invalid[i]), IDM_EINVAL);
        CHECK(idm_error_detail()[0] != '\0', "'%s': no detail", invalid[i]);
        CHECK(s == NULL, "'%s': output not cleared", invalid[i]);
    }
    IDM_ASSERT_RC(idm_store_open(&s, NULL), IDM_EINVAL);
    IDM_ASSERT_RC(idm_store_open(NULL, g_sq.url), IDM_EINVAL);
    /* out of reach: no such directory, a directory, port 1 refuses */
    snprintf(url, sizeof url, "sqlite://%s/no/such/dir/x.db", g_tmp);
    EXPECT_FAIL(idm_store_open(&s, url), IDM_EUNAVAIL);
    assert_null(s);
    snprintf(dir, sizeof dir, "%s/adir", g_tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(url, sizeof url, "sqlite://%s", dir);
    EXPECT_FAIL(idm_store_open(&s, url), IDM_EUNAVAIL);
    assert_null(s);
    EXPECT_FAIL(idm_store_open(&s, "postgres://postgres@127.0.0.1:1/postgres"), IDM_EUNAVAIL);
    CHECK(strchr(idm_error_detail(), '\n') == NULL, "detail has a newline: %s",
          idm_error_detail());
    assert_null(s);
    /* a password never shows in messages */
    EXPECT_FAIL(idm_store_open(&s, "postgres://u:sekrit@127.0.0.1:1/postgres"), IDM_EUNAVAIL);
    CHECK(strstr(idm_error_detail(), "sekrit") == NULL, "detail: %s", idm_error_detail());
    /* a file that is not a database */
    snprintf(dir, sizeof dir, "%s/garbage.db", g_tmp);
    {
        FILE *f = fopen(dir, "w");
        assert_non_null(f);
        for (int i = 0; i < 200; i++)
            fputs("this is not a database file. ", f);
        fclose(f);
    }
    snprintf(url, sizeof url, "sqlite://%s", dir);
    EXPECT_FAIL(idm_store_open(&s, url), IDM_EUNAVAIL);
    assert_null(s);
}

static void sqlite_wal_file(void **state)
{
    char path[4300];
    struct stat st;
    idm_store *s = open_ok(g_sq.url);
    int64_t first;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(s, "wal", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "wal", 1, 0, 1, &first));
    snprintf(path, sizeof path, "%s/store.db-wal", g_tmp);
    CHECK(stat(path, &st) == 0, "no WAL file %s while the store is open", path);
    idm_store_close(s);
}

/* The store's own connections, caught as SQLite opens them (an automatic
 * extension runs on every connection the process opens). */
#define CAUGHT_MAX 8
static sqlite3 *g_caught[CAUGHT_MAX];
static int g_ncaught;

static int catch_db(sqlite3 *db, const char **err, const struct sqlite3_api_routines *api)
{
    (void)err;
    (void)api;
    if (g_ncaught < CAUGHT_MAX)
        g_caught[g_ncaught++] = db;
    return SQLITE_OK;
}

/* The first row's first column of sql on db, as text, in out. */
static void db_value(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* The store's own connection runs with synchronous=FULL (2) and in WAL
 * mode, at open and after a take: a block handed out survives power loss.
 * Asked of the store's connection itself, not of another (synchronous is a
 * setting of each connection, not of the file). */
static void sqlite_synchronous_full(void **state)
{
    idm_store *s;
    int64_t first;
    char v[32];
    (void)state;
    g_ncaught = 0;
    assert_int_equal(sqlite3_auto_extension((void (*)(void))catch_db), SQLITE_OK);
    s = open_ok(g_sq.url);
    sqlite3_cancel_auto_extension((void (*)(void))catch_db);
    CHECK(g_ncaught >= 1, "no connection seen opening the store");
    IDM_ASSERT_OK(idm_store_create(s, "sync", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "sync", 1, 0, 1, &first));
    for (int i = 0; i < g_ncaught; i++) {
        db_value(g_caught[i], "PRAGMA synchronous", v, sizeof v);
        CHECK(strcmp(v, "2") == 0, "connection %d: synchronous is %s, not 2 (FULL)", i, v);
        db_value(g_caught[i], "PRAGMA journal_mode", v, sizeof v);
        CHECK(strcmp(v, "wal") == 0, "connection %d: journal_mode is %s, not wal", i, v);
    }
    idm_store_close(s);
}

#define PROCS 4
#define PROC_TAKES 500

static void sqlite_processes(void **state)
{
    char path[PROCS][4300];
    pid_t pid[PROCS];
    block *all = calloc(PROCS * PROC_TAKES, sizeof *all);
    size_t n = 0;
    idm_store *s = open_ok(g_sq.url);
    int64_t next;
    (void)state;
    assert_non_null(all);
    IDM_ASSERT_OK(idm_store_create(s, "procs", 1000, 0, 1));
    /* No SQLite handle crosses the fork. */
    idm_store_close(s);
    fflush(NULL);
    for (int i = 0; i < PROCS; i++) {
        snprintf(path[i], sizeof path[i], "%s/procs-%d.txt", g_tmp, i);
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            FILE *f = fopen(path[i], "w");
            idm_test_rng rng;
            idm_store *cs = NULL;
            int rc;
            idm_test_rng_init(&rng, idm_test_seed() + 100 + (uint64_t)i);
            if (f == NULL || (rc = idm_store_open(&cs, g_sq.url)) != 0)
                _exit(2);
            for (int j = 0; j < PROC_TAKES; j++) {
                int64_t size = (int64_t)idm_test_rng_range(&rng, 1, 1000), first;
                if ((rc = idm_store_take(cs, "procs", size, 0, 1, &first)) != 0) {
                    fprintf(stderr, "child %d: %s: %s\n", i, idm_err_name(rc),
                            idm_error_detail());
                    _exit(3);
                }
                fprintf(f, "%lld %lld\n", LL(first), LL(size));
            }
            idm_store_close(cs);
            _exit(fclose(f) == 0 ? 0 : 4);
        }
    }
    for (int i = 0; i < PROCS; i++) {
        int st;
        FILE *f;
        long long a, b;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d failed (status %d)", i, st);
        f = fopen(path[i], "r");
        assert_non_null(f);
        while (fscanf(f, "%lld %lld", &a, &b) == 2 && n < PROCS * PROC_TAKES) {
            all[n].first = a;
            all[n].size = b;
            n++;
        }
        fclose(f);
    }
    assert_int_equal(n, PROCS * PROC_TAKES);
    s = open_ok(g_sq.url);
    next = next_of(s, "procs", NULL, NULL);
    idm_store_close(s);
    check_contiguous(all, n, 1000, next);
    free(all);
}

/* One file under several names is one store; another file another. */
static void sqlite_identity(void **state)
{
    char path[4300], other[4300], url[4400], want[160], got[160];
    const char *const spellings[] = {"/id.db",   "/./id.db",   "/sub/../id.db",
                                     "//id.db",  "/link.db",   "/hard.db",
                                     "/sub/uplink.db"};
    (void)state;
    snprintf(path, sizeof path, "%s/sub", g_tmp);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(url, sizeof url, "sqlite://%s/id.db", g_tmp);
    identity_of(url, want, sizeof want); /* creates the file */
    CHECK(strncmp(want, "sqlite:", 7) == 0, "identity %s", want);
    snprintf(path, sizeof path, "%s/id.db", g_tmp);
    snprintf(other, sizeof other, "%s/link.db", g_tmp);
    assert_int_equal(symlink(path, other), 0);
    snprintf(other, sizeof other, "%s/hard.db", g_tmp);
    assert_int_equal(link(path, other), 0);
    snprintf(other, sizeof other, "%s/sub/uplink.db", g_tmp);
    assert_int_equal(symlink("../id.db", other), 0);
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        snprintf(url, sizeof url, "sqlite://%s%s", g_tmp, spellings[i]);
        identity_of(url, got, sizeof got);
        CHECK(strcmp(got, want) == 0, "%s is %s, not %s as %s/id.db", url, got, want, g_tmp);
    }
    snprintf(url, sizeof url, "sqlite://%s/id2.db", g_tmp);
    identity_of(url, got, sizeof got);
    CHECK(strcmp(got, want) != 0, "another file, the same identity %s", got);
}

/* Another connection holds the write lock (a writer busy handing out
 * blocks, at worst one that holds it for long): opening the store, whose
 * tables exist, needs no write and waits for nothing; reads work. */
static void sqlite_open_while_writing(void **state)
{
    char path[4300], detail[512] = "";
    sqlite3 *db = NULL;
    idm_store *s = open_ok(g_sq.url), *s2 = NULL;
    idm_seq_info *v = NULL;
    size_t count = 0;
    int rc, rc_list = -1, locked;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(s, "busy", 1, 0, 1));
    idm_store_close(s);
    snprintf(path, sizeof path, "%s/store.db", g_tmp);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    locked = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    /* No assertion while the lock is held: a failure would leave it to
     * the tests after this one. */
    rc = locked == SQLITE_OK ? idm_store_open(&s2, g_sq.url) : IDM_EIO;
    if (rc == 0)
        rc_list = idm_store_list(s2, &v, &count);
    snprintf(detail, sizeof detail, "%s", idm_error_detail());
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    idm_store_close(s2);
    free(v);
    assert_int_equal(locked, SQLITE_OK);
    CHECK(rc == 0, "open while another connection holds the write lock: %s (%s)",
          idm_err_name(rc), detail);
    CHECK(rc_list == 0 && count >= 1, "list while another connection holds the write lock: "
          "%s (%s)", idm_err_name(rc_list), detail);
}

/* A child forked while another thread of the parent waits for the file's
 * write lock inside a take (holding the process's turn on the file) opens a
 * store of its own on the file and takes: the turn it inherited held must
 * not hang it (its alarm turns a hang into a failure). Whether SQLite then
 * lets the child write is SQLite's business: a child of a process with the
 * file open may see the parent's locks (SQLite's rule: do not use a
 * database across fork()), so the child may end with an error, never hang. */
typedef struct fork_taker {
    idm_store *s;
    int rc;
    int64_t first;
} fork_taker;

static void *fork_take_thread(void *arg)
{
    fork_taker *t = arg;
    t->rc = idm_store_take(t->s, "forked", 10, 0, 1, &t->first);
    return NULL;
}

static void sqlite_fork_during_take(void **state)
{
    char path[4300];
    sqlite3 *db = NULL;
    idm_store *s = open_ok(g_sq.url);
    fork_taker t = {s, -1, 0};
    pthread_t th;
    pid_t pid;
    int status = 0, locked;
    struct timespec pause = {0, 200000000};
    (void)state;
    IDM_ASSERT_OK(idm_store_create(s, "forked", 1, 0, 1));
    snprintf(path, sizeof path, "%s/store.db", g_tmp);
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    locked = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    assert_int_equal(pthread_create(&th, NULL, fork_take_thread, &t), 0);
    /* Let the thread get into its take and wait for SQLite's lock. */
    nanosleep(&pause, NULL);
    pid = fork();
    if (pid == 0) {
        idm_store *c = NULL;
        int64_t first = 0;
        alarm(30);
        if (idm_store_open(&c, g_sq.url) != 0 ||
            idm_store_take(c, "forked", 10, 0, 1, &first) != 0)
            _exit(2);
        idm_store_close(c);
        _exit(0);
    }
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    pthread_join(th, NULL);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    idm_store_close(s);
    assert_int_equal(locked, SQLITE_OK);
    CHECK(!(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM),
          "the child hung on the write turn its parent's thread held at fork()");
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 2),
          "child status %d", status);
    IDM_ASSERT_RC(t.rc, 0);
}

/* A custom store cannot tell which database it is: each handle is its own
 * store, also two over one context. */
static int nop_create(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    (void)ctx, (void)name, (void)start, (void)k, (void)n;
    return 0;
}
static int nop_take(void *ctx, const char *name, int64_t size, uint32_t k, uint32_t n,
                    int64_t limit, int64_t *start)
{
    (void)ctx, (void)name, (void)size, (void)k, (void)n, (void)limit;
    *start = 0;
    return 0;
}
static int nop_list(void *ctx, idm_seq_info **out, size_t *count)
{
    (void)ctx;
    *out = NULL;
    *count = 0;
    return 0;
}
static int nop_floor_get(void *ctx, const char *name, uint32_t k, int64_t *floor)
{
    (void)ctx, (void)name, (void)k;
    *floor = 0;
    return 0;
}
static int nop_floor_raise(void *ctx, const char *name, uint32_t k, int64_t floor)
{
    (void)ctx, (void)name, (void)k, (void)floor;
    return 0;
}
static void nop_close(void *ctx)
{
    (void)ctx;
}

static void custom_identity(void **state)
{
    static const idm_store_ops nops = {nop_create,    nop_take,        nop_list,
                                       nop_floor_get, nop_floor_raise, nop_close};
    idm_store *a = NULL, *b = NULL;
    char ia[160], ib[160], again[160];
    (void)state;
    IDM_ASSERT_OK(idm_store_custom(&a, &nops, NULL));
    IDM_ASSERT_OK(idm_store_custom(&b, &nops, NULL));
    IDM_ASSERT_OK(idm_store_identity(a, ia, sizeof ia));
    IDM_ASSERT_OK(idm_store_identity(b, ib, sizeof ib));
    IDM_ASSERT_OK(idm_store_identity(a, again, sizeof again));
    CHECK(strcmp(ia, ib) != 0, "two custom stores, one identity %s", ia);
    assert_string_equal(ia, again);
    IDM_ASSERT_RC(idm_store_identity(a, ia, 3), IDM_EINVAL);
    IDM_ASSERT_RC(idm_store_identity(NULL, ia, sizeof ia), IDM_EINVAL);
    idm_store_close(a);
    idm_store_close(b);
}

/* ---------------------------------------------------- PostgreSQL only */

/* One database under several URLs is one store; another database or
 * another schema (the URL's search_path) is another. */
static void pg_identity(void **state)
{
    char url[512], want[160], got[160];
    /* each: before and after "127.0.0.1:PORT" */
    const char *const same[][2] = {
        {"postgres://postgres@", "/postgres?sslmode=disable"},
        {"postgresql://postgres@", "/postgres"},
        {"postgres://", "/postgres?user=postgres&sslmode=disable&application_name=x"},
        {"postgres://", "/postgres?application_name=x&sslmode=disable&user=postgres"},
        {"postgres://postgres@", "/?dbname=postgres&connect_timeout=3"},
        {"postgres://postgres@", "/postgres?options=-c%20search_path%3Dpublic"},
    };
    (void)state;
    identity_of(g_pg.url, want, sizeof want);
    CHECK(strncmp(want, "postgres:", 9) == 0, "identity %s", want);
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        snprintf(url, sizeof url, "%s127.0.0.1:%d%s", same[i][0], g_pgport, same[i][1]);
        identity_of(url, got, sizeof got);
        CHECK(strcmp(got, want) == 0, "%s is %s, not %s", url, got, want);
    }
    pg_sql("CREATE DATABASE idother");
    pg_sql("CREATE SCHEMA idschema");
    snprintf(url, sizeof url, "postgres://postgres@127.0.0.1:%d/idother", g_pgport);
    identity_of(url, got, sizeof got);
    CHECK(strcmp(got, want) != 0, "another database, the same identity %s", got);
    snprintf(url, sizeof url,
             "postgres://postgres@127.0.0.1:%d/postgres?options=-c%%20search_path%%3Didschema",
             g_pgport);
    identity_of(url, got, sizeof got);
    CHECK(strcmp(got, want) != 0, "another schema, the same identity %s", got);
}

/* The settings of synchronous_commit the sessions that wrote to the
 * sequences table of database synccheck had, sorted, comma-separated;
 * then forgotten. */
static void seen_settings(char *out, size_t cap)
{
    pg_query("synccheck", "SELECT string_agg(DISTINCT v, ',' ORDER BY v) FROM seen", out, cap);
    pg_query("synccheck", "DELETE FROM seen", (char[8]){0}, 8);
}

/* synchronous_commit off in the database, the role or the URL does not
 * reach the store's sessions: a crash could lose a committed block. */
static void pg_synchronous_commit(void **state)
{
    char url[512], got[256];
    int64_t first;
    idm_store *s;
    /* each: the user, and what follows the database in the URL */
    const char *const urls[][2] = {
        {"postgres", ""},                                          /* database */
        {"lazy", ""},                                              /* role */
        {"postgres", "?options=-c%20synchronous_commit%3Doff"},    /* URL */
        {"postgres", "?options=-csynchronous_commit%3Dlocal"},
    };
    (void)state;
    pg_sql("CREATE DATABASE synccheck");
    pg_sql("ALTER DATABASE synccheck SET synchronous_commit = off");
    pg_sql("CREATE ROLE lazy LOGIN SUPERUSER");
    pg_sql("ALTER ROLE lazy SET synchronous_commit = off");
    /* the settings do reach a plain session */
    pg_query("synccheck", "SHOW synchronous_commit", got, sizeof got);
    assert_string_equal(got, "off");
    /* The tables, then a trigger that records each writer's setting. */
    snprintf(url, sizeof url, "postgres://postgres@127.0.0.1:%d/synccheck", g_pgport);
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_create(s, "sync", 1, 0, 1));
    idm_store_close(s);
    pg_query("synccheck",
             "CREATE TABLE seen(v text);"
             " CREATE FUNCTION record_sync() RETURNS trigger LANGUAGE plpgsql AS"
             " \\$\\$ BEGIN INSERT INTO seen VALUES (current_setting('synchronous_commit'));"
             " RETURN NEW; END \\$\\$;"
             " CREATE TRIGGER record_sync BEFORE INSERT OR UPDATE ON idmint_sequences"
             " FOR EACH ROW EXECUTE FUNCTION record_sync()",
             got, sizeof got);
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char name[16];
        snprintf(url, sizeof url, "postgres://%s@127.0.0.1:%d/synccheck%s", urls[i][0],
                 g_pgport, urls[i][1]);
        snprintf(name, sizeof name, "sync%zu", i);
        s = open_ok(url);
        IDM_ASSERT_OK(idm_store_create(s, name, 1, 0, 1));
        IDM_ASSERT_OK(idm_store_take(s, name, 5, 0, 1, &first));
        assert_int_equal(first, 1);
        seen_settings(got, sizeof got);
        CHECK(strcmp(got, "on") == 0, "%s: the store's sessions had synchronous_commit %s",
              url, got);
        /* a new session after the server ended this one: set again */
        pg_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
               " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
        IDM_ASSERT_OK(idm_store_take(s, name, 5, 0, 1, &first));
        assert_int_equal(first, 6);
        seen_settings(got, sizeof got);
        CHECK(strcmp(got, "on") == 0,
              "%s: after a reconnect the store's session had synchronous_commit %s", url, got);
        idm_store_close(s);
    }
    /* remote_apply waits for more than on: kept */
    snprintf(url, sizeof url,
             "postgres://postgres@127.0.0.1:%d/synccheck?options=-c%%20synchronous_commit%%3D"
             "remote_apply",
             g_pgport);
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_take(s, "sync0", 1, 0, 1, &first));
    seen_settings(got, sizeof got);
    assert_string_equal(got, "remote_apply");
    idm_store_close(s);
}

/* A TCP proxy between a store and the server. Armed with CUT_AFTER, it
 * forwards the client's next request, lets the server answer in full (its
 * ReadyForQuery: the statement has committed), and then closes both sides
 * without passing the answer on. Armed with CUT_BEFORE it closes both sides
 * without forwarding the request. */
enum { ARM_NONE, CUT_AFTER, CUT_BEFORE };

#define MAX_PUMPS 32

typedef struct proxy {
    int lfd, port, upstream;
    pthread_t acceptor;
    atomic_int armed, cuts, accepted, stop;
    pthread_mutex_t mu;
    pthread_t pumps[MAX_PUMPS];
    int npumps;
} proxy;

typedef struct pump_arg {
    proxy *px;
    int c, s;
} pump_arg;

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Forward client bytes, swallow the server's answer up to its
 * ReadyForQuery ('Z', length 5, status), for at most 5 s. */
static void swallow_answer(proxy *px, int c, int s)
{
    unsigned char tail[6] = {0};
    char buf[8192];
    for (int waited = 0; waited < 5000 && !atomic_load(&px->stop);) {
        struct pollfd pf[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
        int r = poll(pf, 2, 100);
        if (r == 0) {
            waited += 100;
            continue;
        }
        if (r < 0)
            return;
        if (pf[0].revents != 0) {
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0 || write_all(s, buf, (size_t)n) != 0)
                return;
        }
        if (pf[1].revents != 0) {
            ssize_t n = read(s, buf, sizeof buf);
            if (n <= 0)
                return;
            for (ssize_t i = 0; i < n; i++) {
                memmove(tail, tail + 1, 5);
                tail[5] = (unsigned char)buf[i];
            }
            if (tail[0] == 'Z' && tail[1] == 0 && tail[2] == 0 && tail[3] == 0 && tail[4] == 5)
                return;
        }
    }
}

static void *pump(void *arg)
{
    pump_arg *a = arg;
    proxy *px = a->px;
    char buf[8192];
    while (!atomic_load(&px->stop)) {
        struct pollfd pf[2] = {{a->c, POLLIN, 0}, {a->s, POLLIN, 0}};
        int r = poll(pf, 2, 100);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (pf[0].revents != 0) {
            ssize_t n = read(a->c, buf, sizeof buf);
            int arm;
            if (n <= 0)
                break;
            arm = atomic_exchange(&px->armed, ARM_NONE);
            if (arm == CUT_BEFORE) {
                atomic_fetch_add(&px->cuts, 1);
                break;
            }
            if (write_all(a->s, buf, (size_t)n) != 0)
                break;
            if (arm == CUT_AFTER) {
                swallow_answer(px, a->c, a->s);
                atomic_fetch_add(&px->cuts, 1);
                break;
            }
        }
        if (pf[1].revents != 0) {
            ssize_t n = read(a->s, buf, sizeof buf);
            if (n <= 0 || write_all(a->c, buf, (size_t)n) != 0)
                break;
        }
    }
    close(a->c);
    close(a->s);
    free(a);
    return NULL;
}

static void *accept_loop(void *arg)
{
    proxy *px = arg;
    for (;;) {
        struct sockaddr_in sa;
        int c = accept(px->lfd, NULL, NULL), s;
        pump_arg *a;
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL;
        }
        if (atomic_load(&px->stop)) {
            close(c);
            return NULL;
        }
        atomic_fetch_add(&px->accepted, 1);
        s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)px->upstream);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a = malloc(sizeof *a);
        pthread_mutex_lock(&px->mu);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) != 0 || a == NULL ||
            px->npumps == MAX_PUMPS) {
            pthread_mutex_unlock(&px->mu);
            close(c);
            if (s >= 0)
                close(s);
            free(a);
            continue;
        }
        a->px = px;
        a->c = c;
        a->s = s;
        if (pthread_create(&px->pumps[px->npumps], NULL, pump, a) == 0)
            px->npumps++;
        pthread_mutex_unlock(&px->mu);
    }
}

static void proxy_start(proxy *px, int upstream)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int one = 1;
    memset(px, 0, sizeof *px);
    pthread_mutex_init(&px->mu, NULL);
    px->upstream = upstream;
    px->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(px->lfd >= 0);
    setsockopt(px->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(px->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(px->lfd, 16), 0);
    assert_int_equal(getsockname(px->lfd, (struct sockaddr *)&sa, &len), 0);
    px->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&px->acceptor, NULL, accept_loop, px), 0);
}

static void proxy_stop(proxy *px)
{
    atomic_store(&px->stop, 1);
    shutdown(px->lfd, SHUT_RDWR);
    pthread_join(px->acceptor, NULL);
    close(px->lfd);
    for (int i = 0; i < px->npumps; i++)
        pthread_join(px->pumps[i], NULL);
    pthread_mutex_destroy(&px->mu);
}

/* P3: the connection is cut after the server committed a take. */
static void pg_p3_reset_during_commit(void **state)
{
    proxy px;
    char url[256];
    idm_store *s, *direct = open_ok(g_pg.url);
    int64_t first, end, later;
    (void)state;
    proxy_start(&px, g_pgport);
    snprintf(url, sizeof url, "postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable",
             px.port);
    s = open_ok(url);
    IDM_ASSERT_OK(idm_store_create(s, "p3", 1, 0, 1));
    for (int i = 0; i < 3; i++)
        IDM_ASSERT_OK(idm_store_take(s, "p3", 10, 0, 1, &first));
    assert_int_equal(first, 21);
    end = first + 10; /* 31: the next block, had nothing been lost */
    assert_int_equal(atomic_load(&px.accepted), 1);

    /* Cut after the commit: the store resets, takes again, and the lost
     * block [31, 41) is a gap. */
    atomic_store(&px.armed, CUT_AFTER);
    IDM_ASSERT_OK(idm_store_take(s, "p3", 10, 0, 1, &first));
    assert_int_equal(atomic_load(&px.cuts), 1);
    assert_int_equal(atomic_load(&px.accepted), 2);
    CHECK(first == end + 10, "after the cut the block starts at %lld, not %lld (the lost "
          "block [%lld, %lld) must stay a gap)", LL(first), LL(end + 10), LL(end), LL(end + 10));
    assert_int_equal(next_of(direct, "p3", NULL, NULL), end + 20);

    /* Cut before the request reached the server: nothing was taken, the
     * retry gets the next block with no gap. */
    atomic_store(&px.armed, CUT_BEFORE);
    IDM_ASSERT_OK(idm_store_take(s, "p3", 10, 0, 1, &later));
    assert_int_equal(atomic_load(&px.cuts), 2);
    assert_int_equal(later, end + 20);

    /* Nothing later ever lands in the lost block. */
    for (int i = 0; i < 20; i++) {
        IDM_ASSERT_OK(idm_store_take(s, "p3", 3, 0, 1, &later));
        CHECK(later >= end + 30, "block at %lld after the gap", LL(later));
    }
    IDM_ASSERT_OK(idm_store_take(direct, "p3", 1, 0, 1, &later));
    assert_int_equal(later, end + 30 + 60);

    idm_store_close(s);
    proxy_stop(&px);
    idm_store_close(direct);
}

/* The server ends the session (an administrator, a restart): the next
 * take reconnects and works. */
static void pg_session_killed(void **state)
{
    idm_store *s = open_ok(g_pg.url);
    int64_t first;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(s, "killed", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_take(s, "killed", 5, 0, 1, &first));
    assert_int_equal(first, 1);
    pg_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
           " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
    IDM_ASSERT_OK(idm_store_take(s, "killed", 5, 0, 1, &first));
    assert_int_equal(first, 6);
    idm_store_close(s);
}

/* A URL that already sets connect_timeout, or has no query at all. */
static void pg_urls(void **state)
{
    char url[256];
    idm_store *s;
    (void)state;
    snprintf(url, sizeof url,
             "postgres://postgres@127.0.0.1:%d/postgres?connect_timeout=3&sslmode=disable",
             g_pgport);
    s = open_ok(url);
    idm_store_close(s);
    snprintf(url, sizeof url, "postgres://postgres@127.0.0.1:%d/postgres", g_pgport);
    s = open_ok(url);
    idm_store_close(s);
    snprintf(url, sizeof url, "postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&",
             g_pgport);
    s = open_ok(url);
    idm_store_close(s);
    /* libpq's other spelling */
    snprintf(url, sizeof url, "postgresql://postgres@127.0.0.1:%d/postgres", g_pgport);
    s = open_ok(url);
    idm_store_close(s);
    /* a password never shows in the store's URL */
    snprintf(url, sizeof url,
             "postgresql://postgres:s3cret@127.0.0.1:%d/postgres?password=s3cret&sslmode=disable",
             g_pgport);
    s = open_ok(url);
    CHECK(strstr(idm_store_url(s), "s3cret") == NULL, "url: %s", idm_store_url(s));
    CHECK(strstr(idm_store_url(s), "sslmode=disable") != NULL, "url: %s", idm_store_url(s));
    idm_store_close(s);
}

/* Last: with the server stopped, calls fail with IDM_EUNAVAIL, quickly. */
static void pg_server_gone(void **state)
{
    idm_store *s = open_ok(g_pg.url), *s2 = NULL;
    int64_t first;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(s, "gone", 1, 0, 1));
    stop_pg();
    EXPECT_FAIL(idm_store_take(s, "gone", 1, 0, 1, &first), IDM_EUNAVAIL);
    CHECK(strchr(idm_error_detail(), '\n') == NULL, "detail: %s", idm_error_detail());
    EXPECT_FAIL(idm_store_take(s, "gone", 1, 0, 1, &first), IDM_EUNAVAIL);
    EXPECT_FAIL(idm_store_create(s, "gone2", 1, 0, 1), IDM_EUNAVAIL);
    EXPECT_FAIL(idm_store_open(&s2, g_pg.url), IDM_EUNAVAIL);
    assert_null(s2);
    idm_store_close(s);
}

int main(void)
{
    const struct CMUnitTest sqlite_tests[] = {
        cmocka_unit_test(sqlite_bad_urls),
        cmocka_unit_test_prestate(roundtrip, &g_sq),
        cmocka_unit_test_prestate(k_of_n, &g_sq),
        cmocka_unit_test_prestate(create_twice, &g_sq),
        cmocka_unit_test_prestate(missing, &g_sq),
        cmocka_unit_test_prestate(bad_arguments, &g_sq),
        cmocka_unit_test_prestate(near_max, &g_sq),
        cmocka_unit_test_prestate(floors, &g_sq),
        cmocka_unit_test(sqlite_identity),
        cmocka_unit_test(custom_identity),
        cmocka_unit_test(sqlite_wal_file),
        cmocka_unit_test(sqlite_synchronous_full),
        cmocka_unit_test(sqlite_open_while_writing),
        cmocka_unit_test(sqlite_fork_during_take),
        cmocka_unit_test_prestate(p1_threads, &g_sq),
        cmocka_unit_test(sqlite_processes),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test_prestate(roundtrip, &g_pg),
        cmocka_unit_test_prestate(k_of_n, &g_pg),
        cmocka_unit_test_prestate(create_twice, &g_pg),
        cmocka_unit_test_prestate(missing, &g_pg),
        cmocka_unit_test_prestate(bad_arguments, &g_pg),
        cmocka_unit_test_prestate(near_max, &g_pg),
        cmocka_unit_test_prestate(floors, &g_pg),
        cmocka_unit_test(pg_urls),
        cmocka_unit_test(pg_identity),
        cmocka_unit_test(pg_synchronous_commit),
        cmocka_unit_test_prestate(p1_threads, &g_pg),
        cmocka_unit_test(pg_p3_reset_during_commit),
        cmocka_unit_test(pg_session_killed),
        cmocka_unit_test(pg_server_gone), /* last: stops the server */
    };
    int failed;
    if (idm_test_pg_init("test_store") != 0)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    failed = cmocka_run_group_tests_name("stores: sqlite", sqlite_tests, setup_sqlite,
                                         teardown_sqlite);
    failed += cmocka_run_group_tests_name("stores: postgres", pg_tests, setup_pg, teardown_pg);
    return failed;
}
