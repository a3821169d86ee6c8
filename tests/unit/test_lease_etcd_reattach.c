/* SPDX-License-Identifier: MIT */
/*
 * Reattach on the etcd backend: a holder restarted after kill -9 resumes
 * its claim from the handle it saved (backend.h: handle and reattach),
 * against real etcd servers this program starts with
 * scripts/etcd-test-server.sh (one plain member for most tests, one over
 * TLS with authentication for the etcds:// case), calling the backend's
 * operations directly.
 *
 * Each claim is made in a child process that sends what a claim file keeps
 * (worker id, handle, mark, generation) through a pipe and is then killed
 * with SIGKILL: no release, its connections left as the kernel leaves them.
 *
 * Fault rows: E12 (kill -9 and restart at once: reattached, same worker id,
 * the mark kept, renew and release work, the id then free), F6 and E12r (a
 * saved claim resumes once: the same handle again is refused; two copies
 * racing, one wins; a resend of the reattach whose answer was lost is
 * ours), H5r (a copy resumes while the holder is alive: the holder's next
 * renewal is IDM_ELEASE, its release changes nothing, and through the lease
 * layer its generator stops), E4r (the worker key written again by hand
 * under a running holder: its next renewal is IDM_ELEASE), E3 (its lease
 * revoked: refused; the id claimed by another since: refused, the other
 * claim untouched), E4 (its worker key deleted: refused), E18/E19 (the
 * saved claim from another cluster than the one answering: refused), E2
 * (etcd unreachable or frozen at the restart: an error that is not "lost",
 * within the claim's budget; the claim reattaches once etcd is back); and a
 * lease that expired before the restart, a garbled handle, a handle given
 * with another worker id, another scope than the one recorded (refused,
 * nothing changed), and etcds://.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"
#include "backend.h"
#include "etcd_internal.h"

#define ETCDCTL "ETCDCTL_API=3 etcdctl --dial-timeout=2s --command-timeout=5s --endpoints="
#define TTL_MS 5000 /* claims that must outlive a test's steps */
#define SHORT_TTL_MS 2000 /* etcd's shortest with its default timing */
#define SCOPE_A "worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657"
#define SCOPE_B "worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974658"

/* The password of user "idm" on the TLS server. */
#define IDM_PASSWORD "r3attach-\"pw\\-9Zq"

static char g_script[4096];
static char *g_dir;     /* the plain server's directory */
static char g_eps[256]; /* its endpoint, host:port */
static char g_certs_sh[4096];
static char *g_tdir;    /* the TLS server's directory */
static char g_tep[64];  /* its endpoint */
static char *g_tmp;     /* certificates and the password file */
static char *g_certs;
static char *g_pw;

/* ------------------------------------------------------------- helpers */

