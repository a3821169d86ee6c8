/* SPDX-License-Identifier: MIT */
/*
 * Tests for idmint/opaque.h: SipHash-2-4 against the 64 reference vectors
 * of the SipHash paper's implementation (key 00..0f, messages 00..len-1);
 * key parsing (accepted forms, and errors for empty, short, long, non-hex
 * and two-line keys, with details that never contain key material); the
 * permutation: exhaustive on small domains (8, 16 and 20 bits, and 16 and
 * 20 bits cycle-walked to a limit: every value maps to a distinct value in
 * range and decrypts back), 1,000,000 seeded random 63-bit ids (round trip,
 * range, no collisions), different keys giving different permutations, no
 * order kept (inversions between consecutive ids about half), a pinned
 * known answer; and the text forms: exact texts at the ends of the range,
 * fixed lengths, round trips, case, and malformed text (empty, wrong
 * length, bad characters with their position, values above 2^63-1).
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Internal (src/core/opaque.c). */
uint64_t idm__siphash24(const uint8_t key[16], const void *msg, size_t len);
int idm__opaque_encrypt_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit,
                             uint64_t x, uint64_t *out);
int idm__opaque_decrypt_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit,
                             uint64_t y, uint64_t *out);

#define LIMIT63 (UINT64_C(1) << 63)

static const char KEY_A[] = "000102030405060708090a0b0c0d0e0f";
static const char KEY_B[] = "8f3a6c21d4e5b7a90c1d2e3f40516273";

static void key_of(const char *hex, idm_opaque_key *k)
{
    IDM_ASSERT_OK(idm_opaque_key_parse(hex, k));
}

/* ---- SipHash-2-4 ---- */

/* vectors_sip64 of the reference implementation (github.com/veorq/SipHash),
 * as little-endian 64-bit values. Entry 15 is the paper's a129ca6149be45e5. */
static const uint64_t SIP64[64] = {
    UINT64_C(0x726fdb47dd0e0e31), UINT64_C(0x74f839c593dc67fd), UINT64_C(0x0d6c8009d9a94f5a),
    UINT64_C(0x85676696d7fb7e2d), UINT64_C(0xcf2794e0277187b7), UINT64_C(0x18765564cd99a68d),
    UINT64_C(0xcbc9466e58fee3ce), UINT64_C(0xab0200f58b01d137), UINT64_C(0x93f5f5799a932462),
    UINT64_C(0x9e0082df0ba9e4b0), UINT64_C(0x7a5dbbc594ddb9f3), UINT64_C(0xf4b32f46226bada7),
    UINT64_C(0x751e8fbc860ee5fb), UINT64_C(0x14ea5627c0843d90), UINT64_C(0xf723ca908e7af2ee),
    UINT64_C(0xa129ca6149be45e5), UINT64_C(0x3f2acc7f57c29bdb), UINT64_C(0x699ae9f52cbe4794),
    UINT64_C(0x4bc1b3f0968dd39c), UINT64_C(0xbb6dc91da77961bd), UINT64_C(0xbed65cf21aa2ee98),
    UINT64_C(0xd0f2cbb02e3b67c7), UINT64_C(0x93536795e3a33e88), UINT64_C(0xa80c038ccd5ccec8),
    UINT64_C(0xb8ad50c6f649af94), UINT64_C(0xbce192de8a85b8ea), UINT64_C(0x17d835b85bbb15f3),
    UINT64_C(0x2f2e6163076bcfad), UINT64_C(0xde4daaaca71dc9a5), UINT64_C(0xa6a2506687956571),
    UINT64_C(0xad87a3535c49ef28), UINT64_C(0x32d892fad841c342), UINT64_C(0x7127512f72f27cce),
    UINT64_C(0xa7f32346f95978e3), UINT64_C(0x12e0b01abb051238), UINT64_C(0x15e034d40fa197ae),
    UINT64_C(0x314dffbe0815a3b4), UINT64_C(0x027990f029623981), UINT64_C(0xcadcd4e59ef40c4d),
    UINT64_C(0x9abfd8766a33735c), UINT64_C(0x0e3ea96b5304a7d0), UINT64_C(0xad0c42d6fc585992),
    UINT64_C(0x187306c89bc215a9), UINT64_C(0xd4a60abcf3792b95), UINT64_C(0xf935451de4f21df2),
    UINT64_C(0xa9538f0419755787), UINT64_C(0xdb9acddff56ca510), UINT64_C(0xd06c98cd5c0975eb),
    UINT64_C(0xe612a3cb9ecba951), UINT64_C(0xc766e62cfcadaf96), UINT64_C(0xee64435a9752fe72),
    UINT64_C(0xa192d576b245165a), UINT64_C(0x0a8787bf8ecb74b2), UINT64_C(0x81b3e73d20b49b6f),
    UINT64_C(0x7fa8220ba3b2ecea), UINT64_C(0x245731c13ca42499), UINT64_C(0xb78dbfaf3a8d83bd),
    UINT64_C(0xea1ad565322a1a0b), UINT64_C(0x60e61c23a3795013), UINT64_C(0x6606d7e446282b93),
    UINT64_C(0x6ca4ecb15c5f91e1), UINT64_C(0x9f626da15c9625f3), UINT64_C(0xe51b38608ef25f57),
    UINT64_C(0x958a324ceb064572),
};

