/* SPDX-License-Identifier: MIT */
/*
 * Tests for idmint/uuid.h: the RFC 9562 test vectors for UUIDv4 (A.3) and
 * UUIDv7 (A.6), built from their parts and minted by generators with an
 * injected rng and clock; nil, max and the RFC 4122 example
 * f81d4fae-7dec-11d0-a765-00a0c91e6bf6 (checked against its decimal value);
 * the strict parser (cases, braces, urn prefix, dashes, lengths, every bad
 * character at every position, embedded NUL, output untouched on failure);
 * the version and variant getters; idm_uuid7_time; and the UUIDv7
 * generator's promises: 1,000,000 ids strictly increasing on a frozen clock
 * with random increments of 1 to 2^32, the 74-bit overflow moving the
 * timestamp on, clock steps back, rng failures, clock range, four threads on
 * one generator, and fork(), also while another thread holds the
 * generator's lock (the child must not inherit it held).
 */
#include "testids.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h" /* idm__uuid7_gen_lock, to hold the lock across fork() */

__extension__ typedef unsigned __int128 u128;

#define MS_LIMIT (INT64_C(1) << 48) /* first ms a UUIDv7 cannot hold */
#define U128_2_32 ((u128)1 << 32)

/* ---- helpers ---- */

static u128 u128_of(const idm_uuid *u)
{
    u128 v = 0;
    for (int i = 0; i < 16; i++)
        v = (v << 8) | u->b[i];
    return v;
}

/* The 74 bits after the timestamp: rand_a (12) then rand_b (62). */
static u128 rand74(const idm_uuid *u)
{
    uint64_t a = ((uint64_t)(u->b[6] & 0x0F) << 8) | u->b[7];
    uint64_t b = (uint64_t)(u->b[8] & 0x3F);
    for (int i = 9; i < 16; i++)
        b = (b << 8) | u->b[i];
    return ((u128)a << 62) | b;
}

/* The 48-bit timestamp in the first 6 bytes. */
static idm_unix_ms ts48(const idm_uuid *u) { return idm_test_be48(u->b); }

