/* SPDX-License-Identifier: MIT */
/*
 * The SQLite ticket store (sqlite:///abs/path/file.db): one database file,
 * shared by every process on the machine that opens it, in WAL mode with
 * synchronous=FULL. FULL because a block is handed out the moment its UPDATE
 * commits: with NORMAL, a power loss could roll the counter back past a block
 * some process already used, and the next process would get it again.
 *
 * A block is taken by ONE statement,
 *   UPDATE ... SET next = next + size WHERE name = ? AND k = ? AND n = ?
 *                                       AND next <= limit - size
 *   RETURNING next - size
 * in autocommit: SQLite takes the database's write lock for the statement,
 * so concurrent takers (threads with their own handles, other processes)
 * are serialised by the lock and get disjoint blocks. The statement is
 * stepped to SQLITE_DONE, which is where the autocommit transaction
 * commits; a block counts as taken only once that step has succeeded. A
 * writer that cannot get the lock waits until the call's deadline (the
 * store's timeout, idm_store_set_timeout: IDM_STORE_TIMEOUT_MS unless set,
 * on CLOCK_MONOTONIC) and then fails with IDM_EUNAVAIL ("no answer within
 * N ms"); nothing was written then. The wait is our own busy handler, which
 * tries again every 100 us to 1 ms: SQLite's default one sleeps up to
 * 100 ms between tries, and a writer that sleeps that long can lose the
 * lock to writers committing back to back for its whole wait (seen with 8
 * threads on 2 loaded cores over 5 s). Writers of one process on one file
 * also queue for a turn on that file (found by device and inode) before
 * they ask SQLite for the lock, so threads of a process take turns instead
 * of racing each other's polls; only other processes poll. That queue is a
 * flag under a mutex with a condition variable on CLOCK_MONOTONIC rather
 * than a plain mutex, so that its wait too ends at the deadline:
 * pthread_mutex_timedlock waits on the wall clock (a clock step would
 * stretch or cut it), and pthread_mutex_clocklock is not seen by
 * ThreadSanitizer.
 *
 * Statements are prepared once at open and reset after each use. The handle
 * is opened NOMUTEX: store.c's per-store mutex keeps it to one thread at a
 * time.
 *
 * synchronous is read back after it is set and the store refuses to open
 * below FULL; nothing else can lower it for this connection (the URL takes
 * no options, and the setting is not kept in the file).
 *
 * The store is the database file: its device and inode, taken at open,
 * are its identity (sq_identity), so that one file named twice
 * (sqlite:///a/b.db and sqlite:///a/./b.db, a symbolic or hard link) is
 * known as one store.
 *
 * Fork: a child forked while another thread was inside SQLite would get
 * SQLite's internal mutexes (its static ones, the unix VFS's list of open
 * files) copied held, and hang in its first SQLite call. So every SQLite
 * call of this file is counted inside (fork_enter), and a pthread_atfork
 * prepare handler waits until no thread of the library is inside SQLite
 * (see fork_prepare for what it may wait for) and keeps others out until
 * the fork is done. A connection of the parent is never used or closed in
 * the child (SQLite forbids carrying one across fork; store.c refuses the
 * parent's stores there and leaves their connections alone), and the
 * child takes the locks by which a process says it has a file open for
 * the files its parent had open (see fork_child).
 *
 * What it does not do: URI options (?mode=ro, ?vfs=...), relative paths,
 * percent-escapes in the path, or network filesystems (SQLite's locking is
 * not reliable there; that is SQLite's own caveat).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "segment_internal.h"

#define PREFIX "sqlite://"
#define NS_PER_MS INT64_C(1000000)
#define MAX_PATH 4000
/* A statement that finds the lock taken after it had read (SQLITE_BUSY_SNAPSHOT
 * and the like) is tried again this many times; it wrote nothing. */
#define BUSY_RETRIES 3
/* RETURNING came with SQLite 3.35.0. */
#define MIN_SQLITE 3035000

typedef struct sq_store {
    sqlite3 *db;
    sqlite3_stmt *create, *take, *next_of, *list, *floor_get, *floor_raise;
    int64_t timeout_ms; /* the longest a call may take */
    int64_t deadline; /* the call in progress must end by then (monotonic ns) */
    bool yielded; /* the busy handler gave up for a fork (see fork_yield) */
    struct file_turn *turn; /* the writers' queue of this process on the file */
    dev_t dev; /* the file's, at open: its identity */
    ino_t ino;
    char url[MAX_PATH + 16]; /* for messages */
} sq_store;

/* ---------------------------------------------------------------- errors */

/* The IDM code for a SQLite result: the store being locked, out of reach or
 * broken is IDM_EUNAVAIL (the allocator tries again or elsewhere); anything
 * else (a schema someone changed, misuse) is IDM_EIO. */
static int idm_code(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOMEM:
        return IDM_ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_PERM:
        return IDM_EUNAVAIL;
    default:
        return IDM_EIO;
    }
}

