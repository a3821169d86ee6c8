/* SPDX-License-Identifier: MIT */
/*
 * The segment allocator (idm_seq) over custom stores kept in memory (a
 * counter under a mutex that can be made slow, made to fail, or rewound)
 * and once over real SQLite files: uniqueness under threads, every id from
 * a block a store handed out, prefetch hiding a slow store, a store down
 * (serve what is in hand, then IDM_EUNAVAIL within wait_ms, then recover),
 * odd/even stores with failover, adaptive block sizes, floors (fault row P9:
 * a store restored from an old backup is refused), bad options.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <idmint/segment.h>

#include "memstore.h"
#include "seqtest.h"
#include "testutil.h"

/* ------------------------------------------------------- in-memory store */

/* The in-memory store (tests/util/memstore.h) and the shared setup
 * (seqtest.h), under this file's names. */
typedef idm_test_memstore mstore;
#define ms_new idm_test_ms_new
#define ms_free idm_test_memstore_free
#define ms_next idm_test_memstore_next
#define ms_set_next idm_test_memstore_set_next
#define ms_owns idm_test_memstore_owns
#define seq_opts idm_test_seq_opts
#define sleep_ms idm_test_sleep_ms

/* Wait for the keeper: until q holds want ids in hand (current block and
 * spare). The bound only ends a hung test; no time is asserted. */
static void wait_left(idm_seq *q, int64_t want)
{
    idm_seq_stats sx;
    for (int i = 0; i < 60000; i++) {
        idm_seq_stats_get(q, &sx);
        if (sx.left == want)
            return;
        sleep_ms(1);
    }
    CHECK(sx.left == want, "ids in hand: %lld, want %lld", LL(sx.left), LL(want));
}

/* ---------------------------------------------------------------- tests */

typedef struct worker {
    idm_seq *q;
    int64_t *ids;
    size_t n;
    int rc;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (size_t i = 0; i < w->n; i++) {
        int rc = idm_seq_next(w->q, &w->ids[i]);
        if (rc != 0) {
            w->rc = rc;
            return NULL;
        }
    }
    return NULL;
}

/* 4 threads x 500k ids: all unique, each thread's ids increase (one store),
 * every id from a block the store handed out. */
static void test_threads_unique(void **state)
{
    enum { T = 4, PER = 500000 };
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    pthread_t th[T];
    worker w[T];
    uint64_t *all = malloc(sizeof *all * T * PER);
    (void)state;
    assert_non_null(all);
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    seq_opts(&o, &st, 1);
    o.min_block = 1000;
    o.max_block = 100000;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int t = 0; t < T; t++) {
        w[t].q = q;
        w[t].n = PER;
        w[t].rc = 0;
        w[t].ids = malloc(sizeof(int64_t) * PER);
        assert_non_null(w[t].ids);
        assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        IDM_ASSERT_OK(w[t].rc);
        CHECK(idm_test_strictly_increasing((const uint64_t *)w[t].ids, PER),
              "thread %d's ids do not increase", t);
        for (size_t i = 0; i < PER; i++) {
            CHECK(ms_owns(m, 0, 1, w[t].ids[i]), "id %lld is from no block",
                  LL(w[t].ids[i]));
            all[(size_t)t * PER + i] = (uint64_t)w[t].ids[i];
        }
        free(w[t].ids);
    }
    assert_int_equal(idm_test_count_duplicates(all, (size_t)T * PER), 0);
    idm_seq_stats_get(q, &sx);
    CHECK(sx.ids >= (uint64_t)T * PER, "stats.ids %llu", ULL(sx.ids));
    CHECK(sx.fetch_errors == 0, "fetch errors %llu", ULL(sx.fetch_errors));
    idm_seq_close(q);
    free(all);
    ms_free(m, st);
}

/* A store taking 5 ms: a steady consumer (1 id a ms, the spare fetched
 * with 100 ids = 100 ms left, 20 times the fetch) never waits; one
 * draining faster than the store answers does. */
