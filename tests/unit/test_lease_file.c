/* SPDX-License-Identifier: MIT */
/*
 * Worker-id leases on the file backend, in one process and with forked
 * children: distinct ids for distinct claims, the keeper feeding a guarded
 * generator (each renewal, on an injected clock, moving the deadline and the
 * mark on; minting stopping at the deadline while renewals are held back),
 * the mark handed from one holder to the next (clean release and
 * kill -9 alike), "no free worker id", a lock file removed under a holder
 * (the claim is lost and minting stops at once), damaged, short and
 * unreadable records, bad URLs, a lease directory that racing processes all
 * find missing and create at once (mkdir is interposed below to make that
 * interleaving certain), scopes (a claimant for another layout,
 * epoch or lease field refused, racing first claimants) and FIFOs in a
 * file's place. Fault rows H5 (two processes, one id) and
 * E12/E13 analogues of the catalogue for the embedded backend, and H3/H4
 * analogues for the record file (a torn or cut record, or one that cannot
 * be read: never start lower than the last holder may have minted).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <idmint/lease.h>

#include "leasetest.h"
#include "testutil.h"

static void lease_opts(idm_lease_opts *o, const char *url, uint32_t max)
{
    idm_lease_opts_init(o);
    o->url = url;
    o->max_workers = max;
    o->ttl_ms = 3000; /* renewals every second */
    o->holder = "test";
}

/* Make path a file of len bytes of junk (no record line in it), last
 * modified at mtime_ms. */
static void write_junk(const char *path, size_t len, idm_unix_ms mtime_ms)
{
    char junk[512];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_true(len <= sizeof junk);
    memset(junk, 'x', sizeof junk);
    assert_int_equal(write(fd, junk, len), (ssize_t)len);
    close(fd);
    leasetest_set_mtime(path, mtime_ms);
}

static void claims_are_distinct_and_marks_hand_over(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    idm_lease_opts o;
    idm_lease *a, *b, *c;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    uint64_t id = 0, last = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 32);
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(a), 0);
    assert_int_equal(idm_lease_worker(b), 1);
    assert_int_equal(idm_lease_mark(a), 0);

    /* Minting under a: refused before attach, works after. */
    g = leasetest_gen(layout, a, NULL);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    IDM_ASSERT_OK(idm_lease_attach(a, g));
    for (int i = 0; i < 10000; i++) {
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        assert_true(id > last);
        last = id;
    }
    idm_lease_status_get(a, &st);
    assert_int_equal(st.worker, 0);
    /* The claim counts as the first renewal; the keeper's own may or may
     * not have come yet (keeper_renewals_move_the_deadline checks them). */
    assert_true(st.renewals >= 1);
    assert_false(st.lost);
    IDM_ASSERT_OK(idm_lease_close(a));
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE); /* stopped by close */
    idm_snowflake_close(g);

    /* The next claim gets id 0 again, with a's final mark: the time of the
     * last id a minted. */
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    assert_int_equal(idm_lease_worker(c), 0);
    assert_int_equal(idm_lease_mark(c), leasetest_time_of(layout, last));
    g = leasetest_gen(layout, c, NULL);
    IDM_ASSERT_OK(idm_lease_attach(c, g));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    assert_true(id > last);
    assert_true(leasetest_time_of(layout, id) > idm_lease_mark(c));
    IDM_ASSERT_OK(idm_lease_close(c));
    idm_snowflake_close(g);
    IDM_ASSERT_OK(idm_lease_close(b));

    /* The list shows both records, none held now. */
    idm_lease_entry *e;
    size_t n;
    IDM_ASSERT_OK(idm_lease_list(url, 32, &e, &n));
    assert_int_equal(n, 2);
    assert_int_equal(e[0].worker, 0);
    assert_int_equal(e[0].held, 0);
    assert_true(e[0].mark_ms >= leasetest_time_of(layout, id));
    assert_string_equal(e[0].holder, "test");
    free(e);
    idm_layout_free(layout);
    leasetest_end(&t);
}

static void no_free_worker_id(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    idm_lease_opts o;
    idm_lease *a, *b, *c = NULL;
    (void)unused;
    lease_opts(&o, url, 2);
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    IDM_ASSERT_RC(idm_lease_open(&c, &o), IDM_EBUSY);
    CHECK(strstr(idm_error_detail(), "no free worker id") != NULL, "detail: %s", idm_error_detail());
    assert_null(c);
    idm_lease_close(a);
    idm_lease_close(b);
    leasetest_end(&t);
}

/* A holder killed with kill -9 frees its id at once, and its last
 * recorded mark passes to the next holder. */
static void kill9_frees_at_once(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    idm_lease_opts o;
    idm_lease *l;
    int p[2];
    pid_t pid;
    long long child_mark = 0;
    int status;
    (void)unused;
    lease_opts(&o, url, 4);
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_layout *layout;
        idm_snowflake *g;
        idm_lease_status st;
        uint64_t id;
        if (idm_layout_preset(&layout, "twitter") != 0 || idm_lease_open(&l, &o) != 0)
            _exit(2);
        g = leasetest_gen(layout, l, NULL);
        if (idm_lease_attach(l, g) != 0 || idm_snowflake_next(g, &id) != 0)
            _exit(3);
        idm_lease_status_get(l, &st);
        child_mark = st.mark_ms;
        if (write(p[1], &child_mark, sizeof child_mark) != sizeof child_mark)
            _exit(4);
        pause(); /* until killed */
        _exit(0);
    }
    close(p[1]);
    assert_int_equal(read(p[0], &child_mark, sizeof child_mark), (ssize_t)sizeof child_mark);
    close(p[0]);
    /* While the child lives, its id is held. */
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 1);
    idm_lease_close(l);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* Freed at once, with the child's recorded mark. */
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    assert_int_equal(idm_lease_mark(l), child_mark);
    assert_true(child_mark > 0);
    idm_lease_close(l);
    leasetest_end(&t);
}

/* An operator removes the lock file under a live holder: the next renewal
 * finds the claim lost, and minting stops at once. */
