/* SPDX-License-Identifier: MIT */
/*
 * The audit engine (src/cli/audit.c) on files planted with faults, made
 * from real ids minted by the library under manual clocks: a 2 s clock
 * step on one worker (a host restarted with its clock set back: a new
 * generator, no state), two processes on one worker id (two generators on
 * the same node values minting in turn within the same ticks), a restored
 * backup (an earlier slice of ids replayed later), an id from a clock
 * 10 min ahead, and a host whose clock runs 5 s ahead. Each finding must
 * name the right worker, time and size. A clean file of 10M ids (fewer
 * under the sanitizers) gives nothing but the informational findings; the
 * same duplicates are found when the keys spill to files and are merged;
 * bad input is refused with the line number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IDM_AUDIT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IDM_AUDIT_SANITIZED 1
#endif
#endif

#ifdef IDM_AUDIT_SANITIZED
#define CLEAN_IDS 1000000u
#else
#define CLEAN_IDS 10000000u
#endif

/* 2026-01-01T00:00:00Z */
#define T0 INT64_C(1767225600000)

/* A generator of the twitter layout on its own manual clock. */
typedef struct gen {
    idm_manual_clock *mc;
    idm_snowflake *g;
} gen;

static void gen_open(gen *g, const idm_layout *l, uint64_t dc, uint64_t worker, int64_t now)
{
    idm_snowflake_opts o;
    IDM_ASSERT_OK(idm_manual_clock_new(&g->mc, now, false));
    idm_snowflake_opts_init(&o);
    o.layout = l;
    o.clock = idm_manual_clock_clock(g->mc);
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "datacenter", dc));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&o, "worker", worker));
    IDM_ASSERT_OK(idm_snowflake_open(&g->g, &o));
}

static void gen_close(gen *g)
{
    if (g->g == NULL)
        return;
    idm_snowflake_close(g->g);
    idm_manual_clock_free(g->mc);
    g->g = NULL;
}

static uint64_t gen_next(gen *g)
{
    uint64_t id;
    IDM_ASSERT_OK(idm_snowflake_next(g->g, &id));
    return id;
}

/* A decimal of v into buf; returns the length. */
static size_t dec(uint64_t v, char *buf)
{
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        buf[i] = t[n - 1 - i];
    return n;
}

/* One line "ID,REC" (or "ID" when rec < 0) into the audit. */
static void feed(audit *a, uint64_t id, int64_t rec, uint64_t line)
{
    char buf[64], err[200] = "";
    size_t n = dec(id, buf);
    if (rec >= 0) {
        buf[n++] = ',';
        n += dec((uint64_t)rec, buf + n);
    }
    int rc = audit_add_line(a, buf, n, line, err, sizeof err);
    if (rc != 0)
        fail_msg("line %llu refused: %s", ULL(line), err);
}

static audit *new_audit(const idm_layout *l, size_t mem_ids)
{
    audit_opts o;
    audit *a;
    audit_opts_init(&o);
    o.layout = l;
    o.mem_ids = mem_ids;
    o.now_ms = T0 + 86400000;
    IDM_ASSERT_OK(audit_new(&a, &o));
    return a;
}

/* The first finding of kind k for worker w (NULL: any), or NULL. */
static const audit_finding *find(const audit *a, audit_finding_kind k, const char *w)
{
    const audit_finding *const *f;
    size_t n = audit_findings(a, &f);
    for (size_t i = 0; i < n; i++) {
        if (f[i]->kind == k && (w == NULL || (f[i]->has_worker && strcmp(f[i]->worker, w) == 0)))
            return f[i];
    }
    return NULL;
}

static size_t count_kind(const audit *a, audit_finding_kind k)
{
    const audit_finding *const *f;
    size_t n = audit_findings(a, &f), c = 0;
    for (size_t i = 0; i < n; i++)
        c += f[i]->kind == k;
    return c;
}

/* An id of each kept to check the examples. */
static uint64_t replayed_first;

/*
 * The planted file, fed to a (audit_add_line). Per ms T from T0 for 5 s:
 *   W1 "datacenter=1 worker=1": one id, clean until its restored backup
 *      (ids of T0+1000 to T0+1499 again at the end);
 *   W2 "datacenter=1 worker=2": one id; at T0+1000 the host restarts with
 *      its clock 2 s behind (a new generator, no state);
 *   W3 "datacenter=1 worker=3": one id; in the ticks T0+3000 to T0+3002
 *      a second process on the same worker id mints too, in turn: ten ids
 *      each per tick;
 *   W5 "datacenter=1 worker=5": one id at T0+2500 from a clock 10 min ahead;
 *   W6 "datacenter=1 worker=6": one id per ms from a clock 5 s ahead.
 */
