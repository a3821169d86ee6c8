/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests of the 128-bit and 96-bit ids and of the rng
 * (test_uuid.c, test_ulid.c, test_objectid.c, test_rng.c): a scripted rng to
 * inject, clocks stuck at one time, byte helpers, a harness that mints from
 * several threads at once and one that runs work in a forked child.
 */
#ifndef IDM_TESTIDS_H
#define IDM_TESTIDS_H

#include "testutil.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h" /* idm__spin, for the lock holder */

/* ---- a scripted rng ---- */

/*
 * An idm_rng for injection (pass &s.iface). Each request is served in one
 * of two ways. If a vector is pending (idm_test_script_vector) and the
 * request is at least as big as the vector, the request gets the vector,
 * left-aligned, then fresh bytes, and the vector is no longer pending; this
 * says "these are the bits of the next fresh value" without assuming in
 * which order a generator draws its other randomness. Otherwise the request
 * gets the script's remaining bytes in order, then fresh bytes. Fresh bytes
 * are tail_byte if tail_constant is set, else seeded pseudo-random bytes.
 * While fail_rc is nonzero every request fails with it and writes nothing.
 * A mutex guards the state, so threads may share the rng. The fields are
 * public so that a test can read calls and vec_pending; set them only
 * through the functions below.
 */
typedef struct idm_test_script_rng {
    idm_rng iface;
    pthread_mutex_t mu;
    uint8_t script[64];
    size_t len, pos;
    uint8_t vec[16];
    size_t veclen;
    int vec_pending;
    int fail_rc;
    int tail_constant; /* after the script: 1 = tail_byte, 0 = pseudo-random */
    uint8_t tail_byte;
    idm_test_rng prng;
    uint64_t calls; /* requests made, failed ones included */
} idm_test_script_rng;

/* Sets up s with an empty script, pseudo-random fresh bytes seeded from
 * idm_test_seed(), no vector and no failure. */
void idm_test_script_init(idm_test_script_rng *s);
/* Restarts the script with the n bytes at bytes (at most 64), followed by
 * pseudo-random fresh bytes. */
void idm_test_script_set(idm_test_script_rng *s, const uint8_t *bytes, size_t n);
/* Restarts the script with the n bytes at bytes (at most 64; bytes may be
 * NULL when n is 0), followed by tail_byte for ever. */
void idm_test_script_set_const(idm_test_script_rng *s, const uint8_t *bytes, size_t n,
                               uint8_t tail_byte);
/* Makes the next request of at least n bytes (n at most 16) begin with
 * these n bytes. */
void idm_test_script_vector(idm_test_script_rng *s, const uint8_t *bytes, size_t n);
/* Makes every request fail with rc from now on, or succeed again if rc is
 * 0. */
void idm_test_script_fail(idm_test_script_rng *s, int rc);
/* Releases what idm_test_script_init set up. */
void idm_test_script_done(idm_test_script_rng *s);

/* ---- clocks ---- */

/* An idm_clock (pass &c.iface) whose wall time is ns, any int64 (the
 * manual clock takes ms and cannot reach the ends of the ns range). Its
 * monotonic time is always 1 s and sleeping returns at once. A test may
 * move it by assigning ns. */
typedef struct idm_test_fixed_clock {
    idm_clock iface;
    idm_wall_ns ns;
} idm_test_fixed_clock;

/* Sets up c stuck at wall time ns. */
void idm_test_fixed_init(idm_test_fixed_clock *c, idm_wall_ns ns);

/* Returns a new manual clock frozen at t ms (it moves only when the test
 * moves it), failing the test if it cannot be made. Free it with
 * idm_manual_clock_free. */
idm_manual_clock *idm_test_frozen_clock(idm_unix_ms t);

/* ---- bytes ---- */

/* Decodes the first 2n hex digits of hex into out[0..n-1], failing the test
 * on a character that is not a hex digit. */
void idm_test_hex_to_bytes(const char *hex, uint8_t *out, size_t n);
/* Returns 1 if every one of the n bytes at p is v (also when n is 0), else
 * 0. */
int idm_test_all_bytes_are(const uint8_t *p, size_t n, uint8_t v);
/* Returns the 48-bit big-endian number in the 6 bytes at b: the
 * millisecond timestamp that begins a UUIDv7 or a ULID. */
idm_unix_ms idm_test_be48(const uint8_t *b);
/* Compares the 16 bytes at a and b as memcmp does; a qsort comparator for
 * 16-byte ids and blocks. */
int idm_test_cmp16(const void *a, const void *b);
/* Sorts the n 16-byte blocks at blocks in place and returns how many of
 * them equal their predecessor. */
size_t idm_test_count_dup16(void *blocks, size_t n);

/* Checks what a parser did with a text it must reject: rc, its return
 * code, must be IDM_EPARSE and leave an error detail, and the size bytes of
 * its output at out must all still be 0x5A (the caller fills them with 0x5A
 * before the call). parser is the parser's name and why what is wrong with
 * text, both for the failure messages. */