/* Run a shell command; its exit status (or 128 + signal, -1). */
__attribute__((format(printf, 1, 2))) static int run(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    int st;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    st = system(cmd);
    if (st == -1)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* "127.0.0.1:port/idmint/<name>": what follows etcd:// (rest, for open). */
static char *rest_of(const char *name)
{
    char *r = malloc(strlen(g_eps) + strlen(name) + 16);
    assert_non_null(r);
    sprintf(r, "%s/idmint/%s", g_eps, name);
    return r;
}

/* The lease etcd has bound /idmint/<name>/workers/<id> to, 0 if none. */
static int64_t key_lease(const char *name, uint32_t id)
{
    char out[2048];
    const char *p;
    leasetest_run_out(out, sizeof out, ETCDCTL "%s get /idmint/%s/workers/%u -w fields", g_eps,
                      name, (unsigned)id);
    p = strstr(out, "\"Lease\" : ");
    return p != NULL ? strtoll(p + 10, NULL, 10) : 0;
}

/* The value of a key (stored marks, the scope), "" if none. */
static void value_of(const char *key, char *out, size_t n)
{
    leasetest_run_out(out, n, ETCDCTL "%s get '%s' --print-value-only", g_eps, key);
}

static idm_unix_ms hwm(const char *name, uint32_t id)
{
    char key[256], v[64];
    snprintf(key, sizeof key, "/idmint/%s/hwm/%u", name, (unsigned)id);
    value_of(key, v, sizeof v);
    return v[0] != '\0' ? strtoll(v, NULL, 10) : -1;
}

/* The lease id in a handle "etcd:lease=<hex>,...". */
static int64_t lease_of(const char *handle)
{
    uint64_t l = 0;
    CHECK(sscanf(handle, "etcd:lease=%" SCNx64 ",", &l) == 1, "handle %s", handle);
    return (int64_t)l;
}

/* The revision in a handle "etcd:lease=<hex>,rev=<n>,...". */
static uint64_t rev_of(const char *handle)
{
    uint64_t l = 0, r = 0;
    CHECK(sscanf(handle, "etcd:lease=%" SCNx64 ",rev=%" SCNu64 ",", &l, &r) == 2, "handle %s",
          handle);
    return r;
}

/* Requests sent through a backend handle (count_posts put in): how many,
 * and the path of each ("txn keepalive"). */
static idm__etcd_post_fn g_real_post;
static int g_posts;
static char g_paths[256];

static int counting_post(void *be, const char *url, const char *body, long timeout_ms,
                         long *status)
{
    const char *p = strrchr(url, '/');
    size_t n = strlen(g_paths);
    g_posts++;
    snprintf(g_paths + n, sizeof g_paths - n, "%s%s", n > 0 ? " " : "", p != NULL ? p + 1 : url);
    return g_real_post(be, url, body, timeout_ms, status);
}

static void count_posts(void *be)
{
    g_real_post = idm__etcd_get_post(be);
    idm__etcd_set_post(be, counting_post);
    g_posts = 0;
    g_paths[0] = '\0';
}

static void *open_be(const idm__lease_backend *ops, const char *rest)
{
    idm_lease_opts o;
    void *be = NULL;
    idm_lease_opts_init(&o);
    o.ttl_ms = TTL_MS;
    IDM_ASSERT_OK(ops->open(&be, rest, &o));
    return be;
}

/* What a claim file keeps of a claim, as a crashed holder sent it. */
typedef struct crashed {
    int rc;                  /* the child's first failure, 0 if none */
    char detail[256];
    uint32_t worker;
    uint64_t generation;
    idm_unix_ms mark;        /* the mark its renewal recorded */
    int64_t granted_ms;
    char handle[IDM_LEASE_HANDLE_MAX];
} crashed;

static void child_claim(const idm__lease_backend *ops, const char *rest, uint32_t max,
                        int64_t ttl_ms, const char *scope, crashed *c)
{
    idm_lease_opts o;
    void *be = NULL;
    idm_unix_ms prev = 0, rec = 0;
    idm_lease_opts_init(&o);
    o.ttl_ms = ttl_ms;
    c->rc = ops->open(&be, rest, &o);
    if (c->rc == 0)
        c->rc = ops->claim(be, max, ttl_ms, "crashed", scope, leasetest_wall_ms() + ttl_ms,
                           &c->worker, &prev, &rec, &c->granted_ms);
    /* A renewal records a mark beyond the claim's: the one to keep. */
    c->mark = leasetest_wall_ms() + ttl_ms + 1000;
    if (c->rc == 0)
        c->rc = ops->renew(be, c->mark, &c->granted_ms);
    if (c->rc == 0)
        c->rc = ops->handle(be, c->handle, sizeof c->handle);
    if (c->rc == 0)
        c->generation = ops->generation(be);
    if (c->rc != 0)
        snprintf(c->detail, sizeof c->detail, "%s", idm_error_detail());
}

/*
 * A holder that crashes: a child process claims (ops, rest: the URL after
 * the scheme; max ids, ttl_ms, scope), renews once, sends what a claim file
 * keeps, and is killed with SIGKILL as soon as that is read. Fails the test
 * if the child could not claim.
 */
static crashed crash_holder(const idm__lease_backend *ops, const char *rest, uint32_t max,
                            int64_t ttl_ms, const char *scope)
{
    crashed c;
    int fds[2], st = 0;
    size_t got = 0;
    pid_t pid;
    memset(&c, 0, sizeof c);
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        crashed mine;
        size_t put = 0;
        close(fds[0]);
        alarm(60); /* never outlives a parent that failed to kill it */
        memset(&mine, 0, sizeof mine);
        child_claim(ops, rest, max, ttl_ms, scope, &mine);
        while (put < sizeof mine) {
            ssize_t n = write(fds[1], (char *)&mine + put, sizeof mine - put);
            if (n <= 0)
                _exit(2);
            put += (size_t)n;
        }
        for (;;)
            pause();
    }
    close(fds[1]);
    while (got < sizeof c) {
        ssize_t n = read(fds[0], (char *)&c + got, sizeof c - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the holder ended with status %d", st);
    CHECK(got == sizeof c, "the holder sent %zu bytes of %zu", got, sizeof c);
    CHECK(c.rc == 0, "the holder could not claim: %s", c.detail);
    CHECK(c.worker < max && c.granted_ms > 0 && c.generation > 0 && c.handle[0] != '\0',
          "worker %u, TTL %lld, generation %llu, handle '%s'", (unsigned)c.worker,
          LL(c.granted_ms), ULL(c.generation), c.handle);
    return c;
}

/* reattach on a new handle of ops/rest must fail with want (the handle is
 * closed then); its detail must hold has (if not NULL). At most the grant
 * of a new lease, the txn and the revoke of that lease (none for a handle
 * that does not parse; the grant alone when another cluster answers it);
 * a lease granted for a refused txn is revoked; never a keepalive. */
static void reattach_fails(const idm__lease_backend *ops, const char *rest, uint32_t worker,
                           const char *handle, const char *scope, int want, const char *has)
{
    void *be = open_be(ops, rest);
    idm_unix_ms rec = -1;
    int64_t granted = -1;
    count_posts(be);
    IDM_ASSERT_RC(ops->reattach(be, worker, handle, TTL_MS, "restarted", scope,
                                leasetest_wall_ms() + TTL_MS, &rec, &granted),
                  want);
    CHECK(has == NULL || strstr(idm_error_detail(), has) != NULL, "'%s' not in: %s", has,
          idm_error_detail());
    CHECK(rec == -1 && granted == -1, "outputs set on failure: %lld, %lld", LL(rec),
          LL(granted));
    CHECK(g_posts <= (ops == &idm__lease_etcds ? 4 : 3), "%d requests: %s", g_posts, g_paths);
    CHECK(strstr(g_paths, "keepalive") == NULL, "requests: %s", g_paths);
    CHECK(strstr(g_paths, "txn") == NULL || strstr(g_paths, "txn revoke") != NULL,
          "a refused txn's lease not revoked: %s", g_paths);
    ops->close(be);
}

/* What a refused reattach must leave as it was: the worker key's lease and
 * the stored mark of worker id of name. */
typedef struct kept {
    int64_t lease;
    idm_unix_ms mark;
} kept;

static kept kept_now(const char *name, uint32_t id)
{
    kept k = {key_lease(name, id), hwm(name, id)};
    return k;
}

static void kept_same(const char *name, uint32_t id, kept before)
{
    kept now = kept_now(name, id);
    CHECK(now.lease == before.lease && now.mark == before.mark,
          "%s worker %u: lease %lld -> %lld, mark %lld -> %lld", name, (unsigned)id,
          LL(before.lease), LL(now.lease), LL(before.mark), LL(now.mark));
}

/* ------------------------------------------------------------- servers */

#define srv(out, n, ...) leasetest_script(out, n, "IDM_ETCD_OWNER", g_script, __VA_ARGS__)

static void stop_dir(char **dir)
{
    leasetest_thaw_any();
    if (*dir == NULL)
        return;
    srv(NULL, 0, "stop '%s'", *dir);
    idm_test_rmtree(*dir);
    free(*dir);
    *dir = NULL;
}

static int setup_plain(void **unused)
{
    (void)unused;
    if (leasetest_script_path(g_script, sizeof g_script, "test_lease_etcd_reattach",
                              "etcd-test-server.sh") != 0)
        return -1;
    g_dir = idm_test_tmpdir();
    if (srv(g_eps, sizeof g_eps, "start '%s' 1", g_dir) != 0 || g_eps[0] == '\0' ||
        strchr(g_eps, ' ') != NULL) {
        fprintf(stderr, "test_lease_etcd_reattach: cannot start etcd in %s (is etcd-server "
                        "installed?)\n",
                g_dir);
        stop_dir(&g_dir);
        return -1;
    }
    return 0;
}

static int teardown_plain(void **unused)
{
    (void)unused;
    stop_dir(&g_dir);
    return 0;
}

static void stop_tls(void)
{
    stop_dir(&g_tdir);
    if (g_tmp != NULL)
        idm_test_rmtree(g_tmp);
    free(g_tmp);
    free(g_certs);
    free(g_pw);
    g_tmp = g_certs = g_pw = NULL;
}

static int setup_tls(void **unused)
{
    char out[512];
    FILE *f;
    (void)unused;
    if (leasetest_script_path(g_script, sizeof g_script, "test_lease_etcd_reattach",
                              "etcd-test-server.sh") != 0 ||
        leasetest_script_path(g_certs_sh, sizeof g_certs_sh, "test_lease_etcd_reattach",
                              "etcd-test-certs.sh") != 0)
        return -1;
    g_tmp = idm_test_tmpdir();
    g_tdir = idm_test_tmpdir();
    g_certs = idm_test_path(g_tmp, "certs");
    g_pw = idm_test_path(g_tmp, "idm.pw");
    if (mkdir(g_certs, 0700) != 0 ||
        leasetest_run_out(out, sizeof out, "bash '%s' '%s'", g_certs_sh, g_certs) != 0) {
        fprintf(stderr, "test_lease_etcd_reattach: cannot make certificates (is openssl "
                        "installed?)\n");
        stop_tls();
        return -1;
    }
    f = fopen(g_pw, "w");
    if (f == NULL || fputs(IDM_PASSWORD "\n", f) < 0 || fclose(f) != 0 || chmod(g_pw, 0600) != 0) {
        fprintf(stderr, "test_lease_etcd_reattach: cannot write %s\n", g_pw);
        stop_tls();
        return -1;
    }
    if (srv(g_tep, sizeof g_tep, "start-tls '%s' '%s' auth 2s", g_tdir, g_certs) != 0 ||
        g_tep[0] == '\0' || strchr(g_tep, ' ') != NULL ||
        srv(NULL, 0, "user '%s' idm '%s' /idmint/", g_tdir, g_pw) != 0) {
        fprintf(stderr, "test_lease_etcd_reattach: cannot start etcd with TLS and its user in "
                        "%s (is etcd-server installed?)\n",
                g_tdir);
        stop_tls();
        return -1;
    }
    return 0;
}

static int teardown_tls(void **unused)
{
    (void)unused;
    stop_tls();
    return 0;
}

/* --------------------------------------------------------------- tests */

/* E12: killed with kill -9 and reattached at once, in two round trips (a
 * new lease granted for the TTL asked for now, then the txn that proves the
 * claim and moves the worker key to the new lease): the same worker id, a
 * new lease, handle and (higher) generation, the mark the dead holder
 * recorded (above the one asked for) kept; renew and release work, and the
 * id is then free for a new claim, which starts at the final mark. */
static void e12_reattach_after_kill(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("e12r");
    char h[IDM_LEASE_HANDLE_MAX];
    crashed c = crash_holder(ops, rest, 4, TTL_MS, SCOPE_A);
    int64_t lease = lease_of(c.handle), granted = 0;
    idm_unix_ms want = leasetest_wall_ms() + TTL_MS, rec = 0, prev = 0, fin;
    uint32_t worker = UINT32_MAX;
    void *be, *be2;
    (void)unused;
    assert_int_equal(key_lease("e12r", c.worker), lease);
    CHECK(want < c.mark, "the mark asked for (%lld) is to be below the saved one (%lld)", LL(want),
          LL(c.mark));

    be = open_be(ops, rest);
    count_posts(be);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, 3000, "restarted", SCOPE_A, want, &rec,
                                &granted));
    printf("  E12: reattached worker %u in %d round trips (%s)\n", (unsigned)c.worker, g_posts,
           g_paths);
    assert_int_equal(g_posts, 2);
    assert_string_equal(g_paths, "grant txn");
    CHECK(rec >= c.mark && rec == hwm("e12r", c.worker), "recorded %lld, saved %lld, stored %lld",
          LL(rec), LL(c.mark), LL(hwm("e12r", c.worker)));
    assert_int_equal(granted, 3000);
    IDM_ASSERT_OK(ops->handle(be, h, sizeof h));
    CHECK(strcmp(h, c.handle) != 0, "the handle did not change: %s", h);
    CHECK(key_lease("e12r", c.worker) == lease_of(h) && lease_of(h) != lease,
          "the key's lease %lld, the new handle's %lld, the saved one %lld",
          LL(key_lease("e12r", c.worker)), LL(lease_of(h)), LL(lease));
    CHECK(ops->generation(be) > c.generation && rev_of(h) == ops->generation(be),
          "generation %llu (saved %llu), the handle's revision %llu", ULL(ops->generation(be)),
          ULL(c.generation), ULL(rev_of(h)));
    IDM_ASSERT_RC(ops->reattach(be, c.worker, c.handle, TTL_MS, "again", SCOPE_A, want, &rec,
                                &granted),
                  IDM_EINVAL); /* a handle holds one claim */

    IDM_ASSERT_OK(ops->renew(be, rec + 500, &granted));
    assert_int_equal(hwm("e12r", c.worker), rec + 500);
    fin = rec + 400; /* a release sets the exact final mark */
    IDM_ASSERT_OK(ops->release(be, fin));
    assert_int_equal(key_lease("e12r", c.worker), 0);
    ops->close(be);

    be2 = open_be(ops, rest);
    IDM_ASSERT_OK(ops->claim(be2, 4, TTL_MS, "next", SCOPE_A, leasetest_wall_ms(), &worker, &prev,
                             &rec, &granted));
    assert_int_equal(worker, c.worker);
    assert_int_equal(prev, fin);
    IDM_ASSERT_OK(ops->release(be2, prev));
    ops->close(be2);
    free(rest);
}

