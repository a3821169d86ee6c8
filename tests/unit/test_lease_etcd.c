/* SPDX-License-Identifier: MIT */
/*
 * Worker-id leases on the etcd backend, against etcd servers this program
 * starts with scripts/etcd-test-server.sh (one member for most tests, three
 * for the leader-loss ones; each group stops its servers in its teardown,
 * and the script's watcher kills them if this program dies), and against a
 * fake HTTP server thread that serves canned answers or forwards to etcd
 * (counting requests, rewriting lease ids, or holding answers back).
 *
 * The etcd rows of the fault catalogue: E1 racing claimants, E2 etcd
 * frozen past the TTL, E3 lease revoked, E4 worker key deleted, E6 answers
 * lost (the proxy holds them back), E8 leader killed, E10 quorum lost, E11
 * etcd restarted, E12 a holder killed with kill -9, E13 clean release, E14
 * every id taken (8 and 1,024), E15 garbage answers, E16 lease ids >= 2^53,
 * E17 a TTL below etcd's minimum, E18 etcd re-created with a wiped data
 * directory, E19 an answer from another cluster; plus a handoff to a holder
 * whose clock is behind, endpoint failover, bad URLs and scopes (a claimant
 * for another layout, epoch or lease field refused, also when racing, and
 * when the scope changes between the read of the taken ids and the claim).
 * Every test checks that no id is minted twice.
 *
 * Also E5 (a partition between one holder and etcd, longer than the TTL,
 * while another instance claims the id: the proxy drops that holder's
 * traffic), E7 (keepalive answers held back, by the proxy, a little and
 * then 0.9 x TTL) and E9 (the member a holder is pinned to stopped with
 * SIGSTOP while the others elect a new leader).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"

#define ETCDCTL "ETCDCTL_API=3 etcdctl --dial-timeout=2s --command-timeout=5s --endpoints="

static char g_script[4096];
static char *g_dir;         /* the one-member server's directory */
static char g_eps[256];     /* its endpoint, host:port */
static char *g_cdir;        /* the three-member cluster's */
static char g_ceps[512];

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

/* The test server script, with args. */
static int srv(char *out, size_t n, const char *args)
{
    return leasetest_script(out, n, "IDM_ETCD_OWNER", g_script, "%s", args);
}

static pid_t member_pid(const char *dir, int n)
{
    char args[4200], out[64];
    snprintf(args, sizeof args, "pid '%s' %d", dir, n);
    if (srv(out, sizeof out, args) != 0)
        return -1;
    return (pid_t)atol(out);
}

static char *url_for(const char *eps, const char *name)
{
    return leasetest_url_for("etcd", eps, name);
}

static char *coord_url(const char *name)
{
    return url_for(g_eps, name);
}

/* For the test bodies every coordinator shares (leasetest.h). */
static const leasetest_coord k_coord = {coord_url, 3000}; /* renewals every second */

static void lease_opts(idm_lease_opts *o, const char *url, uint32_t max)
{
    leasetest_opts(o, url, max, k_coord.ttl_ms);
}

/* The lease etcd has bound <prefix>/workers/<id> to, 0 if none. */
static int64_t key_lease(const char *eps, const char *name, uint32_t id)
{
    char out[2048];
    const char *p;
    leasetest_run_out(out, sizeof out, ETCDCTL "%s get /idmint/%s/workers/%u -w fields", eps, name,
            (unsigned)id);
    p = strstr(out, "\"Lease\" : ");
    return p != NULL ? strtoll(p + 10, NULL, 10) : 0;
}

static bool key_exists(const char *eps, const char *key)
{
    char out[1024];
    leasetest_run_out(out, sizeof out, ETCDCTL "%s get '%s' --keys-only", eps, key);
    return strstr(out, key) != NULL;
}

/* ---------------------------------------------- raw HTTP/1.0 client */