static void planted(audit *a, const idm_layout *l)
{
    gen w1, w2, w2b, w3, w3b, w5, w6;
    gen_open(&w1, l, 1, 1, T0);
    gen_open(&w2, l, 1, 2, T0);
    gen_open(&w3, l, 1, 3, T0);
    gen_open(&w6, l, 1, 6, T0 + 5000);
    w2b.g = w3b.g = NULL;
    uint64_t line = 0;
    uint64_t *w1_ids = malloc(5000 * sizeof *w1_ids);
    assert_non_null(w1_ids);
    for (int64_t i = 0; i < 5000; i++) {
        int64_t t = T0 + i;
        if (i > 0) {
            idm_manual_clock_advance(w1.mc, 1);
            idm_manual_clock_advance((w2b.g ? &w2b : &w2)->mc, 1);
            idm_manual_clock_advance(w3.mc, 1);
            idm_manual_clock_advance(w6.mc, 1);
        }
        w1_ids[i] = gen_next(&w1);
        feed(a, w1_ids[i], t, ++line);
        if (i == 1000) {
            gen_close(&w2);
            gen_open(&w2b, l, 1, 2, t - 2000);
        }
        feed(a, gen_next(w2b.g ? &w2b : &w2), t, ++line);
        if (i == 3000)
            gen_open(&w3b, l, 1, 3, t);
        if (i >= 3000 && i <= 3002) {
            if (i > 3000)
                idm_manual_clock_advance(w3b.mc, 1);
            for (int k = 0; k < 10; k++) {
                feed(a, gen_next(&w3), t, ++line);
                feed(a, gen_next(&w3b), t, ++line);
            }
        } else {
            feed(a, gen_next(&w3), t, ++line);
        }
        if (i == 2500) {
            gen_open(&w5, l, 1, 5, t + 600000);
            feed(a, gen_next(&w5), t, ++line);
            gen_close(&w5);
        }
        feed(a, gen_next(&w6), t, ++line);
    }
    /* The restored backup: rows of T0+1000 to T0+1499 inserted again. */
    replayed_first = w1_ids[1000];
    for (int64_t i = 1000; i < 1500; i++)
        feed(a, w1_ids[i], T0 + 5000 + (i - 1000), ++line);
    free(w1_ids);
    gen_close(&w1);
    gen_close(&w2b);
    gen_close(&w3);
    gen_close(&w3b);
    gen_close(&w6);
}

