/* SPDX-License-Identifier: MIT */
/*
 * syscheck: the checker of the whole-system fault suite. It reads what a
 * fleet of minting processes acknowledged under faults (LOGDIR/ids/NAME.log)
 * and what the nemesis did (LOGDIR/events.tsv), both in the format of
 * syslog.h, and checks:
 *
 *   1. every acknowledged id is unique across the fleet, per kind (all
 *      snowflake logs together, all ticket logs together);
 *   2. in each snowflake log, the ids of each worker id (all node fields
 *      together) strictly increase in record order;
 *   3. each snowflake id's time lies within the minter's own clock (real
 *      clock plus the offset the events file says was in effect) around its
 *      record, give or take a tick below and the header's allowance above;
 *   4. per group and worker id, no two holdings (a log's maximal runs of ids
 *      under that worker) overlap in time.
 *
 * usage: syscheck [--json] [--max-report N] LOGDIR
 *
 * It prints the run's figures (ids, logs, faults by kind, violations, the
 * recovery time of each kind of fault: per fault, from T_END to the first
 * answer at or after it, the largest over the processes it affected) as
 * text or as one JSON object, and
 * for up to N violations of each kind (default 10) the ids involved with
 * their history. Exit 0 if clean, 1 on any violation, 2 on bad input
 * (including a run with no ids: a run that checked nothing must not pass).
 *
 * How it reads syslog.h where the contract leaves room: a header's epoch_ms
 * of 0 keeps the preset's epoch (so a text-form layout needs a nonzero one);
 * a log's file name must agree with its header's process and incarnation;
 * the logs of one group must share one layout and epoch (they share worker
 * ids); a record holds at least one id, only the known flags, more than one
 * id only if it is a batch or a CLI run, and is not answered before it was
 * sent; a file shorter than its header (killed while writing it) counts as
 * a torn tail; the run starts at the first run line's T_START, and the last
 * run line gives its end, seed and length. Anything else malformed is bad
 * input, named with its file (and line or record).
 *
 * Uniqueness over hundreds of millions of ids: the ids of a kind go into one
 * uint64 array, sorted by an LSD radix sort (a second array of the same
 * size), and scanned for equal neighbours; where a duplicated id came from
 * is found by reading that kind's logs once more, for the reported ids only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <idmint/idmint.h>

#include "syslog.h"

/* The writer writes the structs as they are: their sizes are the format. */
_Static_assert(sizeof(idms_header) == 232, "idms_header is 232 bytes");
_Static_assert(sizeof(idms_record) == 24, "idms_record is 24 bytes");

#define NS_PER_MS INT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)
/* Faults shown beside an occurrence: those within this of its times. */
#define FAULT_NEAR_NS (10 * NS_PER_S)
/* Occurrences of one duplicated id that are shown (all are counted). */
#define MAX_OCC 8
#define READ_CHUNK ((size_t)4 << 20)
#define REL_MAX 32

/* ---- the run's state ---- */

/* Where an id was seen: a log, a record's index and its file offset. */
typedef struct where {
    uint32_t log;
    uint64_t rec;
    uint64_t off;
} where;

typedef struct clock_line {
    int64_t t;
    int64_t off_ms;
    size_t line; /* file order breaks ties: the later line wins */
} clock_line;

typedef struct offclock {
    char *name;
    clock_line *v;
    size_t n, cap;
} offclock;

typedef struct fault {
    int64_t t_start, t_end;
    size_t kind; /* index into g.kinds */
    char *target, *affected, *detail;
    size_t naffected;
    int64_t recovery_ns; /* the largest over the affected processes */
    size_t slow_proc;    /* the process it was measured on */
    bool unrecovered;   /* an affected process never minted after T_END */
} fault;

typedef struct fkind {
    char *name;
    size_t faults, unaffected, unrecovered;
    int64_t *rec_ns; /* recovery times of the faults that recovered */
    size_t nrec;
    size_t slowest;  /* the fault of the largest recovery time (if nrec) */
} fkind;

/* A fault's question to one affected process: its first t_recv >= T_END. */
typedef struct query {
    int64_t t_end;
    int64_t best; /* smallest t_recv >= t_end seen in this slot, INT64_MAX if none */
    size_t fault;
} query;

typedef struct process {
    char *name;
    size_t incarnations;
    query *q; /* sorted by t_end */
    size_t nq, capq;
} process;

typedef struct holding {
    uint64_t worker;
    uint64_t first_id, last_id;
    int64_t first_ms, last_ms;
    where first, last;
} holding;

typedef struct group {
    uint32_t kind;
    char name[33];
    char layout_text[IDM_LAYOUT_TEXT_MAX];
    int64_t epoch;
    uint32_t first_log;
    holding *h;
    size_t nh, caph;
} group;

typedef struct logfile {
    char *path;
    const char *file; /* "ids/<name>", for messages */
    char process[33];
    uint32_t incarnation;
    uint32_t kind;
    char clock_name[33];
    int64_t drift_ms, restart_ms;
    idm_layout *layout; /* snowflake logs */
    uint64_t node_mask; /* the node fields' bits */
    int64_t epoch, tick_ms;
    size_t group, proc;
    long clock; /* index into g.clocks, -1: offset always 0 */
    uint64_t size;
    uint64_t records, ids;
    bool torn;
} logfile;

/* One violation of each kind, kept for the report. */
typedef struct dup_v {
    uint32_t kind;
    uint64_t id;
    size_t nocc; /* all occurrences found */
    where occ[MAX_OCC];
} dup_v;

typedef struct order_v {
    uint64_t prev, id;
    where wprev, wid;
} order_v;

typedef struct window_v {
    uint64_t id;
    where w;
    int64_t lo_ms, hi_ms; /* the allowed window, both ends included */
    int64_t min_off_ms, max_off_ms;
} window_v;

typedef struct overlap_v {
    size_t group;
    holding a, b; /* a starts first */
} overlap_v;

typedef struct undec_v {
    uint64_t id;
    where w;
    char why[160];
} undec_v;

static struct {
    bool json;
    size_t max_report;
    const char *dir;
    bool in_dir; /* dir checked: messages name files within it */

    logfile *logs;
    size_t nlogs;
    group *groups;
    size_t ngroups;
    process *procs;
    size_t nprocs;
    offclock *clocks;
    size_t nclocks;
    fault *faults;
    size_t nfaults, capfaults;
    fkind *kinds;
    size_t nkinds;

    bool have_run;
    int64_t run_start, run_end;
    char seed[64], seconds[32];
    size_t starts, stops;

    uint64_t ids_by_kind[3];

    uint64_t dup_ids, dup_extra, order_n, window_n, overlap_n, undec_n;
    uint64_t dup_by_kind[3];
    dup_v *dups;
    size_t ndups;
    order_v *orders;
    size_t norders;
    window_v *windows;
    size_t nwindows;
    overlap_v *overlaps;
    size_t noverlaps;
    undec_v *undecs;
    size_t nundecs;
} g;

/* ---- errors and small pieces ---- */

static void json_str(FILE *out, const char *s);

/* Bad input: say what and where, exit 2. */
__attribute__((format(printf, 1, 2))) _Noreturn static void bad_input(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Past the directory's check, messages name files within it. */
    char full[1400];
    snprintf(full, sizeof full, "%s%s%s", g.in_dir ? g.dir : "", g.in_dir ? ": " : "", msg);
    fprintf(stderr, "syscheck: %s\n", full);
    if (g.json) {
        fputs("{\"result\":\"bad input\",\"error\":", stdout);
        json_str(stdout, full);
        fputs("}\n", stdout);
    }
    exit(2);
}

_Noreturn static void out_of_memory(void)
{
    fputs("syscheck: out of memory\n", stderr);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n != 0 ? n : 1);
    if (p == NULL)
        out_of_memory();
    return p;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n != 0 ? n : 1, size != 0 ? size : 1);
    if (p == NULL)
        out_of_memory();
    return p;
}

/* Grow *p (of *cap elements of size) to hold at least need. */
static void grow(void *pp, size_t *cap, size_t need, size_t size)
{
    void **p = pp;
    if (need <= *cap)
        return;
    size_t c = *cap != 0 ? *cap : 8;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * size);
    if (n == NULL)
        out_of_memory();
    *p = n;
    *cap = c;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

