/* SPDX-License-Identifier: MIT */
/*
 * The generator's state file: its format ("idmint-state 1 <mark> <crc>\n",
 * CRC-32 of the bytes before the final space), missing and corrupt files
 * (H4: a torn or corrupt file on restart), the mark kept ahead of every id
 * while running and exact after a clean close, restarts with the clock
 * stepped back a little or far (C3), a crash without close, the lookahead
 * (one write per period, not per id), state-file write failures injected
 * through the library's fault hook (H3), .tmp leftovers from a crash, a
 * state file behind a symbolic link (written through, locked as the real
 * file), and FIFOs, directories and the like at the state, lock and
 * temporary files' names (refused at once, never waited on).
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "state.h"

#define T0 INT64_C(1700000000000) /* 2023-11-14T22:13:20Z */
#define MS INT64_C(1000000)
#define DRIFT_MS 10 /* twitter preset: max(10, 1 ms tick) */


/* ---- the file format, independently of the library ---- */

/* Read a whole file (up to cap - 1 bytes); returns its length or -1. */
static long slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (long)n;
}

static void spit(const char *path, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (len > 0)
        assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* "<body> <crc>\n" with the right CRC of body. */
static size_t format_line(char *buf, size_t cap, const char *body)
{
    int n = snprintf(buf, cap, "%s %08x\n", body,
                     (unsigned)idm_test_crc32(body, strlen(body)));
    assert_true(n > 0 && (size_t)n < cap);
    return (size_t)n;
}

static void write_state(const char *path, idm_unix_ms mark)
{
    char body[64], line[96];
    snprintf(body, sizeof body, "idmint-state 1 %lld", LL(mark));
    spit(path, line, format_line(line, sizeof line, body));
}

/*
 * Parse the state file strictly. 0 and *mark on a valid file, -1 if it is
 * missing, -2 if it is not exactly one valid line.
 */
static int read_mark(const char *path, idm_unix_ms *mark)
{
    char buf[256];
    long n = slurp(path, buf, sizeof buf);
    if (n < 0)
        return -1;
    static const char magic[] = "idmint-state 1 ";
    size_t ml = sizeof magic - 1;
    if ((size_t)n < ml + 1 + 1 + 8 + 1 || memcmp(buf, magic, ml) != 0 ||
        buf[n - 1] != '\n')
        return -2;
    size_t sp = (size_t)n - 10; /* the space before the crc */
    if (buf[sp] != ' ' || sp <= ml)
        return -2;
    int64_t v = 0;
    for (size_t i = ml; i < sp; i++) {
        if (buf[i] < '0' || buf[i] > '9' || v > (INT64_MAX - 9) / 10)
            return -2;
        v = v * 10 + (buf[i] - '0');
    }
    uint32_t crc = 0;
    for (size_t i = sp + 1; i < sp + 9; i++) {
        char c = buf[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -2;
        crc = crc << 4 | (uint32_t)d;
    }
    if (crc != idm_test_crc32(buf, sp))
        return -2;
    *mark = v;
    return 0;
}

static idm_unix_ms disk_mark(const char *path)
{
    idm_unix_ms m = -1;
    int rc = read_mark(path, &m);
    CHECK(rc == 0, "state file %s (%d)", rc == -1 ? "missing" : "invalid", rc);
    return m;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ---- a generator with a state file on a manual clock ---- */

typedef struct sfx {
    char *dir;
    char *path;
    char *tmp;
    char *lock;
    idm_manual_clock *mc;
    idm_layout *layout;
    idm_snowflake_opts o;
    idm_snowflake *g;
    idm_test_idvec ids;
} sfx;

static void sfx_init(sfx *f)
{
    memset(f, 0, sizeof *f);
    f->dir = idm_test_tmpdir();
    f->path = idm_test_path(f->dir, "gen.state");
    f->tmp = idm_test_path(f->dir, "gen.state.tmp");
    f->lock = idm_test_path(f->dir, "gen.state.lock");
    IDM_ASSERT_OK(idm_manual_clock_new(&f->mc, T0, true));
    IDM_ASSERT_OK(idm_layout_preset(&f->layout, "twitter"));
    idm_snowflake_opts_init(&f->o);
    f->o.layout = f->layout;
    f->o.clock = idm_manual_clock_clock(f->mc);
    IDM_ASSERT_OK(idm_snowflake_opts_node(&f->o, "datacenter", 2));
    IDM_ASSERT_OK(idm_snowflake_opts_node(&f->o, "worker", 9));
    f->o.state_path = f->path;
}

static void sfx_close(sfx *f)
{
    if (f->g != NULL)
        IDM_ASSERT_OK(idm_snowflake_close(f->g));
    f->g = NULL;
}

static void sfx_done(sfx *f)
{
    idm__fault_hook = NULL;
    sfx_close(f);
    idm_layout_free(f->layout);
    idm_manual_clock_free(f->mc);
    idm_test_rmtree(f->dir);
    free(f->dir);
    free(f->path);
    free(f->tmp);
    free(f->lock);
    free(f->ids.v);
}

static uint64_t sfx_mint(sfx *f)
{
    uint64_t id = 0;
    IDM_ASSERT_OK(idm_snowflake_next(f->g, &id));
    idm_test_idvec_push(&f->ids, id);
    return id;
}

static idm_unix_ms id_ms(const sfx *f, uint64_t id)
{
    idm_decoded d;
    IDM_ASSERT_OK(idm_layout_decode(f->layout, id, &d));
    return d.unix_ms;
}

static idm_snowflake_stats sfx_stats(const sfx *f)
{
    idm_snowflake_stats st;
    idm_snowflake_stats_get(f->g, &st);
    return st;
}

static idm_unix_ms last_ms(const sfx *f)
{
    assert_true(f->ids.n > 0);
    return id_ms(f, f->ids.v[f->ids.n - 1]);
}

/* Open fresh, mint over 50 ms, close cleanly. */
static void first_run(sfx *f)
{
    f->o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f->g, &f->o));
    for (int i = 0; i < 50; i++) {
        sfx_mint(f);
        sfx_mint(f);
        idm_manual_clock_advance(f->mc, 1);
    }
    sfx_close(f);
    f->o.state_fresh = false;
}

/* ---- the fault hook ---- */

/* Every fault site of the state file (common.h's shared hook), each with a
 * letter for the call log. The first five are a write's calls in the order
 * the tests below expect them. */
static const char *const sites[] = {"state.open",   "state.write",    "state.fsync",
                                    "state.rename", "state.fsyncdir", "state.unlink",
                                    "state.lock-open"};
static const char site_letters[] = "owfrdul";
#define NSITES ((int)(sizeof sites / sizeof sites[0]))

static int fault_at;        /* fail this call and every later one; 0: never */
static int fault_calls;     /* calls seen */
static int fault_fired;     /* calls failed */
static int fault_errno;
static const char *fault_first_op; /* the first call failed */
static int fault_renames;
static int fault_unknown;   /* calls with an unknown site name */
static char fault_log[512]; /* site names, one letter each */
static const char *fault_only; /* if set: fail this site alone, every time */

static int fault_hook(const char *site)
{
    int k = -1;
    for (int i = 0; i < NSITES; i++)
        if (strcmp(site, sites[i]) == 0)
            k = i;
    if (k < 0)
        fault_unknown++;
    if (fault_calls < (int)sizeof fault_log - 1)
        fault_log[fault_calls] = k < 0 ? '?' : site_letters[k];
    fault_calls++;
    if (k == 3)
        fault_renames++;
    if ((fault_at > 0 && fault_calls >= fault_at) ||
        (fault_only != NULL && strcmp(site, fault_only) == 0)) {
        if (fault_fired++ == 0)
            fault_first_op = k < 0 ? "?" : sites[k];
        return fault_errno;
    }
    return 0;
}

static void fault_arm(int at, int err)
{
    fault_at = at;
    fault_calls = 0;
    fault_fired = 0;
    fault_errno = err;
    fault_first_op = NULL;
    fault_renames = 0;
    fault_unknown = 0;
    fault_only = NULL;
    memset(fault_log, 0, sizeof fault_log);
    idm__fault_hook = fault_hook;
}

/* ---- tests ---- */

static void state_missing_enoent(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_ENOENT);
    CHECK(f.g == NULL, "failed open handed out a generator");
    CHECK(!exists(f.path), "a failed open created the state file");
    sfx_done(&f);
}

