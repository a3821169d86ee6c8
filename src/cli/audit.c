/* SPDX-License-Identifier: MIT */
/*
 * The engine of `idmint audit` (see audit.h for what it finds).
 *
 * Records are read one at a time. Each Snowflake id is decoded and handed
 * to the state of its worker (its node fields, every field but time and
 * sequence), which follows that worker's ticks, the high-water mark of its
 * id time, and a small window of offsets between id time and recorded time;
 * findings are built as the records come (clock steps, two writers, future
 * ids, skew) or at the end (capacity, workers, duplicates). Ids of the
 * 128-bit kinds carry no worker: they all go to one state without one, and
 * only the time checks and the duplicate check apply to them.
 *
 * The duplicate check keeps every id as a key (the 64-bit id, or the 16
 * bytes of a 128-bit id: a hash would not do for a verdict) with its line
 * number. Up to mem_ids keys are held in memory; beyond that the array is
 * sorted (a radix sort) and written as a run to an unlinked temporary file.
 * At the end the runs are merged (a k-way merge) and equal keys next to
 * each other are the duplicates.
 */
#include "audit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <idmint/text.h>

/* Offsets per skew window: the median of this many is compared with
 * skew_ms. */
#define SKEW_WINDOW 64
/* A last window shorter than this at the end is not judged. */
#define SKEW_WINDOW_MIN 8
/* Points of the offset plot kept per worker (halved when full). */
#define PLOT_POINTS 512
/* Clock-step findings kept, in all and per worker (so that one worker that
 * steps all the time does not hide the others' steps); later steps are
 * counted in the summary only. */
#define STEPS_MAX 1000
#define STEPS_PER_WORKER 20
/* The randomness check judges files of ids from at least this many
 * milliseconds (a random bit is the same in all of them once in 2^63). */
#define RANDOM_MIN_IDS 64
/* Keys read at once from each run in the merge. */
#define RUN_BUF 4096

/* One key of the duplicate check: the id (hi is 0 for a 64-bit id) and
 * its line. The keys held are dkeys for 128-bit ids, skeys (16 bytes, a
 * third less to hold and to sort) for 64-bit ones; the merge and the scan
 * see dkeys. */
typedef struct dkey {
    uint64_t hi, lo;
    uint64_t line;
} dkey;

typedef struct skey {
    uint64_t lo;
    uint64_t line;
} skey;

typedef struct plot_pt {
    int64_t t, off;
} plot_pt;

/* What the audit follows of one worker. */
typedef struct worker {
    uint64_t node_key; /* the id's node bits */
    uint64_t first_id; /* an id of the worker, for its text */
    uint64_t records;
    int64_t first_ms; /* the first id's time */
    char text[64];
    /* ticks */
    bool have_tick;
    uint64_t tick, tick_n, last_seq;
    int64_t tick_ms, tick_rec; /* tick_rec: the previous row's recorded time */
    unsigned drops, rises;
    bool tick_flagged;
    uint64_t best_n;
    int64_t best_ms;
    uint64_t ticks_over_half;
    /* clock steps */
    bool have_hw;
    int64_t hw_ms;
    audit_example hw_ex;
    audit_finding *step; /* the open step, or NULL */
    int64_t step_hw, step_rec0, step_low, last_rec;
    unsigned steps; /* clock-step findings of this worker */
    /* skew */
    int64_t win[SKEW_WINDOW];
    unsigned win_n;
    int64_t win_rec0;
    audit_finding *skew; /* the open skew, or NULL */
    /* findings kept per worker */
    audit_finding *two, *future, *dup;
    /* the plot */
    plot_pt *pts;
    size_t n_pts, stride, skip;
} worker;

/* A run spilled to a file, being merged. */
typedef struct run {
    FILE *f;
    unsigned char buf[RUN_BUF * sizeof(dkey)];
    size_t ksz; /* bytes per key in the file */
    size_t pos, len;
} run;

struct audit {
    audit_opts o;
    audit_kind kind;
    const idm_layout *l;
    uint64_t node_mask, seq_mask;
    unsigned seq_shift;
    int64_t tick_ms;
    idm_unix_ms epoch;
    size_t n_fields;
    idm_field_info fi[IDM_LAYOUT_MAX_FIELDS];
    uint64_t records;
    bool header_seen; /* the first line was looked at for a header */
    /* workers: an array, and an open-addressing index of node keys */
    worker *w;
    size_t n_w, cap_w;
    uint32_t *idx; /* worker index + 1, 0 empty */
    size_t cap_idx;
    /* the duplicate check */
    void *keys, *tmp; /* skeys or dkeys (ksz bytes each) */
    size_t ksz, n_keys, cap_keys;
    FILE **runs;
    size_t n_runs;
    /* findings */
    audit_finding **f;
    size_t n_f, cap_f;
    audit_finding *before_epoch;
    /* the randomness check: the AND and the OR of the keys of the first
     * id of each millisecond (rand_samples of them) */
    uint64_t and_hi, and_lo, or_hi, or_lo, rand_samples;
    int64_t rand_ms;
    audit_example first_wide;
    uint64_t steps_omitted;
    size_t n_steps;
    bool finished;
};

/* ---- small helpers ---- */

static const char *const finding_names[AF_KINDS] = {
    "duplicate", "two-writers", "clock-step", "future", "before-epoch", "randomness", "skew",
    "capacity", "workers",
};

const char *audit_finding_name(audit_finding_kind k)
{
    return (unsigned)k < AF_KINDS ? finding_names[k] : "unknown";
}

void audit_opts_init(audit_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = AUDIT_AUTO;
    o->future_ms = 60000;
    o->skew_ms = 1000;
    o->examples = 10;
}