static void siphash_vectors(void **state)
{
    (void)state;
    uint8_t key[16], msg[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    for (size_t len = 0; len < 64; len++) {
        uint64_t got = idm__siphash24(key, msg, len);
        CHECK(got == SIP64[len], "length %zu: %016llx, expected %016llx", len, ULL(got),
              ULL(SIP64[len]));
    }
    assert_true(idm__siphash24(key, msg, 15) == UINT64_C(0xa129ca6149be45e5));
}

/* ---- keys ---- */

static void key_parse_ok(void **state)
{
    (void)state;
    idm_opaque_key a, b;
    uint64_t ya, yb;
    key_of(KEY_B, &a);
    IDM_ASSERT_OK(idm_opaque_encrypt(&a, 12345, &ya));
    /* Upper case, a trailing "\n" or "\r\n": the same key. */
    const char *same[] = {
        "8F3A6C21D4E5B7A90C1D2E3F40516273",
        "8f3a6c21d4e5b7a90c1d2e3f40516273\n",
        "8f3a6C21d4E5b7A90c1d2e3f40516273\r\n",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        key_of(same[i], &b);
        IDM_ASSERT_OK(idm_opaque_encrypt(&b, 12345, &yb));
        CHECK(ya == yb, "key form %zu gives another permutation", i);
    }
}

static void expect_key_error(const char *hex, const char *want_detail)
{
    idm_opaque_key k;
    memset(&k, 0x5a, sizeof k);
    IDM_ASSERT_RC(idm_opaque_key_parse(hex, &k), IDM_EPARSE);
    const char *d = idm_error_detail();
    CHECK(strstr(d, want_detail) != NULL, "key '%s': detail '%s' lacks '%s'", hex, d,
          want_detail);
    /* No run of 4 characters of the key text in the detail. */
    for (size_t i = 0; i + 4 <= strlen(hex); i++) {
        char run[5];
        memcpy(run, hex + i, 4);
        run[4] = '\0';
        int hexrun = 1;
        for (int j = 0; j < 4; j++)
            hexrun &= strchr("0123456789abcdefABCDEF", run[j]) != NULL;
        CHECK(!hexrun || strstr(d, run) == NULL, "detail '%s' shows key text '%s'", d, run);
    }
    for (size_t i = 0; i < sizeof k; i++)
        CHECK(((const uint8_t *)&k)[i] == 0x5a, "key output touched on failure");
}

static void key_parse_errors(void **state)
{
    (void)state;
    expect_key_error("", "empty");
    expect_key_error("\n", "empty");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f4051627", "31 hex digits, need 32");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f405162731", "33 hex digits, need 32");
    /* 256-bit keys are not taken. */
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f405162738f3a6c21d4e5b7a90c1d2e3f40516273",
                     "64 hex digits, need 32");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f4051627g", "character 32 is not a hex digit");
    expect_key_error("0x8f3a6c21d4e5b7a90c1d2e3f40516273", "character 2 is not a hex digit");
    expect_key_error("8f3a6c21 d4e5b7a90c1d2e3f40516273", "character 9 is white space");
    expect_key_error(" 8f3a6c21d4e5b7a90c1d2e3f40516273", "character 1 is white space");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f40516273\n\n", "character 33 is a line break");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f40516273\n8f3a", "character 33 is a line break");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f40516273 \n", "character 33 is white space");
    expect_key_error("8f3a6c21d4e5b7a90c1d2e3f4051627\xc3\xa9", "a non-ASCII byte");
    idm_opaque_key k;
    IDM_ASSERT_RC(idm_opaque_key_parse(NULL, &k), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_key_parse(KEY_A, NULL), IDM_EINVAL);
}

