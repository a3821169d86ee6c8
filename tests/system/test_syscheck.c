/* SPDX-License-Identifier: MIT */
/*
 * test_syscheck: tests of the fault suite's checker. Each case writes a
 * synthetic LOGDIR (events.tsv and ids/NAME.INC.log, in syslog.h's format)
 * into a temporary directory, runs the checker on it and checks its exit
 * status and the lines of its report that the case is about: a clean fleet
 * passes with the right figures, and each kind of violation fails with its
 * count.
 *
 * usage: test_syscheck [SYSCHECK]
 *        (else $IDM_SYSCHECK: the checker program to run)
 *        test_syscheck --generate DIR N
 *        writes a clean synthetic fleet of N snowflake ids (and N/20 ticket
 *        ids) into DIR, for measuring the checker on a large run.
 */
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/idmint.h>

#include "syslog.h"

#define NS_PER_MS INT64_C(1000000)
/* The runs' origin: 2026-01-01T00:00:00Z. Times below are ms after it. */
#define T0_MS INT64_C(1767225600000)
#define OUT_MAX (256 * 1024)

static const char *g_checker;
static char g_root[4096];
static int g_failed, g_cases;
static idm_layout *g_twitter, *g_sonyflake;
static char g_out[OUT_MAX];

static int64_t ns(int64_t ms)
{
    return (T0_MS + ms) * NS_PER_MS;
}

__attribute__((format(printf, 1, 2))) _Noreturn static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("test_syscheck: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* ---- writing a LOGDIR ---- */

typedef struct fleet {
    char dir[4300];
    FILE *events;
} fleet;

__attribute__((format(printf, 2, 3))) static void event(fleet *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f->events, fmt, ap);
    va_end(ap);
    fputc('\n', f->events);
}

/* A LOGDIR named name under the root, with its run line (60 s from T0). */
static void fleet_new(fleet *f, const char *name)
{
    char ids[4400], slug[64];
    size_t n = 0;
    for (; name[n] != '\0' && n + 1 < sizeof slug; n++)
        slug[n] = isalnum((unsigned char)name[n]) ? name[n] : '-';
    slug[n] = '\0';
    snprintf(f->dir, sizeof f->dir, "%s/%s", g_root, slug);
    snprintf(ids, sizeof ids, "%s/ids", f->dir);
    if (mkdir(f->dir, 0755) != 0 || mkdir(ids, 0755) != 0)
        die("cannot make %s: %s", ids, strerror(errno));
    snprintf(ids, sizeof ids, "%s/events.tsv", f->dir);
    f->events = fopen(ids, "w");
    if (f->events == NULL)
        die("cannot make %s: %s", ids, strerror(errno));
    event(f, "run\t%" PRId64 "\t%" PRId64 "\t42\t60", ns(0), ns(60000));
}

static void fleet_close(fleet *f)
{
    if (f->events != NULL && fclose(f->events) != 0)
        die("cannot write %s/events.tsv", f->dir);
    f->events = NULL;
}

typedef struct logspec {
    const char *process;
    uint32_t incarnation;
    uint32_t kind;
    const char *layout;
    int64_t epoch_ms, drift_ms, restart_ms;
    const char *clock, *group;
} logspec;

static void put(char *dst, size_t len, const char *src)
{
    memset(dst, 0, len);
    memcpy(dst, src, strnlen(src, len));
}

static FILE *log_new(const fleet *f, const logspec *s)
{
    char path[4500];
    idms_header h;
    snprintf(path, sizeof path, "%s/ids/%s.%" PRIu32 ".log", f->dir, s->process, s->incarnation);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        die("cannot make %s: %s", path, strerror(errno));
    memset(&h, 0, sizeof h);
    memcpy(h.magic, IDMS_MAGIC, sizeof h.magic);
    put(h.process, sizeof h.process, s->process);
    h.incarnation = s->incarnation;
    h.kind = s->kind != 0 ? s->kind : IDMS_SNOWFLAKE;
    put(h.layout, sizeof h.layout,
        s->layout != NULL ? s->layout : h.kind == IDMS_SNOWFLAKE ? "twitter" : "");
    h.epoch_ms = s->epoch_ms;
    h.drift_ms = s->drift_ms;
    h.restart_ms = s->restart_ms;
    put(h.clock, sizeof h.clock, s->clock != NULL ? s->clock : "");
    put(h.group, sizeof h.group,
        s->group != NULL ? s->group : h.kind == IDMS_SNOWFLAKE ? "snowflake" : "tickets");
    if (fwrite(&h, sizeof h, 1, fp) != 1)
        die("cannot write %s", path);
    return fp;
}

/* The simplest log: twitter, drift 10 ms, the system clock. */
static FILE *log_simple(const fleet *f, const char *process, uint32_t inc)
{
    logspec s = {.process = process, .incarnation = inc, .drift_ms = 10};
    return log_new(f, &s);
}

static void rec(FILE *fp, int64_t send_ns, int64_t recv_ns, uint32_t flags, const uint64_t *ids,
                uint32_t n)
{
    idms_record r = {send_ns, recv_ns, n, flags};
    if (fwrite(&r, sizeof r, 1, fp) != 1 || fwrite(ids, sizeof *ids, n, fp) != n)
        die("cannot write a record");
}

/* One id in its own record: sent at ms, answered 0.5 ms later. */
static void rec1(FILE *fp, int64_t ms, uint64_t id)
{
    rec(fp, ns(ms), ns(ms) + NS_PER_MS / 2, 0, &id, 1);
}

static void log_close(FILE *fp)
{
    if (fclose(fp) != 0)
        die("cannot write a log");
}

