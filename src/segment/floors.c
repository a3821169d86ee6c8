/* SPDX-License-Identifier: MIT */
/*
 * The floor file: see floors.h. Small (a few lines a store), read whole,
 * parsed strictly, rewritten whole. The lock is flock(2) on PATH.lock, a
 * file that is created once and never removed (removing it while another
 * writer holds it would let a third writer lock a new file: two writers at
 * once, and the file could go down). Opens refuse links and anything but
 * regular files (O_NOFOLLOW, idm__open_regular), and never block on a FIFO.
 *
 * Every call of a write (lock included) is preceded by a fault site
 * (idm__fault), in the order a write makes them: floors.open-lock,
 * floors.flock, floors.unlink-stale, floors.open, floors.write,
 * floors.fsync, floors.rename, floors.open-dir, floors.fsyncdir; and
 * floors.unlink-failed, the removal of the temporary copy after a failure.
 * A fault fails the call as its errno would.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "floors.h"
#include "segment_internal.h"

#define MAGIC "idmint-floors 1"
#define FILE_MAX (64 * 1024)
#define PATH_MAX_LEN 4000

static int sys_fail(const char *path, const char *what)
{
    return idm__seg_fail(IDM_EIO, "floor file %s: cannot %s: %s", path, what, strerror(errno));
}

/* Open path (flags; O_NOFOLLOW added: no links) if it is a regular file,
 * after fault site site (NULL: none). -1 with *rc 0 when it does not exist
 * and O_CREAT is not in flags; other failures give a detail (*rc). */
static int open_regular(const char *path, int flags, const char *site, int *rc)
{
    const char *kind = NULL;
    int fd = site != NULL && idm__fault(site) != 0
                 ? -1
                 : idm__open_regular(path, flags | O_NOFOLLOW, 0600, &kind);
    if (fd >= 0)
        return fd;
    if (errno == ENOENT && (flags & O_CREAT) == 0)
        *rc = 0;
    else if (errno == ELOOP)
        *rc = idm__seg_fail(IDM_EINVAL, "floor file %s: is a symbolic link (refused)", path);
    else if (kind != NULL)
        *rc = idm__seg_fail(IDM_EINVAL, "floor file %s: is not a regular file (it is %s)", path,
                            kind);
    else
        *rc = sys_fail(path, "open it");
    return -1;
}

