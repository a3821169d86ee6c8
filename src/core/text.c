/* SPDX-License-Identifier: MIT */
/*
 * Strict text codecs: unsigned integers and ISO-8601 timestamps (and the
 * Crockford base32 tables). Each parser walks its input byte by byte and
 * accepts one form only; strtoull and strptime are avoided on purpose
 * (strtoull takes "-1", " 5" and "+5"; strptime's leniency varies by libc).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char idm__b32_alphabet[32] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

#define B32_LETTER(c, v) [c] = (v) + 1, [(c) + ('a' - 'A')] = (v) + 1
const uint8_t idm__b32_rev[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
    ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    B32_LETTER('A', 10), B32_LETTER('B', 11), B32_LETTER('C', 12), B32_LETTER('D', 13),
    B32_LETTER('E', 14), B32_LETTER('F', 15), B32_LETTER('G', 16), B32_LETTER('H', 17),
    B32_LETTER('J', 18), B32_LETTER('K', 19), B32_LETTER('M', 20), B32_LETTER('N', 21),
    B32_LETTER('P', 22), B32_LETTER('Q', 23), B32_LETTER('R', 24), B32_LETTER('S', 25),
    B32_LETTER('T', 26), B32_LETTER('V', 27), B32_LETTER('W', 28), B32_LETTER('X', 29),
    B32_LETTER('Y', 30), B32_LETTER('Z', 31),
};
#undef B32_LETTER

int idm_u64_parse(const char *text, uint64_t *out)
{
    uint64_t v = 0;
    const char *p;

    idm__clear_detail();
    if (text == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "no text to parse");
    if (*text == '\0')
        return idm__fail(IDM_EPARSE, "empty number");
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        int overflow = 0;
        if (text[2] == '\0')
            return idm__fail(IDM_EPARSE, "'%.40s' has no hex digits", text);
        for (p = text + 2; *p != '\0'; p++) {
            int d = idm__unhex(*p);
            if (d < 0)
                return idm__fail(IDM_EPARSE, "'%.40s' is not a hex number", text);
            if (v >> 60 != 0)
                overflow = 1;
            v = (v << 4) | (unsigned)d;
        }
        if (overflow)
            return idm__fail(IDM_ERANGE, "'%.40s' exceeds 64 bits", text);
        *out = v;
        return 0;
    }
    for (p = text; *p != '\0'; p++) {
        unsigned d;
        if (*p < '0' || *p > '9')
            return idm__fail(IDM_EPARSE, "'%.40s' is not an unsigned decimal number", text);
        d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            goto too_big;
        v = v * 10 + d;
    }
    *out = v;
    return 0;

too_big:
    /* Keep scanning so "99999999999999999999x" is a parse error, not range. */
    for (; *p != '\0'; p++)
        if (*p < '0' || *p > '9')
            return idm__fail(IDM_EPARSE, "'%.40s' is not an unsigned decimal number", text);
    return idm__fail(IDM_ERANGE, "'%.40s' exceeds 2^64-1", text);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dm[m - 1];
}

int idm_time_format(idm_unix_ms t, char *buf, size_t len)
{
    int64_t days, y;
    unsigned m, d;
    int64_t ms_of_day;

    idm__clear_detail();
    if (buf == NULL || len < IDM_TIME_TEXT_MAX)
        return idm__fail(IDM_EINVAL, "time buffer smaller than %d bytes", IDM_TIME_TEXT_MAX);
    /* Years 0000-9999 exactly; checked first, as the arithmetic below would
     * overflow near INT64_MIN. */
    if (t < INT64_C(-62167219200000) || t > INT64_C(253402300799999))
        return idm__fail(IDM_ERANGE, "time %lld ms is outside years 0000-9999", (long long)t);
    days = idm__floordiv(t, 86400000);
    ms_of_day = t - days * 86400000;
    civil_from_days(days, &y, &m, &d);
    snprintf(buf, len, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", (int)y, m, d,
             (int)(ms_of_day / 3600000), (int)(ms_of_day / 60000 % 60),
             (int)(ms_of_day / 1000 % 60), (int)(ms_of_day % 1000));
    return 0;
}

