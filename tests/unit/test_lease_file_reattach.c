/* SPDX-License-Identifier: MIT */
/*
 * Restarts within the lease on the file backend (file:///dir): the
 * backend's handle and reattach ops (backend.h), called directly. A claim
 * to resume is made by a forked child that sends its worker id, handle (the
 * claim's token) and mark through a pipe and is then killed with SIGKILL: a
 * crash, which frees its lock at once and leaves its record as it was.
 *
 * Rows of the fault catalogue: E12 a holder killed with kill -9 and
 * restarted at once (it resumes its claim: the same worker id, the marks
 * raised, no new claim); E3 the id claimed by another holder since (another
 * token; or held now: refused without disturbing it); H5 a reattach while
 * the original holder is alive (its lock held: refused, the holder
 * untouched); E4 the lock file removed by hand; H4 a record none of whose
 * slots is valid (cannot say: IDM_EIO, not IDM_ELEASE); H7 records with
 * and without a claim token across versions (an earlier build's record
 * names no claim; a record with a token still reads as before to an
 * earlier build's grammar); plus garbled handles, a handle given with
 * another worker id, and another scope.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"
#include "../../src/lease/backend.h"
#include "../../src/lease/lease_internal.h"

#define BE (&idm__lease_file)
#define SCOPE "worker of twitter (a test)"
#define TTL 1000
#define REC_LEN 4224 /* a lock file's two slots, at 0 and 4096 */

/* ------------------------------------------------------------- helpers */

static void *open_be(const char *dir)
{
    idm_lease_opts o;
    void *be = NULL;
    idm_lease_opts_init(&o);
    o.ttl_ms = TTL;
    IDM_ASSERT_OK(BE->open(&be, dir, &o));
    return be;
}

/* A claim of one of 4 ids on be (holder, SCOPE, first mark mark): the id. */
static uint32_t claim(void *be, const char *holder, idm_unix_ms mark, idm_unix_ms *prev)
{
    uint32_t w = 99;
    idm_unix_ms p = 0, rec = 0;
    int64_t granted = 0;
    IDM_ASSERT_OK(BE->claim(be, 4, TTL, holder, SCOPE, mark, &w, &p, &rec, &granted));
    if (prev != NULL)
        *prev = p;
    return w;
}

/* reattach on be with holder "restarted": its result. */
static int reattach(void *be, uint32_t worker, const char *handle, const char *scope,
                    idm_unix_ms mark, idm_unix_ms *recorded)
{
    int64_t granted = 0;
    idm_unix_ms rec = 0;
    int rc = BE->reattach(be, worker, handle, TTL, "restarted", scope, mark, &rec, &granted);
    if (rc == 0)
        assert_int_equal(granted, TTL);
    if (recorded != NULL)
        *recorded = rec;
    return rc;
}

static void detail_has(const char *want)
{
    CHECK(strstr(idm_error_detail(), want) != NULL, "detail '%s' does not say '%s'",
          idm_error_detail(), want);
}

/* The bytes of path into buf (REC_LEN): how many (-1: no file). */
static ssize_t bytes_of(const char *path, char *buf)
{
    int fd = open(path, O_RDONLY);
    ssize_t n;
    if (fd < 0)
        return -1;
    n = pread(fd, buf, REC_LEN, 0);
    close(fd);
    return n;
}

/* path's bytes are still before's (n of them). */
static void unchanged(const char *path, const char *before, ssize_t n)
{
    char now[REC_LEN];
    ssize_t m = bytes_of(path, now);
    CHECK(m == n && (n <= 0 || memcmp(now, before, (size_t)n) == 0), "%s changed", path);
}

/* worker w's lock file and marks file in dir (malloc'd). */
static char *lock_path(const char *dir, uint32_t w)
{
    char name[64];
    snprintf(name, sizeof name, "worker-%04u.lease", (unsigned)w);
    return idm_test_path(dir, name);
}

