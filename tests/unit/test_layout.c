/* SPDX-License-Identifier: MIT */
/*
 * Tests for idmint layouts (idmint/layout.h): text-form parsing and its
 * errors (each IDM_ELAYOUT with a detail naming the problem), epochs through
 * idm_layout_from_spec, the four presets field by field, format/parse round
 * trips, the sign bit and the end of time, decode/compose range checks,
 * idm_layout_range for aligned and unaligned windows, node assignments, and
 * a seeded property test over random layouts.
 */
#include "testutil.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define TWITTER_EPOCH INT64_C(1288834974657)
#define DISCORD_EPOCH INT64_C(1420070400000)
#define INSTAGRAM_EPOCH INT64_C(1314220021721)
#define SONYFLAKE_EPOCH INT64_C(1409529600000)

/* ---- helpers ---- */

/* Case-insensitive substring test. */
static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay != '\0'; hay++) {
        size_t i = 0;
        while (i < n && hay[i] != '\0' &&
               tolower((unsigned char)hay[i]) ==
                   tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

/* needles: NULL (any non-empty detail) or '|'-separated alternatives, one of
 * which the detail must contain. */
static void check_detail(const char *what, const char *needles)
{
    const char *d = idm_error_detail();
    assert_non_null(d);
    if (*d == '\0') {
        print_error("%s: empty error detail\n", what);
        fail();
    }
    if (needles == NULL)
        return;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", needles);
    char *save = NULL;
    for (char *alt = strtok_r(buf, "|", &save); alt != NULL;
         alt = strtok_r(NULL, "|", &save))
        if (contains_ci(d, alt))
            return;
    print_error("%s: detail \"%s\" does not mention %s\n", what, d, needles);
    fail();
}

static void expect_layout_error(const char *text, idm_unix_ms epoch,
                                const char *needles)
{
    idm_layout *l = NULL;
    int rc = idm_layout_parse(&l, text, epoch);
    if (rc != IDM_ELAYOUT) {
        print_error("idm_layout_parse(\"%s\", %" PRId64 ") returned %s (%d), "
                    "expected IDM_ELAYOUT; detail: %s\n",
                    text, epoch, idm_err_name(rc), rc, idm_error_detail());
        if (rc == 0)
            idm_layout_free(l);
        fail();
    }
    char what[160];
    snprintf(what, sizeof what, "idm_layout_parse(\"%.100s\")", text);
    check_detail(what, needles);
}

static idm_layout *parse_ok(const char *text, idm_unix_ms epoch)
{
    idm_layout *l = NULL;
    int rc = idm_layout_parse(&l, text, epoch);
    if (rc != 0) {
        print_error("idm_layout_parse(\"%s\", %" PRId64 ") returned %s; "
                    "detail: %s\n",
                    text, epoch, idm_err_name(rc), idm_error_detail());
        fail();
    }
    assert_non_null(l);
    return l;
}

static idm_layout *preset(const char *name)
{
    idm_layout *l = NULL;
    IDM_ASSERT_OK(idm_layout_preset(&l, name));
    assert_non_null(l);
    return l;
}

typedef struct want_field {
    const char *name;
    idm_field_kind kind;
    unsigned bits;
    unsigned shift;
} want_field;

static void check_fields(const idm_layout *l, const want_field *want, size_t n)
{
    assert_int_equal(idm_layout_field_count(l), n);
    unsigned total = 0;
    for (size_t i = 0; i < n; i++) {
        idm_field_info f;
        memset(&f, 0, sizeof f);
        IDM_ASSERT_OK(idm_layout_field(l, i, &f));
        assert_non_null(f.name);
        if (strcmp(f.name, want[i].name) != 0 || f.kind != want[i].kind ||
            f.bits != want[i].bits || f.shift != want[i].shift) {
            print_error("field %zu: got %s kind %d bits %u shift %u, expected "
                        "%s kind %d bits %u shift %u\n",
                        i, f.name, (int)f.kind, f.bits, f.shift, want[i].name,
                        (int)want[i].kind, want[i].bits, want[i].shift);
            fail();
        }
        assert_int_equal(f.max, (UINT64_C(1) << f.bits) - 1);
        assert_int_equal(idm_layout_field_index(l, want[i].name), (int)i);
        total += f.bits;
    }
    assert_int_equal(idm_layout_bits(l), total);
    idm_field_info none;
    assert_int_not_equal(idm_layout_field(l, n, &none), 0);
}

/* ---- parsing: valid forms ---- */

static void test_parse_valid(void **state)
{
    (void)state;
    idm_layout *l = parse_ok("time:41@1ms,datacenter:5,worker:5,seq:12",
                             TWITTER_EPOCH);
    const want_field tw[] = {
        {"time", IDM_FIELD_TIME, 41, 22},
        {"datacenter", IDM_FIELD_NODE, 5, 17},
        {"worker", IDM_FIELD_NODE, 5, 12},
        {"seq", IDM_FIELD_SEQ, 12, 0},
    };
    check_fields(l, tw, 4);
    assert_int_equal(idm_layout_epoch(l), TWITTER_EPOCH);
    assert_int_equal(idm_layout_tick_ms(l), 1);
    assert_int_equal(idm_layout_seq_bits(l), 12);
    assert_string_equal(idm_layout_name(l), "custom");
    idm_layout_free(l);

    /* No node fields; epoch 0; seq above time is allowed too. */
    l = parse_ok("time:40@1ms,seq:8", 0);
    assert_int_equal(idm_layout_field_count(l), 2);
    assert_int_equal(idm_layout_bits(l), 48);
    assert_int_equal(idm_layout_epoch(l), 0);
    idm_layout_free(l);

    /* Whether a field may sit above time is the library's choice (see
     * test_sign_bit); either it is accepted with the right shape or refused
     * with a detail about the time field. */
    l = NULL;
    int rc = idm_layout_parse(&l, "seq:8,time:40@1ms", 0);
    if (rc == 0) {
        const want_field st[] = {
            {"seq", IDM_FIELD_SEQ, 8, 40},
            {"time", IDM_FIELD_TIME, 40, 0},
        };
        check_fields(l, st, 2);
        idm_layout_free(l);
    } else {
        assert_int_equal(rc, IDM_ELAYOUT);
        check_detail("seq above time", "time");
    }

    /* Ticks: 1 ms up to 60 s, in ms or s. */
    const struct { const char *text; int64_t tick; } ticks[] = {
        {"time:39@10ms,seq:8,machine:16", 10},
        {"time:30@1s,seq:8", 1000},
        {"time:30@60s,seq:8", 60000},
        {"time:30@60000ms,seq:8", 60000},
        {"time:30@59999ms,seq:8", 59999},
        {"time:30@250ms,seq:8", 250},
    };
    for (size_t i = 0; i < sizeof ticks / sizeof ticks[0]; i++) {
        l = parse_ok(ticks[i].text, 1000);
        assert_int_equal(idm_layout_tick_ms(l), ticks[i].tick);
        idm_layout_free(l);
    }

    /* Exactly 64 bits, name of the maximum length, digits and underscores. */
    l = parse_ok("time:42@1ms,node_name_of_exactly_31_bytes_x:10,seq:12", 0);
    assert_int_equal(strlen("node_name_of_exactly_31_bytes_x"),
                     IDM_FIELD_NAME_MAX);
    assert_int_equal(idm_layout_bits(l), 64);
    idm_layout_free(l);
    l = parse_ok("time:41@1ms,dc2:5,w_1:5,seq:12", 0);
    assert_int_equal(idm_layout_field_index(l, "w_1"), 2);
    IDM_ASSERT_RC(idm_layout_field_index(l, "nosuch"), IDM_EINVAL);
    idm_layout_free(l);

    /* 16 fields is the limit. */
    l = parse_ok("time:20@1ms,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,"
                 "m:1,n:1,o:1,seq:4",
                 0);
    assert_int_equal(idm_layout_field_count(l), IDM_LAYOUT_MAX_FIELDS);
    idm_layout_free(l);
}

/* ---- parsing: errors ---- */

static void test_parse_bits_errors(void **state)
{
    (void)state;
    /* 65 bits in all. */
    expect_layout_error("time:42@1ms,datacenter:6,worker:5,seq:12", 0,
                        "64|65");
    expect_layout_error("time:64@1ms,seq:1", 0, "64|65");
    expect_layout_error("time:41@1ms,seq:12,a:6,b:6", 0, "64|65");
    /* Zero-width fields. */
    expect_layout_error("time:41@1ms,worker:5,seq:0", 0, "seq");
    expect_layout_error("time:41@1ms,worker:0,seq:12", 0, "worker");
    expect_layout_error("time:0@1ms,worker:5,seq:12", 0, "time");
    /* Missing widths. */
    expect_layout_error("time:41@1ms,worker,seq:12", 0, "worker");
    expect_layout_error("time:41@1ms,worker:,seq:12", 0, "worker");
    expect_layout_error("time:@1ms,seq:12", 0, "time");
}

static void test_parse_structure_errors(void **state)
{
    (void)state;
    expect_layout_error("worker:5,seq:12", 0, "time");
    expect_layout_error("seq:12", 0, "time");
    expect_layout_error("time:41@1ms,worker:5", 0, "seq");
    expect_layout_error("time:41@1ms", 0, "seq");
    expect_layout_error("time:30@1ms,worker:5,time:10@1ms,seq:12", 0, "time");
    expect_layout_error("time:41@1ms,seq:6,seq:6", 0, "seq");
    expect_layout_error("time:41@1ms,worker:5,worker:5,seq:12", 0, "worker");
    expect_layout_error("time:41@1ms,shard:5,seq:6,shard:2", 0, "shard");
    /* 17 fields. */
    expect_layout_error("time:20@1ms,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,"
                        "k:1,m:1,n:1,o:1,p:1,seq:4",
                        0, "16|17|field");
}

static void test_parse_tick_errors(void **state)
{
    (void)state;
    expect_layout_error("time:41@1xs,seq:12", 0, "tick|unit|xs");
    expect_layout_error("time:41@10us,seq:12", 0, "tick|unit|us");
    expect_layout_error("time:41@1h,seq:12", 0, "tick|unit|1h");
    expect_layout_error("time:41@ms,seq:12", 0, "tick|time");
    expect_layout_error("time:41@,seq:12", 0, "tick|time");
    expect_layout_error("time:41@10,seq:12", 0, "tick|unit|time");
    expect_layout_error("time:41@0ms,seq:12", 0, "tick|0");
    expect_layout_error("time:41@0s,seq:12", 0, "tick|0");
    expect_layout_error("time:41@61s,seq:12", 0, "tick|60|61");
    expect_layout_error("time:41@60001ms,seq:12", 0, "tick|60");
    expect_layout_error("time:41@-1ms,seq:12", 0, "tick|time");
    /* A tick only belongs on the time field. */
    expect_layout_error("time:41@1ms,worker:5@1ms,seq:12", 0, "worker|@");
    expect_layout_error("time:41@1ms,seq:12@1ms", 0, "seq|@");
}

static void test_parse_name_errors(void **state)
{
    (void)state;
    expect_layout_error("time:41@1ms,Worker:5,seq:12", 0, "Worker");
    expect_layout_error("time:41@1ms,9lives:5,seq:12", 0, "9lives");
    expect_layout_error("time:41@1ms,wor-ker:5,seq:12", 0, "wor-ker|name");
    expect_layout_error("time:41@1ms,_w:5,seq:12", 0, "_w");
    expect_layout_error("time:41@1ms,w.x:5,seq:12", 0, "w.x|name");
    expect_layout_error("time:41@1ms,:5,seq:12", 0, "name|field");
    /* 32 bytes: one past IDM_FIELD_NAME_MAX. */
    expect_layout_error("time:41@1ms,abcdefghijklmnopqrstuvwxyz_12345:5,seq:12",
                        0, "abcdefghijklmnopqrstuvwxyz_12345|31|32|long");
    expect_layout_error("time:41@1ms,w\xc3\xa9:5,seq:12", 0, "name|field");
}

static void test_parse_syntax_errors(void **state)
{
    (void)state;
    expect_layout_error("", 0, NULL);
    expect_layout_error(",", 0, NULL);
    expect_layout_error("time:41@1ms,seq:12,", 0, NULL);
    expect_layout_error(",time:41@1ms,seq:12", 0, NULL);
    expect_layout_error("time:41@1ms,,seq:12", 0, NULL);
    /* Whitespace anywhere is not part of the form. */
    expect_layout_error(" time:41@1ms,seq:12", 0, NULL);
    expect_layout_error("time:41@1ms,seq:12 ", 0, NULL);
    expect_layout_error("time:41@1ms, seq:12", 0, NULL);
    expect_layout_error("time: 41@1ms,seq:12", 0, NULL);
    expect_layout_error("time:41 @1ms,seq:12", 0, NULL);
    expect_layout_error("time:41@1 ms,seq:12", 0, NULL);
    expect_layout_error("time:41@1ms,\tseq:12", 0, NULL);
    expect_layout_error("time:41@1ms,seq:12\n", 0, NULL);
    /* Other junk. */
    expect_layout_error("time:41@1ms;seq:12", 0, NULL);
    expect_layout_error("time:41@1ms,seq:+12", 0, "seq");
    expect_layout_error("time:41@1ms,seq:-1", 0, "seq");
    expect_layout_error("time:41@1ms,seq:0x0c", 0, "seq");
    expect_layout_error("time:41@1ms,seq:12:3", 0, "seq");
    expect_layout_error("time:41@1ms,seq=12", 0, NULL);
}

static void test_parse_huge_numbers(void **state)
{
    (void)state;
    /* Must not wrap around to a small valid width or tick. */
    expect_layout_error("time:99999999999999999999@1ms,seq:12", 0, "time");
    expect_layout_error("time:18446744073709551657@1ms,seq:12", 0, "time");
    expect_layout_error("time:4294967337@1ms,seq:12", 0, "time");
    expect_layout_error("time:41@1ms,seq:4294967308", 0, "seq");
    expect_layout_error("time:41@1ms,worker:4294967301,seq:12", 0, "worker");
    expect_layout_error("time:41@18446744073709551617ms,seq:12", 0, "tick|time");
    expect_layout_error("time:41@4294967297ms,seq:12", 0, "tick|time");
    expect_layout_error("time:41@99999999999999999999s,seq:12", 0, "tick|time");
}

static void test_parse_epoch_errors(void **state)
{
    (void)state;
    expect_layout_error("time:41@1ms,seq:12", -1, "epoch");
    expect_layout_error("time:41@1ms,seq:12", INT64_MIN, "epoch");
    /* The end of time must be representable. */
    expect_layout_error("time:41@1ms,seq:12", INT64_MAX, NULL);
    expect_layout_error("time:63@60000ms,seq:1", 0, NULL);
    idm_layout *l = parse_ok("time:41@1ms,seq:12", 0);
    idm_layout_free(l);
}

/* ---- idm_layout_from_spec ---- */

static void test_from_spec(void **state)
{
    (void)state;
    idm_layout *l = NULL;

    /* Presets keep their epoch unless told otherwise. */
    IDM_ASSERT_OK(idm_layout_from_spec(&l, "twitter", NULL));
    assert_int_equal(idm_layout_epoch(l), TWITTER_EPOCH);
    assert_string_equal(idm_layout_name(l), "twitter");
    idm_layout_free(l);

    IDM_ASSERT_OK(idm_layout_from_spec(&l, "sonyflake", "2020-01-01"));
    assert_int_equal(idm_layout_epoch(l), INT64_C(1577836800000));
    assert_int_equal(idm_layout_tick_ms(l), 10);
    assert_int_equal(idm_layout_bits(l), 63);
    idm_layout_free(l);

    /* Text forms with the epoch as ISO text and as Unix ms. */
    IDM_ASSERT_OK(idm_layout_from_spec(&l, "time:41@1ms,datacenter:5,worker:5,seq:12",
                                       "2010-11-04T01:42:54.657Z"));
    assert_int_equal(idm_layout_epoch(l), TWITTER_EPOCH);
    assert_int_equal(idm_layout_field_count(l), 4);
    idm_layout_free(l);

    IDM_ASSERT_OK(idm_layout_from_spec(&l, "time:41@1ms,shard:13,seq:10",
                                       "1314220021721"));
    assert_int_equal(idm_layout_epoch(l), INSTAGRAM_EPOCH);
    idm_layout_free(l);

    IDM_ASSERT_OK(idm_layout_from_spec(&l, "time:39@10ms,seq:8,machine:16",
                                       "2014-09-01"));
    assert_int_equal(idm_layout_epoch(l), SONYFLAKE_EPOCH);
    idm_layout_free(l);

    /* A text form needs an epoch. */
    l = NULL;
    int rc = idm_layout_from_spec(&l, "time:41@1ms,seq:12", NULL);
    if (rc != IDM_ELAYOUT && rc != IDM_EINVAL) {
        print_error("text form without epoch: %s\n", idm_err_name(rc));
        fail();
    }
    check_detail("text form without epoch", "epoch");

    /* Unknown presets. */
    IDM_ASSERT_RC(idm_layout_preset(&l, "twiter"), IDM_ELAYOUT);
    check_detail("unknown preset", "twiter");
    IDM_ASSERT_RC(idm_layout_preset(&l, ""), IDM_ELAYOUT);
    IDM_ASSERT_RC(idm_layout_preset(&l, "Twitter"), IDM_ELAYOUT);
    assert_true(idm_layout_from_spec(&l, "twiter", NULL) < 0);
    IDM_ASSERT_RC(idm_layout_from_spec(&l, "twiter", "2020-01-01"), IDM_ELAYOUT);

    /* Bad epoch text: the time parser's own detail, after what failed (the
     * detail passed to the next message it becomes part of). */
    idm_unix_ms t;
    char why[256];
    assert_true(idm_time_parse("yesterday", &t) < 0);
    snprintf(why, sizeof why, "layout: bad epoch: %s", idm_error_detail());
    assert_true(idm_layout_from_spec(&l, "twitter", "yesterday") < 0);
    assert_string_equal(idm_error_detail(), why);
    assert_true(idm_layout_from_spec(&l, "twitter", "") < 0);
    assert_true(idm_layout_from_spec(&l, "time:41@1ms,seq:12", "2020-13-01") < 0);
    assert_true(idm_layout_from_spec(&l, "time:41@1ms,seq:12", "-5") < 0);
    /* A bad text form with a good epoch. */
    IDM_ASSERT_RC(idm_layout_from_spec(&l, "time:41@1ms,seq:0", "2020-01-01"),
                  IDM_ELAYOUT);
}

/* ---- presets ---- */

static void test_preset_names(void **state)
{
    (void)state;
    const char *const *names = idm_layout_preset_names();
    assert_non_null(names);
    const char *want[] = {"twitter", "discord", "instagram", "sonyflake"};
    int found[4] = {0, 0, 0, 0};
    size_t n = 0;
    for (; names[n] != NULL; n++) {
        assert_true(n < 64);
        for (size_t j = 0; j < 4; j++)
            if (strcmp(names[n], want[j]) == 0)
                found[j]++;
        /* Every listed name builds. */
        idm_layout *l = preset(names[n]);
        assert_string_equal(idm_layout_name(l), names[n]);
        idm_layout_free(l);
    }
    for (size_t j = 0; j < 4; j++)
        assert_int_equal(found[j], 1);
}

static void test_preset_twitter(void **state)
{
    (void)state;
    idm_layout *l = preset("twitter");
    const want_field f[] = {
        {"time", IDM_FIELD_TIME, 41, 22},
        {"datacenter", IDM_FIELD_NODE, 5, 17},
        {"worker", IDM_FIELD_NODE, 5, 12},
        {"seq", IDM_FIELD_SEQ, 12, 0},
    };
    check_fields(l, f, 4);
    assert_int_equal(idm_layout_epoch(l), TWITTER_EPOCH);
    assert_int_equal(idm_layout_tick_ms(l), 1);
    assert_int_equal(idm_layout_bits(l), 63);
    assert_int_equal(idm_layout_seq_bits(l), 12);
    assert_string_equal(idm_layout_name(l), "twitter");
    idm_layout_free(l);
}

static void test_preset_discord(void **state)
{
    (void)state;
    idm_layout *l = preset("discord");
    const want_field f[] = {
        {"time", IDM_FIELD_TIME, 42, 22},
        {"worker", IDM_FIELD_NODE, 5, 17},
        {"process", IDM_FIELD_NODE, 5, 12},
        {"seq", IDM_FIELD_SEQ, 12, 0},
    };
    check_fields(l, f, 4);
    assert_int_equal(idm_layout_epoch(l), DISCORD_EPOCH);
    assert_int_equal(idm_layout_tick_ms(l), 1);
    assert_int_equal(idm_layout_bits(l), 64);
    assert_int_equal(idm_layout_seq_bits(l), 12);
    assert_string_equal(idm_layout_name(l), "discord");
    idm_layout_free(l);
}

static void test_preset_instagram(void **state)
{
    (void)state;
    idm_layout *l = preset("instagram");
    const want_field f[] = {
        {"time", IDM_FIELD_TIME, 41, 23},
        {"shard", IDM_FIELD_NODE, 13, 10},
        {"seq", IDM_FIELD_SEQ, 10, 0},
    };
    check_fields(l, f, 3);
    assert_int_equal(idm_layout_epoch(l), INSTAGRAM_EPOCH);
    assert_int_equal(idm_layout_tick_ms(l), 1);
    assert_int_equal(idm_layout_bits(l), 64);
    assert_int_equal(idm_layout_seq_bits(l), 10);
    assert_string_equal(idm_layout_name(l), "instagram");
    idm_layout_free(l);
}

static void test_preset_sonyflake(void **state)
{
    (void)state;
    idm_layout *l = preset("sonyflake");
    const want_field f[] = {
        {"time", IDM_FIELD_TIME, 39, 24},
        {"seq", IDM_FIELD_SEQ, 8, 16},
        {"machine", IDM_FIELD_NODE, 16, 0},
    };
    check_fields(l, f, 3);
    assert_int_equal(idm_layout_epoch(l), SONYFLAKE_EPOCH);
    assert_int_equal(idm_layout_tick_ms(l), 10);
    assert_int_equal(idm_layout_bits(l), 63);
    assert_int_equal(idm_layout_seq_bits(l), 8);
    assert_string_equal(idm_layout_name(l), "sonyflake");
    idm_layout_free(l);
}

/* ---- format round trip, dup ---- */

static void assert_same_layout(const idm_layout *a, const idm_layout *b)
{
    assert_int_equal(idm_layout_field_count(a), idm_layout_field_count(b));
    assert_int_equal(idm_layout_epoch(a), idm_layout_epoch(b));
    assert_int_equal(idm_layout_tick_ms(a), idm_layout_tick_ms(b));
    assert_int_equal(idm_layout_bits(a), idm_layout_bits(b));
    assert_int_equal(idm_layout_seq_bits(a), idm_layout_seq_bits(b));
    for (size_t i = 0; i < idm_layout_field_count(a); i++) {
        idm_field_info fa, fb;
        IDM_ASSERT_OK(idm_layout_field(a, i, &fa));
        IDM_ASSERT_OK(idm_layout_field(b, i, &fb));
        assert_string_equal(fa.name, fb.name);
        assert_int_equal(fa.kind, fb.kind);
        assert_int_equal(fa.bits, fb.bits);
        assert_int_equal(fa.shift, fb.shift);
        assert_int_equal(fa.max, fb.max);
    }
}

static void test_format_round_trip(void **state)
{
    (void)state;
    const char *const *names = idm_layout_preset_names();
    for (size_t i = 0; names[i] != NULL; i++) {
        idm_layout *l = preset(names[i]);
        char buf[IDM_LAYOUT_TEXT_MAX];
        IDM_ASSERT_OK(idm_layout_format(l, buf, sizeof buf));
        assert_true(strlen(buf) > 0);
        idm_layout *back = parse_ok(buf, idm_layout_epoch(l));
        assert_same_layout(l, back);
        /* Formatting the parsed form gives the same text again. */
        char buf2[IDM_LAYOUT_TEXT_MAX];
        IDM_ASSERT_OK(idm_layout_format(back, buf2, sizeof buf2));
        assert_string_equal(buf, buf2);
        /* Too small a buffer. */
        IDM_ASSERT_RC(idm_layout_format(l, buf2, strlen(buf)), IDM_EINVAL);
        IDM_ASSERT_OK(idm_layout_format(l, buf2, strlen(buf) + 1));
        assert_string_equal(buf, buf2);
        /* dup is the same layout. */
        idm_layout *d = NULL;
        IDM_ASSERT_OK(idm_layout_dup(&d, l));
        assert_same_layout(l, d);
        assert_string_equal(idm_layout_name(d), names[i]);
        idm_layout_free(d);
        idm_layout_free(back);
        idm_layout_free(l);
    }
    /* The twitter preset formats to its documented text form. */
    idm_layout *l = preset("twitter");
    char buf[IDM_LAYOUT_TEXT_MAX];
    IDM_ASSERT_OK(idm_layout_format(l, buf, sizeof buf));
    assert_string_equal(buf, "time:41@1ms,datacenter:5,worker:5,seq:12");
    idm_layout_free(l);
    l = preset("sonyflake");
    IDM_ASSERT_OK(idm_layout_format(l, buf, sizeof buf));
    idm_layout *back = parse_ok(buf, SONYFLAKE_EPOCH);
    assert_int_equal(idm_layout_tick_ms(back), 10);
    idm_layout_free(back);
    idm_layout_free(l);
    idm_layout_free(NULL);
}

/* ---- sign bit and end of time ---- */

static void test_sign_bit(void **state)
{
    (void)state;
    idm_layout *l = preset("instagram");
    idm_unix_ms from = 0;
    assert_true(idm_layout_sign_bit(l, &from));
    /* 41-bit time at the top: its top bit is 2^40 ms after the epoch. */
    assert_int_equal(from, INSTAGRAM_EPOCH + (INT64_C(1) << 40));
    assert_int_equal(from, INT64_C(2413731649497)); /* 2046-06-27T17:00:49.497Z */
    assert_true(idm_layout_sign_bit(l, NULL));
    /* The last id before it is positive, the first at it is negative. */
    uint64_t id = 0;
    IDM_ASSERT_OK(idm_layout_compose(l, from - 1, NULL, 1023, &id));
    assert_true((int64_t)id > 0);
    IDM_ASSERT_OK(idm_layout_compose(l, from, NULL, 0, &id));
    assert_true((int64_t)id < 0);
    idm_layout_free(l);

    l = preset("discord");
    assert_true(idm_layout_sign_bit(l, &from));
    assert_int_equal(from, DISCORD_EPOCH + (INT64_C(1) << 41));
    idm_layout_free(l);

    l = preset("twitter");
    from = 12345;
    assert_false(idm_layout_sign_bit(l, &from));
    assert_false(idm_layout_sign_bit(l, NULL));
    idm_layout_free(l);

    l = preset("sonyflake");
    assert_false(idm_layout_sign_bit(l, &from));
    idm_layout_free(l);

    /* A node field on top: ids can be negative from the epoch on (the
     * header's "top field is not time" case), if the library takes such a
     * layout at all; if not, it must say the time field has to be on top. */
    l = NULL;
    int rc = idm_layout_parse(&l, "flag:1,time:51@1ms,seq:12", 5000);
    if (rc == 0) {
        assert_true(idm_layout_sign_bit(l, &from));
        assert_int_equal(from, 5000);
        idm_layout_free(l);
    } else {
        assert_int_equal(rc, IDM_ELAYOUT);
        check_detail("node field above time", "time");
    }

    /* 63 bits in all never sets it. */
    l = parse_ok("time:50@1ms,seq:13", 0);
    assert_false(idm_layout_sign_bit(l, NULL));
    idm_layout_free(l);
}

static void test_time_end(void **state)
{
    (void)state;
    idm_layout *l = preset("twitter");
    assert_int_equal(idm_layout_time_end(l), TWITTER_EPOCH + (INT64_C(1) << 41));
    assert_int_equal(idm_layout_time_end(l), INT64_C(3487858230209));
    idm_layout_free(l);
    l = preset("discord");
    assert_int_equal(idm_layout_time_end(l), DISCORD_EPOCH + (INT64_C(1) << 42));
    idm_layout_free(l);
    l = preset("instagram");
    assert_int_equal(idm_layout_time_end(l), INSTAGRAM_EPOCH + (INT64_C(1) << 41));
    idm_layout_free(l);
    l = preset("sonyflake");
    assert_int_equal(idm_layout_time_end(l),
                     SONYFLAKE_EPOCH + (INT64_C(1) << 39) * 10);
    idm_layout_free(l);
}

/* ---- decode / compose ranges ---- */

static void test_decode_range(void **state)
{
    (void)state;
    idm_decoded d;
    idm_layout *l = preset("twitter");
    IDM_ASSERT_RC(idm_layout_decode(l, UINT64_C(1) << 63, &d), IDM_ERANGE);
    IDM_ASSERT_RC(idm_layout_decode(l, UINT64_MAX, &d), IDM_ERANGE);
    IDM_ASSERT_OK(idm_layout_decode(l, INT64_MAX, &d));
    assert_int_equal(d.unix_ms, idm_layout_time_end(l) - 1);
    assert_int_equal(d.seq, 4095);
    assert_int_equal(d.value[1], 31);
    assert_int_equal(d.value[2], 31);
    IDM_ASSERT_OK(idm_layout_decode(l, 0, &d));
    assert_int_equal(d.unix_ms, TWITTER_EPOCH);
    assert_int_equal(d.tick, 0);
    idm_layout_free(l);

    l = preset("sonyflake");
    IDM_ASSERT_RC(idm_layout_decode(l, UINT64_C(1) << 63, &d), IDM_ERANGE);
    idm_layout_free(l);

    /* A 48-bit layout rejects bit 48 and anything above. */
    l = parse_ok("time:40@1ms,seq:8", 0);
    IDM_ASSERT_RC(idm_layout_decode(l, UINT64_C(1) << 48, &d), IDM_ERANGE);
    IDM_ASSERT_OK(idm_layout_decode(l, (UINT64_C(1) << 48) - 1, &d));
    idm_layout_free(l);

    /* 64-bit layouts take every id. */
    l = preset("instagram");
    IDM_ASSERT_OK(idm_layout_decode(l, UINT64_MAX, &d));
    assert_int_equal(d.unix_ms, idm_layout_time_end(l) - 1);
    assert_int_equal(d.value[1], 8191);
    assert_int_equal(d.seq, 1023);
    idm_layout_free(l);
}

static void test_compose_range(void **state)
{
    (void)state;
    idm_layout *l = preset("twitter");
    uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
    uint64_t id = 0;

    node[2] = 32; /* worker: 5 bits */
    IDM_ASSERT_RC(idm_layout_compose(l, TWITTER_EPOCH, node, 0, &id),
                  IDM_ERANGE);
    check_detail("worker 32", "worker");
    node[2] = 31;
    node[1] = 32; /* datacenter */
    IDM_ASSERT_RC(idm_layout_compose(l, TWITTER_EPOCH, node, 0, &id),
                  IDM_ERANGE);
    check_detail("datacenter 32", "datacenter");
    node[1] = UINT64_MAX;
    IDM_ASSERT_RC(idm_layout_compose(l, TWITTER_EPOCH, node, 0, &id),
                  IDM_ERANGE);
    node[1] = 31;
    IDM_ASSERT_RC(idm_layout_compose(l, TWITTER_EPOCH, node, 4096, &id),
                  IDM_ERANGE);
    check_detail("seq 4096", "seq");
    IDM_ASSERT_RC(idm_layout_compose(l, TWITTER_EPOCH - 1, node, 0, &id),
                  IDM_ERANGE);
    check_detail("time before epoch", "time|epoch");
    IDM_ASSERT_RC(idm_layout_compose(l, INT64_MIN, node, 0, &id), IDM_ERANGE);
    IDM_ASSERT_RC(idm_layout_compose(l, idm_layout_time_end(l), node, 0, &id),
                  IDM_ERANGE);
    check_detail("time past end", "time|end");
    IDM_ASSERT_RC(idm_layout_compose(l, INT64_MAX, node, 0, &id), IDM_ERANGE);

    /* Largest values fit. */
    IDM_ASSERT_OK(idm_layout_compose(l, idm_layout_time_end(l) - 1, node, 4095,
                                     &id));
    assert_int_equal(id, (uint64_t)INT64_MAX);
    /* Entries for time and seq are ignored. */
    node[0] = UINT64_MAX;
    node[3] = UINT64_MAX;
    IDM_ASSERT_OK(idm_layout_compose(l, TWITTER_EPOCH, node, 0, &id));
    assert_int_equal(id, (UINT64_C(31) << 17) | (UINT64_C(31) << 12));
    /* NULL node means all zeros. */
    IDM_ASSERT_OK(idm_layout_compose(l, TWITTER_EPOCH + 5, NULL, 3, &id));
    assert_int_equal(id, (UINT64_C(5) << 22) | 3);
    idm_layout_free(l);

    /* Sonyflake: a 10 ms tick floors; machine is 16 bits. */
    l = preset("sonyflake");
    memset(node, 0, sizeof node);
    node[2] = 65536;
    IDM_ASSERT_RC(idm_layout_compose(l, SONYFLAKE_EPOCH, node, 0, &id),
                  IDM_ERANGE);
    check_detail("machine 65536", "machine");
    node[2] = 7;
    IDM_ASSERT_RC(idm_layout_compose(l, SONYFLAKE_EPOCH, node, 256, &id),
                  IDM_ERANGE);
    IDM_ASSERT_OK(idm_layout_compose(l, SONYFLAKE_EPOCH + 29, node, 1, &id));
    assert_int_equal(id, (UINT64_C(2) << 24) | (UINT64_C(1) << 16) | 7);
    IDM_ASSERT_RC(idm_layout_compose(l, idm_layout_time_end(l), node, 0, &id),
                  IDM_ERANGE);
    IDM_ASSERT_OK(idm_layout_compose(l, idm_layout_time_end(l) - 1, node, 0,
                                     &id));
    assert_int_equal(id >> 24, (UINT64_C(1) << 39) - 1);
    idm_layout_free(l);
}

/* ---- idm_layout_range ---- */

static void expect_range(const idm_layout *l, idm_unix_ms from, idm_unix_ms to,
                         uint64_t want_min, uint64_t want_max)
{
    uint64_t mn = 1, mx = 0;
    IDM_ASSERT_OK(idm_layout_range(l, from, to, &mn, &mx));
    if (mn != want_min || mx != want_max) {
        print_error("range [%" PRId64 ", %" PRId64 ") = [%" PRIu64 ", %" PRIu64
                    "], expected [%" PRIu64 ", %" PRIu64 "]\n",
                    from, to, mn, mx, want_min, want_max);
        fail();
    }
}

static void expect_range_fail(const idm_layout *l, idm_unix_ms from,
                              idm_unix_ms to)
{
    uint64_t mn = 0, mx = 0;
    int rc = idm_layout_range(l, from, to, &mn, &mx);
    if (rc != IDM_ERANGE) {
        print_error("range [%" PRId64 ", %" PRId64 ") returned %s, expected "
                    "IDM_ERANGE (min %" PRIu64 " max %" PRIu64 ")\n",
                    from, to, idm_err_name(rc), mn, mx);
        fail();
    }
    assert_true(strlen(idm_error_detail()) > 0);
}

static void test_range_twitter(void **state)
{
    (void)state;
    idm_layout *l = preset("twitter");
    const int64_t e = TWITTER_EPOCH;
    expect_range(l, e + 1000, e + 2000, UINT64_C(1000) << 22,
                 (UINT64_C(2000) << 22) - 1);
    expect_range(l, e, e + 1, 0, (UINT64_C(1) << 22) - 1);
    /* 2026 (the reference id's millisecond). */
    expect_range(l, 1767225600000, 1767225600001,
                 (uint64_t)(1767225600000 - e) << 22,
                 ((uint64_t)(1767225600001 - e) << 22) - 1);
    /* The whole time field. */
    expect_range(l, e, idm_layout_time_end(l), 0, (uint64_t)INT64_MAX);
    /* The range holds exactly the ids whose time is in the window. */
    uint64_t mn, mx, id;
    IDM_ASSERT_OK(idm_layout_range(l, e + 1000, e + 2000, &mn, &mx));
    uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0, 31, 31, 0};
    IDM_ASSERT_OK(idm_layout_compose(l, e + 999, node, 4095, &id));
    assert_true(id < mn);
    IDM_ASSERT_OK(idm_layout_compose(l, e + 1000, NULL, 0, &id));
    assert_true(id == mn);
    IDM_ASSERT_OK(idm_layout_compose(l, e + 1999, node, 4095, &id));
    assert_true(id == mx);
    IDM_ASSERT_OK(idm_layout_compose(l, e + 2000, NULL, 0, &id));
    assert_true(id > mx);

    expect_range_fail(l, e + 5, e + 5);           /* empty */
    expect_range_fail(l, e + 6, e + 5);           /* reversed */
    expect_range_fail(l, e - 1, e + 5);           /* before the epoch */
    expect_range_fail(l, 0, e + 5);
    expect_range_fail(l, e, idm_layout_time_end(l) + 1); /* past the end */
    expect_range_fail(l, e, INT64_MAX);
    expect_range_fail(l, INT64_MIN, e + 5);
    idm_layout_free(l);
}

static void test_range_sonyflake(void **state)
{
    (void)state;
    idm_layout *l = preset("sonyflake");
    const int64_t e = SONYFLAKE_EPOCH;
    const unsigned sh = 24; /* time field shift */
    /* Aligned: ticks 2 and 3. */
    expect_range(l, e + 20, e + 40, UINT64_C(2) << sh, (UINT64_C(4) << sh) - 1);
    /* Unaligned from rounds up to the next tick start (20). */
    expect_range(l, e + 15, e + 40, UINT64_C(2) << sh, (UINT64_C(4) << sh) - 1);
    expect_range(l, e + 11, e + 40, UINT64_C(2) << sh, (UINT64_C(4) << sh) - 1);
    expect_range(l, e + 19, e + 40, UINT64_C(2) << sh, (UINT64_C(4) << sh) - 1);
    /* Unaligned to: tick 3 starts at 30 < 35, so it is in. */
    expect_range(l, e + 15, e + 35, UINT64_C(2) << sh, (UINT64_C(4) << sh) - 1);
    expect_range(l, e + 15, e + 31, UINT64_C(2) << sh, (UINT64_C(4) << sh) - 1);
    /* to = 30: tick 3 starts at 30, not in [15, 30). */
    expect_range(l, e + 15, e + 30, UINT64_C(2) << sh, (UINT64_C(3) << sh) - 1);
    expect_range(l, e + 15, e + 21, UINT64_C(2) << sh, (UINT64_C(3) << sh) - 1);
    /* From the epoch. */
    expect_range(l, e, e + 1, 0, (UINT64_C(1) << sh) - 1);
    expect_range(l, e, e + 10, 0, (UINT64_C(1) << sh) - 1);
    /* The whole time field: 63 bits. */
    expect_range(l, e, idm_layout_time_end(l), 0, (uint64_t)INT64_MAX);
    expect_range(l, idm_layout_time_end(l) - 10, idm_layout_time_end(l),
                 ((UINT64_C(1) << 39) - 1) << sh, (uint64_t)INT64_MAX);

    /* No tick starts inside these windows. */
    expect_range_fail(l, e + 11, e + 19);
    expect_range_fail(l, e + 15, e + 20);
    expect_range_fail(l, e + 1, e + 10);
    expect_range_fail(l, e + 20, e + 20);
    expect_range_fail(l, e - 1, e + 40);
    expect_range_fail(l, e, idm_layout_time_end(l) + 1);
    idm_layout_free(l);
}

/* ---- idm_layout_parse_node ---- */

static void test_parse_node(void **state)
{
    (void)state;
    idm_layout *l = preset("twitter");
    uint64_t node[IDM_LAYOUT_MAX_FIELDS];
    memset(node, 0, sizeof node);
    uint32_t set = 0;

    IDM_ASSERT_OK(idm_layout_parse_node(l, "worker=7", node, &set));
    assert_int_equal(node[2], 7);
    assert_int_equal(set, 1u << 2);
    IDM_ASSERT_OK(idm_layout_parse_node(l, "datacenter=31", node, &set));
    assert_int_equal(node[1], 31);
    assert_int_equal(set, (1u << 1) | (1u << 2));
    IDM_ASSERT_OK(idm_layout_parse_node(l, "datacenter=0", node, &set));
    assert_int_equal(node[1], 0);
    assert_int_equal(set, (1u << 1) | (1u << 2));
    IDM_ASSERT_OK(idm_layout_parse_node(l, "worker=007", node, &set));
    assert_int_equal(node[2], 7);

    const uint32_t set_before = set;
    IDM_ASSERT_RC(idm_layout_parse_node(l, "nosuch=1", node, &set), IDM_EINVAL);
    check_detail("unknown node", "nosuch");
    IDM_ASSERT_RC(idm_layout_parse_node(l, "time=5", node, &set), IDM_EINVAL);
    check_detail("time=", "time");
    IDM_ASSERT_RC(idm_layout_parse_node(l, "seq=1", node, &set), IDM_EINVAL);
    check_detail("seq=", "seq");
    IDM_ASSERT_RC(idm_layout_parse_node(l, "Worker=1", node, &set), IDM_EINVAL);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=32", node, &set), IDM_ERANGE);
    check_detail("worker=32", "worker");
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=18446744073709551616", node,
                                        &set),
                  IDM_ERANGE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=-1", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=+1", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=1x", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker= 1", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=1 ", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=1=2", node, &set), IDM_EPARSE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "worker=abc", node, &set), IDM_EPARSE);
    /* No '=' at all, or no name: malformed, whichever code. */
    int rc = idm_layout_parse_node(l, "worker", node, &set);
    assert_true(rc == IDM_EPARSE || rc == IDM_EINVAL);
    rc = idm_layout_parse_node(l, "=5", node, &set);
    assert_true(rc == IDM_EPARSE || rc == IDM_EINVAL);
    rc = idm_layout_parse_node(l, "", node, &set);
    assert_true(rc == IDM_EPARSE || rc == IDM_EINVAL);
    /* A failed assignment marks no field as given. */
    assert_int_equal(set, set_before);
    idm_layout_free(l);

    /* Sonyflake's machine is the field after seq. */
    l = preset("sonyflake");
    memset(node, 0, sizeof node);
    set = 0;
    IDM_ASSERT_OK(idm_layout_parse_node(l, "machine=65535", node, &set));
    assert_int_equal(node[2], 65535);
    assert_int_equal(set, 1u << 2);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "machine=65536", node, &set),
                  IDM_ERANGE);
    IDM_ASSERT_RC(idm_layout_parse_node(l, "seq=1", node, &set), IDM_EINVAL);
    idm_layout_free(l);
}

