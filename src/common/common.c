/* SPDX-License-Identifier: MIT */
/* Small shared pieces (see common.h). */
#include "common.h"

#include <idmint/error.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int64_t idm__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int (*idm__fault_hook)(const char *site);

int idm__fault_at(const char *site)
{
    int (*hook)(const char *) = idm__fault_hook;
    int e = hook != NULL ? hook(site) : 0;
    if (e != 0)
        errno = e;
    return e;
}

const char *idm__file_kind(mode_t m)
{
    return S_ISREG(m)    ? "a regular file"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISLNK(m)  ? "a symbolic link"
                         : "of an unknown type";
}

int idm__open_regular(const char *path, int flags, mode_t mode, const char **kind)
{
    struct stat st;
    int fd, fl;
    if (kind != NULL)
        *kind = NULL;
    do
        fd = open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        if (kind != NULL)
            *kind = idm__file_kind(st.st_mode);
        errno = EINVAL;
        return -1;
    }
    if (!(flags & O_NONBLOCK) && (fl = fcntl(fd, F_GETFL)) >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

int idm__cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    bool ok;
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    return ok ? 0 : -1;
}

ssize_t idm__read_regular(const char *path, char *buf, size_t cap, const char **kind, char *why,
                          size_t whylen)
{
    size_t n = 0;
    int fd = idm__open_regular(path, O_RDONLY, 0, kind), err;
    if (fd < 0) {
        err = errno;
        if (*kind != NULL)
            snprintf(why, whylen, "not a regular file (it is %s)", *kind);
        else
            snprintf(why, whylen, "cannot open it: %s", strerror(err));
        errno = err;
        return -1;
    }
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            err = errno;
            snprintf(why, whylen, "cannot read it: %s", strerror(err));
            close(fd);
            errno = err;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return (ssize_t)n;
}

/* Append n bytes of s to out (length *len, capacity cap), cutting. */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + 1 >= cap)
        return;
    if (n > cap - 1 - *len)
        n = cap - 1 - *len;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

/* The first password text of url at or after from (one counts if its ':'
 * or its option name starts there), its length in *len (0 for an empty
 * password), or NULL: the authority's (after its
 * first ':' up to its last '@', the authority running to the first '/',
 * as libpq reads a URL: a '?' may be in a password), and each "password="
 * option's value (at the start, or after '?', '&' or ' '; up to the next
 * '&' or ' '). The one reading of credentials that idm__url_mask and
 * idm__text_line share. */
static const char *next_secret(const char *url, const char *from, size_t *len)
{
    const char *sep = strstr(url, "://"), *best = NULL;
    if (sep != NULL) {
        const char *auth = sep + 3, *end = auth + strcspn(auth, "/"), *at = NULL, *colon;
        for (const char *c = auth; c < end; c++)
            if (*c == '@')
                at = c;
        colon = at != NULL ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        if (colon != NULL && colon >= from) {
            best = colon + 1;
            *len = (size_t)(at - best);
        }
    }
    for (const char *q = url; (q = strstr(q, "password=")) != NULL; q++) {
        if ((q == url || q[-1] == '?' || q[-1] == '&' || q[-1] == ' ') && q >= from) {
            if (best == NULL || q + 9 < best) {
                best = q + 9;
                *len = strcspn(best, "& ");
            }
            break;
        }
    }
    return best;
}

void idm__url_mask(const char *url, char *out, size_t cap)
{
    const char *p = url, *from = url, *s;
    size_t len = 0, n;
    if (cap == 0)
        return;
    out[0] = '\0';
    if (url == NULL)
        return;
    while ((s = next_secret(url, from, &n)) != NULL) {
        put(out, cap, &len, p, (size_t)(s - p));
        put(out, cap, &len, "***", 3);
        p = s + n;
        from = n > 0 ? p : s + 1;
    }
    put(out, cap, &len, p, strlen(p));
}