static uint64_t compose(const idm_layout *l, int64_t ms, uint64_t a, uint64_t b, uint64_t seq)
{
    /* Node values by field index; the layouts here have two node fields at
     * most, given in order (a, then b). */
    uint64_t node[IDM_LAYOUT_MAX_FIELDS] = {0};
    size_t nf = idm_layout_field_count(l), k = 0;
    for (size_t i = 0; i < nf; i++) {
        idm_field_info fi;
        if (idm_layout_field(l, i, &fi) == 0 && fi.kind == IDM_FIELD_NODE)
            node[i] = k++ == 0 ? a : b;
    }
    uint64_t id;
    if (idm_layout_compose(l, T0_MS + ms, node, seq, &id) != 0)
        die("compose: %s", idm_error_detail());
    return id;
}

/* A twitter id at T0 + ms of datacenter dc, worker w. */
static uint64_t tw(int64_t ms, unsigned dc, unsigned w, unsigned seq)
{
    return compose(g_twitter, ms, dc, w, seq);
}

/* A holding: every step ms from first to last, a record of n ids of
 * (dc, w) at that ms, seqs from seq0 (a batch if n > 1). */
static void hold(FILE *fp, unsigned dc, unsigned w, int64_t first, int64_t last, int64_t step,
                 uint32_t n, unsigned seq0)
{
    uint64_t ids[64];
    for (int64_t ms = first; ms <= last; ms += step) {
        for (uint32_t i = 0; i < n; i++)
            ids[i] = tw(ms, dc, w, seq0 + i);
        rec(fp, ns(ms), ns(ms) + NS_PER_MS / 2, n > 1 ? IDMS_F_BATCH : 0, ids, n);
    }
}

/* ---- running the checker ---- */

/* Run the checker with args; its stdout and stderr in g_out; its status. */
static int run(const char *const *args)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        const char *argv[8];
        size_t n = 0;
        argv[n++] = g_checker;
        for (; args[n - 1] != NULL && n < 7; n++)
            argv[n] = args[n - 1];
        argv[n] = NULL;
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        close(pfd[0]);
        close(pfd[1]);
        execv(g_checker, (char *const *)argv);
        fprintf(stderr, "cannot run %s: %s\n", g_checker, strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(pfd[0], g_out + len, sizeof g_out - 1 - len)) > 0 ||
           (got < 0 && errno == EINTR))
        if (got > 0)
            len += (size_t)got;
    g_out[len] = '\0';
    close(pfd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

/* The checker's status on f's LOGDIR must be code and its output hold
 * every one of want (NULL-terminated), and none of unwanted. */
static void expect_args(const char *what, fleet *f, const char *opt, int code,
                        const char *const *want, const char *const *unwanted)
{
    fleet_close(f);
    const char *args[4] = {NULL, NULL, NULL, NULL};
    size_t n = 0;
    if (opt != NULL) {
        /* "--max-report 1" as two words */
        static char buf[64];
        snprintf(buf, sizeof buf, "%s", opt);
        char *sp = strchr(buf, ' ');
        args[n++] = buf;
        if (sp != NULL) {
            *sp = '\0';
            args[n++] = sp + 1;
        }
    }
    args[n] = f->dir;
    int rc = run(args);
    bool ok = rc == code;
    g_cases++;
    for (size_t i = 0; want != NULL && want[i] != NULL; i++)
        if (strstr(g_out, want[i]) == NULL) {
            fprintf(stderr, "  %s: no \"%s\" in the output\n", what, want[i]);
            ok = false;
        }
    for (size_t i = 0; unwanted != NULL && unwanted[i] != NULL; i++)
        if (strstr(g_out, unwanted[i]) != NULL) {
            fprintf(stderr, "  %s: \"%s\" in the output\n", what, unwanted[i]);
            ok = false;
        }
    if (rc != code)
        fprintf(stderr, "  %s: exit %d, expected %d\n", what, rc, code);
    if (!ok) {
        fprintf(stderr, "FAIL %s (%s)\n--- output ---\n%s--- end ---\n", what, f->dir, g_out);
        g_failed++;
    } else {
        printf("ok   %s\n", what);
    }
}

static void expect(const char *what, fleet *f, int code, const char *const *want)
{
    expect_args(what, f, NULL, code, want, NULL);
}

#define LINES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- the cases ---- */

/*
 * Two library minters, each with one worker: lib-a holds (1,1), lib-b
 * (1,2), from 1000 to 1990 ms, a record of 3 ids every 10 ms.
 */
static void base(fleet *f, const char *name)
{
    fleet_new(f, name);
    FILE *a = log_simple(f, "lib-a", 1), *b = log_simple(f, "lib-b", 1);
    hold(a, 1, 1, 1000, 1990, 10, 3, 0);
    hold(b, 1, 2, 1000, 1990, 10, 3, 0);
    log_close(a);
    log_close(b);
}

static void case_clean(void)
{
    fleet f;
    fleet_new(&f, "clean");
    /* lib-1 holds (1,1) until it is killed at 2000 ms; its second
     * incarnation takes (1,2) at 2100 ms. */
    FILE *l11 = log_simple(&f, "lib-1", 1);
    hold(l11, 1, 1, 1000, 1999, 1, 2, 0);
    log_close(l11);
    FILE *l12 = log_simple(&f, "lib-1", 2);
    hold(l12, 1, 2, 2100, 2999, 3, 1, 0);
    log_close(l12);
    /* lib-2 holds (1,3), paused from 1500 to 1700 ms, then is handed (1,1)
     * lib-1 left: a handoff with no overlap (1999 < 2500). */
    FILE *l2 = log_simple(&f, "lib-2", 1);
    hold(l2, 1, 3, 1000, 1499, 7, 4, 0);
    hold(l2, 1, 1, 2500, 3000, 5, 4, 0);
    log_close(l2);
    /* http-1's server runs on clock c1: 500 ms ahead, then 800 ms from
     * 3000 ms (real); its ids carry that time. */
    event(&f, "clock\t%" PRId64 "\tc1\t500", ns(-5000));
    event(&f, "clock\t%" PRId64 "\tc1\t800", ns(3000));
    logspec hs = {.process = "http-1", .incarnation = 1, .drift_ms = 10, .clock = "c1"};
    FILE *h = log_new(&f, &hs);
    for (int64_t ms = 1000; ms < 4000; ms += 50) {
        uint64_t id = tw(ms + (ms >= 3000 ? 800 : 500), 2, 1, 0);
        rec1(h, ms, id);
    }
    log_close(h);
    /* One whole CLI run: sent at 4000 ms, its last line read at 4300 ms. */
    FILE *c = log_simple(&f, "cli-1", 1);
    uint64_t ids[20];
    for (unsigned i = 0; i < 20; i++)
        ids[i] = tw(4010 + 10 * i, 3, 0, 0);
    rec(c, ns(4000), ns(4300), IDMS_F_CLI | IDMS_F_BATCH, ids, 20);
    log_close(c);
    /* Two ticket minters, disjoint ranges. */
    logspec ts = {.process = "seq-1", .incarnation = 1, .kind = IDMS_TICKET};
    FILE *t1 = log_new(&f, &ts);
    ts.process = "seq-2";
    FILE *t2 = log_new(&f, &ts);
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t a = 1 + i, b = 1001 + i;
        rec1(t1, 1000 + (int64_t)i, a);
        rec1(t2, 1000 + (int64_t)i, b);
    }
    log_close(t1);
    log_close(t2);
    /* Faults: lib-1 recovers 100.5 ms after its kill (its first answer at
     * 2100.5 ms); lib-2 800.5 ms after its pause (2500.5 ms); "ghost" never
     * mints; the leader fault delays no minter. */
    event(&f, "start\t%" PRId64 "\tlib-1\t1", ns(900));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tkill9\tlib-1\tlib-1\tkill -9, restart", ns(2000),
          ns(2000));
    event(&f, "stop\t%" PRId64 "\tlib-1\t1\tkill9", ns(2000));
    event(&f, "start\t%" PRId64 "\tlib-1\t2", ns(2001));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tpause\tlib-2\tlib-2\tSIGSTOP", ns(1500), ns(1700));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tpause\tghost\tghost\tSIGSTOP", ns(1500), ns(1700));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tleader\tetcd-2\t\tleader killed", ns(500), ns(600));
    expect("clean fleet passes", &f, 0,
           LINES("run: seed 42, 60 s, from 2026-01-01T00:00:00.000Z to 2026-01-01T00:01:00.000Z",
                 "logs: 7 read, 0 torn tails ignored", "processes: 6, incarnations: 7",
                 "ids checked: snowflake 3072, ticket 200",
                 "faults: 4 (kill9 1, pause 2, leader 1)", "duplicates: 0 (0 extra",
                 "order violations: 0", "time-window violations: 0", "overlaps: 0",
                 "  kill9: 1 100.5 100.5 100.5, not recovered 0, unaffected 0",
                 "  pause: 1 800.5 800.5 800.5, not recovered 1, unaffected 0",
                 "  leader: 0 - - -, not recovered 0, unaffected 1", "result: PASS"));
}