static void state_fresh_creates(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    f.o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    CHECK(exists(f.lock), "no lock file beside the state file while open");
    uint64_t id = sfx_mint(&f);
    CHECK(id_ms(&f, id) == T0, "first id not on the clock's tick");
    idm_unix_ms m = disk_mark(f.path);
    CHECK(m >= T0, "mark %lld below the minted tick %lld", LL(m), LL(T0));
    CHECK(sfx_stats(&f).state_mark_ms == m, "stats.state_mark_ms %lld != %lld",
          LL(sfx_stats(&f).state_mark_ms), LL(m));
    CHECK(sfx_stats(&f).state_writes >= 1, "stats.state_writes is 0");
    sfx_close(&f);
    m = disk_mark(f.path);
    CHECK(m >= T0, "mark %lld after close below the last tick", LL(m));
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

/* A state file this test writes is read back: the format is understood
 * alike on both sides (else the corrupt cases would prove nothing). */
static void state_valid_file_accepted(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    write_state(f.path, T0 - 1000); /* behind the clock */
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    uint64_t id = sfx_mint(&f);
    CHECK(id_ms(&f, id) == T0, "id at %lld, expected the clock's %lld",
          LL(id_ms(&f, id)), LL(T0));
    sfx_close(&f);

    write_state(f.path, T0 + 5); /* ahead of the clock, within drift */
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    id = sfx_mint(&f);
    CHECK(id_ms(&f, id) > T0 + 5, "id at %lld, not above the mark %lld",
          LL(id_ms(&f, id)), LL(T0 + 5));
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

static void state_corrupt_ecorrupt(void **state)
{
    (void)state;
    char good_body[64], good[96];
    snprintf(good_body, sizeof good_body, "idmint-state 1 %lld", LL(T0 - 1000));
    size_t good_len = format_line(good, sizeof good, good_body);

    char cases[40][128];
    size_t lens[40];
    const char *names[40];
    int nc = 0;

    /* bad crc: one digit off */
    memcpy(cases[nc], good, good_len + 1);
    cases[nc][good_len - 2] = cases[nc][good_len - 2] == '0' ? '1' : '0';
    lens[nc] = good_len;
    names[nc++] = "bad crc";
    /* bad crc: mark changed under the old crc */
    memcpy(cases[nc], good, good_len + 1);
    cases[nc][20] = cases[nc][20] == '9' ? '8' : '9';
    lens[nc] = good_len;
    names[nc++] = "mark changed, crc not";
    /* truncated, at several points, the crc always cut */
    const size_t cuts[] = {1, 8, 13, 15, 20, good_len - 10, good_len - 9,
                           good_len - 5, good_len - 2};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        memcpy(cases[nc], good, cuts[i]);
        cases[nc][cuts[i]] = '\0';
        lens[nc] = cuts[i];
        names[nc++] = "truncated";
    }
    lens[nc] = 0;
    cases[nc][0] = '\0';
    names[nc++] = "empty";
    static const char garbage1[] = "hello, world\n";
    memcpy(cases[nc], garbage1, sizeof garbage1);
    lens[nc] = sizeof garbage1 - 1;
    names[nc++] = "garbage text";
    idm_test_rng rng;
    idm_test_rng_init(&rng, idm_test_seed());
    for (size_t i = 0; i < 64; i++)
        cases[nc][i] = (char)idm_test_rng_next(&rng);
    lens[nc] = 64;
    names[nc++] = "random bytes";
    /* well-formed lines with a valid crc but bad content */
    static const char *const bodies[] = {
        "idmint-state 2 1699999999000",  "idmint-state 0 1699999999000",
        "idmint-stat 1 1699999999000",   "IDMINT-STATE 1 1699999999000",
        "idmint-state 1 1699999999000x", "idmint-state 1 -1699999999000",
        "idmint-state 1 +1699999999000", "idmint-state 1 0x18bcfe56800",
        "idmint-state 1 1699999 999000", "idmint-state 1 ",
        "idmint-state 1 99999999999999999999",
        "idmint-state 1 9223372036854775808",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        lens[nc] = format_line(cases[nc], sizeof cases[nc], bodies[i]);
        names[nc++] = bodies[i];
    }

    for (int c = 0; c < nc; c++) {
        sfx f;
        char after[256];
        sfx_init(&f);
        spit(f.path, cases[c], lens[c]);
        IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_ECORRUPT);
        CHECK(f.g == NULL, "case '%s': failed open handed out a generator",
              names[c]);
        long n = slurp(f.path, after, sizeof after);
        CHECK(n == (long)lens[c] && memcmp(after, cases[c], lens[c]) == 0,
              "case '%s': a refused open changed the file", names[c]);

        /* With state_fresh the generator starts from the clock and
         * replaces the file with a valid one. */
        f.o.state_fresh = true;
        IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
        uint64_t id = sfx_mint(&f);
        CHECK(id_ms(&f, id) == T0, "case '%s': fresh start at %lld", names[c],
              LL(id_ms(&f, id)));
        sfx_close(&f);
        CHECK(disk_mark(f.path) >= T0, "case '%s': mark after close", names[c]);
        sfx_done(&f);
    }
    print_message("# %d corrupt files refused\n", nc);
}

