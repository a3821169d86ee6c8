/* SPDX-License-Identifier: MIT */
/*
 * idmintd's configuration (src/server/config.c, through config.h alone):
 * the key table (every key, its variable, its place in the printed order);
 * the defaults; every key from the config file, the environment and a flag,
 * and their precedence (flag > environment > file > default); --config from
 * the flag and from IDMINT_CONFIG; the file syntax (comments, blank lines,
 * whitespace, quotes, CRLF); every error case, each message naming its source
 * (FILE:LINE, the variable, the flag), key and value; strict numbers and
 * their ranges; the text layout that needs an epoch; --check-config and
 * --help; the printed configuration and the usage text; and
 * idmd_config_check, the checks that need several keys or a file (the
 * layout against node, lease-field, count-max and the clock; the URLs;
 * token, key and offset files), each message naming the source, key and
 * value, and what it fills in for defaults.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>
#include <idmint/segment.h>

#include "config.h"
#include "testutil.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = idm_test_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    idm_test_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
    return 0;
}

/* Write a file under the test directory; its path goes to path[len]. */
static void write_file(const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

#define MAXV 64

/* Build from NULL-terminated lists of arguments (without argv[0]) and
 * environment entries. */
static int build3(idmd_config *c, const char *const *args, const char *const *env, bool *check,
                  bool *help, char *err, size_t errlen)
{
    char *argv[MAXV];
    char *envp[MAXV];
    int argc = 0;
    argv[argc++] = (char *)"idmintd";
    for (size_t i = 0; args != NULL && args[i] != NULL; i++) {
        assert_true(argc < MAXV - 1);
        argv[argc++] = (char *)args[i];
    }
    argv[argc] = NULL;
    size_t n = 0;
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        assert_true(n < MAXV - 1);
        envp[n++] = (char *)env[i];
    }
    envp[n] = NULL;
    memset(err, 'Z', errlen);
    err[errlen - 1] = '\0';
    int rc = idmd_config_build(c, argc, argv, envp, check, help, err, errlen);
    if (rc == 0)
        CHECK(err[0] == '\0', "success leaves an error: %s", err);
    else
        CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "bad error line '%s'", err);
    return rc;
}

static int build(idmd_config *c, const char *const *args, const char *const *env, char *err,
                 size_t errlen)
{
    bool check = true, help = true;
    int rc = build3(c, args, env, &check, &help, err, errlen);
    if (rc == 0) {
        CHECK(!help, "help set without --help");
    }
    return rc;
}

/* A step that builds from args (and env): build, or build_check (below),
 * which also checks; 0 or -1, err holds the message. */
typedef int (*build_fn)(idmd_config *c, const char *const *args, const char *const *env,
                        char *err, size_t errlen);

/* step (named what in a failure) passes. */
static void expect_ok_by(build_fn step, const char *what, idmd_config *c,
                         const char *const *args, const char *const *env)
{
    char err[1024];
    int rc = step(c, args, env, err, sizeof err);
    CHECK(rc == 0, "%s failed: %s", what, err);
}

/* step (named what in a failure) fails and its message holds each of the
 * NULL-terminated needles. */
