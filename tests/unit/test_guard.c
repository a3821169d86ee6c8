/* SPDX-License-Identifier: MIT */
/*
 * The generator's lease guard and the previous holder's mark: a guarded
 * generator mints nothing before its first guard, stops at either deadline
 * (monotonic, then wall clock: a suspended machine's monotonic clock stands
 * still while its wall clock moves on), each on its own with the other
 * clock well inside its deadline, and at the recorded mark, resumes on
 * the next guard, stops at once on a drop; a new holder never mints at or
 * below the previous holder's mark, even with its clock 5 s behind
 * (refused, or after waiting, per policy). Fault rows H1, H2 and C13 of
 * the catalogue, modelled with the manual clock.
 */
#include <string.h>

#include "testutil.h"

#define T0 INT64_C(1767225600000) /* 2026-01-01T00:00:00Z */
#define MS INT64_C(1000000)

typedef struct gfx {
    idm_manual_clock *mc;
    const idm_clock *clock;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec ids;
} gfx;

static void gfx_open(gfx *f, idm_unix_ms start, idm_unix_ms after_ms, idm_backwards_policy pol,
                     int expect_rc)
{
    idm_snowflake_opts o;
    memset(f, 0, sizeof *f);
    IDM_ASSERT_OK(idm_manual_clock_new(&f->mc, start, true));
    f->clock = idm_manual_clock_clock(f->mc);
    IDM_ASSERT_OK(idm_layout_preset(&f->layout, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = f->layout;
    o.clock = f->clock;
    o.guarded = true;
    o.after_ms = after_ms;
    o.backwards = pol;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 1));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 9));
    IDM_ASSERT_RC(idm_snowflake_open(&f->g, &o), expect_rc);
}

static void gfx_close(gfx *f)
{
    idm_snowflake_close(f->g);
    idm_layout_free(f->layout);
    idm_manual_clock_free(f->mc);
    idm_test_idvec_free(&f->ids);
}

/* A guard as a keeper would give it after a renewal sent now: deadlines
 * ttl - margin ahead on both clocks, the mark at the wall deadline. */
static void renew(gfx *f, int64_t ttl_ms, int64_t margin_ms)
{
    idm_mono_ns mono = f->clock->mono_ns(f->clock->ctx);
    idm_wall_ns wall = f->clock->wall_ns(f->clock->ctx);
    int64_t d = (ttl_ms - margin_ms) * MS;
    IDM_ASSERT_OK(idm_snowflake_guard(f->g, mono + d, wall + d, (wall + d) / MS));
}

static int mint(gfx *f)
{
    uint64_t id;
    int rc = idm_snowflake_next(f->g, &id);
    if (rc == 0)
        idm_test_idvec_push(&f->ids, id);
    return rc;
}

static idm_unix_ms time_of(gfx *f, uint64_t id)
{
    idm_decoded d;
    IDM_ASSERT_OK(idm_layout_decode(f->layout, id, &d));
    return d.unix_ms;
}

static void refuses_before_first_guard(void **unused)
{
    gfx f;
    idm_snowflake_stats st;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE);
    CHECK(idm_error_detail()[0] != '\0', "no detail");
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(mint(&f));
    idm_snowflake_stats_get(f.g, &st);
    assert_int_equal(st.refused_lease, 1);
    assert_int_equal(st.lease_limit_ms, T0 + 8000);
    gfx_close(&f);
}

/* Minting stops at the monotonic deadline and resumes on renewal. */
static void monotonic_deadline(void **unused)
{
    gfx f;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    renew(&f, 10000, 2000); /* deadline: 8 s from now */
    for (int s = 0; s < 8; s++) {
        IDM_ASSERT_OK(mint(&f));
        idm_manual_clock_advance(f.mc, 999);
    }
    idm_manual_clock_advance(f.mc, 8); /* 8 s + 0 ms: at the deadline */
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE);
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(mint(&f));
    idm_test_check_ids(&f.ids);
    gfx_close(&f);
}