static void check_planted(const audit *a)
{
    const audit_finding *f;

    /* The restored backup: 500 ids twice, from T0+1000, on W1. */
    f = find(a, AF_DUPLICATE, "datacenter=1 worker=1");
    assert_non_null(f);
    assert_int_equal(f->count, 500);
    assert_int_equal(f->size, 2);
    assert_int_equal(f->at_ms, T0 + 1000);
    assert_true(f->n_examples >= 2);
    char want[24] = "";
    dec(replayed_first, want);
    assert_string_equal(f->ex[0].id, want);
    assert_string_equal(f->ex[1].id, want);
    assert_int_not_equal(f->ex[0].line, f->ex[1].line);

    /* The two writers: 3 ticks from T0+3000, 10 ids each written twice. */
    f = find(a, AF_TWO_WRITERS, "datacenter=1 worker=3");
    assert_non_null(f);
    assert_int_equal(f->at_ms, T0 + 3000);
    assert_int_equal(f->count, 3);
    assert_true(f->size >= 2);
    f = find(a, AF_DUPLICATE, "datacenter=1 worker=3");
    assert_non_null(f);
    assert_int_equal(f->count, 30);
    assert_int_equal(f->at_ms, T0 + 3000);
    assert_null(find(a, AF_TWO_WRITERS, "datacenter=1 worker=1"));

    /* The 2 s step on W2 at T0+1000: from T0+999 to T0-1000, over in 2 s. */
    f = find(a, AF_CLOCK_STEP, "datacenter=1 worker=2");
    assert_non_null(f);
    assert_int_equal(f->at_ms, T0 + 1000);
    assert_int_equal(f->size, 1999);
    assert_true(f->span_ms >= 1995 && f->span_ms <= 2005);
    assert_int_equal(f->count, 1999);
    /* The replay is a step on W1 too, at the end. */
    f = find(a, AF_CLOCK_STEP, "datacenter=1 worker=1");
    assert_non_null(f);
    assert_int_equal(f->at_ms, T0 + 5000);
    assert_int_equal(f->size, 3999);

    /* The future id: 10 min ahead of its row, at T0+2500. */
    f = find(a, AF_FUTURE, "datacenter=1 worker=5");
    assert_non_null(f);
    assert_int_equal(f->at_ms, T0 + 2500);
    assert_int_equal(f->size, 600000);
    assert_int_equal(f->count, 1);
    assert_int_equal(count_kind(a, AF_FUTURE), 1);

    /* The skewed host: 5 s ahead from the start, for the whole file. */
    f = find(a, AF_SKEW, "datacenter=1 worker=6");
    assert_non_null(f);
    assert_int_equal(f->at_ms, T0);
    assert_int_equal(f->size, 5000);
    assert_true(f->span_ms >= 4900);
    /* W1's only skew is the replay's (rows 4 s behind their ids). */
    f = find(a, AF_SKEW, "datacenter=1 worker=1");
    assert_true(f == NULL || f->at_ms >= T0 + 5000 - 64); /* a window of 64 */
    assert_null(find(a, AF_SKEW, "datacenter=1 worker=3"));
    assert_null(find(a, AF_BEFORE_EPOCH, NULL));

    f = find(a, AF_WORKERS, NULL);
    assert_non_null(f);
    assert_int_equal(f->size, 5);
    assert_int_equal(f->limit, 1024);
    assert_int_equal(audit_exit_status(a), 1);

    /* Most serious first. */
    const audit_finding *const *all;
    size_t n = audit_findings(a, &all);
    for (size_t i = 1; i < n; i++)
        assert_true(all[i - 1]->kind <= all[i]->kind);
}

static void planted_faults(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 0);
    planted(a, l);
    IDM_ASSERT_OK(audit_finish(a));
    check_planted(a);
    /* The reports are written. */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    IDM_ASSERT_OK(audit_write_text(a, m));
    fclose(m);
    assert_non_null(strstr(buf, "clock-step [datacenter=1 worker=2]"));
    assert_null(strstr(buf, "\nclean\n"));
    free(buf);
    m = open_memstream(&buf, &len);
    IDM_ASSERT_OK(audit_write_svg(a, m));
    fclose(m);
    assert_true(strncmp(buf, "<?xml", 5) == 0);
    assert_non_null(strstr(buf, "</svg>"));
    free(buf);
    audit_free(a);
    idm_layout_free(l);
}

/* The same file with 1000 keys held: many runs spilled and merged, the
 * same findings. */
static void planted_spilled(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 1000);
    planted(a, l);
    IDM_ASSERT_OK(audit_finish(a));
    check_planted(a);
    audit_free(a);
    idm_layout_free(l);
}

/* A clean file: four workers, ids in order, recorded as minted. Nothing
 * but the information about workers (and no capacity: 250 ids per tick of
 * 4096). */
static void clean_file(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 0);
    gen g[4];
    for (int i = 0; i < 4; i++)
        gen_open(&g[i], l, 2, (uint64_t)(10 + i), T0);
    int64_t t = T0;
    for (uint64_t n = 0; n < CLEAN_IDS; n++) {
        if (n % 1000 == 999) {
            t++;
            for (int i = 0; i < 4; i++)
                idm_manual_clock_advance(g[i].mc, 1);
        }
        feed(a, gen_next(&g[n % 4]), t + 3, n + 1);
    }
    for (int i = 0; i < 4; i++)
        gen_close(&g[i]);
    IDM_ASSERT_OK(audit_finish(a));
    assert_int_equal(audit_records(a), CLEAN_IDS);
    const audit_finding *const *f;
    size_t n = audit_findings(a, &f);
    for (size_t i = 0; i < n; i++) {
        if (f[i]->kind != AF_WORKERS)
            fail_msg("finding %s on a clean file", audit_finding_name(f[i]->kind));
    }
    assert_int_equal(n, 1);
    assert_int_equal(f[0]->size, 4);
    assert_int_equal(audit_exit_status(a), 0);
    audit_free(a);
    idm_layout_free(l);
}