/* Read exactly n digits at *p into *v, advancing *p. */
static int digits(const char **p, int n, unsigned *v)
{
    unsigned x = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        x = x * 10 + (unsigned)(c - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

int idm_time_parse(const char *text, idm_unix_ms *out)
{
    const char *p = text;
    unsigned y, mo, d, h = 0, mi = 0, s = 0, ms = 0;
    int64_t t;

    idm__clear_detail();
    if (text == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "no time to parse");
    if (*text == '\0')
        return idm__fail(IDM_EPARSE, "empty time");

    /* All digits: Unix milliseconds. A date always has a '-' at [4]. */
    if (strspn(text, "0123456789") == strlen(text)) {
        uint64_t v;
        if (strlen(text) > 15 || idm_u64_parse(text, &v) != 0 || v > 253402300799999u)
            return idm__fail(IDM_ERANGE, "time '%.40s' ms is past year 9999", text);
        *out = (idm_unix_ms)v;
        return 0;
    }

    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
        digits(&p, 2, &d))
        goto bad;
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return idm__fail(IDM_ERANGE, "'%.40s' is not a date in 1970-9999", text);
    t = days_from_civil(y, mo, d) * 86400000;
    if (*p == '\0') {
        *out = t;
        return 0;
    }
    if (*p != 'T' && *p != 't' && *p != ' ')
        goto bad;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
        goto bad;
    if (*p == ':') {
        p++;
        if (digits(&p, 2, &s))
            goto bad;
        if (*p == '.') {
            unsigned scale = 100;
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            for (; *p >= '0' && *p <= '9'; p++) {
                ms += (unsigned)(*p - '0') * scale;
                scale /= 10;
            }
        }
    }
    if (h > 23 || mi > 59 || s > 59)
        return idm__fail(IDM_ERANGE, "'%.40s' has an hour, minute or second out of range", text);
    t += (int64_t)h * 3600000 + (int64_t)mi * 60000 + (int64_t)s * 1000 + ms;
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
        *out = t;
        return 0;
    }
    if (*p == '+' || *p == '-') {
        unsigned oh, om;
        int sign = *p == '+' ? 1 : -1;
        p++;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || *p != '\0')
            goto bad;
        if (oh > 23 || om > 59)
            return idm__fail(IDM_ERANGE, "'%.40s' has a zone offset out of range", text);
        t -= sign * ((int64_t)oh * 3600000 + (int64_t)om * 60000);
        if (t < 0)
            return idm__fail(IDM_ERANGE, "'%.40s' is before 1970", text);
        *out = t;
        return 0;
    }
    if (*p == '\0')
        return idm__fail(IDM_EPARSE, "'%.40s' has no zone: end it with Z or +HH:MM", text);
bad:
    return idm__fail(IDM_EPARSE,
                     "'%.40s' is not a time (want Unix ms, YYYY-MM-DD or "
                     "YYYY-MM-DDTHH:MM[:SS[.fff]]Z)",
                     text);
}

/* CRC-32 (reflected polynomial 0xEDB88320), its table built at compile time. */
#define C1(c) (((c) & 1) ? 0xEDB88320u ^ ((c) >> 1) : ((c) >> 1))
#define C8(c) C1(C1(C1(C1(C1(C1(C1(C1(c))))))))
#define R2(n) C8(n), C8(n + 1)
#define R4(n) R2(n), R2(n + 2)
#define R8(n) R4(n), R4(n + 4)
#define R16(n) R8(n), R8(n + 8)
#define R32(n) R16(n), R16(n + 16)
#define R64(n) R32(n), R32(n + 32)
#define R128(n) R64(n), R64(n + 64)
static const uint32_t crc_table[256] = {R128(0u), R128(128u)};

uint32_t idm__crc32(const void *buf, size_t len)
{
    const unsigned char *b = buf;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++)
        c = crc_table[(c ^ b[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}