/* 12 bits of rand_a then 62 of rand_b, left-aligned in 10 bytes. */
static void pack74(uint16_t rand_a, uint64_t rand_b, uint8_t out[10])
{
    u128 v = (((u128)(rand_a & 0xFFF) << 62) | (rand_b & ((UINT64_C(1) << 62) - 1))) << 6;
    for (int i = 9; i >= 0; i--) {
        out[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* The 16 bytes as an unsigned decimal (schoolbook division by 10). */
static void bytes_to_decimal(const uint8_t in[16], char *out, size_t len)
{
    uint8_t n[16];
    char rev[48];
    size_t k = 0;
    memcpy(n, in, 16);
    for (;;) {
        unsigned rem = 0;
        int zero = 1;
        for (int i = 0; i < 16; i++) {
            unsigned cur = rem * 256 + n[i];
            n[i] = (uint8_t)(cur / 10);
            rem = cur % 10;
            if (n[i] != 0)
                zero = 0;
        }
        rev[k++] = (char)('0' + rem);
        if (zero)
            break;
    }
    assert_true(k < len);
    for (size_t i = 0; i < k; i++)
        out[i] = rev[k - 1 - i];
    out[k] = '\0';
}

static void expect_text(const idm_uuid *u, const char *want)
{
    char txt[IDM_UUID_TEXT_MAX];
    memset(txt, 'x', sizeof txt);
    idm_uuid_format(u, txt);
    CHECK(txt[36] == '\0' && strcmp(txt, want) == 0, "formatted \"%.37s\", expected \"%s\"", txt,
          want);
}

static void print_uuid(const char *what, const idm_uuid *u)
{
    char txt[IDM_UUID_TEXT_MAX];
    idm_uuid_format(u, txt);
    print_error("%s: %s\n", what, txt);
}

/* ---- RFC 9562 vectors ---- */

static const char A3_RANDOM[] = "919108F752D133205BACF847DB4148A8";
static const char A3_TEXT[] = "919108f7-52d1-4320-9bac-f847db4148a8";

/* RFC 9562 appendix A.3 through idm_uuid4_from_bytes. */
static void uuid4_rfc_vector_from_bytes(void **state)
{
    uint8_t rnd[16];
    idm_uuid u;
    (void)state;
    idm_test_hex_to_bytes(A3_RANDOM, rnd, 16);
    memset(&u, 0x77, sizeof u);
    idm_uuid4_from_bytes(rnd, &u);
    expect_text(&u, A3_TEXT);
    assert_int_equal(idm_uuid_version(&u), 4);
    assert_int_equal(idm_uuid_variant(&u), IDM_UUID_VARIANT_RFC);
    /* Only the version nibble and the variant bits change. */
    for (int i = 0; i < 16; i++) {
        uint8_t mask = i == 6 ? 0x0F : i == 8 ? 0x3F : 0xFF;
        CHECK((u.b[i] & mask) == (rnd[i] & mask), "byte %d changed beyond its fixed bits", i);
    }
    /* Whatever the input's version and variant bits, the output is v4/rfc. */
    uint8_t all[16];
    memset(all, 0xFF, sizeof all);
    idm_uuid4_from_bytes(all, &u);
    expect_text(&u, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    memset(all, 0x00, sizeof all);
    idm_uuid4_from_bytes(all, &u);
    expect_text(&u, "00000000-0000-4000-8000-000000000000");
}

/* RFC 9562 appendix A.3 through idm_uuid4 with an rng returning the bytes. */
static void uuid4_rfc_vector_from_rng(void **state)
{
    idm_test_script_rng s;
    uint8_t rnd[16];
    idm_uuid u;
    (void)state;
    idm_test_script_init(&s);
    idm_test_hex_to_bytes(A3_RANDOM, rnd, 16);
    idm_test_script_set(&s, rnd, 16);
    IDM_ASSERT_OK(idm_uuid4(&s.iface, &u));
    expect_text(&u, A3_TEXT);
    CHECK(s.calls >= 1, "idm_uuid4 did not ask the injected rng");

    /* An rng failure is IDM_ERANDOM and leaves the output untouched. */
    idm_test_script_fail(&s, IDM_ERANDOM);
    memset(&u, 0x5A, sizeof u);
    IDM_ASSERT_RC(idm_uuid4(&s.iface, &u), IDM_ERANDOM);
    CHECK(idm_test_all_bytes_are(u.b, 16, 0x5A), "idm_uuid4 wrote its output on failure");
    idm_test_script_done(&s);
}

/* The system rng: 10,000 UUIDv4, all version 4, variant rfc, distinct. */
static void uuid4_system(void **state)
{
    enum { N = 10000 };
    idm_uuid *v = malloc(N * sizeof *v);
    (void)state;
    assert_non_null(v);
    for (size_t i = 0; i < N; i++) {
        IDM_ASSERT_OK(idm_uuid4(i % 2 ? NULL : idm_rng_system(), &v[i]));
        assert_int_equal(idm_uuid_version(&v[i]), 4);
        assert_int_equal(idm_uuid_variant(&v[i]), IDM_UUID_VARIANT_RFC);
    }
    qsort(v, N, sizeof *v, idm_test_cmp16);
    for (size_t i = 1; i < N; i++)
        CHECK(memcmp(&v[i - 1], &v[i], 16) != 0, "repeated UUIDv4");
    free(v);
}

static const idm_unix_ms A6_MS = INT64_C(0x017F22E279B0);
static const char A6_TEXT[] = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";

/* RFC 9562 appendix A.6 through idm_uuid7_build. */
static void uuid7_rfc_vector_build(void **state)
{
    uint8_t rnd[10], want[10];
    idm_uuid u;
    idm_unix_ms ms = -1;
    (void)state;
    assert_int_equal(A6_MS, INT64_C(1645557742000));
    /* rand_b is 0b01 then 0x8C4DC0C0C07398F: 0x18C4DC0C0C07398F in 62 bits. */
    pack74(0xCC3, UINT64_C(0x18C4DC0C0C07398F), rnd);
    idm_test_hex_to_bytes("cc363137030301ce63c0", want, 10);
    assert_memory_equal(rnd, want, 10);
    memset(&u, 0x77, sizeof u);
    IDM_ASSERT_OK(idm_uuid7_build(A6_MS, rnd, &u));
    expect_text(&u, A6_TEXT);
    assert_int_equal(idm_uuid_version(&u), 7);
    assert_int_equal(idm_uuid_variant(&u), IDM_UUID_VARIANT_RFC);
    IDM_ASSERT_OK(idm_uuid7_time(&u, &ms));
    assert_int_equal(ms, A6_MS);

    /* The last 6 bits of rand[9] are ignored. */
    for (uint8_t low = 1; low < 64; low++) {
        idm_uuid w;
        rnd[9] = (uint8_t)(0xC0 | low);
        IDM_ASSERT_OK(idm_uuid7_build(A6_MS, rnd, &w));
        CHECK(memcmp(&w, &u, 16) == 0, "rand[9] low bits 0x%02x changed the UUID", low);
    }

    /* All ones, at the last ms. */
    uint8_t ones[10];
    memset(ones, 0xFF, sizeof ones);
    IDM_ASSERT_OK(idm_uuid7_build(MS_LIMIT - 1, ones, &u));
    expect_text(&u, "ffffffff-ffff-7fff-bfff-ffffffffffff");
    IDM_ASSERT_OK(idm_uuid7_time(&u, &ms));
    assert_int_equal(ms, MS_LIMIT - 1);
    memset(ones, 0, sizeof ones);
    IDM_ASSERT_OK(idm_uuid7_build(0, ones, &u));
    expect_text(&u, "00000000-0000-7000-8000-000000000000");
    IDM_ASSERT_OK(idm_uuid7_time(&u, &ms));
    assert_int_equal(ms, 0);

    /* Out of range ms: IDM_ERANGE, output untouched. */
    static const idm_unix_ms bad[] = {-1, MS_LIMIT, MS_LIMIT + 1, INT64_MIN, INT64_MAX,
                                      -INT64_C(1645557742000)};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&u, 0x5A, sizeof u);
        IDM_ASSERT_RC(idm_uuid7_build(bad[i], rnd, &u), IDM_ERANGE);
        CHECK(idm_test_all_bytes_are(u.b, 16, 0x5A), "build(%lld) wrote its output on failure",
              LL(bad[i]));
        CHECK(idm_error_detail()[0] != '\0', "build(%lld) left no detail", LL(bad[i]));
    }
}

/* RFC 9562 appendix A.6 through a generator: a frozen manual clock at the
 * vector's ms and an rng whose next fresh draw (the first request of 10 or
 * more bytes) is the vector's 10 bytes. */
static void uuid7_rfc_vector_generator(void **state)
{
    idm_test_script_rng s;
    uint8_t rnd[10];
    idm_uuid7_gen *g = NULL;
    idm_manual_clock *mc = idm_test_frozen_clock(A6_MS);
    idm_uuid u, next;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), &s.iface));
    pack74(0xCC3, UINT64_C(0x18C4DC0C0C07398F), rnd);
    idm_test_script_vector(&s, rnd, 10);
    IDM_ASSERT_OK(idm_uuid7_next(g, &u));
    expect_text(&u, A6_TEXT);
    CHECK(!s.vec_pending, "the generator never drew 10 fresh bytes");
    /* The next id in the same ms: the vector plus 1 to 2^32. */
    IDM_ASSERT_OK(idm_uuid7_next(g, &next));
    u128 d = rand74(&next) - rand74(&u);
    CHECK(ts48(&next) == A6_MS && d >= 1 && d <= U128_2_32,
          "second id not the vector plus 1..2^32 in the same ms");
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
    idm_test_script_done(&s);
}

/* ---- nil, max, the RFC 4122 example ---- */

static void uuid_nil_max(void **state)
{
    idm_uuid u;
    (void)state;
    memset(&u, 0x5A, sizeof u);
    IDM_ASSERT_OK(idm_uuid_parse("00000000-0000-0000-0000-000000000000", &u));
    CHECK(idm_test_all_bytes_are(u.b, 16, 0), "nil is not 16 zero bytes");
    expect_text(&u, "00000000-0000-0000-0000-000000000000");
    assert_int_equal(idm_uuid_version(&u), 0);
    assert_int_equal(idm_uuid_variant(&u), IDM_UUID_VARIANT_NCS);

    memset(&u, 0x5A, sizeof u);
    IDM_ASSERT_OK(idm_uuid_parse("ffffffff-ffff-ffff-ffff-ffffffffffff", &u));
    CHECK(idm_test_all_bytes_are(u.b, 16, 0xFF), "max is not 16 0xff bytes");
    expect_text(&u, "ffffffff-ffff-ffff-ffff-ffffffffffff");
    assert_int_equal(idm_uuid_version(&u), 15);
    assert_int_equal(idm_uuid_variant(&u), IDM_UUID_VARIANT_FUTURE);
    memset(&u, 0x5A, sizeof u);
    IDM_ASSERT_OK(idm_uuid_parse("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", &u));
    CHECK(idm_test_all_bytes_are(u.b, 16, 0xFF), "upper-case max is not 16 0xff bytes");
    expect_text(&u, "ffffffff-ffff-ffff-ffff-ffffffffffff");
}

static const char EX_TEXT[] = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6";

/* f81d4fae-7dec-11d0-a765-00a0c91e6bf6 is the integer
 * 329800735698586629295641978511506172918, version 1, variant rfc. */