/* A call starts: it must end within the timeout from now. */
static void begin_call(sq_store *s)
{
    s->deadline = idm__mono_ns() + s->timeout_ms * NS_PER_MS;
}

/* Fail with the connection's message; call before resetting the statement
 * (a reset may replace the message). Busy once the deadline has passed:
 * another connection held the write lock for the whole wait. */
static int sq_fail(sq_store *s, int rc, const char *what)
{
    if ((rc & 0xff) == SQLITE_BUSY && idm__mono_ns() >= s->deadline)
        return idm__seg_fail(IDM_EUNAVAIL,
                             "store %s: %s: no answer within %lld ms: another connection holds "
                             "the write lock (%s)",
                             s->url, what, (long long)s->timeout_ms, sqlite3_errstr(rc));
    return idm__seg_fail(idm_code(rc), "store %s: %s: %s (%s)", s->url, what,
                         sqlite3_errmsg(s->db), sqlite3_errstr(rc));
}

/* ------------------------------------------------------------- statements */

/* One per database file in use in this process: its writers take turns
 * (held, under mu; waiters sleep on cv, which runs on CLOCK_MONOTONIC),
 * where SQLite's lock is polled. And, for a forked child, the file's
 * names and the locks it holds in the parent's stead (see fork_child). */
typedef struct file_turn {
    dev_t dev;
    ino_t ino;
    size_t refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool held;
    char *db_path, *shm_path; /* as SQLite names them; NULL if unknown */
    int db_fd, shm_fd;        /* a child's, holding its locks; -1: none */
    bool stale;               /* a child that could not take them */
    struct file_turn *next;
} file_turn;

static pthread_mutex_t turns_mu = PTHREAD_MUTEX_INITIALIZER;
static file_turn *turns;

/* A free turn. */
static void turn_init(file_turn *t)
{
    pthread_mutex_init(&t->mu, NULL);
    idm__cond_init_mono(&t->cv);
    t->held = false;
}

/* ------------------------------------------------------------------ fork */

/* The threads inside SQLite (fork_enter to fork_leave) and the forks
 * waiting for them, under fork_mu: fork_prepare sets forking and waits
 * until inside is 0; while forking, no thread enters (a fork is not starved
 * by threads entering one after the other). A thread already inside must
 * therefore never enter again: no path does (each store operation enters
 * once, after its turn: a thread waiting for its turn is not inside, and
 * calls only helpers that expect to be inside). fork_mu itself is not held
 * across fork(). (A mutex and a count rather than a read-write lock: the
 * forking thread would hold such a lock across fork(), and in the child,
 * where that thread has another id, it could not be unlocked, only made
 * anew over the lock ThreadSanitizer sees held.) */
static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fork_cv = PTHREAD_COND_INITIALIZER; /* inside 0, fork done */
static unsigned inside, forking;
/* Read without fork_mu by the busy handler: give up at once then. */
static _Atomic int forks_waiting;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* fork() waits here until no thread is inside SQLite. That is the SQLite
 * work in progress, never another connection's lock: a thread waiting for
 * SQLite's lock (the busy handler) gives up its try when a fork waits,
 * leaves, and tries again after the fork, within its call's deadline
 * (fork_yield). What is left: the statements' own work, at most an fsync
 * of the file or its WAL per commit (synchronous=FULL), an open's creation
 * of the file, a close's checkpoint, and SQLite's own brief retries of a
 * read snapshot while other processes reset the WAL under it. */
static void fork_prepare(void)
{
    atomic_fetch_add(&forks_waiting, 1);
    pthread_mutex_lock(&fork_mu);
    forking++;
    while (inside > 0)
        pthread_cond_wait(&fork_cv, &fork_mu);
    pthread_mutex_unlock(&fork_mu);
}

static void fork_parent(void)
{
    pthread_mutex_lock(&fork_mu);
    forking--;
    pthread_cond_broadcast(&fork_cv);
    pthread_mutex_unlock(&fork_mu);
    atomic_fetch_sub(&forks_waiting, 1);
}

/* A read lock on len bytes of fd from start, taken at once, or false. */
static bool read_lock(int fd, off_t start, off_t len)
{
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    return fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0;
}

/* The locks by which a process tells others it has a database file open,
 * in SQLite's unix locking (its file format's lock bytes): the shared lock
 * of the file (bytes PENDING + 2 on, 510 of them) and the shared lock of
 * the wal-index's "DMS" byte (128 of the -shm file). SQLite takes them
 * once per process and file, when its first connection opens the file. */
#define SQ_SHARED_FIRST (0x40000000 + 2)
#define SQ_SHARED_SIZE 510
#define SQ_SHM_DMS 128

/* A file the parent had open, in the child (see fork_child): its locks,
 * on descriptors of the child's own, kept open for good (closing one would
 * drop every lock the process has on the file, SQLite's too). */
