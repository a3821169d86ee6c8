/* SPDX-License-Identifier: MIT */
/*
 * Small pieces every part of idmint shares: the core library, the lease and
 * segment libraries, the CLI and idmintd. Compiled into each library with
 * hidden visibility (never exported, never installed), and reached by the
 * programs through the static libraries they link, so a test that links the
 * static libraries sees one copy of each, the fault hook included.
 *
 * Nothing here sets an error detail: the callers name what failed in their
 * own words (the messages name the library's part, the file and the call).
 */
#ifndef IDM_COMMON_H
#define IDM_COMMON_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- time ---- */

/* CLOCK_MONOTONIC in ns: for deadlines and backoffs that no injected clock
 * drives (an injected idm_clock's mono_ns is used wherever one is given). */
int64_t idm__mono_ns(void);

/* ---- fault injection (SQLite's sqlite3FaultSim is the model) ---- */

/*
 * One hook for every file write and sync idmint makes. Each such system call
 * is preceded by idm__fault("<part>.<call>"), a named site:
 *     part: state (the generator's state file, core), lease-file (the file://
 *           lease backend), floors (the segment allocator's floor file)
 *     call: open, write, fsync, rename, fsyncdir, link, unlink, truncate, ...
 * e.g. "state.fsync", "lease-file.rename", "floors.fsyncdir". The catalogue
 * of sites, with the test that fails each one, is in docs/FAULTS.md.
 *
 * With no hook set (always, outside tests), idm__fault returns 0 at the cost
 * of one load and branch. A test sets idm__fault_hook; a nonzero return is
 * taken as the errno of the call at that site, which then fails without
 * being made (idm__fault sets errno and returns it). Not thread-safe to
 * change while idmint writes files.
 */
extern int (*idm__fault_hook)(const char *site);
int idm__fault_at(const char *site);

static inline int idm__fault(const char *site)
{
    return idm__fault_hook != NULL ? idm__fault_at(site) : 0;
}

/* ---- files ---- */

/* What a file that is not a regular one is, for messages: "a FIFO", "a
 * directory", "a character device", "a block device", "a socket", "a
 * symbolic link", or "of an unknown type". */
const char *idm__file_kind(mode_t mode);

/*
 * open(path, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode) retried on
 * EINTR, then fstat: a file that is not a regular one is closed and refused
 * (a FIFO with no writer is never waited on). Returns the descriptor (with
 * O_NONBLOCK cleared again), or -1 with errno set; for a file that is not
 * regular, errno is EINVAL and *kind (if not NULL) names what it is
 * (idm__file_kind), else *kind is NULL.
 */
int idm__open_regular(const char *path, int flags, mode_t mode, const char **kind);

/*
 * Read a small file whole: up to cap bytes of the regular file at path
 * (opened with idm__open_regular: a FIFO is refused, never waited on) into
 * buf, retrying reads cut by a signal. The count; or -1 with *why (whylen
 * bytes) saying what failed, "not a regular file (it is a FIFO)", "cannot
 * open it: <strerror>" or "cannot read it: <strerror>", *kind the kind of a
 * file that is not regular (else NULL) and errno the call's. No message is
 * set: the callers name the file and its use.
 */
ssize_t idm__read_regular(const char *path, char *buf, size_t cap, const char **kind, char *why,
                          size_t whylen);

/* Initialise cv to wait on CLOCK_MONOTONIC (pthread_cond_timedwait's
 * deadlines then come from idm__mono_ns), so that a wall clock set back
 * cannot stretch a wait. 0, or -1 (cv not initialised) if pthreads
 * refuses. */
int idm__cond_init_mono(pthread_cond_t *cv);

/*
 * Threads the libraries start (the lease keeper, the leased supervisor, a
 * client library's own) must not take the application's signals: a signal
 * a process handles in one thread (PostgreSQL's latch wake-ups, a
 * server's SIGTERM) would otherwise run its handler, or its default
 * action, in ours. idm__signals_block blocks every signal in the calling
 * thread and keeps the old mask in *old; a thread created meanwhile
 * inherits the full block; idm__signals_restore puts the mask back.
 * idm__thread_create does that around pthread_create: 0 or its error.
 */
void idm__signals_block(sigset_t *old);
void idm__signals_restore(const sigset_t *old);
int idm__thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* ---- URLs and backends ---- */

/*
 * A URL for messages, credentials masked, into out (always terminated, cut
 * to cap): the password of user:password@ in the authority (up to the first
 * '/', its last '@': never less than libpq reads) becomes "***",
 * and so does the value of a "password=" query or key-value option (up to
 * the next '&' or space). A URL without credentials is copied as it is.
 * Every backend and every message that shows a URL uses this one function.
 */
void idm__url_mask(const char *url, char *out, size_t cap);

/*
 * Keep the credentials of a command line out of ps(1): every argument that
 * idm__url_mask would change (a URL's user:password@, a "password=" option)
 * is copied to the heap, argv[i] is pointed at the copy, and the original
 * bytes, which /proc/<pid>/cmdline shows, are overwritten as the mask shows
 * them. Call first thing in main. The password was visible from exec until
 * then: documentation tells users to keep passwords in files instead. A
 * copy that cannot be made leaves that argument as it is.
 */
void idm__argv_hide_secrets(int argc, char **argv);

/*
 * A client library's message (libpq's, say) for a detail: msg on one line
 * (each run of white space one space, leading and trailing ones dropped),
 * every text of url's passwords (as idm__url_mask finds them: the
 * authority's, each "password=" value) replaced by "***", since such a
 * library may quote the URL or part of it. url NULL: nothing replaced.
 * "no message" if nothing is left; always terminated, cut to cap.
 */
void idm__text_line(const char *msg, const char *url, char *out, size_t cap);

/*
 * One table form for every family of backends chosen by URL scheme: rows of
 * a scheme name (without "://") and what implements it. A backend built
 * without its client library keeps its row with backend NULL and `missing`
 * naming the build option (e.g. "IDM_WITH_ETCD=OFF"), so that a URL of it is
 * told apart from an unknown scheme.
 */
typedef struct idm__scheme {
    const char *name;    /* "file", "etcd", "sqlite", "postgres", ... */
    const void *backend; /* the family's ops table; NULL if not built */
    const char *missing; /* when backend is NULL: the build option left off */
} idm__scheme;

/* The row of url's scheme (the text before "://", matched exactly), or NULL
 * if url has no "://" or a scheme no row names. */
const idm__scheme *idm__scheme_find(const idm__scheme *rows, size_t n, const char *url);

/* The known schemes for messages, "file://, etcd://" (rows not built
 * included), into out. */
void idm__scheme_list(const idm__scheme *rows, size_t n, char *out, size_t cap);

/*
 * The one dispatch: url's row into *row, 0; or IDM_EINVAL with one of these
 * details (the URL masked), family being "lease", "store", ...:
 *   "<family>: '<url>' is not a URL (want <want>)"
 *   "<family>: unknown scheme in '<url>' (known: <idm__scheme_list>)"
 *   "<family>: <scheme>:// support is not built in (<missing>)"
 */
int idm__scheme_pick(const idm__scheme *rows, size_t n, const char *family, const char *want,
                     const char *url, const idm__scheme **row);

#endif /* IDM_COMMON_H */
