/* SPDX-License-Identifier: MIT */
/*
 * Tests of the 128-bit generators on many threads: one UUIDv7 or monotonic
 * ULID generator shared by 8 threads, through idm_uuid7_next /
 * idm_ulid_next (every id unique, each thread's ids increasing, and ids
 * ordered as the calls were: a call that returned before another began has
 * the lower id) and through the per-thread sequences idm_uuid7_next_local
 * / idm_ulid_next_local (unique, each thread's ids increasing). Then the
 * per-thread sequences on a manual clock: the generator's clock and rng
 * are the ones used, two generators alternated in one thread each go on
 * with their own sequence, more generators than a thread keeps alternated
 * in one thread still increase each (a dropped one restarts above what was
 * dropped), a generator freed and one made at its address (or a shared one
 * initialised again in place) share no state, and a forked child restarts
 * its sequences. Last, the shared path's lock: threads waiting on a lock
 * whose holder does not run sleep rather than spin.
 */
#include "testids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h" /* the thread cache's size, the generators' locks */

__extension__ typedef unsigned __int128 u128;

#define U128_2_32 ((u128)1 << 32)

/* ---- helpers ---- */

static u128 u128_of(const uint8_t b[16])
{
    u128 v = 0;
    for (int i = 0; i < 16; i++)
        v = (v << 8) | b[i];
    return v;
}

static idm_unix_ms ts48(const uint8_t b[16]) { return idm_test_be48(b); }

static void print_id(const char *what, const uint8_t b[16])
{
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", b[i]);
    print_error("%s: %s\n", what, hex);
}

/* The four ways to mint from one generator: UUIDv7 or monotonic ULID,
 * shared sequence or per-thread sequences. */
typedef struct mode {
    const char *name;
    int ulid, local;
} mode;

static const mode MODES[] = {
    {"uuid7 shared", 0, 0},
    {"uuid7 local", 0, 1},
    {"ulid shared", 1, 0},
    {"ulid local", 1, 1},
};

/* A generator of either kind, with its mode. */
typedef struct gen {
    const mode *m;
    idm_uuid7_gen *u;
    idm_ulid_gen *l;
} gen;

static void gen_new(gen *g, const mode *m, const idm_clock *clock, const idm_rng *rng)
{
    g->m = m;
    g->u = NULL;
    g->l = NULL;
    if (m->ulid)
        IDM_ASSERT_OK(idm_ulid_gen_new(&g->l, clock, rng, true));
    else
        IDM_ASSERT_OK(idm_uuid7_gen_new(&g->u, clock, rng));
}

static void gen_free(gen *g)
{
    idm_uuid7_gen_free(g->u);
    idm_ulid_gen_free(g->l);
}

static int gen_next(const gen *g, uint8_t out[16])
{
    int rc;
    if (g->m->ulid) {
        idm_ulid id;
        rc = g->m->local ? idm_ulid_next_local(g->l, &id) : idm_ulid_next(g->l, &id);
        memcpy(out, id.b, 16);
    } else {
        idm_uuid id;
        rc = g->m->local ? idm_uuid7_next_local(g->u, &id) : idm_uuid7_next(g->u, &id);
        memcpy(out, id.b, 16);
    }
    return rc;
}

/* Is b the next id of a's sequence in the same ms: UUIDv7 a + 1..2^32,
 * ULID a + 1? */
static int continues(const mode *m, const uint8_t a[16], const uint8_t b[16])
{
    u128 d = u128_of(b) - u128_of(a);
    if (ts48(a) != ts48(b) || u128_of(b) <= u128_of(a))
        return 0;
    return m->ulid ? d == 1 : d <= U128_2_32;
}

/* ---- 8 threads on one generator ---- */

enum { THREADS = 8, PER_THREAD = 25000, N = THREADS * PER_THREAD };

/* One id and the values of a process-wide counter taken just before the
 * call began and just after it returned. */