static void test_prefetch(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    int64_t id;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    atomic_store(&m->delay_ms, 5);
    seq_opts(&o, &st, 1);
    o.min_block = o.max_block = 200;
    o.prefetch_pct = 50;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 1000; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        sleep_ms(1);
    }
    /* 5 blocks used, the sixth prefetched (at half of the fifth) */
    wait_left(q, 200);
    idm_seq_stats_get(q, &sx);
    CHECK(sx.waits == 0, "a steady consumer waited %llu times (%llu ns)", ULL(sx.waits),
          ULL(sx.wait_ns));
    CHECK(sx.fetches == 6, "fetches %llu, want 6", ULL(sx.fetches));
    idm_seq_close(q);

    /* No prefetch: the same steady consumer waits once a block after the
     * first (blocks 2 to 5). */
    o.prefetch_pct = 0;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 1000; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        sleep_ms(1);
    }
    idm_seq_stats_get(q, &sx);
    CHECK(sx.waits == 4 && sx.fetches == 5, "without prefetch: %llu waits, %llu fetches",
          ULL(sx.waits), ULL(sx.fetches));
    idm_seq_close(q);
    o.prefetch_pct = 50;

    /* Draining as fast as possible: the 5 ms fetch cannot keep up. */
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 1000; i++)
        IDM_ASSERT_OK(idm_seq_next(q, &id));
    idm_seq_stats_get(q, &sx);
    CHECK(sx.waits > 0 && sx.wait_ns > 0, "waits %llu, wait_ns %llu", ULL(sx.waits),
          ULL(sx.wait_ns));
    idm_seq_close(q);
    ms_free(m, st);
}

/* The store goes down: the ids in hand (exactly the current block's rest
 * and the spare) are served, then IDM_EUNAVAIL after waiting wait_ms (said
 * in the detail; no time is measured here); back up: ids again, none seen
 * before. */
static void test_store_down(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t ids[1000];
    size_t n = 0, before;
    int64_t id;
    int rc = 0;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    seq_opts(&o, &st, 1);
    o.min_block = o.max_block = 100;
    o.wait_ms = 100;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 85; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    wait_left(q, 15 + 100); /* the spare (fetched after open) is in hand */
    atomic_store(&m->down, 1);
    for (;;) {
        rc = idm_seq_next(q, &id);
        if (rc != 0)
            break;
        assert_true(n < 900);
        ids[n++] = (uint64_t)id;
    }
    assert_int_equal(rc, IDM_EUNAVAIL);
    CHECK(strstr(idm_error_detail(), "connection refused") != NULL, "detail: %s",
          idm_error_detail());
    CHECK(strstr(idm_error_detail(), "within 100 ms") != NULL, "detail: %s",
          idm_error_detail());
    CHECK(n == 200, "%zu ids served from the blocks in hand, want 200", n);
    /* Still down: fails again, the same way. */
    IDM_ASSERT_RC(idm_seq_next(q, &id), IDM_EUNAVAIL);
    CHECK(strstr(idm_error_detail(), "within 100 ms") != NULL, "detail: %s",
          idm_error_detail());
    idm_seq_stats_get(q, &sx);
    CHECK(sx.waits == 2, "waits %llu, want 2", ULL(sx.waits));
    CHECK(sx.fetch_errors > 0 && sx.last_error == IDM_EUNAVAIL && sx.left == 0,
          "errors %llu last %d left %lld", ULL(sx.fetch_errors), sx.last_error, LL(sx.left));
    before = n;
    atomic_store(&m->down, 0);
    for (int i = 0; i < 300; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    for (size_t i = 0; i < n; i++)
        CHECK(ms_owns(m, 0, 1, (int64_t)ids[i]), "id %llu from no block", ULL(ids[i]));
    CHECK(ids[before] > ids[before - 1], "after recovery: %llu not above %llu",
          ULL(ids[before]), ULL(ids[before - 1]));
    assert_int_equal(idm_test_count_duplicates(ids, n), 0);
    idm_seq_close(q);
    ms_free(m, st);
}

/* Two stores: even ids from store 0, odd from store 1; one down, the other
 * carries on. */
static void test_odd_even(void **state)
{
    enum { N = 20000 };
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t *ids = malloc(sizeof *ids * 2 * N);
    size_t odd = 0, even = 0, n = 0;
    int64_t id;
    (void)state;
    assert_non_null(ids);
    idm_test_pair_new(&p, "orders");
    seq_opts(&o, p.st, 2);
    o.min_block = o.max_block = 100;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < N; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
        if (id % 2 == 0) {
            CHECK(ms_owns(p.m[0], 0, 2, id), "even id %lld not from store 0", LL(id));
            even++;
        } else {
            CHECK(ms_owns(p.m[1], 1, 2, id), "odd id %lld not from store 1", LL(id));
            odd++;
        }
    }
    /* blocks alternate strictly while both answer: 100 blocks of 100 each */
    CHECK(odd == N / 2 && even == N / 2, "round robin: %zu odd, %zu even", odd, even);
    atomic_store(&p.m[1]->down, 1);
    even = odd = 0;
    for (int i = 0; i < N; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
        if (id % 2 == 0) {
            CHECK(ms_owns(p.m[0], 0, 2, id), "even id %lld not from store 0", LL(id));
            even++;
        } else {
            odd++;
        }
    }
    CHECK(odd <= 200 && even >= N - 200, "store 1 down: %zu odd ids", odd);
    idm_seq_stats_get(q, &sx);
    CHECK(sx.fetch_errors > 0 && sx.down_stores == 1, "store 1 down: %llu errors, %zu down",
          ULL(sx.fetch_errors), sx.down_stores);
    assert_int_equal(idm_test_count_duplicates(ids, n), 0);
    idm_seq_close(q);
    idm_test_pair_free(&p);
    free(ids);
}