/* A busy worker: a full tick of 4096 ids is reported against the capacity. */
static void capacity(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 0);
    gen g, g8;
    gen_open(&g, l, 0, 7, T0);
    gen_open(&g8, l, 0, 8, T0);
    uint64_t line = 0;
    for (uint64_t n = 0; n < 3000; n++)
        feed(a, gen_next(&g), T0, ++line);
    for (uint64_t n = 0; n < 1500; n++)
        feed(a, gen_next(&g8), T0, ++line);
    /* worker 7: a second tick over half, smaller than the first */
    idm_manual_clock_advance(g.mc, 1);
    for (uint64_t n = 0; n < 2500; n++)
        feed(a, gen_next(&g), T0 + 1, ++line);
    gen_close(&g);
    gen_close(&g8);
    IDM_ASSERT_OK(audit_finish(a));
    const audit_finding *f = find(a, AF_CAPACITY, "datacenter=0 worker=7");
    assert_non_null(f);
    assert_int_equal(f->size, 3000);
    assert_int_equal(f->limit, 4096);
    assert_int_equal(f->at_ms, T0);
    assert_int_equal(f->count, 2);
    /* 1500 of 4096 is not reported */
    assert_null(find(a, AF_CAPACITY, "datacenter=0 worker=8"));
    assert_int_equal(audit_exit_status(a), 0);
    audit_free(a);
    idm_layout_free(l);
}

/* Rows recorded late or early now and then (one in 16 each, by 10 s: a
 * slow batch, a client's own created_at) are no skew: the median of a
 * window is the host's offset. A host 3 s ahead with the same rows is. */
static void late_rows_no_skew(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 0);
    gen g, h;
    gen_open(&g, l, 3, 1, T0);
    gen_open(&h, l, 3, 2, T0 + 3000);
    uint64_t line = 0;
    for (int64_t i = 0; i < 4000; i++) {
        if (i > 0) {
            idm_manual_clock_advance(g.mc, 1);
            idm_manual_clock_advance(h.mc, 1);
        }
        int64_t late = i % 16 == 5 ? 10000 : i % 16 == 9 ? -10000 : 0;
        feed(a, gen_next(&g), T0 + i + late, ++line);
        feed(a, gen_next(&h), T0 + i + late, ++line);
    }
    gen_close(&g);
    gen_close(&h);
    IDM_ASSERT_OK(audit_finish(a));
    assert_null(find(a, AF_SKEW, "datacenter=3 worker=1"));
    const audit_finding *f = find(a, AF_SKEW, "datacenter=3 worker=2");
    assert_non_null(f);
    assert_int_equal(f->size, 3000);
    assert_int_equal(f->at_ms, T0);
    assert_true(f->count >= 3900);
    audit_free(a);
    idm_layout_free(l);
}

/* UUIDv7: the duplicate check compares all 16 bytes (two UUIDs that share
 * their last 8 bytes are not duplicates), with the spilled runs as well. */
