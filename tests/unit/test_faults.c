/* SPDX-License-Identifier: MIT */
/*
 * The generator rows of the fault catalogue, each driven by the manual
 * clock: C1 small step back, C2 big step back, C3 restart with the clock set
 * back, C4 jump ahead then back, C5 fast and slow clocks, C6 strobe, C7 leap
 * second without smear, C8 leap smear, C9 frozen clock, C10 burst past the
 * sequence, C11 time before the epoch, C12 time field exhausted, H5 two
 * generators on one state file, H6 threads racing on one generator. Also the
 * duplicate hazard that worker leases exist to prevent, next_batch, and bad
 * input. Besides its own expectation, every scenario collects the ids it
 * minted and checks that none repeats and that they strictly increase.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 INT64_C(1700000000000) /* 2023-11-14T22:13:20Z */
#define MS INT64_C(1000000)       /* ns in a ms */
#define SENTINEL UINT64_C(0x5eed5eed5eed5eed)
/* The twitter preset ticks every 1 ms, so the automatic bounds are
 * max_drift_ms = max(10, tick) = 10 and max_wait_ms = 5 + tick = 6. */
#define TW_DRIFT_MS 10
#define TW_WAIT_MS 6
#define TW_SEQ 4096

/* ---- a generator on a manual clock ---- */

typedef struct fx {
    idm_manual_clock *mc;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec ids;
} fx;

static void twitter_opts(idm_snowflake_opts *o, const idm_layout *l,
                         idm_manual_clock *mc, uint64_t worker)
{
    idm_snowflake_opts_init(o);
    o->layout = l;
    o->clock = idm_manual_clock_clock(mc);
    IDM_ASSERT_OK(idm_snowflake_opts_node(o, "datacenter", 3));
    IDM_ASSERT_OK(idm_snowflake_opts_node(o, "worker", worker));
}

static void fx_init(fx *f, idm_unix_ms start, bool advance_on_sleep)
{
    memset(f, 0, sizeof *f);
    IDM_ASSERT_OK(idm_manual_clock_new(&f->mc, start, advance_on_sleep));
    IDM_ASSERT_OK(idm_layout_preset(&f->layout, "twitter"));
}

static void fx_open(fx *f, idm_unix_ms start, bool advance_on_sleep,
                    idm_backwards_policy bp, idm_exhaust_policy ep)
{
    idm_snowflake_opts o;
    fx_init(f, start, advance_on_sleep);
    twitter_opts(&o, f->layout, f->mc, 7);
    o.backwards = bp;
    o.exhaust = ep;
    IDM_ASSERT_OK(idm_snowflake_open(&f->g, &o));
    assert_non_null(f->g);
}

static void fx_done(fx *f)
{
    if (f->g != NULL)
        IDM_ASSERT_OK(idm_snowflake_close(f->g));
    f->g = NULL;
    idm_layout_free(f->layout);
    idm_manual_clock_free(f->mc);
    idm_test_idvec_free(&f->ids);
}

static uint64_t fx_mint(fx *f)
{
    uint64_t id = SENTINEL;
    IDM_ASSERT_OK(idm_snowflake_next(f->g, &id));
    idm_test_idvec_push(&f->ids, id);
    return id;
}

static idm_snowflake_stats fx_stats(const fx *f)
{
    idm_snowflake_stats st;
    memset(&st, 0xa5, sizeof st);
    idm_snowflake_stats_get(f->g, &st);
    return st;
}

/* One call that must fail with rc, leave the id alone and move nothing. */
static void fx_refused(fx *f, int rc)
{
    idm_snowflake_stats before = fx_stats(f);
    uint64_t id = SENTINEL;
    IDM_ASSERT_RC(idm_snowflake_next(f->g, &id), rc);
    CHECK(id == SENTINEL, "a failed call wrote %llu into the id", ULL(id));
    idm_snowflake_stats after = fx_stats(f);
    CHECK(after.last_unix_ms == before.last_unix_ms,
          "a failed call moved the last tick from %lld to %lld",
          LL(before.last_unix_ms), LL(after.last_unix_ms));
}

static idm_decoded decode(const idm_layout *l, uint64_t id)
{
    idm_decoded d;
    IDM_ASSERT_OK(idm_layout_decode(l, id, &d));
    return d;
}

/* The generator's state word for an id: (tick << seq_bits) | seq. */
static uint64_t state_of(const idm_layout *l, uint64_t id)
{
    idm_decoded d = decode(l, id);
    return (d.tick << idm_layout_seq_bits(l)) | d.seq;
}

static int64_t slept(const fx *f) { return idm_manual_clock_slept_ns(f->mc); }

/* Three ids at T0, then one at T0 + 1: returns that last one. */
static uint64_t mint_prelude(fx *f)
{
    for (int i = 0; i < 3; i++)
        fx_mint(f);
    idm_manual_clock_advance(f->mc, 1);
    uint64_t last = fx_mint(f);
    idm_decoded d = decode(f->layout, last);
    CHECK(d.unix_ms == T0 + 1 && d.seq == 0,
          "prelude: last id at %lld seq %llu, expected %lld seq 0",
          LL(d.unix_ms), ULL(d.seq), LL(T0 + 1));
    return last;
}

static const idm_backwards_policy all_backwards[3] = {
    IDM_BACKWARDS_LOGICAL, IDM_BACKWARDS_REFUSE, IDM_BACKWARDS_WAIT};

static const char *bp_name(idm_backwards_policy p)
{
    switch (p) {
    case IDM_BACKWARDS_LOGICAL: return "logical";
    case IDM_BACKWARDS_REFUSE: return "refuse";
    case IDM_BACKWARDS_WAIT: return "wait";
    case IDM_BACKWARDS_CHANGE_WORKER: return "change-worker"; /* leased only: test_leased */
    }
    return "?";
}

/* ---- C1: the wall clock steps back 3 ms, within tolerance ---- */

