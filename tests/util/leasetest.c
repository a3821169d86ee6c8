/* SPDX-License-Identifier: MIT */
/* What the lease tests of every coordinator share: see leasetest.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "leasetest.h"

/* A process stopped with SIGSTOP, to resume. */
static atomic_int g_frozen;

int64_t leasetest_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t leasetest_mono_ms(void)
{
    return leasetest_mono_ns() / 1000000;
}

idm_unix_ms leasetest_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (idm_unix_ms)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void leasetest_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

char *leasetest_url_for(const char *scheme, const char *eps, const char *name)
{
    char *u = malloc(strlen(scheme) + strlen(eps) + strlen(name) + 32);
    assert_non_null(u);
    sprintf(u, "%s://%s/idmint/%s", scheme, eps, name);
    return u;
}

void leasetest_opts(idm_lease_opts *o, const char *url, uint32_t max, uint32_t ttl_ms)
{
    idm_lease_opts_init(o);
    o->url = url;
    o->max_workers = max;
    o->ttl_ms = ttl_ms;
    o->holder = "test";
}

idm_snowflake *leasetest_claim(idm_lease **l, const idm_lease_opts *o, idm_layout *layout)
{
    idm_snowflake *g;
    IDM_ASSERT_OK(idm_lease_open(l, o));
    g = leasetest_gen(layout, *l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(*l, g));
    return g;
}

void leasetest_successor(idm_layout *layout, idm_lease *l, bool after_loss, idm_test_idvec *iv,
                         int n, idm_lease *lost, idm_snowflake *lost_g)
{
    idm_snowflake *g =
        after_loss ? leasetest_gen_after_loss(layout, l) : leasetest_gen(layout, l, NULL);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    leasetest_mint_n(g, iv, n);
    idm_test_check_ids(iv);
    if (lost != NULL) {
        IDM_ASSERT_RC(idm_lease_close(lost), 0); /* lost: nothing to release */
        idm_snowflake_close(lost_g);
    }
    IDM_ASSERT_OK(idm_lease_close(l));
    idm_snowflake_close(g);
}

void leasetest_mint_n(idm_snowflake *g, idm_test_idvec *iv, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t id;
        IDM_ASSERT_OK(idm_snowflake_next(g, &id));
        idm_test_idvec_push(iv, id);
    }
}

void leasetest_no_duplicates(const idm_test_idvec *iv)
{
    uint64_t *copy = malloc((iv->n + 1) * sizeof *copy);
    assert_non_null(copy);
    memcpy(copy, iv->v, iv->n * sizeof *copy);
    CHECK(idm_test_count_duplicates(copy, iv->n) == 0, "%zu ids, some minted twice", iv->n);
    free(copy);
}

idm_snowflake *leasetest_gen_after_loss(idm_layout *layout, idm_lease *l)
{
    idm_unix_ms mark = idm_lease_mark(l);
    for (;;) {
        idm_unix_ms now = leasetest_wall_ms();
        idm_snowflake *g;
        int rc;
        if (now > mark + 1)
            break;
        CHECK(mark - now < 10000, "mark %lld ms ahead", LL(mark - now));
        g = leasetest_gen_rc(layout, l, NULL, &rc);
        if (now < mark - 50) {
            IDM_ASSERT_RC(rc, IDM_ECLOCKBACK);
            assert_null(g);
        } else if (rc == 0) {
            idm_snowflake_close(g);
        }
        leasetest_sleep_ms(mark + 2 - now);
    }
    return leasetest_gen(layout, l, NULL);
}

void leasetest_wait_status(idm_lease *l, idm_lease_status *st, bool want_lost,
                           uint64_t renewals)
{
    int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    do {
        idm_lease_status_get(l, st);
        if (want_lost ? st->lost != 0
                      : (st->lost != 0 || (st->renewals > renewals && st->last_error == 0)))
            return;
        leasetest_sleep_ms(10);
    } while (leasetest_mono_ms() < until);
}

