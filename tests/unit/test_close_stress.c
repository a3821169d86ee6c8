/* SPDX-License-Identifier: MIT */
/*
 * idm_lease_close while 4 threads mint on the attached generator, 1,000
 * rounds (IDM_STRESS_ROUNDS to change), on the file coordinator and the
 * system clock, through the public API only. Each round a second holder then
 * claims the same worker id (the only one) and checks the first holder's
 * work: the mark it inherits covers every id the first holder's threads
 * handed out, and its own ids are above all of them, so none repeats. Even
 * rounds use 4,096 ids a tick (the threads race on the CAS), odd rounds 16
 * ids a tick (the threads spend their time on the exhaustion wait path, so
 * close lands while they sleep). Run under TSan by make test as well.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <idmint/lease.h>

#include "testutil.h"

#define THREADS 4
#define CAP 65536 /* ids a thread keeps; it stops minting when full */

typedef struct minter {
    idm_snowflake *g;
    uint64_t *ids;
    _Atomic size_t n;
    int last_rc;
    pthread_t t;
} minter;

static void *mint_main(void *arg)
{
    minter *m = arg;
    for (;;) {
        uint64_t id;
        size_t n = atomic_load_explicit(&m->n, memory_order_relaxed);
        int rc;
        if (n == CAP) {
            m->last_rc = 0;
            return NULL;
        }
        rc = idm_snowflake_next(m->g, &id);
        /* A full tick whose successor the clock does not reach within the
         * wait bound (threads reserving ticks ahead on a loaded machine)
         * is a refusal to retry, not an end: nothing was handed out. */
        if (rc == IDM_EEXHAUSTED)
            continue;
        if (rc != 0) {
            m->last_rc = rc;
            return NULL;
        }
        m->ids[n] = id;
        atomic_store_explicit(&m->n, n + 1, memory_order_release);
    }
}

static idm_unix_ms now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (idm_unix_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A guarded generator on l's worker id, above l's inherited mark (waiting
 * for the clock to pass it if it is ahead, as idmint next does). */
static idm_snowflake *open_gen(idm_layout *layout, idm_lease *l)
{
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    int rc;
    idm_snowflake_opts_init(&o);
    o.layout = layout;
    o.guarded = true;
    o.after_ms = idm_lease_mark(l);
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", idm_lease_worker(l)));
    while ((rc = idm_snowflake_open(&g, &o)) == IDM_ECLOCKBACK) {
        struct timespec ts = {0, 1000000};
        CHECK(idm_lease_mark(l) - now_ms() < 60000, "mark %lld ms ahead",
              LL(idm_lease_mark(l) - now_ms()));
        nanosleep(&ts, NULL);
    }
    IDM_ASSERT_OK(rc);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    return g;
}

static void round_once(const char *url, idm_layout *layout, size_t close_after, minter *m)
{
    idm_lease_opts lo;
    idm_lease *l1, *l2;
    idm_snowflake *g1, *g2;
    uint64_t max1 = 0;
    idm_unix_ms mark2, max1_ms;
    idm_decoded d;
    size_t total;

    idm_lease_opts_init(&lo);
    lo.url = url;
    lo.max_workers = 1;
    lo.holder = "stress";
    IDM_ASSERT_OK(idm_lease_open(&l1, &lo));
    g1 = open_gen(layout, l1);
    for (int i = 0; i < THREADS; i++) {
        m[i].g = g1;
        atomic_store(&m[i].n, 0);
        m[i].last_rc = 0;
        assert_int_equal(pthread_create(&m[i].t, NULL, mint_main, &m[i]), 0);
    }
    /* Close while they mint. */
    do {
        total = 0;
        for (int i = 0; i < THREADS; i++)
            total += atomic_load_explicit(&m[i].n, memory_order_acquire);
    } while (total < close_after);
    IDM_ASSERT_OK(idm_lease_close(l1));
    for (int i = 0; i < THREADS; i++) {
        pthread_join(m[i].t, NULL);
        CHECK(m[i].last_rc == IDM_ELEASE || (m[i].last_rc == 0 && m[i].n == CAP),
              "a minting thread stopped with %s", idm_err_name(m[i].last_rc));
        for (size_t k = 0; k < m[i].n; k++)
            if (m[i].ids[k] > max1)
                max1 = m[i].ids[k];
    }
    IDM_ASSERT_OK(idm_layout_decode(layout, max1, &d));
    max1_ms = d.unix_ms;

    /* The second holder: the mark it inherits covers every id handed out;
     * its ids are above them all. */
    IDM_ASSERT_OK(idm_lease_open(&l2, &lo));
    mark2 = idm_lease_mark(l2);
    CHECK(mark2 >= max1_ms, "the final mark %lld is below an id handed out at %lld ms", LL(mark2),
          LL(max1_ms));
    g2 = open_gen(layout, l2);
    for (int k = 0; k < 64; k++) {
        uint64_t id;
        IDM_ASSERT_OK(idm_snowflake_next(g2, &id));
        CHECK(id > max1, "the second holder minted %llu, at or below the first holder's %llu",
              ULL(id), ULL(max1));
    }
    IDM_ASSERT_OK(idm_lease_close(l2));
    IDM_ASSERT_OK(idm_snowflake_close(g2));
    IDM_ASSERT_OK(idm_snowflake_close(g1));
}

static void close_while_four_threads_mint(void **unused)
{
    char *dir = idm_test_tmpdir(), url[600];
    const char *env = getenv("IDM_STRESS_ROUNDS");
    long rounds = env != NULL ? strtol(env, NULL, 10) : 1000;
    idm_layout *twitter, *narrow;
    minter m[THREADS];
    idm_test_rng r;
    (void)unused;
    idm_test_rng_init(&r, idm_test_seed());
    snprintf(url, sizeof url, "file://%s", dir);
    IDM_ASSERT_OK(idm_layout_parse(&twitter, "time:41@1ms,worker:10,seq:12",
                                   INT64_C(1288834974657)));
    IDM_ASSERT_OK(idm_layout_parse(&narrow, "time:41@1ms,worker:10,seq:4", INT64_C(1288834974657)));
    for (int i = 0; i < THREADS; i++) {
        m[i].ids = malloc(CAP * sizeof *m[i].ids);
        assert_non_null(m[i].ids);
    }
    for (long k = 0; k < rounds; k++) {
        bool odd = (k & 1) != 0;
        round_once(url, odd ? narrow : twitter,
                   (size_t)idm_test_rng_range(&r, 1, odd ? 24 : 2000), m);
    }
    printf("  %ld rounds: close under 4 minting threads, no id repeated\n", rounds);
    for (int i = 0; i < THREADS; i++)
        free(m[i].ids);
    idm_layout_free(twitter);
    idm_layout_free(narrow);
    idm_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(close_while_four_threads_mint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
