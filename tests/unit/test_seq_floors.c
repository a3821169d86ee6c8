/* SPDX-License-Identifier: MIT */
/*
 * The allocator's local floor record (idm_seq_opts.floor_file) and opening
 * with stores that do not answer (issue 13, items 1 and 4; fault row P9):
 *  - one store rewound between two runs is refused at the next open by the
 *    floor file (one store has no other store to hold its floor);
 *  - the file is on disk and at least as high as every id handed out,
 *    before the id is handed out; a block that cannot be recorded is never
 *    used;
 *  - a file for another sequence or another number of stores, a corrupt
 *    one, a link or a FIFO is refused by name, and open changes nothing;
 *  - two stores, one down at open: opens with a floor file (not without),
 *    serves from the other, comes back to the skipped store when it answers,
 *    and refuses the skipped store's block if its counter went back while
 *    it was down;
 *  - the stats say which stores are down and how long a store call runs;
 *  - each of the floor file's fault sites (idm__fault_hook) is reached, and
 *    failing it fails the write as its error would: the block is not used,
 *    no id is handed out twice, the file stays whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <idmint/segment.h>

#include "common.h"
#include "memstore.h"
#include "seqtest.h"
#include "testutil.h"

typedef idm_test_memstore mstore;
#define ms_new idm_test_ms_new
#define sleep_ms idm_test_sleep_ms

static char *g_dir;
static char g_file[4200];

static void opts(idm_seq_opts *o, idm_store **stores, size_t n, const char *file)
{
    idm_test_seq_opts(o, stores, n);
    o->min_block = o->max_block = 10;
    o->wait_ms = 5000;
    o->floor_file = file;
}

static int setup(void **state)
{
    (void)state;
    g_dir = idm_test_tmpdir();
    snprintf(g_file, sizeof g_file, "%s/orders.floors", g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    idm_test_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
    return 0;
}

/* The floor the file records for store k, -1 if none (parsed here, not by
 * the code under test). */
static int64_t file_floor(const char *path, unsigned k)
{
    char line[256];
    int64_t f = -1;
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return -1;
    while (fgets(line, sizeof line, fp) != NULL) {
        unsigned kk;
        long long v;
        char extra;
        if (sscanf(line, "%u %lld%c", &kk, &v, &extra) == 3 && extra == '\n' && kk == k)
            f = v;
    }
    fclose(fp);
    return f;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* Item 1: one store, rewound between runs: the floor file refuses it. */
static void test_one_store_rewound_across_restarts(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    int64_t id = 0, saved, maxid = 0;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    saved = idm_test_memstore_next(m, "orders"); /* the "backup" */
    opts(&o, &st, 1, g_file);
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 250; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        if (id > maxid)
            maxid = id;
        /* on disk before it is handed out: the file is above every id */
        CHECK(file_floor(g_file, 0) > id, "id %lld handed out, file floor %lld", (long long)id,
              (long long)file_floor(g_file, 0));
    }
    idm_seq_close(q);
    /* a clean restart works and goes on above */
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    IDM_ASSERT_OK(idm_seq_next(q, &id));
    CHECK(id > maxid, "after a restart: %lld, not above %lld", (long long)id, (long long)maxid);
    idm_seq_close(q);
    /* restored from the backup: refused, naming the floor file */
    idm_test_memstore_set_next(m, "orders", saved);
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_ERANGE);
    CHECK(strstr(idm_error_detail(), "floor file") != NULL &&
              strstr(idm_error_detail(), "store 0") != NULL &&
              strstr(idm_error_detail(), "on purpose? remove ") != NULL &&
              strstr(idm_error_detail(), g_file) != NULL,
          "detail: %s", idm_error_detail());
    /* every restart too (the file is not lowered by a refused open) */
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_ERANGE);
    idm_test_memstore_free(m, st);
}

/* A block that cannot be recorded in the floor file is never used: the ids
 * in hand are served, then IDM_EUNAVAIL naming the floor file; no id is
 * above what the file holds. */
