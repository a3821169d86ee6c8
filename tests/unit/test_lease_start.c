/* SPDX-License-Identifier: MIT */
/*
 * Lease to generator in one call (idm_lease_start) and the wait for a
 * previous holder's mark (idm_lease_wait_mark), on a file:// coordinator in
 * a temporary directory and a manual clock: a mark ahead of the clock waited
 * out by sleeping on the generator's clock, a mark too far ahead refused
 * with nothing held, settings refused before anything is claimed, the
 * worker id in the ids, the scope recorded, the count of worker ids taken
 * from the field's width, and the generator's clock used for the claim.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"

/* A time far from the system clock's, so that a mark taken from the
 * system clock instead of the generator's shows. */
#define T0 INT64_C(1900000000000)
#define TTL INT64_C(3000)

typedef struct fixture {
    char *dir;
    char url[4200];
    idm_manual_clock *mc;
    const idm_clock *clock;
    idm_layout *layout;
    idm_lease_opts lo;
    idm_snowflake_opts go;
} fixture;

/* A twitter layout with datacenter 3, the worker field leased, the clock at
 * T0 and ticking while the caller sleeps. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dir = idm_test_tmpdir();
    snprintf(f->url, sizeof f->url, "file://%s", f->dir);
    IDM_ASSERT_OK(idm_manual_clock_new(&f->mc, T0, true));
    f->clock = idm_manual_clock_clock(f->mc);
    IDM_ASSERT_OK(idm_layout_preset(&f->layout, "twitter"));
    idm_lease_opts_init(&f->lo);
    f->lo.url = f->url;
    f->lo.ttl_ms = TTL;
    f->lo.holder = "test";
    idm_snowflake_opts_init(&f->go);
    f->go.layout = f->layout;
    f->go.clock = f->clock;
    IDM_ASSERT_OK(idm_snowflake_opts_node(&f->go, "datacenter", 3));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    idm_layout_free(f->layout);
    idm_manual_clock_free(f->mc);
    idm_test_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* A holder that dies holding its id (on a clock at `at`): its claim
 * recorded the mark at + TTL, which the next holder must wait out. */
