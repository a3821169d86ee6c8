/* SPDX-License-Identifier: MIT */
/*
 * Known-answer tests for the layout presets: every line of
 * tests/data/snowflake_vectors.tsv (layout, id, unix_ms, fields, source) is
 * decoded on the preset named in the line. Where the source gives the time
 * to the millisecond and the fields, the time and every field must match,
 * and the id must compose back from them; where it gives the time to the
 * second only (unix_ms written LO..HI), the decoded time must lie in that
 * second. The file must hold at least MIN_VECTORS cases, and each preset in
 * min_exact[] that many vectors known to the millisecond (so an epoch off by
 * one millisecond fails), so an empty or truncated file fails.
 */
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VECTOR_FILE "snowflake_vectors.tsv"
#define MIN_VECTORS 7
#define LINE_MAX_LEN 2048

static const char *const presets[] = {"twitter", "discord", "instagram",
                                      "sonyflake"};
#define N_PRESETS (sizeof presets / sizeof presets[0])
/* The vectors known to the millisecond each preset must have. Sonyflake
 * has none: no Sonyflake id has been published with its time. */
static const int min_exact[N_PRESETS] = {1, 1, 1, 0};

/* Strict decimal parse of an unsigned 64-bit value, independent of the
 * library's own text codecs. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
    uint64_t v;
    if (parse_u64(s, &v) != 0 || v > (uint64_t)INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static FILE *open_vectors(void)
{
    const char *dir = getenv("IDM_TEST_DATA");
    if (dir == NULL || *dir == '\0') {
        print_error("IDM_TEST_DATA is not set\n");
        fail();
    }
    char *path = idm_test_path(dir, VECTOR_FILE);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        print_error("cannot open %s: %s\n", path, strerror(errno));
        free(path);
        fail();
    }
    free(path);
    return f;
}

/* Split line in place at tabs into exactly n columns. */
static int split_tabs(char *line, char **cols, int n)
{
    int i = 0;
    cols[i++] = line;
    for (char *p = line; *p != '\0'; p++) {
        if (*p == '\t') {
            if (i == n)
                return -1;
            *p = '\0';
            cols[i++] = p + 1;
        }
    }
    return i == n ? 0 : -1;
}

static int preset_index(const char *name)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i], name) == 0)
            return (int)i;
    return -1;
}

/* The unix_ms column: "N" (lo = hi = N, the time to the millisecond) or
 * "LO..HI" (the second the source gives). 0, or -1 if malformed. */
static int parse_time(char *s, idm_unix_ms *lo, idm_unix_ms *hi)
{
    char *dots = strstr(s, "..");
    if (dots == NULL) {
        if (parse_i64(s, lo) != 0)
            return -1;
        *hi = *lo;
        return 0;
    }
    *dots = '\0';
    if (parse_i64(s, lo) != 0 || parse_i64(dots + 2, hi) != 0 || *hi < *lo)
        return -1;
    return 0;
}

/* Check one vector; lineno for messages. lo == hi: the time is known to the
 * millisecond; fields "-": the source gives none. */
