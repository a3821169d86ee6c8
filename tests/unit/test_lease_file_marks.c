/* SPDX-License-Identifier: MIT */
/*
 * The file lease backend's records, where they are kept and how they are
 * read: marks kept apart from the lock files (dir/marks/worker-NNNN.mark),
 * so that removing a lock file under a live holder never lets a new
 * claimant start below the old holder's mark (issue item 3); network file
 * systems refused (item 5a); the two record slots in different 4 KiB blocks,
 * version 1 files still read, and the slot rules around them (item 5b).
 * Fault rows E4 (a worker's key deleted by an operator) and H4 (a torn
 * record: never start lower) for the embedded backend.
 *
 * Deadlines run on an injected manual clock. The keeper thread renews on
 * real time; tests that need a renewal either let idm_lease_attach make one
 * (the claim older than TTL/6 on the manual clock) or wait for the keeper's
 * next one, bounded, without asserting how long it took.
 *
 * This program is built with its own copy of src/lease/file.c, compiled
 * with IDM_TEST_HOOKS (tests/CMakeLists.txt), so that a renewal can be held
 * between its check of the lock file and its record while another claim
 * runs (lease_internal.h); lease.c and the rest come from the library,
 * whose own file.o is then not linked.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "common.h"
#include "lease_internal.h"
#include "leasetest.h"
#include "testutil.h"

/* 2023-11-14T22:13:20Z: far from the files' real modification times. */
#define T0 INT64_C(1700000000000)

static void lease_opts(idm_lease_opts *o, const char *url, const idm_clock *clock, int64_t ttl)
{
    idm_lease_opts_init(o);
    o->url = url;
    o->max_workers = 4;
    o->ttl_ms = ttl;
    o->holder = "test";
    o->clock = clock;
}

static idm_unix_ms mark_of(idm_lease *l)
{
    idm_lease_status st;
    idm_lease_status_get(l, &st);
    return st.mark_ms;
}

static off_t size_of(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return sb.st_size;
}

/* Write one 128-byte record slot at offset at of path (created if need
 * be), as idmint writes them: "idmint-lease <version> <seq> <mark>
 * <holder> <FNV-1a of that, hex>", a newline, spaces, a newline last. */
static void put_slot(const char *path, off_t at, int version, uint64_t seq, long long mark,
                     const char *holder)
{
    char slot[128];
    int n, fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    memset(slot, ' ', sizeof slot);
    n = snprintf(slot, sizeof slot, "idmint-lease %d %" PRIu64 " %lld %s", version, seq, mark,
                 holder);
    n += snprintf(slot + n, sizeof slot - (size_t)n, " %016" PRIx64 "\n",
                  idm__lease_fnv1a(slot, (size_t)n));
    assert_true(n < (int)sizeof slot);
    slot[n] = ' ';
    slot[sizeof slot - 1] = '\n';
    assert_int_equal(pwrite(fd, slot, sizeof slot, at), (ssize_t)sizeof slot);
    close(fd);
}

/* Zero bytes [from, to) of path, within its length (a torn or lost
 * block). */
static void zero_range(const char *path, off_t from, off_t to)
{
    static const char zeros[4096];
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    if (to > size_of(path))
        to = size_of(path);
    for (off_t at = from; at < to;) {
        size_t n = (size_t)(to - at) < sizeof zeros ? (size_t)(to - at) : sizeof zeros;
        assert_int_equal(pwrite(fd, zeros, n, at), (ssize_t)n);
        at += (off_t)n;
    }
    close(fd);
}

/* Whether path holds the bytes of s anywhere. */
static int file_contains(const char *path, const char *s)
{
    char buf[8192];
    ssize_t r;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    r = read(fd, buf, sizeof buf - 1);
    close(fd);
    assert_true(r >= 0);
    return memmem(buf, (size_t)r, s, strlen(s)) != NULL;
}

/* Wait (bounded, on real time: the keeper renews on it) until l's status
 * satisfies done; the status last seen into st. */
static void wait_status(idm_lease *l, idm_lease_status *st, int (*done)(const idm_lease_status *,
                                                                         uint64_t),
                        uint64_t arg)
{
    for (int i = 0; i < 400; i++) { /* up to 20 s; a renewal is due every TTL/3 */
        struct timespec ts = {0, 50000000};
        idm_lease_status_get(l, st);
        if (done(st, arg))
            return;
        nanosleep(&ts, NULL);
    }
}

static int is_lost(const idm_lease_status *st, uint64_t unused)
{
    (void)unused;
    return st->lost;
}

static int renewed_past(const idm_lease_status *st, uint64_t renewals)
{
    return st->renewals > renewals || st->lost;
}

/* ------------------------------------------------- item 3: marks kept apart */

/* Issue item 3, fault row E4 analogue: "a deleted lease file gives one
 * worker id to two processes". Holder A claims worker 0, renews and mints;
 * its lock file is removed. The listing still shows A's mark; holder B
 * claims worker 0 (a new file) and its mark is at least A's recorded mark,
 * so a generator opened above it mints above every id of A. A's next
 * renewal finds the claim lost and A stops. Before the fix the listing was
 * empty and B's mark 0. */
