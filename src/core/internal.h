/* SPDX-License-Identifier: MIT */
/*
 * Internal helpers shared by the core sources; not installed. Names with the
 * idm__ prefix are library-internal and not exported from the shared library.
 */
#ifndef IDM_INTERNAL_H
#define IDM_INTERNAL_H

#include <stdint.h>
#include <idmint/idmint.h>

#if defined(__GNUC__)
#define IDM__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define IDM__LIKELY(x) __builtin_expect(!!(x), 1)
#define IDM__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define IDM__ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define IDM__ALWAYS_INLINE inline
#define IDM__PRINTF(a, b)
#define IDM__LIKELY(x) (x)
#define IDM__UNLIKELY(x) (x)
#endif

#define IDM__NS_PER_MS INT64_C(1000000)

/* Set the calling thread's error detail and return err, so a failure path
 * reads `return idm__fail(IDM_ERANGE, "worker %llu > %llu", ...)`. */
int idm__fail(int err, const char *fmt, ...) IDM__PRINTF(2, 3);
/* Clear the calling thread's detail (at the start of a public call that
 * may set one). */
void idm__clear_detail(void);

/* Floor division for a possibly negative numerator and positive divisor. */
static inline int64_t idm__floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* CLOCK_REALTIME in ns: the system clock's wall_ns, inlined into the
 * generator's hot path so the common case pays no indirect call. */
#include <time.h>
static inline idm_wall_ns idm__sys_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CRC-32 (IEEE 802.3), as zlib's crc32(0, buf, len). */
uint32_t idm__crc32(const void *buf, size_t len);

#endif /* IDM_INTERNAL_H */
