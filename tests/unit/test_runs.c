/* SPDX-License-Identifier: MIT */
/*
 * Runs (internal.h, idm__runs): the word that lets one thread mint a run on
 * a contended generator while the others wait. Runs decide only when a
 * thread goes to the lock or the compare-and-swap, so these tests check
 * the decision and that a wait always ends:
 *   - a word nobody stamped, this thread's own stamp, a stamp older than
 *     the window, one from the future (a clock stepped back) and one across
 *     the 48-bit wrap of the stamp, each read the right way;
 *   - each thread has its own tag;
 *   - a wait ends when the minter stops stamping, when the run passes to
 *     the waiting thread's tag, and (the bound) when the minter never stops;
 *   - a generator whose first fields every mint writes starts on a cache
 *     line's boundary.
 * The 8-thread tests of each generator (test_threads128,
 * test_threads_snowflake) check the ids while runs form.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"
#include "testutil.h"

#define W IDM__RUN_WINDOW_NS
#define T0 INT64_C(1767225600000000000) /* 2026-01-01T00:00:00Z in ns */

/* A word as another thread (tag) would leave it after minting at ns. */
static uint64_t word_of(int64_t ns, uint64_t tag)
{
    return ((uint64_t)ns & IDM__RUN_STAMP_MASK) << 16 | tag;
}

static uint64_t other_tag(void)
{
    return idm__runs_tag() % 65535 + 1; /* 1..65535 and never ours */
}

static void decision(void **unused)
{
    idm__runs r;
    uint64_t me = idm__runs_tag(), them = other_tag();
    (void)unused;
    CHECK(me >= 1 && me <= 0xFFFF, "tag %llu", ULL(me));
    CHECK(them != me, "tags %llu and %llu", ULL(me), ULL(them));

    atomic_init(&r.last, 0);
    CHECK(!idm__runs_other(&r, T0), "a word nobody stamped shows a run");

    /* This thread's own stamp: never wait for oneself. */
    idm__runs_mark(&r, T0);
    CHECK(atomic_load(&r.last) == word_of(T0, me), "mark wrote %llx",
          ULL(atomic_load(&r.last)));
    CHECK(!idm__runs_other(&r, T0 + 1), "this thread's own run shows as another's");

    /* Another thread's stamp: a run while it is recent, none after. */
    atomic_store(&r.last, word_of(T0, them));
    CHECK(idm__runs_other(&r, T0), "a stamp of this very ns shows no run");
    CHECK(idm__runs_other(&r, T0 + W - 1), "a stamp %d ns old shows no run", W - 1);
    CHECK(!idm__runs_other(&r, T0 + W), "a stamp %d ns old still shows a run", W);
    CHECK(!idm__runs_other(&r, T0 + 1000000000), "a stamp 1 s old still shows a run");

    /* A reading below the stamp (the clock stepped back, or this thread
     * read it a moment earlier): not a run to wait for. */
    CHECK(!idm__runs_other(&r, T0 - 1000), "a stamp from the future shows a run");

    /* The stamp keeps 48 bits of ns (some 3 days): across its wrap a recent
     * stamp is still recent, and one 2^48 ns old is not told from a new one
     * (a run misjudged once every 3 days costs a wait, never an id). */
    int64_t wrap = (int64_t)((((uint64_t)T0 >> 48) + 1) << 48);
    atomic_store(&r.last, word_of(wrap - 100, them));
    CHECK(idm__runs_other(&r, wrap + 100), "a stamp 200 ns old across the wrap shows no run");
    CHECK(!idm__runs_other(&r, wrap + W), "a stamp %d ns old across the wrap shows a run", W + 100);

    /* A mark takes the word over, whoever had it. */
    idm__runs_mark(&r, T0 + 5);
    CHECK(atomic_load(&r.last) == word_of(T0 + 5, me), "mark over another's word wrote %llx",
          ULL(atomic_load(&r.last)));
}

static void *tag_of_thread(void *p)
{
    *(uint64_t *)p = idm__runs_tag();
    return NULL;
}

static void tags_per_thread(void **unused)
{
    enum { N = 16 };
    pthread_t th[N];
    uint64_t tag[N];
    (void)unused;
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&th[i], NULL, tag_of_thread, &tag[i]), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < N; i++) {
        CHECK(tag[i] >= 1 && tag[i] <= 0xFFFF, "thread %d: tag %llu", i, ULL(tag[i]));
        CHECK(tag[i] != idm__runs_tag(), "thread %d has the main thread's tag", i);
        for (int j = 0; j < i; j++)
            CHECK(tag[i] != tag[j], "threads %d and %d share tag %llu", i, j, ULL(tag[i]));
    }
    CHECK(idm__runs_tag() == idm__runs_tag(), "a thread's tag changed");
}