/* qsort, but an empty array may be NULL (qsort's may not). */
static void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* A NUL-padded header field as a string (it may fill its bytes). */
static void fixed_str(char *dst, const char *src, size_t len)
{
    size_t n = strnlen(src, len);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Bytes after the string's NUL must be NUL too ("NUL-padded"). */
static bool padded_ok(const char *src, size_t len)
{
    size_t n = strnlen(src, len);
    for (size_t i = n; i < len; i++)
        if (src[i] != '\0')
            return false;
    return true;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (*s == '\0')
        return false;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* ---- the events file ---- */

static size_t kind_index(const char *name)
{
    for (size_t i = 0; i < g.nkinds; i++)
        if (strcmp(g.kinds[i].name, name) == 0)
            return i;
    g.kinds = realloc(g.kinds, (g.nkinds + 1) * sizeof *g.kinds);
    if (g.kinds == NULL)
        out_of_memory();
    memset(&g.kinds[g.nkinds], 0, sizeof *g.kinds);
    g.kinds[g.nkinds].name = xstrdup(name);
    return g.nkinds++;
}

static offclock *clock_named(const char *name, bool create)
{
    for (size_t i = 0; i < g.nclocks; i++)
        if (strcmp(g.clocks[i].name, name) == 0)
            return &g.clocks[i];
    if (!create)
        return NULL;
    g.clocks = realloc(g.clocks, (g.nclocks + 1) * sizeof *g.clocks);
    if (g.clocks == NULL)
        out_of_memory();
    memset(&g.clocks[g.nclocks], 0, sizeof *g.clocks);
    g.clocks[g.nclocks].name = xstrdup(name);
    return &g.clocks[g.nclocks++];
}

/* Split line at tabs into at most max fields; the last takes the rest. */
static size_t split_tabs(char *line, char **f, size_t max)
{
    size_t n = 0;
    f[n++] = line;
    while (n < max) {
        char *tab = strchr(f[n - 1], '\t');
        if (tab == NULL)
            break;
        *tab = '\0';
        f[n++] = tab + 1;
    }
    return n;
}

static int cmp_clock_line(const void *a, const void *b)
{
    const clock_line *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static void event_fault(char **f, size_t n, const char *path, size_t lineno)
{
    fault ft;
    memset(&ft, 0, sizeof ft);
    if (n < 6)
        bad_input("%s:%zu: a fault line has T_START, T_END, KIND, TARGET, AFFECTED and DETAIL",
                  path, lineno);
    if (!parse_i64(f[1], &ft.t_start) || !parse_i64(f[2], &ft.t_end))
        bad_input("%s:%zu: fault times '%s' and '%s' are not ns integers", path, lineno, f[1],
                  f[2]);
    if (ft.t_end < ft.t_start)
        bad_input("%s:%zu: fault healed (%s) before it began (%s)", path, lineno, f[2], f[1]);
    if (f[3][0] == '\0')
        bad_input("%s:%zu: a fault with no KIND", path, lineno);
    ft.kind = kind_index(f[3]);
    ft.target = xstrdup(f[4]);
    ft.affected = xstrdup(strcmp(f[5], "-") == 0 ? "" : f[5]);
    ft.detail = xstrdup(n > 6 ? f[6] : "");
    grow(&g.faults, &g.capfaults, g.nfaults + 1, sizeof *g.faults);
    g.faults[g.nfaults++] = ft;
    g.kinds[ft.kind].faults++;
}

static void event_line(char *line, const char *path, size_t lineno)
{
    char *f[8] = {NULL};
    size_t n = split_tabs(line, f, 7);
    int64_t t, v;
    if (strcmp(f[0], "fault") == 0) {
        event_fault(f, n, path, lineno);
    } else if (strcmp(f[0], "clock") == 0) {
        if (n != 4 || !parse_i64(f[1], &t) || f[2][0] == '\0' || !parse_i64(f[3], &v))
            bad_input("%s:%zu: a clock line is: clock T NAME OFFSET_MS (integers)", path, lineno);
        offclock *c = clock_named(f[2], true);
        grow(&c->v, &c->cap, c->n + 1, sizeof *c->v);
        c->v[c->n++] = (clock_line){t, v, lineno};
    } else if (strcmp(f[0], "start") == 0 || strcmp(f[0], "stop") == 0) {
        bool stop = f[0][2] == 'o';
        if (n != (stop ? 5u : 4u) || !parse_i64(f[1], &t))
            bad_input("%s:%zu: a %s line is: %s", path, lineno, f[0],
                      stop ? "stop T PROCESS INCARNATION HOW" : "start T PROCESS INCARNATION");
        if (stop)
            g.stops++;
        else
            g.starts++;
    } else if (strcmp(f[0], "run") == 0) {
        int64_t t0, t1;
        if (n != 5 || !parse_i64(f[1], &t0) || !parse_i64(f[2], &t1))
            bad_input("%s:%zu: a run line is: run T_START T_END SEED SECONDS", path, lineno);
        /* The first line gives the start; the last (written at the end) the
         * bounds, seed and length. */
        if (!g.have_run)
            g.run_start = t0;
        g.run_end = t1;
        snprintf(g.seed, sizeof g.seed, "%s", f[3]);
        snprintf(g.seconds, sizeof g.seconds, "%s", f[4]);
        g.have_run = true;
    } else {
        bad_input("%s:%zu: unknown event '%.40s' (fault, clock, start, stop, run)", path, lineno,
                  f[0]);
    }
}

static void read_events(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/events.tsv", g.dir);
    FILE *fp = fopen(path, "r");
    if (fp == NULL)
        bad_input("cannot open events.tsv: %s", strerror(errno));
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        event_line(line, "events.tsv", lineno);
    }
    bool err = ferror(fp);
    free(line);
    fclose(fp);
    if (err)
        bad_input("cannot read events.tsv");
    if (!g.have_run)
        bad_input("events.tsv has no run line (run T_START T_END SEED SECONDS)");
    for (size_t i = 0; i < g.nclocks; i++)
        sort_n(g.clocks[i].v, g.clocks[i].n, sizeof *g.clocks[i].v, cmp_clock_line);
}

/* ---- processes and their recovery queries ---- */

static size_t process_index(const char *name)
{
    for (size_t i = 0; i < g.nprocs; i++)
        if (strcmp(g.procs[i].name, name) == 0)
            return i;
    g.procs = realloc(g.procs, (g.nprocs + 1) * sizeof *g.procs);
    if (g.procs == NULL)
        out_of_memory();
    memset(&g.procs[g.nprocs], 0, sizeof *g.procs);
    g.procs[g.nprocs].name = xstrdup(name);
    return g.nprocs++;
}

static int cmp_query(const void *a, const void *b)
{
    const query *x = a, *y = b;
    if (x->t_end != y->t_end)
        return x->t_end < y->t_end ? -1 : 1;
    return x->fault < y->fault ? -1 : x->fault > y->fault;
}

/* One query per fault and affected process (after the logs named theirs). */
static void make_queries(void)
{
    for (size_t fi = 0; fi < g.nfaults; fi++) {
        fault *f = &g.faults[fi];
        char *list = xstrdup(f->affected), *save = NULL;
        for (char *name = strtok_r(list, ",", &save); name != NULL;
             name = strtok_r(NULL, ",", &save)) {
            while (*name == ' ')
                name++;
            if (*name == '\0')
                continue;
            size_t pi = process_index(name); /* it may move g.procs */
            process *p = &g.procs[pi];
            grow(&p->q, &p->capq, p->nq + 1, sizeof *p->q);
            p->q[p->nq++] = (query){f->t_end, INT64_MAX, fi};
            f->naffected++;
        }
        free(list);
    }
    for (size_t i = 0; i < g.nprocs; i++)
        sort_n(g.procs[i].q, g.procs[i].nq, sizeof *g.procs[i].q, cmp_query);
}

/* A record of p acknowledged at t_recv: it answers every query whose T_END
 * is at or before it; keep it in the last such slot (suffix minima later). */
static void process_saw(process *p, int64_t t_recv)
{
    size_t lo = 0, hi = p->nq;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->q[mid].t_end <= t_recv)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && t_recv < p->q[lo - 1].best)
        p->q[lo - 1].best = t_recv;
}

