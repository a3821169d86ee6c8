/* SPDX-License-Identifier: MIT */
/*
 * audit_gen: the input of the audit benchmark (bench/audit.sh), a table's
 * ids as an export ordered by creation time would give them, with a few
 * duplicates planted at known lines.
 *
 *   audit_gen --out FILE --planted FILE [--count N] [--layout NAME|TEXT]
 *             [--epoch T] [--workers W] [--times] [--start MS] [--seed S]
 *
 * The ids are real: W generators of the library (idm_snowflake_open, one per
 * worker, node values 0, 1, 2, ... with the layout's last node field
 * counting fastest) mint them on one manual clock that moves a millisecond
 * at a time. In each millisecond every worker mints 0 to 5 ids (2.5 on
 * average, drawn from a seeded generator, so a run is repeatable), and the
 * rows of that millisecond are written in a random interleaving of the
 * workers, each worker's ids in the order it minted them: what concurrent
 * inserts recorded in time order look like. With 8 workers that is 20 ids a
 * millisecond, so 100M ids span about 83 minutes, ending a minute before
 * now (or starting at --start, Unix ms).
 *
 * Five ids are planted as duplicates, each on a different worker (a
 * finding of the audit shows at most 10 ids per worker): the first line's
 * id again on the last line (a row imported twice, an hour apart), the id
 * at a quarter of the file again on the next line (two writers in one
 * tick), the id at half of it again 1,000 lines later, the id at three
 * quarters twice more on the next two lines (three copies), and the id at
 * 90% again 5% of the file later. The file has exactly N lines, the copies
 * included.
 *
 * --times adds the recorded time as psql -At prints a timestamptz column
 * ("ID|2026-01-02 10:00:00.123456+00"): a row's recorded time is its
 * millisecond plus 1 ms, with the microseconds rising through the
 * millisecond's rows. The same options with and without --times give the
 * same ids on the same lines (pass the --start the first run printed).
 *
 * --planted FILE gets one line per planted id, in numeric order: the id,
 * then the lines it is on. stdout gets one line: start_ms, end_ms, workers,
 * lines, copies. Exit status 0, 2 for bad usage (naming the option), 1 when
 * a file cannot be written or the library fails.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <idmint/idmint.h>

#define PLANTS 5
#define COPIES_MAX 2
#define WORKERS_MAX 1024
#define PER_MS_MAX 5 /* each worker mints 0..PER_MS_MAX ids a ms */
#define COUNT_MIN 10000
#define OUT_BUF (1u << 20)

/* One planted duplicate: where its first copy is asked for (a fraction of
 * the file) and how many lines after it each further copy goes (0: the
 * file's last line). */
typedef struct plant {
    double at;
    uint64_t gap[COPIES_MAX];
    unsigned n_gaps;
    /* filled in as the file is written */
    bool taken;
    uint64_t id;
    unsigned worker;
    uint64_t line[1 + COPIES_MAX];
    unsigned n_lines;
} plant;

/* A copy waiting for its line. */
typedef struct pending {
    uint64_t due;
    unsigned plant;
} pending;

typedef struct gen {
    FILE *out;
    char *buf;
    size_t len;
    bool times;
    uint64_t rng;
    /* the recorded time of the current row, and the cached text of its
     * second */
    int64_t rec_us;
    int64_t sec_cached;
    char sec_text[24];
} gen;

static const char usage[] =
    "usage: audit_gen --out FILE --planted FILE [--count N] [--layout NAME|TEXT]\n"
    "                 [--epoch T] [--workers W] [--times] [--start MS] [--seed S]\n";

static int bad(const char *opt, const char *val, const char *why)
{
    fprintf(stderr, "audit_gen: bad %s '%s': %s\n%s", opt, val, why, usage);
    return 2;
}

static int lib_fail(const char *what, int rc)
{
    fprintf(stderr, "audit_gen: %s: %s (%s)\n", what, idm_strerror(rc), idm_error_detail());
    return 1;
}

/* xorshift64*: repeatable and fast; nothing here needs more. */
static uint64_t next_rand(gen *g)
{
    g->rng ^= g->rng >> 12;
    g->rng ^= g->rng << 25;
    g->rng ^= g->rng >> 27;
    return g->rng * UINT64_C(2685821657736338717);
}

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int flush_out(gen *g)
{
    if (g->len > 0 && fwrite(g->buf, 1, g->len, g->out) != g->len)
        return -1;
    g->len = 0;
    return 0;
}