/* A machine suspended past its lease: monotonic time stood still, wall
 * time moved on (C13, H1). The wall deadline stops it. */
static void suspend_wall_deadline(void **unused)
{
    gfx f;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(mint(&f));
    idm_manual_clock_skew(f.mc, 60000, 0); /* 60 s of wall time, no monotonic */
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "wall") != NULL, "detail: %s", idm_error_detail());
    gfx_close(&f);
}

/*
 * Each deadline alone stops minting. The tests above move the two clocks
 * together (or only the wall clock far past), so a generator that ignored
 * one of the deadlines could still pass them; these move one clock to its
 * deadline and leave the other well inside its own, with
 * idm_manual_clock_skew (which moves each clock by its own amount). The
 * header promises: minting is allowed while each clock is before its
 * deadline, and past either it fails with IDM_ELEASE, for single mints and
 * batches alike, and idm_snowflake_check says so too. A refused call hands
 * nothing out and moves nothing.
 *
 * The mark is put a day past the deadlines here (renew() puts it at the
 * wall deadline, where it would stop a generator that ignored the wall
 * deadline with the same IDM_ELEASE): only the deadline under test can
 * stop these mints.
 */
static void guard_far_mark(gfx *f, int64_t deadline_ms)
{
    idm_mono_ns mono = f->clock->mono_ns(f->clock->ctx);
    idm_wall_ns wall = f->clock->wall_ns(f->clock->ctx);
    int64_t d = deadline_ms * MS;
    IDM_ASSERT_OK(idm_snowflake_guard(f->g, mono + d, wall + d, (wall + d) / MS + 86400000));
}

static void expect_refused_alone(gfx *f, const char *which, idm_unix_ms last_ms,
                                 uint64_t refused_before)
{
    uint64_t ids[4] = {0, 0, 0, 0};
    idm_snowflake_stats st;
    size_t n = f->ids.n;

    IDM_ASSERT_RC(mint(f), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), which) != NULL, "detail: %s", idm_error_detail());
    IDM_ASSERT_RC(idm_snowflake_next_batch(f->g, ids, 4), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), which) != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(ids[0], 0); /* nothing written out */
    IDM_ASSERT_RC(idm_snowflake_check(f->g), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), which) != NULL, "detail: %s", idm_error_detail());
    assert_int_equal(f->ids.n, n);
    idm_snowflake_stats_get(f->g, &st);
    assert_int_equal(st.last_unix_ms, last_ms);         /* the state did not move */
    assert_int_equal(st.refused_lease, refused_before + 2); /* the check counts none */
}

/* Monotonic time reaches its deadline while wall time stands still, 8 s
 * short of the wall deadline (a wall clock stepped back, or one that runs
 * slow against the monotonic clock): refused on the monotonic deadline. */
static void monotonic_deadline_alone(void **unused)
{
    gfx f;
    idm_mono_ns mono0;
    idm_wall_ns wall0;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    mono0 = f.clock->mono_ns(f.clock->ctx);
    wall0 = f.clock->wall_ns(f.clock->ctx);
    guard_far_mark(&f, 8000); /* both deadlines 8 s from now */
    IDM_ASSERT_OK(mint(&f));
    /* One nanosecond before the monotonic deadline: still allowed. */
    idm_manual_clock_skew(f.mc, 0, 8000 * MS - 1);
    IDM_ASSERT_OK(mint(&f));
    IDM_ASSERT_OK(idm_snowflake_check(f.g));
    /* At the deadline ("before" it no longer holds); wall time has not
     * moved at all. */
    idm_manual_clock_skew(f.mc, 0, 1);
    assert_int_equal(f.clock->mono_ns(f.clock->ctx), mono0 + 8000 * MS);
    assert_int_equal(f.clock->wall_ns(f.clock->ctx), wall0);
    expect_refused_alone(&f, "monotonic", T0, 0);
    /* Far past it, still with the wall clock where it was. */
    idm_manual_clock_skew(f.mc, 0, 3600 * 1000 * MS);
    expect_refused_alone(&f, "monotonic", T0, 2);
    /* The next renewal lets it mint again. */
    guard_far_mark(&f, 8000);
    IDM_ASSERT_OK(mint(&f));
    idm_test_check_ids(&f.ids);
    gfx_close(&f);
}