/* E12, too late: a lease that expired (its TTL waited out on etcd) before
 * the restart: IDM_ELEASE, nothing changed (no key bound, the mark as the dead holder left it). */
static void e12_expired_lease_refused(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("expired");
    crashed c = crash_holder(ops, rest, 4, SHORT_TTL_MS, NULL);
    kept k;
    int64_t t0 = leasetest_mono_ms();
    (void)unused;
    while (key_lease("expired", c.worker) != 0) {
        CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "the lease never expired");
        leasetest_sleep_ms(100);
    }
    k = kept_now("expired", c.worker);
    assert_int_equal(k.mark, c.mark);
    reattach_fails(ops, rest, c.worker, c.handle, NULL, IDM_ELEASE, "is gone");
    kept_same("expired", c.worker, k);
    free(rest);
}

/* E3: the lease revoked: IDM_ELEASE, nothing changed. Then the id claimed
 * by another holder: IDM_ELEASE naming its lease, and its claim untouched
 * (the key still bound to it, its mark, and it still renews). */
static void e3_revoked_then_taken(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("e3r");
    crashed c = crash_holder(ops, rest, 1, TTL_MS, SCOPE_A);
    uint32_t worker = UINT32_MAX;
    idm_unix_ms prev = 0, rec = 0;
    int64_t granted = 0;
    void *other;
    kept k;
    (void)unused;
    assert_int_equal(run(ETCDCTL "%s lease revoke %llx > /dev/null", g_eps,
                         ULL(lease_of(c.handle))),
                     0);
    k = kept_now("e3r", c.worker);
    assert_int_equal(k.lease, 0);
    reattach_fails(ops, rest, c.worker, c.handle, SCOPE_A, IDM_ELEASE, "is gone");
    kept_same("e3r", c.worker, k);

    other = open_be(ops, rest);
    IDM_ASSERT_OK(ops->claim(other, 1, TTL_MS, "other", SCOPE_A, c.mark + 10, &worker, &prev,
                             &rec, &granted));
    assert_int_equal(worker, c.worker);
    k = kept_now("e3r", c.worker);
    CHECK(k.lease != 0 && k.lease != lease_of(c.handle), "the other's lease: %lld", LL(k.lease));
    reattach_fails(ops, rest, c.worker, c.handle, SCOPE_A, IDM_ELEASE, "another holder");
    kept_same("e3r", c.worker, k);
    IDM_ASSERT_OK(ops->renew(other, c.mark + 20, &granted));
    assert_int_equal(hwm("e3r", c.worker), c.mark + 20);
    IDM_ASSERT_OK(ops->release(other, c.mark + 20));
    ops->close(other);
    free(rest);
}