/* Digits of v, without a printf per id. */
static size_t put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

/* One line: the id, and with --times "|" and the recorded time. */
static int put_row(gen *g, uint64_t id)
{
    if (g->len + 64 > OUT_BUF && flush_out(g) != 0)
        return -1;
    char *p = g->buf + g->len;
    p += put_u64(p, id);
    if (g->times) {
        int64_t sec = g->rec_us / 1000000, us = g->rec_us % 1000000;
        if (sec != g->sec_cached) {
            time_t t = (time_t)sec;
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(g->sec_text, sizeof g->sec_text, "%Y-%m-%d %H:%M:%S", &tm);
            g->sec_cached = sec;
        }
        *p++ = '|';
        size_t n = strlen(g->sec_text);
        memcpy(p, g->sec_text, n);
        p += n;
        *p++ = '.';
        for (int d = 5; d >= 0; d--, us /= 10)
            p[d] = (char)('0' + us % 10);
        p += 6;
        memcpy(p, "+00", 3);
        p += 3;
    }
    *p++ = '\n';
    g->len = (size_t)(p - g->buf);
    return 0;
}

/* Worker w's node values: the node fields as the digits of w, the last
 * node field counting fastest. Fails when the layout has fewer node
 * values than workers. */
static int set_nodes(const idm_layout *l, unsigned w, idm_snowflake_opts *o)
{
    uint64_t rest = w;
    for (size_t i = idm_layout_field_count(l); i-- > 0;) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) != 0 || fi.kind != IDM_FIELD_NODE)
            continue;
        uint64_t size = fi.bits >= 63 ? UINT64_MAX : (uint64_t)1 << fi.bits;
        o->node[i] = rest % size;
        o->node_set |= UINT32_C(1) << i;
        rest /= size;
    }
    return rest == 0 ? 0 : -1;
}

typedef struct config {
    const char *out, *planted, *layout, *epoch;
    uint64_t count, workers, seed;
    int64_t start;
    bool times;
} config;

static int parse_args(int argc, char **argv, config *c)
{
    memset(c, 0, sizeof *c);
    c->count = 100000000;
    c->workers = 8;
    c->seed = 1;
    c->start = -1;
    c->layout = "twitter";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--times") == 0) {
            c->times = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        }
        bool known = strcmp(a, "--out") == 0 || strcmp(a, "--planted") == 0 ||
                     strcmp(a, "--count") == 0 || strcmp(a, "--layout") == 0 ||
                     strcmp(a, "--epoch") == 0 || strcmp(a, "--workers") == 0 ||
                     strcmp(a, "--start") == 0 || strcmp(a, "--seed") == 0;
        if (!known) {
            fprintf(stderr, "audit_gen: unknown option '%s'\n%s", a, usage);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "audit_gen: %s needs a value\n%s", a, usage);
            return 2;
        }
        const char *v = argv[++i];
        uint64_t n;
        if (strcmp(a, "--out") == 0) {
            c->out = v;
        } else if (strcmp(a, "--planted") == 0) {
            c->planted = v;
        } else if (strcmp(a, "--layout") == 0) {
            c->layout = v;
        } else if (strcmp(a, "--epoch") == 0) {
            c->epoch = v;
        } else if (strcmp(a, "--count") == 0) {
            if (!parse_u64(v, COUNT_MIN, UINT64_C(1) << 40, &c->count))
                return bad(a, v, "must be a whole number of lines, 10000 to 2^40");
        } else if (strcmp(a, "--workers") == 0) {
            if (!parse_u64(v, PLANTS, WORKERS_MAX, &c->workers))
                return bad(a, v, "must be 5 to 1024 (one planted id per worker)");
        } else if (strcmp(a, "--start") == 0) {
            if (!parse_u64(v, 1, UINT64_C(1) << 50, &n))
                return bad(a, v, "must be a time in Unix ms");
            c->start = (int64_t)n;
        } else if (!parse_u64(v, 1, UINT64_MAX, &c->seed)) {
            return bad(a, v, "must be a whole number above 0");
        }
    }
    if (c->out == NULL || c->planted == NULL) {
        fprintf(stderr, "audit_gen: --out and --planted are required\n%s", usage);
        return 2;
    }
    return 0;
}

/* The state of the minting: one generator per worker on one clock, and
 * what is left to mint in the current millisecond. */
