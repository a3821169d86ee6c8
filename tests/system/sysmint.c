/* SPDX-License-Identifier: MIT */
/*
 * sysmint: the minting processes and clients of the whole-system fault suite
 * (tests/system/fleet.py starts them). Each logs every id it was handed, as
 * tests/system/syslog.h says, for syscheck to check afterwards.
 *
 *   sysmint lib  --name N --logdir D --incarnation I --url URL --state-dir S
 *                [--node NAME=V]... [--layout L] [--ttl MS] [--policy P]
 *                [--clock-file F --clock-name C] [--batch B] [--rate R]
 *       a minter on the library: a leased generator (<idmint/leased.h>),
 *       re-claiming after a loss, minting batches of 1..B ids (and single
 *       ids) at about R ids a second.
 *   sysmint http --name N --logdir D --inc-file F --url BASE [--path P]
 *                [--kind snowflake|ticket] [--layout L] [--drift MS]
 *                [--clock-name C] [--batch B] [--rate R]
 *       a client of one idmintd: GET BASE P?count=K&format=text, K random in
 *       1..B (a single id, count left out, one request in four). The server
 *       is the minter: its incarnation is the number in F (the driver
 *       writes it before each start), read after each answer.
 *   sysmint cli  --name N --logdir D --idmint PATH --count K [--pid-file F]
 *                [--layout L] [--drift MS] [--pause MS] -- ARGS...
 *       runs `PATH next -n K ARGS...` again and again (each run an
 *       incarnation), logging the ids it prints; F holds the running
 *       child's pid, so the nemesis can kill the minter itself.
 *
 * All run until SIGTERM or SIGINT, then finish the record in hand and exit
 * 0. Errors while minting (refusals under a fault) are counted and printed
 * now and then on stderr, never fatal: the nemesis causes them on purpose.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <idmint/idmint.h>
#include <idmint/leased.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "syslog.h"

#define MAX_BATCH 100000
#define MAX_NODES 4

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static const char *g_name = "sysmint";

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%lld.%03ld %s: %s\n", (long long)ts.tv_sec, ts.tv_nsec / 1000000, g_name,
            line);
}

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", g_name, line);
    exit(2);
}

static int64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !g_stop) {
    }
}

/* A small xorshift: the sizes of batches, nothing that matters. */
static uint64_t g_rng = 88172645463325252ULL;

static uint64_t rnd(uint64_t n)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return n ? g_rng % n : 0;
}

/* ------------------------------------------------------------------ options */

typedef struct opts {
    const char *mode, *name, *logdir, *url, *state_dir, *layout, *policy;
    const char *clock_file, *clock_name, *inc_file, *path, *idmint, *pid_file;
    const char *node[MAX_NODES];
    int nodes;
    unsigned incarnation;
    int kind;
    int64_t ttl_ms, drift_ms, restart_ms, pause_ms;
    uint64_t batch, rate, count;
    char **cli_args;
    int cli_argc;
} opts;

static uint64_t num(const char *what, const char *s, uint64_t max)
{
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > max)
        die("--%s: '%s' is not a number from 0 to %" PRIu64, what, s, max);
    return v;
}

