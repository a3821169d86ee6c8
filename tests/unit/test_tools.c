/* SPDX-License-Identifier: MIT */
/*
 * The planning tools and decode run captured (src/cli/tools.h), as idmintd
 * runs them: a captured plan, estimate, birthday or decode gives the bytes
 * the command prints
 * on the command line (the estimator's reference case against the text
 * `idmint estimate ... --json` prints, and each tool against the same
 * command run uncaptured with its stdout sent to a file); errors land in
 * r->err with status 2; nothing reaches the process's own stdout or stderr
 * (file descriptors 1 and 2 are sent to a file around the runs to prove
 * it); what would touch a file, a lock or the process (birthday --plot, an
 * ordinal --node, --help) is refused; an unknown tool is -1; and 4 threads
 * of 200 captured runs each at once give the outputs of single runs.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "testutil.h"
#include "tools.h"

/* What `idmint estimate --rate 200000 --processes 400 --skew 5 --surge 2
 * --rows 100000000000 --json` prints: the web console's reference case. */
static const char ref_estimate[] =
    "{\"layout\":\"twitter\",\"text\":\"time:41@1ms,datacenter:5,worker:5,seq:12\","
    "\"tick_ms\":1,\"rate\":200000,\"processes\":400,\"skew\":5,\"surge\":2,"
    "\"worker_ids\":1024,\"worker_ids_in_use\":400,\"worker_ids_in_use_pct\":39.0625,"
    "\"worker_ids_during_deploys\":800,\"worker_ids_during_deploys_pct\":78.125,"
    "\"average_ids_per_second\":500,\"busiest_ids_per_second\":2500,"
    "\"busiest_ids_per_ms\":2.5,\"busiest_ids_per_tick\":2.5,\"seq_per_tick\":4096,"
    "\"seq_share_pct\":0.06103515625,\"time_bits\":41,\"lifespan_years\":69.7,"
    "\"time_end_ms\":3487858230209,\"time_end\":\"2080-07-10T17:30:30.209Z\","
    "\"rows\":100000000000,\"indexes\":1,\"bytes_saved_per_index\":800000000000,"
    "\"bytes_saved_total\":800000000000,\"warnings\":[]}\n";

#define ESTIMATE_REF                                                                   \
    "estimate", "--json", "--rate=200000", "--processes=400", "--skew=5", "--surge=2", \
        "--rows=100000000000"

/* What `idmint birthday --bits 32 --rate 10 --duration 1h --points 3 --json`
 * prints. */
static const char ref_birthday[] =
    "{\"bits\":32,\"model\":\"random\",\"rate\":10,\"duration_s\":3600,\"ids\":36000,"
    "\"p_collision\":0.14004093324007263,\"method\":\"exact-product\",\"t50_s\":7716.4,"
    "\"t50_ids\":77164,\"t1e9_s\":0.4,\"t1e9_ids\":4,\"points\":[[1,1.0477378917261339e-08],"
    "[59.999999999999986,4.183879334456033e-05],[3600,0.14004093324007263]]}\n";

#define BIRTHDAY_REF                                                                 \
    "birthday", "--json", "--bits=32", "--rate=10", "--duration=1h", "--points=3"

/* ---- helpers ---- */

/* Run tool captured with the NULL-terminated words after it. */
static int run(cli_tool_result *r, char **argv)
{
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    return cli_tool_run(argv[0], argc, argv, r);
}
#define RUN(r, ...) run((r), (char *[]){__VA_ARGS__, NULL})

/* File descriptors 1 and 2 sent to a temporary file, to be given back. */
typedef struct fd_trap {
    int saved_out, saved_err;
    FILE *file;
} fd_trap;

static void trap_fds(fd_trap *t)
{
    fflush(stdout);
    fflush(stderr);
    t->file = tmpfile();
    assert_non_null(t->file);
    t->saved_out = dup(1);
    t->saved_err = dup(2);
    assert_true(t->saved_out >= 0 && t->saved_err >= 0);
    assert_true(dup2(fileno(t->file), 1) == 1 && dup2(fileno(t->file), 2) == 2);
}