/* POST body to http://ep/path; 0 with the status and a malloc'd body. */
static int http_post(const char *ep, const char *path, const char *body, int timeout_ms,
                     int *status, char **out)
{
    struct sockaddr_in sa;
    char host[64], head[512], *buf = NULL, *p;
    const char *colon = strrchr(ep, ':');
    size_t len = 0, cap = 0;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int fd, rc = -1;
    *out = NULL;
    if (colon == NULL || (size_t)(colon - ep) >= sizeof host)
        return -1;
    memcpy(host, ep, (size_t)(colon - ep));
    host[colon - ep] = '\0';
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -1;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        goto out;
    snprintf(head, sizeof head,
             "POST %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n",
             path, ep, strlen(body));
    if (send(fd, head, strlen(head), MSG_NOSIGNAL) != (ssize_t)strlen(head) ||
        send(fd, body, strlen(body), MSG_NOSIGNAL) != (ssize_t)strlen(body))
        goto out;
    for (;;) {
        ssize_t n;
        if (len + 4097 > cap) {
            char *grown;
            cap = cap != 0 ? cap * 2 : 16384;
            if (cap > (8u << 20) || (grown = realloc(buf, cap)) == NULL)
                goto out;
            buf = grown;
        }
        n = recv(fd, buf + len, 4096, 0);
        if (n < 0)
            goto out;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (buf == NULL)
        goto out;
    buf[len] = '\0';
    p = strstr(buf, "\r\n\r\n");
    if (p == NULL || sscanf(buf, "HTTP/%*s %d", status) != 1)
        goto out;
    *out = strdup(p + 4);
    rc = *out != NULL ? 0 : -1;
out:
    free(buf);
    close(fd);
    return rc;
}

/* --------------------------------------------------- the fake server */

/* K_TXN_VIEW: the claim's first txn (taken ids, scope); K_TXN_CLAIM: the
 * txn that claims an id. */
enum { K_GRANT, K_RANGE, K_TXN_VIEW, K_TXN_CLAIM, K_TXN_MARK, K_KEEPALIVE, K_REVOKE, K_OTHER, K_N };
enum { S_ANSWER, S_HANG, S_CLOSE, S_HUGE };

typedef struct canned {
    bool set;
    int special;
    int status;
    const char *body;
} canned;

typedef struct fake {
    int lfd, port;
    pthread_t th;
    atomic_int stop;
    atomic_int conns;
    pthread_mutex_t mu;
    /* under mu */
    bool proxy;          /* forward to upstream */
    char upstream[sizeof g_eps];
    bool hold;           /* proxy: forward, then hold the answer back */
    char lease_id[32];   /* canned: the lease handed out; proxy: rewrite grants to it */
    canned over[K_N];    /* canned: answers replacing the normal ones */
    int count[K_N];
    int total;
    int bad_id;          /* canned: requests without the lease id */
    bool drop;           /* proxy: forward nothing, answer nothing (a partition) */
    int64_t ka_delay_ms; /* proxy: hold keepalive answers back this long */
    int64_t ka_fwd_ns;   /* proxy: when the last forwarded keepalive (or grant,
                            which starts the lease's TTL) came in */
    int64_t ka_ok_ns;    /* proxy: when the last answered keepalive or grant came in */
    int64_t ka_at[256];  /* proxy: when each keepalive came in */
    int nka;
    char first_mark_txn[4096]; /* proxy: the body of the first mark write */
    char claim_hook[1024];     /* proxy: a kv/put body sent to etcd before the next claim
                                  txn is forwarded (then cleared) */
} fake;

#define H "{\"cluster_id\":\"1\",\"member_id\":\"2\",\"revision\":\"5\",\"raft_term\":\"1\"}"
/* Canned answers claim worker id 0 under /idmint/fake: its mark key, and the
 * largest stored mark (every raise reads back at least what it wrote). */
#define HWM0_B64 "L2lkbWludC9mYWtlL2h3bS8w"         /* /idmint/fake/hwm/0 */
#define MARK_MAX_B64 "OTk5OTk5OTk5OTk5OTk5OQ=="     /* 9999999999999999 */

static void send_all(int c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void respond(int c, int status, const char *body)
{
    char head[256];
    snprintf(head, sizeof head,
             "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             status, strlen(body));
    send_all(c, head, strlen(head));
    send_all(c, body, strlen(body));
}

/* Answer nothing until the client gives up (or the server stops). */
static void hang(fake *f, int c)
{
    char sink[512];
    while (!atomic_load(&f->stop)) {
        struct pollfd p = {c, POLLIN, 0};
        if (poll(&p, 1, 50) > 0 && recv(c, sink, sizeof sink, 0) <= 0)
            return;
    }
}

/* Keep the answer back until leasetest_mono_ns() reaches until: false if the client
 * closed the connection meanwhile (or the server stops). */
static bool hold_back(fake *f, int c, int64_t until)
{
    char sink[512];
    while (!atomic_load(&f->stop) && leasetest_mono_ns() < until) {
        struct pollfd p = {c, POLLIN, 0};
        if (poll(&p, 1, 5) > 0 && recv(c, sink, sizeof sink, 0) <= 0)
            return false;
    }
    return !atomic_load(&f->stop);
}

static void huge(int c)
{
    static char chunk[65536];
    const char *head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       "Content-Length: 4194304\r\nConnection: close\r\n\r\n{\"result\":";
    memset(chunk, ' ', sizeof chunk);
    send_all(c, head, strlen(head));
    for (int i = 0; i < 64; i++) {
        ssize_t w = send(c, chunk, sizeof chunk, MSG_NOSIGNAL);
        if (w <= 0)
            return;
    }
}

static int read_request(fake *f, int c, char *buf, size_t cap, char *path, size_t plen,
                        char **body)
{
    size_t len = 0;
    int64_t until = leasetest_mono_ms() + 5000;
    for (;;) {
        char *hend;
        buf[len] = '\0';
        hend = strstr(buf, "\r\n\r\n");
        if (hend != NULL) {
            size_t hl = (size_t)(hend + 4 - buf), blen = 0;
            const char *cl = strcasestr(buf, "\r\ncontent-length:");
            if (cl != NULL && cl < hend)
                blen = strtoul(cl + 17, NULL, 10);
            if (hl + blen < cap && len >= hl + blen) {
                const char *sp = strchr(buf, ' '), *sp2;
                buf[hl + blen] = '\0';
                sp2 = sp != NULL ? strchr(sp + 1, ' ') : NULL;
                if (sp2 == NULL || (size_t)(sp2 - sp - 1) >= plen)
                    return -1;
                memcpy(path, sp + 1, (size_t)(sp2 - sp - 1));
                path[sp2 - sp - 1] = '\0';
                *body = buf + hl;
                return 0;
            }
        }
        if (len + 1 >= cap || leasetest_mono_ms() > until || atomic_load(&f->stop))
            return -1;
        {
            struct pollfd p = {c, POLLIN, 0};
            ssize_t n;
            if (poll(&p, 1, 50) <= 0)
                continue;
            n = recv(c, buf + len, cap - 1 - len, 0);
            if (n <= 0)
                return -1;
            len += (size_t)n;
        }
    }
}

static int kind_of(const char *path, const char *body)
{
    if (strcmp(path, "/v3/lease/grant") == 0)
        return K_GRANT;
    if (strcmp(path, "/v3/kv/range") == 0)
        return K_RANGE;
    if (strcmp(path, "/v3/kv/txn") == 0)
        return strstr(body, "\"range_end\"") != NULL ? K_TXN_VIEW
               : strstr(body, "\"CREATE\"") != NULL  ? K_TXN_CLAIM
                                                     : K_TXN_MARK;
    if (strcmp(path, "/v3/lease/keepalive") == 0)
        return K_KEEPALIVE;
    if (strcmp(path, "/v3/lease/revoke") == 0)
        return K_REVOKE;
    return K_OTHER;
}

static void serve_canned(fake *f, int c, int k, const char *body)
{
    char out[1024], want[64];
    canned cn;
    pthread_mutex_lock(&f->mu);
    cn = f->over[k];
    snprintf(want, sizeof want, "\"%s\":\"%s\"",
             k == K_TXN_CLAIM || k == K_TXN_MARK ? "lease" : "ID", f->lease_id);
    if (!cn.set && k != K_GRANT && k != K_RANGE && k != K_TXN_VIEW && k != K_OTHER &&
        strstr(body, want) == NULL) {
        f->bad_id++;
        cn = (canned){true, S_ANSWER, 500, "{\"error\":\"bad id\",\"code\":3,\"message\":\"bad id\"}"};
    }
    switch (k) {
    case K_GRANT:
        snprintf(out, sizeof out, "{\"header\":" H ",\"ID\":\"%s\",\"TTL\":\"2\"}", f->lease_id);
        break;
    case K_TXN_VIEW:
        /* no id taken; a scope (if the claimant has one) recorded now */
        if (strstr(body, "\"CREATE\"") != NULL)
            snprintf(out, sizeof out,
                     "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_put\":{"
                     "\"header\":{\"revision\":\"5\"}}},{\"response_range\":{\"header\":{"
                     "\"revision\":\"5\"}}}]}");
        else
            snprintf(out, sizeof out,
                     "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_range\":{"
                     "\"header\":{\"revision\":\"5\"}}}]}");
        break;
    case K_TXN_CLAIM:
        /* no previous mark; put; raise; the mark read back: the largest */
        snprintf(out, sizeof out,
                 "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_range\":{"
                 "\"header\":{\"revision\":\"5\"}}},{\"response_put\":{\"header\":{"
                 "\"revision\":\"5\"}}},{\"response_txn\":{}},{\"response_range\":{"
                 "\"kvs\":[{\"key\":\"" HWM0_B64 "\",\"value\":\"" MARK_MAX_B64 "\"}]}}]}");
        break;
    case K_TXN_MARK:
        snprintf(out, sizeof out,
                 "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_txn\":{}},"
                 "{\"response_range\":{\"kvs\":[{\"key\":\"" HWM0_B64 "\",\"value\":\""
                 MARK_MAX_B64 "\"}]}}]}");
        break;
    case K_KEEPALIVE:
        snprintf(out, sizeof out, "{\"result\":{\"header\":" H ",\"ID\":\"%s\",\"TTL\":\"2\"}}\n",
                 f->lease_id);
        break;
    case K_RANGE:
    case K_REVOKE:
        snprintf(out, sizeof out, "{\"header\":" H "}");
        break;
    default:
        snprintf(out, sizeof out, "{\"error\":\"no\",\"code\":12,\"message\":\"no\"}");
        break;
    }
    pthread_mutex_unlock(&f->mu);
    if (!cn.set) {
        respond(c, k == K_OTHER ? 501 : 200, out);
        return;
    }
    switch (cn.special) {
    case S_HANG:
        hang(f, c);
        break;
    case S_CLOSE:
        break;
    case S_HUGE:
        huge(c);
        break;
    default:
        respond(c, cn.status, cn.body);
        break;
    }
}

/* Forward to etcd; answer with its answer, unless answers are held back
 * (then the request took effect and the client never learns it). */
static void serve_proxy(fake *f, int c, int k, const char *path, const char *body)
{
    char up[sizeof g_eps], rewritten[8192], hook[1024], *answer = NULL;
    const char *send_body = body;
    bool hold;
    int status = 0;
    int64_t recv_ns = 0, delay = 0;
    pthread_mutex_lock(&f->mu);
    snprintf(up, sizeof up, "%s", f->upstream);
    if (k == K_GRANT && f->lease_id[0] != '\0') {
        const char *p = strstr(body, "\"ID\":\"0\"");
        if (p != NULL && strlen(body) + 40 < sizeof rewritten) {
            snprintf(rewritten, sizeof rewritten, "%.*s\"ID\":\"%s\"%s", (int)(p - body), body,
                     f->lease_id, p + 8);
            send_body = rewritten;
        }
    }
    if (f->drop) {
        pthread_mutex_unlock(&f->mu);
        hang(f, c); /* nothing reaches etcd */
        return;
    }
    if (k == K_KEEPALIVE || k == K_GRANT) {
        recv_ns = leasetest_mono_ns();
        f->ka_fwd_ns = recv_ns;
    }
    if (k == K_TXN_MARK && f->first_mark_txn[0] == '\0')
        snprintf(f->first_mark_txn, sizeof f->first_mark_txn, "%s", body);
    hook[0] = '\0';
    if (k == K_TXN_CLAIM && f->claim_hook[0] != '\0') {
        snprintf(hook, sizeof hook, "%s", f->claim_hook);
        f->claim_hook[0] = '\0';
    }
    if (k == K_KEEPALIVE) {
        if (f->nka < (int)(sizeof f->ka_at / sizeof f->ka_at[0]))
            f->ka_at[f->nka++] = recv_ns;
        delay = f->ka_delay_ms;
    }
    pthread_mutex_unlock(&f->mu);
    if (hook[0] != '\0') {
        int st = 0;
        char *a = NULL;
        if (http_post(up, "/v3/kv/put", hook, 5000, &st, &a) != 0 || st != 200)
            fprintf(stderr, "fake: the claim hook failed (%d)\n", st);
        free(a);
    }
    if (http_post(up, path, send_body, 5000, &status, &answer) != 0)
        return; /* the client sees the connection closed */
    pthread_mutex_lock(&f->mu);
    hold = f->hold;
    pthread_mutex_unlock(&f->mu);
    if (hold) {
        hang(f, c);
    } else if (delay > 0 && !hold_back(f, c, recv_ns + delay * 1000000)) {
        /* the client gave up first */
    } else {
        respond(c, status, answer);
        if ((k == K_KEEPALIVE || k == K_GRANT) && status == 200) {
            pthread_mutex_lock(&f->mu);
            f->ka_ok_ns = recv_ns;
            pthread_mutex_unlock(&f->mu);
        }
    }
    free(answer);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    static _Thread_local char buf[65536];
    while (!atomic_load(&f->stop)) {
        struct pollfd p = {f->lfd, POLLIN, 0};
        char path[256], *body;
        int c, k;
        bool proxy;
        if (poll(&p, 1, 50) <= 0)
            continue;
        c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        atomic_fetch_add(&f->conns, 1);
        if (read_request(f, c, buf, sizeof buf, path, sizeof path, &body) != 0) {
            close(c);
            continue;
        }
        k = kind_of(path, body);
        pthread_mutex_lock(&f->mu);
        f->count[k]++;
        f->total++;
        proxy = f->proxy;
        pthread_mutex_unlock(&f->mu);
        if (proxy)
            serve_proxy(f, c, k, path, body);
        else
            serve_canned(f, c, k, body);
        close(c);
    }
    return NULL;
}

static void fake_start(fake *f, const char *upstream, const char *lease_id)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    f->proxy = upstream != NULL;
    snprintf(f->upstream, sizeof f->upstream, "%s", upstream != NULL ? upstream : "");
    snprintf(f->lease_id, sizeof f->lease_id, "%s", lease_id != NULL ? lease_id : "");
    f->lfd = leasetest_listen(&f->port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(fake *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->th, NULL);
    close(f->lfd);
    pthread_mutex_destroy(&f->mu);
}

static int fake_total(fake *f)
{
    int n;
    pthread_mutex_lock(&f->mu);
    n = f->total;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void fake_set(fake *f, int k, int special, int status, const char *body)
{
    pthread_mutex_lock(&f->mu);
    f->over[k] = (canned){true, special, status, body};
    pthread_mutex_unlock(&f->mu);
}

static void fake_clear(fake *f)
{
    pthread_mutex_lock(&f->mu);
    memset(f->over, 0, sizeof f->over);
    f->bad_id = 0;
    pthread_mutex_unlock(&f->mu);
}

static void fake_hold(fake *f, bool on)
{
    pthread_mutex_lock(&f->mu);
    f->hold = on;
    pthread_mutex_unlock(&f->mu);
}

static void fake_drop(fake *f, bool on)
{
    pthread_mutex_lock(&f->mu);
    f->drop = on;
    pthread_mutex_unlock(&f->mu);
}

static void fake_delay(fake *f, int64_t ms)
{
    pthread_mutex_lock(&f->mu);
    f->ka_delay_ms = ms;
    pthread_mutex_unlock(&f->mu);
}

static char *fake_url(const fake *f, const char *name)
{
    char eps[64];
    snprintf(eps, sizeof eps, "127.0.0.1:%d", f->port);
    return url_for(eps, name);
}

/* ------------------------------------------------------------- servers */

static int start_server(char **dir, char *eps, size_t n, int members)
{
    char args[4400];
    *dir = idm_test_tmpdir();
    snprintf(args, sizeof args, "start '%s' %d", *dir, members);
    if (srv(eps, n, args) != 0 || eps[0] == '\0' || strchr(eps, ' ') != NULL) {
        fprintf(stderr, "test_lease_etcd: cannot start etcd in %s (is etcd-server installed?)\n",
                *dir);
        snprintf(args, sizeof args, "stop '%s'", *dir);
        srv(NULL, 0, args);
        idm_test_rmtree(*dir);
        free(*dir);
        *dir = NULL;
        return -1;
    }
    return 0;
}

static void stop_server(char **dir)
{
    char args[4400];
    leasetest_thaw_any();
    if (*dir == NULL)
        return;
    snprintf(args, sizeof args, "stop '%s'", *dir);
    srv(NULL, 0, args);
    idm_test_rmtree(*dir);
    free(*dir);
    *dir = NULL;
}

static void stop_all(void)
{
    stop_server(&g_dir);
    stop_server(&g_cdir);
}

static int setup_one(void **unused)
{
    (void)unused;
    if (leasetest_script_path(g_script, sizeof g_script, "test_lease_etcd",
                              "etcd-test-server.sh") != 0)
        return -1;
    return start_server(&g_dir, g_eps, sizeof g_eps, 1);
}

static int teardown_one(void **unused)
{
    (void)unused;
    stop_server(&g_dir);
    return 0;
}

static int setup_three(void **unused)
{
    (void)unused;
    if (leasetest_script_path(g_script, sizeof g_script, "test_lease_etcd",
                              "etcd-test-server.sh") != 0)
        return -1;
    return start_server(&g_cdir, g_ceps, sizeof g_ceps, 3);
}

static int teardown_three(void **unused)
{
    (void)unused;
    stop_server(&g_cdir);
    return 0;
}

/* --------------------------------------------------------------- tests */

/* Claim, renew, list, release, and the mark handed to the next holder. */
static void claim_renew_release(void **unused)
{
    char *url = url_for(g_eps, "basics");
    idm_lease_opts o;
    idm_lease *a, *b, *c;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_lease_entry *e;
    size_t n;
    idm_test_idvec iv = {0};
    uint64_t id, last;
    int64_t la, lb;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 8);
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(a), 0);
    assert_int_equal(idm_lease_worker(b), 1);
    assert_int_equal(idm_lease_mark(a), 0);
    la = key_lease(g_eps, "basics", 0);
    lb = key_lease(g_eps, "basics", 1);
    CHECK(la != 0 && lb != 0 && la != lb, "leases %lld %lld", LL(la), LL(lb));

    /* Refused before attach, works after; the keeper renews. */
    g = leasetest_gen(layout, a, NULL);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    IDM_ASSERT_OK(idm_lease_attach(a, g));
    leasetest_mint_n(g, &iv, 10000);
    leasetest_wait_status(a, &st, false, 1); /* the claim's, then the keeper's */
    CHECK(st.renewals >= 2, "renewals %llu", ULL(st.renewals));
    assert_int_equal(st.lost, 0);
    assert_int_equal(st.last_error, 0);
    leasetest_mint_n(g, &iv, 1000);

    IDM_ASSERT_OK(idm_lease_list(url, 8, &e, &n));
    assert_int_equal(n, 2);
    assert_int_equal(e[0].worker, 0);
    assert_int_equal(e[0].held, 1);
    assert_string_equal(e[0].holder, "test");
    CHECK(e[0].mark_ms >= leasetest_time_of(layout, iv.v[iv.n - 1]), "mark %lld", LL(e[0].mark_ms));
    assert_int_equal(e[1].worker, 1);
    assert_int_equal(e[1].held, 1);
    free(e);

    last = iv.v[iv.n - 1];
    IDM_ASSERT_OK(idm_lease_close(a));
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    idm_snowflake_close(g);

    /* The next holder of id 0 starts above the last id minted. */
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    assert_int_equal(idm_lease_worker(c), 0);
    assert_int_equal(idm_lease_mark(c), leasetest_time_of(layout, last));
    leasetest_successor(layout, c, false, &iv, 1000, NULL, NULL);
    IDM_ASSERT_OK(idm_lease_close(b));

    IDM_ASSERT_OK(idm_lease_list(url, 8, &e, &n));
    assert_int_equal(n, 2);
    assert_int_equal(e[0].held, 0);
    assert_int_equal(e[1].held, 0);
    assert_true(e[0].mark_ms >= leasetest_time_of(layout, iv.v[iv.n - 1]));
    free(e);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E1: twelve claimants at once for eight ids: eight distinct ids, four
 * "no free worker id". */
static void e1_racing_claimants(void **unused)
{
    (void)unused;
    leasetest_racing_claimants(&k_coord, "e1", 12, 8, 2000);
}

/* Attach a generator to a fresh claim and mint one id: no request to etcd
 * (the claim recorded the first mark). */
static idm_snowflake *first_id(idm_layout *layout, idm_lease *l)
{
    idm_snowflake *g = leasetest_gen(layout, l, NULL);
    uint64_t id;
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    return g;
}

static int fake_count(fake *f, int k)
{
    int n;
    pthread_mutex_lock(&f->mu);
    n = f->count[k];
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* E14 with 8 ids, through a counting proxy, with a scope (as the CLI and
 * idmintd claim): every claim costs 3 requests (the txn that reads the
 * taken ids and records or compares the scope, grant, the claiming txn)
 * from start to the first id, whatever the occupancy; the ninth gets "no
 * free worker id" after 1 (that first txn), as does a claimant for another
 * scope: neither grants a lease. */
static void e14_no_free_worker_id(void **unused)
{
    fake px;
    char *url, scope[IDM_LEASE_SCOPE_MAX], other[IDM_LEASE_SCOPE_MAX];
    idm_lease_opts o;
    idm_lease *l[9] = {NULL};
    idm_snowflake *g[8];
    idm_layout *layout;
    int before, grants;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    idm_test_scope_of("twitter", NULL, 0, "worker", scope);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", other);
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "e14");
    lease_opts(&o, url, 8);
    o.scope = scope;
    for (int i = 0; i < 8; i++) {
        before = fake_total(&px);
        IDM_ASSERT_OK(idm_lease_open(&l[i], &o));
        assert_int_equal(idm_lease_worker(l[i]), (uint32_t)i);
        g[i] = first_id(layout, l[i]);
        CHECK(fake_total(&px) - before == 3, "claim %d took %d requests to the first id", i,
              fake_total(&px) - before);
    }
    before = fake_total(&px);
    grants = fake_count(&px, K_GRANT);
    IDM_ASSERT_RC(idm_lease_open(&l[8], &o), IDM_EBUSY);
    CHECK(strstr(idm_error_detail(), "no free worker id") != NULL, "detail: %s",
          idm_error_detail());
    assert_null(l[8]);
    printf("  E14: claims with 0..7 of 8 ids held: 3 requests each; refused claim: %d\n",
           fake_total(&px) - before);
    CHECK(fake_total(&px) - before == 1, "refused claim took %d requests",
          fake_total(&px) - before);
    before = fake_total(&px);
    o.scope = other;
    IDM_ASSERT_RC(idm_lease_open(&l[8], &o), IDM_EINVAL);
    CHECK(strstr(idm_error_detail(), "hands out ids for") != NULL, "detail: %s",
          idm_error_detail());
    CHECK(fake_total(&px) - before == 1, "claim for another scope took %d requests",
          fake_total(&px) - before);
    assert_int_equal(fake_count(&px, K_GRANT), grants);
    for (int i = 0; i < 8; i++) {
        IDM_ASSERT_OK(idm_lease_close(l[i]));
        idm_snowflake_close(g[i]);
    }
    fake_stop(&px);
    free(url);
    idm_layout_free(layout);
}

/* E14 with 1,024 ids taken by etcdctl under a long lease: the 1,025th
 * claimant (with a scope) is refused after 1 request; with one id freed, it
 * gets that id and mints its first id after 3 requests. */
static void e14_all_1024_taken(void **unused)
{
    char out[512], *dir, *url, hex[32], scope[IDM_LEASE_SCOPE_MAX];
    fake px;
    idm_lease_opts o;
    idm_lease *l = NULL;
    idm_snowflake *g;
    idm_layout *layout;
    int before;
    int64_t t0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_parse(&layout, "time:40@1ms,datacenter:1,worker:10,seq:12",
                                   INT64_C(1288834974657)));
    assert_int_equal(leasetest_run_out(out, sizeof out, ETCDCTL "%s lease grant 600", g_eps), 0);
    assert_int_equal(sscanf(out, "lease %31s granted", hex), 1);
    dir = idm_test_tmpdir();
    for (int chunk = 0; chunk < 8; chunk++) {
        char *path;
        char name[32];
        FILE *f;
        snprintf(name, sizeof name, "txn%d", chunk);
        path = idm_test_path(dir, name);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("\n", f);
        for (int i = chunk * 128; i < chunk * 128 + 128; i++)
            fprintf(f, "put --lease=%s /idmint/e14big/workers/%d zombie\n", hex, i);
        fputs("\n\n", f);
        fclose(f);
        assert_int_equal(run(ETCDCTL "%s txn < '%s' > /dev/null", g_eps, path), 0);
        free(path);
    }
    idm_test_rmtree(dir);
    free(dir);

    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "e14big");
    lease_opts(&o, url, 1024);
    idm_test_scope_of(NULL, "time:40@1ms,datacenter:1,worker:10,seq:12", INT64_C(1288834974657),
                      "worker", scope);
    o.scope = scope;
    before = fake_total(&px);
    t0 = leasetest_mono_ms();
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EBUSY);
    CHECK(strstr(idm_error_detail(), "no free worker id") != NULL, "detail: %s",
          idm_error_detail());
    printf("  E14: 1,025th claimant with 1,024 held: refused after %d requests, %lld ms\n",
           fake_total(&px) - before, LL(leasetest_mono_ms() - t0));
    CHECK(fake_total(&px) - before == 1, "%d requests", fake_total(&px) - before);

    assert_int_equal(run(ETCDCTL "%s del /idmint/e14big/workers/777 > /dev/null", g_eps), 0);
    before = fake_total(&px);
    t0 = leasetest_mono_ms();
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(idm_lease_worker(l), 777);
    g = first_id(layout, l);
    printf("  E14: claim of the one free id of 1,024, to the first id: %d requests, %lld ms\n",
           fake_total(&px) - before, LL(leasetest_mono_ms() - t0));
    CHECK(fake_total(&px) - before == 3, "%d requests", fake_total(&px) - before);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_layout_free(layout);
    fake_stop(&px);
    assert_int_equal(run(ETCDCTL "%s lease revoke %s > /dev/null", g_eps, hex), 0);
    free(url);
}