void leasetest_wait_failure(idm_lease *l, idm_lease_status *st)
{
    uint64_t failures = st->failures;
    int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    do {
        leasetest_sleep_ms(10);
        idm_lease_status_get(l, st);
    } while (st->failures == failures && leasetest_mono_ms() < until);
    CHECK(st->failures > failures, "no renewal failed");
}

idm_snowflake *leasetest_clocked_claim(idm_lease **l, idm_lease_opts *o, idm_layout *layout,
                                      idm_manual_clock **mc, idm_lease_status *st,
                                      idm_test_idvec *iv, int64_t *at)
{
    const idm_clock *ck;
    idm_snowflake *g;
    int rc;
    IDM_ASSERT_OK(idm_manual_clock_new(mc, leasetest_wall_ms(), true));
    ck = idm_manual_clock_clock(*mc);
    o->clock = ck;
    IDM_ASSERT_OK(idm_lease_open(l, o));
    g = leasetest_gen_rc(layout, *l, ck, &rc);
    IDM_ASSERT_OK(rc);
    IDM_ASSERT_OK(idm_lease_attach(*l, g));
    leasetest_mint_n(g, iv, 100);
    *at = ck->mono_ns(ck->ctx); /* T: every send so far, and from now on */
    leasetest_wait_status(*l, st, false, 1); /* a keeper renewal (the claim was the first) */
    CHECK(st->renewals >= 2 && st->last_error == 0, "renewals %llu, %s", ULL(st->renewals),
          idm_err_name(st->last_error));
    return g;
}

void leasetest_deadline_exact(idm_lease *l, idm_snowflake *g, idm_manual_clock *mc, int64_t at,
                              int64_t ttl_ms, int64_t margin_ms, idm_lease_status *st,
                              idm_test_idvec *iv)
{
    const idm_clock *ck = idm_manual_clock_clock(mc);
    uint64_t id;
    leasetest_wait_failure(l, st);
    CHECK(st->last_error != 0 && st->last_error != IDM_ELEASE && !st->lost, "%s, lost %d",
          idm_err_name(st->last_error), st->lost);
    CHECK(st->deadline == at + (ttl_ms - margin_ms) * 1000000,
          "deadline T + %lld ms, not T + TTL - margin", LL((st->deadline - at) / 1000000));
    idm_manual_clock_advance_ns(mc, st->deadline - 1 - ck->mono_ns(ck->ctx));
    IDM_ASSERT_OK(idm_snowflake_next(g, &id)); /* 1 ns before the deadline */
    idm_test_idvec_push(iv, id);
    idm_manual_clock_advance_ns(mc, 1);
    IDM_ASSERT_RC(idm_snowflake_next(g, &id), IDM_ELEASE); /* at it */
}

/* ------------------------------------------------- a stopped process */

int64_t leasetest_freeze(pid_t pid)
{
    char path[64];
    assert_int_equal(kill(pid, SIGSTOP), 0);
    atomic_store(&g_frozen, (int)pid);
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    for (int i = 0; i < 10000; i++) {
        char buf[512];
        const char *p;
        FILE *f = fopen(path, "r");
        size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f != NULL)
            fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (p != NULL && (p[2] == 'T' || p[2] == 't'))
            return leasetest_mono_ns();
        leasetest_sleep_ms(1);
    }
    fail_msg("process %ld did not stop", (long)pid);
    return 0;
}

void leasetest_thaw(pid_t pid)
{
    assert_int_equal(kill(pid, SIGCONT), 0);
    atomic_store(&g_frozen, 0);
}

void leasetest_thaw_any(void)
{
    pid_t frozen = (pid_t)atomic_exchange(&g_frozen, 0);
    if (frozen > 0)
        kill(frozen, SIGCONT);
}

/* ---------------------------------------------------- a minting thread */