/* E4: the worker key deleted by an operator, its lease still alive:
 * IDM_ELEASE, nothing changed (no key bound again); and put back by hand. */
static void e4_key_deleted_refused(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("e4r");
    crashed c = crash_holder(ops, rest, 4, TTL_MS, NULL);
    char out[512];
    kept k;
    (void)unused;
    assert_int_equal(run(ETCDCTL "%s del /idmint/e4r/workers/%u > /dev/null", g_eps,
                         (unsigned)c.worker),
                     0);
    k = kept_now("e4r", c.worker);
    assert_int_equal(k.lease, 0);
    reattach_fails(ops, rest, c.worker, c.handle, NULL, IDM_ELEASE, "is gone");
    kept_same("e4r", c.worker, k);
    /* The lease itself lives on (it binds nothing): only the key said no. */
    leasetest_run_out(out, sizeof out, ETCDCTL "%s lease timetolive %llx", g_eps,
                      ULL(lease_of(c.handle)));
    CHECK(strstr(out, "remaining(") != NULL && strstr(out, "already expired") == NULL,
          "the lease: %s", out);
    /* The key put back by hand, bound to the same lease: another key (its
     * create revision, the claim's generation, differs): refused too. */
    assert_int_equal(run(ETCDCTL "%s put --lease=%llx /idmint/e4r/workers/%u by-hand > /dev/null",
                         g_eps, ULL(lease_of(c.handle)), (unsigned)c.worker),
                     0);
    k = kept_now("e4r", c.worker);
    assert_int_equal(k.lease, lease_of(c.handle));
    reattach_fails(ops, rest, c.worker, c.handle, NULL, IDM_ELEASE, "created again");
    kept_same("e4r", c.worker, k);
    free(rest);
}

/* A garbled handle: IDM_EINVAL, never shown in the detail; the handle of
 * worker id N given with another worker id M (free, or held by another):
 * IDM_ELEASE; one naming another cluster (E18: etcd re-created with a wiped
 * data directory, or E19 a misrouted endpoint): IDM_ELEASE.
 * Nothing changed by any of them: the right one then reattaches. */