static void holder_dies(fixture *f, idm_unix_ms at)
{
    pid_t pid = fork();
    int status = 0;
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_lease *l;
        idm_lease_opts o = f->lo;
        idm_manual_clock_set(f->mc, at);
        o.clock = f->clock;
        o.max_workers = 1;
        _exit(idm_lease_open(&l, &o) == 0 && idm_lease_worker(l) == 0 ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static uint64_t value_of(const idm_layout *l, uint64_t id, const char *field)
{
    idm_decoded d;
    int idx = idm_layout_field_index(l, field);
    assert_true(idx >= 0);
    IDM_ASSERT_OK(idm_layout_decode(l, id, &d));
    return d.value[idx];
}

/* Nothing was claimed in f's directory: no record, no scope. */
static void nothing_claimed(const fixture *f)
{
    idm_lease_entry *e = NULL;
    size_t n = 99;
    char scope[IDM_LEASE_SCOPE_MAX];
    IDM_ASSERT_OK(idm_lease_list(f->url, 0, &e, &n));
    assert_int_equal(n, 0);
    free(e);
    IDM_ASSERT_OK(idm_lease_scope_recorded(f->url, scope, sizeof scope));
    assert_string_equal(scope, "");
}

static void starts_with_the_worker_id_in_the_ids(void **state)
{
    fixture *f = *state;
    idm_snowflake_opts before = f->go;
    idm_lease *l1, *l2;
    idm_snowflake *g1, *g2;
    idm_lease_status st;
    char want[IDM_LEASE_SCOPE_MAX], got[IDM_LEASE_SCOPE_MAX];
    uint64_t id;
    /* The lease options' max_workers and clock are not the ones used. */
    f->lo.max_workers = 1;
    f->lo.clock = NULL;
    IDM_ASSERT_OK(idm_lease_start(&l1, &g1, &f->lo, &f->go, "worker"));
    IDM_ASSERT_OK(idm_lease_start(&l2, &g2, &f->lo, &f->go, "worker"));
    assert_int_equal(idm_lease_worker(l1), 0);
    assert_int_equal(idm_lease_worker(l2), 1);
    assert_memory_equal(&before, &f->go, sizeof before);
    /* Attached: both mint, each id carrying its worker id and the other
     * node value given. */
    IDM_ASSERT_OK(idm_snowflake_next(g1, &id));
    assert_int_equal(value_of(f->layout, id, "worker"), 0);
    assert_int_equal(value_of(f->layout, id, "datacenter"), 3);
    IDM_ASSERT_OK(idm_snowflake_next(g2, &id));
    assert_int_equal(value_of(f->layout, id, "worker"), 1);
    assert_int_equal(value_of(f->layout, id, "datacenter"), 3);
    /* The claim's mark is the generator's clock + TTL. */
    idm_lease_status_get(l1, &st);
    assert_true(st.renewals >= 1);
    assert_false(st.lost);
    assert_true(st.mark_ms >= T0 + TTL && st.mark_ms < T0 + 2 * TTL);
    /* The scope recorded: the worker field of this layout. */
    IDM_ASSERT_OK(idm_lease_scope(f->layout, "worker", want, sizeof want));
    IDM_ASSERT_OK(idm_lease_scope_recorded(f->url, got, sizeof got));
    assert_string_equal(got, want);
    IDM_ASSERT_OK(idm_lease_close(l1));
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g1);
    idm_snowflake_close(g2);
}

static void a_given_scope_is_recorded(void **state)
{
    fixture *f = *state;
    idm_lease *l;
    idm_snowflake *g;
    char got[IDM_LEASE_SCOPE_MAX];
    f->lo.scope = "my own scope";
    IDM_ASSERT_OK(idm_lease_start(&l, &g, &f->lo, &f->go, "worker"));
    IDM_ASSERT_OK(idm_lease_scope_recorded(f->url, got, sizeof got));
    assert_string_equal(got, "my own scope");
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
}

/* What on_claim saw: the worker, the mark, the wait announced, and the
 * clock then (before the wait). */
typedef struct claim_seen {
    int calls;
    uint32_t worker;
    idm_unix_ms mark, clock_ms;
    int64_t wait_ms;
    idm_manual_clock *mc;
} claim_seen;

static void on_claim(void *ctx, uint32_t worker, idm_unix_ms mark, int64_t wait_ms)
{
    claim_seen *s = ctx;
    s->calls++;
    s->worker = worker;
    s->mark = mark;
    s->wait_ms = wait_ms;
    s->clock_ms = idm_manual_clock_now_ms(s->mc);
}

static void a_previous_mark_is_waited_out(void **state)
{
    fixture *f = *state;
    idm_lease *l;
    idm_snowflake *g;
    uint64_t id;
    idm_decoded d;
    claim_seen seen = {.mc = f->mc};
    holder_dies(f, T0 + 1000);
    /* The mark, T0 + 1000 + TTL, is 1000 + TTL ms ahead: within the
     * default bound (TTL + 5 s). The claim is announced before the wait. */
    f->lo.on_claim = on_claim;
    f->lo.on_claim_ctx = &seen;
    idm_unix_ms before = idm_manual_clock_now_ms(f->mc);
    IDM_ASSERT_OK(idm_lease_start(&l, &g, &f->lo, &f->go, "worker"));
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.worker, 0);
    assert_int_equal(seen.mark, T0 + 1000 + TTL);
    assert_int_equal(seen.clock_ms, before);
    assert_int_equal(seen.wait_ms, T0 + 1000 + TTL - before + 1);
    assert_int_equal(idm_lease_worker(l), 0);
    assert_int_equal(idm_lease_mark(l), T0 + 1000 + TTL);
    assert_true(idm_manual_clock_now_ms(f->mc) > T0 + 1000 + TTL);
    assert_true(idm_manual_clock_slept_ns(f->mc) >= (1000 + TTL) * INT64_C(1000000));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    IDM_ASSERT_OK(idm_layout_decode(f->layout, id, &d));
    assert_true(d.unix_ms > T0 + 1000 + TTL);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
}