static int fail(char *err, size_t err_len, int rc, uint64_t line_no, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* "line N: what was wrong" into err; returns rc. */
static int fail(char *err, size_t err_len, int rc, uint64_t line_no, const char *fmt, ...)
{
    if (err != NULL && err_len > 0) {
        int n = snprintf(err, err_len, "line %" PRIu64 ": ", line_no);
        if (n >= 0 && (size_t)n < err_len) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, err_len - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static int64_t wall_ms(void)
{
    const idm_clock *c = idm_clock_system();
    return (int64_t)(c->wall_ns(c->ctx) / 1000000);
}

/* A new finding with room for the audit's examples; NULL if out of
 * memory. Kept in the audit's list. */
static audit_finding *new_finding(audit *a, audit_finding_kind k, const worker *w)
{
    if (a->n_f == a->cap_f) {
        size_t cap = a->cap_f ? a->cap_f * 2 : 16;
        audit_finding **f = realloc(a->f, cap * sizeof *f);
        if (f == NULL)
            return NULL;
        a->f = f;
        a->cap_f = cap;
    }
    audit_finding *f = calloc(1, sizeof *f + a->o.examples * sizeof f->ex[0]);
    if (f == NULL)
        return NULL;
    f->kind = k;
    if (w != NULL && a->kind == AUDIT_SNOWFLAKE) {
        f->has_worker = true;
        memcpy(f->worker, w->text, sizeof f->worker);
    }
    a->f[a->n_f++] = f;
    return f;
}

static void add_example(const audit *a, audit_finding *f, const audit_example *e)
{
    if (f != NULL && f->n_examples < a->o.examples)
        f->ex[f->n_examples++] = *e;
}

/* ---- workers ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* The text of a worker: its node fields, "datacenter=1 worker=7". */
static void worker_text(const audit *a, worker *w)
{
    idm_decoded d;
    w->text[0] = '\0';
    if (a->kind != AUDIT_SNOWFLAKE || idm_layout_decode(a->l, w->first_id, &d) != 0)
        return;
    size_t used = 0;
    for (size_t i = 0; i < a->n_fields; i++) {
        if (a->fi[i].kind != IDM_FIELD_NODE)
            continue;
        int n = snprintf(w->text + used, sizeof w->text - used, "%s%s=%" PRIu64,
                         used ? " " : "", a->fi[i].name, d.value[i]);
        if (n < 0 || (size_t)n >= sizeof w->text - used)
            break;
        used += (size_t)n;
    }
}

static int grow_index(audit *a)
{
    size_t cap = a->cap_idx ? a->cap_idx * 2 : 64;
    uint32_t *idx = calloc(cap, sizeof *idx);
    if (idx == NULL)
        return IDM_ENOMEM;
    for (size_t i = 0; i < a->n_w; i++) {
        size_t h = (size_t)mix64(a->w[i].node_key) & (cap - 1);
        while (idx[h] != 0)
            h = (h + 1) & (cap - 1);
        idx[h] = (uint32_t)(i + 1);
    }
    free(a->idx);
    a->idx = idx;
    a->cap_idx = cap;
    return 0;
}

/* The worker of node key k, or -1 if none has been seen. */
static long find_worker(const audit *a, uint64_t k)
{
    if (a->cap_idx == 0)
        return -1;
    size_t h = (size_t)mix64(k) & (a->cap_idx - 1);
    while (a->idx[h] != 0) {
        if (a->w[a->idx[h] - 1].node_key == k)
            return (long)a->idx[h] - 1;
        h = (h + 1) & (a->cap_idx - 1);
    }
    return -1;
}

/* The worker of node key k, added if new; NULL if out of memory. */
static worker *get_worker(audit *a, uint64_t k, uint64_t id)
{
    long i = find_worker(a, k);
    if (i >= 0)
        return &a->w[i];
    if ((a->n_w + 1) * 2 > a->cap_idx && grow_index(a) != 0)
        return NULL;
    if (a->n_w == a->cap_w) {
        size_t cap = a->cap_w ? a->cap_w * 2 : 16;
        worker *w = realloc(a->w, cap * sizeof *w);
        if (w == NULL)
            return NULL;
        a->w = w;
        a->cap_w = cap;
    }
    worker *w = &a->w[a->n_w];
    memset(w, 0, sizeof *w);
    w->node_key = k;
    w->first_id = id;
    w->stride = 1;
    w->last_rec = INT64_MIN;
    w->step_hw = INT64_MIN;
    worker_text(a, w);
    size_t h = (size_t)mix64(k) & (a->cap_idx - 1);
    while (a->idx[h] != 0)
        h = (h + 1) & (a->cap_idx - 1);
    a->idx[h] = (uint32_t)(++a->n_w);
    return w;
}

/* ---- the audit ---- */

int audit_new(audit **out, const audit_opts *o)
{
    if (o->kind != AUDIT_UUID7 && o->kind != AUDIT_ULID && o->kind != AUDIT_OBJECTID &&
        o->layout == NULL)
        return idm_error_fail(IDM_EINVAL, "a layout is needed for Snowflake ids");
    if (o->future_ms < 0 || o->skew_ms < 0 || o->step_ms < 0)
        return idm_error_fail(IDM_EINVAL,
                              "future_ms, skew_ms and step_ms must not be negative");
    if (o->mem_bytes != 0 && o->mem_bytes < AUDIT_MEM_MIN)
        return idm_error_fail(IDM_EINVAL, "the duplicate check needs at least %zu MiB",
                              AUDIT_MEM_MIN >> 20);
    audit *a = calloc(1, sizeof *a);
    if (a == NULL)
        return IDM_ENOMEM;
    a->o = *o;
    if (a->o.mem_bytes == 0)
        a->o.mem_bytes = (size_t)2 << 30;
    if (a->o.now_ms == 0)
        a->o.now_ms = wall_ms();
    a->kind = o->kind;
    a->l = o->layout;
    if (a->l != NULL) {
        a->n_fields = idm_layout_field_count(a->l);
        a->tick_ms = idm_layout_tick_ms(a->l);
        a->epoch = idm_layout_epoch(a->l);
        for (size_t i = 0; i < a->n_fields; i++) {
            idm_layout_field(a->l, i, &a->fi[i]);
            uint64_t m = a->fi[i].max << a->fi[i].shift;
            if (a->fi[i].kind == IDM_FIELD_NODE)
                a->node_mask |= m;
            else if (a->fi[i].kind == IDM_FIELD_SEQ) {
                a->seq_mask = a->fi[i].max;
                a->seq_shift = a->fi[i].shift;
            }
        }
    }
    *out = a;
    return 0;
}

void audit_free(audit *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->n_w; i++)
        free(a->w[i].pts);
    free(a->w);
    free(a->idx);
    free(a->keys);
    free(a->tmp);
    for (size_t i = 0; i < a->n_runs; i++)
        fclose(a->runs[i]);
    free(a->runs);
    for (size_t i = 0; i < a->n_f; i++)
        free(a->f[i]);
    free(a->f);
    free(a);
}

uint64_t audit_records(const audit *a)
{
    return a->records;
}

/* ---- the duplicate check: sort, spill, merge ---- */

static bool key_lt(const dkey *x, const dkey *y)
{
    return x->hi < y->hi || (x->hi == y->hi && (x->lo < y->lo || (x->lo == y->lo &&
                                                                    x->line < y->line)));
}

static int cmp_key(const void *x, const void *y)
{
    return key_lt(x, y) ? -1 : key_lt(y, x) ? 1 : 0;
}

static int cmp_skey(const void *x, const void *y)
{
    const skey *p = x, *q = y;
    if (p->lo != q->lo)
        return p->lo < q->lo ? -1 : 1;
    return (p->line > q->line) - (p->line < q->line);
}

/* Turn the counts of one radix pass into the first index of each digit;
 * false when every key has the same digit (the pass would change nothing). */
static bool radix_starts(size_t *c, size_t n, unsigned first_digit)
{
    if (c[first_digit] == n)
        return false;
    size_t sum = 0;
    for (unsigned v = 0; v < 65536; v++) {
        size_t t = c[v];
        c[v] = sum;
        sum += t;
    }
    return true;
}

/*
 * LSD radix sorts of n keys by id, 16 bits at a time (four passes over a
 * 64-bit id, eight over a 128-bit one); passes whose digit is the same in
 * every key are skipped (the high bits of ids of one era). Stable, so equal
 * ids keep their lines in order. tmp has room for n keys; the result is in
 * *data. Without memory for the counts, qsort.
 */
static void radix_sort64(skey **data, skey **tmp, size_t n)
{
    size_t *count = n < 2 ? NULL : calloc((size_t)4 << 16, sizeof *count);
    if (count == NULL) {
        if (n >= 2)
            qsort(*data, n, sizeof **data, cmp_skey);
        return;
    }
    skey *src = *data, *dst = *tmp;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = src[i].lo;
        for (unsigned b = 0; b < 4; b++)
            count[(size_t)b << 16 | ((lo >> (16 * b)) & 0xffff)]++;
    }
    for (unsigned p = 0; p < 4; p++) {
        size_t *c = count + ((size_t)p << 16);
        unsigned sh = 16 * p;
        if (!radix_starts(c, n, (unsigned)(src[0].lo >> sh) & 0xffff))
            continue;
        for (size_t i = 0; i < n; i++)
            dst[c[(src[i].lo >> sh) & 0xffff]++] = src[i];
        skey *t = src;
        src = dst;
        dst = t;
    }
    free(count);
    *data = src;
    *tmp = dst;
}

static void radix_sort128(dkey **data, dkey **tmp, size_t n)
{
    size_t *count = n < 2 ? NULL : calloc((size_t)8 << 16, sizeof *count);
    if (count == NULL) {
        if (n >= 2)
            qsort(*data, n, sizeof **data, cmp_key);
        return;
    }
    dkey *src = *data, *dst = *tmp;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = src[i].lo, hi = src[i].hi;
        for (unsigned b = 0; b < 4; b++) {
            count[(size_t)b << 16 | ((lo >> (16 * b)) & 0xffff)]++;
            count[(size_t)(4 + b) << 16 | ((hi >> (16 * b)) & 0xffff)]++;
        }
    }
    for (unsigned p = 0; p < 8; p++) {
        size_t *c = count + ((size_t)p << 16);
        unsigned sh = 16 * (p & 3);
        uint64_t first = p < 4 ? src[0].lo : src[0].hi;
        if (!radix_starts(c, n, (unsigned)(first >> sh) & 0xffff))
            continue;
        if (p < 4) {
            for (size_t i = 0; i < n; i++)
                dst[c[(src[i].lo >> sh) & 0xffff]++] = src[i];
        } else {
            for (size_t i = 0; i < n; i++)
                dst[c[(src[i].hi >> sh) & 0xffff]++] = src[i];
        }
        dkey *t = src;
        src = dst;
        dst = t;
    }
    free(count);
    *data = src;
    *tmp = dst;
}

