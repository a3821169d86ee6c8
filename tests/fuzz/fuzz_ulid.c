/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the ULID text parser and codecs (idmint/ulid.h). Whatever
 * parses is exactly 26 characters of Crockford's base32, formats back to the
 * same text up to case, and that text parses to the same bytes; whatever
 * fails returns IDM_EPARSE or IDM_ERANGE with a detail and leaves the output
 * untouched. The input's first bytes, taken as a binary ULID, also go
 * through format/parse, the UUID conversion and idm_ulid_build.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <idmint/idmint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char ALPHABET[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static int in_alphabet(char c)
{
    if (c >= 'a' && c <= 'z')
        c = (char)(c - 32);
    return c != '\0' && strchr(ALPHABET, c) != NULL;
}

static void check_binary(const idm_ulid *b)
{
    char txt[IDM_ULID_TEXT_MAX];
    idm_ulid back;
    idm_uuid as_uuid;
    idm_ulid_format(b, txt);
    if (strlen(txt) != 26 || txt[0] > '7' || idm_ulid_parse(txt, &back) != 0 ||
        memcmp(&back, b, 16) != 0)
        abort();
    for (size_t i = 0; i < 26; i++)
        if (strchr(ALPHABET, txt[i]) == NULL)
            abort();
    idm_unix_ms ms = 0;
    for (int i = 0; i < 6; i++)
        ms = (ms << 8) | b->b[i];
    if (idm_ulid_time(b) != ms)
        abort();
    idm_ulid_to_uuid(b, &as_uuid);
    idm_uuid_to_ulid(&as_uuid, &back);
    if (memcmp(as_uuid.b, b->b, 16) != 0 || memcmp(&back, b, 16) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    idm_ulid u, back;
    char out[IDM_ULID_TEXT_MAX];
    int rc;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    memset(&u, 0x5a, sizeof u);
    rc = idm_ulid_parse(s, &u);
    if (rc == 0) {
        if (strlen(s) != 26 || !(s[0] >= '0' && s[0] <= '7'))
            abort();
        for (size_t i = 0; i < 26; i++)
            if (!in_alphabet(s[i]))
                abort();
        idm_ulid_format(&u, out);
        if (strcasecmp(out, s) != 0)
            abort();
        if (idm_ulid_parse(out, &back) != 0 || memcmp(&back, &u, 16) != 0)
            abort();
        check_binary(&u);
    } else {
        uint8_t untouched[16];
        memset(untouched, 0x5a, sizeof untouched);
        if ((rc != IDM_EPARSE && rc != IDM_ERANGE) || idm_error_detail()[0] == '\0' ||
            memcmp(u.b, untouched, 16) != 0)
            abort();
        /* IDM_ERANGE only for 26 alphabet characters above 7ZZZ... */
        if (rc == IDM_ERANGE) {
            if (strlen(s) != 26 || s[0] <= '7')
                abort();
            for (size_t i = 0; i < 26; i++)
                if (!in_alphabet(s[i]))
                    abort();
        }
    }

    if (size >= 16) {
        memcpy(u.b, data, 16);
        check_binary(&u);
        idm_unix_ms ms = 0;
        for (int i = 0; i < 6; i++)
            ms = (ms << 8) | data[i];
        if (idm_ulid_build(ms, data + 6, &back) != 0 || memcmp(&back, &u, 16) != 0)
            abort();
    }
    free(s);
    return 0;
}