static void case_json(void)
{
    fleet f;
    base(&f, "json");
    expect_args("--json on a clean fleet", &f, "--json", 0,
                LINES("{\"run\":{\"seed\":\"42\"", "\"ids\":{\"snowflake\":600,\"ticket\":0}",
                      "\"duplicates\":0,", "\"overlaps\":0,", "\"result\":\"pass\"}"),
                NULL);
    fleet g2;
    base(&g2, "json-dup");
    FILE *t = log_simple(&g2, "lib-c", 1);
    rec1(t, 1500, tw(1500, 1, 1, 1)); /* also minted by lib-a at 1500 ms */
    log_close(t);
    expect_args("--json on a duplicate", &g2, "--json", 1,
                LINES("\"duplicates\":1,\"duplicates_by_kind\":{\"snowflake\":1,\"ticket\":0},",
                      "\"duplicate_ids\":[{\"kind\":\"snowflake\",\"id\":",
                      "\"worker\":\"datacenter=1,worker=1\",\"seq\":1,\"occurrences\":2",
                      "\"process\":\"lib-c\",\"incarnation\":1,\"file\":\"ids/lib-c.1.log\","
                      "\"record\":0",
                      "\"result\":\"fail\"}"),
                NULL);
}

static void case_dup_in_log(void)
{
    fleet f;
    base(&f, "dup-in-log");
    FILE *a = log_simple(&f, "lib-a", 2);
    rec1(a, 3000, tw(3000, 1, 5, 0));
    rec1(a, 3000, tw(3000, 1, 5, 0)); /* the same id again */
    log_close(a);
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tclock-back\tlib-a\tlib-a\t-2 s", ns(2995),
          ns(2999));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tkill9\tlib-b\tlib-b\t", ns(30000), ns(30000));
    /* Both occurrences, with their history and the nearby fault only. */
    expect_args("duplicate within a log fails", &f, NULL, 1,
                LINES("duplicates: 1 (1 extra occurrences;", "order violations: 1",
                      "DUPLICATE snowflake id ",
                      "(time 2026-01-01T00:00:03.000Z, worker datacenter=1,worker=5, seq 0), 2 "
                      "occurrences:",
                      "    in lib-a #2 record 0 (ids/lib-a.2.log): sent 2026-01-01T00:00:03.000Z "
                      "(+3.000 s), received 2026-01-01T00:00:03.000Z (+3.000 s)",
                      "    in lib-a #2 record 1 (ids/lib-a.2.log): sent 2026-01-01T00:00:03.000Z "
                      "(+3.000 s)",
                      "      near fault clock-back on lib-a from +2.995 s to +2.999 s (affected: "
                      "lib-a): -2 s",
                      "result: FAIL"),
                LINES("near fault kill9"));
}

