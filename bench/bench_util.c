/* SPDX-License-Identifier: MIT */
#include "bench_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned g_wrong;

int64_t bench_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bench_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double bench_seconds(void)
{
    const char *s = getenv("IDM_BENCH_SECONDS");
    if (s != NULL && *s != '\0') {
        char *end = NULL;
        double v = strtod(s, &end);
        if (end != s && *end == '\0' && v >= 0.1 && v <= 60.0)
            return v;
        fprintf(stderr, "idm_bench: ignoring IDM_BENCH_SECONDS=%s "
                        "(want 0.1 to 60)\n", s);
    }
    return 1.0;
}

void bench_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

const char *bench_si(char *buf, size_t len, double n)
{
    if (n >= 1e9)
        snprintf(buf, len, "%#.4gG", n / 1e9);
    else if (n >= 1e6)
        snprintf(buf, len, "%#.4gM", n / 1e6);
    else if (n >= 1e3)
        snprintf(buf, len, "%#.4gk", n / 1e3);
    else
        snprintf(buf, len, "%#.4g", n);
    return buf;
}

void bench_table_header(const char *title)
{
    bench_printf("\n%s\n", title);
    bench_printf("%-3s %-39s %-15s %-36s %-17s %-10s %s\n", "#", "what",
                 "figure", "ratio (same round)", "spread", "target", "");
}

void bench_row(const char *item, const char *what, const char *figure,
               const char *ratio, const char *spread, const char *target,
               const char *status)
{
    bench_printf("%-3s %-39s %-15s %-36s %-17s %-10s %s\n", item, what, figure,
                 ratio, spread, target, status);
}

void bench_wrong(const char *fmt, ...)
{
    va_list ap;
    g_wrong++;
    fputs("WRONG: ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

unsigned bench_wrong_count(void)
{
    return g_wrong;
}