typedef struct minters {
    idm_manual_clock *mc;
    idm_snowflake *g[WORKERS_MAX];
    unsigned n;
    int64_t ms;
    unsigned left[WORKERS_MAX];
    unsigned active[WORKERS_MAX];
    unsigned n_active;
    unsigned rows, row; /* rows of this ms, and rows written so far */
} minters;

static int open_minters(minters *m, const idm_layout *l, unsigned workers, int64_t start)
{
    int rc = idm_manual_clock_new(&m->mc, start, false);
    if (rc != 0)
        return lib_fail("manual clock", rc);
    m->n = workers;
    m->ms = start - 1;
    for (unsigned w = 0; w < workers; w++) {
        idm_snowflake_opts o;
        idm_snowflake_opts_init(&o);
        o.layout = l;
        o.clock = idm_manual_clock_clock(m->mc);
        if (set_nodes(l, w, &o) != 0) {
            fprintf(stderr, "audit_gen: the layout has fewer than %u node values\n", workers);
            return 2;
        }
        if ((rc = idm_snowflake_open(&m->g[w], &o)) != 0)
            return lib_fail("idm_snowflake_open", rc);
    }
    return 0;
}

static void close_minters(minters *m)
{
    for (unsigned w = 0; w < m->n; w++)
        idm_snowflake_close(m->g[w]);
    idm_manual_clock_free(m->mc);
}

/* The next fresh row: a random worker among those with ids left in this
 * millisecond mints its next id (moving to the next millisecond first when
 * none has any left). */
static int mint_row(gen *g, minters *m, uint64_t *id, unsigned *worker)
{
    while (m->n_active == 0) {
        m->ms++;
        idm_manual_clock_set(m->mc, m->ms);
        m->rows = m->row = 0;
        for (unsigned w = 0; w < m->n; w++) {
            m->left[w] = (unsigned)(next_rand(g) % (PER_MS_MAX + 1));
            m->rows += m->left[w];
            if (m->left[w] > 0)
                m->active[m->n_active++] = w;
        }
    }
    unsigned k = (unsigned)(next_rand(g) % m->n_active);
    unsigned w = m->active[k];
    if (--m->left[w] == 0)
        m->active[k] = m->active[--m->n_active];
    int rc = idm_snowflake_next(m->g[w], id);
    if (rc != 0)
        return lib_fail("idm_snowflake_next", rc);
    g->rec_us = (m->ms + 1) * 1000 + (int64_t)m->row * 1000 / m->rows;
    m->row++;
    *worker = w;
    return 0;
}

static int cmp_plant(const void *x, const void *y)
{
    const plant *p = x, *q = y;
    return (p->id > q->id) - (p->id < q->id);
}

