/* SPDX-License-Identifier: MIT */
/*
 * The ChaCha20 block function under the system CSPRNG: RFC 8439's block
 * test vector (section 2.3.2), and the four-lane path agreeing with the
 * one-block path for every count of blocks and counter start.
 */
#include <string.h>

#include "internal.h"
#include "testutil.h"

static const uint32_t key[8] = {0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c,
                                0x13121110, 0x17161514, 0x1b1a1918, 0x1f1e1d1c};

static void rfc8439_block_vector(void **unused)
{
    static const uint32_t nonce[3] = {0x09000000, 0x4a000000, 0x00000000};
    static const uint8_t want[64] = {
        0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3,
        0x20, 0x71, 0xc4, 0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22,
        0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e, 0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa,
        0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2, 0xb5, 0x12, 0x9c, 0xd1,
        0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e};
    uint8_t out[64 * 5];
    (void)unused;
    idm__chacha20_blocks(key, nonce, 1, out, 1);
    assert_memory_equal(out, want, 64);
    /* The same block as the first of a four-lane run. */
    memset(out, 0, sizeof out);
    idm__chacha20_blocks(key, nonce, 1, out, 5);
    assert_memory_equal(out, want, 64);
}

static void lanes_agree_with_single_blocks(void **unused)
{
    static const uint32_t nonce[3] = {0, 0, 0};
    uint8_t many[64 * 16], one[64];
    (void)unused;
    for (uint32_t start = 0; start < 3; start++) {
        for (size_t n = 1; n <= 16; n++) {
            memset(many, 0, sizeof many);
            idm__chacha20_blocks(key, nonce, start, many, n);
            for (size_t b = 0; b < n; b++) {
                idm__chacha20_blocks(key, nonce, start + (uint32_t)b, one, 1);
                assert_memory_equal(many + 64 * b, one, 64);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc8439_block_vector),
        cmocka_unit_test(lanes_agree_with_single_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