/* The keys under /idmint/<name>/ with their values, revisions and leases
 * (not the header: other tests' leases expiring move the store's revision),
 * for "nothing changed". */
static void keys_under(const char *name, char *out, size_t n)
{
    assert_int_equal(leasetest_run_out(out, n,
                             ETCDCTL "%s get --prefix /idmint/%s/ -w fields | grep -v -e "
                                     "'^\"Revision\"' -e '^\"RaftTerm\"'",
                             g_eps, name),
                     0);
}

/* Issue item "duplicate ids: two idmintd on one data directory with
 * different lease fields", on etcd: <prefix>/scope records the first
 * claimant's scope (layout, epoch, field); a claimant with another field,
 * epoch or layout is refused with IDM_EINVAL naming both, after 1 request
 * (the txn that reads the taken ids and the scope), and nothing changes: no
 * lease granted, no key written. The same layout spelled two ways is one
 * scope; a claimant without a scope is not checked. */
static void scope_refuses_another_field_epoch_or_layout(void **unused)
{
    fake px;
    char *url, worker[IDM_LEASE_SCOPE_MAX], spelled[IDM_LEASE_SCOPE_MAX];
    char bad[3][IDM_LEASE_SCOPE_MAX], got[IDM_LEASE_SCOPE_MAX], where[96];
    char before[8192], after[8192];
    idm_lease_opts o;
    idm_lease *a, *b = NULL, *c, *d;
    int total, grants;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", worker);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", INT64_C(1288834974657),
                      "worker", spelled);
    assert_string_equal(spelled, worker);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", bad[0]);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", INT64_C(1288834974658),
                      "worker", bad[1]);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:4,worker:6,seq:12", INT64_C(1288834974657),
                      "worker", bad[2]);
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "scope");
    snprintf(where, sizeof where, "etcd://127.0.0.1:%d/idmint/scope", px.port);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, got, sizeof got));
    assert_string_equal(got, "");

    lease_opts(&o, url, 8);
    o.scope = worker;
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    assert_int_equal(idm_lease_worker(a), 0);
    assert_int_equal(leasetest_run_out(got, sizeof got,
                                       ETCDCTL "%s get /idmint/scope/scope --print-value-only",
                                       g_eps),
                     0);
    assert_string_equal(got, worker);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, got, sizeof got));
    assert_string_equal(got, worker);

    keys_under("scope", before, sizeof before);
    for (int i = 0; i < 3; i++) {
        total = fake_total(&px);
        grants = fake_count(&px, K_GRANT);
        o.scope = bad[i];
        IDM_ASSERT_RC(idm_lease_open(&b, &o), IDM_EINVAL);
        assert_null(b);
        CHECK(strstr(idm_error_detail(), where) != NULL &&
                  strstr(idm_error_detail(), "hands out ids for") != NULL &&
                  strstr(idm_error_detail(), worker) != NULL &&
                  strstr(idm_error_detail(), bad[i]) != NULL,
              "detail: %s", idm_error_detail());
        CHECK(fake_total(&px) - total == 1, "refused claim %d took %d requests", i,
              fake_total(&px) - total);
        assert_int_equal(fake_count(&px, K_GRANT), grants);
        keys_under("scope", after, sizeof after);
        CHECK(strcmp(before, after) == 0, "refused claim %d changed the keys:\n%s\nnow:\n%s", i,
              before, after);
    }

    o.scope = spelled;
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    assert_int_equal(idm_lease_worker(c), 1);
    o.scope = NULL;
    IDM_ASSERT_OK(idm_lease_open(&d, &o));
    assert_int_equal(idm_lease_worker(d), 2);
    IDM_ASSERT_OK(idm_lease_close(a));
    IDM_ASSERT_OK(idm_lease_close(c));
    IDM_ASSERT_OK(idm_lease_close(d));
    /* Every id free: still refused, the scope outlives its holders. */
    o.scope = bad[0];
    IDM_ASSERT_RC(idm_lease_open(&b, &o), IDM_EINVAL);
    IDM_ASSERT_OK(idm_lease_scope_recorded(url, got, sizeof got));
    assert_string_equal(got, worker);
    fake_stop(&px);
    free(url);
}

typedef struct scoped_claimant {
    pthread_barrier_t *bar;
    const char *url;
    const char *scope;
    idm_lease *l;
    int rc;
    char detail[256];
} scoped_claimant;

static void *scoped_claim_thread(void *arg)
{
    scoped_claimant *c = arg;
    idm_lease_opts o;
    lease_opts(&o, c->url, 8);
    o.scope = c->scope;
    pthread_barrier_wait(c->bar);
    c->rc = idm_lease_open(&c->l, &o);
    snprintf(c->detail, sizeof c->detail, "%s", c->rc != 0 ? idm_error_detail() : "");
    return NULL;
}

/* Issue item (duplicate ids, above) with racing first claimants (as E1):
 * eight claimants with four scopes (two each) at once on a prefix without
 * a scope, five times over. Exactly one scope is recorded, its two
 * claimants hold ids, the six others are refused and hold none. */
static void scope_racing_first_claimants(void **unused)
{
    enum { N = 8, ROUNDS = 5 };
    char scopes[4][IDM_LEASE_SCOPE_MAX];
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", scopes[0]);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", scopes[1]);
    idm_test_scope_of(NULL, "time:41@1ms,datacenter:5,worker:5,seq:12", 1, "worker", scopes[2]);
    idm_test_scope_of("discord", NULL, 0, "worker", scopes[3]);
    for (int round = 0; round < ROUNDS; round++) {
        char name[32], *url, got[IDM_LEASE_SCOPE_MAX];
        pthread_barrier_t bar;
        pthread_t th[N];
        scoped_claimant c[N];
        idm_lease_entry *e;
        size_t n, held = 0;
        int won_scope = -1, won = 0;
        snprintf(name, sizeof name, "race%d", round);
        url = url_for(g_eps, name);
        pthread_barrier_init(&bar, NULL, N);
        for (int i = 0; i < N; i++) {
            c[i] = (scoped_claimant){&bar, url, scopes[i % 4], NULL, 0, ""};
            assert_int_equal(pthread_create(&th[i], NULL, scoped_claim_thread, &c[i]), 0);
        }
        for (int i = 0; i < N; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        for (int i = 0; i < N; i++) {
            if (c[i].rc == 0) {
                CHECK(won_scope < 0 || won_scope == i % 4,
                      "round %d: claimants of scopes %d and %d both hold ids", round, won_scope,
                      i % 4);
                won_scope = i % 4;
                won++;
            } else {
                CHECK(c[i].rc == IDM_EINVAL && strstr(c[i].detail, "hands out ids for") != NULL,
                      "round %d: claimant %d: %s: %s", round, i, idm_err_name(c[i].rc),
                      c[i].detail);
            }
        }
        assert_int_equal(won, 2);
        IDM_ASSERT_OK(idm_lease_scope_recorded(url, got, sizeof got));
        assert_string_equal(got, scopes[won_scope]);
        IDM_ASSERT_OK(idm_lease_list(url, 8, &e, &n));
        for (size_t k = 0; k < n; k++)
            held += e[k].held != 0;
        free(e);
        assert_int_equal(held, 2);
        for (int i = 0; i < N; i++)
            if (c[i].rc == 0)
                IDM_ASSERT_OK(idm_lease_close(c[i].l));
        free(url);
    }
}

/* Standard base64 of s, for a request the test sends itself. */
static void b64(const char *s, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s), o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)s[i] << 16 |
                     (i + 1 < n ? (uint32_t)(unsigned char)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? (unsigned char)s[i + 2] : 0);
        out[o++] = a[v >> 18];
        out[o++] = a[(v >> 12) & 63];
        out[o++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? a[v & 63] : '=';
    }
    out[o] = '\0';
}

/* Issue item (duplicate ids, above): the scope is compared again in the
 * very txn that claims the id, not only when the taken ids are read. The
 * proxy changes <prefix>/scope (as an operator could, by hand) after the
 * claimant recorded its own and just before its claiming txn reaches etcd:
 * the claim is refused naming the scope now recorded, no worker key is
 * created and the lease granted for it is revoked. */
static void scope_changed_during_claim_refused(void **unused)
{
    fake px;
    char *url, ours[IDM_LEASE_SCOPE_MAX], theirs[IDM_LEASE_SCOPE_MAX];
    char k64[64], v64[4 * IDM_LEASE_SCOPE_MAX / 3 + 8];
    idm_lease_opts o;
    idm_lease *l = NULL;
    (void)unused;
    idm_test_scope_of("twitter", NULL, 0, "worker", ours);
    idm_test_scope_of("twitter", NULL, 0, "datacenter", theirs);
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "hook");
    b64("/idmint/hook/scope", k64);
    b64(theirs, v64);
    pthread_mutex_lock(&px.mu);
    snprintf(px.claim_hook, sizeof px.claim_hook, "{\"key\":\"%s\",\"value\":\"%s\"}", k64, v64);
    pthread_mutex_unlock(&px.mu);
    lease_opts(&o, url, 4);
    o.scope = ours;
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
    assert_null(l);
    CHECK(strstr(idm_error_detail(), theirs) != NULL && strstr(idm_error_detail(), ours) != NULL,
          "detail: %s", idm_error_detail());
    assert_int_equal(fake_count(&px, K_TXN_CLAIM), 1);
    assert_int_equal(fake_count(&px, K_REVOKE), 1);
    for (uint32_t id = 0; id < 4; id++)
        assert_int_equal(key_lease(g_eps, "hook", id), 0);
    assert_false(key_exists(g_eps, "/idmint/hook/workers/0"));
    fake_stop(&px);
    free(url);
}

