/* SPDX-License-Identifier: MIT */
/*
 * Segment (ticket) allocation (library idmint_segment): small, dense integer
 * ids from named counters in a ticket store, handed out by an in-process
 * allocator in blocks, the way Flickr's ticket servers and Leaf's segment
 * mode do.
 *
 * A ticket store keeps one counter row per sequence name. A block is taken
 * by ONE atomic statement (UPDATE ... SET next = next + size ... RETURNING
 * next): concurrent takers get disjoint blocks, a crash after the statement
 * abandons the rest of its block (a gap), and nothing is ever handed out
 * twice. Stores are chosen by URL:
 *   sqlite:///path/file.db   SQLite in WAL mode (embedded default; several
 *                            processes on one machine may share the file)
 *   postgres://...           PostgreSQL through libpq (any libpq URI)
 *
 * Several stores can serve one sequence, Flickr style: of N stores, store k
 * (0-based, its position in the list) hands out ids congruent to k mod N,
 * so blocks from different stores never overlap and one store being down
 * only makes ids less ordered (and an allocator opens without it while the
 * others' floors are known: see idm_seq_open). Each store records its k and N for the
 * sequence at creation, and every block taken checks them: two clients that
 * list the stores in different orders get an error, not duplicates. Each
 * store also records how far the others have been seen to hand out, so a
 * store restored from an old backup (its counter rewound) is refused.
 *
 * A counter can also go back under a running allocator: a store restored
 * from a backup while allocators run, or libpq's reset reconnecting a
 * multi-host URL to an asynchronous standby that lost commits. So every
 * block an allocator takes from store k must start at or above the end of
 * the highest block it has taken from k (and the floor of k it read at
 * open). A block below is never used (none of its ids is handed out): store
 * k is marked bad, skipped from then on (until the allocator is reopened,
 * when open's floor check judges it again), reported in the stats
 * (bad_stores, bad_detail, last_error IDM_ECORRUPT, last_detail naming the
 * store and both positions), and the other stores serve. With every store
 * bad (with one store: that one), the ids in hand are served and then
 * idm_seq_next fails at once with IDM_ECORRUPT.
 *
 * The allocator (idm_seq) hands out ids with no I/O on the common path (one
 * atomic add), thread-safe; a background thread fetches the next block when
 * less than prefetch_pct of the current one is left (or earlier, when at the
 * rate the last block went the rest would not outlast twice the recent
 * fetch time), so a steady consumer never waits on the store; block sizes
 * adapt to the consumption rate. That thread is one per store: every
 * allocator whose first store is the same idm_store shares it (started with
 * the first, stopped when the last closes), and it makes their round trips
 * one at a time, serving an allocator with a caller waiting first. When
 * every store is down, it serves what it holds and then fails with
 * IDM_EUNAVAIL (never blocks for longer than opts.wait_ms).
 */
#ifndef IDMINT_SEGMENT_H
#define IDMINT_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"

/* ------------------------------------------------------------ ticket store */

typedef struct idm_store idm_store;

/* Names: 1 to 64 of [A-Za-z0-9_.-]. Values: 0 to IDM_SEQ_MAX. */
#define IDM_SEQ_NAME_MAX 64
#define IDM_SEQ_MAX INT64_C(4611686018427387904) /* 2^62 */

/* 1 if name is a valid sequence name (the rule above), else 0; NULL is 0.
 * What every entry point (the allocator, the stores, idmintd's routes, the
 * CLI) checks with. Thread-safe; sets no error detail. */
IDM_EXTERN int idm_seq_name_valid(const char *name);

typedef struct idm_seq_info {
    char name[IDM_SEQ_NAME_MAX + 1];
    int64_t next;   /* the next value the store will hand out (local units) */
    uint32_t k, n;  /* this store is k of n for the sequence */
} idm_seq_info;

/* The operations of a store, for stores written by the caller (tests,
 * wrappers that add latency or faults). Each returns 0 or an IDM_E code
 * with idm_error_fail's detail. take must be atomic: disjoint blocks for
 * concurrent callers, whatever fails. */
typedef struct idm_store_ops {
    int (*create)(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n);
    /* Local values [*start, *start + size), only if the sequence exists,
     * was created as store k of n there, and start + size <= limit; else
     * nothing changes and the error says which: IDM_ENOSEQ, IDM_EINVAL
     * (another k or n), IDM_ERANGE (the counter would pass limit). */
    int (*take)(void *ctx, const char *name, int64_t size, uint32_t k, uint32_t n,
                int64_t limit, int64_t *start);
    int (*list)(void *ctx, idm_seq_info **out, size_t *count); /* malloc'd */
    /* floors: how far ids of store k of this sequence have been seen to go */
    int (*floor_get)(void *ctx, const char *name, uint32_t k, int64_t *floor);
    int (*floor_raise)(void *ctx, const char *name, uint32_t k, int64_t floor);
    void (*close)(void *ctx);
} idm_store_ops;

