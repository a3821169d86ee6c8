/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the strict number and time parsers. Whatever parses must
 * print back to something that parses to the same value; whatever fails must
 * leave the output untouched and give an error code with a detail.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <idmint/idmint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    char out[IDM_TIME_TEXT_MAX];
    uint64_t v = 0x5a5a5a5a5a5a5a5au, w;
    idm_unix_ms t = -77, t2;
    int rc;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    rc = idm_u64_parse(s, &v);
    if (rc == 0) {
        char dec[32];
        snprintf(dec, sizeof dec, "%llu", (unsigned long long)v);
        if (idm_u64_parse(dec, &w) != 0 || w != v)
            abort();
    } else if (v != 0x5a5a5a5a5a5a5a5au || rc >= 0 || idm_error_detail()[0] == '\0') {
        abort();
    }

    rc = idm_time_parse(s, &t);
    if (rc == 0) {
        if (t < 0 || idm_time_format(t, out, sizeof out) != 0 || idm_time_parse(out, &t2) != 0 ||
            t2 != t)
            abort();
    } else if (t != -77 || rc >= 0 || idm_error_detail()[0] == '\0') {
        abort();
    }
    free(s);
    return 0;
}