static void state_mark_ahead_while_running(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    f.o.state_fresh = true;
    f.o.state_lookahead_ms = 1000;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    idm_unix_ms running = 0;
    for (int step = 0; step < 300; step++) {
        idm_manual_clock_advance(f.mc, 10);
        for (int k = 0; k < 5; k++)
            sfx_mint(&f);
        idm_unix_ms m = disk_mark(f.path);
        CHECK(m >= last_ms(&f), "step %d: mark %lld on disk below the last "
              "id's time %lld", step, LL(m), LL(last_ms(&f)));
        CHECK(m >= running, "step %d: mark moved back from %lld to %lld", step,
              LL(running), LL(m));
        CHECK(sfx_stats(&f).state_mark_ms == m,
              "step %d: stats.state_mark_ms %lld, disk %lld", step,
              LL(sfx_stats(&f).state_mark_ms), LL(m));
        running = m;
    }
    idm_unix_ms last = last_ms(&f);
    CHECK(running > last, "the running mark %lld is not ahead of %lld",
          LL(running), LL(last));
    sfx_close(&f);
    idm_unix_ms closed = disk_mark(f.path);
    CHECK(closed >= last && closed < running,
          "mark after a clean close %lld, expected the last tick %lld "
          "(the running mark was %lld)", LL(closed), LL(last), LL(running));
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

static void state_restart_small_step_back(void **state)
{
    (void)state;
    static const struct {
        idm_backwards_policy bp;
        int64_t back;
        int rc;
    } cases[] = {
        {IDM_BACKWARDS_LOGICAL, 5, 0},
        {IDM_BACKWARDS_WAIT, 3, 0},
        {IDM_BACKWARDS_REFUSE, 5, IDM_ECLOCKBACK},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sfx f;
        sfx_init(&f);
        first_run(&f);
        idm_unix_ms mark = disk_mark(f.path);
        CHECK(mark >= last_ms(&f), "mark %lld below the last tick", LL(mark));
        idm_manual_clock_set(f.mc, last_ms(&f) - cases[c].back);
        f.o.backwards = cases[c].bp;
        IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), cases[c].rc);
        if (cases[c].rc == 0) {
            uint64_t id = sfx_mint(&f);
            CHECK(id_ms(&f, id) > mark,
                  "policy %d: first id after restart at %lld, not above the "
                  "mark %lld", (int)cases[c].bp, LL(id_ms(&f, id)), LL(mark));
            sfx_mint(&f);
            idm_test_check_ids(&f.ids);
        } else {
            CHECK(f.g == NULL, "failed open handed out a generator");
            CHECK(disk_mark(f.path) == mark, "a refused open changed the mark");
        }
        sfx_done(&f);
    }

    /* The clock ahead of the mark: ids on the clock's tick. */
    sfx f;
    sfx_init(&f);
    first_run(&f);
    idm_manual_clock_set(f.mc, last_ms(&f) + 500);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    uint64_t id = sfx_mint(&f);
    CHECK(id_ms(&f, id) == idm_manual_clock_now_ms(f.mc),
          "id at %lld, not on the clock's tick", LL(id_ms(&f, id)));
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

