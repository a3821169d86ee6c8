/* SPDX-License-Identifier: MIT */
/*
 * Tests for idmint/ulid.h: the ULID specification's examples (decoded time,
 * bytes and text both ways), case, the 128-bit ceiling (IDM_ERANGE above
 * 7ZZZZZZZZZZZZZZZZZZZZZZZZZ), characters outside Crockford's alphabet and
 * wrong lengths (IDM_EPARSE, output untouched), build/format/parse round
 * trips on seeded random values, ULID <-> UUID conversion; and the
 * generator: monotonic mode (each id the previous + 1 on a frozen clock for
 * 1,000,000 ids, IDM_EOVERFLOW at the top of the random part without
 * wrapping and without moving, clock steps back, four threads on one
 * generator), non-monotonic mode, rng failure and clock range; fork() (in
 * the same ms parent and child share no id: the parent's run goes on, the
 * child redraws its random part instead of minting the parent's previous +
 * 1); and fork() while another thread holds the monotonic generator's lock
 * (the child must not inherit it held, and starts afresh).
 */
#include "testids.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h" /* idm__ulid_gen_lock, to hold the lock across fork() */

#define MS_LIMIT (INT64_C(1) << 48) /* first ms a ULID cannot hold */

static const char ALPHABET[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* ---- helpers ---- */

/* The 48-bit timestamp in the first 6 bytes. */
static idm_unix_ms ts48(const idm_ulid *u) { return idm_test_be48(u->b); }

/* Is the 80-bit random part of b that of a plus one? */
static int rand_is_next(const idm_ulid *a, const idm_ulid *b)
{
    unsigned carry = 1;
    for (int i = 15; i >= 6; i--) {
        unsigned v = a->b[i] + carry;
        if ((uint8_t)v != b->b[i])
            return 0;
        carry = v >> 8;
    }
    return carry == 0; /* a wrap of the random part is never "plus one" */
}

static int rand_cmp(const void *a, const void *b)
{
    return memcmp((const uint8_t *)a + 6, (const uint8_t *)b + 6, 10);
}

static void print_ulid(const char *what, const idm_ulid *u)
{
    char txt[IDM_ULID_TEXT_MAX];
    idm_ulid_format(u, txt);
    print_error("%s: %s\n", what, txt);
}

static void expect_text(const idm_ulid *u, const char *want)
{
    char txt[IDM_ULID_TEXT_MAX];
    memset(txt, 'x', sizeof txt);
    idm_ulid_format(u, txt);
    CHECK(txt[26] == '\0' && strcmp(txt, want) == 0, "formatted \"%.27s\", expected \"%s\"", txt,
          want);
}

/* ---- the specification's examples ---- */

/*
 * The ULID README shows ulid(1469918176385) -> 01ARYZ6S41TSV4RRFFQ69G5FAV
 * (2016-07-30T22:36:16.385Z) and, for a call at an unstated time, ulid() ->
 * 01ARZ3NDEKTSV4RRFFQ69G5FAV, whose time decodes to 1469922850259
 * (2016-07-30T23:54:10.259Z). Both share the random part; the 16 bytes
 * below were decoded independently of idmint.
 */
static void ulid_spec_examples(void **state)
{
    static const struct {
        const char *text, *hex;
        idm_unix_ms ms;
    } ex[] = {
        {"01ARYZ6S41TSV4RRFFQ69G5FAV", "01563df36481d6764c61efb99302bd5b", INT64_C(1469918176385)},
        {"01ARZ3NDEKTSV4RRFFQ69G5FAV", "01563e3ab5d3d6764c61efb99302bd5b", INT64_C(1469922850259)},
    };
    (void)state;
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        idm_ulid u, lower_u;
        uint8_t want[16];
        char lower[IDM_ULID_TEXT_MAX];
        idm_test_hex_to_bytes(ex[i].hex, want, 16);
        memset(&u, 0x5A, sizeof u);
        IDM_ASSERT_OK(idm_ulid_parse(ex[i].text, &u));
        assert_memory_equal(u.b, want, 16);
        assert_int_equal(idm_ulid_time(&u), ex[i].ms);
        expect_text(&u, ex[i].text);
        /* Lower case in, upper case out. */
        for (int k = 0; k < 27; k++)
            lower[k] = (char)((ex[i].text[k] >= 'A' && ex[i].text[k] <= 'Z') ? ex[i].text[k] + 32
                                                                              : ex[i].text[k]);
        IDM_ASSERT_OK(idm_ulid_parse(lower, &lower_u));
        assert_memory_equal(lower_u.b, want, 16);
        expect_text(&lower_u, ex[i].text);
        /* Built from its parts. */
        idm_ulid b;
        IDM_ASSERT_OK(idm_ulid_build(ex[i].ms, want + 6, &b));
        assert_memory_equal(b.b, want, 16);
    }
    /* The README's time prefix: 1469918176385 encodes as 01ARYZ6S41. */
    uint8_t zero[10] = {0};
    idm_ulid z;
    IDM_ASSERT_OK(idm_ulid_build(INT64_C(1469918176385), zero, &z));
    expect_text(&z, "01ARYZ6S410000000000000000");
}

/* The ceiling: 7ZZZ... is all 128 bits set; 8000... and above are
 * IDM_ERANGE; the floor 000... is zero. */