static void test_unrecordable_block_unused(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    char tmp[4300];
    int64_t id = 0, floor;
    int rc = 0, served = 0;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    opts(&o, &st, 1, g_file);
    o.wait_ms = 200;
    o.prefetch_pct = 0; /* no spare: the next block is fetched on demand */
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    floor = file_floor(g_file, 0);
    /* the rewrite's temporary file cannot be made: a directory is there */
    snprintf(tmp, sizeof tmp, "%s.tmp", g_file);
    assert_int_equal(mkdir(tmp, 0700), 0);
    while ((rc = idm_seq_next(q, &id)) == 0) {
        CHECK(id < floor, "id %lld handed out beyond the recorded floor %lld", (long long)id,
              (long long)floor);
        served++;
        assert_true(served <= 10);
    }
    assert_int_equal(rc, IDM_EUNAVAIL);
    assert_int_equal(served, 10);
    idm_seq_stats_get(q, &sx);
    CHECK(strstr(sx.last_detail, "floor file") != NULL && strstr(sx.last_detail, "not used"),
          "last_detail: %s", sx.last_detail);
    /* fixed: it serves again */
    assert_int_equal(rmdir(tmp), 0);
    do
        rc = idm_seq_next(q, &id);
    while (rc == IDM_EUNAVAIL);
    IDM_ASSERT_OK(rc);
    CHECK(id < file_floor(g_file, 0), "id %lld, floor %lld", (long long)id,
          (long long)file_floor(g_file, 0));
    idm_seq_close(q);
    idm_test_memstore_free(m, st);
}

/* Files that are not this sequence's record: refused by name; nothing is
 * taken from the store. */
static void test_foreign_files_refused(void **state)
{
    static const struct {
        const char *text;
        int rc;
        const char *says;
    } cases[] = {
        {"idmint-floors 1\nsequence invoices\nstores 1\n0 5\n", IDM_EINVAL, "not 'orders'"},
        {"idmint-floors 1\nsequence orders\nstores 2\n0 5\n", IDM_EINVAL, "2 stores"},
        {"idmint-floors 1\nsequence orders\nstores 1\n0 5", IDM_ECORRUPT, "does not end"},
        {"idmint-floors 1\nsequence orders\nstores 1\n0 -5\n", IDM_ECORRUPT, "K FLOOR"},
        {"idmint-floors 1\nsequence orders\nstores 1\n1 5\n", IDM_ECORRUPT, "out of range"},
        {"idmint-floors 1\nsequence orders\nstores 1\n0 5\n0 6\n", IDM_ECORRUPT, "twice"},
        {"idmint-floors 1\nsequence orders\n", IDM_ECORRUPT, "cut short"},
        {"", IDM_ECORRUPT, "cut short"},
        {"idmint-floors 2\n", IDM_ECORRUPT, "line 1"},
        {"idmint-floors 1\nsequence orders\nstores 1\n0 99999999999999999999\n", IDM_ECORRUPT,
         "K FLOOR"},
    };
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q = NULL;
    char link[4300];
    int64_t before;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    before = idm_test_memstore_next(m, "orders");
    opts(&o, &st, 1, g_file);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(g_file, cases[i].text);
        IDM_ASSERT_RC(idm_seq_open(&q, &o), cases[i].rc);
        CHECK(strstr(idm_error_detail(), g_file) != NULL &&
                  strstr(idm_error_detail(), cases[i].says) != NULL,
              "case %zu: detail: %s", i, idm_error_detail());
        assert_null(q);
    }
    assert_int_equal(unlink(g_file), 0);
    /* a symbolic link, a FIFO (never waited on), a directory */
    snprintf(link, sizeof link, "%s/elsewhere", g_dir);
    write_file(link, "idmint-floors 1\nsequence orders\nstores 1\n0 5\n");
    assert_int_equal(symlink(link, g_file), 0);
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "symbolic link") != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(unlink(g_file), 0);
    assert_int_equal(mkfifo(g_file, 0600), 0);
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "not a regular file") != NULL, "detail: %s",
          idm_error_detail());
    assert_int_equal(unlink(g_file), 0);
    assert_int_equal(mkdir(g_file, 0700), 0);
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EINVAL);
    assert_int_equal(rmdir(g_file), 0);
    /* nothing was taken by the refused opens */
    assert_int_equal(idm_test_memstore_next(m, "orders"), before);
    /* an empty path */
    o.floor_file = "";
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "floor_file") != NULL, "detail: %s", idm_error_detail());
    idm_test_memstore_free(m, st);
}

/* Two allocators (as two processes would) on one store and one file: the
 * file only goes up and ends at least as high as every id either handed
 * out. */