/* A minter that stamps the word with tag `tag` until told to stop, then
 * (hand_over) stamps it once with the waiting thread's tag. */
typedef struct minter {
    idm__runs *r;
    uint64_t tag, hand_to;
    _Atomic int started, stop;
} minter;

static void *mint_stamps(void *p)
{
    minter *m = p;
    int64_t ns = T0;
    atomic_store(&m->started, 1);
    while (!atomic_load_explicit(&m->stop, memory_order_relaxed)) {
        ns += 40;
        atomic_store_explicit(&m->r->last, word_of(ns, m->tag), memory_order_relaxed);
    }
    if (m->hand_to != 0)
        atomic_store(&m->r->last, word_of(ns + 40, m->hand_to));
    return NULL;
}

/* Start m's thread on a word last stamped by m, once it runs. */
static void start_minter(minter *m, pthread_t *th)
{
    atomic_init(&m->r->last, word_of(T0, m->tag));
    atomic_init(&m->started, 0);
    atomic_init(&m->stop, 0);
    assert_int_equal(pthread_create(th, NULL, mint_stamps, m), 0);
    while (!atomic_load(&m->started))
        ;
}

/* A wait whose minter never stops still ends (IDM__RUN_MAX_NS): were it
 * unbounded, this test would hang until its timeout. Repeated, so that
 * the waits see the minter at every point of its loop. */
static void wait_ends_while_minter_runs(void **unused)
{
    idm__runs r;
    minter m = {.r = &r, .tag = other_tag()};
    pthread_t th;
    (void)unused;
    start_minter(&m, &th);
    for (int i = 0; i < 1000; i++)
        idm__runs_defer(&r);
    CHECK((atomic_load(&r.last) & 0xFFFF) == m.tag, "the word lost the minter's tag");
    atomic_store(&m.stop, 1);
    assert_int_equal(pthread_join(th, NULL), 0);
}

/* A wait on a word nobody stamps any more ends (at its first look). */
static void wait_ends_when_quiet(void **unused)
{
    idm__runs r;
    (void)unused;
    atomic_init(&r.last, word_of(T0, other_tag()));
    for (int i = 0; i < 1000; i++)
        idm__runs_defer(&r);
    CHECK(atomic_load(&r.last) == word_of(T0, other_tag()), "the wait wrote the word");
}

/* A run handed to the waiting thread's tag ends its wait. */
static void wait_ends_on_hand_over(void **unused)
{
    idm__runs r;
    minter m = {.r = &r, .tag = other_tag(), .hand_to = idm__runs_tag()};
    pthread_t th;
    (void)unused;
    start_minter(&m, &th);
    atomic_store(&m.stop, 1);
    idm__runs_defer(&r);
    assert_int_equal(pthread_join(th, NULL), 0);
    CHECK((atomic_load(&r.last) & 0xFFFF) == idm__runs_tag(), "the run was not handed over");
    idm__runs_defer(&r); /* the word shows this thread: returns at the first look */
}

static void generators_start_on_a_line(void **unused)
{
    (void)unused;
    for (int i = 0; i < 64; i++) {
        idm_uuid7_gen *u;
        idm_ulid_gen *l;
        IDM_ASSERT_OK(idm_uuid7_gen_new(&u, NULL, NULL));
        IDM_ASSERT_OK(idm_ulid_gen_new(&l, NULL, NULL, true));
        CHECK((uintptr_t)idm__uuid7_gen_lock(u) % 64 == 0, "a UUIDv7 generator's lock at %p",
              (void *)idm__uuid7_gen_lock(u));
        CHECK((uintptr_t)idm__ulid_gen_lock(l) % 64 == 0, "a ULID generator's lock at %p",
              (void *)idm__ulid_gen_lock(l));
        idm_uuid7_gen_free(u);
        idm_ulid_gen_free(l);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decision),
        cmocka_unit_test(tags_per_thread),
        cmocka_unit_test(wait_ends_while_minter_runs),
        cmocka_unit_test(wait_ends_when_quiet),
        cmocka_unit_test(wait_ends_on_hand_over),
        cmocka_unit_test(generators_start_on_a_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
