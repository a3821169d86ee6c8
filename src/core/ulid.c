/* SPDX-License-Identifier: MIT */
/*
 * ULIDs per the ULID specification: 48-bit ms and 80 random bits, Crockford
 * base32 text, and the spec's monotonic mode (the random part plus one
 * within a millisecond; overflow is an error, never a wrap). A monotonic
 * generator's state lives under a short lock (idm__spin, see spin.c);
 * idm_ulid_next_local runs the same steps on the calling thread's own
 * state for the generator (local.c), with no lock.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MS_LIMIT (INT64_C(1) << 48)

/* A ULID of ms (checked) and 10 random bytes. */
static void pack(idm_ulid *out, uint64_t ms, const uint8_t rand[10])
{
    for (int i = 0; i < 6; i++)
        out->b[i] = (uint8_t)(ms >> (40 - 8 * i));
    memcpy(out->b + 6, rand, 10);
}

int idm_ulid_build(idm_unix_ms ms, const uint8_t rand[10], idm_ulid *out)
{
    idm__clear_detail();
    if (ms < 0 || ms >= MS_LIMIT)
        return idm__fail(IDM_ERANGE, "ulid: time %lld ms is outside 0 to 2^48-1", (long long)ms);
    pack(out, (uint64_t)ms, rand);
    return 0;
}

struct idm_ulid_gen {
    /* What idm_ulid_next writes, first: on one cache line of a generator
     * from idm_ulid_gen_new (allocated on a line's boundary). */
    idm__spin lock;
    idm__runs runs;      /* idm_ulid_next's runs (internal.h) */
    idm_unix_ms last_ms; /* -1 before the first id */
    uint16_t last_hi;    /* the 80-bit random part: top 16 bits */
    uint64_t last_lo;    /* and low 64 bits */
    /* The fork generation the lock and state belong to (| FORK_RESETTING
     * while being reset); see idm__spin_after_fork. */
    _Atomic uint64_t fork_gen;
    /* What idm_ulid_next_local reads sits a cache line away from that. */
    char pad_[64];
    const idm_clock *clock;
    const idm_rng *rng;
    uint64_t serial; /* the key of its per-thread states (local.c) */
    bool monotonic;
};

int idm_ulid_gen_new(idm_ulid_gen **out, const idm_clock *clock, const idm_rng *rng,
                     bool monotonic)
{
    idm_ulid_gen *g;
    idm__clear_detail();
    if (out == NULL)
        return idm__fail(IDM_EINVAL, "ulid: no output pointer");
    g = idm__alloc_lines(sizeof *g);
    if (g == NULL)
        return IDM_ENOMEM;
    g->clock = clock == idm_clock_system() ? NULL : clock;
    g->rng = rng;
    g->monotonic = monotonic;
    g->serial = idm__serial_new();
    idm__spin_init(&g->lock, 0);
    g->last_ms = -1;
    atomic_init(&g->fork_gen, idm__fork_generation());
    *out = g;
    return 0;
}

void idm_ulid_gen_free(idm_ulid_gen *g)
{
    free(g);
}

size_t idm_ulid_gen_shared_size(void)
{
    return sizeof(idm_ulid_gen);
}

int idm_ulid_gen_init_shared(idm_ulid_gen **out, void *mem, size_t size, const idm_clock *clock,
                             const idm_rng *rng, bool monotonic)
{
    idm_ulid_gen *g = mem;
    idm__clear_detail();
    if (out == NULL || mem == NULL || (uintptr_t)mem % 8 != 0 || size < sizeof *g)
        return idm__fail(IDM_EINVAL, "ulid: shared memory must be %zu bytes, 8-byte aligned",
                         sizeof *g);
    memset(g, 0, sizeof *g);
    g->clock = clock == idm_clock_system() ? NULL : clock;
    g->rng = rng;
    g->monotonic = monotonic;
    g->serial = idm__serial_new_shared(mem);
    idm__spin_init(&g->lock, 1);
    g->last_ms = -1;
    atomic_init(&g->fork_gen, IDM__FORK_SHARED);
    *out = g;
    return 0;
}

idm__spin *idm__ulid_gen_lock(idm_ulid_gen *g)
{
    return &g->lock;
}

