/* SPDX-License-Identifier: MIT */
/*
 * Tests for idmint/objectid.h: MongoDB's documented example
 * 507f1f77bcf86cd799439011 (time, text both ways, case), the strict parser
 * (lengths, every non-hex character at every position, embedded NUL, output
 * untouched on failure), the big-endian layout of idm_objectid_build (4
 * bytes of seconds, 5 process bytes, 3 bytes of counter modulo 2^24), and
 * the generator: the counter steps by one and wraps from 0xFFFFFF to 0, one
 * generator's ids share their process bytes, a forked child gets new ones,
 * the clock's range (1970 to 2106), and four threads on one generator.
 */
#include "testids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEC_LIMIT (INT64_C(1) << 32) /* first second an ObjectId cannot hold */

/* ---- helpers ---- */

static uint32_t oid_seconds(const idm_objectid *o)
{
    return (uint32_t)o->b[0] << 24 | (uint32_t)o->b[1] << 16 | (uint32_t)o->b[2] << 8 | o->b[3];
}

static uint32_t oid_counter(const idm_objectid *o)
{
    return (uint32_t)o->b[9] << 16 | (uint32_t)o->b[10] << 8 | o->b[11];
}

static void expect_text(const idm_objectid *o, const char *want)
{
    char txt[IDM_OBJECTID_TEXT_MAX];
    memset(txt, 'x', sizeof txt);
    idm_objectid_format(o, txt);
    CHECK(txt[24] == '\0' && strcmp(txt, want) == 0, "formatted \"%.25s\", expected \"%s\"", txt,
          want);
}

static int oid_cmp(const void *a, const void *b) { return memcmp(a, b, 12); }

static const char EX[] = "507f1f77bcf86cd799439011";

/* ---- text ---- */

/* MongoDB's example: 0x507f1f77 = 1350508407 s = 2012-10-17T21:13:27Z. */
static void objectid_docs_example(void **state)
{
    idm_objectid o, up;
    uint8_t want[12];
    (void)state;
    idm_test_hex_to_bytes(EX, want, 12);
    memset(&o, 0x5A, sizeof o);
    IDM_ASSERT_OK(idm_objectid_parse(EX, &o));
    assert_memory_equal(o.b, want, 12);
    assert_int_equal(idm_objectid_time(&o), INT64_C(1350508407000));
    assert_int_equal(oid_seconds(&o), 1350508407u);
    expect_text(&o, EX);
    IDM_ASSERT_OK(idm_objectid_parse("507F1F77BCF86CD799439011", &up));
    assert_memory_equal(up.b, want, 12);
    expect_text(&up, EX);
    IDM_ASSERT_OK(idm_objectid_parse("507f1F77bCf86Cd799439011", &up));
    assert_memory_equal(up.b, want, 12);
    IDM_ASSERT_OK(idm_objectid_parse("000000000000000000000000", &up));
    CHECK(idm_test_all_bytes_are(up.b, 12, 0), "zero ObjectId");
    assert_int_equal(idm_objectid_time(&up), 0);
    IDM_ASSERT_OK(idm_objectid_parse("FFFFFFFFFFFFFFFFFFFFFFFF", &up));
    CHECK(idm_test_all_bytes_are(up.b, 12, 0xFF), "all-ones ObjectId");
    expect_text(&up, "ffffffffffffffffffffffff");
    assert_int_equal(idm_objectid_time(&up), (SEC_LIMIT - 1) * 1000);
    IDM_ASSERT_OK(idm_objectid_parse("0123456789abcdefABCDEF01", &up));
    expect_text(&up, "0123456789abcdefabcdef01");
}

static void expect_reject(const char *text, const char *why)
{
    idm_objectid o;
    memset(&o, 0x5A, sizeof o);
    idm_test_check_rejected("idm_objectid_parse", idm_objectid_parse(text, &o), o.b, sizeof o.b,
                            text, why);
}