static void parse(opts *o, int argc, char **argv)
{
    static const struct option lo[] = {
        {"name", 1, 0, 'n'},        {"logdir", 1, 0, 'd'},     {"incarnation", 1, 0, 'i'},
        {"url", 1, 0, 'u'},         {"state-dir", 1, 0, 's'},  {"node", 1, 0, 'N'},
        {"layout", 1, 0, 'l'},      {"ttl", 1, 0, 't'},        {"policy", 1, 0, 'p'},
        {"clock-file", 1, 0, 'c'},  {"clock-name", 1, 0, 'C'}, {"batch", 1, 0, 'b'},
        {"rate", 1, 0, 'r'},        {"inc-file", 1, 0, 'I'},   {"path", 1, 0, 'P'},
        {"kind", 1, 0, 'k'},        {"drift", 1, 0, 'D'},      {"restart", 1, 0, 'R'},
        {"idmint", 1, 0, 'x'},      {"count", 1, 0, 'K'},      {"pid-file", 1, 0, 'f'},
        {"pause", 1, 0, 'z'},       {"seed", 1, 0, 'S'},       {0, 0, 0, 0}};
    int c;
    memset(o, 0, sizeof *o);
    o->layout = "twitter";
    o->policy = "logical";
    o->path = "/v1/snowflake";
    o->kind = IDMS_SNOWFLAKE;
    o->ttl_ms = 3000;
    o->drift_ms = 10;
    o->batch = 64;
    o->rate = 20000;
    o->count = 1000;
    o->pause_ms = 50;
    o->incarnation = 1;
    if (argc < 2)
        die("usage: sysmint lib|http|cli OPTIONS (see the source's head)");
    o->mode = argv[1];
    optind = 2;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'n': o->name = optarg; g_name = optarg; break;
        case 'd': o->logdir = optarg; break;
        case 'i': o->incarnation = (unsigned)num("incarnation", optarg, UINT32_MAX); break;
        case 'u': o->url = optarg; break;
        case 's': o->state_dir = optarg; break;
        case 'N':
            if (o->nodes == MAX_NODES)
                die("--node: at most %d", MAX_NODES);
            o->node[o->nodes++] = optarg;
            break;
        case 'l': o->layout = optarg; break;
        case 't': o->ttl_ms = (int64_t)num("ttl", optarg, 3600000); break;
        case 'p': o->policy = optarg; break;
        case 'c': o->clock_file = optarg; break;
        case 'C': o->clock_name = optarg; break;
        case 'b': o->batch = num("batch", optarg, MAX_BATCH); break;
        case 'r': o->rate = num("rate", optarg, 100000000); break;
        case 'I': o->inc_file = optarg; break;
        case 'P': o->path = optarg; break;
        case 'k':
            if (strcmp(optarg, "snowflake") == 0)
                o->kind = IDMS_SNOWFLAKE;
            else if (strcmp(optarg, "ticket") == 0)
                o->kind = IDMS_TICKET;
            else
                die("--kind: '%s' is not snowflake or ticket", optarg);
            break;
        case 'D': o->drift_ms = (int64_t)num("drift", optarg, 86400000); break;
        case 'R': o->restart_ms = (int64_t)num("restart", optarg, 86400000); break;
        case 'x': o->idmint = optarg; break;
        case 'K': o->count = num("count", optarg, 10000000); break;
        case 'f': o->pid_file = optarg; break;
        case 'z': o->pause_ms = (int64_t)num("pause", optarg, 60000); break;
        case 'S': g_rng = num("seed", optarg, UINT64_MAX) | 1; break;
        default: die("bad option (see the source's head)");
        }
    }
    o->cli_args = argv + optind;
    o->cli_argc = argc - optind;
    if (!o->name || !o->logdir)
        die("--name and --logdir are required");
    if (o->batch == 0)
        die("--batch: at least 1");
}

/* --------------------------------------------------------------------- logs */

typedef struct idlog {
    int fd;
    unsigned incarnation;
    uint64_t ids, records;
    uint64_t *buf; /* record header + ids, written with one write(2) */
    size_t cap;    /* in uint64_t */
} idlog;

static void put_field(char *dst, size_t len, const char *src)
{
    memset(dst, 0, len);
    if (src)
        strncpy(dst, src, len - 1);
}

static void log_open(idlog *lg, const opts *o, unsigned inc, const char *group)
{
    char path[PATH_MAX];
    idms_header h;
    (void)mkdir(o->logdir, 0755);
    snprintf(path, sizeof path, "%s/ids", o->logdir);
    (void)mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/ids/%s.%u.log", o->logdir, o->name, inc);
    lg->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (lg->fd < 0)
        die("cannot make the log %s: %s", path, strerror(errno));
    memset(&h, 0, sizeof h);
    memcpy(h.magic, IDMS_MAGIC, 8);
    put_field(h.process, sizeof h.process, o->name);
    h.incarnation = inc;
    h.kind = (uint32_t)o->kind;
    put_field(h.layout, sizeof h.layout, o->kind == IDMS_SNOWFLAKE ? o->layout : "");
    h.drift_ms = o->drift_ms;
    h.restart_ms = o->restart_ms;
    put_field(h.clock, sizeof h.clock, o->clock_name);
    put_field(h.group, sizeof h.group, group);
    if (write(lg->fd, &h, sizeof h) != (ssize_t)sizeof h)
        die("cannot write the log %s: %s", path, strerror(errno));
    lg->incarnation = inc;
    if (!lg->buf) {
        lg->cap = 3 + MAX_BATCH;
        lg->buf = malloc(lg->cap * sizeof *lg->buf);
        if (!lg->buf)
            die("out of memory");
    }
}

static void log_close(idlog *lg)
{
    if (lg->fd >= 0)
        close(lg->fd);
    lg->fd = -1;
}