static void ulid_range(void **state)
{
    idm_ulid u;
    (void)state;
    IDM_ASSERT_OK(idm_ulid_parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ", &u));
    CHECK(idm_test_all_bytes_are(u.b, 16, 0xFF), "7ZZZ... is not all ones");
    expect_text(&u, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
    assert_int_equal(idm_ulid_time(&u), MS_LIMIT - 1);
    IDM_ASSERT_OK(idm_ulid_parse("7zzzzzzzzzzzzzzzzzzzzzzzzz", &u));
    CHECK(idm_test_all_bytes_are(u.b, 16, 0xFF), "7zzz... is not all ones");
    IDM_ASSERT_OK(idm_ulid_parse("00000000000000000000000000", &u));
    CHECK(idm_test_all_bytes_are(u.b, 16, 0), "000... is not zero");
    expect_text(&u, "00000000000000000000000000");
    assert_int_equal(idm_ulid_time(&u), 0);
    static const char *over[] = {
        "80000000000000000000000000", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
        "zzzzzzzzzzzzzzzzzzzzzzzzzz", "90000000000000000000000001", "G0000000000000000000000000",
    };
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        memset(&u, 0x5A, sizeof u);
        int rc = idm_ulid_parse(over[i], &u);
        CHECK(rc == IDM_ERANGE, "\"%s\": %s, expected IDM_ERANGE", over[i], idm_err_name(rc));
        CHECK(idm_error_detail()[0] != '\0', "\"%s\": no detail", over[i]);
        CHECK(idm_test_all_bytes_are(u.b, 16, 0x5A), "\"%s\": output written", over[i]);
    }
}

static void expect_reject(const char *text, const char *why)
{
    idm_ulid u;
    memset(&u, 0x5A, sizeof u);
    idm_test_check_rejected("idm_ulid_parse", idm_ulid_parse(text, &u), u.b, sizeof u.b, text, why);
}

static const char EX[] = "01ARYZ6S41TSV4RRFFQ69G5FAV";

/* I, L, O, U (either case) and every other character outside the alphabet,
 * at every position; wrong lengths; the text ends at its first NUL. */
static void ulid_parse_reject(void **state)
{
    char t[64];
    (void)state;
    expect_reject("", "empty");
    expect_reject("01ARYZ6S41TSV4RRFFQ69G5FA", "25 chars");
    expect_reject("01ARYZ6S41TSV4RRFFQ69G5FAVA", "27 chars");
    expect_reject("001ARYZ6S41TSV4RRFFQ69G5FAV", "27 chars, leading zero");
    expect_reject(" 01ARYZ6S41TSV4RRFFQ69G5FAV", "leading space");
    expect_reject("01ARYZ6S41TSV4RRFFQ69G5FAV ", "trailing space");
    expect_reject("01ARYZ6S41TSV4RRFFQ69G5FAV\n", "trailing newline");
    expect_reject("01ARYZ6S41-TSV4RRFFQ69G5FA", "dash");
    expect_reject("01ARYZ6S41TSV4RRFFQ69G5FAVjunk", "26 chars then junk");
    /* Not base32 at all, even if it starts above '7': malformed, not a value
     * out of range. */
    expect_reject("8IIIIIIIIIIIIIIIIIIIIIIIII", "excluded letters after an 8");
    expect_reject("8ZZZZZZZZZZZZZZZZZZZZZZZZU", "U after an 8");
    expect_reject("Z0000000000000000000000-00", "dash after a Z");
    expect_reject("80000000000000000000000000!", "27 chars starting with 8");
    expect_reject("8000000000000000000000000", "25 chars starting with 8");
    /* Every position, every character the alphabet lacks. */
    for (int c = 1; c < 256; c++) {
        if (strchr(ALPHABET, c >= 'a' && c <= 'z' ? c - 32 : c) != NULL)
            continue;
        for (int i = 0; i < 26; i++) {
            char why[48];
            strcpy(t, EX);
            t[i] = (char)c;
            snprintf(why, sizeof why, "0x%02x at position %d", (unsigned)c, i);
            expect_reject(t, why);
        }
    }
    /* The letters Crockford's decoders sometimes map (I, L -> 1, O -> 0)
     * and U are rejected by name too, in both cases, at both ends. */
    static const char excluded[] = "ILOUilou";
    for (const char *c = excluded; *c != '\0'; c++) {
        strcpy(t, EX);
        t[0] = *c;
        expect_reject(t, "excluded letter first");
        strcpy(t, EX);
        t[25] = *c;
        expect_reject(t, "excluded letter last");
    }
    /* Prefixes in exact-size heap buffers (reads past the NUL show under
     * ASan), and a NUL in place of each character. */
    for (size_t k = 0; k < 26; k++) {
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
    idm_ulid u;
    assert_non_null(p);
    memcpy(p, EX, sizeof EX);
    IDM_ASSERT_OK(idm_ulid_parse(p, &u));
    free(p);
}

/* Every alphabet character at every position parses, either case, and
 * formats back upper-case. */
static void ulid_parse_alphabet(void **state)
{
    char t[IDM_ULID_TEXT_MAX], want[IDM_ULID_TEXT_MAX];
    idm_ulid u;
    (void)state;
    for (int i = 0; i < 26; i++) {
        for (int a = 0; a < 32; a++) {
            if (i == 0 && a > 7)
                break; /* above 128 bits */
            for (int lower = 0; lower < 2; lower++) {
                strcpy(t, EX);
                char c = ALPHABET[a];
                t[i] = lower && c >= 'A' ? (char)(c + 32) : c;
                strcpy(want, EX);
                want[i] = c;
                IDM_ASSERT_OK(idm_ulid_parse(t, &u));
                expect_text(&u, want);
            }
        }
    }
}

/* build(ms, rand) -> format -> parse is the identity on seeded random
 * values and the edges; the layout is 6 bytes of ms then the 10 random
 * bytes; text order is byte order. */
static void ulid_round_trip_random(void **state)
{
    idm_test_rng r;
    idm_ulid u, v, prev;
    char txt[IDM_ULID_TEXT_MAX], ptxt[IDM_ULID_TEXT_MAX];
    (void)state;
    idm_test_rng_init(&r, idm_test_seed());
    memset(&prev, 0, sizeof prev);
    idm_ulid_format(&prev, ptxt);
    for (int i = 0; i < 50000; i++) {
        idm_unix_ms ms;
        uint8_t rnd[10];
        switch (i) {
        case 0: ms = 0; memset(rnd, 0, 10); break;
        case 1: ms = MS_LIMIT - 1; memset(rnd, 0xFF, 10); break;
        case 2: ms = 0; memset(rnd, 0xFF, 10); break;
        case 3: ms = MS_LIMIT - 1; memset(rnd, 0, 10); break;
        default:
            ms = (idm_unix_ms)idm_test_rng_range(&r, 0, (uint64_t)MS_LIMIT - 1);
            for (int k = 0; k < 10; k++)
                rnd[k] = (uint8_t)idm_test_rng_next(&r);
            if (i % 5 == 0)
                ms = (idm_unix_ms)idm_test_rng_range(&r, UINT64_C(1400000000000),
                                                     UINT64_C(2000000000000));
        }
        memset(&u, 0x5A, sizeof u);
        IDM_ASSERT_OK(idm_ulid_build(ms, rnd, &u));
        CHECK(ts48(&u) == ms && memcmp(u.b + 6, rnd, 10) == 0, "build(%lld) layout", LL(ms));
        assert_int_equal(idm_ulid_time(&u), ms);
        idm_ulid_format(&u, txt);
        assert_int_equal(strlen(txt), 26);
        for (int k = 0; k < 26; k++)
            CHECK(strchr(ALPHABET, txt[k]) != NULL, "'%c' in \"%s\"", txt[k], txt);
        CHECK(txt[0] <= '7', "\"%s\" above 128 bits", txt);
        memset(&v, 0x5A, sizeof v);
        IDM_ASSERT_OK(idm_ulid_parse(txt, &v));
        CHECK(memcmp(&u, &v, 16) == 0, "\"%s\" did not parse back to its bytes", txt);
        int bc = memcmp(&prev, &u, 16), tc = strcmp(ptxt, txt);
        CHECK((bc < 0) == (tc < 0) && (bc == 0) == (tc == 0), "text order differs from byte order");
        prev = u;
        memcpy(ptxt, txt, sizeof txt);
    }
    /* build rejects ms outside 0..2^48-1, output untouched. */
    static const idm_unix_ms bad[] = {-1, MS_LIMIT, INT64_MIN, INT64_MAX};
    uint8_t rnd[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&u, 0x5A, sizeof u);
        IDM_ASSERT_RC(idm_ulid_build(bad[i], rnd, &u), IDM_ERANGE);
        CHECK(idm_test_all_bytes_are(u.b, 16, 0x5A), "build(%lld) wrote its output", LL(bad[i]));
    }
}

/* ULID <-> UUID: the same 16 bytes both ways. */
static void ulid_uuid_conversion(void **state)
{
    idm_test_rng r;
    idm_ulid a, b;
    idm_uuid u;
    char txt[IDM_UUID_TEXT_MAX];
    (void)state;
    IDM_ASSERT_OK(idm_ulid_parse("01ARZ3NDEKTSV4RRFFQ69G5FAV", &a));
    idm_ulid_to_uuid(&a, &u);
    idm_uuid_format(&u, txt);
    assert_string_equal(txt, "01563e3a-b5d3-d676-4c61-efb99302bd5b");
    IDM_ASSERT_OK(idm_uuid_parse("01563E3A-B5D3-D676-4C61-EFB99302BD5B", &u));
    idm_uuid_to_ulid(&u, &b);
    expect_text(&b, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
    idm_test_rng_init(&r, idm_test_seed());
    for (int i = 0; i < 10000; i++) {
        for (int k = 0; k < 16; k++)
            a.b[k] = (uint8_t)idm_test_rng_next(&r);
        memset(&u, 0x5A, sizeof u);
        idm_ulid_to_uuid(&a, &u);
        assert_memory_equal(u.b, a.b, 16);
        memset(&b, 0x5A, sizeof b);
        idm_uuid_to_ulid(&u, &b);
        assert_memory_equal(b.b, a.b, 16);
    }
}

/* ---- the generator ---- */

/* Monotonic mode, frozen clock: 1,000,000 ids, each the previous + 1 in the
 * random part, strictly increasing as bytes and as text, all at the clock's
 * ms. */
static void ulid_monotonic_frozen(void **state)
{
    enum { N = 1000000 };
    const idm_unix_ms t = INT64_C(1700000000123);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_ulid prev, cur;
    char tprev[IDM_ULID_TEXT_MAX], tcur[IDM_ULID_TEXT_MAX];
    (void)state;
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), NULL, true));
    IDM_ASSERT_OK(idm_ulid_next(g, &prev));
    assert_int_equal(ts48(&prev), t);
    idm_ulid_format(&prev, tprev);
    for (size_t i = 1; i < N; i++) {
        IDM_ASSERT_OK(idm_ulid_next(g, &cur));
        idm_ulid_format(&cur, tcur);
        if (ts48(&cur) != t || !rand_is_next(&prev, &cur) || memcmp(&prev, &cur, 16) >= 0 ||
            strcmp(tprev, tcur) >= 0) {
            print_ulid("previous", &prev);
            print_ulid("next", &cur);
            fail_msg("id %zu is not the previous + 1 at ms %lld", i, LL(t));
        }
        prev = cur;
        memcpy(tprev, tcur, sizeof tcur);
    }
    idm_ulid_gen_free(g);
    idm_manual_clock_free(mc);
}