static int write_planted(const char *path, plant *pl)
{
    qsort(pl, PLANTS, sizeof *pl, cmp_plant);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "audit_gen: %s: cannot write: %s\n", path, strerror(errno));
        return 1;
    }
    for (unsigned i = 0; i < PLANTS; i++) {
        fprintf(f, "%" PRIu64, pl[i].id);
        for (unsigned j = 0; j < pl[i].n_lines; j++)
            fprintf(f, " %" PRIu64, pl[i].line[j]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "audit_gen: %s: cannot write: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* Is line the place of plant p's first copy: at or past where it is
 * asked for, on a worker no earlier plant took? */
static bool plant_here(const plant *pl, unsigned p, uint64_t line, uint64_t count,
                       unsigned worker)
{
    if (pl[p].taken || line < (uint64_t)(pl[p].at * (double)count) + 1)
        return false;
    for (unsigned q = 0; q < PLANTS; q++) {
        if (q != p && pl[q].taken && pl[q].worker == worker)
            return false;
    }
    return true;
}

/* Write the file: fresh rows, and each planted copy on its line. */
static int write_rows(gen *g, minters *m, plant *pl, uint64_t count)
{
    pending due[PLANTS * COPIES_MAX];
    unsigned n_due = 0;
    for (uint64_t line = 1; line <= count; line++) {
        /* A copy whose line has come (the earliest first). */
        unsigned best = n_due;
        for (unsigned i = 0; i < n_due; i++) {
            if (due[i].due <= line && (best == n_due || due[i].due < due[best].due))
                best = i;
        }
        if (best < n_due) {
            plant *p = &pl[due[best].plant];
            p->line[p->n_lines++] = line;
            due[best] = due[--n_due];
            if (put_row(g, p->id) != 0)
                return -1;
            continue;
        }
        uint64_t id;
        unsigned w;
        int rc = mint_row(g, m, &id, &w);
        if (rc != 0)
            return rc;
        for (unsigned p = 0; p < PLANTS; p++) {
            if (!plant_here(pl, p, line, count, w))
                continue;
            pl[p].taken = true;
            pl[p].id = id;
            pl[p].worker = w;
            pl[p].line[pl[p].n_lines++] = line;
            for (unsigned j = 0; j < pl[p].n_gaps; j++)
                due[n_due++] = (pending){pl[p].gap[j] ? line + pl[p].gap[j] : count,
                                         p};
            break;
        }
        if (put_row(g, id) != 0)
            return -1;
    }
    for (unsigned p = 0; p < PLANTS; p++) {
        if (pl[p].n_lines != 1 + pl[p].n_gaps) {
            fprintf(stderr, "audit_gen: planted id %u did not get all its copies\n", p);
            return 1;
        }
    }
    return flush_out(g);
}

int main(int argc, char **argv)
{
    config c;
    int rc = parse_args(argc, argv, &c);
    if (rc != 0)
        return rc;
    idm_layout *l = NULL;
    if ((rc = idm_layout_from_spec(&l, c.layout, c.epoch)) != 0) {
        fprintf(stderr, "audit_gen: bad --layout '%s': %s (%s)\n", c.layout, idm_strerror(rc),
                idm_error_detail());
        return 2;
    }
    /* A tick must hold what the workers mint in it, or the generators
     * would wait for a clock that only moves when told. */
    uint64_t per_tick = (uint64_t)1 << idm_layout_seq_bits(l);
    if (per_tick < (uint64_t)PER_MS_MAX * (uint64_t)idm_layout_tick_ms(l)) {
        fprintf(stderr, "audit_gen: bad --layout '%s': its sequence holds fewer than %d ids "
                "a ms\n", c.layout, PER_MS_MAX);
        idm_layout_free(l);
        return 2;
    }
    /* 2.5 ids a ms per worker: the span, ending a minute before now. */
    int64_t span_ms = (int64_t)(c.count * 2 / (5 * c.workers)) + 1000;
    if (c.start < 0)
        c.start = (int64_t)time(NULL) * 1000 - span_ms - 60000;
    plant pl[PLANTS] = {
        {.at = 0.0, .gap = {0}, .n_gaps = 1},
        {.at = 0.25, .gap = {1}, .n_gaps = 1},
        {.at = 0.5, .gap = {1000}, .n_gaps = 1},
        {.at = 0.75, .gap = {1, 2}, .n_gaps = 2},
        {.at = 0.9, .gap = {c.count / 20}, .n_gaps = 1},
    };
    gen g = {.times = c.times, .rng = c.seed * UINT64_C(0x9E3779B97F4A7C15) | 1,
             .sec_cached = -1};
    g.buf = malloc(OUT_BUF);
    g.out = fopen(c.out, "w");
    if (g.buf == NULL || g.out == NULL) {
        fprintf(stderr, "audit_gen: %s: cannot write: %s\n", c.out, strerror(errno));
        return 1;
    }
    minters *m = calloc(1, sizeof *m);
    if (m == NULL)
        return 1;
    rc = open_minters(m, l, (unsigned)c.workers, c.start);
    if (rc == 0) {
        rc = write_rows(&g, m, pl, c.count);
        if (rc < 0)
            fprintf(stderr, "audit_gen: %s: cannot write: %s\n", c.out, strerror(errno));
    }
    if (fclose(g.out) != 0 && rc == 0) {
        fprintf(stderr, "audit_gen: %s: cannot write: %s\n", c.out, strerror(errno));
        rc = 1;
    }
    int64_t end = m->ms;
    close_minters(m);
    free(m);
    free(g.buf);
    idm_layout_free(l);
    if (rc != 0)
        return rc < 0 ? 1 : rc;
    if ((rc = write_planted(c.planted, pl)) != 0)
        return rc;
    unsigned copies = 0;
    for (unsigned p = 0; p < PLANTS; p++)
        copies += pl[p].n_gaps;
    printf("start_ms=%" PRId64 " end_ms=%" PRId64 " workers=%" PRIu64 " lines=%" PRIu64
           " copies=%u\n", c.start, end, c.workers, c.count, copies);
    return 0;
}
