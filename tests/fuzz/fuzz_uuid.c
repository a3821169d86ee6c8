/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the UUID text parser and codecs (idmint/uuid.h). Whatever
 * parses is exactly 36 characters with dashes at 8, 13, 18 and 23, formats
 * back to the same text up to case, and that text parses to the same bytes;
 * whatever fails returns IDM_EPARSE with a detail and leaves the output
 * untouched. The input's first bytes, taken as a binary UUID, also go
 * through format/parse, the getters and the v4/v7 builders.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <idmint/idmint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_dash_pos(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* b formats to canonical text that parses back to b. */
static void check_binary(const idm_uuid *b)
{
    char txt[IDM_UUID_TEXT_MAX];
    idm_uuid back;
    idm_uuid_format(b, txt);
    if (strlen(txt) != 36 || idm_uuid_parse(txt, &back) != 0 || memcmp(&back, b, 16) != 0)
        abort();
    for (size_t i = 0; i < 36; i++)
        if (is_dash_pos(i) ? txt[i] != '-' : !(is_hex(txt[i]) && !(txt[i] >= 'A' && txt[i] <= 'F')))
            abort();
    int v = idm_uuid_version(b), var = idm_uuid_variant(b);
    if (v != b->b[6] >> 4)
        abort();
    if (var != IDM_UUID_VARIANT_NCS && var != IDM_UUID_VARIANT_RFC &&
        var != IDM_UUID_VARIANT_MICROSOFT && var != IDM_UUID_VARIANT_FUTURE)
        abort();
    idm_unix_ms ms = -77;
    int rc = idm_uuid7_time(b, &ms);
    if (v == 7 && var == IDM_UUID_VARIANT_RFC) {
        if (rc != 0 || ms < 0 || ms >= (INT64_C(1) << 48))
            abort();
    } else if (rc != IDM_EINVAL) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    idm_uuid u, back;
    char out[IDM_UUID_TEXT_MAX];
    int rc;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    memset(&u, 0x5a, sizeof u);
    rc = idm_uuid_parse(s, &u);
    if (rc == 0) {
        if (strlen(s) != 36)
            abort();
        for (size_t i = 0; i < 36; i++)
            if (is_dash_pos(i) ? s[i] != '-' : !is_hex(s[i]))
                abort();
        idm_uuid_format(&u, out);
        if (strcasecmp(out, s) != 0)
            abort();
        if (idm_uuid_parse(out, &back) != 0 || memcmp(&back, &u, 16) != 0)
            abort();
        check_binary(&u);
    } else {
        uint8_t untouched[16];
        memset(untouched, 0x5a, sizeof untouched);
        if (rc != IDM_EPARSE || idm_error_detail()[0] == '\0' ||
            memcmp(u.b, untouched, 16) != 0)
            abort();
    }

    if (size >= 16) {
        memcpy(u.b, data, 16);
        check_binary(&u);
        idm_uuid4_from_bytes(data, &back);
        if (idm_uuid_version(&back) != 4 || idm_uuid_variant(&back) != IDM_UUID_VARIANT_RFC)
            abort();
        check_binary(&back);
        /* A v7 from 6 bytes of ms (48 bits, always in range) and 10 of rand. */
        idm_unix_ms ms = 0, t = -1;
        for (int i = 0; i < 6; i++)
            ms = (ms << 8) | data[i];
        if (idm_uuid7_build(ms, data + 6, &back) != 0 || idm_uuid7_time(&back, &t) != 0 || t != ms)
            abort();
        check_binary(&back);
    }
    free(s);
    return 0;
}