static void test_shared_file(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *a, *b;
    int64_t id, maxid = 0, last = -1;
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    opts(&o, &st, 1, g_file);
    IDM_ASSERT_OK(idm_seq_open(&a, &o));
    IDM_ASSERT_OK(idm_seq_open(&b, &o));
    for (int i = 0; i < 300; i++) {
        int64_t f;
        IDM_ASSERT_OK(idm_seq_next(i % 3 == 0 ? a : b, &id));
        if (id > maxid)
            maxid = id;
        f = file_floor(g_file, 0);
        CHECK(f >= last, "the file went down: %lld after %lld", (long long)f, (long long)last);
        last = f;
    }
    idm_seq_close(a);
    idm_seq_close(b);
    CHECK(file_floor(g_file, 0) > maxid, "file %lld, max id %lld",
          (long long)file_floor(g_file, 0), (long long)maxid);
    idm_test_memstore_free(m, st);
}

/* Two stores (0 and 1 of 2) for "orders" in p, o set up for them with the
 * floor file, and a first run with both up (which records both floors in
 * the file): its ids in ids, how many returned. */
static size_t first_run(idm_test_pair *p, idm_seq_opts *o, uint64_t *ids)
{
    idm_seq *q;
    int64_t id;
    size_t n = 0;
    idm_test_pair_new(p, "orders");
    opts(o, p->st, 2, g_file);
    IDM_ASSERT_OK(idm_seq_open(&q, o));
    for (int i = 0; i < 100; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    idm_seq_close(q);
    return n;
}

/* Item 4: two stores, store 1 down at open. Without a floor file store 0's
 * floor (kept only in store 1) is unknown: refused. With one: opens, serves
 * from store 0 (even ids), reports store 1 down, and takes from store 1
 * again once it answers. */
static void test_open_with_a_store_down(void **state)
{
    enum { MAXN = 100000 };
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t *ids = calloc(MAXN, sizeof *ids);
    size_t n = 0;
    int64_t id;
    bool odd = false;
    (void)state;
    assert_non_null(ids);
    n = first_run(&p, &o, ids);
    atomic_store(&p.m[1]->down, 1);
    o.floor_file = NULL;
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EUNAVAIL);
    CHECK(strstr(idm_error_detail(), "store 0") != NULL, "detail: %s", idm_error_detail());
    o.floor_file = g_file;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    idm_seq_stats_get(q, &sx);
    CHECK(sx.down_stores == 1, "down_stores %zu", sx.down_stores);
    CHECK(strstr(sx.last_detail, "store 1") != NULL, "last_detail: %s", sx.last_detail);
    for (int i = 0; i < 200; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        CHECK(id % 2 == 0, "id %lld from store 1, which is down", (long long)id);
        ids[n++] = (uint64_t)id;
    }
    atomic_store(&p.m[1]->down, 0);
    while (!odd && n < MAXN) { /* store 1 is asked again within its backoff */
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
        odd = id % 2 != 0;
        if (n % 10 == 0)
            sleep_ms(2);
    }
    CHECK(odd, "store 1 never used again after %zu ids", n);
    idm_seq_stats_get(q, &sx);
    CHECK(sx.down_stores == 0, "down_stores %zu", sx.down_stores);
    assert_int_equal(idm_test_count_duplicates(ids, n), 0);
    idm_seq_close(q);
    free(ids);
    idm_test_pair_free(&p);
}

/* Item 4, what is checked for a skipped store: store 1 is down at open and
 * its counter goes back while it is down (restored from a backup); when it
 * answers, its block is below the floor known at open: never used, store 1
 * marked bad, store 0 carries on; no id twice. */