/* Fast consumption doubles the block up to max_block; slow consumption
 * (an injected clock moved 100 ms a block) halves it down to min_block. */
static void test_adaptive(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_manual_clock *mc;
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    int64_t id;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, 1700000000000, false));
    seq_opts(&o, &st, 1);
    o.min_block = 100;
    o.max_block = 1600;
    o.target_ms = 10;
    o.clock = idm_manual_clock_clock(mc);
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    idm_seq_stats_get(q, &sx);
    assert_int_equal(sx.block, 100);
    for (int i = 0; i < 20000; i++) /* the clock stands still: every block is fast */
        IDM_ASSERT_OK(idm_seq_next(q, &id));
    idm_seq_stats_get(q, &sx);
    assert_int_equal(sx.block, 1600);
    for (int i = 0; i < 6000; i++) { /* 1 ms an id: every block lasts > 2 * 10 ms */
        idm_manual_clock_advance(mc, 1);
        IDM_ASSERT_OK(idm_seq_next(q, &id));
    }
    idm_seq_stats_get(q, &sx);
    assert_int_equal(sx.block, 100);
    idm_seq_close(q);
    idm_manual_clock_free(mc);
    ms_free(m, st);
}

/* P9: a store whose counter went back below what the other store saw it
 * hand out is refused at open. */
static void test_floors(void **state)
{
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q;
    int64_t id, saved;
    (void)state;
    idm_test_pair_new(&p, "orders");
    seq_opts(&o, p.st, 2);
    o.min_block = o.max_block = 100;
    saved = ms_next(p.m[0], "orders"); /* the "backup" */
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 2000; i++)
        IDM_ASSERT_OK(idm_seq_next(q, &id));
    idm_seq_close(q);
    /* a clean reopen works */
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    idm_seq_close(q);
    /* store 0 restored from the backup */
    ms_set_next(p.m[0], "orders", saved);
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_ERANGE);
    CHECK(strstr(idm_error_detail(), "store 0") != NULL &&
              strstr(idm_error_detail(), "old backup") != NULL,
          "detail: %s", idm_error_detail());
    /* with store 1 unreachable, store 0's floor (kept in store 1 only) is
     * not known and there is no floor file: refused too, naming store 0 */
    atomic_store(&p.m[1]->down, 1);
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EUNAVAIL);
    CHECK(strstr(idm_error_detail(), "store 0") != NULL &&
              strstr(idm_error_detail(), "not known") != NULL,
          "detail: %s", idm_error_detail());
    idm_test_pair_free(&p);
}

