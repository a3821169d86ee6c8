/* SPDX-License-Identifier: MIT */
/*
 * Tests for the strict text codecs in idmint/text.h: idm_u64_parse (decimal
 * and 0x-hex, no signs, spaces or trailing bytes, overflow is IDM_ERANGE,
 * output untouched on failure) and idm_time_format / idm_time_parse (ISO-8601
 * UTC with milliseconds, offsets, fractions, calendar checks, Unix ms), with
 * a seeded random round trip over 1970..9999.
 */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define SENTINEL_U64 UINT64_C(0xDEADBEEFCAFEF00D)
#define SENTINEL_MS INT64_C(-777777)

/* ---- idm_u64_parse ---- */

static void expect_u64(const char *text, uint64_t want)
{
    uint64_t v = SENTINEL_U64;
    IDM_ASSERT_OK(idm_u64_parse(text, &v));
    if (v != want) {
        print_error("idm_u64_parse(\"%s\") = %" PRIu64 ", expected %" PRIu64
                    "\n",
                    text, v, want);
        fail();
    }
}

/* rc2 is an alternative accepted code (0 for none). */
static void expect_u64_fail(const char *text, int rc, int rc2)
{
    uint64_t v = SENTINEL_U64;
    int got = idm_u64_parse(text, &v);
    if (got != rc && (rc2 == 0 || got != rc2)) {
        print_error("idm_u64_parse(\"%s\") returned %s, expected %s\n", text,
                    idm_err_name(got), idm_err_name(rc));
        fail();
    }
    if (v != SENTINEL_U64) {
        print_error("idm_u64_parse(\"%s\") wrote its output on failure\n",
                    text);
        fail();
    }
    assert_true(strlen(idm_error_detail()) > 0);
}

static void test_u64_accept(void **state)
{
    (void)state;
    expect_u64("0", 0);
    expect_u64("1", 1);
    expect_u64("42", 42);
    expect_u64("18446744073709551615", UINT64_MAX);
    expect_u64("18446744073709551614", UINT64_MAX - 1);
    expect_u64("0x0", 0);
    expect_u64("0x1", 1);
    expect_u64("0xFFFFFFFFFFFFFFFF", UINT64_MAX);
    expect_u64("0xffffffffffffffff", UINT64_MAX);
    expect_u64("0xDeadBeef", 0xDEADBEEFu);
    expect_u64("0x8000000000000000", UINT64_C(1) << 63);
    /* Leading zeros, both forms. */
    expect_u64("007", 7);
    expect_u64("0000000000000000000000000018446744073709551615", UINT64_MAX);
    expect_u64("00", 0);
    expect_u64("0x0000000000000001", 1);
    expect_u64("0x00ff", 255);
}

static void test_u64_reject(void **state)
{
    (void)state;
    expect_u64_fail("", IDM_EPARSE, 0);
    expect_u64_fail("-1", IDM_EPARSE, 0);
    expect_u64_fail("-0", IDM_EPARSE, 0);
    expect_u64_fail("+5", IDM_EPARSE, 0);
    expect_u64_fail(" 5", IDM_EPARSE, 0);
    expect_u64_fail("5 ", IDM_EPARSE, 0);
    expect_u64_fail("5\n", IDM_EPARSE, 0);
    expect_u64_fail("\t5", IDM_EPARSE, 0);
    expect_u64_fail("1e3", IDM_EPARSE, 0);
    expect_u64_fail("1.0", IDM_EPARSE, 0);
    expect_u64_fail("1_000", IDM_EPARSE, 0);
    expect_u64_fail("abc", IDM_EPARSE, 0);
    expect_u64_fail("0x", IDM_EPARSE, 0);
    expect_u64_fail("0x1g", IDM_EPARSE, 0);
    expect_u64_fail("0x 1", IDM_EPARSE, 0);
    expect_u64_fail("0x-1", IDM_EPARSE, 0);
    expect_u64_fail("0xx1", IDM_EPARSE, 0);
    expect_u64_fail("x10", IDM_EPARSE, 0);
    expect_u64_fail("12abc", IDM_EPARSE, 0);
    /* Arabic-Indic digit one, and a fullwidth digit one. */
    expect_u64_fail("\xd9\xa1", IDM_EPARSE, 0);
    expect_u64_fail("1\xd9\xa1", IDM_EPARSE, 0);
    expect_u64_fail("\xef\xbc\x91", IDM_EPARSE, 0);
    /* Overflow. */
    expect_u64_fail("18446744073709551616", IDM_ERANGE, 0);
    expect_u64_fail("18446744073709551620", IDM_ERANGE, 0);
    expect_u64_fail("99999999999999999999", IDM_ERANGE, 0);
    expect_u64_fail("184467440737095516150", IDM_ERANGE, 0);
    /* 17 hex digits: past 16 digits and past 2^64 - 1. */
    expect_u64_fail("0x10000000000000000", IDM_ERANGE, IDM_EPARSE);
    expect_u64_fail("0x1FFFFFFFFFFFFFFFF", IDM_ERANGE, IDM_EPARSE);
}