/* Wall time reaches its deadline while monotonic time stands still, 8 s
 * short of the monotonic deadline (a resumed suspend, a wall clock stepped
 * forward): refused on the wall deadline. */
static void wall_deadline_alone(void **unused)
{
    gfx f;
    idm_mono_ns mono0;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    mono0 = f.clock->mono_ns(f.clock->ctx);
    guard_far_mark(&f, 8000); /* both deadlines 8 s from now */
    IDM_ASSERT_OK(mint(&f));
    /* One millisecond before the wall deadline: still allowed. */
    idm_manual_clock_skew(f.mc, 7999, 0);
    IDM_ASSERT_OK(mint(&f));
    IDM_ASSERT_OK(idm_snowflake_check(f.g));
    /* At the deadline; monotonic time has not moved at all. */
    idm_manual_clock_skew(f.mc, 1, 0);
    assert_int_equal(f.clock->mono_ns(f.clock->ctx), mono0);
    assert_int_equal(idm_manual_clock_now_ms(f.mc), T0 + 8000);
    expect_refused_alone(&f, "wall", T0 + 7999, 0);
    /* Far past it, still with the monotonic clock where it was. */
    idm_manual_clock_skew(f.mc, 3600 * 1000, 0);
    expect_refused_alone(&f, "wall", T0 + 7999, 2);
    guard_far_mark(&f, 8000);
    IDM_ASSERT_OK(mint(&f));
    idm_test_check_ids(&f.ids);
    gfx_close(&f);
}

/* Ids never pass the recorded mark, even inside the deadlines (a clock
 * running fast in wall time only), and never wrap around it. */
static void recorded_mark_limits(void **unused)
{
    gfx f;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    /* Deadlines far ahead, mark only 5 ms ahead. */
    IDM_ASSERT_OK(idm_snowflake_guard(f.g, INT64_MAX, INT64_MAX, T0 + 5));
    for (int i = 0; i <= 5; i++) {
        IDM_ASSERT_OK(mint(&f));
        assert_true(time_of(&f, f.ids.v[f.ids.n - 1]) <= T0 + 5);
        idm_manual_clock_advance(f.mc, 1);
    }
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE); /* T0 + 6 is past the mark */
    /* A lower mark later is ignored: what was recorded stays recorded. */
    IDM_ASSERT_OK(idm_snowflake_guard(f.g, INT64_MAX, INT64_MAX, T0 + 2));
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE);
    IDM_ASSERT_OK(idm_snowflake_guard(f.g, INT64_MAX, INT64_MAX, T0 + 100));
    IDM_ASSERT_OK(mint(&f));
    idm_test_check_ids(&f.ids);
    gfx_close(&f);
}

/* A batch that would cross the mark is refused whole. */
static void batch_not_across_mark(void **unused)
{
    gfx f;
    uint64_t ids[8192];
    idm_snowflake_stats st;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    IDM_ASSERT_OK(idm_snowflake_guard(f.g, INT64_MAX, INT64_MAX, T0));
    IDM_ASSERT_RC(idm_snowflake_next_batch(f.g, ids, 8192), IDM_ELEASE);
    idm_snowflake_stats_get(f.g, &st);
    assert_int_equal(st.last_unix_ms, INT64_C(1288834974657)); /* nothing moved */
    IDM_ASSERT_OK(idm_snowflake_next_batch(f.g, ids, 4096));
    gfx_close(&f);
}

static void drop_stops_at_once(void **unused)
{
    gfx f;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_LOGICAL, 0);
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(mint(&f));
    idm_snowflake_guard_drop(f.g);
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE);
    gfx_close(&f);
}

