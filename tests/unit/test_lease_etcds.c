/* SPDX-License-Identifier: MIT */
/*
 * Worker-id leases over etcds:// (etcd's HTTP gateway over TLS, with etcd
 * authentication), against one real etcd this program starts with
 * scripts/etcd-test-server.sh start-tls: clients over HTTPS only, a client
 * certificate required, authentication on with JWT tokens that expire 2 s
 * after they are made (whatever their use), a user "idm" with a role that
 * may read and write /idmint/ and a user "norole" with none. Certificates
 * come from scripts/etcd-test-certs.sh (a CA, a server certificate for the
 * IP address 127.0.0.1 only, a client certificate, an unrelated CA and a
 * client certificate it signed), made in a temporary directory.
 *
 * Fault rows: E20 a token that expires mid-lease, E21 a server certificate
 * from a CA the client does not trust, E22 a server certificate that does
 * not name the host, E23 no client certificate (or one from another CA),
 * E24 a wrong password, E25 a user without the role, E26 an https endpoint
 * answered in plain HTTP, E27 bad options; and in every error text of these
 * tests, never the password nor a token.
 */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <idmint/lease.h>

#include "testutil.h"
#include "leasetest.h"

/* The password of user "idm": a quote and a backslash, so that the request
 * that carries it must escape them. */
#define IDM_PASSWORD "s3cret-\"pw\\-7Qx"
#define NOROLE_PASSWORD "n0role-Pw-4Kz"
/* Every JWT (etcd's tokens here) starts with the base64 of '{"alg":'. */
#define JWT_START "eyJ"

static char g_srv[4096];   /* scripts/etcd-test-server.sh */
static char g_certs_sh[4096];
static char *g_tmp;        /* certificates, password files */
static char *g_dir;        /* the server's directory */
static char g_ep[64];      /* its endpoint, 127.0.0.1:port */
static char *g_certs;      /* the certificates' directory */
static char *g_pw;         /* idm's password file */
static char *g_nopw;       /* norole's */
static char *g_badpw;      /* a wrong password for idm */

/* ------------------------------------------------------------- helpers */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0600), 0);
}

/* The detail of a failed call: never the password, never a token. */
static void no_secret(const char *detail)
{
    CHECK(strstr(detail, IDM_PASSWORD) == NULL && strstr(detail, "s3cret") == NULL &&
              strstr(detail, NOROLE_PASSWORD) == NULL && strstr(detail, "hunter2") == NULL,
          "a password in the detail: %s", detail);
    CHECK(strstr(detail, JWT_START) == NULL, "a token in the detail: %s", detail);
}

/* "etcds://<ep>/idmint/<name>?" and then the options opts (printf). */
__attribute__((format(printf, 3, 4))) static char *url_of(const char *ep, const char *name,
                                                          const char *fmt, ...)
{
    char opts[4096], *u;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(opts, sizeof opts, fmt, ap);
    va_end(ap);
    u = malloc(strlen(ep) + strlen(name) + strlen(opts) + 32);
    assert_non_null(u);
    sprintf(u, "etcds://%s/idmint/%s%s%s", ep, name, opts[0] != '\0' ? "?" : "", opts);
    return u;
}

/* The URL that works: the CA, the client certificate, user idm. */
static char *good_url(const char *name)
{
    return url_of(g_ep, name,
                  "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem&user=idm&"
                  "password-file=%s",
                  g_certs, g_certs, g_certs, g_pw);
}

static void lease_opts(idm_lease_opts *o, const char *url)
{
    leasetest_opts(o, url, 8, 3000); /* renewals every second */
}

/* idm_lease_open on url must fail with rc, its detail holding each of the
 * NULL-ended texts (and no secret). */
static void open_fails(const char *url, int rc, ...)
{
    idm_lease_opts o;
    idm_lease *l = NULL;
    char detail[256];
    const char *want;
    va_list ap;
    lease_opts(&o, url);
    IDM_ASSERT_RC(idm_lease_open(&l, &o), rc);
    assert_null(l);
    snprintf(detail, sizeof detail, "%s", idm_error_detail());
    no_secret(detail);
    va_start(ap, rc);
    while ((want = va_arg(ap, const char *)) != NULL)
        CHECK(strstr(detail, want) != NULL, "'%s' not in the detail: %s", want, detail);
    va_end(ap);
}

/* ------------------------------------------------------------- servers */

/* The test server script with args (a printf format). */
#define srv(out, n, ...) leasetest_script(out, n, "IDM_ETCD_OWNER", g_srv, __VA_ARGS__)

