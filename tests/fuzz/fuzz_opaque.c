/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the text decoders of opaque public ids (idmint/opaque.h)
 * and the key parser. Whatever parses as an opaque text has the encoding's
 * fixed length and alphabet, a value below 2^63, and formats back to the
 * same text (up to case for base32); whatever fails returns IDM_EPARSE or
 * IDM_ERANGE with a detail and leaves the output untouched. The key parser
 * takes exactly 32 hex digits and an optional line end. The input's first 8
 * bytes, as a 63-bit id, also go through encrypt/decrypt under a fixed key.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <idmint/idmint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char B32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz";
static const char B62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static void check_text(const char *s, idm_opaque_encoding enc)
{
    const char *alphabet = enc == IDM_OPAQUE_BASE32 ? B32 : B62;
    size_t len = enc == IDM_OPAQUE_BASE32 ? IDM_OPAQUE_BASE32_LEN : IDM_OPAQUE_BASE62_LEN;
    uint64_t v = 77, back;
    char out[IDM_OPAQUE_TEXT_MAX];
    int rc = idm_opaque_parse(s, enc, &v);
    int well_formed = strlen(s) == len;
    for (size_t i = 0; well_formed && i < len; i++)
        well_formed = strchr(alphabet, s[i]) != NULL;
    if (rc == 0) {
        if (!well_formed || v >= IDM_OPAQUE_LIMIT)
            abort();
        if (idm_opaque_format(v, enc, out) != 0 || strlen(out) != len)
            abort();
        if (enc == IDM_OPAQUE_BASE32 ? strcasecmp(out, s) != 0 : strcmp(out, s) != 0)
            abort();
        if (idm_opaque_parse(out, enc, &back) != 0 || back != v)
            abort();
    } else {
        if (v != 77 || idm_error_detail()[0] == '\0')
            abort();
        if (rc == IDM_ERANGE ? !well_formed : rc != IDM_EPARSE || well_formed)
            abort();
    }
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    check_text(s, IDM_OPAQUE_BASE32);
    check_text(s, IDM_OPAQUE_BASE62);

    idm_opaque_key k;
    memset(&k, 0x5a, sizeof k);
    int rc = idm_opaque_key_parse(s, &k);
    size_t n = strlen(s);
    int key_like = n >= 32 && (n == 32 || strcmp(s + 32, "\n") == 0 || strcmp(s + 32, "\r\n") == 0);
    for (size_t i = 0; key_like && i < 32; i++)
        key_like = is_hex(s[i]);
    if ((rc == 0) != key_like)
        abort();
    if (rc != 0 && (rc != IDM_EPARSE || idm_error_detail()[0] == '\0'))
        abort();

    if (size >= 8) {
        static const char fixed[] = "000102030405060708090a0b0c0d0e0f";
        uint64_t x = 0, y, back;
        for (int i = 0; i < 8; i++)
            x = x << 8 | data[i];
        if (idm_opaque_key_parse(fixed, &k) != 0)
            abort();
        if (idm_opaque_encrypt(&k, x >> 1, &y) != 0 || y >= IDM_OPAQUE_LIMIT ||
            idm_opaque_decrypt(&k, y, &back) != 0 || back != x >> 1)
            abort();
        if ((idm_opaque_encrypt(&k, x | IDM_OPAQUE_LIMIT, &y) != IDM_ERANGE))
            abort();
    }
    free(s);
    return 0;
}