static void uuid_rfc_example_integer(void **state)
{
    idm_uuid u;
    char dec[64];
    (void)state;
    IDM_ASSERT_OK(idm_uuid_parse(EX_TEXT, &u));
    bytes_to_decimal(u.b, dec, sizeof dec);
    assert_string_equal(dec, "329800735698586629295641978511506172918");
    assert_int_equal(idm_uuid_version(&u), 1);
    assert_int_equal(idm_uuid_variant(&u), IDM_UUID_VARIANT_RFC);
    expect_text(&u, EX_TEXT);
    /* The decimal helper itself, on known values. */
    uint8_t b[16];
    memset(b, 0, sizeof b);
    bytes_to_decimal(b, dec, sizeof dec);
    assert_string_equal(dec, "0");
    memset(b, 0xFF, sizeof b);
    bytes_to_decimal(b, dec, sizeof dec);
    assert_string_equal(dec, "340282366920938463463374607431768211455");
}

/* ---- parser ---- */

static void expect_parse(const char *text, const idm_uuid *want)
{
    idm_uuid u;
    memset(&u, 0x5A, sizeof u);
    int rc = idm_uuid_parse(text, &u);
    if (rc != 0) {
        print_error("idm_uuid_parse(\"%s\") returned %s; detail: %s\n", text, idm_err_name(rc),
                    idm_error_detail());
        fail();
    }
    CHECK(memcmp(&u, want, 16) == 0, "\"%s\" parsed to other bytes", text);
}

/* Rejected with IDM_EPARSE, a detail, the output untouched. */
static void expect_reject(const char *text, const char *why)
{
    idm_uuid u;
    memset(&u, 0x5A, sizeof u);
    idm_test_check_rejected("idm_uuid_parse", idm_uuid_parse(text, &u), u.b, sizeof u.b, text, why);
}

static void uuid_parse_cases(void **state)
{
    idm_uuid want;
    (void)state;
    IDM_ASSERT_OK(idm_uuid_parse(EX_TEXT, &want));
    uint8_t bytes[16];
    idm_test_hex_to_bytes("f81d4fae7dec11d0a76500a0c91e6bf6", bytes, 16);
    assert_memory_equal(want.b, bytes, 16);
    expect_parse("F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6", &want);
    expect_parse("F81d4FaE-7dEc-11D0-a765-00A0c91E6bF6", &want);
    expect_parse("f81D4fAe-7DeC-11d0-A765-00a0C91e6Bf6", &want);
    /* Every hex digit in both cases. */
    idm_uuid w2;
    idm_test_hex_to_bytes("0123456789abcdefabcdef0123456789", w2.b, 16);
    expect_parse("01234567-89ab-cdef-abcd-ef0123456789", &w2);
    expect_parse("01234567-89AB-CDEF-ABCD-EF0123456789", &w2);
    expect_text(&w2, "01234567-89ab-cdef-abcd-ef0123456789");
}

static const int DASHES[4] = {8, 13, 18, 23};

static int is_dash_pos(int i) { return i == 8 || i == 13 || i == 18 || i == 23; }

static int is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

static void uuid_parse_reject(void **state)
{
    char t[128];
    (void)state;
    expect_reject("{f81d4fae-7dec-11d0-a765-00a0c91e6bf6}", "braces");
    expect_reject("{f81d4fae-7dec-11d0-a765-00a0c91e6b}", "braces, 36 chars");
    expect_reject("urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "urn prefix");
    expect_reject("URN:UUID:f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "urn prefix");
    expect_reject("f81d4fae7dec11d0a76500a0c91e6bf6", "no dashes");
    expect_reject("f81d4fae7dec11d0a76500a0c91e6bf6abcd", "no dashes, 36 chars");
    expect_reject("", "empty");
    expect_reject("-", "a dash");
    expect_reject("------------------------------------", "36 dashes");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf", "35 chars");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf60", "37 chars");
    expect_reject("0f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "37 chars, leading digit");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf6-", "trailing dash");
    expect_reject(" f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "leading space");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf6 ", "trailing space");
    expect_reject(" f81d4fae-7dec-11d0-a765-00a0c91e6bf", "leading space, 36 chars");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf\n", "trailing newline, 36 chars");
    expect_reject("f81d4fae 7dec 11d0 a765 00a0c91e6bf6", "spaces for dashes");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf6\n", "trailing newline");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf6junk", "36 chars then junk");
    expect_reject("f81d4fae-7dec-11d0-a765-00a0c91e6bf6f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
                  "two uuids");
    expect_reject("0xf81d4fae-7dec-11d0-a765-00a0c91e6b", "0x prefix");
    expect_reject("+f81d4fa-7dec-11d0-a765-00a0c91e6bf6", "sign");

    /* Each dash removed (35 chars), doubled (37 chars), or moved one place
     * either way (36 chars). */
    for (int k = 0; k < 4; k++) {
        int p = DASHES[k];
        snprintf(t, sizeof t, "%.*s%s", p, EX_TEXT, EX_TEXT + p + 1);
        expect_reject(t, "a dash missing");
        snprintf(t, sizeof t, "%.*s-%s", p, EX_TEXT, EX_TEXT + p);
        expect_reject(t, "a dash doubled");
        strcpy(t, EX_TEXT);
        t[p] = t[p - 1];
        t[p - 1] = '-';
        expect_reject(t, "a dash one place early");
        strcpy(t, EX_TEXT);
        t[p] = t[p + 1];
        t[p + 1] = '-';
        expect_reject(t, "a dash one place late");
    }
    /* The dashes of the 8-4-4-4-12 groups shuffled: 4-8-4-4-12 etc. */
    expect_reject("f81d-4fae7dec-11d0-a765-00a0c91e6bf6", "groups 4-8");
    expect_reject("f81d4fae-7dec11d0-a765-00a0-c91e6bf6", "groups 8-8-4-4-8");

    /* Every position, every kind of wrong character: non-hex where a digit
     * belongs (letters just past f/F, the characters on either side of the
     * digit and letter ranges, space, dash, controls, high bytes), and
     * anything but a dash where a dash belongs. */
    static const char bad_hex[] = "gGzZ-_ /:@`[{~+.\x01\x7f\x80\xff";
    static const char bad_dash[] = "0aAfF_ +~:\x80";
    for (int i = 0; i < 36; i++) {
        const char *bad = is_dash_pos(i) ? bad_dash : bad_hex;
        for (const char *c = bad; *c != '\0'; c++) {
            char why[64];
            strcpy(t, EX_TEXT);
            t[i] = *c;
            snprintf(why, sizeof why, "0x%02x at position %d", (unsigned)(uint8_t)*c, i);
            expect_reject(t, why);
        }
    }
}

/* The text ends at the first NUL: every prefix of a valid UUID, in a heap
 * buffer exactly its size (so a read past the NUL is caught under ASan),
 * is rejected; so is the valid text with a NUL in place of any character. */
