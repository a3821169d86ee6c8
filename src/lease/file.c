/* SPDX-License-Identifier: MIT */
/*
 * The file lease backend (file:///dir): worker id N is the file
 * dir/worker-NNNN.lease, held with an open-file-description write lock
 * (fcntl F_OFD_SETLK). The kernel drops the lock when the holder dies, so a
 * crashed process frees its id at once; the record in the file survives it,
 * so the next holder knows the mark. OFD locks rather than flock because a
 * lister can test one (F_OFD_GETLK) without taking it, so listing never
 * makes a claim skip a free id.
 *
 * A record is one text line, "idmint-lease 2 <seq> <mark_ms> <holder>
 * [t=<token>] <check>", in one of two 128-byte slots written in turn
 * (slot seq % 2), each write followed by fdatasync: a write torn by a crash
 * damages one slot and the other still holds the previous mark. <check> is
 * a 64-bit FNV-1a of the line before it, in hex. Slot 0 is at offset 0,
 * slot 1 at offset 4096, in another 4 KiB block (and so another sector), so
 * that one torn or lost sector or block cannot take both; a write of slot 0
 * also zeroes bytes 128..255. A claim's first write goes to the slot that
 * does not hold the record it read, and to slot 1 in a new, damaged or
 * version 1 file, so the file is 4224 bytes long from its first complete
 * write on.
 *
 * The token (16 hex digits, only in lock files) is a random number each
 * claim draws and writes with each of its records but the release's: the
 * claim's handle, with which a process restarted after a crash resumes
 * that claim (reattach, below). Earlier builds wrote no token; they read a
 * record with one as before, as <holder> is the word after the mark and
 * <check> the last. A holder is cut to fit its slot (at least 34 bytes
 * with a token, 53 without).
 *
 * Version 1 files (earlier builds: "idmint-lease 1", slots at 0 and 128,
 * 256 bytes) are read as they are and rewritten in this layout by their
 * next claim. How a reader tells them apart: a file of exactly 256 bytes is
 * version 1 and only version 1 lines count in it; a file of at least 4224
 * bytes is version 2. A version 1 line in a version 2 file (a claim that
 * converted the file and died before its second write, or an older build
 * that wrote into a newer file) makes the reader take the highest mark of
 * any valid slot rather than the newest: never lower than any holder
 * recorded. An older build finds no version 1 line in a version 2 file and
 * takes it as damaged (below), never as a lower mark.
 *
 * If no slot is valid, or the file is not empty but of another length (a
 * torn creation, a file cut short), the mark is taken as the file's
 * modification time plus the longest TTL a lease may have, plus some slack:
 * a holder records at most its renewal's send time plus its TTL, so no mark
 * it recorded can be later. The seq of the next write is always above any
 * slot that still parses, so that a stale slot can never outrank it. An
 * empty file is a new one: no holder recorded anything in it. A file that
 * cannot be read (or stat'ed) fails the claim or the listing with IDM_EIO;
 * it never reads as a new file, since a guessed mark could be below one the
 * last holder minted up to.
 *
 * Marks kept apart from the lock files: each mark is also recorded, before
 * the lock file's record, in dir/marks/worker-NNNN.mark (same records and
 * layout), which the removal of a lock file does not touch. A claimant takes
 * the lock file's lock, then the marks file's lock (an OFD write lock held
 * only while a record is read and written), and starts above the higher of
 * the two marks; a holder, under the marks file's lock, first checks that
 * its lock file is still the one at its path, then records. So an operator
 * who removes a lock file under a live holder cannot make a new claimant
 * start below the old holder's mark: either the old holder's record came
 * first and the claimant reads it, or the claimant's new file came first
 * and the old holder finds its claim lost and records nothing, and it only
 * ever mints up to marks already recorded. The old holder's release
 * records nothing either (its exact final mark could be below the new
 * holder's). A removed marks file (or dir/marks) is made again by the
 * holder's next renewal. Not covered: removing both a lock file and the
 * marks (or the whole directory) while holders run, between two renewals:
 * no file can keep a record its deleter removes. A directory without
 * dir/marks (made by an older idmint) is read from its lock files alone.
 *
 * Network file systems (NFS, SMB/CIFS, 9P, FUSE, Ceph, AFS, GFS2, OCFS2,
 * Lustre, ...) are refused when the directory is opened: their locks are
 * leases of another server with their own expiry, which a client cut off
 * for longer than that can outlive while it still mints.
 *
 * The scope (what the directory's worker ids are ids of, see lease.h) is
 * the file dir/scope: the scope and a newline, nothing else. The first
 * claimant with a scope writes it to a temporary file of its own, fsyncs
 * it, then link()s it to dir/scope, which fails with EEXIST if another got
 * there first, and fsyncs the directory: the file appears whole or not at
 * all, and exactly one of two racing first claimants records its scope.
 * Every claimant with a scope reads and compares it before it opens any
 * record file, so a refused one creates, locks and writes nothing.
 *
 * Restarts (reattach): the kernel dropped a crashed holder's lock, so a
 * restarted process takes the lock of exactly its saved worker id
 * (non-blocking) and resumes the claim if the record still holds the
 * claim's token; the marks rise as at a renewal. Anything else is
 * IDM_ELEASE, nothing written: the lock held by a live process (the
 * original holder, or a claimant since), the lock file removed, a record
 * of another claim (another token), of a release or of an earlier build
 * (none). A record that cannot be read, or none of whose slots is valid,
 * cannot say: IDM_EIO.
 *
 * What it does not do: work across machines (flock is local), expire a
 * live holder (it holds its id as long as it lives), or remove a recorded
 * scope. A temporary scope file left by a claimant killed between writing
 * and linking it (dir/.scope.<pid>.<n>.tmp) is never read; remove it at
 * will.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "common.h"
#include "lease_internal.h"

#define SLOT 128
/* Version 1: both slots in the first 256 bytes. */
#define V1_LEN (2 * SLOT)
/* Version 2: slot 1 in the second 4 KiB block. */
#define SLOT1_AT 4096
#define V2_LEN (SLOT1_AT + SLOT)

