/* SPDX-License-Identifier: MIT */
/*
 * The segment allocator: ids from blocks taken from ticket stores, handed
 * out with one atomic add and no lock on the common path.
 *
 * Hot path. One 64-bit word holds (generation << 40) | position. The block of
 * generation g lives in slot g & 1 (two slots: the current block and the one
 * installed before it). A caller does w = fetch_add(word, 1): the position it
 * gets is its own, no other caller can get the same (generation, position).
 * It then reads the slot's fields and checks, seqlock style, that the slot
 * still holds generation g; if it does and position < size, the id is
 * first + position * stride. A slot is rewritten only for generation g + 2,
 * after the word has moved to g + 1: the writer marks the slot invalid, then
 * writes the fields (release stores), then the new generation; a reader
 * loads the fields (acquire) and then compares the generation, so a reader
 * that saw any rewritten field sees a generation other than g and abandons
 * its position (a gap). (Release/acquire on each field instead of fences:
 * the same plain moves on x86, and ThreadSanitizer understands them.) A
 * position is thus handed out at most once and only against the fields of
 * its own block: gaps, never duplicates.
 *
 * Slow path (position >= size: block exhausted), under the mutex: install
 * the prefetched block (new generation, position 0) if there is one, else
 * ask the keeper thread and wait for it on a condvar, at most opts.wait_ms.
 * The store round trips after open all happen on the keeper thread, so no
 * caller ever blocks longer than wait_ms, whatever a store does.
 *
 * Keeper thread: ONE for all the allocators whose first store is the same
 * idm_store, started when the first of them opens and stopped when the
 * last closes (a process with a thousand sequences on one store has one
 * prefetch thread, not a thousand). It fills an allocator's spare block
 * when the current one has less than prefetch_pct % left, or earlier when
 * at the last block's rate the rest would last less than twice the recent
 * fetch time (the caller whose add reaches that position signals it); with
 * one store it also fetches the spare right after open. Round robin over
 * the stores with failover, retrying with a backoff while a block is wanted
 * and every store fails; after each block taken from store k it raises k's
 * floor in the other stores (best effort). A block from store k that starts
 * below the end of the highest block q took from k (or k's floor read at
 * open) means k's counter went back: the block is dropped, never installed,
 * and k is marked bad, skipped from then on; with every store bad, callers
 * get IDM_ECORRUPT once the ids in hand are gone. Among allocators wanting a
 * block it serves first those with a caller waiting, then the one served
 * longest ago. Its round trips are one at a time, as the store's mutex made
 * them when each allocator had its own thread; a caller still waits at
 * most wait_ms whatever the keeper is doing for another allocator.
 *
 * Locks: the allocators of one keeper share its mutex (taken once per
 * block switch, per prefetch request and per stats read, never on the
 * common path); the registry of keepers has its own, taken at open and
 * close only, and before a keeper's mutex when both are held.
 *
 * Generations are 24 bits: a reader would have to stall between its add and
 * its check for 2^24 block switches to be fooled by the wrap.
 *
 * Fork: an allocator belongs to the process that opened it. A forked child
 * has a copy of its blocks, the same ids the parent goes on handing out,
 * and none of its keeper threads: every call fails there with IDM_EFORKED
 * (the fork generation it was opened under, bumped by a pthread_atfork
 * child handler, differs: one load and compare on the common path), and
 * its close frees the child's copy without touching the keeper. The child
 * starts with no keepers, so its own allocators start their own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floors.h"
#include "segment_internal.h"

#define POS_BITS 40
#define POS_MASK ((UINT64_C(1) << POS_BITS) - 1)
#define GEN_MASK ((UINT64_C(1) << (64 - POS_BITS)) - 1)
#define GEN_NONE UINT64_MAX
#define BLOCK_CAP (INT64_C(1) << 39)
#define MAX_STORES 1024
#define NS_PER_MS INT64_C(1000000)
#define RETRY_MIN_NS (5 * NS_PER_MS)     /* retries while a caller waits */
#define RETRY_MAX_NS (1000 * NS_PER_MS)  /* background backoff cap */
#define DOWN_MIN_NS (1000 * NS_PER_MS)   /* a down store is asked first again */
#define DOWN_MAX_NS (30000 * NS_PER_MS)  /* after this long, at most */

typedef struct slot {
    _Atomic uint64_t gen; /* the generation it holds, GEN_NONE while written */
    _Atomic int64_t first, stride, size, trigger;
} slot;

/* What an allocator knows of one of its stores. */
typedef struct store_state {
    int64_t hi;       /* k's local position at the end of the highest block
                         taken from it (at least the floor known at open) */
    bool bad;         /* k handed out a block below hi: never asked again */
    bool down;        /* k's last call failed: asked after the others until
                         retry_at */
    int64_t retry_at, backoff; /* CLOCK_MONOTONIC ns */
    unsigned char pass; /* fetch's scratch: 0 skip, 1 first pass, 2 second */
} store_state;

typedef struct block {
    int64_t first, stride, size;
    size_t store;
} block;

/* The prefetch thread of every allocator whose first store is store. */
typedef struct keeper {
    idm_store *store;
    size_t refs;            /* allocators attached; under keepers_mu */
    struct keeper *next;    /* in the registry; under keepers_mu */
    pthread_t thread;
    /* Under k->mu: */
    pthread_mutex_t mu;     /* also every attached allocator's mutex */
    pthread_cond_t cv;      /* wakes the thread */
    bool stop;
    idm_seq *head, *tail;   /* attached, least recently served first */
} keeper;

static pthread_mutex_t keepers_mu = PTHREAD_MUTEX_INITIALIZER;
static keeper *keepers;