typedef struct rec {
    uint8_t id[16];
    uint64_t before, after;
} rec;

static _Atomic uint64_t ticket;

static int mint_rec(void *p, void *out)
{
    rec *r = out;
    r->before = atomic_fetch_add(&ticket, 1);
    int rc = gen_next(p, r->id);
    r->after = atomic_fetch_add(&ticket, 1);
    return rc;
}

static int rec_by_id(const void *a, const void *b)
{
    return memcmp(((const rec *)a)->id, ((const rec *)b)->id, 16);
}

/*
 * 8 threads x 25,000 ids from one generator on the system clock. Each
 * thread's ids strictly increase and no id repeats. For the shared
 * sequence also: if a call returned before another began (its after ticket
 * is below the other's before ticket), its id is the lower. Sorted by id,
 * that is: no id has a lower one whose call began after it returned.
 */
static void run_threads(const mode *m)
{
    rec *all = malloc(N * sizeof *all);
    idm_test_threads t;
    gen g;
    assert_non_null(all);
    gen_new(&g, m, NULL, NULL);
    idm_test_threads_run(&t, THREADS, mint_rec, &g, all, sizeof *all, PER_THREAD);
    for (int i = 0; i < THREADS; i++) {
        const rec *r = all + (size_t)i * PER_THREAD;
        IDM_ASSERT_RC(t.job[i].rc, 0);
        for (size_t k = 1; k < PER_THREAD; k++)
            CHECK(memcmp(r[k - 1].id, r[k].id, 16) < 0, "%s: thread %d: id %zu does not increase",
                  m->name, i, k);
    }
    qsort(all, N, sizeof *all, rec_by_id);
    uint64_t max_before = 0;
    for (size_t k = 0; k < N; k++) {
        CHECK(k == 0 || memcmp(all[k - 1].id, all[k].id, 16) != 0, "%s: an id repeats",
              m->name);
        if (!m->local && k > 0 && max_before > all[k].after) {
            print_id("id", all[k].id);
            fail_msg("%s: a lower id was minted by a call that began (ticket %llu) after this "
                     "one returned (ticket %llu)",
                     m->name, ULL(max_before), ULL(all[k].after));
        }
        if (all[k].before > max_before)
            max_before = all[k].before;
    }
    gen_free(&g);
    free(all);
}

static void uuid7_shared_threads(void **state) { (void)state; run_threads(&MODES[0]); }
static void uuid7_local_threads(void **state) { (void)state; run_threads(&MODES[1]); }
static void ulid_shared_threads(void **state) { (void)state; run_threads(&MODES[2]); }
static void ulid_local_threads(void **state) { (void)state; run_threads(&MODES[3]); }

/* ---- per-thread sequences on a manual clock ---- */

/* The generator's clock gives the time and its rng the bits: the first
 * local id of a ms is idm_uuid7_build / idm_ulid_build of the clock's ms
 * and the rng's next fresh 10 bytes. */
static void local_uses_clock_and_rng(void **state)
{
    const idm_unix_ms t = INT64_C(1700000030000);
    static const uint8_t bits[10] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11, 0x40};
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_test_script_rng s;
    idm_uuid7_gen *u = NULL;
    idm_ulid_gen *l = NULL;
    idm_uuid a, want;
    idm_ulid b, wantl;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&u, idm_manual_clock_clock(mc), &s.iface));
    IDM_ASSERT_OK(idm_ulid_gen_new(&l, idm_manual_clock_clock(mc), &s.iface, true));
    idm_test_script_vector(&s, bits, sizeof bits);
    IDM_ASSERT_OK(idm_uuid7_next_local(u, &a));
    IDM_ASSERT_OK(idm_uuid7_build(t, bits, &want));
    CHECK(memcmp(&a, &want, 16) == 0, "the first local UUIDv7 is not built from the clock and rng");
    idm_test_script_vector(&s, bits, sizeof bits);
    IDM_ASSERT_OK(idm_ulid_next_local(l, &b));
    IDM_ASSERT_OK(idm_ulid_build(t, bits, &wantl));
    CHECK(memcmp(&b, &wantl, 16) == 0, "the first local ULID is not built from the clock and rng");
    idm_manual_clock_set(mc, t + 7);
    IDM_ASSERT_OK(idm_uuid7_next_local(u, &a));
    IDM_ASSERT_OK(idm_ulid_next_local(l, &b));
    CHECK(ts48(a.b) == t + 7 && ts48(b.b) == t + 7, "local ids do not follow the clock");
    idm_uuid7_gen_free(u);
    idm_ulid_gen_free(l);
    idm_test_script_done(&s);
    idm_manual_clock_free(mc);
}

