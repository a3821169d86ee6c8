/* SPDX-License-Identifier: MIT */
/*
 * The floor file (idm_seq_opts.floor_file): a local record of how far each
 * store of one sequence has been seen to go, so that a store whose counter
 * went back is refused even when it is the only store, and across restarts.
 * Not installed.
 *
 * The file is text, rewritten whole (temporary file, fsync, rename, fsync
 * of the directory) under an exclusive lock on PATH.lock, so readers never
 * see half of it and writers (threads, processes) take turns:
 *
 *   idmint-floors 1
 *   sequence NAME
 *   stores N
 *   K FLOOR          one line per store with a floor, K in 0..N-1
 *
 * FLOOR is in store K's local units (store K's counter must never be below
 * it). A write merges: each floor becomes the larger of the file's and the
 * caller's, so the file only ever goes up, whoever writes.
 */
#ifndef IDM_SEGMENT_FLOORS_H
#define IDM_SEGMENT_FLOORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read path's floors for sequence name with n stores into floor[0..n-1]
 * (has[k]: the file has a line for k; floor[k] 0 when not). A missing file
 * is no floors at all (0). IDM_EINVAL: the file belongs to another sequence
 * or another number of stores, or path is not a regular file; IDM_ECORRUPT:
 * it does not parse; IDM_EIO: it cannot be read. The detail names the file. */
int idm__floors_read(const char *path, const char *name, size_t n, int64_t *floor, bool *has);

/* Raise path's floors to at least hi[0..n-1] (entries of 0 add no line), on
 * disk before it returns 0. Errors as idm__floors_read, IDM_EIO when it
 * cannot be written. */
int idm__floors_raise(const char *path, const char *name, size_t n, const int64_t *hi);

#endif /* IDM_SEGMENT_FLOORS_H */