static void c01_small_step_back_waits(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, true, IDM_BACKWARDS_WAIT, IDM_EXHAUST_WAIT);
    uint64_t last = mint_prelude(&f);
    idm_decoded dl = decode(f.layout, last);
    idm_snowflake_stats st0 = fx_stats(&f);

    idm_manual_clock_advance(f.mc, -3);
    int64_t s0 = slept(&f);
    uint64_t id = fx_mint(&f);
    int64_t waited = slept(&f) - s0;
    CHECK(waited >= 3 * MS - MS / 2 && waited <= 4 * MS,
          "waited %lld ns for a 3 ms step back, expected about 3 ms",
          LL(waited));
    idm_decoded d = decode(f.layout, id);
    CHECK(id > last, "id after the wait is not above the last one");
    CHECK(d.unix_ms >= dl.unix_ms, "id time %lld below the last %lld",
          LL(d.unix_ms), LL(dl.unix_ms));
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(st.waits > st0.waits, "stats.waits did not count the wait");
    CHECK(st.refused_backwards == 0, "the wait policy refused a 3 ms step");

    for (int i = 0; i < 5; i++) {
        idm_manual_clock_advance(f.mc, 1);
        fx_mint(&f);
    }
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void c01_small_step_back_logical(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, true, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    uint64_t last = mint_prelude(&f);
    idm_decoded dl = decode(f.layout, last);
    idm_snowflake_stats st0 = fx_stats(&f);

    idm_manual_clock_advance(f.mc, -3);
    int64_t s0 = slept(&f), n0 = idm_manual_clock_sleeps(f.mc);
    uint64_t id = fx_mint(&f);
    CHECK(slept(&f) == s0 && idm_manual_clock_sleeps(f.mc) == n0,
          "the logical policy slept on a 3 ms step back");
    idm_decoded d = decode(f.layout, id);
    CHECK(d.unix_ms == dl.unix_ms && d.seq == dl.seq + 1,
          "logical mint at %lld seq %llu, expected the last tick %lld seq %llu",
          LL(d.unix_ms), ULL(d.seq), LL(dl.unix_ms), ULL(dl.seq + 1));
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(st.ahead_mints == st0.ahead_mints + 1,
          "stats.ahead_mints %llu -> %llu, expected +1",
          ULL(st0.ahead_mints), ULL(st.ahead_mints));
    CHECK(st.refused_backwards == 0, "the logical policy refused 3 ms");

    /* A few more while still behind, then the clock passes the last tick. */
    fx_mint(&f);
    idm_manual_clock_advance(f.mc, 4); /* wall T0 + 2 */
    id = fx_mint(&f);
    d = decode(f.layout, id);
    CHECK(d.unix_ms == T0 + 2, "after recovery the id is at %lld, not %lld",
          LL(d.unix_ms), LL(T0 + 2));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void c01_small_step_back_refuses(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, true, IDM_BACKWARDS_REFUSE, IDM_EXHAUST_WAIT);
    uint64_t last = mint_prelude(&f);
    idm_snowflake_stats st0 = fx_stats(&f);

    idm_manual_clock_advance(f.mc, -3);
    int64_t s0 = slept(&f);
    fx_refused(&f, IDM_ECLOCKBACK);
    fx_refused(&f, IDM_ECLOCKBACK);
    CHECK(slept(&f) == s0, "the refuse policy slept");
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(st.refused_backwards == st0.refused_backwards + 2,
          "stats.refused_backwards is %llu, expected 2",
          ULL(st.refused_backwards));
    CHECK(st.last_backwards_ms >= 2 && st.last_backwards_ms <= 4,
          "stats.last_backwards_ms %lld, expected about 3",
          LL(st.last_backwards_ms));

    /* The clock recovers to the last tick: the next id is the direct
     * successor of the last one, so the refusals consumed nothing. */
    idm_manual_clock_advance(f.mc, 3);
    uint64_t id = fx_mint(&f);
    CHECK(state_of(f.layout, id) == state_of(f.layout, last) + 1,
          "the id after recovery is not the direct successor of the last");
    idm_manual_clock_advance(f.mc, 1);
    fx_mint(&f);
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

/* ---- C2: the wall clock steps back 10 s ---- */

static void c02_big_step_back_refuses(void **state)
{
    (void)state;
    for (int p = 0; p < 3; p++) {
        fx f;
        fx_open(&f, T0, true, all_backwards[p], IDM_EXHAUST_WAIT);
        print_message("# policy %s\n", bp_name(all_backwards[p]));
        uint64_t last = mint_prelude(&f);

        idm_manual_clock_advance(f.mc, -10000);
        int64_t s0 = slept(&f);
        fx_refused(&f, IDM_ECLOCKBACK);
        CHECK(slept(&f) == s0, "%s: slept %lld ns before refusing a 10 s step",
              bp_name(all_backwards[p]), LL(slept(&f) - s0));
        idm_snowflake_stats st = fx_stats(&f);
        CHECK(st.refused_backwards == 1, "stats.refused_backwards %llu != 1",
              ULL(st.refused_backwards));
        CHECK(st.last_backwards_ms >= 9999 && st.last_backwards_ms <= 10001,
              "stats.last_backwards_ms %lld, expected about 10000",
              LL(st.last_backwards_ms));
        CHECK(st.max_backwards_ms >= st.last_backwards_ms,
              "stats.max_backwards_ms %lld below the last %lld",
              LL(st.max_backwards_ms), LL(st.last_backwards_ms));

        /* Still behind by 9 s ... 1 s: still refused, still no sleep. */
        for (int i = 0; i < 9; i++) {
            idm_manual_clock_advance(f.mc, 1000);
            fx_refused(&f, IDM_ECLOCKBACK);
        }
        CHECK(slept(&f) == s0, "%s: slept while refusing",
              bp_name(all_backwards[p]));
        st = fx_stats(&f);
        CHECK(st.refused_backwards == 10, "stats.refused_backwards %llu != 10",
              ULL(st.refused_backwards));

        /* The clock passes the last tick: minting resumes by itself. */
        idm_manual_clock_advance(f.mc, 1001); /* wall T0 + 2 */
        uint64_t id = fx_mint(&f);
        CHECK(id > last, "resumed id not above the last");
        CHECK(decode(f.layout, id).unix_ms == T0 + 2,
              "resumed id not on the clock's tick");
        fx_mint(&f);
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

/* ---- C3: restart with the clock set back ---- */

static void c03_restart_clock_set_back(void **state)
{
    (void)state;
    char *dir = idm_test_tmpdir();
    char *path = idm_test_path(dir, "gen.state");
    fx f;
    idm_snowflake_opts o;
    fx_init(&f, T0, true);
    twitter_opts(&o, f.layout, f.mc, 7);
    o.state_path = path;
    o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &o));
    for (int i = 0; i < 10; i++) {
        fx_mint(&f);
        if (i % 2 == 1)
            idm_manual_clock_advance(f.mc, 1);
    }
    uint64_t last = f.ids.v[f.ids.n - 1];
    idm_unix_ms last_ms = decode(f.layout, last).unix_ms;
    IDM_ASSERT_OK(idm_snowflake_close(f.g));
    f.g = NULL;

    /* The clock is set back 60 s: every policy refuses to start. */
    o.state_fresh = false;
    idm_manual_clock_set(f.mc, last_ms - 60000);
    for (int p = 0; p < 3; p++) {
        idm_snowflake *g = NULL;
        o.backwards = all_backwards[p];
        IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_ECLOCKBACK);
        CHECK(g == NULL, "%s: a failed open handed out a generator",
              bp_name(all_backwards[p]));
    }

    /* Once the clock is past the mark (a clean close stores the exact last
     * tick) the generator starts, above every id of the first run. */
    o.backwards = IDM_BACKWARDS_LOGICAL;
    idm_manual_clock_set(f.mc, last_ms + 1);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &o));
    uint64_t id = fx_mint(&f);
    CHECK(id > last, "first id after restart not above the first run's");
    fx_mint(&f);
    idm_test_check_ids(&f.ids);
    fx_done(&f);
    idm_test_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- C4: the clock jumps +1 h, then steps back ---- */