static void uuid7_full_keys(void **unused)
{
    (void)unused;
    for (int spill = 0; spill < 2; spill++) {
        audit_opts o;
        audit *a;
        audit_opts_init(&o);
        o.now_ms = T0 + 86400000;
        o.kind = AUDIT_UUID7;
        o.mem_ids = spill ? 3 : 0;
        IDM_ASSERT_OK(audit_new(&a, &o));
        const char *ids[] = {
            "019b7517-6000-7000-8000-000000000001", "019b7517-6001-7000-8000-000000000001",
            "019b7517-6002-7000-8000-000000000002", "019b7517-6003-7000-8000-000000000003",
            "019b7517-6002-7000-8000-000000000002", "019b7517-6004-7000-8000-000000000004",
        };
        char err[200];
        for (size_t i = 0; i < 6; i++)
            IDM_ASSERT_OK(audit_add(a, ids[i], "2026-01-01T00:00:00Z", i + 1, err, sizeof err));
        IDM_ASSERT_OK(audit_finish(a));
        assert_int_equal(count_kind(a, AF_DUPLICATE), 1);
        const audit_finding *f = find(a, AF_DUPLICATE, NULL);
        assert_int_equal(f->count, 1);
        assert_int_equal(f->size, 2);
        assert_false(f->has_worker);
        assert_int_equal(f->n_examples, 2);
        assert_string_equal(f->ex[0].id, ids[2]);
        assert_int_equal(f->ex[0].line, 3);
        assert_int_equal(f->ex[1].line, 5);
        assert_null(find(a, AF_WORKERS, NULL));
        assert_int_equal(audit_exit_status(a), 1);
        audit_free(a);
    }
    /* 300 UUIDs whose last 8 bytes take 3 values, their first 8 all
     * different, and one of them again at the end: one duplicate. */
    for (int spill = 0; spill < 2; spill++) {
        audit_opts o;
        audit *a;
        audit_opts_init(&o);
        o.now_ms = T0 + 86400000;
        o.kind = AUDIT_UUID7;
        o.mem_ids = spill ? 7 : 0;
        IDM_ASSERT_OK(audit_new(&a, &o));
        char text[40], err[200];
        for (int i = 0; i <= 300; i++) {
            int k = i == 300 ? 100 : i;
            snprintf(text, sizeof text, "019b7517-%04x-7000-8000-00000000000%d", k, k % 3);
            IDM_ASSERT_OK(audit_add(a, text, NULL, (uint64_t)i + 1, err, sizeof err));
        }
        IDM_ASSERT_OK(audit_finish(a));
        const audit_finding *f = find(a, AF_DUPLICATE, NULL);
        assert_non_null(f);
        assert_int_equal(f->count, 1);
        assert_int_equal(f->ex[0].line, 101);
        assert_int_equal(f->ex[1].line, 301);
        audit_free(a);
    }
}

/* Before the epoch: an id with bits above the layout's 63 (its time
 * cannot be read from the epoch up), a row recorded before the epoch, and
 * a ULID whose time is 0. Not an exit-1 finding. */
static void before_epoch_ids(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 0);
    char err[200];
    IDM_ASSERT_OK(audit_add(a, "2128188653778903040", "1767225600000", 1, err, sizeof err));
    IDM_ASSERT_OK(audit_add(a, "9223372036854775813", "1767225600001", 2, err, sizeof err));
    IDM_ASSERT_OK(audit_add(a, "2128188653778903041", "1000", 3, err, sizeof err));
    IDM_ASSERT_OK(audit_finish(a));
    const audit_finding *f = find(a, AF_BEFORE_EPOCH, NULL);
    assert_non_null(f);
    assert_int_equal(f->count, 2);
    assert_int_equal(f->n_examples, 2);
    assert_int_equal(f->ex[0].line, 2);
    assert_string_equal(f->ex[0].id, "9223372036854775813");
    assert_int_equal(f->ex[1].line, 3);
    assert_int_equal(f->at_ms, INT64_C(1767225600001));
    assert_int_equal(audit_exit_status(a), 0);
    audit_free(a);
    idm_layout_free(l);

    audit_opts o;
    audit_opts_init(&o);
    o.kind = AUDIT_ULID;
    o.now_ms = T0 + 86400000;
    IDM_ASSERT_OK(audit_new(&a, &o));
    IDM_ASSERT_OK(audit_add(a, "0000000000ZZZZZZZZZZZZZZZZ", NULL, 1, err, sizeof err));
    IDM_ASSERT_OK(audit_add(a, "01KDX0TM0087Q3N5Q2X9ZRN8QW", NULL, 2, err, sizeof err));
    IDM_ASSERT_OK(audit_finish(a));
    f = find(a, AF_BEFORE_EPOCH, NULL);
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_int_equal(f->ex[0].line, 1);
    assert_null(find(a, AF_FUTURE, NULL));
    audit_free(a);
}

/* Snowflake ids that differ only in their high bits (years apart) share
 * their low bits in threes; one of them comes again at the end: one
 * duplicate, in memory and through many small runs. */
static void high_bits_keys(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    size_t mems[] = {0, 7, 2};
    for (size_t m = 0; m < 3; m++) {
        audit *a = new_audit(l, mems[m]);
        for (uint64_t i = 0; i <= 300; i++) {
            uint64_t k = i == 300 ? 100 : (i * 7919) % 300;
            feed(a, (k + 1) << 48 | (k % 3), -1, i + 1);
        }
        IDM_ASSERT_OK(audit_finish(a));
        assert_int_equal(count_kind(a, AF_DUPLICATE), 1);
        const audit_finding *f = find(a, AF_DUPLICATE, NULL);
        assert_int_equal(f->count, 1);
        assert_int_equal(f->n_examples, 2);
        /* k = 100 is line 201 (i = 200: 200 * 7919 = 100 mod 300) and 301 */
        assert_int_equal(f->ex[0].line, 201);
        assert_int_equal(f->ex[1].line, 301);
        char want[24] = "";
        dec((uint64_t)101 << 48 | 1, want);
        assert_string_equal(f->ex[0].id, want);
        audit_free(a);
    }
    idm_layout_free(l);
}