/* A store's counter goes back under a running allocator (restored from a
 * backup, or a failover to a replica that lost commits): two stores, blocks
 * of 10, 200 ids, store 1 set back to 0. The block it then hands out is
 * below what the allocator saw it reach: never used, store 1 marked bad and
 * reported, store 0 carries on. Every id of the run is unique. */
static void test_counter_back_failover(void **state)
{
    enum { BEFORE = 200, AFTER = 3000 };
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t ids[BEFORE + AFTER];
    size_t n = 0, odd_late = 0;
    int64_t id;
    (void)state;
    idm_test_pair_new(&p, "orders");
    seq_opts(&o, p.st, 2);
    o.min_block = o.max_block = 10;
    o.wait_ms = 5000;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < BEFORE; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    CHECK(ms_next(p.m[1], "orders") > 0, "store 1 unused");
    ms_set_next(p.m[1], "orders", 0); /* store 1 set back */
    for (int i = 0; i < AFTER; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
        if (i >= AFTER / 2 && id % 2 != 0)
            odd_late++;
    }
    assert_int_equal(idm_test_count_duplicates(ids, n), 0);
    CHECK(odd_late == 0, "%zu ids from store 1 after it was marked bad", odd_late);
    idm_seq_stats_get(q, &sx);
    CHECK(sx.bad_stores == 1, "bad_stores %zu", sx.bad_stores);
    CHECK(strstr(sx.bad_detail, "store 1") != NULL && strstr(sx.bad_detail, "bad") != NULL &&
              strstr(sx.bad_detail, "position 0") != NULL,
          "bad_detail: %s", sx.bad_detail);
    CHECK(strstr(sx.last_detail, "store 1") != NULL, "last_detail: %s", sx.last_detail);
    CHECK(sx.fetch_errors >= 1, "fetch_errors %llu", ULL(sx.fetch_errors));
    idm_seq_close(q);
    idm_test_pair_free(&p);
}

/* One store set back: the ids in hand are served, then IDM_ECORRUPT naming
 * the store (at once, again and again), never an id of the rewound block. */
static void test_counter_back_one_store(void **state)
{
    enum { MAXN = 400 };
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t ids[MAXN];
    size_t n = 0;
    int64_t id;
    int rc = 0;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    seq_opts(&o, &st, 1);
    o.min_block = o.max_block = 10;
    o.wait_ms = 5000;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 95; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    ms_set_next(m, "orders", 0); /* set back */
    for (;;) {
        rc = idm_seq_next(q, &id);
        if (rc != 0)
            break;
        assert_true(n < MAXN);
        ids[n++] = (uint64_t)id;
    }
    assert_int_equal(rc, IDM_ECORRUPT);
    CHECK(strstr(idm_error_detail(), "store 0") != NULL &&
              strstr(idm_error_detail(), "every store is marked bad") != NULL,
          "detail: %s", idm_error_detail());
    /* the rest of the current block (to 100), and the spare if the keeper
     * had fetched it before the set back (to 110; it is fetched early when
     * ids go fast): never an id of a block taken after */
    CHECK(n == 100 || n == 110, "%zu ids served, want 100 or 110", n);
    assert_int_equal(idm_test_count_duplicates(ids, n), 0);
    IDM_ASSERT_RC(idm_seq_next(q, &id), IDM_ECORRUPT);
    idm_seq_stats_get(q, &sx);
    CHECK(sx.bad_stores == 1 && sx.last_error == IDM_ECORRUPT && sx.left == 0,
          "bad %zu last %d left %lld", sx.bad_stores, sx.last_error, LL(sx.left));
    CHECK(strstr(sx.bad_detail, "store 0") != NULL, "bad_detail: %s", sx.bad_detail);
    idm_seq_close(q);
    ms_free(m, st);
}

/* Every bad option: IDM_EINVAL naming the field; a missing sequence:
 * IDM_ENOSEQ; the store's counter untouched by all of them. */