/* C3 */
static void state_restart_far_back_refused(void **state)
{
    (void)state;
    sfx f;
    char before[256], after[256];
    sfx_init(&f);
    first_run(&f);
    idm_unix_ms mark = disk_mark(f.path);
    long n0 = slurp(f.path, before, sizeof before);
    idm_manual_clock_set(f.mc, mark - 60000);
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_ECLOCKBACK);
    CHECK(f.g == NULL, "failed open handed out a generator");
    long n1 = slurp(f.path, after, sizeof after);
    CHECK(n0 == n1 && memcmp(before, after, (size_t)n0) == 0,
          "a refused open changed the file");
    /* Also refused just beyond the drift bound. */
    idm_manual_clock_set(f.mc, mark - 2 * DRIFT_MS);
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_ECLOCKBACK);
    /* Once past the mark it starts, above every old id. */
    idm_manual_clock_set(f.mc, mark + 1);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    uint64_t id = sfx_mint(&f);
    CHECK(id_ms(&f, id) == mark + 1, "first id at %lld", LL(id_ms(&f, id)));
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

/* A process dies without close: the lock goes with it, the mark stays
 * ahead of everything it minted, and a restart does not go below it. */
static void state_crash_restart(void **state)
{
    (void)state;
    sfx f;
    int fds[2];
    sfx_init(&f);
    f.o.state_lookahead_ms = 1000;
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_snowflake *g = NULL;
        close(fds[0]);
        f.o.state_fresh = true;
        if (idm_snowflake_open(&g, &f.o) != 0)
            _exit(2);
        for (int i = 0; i < 50; i++) {
            uint64_t id;
            idm_manual_clock_advance(f.mc, 10);
            if (idm_snowflake_next(g, &id) != 0)
                _exit(3);
            if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id)
                _exit(4);
        }
        _exit(0); /* no close: a crash */
    }
    close(fds[1]);
    uint64_t id;
    while (read(fds[0], &id, sizeof id) == (ssize_t)sizeof id)
        idm_test_idvec_push(&f.ids, id);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child failed (status %d)", status);
    CHECK(f.ids.n == 50, "child minted %zu ids", f.ids.n);
    idm_unix_ms mark = disk_mark(f.path);
    idm_unix_ms last = last_ms(&f);
    CHECK(mark >= last, "mark %lld below the crashed run's last id %lld",
          LL(mark), LL(last));
    CHECK(mark > last + 1 + DRIFT_MS,
          "mark %lld not a lookahead ahead of the last id %lld", LL(mark),
          LL(last));

    /* Restart right after the crash: the clock is behind the mark by more
     * than the drift bound, so it is a restart with the clock set back. */
    idm_manual_clock_set(f.mc, last + 1);
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_ECLOCKBACK);
    /* Once the clock passes the mark: not busy, and above every old id. */
    idm_manual_clock_set(f.mc, mark + 1);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    id = sfx_mint(&f);
    CHECK(id_ms(&f, id) > mark, "first id at %lld, not above the mark %lld",
          LL(id_ms(&f, id)), LL(mark));
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

