/* SPDX-License-Identifier: MIT */
/*
 * State file I/O for the generator's high-water mark. See state.h for the
 * format. Reads are strict: any byte out of place is corruption, because a
 * mark read wrong could let a restarted generator reuse time.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "internal.h"
#include "state.h"

int (*idm__state_fault)(const char *op);

#define MAGIC "idmint-state 1 "
#define LINE_MAX_LEN 64

static int fault(const char *op)
{
    int e = idm__state_fault != NULL ? idm__state_fault(op) : 0;
    if (e != 0)
        errno = e;
    return e;
}

static char *concat(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 1);
    if (p != NULL) {
        memcpy(p, a, la);
        memcpy(p + la, b, lb + 1);
    }
    return p;
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

int idm__state_open(idm__state *s, const char *path, bool fresh, idm_unix_ms *mark, bool *found)
{
    char buf[LINE_MAX_LEN + 1];
    ssize_t n;
    int fd, rc;

    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
    s->path = strdup(path);
    s->tmp_path = concat(path, ".tmp");
    s->lock_path = concat(path, ".lock");
    if (s->path == NULL || s->tmp_path == NULL || s->lock_path == NULL) {
        idm__state_close(s);
        return IDM_ENOMEM;
    }
    s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        rc = idm__fail(IDM_EIO, "state: cannot open lock file %s: %s", s->lock_path, strerror(errno));
        idm__state_close(s);
        return rc;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK
                 ? idm__fail(IDM_EBUSY, "state: %s is in use by another generator", path)
                 : idm__fail(IDM_EIO, "state: cannot lock %s: %s", s->lock_path, strerror(errno));
        idm__state_close(s);
        return rc;
    }

    *found = false;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && fresh)
            return 0;
        rc = errno == ENOENT
                 ? idm__fail(IDM_ENOENT, "state: %s does not exist (start fresh to create it)", path)
                 : idm__fail(IDM_EIO, "state: cannot open %s: %s", path, strerror(errno));
        idm__state_close(s);
        return rc;
    }
    n = read(fd, buf, sizeof buf);
    rc = errno;
    close(fd);
    if (n < 0) {
        rc = idm__fail(IDM_EIO, "state: cannot read %s: %s", path, strerror(rc));
        idm__state_close(s);
        return rc;
    }
    if (n > LINE_MAX_LEN || parse_line(buf, (size_t)n, mark) != 0) {
        if (fresh)
            return 0;
        rc = idm__fail(IDM_ECORRUPT,
                       "state: %s is corrupt; its mark cannot be trusted (start fresh only if no id "
                       "was minted ahead of the clock)",
                       path);
        idm__state_close(s);
        return rc;
    }
    *found = true;
    return 0;
}

static int fsync_dir(const char *path)
{
    char *copy = strdup(path);
    int fd, rc = 0;
    if (copy == NULL)
        return ENOMEM;
    if (fault("fsyncdir") != 0) {
        rc = errno;
        free(copy);
        return rc;
    }
    fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0)
        rc = errno;
    if (fd >= 0)
        close(fd);
    free(copy);
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

    if (fault("open") != 0 ||
        (fd = open(s->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
        return idm__fail(IDM_EIO, "state: cannot create %s: %s", s->tmp_path, strerror(errno));
    while (off < (size_t)len) {
        ssize_t w;
        if (fault("write") != 0)
            goto fail_fd;
        w = write(fd, line + off, (size_t)len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            goto fail_fd;
        }
        off += (size_t)w;
    }
    if (fault("fsync") != 0 || fsync(fd) != 0)
        goto fail_fd;
    if (close(fd) != 0)
        return idm__fail(IDM_EIO, "state: cannot close %s: %s", s->tmp_path, strerror(errno));
    if (fault("rename") != 0 || rename(s->tmp_path, s->path) != 0)
        return idm__fail(IDM_EIO, "state: cannot rename %s to %s: %s", s->tmp_path, s->path,
                         strerror(errno));
    e = fsync_dir(s->path);
    if (e != 0)
        return idm__fail(IDM_EIO, "state: cannot sync the directory of %s: %s", s->path, strerror(e));
    return 0;

fail_fd:
    e = errno;
    close(fd);
    return idm__fail(IDM_EIO, "state: cannot write %s: %s", s->tmp_path, strerror(e));
}

void idm__state_close(idm__state *s)
{
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* closing the descriptor releases the flock */
    free(s->path);
    free(s->tmp_path);
    free(s->lock_path);
    memset(s, 0, sizeof *s);
    s->lock_fd = -1;
}