/* Bad input: refused with the line number; the record is not counted. */
static void bad_input(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit *a = new_audit(l, 0);
    char err[200];
    const char ok[] = "2128188653778903040,1767225600000";
    IDM_ASSERT_OK(audit_add_line(a, ok, strlen(ok), 1, err, sizeof err));
    IDM_ASSERT_OK(audit_add_line(a, "# note", 6, 2, err, sizeof err));
    IDM_ASSERT_OK(audit_add_line(a, "  ", 2, 3, err, sizeof err));
    const char psql[] = "2128188653778903041|2026-01-01 00:00:00.5+00";
    IDM_ASSERT_OK(audit_add_line(a, psql, strlen(psql), 4, err, sizeof err));
    assert_int_equal(audit_records(a), 2);
    IDM_ASSERT_RC(audit_add_line(a, "12x4", 4, 7, err, sizeof err), IDM_EPARSE);
    assert_non_null(strstr(err, "line 7"));
    assert_non_null(strstr(err, "12x4"));
    const char uuid[] = "019b7517-6000-7000-8000-000000000001";
    IDM_ASSERT_RC(audit_add_line(a, uuid, strlen(uuid), 8, err, sizeof err), IDM_EINVAL);
    assert_non_null(strstr(err, "line 8"));
    assert_non_null(strstr(err, "UUID"));
    const char badt[] = "2128188653778903042 yesterday";
    IDM_ASSERT_RC(audit_add_line(a, badt, strlen(badt), 9, err, sizeof err), IDM_EPARSE);
    assert_non_null(strstr(err, "line 9"));
    assert_non_null(strstr(err, "yesterday"));
    IDM_ASSERT_RC(audit_add_line(a, "99999999999999999999", 20, 10, err, sizeof err),
                  IDM_EPARSE);
    assert_int_equal(audit_records(a), 2);
    audit_free(a);

    /* Snowflake ids need a layout. */
    audit_opts o;
    audit_opts_init(&o);
    o.kind = AUDIT_SNOWFLAKE;
    IDM_ASSERT_RC(audit_new(&a, &o), IDM_EINVAL);
    idm_layout_free(l);
}

/* Rows recorded out of mint order, as racing inserts record them: within
 * each ms, pairs of a worker's ids swapped (sequences 1 0 3 2 5 4), and
 * one id of each tick recorded after the next tick's (the id time back
 * 1 ms), all within 2 ms of recorded time. Trusted as mint order
 * (step_ms 0) that is two writers and clock steps; with step_ms 2 it is
 * clean, while a real 2 s step on the other worker is still found. */
static void racing_inserts(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    for (int64_t step_ms = 0; step_ms <= 2; step_ms += 2) {
        audit_opts o;
        audit *a;
        audit_opts_init(&o);
        o.layout = l;
        o.step_ms = step_ms;
        o.now_ms = T0 + 86400000;
        IDM_ASSERT_OK(audit_new(&a, &o));
        gen g, h;
        gen_open(&g, l, 4, 1, T0);
        gen_open(&h, l, 4, 2, T0);
        uint64_t line = 0, held = 0;
        for (int64_t i = 0; i < 2000; i++) {
            if (i > 0) {
                idm_manual_clock_advance(g.mc, 1);
                idm_manual_clock_advance(h.mc, 1);
            }
            if (i == 1000) { /* h's host restarts 2 s behind */
                gen_close(&h);
                gen_open(&h, l, 4, 2, T0 + i - 2000);
            }
            uint64_t ids[6];
            for (int k = 0; k < 6; k++)
                ids[k] = gen_next(&g);
            /* 1 0 3 2 5, then the last tick's 4 (an id 1 ms older) */
            for (int k = 0; k < 6; k += 2) {
                feed(a, ids[k + 1], T0 + i, ++line);
                if (k < 4)
                    feed(a, ids[k], T0 + i, ++line);
            }
            if (held != 0)
                feed(a, held, T0 + i, ++line);
            held = ids[4];
            feed(a, gen_next(&h), T0 + i, ++line);
        }
        feed(a, held, T0 + 2000, ++line);
        gen_close(&g);
        gen_close(&h);
        IDM_ASSERT_OK(audit_finish(a));
        const audit_finding *f = find(a, AF_CLOCK_STEP, "datacenter=4 worker=2");
        assert_non_null(f);
        assert_int_equal(f->at_ms, T0 + 1000);
        assert_int_equal(f->size, 1999);
        if (step_ms == 0) {
            assert_non_null(find(a, AF_TWO_WRITERS, "datacenter=4 worker=1"));
            assert_non_null(find(a, AF_CLOCK_STEP, "datacenter=4 worker=1"));
        } else {
            assert_null(find(a, AF_TWO_WRITERS, NULL));
            assert_null(find(a, AF_CLOCK_STEP, "datacenter=4 worker=1"));
            assert_int_equal(count_kind(a, AF_CLOCK_STEP), 1);
        }
        assert_null(find(a, AF_DUPLICATE, NULL));
        audit_free(a);
    }
    idm_layout_free(l);
}