/* An rng failure: IDM_ERANDOM, output untouched; the next id still goes
 * on with the thread's sequence. */
static void local_rng_failure(void **state)
{
    const idm_unix_ms t = INT64_C(1700000031000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_test_script_rng s;
    idm_uuid7_gen *u = NULL;
    idm_uuid a, b, x;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&u, idm_manual_clock_clock(mc), &s.iface));
    IDM_ASSERT_OK(idm_uuid7_next_local(u, &a));
    idm_test_script_fail(&s, IDM_ERANDOM);
    memset(&x, 0x5A, sizeof x);
    IDM_ASSERT_RC(idm_uuid7_next_local(u, &x), IDM_ERANDOM);
    CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on rng failure");
    idm_test_script_fail(&s, 0);
    IDM_ASSERT_OK(idm_uuid7_next_local(u, &b));
    CHECK(continues(&MODES[1], a.b, b.b), "the id after a failed one does not go on");
    idm_uuid7_gen_free(u);
    idm_test_script_done(&s);
    idm_manual_clock_free(mc);
}

enum { ROUNDS = 2000 };

/*
 * n generators of mode m on one frozen clock, used in turn from this
 * thread for ROUNDS rounds. Each generator's ids strictly increase; when
 * its state stays cached (exact is set) each id goes on with its
 * sequence (same ms, the previous + 1..2^32, or + 1 for a ULID). Returns
 * the highest ms of an id.
 */
static idm_unix_ms alternate(const mode *m, int n, int exact, idm_unix_ms t)
{
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    gen *g = calloc((size_t)n, sizeof *g);
    uint8_t(*last)[16] = calloc((size_t)n, 16);
    idm_unix_ms top = 0;
    assert_non_null(g);
    assert_non_null(last);
    for (int i = 0; i < n; i++)
        gen_new(&g[i], m, idm_manual_clock_clock(mc), NULL);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < n; i++) {
            uint8_t id[16];
            IDM_ASSERT_OK(gen_next(&g[i], id));
            if (r > 0 && memcmp(last[i], id, 16) >= 0) {
                print_id("previous", last[i]);
                print_id("next", id);
                fail_msg("%s, %d generators: generator %d's ids decrease in round %d", m->name, n,
                         i, r);
            }
            if (exact && r > 0 && !continues(m, last[i], id)) {
                print_id("previous", last[i]);
                print_id("next", id);
                fail_msg("%s, %d generators: generator %d restarted in round %d", m->name, n, i,
                         r);
            }
            CHECK(ts48(id) >= t, "%s: an id before the clock", m->name);
            if (ts48(id) > top)
                top = ts48(id);
            memcpy(last[i], id, 16);
        }
    for (int i = 0; i < n; i++)
        gen_free(&g[i]);
    free(g);
    free(last);
    idm_manual_clock_free(mc);
    return top;
}

/* Two generators alternated in one thread, and one more than the thread
 * has sets (so two share a set, and fewer than it keeps): each keeps its
 * own sequence, at the clock's ms. */
