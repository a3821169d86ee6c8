/* SPDX-License-Identifier: MIT */
/*
 * State file I/O for the generator's high-water mark (format and paths: see
 * state.h). Reads are strict: any byte out of place is corruption, because a
 * mark read wrong could let a restarted generator reuse time.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "internal.h"
#include "state.h"

#define MAGIC "idmint-state 1 "
#define LINE_MAX_LEN 64

/* The first la bytes of a, then b and c, malloc'd. */
static char *concat(const char *a, size_t la, const char *b, const char *c)
{
    size_t lb = strlen(b), lc = strlen(c);
    char *p = malloc(la + lb + lc + 1);
    if (p != NULL) {
        memcpy(p, a, la);
        memcpy(p + la, b, lb);
        memcpy(p + la + lb, c, lc + 1);
    }
    return p;
}

/*
 * The file path names, with no symbolic link left in the result, into *out
 * (malloc'd); 0 or an errno value. A path that exists is realpath's answer.
 * A dangling link is followed to the file it names (to be created there),
 * hop by hop; a name with nothing behind it is kept, in its directory's real
 * path. A last component that is empty, "." or ".." names no file: EISDIR.
 */
static int resolve(const char *path, char **out)
{
    char *cur = strdup(path), *r;
    int hops = 0, e;
    if (cur == NULL)
        return ENOMEM;
    for (;;) {
        struct stat st;
        char *slash, *name, *next;
        r = realpath(cur, NULL);
        if (r != NULL) {
            free(cur);
            *out = r;
            return 0;
        }
        if (errno != ENOENT)
            goto fail;
        slash = strrchr(cur, '/');
        name = slash != NULL ? slash + 1 : cur;
        if (lstat(cur, &st) == 0 && S_ISLNK(st.st_mode)) {
            /* A link to a file not created yet: go where it points. */
            char target[PATH_MAX];
            ssize_t n;
            if (++hops > 40) {
                free(cur);
                return ELOOP;
            }
            n = readlink(cur, target, sizeof target - 1);
            if (n < 0)
                goto fail;
            target[n] = '\0';
            if (target[0] == '/' || slash == NULL)
                next = strdup(target);
            else
                next = concat(cur, (size_t)(slash - cur), "/", target);
            free(cur);
            if (next == NULL)
                return ENOMEM;
            cur = next;
            continue;
        }
        if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
            free(cur);
            return EISDIR;
        }
        /* Nothing there: the real directory, and the name in it. */
        if (slash == NULL) {
            r = realpath(".", NULL);
        } else if (slash == cur) {
            r = strdup("/");
        } else {
            *slash = '\0';
            r = realpath(cur, NULL);
        }
        if (r == NULL)
            goto fail;
        next = concat(r, strcmp(r, "/") == 0 ? 0 : strlen(r), "/", name);
        free(r);
        free(cur);
        if (next == NULL)
            return ENOMEM;
        *out = next;
        return 0;
    }
fail:
    e = errno;
    free(cur);
    return e;
}

/* Parse the file's bytes; 0 and *mark on success, -1 if corrupt. */
static int parse_line(const char *buf, size_t len, idm_unix_ms *mark)
{
    size_t mlen = sizeof MAGIC - 1, i;
    int64_t v = 0;
    const char *sp;
    char want[9];

    if (len < mlen + 1 + 1 + 8 + 1 || buf[len - 1] != '\n' || memcmp(buf, MAGIC, mlen) != 0)
        return -1;
    sp = buf + len - 1 - 8 - 1; /* the space before the crc */
    if (*sp != ' ' || sp <= buf + mlen)
        return -1;
    for (i = mlen; buf + i < sp; i++) {
        if (buf[i] < '0' || buf[i] > '9' || i - mlen >= 15)
            return -1;
        v = v * 10 + (buf[i] - '0');
    }
    snprintf(want, sizeof want, "%08x", (unsigned)idm__crc32(buf, (size_t)(sp - buf)));
    if (memcmp(sp + 1, want, 8) != 0)
        return -1;
    *mark = v;
    return 0;
}