static void test_skipped_store_rewound(void **state)
{
    enum { MAXN = 100000 };
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t *ids = calloc(MAXN, sizeof *ids);
    size_t n = 0;
    int64_t id;
    (void)state;
    assert_non_null(ids);
    n = first_run(&p, &o, ids);
    atomic_store(&p.m[1]->down, 1);
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    idm_test_memstore_set_next(p.m[1], "orders", 0);
    atomic_store(&p.m[1]->down, 0);
    do {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
        if (n % 10 == 0)
            sleep_ms(2);
        idm_seq_stats_get(q, &sx);
    } while (sx.bad_stores == 0 && n < MAXN - 1000);
    CHECK(sx.bad_stores == 1 && strstr(sx.bad_detail, "store 1") != NULL,
          "bad_stores %zu: %s", sx.bad_stores, sx.bad_detail);
    for (int i = 0; i < 500; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    assert_int_equal(idm_test_count_duplicates(ids, n), 0);
    idm_seq_close(q);
    free(ids);
    idm_test_pair_free(&p);
}

/* The stats show the store call in progress and for how long. */
static void test_call_in_progress(void **state)
{
    idm_test_pair p;
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    int64_t id;
    int seen = 0;
    (void)state;
    idm_test_pair_new(&p, "orders");
    opts(&o, p.st, 2, NULL);
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    idm_seq_stats_get(q, &sx);
    assert_int_equal(sx.call_ms, 0);
    atomic_store(&p.m[0]->delay_ms, 400);
    atomic_store(&p.m[1]->delay_ms, 400);
    /* use up both blocks: the keeper is asked for one, and waits on the store */
    for (int i = 0; i < 20; i++)
        IDM_ASSERT_OK(idm_seq_next(q, &id));
    for (int i = 0; i < 2000 && !seen; i++) {
        idm_seq_stats_get(q, &sx);
        seen = sx.call_ms > 0;
        if (!seen)
            sleep_ms(1);
    }
    CHECK(seen, "no store call seen in progress");
    CHECK(sx.call_store < 2, "call_store %zu", sx.call_store);
    atomic_store(&p.m[0]->delay_ms, 0);
    atomic_store(&p.m[1]->delay_ms, 0);
    idm_seq_close(q);
    idm_test_pair_free(&p);
}

/* ------------------------------------------------------------ fault sites */

/* The floor file's fault sites (src/segment/floors.c), in the order a write
 * reaches them; the last is reached only after a failed write. */
static const char *const g_sites[] = {
    "floors.open-lock", "floors.flock", "floors.unlink-stale", "floors.open",
    "floors.write",     "floors.fsync", "floors.rename",       "floors.open-dir",
    "floors.fsyncdir",  "floors.unlink-failed",
};
#define NSITES (sizeof g_sites / sizeof g_sites[0])
#define SITE_BIT(i) (1u << (i))

static atomic_uint g_seen;    /* the sites reached (bits) */
static atomic_uint g_fail;    /* the sites failed (bits) */
static atomic_uint g_failed;  /* calls failed so far */
static atomic_int g_unknown;  /* a floors.* site not in g_sites was reached */

static size_t site_index(const char *name)
{
    for (size_t i = 0; i < NSITES; i++)
        if (strcmp(g_sites[i], name) == 0)
            return i;
    fail_msg("no site %s", name);
    return 0;
}

/* idm__fault_hook: record the site; fail it with EIO if armed. */
static int hook(const char *site)
{
    if (strncmp(site, "floors.", 7) != 0)
        return 0;
    for (size_t i = 0; i < NSITES; i++) {
        if (strcmp(site, g_sites[i]) != 0)
            continue;
        atomic_fetch_or(&g_seen, SITE_BIT(i));
        if ((atomic_load(&g_fail) & SITE_BIT(i)) == 0)
            return 0;
        atomic_fetch_add(&g_failed, 1);
        return EIO;
    }
    atomic_store(&g_unknown, 1);
    return 0;
}

/* Set before any allocator runs, cleared after the last one closed. */
static int setup_faults(void **state)
{
    setup(state);
    atomic_store(&g_seen, 0);
    atomic_store(&g_fail, 0);
    atomic_store(&g_failed, 0);
    atomic_store(&g_unknown, 0);
    idm__fault_hook = hook;
    return 0;
}

static int teardown_faults(void **state)
{
    idm__fault_hook = NULL;
    return teardown(state);
}

/* path is a whole floor file for "orders" with n stores (parsed here, not
 * by the code under test): true, or false if it is missing or broken. */
static bool file_whole(const char *path, unsigned n)
{
    char line[256], want[64];
    int at = 0;
    bool ok = true;
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        return false;
    snprintf(want, sizeof want, "stores %u\n", n);
    while (ok && fgets(line, sizeof line, fp) != NULL) {
        unsigned k;
        long long v;
        char extra;
        at++;
        if (at == 1)
            ok = strcmp(line, "idmint-floors 1\n") == 0;
        else if (at == 2)
            ok = strcmp(line, "sequence orders\n") == 0;
        else if (at == 3)
            ok = strcmp(line, want) == 0;
        else
            ok = sscanf(line, "%u %lld%c", &k, &v, &extra) == 3 && extra == '\n' && k < n &&
                 v > 0;
    }
    fclose(fp);
    return ok && at >= 3;
}

/* Every site is reached by the normal paths (opening, blocks taken, two
 * allocators on one file), but the removal of a failed write's copy, which
 * a failed write reaches; no floors.* site outside the list. */
static void test_fault_sites_reached(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *a, *b;
    int64_t id;
    unsigned all = SITE_BIT(NSITES) - 1, failed_only = SITE_BIT(site_index("floors.unlink-failed"));
    (void)state;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    opts(&o, &st, 1, g_file);
    IDM_ASSERT_OK(idm_seq_open(&a, &o));
    IDM_ASSERT_OK(idm_seq_open(&b, &o));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_seq_next(i % 2 ? a : b, &id));
    idm_seq_close(a);
    idm_seq_close(b);
    CHECK(atomic_load(&g_seen) == (all & ~failed_only), "sites reached: %#x of %#x",
          atomic_load(&g_seen), all & ~failed_only);
    /* a failed write removes its copy */
    atomic_store(&g_fail, SITE_BIT(site_index("floors.write")));
    opts(&o, &st, 1, g_file);
    IDM_ASSERT_RC(idm_seq_open(&a, &o), IDM_EIO);
    CHECK(atomic_load(&g_seen) == all, "sites reached: %#x of %#x", atomic_load(&g_seen), all);
    CHECK(atomic_load(&g_unknown) == 0, "a floors.* site not in this test's list");
    idm_test_memstore_free(m, st);
}