static void removed_file_loses_claim(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url, *path;
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    uint64_t id;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    o.ttl_ms = 1000; /* renewals every 333 ms */
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    g = leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    path = t.rec;
    assert_int_equal(unlink(path), 0);
    for (int i = 0; i < 40; i++) { /* up to 2 s */
        idm_lease_status_get(l, &st);
        if (st.lost)
            break;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    assert_true(st.lost);
    assert_int_equal(st.last_error, IDM_ELEASE);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    idm_lease_close(l);
    idm_snowflake_close(g);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/* ------------------------------------------------- the keeper's renewals */

/*
 * The clock of keeper_renewals_move_the_deadline: a manual clock, except
 * that a read of its monotonic time on any thread but the test's own waits
 * for a ticket the test hands out. The keeper is that other thread, and a
 * renewal starts with that read (its send time): so the test decides when
 * each renewal happens and what time it reads, and without a ticket the
 * keeper is held before it renews anything. The keeper still waits TTL/3 of
 * real time between renewals; the test never looks at how long.
 */
typedef struct gated_clock {
    idm_clock iface;
    const idm_clock *inner;
    pthread_t owner;   /* the test's thread: its reads never wait */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int tickets;       /* renewals the keeper may start */
    int parked;        /* reads waiting for a ticket now */
    bool open;         /* no more waiting (to close the lease) */
} gated_clock;

static idm_wall_ns gated_wall_ns(void *ctx)
{
    gated_clock *gc = ctx;
    return gc->inner->wall_ns(gc->inner->ctx);
}

static idm_mono_ns gated_mono_ns(void *ctx)
{
    gated_clock *gc = ctx;
    if (!pthread_equal(pthread_self(), gc->owner)) {
        pthread_mutex_lock(&gc->mu);
        gc->parked++;
        pthread_cond_broadcast(&gc->cv);
        while (gc->tickets == 0 && !gc->open)
            pthread_cond_wait(&gc->cv, &gc->mu);
        if (gc->tickets > 0)
            gc->tickets--;
        gc->parked--;
        pthread_cond_broadcast(&gc->cv);
        pthread_mutex_unlock(&gc->mu);
    }
    return gc->inner->mono_ns(gc->inner->ctx);
}

static void gated_sleep_ns(void *ctx, int64_t ns)
{
    gated_clock *gc = ctx;
    gc->inner->sleep_ns(gc->inner->ctx, ns);
}

/* Static: a failed check leaves the keeper held on it, never on a dead
 * stack frame. */
static gated_clock keeper_gate;

static void gate_init(gated_clock *gc, idm_manual_clock *mc)
{
    gc->inner = idm_manual_clock_clock(mc);
    gc->iface.ctx = gc;
    gc->iface.wall_ns = gated_wall_ns;
    gc->iface.mono_ns = gated_mono_ns;
    gc->iface.sleep_ns = gated_sleep_ns;
    gc->owner = pthread_self();
    pthread_mutex_init(&gc->mu, NULL);
    pthread_cond_init(&gc->cv, NULL);
    gc->tickets = 0;
    gc->parked = 0;
    gc->open = false;
}

/* Wait until the keeper is held at the gate with no ticket left: it has
 * finished every renewal it was let into, and starts no other until the
 * next ticket. The bound only ends a hung test (the keeper reaches the
 * gate TTL/3 of real time after its last renewal). */
static void gate_wait_parked(gated_clock *gc)
{
    struct timespec until;
    int rc = 0;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&gc->mu);
    while ((gc->parked == 0 || gc->tickets > 0) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&gc->cv, &gc->mu, &until);
    pthread_mutex_unlock(&gc->mu);
    CHECK(rc != ETIMEDOUT, "the keeper never came back to renew (60 s)");
}

/* Let the keeper start one renewal (open: every one, from now on). */
static void gate_let(gated_clock *gc, bool open)
{
    pthread_mutex_lock(&gc->mu);
    if (open)
        gc->open = true;
    else
        gc->tickets++;
    pthread_cond_broadcast(&gc->cv);
    pthread_mutex_unlock(&gc->mu);
}

/* The status once the renewal count is no longer `before` (60 s bound,
 * only for a hung test). */
static void wait_renewed(idm_lease *l, uint64_t before, idm_lease_status *st)
{
    for (int i = 0; i < 60000; i++) {
        idm_lease_status_get(l, st);
        if (st->renewals != before || st->failures != 0)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    fail_msg("no renewal in 60 s (renewals %llu)", ULL(before));
}

/*
 * Each renewal the keeper makes moves the generator's deadline to its send
 * time + TTL - margin and the recorded mark to its send time + TTL, and
 * minting goes on past the claim's TTL only because of them: held back,
 * minting stops exactly at the last deadline (and resumes with the next
 * renewal). On an injected clock that the test moves, with the keeper let
 * into one renewal at a time (gated_clock): every deadline, mark and count
 * is exact.
 */
static void keeper_renewals_move_the_deadline(void **unused)
{
    const idm_unix_ms t0 = INT64_C(1700000000000);
    const int64_t ttl = 1000, margin = 200, ms = 1000000;
    const int steps = 4;
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    gated_clock *gc = &keeper_gate;
    idm_manual_clock *mc;
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_mono_ns mono0, deadline;
    uint64_t id, last = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, t0, false));
    gate_init(gc, mc);
    lease_opts(&o, url, 4);
    o.ttl_ms = ttl; /* the keeper comes to renew every 333 ms of real time */
    o.margin_ms = margin;
    o.clock = &gc->iface;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    assert_int_equal(idm_lease_mark(l), 0);
    mono0 = gc->iface.mono_ns(gc);
    g = leasetest_gen(layout, l, &gc->iface);

    /* The claim is the first renewal: deadline claim + TTL - margin, mark
     * claim + TTL. */
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    idm_lease_status_get(l, &st);
    assert_int_equal(st.renewals, 1);
    assert_int_equal(st.failures, 0);
    assert_false(st.lost);
    assert_int_equal(st.deadline, mono0 + (ttl - margin) * ms);
    assert_int_equal(st.mark_ms, t0 + ttl);
    assert_int_equal(leasetest_listed_mark(url, NULL, NULL), t0 + ttl);
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    assert_int_equal(leasetest_time_of(layout, id), t0);
    last = id;

    /* Renewals held back (the keeper waits at the gate): minting goes on
     * up to the claim's deadline and stops there, inside the first TTL. */
    gate_wait_parked(gc);
    idm_manual_clock_advance_ns(mc, (ttl - margin) * ms - 1);
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    assert_true(id > last);
    last = id;
    idm_manual_clock_advance_ns(mc, 1); /* now exactly at the deadline */
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "deadline has passed") != NULL, "detail: %s",
          idm_error_detail());
    idm_lease_status_get(l, &st);
    assert_int_equal(st.renewals, 1);
    assert_int_equal(st.deadline, mono0 + (ttl - margin) * ms);

    /* One renewal at a time, 600 ms of clock apart: each sets the deadline
     * and the mark from the time it read, strictly later than the last,
     * and minting resumes and goes on past the claim's TTL. */
    deadline = st.deadline;
    for (int k = 1; k <= steps; k++) {
        idm_mono_ns now_mono;
        idm_unix_ms now_ms;
        if (k > 1)
            idm_manual_clock_advance(mc, 600);
        now_mono = gc->iface.mono_ns(gc);
        now_ms = idm_manual_clock_now_ms(mc);
        gate_let(gc, false);
        wait_renewed(l, (uint64_t)k, &st);
        gate_wait_parked(gc); /* done, and held again: the counts stand */
        idm_lease_status_get(l, &st);
        CHECK(st.renewals == (uint64_t)k + 1 && st.failures == 0 && st.last_error == 0 &&
                  !st.lost,
              "renewal %d: renewals %llu failures %llu last_error %s", k, ULL(st.renewals),
              ULL(st.failures), idm_err_name(st.last_error));
        CHECK(st.deadline == now_mono + (ttl - margin) * ms,
              "renewal %d: deadline %lld, want its send time %lld + %lld ms", k, LL(st.deadline),
              LL(now_mono), LL(ttl - margin));
        CHECK(st.deadline > deadline, "renewal %d: deadline %lld not after %lld", k,
              LL(st.deadline), LL(deadline));
        CHECK(st.mark_ms == now_ms + ttl, "renewal %d: mark %lld, want %lld", k, LL(st.mark_ms),
              LL(now_ms + ttl));
        CHECK(leasetest_listed_mark(url, NULL, NULL) == now_ms + ttl,
              "renewal %d: the file records %lld, want %lld", k,
              LL(leasetest_listed_mark(url, NULL, NULL)), LL(now_ms + ttl));
        deadline = st.deadline;
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        assert_int_equal(leasetest_time_of(layout, id), now_ms);
        assert_true(id > last);
        last = id;
    }
    /* The clock is 1.6 s past the claim's TTL. */
    CHECK(leasetest_time_of(layout, last) > t0 + ttl, "last id at %lld, first TTL ends at %lld",
          LL(leasetest_time_of(layout, last)), LL(t0 + ttl));

    /* Held back again: minting stops exactly at the last renewal's
     * deadline, and nothing renewed meanwhile. */
    idm_manual_clock_advance_ns(mc, deadline - gc->iface.mono_ns(gc) - 1);
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    assert_true(id > last);
    last = id;
    idm_manual_clock_advance_ns(mc, 1);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    idm_lease_status_get(l, &st);
    assert_int_equal(st.renewals, (uint64_t)steps + 1);
    assert_int_equal(st.deadline, deadline);

    /* Close: the keeper may renew once more on its way out; the release
     * records the last id's time. */
    gate_let(gc, true);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    assert_int_equal(leasetest_listed_mark(url, NULL, NULL), leasetest_time_of(layout, last));
    pthread_cond_destroy(&gc->cv);
    pthread_mutex_destroy(&gc->mu);
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/* Both record slots damaged: the mark falls back to the file's mtime plus
 * the longest TTL (and a little slack), never to zero. One damaged slot: the
 * other one is used. */
