/* SPDX-License-Identifier: MIT */
/*
 * Tests for idmint/rng.h, the system CSPRNG (idm_rng_system, idm_random_bytes):
 * every buffer size from 0 to 4096 and buffers of several MiB (past the 1 MiB
 * reseed point) fill without error and without writing past the end; the
 * output passes cheap sanity checks (byte histogram chi-square, bit balance,
 * no repeated 16-byte block among 100,000); two threads get different
 * streams; and after fork() parent and child never emit the same bytes,
 * whether the fork comes from the main thread or from a second thread.
 */
#include "testids.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024u
#define MIB (1024u * 1024u)
#define BLK 16 /* bytes per value in the uniqueness checks */

static int sys_fill(void *buf, size_t n)
{
    const idm_rng *r = idm_rng_system();
    return r->fill(r->ctx, buf, n);
}

/* The uniqueness checks count repeats with idm_test_count_dup16. */
_Static_assert(BLK == 16, "BLK must be the 16 bytes idm_test_count_dup16 compares");

/* ---- sizes ---- */

/* Every size 0..4096, through both entry points, at every alignment mod 8:
 * rc 0, the n bytes are written (for n >= 16 they are not all the sentinel)
 * and nothing past them is. Consecutive fills differ. */
static void rng_every_size_to_4096(void **state)
{
    enum { MAXN = 4096, PAD = 64 };
    uint8_t *buf = malloc(8 + MAXN + PAD);
    uint8_t prev[16] = {0};
    int have_prev = 0;
    (void)state;
    assert_non_null(buf);
    assert_non_null(idm_rng_system());
    assert_non_null(idm_rng_system()->fill);
    assert_ptr_equal(idm_rng_system(), idm_rng_system());
    for (size_t n = 0; n <= MAXN; n++) {
        uint8_t *p = buf + (n % 8);
        memset(buf, 0xA5, 8 + MAXN + PAD);
        if (n % 2 == 0)
            IDM_ASSERT_OK(sys_fill(p, n));
        else
            IDM_ASSERT_OK(idm_random_bytes(p, n));
        CHECK(idm_test_all_bytes_are(buf, n % 8, 0xA5), "fill of %zu wrote before the buffer", n);
        CHECK(idm_test_all_bytes_are(p + n, PAD, 0xA5), "fill of %zu wrote past the end", n);
        if (n >= 16) {
            CHECK(!idm_test_all_bytes_are(p, n, 0xA5), "fill of %zu left the buffer as it was", n);
            CHECK(!idm_test_all_bytes_are(p + n - 16, 16, 0xA5),
                  "fill of %zu did not write its last 16 bytes", n);
            CHECK(!have_prev || memcmp(prev, p, 16) != 0,
                  "fill of %zu began with the same 16 bytes as the fill before", n);
            memcpy(prev, p, 16);
            have_prev = 1;
        }
    }
    free(buf);
}

/* Big buffers in one call (1 MiB, 1 MiB + 1, 3 MiB + 13) and many 64 KiB
 * calls totalling 2.5 MiB, which cross the 1 MiB reseed point: rc 0, every
 * 4 KiB page written (none left all zero), nothing past the end. */
