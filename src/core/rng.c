/* SPDX-License-Identifier: MIT */
/*
 * The system CSPRNG: ChaCha20 (RFC 8439) keystream with fast key erasure.
 *
 * Each thread owns a state: a key and a buffer of keystream. A refill
 * computes 16 blocks under the current key (nonce 0, counters 0 to 15),
 * takes the first 32 bytes as the next key and hands out the rest; every
 * byte handed out is wiped from the buffer. So no byte already returned can
 * be recomputed from the state. The key is replaced from getrandom(2) before
 * a thread's first byte and then every 1 MiB of output exactly: the byte at
 * 1 MiB after a seed comes from the next seed, even within one long request
 * (one call of 10 MiB reseeds ten times). A forked child reseeds before its
 * first byte: the child's thread state is a copy of the parent's, and
 * without that the two processes would return the same bytes.
 *
 * What it does not do: block for entropy after boot (getrandom does, once),
 * or keep state anywhere but thread-local storage.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "internal.h"

#define BLOCKS 16
#define BUF_BYTES (BLOCKS * 64)
#define RESEED_BYTES (UINT64_C(1) << 20)

/* Test builds only: seeds from idm__rng_getrandom_test_hook when it is set
 * (see internal.h). Nothing in the library. */
#ifdef IDM_TEST_HOOKS
ssize_t (*idm__rng_getrandom_test_hook)(void *buf, size_t n, unsigned flags);
#define GETRANDOM(buf, n, flags)                                              \
    (idm__rng_getrandom_test_hook != NULL                                     \
         ? idm__rng_getrandom_test_hook(buf, n, flags)                        \
         : getrandom(buf, n, flags))
#else
#define GETRANDOM(buf, n, flags) getrandom(buf, n, flags)
#endif

/* ---- ChaCha20 ---- */

#define ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                                        \
    do {                                                                      \
        a += b; d ^= a; d = ROTL32(d, 16);                                    \
        c += d; b ^= c; b = ROTL32(b, 12);                                    \
        a += b; d ^= a; d = ROTL32(d, 8);                                     \
        c += d; b ^= c; b = ROTL32(b, 7);                                     \
    } while (0)
#define DOUBLE_ROUND(x)                                                       \
    do {                                                                      \
        QR(x[0], x[4], x[8], x[12]);                                          \
        QR(x[1], x[5], x[9], x[13]);                                          \
        QR(x[2], x[6], x[10], x[14]);                                         \
        QR(x[3], x[7], x[11], x[15]);                                         \
        QR(x[0], x[5], x[10], x[15]);                                         \
        QR(x[1], x[6], x[11], x[12]);                                         \
        QR(x[2], x[7], x[8], x[13]);                                          \
        QR(x[3], x[4], x[9], x[14]);                                          \
    } while (0)

static void store32_le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void init_state(uint32_t s[16], const uint32_t key[8], const uint32_t nonce[3],
                       uint32_t counter)
{
    s[0] = 0x61707865;
    s[1] = 0x3320646e;
    s[2] = 0x79622d32;
    s[3] = 0x6b206574;
    memcpy(s + 4, key, 32);
    s[12] = counter;
    s[13] = nonce[0];
    s[14] = nonce[1];
    s[15] = nonce[2];
}

#if defined(__GNUC__)
/* Four blocks side by side, one per vector lane: GCC and clang turn this
 * into SIMD code on any target with 128-bit vectors. */
typedef uint32_t v4u32 __attribute__((vector_size(16)));

static void four_blocks(const uint32_t s[16], uint8_t *out)
{
    v4u32 x[16], in[16];
    for (int i = 0; i < 16; i++)
        in[i] = (v4u32){s[i], s[i], s[i], s[i]};
    in[12] += (v4u32){0, 1, 2, 3};
    memcpy(x, in, sizeof x);
    for (int r = 0; r < 10; r++)
        DOUBLE_ROUND(x);
    for (int i = 0; i < 16; i++) {
        x[i] += in[i];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* Words are already in keystream byte order: one store a word. */
        uint32_t w[4];
        memcpy(w, &x[i], sizeof w);
        for (int b = 0; b < 4; b++)
            memcpy(out + 64 * b + 4 * i, &w[b], 4);
#else
        for (int b = 0; b < 4; b++)
            store32_le(out + 64 * b + 4 * i, x[i][b]);
#endif
    }
}
#endif

#if defined(__GNUC__) && defined(__x86_64__) && defined(__BYTE_ORDER__) &&                    \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_EIGHT_LANES 1
/* Eight blocks side by side on AVX2, chosen at run time where the CPU has
 * it: twice the lanes of the portable path, and registers enough to keep
 * the state out of memory. */
typedef uint32_t v8u32 __attribute__((vector_size(32)));

