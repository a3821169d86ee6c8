/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the ObjectId text parser and codecs (idmint/objectid.h).
 * Whatever parses is exactly 24 hex digits, formats back to the same text up
 * to case, and that text parses to the same bytes; whatever fails returns
 * IDM_EPARSE with a detail and leaves the output untouched. The input's
 * first bytes, taken as a binary ObjectId, also go through format/parse and
 * idm_objectid_build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <idmint/idmint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void check_binary(const idm_objectid *b)
{
    char txt[IDM_OBJECTID_TEXT_MAX];
    idm_objectid back;
    idm_objectid_format(b, txt);
    if (strlen(txt) != 24 || idm_objectid_parse(txt, &back) != 0 || memcmp(&back, b, 12) != 0)
        abort();
    for (size_t i = 0; i < 24; i++)
        if (!is_hex(txt[i]) || (txt[i] >= 'A' && txt[i] <= 'F'))
            abort();
    uint32_t sec = (uint32_t)b->b[0] << 24 | (uint32_t)b->b[1] << 16 | (uint32_t)b->b[2] << 8 |
                   b->b[3];
    if (idm_objectid_time(b) != (idm_unix_ms)sec * 1000)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    idm_objectid o, back;
    char out[IDM_OBJECTID_TEXT_MAX];
    int rc;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    memset(&o, 0x5a, sizeof o);
    rc = idm_objectid_parse(s, &o);
    if (rc == 0) {
        if (strlen(s) != 24)
            abort();
        for (size_t i = 0; i < 24; i++)
            if (!is_hex(s[i]))
                abort();
        idm_objectid_format(&o, out);
        if (strcasecmp(out, s) != 0)
            abort();
        if (idm_objectid_parse(out, &back) != 0 || memcmp(&back, &o, 12) != 0)
            abort();
        check_binary(&o);
    } else {
        uint8_t untouched[12];
        memset(untouched, 0x5a, sizeof untouched);
        if (rc != IDM_EPARSE || idm_error_detail()[0] == '\0' || memcmp(o.b, untouched, 12) != 0)
            abort();
    }

    if (size >= 12) {
        memcpy(o.b, data, 12);
        check_binary(&o);
        uint32_t sec = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
                       (uint32_t)data[2] << 8 | data[3];
        /* The counter argument's top byte is dropped (mod 2^24). */
        uint32_t ctr = (uint32_t)data[8] << 24 | (uint32_t)data[9] << 16 |
                       (uint32_t)data[10] << 8 | data[11];
        idm_objectid_build(sec, data + 4, ctr, &back);
        if (memcmp(&back, &o, 12) != 0)
            abort();
    }
    free(s);
    return 0;
}