/* ---- idm_time_format / idm_time_parse ---- */

static void expect_format(idm_unix_ms t, const char *want)
{
    char buf[IDM_TIME_TEXT_MAX];
    memset(buf, 'x', sizeof buf);
    IDM_ASSERT_OK(idm_time_format(t, buf, sizeof buf));
    if (strcmp(buf, want) != 0) {
        print_error("idm_time_format(%" PRId64 ") = \"%s\", expected \"%s\"\n",
                    t, buf, want);
        fail();
    }
}

static void expect_parse(const char *text, idm_unix_ms want)
{
    idm_unix_ms t = SENTINEL_MS;
    IDM_ASSERT_OK(idm_time_parse(text, &t));
    if (t != want) {
        print_error("idm_time_parse(\"%s\") = %" PRId64 ", expected %" PRId64
                    "\n",
                    text, t, want);
        fail();
    }
}

/* Rejected with IDM_EPARSE or IDM_ERANGE (the header allows either for a
 * malformed or out-of-range timestamp), output untouched, detail left. */
static void expect_parse_fail(const char *text)
{
    idm_unix_ms t = SENTINEL_MS;
    int rc = idm_time_parse(text, &t);
    if (rc != IDM_EPARSE && rc != IDM_ERANGE) {
        print_error("idm_time_parse(\"%s\") returned %s (%d), expected "
                    "IDM_EPARSE or IDM_ERANGE; value %" PRId64 "\n",
                    text, idm_err_name(rc), rc, t);
        fail();
    }
    if (t != SENTINEL_MS) {
        print_error("idm_time_parse(\"%s\") wrote its output on failure\n",
                    text);
        fail();
    }
    assert_true(strlen(idm_error_detail()) > 0);
}

static void test_time_format_known(void **state)
{
    (void)state;
    expect_format(0, "1970-01-01T00:00:00.000Z");
    expect_format(1, "1970-01-01T00:00:00.001Z");
    expect_format(1288834974657, "2010-11-04T01:42:54.657Z");
    expect_format(1767225600000, "2026-01-01T00:00:00.000Z");
    expect_format(1709164800000, "2024-02-29T00:00:00.000Z");
    expect_format(951782400000, "2000-02-29T00:00:00.000Z");
    expect_format(253402300799999, "9999-12-31T23:59:59.999Z");
    /* Before 1970: floor, not truncation toward zero. */
    expect_format(-1, "1969-12-31T23:59:59.999Z");
    expect_format(-1000, "1969-12-31T23:59:59.000Z");
    expect_format(-1001, "1969-12-31T23:59:58.999Z");
    /* Year 0000 (proleptic Gregorian, a leap year) is the lower bound. */
    expect_format(INT64_C(-62167219200000), "0000-01-01T00:00:00.000Z");
}