static void case_dup_across_logs(void)
{
    fleet f;
    base(&f, "dup-across");
    FILE *c = log_simple(&f, "lib-c", 1);
    rec1(c, 1500, tw(1500, 1, 2, 2)); /* lib-b minted it at 1500 ms */
    log_close(c);
    expect("duplicate across logs fails", &f, 1,
           LINES("duplicates: 1 (1 extra occurrences;", "order violations: 0",
                 "time-window violations: 0", "overlaps: 1", "in lib-b #1 record 50",
                 "in lib-c #1 record 0", "result: FAIL"));
}

static void case_dup_tickets(void)
{
    fleet f;
    fleet_new(&f, "dup-tickets");
    logspec ts = {.process = "seq-1", .incarnation = 1, .kind = IDMS_TICKET};
    FILE *t1 = log_new(&f, &ts);
    ts.process = "seq-2";
    FILE *t2 = log_new(&f, &ts);
    uint64_t a[50], b[50];
    for (uint64_t i = 0; i < 50; i++) {
        a[i] = 100 + i;
        b[i] = 149 + i; /* 149 is in both */
    }
    rec(t1, ns(1000), ns(1001), IDMS_F_BATCH, a, 50);
    rec(t2, ns(1000), ns(1001), IDMS_F_BATCH, b, 50);
    log_close(t1);
    log_close(t2);
    expect("duplicate across two ticket logs fails", &f, 1,
           LINES("ids checked: snowflake 0, ticket 100",
                 "duplicates: 1 (1 extra occurrences; snowflake 0, ticket 1)",
                 "DUPLICATE ticket id 149, 2 occurrences:", "in seq-1 #1 record 0",
                 "in seq-2 #1 record 0", "result: FAIL"));
}

/* splitmix64: ids spread over all 64 bits. */
static uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Ticket ids over all 64 bits, three of them repeated; and for each 11-bit
 * digit of the checker's radix sort, an id D, then D with only that digit
 * changed, then D again in the other log: a sort that skipped or botched
 * that digit would leave the two D apart and miss them. */
static void case_dup_spread(void)
{
    fleet f;
    fleet_new(&f, "dup-spread");
    logspec ts = {.process = "seq-1", .incarnation = 1, .kind = IDMS_TICKET};
    FILE *t1 = log_new(&f, &ts);
    ts.process = "seq-2";
    FILE *t2 = log_new(&f, &ts);
    uint64_t a = 1, b = 2, ids[64], repeat[3] = {0, 0, 0};
    for (int r = 0; r < 200; r++) {
        for (int i = 0; i < 64; i++)
            ids[i] = mix(&a);
        if (r == 7 || r == 100 || r == 140)
            repeat[r == 7 ? 0 : r == 100 ? 1 : 2] = ids[r % 64];
        rec(t1, ns(1000 + r), ns(1001 + r), IDMS_F_BATCH, ids, 64);
        for (int i = 0; i < 64; i++)
            ids[i] = mix(&b);
        if (r == 150)
            memcpy(ids + 10, repeat, sizeof repeat);
        rec(t2, ns(1000 + r), ns(1001 + r), IDMS_F_BATCH, ids, 64);
    }
    for (unsigned d = 0; d < 6; d++) {
        uint64_t two[2];
        two[0] = mix(&a);
        two[1] = two[0] ^ (UINT64_C(1) << (11 * d + 3));
        rec(t1, ns(2000), ns(2001), IDMS_F_BATCH, two, 2);
        rec(t2, ns(2000), ns(2001), 0, two, 1);
    }
    log_close(t1);
    log_close(t2);
    expect("duplicates among ids over all 64 bits fail", &f, 1,
           LINES("ids checked: snowflake 0, ticket 25618", "duplicates: 9 (9 extra occurrences;",
                 "in seq-2 #1 record 150"));
}

/* Recovery: from T_END to the first answer at or after it, the largest over
 * the affected processes; min, median (of an even count: the mean of the
 * middle two) and max per kind. */
static void case_recovery(void)
{
    fleet f;
    base(&f, "recovery");
    FILE *c = log_simple(&f, "lib-c", 1);
    rec1(c, 1525, tw(1525, 2, 2, 0)); /* answered at 1525.5 ms */
    log_close(c);
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tpause\tlib-a\tlib-a\t", ns(1200), ns(1500));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tpause\tlib-a\tlib-a\t", ns(1200), ns(1503));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tpause\tlib-a\tlib-a\t", ns(1200), ns(1991));
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tleader\tzk-1\tlib-a,lib-c\t", ns(1200),
          ns(1520));
    /* healed the very ns lib-a's answer came */
    event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tfreeze\tlib-a\tlib-a\t", ns(1200),
          ns(1500) + NS_PER_MS / 2);
    expect("recovery times", &f, 0,
           LINES("faults: 5 (pause 3, leader 1, freeze 1)",
                 "  pause: 2 0.5 4.0 7.5, not recovered 1, unaffected 0",
                 "  leader: 1 5.5 5.5 5.5, not recovered 0, unaffected 0",
                 "  freeze: 1 0.0 0.0 0.0, not recovered 0, unaffected 0", "result: PASS"));
}