/* The first id of the ms takes random 2^80 - 2 (from the rng); the next is
 * 2^80 - 1; the next fails with IDM_EOVERFLOW, output untouched, and keeps
 * failing in that ms (and with the clock behind it) without wrapping; once
 * the clock advances an id comes with fresh random bits. */
static void ulid_monotonic_overflow(void **state)
{
    const idm_unix_ms t = INT64_C(1700000001000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_test_script_rng s;
    uint8_t top[10];
    idm_ulid a, b, x, c;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), &s.iface, true));
    memset(top, 0xFF, sizeof top);
    top[9] = 0xFE;
    idm_test_script_set_const(&s, top, 10, 0x42); /* then 0x42 forever */
    IDM_ASSERT_OK(idm_ulid_next(g, &a));
    CHECK(ts48(&a) == t && memcmp(a.b + 6, top, 10) == 0, "first id is not t, 2^80 - 2");
    expect_text(&a, "01HF7YATZ8ZZZZZZZZZZZZZZZY");
    IDM_ASSERT_OK(idm_ulid_next(g, &b));
    CHECK(ts48(&b) == t && idm_test_all_bytes_are(b.b + 6, 10, 0xFF),
          "second id is not t, 2^80 - 1");
    expect_text(&b, "01HF7YATZ8ZZZZZZZZZZZZZZZZ");
    for (int i = 0; i < 3; i++) {
        memset(&x, 0x5A, sizeof x);
        int rc = idm_ulid_next(g, &x);
        if (rc != IDM_EOVERFLOW) {
            if (rc == 0)
                print_ulid("got", &x);
            fail_msg("call %d after 2^80 - 1 in the ms returned %s, expected IDM_EOVERFLOW", i,
                     idm_err_name(rc));
        }
        CHECK(idm_error_detail()[0] != '\0', "IDM_EOVERFLOW without detail");
        CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on IDM_EOVERFLOW");
    }
    /* The clock behind the last ms: still that ms, still full. */
    idm_manual_clock_set(mc, t - 5);
    memset(&x, 0x5A, sizeof x);
    IDM_ASSERT_RC(idm_ulid_next(g, &x), IDM_EOVERFLOW);
    CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on IDM_EOVERFLOW");
    idm_manual_clock_set(mc, t);
    IDM_ASSERT_RC(idm_ulid_next(g, &x), IDM_EOVERFLOW);
    /* The next ms: fresh random bits (the rng's 0x42s), above b. */
    idm_manual_clock_set(mc, t + 1);
    IDM_ASSERT_OK(idm_ulid_next(g, &c));
    CHECK(ts48(&c) == t + 1, "after overflow: ms %lld, expected %lld", LL(ts48(&c)), LL(t + 1));
    CHECK(idm_test_all_bytes_are(c.b + 6, 10, 0x42), "after overflow the random part is not fresh");
    CHECK(memcmp(&b, &c, 16) < 0, "ids decreased after overflow");
    IDM_ASSERT_OK(idm_ulid_next(g, &x));
    CHECK(rand_is_next(&c, &x) && ts48(&x) == t + 1, "the id after that is not + 1");
    idm_ulid_gen_free(g);
    idm_manual_clock_free(mc);
    idm_test_script_done(&s);
}

