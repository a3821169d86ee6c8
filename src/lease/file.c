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
 * A record is one text line, "idmint-lease 1 <seq> <mark_ms> <holder>
 * <check>", in one of two 128-byte slots written in turn (slot seq % 2),
 * each write followed by fsync: a write torn by a crash damages one slot and
 * the other still holds the previous mark. <check> is a 64-bit FNV-1a of the
 * line before it, in hex. If both slots are damaged, or the file is
 * shorter than its two slots but not empty (a torn creation, or a file cut
 * short), the mark is taken as the file's modification time plus the longest
 * TTL a lease may have, plus some slack: a holder records at most its
 * renewal's send time plus its TTL, so no mark it recorded can be later. An
 * empty file is a new one: no holder recorded anything in it. A file that
 * cannot be read (or stat'ed) fails the claim or the listing with IDM_EIO;
 * it never reads as a new file, since a guessed mark could be below one the
 * last holder minted up to.
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
 * Record and scope files are opened with O_NONBLOCK and must be regular
 * files: an open for reading of a FIFO would wait for a writer forever.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "lease_internal.h"

#define SLOT 128
/* Room for a modification time coarser than the clock marks are read from:
 * up to a jiffy behind it on Linux, whole or even seconds on some file
 * systems. */
#define LOST_RECORD_SLACK_MS INT64_C(5000)

typedef struct file_be {
    char *dir;
    int fd;             /* the held id's file, -1 if none */
    uint32_t worker;
    uint64_t seq;       /* last record written */
    char holder[64];
    char path[4096];
} file_be;

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Parse one slot; 0 and its seq and mark if valid. */
static int parse_slot(const char *slot, uint64_t *seq, idm_unix_ms *mark, char *holder, size_t hlen)
{
    char line[SLOT + 1], h[64];
    const char *nl = memchr(slot, '\n', SLOT), *sp;
    unsigned long long s, m, check;
    size_t n;
    if (nl == NULL)
        return -1;
    n = (size_t)(nl - slot);
    memcpy(line, slot, n);
    line[n] = '\0';
    sp = strrchr(line, ' ');
    if (sp == NULL || sscanf(sp + 1, "%16llx", &check) != 1 || strlen(sp + 1) != 16 ||
        fnv1a(line, (size_t)(sp - line)) != check)
        return -1;
    if (sscanf(line, "idmint-lease 1 %llu %llu %63s", &s, &m, h) != 3)
        return -1;
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
    const int64_t add = IDM__LEASE_TTL_MAX_MS + LOST_RECORD_SLACK_MS;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return idm__lease_fail(IDM_EIO, "lease: cannot stat %s: %s", path, strerror(errno));
    if (st.st_mtim.tv_sec < 0)
        *mark = add;
    else if (st.st_mtim.tv_sec >= (INT64_MAX - add) / 1000 - 1)
        *mark = INT64_MAX;
    else
        *mark = (idm_unix_ms)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000 + add;
    return 0;
}

/* The newest valid record of an open file: its seq, mark and holder; seq
 * and mark 0 for an empty (new) file; for a damaged one (both slots, or the
 * file's length), seq 0 and the fallback of lost_record_mark. Returns 0, or
 * IDM_EIO with a detail naming path if the file cannot be read. */
static int read_record(int fd, const char *path, uint64_t *seq, idm_unix_ms *mark, char *holder,
                       size_t hlen)
{
    char buf[2 * SLOT];
    size_t n = 0;
    uint64_t s[2] = {0, 0};
    idm_unix_ms m[2] = {0, 0};
    char h[2][64] = {"", ""};
    int ok[2] = {0, 0};
    *seq = 0;
    *mark = 0;
    if (holder != NULL && hlen > 0)
        holder[0] = '\0';
    while (n < sizeof buf) {
        ssize_t r = pread(fd, buf + n, sizeof buf - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return idm__lease_fail(IDM_EIO, "lease: cannot read %s: %s", path, strerror(errno));
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n == 0)
        return 0; /* a new file: no holder before us */
    /* Every completed write leaves both slots in the file (the first one
     * written is the second slot), so a shorter file lost a write or was
     * cut: a slot that still parses may not be the newest. */
    if (n == sizeof buf) {
        ok[0] = parse_slot(buf, &s[0], &m[0], h[0], sizeof h[0]) == 0;
        ok[1] = parse_slot(buf + SLOT, &s[1], &m[1], h[1], sizeof h[1]) == 0;
    }
    if (!ok[0] && !ok[1]) {
        int rc = lost_record_mark(fd, path, mark);
        if (rc != 0)
            return rc;
        if (holder != NULL)
            snprintf(holder, hlen, "(damaged record)");
        return 0;
    }
    int i = !ok[0] ? 1 : !ok[1] ? 0 : s[1] > s[0];
    *seq = s[i];
    *mark = m[i];
    if (holder != NULL)
        snprintf(holder, hlen, "%s", h[i]);
    return 0;
}

static int write_record(file_be *f, idm_unix_ms mark)
{
    char slot[SLOT];
    int n;
    uint64_t seq = f->seq + 1;
    memset(slot, ' ', sizeof slot);
    n = snprintf(slot, sizeof slot, "idmint-lease 1 %" PRIu64 " %lld %s", seq, (long long)mark,
                 f->holder);
    n += snprintf(slot + n, sizeof slot - (size_t)n, " %016" PRIx64 "\n", fnv1a(slot, (size_t)n));
    slot[n] = ' '; /* snprintf's NUL: the slot is padded with spaces */
    slot[SLOT - 1] = '\n';
    if (pwrite(f->fd, slot, SLOT, (off_t)(seq % 2) * SLOT) != SLOT || fdatasync(f->fd) != 0)
        return idm__lease_fail(IDM_EIO, "lease: cannot write %s: %s", f->path, strerror(errno));
    f->seq = seq;
    return 0;
}

/* Take (F_OFD_SETLK) or test (F_OFD_GETLK) a write lock on the whole file. */
static int ofd_lock(int fd, int cmd, short *type)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, cmd, &fl) != 0)
        return -1;
    if (type != NULL)
        *type = fl.l_type;
    return 0;
}

