/* SPDX-License-Identifier: MIT */
/* Node values from the platform's ordinal (see ordinal.h). */
#include "ordinal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"

__attribute__((format(printf, 3, 4))) static int fail(char *why, size_t whylen, const char *fmt,
                                                      ...)
{
    if (why != NULL && whylen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

bool idm__ordinal_is(const char *value)
{
    return value != NULL && strncmp(value, "ordinal", 7) == 0 &&
           (value[7] == '\0' || value[7] == ':');
}

/* Digits [p, p + n) as a number up to IDM_ORDINAL_MAX: 0, or -1. */
static int digits(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(p[i] - '0');
        if (v > IDM_ORDINAL_MAX)
            return -1;
    }
    *out = v;
    return 0;
}

/* Printable, for a message: a value from the environment may hold anything. */
static void shown(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s != '\0' && n + 1 < cap && n < 64; s++)
        out[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    out[n] = '\0';
}

static int from_host(uint64_t *out, char *from, size_t fromlen, char *why, size_t whylen)
{
    char host[HOST_NAME_MAX + 1], show[80];
    const char *test = getenv(IDM_ORDINAL_HOSTNAME_ENV), *what = "";
    size_t len, end, start;
    if (test != NULL && test[0] != '\0') {
        snprintf(host, sizeof host, "%s", test);
        what = " (" IDM_ORDINAL_HOSTNAME_ENV ", for tests)";
    } else if (gethostname(host, sizeof host) != 0) {
        return fail(why, whylen, "cannot read the host name: %s", strerror(errno));
    }
    host[sizeof host - 1] = '\0';
    /* Its first label: a fully qualified name's number is the host's. */
    len = strcspn(host, ".");
    host[len] = '\0';
    shown(host, show, sizeof show);
    end = len;
    start = end;
    while (start > 0 && host[start - 1] >= '0' && host[start - 1] <= '9')
        start--;
    if (start == end)
        return fail(why, whylen,
                    "the host name '%s'%s does not end in a decimal number (ordinal takes the "
                    "number of a StatefulSet-style name, web-3 -> 3; or use ordinal:VAR)",
                    show, what);
    if (digits(host + start, end - start, out) != 0)
        return fail(why, whylen, "the number ending the host name '%s'%s is above %llu", show,
                    what, (unsigned long long)IDM_ORDINAL_MAX);
    snprintf(from, fromlen, "host name %s%s", show, what);
    return 0;
}

static int from_env(const char *var, uint64_t *out, char *from, size_t fromlen, char *why,
                    size_t whylen)
{
    char show[80];
    const char *v;
    bool ok = (var[0] >= 'A' && var[0] <= 'Z') || (var[0] >= 'a' && var[0] <= 'z') ||
              var[0] == '_';
    for (const char *p = var; ok && *p != '\0'; p++)
        ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
             *p == '_';
    shown(var, show, sizeof show);
    if (!ok || strlen(var) > 64)
        return fail(why, whylen,
                    "'%s' is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*, up "
                    "to 64 bytes)",
                    show);
    v = getenv(var);
    if (v == NULL || v[0] == '\0')
        return fail(why, whylen, "the environment variable %s is %s", var,
                    v == NULL ? "not set" : "empty");
    if (digits(v, strlen(v), out) != 0) {
        shown(v, show, sizeof show);
        return fail(why, whylen, "%s='%s' is not a plain decimal number from 0 to %llu", var,
                    show, (unsigned long long)IDM_ORDINAL_MAX);
    }
    snprintf(from, fromlen, "%s=%llu", var, (unsigned long long)*out);
    return 0;
}

int idm__ordinal_resolve(const char *value, uint64_t *out, char *from, size_t fromlen, char *why,
                         size_t whylen)
{
    char dummy[8];
    if (from == NULL || fromlen == 0) {
        from = dummy;
        fromlen = sizeof dummy;
    }
    if (!idm__ordinal_is(value))
        return fail(why, whylen, "'%.40s' is not ordinal or ordinal:VAR", value ? value : "");
    if (value[7] == '\0')
        return from_host(out, from, fromlen, why, whylen);
    return from_env(value + 8, out, from, fromlen, why, whylen);
}

/* What the holder wrote into the lock file, printable, into out. */
static void holder(int fd, char *out, size_t cap)
{
    char buf[128];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    size_t len = n > 0 ? strnlen(buf, (size_t)n) : 0;
    len = strcspn(buf, "\n") < len ? strcspn(buf, "\n") : len; /* its first line */
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        len--;
    buf[len] = '\0';
    if (len == 0)
        snprintf(out, cap, "a process that has not said which yet");
    else
        shown(buf, out, cap);
}

/*
 * The host-wide half of the lock: a listening socket in the abstract
 * namespace, "@idmint-ordinal-<field>-<n>", which the kernel frees when
 * the process dies, whatever directory it runs on (the file lock covers one
 * directory only). Its holder is named by its credentials (SO_PEERCRED of
 * a connection to it). The descriptor, or -1 with why.
 */
static int host_lock(const char *field, uint64_t n, char *why, size_t whylen)
{
    struct sockaddr_un sa;
    socklen_t len;
    int fd, w;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    w = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "idmint-ordinal-%s-%llu", field,
                 (unsigned long long)n);
    if (w < 0 || (size_t)w >= sizeof sa.sun_path - 1)
        return fail(why, whylen, "ordinal lock: the field name %.40s is too long", field);
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)w);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(why, whylen, "ordinal lock: cannot make a socket: %s", strerror(errno));
    if (bind(fd, (struct sockaddr *)&sa, len) == 0 && listen(fd, 1) == 0)
        return fd;
    if (errno == EADDRINUSE) {
        struct ucred cr;
        socklen_t cl = sizeof cr;
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        long pid = 0;
        memset(&cr, 0, sizeof cr);
        if (c >= 0 && connect(c, (struct sockaddr *)&sa, len) == 0 &&
            getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0)
            pid = (long)cr.pid;
        if (c >= 0)
            close(c);
        close(fd);
        if (pid > 0)
            return fail(why, whylen,
                        "%s=%llu is taken on this host by process %ld (socket @%s); two "
                        "processes must not mint under one ordinal",
                        field, (unsigned long long)n, pid, sa.sun_path + 1);
        return fail(why, whylen,
                    "%s=%llu is taken on this host (socket @%s); two processes must not mint "
                    "under one ordinal",
                    field, (unsigned long long)n, sa.sun_path + 1);
    }
    w = errno;
    close(fd);
    return fail(why, whylen, "ordinal lock: cannot bind socket @%s: %s", sa.sun_path + 1,
                strerror(w));
}