/* A new holder whose clock is 5 s behind the previous holder's mark: with
 * the default policy it refuses to start; under wait with a bound that
 * covers the gap it waits, and its first id is above the mark. */
static void skewed_handoff(void **unused)
{
    gfx f;
    idm_mono_ns mono;
    (void)unused;
    gfx_open(&f, T0, T0 + 5000, IDM_BACKWARDS_LOGICAL, IDM_ECLOCKBACK);
    idm_layout_free(f.layout);
    idm_manual_clock_free(f.mc);

    /* Clock 5 ms behind: within logical drift, starts above the mark. */
    gfx_open(&f, T0, T0 + 5, IDM_BACKWARDS_LOGICAL, 0);
    mono = f.clock->mono_ns(f.clock->ctx);
    IDM_ASSERT_OK(idm_snowflake_guard(f.g, mono + 8000 * MS, INT64_MAX, T0 + 8000));
    IDM_ASSERT_OK(mint(&f));
    CHECK(time_of(&f, f.ids.v[0]) > T0 + 5, "first id %lld not above the mark",
          LL(time_of(&f, f.ids.v[0])));
    gfx_close(&f);

    /* The clock catches up past the mark: the later open works at once. */
    gfx_open(&f, T0 + 5001, T0 + 5000, IDM_BACKWARDS_REFUSE, 0);
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(mint(&f));
    CHECK(time_of(&f, f.ids.v[0]) > T0 + 5000, "first id not above the mark");
    gfx_close(&f);
}

/* H2: the process pauses exactly between the monotonic deadline check and
 * the timestamp read (modelled by a clock whose next wall read first moves
 * both clocks 30 s on, past the lease). The timestamp, read after the
 * pause, is past the wall deadline: refused, and nothing moves. */
typedef struct pausing_clock {
    idm_clock iface;
    idm_manual_clock *mc;
    int pause_next_wall_read;
} pausing_clock;

static idm_wall_ns pausing_wall(void *ctx)
{
    pausing_clock *pc = ctx;
    const idm_clock *base = idm_manual_clock_clock(pc->mc);
    if (pc->pause_next_wall_read) {
        pc->pause_next_wall_read = 0;
        idm_manual_clock_advance(pc->mc, 30000);
    }
    return base->wall_ns(base->ctx);
}

static idm_mono_ns pausing_mono(void *ctx)
{
    pausing_clock *pc = ctx;
    const idm_clock *base = idm_manual_clock_clock(pc->mc);
    return base->mono_ns(base->ctx);
}

static void pausing_sleep(void *ctx, int64_t ns)
{
    pausing_clock *pc = ctx;
    const idm_clock *base = idm_manual_clock_clock(pc->mc);
    base->sleep_ns(base->ctx, ns);
}

static void pause_between_check_and_timestamp(void **unused)
{
    pausing_clock pc;
    idm_layout *l;
    idm_snowflake_opts o;
    idm_snowflake *g;
    idm_snowflake_stats st;
    uint64_t id = 0, before;
    (void)unused;
    IDM_ASSERT_OK(idm_manual_clock_new(&pc.mc, T0, true));
    pc.iface.ctx = &pc;
    pc.iface.wall_ns = pausing_wall;
    pc.iface.mono_ns = pausing_mono;
    pc.iface.sleep_ns = pausing_sleep;
    pc.pause_next_wall_read = 0;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = &pc.iface;
    o.guarded = true;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", 1));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", 2));
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    {
        idm_mono_ns mono = pausing_mono(&pc);
        idm_wall_ns wall = pausing_wall(&pc);
        int64_t d = 8000 * MS; /* TTL 10 s, margin 2 s */
        IDM_ASSERT_OK(idm_snowflake_guard(g, mono + d, wall + d, (wall + d) / MS));
    }
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    before = id;
    pc.pause_next_wall_read = 1;
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    assert_int_equal(id, before);
    CHECK(strstr(idm_error_detail(), "wall") != NULL, "detail: %s", idm_error_detail());
    idm_snowflake_stats_get(g, &st);
    assert_int_equal(st.last_unix_ms, T0); /* nothing moved */
    assert_int_equal(st.refused_lease, 1);
    idm_snowflake_close(g);
    idm_layout_free(l);
    idm_manual_clock_free(pc.mc);
}