static void hold_in_child(file_turn *t)
{
    /* A grandchild: its parent's descriptors hold nothing here (locks are
     * not inherited), and no lock of this process is on the file yet. */
    if (t->db_fd >= 0)
        close(t->db_fd);
    if (t->shm_fd >= 0)
        close(t->shm_fd);
    t->db_fd = t->db_path != NULL ? open(t->db_path, O_RDONLY | O_CLOEXEC) : -1;
    t->shm_fd = t->shm_path != NULL ? open(t->shm_path, O_RDWR | O_CLOEXEC) : -1;
    t->stale = !read_lock(t->db_fd, SQ_SHARED_FIRST, SQ_SHARED_SIZE) ||
               !read_lock(t->shm_fd, SQ_SHM_DMS, 1);
}

/* In a forked child only the forking thread exists: fork_mu (taken for a
 * moment by threads entering and leaving) and fork_cv (waited on by
 * threads of the parent) are made anew, with no fork waiting and no
 * thread inside. A turn (or the list) held by another thread of the parent
 * would be held forever, and a store the child opens on that file would
 * wait on it: every turn starts free.
 *
 * No thread was inside SQLite at fork, so the parent's connections were
 * idle: the child inherits no lock held in SQLite's record of each file
 * (one per file and process, which its own connections to the file share).
 * But that record says the locks SQLite takes once per process and file
 * are held, and they are not: they were the parent's, and fcntl locks are
 * not inherited. Another process would take the child's connections to
 * the file for none: the parent closing its last one would checkpoint and
 * delete the WAL under them (the child's later commits lost, its blocks
 * handed out again), and a new process would reset the wal-index as its
 * first user. So the child takes those locks itself, at once, while the
 * parent still holds them (a read lock is refused only beside a write
 * lock, which no process can hold on them then). A file whose locks the
 * child cannot take is marked stale: its stores do not open. */
static void fork_child(void)
{
    pthread_mutex_init(&fork_mu, NULL);
    pthread_cond_init(&fork_cv, NULL);
    inside = 0;
    forking = 0;
    atomic_store(&forks_waiting, 0);
    pthread_mutex_init(&turns_mu, NULL);
    for (file_turn *t = turns; t != NULL; t = t->next) {
        turn_init(t);
        hold_in_child(t);
    }
}

static void fork_register(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* Into SQLite (after any fork waiting) and out: see inside. */
static void fork_enter(void)
{
    pthread_mutex_lock(&fork_mu);
    while (forking > 0)
        pthread_cond_wait(&fork_cv, &fork_mu);
    inside++;
    pthread_mutex_unlock(&fork_mu);
}

static void fork_leave(void)
{
    pthread_mutex_lock(&fork_mu);
    if (--inside == 0 && forking > 0)
        pthread_cond_broadcast(&fork_cv);
    pthread_mutex_unlock(&fork_mu);
}

/* A SQLite call answered busy because the busy handler gave up for a fork
 * (s->yielded): it wrote nothing, and the caller has reset it. Let the
 * fork happen: the thread leaves and enters again, which waits for the
 * fork to end. true: run it again (the call's deadline still bounds
 * the wait for SQLite's lock). */
static bool fork_yield(sq_store *s)
{
    s->yielded = false;
    fork_leave();
    fork_enter();
    return idm__mono_ns() < s->deadline;
}

/* Whether SQLite's answer rc is the busy handler's giving up for a fork. */
static bool for_fork(const sq_store *s, int rc)
{
    return (rc & 0xff) == SQLITE_BUSY && s->yielded;
}

/* The turn of the file dev, ino, which SQLite calls db_path. */
static file_turn *turn_get(dev_t dev, ino_t ino, const char *db_path)
{
    file_turn *t;
    pthread_mutex_lock(&turns_mu);
    for (t = turns; t != NULL && !(t->dev == dev && t->ino == ino); t = t->next)
        ;
    if (t == NULL && (t = calloc(1, sizeof *t)) != NULL) {
        t->dev = dev;
        t->ino = ino;
        t->db_fd = t->shm_fd = -1;
        if (db_path != NULL && (t->db_path = strdup(db_path)) != NULL &&
            (t->shm_path = malloc(strlen(db_path) + 5)) != NULL)
            sprintf(t->shm_path, "%s-shm", db_path);
        turn_init(t);
        t->next = turns;
        turns = t;
    }
    if (t != NULL)
        t->refs++;
    pthread_mutex_unlock(&turns_mu);
    return t;
}

static void turn_put(file_turn *t)
{
    file_turn **pp;
    if (t == NULL)
        return;
    pthread_mutex_lock(&turns_mu);
    if (--t->refs == 0) {
        for (pp = &turns; *pp != t; pp = &(*pp)->next)
            ;
        *pp = t->next;
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        /* A child's descriptors would be here only with a store of the
         * parent's on the file, which keeps refs above 0 for good. */
        free(t->db_path);
        free(t->shm_path);
        free(t);
    }
    pthread_mutex_unlock(&turns_mu);
}

/* The writer's turn in this process on s's file, waited for until the
 * call's deadline. */
static int turn_take(sq_store *s, const char *what)
{
    file_turn *t = s->turn;
    struct timespec ts = {(time_t)(s->deadline / 1000000000), (long)(s->deadline % 1000000000)};
    bool got = false;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        int rc;
        /* Also a turn that came free as the wait timed out is taken. */
        if (!t->held) {
            t->held = got = true;
            break;
        }
        rc = pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (rc != 0 && rc != EINTR && !(rc == ETIMEDOUT && !t->held))
            break;
    }
    pthread_mutex_unlock(&t->mu);
    if (!got)
        return idm__seg_fail(IDM_EUNAVAIL,
                             "store %s: %s: no answer within %lld ms: other writers of this "
                             "process on the file held it (nothing written)",
                             s->url, what, (long long)s->timeout_ms);
    return 0;
}

