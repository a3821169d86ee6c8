/* SPDX-License-Identifier: MIT */
/*
 * The etcd backend's transport seam, for tests/fuzz/fuzz_etcd.c: the fuzz
 * target opens a backend through idm__lease_etcd (backend.h), puts its own
 * stand-in for libcurl in with idm__etcd_set_post and plays answers to every
 * request through idm__etcd_on_data. tests/unit/test_lease_etcd_reattach.c
 * counts round trips through it. Hidden functions of idmint_lease (never
 * exported: tests/abi_symbols.sh checks the list); not installed.
 */
#ifndef IDM_LEASE_ETCD_INTERNAL_H
#define IDM_LEASE_ETCD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest TTL an answer may grant, in s (a year): longer is malformed. */
#define IDM__ETCD_MAX_TTL_S INT64_C(31536000)
/* The deepest JSON answer parsed. */
#define IDM__ETCD_JSON_DEPTH 32

/* POST body to url within timeout_ms, for the backend be: 0 and the HTTP
 * status, the answer delivered through idm__etcd_on_data; -1 for a
 * transport error (said with idm__etcd_transport_error), or for an answer
 * too large (idm__etcd_overflowed). */
typedef int (*idm__etcd_post_fn)(void *be, const char *url, const char *body, long timeout_ms,
                                 long *status);

/* Use post as be's transport from now on (be from idm__lease_etcd.open). */
void idm__etcd_set_post(void *be, idm__etcd_post_fn post);
/* be's transport now (libcurl's after open): for a test's stand-in that
 * passes requests on, counting them. */
idm__etcd_post_fn idm__etcd_get_post(const void *be);
/* Part of an answer: n items of size bytes at p, for be (a libcurl write
 * callback). Returns the bytes taken: fewer when the answer overflows. */
size_t idm__etcd_on_data(char *p, size_t size, size_t n, void *be);
/* The answer being delivered went past the largest accepted. */
bool idm__etcd_overflowed(const void *be);
/* What a failed transport says, for the detail. */
void idm__etcd_transport_error(void *be, const char *text);
/* Standard base64 of the string s into out (4 * ((strlen(s) + 2) / 3) + 1
 * bytes). */
void idm__etcd_b64_str(const char *s, char *out);

#endif /* IDM_LEASE_ETCD_INTERNAL_H */