/* Sort the keys held (a->keys; a->tmp is made if missing). */
static int sort_keys(audit *a)
{
    if (a->tmp == NULL && (a->tmp = malloc(a->cap_keys * a->ksz)) == NULL)
        return IDM_ENOMEM;
    if (a->ksz == sizeof(skey))
        radix_sort64((skey **)&a->keys, (skey **)&a->tmp, a->n_keys);
    else
        radix_sort128((dkey **)&a->keys, (dkey **)&a->tmp, a->n_keys);
    return 0;
}

/* Key i of the keys held, as a dkey. */
static dkey key_at(const audit *a, size_t i)
{
    if (a->ksz == sizeof(skey)) {
        const skey *k = (const skey *)a->keys + i;
        return (dkey){0, k->lo, k->line};
    }
    return ((const dkey *)a->keys)[i];
}

static bool wide_keys(const audit *a)
{
    return a->kind != AUDIT_SNOWFLAKE;
}

/* Sort the keys in memory and write them as a run to an unlinked
 * temporary file. */
static int spill(audit *a)
{
    int rc = sort_keys(a);
    if (rc != 0)
        return rc;
    const char *dir = a->o.tmpdir;
    if (dir == NULL)
        dir = getenv("TMPDIR");
    if (dir == NULL || *dir == '\0')
        dir = "/tmp";
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/idmint-audit-XXXXXX", dir);
    if (n < 0 || (size_t)n >= sizeof path)
        return idm_error_fail(IDM_EIO, "temporary directory name too long");
    int fd = mkstemp(path);
    if (fd < 0)
        return idm_error_fail(IDM_EIO, "cannot make a spill file in %s: %s", dir,
                              strerror(errno));
    unlink(path);
    FILE *f = fdopen(fd, "w+b");
    if (f == NULL) {
        close(fd);
        return IDM_ENOMEM;
    }
    FILE **runs = realloc(a->runs, (a->n_runs + 1) * sizeof *runs);
    if (runs == NULL) {
        fclose(f);
        return IDM_ENOMEM;
    }
    a->runs = runs;
    a->runs[a->n_runs++] = f;
    if (fwrite(a->keys, a->ksz, a->n_keys, f) != a->n_keys || fflush(f) != 0)
        return idm_error_fail(IDM_EIO, "cannot write a spill file in %s: %s", dir,
                              strerror(errno));
    rewind(f);
    a->n_keys = 0;
    return 0;
}

static int add_key(audit *a, uint64_t hi, uint64_t lo, uint64_t line)
{
    if (a->ksz == 0) {
        a->ksz = wide_keys(a) ? sizeof(dkey) : sizeof(skey);
        if (a->o.mem_ids == 0)
            a->o.mem_ids = a->o.mem_bytes / (2 * a->ksz);
    }
    if (a->n_keys == a->cap_keys) {
        if (a->n_keys >= a->o.mem_ids) {
            /* The last run is the keys held at the end. */
            if (a->n_runs >= AUDIT_RUNS_MAX - 1)
                return idm_error_fail(IDM_ERANGE,
                                      "more ids than %d runs of %zu: give the duplicate "
                                      "check more memory (--memory)",
                                      AUDIT_RUNS_MAX, a->o.mem_ids);
            int rc = spill(a);
            if (rc != 0)
                return rc;
        } else {
            size_t cap = a->cap_keys ? a->cap_keys * 2 : 4096;
            if (cap > a->o.mem_ids)
                cap = a->o.mem_ids;
            void *k = realloc(a->keys, cap * a->ksz);
            if (k == NULL)
                return IDM_ENOMEM;
            a->keys = k;
            a->cap_keys = cap;
            free(a->tmp); /* made again at the size of the keys when needed */
            a->tmp = NULL;
        }
    }
    if (a->ksz == sizeof(skey))
        ((skey *)a->keys)[a->n_keys++] = (skey){lo, line};
    else
        ((dkey *)a->keys)[a->n_keys++] = (dkey){hi, lo, line};
    return 0;
}

/* The text and time of an id from its key. */
static void key_example(const audit *a, const dkey *k, audit_example *e)
{
    memset(e, 0, sizeof *e);
    e->line = k->line;
    e->rec_ms = INT64_MIN;
    switch (a->kind) {
    case AUDIT_SNOWFLAKE: {
        snprintf(e->id, sizeof e->id, "%" PRIu64, k->lo);
        idm_decoded d;
        e->id_ms = idm_layout_decode(a->l, k->lo, &d) == 0 ? d.unix_ms : 0;
        return;
    }
    case AUDIT_OBJECTID: {
        idm_objectid o;
        for (int i = 0; i < 4; i++)
            o.b[i] = (uint8_t)(k->hi >> (8 * (3 - i)));
        for (int i = 0; i < 8; i++)
            o.b[4 + i] = (uint8_t)(k->lo >> (8 * (7 - i)));
        idm_objectid_format(&o, e->id);
        e->id_ms = idm_objectid_time(&o);
        return;
    }
    default: {
        uint8_t b[16];
        for (int i = 0; i < 8; i++) {
            b[i] = (uint8_t)(k->hi >> (8 * (7 - i)));
            b[8 + i] = (uint8_t)(k->lo >> (8 * (7 - i)));
        }
        if (a->kind == AUDIT_ULID) {
            idm_ulid u;
            memcpy(u.b, b, 16);
            idm_ulid_format(&u, e->id);
            e->id_ms = idm_ulid_time(&u);
        } else {
            idm_uuid u;
            memcpy(u.b, b, 16);
            idm_uuid_format(&u, e->id);
            idm_unix_ms ms = 0;
            idm_uuid7_time(&u, &ms);
            e->id_ms = ms;
        }
        return;
    }
    }
}

/* One id seen `copies` times (g: its first copies, up to the examples). */
static int report_dup(audit *a, const dkey *g, size_t n_g, uint64_t copies)
{
    worker *w = NULL;
    if (a->kind == AUDIT_SNOWFLAKE) {
        long i = find_worker(a, g[0].lo & a->node_mask);
        if (i >= 0)
            w = &a->w[i];
    } else if (a->n_w > 0) {
        w = &a->w[0];
    }
    audit_finding *f = w != NULL ? w->dup : NULL;
    if (f == NULL) {
        f = new_finding(a, AF_DUPLICATE, w);
        if (f == NULL)
            return IDM_ENOMEM;
        if (w != NULL)
            w->dup = f;
        audit_example e;
        key_example(a, &g[0], &e);
        f->at_ms = e.id_ms;
    }
    f->count++;
    if ((int64_t)copies > f->size)
        f->size = (int64_t)copies;
    for (size_t i = 0; i < n_g; i++) {
        audit_example e;
        key_example(a, &g[i], &e);
        if (e.id_ms < f->at_ms)
            f->at_ms = e.id_ms;
        add_example(a, f, &e);
    }
    return 0;
}

