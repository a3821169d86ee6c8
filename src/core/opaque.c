/* SPDX-License-Identifier: MIT */
/*
 * Opaque public ids (idmint/opaque.h): a keyed permutation of [0, 2^63)
 * built from a balanced Feistel network with SipHash-2-4 round functions
 * and cycle walking, and its fixed-length base32 / base62 text forms.
 *
 * Why it is a permutation. One Feistel round maps (L, R) to
 * (R, L ^ F(R)); whatever F is, (L', R') gives back R = L' and
 * L = R' ^ F(L'), so each round, and thus the network, is a bijection of
 * [0, 2^bits). Cycle walking to a limit: for x < limit, follow x -> E(x) ->
 * E(E(x)) ... and stop at the first value below limit. The walk stays on
 * x's cycle of the permutation E, which comes back to x itself (< limit),
 * so it ends; and it is the inverse walk of D = E^-1 from that value back
 * to x, which stops at x because every value strictly between them is
 * >= limit. So the walked map is a bijection of [0, limit) with the walked
 * D as its inverse. With limit = 2^63 in the 2^64 domain, half the values
 * are in range, so a call takes 2 passes on average and k or more passes
 * with probability 2^-(k-1).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "internal.h"

/* Internal, for the unit tests (declared again in tests/unit/test_opaque.c):
 * SipHash-2-4 of len bytes of msg under a 16-byte key, and the permutation
 * of [0, limit) for a domain of bits bits (even, 8 to 64; 0 < limit <=
 * 2^bits, with limit 0 meaning 2^bits). Cycle walking costs about
 * 2^bits / limit passes: keep limit above 2^(bits-1) or so. */
uint64_t idm__siphash24(const uint8_t key[16], const void *msg, size_t len);
int idm__opaque_encrypt_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit,
                             uint64_t x, uint64_t *out);
int idm__opaque_decrypt_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit,
                             uint64_t y, uint64_t *out);