/* Resolve path and make the names beside it (see state.h); 0 or an error,
 * with s holding what was made (freed by idm__state_close). */
static int make_paths(idm__state *s, const char *path)
{
    char *d;
    int e = resolve(path, &s->path);
    if (e == ENOMEM)
        return IDM_ENOMEM;
    if (e == EISDIR)
        return idm__fail(IDM_EIO, "state: %s names a directory, not a file", path);
    if (e != 0)
        return idm__fail(IDM_EIO, "state: cannot resolve %s: %s", path, strerror(e));
    s->tmp_path = concat(s->path, strlen(s->path), ".tmp", "");
    s->lock_path = concat(s->path, strlen(s->path), ".lock", "");
    s->dir_path = strdup(s->path);
    if (s->tmp_path == NULL || s->lock_path == NULL || s->dir_path == NULL)
        return IDM_ENOMEM;
    /* dirname may return a pointer into its argument or a static "." or
     * "/": keep a copy of what it returns. */
    d = strdup(dirname(s->dir_path));
    free(s->dir_path);
    s->dir_path = d;
    return d == NULL ? IDM_ENOMEM : 0;
}

/* Make and take the lock file; 0, IDM_EBUSY or IDM_EIO. */
static int take_lock(idm__state *s)
{
    struct stat st;
    const char *kind = NULL;
    /* Refused before the lock file is created; the state file is checked
     * again on its descriptor, under the lock. */
    if (stat(s->path, &st) == 0 && !S_ISREG(st.st_mode))
        return idm__fail(IDM_EIO, "state: %s is not a regular file (it is %s)", s->path,
                         idm__file_kind(st.st_mode));
    s->lock_fd = idm__fault("state.lock-open") != 0
                     ? -1
                     : idm__open_regular(s->lock_path, O_RDWR | O_CREAT, 0600, &kind);
    if (s->lock_fd < 0 && kind != NULL)
        return idm__fail(IDM_EIO, "state: lock file %s is not a regular file (it is %s)",
                         s->lock_path, kind);
    if (s->lock_fd < 0)
        return idm__fail(IDM_EIO, "state: cannot open lock file %s: %s", s->lock_path,
                         strerror(errno));
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK
                   ? idm__fail(IDM_EBUSY, "state: %s is in use by another generator", s->path)
                   : idm__fail(IDM_EIO, "state: cannot lock %s: %s", s->lock_path,
                               strerror(errno));
    return 0;
}

/* Read the mark under the lock: 0 with *found set, or an error (a missing
 * or corrupt file is none when fresh). */
static int read_file(idm__state *s, bool fresh, idm_unix_ms *mark, bool *found)
{
    char buf[LINE_MAX_LEN + 1];
    const char *kind;
    ssize_t n;
    int fd, e;

    *found = false;
    fd = idm__open_regular(s->path, O_RDONLY, 0, &kind);
    if (fd < 0 && kind != NULL)
        return idm__fail(IDM_EIO, "state: %s is not a regular file (it is %s)", s->path, kind);
    if (fd < 0 && errno == ENOENT)
        return fresh ? 0
                     : idm__fail(IDM_ENOENT,
                                 "state: %s does not exist (start fresh to create it)", s->path);
    if (fd < 0)
        return idm__fail(IDM_EIO, "state: cannot open %s: %s", s->path, strerror(errno));
    n = read(fd, buf, sizeof buf);
    e = errno;
    close(fd);
    if (n < 0)
        return idm__fail(IDM_EIO, "state: cannot read %s: %s", s->path, strerror(e));
    if (n > LINE_MAX_LEN || parse_line(buf, (size_t)n, mark) != 0)
        return fresh ? 0
                     : idm__fail(IDM_ECORRUPT,
                                 "state: %s is corrupt; its mark cannot be trusted (start fresh "
                                 "only if no id was minted ahead of the clock)",
                                 s->path);
    *found = true;
    return 0;
}