int idm_ulid_next(idm_ulid_gen *g, idm_ulid *out)
{
    uint8_t rnd[10];
    idm_wall_ns now_ns = idm__clock_ns(g->clock);
    idm_unix_ms now, ms;
    uint16_t hi;
    uint64_t lo, gen;
    int rc;

    /* Another thread minting a run on this generator: wait for its end,
     * then read the clock again (see idm__runs). */
    if (g->monotonic && g->clock == NULL)
        now_ns = idm__runs_turn(&g->runs, now_ns);
    now = idm__floordiv(now_ns, IDM__NS_PER_MS);
    if (IDM__UNLIKELY(now < 0 || now >= MS_LIMIT))
        return idm__fail(IDM_ERANGE, "ulid: the clock reads %lld ms, outside 0 to 2^48-1",
                         (long long)now);
    if (!g->monotonic) {
        rc = idm__rng_fill(g->rng, rnd, sizeof rnd);
        if (rc != 0)
            return rc;
        pack(out, (uint64_t)now, rnd);
        return 0;
    }

    /* In a forked child, reset the lock and the sequence before taking the
     * lock (see idm__spin_after_fork); otherwise one load and compare. */
    gen = idm__fork_gen_now();
    if (IDM__UNLIKELY(atomic_load_explicit(&g->fork_gen, memory_order_acquire) != gen) &&
        atomic_load_explicit(&g->fork_gen, memory_order_relaxed) != IDM__FORK_SHARED)
        idm__spin_after_fork(&g->fork_gen, &g->lock, &g->last_ms);
    idm__spin_lock(&g->lock);
    if (now > g->last_ms) {
        /* A new millisecond: fresh random bits. Drawn with the lock
         * released; only the first id of a millisecond pays for them. */
        idm__spin_unlock(&g->lock);
        rc = idm__rng_fill(g->rng, rnd, sizeof rnd);
        if (rc != 0)
            return rc;
        idm__spin_lock(&g->lock);
        if (now > g->last_ms) {
            g->last_ms = now;
            g->last_hi = (uint16_t)(rnd[0] << 8 | rnd[1]);
            g->last_lo = idm__load_be64(rnd + 2);
            goto emit;
        }
        /* Another thread took this millisecond meanwhile: increment. */
    }
    /* The spec's monotonic step: the 80-bit random part plus one. */
    if (IDM__UNLIKELY(g->last_lo == UINT64_MAX && g->last_hi == UINT16_MAX)) {
        idm__spin_unlock(&g->lock);
        return idm__fail(IDM_EOVERFLOW, "ulid: the random part overflowed within millisecond %lld",
                         (long long)g->last_ms);
    }
    if (++g->last_lo == 0)
        g->last_hi++;
emit:
    ms = g->last_ms;
    hi = g->last_hi;
    lo = g->last_lo;
    idm__runs_mark(&g->runs, now_ns);
    idm__spin_unlock(&g->lock);
    idm__store_be64(out->b, (uint64_t)ms << 16 | hi);
    idm__store_be64(out->b + 8, lo);
    return 0;
}

/*
 * The calling thread's own sequence for g (local.c keeps it): the same
 * steps as idm_ulid_next in monotonic mode with no lock and no shared
 * write. A state new to this thread (hi IDM__TSEQ_RESTART) starts afresh
 * above its floor.
 */