static void log_rec(idlog *lg, int64_t t0, int64_t t1, const uint64_t *ids, uint32_t n,
                    uint32_t flags)
{
    idms_record r = {t0, t1, n, flags};
    size_t bytes = sizeof r + (size_t)n * sizeof *ids;
    _Static_assert(sizeof r == 24, "idms_record is 24 bytes");
    if (n == 0)
        return;
    memcpy(lg->buf, &r, sizeof r);
    memcpy((char *)lg->buf + sizeof r, ids, (size_t)n * sizeof *ids);
    if (write(lg->fd, lg->buf, bytes) != (ssize_t)bytes)
        die("cannot write a record: %s", strerror(errno));
    lg->ids += n;
    lg->records++;
}

/* Keep about rate ids a second: sleep while ahead of the schedule. */
typedef struct pacer {
    int64_t start_ns;
    uint64_t done, rate;
} pacer;

static void pace(pacer *p, uint64_t n)
{
    int64_t due, now;
    p->done += n;
    if (p->rate == 0)
        return;
    due = p->start_ns + (int64_t)(p->done * 1000000000.0 / (double)p->rate);
    now = mono_ns();
    if (due > now + 1000000)
        sleep_ms((due - now) / 1000000);
    else if (now - due > 1000000000) /* far behind (a fault): no burst after */
        p->start_ns += now - due - 1000000000;
}

/* Errors while minting: counted, one line a second at most. */
typedef struct errs {
    uint64_t n;
    int64_t last_say;
} errs;

__attribute__((format(printf, 2, 3))) static void err_note(errs *e, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int64_t now = mono_ns();
    e->n++;
    if (now - e->last_say < 1000000000)
        return;
    e->last_say = now;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    say("%s (%" PRIu64 " refusals so far)", line, e->n);
}

/* ------------------------------------------------------------ offset clock */

/* The system clock plus a signed ms offset read from a file every 20 ms, as
 * idmintd's clock=offset-file: does (the nemesis writes the file). */
typedef struct offclock {
    idm_clock clock;
    const char *path;
    _Atomic int64_t offset_ns;
    pthread_t th;
} offclock;

static idm_wall_ns oc_wall(void *ctx)
{
    offclock *oc = ctx;
    return real_ns() + atomic_load_explicit(&oc->offset_ns, memory_order_relaxed);
}

static idm_mono_ns oc_mono(void *ctx)
{
    (void)ctx;
    return mono_ns();
}

static void oc_sleep(void *ctx, int64_t ns)
{
    const idm_clock *sys = idm_clock_system();
    (void)ctx;
    sys->sleep_ns(sys->ctx, ns);
}