/* Non-monotonic mode: each id takes fresh random bits. With the system rng
 * on a frozen clock the random parts all differ and are not a +1 sequence;
 * with an rng of constant bytes each id's random part is those bytes. */
static void ulid_non_monotonic(void **state)
{
    enum { N = 5000 };
    const idm_unix_ms t = INT64_C(1700000002000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_ulid *v = malloc(N * sizeof *v);
    int plus_one = 0;
    (void)state;
    assert_non_null(v);
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), NULL, false));
    for (size_t i = 0; i < N; i++) {
        IDM_ASSERT_OK(idm_ulid_next(g, &v[i]));
        assert_int_equal(ts48(&v[i]), t);
        if (i > 0 && rand_is_next(&v[i - 1], &v[i]))
            plus_one++;
    }
    CHECK(plus_one == 0, "%d ids were the previous + 1 in non-monotonic mode", plus_one);
    qsort(v, N, sizeof *v, rand_cmp);
    for (size_t i = 1; i < N; i++)
        CHECK(rand_cmp(&v[i - 1], &v[i]) != 0, "two ids share a random part");
    idm_ulid_gen_free(g);

    idm_test_script_rng s;
    uint8_t none[1] = {0};
    idm_ulid a, b;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), &s.iface, false));
    idm_test_script_set_const(&s, none, 0, 0x37);
    IDM_ASSERT_OK(idm_ulid_next(g, &a));
    IDM_ASSERT_OK(idm_ulid_next(g, &b));
    CHECK(idm_test_all_bytes_are(a.b + 6, 10, 0x37) && idm_test_all_bytes_are(b.b + 6, 10, 0x37),
          "random parts are not the rng's bytes");
    CHECK(ts48(&a) == t && ts48(&b) == t, "wrong ms");
    /* All ones from the rng at the top: no overflow without monotonic mode. */
    idm_test_script_set_const(&s, none, 0, 0xFF);
    for (int i = 0; i < 3; i++) {
        IDM_ASSERT_OK(idm_ulid_next(g, &a));
        CHECK(idm_test_all_bytes_are(a.b + 6, 10, 0xFF), "random part is not the rng's bytes");
    }
    idm_ulid_gen_free(g);
    idm_test_script_done(&s);
    idm_manual_clock_free(mc);
    free(v);
}