/* E3 (revoke) and E4 (delete): the next renewal finds the claim lost and
 * minting stops at once; a new claim of the same id starts above every id
 * the old holder minted. */
static void lost_claim(const char *name, bool revoke)
{
    char *url = url_for(g_eps, name);
    idm_lease_opts o;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t lease, t0;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 1000);
    lease = key_lease(g_eps, name, idm_lease_worker(l));
    assert_true(lease != 0);
    t0 = leasetest_mono_ms();
    if (revoke)
        assert_int_equal(
            run(ETCDCTL "%s lease revoke %llx > /dev/null", g_eps, (unsigned long long)lease), 0);
    else
        assert_int_equal(run(ETCDCTL "%s del /idmint/%s/workers/%u > /dev/null", g_eps, name,
                             (unsigned)idm_lease_worker(l)),
                         0);
    /* Minting goes on until the keeper hears of it: at most TTL/3. */
    for (int i = 0; i < 100000 && idm_snowflake_next(g, &id) == 0; i++) {
        idm_test_idvec_push(&iv, id);
        if (i % 64 == 0)
            leasetest_sleep_ms(1);
    }
    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost, "%s: the claim was not found lost", name);
    assert_int_equal(st.last_error, IDM_ELEASE);
    printf("  %s: lost after %lld ms\n", revoke ? "E3" : "E4", LL(leasetest_mono_ms() - t0));
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);

    IDM_ASSERT_OK(idm_lease_open(&l2, &o));
    assert_int_equal(idm_lease_worker(l2), idm_lease_worker(l));
    CHECK(idm_lease_mark(l2) >= leasetest_time_of(layout, iv.v[iv.n - 1]), "mark %lld below %lld",
          LL(idm_lease_mark(l2)), LL(leasetest_time_of(layout, iv.v[iv.n - 1])));
    leasetest_successor(layout, l2, true, &iv, 1000, l, g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

static void e3_lease_revoked(void **unused)
{
    (void)unused;
    lost_claim("e3", true);
}

static void e4_key_deleted(void **unused)
{
    (void)unused;
    lost_claim("e4", false);
}

/* E12: a holder killed with kill -9. Its id stays held until its lease
 * runs out (a claim meanwhile gets another id); then it is free, with the
 * dead holder's last recorded mark, above every id it minted. */
static bool e12_held(uint32_t id)
{
    char key[64];
    snprintf(key, sizeof key, "/idmint/e12/workers/%u", (unsigned)id);
    return key_exists(g_eps, key);
}

static void e12_holder_killed(void **unused)
{
    char *url = url_for(g_eps, "e12");
    idm_lease_opts o;
    (void)unused;
    lease_opts(&o, url, 4);
    o.ttl_ms = 2000;
    leasetest_killed_holder(&o, "E12", e12_held);
    free(url);
}

/* E13: a clean release frees the id at once, and the next holder gets the
 * exact last mark. */
static void e13_release_frees_at_once(void **unused)
{
    char *url = url_for(g_eps, "e13");
    char key[64];
    idm_lease_opts o;
    idm_lease *a, *b;
    idm_layout *layout;
    idm_snowflake *g;
    idm_test_idvec iv = {0};
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    o.ttl_ms = 30000; /* a slot freed only by expiry would take 30 s */
    g = leasetest_claim(&a, &o, layout);
    leasetest_mint_n(g, &iv, 5000);
    IDM_ASSERT_OK(idm_lease_close(a));
    idm_snowflake_close(g);
    snprintf(key, sizeof key, "/idmint/e13/workers/0");
    assert_false(key_exists(g_eps, key));
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(b), 0);
    assert_int_equal(idm_lease_mark(b), leasetest_time_of(layout, iv.v[iv.n - 1]));
    leasetest_successor(layout, b, false, &iv, 1000, NULL, NULL);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E17: a TTL below etcd's minimum is raised, and the granted TTL is the
 * one used for the deadline and the cadence. */
static void e17_granted_ttl_used(void **unused)
{
    char *url = url_for(g_eps, "e17"), out[512];
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    int64_t t_open, lease;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    o.ttl_ms = 1000; /* etcd's minimum with default timing is 2 s; margin 200 ms */
    t_open = leasetest_mono_ns();
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    lease = key_lease(g_eps, "e17", 0);
    assert_int_equal(leasetest_run_out(out, sizeof out, ETCDCTL "%s lease timetolive %llx", g_eps,
                             (unsigned long long)lease),
                     0);
    CHECK(strstr(out, "granted with TTL(2s)") != NULL, "%s", out);
    g = leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    idm_lease_status_get(l, &st);
    /* 2 s granted - 200 ms margin from a send after t_open (the 1 s asked
     * for would give 800 ms). */
    CHECK(st.deadline >= t_open + INT64_C(1800000000), "deadline only %lld ms after the open",
          LL((st.deadline - t_open) / 1000000));
    /* Mint on across two keeper renewals (the claim counts as one). */
    for (int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS; leasetest_mono_ms() < until;) {
        leasetest_mint_n(g, &iv, 100);
        idm_lease_status_get(l, &st);
        if (st.renewals >= 3 || st.lost)
            break;
        leasetest_sleep_ms(50);
    }
    CHECK(st.renewals >= 3 && !st.lost, "renewals %llu lost %d", ULL(st.renewals), st.lost);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E16: a lease id of 2^63 - 1 (a proxy makes etcd grant that id) goes out
 * and comes back exact through grant, txn, keepalive and revoke. */
static void e16_big_lease_id(void **unused)
{
    fake px;
    char *url;
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&px, g_eps, "9223372036854775807");
    url = fake_url(&px, "e16");
    lease_opts(&o, url, 4);
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    assert_int_equal(key_lease(g_eps, "e16", 0), INT64_MAX);
    g = leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    leasetest_mint_n(g, &iv, 1000);
    leasetest_wait_status(l, &st, false, 1); /* the claim's, then the keeper's */
    CHECK(st.renewals >= 2 && st.last_error == 0, "renewals %llu error %d", ULL(st.renewals),
          st.last_error);
    leasetest_mint_n(g, &iv, 1000);
    IDM_ASSERT_OK(idm_lease_close(l));
    assert_false(key_exists(g_eps, "/idmint/e16/workers/0")); /* revoked */
    idm_snowflake_close(g);
    idm_test_check_ids(&iv);
    idm_test_idvec_free(&iv);
    fake_stop(&px);
    idm_layout_free(layout);
    free(url);
}

/* The same with canned answers: lease ids at the edges of int64 must come
 * back byte for byte (the fake server answers 500 otherwise), and malformed
 * ones are refused. */
static void e16_lease_id_edges(void **unused)
{
    static const char *good[] = {"1", "9007199254740993", "9223372036854775807",
                                 "-9223372036854775808"};
    static const char *bad[] = {"9223372036854775808", "+42", " 42", "042", "4.2e1", "0x2a",
                                "", "-0", "42 ", "18446744073709551616"};
    (void)unused;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fake f;
        char *url;
        idm_lease_opts o;
        idm_lease *l;
        idm_layout *layout;
        idm_snowflake *g;
        uint64_t id;
        IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
        fake_start(&f, NULL, good[i]);
        url = fake_url(&f, "fake");
        lease_opts(&o, url, 4);
        o.ttl_ms = 2000;
        g = leasetest_claim(&l, &o, layout);
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        IDM_ASSERT_OK(idm_lease_close(l));
        idm_snowflake_close(g);
        pthread_mutex_lock(&f.mu);
        CHECK(f.bad_id == 0, "lease id %s came back changed", good[i]);
        pthread_mutex_unlock(&f.mu);
        fake_stop(&f);
        idm_layout_free(layout);
        free(url);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fake f;
        char *url, body[256];
        idm_lease_opts o;
        idm_lease *l = NULL;
        fake_start(&f, NULL, "42");
        snprintf(body, sizeof body, "{\"header\":" H ",\"ID\":\"%s\",\"TTL\":\"2\"}", bad[i]);
        fake_set(&f, K_GRANT, S_ANSWER, 200, body);
        url = fake_url(&f, "fake");
        lease_opts(&o, url, 4);
        o.ttl_ms = 2000;
        IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
        assert_null(l);
        fake_stop(&f);
        free(url);
    }
}

typedef struct garbage_case {
    const char *name;
    int kind;
    int special;
    int status;
    const char *body;
    int want; /* 0: any error but IDM_ELEASE */
} garbage_case;

#define KA(x) "{\"result\":{\"header\":" H x "}}\n"
/* The claim's first txn's answer: scope op (if any), then the taken ids. */
#define VIEW(ok, ops) "{\"header\":" H ok ",\"responses\":[" ops "]}"
#define SCOPE_KEY_B64 "L2lkbWludC9mYWtlL3Njb3Bl" /* /idmint/fake/scope */
#define SCOPE_KV(v)                                                                        \
    "{\"response_range\":{\"kvs\":[{\"key\":\"" SCOPE_KEY_B64 "\",\"value\":\"" v "\"}]}}"

/* E15: garbage from the gateway fails the claim, or fails the renewal with
 * an error other than IDM_ELEASE ("unknown, try again"), in bounded time
 * and without a crash; only etcd saying the lease or key is gone, or an
 * answer from another cluster (E19), is IDM_ELEASE. */