static void test_bad_input(void **state)
{
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q = NULL;
    int64_t before;
    (void)state;
    idm_test_pair_new(&p, NULL);
    IDM_ASSERT_OK(idm_store_create(p.st[0], "orders", 1, 0, 1));
    before = ms_next(p.m[0], "orders");

#define BAD(fieldname, stmt)                                                     \
    do {                                                                         \
        seq_opts(&o, p.st, 1);                                                   \
        stmt;                                                                    \
        IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EINVAL);                         \
        CHECK(strstr(idm_error_detail(), fieldname) != NULL, "%s: detail '%s'", \
              fieldname, idm_error_detail());                                    \
        assert_null(q);                                                          \
    } while (0)
    BAD("name", o.name = NULL);
    BAD("name", o.name = "");
    BAD("name", o.name = "has space");
    BAD("name", o.name = "x123456789012345678901234567890123456789012345678901234567890123456");
    BAD("nstores", o.nstores = 0);
    BAD("nstores", o.nstores = 1025);
    BAD("nstores", o.stores = NULL);
    BAD("min_block", o.min_block = 0);
    BAD("min_block", o.min_block = (INT64_C(1) << 39) + 1);
    BAD("max_block", o.max_block = o.min_block - 1);
    BAD("max_block", o.max_block = (INT64_C(1) << 39) + 1);
    BAD("prefetch_pct", o.prefetch_pct = -1);
    BAD("prefetch_pct", o.prefetch_pct = 91);
    BAD("wait_ms", o.wait_ms = -1);
    BAD("target_ms", o.target_ms = 0);
#undef BAD
    IDM_ASSERT_RC(idm_seq_open(NULL, &o), IDM_EINVAL);

    /* missing sequence */
    seq_opts(&o, p.st, 1);
    o.name = "nosuch";
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_ENOSEQ);
    /* present in store 0, missing in store 1: nothing is taken from store 0 */
    IDM_ASSERT_OK(idm_store_create(p.st[0], "pair", 1, 0, 2));
    seq_opts(&o, p.st, 2);
    o.name = "pair";
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_ENOSEQ);
    CHECK(strstr(idm_error_detail(), "store 1") != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(ms_next(p.m[0], "pair"), 1); /* id 1 of 0 of 2: local 1 */
    /* store 0 is 0 of 1 for orders, listed as 0 of 2 */
    IDM_ASSERT_OK(idm_store_create(p.st[1], "orders", 1, 1, 2));
    o.name = "orders";
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "store 0 of 1") != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(ms_next(p.m[0], "orders"), before);
    assert_int_equal(p.m[0]->nlog, 0);
    assert_int_equal(p.m[1]->nlog, 0);
    idm_test_pair_free(&p);
}

/* End to end over two SQLite files, two allocators (two "processes") and
 * threads: unique, parity by store. */