/* Monotonic mode, the clock steps back 1 ms and 10 s: the last ms is kept,
 * each id the previous + 1, until the clock passes it. */
static void ulid_clock_step_back(void **state)
{
    const idm_unix_ms t = INT64_C(1700000003000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_ulid prev, cur;
    (void)state;
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), NULL, true));
    IDM_ASSERT_OK(idm_ulid_next(g, &prev));
    static const idm_unix_ms clock_at[] = {-1, -10000, 0, -1, -9999}; /* relative to t */
    for (size_t k = 0; k < sizeof clock_at / sizeof clock_at[0]; k++) {
        idm_manual_clock_set(mc, t + clock_at[k]);
        for (int i = 0; i < 1000; i++) {
            IDM_ASSERT_OK(idm_ulid_next(g, &cur));
            CHECK(ts48(&cur) == t && rand_is_next(&prev, &cur),
                  "clock at t%+lld: id is not the previous + 1 at the last ms", LL(clock_at[k]));
            prev = cur;
        }
    }
    idm_manual_clock_set(mc, t + 1);
    IDM_ASSERT_OK(idm_ulid_next(g, &cur));
    CHECK(ts48(&cur) == t + 1 && memcmp(&prev, &cur, 16) < 0, "clock past the last ms");
    idm_ulid_gen_free(g);
    idm_manual_clock_free(mc);
}

/* rng failure: IDM_ERANDOM, output untouched, state unmoved (monotonic: the
 * next success is the previous + 1). Clock before 1970: IDM_ERANGE. */
static void ulid_errors(void **state)
{
    const idm_unix_ms t = INT64_C(1700000004000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_test_script_rng s;
    idm_ulid a, b, x;
    (void)state;
    idm_test_script_init(&s);
    for (int mono = 0; mono < 2; mono++) {
        idm_manual_clock_set(mc, t + 10 * mono);
        IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), &s.iface, mono != 0));
        idm_test_script_fail(&s, IDM_ERANDOM);
        memset(&x, 0x5A, sizeof x);
        IDM_ASSERT_RC(idm_ulid_next(g, &x), IDM_ERANDOM);
        CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on IDM_ERANDOM");
        idm_test_script_fail(&s, 0);
        IDM_ASSERT_OK(idm_ulid_next(g, &a));
        if (mono) {
            /* Within the ms a monotonic generator needs no randomness; at
             * the next ms it does. */
            IDM_ASSERT_OK(idm_ulid_next(g, &b));
            CHECK(rand_is_next(&a, &b), "not + 1");
            idm_manual_clock_advance(mc, 1);
            idm_test_script_fail(&s, IDM_ERANDOM);
            memset(&x, 0x5A, sizeof x);
            IDM_ASSERT_RC(idm_ulid_next(g, &x), IDM_ERANDOM);
            CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on IDM_ERANDOM");
            idm_test_script_fail(&s, 0);
            IDM_ASSERT_OK(idm_ulid_next(g, &a));
            CHECK(ts48(&a) == t + 11 && memcmp(&b, &a, 16) < 0, "id after a failure at a new ms");
        } else {
            idm_test_script_fail(&s, IDM_ERANDOM);
            IDM_ASSERT_RC(idm_ulid_next(g, &x), IDM_ERANDOM);
            idm_test_script_fail(&s, 0);
        }
        idm_ulid_gen_free(g);
    }
    /* Before 1970: IDM_ERANGE. (2^48 ms, year 10889, is beyond every
     * idm_clock, whose wall time is int64 ns; that limit is tested through
     * idm_ulid_build.) The latest time a clock can express works. */
    static const idm_wall_ns bad[] = {-1, -1000000, -INT64_C(1000000000), INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int mono = 0; mono < 2; mono++) {
            idm_test_fixed_clock c;
            idm_test_fixed_init(&c, bad[i]);
            IDM_ASSERT_OK(idm_ulid_gen_new(&g, &c.iface, NULL, mono != 0));
            memset(&x, 0x5A, sizeof x);
            int rc = idm_ulid_next(g, &x);
            CHECK(rc == IDM_ERANGE, "clock at %lld ns: %s, expected IDM_ERANGE", LL(bad[i]),
                  idm_err_name(rc));
            CHECK(idm_error_detail()[0] != '\0', "IDM_ERANGE without detail");
            CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on IDM_ERANGE");
            c.ns = INT64_C(1700000000000000000);
            IDM_ASSERT_OK(idm_ulid_next(g, &x));
            assert_int_equal(idm_ulid_time(&x), INT64_C(1700000000000));
            idm_ulid_gen_free(g);
        }
    }
    static const idm_wall_ns good[] = {0, 1000000, INT64_MAX};
    static const idm_unix_ms good_ms[] = {0, 1, INT64_C(9223372036854)};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        idm_test_fixed_clock c;
        idm_test_fixed_init(&c, good[i]);
        IDM_ASSERT_OK(idm_ulid_gen_new(&g, &c.iface, NULL, true));
        IDM_ASSERT_OK(idm_ulid_next(g, &a));
        assert_int_equal(idm_ulid_time(&a), good_ms[i]);
        idm_ulid_gen_free(g);
    }
    idm_manual_clock_free(mc);
    idm_test_script_done(&s);
}