static void uuid_parse_embedded_nul(void **state)
{
    (void)state;
    for (size_t k = 0; k < 36; k++) {
        char *p = malloc(k + 1);
        assert_non_null(p);
        memcpy(p, EX_TEXT, k);
        p[k] = '\0';
        expect_reject(p, "a prefix");
        free(p);
    }
    for (size_t k = 0; k < 36; k++) {
        char buf[48];
        memcpy(buf, EX_TEXT, sizeof EX_TEXT);
        buf[k] = '\0';
        expect_reject(buf, "NUL inside, text continues after it");
    }
    /* The whole valid text in an exact-size heap buffer parses. */
    char *p = malloc(sizeof EX_TEXT);
    idm_uuid want, got;
    assert_non_null(p);
    memcpy(p, EX_TEXT, sizeof EX_TEXT);
    idm_test_hex_to_bytes("f81d4fae7dec11d0a76500a0c91e6bf6", want.b, 16);
    IDM_ASSERT_OK(idm_uuid_parse(p, &got));
    assert_memory_equal(got.b, want.b, 16);
    free(p);
}

/* format then parse is the identity, on seeded random bytes; text order is
 * byte order. */
static void uuid_format_parse_random(void **state)
{
    idm_test_rng r;
    idm_uuid a, b, c;
    char ta[IDM_UUID_TEXT_MAX], tb[IDM_UUID_TEXT_MAX];
    (void)state;
    idm_test_rng_init(&r, idm_test_seed());
    for (int i = 0; i < 20000; i++) {
        for (int k = 0; k < 16; k++) {
            a.b[k] = (uint8_t)idm_test_rng_next(&r);
            b.b[k] = (uint8_t)idm_test_rng_next(&r);
        }
        if (i % 4 == 0)
            memcpy(b.b, a.b, (size_t)idm_test_rng_range(&r, 0, 16)); /* share a prefix */
        idm_uuid_format(&a, ta);
        idm_uuid_format(&b, tb);
        assert_int_equal(strlen(ta), 36);
        for (int k = 0; k < 36; k++)
            CHECK(is_dash_pos(k) ? ta[k] == '-' : is_lower_hex(ta[k]), "bad character in \"%s\"",
                  ta);
        IDM_ASSERT_OK(idm_uuid_parse(ta, &c));
        assert_memory_equal(c.b, a.b, 16);
        int bc = memcmp(&a, &b, 16), tc = strcmp(ta, tb);
        CHECK((bc < 0) == (tc < 0) && (bc == 0) == (tc == 0), "text order differs from byte order");
    }
}

/* ---- getters ---- */

static int expected_variant(uint8_t b8)
{
    if ((b8 & 0x80) == 0)
        return IDM_UUID_VARIANT_NCS;
    if ((b8 & 0xC0) == 0x80)
        return IDM_UUID_VARIANT_RFC;
    if ((b8 & 0xE0) == 0xC0)
        return IDM_UUID_VARIANT_MICROSOFT;
    return IDM_UUID_VARIANT_FUTURE;
}

/* Every version nibble and every value of octet 8. */
static void uuid_version_variant(void **state)
{
    idm_uuid u;
    (void)state;
    for (int v = 0; v < 16; v++) {
        for (int b8 = 0; b8 < 256; b8++) {
            for (int fill = 0; fill < 2; fill++) {
                memset(&u, fill ? 0xFF : 0x00, sizeof u);
                u.b[6] = (uint8_t)((v << 4) | (fill ? 0x0F : 0x00));
                u.b[8] = (uint8_t)b8;
                CHECK(idm_uuid_version(&u) == v, "version of nibble %d read as %d", v,
                      idm_uuid_version(&u));
                CHECK(idm_uuid_variant(&u) == expected_variant((uint8_t)b8),
                      "variant of octet 8 = 0x%02x read as %d, expected %d", b8,
                      idm_uuid_variant(&u), expected_variant((uint8_t)b8));
            }
        }
    }
}

/* idm_uuid7_time: the ms of a v7, IDM_EINVAL for any other version or for
 * a v7 nibble with a non-rfc variant. */
static void uuid7_time_getter(void **state)
{
    idm_uuid u;
    idm_unix_ms ms;
    uint8_t rnd[10];
    (void)state;
    memset(rnd, 0x3C, sizeof rnd);
    IDM_ASSERT_OK(idm_uuid7_build(INT64_C(1700000000123), rnd, &u));
    ms = -5;
    IDM_ASSERT_OK(idm_uuid7_time(&u, &ms));
    assert_int_equal(ms, INT64_C(1700000000123));

    /* v4 */
    uint8_t r16[16];
    memset(r16, 0x01, sizeof r16);
    idm_uuid4_from_bytes(r16, &u);
    IDM_ASSERT_RC(idm_uuid7_time(&u, &ms), IDM_EINVAL);

    /* Every other version with the rfc variant. */
    IDM_ASSERT_OK(idm_uuid7_build(INT64_C(1700000000123), rnd, &u));
    for (int v = 0; v < 16; v++) {
        idm_uuid w = u;
        w.b[6] = (uint8_t)((v << 4) | (w.b[6] & 0x0F));
        if (v == 7) {
            IDM_ASSERT_OK(idm_uuid7_time(&w, &ms));
            assert_int_equal(ms, INT64_C(1700000000123));
        } else {
            IDM_ASSERT_RC(idm_uuid7_time(&w, &ms), IDM_EINVAL);
        }
    }
    /* Version 7 with every non-rfc variant pattern. */
    for (int b8 = 0; b8 < 256; b8++) {
        idm_uuid w = u;
        w.b[8] = (uint8_t)b8;
        if (expected_variant((uint8_t)b8) == IDM_UUID_VARIANT_RFC)
            IDM_ASSERT_OK(idm_uuid7_time(&w, &ms));
        else
            IDM_ASSERT_RC(idm_uuid7_time(&w, &ms), IDM_EINVAL);
    }
    memset(&u, 0, sizeof u);
    IDM_ASSERT_RC(idm_uuid7_time(&u, &ms), IDM_EINVAL); /* nil */
    memset(&u, 0xFF, sizeof u);
    IDM_ASSERT_RC(idm_uuid7_time(&u, &ms), IDM_EINVAL); /* max */
}

/* ---- the UUIDv7 generator ---- */

/* A generator's id: version 7, variant rfc. */
static void check_v7(const idm_uuid *cur)
{
    CHECK(idm_uuid_version(cur) == 7, "version %d", idm_uuid_version(cur));
    CHECK(idm_uuid_variant(cur) == IDM_UUID_VARIANT_RFC, "variant %d", idm_uuid_variant(cur));
}