static void test_sqlite(void **state)
{
    enum { T = 2, PER = 50000 };
    char *dir = idm_test_tmpdir();
    char url[2][600];
    idm_store *st[2], *st2[2];
    idm_seq_opts o;
    idm_seq *q[2];
    pthread_t th[2 * T];
    worker w[2 * T];
    uint64_t *all = malloc(sizeof *all * 2 * T * PER);
    int64_t next[2];
    (void)state;
    assert_non_null(all);
    for (int i = 0; i < 2; i++) {
        snprintf(url[i], sizeof url[i], "sqlite://%s/s%d.db", dir, i);
        IDM_ASSERT_OK(idm_store_open(&st[i], url[i]));
        IDM_ASSERT_OK(idm_store_open(&st2[i], url[i]));
        IDM_ASSERT_OK(idm_store_create(st[i], "orders", 1, (uint32_t)i, 2));
    }
    seq_opts(&o, st, 2);
    o.min_block = 500;
    o.max_block = 20000;
    IDM_ASSERT_OK(idm_seq_open(&q[0], &o));
    o.stores = st2;
    IDM_ASSERT_OK(idm_seq_open(&q[1], &o));
    for (int t = 0; t < 2 * T; t++) {
        w[t].q = q[t % 2];
        w[t].n = PER;
        w[t].rc = 0;
        w[t].ids = malloc(sizeof(int64_t) * PER);
        assert_non_null(w[t].ids);
        assert_int_equal(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (int t = 0; t < 2 * T; t++) {
        pthread_join(th[t], NULL);
        IDM_ASSERT_OK(w[t].rc);
    }
    /* Parity by store: an id v*2 + k comes from store k, so its local value
     * v is below store k's counter (a block store k handed out). */
    for (int k = 0; k < 2; k++) {
        idm_seq_info *info = NULL;
        size_t count = 0;
        IDM_ASSERT_OK(idm_store_list(st[k], &info, &count));
        assert_int_equal(count, 1);
        next[k] = info[0].next;
        free(info);
    }
    for (int t = 0; t < 2 * T; t++) {
        for (size_t i = 0; i < PER; i++) {
            int64_t id = w[t].ids[i], k = id % 2;
            CHECK(id >= 1 && (id - k) / 2 < next[k],
                  "id %lld: store %lld's counter is %lld (local %lld not below it)", LL(id),
                  LL(k), LL(next[k]), LL((id - k) / 2));
            all[(size_t)t * PER + i] = (uint64_t)id;
        }
        free(w[t].ids);
    }
    assert_int_equal(idm_test_count_duplicates(all, 2 * T * PER), 0);
    idm_seq_close(q[0]);
    idm_seq_close(q[1]);
    /* the floors went into the files: rewinding is not possible here, but a
     * reopen passes its own check */
    IDM_ASSERT_OK(idm_seq_open(&q[0], &o));
    idm_seq_close(q[0]);
    for (int i = 0; i < 2; i++) {
        idm_store_close(st[i]);
        idm_store_close(st2[i]);
    }
    idm_test_rmtree(dir);
    free(dir);
    free(all);
}

/* ------------------------------------------- one keeper thread a store */

/* The position in a block of size at which the default prefetch_pct (20)
 * asks for the next block. */
static int trigger_of_test(int size)
{
    return size - (size * 20 + 99) / 100;
}

/* Wait (at most 10 s) for the thread count to come down to want: a joined
 * thread may linger in the count for a moment after its exit. */
static int threads_settle(int want)
{
    int n = idm_test_threads_now();
    for (int i = 0; i < 1000 && n > want; i++) {
        sleep_ms(10);
        n = idm_test_threads_now();
    }
    return n;
}

/* The thread count once threads that exited before have left it: the same
 * in 5 readings 10 ms apart (at most 10 s). */
static int threads_quiet(void)
{
    int n = idm_test_threads_now(), same = 0;
    for (int i = 0; i < 1000 && same < 5; i++) {
        int m;
        sleep_ms(10);
        m = idm_test_threads_now();
        same = m == n ? same + 1 : 0;
        n = m;
    }
    return n;
}

enum { KS_SEQS = 300, KS_THREADS = 4, KS_PER = 200 };

typedef struct ks_arg {
    idm_seq **q;
    int64_t *ids; /* KS_SEQS * KS_PER: this thread's ids of sequence i at i * KS_PER */
    int rc;
} ks_arg;

static void *ks_work(void *arg)
{
    ks_arg *a = arg;
    /* sequence by sequence in rounds, so every allocator is busy at once */
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < KS_SEQS; i++) {
            for (int j = round * KS_PER / 4; j < (round + 1) * KS_PER / 4; j++) {
                int rc = idm_seq_next(a->q[i], &a->ids[(size_t)i * KS_PER + (size_t)j]);
                if (rc != 0) {
                    a->rc = rc;
                    return NULL;
                }
            }
        }
    }
    return NULL;
}

/* 300 allocators on one store run on ONE keeper thread (started with the
 * first, stopped with the last), which takes every block after open; 4
 * threads draw 800 ids from each, crossing 16 blocks of 50: every id unique
 * within its sequence, each thread's increasing, all below the store's
 * counter. A second store gets a keeper of its own. */