static void state_lookahead_writes(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    f.o.state_fresh = true;
    f.o.state_lookahead_ms = 1000;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    fault_arm(0, 0); /* count calls, fail none */
    uint64_t w0 = sfx_stats(&f).state_writes;
    for (int i = 0; i < 100; i++) { /* 10 s at 100 ms a call */
        idm_manual_clock_advance(f.mc, 100);
        sfx_mint(&f);
        CHECK(disk_mark(f.path) >= last_ms(&f), "mark behind an id");
    }
    uint64_t writes = sfx_stats(&f).state_writes - w0;
    print_message("# %llu state writes over 10 s; calls: %s\n", ULL(writes),
                  fault_log);
    CHECK(writes >= 5 && writes <= 15,
          "%llu state writes over 10 s with a 1 s lookahead, expected ~10",
          ULL(writes));
    CHECK((uint64_t)fault_renames == writes,
          "%d renames for %llu writes", fault_renames, ULL(writes));
    CHECK(fault_unknown == 0, "fault hook saw unknown site names: %s", fault_log);
    /* Every write is unlink (a leftover), open, write(s), fsync, rename,
     * fsyncdir, in order. */
    for (const char *p = fault_log; *p != '\0';) {
        CHECK(*p == 'u', "write sequence does not start with unlink: %s",
              fault_log);
        p++;
        CHECK(*p == 'o', "no open after unlink: %s", fault_log);
        p++;
        CHECK(*p == 'w', "no write after open: %s", fault_log);
        while (*p == 'w')
            p++;
        CHECK(p[0] == 'f' && p[1] == 'r' && p[2] == 'd',
              "expected fsync, rename, fsyncdir: %s", fault_log);
        p += 3;
    }
    /* Not per id: 4000 ids within one ms write nothing. */
    uint64_t w1 = sfx_stats(&f).state_writes;
    for (int i = 0; i < 4000; i++)
        sfx_mint(&f);
    CHECK(sfx_stats(&f).state_writes == w1, "ids within one ms wrote state");
    idm__fault_hook = NULL;
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

/* H3: fail the Nth system call of the state-file writes (and every later
 * one while the fault stays), for N = 1, 2, ... until a run's writes all
 * succeed before N. */
static void state_write_faults(void **state)
{
    (void)state;
    int n_eio_runs = 0;
    unsigned ops_failed = 0;
    int n;
    for (n = 1;; n++) {
        CHECK(n <= 100, "state writes never succeeded");
        sfx f;
        sfx_init(&f);
        f.o.state_fresh = true;
        f.o.state_lookahead_ms = 1000;
        IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
        sfx_mint(&f);
        idm_unix_ms disk = disk_mark(&f.path[0]);
        CHECK(disk >= last_ms(&f), "mark below the first id");

        fault_arm(n, n % 2 != 0 ? EIO : ENOSPC);
        int eio = 0, last_rc = 0;
        for (int step = 0; step < 24; step++) { /* 2.4 s, 100 ms a step */
            idm_manual_clock_advance(f.mc, 100);
            for (int k = 0; k < 3; k++) {
                uint64_t id = 0;
                int rc = idm_snowflake_next(f.g, &id);
                idm_unix_ms m = -1;
                int frc = read_mark(f.path, &m);
                CHECK(frc == 0, "N=%d (%s): state file torn or invalid after "
                      "a failed write", n, fault_first_op ? fault_first_op : "-");
                CHECK(m >= disk, "N=%d: mark on disk went back from %lld to "
                      "%lld", n, LL(disk), LL(m));
                disk = m;
                if (rc == 0) {
                    idm_test_idvec_push(&f.ids, id);
                    CHECK(id_ms(&f, id) <= disk,
                          "N=%d (%s): minted at %lld past the stored mark %lld",
                          n, fault_first_op ? fault_first_op : "-",
                          LL(id_ms(&f, id)), LL(disk));
                } else {
                    CHECK(rc == IDM_EIO, "N=%d: next failed with %s, not "
                          "IDM_EIO", n, idm_err_name(rc));
                    CHECK(fault_fired > 0, "N=%d: IDM_EIO with no fault", n);
                    eio++;
                }
                last_rc = rc;
            }
        }
        if (fault_fired == 0) {
            /* Every write of this run finished before call N: done. */
            CHECK(eio == 0, "IDM_EIO without a fault");
            idm__fault_hook = NULL;
            idm_test_check_ids(&f.ids);
            sfx_done(&f);
            break;
        }
        print_message("# N=%d: first failed call %s, %d refusals; calls %s\n",
                      n, fault_first_op, eio, fault_log);
        for (int i = 0; i < NSITES; i++) {
            if (strcmp(fault_first_op, sites[i]) == 0)
                ops_failed |= 1u << i;
        }
        CHECK(sfx_stats(&f).state_error != 0,
              "N=%d: stats.state_error not set after a failed write", n);
        if (idm_manual_clock_now_ms(f.mc) > disk)
            CHECK(last_rc == IDM_EIO, "N=%d: the clock is past the stored "
                  "mark and the generator still mints", n);
        if (eio > 0)
            n_eio_runs++;

        /* The fault is removed: minting resumes, above everything. */
        idm__fault_hook = NULL;
        uint64_t id = sfx_mint(&f);
        CHECK(id_ms(&f, id) <= disk_mark(f.path), "N=%d: resumed past the "
              "mark", n);
        for (int i = 0; i < 5; i++) {
            idm_manual_clock_advance(f.mc, 300);
            sfx_mint(&f);
            CHECK(disk_mark(f.path) >= last_ms(&f), "mark behind an id");
        }
        /* ... and across a restart, .tmp leftovers and all. */
        sfx_close(&f);
        idm_manual_clock_advance(f.mc, 1);
        IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
        sfx_mint(&f);
        idm_test_check_ids(&f.ids);
        sfx_done(&f);
    }
    print_message("# write faults: %d runs, %d refused with IDM_EIO\n", n - 1,
                  n_eio_runs);
    /* Each of a write's six sites (all but the lock file's) failed first in
     * some run. */
    CHECK(ops_failed == 0x3fu, "not every system call of a write was failed "
          "(mask %#x)", ops_failed);
    CHECK(n_eio_runs >= 4, "only %d runs refused with IDM_EIO", n_eio_runs);
}

static void state_tmp_leftover(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    write_state(f.path, T0 - 1000);
    static const char junk[] = "idmint-state 1 17";
    spit(f.tmp, junk, sizeof junk - 1);
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    for (int i = 0; i < 30; i++) {
        idm_manual_clock_advance(f.mc, 100);
        sfx_mint(&f);
        CHECK(disk_mark(f.path) >= last_ms(&f), "mark behind an id");
    }
    sfx_close(&f);
    CHECK(disk_mark(f.path) >= last_ms(&f), "mark after close");

    /* A leftover .tmp is no state file. */
    remove(f.path);
    write_state(f.tmp, T0);
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_ENOENT);
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

static bool is_link(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode);
}