static void local_two_generators(void **state)
{
    (void)state;
    for (int k = 1; k < 4; k += 2) {
        idm_unix_ms t = INT64_C(1700000032000);
        CHECK(alternate(&MODES[k], 2, 1, t) == t, "%s: ids ran ahead of the clock",
              MODES[k].name);
        CHECK(alternate(&MODES[k], IDM__TSEQ_SETS + 1, 1, t) == t,
              "%s: ids ran ahead of the clock", MODES[k].name);
    }
}

/* Three times as many generators as a thread keeps, in turn: states are
 * dropped and made again all the time, and each generator's ids still
 * increase. */
static void local_more_generators_than_kept(void **state)
{
    (void)state;
    for (int k = 1; k < 4; k += 2)
        alternate(&MODES[k], 3 * IDM__TSEQ_SETS * IDM__TSEQ_WAYS, 0, INT64_C(1700000033000));
}

/* A generator freed and another made at its address (a calloc of the same
 * size usually returns it; the test is skipped if not), on a clock 10 s
 * earlier: the new one's first id is at its own clock's ms, not the old
 * one's sequence going on. The same for a shared generator initialised
 * again in its memory (always the same address). */
static void local_new_generator_at_old_address(void **state)
{
    const idm_unix_ms t = INT64_C(1700000040000);
    idm_manual_clock *late = idm_test_frozen_clock(t), *early = idm_test_frozen_clock(t - 10000);
    idm_uuid7_gen *a = NULL, *b = NULL;
    idm_ulid_gen *la = NULL, *lb = NULL;
    idm_uuid u;
    idm_ulid l;
    void *mem;
    (void)state;

    /* In shared memory, initialised twice in place. */
    size_t sz = idm_uuid7_gen_shared_size() > idm_ulid_gen_shared_size()
                    ? idm_uuid7_gen_shared_size()
                    : idm_ulid_gen_shared_size();
    mem = aligned_alloc(64, (sz + 63) / 64 * 64);
    assert_non_null(mem);
    IDM_ASSERT_OK(idm_uuid7_gen_init_shared(&a, mem, sz, idm_manual_clock_clock(late), NULL));
    for (int i = 0; i < 10; i++)
        IDM_ASSERT_OK(idm_uuid7_next_local(a, &u));
    IDM_ASSERT_OK(idm_uuid7_gen_init_shared(&b, mem, sz, idm_manual_clock_clock(early), NULL));
    IDM_ASSERT_OK(idm_uuid7_next_local(b, &u));
    CHECK(ts48(u.b) == t - 10000, "shared uuid7 initialised again: first id at ms %lld, not %lld",
          LL(ts48(u.b)), LL(t - 10000));
    IDM_ASSERT_OK(idm_ulid_gen_init_shared(&la, mem, sz, idm_manual_clock_clock(late), NULL, true));
    for (int i = 0; i < 10; i++)
        IDM_ASSERT_OK(idm_ulid_next_local(la, &l));
    IDM_ASSERT_OK(idm_ulid_gen_init_shared(&lb, mem, sz, idm_manual_clock_clock(early), NULL, true));
    IDM_ASSERT_OK(idm_ulid_next_local(lb, &l));
    CHECK(ts48(l.b) == t - 10000, "shared ulid initialised again: first id at ms %lld, not %lld",
          LL(ts48(l.b)), LL(t - 10000));
    free(mem);

    /* On the heap, freed and made again. */
    int same = 1;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&a, idm_manual_clock_clock(late), NULL));
    for (int i = 0; i < 10; i++)
        IDM_ASSERT_OK(idm_uuid7_next_local(a, &u));
    uintptr_t old = (uintptr_t)a;
    idm_uuid7_gen_free(a);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&b, idm_manual_clock_clock(early), NULL));
    if ((uintptr_t)b == old) {
        IDM_ASSERT_OK(idm_uuid7_next_local(b, &u));
        CHECK(ts48(u.b) == t - 10000, "uuid7 made at a freed one's address: first id at ms %lld",
              LL(ts48(u.b)));
    } else {
        same = 0;
    }
    idm_uuid7_gen_free(b);
    IDM_ASSERT_OK(idm_ulid_gen_new(&la, idm_manual_clock_clock(late), NULL, true));
    for (int i = 0; i < 10; i++)
        IDM_ASSERT_OK(idm_ulid_next_local(la, &l));
    old = (uintptr_t)la;
    idm_ulid_gen_free(la);
    IDM_ASSERT_OK(idm_ulid_gen_new(&lb, idm_manual_clock_clock(early), NULL, true));
    if ((uintptr_t)lb == old) {
        IDM_ASSERT_OK(idm_ulid_next_local(lb, &l));
        CHECK(ts48(l.b) == t - 10000, "ulid made at a freed one's address: first id at ms %lld",
              LL(ts48(l.b)));
    } else {
        same = 0;
    }
    idm_ulid_gen_free(lb);
    idm_manual_clock_free(late);
    idm_manual_clock_free(early);
    if (!same)
        print_message("(the allocator gave a new generator a new address: heap part skipped)\n");
}

