/* SPDX-License-Identifier: MIT */
/*
 * What the lease tests share. For the file:// ones (static inline): a lease
 * directory of their own with its URL and the paths of worker 0's records,
 * the listed mark of worker 0, a file's modification time. For every
 * coordinator: a guarded generator for a lease, the time of an id, and (in
 * leasetest.c) clocks, waits on a lease's status, a process stopped with
 * SIGSTOP, a minting thread, the test server scripts, and the test bodies
 * that run the same on every coordinator. Include it after testutil.h.
 */
#ifndef IDM_LEASETEST_H
#define IDM_LEASETEST_H

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
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

/* ------------------------------------------------------- leasetest.c */

/* A bound on a wait for an event, or on a call that must give up by
 * itself, that only a hung test reaches: never a claim about how fast. */
#define LEASETEST_HUNG_MS 30000
/* The guard reads CLOCK_MONOTONIC_COARSE: a mint may pass up to a jiffy
 * after the deadline read on CLOCK_MONOTONIC. */
#define LEASETEST_COARSE_NS INT64_C(10000000)

int64_t leasetest_mono_ns(void);
int64_t leasetest_mono_ms(void);
idm_unix_ms leasetest_wall_ms(void);
void leasetest_sleep_ms(int64_t ms);

/* "<scheme>://<eps>/idmint/<name>", malloc'd. */
char *leasetest_url_for(const char *scheme, const char *eps, const char *name);
/* Options for url: max ids, ttl_ms, holder "test". */
void leasetest_opts(idm_lease_opts *o, const char *url, uint32_t max, uint32_t ttl_ms);

/* Open a lease with o and a generator above its mark, attached: both must
 * work. The lease into *l, the generator returned. */
idm_snowflake *leasetest_claim(idm_lease **l, const idm_lease_opts *o, idm_layout *layout);
/* The next holder's part of a handoff: a generator above l's mark (after
 * a loss: leasetest_gen_after_loss), n ids minted into iv, every id of iv
 * strictly increasing (one worker id: the next holder's above all before);
 * then the lost lease (if not NULL: its close releases nothing) and its
 * generator lost_g closed, and l released. */
void leasetest_successor(idm_layout *layout, idm_lease *l, bool after_loss, idm_test_idvec *iv,
                         int n, idm_lease *lost, idm_snowflake *lost_g);
/* Mint n ids into iv (all must work). */
void leasetest_mint_n(idm_snowflake *g, idm_test_idvec *iv, int n);
/* Fails the test if an id of iv (in any order) repeats. */
void leasetest_no_duplicates(const idm_test_idvec *iv);
/* A holder that follows a lost (not released) claim gets a mark up to a
 * TTL ahead of the clock: its generator refuses to start until the clock
 * has passed it, then starts (the one returned). */
idm_snowflake *leasetest_gen_after_loss(idm_layout *layout, idm_lease *l);
/* Wait (up to LEASETEST_HUNG_MS) for the lease to be lost, or to renew
 * past `renewals` with no error; its status in st. */
void leasetest_wait_status(idm_lease *l, idm_lease_status *st, bool want_lost,
                           uint64_t renewals);
/* Wait until a renewal failed since the status st (failures rise). */
void leasetest_wait_failure(idm_lease *l, idm_lease_status *st);

/* A holder on an injected clock that moves only when told (*mc: a manual
 * clock at the wall time, made o's clock): its claim into *l, a generator
 * on that clock attached (returned), 100 ids minted into iv, *at set to T
 * (the injected instant every renewal is sent at, since the clock stays),
 * then a keeper renewal seen working (st). */
idm_snowflake *leasetest_clocked_claim(idm_lease **l, idm_lease_opts *o, idm_layout *layout,
                                      idm_manual_clock **mc, idm_lease_status *st,
                                      idm_test_idvec *iv, int64_t *at);
/* Such a holder once its renewals stopped working (st: its status from
 * before): a renewal fails, not lost; the deadline is exactly T + TTL -
 * margin; a mint 1 ns before it works (its id into iv), one at it is
 * refused. */
void leasetest_deadline_exact(idm_lease *l, idm_snowflake *g, idm_manual_clock *mc, int64_t at,
                              int64_t ttl_ms, int64_t margin_ms, idm_lease_status *st,
                              idm_test_idvec *iv);