static void objectid_parse_reject(void **state)
{
    char t[64];
    (void)state;
    expect_reject("", "empty");
    expect_reject("507f1f77bcf86cd79943901", "23 chars");
    expect_reject("507f1f77bcf86cd7994390110", "25 chars");
    expect_reject("507f1f77bcf86cd799439011junk", "24 chars then junk");
    expect_reject("0x507f1f77bcf86cd7994390", "0x prefix");
    expect_reject(" 507f1f77bcf86cd79943901", "leading space");
    expect_reject("507f1f77bcf86cd79943901 ", "trailing space");
    expect_reject("507f1f77bcf86cd799439011\n", "trailing newline");
    expect_reject("507f1f77-bcf86cd79943901", "dash");
    expect_reject("ObjectId(507f1f77bcf86cd799439011)", "wrapper");
    static const char bad[] = "gGzZxX-_ /:@`[{~+.\x01\x7f\x80\xff";
    for (int i = 0; i < 24; i++) {
        for (const char *c = bad; *c != '\0'; c++) {
            char why[48];
            strcpy(t, EX);
            t[i] = *c;
            snprintf(why, sizeof why, "0x%02x at position %d", (unsigned)(uint8_t)*c, i);
            expect_reject(t, why);
        }
    }
    for (size_t k = 0; k < 24; k++) {
        char *p = malloc(k + 1);
        assert_non_null(p);
        memcpy(p, EX, k);
        p[k] = '\0';
        expect_reject(p, "a prefix");
        free(p);
        strcpy(t, EX);
        t[k] = '\0';
        expect_reject(t, "NUL inside");
    }
    char *p = malloc(sizeof EX);
    idm_objectid o;
    assert_non_null(p);
    memcpy(p, EX, sizeof EX);
    IDM_ASSERT_OK(idm_objectid_parse(p, &o));
    free(p);
}

/* format -> parse round trip on seeded random bytes; text order is byte
 * order. */
static void objectid_round_trip_random(void **state)
{
    idm_test_rng r;
    idm_objectid a, b, prev;
    char ta[IDM_OBJECTID_TEXT_MAX], tp[IDM_OBJECTID_TEXT_MAX];
    (void)state;
    idm_test_rng_init(&r, idm_test_seed());
    memset(&prev, 0, sizeof prev);
    idm_objectid_format(&prev, tp);
    for (int i = 0; i < 20000; i++) {
        for (int k = 0; k < 12; k++)
            a.b[k] = (uint8_t)idm_test_rng_next(&r);
        idm_objectid_format(&a, ta);
        assert_int_equal(strlen(ta), 24);
        for (int k = 0; k < 24; k++)
            CHECK((ta[k] >= '0' && ta[k] <= '9') || (ta[k] >= 'a' && ta[k] <= 'f'),
                  "bad character in \"%s\"", ta);
        IDM_ASSERT_OK(idm_objectid_parse(ta, &b));
        assert_memory_equal(a.b, b.b, 12);
        assert_int_equal(idm_objectid_time(&a), (idm_unix_ms)oid_seconds(&a) * 1000);
        int bc = memcmp(&prev, &a, 12), tc = strcmp(tp, ta);
        CHECK((bc < 0) == (tc < 0) && (bc == 0) == (tc == 0), "text order differs from byte order");
        prev = a;
        memcpy(tp, ta, sizeof ta);
    }
}

/* ---- build ---- */

static void objectid_build_layout(void **state)
{
    static const uint8_t proc[5] = {0xA1, 0xA2, 0xA3, 0xA4, 0xA5};
    idm_objectid o;
    (void)state;
    idm_objectid_build(0x01020304u, proc, 0x00BBCCDDu, &o);
    expect_text(&o, "01020304a1a2a3a4a5bbccdd");
    idm_objectid_build(0x01020304u, proc, 0xFFBBCCDDu, &o); /* counter mod 2^24 */
    expect_text(&o, "01020304a1a2a3a4a5bbccdd");
    idm_objectid_build(0xFFFFFFFFu, proc, 0x01000000u, &o);
    expect_text(&o, "ffffffffa1a2a3a4a5000000");
    assert_int_equal(idm_objectid_time(&o), INT64_C(4294967295000));
    idm_objectid_build(0, proc, 0xFFFFFFu, &o);
    expect_text(&o, "00000000a1a2a3a4a5ffffff");
    /* The docs example from its parts. */
    static const uint8_t exproc[5] = {0xbc, 0xf8, 0x6c, 0xd7, 0x99};
    idm_objectid_build(0x507f1f77u, exproc, 0x439011u, &o);
    expect_text(&o, EX);
}

/* ---- the generator ---- */