static void turn_give(sq_store *s)
{
    file_turn *t = s->turn;
    pthread_mutex_lock(&t->mu);
    t->held = false;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* SQLite's busy handler: another connection holds the lock. Try again
 * soon (100 us, growing to 1 ms) until the call's deadline, so a waiter is
 * not starved by writers that commit back to back. arg is the store. */
static int busy_wait(void *arg, int count)
{
    sq_store *s = arg;
    int64_t left = s->deadline - idm__mono_ns(), pause_ns;
    if (left <= 0)
        return 0;
    /* A fork waits for this thread to leave SQLite: give up this try
     * (nothing written), to be made again after the fork (fork_yield). */
    if (atomic_load(&forks_waiting) > 0) {
        s->yielded = true;
        return 0;
    }
    pause_ns = (count < 10 ? 100 * (int64_t)(count + 1) : 1000) * 1000;
    if (pause_ns > left)
        pause_ns = left;
    nanosleep(&(struct timespec){0, (long)pause_ns}, NULL);
    return 1;
}

/* Step st (its parameters bound) once; retry a busy step that wrote nothing.
 * Returns SQLITE_ROW, SQLITE_DONE or an error code (statement not reset). */
static int step(sq_store *s, sqlite3_stmt *st)
{
    int rc = SQLITE_OK;
    for (int i = 0; i <= BUSY_RETRIES;) {
        s->yielded = false;
        rc = sqlite3_step(st);
        /* A busy error from the first step means the statement never got
         * the write lock: nothing was written and it may run again. Plain
         * SQLITE_BUSY has already waited busy_timeout, so only the quick
         * variants (a stale snapshot) are retried, and a wait cut short for
         * a fork (not counted: the fork ends). */
        if (for_fork(s, rc)) {
            sqlite3_reset(st);
            if (!fork_yield(s))
                return rc;
            continue;
        }
        if (rc != SQLITE_BUSY_SNAPSHOT && rc != SQLITE_BUSY_RECOVERY)
            return rc;
        sqlite3_reset(st);
        i++;
    }
    return rc;
}

/* Step a statement that returns no rows to SQLITE_DONE. */
static int run_done(sq_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = step(s, st);
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc == SQLITE_ROW)
        rc = idm__seg_fail(IDM_EIO, "store %s: %s: unexpected row", s->url, what);
    else
        rc = sq_fail(s, rc, what);
    sqlite3_reset(st);
    return rc;
}

/* An INTEGER column in 0 to max, strictly (SQLite columns take any type). */
static int col_i64(sq_store *s, sqlite3_stmt *st, int i, int64_t max, int64_t *out,
                   const char *what)
{
    int64_t v;
    if (sqlite3_column_type(st, i) != SQLITE_INTEGER)
        return idm__seg_fail(IDM_EIO, "store %s: %s: column %d is not an integer", s->url, what,
                             i + 1);
    v = sqlite3_column_int64(st, i);
    if (v < 0 || v > max)
        return idm__seg_fail(IDM_EIO, "store %s: %s: value %lld in column %d is outside 0 to %lld",
                             s->url, what, (long long)v, i + 1, (long long)max);
    *out = v;
    return 0;
}

/* k and n of a row: 0 <= k < n, both 32-bit. */
static int col_kn(sq_store *s, sqlite3_stmt *st, int i, uint32_t *k, uint32_t *n,
                  const char *what)
{
    int64_t vk = 0, vn = 0;
    int rc;
    if ((rc = col_i64(s, st, i, UINT32_MAX, &vk, what)) != 0 ||
        (rc = col_i64(s, st, i + 1, UINT32_MAX, &vn, what)) != 0)
        return rc;
    if (vk >= vn)
        return idm__seg_fail(IDM_EIO, "store %s: %s: the row says store %lld of %lld", s->url,
                             what, (long long)vk, (long long)vn);
    *k = (uint32_t)vk;
    *n = (uint32_t)vn;
    return 0;
}