static void *minter_main(void *arg)
{
    leasetest_minter *m = arg;
    bool refusing = false;
    uint64_t renewals_then = 0;
    while (!atomic_load(&m->stop)) {
        idm_lease_status st;
        uint64_t id;
        int64_t t = leasetest_mono_ns();
        int rc = idm_snowflake_next(m->g, &id);
        if (rc == 0) {
            idm_test_idvec_push(&m->iv, id);
            atomic_fetch_add(&m->minted, 1);
            if (m->first_refused_ns == 0) {
                m->last_ok_before_ns = t;
            } else {
                atomic_fetch_add(&m->after_refusal, 1);
                if (refusing) {
                    /* the keeper extends the guard, then counts the renewal */
                    idm_lease_status_get(m->l, &st);
                    if (st.renewals <= renewals_then) {
                        leasetest_sleep_ms(20);
                        idm_lease_status_get(m->l, &st);
                    }
                    if (st.renewals <= renewals_then)
                        m->unrenewed++;
                }
            }
            refusing = false;
        } else {
            if (!refusing) {
                idm_lease_status_get(m->l, &st);
                renewals_then = st.renewals;
                if (m->first_refused_ns == 0) {
                    m->first_rc = rc;
                    m->deadline_at_refusal = st.deadline;
                    m->first_refused_ns = t;
                }
            }
            refusing = true;
            atomic_fetch_add(&m->refused, 1);
        }
        leasetest_sleep_ms(1);
    }
    return NULL;
}

void leasetest_minter_start(leasetest_minter *m, idm_snowflake *g, idm_lease *l)
{
    memset(m, 0, sizeof *m);
    m->g = g;
    m->l = l;
    assert_int_equal(pthread_create(&m->th, NULL, minter_main, m), 0);
}

void leasetest_minter_stop(leasetest_minter *m)
{
    atomic_store(&m->stop, 1);
    pthread_join(m->th, NULL);
}

void leasetest_minter_wait_minted(leasetest_minter *m, int n)
{
    int64_t until = leasetest_mono_ms() + LEASETEST_HUNG_MS;
    while (atomic_load(&m->minted) < n && atomic_load(&m->refused) == 0 &&
           leasetest_mono_ms() < until)
        leasetest_sleep_ms(1);
    CHECK(atomic_load(&m->minted) >= n, "the minter minted %d (%d refusals)",
          atomic_load(&m->minted), atomic_load(&m->refused));
}

bool leasetest_minter_wait_refused(leasetest_minter *m, int64_t ms)
{
    int64_t until = leasetest_mono_ms() + ms;
    while (atomic_load(&m->refused) == 0 && leasetest_mono_ms() < until)
        leasetest_sleep_ms(5);
    return atomic_load(&m->refused) != 0;
}

/* ------------------------------------------------ servers and scripts */

int leasetest_listen(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 64), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

int leasetest_script_path(char *path, size_t n, const char *who, const char *name)
{
    const char *data = getenv("IDM_TEST_DATA");
    if (data == NULL || data[0] == '\0') {
        fprintf(stderr, "%s: IDM_TEST_DATA is not set (run through ctest)\n", who);
        return -1;
    }
    snprintf(path, n, "%s/../../scripts/%s", data, name);
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "%s: no %s\n", who, path);
        return -1;
    }
    return 0;
}

int leasetest_run_out(char *out, size_t n, const char *fmt, ...)
{
    char cmd[9000], sink[256];
    va_list ap;
    FILE *p;
    size_t len = 0, got;
    int st;
    if (out == NULL) {
        out = sink;
        n = sizeof sink;
    }
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    out[0] = '\0';
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    while (len + 1 < n && (got = fread(out + len, 1, n - 1 - len, p)) > 0)
        len += got;
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' ' || out[len - 1] == '\r'))
        out[--len] = '\0';
    while (fread(sink, 1, sizeof sink, p) > 0)
        ;
    st = pclose(p);
    if (st == -1)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int leasetest_script(char *out, size_t n, const char *owner_var, const char *script,
                     const char *fmt, ...)
{
    char args[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return leasetest_run_out(out, n, "%s=%ld bash '%s' %s", owner_var, (long)getpid(), script,
                             args);
}

/* ------------------------------------------------ the same on each one */

void leasetest_bad_urls(const idm_lease_opts *base, const char *const *bad, size_t n,
                        const char *want, const char *secret)
{
    idm_lease_opts o = *base;
    idm_lease *l = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *d;
        o.url = bad[i];
        IDM_ASSERT_RC(idm_lease_open(&l, &o), IDM_EINVAL);
        d = idm_error_detail();
        CHECK(want != NULL ? strstr(d, want) != NULL : d[0] != '\0', "'%s': detail %s", bad[i], d);
        CHECK(secret == NULL || strstr(d, secret) == NULL, "'%s': detail %s", bad[i], d);
        assert_null(l);
    }
}