int idm__ordinal_lock(const char *dir, const char *field, uint64_t n, const char *who, char *why,
                      size_t whylen)
{
    char path[4096], line[128], held[96];
    struct flock fl;
    int fd, w;
    w = snprintf(path, sizeof path, "%s/ordinal-%s-%llu.lock", dir, field, (unsigned long long)n);
    if (w < 0 || (size_t)w >= sizeof path)
        return fail(why, whylen, "ordinal lock: the path under %.80s is too long", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0600);
    if (fd < 0)
        return fail(why, whylen, "ordinal lock %s: cannot open it: %s", path, strerror(errno));
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET; /* l_start 0, l_len 0: the whole file */
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        int e = errno;
        if (e == EAGAIN || e == EACCES) {
            holder(fd, held, sizeof held);
            close(fd);
            return fail(why, whylen,
                        "%s=%llu is taken on this host: %s is locked by another process (%s); "
                        "two processes must not mint under one ordinal",
                        field, (unsigned long long)n, path, held);
        }
        close(fd);
        return fail(why, whylen, "ordinal lock %s: cannot lock it: %s", path, strerror(e));
    }
    w = snprintf(line, sizeof line, "pid %ld %s\n", (long)getpid(), who);
    if (ftruncate(fd, 0) != 0 || w < 0 || pwrite(fd, line, strlen(line), 0) < 0) {
        int e = errno;
        close(fd);
        return fail(why, whylen, "ordinal lock %s: cannot write the holder into it: %s", path,
                    strerror(e));
    }
    /* Then the host: two processes on other directories of one host. */
    if (host_lock(field, n, why, whylen) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}