/* Give 1 and 2 back; returns what was written to them (malloc'd). */
static char *release_fds(fd_trap *t, size_t *len)
{
    fflush(stdout);
    fflush(stderr);
    assert_true(dup2(t->saved_out, 1) == 1 && dup2(t->saved_err, 2) == 2);
    close(t->saved_out);
    close(t->saved_err);
    struct stat st;
    assert_int_equal(fstat(fileno(t->file), &st), 0);
    char *text = calloc((size_t)st.st_size + 1, 1);
    assert_non_null(text);
    rewind(t->file);
    *len = fread(text, 1, (size_t)st.st_size, t->file);
    fclose(t->file);
    return text;
}

/* What cmd prints on stdout run as on the command line (uncaptured), and
 * its status. argv is changed by the parser: the caller's copy. */
static char *uncaptured(int (*cmd)(int, char **), char **argv, int *status, size_t *len)
{
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    fd_trap t;
    trap_fds(&t);
    *status = cmd(argc, argv);
    return release_fds(&t, len);
}
#define UNCAPTURED(cmd, status, len, ...) \
    uncaptured((cmd), (char *[]){__VA_ARGS__, NULL}, (status), (len))

static void expect_usage(const cli_tool_result *r, const char *message)
{
    CHECK(r->status == CLI_USAGE, "status %d, err [%s]", r->status, r->err);
    CHECK(r->out_len == 0 && r->out[0] == '\0', "out [%s]", r->out);
    CHECK(strstr(r->err, message) != NULL, "err [%s], want [%s]", r->err, message);
    CHECK(r->err_len == strlen(r->err) && r->err_len > 0 && r->err[r->err_len - 1] == '\n' &&
              strchr(r->err, '\n') == r->err + r->err_len - 1,
          "err is not one line: [%s]", r->err);
}

/* ---- the tests ---- */

/* The reference case gives the CLI's bytes and its figures. */
static void estimate_reference(void **state)
{
    (void)state;
    cli_tool_result r;
    assert_int_equal(RUN(&r, ESTIMATE_REF), 0);
    assert_int_equal(r.status, CLI_OK);
    assert_string_equal(r.out, ref_estimate);
    assert_int_equal(r.out_len, strlen(ref_estimate));
    assert_int_equal(r.err_len, 0);
    assert_string_equal(r.err, "");
    /* The figures the estimator page shows: 2.5 ids/ms, 0.06%, 39.1%,
     * 69.7 years, 800 GB. */
    assert_non_null(strstr(r.out, "\"busiest_ids_per_ms\":2.5,"));
    assert_non_null(strstr(r.out, "\"seq_share_pct\":0.06103515625,"));
    assert_non_null(strstr(r.out, "\"worker_ids_in_use_pct\":39.0625,"));
    assert_non_null(strstr(r.out, "\"lifespan_years\":69.7,"));
    assert_non_null(strstr(r.out, "\"bytes_saved_total\":800000000000,"));
    cli_tool_result_free(&r);
    assert_null(r.out);
}