static void case_undecodable(void)
{
    fleet f;
    base(&f, "undecodable");
    FILE *c = log_simple(&f, "lib-c", 1);
    rec1(c, 3000, tw(3000, 1, 7, 0) | UINT64_C(1) << 63); /* twitter has 63 bits */
    log_close(c);
    expect("an id with bits above its layout fails", &f, 1,
           LINES("undecodable ids: 1", "UNDECODABLE id 11229887762876493824 in ids/lib-c.1.log",
                 "has bits above the layout's 63", "result: FAIL"));
}

static void case_order(void)
{
    fleet f;
    base(&f, "order");
    FILE *c = log_simple(&f, "lib-c", 1);
    uint64_t ids[2] = {tw(3000, 1, 5, 5), tw(3000, 1, 5, 3)}; /* down within a record */
    rec(c, ns(3000), ns(3000) + 1, IDMS_F_BATCH, ids, 2);
    log_close(c);
    expect("order violation fails", &f, 1,
           LINES("duplicates: 0", "order violations: 1", "time-window violations: 0",
                 "overlaps: 0", "ORDER in ids/lib-c.1.log: id ", "seq 3)\n  came after id ",
                 "result: FAIL"));
}

/* A log of its own (worker (4,1)) whose record, sent at send and answered
 * at recv (ms), holds ids at the times given. */
static void window_case(const char *name, const logspec *s, int64_t send, int64_t recv,
                        const int64_t *times, size_t n, const char *clock_lines, int code,
                        const char *count)
{
    fleet f;
    base(&f, name);
    if (clock_lines != NULL)
        fputs(clock_lines, f.events);
    FILE *fp = log_new(&f, s);
    const idm_layout *l =
        s->layout != NULL && strcmp(s->layout, "sonyflake") == 0 ? g_sonyflake : g_twitter;
    uint64_t ids[8];
    for (size_t i = 0; i < n; i++)
        ids[i] = compose(l, times[i], 4, 1, i);
    rec(fp, ns(send), ns(recv), n > 1 ? IDMS_F_BATCH : 0, ids, (uint32_t)n);
    log_close(fp);
    expect(name, &f, code, LINES(count, "order violations: 0", "overlaps: 0"));
}

static void case_windows(void)
{
    logspec s = {.process = "lib-t", .incarnation = 1, .drift_ms = 10};
    /* sent at 2000.0 ms, answered at 2000.5 ms: [2000, 2000 + 10] */
    int64_t in[] = {2000, 2010}, before[] = {1999}, after[] = {2011};
    window_case("window: both ends pass", &s, 2000, 2000, in, 2, NULL, 0,
                "time-window violations: 0");
    window_case("window: before t_send fails", &s, 2000, 2000, before, 1, NULL, 1,
                "time-window violations: 1");
    window_case("window: past t_recv + drift fails", &s, 2000, 2000, after, 1, NULL, 1,
                "time-window violations: 1");
    /* restart_ms above drift_ms: the larger allowance counts */
    logspec r = s;
    r.restart_ms = 50;
    int64_t rin[] = {2050}, rout[] = {2051};
    window_case("window: restart allowance passes", &r, 2000, 2000, rin, 1, NULL, 0,
                "time-window violations: 0");
    window_case("window: past restart allowance fails", &r, 2000, 2000, rout, 1, NULL, 1,
                "time-window violations: 1");
    /* sonyflake's 10 ms tick: sent at 2005 ms, the id's tick starts at 2000 */
    logspec sf = s;
    sf.layout = "sonyflake";
    sf.group = "sonyflake"; /* a group is one layout */
    int64_t tin[] = {2000}, tout[] = {1990};
    window_case("window: floor to the tick passes", &sf, 2005, 2005, tin, 1, NULL, 0,
                "time-window violations: 0");
    window_case("window: a tick before fails", &sf, 2005, 2005, tout, 1, NULL, 1,
                "time-window violations: 1");
}

static void case_offset_clock(void)
{
    char lines[512];
    logspec s = {.process = "lib-t", .incarnation = 1, .drift_ms = 10, .clock = "c2"};
    /* c2 is 5 s ahead: [7000, 7000 + 10] for a record at 2000 ms */
    snprintf(lines, sizeof lines, "clock\t%" PRId64 "\tc2\t5000\n", ns(-1000));
    int64_t in[] = {7000, 7010}, lo[] = {6999}, hi[] = {7011};
    window_case("offset clock: just inside passes", &s, 2000, 2000, in, 2, lines, 0,
                "time-window violations: 0");
    window_case("offset clock: just below fails", &s, 2000, 2000, lo, 1, lines, 1,
                "time-window violations: 1");
    window_case("offset clock: just above fails", &s, 2000, 2000, hi, 1, lines, 1,
                "time-window violations: 1");
    /* Set to 3 s 50 ms before the send: within the minter's read lag, so the
     * old 5 s may still be in use and so may the new 3 s. */
    int64_t both[] = {5000, 7010};
    snprintf(lines, sizeof lines, "clock\t%" PRId64 "\tc2\t5000\nclock\t%" PRId64 "\tc2\t3000\n",
             ns(-1000), ns(1950));
    window_case("offset clock: change within the lag passes", &s, 2000, 2000, both, 2, lines, 0,
                "time-window violations: 0");
    /* Set 150 ms before: beyond the lag, the old 5 s is over. */
    int64_t old[] = {7010};
    snprintf(lines, sizeof lines, "clock\t%" PRId64 "\tc2\t5000\nclock\t%" PRId64 "\tc2\t3000\n",
             ns(-1000), ns(1850));
    window_case("offset clock: change before the lag fails", &s, 2000, 2000, old, 1, lines, 1,
                "time-window violations: 1");
    /* A line with no clock name in the header does not apply. */
    logspec sys = s;
    sys.clock = "";
    window_case("offset clock: other clocks do not apply", &sys, 2000, 2000, in, 2, lines, 1,
                "time-window violations: 2");
}