static void test_one_keeper_per_store(void **state)
{
    idm_store *st, *st2;
    mstore *m = ms_new(&st), *m2 = ms_new(&st2);
    idm_seq **q = calloc(KS_SEQS, sizeof *q);
    idm_seq *q2[2];
    idm_seq_opts o;
    pthread_t th[KS_THREADS];
    ks_arg a[KS_THREADS];
    uint64_t *all = malloc(sizeof *all * KS_THREADS * KS_PER);
    int before, n;
    char name[32];
    pthread_t takers[IDM_TEST_MS_TAKERS], keeper1;
    size_t ntakers;
    (void)state;
    assert_non_null(q);
    assert_non_null(all);
    IDM_ASSERT_OK(idm_test_memstore_create_many(st, "s", KS_SEQS, 1, 0, 1));
    IDM_ASSERT_OK(idm_store_create(st2, "x", 1, 0, 1));
    IDM_ASSERT_OK(idm_store_create(st2, "y", 1, 0, 1));
    before = threads_quiet();
    seq_opts(&o, &st, 1);
    o.min_block = o.max_block = 50;
    for (int i = 0; i < KS_SEQS; i++) {
        snprintf(name, sizeof name, "s%03d", i);
        o.name = name;
        IDM_ASSERT_OK(idm_seq_open(&q[i], &o));
    }
    n = idm_test_threads_now();
    CHECK(n == before + 1, "%d allocators on one store: %d threads, %d before (want one more)",
          KS_SEQS, n, before);
    seq_opts(&o, &st2, 1);
    o.name = "x";
    IDM_ASSERT_OK(idm_seq_open(&q2[0], &o));
    o.name = "y";
    IDM_ASSERT_OK(idm_seq_open(&q2[1], &o));
    n = idm_test_threads_now();
    CHECK(n == before + 2, "a second store: %d threads, %d before (want two more)", n, before);

    for (int t = 0; t < KS_THREADS; t++) {
        a[t].q = q;
        a[t].rc = 0;
        a[t].ids = malloc(sizeof(int64_t) * KS_SEQS * KS_PER);
        assert_non_null(a[t].ids);
        assert_int_equal(pthread_create(&th[t], NULL, ks_work, &a[t]), 0);
    }
    for (int t = 0; t < KS_THREADS; t++) {
        pthread_join(th[t], NULL);
        IDM_ASSERT_OK(a[t].rc);
    }
    for (int i = 0; i < KS_SEQS; i++) {
        int64_t limit;
        idm_seq_stats sx;
        snprintf(name, sizeof name, "s%03d", i);
        limit = ms_next(m, name);
        for (int t = 0; t < KS_THREADS; t++) {
            const int64_t *v = &a[t].ids[(size_t)i * KS_PER];
            CHECK(idm_test_strictly_increasing((const uint64_t *)v, KS_PER),
                  "s%03d: thread %d's ids do not increase", i, t);
            for (int j = 0; j < KS_PER; j++) {
                CHECK(v[j] >= 1 && v[j] < limit, "s%03d: id %lld outside 1..%lld", i,
                      LL(v[j]), LL(limit - 1));
                all[(size_t)t * KS_PER + (size_t)j] = (uint64_t)v[j];
            }
        }
        assert_int_equal(idm_test_count_duplicates(all, (size_t)KS_THREADS * KS_PER), 0);
        idm_seq_stats_get(q[i], &sx);
        CHECK(sx.fetches >= 16 && sx.fetch_errors == 0, "s%03d: %llu fetches, %llu errors", i,
              ULL(sx.fetches), ULL(sx.fetch_errors));
    }
    /* Every block after the first of each allocator (taken by open, on this
     * thread) was taken on one other thread: the keeper. */
    ntakers = idm_test_memstore_takers(m, takers, IDM_TEST_MS_TAKERS);
    CHECK(ntakers == 2, "blocks of one store taken on %zu threads, want this one and one "
                        "keeper", ntakers);
    keeper1 = takers[1];
    ntakers = idm_test_memstore_takers(m2, takers, IDM_TEST_MS_TAKERS);
    CHECK(ntakers == 2, "blocks of store 2 taken on %zu threads, want this one and its "
                        "keeper", ntakers);
    CHECK(!pthread_equal(takers[1], keeper1), "store 2's keeper is store 1's");
    CHECK(idm_test_threads_now() == before + 2, "%d threads after the run, %d before",
          idm_test_threads_now(), before);

    /* The last allocator of a store out stops its keeper, the first in
     * starts one again. */
    for (int i = 0; i < KS_SEQS; i++)
        idm_seq_close(q[i]);
    n = threads_settle(before + 1);
    CHECK(n == before + 1, "every allocator of store 1 closed: %d threads, want %d", n,
          before + 1);
    idm_seq_close(q2[0]);
    n = idm_test_threads_now();
    CHECK(n == before + 1, "one of two allocators of store 2 closed: %d threads, want %d", n,
          before + 1);
    idm_seq_close(q2[1]);
    n = threads_settle(before);
    CHECK(n == before, "every allocator closed: %d threads, want %d", n, before);
    seq_opts(&o, &st, 1);
    o.name = "s000";
    IDM_ASSERT_OK(idm_seq_open(&q[0], &o));
    CHECK(idm_test_threads_now() == before + 1, "reopened: %d threads, want %d",
          idm_test_threads_now(), before + 1);
    for (int j = 0; j < 200; j++) {
        int64_t id;
        IDM_ASSERT_OK(idm_seq_next(q[0], &id));
    }
    idm_seq_close(q[0]);
    for (int t = 0; t < KS_THREADS; t++)
        free(a[t].ids);
    free(all);
    free(q);
    ms_free(m, st);
    ms_free(m2, st2);
}