/* Forks this process is from (see the top). */
static _Atomic uint64_t fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

struct idm_seq {
    _Alignas(64) _Atomic uint64_t word;
    _Alignas(64) slot slots[2];
    uint64_t fork_gen; /* fork_gen at open: a forked child differs */

    /* Everything below is under k->mu. */
    _Alignas(64) keeper *k;
    idm_seq *prev, *next;   /* in k's list */
    pthread_cond_t cv_done; /* a fetch attempt ended, or the keeper let go */
    bool need, fetching, spare_ready;
    bool busy;              /* the keeper uses it outside the mutex */
    bool closing;           /* idm_seq_close has begun: no more fetches */
    unsigned waiters;       /* callers waiting for a block */
    block cur, spare;
    uint64_t gen;            /* the word's generation */
    uint64_t exhausted_gen;  /* the last generation seen exhausted */
    int64_t installed_at;    /* opts clock, when cur was installed */
    int64_t block_size;      /* the size of the next fetch */
    int64_t fetch_ns;        /* moving average of a fetch's duration, 0 unknown */
    double rate;             /* ids per ns while the last block lasted, 0 unknown */
    size_t next_store;
    int64_t last_try_ns, next_try_ns, backoff_ns; /* CLOCK_MONOTONIC */
    uint64_t ids_done, fetches, fetch_errors, waits, wait_ns;
    int last_error;          /* the last round trip's */
    int last_fail;           /* the last failed round trip's */
    char last_detail[IDM_SEQ_DETAIL_MAX];
    /* Per store (nstores each), see store_state. Written by open, then
     * only by the keeper serving q (under k->mu; the keeper reads it
     * without). */
    store_state *st;
    size_t nbad, ndown;
    int64_t call_start;      /* CLOCK_MONOTONIC ns of the store call in
                                progress, 0 if none */
    size_t call_store;
    char *floor_file;        /* opts.floor_file, copied; NULL if none */
    char bad_detail[IDM_SEQ_DETAIL_MAX]; /* the first store marked bad */

    /* Fixed at open. */
    char name[IDM_SEQ_NAME_MAX + 1];
    idm_store **stores;
    size_t nstores;
    int64_t min_block, max_block, target_ns, wait_max_ns;
    int pct;
    const idm_clock *clock;
};

/* In a forked child only the forking thread exists: the parent's keepers
 * (their threads are not here, their mutexes may be held) are left, never
 * found by an allocator the child opens. */
static void after_fork(void)
{
    pthread_mutex_init(&keepers_mu, NULL);
    keepers = NULL;
    atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed);
}

static void fork_register(void)
{
    pthread_atfork(NULL, NULL, after_fork);
}

static bool forked(const idm_seq *q)
{
    return __builtin_expect(q->fork_gen != atomic_load_explicit(&fork_gen, memory_order_relaxed),
                            0);
}

static int refuse_forked(const idm_seq *q)
{
    return idm__seg_fail(IDM_EFORKED, "sequence %s: opened in the parent process; a forked child "
                                      "must open its own stores and allocators",
                         q->name);
}