static void stop_all(void)
{
    if (g_dir != NULL) {
        srv(NULL, 0, "stop '%s'", g_dir);
        idm_test_rmtree(g_dir);
        free(g_dir);
        g_dir = NULL;
    }
    if (g_tmp != NULL) {
        idm_test_rmtree(g_tmp);
        free(g_tmp);
        g_tmp = NULL;
    }
    free(g_certs);
    free(g_pw);
    free(g_nopw);
    free(g_badpw);
    g_certs = g_pw = g_nopw = g_badpw = NULL;
}

static int setup(void **unused)
{
    char out[512];
    (void)unused;
    if (leasetest_script_path(g_srv, sizeof g_srv, "test_lease_etcds",
                              "etcd-test-server.sh") != 0 ||
        leasetest_script_path(g_certs_sh, sizeof g_certs_sh, "test_lease_etcds",
                              "etcd-test-certs.sh") != 0)
        return -1;
    g_tmp = idm_test_tmpdir();
    g_dir = idm_test_tmpdir();
    g_certs = idm_test_path(g_tmp, "certs");
    g_pw = idm_test_path(g_tmp, "idm.pw");
    g_nopw = idm_test_path(g_tmp, "norole.pw");
    g_badpw = idm_test_path(g_tmp, "bad.pw");
    if (mkdir(g_certs, 0700) != 0 ||
        leasetest_run_out(out, sizeof out, "bash '%s' '%s'", g_certs_sh, g_certs) != 0) {
        fprintf(stderr, "test_lease_etcds: cannot make certificates (is openssl installed?)\n");
        return -1;
    }
    write_file(g_pw, IDM_PASSWORD "\n");
    write_file(g_nopw, NOROLE_PASSWORD "\r\n");
    write_file(g_badpw, "not-" NOROLE_PASSWORD "\n");
    if (srv(g_ep, sizeof g_ep, "start-tls '%s' '%s' auth 2s", g_dir, g_certs) != 0 ||
        g_ep[0] == '\0' || strchr(g_ep, ' ') != NULL) {
        fprintf(stderr, "test_lease_etcds: cannot start etcd with TLS in %s (is etcd-server "
                        "installed?)\n",
                g_dir);
        return -1;
    }
    if (srv(NULL, 0, "user '%s' idm '%s' /idmint/", g_dir, g_pw) != 0 ||
        srv(NULL, 0, "user '%s' norole '%s'", g_dir, g_nopw) != 0) {
        fprintf(stderr, "test_lease_etcds: cannot add the users\n");
        return -1;
    }
    return 0;
}

static int teardown(void **unused)
{
    (void)unused;
    stop_all();
    return 0;
}

/* ------------------------------------------------- a plain HTTP server */

/* Answers every connection with a plain HTTP 200, and keeps the first
 * byte each connection sent (a TLS handshake starts with 0x16). */
typedef struct plain {
    int lfd, port;
    pthread_t th;
    atomic_int stop;
    atomic_int conns;
    atomic_int non_tls; /* connections whose first byte was no TLS record */
} plain;

static void *plain_main(void *arg)
{
    plain *p = arg;
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    while (!atomic_load(&p->stop)) {
        struct pollfd pf = {p->lfd, POLLIN, 0};
        unsigned char first = 0;
        int c;
        if (poll(&pf, 1, 50) <= 0)
            continue;
        c = accept(p->lfd, NULL, NULL);
        if (c < 0)
            continue;
        {
            struct pollfd q = {c, POLLIN, 0};
            if (poll(&q, 1, 2000) > 0 && recv(c, &first, 1, 0) == 1 && first != 0x16)
                atomic_fetch_add(&p->non_tls, 1);
        }
        atomic_fetch_add(&p->conns, 1);
        (void)send(c, answer, sizeof answer - 1, MSG_NOSIGNAL);
        close(c);
    }
    return NULL;
}

static void plain_start(plain *p)
{
    memset(p, 0, sizeof *p);
    p->lfd = leasetest_listen(&p->port);
    assert_int_equal(pthread_create(&p->th, NULL, plain_main, p), 0);
}

static void plain_stop(plain *p)
{
    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
    close(p->lfd);
}

/* --------------------------------------------------------------- tests */

/* E27: bad options are refused at open, naming the option, never showing a
 * value (a password put in the URL by mistake stays out of the detail). */