/* ---- threads ---- */

enum { THREADS = 4, PER_THREAD = 100000 };

/* Mints one ULID from the generator g into out, for the thread harness. */
static int mint_ulid(void *g, void *out) { return idm_ulid_next(g, out); }

/* 4 threads x 100,000 on one monotonic generator (system clock): all
 * distinct, each thread's ids strictly increasing. */
static void ulid_threads(void **state)
{
    idm_ulid_gen *g = NULL;
    idm_ulid *all = malloc((size_t)THREADS * PER_THREAD * sizeof *all);
    idm_test_threads t;
    (void)state;
    assert_non_null(all);
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, NULL, NULL, true));
    idm_test_threads_run(&t, THREADS, mint_ulid, g, all, sizeof *all, PER_THREAD);
    for (int i = 0; i < THREADS; i++) {
        const idm_ulid *ids = all + (size_t)i * PER_THREAD;
        IDM_ASSERT_RC(t.job[i].rc, 0);
        for (size_t k = 1; k < PER_THREAD; k++)
            CHECK(memcmp(&ids[k - 1], &ids[k], 16) < 0,
                  "thread %d: id %zu does not increase", i, k);
    }
    size_t n = (size_t)THREADS * PER_THREAD, dups = idm_test_count_dup16(all, n);
    CHECK(dups == 0, "%zu duplicate ids among %zu", dups, n);
    idm_ulid_gen_free(g);
    free(all);
}

/* ---- fork ---- */

/* Fails the test unless each of the n ids at v is at ms t and, after the
 * first, the previous plus 1: one run of the monotonic sequence. who names
 * the side for the message. */
static void check_run(const idm_ulid *v, size_t n, idm_unix_ms t, const char *who)
{
    for (size_t i = 0; i < n; i++) {
        if (ts48(&v[i]) != t || (i > 0 && !rand_is_next(&v[i - 1], &v[i]))) {
            if (i > 0)
                print_ulid("previous", &v[i - 1]);
            print_ulid("this", &v[i]);
            fail_msg("%s: id %zu is not the previous + 1 at ms %lld", who, i, LL(t));
        }
    }
}

/* What the child of ulid_fork_child_redraws sends back. */
typedef struct redraw_report {
    idm_ulid ids[4];
    uint64_t draws;  /* requests the child made of the rng */
    int vec_pending; /* the child's copy of the rng still holds the vector */
} redraw_report;

/*
 * Monotonic mode, a clock stuck at one ms and a scripted rng: the parent's
 * first id takes the random part A, its next 99 are A+1 .. A+99. Then the
 * rng's next fresh draw is set to B (far from A) and the process forks;
 * parent and child each mint four more ids in the same ms. The parent
 * continues its run (A+100 ..) and draws nothing; the child must restart
 * the sequence: exactly one fresh draw, its first id's random part is B,
 * not the parent's previous + 1, then B+1, B+2, B+3. No id is shared. A
 * child that kept the parent's state would mint A+100 .. A+103, the very
 * ids the parent mints.
 */
static void ulid_fork_child_redraws(void **state)
{
    enum { PRE = 100, POST = 4 };
    const idm_unix_ms t = INT64_C(1700000010000);
    static const uint8_t A[10] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0x00};
    static const uint8_t B[10] = {0xB0, 0x0B, 0xB0, 0x0B, 0xB0, 0x0B, 0xB0, 0x0B, 0x00, 0x00};
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_test_script_rng s;
    idm_ulid_gen *g = NULL;
    idm_ulid pre[PRE], mine[POST], all[PRE + 2 * POST];
    redraw_report theirs;
    idm_test_child child;
    uint64_t draws_at_fork;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), &s.iface, true));
    idm_test_script_vector(&s, A, sizeof A);
    for (int i = 0; i < PRE; i++)
        IDM_ASSERT_OK(idm_ulid_next(g, &pre[i]));
    CHECK(memcmp(pre[0].b + 6, A, 10) == 0, "the first id's random part is not the rng's draw");
    check_run(pre, PRE, t, "parent before fork");
    idm_test_script_vector(&s, B, sizeof B);
    draws_at_fork = s.calls;

    memset(&theirs, 0, sizeof theirs);
    if (idm_test_fork(&child)) {
        for (int i = 0; i < POST; i++)
            if (idm_ulid_next(g, &theirs.ids[i]) != 0)
                _exit(2);
        theirs.draws = s.calls - draws_at_fork;
        theirs.vec_pending = s.vec_pending;
        idm_test_child_send(&child, &theirs, sizeof theirs);
    }
    for (int i = 0; i < POST; i++)
        IDM_ASSERT_OK(idm_ulid_next(g, &mine[i]));
    size_t got = idm_test_child_collect(&child, &theirs, sizeof theirs);
    assert_int_equal(got, sizeof theirs);

    /* The parent: no draw, its run goes on. */
    CHECK(s.calls == draws_at_fork && s.vec_pending,
          "the parent drew random bits after fork within the same ms");
    CHECK(rand_is_next(&pre[PRE - 1], &mine[0]), "the parent did not continue its run after fork");
    check_run(mine, POST, t, "parent after fork");

    /* The child: one fresh draw, B, then B+1 ... */
    if (rand_is_next(&pre[PRE - 1], &theirs.ids[0])) {
        print_ulid("parent's last id before fork", &pre[PRE - 1]);
        print_ulid("child's first id", &theirs.ids[0]);
        fail_msg("the child continued the parent's sequence (previous + 1) instead of "
                 "redrawing its random part");
    }
    CHECK(theirs.draws == 1 && !theirs.vec_pending,
          "the child made %llu draws of the rng (vector %s), expected exactly 1",
          ULL(theirs.draws), theirs.vec_pending ? "still pending" : "taken");
    CHECK(memcmp(theirs.ids[0].b + 6, B, 10) == 0,
          "the child's first random part is not its fresh draw");
    check_run(theirs.ids, POST, t, "child");

    /* No id shared by the parent's ids (before and after) and the child's. */
    memcpy(all, pre, sizeof pre);
    memcpy(all + PRE, mine, sizeof mine);
    memcpy(all + PRE + POST, theirs.ids, sizeof theirs.ids);
    size_t d = idm_test_count_dup16(all, PRE + 2 * POST);
    CHECK(d == 0, "%zu ids shared by parent and child", d);
    idm_ulid_gen_free(g);
    idm_manual_clock_free(mc);
    idm_test_script_done(&s);
}