/* ---- property test over random layouts ---- */

#define PROP_LAYOUTS 3000
#define PROP_SAMPLES 8

typedef struct gen_layout {
    char text[IDM_LAYOUT_TEXT_MAX];
    size_t n;
    char names[IDM_LAYOUT_MAX_FIELDS][8];
    idm_field_kind kind[IDM_LAYOUT_MAX_FIELDS];
    unsigned bits[IDM_LAYOUT_MAX_FIELDS];
    int64_t tick;
    idm_unix_ms epoch;
} gen_layout;

static void gen_random_layout(idm_test_rng *r, gen_layout *g)
{
    static const int64_t ticks[] = {1, 2, 10, 100, 1000, 60000};
    memset(g, 0, sizeof *g);
    unsigned tbits = (unsigned)idm_test_rng_range(r, 1, 44);
    unsigned sbits = (unsigned)idm_test_rng_range(r, 1, 16);
    unsigned left = 64 - tbits - sbits;
    size_t nodes = (size_t)idm_test_rng_range(r, 0, 5);
    unsigned nbits[8];
    size_t k = 0;
    for (size_t i = 0; i < nodes && left > 0; i++) {
        unsigned b = (unsigned)idm_test_rng_range(r, 1, left < 16 ? left : 16);
        nbits[k++] = b;
        left -= b;
    }
    /* Order: time on top, seq anywhere below it (above some or all of the
     * node fields now and then, as in Sonyflake), nodes shuffled. */
    size_t n = k + 2;
    const size_t time_pos = 0;
    size_t seq_pos = (size_t)idm_test_rng_range(r, 1, n - 1);
    size_t next_node = 0;
    size_t perm[8];
    for (size_t i = 0; i < k; i++)
        perm[i] = i;
    for (size_t i = k; i > 1; i--) {
        size_t j = (size_t)idm_test_rng_range(r, 0, i - 1);
        size_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    g->tick = idm_test_rng_range(r, 0, 3) == 0
                  ? (int64_t)idm_test_rng_range(r, 1, IDM_TICK_MS_MAX)
                  : ticks[idm_test_rng_range(r, 0, 5)];
    g->epoch = (idm_unix_ms)idm_test_rng_range(r, 0, 2000000000000);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == time_pos) {
            snprintf(g->names[i], sizeof g->names[i], "time");
            g->kind[i] = IDM_FIELD_TIME;
            g->bits[i] = tbits;
        } else if (i == seq_pos) {
            snprintf(g->names[i], sizeof g->names[i], "seq");
            g->kind[i] = IDM_FIELD_SEQ;
            g->bits[i] = sbits;
        } else {
            size_t which = perm[next_node++];
            snprintf(g->names[i], sizeof g->names[i], "n%zu", which);
            g->kind[i] = IDM_FIELD_NODE;
            g->bits[i] = nbits[which];
        }
        int w;
        if (g->kind[i] == IDM_FIELD_TIME)
            w = snprintf(g->text + off, sizeof g->text - off, "%stime:%u@%" PRId64 "ms",
                         i ? "," : "", g->bits[i], g->tick);
        else
            w = snprintf(g->text + off, sizeof g->text - off, "%s%s:%u",
                         i ? "," : "", g->names[i], g->bits[i]);
        assert_true(w > 0 && (size_t)w < sizeof g->text - off);
        off += (size_t)w;
    }
    g->n = n;
}