static void check_detail(const char *want)
{
    const char *d = idm_error_detail();
    CHECK(d != NULL && strstr(d, want) != NULL, "detail [%s] lacks [%s]",
          d != NULL ? d : "(none)", want);
}

/* A symbolic link to the state file: the file it points to is written (the
 * link stays a link) and its lock is the real file's, so a generator
 * through the link and one through the real path exclude each other. */
static void state_symlink_written_through(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    char *link = idm_test_path(f.dir, "link.state");
    char *link_lock = idm_test_path(f.dir, "link.state.lock");
    char *link_tmp = idm_test_path(f.dir, "link.state.tmp");
    char *dangling = idm_test_path(f.dir, "dangling.state");
    char *later = idm_test_path(f.dir, "later.state");
    CHECK(symlink("gen.state", link) == 0, "symlink: %s", strerror(errno));

    /* Through the link, fresh: the real path is locked meanwhile. */
    idm_snowflake_opts other = f.o;
    idm_snowflake *g2 = NULL;
    f.o.state_path = link;
    f.o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    other.state_path = f.path;
    other.state_fresh = true;
    IDM_ASSERT_RC(idm_snowflake_open(&g2, &other), IDM_EBUSY);
    for (int i = 0; i < 30; i++) { /* 3 s: several lookahead writes */
        idm_manual_clock_advance(f.mc, 100);
        sfx_mint(&f);
        CHECK(is_link(link), "a state write replaced the link");
        CHECK(disk_mark(f.path) >= last_ms(&f), "the real file's mark is "
              "behind an id minted through the link");
    }
    CHECK(!exists(link_lock) && !exists(link_tmp),
          "a lock or temporary file was made beside the link");
    sfx_close(&f);
    CHECK(is_link(link), "close replaced the link");
    CHECK(disk_mark(f.path) >= last_ms(&f), "the exact mark at close did "
          "not reach the real file");

    /* Through the real path: the link is locked meanwhile. */
    f.o.state_path = f.path;
    f.o.state_fresh = false;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    other.state_path = link;
    other.state_fresh = false;
    IDM_ASSERT_RC(idm_snowflake_open(&g2, &other), IDM_EBUSY);
    sfx_mint(&f);
    sfx_close(&f);

    /* The two directly, on the file layer. */
    idm__state a, b;
    idm_unix_ms m = 0;
    bool found = false;
    IDM_ASSERT_OK(idm__state_open(&a, link, false, &m, &found));
    CHECK(found, "no mark read through the link");
    IDM_ASSERT_RC(idm__state_open(&b, f.path, false, &m, &found), IDM_EBUSY);
    idm__state_close(&a);

    /* Back through the link: it starts above everything minted so far. */
    f.o.state_path = link;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    sfx_mint(&f);
    sfx_close(&f);
    CHECK(is_link(link), "the link is gone");
    idm_test_check_ids(&f.ids);

    /* A dangling link: the file is made where it points (a new file, so
     * its ids are checked apart). */
    f.ids.n = 0;
    CHECK(symlink("later.state", dangling) == 0, "symlink: %s", strerror(errno));
    f.o.state_path = dangling;
    f.o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    sfx_mint(&f);
    sfx_close(&f);
    CHECK(is_link(dangling), "the dangling link was replaced");
    CHECK(disk_mark(later) >= last_ms(&f), "no mark at the link's target");

    idm_test_check_ids(&f.ids);
    free(link);
    free(link_lock);
    free(link_tmp);
    free(dangling);
    free(later);
    sfx_done(&f);
}