typedef struct claimant {
    pthread_barrier_t *bar;
    idm_lease_opts o;
    idm_lease *l;
    int rc;
    char detail[256];
} claimant;

static void *claim_thread(void *arg)
{
    claimant *c = arg;
    pthread_barrier_wait(c->bar);
    c->rc = idm_lease_open(&c->l, &c->o);
    snprintf(c->detail, sizeof c->detail, "%s", c->rc != 0 ? idm_error_detail() : "");
    return NULL;
}

void leasetest_racing_claimants(const leasetest_coord *co, const char *name, int n, uint32_t max,
                                int per)
{
    char *url = co->url(name);
    pthread_barrier_t bar;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    claimant *c = calloc((size_t)n, sizeof *c);
    idm_layout *layout;
    idm_test_idvec all = {0};
    uint64_t seen = 0;
    int ok = 0, busy = 0;
    assert_true(th != NULL && c != NULL && max <= 64);
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        c[i].bar = &bar;
        leasetest_opts(&c[i].o, url, max, co->ttl_ms);
        assert_int_equal(pthread_create(&th[i], NULL, claim_thread, &c[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    for (int i = 0; i < n; i++) {
        if (c[i].rc == 0) {
            uint32_t w = idm_lease_worker(c[i].l);
            CHECK(w < max && !(seen & (UINT64_C(1) << w)), "worker %u twice or out of range",
                  (unsigned)w);
            seen |= UINT64_C(1) << w;
            ok++;
        } else {
            CHECK(c[i].rc == IDM_EBUSY && strstr(c[i].detail, "no free worker id") != NULL,
                  "claimant %d: %s: %s", i, idm_err_name(c[i].rc), c[i].detail);
            busy++;
        }
    }
    printf("  E1: %d claimants: %d ids, %d refused\n", n, ok, busy);
    assert_int_equal(ok, max);
    assert_int_equal(busy, n - (int)max);
    for (int i = 0; i < n; i++) {
        idm_snowflake *g;
        if (c[i].rc != 0)
            continue;
        g = leasetest_gen(layout, c[i].l, NULL);
        IDM_ASSERT_OK(idm_lease_attach(c[i].l, g));
        leasetest_mint_n(g, &all, per);
        IDM_ASSERT_OK(idm_lease_close(c[i].l));
        idm_snowflake_close(g);
    }
    leasetest_no_duplicates(&all);
    idm_test_idvec_free(&all);
    idm_layout_free(layout);
    free(th);
    free(c);
    free(url);
}

void leasetest_killed_holder(const idm_lease_opts *o, const char *row,
                             bool (*held)(uint32_t id))
{
    idm_lease *other, *l;
    idm_layout *layout;
    idm_snowflake *g, *og;
    idm_test_idvec iv = {0};
    uint64_t child_last[2] = {0, 0};
    int p[2], status;
    int64_t t0;
    bool still = true;
    pid_t pid;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        idm_lease *cl;
        idm_snowflake *cg;
        uint64_t id = 0, msg[2];
        int64_t until;
        close(p[0]);
        if (idm_lease_open(&cl, o) != 0)
            _exit(2);
        cg = leasetest_gen(layout, cl, NULL);
        if (idm_lease_attach(cl, cg) != 0)
            _exit(3);
        until = leasetest_mono_ms() + 300;
        while (leasetest_mono_ms() < until)
            if (idm_snowflake_next(cg, &id) != 0)
                _exit(4);
        msg[0] = idm_lease_worker(cl);
        msg[1] = id;
        if (write(p[1], msg, sizeof msg) != (ssize_t)sizeof msg)
            _exit(5);
        for (;;)
            pause(); /* until killed */
    }
    close(p[1]);
    assert_int_equal(read(p[0], child_last, sizeof child_last), (ssize_t)sizeof child_last);
    close(p[0]);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    t0 = leasetest_mono_ms();
    IDM_ASSERT_OK(idm_lease_open(&other, o));
    CHECK(idm_lease_worker(other) != child_last[0], "the dead holder's id %u was taken at once",
          (unsigned)child_last[0]);
    og = leasetest_gen(layout, other, NULL);
    IDM_ASSERT_OK(idm_lease_attach(other, og)); /* kept alive meanwhile */
    while (leasetest_mono_ms() - t0 < LEASETEST_HUNG_MS && (still = held((uint32_t)child_last[0])))
        leasetest_sleep_ms(50);
    CHECK(!still, "the dead holder's id is still held");
    printf("  %s: the dead holder's id was free %lld ms after kill -9 (TTL %u ms)\n", row,
           LL(leasetest_mono_ms() - t0), (unsigned)o->ttl_ms);
    IDM_ASSERT_OK(idm_lease_open(&l, o));
    assert_int_equal(idm_lease_worker(l), child_last[0]);
    CHECK(idm_lease_mark(l) >= leasetest_time_of(layout, child_last[1]), "mark %lld below %lld",
          LL(idm_lease_mark(l)), LL(leasetest_time_of(layout, child_last[1])));
    g = leasetest_gen_after_loss(layout, l);
    IDM_ASSERT_OK(idm_lease_attach(l, g));
    idm_test_idvec_push(&iv, child_last[1]);
    leasetest_mint_n(g, &iv, 1000);
    idm_test_check_ids(&iv); /* all above the dead holder's last id */
    IDM_ASSERT_OK(idm_lease_close(l));
    IDM_ASSERT_OK(idm_lease_close(other));
    idm_snowflake_close(g);
    idm_snowflake_close(og);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
}

void leasetest_skewed_handoff(const leasetest_coord *c, const char *name)
{
    char *url = c->url(name);
    idm_lease_opts o;
    idm_lease *a, *b;
    idm_layout *layout;
    idm_snowflake *g;
    idm_manual_clock *mc;
    idm_test_idvec iv = {0};
    idm_unix_ms mark;
    int rc;
    IDM_ASSERT_OK(idm_layout_preset(&layout, "twitter"));
    leasetest_opts(&o, url, 4, c->ttl_ms);
    g = leasetest_claim(&a, &o, layout);
    leasetest_mint_n(g, &iv, 2000);
    IDM_ASSERT_OK(idm_lease_close(a));
    idm_snowflake_close(g);
    mark = leasetest_time_of(layout, iv.v[iv.n - 1]);

    IDM_ASSERT_OK(idm_manual_clock_new(&mc, mark - 5000, true));
    o.clock = idm_manual_clock_clock(mc);
    IDM_ASSERT_OK(idm_lease_open(&b, &o));
    assert_int_equal(idm_lease_worker(b), 0);
    assert_int_equal(idm_lease_mark(b), mark);
    g = leasetest_gen_rc(layout, b, o.clock, &rc);
    IDM_ASSERT_RC(rc, IDM_ECLOCKBACK);
    assert_null(g);
    idm_manual_clock_set(mc, mark + 1000);
    g = leasetest_gen_rc(layout, b, o.clock, &rc);
    IDM_ASSERT_OK(rc);
    IDM_ASSERT_OK(idm_lease_attach(b, g));
    leasetest_mint_n(g, &iv, 100);
    idm_test_check_ids(&iv);
    IDM_ASSERT_OK(idm_lease_close(b));
    idm_snowflake_close(g);
    idm_manual_clock_free(mc);
    idm_test_idvec_free(&iv);
    idm_layout_free(layout);
    free(url);
}