__attribute__((target("avx2"))) static void eight_blocks(const uint32_t s[16], uint8_t *out)
{
    v8u32 x[16], in[16];
    for (int i = 0; i < 16; i++)
        in[i] = (v8u32){s[i], s[i], s[i], s[i], s[i], s[i], s[i], s[i]};
    in[12] += (v8u32){0, 1, 2, 3, 4, 5, 6, 7};
    for (int i = 0; i < 16; i++)
        x[i] = in[i];
    for (int r = 0; r < 10; r++)
        DOUBLE_ROUND(x);
    for (int i = 0; i < 16; i++) {
        uint32_t w[8];
        x[i] += in[i];
        memcpy(w, &x[i], sizeof w);
        for (int b = 0; b < 8; b++)
            memcpy(out + 64 * b + 4 * i, &w[b], 4);
    }
}

static int has_avx2(void)
{
    static _Atomic int cached = -1; /* every thread computes the same */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") ? 1 : 0;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}
#endif

static void one_block(const uint32_t s[16], uint8_t *out)
{
    uint32_t x[16];
    memcpy(x, s, sizeof x);
    for (int r = 0; r < 10; r++)
        DOUBLE_ROUND(x);
    for (int i = 0; i < 16; i++)
        store32_le(out + 4 * i, x[i] + s[i]);
}

void idm__chacha20_blocks(const uint32_t key[8], const uint32_t nonce[3], uint32_t counter,
                          uint8_t *out, size_t nblocks)
{
    uint32_t s[16];
    init_state(s, key, nonce, counter);
#ifdef HAVE_EIGHT_LANES
    if (nblocks >= 8 && has_avx2()) {
        for (; nblocks >= 8; nblocks -= 8, out += 512) {
            eight_blocks(s, out);
            s[12] += 8;
        }
    }
#endif
#if defined(__GNUC__)
    for (; nblocks >= 4; nblocks -= 4, out += 256) {
        four_blocks(s, out);
        s[12] += 4;
    }
#endif
    for (; nblocks > 0; nblocks--, out += 64) {
        one_block(s, out);
        s[12]++;
    }
}

/* ---- fork detection ---- */

_Atomic uint64_t idm__fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void)
{
    atomic_fetch_add_explicit(&idm__fork_gen, 1, memory_order_relaxed);
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, on_fork_child);
}

uint64_t idm__fork_generation(void)
{
    pthread_once(&atfork_once, register_atfork);
    return atomic_load_explicit(&idm__fork_gen, memory_order_relaxed);
}

/* Marks a generator's fork generation while it is being reset in a forked
 * child. The fork counter never reaches 2^63. */
#define FORK_RESETTING (UINT64_C(1) << 63)

/*
 * The generator's fork generation differs from the process's: this is a
 * forked child (or a child's child) and the lock may have been copied held
 * by a thread that does not exist here. Before any thread of this process
 * takes the lock, exactly one of them clears it and restarts the sequence
 * (*last_ms = -1: a child must not continue its parent's); the others wait
 * until it has published the new generation, whose release store also
 * publishes the cleared lock and state. A FORK_RESETTING mark of another
 * generation was left by a reset that a later fork() cut off, and is taken
 * over. Nobody can hold the lock while this runs: no thread of this process
 * takes it before it sees the new generation. Used by the UUIDv7 and ULID
 * generators.
 */
void idm__spin_after_fork(_Atomic uint64_t *fork_gen, idm__spin *lock, idm_unix_ms *last_ms)
{
    uint64_t gen = idm__fork_gen_now();
    uint64_t seen = atomic_load_explicit(fork_gen, memory_order_acquire);
    unsigned n = 0;
    if (seen == IDM__FORK_SHARED)
        return;
    while (seen != gen) {
        if (seen == (gen | FORK_RESETTING)) {
            /* Another thread of this process is resetting: a few stores. */
            if (++n % 64 == 0)
                sched_yield();
            seen = atomic_load_explicit(fork_gen, memory_order_acquire);
        } else if (atomic_compare_exchange_weak_explicit(fork_gen, &seen, gen | FORK_RESETTING,
                                                         memory_order_acquire,
                                                         memory_order_acquire)) {
            idm__spin_init(lock, (int)lock->shared);
            *last_ms = -1;
            atomic_store_explicit(fork_gen, gen, memory_order_release);
            return;
        }
    }
}

/* ---- the per-thread generator ---- */

struct rng_state {
    uint32_t key[8];
    uint64_t fork_gen;
    /* Bytes this seed may still give; 0: reseed before the next byte (also
     * a new state's, never seeded). */
    uint64_t left;
    size_t pos; /* next unused byte of buf; BUF_BYTES when empty */
    uint8_t buf[BUF_BYTES];
};