int idm__state_open(idm__state *s, const char *path, bool fresh, idm_unix_ms *mark, bool *found)
{
    int rc;
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    rc = make_paths(s, path);
    if (rc == 0)
        rc = take_lock(s);
    if (rc == 0)
        rc = read_file(s, fresh, mark, found);
    if (rc != 0)
        idm__state_close(s);
    return rc;
}

/* Sync the directory dir (the state file's, found at open: nothing is
 * allocated on the minting path). */
static int fsync_dir(const char *dir)
{
    int fd, rc = 0;
    if (idm__fault("state.fsyncdir") != 0)
        return errno;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = errno;
    if (fd >= 0)
        close(fd);
    return rc;
}

int idm__state_write(idm__state *s, idm_unix_ms mark)
{
    char line[LINE_MAX_LEN];
    int len, fd, e;
    size_t off = 0;

    len = snprintf(line, sizeof line, MAGIC "%lld", (long long)mark);
    len += snprintf(line + len, sizeof line - (size_t)len, " %08x\n",
                    (unsigned)idm__crc32(line, (size_t)len));

    /* The temporary file is ours while we hold the lock: whatever is left
     * at its name (a crash's leftover, a link, a FIFO that would block an
     * open for writing) goes, and a new file is made in its place. */
    if (idm__fault("state.unlink") == 0)
        (void)unlink(s->tmp_path);
    if (idm__fault("state.open") != 0 ||
        (fd = open(s->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                   0600)) < 0)
        return idm__fail(IDM_EIO, "state: cannot create %s: %s", s->tmp_path, strerror(errno));
    while (off < (size_t)len) {
        ssize_t w;
        if (idm__fault("state.write") != 0)
            goto fail_fd;
        w = write(fd, line + off, (size_t)len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            goto fail_fd;
        }
        off += (size_t)w;
    }
    if (idm__fault("state.fsync") != 0 || fsync(fd) != 0)
        goto fail_fd;
    if (close(fd) != 0)
        return idm__fail(IDM_EIO, "state: cannot close %s: %s", s->tmp_path, strerror(errno));
    if (idm__fault("state.rename") != 0 || rename(s->tmp_path, s->path) != 0)
        return idm__fail(IDM_EIO, "state: cannot rename %s to %s: %s", s->tmp_path, s->path,
                         strerror(errno));
    e = fsync_dir(s->dir_path);
    if (e != 0)
        return idm__fail(IDM_EIO, "state: cannot sync the directory of %s: %s", s->path, strerror(e));
    return 0;

fail_fd:
    e = errno;
    close(fd);
    return idm__fail(IDM_EIO, "state: cannot write %s: %s", s->tmp_path, strerror(e));
}

int idm__state_move_paths(idm__state *s, char *buf, size_t cap)
{
    char **p[4] = {&s->path, &s->tmp_path, &s->lock_path, &s->dir_path};
    size_t need = 0, at = 0;
    for (int i = 0; i < 4; i++)
        need += strlen(*p[i]) + 1;
    if (need > cap)
        return idm__fail(IDM_EINVAL, "state: the paths of %s take %zu bytes, over the %zu a "
                                     "shared generator keeps",
                         s->path, need, cap);
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(*p[i]) + 1;
        memcpy(buf + at, *p[i], n);
        free(*p[i]);
        *p[i] = buf + at;
        at += n;
    }
    s->moved = true;
    return 0;
}

void idm__state_close(idm__state *s)
{
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* closing the descriptor releases the flock */
    if (!s->moved) {
        free(s->path);
        free(s->tmp_path);
        free(s->lock_path);
        free(s->dir_path);
    }
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
}