enum { FORK_N = 10000 };

/* FORK_N ids from the monotonic generator m, then FORK_N from the
 * non-monotonic generator r, into out; 0 or an IDM_E* code. */
static int mint_after_fork(idm_ulid_gen *m, idm_ulid_gen *r, idm_ulid *out)
{
    for (size_t i = 0; i < FORK_N; i++) {
        int rc = idm_ulid_next(m, &out[i]);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < FORK_N; i++) {
        int rc = idm_ulid_next(r, &out[FORK_N + i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/*
 * The same with the system rng, as a service would run: a monotonic and a
 * non-monotonic generator, both used before fork(), on a clock stuck at one
 * ms. After the fork parent and child each mint 10,000 ids from each. The
 * parent's monotonic run continues (previous + 1); the child's is one run
 * of + 1 that starts at a fresh random part, not at the parent's previous
 * + 1 nor anywhere in the parent's run; no id appears on both sides.
 */
static void ulid_fork(void **state)
{
    enum { PRE = 100, N = 2 * FORK_N };
    const idm_unix_ms t = INT64_C(1700000011000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *m = NULL, *r = NULL;
    idm_ulid pre[PRE], r_pre;
    idm_ulid *mine = malloc(N * sizeof *mine), *theirs = malloc(N * sizeof *theirs);
    idm_ulid *all = malloc((PRE + 2 * N) * sizeof *all);
    idm_test_child child;
    (void)state;
    assert_non_null(mine);
    assert_non_null(theirs);
    assert_non_null(all);
    IDM_ASSERT_OK(idm_ulid_gen_new(&m, idm_manual_clock_clock(mc), NULL, true));
    IDM_ASSERT_OK(idm_ulid_gen_new(&r, idm_manual_clock_clock(mc), NULL, false));
    for (int i = 0; i < PRE; i++)
        IDM_ASSERT_OK(idm_ulid_next(m, &pre[i]));
    IDM_ASSERT_OK(idm_ulid_next(r, &r_pre));
    if (idm_test_fork(&child)) {
        int rc = mint_after_fork(m, r, theirs);
        if (rc != 0)
            _exit(10 + -rc);
        idm_test_child_send(&child, theirs, N * sizeof *theirs);
    }
    IDM_ASSERT_OK(mint_after_fork(m, r, mine));
    size_t got = idm_test_child_collect(&child, theirs, N * sizeof *theirs);
    CHECK(got == N * sizeof *theirs, "child sent %zu bytes", got);

    CHECK(rand_is_next(&pre[PRE - 1], &mine[0]), "the parent did not continue its run after fork");
    check_run(mine, FORK_N, t, "parent after fork");
    check_run(theirs, FORK_N, t, "child");
    if (rand_is_next(&pre[PRE - 1], &theirs[0])) {
        print_ulid("parent's last id before fork", &pre[PRE - 1]);
        print_ulid("child's first id", &theirs[0]);
        fail_msg("the child continued the parent's sequence (previous + 1)");
    }
    /* Not anywhere in the parent's run either: the child's random part was
     * redrawn, not continued or shifted. */
    CHECK(!(memcmp(&theirs[0], &pre[0], 16) >= 0 && memcmp(&theirs[0], &mine[FORK_N - 1], 16) <= 0),
          "the child's first id lies inside the parent's run");

    memcpy(all, pre, sizeof pre);
    memcpy(all + PRE, mine, N * sizeof *all);
    memcpy(all + PRE + N, theirs, N * sizeof *all);
    size_t d = idm_test_count_dup16(all, PRE + 2 * N);
    CHECK(d == 0, "%zu ids shared by parent and child after fork", d);
    free(all);
    free(mine);
    free(theirs);
    idm_ulid_gen_free(m);
    idm_ulid_gen_free(r);
    idm_manual_clock_free(mc);
}

/* ---- fork while the generator's lock is held ---- */

/* Monotonic generator on a frozen clock; a second thread holds its lock
 * while the main thread forks (as a thread minting at that moment would).
 * The child, where that thread does not exist, must still mint at once and
 * start afresh: its first id is neither the parent's last plus 1 nor the
 * parent's next id, and its later ids are each the previous plus 1. The
 * parent, once the holder lets go, continues with its last plus 1. */
static void ulid_fork_while_locked(void **state)
{
    const idm_unix_ms t = INT64_C(1700000012000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_ulid last, mine, theirs[4];
    idm_test_lock_holder h;
    idm_test_child child;
    (void)state;
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), NULL, true));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_ulid_next(g, &last));
    idm_test_lock_holder_start(&h, idm__ulid_gen_lock(g));
    if (idm_test_fork(&child)) {
        idm_test_child_deadline();
        for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++)
            if (idm_ulid_next(g, &theirs[i]) != 0)
                _exit(2);
        idm_test_child_send(&child, theirs, sizeof theirs);
    }
    idm_test_lock_holder_stop(&h);
    IDM_ASSERT_OK(idm_ulid_next(g, &mine));
    size_t got = idm_test_collect_bounded(&child, theirs, sizeof theirs);
    assert_int_equal(got, sizeof theirs);

    CHECK(ts48(&mine) == t && rand_is_next(&last, &mine),
          "the parent did not continue its sequence after fork");
    if (rand_is_next(&last, &theirs[0]) || memcmp(&theirs[0], &mine, 16) == 0) {
        print_ulid("parent's last id before fork", &last);
        print_ulid("child's first id", &theirs[0]);
        fail_msg("the child continued the parent's sequence instead of starting afresh");
    }
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        CHECK(ts48(&theirs[i]) == t, "child's id %zu is not at the clock's ms", i);
        CHECK(i == 0 || rand_is_next(&theirs[i - 1], &theirs[i]),
              "the child's id %zu is not the previous + 1", i);
    }
    idm_ulid_gen_free(g);
    idm_manual_clock_free(mc);
}