/* ------------------------------------------------------------------ ops */

/* The writer takes its turn in this process first (see the top). */
static int sq_create(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    sq_store *s = ctx;
    sqlite3_stmt *st = s->create;
    int rc;
    begin_call(s);
    if ((rc = turn_take(s, "cannot create the sequence")) != 0)
        return rc;
    fork_enter();
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, start);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)k);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)n);
    rc = step(s, st);
    /* On the primary key (EEXIST) the INSERT changed nothing. */
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
        rc = idm__seg_fail(IDM_EEXIST, "sequence %s exists already in %s", name, s->url);
    else
        rc = sq_fail(s, rc, "cannot create the sequence");
    sqlite3_reset(st);
    fork_leave();
    turn_give(s);
    return rc;
}

/* Why a take matched no row: no such sequence, another k of n, or its
 * counter too near the limit. Only for the message and code; nothing was
 * taken. Inside SQLite (fork_enter) already. */
static int take_miss(sq_store *s, const char *name, int64_t size, uint32_t k, uint32_t n)
{
    sqlite3_stmt *st = s->next_of;
    int64_t next = 0;
    uint32_t vk = 0, vn = 0;
    int rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    rc = step(s, st);
    if (rc == SQLITE_DONE)
        rc = idm__seg_fail(IDM_ENOSEQ, "sequence %s does not exist in %s", name, s->url);
    else if (rc != SQLITE_ROW)
        rc = sq_fail(s, rc, "cannot read the sequence");
    else if ((rc = col_i64(s, st, 0, IDM_SEQ_MAX, &next, "reading the sequence")) == 0)
        rc = col_kn(s, st, 1, &vk, &vn, "reading the sequence");
    sqlite3_reset(st);
    if (rc != 0)
        return rc;
    if (vk != k || vn != n)
        return idm__seg_fail(IDM_EINVAL,
                             "sequence %s: store %s is store %u of %u for it, not %u of %u: list "
                             "the stores in the order they were created with (nothing taken)",
                             name, s->url, (unsigned)vk, (unsigned)vn, (unsigned)k, (unsigned)n);
    return idm__seg_fail(IDM_ERANGE,
                         "sequence %s in %s: a block of %lld from %lld would pass 2^62 (the "
                         "counter is exhausted)",
                         name, s->url, (long long)size, (long long)next);
}

/* The writer takes its turn in this process first (see the top). */
static int sq_take(void *ctx, const char *name, int64_t size, uint32_t k, uint32_t n,
                   int64_t limit, int64_t *start)
{
    sq_store *s = ctx;
    sqlite3_stmt *st = s->take;
    int64_t v = 0;
    int rc;
    begin_call(s);
    if ((rc = turn_take(s, "cannot take a block")) != 0)
        return rc;
    if (size <= 0 || size > IDM_SEQ_MAX || limit <= 0 || limit > IDM_SEQ_MAX) {
        turn_give(s);
        return idm__seg_fail(IDM_EINVAL, "sequence %s: block size %lld is outside 1 to 2^62",
                             name, (long long)size);
    }
    fork_enter();
    sqlite3_bind_int64(st, 1, size);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, limit);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)k);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)n);
    rc = step(s, st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        rc = take_miss(s, name, size, k, n);
    } else if (rc != SQLITE_ROW) {
        rc = sq_fail(s, rc, "cannot take a block");
    } else if ((rc = col_i64(s, st, 0, IDM_SEQ_MAX, &v, "taking a block")) == 0) {
        /* The autocommit transaction commits when the statement completes:
         * only then is the block ours. (The primary key makes a second row
         * impossible.) */
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
            *start = v;
            rc = 0;
        } else {
            rc = rc == SQLITE_ROW ? idm__seg_fail(IDM_EIO, "store %s: sequence %s has two rows",
                                                  s->url, name)
                                  : sq_fail(s, rc, "cannot commit the block taken");
        }
    }
    /* After a bad value the UPDATE may still commit when the statement is
     * reset: the block is abandoned, which is safe (a gap). */
    sqlite3_reset(st);
    fork_leave();
    turn_give(s);
    return rc;
}