static void removed_lock_file_keeps_the_mark(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec, holder[64];
    idm_manual_clock *mc;
    const idm_clock *clock;
    idm_lease_opts o;
    idm_lease *a, *b;
    idm_layout *layout;
    idm_snowflake *ga, *gb;
    idm_lease_status st;
    uint64_t id = 0, last_a = 0;
    idm_unix_ms mark_a, mark_b;
    bool held = true;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    clock = idm_manual_clock_clock(mc);
    lease_opts(&o, url, clock, 3000); /* the keeper renews every second */

    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    assert_int_equal(idm_lease_worker(a), 0);
    idm_manual_clock_advance(mc, 1000); /* past TTL/6: attach renews */
    ga = leasetest_gen(layout, a, clock);
    IDM_ASSERT_OK(idm_lease_attach(a, ga));
    idm_lease_status_get(a, &st);
    assert_true(st.renewals >= 1); /* attach renewed */
    for (int i = 0; i < 4000; i++) { /* within one tick of the stopped clock */
        IDM_ASSERT_OK(idm_snowflake_next(ga, &id));
        assert_true(id > last_a);
        last_a = id;
    }
    mark_a = mark_of(a);
    CHECK(mark_a == T0 + 1000 + 3000, "A's mark %lld", LL(mark_a));
    assert_true(leasetest_time_of(layout, last_a) <= mark_a);

    assert_int_equal(unlink(path), 0);
    /* The mark outlives the lock file. */
    CHECK(leasetest_listed_mark(url, &held, holder) >= mark_a, "listed mark below A's %lld",
          LL(mark_a));
    assert_int_equal(held, 0);
    assert_string_equal(holder, "test");

    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(b), 0); /* a new file, the same id */
    mark_a = mark_of(a); /* A's keeper may have renewed since (same mark: the clock stood) */
    CHECK(idm_lease_mark(b) >= mark_a, "B's mark %lld is below A's recorded mark %lld",
          LL(idm_lease_mark(b)), LL(mark_a));

    /* A generator above B's mark mints above all of A's ids. */
    idm_manual_clock_set(mc, idm_lease_mark(b) + 1);
    gb = leasetest_gen(layout, b, clock);
    IDM_ASSERT_OK(idm_lease_attach(b, gb));
    IDM_ASSERT_OK(idm_snowflake_next(gb, &id));
    CHECK(id > last_a && leasetest_time_of(layout, id) > mark_a,
          "B minted %llu (at %lld), A up to %llu", ULL(id), LL(leasetest_time_of(layout, id)),
          ULL(last_a));
    mark_b = mark_of(b);

    /* A's next renewal: lost (the path holds B's file), and A stops. */
    wait_status(a, &st, is_lost, 0);
    CHECK(st.lost, "A's claim not reported lost after %llu renewals",
          ULL(st.renewals + st.failures));
    assert_int_equal(st.last_error, IDM_ELEASE);
    IDM_ASSERT_RC(idm_snowflake_next(ga, &id), IDM_ELEASE);
    /* A's renewal recorded nothing over B's mark. */
    CHECK(leasetest_listed_mark(url, &held, NULL) == mark_b, "listed %lld, B's mark %lld",
          LL(leasetest_listed_mark(url, NULL, NULL)), LL(mark_b));
    assert_int_equal(held, 1);

    IDM_ASSERT_OK(idm_lease_close(a)); /* lost: releases nothing */
    IDM_ASSERT_OK(idm_lease_close(b));
    idm_snowflake_close(ga);
    idm_snowflake_close(gb);
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/* Issue item 3: the old holder's release, after its lock file was removed
 * and another claimed the id, must not record its exact final mark (below
 * the new holder's) where the next claimant reads it. A (not yet aware)
 * closes after B claimed: its close reports the claim lost, and after B's
 * lock file is removed too, C still starts at or above B's mark. Without
 * the check, A's release lowered the marks file to A's last tick. */
static void removed_holder_release_does_not_lower_the_mark(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    idm_manual_clock *mc;
    const idm_clock *clock;
    idm_lease_opts o;
    idm_lease *a, *b, *c;
    idm_layout *layout;
    idm_snowflake *ga;
    uint64_t id = 0;
    idm_unix_ms mark_b;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    clock = idm_manual_clock_clock(mc);
    /* A TTL of a minute: no keeper renewal (every 20 s) within the test,
     * so A learns of the loss only at its close. */
    lease_opts(&o, url, clock, 60000);

    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    idm_manual_clock_advance(mc, 20000);
    ga = leasetest_gen(layout, a, clock);
    IDM_ASSERT_OK(idm_lease_attach(a, ga));
    for (int i = 0; i < 1000; i++)
        IDM_ASSERT_OK(idm_snowflake_next(ga, &id));

    assert_int_equal(unlink(path), 0);
    idm_manual_clock_advance(mc, 1000);
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(b), 0);
    mark_b = mark_of(b);
    CHECK(mark_b == T0 + 21000 + 60000, "B's mark %lld", LL(mark_b));

    IDM_ASSERT_RC(idm_lease_close(a), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "removed or replaced") != NULL, "detail: %s",
          idm_error_detail());
    idm_snowflake_close(ga);
    CHECK(leasetest_listed_mark(url, NULL, NULL) == mark_b,
          "A's release left %lld, B's mark is %lld", LL(leasetest_listed_mark(url, NULL, NULL)),
          LL(mark_b));

    assert_int_equal(unlink(path), 0);
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    assert_int_equal(idm_lease_worker(c), 0);
    CHECK(idm_lease_mark(c) >= mark_b, "C's mark %lld is below B's %lld", LL(idm_lease_mark(c)),
          LL(mark_b));
    IDM_ASSERT_RC(idm_lease_close(b), IDM_ELEASE);
    IDM_ASSERT_OK(idm_lease_close(c));
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/* A claim racing a renewal: the renewal is held (by the file backend's
 * test hook) right after it checked that its lock file is still its own;
 * then the lock file is removed and B claims on another thread. */
