/* SPDX-License-Identifier: MIT */
/*
 * What the file:// lease tests (test_lease_file.c, test_lease_file_marks.c)
 * share: a lease directory of their own with its URL and the paths of
 * worker 0's records, a guarded generator for a lease, the time of an id,
 * the listed mark of worker 0, a file's modification time. Header only
 * (static inline): include it after testutil.h.
 */
#ifndef IDM_LEASETEST_H
#define IDM_LEASETEST_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <idmint/lease.h>

#include "testutil.h"

/* A fresh lease directory (dir, its URL file://dir), and the paths of
 * worker 0's lock file (rec) and marks file (mrec) in it. */
typedef struct leasetest_dir {
    char *dir, *url, *rec, *mrec;
} leasetest_dir;

/* "file://dir", malloc'd. */
static inline char *leasetest_url(const char *dir)
{
    char *u = malloc(strlen(dir) + 8);
    assert_non_null(u);
    sprintf(u, "file://%s", dir);
    return u;
}

static inline leasetest_dir leasetest_begin(void)
{
    leasetest_dir t;
    t.dir = idm_test_tmpdir();
    t.url = leasetest_url(t.dir);
    t.rec = idm_test_path(t.dir, "worker-0000.lease");
    t.mrec = idm_test_path(t.dir, "marks/worker-0000.mark");
    return t;
}

/* Remove the directory and free t's strings. */
static inline void leasetest_end(leasetest_dir *t)
{
    idm_test_rmtree(t->dir);
    free(t->dir);
    free(t->url);
    free(t->rec);
    free(t->mrec);
    memset(t, 0, sizeof *t);
}

/* A guarded generator of layout (twitter's fields: datacenter 0, the worker
 * leased by l) on clock (NULL: the system clock), above l's mark; *rc is
 * the open's result (NULL on failure). */
static inline idm_snowflake *leasetest_gen_rc(idm_layout *layout, idm_lease *l,
                                              const idm_clock *clock, int *rc)
{
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    o.clock = clock;
    o.guarded = true;
    o.after_ms = idm_lease_mark(l);
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 0));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", idm_lease_worker(l)));
    *rc = idm_snowflake_open(&g, &o);
    return g;
}

/* The same, which must open. */
static inline idm_snowflake *leasetest_gen(idm_layout *layout, idm_lease *l,
                                           const idm_clock *clock)
{
    int rc;
    idm_snowflake *g = leasetest_gen_rc(layout, l, clock, &rc);
    IDM_ASSERT_OK(rc);
    return g;
}

static inline idm_unix_ms leasetest_time_of(idm_layout *layout, uint64_t id)
{
    idm_decoded d;
    IDM_ASSERT_OK(idm_layout_decode(layout, id, &d));
    return d.unix_ms;
}

/* The mark idm_lease_list gives worker 0 of url, which must be the only id
 * with a record; whether it is held into *held and its holder into h (64
 * bytes), each if not NULL. */
static inline idm_unix_ms leasetest_listed_mark(const char *url, bool *held, char *h)
{
    idm_lease_entry *e = NULL;
    size_t n = 0;
    idm_unix_ms m;
    IDM_ASSERT_OK(idm_lease_list(url, 4, &e, &n));
    CHECK(n == 1 && e[0].worker == 0, "%zu entries listed, the first for worker %u", n,
          n > 0 ? (unsigned)e[0].worker : 0u);
    m = e[0].mark_ms;
    if (held != NULL)
        *held = e[0].held;
    if (h != NULL)
        snprintf(h, 64, "%s", e[0].holder);
    free(e);
    return m;
}

/* Set path's modification (and access) time to mtime_ms. */
static inline void leasetest_set_mtime(const char *path, idm_unix_ms mtime_ms)
{
    struct timespec ts[2];
    ts[0].tv_sec = (time_t)(mtime_ms / 1000);
    ts[0].tv_nsec = (long)(mtime_ms % 1000) * 1000000;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

#endif /* IDM_LEASETEST_H */