static void rng_big_buffers(void **state)
{
    static const size_t sizes[] = {MIB, MIB + 1, 3 * MIB + 13};
    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        uint8_t *buf = calloc(n + 64, 1);
        assert_non_null(buf);
        IDM_ASSERT_OK(k % 2 == 0 ? sys_fill(buf, n) : idm_random_bytes(buf, n));
        for (size_t off = 0; off < n; off += 4 * KIB) {
            size_t len = n - off < 4 * KIB ? n - off : 4 * KIB;
            if (len >= 16)
                CHECK(!idm_test_all_bytes_are(buf + off, len, 0),
                      "%zu-byte fill left bytes %zu..%zu zero", n, off, off + len);
        }
        CHECK(idm_test_all_bytes_are(buf + n, 64, 0), "%zu-byte fill wrote past the end", n);
        /* The keystream does not start over near the reseed point. */
        CHECK(memcmp(buf, buf + MIB - 64, 64) != 0, "repetition in a %zu-byte fill", n);
        if (n >= MIB + 64)
            CHECK(memcmp(buf, buf + MIB, 64) != 0 && memcmp(buf + MIB - 64, buf + MIB, 64) != 0,
                  "repetition at 1 MiB in a %zu-byte fill", n);
        free(buf);
    }

    /* 40 calls of 64 KiB, keeping 16 bytes from every 4 KiB: all distinct. */
    enum { CHUNK = 64 * KIB, CALLS = 40 };
    uint8_t *chunk = malloc(CHUNK);
    size_t nkeep = (size_t)CALLS * (CHUNK / (4 * KIB));
    uint8_t *keep = malloc(nkeep * BLK);
    size_t kept = 0;
    assert_non_null(chunk);
    assert_non_null(keep);
    for (int c = 0; c < CALLS; c++) {
        IDM_ASSERT_OK(sys_fill(chunk, CHUNK));
        for (size_t off = 0; off < CHUNK; off += 4 * KIB)
            memcpy(keep + BLK * kept++, chunk + off, BLK);
    }
    assert_int_equal(kept, nkeep);
    CHECK(idm_test_count_dup16(keep, kept) == 0, "repeated 16-byte blocks across 2.5 MiB of calls");
    free(keep);
    free(chunk);
}

/* ---- statistics ---- */

/* 1 MiB: the byte histogram's chi-square (255 degrees of freedom, mean 255,
 * sd 22.6) lies within [140, 400], far outside which a working generator
 * lands less than once in a million runs; the count of one bits is within
 * 7 sd of half; not all bytes equal. */
static void rng_histogram(void **state)
{
    uint8_t *buf = malloc(MIB);
    uint64_t hist[256] = {0};
    uint64_t ones = 0;
    (void)state;
    assert_non_null(buf);
    IDM_ASSERT_OK(sys_fill(buf, MIB));
    for (size_t i = 0; i < MIB; i++) {
        hist[buf[i]]++;
        ones += (uint64_t)__builtin_popcount(buf[i]);
    }
    double expect = (double)MIB / 256.0, chi = 0;
    for (int b = 0; b < 256; b++) {
        double d = (double)hist[b] - expect;
        chi += d * d / expect;
    }
    print_message("# chi-square over 1 MiB: %.1f (255 df)\n", chi);
    CHECK(chi >= 140.0 && chi <= 400.0, "byte histogram chi-square %.1f", chi);
    double bits = 8.0 * MIB, sd = 1448.2; /* sqrt(8 Mi) / 2 */
    double dev = (double)ones - bits / 2;
    CHECK(dev < 7 * sd && dev > -7 * sd, "%llu one bits of %.0f", ULL(ones), bits);
    CHECK(!idm_test_all_bytes_are(buf, MIB, buf[0]), "constant output");
    free(buf);
}

/* 100,000 16-byte blocks (one call each): no two equal. */
static void rng_no_repeated_blocks(void **state)
{
    enum { N = 100000 };
    uint8_t *v = malloc((size_t)N * BLK);
    (void)state;
    assert_non_null(v);
    for (size_t i = 0; i < N; i++)
        IDM_ASSERT_OK(sys_fill(v + i * BLK, BLK));
    size_t d = idm_test_count_dup16(v, N);
    CHECK(d == 0, "%zu repeated 16-byte blocks among %d", d, N);
    free(v);
}

/* idm_random_bytes: works for several sizes; two draws differ. */
static void rng_random_bytes(void **state)
{
    uint8_t a[32], b[32];
    uint8_t *big = malloc(100000);
    (void)state;
    assert_non_null(big);
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    IDM_ASSERT_OK(idm_random_bytes(a, sizeof a));
    IDM_ASSERT_OK(idm_random_bytes(b, sizeof b));
    CHECK(memcmp(a, b, sizeof a) != 0, "two 32-byte draws are equal");
    CHECK(!idm_test_all_bytes_are(a, sizeof a, 0) && !idm_test_all_bytes_are(b, sizeof b, 0),
          "a draw left the buffer zero");
    IDM_ASSERT_OK(idm_random_bytes(a, 1));
    IDM_ASSERT_OK(idm_random_bytes(a, 7));
    IDM_ASSERT_OK(idm_random_bytes(a, 0));
    memset(big, 0, 100000);
    IDM_ASSERT_OK(idm_random_bytes(big, 100000));
    CHECK(!idm_test_all_bytes_are(big + 100000 - 32, 32, 0),
          "the tail of a 100000-byte draw is zero");
    free(big);
}