static void e27_bad_options(void **unused)
{
    char *u;
    char dir_opt[4200];
    (void)unused;
    static const struct {
        const char *opts, *want;
    } cases[] = {
        {"x=1", "unknown option 'x'"},
        {"password=hunter2", "unknown option 'password'"},
        {"user=idm&password=hunter2", "unknown option 'password'"},
        {"cacert=", "option cacert: the value is empty"},
        {"cacert", "option cacert: no value"},
        {"&", "an empty option"},
        {"cacert=/nonexistent/ca.pem", "option cacert: cannot read '/nonexistent/ca.pem'"},
        {"cacert=%zz", "option cacert: a bad %-escape"},
        {"user=idm", "option user without password-file"},
        {"password-file=/nonexistent", "option password-file without user"},
        {"key=/nonexistent", "option key without cert"},
        {"user=idm&password-file=/dev/null", "'/dev/null' is a character device, not a regular"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        u = url_of(g_ep, "opts", "%s", cases[i].opts);
        open_fails(u, IDM_EINVAL, cases[i].want, NULL);
        free(u);
    }
    /* Given twice; a directory; a FIFO; an empty password file. */
    u = url_of(g_ep, "opts", "cacert=%s/ca.pem&cacert=%s/ca.pem", g_certs, g_certs);
    open_fails(u, IDM_EINVAL, "option cacert given twice", NULL);
    free(u);
    snprintf(dir_opt, sizeof dir_opt, "'%s' is a directory, not a regular file", g_certs);
    u = url_of(g_ep, "opts", "cert=%s&key=%s/client-key.pem", g_certs, g_certs);
    open_fails(u, IDM_EINVAL, "option cert:", dir_opt, NULL);
    free(u);
    {
        char *fifo = idm_test_path(g_tmp, "fifo.pw"), *empty = idm_test_path(g_tmp, "empty.pw");
        assert_int_equal(mkfifo(fifo, 0600), 0);
        write_file(empty, "\nsecond line\n");
        u = url_of(g_ep, "opts", "user=idm&password-file=%s", fifo);
        open_fails(u, IDM_EINVAL, "option password-file:", "is a FIFO, not a regular file", NULL);
        free(u);
        u = url_of(g_ep, "opts", "user=idm&password-file=%s", empty);
        open_fails(u, IDM_EINVAL, "option password-file: the first line", "is empty", NULL);
        free(u);
        unlink(fifo);
        unlink(empty);
        free(fifo);
        free(empty);
    }
    /* The URL itself, shown without its options. */
    open_fails("etcds://127.0.0.1:1?password=hunter2", IDM_EINVAL, "no /prefix",
               "'etcds://127.0.0.1:1'", NULL);
    open_fails("etcds://127.0.0.1:0/p?user=x", IDM_EINVAL, "an endpoint is not host:port", NULL);
}

/* A claim over TLS with authentication: mints, renews, lists, releases; the
 * next holder starts above the last id; each claim's generation (the worker
 * key's create revision) rises. */
static void claim_renew_release(void **unused)
{
    char *url = good_url("basics");
    idm_lease_opts o;
    idm_lease *a, *b, *c;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_lease_entry *e;
    size_t n;
    idm_test_idvec iv = {0};
    uint64_t ga, gb, gc, last;
    int64_t until;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    lease_opts(&o, url);
    IDM_ASSERT_OK(idm_lease_open(&a, &o));
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(a), 0);
    assert_int_equal(idm_lease_worker(b), 1);
    ga = idm_lease_generation(a);
    gb = idm_lease_generation(b);
    CHECK(ga > 0 && gb > ga, "generations %llu %llu", ULL(ga), ULL(gb));

    g = leasetest_gen(layout, a, NULL);
    IDM_ASSERT_OK(idm_lease_attach(a, g));
    leasetest_mint_n(g, &iv, 5000);
    until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    do {
        idm_lease_status_get(a, &st);
        if (st.renewals >= 3 || st.lost)
            break;
        leasetest_sleep_ms(20);
    } while (leasetest_mono_ms() < until);
    CHECK(st.renewals >= 3 && !st.lost && st.last_error == 0,
          "renewals %llu lost %d last_error %d", ULL(st.renewals), (int)st.lost, st.last_error);
    leasetest_mint_n(g, &iv, 1000);

    IDM_ASSERT_OK(idm_lease_list(url, 8, &e, &n));
    assert_int_equal(n, 2);
    assert_int_equal(e[0].held, 1);
    assert_string_equal(e[0].holder, "test");
    CHECK(e[0].mark_ms >= leasetest_time_of(layout, iv.v[iv.n - 1]), "mark %lld",
          LL(e[0].mark_ms));
    free(e);

    last = iv.v[iv.n - 1];
    IDM_ASSERT_OK(idm_lease_close(a));
    idm_snowflake_close(g);
    IDM_ASSERT_OK(idm_lease_open(&c, &o));
    assert_int_equal(idm_lease_worker(c), 0);
    assert_int_equal(idm_lease_mark(c), leasetest_time_of(layout, last));
    gc = idm_lease_generation(c);
    CHECK(gc > gb, "generation %llu after %llu", ULL(gc), ULL(gb));
    leasetest_successor(layout, c, false, &iv, 1000, NULL, NULL);
    IDM_ASSERT_OK(idm_lease_close(b));
    IDM_ASSERT_OK(idm_lease_list(url, 8, &e, &n));
    assert_int_equal(n, 2);
    assert_int_equal(e[0].held, 0);
    assert_int_equal(e[1].held, 0);
    free(e);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* A token of user idm, made now by curl (the test's own), into tok. */
static void curl_token(char *tok, size_t n)
{
    char out[4096];
    const char *p, *q;
    assert_int_equal(leasetest_run_out(out, sizeof out,
                             "curl -s --cacert '%s/ca.pem' --cert '%s/client.pem' --key "
                             "'%s/client-key.pem' --data-binary @- "
                             "https://%s/v3/auth/authenticate <<'EOF'\n"
                             "{\"name\":\"idm\",\"password\":\"s3cret-\\\"pw\\\\-7Qx\"}\nEOF",
                             g_certs, g_certs, g_certs, g_ep),
                     0);
    p = strstr(out, "\"token\":\"");
    CHECK(p != NULL, "no token in %s", out);
    p += 9;
    q = strchr(p, '"');
    assert_non_null(q);
    assert_true((size_t)(q - p) < n);
    memcpy(tok, p, (size_t)(q - p));
    tok[q - p] = '\0';
}

/* The HTTP status etcd answers a range under /idmint/ with token tok. */
static int status_with_token(const char *tok)
{
    char out[256];
    leasetest_run_out(out, sizeof out,
            "curl -s -o /dev/null -w '%%{http_code}' --cacert '%s/ca.pem' --cert "
            "'%s/client.pem' --key '%s/client-key.pem' -H 'Authorization: %s' -d "
            "'{\"key\":\"L2lkbWludC94\"}' https://%s/v3/kv/range",
            g_certs, g_certs, g_certs, tok, g_ep);
    return atoi(out);
}

/* E20: etcd's tokens expire 2 s after they are made; a holder with a 3 s
 * TTL renews every second for 6 s: every renewal works (the token is made
 * anew when etcd refuses it, and the refused request sent again), the
 * claim is never lost, and minting never stops. A token made at the start
 * is refused by then: the holder's first token must have been replaced. */
static void e20_token_expires_mid_lease(void **unused)
{
    char *url = good_url("e20");
    char tok[2048];
    idm_lease_opts o;
    idm_lease *l;
    idm_layout *layout;
    idm_snowflake *g;
    idm_lease_status st;
    idm_test_idvec iv = {0};
    int64_t end;
    (void)unused;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    curl_token(tok, sizeof tok);
    assert_int_equal(status_with_token(tok), 200);
    lease_opts(&o, url);
    g = leasetest_claim(&l, &o, layout);
    end = leasetest_mono_ms() + 6000;
    while (leasetest_mono_ms() < end) {
        leasetest_mint_n(g, &iv, 50); /* fails the test if minting stops */
        leasetest_sleep_ms(50);
    }
    idm_lease_status_get(l, &st);
    CHECK(st.renewals >= 5 && st.failures == 0 && st.last_error == 0 && !st.lost,
          "renewals %llu failures %llu last_error %d lost %d", ULL(st.renewals),
          ULL(st.failures), st.last_error, (int)st.lost);
    /* Tokens do expire: the one made at the start is refused now. */
    assert_int_equal(status_with_token(tok), 401);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}

/* E21: the server's certificate, checked against an unrelated CA: refused,
 * naming the endpoint; and none given (the system's CAs) is refused too. */
static void e21_wrong_ca(void **unused)
{
    char *u;
    (void)unused;
    u = url_of(g_ep, "e21", "cacert=%s/other-ca.pem&cert=%s/client.pem&key=%s/client-key.pem",
               g_certs, g_certs, g_certs);
    open_fails(u, IDM_EIO, g_ep, "SSL certificate problem", "certificate was refused", NULL);
    free(u);
    u = url_of(g_ep, "e21", "cert=%s/client.pem&key=%s/client-key.pem", g_certs, g_certs);
    open_fails(u, IDM_EIO, g_ep, "SSL certificate problem", "certificate was refused", NULL);
    free(u);
}

/* E22: the server's certificate names 127.0.0.1 only: asked for as
 * "localhost", it is refused. */
static void e22_wrong_host_name(void **unused)
{
    char ep[80], *u;
    (void)unused;
    snprintf(ep, sizeof ep, "localhost%s", strchr(g_ep, ':'));
    u = url_of(ep, "e22", "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem", g_certs,
               g_certs, g_certs);
    open_fails(u, IDM_EIO, ep, "host name 'localhost'", "certificate was refused", NULL);
    free(u);
}

/* E23: the server requires a client certificate: none, or one signed by a
 * CA it does not trust, fails the claim with the hint. */
static void e23_client_certificate(void **unused)
{
    char *u;
    (void)unused;
    u = url_of(g_ep, "e23", "cacert=%s/ca.pem&user=idm&password-file=%s", g_certs, g_pw);
    open_fails(u, IDM_EIO, g_ep, "(TLS: a client certificate, cert= and key=, may be required)",
               NULL);
    free(u);
    u = url_of(g_ep, "e23", "cacert=%s/ca.pem&cert=%s/other-client.pem&key=%s/other-client-key.pem",
               g_certs, g_certs, g_certs);
    open_fails(u, IDM_EIO, g_ep, "(TLS: the server may have refused the client certificate)", NULL);
    free(u);
}

/* E24: a wrong password (and an unknown user) fails the claim naming the
 * user and the cause, never the password. */
static void e24_wrong_password(void **unused)
{
    char *u;
    (void)unused;
    u = url_of(g_ep, "e24",
               "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem&user=idm&"
               "password-file=%s",
               g_certs, g_certs, g_certs, g_badpw);
    open_fails(u, IDM_EIO, g_ep, "authentication as user 'idm' failed: wrong password", NULL);
    free(u);
    u = url_of(g_ep, "e24",
               "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem&user=nobody&"
               "password-file=%s",
               g_certs, g_certs, g_certs, g_pw);
    open_fails(u, IDM_EIO, "authentication as user 'nobody' failed", NULL);
    free(u);
}

/* E25: a user without a role on the prefix is refused by etcd: the claim
 * fails naming the user and the prefix; and no user at all, on a server
 * that wants one, says so. */
static void e25_user_without_role(void **unused)
{
    char *u;
    (void)unused;
    u = url_of(g_ep, "e25",
               "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem&user=norole&"
               "password-file=%s",
               g_certs, g_certs, g_certs, g_nopw);
    open_fails(u, IDM_EIO, "permission denied to user 'norole'", "/idmint/e25/", NULL);
    free(u);
    u = url_of(g_ep, "e25", "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem",
               g_certs, g_certs, g_certs);
    open_fails(u, IDM_EIO, "etcd asks for authentication", NULL);
    free(u);
}

/* E26: an etcds:// endpoint that answers in plain HTTP fails the claim;
 * nothing but TLS was ever sent to it (no fallback to plain HTTP). */
static void e26_plain_http_endpoint(void **unused)
{
    plain p;
    char ep[64], *u;
    (void)unused;
    plain_start(&p);
    snprintf(ep, sizeof ep, "127.0.0.1:%d", p.port);
    /* Without authentication (the claim's first txn is the first
     * request), then with it (authentication is). */
    u = url_of(ep, "e26", "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem", g_certs,
               g_certs, g_certs);
    open_fails(u, IDM_EIO, ep, "(TLS: the server does not speak TLS there)", NULL);
    free(u);
    u = url_of(ep, "e26", "cacert=%s/ca.pem&cert=%s/client.pem&key=%s/client-key.pem&user=idm&"
                          "password-file=%s",
               g_certs, g_certs, g_certs, g_pw);
    open_fails(u, IDM_EIO, ep, "(TLS: the server does not speak TLS there)", NULL);
    plain_stop(&p);
    CHECK(atomic_load(&p.conns) >= 1 && atomic_load(&p.non_tls) == 0,
          "%d connections, %d not starting with a TLS record", atomic_load(&p.conns),
          atomic_load(&p.non_tls));
    free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(e27_bad_options),
        cmocka_unit_test(claim_renew_release),
        cmocka_unit_test(e21_wrong_ca),
        cmocka_unit_test(e22_wrong_host_name),
        cmocka_unit_test(e23_client_certificate),
        cmocka_unit_test(e24_wrong_password),
        cmocka_unit_test(e25_user_without_role),
        cmocka_unit_test(e26_plain_http_endpoint),
        cmocka_unit_test(e20_token_expires_mid_lease),
    };
    signal(SIGPIPE, SIG_IGN);
    atexit(stop_all);
    return cmocka_run_group_tests_name("etcds: TLS and authentication", tests, setup, teardown);
}