static void damaged_records(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url, *path;
    idm_lease_opts o;
    idm_lease *l;
    char junk[256];
    int fd;
    struct stat sb;
    (void)unused;
    idm_unix_ms t0;
    lease_opts(&o, url, 1);
    t0 = (idm_unix_ms)(time(NULL) * 1000);
    IDM_ASSERT_OK(idm_lease_open(&l, &o)); /* writes slot 1 (seq 1): the claim's mark */
    idm_lease_close(l);                    /* writes slot 0 (seq 2), mark 0 */
    path = t.rec;
    /* Damage slot 0 only: slot 1 still reads (seq 1), with the mark the
     * claim recorded (its start + TTL), not the later 0. */
    fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    memset(junk, 'x', sizeof junk);
    assert_int_equal(pwrite(fd, junk, 10, 0), 10);
    close(fd);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_true(idm_lease_mark(l) >= t0 + o.ttl_ms - 1000);
    assert_true(idm_lease_mark(l) <= (idm_unix_ms)(time(NULL) * 1000) + o.ttl_ms + 1000);
    idm_lease_close(l);
    /* Damage both: slot 0 at 0, slot 1 at 4096 (another 4 KiB block). */
    fd = open(path, O_WRONLY);
    assert_int_equal(pwrite(fd, junk, sizeof junk, 0), (ssize_t)sizeof junk);
    assert_int_equal(pwrite(fd, junk, 128, 4096), 128);
    close(fd);
    assert_int_equal(stat(path, &sb), 0);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    {
        idm_unix_ms mtime =
            (idm_unix_ms)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
        CHECK(idm_lease_mark(l) >= mtime + IDM_LEASE_TTL_MAX_MS, "mark %lld, mtime %lld",
              LL(idm_lease_mark(l)), LL(mtime));
        CHECK(idm_lease_mark(l) <= mtime + IDM_LEASE_TTL_MAX_MS + 60000, "mark %lld, mtime %lld",
              LL(idm_lease_mark(l)), LL(mtime));
    }
    idm_lease_close(l);
    leasetest_end(&t);
}

/* Fault row H4 analogue (a torn record: never start lower), issue item 6:
 * both slots damaged, and the last holder may have had the longest TTL a
 * lease can have (1 h) and renewed just before its last write. Its mark may
 * then be as late as the file's mtime + 1 h: the fallback must be at least
 * that (it was mtime + 1 min), for the claim and for the listing alike. */
static void damaged_record_falls_back_past_longest_ttl(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    const idm_unix_ms mtime = INT64_C(1700000000000); /* 2023-11-14T22:13:20Z */
    idm_manual_clock *mc;
    idm_lease_opts o;
    idm_lease *l;
    idm_lease_entry *e;
    size_t n;
    idm_unix_ms mark;
    (void)unused;
    write_junk(path, 256, mtime); /* both 128-byte slots, neither a record */
    /* Ten minutes after the last write: well inside the last holder's TTL. */
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, mtime + 600000, false));
    lease_opts(&o, url, 1);
    o.ttl_ms = IDM_LEASE_TTL_MAX_MS;
    o.clock = idm_manual_clock_clock(mc);

    IDM_ASSERT_OK(idm_lease_list(url, 1, &e, &n));
    assert_int_equal(n, 1);
    CHECK(e[0].mark_ms >= mtime + IDM_LEASE_TTL_MAX_MS,
          "listed mark %lld is below mtime %lld + 1 h", LL(e[0].mark_ms), LL(mtime));
    assert_string_equal(e[0].holder, "(damaged record)");
    free(e);

    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    mark = idm_lease_mark(l);
    CHECK(mark >= mtime + IDM_LEASE_TTL_MAX_MS, "claimed mark %lld is below mtime %lld + 1 h",
          LL(mark), LL(mtime));
    CHECK(mark <= mtime + IDM_LEASE_TTL_MAX_MS + 60000,
          "claimed mark %lld is far past mtime %lld + 1 h", LL(mark), LL(mtime));
    IDM_ASSERT_OK(idm_lease_close(l));

    /* The claim repaired the record; nothing was minted, so the release
     * recorded the fallback mark itself. */
    IDM_ASSERT_OK(idm_lease_list(url, 1, &e, &n));
    assert_int_equal(n, 1);
    assert_int_equal(e[0].mark_ms, mark);
    assert_string_equal(e[0].holder, "test");
    free(e);
    idm_manual_clock_free(mc);
    leasetest_end(&t);
}

/* Fault row H4 analogue, issue item 6: a record file that is not empty but
 * shorter than its two slots was torn while being created, or cut short. A
 * slot that still parses may not be the newest (the first write goes to the
 * second slot), so the file counts as damaged: mtime + the longest TTL. An
 * empty file is still a new one, with mark 0. */