static void case_overlaps(void)
{
    fleet f;
    /* lib-c takes (1,1) at 1990 ms, the ms lib-a last minted under it: equal
     * is an overlap (seqs 10 on, so no id repeats). */
    base(&f, "overlap-equal");
    FILE *c = log_simple(&f, "lib-c", 1);
    hold(c, 1, 1, 1990, 2100, 10, 2, 10);
    log_close(c);
    expect("overlap at the same ms fails", &f, 1,
           LINES("duplicates: 0", "order violations: 0", "time-window violations: 0",
                 "overlaps: 1",
                 "OVERLAP of worker datacenter=1,worker=1 in group 'snowflake': ids/lib-a.1.log "
                 "holds it from 2026-01-01T00:00:01.000Z to 2026-01-01T00:00:01.990Z, "
                 "ids/lib-c.1.log from 2026-01-01T00:00:01.990Z",
                 "result: FAIL"));
    base(&f, "overlap-next-ms");
    c = log_simple(&f, "lib-c", 1);
    hold(c, 1, 1, 1991, 2100, 10, 2, 0);
    log_close(c);
    expect("handoff at the next ms passes", &f, 0, LINES("overlaps: 0", "result: PASS"));
    /* Two short holdings inside lib-a's long one: both overlap it, though
     * the second does not overlap the first. */
    base(&f, "overlap-nested");
    c = log_simple(&f, "lib-c", 1);
    hold(c, 1, 1, 1101, 1201, 10, 1, 7);
    log_close(c);
    FILE *d = log_simple(&f, "lib-d", 1);
    hold(d, 1, 1, 1301, 1401, 10, 1, 7);
    log_close(d);
    expect("two holdings inside a third both overlap", &f, 1, LINES("overlaps: 2"));
    /* The same log leaving a worker and coming back in the same ms. */
    base(&f, "overlap-same-log");
    c = log_simple(&f, "lib-c", 1);
    uint64_t ids[3] = {tw(3000, 2, 9, 0), tw(3000, 2, 8, 0), tw(3000, 2, 9, 1)};
    rec(c, ns(3000), ns(3000) + 1, IDMS_F_BATCH, ids, 3);
    log_close(c);
    expect("a log's own holdings at the same ms overlap", &f, 1,
           LINES("order violations: 0", "overlaps: 1"));
    /* Other groups have workers of their own. */
    base(&f, "overlap-other-group");
    logspec s = {.process = "lib-c", .incarnation = 1, .drift_ms = 10, .group = "snowflake-2"};
    c = log_new(&f, &s);
    hold(c, 1, 1, 1001, 1991, 10, 1, 9);
    log_close(c);
    expect("the same worker in another group passes", &f, 0,
           LINES("overlaps: 0", "result: PASS"));
}

static void case_torn(void)
{
    fleet f;
    base(&f, "torn");
    char path[4500];
    snprintf(path, sizeof path, "%s/ids/lib-a.1.log", f.dir);
    FILE *a = fopen(path, "ab");
    idms_record r = {ns(2000), ns(2001), 5, IDMS_F_BATCH};
    uint64_t ids[2] = {tw(2000, 1, 1, 0), tw(2000, 1, 1, 1)};
    if (a == NULL || fwrite(&r, sizeof r, 1, a) != 1 || fwrite(ids, sizeof *ids, 2, a) != 2)
        die("cannot append to %s", path);
    log_close(a);
    /* lib-b's tail: half a record header. */
    snprintf(path, sizeof path, "%s/ids/lib-b.1.log", f.dir);
    FILE *b = fopen(path, "ab");
    if (b == NULL || fwrite(&r, 10, 1, b) != 1)
        die("cannot append to %s", path);
    log_close(b);
    /* lib-c was killed while writing its header. */
    snprintf(path, sizeof path, "%s/ids/lib-c.1.log", f.dir);
    FILE *c = fopen(path, "wb");
    if (c == NULL || fwrite(IDMS_MAGIC, 1, 5, c) != 5)
        die("cannot write %s", path);
    log_close(c);
    expect("torn tails are ignored", &f, 0,
           LINES("logs: 3 read, 3 torn tails ignored", "ids checked: snowflake 600, ticket 0",
                 "result: PASS"));
}

static void write_bytes(const char *path, long at, const void *bytes, size_t n)
{
    FILE *fp = fopen(path, "r+b");
    if (fp == NULL || fseek(fp, at, SEEK_SET) != 0 || fwrite(bytes, 1, n, fp) != n)
        die("cannot patch %s", path);
    log_close(fp);
}