/* 0 if url names a ticket store of this build (its scheme known and built
 * in), else IDM_EINVAL with idm_store_open's detail for it. Connects to
 * nothing and checks nothing past the scheme: for checking settings. */
IDM_EXTERN int idm_store_url_check(const char *url);
/*
 * Open the store a URL names (the tables are created if missing).
 * IDM_EINVAL for a bad URL, IDM_EUNAVAIL if it cannot be reached.
 */
IDM_EXTERN int idm_store_open(idm_store **out, const char *url);
/* A store over caller-provided operations; ops->close(ctx) at close. */
IDM_EXTERN int idm_store_custom(idm_store **out, const idm_store_ops *ops, void *ctx);
/* The URL it was opened with, password masked ("custom" for custom stores). */
IDM_EXTERN const char *idm_store_url(const idm_store *s);

/* Create a sequence whose first id is start (default 1 in the CLI).
 * IDM_EEXIST if it exists; nothing changes then. For store k of n, start is
 * the first global id; the store keeps local units. */
IDM_EXTERN int idm_store_create(idm_store *s, const char *name, int64_t start, uint32_t k,
                                uint32_t n);
/* Take a block of size local units: ids [*first, *first + size * n) step n.
 * IDM_ENOSEQ if the sequence does not exist, IDM_EINVAL for size 0 or
 * above IDM_SEQ_MAX, IDM_ERANGE if the counter would pass IDM_SEQ_MAX,
 * IDM_EUNAVAIL if the store cannot be reached (the block may or may not be
 * taken: it is never used). */
IDM_EXTERN int idm_store_take(idm_store *s, const char *name, int64_t size, uint32_t k,
                              uint32_t n, int64_t *first);
IDM_EXTERN int idm_store_list(idm_store *s, idm_seq_info **out, size_t *count);
/*
 * Which database s reaches, as text in out (cap bytes;
 * IDM_STORE_IDENTITY_MAX is room enough): two handles open at the same time
 * give the same text if and only if they reach the same database, whatever
 * their URLs say: "sqlite:DEV:INO" of the file (taken at open),
 * "postgres:SYSID:DB:TABLE" (asked of the server, one round trip), and for a
 * custom store, which cannot tell, "custom:" and the handle's address. For
 * checking that a list of stores names each database once before writing
 * anything (`idmint seq create`). Thread-safe as the other calls on s.
 */
#define IDM_STORE_IDENTITY_MAX 160
IDM_EXTERN int idm_store_identity(idm_store *s, char *out, size_t cap);
/*
 * The longest any one call on s may take, a reconnect included, on the
 * monotonic clock: IDM_STORE_TIMEOUT_MS unless set (1 ms to 1 hour, else
 * IDM_EINVAL and nothing changes). A call that runs past it fails with
 * IDM_EUNAVAIL ("no answer within N ms"), and its outcome is unknown: a
 * take's block may or may not have been taken, and is never used (a gap).
 * PostgreSQL: libpq non-blocking, polled against the deadline (a silent
 * network, a server that stopped, a row lock held elsewhere); the
 * connection is dropped and made again by the next call. SQLite: the wait
 * for another writer's lock ends at the deadline. A custom store's calls
 * are its own to bound. Thread-safe.
 */
#define IDM_STORE_TIMEOUT_MS 5000
IDM_EXTERN int idm_store_set_timeout(idm_store *s, int64_t ms);
/* Fork: a store belongs to the process that opened it. In a forked child
 * its calls are IDM_EFORKED and idm_store_close frees the child's copy
 * without using or closing the parent's connection. A child opens its own
 * stores, on the parent's SQLite files too: fork() waits until no thread
 * of the library is inside SQLite (a thread waiting for another
 * connection's lock gives way and tries again after the fork, within its
 * deadline), so the child never finds SQLite's mutexes held. */
IDM_EXTERN void idm_store_close(idm_store *s);

/* -------------------------------------------------------------- allocator */

typedef struct idm_seq idm_seq;