static bool key_eq(const dkey *x, const dkey *y)
{
    return x->lo == y->lo && x->hi == y->hi;
}


/* Scans keys in order for runs of equal ids. */
typedef struct dup_scan {
    dkey g[16];
    size_t n_g;
    uint64_t copies;
    bool any;
} dup_scan;

static int scan_key(audit *a, dup_scan *s, const dkey *k)
{
    if (s->any && key_eq(&s->g[0], k)) {
        s->copies++;
        if (s->n_g < sizeof s->g / sizeof s->g[0])
            s->g[s->n_g++] = *k;
        return 0;
    }
    int rc = 0;
    if (s->any && s->copies > 1)
        rc = report_dup(a, s->g, s->n_g, s->copies);
    s->g[0] = *k;
    s->n_g = 1;
    s->copies = 1;
    s->any = true;
    return rc;
}

static bool run_next(run *r, dkey *out)
{
    if (r->pos == r->len) {
        r->len = fread(r->buf, r->ksz, RUN_BUF, r->f);
        r->pos = 0;
        if (r->len == 0)
            return false;
    }
    const unsigned char *p = r->buf + r->pos++ * r->ksz;
    if (r->ksz == sizeof(skey)) {
        skey k;
        memcpy(&k, p, sizeof k);
        *out = (dkey){0, k.lo, k.line};
    } else {
        memcpy(out, p, sizeof *out);
    }
    return true;
}

/* Merge the runs (each sorted) and scan them. A binary heap of the runs'
 * heads, by key. */
static int merge_runs(audit *a, dup_scan *s)
{
    size_t k = a->n_runs;
    run *r = calloc(k, sizeof *r);
    dkey *head = calloc(k, sizeof *head);
    size_t *heap = calloc(k, sizeof *heap);
    int rc = 0;
    if (r == NULL || head == NULL || heap == NULL)
        rc = IDM_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; rc == 0 && i < k; i++) {
        r[i].f = a->runs[i];
        r[i].ksz = a->ksz;
        if (!run_next(&r[i], &head[i]))
            continue;
        /* sift up */
        size_t c = n++;
        heap[c] = i;
        while (c > 0 && key_lt(&head[heap[c]], &head[heap[(c - 1) / 2]])) {
            size_t t = heap[c];
            heap[c] = heap[(c - 1) / 2];
            heap[(c - 1) / 2] = t;
            c = (c - 1) / 2;
        }
    }
    while (rc == 0 && n > 0) {
        size_t top = heap[0];
        rc = scan_key(a, s, &head[top]);
        if (!run_next(&r[top], &head[top]))
            heap[0] = heap[--n];
        /* sift down */
        size_t c = 0;
        for (;;) {
            size_t m = c, lft = 2 * c + 1, rgt = 2 * c + 2;
            if (lft < n && key_lt(&head[heap[lft]], &head[heap[m]]))
                m = lft;
            if (rgt < n && key_lt(&head[heap[rgt]], &head[heap[m]]))
                m = rgt;
            if (m == c)
                break;
            size_t t = heap[c];
            heap[c] = heap[m];
            heap[m] = t;
            c = m;
        }
    }
    for (size_t i = 0; i < k; i++) {
        if (ferror(a->runs[i]) && rc == 0)
            rc = idm_error_fail(IDM_EIO, "cannot read a spill file back");
    }
    free(r);
    free(head);
    free(heap);
    return rc;
}

static int check_duplicates(audit *a)
{
    dup_scan s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    if (a->n_runs > 0) {
        if (a->n_keys > 0)
            rc = spill(a);
        if (rc == 0)
            rc = merge_runs(a, &s);
    } else if (a->n_keys > 0) {
        rc = sort_keys(a);
        for (size_t i = 0; rc == 0 && i < a->n_keys; i++) {
            dkey k = key_at(a, i);
            rc = scan_key(a, &s, &k);
        }
    }
    if (rc == 0 && s.any && s.copies > 1)
        rc = report_dup(a, s.g, s.n_g, s.copies);
    free(a->keys);
    free(a->tmp);
    a->keys = a->tmp = NULL;
    a->n_keys = a->cap_keys = 0;
    return rc;
}

/* ---- per-record checks ---- */

static void plot_add(worker *w, int64_t t, int64_t off)
{
    if (w->skip > 0) {
        w->skip--;
        return;
    }
    if (w->pts == NULL && (w->pts = malloc(PLOT_POINTS * sizeof *w->pts)) == NULL)
        return;
    if (w->n_pts == PLOT_POINTS) {
        for (size_t i = 0; i < PLOT_POINTS / 2; i++)
            w->pts[i] = w->pts[2 * i];
        w->n_pts = PLOT_POINTS / 2;
        w->stride *= 2;
    }
    w->pts[w->n_pts].t = t;
    w->pts[w->n_pts].off = off;
    w->n_pts++;
    w->skip = w->stride - 1;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;
    return (p > q) - (p < q);
}

/* Judge a worker's window of offsets: open, extend or close its skew. */
static int skew_window(audit *a, worker *w)
{
    unsigned n = w->win_n;
    w->win_n = 0;
    qsort(w->win, n, sizeof w->win[0], cmp_i64);
    int64_t med = w->win[n / 2];
    plot_add(w, w->win_rec0, med);
    int64_t mag = med < 0 ? -med : med;
    if (mag <= a->o.skew_ms) {
        w->skew = NULL;
        return 0;
    }
    if (w->skew == NULL) {
        w->skew = new_finding(a, AF_SKEW, w);
        if (w->skew == NULL)
            return IDM_ENOMEM;
        w->skew->at_ms = w->win_rec0;
        w->skew->size = med;
    }
    audit_finding *f = w->skew;
    int64_t fmag = f->size < 0 ? -f->size : f->size;
    if (mag > fmag)
        f->size = med;
    f->count += n;
    f->span_ms = w->last_rec - f->at_ms;
    return 0;
}

static int check_skew(audit *a, worker *w, const audit_example *e)
{
    if (e->rec_ms == INT64_MIN)
        return 0;
    if (w->win_n == 0)
        w->win_rec0 = e->rec_ms;
    w->win[w->win_n++] = e->id_ms - e->rec_ms;
    w->last_rec = e->rec_ms;
    if (w->skew != NULL)
        w->skew->span_ms = e->rec_ms - w->skew->at_ms;
    return w->win_n == SKEW_WINDOW ? skew_window(a, w) : 0;
}

static int check_future(audit *a, worker *w, const audit_example *e)
{
    int64_t ref = e->rec_ms != INT64_MIN ? e->rec_ms : a->o.now_ms;
    int64_t ahead = e->id_ms - ref;
    if (ahead <= a->o.future_ms)
        return 0;
    if (w->future == NULL) {
        w->future = new_finding(a, AF_FUTURE, w);
        if (w->future == NULL)
            return IDM_ENOMEM;
        w->future->at_ms = ref;
    }
    audit_finding *f = w->future;
    f->count++;
    if (ahead > f->size)
        f->size = ahead;
    add_example(a, f, e);
    return 0;
}

static void close_step(worker *w, int64_t rec_ms)
{
    audit_finding *f = w->step;
    if (f == NULL)
        return;
    if (w->step_rec0 != INT64_MIN && rec_ms != INT64_MIN)
        f->span_ms = rec_ms - w->step_rec0;
    else
        f->span_ms = w->step_hw - w->step_low;
    w->step = NULL;
}