/* ---- threads ---- */

enum { TVALS = 10000 };

/* Draws one 16-byte value into out with idm_random_bytes, for the thread
 * harness (which passes gen, unused). */
static int draw_blk(void *gen, void *out)
{
    (void)gen;
    return idm_random_bytes(out, BLK);
}

/* Two threads drawing at once, and the main thread: no 16-byte value in
 * common, first values differ. */
static void rng_two_threads_differ(void **state)
{
    idm_test_threads t;
    uint8_t *all = malloc((size_t)3 * TVALS * BLK);
    (void)state;
    assert_non_null(all);
    idm_test_threads_start(&t, 2, 1, draw_blk, NULL, all, BLK, TVALS);
    pthread_barrier_wait(&t.start);
    uint8_t *mine = all + (size_t)2 * TVALS * BLK;
    for (size_t i = 0; i < TVALS; i++)
        IDM_ASSERT_OK(idm_random_bytes(mine + i * BLK, BLK));
    idm_test_threads_join(&t);
    IDM_ASSERT_RC(t.job[0].rc, 0);
    IDM_ASSERT_RC(t.job[1].rc, 0);
    CHECK(memcmp(t.job[0].ids, t.job[1].ids, BLK) != 0, "two threads began with the same bytes");
    CHECK(memcmp(t.job[0].ids, mine, BLK) != 0, "a thread began with the main thread's bytes");
    size_t d = idm_test_count_dup16(all, (size_t)3 * TVALS);
    CHECK(d == 0, "%zu 16-byte values shared between threads", d);
    free(all);
}

/* ---- fork ---- */

/* The child's side of a fork test: draw TVALS values of 16 bytes, one call
 * each, send them on fd, exit. Never returns. */
static void child_draw_and_exit(int fd)
{
    uint8_t *v = malloc((size_t)TVALS * BLK);
    if (v == NULL)
        _exit(2);
    for (size_t i = 0; i < TVALS; i++)
        if (idm_random_bytes(v + i * BLK, BLK) != 0)
            _exit(3);
    if (idm_test_write_all(fd, v, (size_t)TVALS * BLK) != 0)
        _exit(4);
    _exit(0);
}

typedef struct fork_result {
    uint8_t *parent; /* TVALS * BLK, drawn by the parent after the fork */
    uint8_t *child;  /* TVALS * BLK, received from the child */
    size_t child_bytes;
    int status;      /* the child's wait status */
    int rc;          /* the parent's first failing rc, or a negative setup error */
} fork_result;

/* Fork; the child draws and sends; the parent draws its own TVALS values
 * right after the fork, then reads the child's. No cmocka calls: this runs
 * on non-main threads too. */
static void fork_and_draw(fork_result *fr)
{
    int fds[2];
    fr->parent = malloc((size_t)TVALS * BLK);
    fr->child = malloc((size_t)TVALS * BLK);
    fr->child_bytes = 0;
    fr->status = -1;
    fr->rc = 0;
    if (fr->parent == NULL || fr->child == NULL || pipe(fds) != 0) {
        fr->rc = -100;
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fr->rc = -101;
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        child_draw_and_exit(fds[1]);
    }
    close(fds[1]);
    for (size_t i = 0; i < TVALS && fr->rc == 0; i++)
        fr->rc = idm_random_bytes(fr->parent + i * BLK, BLK);
    fr->child_bytes = idm_test_read_all(fds[0], fr->child, (size_t)TVALS * BLK);
    close(fds[0]);
    if (waitpid(pid, &fr->status, 0) != pid)
        fr->rc = -102;
}