/* Fail one site while an allocator runs: the ids in hand are served (each
 * below the floor on disk), then IDM_EUNAVAIL (the block taken is never
 * used, its floor unrecorded) -- but for floors.unlink-stale, whose failure
 * with no leftover changes nothing; once the fault is gone ids come again;
 * no id twice; the file stays whole. */
static void run_with_fault(size_t site)
{
    enum { MAXN = 128 };
    const char *name = g_sites[site];
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q;
    idm_seq_stats sx;
    uint64_t ids[MAXN];
    size_t n = 0;
    int64_t id;
    int rc = 0, served = 0;
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    opts(&o, &st, 1, g_file);
    o.prefetch_pct = 0; /* the next block is fetched when one runs out */
    o.wait_ms = 200;
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    for (int i = 0; i < 5; i++) {
        IDM_ASSERT_OK(idm_seq_next(q, &id));
        ids[n++] = (uint64_t)id;
    }
    atomic_store(&g_failed, 0);
    atomic_store(&g_fail, SITE_BIT(site));
    while (served < 100 && (rc = idm_seq_next(q, &id)) == 0) {
        ids[n++] = (uint64_t)id;
        CHECK(id < file_floor(g_file, 0), "%s: id %lld handed out, the file's floor is %lld",
              name, LL(id), LL(file_floor(g_file, 0)));
        served++;
    }
    CHECK(atomic_load(&g_failed) > 0, "%s: never reached", name);
    if (strcmp(name, "floors.unlink-stale") == 0) {
        CHECK(rc == 0 && served == 100, "%s: %d ids, then %s", name, served, idm_err_name(rc));
    } else {
        CHECK(rc == IDM_EUNAVAIL && served == 5, "%s: %d ids, then %s", name, served,
              idm_err_name(rc));
        idm_seq_stats_get(q, &sx);
        CHECK(strstr(sx.last_detail, "not used") != NULL &&
                  strstr(sx.last_detail, g_file) != NULL,
              "%s: last_detail: %s", name, sx.last_detail);
    }
    CHECK(file_whole(g_file, 1), "%s: the file is not whole", name);
    atomic_store(&g_fail, 0);
    do
        rc = idm_seq_next(q, &id);
    while (rc == IDM_EUNAVAIL);
    IDM_ASSERT_OK(rc);
    ids[n++] = (uint64_t)id;
    CHECK(id < file_floor(g_file, 0), "%s: id %lld, the file's floor %lld", name, LL(id),
          LL(file_floor(g_file, 0)));
    idm_seq_close(q);
    CHECK(file_whole(g_file, 1), "%s: the file is not whole", name);
    CHECK(idm_test_count_duplicates(ids, n) == 0, "%s: an id twice", name);
    idm_test_memstore_free(m, st);
}