static void short_record_file_is_damaged(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    const idm_unix_ms mtime = INT64_C(1700000000000);
    idm_manual_clock *mc;
    idm_lease_opts o;
    idm_lease *l;
    (void)unused;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, mtime + 600000, false));
    lease_opts(&o, url, 1);
    o.ttl_ms = IDM_LEASE_TTL_MAX_MS;
    o.clock = idm_manual_clock_clock(mc);

    /* Empty: new. The claim records its mark (clock + TTL) in the second
     * slot; the release, with nothing minted, mark 0 in the first. */
    write_junk(path, 0, mtime);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_mark(l), 0);
    IDM_ASSERT_OK(idm_lease_close(l));

    /* Cut to its first slot: that one still parses (seq 2, mark 0), but the
     * second, with the claim's later mark, is gone. */
    assert_int_equal(truncate(path, 128), 0);
    leasetest_set_mtime(path, mtime);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    CHECK(idm_lease_mark(l) >= mtime + IDM_LEASE_TTL_MAX_MS, "mark %lld is below mtime %lld + 1 h",
          LL(idm_lease_mark(l)), LL(mtime));
    IDM_ASSERT_OK(idm_lease_close(l));

    /* Torn creation: a few bytes. */
    write_junk(path, 40, mtime);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    CHECK(idm_lease_mark(l) >= mtime + IDM_LEASE_TTL_MAX_MS, "mark %lld is below mtime %lld + 1 h",
          LL(idm_lease_mark(l)), LL(mtime));
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_manual_clock_free(mc);
    leasetest_end(&t);
}

/* What a forked child saw claiming and listing while its pread failed. */
typedef struct read_error_seen {
    int filtered;        /* 1 if the seccomp filter was installed */
    int open_rc, list_rc;
    long long open_mark; /* the claim's idm_lease_mark, if it worked */
    long long list_mark; /* the first entry's mark, if the list worked */
    char open_detail[256], list_detail[256];
} read_error_seen;

/* Make every pread64 of this process fail with EIO: the record is there,
 * the disk cannot read it. Only in a forked child. 0 if installed. */
static int fail_pread_with_eio(void)
{
#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
#ifdef TEST_AUDIT_ARCH
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pread64, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EIO),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
    return -1;
#endif
}

/* Fault rows H3/H4 analogues (the record cannot be read: fail closed, never
 * start lower), issue item 6: a record file whose read fails must fail the
 * claim and the listing with IDM_EIO naming the file, not read as a new
 * file with mark 0. Two real failures: a directory where the file should be
 * (EISDIR), and a disk read error (pread failing with EIO, by a seccomp
 * filter in a child) on a file that holds a mark. */