static int sq_list(void *ctx, idm_seq_info **out, size_t *count)
{
    sq_store *s = ctx;
    sqlite3_stmt *st = s->list;
    idm_seq_info *v = NULL;
    size_t len = 0, cap = 0;
    int rc;
    *out = NULL;
    *count = 0;
    begin_call(s);
    fork_enter();
    while ((rc = step(s, st)) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 0);
        int nlen = sqlite3_column_bytes(st, 0);
        idm_seq_info *e;
        if (len == cap) {
            size_t ncap = cap == 0 ? 16 : cap * 2;
            idm_seq_info *nv = realloc(v, ncap * sizeof *nv);
            if (nv == NULL) {
                rc = idm__seg_fail(IDM_ENOMEM, "store %s: out of memory listing", s->url);
                goto fail;
            }
            v = nv;
            cap = ncap;
        }
        e = &v[len];
        memset(e, 0, sizeof *e);
        if (sqlite3_column_type(st, 0) != SQLITE_TEXT || name == NULL || nlen <= 0 ||
            nlen > IDM_SEQ_NAME_MAX || strlen((const char *)name) != (size_t)nlen) {
            rc = idm__seg_fail(IDM_EIO, "store %s: a sequence's name is not 1 to %d bytes of text",
                               s->url, IDM_SEQ_NAME_MAX);
            goto fail;
        }
        memcpy(e->name, name, (size_t)nlen);
        if ((rc = col_i64(s, st, 1, IDM_SEQ_MAX, &e->next, "listing")) != 0 ||
            (rc = col_kn(s, st, 2, &e->k, &e->n, "listing")) != 0)
            goto fail;
        len++;
    }
    if (rc != SQLITE_DONE) {
        rc = sq_fail(s, rc, "cannot list the sequences");
        goto fail;
    }
    sqlite3_reset(st);
    fork_leave();
    *out = v;
    *count = len;
    return 0;
fail:
    free(v);
    sqlite3_reset(st);
    fork_leave();
    return rc;
}

static int sq_floor_get(void *ctx, const char *name, uint32_t k, int64_t *floor)
{
    sq_store *s = ctx;
    sqlite3_stmt *st = s->floor_get;
    int rc;
    begin_call(s);
    fork_enter();
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)k);
    rc = step(s, st);
    if (rc == SQLITE_DONE) {
        *floor = 0; /* never recorded */
        rc = 0;
    } else if (rc == SQLITE_ROW) {
        rc = col_i64(s, st, 0, IDM_SEQ_MAX, floor, "reading a floor");
    } else {
        rc = sq_fail(s, rc, "cannot read a floor");
    }
    sqlite3_reset(st);
    fork_leave();
    return rc;
}

/* The writer takes its turn in this process first (see the top). */
static int sq_floor_raise(void *ctx, const char *name, uint32_t k, int64_t floor)
{
    sq_store *s = ctx;
    sqlite3_stmt *st = s->floor_raise;
    int rc;
    begin_call(s);
    if ((rc = turn_take(s, "cannot raise a floor")) != 0)
        return rc;
    if (floor < 0 || floor > IDM_SEQ_MAX) {
        rc = idm__seg_fail(IDM_EINVAL, "sequence %s: floor %lld is outside 0 to 2^62", name,
                           (long long)floor);
    } else {
        fork_enter();
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)k);
        sqlite3_bind_int64(st, 3, floor);
        rc = run_done(s, st, "cannot raise a floor");
        fork_leave();
    }
    turn_give(s);
    return rc;
}

/* Close, inside SQLite (fork_enter) already; the turn is let go after. */
static void close_db(sq_store *s)
{
    sqlite3_finalize(s->create);
    sqlite3_finalize(s->take);
    sqlite3_finalize(s->next_of);
    sqlite3_finalize(s->list);
    sqlite3_finalize(s->floor_get);
    sqlite3_finalize(s->floor_raise);
    sqlite3_close(s->db);
}

/* Never called in a forked child on the parent's store: store.c leaves a
 * connection of the parent alone there (see the top). */
static void sq_close(void *ctx)
{
    sq_store *s = ctx;
    if (s == NULL)
        return;
    /* The turn goes with the connection, both inside: at a fork, a file
     * has a turn exactly when a connection of the parent has it open. */
    fork_enter();
    close_db(s);
    turn_put(s->turn);
    fork_leave();
    free(s);
}

static const idm_store_ops ops = {sq_create, sq_take, sq_list, sq_floor_get, sq_floor_raise,
                                  sq_close};

/* "sqlite:DEV:INO" of the database file. */
static int sq_identity(void *ctx, char *out, size_t cap)
{
    const sq_store *s = ctx;
    int n = snprintf(out, cap, "sqlite:%llu:%llu", (unsigned long long)s->dev,
                     (unsigned long long)s->ino);
    if (n < 0 || (size_t)n >= cap)
        return idm__seg_fail(IDM_EINVAL, "store %s: no room for its identity", s->url);
    return 0;
}

/* ----------------------------------------------------------------- open */

