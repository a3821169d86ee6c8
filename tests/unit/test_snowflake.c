/* SPDX-License-Identifier: MIT */
/*
 * The generator's promises under random layouts, policies and clock moves:
 * every id minted is unique and greater than the one before, carries the
 * generator's node values, and never carries a time ahead of the clock by
 * more than the policies allow. Seeded; the seed is printed (IDM_TEST_SEED
 * replays a failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const idm_clock *sys(void) { return idm_clock_system(); }

/* The system clock, the twitter preset: ids increase, carry their node values
 * and a time between the readings before and after. */
static void twitter_system_clock(void **unused)
{
    idm_layout *l;
    idm_snowflake_opts o;
    idm_snowflake *g;
    idm_decoded d;
    enum { N = 20000 };
    uint64_t *ids = malloc(N * sizeof *ids);
    (void)unused;

    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 17));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 30));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    idm_unix_ms before = sys()->wall_ns(NULL) / 1000000;
    for (size_t i = 0; i < N; i++)
        IDM_ASSERT_OK(idm_snowflake_next(g, &ids[i]));
    idm_unix_ms after = sys()->wall_ns(NULL) / 1000000;
    assert_true(idm_test_strictly_increasing(ids, N));
    for (size_t i = 0; i < N; i += 997) {
        IDM_ASSERT_OK(idm_layout_decode(l, ids[i], &d));
        assert_int_equal(d.value[1], 17);
        assert_int_equal(d.value[2], 30);
        assert_true(d.unix_ms >= before - 10 && d.unix_ms <= after + 10);
    }
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(l);
    free(ids);
}

/* A random valid layout: time first, then node fields and seq in random
 * order (sometimes seq above the node fields, as Sonyflake has it). */
static idm_layout *random_layout(idm_test_rng *r, char *text, size_t len)
{
    static const int ticks[] = {1, 2, 10, 1000};
    unsigned time_bits = (unsigned)idm_test_rng_range(r, 31, 44);
    int tick = ticks[idm_test_rng_range(r, 0, 3)];
    unsigned nodes = (unsigned)idm_test_rng_range(r, 0, 3);
    unsigned seq_bits = (unsigned)idm_test_rng_range(r, 1, 14);
    unsigned seq_pos = (unsigned)idm_test_rng_range(r, 0, nodes);
    unsigned left = 64 - time_bits - seq_bits;
    size_t off = (size_t)snprintf(text, len, "time:%u@%dms", time_bits, tick);
    for (unsigned i = 0; i <= nodes; i++) {
        if (i == seq_pos)
            off += (size_t)snprintf(text + off, len - off, ",seq:%u", seq_bits);
        if (i < nodes && left > 0) {
            unsigned b = (unsigned)idm_test_rng_range(r, 1, left < 8 ? left : 8);
            left -= b;
            off += (size_t)snprintf(text + off, len - off, ",n%u:%u", i, b);
        }
    }
    idm_layout *l;
    /* An epoch a little in the past of the test's manual clock (which starts
     * at 1700000000000), 11.6 days earlier; 31 time bits last 24 days. */
    if (idm_layout_parse(&l, text, INT64_C(1699000000000)) != 0) {
        print_error("layout '%s': %s\n", text, idm_error_detail());
        fail();
    }
    return l;
}