static void unreadable_record_is_an_error(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    idm_lease_opts o;
    idm_lease *l = NULL;
    idm_lease_entry *e = NULL;
    idm_layout *layout;
    idm_snowflake *g;
    size_t n = 0;
    uint64_t id = 0;
    idm_unix_ms last;
    read_error_seen seen;
    int p[2], status;
    pid_t pid;
    (void)unused;
    lease_opts(&o, url, 1);

    /* A directory in the file's place: open(O_RDONLY) works, pread fails. */
    assert_int_equal(mkdir(path, 0700), 0);
    IDM_ASSERT_RC(idm_lease_list(url, 1, &e, &n), IDM_EIO);
    CHECK(strstr(idm_error_detail(), path) != NULL &&
              strstr(idm_error_detail(), strerror(EISDIR)) != NULL,
          "detail: %s", idm_error_detail());
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
    CHECK(strstr(idm_error_detail(), path) != NULL, "detail: %s", idm_error_detail());
    assert_null(l);
    assert_int_equal(rmdir(path), 0);

    /* A holder mints and closes: the record holds the last id's time. */
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    g = leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    last = leasetest_time_of(layout, id);

    /* Then a child claims and lists with every pread failing. */
    memset(&seen, 0, sizeof seen);
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        seen.filtered = fail_pread_with_eio() == 0;
        if (seen.filtered) {
            seen.open_rc = idm_lease_open(&l, &o);
            if (seen.open_rc == 0) {
                seen.open_mark = idm_lease_mark(l);
                idm_lease_close(l);
            } else {
                snprintf(seen.open_detail, sizeof seen.open_detail, "%s", idm_error_detail());
            }
            seen.list_rc = idm_lease_list(url, 1, &e, &n);
            if (seen.list_rc == 0) {
                seen.list_mark = n > 0 ? e[0].mark_ms : -1;
                free(e);
            } else {
                snprintf(seen.list_detail, sizeof seen.list_detail, "%s", idm_error_detail());
            }
        }
        _exit(write(p[1], &seen, sizeof seen) == (ssize_t)sizeof seen ? 0 : 1);
    }
    close(p[1]);
    assert_int_equal(read(p[0], &seen, sizeof seen), (ssize_t)sizeof seen);
    close(p[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Never skipped: as root on Linux (make test's setting) a seccomp
     * filter can always be installed. */
    CHECK(seen.filtered, "the seccomp filter that makes pread fail could not be installed");
    CHECK(seen.open_rc == IDM_EIO, "claim under a read error: %s, mark %lld (last holder's %lld)",
          idm_err_name(seen.open_rc), seen.open_mark, LL(last));
    CHECK(strstr(seen.open_detail, path) != NULL &&
              strstr(seen.open_detail, strerror(EIO)) != NULL,
          "detail: %s", seen.open_detail);
    CHECK(seen.list_rc == IDM_EIO, "list under a read error: %s, mark %lld (last holder's %lld)",
          idm_err_name(seen.list_rc), seen.list_mark, LL(last));
    CHECK(strstr(seen.list_detail, path) != NULL &&
              strstr(seen.list_detail, strerror(EIO)) != NULL,
          "detail: %s", seen.list_detail);

    /* The failed claim left the id free and its record as it was. */
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    assert_int_equal(idm_lease_mark(l), last);
    idm_lease_close(l);
    idm_layout_free(layout);
    leasetest_end(&t);
}

static void bad_urls_and_options(void **unused)
{
    static const char *const bad[] = {"nope", "http://x/y", "file://relative", "file:/", ""};
    idm_lease_opts o;
    idm_lease *l = NULL;
    (void)unused;
    lease_opts(&o, NULL, 4);
    leasetest_bad_urls(&o, bad, sizeof bad / sizeof bad[0], NULL, NULL);
    lease_opts(&o, "file:///proc/idmint-no-such-dir", 4);
    CHECK(idm_lease_open(&l, &o) != 0, "a directory that cannot be made was accepted");
    lease_opts(&o, "file:///tmp", 0);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
    lease_opts(&o, "file:///tmp", 4);
    o.ttl_ms = 10;
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
    lease_opts(&o, "file:///tmp", 4);
    o.margin_ms = 2500; /* TTL 3 s: no room between renewals */
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
}

/*
 * mkdir, as the library (linked into this program) calls it: when a test
 * has set mkdir_gate_now, a mkdir of its path first waits until all of the
 * gate's processes have come to that mkdir, so that none of them has made
 * the directory before every one of them has looked for it. That is the
 * interleaving in which two processes creating one lease directory at once
 * once failed (a stat seeing no directory, then a mkdir losing to another's
 * with EEXIST), made certain rather than left to the scheduler. Any other
 * mkdir goes straight to the system call.
 */
typedef struct mkdir_gate {
    _Atomic int arrived; /* processes that came to the gated mkdir */
    int processes;
    char path[4096];
} mkdir_gate;

static mkdir_gate *mkdir_gate_now; /* shared with forked children */

int mkdir(const char *path, mode_t mode)
{
    mkdir_gate *gate = mkdir_gate_now;
    if (gate != NULL && strcmp(path, gate->path) == 0) {
        atomic_fetch_add(&gate->arrived, 1);
        /* At most 30 s: that only ends the wait of a run in which some
         * process never comes. */
        for (int i = 0; i < 30000 && atomic_load(&gate->arrived) < gate->processes; i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}

/* Eight processes using a lease directory that does not exist yet, all at
 * once (the gate above holds each one's mkdir until all have come to it):
 * half list, half claim a worker id. Every one succeeds (a mkdir that finds
 * the directory made by another is fine once it is checked to be a
 * directory), the claims get distinct ids, and the directory is the one the
 * library makes (mode 0700). */
static void concurrent_directory_creation(void **unused)
{
    enum { N = 8 };
    char *base = idm_test_tmpdir(), *dir = idm_test_path(base, "new");
    char *url = leasetest_url(dir);
    mkdir_gate *gate;
    pid_t pids[N];
    int res[2], hold[2], claimed = 0;
    unsigned seen = 0;
    struct stat st;
    (void)unused;
    gate = mmap(NULL, sizeof *gate, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(gate != MAP_FAILED);
    atomic_init(&gate->arrived, 0);
    gate->processes = N;
    snprintf(gate->path, sizeof gate->path, "%s", dir);
    assert_int_equal(pipe(res), 0);
    assert_int_equal(pipe(hold), 0);
    mkdir_gate_now = gate;
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int r[2] = {i, -1};
            char c;
            close(res[0]);
            close(hold[1]);
            if (i % 2 == 0) {
                idm_lease_entry *e = NULL;
                size_t n;
                r[1] = idm_lease_list(url, 4, &e, &n) == 0 ? 0 : -1;
                free(e);
                if (write(res[1], r, sizeof r) != (ssize_t)sizeof r)
                    _exit(3);
                _exit(r[1] == 0 ? 0 : 1);
            }
            idm_lease_opts o;
            idm_lease *l = NULL;
            lease_opts(&o, url, N);
            if (idm_lease_open(&l, &o) == 0)
                r[1] = (int)idm_lease_worker(l);
            else
                fprintf(stderr, "child %d: %s\n", i, idm_error_detail());
            if (write(res[1], r, sizeof r) != (ssize_t)sizeof r)
                _exit(3);
            if (read(hold[0], &c, 1) != 0) /* hold the id until the parent has looked */
                _exit(4);
            _exit(l != NULL && idm_lease_close(l) == 0 ? 0 : 1);
        }
    }
    mkdir_gate_now = NULL;
    close(res[1]);
    close(hold[0]);
    for (int k = 0; k < N; k++) {
        int r[2];
        assert_int_equal(read(res[0], r, sizeof r), (ssize_t)sizeof r);
        CHECK(r[1] >= 0, "process %d (%s) failed on the new directory", r[0],
              r[0] % 2 == 0 ? "list" : "claim");
        if (r[0] % 2 == 1) {
            CHECK((seen & (1u << r[1])) == 0, "worker id %d claimed twice", r[1]);
            seen |= 1u << r[1];
            claimed++;
        }
    }
    close(res[0]);
    assert_int_equal(claimed, N / 2);
    assert_int_equal(seen, (1u << (N / 2)) - 1); /* ids 0 to 3 */
    close(hold[1]);
    for (int i = 0; i < N; i++) {
        int status;
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", i, status);
    }
    /* Every process came to the mkdir before any made the directory: the
     * race was run, not missed. */
    assert_int_equal(atomic_load(&gate->arrived), N);
    assert_int_equal(stat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    munmap(gate, sizeof *gate);
    idm_test_rmtree(base);
    free(base);
    free(dir);
    free(url);
}

/* Listing tests locks without taking them: while another process lists in
 * a loop, 300 claims of the only worker id all succeed. */
static void listing_never_blocks_a_claim(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    idm_lease_opts o;
    pid_t lister;
    int status;
    (void)unused;
    lease_opts(&o, url, 1);
    lister = fork();
    assert_true(lister >= 0);
    if (lister == 0) {
        for (;;) {
            idm_lease_entry *e = NULL;
            size_t n;
            if (idm_lease_list(url, 1, &e, &n) == 0)
                free(e);
        }
    }
    for (int i = 0; i < 300; i++) {
        idm_lease *l = NULL;
        int rc = idm_lease_open(&l, &o);
        if (rc != 0) {
            kill(lister, SIGKILL);
            waitpid(lister, &status, 0);
            fail_msg("claim %d failed while listing: %s", i, idm_error_detail());
        }
        idm_lease_close(l);
    }
    kill(lister, SIGKILL);
    waitpid(lister, &status, 0);
    leasetest_end(&t);
}

/* ------------------------------------------------------------- scopes */

/* Everything in dir, for "nothing changed": each entry's name, inode,
 * size, modification time and contents, in name order; not "..", whose
 * times move with whatever else runs in the directory above (other tests
 * making their own temporary directories there). Malloc'd. */
static char *dir_snapshot(const char *dir)
{
    struct dirent **names;
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    int n = scandir(dir, &names, NULL, alphasort);
    assert_non_null(out);
    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char *path, buf[1024];
        struct stat st;
        ssize_t r = 0;
        int fd;
        if (strcmp(names[i]->d_name, "..") == 0) {
            free(names[i]);
            continue;
        }
        path = idm_test_path(dir, names[i]->d_name);
        assert_int_equal(lstat(path, &st), 0);
        len += (size_t)snprintf(out + len, cap - len, "%s ino=%llu size=%lld mtime=%lld.%09ld\n",
                                names[i]->d_name, ULL(st.st_ino), LL(st.st_size),
                                LL(st.st_mtim.tv_sec), st.st_mtim.tv_nsec);
        if (S_ISREG(st.st_mode) && (fd = open(path, O_RDONLY)) >= 0) {
            r = read(fd, buf, sizeof buf);
            close(fd);
        }
        for (ssize_t k = 0; k < r && len + 4 < cap; k++)
            len += (size_t)snprintf(out + len, cap - len, "%02x", (unsigned char)buf[k]);
        len += (size_t)snprintf(out + len, cap - len, "\n");
        assert_true(len + 1100 < cap);
        free(path);
        free(names[i]);
    }
    free(names);
    return out;
}

/* dir_snapshot once a's keeper has settled what it writes after the claim
 * (its record and marks, soon after idm_lease_open returns; slow under
 * ThreadSanitizer): two snapshots 50 ms apart that agree. */
static char *dir_snapshot_settled(const char *dir)
{
    char *a = dir_snapshot(dir), *b;
    for (int i = 0; i < 200; i++) {
        usleep(50000);
        b = dir_snapshot(dir);
        if (strcmp(a, b) == 0) {
            free(b);
            return a;
        }
        free(a);
        a = b;
    }
    fail_msg("%s kept changing for 10 s with no claim in progress", dir);
    return a;
}

static size_t count_prefixed(const char *dir, const char *prefix)
{
    struct dirent **names;
    size_t c = 0;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) {
        c += strncmp(names[i]->d_name, prefix, strlen(prefix)) == 0;
        free(names[i]);
    }
    free(names);
    return c;
}

/* The contents of dir/name, NUL-terminated, "" if none. */
static void read_text(const char *dir, const char *name, char *out, size_t cap)
{
    char *path = idm_test_path(dir, name);
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    ssize_t r = fd >= 0 ? read(fd, out, cap - 1) : 0;
    out[r > 0 ? r : 0] = '\0';
    if (fd >= 0)
        close(fd);
    free(path);
}

/* Issue item "duplicate ids: two idmintd on one data directory with
 * different lease fields" (datacenter=1 with worker id 0 from one, worker=0
 * with datacenter id 1 from the other: the same ids). The directory records
 * the scope of its first claimant (layout, epoch, field); a claimant with
 * another field, epoch or layout is refused with IDM_EINVAL naming both,
 * and nothing changes: no record file created, locked or written, the scope
 * file as it was. The same layout spelled two ways (a preset, its text form
 * and epoch) is one scope; a claimant without a scope is not checked. */
static void scope_refuses_another_field_epoch_or_layout(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *dir = t.dir, *url = t.url, *before, *after;
    char worker[IDM_LEASE_SCOPE_MAX], spelled[IDM_LEASE_SCOPE_MAX], got[IDM_LEASE_SCOPE_MAX + 8];
    char bad[3][IDM_LEASE_SCOPE_MAX], want[IDM_LEASE_SCOPE_MAX + 8];
    idm_lease_opts o;
    idm_lease *a, *b = NULL, *c, *d;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", worker);
    assert_string_equal(worker,
                        "worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657");
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", INT64_C(1288834974657),
                      "worker", spelled);
    assert_string_equal(spelled, worker);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", bad[0]);        /* another field */
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", INT64_C(1288834974658),
                      "worker", bad[1]);                                /* another epoch */
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:4,worker:6,seq:12", INT64_C(1288834974657),
                      "worker", bad[2]);                                /* another layout */

    IDM_ASSERT_OK(idm_lease_scope_recorded(url, got, sizeof got));
    assert_string_equal(got, ""); /* none yet */
    lease_opts(&o, url, 32);
    /* A renewal a minute apart: the snapshots below would see a's keeper
     * rewrite its record (every second at the usual TTL) on a slow run. */
    o.ttl_ms = 60000;
    o.scope = worker;
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    assert_int_equal(idm_lease_worker(a), 0);
    read_text(dir, "scope", got, sizeof got);
    snprintf(want, sizeof want, "%s\n", worker);
    assert_string_equal(got, want);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, got, sizeof got));
    assert_string_equal(got, worker);

    before = dir_snapshot_settled(dir);
    for (int i = 0; i < 3; i++) {
        o.scope = bad[i];
        IDM_ASSERT_RC(idm_lease_open(&b, &o), IDM_EINVAL);
        assert_null(b);
        CHECK(strstr(idm_error_detail(), dir) != NULL &&
                  strstr(idm_error_detail(), "hands out ids for") != NULL &&
                  strstr(idm_error_detail(), worker) != NULL &&
                  strstr(idm_error_detail(), bad[i]) != NULL,
              "detail: %s", idm_error_detail());
        after = dir_snapshot(dir);
        CHECK(strcmp(before, after) == 0, "refused claim %d changed the directory:\n%s\nnow:\n%s",
              i, before, after);
        free(after);
    }
    free(before);

    /* The other spelling, and no scope at all: claimed. */
    o.scope = spelled;
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    assert_int_equal(idm_lease_worker(c), 1);
    o.scope = NULL;
    IDM_ASSERT_OK(idm_lease_open(&d, &o));
    assert_int_equal(idm_lease_worker(d), 2);
    read_text(dir, "scope", got, sizeof got);
    assert_string_equal(got, want);
    assert_int_equal(count_prefixed(dir, ".scope."), 0);
    IDM_ASSERT_OK(idm_lease_close(a));
    IDM_ASSERT_OK(idm_lease_close(c));
    IDM_ASSERT_OK(idm_lease_close(d));

    /* Still refused with every id free: the scope outlives its holders. */
    o.scope = bad[0];
    IDM_ASSERT_RC(idm_lease_open(&b, &o), IDM_EINVAL);
    leasetest_end(&t);
}