int idm_ulid_next_local(idm_ulid_gen *g, idm_ulid *out)
{
    uint8_t rnd[10];
    idm_unix_ms now, ms;
    idm__tseq *e;
    uint64_t hi, lo;
    int rc;

    if (!g->monotonic)
        return idm_ulid_next(g, out);
    now = idm__clock_ms(g->clock);
    if (IDM__UNLIKELY(now < 0 || now >= MS_LIMIT))
        return idm__fail(IDM_ERANGE, "ulid: the clock reads %lld ms, outside 0 to 2^48-1",
                         (long long)now);
    e = idm__tseq_find(IDM__TSEQ_ULID, g->serial);
    if (IDM__UNLIKELY(e == NULL))
        return idm__fail(IDM_ENOMEM, "ulid: no memory for the thread's sequences");
    if (now > e->last_ms) {
        ms = now;
    } else if (IDM__UNLIKELY(e->hi == IDM__TSEQ_RESTART)) {
        ms = e->last_ms + 1;
        if (IDM__UNLIKELY(ms >= MS_LIMIT))
            return idm__fail(IDM_ERANGE, "ulid: the 48-bit timestamp is exhausted");
    } else {
        /* The spec's monotonic step: the 80-bit random part plus one. */
        if (IDM__UNLIKELY(e->lo == UINT64_MAX && e->hi == UINT16_MAX))
            return idm__fail(IDM_EOVERFLOW,
                             "ulid: the random part overflowed within millisecond %lld",
                             (long long)e->last_ms);
        ms = e->last_ms;
        lo = e->lo + 1;
        hi = e->hi + (lo == 0);
        goto emit;
    }
    rc = idm__rng_fill(g->rng, rnd, sizeof rnd);
    if (rc != 0)
        return rc;
    hi = (uint64_t)rnd[0] << 8 | rnd[1];
    lo = idm__load_be64(rnd + 2);
emit:
    e->last_ms = ms;
    e->hi = hi;
    e->lo = lo;
    idm__store_be64(out->b, (uint64_t)ms << 16 | hi);
    idm__store_be64(out->b + 8, lo);
    return 0;
}

/* The n characters of the low 5n bits of v, most significant first. */
static inline void put_base32(char *out, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        out[i] = idm__b32_alphabet[(v >> (5 * (n - 1 - i))) & 31];
}

static inline uint64_t load40(const uint8_t *b)
{
    return (uint64_t)b[0] << 32 | (uint64_t)b[1] << 24 | (uint64_t)b[2] << 16 |
           (uint64_t)b[3] << 8 | b[4];
}

void idm_ulid_format(const idm_ulid *u, char out[IDM_ULID_TEXT_MAX])
{
    /* 10 characters for the 48-bit time (the first holds its top 3 bits),
     * then 8 for each 40-bit half of the randomness: 26 in all, and every
     * shift stays within one 64-bit word. */
    put_base32(out, load40(u->b) << 8 | u->b[5], 10);
    put_base32(out + 10, load40(u->b + 6), 8);
    put_base32(out + 18, load40(u->b + 11), 8);
    out[26] = '\0';
}

int idm_ulid_parse(const char *text, idm_ulid *out)
{
    char q[IDM__QUOTE_MAX];
    uint64_t hi = 0, lo = 0;
    size_t n;
    idm__clear_detail();
    if (text == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "ulid: no text to parse");
    n = strlen(text);
    if (n != 26)
        return idm__fail(IDM_EPARSE, "ulid: '%s' has length %zu, not 26", idm__quote(text, q), n);
    for (size_t i = 0; i < 26; i++) {
        int d = idm__unbase32((unsigned char)text[i]);
        if (d < 0)
            return idm__fail(IDM_EPARSE,
                             "ulid: '%s' has '%c' at position %zu, outside Crockford base32",
                             idm__quote(text, q), text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?', i + 1);
        hi = hi << 5 | lo >> 59;
        lo = lo << 5 | (uint64_t)d;
    }
    /* Only once every character is known good: a first character above 7
     * means a value over 128 bits. */
    if (idm__unbase32((unsigned char)text[0]) > 7)
        return idm__fail(IDM_ERANGE,
                         "ulid: '%s' is above 7ZZZZZZZZZZZZZZZZZZZZZZZZZ (more than 128 bits)",
                         idm__quote(text, q));
    for (int i = 0; i < 8; i++) {
        out->b[i] = (uint8_t)(hi >> (56 - 8 * i));
        out->b[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
    }
    return 0;
}

idm_unix_ms idm_ulid_time(const idm_ulid *u)
{
    return (idm_unix_ms)(load40(u->b) << 8 | u->b[5]);
}

void idm_ulid_to_uuid(const idm_ulid *in, idm_uuid *out)
{
    memcpy(out->b, in->b, 16);
}

void idm_uuid_to_ulid(const idm_uuid *in, idm_ulid *out)
{
    memcpy(out->b, in->b, 16);
}
