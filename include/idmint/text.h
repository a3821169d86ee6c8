/* SPDX-License-Identifier: MIT */
/*
 * Strict text codecs shared by the CLI, the service and the tests: unsigned
 * integers and timestamps. Each parser accepts exactly one form and rejects
 * everything else (signs, spaces, exponents, trailing bytes, overflow) with
 * IDM_EPARSE or IDM_ERANGE and a detail line; none of them touches *out on
 * failure. All functions are thread-safe and allocate nothing.
 */
#ifndef IDMINT_TEXT_H
#define IDMINT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"

/* Room for any timestamp idm_time_format writes, with its NUL. */
#define IDM_TIME_TEXT_MAX 32

/*
 * An unsigned 64-bit integer: decimal digits only ("0", "42"; no sign, no
 * spaces, no leading "+"), or "0x" followed by 1 to 16 hex digits (either
 * case). Leading zeros are accepted in both forms. Values above 2^64-1 are
 * IDM_ERANGE; anything else malformed is IDM_EPARSE.
 */
IDM_EXTERN int idm_u64_parse(const char *text, uint64_t *out);

/*
 * Format t as ISO-8601 UTC with milliseconds: "2026-01-01T00:00:00.000Z".
 * Years 0000 to 9999 only (IDM_ERANGE otherwise); len must be at least
 * IDM_TIME_TEXT_MAX (IDM_EINVAL otherwise).
 */
IDM_EXTERN int idm_time_format(idm_unix_ms t, char *buf, size_t len);

/*
 * Parse a point in time. Accepted forms:
 *   - Unix milliseconds as decimal digits: "1288834974657";
 *   - a date: "2014-09-01" (midnight UTC);
 *   - a date and time "YYYY-MM-DDTHH:MM[:SS[.f...]]" followed by "Z" or a
 *     numeric offset "+HH:MM" / "-HH:MM" (a lower-case "t", "z" or a space
 *     in place of "T" is accepted too). Fractions finer than 1 ms are
 *     truncated toward the past.
 * Years 1970 to 9999. Calendar fields are checked (no February 30th, no
 * hour 24); a leap second (":60") is rejected.
 */
IDM_EXTERN int idm_time_parse(const char *text, idm_unix_ms *out);

#endif /* IDMINT_TEXT_H */
