/* SPDX-License-Identifier: MIT */
/*
 * diskfault.so: a disk that fails under one directory, for the whole-system
 * fault suite (FAULTS H3). Loaded with LD_PRELOAD into a minter:
 *
 *   IDMS_DISKFAULT_DIR=/dir  IDMS_DISKFAULT_FLAG=/flagfile
 *
 * While the flag file exists, fsync(2) and fdatasync(2) of any file or
 * directory under /dir fail with ENOSPC and do nothing, as a full or failing
 * disk's would: every state file, claim file and lease record write there
 * then fails at its sync (idmint syncs before it relies on a write), and
 * succeeds again once the flag is removed. Everything else passes through.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failing(int fd)
{
    const char *dir = getenv("IDMS_DISKFAULT_DIR");
    const char *flag = getenv("IDMS_DISKFAULT_FLAG");
    char link[64], path[PATH_MAX];
    struct stat st;
    ssize_t n;
    size_t dlen;
    if (!dir || !flag || stat(flag, &st) != 0)
        return 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    dlen = strlen(dir);
    return strncmp(path, dir, dlen) == 0 && (path[dlen] == '/' || path[dlen] == '\0');
}

int fsync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (failing(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd);
}

int fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (failing(fd)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd);
}