/* On a frozen clock: after fork() the parent's thread goes on with its
 * sequence, the child's starts afresh (its first id does not go on from
 * the parent's last), for both kinds. */
static void local_fork_child_restarts(void **state)
{
    const idm_unix_ms t = INT64_C(1700000050000);
    (void)state;
    for (int k = 1; k < 4; k += 2) {
        const mode *m = &MODES[k];
        idm_manual_clock *mc = idm_test_frozen_clock(t);
        uint8_t last[16], mine[16], theirs[2][16];
        idm_test_child child;
        gen g;
        gen_new(&g, m, idm_manual_clock_clock(mc), NULL);
        for (int i = 0; i < 100; i++)
            IDM_ASSERT_OK(gen_next(&g, last));
        if (idm_test_fork(&child)) {
            idm_test_child_deadline();
            for (int i = 0; i < 2; i++)
                if (gen_next(&g, theirs[i]) != 0)
                    _exit(2);
            idm_test_child_send(&child, theirs, sizeof theirs);
        }
        IDM_ASSERT_OK(gen_next(&g, mine));
        assert_int_equal(idm_test_collect_bounded(&child, theirs, sizeof theirs), sizeof theirs);
        CHECK(continues(m, last, mine), "%s: the parent did not go on after fork", m->name);
        if (continues(m, last, theirs[0])) {
            print_id("parent's last id before fork", last);
            print_id("child's first id", theirs[0]);
            fail_msg("%s: the child went on with the parent's sequence", m->name);
        }
        CHECK(ts48(theirs[0]) == t, "%s: the child's id is not at the clock's ms", m->name);
        CHECK(continues(m, theirs[0], theirs[1]), "%s: the child's ids do not go on", m->name);
        gen_free(&g);
        idm_manual_clock_free(mc);
    }
}

/* Without monotonic mode a local ULID is idm_ulid_next's: fresh bits. */
static void local_ulid_not_monotonic(void **state)
{
    const idm_unix_ms t = INT64_C(1700000060000);
    static const uint8_t bits[10] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_test_script_rng s;
    idm_ulid_gen *l = NULL;
    idm_ulid a, want;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_ulid_gen_new(&l, idm_manual_clock_clock(mc), &s.iface, false));
    for (int i = 0; i < 3; i++) {
        idm_test_script_vector(&s, bits, sizeof bits);
        IDM_ASSERT_OK(idm_ulid_next_local(l, &a));
        IDM_ASSERT_OK(idm_ulid_build(t, bits, &want));
        CHECK(memcmp(&a, &want, 16) == 0, "non-monotonic local ULID %d is not fresh", i);
    }
    idm_ulid_gen_free(l);
    idm_test_script_done(&s);
    idm_manual_clock_free(mc);
}

/* ---- the shared path's lock ---- */

enum { WAITERS = 4, HOLD_MS = 300, SAMPLES = 20 };