static struct {
    atomic_int armed;       /* hold the next "marks checked", once */
    const char *path;       /* the lock file to remove */
    idm_lease_opts *opts;   /* B's */
    pthread_t thread;
    int started, unlinked;  /* written by the hook, read after the join */
    int rc;                 /* B's claim */
    idm_lease *b;
} race;

static void *claim_b(void *unused)
{
    (void)unused;
    race.rc = idm_lease_open(&race.b, race.opts);
    return NULL;
}

static void hold_renewal(const char *point)
{
    struct timespec ts = {0, 300000000};
    if (strcmp(point, "marks checked") != 0 || !atomic_exchange(&race.armed, 0))
        return;
    race.unlinked = unlink(race.path) == 0;
    race.started = pthread_create(&race.thread, NULL, claim_b, NULL) == 0;
    /* Time for B's claim to create its file and reach the marks file (it
     * must wait there for this renewal's record). A slower B only makes
     * the test weaker, never fail wrongly. */
    nanosleep(&ts, NULL);
}

/* Issue item 3, the ordering: "the new claimant reads the marks file after
 * it takes its lock; the old holder's renewal writes the marks file before
 * raising the generator's limit". A's renewal (at attach) has checked its
 * lock file and is about to record a higher mark when the file is removed
 * and B claims. The check and the record are one step under the marks
 * file's lock, so B reads the mark A's renewal records (and A's generator
 * then mints up to it), never the one before. Without the lock B read A's
 * previous mark, below what A went on to mint. */
static void old_holder_renewal_and_new_claim_are_ordered(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    idm_manual_clock *mc;
    const idm_clock *clock;
    idm_lease_opts o, ob;
    idm_lease *a;
    idm_layout *layout;
    idm_snowflake *ga;
    idm_unix_ms mark_a;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    clock = idm_manual_clock_clock(mc);
    lease_opts(&o, url, clock, 60000); /* no keeper renewal within the test */
    ob = o;
    ob.ttl_ms = 3000; /* B's own mark stays below A's new one */

    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    idm_manual_clock_advance(mc, 20000); /* attach renews: mark T0 + 80 s */
    ga = leasetest_gen(layout, a, clock);
    memset(&race, 0, sizeof race);
    race.path = path;
    race.opts = &ob;
    atomic_store(&race.armed, 1);
    idm__lease_file_test_hook = hold_renewal;
    IDM_ASSERT_OK(idm_lease_attach(a, ga));
    atomic_store(&race.armed, 0); /* fired or not, never again */
    CHECK(race.unlinked && race.started, "the hook did not run (unlinked %d, started %d)",
          race.unlinked, race.started);
    assert_int_equal(pthread_join(race.thread, NULL), 0);
    idm__lease_file_test_hook = NULL; /* B's claim read it too */
    IDM_ASSERT_OK(race.rc);
    assert_int_equal(idm_lease_worker(race.b), 0);
    mark_a = mark_of(a);
    CHECK(mark_a == T0 + 20000 + 60000, "A's mark %lld", LL(mark_a));
    CHECK(idm_lease_mark(race.b) >= mark_a,
          "B's mark %lld is below the mark %lld A's renewal recorded and mints up to",
          LL(idm_lease_mark(race.b)), LL(mark_a));
    IDM_ASSERT_RC(idm_lease_close(a), IDM_ELEASE); /* the release finds it lost */
    IDM_ASSERT_OK(idm_lease_close(race.b));
    idm_snowflake_close(ga);
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/* Issue item 3, one level down: dir/marks removed under a live holder is
 * made again by its next renewal (the holder's open marks file is checked
 * against the path, as the lock file is), so a later removal of the lock
 * file still leaves the holder's mark for the next claimant. */
static void removed_marks_are_recorded_again(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *dir = t.dir, *url = t.url;
    char *path = t.rec, *marks = idm_test_path(dir, "marks");
    char *mpath = t.mrec;
    idm_manual_clock *mc;
    const idm_clock *clock;
    idm_lease_opts o;
    idm_lease *a, *b;
    idm_layout *layout;
    idm_snowflake *ga;
    idm_lease_status st;
    uint64_t id = 0, renewals;
    struct stat sb;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    clock = idm_manual_clock_clock(mc);
    lease_opts(&o, url, clock, 1000); /* the keeper renews every 333 ms */

    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    idm_manual_clock_advance(mc, 500);
    ga = leasetest_gen(layout, a, clock);
    IDM_ASSERT_OK(idm_lease_attach(a, ga));
    IDM_ASSERT_OK(idm_snowflake_next(ga, &id));
    assert_int_equal(stat(mpath, &sb), 0);

    idm_test_rmtree(marks);
    idm_lease_status_get(a, &st);
    renewals = st.renewals;
    wait_status(a, &st, renewed_past, renewals);
    CHECK(st.renewals > renewals && !st.lost, "no renewal after dir/marks was removed (%s)",
          st.lost ? "lost" : "none");
    CHECK(stat(mpath, &sb) == 0, "%s was not made again: %s", mpath, strerror(errno));

    assert_int_equal(unlink(path), 0);
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(b), 0);
    CHECK(idm_lease_mark(b) >= mark_of(a), "B's mark %lld is below A's %lld",
          LL(idm_lease_mark(b)), LL(mark_of(a)));
    idm_lease_close(a);
    IDM_ASSERT_OK(idm_lease_close(b));
    idm_snowflake_close(ga);
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    free(marks);
    leasetest_end(&t);
}