/* Stop pid with SIGSTOP and wait until the kernel reports it stopped: the
 * CLOCK_MONOTONIC time from which it runs nothing. leasetest_thaw resumes
 * it; leasetest_thaw_any (teardown, exit) resumes one a failed test left
 * stopped. */
int64_t leasetest_freeze(pid_t pid);
void leasetest_thaw(pid_t pid);
void leasetest_thaw_any(void);

/* A thread minting from g every millisecond, watching the guard: the first
 * refusal's time and the deadline then, the last mint before it, and mints
 * after a refusal (allowed only once a renewal has worked since). The
 * first_* fields, deadline_at_refusal and last_ok_before_ns are written
 * before refused is first incremented and not after: readable once refused
 * is seen non-zero; minted, refused and after_refusal at any time; the
 * rest once leasetest_minter_stop has joined the thread. */
typedef struct leasetest_minter {
    idm_snowflake *g;
    idm_lease *l;
    pthread_t th;
    atomic_int stop;
    atomic_int minted;           /* ids minted so far */
    atomic_int refused;          /* refusals so far */
    idm_test_idvec iv;           /* the ids, once the thread is joined */
    int64_t first_refused_ns;    /* CLOCK_MONOTONIC before the first refused call */
    int64_t deadline_at_refusal; /* the guard's deadline then */
    int64_t last_ok_before_ns;   /* before the last call that minted, before the refusal */
    atomic_int after_refusal;    /* ids minted after the first refusal */
    int unrenewed;               /* of them, minted with no renewal since a refusal */
    int first_rc;                /* the first refusal's error */
} leasetest_minter;
void leasetest_minter_start(leasetest_minter *m, idm_snowflake *g, idm_lease *l);
void leasetest_minter_stop(leasetest_minter *m);
/* Wait until m has minted n ids (the bound only ends a hung test). */
void leasetest_minter_wait_minted(leasetest_minter *m, int n);
/* Wait up to ms for m's first refusal; whether there was one. */
bool leasetest_minter_wait_refused(leasetest_minter *m, int64_t ms);

/* A socket listening on a free loopback port (into *port). */
int leasetest_listen(int *port);

/* scripts/<name> of the source tree (found from IDM_TEST_DATA, set by
 * ctest) into path: 0, or -1 with a message (who: the test) on stderr. */
int leasetest_script_path(char *path, size_t n, const char *who, const char *name);
/* Run a shell command (printf): its exit status (or 128 + signal, -1), its
 * standard output (trailing white space cut) in out unless out is NULL. */
__attribute__((format(printf, 3, 4))) int leasetest_run_out(char *out, size_t n,
                                                            const char *fmt, ...);
/* A test server script with args (printf), as owned by this process
 * (owner_var: the variable its watcher reads): as leasetest_run_out. */
__attribute__((format(printf, 5, 6))) int leasetest_script(char *out, size_t n,
                                                           const char *owner_var,
                                                           const char *script, const char *fmt,
                                                           ...);

/* Bad URLs: each refused by idm_lease_open (base's options) with
 * IDM_EINVAL and a detail that names want (NULL: a detail at all) and not
 * secret (if not NULL). */
void leasetest_bad_urls(const idm_lease_opts *base, const char *const *bad, size_t n,
                        const char *want, const char *secret);
/* A coordinator as the shared test bodies use it: the URL of a fresh
 * place (prefix, schema) called name (malloc'd), and the TTL to ask for. */
typedef struct leasetest_coord {
    char *(*url)(const char *name);
    uint32_t ttl_ms;
} leasetest_coord;

/* E1: n claimants at once for max ids, at name (none has made it yet): max
 * get distinct ids, the others are refused "no free worker id", and the
 * ids each mints (per) never repeat. */
void leasetest_racing_claimants(const leasetest_coord *c, const char *name, int n, uint32_t max,
                                int per);
/* A holder process killed with kill -9 (o's options, 2 or more ids), and
 * a claimant at once: while the dead holder's claim lives (held(id): its
 * id is taken) the claimant gets another id; once it is free, a new claim
 * gets it with the dead holder's last mark, above every id it minted. row
 * names the fault row in what it prints. */
void leasetest_killed_holder(const idm_lease_opts *o, const char *row,
                             bool (*held)(uint32_t id));
/* A handoff (at name) to a holder whose clock is 5 s behind the released
 * mark: its generator refuses to start, and starts once its clock has
 * passed the mark, above every id the last holder minted. */
void leasetest_skewed_handoff(const leasetest_coord *c, const char *name);

#endif /* IDM_LEASETEST_H */