static void test_time_format_errors(void **state)
{
    (void)state;
    char buf[64];
    IDM_ASSERT_RC(idm_time_format(INT64_C(253402300800000), buf, sizeof buf),
                  IDM_ERANGE);
    IDM_ASSERT_RC(idm_time_format(INT64_C(-62167219200001), buf, sizeof buf),
                  IDM_ERANGE);
    IDM_ASSERT_RC(idm_time_format(INT64_MAX, buf, sizeof buf), IDM_ERANGE);
    IDM_ASSERT_RC(idm_time_format(INT64_MIN, buf, sizeof buf), IDM_ERANGE);
    IDM_ASSERT_RC(idm_time_format(0, buf, IDM_TIME_TEXT_MAX - 1), IDM_EINVAL);
    IDM_ASSERT_RC(idm_time_format(0, buf, 0), IDM_EINVAL);
    IDM_ASSERT_OK(idm_time_format(0, buf, IDM_TIME_TEXT_MAX));
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
}

static void test_time_parse_known(void **state)
{
    (void)state;
    expect_parse("1970-01-01T00:00:00Z", 0);
    expect_parse("1970-01-01T00:00:00.000Z", 0);
    expect_parse("1970-01-01", 0);
    expect_parse("2010-11-04T01:42:54.657Z", 1288834974657);
    expect_parse("2026-01-01T00:00:00Z", 1767225600000);
    expect_parse("9999-12-31T23:59:59.999Z", 253402300799999);
    /* Unix milliseconds. */
    expect_parse("0", 0);
    expect_parse("1288834974657", 1288834974657);
    expect_parse("1767225600000", 1767225600000);
    /* Dates alone are midnight UTC. */
    expect_parse("2014-09-01", 1409529600000);
    expect_parse("2026-01-01", 1767225600000);
    /* Minutes without seconds. */
    expect_parse("2026-01-01T00:00Z", 1767225600000);
    expect_parse("2026-01-01T12:34Z", 1767225600000 + 12 * 3600000 + 34 * 60000);
    /* Lower-case t and z, and a space for T. */
    expect_parse("2026-01-01t00:00:00z", 1767225600000);
    expect_parse("2026-01-01 00:00:00Z", 1767225600000);
    expect_parse("2010-11-04t01:42:54.657z", 1288834974657);
}

static void test_time_parse_leap_years(void **state)
{
    (void)state;
    expect_parse("2024-02-29", 1709164800000);
    expect_parse("2024-02-29T23:59:59.999Z", 1709164800000 + 86399999);
    expect_parse("2024-03-01", 1709164800000 + 86400000);
    expect_parse("2000-02-29", 951782400000);
    expect_parse_fail("2023-02-29");
    expect_parse_fail("2023-02-29T00:00:00Z");
    expect_parse_fail("2100-02-29"); /* century, not a leap year */
    expect_parse_fail("2024-02-30");
    expect_parse_fail("2024-04-31");
    expect_parse_fail("2024-06-31");
    expect_parse("2024-12-31", 1735603200000);
}

static void test_time_parse_offsets(void **state)
{
    (void)state;
    /* All of these are 2026-01-01T00:00:00Z. */
    expect_parse("2026-01-01T02:00:00+02:00", 1767225600000);
    expect_parse("2025-12-31T18:30:00-05:30", 1767225600000);
    expect_parse("2026-01-01T00:00:00+00:00", 1767225600000);
    expect_parse("2026-01-01T00:00:00-00:00", 1767225600000);
    expect_parse("2026-01-01T05:45+05:45", 1767225600000);
    expect_parse("2010-11-04T02:42:54.657+01:00", 1288834974657);
}

static void test_time_parse_fractions(void **state)
{
    (void)state;
    const idm_unix_ms base = 1767225600000;
    expect_parse("2026-01-01T00:00:00.5Z", base + 500);
    expect_parse("2026-01-01T00:00:00.05Z", base + 50);
    expect_parse("2026-01-01T00:00:00.123Z", base + 123);
    expect_parse("2026-01-01T00:00:00.123456Z", base + 123);
    expect_parse("2026-01-01T00:00:00.999999999Z", base + 999);
    expect_parse("2026-01-01T00:00:00.0009Z", base);
    expect_parse("2026-01-01T00:00:00.1+01:00", base - 3600000 + 100);
}