/*
 * The thread's state lives on the heap behind one pointer in initial-exec
 * TLS: in the shared library a plain _Thread_local would be reached through
 * __tls_get_addr on every call, and a 1 KiB initial-exec object would eat
 * the static TLS space dlopen needs. The pointer's destructor (a pthread
 * key) wipes and frees the state when the thread exits.
 */
static _Thread_local struct rng_state *tls_state __attribute__((tls_model("initial-exec")));
static pthread_key_t tls_key;
static pthread_once_t tls_key_once = PTHREAD_ONCE_INIT;

static void free_state(void *p)
{
    struct rng_state *st = p;
    /* A compiler may drop a memset before free; a volatile pointer keeps
     * the wipe. */
    volatile uint8_t *v = (volatile uint8_t *)st;
    for (size_t i = 0; i < sizeof *st; i++)
        v[i] = 0;
    free(st);
    /* Runs in the exiting thread: a later destructor that draws random
     * bytes gets a fresh state instead of this freed one. */
    tls_state = NULL;
}

static void make_key(void)
{
    pthread_key_create(&tls_key, free_state);
}

static struct rng_state *new_state(void)
{
    struct rng_state *st = calloc(1, sizeof *st);
    if (st == NULL)
        return NULL;
    pthread_once(&tls_key_once, make_key);
    pthread_setspecific(tls_key, st);
    tls_state = st;
    return st;
}

static void refill(struct rng_state *st)
{
    static const uint32_t zero_nonce[3] = {0, 0, 0};
    idm__chacha20_blocks(st->key, zero_nonce, 0, st->buf, BLOCKS);
    /* Fast key erasure: the first 32 bytes become the next key. */
    memcpy(st->key, st->buf, 32);
    memset(st->buf, 0, 32);
    st->pos = 32;
}

static int reseed(struct rng_state *st)
{
    uint8_t *p = (uint8_t *)st->key;
    size_t got = 0;
    uint64_t gen = idm__fork_generation();
    while (got < sizeof st->key) {
        ssize_t r = GETRANDOM(p + got, sizeof st->key - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return idm__fail(IDM_ERANDOM, "rng: getrandom failed: %s", strerror(errno));
        }
        got += (size_t)r;
    }
    st->fork_gen = gen;
    st->left = RESEED_BYTES;
    refill(st);
    return 0;
}

static int system_fill(void *ctx, void *out, size_t n)
{
    struct rng_state *st = tls_state;
    uint8_t *o = out;
    (void)ctx;
    if (IDM__UNLIKELY(st == NULL) && (st = new_state()) == NULL)
        return idm__fail(IDM_ENOMEM, "rng: no memory for the thread's state");
    /* A forked child's copy of the parent's state: a new seed before the
     * first byte. */
    if (IDM__UNLIKELY(st->fork_gen != atomic_load_explicit(&idm__fork_gen, memory_order_relaxed)))
        st->left = 0;
    if (n <= 16 && BUF_BYTES - st->pos >= n && st->left >= n) {
        /* The common case, a few bytes for one id: a short loop beats two
         * calls into the C library. (A new or forked state has left 0, so
         * its buffer is never served before a seed.) */
        uint8_t *b = st->buf + st->pos;
        for (size_t i = 0; i < n; i++) {
            o[i] = b[i];
            b[i] = 0;
        }
        st->pos += n;
        st->left -= n;
        return 0;
    }
    while (n > 0) {
        size_t take;
        /* A seed's last byte may fall inside a request: the rest of the
         * request comes from the next seed. (If getrandom fails there, part
         * of out is written and the call fails.) */
        if (st->left == 0) {
            int rc = reseed(st);
            if (rc != 0)
                return rc;
        } else if (st->pos == BUF_BYTES) {
            refill(st);
        }
        take = BUF_BYTES - st->pos < n ? BUF_BYTES - st->pos : n;
        if (take > st->left)
            take = (size_t)st->left;
        memcpy(o, st->buf + st->pos, take);
        memset(st->buf + st->pos, 0, take);
        st->pos += take;
        st->left -= take;
        o += take;
        n -= take;
    }
    return 0;
}

static const idm_rng system_rng = {NULL, system_fill};

const idm_rng *idm_rng_system(void)
{
    return &system_rng;
}

int idm_random_bytes(void *buf, size_t n)
{
    if (buf == NULL && n != 0)
        return idm__fail(IDM_EINVAL, "rng: no buffer");
    return system_fill(NULL, buf, n);
}

int idm__rng_fill(const idm_rng *rng, void *buf, size_t n)
{
    int rc;
    if (rng == NULL || rng == &system_rng)
        return system_fill(NULL, buf, n);
    rc = rng->fill(rng->ctx, buf, n);
    if (rc != 0 && idm_error_detail()[0] == '\0')
        return idm__fail(rc < 0 ? rc : IDM_ERANDOM, "rng: the random source failed");
    return rc < 0 ? rc : rc != 0 ? IDM_ERANDOM : 0;
}