/* A FIFO (or a directory) where the state, lock or temporary file goes:
 * refused at once with IDM_EIO naming it, nothing created; a FIFO at the
 * temporary file's name is replaced. An open that blocked on a FIFO ends
 * the test through the alarm. */
static void state_not_regular_refused(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    alarm(20);

    CHECK(mkfifo(f.path, 0600) == 0, "mkfifo: %s", strerror(errno));
    for (int fresh = 0; fresh < 2; fresh++) {
        f.o.state_fresh = fresh != 0;
        IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_EIO);
        check_detail("gen.state is not a regular file (it is a FIFO)");
        CHECK(!exists(f.lock), "a lock file was made beside a FIFO");
    }
    CHECK(unlink(f.path) == 0, "unlink: %s", strerror(errno));

    CHECK(mkdir(f.path, 0700) == 0, "mkdir: %s", strerror(errno));
    f.o.state_fresh = true;
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_EIO);
    check_detail("gen.state is not a regular file (it is a directory)");
    CHECK(rmdir(f.path) == 0, "rmdir: %s", strerror(errno));

    CHECK(mkfifo(f.lock, 0600) == 0, "mkfifo: %s", strerror(errno));
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_EIO);
    check_detail("lock file");
    check_detail("gen.state.lock is not a regular file (it is a FIFO)");
    CHECK(!exists(f.path), "a state file was made with a FIFO as its lock");
    CHECK(unlink(f.lock) == 0, "unlink: %s", strerror(errno));

    /* The temporary file is ours under the lock: a FIFO there goes. */
    CHECK(mkfifo(f.tmp, 0600) == 0, "mkfifo: %s", strerror(errno));
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    sfx_mint(&f);
    sfx_close(&f);
    CHECK(disk_mark(f.path) >= last_ms(&f), "mark after a FIFO at .tmp");

    alarm(0);
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