static char *marks_file(const char *dir, uint32_t w)
{
    char name[64];
    snprintf(name, sizeof name, "marks/worker-%04u.mark", (unsigned)w);
    return idm_test_path(dir, name);
}

/* The listed mark and holder (64 bytes) of worker w of dir; held into
 * *held. */
static idm_unix_ms listed(void *be, uint32_t w, bool *held, char *holder)
{
    idm_lease_entry *e = NULL;
    size_t n = 0;
    idm_unix_ms m = -1;
    IDM_ASSERT_OK(BE->list(be, 4, &e, &n));
    for (size_t i = 0; i < n; i++)
        if (e[i].worker == w) {
            m = e[i].mark_ms;
            if (held != NULL)
                *held = e[i].held;
            if (holder != NULL)
                snprintf(holder, 64, "%s", e[i].holder);
        }
    free(e);
    CHECK(m >= 0, "worker %u not listed", (unsigned)w);
    return m;
}

/* A claim made by a child process. */
typedef struct child {
    pid_t pid;
    int rc;
    uint32_t worker;
    idm_unix_ms recorded;
    char handle[IDM_LEASE_HANDLE_MAX];
    int go[2], done[2]; /* to the child: renew now; from it: the result */
} child;

/* A child claims an id of dir (holder "child", a mark a TTL ahead) and
 * sends what it claimed; it then renews once when told (go) and answers
 * the renewal's result (done), and waits to be killed. */
static child child_claim(const char *dir)
{
    child c;
    int p[2];
    pid_t parent;
    memset(&c, 0, sizeof c);
    assert_int_equal(pipe(p), 0);
    assert_int_equal(pipe(c.go), 0);
    assert_int_equal(pipe(c.done), 0);
    parent = getpid();
    c.pid = fork();
    assert_true(c.pid >= 0);
    if (c.pid == 0) {
        idm_lease_opts o;
        void *be = NULL;
        idm_unix_ms prev = 0;
        int64_t granted = 0;
        char b;
        int rc;
        /* Gone with the test, should it fail before killing us. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        idm_lease_opts_init(&o);
        o.ttl_ms = TTL;
        c.rc = BE->open(&be, dir, &o);
        if (c.rc == 0)
            c.rc = BE->claim(be, 4, TTL, "child", SCOPE, leasetest_wall_ms() + TTL, &c.worker,
                             &prev, &c.recorded, &granted);
        if (c.rc == 0)
            c.rc = BE->handle(be, c.handle, sizeof c.handle);
        if (write(p[1], &c, sizeof c) != (ssize_t)sizeof c)
            _exit(2);
        if (read(c.go[0], &b, 1) != 1)
            _exit(3);
        rc = BE->renew(be, leasetest_wall_ms() + TTL, &granted);
        if (write(c.done[1], &rc, sizeof rc) != (ssize_t)sizeof rc)
            _exit(4);
        pause(); /* until killed */
        _exit(0);
    }
    close(p[1]);
    {
        /* The child's copy has pid 0: keep ours. */
        pid_t pid = c.pid;
        assert_int_equal(read(p[0], &c, sizeof c) == (ssize_t)sizeof c, 1);
        c.pid = pid;
    }
    close(p[0]);
    IDM_ASSERT_OK(c.rc);
    assert_true(c.recorded > 0 && strlen(c.handle) == 16);
    return c;
}

/* Tell the (live) child to renew: its result. */
static int child_renew(child *c)
{
    int rc = -1;
    assert_int_equal(write(c->go[1], "r", 1), 1);
    assert_int_equal(read(c->done[0], &rc, sizeof rc), (ssize_t)sizeof rc);
    return rc;
}

/* Kill the child with SIGKILL (a crash) and reap it. */
static void crash(child *c)
{
    int status;
    kill(c->pid, SIGKILL);
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    close(c->go[0]);
    close(c->go[1]);
    close(c->done[0]);
    close(c->done[1]);
}

/* A claim by a child that then crashed. */
static child crashed_claim(const char *dir)
{
    child c = child_claim(dir);
    crash(&c);
    return c;
}