void idm__argv_hide_secrets(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        size_t n = strlen(argv[i]);
        char *masked, *copy;
        if (strstr(argv[i], "://") == NULL && strstr(argv[i], "password=") == NULL)
            continue;
        masked = malloc(n + 16);
        if (masked == NULL)
            return;
        idm__url_mask(argv[i], masked, n + 16);
        if (strcmp(masked, argv[i]) == 0 || (copy = strdup(argv[i])) == NULL) {
            free(masked);
            continue;
        }
        /* The mask is at most 3 bytes longer than a 0-byte password: cut
         * to the original's length, padded with '*'. */
        memset(argv[i], '*', n);
        memcpy(argv[i], masked, strlen(masked) < n ? strlen(masked) : n);
        argv[i] = copy;
        free(masked);
    }
}

void idm__text_line(const char *msg, const char *url, char *out, size_t cap)
{
    const char *sec[4], *from = url;
    size_t slen[4], nsec = 0, n = 0;
    bool space = false;
    const char *c = msg != NULL ? msg : "";
    if (cap == 0)
        return;
    while (url != NULL && nsec < 4 && (sec[nsec] = next_secret(url, from, &slen[nsec])) != NULL) {
        from = sec[nsec] + (slen[nsec] > 0 ? slen[nsec] : 1);
        if (slen[nsec] > 0)
            nsec++;
    }
    while (*c != '\0' && n + 1 < cap) {
        const char *piece = c;
        size_t plen = 1, skip = 1;
        for (size_t i = 0; i < nsec; i++) {
            if (strncmp(c, sec[i], slen[i]) == 0) {
                piece = "***";
                plen = 3;
                skip = slen[i];
                break;
            }
        }
        if (plen == 1 && (*c == ' ' || *c == '\n' || *c == '\t' || *c == '\r')) {
            space = n > 0;
            c++;
            continue;
        }
        if (space && n + 2 < cap)
            out[n++] = ' ';
        space = false;
        for (size_t i = 0; i < plen && n + 1 < cap; i++)
            out[n++] = piece[i];
        c += skip;
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, cap, "no message");
}

const idm__scheme *idm__scheme_find(const idm__scheme *rows, size_t n, const char *url)
{
    const char *sep = url != NULL ? strstr(url, "://") : NULL;
    if (sep == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(rows[i].name);
        if ((size_t)(sep - url) == l && strncmp(url, rows[i].name, l) == 0)
            return &rows[i];
    }
    return NULL;
}

void idm__scheme_list(const idm__scheme *rows, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            put(out, cap, &len, ", ", 2);
        put(out, cap, &len, rows[i].name, strlen(rows[i].name));
        put(out, cap, &len, "://", 3);
    }
}

int idm__scheme_pick(const idm__scheme *rows, size_t n, const char *family, const char *want,
                     const char *url, const idm__scheme **row)
{
    char shown[128], known[96];
    idm__url_mask(url, shown, sizeof shown);
    *row = idm__scheme_find(rows, n, url);
    if (url == NULL || strstr(url, "://") == NULL)
        return idm_error_fail(IDM_EINVAL, "%s: '%.80s' is not a URL (want %s)", family, shown,
                              want);
    if (*row == NULL) {
        idm__scheme_list(rows, n, known, sizeof known);
        return idm_error_fail(IDM_EINVAL, "%s: unknown scheme in '%.80s' (known: %s)", family,
                              shown, known);
    }
    if ((*row)->backend == NULL)
        return idm_error_fail(IDM_EINVAL, "%s: %s:// support is not built in (%s)", family,
                              (*row)->name, (*row)->missing);
    return 0;
}

void idm__signals_block(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

void idm__signals_restore(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

int idm__thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t old;
    int rc;
    idm__signals_block(&old);
    rc = pthread_create(t, NULL, fn, arg);
    idm__signals_restore(&old);
    return rc;
}