/* ---- the permutation ---- */

/* Every value of [0, limit) in a domain of bits bits maps to a distinct
 * value below limit, and decrypts back. limit 0: 2^bits. */
static void check_domain(const idm_opaque_key *k, unsigned bits, uint64_t limit)
{
    uint64_t n = limit != 0 ? limit : UINT64_C(1) << bits;
    uint8_t *seen = calloc((size_t)n / 8 + 1, 1);
    assert_non_null(seen);
    uint64_t fixed = 0;
    for (uint64_t x = 0; x < n; x++) {
        uint64_t y, back;
        IDM_ASSERT_OK(idm__opaque_encrypt_bits(k, bits, limit, x, &y));
        CHECK(y < n, "%u bits, limit %llu: %llu -> %llu out of range", bits, ULL(limit),
              ULL(x), ULL(y));
        CHECK(!(seen[y / 8] >> (y % 8) & 1), "%u bits: %llu hit twice", bits, ULL(y));
        seen[y / 8] |= (uint8_t)(1u << (y % 8));
        IDM_ASSERT_OK(idm__opaque_decrypt_bits(k, bits, limit, y, &back));
        CHECK(back == x, "%u bits: %llu -> %llu -> %llu", bits, ULL(x), ULL(y), ULL(back));
        fixed += y == x;
    }
    /* A random permutation has about 1 fixed point. */
    CHECK(fixed < 16, "%u bits: %llu fixed points", bits, ULL(fixed));
    free(seen);
    uint64_t y;
    IDM_ASSERT_RC(idm__opaque_encrypt_bits(k, bits, limit, n, &y), IDM_ERANGE);
    IDM_ASSERT_RC(idm__opaque_decrypt_bits(k, bits, limit, n, &y), IDM_ERANGE);
}

static void permutation_exhaustive(void **state)
{
    (void)state;
    idm_opaque_key k;
    key_of(KEY_B, &k);
    check_domain(&k, 8, 0);
    check_domain(&k, 16, 0);
    check_domain(&k, 20, 0);
    check_domain(&k, 16, 40000);
    check_domain(&k, 20, (UINT64_C(1) << 19) + 12345);
    check_domain(&k, 8, 129);
    uint64_t y;
    IDM_ASSERT_RC(idm__opaque_encrypt_bits(&k, 7, 0, 1, &y), IDM_EINVAL);
    IDM_ASSERT_RC(idm__opaque_encrypt_bits(&k, 6, 0, 1, &y), IDM_EINVAL);
    IDM_ASSERT_RC(idm__opaque_encrypt_bits(&k, 66, 0, 1, &y), IDM_EINVAL);
    IDM_ASSERT_RC(idm__opaque_encrypt_bits(&k, 16, 70000, 1, &y), IDM_EINVAL);
    /* The 63-bit API is the 64-bit domain walked to 2^63. */
    uint64_t a, b;
    for (uint64_t x = 0; x < 1000; x++) {
        IDM_ASSERT_OK(idm_opaque_encrypt(&k, x * 0x9e3779b97f4a7c1 % LIMIT63, &a));
        IDM_ASSERT_OK(idm__opaque_encrypt_bits(&k, 64, LIMIT63, x * 0x9e3779b97f4a7c1 % LIMIT63, &b));
        assert_true(a == b);
    }
}

#define SAMPLES 1000000

static void permutation_sampled_63(void **state)
{
    (void)state;
    idm_opaque_key k;
    key_of(KEY_A, &k);
    idm_test_rng r;
    idm_test_rng_init(&r, idm_test_seed());
    uint64_t *xs = malloc(SAMPLES * sizeof *xs), *ys = malloc(SAMPLES * sizeof *ys);
    assert_non_null(xs);
    assert_non_null(ys);
    for (size_t i = 0; i < SAMPLES; i++) {
        uint64_t x = i < 3 ? (uint64_t[]){0, 1, LIMIT63 - 1}[i] : idm_test_rng_next(&r) >> 1;
        uint64_t y, back;
        IDM_ASSERT_OK(idm_opaque_encrypt(&k, x, &y));
        CHECK(y < LIMIT63, "%llu -> %llu, not below 2^63", ULL(x), ULL(y));
        IDM_ASSERT_OK(idm_opaque_decrypt(&k, y, &back));
        CHECK(back == x, "%llu -> %llu -> %llu", ULL(x), ULL(y), ULL(back));
        xs[i] = x;
        ys[i] = y;
    }
    /* As many repeats among the outputs as among the inputs (almost surely
     * none): no two ids collide. */
    size_t dx = idm_test_count_duplicates(xs, SAMPLES);
    size_t dy = idm_test_count_duplicates(ys, SAMPLES);
    CHECK(dx == dy, "%zu repeats among inputs, %zu among outputs", dx, dy);
    /* The top bit of the 63 is set about half the time. */
    size_t high = 0;
    for (size_t i = 0; i < SAMPLES; i++)
        high += ys[i] >> 62 & 1;
    CHECK(high > SAMPLES / 2 - 5000 && high < SAMPLES / 2 + 5000, "bit 62 set %zu times", high);
    free(xs);
    free(ys);
}