/* On a frozen clock with the system rng: each id's counter is the previous
 * + 1 (mod 2^24), the seconds are the clock's, the process bytes constant. */
static void objectid_counter_steps(void **state)
{
    const idm_unix_ms t = INT64_C(1700000000999);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_objectid_gen *g = NULL;
    idm_objectid prev, cur;
    (void)state;
    IDM_ASSERT_OK(idm_objectid_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    IDM_ASSERT_OK(idm_objectid_next(g, &prev));
    assert_int_equal(oid_seconds(&prev), 1700000000u);
    assert_int_equal(idm_objectid_time(&prev), INT64_C(1700000000000));
    for (int i = 0; i < 10000; i++) {
        IDM_ASSERT_OK(idm_objectid_next(g, &cur));
        CHECK(oid_counter(&cur) == ((oid_counter(&prev) + 1) & 0xFFFFFF),
              "counter %06x after %06x", oid_counter(&cur), oid_counter(&prev));
        CHECK(oid_seconds(&cur) == 1700000000u, "seconds %u", oid_seconds(&cur));
        CHECK(memcmp(cur.b + 4, prev.b + 4, 5) == 0, "process bytes changed");
        prev = cur;
    }
    idm_objectid_gen_free(g);
    idm_manual_clock_free(mc);
}

/* An rng of 0xff bytes makes the counter start at 0xFFFFFF whatever order
 * the generator draws its process value and counter in: 32 ids step by one
 * through the wrap to 0 (seen once), never skipping or repeating. */
static void objectid_counter_wraps(void **state)
{
    const idm_unix_ms t = INT64_C(1700000000000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_objectid_gen *g = NULL;
    idm_test_script_rng c;
    idm_objectid ids[32];
    int wraps = 0;
    (void)state;
    idm_test_script_init(&c);
    idm_test_script_set_const(&c, NULL, 0, 0xFF);
    IDM_ASSERT_OK(idm_objectid_gen_new(&g, idm_manual_clock_clock(mc), &c.iface));
    for (int i = 0; i < 32; i++) {
        IDM_ASSERT_OK(idm_objectid_next(g, &ids[i]));
        if (i == 0)
            continue;
        uint32_t a = oid_counter(&ids[i - 1]), b = oid_counter(&ids[i]);
        CHECK(b == ((a + 1) & 0xFFFFFF), "counter %06x after %06x", b, a);
        if (a == 0xFFFFFF && b == 0)
            wraps++;
        CHECK(memcmp(ids[i].b + 4, ids[0].b + 4, 5) == 0, "process bytes changed");
    }
    /* The first id carries the start value 0xffffff, or (if the generator
     * adds before it uses) 0, the wrap having come first. */
    CHECK(oid_counter(&ids[0]) == 0xFFFFFF || oid_counter(&ids[0]) == 0,
          "first counter %06x: not drawn from the injected rng", oid_counter(&ids[0]));
    CHECK(wraps == (oid_counter(&ids[0]) == 0xFFFFFF ? 1 : 0),
          "the counter wrapped %d times in 32 ids from %06x", wraps, oid_counter(&ids[0]));
    CHECK(oid_counter(&ids[31]) == (oid_counter(&ids[0]) + 31) % 0x1000000,
          "last counter %06x", oid_counter(&ids[31]));
    qsort(ids, 32, sizeof ids[0], oid_cmp);
    for (int i = 1; i < 32; i++)
        CHECK(memcmp(&ids[i - 1], &ids[i], 12) != 0, "repeated id around the wrap");
    idm_objectid_gen_free(g);
    idm_manual_clock_free(mc);
    idm_test_script_done(&c);
}

/* One generator, a clock that moves: every id carries the clock's seconds
 * and the same 5 process bytes. */
static void objectid_process_bytes_shared(void **state)
{
    const idm_unix_ms t = INT64_C(1600000000000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_objectid_gen *g = NULL;
    idm_objectid first, cur;
    (void)state;
    IDM_ASSERT_OK(idm_objectid_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    IDM_ASSERT_OK(idm_objectid_next(g, &first));
    for (int i = 0; i < 5000; i++) {
        idm_manual_clock_advance(mc, 333);
        IDM_ASSERT_OK(idm_objectid_next(g, &cur));
        CHECK(memcmp(cur.b + 4, first.b + 4, 5) == 0, "process bytes changed at id %d", i);
        CHECK(oid_seconds(&cur) == (uint32_t)(idm_manual_clock_now_ms(mc) / 1000),
              "seconds %u, clock at %lld ms", oid_seconds(&cur), LL(idm_manual_clock_now_ms(mc)));
    }
    idm_objectid_gen_free(g);
    idm_manual_clock_free(mc);
}

/* A generator used before fork(): the child's ids carry new process bytes
 * (shared among the child's ids), the parent's keep the old ones, and no id
 * repeats between them. */
static void objectid_fork(void **state)
{
    enum { N = 1000 };
    idm_objectid_gen *g = NULL;
    idm_objectid pre, mine[N], theirs[N];
    idm_test_child child;
    (void)state;
    IDM_ASSERT_OK(idm_objectid_gen_new(&g, NULL, NULL));
    IDM_ASSERT_OK(idm_objectid_next(g, &pre));
    if (idm_test_fork(&child)) {
        for (int i = 0; i < N; i++)
            if (idm_objectid_next(g, &theirs[i]) != 0)
                _exit(2);
        idm_test_child_send(&child, theirs, sizeof theirs);
    }
    for (int i = 0; i < N; i++)
        IDM_ASSERT_OK(idm_objectid_next(g, &mine[i]));
    size_t got = idm_test_child_collect(&child, theirs, sizeof theirs);
    assert_int_equal(got, sizeof theirs);
    for (int i = 0; i < N; i++) {
        CHECK(memcmp(mine[i].b + 4, pre.b + 4, 5) == 0, "parent's process bytes changed at fork");
        CHECK(memcmp(theirs[i].b + 4, theirs[0].b + 4, 5) == 0, "child's process bytes vary");
    }
    if (memcmp(theirs[0].b + 4, pre.b + 4, 5) == 0) {
        char a[IDM_OBJECTID_TEXT_MAX], b[IDM_OBJECTID_TEXT_MAX];
        idm_objectid_format(&pre, a);
        idm_objectid_format(&theirs[0], b);
        fail_msg("the child kept the parent's process bytes (parent %s, child %s)", a, b);
    }
    idm_objectid all[2 * N];
    memcpy(all, mine, sizeof mine);
    memcpy(all + N, theirs, sizeof theirs);
    qsort(all, 2 * N, sizeof all[0], oid_cmp);
    for (int i = 1; i < 2 * N; i++)
        CHECK(memcmp(&all[i - 1], &all[i], 12) != 0, "parent and child minted the same id");
    idm_objectid_gen_free(g);
}

/* The clock before 1970 or at/after 2^32 s (2106-02-07T06:28:16Z):
 * IDM_ERANGE, output untouched; 0 s and 2^32 - 1 s work. (The manual clock
 * holds ns in an int64, so every value here stays below 2262.) */
static void objectid_clock_range(void **state)
{
    static const idm_unix_ms bad[] = {-1, -999, -1000, -1001, -INT64_C(86400000),
                                      SEC_LIMIT * 1000, SEC_LIMIT * 1000 + 1, SEC_LIMIT * 2000};
    idm_objectid o;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        idm_manual_clock *mc = idm_test_frozen_clock(bad[i]);
        idm_objectid_gen *g = NULL;
        IDM_ASSERT_OK(idm_objectid_gen_new(&g, idm_manual_clock_clock(mc), NULL));
        memset(&o, 0x5A, sizeof o);
        int rc = idm_objectid_next(g, &o);
        if (rc != IDM_ERANGE) {
            char txt[IDM_OBJECTID_TEXT_MAX];
            idm_objectid_format(&o, txt);
            fail_msg("clock at %lld ms: %s (%s), expected IDM_ERANGE", LL(bad[i]),
                     idm_err_name(rc), txt);
        }
        CHECK(idm_error_detail()[0] != '\0', "clock at %lld ms: no detail", LL(bad[i]));
        CHECK(idm_test_all_bytes_are(o.b, 12, 0x5A), "clock at %lld ms: output written",
              LL(bad[i]));
        idm_objectid_gen_free(g);
        idm_manual_clock_free(mc);
    }
    static const idm_unix_ms good[] = {0, 999, SEC_LIMIT * 1000 - 1000, SEC_LIMIT * 1000 - 1};
    static const uint32_t good_s[] = {0, 0, 0xFFFFFFFFu, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        idm_manual_clock *mc = idm_test_frozen_clock(good[i]);
        idm_objectid_gen *g = NULL;
        IDM_ASSERT_OK(idm_objectid_gen_new(&g, idm_manual_clock_clock(mc), NULL));
        IDM_ASSERT_OK(idm_objectid_next(g, &o));
        CHECK(oid_seconds(&o) == good_s[i], "clock at %lld ms: seconds %u", LL(good[i]),
              oid_seconds(&o));
        idm_objectid_gen_free(g);
        idm_manual_clock_free(mc);
    }
}

/* rng failure at creation: the generator reports it (it needs randomness
 * for its process value and counter), or, if it deferred the draw, its
 * first id does. Either way no id comes out of a failed rng. */
static void objectid_rng_failure(void **state)
{
    idm_test_script_rng c;
    idm_objectid_gen *g = NULL;
    idm_objectid o;
    (void)state;
    idm_test_script_init(&c);
    idm_test_script_set_const(&c, NULL, 0, 0x11);
    idm_test_script_fail(&c, IDM_ERANDOM);
    int rc = idm_objectid_gen_new(&g, NULL, &c.iface);
    if (rc == 0) {
        memset(&o, 0x5A, sizeof o);
        rc = idm_objectid_next(g, &o);
        CHECK(rc == IDM_ERANDOM, "next with a failing rng returned %s", idm_err_name(rc));
        CHECK(idm_test_all_bytes_are(o.b, 12, 0x5A), "output written on IDM_ERANDOM");
        idm_objectid_gen_free(g);
    } else {
        CHECK(rc == IDM_ERANDOM, "gen_new with a failing rng returned %s", idm_err_name(rc));
    }
    idm_test_script_done(&c);
}

/* ---- threads ---- */

enum { THREADS = 4, PER_THREAD = 100000 };

/* Mints one ObjectId from the generator g into out, for the thread
 * harness. */
static int mint_objectid(void *g, void *out) { return idm_objectid_next(g, out); }

/* 4 threads x 100,000 on one generator: all distinct, one process value. */
static void objectid_threads(void **state)
{
    idm_objectid_gen *g = NULL;
    size_t n = (size_t)THREADS * PER_THREAD;
    idm_objectid *all = malloc(n * sizeof *all);
    idm_test_threads t;
    (void)state;
    assert_non_null(all);
    IDM_ASSERT_OK(idm_objectid_gen_new(&g, NULL, NULL));
    idm_test_threads_run(&t, THREADS, mint_objectid, g, all, sizeof *all, PER_THREAD);
    for (int i = 0; i < THREADS; i++)
        IDM_ASSERT_RC(t.job[i].rc, 0);
    for (size_t k = 0; k < n; k++)
        CHECK(memcmp(all[k].b + 4, all[0].b + 4, 5) == 0, "process bytes differ between ids");
    /* The counters alone are distinct: fewer than 2^24 ids, one atomic add
     * each. */
    uint64_t *ctr = malloc(n * sizeof *ctr);
    assert_non_null(ctr);
    for (size_t k = 0; k < n; k++)
        ctr[k] = oid_counter(&all[k]);
    size_t cd = idm_test_count_duplicates(ctr, n);
    CHECK(cd == 0, "%zu repeated counters among %zu ids", cd, n);
    free(ctr);
    qsort(all, n, sizeof *all, oid_cmp);
    size_t dups = 0;
    for (size_t k = 1; k < n; k++)
        if (memcmp(&all[k - 1], &all[k], 12) == 0)
            dups++;
    CHECK(dups == 0, "%zu duplicate ids among %zu", dups, n);
    idm_objectid_gen_free(g);
    free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(objectid_docs_example),
        cmocka_unit_test(objectid_parse_reject),
        cmocka_unit_test(objectid_round_trip_random),
        cmocka_unit_test(objectid_build_layout),
        cmocka_unit_test(objectid_counter_steps),
        cmocka_unit_test(objectid_counter_wraps),
        cmocka_unit_test(objectid_process_bytes_shared),
        cmocka_unit_test(objectid_fork),
        cmocka_unit_test(objectid_clock_range),
        cmocka_unit_test(objectid_rng_failure),
        cmocka_unit_test(objectid_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