static void e15_garbage_answers(void **unused)
{
    static const garbage_case claim_cases[] = {
        {"grant truncated", K_GRANT, S_ANSWER, 200, "{\"header\":{\"cluster_id\":\"1\"", 0},
        {"grant 500", K_GRANT, S_ANSWER, 500, "{\"error\":\"x\",\"code\":13,\"message\":\"x\"}", 0},
        {"grant 503", K_GRANT, S_ANSWER, 503, "{\"error\":\"etcdserver: no leader\",\"code\":14}", 0},
        {"grant huge", K_GRANT, S_HUGE, 0, NULL, 0},
        {"grant hang", K_GRANT, S_HANG, 0, NULL, 0},
        {"grant closed", K_GRANT, S_CLOSE, 0, NULL, 0},
        {"grant empty", K_GRANT, S_ANSWER, 200, "", 0},
        {"grant html", K_GRANT, S_ANSWER, 200, "<html>no</html>", 0},
        {"grant no ID", K_GRANT, S_ANSWER, 200, "{\"header\":" H ",\"TTL\":\"2\"}", 0},
        {"grant no TTL", K_GRANT, S_ANSWER, 200, "{\"header\":" H ",\"ID\":\"42\"}", 0},
        {"grant no header", K_GRANT, S_ANSWER, 200, "{\"ID\":\"42\",\"TTL\":\"2\"}", 0},
        {"grant TTL number", K_GRANT, S_ANSWER, 200, "{\"header\":" H ",\"ID\":\"42\",\"TTL\":2}", 0},
        {"grant ID number", K_GRANT, S_ANSWER, 200,
         "{\"header\":" H ",\"ID\":9223372036854775807,\"TTL\":\"2\"}", 0},
        {"grant duplicate key", K_GRANT, S_ANSWER, 200,
         "{\"header\":" H ",\"ID\":\"42\",\"TTL\":\"2\",\"TTL\":\"2\"}", 0},
        {"grant duplicate nested key", K_GRANT, S_ANSWER, 200,
         "{\"header\":{\"cluster_id\":\"1\",\"cluster_id\":\"1\"},\"ID\":\"42\",\"TTL\":\"2\"}", 0},
        {"grant trailing text", K_GRANT, S_ANSWER, 200,
         "{\"header\":" H ",\"ID\":\"42\",\"TTL\":\"2\"}x", 0},
        {"grant two objects", K_GRANT, S_ANSWER, 200,
         "{\"header\":" H ",\"ID\":\"42\",\"TTL\":\"2\"}{}", 0},
        {"grant array", K_GRANT, S_ANSWER, 200, "[1,2]", 0},
        {"grant error text", K_GRANT, S_ANSWER, 200,
         "{\"header\":" H ",\"ID\":\"42\",\"TTL\":\"2\",\"error\":\"lessor full\"}", 0},
        {"view bad base64", K_TXN_VIEW, S_ANSWER, 200,
         VIEW(",\"succeeded\":true", "{\"response_range\":{\"kvs\":[{\"key\":\"!!\"}]}}"), 0},
        {"view kvs object", K_TXN_VIEW, S_ANSWER, 200,
         VIEW(",\"succeeded\":true", "{\"response_range\":{\"kvs\":{}}}"), 0},
        {"view no response_range", K_TXN_VIEW, S_ANSWER, 200,
         VIEW(",\"succeeded\":true", "{\"response_put\":{}}"), 0},
        {"view not succeeded without a compare", K_TXN_VIEW, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{}}"), 0},
        {"view two responses without a scope", K_TXN_VIEW, S_ANSWER, 200,
         VIEW(",\"succeeded\":true", "{\"response_range\":{}},{\"response_range\":{}}"), 0},
        /* the first answer: its cluster is the one; the grant's differs */
        {"view other cluster", K_TXN_VIEW, S_ANSWER, 200,
         "{\"header\":{\"cluster_id\":\"2\"},\"succeeded\":true,\"responses\":[{"
         "\"response_range\":{}}]}",
         IDM_ELEASE},
        {"txn succeeded string", K_TXN_CLAIM, S_ANSWER, 200,
         "{\"header\":" H ",\"succeeded\":\"true\",\"responses\":[{},{}]}", 0},
        {"txn one response", K_TXN_CLAIM, S_ANSWER, 200,
         "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_put\":{}}]}", 0},
        {"txn mark not a number", K_TXN_CLAIM, S_ANSWER, 200,
         "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_put\":{}},"
         "{\"response_range\":{\"kvs\":[{\"key\":\"L2lkbWludC9mYWtlL2h3bS8w\",\"value\":\"YWJj\"}],"
         "\"count\":\"1\"}}]}",
         0},
        {"txn mark of another id", K_TXN_CLAIM, S_ANSWER, 200,
         "{\"header\":" H ",\"succeeded\":true,\"responses\":[{\"response_put\":{}},"
         "{\"response_range\":{\"kvs\":[{\"key\":\"L2lkbWludC9mYWtlL2h3bS8x\",\"value\":\"MTIz\"}],"
         "\"count\":\"1\"}}]}",
         0},
    };
    /* The same for a claimant with the scope "s0" (czA=). */
    static const garbage_case scoped_claim_cases[] = {
        {"view scope recorded: another", K_TXN_VIEW, S_ANSWER, 200,
         VIEW("", SCOPE_KV("czE=") ",{\"response_range\":{}}"), IDM_EINVAL},
        {"view scope recorded: not base64", K_TXN_VIEW, S_ANSWER, 200,
         VIEW("", SCOPE_KV("c0!") ",{\"response_range\":{}}"), 0},
        {"view scope recorded: another key", K_TXN_VIEW, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{\"kvs\":[{\"key\":\"czA=\",\"value\":\"czA=\"}]}},"
                  "{\"response_range\":{}}"),
         0},
        {"view scope recorded: two kvs", K_TXN_VIEW, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{\"kvs\":[{\"key\":\"" SCOPE_KEY_B64 "\",\"value\":"
                  "\"czA=\"},{\"key\":\"" SCOPE_KEY_B64 "\",\"value\":\"czA=\"}]}},"
                  "{\"response_range\":{}}"),
         0},
        {"view scope recorded: gone", K_TXN_VIEW, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{}},{\"response_range\":{}}"), IDM_EIO},
        {"view scope created: no response_put", K_TXN_VIEW, S_ANSWER, 200,
         VIEW(",\"succeeded\":true", "{\"response_range\":{}},{\"response_range\":{}}"), 0},
        {"view scope: one response", K_TXN_VIEW, S_ANSWER, 200,
         VIEW(",\"succeeded\":true", "{\"response_range\":{}}"), 0},
        {"claim txn scope changed since the view", K_TXN_CLAIM, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{}},{\"response_range\":{}}," SCOPE_KV("czE=")),
         IDM_EINVAL},
        {"claim txn scope gone since the view", K_TXN_CLAIM, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{}},{\"response_range\":{}},{\"response_range\":{}}"),
         IDM_EIO},
        {"claim txn failure without the scope's range", K_TXN_CLAIM, S_ANSWER, 200,
         VIEW("", "{\"response_range\":{}},{\"response_range\":{}}"), 0},
    };
    static const garbage_case renew_cases[] = {
        {"keepalive truncated", K_KEEPALIVE, S_ANSWER, 200, "{\"result\":{\"header\":", 0},
        {"keepalive 500", K_KEEPALIVE, S_ANSWER, 500, "{\"error\":\"x\",\"code\":13,\"message\":\"x\"}", 0},
        {"keepalive 503", K_KEEPALIVE, S_ANSWER, 503, "{\"error\":\"x\",\"code\":14,\"message\":\"x\"}", 0},
        {"keepalive huge", K_KEEPALIVE, S_HUGE, 0, NULL, 0},
        {"keepalive hang", K_KEEPALIVE, S_HANG, 0, NULL, 0},
        {"keepalive closed", K_KEEPALIVE, S_CLOSE, 0, NULL, 0},
        {"keepalive empty", K_KEEPALIVE, S_ANSWER, 200, "", 0},
        {"keepalive {}", K_KEEPALIVE, S_ANSWER, 200, "{}", 0},
        {"keepalive no header", K_KEEPALIVE, S_ANSWER, 200, "{\"result\":{\"ID\":\"42\",\"TTL\":\"2\"}}", 0},
        {"keepalive no ID", K_KEEPALIVE, S_ANSWER, 200, KA(",\"TTL\":\"2\""), 0},
        {"keepalive other ID", K_KEEPALIVE, S_ANSWER, 200, KA(",\"ID\":\"43\",\"TTL\":\"2\""), 0},
        {"keepalive TTL number", K_KEEPALIVE, S_ANSWER, 200, KA(",\"ID\":\"42\",\"TTL\":2"), 0},
        {"keepalive TTL text", K_KEEPALIVE, S_ANSWER, 200, KA(",\"ID\":\"42\",\"TTL\":\"2s\""), 0},
        {"keepalive TTL overflow", K_KEEPALIVE, S_ANSWER, 200,
         KA(",\"ID\":\"42\",\"TTL\":\"99999999999999999999\""), 0},
        {"keepalive duplicate TTL", K_KEEPALIVE, S_ANSWER, 200,
         KA(",\"ID\":\"42\",\"TTL\":\"0\",\"TTL\":\"2\""), 0},
        {"keepalive stream error", K_KEEPALIVE, S_ANSWER, 200,
         "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\","
         "\"http_status\":\"Service Unavailable\"}}",
         0},
        {"keepalive two results", K_KEEPALIVE, S_ANSWER, 200,
         KA(",\"ID\":\"42\",\"TTL\":\"2\"") KA(",\"ID\":\"42\",\"TTL\":\"2\""), 0},
        {"mark txn succeeded number", K_TXN_MARK, S_ANSWER, 200, "{\"header\":" H ",\"succeeded\":1}", 0},
        {"mark txn hang", K_TXN_MARK, S_HANG, 0, NULL, 0},
        /* What etcd says when the claim is gone, and another cluster: */
        {"keepalive without TTL (E3)", K_KEEPALIVE, S_ANSWER, 200, KA(",\"ID\":\"42\""), IDM_ELEASE},
        {"keepalive TTL 0", K_KEEPALIVE, S_ANSWER, 200, KA(",\"ID\":\"42\",\"TTL\":\"0\""), IDM_ELEASE},
        {"keepalive other cluster (E19)", K_KEEPALIVE, S_ANSWER, 200,
         "{\"result\":{\"header\":{\"cluster_id\":\"2\"},\"ID\":\"42\",\"TTL\":\"2\"}}", IDM_ELEASE},
        {"mark txn not succeeded (E4)", K_TXN_MARK, S_ANSWER, 200, "{\"header\":" H "}", IDM_ELEASE},
        {"mark txn other cluster (E19)", K_TXN_MARK, S_ANSWER, 200,
         "{\"header\":{\"cluster_id\":\"7\"},\"succeeded\":true}", IDM_ELEASE},
    };
    idm_layout *layout;
    fake f;
    char *url;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&f, NULL, "42");
    url = fake_url(&f, "fake");
    for (size_t i = 0; i < sizeof claim_cases / sizeof claim_cases[0] +
                               sizeof scoped_claim_cases / sizeof scoped_claim_cases[0];
         i++) {
        bool scoped = i >= sizeof claim_cases / sizeof claim_cases[0];
        const garbage_case *gc = scoped ? &scoped_claim_cases[i - sizeof claim_cases /
                                                                      sizeof claim_cases[0]]
                                        : &claim_cases[i];
        idm_lease_opts o;
        idm_lease *l = NULL;
        int64_t t0 = leasetest_mono_ms();
        int rc;
        fake_clear(&f);
        fake_set(&f, gc->kind, gc->special, gc->status, gc->body);
        lease_opts(&o, url, 4);
        o.ttl_ms = 2000;
        o.scope = scoped ? "s0" : NULL;
        rc = idm_lease_open(&l, &o);
        CHECK(rc != 0, "%s: claimed", gc->name);
        CHECK(gc->want != 0 ? rc == gc->want : rc != IDM_ELEASE, "%s: %s (%s)", gc->name,
              idm_err_name(rc), idm_error_detail());
        CHECK(idm_error_detail()[0] != '\0', "%s: no detail", gc->name);
        CHECK(gc->want != IDM_EINVAL ||
                  strstr(idm_error_detail(), "hands out ids for 's1'; this claimant asks for "
                                             "'s0'") != NULL,
              "%s: detail %s", gc->name, idm_error_detail());
        CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "%s: gave up only after %lld ms",
              gc->name, LL(leasetest_mono_ms() - t0));
        assert_null(l);
    }
    for (size_t i = 0; i < sizeof renew_cases / sizeof renew_cases[0]; i++) {
        const garbage_case *gc = &renew_cases[i];
        idm_lease_opts o;
        idm_lease *l = NULL;
        idm_snowflake *g;
        idm_lease_status st;
        uint64_t id;
        int64_t t0;
        int rc;
        fake_clear(&f);
        lease_opts(&o, url, 4);
        o.ttl_ms = 2000;
        IDM_ASSERT_OK(idm_lease_open(&l, &o));
        g = leasetest_gen(layout, l, NULL);
        /* The claim recorded the first mark: minting starts at attach, and
         * the keeper's first renewal (TTL/3 later) meets the bad answer. */
        IDM_ASSERT_OK(idm_lease_attach(l, g));
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        fake_set(&f, gc->kind, gc->special, gc->status, gc->body);
        t0 = leasetest_mono_ms();
        do {
            leasetest_sleep_ms(5);
            idm_lease_status_get(l, &st);
        } while (st.failures == 0 && leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS);
        rc = st.last_error;
        CHECK(st.failures != 0, "%s: renewed", gc->name);
        CHECK(gc->want != 0 ? rc == gc->want : rc != IDM_ELEASE, "%s: %s", gc->name,
              idm_err_name(rc));
        assert_int_equal(st.lost, gc->want == IDM_ELEASE);
        /* Told the claim is gone: stop at once. Anything else is "unknown,
         * try again": mint on until the deadline (2 s TTL - 400 ms margin
         * from the claim, not reached yet). */
        if (gc->want == IDM_ELEASE)
            IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
        else if (leasetest_mono_ns() < st.deadline - INT64_C(50000000))
            IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        fake_clear(&f);
        idm_lease_close(l);
        idm_snowflake_close(g);
    }
    fake_stop(&f);
    free(url);
    idm_layout_free(layout);
}

/* The stored mark of worker id 0 under /idmint/<name>, -1 if none. */
static int64_t stored_mark(const char *name)
{
    char out[256];
    if (leasetest_run_out(out, sizeof out, ETCDCTL "%s get /idmint/%s/hwm/0 --print-value-only",
                          g_eps, name) != 0 ||
        out[0] < '0' || out[0] > '9')
        return -1;
    return strtoll(out, NULL, 10);
}

/* A mark write applied late (sent, its answer lost, applied after later
 * ones: here the first renewal's txn replayed to etcd after two more) finds
 * the stored mark higher and leaves it; a stored value that is no 16-digit
 * mark is never taken as recorded: the renewal fails ("unknown, try
 * again"), and works again once the value is a mark. */
static void late_mark_write_never_lowers(void **unused)
{
    fake px;
    char *url, *answer = NULL, body[4096];
    idm_lease_opts o;
    idm_lease *l;
    idm_snowflake *g;
    idm_lease_status st;
    idm_layout *layout;
    int64_t before, after;
    int status = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "late");
    lease_opts(&o, url, 1);
    o.ttl_ms = 2000;
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    g = first_id(layout, l);
    leasetest_wait_status(l, &st, false, 1); /* the first keeper renewal */
    leasetest_wait_status(l, &st, false, 2);
    leasetest_wait_status(l, &st, false, 3);
    CHECK(st.renewals >= 4 && st.last_error == 0, "renewals %llu, %s", ULL(st.renewals),
          idm_err_name(st.last_error));
    before = stored_mark("late");
    CHECK(before == st.mark_ms, "stored %lld, recorded %lld", LL(before), LL(st.mark_ms));
    pthread_mutex_lock(&px.mu);
    snprintf(body, sizeof body, "%s", px.first_mark_txn);
    pthread_mutex_unlock(&px.mu);
    assert_true(body[0] != '\0');
    assert_int_equal(http_post(g_eps, "/v3/kv/txn", body, 3000, &status, &answer), 0);
    assert_int_equal(status, 200);
    CHECK(strstr(answer, "\"succeeded\":true") != NULL, "replayed txn: %s", answer);
    free(answer);
    after = stored_mark("late");
    printf("  late write: stored mark %lld before and %lld after replaying the first renewal\n",
           LL(before), LL(after));
    CHECK(after >= before, "a late write lowered the mark from %lld to %lld", LL(before),
          LL(after));

    /* A value left by hand in another form: renewals fail, never lost. */
    assert_int_equal(run(ETCDCTL "%s put /idmint/late/hwm/0 99 > /dev/null", g_eps), 0);
    idm_lease_status_get(l, &st);
    leasetest_wait_failure(l, &st);
    CHECK(st.last_error == IDM_EIO && !st.lost, "%s, lost %d", idm_err_name(st.last_error),
          st.lost);
    {
        char v[32];
        snprintf(v, sizeof v, "%016lld", LL(after));
        assert_int_equal(run(ETCDCTL "%s put /idmint/late/hwm/0 %s > /dev/null", g_eps, v), 0);
    }
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(st.last_error == 0 && !st.lost, "after the repair: %s", idm_err_name(st.last_error));
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    fake_stop(&px);
    free(url);
    idm_layout_free(layout);
}