static void e18_garbled_or_misapplied_handles(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("garbled");
    crashed c = crash_holder(ops, rest, 4, TTL_MS, NULL);
    crashed d = crash_holder(ops, rest, 4, TTL_MS, NULL); /* holds another id */
    uint64_t l = 0, rev = 0, cl = 0;
    char bad[24][IDM_LEASE_HANDLE_MAX], other_cluster[IDM_LEASE_HANDLE_MAX];
    int nb = 0;
    uint32_t free_id = 0;
    idm_unix_ms rec = 0;
    int64_t granted = 0;
    void *be;
    kept k, kd;
    (void)unused;
    assert_int_equal(sscanf(c.handle, "etcd:lease=%" SCNx64 ",rev=%" SCNu64 ",cluster=%" SCNu64,
                            &l, &rev, &cl),
                     3);
    while (free_id == c.worker || free_id == d.worker)
        free_id++;
#define BAD(...) snprintf(bad[nb++], IDM_LEASE_HANDLE_MAX, __VA_ARGS__)
    BAD("%s", "");
    BAD("%s", "etcd:");
    BAD("zk:session=%" PRIx64 ",password=s3cret-zk", l);
    BAD("%" PRIx64, l);
    BAD("etcd:lease=%" PRIX64 ",rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl); /* upper case */
    BAD("etcd:lease=0%" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
    BAD("etcd:lease=0,rev=%" PRIu64 ",cluster=%" PRIu64, rev, cl);
    BAD("etcd:lease=%" PRIx64 ",rev=0,cluster=%" PRIu64, l, cl);
    BAD("etcd:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=0", l, rev);
    BAD("etcd:lease=%" PRIx64 ",rev=-%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
    BAD("etcd:lease=1%016" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
    BAD("etcd:lease=%" PRIx64 ",rev=9223372036854775808,cluster=%" PRIu64, l, cl);
    BAD("etcd:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=18446744073709551616", l, rev);
    BAD("etcd:lease=%" PRIx64 ",rev=%" PRIu64, l, rev);
    BAD("etcd:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64 ",", l, rev, cl);
    BAD("etcd:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64 " ", l, rev, cl);
    BAD("etcd:rev=%" PRIu64 ",lease=%" PRIx64 ",cluster=%" PRIu64, rev, l, cl);
    BAD("etcd:lease=%" PRIx64 ",,rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
    BAD("etcd:lease=%" PRIx64 "g,rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
    BAD("etcd:lease=%" PRIx64 ",rev=+%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
    BAD("ETCD:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl);
#undef BAD
    k = kept_now("garbled", c.worker);
    kd = kept_now("garbled", d.worker);
    for (int i = 0; i < nb; i++) {
        reattach_fails(ops, rest, c.worker, bad[i], NULL, IDM_EINVAL, "not an etcd claim");
        CHECK(strstr(idm_error_detail(), "s3cret") == NULL, "the handle shown: %s",
              idm_error_detail());
    }
    reattach_fails(ops, rest, c.worker, NULL, NULL, IDM_EINVAL, "not an etcd claim");
    reattach_fails(ops, rest, free_id, c.handle, NULL, IDM_ELEASE, "is gone");
    reattach_fails(ops, rest, d.worker, c.handle, NULL, IDM_ELEASE, "another holder");
    reattach_fails(ops, rest, IDM_LEASE_WORKERS_MAX, c.handle, NULL, IDM_EINVAL, "out of range");
    snprintf(other_cluster, sizeof other_cluster,
             "etcd:lease=%" PRIx64 ",rev=%" PRIu64 ",cluster=%" PRIu64, l, rev, cl ^ 1);
    reattach_fails(ops, rest, c.worker, other_cluster, NULL, IDM_ELEASE, "cluster");
    kept_same("garbled", c.worker, k);
    kept_same("garbled", d.worker, kd);
    assert_int_equal(key_lease("garbled", free_id), 0);

    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", NULL, c.mark, &rec,
                                &granted));
    IDM_ASSERT_OK(ops->release(be, rec));
    ops->close(be);
    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(be, d.worker, d.handle, TTL_MS, "restarted", NULL, d.mark, &rec,
                                &granted));
    IDM_ASSERT_OK(ops->release(be, rec));
    ops->close(be);
    free(rest);
}

/* E2 at a restart: etcd down, nothing listening (a stopped server), then the member frozen
 * with SIGSTOP: an error that is not IDM_ELEASE ("unknown, try again"),
 * given up within the claim's budget (a bound only a hung call reaches is
 * checked; the time is printed). Thawed, the claim reattaches. */
static void e2_coordinator_down_not_lost(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("down");
    crashed c = crash_holder(ops, rest, 4, TTL_MS, NULL);
    char dead[128];
    int port, fd, rc;
    idm_unix_ms rec = 0;
    int64_t granted = 0, t0, took;
    pid_t member;
    char out[64];
    void *be;
    (void)unused;
    fd = leasetest_listen(&port);
    close(fd); /* a port nothing listens on */
    snprintf(dead, sizeof dead, "127.0.0.1:%d/idmint/down", port);
    be = open_be(ops, dead); /* open makes no round trip: it works */
    t0 = leasetest_mono_ms();
    rc = ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", NULL, c.mark, &rec, &granted);
    took = leasetest_mono_ms() - t0;
    ops->close(be);
    CHECK(rc != 0 && rc != IDM_ELEASE, "nothing listening: %s (%s)", idm_err_name(rc),
          idm_error_detail());
    printf("  down: %s after %lld ms\n", idm_err_name(rc), LL(took));

    assert_int_equal(srv(out, sizeof out, "pid '%s' 1", g_dir), 0);
    member = (pid_t)atol(out);
    assert_true(member > 0);
    be = open_be(ops, rest);
    leasetest_freeze(member);
    t0 = leasetest_mono_ms();
    rc = ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", NULL, c.mark, &rec, &granted);
    took = leasetest_mono_ms() - t0;
    leasetest_thaw(member);
    ops->close(be);
    CHECK(rc != 0 && rc != IDM_ELEASE, "etcd frozen: %s (%s)", idm_err_name(rc),
          idm_error_detail());
    CHECK(took < LEASETEST_HUNG_MS, "etcd frozen: gave up after %lld ms", LL(took));
    printf("  frozen: %s after %lld ms\n", idm_err_name(rc), LL(took));

    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", NULL, c.mark, &rec,
                                &granted));
    IDM_ASSERT_OK(ops->release(be, rec));
    ops->close(be);
    free(rest);
}

/* Another scope than the one recorded: IDM_EINVAL naming both, nothing
 * changed (the key, the mark, the scope); with the recorded one, or with
 * none (not checked, as for a claim), it reattaches. A claim made without a
 * scope, on a coordinator that records none: the reattach records ours, in
 * the same transaction. */
static void scope_refused_or_recorded(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("scoped"), *rest2 = rest_of("unscoped");
    crashed c = crash_holder(ops, rest, 4, TTL_MS, SCOPE_A);
    crashed u = crash_holder(ops, rest2, 4, TTL_MS, NULL);
    char v[IDM_LEASE_SCOPE_MAX + 64], h[IDM_LEASE_HANDLE_MAX];
    idm_unix_ms rec = 0;
    int64_t granted = 0;
    void *be;
    kept k;
    (void)unused;
    k = kept_now("scoped", c.worker);
    reattach_fails(ops, rest, c.worker, c.handle, SCOPE_B, IDM_EINVAL, "epoch 1288834974658");
    CHECK(strstr(idm_error_detail(), "epoch 1288834974657") != NULL, "detail: %s",
          idm_error_detail());
    kept_same("scoped", c.worker, k);
    value_of("/idmint/scoped/scope", v, sizeof v);
    assert_string_equal(v, SCOPE_A);

    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", SCOPE_A, c.mark,
                                &rec, &granted));
    IDM_ASSERT_OK(ops->handle(be, h, sizeof h)); /* what a restart then needs */
    ops->close(be); /* not released: reattached again below */
    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, h, TTL_MS, "restarted", NULL, c.mark, &rec,
                                &granted));
    IDM_ASSERT_OK(ops->release(be, rec));
    ops->close(be);

    value_of("/idmint/unscoped/scope", v, sizeof v);
    assert_string_equal(v, "");
    be = open_be(ops, rest2);
    count_posts(be);
    IDM_ASSERT_OK(ops->reattach(be, u.worker, u.handle, TTL_MS, "restarted", SCOPE_B, u.mark,
                                &rec, &granted));
    assert_int_equal(g_posts, 2);
    assert_true(rec >= u.mark);
    value_of("/idmint/unscoped/scope", v, sizeof v);
    assert_string_equal(v, SCOPE_B);
    IDM_ASSERT_OK(ops->release(be, rec));
    ops->close(be);
    free(rest);
    free(rest2);
}

/* E12 over etcds:// (TLS, a client certificate, etcd authentication): the
 * same reattach, one more round trip for the token; E12r: once. */
static void e12_reattach_over_tls(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcds;
    char rest[4096], h[IDM_LEASE_HANDLE_MAX];
    crashed c;
    uint32_t worker = UINT32_MAX;
    idm_unix_ms rec = 0, prev = 0, fin;
    int64_t granted = 0;
    void *be;
    (void)unused;
    snprintf(rest, sizeof rest,
             "%s/idmint/tls?cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem&user=idm&"
             "password-file=%s",
             g_tep, g_certs, g_certs, g_certs, g_pw);
    c = crash_holder(ops, rest, 2, TTL_MS, SCOPE_A);
    be = open_be(ops, rest);
    count_posts(be);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", SCOPE_A,
                                leasetest_wall_ms(), &rec, &granted));
    printf("  etcds: reattached worker %u in %d round trips (%s)\n", (unsigned)c.worker, g_posts,
           g_paths);
    assert_int_equal(g_posts, 3);
    assert_string_equal(g_paths, "authenticate grant txn");
    assert_true(rec >= c.mark);
    assert_int_equal(granted, TTL_MS);
    IDM_ASSERT_OK(ops->handle(be, h, sizeof h));
    CHECK(strcmp(h, c.handle) != 0 && rev_of(h) == ops->generation(be) &&
              rev_of(h) > c.generation,
          "handle %s after %s, generation %llu", h, c.handle, ULL(ops->generation(be)));
    /* Resumed once: the saved handle again is refused (and leaves no
     * lease behind). */
    reattach_fails(ops, rest, c.worker, c.handle, SCOPE_A, IDM_ELEASE, "resumed again");
    fin = rec + 1;
    IDM_ASSERT_OK(ops->renew(be, fin, &granted));
    IDM_ASSERT_OK(ops->release(be, fin));
    ops->close(be);
    /* Released: a claim gets that id, at the final mark; and the old
     * handle no longer reattaches. */
    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->claim(be, 1, TTL_MS, "next", SCOPE_A, leasetest_wall_ms(), &worker, &prev,
                             &rec, &granted));
    assert_int_equal(worker, c.worker);
    assert_int_equal(prev, fin);
    IDM_ASSERT_OK(ops->release(be, prev));
    ops->close(be);
    reattach_fails(ops, rest, c.worker, c.handle, SCOPE_A, IDM_ELEASE, "is gone");
}