/* 1,000,000 ids on a frozen clock: strictly increasing as bytes and text,
 * v7, rfc, the clock's ms, each the previous plus 1 to 2^32 in the 74 bits,
 * and the increments random: not all equal, spread over the range. */
static void uuid7_monotonic_frozen(void **state)
{
    enum { N = 1000000 };
    const idm_unix_ms t = INT64_C(1700000000123);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_uuid prev, cur;
    char tprev[IDM_UUID_TEXT_MAX], tcur[IDM_UUID_TEXT_MAX];
    u128 first_diff = 0, max_diff = 0, min_diff = ~(u128)0;
    int diffs_differ = 0;
    idm_unix_ms ms = t;
    (void)state;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    IDM_ASSERT_OK(idm_uuid7_next(g, &prev));
    check_v7(&prev);
    assert_int_equal(ts48(&prev), t);
    idm_uuid_format(&prev, tprev);
    for (size_t i = 1; i < N; i++) {
        IDM_ASSERT_OK(idm_uuid7_next(g, &cur));
        idm_uuid_format(&cur, tcur);
        if (memcmp(&prev, &cur, 16) >= 0 || strcmp(tprev, tcur) >= 0) {
            print_uuid("previous", &prev);
            print_uuid("next", &cur);
            fail_msg("id %zu does not increase", i);
        }
        check_v7(&cur);
        if (ts48(&cur) != ms) {
            /* Only a 74-bit overflow may move the ms on (one in 2^22 runs:
             * 10^6 increments of at most 2^32 from a random start). */
            if (ts48(&cur) != ms + 1 || rand74(&prev) < ((u128)1 << 74) - U128_2_32) {
                print_uuid("previous", &prev);
                print_uuid("next", &cur);
                fail_msg("id %zu has ms %lld on a clock frozen at %lld", i, LL(ts48(&cur)), LL(t));
            }
            print_message("# the 74 bits overflowed after %zu ids\n", i);
            ms++;
            prev = cur;
            memcpy(tprev, tcur, sizeof tcur);
            continue;
        }
        u128 d = rand74(&cur) - rand74(&prev);
        if (d < 1 || d > U128_2_32) {
            print_uuid("previous", &prev);
            print_uuid("next", &cur);
            fail_msg("id %zu: increment outside 1..2^32", i);
        }
        if (i == 1)
            first_diff = d;
        else if (i < 1000 && d != first_diff)
            diffs_differ = 1;
        if (d > max_diff)
            max_diff = d;
        if (d < min_diff)
            min_diff = d;
        prev = cur;
        memcpy(tprev, tcur, sizeof tcur);
    }
    CHECK(diffs_differ, "the first 1000 increments are all equal");
    /* Uniform increments in 1..2^32: over 10^6 draws the largest is above
     * 2^31 and the smallest below 2^31 except with probability 2^-10^6. */
    CHECK(max_diff > ((u128)1 << 31) && min_diff < ((u128)1 << 31),
          "increments do not span 1..2^32 (min %llu, max %llu)", ULL(min_diff), ULL(max_diff));
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
}

/* The 74 bits full: the next id moves the timestamp one ms ahead of the
 * frozen clock with fresh bits; ids keep that ms until the clock passes it. */
static void uuid7_overflow_moves_time(void **state)
{
    const idm_unix_ms t = INT64_C(1700000000000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_test_script_rng s;
    uint8_t ones[10];
    idm_uuid a, b, c, d;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), &s.iface));
    memset(ones, 0xFF, sizeof ones);
    idm_test_script_vector(&s, ones, 10);
    IDM_ASSERT_OK(idm_uuid7_next(g, &a));
    CHECK(ts48(&a) == t && rand74(&a) == (((u128)1 << 74) - 1),
          "first id not all ones at the clock's ms");
    IDM_ASSERT_OK(idm_uuid7_next(g, &b));
    CHECK(ts48(&b) == t + 1, "after the 74 bits overflowed: ms %lld, expected %lld",
          LL(ts48(&b)), LL(t + 1));
    CHECK(memcmp(&a, &b, 16) < 0, "ids decreased at the overflow");
    check_v7(&b);
    IDM_ASSERT_OK(idm_uuid7_next(g, &c));
    CHECK(ts48(&c) == t + 1 && memcmp(&b, &c, 16) < 0, "id after the overflow");
    idm_manual_clock_set(mc, t + 1);
    IDM_ASSERT_OK(idm_uuid7_next(g, &d));
    CHECK(ts48(&d) == t + 1 && memcmp(&c, &d, 16) < 0, "clock at the generator's ms");
    idm_manual_clock_set(mc, t + 2);
    IDM_ASSERT_OK(idm_uuid7_next(g, &a));
    CHECK(ts48(&a) == t + 2 && memcmp(&d, &a, 16) < 0, "clock past the generator's ms");
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
    idm_test_script_done(&s);
}

/* The clock steps back 1 ms and 10 s: ids keep increasing and keep the last
 * ms until the clock passes it. */