/* ------------------------------------------- item 5a: network file systems */

/* Issue item 5a: file:// leases rely on locks and records of one machine;
 * a directory on a network file system is refused at open. Each network
 * magic (also sign-extended, as a 32-bit f_type may come) is classified as
 * one, local ones are not, and a claim in a local directory works. */
static void network_file_systems_are_refused(void **unused)
{
    static const unsigned long network[] = {
        0x6969,     /* NFS */    0x517B,     /* SMB */     0xFF534D42, /* CIFS */
        0xFE534D42, /* SMB2 */   0x01021997, /* 9P */      0x65735546, /* FUSE */
        0x00C36400, /* Ceph */   0x5346414F, /* AFS */     0x6B414653, /* kAFS */
        0x73757245, /* Coda */   0x564C,     /* NCP */     0x01161970, /* GFS2 */
        0x7461636F, /* OCFS2 */  0x0BD00BD0, /* Lustre */  0x47504653, /* GPFS */
        0x20030528, /* OrangeFS */ 0x19830326, /* BeeGFS */ 0x786F4256, /* vboxsf */
    };
    static const unsigned long local[] = {
        0xEF53,     /* ext2/3/4 */ 0x58465342, /* XFS */     0x9123683E, /* Btrfs */
        0x01021994, /* tmpfs */    0x794C7630, /* overlay */ 0x2FC12FC1, /* ZFS */
        0xF2F52010, /* F2FS */     0x4D44,     /* FAT */     0x9FA0,     /* proc */
        0,
    };
    leasetest_dir t = leasetest_begin();
    char *dir = t.dir, *url = t.url;
    idm_lease_opts o;
    idm_lease *l = NULL;
    struct statfs sf;
    (void)unused;
    for (size_t i = 0; i < sizeof network / sizeof network[0]; i++) {
        CHECK(idm__lease_fs_is_network(network[i]) == 1, "f_type 0x%lx taken as local",
              network[i]);
        /* As a negative 32-bit f_type widened to long. */
        CHECK(idm__lease_fs_is_network((unsigned long)(long)(int32_t)(uint32_t)network[i]) == 1,
              "sign-extended f_type 0x%lx taken as local", network[i]);
    }
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        CHECK(idm__lease_fs_is_network(local[i]) == 0, "f_type 0x%lx taken as a network one",
              local[i]);
    /* The test's own directory is local, and accepted. */
    assert_int_equal(statfs(dir, &sf), 0);
    CHECK(!idm__lease_fs_is_network((unsigned long)sf.f_type),
          "TMPDIR %s is on a network file system (0x%lx): run the tests on a local one", dir,
          (unsigned long)sf.f_type);
    lease_opts(&o, url, NULL, 3000);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    IDM_ASSERT_OK(idm_lease_close(l));
    leasetest_end(&t);
}

/* ---------------------------------------------- item 5b: where slots lie */

/* One holder's term on the manual clock: claim, renew (at attach), mint
 * 100 ids, close. Three writes to each record file; returns the time of the
 * last id, the exact final mark. */
static idm_unix_ms one_term(const char *url, idm_manual_clock *mc, idm_layout *layout)
{
    const idm_clock *clock = idm_manual_clock_clock(mc);
    idm_lease_opts o;
    idm_lease *l;
    idm_snowflake *g;
    uint64_t id = 0;
    /* A TTL of a minute: no keeper renewal (every 20 s) adds a write. */
    lease_opts(&o, url, clock, 60000);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    idm_manual_clock_advance(mc, 20000);
    g = leasetest_gen(layout, l, clock);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_manual_clock_advance(mc, 1000);
    return leasetest_time_of(layout, id);
}