/* F6, E12r: one saved claim resumed twice (a state directory copied, or
 * restored from a snapshot twice): the first reattach gets it; the same
 * handle again is IDM_ELEASE ("resumed again"), nothing changed but a lease
 * granted and revoked again; the first goes on renewing, and its release
 * frees the id. Then copies racing: two processes reattaching the same
 * handle at once, one wins, every round. */
static void e12r_same_handle_twice(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("twice");
    char h[IDM_LEASE_HANDLE_MAX];
    crashed c = crash_holder(ops, rest, 4, TTL_MS, NULL);
    idm_unix_ms rec = 0;
    int64_t granted = 0;
    uint64_t gen;
    void *be;
    kept k;
    (void)unused;
    be = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, TTL_MS, "first copy", NULL, c.mark, &rec,
                                &granted));
    IDM_ASSERT_OK(ops->handle(be, h, sizeof h));
    gen = ops->generation(be);
    k = kept_now("twice", c.worker);
    assert_int_equal(k.lease, lease_of(h));
    reattach_fails(ops, rest, c.worker, c.handle, NULL, IDM_ELEASE, "resumed again");
    printf("  F6: the same handle again: %s\n", idm_error_detail());
    kept_same("twice", c.worker, k);
    /* The first copy's claim is untouched: it renews, as it was. */
    IDM_ASSERT_OK(ops->renew(be, rec + 100, &granted));
    assert_int_equal(hwm("twice", c.worker), rec + 100);
    assert_int_equal(ops->generation(be), gen);
    IDM_ASSERT_OK(ops->release(be, rec + 100));
    assert_int_equal(key_lease("twice", c.worker), 0);
    ops->close(be);
    reattach_fails(ops, rest, c.worker, c.handle, NULL, IDM_ELEASE, "is gone");
    reattach_fails(ops, rest, c.worker, h, NULL, IDM_ELEASE, "is gone");

    /* Racing copies, in processes of their own: one winner a round. */
    for (int round = 0; round < 4; round++) {
        crashed r = crash_holder(ops, rest, 4, TTL_MS, round % 2 ? SCOPE_A : NULL);
        pid_t pid[2];
        int won = 0, lost = 0;
        fflush(NULL);
        for (int i = 0; i < 2; i++) {
            pid[i] = fork();
            assert_true(pid[i] >= 0);
            if (pid[i] == 0) {
                void *b;
                idm_lease_opts o;
                int rc;
                alarm(60);
                idm_lease_opts_init(&o);
                o.ttl_ms = TTL_MS;
                rc = ops->open(&b, rest, &o);
                if (rc == 0)
                    rc = ops->reattach(b, r.worker, r.handle, TTL_MS, "racer",
                                       round % 2 ? SCOPE_A : NULL, r.mark, &rec, &granted);
                _exit(rc == 0 ? 0 : rc == IDM_ELEASE ? 1 : 2);
            }
        }
        for (int i = 0; i < 2; i++) {
            int st = 0;
            assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) < 2, "racer %d: status %d", i, st);
            won += WEXITSTATUS(st) == 0;
            lost += WEXITSTATUS(st) == 1;
        }
        CHECK(won == 1 && lost == 1, "round %d: %d won, %d refused", round, won, lost);
        /* The winner died holding it: its lease binds the key now. */
        CHECK(key_lease("twice", r.worker) != 0 &&
                  key_lease("twice", r.worker) != lease_of(r.handle),
              "round %d: the key's lease %lld", round, LL(key_lease("twice", r.worker)));
        assert_int_equal(run(ETCDCTL "%s del /idmint/twice/workers/%u > /dev/null", g_eps,
                             (unsigned)r.worker),
                         0);
    }
    printf("  F6: 4 races of two copies, one winner each\n");
    free(rest);
}