/* Each tool, captured, prints what it prints uncaptured (to fd 1). */
static void same_as_command_line(void **state)
{
    (void)state;
    struct {
        int (*cmd)(int, char **);
        char *argv[16];
    } cases[] = {
        {cli_cmd_estimate, {ESTIMATE_REF, NULL}},
        {cli_cmd_estimate,
         {"estimate", "--rate", "1e6", "--processes", "5000", "--layout", "sonyflake", NULL}},
        {cli_cmd_birthday, {BIRTHDAY_REF, NULL}},
        {cli_cmd_birthday,
         {"birthday", "--bits", "74", "--per-ms", "--rate", "1e6", "--points", "7", NULL}},
        {cli_cmd_plan,
         {"plan", "--json", "--layout", "discord", "--workers", "100", "--peak", "5000",
          "--node", "worker=3", "--at", "2030-01-01T00:00:00Z", NULL}},
        {cli_cmd_plan, {"plan", "--workers", "2000", "--at", "1700000000000", NULL}},
        /* As /v1/decode runs it; upper case in, the canonical text out. */
        {cli_cmd_decode,
         {"decode", "--json", "--kind", "uuid", "--", "017F22E2-79B0-7CC3-98C4-DC0C0C07398F",
          NULL}},
        {cli_cmd_decode,
         {"decode", "--json", "01arz3ndektsv4rrffq69g5fav", "507F1F77BCF86CD799439011",
          "1541815603606036480", NULL}},
        {cli_cmd_decode, {"decode", "0x1565c2f5d6400000", "--layout", "discord", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *copy[16];
        memcpy(copy, cases[i].argv, sizeof copy);
        int status;
        size_t len;
        char *want = uncaptured(cases[i].cmd, copy, &status, &len);
        assert_int_equal(status, CLI_OK);
        cli_tool_result r;
        assert_int_equal(run(&r, cases[i].argv), 0);
        CHECK(r.status == CLI_OK && r.err_len == 0, "case %zu: %d [%s]", i, r.status, r.err);
        CHECK(r.out_len == len && memcmp(r.out, want, len) == 0,
              "case %zu: captured [%s], uncaptured [%s]", i, r.out, want);
        cli_tool_result_free(&r);
        free(want);
    }
    cli_tool_result r;
    assert_int_equal(RUN(&r, BIRTHDAY_REF), 0);
    assert_string_equal(r.out, ref_birthday);
    cli_tool_result_free(&r);
    /* RFC 9562's UUIDv7 example, as the command prints it. */
    assert_int_equal(RUN(&r, "decode", "--json", "--", "017F22E2-79B0-7CC3-98C4-DC0C0C07398F"), 0);
    assert_string_equal(r.out, "{\"id\":\"017f22e2-79b0-7cc3-98c4-dc0c0c07398f\",\"kind\":\"uuid\","
                               "\"version\":7,\"variant\":\"rfc9562\",\"time\":"
                               "\"2022-02-22T19:22:22.000Z\",\"unix_ms\":1645557742000}\n");
    cli_tool_result_free(&r);
}

/* Errors go to r->err with status 2; nothing to the process's streams,
 * whether the run fails or not. */
static void errors_captured(void **state)
{
    (void)state;
    fd_trap t;
    cli_tool_result r[7];
    trap_fds(&t);
    RUN(&r[6], "decode", "--json", "--kind", "ulid", "--", "01ARZ3NDEKTSV4RRFFQ69G5FAU");
    RUN(&r[0], "estimate", "--json", "--rate=0", "--processes=1");
    RUN(&r[1], "plan", "--json", "--workers=0");
    RUN(&r[2], "birthday", "--bits=300", "--rate=1");
    RUN(&r[3], "plan", "--layout=nope");
    RUN(&r[4], "estimate", "--processes=1");
    RUN(&r[5], ESTIMATE_REF);
    size_t len;
    char *leaked = release_fds(&t, &len);
    CHECK(len == 0, "written to fd 1 or 2: [%s]", leaked);
    free(leaked);

    expect_usage(&r[0], "idmint: estimate: bad --rate '0': must be above 0 and at most 1e12\n");
    assert_string_equal(r[0].err,
                        "idmint: estimate: bad --rate '0': must be above 0 and at most 1e12\n");
    expect_usage(&r[1], "idmint: plan: bad --workers '0': must be 1 to 4294967296\n");
    expect_usage(&r[2], "idmint: birthday: bad --bits '300'");
    expect_usage(&r[3], "idmint: plan: unknown layout 'nope'");
    expect_usage(&r[4], "idmint: estimate: missing --rate");
    assert_int_equal(r[5].status, CLI_OK);
    assert_string_equal(r[5].out, ref_estimate);
    expect_usage(&r[6], "idmint: decode: bad ULID '01ARZ3NDEKTSV4RRFFQ69G5FAU': malformed text");
    for (size_t i = 0; i < 7; i++)
        cli_tool_result_free(&r[i]);
}

/* The state directory of the refused runs (made by setup, emptied and
 * removed by teardown, even when the test fails). */
static char refused_dir[] = "/tmp/idm_test_tools_XXXXXX";

/* The entries of refused_dir, removed when remove is set. */
static int dir_entries(bool remove)
{
    DIR *d = opendir(refused_dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        if (remove) {
            char path[sizeof refused_dir + 256];
            snprintf(path, sizeof path, "%s/%s", refused_dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
    return n;
}

static int refused_setup(void **state)
{
    (void)state;
    if (mkdtemp(refused_dir) == NULL)
        return -1;
    /* What a run that took the ordinal would need to succeed: the lock's
     * directory, and the ordinal from the host name or a variable. */
    return setenv("IDMINT_STATE_DIR", refused_dir, 1) != 0 ||
                   setenv("IDM_TEST_ORDINAL", "3", 1) != 0 ||
                   setenv("IDM_TEST_HOSTNAME", "web-3", 1) != 0
               ? -1
               : 0;
}

static int refused_teardown(void **state)
{
    (void)state;
    unsetenv("IDMINT_STATE_DIR");
    unsetenv("IDM_TEST_ORDINAL");
    unsetenv("IDM_TEST_HOSTNAME");
    dir_entries(true);
    return rmdir(refused_dir);
}

/* --plot, an ordinal --node and --help are refused, touching nothing. */
static void refused(void **state)
{
    (void)state;
    char plot[sizeof refused_dir + 16];
    snprintf(plot, sizeof plot, "%s/p.svg", refused_dir);

    fd_trap t;
    cli_tool_result r[9];
    trap_fds(&t);
    RUN(&r[0], "birthday", "--bits=64", "--rate=1", "--plot", plot);
    RUN(&r[1], "birthday", "--json", "--bits=64", "--rate=1", "--plot=");
    RUN(&r[2], "plan", "--node", "worker=ordinal");
    RUN(&r[3], "plan", "--json", "--node=worker=ordinal:IDM_TEST_ORDINAL");
    RUN(&r[4], "plan", "--help");
    RUN(&r[5], "estimate", "-h");
    RUN(&r[6], "birthday", "--bits=64", "--help");
    RUN(&r[7], "plan", "--json", "--node=worker=3", "--at=2030-01-01T00:00:00Z");
    RUN(&r[8], "decode", "--help");
    size_t len;
    char *leaked = release_fds(&t, &len);
    CHECK(len == 0, "written to fd 1 or 2: [%s]", leaked);
    free(leaked);
    /* Nothing was written: no chart, no lock file. */
    assert_int_equal(dir_entries(false), 0);

    expect_usage(&r[0], "idmint: birthday: --plot writes a file: not available here\n");
    expect_usage(&r[1], "idmint: birthday: --plot writes a file: not available here\n");
    expect_usage(&r[2], "idmint: plan: --node worker=ordinal: the platform's ordinal takes a "
                        "lock for the whole process: not available here");
    expect_usage(&r[3], "idmint: plan: --node worker=ordinal:IDM_TEST_ORDINAL: the platform's "
                        "ordinal");
    expect_usage(&r[4], "idmint: plan: --help prints the usage: not available here\n");
    expect_usage(&r[5], "idmint: estimate: --help prints the usage: not available here\n");
    expect_usage(&r[6], "idmint: birthday: --help prints the usage: not available here\n");
    assert_int_equal(r[7].status, CLI_OK);
    assert_non_null(strstr(r[7].out, "\"worker\":3"));
    expect_usage(&r[8], "idmint: decode: --help prints the usage: not available here\n");
    for (size_t i = 0; i < 9; i++)
        cli_tool_result_free(&r[i]);
    assert_false(cli_captured());
}

/* An unknown tool is -1 with a message; the parameter tables. */
static void tools_and_params(void **state)
{
    (void)state;
    cli_tool_result r;
    char *argv[] = {"layout", "--json", NULL};
    assert_int_equal(cli_tool_run("layout", 2, argv, &r), -1);
    assert_int_equal(r.status, CLI_FAIL);
    assert_null(r.out);
    assert_non_null(strstr(r.err, "unknown tool 'layout'"));
    assert_int_equal(r.err_len, strlen(r.err));
    cli_tool_result_free(&r);
    assert_int_equal(cli_tool_run(NULL, 2, argv, &r), -1);
    cli_tool_result_free(&r);
    assert_int_equal(cli_tool_run("plan", 0, argv, &r), -1);
    assert_int_equal(r.status, CLI_FAIL);
    cli_tool_result_free(&r);
    assert_null(cli_tool_params("layout"));
    assert_null(cli_tool_params(NULL));
    /* decode's id is its argument: no parameter from a query. */
    assert_non_null(cli_tool_params("decode"));
    assert_null(cli_tool_params("decode")[0].name);

    static const char *const want[][10] = {
        {"plan", "layout", "epoch", "workers", "peak", "node", "at", NULL},
        {"estimate", "rate", "processes", "skew", "surge", "rows", "indexes", "layout", "epoch",
         NULL},
        {"birthday", "bits", "rate", "duration", "per-ms", "points", NULL},
    };
    for (size_t t = 0; t < 3; t++) {
        const cli_tool_param *p = cli_tool_params(want[t][0]);
        assert_non_null(p);
        size_t i = 0;
        for (; p[i].name != NULL; i++) {
            assert_non_null(want[t][i + 1]);
            assert_string_equal(p[i].name, want[t][i + 1]);
            assert_int_equal(p[i].flag, strcmp(p[i].name, "per-ms") == 0);
            assert_int_equal(p[i].repeat, strcmp(p[i].name, "node") == 0);
            /* The tool takes it: without its value it says so, never
             * "unknown option". */
            char opt[40];
            snprintf(opt, sizeof opt, "--%s%s", p[i].name, p[i].flag ? "=x" : "");
            assert_int_equal(RUN(&r, (char *)want[t][0], opt), 0);
            assert_int_equal(r.status, CLI_USAGE);
            CHECK(strstr(r.err, p[i].flag ? "takes no value" : "needs a value") != NULL,
                  "%s %s: [%s]", want[t][0], opt, r.err);
            cli_tool_result_free(&r);
        }
        assert_null(want[t][i + 1]);
    }
}

/* ---- many threads at once ---- */

#define THREADS 4
#define RUNS 200
#define KINDS 6

static char *const thread_cases[KINDS][14] = {
    {ESTIMATE_REF, NULL},
    {BIRTHDAY_REF, NULL},
    {"plan", "--json", "--layout", "instagram", "--workers", "300", "--peak", "2000", "--node",
     "shard=7", "--at", "2031-05-06T07:08:09Z", NULL},
    {"plan", "--workers=0", NULL},
    {"birthday", "--bits=80", "--per-ms", "--rate=1e7", "--duration=30d", "--points=40", NULL},
    {"decode", "--json", "--kind", "ulid", "--", "01arz3ndektsv4rrffq69g5fav", NULL},
};

typedef struct expected {
    cli_tool_result r[KINDS];
} expected;

typedef struct worker {
    const expected *want;
    unsigned seed;
    int mismatches;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < RUNS; i++) {
        size_t k = (w->seed + (unsigned)i) % KINDS;
        char *argv[14];
        memcpy(argv, thread_cases[k], sizeof argv);
        cli_tool_result r;
        const cli_tool_result *want = &w->want->r[k];
        if (run(&r, argv) != 0 || r.status != want->status || r.out_len != want->out_len ||
            r.err_len != want->err_len || memcmp(r.out, want->out, r.out_len) != 0 ||
            memcmp(r.err, want->err, r.err_len) != 0)
            w->mismatches++;
        cli_tool_result_free(&r);
    }
    return NULL;
}

static void threads_at_once(void **state)
{
    (void)state;
    expected want;
    for (size_t k = 0; k < KINDS; k++) {
        char *argv[14];
        memcpy(argv, thread_cases[k], sizeof argv);
        assert_int_equal(run(&want.r[k], argv), 0);
    }
    assert_string_equal(want.r[0].out, ref_estimate);
    assert_int_equal(want.r[3].status, CLI_USAGE);
    assert_int_equal(want.r[4].status, CLI_OK);
    assert_int_equal(want.r[5].status, CLI_OK);

    fd_trap t;
    trap_fds(&t);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        w[i] = (worker){&want, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (unsigned i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    size_t len;
    char *leaked = release_fds(&t, &len);
    CHECK(len == 0, "written to fd 1 or 2: [%s]", leaked);
    free(leaked);
    for (unsigned i = 0; i < THREADS; i++)
        CHECK(w[i].mismatches == 0, "thread %u: %d of %d runs differ", i, w[i].mismatches, RUNS);
    for (size_t k = 0; k < KINDS; k++)
        cli_tool_result_free(&want.r[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(estimate_reference),
        cmocka_unit_test(same_as_command_line),
        cmocka_unit_test(errors_captured),
        cmocka_unit_test_setup_teardown(refused, refused_setup, refused_teardown),
        cmocka_unit_test(tools_and_params),
        cmocka_unit_test(threads_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
