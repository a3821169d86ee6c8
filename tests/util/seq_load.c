/* SPDX-License-Identifier: MIT */
/*
 * seq_load: a load driver for the segment allocator, for the process-level
 * tests (tests/cli/test_seq_*.sh). It opens one allocator on the stores
 * given, runs T threads that draw ids from it until COUNT ids in all were
 * handed out, and writes every id, one decimal per line, to OUT (each
 * thread buffers its own and they are written at the end, or as they go
 * with --stream, so a process killed with -9 leaves what it had written).
 *
 * usage: seq_load --name NAME --store URL [--store URL...] --out FILE
 *                 [--threads T] [--count N] [--min-block B] [--max-block B]
 *                 [--target-ms MS] [--wait-ms MS] [--pace-us US] [--stream]
 *                 [--tolerate MS]
 *
 * --tolerate MS: an IDM_EUNAVAIL from next() is counted and retried (after
 * 5 ms) instead of ending the run, for up to MS of failures in a row; the
 * summary on stderr says how many calls failed and for how long.
 * --pace-us US: sleep US microseconds between ids (a steady consumer).
 *
 * Summary (stderr, one line): ids=N errors=E waits=W wait_ns=X fetches=F
 * fetch_errors=G block=B. Exit 0 if COUNT ids were drawn, 1 otherwise.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <idmint/idmint.h>
#include <idmint/segment.h>

#define MAX_STORES 16

static idm_seq *g_seq;
static _Atomic int64_t g_left;
static _Atomic uint64_t g_errors;
static _Atomic int g_failed;
static int64_t g_pace_us, g_tolerate_ms;
static int g_stream;
static FILE *g_out;
static pthread_mutex_t g_out_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct worker {
    pthread_t th;
    int64_t *ids;
    size_t n, cap;
} worker;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void emit(worker *w, int64_t id)
{
    if (g_stream) {
        pthread_mutex_lock(&g_out_mu);
        fprintf(g_out, "%lld\n", (long long)id);
        fflush(g_out);
        pthread_mutex_unlock(&g_out_mu);
        return;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap != 0 ? w->cap * 2 : 65536;
        int64_t *grown = realloc(w->ids, cap * sizeof *grown);
        if (grown == NULL) {
            fprintf(stderr, "seq_load: out of memory\n");
            exit(1);
        }
        w->ids = grown;
        w->cap = cap;
    }
    w->ids[w->n++] = id;
}

static void *run(void *arg)
{
    worker *w = arg;
    int64_t failing_since = -1;
    while (atomic_fetch_sub(&g_left, 1) > 0) {
        int64_t id;
        int rc;
        for (;;) {
            rc = idm_seq_next(g_seq, &id);
            if (rc == 0)
                break;
            atomic_fetch_add(&g_errors, 1);
            if (rc != IDM_EUNAVAIL || g_tolerate_ms == 0) {
                fprintf(stderr, "seq_load: next: %s: %s\n", idm_strerror(rc),
                        idm_error_detail());
                atomic_store(&g_failed, 1);
                atomic_store(&g_left, 0);
                return NULL;
            }
            if (failing_since < 0)
                failing_since = mono_ms();
            else if (mono_ms() - failing_since > g_tolerate_ms) {
                fprintf(stderr, "seq_load: next failed for over %lld ms: %s\n",
                        (long long)g_tolerate_ms, idm_error_detail());
                atomic_store(&g_failed, 1);
                atomic_store(&g_left, 0);
                return NULL;
            }
            sleep_us(5000);
        }
        failing_since = -1;
        emit(w, id);
        if (g_pace_us > 0)
            sleep_us(g_pace_us);
    }
    return NULL;
}

static int64_t num(const char *opt, const char *v)
{
    char *end;
    long long x;
    errno = 0;
    x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v || x < 0) {
        fprintf(stderr, "seq_load: bad %s '%s'\n", opt, v);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    const char *urls[MAX_STORES], *out = NULL, *name = NULL;
    idm_store *stores[MAX_STORES];
    size_t nstores = 0;
    int64_t threads = 4, count = 100000;
    idm_seq_opts o;
    idm_seq_stats st;
    worker *w;
    int rc;

    idm_seq_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--stream") == 0) {
            g_stream = 1;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "seq_load: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--name") == 0)
            name = v;
        else if (strcmp(a, "--store") == 0 && nstores < MAX_STORES)
            urls[nstores++] = v;
        else if (strcmp(a, "--out") == 0)
            out = v;
        else if (strcmp(a, "--threads") == 0)
            threads = num(a, v);
        else if (strcmp(a, "--count") == 0)
            count = num(a, v);
        else if (strcmp(a, "--min-block") == 0)
            o.min_block = num(a, v);
        else if (strcmp(a, "--max-block") == 0)
            o.max_block = num(a, v);
        else if (strcmp(a, "--target-ms") == 0)
            o.target_ms = num(a, v);
        else if (strcmp(a, "--wait-ms") == 0)
            o.wait_ms = num(a, v);
        else if (strcmp(a, "--pace-us") == 0)
            g_pace_us = num(a, v);
        else if (strcmp(a, "--tolerate") == 0)
            g_tolerate_ms = num(a, v);
        else {
            fprintf(stderr, "seq_load: unknown option %s\n", a);
            return 2;
        }
    }
    if (name == NULL || nstores == 0 || out == NULL || threads < 1 || threads > 256) {
        fprintf(stderr, "seq_load: needs --name, --store, --out (and 1..256 threads)\n");
        return 2;
    }
    g_out = fopen(out, "w");
    if (g_out == NULL) {
        fprintf(stderr, "seq_load: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < nstores; i++) {
        rc = idm_store_open(&stores[i], urls[i]);
        if (rc != 0) {
            fprintf(stderr, "seq_load: store %s: %s\n", urls[i], idm_error_detail());
            return 1;
        }
    }
    o.name = name;
    o.stores = stores;
    o.nstores = nstores;
    rc = idm_seq_open(&g_seq, &o);
    if (rc != 0) {
        fprintf(stderr, "seq_load: open: %s: %s\n", idm_strerror(rc), idm_error_detail());
        return 1;
    }
    atomic_store(&g_left, count);
    w = calloc((size_t)threads, sizeof *w);
    if (w == NULL)
        return 1;
    for (int64_t t = 0; t < threads; t++)
        pthread_create(&w[t].th, NULL, run, &w[t]);
    for (int64_t t = 0; t < threads; t++)
        pthread_join(w[t].th, NULL);
    for (int64_t t = 0; t < threads; t++) {
        for (size_t i = 0; i < w[t].n; i++)
            fprintf(g_out, "%lld\n", (long long)w[t].ids[i]);
        free(w[t].ids);
    }
    if (fclose(g_out) != 0) {
        fprintf(stderr, "seq_load: cannot write %s\n", out);
        return 1;
    }
    idm_seq_stats_get(g_seq, &st);
    fprintf(stderr, "ids=%llu errors=%llu waits=%llu wait_ns=%llu fetches=%llu fetch_errors=%llu "
                    "block=%lld\n",
            (unsigned long long)st.ids, (unsigned long long)atomic_load(&g_errors),
            (unsigned long long)st.waits, (unsigned long long)st.wait_ns,
            (unsigned long long)st.fetches, (unsigned long long)st.fetch_errors,
            (long long)st.block);
    idm_seq_close(g_seq);
    for (size_t i = 0; i < nstores; i++)
        idm_store_close(stores[i]);
    free(w);
    return atomic_load(&g_failed) ? 1 : 0;
}
