/* SPDX-License-Identifier: MIT */
/*
 * Error codes, names and messages from the one table in error.h, and the
 * per-thread detail line a failing call leaves behind.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char detail[256];

const char *idm_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define XX(name, code, msg)                                                   \
    case IDM_##name:                                                          \
        return msg;
        IDM_ERRNO_MAP(XX)
#undef XX
    default:
        return "unknown error";
    }
}

const char *idm_err_name(int err)
{
    switch (err) {
    case 0:
        return "IDM_OK";
#define XX(name, code, msg)                                                   \
    case IDM_##name:                                                          \
        return "IDM_" #name;
        IDM_ERRNO_MAP(XX)
#undef XX
    default:
        return "IDM_UNKNOWN";
    }
}

const char *idm_error_detail(void)
{
    return detail;
}

/* Formatted apart first: a caller may pass the current detail as an
 * argument ("layout: bad epoch: %s", idm_error_detail()), and vsnprintf's
 * output must not overlap its input. */
IDM__PRINTF(2, 0) static int vfail(int err, const char *fmt, va_list ap)
{
    char line[sizeof detail];
    vsnprintf(line, sizeof line, fmt, ap);
    memcpy(detail, line, strlen(line) + 1);
    return err;
}

int idm__fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err = vfail(err, fmt, ap);
    va_end(ap);
    return err;
}

int idm_error_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err = vfail(err, fmt, ap);
    va_end(ap);
    return err;
}

void idm__clear_detail(void)
{
    detail[0] = '\0';
}

const char *idm__quote(const char *text, char *buf)
{
    size_t n = strnlen(text, 41);
    if (n <= 40) {
        memcpy(buf, text, n + 1);
    } else {
        memcpy(buf, text, 40);
        memcpy(buf + 40, "...", 4);
    }
    return buf;
}