/* What a lease's on_renew hook was given last. */
typedef struct keep {
    pthread_mutex_t mu;
    idm_lease_saved sv;
    int n;
} keep;

static int keep_saved(void *ctx, const idm_lease_saved *sv)
{
    keep *k = ctx;
    pthread_mutex_lock(&k->mu);
    k->sv = *sv;
    k->n++;
    pthread_mutex_unlock(&k->mu);
    return 0;
}

static void keep_get(keep *k, idm_lease_saved *sv)
{
    pthread_mutex_lock(&k->mu);
    CHECK(k->n > 0 && k->sv.handle[0] != '\0', "no saved claim");
    *sv = k->sv;
    pthread_mutex_unlock(&k->mu);
}

/* H5r: a copy resumes while the holder that saved the handle is alive. On
 * the backend: the copy gets the claim, its mark at least the holder's
 * last; the holder's next renewal is IDM_ELEASE (the key bound to another
 * lease) and writes nothing, its release changes nothing (the copy's key,
 * lease and mark stay) and the copy renews on. Through the lease layer: a
 * holder minting under a lease whose saved claim a copy resumes
 * (idm_lease_resume, confirmed) learns at its next renewal that the claim
 * is lost and its generator refuses from then on; the copy's saved claim
 * names its own lease and a higher generation (the one a later restart
 * needs), and it mints. */
static void h5r_original_alive_loses(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("alive"), *url;
    char ho[IDM_LEASE_HANDLE_MAX];
    void *orig, *copy;
    uint32_t worker = UINT32_MAX;
    idm_unix_ms prev = 0, rec = 0, m1;
    int64_t granted = 0;
    keep k = {PTHREAD_MUTEX_INITIALIZER, {0}, 0}, k2 = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    idm_lease_saved sv, sv2;
    idm_lease_opts o, o2;
    idm_lease *l, *l2;
    idm_lease_status st;
    idm_layout *layout;
    idm_snowflake *g, *g2;
    idm_test_idvec iv = {0};
    uint64_t id;
    bool offline = true;
    kept kc;
    (void)unused;
    orig = open_be(ops, rest);
    IDM_ASSERT_OK(ops->claim(orig, 1, TTL_MS, "holder", SCOPE_A, leasetest_wall_ms() + TTL_MS,
                             &worker, &prev, &rec, &granted));
    m1 = leasetest_wall_ms() + TTL_MS + 1000;
    IDM_ASSERT_OK(ops->renew(orig, m1, &granted));
    IDM_ASSERT_OK(ops->handle(orig, ho, sizeof ho));
    copy = open_be(ops, rest);
    IDM_ASSERT_OK(ops->reattach(copy, worker, ho, TTL_MS, "copy", SCOPE_A,
                                leasetest_wall_ms() + TTL_MS, &rec, &granted));
    CHECK(rec >= m1, "the copy's mark %lld is below the holder's %lld", LL(rec), LL(m1));
    CHECK(ops->generation(copy) > ops->generation(orig), "generations: copy %llu, holder %llu",
          ULL(ops->generation(copy)), ULL(ops->generation(orig)));
    kc = kept_now("alive", worker);
    IDM_ASSERT_RC(ops->renew(orig, m1 + 100, &granted), IDM_ELEASE);
    printf("  H5r: the holder's renewal: %s\n", idm_error_detail());
    kept_same("alive", worker, kc);
    (void)ops->release(orig, m1 - 1000);
    ops->close(orig);
    kept_same("alive", worker, kc);
    IDM_ASSERT_OK(ops->renew(copy, rec + 1, &granted));
    IDM_ASSERT_OK(ops->release(copy, rec + 1));
    ops->close(copy);
    assert_int_equal(key_lease("alive", worker), 0);

    /* The lease layer (another prefix: worker id 0 of this one has a mark
     * ahead of the clock now). */
    url = leasetest_url_for("etcd", g_eps, "alive-lease");
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    leasetest_opts(&o, url, 1, SHORT_TTL_MS);
    o.on_renew = keep_saved;
    o.hook_ctx = &k;
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    keep_get(&k, &sv);
    o2 = o;
    o2.hook_ctx = &k2;
    IDM_ASSERT_OK(idm_lease_resume(&l2, &o2, &sv, &offline));
    assert_false(offline);
    g2 = leasetest_gen(layout, l2, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l2, g2));
    keep_get(&k2, &sv2);
    CHECK(strcmp(sv2.handle, sv.handle) != 0 && sv2.generation > sv.generation &&
              sv2.generation == idm_lease_generation(l2) && sv2.worker == sv.worker,
          "saved after the resume: worker %u, generation %llu, handle %s (before: %llu, %s)",
          (unsigned)sv2.worker, ULL(sv2.generation), sv2.handle, ULL(sv.generation), sv.handle);
    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost && st.last_error == IDM_ELEASE, "the holder's lease: lost %d, last error %s",
          (int)st.lost, idm_err_name(st.last_error));
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    CHECK(sv2.mark_ms >= st.mark_ms, "the copy's mark %lld is below the holder's %lld",
          LL(sv2.mark_ms), LL(st.mark_ms));
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    IDM_ASSERT_OK(idm_snowflake_next(g2, &id));
    leasetest_wait_status(l2, &st, false, st.renewals + 1);
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g2);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
    free(rest);
}