static void check_fork_result(fork_result *fr, const uint8_t *other, size_t nother)
{
    IDM_ASSERT_RC(fr->rc, 0);
    CHECK(WIFEXITED(fr->status) && WEXITSTATUS(fr->status) == 0,
          "child failed (wait status %d)", fr->status);
    CHECK(fr->child_bytes == (size_t)TVALS * BLK, "child sent %zu bytes", fr->child_bytes);
    CHECK(memcmp(fr->parent, fr->child, BLK) != 0,
          "parent and child drew the same first 16 bytes after fork");
    CHECK(memcmp(fr->parent, fr->child, 8) != 0,
          "parent and child drew the same first 8 bytes after fork");
    size_t n = (size_t)2 * TVALS + nother;
    uint8_t *all = malloc(n * BLK);
    assert_non_null(all);
    memcpy(all, fr->parent, (size_t)TVALS * BLK);
    memcpy(all + (size_t)TVALS * BLK, fr->child, (size_t)TVALS * BLK);
    if (nother > 0)
        memcpy(all + (size_t)2 * TVALS * BLK, other, nother * BLK);
    size_t d = idm_test_count_dup16(all, n);
    CHECK(d == 0, "%zu 16-byte values shared by parent and child after fork", d);
    free(all);
    free(fr->parent);
    free(fr->child);
}

/* Draw before the fork (leaving part of a keystream block unused), then
 * parent and child each draw 10,000 values: none in common, and the first
 * bytes after the fork differ. */
static void rng_fork_main_thread(void **state)
{
    uint8_t pre[37];
    fork_result fr;
    (void)state;
    IDM_ASSERT_OK(idm_random_bytes(pre, 5));
    IDM_ASSERT_OK(idm_random_bytes(pre, sizeof pre));
    fork_and_draw(&fr);
    check_fork_result(&fr, NULL, 0);

    /* A second fork from the same parent: again fresh, and different from
     * the parent's stream. */
    IDM_ASSERT_OK(idm_random_bytes(pre, 3));
    fork_and_draw(&fr);
    check_fork_result(&fr, NULL, 0);
}

typedef struct fork_thread_job {
    fork_result fr;
    uint8_t pre[64];
    int pre_rc;
} fork_thread_job;

static void *fork_thread(void *arg)
{
    fork_thread_job *j = arg;
    /* This thread's own generator state exists before the fork. */
    j->pre_rc = idm_random_bytes(j->pre, 11);
    if (j->pre_rc == 0)
        j->pre_rc = idm_random_bytes(j->pre, sizeof j->pre);
    fork_and_draw(&j->fr);
    return NULL;
}

/* The fork comes from a second thread that had drawn bytes before: the
 * child (that thread's copy) shares no value with the parent's thread, nor
 * with the parent's main thread drawing after the fork. */
static void rng_fork_second_thread(void **state)
{
    pthread_t th;
    fork_thread_job *j = calloc(1, sizeof *j);
    uint8_t *mainv = malloc((size_t)TVALS * BLK);
    uint8_t pre[21];
    (void)state;
    assert_non_null(j);
    assert_non_null(mainv);
    IDM_ASSERT_OK(idm_random_bytes(pre, sizeof pre));
    assert_int_equal(pthread_create(&th, NULL, fork_thread, j), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    IDM_ASSERT_RC(j->pre_rc, 0);
    for (size_t i = 0; i < TVALS; i++)
        IDM_ASSERT_OK(idm_random_bytes(mainv + i * BLK, BLK));
    CHECK(memcmp(mainv, j->fr.child, BLK) != 0, "main thread and child begin alike");
    check_fork_result(&j->fr, mainv, TVALS);
    free(mainv);
    free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rng_every_size_to_4096),
        cmocka_unit_test(rng_big_buffers),
        cmocka_unit_test(rng_histogram),
        cmocka_unit_test(rng_no_repeated_blocks),
        cmocka_unit_test(rng_random_bytes),
        cmocka_unit_test(rng_two_threads_differ),
        cmocka_unit_test(rng_fork_main_thread),
        cmocka_unit_test(rng_fork_second_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
