/* SPDX-License-Identifier: MIT */
/*
 * Error codes. Every fallible idmint function returns 0 on success or one of
 * these negative codes. The codes, their names and their messages come from
 * one table (IDM_ERRNO_MAP) so they cannot drift apart.
 *
 * A failing call may also leave a detail line for the calling thread (which
 * field, which value, which file); read it with idm_error_detail() before
 * the next idmint call on the same thread.
 */
#ifndef IDMINT_ERROR_H
#define IDMINT_ERROR_H

#include "export.h"

#define IDM_ERRNO_MAP(XX)                                                     \
    XX(EINVAL, -1, "invalid argument")                                        \
    XX(ENOMEM, -2, "out of memory")                                           \
    XX(ELAYOUT, -3, "invalid layout")                                         \
    XX(EPARSE, -4, "malformed text")                                          \
    XX(ERANGE, -5, "value out of range")                                      \
    XX(ECLOCKBACK, -6, "clock moved backwards beyond the policy's bound")     \
    XX(EEXHAUSTED, -7,                                                        \
       "sequence exhausted and the clock did not advance in time")            \
    XX(ETIMEOVER, -8, "time field exhausted: the layout has run out of time") \
    XX(EEPOCH, -9, "clock is before the layout's epoch")                      \
    XX(EIO, -10, "state file input/output error")                             \
    XX(ECORRUPT, -11, "state file is corrupt")                                \
    XX(ENOENT, -12, "state file does not exist")                              \
    XX(EBUSY, -13, "state file is locked by another generator")               \
    XX(ENODE, -14, "node field has no value")                                 \
    XX(ERANDOM, -15, "the system's random source failed")                    \
    XX(EOVERFLOW, -16,                                                       \
       "random part overflowed within one millisecond")                      \
    XX(ELEASE, -17, "no valid worker-id lease covers this id")                \
    XX(EEXIST, -18, "it exists already")                                      \
    XX(ENOSEQ, -19, "no such sequence")                                       \
    XX(EUNAVAIL, -20, "the store cannot be reached")                         \
    XX(EFORKED, -21,                                                          \
       "used in a forked child: open a generator and claim a worker id per process")

typedef enum idm_errno {
#define IDM__ERRDEF(name, code, msg) IDM_##name = (code),
    IDM_ERRNO_MAP(IDM__ERRDEF)
#undef IDM__ERRDEF
    IDM_ERRNO_MIN = -21
} idm_errno;

/*
 * A static message for any integer: known codes get their message, 0 gets
 * "success", anything else "unknown error". Never NULL, never allocates.
 * Thread-safe.
 */
IDM_EXTERN const char *idm_strerror(int err);

/* The symbolic name ("IDM_ECLOCKBACK"), or "IDM_UNKNOWN". Thread-safe. */
IDM_EXTERN const char *idm_err_name(int err);

/*
 * The detail line left by the calling thread's most recent failing idmint
 * call, e.g. "layout: field 'worker' repeats". Empty string if none. The
 * pointer is to thread-local storage valid until the thread's next idmint
 * call. Thread-safe (each thread sees its own).
 */
IDM_EXTERN const char *idm_error_detail(void);

/* For idmint's companion libraries (leases, later segments): set the calling
 * thread's detail line, printf-style, and return err. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
IDM_EXTERN int idm_error_fail(int err, const char *fmt, ...);

#endif /* IDMINT_ERROR_H */