/* sqlite:///abs/path: the path, or IDM_EINVAL naming what is wrong. */
static int parse_url(const char *url, const char **path)
{
    const char *p;
    if (strncmp(url, PREFIX, strlen(PREFIX)) != 0)
        return idm__seg_fail(IDM_EINVAL, "store: '%.80s' is not a sqlite:// URL", url);
    p = url + strlen(PREFIX);
    if (p[0] != '/')
        return idm__seg_fail(IDM_EINVAL,
                             "store: '%.80s' needs an absolute path, as sqlite:///path/file.db "
                             "(three slashes; no host, no relative path)",
                             url);
    if (strlen(p) > MAX_PATH)
        return idm__seg_fail(IDM_EINVAL, "store: the path in '%.40s...' is longer than %d bytes",
                             url, MAX_PATH);
    if (p[strlen(p) - 1] == '/')
        return idm__seg_fail(IDM_EINVAL, "store: '%.80s' names a directory, not a file (want "
                                         "sqlite:///path/file.db)", url);
    for (const char *c = p; *c != '\0'; c++) {
        unsigned char u = (unsigned char)*c;
        /* SQLite would read '?' as URI options only when opened with
         * SQLITE_OPEN_URI; refusing them here keeps "sqlite:///x.db?mode=ro"
         * from silently opening a file named "x.db?mode=ro". Escapes are
         * not decoded, so '%' is refused rather than guessed at. */
        if (u == '?' || u == '#')
            return idm__seg_fail(IDM_EINVAL,
                                 "store: '%.80s' has a query or fragment; sqlite:// URLs take "
                                 "no options",
                                 url);
        if (u == '%')
            return idm__seg_fail(IDM_EINVAL,
                                 "store: '%.80s' has a '%%': percent-escapes are not decoded", url);
        if (u < 0x20 || u == 0x7f)
            return idm__seg_fail(IDM_EINVAL,
                                 "store: the path in '%.80s' has a control character at byte %zu",
                                 url, (size_t)(c - url) + 1);
    }
    *path = p;
    return 0;
}

/* The single value a statement answers (a PRAGMA, a count). */
static int pragma_cb(void *arg, int ncol, char **vals, char **names)
{
    (void)names;
    if (ncol >= 1 && vals[0] != NULL)
        snprintf(arg, 16, "%s", vals[0]);
    return 0;
}

/* Run sql, again after a wait for SQLite's lock cut short for a fork (a
 * transaction it opened rolled back first). */
static int exec(sq_store *s, const char *sql, const char *what, char *answer)
{
    int rc;
    for (;;) {
        s->yielded = false;
        rc = sqlite3_exec(s->db, sql, answer != NULL ? pragma_cb : NULL, answer, NULL);
        if (!for_fork(s, rc))
            break;
        if (!sqlite3_get_autocommit(s->db))
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        if (!fork_yield(s))
            break;
    }
    if (rc != SQLITE_OK)
        return sq_fail(s, rc, what);
    return 0;
}

/* Prepare sql (reading the schema may wait for SQLite's lock: again after
 * a wait cut short for a fork). */
static int prepare(sq_store *s, const char *sql, sqlite3_stmt **st)
{
    int rc;
    do {
        s->yielded = false;
        rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    } while (for_fork(s, rc) && fork_yield(s));
    if (rc != SQLITE_OK)
        return sq_fail(s, rc, "cannot prepare a statement");
    return 0;
}

/* WAL and synchronous=FULL, or IDM_EUNAVAIL if either does not take. */
static int set_modes(sq_store *s, char *answer)
{
    int rc;
    /* WAL: readers never block the writer, and several processes can share
     * the file. journal_mode answers the mode in force: a filesystem that
     * cannot do WAL (no shared memory) answers something else. */
    if ((rc = exec(s, "PRAGMA journal_mode=WAL", "cannot switch to WAL mode", answer)) != 0)
        return rc;
    if (strcmp(answer, "wal") != 0)
        return idm__seg_fail(IDM_EUNAVAIL, "store %s: cannot use WAL mode here (journal mode is "
                                           "'%s')", s->url, answer);
    /* FULL: every commit is synced before it returns, so no block handed out
     * can be lost to a power failure and handed out again. Read back: a
     * setting that did not take (a build or VFS that ignores it) is refused,
     * not trusted. 2 is FULL, 3 EXTRA (more). */
    if ((rc = exec(s, "PRAGMA synchronous=FULL", "cannot set synchronous=FULL", NULL)) != 0 ||
        (rc = exec(s, "PRAGMA synchronous", "cannot read synchronous", answer)) != 0)
        return rc;
    if (strcmp(answer, "2") != 0 && strcmp(answer, "3") != 0)
        return idm__seg_fail(IDM_EUNAVAIL,
                             "store %s: synchronous is %s after setting it to FULL (2): a "
                             "block handed out could be lost to a power failure and handed "
                             "out again",
                             s->url, answer);
    return 0;
}

/* The tables, if missing. Looked for first with a read, which in WAL mode
 * waits for no writer: opening a store that is busy handing out blocks must
 * not queue for the write lock (with writers committing back to back it
 * could wait out busy_timeout and fail). IMMEDIATE: take the write lock
 * first, so two processes opening a new file at once create the tables one
 * after the other. */