/* The mark a claim of worker 0 of url gets (then released at once). */
static idm_unix_ms claimed_mark(const char *url, idm_manual_clock *mc)
{
    idm_lease_opts o;
    idm_lease *l;
    idm_unix_ms m;
    lease_opts(&o, url, idm_manual_clock_clock(mc), 60000);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 0);
    m = idm_lease_mark(l);
    IDM_ASSERT_OK(idm_lease_close(l));
    return m;
}

/* Issue item 5b, fault row H4 analogue: both slots shared one 512-byte
 * sector, so one torn sector could damage both. Slot 0 is at offset 0 and
 * slot 1 at 4096: with the whole first 4 KiB block of each record file
 * (lock and marks) lost, the newest mark still reads from slot 1, exactly;
 * with the second block lost, from slot 0. With both lost, the damaged
 * record's rule holds: mtime + the longest TTL. Before the fix the first
 * case read as damaged (both slots in the first block). */
static void record_slots_survive_a_torn_block(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    char *mpath = t.mrec;
    idm_manual_clock *mc;
    idm_layout *layout;
    idm_unix_ms last, m;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));

    /* Claim (seq 1, slot 1), renewal (2, slot 0), release (3, slot 1). */
    last = one_term(url, mc, layout);
    CHECK(size_of(path) >= 4096 + 128, "the lock file is %lld bytes", LL(size_of(path)));
    zero_range(path, 0, 4096);
    zero_range(mpath, 0, 4096);
    m = leasetest_listed_mark(url, NULL, NULL);
    CHECK(m == last, "first block lost: listed mark %lld, the last id's time %lld", LL(m),
          LL(last));
    m = claimed_mark(url, mc); /* writes slot 0 (seq 4), then slot 1 (5): the same mark */
    CHECK(m == last, "first block lost: claimed mark %lld, the last id's time %lld", LL(m),
          LL(last));

    /* Claim (6, slot 0), renewal (7, slot 1), release (8, slot 0). */
    last = one_term(url, mc, layout);
    zero_range(path, 4096, 8192);
    zero_range(mpath, 4096, 8192);
    m = leasetest_listed_mark(url, NULL, NULL);
    CHECK(m == last, "second block lost: listed mark %lld, the last id's time %lld", LL(m),
          LL(last));
    m = claimed_mark(url, mc);
    CHECK(m == last, "second block lost: claimed mark %lld, the last id's time %lld", LL(m),
          LL(last));

    /* Both blocks lost in both files: the fallback, never lower. */
    last = one_term(url, mc, layout);
    zero_range(path, 0, 8192);
    zero_range(mpath, 0, 8192);
    leasetest_set_mtime(path, T0);
    leasetest_set_mtime(mpath, T0);
    m = leasetest_listed_mark(url, NULL, NULL);
    CHECK(m >= T0 + IDM_LEASE_TTL_MAX_MS && m <= T0 + IDM_LEASE_TTL_MAX_MS + 60000,
          "both blocks lost: listed mark %lld, mtime %lld", LL(m), LL(T0));
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/* Issue item 5b: a version 1 file (slots at 0 and 128, 256 bytes, no
 * dir/marks: a directory of an older build) reads as before, newest slot
 * first, whichever slot that is; its next claim rewrites it in version 2
 * without ever making it read lower or damaged: while held, the lock file
 * alone shows the claim's mark (the claim wrote slot 1 at 4096, away from
 * both version 1 lines); after the release the exact one, and no version 1
 * line is left. A version 2 file cut to 256 bytes never reads as version 1
 * with a lower mark: it is damaged. */
static void version1_file_is_read_and_converted(void **unused)
{
    (void)unused;
    for (int newest = 0; newest < 2; newest++) {
        leasetest_dir t = leasetest_begin();
        char *dir = t.dir, *url = t.url, *marks = idm_test_path(dir, "marks");
        char *path = t.rec, holder[64];
        idm_manual_clock *mc;
        idm_lease_opts o;
        idm_lease *l;
        idm_unix_ms m, claim;
        /* Version 1 wrote seq s to slot s % 2, at (s % 2) * 128. */
        put_slot(path, 0, 1, 6, newest == 0 ? T0 : T0 - 1000, "old");
        put_slot(path, 128, 1, newest == 0 ? 5 : 7, newest == 0 ? T0 - 1000 : T0, "old");
        assert_int_equal(size_of(path), 256);
        m = leasetest_listed_mark(url, NULL, holder);
        CHECK(m == T0, "newest in slot %d: listed %lld, want %lld", newest, LL(m), LL(T0));
        assert_string_equal(holder, "old");

        IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0 + 10000, false));
        lease_opts(&o, url, idm_manual_clock_clock(mc), 3000);
        IDM_ASSERT_OK(idm_lease_open(&l, &o));
        assert_int_equal(idm_lease_worker(l), 0);
        CHECK(idm_lease_mark(l) == T0, "newest in slot %d: claimed mark %lld, want %lld",
              newest, LL(idm_lease_mark(l)), LL(T0));
        claim = mark_of(l);
        assert_int_equal(claim, T0 + 10000 + 3000);
        idm_test_rmtree(marks);
        m = leasetest_listed_mark(url, NULL, NULL);
        CHECK(m == claim, "newest in slot %d, converting: lock file mark %lld, the claim's %lld",
              newest, LL(m), LL(claim));
        CHECK(size_of(path) >= 4096 + 128, "the lock file is %lld bytes", LL(size_of(path)));
        IDM_ASSERT_OK(idm_lease_close(l)); /* the exact final mark: the previous one */
        m = leasetest_listed_mark(url, NULL, holder);
        CHECK(m == T0, "newest in slot %d, after the release: %lld, want %lld", newest, LL(m),
              LL(T0));
        assert_string_equal(holder, "test");
        CHECK(!file_contains(path, "idmint-lease 1 "), "a version 1 line is left in %s", path);

        /* Cut to 256 bytes (and no marks): damaged, not version 1. */
        assert_int_equal(truncate(path, 256), 0);
        leasetest_set_mtime(path, T0);
        idm_test_rmtree(marks);
        m = leasetest_listed_mark(url, NULL, holder);
        CHECK(m >= T0 + IDM_LEASE_TTL_MAX_MS, "a version 2 file cut to 256 bytes reads %lld",
              LL(m));
        assert_string_equal(holder, "(damaged record)");
        idm_manual_clock_free(mc);
        free(marks);
        leasetest_end(&t);
    }
}