static void case_bad_input(void)
{
    fleet f;
    char path[4500];

    base(&f, "bad-magic");
    snprintf(path, sizeof path, "%s/ids/lib-b.1.log", f.dir);
    write_bytes(path, 0, "IDMSYSL2", 8);
    expect("bad magic is bad input", &f, 2,
           LINES("ids/lib-b.1.log: bad magic \"IDMSYSL2\" (expected IDMSYSL1)"));

    base(&f, "bad-kind");
    snprintf(path, sizeof path, "%s/ids/lib-b.1.log", f.dir);
    uint32_t kind = 7;
    write_bytes(path, (long)offsetof(idms_header, kind), &kind, sizeof kind);
    expect("an unknown kind is bad input", &f, 2, LINES("ids/lib-b.1.log: unknown kind 7"));

    base(&f, "bad-layout");
    logspec s = {.process = "lib-c", .incarnation = 1, .layout = "twittr"};
    log_close(log_new(&f, &s));
    expect("an unknown layout is bad input", &f, 2,
           LINES("ids/lib-c.1.log: bad layout 'twittr'"));

    base(&f, "bad-text-layout");
    s.layout = "time:41@1ms,worker:10,seq:12"; /* a text form has no preset epoch */
    log_close(log_new(&f, &s));
    expect("a text layout with no epoch is bad input", &f, 2,
           LINES("ids/lib-c.1.log: bad layout 'time:41@1ms,worker:10,seq:12'", "needs an epoch"));

    base(&f, "mixed-layouts");
    s.layout = "discord";
    log_close(log_new(&f, &s));
    expect("two layouts in one group are bad input", &f, 2,
           LINES("group 'snowflake' mixes layouts"));

    base(&f, "bad-name");
    snprintf(path, sizeof path, "%s/ids/lib-b.1.log", f.dir);
    uint32_t inc = 3;
    write_bytes(path, (long)offsetof(idms_header, incarnation), &inc, sizeof inc);
    expect("a name that is not the header's is bad input", &f, 2,
           LINES("ids/lib-b.1.log: the header says process 'lib-b' incarnation 3"));

    base(&f, "bad-record");
    FILE *c = log_simple(&f, "lib-c", 1);
    uint64_t two[2] = {tw(3000, 1, 7, 0), tw(3000, 1, 7, 1)};
    rec(c, ns(3000), ns(3000), 0, two, 2);
    log_close(c);
    expect("several ids in a record not a batch is bad input", &f, 2,
           LINES("ids/lib-c.1.log: record 0 (offset 232) holds 2 ids but is neither"));

    base(&f, "bad-flags");
    c = log_simple(&f, "lib-c", 1);
    uint64_t one = tw(3000, 1, 7, 0);
    rec(c, ns(3000), ns(3000), 4, &one, 1);
    log_close(c);
    expect("unknown record flags are bad input", &f, 2,
           LINES("ids/lib-c.1.log: record 0 (offset 232) has unknown flags 0x4"));

    base(&f, "bad-times");
    c = log_simple(&f, "lib-c", 1);
    rec(c, ns(3000), ns(3000) - 1, 0, &one, 1);
    log_close(c);
    expect("an answer before its request is bad input", &f, 2,
           LINES("ids/lib-c.1.log: record 0 (offset 232) was answered"));

    base(&f, "bad-json");
    snprintf(path, sizeof path, "%s/ids/lib-b.1.log", f.dir);
    write_bytes(path, 0, "XDMSYSL1", 8);
    expect_args("--json on bad input", &f, "--json", 2,
                LINES("{\"result\":\"bad input\",\"error\":\"", "bad magic \\\"XDMSYSL1\\\""),
                NULL);

    base(&f, "bad-event");
    event(&f, "clock\tsoon\tc1\t5");
    expect("a malformed event is bad input", &f, 2, LINES("events.tsv:2: a clock line is"));

    base(&f, "no-run");
    fleet_close(&f);
    snprintf(path, sizeof path, "%s/events.tsv", f.dir);
    FILE *e = fopen(path, "w");
    if (e == NULL)
        die("cannot rewrite %s", path);
    log_close(e);
    expect("no run line is bad input", &f, 2, LINES("events.tsv has no run line"));

    base(&f, "no-events");
    fleet_close(&f);
    snprintf(path, sizeof path, "%s/events.tsv", f.dir);
    unlink(path);
    expect("no events file is bad input", &f, 2, LINES("cannot open ", "events.tsv"));

    fleet_new(&f, "empty");
    log_close(log_simple(&f, "lib-a", 1));
    expect("a run with no ids is bad input", &f, 2,
           LINES("holds no acknowledged id (1 logs): a run that checked nothing cannot pass"));

    fleet_new(&f, "no-logs");
    expect("a run with no logs is bad input", &f, 2, LINES("holds no acknowledged id (0 logs)"));

    snprintf(f.dir, sizeof f.dir, "%s/missing", g_root);
    expect("a missing LOGDIR is bad input", &f, 2, LINES("missing is not a readable directory"));
}

static void case_max_report(void)
{
    fleet f;
    base(&f, "max-report");
    FILE *c = log_simple(&f, "lib-c", 1);
    rec1(c, 1500, tw(1500, 1, 1, 0));
    rec1(c, 1600, tw(1600, 1, 2, 0));
    log_close(c);
    fleet_close(&f);
    /* Two duplicates counted, one shown. */
    const char *args1[] = {"--max-report", "1", f.dir, NULL};
    int rc = run(args1);
    g_cases++;
    const char *first = strstr(g_out, "DUPLICATE");
    if (rc != 1 || strstr(g_out, "duplicates: 2 (2 extra occurrences;") == NULL || first == NULL ||
        strstr(first + 1, "DUPLICATE") != NULL) {
        fprintf(stderr, "FAIL --max-report 1 (exit %d)\n%s", rc, g_out);
        g_failed++;
    } else {
        printf("ok   --max-report 1 shows one of two duplicates\n");
    }
    expect_args("--max-report 0 shows none", &f, "--max-report 0", 1,
                LINES("duplicates: 2", "result: FAIL"), LINES("DUPLICATE", "OVERLAP"));
}

/* ---- a large fleet, for measuring ---- */

