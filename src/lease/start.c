/* SPDX-License-Identifier: MIT */
/*
 * Lease to generator in one call (idm_lease_start), and the wait for the
 * clock to pass a previous holder's mark (idm_lease_wait_mark): what
 * `idmint next --lease` and idmintd both do, with one bound, one count of
 * worker ids and one clock, the generator's.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "lease_internal.h"

#define NS_PER_MS INT64_C(1000000)
/* The longest single sleep while waiting for the mark: a clock stepped
 * forward meanwhile is noticed within this. */
#define WAIT_STEP_MS INT64_C(100)

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

int idm_lease_wait_mark(const idm_lease *l, const idm_clock *c, int64_t max_wait_ms)
{
    idm_unix_ms mark;
    idm_mono_ns start;
    if (l == NULL)
        return idm_error_fail(IDM_EINVAL, "lease: no lease to wait for");
    if (c == NULL)
        c = idm_clock_system();
    if (max_wait_ms <= 0)
        max_wait_ms = idm__lease_ttl_ms(l) + IDM_LEASE_MARK_SLACK_MS;
    mark = idm_lease_mark(l);
    start = c->mono_ns(c->ctx);
    for (;;) {
        idm_unix_ms now = floor_div(c->wall_ns(c->ctx), NS_PER_MS);
        int64_t waited = (c->mono_ns(c->ctx) - start) / NS_PER_MS, ahead, step;
        if (now > mark)
            return 0;
        ahead = mark - now;
        /* At the clock's rate the mark is passed in ahead + 1 ms: give up
         * at once rather than wait for what the bound cannot reach. */
        if (ahead + 1 > max_wait_ms - waited) {
            char when[IDM_TIME_TEXT_MAX];
            if (idm_time_format(mark, when, sizeof when) != 0)
                snprintf(when, sizeof when, "%lld", (long long)mark);
            return idm_error_fail(IDM_ECLOCKBACK,
                                  "lease: the previous holder's mark, %s, is %lld ms ahead of "
                                  "the clock after %lld ms of the %lld ms this waits (was the "
                                  "clock set back?)",
                                  when, (long long)ahead, (long long)waited,
                                  (long long)max_wait_ms);
        }
        step = ahead + 1 < WAIT_STEP_MS ? ahead + 1 : WAIT_STEP_MS;
        c->sleep_ns(c->ctx, step * NS_PER_MS);
    }
}

int idm_lease_start(idm_lease **lease, idm_snowflake **gen, const idm_lease_opts *lease_opts,
                    const idm_snowflake_opts *gen_opts, const char *field)
{
    char scope[IDM_LEASE_SCOPE_MAX], detail[256];
    idm_lease_opts lo;
    idm_snowflake_opts o;
    idm_field_info f;
    idm_lease *l = NULL;
    idm_snowflake *g = NULL;
    int idx, rc;

    if (lease != NULL)
        *lease = NULL;
    if (gen != NULL)
        *gen = NULL;
    if (lease == NULL || gen == NULL || lease_opts == NULL || gen_opts == NULL ||
        gen_opts->layout == NULL || field == NULL)
        return idm_error_fail(IDM_EINVAL, "lease: start needs lease options, generator "
                                          "options with a layout, and a field name");
    /* The field: a node field of the layout (idm_lease_scope says why not). */
    rc = idm_lease_scope(gen_opts->layout, field, scope, sizeof scope);
    if (rc != 0)
        return rc;
    idx = idm_layout_field_index(gen_opts->layout, field);
    if (idx < 0 || idm_layout_field(gen_opts->layout, (size_t)idx, &f) != 0)
        return IDM_EINVAL; /* not reached: idm_lease_scope checked it */

    /* 1. Everything but the worker id, before anything is claimed. */
    o = *gen_opts;
    o.node[idx] = 0;
    o.node_set |= UINT32_C(1) << idx;
    rc = idm_snowflake_open(&g, &o);
    if (rc != 0)
        return rc;
    (void)idm_snowflake_close(g);
    g = NULL;

    /* 2. The claim: ids of this field, on the generator's clock. */
    lo = *lease_opts;
    lo.max_workers = f.max >= IDM_LEASE_WORKERS_MAX - 1 ? IDM_LEASE_WORKERS_MAX
                                                        : (uint32_t)f.max + 1;
    lo.clock = gen_opts->clock;
    if (lo.scope == NULL)
        lo.scope = scope;
    rc = idm_lease_open(&l, &lo);
    if (rc != 0)
        return rc;
    if (lo.on_claim != NULL) {
        const idm_clock *c = gen_opts->clock != NULL ? gen_opts->clock : idm_clock_system();
        idm_unix_ms now = floor_div(c->wall_ns(c->ctx), NS_PER_MS), mark = idm_lease_mark(l);
        lo.on_claim(lo.on_claim_ctx, idm_lease_worker(l), mark, mark >= now ? mark - now + 1 : 0);
    }

    /* 3 to 5: past the mark, the generator, the first renewal. */
    rc = idm_lease_wait_mark(l, gen_opts->clock, 0);
    if (rc == 0) {
        o.node[idx] = idm_lease_worker(l);
        o.guarded = true;
        if (o.after_ms < idm_lease_mark(l))
            o.after_ms = idm_lease_mark(l);
        rc = idm_snowflake_open(&g, &o);
    }
    if (rc == 0)
        rc = idm_lease_attach(l, g);
    if (rc != 0) {
        /* The release must not put its own detail in place of the
         * failure's. */
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        (void)idm_lease_close(l);
        (void)idm_snowflake_close(g);
        return idm_error_fail(rc, "%s", detail);
    }
    *lease = l;
    *gen = g;
    return 0;
}