static void permutation_keys_differ(void **state)
{
    (void)state;
    idm_opaque_key a, b, c;
    key_of(KEY_A, &a);
    key_of(KEY_B, &b);
    key_of("000102030405060708090a0b0c0d0e0e", &c); /* one bit from KEY_A */
    size_t same_ab = 0, same_ac = 0;
    for (uint64_t x = 0; x < 1000; x++) {
        uint64_t ya, yb, yc;
        IDM_ASSERT_OK(idm_opaque_encrypt(&a, x, &ya));
        IDM_ASSERT_OK(idm_opaque_encrypt(&b, x, &yb));
        IDM_ASSERT_OK(idm_opaque_encrypt(&c, x, &yc));
        same_ab += ya == yb;
        same_ac += ya == yc;
    }
    CHECK(same_ab == 0 && same_ac == 0, "%zu and %zu of 1000 outputs agree", same_ab, same_ac);
}

/* Consecutive ids, as a Snowflake generator mints them: their opaque
 * values are not ordered, and not close to one another. */
static void permutation_hides_order(void **state)
{
    (void)state;
    idm_opaque_key k;
    key_of(KEY_A, &k);
    const uint64_t bases[] = {0, UINT64_C(1) << 22, UINT64_C(1835183749165305856)};
    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
        size_t n = 10000, inversions = 0, fixed = 0;
        uint64_t prev = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t x = bases[b] + i, y;
            IDM_ASSERT_OK(idm_opaque_encrypt(&k, x, &y));
            fixed += y == x;
            if (i > 0)
                inversions += y < prev;
            prev = y;
        }
        CHECK(fixed == 0, "%zu fixed points", fixed);
        /* n - 1 pairs, each inverted with probability 1/2: sd 50. */
        CHECK(inversions > 4700 && inversions < 5300, "base %llu: %zu inversions of %zu",
              ULL(bases[b]), inversions, n - 1);
    }
}

/* Opaque values published once must decrypt forever: the construction is
 * pinned by known answers (computed by an independent Python model of
 * SipHash-2-4, the Feistel network and the cycle walk, key 00..0f). */
static void permutation_known_answers(void **state)
{
    (void)state;
    idm_opaque_key k;
    key_of(KEY_A, &k);
    static const struct {
        uint64_t x, y;
    } kat[] = {
        {UINT64_C(0), UINT64_C(8580526688464775992)},
        {UINT64_C(1), UINT64_C(7297081533020155761)},
        {UINT64_C(2), UINT64_C(3697951355908787179)},
        {UINT64_C(3), UINT64_C(4305505409409058625)},
        {UINT64_C(1000), UINT64_C(6986434616382772759)},
        {UINT64_C(9223372036854775807), UINT64_C(8398182892029139375)},
        {UINT64_C(4611686018427387904), UINT64_C(4435066039705293059)},
        {UINT64_C(1835183749165305856), UINT64_C(8928946390235091293)},
        {UINT64_C(123456789012345678), UINT64_C(8796293293762920691)},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint64_t y, x;
        IDM_ASSERT_OK(idm_opaque_encrypt(&k, kat[i].x, &y));
        CHECK(y == kat[i].y, "%llu -> %llu, expected %llu", ULL(kat[i].x), ULL(y), ULL(kat[i].y));
        IDM_ASSERT_OK(idm_opaque_decrypt(&k, kat[i].y, &x));
        assert_true(x == kat[i].x);
    }
}

