/* SPDX-License-Identifier: MIT */
/*
 * Opaque public ids: a keyed permutation of the 63-bit id space [0, 2^63).
 *
 * Snowflake-style ids tell their mint time and, from the sequence, how many
 * ids were minted; consecutive ids can be enumerated. idm_opaque_encrypt
 * maps such an id to another 63-bit value that looks random and reveals
 * neither; only the holder of the 128-bit key can map it back with
 * idm_opaque_decrypt. Distinct ids always give distinct opaque values (it
 * is a permutation), so the opaque value can serve as a public key as is.
 *
 * Construction: a balanced Feistel network of IDM_OPAQUE_ROUNDS rounds on
 * 64-bit blocks (two 32-bit halves), each round function SipHash-2-4 under
 * the key of (round number, domain size, half), truncated to 32 bits. That
 * permutes [0, 2^64); cycle walking (encrypt again while the result is
 * 2^63 or more) restricts it to a permutation of [0, 2^63), at an expected
 * fewer than 2 Feistel passes per call. This hides time and volume and
 * prevents enumeration; it is not a MAC: any 63-bit value decrypts to some
 * id, so a service must still look the id up. Not constant-time.
 *
 * Text forms have a fixed length, so their length tells nothing either:
 *   IDM_OPAQUE_BASE32  13 characters of Crockford's base32, as ULIDs use it
 *                      (0123456789ABCDEFGHJKMNPQRSTVWXYZ): upper case out,
 *                      either case in. I, L, O and U are rejected, not read
 *                      as 1, 1 and 0, so that each value has one text up to
 *                      case (as idm_ulid_parse). Largest: 7ZZZZZZZZZZZZ.
 *   IDM_OPAQUE_BASE62  11 characters of 0-9A-Za-z (A = 10, a = 36), case
 *                      sensitive. Largest: AzL8n0Y58m7.
 * Both are big-endian digit strings padded with leading zeros, so the
 * texts of one encoding sort like the values.
 */
#ifndef IDMINT_OPAQUE_H
#define IDMINT_OPAQUE_H

#include <stdint.h>
#include "export.h"

/* Feistel rounds of the permutation. */
#define IDM_OPAQUE_ROUNDS 10

/* Key length: 16 bytes, written as 32 hex digits. */
#define IDM_OPAQUE_KEY_BYTES 16

/* Ids and opaque values lie in [0, IDM_OPAQUE_LIMIT) = [0, 2^63). */
#define IDM_OPAQUE_LIMIT (UINT64_C(1) << 63)

/* Room for any text form and its NUL. */
#define IDM_OPAQUE_TEXT_MAX 14
#define IDM_OPAQUE_BASE32_LEN 13
#define IDM_OPAQUE_BASE62_LEN 11

typedef enum idm_opaque_encoding {
    IDM_OPAQUE_BASE32 = 0,
    IDM_OPAQUE_BASE62 = 1
} idm_opaque_encoding;

/*
 * A parsed key: SipHash-2-4's initial state derived from the 128-bit key
 * (the raw key is not kept). Treat the field as private; a key holds secret
 * material: clear it (memset or explicit_bzero) when done. Read-only use by
 * any number of threads at once is safe.
 */
typedef struct idm_opaque_key {
    uint64_t v[4];
} idm_opaque_key;

/*
 * Parse a key: exactly 32 hex digits (either case), optionally followed by
 * one "\n" or "\r\n" (a key file's content may be passed as is).
 * IDM_EPARSE for anything else, with a detail naming what is wrong (length,
 * position of a non-hex character) that never contains key material;
 * IDM_EINVAL for NULL. On failure *out is untouched.
 */
IDM_EXTERN int idm_opaque_key_parse(const char *hex, idm_opaque_key *out);

/*
 * Read a key file: a regular file holding what idm_opaque_key_parse takes
 * (32 hex digits, one optional line end), opened without blocking (a FIFO
 * is refused, never waited on). On failure *out is untouched, nothing read
 * is left in memory, and the detail starts "key file 'PATH': " and says
 * what is wrong without any key material:
 *   IDM_EIO     it cannot be opened, stat'ed or read (the system's reason),
 *   IDM_EINVAL  it is not a regular file ("not a regular file (it is a
 *               FIFO)"), or path or out is NULL,
 *   IDM_EPARSE  it does not hold a key (idm_opaque_key_parse's reason).
 * Thread-safe.
 */
IDM_EXTERN int idm_opaque_key_load(const char *path, idm_opaque_key *out);

/* The opaque value of id x (x < 2^63, else IDM_ERANGE); *out < 2^63. */
IDM_EXTERN int idm_opaque_encrypt(const idm_opaque_key *k, uint64_t x, uint64_t *out);
/* The id whose opaque value is y (y < 2^63, else IDM_ERANGE). */
IDM_EXTERN int idm_opaque_decrypt(const idm_opaque_key *k, uint64_t y, uint64_t *out);

/*
 * Write y (< 2^63, else IDM_ERANGE) as the encoding's fixed-length text and
 * a NUL into buf (IDM_OPAQUE_TEXT_MAX bytes). IDM_EINVAL for an unknown
 * encoding or NULL buf.
 */
IDM_EXTERN int idm_opaque_format(uint64_t y, idm_opaque_encoding enc,
                                 char buf[IDM_OPAQUE_TEXT_MAX]);
/*
 * Parse a text form. IDM_EPARSE for a wrong length (empty included) or a
 * character outside the encoding's alphabet (the detail names its 1-based
 * position); IDM_ERANGE for well-formed text of a value 2^63 or more.
 * IDM_EINVAL for NULL or an unknown encoding. On failure *out is untouched.
 */
IDM_EXTERN int idm_opaque_parse(const char *text, idm_opaque_encoding enc, uint64_t *out);

#endif /* IDMINT_OPAQUE_H */