/* ------------------------------------------------------------- tests */

/* E12: a holder killed with kill -9 and restarted at once resumes its
 * claim: its worker id, its token as the handle, the marks raised to the
 * dead holder's (never lowered) in both records; renewals and the release
 * act on it; the release ends the claim (its record has no token), so the
 * handle resumes nothing after it. */
static void e12_file_reattach_after_kill9(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = crashed_claim(t.dir);
    void *be = open_be(t.dir), *other;
    char h[IDM_LEASE_HANDLE_MAX], holder[64];
    idm_unix_ms rec = 0, prev = 0;
    int64_t granted = 0;
    bool held = false;
    (void)unused;
    assert_int_equal(c.worker, 0);
    IDM_ASSERT_OK(reattach(be, 0, c.handle, SCOPE, leasetest_wall_ms(), &rec));
    CHECK(rec == c.recorded, "recorded %lld, the dead holder's %lld", LL(rec), LL(c.recorded));
    IDM_ASSERT_OK(BE->handle(be, h, sizeof h));
    assert_string_equal(h, c.handle);
    assert_int_equal(listed(be, 0, &held, holder), rec);
    assert_true(held);
    assert_string_equal(holder, "restarted");
    /* Held: a claim gets the next id. */
    other = open_be(t.dir);
    assert_int_equal(claim(other, "other", leasetest_wall_ms(), NULL), 1);
    IDM_ASSERT_OK(BE->release(other, leasetest_wall_ms()));
    BE->close(other);
    /* Renewed: the marks rise in both files. */
    IDM_ASSERT_OK(BE->renew(be, rec + 7, &granted));
    assert_int_equal(listed(be, 0, NULL, NULL), rec + 7);
    IDM_ASSERT_OK(BE->release(be, rec + 3));
    BE->close(be);
    /* The release ended the claim: its handle resumes nothing. */
    be = open_be(t.dir);
    IDM_ASSERT_RC(reattach(be, 0, c.handle, SCOPE, leasetest_wall_ms(), NULL), IDM_ELEASE);
    detail_has("no claim token");
    BE->close(be);
    /* Free, with the exact final mark. */
    be = open_be(t.dir);
    assert_int_equal(claim(be, "next", leasetest_wall_ms(), &prev), 0);
    assert_int_equal(prev, rec + 3);
    IDM_ASSERT_OK(BE->release(be, prev));
    BE->close(be);
    leasetest_end(&t);
}

/* E3: the id claimed by another holder since the crash: held by it now
 * (its lock: refused, it still renews) or claimed and itself crashed
 * (another token): IDM_ELEASE, nothing written. */
static void e3_file_reattach_claimed_since(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = crashed_claim(t.dir), c2;
    void *be = open_be(t.dir), *other = open_be(t.dir);
    char before[REC_LEN], mbefore[REC_LEN];
    ssize_t n, mn;
    idm_unix_ms prev = 0;
    int64_t granted = 0;
    (void)unused;
    assert_int_equal(claim(other, "other", leasetest_wall_ms(), &prev), 0);
    assert_int_equal(prev, c.recorded);
    n = bytes_of(t.rec, before);
    mn = bytes_of(t.mrec, mbefore);
    IDM_ASSERT_RC(reattach(be, 0, c.handle, SCOPE, leasetest_wall_ms(), NULL), IDM_ELEASE);
    detail_has("held by a live process");
    unchanged(t.rec, before, n);
    unchanged(t.mrec, mbefore, mn);
    IDM_ASSERT_OK(BE->renew(other, leasetest_wall_ms() + TTL, &granted));
    IDM_ASSERT_OK(BE->release(other, leasetest_wall_ms()));
    BE->close(other);
    BE->close(be);
    /* Claimed again by a holder that crashed in turn: its token now. */
    c2 = crashed_claim(t.dir);
    assert_int_equal(c2.worker, 0);
    assert_string_not_equal(c2.handle, c.handle);
    n = bytes_of(t.rec, before);
    mn = bytes_of(t.mrec, mbefore);
    be = open_be(t.dir);
    IDM_ASSERT_RC(reattach(be, 0, c.handle, SCOPE, leasetest_wall_ms(), NULL), IDM_ELEASE);
    detail_has("another claim since");
    unchanged(t.rec, before, n);
    unchanged(t.mrec, mbefore, mn);
    /* The later claim's own handle resumes it. */
    IDM_ASSERT_OK(reattach(be, 0, c2.handle, SCOPE, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    leasetest_end(&t);
}

/* H5: a reattach with the handle of a holder that is still alive (its
 * lock held): IDM_ELEASE at once, nothing written, and the holder's next
 * renewal works. */
static void h5_file_reattach_while_holder_alive(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = child_claim(t.dir);
    void *be = open_be(t.dir);
    char before[REC_LEN], mbefore[REC_LEN];
    ssize_t n = bytes_of(t.rec, before), mn = bytes_of(t.mrec, mbefore);
    (void)unused;
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, SCOPE, leasetest_wall_ms(), NULL),
                  IDM_ELEASE);
    detail_has("held by a live process");
    unchanged(t.rec, before, n);
    unchanged(t.mrec, mbefore, mn);
    BE->close(be);
    IDM_ASSERT_OK(child_renew(&c));
    crash(&c);
    leasetest_end(&t);
}