static void permutation_errors(void **state)
{
    (void)state;
    idm_opaque_key k;
    key_of(KEY_A, &k);
    uint64_t y = 77;
    IDM_ASSERT_RC(idm_opaque_encrypt(&k, LIMIT63, &y), IDM_ERANGE);
    CHECK(strstr(idm_error_detail(), "2^63-1") != NULL, "detail '%s'", idm_error_detail());
    IDM_ASSERT_RC(idm_opaque_encrypt(&k, UINT64_MAX, &y), IDM_ERANGE);
    IDM_ASSERT_RC(idm_opaque_decrypt(&k, LIMIT63, &y), IDM_ERANGE);
    IDM_ASSERT_RC(idm_opaque_decrypt(&k, UINT64_MAX, &y), IDM_ERANGE);
    assert_true(y == 77);
    IDM_ASSERT_RC(idm_opaque_encrypt(NULL, 1, &y), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_encrypt(&k, 1, NULL), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_decrypt(NULL, 1, &y), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_decrypt(&k, 1, NULL), IDM_EINVAL);
}

/* ---- text ---- */

static void expect_format(uint64_t y, idm_opaque_encoding enc, const char *want)
{
    char buf[IDM_OPAQUE_TEXT_MAX + 4];
    memset(buf, 'x', sizeof buf);
    IDM_ASSERT_OK(idm_opaque_format(y, enc, buf));
    CHECK(strcmp(buf, want) == 0, "%llu formats as '%s', expected '%s'", ULL(y), buf, want);
    uint64_t back = 0;
    IDM_ASSERT_OK(idm_opaque_parse(want, enc, &back));
    CHECK(back == y, "'%s' parses as %llu, expected %llu", want, ULL(back), ULL(y));
}

static void text_known(void **state)
{
    (void)state;
    expect_format(0, IDM_OPAQUE_BASE32, "0000000000000");
    expect_format(1, IDM_OPAQUE_BASE32, "0000000000001");
    expect_format(31, IDM_OPAQUE_BASE32, "000000000000Z");
    expect_format(32, IDM_OPAQUE_BASE32, "0000000000010");
    expect_format(LIMIT63 - 1, IDM_OPAQUE_BASE32, "7ZZZZZZZZZZZZ");
    expect_format(UINT64_C(0x123456789abcdef0) >> 1, IDM_OPAQUE_BASE32, "0J6HB7H6NWVVR");
    expect_format(0, IDM_OPAQUE_BASE62, "00000000000");
    expect_format(1, IDM_OPAQUE_BASE62, "00000000001");
    expect_format(61, IDM_OPAQUE_BASE62, "0000000000z");
    expect_format(62, IDM_OPAQUE_BASE62, "00000000010");
    expect_format(LIMIT63 - 1, IDM_OPAQUE_BASE62, "AzL8n0Y58m7");
    /* Base32 reads either case; base62 is case sensitive. */
    uint64_t v;
    IDM_ASSERT_OK(idm_opaque_parse("7zzzzzzzzzzzz", IDM_OPAQUE_BASE32, &v));
    assert_true(v == LIMIT63 - 1);
    IDM_ASSERT_OK(idm_opaque_parse("0000000000a0Z", IDM_OPAQUE_BASE32, &v));
    assert_true(v == 10 * 1024 + 31);
    IDM_ASSERT_OK(idm_opaque_parse("0000000000a", IDM_OPAQUE_BASE62, &v));
    assert_true(v == 36);
    IDM_ASSERT_OK(idm_opaque_parse("0000000000A", IDM_OPAQUE_BASE62, &v));
    assert_true(v == 10);
}

static void text_round_trip_random(void **state)
{
    (void)state;
    idm_test_rng r;
    idm_test_rng_init(&r, idm_test_seed());
    for (int i = 0; i < 100000; i++) {
        uint64_t y = idm_test_rng_next(&r) >> (1 + i % 63);
        for (int e = 0; e < 2; e++) {
            idm_opaque_encoding enc = e == 0 ? IDM_OPAQUE_BASE32 : IDM_OPAQUE_BASE62;
            char buf[IDM_OPAQUE_TEXT_MAX];
            uint64_t back;
            IDM_ASSERT_OK(idm_opaque_format(y, enc, buf));
            size_t want = e == 0 ? IDM_OPAQUE_BASE32_LEN : IDM_OPAQUE_BASE62_LEN;
            CHECK(strlen(buf) == want, "'%s' has length %zu", buf, strlen(buf));
            IDM_ASSERT_OK(idm_opaque_parse(buf, enc, &back));
            CHECK(back == y, "%llu -> '%s' -> %llu", ULL(y), buf, ULL(back));
        }
    }
}

