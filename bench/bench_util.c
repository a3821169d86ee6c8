/* SPDX-License-Identifier: MIT */
#include "bench_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

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

int bench_rounds(void)
{
    const char *s = getenv("IDM_BENCH_ROUNDS");
    if (s != NULL && *s != '\0') {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end != s && *end == '\0' && v >= 1 && v <= BENCH_ROUNDS_MAX)
            return (int)v;
        fprintf(stderr, "idm_bench: ignoring IDM_BENCH_ROUNDS=%s (want 1 to %d)\n",
                s, BENCH_ROUNDS_MAX);
    }
    return 3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *bench_loadavg(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        double a, b, c;
        if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
            snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
        fclose(f);
    }
    return buf;
}

void bench_print_machine(void)
{
    char model[256] = "unknown", cs[64] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        char line[512];
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c != NULL) {
                    c++;
                    while (*c == ' ' || *c == '\t')
                        c++;
                    c[strcspn(c, "\n")] = '\0';
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        }
        fclose(f);
    }
    f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource",
              "r");
    if (f != NULL) {
        if (fgets(cs, sizeof cs, f) != NULL)
            cs[strcspn(cs, "\n")] = '\0';
        fclose(f);
    }
    struct utsname u;
    const char *kernel = "unknown";
    if (uname(&u) == 0)
        kernel = u.release;
    char load[64];
    bench_printf("machine: cpu \"%s\", %ld cores online, Linux %s, "
                 "clocksource %s, load %s\n", model,
                 sysconf(_SC_NPROCESSORS_ONLN), kernel, cs,
                 bench_loadavg(load, sizeof load));
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

int64_t bench_run_clock_reads(double secs, uint64_t *count)
{
    enum { CALLS = 256 }; /* calls between two reads of the monotonic clock */
    struct timespec ts;
    uint64_t n = 0, sink = 0;
    int64_t t0 = bench_mono_ns(), deadline = t0 + (int64_t)(secs * 1e9), now;
    for (;;) {
        for (int i = 0; i < CALLS; i++) {
            clock_gettime(CLOCK_REALTIME, &ts);
            sink += (uint64_t)ts.tv_nsec;
        }
        n += CALLS;
        now = bench_mono_ns();
        if (now >= deadline)
            break;
    }
    BENCH_CLOBBER(&sink);
    *count = n;
    return now - t0;
}