static int check_step(audit *a, worker *w, const audit_example *e)
{
    if (!w->have_hw) {
        w->have_hw = true;
        w->first_ms = e->id_ms;
        w->hw_ms = e->id_ms;
        w->hw_ex = *e;
        return 0;
    }
    if (w->step != NULL || w->step_hw > e->id_ms) {
        if (w->step_hw <= e->id_ms) {
            /* back past the time before the step: it is over */
            close_step(w, e->rec_ms);
            w->step_hw = INT64_MIN;
        } else {
            if (w->step != NULL) {
                w->step->count++;
                if (w->step_hw - e->id_ms > w->step->size)
                    w->step->size = w->step_hw - e->id_ms;
                if (e->id_ms < w->step_low)
                    w->step_low = e->id_ms;
            }
            return 0;
        }
    }
    if (e->id_ms >= w->hw_ms) {
        w->hw_ms = e->id_ms;
        w->hw_ex = *e;
        return 0;
    }
    /* Back by step_ms or less: rows recorded out of mint order. */
    if (w->hw_ms - e->id_ms <= a->o.step_ms)
        return 0;
    /* The id's time went backwards: a step opens. */
    w->step_hw = w->hw_ms;
    w->step_low = e->id_ms;
    w->step_rec0 = e->rec_ms;
    if (a->n_steps >= STEPS_MAX || w->steps >= STEPS_PER_WORKER) {
        a->steps_omitted++;
        return 0;
    }
    audit_finding *f = new_finding(a, AF_CLOCK_STEP, w);
    if (f == NULL)
        return IDM_ENOMEM;
    w->step = f;
    a->n_steps++;
    w->steps++;
    f->at_ms = e->rec_ms != INT64_MIN ? e->rec_ms : w->hw_ms;
    f->size = w->hw_ms - e->id_ms;
    f->count = 1;
    add_example(a, f, &w->hw_ex);
    add_example(a, f, e);
    return 0;
}

/* The end of a worker's tick: its count against the capacity. */
static void end_tick(const audit *a, worker *w)
{
    if (!w->have_tick)
        return;
    if (w->tick_n > w->best_n) {
        w->best_n = w->tick_n;
        w->best_ms = w->tick_ms;
    }
    if (w->tick_n * 2 > a->seq_mask + 1)
        w->ticks_over_half++;
}

/* Two interleaved sequences within one tick: the sequence goes down (or
 * repeats) and up again, at least twice within the tick. One drop alone is
 * not enough: rows recorded in the same instant may come in any order.
 * With step_ms, the recorded order may be off the mint order by that much:
 * a drop between rows recorded within step_ms of each other says nothing. */
static int check_tick(audit *a, worker *w, const idm_decoded *d, const audit_example *e)
{
    if (!w->have_tick || d->tick != w->tick) {
        end_tick(a, w);
        w->have_tick = true;
        w->tick = d->tick;
        w->tick_ms = d->unix_ms;
        w->tick_n = 1;
        w->last_seq = d->seq;
        w->tick_rec = e->rec_ms;
        w->drops = w->rises = 0;
        w->tick_flagged = false;
        return 0;
    }
    w->tick_n++;
    bool dropped = d->seq <= w->last_seq;
    bool unordered = a->o.step_ms > 0 && e->rec_ms != INT64_MIN &&
                     w->tick_rec != INT64_MIN && e->rec_ms - w->tick_rec <= a->o.step_ms;
    w->tick_rec = e->rec_ms;
    if (dropped && unordered) {
        w->last_seq = d->seq;
        return 0;
    }
    if (dropped)
        w->drops++;
    else if (w->drops > 0)
        w->rises++;
    w->last_seq = d->seq;
    if (w->drops < 2 || w->rises < 1)
        return 0;
    if (w->two == NULL) {
        w->two = new_finding(a, AF_TWO_WRITERS, w);
        if (w->two == NULL)
            return IDM_ENOMEM;
        w->two->at_ms = w->tick_ms;
    }
    audit_finding *f = w->two;
    if (!w->tick_flagged) {
        w->tick_flagged = true;
        f->count++;
    }
    if ((int64_t)w->drops + 1 > f->size)
        f->size = (int64_t)w->drops + 1;
    if (dropped)
        add_example(a, f, e);
    return 0;
}

static int before_epoch(audit *a, const audit_example *e)
{
    if (a->before_epoch == NULL) {
        a->before_epoch = new_finding(a, AF_BEFORE_EPOCH, NULL);
        if (a->before_epoch == NULL)
            return IDM_ENOMEM;
        a->before_epoch->at_ms = e->rec_ms != INT64_MIN ? e->rec_ms : e->id_ms;
    }
    a->before_epoch->count++;
    add_example(a, a->before_epoch, e);
    return 0;
}

/* ---- parsing ---- */

/* Decimal digits, or 0x and 1 to 16 hex digits, to a 64-bit value. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (n > 18)
            return false;
        for (size_t i = 2; i < n; i++) {
            unsigned c = (unsigned char)s[i], d;
            if (c - '0' < 10)
                d = c - '0';
            else if ((c | 0x20) - 'a' < 6)
                d = (c | 0x20) - 'a' + 10;
            else
                return false;
            v = v << 4 | d;
        }
        *out = v;
        return true;
    }
    if (n > 20)
        return false;
    /* 19 digits always fit; only a 20th can overflow. */
    size_t safe = n < 19 ? n : 19;
    for (size_t i = 0; i < safe; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    if (n == 20) {
        unsigned d = (unsigned char)s[19] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool all_alnum(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i];
        if (!(c - '0' < 10 || (c | 0x20) - 'a' < 26))
            return false;
    }
    return true;
}