/*
 * N snowflake ids from 32 processes over 8 incarnations each: in slot s,
 * process p holds worker (p + s) mod 40 (datacenter and worker from it),
 * one record per ms of 1..511 ids (single ids now and then); a slot is
 * about twice as long as its records take, so every worker is handed over
 * with a gap, and each incarnation but the last ends in a kill9. Half the
 * processes run on clock c1 (offset 0, set again every second). Then
 * N/20 ticket ids over 4 logs.
 */
static int generate(const char *dir, uint64_t n)
{
    enum { P = 32, S = 8, W = 40 };
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die("cannot make %s: %s", dir, strerror(errno));
    fleet f;
    snprintf(f.dir, sizeof f.dir, "%s", dir);
    char path[4500];
    snprintf(path, sizeof path, "%s/ids", dir);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        die("cannot make %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/events.tsv", dir);
    f.events = fopen(path, "w");
    if (f.events == NULL)
        die("cannot make %s", path);
    uint64_t quota = n / (P * S);
    int64_t slot_ms = (int64_t)(quota / 128) + 10;
    int64_t end_ms = 1000 + S * slot_ms + 1000;
    event(&f, "run\t%" PRId64 "\t%" PRId64 "\t7\t%" PRId64, ns(0), ns(end_ms), end_ms / 1000);
    for (int64_t ms = 0; ms < end_ms; ms += 1000)
        event(&f, "clock\t%" PRId64 "\tc1\t0", ns(ms));
    uint64_t *ids = malloc(512 * sizeof *ids);
    if (ids == NULL)
        die("out of memory");
    uint64_t total = 0, k = 0;
    for (int p = 0; p < P; p++) {
        for (int s = 0; s < S; s++) {
            char name[32];
            snprintf(name, sizeof name, "sf-%02d", p);
            logspec ls = {.process = name, .incarnation = (uint32_t)s + 1, .drift_ms = 10,
                          .clock = p % 2 == 0 ? "c1" : ""};
            FILE *fp = log_new(&f, &ls);
            setvbuf(fp, NULL, _IOFBF, 1 << 20);
            unsigned w = (unsigned)(p + s) % W;
            int64_t ms = 1000 + s * slot_ms;
            uint64_t left = p == P - 1 && s == S - 1 ? n - total : quota;
            while (left > 0) {
                uint32_t c = (uint32_t)(1 + (k * 37) % 511);
                k++;
                if (c > left)
                    c = (uint32_t)left;
                uint64_t first = tw(ms, w / 20, w % 20, 0);
                for (uint32_t i = 0; i < c; i++)
                    ids[i] = first + i; /* seq is the lowest field */
                rec(fp, ns(ms) + 100000, ns(ms) + 700000, c > 1 ? IDMS_F_BATCH : 0, ids, c);
                left -= c;
                total += c;
                ms++;
            }
            log_close(fp);
            if (s + 1 < S)
                event(&f, "fault\t%" PRId64 "\t%" PRId64 "\tkill9\t%s\t%s\t", ns(ms), ns(ms), name,
                      name);
        }
    }
    uint64_t nt = n / 20;
    for (int t = 0; t < 4; t++) {
        char name[32];
        snprintf(name, sizeof name, "seq-%d", t);
        logspec ls = {.process = name, .incarnation = 1, .kind = IDMS_TICKET};
        FILE *fp = log_new(&f, &ls);
        setvbuf(fp, NULL, _IOFBF, 1 << 20);
        for (uint64_t i = 0; i < nt / 4; i += 100) {
            uint32_t c = 0;
            for (; c < 100 && i + c < nt / 4; c++)
                ids[c] = 1 + (i + c) * 4 + (uint64_t)t;
            rec(fp, ns(1000) + (int64_t)i, ns(1000) + (int64_t)i + 1000, IDMS_F_BATCH, ids, c);
        }
        log_close(fp);
    }
    fleet_close(&f);
    free(ids);
    printf("wrote %" PRIu64 " snowflake ids and %" PRIu64 " ticket ids in %s\n", total,
           nt / 4 * 4, dir);
    return 0;
}

/* ---- main ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    if (idm_layout_preset(&g_twitter, "twitter") != 0 ||
        idm_layout_preset(&g_sonyflake, "sonyflake") != 0)
        die("cannot build the presets: %s", idm_error_detail());
    if (argc == 4 && strcmp(argv[1], "--generate") == 0) {
        uint64_t n;
        if (idm_u64_parse(argv[3], &n) != 0 || n < 1000)
            die("--generate DIR N: N is a count of at least 1000");
        return generate(argv[2], n);
    }
    g_checker = argc > 1 ? argv[1] : getenv("IDM_SYSCHECK");
    if (g_checker == NULL || access(g_checker, X_OK) != 0)
        die("usage: test_syscheck SYSCHECK (or IDM_SYSCHECK=SYSCHECK): the checker to run");
    const char *tmp = getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/test_syscheck.XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(g_root) == NULL)
        die("cannot make a temporary directory: %s", strerror(errno));

    case_clean();
    case_json();
    case_dup_in_log();
    case_dup_across_logs();
    case_dup_tickets();
    case_dup_spread();
    case_recovery();
    case_order();
    case_undecodable();
    case_windows();
    case_offset_clock();
    case_overlaps();
    case_torn();
    case_bad_input();
    case_max_report();

    printf("%d of %d cases passed\n", g_cases - g_failed, g_cases);
    if (g_failed == 0)
        nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    else
        fprintf(stderr, "the failed cases' logs are kept in %s\n", g_root);
    idm_layout_free(g_twitter);
    idm_layout_free(g_sonyflake);
    return g_failed == 0 ? 0 : 1;
}