/* Issue item (duplicate ids, above), racing first claimants: eight
 * processes with four scopes (two each) claim at once from a directory
 * without a scope, twenty times over. Exactly one scope is recorded, its
 * two claimants hold ids, the six others are refused and created no record
 * file. */
static void scope_racing_first_claimants(void **unused)
{
    enum { N = 8, ROUNDS = 20 };
    char scopes[4][IDM_LEASE_SCOPE_MAX];
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", scopes[0]);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", scopes[1]);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", 1, "worker", scopes[2]);
    idm_test_scope_of("discord", NULL, 0, "worker", scopes[3]);
    for (int round = 0; round < ROUNDS; round++) {
        leasetest_dir t = leasetest_begin();
        char *dir = t.dir, *url = t.url, got[IDM_LEASE_SCOPE_MAX + 8];
        int go[2], hold[2], res[2], won_scope = -1, won = 0, refused = 0;
        pid_t pids[N];
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(hold), 0);
        assert_int_equal(pipe(res), 0);
        for (int i = 0; i < N; i++) {
            pids[i] = fork();
            assert_true(pids[i] >= 0);
            if (pids[i] == 0) {
                idm_lease_opts o;
                idm_lease *l = NULL;
                char c;
                int r[3];
                close(go[1]);
                close(hold[1]);
                lease_opts(&o, url, 32);
                o.scope = scopes[i % 4];
                if (read(go[0], &c, 1) != 0) /* all start when the parent closes it */
                    _exit(3);
                r[0] = i;
                r[1] = idm_lease_open(&l, &o);
                r[2] = r[1] == 0 ? (int)idm_lease_worker(l)
                                 : strstr(idm_error_detail(), "hands out ids for") != NULL;
                if (write(res[1], r, sizeof r) != (ssize_t)sizeof r)
                    _exit(4);
                if (read(hold[0], &c, 1) != 0) /* hold the id until the parent has looked */
                    _exit(5);
                if (l != NULL)
                    idm_lease_close(l);
                _exit(0);
            }
        }
        close(go[0]);
        close(hold[0]);
        close(res[1]);
        close(go[1]);
        for (int k = 0; k < N; k++) {
            int r[3];
            assert_int_equal(read(res[0], r, sizeof r), (ssize_t)sizeof r);
            if (r[1] == 0) {
                CHECK(won_scope < 0 || won_scope == r[0] % 4,
                      "round %d: claimants of scopes %d and %d both hold ids", round, won_scope,
                      r[0] % 4);
                won_scope = r[0] % 4;
                won++;
            } else {
                CHECK(r[1] == IDM_EINVAL && r[2] == 1, "round %d: claimant %d: %s", round, r[0],
                      idm_err_name(r[1]));
                refused++;
            }
        }
        close(res[0]);
        assert_int_equal(won, 2);
        assert_int_equal(refused, N - 2);
        read_text(dir, "scope", got, sizeof got);
        CHECK(strncmp(got, scopes[won_scope], strlen(scopes[won_scope])) == 0 &&
                  strcmp(got + strlen(scopes[won_scope]), "\n") == 0,
              "round %d: scope file '%s', winners' scope '%s'", round, got, scopes[won_scope]);
        assert_int_equal(count_prefixed(dir, "worker-"), 2);
        assert_int_equal(count_prefixed(dir, ".scope."), 0);
        close(hold[1]);
        for (int i = 0; i < N; i++) {
            int status;
            assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", i,
                  status);
        }
        leasetest_end(&t);
    }
}