/* Each query's answer is the smallest t_recv kept in its slot or a later
 * one; a fault's recovery is the largest over its affected processes, and
 * one that never minted again leaves it "not recovered". */
static void settle_recovery(void)
{
    for (size_t i = 0; i < g.nprocs; i++) {
        process *p = &g.procs[i];
        int64_t best = INT64_MAX;
        for (size_t k = p->nq; k-- > 0;) {
            if (p->q[k].best < best)
                best = p->q[k].best;
            fault *f = &g.faults[p->q[k].fault];
            if (best == INT64_MAX)
                f->unrecovered = true;
            else if (best - p->q[k].t_end > f->recovery_ns) {
                f->recovery_ns = best - p->q[k].t_end;
                f->slow_proc = i;
            }
        }
    }
    for (size_t fi = 0; fi < g.nfaults; fi++) {
        fault *f = &g.faults[fi];
        fkind *k = &g.kinds[f->kind];
        if (f->naffected == 0) {
            k->unaffected++;
        } else if (f->unrecovered) {
            k->unrecovered++;
        } else {
            k->rec_ns = realloc(k->rec_ns, (k->nrec + 1) * sizeof *k->rec_ns);
            if (k->rec_ns == NULL)
                out_of_memory();
            if (k->nrec == 0 || f->recovery_ns > g.faults[k->slowest].recovery_ns)
                k->slowest = fi;
            k->rec_ns[k->nrec++] = f->recovery_ns;
        }
    }
}

/* ---- reading logs ---- */

typedef struct reader {
    int fd;
    const char *file;
    unsigned char *buf; /* starts at a record boundary, so 8-aligned ids */
    size_t cap, len, pos;
    uint64_t base; /* file offset of buf[0] */
    uint64_t size;
} reader;