static void random_sequences(void **unused)
{
    idm_test_rng r;
    (void)unused;
    size_t total = 0;
    idm_test_rng_init(&r, idm_test_seed());

    for (int round = 0; round < 150; round++) {
        char text[IDM_LAYOUT_TEXT_MAX];
        idm_layout *l = random_layout(&r, text, sizeof text);
        idm_manual_clock *mc;
        idm_snowflake_opts o;
        idm_snowflake *g;
        size_t cap = 20000, n = 0;
        uint64_t *ids = malloc(cap * sizeof *ids);
        uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
        int64_t tick = idm_layout_tick_ms(l);

        IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1700000000000) + (int64_t)idm_test_rng_range(&r, 0, 999),
                                           idm_test_rng_range(&r, 0, 1) == 1));
        idm_snowflake_opts_init(&o);
        o.layout = l;
        o.clock = idm_manual_clock_clock(mc);
        o.backwards = (idm_backwards_policy)idm_test_rng_range(&r, 0, 2);
        o.exhaust = (idm_exhaust_policy)idm_test_rng_range(&r, 0, 1);
        for (size_t i = 0; i < idm_layout_field_count(l); i++) {
            idm_field_info fi;
            IDM_ASSERT_OK(idm_layout_field(l, i, &fi));
            if (fi.kind == IDM_FIELD_NODE) {
                node[i] = idm_test_rng_range(&r, 0, fi.max);
                IDM_ASSERT_OK(idm_snowflake_opts_node(&o, fi.name, node[i]));
            }
        }
        IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
        int64_t drift = tick > 10 ? tick : 10;
        bool may_run_ahead = o.backwards == IDM_BACKWARDS_LOGICAL || o.exhaust == IDM_EXHAUST_BORROW;

        for (int op = 0; op < 3000 && n + 64 < cap; op++) {
            uint64_t roll = idm_test_rng_range(&r, 0, 99);
            if (roll < 10)
                idm_manual_clock_advance(mc, (int64_t)idm_test_rng_range(&r, 1, (uint64_t)tick * 3));
            else if (roll < 13)
                idm_manual_clock_advance(mc, -(int64_t)idm_test_rng_range(&r, 1, (uint64_t)tick * 4));
            else if (roll < 14)
                idm_manual_clock_advance(mc, -60000);
            else if (roll < 15)
                idm_manual_clock_advance(mc, 60000);
            int rc;
            size_t k = 1;
            if (roll % 5 == 0) {
                k = (size_t)idm_test_rng_range(&r, 1, 40);
                rc = idm_snowflake_next_batch(g, ids + n, k);
            } else {
                rc = idm_snowflake_next(g, ids + n);
            }
            if (rc != 0) {
                if (rc != IDM_ECLOCKBACK && rc != IDM_EEXHAUSTED) {
                    print_error("layout %s: unexpected %s: %s\n", text, idm_err_name(rc),
                                idm_error_detail());
                    fail();
                }
                continue;
            }
            idm_unix_ms now = idm_manual_clock_now_ms(mc);
            for (size_t j = 0; j < k; j++) {
                idm_decoded d;
                IDM_ASSERT_OK(idm_layout_decode(l, ids[n + j], &d));
                for (size_t f = 0; f < idm_layout_field_count(l); f++) {
                    idm_field_info fi;
                    idm_layout_field(l, f, &fi);
                    if (fi.kind == IDM_FIELD_NODE && d.value[f] != node[f]) {
                        print_error("layout %s: field %s is %llu, want %llu\n", text, fi.name,
                                    (unsigned long long)d.value[f], (unsigned long long)node[f]);
                        fail();
                    }
                }
                /* Never ahead of the clock, except within the drift bound
                 * when a policy allows running ahead. */
                if (d.unix_ms > now + (may_run_ahead ? drift : 0)) {
                    print_error("layout %s (backwards %d, exhaust %d): id time %lld, clock %lld\n",
                                text, (int)o.backwards, (int)o.exhaust, (long long)d.unix_ms,
                                (long long)now);
                    fail();
                }
            }
            n += k;
        }
        if (!idm_test_strictly_increasing(ids, n)) {
            print_error("layout %s: ids not strictly increasing\n", text);
            fail();
        }
        assert_int_equal(idm_test_count_duplicates(ids, n), 0);
        /* Narrow layouts under a frozen clock mint little; all mint some. */
        assert_true(n > 0);
        total += n;
        IDM_ASSERT_OK(idm_snowflake_close(g));
        idm_manual_clock_free(mc);
        idm_layout_free(l);
        free(ids);
    }
    /* 150 rounds of up to 3000 operations: most must have minted. */
    assert_true(total > 150 * 1000);
}

/* A batch spanning several ticks under the wait policy sleeps until the
 * clock reaches its last tick, so no id of it is from the future. */
static void batch_spanning_ticks_waits(void **unused)
{
    idm_layout *l;
    idm_manual_clock *mc;
    idm_snowflake_opts o;
    idm_snowflake *g;
    enum { N = 4096 * 3 };
    uint64_t *ids = malloc(N * sizeof *ids);
    idm_decoded first, last;
    (void)unused;

    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, INT64_C(1767225600000), true));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = idm_manual_clock_clock(mc);
    idm_snowflake_opts_node(&o, "datacenter", 1);
    idm_snowflake_opts_node(&o, "worker", 2);
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_OK(idm_snowflake_next_batch(g, ids, N));
    assert_true(idm_test_strictly_increasing(ids, N));
    idm_layout_decode(l, ids[0], &first);
    idm_layout_decode(l, ids[N - 1], &last);
    assert_int_equal(first.unix_ms, INT64_C(1767225600000));
    assert_int_equal(last.unix_ms, INT64_C(1767225600002));
    assert_int_equal(last.seq, 4095);
    assert_true(idm_manual_clock_now_ms(mc) >= last.unix_ms);
    assert_int_equal(idm_manual_clock_slept_ns(mc), 2000000);
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_manual_clock_free(mc);
    idm_layout_free(l);
    free(ids);
}