/* Test builds only (IDM_TEST_HOOKS, see lease_internal.h). */
#ifdef IDM_TEST_HOOKS
void (*idm__lease_file_test_hook)(const char *point);
#define TEST_HOOK(point)                                                      \
    do {                                                                      \
        if (idm__lease_file_test_hook != NULL)                                \
            idm__lease_file_test_hook(point);                                 \
    } while (0)
#else
#define TEST_HOOK(point) ((void)0)
#endif

/* Room for a modification time coarser than the clock marks are read from:
 * up to a jiffy behind it on Linux, whole or even seconds on some file
 * systems. */
#define LOST_RECORD_SLACK_MS INT64_C(5000)

typedef struct file_be {
    char *dir;
    int fd;             /* the held id's lock file, -1 if none */
    int mfd;            /* its marks file, -1 if not open */
    uint32_t worker;
    uint64_t seq;       /* last record written to the lock file */
    uint64_t token;     /* the claim's, in its lock file records */
    char holder[64];
    char path[4096];    /* the lock file */
    char mpath[4096];   /* the marks file */
} file_be;

uint64_t idm__lease_fnv1a(const char *s, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* The token field of a record: " t=" and 16 hex digits. */
#define TOKEN_FIELD 19

/* Exactly 16 lowercase hex digits at s (s holds at least 16 bytes, or a
 * NUL before): 0 and their value, else -1. */
static int hex16(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* Parse one slot; 0 and its version (1 or 2), seq, mark, token (0 if
 * none) and holder if valid. */
static int parse_slot(const char *slot, int *version, uint64_t *seq, idm_unix_ms *mark,
                      uint64_t *token, char *holder, size_t hlen)
{
    char line[SLOT + 1], h[64] = "";
    const char *nl = memchr(slot, '\n', SLOT), *sp;
    unsigned long long s, m, check;
    unsigned v;
    size_t n, body;
    int at = 0;
    if (nl == NULL)
        return -1;
    n = (size_t)(nl - slot);
    memcpy(line, slot, n);
    line[n] = '\0';
    sp = strrchr(line, ' ');
    if (sp == NULL || sscanf(sp + 1, "%16llx", &check) != 1 || strlen(sp + 1) != 16 ||
        idm__lease_fnv1a(line, (size_t)(sp - line)) != check)
        return -1;
    body = (size_t)(sp - line);
    line[body] = '\0';
    if (sscanf(line, "idmint-lease %u %llu %llu%n", &v, &s, &m, &at) != 3 || (v != 1 && v != 2))
        return -1;
    /* A version 2 line may end with the claim's token (none is 0). */
    *token = 0;
    if (v == 2 && body >= (size_t)at + TOKEN_FIELD &&
        memcmp(line + body - TOKEN_FIELD, " t=", 3) == 0 &&
        hex16(line + body - 16, token) == 0)
        line[body - TOKEN_FIELD] = '\0';
    /* The holder: the next word (none if its writer had none). */
    if (sscanf(line + at, "%63s", h) != 1)
        h[0] = '\0';
    *version = (int)v;
    *seq = s;
    *mark = (idm_unix_ms)m;
    if (holder != NULL)
        snprintf(holder, hlen, "%s", h);
    return 0;
}

/* The mark of a file whose record is lost: its modification time (the
 * last write, torn or not) plus the longest TTL and the slack. A time out of
 * range saturates rather than overflows. */
static int lost_record_mark(int fd, const char *path, idm_unix_ms *mark)
{
    const int64_t add = IDM_LEASE_TTL_MAX_MS + LOST_RECORD_SLACK_MS;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return idm_error_fail(IDM_EIO, "lease: cannot stat %s: %s", path, strerror(errno));
    if (st.st_mtim.tv_sec < 0)
        *mark = add;
    else if (st.st_mtim.tv_sec >= (INT64_MAX - add) / 1000 - 1)
        *mark = INT64_MAX;
    else
        *mark = (idm_unix_ms)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 + add;
    return 0;
}

/* What read_record found. */
typedef struct record {
    uint64_t seq;     /* the highest seq of any slot that parses, 0 if none */
    idm_unix_ms mark; /* the mark to honour */
    int next_slot;    /* where the next write must go: not over the record read */
    bool empty;       /* a new file */
    bool damaged;     /* no valid slot: mark is lost_record_mark's */
    uint64_t token;   /* the token of the record honoured, 0 if none */
    char holder[64];
} record;

/*
 * The record of an open file (see the comment at the top): seq and mark 0
 * for an empty (new) file; for a damaged one (no valid slot, or the file's
 * length), the fallback of lost_record_mark. Returns 0, or IDM_EIO with a
 * detail naming path if the file cannot be read.
 */
static int read_record(int fd, const char *path, record *r)
{
    /* Where a slot may start, and which slot a write there is. */
    static const struct {
        size_t at;
        int slot;
    } where[3] = {{0, 0}, {SLOT, 0}, {SLOT1_AT, 1}};
    char buf[V2_LEN], h[3][64];
    size_t n = 0;
    int best = -1;
    bool counts[3] = {false, false, false}, mixed = false;
    uint64_t seq[3] = {0, 0, 0}, token[3] = {0, 0, 0};
    idm_unix_ms mark[3] = {0, 0, 0};
    memset(r, 0, sizeof *r);
    r->next_slot = 1;
    while (n < sizeof buf) {
        ssize_t got = pread(fd, buf + n, sizeof buf - n, (off_t)n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return idm_error_fail(IDM_EIO, "lease: cannot read %s: %s", path, strerror(errno));
        if (got == 0)
            break;
        n += (size_t)got;
    }
    if (n == 0) {
        r->empty = true; /* a new file: no holder before us */
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        int v;
        if (where[i].at + SLOT > n ||
            parse_slot(buf + where[i].at, &v, &seq[i], &mark[i], &token[i], h[i],
                       sizeof h[i]) != 0)
            continue;
        /* Whatever counts, the next write goes above every seq in the
         * file, so that a stale slot never outranks it. */
        if (seq[i] > r->seq)
            r->seq = seq[i];
        if (n == V1_LEN) /* version 1: its lines at 0 and 128 */
            counts[i] = v == 1;
        else if (n >= V2_LEN) /* version 2 at 0 and 4096; version 1 left at 0 or 128 */
            counts[i] = v == 2 ? where[i].at != SLOT : where[i].at != SLOT1_AT;
        /* Any other length: every completed write leaves a file of one of
         * those two, so it lost a write or was cut, and a slot that
         * parses may not be the newest. */
        mixed = mixed || (counts[i] && n >= V2_LEN && v == 1);
    }
    for (int i = 0; i < 3; i++) {
        if (!counts[i])
            continue;
        /* The newest; in a file with lines of both versions, the highest
         * mark (the versions' seqs are not comparable). */
        if (best < 0 || (mixed ? mark[i] > mark[best] : seq[i] > seq[best]))
            best = i;
    }
    if (best < 0) {
        int rc = lost_record_mark(fd, path, &r->mark);
        if (rc != 0)
            return rc;
        r->damaged = true;
        snprintf(r->holder, sizeof r->holder, "(damaged record)");
        return 0;
    }
    r->mark = mark[best];
    r->token = token[best];
    r->next_slot = 1 - where[best].slot;
    snprintf(r->holder, sizeof r->holder, "%s", h[best]);
    return 0;
}

/* The seq of the next write after seq that goes to slot. */
static uint64_t seq_for_slot(uint64_t seq, int slot)
{
    return (seq + 1) % 2 == (uint64_t)slot ? seq + 1 : seq + 2;
}

/* The fault sites of the two record files' writes and syncs. */
typedef struct sites {
    const char *write, *fsync;
} sites;
static const sites lock_sites = {"lease-file.write", "lease-file.fsync"};
static const sites marks_sites = {"lease-file.marks-write", "lease-file.marks-fsync"};

/*
 * Write record seq (mark, holder, token unless 0) to its slot of fd (path,
 * for the detail) and fdatasync. Slot 0 is written with 128 zero bytes
 * after it, which clears a version 1 file's second slot. The holder is cut
 * if the line would not fit its slot.
 */
static int write_slot(int fd, const char *path, const sites *at_site, uint64_t seq,
                      idm_unix_ms mark, const char *holder, uint64_t token)
{
    char buf[2 * SLOT];
    size_t len = seq % 2 == 1 ? SLOT : 2 * SLOT;
    off_t at = seq % 2 == 1 ? SLOT1_AT : 0;
    size_t n, hl;
    memset(buf, 0, sizeof buf);
    memset(buf, ' ', SLOT);
    /* At most 57 bytes; the check after the holder takes 18 (" ", 16 hex
     * digits, "\n"), which leaves at least 53 for the holder, 34 with a
     * token. */
    n = (size_t)snprintf(buf, SLOT, "idmint-lease 2 %" PRIu64 " %lld ", seq, (long long)mark);
    hl = strnlen(holder, SLOT - 18 - n - (token != 0 ? TOKEN_FIELD : 0));
    memcpy(buf + n, holder, hl);
    n += hl;
    if (token != 0)
        n += (size_t)snprintf(buf + n, SLOT - n, " t=%016" PRIx64, token);
    n += (size_t)snprintf(buf + n, SLOT - n, " %016" PRIx64, idm__lease_fnv1a(buf, n));
    buf[n] = '\n'; /* over snprintf's NUL: the slot is padded with spaces */
    buf[SLOT - 1] = '\n';
    if (idm__fault(at_site->write) != 0 || pwrite(fd, buf, len, at) != (ssize_t)len ||
        idm__fault(at_site->fsync) != 0 || fdatasync(fd) != 0)
        return idm_error_fail(IDM_EIO, "lease: cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* A lock of type (F_WRLCK, F_UNLCK) on the whole file: take it (cmd
 * F_OFD_SETLK), take or release it and wait (F_OFD_SETLKW, retried on
 * EINTR), or test it (F_OFD_GETLK; *found: the type of the lock found). */
static int ofd_lock(int fd, int cmd, short type, short *found)
{
    struct flock fl;
    int rc;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    while ((rc = fcntl(fd, cmd, &fl)) != 0 && cmd == F_OFD_SETLKW && errno == EINTR)
        ;
    if (rc == 0 && found != NULL)
        *found = fl.l_type;
    return rc;
}

static void worker_path(const file_be *f, uint32_t n, char *out, size_t len)
{
    snprintf(out, len, "%s/worker-%04u.lease", f->dir, n);
}

static void marks_dir(const file_be *f, char *out, size_t len)
{
    snprintf(out, len, "%s/marks", f->dir);
}

static void marks_path(const file_be *f, uint32_t n, char *out, size_t len)
{
    snprintf(out, len, "%s/marks/worker-%04u.mark", f->dir, n);
}

/* fd and path are the same file (and path exists). */
static bool same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

/*
 * Open path with flags (O_NONBLOCK while opening: an open for reading of a
 * FIFO waits for a writer), a regular file only; site names the fault site
 * of an open that may create the file (NULL for one that only reads). 0
 * and *fd; 1 if path does not exist (and flags has no O_CREAT); IDM_EIO
 * with a detail naming path otherwise.
 */
static int open_regular(const char *path, int flags, const char *site, int *fd)
{
    const char *kind = NULL;
    *fd = -1;
    if (site == NULL || idm__fault(site) == 0)
        *fd = idm__open_regular(path, flags, 0600, &kind);
    if (*fd >= 0)
        return 0;
    if (errno == ENOENT && !(flags & O_CREAT))
        return 1;
    /* (a directory as the system says it, as earlier versions did) */
    if (kind != NULL)
        return idm_error_fail(IDM_EIO, "lease: %s is not a regular file: %s", path,
                              strcmp(kind, idm__file_kind(S_IFDIR)) == 0 ? strerror(EISDIR)
                                                                         : kind);
    return idm_error_fail(IDM_EIO, "lease: cannot open %s: %s", path, strerror(errno));
}

/* ----------------------------------------------------------------- scope */

static void scope_path(const file_be *f, char *out, size_t len)
{
    snprintf(out, len, "%s/scope", f->dir);
}

/*
 * The recorded scope into buf (cap >= IDM_LEASE_SCOPE_MAX + 1 bytes, not
 * NUL-terminated) and *len: 0, or 1 if none is recorded, or IDM_EIO with a
 * detail naming the file if it cannot be read or holds no scope (one line
 * of 1 to IDM_LEASE_SCOPE_MAX - 1 bytes; any bytes but the newline, so a
 * scope written by hand is compared, and shown, rather than taken for
 * damage).
 */
static int read_scope(const file_be *f, char *buf, size_t cap, size_t *len)
{
    char path[4096];
    size_t n = 0;
    int fd, rc;
    scope_path(f, path, sizeof path);
    rc = open_regular(path, O_RDONLY, NULL, &fd);
    if (rc != 0)
        return rc;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = idm_error_fail(IDM_EIO, "lease: cannot read %s: %s", path, strerror(errno));
            close(fd);
            return rc;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n < 2 || n >= IDM_LEASE_SCOPE_MAX + 1 || buf[n - 1] != '\n' ||
        memchr(buf, '\n', n - 1) != NULL)
        return idm_error_fail(IDM_EIO,
                              "lease: %s holds no scope (one line of 1 to %d bytes); remove it "
                              "only if no holder is left",
                              path, IDM_LEASE_SCOPE_MAX - 1);
    *len = n - 1;
    return 0;
}

/* fsync the directory (fault site `site`), so that a link or a new file in
 * it survives a crash. */
static int sync_dir(const char *dir, const char *site)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
    if (fd < 0 || idm__fault(site) != 0 || fsync(fd) != 0)
        rc = idm_error_fail(IDM_EIO, "lease: cannot sync directory %s: %s", dir, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Record scope as dir/scope unless one is recorded: 0 if it is ours now,
 * 1 if another claimant's link came first (EEXIST), IDM_EIO otherwise. */
static int record_scope(const file_be *f, const char *scope)
{
    static atomic_uint counter;
    char tmp[4096], path[4096];
    size_t n = strlen(scope);
    int fd = -1, rc = 0;
    scope_path(f, path, sizeof path);
    /* A name of our own: pid and a counter (threads of one process claim
     * at once too); past a leftover of a dead process with our pid, the
     * next number. */
    for (int tries = 0; fd < 0; tries++) {
        snprintf(tmp, sizeof tmp, "%s/.scope.%ld.%u.tmp", f->dir, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = idm__fault("lease-file.scope-open") != 0
                 ? -1
                 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && (errno != EEXIST || tries == 8))
            return idm_error_fail(IDM_EIO, "lease: cannot create %s: %s", tmp, strerror(errno));
    }
    if (idm__fault("lease-file.scope-write") != 0 || write(fd, scope, n) != (ssize_t)n ||
        write(fd, "\n", 1) != 1 || idm__fault("lease-file.scope-fsync") != 0 || fsync(fd) != 0)
        rc = idm_error_fail(IDM_EIO, "lease: cannot write %s: %s", tmp, strerror(errno));
    close(fd);
    if (rc == 0 && (idm__fault("lease-file.link") != 0 || link(tmp, path) != 0)) {
        if (errno == EEXIST)
            rc = 1;
        else
            rc = idm_error_fail(IDM_EIO, "lease: cannot link %s to %s: %s", tmp, path,
                                strerror(errno));
    }
    /* A temporary file left behind is never read: a failed unlink is no
     * failure of the claim. */
    if (idm__fault("lease-file.unlink") == 0)
        (void)unlink(tmp);
    /* The link must outlive a crash: a directory that lost it while worker
     * records of this scope remain could record another. */
    if (rc == 0)
        rc = sync_dir(f->dir, "lease-file.scope-fsyncdir");
    return rc;
}

/* Before a claim: the recorded scope must be ours; record ours if none is.
 * Refusals change nothing. */
static int check_scope(const file_be *f, const char *scope)
{
    char rec[IDM_LEASE_SCOPE_MAX + 1], where[4200];
    size_t len = 0;
    int rc;
    for (int tries = 0;; tries++) {
        rc = read_scope(f, rec, sizeof rec, &len);
        if (rc != 1)
            break;
        rc = record_scope(f, scope);
        if (rc != 1)
            return rc; /* ours now, or an error */
        /* Another's came first: read it. It cannot go away again unless
         * removed by hand. */
        if (tries == 3)
            return idm_error_fail(IDM_EIO, "lease: %s/scope keeps appearing and vanishing", f->dir);
    }
    if (rc != 0)
        return rc;
    if (len == strlen(scope) && memcmp(rec, scope, len) == 0)
        return 0;
    snprintf(where, sizeof where, "file://%s", f->dir);
    return idm__lease_scope_refuse(where, rec, len, scope);
}

static int fb_scope(void *be, char *buf, size_t cap)
{
    file_be *f = be;
    char rec[IDM_LEASE_SCOPE_MAX + 1], where[4200];
    size_t len = 0;
    int rc = read_scope(f, rec, sizeof rec, &len);
    buf[0] = '\0';
    if (rc == 1)
        return 0;
    if (rc != 0)
        return rc;
    snprintf(where, sizeof where, "file://%s", f->dir);
    return idm__lease_scope_text(where, rec, len, buf, cap);
}

/* ----------------------------------------------------------------- marks */

/*
 * Lock the held id's marks file, f->mpath, opening (and creating) it and
 * dir/marks if needed: 0 with the lock held on f->mfd, which is the file at
 * f->mpath. A marks file removed or replaced between the open and the lock
 * is opened again. The descriptor stays open for the next record: a child
 * forked while the lock is held shares the open file description, so the
 * unlock that follows frees it for everyone.
 */
static int marks_lock(file_be *f)
{
    char mdir[4096];
    for (int tries = 0;; tries++) {
        if (f->mfd < 0) {
            int rc;
            marks_dir(f, mdir, sizeof mdir);
            if ((idm__fault("lease-file.marks-mkdir") != 0 || mkdir(mdir, 0700) != 0) &&
                errno != EEXIST)
                return idm_error_fail(IDM_EIO, "lease: cannot make directory %s: %s", mdir,
                                      strerror(errno));
            rc = open_regular(f->mpath, O_RDWR | O_CREAT, "lease-file.marks-open", &f->mfd);
            if (rc != 0)
                return rc;
        }
        if (ofd_lock(f->mfd, F_OFD_SETLKW, F_WRLCK, NULL) != 0)
            return idm_error_fail(IDM_EIO, "lease: cannot lock %s: %s", f->mpath, strerror(errno));
        if (same_file(f->mfd, f->mpath))
            return 0;
        ofd_lock(f->mfd, F_OFD_SETLKW, F_UNLCK, NULL);
        close(f->mfd);
        f->mfd = -1;
        if (tries == 8)
            return idm_error_fail(IDM_EIO, "lease: %s keeps vanishing", f->mpath);
    }
}

/*
 * Record mark in the held id's marks file, under its lock, if the id's
 * lock file is still ours (the one at its path): raised to the mark the
 * file holds, or with exact as it is (the final mark at release). *held:
 * the mark the file held, 0 if none. Returns 0; 1 if our lock file was
 * removed or replaced (nothing recorded); IDM_EIO with a detail. The check
 * and the record under one lock keep a new claimant of a removed lock file
 * above us (see the comment at the top).
 */
static int marks_record(file_be *f, idm_unix_ms mark, bool exact, idm_unix_ms *held)
{
    record r;
    int rc = marks_lock(f);
    if (rc != 0)
        return rc;
    memset(&r, 0, sizeof r);
    rc = same_file(f->fd, f->path) ? read_record(f->mfd, f->mpath, &r) : 1;
    if (rc == 0) {
        TEST_HOOK("marks checked");
        *held = r.mark;
        rc = write_slot(f->mfd, f->mpath, &marks_sites, seq_for_slot(r.seq, r.next_slot),
                        exact || mark > r.mark ? mark : r.mark, f->holder, 0);
    }
    if (rc == 0 && r.empty) {
        /* A new file (and perhaps a new dir/marks): its name must outlive
         * a crash as its record does. */
        char mdir[4096];
        marks_dir(f, mdir, sizeof mdir);
        rc = sync_dir(mdir, "lease-file.marks-fsyncdir");
        if (rc == 0)
            rc = sync_dir(f->dir, "lease-file.fsyncdir");
    }
    ofd_lock(f->mfd, F_OFD_SETLKW, F_UNLCK, NULL);
    return rc;
}

/* --------------------------------------------------------- file systems */

/* File systems shared between machines (or with a host), by statfs(2)
 * f_type: their locks are kept by a server, or not shared at all. */
static const struct {
    uint32_t magic;
    const char *name;
} network_fs[] = {
    {0x6969, "NFS"},          {0x517B, "SMB"},          {0xFF534D42, "CIFS"},
    {0xFE534D42, "SMB2"},     {0x01021997, "9P"},       {0x65735546, "FUSE"},
    {0x00C36400, "Ceph"},     {0x5346414F, "AFS"},      {0x6B414653, "kAFS"},
    {0x73757245, "Coda"},     {0x564C, "NCP"},          {0x01161970, "GFS2"},
    {0x7461636F, "OCFS2"},    {0x0BD00BD0, "Lustre"},   {0x47504653, "GPFS"},
    {0x20030528, "OrangeFS"}, {0x19830326, "BeeGFS"},   {0xAAD7AAEA, "PanFS"},
    {0xBEEFDEAD, "StorNext"}, {0x013111A8, "IBRIX"},    {0x61636673, "ACFS"},
    {0x786F4256, "vboxsf"},   {0x7C7C6673, "prl_fs"},
};

/* The name of a network file system's f_type, NULL for any other. The
 * magic is 32 bits; f_type may have been sign-extended. */
static const char *network_fs_name(unsigned long f_type)
{
    for (size_t i = 0; i < sizeof network_fs / sizeof network_fs[0]; i++)
        if ((uint32_t)f_type == network_fs[i].magic)
            return network_fs[i].name;
    return NULL;
}

int idm__lease_fs_is_network(unsigned long f_type)
{
    return network_fs_name(f_type) != NULL;
}

/* ---------------------------------------------------------------- backend */

static int fb_open(void **be, const char *rest, const idm_lease_opts *opts)
{
    file_be *f;
    struct stat st;
    struct statfs sf;
    const char *net;
    (void)opts;
    if (rest[0] != '/')
        return idm_error_fail(IDM_EINVAL,
                              "lease: file URL needs an absolute directory, as file:///dir");
    if (strlen(rest) > 3000)
        return idm_error_fail(IDM_EINVAL, "lease: directory name too long");
    /* Two processes may create it at once: EEXIST is success. */
    if (((idm__fault("lease-file.mkdir") != 0 || mkdir(rest, 0700) != 0) && errno != EEXIST) ||
        stat(rest, &st) != 0)
        return idm_error_fail(IDM_EIO, "lease: cannot use directory %s: %s", rest, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return idm_error_fail(IDM_EINVAL, "lease: %s is not a directory", rest);
    if (statfs(rest, &sf) != 0)
        return idm_error_fail(IDM_EIO, "lease: cannot use directory %s: %s", rest, strerror(errno));
    net = network_fs_name((unsigned long)sf.f_type);
    if (net != NULL)
        return idm_error_fail(IDM_EINVAL,
                              "lease: %.100s is on a network file system (%s); file:// leases "
                              "are for one machine: use etcd:// to share worker ids between "
                              "machines",
                              rest, net);
    f = calloc(1, sizeof *f);
    if (f == NULL || (f->dir = strdup(rest)) == NULL) {
        free(f);
        return IDM_ENOMEM;
    }
    f->fd = -1;
    f->mfd = -1;
    *be = f;
    return 0;
}

/* Let go of the held id's files (closing the lock file drops its lock). */
static void drop_files(file_be *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->mfd >= 0)
        close(f->mfd);
    f->fd = -1;
    f->mfd = -1;
}

/* A claim's token: random, never 0. It names a claim among the claims of
 * its id (it is no secret: the lock file shows it), so without entropy
 * (getrandom failing this early in a boot) the times and pid serve. */
static uint64_t new_token(void)
{
    static atomic_uint counter;
    uint64_t t = 0;
    if (getrandom(&t, sizeof t, GRND_NONBLOCK) != (ssize_t)sizeof t) {
        struct timespec ts;
        char b[96];
        int n;
        clock_gettime(CLOCK_REALTIME, &ts);
        n = snprintf(b, sizeof b, "%lld %lld.%09ld %ld %u", (long long)idm__mono_ns(),
                     (long long)ts.tv_sec, ts.tv_nsec, (long)getpid(),
                     atomic_fetch_add(&counter, 1));
        t = idm__lease_fnv1a(b, (size_t)n);
    }
    return t != 0 ? t : 1;
}

static int fb_claim(void *be, uint32_t max_workers, int64_t ttl_ms, const char *holder,
                    const char *scope, idm_unix_ms want, uint32_t *worker,
                    idm_unix_ms *prev_mark, idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    file_be *f = be;
    if (scope != NULL) {
        int rc = check_scope(f, scope);
        if (rc != 0)
            return rc;
    }
    snprintf(f->holder, sizeof f->holder, "%s", holder);
    for (uint32_t n = 0; n < max_workers; n++) {
        char path[4096];
        int fd, rc;
        record r;
        idm_unix_ms held = 0, mark;
        worker_path(f, n, path, sizeof path);
        rc = open_regular(path, O_RDWR | O_CREAT, "lease-file.open", &fd);
        if (rc != 0)
            return rc;
        if (ofd_lock(fd, F_OFD_SETLK, F_WRLCK, NULL) != 0) {
            int e = errno;
            close(fd);
            if (e == EAGAIN || e == EACCES)
                continue;
            return idm_error_fail(IDM_EIO, "lease: cannot lock %s: %s", path, strerror(e));
        }
        /* Ours. The file may have been unlinked by a releasing holder's
         * cleanup between our open and our lock: check it is still the one
         * at the path. */
        if (!same_file(fd, path)) {
            close(fd);
            n--; /* try the same id again */
            continue;
        }
        /* A record that cannot be read fails the claim: taking the id as a
         * new one (mark 0) could mint again what its last holder minted. */
        rc = read_record(fd, path, &r);
        if (rc != 0) {
            close(fd); /* drops the lock */
            return rc;
        }
        f->fd = fd;
        f->worker = n;
        snprintf(f->path, sizeof f->path, "%s", path);
        marks_path(f, n, f->mpath, sizeof f->mpath);
        /* The marks file first: it also holds the mark of a holder whose
         * lock file was removed (this one may be new), and it must hold
         * ours before anything is minted under it. */
        rc = marks_record(f, want > r.mark ? want : r.mark, false, &held);
        if (rc == 1) {
            drop_files(f); /* our file was removed in the meantime */
            n--;
            continue;
        }
        mark = held > r.mark ? held : r.mark;
        /* Then the lock file, with the mark raised to want (never
         * lowered): the claim is the first renewal. Its first write goes to
         * the slot that does not hold the record just read. */
        f->seq = seq_for_slot(r.seq, r.next_slot);
        f->token = new_token();
        if (rc == 0)
            rc = write_slot(fd, path, &lock_sites, f->seq, want > mark ? want : mark, f->holder,
                            f->token);
        if (rc != 0) {
            drop_files(f);
            return rc;
        }
        *worker = n;
        *prev_mark = mark;
        *recorded = want;
        *granted_ttl_ms = ttl_ms;
        return 0;
    }
    return idm_error_fail(IDM_EBUSY, "lease: no free worker id: all %u in %s are held",
                          (unsigned)max_workers, f->dir);
}

/* Record mark (exact: as it is, at the release, and without the token:
 * a released claim cannot be resumed) in the marks file, then the lock file:
 * only while the lock file is ours. The lock cannot expire while we live,
 * but the file can be removed (an operator cleaning up): then another
 * process could lock a new file of the same name, and the id would have
 * two holders. Checked under the marks file's lock (see marks_record). */
static int record_mark(file_be *f, idm_unix_ms mark, bool exact)
{
    idm_unix_ms held;
    int rc = marks_record(f, mark, exact, &held);
    if (rc == 1)
        return idm_error_fail(IDM_ELEASE,
                              "lease: %s was removed or replaced; the claim is lost", f->path);
    if (rc == 0 &&
        (rc = write_slot(f->fd, f->path, &lock_sites, f->seq + 1, mark, f->holder,
                         exact ? 0 : f->token)) == 0)
        f->seq++;
    return rc;
}

static int fb_renew(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms)
{
    (void)granted_ttl_ms;
    return record_mark(be, mark, false);
}

static int fb_release(void *be, idm_unix_ms mark)
{
    file_be *f = be;
    int rc;
    if (f->fd < 0)
        return 0;
    /* The exact final mark, which may be below the last one recorded. After
     * the lock file's removal a new holder may have recorded its own mark,
     * which ours must not lower; ours as recorded before covers every id we
     * minted. */
    rc = record_mark(f, mark, true);
    drop_files(f);
    return rc;
}

/* ------------------------------------------------------------- restarts */

/* The claim's handle: its token, 16 hex digits. */
static int fb_handle(void *be, char *buf, size_t len)
{
    file_be *f = be;
    if (f->fd < 0)
        return idm_error_fail(IDM_EINVAL, "lease: this file:// handle holds no claim");
    if (len < 17)
        return idm_error_fail(IDM_EINVAL, "lease: a file:// claim's handle needs 17 bytes");
    snprintf(buf, len, "%016" PRIx64, f->token);
    return 0;
}

/* The lock file of worker at path, for reattach: 0 and *fd with its lock
 * held, the file the one at path; IDM_ELEASE if there is none or a live
 * process holds it; IDM_EIO with a detail. */
static int reattach_lock(const char *path, uint32_t worker, int *fd)
{
    for (int tries = 0;; tries++) {
        int rc = open_regular(path, O_RDWR, "lease-file.open", fd);
        if (rc == 1)
            return idm_error_fail(IDM_ELEASE,
                                  "lease: %s is gone (removed): worker id %u's claim is lost",
                                  path, (unsigned)worker);
        if (rc != 0)
            return rc;
        if (ofd_lock(*fd, F_OFD_SETLK, F_WRLCK, NULL) != 0) {
            int e = errno;
            close(*fd);
            *fd = -1;
            if (e == EAGAIN || e == EACCES)
                return idm_error_fail(IDM_ELEASE,
                                      "lease: worker id %u is held by a live process (%s is "
                                      "locked): not this claim to resume",
                                      (unsigned)worker, path);
            return idm_error_fail(IDM_EIO, "lease: cannot lock %s: %s", path, strerror(e));
        }
        /* Replaced between the open and the lock: look again. */
        if (same_file(*fd, path))
            return 0;
        close(*fd);
        *fd = -1;
        if (tries == 8)
            return idm_error_fail(IDM_EIO, "lease: %s keeps vanishing", path);
    }
}

/*
 * Resume the claim of worker whose token is handle (see the top): its lock
 * taken, the record's token checked, then recorded as a renewal is (the
 * marks file first, then the lock file, the mark raised to the highest of
 * both records and ours). *recorded: that mark. Refusals write nothing;
 * only the scope, if none is recorded, is recorded as a claim does.
 */
static int fb_reattach(void *be, uint32_t worker, const char *handle, int64_t ttl_ms,
                       const char *holder, const char *scope, idm_unix_ms mark,
                       idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    file_be *f = be;
    char path[4096];
    uint64_t token = 0;
    idm_unix_ms held = 0, now;
    record r;
    int fd = -1, rc;
    if (f->fd >= 0)
        return idm_error_fail(IDM_EINVAL, "lease: this file:// handle holds a claim already");
    if (strlen(handle) != 16 || hex16(handle, &token) != 0 || token == 0)
        return idm_error_fail(IDM_EINVAL,
                              "lease: '%.40s' is not a file:// claim's handle (16 hex digits)",
                              handle);
    if (worker >= IDM_LEASE_WORKERS_MAX)
        return idm_error_fail(IDM_EINVAL, "lease: worker id %u is out of range",
                              (unsigned)worker);
    if (scope != NULL && (rc = check_scope(f, scope)) != 0)
        return rc;
    worker_path(f, worker, path, sizeof path);
    if ((rc = reattach_lock(path, worker, &fd)) != 0)
        return rc;
    rc = read_record(fd, path, &r);
    if (rc == 0 && r.damaged)
        rc = idm_error_fail(IDM_EIO,
                            "lease: %s holds no valid record: cannot tell whether it is worker "
                            "id %u's claim",
                            path, (unsigned)worker);
    else if (rc == 0 && r.token != token)
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: %s records %s: worker id %u's claim is gone", path,
                            r.empty      ? "no claim (a new file)"
                            : r.token == 0 ? "no claim token (a release, or an earlier idmint)"
                                           : "another claim since",
                            (unsigned)worker);
    if (rc != 0) {
        close(fd); /* drops the lock; nothing was written */
        return rc;
    }
    f->fd = fd;
    f->worker = worker;
    f->token = token;
    snprintf(f->holder, sizeof f->holder, "%s", holder);
    snprintf(f->path, sizeof f->path, "%s", path);
    marks_path(f, worker, f->mpath, sizeof f->mpath);
    rc = marks_record(f, mark > r.mark ? mark : r.mark, false, &held);
    if (rc == 1)
        rc = idm_error_fail(IDM_ELEASE, "lease: %s was removed or replaced; the claim is lost",
                            path);
    now = mark > r.mark ? mark : r.mark;
    if (held > now)
        now = held;
    /* The first write goes to the slot that does not hold the record
     * read, as a claim's does. */
    f->seq = seq_for_slot(r.seq, r.next_slot);
    if (rc == 0)
        rc = write_slot(fd, path, &lock_sites, f->seq, now, f->holder, f->token);
    if (rc != 0) {
        drop_files(f);
        return rc;
    }
    *recorded = now;
    *granted_ttl_ms = ttl_ms;
    return 0;
}

static int fb_list(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count)
{
    file_be *f = be;
    idm_lease_entry *e = NULL;
    size_t n = 0;
    for (uint32_t w = 0; w < max_workers; w++) {
        char path[4096], mpath[4096];
        int fd, mfd = -1, rc;
        record r;
        idm_lease_entry *grown;
        worker_path(f, w, path, sizeof path);
        marks_path(f, w, mpath, sizeof mpath);
        rc = open_regular(path, O_RDONLY, NULL, &fd);
        if (rc == 0 || rc == 1)
            rc = open_regular(mpath, O_RDONLY, NULL, &mfd);
        if (rc == 1 && fd < 0 && mfd < 0)
            continue; /* no record */
        grown = rc == 0 || rc == 1 ? realloc(e, (n + 1) * sizeof *e) : NULL;
        if (grown == NULL) { /* an error opening a file, or no memory */
            if (fd >= 0)
                close(fd);
            if (mfd >= 0)
                close(mfd);
            free(e);
            return rc == 0 || rc == 1 ? IDM_ENOMEM : rc;
        }
        e = grown;
        memset(&e[n], 0, sizeof e[n]);
        e[n].worker = w;
        rc = 0;
        if (fd >= 0) {
            short type = F_UNLCK;
            e[n].held = ofd_lock(fd, F_OFD_GETLK, F_WRLCK, &type) == 0 && type != F_UNLCK;
            /* An unreadable record is an error, not an id without a mark. */
            rc = read_record(fd, path, &r);
            if (rc == 0) {
                e[n].mark_ms = r.mark;
                snprintf(e[n].holder, sizeof e[n].holder, "%s", r.holder);
            }
            close(fd);
        }
        if (mfd >= 0) {
            /* The marks file: a mark at least as high, or the only one left
             * of an id whose lock file was removed. */
            if (rc == 0)
                rc = read_record(mfd, mpath, &r);
            if (rc == 0 && (fd < 0 || r.mark > e[n].mark_ms))
                e[n].mark_ms = r.mark;
            if (rc == 0 && fd < 0)
                snprintf(e[n].holder, sizeof e[n].holder, "%s", r.holder);
            close(mfd);
        }
        if (rc != 0) {
            free(e);
            return rc;
        }
        n++;
    }
    *entries = e;
    *count = n;
    return 0;
}

static void fb_close(void *be)
{
    file_be *f = be;
    drop_files(f);
    free(f->dir);
    free(f);
}

const idm__lease_backend idm__lease_file = {
    fb_open,  fb_claim, fb_renew, fb_release, fb_list,
    fb_scope, fb_close, NULL,     fb_handle,  fb_reattach,
};