typedef struct idm_seq_opts {
    const char *name;        /* the sequence */
    idm_store **stores;      /* 1 or more; store k serves ids = k mod nstores */
    size_t nstores;
    int64_t min_block;       /* default 1000 */
    int64_t max_block;       /* default 10,000,000 */
    int64_t target_ms;       /* a block should last about this long; default 10000 */
    int prefetch_pct;        /* fetch the next block below this % left; default
                                20; 0: no prefetch (fetched when the block runs
                                out, callers wait: for comparison) */
    int64_t wait_ms;         /* longest next() waits for a block; default 2000 */
    const idm_clock *clock;  /* for block timing; NULL: the system clock */
    /* A local record of how far each store has been seen to go (a file
     * path; NULL: none). Read at open: every store's floor is at least
     * what it says (so a rewound store is refused even with one store, and
     * across restarts); raised, and on disk (fsync), after each block is
     * taken and before any of its ids is handed out. Several allocators and
     * processes may share it (an exclusive lock on PATH.lock while it is
     * read and rewritten; it only ever goes up). It belongs to one sequence
     * and one list of stores: a record for another name or another number
     * of stores is refused (IDM_EINVAL, naming the file). */
    const char *floor_file;
} idm_seq_opts;

#define IDM_SEQ_DETAIL_MAX 320

typedef struct idm_seq_stats {
    uint64_t ids;            /* handed out */
    uint64_t fetches;        /* blocks taken (store round trips that worked) */
    uint64_t fetch_errors;   /* store round trips that failed */
    uint64_t waits;          /* next() calls that had to wait for a block */
    uint64_t wait_ns;        /* total time they waited */
    int64_t block;           /* the current block size */
    int64_t left;            /* ids left in hand (current + prefetched) */
    int last_error;          /* the last fetch's error, 0 if it worked;
                                IDM_ECORRUPT: a store's block was below what
                                this allocator had seen it reach (dropped) */
    char last_detail[IDM_SEQ_DETAIL_MAX]; /* the last failed fetch's detail,
                                naming the store; "" if none failed; kept
                                after later fetches work */
    size_t bad_stores;       /* stores marked bad (counter went back): never
                                asked again by this allocator */
    char bad_detail[IDM_SEQ_DETAIL_MAX]; /* the first of them: the store, its
                                block's position and the one it was below */
    size_t down_stores;      /* stores whose last call failed (skipped at
                                open, or failing since): tried again, after
                                the stores that answer */
    int64_t call_ms;         /* the store call in progress: how long it has
                                run (ms, monotonic), 0 if none */
    size_t call_store;       /* which store it is (index in opts.stores) */
} idm_seq_stats;

IDM_EXTERN void idm_seq_opts_init(idm_seq_opts *opts);
/*
 * Open an allocator: checks the sequence exists in every store that answers
 * (IDM_ENOSEQ) with matching k and n, and each such store's counter against
 * the floors the other answering stores and opts.floor_file recorded for it;
 * takes the first block.
 *
 * A store that does not answer (IDM_EUNAVAIL: down, or no answer within its
 * timeout) is skipped, if every store's floor is still known: given by a
 * store that answers (each store records every other's floor after each
 * block, best effort) or by opts.floor_file. (With two stores and one down,
 * the one that answers has its floor only in the other: open needs a floor
 * file then. With three or more, the stores that answer know each other's.)
 * Checked for a skipped store when it first answers (the keeper asks it
 * again, after the stores that answer): its k of n (every take checks it),
 * and its block against that floor and any block taken from it since, like
 * every block (see above; below: marked bad, never used). Not checked: the
 * floors it holds for the other stores, until the next open that reaches
 * it. A floor not known, or every store down, fails the open (IDM_EUNAVAIL,
 * naming the store).
 */
IDM_EXTERN int idm_seq_open(idm_seq **out, const idm_seq_opts *opts);
/* The next id. IDM_EUNAVAIL when no block is in hand and none could be
 * taken within wait_ms; IDM_ECORRUPT when no block is in hand and every
 * store is marked bad (its counter went back: see above). Thread-safe. */
IDM_EXTERN int idm_seq_next(idm_seq *q, int64_t *id);
IDM_EXTERN void idm_seq_stats_get(const idm_seq *q, idm_seq_stats *out);
/* Close the allocator (the last one of its store stops the store's prefetch
 * thread); the ids in hand are abandoned (gaps). Close every allocator of a
 * store before the store. In a forked child an allocator of the parent's
 * hands out nothing (idm_seq_next is IDM_EFORKED: its blocks are the
 * parent's) and its close frees the child's copy only. */
IDM_EXTERN void idm_seq_close(idm_seq *q);

#endif /* IDMINT_SEGMENT_H */