static void expect_parse_error(const char *text, idm_opaque_encoding enc, int rc,
                               const char *want_detail)
{
    uint64_t v = 77;
    IDM_ASSERT_RC(idm_opaque_parse(text, enc, &v), rc);
    CHECK(v == 77, "output touched on failure");
    const char *d = idm_error_detail();
    CHECK(strstr(d, want_detail) != NULL, "'%s': detail '%s' lacks '%s'", text, d, want_detail);
}

static void text_errors(void **state)
{
    (void)state;
    const idm_opaque_encoding B32 = IDM_OPAQUE_BASE32, B62 = IDM_OPAQUE_BASE62;
    expect_parse_error("", B32, IDM_EPARSE, "empty");
    expect_parse_error("", B62, IDM_EPARSE, "empty");
    expect_parse_error("000000000000", B32, IDM_EPARSE, "length 12, not 13");
    expect_parse_error("00000000000000", B32, IDM_EPARSE, "length 14, not 13");
    expect_parse_error("0000000000", B62, IDM_EPARSE, "length 10, not 11");
    expect_parse_error("000000000000", B62, IDM_EPARSE, "length 12, not 11");
    expect_parse_error("00000000000000000000000000000000000000000000000000", B62, IDM_EPARSE,
                       "...' has length 50");
    /* The other encoding's length. */
    expect_parse_error("AzL8n0Y58m7", B32, IDM_EPARSE, "not 13 (base32)");
    expect_parse_error("0000000000001", B62, IDM_EPARSE, "not 11 (base62)");
    expect_parse_error("000000000000U", B32, IDM_EPARSE, "'U' at position 13");
    expect_parse_error("0I00000000000", B32, IDM_EPARSE, "'I' at position 2, outside Crockford");
    expect_parse_error("00l0000000000", B32, IDM_EPARSE, "(no I, L, O or U)");
    expect_parse_error("000O000000000", B32, IDM_EPARSE, "'O' at position 4");
    expect_parse_error("0000-00000000", B32, IDM_EPARSE, "'-' at position 5");
    expect_parse_error(" 000000000000", B32, IDM_EPARSE, "' ' at position 1");
    expect_parse_error("00000\t0000000", B32, IDM_EPARSE, "'?' at position 6");
    expect_parse_error("0000000000_0", B62, IDM_EPARSE, "length 12");
    expect_parse_error("0000000000_", B62, IDM_EPARSE, "'_' at position 11, outside base62");
    expect_parse_error("00000\xc3\xa9" "0000", B62, IDM_EPARSE, "'?' at position 6");
    /* Above 2^63-1. */
    expect_parse_error("8000000000000", B32, IDM_ERANGE, "above 7ZZZZZZZZZZZZ");
    expect_parse_error("ZZZZZZZZZZZZZ", B32, IDM_ERANGE, "above 7ZZZZZZZZZZZZ");
    expect_parse_error("AzL8n0Y58m8", B62, IDM_ERANGE, "above AzL8n0Y58m7");
    expect_parse_error("B0000000000", B62, IDM_ERANGE, "above AzL8n0Y58m7");
    expect_parse_error("zzzzzzzzzzz", B62, IDM_ERANGE, "(2^63-1)"); /* above 2^64 too */
    /* A bad character wins over the range. */
    expect_parse_error("Z00000000000U", B32, IDM_EPARSE, "position 13");

    char buf[IDM_OPAQUE_TEXT_MAX];
    uint64_t v;
    IDM_ASSERT_RC(idm_opaque_format(LIMIT63, B32, buf), IDM_ERANGE);
    IDM_ASSERT_RC(idm_opaque_format(1, (idm_opaque_encoding)7, buf), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_format(1, B32, NULL), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_parse("0000000000000", (idm_opaque_encoding)7, &v), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_parse(NULL, B32, &v), IDM_EINVAL);
    IDM_ASSERT_RC(idm_opaque_parse("0000000000000", B32, NULL), IDM_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(siphash_vectors),
        cmocka_unit_test(key_parse_ok),
        cmocka_unit_test(key_parse_errors),
        cmocka_unit_test(permutation_exhaustive),
        cmocka_unit_test(permutation_sampled_63),
        cmocka_unit_test(permutation_keys_differ),
        cmocka_unit_test(permutation_hides_order),
        cmocka_unit_test(permutation_known_answers),
        cmocka_unit_test(permutation_errors),
        cmocka_unit_test(text_known),
        cmocka_unit_test(text_round_trip_random),
        cmocka_unit_test(text_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