static void uuid7_clock_step_back(void **state)
{
    const idm_unix_ms t = INT64_C(1700000005000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_uuid prev, cur;
    (void)state;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    IDM_ASSERT_OK(idm_uuid7_next(g, &prev));
    assert_int_equal(ts48(&prev), t);
    static const idm_unix_ms clock_at[] = {-1, -10000, 0, -1, -9999}; /* relative to t */
    for (size_t k = 0; k < sizeof clock_at / sizeof clock_at[0]; k++) {
        idm_manual_clock_set(mc, t + clock_at[k]);
        for (int i = 0; i < 1000; i++) {
            IDM_ASSERT_OK(idm_uuid7_next(g, &cur));
            CHECK(ts48(&cur) == t, "clock at t%+lld: id ms %lld, expected the last ms %lld",
                  LL(clock_at[k]), LL(ts48(&cur)), LL(t));
            CHECK(memcmp(&prev, &cur, 16) < 0, "clock at t%+lld: ids decreased", LL(clock_at[k]));
            prev = cur;
        }
    }
    idm_manual_clock_set(mc, t + 1);
    IDM_ASSERT_OK(idm_uuid7_next(g, &cur));
    CHECK(ts48(&cur) == t + 1 && memcmp(&prev, &cur, 16) < 0, "clock past the last ms");
    prev = cur;
    /* A step back from there: t+1 is kept. */
    idm_manual_clock_advance(mc, -10000);
    IDM_ASSERT_OK(idm_uuid7_next(g, &cur));
    CHECK(ts48(&cur) == t + 1 && memcmp(&prev, &cur, 16) < 0, "second step back");
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
}

/* An rng failure: IDM_ERANDOM, output untouched, and the next successful id
 * still increases (first id of a ms and a later one alike). */
static void uuid7_rng_failure(void **state)
{
    const idm_unix_ms t = INT64_C(1700000007000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_test_script_rng s;
    idm_uuid a, b, x;
    (void)state;
    idm_test_script_init(&s);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), &s.iface));

    /* The very first id. */
    idm_test_script_fail(&s, IDM_ERANDOM);
    memset(&x, 0x5A, sizeof x);
    IDM_ASSERT_RC(idm_uuid7_next(g, &x), IDM_ERANDOM);
    CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on rng failure");
    idm_test_script_fail(&s, 0);
    IDM_ASSERT_OK(idm_uuid7_next(g, &a));
    assert_int_equal(ts48(&a), t);

    /* Within the ms. */
    for (int i = 0; i < 3; i++) {
        idm_test_script_fail(&s, IDM_ERANDOM);
        memset(&x, 0x5A, sizeof x);
        IDM_ASSERT_RC(idm_uuid7_next(g, &x), IDM_ERANDOM);
        CHECK(idm_test_all_bytes_are(x.b, 16, 0x5A), "output written on rng failure");
    }
    idm_test_script_fail(&s, 0);
    IDM_ASSERT_OK(idm_uuid7_next(g, &b));
    u128 d = rand74(&b) - rand74(&a);
    CHECK(ts48(&b) == t && memcmp(&a, &b, 16) < 0 && d >= 1 && d <= U128_2_32,
          "the id after a failed one is not the previous plus 1..2^32");

    /* At a new ms. */
    idm_manual_clock_advance(mc, 1);
    idm_test_script_fail(&s, IDM_ERANDOM);
    IDM_ASSERT_RC(idm_uuid7_next(g, &x), IDM_ERANDOM);
    idm_test_script_fail(&s, 0);
    IDM_ASSERT_OK(idm_uuid7_next(g, &a));
    CHECK(ts48(&a) == t + 1 && memcmp(&b, &a, 16) < 0, "the id after a failure at a new ms");

    /* A failure while the clock is behind. */
    idm_manual_clock_set(mc, t - 50);
    idm_test_script_fail(&s, IDM_ERANDOM);
    IDM_ASSERT_RC(idm_uuid7_next(g, &x), IDM_ERANDOM);
    idm_test_script_fail(&s, 0);
    IDM_ASSERT_OK(idm_uuid7_next(g, &b));
    CHECK(ts48(&b) == t + 1 && memcmp(&a, &b, 16) < 0, "the id after a failure, clock behind");
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
    idm_test_script_done(&s);
}

/*
 * The clock before 1970: IDM_ERANGE, output untouched, and ids again once
 * it is back. 0 ms works, and so does the latest wall time an idm_clock can
 * express (INT64_MAX ns, 2262-04-11, ms 9223372036854). The other end of
 * the range, 2^48 ms (year 10889), is beyond every idm_clock: the 2^48
 * limit is tested through idm_uuid7_build.
 */
static void uuid7_clock_range(void **state)
{
    static const idm_wall_ns bad[] = {-1, -1000000, -INT64_C(1000000000), -INT64_C(86400000000000),
                                      INT64_MIN};
    idm_uuid u;
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        idm_test_fixed_clock c;
        idm_uuid7_gen *g = NULL;
        idm_test_fixed_init(&c, bad[i]);
        IDM_ASSERT_OK(idm_uuid7_gen_new(&g, &c.iface, NULL));
        memset(&u, 0x5A, sizeof u);
        int rc = idm_uuid7_next(g, &u);
        CHECK(rc == IDM_ERANGE, "clock at %lld ns: %s, expected IDM_ERANGE", LL(bad[i]),
              idm_err_name(rc));
        CHECK(idm_error_detail()[0] != '\0', "clock at %lld ns: no detail", LL(bad[i]));
        CHECK(idm_test_all_bytes_are(u.b, 16, 0x5A), "clock at %lld ns: output written",
              LL(bad[i]));
        /* The clock comes back into range: ids again. */
        c.ns = INT64_C(1700000000000000000);
        IDM_ASSERT_OK(idm_uuid7_next(g, &u));
        assert_int_equal(ts48(&u), INT64_C(1700000000000));
        idm_uuid7_gen_free(g);
    }
    static const idm_wall_ns good[] = {0, 999999, 1000000, INT64_MAX};
    static const idm_unix_ms good_ms[] = {0, 0, 1, INT64_C(9223372036854)};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        idm_test_fixed_clock c;
        idm_uuid7_gen *g = NULL;
        idm_unix_ms ms = -5;
        idm_test_fixed_init(&c, good[i]);
        IDM_ASSERT_OK(idm_uuid7_gen_new(&g, &c.iface, NULL));
        IDM_ASSERT_OK(idm_uuid7_next(g, &u));
        IDM_ASSERT_OK(idm_uuid7_time(&u, &ms));
        assert_int_equal(ms, good_ms[i]);
        idm_uuid7_gen_free(g);
    }
    /* A clock stepping back before 1970 after ids in range: never an id
     * before the last one. */
    idm_test_fixed_clock c;
    idm_uuid7_gen *g = NULL;
    idm_uuid prev;
    idm_test_fixed_init(&c, INT64_C(1700000000000000000));
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, &c.iface, NULL));
    IDM_ASSERT_OK(idm_uuid7_next(g, &prev));
    c.ns = -1;
    memset(&u, 0x5A, sizeof u);
    int rc = idm_uuid7_next(g, &u);
    CHECK(rc == IDM_ERANGE || (rc == 0 && memcmp(&prev, &u, 16) < 0),
          "clock before 1970 after an id: %s", idm_err_name(rc));
    idm_uuid7_gen_free(g);
}

/* The generator reads the injected clock (a moving one): each id carries
 * the clock's ms and a new ms takes fresh bits. */
static void uuid7_follows_clock(void **state)
{
    const idm_unix_ms t = INT64_C(1700000009000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_uuid prev, cur;
    (void)state;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    IDM_ASSERT_OK(idm_uuid7_next(g, &prev));
    for (int i = 1; i <= 2000; i++) {
        idm_manual_clock_advance_ns(mc, 700000); /* 0.7 ms */
        IDM_ASSERT_OK(idm_uuid7_next(g, &cur));
        assert_int_equal(ts48(&cur), idm_manual_clock_now_ms(mc));
        CHECK(memcmp(&prev, &cur, 16) < 0, "ids decreased on a moving clock");
        check_v7(&cur);
        prev = cur;
    }
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
}

/* ---- threads ---- */

enum { THREADS = 4, PER_THREAD = 250000 };

/* Mints one UUIDv7 from the generator g into out, for the thread harness. */
static int mint_uuid7(void *g, void *out) { return idm_uuid7_next(g, out); }

/* 4 threads x 250,000 on one generator (system clock): all 1,000,000
 * distinct, each thread's own ids strictly increasing. */
static void uuid7_threads(void **state)
{
    idm_uuid7_gen *g = NULL;
    idm_uuid *all = malloc((size_t)THREADS * PER_THREAD * sizeof *all);
    idm_test_threads t;
    (void)state;
    assert_non_null(all);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, NULL, NULL));
    idm_test_threads_run(&t, THREADS, mint_uuid7, g, all, sizeof *all, PER_THREAD);
    for (int i = 0; i < THREADS; i++) {
        const idm_uuid *ids = all + (size_t)i * PER_THREAD;
        IDM_ASSERT_RC(t.job[i].rc, 0);
        for (size_t k = 1; k < PER_THREAD; k++)
            CHECK(memcmp(&ids[k - 1], &ids[k], 16) < 0,
                  "thread %d: id %zu does not increase", i, k);
        for (size_t k = 0; k < PER_THREAD; k += 4999)
            check_v7(&ids[k]);
    }
    size_t n = (size_t)THREADS * PER_THREAD, dups = idm_test_count_dup16(all, n);
    CHECK(dups == 0, "%zu duplicate ids among %zu", dups, n);
    idm_uuid7_gen_free(g);
    free(all);
}

