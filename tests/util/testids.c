/* SPDX-License-Identifier: MIT */
#include "testids.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a scripted rng ---- */

/* One fresh byte: the constant tail byte if one is set, else the next
 * pseudo-random byte. Called with the mutex held. */
static uint8_t script_fresh(idm_test_script_rng *s)
{
    if (s->tail_constant)
        return s->tail_byte;
    return (uint8_t)idm_test_rng_next(&s->prng);
}

/* The idm_rng fill function: serves a request as idm_test_script_rng
 * describes. */
static int script_fill(void *ctx, void *buf, size_t n)
{
    idm_test_script_rng *s = ctx;
    uint8_t *b = buf;
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    if (s->fail_rc != 0) {
        rc = s->fail_rc;
    } else if (s->vec_pending && n >= s->veclen) {
        memcpy(b, s->vec, s->veclen);
        for (size_t i = s->veclen; i < n; i++)
            b[i] = script_fresh(s);
        s->vec_pending = 0;
    } else {
        for (size_t i = 0; i < n; i++) {
            if (s->pos < s->len)
                b[i] = s->script[s->pos++];
            else
                b[i] = script_fresh(s);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void idm_test_script_init(idm_test_script_rng *s)
{
    memset(s, 0, sizeof *s);
    s->iface.ctx = s;
    s->iface.fill = script_fill;
    pthread_mutex_init(&s->mu, NULL);
    idm_test_rng_init(&s->prng, idm_test_seed());
}

/* Restarts the script with n bytes and chooses what follows it. */
static void script_restart(idm_test_script_rng *s, const uint8_t *bytes, size_t n,
                           int tail_constant, uint8_t tail_byte)
{
    pthread_mutex_lock(&s->mu);
    assert_true(n <= sizeof s->script);
    if (n > 0)
        memcpy(s->script, bytes, n);
    s->len = n;
    s->pos = 0;
    s->tail_constant = tail_constant;
    s->tail_byte = tail_byte;
    pthread_mutex_unlock(&s->mu);
}

void idm_test_script_set(idm_test_script_rng *s, const uint8_t *bytes, size_t n)
{
    script_restart(s, bytes, n, 0, 0);
}

void idm_test_script_set_const(idm_test_script_rng *s, const uint8_t *bytes, size_t n,
                               uint8_t tail_byte)
{
    script_restart(s, bytes, n, 1, tail_byte);
}

void idm_test_script_vector(idm_test_script_rng *s, const uint8_t *bytes, size_t n)
{
    pthread_mutex_lock(&s->mu);
    assert_true(n <= sizeof s->vec);
    memcpy(s->vec, bytes, n);
    s->veclen = n;
    s->vec_pending = 1;
    pthread_mutex_unlock(&s->mu);
}

void idm_test_script_fail(idm_test_script_rng *s, int rc)
{
    pthread_mutex_lock(&s->mu);
    s->fail_rc = rc;
    pthread_mutex_unlock(&s->mu);
}

void idm_test_script_done(idm_test_script_rng *s) { pthread_mutex_destroy(&s->mu); }

/* ---- clocks ---- */

/* The fixed clock's wall time: whatever the test last put in ns. */
static idm_wall_ns fixed_wall(void *ctx) { return ((idm_test_fixed_clock *)ctx)->ns; }

/* The fixed clock's monotonic time: always 1 s. */
static idm_mono_ns fixed_mono(void *ctx)
{
    (void)ctx;
    return INT64_C(1000000000);
}

/* The fixed clock's sleep: returns at once. */
static void fixed_sleep(void *ctx, int64_t ns)
{
    (void)ctx;
    (void)ns;
}

void idm_test_fixed_init(idm_test_fixed_clock *c, idm_wall_ns ns)
{
    c->iface.ctx = c;
    c->iface.wall_ns = fixed_wall;
    c->iface.mono_ns = fixed_mono;
    c->iface.sleep_ns = fixed_sleep;
    c->ns = ns;
}

idm_manual_clock *idm_test_frozen_clock(idm_unix_ms t)
{
    idm_manual_clock *mc = NULL;
    IDM_ASSERT_OK(idm_manual_clock_new(&mc, t, false));
    return mc;
}

/* ---- bytes ---- */

void idm_test_hex_to_bytes(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

int idm_test_all_bytes_are(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

idm_unix_ms idm_test_be48(const uint8_t *b)
{
    idm_unix_ms ms = 0;
    for (int i = 0; i < 6; i++)
        ms = (ms << 8) | b[i];
    return ms;
}

int idm_test_cmp16(const void *a, const void *b) { return memcmp(a, b, 16); }

size_t idm_test_count_dup16(void *blocks, size_t n)
{
    uint8_t *b = blocks;
    size_t d = 0;
    qsort(b, n, 16, idm_test_cmp16);
    for (size_t i = 1; i < n; i++)
        if (memcmp(b + (i - 1) * 16, b + i * 16, 16) == 0)
            d++;
    return d;
}

void idm_test_check_rejected(const char *parser, int rc, const uint8_t *out, size_t size,
                             const char *text, const char *why)
{
    if (rc != IDM_EPARSE) {
        print_error("%s(\"%s\") [%s] returned %s, expected IDM_EPARSE\n", parser, text, why,
                    idm_err_name(rc));
        fail();
    }
    CHECK(idm_error_detail()[0] != '\0', "no detail for \"%s\" [%s]", text, why);
    CHECK(idm_test_all_bytes_are(out, size, 0x5A), "output written for rejected \"%s\" [%s]",
          text, why);
}

/* ---- minting from several threads ---- */

/* A minting thread: waits at the barrier, then does its job. */
static void *mint_thread(void *arg)
{
    idm_test_mint_job *j = arg;
    pthread_barrier_wait(j->start);
    for (size_t i = 0; i < j->count && j->rc == 0; i++)
        j->rc = j->mint(j->gen, j->ids + i * j->size);
    return NULL;
}

void idm_test_threads_start(idm_test_threads *t, int n, unsigned waiters, idm_test_mint_fn mint,
                            void *gen, void *ids, size_t size, size_t per_thread)
{
    uint8_t *base = ids;
    assert_true(n > 0 && n <= IDM_TEST_MAX_THREADS);
    t->n = n;
    assert_int_equal(pthread_barrier_init(&t->start, NULL, (unsigned)n + waiters), 0);
    for (int i = 0; i < n; i++) {
        t->job[i] = (idm_test_mint_job){&t->start, mint, gen,
                                        base + (size_t)i * per_thread * size, size, per_thread, 0};
        assert_int_equal(pthread_create(&t->th[i], NULL, mint_thread, &t->job[i]), 0);
    }
}

void idm_test_threads_join(idm_test_threads *t)
{
    for (int i = 0; i < t->n; i++)
        assert_int_equal(pthread_join(t->th[i], NULL), 0);
    pthread_barrier_destroy(&t->start);
}

void idm_test_threads_run(idm_test_threads *t, int n, idm_test_mint_fn mint, void *gen, void *ids,
                          size_t size, size_t per_thread)
{
    idm_test_threads_start(t, n, 0, mint, gen, ids, size, per_thread);
    idm_test_threads_join(t);
}

int idm_test_threads_run_nocheck(int n, idm_test_mint_fn mint, void *gen, void *ids, size_t size,
                                 size_t per_thread)
{
    idm_test_threads t;
    uint8_t *base = ids;
    int rc = 0;
    if (n <= 0 || n > IDM_TEST_MAX_THREADS || pthread_barrier_init(&t.start, NULL, (unsigned)n) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        t.job[i] = (idm_test_mint_job){&t.start, mint, gen,
                                       base + (size_t)i * per_thread * size, size, per_thread, 0};
        if (pthread_create(&t.th[i], NULL, mint_thread, &t.job[i]) != 0)
            return -1; /* the barrier never opens: only for a child about to die */
    }
    for (int i = 0; i < n; i++)
        if (pthread_join(t.th[i], NULL) != 0 || t.job[i].rc != 0)
            rc = -1;
    pthread_barrier_destroy(&t.start);
    return rc;
}

/* ---- fork ---- */

int idm_test_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

size_t idm_test_read_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

int idm_test_fork(idm_test_child *c)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        close(fds[0]);
        c->fd = fds[1];
        return 1;
    }
    close(fds[1]);
    c->fd = fds[0];
    return 0;
}

_Noreturn void idm_test_child_send(const idm_test_child *c, const void *p, size_t n)
{
    _exit(idm_test_write_all(c->fd, p, n) == 0 ? 0 : 3);
}

size_t idm_test_child_collect(const idm_test_child *c, void *p, size_t n)
{
    size_t got = idm_test_read_all(c->fd, p, n);
    close(c->fd);
    int status = 0;
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (wait status %d)", status);
    return got;
}

/* ---- fork while a generator's lock is held ---- */

static void *hold_lock(void *arg)
{
    idm_test_lock_holder *h = arg;
    idm__spin_lock(h->lock);
    pthread_mutex_lock(&h->mu);
    h->held = 1;
    pthread_cond_broadcast(&h->cv);
    while (!h->release)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    idm__spin_unlock(h->lock);
    return NULL;
}

void idm_test_lock_holder_start(idm_test_lock_holder *h, idm__spin *lock)
{
    h->lock = lock;
    h->held = h->release = 0;
    assert_int_equal(pthread_mutex_init(&h->mu, NULL), 0);
    assert_int_equal(pthread_cond_init(&h->cv, NULL), 0);
    assert_int_equal(pthread_create(&h->th, NULL, hold_lock, h), 0);
    pthread_mutex_lock(&h->mu);
    while (!h->held)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

void idm_test_lock_holder_stop(idm_test_lock_holder *h)
{
    pthread_mutex_lock(&h->mu);
    h->release = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    assert_int_equal(pthread_join(h->th, NULL), 0);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
}

void idm_test_child_deadline(void)
{
    sigset_t set;
    signal(SIGALRM, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    alarm(IDM_TEST_CHILD_DEADLINE_S);
}

size_t idm_test_collect_bounded(const idm_test_child *c, void *p, size_t n)
{
    size_t got = idm_test_read_all(c->fd, p, n);
    int status = 0;
    close(c->fd);
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        fail_msg("the forked child did not mint within %d s: it waited on a lock that fork() "
                 "copied held", IDM_TEST_CHILD_DEADLINE_S);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed (wait status %d)", status);
    return got;
}