static void check_vector(int lineno, const char *layout_name, uint64_t id,
                         idm_unix_ms lo, idm_unix_ms hi, char *fields)
{
    idm_layout *l = NULL;
    IDM_ASSERT_OK(idm_layout_preset(&l, layout_name));
    assert_non_null(l);

    size_t nfields = idm_layout_field_count(l);
    assert_true(nfields >= 2 && nfields <= IDM_LAYOUT_MAX_FIELDS);

    idm_decoded dec;
    memset(&dec, 0xA5, sizeof dec);
    IDM_ASSERT_OK(idm_layout_decode(l, id, &dec));
    if (dec.unix_ms < lo || dec.unix_ms > hi) {
        if (lo == hi)
            print_error("line %d: %s id %" PRIu64 " decodes to unix_ms %" PRId64
                        ", expected %" PRId64 "\n",
                        lineno, layout_name, id, dec.unix_ms, lo);
        else
            print_error("line %d: %s id %" PRIu64 " decodes to unix_ms %" PRId64
                        ", expected %" PRId64 "..%" PRId64 "\n",
                        lineno, layout_name, id, dec.unix_ms, lo, hi);
        fail();
    }

    int64_t tick_ms = idm_layout_tick_ms(l);
    assert_true(tick_ms >= 1);
    idm_unix_ms epoch = idm_layout_epoch(l);
    assert_true(dec.unix_ms >= epoch);
    /* unix_ms is a tick's start; the tick is the elapsed ticks. */
    assert_int_equal((dec.unix_ms - epoch) % tick_ms, 0);
    assert_int_equal(dec.tick, (uint64_t)((dec.unix_ms - epoch) / tick_ms));
    if (strcmp(fields, "-") == 0) {
        idm_layout_free(l);
        return;
    }
    if (lo != hi) {
        print_error("line %d: fields given for a time known to the second "
                    "only: they can only have come from decoding\n",
                    lineno);
        fail();
    }
    idm_unix_ms unix_ms = lo;

    /* Walk the fields column in layout order, skipping the time field. */
    uint64_t node[IDM_LAYOUT_MAX_FIELDS];
    memset(node, 0, sizeof node);
    uint64_t seq = UINT64_MAX;
    size_t listed = 0;
    size_t next_field = 0;
    char *save = NULL;
    for (char *tok = strtok_r(fields, " ", &save); tok != NULL;
         tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) {
            print_error("line %d: malformed field '%s'\n", lineno, tok);
            fail();
        }
        *eq = '\0';
        uint64_t want = 0;
        if (parse_u64(eq + 1, &want) != 0) {
            print_error("line %d: bad value for '%s'\n", lineno, tok);
            fail();
        }
        int idx = idm_layout_field_index(l, tok);
        if (idx < 0) {
            print_error("line %d: layout %s has no field '%s'\n", lineno,
                        layout_name, tok);
            fail();
        }
        idm_field_info info;
        IDM_ASSERT_OK(idm_layout_field(l, (size_t)idx, &info));
        assert_int_not_equal(info.kind, IDM_FIELD_TIME);
        /* In layout order: idx is the next non-time field. */
        while (next_field < nfields) {
            idm_field_info f;
            IDM_ASSERT_OK(idm_layout_field(l, next_field, &f));
            if (f.kind != IDM_FIELD_TIME)
                break;
            next_field++;
        }
        if ((size_t)idx != next_field) {
            print_error("line %d: field '%s' out of layout order\n", lineno,
                        tok);
            fail();
        }
        next_field++;
        if (dec.value[idx] != want) {
            print_error("line %d: %s id %" PRIu64 " field %s = %" PRIu64
                        ", expected %" PRIu64 "\n",
                        lineno, layout_name, id, tok, dec.value[idx], want);
            fail();
        }
        if (info.kind == IDM_FIELD_SEQ) {
            assert_int_equal(dec.seq, want);
            seq = want;
        } else {
            node[idx] = want;
        }
        listed++;
    }
    /* Every field but time is listed, seq included. */
    if (listed != nfields - 1) {
        print_error("line %d: %zu fields listed, layout %s has %zu besides "
                    "time\n",
                    lineno, listed, layout_name, nfields - 1);
        fail();
    }
    assert_int_not_equal(seq, UINT64_MAX);

    /* The time field's raw value is the tick. */
    for (size_t i = 0; i < nfields; i++) {
        idm_field_info f;
        IDM_ASSERT_OK(idm_layout_field(l, i, &f));
        if (f.kind == IDM_FIELD_TIME)
            assert_int_equal(dec.value[i], dec.tick);
    }

    /* Compose back, at the tick start and at its last millisecond. */
    uint64_t got = 0;
    IDM_ASSERT_OK(idm_layout_compose(l, unix_ms, node, seq, &got));
    if (got != id) {
        print_error("line %d: %s compose(%" PRId64 ", ...) = %" PRIu64
                    ", expected %" PRIu64 "\n",
                    lineno, layout_name, unix_ms, got, id);
        fail();
    }
    got = 0;
    IDM_ASSERT_OK(idm_layout_compose(l, unix_ms + tick_ms - 1, node, seq, &got));
    assert_int_equal(got, id);

    idm_layout_free(l);
}

static void test_vectors_all(void **state)
{
    (void)state;
    FILE *f = open_vectors();
    char line[LINE_MAX_LEN];
    int lineno = 0;
    int cases = 0;
    int exact[N_PRESETS] = {0};
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] != '\n' && !feof(f)) {
            print_error("line %d: longer than %d bytes\n", lineno,
                        LINE_MAX_LEN);
            fail();
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        char *cols[5];
        if (split_tabs(line, cols, 5) != 0) {
            print_error("line %d: expected 5 tab-separated columns\n", lineno);
            fail();
        }
        int p = preset_index(cols[0]);
        if (p < 0) {
            print_error("line %d: unknown layout '%s'\n", lineno, cols[0]);
            fail();
        }
        uint64_t id = 0;
        idm_unix_ms lo = 0, hi = 0;
        if (parse_u64(cols[1], &id) != 0 ||
            parse_time(cols[2], &lo, &hi) != 0) {
            print_error("line %d: bad id or unix_ms\n", lineno);
            fail();
        }
        if (strlen(cols[4]) < 10) {
            print_error("line %d: the source column must name a source\n",
                        lineno);
            fail();
        }
        check_vector(lineno, cols[0], id, lo, hi, cols[3]);
        if (lo == hi)
            exact[p]++;
        cases++;
    }
    fclose(f);
    print_message("# %d vectors checked\n", cases);
    if (cases < MIN_VECTORS) {
        print_error("%d vectors, want at least %d\n", cases, MIN_VECTORS);
        fail();
    }
    for (size_t i = 0; i < N_PRESETS; i++) {
        if (exact[i] < min_exact[i]) {
            print_error("preset %s has %d vectors known to the millisecond, "
                        "want at least %d\n",
                        presets[i], exact[i], min_exact[i]);
            fail();
        }
    }
}

/* A corrupted vector must not pass: flipping any one bit of a known id
 * changes its decoding or is rejected. Guards the checker itself. */
static void test_vectors_detect_corruption(void **state)
{
    (void)state;
    idm_layout *l = NULL;
    IDM_ASSERT_OK(idm_layout_preset(&l, "discord"));
    const uint64_t id = 175928847299117063u;
    idm_decoded ref;
    IDM_ASSERT_OK(idm_layout_decode(l, id, &ref));
    assert_int_equal(ref.unix_ms, 1462015105796);
    for (int bit = 0; bit < 64; bit++) {
        idm_decoded d;
        int rc = idm_layout_decode(l, id ^ (UINT64_C(1) << bit), &d);
        assert_int_equal(rc, 0); /* discord uses all 64 bits */
        int same = d.unix_ms == ref.unix_ms && d.seq == ref.seq;
        for (size_t i = 0; i < idm_layout_field_count(l); i++)
            same = same && d.value[i] == ref.value[i];
        assert_false(same);
    }
    idm_layout_free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_all),
        cmocka_unit_test(test_vectors_detect_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