/* ---- fork ---- */

enum { FORK_N = 10000 };

/* FORK_N UUIDv7 from g then FORK_N UUIDv4 into out; 0 or an IDM_E* code. */
static int mint_after_fork(idm_uuid7_gen *g, idm_uuid *out)
{
    for (size_t i = 0; i < FORK_N; i++) {
        int rc = idm_uuid7_next(g, &out[i]);
        if (rc != 0)
            return rc;
    }
    for (size_t i = 0; i < FORK_N; i++) {
        int rc = idm_uuid4(NULL, &out[FORK_N + i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int tail_cmp(const void *a, const void *b)
{
    return memcmp((const uint8_t *)a + 8, (const uint8_t *)b + 8, 8);
}

/* One generator made before fork(), used before it: after the fork parent
 * and child each mint 10,000 UUIDv7 and 10,000 UUIDv4. No id in common, and
 * no random tail (last 8 bytes) of the parent's equals one of the child's. */
static void uuid_fork(void **state)
{
    idm_uuid7_gen *g = NULL;
    idm_uuid pre[16];
    idm_uuid *mine = malloc(2 * FORK_N * sizeof *mine);
    idm_uuid *theirs = malloc(2 * FORK_N * sizeof *theirs);
    idm_test_child child;
    (void)state;
    assert_non_null(mine);
    assert_non_null(theirs);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, NULL, NULL));
    for (int i = 0; i < 16; i++)
        IDM_ASSERT_OK(idm_uuid7_next(g, &pre[i]));
    IDM_ASSERT_OK(idm_uuid4(NULL, &pre[0]));
    if (idm_test_fork(&child)) {
        int rc = mint_after_fork(g, theirs);
        if (rc != 0)
            _exit(10 + -rc);
        idm_test_child_send(&child, theirs, 2 * FORK_N * sizeof *theirs);
    }
    IDM_ASSERT_OK(mint_after_fork(g, mine));
    size_t got = idm_test_child_collect(&child, theirs, 2 * FORK_N * sizeof *theirs);
    CHECK(got == 2 * FORK_N * sizeof *theirs, "child sent %zu bytes", got);

    for (size_t i = 1; i < FORK_N; i++) {
        CHECK(memcmp(&mine[i - 1], &mine[i], 16) < 0, "parent's v7 ids decreased after fork");
        CHECK(memcmp(&theirs[i - 1], &theirs[i], 16) < 0, "child's v7 ids decreased");
    }
    CHECK(memcmp(&pre[15], &mine[0], 16) < 0, "parent's ids after fork below those before");

    /* No id in common (nor within either side). */
    size_t n = 4 * FORK_N;
    idm_uuid *all = malloc(n * sizeof *all);
    assert_non_null(all);
    memcpy(all, mine, 2 * FORK_N * sizeof *all);
    memcpy(all + 2 * FORK_N, theirs, 2 * FORK_N * sizeof *all);
    qsort(all, n, sizeof *all, idm_test_cmp16);
    for (size_t i = 1; i < n; i++)
        CHECK(memcmp(&all[i - 1], &all[i], 16) != 0, "parent and child minted the same id");

    /* No random tail in common between parent and child. */
    qsort(mine, 2 * FORK_N, sizeof *mine, tail_cmp);
    qsort(theirs, 2 * FORK_N, sizeof *theirs, tail_cmp);
    size_t i = 0, k = 0, common = 0;
    while (i < 2 * FORK_N && k < 2 * FORK_N) {
        int c = tail_cmp(&mine[i], &theirs[k]);
        if (c == 0) {
            common++;
            i++;
            k++;
        } else if (c < 0) {
            i++;
        } else {
            k++;
        }
    }
    CHECK(common == 0, "%zu random tails shared by parent and child", common);
    free(all);
    free(mine);
    free(theirs);
    idm_uuid7_gen_free(g);
}

/* On a frozen clock (so the child's first id falls in the ms of the
 * parent's last): the parent continues its sequence (its next id is the
 * last plus 1..2^32), the child starts afresh (its first id is not). */
static void uuid7_fork_child_starts_afresh(void **state)
{
    const idm_unix_ms t = INT64_C(1700000011000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_uuid last, mine, theirs[2];
    idm_test_child child;
    (void)state;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_uuid7_next(g, &last));
    if (idm_test_fork(&child)) {
        for (int i = 0; i < 2; i++)
            if (idm_uuid7_next(g, &theirs[i]) != 0)
                _exit(2);
        idm_test_child_send(&child, theirs, sizeof theirs);
    }
    IDM_ASSERT_OK(idm_uuid7_next(g, &mine));
    size_t got = idm_test_child_collect(&child, theirs, sizeof theirs);
    assert_int_equal(got, sizeof theirs);

    u128 dp = u128_of(&mine) - u128_of(&last);
    CHECK(ts48(&mine) == t && u128_of(&mine) > u128_of(&last) && dp <= U128_2_32,
          "the parent did not continue its sequence after fork");
    u128 dc = u128_of(&theirs[0]) - u128_of(&last);
    if (u128_of(&theirs[0]) > u128_of(&last) && dc <= U128_2_32) {
        print_uuid("parent's last id before fork", &last);
        print_uuid("child's first id", &theirs[0]);
        fail_msg("the child continued the parent's sequence (+%llu) instead of starting afresh",
                 ULL(dc));
    }
    CHECK(memcmp(&theirs[0], &mine, 16) != 0, "parent and child minted the same id");
    check_v7(&theirs[0]);
    CHECK(memcmp(&theirs[0], &theirs[1], 16) < 0, "the child's ids do not increase");
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
}

/* ---- fork while the generator's lock is held ---- */

/* On a frozen clock, a second thread holds the generator's lock while the
 * main thread forks (as a thread minting at that moment would). The child,
 * where that thread does not exist, must still mint at once, start afresh
 * (its first id is not the parent's last plus 1..2^32, nor the parent's
 * next id) and increase; the parent, once the holder lets go, continues
 * its own sequence. */
static void uuid7_fork_while_locked(void **state)
{
    const idm_unix_ms t = INT64_C(1700000012000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_uuid last, mine, theirs[4];
    idm_test_lock_holder h;
    idm_test_child child;
    (void)state;
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_uuid7_next(g, &last));
    idm_test_lock_holder_start(&h, idm__uuid7_gen_lock(g));
    if (idm_test_fork(&child)) {
        idm_test_child_deadline();
        for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++)
            if (idm_uuid7_next(g, &theirs[i]) != 0)
                _exit(2);
        idm_test_child_send(&child, theirs, sizeof theirs);
    }
    idm_test_lock_holder_stop(&h);
    IDM_ASSERT_OK(idm_uuid7_next(g, &mine));
    size_t got = idm_test_collect_bounded(&child, theirs, sizeof theirs);
    assert_int_equal(got, sizeof theirs);

    u128 dp = u128_of(&mine) - u128_of(&last);
    CHECK(ts48(&mine) == t && u128_of(&mine) > u128_of(&last) && dp <= U128_2_32,
          "the parent did not continue its sequence after fork");
    u128 dc = u128_of(&theirs[0]) - u128_of(&last);
    if (u128_of(&theirs[0]) > u128_of(&last) && dc <= U128_2_32) {
        print_uuid("parent's last id before fork", &last);
        print_uuid("child's first id", &theirs[0]);
        fail_msg("the child continued the parent's sequence (+%llu) instead of starting afresh",
                 ULL(dc));
    }
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        check_v7(&theirs[i]);
        CHECK(ts48(&theirs[i]) == t, "child's id %zu is not at the clock's ms", i);
        CHECK(memcmp(&theirs[i], &mine, 16) != 0, "parent and child minted the same id");
        CHECK(i == 0 || memcmp(&theirs[i - 1], &theirs[i], 16) < 0,
              "the child's ids do not increase at %zu", i);
    }
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
}