/* One keeper serves the allocators of a store one fetch at a time: a
 * caller waiting for a block is served before the prefetches queued for the
 * others. 100 allocators on a store that takes 20 ms a block each ask for
 * their next block at once (2 s of fetches queued); then a caller drains a
 * 101st, which had asked last, beyond its blocks in hand: it is served
 * within its 1 s wait_ms, ahead of the queue. */
static void test_keeper_serves_waiters_first(void **state)
{
    enum { N = 100, B = 10 };
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq *q[N + 1];
    idm_seq_opts o;
    idm_seq_stats sx;
    char name[32];
    int64_t id;
    int settled = 0;
    (void)state;
    seq_opts(&o, &st, 1);
    o.min_block = o.max_block = B;
    o.wait_ms = 1000;
    for (int i = 0; i <= N; i++) {
        snprintf(name, sizeof name, "w%03d", i);
        IDM_ASSERT_OK(idm_store_create(st, name, 1, 0, 1));
        o.name = name;
        IDM_ASSERT_OK(idm_seq_open(&q[i], &o));
    }
    /* every spare in hand (the keeper fetched them after each open) */
    for (int tries = 0; tries < 1000 && settled <= N; tries++) {
        settled = 0;
        for (int i = 0; i <= N; i++) {
            idm_seq_stats_get(q[i], &sx);
            settled += sx.left == 2 * B;
        }
        if (settled <= N)
            sleep_ms(5);
    }
    CHECK(settled == N + 1, "%d of %d allocators have their spare block", settled, N + 1);
    atomic_store(&m->delay_ms, 20);
    /* each of the 100: the spare installed, then the prefetch point of the
     * new block reached: 100 fetches of 20 ms queued */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < B + trigger_of_test(B) + 1; j++)
            IDM_ASSERT_OK(idm_seq_next(q[i], &id));
    /* the 101st asks last, then runs out and waits */
    for (int j = 0; j < 2 * B + 1; j++)
        IDM_ASSERT_OK(idm_seq_next(q[N], &id));
    idm_seq_stats_get(q[N], &sx);
    CHECK(sx.waits == 1, "the caller waited %llu times, want 1 (else the test proves nothing)",
          ULL(sx.waits));
    for (int i = 0; i <= N; i++)
        idm_seq_close(q[i]);
    ms_free(m, st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_unique),
        cmocka_unit_test(test_prefetch),       cmocka_unit_test(test_store_down),
        cmocka_unit_test(test_odd_even),       cmocka_unit_test(test_adaptive),
        cmocka_unit_test(test_floors),         cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_counter_back_failover),
        cmocka_unit_test(test_counter_back_one_store),
        cmocka_unit_test(test_sqlite),         cmocka_unit_test(test_one_keeper_per_store),
        cmocka_unit_test(test_keeper_serves_waiters_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