/* E4: the dead holder's lock file removed by hand before the restart:
 * IDM_ELEASE, and no lock file made again; its mark stays in dir/marks
 * for the next claim. */
static void e4_file_reattach_lock_file_removed(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = crashed_claim(t.dir);
    void *be = open_be(t.dir);
    char mbefore[REC_LEN];
    ssize_t mn = bytes_of(t.mrec, mbefore);
    struct stat sb;
    idm_unix_ms prev = 0;
    (void)unused;
    assert_int_equal(unlink(t.rec), 0);
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, SCOPE, leasetest_wall_ms(), NULL),
                  IDM_ELEASE);
    detail_has("is gone (removed)");
    assert_int_equal(stat(t.rec, &sb), -1);
    assert_int_equal(errno, ENOENT);
    unchanged(t.mrec, mbefore, mn);
    assert_int_equal(claim(be, "next", leasetest_wall_ms(), &prev), 0);
    assert_int_equal(prev, c.recorded);
    IDM_ASSERT_OK(BE->release(be, prev));
    BE->close(be);
    leasetest_end(&t);
}

/* Handles that do not parse: IDM_EINVAL, nothing opened or written. A
 * handle of worker 0 given with worker 1 (whose record holds another
 * crashed claim's token): IDM_ELEASE, nothing written; each handle with its
 * own worker id resumes its claim. */