enum { CHILD_THREADS = 4, CHILD_PER_THREAD = 1000 };

/* The parent holds the generator's lock while it forks; in the child four
 * threads make their first calls on the generator at once, so several may
 * find it inherited from the parent together. They must all mint
 * promptly, and the child's ids must be one sequence begun afresh exactly
 * once: sorted, each is the previous plus 1..2^32 (a second restart would
 * jump by a random 74-bit amount and could repeat or reorder ids), each
 * thread's ids increase, and none continues the parent's. */
static void uuid7_fork_while_locked_child_threads(void **state)
{
    enum { N = CHILD_THREADS * CHILD_PER_THREAD };
    const idm_unix_ms t = INT64_C(1700000013000);
    idm_manual_clock *mc = idm_test_frozen_clock(t);
    idm_uuid7_gen *g = NULL;
    idm_uuid last, *theirs = malloc(N * sizeof *theirs);
    idm_test_child child;
    (void)state;
    assert_non_null(theirs);
    IDM_ASSERT_OK(idm_uuid7_gen_new(&g, idm_manual_clock_clock(mc), NULL));
    for (int i = 0; i < 100; i++)
        IDM_ASSERT_OK(idm_uuid7_next(g, &last));
    idm__spin_lock(idm__uuid7_gen_lock(g));
    if (idm_test_fork(&child)) {
        idm_test_child_deadline();
        if (idm_test_threads_run_nocheck(CHILD_THREADS, mint_uuid7, g, theirs, sizeof *theirs,
                                         CHILD_PER_THREAD) != 0)
            _exit(2);
        idm_test_child_send(&child, theirs, N * sizeof *theirs);
    }
    idm__spin_unlock(idm__uuid7_gen_lock(g));
    size_t got = idm_test_collect_bounded(&child, theirs, N * sizeof *theirs);
    assert_int_equal(got, N * sizeof *theirs);

    for (int i = 0; i < CHILD_THREADS; i++) {
        const idm_uuid *ids = theirs + (size_t)i * CHILD_PER_THREAD;
        for (size_t k = 0; k < CHILD_PER_THREAD; k++) {
            check_v7(&ids[k]);
            CHECK(ts48(&ids[k]) == t, "child thread %d: id %zu not at the clock's ms", i, k);
            CHECK(k == 0 || memcmp(&ids[k - 1], &ids[k], 16) < 0,
                  "child thread %d: id %zu does not increase", i, k);
        }
    }
    qsort(theirs, N, sizeof *theirs, idm_test_cmp16);
    for (size_t i = 1; i < N; i++) {
        u128 d = u128_of(&theirs[i]) - u128_of(&theirs[i - 1]);
        if (u128_of(&theirs[i]) <= u128_of(&theirs[i - 1]) || d > U128_2_32) {
            print_uuid("child's id", &theirs[i - 1]);
            print_uuid("next higher", &theirs[i]);
            fail_msg("the child's ids are not one sequence (restarted more than once?)");
        }
    }
    u128 dc = u128_of(&theirs[0]) - u128_of(&last);
    CHECK(!(u128_of(&theirs[0]) > u128_of(&last) && dc <= (u128)N * U128_2_32),
          "the child continued the parent's sequence");
    free(theirs);
    idm_uuid7_gen_free(g);
    idm_manual_clock_free(mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uuid4_rfc_vector_from_bytes),
        cmocka_unit_test(uuid4_rfc_vector_from_rng),
        cmocka_unit_test(uuid4_system),
        cmocka_unit_test(uuid7_rfc_vector_build),
        cmocka_unit_test(uuid7_rfc_vector_generator),
        cmocka_unit_test(uuid_nil_max),
        cmocka_unit_test(uuid_rfc_example_integer),
        cmocka_unit_test(uuid_parse_cases),
        cmocka_unit_test(uuid_parse_reject),
        cmocka_unit_test(uuid_parse_embedded_nul),
        cmocka_unit_test(uuid_format_parse_random),
        cmocka_unit_test(uuid_version_variant),
        cmocka_unit_test(uuid7_time_getter),
        cmocka_unit_test(uuid7_monotonic_frozen),
        cmocka_unit_test(uuid7_overflow_moves_time),
        cmocka_unit_test(uuid7_clock_step_back),
        cmocka_unit_test(uuid7_rng_failure),
        cmocka_unit_test(uuid7_clock_range),
        cmocka_unit_test(uuid7_follows_clock),
        cmocka_unit_test(uuid7_threads),
        cmocka_unit_test(uuid_fork),
        cmocka_unit_test(uuid7_fork_child_starts_afresh),
        cmocka_unit_test(uuid7_fork_while_locked),
        cmocka_unit_test(uuid7_fork_while_locked_child_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