static void worker_path(const file_be *f, uint32_t n, char *out, size_t len)
{
    snprintf(out, len, "%s/worker-%04u.lease", f->dir, n);
}

/* What a file that is not a regular one is, for the detail line. */
static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return strerror(EISDIR);
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    return "not a file";
}

/*
 * Open path with flags without blocking (an open for reading of a FIFO
 * waits for a writer), check that it is a regular file, then make the
 * descriptor blocking again. 0 and *fd; 1 if path does not exist (and
 * flags has no O_CREAT); IDM_EIO with a detail naming path otherwise.
 */
static int open_regular(const char *path, int flags, int *fd)
{
    struct stat st;
    int fl, rc = 0;
    *fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, 0600);
    if (*fd < 0 && errno == ENOENT && !(flags & O_CREAT))
        return 1;
    if (*fd < 0)
        return idm__lease_fail(IDM_EIO, "lease: cannot open %s: %s", path, strerror(errno));
    if (fstat(*fd, &st) != 0)
        rc = idm__lease_fail(IDM_EIO, "lease: cannot stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = idm__lease_fail(IDM_EIO, "lease: %s is not a regular file: %s", path,
                             file_kind(st.st_mode));
    else if ((fl = fcntl(*fd, F_GETFL)) < 0 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        rc = idm__lease_fail(IDM_EIO, "lease: cannot use %s: %s", path, strerror(errno));
    if (rc != 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
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
    rc = open_regular(path, O_RDONLY, &fd);
    if (rc != 0)
        return rc;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = idm__lease_fail(IDM_EIO, "lease: cannot read %s: %s", path, strerror(errno));
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
        return idm__lease_fail(IDM_EIO,
                               "lease: %s holds no scope (one line of 1 to %d bytes); remove it "
                               "only if no holder is left",
                               path, IDM_LEASE_SCOPE_MAX - 1);
    *len = n - 1;
    return 0;
}

/* fsync the directory, so that a link or a new file in it survives a
 * crash. */
static int sync_dir(const file_be *f)
{
    int fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
    if (fd < 0 || fsync(fd) != 0)
        rc = idm__lease_fail(IDM_EIO, "lease: cannot sync directory %s: %s", f->dir,
                             strerror(errno));
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
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && (errno != EEXIST || tries == 8))
            return idm__lease_fail(IDM_EIO, "lease: cannot create %s: %s", tmp,
                                   strerror(errno));
    }
    if (write(fd, scope, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fsync(fd) != 0)
        rc = idm__lease_fail(IDM_EIO, "lease: cannot write %s: %s", tmp, strerror(errno));
    close(fd);
    if (rc == 0 && link(tmp, path) != 0) {
        if (errno == EEXIST)
            rc = 1;
        else
            rc = idm__lease_fail(IDM_EIO, "lease: cannot link %s to %s: %s", tmp, path,
                                 strerror(errno));
    }
    unlink(tmp);
    /* The link must outlive a crash: a directory that lost it while worker
     * records of this scope remain could record another. */
    if (rc == 0)
        rc = sync_dir(f);
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
            return idm__lease_fail(IDM_EIO, "lease: %s/scope keeps appearing and vanishing",
                                   f->dir);
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

static int fb_open(void **be, const char *rest, const idm_lease_opts *opts)
{
    file_be *f;
    struct stat st;
    (void)opts;
    if (rest[0] != '/')
        return idm__lease_fail(IDM_EINVAL,
                               "lease: file URL needs an absolute directory, as file:///dir");
    if (strlen(rest) > 3000)
        return idm__lease_fail(IDM_EINVAL, "lease: directory name too long");
    /* Two processes may create it at once: EEXIST is success. */
    if (mkdir(rest, 0700) != 0 && errno != EEXIST)
        return idm__lease_fail(IDM_EIO, "lease: cannot use directory %s: %s", rest,
                               strerror(errno));
    if (stat(rest, &st) != 0) {
        return idm__lease_fail(IDM_EIO, "lease: cannot use directory %s: %s", rest,
                               strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
        return idm__lease_fail(IDM_EINVAL, "lease: %s is not a directory", rest);
    }
    f = calloc(1, sizeof *f);
    if (f == NULL || (f->dir = strdup(rest)) == NULL) {
        free(f);
        return IDM_ENOMEM;
    }
    f->fd = -1;
    *be = f;
    return 0;
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
        uint64_t seq;
        idm_unix_ms mark;
        worker_path(f, n, path, sizeof path);
        rc = open_regular(path, O_RDWR | O_CREAT, &fd);
        if (rc != 0)
            return rc;
        if (ofd_lock(fd, F_OFD_SETLK, NULL) != 0) {
            int e = errno;
            close(fd);
            if (e == EAGAIN || e == EACCES)
                continue;
            return idm__lease_fail(IDM_EIO, "lease: cannot lock %s: %s", path, strerror(e));
        }
        /* Ours. The file may have been unlinked by a releasing holder's
         * cleanup between our open and our lock: check it is still the one
         * at the path. */
        {
            struct stat a, b;
            if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino ||
                a.st_dev != b.st_dev) {
                close(fd);
                n--; /* try the same id again */
                continue;
            }
        }
        /* A record that cannot be read fails the claim: taking the id as a
         * new one (mark 0) could mint again what its last holder minted. */
        rc = read_record(fd, path, &seq, &mark, NULL, 0);
        if (rc != 0) {
            close(fd); /* drops the lock */
            return rc;
        }
        f->fd = fd;
        f->worker = n;
        f->seq = seq;
        snprintf(f->path, sizeof f->path, "%s", path);
        /* Record the claim with the mark raised to want (never lowered):
         * the claim is the first renewal. */
        rc = write_record(f, want > mark ? want : mark);
        if (rc != 0) {
            close(fd);
            f->fd = -1;
            return rc;
        }
        *worker = n;
        *prev_mark = mark;
        *recorded = want;
        *granted_ttl_ms = ttl_ms;
        return 0;
    }
    return idm__lease_fail(IDM_EBUSY, "lease: no free worker id: all %u in %s are held",
                           (unsigned)max_workers, f->dir);
}