static struct timespec abs_ts(int64_t ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

static int64_t clock_mono(const idm_seq *q)
{
    return q->clock->mono_ns(q->clock->ctx);
}

/* The first position at which less than pct % of the block is left:
 * (size - p - 1) * 100 < size * pct  <=>  p >= size - ceil(size * pct / 100). */
static int64_t trigger_of(int64_t size, int pct)
{
    return size - (size * pct + 99) / 100;
}

void idm_seq_opts_init(idm_seq_opts *opts)
{
    if (opts == NULL)
        return;
    memset(opts, 0, sizeof *opts);
    opts->min_block = 1000;
    opts->max_block = 10000000;
    opts->target_ms = 10000;
    opts->prefetch_pct = 20;
    opts->wait_ms = 2000;
}

static int check_opts(const idm_seq_opts *o)
{
    int rc;
    if (o == NULL)
        return idm__seg_fail(IDM_EINVAL, "seq: no options");
    if ((rc = idm__seq_check_name(o->name)) != 0)
        return rc;
    if (o->stores == NULL || o->nstores < 1 || o->nstores > MAX_STORES)
        return idm__seg_fail(IDM_EINVAL, "seq: opts.nstores = %zu: want 1 to %d stores",
                             o->stores == NULL ? (size_t)0 : o->nstores, MAX_STORES);
    for (size_t i = 0; i < o->nstores; i++)
        if (o->stores[i] == NULL)
            return idm__seg_fail(IDM_EINVAL, "seq: opts.stores[%zu] is NULL", i);
    if (o->min_block < 1 || o->min_block > BLOCK_CAP)
        return idm__seg_fail(IDM_EINVAL, "seq: opts.min_block = %lld: want 1 to 2^39",
                             (long long)o->min_block);
    if (o->max_block < o->min_block || o->max_block > BLOCK_CAP)
        return idm__seg_fail(IDM_EINVAL,
                             "seq: opts.max_block = %lld: want min_block (%lld) to 2^39",
                             (long long)o->max_block, (long long)o->min_block);
    if (o->target_ms < 1 || o->target_ms > INT64_MAX / (4 * NS_PER_MS))
        return idm__seg_fail(IDM_EINVAL, "seq: opts.target_ms = %lld: want 1 or more",
                             (long long)o->target_ms);
    if (o->prefetch_pct < 0 || o->prefetch_pct > 90)
        return idm__seg_fail(IDM_EINVAL, "seq: opts.prefetch_pct = %d: want 0 to 90",
                             o->prefetch_pct);
    if (o->wait_ms < 0 || o->wait_ms > INT64_MAX / (4 * NS_PER_MS))
        return idm__seg_fail(IDM_EINVAL, "seq: opts.wait_ms = %lld: want 0 or more",
                             (long long)o->wait_ms);
    if (o->floor_file != NULL && (o->floor_file[0] == '\0' || strlen(o->floor_file) > 4000))
        return idm__seg_fail(IDM_EINVAL, "seq: opts.floor_file: want a path of 1 to 4000 bytes");
    if (o->clock != NULL &&
        (o->clock->mono_ns == NULL || o->clock->wall_ns == NULL || o->clock->sleep_ns == NULL))
        return idm__seg_fail(IDM_EINVAL, "seq: opts.clock lacks a function");
    return 0;
}

/* ---------------------------------------------------------------- blocks */

/* Under k->mu: the position of a new block of size at which to ask for the
 * next one: when less than pct % is left, or earlier if, at the rate the
 * last block went and with fetches taking what they took lately, the rest
 * would run out before a fetch returns (twice that, for safety). pct 0: no
 * prefetch. */
static int64_t trigger_locked(const idm_seq *q, int64_t size)
{
    int64_t t = trigger_of(size, q->pct);
    if (q->pct > 0 && q->rate > 0 && q->fetch_ns > 0) {
        double lead = q->rate * (double)q->fetch_ns * 2.0;
        int64_t early = lead >= (double)size ? 0 : size - (int64_t)lead;
        if (early < t)
            t = early;
    }
    return t;
}

/* Seqlock write of block b into slot s for generation gen: readers of the
 * generation s held (gen - 2) see GEN_NONE or gen from here on, so they
 * abandon their positions. */
static void slot_write(slot *s, const block *b, int64_t trigger, uint64_t gen)
{
    atomic_store_explicit(&s->gen, GEN_NONE, memory_order_relaxed);
    atomic_store_explicit(&s->first, b->first, memory_order_release);
    atomic_store_explicit(&s->stride, b->stride, memory_order_release);
    atomic_store_explicit(&s->size, b->size, memory_order_release);
    atomic_store_explicit(&s->trigger, trigger, memory_order_release);
    atomic_store_explicit(&s->gen, gen, memory_order_release);
}

/* Under k->mu: make the spare block current. Called only when the current one
 * is exhausted. */
static void install_locked(idm_seq *q)
{
    uint64_t ng = (q->gen + 1) & GEN_MASK, old;
    int64_t used;

    slot_write(&q->slots[ng & 1], &q->spare, trigger_locked(q, q->spare.size), ng);
    old = atomic_exchange_explicit(&q->word, ng << POS_BITS, memory_order_acq_rel);
    used = (int64_t)(old & POS_MASK);
    q->ids_done += (uint64_t)(used < q->cur.size ? used : q->cur.size);
    q->gen = ng;
    q->cur = q->spare;
    q->spare_ready = false;
    q->need = false; /* the new block's trigger asks for the next one */
    q->installed_at = clock_mono(q);
}

/* Under k->mu: keep an exhausted block's position from growing without bound
 * while callers keep adding to it (positions >= size are never handed out,
 * so lowering one to size changes nothing else). */
static void clamp_locked(idm_seq *q, uint64_t cur)
{
    uint64_t size = (uint64_t)q->cur.size;
    while ((cur >> POS_BITS) == q->gen && (cur & POS_MASK) > size) {
        uint64_t want = (cur & ~POS_MASK) | size;
        if (atomic_compare_exchange_weak_explicit(&q->word, &cur, want, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
}

/* Under k->mu: the block of generation g is exhausted; adapt the size of the
 * next fetch to how long it lasted (Leaf: aim at target_ms a block). */
static void exhausted_locked(idm_seq *q, uint64_t g)
{
    int64_t lasted;
    if (q->exhausted_gen == g)
        return;
    q->exhausted_gen = g;
    lasted = clock_mono(q) - q->installed_at;
    if (lasted > 0)
        q->rate = (double)q->cur.size / (double)lasted;
    if (lasted < q->target_ns / 2) {
        q->block_size = q->block_size > q->max_block / 2 ? q->max_block : q->block_size * 2;
    } else if (lasted > 2 * q->target_ns) {
        q->block_size = q->block_size / 2 < q->min_block ? q->min_block : q->block_size / 2;
    }
}

/* Under k->mu: store k handed out a block at local position local, below
 * hi[k]: its counter went back (restored from a backup, or a failover to a
 * replica that lost commits). The block is dropped, k marked bad. */
static int refuse_locked(idm_seq *q, size_t k, int64_t local)
{
    int64_t n = (int64_t)q->nstores;
    if (!q->st[k].bad) {
        q->st[k].bad = true;
        q->nbad++;
    }
    /* Sized to fit IDM_SEQ_DETAIL_MAX whatever the numbers: the URL cut. */
    snprintf(q->last_detail, sizeof q->last_detail,
             "store %zu (%.60s): ECORRUPT: a block at id %lld (position %lld), below position "
             "%lld already seen: its counter went back (a restore, or a failover that lost "
             "commits); block dropped, store marked bad",
             k, idm_store_url(q->stores[k]), (long long)(local * n + (int64_t)k),
             (long long)local, (long long)q->st[k].hi);
    if (q->bad_detail[0] == '\0')
        snprintf(q->bad_detail, sizeof q->bad_detail, "%s", q->last_detail);
    return IDM_ECORRUPT;
}

/* Lock q's keeper mutex, if q has a keeper yet (open runs alone, without). */
static void lock_q(idm_seq *q)
{
    if (q->k != NULL)
        pthread_mutex_lock(&q->k->mu);
}

static void unlock_q(idm_seq *q)
{
    if (q->k != NULL)
        pthread_mutex_unlock(&q->k->mu);
}

/* Under lock_q: store k's call failed (k is asked after the others until
 * its backoff passes) or worked (it is asked in turn again). */
static void mark_down_locked(idm_seq *q, size_t k)
{
    store_state *t = &q->st[k];
    if (!t->down) {
        t->down = true;
        q->ndown++;
        t->backoff = DOWN_MIN_NS;
    } else {
        t->backoff = t->backoff >= DOWN_MAX_NS / 2 ? DOWN_MAX_NS : 2 * t->backoff;
    }
    t->retry_at = idm__mono_ns() + t->backoff;
}

static void mark_up_locked(idm_seq *q, size_t k)
{
    if (q->st[k].down) {
        q->st[k].down = false;
        q->ndown--;
    }
}

/* A store call on k begins (false: q is closing, do not begin); it ends
 * when call_start goes back to 0. For the stats (call_ms) and for close. */
static bool call_begin(idm_seq *q, size_t k)
{
    bool ok;
    lock_q(q);
    ok = !q->closing;
    if (ok) {
        q->call_start = idm__mono_ns();
        q->call_store = k;
    }
    unlock_q(q);
    return ok;
}

/* Under lock_q: the call on store k failed with rc (what: what it did, ""
 * for a take): kept for the stats. */
static void note_fail_locked(idm_seq *q, size_t k, int rc, const char *what)
{
    q->last_fail = rc;
    snprintf(q->last_detail, sizeof q->last_detail, "store %zu (%s): %s%s: %s", k,
             idm_store_url(q->stores[k]), what, idm_err_name(rc), idm_error_detail());
}

/* Record q's floors in the floor file (if any), before a block's ids are
 * used. The keeper (or open) alone writes hi, so it reads hi unlocked. */
static int record_floors(idm_seq *q)
{
    int64_t *hi;
    int rc;
    if (q->floor_file == NULL)
        return 0;
    hi = malloc(q->nstores * sizeof *hi);
    if (hi == NULL)
        return idm__seg_fail(IDM_ENOMEM, "sequence %s: out of memory", q->name);
    for (size_t k = 0; k < q->nstores; k++)
        hi[k] = q->st[k].hi;
    rc = idm__floors_raise(q->floor_file, q->name, q->nstores, hi);
    free(hi);
    return rc;
}

/* Take one block of size from the stores, starting at store start, failing
 * over to the next: first the stores that answered last time (and down
 * stores whose backoff has passed), then, if none gave a block, the other
 * down stores; never the stores marked bad. A block below what this
 * allocator has seen its store reach is never used: the store is marked bad
 * (refuse_locked). A block is recorded in the floor file before it is
 * returned; a block that cannot be recorded is not used (a gap). Stops
 * between stores once q is closing. Round trips outside k->mu; counts under
 * it. */
static int fetch(idm_seq *q, size_t start, int64_t size, block *b)
{
    int rc = IDM_EUNAVAIL;
    bool tried = false;
    int64_t now = idm__mono_ns();
    pthread_mutex_lock(&q->k->mu);
    for (size_t k = 0; k < q->nstores; k++) {
        store_state *t = &q->st[k];
        t->pass = t->bad ? 0 : !t->down || now >= t->retry_at ? 1 : 2;
    }
    pthread_mutex_unlock(&q->k->mu);
    for (unsigned pass = 1; pass <= 2; pass++) {
        for (size_t j = 0; j < q->nstores; j++) {
            size_t k = (start + j) % q->nstores;
            int64_t first = 0;
            if (q->st[k].pass != pass)
                continue;
            if (!call_begin(q, k))
                return idm__seg_fail(IDM_EUNAVAIL, "sequence %s: closing", q->name);
            tried = true;
            rc = idm_store_take(q->stores[k], q->name, size, (uint32_t)k, (uint32_t)q->nstores,
                                &first);
            pthread_mutex_lock(&q->k->mu);
            q->call_start = 0;
            if (rc == 0) {
                int64_t local = (first - (int64_t)k) / (int64_t)q->nstores;
                mark_up_locked(q, k);
                if (local < q->st[k].hi)
                    rc = refuse_locked(q, k, local);
                else
                    q->st[k].hi = local + size;
            } else {
                mark_down_locked(q, k);
            }
            q->last_error = rc;
            if (rc != 0) { /* a block is counted in fetches once recorded (below) */
                q->fetch_errors++;
                q->last_fail = rc;
                if (rc != IDM_ECORRUPT) /* refuse_locked wrote its own */
                    note_fail_locked(q, k, rc, "");
            }
            pthread_mutex_unlock(&q->k->mu);
            if (rc != 0)
                continue;
            if ((rc = record_floors(q)) != 0) {
                pthread_mutex_lock(&q->k->mu);
                q->last_error = rc; /* taken, never used: a failed fetch */
                q->fetch_errors++;
                note_fail_locked(q, k, rc, "block not used: ");
                pthread_mutex_unlock(&q->k->mu);
                return rc;
            }
            pthread_mutex_lock(&q->k->mu);
            q->fetches++;
            pthread_mutex_unlock(&q->k->mu);
            *b = (block){first, (int64_t)q->nstores, size, k};
            return 0;
        }
    }
    if (!tried) { /* every store is marked bad */
        pthread_mutex_lock(&q->k->mu);
        rc = q->last_error = IDM_ECORRUPT;
        pthread_mutex_unlock(&q->k->mu);
    }
    return rc;
}

/* The floor of store k after block b, in k's local units. */
static int64_t floor_after(const idm_seq *q, const block *b)
{
    return (b->first - (int64_t)b->store) / (int64_t)q->nstores + b->size;
}

/* Best effort: record in the other stores how far store b->store has gone
 * (not in stores that are down or bad; not once q is closing). */
static void raise_floors(idm_seq *q, const block *b)
{
    int64_t f = floor_after(q, b);
    for (size_t j = 0; j < q->nstores; j++) {
        int rc;
        if (j == b->store || q->st[j].down || q->st[j].bad)
            continue;
        if (!call_begin(q, j))
            return;
        rc = idm__store_floor_raise(q->stores[j], q->name, (uint32_t)b->store, f);
        lock_q(q);
        q->call_start = 0;
        if (rc != 0) { /* a failed round trip: counted, and j asked after the others */
            char what[64];
            mark_down_locked(q, j);
            q->fetch_errors++;
            snprintf(what, sizeof what, "recording store %zu's floor: ", b->store);
            note_fail_locked(q, j, rc, what);
        }
        unlock_q(q);
    }
}

/* Under k->mu: take q out of k's list. */
static void unlink_locked(keeper *k, idm_seq *q)
{
    if (q->prev != NULL)
        q->prev->next = q->next;
    else
        k->head = q->next;
    if (q->next != NULL)
        q->next->prev = q->prev;
    else
        k->tail = q->prev;
    q->prev = q->next = NULL;
}

/* Under k->mu: put q at the end of k's list (served last in a tie). */
static void append_locked(keeper *k, idm_seq *q)
{
    q->prev = k->tail;
    q->next = NULL;
    if (k->tail != NULL)
        k->tail->next = q;
    else
        k->head = q;
    k->tail = q;
}

/* Under k->mu, returns with it held: one fetch attempt for q (the round
 * trips without the mutex), then the floors. q->busy keeps idm_seq_close
 * from freeing q meanwhile. */
static void serve_locked(keeper *k, idm_seq *q)
{
    int64_t size = q->block_size;
    size_t start = q->next_store;
    block b = {0, 1, 0, 0};
    int rc;
    int64_t t0;
    q->fetching = true;
    q->busy = true;
    pthread_mutex_unlock(&k->mu);
    t0 = idm__mono_ns();
    rc = fetch(q, start, size, &b);
    pthread_mutex_lock(&k->mu);
    q->fetching = false;
    q->last_try_ns = idm__mono_ns();
    if (rc == 0) {
        int64_t took = q->last_try_ns - t0;
        q->fetch_ns = q->fetch_ns == 0 ? took : (3 * q->fetch_ns + took) / 4;
        q->spare = b;
        q->spare_ready = true;
        q->need = false;
        q->backoff_ns = 0;
        q->next_store = (b.store + 1) % q->nstores;
        q->next_try_ns = 0;
    } else {
        q->backoff_ns = q->backoff_ns == 0 ? RETRY_MIN_NS
                        : q->backoff_ns >= RETRY_MAX_NS / 2 ? RETRY_MAX_NS
                                                            : 2 * q->backoff_ns;
        q->next_try_ns = q->last_try_ns + q->backoff_ns;
    }
    pthread_cond_broadcast(&q->cv_done); /* waiting callers: the block is here */
    if (rc == 0 && q->nstores > 1) {
        pthread_mutex_unlock(&k->mu);
        raise_floors(q, &b);
        pthread_mutex_lock(&k->mu);
    }
    q->busy = false;
    unlink_locked(k, q);
    append_locked(k, q);
    pthread_cond_broadcast(&q->cv_done); /* a close waiting for the keeper */
}

/* The keeper thread: serve the allocators that want a block and may try
 * now, one at a time, those with a caller waiting first, then the one
 * served longest ago; sleep until the earliest retry or a wake-up. */
static void *keeper_main(void *arg)
{
    keeper *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        int64_t now = idm__mono_ns(), wake = INT64_MAX;
        idm_seq *pick = NULL;
        for (idm_seq *q = k->head; q != NULL; q = q->next) {
            if (q->closing || !q->need || q->spare_ready || q->nbad == q->nstores)
                continue;
            if (now < q->next_try_ns) {
                if (q->next_try_ns < wake)
                    wake = q->next_try_ns;
                continue;
            }
            if (q->waiters > 0) {
                pick = q;
                break;
            }
            if (pick == NULL)
                pick = q;
        }
        if (pick != NULL) {
            serve_locked(k, pick);
        } else if (wake != INT64_MAX) {
            struct timespec ts = abs_ts(wake);
            pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        } else {
            pthread_cond_wait(&k->cv, &k->mu);
        }
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* Under k->mu: wake the keeper for a block; a waiting caller also brings the
 * next retry forward (at most one attempt every RETRY_MIN_NS). */
static void want_block_locked(idm_seq *q, bool urgent)
{
    q->need = true;
    if (urgent && !q->fetching && q->next_try_ns > q->last_try_ns + RETRY_MIN_NS)
        q->next_try_ns = q->last_try_ns + RETRY_MIN_NS;
    pthread_cond_signal(&q->k->cv);
}

/* The caller whose position crossed the prefetch point. */
static void kick(idm_seq *q)
{
    pthread_mutex_lock(&q->k->mu);
    want_block_locked(q, false);
    pthread_mutex_unlock(&q->k->mu);
}

/* The block of generation g is exhausted: install the next, or wait for it
 * up to wait_ms. 0: try again. */
static int slow(idm_seq *q, uint64_t g)
{
    int64_t t0 = 0, deadline = 0;
    bool waited = false;
    int rc = 0;
    pthread_mutex_lock(&q->k->mu);
    for (;;) {
        uint64_t cur = atomic_load_explicit(&q->word, memory_order_relaxed);
        int64_t now;
        struct timespec ts;
        if ((cur >> POS_BITS) != g)
            break; /* another caller installed a block meanwhile */
        clamp_locked(q, cur);
        exhausted_locked(q, g);
        if (q->spare_ready) {
            install_locked(q);
            break;
        }
        if (q->nbad == q->nstores) { /* no store left to ask */
            rc = idm__seg_fail(IDM_ECORRUPT,
                               "sequence %s: no block: every store is marked bad (%s)%s%s",
                               q->name, q->bad_detail, q->nstores > 1 ? "; last: " : "",
                               q->nstores > 1 ? q->last_detail : "");
            break;
        }
        want_block_locked(q, true);
        now = idm__mono_ns();
        if (!waited) {
            waited = true;
            t0 = now;
            deadline = now + q->wait_max_ns;
            q->waits++;
            q->waiters++; /* the keeper serves q before mere prefetches */
        }
        if (now >= deadline) {
            bool failed = q->last_error != 0, said = failed || q->last_fail != 0;
            rc = idm__seg_fail(IDM_EUNAVAIL, "sequence %s: no block within %lld ms: %s%s%s",
                               q->name, (long long)(q->wait_max_ns / NS_PER_MS),
                               failed ? "every store failed" : "the store has not answered yet",
                               said ? "; last error: " : "", said ? q->last_detail : "");
            break;
        }
        ts = abs_ts(deadline);
        pthread_cond_timedwait(&q->cv_done, &q->k->mu, &ts);
    }
    if (waited) {
        q->wait_ns += (uint64_t)(idm__mono_ns() - t0);
        q->waiters--;
    }
    pthread_mutex_unlock(&q->k->mu);
    return rc;
}

int idm_seq_next(idm_seq *q, int64_t *id)
{
    if (q == NULL || id == NULL)
        return idm__seg_fail(IDM_EINVAL, "seq: no allocator or output");
    if (forked(q))
        return refuse_forked(q);
    for (;;) {
        uint64_t w = atomic_fetch_add_explicit(&q->word, 1, memory_order_acquire);
        uint64_t g = w >> POS_BITS;
        int64_t p = (int64_t)(w & POS_MASK);
        slot *s = &q->slots[g & 1];
        /* Acquire loads: a field written for a later generation brings the
         * GEN_NONE store before it along, so the check below fails. */
        int64_t first = atomic_load_explicit(&s->first, memory_order_acquire);
        int64_t stride = atomic_load_explicit(&s->stride, memory_order_acquire);
        int64_t size = atomic_load_explicit(&s->size, memory_order_acquire);
        int64_t trigger = atomic_load_explicit(&s->trigger, memory_order_acquire);
        int rc;
        if (atomic_load_explicit(&s->gen, memory_order_relaxed) != g)
            continue; /* the slot was reused: the word has moved on */
        if (p < size) {
            if (p == trigger)
                kick(q);
            *id = first + p * stride;
            return 0;
        }
        if ((rc = slow(q, g)) != 0)
            return rc;
    }
}

/* ------------------------------------------------------------------ open */

static int check_store_has(const idm_seq *q, size_t k)
{
    idm_seq_info *info = NULL;
    size_t count = 0;
    int rc = idm_store_list(q->stores[k], &info, &count);
    if (rc != 0)
        return rc;
    rc = idm__seg_fail(IDM_ENOSEQ, "sequence %s: store %zu (%s) has no such sequence", q->name,
                       k, idm_store_url(q->stores[k]));
    for (size_t i = 0; i < count; i++) {
        if (strcmp(info[i].name, q->name) != 0)
            continue;
        if (info[i].k != k || info[i].n != q->nstores)
            rc = idm__seg_fail(IDM_EINVAL,
                               "sequence %s: store %zu (%s) is store %u of %u for it, not %zu "
                               "of %zu: list the stores in the order they were created with",
                               q->name, k, idm_store_url(q->stores[k]), (unsigned)info[i].k,
                               (unsigned)info[i].n, k, q->nstores);
        else
            rc = 0;
        break;
    }
    free(info);
    return rc;
}

/* Open: store k did not answer (rc, the thread's detail): skipped, asked
 * again by the keeper after the stores that answer. */
static void skip_at_open(idm_seq *q, size_t k, int rc)
{
    mark_down_locked(q, k);
    note_fail_locked(q, k, rc, "");
}

/* P9: every store's floor, from the floor file and the other stores that
 * answer (a store that does not is skipped from then on); known[k]: some
 * store other than k, or the file, said. from[k]: who gave the highest
 * (q->nstores: the floor file). */
static int open_floors(idm_seq *q, int64_t *floor, bool *known, size_t *from)
{
    int rc = 0;
    for (size_t k = 0; k < q->nstores; k++)
        from[k] = q->nstores;
    if (q->floor_file != NULL &&
        (rc = idm__floors_read(q->floor_file, q->name, q->nstores, floor, known)) != 0)
        return rc;
    for (size_t j = 0; j < q->nstores; j++) {
        for (size_t k = 0; k < q->nstores && !q->st[j].down; k++) {
            int64_t f = 0;
            if (k == j)
                continue;
            rc = idm__store_floor_get(q->stores[j], q->name, (uint32_t)k, &f);
            if (rc == IDM_EUNAVAIL) {
                skip_at_open(q, j, rc);
                break;
            }
            if (rc != 0)
                return rc;
            known[k] = true;
            if (f > floor[k]) {
                floor[k] = f;
                from[k] = j;
            }
        }
    }
    return 0;
}

/* One block from store k, refused if it starts below floor (from: the
 * store that recorded it, or nstores for the floor file). */
static int check_and_take(idm_seq *q, size_t k, int64_t floor, size_t from, block *b)
{
    int64_t first = 0;
    int rc = idm_store_take(q->stores[k], q->name, q->block_size, (uint32_t)k,
                            (uint32_t)q->nstores, &first);
    if (rc != 0)
        return rc;
    *b = (block){first, (int64_t)q->nstores, q->block_size, k};
    q->fetches++;
    q->st[k].hi = floor_after(q, b);
    if ((first - (int64_t)k) / (int64_t)q->nstores >= floor)
        return 0;
    if (from == q->nstores) /* the floor came from the floor file */
        return idm__seg_fail(IDM_ERANGE,
                             "sequence %s: store %zu (%s) hands out %lld, below %lld recorded "
                             "in the floor file: restored from an old backup? refusing to start "
                             "(made again on purpose? remove %s)",
                             q->name, k, idm_store_url(q->stores[k]), (long long)first,
                             (long long)(floor * (int64_t)q->nstores + (int64_t)k),
                             q->floor_file != NULL ? q->floor_file : "?");
    return idm__seg_fail(IDM_ERANGE,
                         "sequence %s: store %zu (%s) hands out %lld, below %lld already seen "
                         "(floor recorded in store %zu): restored from an old backup? refusing "
                         "to start",
                         q->name, k, idm_store_url(q->stores[k]), (long long)first,
                         (long long)(floor * (int64_t)q->nstores + (int64_t)k), from);
}

/* Open's store round trips: every store that answers has the sequence as
 * store k of n and a counter at or above its floors, and gives one block;
 * the first two blocks become the current and the spare block (*nb of them
 * in b), the others are abandoned (gaps). Stores that do not answer are
 * skipped (see segment.h), if their floors are known. */
static int open_stores(idm_seq *q, block *b, size_t *nb)
{
    size_t n = q->nstores, *from = calloc(n, sizeof *from);
    int64_t *floor = calloc(n, sizeof *floor);
    bool *known = calloc(n, sizeof *known);
    int rc = 0;
    *nb = 0;
    if (from == NULL || floor == NULL || known == NULL) {
        rc = idm__seg_fail(IDM_ENOMEM, "seq: out of memory");
        goto out;
    }
    /* Nothing is taken before every store that answers has the sequence. */
    for (size_t k = 0; k < n && rc == 0; k++) {
        rc = check_store_has(q, k);
        if (rc == IDM_EUNAVAIL) {
            skip_at_open(q, k, rc);
            rc = 0;
        }
    }
    if (rc == 0 && q->ndown < n)
        rc = open_floors(q, floor, known, from);
    for (size_t k = 0; k < n && rc == 0; k++) {
        block got;
        if (q->st[k].down)
            continue;
        rc = check_and_take(q, k, floor[k], from[k], &got);
        if (rc == IDM_EUNAVAIL) {
            skip_at_open(q, k, rc);
            rc = 0;
            continue;
        }
        if (rc != 0)
            break;
        if (*nb < 2)
            b[(*nb)++] = got;
        if (n > 1)
            raise_floors(q, &got);
    }
    if (rc == 0 && q->ndown == n)
        rc = idm__seg_fail(IDM_EUNAVAIL, "sequence %s: %s: %s", q->name,
                           n > 1 ? "no store answers; last" : "the store does not answer",
                           q->last_detail);
    /* With a store skipped, every store's floor must have come from a store
     * that answers or from the floor file: the skipped store's, checked
     * when it answers again, and those of the stores that answer, which
     * the skipped store may be the only other one to hold. */
    for (size_t k = 0; k < n && rc == 0 && q->ndown > 0; k++) {
        if (!known[k])
            rc = idm__seg_fail(IDM_EUNAVAIL,
                               "sequence %s: store %zu (%s): how far it has gone is not known: "
                               "the stores that record it do not answer and there is no floor "
                               "file (opts.floor_file) that does: not opening without it; "
                               "last: %s",
                               q->name, k, idm_store_url(q->stores[k]), q->last_detail);
        else if (q->st[k].down && floor[k] > q->st[k].hi)
            q->st[k].hi = floor[k];
    }
    if (rc == 0)
        rc = record_floors(q);
out:
    free(from);
    free(floor);
    free(known);
    return rc;
}

static void destroy(idm_seq *q)
{
    pthread_cond_destroy(&q->cv_done);
    free(q->st);
    free(q->floor_file);
    free(q->stores);
    free(q);
}

/* Hand q (its first blocks in place) to the keeper of its first store,
 * starting that keeper if q is the first allocator on the store. */
static int attach(idm_seq *q)
{
    keeper *k;
    pthread_mutex_lock(&keepers_mu);
    for (k = keepers; k != NULL && k->store != q->stores[0]; k = k->next)
        ;
    if (k == NULL) {
        k = calloc(1, sizeof *k);
        if (k == NULL) {
            pthread_mutex_unlock(&keepers_mu);
            return idm__seg_fail(IDM_ENOMEM, "seq: out of memory");
        }
        k->store = q->stores[0];
        pthread_mutex_init(&k->mu, NULL);
        idm__cond_init_mono(&k->cv);
        if (idm__thread_create(&k->thread, keeper_main, k) != 0) {
            pthread_cond_destroy(&k->cv);
            pthread_mutex_destroy(&k->mu);
            free(k);
            pthread_mutex_unlock(&keepers_mu);
            return idm__seg_fail(IDM_ENOMEM, "seq: cannot start the prefetch thread");
        }
        k->next = keepers;
        keepers = k;
    }
    k->refs++;
    pthread_mutex_lock(&k->mu);
    q->k = k;
    append_locked(k, q);
    if (q->need)
        pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_mutex_unlock(&keepers_mu);
    return 0;
}

/* Take q from its keeper (waiting out a fetch the keeper is doing for it);
 * the last allocator out stops the keeper's thread. */
static void detach(idm_seq *q)
{
    keeper *k = q->k, **pp;
    bool last;
    pthread_mutex_lock(&k->mu);
    q->closing = true;
    while (q->busy)
        pthread_cond_wait(&q->cv_done, &k->mu);
    unlink_locked(k, q);
    pthread_mutex_unlock(&k->mu);

    pthread_mutex_lock(&keepers_mu);
    last = --k->refs == 0;
    if (last) {
        for (pp = &keepers; *pp != k; pp = &(*pp)->next)
            ;
        *pp = k->next;
    }
    pthread_mutex_unlock(&keepers_mu);
    if (!last)
        return;
    /* Unreachable now: no open can find it, no allocator uses it. */
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

int idm_seq_open(idm_seq **out, const idm_seq_opts *opts)
{
    idm_seq *q;
    block b[2] = {{0, 1, 0, 0}, {0, 1, 0, 0}};
    size_t nb = 0;
    int rc;
    if (out == NULL)
        return idm__seg_fail(IDM_EINVAL, "seq: no output");
    *out = NULL;
    if ((rc = check_opts(opts)) != 0)
        return rc;

    q = aligned_alloc(64, sizeof *q);
    if (q == NULL)
        return IDM_ENOMEM;
    memset(q, 0, sizeof *q);
    pthread_once(&fork_once, fork_register);
    q->fork_gen = atomic_load(&fork_gen);
    idm__cond_init_mono(&q->cv_done);
    q->stores = malloc(opts->nstores * sizeof *q->stores);
    q->st = calloc(opts->nstores, sizeof *q->st);
    q->floor_file = opts->floor_file != NULL ? strdup(opts->floor_file) : NULL;
    if (q->stores == NULL || q->st == NULL ||
        (opts->floor_file != NULL && q->floor_file == NULL)) {
        destroy(q);
        return IDM_ENOMEM;
    }
    memcpy(q->stores, opts->stores, opts->nstores * sizeof *q->stores);
    q->nstores = opts->nstores;
    snprintf(q->name, sizeof q->name, "%s", opts->name);
    q->min_block = opts->min_block;
    q->max_block = opts->max_block;
    q->block_size = opts->min_block;
    q->target_ns = opts->target_ms * NS_PER_MS;
    q->wait_max_ns = opts->wait_ms * NS_PER_MS;
    q->pct = opts->prefetch_pct;
    q->clock = opts->clock != NULL ? opts->clock : idm_clock_system();
    q->exhausted_gen = GEN_NONE;

    if ((rc = open_stores(q, b, &nb)) != 0) {
        destroy(q);
        return rc;
    }
    atomic_store_explicit(&q->slots[1].gen, GEN_NONE, memory_order_relaxed);
    slot_write(&q->slots[0], &b[0], trigger_of(b[0].size, q->pct), 0);
    atomic_store_explicit(&q->word, 0, memory_order_release);
    q->gen = 0;
    q->cur = b[0];
    q->installed_at = clock_mono(q);
    if (nb > 1) {
        q->spare = b[1];
        q->spare_ready = true;
    } else if (q->pct > 0) {
        q->need = true; /* the keeper fetches the spare at once */
    }
    q->next_store = (b[nb - 1].store + 1) % q->nstores;

    if ((rc = attach(q)) != 0) {
        destroy(q);
        return rc;
    }
    *out = q;
    return 0;
}

void idm_seq_stats_get(const idm_seq *q, idm_seq_stats *out)
{
    int64_t used;
    if (q == NULL || out == NULL)
        return;
    memset(out, 0, sizeof *out);
    if (forked(q)) {
        /* The keeper's mutex may have been held at fork. */
        out->last_error = refuse_forked(q);
        snprintf(out->last_detail, sizeof out->last_detail, "%s", idm_error_detail());
        return;
    }
    pthread_mutex_lock(&q->k->mu);
    used = (int64_t)(atomic_load_explicit(&q->word, memory_order_relaxed) & POS_MASK);
    if (used > q->cur.size)
        used = q->cur.size;
    out->ids = q->ids_done + (uint64_t)used;
    out->fetches = q->fetches;
    out->fetch_errors = q->fetch_errors;
    out->waits = q->waits;
    out->wait_ns = q->wait_ns;
    out->block = q->block_size;
    out->left = q->cur.size - used + (q->spare_ready ? q->spare.size : 0);
    out->last_error = q->last_error;
    snprintf(out->last_detail, sizeof out->last_detail, "%s",
             q->last_fail != 0 ? q->last_detail : "");
    out->bad_stores = q->nbad;
    snprintf(out->bad_detail, sizeof out->bad_detail, "%s", q->bad_detail);
    out->down_stores = q->ndown;
    out->call_ms = q->call_start != 0 ? (idm__mono_ns() - q->call_start) / NS_PER_MS : 0;
    out->call_store = q->call_store;
    pthread_mutex_unlock(&q->k->mu);
}

void idm_seq_close(idm_seq *q)
{
    if (q == NULL)
        return;
    if (forked(q)) {
        /* A child's copy: the keeper (its thread, its mutex, its list) is
         * the parent's, and the condition variable may have had waiters
         * of the parent's (destroying it could wait for them): the memory
         * is freed, nothing else touched. */
        free(q->st);
        free(q->floor_file);
        free(q->stores);
        free(q);
        return;
    }
    detach(q);
    destroy(q);
}