/* The clock steps back 1 ms and 60 s under each backwards policy (twitter
 * preset: drift bound 10 ms, wait bound 6 ms). 1 ms: logical mints at once
 * on the last tick, wait sleeps about 1 ms then mints, refuse refuses. 60 s:
 * every policy refuses at once, without sleeping. In every case minting
 * resumes once the clock passes the last tick and no id repeats. */
static void step_back_each_policy(void **unused)
{
    static const idm_backwards_policy policies[] = {IDM_BACKWARDS_LOGICAL, IDM_BACKWARDS_WAIT,
                                                    IDM_BACKWARDS_REFUSE};
    static const int64_t steps[] = {1, 60000};
    const idm_unix_ms t0 = INT64_C(1767225600000);
    (void)unused;

    for (size_t p = 0; p < 3; p++) {
        for (size_t k = 0; k < 2; k++) {
            idm_layout *l;
            idm_manual_clock *mc;
            idm_snowflake_opts o;
            idm_snowflake *g;
            idm_snowflake_stats st;
            idm_decoded d;
            uint64_t ids[8], id;
            size_t n = 0;
            int rc;

            IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
            IDM_ASSERT_OK(idm_manual_clock_new(&mc, t0, true));
            idm_snowflake_opts_init(&o);
            o.layout = l;
            o.clock = idm_manual_clock_clock(mc);
            o.backwards = policies[p];
            IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 3));
            IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 4));
            IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
            IDM_ASSERT_OK(idm_snowflake_next(g, &ids[n++]));
            idm_manual_clock_advance(mc, 5);                 /* t0 + 5 */
            IDM_ASSERT_OK(idm_snowflake_next(g, &ids[n++]));
            idm_manual_clock_advance(mc, -steps[k]);         /* back */
            int64_t slept = idm_manual_clock_slept_ns(mc);

            rc = idm_snowflake_next(g, &id);
            if (steps[k] == 1 && policies[p] == IDM_BACKWARDS_LOGICAL) {
                IDM_ASSERT_OK(rc);
                idm_layout_decode(l, id, &d);
                assert_int_equal(d.unix_ms, t0 + 5); /* the last tick, seq 1 */
                assert_int_equal(d.seq, 1);
                assert_int_equal(idm_manual_clock_slept_ns(mc), slept);
                ids[n++] = id;
            } else if (steps[k] == 1 && policies[p] == IDM_BACKWARDS_WAIT) {
                IDM_ASSERT_OK(rc);
                idm_layout_decode(l, id, &d);
                assert_true(d.unix_ms <= idm_manual_clock_now_ms(mc));
                assert_true(idm_manual_clock_slept_ns(mc) - slept >= 1000000);
                assert_true(idm_manual_clock_slept_ns(mc) - slept <= 6000000);
                ids[n++] = id;
            } else {
                assert_int_equal(rc, IDM_ECLOCKBACK);
                assert_int_equal(idm_manual_clock_slept_ns(mc), slept); /* no sleep */
                idm_snowflake_stats_get(g, &st);
                assert_int_equal(st.refused_backwards, 1);
                assert_true(st.last_backwards_ms >= steps[k] && st.last_backwards_ms <= steps[k] + 1);
                assert_int_equal(st.last_unix_ms, t0 + 5); /* nothing moved */
            }
            /* Once the clock passes the last tick, minting resumes. */
            idm_manual_clock_set(mc, t0 + 7);
            IDM_ASSERT_OK(idm_snowflake_next(g, &ids[n++]));
            idm_layout_decode(l, ids[n - 1], &d);
            assert_int_equal(d.unix_ms, t0 + 7);
            assert_true(idm_test_strictly_increasing(ids, n));
            assert_int_equal(idm_test_count_duplicates(ids, n), 0);
            IDM_ASSERT_OK(idm_snowflake_close(g));
            idm_manual_clock_free(mc);
            idm_layout_free(l);
        }
    }
}

/* Errors have names and messages; unknown codes get a static fallback. */
static void error_table(void **unused)
{
    (void)unused;
    for (int e = IDM_ERRNO_MIN; e <= 0; e++) {
        assert_non_null(idm_strerror(e));
        assert_string_not_equal(idm_strerror(e), "unknown error");
        assert_string_not_equal(idm_err_name(e), "IDM_UNKNOWN");
    }
    assert_string_equal(idm_strerror(1), "unknown error");
    assert_string_equal(idm_strerror(-1000), "unknown error");
    assert_string_equal(idm_err_name(IDM_ECLOCKBACK), "IDM_ECLOCKBACK");
    assert_string_equal(idm_version(), IDM_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(twitter_system_clock),
        cmocka_unit_test(random_sequences),
        cmocka_unit_test(batch_spanning_ticks_waits),
        cmocka_unit_test(step_back_each_policy),
        cmocka_unit_test(error_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