/* Endpoint failover: a dead endpoint and one that never answers come
 * first; the claim goes through the third, which is used first from then
 * on. A list of only dead endpoints fails in bounded time. */
static void endpoint_failover(void **unused)
{
    fake good, mute;
    char eps[128], *url;
    idm_lease_opts o;
    idm_lease *l = NULL;
    idm_layout *layout;
    idm_snowflake *g;
    uint64_t id;
    int dead, mute_conns;
    int64_t t0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    {
        /* A port nothing listens on: bind, note, close. */
        fake tmp;
        fake_start(&tmp, NULL, "1");
        dead = tmp.port;
        fake_stop(&tmp);
    }
    fake_start(&good, NULL, "42");
    fake_start(&mute, NULL, "42");
    fake_set(&mute, K_TXN_VIEW, S_HANG, 0, NULL); /* the claim's first request */
    fake_set(&mute, K_GRANT, S_HANG, 0, NULL);
    snprintf(eps, sizeof eps, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", dead, mute.port,
             good.port);
    url = url_for(eps, "fake");
    lease_opts(&o, url, 4);
    o.ttl_ms = 2000;
    t0 = leasetest_mono_ms();
    IDM_ASSERT_OK(idm_lease_open(&l, &o));
    printf("  failover: claimed past a dead and a mute endpoint in %lld ms\n",
           LL(leasetest_mono_ms() - t0));
    mute_conns = atomic_load(&mute.conns);
    assert_int_equal(mute_conns, 1);
    g = leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id));
    assert_int_equal(atomic_load(&mute.conns), mute_conns); /* remembered */
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    free(url);

    snprintf(eps, sizeof eps, "127.0.0.1:%d,localhost:%d", dead, dead);
    url = url_for(eps, "fake");
    lease_opts(&o, url, 4);
    t0 = leasetest_mono_ms();
    IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EIO);
    CHECK(strstr(idm_error_detail(), "unreachable") != NULL, "detail: %s", idm_error_detail());
    CHECK(leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS, "gave up only after %lld ms",
          LL(leasetest_mono_ms() - t0));
    free(url);
    fake_stop(&good);
    fake_stop(&mute);
    idm_layout_free(layout);
}

static void bad_urls(void **unused)
{
    static const char *const bad[] = {
        "etcd://", "etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379/", "etcd:///idmint",
        "etcd://127.0.0.1/idmint", "etcd://127.0.0.1:0/idmint", "etcd://127.0.0.1:65536/idmint",
        "etcd://127.0.0.1:23x9/idmint", "etcd://a:1,/idmint", "etcd://,a:1/idmint",
        "etcd://a:1,,b:2/idmint", "etcd://user@a:1/idmint", "etcd://a:1/idmint/",
        "etcd://a:1/id mint", "etcd://a:1//idmint", "etcd://a:1/idmint?x=1",
        "etcd://[::1/idmint", "etcd://[]:1/idmint", "etcd://a:+1/idmint",
        "etcd://a:01/idmint",
    };
    idm_lease_opts o;
    idm_lease *l = NULL;
    (void)unused;
    lease_opts(&o, NULL, 4);
    leasetest_bad_urls(&o, bad, sizeof bad / sizeof bad[0], "etcd", NULL);
    {
        char many[1024] = "etcd://";
        for (int i = 0; i < 17; i++)
            snprintf(many + strlen(many), sizeof many - strlen(many), "%sa%d:1", i ? "," : "", i);
        strcat(many, "/idmint");
        lease_opts(&o, many, 4);
        IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
    }
}

/* A handoff to a holder whose clock is 5 s behind the released mark: its
 * generator refuses to start (default backwards policy), and starts once
 * its clock has passed the mark, above every id the last holder minted. */
static void skewed_handoff(void **unused)
{
    (void)unused;
    leasetest_skewed_handoff(&k_coord, "skew");
}

/* E2: etcd frozen (SIGSTOP) past the TTL. The holder runs on an injected
 * clock that moves only when told (renewals still go out every TTL/3 of
 * real time, each sent at the same injected instant T), so its deadline is
 * exact: T + TTL - margin, from the last renewal before the freeze (one of
 * the keeper's: the test waits for one). With etcd frozen (and a renewal
 * seen failing since), a mint 1 ns before that deadline works and one at
 * it is refused, with no word from etcd: the claim is not called lost. etcd stays frozen until the lease has expired
 * by etcd's own clock (the 2 s TTL after the last keepalive it can have
 * taken, which came before the freeze, and 1 s more), so after SIGCONT the
 * lease is gone: the next renewal hears so (a keepalive answer without a
 * TTL), the claim is reported lost and minting stays stopped. Then the
 * hand-over: a new claim gets the id (the only one) with at least the last
 * mark the old holder recorded, and mints above every id it minted. */
static void e2_frozen_etcd(void **unused)
{
    char *url = url_for(g_eps, "e2");
    idm_lease_opts o, o2;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_manual_clock *mc;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t t_stop, at, ttl_ns = INT64_C(2000) * 1000000;
    pid_t pid;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 1); /* one id: the re-claim must take the same */
    o.ttl_ms = 2000;        /* margin 400 ms */
    g = leasetest_clocked_claim(&l, &o, layout, &mc, &st, &iv, &at);
    pid = member_pid(g_dir, 1);
    assert_true(pid > 0);

    t_stop = leasetest_freeze(pid);
    /* A renewal fails after the freeze (the last that worked is done), with
     * no word from etcd. */
    idm_lease_status_get(l, &st);
    leasetest_deadline_exact(l, g, mc, at, 2000, 400, &st, &iv);
    printf("  E2: renewals fail with etcd frozen (%s); the deadline is T + %lld ms\n",
           idm_err_name(st.last_error), LL((st.deadline - at) / 1000000));
    idm_lease_status_get(l, &st);
    assert_int_equal(st.lost, 0);

    /* Keep etcd frozen until the lease has expired by its clock. */
    leasetest_sleep_ms((t_stop + ttl_ns) / 1000000 + 1000 - leasetest_mono_ms());
    leasetest_thaw(pid);
    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost, "the claim was not found lost after SIGCONT (error %s, renewals %llu)",
          idm_err_name(st.last_error), ULL(st.renewals));
    assert_int_equal(st.last_error, IDM_ELEASE);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);

    /* The hand-over, on the system clock. */
    lease_opts(&o2, url, 1);
    o2.ttl_ms = 2000;
    IDM_ASSERT_OK(idm_lease_open(&l2, &o2));
    assert_int_equal(idm_lease_worker(l2), idm_lease_worker(l));
    CHECK(idm_lease_mark(l2) >= st.mark_ms, "mark %lld below the last recorded %lld",
          LL(idm_lease_mark(l2)), LL(st.mark_ms));
    CHECK(idm_lease_mark(l2) >= leasetest_time_of(layout, iv.v[iv.n - 1]), "mark %lld below %lld",
          LL(idm_lease_mark(l2)), LL(leasetest_time_of(layout, iv.v[iv.n - 1])));
    leasetest_successor(layout, l2, true, &iv, 1000, l, g); /* above all the old ids */
    idm_manual_clock_free(mc);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E6: requests reach etcd but the answers are lost (a proxy holds them
 * back): the generator stops at its deadline (that of a renewal answered
 * before the answers were held back; no mint starts after it), the claim is
 * not called lost, and minting resumes when answers come through again. */
static void e6_answers_lost(void **unused)
{
    fake px;
    char *url;
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t t_hold, last_ok_start = 0, ttl_ns = INT64_C(2000) * 1000000,
                    margin_ns = INT64_C(400) * 1000000;
    int rc = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "e6");
    lease_opts(&o, url, 4);
    o.ttl_ms = 2000;
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    leasetest_wait_status(l, &st, false, 1); /* a keeper renewal (the claim was the first) */
    fake_hold(&px, true);
    t_hold = leasetest_mono_ns();
    while (leasetest_mono_ns() - t_hold < LEASETEST_HUNG_MS * INT64_C(1000000)) {
        int64_t t = leasetest_mono_ns();
        if ((rc = idm_snowflake_next(g, &id)) != 0)
            break;
        idm_test_idvec_push(&iv, id);
        last_ok_start = t;
        leasetest_sleep_ms(1);
    }
    IDM_ASSERT_RC(rc, IDM_ELEASE);
    idm_lease_status_get(l, &st);
    printf("  E6: the deadline %lld ms after the answers were held back\n",
           LL((st.deadline - t_hold) / 1000000));
    /* Every answer since t_hold is held back: the deadline is a renewal's
     * sent before, and no mint started past it. */
    CHECK(st.deadline <= t_hold + ttl_ns - margin_ns, "deadline %lld ms after the hold",
          LL((st.deadline - t_hold) / 1000000));
    CHECK(last_ok_start < st.deadline + LEASETEST_COARSE_NS,
          "a mint started %lld ms past the deadline", LL((last_ok_start - st.deadline) / 1000000));
    assert_int_equal(st.lost, 0);
    CHECK(st.last_error != 0 && st.last_error != IDM_ELEASE, "%s", idm_err_name(st.last_error));
    fake_hold(&px, false);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(!st.lost && st.last_error == 0, "lost %d error %s", st.lost,
          idm_err_name(st.last_error));
    leasetest_mint_n(g, &iv, 100);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    fake_stop(&px);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E5: a partition between holder 1 and etcd (the proxy drops all of its
 * traffic; holder 2 talks to etcd directly), longer than the TTL. Holder 1
 * stops at its deadline D, which is before etcd could expire its lease (no
 * later than the last keepalive that reached etcd + TTL - margin); holder 2
 * claims the only id once etcd expired it, above holder 1's mark; after the
 * heal holder 1's renewal finds the claim lost. No id twice. */
static void e5_partition(void **unused)
{
    fake px;
    char *url1, *url2 = url_for(g_eps, "e5");
    idm_lease_opts o1, o2;
    idm_lease *l1, *l2 = NULL;
    idm_layout *layout;
    idm_snowflake *g1, *g2;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    leasetest_minter m;
    uint64_t id;
    int64_t t_part, t_claim = 0, fwd_ns, ttl_ns = INT64_C(2000) * 1000000,
                                 margin_ns = INT64_C(400) * 1000000;
    int rc = IDM_EBUSY;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&px, g_eps, NULL);
    url1 = fake_url(&px, "e5");
    lease_opts(&o1, url1, 1); /* one id: holder 2 can only take holder 1's */
    o1.ttl_ms = 2000;         /* margin 400 ms */
    lease_opts(&o2, url2, 1);
    o2.ttl_ms = 2000;
    g1 = leasetest_claim(&l1, &o1, layout);
    IDM_ASSERT_RC(idm_lease_open(&l2, &o2), IDM_EBUSY);
    l2 = NULL;
    leasetest_minter_start(&m, g1, l1);
    leasetest_minter_wait_minted(&m, 1);

    fake_drop(&px, true);
    t_part = leasetest_mono_ns();
    CHECK(leasetest_minter_wait_refused(&m, LEASETEST_HUNG_MS),
          "holder 1 minted on through the partition");
    pthread_mutex_lock(&px.mu);
    fwd_ns = px.ka_fwd_ns; /* the last keepalive (or the grant) that reached etcd */
    pthread_mutex_unlock(&px.mu);
    assert_int_equal(m.first_rc, IDM_ELEASE);
    printf("  E5: holder 1 stopped %lld ms into the partition, %lld ms after its last "
           "keepalive reached etcd\n",
           LL((m.first_refused_ns - t_part) / 1000000),
           LL((m.first_refused_ns - fwd_ns) / 1000000));
    CHECK(m.deadline_at_refusal <= fwd_ns + ttl_ns - margin_ns,
          "deadline %lld ms after the last keepalive reached etcd",
          LL((m.deadline_at_refusal - fwd_ns) / 1000000));
    CHECK(m.last_ok_before_ns < m.deadline_at_refusal + LEASETEST_COARSE_NS,
          "minted %lld ms past the deadline",
          LL((m.last_ok_before_ns - m.deadline_at_refusal) / 1000000));
    idm_lease_status_get(l1, &st);
    assert_int_equal(st.lost, 0); /* etcd said nothing */

    /* Holder 2 claims the id as soon as etcd has expired holder 1's lease
     * (a claim that times out on a loaded machine is tried again). */
    while (leasetest_mono_ns() - t_part < LEASETEST_HUNG_MS * INT64_C(1000000)) {
        rc = idm_lease_open(&l2, &o2);
        if (rc != IDM_EBUSY && rc != IDM_EIO)
            break;
        leasetest_sleep_ms(50);
    }
    IDM_ASSERT_OK(rc);
    t_claim = leasetest_mono_ns();
    printf("  E5: holder 2 claimed the id %lld ms after the last keepalive reached etcd\n",
           LL((t_claim - fwd_ns) / 1000000));
    CHECK(t_claim >= fwd_ns + ttl_ns, "claimed %lld ms after the last keepalive, under the TTL",
          LL((t_claim - fwd_ns) / 1000000));
    CHECK(m.last_ok_before_ns < t_claim, "holder 1 minted after holder 2's claim");
    assert_int_equal(idm_lease_worker(l2), idm_lease_worker(l1));
    assert_int_equal(atomic_load(&m.refused) > 0, 1);
    g2 = leasetest_gen_after_loss(layout, l2);
    IDM_ASSERT_OK(idm_lease_attach(l2, g2));

    /* The heal: holder 1's next renewal finds the id bound to another lease. */
    fake_drop(&px, false);
    leasetest_wait_status(l1, &st, true, 0);
    leasetest_minter_stop(&m);
    CHECK(st.lost, "holder 1 was not told its claim is lost (error %s)",
          idm_err_name(st.last_error));
    assert_int_equal(st.last_error, IDM_ELEASE);
    IDM_ASSERT_RC(idm_snowflake_next(g1, &id), IDM_ELEASE);
    CHECK(atomic_load(&m.after_refusal) == 0, "holder 1 minted %d ids after its deadline",
          atomic_load(&m.after_refusal));
    CHECK(m.iv.n > 0, "holder 1 minted nothing");
    CHECK(idm_lease_mark(l2) >= leasetest_time_of(layout, m.iv.v[m.iv.n - 1]),
          "mark %lld below %lld", LL(idm_lease_mark(l2)),
          LL(leasetest_time_of(layout, m.iv.v[m.iv.n - 1])));
    for (size_t i = 0; i < m.iv.n; i++)
        idm_test_idvec_push(&iv, m.iv.v[i]);
    leasetest_mint_n(g2, &iv, 1000);
    idm_test_check_ids(&iv); /* one worker id: holder 2's ids above all of holder 1's */
    IDM_ASSERT_RC(idm_lease_close(l1), 0);
    idm_snowflake_close(g1);
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g2);
    fake_stop(&px);
    idm_test_idvec_free(&m.iv);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url1);
    free(url2);
}