static void a_mark_too_far_ahead_leaves_nothing_held(void **state)
{
    fixture *f = *state;
    idm_lease *l = (idm_lease *)f, *again;
    idm_snowflake *g = (idm_snowflake *)f;
    int64_t slept;
    /* A mark 20 s + TTL ahead: more than TTL + 5 s. */
    holder_dies(f, T0 + 20000);
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &f->go, "worker"), IDM_ECLOCKBACK);
    assert_null(l);
    assert_null(g);
    CHECK(strstr(idm_error_detail(), "ahead of the clock") != NULL, "detail: %s",
          idm_error_detail());
    /* The id is free again at once, its mark unchanged. */
    f->lo.clock = f->clock;
    IDM_ASSERT_OK(idm_lease_open(&again, &f->lo));
    assert_int_equal(idm_lease_worker(again), 0);
    assert_int_equal(idm_lease_mark(again), T0 + 20000 + TTL);
    /* An explicit bound, and a wall clock that stands still while the
     * caller sleeps: the wait ends at the bound, on the monotonic clock. */
    IDM_ASSERT_RC(idm_lease_wait_mark(again, f->clock, 20000), IDM_ECLOCKBACK);
    idm_manual_clock_set_advance_on_sleep(f->mc, false);
    idm_manual_clock_set(f->mc, T0 + 20000 + TTL - 500);
    slept = idm_manual_clock_slept_ns(f->mc);
    IDM_ASSERT_RC(idm_lease_wait_mark(again, f->clock, 1000), IDM_ECLOCKBACK);
    assert_int_equal(idm_manual_clock_now_ms(f->mc), T0 + 20000 + TTL - 500);
    assert_true(idm_manual_clock_slept_ns(f->mc) - slept >= INT64_C(500000000));
    /* Past the mark: at once. */
    idm_manual_clock_set(f->mc, T0 + 20000 + TTL + 1);
    IDM_ASSERT_OK(idm_lease_wait_mark(again, f->clock, 0));
    IDM_ASSERT_OK(idm_lease_close(again));
}

static void a_bad_field_claims_nothing(void **state)
{
    fixture *f = *state;
    idm_lease *l;
    idm_snowflake *g;
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &f->go, "nope"), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "no field 'nope'") != NULL, "detail: %s",
          idm_error_detail());
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &f->go, "seq"), IDM_EINVAL);
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &f->go, NULL), IDM_EINVAL);
    assert_null(l);
    assert_null(g);
    nothing_claimed(f);
}

static void bad_generator_settings_claim_nothing(void **state)
{
    fixture *f = *state;
    idm_lease *l;
    idm_snowflake *g;
    idm_snowflake_opts o = f->go;
    int dc = idm_layout_field_index(f->layout, "datacenter");
    /* A node value the field cannot hold. */
    o.node[dc] = 32;
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &o, "worker"), IDM_ERANGE);
    /* A node field without a value. */
    o.node_set &= ~(UINT32_C(1) << dc);
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &o, "worker"), IDM_ENODE);
    /* No layout. */
    o = f->go;
    o.layout = NULL;
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &o, "worker"), IDM_EINVAL);
    /* A clock before the epoch. */
    o = f->go;
    idm_manual_clock_set(f->mc, 1000);
    IDM_ASSERT_RC(idm_lease_start(&l, &g, &f->lo, &o, "worker"), IDM_EEPOCH);
    assert_null(l);
    assert_null(g);
    nothing_claimed(f);
}

static void the_field_width_bounds_the_worker_ids(void **state)
{
    fixture *f = *state;
    idm_layout *narrow;
    idm_snowflake_opts o;
    idm_lease *l[5];
    idm_snowflake *g[5];
    IDM_ASSERT_OK(idm_layout_parse(&narrow, "time:41@1ms,worker:2,seq:12", 1288834974657));
    idm_snowflake_opts_init(&o);
    o.layout = narrow;
    o.clock = f->clock;
    f->lo.max_workers = 1024; /* not used: the field holds 4 */
    for (uint32_t i = 0; i < 4; i++) {
        uint64_t id;
        IDM_ASSERT_OK(idm_lease_start(&l[i], &g[i], &f->lo, &o, "worker"));
        assert_int_equal(idm_lease_worker(l[i]), i);
        IDM_ASSERT_OK(idm_snowflake_next(g[i], &id));
        assert_int_equal(value_of(narrow, id, "worker"), i);
    }
    IDM_ASSERT_RC(idm_lease_start(&l[4], &g[4], &f->lo, &o, "worker"), IDM_EBUSY);
    CHECK(strstr(idm_error_detail(), "all 4 ") != NULL, "detail: %s", idm_error_detail());
    for (int i = 0; i < 4; i++) {
        IDM_ASSERT_OK(idm_lease_close(l[i]));
        idm_snowflake_close(g[i]);
    }
    idm_layout_free(narrow);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(starts_with_the_worker_id_in_the_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(a_given_scope_is_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(a_previous_mark_is_waited_out, setup, teardown),
        cmocka_unit_test_setup_teardown(a_mark_too_far_ahead_leaves_nothing_held, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_bad_field_claims_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_generator_settings_claim_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(the_field_width_bounds_the_worker_ids, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