/* The duplicate check's memory: below the smallest is refused; past
 * AUDIT_RUNS_MAX runs the audit stops with IDM_ERANGE naming --memory. */
static void memory_bounds(void **unused)
{
    (void)unused;
    idm_layout *l;
    IDM_ASSERT_OK(idm_layout_preset(&l, "twitter"));
    audit_opts o;
    audit *a;
    audit_opts_init(&o);
    o.layout = l;
    o.mem_bytes = AUDIT_MEM_MIN - 1;
    IDM_ASSERT_RC(audit_new(&a, &o), IDM_EINVAL);
    o.mem_bytes = 0;
    o.mem_ids = 4;
    /* AUDIT_RUNS_MAX runs of 4 ids, the last one a copy of the first: the
     * last run is made at the end, and the copy found. */
    gen g;
    gen_open(&g, l, 1, 1, T0);
    IDM_ASSERT_OK(audit_new(&a, &o));
    uint64_t first = gen_next(&g);
    feed(a, first, -1, 1);
    for (uint64_t i = 2; i < 4 * AUDIT_RUNS_MAX; i++)
        feed(a, gen_next(&g), -1, i);
    feed(a, first, -1, 4 * AUDIT_RUNS_MAX);
    IDM_ASSERT_OK(audit_finish(a));
    const audit_finding *f = find(a, AF_DUPLICATE, NULL);
    assert_non_null(f);
    assert_int_equal(f->count, 1);
    assert_int_equal(f->ex[1].line, 4 * AUDIT_RUNS_MAX);
    audit_free(a);
    /* One id more is refused. */
    idm_manual_clock_advance(g.mc, 1);
    IDM_ASSERT_OK(audit_new(&a, &o));
    uint64_t line = 0;
    int rc = 0;
    char err[200] = "";
    while (rc == 0 && line < 4 * (AUDIT_RUNS_MAX + 2)) {
        char buf[32];
        uint64_t id = gen_next(&g);
        size_t n = dec(id, buf);
        rc = audit_add_line(a, buf, n, ++line, err, sizeof err);
    }
    assert_int_equal(rc, IDM_ERANGE);
    assert_int_equal(line, 4 * AUDIT_RUNS_MAX + 1);
    assert_non_null(strstr(idm_error_detail(), "--memory"));
    gen_close(&g);
    audit_free(a);
    idm_layout_free(l);
}

/* The randomness check: UUIDv7s and ULIDs from the library's generators
 * (monotonic, on a clock that moves 1 ms between ids, so that each id is
 * its millisecond's first) leave no random bit unchanged; ids whose
 * random part is a counter in its last byte (a broken source) leave 72
 * random bits unchanged. Nothing under 64 milliseconds. */
