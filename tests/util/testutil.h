/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the unit tests: cmocka's headers in the order it needs,
 * a seeded PRNG that reports its seed, uniqueness checks, temp directories,
 * lease scopes, the process's thread count.
 */
#ifndef IDM_TESTUTIL_H
#define IDM_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <idmint/idmint.h>

/* Assert that an idmint call returned rc_expected; on mismatch print both
 * codes' names and the thread's error detail. */
#define IDM_ASSERT_RC(call, rc_expected)                                      \
    do {                                                                      \
        int idm__rc = (call);                                                 \
        if (idm__rc != (rc_expected)) {                                       \
            print_error("%s returned %s (%d), expected %s; detail: %s\n",     \
                        #call, idm_err_name(idm__rc), idm__rc,                \
                        idm_err_name(rc_expected), idm_error_detail());       \
            fail();                                                           \
        }                                                                     \
    } while (0)
#define IDM_ASSERT_OK(call) IDM_ASSERT_RC(call, 0)

/* Assert cond; on failure print it and a printf-style message. */
#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            print_error("check failed: %s\n", #cond);                         \
            fail_msg(__VA_ARGS__);                                            \
        }                                                                     \
    } while (0)

#define LL(x) ((long long)(x))
#define ULL(x) ((unsigned long long)(x))

/* The ids a scenario minted, in the order it minted them. */
typedef struct idm_test_idvec {
    uint64_t *v;
    size_t n, cap;
} idm_test_idvec;
void idm_test_idvec_push(idm_test_idvec *iv, uint64_t id);
void idm_test_idvec_free(idm_test_idvec *iv);
/* Fails the test unless there is at least one id, they strictly increase
 * and none repeats. */
void idm_test_check_ids(const idm_test_idvec *iv);

/* A seeded xoshiro256** generator. The seed comes from IDM_TEST_SEED if set,
 * else from the time; it is printed so a failure can be replayed. */
typedef struct idm_test_rng { uint64_t s[4]; } idm_test_rng;
uint64_t idm_test_seed(void);
void idm_test_rng_init(idm_test_rng *r, uint64_t seed);
uint64_t idm_test_rng_next(idm_test_rng *r);
/* Uniform in [lo, hi], inclusive. */
uint64_t idm_test_rng_range(idm_test_rng *r, uint64_t lo, uint64_t hi);

/* Sorts ids in place and returns how many values appear more than once. */
size_t idm_test_count_duplicates(uint64_t *ids, size_t n);
/* 1 if ids[0..n-1] strictly increase, else 0. */
int idm_test_strictly_increasing(const uint64_t *ids, size_t n);

/* Create a fresh temporary directory; returns a malloc'd path. */
char *idm_test_tmpdir(void);
/* Remove a directory tree made by the test (best effort). */
void idm_test_rmtree(const char *path);
/* Path join into a malloc'd string. */
char *idm_test_path(const char *dir, const char *name);

/* The lease scope (idm_lease_scope) of field of layout preset, or of the
 * layout text at epoch when text is set, into out (room for
 * IDM_LEASE_SCOPE_MAX bytes, <idmint/lease.h>). Fails the test on error. */
void idm_test_scope_of(const char *preset, const char *text, idm_unix_ms epoch,
                       const char *field, char *out);

/* The threads of this process ("Threads:" in /proc/self/status). */
int idm_test_threads_now(void);

/* CRC-32 (IEEE 802.3, as zlib's crc32), written apart from the library's,
 * for tests that read its files independently of it. */
uint32_t idm_test_crc32(const void *data, size_t len);

#endif /* IDM_TESTUTIL_H */