static void file_reattach_bad_handles(void **unused)
{
    static const char *const garbled[] = {
        "", "0", "xyz", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF",
        "0000000000000000", " 123456789abcdef", "0123456789abcdeg", "0:1",
    };
    leasetest_dir t = leasetest_begin();
    child c0 = child_claim(t.dir), c1 = child_claim(t.dir);
    void *be = open_be(t.dir);
    char *rec1 = lock_path(t.dir, 1), *mrec1 = marks_file(t.dir, 1);
    char before[REC_LEN], mbefore[REC_LEN], b0[REC_LEN];
    ssize_t n, mn, n0;
    (void)unused;
    assert_int_equal(c0.worker, 0);
    assert_int_equal(c1.worker, 1);
    crash(&c0);
    crash(&c1);
    n = bytes_of(rec1, before);
    mn = bytes_of(mrec1, mbefore);
    n0 = bytes_of(t.rec, b0);
    for (size_t i = 0; i < sizeof garbled / sizeof garbled[0]; i++) {
        int rc = reattach(be, 0, garbled[i], SCOPE, leasetest_wall_ms(), NULL);
        CHECK(rc == IDM_EINVAL, "handle '%s': %s (%s)", garbled[i], idm_err_name(rc),
              idm_error_detail());
    }
    unchanged(t.rec, b0, n0);
    IDM_ASSERT_RC(reattach(be, 1, c0.handle, SCOPE, leasetest_wall_ms(), NULL), IDM_ELEASE);
    detail_has("another claim since");
    unchanged(rec1, before, n);
    unchanged(mrec1, mbefore, mn);
    IDM_ASSERT_OK(reattach(be, 0, c0.handle, SCOPE, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    be = open_be(t.dir);
    IDM_ASSERT_OK(reattach(be, 1, c1.handle, SCOPE, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    free(rec1);
    free(mrec1);
    leasetest_end(&t);
}

/* H4: a record that cannot say whose claim it is (both slots damaged) or
 * cannot be read (a directory in its place): an error that is not
 * IDM_ELEASE, nothing written; repaired, the claim resumes. */
static void h4_file_reattach_unreadable_record(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = crashed_claim(t.dir);
    void *be = open_be(t.dir);
    char saved[REC_LEN], damaged[REC_LEN], mbefore[REC_LEN];
    ssize_t n = bytes_of(t.rec, saved), mn = bytes_of(t.mrec, mbefore);
    char *moved = idm_test_path(t.dir, "moved");
    int fd, rc;
    (void)unused;
    assert_int_equal(n, REC_LEN);
    memcpy(damaged, saved, sizeof damaged);
    damaged[20] ^= 1;   /* slot 0's line, its check no longer matches */
    damaged[4116] ^= 1; /* slot 1's */
    fd = open(t.rec, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, damaged, (size_t)n, 0), n);
    close(fd);
    rc = reattach(be, c.worker, c.handle, SCOPE, leasetest_wall_ms(), NULL);
    CHECK(rc == IDM_EIO, "damaged record: %s (%s)", idm_err_name(rc), idm_error_detail());
    detail_has("holds no valid record");
    unchanged(t.rec, damaged, n);
    unchanged(t.mrec, mbefore, mn);
    BE->close(be);
    /* A directory in the lock file's place. */
    assert_int_equal(rename(t.rec, moved), 0);
    assert_int_equal(mkdir(t.rec, 0700), 0);
    be = open_be(t.dir);
    rc = reattach(be, c.worker, c.handle, SCOPE, leasetest_wall_ms(), NULL);
    CHECK(rc == IDM_EIO, "a directory: %s (%s)", idm_err_name(rc), idm_error_detail());
    BE->close(be);
    assert_int_equal(rmdir(t.rec), 0);
    assert_int_equal(rename(moved, t.rec), 0);
    /* Repaired: resumed. */
    fd = open(t.rec, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, saved, (size_t)n, 0), n);
    close(fd);
    be = open_be(t.dir);
    IDM_ASSERT_OK(reattach(be, c.worker, c.handle, SCOPE, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    free(moved);
    leasetest_end(&t);
}

/* Another scope than the one recorded: IDM_EINVAL naming both, nothing
 * written, the lock left free; with the recorded scope, or none, it
 * resumes. */
static void file_reattach_other_scope(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = crashed_claim(t.dir);
    void *be = open_be(t.dir);
    char before[REC_LEN], mbefore[REC_LEN];
    ssize_t n = bytes_of(t.rec, before), mn = bytes_of(t.mrec, mbefore);
    bool held = true;
    (void)unused;
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, "another scope", leasetest_wall_ms(), NULL),
                  IDM_EINVAL);
    detail_has("hands out ids for '" SCOPE "'; this claimant asks for 'another scope'");
    unchanged(t.rec, before, n);
    unchanged(t.mrec, mbefore, mn);
    listed(be, c.worker, &held, NULL);
    assert_false(held);
    IDM_ASSERT_OK(reattach(be, c.worker, c.handle, NULL, leasetest_wall_ms(), NULL));
    IDM_ASSERT_OK(BE->release(be, leasetest_wall_ms()));
    BE->close(be);
    leasetest_end(&t);
}

/* Slot `at` of buf as an earlier build read it (its grammar: a valid
 * check, then "idmint-lease %u %llu %llu %63s"): 0 and its holder, else
 * -1. */
static int old_parse(const char *slot, char *holder)
{
    char line[129];
    const char *nl = memchr(slot, '\n', 128), *sp;
    unsigned long long s, m, check;
    unsigned v;
    size_t k;
    if (nl == NULL)
        return -1;
    k = (size_t)(nl - slot);
    memcpy(line, slot, k);
    line[k] = '\0';
    sp = strrchr(line, ' ');
    if (sp == NULL || sscanf(sp + 1, "%16llx", &check) != 1 || strlen(sp + 1) != 16 ||
        idm__lease_fnv1a(line, (size_t)(sp - line)) != check)
        return -1;
    return sscanf(line, "idmint-lease %u %llu %llu %63s", &v, &s, &m, holder) == 4 && v == 2
               ? 0
               : -1;
}

/* Write a version 2 record as an earlier build does (no token) to slot 1
 * of path, seq 9. */
static void put_old_record(const char *path, idm_unix_ms mark)
{
    char slot[128];
    int n, fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    memset(slot, ' ', sizeof slot);
    n = snprintf(slot, sizeof slot, "idmint-lease 2 9 %lld oldbuild", (long long)mark);
    n += snprintf(slot + n, sizeof slot - (size_t)n, " %016" PRIx64 "\n",
                  idm__lease_fnv1a(slot, (size_t)n));
    slot[n] = ' ';
    slot[sizeof slot - 1] = '\n';
    assert_int_equal(pwrite(fd, slot, sizeof slot, 4096), (ssize_t)sizeof slot);
    close(fd);
}

/* H7: a lock record with a token reads, to an earlier build's grammar, as
 * one with the holder and check it always had; a record an earlier build
 * wrote over the claim's (no token) names no claim: IDM_ELEASE, nothing
 * written, and its mark is honoured by the next claim. */
static void h7_file_record_token_across_versions(void **unused)
{
    leasetest_dir t = leasetest_begin();
    child c = crashed_claim(t.dir);
    void *be = open_be(t.dir);
    char buf[REC_LEN], holder[64] = "", want[IDM_LEASE_HANDLE_MAX + 8];
    ssize_t n = bytes_of(t.rec, buf);
    idm_unix_ms prev = 0;
    const char *slot;
    (void)unused;
    /* The claim's write is in slot 1 (a new file), with its token. */
    assert_int_equal(n, REC_LEN);
    slot = buf + 4096;
    snprintf(want, sizeof want, " t=%s ", c.handle);
    CHECK(memmem(slot, 128, want, strlen(want)) != NULL, "no token in '%.100s'", slot);
    assert_int_equal(old_parse(slot, holder), 0);
    assert_string_equal(holder, "child");
    /* An earlier build claims over it (seq above, no token). */
    put_old_record(t.rec, c.recorded + 50);
    n = bytes_of(t.rec, buf);
    IDM_ASSERT_RC(reattach(be, c.worker, c.handle, SCOPE, leasetest_wall_ms(), NULL),
                  IDM_ELEASE);
    detail_has("no claim token");
    unchanged(t.rec, buf, n);
    assert_int_equal(claim(be, "next", leasetest_wall_ms(), &prev), 0);
    assert_int_equal(prev, c.recorded + 50);
    IDM_ASSERT_OK(BE->release(be, prev));
    BE->close(be);
    leasetest_end(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(e12_file_reattach_after_kill9),
        cmocka_unit_test(e3_file_reattach_claimed_since),
        cmocka_unit_test(h5_file_reattach_while_holder_alive),
        cmocka_unit_test(e4_file_reattach_lock_file_removed),
        cmocka_unit_test(file_reattach_bad_handles),
        cmocka_unit_test(h4_file_reattach_unreadable_record),
        cmocka_unit_test(file_reattach_other_scope),
        cmocka_unit_test(h7_file_record_token_across_versions),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests_name("file reattach", tests, NULL, NULL);
}