/* The kind of an id from its form, as `idmint decode` tells it. */
static audit_kind detect_kind(const char *s, size_t n)
{
    if (n <= 18 && n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return AUDIT_SNOWFLAKE;
    if (n == 36 && memchr(s, '-', n) != NULL)
        return AUDIT_UUID7;
    if (n == 26)
        return AUDIT_ULID;
    if (n == 24 && all_alnum(s, n))
        return AUDIT_OBJECTID;
    return AUDIT_SNOWFLAKE;
}

static const char *kind_word(audit_kind k)
{
    switch (k) {
    case AUDIT_SNOWFLAKE:
        return "Snowflake id";
    case AUDIT_UUID7:
        return "UUID";
    case AUDIT_ULID:
        return "ULID";
    case AUDIT_OBJECTID:
        return "ObjectId";
    default:
        return "id";
    }
}

/* A recorded time: Unix ms, or ISO 8601 as PostgreSQL and CSV exports
 * write it ("2026-01-02 10:00:00.123456+00": an offset of hours alone,
 * or none, which is taken as UTC). */
static bool parse_rec(const char *s, size_t n, int64_t *out)
{
    uint64_t v;
    if (n > 0 && n <= 18 && s[0] != '0' && parse_u64(s, n, &v)) {
        *out = (int64_t)v;
        return true;
    }
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    char buf[80];
    if (n < 10 || n + 4 >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    /* The offset, if any, starts after the time of day (past position 10). */
    char *sign = NULL;
    for (size_t i = n; i-- > 11;) {
        if (buf[i] == '+' || buf[i] == '-') {
            sign = &buf[i];
            break;
        }
    }
    char last = buf[n - 1];
    if (sign != NULL) {
        size_t tail = n - (size_t)(sign - buf) - 1;
        if (tail == 2) { /* +HH */
            memcpy(buf + n, ":00", 4);
        } else if (tail == 4 && sign[3] != ':') { /* +HHMM */
            memmove(sign + 4, sign + 3, 3);
            sign[3] = ':';
        }
    } else if (n > 10 && last != 'Z' && last != 'z') {
        memcpy(buf + n, "Z", 2);
    }
    idm_unix_ms ms;
    if (idm_time_parse(buf, &ms) != 0)
        return false;
    *out = ms;
    return true;
}

/* Trim spaces and a pair of double quotes (a CSV field). */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && ((*s)[0] == ' ' || (*s)[0] == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
        (*n)--;
    if (*n >= 2 && (*s)[0] == '"' && (*s)[*n - 1] == '"') {
        (*s)++;
        *n -= 2;
    }
}

/* At most 40 bytes of bad input for a message, control bytes (a NUL too)
 * shown as '?'. */
typedef struct shown_buf {
    char b[44];
} shown_buf;

static const char *shown(const char *s, size_t n, shown_buf *buf)
{
    size_t m = n > 40 ? 40 : n;
    for (size_t i = 0; i < m; i++) {
        unsigned char c = (unsigned char)s[i];
        buf->b[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    buf->b[m] = '\0';
    return buf->b;
}

static int add_snowflake(audit *a, const char *id, size_t n, int64_t rec, uint64_t line_no,
                         char *err, size_t err_len)
{
    shown_buf sb;
    uint64_t v;
    if (!parse_u64(id, n, &v)) {
        audit_kind k = detect_kind(id, n);
        if (k != AUDIT_SNOWFLAKE)
            return fail(err, err_len, IDM_EINVAL, line_no,
                        "'%s' looks like a %s, in a file of Snowflake ids", shown(id, n, &sb),
                        kind_word(k));
        return fail(err, err_len, IDM_EPARSE, line_no,
                    "bad id '%s': not a decimal or 0x hex 64-bit number", shown(id, n, &sb));
    }
    audit_example e;
    /* parse_u64 took at most 20 characters: they fit (no printf per id). */
    memcpy(e.id, id, n);
    e.id[n] = '\0';
    e.line = line_no;
    e.rec_ms = rec;
    e.id_ms = 0;
    int rc = add_key(a, 0, v, line_no);
    if (rc != 0)
        return rc;
    a->records++;
    idm_decoded d;
    if (idm_layout_decode(a->l, v, &d) != 0)
        return before_epoch(a, &e);
    e.id_ms = d.unix_ms;
    if (rec != INT64_MIN && rec < a->epoch && (rc = before_epoch(a, &e)) != 0)
        return rc;
    worker *w = get_worker(a, v & a->node_mask, v);
    if (w == NULL)
        return IDM_ENOMEM;
    w->records++;
    if ((rc = check_tick(a, w, &d, &e)) != 0 || (rc = check_step(a, w, &e)) != 0 ||
        (rc = check_future(a, w, &e)) != 0)
        return rc;
    return check_skew(a, w, &e);
}

static int add_wide(audit *a, const char *id, size_t n, int64_t rec, uint64_t line_no,
                    char *err, size_t err_len)
{
    shown_buf sb;
    char text[40];
    audit_kind k = detect_kind(id, n);
    if (n >= sizeof text || k != a->kind) {
        if (k != a->kind && k != AUDIT_SNOWFLAKE)
            return fail(err, err_len, IDM_EINVAL, line_no,
                        "'%s' looks like a %s, in a file of %ss", shown(id, n, &sb), kind_word(k),
                        kind_word(a->kind));
        if (k == AUDIT_SNOWFLAKE && parse_u64(id, n, &(uint64_t){0}))
            return fail(err, err_len, IDM_EINVAL, line_no,
                        "'%s' looks like a Snowflake id, in a file of %ss", shown(id, n, &sb),
                        kind_word(a->kind));
        return fail(err, err_len, IDM_EPARSE, line_no, "bad %s '%s'", kind_word(a->kind),
                    shown(id, n, &sb));
    }
    memcpy(text, id, n);
    text[n] = '\0';
    uint8_t b[16] = {0};
    int64_t ms = 0;
    int rc;
    if (a->kind == AUDIT_UUID7) {
        idm_uuid u;
        if ((rc = idm_uuid_parse(text, &u)) != 0)
            return fail(err, err_len, IDM_EPARSE, line_no, "bad UUID '%s'", shown(text, n, &sb));
        if (idm_uuid7_time(&u, &ms) != 0)
            return fail(err, err_len, IDM_EINVAL, line_no,
                        "'%s' is a UUID of version %d, not 7", shown(text, n, &sb),
                        idm_uuid_version(&u));
        memcpy(b, u.b, 16);
    } else if (a->kind == AUDIT_ULID) {
        idm_ulid u;
        if ((rc = idm_ulid_parse(text, &u)) != 0)
            return fail(err, err_len, IDM_EPARSE, line_no, "bad ULID '%s'", shown(text, n, &sb));
        ms = idm_ulid_time(&u);
        memcpy(b, u.b, 16);
    } else {
        idm_objectid o;
        if ((rc = idm_objectid_parse(text, &o)) != 0)
            return fail(err, err_len, IDM_EPARSE, line_no, "bad ObjectId '%s'",
                        shown(text, n, &sb));
        ms = idm_objectid_time(&o);
        /* 12 bytes: 4 in hi, 8 in lo (key_example reads them back so). */
        memcpy(b + 4, o.b, 12);
    }
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) {
        hi = hi << 8 | b[i];
        lo = lo << 8 | b[8 + i];
    }
    if ((rc = add_key(a, hi, lo, line_no)) != 0)
        return rc;
    audit_example e;
    memcpy(e.id, text, n + 1);
    e.line = line_no;
    e.id_ms = ms;
    e.rec_ms = rec;
    /* The first id of each millisecond: monotonic generators add to the
     * random part within one, and draw it afresh in the next. */
    if (a->records++ == 0 || ms != a->rand_ms) {
        if (a->rand_samples++ == 0) {
            a->and_hi = a->or_hi = hi;
            a->and_lo = a->or_lo = lo;
            a->first_wide = e;
        }
        a->rand_ms = ms;
        a->and_hi &= hi;
        a->and_lo &= lo;
        a->or_hi |= hi;
        a->or_lo |= lo;
    }
    if (ms == 0 && (rc = before_epoch(a, &e)) != 0)
        return rc;
    worker *w = a->n_w > 0 ? &a->w[0] : get_worker(a, 0, 0);
    if (w == NULL)
        return IDM_ENOMEM;
    w->records++;
    if ((rc = check_future(a, w, &e)) != 0)
        return rc;
    return check_skew(a, w, &e);
}

/* One record. The first record of audit_add_line may be a CSV header (a
 * row from audit_add never is: it marks the header as seen). */
static int add_fields(audit *a, const char *id, size_t n, const char *rec, size_t rn,
                      uint64_t line_no, char *err, size_t err_len)
{
    shown_buf sb;
    if (a->finished)
        return idm_error_fail(IDM_EINVAL, "the audit is finished");
    trim(&id, &n);
    if (rec != NULL)
        trim(&rec, &rn);
    if (n == 0)
        return fail(err, err_len, IDM_EPARSE, line_no, "no id before the recorded time");
    /* A CSV header ("id,created_at"): a first line whose id is a word. */
    if (!a->header_seen) {
        a->header_seen = 1;
        bool word = true;
        for (size_t i = 0; i < n && word; i++)
            word = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
                   id[i] == '_';
        if (word && n < 24)
            return 0;
    }
    int64_t rec_ms = INT64_MIN;
    if (rec != NULL && rn > 0 && !parse_rec(rec, rn, &rec_ms))
        return fail(err, err_len, IDM_EPARSE, line_no,
                    "bad recorded time '%s': use ISO 8601 or Unix ms", shown(rec, rn, &sb));
    if (a->kind == AUDIT_AUTO) {
        a->kind = detect_kind(id, n);
        if (a->kind == AUDIT_SNOWFLAKE && a->l == NULL)
            return fail(err, err_len, IDM_EINVAL, line_no, "Snowflake ids need a layout");
    }
    if (a->kind == AUDIT_SNOWFLAKE)
        return add_snowflake(a, id, n, rec_ms, line_no, err, err_len);
    return add_wide(a, id, n, rec_ms, line_no, err, err_len);
}

int audit_add(audit *a, const char *id, const char *rec, uint64_t line_no, char *err,
              size_t err_len)
{
    a->header_seen = 1;
    return add_fields(a, id, strlen(id), rec, rec != NULL ? strlen(rec) : 0, line_no, err,
                      err_len);
}

int audit_add_line(audit *a, const char *line, size_t len, uint64_t line_no, char *err,
                   size_t err_len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t end = len;
    while (end > i && (line[end - 1] == '\r' || line[end - 1] == ' ' || line[end - 1] == '\t'))
        end--;
    if (i == end || line[i] == '#')
        return 0;
    size_t j = i;
    while (j < end && line[j] != ' ' && line[j] != '\t' && line[j] != ',' && line[j] != '|')
        j++;
    if (j == end)
        return add_fields(a, line + i, j - i, NULL, 0, line_no, err, err_len);
    return add_fields(a, line + i, j - i, line + j + 1, end - j - 1, line_no, err, err_len);
}

/* ---- the end ---- */

static int cmp_finding(const void *x, const void *y)
{
    const audit_finding *p = *(const audit_finding *const *)x;
    const audit_finding *q = *(const audit_finding *const *)y;
    if (p->kind != q->kind)
        return p->kind < q->kind ? -1 : 1;
    if (p->at_ms != q->at_ms)
        return p->at_ms < q->at_ms ? -1 : 1;
    return strcmp(p->worker, q->worker);
}

/* Random bits that never changed: those where the AND of the first key
 * of each millisecond equals their OR. UUIDv7: rand_a (12 bits) and rand_b (62); ULID: 80 bits;
 * ObjectId has no random bits per id (its 5 random bytes are one value a
 * process). */
static int check_randomness(audit *a)
{
    uint64_t mhi, mlo;
    if (a->kind == AUDIT_UUID7) {
        mhi = 0x0fff;
        mlo = UINT64_C(0x3fffffffffffffff);
    } else if (a->kind == AUDIT_ULID) {
        mhi = 0xffff;
        mlo = UINT64_MAX;
    } else {
        return 0;
    }
    if (a->rand_samples < RANDOM_MIN_IDS)
        return 0;
    uint64_t chi = ~(a->and_hi ^ a->or_hi) & mhi, clo = ~(a->and_lo ^ a->or_lo) & mlo;
    int stuck = __builtin_popcountll(chi) + __builtin_popcountll(clo);
    if (stuck == 0)
        return 0;
    audit_finding *f = new_finding(a, AF_RANDOMNESS, NULL);
    if (f == NULL)
        return IDM_ENOMEM;
    f->at_ms = a->first_wide.id_ms;
    f->size = stuck;
    f->count = a->rand_samples;
    f->limit = (uint64_t)(__builtin_popcountll(mhi) + __builtin_popcountll(mlo));
    add_example(a, f, &a->first_wide);
    return 0;
}

/* Workers in use against the node fields' size. */
static uint64_t node_space(const audit *a)
{
    unsigned bits = 0;
    for (size_t i = 0; i < a->n_fields; i++)
        bits += a->fi[i].kind == IDM_FIELD_NODE ? a->fi[i].bits : 0;
    return bits >= 64 ? UINT64_MAX : (uint64_t)1 << bits;
}

int audit_finish(audit *a)
{
    if (a->finished)
        return 0;
    a->finished = true;
    int rc = check_duplicates(a);
    if (rc == 0)
        rc = check_randomness(a);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < a->n_w; i++) {
        worker *w = &a->w[i];
        close_step(w, w->last_rec);
        if (w->win_n >= SKEW_WINDOW_MIN && (rc = skew_window(a, w)) != 0)
            return rc;
        if (a->kind != AUDIT_SNOWFLAKE)
            continue;
        end_tick(a, w);
        w->have_tick = false;
        if (w->best_n * 2 > a->seq_mask + 1) {
            audit_finding *f = new_finding(a, AF_CAPACITY, w);
            if (f == NULL)
                return IDM_ENOMEM;
            f->at_ms = w->best_ms;
            f->size = (int64_t)w->best_n;
            f->count = w->ticks_over_half;
            f->limit = a->seq_mask + 1;
        }
    }
    if (a->kind == AUDIT_SNOWFLAKE) {
        audit_finding *f = new_finding(a, AF_WORKERS, NULL);
        if (f == NULL)
            return IDM_ENOMEM;
        f->size = (int64_t)a->n_w;
        f->count = a->records;
        f->limit = node_space(a);
    }
    if (a->n_f > 1)
        qsort(a->f, a->n_f, sizeof a->f[0], cmp_finding);
    return 0;
}

size_t audit_findings(const audit *a, const audit_finding *const **out)
{
    *out = (const audit_finding *const *)a->f;
    return a->n_f;
}

static bool serious(audit_finding_kind k)
{
    return k != AF_CAPACITY && k != AF_WORKERS;
}

int audit_exit_status(const audit *a)
{
    for (size_t i = 0; i < a->n_f; i++) {
        audit_finding_kind k = a->f[i]->kind;
        if (k == AF_DUPLICATE || k == AF_TWO_WRITERS || k == AF_CLOCK_STEP)
            return 1;
    }
    return 0;
}

/* ---- reports ---- */

static const char *time_text(int64_t ms, char *buf)
{
    if (idm_time_format(ms, buf, IDM_TIME_TEXT_MAX) != 0)
        snprintf(buf, IDM_TIME_TEXT_MAX, "%" PRId64 "ms", ms);
    return buf;
}

static size_t count_serious(const audit *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n_f; i++)
        n += serious(a->f[i]->kind);
    return n;
}

/* One line that says what a finding means. */
static void describe(FILE *out, const audit_finding *f)
{
    switch (f->kind) {
    case AF_DUPLICATE:
        fprintf(out, "%" PRIu64 " ids seen more than once (up to %" PRId64 " copies)", f->count,
                f->size);
        break;
    case AF_TWO_WRITERS:
        fprintf(out, "two processes on one worker id: %" PRIu64 " ticks with interleaved "
                "sequences (up to %" PRId64 " in one tick)", f->count, f->size);
        break;
    case AF_CLOCK_STEP:
        fprintf(out, "the id time went back %" PRId64 " ms for %" PRId64 " ms (%" PRIu64
                " ids)", f->size, f->span_ms, f->count);
        break;
    case AF_FUTURE:
        fprintf(out, "%" PRIu64 " ids from the future, up to %" PRId64 " ms ahead", f->count,
                f->size);
        break;
    case AF_BEFORE_EPOCH:
        fprintf(out, "%" PRIu64 " ids or rows before the epoch (or not in the layout)",
                f->count);
        break;
    case AF_RANDOMNESS:
        fprintf(out, "%" PRId64 " of the %" PRIu64 " random bits were the same in the first id "
                "of every millisecond (%" PRIu64 " of them): not random (a counter that "
                "starts at a fixed value, or a broken random source)", f->size, f->limit,
                f->count);
        break;
    case AF_SKEW:
        fprintf(out, "the ids' time is off the recorded time by %" PRId64 " ms (median) for %"
                PRId64 " ms (%" PRIu64 " ids)", f->size, f->span_ms, f->count);
        break;
    case AF_CAPACITY:
        fprintf(out, "busiest tick %" PRId64 " ids of %" PRIu64 " (%" PRIu64
                " ticks over half)", f->size, f->limit, f->count);
        break;
    default:
        fprintf(out, "%" PRId64 " workers in use of %" PRIu64, f->size, f->limit);
        break;
    }
}

/* The worker with the busiest tick (Snowflake ids), or NULL. */
static const worker *busiest(const audit *a)
{
    const worker *b = NULL;
    for (size_t i = 0; a->kind == AUDIT_SNOWFLAKE && i < a->n_w; i++) {
        if (b == NULL || a->w[i].best_n > b->best_n)
            b = &a->w[i];
    }
    return b;
}

int audit_write_text(const audit *a, FILE *out)
{
    char t1[IDM_TIME_TEXT_MAX], t2[IDM_TIME_TEXT_MAX];
    for (size_t i = 0; i < a->n_f; i++) {
        const audit_finding *f = a->f[i];
        fprintf(out, "%s%s", serious(f->kind) ? "" : "info: ", audit_finding_name(f->kind));
        if (f->has_worker)
            fprintf(out, " [%s]", f->worker);
        if (f->kind != AF_WORKERS)
            fprintf(out, " at %s", time_text(f->at_ms, t1));
        fputs(": ", out);
        describe(out, f);
        fputc('\n', out);
        for (size_t j = 0; j < f->n_examples; j++) {
            const audit_example *e = &f->ex[j];
            fprintf(out, "    line %" PRIu64 ": %s time=%s", e->line, e->id,
                    time_text(e->id_ms, t1));
            if (e->rec_ms != INT64_MIN)
                fprintf(out, " recorded=%s", time_text(e->rec_ms, t2));
            fputc('\n', out);
        }
    }
    if (a->steps_omitted > 0)
        fprintf(out, "(%" PRIu64 " more clock steps not listed)\n", a->steps_omitted);
    size_t k = count_serious(a);
    const worker *busy = busiest(a);
    if (busy != NULL)
        fprintf(out, "busiest tick: %" PRIu64 " ids of %" PRIu64 " [%s] at %s\n", busy->best_n,
                a->seq_mask + 1, busy->text, time_text(busy->best_ms, t1));
    fprintf(out, "%" PRIu64 " ids, %zu workers, %zu findings\n", a->records,
             a->kind == AUDIT_SNOWFLAKE ? a->n_w : 0, k);
    if (k == 0)
        fputs("clean\n", out);
    return ferror(out) ? IDM_EIO : 0;
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static const char *kind_json(audit_kind k)
{
    switch (k) {
    case AUDIT_SNOWFLAKE:
        return "snowflake";
    case AUDIT_UUID7:
        return "uuid7";
    case AUDIT_ULID:
        return "ulid";
    case AUDIT_OBJECTID:
        return "objectid";
    default:
        return "none";
    }
}

int audit_write_json(const audit *a, FILE *out)
{
    fprintf(out, "{\"records\":%" PRIu64 ",\"kind\":\"%s\",\"workers\":%zu,\"clean\":%s,"
            "\"exit_status\":%d,\"findings\":[", a->records, kind_json(a->kind),
            a->kind == AUDIT_SNOWFLAKE ? a->n_w : 0, count_serious(a) == 0 ? "true" : "false",
            audit_exit_status(a));
    for (size_t i = 0; i < a->n_f; i++) {
        const audit_finding *f = a->f[i];
        fprintf(out, "%s{\"kind\":\"%s\",\"serious\":%s,\"worker\":", i ? "," : "",
                audit_finding_name(f->kind), serious(f->kind) ? "true" : "false");
        if (f->has_worker)
            json_str(out, f->worker);
        else
            fputs("null", out);
        fprintf(out, ",\"at_ms\":%" PRId64 ",\"size\":%" PRId64 ",\"span_ms\":%" PRId64
                ",\"count\":%" PRIu64 ",\"limit\":%" PRIu64 ",\"examples\":[", f->at_ms,
                f->size, f->span_ms, f->count, f->limit);
        for (size_t j = 0; j < f->n_examples; j++) {
            const audit_example *e = &f->ex[j];
            fprintf(out, "%s{\"id\":", j ? "," : "");
            json_str(out, e->id);
            fprintf(out, ",\"line\":%" PRIu64 ",\"id_ms\":%" PRId64 ",\"rec_ms\":", e->line,
                    e->id_ms);
            if (e->rec_ms == INT64_MIN)
                fputs("null}", out);
            else
                fprintf(out, "%" PRId64 "}", e->rec_ms);
        }
        fputs("]}", out);
    }
    /* Per worker: its ids, their time span, its busiest tick. */
    fprintf(out, "],\"steps_omitted\":%" PRIu64 ",\"per_worker\":[", a->steps_omitted);
    for (size_t i = 0; a->kind == AUDIT_SNOWFLAKE && i < a->n_w; i++) {
        const worker *w = &a->w[i];
        fprintf(out, "%s{\"worker\":", i ? "," : "");
        json_str(out, w->text);
        fprintf(out, ",\"ids\":%" PRIu64 ",\"first_ms\":%" PRId64 ",\"last_ms\":%" PRId64
                ",\"busiest_tick\":%" PRIu64 ",\"busiest_at_ms\":%" PRId64
                ",\"capacity\":%" PRIu64 "}",
                w->records, w->first_ms, w->hw_ms, w->best_n, w->best_ms, a->seq_mask + 1);
    }
    fputs("]}\n", out);
    return ferror(out) ? IDM_EIO : 0;
}

/* ---- the plot ---- */

int audit_write_svg(const audit *a, FILE *out)
{
    enum { W = 900, ROW = 160, LEFT = 80, PLOT_W = 780, PAD = 20 };
    size_t rows = 0;
    for (size_t i = 0; i < a->n_w; i++)
        rows += a->w[i].n_pts > 0;
    int height = (int)(rows ? rows : 1) * ROW + 2 * PAD;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n"
            "<title>idmint audit: offset of the ids' time from the recorded time, per "
            "worker</title>\n", W, height);
    if (rows == 0)
        fprintf(out, "<text x=\"%d\" y=\"%d\">no recorded times: nothing to plot</text>\n",
                PAD, 2 * PAD);
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i = 0; i < a->n_w; i++) {
        for (size_t j = 0; j < a->w[i].n_pts; j++) {
            int64_t t = a->w[i].pts[j].t;
            t0 = t < t0 ? t : t0;
            t1 = t > t1 ? t : t1;
        }
    }
    double tspan = t1 > t0 ? (double)(t1 - t0) : 1.0;
    size_t row = 0;
    for (size_t i = 0; i < a->n_w; i++) {
        const worker *w = &a->w[i];
        if (w->n_pts == 0)
            continue;
        int64_t lo = 0, hi = 0;
        for (size_t j = 0; j < w->n_pts; j++) {
            lo = w->pts[j].off < lo ? w->pts[j].off : lo;
            hi = w->pts[j].off > hi ? w->pts[j].off : hi;
        }
        if (hi == lo)
            hi = lo + 1;
        int top = PAD + (int)row * ROW, h = ROW - 30;
        double scale = (double)h / (double)(hi - lo);
        int zero = top + (int)((double)(hi - 0) * scale);
        fprintf(out, "<g>\n<text x=\"%d\" y=\"%d\">", PAD, top + 10);
        const char *label = w->text[0] ? w->text : "all ids";
        for (const char *s = label; *s; s++) {
            if (*s == '<' || *s == '>' || *s == '&')
                fputc(' ', out);
            else
                fputc(*s, out);
        }
        fprintf(out, " (offset ms: %" PRId64 " to %" PRId64 ")</text>\n", lo, hi);
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", LEFT,
                zero, LEFT + PLOT_W, zero);
        fputs("<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"", out);
        for (size_t j = 0; j < w->n_pts; j++) {
            double x = LEFT + (double)(w->pts[j].t - t0) / tspan * PLOT_W;
            double y = top + (double)(hi - w->pts[j].off) * scale;
            fprintf(out, "%s%.1f,%.1f", j ? " " : "", x, y);
        }
        fputs("\"/>\n", out);
        for (size_t k = 0; k < a->n_f; k++) {
            const audit_finding *f = a->f[k];
            if (f->kind != AF_CLOCK_STEP || strcmp(f->worker, w->text) != 0)
                continue;
            double x = LEFT + (double)(f->at_ms - t0) / tspan * PLOT_W;
            fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" "
                    "stroke-dasharray=\"4 2\"><title>clock step %" PRId64 " ms</title></line>\n",
                    x, top + 14, x, top + h, f->size);
        }
        fputs("</g>\n", out);
        row++;
    }
    fputs("</svg>\n", out);
    return ferror(out) ? IDM_EIO : 0;
}