enum { CHILD_THREADS = 4, CHILD_PER_THREAD = 1000 };

/* The parent holds the monotonic generator's lock while it forks; in the
 * child four threads make their first calls on the generator at once, so
 * several may find it inherited from the parent together. They must all
 * mint promptly, and the child's ids must be one run begun afresh exactly
 * once: sorted, each is the previous plus 1 (a second restart would start
 * a second run at random bits), each thread's ids increase, and the run
 * does not continue the parent's. */
static void ulid_fork_while_locked_child_threads(void **state)
{
    enum { N = CHILD_THREADS * CHILD_PER_THREAD };
    const idm_unix_ms t = INT64_C(1700000013000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_ulid_gen *g = NULL;
    idm_ulid last, *theirs = malloc(N * sizeof *theirs);
    idm_test_child child;
    (void)state;
    assert_non_null(theirs);
    IDM_ASSERT_OK(idm_ulid_gen_new(&g, idm_manual_clock_clock(mc), NULL, true));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_ulid_next(g, &last));
    idm__spin_lock(idm__ulid_gen_lock(g));
    if (idm_test_fork(&child)) {
        idm_test_child_deadline();
        if (idm_test_threads_run_nocheck(CHILD_THREADS, mint_ulid, g, theirs, sizeof *theirs,
                                         CHILD_PER_THREAD) != 0)
            _exit(2);
        idm_test_child_send(&child, theirs, N * sizeof *theirs);
    }
    idm__spin_unlock(idm__ulid_gen_lock(g));
    size_t got = idm_test_collect_bounded(&child, theirs, N * sizeof *theirs);
    assert_int_equal(got, N * sizeof *theirs);

    for (int i = 0; i < CHILD_THREADS; i++) {
        const idm_ulid *ids = theirs + (size_t)i * CHILD_PER_THREAD;
        for (size_t k = 0; k < CHILD_PER_THREAD; k++) {
            CHECK(ts48(&ids[k]) == t, "child thread %d: id %zu not at the clock's ms", i, k);
            CHECK(k == 0 || memcmp(&ids[k - 1], &ids[k], 16) < 0,
                  "child thread %d: id %zu does not increase", i, k);
        }
    }
    qsort(theirs, N, sizeof *theirs, idm_test_cmp16);
    for (size_t i = 1; i < N; i++) {
        if (!rand_is_next(&theirs[i - 1], &theirs[i])) {
            print_ulid("child's id", &theirs[i - 1]);
            print_ulid("next higher", &theirs[i]);
            fail_msg("the child's ids are not one run of +1 (restarted more than once?)");
        }
    }
    CHECK(!rand_is_next(&last, &theirs[0]), "the child continued the parent's sequence");
    free(theirs);
    idm_ulid_gen_free(g);
    idm_manual_clock_free(mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ulid_spec_examples),
        cmocka_unit_test(ulid_range),
        cmocka_unit_test(ulid_parse_reject),
        cmocka_unit_test(ulid_parse_alphabet),
        cmocka_unit_test(ulid_round_trip_random),
        cmocka_unit_test(ulid_uuid_conversion),
        cmocka_unit_test(ulid_monotonic_frozen),
        cmocka_unit_test(ulid_monotonic_overflow),
        cmocka_unit_test(ulid_non_monotonic),
        cmocka_unit_test(ulid_clock_step_back),
        cmocka_unit_test(ulid_errors),
        cmocka_unit_test(ulid_threads),
        cmocka_unit_test(ulid_fork_child_redraws),
        cmocka_unit_test(ulid_fork),
        cmocka_unit_test(ulid_fork_while_locked),
        cmocka_unit_test(ulid_fork_while_locked_child_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