static void randomness(void **unused)
{
    (void)unused;
    for (int kind = 0; kind < 2; kind++) {
        for (int broken = 0; broken < 2; broken++) {
            for (int n_ids = 63; n_ids <= 1000; n_ids += 1000 - 63) {
                audit_opts o;
                audit *a;
                audit_opts_init(&o);
                o.now_ms = T0 + 86400000;
                o.kind = kind ? AUDIT_ULID : AUDIT_UUID7;
                IDM_ASSERT_OK(audit_new(&a, &o));
                idm_uuid7_gen *ug = NULL;
                idm_ulid_gen *lg = NULL;
                idm_manual_clock *mc;
                IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
                if (kind)
                    IDM_ASSERT_OK(idm_ulid_gen_new(&lg, idm_manual_clock_clock(mc), NULL, true));
                else
                    IDM_ASSERT_OK(idm_uuid7_gen_new(&ug, idm_manual_clock_clock(mc), NULL));
                char text[40], err[200];
                for (int i = 0; i < n_ids; i++) {
                    if (i > 0)
                        idm_manual_clock_advance(mc, 1);
                    uint8_t r[10] = {0};
                    r[9] = (uint8_t)i;
                    if (kind) {
                        idm_ulid u;
                        if (broken)
                            IDM_ASSERT_OK(idm_ulid_build(T0 + i, r, &u));
                        else
                            IDM_ASSERT_OK(idm_ulid_next(lg, &u));
                        idm_ulid_format(&u, text);
                    } else {
                        idm_uuid u;
                        if (broken)
                            IDM_ASSERT_OK(idm_uuid7_build(T0 + i, r, &u));
                        else
                            IDM_ASSERT_OK(idm_uuid7_next(ug, &u));
                        idm_uuid_format(&u, text);
                    }
                    IDM_ASSERT_OK(audit_add(a, text, NULL, (uint64_t)i + 1, err, sizeof err));
                }
                idm_uuid7_gen_free(ug);
                idm_ulid_gen_free(lg);
                idm_manual_clock_free(mc);
                IDM_ASSERT_OK(audit_finish(a));
                const audit_finding *f = find(a, AF_RANDOMNESS, NULL);
                if (!broken || n_ids < 64) {
                    assert_null(f);
                } else {
                    assert_non_null(f);
                    assert_int_equal(f->limit, kind ? 80 : 74);
                    /* UUIDv7 takes the first 74 of the 80 bits given:
                     * the byte's top 2 bits change. */
                    assert_int_equal(f->size, 72);
                    assert_int_equal(f->count, (uint64_t)n_ids);
                    assert_int_equal(f->at_ms, T0);
                    assert_int_equal(audit_exit_status(a), 0);
                }
                audit_free(a);
            }
        }
        /* 500 monotonic ids in one millisecond: one random draw and the
         * sums on it, nothing to judge. */
        audit_opts o;
        audit *a;
        audit_opts_init(&o);
        o.now_ms = T0 + 86400000;
        o.kind = kind ? AUDIT_ULID : AUDIT_UUID7;
        IDM_ASSERT_OK(audit_new(&a, &o));
        idm_manual_clock *mc;
        IDM_ASSERT_OK(idm_manual_clock_new(&mc, T0, false));
        idm_uuid7_gen *ug = NULL;
        idm_ulid_gen *lg = NULL;
        if (kind)
            IDM_ASSERT_OK(idm_ulid_gen_new(&lg, idm_manual_clock_clock(mc), NULL, true));
        else
            IDM_ASSERT_OK(idm_uuid7_gen_new(&ug, idm_manual_clock_clock(mc), NULL));
        char text[40], err[200];
        for (int i = 0; i < 500; i++) {
            if (kind) {
                idm_ulid u;
                IDM_ASSERT_OK(idm_ulid_next(lg, &u));
                idm_ulid_format(&u, text);
            } else {
                idm_uuid u;
                IDM_ASSERT_OK(idm_uuid7_next(ug, &u));
                idm_uuid_format(&u, text);
            }
            IDM_ASSERT_OK(audit_add(a, text, NULL, (uint64_t)i + 1, err, sizeof err));
        }
        idm_uuid7_gen_free(ug);
        idm_ulid_gen_free(lg);
        idm_manual_clock_free(mc);
        IDM_ASSERT_OK(audit_finish(a));
        assert_null(find(a, AF_RANDOMNESS, NULL));
        audit_free(a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(planted_faults), cmocka_unit_test(planted_spilled),
        cmocka_unit_test(clean_file),     cmocka_unit_test(capacity),
        cmocka_unit_test(uuid7_full_keys), cmocka_unit_test(bad_input),
        cmocka_unit_test(late_rows_no_skew), cmocka_unit_test(before_epoch_ids),
        cmocka_unit_test(high_bits_keys), cmocka_unit_test(racing_inserts),
        cmocka_unit_test(memory_bounds), cmocka_unit_test(randomness),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