/* Issue item 5b: a version 1 line in a version 2 file (an older idmint
 * that found the file damaged wrote over it, with a mark above every
 * earlier one; its seqs restart) counts at its mark: the reader takes the
 * highest mark of every valid slot, not the newest seq of the version 2
 * ones. */
static void version1_line_in_a_version2_file_counts(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *url = t.url;
    char *path = t.rec;
    idm_manual_clock *mc;
    idm_unix_ms m;
    (void)unused;
    put_slot(path, 0, 2, 10, T0, "new");
    put_slot(path, 4096, 2, 9, T0 - 1000, "new");
    put_slot(path, 128, 1, 1, T0 + IDM_LEASE_TTL_MAX_MS, "older"); /* the older idmint's claim */
    m = leasetest_listed_mark(url, NULL, NULL);
    CHECK(m == T0 + IDM_LEASE_TTL_MAX_MS, "listed %lld, want %lld", LL(m),
          LL(T0 + IDM_LEASE_TTL_MAX_MS));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    m = claimed_mark(url, mc);
    CHECK(m == T0 + IDM_LEASE_TTL_MAX_MS, "claimed %lld, want %lld", LL(m),
          LL(T0 + IDM_LEASE_TTL_MAX_MS));
    /* The claim and the release rewrote both blocks in version 2. */
    CHECK(!file_contains(path, "idmint-lease 1 "), "a version 1 line is left in %s", path);
    m = leasetest_listed_mark(url, NULL, NULL);
    CHECK(m == T0 + IDM_LEASE_TTL_MAX_MS, "after the release: %lld", LL(m));
    idm_manual_clock_free(mc);
    leasetest_end(&t);
}

/* Fault row H4 analogue: a record file cut short still holds a slot that
 * parses (seq 2, mark 0) although the file counts as damaged. The claim
 * that repairs it must write above that seq: its record (the claim's mark,
 * which it mints under before its first renewal) must not be outranked by
 * the stale slot if it dies then. Read from the lock file alone (dir/marks
 * removed), it was: mark 0. A stale slot of either version. */
static void repaired_record_outranks_a_stale_slot(void **unused)
{
    for (int version = 1; version <= 2; version++) {
        leasetest_dir t = leasetest_begin();
        char *dir = t.dir, *url = t.url, *marks = idm_test_path(dir, "marks");
        char *path = t.rec;
        idm_manual_clock *mc;
        idm_lease_opts o;
        idm_lease *l;
        idm_unix_ms m, claim;
        put_slot(path, 0, version, 2, 0, "stale");
        assert_int_equal(size_of(path), 128);
        leasetest_set_mtime(path, T0 - 2 * IDM_LEASE_TTL_MAX_MS); /* its fallback is long past */
        IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
        lease_opts(&o, url, idm_manual_clock_clock(mc), 3000);
        IDM_ASSERT_OK(idm_lease_open(&l, &o));
        CHECK(idm_lease_mark(l) < T0, "version %d: claimed mark %lld", version,
              LL(idm_lease_mark(l)));
        claim = mark_of(l);
        assert_int_equal(claim, T0 + 3000);
        idm_test_rmtree(marks);
        m = leasetest_listed_mark(url, NULL, NULL);
        CHECK(m == claim, "version %d: the lock file reads %lld; the claim recorded %lld",
              version, LL(m), LL(claim));
        IDM_ASSERT_OK(idm_lease_close(l));
        idm_manual_clock_free(mc);
        free(marks);
        leasetest_end(&t);
    }
    (void)unused;
}

/* The largest seq and mark with a holder of 63 bytes do not fit one
 * 128-byte slot: the holder is cut, and the record stays whole and valid
 * (it was written past the slot, with its check cut off). */