static int fb_renew(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms)
{
    file_be *f = be;
    struct stat a, b;
    (void)granted_ttl_ms;
    /* The lock cannot expire while we live, but the file can be removed
     * (an operator cleaning up): then another process could lock a new
     * file of the same name, and the id would have two holders. */
    if (fstat(f->fd, &a) != 0 || stat(f->path, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev)
        return idm__lease_fail(IDM_ELEASE, "lease: %s was removed or replaced; the claim is lost",
                               f->path);
    return write_record(f, mark);
}

static int fb_release(void *be, idm_unix_ms mark)
{
    file_be *f = be;
    int rc = 0;
    if (f->fd < 0)
        return 0;
    rc = write_record(f, mark);
    close(f->fd); /* drops the lock */
    f->fd = -1;
    return rc;
}

static int fb_list(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count)
{
    file_be *f = be;
    idm_lease_entry *e = NULL;
    size_t n = 0;
    for (uint32_t w = 0; w < max_workers; w++) {
        char path[4096];
        int fd, rc;
        uint64_t seq;
        idm_lease_entry *grown;
        worker_path(f, w, path, sizeof path);
        rc = open_regular(path, O_RDONLY, &fd);
        if (rc == 1)
            continue; /* no record */
        if (rc != 0) {
            free(e);
            return rc;
        }
        grown = realloc(e, (n + 1) * sizeof *e);
        if (grown == NULL) {
            close(fd);
            free(e);
            return IDM_ENOMEM;
        }
        e = grown;
        memset(&e[n], 0, sizeof e[n]);
        e[n].worker = w;
        {
            short type = F_UNLCK;
            e[n].held = ofd_lock(fd, F_OFD_GETLK, &type) == 0 && type != F_UNLCK;
        }
        /* An unreadable record is an error, not an id without a mark. */
        rc = read_record(fd, path, &seq, &e[n].mark_ms, e[n].holder, sizeof e[n].holder);
        close(fd);
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
    if (f->fd >= 0)
        close(f->fd);
    free(f->dir);
    free(f);
}

const idm__lease_backend idm__lease_file = {
    "file", fb_open, fb_claim, fb_renew, fb_release, fb_list, fb_scope, fb_close,
};