static void guard_needs_guarded(void **unused)
{
    idm_layout *l;
    idm_snowflake_opts o;
    idm_snowflake *g;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    idm_snowflake_opts_node(&o, "datacenter", 1);
    idm_snowflake_opts_node(&o, "worker", 1);
    IDM_ASSERT_OK(idm_snowflake_open(&g, &o));
    IDM_ASSERT_RC(idm_snowflake_guard(g, 0, 0, 0), IDM_EINVAL);
    idm_snowflake_close(g);
    idm_layout_free(l);
}

/* idm_snowflake_check (for /healthz) says what a mint would say, for each
 * reason, and moves nothing: no state, no refusal counted. */
static void check_says_what_a_mint_would(void **unused)
{
    gfx f;
    idm_snowflake_stats before, after;
    (void)unused;
    gfx_open(&f, T0, -1, IDM_BACKWARDS_REFUSE, 0);
    IDM_ASSERT_RC(idm_snowflake_check(f.g), IDM_ELEASE); /* no guard yet */
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(idm_snowflake_check(f.g));
    IDM_ASSERT_OK(mint(&f));
    idm_snowflake_stats_get(f.g, &before);
    /* The wall clock steps forward past the wall deadline (8 s): monotonic
     * time is within its deadline, minting fails, and so does the check. */
    idm_manual_clock_skew(f.mc, 9000, 0);
    IDM_ASSERT_RC(idm_snowflake_check(f.g), IDM_ELEASE);
    CHECK(strstr(idm_error_detail(), "wall") != NULL, "detail: %s", idm_error_detail());
    IDM_ASSERT_RC(mint(&f), IDM_ELEASE);
    idm_manual_clock_skew(f.mc, -9000, 0);
    IDM_ASSERT_OK(idm_snowflake_check(f.g));
    /* The clock steps back under the refuse policy. */
    idm_manual_clock_advance(f.mc, -5);
    IDM_ASSERT_RC(idm_snowflake_check(f.g), IDM_ECLOCKBACK);
    IDM_ASSERT_RC(mint(&f), IDM_ECLOCKBACK);
    idm_manual_clock_advance(f.mc, 6);
    IDM_ASSERT_OK(idm_snowflake_check(f.g));
    /* Past the monotonic deadline. */
    idm_manual_clock_advance(f.mc, 8000);
    IDM_ASSERT_RC(idm_snowflake_check(f.g), IDM_ELEASE);
    renew(&f, 10000, 2000);
    IDM_ASSERT_OK(idm_snowflake_check(f.g));
    idm_snowflake_guard_drop(f.g);
    IDM_ASSERT_RC(idm_snowflake_check(f.g), IDM_ELEASE);
    /* The checks counted nothing and moved nothing; the mints did. */
    idm_snowflake_stats_get(f.g, &after);
    assert_int_equal(after.refused_lease, before.refused_lease + 1);
    assert_int_equal(after.refused_backwards, before.refused_backwards + 1);
    assert_int_equal(after.last_unix_ms, before.last_unix_ms);
    gfx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refuses_before_first_guard),
        cmocka_unit_test(monotonic_deadline),
        cmocka_unit_test(suspend_wall_deadline),
        cmocka_unit_test(monotonic_deadline_alone),
        cmocka_unit_test(wall_deadline_alone),
        cmocka_unit_test(recorded_mark_limits),
        cmocka_unit_test(batch_not_across_mark),
        cmocka_unit_test(drop_stops_at_once),
        cmocka_unit_test(skewed_handoff),
        cmocka_unit_test(pause_between_check_and_timestamp),
        cmocka_unit_test(guard_needs_guarded),
        cmocka_unit_test(check_says_what_a_mint_would),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