/* E7: keepalive answers held back by the proxy. A little (300 ms, inside the
 * TTL/6 request timeout): renewals work, and the guard's deadline runs from
 * the send (at most the keepalive's arrival at the proxy + TTL - margin),
 * not from the late answer. Then 0.9 x TTL (every renewal times out; etcd
 * still gets each keepalive): minting stops at the last good renewal's
 * deadline, before the lease could expire on the server, never later; the
 * keeper goes on trying at least every TTL/3; when answers come in time
 * again, renewals and minting resume. */
static void e7_slow_answers(void **unused)
{
    fake px;
    char *url;
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    leasetest_minter m;
    int64_t ttl_ms = 3000, ttl_ns = ttl_ms * 1000000, margin_ns = ttl_ns / 5, t_slow, ok_ns,
            max_gap = 0;
    uint64_t renewals;
    int n0, n1, attempts;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "e7");
    lease_opts(&o, url, 4); /* TTL 3 s: margin 600 ms, requests time out after 500 ms */
    g = leasetest_claim(&l, &o, layout);
    leasetest_minter_start(&m, g, l);

    fake_delay(&px, 300);
    idm_lease_status_get(l, &st);
    renewals = st.renewals;
    for (int i = 0; i < 2; i++) {
        int64_t lag;
        leasetest_wait_status(l, &st, false, renewals);
        CHECK(!st.lost && st.last_error == 0 && st.renewals > renewals,
              "a renewal with a 300 ms answer failed: %s", idm_err_name(st.last_error));
        renewals = st.renewals;
        pthread_mutex_lock(&px.mu);
        ok_ns = px.ka_ok_ns;
        pthread_mutex_unlock(&px.mu);
        lag = st.deadline - (ok_ns + ttl_ns - margin_ns);
        printf("  E7: answer held 300 ms: deadline %lld ms from arrival + TTL - margin\n",
               LL(lag / 1000000));
        CHECK(lag <= 0, "the deadline is %lld ms past the keepalive's arrival + TTL - margin",
              LL(lag / 1000000));
    }
    CHECK(atomic_load(&m.refused) == 0, "%d mints refused with answers 300 ms late",
          atomic_load(&m.refused));

    fake_delay(&px, ttl_ms * 9 / 10);
    t_slow = leasetest_mono_ns();
    pthread_mutex_lock(&px.mu);
    n0 = px.nka;
    pthread_mutex_unlock(&px.mu);
    CHECK(leasetest_minter_wait_refused(&m, LEASETEST_HUNG_MS),
          "minting went on with every answer late");
    assert_int_equal(m.first_rc, IDM_ELEASE);
    /* The keeper goes on trying: wait for five keepalives since the delay. */
    for (int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS; leasetest_mono_ms() < until;) {
        pthread_mutex_lock(&px.mu);
        n1 = px.nka;
        pthread_mutex_unlock(&px.mu);
        if (n1 - n0 >= 5)
            break;
        leasetest_sleep_ms(20);
    }
    idm_lease_status_get(l, &st);
    pthread_mutex_lock(&px.mu);
    ok_ns = px.ka_ok_ns; /* the last keepalive answered in time */
    n1 = px.nka;
    for (int i = n0 + 1; i < n1; i++)
        if (px.ka_at[i] - px.ka_at[i - 1] > max_gap)
            max_gap = px.ka_at[i] - px.ka_at[i - 1];
    pthread_mutex_unlock(&px.mu);
    attempts = n1 - n0;
    printf("  E7: answers held %lld ms: stopped %lld ms in, %lld ms before the last good "
           "keepalive + TTL; %d keepalives in %lld ms, at most %lld ms apart\n",
           LL(ttl_ms * 9 / 10), LL((m.first_refused_ns - t_slow) / 1000000),
           LL((ok_ns + ttl_ns - m.first_refused_ns) / 1000000), attempts,
           LL((leasetest_mono_ns() - t_slow) / 1000000), LL(max_gap / 1000000));
    assert_int_equal(st.lost, 0);
    CHECK(st.renewals == renewals || st.renewals == renewals + 1,
          "%llu renewals worked with answers 2.7 s late", ULL(st.renewals - renewals));
    CHECK(st.last_error != 0 && st.last_error != IDM_ELEASE, "%s", idm_err_name(st.last_error));
    CHECK(m.deadline_at_refusal <= ok_ns + ttl_ns - margin_ns,
          "deadline %lld ms past the last good keepalive's arrival + TTL - margin",
          LL((m.deadline_at_refusal - (ok_ns + ttl_ns - margin_ns)) / 1000000));
    CHECK(m.last_ok_before_ns < m.deadline_at_refusal + LEASETEST_COARSE_NS,
          "minted %lld ms past D", LL((m.last_ok_before_ns - m.deadline_at_refusal) / 1000000));
    CHECK(m.last_ok_before_ns < ok_ns + ttl_ns, "minted after the lease could expire on etcd");
    CHECK(atomic_load(&m.after_refusal) == 0, "%d ids minted after the deadline with no renewal",
          atomic_load(&m.after_refusal));
    CHECK(attempts >= 5, "only %d keepalives", attempts);
    CHECK(max_gap <= (ttl_ms / 3 + ttl_ms / 6 + 200) * 1000000,
          "keepalives %lld ms apart (TTL/3 is %lld)", LL(max_gap / 1000000), LL(ttl_ms / 3));

    fake_delay(&px, 0);
    leasetest_wait_status(l, &st, false, st.renewals);
    CHECK(!st.lost && st.last_error == 0, "lost %d error %s", st.lost,
          idm_err_name(st.last_error));
    for (int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
         atomic_load(&m.after_refusal) == 0 && leasetest_mono_ms() < until;)
        leasetest_sleep_ms(5);
    leasetest_minter_stop(&m);
    CHECK(atomic_load(&m.after_refusal) > 0, "minting did not resume");
    CHECK(m.unrenewed == 0, "%d ids minted after a refusal before any renewal", m.unrenewed);
    idm_test_check_ids(&m.iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    fake_stop(&px);
    idm_test_idvec_free(&m.iv);
    idm_layout_free(layout);
    free(url);
}

/* E11: etcd killed with kill -9 and started again on its data directory:
 * renewals resume, the claim holds. */
static void e11_etcd_restarted(void **unused)
{
    char *url = url_for(g_eps, "e11"), args[4400];
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    pid_t before;
    int64_t t0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    before = member_pid(g_dir, 1);
    t0 = leasetest_mono_ms();
    snprintf(args, sizeof args, "restart '%s' 1", g_dir);
    assert_int_equal(srv(NULL, 0, args), 0);
    CHECK(member_pid(g_dir, 1) != before, "etcd was not restarted");
    idm_lease_status_get(l, &st);
    leasetest_wait_status(l, &st, false, st.renewals);
    printf("  E11: renewed %lld ms after the kill\n", LL(leasetest_mono_ms() - t0));
    CHECK(!st.lost && st.last_error == 0, "lost %d error %s", st.lost,
          idm_err_name(st.last_error));
    leasetest_mint_n(g, &iv, 100);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* The cluster id etcd at ep puts in its answers' headers. */
static void cluster_id(const char *ep, char *out, size_t n)
{
    char *answer = NULL;
    const char *p;
    int status = 0;
    out[0] = '\0';
    assert_int_equal(http_post(ep, "/v3/kv/range", "{\"key\":\"eA==\"}", 5000, &status, &answer),
                     0);
    p = strstr(answer, "\"cluster_id\":\"");
    if (p != NULL)
        snprintf(out, n, "%.*s", (int)strcspn(p + 14, "\""), p + 14);
    free(answer);
    CHECK(out[0] != '\0', "no cluster id from %s", ep);
}

/* E18: etcd re-created with a wiped data directory. To leave the cluster id
 * as the only clue, the new cluster is given a lease with the same id and
 * the same worker key bound to it (so keepalive and the guarded mark write
 * would both succeed there): the claim must still be found lost. */
static void e18_wiped_cluster(void **unused)
{
    fake px;
    char *url, args[4400], body[512], *answer = NULL, cid[2][32];
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t lease;
    int status = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    fake_start(&px, g_eps, NULL);
    url = fake_url(&px, "e18");
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    lease = key_lease(g_eps, "e18", 0);
    assert_true(lease != 0);

    fake_hold(&px, true); /* the keeper hears nothing meanwhile */
    cluster_id(g_eps, cid[0], sizeof cid[0]);
    snprintf(args, sizeof args, "restart '%s' 1 wipe", g_dir);
    assert_int_equal(srv(NULL, 0, args), 0);
    cluster_id(g_eps, cid[1], sizeof cid[1]);
    CHECK(strcmp(cid[0], cid[1]) != 0, "the wiped member kept cluster id %s", cid[0]);
    snprintf(body, sizeof body, "{\"TTL\":\"60\",\"ID\":\"%lld\"}", LL(lease));
    assert_int_equal(http_post(g_eps, "/v3/lease/grant", body, 5000, &status, &answer), 0);
    CHECK(status == 200, "grant: %d %s", status, answer);
    free(answer);
    /* key /idmint/e18/workers/0 */
    snprintf(body, sizeof body, "{\"key\":\"L2lkbWludC9lMTgvd29ya2Vycy8w\",\"value\":\"eA==\","
                                "\"lease\":\"%lld\"}",
             LL(lease));
    assert_int_equal(http_post(g_eps, "/v3/kv/put", body, 5000, &status, &answer), 0);
    CHECK(status == 200, "put: %d %s", status, answer);
    free(answer);
    assert_int_equal(key_lease(g_eps, "e18", 0), lease);
    fake_hold(&px, false);

    leasetest_wait_status(l, &st, true, 0);
    CHECK(st.lost, "a different cluster went unnoticed");
    assert_int_equal(st.last_error, IDM_ELEASE);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE);
    /* The impostor lease is still there (nothing was revoked on the other
     * cluster), and would have renewed fine. */
    snprintf(body, sizeof body, "{\"ID\":\"%lld\"}", LL(lease));
    assert_int_equal(http_post(g_eps, "/v3/lease/keepalive", body, 5000, &status, &answer), 0);
    CHECK(strstr(answer, "\"TTL\"") != NULL, "%s", answer);
    free(answer);
    idm_lease_close(l);
    idm_snowflake_close(g);
    fake_stop(&px);
    idm_test_check_ids(&iv);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* ----------------------------------------------- three-member cluster */

/* Mint from g for ms, pushing the ids; returns the number of refusals. */
static int mint_for(idm_snowflake *g, idm_test_idvec *iv, int64_t ms)
{
    int64_t until = leasetest_mono_ms() + ms;
    int refused = 0;
    while (leasetest_mono_ms() < until) {
        uint64_t id;
        if (idm_snowflake_next(g, &id) == 0)
            idm_test_idvec_push(iv, id);
        else
            refused++;
        leasetest_sleep_ms(2);
    }
    return refused;
}

/* E8: the leader of three members killed with kill -9 while a holder
 * renews through all three endpoints: renewals resume after the election
 * (or the claim is lost and re-claimed); a second claimant gets another
 * id; no id twice. */
static void e8_leader_killed(void **unused)
{
    char *url = url_for(g_ceps, "e8"), args[4400], out[32];
    idm_lease_opts o;
    idm_lease *l, *l2;
    idm_layout *layout;
    idm_snowflake *g, *g2;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    int leader, refused;
    int64_t t0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    snprintf(args, sizeof args, "leader '%s'", g_cdir);
    assert_int_equal(srv(out, sizeof out, args), 0);
    leader = atoi(out);
    assert_true(leader >= 1 && leader <= 3);
    snprintf(args, sizeof args, "kill '%s' %d", g_cdir, leader);
    t0 = leasetest_mono_ms();
    assert_int_equal(srv(NULL, 0, args), 0);
    idm_lease_status_get(l, &st);
    refused = mint_for(g, &iv, 3500);
    leasetest_wait_status(l, &st, false, st.renewals);
    printf("  E8: leader %d killed; after 3.5 s: renewals %llu, lost %d, %d mints refused\n",
           leader, ULL(st.renewals), st.lost, refused);
    if (st.lost) {
        idm_lease *again;
        IDM_ASSERT_OK(idm_lease_open(&again, &o));
        IDM_ASSERT_OK(idm_lease_close(l));
        idm_snowflake_close(g);
        l = again;
        g = leasetest_gen_after_loss(layout, l);
        IDM_ASSERT_OK(idm_lease_attach(l, g));
    }
    IDM_ASSERT_OK(idm_lease_open(&l2, &o));
    CHECK(idm_lease_worker(l2) != idm_lease_worker(l), "two holders of worker %u",
          (unsigned)idm_lease_worker(l));
    g2 = leasetest_gen(layout, l2, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l2, g2));
    leasetest_mint_n(g, &iv, 1000);
    leasetest_mint_n(g2, &iv, 1000);
    leasetest_no_duplicates(&iv);
    printf("  E8: settled %lld ms after the kill\n", LL(leasetest_mono_ms() - t0));
    IDM_ASSERT_OK(idm_lease_close(l));
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g);
    idm_snowflake_close(g2);
    snprintf(args, sizeof args, "restart '%s' %d", g_cdir, leader);
    assert_int_equal(srv(NULL, 0, args), 0);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E10: two of three members down: renewals fail ("no leader", timeouts),
 * the generator stops at its deadline without calling the claim lost; with
 * quorum back, renewals resume (or the claim is reported lost). */