/* Each site in turn, failed at open (refused, IDM_EIO naming the file and
 * the error; no allocator) and while an allocator runs (run_with_fault). */
static void test_fault_each_site(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSITES; i++) {
        const char *name = g_sites[i];
        idm_store *st;
        mstore *m;
        idm_seq_opts o;
        idm_seq *q = NULL;
        int rc;
        if (strcmp(name, "floors.unlink-failed") == 0)
            continue; /* reached after a failure only: test_fault_leftover */
        /* at open, a new file */
        (void)unlink(g_file);
        m = ms_new(&st);
        IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
        opts(&o, &st, 1, g_file);
        atomic_store(&g_failed, 0);
        atomic_store(&g_fail, SITE_BIT(i));
        rc = idm_seq_open(&q, &o);
        atomic_store(&g_fail, 0);
        CHECK(atomic_load(&g_failed) > 0, "%s: not reached at open", name);
        if (strcmp(name, "floors.unlink-stale") == 0) {
            IDM_ASSERT_OK(rc);
            idm_seq_close(q);
        } else {
            CHECK(rc == IDM_EIO && q == NULL && strstr(idm_error_detail(), g_file) != NULL &&
                      strstr(idm_error_detail(), strerror(EIO)) != NULL,
                  "%s: open: %s: %s", name, idm_err_name(rc), idm_error_detail());
        }
        CHECK(access(g_file, F_OK) != 0 || file_whole(g_file, 1), "%s: the file is not whole",
              name);
        idm_test_memstore_free(m, st);
        /* while running, on a new file */
        (void)unlink(g_file);
        run_with_fault(i);
    }
}

/* A write that fails and cannot remove its copy leaves PATH.tmp behind (as
 * a writer that died would): the next write removes it first -- unless that
 * removal fails too, when the new copy cannot be made (EEXIST) and the
 * block is not used. */
static void test_fault_leftover(void **state)
{
    idm_store *st;
    mstore *m = ms_new(&st);
    idm_seq_opts o;
    idm_seq *q = NULL;
    char tmp[4300];
    int64_t id, floor;
    (void)state;
    snprintf(tmp, sizeof tmp, "%s.tmp", g_file);
    IDM_ASSERT_OK(idm_store_create(st, "orders", 1, 0, 1));
    opts(&o, &st, 1, g_file);
    atomic_store(&g_fail, SITE_BIT(site_index("floors.fsync")) |
                              SITE_BIT(site_index("floors.unlink-failed")));
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EIO);
    CHECK(access(tmp, F_OK) == 0, "no leftover %s", tmp);
    CHECK(access(g_file, F_OK) != 0, "the file was made from a copy not synced");
    /* the removal of the leftover fails too: the copy cannot be made */
    atomic_store(&g_fail, SITE_BIT(site_index("floors.unlink-stale")));
    IDM_ASSERT_RC(idm_seq_open(&q, &o), IDM_EIO);
    CHECK(strstr(idm_error_detail(), "cannot create it") != NULL &&
              strstr(idm_error_detail(), strerror(EEXIST)) != NULL,
          "detail: %s", idm_error_detail());
    /* no fault: the leftover is removed and replaced */
    atomic_store(&g_fail, 0);
    IDM_ASSERT_OK(idm_seq_open(&q, &o));
    CHECK(access(tmp, F_OK) != 0, "leftover %s still there", tmp);
    CHECK(file_whole(g_file, 1), "the file is not whole");
    floor = file_floor(g_file, 0);
    IDM_ASSERT_OK(idm_seq_next(q, &id));
    CHECK(id < floor, "id %lld, floor %lld", LL(id), LL(floor));
    idm_seq_close(q);
    idm_test_memstore_free(m, st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_store_rewound_across_restarts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unrecordable_block_unused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_files_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_with_a_store_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skipped_store_rewound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_in_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_sites_reached, setup_faults, teardown_faults),
        cmocka_unit_test_setup_teardown(test_fault_each_site, setup_faults, teardown_faults),
        cmocka_unit_test_setup_teardown(test_fault_leftover, setup_faults, teardown_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