static int ensure_tables(sq_store *s, char *answer)
{
    int rc;
    if ((rc = exec(s,
                   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('"
                   IDM__SEQ_TABLE "', '" IDM__FLOOR_TABLE "')",
                   "cannot look for the tables", answer)) != 0)
        return rc;
    if (strcmp(answer, "2") != 0 &&
        (rc = exec(s,
                   "BEGIN IMMEDIATE;"
                   "CREATE TABLE IF NOT EXISTS " IDM__SEQ_TABLE
                   "(name TEXT PRIMARY KEY, next INTEGER NOT NULL,"
                   " k INTEGER NOT NULL, n INTEGER NOT NULL);"
                   "CREATE TABLE IF NOT EXISTS " IDM__FLOOR_TABLE
                   "(name TEXT NOT NULL, k INTEGER NOT NULL, floor INTEGER NOT NULL,"
                   " PRIMARY KEY(name, k));"
                   "COMMIT",
                   "cannot create the tables", NULL)) != 0)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* The file's identity (it exists once the tables are in it) and its
 * writers' turn in this process. */
static int take_identity(sq_store *s, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return idm__seg_fail(IDM_EUNAVAIL, "store %s: cannot stat %s: %s", s->url, path,
                             strerror(errno));
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->turn = turn_get(s->dev, s->ino, sqlite3_db_filename(s->db, "main"));
    if (s->turn == NULL)
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", s->url);
    if (s->turn->stale)
        return idm__seg_fail(IDM_EFORKED,
                             "store %s: this process was forked from one with the file open, "
                             "and could not then take the file's locks in its stead (another "
                             "process held them): SQLite's record of the file in this process "
                             "cannot be trusted; open it from a process forked before the "
                             "file was opened, or from a new one",
                             s->url);
    return 0;
}

static int prepare_all(sq_store *s)
{
    int rc;
    if ((rc = prepare(s,
                      "INSERT INTO " IDM__SEQ_TABLE "(name, next, k, n) VALUES(?1, ?2, ?3, ?4)",
                      &s->create)) != 0 ||
        (rc = prepare(s,
                      "UPDATE " IDM__SEQ_TABLE " SET next = next + ?1"
                      " WHERE name = ?2 AND k = ?4 AND n = ?5 AND next <= ?3 - ?1"
                      " RETURNING next - ?1",
                      &s->take)) != 0 ||
        (rc = prepare(s, "SELECT next, k, n FROM " IDM__SEQ_TABLE " WHERE name = ?1",
                      &s->next_of)) != 0 ||
        (rc = prepare(s, "SELECT name, next, k, n FROM " IDM__SEQ_TABLE " ORDER BY name",
                      &s->list)) != 0 ||
        (rc = prepare(s, "SELECT floor FROM " IDM__FLOOR_TABLE " WHERE name = ?1 AND k = ?2",
                      &s->floor_get)) != 0)
        return rc;
    return prepare(s,
                   "INSERT INTO " IDM__FLOOR_TABLE "(name, k, floor) VALUES(?1, ?2, ?3)"
                   " ON CONFLICT(name, k) DO UPDATE SET floor = max(floor, excluded.floor)",
                   &s->floor_raise);
}

static int sq_open(void **ctx, const char *url, int64_t timeout_ms)
{
    const char *path = NULL;
    char answer[16] = ""; /* a PRAGMA's or a count's one value */
    sq_store *s;
    int rc;
    if ((rc = parse_url(url, &path)) != 0)
        return rc;
    if (sqlite3_libversion_number() < MIN_SQLITE)
        return idm__seg_fail(IDM_EUNAVAIL,
                             "store %s: SQLite %s is too old (3.35.0 or later is needed for "
                             "UPDATE ... RETURNING)",
                             url, sqlite3_libversion());
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", url);
    snprintf(s->url, sizeof s->url, "%s", url);
    /* Before the first call into SQLite: fork() waits for the calls. */
    pthread_once(&fork_once, fork_register);
    /* Opening is one call. */
    s->timeout_ms = timeout_ms;
    begin_call(s);
    fork_enter();
    rc = sqlite3_open_v2(path, &s->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        if (s->db == NULL) {
            fork_leave();
            free(s);
            return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", url);
        }
        rc = idm__seg_fail(IDM_EUNAVAIL, "store %s: cannot open %s: %s", url, path,
                           sqlite3_errmsg(s->db));
    } else {
        sqlite3_extended_result_codes(s->db, 1);
        sqlite3_busy_handler(s->db, busy_wait, s);
        if ((rc = set_modes(s, answer)) == 0 && (rc = ensure_tables(s, answer)) == 0 &&
            (rc = take_identity(s, path)) == 0)
            rc = prepare_all(s);
    }
    if (rc != 0) {
        close_db(s);
        turn_put(s->turn);
    }
    fork_leave();
    if (rc != 0) {
        free(s);
        return rc;
    }
    *ctx = s;
    return 0;
}

static void sq_set_timeout(void *ctx, int64_t ms)
{
    ((sq_store *)ctx)->timeout_ms = ms;
}

const idm__store_backend idm__store_sqlite = {&ops, sq_open, sq_set_timeout, sq_identity};