/* Every fault site of the state file is reached: a fresh open, a mint and a
 * clean close go through each one in the catalogue above (a call that lost
 * its site fails here). Then the two sites no write-fault run fails first
 * alone: a lock file that cannot be made refuses the open, creating
 * nothing; a leftover temporary file that cannot be removed fails the write
 * (it is never written over), and the file keeps its mark. */
static void state_fault_sites_reached(void **state)
{
    (void)state;
    sfx f;
    sfx_init(&f);
    fault_arm(0, 0); /* record, fail none */
    f.o.state_fresh = true;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    sfx_mint(&f);
    sfx_close(&f);
    CHECK(fault_unknown == 0, "fault hook saw unknown site names: %s", fault_log);
    for (int i = 0; i < NSITES; i++)
        CHECK(strchr(fault_log, site_letters[i]) != NULL,
              "site %s not reached by an open, a mint and a close: %s", sites[i], fault_log);

    CHECK(unlink(f.lock) == 0, "unlink: %s", strerror(errno));
    fault_arm(0, EACCES);
    fault_only = "state.lock-open";
    f.o.state_fresh = false;
    IDM_ASSERT_RC(idm_snowflake_open(&f.g, &f.o), IDM_EIO);
    check_detail("cannot open lock file");
    CHECK(f.g == NULL, "failed open handed out a generator");
    CHECK(fault_fired == 1, "lock-open failed %d times", fault_fired);
    CHECK(!exists(f.lock), "a lock file was made with its open failed");

    idm__fault_hook = NULL;
    IDM_ASSERT_OK(idm_snowflake_open(&f.g, &f.o));
    sfx_mint(&f);
    idm_unix_ms mark = disk_mark(f.path);
    static const char junk[] = "idmint-state 1 17";
    spit(f.tmp, junk, sizeof junk - 1);
    fault_arm(0, EACCES);
    fault_only = "state.unlink";
    idm_manual_clock_set(f.mc, mark + 1); /* past the mark: a write is due */
    uint64_t id = 0;
    IDM_ASSERT_RC(idm_snowflake_next(f.g, &id), IDM_EIO);
    check_detail("cannot create");
    CHECK(fault_fired >= 1, "the unlink site was not failed");
    CHECK(disk_mark(f.path) == mark, "a failed write changed the mark");
    idm__fault_hook = NULL;
    sfx_mint(&f);
    CHECK(disk_mark(f.path) >= last_ms(&f), "mark behind an id after the fault");
    idm_test_check_ids(&f.ids);
    sfx_done(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(state_missing_enoent),
        cmocka_unit_test(state_fresh_creates),
        cmocka_unit_test(state_valid_file_accepted),
        cmocka_unit_test(state_corrupt_ecorrupt),
        cmocka_unit_test(state_mark_ahead_while_running),
        cmocka_unit_test(state_restart_small_step_back),
        cmocka_unit_test(state_restart_far_back_refused),
        cmocka_unit_test(state_crash_restart),
        cmocka_unit_test(state_lookahead_writes),
        cmocka_unit_test(state_write_faults),
        cmocka_unit_test(state_tmp_leftover),
        cmocka_unit_test(state_symlink_written_through),
        cmocka_unit_test(state_not_regular_refused),
        cmocka_unit_test(state_fault_sites_reached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