/* A decimal in 0..max, strictly: digits only, no sign, no overflow. */
static int parse_u(const char *s, size_t len, int64_t max, int64_t *out)
{
    int64_t v = 0;
    if (len == 0 || len > 19)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (max - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Parse text (len bytes) into floor/has; the file is path for messages. */
static int parse(const char *path, const char *text, size_t len, const char *name, size_t n,
                 int64_t *floor, bool *has)
{
    size_t line = 0, at = 0;
    bool seen_name = false, seen_n = false;
    while (at < len) {
        const char *s = text + at, *nl = memchr(s, '\n', len - at), *sp;
        int64_t k = 0, f = 0;
        size_t l;
        if (nl == NULL)
            return idm__seg_fail(IDM_ECORRUPT, "floor file %s: line %zu does not end", path,
                                 line + 1);
        l = (size_t)(nl - s);
        at += l + 1;
        line++;
        if (line == 1) {
            if (l != strlen(MAGIC) || memcmp(s, MAGIC, l) != 0)
                return idm__seg_fail(IDM_ECORRUPT,
                                     "floor file %s: line 1 is not '" MAGIC "'", path);
            continue;
        }
        if (line == 2) {
            if (l < 9 || memcmp(s, "sequence ", 9) != 0)
                return idm__seg_fail(IDM_ECORRUPT, "floor file %s: line 2 is not 'sequence NAME'",
                                     path);
            if (l - 9 != strlen(name) || memcmp(s + 9, name, l - 9) != 0)
                return idm__seg_fail(IDM_EINVAL,
                                     "floor file %s: it is for sequence '%.*s', not '%s'", path,
                                     (int)(l - 9 > 64 ? 64 : l - 9), s + 9, name);
            seen_name = true;
            continue;
        }
        if (line == 3) {
            int64_t v = 0;
            if (l < 7 || memcmp(s, "stores ", 7) != 0 || parse_u(s + 7, l - 7, 1024, &v) != 0)
                return idm__seg_fail(IDM_ECORRUPT, "floor file %s: line 3 is not 'stores N'",
                                     path);
            if ((size_t)v != n)
                return idm__seg_fail(IDM_EINVAL,
                                     "floor file %s: it records %lld stores for sequence %s, "
                                     "not %zu: the list of stores changed (remove the file "
                                     "only if the sequence was made again)",
                                     path, (long long)v, name, n);
            seen_n = true;
            continue;
        }
        sp = memchr(s, ' ', l);
        if (sp == NULL || parse_u(s, (size_t)(sp - s), 1023, &k) != 0 ||
            parse_u(sp + 1, l - (size_t)(sp - s) - 1, IDM_SEQ_MAX, &f) != 0)
            return idm__seg_fail(IDM_ECORRUPT, "floor file %s: line %zu is not 'K FLOOR'", path,
                                 line);
        if ((size_t)k >= n || has[k])
            return idm__seg_fail(IDM_ECORRUPT,
                                 "floor file %s: line %zu: store %lld is out of range or listed "
                                 "twice",
                                 path, line, (long long)k);
        has[k] = true;
        floor[k] = f;
    }
    if (!seen_name || !seen_n)
        return idm__seg_fail(IDM_ECORRUPT, "floor file %s: it is cut short (%zu lines)", path,
                             line);
    return 0;
}

/* Read the open file fd whole and parse it. */
static int read_fd(const char *path, int fd, const char *name, size_t n, int64_t *floor,
                   bool *has)
{
    char *buf = malloc(FILE_MAX + 1);
    size_t len = 0;
    int rc;
    if (buf == NULL)
        return idm__seg_fail(IDM_ENOMEM, "floor file %s: out of memory", path);
    for (;;) {
        ssize_t r = read(fd, buf + len, FILE_MAX + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? sys_fail(path, "read it") : parse(path, buf, len, name, n, floor, has);
            break;
        }
        len += (size_t)r;
        if (len > FILE_MAX) {
            rc = idm__seg_fail(IDM_ECORRUPT, "floor file %s: longer than %d bytes", path,
                               FILE_MAX);
            break;
        }
    }
    free(buf);
    return rc;
}

static int check_path(const char *path)
{
    if (path == NULL || path[0] == '\0')
        return idm__seg_fail(IDM_EINVAL, "floor file: the path is empty");
    if (strlen(path) > PATH_MAX_LEN)
        return idm__seg_fail(IDM_EINVAL, "floor file %.40s...: the path is longer than %d bytes",
                             path, PATH_MAX_LEN);
    return 0;
}

/* Read under no lock: a reader sees the old file or the new one (rename). */
static int read_path(const char *path, const char *name, size_t n, int64_t *floor, bool *has)
{
    int fd, rc = 0;
    for (size_t k = 0; k < n; k++) {
        floor[k] = 0;
        has[k] = false;
    }
    fd = open_regular(path, O_RDONLY, NULL, &rc);
    if (fd < 0)
        return rc; /* 0: no file, no floors */
    rc = read_fd(path, fd, name, n, floor, has);
    close(fd);
    return rc;
}

int idm__floors_read(const char *path, const char *name, size_t n, int64_t *floor, bool *has)
{
    int rc = check_path(path);
    return rc != 0 ? rc : read_path(path, name, n, floor, has);
}

/* fsync the directory holding path, so the rename is on disk. */
static int sync_dir(const char *path)
{
    char dir[PATH_MAX_LEN + 1];
    const char *slash = strrchr(path, '/');
    int fd, rc = 0;
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    fd = idm__fault("floors.open-dir") != 0 ? -1
                                            : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return sys_fail(path, "open its directory");
    if (idm__fault("floors.fsyncdir") != 0 || fsync(fd) != 0)
        rc = sys_fail(path, "sync its directory");
    close(fd);
    return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = idm__fault("floors.write") != 0 ? -1 : write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Remove the temporary copy of a write that failed (if this fails too, the
 * next writer removes it). */
static void remove_failed(const char *tmp)
{
    if (idm__fault("floors.unlink-failed") == 0)
        (void)unlink(tmp);
}

/* Write text (len bytes) to a new file tmp, on disk before it returns 0;
 * removed again if that fails. */
static int write_tmp(const char *tmp, const char *text, size_t len)
{
    int fd, rc = 0;
    /* A leftover of a writer that died; the caller holds the lock. */
    if (idm__fault("floors.unlink-stale") == 0)
        (void)unlink(tmp);
    fd = idm__fault("floors.open") != 0
             ? -1
             : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return sys_fail(tmp, "create it");
    if (write_all(fd, text, len) != 0)
        rc = sys_fail(tmp, "write it");
    else if (idm__fault("floors.fsync") != 0 || fsync(fd) != 0)
        rc = sys_fail(tmp, "sync it");
    close(fd);
    if (rc != 0)
        remove_failed(tmp);
    return rc;
}

int idm__floors_raise(const char *path, const char *name, size_t n, const int64_t *hi)
{
    char lockp[PATH_MAX_LEN + 8], tmp[PATH_MAX_LEN + 8];
    int64_t *floor;
    bool *has, changed = false;
    char *text = NULL;
    size_t len = 0, cap;
    int lfd, rc;
    if ((rc = check_path(path)) != 0)
        return rc;
    floor = calloc(n, sizeof *floor);
    has = calloc(n, sizeof *has);
    cap = 64 + strlen(name) + n * 32;
    text = malloc(cap);
    if (floor == NULL || has == NULL || text == NULL) {
        rc = idm__seg_fail(IDM_ENOMEM, "floor file %s: out of memory", path);
        goto out;
    }
    snprintf(lockp, sizeof lockp, "%s.lock", path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    lfd = open_regular(lockp, O_RDWR | O_CREAT, "floors.open-lock", &rc);
    if (lfd < 0)
        goto out;
    while ((idm__fault("floors.flock") != 0 ? -1 : flock(lfd, LOCK_EX)) != 0) {
        if (errno != EINTR) {
            rc = sys_fail(lockp, "lock it");
            goto out_lock;
        }
    }
    if ((rc = read_path(path, name, n, floor, has)) != 0)
        goto out_lock;
    for (size_t k = 0; k < n; k++) {
        if (hi[k] > floor[k]) { /* floor[k] is 0 where the file has none */
            floor[k] = hi[k];
            has[k] = true;
            changed = true;
        }
    }
    if (!changed) /* already at least as high: on disk since its writer synced */
        goto out_lock;
    len = (size_t)snprintf(text, cap, MAGIC "\nsequence %s\nstores %zu\n", name, n);
    for (size_t k = 0; k < n; k++)
        if (has[k])
            len += (size_t)snprintf(text + len, cap - len, "%zu %" PRId64 "\n", k, floor[k]);
    if ((rc = write_tmp(tmp, text, len)) != 0)
        goto out_lock;
    if (idm__fault("floors.rename") != 0 || rename(tmp, path) != 0) {
        rc = sys_fail(path, "rename the new copy over it");
        remove_failed(tmp);
        goto out_lock;
    }
    rc = sync_dir(path);
out_lock:
    close(lfd); /* releases the lock */
out:
    free(floor);
    free(has);
    free(text);
    return rc;
}
