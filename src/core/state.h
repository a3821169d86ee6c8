/* SPDX-License-Identifier: MIT */
/*
 * The generator's state file: one line holding a high-water mark, replaced
 * atomically (write a temp file, fsync, rename, fsync the directory) and
 * guarded by an flock on a lock file beside it. Internal to the library.
 *
 * Format: "idmint-state 1 <mark_unix_ms> <crc>\n", <crc> being 8 lower-case
 * hex digits of the CRC-32 (IEEE) of the bytes before the final space. Every
 * id minted by the generator that wrote it has a time at or below the mark.
 *
 * The path is resolved once, at open, symbolic links and all: the lock
 * ("<resolved>.lock"), the temporary file and the rename act on the file the
 * path named then, so a link is written through (never replaced by a regular
 * file) and a run through a link excludes a run through the real path. The
 * state file and its lock must be regular files: a FIFO, a directory or a
 * device is refused at once (opened without blocking), never waited on.
 */
#ifndef IDM_STATE_H
#define IDM_STATE_H

#include <stdbool.h>
#include <idmint/clock.h>

/* Every system call that writes (or syncs) a state or lock file is preceded
 * by a fault site of the shared hook (common.h): "state.lock-open" (the lock
 * file, made at open), then for each write "state.unlink" (a leftover
 * temporary file), "state.open", "state.write", "state.fsync",
 * "state.rename" and "state.fsyncdir". */

typedef struct idm__state {
    char *path;      /* the resolved path: no symbolic link in it */
    char *tmp_path;  /* path + ".tmp" */
    char *lock_path; /* path + ".lock" */
    char *dir_path;  /* path's directory, synced after each rename (made at
                        open: a write allocates nothing) */
    int lock_fd;
    bool moved;      /* the paths live in a caller's buffer */
} idm__state;

/*
 * Resolve path, lock and read the file. On success *found tells whether a
 * valid mark was read into *mark. A missing or corrupt file is IDM_ENOENT or
 * IDM_ECORRUPT unless fresh is set, in which case *found is false. A lock
 * held by another open generator is IDM_EBUSY. A path that cannot be
 * resolved (a missing directory, a loop of links), or a state or lock file
 * that is not a regular file, is IDM_EIO, before anything is created.
 */
int idm__state_open(idm__state *s, const char *path, bool fresh, idm_unix_ms *mark,
                    bool *found);
/* Replace the stored mark atomically and durably. IDM_EIO on any failure,
 * in which case the file still holds its previous mark. */
int idm__state_write(idm__state *s, idm_unix_ms mark);
/* Move the paths into buf (cap bytes), freeing their heap copies: the state
 * then holds no pointer outside buf (a shared generator's memory). IDM_EINVAL
 * if they do not fit, in which case nothing moved. */
int idm__state_move_paths(idm__state *s, char *buf, size_t cap);
/* Release the lock and free the paths (unless moved). */
void idm__state_close(idm__state *s);

#endif /* IDM_STATE_H */