/* ---- SipHash-2-4 (Aumasson and Bernstein, 2012) ---- */

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static IDM__ALWAYS_INLINE void sipround(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = ROTL64(v[1], 13);
    v[1] ^= v[0];
    v[0] = ROTL64(v[0], 32);
    v[2] += v[3];
    v[3] = ROTL64(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = ROTL64(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = ROTL64(v[1], 17);
    v[1] ^= v[2];
    v[2] = ROTL64(v[2], 32);
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The state after key setup. */
static void sip_init(uint64_t v[4], uint64_t k0, uint64_t k1)
{
    v[0] = k0 ^ UINT64_C(0x736f6d6570736575);
    v[1] = k1 ^ UINT64_C(0x646f72616e646f6d);
    v[2] = k0 ^ UINT64_C(0x6c7967656e657261);
    v[3] = k1 ^ UINT64_C(0x7465646279746573);
}

static IDM__ALWAYS_INLINE void sip_compress(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sipround(v);
    sipround(v);
    v[0] ^= m;
}

static IDM__ALWAYS_INLINE uint64_t sip_finish(uint64_t v[4])
{
    v[2] ^= 0xff;
    sipround(v);
    sipround(v);
    sipround(v);
    sipround(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t idm__siphash24(const uint8_t key[16], const void *msg, size_t len)
{
    const uint8_t *p = msg;
    uint64_t v[4];
    sip_init(v, load_le64(key), load_le64(key + 8));
    size_t full = len / 8 * 8;
    for (size_t i = 0; i < full; i += 8)
        sip_compress(v, load_le64(p + i));
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    for (size_t i = 0; i < len - full; i++)
        last |= (uint64_t)p[full + i] << (8 * i);
    sip_compress(v, last);
    return sip_finish(v);
}

/* SipHash-2-4 of one 8-byte message (m, little-endian) from a key's state. */
static IDM__ALWAYS_INLINE uint64_t sip_word(const idm_opaque_key *k, uint64_t m)
{
    uint64_t v[4] = {k->v[0], k->v[1], k->v[2], k->v[3]};
    sip_compress(v, m);
    sip_compress(v, UINT64_C(8) << 56);
    return sip_finish(v);
}

/* ---- keys ---- */

/* Clear memory in a way the compiler does not drop as a dead store. */
static void wipe(void *p, size_t n)
{
    volatile unsigned char *q = p;
    while (n-- > 0)
        *q++ = 0;
}

/* What a character that is not a hex digit is, without saying which one
 * (it may be part of a key). */
static const char *non_hex_kind(unsigned char c)
{
    if (c == '\n' || c == '\r')
        return "a line break";
    if (c == ' ' || c == '\t')
        return "white space";
    if (c < 0x20 || c == 0x7f)
        return "a control character";
    if (c >= 0x80)
        return "a non-ASCII byte";
    return "not a hex digit";
}

int idm_opaque_key_parse(const char *hex, idm_opaque_key *out)
{
    idm__clear_detail();
    if (hex == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "opaque key: no text to parse");
    size_t n = strlen(hex);
    /* One line: an optional "\n" or "\r\n" at the end. */
    if (n > 0 && hex[n - 1] == '\n') {
        n--;
        if (n > 0 && hex[n - 1] == '\r')
            n--;
    }
    if (n == 0)
        return idm__fail(IDM_EPARSE, "opaque key: empty, need %d hex digits",
                         2 * IDM_OPAQUE_KEY_BYTES);
    for (size_t i = 0; i < n; i++) {
        if (idm__unhex(hex[i]) < 0)
            return idm__fail(IDM_EPARSE, "opaque key: character %zu is %s", i + 1,
                             non_hex_kind((unsigned char)hex[i]));
    }
    if (n != 2 * IDM_OPAQUE_KEY_BYTES)
        return idm__fail(IDM_EPARSE, "opaque key: %zu hex digits, need %d (128 bits)", n,
                         2 * IDM_OPAQUE_KEY_BYTES);
    uint8_t key[IDM_OPAQUE_KEY_BYTES];
    for (size_t i = 0; i < IDM_OPAQUE_KEY_BYTES; i++)
        key[i] = (uint8_t)(idm__unhex(hex[2 * i]) << 4 | idm__unhex(hex[2 * i + 1]));
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    sip_init(out->v, k0, k1);
    wipe(key, sizeof key);
    wipe(&k0, sizeof k0);
    wipe(&k1, sizeof k1);
    return 0;
}

/* Longest key file read: 32 hex digits and a line end, with room to spare so
 * that a longer file is told apart. */
#define KEY_FILE_MAX 64

int idm_opaque_key_load(const char *path, idm_opaque_key *out)
{
    char buf[KEY_FILE_MAX + 1], why[160];
    const char *kind;
    ssize_t got;
    size_t n;
    int rc = 0;
    idm__clear_detail();
    if (path == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "key file: no path or no output pointer");
    got = idm__read_regular(path, buf, sizeof buf - 1, &kind, why, sizeof why);
    n = got > 0 ? (size_t)got : 0;
    buf[n] = '\0';
    if (got < 0) {
        rc = idm__fail(kind != NULL ? IDM_EINVAL : IDM_EIO, "key file '%.160s': %s", path, why);
    } else {
        if (n == sizeof buf - 1)
            rc = idm__fail(IDM_EPARSE,
                           "key file '%.160s': longer than one line of 32 hex digits", path);
        else if (memchr(buf, '\0', n) != NULL)
            rc = idm__fail(IDM_EPARSE, "key file '%.160s': it holds a NUL byte, not 32 hex digits",
                           path);
        else if ((rc = idm_opaque_key_parse(buf, out)) != 0)
            rc = idm__fail(rc, "key file '%.160s': %s", path, idm_error_detail());
    }
    wipe(buf, sizeof buf);
    return rc;
}

/* ---- the Feistel network ---- */

/* Round function: SipHash-2-4 of (half, round, domain size), truncated to
 * the half's width. The domain size in the message keeps the permutations
 * of different widths independent of one another. */
static IDM__ALWAYS_INLINE uint64_t round_fn(const idm_opaque_key *k, unsigned bits,
                                            unsigned round, uint64_t half, uint64_t mask)
{
    uint64_t m = half | (uint64_t)round << 32 | (uint64_t)bits << 40 |
                 (uint64_t)0x4f << 56; /* 'O' */
    return sip_word(k, m) & mask;
}

static uint64_t feistel_enc(const idm_opaque_key *k, unsigned bits, uint64_t x)
{
    unsigned h = bits / 2;
    uint64_t mask = h == 32 ? UINT64_C(0xffffffff) : (UINT64_C(1) << h) - 1;
    uint64_t l = x >> h & mask, r = x & mask;
    for (unsigned i = 0; i < IDM_OPAQUE_ROUNDS; i++) {
        uint64_t t = l ^ round_fn(k, bits, i, r, mask);
        l = r;
        r = t;
    }
    return l << h | r;
}

static uint64_t feistel_dec(const idm_opaque_key *k, unsigned bits, uint64_t y)
{
    unsigned h = bits / 2;
    uint64_t mask = h == 32 ? UINT64_C(0xffffffff) : (UINT64_C(1) << h) - 1;
    uint64_t l = y >> h & mask, r = y & mask;
    for (unsigned i = IDM_OPAQUE_ROUNDS; i-- > 0;) {
        uint64_t t = r ^ round_fn(k, bits, i, l, mask);
        r = l;
        l = t;
    }
    return l << h | r;
}

/* Cycle walking (see the top of the file): E, or D if dec, until below limit
 * (0: no limit). */
static uint64_t walk(const idm_opaque_key *k, unsigned bits, uint64_t limit, uint64_t v, bool dec)
{
    do
        v = dec ? feistel_dec(k, bits, v) : feistel_enc(k, bits, v);
    while (limit != 0 && v >= limit);
    return v;
}

static int permute_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit, uint64_t v,
                        uint64_t *out, bool dec)
{
    idm__clear_detail();
    if (k == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "opaque: no key or no output pointer");
    if (bits < 8 || bits > 64 || bits % 2 != 0)
        return idm__fail(IDM_EINVAL, "opaque: domain of %u bits (need an even 8 to 64)", bits);
    uint64_t top = bits == 64 ? 0 : UINT64_C(1) << bits; /* 0: 2^64 */
    if (limit == 0)
        limit = top;
    else if (top != 0 && limit > top)
        return idm__fail(IDM_EINVAL, "opaque: limit %llu above 2^%u",
                         (unsigned long long)limit, bits);
    if (limit != 0 && v >= limit)
        return idm__fail(IDM_ERANGE, "opaque: %llu is not below %llu",
                         (unsigned long long)v, (unsigned long long)limit);
    *out = walk(k, bits, limit, v, dec);
    return 0;
}

int idm__opaque_encrypt_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit,
                             uint64_t x, uint64_t *out)
{
    return permute_bits(k, bits, limit, x, out, false);
}

int idm__opaque_decrypt_bits(const idm_opaque_key *k, unsigned bits, uint64_t limit,
                             uint64_t y, uint64_t *out)
{
    return permute_bits(k, bits, limit, y, out, true);
}

int idm_opaque_encrypt(const idm_opaque_key *k, uint64_t x, uint64_t *out)
{
    idm__clear_detail();
    if (k == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "opaque: no key or no output pointer");
    if (x >= IDM_OPAQUE_LIMIT)
        return idm__fail(IDM_ERANGE, "opaque: id %llu is above 2^63-1", (unsigned long long)x);
    *out = walk(k, 64, IDM_OPAQUE_LIMIT, x, false);
    return 0;
}

int idm_opaque_decrypt(const idm_opaque_key *k, uint64_t y, uint64_t *out)
{
    idm__clear_detail();
    if (k == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "opaque: no key or no output pointer");
    if (y >= IDM_OPAQUE_LIMIT)
        return idm__fail(IDM_ERANGE, "opaque: value %llu is above 2^63-1",
                         (unsigned long long)y);
    *out = walk(k, 64, IDM_OPAQUE_LIMIT, y, true);
    return 0;
}

/* ---- text forms ---- */

static const char b62_alphabet[62] =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static int unbase62(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'Z')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 36;
    return -1;
}

int idm_opaque_format(uint64_t y, idm_opaque_encoding enc, char buf[IDM_OPAQUE_TEXT_MAX])
{
    idm__clear_detail();
    if (buf == NULL)
        return idm__fail(IDM_EINVAL, "opaque: no output buffer");
    if (enc != IDM_OPAQUE_BASE32 && enc != IDM_OPAQUE_BASE62)
        return idm__fail(IDM_EINVAL, "opaque: unknown encoding %d", (int)enc);
    if (y >= IDM_OPAQUE_LIMIT)
        return idm__fail(IDM_ERANGE, "opaque: value %llu is above 2^63-1",
                         (unsigned long long)y);
    if (enc == IDM_OPAQUE_BASE32) {
        for (int i = IDM_OPAQUE_BASE32_LEN - 1; i >= 0; i--, y >>= 5)
            buf[i] = idm__b32_alphabet[y & 31];
        buf[IDM_OPAQUE_BASE32_LEN] = '\0';
    } else {
        for (int i = IDM_OPAQUE_BASE62_LEN - 1; i >= 0; i--, y /= 62)
            buf[i] = b62_alphabet[y % 62];
        buf[IDM_OPAQUE_BASE62_LEN] = '\0';
    }
    return 0;
}

int idm_opaque_parse(const char *text, idm_opaque_encoding enc, uint64_t *out)
{
    char q[IDM__QUOTE_MAX];
    idm__clear_detail();
    if (text == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "opaque: no text to parse");
    if (enc != IDM_OPAQUE_BASE32 && enc != IDM_OPAQUE_BASE62)
        return idm__fail(IDM_EINVAL, "opaque: unknown encoding %d", (int)enc);
    bool b32 = enc == IDM_OPAQUE_BASE32;
    const char *name = b32 ? "base32" : "base62";
    size_t want = b32 ? IDM_OPAQUE_BASE32_LEN : IDM_OPAQUE_BASE62_LEN;
    size_t n = strlen(text);
    if (n == 0)
        return idm__fail(IDM_EPARSE, "opaque: empty text, need %zu %s characters", want, name);
    if (n != want)
        return idm__fail(IDM_EPARSE, "opaque: '%s' has length %zu, not %zu (%s)",
                         idm__quote(text, q), n, want, name);
    unsigned base = b32 ? 32 : 62;
    uint64_t v = 0;
    bool over = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        int d = b32 ? idm__unbase32(c) : unbase62(c);
        if (d < 0)
            return idm__fail(IDM_EPARSE, "opaque: '%s' has '%c' at position %zu, outside %s%s",
                             idm__quote(text, q), c >= 0x20 && c < 0x7f ? c : '?', i + 1,
                             b32 ? "Crockford base32" : "base62 (0-9A-Za-z)",
                             b32 && (c == 'I' || c == 'i' || c == 'L' || c == 'l' ||
                                     c == 'O' || c == 'o' || c == 'U' || c == 'u')
                                 ? " (no I, L, O or U)"
                                 : "");
        /* v * base + d <= 2^63-1 exactly when v <= (2^63-1-d) / base;
         * test before multiplying, which could wrap. */
        if (!over && v > (IDM_OPAQUE_LIMIT - 1 - (uint64_t)d) / base)
            over = true;
        if (!over)
            v = v * base + (uint64_t)d;
    }
    if (over)
        return idm__fail(IDM_ERANGE, "opaque: '%s' is above %s (2^63-1)", idm__quote(text, q),
                         b32 ? "7ZZZZZZZZZZZZ" : "AzL8n0Y58m7");
    *out = v;
    return 0;
}