static void longest_record_fits_its_slot(void **unused)
{
    leasetest_dir t = leasetest_begin();
    char *dir = t.dir, *url = t.url, *marks = idm_test_path(dir, "marks");
    char *path = t.rec, holder[64], longest[64];
    const long long big = 9000000000000000000LL;
    idm_lease_opts o;
    idm_lease *l;
    idm_unix_ms m;
    (void)unused;
    put_slot(path, 4096, 2, UINT64_C(18446744073709551000), big, "x");
    memset(longest, 'h', 63);
    longest[63] = '\0';
    lease_opts(&o, url, NULL, 3000);
    o.holder = longest;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_mark(l), big);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_test_rmtree(marks);
    m = leasetest_listed_mark(url, NULL, holder);
    CHECK(m == big, "listed %lld, want %lld (holder '%s')", LL(m), LL(big), holder);
    CHECK(strlen(holder) >= 50 && strncmp(holder, longest, strlen(holder)) == 0,
          "holder '%s'", holder);
    free(marks);
    leasetest_end(&t);
}

/* ------------------------------------------------------------ fault sites */

/* Every file write and sync of the file backend, by its fault site (the
 * catalogue is docs/FAULTS.md): the lease directory made, the scope's
 * temporary file made, written, synced, linked as dir/scope and unlinked,
 * the directory synced; the lock file opened, dir/marks made, the marks
 * file opened, written and synced, both directories synced after a new
 * marks file; the lock file written and synced. */
static const char *const sites[] = {
    "lease-file.mkdir",          "lease-file.scope-open",  "lease-file.scope-write",
    "lease-file.scope-fsync",    "lease-file.link",        "lease-file.unlink",
    "lease-file.scope-fsyncdir", "lease-file.open",        "lease-file.marks-mkdir",
    "lease-file.marks-open",     "lease-file.marks-write", "lease-file.marks-fsync",
    "lease-file.marks-fsyncdir", "lease-file.fsyncdir",    "lease-file.write",
    "lease-file.fsync",
};
#define N_SITES (sizeof sites / sizeof sites[0])

/* What the hook saw, and which hit of which site it fails. */
static struct {
    atomic_int hits[N_SITES];
    atomic_int unknown;  /* calls naming a site not in the list */
    atomic_bool paused;  /* neither count nor fail */
    int fail_site;       /* index into sites, -1: none */
    int fail_at;         /* the hit of it that fails, from 1 */
    atomic_bool failed;  /* that hit came */
} fz;

static int fault_hook(const char *site)
{
    int i = 0;
    if (atomic_load(&fz.paused))
        return 0;
    while (i < (int)N_SITES && strcmp(sites[i], site) != 0)
        i++;
    if (i == (int)N_SITES) {
        atomic_fetch_add(&fz.unknown, 1);
        return 0;
    }
    if (atomic_fetch_add(&fz.hits[i], 1) + 1 == fz.fail_at && i == fz.fail_site) {
        atomic_store(&fz.failed, true);
        return EIO;
    }
    return 0;
}

static void faults_on(int site, int at)
{
    for (size_t i = 0; i < N_SITES; i++)
        atomic_store(&fz.hits[i], 0);
    atomic_store(&fz.unknown, 0);
    atomic_store(&fz.paused, false);
    atomic_store(&fz.failed, false);
    fz.fail_site = site;
    fz.fail_at = at;
    idm__fault_hook = fault_hook;
}

/* What one holder's term under the hook returned. */
typedef struct fault_run {
    int claim_rc, attach_rc, close_rc;
    idm_unix_ms last; /* the time of the last id minted, 0 if none */
} fault_run;

/* A holder's term with a scope, as one_term: claim, a second claimant
 * (unhooked) that must get another id, renew (at attach), mint, close. */
static fault_run fault_term(const char *url, idm_manual_clock *mc, idm_layout *layout)
{
    const idm_clock *clock = idm_manual_clock_clock(mc);
    fault_run r = {0, 0, 0, 0};
    idm_lease_opts o;
    idm_lease *l, *other;
    idm_snowflake *g;
    uint64_t id = 0;
    lease_opts(&o, url, clock, 60000);
    o.scope = "fault test scope";
    r.claim_rc = idm_lease_open(&l, &o);
    if (r.claim_rc != 0)
        return r;
    atomic_store(&fz.paused, true);
    IDM_ASSERT_OK(idm_lease_open(&other, &o));
    CHECK(idm_lease_worker(other) != idm_lease_worker(l), "two holders of worker id %u",
          (unsigned)idm_lease_worker(l));
    IDM_ASSERT_OK(idm_lease_close(other));
    atomic_store(&fz.paused, false);
    if (idm_manual_clock_now_ms(mc) <= idm_lease_mark(l))
        idm_manual_clock_set(mc, idm_lease_mark(l) + 1);
    idm_manual_clock_advance(mc, 20000); /* past TTL/6: attach renews */
    g = leasetest_gen(layout, l, clock);
    r.attach_rc = idm_lease_attach(l, g);
    for (int i = 0; r.attach_rc == 0 && i < 100; i++)
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    if (r.attach_rc == 0)
        r.last = leasetest_time_of(layout, id);
    r.close_rc = idm_lease_close(l);
    idm_snowflake_close(g);
    idm_manual_clock_advance(mc, 1000);
    return r;
}