static void oc_read(offclock *oc)
{
    char buf[64];
    char *end;
    long long ms;
    ssize_t n;
    int fd = open(oc->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    errno = 0;
    ms = strtoll(buf, &end, 10);
    if (errno == 0 && end != buf && (*end == '\n' || *end == '\0'))
        atomic_store(&oc->offset_ns, (int64_t)ms * 1000000);
}

static void *oc_loop(void *arg)
{
    offclock *oc = arg;
    for (;;) {
        oc_read(oc);
        sleep_ms(20);
    }
    return NULL;
}

static const idm_clock *oc_start(offclock *oc, const char *path)
{
    oc->path = path;
    oc->clock = (idm_clock){oc, oc_wall, oc_mono, oc_sleep};
    oc_read(oc);
    if (pthread_create(&oc->th, NULL, oc_loop, oc) != 0)
        die("cannot start the clock's thread");
    pthread_detach(oc->th);
    return &oc->clock;
}

/* ---------------------------------------------------------------- lib mode */

static void on_event(void *ctx, const char *line)
{
    (void)ctx;
    say("%s", line);
}

static idm_backwards_policy policy_of(const char *p)
{
    if (strcmp(p, "logical") == 0)
        return IDM_BACKWARDS_LOGICAL;
    if (strcmp(p, "refuse") == 0)
        return IDM_BACKWARDS_REFUSE;
    if (strcmp(p, "wait") == 0)
        return IDM_BACKWARDS_WAIT;
    if (strcmp(p, "change-worker") == 0)
        return IDM_BACKWARDS_CHANGE_WORKER;
    die("--policy: '%s' is not logical, refuse, wait or change-worker", p);
}

static int run_lib(const opts *o)
{
    static offclock oc;
    idm_leased_opts lo;
    idm_layout *layout = NULL;
    idm_leased *lg = NULL;
    idlog log = {.fd = -1};
    errs e = {0};
    pacer pc = {mono_ns(), 0, o->rate};
    uint64_t *ids = malloc(MAX_BATCH * sizeof *ids);
    int rc;
    if (!o->url || !o->state_dir || !ids)
        die("lib: --url and --state-dir are required");
    if ((rc = idm_layout_from_spec(&layout, o->layout, NULL)) != 0)
        die("--layout '%s': %s", o->layout, idm_error_detail());
    idm_leased_opts_init(&lo);
    lo.lease.url = o->url;
    lo.lease.ttl_ms = o->ttl_ms;
    lo.gen.layout = layout;
    lo.gen.backwards = policy_of(o->policy);
    lo.gen.max_drift_ms = o->drift_ms;
    if (o->clock_file)
        lo.gen.clock = oc_start(&oc, o->clock_file);
    for (int i = 0; i < o->nodes; i++) {
        char name[64];
        const char *eq = strchr(o->node[i], '=');
        if (!eq || (size_t)(eq - o->node[i]) >= sizeof name)
            die("--node '%s': want NAME=VALUE", o->node[i]);
        memcpy(name, o->node[i], (size_t)(eq - o->node[i]));
        name[eq - o->node[i]] = '\0';
        if (idm_snowflake_opts_node(&lo.gen, name, num("node", eq + 1, UINT32_MAX)) != 0)
            die("--node '%s': %s", o->node[i], idm_error_detail());
    }
    lo.field = "worker";
    lo.state_dir = o->state_dir;
    lo.reclaim = true;
    lo.on_event = on_event;
    if ((rc = idm_leased_open(&lg, &lo)) != 0)
        die("cannot open the leased generator: %s: %s", idm_strerror(rc),
            idm_error_detail());
    log_open(&log, o, o->incarnation, "snowflake");
    say("minting (incarnation %u)", o->incarnation);
    while (!g_stop) {
        uint32_t n = rnd(4) == 0 ? 1 : (uint32_t)(1 + rnd(o->batch));
        int64_t t0 = real_ns(), t1;
        rc = n == 1 ? idm_leased_next(lg, ids) : idm_leased_next_batch(lg, ids, n);
        t1 = real_ns();
        if (rc != 0) {
            err_note(&e, "refused: %s: %s", idm_strerror(rc), idm_error_detail());
            sleep_ms(5);
            continue;
        }
        log_rec(&log, t0, t1, ids, n, n == 1 ? 0 : IDMS_F_BATCH);
        pace(&pc, n);
    }
    rc = idm_leased_close(lg);
    say("stopped: %" PRIu64 " ids in %" PRIu64 " records, %" PRIu64 " refusals; close: %s",
        log.ids, log.records, e.n, rc ? idm_strerror(rc) : "ok");
    log_close(&log);
    idm_layout_free(layout);
    free(ids);
    free(log.buf);
    return 0;
}

/* --------------------------------------------------------------- http mode */

typedef struct body {
    char *p;
    size_t len, cap;
} body;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t n = size * nmemb;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, ptr, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

/* The ids of a text answer, one a line; -1 if anything else is in it. */
static int parse_ids(const char *s, uint64_t *ids, uint32_t max, uint32_t *n)
{
    *n = 0;
    while (*s) {
        char *end;
        unsigned long long v;
        if (*n == max || *s < '0' || *s > '9')
            return -1;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\n')
            return -1;
        ids[(*n)++] = v;
        s = end + 1;
    }
    return 0;
}

static unsigned read_inc(const char *path)
{
    char buf[32];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return (unsigned)strtoul(buf, NULL, 10);
}

static int run_http(const opts *o)
{
    CURL *h;
    body b = {0};
    idlog log = {.fd = -1};
    errs e = {0};
    pacer pc = {mono_ns(), 0, o->rate};
    uint64_t *ids = malloc(MAX_BATCH * sizeof *ids);
    char url[2048];
    if (!o->url || !o->inc_file || !ids)
        die("http: --url and --inc-file are required");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(h = curl_easy_init()))
        die("cannot start libcurl");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    while (!g_stop) {
        uint32_t n = rnd(4) == 0 ? 1 : (uint32_t)(1 + rnd(o->batch)), got;
        long status = 0;
        int64_t t0, t1;
        unsigned inc;
        CURLcode cc;
        if (n == 1)
            snprintf(url, sizeof url, "%s%s?format=text", o->url, o->path);
        else
            snprintf(url, sizeof url, "%s%s?count=%u&format=text", o->url, o->path, n);
        curl_easy_setopt(h, CURLOPT_URL, url);
        b.len = 0;
        t0 = real_ns();
        cc = curl_easy_perform(h);
        t1 = real_ns();
        inc = read_inc(o->inc_file);
        if (cc == CURLE_OK)
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (cc != CURLE_OK || status != 200) {
            if (cc != CURLE_OK)
                err_note(&e, "%s", curl_easy_strerror(cc));
            else
                err_note(&e, "HTTP %ld: %.200s", status, b.p ? b.p : "");
            sleep_ms(10);
            continue;
        }
        if (parse_ids(b.p ? b.p : "", ids, MAX_BATCH, &got) != 0 || got != n)
            die("answer to %s is not %u ids, one a line: '%.200s'", url, n, b.p ? b.p : "");
        if (inc == 0)
            die("--inc-file %s holds no incarnation", o->inc_file);
        if (log.fd < 0 || inc != log.incarnation) {
            log_close(&log);
            log_open(&log, o, inc, o->kind == IDMS_SNOWFLAKE ? "snowflake" : "tickets");
        }
        log_rec(&log, t0, t1, ids, got, n == 1 ? 0 : IDMS_F_BATCH);
        pace(&pc, n);
    }
    say("stopped: %" PRIu64 " ids in %" PRIu64 " records of the last log, %" PRIu64 " refusals",
        log.ids, log.records, e.n);
    log_close(&log);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    free(b.p);
    free(ids);
    free(log.buf);
    return 0;
}