/* idm_lease_scope names only node fields of the layout and fits its
 * buffer; idm_lease_open refuses a scope that is empty, too long or not
 * printable, before it touches the directory. */
static void scope_input_is_checked(void **unused)
{
    char *base = idm_test_tmpdir(), *dir = idm_test_path(base, "new"), *url = leasetest_url(dir);
    char buf[IDM_LEASE_SCOPE_MAX], small[16], longer[IDM_LEASE_SCOPE_MAX + 1];
    static const char *bad_scopes[] = {"", "tab\there", "new\nline", "\x7f", "caf\xc3\xa9"};
    idm_layout *l;
    idm_lease_opts o;
    idm_lease *lease = NULL;
    struct stat st;
    size_t n;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&l, "sonyflake"));
    IDM_ASSERT_OK(idm_lease_scope(l, "machine", buf, sizeof buf));
    assert_string_equal(buf, "machine of time:39@10ms,seq:8,machine:16 epoch 1409529600000");
    n = strlen(buf);
    IDM_ASSERT_OK(idm_lease_scope(l, "machine", buf, n + 1));
    IDM_ASSERT_RC(idm_lease_scope(l, "machine", buf, n), IDM_EINVAL);
    assert_string_equal(buf, "");
    CHECK(strstr(idm_error_detail(), "too small") != NULL, "detail: %s", idm_error_detail());
    IDM_ASSERT_RC(idm_lease_scope(l, "machine", small, sizeof small), IDM_EINVAL);
    IDM_ASSERT_RC(idm_lease_scope(l, "worker", buf, sizeof buf), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "no field 'worker'") != NULL, "detail: %s",
          idm_error_detail());
    IDM_ASSERT_RC(idm_lease_scope(l, "time", buf, sizeof buf), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "time field") != NULL, "detail: %s", idm_error_detail());
    IDM_ASSERT_RC(idm_lease_scope(l, "seq", buf, sizeof buf), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "sequence field") != NULL, "detail: %s",
          idm_error_detail());
    IDM_ASSERT_RC(idm_lease_scope(NULL, "machine", buf, sizeof buf), IDM_EINVAL);
    IDM_ASSERT_RC(idm_lease_scope(l, NULL, buf, sizeof buf), IDM_EINVAL);
    IDM_ASSERT_RC(idm_lease_scope(l, "machine", NULL, sizeof buf), IDM_EINVAL);
    idm_layout_free(l);
    /* One 1 s tick spelled 1s and 1000ms: one scope. */
    idm_test_scope_of(NULL, "time:32@1s,worker:10,seq:21", 0, "worker", buf);
    idm_test_scope_of(NULL, "time:32@1000ms,worker:10,seq:21", 0, "worker", longer);
    assert_string_equal(buf, longer);

    lease_opts(&o, url, 4);
    for (size_t i = 0; i < sizeof bad_scopes / sizeof bad_scopes[0]; i++) {
        o.scope = bad_scopes[i];
        IDM_ASSERT_RC(idm_lease_open(&lease, &o), IDM_EINVAL);
        CHECK(strstr(idm_error_detail(), "scope") != NULL, "detail: %s", idm_error_detail());
        assert_null(lease);
    }
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    o.scope = longer;
    IDM_ASSERT_RC(idm_lease_open(&lease, &o), IDM_EINVAL);
    longer[IDM_LEASE_SCOPE_MAX - 1] = '\0'; /* the longest accepted */
    CHECK(stat(dir, &st) != 0 && errno == ENOENT, "a refused scope made the directory");
    IDM_ASSERT_OK(idm_lease_open(&lease, &o));
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, buf, sizeof buf));
    assert_string_equal(buf, longer);
    IDM_ASSERT_RC(idm_lease_scope_recorded(url, small, sizeof small), IDM_EINVAL);
    assert_string_equal(small, "");
    IDM_ASSERT_RC(idm_lease_scope_recorded(url, NULL, 4), IDM_EINVAL);
    IDM_ASSERT_OK(idm_lease_close(lease));
    idm_test_rmtree(base);
    free(base);
    free(dir);
    free(url);
}

/* A refusal between two long scopes (fields of 31 bytes: a layout text of
 * about 500) that differ only in their epochs, at the very end: the detail
 * line (255 bytes) shows each around the difference. */
static void scope_refusal_shows_where_long_scopes_differ(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url, text[IDM_LAYOUT_TEXT_MAX];
    char a[IDM_LEASE_SCOPE_MAX], b[IDM_LEASE_SCOPE_MAX];
    const char *field = "field_number_00_with_a_long_nam";
    idm_lease_opts o;
    idm_lease *l, *m = NULL;
    size_t n = 0;
    (void)unused;
    n += (size_t)snprintf(text + n, sizeof text - n, "time:20@1s");
    for (int i = 0; i < 14; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, ",field_number_%02d_with_a_long_nam:2",
                              i);
    snprintf(text + n, sizeof text - n, ",seq:4");
    idm_test_scope_of(NULL, text, INT64_C(1700000000000), field, a);
    idm_test_scope_of(NULL, text, INT64_C(1700000000001), field, b);
    CHECK(strlen(a) > 400, "scope of %zu bytes", strlen(a));
    lease_opts(&o, url, 4);
    o.scope = a;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    o.scope = b;
    IDM_ASSERT_RC(idm_lease_open(&m, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "epoch 1700000000000'") != NULL &&
              strstr(idm_error_detail(), "epoch 1700000000001'") != NULL &&
              strstr(idm_error_detail(), "...") != NULL,
          "detail: %s", idm_error_detail());
    IDM_ASSERT_OK(idm_lease_close(l));
    leasetest_end(&t);
}