/* Every fault site is reached by a holder's term in a new directory (and
 * no other site is named). */
static void every_fault_site_is_reached(void **unused)
{
    leasetest_dir t = leasetest_begin();
    idm_manual_clock *mc;
    idm_layout *layout;
    fault_run r;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    faults_on(-1, 0);
    r = fault_term(t.url, mc, layout);
    idm__fault_hook = NULL;
    IDM_ASSERT_OK(r.claim_rc);
    IDM_ASSERT_OK(r.attach_rc);
    IDM_ASSERT_OK(r.close_rc);
    for (size_t i = 0; i < N_SITES; i++)
        CHECK(atomic_load(&fz.hits[i]) >= 1, "fault site %s is never reached", sites[i]);
    CHECK(atomic_load(&fz.unknown) == 0, "%d calls name a site not in the list",
          atomic_load(&fz.unknown));
    idm_manual_clock_free(mc);
    idm_layout_free(layout);
    leasetest_end(&t);
}

/*
 * Each hit of each fault site fails in turn, with EIO, in a holder's term
 * in a new directory and in one after an earlier holder's: the call that
 * made it fails with IDM_EIO (the claim, the renewal at attach or the
 * release), but for the scope's temporary file's unlink, whose failure
 * leaves the file and fails nothing; then, with no fault, the records still
 * read, worker id 0 is free again and its next claim starts at or above
 * every id minted before.
 */
static void each_fault_site_fails_safely(void **unused)
{
    idm_layout *layout;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    for (int after = 0; after < 2; after++) {
        for (int i = 0; i < (int)N_SITES; i++) {
            for (int at = 1;; at++) {
                leasetest_dir t = leasetest_begin();
                idm_manual_clock *mc;
                idm_lease_opts o;
                idm_lease *l;
                idm_lease_entry *e = NULL;
                size_t n = 0;
                idm_unix_ms before = 0;
                fault_run r;
                bool failed;
                IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
                if (after)
                    before = one_term(t.url, mc, layout);
                faults_on(i, at);
                r = fault_term(t.url, mc, layout);
                idm__fault_hook = NULL;
                failed = atomic_load(&fz.failed);
                CHECK((r.claim_rc == 0 || r.claim_rc == IDM_EIO) &&
                          (r.attach_rc == 0 || r.attach_rc == IDM_EIO) &&
                          (r.close_rc == 0 || r.close_rc == IDM_EIO),
                      "%s hit %d: claim %d, attach %d, close %d", sites[i], at, r.claim_rc,
                      r.attach_rc, r.close_rc);
                if (strcmp(sites[i], "lease-file.unlink") == 0)
                    CHECK(r.claim_rc == 0 && r.attach_rc == 0 && r.close_rc == 0,
                          "%s hit %d failed a call", sites[i], at);
                else
                    CHECK(!failed || r.claim_rc != 0 || r.attach_rc != 0 || r.close_rc != 0,
                          "%s hit %d failed and no call said so", sites[i], at);
                CHECK(failed || r.claim_rc == 0, "%s hit %d: claim %d with no fault", sites[i],
                      at, r.claim_rc);
                /* Readable, free, and never lower. */
                IDM_ASSERT_OK(idm_lease_list(t.url, 4, &e, &n));
                free(e);
                lease_opts(&o, t.url, idm_manual_clock_clock(mc), 60000);
                IDM_ASSERT_OK(idm_lease_open(&l, &o));
                assert_int_equal(idm_lease_worker(l), 0);
                CHECK(idm_lease_mark(l) >= r.last && idm_lease_mark(l) >= before,
                      "%s hit %d (%s an earlier holder): mark %lld, ids minted up to %lld "
                      "and %lld",
                      sites[i], at, after ? "after" : "without", LL(idm_lease_mark(l)),
                      LL(r.last), LL(before));
                IDM_ASSERT_OK(idm_lease_close(l));
                idm_manual_clock_free(mc);
                leasetest_end(&t);
                if (!failed)
                    break; /* no such hit: the next site */
            }
        }
    }
    idm_layout_free(layout);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(removed_lock_file_keeps_the_mark),
        cmocka_unit_test(removed_holder_release_does_not_lower_the_mark),
        cmocka_unit_test(old_holder_renewal_and_new_claim_are_ordered),
        cmocka_unit_test(removed_marks_are_recorded_again),
        cmocka_unit_test(network_file_systems_are_refused),
        cmocka_unit_test(record_slots_survive_a_torn_block),
        cmocka_unit_test(version1_file_is_read_and_converted),
        cmocka_unit_test(version1_line_in_a_version2_file_counts),
        cmocka_unit_test(repaired_record_outranks_a_stale_slot),
        cmocka_unit_test(longest_record_fits_its_slot),
        cmocka_unit_test(every_fault_site_is_reached),
        cmocka_unit_test(each_fault_site_fails_safely),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