static void c04_jump_ahead_then_back(void **state)
{
    (void)state;
    fx f;
    idm_clock_watch w;
    idm_clock_report r;
    const int64_t hour = 3600000;
    fx_open(&f, T0, false, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    idm_clock_watch_init(&w, idm_manual_clock_clock(f.mc));
    idm_clock_watch_sample(&w, &r);
    for (int i = 0; i < 3; i++)
        fx_mint(&f);
    idm_manual_clock_advance(f.mc, 1); /* wall and monotonic together */
    fx_mint(&f);
    bool alert = idm_clock_watch_sample(&w, &r);
    CHECK(!alert && !r.stepped, "watch alerted on a normal 1 ms advance");

    /* The wall clock alone jumps an hour ahead. */
    idm_manual_clock_skew(f.mc, hour, 0);
    alert = idm_clock_watch_sample(&w, &r);
    CHECK(alert && r.stepped, "watch missed a 1 h step");
    CHECK(r.step_ms >= hour - 1 && r.step_ms <= hour + 1,
          "watch step_ms %lld, expected about %lld", LL(r.step_ms), LL(hour));
    for (int i = 0; i < 3; i++) {
        uint64_t id = fx_mint(&f);
        CHECK(decode(f.layout, id).unix_ms == T0 + 1 + hour,
              "id during the jump at %lld, expected the future %lld",
              LL(decode(f.layout, id).unix_ms), LL(T0 + 1 + hour));
    }
    idm_manual_clock_advance(f.mc, 1);
    uint64_t last = fx_mint(&f);
    idm_unix_ms last_ms = decode(f.layout, last).unix_ms;
    CHECK(last_ms == T0 + 2 + hour, "last id during the jump at %lld",
          LL(last_ms));

    /* The clock is corrected back by the hour. */
    idm_manual_clock_advance(f.mc, -hour); /* wall T0 + 2 */
    alert = idm_clock_watch_sample(&w, &r);
    CHECK(alert && r.stepped, "watch missed the step back");
    CHECK(r.step_ms >= -hour - 1 && r.step_ms <= -hour + 1,
          "watch step_ms %lld, expected about %lld", LL(r.step_ms), LL(-hour));
    fx_refused(&f, IDM_ECLOCKBACK);
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(st.last_backwards_ms >= hour - 1 && st.last_backwards_ms <= hour + 1,
          "stats.last_backwards_ms %lld, expected about %lld",
          LL(st.last_backwards_ms), LL(hour));

    /* Refused while more than the 10 ms drift behind the last tick. */
    idm_manual_clock_advance(f.mc, hour / 2);
    fx_refused(&f, IDM_ECLOCKBACK);
    idm_manual_clock_set(f.mc, last_ms - (TW_DRIFT_MS + 1));
    fx_refused(&f, IDM_ECLOCKBACK);
    /* The clock passes the last tick: minting resumes. */
    idm_manual_clock_set(f.mc, last_ms + 1);
    uint64_t id = fx_mint(&f);
    CHECK(id > last && decode(f.layout, id).unix_ms == last_ms + 1,
          "resumed id not on the clock's tick past the jump");
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

/* ---- C5: the clock runs fast (x2) or slow (x0.5) ---- */

static void run_rate(int64_t wall_ms, int64_t mono_ns, bool fast)
{
    fx f;
    idm_clock_watch w;
    idm_clock_report r;
    fx_open(&f, T0, true, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    idm_clock_watch_init(&w, idm_manual_clock_clock(f.mc));
    CHECK(w.min_window_ms == 1000 && w.drift_alert_ppm == 1000 &&
              w.step_alert_ms == 100,
          "watch defaults are not 1000 ms / 1000 ppm / 100 ms");
    idm_clock_watch_sample(&w, &r);
    int64_t mono = 0, ppm = 0;
    bool drifting = false;
    for (int step = 0; step < 3000; step++) {
        idm_manual_clock_skew(f.mc, wall_ms, mono_ns);
        mono += mono_ns;
        for (int k = 0; k < 3; k++)
            fx_mint(&f);
        bool alert = idm_clock_watch_sample(&w, &r);
        CHECK(!r.stepped, "a steady rate reported as a step of %lld ms",
              LL(r.step_ms));
        if (mono < 1000 * MS)
            CHECK(!r.drifting, "drift reported after %lld ns, before a window",
                  LL(mono));
        if (r.drifting) {
            CHECK(alert, "drifting without an alert");
            drifting = true;
            ppm = r.drift_ppm;
        }
    }
    print_message("# %s clock: drift %lld ppm\n", fast ? "fast" : "slow", LL(ppm));
    CHECK(drifting, "the watch never reported drifting");
    if (fast)
        CHECK(ppm > 500000, "x2 clock drift_ppm %lld, expected about +1000000",
              LL(ppm));
    else
        CHECK(ppm < -250000, "x0.5 clock drift_ppm %lld, expected about -500000",
              LL(ppm));
    CHECK(f.ids.n == 9000, "minted %zu of 9000", f.ids.n);
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void c05_fast_clock(void **state)
{
    (void)state;
    run_rate(2, 1 * MS, true);
}

static void c05_slow_clock(void **state)
{
    (void)state;
    run_rate(1, 2 * MS, false);
}

/* ---- C6: strobe, the wall clock oscillates +-200 ms every 10 ms ---- */

static void c06_strobe(void **state)
{
    (void)state;
    for (int p = 0; p < 3; p++) {
        fx f;
        fx_open(&f, T0, true, all_backwards[p], IDM_EXHAUST_WAIT);
        int64_t off = 0, calls = 0, fails = 0;
        for (int k = 0; k < 1000; k++) { /* 1000 x 10 ms = 10 s */
            int64_t new_off = (k % 2 == 0) ? 200 : -200;
            idm_manual_clock_skew(f.mc, 10 + new_off - off, 10 * MS);
            off = new_off;
            for (int a = 0; a < 4; a++) {
                uint64_t id = SENTINEL;
                int rc = idm_snowflake_next(f.g, &id);
                calls++;
                if (rc == 0) {
                    idm_test_idvec_push(&f.ids, id);
                } else {
                    CHECK(rc == IDM_ECLOCKBACK || rc == IDM_EEXHAUSTED,
                          "%s: strobe call failed with %s",
                          bp_name(all_backwards[p]), idm_err_name(rc));
                    CHECK(id == SENTINEL, "failed call wrote the id");
                    fails++;
                }
            }
        }
        idm_snowflake_stats st = fx_stats(&f);
        print_message("# strobe %s: %zu minted, %lld refused, slept %lld ns\n",
                      bp_name(all_backwards[p]), f.ids.n, LL(fails),
                      LL(slept(&f)));
        CHECK(f.ids.n >= 1000, "%s: only %zu ids minted under the strobe",
              bp_name(all_backwards[p]), f.ids.n);
        CHECK((int64_t)(st.refused_backwards + st.refused_exhausted) == fails,
              "refusal counters %llu + %llu != %lld failures",
              ULL(st.refused_backwards), ULL(st.refused_exhausted), LL(fails));
        CHECK(slept(&f) <= calls * TW_WAIT_MS * MS,
              "slept %lld ns over %lld calls: waits unbounded", LL(slept(&f)),
              LL(calls));
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

/* ---- C7: a leap second without smear (the second repeats) ---- */

static void c07_leap_second_repeat(void **state)
{
    (void)state;
    const idm_unix_ms leap = INT64_C(1483228800000); /* 2017-01-01T00:00:00Z */
    for (int p = 0; p < 3; p++) {
        idm_backwards_policy bp = all_backwards[p];
        fx f;
        fx_open(&f, leap - 2000, true, bp, IDM_EXHAUST_WAIT);
        for (int k = 0; k < 2000; k++) {
            fx_mint(&f);
            idm_manual_clock_advance(f.mc, 1);
        }
        uint64_t last = fx_mint(&f); /* at 23:59:60.000 */
        CHECK(decode(f.layout, last).unix_ms == leap, "setup: last not at leap");
        idm_manual_clock_advance(f.mc, -1000); /* the second repeats */
        int64_t s0 = slept(&f);

        /* Step k reads leap - 1000 + k: behind the last tick by 1000 - k. */
        int first_ok = -1;
        for (int k = 0; k <= 1100; k++) {
            uint64_t id = SENTINEL;
            int rc = idm_snowflake_next(f.g, &id);
            if (rc == 0) {
                if (first_ok < 0)
                    first_ok = k;
                idm_test_idvec_push(&f.ids, id);
            } else {
                CHECK(rc == IDM_ECLOCKBACK, "%s: step %d failed with %s",
                      bp_name(bp), k, idm_err_name(rc));
                CHECK(first_ok < 0, "%s: refused at step %d after resuming at %d",
                      bp_name(bp), k, first_ok);
            }
            idm_manual_clock_advance(f.mc, 1);
        }
        int lo, hi;
        switch (bp) {
        case IDM_BACKWARDS_REFUSE: lo = hi = 1000; break;
        case IDM_BACKWARDS_WAIT: lo = 1000 - TW_WAIT_MS - 1; hi = lo + 2; break;
        default: lo = 1000 - TW_DRIFT_MS - 1; hi = lo + 2; break;
        }
        print_message("# leap %s: resumed at step %d\n", bp_name(bp), first_ok);
        CHECK(first_ok >= lo && first_ok <= hi,
              "%s: resumed %d ms into the repeated second, expected %d..%d",
              bp_name(bp), first_ok, lo, hi);
        idm_snowflake_stats st = fx_stats(&f);
        CHECK(st.refused_backwards == (uint64_t)first_ok,
              "stats.refused_backwards %llu != %d", ULL(st.refused_backwards),
              first_ok);
        CHECK(st.max_backwards_ms >= 999 && st.max_backwards_ms <= 1001,
              "stats.max_backwards_ms %lld, expected about 1000",
              LL(st.max_backwards_ms));
        if (bp == IDM_BACKWARDS_WAIT)
            CHECK(slept(&f) - s0 > 0 && slept(&f) - s0 <= TW_WAIT_MS * MS,
                  "wait: slept %lld ns, expected (0, %d ms]",
                  LL(slept(&f) - s0), TW_WAIT_MS);
        else
            CHECK(slept(&f) == s0, "%s: slept %lld ns", bp_name(bp),
                  LL(slept(&f) - s0));
        if (bp == IDM_BACKWARDS_LOGICAL)
            CHECK(st.ahead_mints >= TW_DRIFT_MS - 1,
                  "logical: stats.ahead_mints %llu", ULL(st.ahead_mints));
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

/* ---- C8: leap smear, the wall clock runs 11.6 ppm slow ---- */

static void c08_leap_smear(void **state)
{
    (void)state;
    /* Monotonic steps whose sum over 5 is 5 ms + 58 ns: 11.6 ppm. */
    static const int64_t mono_step[5] = {1000011, 1000012, 1000012, 1000011,
                                         1000012};
    fx f;
    idm_clock_watch w;
    idm_clock_report r;
    fx_open(&f, T0, true, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    idm_clock_watch_init(&w, idm_manual_clock_clock(f.mc));
    idm_clock_watch_sample(&w, &r);
    int64_t min_ppm = 0, max_ppm = 0;
    for (int step = 0; step < 3000; step++) {
        idm_manual_clock_skew(f.mc, 1, mono_step[step % 5]);
        fx_mint(&f);
        fx_mint(&f);
        if (step % 10 == 9) {
            bool alert = idm_clock_watch_sample(&w, &r);
            CHECK(!alert && !r.stepped && !r.drifting,
                  "watch alerted on a leap smear: step %lld ms, drift %lld ppm",
                  LL(r.step_ms), LL(r.drift_ppm));
            if (r.drift_ppm < min_ppm)
                min_ppm = r.drift_ppm;
            if (r.drift_ppm > max_ppm)
                max_ppm = r.drift_ppm;
        }
    }
    print_message("# smear measured at %lld..%lld ppm\n", LL(min_ppm), LL(max_ppm));
    /* The watch did measure the smear, and within the threshold. */
    CHECK(min_ppm >= -20 && min_ppm <= -5 && max_ppm <= 0,
          "smear measured as %lld..%lld ppm, expected about -11.6",
          LL(min_ppm), LL(max_ppm));
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(f.ids.n == 6000 && st.ahead_mints == 0 && st.refused_backwards == 0,
          "smear disturbed minting: %zu minted, %llu ahead",
          f.ids.n, ULL(st.ahead_mints));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

/* ---- C9: a frozen clock ---- */

static void c09_frozen_clock_exhausts(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, false, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    for (uint64_t i = 0; i < TW_SEQ; i++) {
        uint64_t id = fx_mint(&f);
        idm_decoded d = decode(f.layout, id);
        CHECK(d.unix_ms == T0 && d.seq == i,
              "id %llu of the frozen ms at %lld seq %llu",
              ULL(i), LL(d.unix_ms), ULL(d.seq));
    }
    int64_t s0 = slept(&f), n0 = idm_manual_clock_sleeps(f.mc);
    fx_refused(&f, IDM_EEXHAUSTED);
    int64_t waited = slept(&f) - s0;
    CHECK(idm_manual_clock_sleeps(f.mc) > n0 && waited > 0,
          "the wait policy gave up without waiting");
    CHECK(waited <= TW_WAIT_MS * MS,
          "waited %lld ns on a frozen clock, bound is %d ms", LL(waited),
          TW_WAIT_MS);
    fx_refused(&f, IDM_EEXHAUSTED);
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(st.refused_exhausted == 2,
          "stats: refused_exhausted %llu",
          ULL(st.refused_exhausted));
    /* The clock moves: the next tick starts at seq 0. */
    idm_manual_clock_advance(f.mc, 1);
    uint64_t id = fx_mint(&f);
    idm_decoded d = decode(f.layout, id);
    CHECK(d.unix_ms == T0 + 1 && d.seq == 0, "after thaw: %lld seq %llu",
          LL(d.unix_ms), ULL(d.seq));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void c09_frozen_clock_borrow_bounded(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, false, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_BORROW);
    int rc = 0;
    uint64_t id = SENTINEL;
    while (f.ids.n < 20 * TW_SEQ) {
        rc = idm_snowflake_next(f.g, &id);
        if (rc != 0)
            break;
        idm_test_idvec_push(&f.ids, id);
    }
    IDM_ASSERT_RC(rc, IDM_EEXHAUSTED);
    /* Borrowing stops at max_drift_ms ahead of the frozen clock. */
    CHECK(f.ids.n % TW_SEQ == 0 && f.ids.n >= TW_DRIFT_MS * TW_SEQ &&
              f.ids.n <= (TW_DRIFT_MS + 1) * TW_SEQ,
          "borrowed %zu ids on a frozen clock, expected %d or %d ticks' worth",
          f.ids.n, TW_DRIFT_MS, TW_DRIFT_MS + 1);
    idm_decoded d = decode(f.layout, f.ids.v[f.ids.n - 1]);
    CHECK(d.unix_ms - T0 <= TW_DRIFT_MS && d.seq == TW_SEQ - 1,
          "last borrowed id at +%lld ms seq %llu", LL(d.unix_ms - T0),
          ULL(d.seq));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

/* ---- C10: 5000 requests in one ms, time advances on sleep ---- */

static void burst_5000(idm_exhaust_policy ep)
{
    fx f;
    fx_open(&f, T0, true, IDM_BACKWARDS_LOGICAL, ep);
    size_t in_t = 0, in_t1 = 0;
    for (int i = 0; i < 5000; i++) {
        idm_decoded d = decode(f.layout, fx_mint(&f));
        if (d.unix_ms == T0)
            in_t++;
        else if (d.unix_ms == T0 + 1)
            in_t1++;
    }
    CHECK(in_t == 4096 && in_t1 == 904,
          "%zu ids in tick T and %zu in T+1, expected 4096 and 904", in_t,
          in_t1);
    idm_snowflake_stats st = fx_stats(&f);
    if (ep == IDM_EXHAUST_WAIT) {
        CHECK(slept(&f) > 0 && slept(&f) <= 1 * MS,
              "wait: slept %lld ns, expected about one tick", LL(slept(&f)));
    } else {
        CHECK(slept(&f) == 0 && idm_manual_clock_sleeps(f.mc) == 0,
              "borrow: slept %lld ns", LL(slept(&f)));
        CHECK(st.ahead_mints == 904, "borrow: stats.ahead_mints %llu != 904",
              ULL(st.ahead_mints));
    }
    CHECK(st.last_unix_ms == T0 + 1, "stats.last_unix_ms %lld", LL(st.last_unix_ms));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void c10_burst_waits(void **state)
{
    (void)state;
    burst_5000(IDM_EXHAUST_WAIT);
}

static void c10_burst_borrows(void **state)
{
    (void)state;
    burst_5000(IDM_EXHAUST_BORROW);
}

/* ---- C11: time before the epoch ---- */

#define Y1971 INT64_C(31536000000) /* 1971-01-01T00:00:00Z */

static void c11_dead_rtc_refused(void **state)
{
    (void)state;
    fx f;
    idm_snowflake_opts o;
    fx_init(&f, Y1971, true);
    twitter_opts(&o, f.layout, f.mc, 7);
    for (int p = 0; p < 3; p++) {
        idm_snowflake *g = NULL;
        o.backwards = all_backwards[p];
        IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EEPOCH);
        CHECK(g == NULL, "failed open handed out a generator");
    }
    /* Sanity: the same options open once the clock is right. */
    idm_manual_clock_set(f.mc, T0);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &o));
    fx_mint(&f);
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

/* error.h: IDM_EEPOCH is "clock is before the layout's epoch"; that is the
 * error for a clock read before the epoch, at open or later. */
static void c11_clock_falls_before_epoch(void **state)
{
    (void)state;
    for (int p = 0; p < 3; p++) {
        fx f;
        fx_open(&f, T0, true, all_backwards[p], IDM_EXHAUST_WAIT);
        uint64_t last = mint_prelude(&f);
        idm_manual_clock_set(f.mc, Y1971);
        int64_t s0 = slept(&f);
        fx_refused(&f, IDM_EEPOCH);
        fx_refused(&f, IDM_EEPOCH);
        CHECK(slept(&f) == s0, "%s: slept on a clock before the epoch",
              bp_name(all_backwards[p]));
        idm_manual_clock_set(f.mc, T0 + 2);
        uint64_t id = fx_mint(&f);
        CHECK(id > last, "id after recovery not above the last");
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

static void c11_epoch_in_future(void **state)
{
    (void)state;
    idm_manual_clock *mc;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, true));
    const idm_unix_ms epochs[2] = {T0 + 86400000, T0 + 1};
    for (int i = 0; i < 2; i++) {
        idm_layout *l;
        idm_snowflake_opts o;
        idm_snowflake *g = NULL;
        IDM_ASSERT_OK(idm_layout_parse(
            &l, "time:41@1ms,datacenter:5,worker:5,seq:12", epochs[i]));
        twitter_opts(&o, l, mc, 1);
        IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_EEPOCH);
        CHECK(g == NULL, "failed open handed out a generator");
        idm_layout_free(l);
    }
    /* The epoch itself is a valid time: tick 0. */
    idm_layout *l;
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    idm_test_idvec ids = {0};
    IDM_ASSERT_OK(idm_layout_parse(
        &l, "time:41@1ms,datacenter:5,worker:5,seq:12", T0));
    twitter_opts(&o, l, mc, 1);
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    for (int i = 0; i < 3; i++) {
        uint64_t id;
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        CHECK(decode(l, id).tick == 0, "id at the epoch not on tick 0");
        idm_test_idvec_push(&ids, id);
    }
    idm_test_check_ids(&ids);
    idm_test_idvec_free(&ids);
    IDM_ASSERT_OK(idm_snowflake_close(g));
    idm_layout_free(l);
    idm_manual_clock_free(mc);
}

/* ---- C12: the time field is exhausted ---- */

static void c12_time_field_exhausted(void **state)
{
    (void)state;
    const idm_exhaust_policy eps[2] = {IDM_EXHAUST_WAIT, IDM_EXHAUST_BORROW};
    const idm_unix_ms epoch = T0 - 1022;
    for (int p = 0; p < 2; p++) {
        fx f;
        idm_snowflake_opts o;
        memset(&f, 0, sizeof f);
        IDM_ASSERT_OK(idm_layout_parse(&f.layout, "time:10@1ms,seq:12", epoch));
        CHECK(idm_layout_time_end(f.layout) == epoch + 1024,
              "time_end %lld", LL(idm_layout_time_end(f.layout)));
        IDM_ASSERT_OK(idm_manual_clock_new(&f.mc, epoch + 1024, true));
        idm_snowflake_opts_init(&o);
        o.layout = f.layout;
        o.clock = idm_manual_clock_clock(f.mc);
        o.exhaust = eps[p];

        /* Already past the end: refuse to start. */
        IDM_ASSERT_RC(idm_snowflake_open(&f.g, &o), IDM_ETIMEOVER);
        CHECK(f.g == NULL, "failed open handed out a generator");
        idm_manual_clock_set(f.mc, epoch + 5000);
        IDM_ASSERT_RC(idm_snowflake_open(&f.g, &o), IDM_ETIMEOVER);
        CHECK(f.g == NULL, "failed open handed out a generator");

        /* Just below the end: mint until the last tick fills. */
        idm_manual_clock_set(f.mc, epoch + 1022);
        IDM_ASSERT_OK(idm_snowflake_open(&f.g, &o));
        for (int i = 0; i < 10; i++)
            fx_mint(&f);
        idm_manual_clock_advance(f.mc, 1);
        for (uint64_t i = 0; i < TW_SEQ; i++) {
            idm_decoded d = decode(f.layout, fx_mint(&f));
            CHECK(d.tick == 1023 && d.seq == i, "last tick id %llu: tick %llu seq %llu",
                  ULL(i), ULL(d.tick), ULL(d.seq));
        }
        fx_refused(&f, IDM_ETIMEOVER);
        idm_manual_clock_set(f.mc, epoch + 1024);
        fx_refused(&f, IDM_ETIMEOVER);
        idm_manual_clock_advance(f.mc, 1000);
        fx_refused(&f, IDM_ETIMEOVER);
        CHECK(f.ids.n == 10 + TW_SEQ, "minted %zu", f.ids.n);
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

/* ---- H5: two generators on one state file ---- */

static void h05_state_file_locked(void **state)
{
    (void)state;
    char *dir = idm_test_tmpdir();
    char *path = idm_test_path(dir, "gen.state");
    fx f;
    idm_snowflake_opts o;
    fx_init(&f, T0, true);
    twitter_opts(&o, f.layout, f.mc, 7);
    o.state_path = path;
    o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &o));
    fx_mint(&f);

    idm_snowflake *g2 = NULL;
    IDM_ASSERT_RC(idm_snowflake_open(&g2, &o), IDM_EBUSY);
    CHECK(g2 == NULL, "a refused open handed out a generator");
    o.state_fresh = false;
    IDM_ASSERT_RC(idm_snowflake_open(&g2, &o), IDM_EBUSY);
    CHECK(g2 == NULL, "a refused open handed out a generator");

    /* The first still works; once it closes the file is free. */
    idm_manual_clock_advance(f.mc, 1);
    fx_mint(&f);
    IDM_ASSERT_OK(idm_snowflake_close(f.g));
    idm_manual_clock_advance(f.mc, 1);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &o));
    fx_mint(&f);
    idm_test_check_ids(&f.ids);
    fx_done(&f);
    idm_test_rmtree(dir);
    free(path);
    free(dir);
}

/* ---- H6: threads racing on one generator ---- */

#define H6_THREADS 4
#define H6_PER 250000

typedef struct h6_arg {
    idm_snowflake *g;
    uint64_t *ids;
    size_t got;
    size_t exhausted;
    int bad_rc;
} h6_arg;

static void *h6_worker(void *p)
{
    h6_arg *a = p;
    while (a->got < H6_PER) {
        uint64_t id;
        int rc = idm_snowflake_next(a->g, &id);
        if (rc == 0) {
            a->ids[a->got++] = id;
        } else if (rc == IDM_EEXHAUSTED && a->exhausted < 100000) {
            a->exhausted++; /* lost the race for ticks; a caller retries */
        } else {
            a->bad_rc = rc;
            break;
        }
    }
    return NULL;
}

static void h06_thread_race(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, true, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    uint64_t *all = malloc((size_t)H6_THREADS * H6_PER * sizeof *all);
    assert_non_null(all);
    h6_arg args[H6_THREADS];
    pthread_t th[H6_THREADS];
    for (int t = 0; t < H6_THREADS; t++) {
        args[t] = (h6_arg){.g = f.g, .ids = all + (size_t)t * H6_PER};
        assert_int_equal(pthread_create(&th[t], NULL, h6_worker, &args[t]), 0);
    }
    size_t exhausted = 0;
    for (int t = 0; t < H6_THREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    for (int t = 0; t < H6_THREADS; t++) {
        CHECK(args[t].bad_rc == 0, "thread %d failed with %s", t,
              idm_err_name(args[t].bad_rc));
        CHECK(args[t].got == H6_PER, "thread %d minted %zu", t, args[t].got);
        CHECK(idm_test_strictly_increasing(args[t].ids, H6_PER),
              "thread %d's ids do not strictly increase", t);
        exhausted += args[t].exhausted;
    }
    print_message("# h6: %zu exhausted retries, clock moved %lld ms\n",
                  exhausted, LL(idm_manual_clock_now_ms(f.mc) - T0));
    size_t n = (size_t)H6_THREADS * H6_PER;
    size_t dups = idm_test_count_duplicates(all, n);
    CHECK(dups == 0, "%zu duplicates among %zu ids from %d threads", dups, n,
          H6_THREADS);
    free(all);
    fx_done(&f);
}

/* ---- the hazard worker leases exist to prevent ---- */

static void two_generators(uint64_t w1, uint64_t w2, size_t *dups_out)
{
    idm_manual_clock *mc;
    idm_layout *l;
    idm_snowflake_opts o1, o2;
    idm_snowflake *g1 = NULL, *g2 = NULL;
    idm_test_idvec a = {0}, b = {0}, all = {0};
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    twitter_opts(&o1, l, mc, w1);
    twitter_opts(&o2, l, mc, w2);
    IDM_ASSERT_OK(idm_snowflake_open(&g1, &o1));
    IDM_ASSERT_OK(idm_snowflake_open(&g2, &o2));
    for (int i = 0; i < 100; i++) {
        uint64_t x, y;
        IDM_ASSERT_OK(idm_snowflake_next(g1, &x));
        IDM_ASSERT_OK(idm_snowflake_next(g2, &y));
        idm_test_idvec_push(&a, x);
        idm_test_idvec_push(&b, y);
        idm_test_idvec_push(&all, x);
        idm_test_idvec_push(&all, y);
    }
    idm_test_check_ids(&a);
    idm_test_check_ids(&b);
    *dups_out = idm_test_count_duplicates(all.v, all.n);
    idm_test_idvec_free(&a);
    idm_test_idvec_free(&b);
    idm_test_idvec_free(&all);
    IDM_ASSERT_OK(idm_snowflake_close(g1));
    IDM_ASSERT_OK(idm_snowflake_close(g2));
    idm_layout_free(l);
    idm_manual_clock_free(mc);
}

static void hazard_same_worker_duplicates(void **state)
{
    (void)state;
    size_t dups;
    two_generators(7, 7, &dups);
    CHECK(dups == 100, "two generators with one worker id on a frozen clock "
          "gave %zu duplicates among 200, expected 100", dups);
}

static void hazard_distinct_workers_unique(void **state)
{
    (void)state;
    size_t dups;
    two_generators(7, 8, &dups);
    CHECK(dups == 0, "distinct worker ids gave %zu duplicates", dups);
}

/* ---- next_batch ---- */

static void batch_consecutive(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, false, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    for (int i = 0; i < 5; i++)
        fx_mint(&f);
    uint64_t prev = f.ids.v[f.ids.n - 1];
    uint64_t batch[100];
    IDM_ASSERT_OK(idm_snowflake_next_batch(f.g, batch, 100));
    for (int i = 0; i < 100; i++) {
        CHECK(state_of(f.layout, batch[i]) == state_of(f.layout, prev) + 1,
              "batch id %d is not the direct successor of the one before", i);
        prev = batch[i];
        idm_test_idvec_push(&f.ids, batch[i]);
    }
    uint64_t id = fx_mint(&f);
    CHECK(state_of(f.layout, id) == state_of(f.layout, prev) + 1,
          "the id after a batch is not the successor of its last");
    CHECK(f.ids.n == 106, "minted %zu != 106", f.ids.n);
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void batch_zero_einval(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, false, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    uint64_t last = fx_mint(&f);
    uint64_t batch[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    IDM_ASSERT_RC(idm_snowflake_next_batch(f.g, batch, 0), IDM_EINVAL);
    CHECK(batch[0] == SENTINEL, "n == 0 wrote an id");
    CHECK(fx_stats(&f).last_unix_ms == T0, "n == 0 moved the last tick");
    uint64_t id = fx_mint(&f);
    CHECK(state_of(f.layout, id) == state_of(f.layout, last) + 1,
          "n == 0 consumed a state");
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void batch_too_large_exhausted(void **state)
{
    (void)state;
    for (int aos = 0; aos < 2; aos++) {
        fx f;
        fx_open(&f, T0, aos != 0, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
        for (int i = 0; i < 5; i++)
            fx_mint(&f);
        uint64_t last = f.ids.v[f.ids.n - 1];
        idm_decoded dl = decode(f.layout, last);
        size_t n = (size_t)(TW_WAIT_MS + 3) * TW_SEQ;
        uint64_t *batch = malloc(n * sizeof *batch);
        assert_non_null(batch);
        idm_snowflake_stats st0 = fx_stats(&f);
        IDM_ASSERT_RC(idm_snowflake_next_batch(f.g, batch, n), IDM_EEXHAUSTED);
        free(batch);
        idm_snowflake_stats st = fx_stats(&f);
        CHECK(st.last_unix_ms == st0.last_unix_ms,
              "a failed batch moved the last tick to %lld",
              LL(st.last_unix_ms));
        CHECK(st.refused_exhausted == st0.refused_exhausted + 1,
              "stats.refused_exhausted did not count the batch");
        uint64_t id = fx_mint(&f);
        idm_decoded d = decode(f.layout, id);
        if (aos == 0) {
            /* Frozen clock: exactly the successor. */
            CHECK(state_of(f.layout, id) == state_of(f.layout, last) + 1,
                  "after a failed batch: %lld seq %llu, expected %lld seq %llu",
                  LL(d.unix_ms), ULL(d.seq), LL(dl.unix_ms), ULL(dl.seq + 1));
        } else {
            /* The clock may have moved while the call waited: the successor,
             * or seq 0 of a later tick the clock has reached. */
            bool succ = state_of(f.layout, id) == state_of(f.layout, last) + 1;
            bool later = d.tick > dl.tick && d.seq == 0 &&
                         d.unix_ms <= idm_manual_clock_now_ms(f.mc);
            CHECK(succ || later,
                  "after a failed batch: %lld seq %llu (last %lld seq %llu, clock %lld)",
                  LL(d.unix_ms), ULL(d.seq), LL(dl.unix_ms), ULL(dl.seq),
                  LL(idm_manual_clock_now_ms(f.mc)));
        }
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

/* A batch the frozen clock cannot reach within max_wait_ms fails after
 * waiting, and moves nothing: the next id is the direct successor. */
static void batch_frozen_clock_nothing_moves(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, false, IDM_BACKWARDS_LOGICAL, IDM_EXHAUST_WAIT);
    for (int i = 0; i < 5; i++)
        fx_mint(&f);
    uint64_t last = f.ids.v[f.ids.n - 1];
    size_t n = 2 * TW_SEQ; /* reaches tick T+1: 1 ms, within the bound */
    uint64_t *batch = malloc(n * sizeof *batch);
    assert_non_null(batch);
    idm_snowflake_stats st0 = fx_stats(&f);
    IDM_ASSERT_RC(idm_snowflake_next_batch(f.g, batch, n), IDM_EEXHAUSTED);
    free(batch);
    CHECK(slept(&f) <= TW_WAIT_MS * MS, "waited %lld ns", LL(slept(&f)));
    idm_snowflake_stats st = fx_stats(&f);
    CHECK(st.last_unix_ms == st0.last_unix_ms,
          "a failed batch moved the last tick to %lld", LL(st.last_unix_ms));
    uint64_t id = fx_mint(&f);
    CHECK(state_of(f.layout, id) == state_of(f.layout, last) + 1,
          "after a failed batch the next id skips %llu states",
          ULL(state_of(f.layout, id) - state_of(f.layout, last) - 1));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

/* C1 with WAIT on a clock that does not advance while the caller sleeps:
 * the regression cannot be waited out, so the call fails as a regression
 * (IDM_ECLOCKBACK) after a bounded wait, and moves nothing. */
static void c01_small_step_back_wait_frozen(void **state)
{
    (void)state;
    fx f;
    fx_open(&f, T0, false, IDM_BACKWARDS_WAIT, IDM_EXHAUST_WAIT);
    uint64_t last = mint_prelude(&f);
    idm_manual_clock_advance(f.mc, -3);
    fx_refused(&f, IDM_ECLOCKBACK);
    CHECK(slept(&f) <= TW_WAIT_MS * MS, "waited %lld ns, bound is %d ms",
          LL(slept(&f)), TW_WAIT_MS);
    idm_manual_clock_advance(f.mc, 3);
    uint64_t id = fx_mint(&f);
    CHECK(state_of(f.layout, id) == state_of(f.layout, last) + 1,
          "after the failed wait the next id skips %llu states",
          ULL(state_of(f.layout, id) - state_of(f.layout, last) - 1));
    idm_test_check_ids(&f.ids);
    fx_done(&f);
}

static void batch_spanning_ticks(void **state)
{
    (void)state;
    const idm_exhaust_policy eps[2] = {IDM_EXHAUST_WAIT, IDM_EXHAUST_BORROW};
    for (int p = 0; p < 2; p++) {
        fx f;
        fx_open(&f, T0, true, IDM_BACKWARDS_LOGICAL, eps[p]);
        size_t n = 3 * TW_SEQ;
        uint64_t *batch = malloc(n * sizeof *batch);
        assert_non_null(batch);
        IDM_ASSERT_OK(idm_snowflake_next_batch(f.g, batch, n));
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                CHECK(state_of(f.layout, batch[i]) ==
                          state_of(f.layout, batch[i - 1]) + 1,
                      "batch id %zu is not the successor of the one before", i);
            idm_test_idvec_push(&f.ids, batch[i]);
        }
        idm_decoded d0 = decode(f.layout, batch[0]);
        idm_decoded dn = decode(f.layout, batch[n - 1]);
        free(batch);
        CHECK(d0.unix_ms == T0 && d0.seq == 0 && dn.unix_ms == T0 + 2 &&
                  dn.seq == TW_SEQ - 1,
              "batch spans %lld..%lld", LL(d0.unix_ms), LL(dn.unix_ms));
        idm_snowflake_stats st = fx_stats(&f);
        CHECK(st.last_unix_ms == T0 + 2, "stats.last_unix_ms %lld",
              LL(st.last_unix_ms));
        if (eps[p] == IDM_EXHAUST_WAIT) {
            CHECK(slept(&f) > 0 && slept(&f) <= TW_WAIT_MS * MS,
                  "wait: slept %lld ns for a 3-tick batch", LL(slept(&f)));
        } else {
            CHECK(slept(&f) == 0, "borrow: slept %lld ns", LL(slept(&f)));
            CHECK(st.ahead_mints > 0, "borrow: stats.ahead_mints is 0");
        }
        fx_mint(&f);
        idm_test_check_ids(&f.ids);
        fx_done(&f);
    }
}

/* ---- bad input changes nothing ---- */

static void bad_input_missing_node(void **state)
{
    (void)state;
    idm_manual_clock *mc;
    idm_layout *l;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, true));
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    const char *given[3] = {NULL, "worker", "datacenter"};
    for (int i = 0; i < 3; i++) {
        idm_snowflake_opts o;
        idm_snowflake *g = NULL;
        idm_snowflake_opts_init(&o);
        o.layout = l;
        o.clock = idm_manual_clock_clock(mc);
        if (given[i] != NULL)
            IDM_ASSERT_OK(idm_snowflake_opts_node(&o, given[i], 1));
        IDM_ASSERT_RC(idm_snowflake_open(&g, &o), IDM_ENODE);
        CHECK(g == NULL, "failed open handed out a generator");
    }
    idm_layout_free(l);
    idm_manual_clock_free(mc);
}

static void bad_input_opts_node(void **state)
{
    (void)state;
    idm_layout *l;
    idm_snowflake_opts o, before;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 31));
    int wi = idm_layout_field_index(l, "worker");
    CHECK(wi >= 0 && o.node[wi] == 31 && (o.node_set & (1u << wi)) != 0,
          "worker=31 not recorded");

    static const struct {
        const char *name;
        uint64_t value;
    } bad[] = {
        {"shard", 1},       {"Worker", 1}, {"", 1},
        {"time", 1},        {"seq", 1},    {"worker", 32},
        {"datacenter", 32}, {"datacenter", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(&before, &o, sizeof o);
        int rc = idm_snowflake_opts_node(&o, bad[i].name, bad[i].value);
        CHECK(rc < 0, "opts_node(\"%s\", %llu) succeeded", bad[i].name,
              ULL(bad[i].value));
        CHECK(memcmp(&before, &o, sizeof o) == 0,
              "opts_node(\"%s\", %llu) changed the options", bad[i].name,
              ULL(bad[i].value));
    }
    CHECK(o.node[wi] == 31, "worker changed");

    /* Without a layout there is nothing to check a name against. */
    idm_snowflake_opts_init(&o);
    memcpy(&before, &o, sizeof o);
    CHECK(idm_snowflake_opts_node(&o, "worker", 1) < 0,
          "opts_node without a layout succeeded");
    CHECK(memcmp(&before, &o, sizeof o) == 0, "options changed");
    idm_layout_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(c01_small_step_back_waits),
        cmocka_unit_test(c01_small_step_back_logical),
        cmocka_unit_test(c01_small_step_back_refuses),
        cmocka_unit_test(c01_small_step_back_wait_frozen),
        cmocka_unit_test(c02_big_step_back_refuses),
        cmocka_unit_test(c03_restart_clock_set_back),
        cmocka_unit_test(c04_jump_ahead_then_back),
        cmocka_unit_test(c05_fast_clock),
        cmocka_unit_test(c05_slow_clock),
        cmocka_unit_test(c06_strobe),
        cmocka_unit_test(c07_leap_second_repeat),
        cmocka_unit_test(c08_leap_smear),
        cmocka_unit_test(c09_frozen_clock_exhausts),
        cmocka_unit_test(c09_frozen_clock_borrow_bounded),
        cmocka_unit_test(c10_burst_waits),
        cmocka_unit_test(c10_burst_borrows),
        cmocka_unit_test(c11_dead_rtc_refused),
        cmocka_unit_test(c11_clock_falls_before_epoch),
        cmocka_unit_test(c11_epoch_in_future),
        cmocka_unit_test(c12_time_field_exhausted),
        cmocka_unit_test(h05_state_file_locked),
        cmocka_unit_test(h06_thread_race),
        cmocka_unit_test(hazard_same_worker_duplicates),
        cmocka_unit_test(hazard_distinct_workers_unique),
        cmocka_unit_test(batch_consecutive),
        cmocka_unit_test(batch_zero_einval),
        cmocka_unit_test(batch_too_large_exhausted),
        cmocka_unit_test(batch_frozen_clock_nothing_moves),
        cmocka_unit_test(batch_spanning_ticks),
        cmocka_unit_test(bad_input_missing_node),
        cmocka_unit_test(bad_input_opts_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