static void test_time_parse_reject(void **state)
{
    (void)state;
    expect_parse_fail("");
    expect_parse_fail("2026-01-01T24:00:00Z");   /* hour 24 */
    expect_parse_fail("2026-01-01T23:60:00Z");   /* minute 60 */
    expect_parse_fail("2026-12-31T23:59:60Z");   /* leap second */
    expect_parse_fail("2026-13-01");             /* month 13 */
    expect_parse_fail("2026-00-01");             /* month 0 */
    expect_parse_fail("2026-01-00");             /* day 0 */
    expect_parse_fail("2026-01-32");             /* day 32 */
    expect_parse_fail("2026-01-01T00:00:00");    /* no zone */
    expect_parse_fail("2026-01-01T00:00");       /* no zone */
    expect_parse_fail("2026-01-01T00:00:00Zx");  /* garbage after */
    expect_parse_fail("2026-01-01T00:00:00Z ");
    expect_parse_fail("2026-01-01x");
    expect_parse_fail("2026-01-01 ");
    expect_parse_fail(" 2026-01-01");
    expect_parse_fail("2026-01-01T");
    expect_parse_fail("2026-01-01T00:00:00.Z");  /* empty fraction */
    expect_parse_fail("2026-01-01T00:00:00+0200"); /* offset without colon */
    expect_parse_fail("2026-01-01T00:00:00+2:00");
    expect_parse_fail("2026-1-01");
    expect_parse_fail("2026-01-1");
    expect_parse_fail("26-01-01");
    expect_parse_fail("1969-12-31");             /* before 1970 */
    expect_parse_fail("10000-01-01");            /* after 9999 */
    expect_parse_fail("-1");
    expect_parse_fail("+1288834974657");
    expect_parse_fail("1288834974657ms");
    expect_parse_fail("now");
    expect_parse_fail("2026/01/01");
}

static void test_time_round_trip_random(void **state)
{
    (void)state;
    idm_test_rng rng;
    idm_test_rng_init(&rng, idm_test_seed());
    const uint64_t max_ms = UINT64_C(253402300799999); /* 9999-12-31 end */
    char buf[IDM_TIME_TEXT_MAX];
    for (int i = 0; i < 20000; i++) {
        idm_unix_ms t;
        switch (i % 4) {
        case 0: /* anywhere */
            t = (idm_unix_ms)idm_test_rng_range(&rng, 0, max_ms);
            break;
        case 1: /* whole days */
            t = (idm_unix_ms)idm_test_rng_range(&rng, 0, max_ms / 86400000) *
                86400000;
            break;
        case 2: /* last ms of a day */
            t = (idm_unix_ms)idm_test_rng_range(&rng, 1, max_ms / 86400000 + 1) *
                    86400000 - 1;
            break;
        default: /* near now */
            t = (idm_unix_ms)idm_test_rng_range(&rng, 1600000000000,
                                                1900000000000);
            break;
        }
        IDM_ASSERT_OK(idm_time_format(t, buf, sizeof buf));
        assert_int_equal(strlen(buf), 24);
        assert_true(buf[4] == '-' && buf[7] == '-' && buf[10] == 'T' &&
                    buf[13] == ':' && buf[16] == ':' && buf[19] == '.' &&
                    buf[23] == 'Z');
        idm_unix_ms back = SENTINEL_MS;
        IDM_ASSERT_OK(idm_time_parse(buf, &back));
        if (back != t) {
            print_error("round trip %" PRId64 " -> \"%s\" -> %" PRId64 "\n", t,
                        buf, back);
            fail();
        }
        /* The date part alone gives midnight of that day. */
        char date[11];
        memcpy(date, buf, 10);
        date[10] = '\0';
        IDM_ASSERT_OK(idm_time_parse(date, &back));
        assert_int_equal(back, t - t % 86400000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u64_accept),
        cmocka_unit_test(test_u64_reject),
        cmocka_unit_test(test_time_format_known),
        cmocka_unit_test(test_time_format_errors),
        cmocka_unit_test(test_time_parse_known),
        cmocka_unit_test(test_time_parse_leap_years),
        cmocka_unit_test(test_time_parse_offsets),
        cmocka_unit_test(test_time_parse_fractions),
        cmocka_unit_test(test_time_parse_reject),
        cmocka_unit_test(test_time_round_trip_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