static void rd_open(reader *r, const logfile *l)
{
    memset(r, 0, sizeof *r);
    r->fd = open(l->path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        bad_input("cannot open %s: %s", l->file, strerror(errno));
    r->file = l->file;
    r->size = l->size;
    r->cap = READ_CHUNK;
    r->buf = xmalloc(r->cap);
}

static void rd_close(reader *r)
{
    close(r->fd);
    free(r->buf);
}

/* Make need bytes available at pos (the caller knows the file has them). */
static void rd_fill(reader *r, size_t need)
{
    if (r->len - r->pos >= need)
        return;
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->base += r->pos;
    r->len -= r->pos;
    r->pos = 0;
    if (need > r->cap) {
        size_t cap = r->cap;
        while (cap < need)
            cap *= 2;
        unsigned char *b = realloc(r->buf, cap);
        if (b == NULL)
            out_of_memory();
        r->buf = b;
        r->cap = cap;
    }
    while (r->len < need) {
        ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            bad_input("cannot read %s: %s", r->file, strerror(errno));
        if (n == 0)
            bad_input("%s shrank while it was read", r->file);
        r->len += (size_t)n;
    }
}

/* The next record: 1 (rec, ids, off set), 0 at the end of the file, -1 at a
 * torn tail (a record the file ends inside). */
static int rd_record(reader *r, idms_record *rec, const uint64_t **ids, uint64_t *off)
{
    *off = r->base + r->pos;
    if (*off == r->size)
        return 0;
    if (r->size - *off < sizeof *rec)
        return -1;
    rd_fill(r, sizeof *rec);
    memcpy(rec, r->buf + r->pos, sizeof *rec);
    uint64_t bytes = sizeof *rec + (uint64_t)rec->count * sizeof(uint64_t);
    if (bytes > r->size - *off)
        return -1;
    rd_fill(r, (size_t)bytes);
    *ids = (const uint64_t *)(const void *)(r->buf + r->pos + sizeof *rec);
    r->pos += (size_t)bytes;
    return 1;
}

static void check_record(const logfile *l, const idms_record *rec, uint64_t index, uint64_t off)
{
    if (rec->count == 0)
        bad_input("%s: record %" PRIu64 " (offset %" PRIu64 ") has no ids", l->file, index, off);
    if ((rec->flags & ~(IDMS_F_BATCH | IDMS_F_CLI)) != 0)
        bad_input("%s: record %" PRIu64 " (offset %" PRIu64 ") has unknown flags 0x%x", l->file,
                  index, off, rec->flags);
    if (rec->count != 1 && (rec->flags & (IDMS_F_BATCH | IDMS_F_CLI)) == 0)
        bad_input("%s: record %" PRIu64 " (offset %" PRIu64 ") holds %u ids but is neither a batch "
                  "nor a CLI run",
                  l->file, index, off, rec->count);
    if (rec->t_recv_ns < rec->t_send_ns)
        bad_input("%s: record %" PRIu64 " (offset %" PRIu64 ") was answered (%" PRId64
                  ") before it was sent (%" PRId64 ")",
                  l->file, index, off, rec->t_recv_ns, rec->t_send_ns);
}

/* The record header at off (for reports). */
static idms_record record_at(const logfile *l, uint64_t off)
{
    idms_record rec;
    int fd = open(l->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || pread(fd, &rec, sizeof rec, (off_t)off) != (ssize_t)sizeof rec)
        bad_input("cannot read %s again at offset %" PRIu64, l->file, off);
    close(fd);
    return rec;
}

/* ---- headers ---- */

/* "<process>.<incarnation>.log": the name must agree with the header. */
static void check_name(const logfile *l, const char *name)
{
    size_t n = strlen(name) - 4; /* without ".log" */
    const char *dot = NULL;
    for (size_t i = n; i-- > 0;)
        if (name[i] == '.') {
            dot = name + i;
            break;
        }
    char want[80];
    snprintf(want, sizeof want, "%s.%" PRIu32 ".log", l->process, l->incarnation);
    if (dot == NULL || strcmp(name, want) != 0)
        bad_input("%s: the header says process '%s' incarnation %" PRIu32
                  ", so the file should be ids/%s",
                  l->file, l->process, l->incarnation, want);
}

static size_t group_for(const logfile *l, uint32_t index, const char *name)
{
    char text[IDM_LAYOUT_TEXT_MAX] = "";
    if (l->layout != NULL && idm_layout_format(l->layout, text, sizeof text) != 0)
        bad_input("%s: cannot format its layout: %s", l->file, idm_error_detail());
    for (size_t i = 0; i < g.ngroups; i++) {
        group *gr = &g.groups[i];
        if (gr->kind != l->kind || strcmp(gr->name, name) != 0)
            continue;
        /* Logs of one group share worker ids: one layout and epoch. */
        if (strcmp(gr->layout_text, text) != 0 || gr->epoch != l->epoch)
            bad_input("group '%s' mixes layouts: %s has %s (epoch %" PRId64
                      "), %s has %s (epoch %" PRId64 ")",
                      name, g.logs[gr->first_log].file, gr->layout_text, gr->epoch, l->file, text,
                      l->epoch);
        return i;
    }
    g.groups = realloc(g.groups, (g.ngroups + 1) * sizeof *g.groups);
    if (g.groups == NULL)
        out_of_memory();
    group *gr = &g.groups[g.ngroups];
    memset(gr, 0, sizeof *gr);
    gr->kind = l->kind;
    snprintf(gr->name, sizeof gr->name, "%s", name);
    snprintf(gr->layout_text, sizeof gr->layout_text, "%s", text);
    gr->epoch = l->epoch;
    gr->first_log = index;
    return g.ngroups++;
}

static void header_layout(logfile *l, const idms_header *h)
{
    char spec[97], epoch_text[32];
    fixed_str(spec, h->layout, sizeof h->layout);
    if (spec[0] == '\0')
        bad_input("%s: a snowflake log with no layout", l->file);
    if (h->epoch_ms < 0)
        bad_input("%s: negative epoch %" PRId64, l->file, h->epoch_ms);
    snprintf(epoch_text, sizeof epoch_text, "%" PRId64, h->epoch_ms);
    /* epoch_ms 0 keeps the preset's; a text form has none, and says so. */
    if (idm_layout_from_spec(&l->layout, spec, h->epoch_ms != 0 ? epoch_text : NULL) != 0)
        bad_input("%s: bad layout '%s' (epoch %" PRId64 "): %s", l->file, spec, h->epoch_ms,
                  idm_error_detail());
    l->epoch = idm_layout_epoch(l->layout);
    l->tick_ms = idm_layout_tick_ms(l->layout);
    size_t nf = idm_layout_field_count(l->layout);
    for (size_t i = 0; i < nf; i++) {
        idm_field_info fi;
        if (idm_layout_field(l->layout, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE)
            l->node_mask |= fi.max << fi.shift;
    }
}

static void read_header(logfile *l, uint32_t index, const char *name)
{
    idms_header h;
    int fd = open(l->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        bad_input("cannot open %s: %s", l->file, strerror(errno));
    if (!S_ISREG(st.st_mode))
        bad_input("%s is not a regular file", l->file);
    l->size = (uint64_t)st.st_size;
    memset(&h, 0, sizeof h);
    ssize_t n = pread(fd, &h, sizeof h, 0);
    close(fd);
    if (n < 0)
        bad_input("cannot read %s: %s", l->file, strerror(errno));
    size_t cmp = (size_t)n < sizeof h.magic ? (size_t)n : sizeof h.magic;
    if (memcmp(h.magic, IDMS_MAGIC, cmp) != 0)
        bad_input("%s: bad magic \"%.8s\" (expected %s)", l->file, h.magic, IDMS_MAGIC);
    if ((size_t)n < sizeof h) {
        /* Killed before its header was written whole: a torn tail, empty. */
        l->torn = true;
        l->kind = 0;
        return;
    }
    fixed_str(l->process, h.process, sizeof h.process);
    if (l->process[0] == '\0' || !padded_ok(h.process, sizeof h.process))
        bad_input("%s: the header's process name is empty or not NUL-padded", l->file);
    l->incarnation = h.incarnation;
    check_name(l, name);
    l->kind = h.kind;
    if (h.kind != IDMS_SNOWFLAKE && h.kind != IDMS_TICKET)
        bad_input("%s: unknown kind %" PRIu32 " (1 snowflake, 2 ticket)", l->file, h.kind);
    if (!padded_ok(h.layout, sizeof h.layout) || !padded_ok(h.clock, sizeof h.clock) ||
        !padded_ok(h.group, sizeof h.group))
        bad_input("%s: a header text field (layout, clock or group) is not NUL-padded", l->file);
    if (h.drift_ms < 0 || h.restart_ms < 0)
        bad_input("%s: negative drift_ms (%" PRId64 ") or restart_ms (%" PRId64 ")", l->file,
                  h.drift_ms, h.restart_ms);
    l->drift_ms = h.drift_ms;
    l->restart_ms = h.restart_ms;
    fixed_str(l->clock_name, h.clock, sizeof h.clock);
    char grp[33];
    fixed_str(grp, h.group, sizeof h.group);
    if (h.kind == IDMS_SNOWFLAKE)
        header_layout(l, &h);
    l->group = group_for(l, index, grp);
    l->proc = process_index(l->process);
    g.procs[l->proc].incarnations++;
    const offclock *c = l->clock_name[0] != '\0' ? clock_named(l->clock_name, false) : NULL;
    l->clock = c != NULL ? (long)(c - g.clocks) : -1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_logs(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ids", g.dir);
    DIR *d = opendir(path);
    if (d == NULL)
        bad_input("cannot open ids/: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".log") != 0)
            continue;
        grow(&names, &cap, n + 1, sizeof *names);
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    sort_n(names, n, sizeof *names, cmp_str);
    g.logs = xcalloc(n, sizeof *g.logs);
    g.nlogs = n;
    for (size_t i = 0; i < n; i++) {
        logfile *l = &g.logs[i];
        size_t plen = strlen(g.dir) + strlen(names[i]) + 6;
        l->path = xmalloc(plen);
        snprintf(l->path, plen, "%s/ids/%s", g.dir, names[i]);
        l->file = l->path + strlen(g.dir) + 1;
        read_header(l, (uint32_t)i, names[i]);
        free(names[i]);
    }
    free(names);
}

/* ---- the clock window of a record (check 3) ---- */

/* The smallest and largest offset of clock c in effect over [from, to]: the
 * one in effect at from, and every one set after it up to to. */
static void offsets_over(long clock, int64_t from, int64_t to, int64_t *mn, int64_t *mx)
{
    *mn = *mx = 0;
    if (clock < 0)
        return;
    const offclock *c = &g.clocks[clock];
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].t <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t o = lo > 0 ? c->v[lo - 1].off_ms : 0;
    *mn = *mx = o;
    for (size_t i = lo; i < c->n && c->v[i].t <= to; i++) {
        if (c->v[i].off_ms < *mn)
            *mn = c->v[i].off_ms;
        if (c->v[i].off_ms > *mx)
            *mx = c->v[i].off_ms;
    }
}

typedef struct window {
    int64_t lo_ms, hi_ms, min_off, max_off;
} window;

static window record_window(const logfile *l, const idms_record *rec)
{
    window w;
    offsets_over(l->clock, rec->t_send_ns - IDMS_CLOCK_LAG_NS, rec->t_recv_ns, &w.min_off,
                 &w.max_off);
    int64_t lo = floor_div(rec->t_send_ns + w.min_off * NS_PER_MS, NS_PER_MS);
    int64_t hi = floor_div(rec->t_recv_ns + w.max_off * NS_PER_MS, NS_PER_MS);
    w.lo_ms = l->epoch + floor_div(lo - l->epoch, l->tick_ms) * l->tick_ms;
    w.hi_ms = hi + (l->drift_ms > l->restart_ms ? l->drift_ms : l->restart_ms);
    return w;
}

/* ---- per-log worker state (check 2) ---- */

typedef struct wslot {
    uint64_t worker;
    uint64_t last;
    where w;
    bool used;
} wslot;

typedef struct wmap {
    wslot *s;
    size_t cap, n; /* cap a power of two */
} wmap;

static size_t wmap_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    return (size_t)k;
}

static wslot *wmap_get(wmap *m, uint64_t worker)
{
    if (2 * (m->n + 1) > m->cap) {
        wmap old = *m;
        m->cap = old.cap != 0 ? old.cap * 2 : 64;
        m->s = xcalloc(m->cap, sizeof *m->s);
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.s[i].used)
                *wmap_get(m, old.s[i].worker) = old.s[i];
        free(old.s);
    }
    size_t i = wmap_hash(worker) & (m->cap - 1);
    while (m->s[i].used && m->s[i].worker != worker)
        i = (i + 1) & (m->cap - 1);
    if (!m->s[i].used) {
        m->s[i].used = true;
        m->s[i].worker = worker;
        m->s[i].last = 0;
        m->s[i].w.log = UINT32_MAX; /* no id yet */
        m->n++;
    }
    return &m->s[i];
}

/* ---- the scan ---- */

typedef struct idvec {
    uint64_t *v;
    size_t n, cap;
} idvec;

static void push_holding(size_t gi, const holding *h)
{
    group *gr = &g.groups[gi];
    grow(&gr->h, &gr->caph, gr->nh + 1, sizeof *gr->h);
    gr->h[gr->nh++] = *h;
}

static void note_window(uint64_t id, where w, const window *win)
{
    if (g.window_n++ < g.max_report) {
        g.windows = realloc(g.windows, (g.nwindows + 1) * sizeof *g.windows);
        if (g.windows == NULL)
            out_of_memory();
        g.windows[g.nwindows++] =
            (window_v){id, w, win->lo_ms, win->hi_ms, win->min_off, win->max_off};
    }
}

static void note_order(uint64_t prev, where wprev, uint64_t id, where wid)
{
    if (g.order_n++ < g.max_report) {
        g.orders = realloc(g.orders, (g.norders + 1) * sizeof *g.orders);
        if (g.orders == NULL)
            out_of_memory();
        g.orders[g.norders++] = (order_v){prev, id, wprev, wid};
    }
}

static void note_undecodable(uint64_t id, where w)
{
    if (g.undec_n++ < g.max_report) {
        g.undecs = realloc(g.undecs, (g.nundecs + 1) * sizeof *g.undecs);
        if (g.undecs == NULL)
            out_of_memory();
        undec_v *u = &g.undecs[g.nundecs++];
        u->id = id;
        u->w = w;
        snprintf(u->why, sizeof u->why, "%s", idm_error_detail());
    }
}

/* Checks 2 and 3 and the holdings of check 4 for one snowflake log. */
typedef struct sfstate {
    wmap m;
    wslot *cur; /* the worker of the open holding */
    holding h;
    bool open;
} sfstate;

static void sf_close(sfstate *s, const logfile *l)
{
    if (s->open)
        push_holding(l->group, &s->h);
    s->open = false;
    s->cur = NULL;
}

/* Every id of a record: decoded, checked against its worker's previous id
 * in this log (check 2) and the record's clock window (check 3), and added
 * to the open holding, which a change of worker closes (check 4). */
static void sf_record(sfstate *s, const logfile *l, const idms_record *rec, const uint64_t *ids,
                      where w)
{
    window win = record_window(l, rec);
    for (uint32_t i = 0; i < rec->count; i++) {
        uint64_t id = ids[i];
        idm_decoded d;
        if (idm_layout_decode(l->layout, id, &d) != 0) {
            note_undecodable(id, w);
            continue;
        }
        uint64_t worker = id & l->node_mask;
        if (s->cur == NULL || s->cur->worker != worker) {
            sf_close(s, l);
            s->cur = wmap_get(&s->m, worker);
            s->h = (holding){worker, id, id, d.unix_ms, d.unix_ms, w, w};
            s->open = true;
        }
        wslot *ws = s->cur;
        if (ws->w.log != UINT32_MAX && id <= ws->last)
            note_order(ws->last, ws->w, id, w);
        ws->last = id;
        ws->w = w;
        s->h.last_id = id;
        s->h.last_ms = d.unix_ms;
        s->h.last = w;
        if (d.unix_ms < win.lo_ms || d.unix_ms > win.hi_ms)
            note_window(id, w, &win);
    }
}

static void scan_log(uint32_t li, idvec *out)
{
    logfile *l = &g.logs[li];
    if (l->kind == 0)
        return; /* a torn header: nothing in it */
    reader r;
    rd_open(&r, l);
    r.pos = r.len = 0;
    r.base = sizeof(idms_header);
    if (lseek(r.fd, (off_t)r.base, SEEK_SET) < 0)
        bad_input("cannot seek in %s: %s", l->file, strerror(errno));
    sfstate s;
    memset(&s, 0, sizeof s);
    process *p = &g.procs[l->proc];
    idms_record rec;
    const uint64_t *ids;
    uint64_t off;
    int rc;
    while ((rc = rd_record(&r, &rec, &ids, &off)) == 1) {
        check_record(l, &rec, l->records, off);
        where w = {li, l->records, off};
        if (p->nq != 0)
            process_saw(p, rec.t_recv_ns);
        memcpy(out->v + out->n, ids, rec.count * sizeof *ids);
        out->n += rec.count;
        if (l->kind == IDMS_SNOWFLAKE)
            sf_record(&s, l, &rec, ids, w);
        l->records++;
        l->ids += rec.count;
    }
    sf_close(&s, l);
    free(s.m.s);
    l->torn = rc < 0;
    rd_close(&r);
}

/* ---- uniqueness (check 1) ---- */

/* LSD radix sort of a (b: scratch of the same size), 11 bits a pass; a pass
 * whose digit is the same in every id moves nothing and is skipped. Returns
 * the array that holds the sorted ids (a or b). */
static uint64_t *radix_sort(uint64_t *a, uint64_t *b, size_t n)
{
    enum { BITS = 11, PASSES = 6, BUCKETS = 1 << BITS };
    size_t(*cnt)[BUCKETS] = xcalloc(PASSES, sizeof *cnt);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = a[i];
        for (int p = 0; p < PASSES; p++)
            cnt[p][(v >> (p * BITS)) & (BUCKETS - 1)]++;
    }
    for (int p = 0; p < PASSES && n > 0; p++) {
        unsigned shift = (unsigned)(p * BITS);
        if (cnt[p][(a[0] >> shift) & (BUCKETS - 1)] == n)
            continue;
        size_t sum = 0;
        for (size_t k = 0; k < BUCKETS; k++) {
            size_t c = cnt[p][k];
            cnt[p][k] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            b[cnt[p][(a[i] >> shift) & (BUCKETS - 1)]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    free(cnt);
    return a;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Read the logs of kind again for where the reported duplicates were. */
static void locate_dups(uint32_t kind, size_t first)
{
    size_t nwant = g.ndups - first;
    uint64_t *want = xmalloc(nwant * sizeof *want);
    for (size_t i = 0; i < nwant; i++)
        want[i] = g.dups[first + i].id;
    for (uint32_t li = 0; li < g.nlogs; li++) {
        logfile *l = &g.logs[li];
        if (l->kind != kind)
            continue;
        reader r;
        rd_open(&r, l);
        r.base = sizeof(idms_header);
        if (lseek(r.fd, (off_t)r.base, SEEK_SET) < 0)
            bad_input("cannot seek in %s: %s", l->file, strerror(errno));
        idms_record rec;
        const uint64_t *ids;
        uint64_t off, index = 0;
        while (rd_record(&r, &rec, &ids, &off) == 1) {
            for (uint32_t i = 0; i < rec.count; i++) {
                if (ids[i] < want[0] || ids[i] > want[nwant - 1])
                    continue;
                const uint64_t *hit = bsearch(&ids[i], want, nwant, sizeof *want, cmp_u64);
                if (hit == NULL)
                    continue;
                dup_v *dv = &g.dups[first + (size_t)(hit - want)];
                if (dv->nocc < MAX_OCC)
                    dv->occ[dv->nocc] = (where){li, index, off};
                dv->nocc++;
            }
            index++;
        }
        rd_close(&r);
    }
    free(want);
}

static void check_unique(uint32_t kind, idvec *ids)
{
    size_t n = ids->n;
    uint64_t *scratch = xmalloc(n * sizeof *scratch);
    uint64_t *s = radix_sort(ids->v, scratch, n);
    size_t first = g.ndups;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && s[j] == s[i])
            j++;
        if (j - i > 1) {
            g.dup_ids++;
            g.dup_by_kind[kind]++;
            g.dup_extra += j - i - 1;
            if (g.ndups - first < g.max_report) {
                g.dups = realloc(g.dups, (g.ndups + 1) * sizeof *g.dups);
                if (g.dups == NULL)
                    out_of_memory();
                memset(&g.dups[g.ndups], 0, sizeof *g.dups);
                g.dups[g.ndups].kind = kind;
                g.dups[g.ndups].id = s[i];
                g.ndups++;
            }
        }
        i = j;
    }
    free(scratch);
    free(ids->v);
    ids->v = NULL;
    if (g.ndups > first)
        locate_dups(kind, first);
}

/* ---- holdings (check 4) ---- */

static int cmp_holding(const void *a, const void *b)
{
    const holding *x = a, *y = b;
    if (x->worker != y->worker)
        return x->worker < y->worker ? -1 : 1;
    if (x->first_ms != y->first_ms)
        return x->first_ms < y->first_ms ? -1 : 1;
    if (x->first.log != y->first.log)
        return x->first.log < y->first.log ? -1 : 1;
    return x->first.rec < y->first.rec ? -1 : x->first.rec > y->first.rec;
}

/* Sorted by first time, each holding must start after every earlier one
 * ended (not only the one before it: a long holding can cover several). */
static void check_holdings(size_t gi)
{
    group *gr = &g.groups[gi];
    sort_n(gr->h, gr->nh, sizeof *gr->h, cmp_holding);
    size_t reach = 0; /* the earlier holding of this worker that ends last */
    for (size_t i = 0; i < gr->nh; i++) {
        if (i == 0 || gr->h[i].worker != gr->h[i - 1].worker) {
            reach = i;
            continue;
        }
        if (gr->h[i].first_ms <= gr->h[reach].last_ms) {
            if (g.overlap_n++ < g.max_report) {
                g.overlaps = realloc(g.overlaps, (g.noverlaps + 1) * sizeof *g.overlaps);
                if (g.overlaps == NULL)
                    out_of_memory();
                g.overlaps[g.noverlaps++] = (overlap_v){gi, gr->h[reach], gr->h[i]};
            }
        }
        if (gr->h[i].last_ms > gr->h[reach].last_ms)
            reach = i;
    }
}

/* ---- pieces of the report ---- */

static void iso_ms(int64_t ms, char *buf)
{
    if (idm_time_format(ms, buf, IDM_TIME_TEXT_MAX) != 0)
        snprintf(buf, IDM_TIME_TEXT_MAX, "%" PRId64 "ms", ms);
}

static void iso_ns(int64_t ns, char *buf)
{
    iso_ms(floor_div(ns, NS_PER_MS), buf);
}

/* Seconds since the run's start, to the ms below (as the ISO times beside
 * them): "+3.000" for 3.0005 s ("3.000" in JSON, which has no '+'). */
static const char *rel_s(int64_t ns, bool json, char *buf)
{
    int64_t ms = floor_div(ns, NS_PER_MS) - floor_div(g.run_start, NS_PER_MS);
    int64_t a = ms < 0 ? -ms : ms;
    snprintf(buf, REL_MAX, "%s%" PRId64 ".%03" PRId64, ms < 0 ? "-" : json ? "" : "+", a / 1000,
             a % 1000);
    return buf;
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s != '\0'; s++) {
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

/* "datacenter=1,worker=3" for a snowflake id of l's layout. */
static void worker_text(const logfile *l, uint64_t id, char *buf, size_t len)
{
    idm_decoded d;
    size_t used = 0;
    buf[0] = '\0';
    if (idm_layout_decode(l->layout, id, &d) != 0)
        return;
    size_t nf = idm_layout_field_count(l->layout);
    for (size_t i = 0; i < nf; i++) {
        idm_field_info fi;
        if (idm_layout_field(l->layout, i, &fi) != 0 || fi.kind != IDM_FIELD_NODE)
            continue;
        int n = snprintf(buf + used, len - used, "%s%s=%" PRIu64, used != 0 ? "," : "", fi.name,
                         d.value[i]);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}

/* The id's fields, as text (indent first) or as JSON members. */
static void id_fields(FILE *out, const logfile *l, uint64_t id, bool json)
{
    idm_decoded d;
    char when[IDM_TIME_TEXT_MAX], worker[160];
    if (l == NULL || l->kind != IDMS_SNOWFLAKE || idm_layout_decode(l->layout, id, &d) != 0) {
        if (json)
            fprintf(out, "\"id\":%" PRIu64, id);
        else
            fprintf(out, "id %" PRIu64, id);
        return;
    }
    iso_ms(d.unix_ms, when);
    worker_text(l, id, worker, sizeof worker);
    if (json) {
        fprintf(out, "\"id\":%" PRIu64 ",\"time\":\"%s\",\"time_ms\":%" PRId64 ",\"worker\":", id,
                when, d.unix_ms);
        json_str(out, worker);
        fprintf(out, ",\"seq\":%" PRIu64, d.seq);
    } else {
        fprintf(out, "id %" PRIu64 " (time %s, worker %s, seq %" PRIu64 ")", id, when, worker,
                d.seq);
    }
}

/* Faults within FAULT_NEAR_NS of [from, to]. */
static bool fault_near(const fault *f, int64_t from, int64_t to)
{
    return f->t_start - FAULT_NEAR_NS <= to && from <= f->t_end + FAULT_NEAR_NS;
}

static void occurrence(FILE *out, where w, bool json)
{
    const logfile *l = &g.logs[w.log];
    idms_record rec = record_at(l, w.off);
    char ts[IDM_TIME_TEXT_MAX], tr[IDM_TIME_TEXT_MAX], r1[REL_MAX], r2[REL_MAX];
    iso_ns(rec.t_send_ns, ts);
    iso_ns(rec.t_recv_ns, tr);
    rel_s(rec.t_send_ns, json, r1);
    rel_s(rec.t_recv_ns, json, r2);
    if (json) {
        fputs("{\"process\":", out);
        json_str(out, l->process);
        fprintf(out,
                ",\"incarnation\":%" PRIu32 ",\"file\":\"%s\",\"record\":%" PRIu64
                ",\"t_send\":\"%s\",\"t_send_rel_s\":%s,\"t_recv\":\"%s\",\"t_recv_rel_s\":%s,"
                "\"faults\":[",
                l->incarnation, l->file, w.rec, ts, r1, tr, r2);
    } else {
        fprintf(out,
                "    in %s #%" PRIu32 " record %" PRIu64
                " (%s): sent %s (%s s), received %s (%s s)\n",
                l->process, l->incarnation, w.rec, l->file, ts, r1, tr, r2);
    }
    bool comma = false;
    for (size_t i = 0; i < g.nfaults; i++) {
        const fault *f = &g.faults[i];
        if (!fault_near(f, rec.t_send_ns, rec.t_recv_ns))
            continue;
        rel_s(f->t_start, json, r1);
        rel_s(f->t_end, json, r2);
        if (json) {
            fprintf(out, "%s{\"kind\":", comma ? "," : "");
            json_str(out, g.kinds[f->kind].name);
            fputs(",\"target\":", out);
            json_str(out, f->target);
            fputs(",\"affected\":", out);
            json_str(out, f->affected);
            fprintf(out, ",\"start_rel_s\":%s,\"end_rel_s\":%s,\"detail\":", r1, r2);
            json_str(out, f->detail);
            fputc('}', out);
        } else {
            fprintf(out, "      near fault %s on %s from %s s to %s s (affected: %s)%s%s\n",
                    g.kinds[f->kind].name, f->target, r1, r2,
                    f->affected[0] != '\0' ? f->affected : "none", f->detail[0] != '\0' ? ": " : "",
                    f->detail);
        }
        comma = true;
    }
    if (json)
        fputs("]}", out);
}

/* ---- the report ---- */

static bool failed(void)
{
    return g.dup_ids != 0 || g.order_n != 0 || g.window_n != 0 || g.overlap_n != 0 ||
           g.undec_n != 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct figures {
    size_t logs, torn, incarnations, procs_with_logs;
} figures;

static figures count_figures(void)
{
    figures f = {g.nlogs, 0, 0, 0};
    for (size_t i = 0; i < g.nlogs; i++)
        f.torn += g.logs[i].torn;
    for (size_t i = 0; i < g.nprocs; i++) {
        f.incarnations += g.procs[i].incarnations;
        f.procs_with_logs += g.procs[i].incarnations != 0;
    }
    return f;
}

static void recovery_figures(const fkind *k, double *mn, double *med, double *mx)
{
    sort_n(k->rec_ns, k->nrec, sizeof *k->rec_ns, cmp_i64);
    *mn = (double)k->rec_ns[0] / 1e6;
    *mx = (double)k->rec_ns[k->nrec - 1] / 1e6;
    if (k->nrec % 2 == 1)
        *med = (double)k->rec_ns[k->nrec / 2] / 1e6;
    else
        *med = ((double)k->rec_ns[k->nrec / 2 - 1] + (double)k->rec_ns[k->nrec / 2]) / 2e6;
}

static void text_details(FILE *out)
{
    for (size_t i = 0; i < g.ndups; i++) {
        const dup_v *d = &g.dups[i];
        const logfile *l = d->nocc != 0 ? &g.logs[d->occ[0].log] : NULL;
        fprintf(out, "DUPLICATE %s ", d->kind == IDMS_TICKET ? "ticket" : "snowflake");
        id_fields(out, l, d->id, false);
        fprintf(out, ", %zu occurrences:\n", d->nocc);
        for (size_t k = 0; k < d->nocc && k < MAX_OCC; k++)
            occurrence(out, d->occ[k], false);
    }
    for (size_t i = 0; i < g.norders; i++) {
        const order_v *o = &g.orders[i];
        const logfile *l = &g.logs[o->wid.log];
        fprintf(out, "ORDER in %s: ", l->file);
        id_fields(out, l, o->id, false);
        fputs("\n  came after ", out);
        id_fields(out, l, o->prev, false);
        fputc('\n', out);
        occurrence(out, o->wprev, false);
        occurrence(out, o->wid, false);
    }
    for (size_t i = 0; i < g.nwindows; i++) {
        const window_v *w = &g.windows[i];
        const logfile *l = &g.logs[w->w.log];
        char lo[IDM_TIME_TEXT_MAX], hi[IDM_TIME_TEXT_MAX];
        iso_ms(w->lo_ms, lo);
        iso_ms(w->hi_ms, hi);
        fprintf(out, "TIME-WINDOW in %s: ", l->file);
        id_fields(out, l, w->id, false);
        fprintf(out,
                "\n  outside [%s, %s] (clock %s, offsets %" PRId64 "..%" PRId64
                " ms, drift %" PRId64 " ms, restart %" PRId64 " ms)\n",
                lo, hi, l->clock_name[0] != '\0' ? l->clock_name : "system", w->min_off_ms,
                w->max_off_ms, l->drift_ms, l->restart_ms);
        occurrence(out, w->w, false);
    }
    for (size_t i = 0; i < g.noverlaps; i++) {
        const overlap_v *o = &g.overlaps[i];
        const logfile *la = &g.logs[o->a.first.log], *lb = &g.logs[o->b.first.log];
        char worker[160];
        worker_text(la, o->a.first_id, worker, sizeof worker);
        char a1[IDM_TIME_TEXT_MAX], a2[IDM_TIME_TEXT_MAX], b1[IDM_TIME_TEXT_MAX],
            b2[IDM_TIME_TEXT_MAX];
        iso_ms(o->a.first_ms, a1);
        iso_ms(o->a.last_ms, a2);
        iso_ms(o->b.first_ms, b1);
        iso_ms(o->b.last_ms, b2);
        fprintf(out,
                "OVERLAP of worker %s in group '%s': %s holds it from %s to %s, %s from %s to %s\n",
                worker, g.groups[o->group].name, la->file, a1, a2, lb->file, b1, b2);
        const holding *hs[2] = {&o->a, &o->b};
        for (int k = 0; k < 2; k++) {
            const logfile *l = &g.logs[hs[k]->first.log];
            fputs("  first ", out);
            id_fields(out, l, hs[k]->first_id, false);
            fputc('\n', out);
            occurrence(out, hs[k]->first, false);
            fputs("  last ", out);
            id_fields(out, l, hs[k]->last_id, false);
            fputc('\n', out);
            occurrence(out, hs[k]->last, false);
        }
    }
    for (size_t i = 0; i < g.nundecs; i++) {
        const undec_v *u = &g.undecs[i];
        fprintf(out, "UNDECODABLE id %" PRIu64 " in %s: %s\n", u->id, g.logs[u->w.log].file,
                u->why);
        occurrence(out, u->w, false);
    }
}

static void text_report(FILE *out)
{
    figures f = count_figures();
    char a[IDM_TIME_TEXT_MAX], b[IDM_TIME_TEXT_MAX];
    iso_ns(g.run_start, a);
    iso_ns(g.run_end, b);
    fprintf(out, "run: seed %s, %s s, from %s to %s\n", g.seed, g.seconds, a, b);
    fprintf(out, "logs: %zu read, %zu torn tails ignored\n", f.logs, f.torn);
    fprintf(out, "processes: %zu, incarnations: %zu (events: %zu starts, %zu stops)\n",
            f.procs_with_logs, f.incarnations, g.starts, g.stops);
    fprintf(out, "ids checked: snowflake %" PRIu64 ", ticket %" PRIu64 "\n",
            g.ids_by_kind[IDMS_SNOWFLAKE], g.ids_by_kind[IDMS_TICKET]);
    fprintf(out, "faults: %zu", g.nfaults);
    for (size_t i = 0; i < g.nkinds; i++)
        fprintf(out, "%s%s %zu", i == 0 ? " (" : ", ", g.kinds[i].name, g.kinds[i].faults);
    fputs(g.nkinds != 0 ? ")\n" : "\n", out);
    fprintf(out,
            "duplicates: %" PRIu64 " (%" PRIu64 " extra occurrences; snowflake %" PRIu64
            ", ticket %" PRIu64 ")\n",
            g.dup_ids, g.dup_extra, g.dup_by_kind[IDMS_SNOWFLAKE], g.dup_by_kind[IDMS_TICKET]);
    fprintf(out, "order violations: %" PRIu64 "\n", g.order_n);
    fprintf(out, "time-window violations: %" PRIu64 "\n", g.window_n);
    fprintf(out, "overlaps: %" PRIu64 "\n", g.overlap_n);
    fprintf(out, "undecodable ids: %" PRIu64 "\n", g.undec_n);
    fputs("recovery (ms) by fault kind: count min median max, not recovered, unaffected\n", out);
    for (size_t i = 0; i < g.nkinds; i++) {
        const fkind *k = &g.kinds[i];
        fprintf(out, "  %s: %zu", k->name, k->nrec);
        if (k->nrec != 0) {
            double mn, med, mx;
            recovery_figures(k, &mn, &med, &mx);
            fprintf(out, " %.1f %.1f %.1f", mn, med, mx);
        } else {
            fputs(" - - -", out);
        }
        fprintf(out, ", not recovered %zu, unaffected %zu\n", k->unrecovered, k->unaffected);
        if (k->nrec != 0) {
            const fault *sf = &g.faults[k->slowest];
            char r0[REL_MAX], r1[REL_MAX];
            fprintf(out, "    slowest: %s, after the fault on %s from %s to %s s\n",
                    g.procs[sf->slow_proc].name, sf->target, rel_s(sf->t_start, false, r0),
                    rel_s(sf->t_end, false, r1));
        }
    }
    text_details(out);
    fprintf(out, "result: %s\n", failed() ? "FAIL" : "PASS");
}

static void json_details(FILE *out)
{
    fputs(",\"duplicate_ids\":[", out);
    for (size_t i = 0; i < g.ndups; i++) {
        const dup_v *d = &g.dups[i];
        fprintf(out, "%s{\"kind\":\"%s\",", i != 0 ? "," : "",
                d->kind == IDMS_TICKET ? "ticket" : "snowflake");
        id_fields(out, d->nocc != 0 ? &g.logs[d->occ[0].log] : NULL, d->id, true);
        fprintf(out, ",\"occurrences\":%zu,\"where\":[", d->nocc);
        for (size_t k = 0; k < d->nocc && k < MAX_OCC; k++) {
            if (k != 0)
                fputc(',', out);
            occurrence(out, d->occ[k], true);
        }
        fputs("]}", out);
    }
    fputs("],\"order_violations\":[", out);
    for (size_t i = 0; i < g.norders; i++) {
        const order_v *o = &g.orders[i];
        const logfile *l = &g.logs[o->wid.log];
        fprintf(out, "%s{\"prev\":{", i != 0 ? "," : "");
        id_fields(out, l, o->prev, true);
        fputs(",\"where\":", out);
        occurrence(out, o->wprev, true);
        fputs("},\"id\":{", out);
        id_fields(out, l, o->id, true);
        fputs(",\"where\":", out);
        occurrence(out, o->wid, true);
        fputs("}}", out);
    }
    fputs("],\"time_window_violations\":[", out);
    for (size_t i = 0; i < g.nwindows; i++) {
        const window_v *w = &g.windows[i];
        const logfile *l = &g.logs[w->w.log];
        fprintf(out, "%s{", i != 0 ? "," : "");
        id_fields(out, l, w->id, true);
        fprintf(out, ",\"lo_ms\":%" PRId64 ",\"hi_ms\":%" PRId64 ",\"min_offset_ms\":%" PRId64
                     ",\"max_offset_ms\":%" PRId64 ",\"where\":",
                w->lo_ms, w->hi_ms, w->min_off_ms, w->max_off_ms);
        occurrence(out, w->w, true);
        fputc('}', out);
    }
    fputs("],\"overlap_list\":[", out);
    for (size_t i = 0; i < g.noverlaps; i++) {
        const overlap_v *o = &g.overlaps[i];
        char worker[160];
        worker_text(&g.logs[o->a.first.log], o->a.first_id, worker, sizeof worker);
        fprintf(out, "%s{\"group\":", i != 0 ? "," : "");
        json_str(out, g.groups[o->group].name);
        fputs(",\"worker\":", out);
        json_str(out, worker);
        const holding *hs[2] = {&o->a, &o->b};
        for (int k = 0; k < 2; k++) {
            const logfile *l = &g.logs[hs[k]->first.log];
            fprintf(out, ",\"%s\":{\"first\":{", k == 0 ? "earlier" : "later");
            id_fields(out, l, hs[k]->first_id, true);
            fputs(",\"where\":", out);
            occurrence(out, hs[k]->first, true);
            fputs("},\"last\":{", out);
            id_fields(out, l, hs[k]->last_id, true);
            fputs(",\"where\":", out);
            occurrence(out, hs[k]->last, true);
            fputs("}}", out);
        }
        fputc('}', out);
    }
    fputs("],\"undecodable_list\":[", out);
    for (size_t i = 0; i < g.nundecs; i++) {
        const undec_v *u = &g.undecs[i];
        fprintf(out, "%s{\"id\":%" PRIu64 ",\"why\":", i != 0 ? "," : "", u->id);
        json_str(out, u->why);
        fputs(",\"where\":", out);
        occurrence(out, u->w, true);
        fputc('}', out);
    }
    fputc(']', out);
}

static void json_report(FILE *out)
{
    figures f = count_figures();
    fputs("{\"run\":{\"seed\":", out);
    json_str(out, g.seed);
    fputs(",\"seconds\":", out);
    json_str(out, g.seconds);
    fprintf(out, ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", g.run_start, g.run_end);
    fprintf(out, ",\"logs\":%zu,\"torn_tails\":%zu,\"processes\":%zu,\"incarnations\":%zu", f.logs,
            f.torn, f.procs_with_logs, f.incarnations);
    fprintf(out, ",\"starts\":%zu,\"stops\":%zu", g.starts, g.stops);
    fprintf(out, ",\"ids\":{\"snowflake\":%" PRIu64 ",\"ticket\":%" PRIu64 "}",
            g.ids_by_kind[IDMS_SNOWFLAKE], g.ids_by_kind[IDMS_TICKET]);
    fprintf(out, ",\"faults\":%zu,\"faults_by_kind\":{", g.nfaults);
    for (size_t i = 0; i < g.nkinds; i++) {
        if (i != 0)
            fputc(',', out);
        json_str(out, g.kinds[i].name);
        fprintf(out, ":%zu", g.kinds[i].faults);
    }
    fprintf(out,
            "},\"duplicates\":%" PRIu64 ",\"duplicates_by_kind\":{\"snowflake\":%" PRIu64
            ",\"ticket\":%" PRIu64 "},\"duplicate_occurrences\":%" PRIu64
            ",\"order\":%" PRIu64 ",\"time_window\":%" PRIu64 ",\"overlaps\":%" PRIu64
            ",\"undecodable\":%" PRIu64,
            g.dup_ids, g.dup_by_kind[IDMS_SNOWFLAKE], g.dup_by_kind[IDMS_TICKET], g.dup_extra,
            g.order_n, g.window_n, g.overlap_n, g.undec_n);
    fputs(",\"recovery_ms\":{", out);
    for (size_t i = 0; i < g.nkinds; i++) {
        const fkind *k = &g.kinds[i];
        if (i != 0)
            fputc(',', out);
        json_str(out, k->name);
        fprintf(out, ":{\"count\":%zu", k->nrec);
        if (k->nrec != 0) {
            double mn, med, mx;
            recovery_figures(k, &mn, &med, &mx);
            fprintf(out, ",\"min\":%.1f,\"median\":%.1f,\"max\":%.1f", mn, med, mx);
        }
        fprintf(out, ",\"not_recovered\":%zu,\"unaffected\":%zu}", k->unrecovered, k->unaffected);
    }
    fputc('}', out);
    json_details(out);
    fprintf(out, ",\"result\":\"%s\"}\n", failed() ? "fail" : "pass");
}

/* ---- main ---- */

static void usage(FILE *out)
{
    fputs("usage: syscheck [--json] [--max-report N] LOGDIR\n"
          "Check a whole-system fault run's id logs (LOGDIR/ids/*.log) against its\n"
          "events (LOGDIR/events.tsv): ids unique per kind, per worker increasing,\n"
          "within their minter's clock, no two holdings of a worker overlapping.\n"
          "Exit status: 0 clean, 1 a violation, 2 bad input.\n",
          out);
}

static void parse_args(int argc, char **argv)
{
    g.max_report = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (strcmp(a, "--json") == 0) {
            g.json = true;
        } else if (strcmp(a, "--max-report") == 0 && i + 1 < argc) {
            if (idm_u64_parse(argv[++i], &v) != 0 || v > 1000000)
                bad_input("--max-report takes a count from 0 to 1000000, not '%s'", argv[i]);
            g.max_report = (size_t)v;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (a[0] == '-' || g.dir != NULL) {
            usage(stderr);
            exit(2);
        } else {
            g.dir = a;
        }
    }
    if (g.dir == NULL) {
        usage(stderr);
        exit(2);
    }
}

static void free_all(void)
{
    for (size_t i = 0; i < g.nlogs; i++) {
        free(g.logs[i].path);
        idm_layout_free(g.logs[i].layout);
    }
    free(g.logs);
    for (size_t i = 0; i < g.ngroups; i++)
        free(g.groups[i].h);
    free(g.groups);
    for (size_t i = 0; i < g.nprocs; i++) {
        free(g.procs[i].name);
        free(g.procs[i].q);
    }
    free(g.procs);
    for (size_t i = 0; i < g.nclocks; i++) {
        free(g.clocks[i].name);
        free(g.clocks[i].v);
    }
    free(g.clocks);
    for (size_t i = 0; i < g.nfaults; i++) {
        free(g.faults[i].target);
        free(g.faults[i].affected);
        free(g.faults[i].detail);
    }
    free(g.faults);
    for (size_t i = 0; i < g.nkinds; i++) {
        free(g.kinds[i].name);
        free(g.kinds[i].rec_ns);
    }
    free(g.kinds);
    free(g.dups);
    free(g.orders);
    free(g.windows);
    free(g.overlaps);
    free(g.undecs);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    struct stat st;
    if (stat(g.dir, &st) != 0 || !S_ISDIR(st.st_mode))
        bad_input("%s is not a readable directory", g.dir);
    g.in_dir = true;
    read_events();
    list_logs();
    make_queries();

    /* Room for every id of each kind: a file of size s holds at most
     * (s - header) / 8 of them (untouched pages cost no memory). */
    idvec ids[3];
    memset(ids, 0, sizeof ids);
    for (size_t i = 0; i < g.nlogs; i++)
        if (g.logs[i].kind != 0)
            ids[g.logs[i].kind].cap += (g.logs[i].size - sizeof(idms_header)) / sizeof(uint64_t);
    for (uint32_t k = IDMS_SNOWFLAKE; k <= IDMS_TICKET; k++)
        ids[k].v = xmalloc(ids[k].cap * sizeof(uint64_t));
    for (uint32_t i = 0; i < g.nlogs; i++)
        scan_log(i, &ids[g.logs[i].kind != 0 ? g.logs[i].kind : IDMS_SNOWFLAKE]);
    g.ids_by_kind[IDMS_SNOWFLAKE] = ids[IDMS_SNOWFLAKE].n;
    g.ids_by_kind[IDMS_TICKET] = ids[IDMS_TICKET].n;
    if (ids[IDMS_SNOWFLAKE].n + ids[IDMS_TICKET].n == 0)
        bad_input("ids/ holds no acknowledged id (%zu logs): a run that checked nothing cannot "
                  "pass",
                  g.nlogs);

    check_unique(IDMS_SNOWFLAKE, &ids[IDMS_SNOWFLAKE]);
    check_unique(IDMS_TICKET, &ids[IDMS_TICKET]);
    for (size_t i = 0; i < g.ngroups; i++)
        if (g.groups[i].kind == IDMS_SNOWFLAKE)
            check_holdings(i);
    settle_recovery();

    if (g.json)
        json_report(stdout);
    else
        text_report(stdout);
    int rc = failed() ? 1 : 0;
    free_all();
    if (fflush(stdout) != 0) {
        fprintf(stderr, "syscheck: cannot write the report: %s\n", strerror(errno));
        return 2;
    }
    return rc;
}