typedef struct waiter {
    idm_uuid7_gen *g;
    pthread_barrier_t *started;
    _Atomic long tid;
    int64_t cpu_ns;
    int rc;
} waiter;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *wait_and_mint(void *p)
{
    waiter *w = p;
    idm_uuid u;
    int64_t c0;
    atomic_store(&w->tid, (long)syscall(SYS_gettid));
    pthread_barrier_wait(w->started);
    c0 = thread_cpu_ns();
    w->rc = idm_uuid7_next(w->g, &u);
    w->cpu_ns = thread_cpu_ns() - c0;
    return NULL;
}

/* The scheduler state of thread tid of this process ('R' running or
 * runnable, 'S' asleep, ...), from /proc; '?' if unreadable. */
static char thread_state(long tid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    f = fopen(path, "r");
    if (f == NULL)
        return '?';
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* after the command name, which may hold anything */
    return p != NULL && p[1] == ' ' ? p[2] : '?';
}

/*
 * A thread holds a generator's lock for 300 ms (as a holder descheduled
 * for that long would) while four threads call idm_uuid7_next. They must
 * sleep, not spin or yield in a loop: sampled 20 times while the lock is
 * held, each is asleep in at least 15 samples (a spinning or yielding
 * thread is always running or runnable, however loaded the machine), and
 * each used well under a third of that time on a CPU. All mint once the
 * lock is let go.
 */
static void shared_waiters_sleep(void **state)
{
    idm_uuid7_gen *g = NULL;
    idm_test_lock_holder h;
    pthread_barrier_t started;
    pthread_t th[WAITERS];
    waiter w[WAITERS];
    int asleep[WAITERS] = {0};
    (void)state;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, NULL, NULL));
    idm_test_lock_holder_start(&h, idm__uuid7_gen_lock(g));
    assert_int_equal(pthread_barrier_init(&started, NULL, WAITERS + 1), 0);
    for (int i = 0; i < WAITERS; i++) {
        w[i].g = g;
        w[i].started = &started;
        atomic_init(&w[i].tid, 0);
        w[i].cpu_ns = 0;
        w[i].rc = -1;
        assert_int_equal(pthread_create(&th[i], NULL, wait_and_mint, &w[i]), 0);
    }
    pthread_barrier_wait(&started);
    usleep(HOLD_MS * 1000 / 4);
    for (int k = 0; k < SAMPLES; k++) {
        for (int i = 0; i < WAITERS; i++)
            asleep[i] += thread_state(atomic_load(&w[i].tid)) == 'S';
        usleep(HOLD_MS * 1000 / 2 / SAMPLES);
    }
    usleep(HOLD_MS * 1000 / 4);
    idm_test_lock_holder_stop(&h);
    for (int i = 0; i < WAITERS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        IDM_ASSERT_RC(w[i].rc, 0);
        CHECK(asleep[i] >= SAMPLES * 3 / 4,
              "waiter %d was asleep in %d of %d samples while the lock was held", i, asleep[i],
              SAMPLES);
        CHECK(w[i].cpu_ns < (int64_t)HOLD_MS * 1000000 / 3,
              "waiter %d used %lld ms of CPU on a lock held for %d ms", i,
              LL(w[i].cpu_ns / 1000000), HOLD_MS);
    }
    pthread_barrier_destroy(&started);
    idm_uuid7_gen_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uuid7_shared_threads),
        cmocka_unit_test(uuid7_local_threads),
        cmocka_unit_test(ulid_shared_threads),
        cmocka_unit_test(ulid_local_threads),
        cmocka_unit_test(local_uses_clock_and_rng),
        cmocka_unit_test(local_rng_failure),
        cmocka_unit_test(local_two_generators),
        cmocka_unit_test(local_more_generators_than_kept),
        cmocka_unit_test(local_new_generator_at_old_address),
        cmocka_unit_test(local_fork_child_restarts),
        cmocka_unit_test(local_ulid_not_monotonic),
        cmocka_unit_test(shared_waiters_sleep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