static void e10_quorum_lost(void **unused)
{
    char *url = url_for(g_ceps, "e10"), args[4400];
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    uint64_t id;
    int64_t t_lost, last_ok_start = 0, ttl_ns = INT64_C(3000) * 1000000,
                    margin_ns = INT64_C(600) * 1000000;
    int rc = 0;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url, 4);
    g = leasetest_claim(&l, &o, layout);
    leasetest_mint_n(g, &iv, 100);
    leasetest_wait_status(l, &st, false, 1); /* a keeper renewal (the claim was the first) */
    for (int m = 1; m <= 2; m++) {
        snprintf(args, sizeof args, "kill '%s' %d", g_cdir, m);
        assert_int_equal(srv(NULL, 0, args), 0);
    }
    t_lost = leasetest_mono_ns();
    while (leasetest_mono_ns() - t_lost < LEASETEST_HUNG_MS * INT64_C(1000000)) {
        int64_t t = leasetest_mono_ns();
        if ((rc = idm_snowflake_next(g, &id)) != 0)
            break;
        idm_test_idvec_push(&iv, id);
        last_ok_start = t;
        leasetest_sleep_ms(2);
    }
    IDM_ASSERT_RC(rc, IDM_ELEASE);
    idm_lease_status_get(l, &st);
    /* No renewal can work without a quorum (the mark's txn cannot commit):
     * the deadline is a renewal's sent before, and no mint started past it. */
    CHECK(st.deadline <= t_lost + ttl_ns - margin_ns, "deadline %lld ms into the quorum loss",
          LL((st.deadline - t_lost) / 1000000));
    CHECK(last_ok_start < st.deadline + LEASETEST_COARSE_NS,
          "a mint started %lld ms past the deadline", LL((last_ok_start - st.deadline) / 1000000));
    assert_int_equal(st.lost, 0);
    CHECK(st.last_error != 0 && st.last_error != IDM_ELEASE, "%s", idm_err_name(st.last_error));
    for (int m = 1; m <= 2; m++) {
        snprintf(args, sizeof args, "restart '%s' %d", g_cdir, m);
        assert_int_equal(srv(NULL, 0, args), 0);
    }
    leasetest_wait_status(l, &st, false, st.renewals);
    printf("  E10: quorum back; the claim %s\n", st.lost ? "was reported lost" : "renewed");
    if (!st.lost) {
        CHECK(st.last_error == 0, "%s", idm_err_name(st.last_error));
        leasetest_mint_n(g, &iv, 100);
    } else {
        assert_int_equal(st.last_error, IDM_ELEASE);
    }
    idm_test_check_ids(&iv);
    idm_lease_close(l);
    idm_snowflake_close(g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* Member n's endpoint (1-based) out of the cluster's list. */
static void member_ep(int n, char *out, size_t size)
{
    const char *p = g_ceps;
    for (int i = 1; i < n && p != NULL; i++) {
        p = strchr(p, ',');
        if (p != NULL)
            p++;
    }
    assert_non_null(p);
    snprintf(out, size, "%.*s", (int)strcspn(p, ","), p);
}

/* E9: a holder pinned to one member (its only endpoint), the leader, which
 * is stopped with SIGSTOP while the other two elect a new leader. The
 * holder times out and stops at its deadline, that of a renewal sent before
 * the stop, with no word from etcd. The member stays stopped until a second
 * holder, through the other two members, has claimed the only id: the new
 * leader extended the lease once (when it took over) and then expired it,
 * since no keepalive reaches it. After SIGCONT the first holder's renewal
 * finds the claim lost (the lease is gone, the key bound to another), and
 * it never mints again; the second holder started above every id the first
 * minted. No id twice. */
static void e9_pinned_member_stopped(void **unused)
{
    char args[4400], out[32], ep[64], others[160], *url1, *url2;
    idm_lease_opts o1, o2;
    idm_lease *l1, *l2 = NULL;
    idm_layout *layout;
    idm_snowflake *g1, *g2;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    leasetest_minter m;
    uint64_t id;
    int leader, rc = IDM_EBUSY, tries = 0;
    int64_t t_stop, t_claim, ttl_ns = INT64_C(2000) * 1000000, margin_ns = INT64_C(400) * 1000000;
    pid_t pid;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    snprintf(args, sizeof args, "leader '%s'", g_cdir);
    assert_int_equal(srv(out, sizeof out, args), 0);
    leader = atoi(out);
    assert_true(leader >= 1 && leader <= 3);
    member_ep(leader, ep, sizeof ep);
    others[0] = '\0';
    for (int n = 1; n <= 3; n++) {
        char e[64];
        if (n == leader)
            continue;
        member_ep(n, e, sizeof e);
        snprintf(others + strlen(others), sizeof others - strlen(others), "%s%s",
                 others[0] != '\0' ? "," : "", e);
    }
    url1 = url_for(ep, "e9");
    url2 = url_for(others, "e9");
    lease_opts(&o1, url1, 1); /* one id: the second holder can only take the first's */
    o1.ttl_ms = 2000;         /* margin 400 ms */
    lease_opts(&o2, url2, 1);
    o2.ttl_ms = 2000;
    g1 = leasetest_claim(&l1, &o1, layout);
    leasetest_minter_start(&m, g1, l1);
    leasetest_minter_wait_minted(&m, 1);
    leasetest_wait_status(l1, &st, false, 1); /* a keeper renewal (the claim was the first) */

    pid = member_pid(g_cdir, leader);
    assert_true(pid > 0);
    t_stop = leasetest_freeze(pid);
    CHECK(leasetest_minter_wait_refused(&m, LEASETEST_HUNG_MS),
          "minted on with its only member stopped");
    assert_int_equal(m.first_rc, IDM_ELEASE);
    printf("  E9: leader %d stopped; its client's deadline was %lld ms later\n", leader,
           LL((m.deadline_at_refusal - t_stop) / 1000000));
    CHECK(m.deadline_at_refusal <= t_stop + ttl_ns - margin_ns,
          "deadline %lld ms after the stop", LL((m.deadline_at_refusal - t_stop) / 1000000));
    CHECK(m.last_ok_before_ns < m.deadline_at_refusal + LEASETEST_COARSE_NS,
          "minted %lld ms past D", LL((m.last_ok_before_ns - m.deadline_at_refusal) / 1000000));
    idm_lease_status_get(l1, &st);
    assert_int_equal(st.lost, 0); /* etcd said nothing */

    /* The second holder tries for the id through the other two until the
     * new leader has expired the first's lease (the member stays stopped
     * all along); the bound only ends a hung test. */
    while (leasetest_mono_ns() - t_stop < INT64_C(60000) * 1000000) {
        tries++;
        rc = idm_lease_open(&l2, &o2);
        if (rc != IDM_EBUSY && rc != IDM_EIO)
            break;
        leasetest_sleep_ms(100);
    }
    IDM_ASSERT_OK(rc);
    t_claim = leasetest_mono_ns();
    printf("  E9: the id taken %lld ms after the stop (%d tries)\n",
           LL((t_claim - t_stop) / 1000000), tries);
    assert_int_equal(idm_lease_worker(l2), idm_lease_worker(l1));
    CHECK(m.last_ok_before_ns < t_claim, "the first holder minted after the second's claim");
    g2 = leasetest_gen_after_loss(layout, l2);
    IDM_ASSERT_OK(idm_lease_attach(l2, g2));
    leasetest_mint_n(g2, &iv, 500);

    leasetest_thaw(pid);
    leasetest_wait_status(l1, &st, true, 0);
    CHECK(st.lost, "both holders hold id %u after SIGCONT (error %s)",
          (unsigned)idm_lease_worker(l1), idm_err_name(st.last_error));
    assert_int_equal(st.last_error, IDM_ELEASE);
    IDM_ASSERT_RC(idm_snowflake_next(g1, &id), IDM_ELEASE);
    leasetest_minter_stop(&m);
    printf("  E9: after SIGCONT the claim was reported lost; %d ids minted after the "
           "deadline\n",
           atomic_load(&m.after_refusal));
    CHECK(atomic_load(&m.after_refusal) == 0, "%d ids minted after the deadline",
          atomic_load(&m.after_refusal));
    CHECK(m.iv.n > 0, "nothing minted");
    /* One worker id: the second holder's ids above every one of the first's. */
    CHECK(idm_lease_mark(l2) >= leasetest_time_of(layout, m.iv.v[m.iv.n - 1]),
          "mark %lld below %lld", LL(idm_lease_mark(l2)),
          LL(leasetest_time_of(layout, m.iv.v[m.iv.n - 1])));
    for (size_t i = 0; i < iv.n; i++)
        idm_test_idvec_push(&m.iv, iv.v[i]);
    leasetest_mint_n(g2, &m.iv, 500);
    idm_test_check_ids(&m.iv);
    IDM_ASSERT_RC(idm_lease_close(l1), 0); /* lost: nothing to release */
    idm_snowflake_close(g1);
    IDM_ASSERT_OK(idm_lease_close(l2));
    idm_snowflake_close(g2);
    idm_test_idvec_free(&m.iv);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url1);
    free(url2);
}

int main(void)
{
    const struct CMUnitTest one[] = {
        cmocka_unit_test(bad_urls),
        cmocka_unit_test(e15_garbage_answers),
        cmocka_unit_test(e16_lease_id_edges),
        cmocka_unit_test(endpoint_failover),
        cmocka_unit_test(claim_renew_release),
        cmocka_unit_test(e1_racing_claimants),
        cmocka_unit_test(e14_no_free_worker_id),
        cmocka_unit_test(e14_all_1024_taken),
        cmocka_unit_test(scope_refuses_another_field_epoch_or_layout),
        cmocka_unit_test(scope_racing_first_claimants),
        cmocka_unit_test(scope_changed_during_claim_refused),
        cmocka_unit_test(late_mark_write_never_lowers),
        cmocka_unit_test(e3_lease_revoked),
        cmocka_unit_test(e4_key_deleted),
        cmocka_unit_test(e12_holder_killed),
        cmocka_unit_test(e13_release_frees_at_once),
        cmocka_unit_test(e16_big_lease_id),
        cmocka_unit_test(e17_granted_ttl_used),
        cmocka_unit_test(skewed_handoff),
        cmocka_unit_test(e6_answers_lost),
        cmocka_unit_test(e5_partition),
        cmocka_unit_test(e7_slow_answers),
        cmocka_unit_test(e2_frozen_etcd),
        cmocka_unit_test(e11_etcd_restarted),
        cmocka_unit_test(e18_wiped_cluster), /* last: the cluster changes */
    };
    const struct CMUnitTest three[] = {
        cmocka_unit_test(e8_leader_killed),
        cmocka_unit_test(e10_quorum_lost),
        cmocka_unit_test(e9_pinned_member_stopped),
    };
    int failed;
    signal(SIGPIPE, SIG_IGN);
    atexit(stop_all);
    failed = cmocka_run_group_tests_name("etcd, one member", one, setup_one, teardown_one);
    failed += cmocka_run_group_tests_name("etcd, three members", three, setup_three,
                                          teardown_three);
    return failed;
}