static void expect_fail_by(build_fn step, const char *what, const char *const *args,
                           const char *const *env, ...)
{
    idmd_config c;
    char err[1024];
    int rc = step(&c, args, env, err, sizeof err);
    CHECK(rc == -1, "%s passed, expected an error", what);
    va_list ap;
    va_start(ap, env);
    for (const char *want = va_arg(ap, const char *); want != NULL;
         want = va_arg(ap, const char *))
        CHECK(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
    va_end(ap);
}

/* The build passes; the build fails with the NULL-terminated needles
 * (expect_fail(args, env, needle..., NULL)). */
#define expect_ok(c, args, env) expect_ok_by(build, "build", c, args, env)
#define expect_fail(...) expect_fail_by(build, "build", __VA_ARGS__)

static bool has_line(const idmd_config *c, const char *line)
{
    char buf[8192];
    char want[1200];
    idmd_config_print(c, buf, sizeof buf);
    snprintf(want, sizeof want, "%s\n", line);
    /* at the start of a line */
    for (const char *p = buf; (p = strstr(p, want)) != NULL; p++)
        if (p == buf || p[-1] == '\n')
            return true;
    return false;
}

#define EXPECT_LINE(c, line)                                                  \
    do {                                                                      \
        char dump_[8192];                                                     \
        idmd_config_print((c), dump_, sizeof dump_);                          \
        CHECK(has_line((c), (line)), "no line '%s' in:\n%s", (line), dump_);  \
    } while (0)

/* ---- defaults ---- */

static void test_defaults(void **state)
{
    (void)state;
    idmd_config d, c;
    idmd_config_defaults(&d);
    assert_string_equal(d.listen_host, "127.0.0.1");
    assert_int_equal(d.listen_port, 7070);
    assert_string_equal(d.data_dir, "./var");
    assert_string_equal(d.lease, "");
    assert_int_equal(d.lease_ttl_ms, 10000);
    assert_int_equal(d.lease_ttl_ms, IDM_LEASE_TTL_DEFAULT_MS);
    assert_string_equal(d.store, "");
    assert_string_equal(d.layout, "twitter");
    assert_false(d.epoch_set);
    assert_string_equal(d.policy, "logical");
    assert_string_equal(d.exhaust, "wait");
    assert_string_equal(d.node, "");
    assert_string_equal(d.lease_field, "worker");
    assert_int_equal(d.count_max, 10000);
    assert_string_equal(d.token_file, "");
    assert_int_equal(d.idle_timeout_ms, 10000);
    assert_int_equal(d.head_timeout_ms, 5000);
    assert_int_equal(d.max_request, 8192);
    assert_int_equal(d.threads, 2);
    assert_int_equal(d.max_connections, 1024);
    assert_int_equal(d.max_connections_per_ip, 256);
    assert_string_equal(d.admin_host, "");
    assert_int_equal(d.admin_port, 0);
    assert_int_equal(d.count_max_layout, 0);
    assert_string_equal(d.note, "");
    for (int k = 0; k < IDMD_KEYS_MAX; k++)
        assert_string_equal(d.source[k], "");
    assert_string_equal(d.clock, "system");
    assert_int_equal(d.segment_wait_ms, 1000);
    assert_int_equal(d.store_timeout_ms, 5000);
    assert_int_equal(d.store_timeout_ms, IDM_STORE_TIMEOUT_MS);

    /* nothing given: the defaults; other variables are not ours */
    const char *env[] = {"PATH=/bin", "IDM_TEST_DATA=/x", "idmint_listen=junk", "IDMINTX=1",
                         "IDMINT_STATE_DIR=/somewhere", NULL};
    bool check = true, help = true;
    char err[256];
    assert_int_equal(build3(&c, NULL, env, &check, &help, err, sizeof err), 0);
    assert_false(check);
    assert_false(help);
    assert_memory_equal(&c, &d, sizeof c);

    /* NULL envp, argc 1 */
    char *argv[] = {(char *)"idmintd", NULL};
    assert_int_equal(idmd_config_build(&c, 1, argv, NULL, &check, &help, err, sizeof err), 0);
    assert_memory_equal(&c, &d, sizeof c);
}

/* ---- every key from every source ---- */

typedef struct keycase {
    const char *key, *env;
    const char *v[3];     /* for the file, the environment, the flag */
    const char *shown[3]; /* how idmd_config_print shows each */
} keycase;

static const keycase keycases[] = {
    {"listen", "IDMINT_LISTEN", {"10.0.0.1:80", "localhost:0", "[::1]:9000"},
     {"10.0.0.1:80", "localhost:0", "[::1]:9000"}},
    {"admin-listen", "IDMINT_ADMIN_LISTEN", {"10.0.0.1:81", "", "[::1]:9001"},
     {"10.0.0.1:81", "\"\"", "[::1]:9001"}},
    {"data-dir", "IDMINT_DATA_DIR", {"/a", "/b b", "rel/c"}, {"/a", "/b b", "rel/c"}},
    {"lease", "IDMINT_LEASE", {"file:///l1", "etcd://h:2379/x", "file:///l3"},
     {"file:///l1", "etcd://h:2379/x", "file:///l3"}},
    {"lease-ttl", "IDMINT_LEASE_TTL", {"1000", "3600000", "5000"}, {"1000", "3600000", "5000"}},
    {"store", "IDMINT_STORE", {"sqlite:///s1", "sqlite:///s2", "sqlite:///s3"},
     {"sqlite:///s1", "sqlite:///s2", "sqlite:///s3"}},
    {"layout", "IDMINT_LAYOUT", {"discord", "instagram", "sonyflake"},
     {"discord", "instagram", "sonyflake"}},
    {"epoch", "IDMINT_EPOCH", {"1288834974657", "2024-01-01", "2020-01-01T00:00:00Z"},
     {"1288834974657", "1704067200000", "1577836800000"}},
    {"policy", "IDMINT_POLICY", {"refuse", "wait", "logical"}, {"refuse", "wait", "logical"}},
    {"exhaust", "IDMINT_EXHAUST", {"borrow", "wait", "borrow"}, {"borrow", "wait", "borrow"}},
    {"node", "IDMINT_NODE", {"datacenter=1", "datacenter=2,shard=3", "region=7"},
     {"datacenter=1", "datacenter=2,shard=3", "region=7"}},
    {"lease-field", "IDMINT_LEASE_FIELD", {"machine", "shard", "worker_2"},
     {"machine", "shard", "worker_2"}},
    {"count-max", "IDMINT_COUNT_MAX", {"1", "1000000", "77"}, {"1", "1000000", "77"}},
    {"token-file", "IDMINT_TOKEN_FILE", {"/t1", "/t2", "/t3"}, {"/t1", "/t2", "/t3"}},
    {"idle-timeout", "IDMINT_IDLE_TIMEOUT", {"100", "3600000", "250"},
     {"100", "3600000", "250"}},
    {"head-timeout", "IDMINT_HEAD_TIMEOUT", {"100", "3600000", "750"},
     {"100", "3600000", "750"}},
    {"max-request", "IDMINT_MAX_REQUEST", {"1024", "1048576", "4096"},
     {"1024", "1048576", "4096"}},
    {"threads", "IDMINT_THREADS", {"1", "64", "8"}, {"1", "64", "8"}},
    {"max-connections", "IDMINT_MAX_CONNECTIONS", {"1", "100000", "5"}, {"1", "100000", "5"}},
    {"max-connections-per-ip", "IDMINT_MAX_CONNECTIONS_PER_IP", {"1", "100000", "9"},
     {"1", "100000", "9"}},
    {"clock", "IDMINT_CLOCK", {"offset-file:/tmp/o1", "system", "offset-file:/x"},
     {"offset-file:/tmp/o1", "system", "offset-file:/x"}},
    {"segment-wait", "IDMINT_SEGMENT_WAIT", {"0", "60000", "5"}, {"0", "60000", "5"}},
    {"store-timeout", "IDMINT_STORE_TIMEOUT", {"1", "3600000", "250"}, {"1", "3600000", "250"}},
    {"opaque-key-file", "IDMINT_OPAQUE_KEY_FILE", {"/k1", "/k2", "/k3"}, {"/k1", "/k2", "/k3"}},
};
#define NKEYCASES (sizeof keycases / sizeof keycases[0])

/* The index of a key in keycases: in idmd_config.source too (the
 * test below holds keycases to the printed order, which source follows). */
static int key_index(const char *key)
{
    for (size_t i = 0; i < NKEYCASES; i++)
        if (strcmp(keycases[i].key, key) == 0)
            return (int)i;
    fail_msg("no key '%s' in keycases", key);
    return -1;
}

/* keycases is the whole key table, in its order: idmd_config_print prints
 * exactly these keys, in this order; each key's variable is IDMINT_ and its
 * name upper case with '_' for '-', and a value from it is noted as coming
 * from that variable at the key's index of idmd_config.source. */
static void test_key_table_complete(void **state)
{
    (void)state;
    idmd_config c;
    char dump[8192];
    assert_true(NKEYCASES <= IDMD_KEYS_MAX);
    idmd_config_defaults(&c);
    idmd_config_print(&c, dump, sizeof dump);
    const char *p = dump;
    for (size_t i = 0; i < NKEYCASES; i++) {
        size_t n = strlen(keycases[i].key);
        CHECK(strncmp(p, keycases[i].key, n) == 0 && strncmp(p + n, " = ", 3) == 0,
              "key %zu: expected '%s = ' at:\n%s", i, keycases[i].key, p);
        p = strchr(p, '\n');
        assert_non_null(p);
        p++;

        char env[64], var[600];
        snprintf(env, sizeof env, "IDMINT_%s", keycases[i].key);
        for (char *q = env; *q != '\0'; q++)
            *q = *q == '-' ? '_' : (char)(*q >= 'a' && *q <= 'z' ? *q - 'a' + 'A' : *q);
        assert_string_equal(keycases[i].env, env);
        snprintf(var, sizeof var, "%s=%s", env, keycases[i].v[1]);
        const char *e[] = {var, NULL};
        expect_ok(&c, NULL, e);
        for (size_t j = 0; j < IDMD_KEYS_MAX; j++)
            assert_string_equal(c.source[j], j == i ? env : "");
    }
    assert_string_equal(p, "");
}

/* One source combination: bit 0 file, bit 1 environment, bit 2 flag
 * (flag_eq: --key=VALUE rather than --key VALUE). */
static void one_combination(const keycase *k, unsigned mask, bool flag_eq)
{
    char path[1200], text[512], envv[512], flagv[512];
    const char *args[8] = {NULL};
    const char *env[4] = {NULL};
    size_t na = 0, ne = 0;
    if (mask & 1) {
        snprintf(text, sizeof text, "%s = %s\n", k->key, k->v[0]);
        write_file("keys.conf", text, path, sizeof path);
        args[na++] = "--config";
        args[na++] = path;
    }
    if (mask & 2) {
        snprintf(envv, sizeof envv, "%s=%s", k->env, k->v[1]);
        env[ne++] = envv;
    }
    if (mask & 4) {
        if (flag_eq) {
            snprintf(flagv, sizeof flagv, "--%s=%s", k->key, k->v[2]);
            args[na++] = flagv;
        } else {
            snprintf(flagv, sizeof flagv, "--%s", k->key);
            args[na++] = flagv;
            args[na++] = k->v[2];
        }
    }
    int winner = (mask & 4) ? 2 : (mask & 2) ? 1 : 0;
    idmd_config c;
    expect_ok(&c, args, env);
    char line[600];
    snprintf(line, sizeof line, "%s = %s", k->key, k->shown[winner]);
    EXPECT_LINE(&c, line);
}

static void test_each_key_each_source(void **state)
{
    (void)state;
    for (size_t i = 0; i < NKEYCASES; i++) {
        for (unsigned mask = 1; mask < 8; mask++) {
            one_combination(&keycases[i], mask, false);
            if (mask & 4)
                one_combination(&keycases[i], mask, true);
        }
    }
}

static void test_struct_fields(void **state)
{
    (void)state;
    idmd_config c;
    const char *args[] = {"--listen", "[2001:db8::1]:443", "--epoch", "1700000000000",
                          "--count-max", "123", "--max-request", "2048", "--threads", "3",
                          "--max-connections", "99", "--lease-ttl", "2000",
                          "--idle-timeout", "300", "--segment-wait", "0", "--store-timeout",
                          "1500", NULL};
    expect_ok(&c, args, NULL);
    assert_string_equal(c.listen_host, "2001:db8::1"); /* bare, no brackets */
    assert_int_equal(c.listen_port, 443);
    assert_true(c.epoch_set);
    assert_int_equal(c.epoch, INT64_C(1700000000000));
    assert_int_equal(c.count_max, 123);
    assert_int_equal(c.max_request, 2048);
    assert_int_equal(c.threads, 3);
    assert_int_equal(c.max_connections, 99);
    assert_int_equal(c.lease_ttl_ms, 2000);
    assert_int_equal(c.idle_timeout_ms, 300);
    assert_int_equal(c.segment_wait_ms, 0);
    assert_int_equal(c.store_timeout_ms, 1500);
    EXPECT_LINE(&c, "listen = [2001:db8::1]:443");

    const char *args2[] = {"--listen=localhost:65535", NULL};
    expect_ok(&c, args2, NULL);
    assert_string_equal(c.listen_host, "localhost");
    assert_int_equal(c.listen_port, 65535);
}

/* Keys from all three sources at once, each source winning where it is
 * the highest one to give the key. */
static void test_precedence_mixed(void **state)
{
    (void)state;
    char path[1200];
    write_file("mixed.conf",
               "threads = 3\n"
               "count-max = 30\n"
               "policy = refuse\n"
               "layout = discord\n",
               path, sizeof path);
    /* --config comes last on the line: the file is still applied first */
    const char *args[] = {"--threads", "5", "--config", path, NULL};
    const char *env[] = {"IDMINT_THREADS=4", "IDMINT_COUNT_MAX=40", NULL};
    idmd_config c;
    expect_ok(&c, args, env);
    assert_int_equal(c.threads, 5);
    assert_int_equal(c.count_max, 40);
    assert_string_equal(c.policy, "refuse");
    assert_string_equal(c.layout, "discord");
    assert_string_equal(c.exhaust, "wait"); /* default */
}

/* ---- --config and IDMINT_CONFIG ---- */

static void test_config_flag_and_env(void **state)
{
    (void)state;
    char good[1200], other[1200], broken[1200];
    write_file("good.conf", "threads = 7\n", good, sizeof good);
    write_file("other.conf", "threads = 9\n", other, sizeof other);
    write_file("broken.conf", "no such key = 1\n", broken, sizeof broken);
    idmd_config c;

    const char *a1[] = {"--config", good, NULL};
    expect_ok(&c, a1, NULL);
    assert_int_equal(c.threads, 7);

    char eqform[1300];
    snprintf(eqform, sizeof eqform, "--config=%s", other);
    const char *a2[] = {eqform, NULL};
    expect_ok(&c, a2, NULL);
    assert_int_equal(c.threads, 9);

    char envc[1300];
    snprintf(envc, sizeof envc, "IDMINT_CONFIG=%s", good);
    const char *e1[] = {envc, NULL};
    expect_ok(&c, NULL, e1);
    assert_int_equal(c.threads, 7);

    /* the flag wins, and the variable's file is not even read */
    char envb[1300];
    snprintf(envb, sizeof envb, "IDMINT_CONFIG=%s", broken);
    const char *e2[] = {envb, NULL};
    expect_ok(&c, a2, e2);
    assert_int_equal(c.threads, 9);


    /* errors in the file named by either source name it */
    const char *a3[] = {"--config", broken, NULL};
    expect_fail(a3, NULL, broken, ":1:", "unknown key 'no such key'", NULL);
    expect_fail(NULL, e2, broken, ":1:", NULL);

    /* a missing file, an empty name, a directory, a FIFO */
    char missing[1200];
    snprintf(missing, sizeof missing, "%s/missing.conf", g_dir);
    const char *a4[] = {"--config", missing, NULL};
    expect_fail(a4, NULL, "--config", missing, NULL);
    char envm[1300];
    snprintf(envm, sizeof envm, "IDMINT_CONFIG=%s", missing);
    const char *e3[] = {envm, NULL};
    expect_fail(NULL, e3, "IDMINT_CONFIG", missing, NULL);
    const char *a5[] = {"--config=", NULL};
    expect_fail(a5, NULL, "--config", NULL);
    const char *e4[] = {"IDMINT_CONFIG=", NULL};
    expect_fail(NULL, e4, "IDMINT_CONFIG", NULL);
    const char *a6[] = {"--config", g_dir, NULL};
    expect_fail(a6, NULL, g_dir, "not a regular file (it is a directory)", NULL);
    char fifo[1200];
    snprintf(fifo, sizeof fifo, "%s/fifo.conf", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *a7[] = {"--config", fifo, NULL};
    expect_fail(a7, NULL, fifo, "not a regular file (it is a FIFO)", NULL);

    /* --config twice, or without its value */
    const char *a8[] = {"--config", good, "--config", other, NULL};
    expect_fail(a8, NULL, "--config given twice", NULL);
    const char *a9[] = {"--config", NULL};
    expect_fail(a9, NULL, "--config needs a value", NULL);
}

/* ---- the file's syntax ---- */

static void test_file_syntax(void **state)
{
    (void)state;
    char path[1200];
    write_file("syntax.conf",
               "# a comment\n"
               "\n"
               "   \t\n"
               "   # an indented comment = with an equals sign\n"
               "threads=3\n"
               "  count-max\t=\t  42   \n"
               "data-dir = \"  /with space # not a comment = x  \"\n"
               "node = \"\"\n"
               "lease = file:///a=b\r\n"
               "token-file = \"/quoted\"/path\"\n"
               "policy = wait", /* no final newline */
               path, sizeof path);
    const char *args[] = {"--config", path, NULL};
    idmd_config c;
    expect_ok(&c, args, NULL);
    assert_int_equal(c.threads, 3);
    assert_int_equal(c.count_max, 42);
    assert_string_equal(c.data_dir, "  /with space # not a comment = x  ");
    assert_string_equal(c.node, "");
    assert_string_equal(c.lease, "file:///a=b");
    assert_string_equal(c.token_file, "/quoted\"/path");
    assert_string_equal(c.policy, "wait");

    /* the printed form quotes what needs it and reads back the same */
    char dump[8192];
    idmd_config_print(&c, dump, sizeof dump);
    assert_non_null(strstr(dump, "data-dir = \"  /with space # not a comment = x  \"\n"));

    /* an empty file is fine */
    write_file("empty.conf", "", path, sizeof path);
    expect_ok(&c, args, NULL);
    /* a line of exactly 4096 bytes is fine, 4097 is not */
    char *big = malloc(5000);
    assert_non_null(big);
    memset(big, '#', 4096);
    strcpy(big + 4096, "\nthreads = 4\n");
    write_file("long.conf", big, path, sizeof path);
    expect_ok(&c, args, NULL);
    assert_int_equal(c.threads, 4);
    memset(big, '#', 4097);
    strcpy(big + 4097, "\nthreads = 4\n");
    write_file("long.conf", big, path, sizeof path);
    expect_fail(args, NULL, path, ":1:", "longer than 4096", NULL);
    free(big);
}

static void test_file_errors(void **state)
{
    (void)state;
    char path[1200], where[1300];
    const char *args[] = {"--config", path, NULL};

    write_file("e1.conf", "threads = 2\n# c\nbogus = 1\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:3:", path);
    expect_fail(args, NULL, where, "unknown key 'bogus'", NULL);

    write_file("e2.conf", "threads = 2\n\nthreads = 3\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:3:", path);
    expect_fail(args, NULL, where, "key 'threads' given twice", NULL);

    write_file("e3.conf", "threads 2\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:1:", path);
    expect_fail(args, NULL, where, "'='", NULL);

    write_file("e4.conf", " = 2\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:1:", path);
    expect_fail(args, NULL, where, "no key", NULL);

    write_file("e5.conf", "data-dir = \"/unterminated\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:1:", path);
    expect_fail(args, NULL, where, "quote", NULL);
    write_file("e6.conf", "data-dir = \"/a\" trailing\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:1:", path);
    expect_fail(args, NULL, where, "quote", NULL);
    write_file("e7.conf", "data-dir = \"\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:1:", path);
    expect_fail(args, NULL, where, "quote", NULL);

    /* a value error names FILE:LINE, the key and the value */
    write_file("e8.conf", "\n\nthreads = 65\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:3: threads '65'", path);
    expect_fail(args, NULL, where, "1..64", NULL);

    /* keys are exact: no case folding, no underscores, no flag spelling */
    write_file("e9.conf", "Threads = 2\n", path, sizeof path);
    expect_fail(args, NULL, "unknown key 'Threads'", NULL);
    write_file("e10.conf", "data_dir = /x\n", path, sizeof path);
    expect_fail(args, NULL, "unknown key 'data_dir'", NULL);
    write_file("e11.conf", "--threads = 2\n", path, sizeof path);
    expect_fail(args, NULL, "unknown key '--threads'", NULL);

    /* a NUL byte */
    snprintf(path, sizeof path, "%s/nul.conf", g_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("threads = 2\0\n", 1, 13, f);
    fclose(f);
    expect_fail(args, NULL, "NUL", NULL);
}

/* ---- environment and flag errors ---- */

static void test_env_errors(void **state)
{
    (void)state;
    const char *e1[] = {"IDMINT_FOO=1", NULL};
    expect_fail(NULL, e1, "IDMINT_FOO", NULL);
    const char *e2[] = {"IDMINT_listen=1.2.3.4:5", NULL};
    expect_fail(NULL, e2, "IDMINT_listen", NULL);
    const char *e3[] = {"IDMINT_DATA-DIR=/x", NULL};
    expect_fail(NULL, e3, "IDMINT_DATA-DIR", NULL);
    const char *e4[] = {"IDMINT_THREADS=0", NULL};
    expect_fail(NULL, e4, "IDMINT_THREADS: threads '0'", "1..64", NULL);
    const char *e5[] = {"IDMINT_THREADS=3", "IDMINT_THREADS=4", NULL};
    expect_fail(NULL, e5, "IDMINT_THREADS", "twice", NULL);
    const char *e6[] = {"IDMINT_LISTEN=", NULL};
    expect_fail(NULL, e6, "IDMINT_LISTEN: listen ''", NULL);
    /* a bad variable is an error even when a flag sets the key */
    const char *a1[] = {"--threads", "3", NULL};
    const char *e7[] = {"IDMINT_THREADS=x", NULL};
    expect_fail(a1, e7, "IDMINT_THREADS", NULL);

    /* IDMINT_CONFIG and IDMINT_STATE_DIR are not keys but are allowed */
    idmd_config c;
    const char *e8[] = {"IDMINT_STATE_DIR=/s", "IDMINT_THREADS=6", NULL};
    expect_ok(&c, NULL, e8);
    assert_int_equal(c.threads, 6);
}

static void test_flag_errors(void **state)
{
    (void)state;
    const char *a1[] = {"--foo", "1", NULL};
    expect_fail(a1, NULL, "unknown flag '--foo'", NULL);
    const char *a2[] = {"-x", NULL};
    expect_fail(a2, NULL, "unknown flag '-x'", NULL);
    const char *a3[] = {"threads", NULL};
    expect_fail(a3, NULL, "unexpected argument 'threads'", NULL);
    const char *a4[] = {"--threads", NULL};
    expect_fail(a4, NULL, "--threads needs a value", NULL);
    const char *a5[] = {"--threads", "--check-config", NULL};
    expect_fail(a5, NULL, "--threads needs a value", NULL);
    const char *a6[] = {"--check-config=yes", NULL};
    expect_fail(a6, NULL, "--check-config takes no value", NULL);
    const char *a7[] = {"--threads", "2", "--threads=3", NULL};
    expect_fail(a7, NULL, "--threads given twice", NULL);
    const char *a8[] = {"--", NULL};
    expect_fail(a8, NULL, "'--'", NULL);
    const char *a9[] = {"--data_dir", "/x", NULL};
    expect_fail(a9, NULL, "unknown flag '--data_dir'", NULL);
    const char *a10[] = {"--THREADS", "2", NULL};
    expect_fail(a10, NULL, "unknown flag '--THREADS'", NULL);
    const char *a11[] = {"--threads=0", NULL};
    expect_fail(a11, NULL, "--threads: threads '0'", NULL);
    /* the flag's structure is checked before any file is read */
    const char *a12[] = {"--config", "/nonexistent/x.conf", "--bogus", NULL};
    expect_fail(a12, NULL, "--bogus", NULL);

    /* a value may start with a single '-' (and a bad one is named) */
    const char *a13[] = {"--threads", "-1", NULL};
    expect_fail(a13, NULL, "--threads: threads '-1'", NULL);
    /* --key= gives the empty value */
    const char *a14[] = {"--data-dir=", NULL};
    expect_fail(a14, NULL, "data-dir ''", "empty", NULL);
}

/* ---- strict numbers ---- */

typedef struct numcase {
    const char *key;
    uint64_t lo, hi;
} numcase;

static const numcase numcases[] = {
    {"lease-ttl", 1000, 3600000},   {"count-max", 1, 1000000},
    {"idle-timeout", 100, 3600000}, {"max-request", 1024, 1048576},
    {"threads", 1, 64},             {"max-connections", 1, 100000},
    {"segment-wait", 0, 60000},     {"head-timeout", 100, 3600000},
    {"max-connections-per-ip", 1, 100000}, {"store-timeout", 1, 3600000},
};

static void expect_set_fail(const char *key, const char *value, const char *why)
{
    idmd_config c, before;
    idmd_config_defaults(&c);
    before = c;
    char err[1024];
    char want[600];
    int rc = idmd_config_set(&c, key, value, "SRC", err, sizeof err);
    CHECK(rc == -1, "%s '%s' accepted", key, value);
    snprintf(want, sizeof want, "SRC: %s '%.*s", key, 100, value);
    CHECK(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
    if (why != NULL)
        CHECK(strstr(err, why) != NULL, "error '%s' lacks '%s'", err, why);
    CHECK(memcmp(&c, &before, sizeof c) == 0, "%s '%s' changed the config on failure", key,
          value);
}

static void expect_set_ok(const char *key, const char *value)
{
    idmd_config c;
    idmd_config_defaults(&c);
    char err[1024] = "";
    int rc = idmd_config_set(&c, key, value, "SRC", err, sizeof err);
    CHECK(rc == 0, "%s '%s' refused: %s", key, value, err);
}

static void test_numbers(void **state)
{
    (void)state;
    static const char *const malformed[] = {
        "-1", "+5", " 5", "5 ", "5x", "", "1e3", "0x10", "5.0", "1_000", "٣",
        "123456789012345678901", "99999999999999999999999999", "18446744073709551616", NULL};
    for (size_t i = 0; i < sizeof numcases / sizeof numcases[0]; i++) {
        const numcase *n = &numcases[i];
        for (size_t j = 0; malformed[j] != NULL; j++)
            expect_set_fail(n->key, malformed[j], NULL);
        char v[32];
        snprintf(v, sizeof v, "%" PRIu64, n->lo);
        expect_set_ok(n->key, v);
        snprintf(v, sizeof v, "%" PRIu64, n->hi);
        expect_set_ok(n->key, v);
        snprintf(v, sizeof v, "%" PRIu64, n->hi + 1);
        expect_set_fail(n->key, v, "out of range");
        if (n->lo > 0) {
            snprintf(v, sizeof v, "%" PRIu64, n->lo - 1);
            expect_set_fail(n->key, v, "out of range");
        }
        expect_set_fail(n->key, "18446744073709551615", "out of range");
        /* leading zeros are still decimal */
        snprintf(v, sizeof v, "00%" PRIu64, n->hi);
        expect_set_ok(n->key, v);
    }
}

/* ---- the other values ---- */

static void test_values(void **state)
{
    (void)state;
    /* policy, exhaust */
    expect_set_ok("policy", "logical");
    expect_set_ok("policy", "refuse");
    expect_set_ok("policy", "wait");
    expect_set_fail("policy", "Logical", "logical, refuse, wait or change-worker");
    expect_set_fail("policy", "", NULL);
    expect_set_fail("policy", "borrow", NULL);
    expect_set_fail("policy", "waiting", NULL);
    expect_set_ok("exhaust", "wait");
    expect_set_ok("exhaust", "borrow");
    expect_set_fail("exhaust", "logical", "wait or borrow");
    expect_set_fail("exhaust", "", NULL);

    /* listen */
    expect_set_ok("listen", "0.0.0.0:0");
    expect_set_ok("listen", "[::]:7070");
    expect_set_ok("listen", "[::ffff:1.2.3.4]:1");
    static const char *const bad_listen[] = {
        "", "127.0.0.1", ":80", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:+1",
        "1.2.3.4:8x", "256.1.1.1:80", "1.2.3:80", "1.2.3.4.5:80", "example.com:80",
        "LOCALHOST:80", " 1.2.3.4:80", "1.2.3.4 :80", "::1:80", "[::1]80", "[::1]", "[::1",
        "[]:80", "[zz]:80", "[1.2.3.4]:80", "[::1]:", "[::1]:99999", "1.2.3.4:0x50", NULL};
    for (size_t i = 0; bad_listen[i] != NULL; i++) {
        expect_set_fail("listen", bad_listen[i], NULL);
        if (bad_listen[i][0] != '\0')
            expect_set_fail("admin-listen", bad_listen[i], NULL);
    }
    expect_set_ok("admin-listen", "[::1]:0");
    /* admin-listen: empty is none, from any source */
    {
        idmd_config a;
        char e[256];
        idmd_config_defaults(&a);
        assert_int_equal(
            idmd_config_set(&a, "admin-listen", "127.0.0.1:8081", "S", e, sizeof e), 0);
        assert_string_equal(a.admin_host, "127.0.0.1");
        assert_int_equal(a.admin_port, 8081);
        assert_int_equal(a.listen_port, 7070); /* listen is apart */
        assert_int_equal(idmd_config_set(&a, "admin-listen", "", "S", e, sizeof e), 0);
        assert_string_equal(a.admin_host, "");
        assert_int_equal(a.admin_port, 0);
    }

    /* clock */
    expect_set_ok("clock", "system");
    expect_set_ok("clock", "offset-file:/tmp/off");
    static const char *const bad_clock[] = {"", "System", "offset-file:", "offset-file",
                                            "offset-file:rel/path", "offset-file: /a",
                                            "monotonic", NULL};
    for (size_t i = 0; bad_clock[i] != NULL; i++)
        expect_set_fail("clock", bad_clock[i], NULL);

    /* node: syntax only */
    expect_set_ok("node", "");
    expect_set_ok("node", "datacenter=1");
    expect_set_ok("node", "a_1=0,b2=18446744073709551615,c=007");
    static const char *const bad_node[] = {
        "datacenter", "=1", "Datacenter=1", "dc=", "dc=x", "dc=1,", ",dc=1", "dc=1,,w=2",
        "dc=-1", "dc=+1", "dc=1 ", " dc=1", "dc = 1", "d-c=1", "dc=1=2", "dc=0x1",
        "dc=18446744073709551616", "dc=1,dc=2", NULL};
    for (size_t i = 0; bad_node[i] != NULL; i++)
        expect_set_fail("node", bad_node[i], NULL);

    /* lease-field */
    expect_set_ok("lease-field", "worker");
    expect_set_ok("lease-field", "machine_2");
    static const char *const bad_field[] = {"", "Worker", "a-b", "a b", "worker ", "wörker",
                                            NULL};
    for (size_t i = 0; bad_field[i] != NULL; i++)
        expect_set_fail("lease-field", bad_field[i], NULL);
    char longname[80];
    memset(longname, 'a', 64);
    longname[64] = '\0';
    expect_set_fail("lease-field", longname, "longer");

    /* lease and store URLs, data-dir, token-file */
    expect_set_ok("lease", "etcd://127.0.0.1:2379/idmint");
    expect_set_ok("store", "sqlite:///var/lib/x.db");
    static const char *const bad_url[] = {"", "/path", "://x", "file:/x", NULL};
    for (size_t i = 0; bad_url[i] != NULL; i++) {
        expect_set_fail("lease", bad_url[i], NULL);
        expect_set_fail("store", bad_url[i], NULL);
    }
    expect_set_fail("data-dir", "", "empty");
    expect_set_fail("token-file", "", "empty");
    char *huge = malloc(IDMD_PATH_MAX + 16);
    assert_non_null(huge);
    memset(huge, 'd', IDMD_PATH_MAX);
    huge[IDMD_PATH_MAX] = '\0';
    expect_set_fail("data-dir", huge, "longer");
    expect_set_fail("token-file", huge, "longer");
    huge[IDMD_PATH_MAX - 1] = '\0';
    expect_set_ok("data-dir", huge); /* exactly fits */
    free(huge);

    /* epoch */
    expect_set_ok("epoch", "0");
    expect_set_ok("epoch", "2024-01-01T00:00:00Z");
    expect_set_ok("epoch", "2024-01-01T02:00:00+02:00");
    static const char *const bad_epoch[] = {"", "yesterday", "-1", "+1", "2024-13-01",
                                            "2024-02-30", " 0", "1e3", NULL};
    for (size_t i = 0; bad_epoch[i] != NULL; i++)
        expect_set_fail("epoch", bad_epoch[i], NULL);
    idmd_config c;
    char err[256];
    idmd_config_defaults(&c);
    assert_int_equal(idmd_config_set(&c, "epoch", "2024-01-01", "x", err, sizeof err), 0);
    assert_true(c.epoch_set);
    assert_int_equal(c.epoch, INT64_C(1704067200000));

    /* layout */
    expect_set_ok("layout", "twitter");
    expect_set_ok("layout", "time:41@1ms,datacenter:5,worker:5,seq:12");
    static const char *const bad_layout[] = {"", "nope", "Twitter", "time:99@1ms,seq:12",
                                             "time:41@1ms", "seq:12,time:41@1ms",
                                             "time:41@1ms,worker:5,worker:5,seq:12", NULL};
    for (size_t i = 0; bad_layout[i] != NULL; i++)
        expect_set_fail("layout", bad_layout[i], NULL);
    expect_set_fail("layout", "nope", "twitter");

    /* unknown keys through idmd_config_set */
    idmd_config_defaults(&c);
    assert_int_equal(idmd_config_set(&c, "bogus", "1", "SRC", err, sizeof err), -1);
    assert_non_null(strstr(err, "SRC: unknown key 'bogus'"));
    assert_int_equal(idmd_config_set(&c, "config", "x", "SRC", err, sizeof err), -1);

    /* a long bad value is cut in the message, which still names the key */
    char *longv = malloc(3000);
    assert_non_null(longv);
    memset(longv, '9', 2999);
    longv[2999] = '\0';
    assert_int_equal(idmd_config_set(&c, "threads", longv, "SRC", err, sizeof err), -1);
    assert_non_null(strstr(err, "SRC: threads '999"));
    assert_non_null(strstr(err, "...'"));
    free(longv);

    /* a small error buffer is not overrun */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    assert_int_equal(idmd_config_set(&c, "threads", "0", "SRC", tiny, 5), -1);
    assert_int_equal(strlen(tiny), 4);
    assert_int_equal(tiny[5], 'x');
}

/* ---- a text layout needs an epoch ---- */

static void test_text_layout_epoch(void **state)
{
    (void)state;
    const char *a1[] = {"--layout", "time:41@1ms,worker:10,seq:12", NULL};
    expect_fail(a1, NULL, "layout 'time:41@1ms,worker:10,seq:12' is a text form and needs epoch",
                NULL);
    idmd_config c;
    const char *a2[] = {"--layout", "time:41@1ms,worker:10,seq:12", "--epoch", "2024-01-01",
                        NULL};
    expect_ok(&c, a2, NULL);
    assert_true(c.epoch_set);
    /* the epoch and the layout may come from different sources */
    char path[1200];
    write_file("epoch.conf", "epoch = 1700000000000\n", path, sizeof path);
    const char *a3[] = {"--config", path, "--layout", "time:41@1ms,worker:10,seq:12", NULL};
    expect_ok(&c, a3, NULL);
    assert_int_equal(c.epoch, INT64_C(1700000000000));
    const char *e1[] = {"IDMINT_EPOCH=0", NULL};
    expect_ok(&c, a1, e1);
    /* a later source may replace the text form with a preset */
    write_file("text.conf", "layout = time:41@1ms,worker:10,seq:12\n", path, sizeof path);
    const char *a4[] = {"--config", path, "--layout", "discord", NULL};
    expect_ok(&c, a4, NULL);
    const char *a5[] = {"--config", path, NULL};
    expect_fail(a5, NULL, "needs epoch", NULL);
    /* a preset with an epoch is fine too */
    const char *a6[] = {"--layout", "sonyflake", "--epoch", "0", NULL};
    expect_ok(&c, a6, NULL);
}

/* ---- --check-config, --help ---- */

static void test_check_and_help(void **state)
{
    (void)state;
    idmd_config c;
    bool check, help;
    char err[512];

    const char *a1[] = {"--check-config", "--threads", "4", NULL};
    assert_int_equal(build3(&c, a1, NULL, &check, &help, err, sizeof err), 0);
    assert_true(check);
    assert_false(help);
    assert_int_equal(c.threads, 4);

    const char *a2[] = {"--help", NULL};
    assert_int_equal(build3(&c, a2, NULL, &check, &help, err, sizeof err), 0);
    assert_true(help);
    assert_false(check);
    const char *a3[] = {"-h", NULL};
    assert_int_equal(build3(&c, a3, NULL, &check, &help, err, sizeof err), 0);
    assert_true(help);

    /* --help needs nothing else to be right: not the rest of the line,
     * not the file, not the environment */
    const char *a4[] = {"--config", "/nonexistent.conf", "--check-config", "--help", "--bogus",
                        NULL};
    const char *e1[] = {"IDMINT_BOGUS=1", NULL};
    assert_int_equal(build3(&c, a4, e1, &check, &help, err, sizeof err), 0);
    assert_true(help);
    assert_true(check);

    /* a failing build clears both */
    const char *a5[] = {"--check-config", "--threads", "0", NULL};
    check = help = true;
    assert_int_equal(build3(&c, a5, NULL, &check, &help, err, sizeof err), -1);
    assert_false(help);

    /* NULL out-pointers are tolerated */
    char *argv[] = {(char *)"idmintd", (char *)"--check-config", NULL};
    assert_int_equal(idmd_config_build(&c, 2, argv, NULL, NULL, NULL, err, sizeof err), 0);
}

/* ---- printing ---- */

static void test_print(void **state)
{
    (void)state;
    char tok[1200];
    write_file("token", "s3cr3t-t0ken-value\n", tok, sizeof tok);
    char tokflag[1300];
    snprintf(tokflag, sizeof tokflag, "--token-file=%s", tok);
    const char *args[] = {tokflag, NULL};
    idmd_config c;
    expect_ok(&c, args, NULL);
    char dump[8192];
    idmd_config_print(&c, dump, sizeof dump);
    CHECK(strstr(dump, "s3cr3t") == NULL, "the token leaked:\n%s", dump);
    char want[1400];
    snprintf(want, sizeof want, "token-file = %s\n", tok);
    CHECK(strstr(dump, want) != NULL, "no token-file line in:\n%s", dump);

    /* every key, once, in the fixed order, one line each */
    const char *p = dump;
    for (size_t k = 0; k < NKEYCASES; k++) {
        char head[64];
        snprintf(head, sizeof head, "%s = ", keycases[k].key);
        CHECK(strncmp(p, head, strlen(head)) == 0, "expected '%s' at:\n%s", head, p);
        p = strchr(p, '\n');
        assert_non_null(p);
        p++;
    }
    assert_string_equal(p, "");

    /* the defaults, printed */
    idmd_config_defaults(&c);
    idmd_config_print(&c, dump, sizeof dump);
    assert_string_equal(dump, "listen = 127.0.0.1:7070\n"
                              "admin-listen = \"\"\n"
                              "data-dir = ./var\n"
                              "lease = \"\"\n"
                              "lease-ttl = 10000\n"
                              "store = \"\"\n"
                              "layout = twitter\n"
                              "epoch = \"\"\n"
                              "policy = logical\n"
                              "exhaust = wait\n"
                              "node = \"\"\n"
                              "lease-field = worker\n"
                              "count-max = 10000\n"
                              "token-file = \"\"\n"
                              "idle-timeout = 10000\n"
                              "head-timeout = 5000\n"
                              "max-request = 8192\n"
                              "threads = 2\n"
                              "max-connections = 1024\n"
                              "max-connections-per-ip = 256\n"
                              "clock = system\n"
                              "segment-wait = 1000\n"
                              "store-timeout = 5000\n"
                              "opaque-key-file = \"\"\n");

    /* a printed configuration (of non-empty values) reads back the same */
    const char *full[] = {"--listen", "[::1]:1", "--data-dir", " /sp ", "--lease", "file:///l",
                          "--store", "sqlite:///s", "--layout", "time:40@1ms,w:10,seq:13",
                          "--epoch", "1700000000000", "--node", "dc=1", "--token-file", tok,
                          "--opaque-key-file", "/k", "--admin-listen", "127.0.0.1:9",
                          "--head-timeout", "777", "--max-connections-per-ip", "3",
                          "--store-timeout", "1234", NULL};
    idmd_config a, b;
    expect_ok(&a, full, NULL);
    idmd_config_print(&a, dump, sizeof dump);
    char path[1200];
    write_file("printed.conf", dump, path, sizeof path);
    const char *reread[] = {"--config", path, NULL};
    expect_ok(&b, reread, NULL);
    /* the same values; the sources differ (flags, then the file) */
    int node = key_index("node");
    assert_string_equal(a.source[node], "--node");
    CHECK(strstr(b.source[node], "printed.conf:") != NULL, "source '%s'", b.source[node]);
    memset(a.source, 0, sizeof a.source);
    memset(b.source, 0, sizeof b.source);
    assert_memory_equal(&a, &b, sizeof a);

    /* short buffers are cut, never overrun */
    char small[16];
    memset(small, 'x', sizeof small);
    idmd_config_print(&a, small, 10);
    assert_int_equal(strlen(small), 9);
    assert_int_equal(small[10], 'x');
    small[0] = 'q';
    idmd_config_print(&a, small, 0);
    assert_int_equal(small[0], 'q');
    idmd_config_print(&a, small, 1);
    assert_int_equal(small[0], '\0');
}


/* ---- idmd_config_check ---- */

/* Build from args (and env), then check: 0 or -1; err holds the message. */
static int build_check(idmd_config *c, const char *const *args, const char *const *env,
                       char *err, size_t errlen)
{
    int rc = build(c, args, env, err, errlen);
    CHECK(rc == 0, "build failed: %s", err);
    memset(err, 'Z', errlen);
    err[errlen - 1] = '\0';
    rc = idmd_config_check(c, err, errlen);
    if (rc == 0)
        CHECK(err[0] == '\0', "a passing check leaves an error: %s", err);
    else
        CHECK(err[0] != '\0' && strchr(err, '\n') == NULL, "bad error line '%s'", err);
    return rc;
}

/* The build and the check pass; the check fails with the NULL-terminated
 * needles (expect_check_fail(args, env, needle..., NULL)). */
#define expect_check_ok(c, args, env) expect_ok_by(build_check, "check", c, args, env)
#define expect_check_fail(...) expect_fail_by(build_check, "check", __VA_ARGS__)

/* A data directory under the test directory, so nothing lands in the cwd. */
static const char *data_dir(void)
{
    static char d[1200];
    snprintf(d, sizeof d, "%s/data", g_dir);
    return d;
}

/* The lease field, as the CLI picks it (src/cli/cmd_next.c), and the presets
 * that name it shard or machine start out of the box. */
static void test_check_lease_field(void **state)
{
    (void)state;
    idmd_config c;
    static const struct {
        const char *layout, *field;
    } presets[] = {{"twitter", "worker"}, {"discord", "worker"}, {"instagram", "shard"},
                   {"sonyflake", "machine"}};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        const char *a[] = {"--data-dir", data_dir(), "--layout", presets[i].layout, NULL};
        expect_check_ok(&c, a, NULL);
        assert_string_equal(c.lease_field, presets[i].field);
        char line[128];
        snprintf(line, sizeof line, "lease-field = %s", presets[i].field);
        EXPECT_LINE(&c, line);
    }
    /* a text layout: its only node field, whatever its name */
    const char *a1[] = {"--data-dir", data_dir(), "--layout", "time:41@1ms,host:10,seq:12",
                        "--epoch", "2020-01-01", NULL};
    expect_check_ok(&c, a1, NULL);
    assert_string_equal(c.lease_field, "host");
    /* worker before shard before machine, wherever they stand */
    const char *a2[] = {"--data-dir", data_dir(), "--layout",
                        "time:41@1ms,machine:4,shard:4,seq:14", "--epoch", "2020-01-01", NULL};
    expect_check_ok(&c, a2, NULL);
    assert_string_equal(c.lease_field, "shard");
    /* two node fields, none of those names: name one */
    const char *a3[] = {"--data-dir", data_dir(), "--layout", "time:41@1ms,dc:5,host:5,seq:12",
                        "--epoch", "2020-01-01", NULL};
    expect_check_fail(a3, NULL, "default: lease-field 'worker'", "dc, host", NULL);
    /* no node field at all */
    const char *a4[] = {"--data-dir", data_dir(), "--layout", "time:41@1ms,seq:22", "--epoch",
                        "2020-01-01", NULL};
    expect_check_fail(a4, NULL, "--layout: layout 'time:41@1ms,seq:22'", "no node field", NULL);
    /* named: it must be one of the layout's node fields */
    const char *a5[] = {"--data-dir", data_dir(), "--layout", "instagram", "--lease-field",
                        "worker", NULL};
    expect_check_fail(a5, NULL, "--lease-field: lease-field 'worker'", "no such field",
                      "shard", NULL);
    const char *e1[] = {"IDMINT_LEASE_FIELD=seq", NULL};
    const char *a6[] = {"--data-dir", data_dir(), NULL};
    expect_check_fail(a6, e1, "IDMINT_LEASE_FIELD: lease-field 'seq'", "sequence field",
                      NULL);
    const char *a7[] = {"--data-dir", data_dir(), "--layout", "twitter", "--lease-field",
                        "datacenter", NULL};
    expect_check_ok(&c, a7, NULL);
    assert_string_equal(c.lease_field, "datacenter");
}

static void test_check_node(void **state)
{
    (void)state;
    idmd_config c;
    const char *a1[] = {"--data-dir", data_dir(), "--node", "datacenter=31", NULL};
    expect_check_ok(&c, a1, NULL);
    /* an unknown field, a value that does not fit, a time or seq field */
    const char *a2[] = {"--data-dir", data_dir(), "--node", "datacentre=1", NULL};
    expect_check_fail(a2, NULL, "--node: node 'datacentre=1'", "no field 'datacentre'",
                      "datacenter, worker", NULL);
    const char *a3[] = {"--data-dir", data_dir(), "--node", "datacenter=32", NULL};
    expect_check_fail(a3, NULL, "--node: node 'datacenter=32'", "exceeds 31", NULL);
    const char *e1[] = {"IDMINT_NODE=seq=1", NULL};
    const char *a4[] = {"--data-dir", data_dir(), NULL};
    expect_check_fail(a4, e1, "IDMINT_NODE: node 'seq=1'", "not a node field", NULL);
    /* the field the lease fills, by default or named */
    const char *a5[] = {"--data-dir", data_dir(), "--node", "datacenter=1,worker=5", NULL};
    expect_check_fail(a5, NULL, "--node: node 'datacenter=1,worker=5'", "gives worker",
                      "lease-field worker, from default", NULL);
    const char *a6[] = {"--data-dir", data_dir(), "--node", "worker=5", "--lease-field",
                        "datacenter", NULL};
    expect_check_ok(&c, a6, NULL);
    const char *a7[] = {"--data-dir", data_dir(), "--layout", "instagram", "--node", "shard=1",
                        NULL};
    expect_check_fail(a7, NULL, "gives shard", NULL);
    /* a file source is named with its line */
    char path[1200], where[1300];
    write_file("node.conf", "# x\nnode = bogus=1\n", path, sizeof path);
    snprintf(where, sizeof where, "%s:2: node 'bogus=1'", path);
    const char *a8[] = {"--data-dir", data_dir(), "--config", path, NULL};
    expect_check_fail(a8, NULL, where, NULL);
}

static void test_check_epoch_and_clock(void **state)
{
    (void)state;
    idmd_config c;
    char epoch[32], off[1200], clock[1300];
    /* an epoch a day ahead */
    snprintf(epoch, sizeof epoch, "%lld", (long long)time(NULL) * 1000 + 86400000);
    const char *a1[] = {"--data-dir", data_dir(), "--epoch", epoch, NULL};
    expect_check_fail(a1, NULL, "--epoch: epoch '", epoch, "is in the future", NULL);
    const char *a2[] = {"--data-dir", data_dir(), "--layout", "time:41@1ms,worker:10,seq:12",
                        "--epoch", epoch, NULL};
    expect_check_fail(a2, NULL, "in the future", NULL);
    /* the clock idmintd will use: an offset file two days ahead makes it past */
    write_file("offset", "172800000\n", off, sizeof off);
    snprintf(clock, sizeof clock, "offset-file:%s", off);
    const char *a3[] = {"--data-dir", data_dir(), "--epoch", epoch, "--clock", clock, NULL};
    expect_check_ok(&c, a3, NULL);
    /* a time field already run out: 20 bits of ms from 2020 */
    const char *a4[] = {"--data-dir", data_dir(), "--layout", "time:20@1ms,worker:10,seq:12",
                        "--epoch", "2020-01-01", NULL};
    expect_check_fail(a4, NULL, "--epoch: epoch '1577836800000'", "ran out", NULL);
    /* the offset file: missing, not a regular file (a FIFO does not hang
     * us), not a number */
    snprintf(clock, sizeof clock, "offset-file:%s/no-offset", g_dir);
    const char *a5[] = {"--data-dir", data_dir(), "--clock", clock, NULL};
    expect_check_fail(a5, NULL, "--clock: clock 'offset-file:", "No such file", NULL);
    char fifo[1200];
    snprintf(fifo, sizeof fifo, "%s/offset.fifo", g_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    snprintf(clock, sizeof clock, "offset-file:%s", fifo);
    expect_check_fail(a5, NULL, "the offset file: not a regular file (it is a FIFO)", NULL);
    write_file("offset-bad", "soon\n", off, sizeof off);
    snprintf(clock, sizeof clock, "offset-file:%s", off);
    expect_check_fail(a5, NULL, "signed ms offset", NULL);
    write_file("offset-neg", "-5000\n", off, sizeof off);
    snprintf(clock, sizeof clock, "offset-file:%s", off);
    expect_check_ok(&c, a5, NULL);
}

/* count-max: twitter's default fits; a preset that cannot mint the default
 * in one request gets the default lowered (said in a comment line of the
 * printed configuration); a value set above the layout's is refused. */
static void test_check_count_max(void **state)
{
    (void)state;
    idmd_config c;
    char err[1024];
    const char *a1[] = {"--data-dir", data_dir(), NULL};
    expect_check_ok(&c, a1, NULL);
    assert_int_equal(c.count_max, 10000);
    assert_int_equal(c.count_max_layout, 6 * 4096); /* 5 + 1 ms, 4096 a ms */
    assert_string_equal(c.note, "");

    static const struct {
        const char *layout;
        uint32_t most;
    } cases[] = {{"instagram", 6 * 1024}, /* 1 ms ticks of 1024: 6 in the 6 ms wait */
                 {"sonyflake", 256},      /* 10 ms ticks of 256: 1 in the 15 ms wait */
                 {"time:41@1ms,worker:10,seq:2", 24},
                 {"time:39@10ms,worker:10,seq:1", 2},
                 {"time:38@1s,worker:10,seq:12", 4096}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *layout = cases[i].layout;
        uint32_t most = cases[i].most;
        const char *a2[] = {"--data-dir", data_dir(), "--layout", layout, "--epoch",
                            "2020-01-01", NULL};
        expect_check_ok(&c, a2, NULL);
        assert_int_equal(c.count_max_layout, most);
        assert_int_equal(c.count_max, most);
        char line[300];
        snprintf(line, sizeof line, "count-max = %" PRIu32, most);
        EXPECT_LINE(&c, line);
        snprintf(line, sizeof line,
                 "# count-max: the default 10000 lowered to %" PRIu32
                 ", the most ids layout %s can always mint in one request",
                 most, layout);
        EXPECT_LINE(&c, line);
        /* checking again changes nothing */
        idmd_config again = c;
        assert_int_equal(idmd_config_check(&again, err, sizeof err), 0);
        assert_memory_equal(&again, &c, sizeof c);

        /* set: at most that, from any source */
        char v[32], want[200];
        snprintf(v, sizeof v, "%" PRIu32, most);
        const char *a3[] = {"--data-dir", data_dir(), "--layout", layout, "--epoch",
                            "2020-01-01", "--count-max", v, NULL};
        expect_check_ok(&c, a3, NULL);
        assert_int_equal(c.count_max, most);
        assert_string_equal(c.note, "");
        snprintf(v, sizeof v, "%" PRIu32, most + 1);
        snprintf(want, sizeof want, "--count-max: count-max '%s'", v);
        char atmost[64];
        snprintf(atmost, sizeof atmost, "at most %" PRIu32, most);
        expect_check_fail(a3, NULL, want, layout, atmost, NULL);
        char env[64];
        snprintf(env, sizeof env, "IDMINT_COUNT_MAX=%" PRIu32, most + 1);
        const char *e1[] = {env, NULL};
        expect_check_fail(a2, e1, "IDMINT_COUNT_MAX: count-max", atmost, NULL);
    }
    /* the cases: instagram 8000, sonyflake 600 */
    const char *a4[] = {"--data-dir", data_dir(), "--layout", "instagram", "--count-max", "8000",
                        NULL};
    expect_check_fail(a4, NULL, "count-max '8000'", "at most 6144", NULL);
    const char *a5[] = {"--data-dir", data_dir(), "--layout", "sonyflake", "--count-max", "600",
                        NULL};
    expect_check_fail(a5, NULL, "count-max '600'", "at most 256", NULL);
}

/* store-timeout: from each source, each refusal naming the source, the key
 * and the value; --check-config shows it. */
static void test_store_timeout(void **state)
{
    (void)state;
    idmd_config c;
    char path[1200];
    const char *a1[] = {"--store-timeout", "0", NULL};
    expect_fail(a1, NULL, "--store-timeout: store-timeout '0'", "out of range", NULL);
    const char *a2[] = {"--store-timeout=3600001", NULL};
    expect_fail(a2, NULL, "--store-timeout: store-timeout '3600001'", "out of range", NULL);
    const char *e1[] = {"IDMINT_STORE_TIMEOUT=5s", NULL};
    expect_fail(NULL, e1, "IDMINT_STORE_TIMEOUT: store-timeout '5s'", NULL);
    write_file("st.conf", "store-timeout = -1\n", path, sizeof path);
    const char *a3[] = {"--config", path, NULL};
    expect_fail(a3, NULL, "st.conf:1: store-timeout '-1'", NULL);
    write_file("st.conf", "store-timeout = 2500\n", path, sizeof path);
    const char *e2[] = {"IDMINT_STORE_TIMEOUT=3000", NULL};
    expect_ok(&c, a3, NULL);
    assert_int_equal(c.store_timeout_ms, 2500);
    EXPECT_LINE(&c, "store-timeout = 2500");
    expect_ok(&c, a3, e2);
    assert_int_equal(c.store_timeout_ms, 3000);
    const char *a4[] = {"--config", path, "--store-timeout", "1", NULL};
    expect_ok(&c, a4, e2);
    assert_int_equal(c.store_timeout_ms, 1);
    assert_string_equal(c.source[key_index("store-timeout")], "--store-timeout");
    /* the same after the checks (--check-config prints that) */
    const char *a5[] = {"--data-dir", data_dir(), "--store-timeout", "60000", NULL};
    expect_check_ok(&c, a5, NULL);
    EXPECT_LINE(&c, "store-timeout = 60000");
    assert_non_null(strstr(idmd_config_usage(), "  --store-timeout MS "));
}

/* A URL's password never shows: not in the printed config, not in an
 * error that quotes the value. */
static void test_url_passwords_masked(void **state)
{
    (void)state;
    idmd_config c;
    char dump[8192], err[1024];
    const char *a1[] = {"--data-dir", data_dir(), "--lease", "etcd://root:s3cret@127.0.0.1:2379/x",
                        "--store", "postgres://u:pw1@h/db?sslmode=disable&password=pw2", NULL};
    expect_check_ok(&c, a1, NULL);
    EXPECT_LINE(&c, "lease = etcd://root:***@127.0.0.1:2379/x");
    EXPECT_LINE(&c, "store = postgres://u:***@h/db?sslmode=disable&password=***");
    idmd_config_print(&c, dump, sizeof dump);
    CHECK(strstr(dump, "s3cret") == NULL && strstr(dump, "pw1") == NULL &&
              strstr(dump, "pw2") == NULL,
          "a password printed:\n%s", dump);
    /* The value as given is still what is used. */
    assert_string_equal(c.lease, "etcd://root:s3cret@127.0.0.1:2379/x");

    const char *a2[] = {"--data-dir", data_dir(), "--lease", "nosuch://root:s3cret@h/x", NULL};
    expect_check_fail(a2, NULL, "lease 'nosuch://root:***@h/x'", "unknown scheme", NULL);
    CHECK(build_check(&c, a2, NULL, err, sizeof err) == -1 && strstr(err, "s3cret") == NULL,
          "a password in the error: %s", err);
}

static void test_check_urls(void **state)
{
    (void)state;
    idmd_config c;
    const char *a1[] = {"--data-dir", data_dir(), "--lease", "file://rel/leases", NULL};
    expect_check_fail(a1, NULL, "--lease: lease 'file://rel/leases'", "absolute", NULL);
    const char *a2[] = {"--data-dir", data_dir(), "--store", "sqlite://var/x.db", NULL};
    expect_check_fail(a2, NULL, "--store: store 'sqlite://var/x.db'", "absolute", NULL);
    const char *e1[] = {"IDMINT_STORE=sqlite://./x.db", NULL};
    expect_check_fail(a1, e1, "--lease: lease", NULL); /* the lease is checked first */
    const char *a3[] = {"--data-dir", data_dir(), NULL};
    expect_check_fail(a3, e1, "IDMINT_STORE: store 'sqlite://./x.db'", "absolute", NULL);
    const char *a4[] = {"--data-dir", data_dir(), "--lease", "zookeeper://h/x", NULL};
    expect_check_fail(a4, NULL, "lease 'zookeeper://h/x'", "unknown scheme", NULL);
    const char *a5[] = {"--data-dir", data_dir(), "--store", "file:///x.db", NULL};
    expect_check_fail(a5, NULL, "store 'file:///x.db'", "unknown scheme", NULL);
    const char *a6[] = {"--data-dir", data_dir(), "--store", "sqlite:///x/", NULL};
    expect_check_fail(a6, NULL, "store 'sqlite:///x/'", "directory", NULL);
    const char *a7[] = {"--data-dir", data_dir(), "--store", "sqlite:///x.db?mode=ro", NULL};
    expect_check_fail(a7, NULL, "'?'", NULL);
    const char *a8[] = {"--data-dir", data_dir(), "--lease", "etcd://127.0.0.1:2379/x",
                        "--store", "postgres://u@h/db", NULL};
    expect_check_ok(&c, a8, NULL);
    const char *a9[] = {"--data-dir", data_dir(), "--lease", "file:///abs/leases", "--store",
                        "sqlite:///abs/s.db", NULL};
    expect_check_ok(&c, a9, NULL);
    /* a data-dir whose store URL sqlite would refuse */
    char odd[1300];
    snprintf(odd, sizeof odd, "%s/50%%", g_dir);
    const char *a10[] = {"--data-dir", odd, NULL};
    expect_check_fail(a10, NULL, "--data-dir: data-dir '", "the store URL made from it", "'%'",
                      NULL);
}

/* data-dir is made absolute (the URLs made from it must be); a file in its
 * place is refused. */
static void test_check_data_dir(void **state)
{
    (void)state;
    idmd_config c;
    char cwd[1024], want[1200];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    const char *a1[] = {NULL};
    expect_check_ok(&c, a1, NULL);
    snprintf(want, sizeof want, "%s/var", g_dir);
    assert_string_equal(c.data_dir, want);
    const char *a2[] = {"--data-dir", "././sub/dir", NULL};
    expect_check_ok(&c, a2, NULL);
    snprintf(want, sizeof want, "%s/sub/dir", g_dir);
    assert_string_equal(c.data_dir, want);
    const char *a3[] = {"--data-dir", ".", NULL};
    expect_check_ok(&c, a3, NULL);
    assert_string_equal(c.data_dir, g_dir);
    assert_int_equal(chdir(cwd), 0);
    char file[1200];
    write_file("not-a-dir", "x", file, sizeof file);
    const char *a4[] = {"--data-dir", file, NULL};
    expect_check_fail(a4, NULL, "--data-dir: data-dir '", "not a directory", NULL);
}

static void test_check_token_file(void **state)
{
    (void)state;
    idmd_config c;
    char path[1200], flag[1300];
    const char *a[] = {"--data-dir", data_dir(), flag, NULL};
    snprintf(flag, sizeof flag, "--token-file=%s/missing", g_dir);
    expect_check_fail(a, NULL, "--token-file: token-file '", "missing'", "No such file", NULL);
    snprintf(flag, sizeof flag, "--token-file=%s", g_dir);
    expect_check_fail(a, NULL, "not a regular file (it is a directory)", NULL);
    snprintf(path, sizeof path, "%s/token.fifo", g_dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(flag, sizeof flag, "--token-file=%s", path);
    expect_check_fail(a, NULL, "token.fifo': not a regular file (it is a FIFO)", NULL);

    /* IDMD_TOKEN_MAX bytes pass, with or without a final LF or CRLF; one
     * more does not; nor does an empty file, a short token, a space, a
     * second line. Trailing line ends are not the token (as main.c reads
     * it). */
    char *tok = malloc(IDMD_TOKEN_MAX + 8);
    assert_non_null(tok);
    for (size_t i = 0; i < IDMD_TOKEN_MAX + 1; i++)
        tok[i] = (char)('A' + i % 26);
    static const char *const ends[] = {"", "\n", "\r\n"};
    for (size_t i = 0; i < 3; i++) {
        strcpy(tok + IDMD_TOKEN_MAX, ends[i]);
        write_file("token", tok, path, sizeof path);
        snprintf(flag, sizeof flag, "--token-file=%s", path);
        expect_check_ok(&c, a, NULL);
        tok[IDMD_TOKEN_MAX] = 'Q';
        strcpy(tok + IDMD_TOKEN_MAX + 1, ends[i]);
        write_file("token", tok, path, sizeof path);
        expect_check_fail(a, NULL, "longer than 4096 bytes", NULL);
    }
    /* a 305-byte token (the issue's) passes */
    tok[305] = '\0';
    write_file("token", tok, path, sizeof path);
    expect_check_ok(&c, a, NULL);
    free(tok);
    static const struct {
        const char *text, *why;
    } bad[] = {{"", "empty"},
               {"\n", "empty"},
               {"\r\n", "empty"},
               {"0123456789abcde\n", "15 bytes; at least 16"},
               {"0123456789 abcdef\n", "byte 11"},
               {"0123456789abcdef\nsecond-line-here\n", "byte 17"},
               {"0123456789abcdef\t\n", "byte 17"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("token", bad[i].text, path, sizeof path);
        idmd_config cc;
        char err[1024];
        assert_int_equal(build_check(&cc, a, NULL, err, sizeof err), -1);
        CHECK(strstr(err, bad[i].why) != NULL, "token %zu: error '%s' lacks '%s'", i, err,
              bad[i].why);
        CHECK(strstr(err, "0123456789") == NULL, "the token leaked: %s", err);
    }
    write_file("token", "0123456789abcdef", path, sizeof path);
    expect_check_ok(&c, a, NULL);
    write_file("token", "0123456789abcdef\r\n\n", path, sizeof path); /* line ends only */
    expect_check_ok(&c, a, NULL);
    /* a file that is mostly line ends is still too long */
    char *ends_only = malloc(IDMD_TOKEN_MAX + 128);
    assert_non_null(ends_only);
    memset(ends_only, '\n', IDMD_TOKEN_MAX + 100);
    memcpy(ends_only, "0123456789abcdef", 16);
    ends_only[IDMD_TOKEN_MAX + 100] = '\0';
    write_file("token", ends_only, path, sizeof path);
    expect_check_fail(a, NULL, "longer than 4096 bytes", NULL);
    free(ends_only);
    /* from the environment, named so */
    char env[1300];
    snprintf(env, sizeof env, "IDMINT_TOKEN_FILE=%s/none", g_dir);
    const char *e1[] = {env, NULL};
    const char *a2[] = {"--data-dir", data_dir(), NULL};
    expect_check_fail(a2, e1, "IDMINT_TOKEN_FILE: token-file '", NULL);
}

static void test_check_opaque_key_file(void **state)
{
    (void)state;
    idmd_config c;
    char path[1200], flag[1300];
    const char *a[] = {"--data-dir", data_dir(), flag, NULL};
    snprintf(flag, sizeof flag, "--opaque-key-file=%s/missing", g_dir);
    expect_check_fail(a, NULL, "--opaque-key-file: opaque-key-file '", "No such file", NULL);
    snprintf(path, sizeof path, "%s/key.fifo", g_dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(flag, sizeof flag, "--opaque-key-file=%s", path);
    expect_check_fail(a, NULL, "--opaque-key-file: opaque-key-file '",
                      "key.fifo': not a regular file (it is a FIFO)", NULL);
    /* the message names the file once (the key loader's detail names it too) */
    char err[1024];
    assert_int_equal(build_check(&c, a, NULL, err, sizeof err), -1);
    const char *first = strstr(err, "key.fifo");
    CHECK(first != NULL && strstr(first + 1, "key.fifo") == NULL, "'%s' names the file twice",
          err);
    write_file("key", "00112233445566778899aabbccddeeff\n", path, sizeof path);
    snprintf(flag, sizeof flag, "--opaque-key-file=%s", path);
    expect_check_ok(&c, a, NULL);
    write_file("key", "00112233445566778899aabbccddee\n", path, sizeof path);
    expect_check_fail(a, NULL, "opaque-key-file '", "30 hex digits", NULL);
    write_file("key", "", path, sizeof path);
    expect_check_fail(a, NULL, "empty", NULL);
}

static void test_check_admin_listen(void **state)
{
    (void)state;
    idmd_config c;
    const char *a1[] = {"--data-dir", data_dir(), "--admin-listen", "127.0.0.1:7071", NULL};
    expect_check_ok(&c, a1, NULL);
    EXPECT_LINE(&c, "admin-listen = 127.0.0.1:7071");
    const char *a2[] = {"--data-dir", data_dir(), "--admin-listen", "localhost:7070", NULL};
    expect_check_fail(a2, NULL, "--admin-listen: admin-listen 'localhost:7070'",
                      "the same address as listen (from default)", NULL);
    const char *a3[] = {"--data-dir", data_dir(), "--listen", "0.0.0.0:8000", "--admin-listen",
                        "127.0.0.1:8000", NULL};
    expect_check_fail(a3, NULL, "same address as listen (from --listen)", NULL);
    const char *a4[] = {"--data-dir", data_dir(), "--listen", "[::]:8000", "--admin-listen",
                        "127.0.0.1:8000", NULL};
    expect_check_fail(a4, NULL, "same address", NULL);
    const char *a5[] = {"--data-dir", data_dir(), "--listen", "[::1]:8000", "--admin-listen",
                        "127.0.0.1:8000", NULL};
    expect_check_ok(&c, a5, NULL);
    const char *a6[] = {"--data-dir", data_dir(), "--listen", "127.0.0.1:0", "--admin-listen",
                        "127.0.0.1:0", NULL};
    expect_check_ok(&c, a6, NULL);
}

/* Sources: a long one keeps its end; failures keep nothing. */
static void test_sources(void **state)
{
    (void)state;
    idmd_config c;
    char err[256];
    char longsrc[300];
    int threads = key_index("threads");
    idmd_config_defaults(&c);
    memset(longsrc, 'p', sizeof longsrc);
    strcpy(longsrc + 200, "/idmintd.conf:12");
    assert_int_equal(idmd_config_set(&c, "threads", "3", longsrc, err, sizeof err), 0);
    assert_int_equal(strlen(c.source[threads]), IDMD_SOURCE_MAX - 1);
    assert_int_equal(strncmp(c.source[threads], "...", 3), 0);
    assert_non_null(strstr(c.source[threads], "pp/idmintd.conf:12"));
    assert_int_equal(idmd_config_set(&c, "threads", "99", "S", err, sizeof err), -1);
    assert_non_null(strstr(c.source[threads], "idmintd.conf:12"));
    assert_int_equal(idmd_config_set(&c, "threads", "4", "--threads", err, sizeof err), 0);
    assert_string_equal(c.source[threads], "--threads");
}

/* ---- usage ---- */

static void test_usage(void **state)
{
    (void)state;
    const char *head = "usage: idmintd [--config FILE] [--check-config] [--KEY VALUE]...\n";
    assert_int_equal(strncmp(idmd_config_usage(), head, strlen(head)), 0);
    for (size_t k = 0; k < NKEYCASES; k++) {
        char flag[64];
        snprintf(flag, sizeof flag, "  --%s ", keycases[k].key);
        CHECK(strstr(idmd_config_usage(), flag) != NULL, "usage lacks %s", flag);
        CHECK(strstr(idmd_config_usage(), keycases[k].env) != NULL, "usage lacks %s",
              keycases[k].env);
    }
    assert_non_null(strstr(idmd_config_usage(), "--config FILE"));
    assert_non_null(strstr(idmd_config_usage(), "IDMINT_CONFIG"));
    assert_non_null(strstr(idmd_config_usage(), "--check-config"));
    assert_non_null(strstr(idmd_config_usage(), "--help"));
    assert_non_null(strstr(idmd_config_usage(), "(default 127.0.0.1:7070)"));
    assert_non_null(strstr(idmd_config_usage(), "logical, refuse, wait or change-worker (default logical)"));
    assert_non_null(strstr(idmd_config_usage(), "wait or borrow (default wait)"));
    /* a number's line states its bounds and the default it has: lease-ttl's
     * are the lease library's */
    idmd_config defaults;
    char dump[8192];
    idmd_config_defaults(&defaults);
    idmd_config_print(&defaults, dump, sizeof dump);
    for (size_t i = 0; i < sizeof numcases / sizeof numcases[0]; i++) {
        char flag[64], want[96], line[96];
        snprintf(flag, sizeof flag, "\n  --%s ", numcases[i].key);
        const char *l = strstr(idmd_config_usage(), flag);
        assert_non_null(l);
        const char *end = strchr(l + 1, '\n');
        snprintf(line, sizeof line, "\n%s = ", numcases[i].key);
        const char *v = strstr(dump, line);
        assert_non_null(v);
        v += strlen(line);
        snprintf(want, sizeof want, ", %" PRIu64 "..%" PRIu64, numcases[i].lo, numcases[i].hi);
        const char *b = strstr(l, want);
        CHECK(b != NULL && b < end, "no '%s' in '%.*s'", want, (int)(end - l - 1), l + 1);
        snprintf(want, sizeof want, "(default %.*s", (int)strcspn(v, "\n"), v);
        b = strstr(l, want);
        CHECK(b != NULL && b < end, "no '%s' in '%.*s'", want, (int)(end - l - 1), l + 1);
    }
    char want[128];
    snprintf(want, sizeof want, ", %" PRId64 "..%" PRId64 " ms (default %" PRId64 ")\n",
             (int64_t)IDM_LEASE_TTL_MIN_MS, (int64_t)IDM_LEASE_TTL_MAX_MS,
             (int64_t)IDM_LEASE_TTL_DEFAULT_MS);
    const char *ttl = strstr(idmd_config_usage(), "\n  --lease-ttl MS ");
    assert_non_null(ttl);
    CHECK(strstr(ttl, want) == strchr(ttl + 1, '\n') - strlen(want) + 1,
          "the lease-ttl line does not end with '%s'", want);
    /* every key line states its default */
    for (const char *l = idmd_config_usage(); (l = strstr(l, "\n  --")) != NULL; l++) {
        const char *end = strchr(l + 1, '\n');
        assert_non_null(end);
        if (strncmp(l, "\n  --check-config", 17) == 0 || strncmp(l, "\n  --help", 9) == 0)
            continue;
        const char *d = strstr(l, "(default ");
        CHECK(d != NULL && d < end, "no default in '%.*s'", (int)(end - l - 1), l + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_key_table_complete),
        cmocka_unit_test(test_each_key_each_source),
        cmocka_unit_test(test_struct_fields),
        cmocka_unit_test(test_precedence_mixed),
        cmocka_unit_test(test_config_flag_and_env),
        cmocka_unit_test(test_file_syntax),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_env_errors),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_store_timeout),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_text_layout_epoch),
        cmocka_unit_test(test_check_and_help),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_check_lease_field),
        cmocka_unit_test(test_check_node),
        cmocka_unit_test(test_check_epoch_and_clock),
        cmocka_unit_test(test_check_count_max),
        cmocka_unit_test(test_check_urls),
        cmocka_unit_test(test_check_data_dir),
        cmocka_unit_test(test_check_token_file),
        cmocka_unit_test(test_check_opaque_key_file),
        cmocka_unit_test(test_check_admin_listen),
        cmocka_unit_test(test_url_passwords_masked),
        cmocka_unit_test(test_sources),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