void idm_test_check_rejected(const char *parser, int rc, const uint8_t *out, size_t size,
                             const char *text, const char *why);

/* ---- minting from several threads ---- */

enum { IDM_TEST_MAX_THREADS = 8 };

/* Mints one value into out from gen (which may be NULL, as the caller
 * likes); returns 0 or an IDM_E* code. */
typedef int (*idm_test_mint_fn)(void *gen, void *out);

/* One thread's share: after the start barrier it mints count values of
 * size bytes each into ids, in order, stopping at the first failure, whose
 * code it leaves in rc (0 when all succeeded). */
typedef struct idm_test_mint_job {
    pthread_barrier_t *start;
    idm_test_mint_fn mint;
    void *gen;
    uint8_t *ids;
    size_t size, count;
    int rc;
} idm_test_mint_job;

/* n minting threads and the barrier that starts them together. */
typedef struct idm_test_threads {
    pthread_barrier_t start;
    int n;
    pthread_t th[IDM_TEST_MAX_THREADS];
    idm_test_mint_job job[IDM_TEST_MAX_THREADS];
} idm_test_threads;

/* Starts n threads (at most IDM_TEST_MAX_THREADS), thread i minting
 * per_thread values of size bytes with mint(gen, ...) into ids + i *
 * per_thread * size. The barrier waits for the n threads and for waiters
 * more: a caller that passes 1 must itself call
 * pthread_barrier_wait(&t->start) before idm_test_threads_join. Fails the
 * test if the barrier or a thread cannot be made. */
void idm_test_threads_start(idm_test_threads *t, int n, unsigned waiters, idm_test_mint_fn mint,
                            void *gen, void *ids, size_t size, size_t per_thread);
/* Joins the threads and destroys the barrier; each job's rc is then
 * final. */
void idm_test_threads_join(idm_test_threads *t);
/* idm_test_threads_start with no other waiter, then idm_test_threads_join. */
void idm_test_threads_run(idm_test_threads *t, int n, idm_test_mint_fn mint, void *gen, void *ids,
                          size_t size, size_t per_thread);

/* The same, with no cmocka call (for a forked child): returns 0 if every
 * thread minted all its values, -1 otherwise. */
int idm_test_threads_run_nocheck(int n, idm_test_mint_fn mint, void *gen, void *ids, size_t size,
                                 size_t per_thread);

/* ---- fork ---- */

/* Writes the n bytes at p to fd, retrying short writes; returns 0, or -1
 * if a write fails. Uses no cmocka call, so a child or any thread may use
 * it. */
int idm_test_write_all(int fd, const void *p, size_t n);
/* Reads up to n bytes from fd into p until end of file or an error;
 * returns how many it read. Uses no cmocka call. */
size_t idm_test_read_all(int fd, void *p, size_t n);

/* A forked child and the pipe on which it sends its results. */
typedef struct idm_test_child {
    pid_t pid;
    int fd; /* the write end in the child, the read end in the parent */
} idm_test_child;

/* Makes a pipe and forks, failing the test if either fails. Returns 1 in
 * the child and 0 in the parent; each has closed the end it does not
 * use. */
int idm_test_fork(idm_test_child *c);
/* In the child: sends the n bytes at p to the parent and exits, with
 * status 0 if they were all written, else 3. Never returns. */
_Noreturn void idm_test_child_send(const idm_test_child *c, const void *p, size_t n);
/* In the parent: reads up to n bytes the child sent into p, closes the
 * pipe, waits for the child and fails the test unless it exited with
 * status 0. Returns how many bytes it read. */
size_t idm_test_child_collect(const idm_test_child *c, void *p, size_t n);


/* ---- fork while a generator's lock is held ---- */

/* A thread that takes a spinlock, says so, and keeps it until told to let
 * go: the state of a generator whose lock a minting thread holds. */
typedef struct idm_test_lock_holder {
    idm__spin *lock;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int held, release;
    pthread_t th;
} idm_test_lock_holder;

/* Starts a thread that holds lock; returns once it holds it. */
void idm_test_lock_holder_start(idm_test_lock_holder *h, idm__spin *lock);
/* Tells the thread to release the lock, and joins it. */
void idm_test_lock_holder_stop(idm_test_lock_holder *h);

enum { IDM_TEST_CHILD_DEADLINE_S = 5 };
/* In a forked child: die of SIGALRM after IDM_TEST_CHILD_DEADLINE_S, so a
 * child stuck on a lock fails its test instead of hanging the suite. */
void idm_test_child_deadline(void);
/* In the parent: reads up to n bytes from the child into p and reaps it,
 * failing the test (saying so) if the child hung past its deadline or
 * failed otherwise. Returns how many bytes it read. */
size_t idm_test_collect_bounded(const idm_test_child *c, void *p, size_t n);

#endif /* IDM_TESTIDS_H */