/* The reattach's answer lost after etcd applied it (a timeout, say), the
 * same txn sent again to the next endpoint: the key is bound to the new
 * lease already, which only this reattach knows: resumed (not "resumed
 * again"), at the key's revision, which the renewals then guard on. Both
 * shapes of the txn: the scope recorded (compared), and recorded by this
 * reattach (the nested txn). */
static int g_lose_txn; /* reattach txns whose answers are yet to be lost */

static int lossy_post(void *be, const char *url, const char *body, long timeout_ms, long *status)
{
    int r = counting_post(be, url, body, timeout_ms, status);
    if (r == 0 && g_lose_txn > 0 && strstr(url, "/v3/kv/txn") != NULL &&
        strstr(body, "\"MOD\"") != NULL && strstr(body, "\"request_put\"") != NULL) {
        g_lose_txn--;
        idm__etcd_transport_error(be, "the answer was lost (a test's stand-in)");
        return -1;
    }
    return r;
}

static void e12r_answer_lost_resent(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    (void)unused;
    for (int scoped = 0; scoped < 2; scoped++) {
        const char *name = scoped ? "lost-scoped" : "lost-unscoped";
        char *rest = rest_of(name), twice[2 * sizeof g_eps + 64], h[IDM_LEASE_HANDLE_MAX];
        crashed c = crash_holder(ops, rest, 4, TTL_MS, scoped ? SCOPE_A : NULL);
        idm_unix_ms rec = 0;
        int64_t granted = 0;
        void *be;
        /* The one server, named twice: the second name is the next
         * endpoint. */
        snprintf(twice, sizeof twice, "%s,%s/idmint/%s", g_eps, g_eps, name);
        be = open_be(ops, twice);
        count_posts(be);
        idm__etcd_set_post(be, lossy_post);
        g_lose_txn = 1;
        IDM_ASSERT_OK(ops->reattach(be, c.worker, c.handle, TTL_MS, "restarted", SCOPE_A, c.mark,
                                    &rec, &granted));
        assert_int_equal(g_lose_txn, 0);
        assert_string_equal(g_paths, "grant txn txn");
        IDM_ASSERT_OK(ops->handle(be, h, sizeof h));
        CHECK(key_lease(name, c.worker) == lease_of(h) && lease_of(h) != lease_of(c.handle),
              "%s: the key's lease %lld, the handle %s", name, LL(key_lease(name, c.worker)), h);
        CHECK(rec >= c.mark && rec == hwm(name, c.worker), "%s: recorded %lld, stored %lld",
              name, LL(rec), LL(hwm(name, c.worker)));
        assert_true(ops->generation(be) > c.generation);
        IDM_ASSERT_OK(ops->renew(be, rec + 10, &granted)); /* guarded on that revision */
        IDM_ASSERT_OK(ops->release(be, rec + 10));
        assert_int_equal(key_lease(name, c.worker), 0);
        ops->close(be);
        free(rest);
    }
    printf("  E12r: a resent reattach whose first answer was lost: resumed\n");
}

/* E4r under a running holder: its worker key written again by hand, on the
 * holder's own lease (as a resume elsewhere would, on a lease of its own):
 * the next renewal is IDM_ELEASE (the renewals are guarded on the key's
 * revision as of the claim, not on its lease alone), the mark untouched. */
static void e4_rewritten_under_holder(void **unused)
{
    const idm__lease_backend *ops = &idm__lease_etcd;
    char *rest = rest_of("rewritten");
    char h[IDM_LEASE_HANDLE_MAX];
    uint32_t worker = UINT32_MAX;
    idm_unix_ms prev = 0, rec = 0;
    int64_t granted = 0;
    void *be = open_be(ops, rest);
    kept k;
    (void)unused;
    IDM_ASSERT_OK(ops->claim(be, 1, TTL_MS, "holder", NULL, leasetest_wall_ms() + TTL_MS, &worker,
                             &prev, &rec, &granted));
    IDM_ASSERT_OK(ops->renew(be, rec + 10, &granted));
    IDM_ASSERT_OK(ops->handle(be, h, sizeof h));
    assert_int_equal(run(ETCDCTL "%s put --lease=%llx /idmint/rewritten/workers/%u by-hand "
                                 "> /dev/null",
                         g_eps, ULL(lease_of(h)), (unsigned)worker),
                     0);
    k = kept_now("rewritten", worker);
    assert_int_equal(k.lease, lease_of(h));
    IDM_ASSERT_RC(ops->renew(be, rec + 20, &granted), IDM_ELEASE);
    kept_same("rewritten", worker, k);
    assert_int_equal(k.mark, rec + 10);
    ops->close(be);
    free(rest);
}

int main(void)
{
    const struct CMUnitTest plain[] = {
        cmocka_unit_test(e12_reattach_after_kill),
        cmocka_unit_test(e3_revoked_then_taken),
        cmocka_unit_test(e4_key_deleted_refused),
        cmocka_unit_test(e18_garbled_or_misapplied_handles),
        cmocka_unit_test(scope_refused_or_recorded),
        cmocka_unit_test(e2_coordinator_down_not_lost),
        cmocka_unit_test(e12_expired_lease_refused),
        cmocka_unit_test(e12r_same_handle_twice),
        cmocka_unit_test(h5r_original_alive_loses),
        cmocka_unit_test(e12r_answer_lost_resent),
        cmocka_unit_test(e4_rewritten_under_holder),
    };
    const struct CMUnitTest tls[] = {
        cmocka_unit_test(e12_reattach_over_tls),
    };
    int failed = cmocka_run_group_tests_name("etcd reattach", plain, setup_plain, teardown_plain);
    failed += cmocka_run_group_tests_name("etcds reattach", tls, setup_tls, teardown_tls);
    return failed;
}