/* A scope file that is not one line of text (empty, no newline, two lines)
 * fails the claim with IDM_EIO naming it; one written by hand with
 * another scope is compared (and shown) like any other. */
static void damaged_scope_file_is_an_error(void **unused)
{
    static const char *damaged[] = {"", "no newline", "two\nlines\n", "\n"};
    leasetest_dir t = leasetest_begin();
    char *dir = t.dir, *url = t.url, *path = idm_test_path(dir, "scope");
    char scope[IDM_LEASE_SCOPE_MAX];
    idm_lease_opts o;
    idm_lease *l = NULL;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", scope);
    lease_opts(&o, url, 4);
    o.scope = scope;
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, damaged[i], strlen(damaged[i])), (ssize_t)strlen(damaged[i]));
        close(fd);
        IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
        CHECK(strstr(idm_error_detail(), path) != NULL, "detail: %s", idm_error_detail());
        assert_int_equal(count_prefixed(dir, "worker-"), 0);
    }
    {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "by hand\x01\n", 9), 9);
        close(fd);
    }
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "'by hand?'") != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(count_prefixed(dir, "worker-"), 0);
    free(path);
    leasetest_end(&t);
}

/* What a child saw listing, claiming and reading the scope with a FIFO in
 * a file's place. */
typedef struct fifo_seen {
    int list_rc, open_rc, scope_rc;
    char list_detail[256], open_detail[256], scope_detail[256];
} fifo_seen;

static void fifo_child(const char *url, const char *scope, fifo_seen *seen)
{
    idm_lease_opts o;
    idm_lease *l = NULL;
    idm_lease_entry *e = NULL;
    size_t n = 0;
    char buf[IDM_LEASE_SCOPE_MAX];
    memset(seen, 0, sizeof *seen);
    seen->list_rc = idm_lease_list(url, 4, &e, &n);
    snprintf(seen->list_detail, sizeof seen->list_detail, "%s", idm_error_detail());
    free(e);
    lease_opts(&o, url, 4);
    o.scope = scope;
    seen->open_rc = idm_lease_open(&l, &o);
    snprintf(seen->open_detail, sizeof seen->open_detail, "%s", idm_error_detail());
    if (l != NULL)
        idm_lease_close(l);
    seen->scope_rc = idm_lease_scope_recorded(url, buf, sizeof buf);
    snprintf(seen->scope_detail, sizeof seen->scope_detail, "%s", idm_error_detail());
}

/* Run fifo_child in a child that SIGALRM kills if it hangs (an open for
 * reading of a FIFO waits for a writer): whether it returned. */
static bool fifo_run(const char *url, const char *scope, fifo_seen *seen)
{
    int p[2], status;
    pid_t pid;
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        alarm(20);
        fifo_child(url, scope, seen);
        _exit(write(p[1], seen, sizeof *seen) == (ssize_t)sizeof *seen ? 0 : 1);
    }
    close(p[1]);
    memset(seen, 0, sizeof *seen);
    if (read(p[0], seen, sizeof *seen) != (ssize_t)sizeof *seen)
        seen->list_rc = seen->open_rc = seen->scope_rc = 1;
    close(p[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Issue item 12 (part): a FIFO in place of a worker record file hung
 * `lease list` (an open for reading waits for a writer). Listing and
 * claiming return at once with IDM_EIO naming the file, "not a regular
 * file"; so does a FIFO in place of the scope file, for a claimant with a
 * scope and for idm_lease_scope_recorded. */
static void fifo_in_place_of_a_file_is_refused(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *dir = t.dir, *url = t.url;
    char *rec = t.rec, *sc = idm_test_path(dir, "scope");
    char scope[IDM_LEASE_SCOPE_MAX];
    fifo_seen seen;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", scope);
    assert_int_equal(mkfifo(rec, 0600), 0);
    CHECK(fifo_run(url, NULL, &seen), "hung with a FIFO as %s", rec);
    IDM_ASSERT_RC(seen.list_rc, IDM_EIO);
    CHECK(strstr(seen.list_detail, rec) != NULL &&
              strstr(seen.list_detail, "not a regular file: a FIFO") != NULL,
          "list: %s", seen.list_detail);
    IDM_ASSERT_RC(seen.open_rc, IDM_EIO);
    CHECK(strstr(seen.open_detail, rec) != NULL &&
              strstr(seen.open_detail, "not a regular file: a FIFO") != NULL,
          "claim: %s", seen.open_detail);
    IDM_ASSERT_OK(seen.scope_rc); /* none recorded */
    assert_int_equal(unlink(rec), 0);

    assert_int_equal(mkfifo(sc, 0600), 0);
    CHECK(fifo_run(url, scope, &seen), "hung with a FIFO as %s", sc);
    IDM_ASSERT_OK(seen.list_rc);
    IDM_ASSERT_RC(seen.open_rc, IDM_EIO);
    CHECK(strstr(seen.open_detail, sc) != NULL &&
              strstr(seen.open_detail, "not a regular file: a FIFO") != NULL,
          "claim: %s", seen.open_detail);
    IDM_ASSERT_RC(seen.scope_rc, IDM_EIO);
    CHECK(strstr(seen.scope_detail, sc) != NULL, "scope: %s", seen.scope_detail);
    assert_int_equal(count_prefixed(dir, "worker-"), 0);
    free(sc);
    leasetest_end(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(claims_are_distinct_and_marks_hand_over),
        cmocka_unit_test(no_free_worker_id),
        cmocka_unit_test(kill9_frees_at_once),
        cmocka_unit_test(removed_file_loses_claim),
        cmocka_unit_test(keeper_renewals_move_the_deadline),
        cmocka_unit_test(damaged_records),
        cmocka_unit_test(damaged_record_falls_back_past_longest_ttl),
        cmocka_unit_test(short_record_file_is_damaged),
        cmocka_unit_test(unreadable_record_is_an_error),
        cmocka_unit_test(bad_urls_and_options),
        cmocka_unit_test(concurrent_directory_creation),
        cmocka_unit_test(listing_never_blocks_a_claim),
        cmocka_unit_test(scope_refuses_another_field_epoch_or_layout),
        cmocka_unit_test(scope_racing_first_claimants),
        cmocka_unit_test(scope_input_is_checked),
        cmocka_unit_test(scope_refusal_shows_where_long_scopes_differ),
        cmocka_unit_test(damaged_scope_file_is_an_error),
        cmocka_unit_test(fifo_in_place_of_a_file_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