static uint64_t field_max(unsigned bits)
{
    return bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

static void test_property_random_layouts(void **state)
{
    (void)state;
    idm_test_rng r;
    idm_test_rng_init(&r, idm_test_seed() ^ UINT64_C(0x6c61796f7574));
    size_t checked = 0;
    for (int it = 0; it < PROP_LAYOUTS; it++) {
        gen_layout g;
        gen_random_layout(&r, &g);
        idm_layout *l = NULL;
        int rc = idm_layout_parse(&l, g.text, g.epoch);
        if (rc != 0) {
            print_error("iteration %d: idm_layout_parse(\"%s\", %" PRId64
                        ") = %s; detail: %s\n",
                        it, g.text, g.epoch, idm_err_name(rc),
                        idm_error_detail());
            fail();
        }
        /* Shape. */
        assert_int_equal(idm_layout_field_count(l), g.n);
        assert_int_equal(idm_layout_tick_ms(l), g.tick);
        assert_int_equal(idm_layout_epoch(l), g.epoch);
        unsigned total = 0;
        size_t tf = 0, sf = 0;
        for (size_t i = 0; i < g.n; i++)
            total += g.bits[i];
        assert_int_equal(idm_layout_bits(l), total);
        unsigned shift = total;
        for (size_t i = 0; i < g.n; i++) {
            idm_field_info f;
            IDM_ASSERT_OK(idm_layout_field(l, i, &f));
            shift -= g.bits[i];
            assert_string_equal(f.name, g.names[i]);
            assert_int_equal(f.kind, g.kind[i]);
            assert_int_equal(f.bits, g.bits[i]);
            assert_int_equal(f.shift, shift);
            assert_int_equal(f.max, field_max(g.bits[i]));
            if (g.kind[i] == IDM_FIELD_TIME)
                tf = i;
            if (g.kind[i] == IDM_FIELD_SEQ)
                sf = i;
        }
        assert_int_equal(idm_layout_seq_bits(l), g.bits[sf]);
        const idm_unix_ms end =
            g.epoch + (int64_t)(UINT64_C(1) << g.bits[tf]) * g.tick;
        assert_int_equal(idm_layout_time_end(l), end);

        /* Format / parse round trip. */
        char buf[IDM_LAYOUT_TEXT_MAX];
        IDM_ASSERT_OK(idm_layout_format(l, buf, sizeof buf));
        idm_layout *back = parse_ok(buf, g.epoch);
        assert_same_layout(l, back);
        idm_layout_free(back);

        for (int s = 0; s < PROP_SAMPLES; s++) {
            uint64_t node[IDM_LAYOUT_MAX_FIELDS];
            for (size_t i = 0; i < IDM_LAYOUT_MAX_FIELDS; i++)
                node[i] = i < g.n && g.kind[i] == IDM_FIELD_NODE
                              ? idm_test_rng_range(&r, 0, field_max(g.bits[i]))
                              : idm_test_rng_next(&r); /* ignored entries */
            uint64_t seq = idm_test_rng_range(&r, 0, field_max(g.bits[sf]));
            idm_unix_ms t1, t2;
            switch (s % 4) {
            case 0: /* edges of the time field */
                t1 = g.epoch;
                t2 = end - 1;
                break;
            default:
                t1 = (idm_unix_ms)idm_test_rng_range(&r, (uint64_t)g.epoch,
                                                     (uint64_t)(end - 1));
                t2 = (idm_unix_ms)idm_test_rng_range(&r, (uint64_t)g.epoch,
                                                     (uint64_t)(end - 1));
                break;
            }
            if (t1 > t2) {
                idm_unix_ms t = t1;
                t1 = t2;
                t2 = t;
            }
            uint64_t id1 = 0, id2 = 0;
            IDM_ASSERT_OK(idm_layout_compose(l, t1, node, seq, &id1));
            IDM_ASSERT_OK(idm_layout_compose(l, t2, node, seq, &id2));
            /* Monotonic in time for fixed node and seq. */
            const uint64_t tick1 = (uint64_t)((t1 - g.epoch) / g.tick);
            const uint64_t tick2 = (uint64_t)((t2 - g.epoch) / g.tick);
            if (tick1 < tick2)
                assert_true(id1 < id2);
            else
                assert_true(id1 == id2);
            /* No bits above the layout. */
            if (total < 64)
                assert_true(id2 >> total == 0);

            /* Decode gives the same values back. */
            idm_decoded d;
            IDM_ASSERT_OK(idm_layout_decode(l, id1, &d));
            assert_int_equal(d.tick, tick1);
            assert_int_equal(d.unix_ms, g.epoch + (int64_t)tick1 * g.tick);
            assert_int_equal(d.seq, seq);
            for (size_t i = 0; i < g.n; i++) {
                if (g.kind[i] == IDM_FIELD_NODE)
                    assert_int_equal(d.value[i], node[i]);
                else if (g.kind[i] == IDM_FIELD_SEQ)
                    assert_int_equal(d.value[i], seq);
                else
                    assert_int_equal(d.value[i], tick1);
            }
            /* And composing the decoded values gives the id again. */
            uint64_t id3 = 0;
            IDM_ASSERT_OK(idm_layout_compose(l, d.unix_ms, d.value, d.seq, &id3));
            assert_int_equal(id3, id1);
            checked++;
        }
        idm_layout_free(l);
    }
    print_message("# %zu compose/decode samples over %d random layouts\n",
                  checked, PROP_LAYOUTS);
    assert_int_equal(checked, (size_t)PROP_LAYOUTS * PROP_SAMPLES);
}

int main(void)
{
    /* Print the seed up front so any failure can be replayed. */
    (void)idm_test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_bits_errors),
        cmocka_unit_test(test_parse_structure_errors),
        cmocka_unit_test(test_parse_tick_errors),
        cmocka_unit_test(test_parse_name_errors),
        cmocka_unit_test(test_parse_syntax_errors),
        cmocka_unit_test(test_parse_huge_numbers),
        cmocka_unit_test(test_parse_epoch_errors),
        cmocka_unit_test(test_from_spec),
        cmocka_unit_test(test_preset_names),
        cmocka_unit_test(test_preset_twitter),
        cmocka_unit_test(test_preset_discord),
        cmocka_unit_test(test_preset_instagram),
        cmocka_unit_test(test_preset_sonyflake),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_sign_bit),
        cmocka_unit_test(test_time_end),
        cmocka_unit_test(test_decode_range),
        cmocka_unit_test(test_compose_range),
        cmocka_unit_test(test_range_twitter),
        cmocka_unit_test(test_range_sonyflake),
        cmocka_unit_test(test_parse_node),
        cmocka_unit_test(test_property_random_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