/* ---------------------------------------------------------------- cli mode */

static void write_pid(const char *path, pid_t pid)
{
    char tmp[PATH_MAX], buf[32];
    int fd, len;
    if (!path)
        return;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    len = snprintf(buf, sizeof buf, "%d\n", (int)pid);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, buf, (size_t)len) != len || close(fd) != 0 || rename(tmp, path) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

/* One run of `idmint next`: its ids logged in records of up to 4096, each
 * with t_send = the time before the run started. 0 if it exited 0. */
static int cli_run(const opts *o, idlog *log, uint64_t *ids, errs *e)
{
    int pfd[2], status;
    pid_t pid;
    FILE *in;
    char line[64], count[32];
    uint32_t n = 0;
    int64_t t0;
    char **argv = calloc((size_t)o->cli_argc + 5, sizeof *argv);
    if (!argv || pipe2(pfd, O_CLOEXEC) != 0)
        die("cannot start a run: %s", strerror(errno));
    snprintf(count, sizeof count, "%" PRIu64, o->count);
    argv[0] = (char *)o->idmint;
    argv[1] = "next";
    argv[2] = "-n";
    argv[3] = count;
    for (int i = 0; i < o->cli_argc; i++)
        argv[4 + i] = o->cli_args[i];
    t0 = real_ns();
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(pfd[1], 1);
        execv(o->idmint, argv);
        _exit(127);
    }
    free(argv);
    close(pfd[1]);
    write_pid(o->pid_file, pid);
    in = fdopen(pfd[0], "r");
    if (!in)
        die("fdopen: %s", strerror(errno));
    while (fgets(line, sizeof line, in)) {
        char *end;
        errno = 0;
        ids[n] = strtoull(line, &end, 10);
        if (errno != 0 || end == line || *end != '\n')
            die("a run printed '%s', not an id", line);
        if (++n == 4096) {
            log_rec(log, t0, real_ns(), ids, n, IDMS_F_CLI | IDMS_F_BATCH);
            n = 0;
        }
    }
    log_rec(log, t0, real_ns(), ids, n, IDMS_F_CLI | IDMS_F_BATCH);
    fclose(in);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    write_pid(o->pid_file, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status))
        err_note(e, "run %u killed by signal %d", log->incarnation, WTERMSIG(status));
    else
        err_note(e, "run %u exited %d", log->incarnation, WEXITSTATUS(status));
    return -1;
}

static int run_cli(const opts *o)
{
    idlog log = {.fd = -1};
    errs e = {0};
    uint64_t *ids = malloc(4096 * sizeof *ids);
    uint64_t ok = 0, total = 0;
    if (!o->idmint || !ids)
        die("cli: --idmint is required");
    for (unsigned inc = o->incarnation; !g_stop; inc++) {
        log_open(&log, o, inc, "snowflake");
        if (cli_run(o, &log, ids, &e) == 0)
            ok++;
        total += log.ids;
        log.ids = 0;
        log_close(&log);
        sleep_ms(o->pause_ms);
    }
    say("stopped: %" PRIu64 " ids, %" PRIu64 " runs exited 0, %" PRIu64 " did not", total, ok,
        e.n);
    free(ids);
    free(log.buf);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    parse(&o, argc, argv);
    if (strcmp(o.mode, "lib") == 0)
        return run_lib(&o);
    if (strcmp(o.mode, "http") == 0)
        return run_http(&o);
    if (strcmp(o.mode, "cli") == 0)
        return run_cli(&o);
    die("mode '%s' is not lib, http or cli", o.mode);
}
