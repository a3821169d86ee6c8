/* SPDX-License-Identifier: MIT */
/*
 * UUIDs per RFC 9562: version 4, version 7 with monotonic random (section
 * 6.2, method 2), and the canonical text form. See uuid.h for the choices.
 *
 * The v7 generator's state (last timestamp and last 74-bit value) is more
 * than one word, so it lives under a short lock held for a few
 * instructions (idm__spin: spins briefly, then sleeps; see spin.c);
 * randomness is drawn before the lock is taken. fork() may copy that lock
 * held (another thread of the parent was inside it), so a forked child
 * resets the lock and the sequence before any of its threads takes the lock:
 * see idm__spin_after_fork. idm_uuid7_next_local runs the same steps on the
 * calling thread's own state for the generator (local.c), with no lock.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char idm__hex[16] = "0123456789abcdef";

#define MS_LIMIT (INT64_C(1) << 48)
#define R74_HI_MASK UINT64_C(0x3FF) /* the top 10 of the 74 bits */

void idm_uuid4_from_bytes(const uint8_t random[16], idm_uuid *out)
{
    memcpy(out->b, random, 16);
    out->b[6] = (uint8_t)((out->b[6] & 0x0F) | 0x40);
    out->b[8] = (uint8_t)((out->b[8] & 0x3F) | 0x80);
}

int idm_uuid4(const idm_rng *rng, idm_uuid *out)
{
    uint8_t r[16];
    int rc = idm__rng_fill(rng, r, sizeof r);
    if (IDM__UNLIKELY(rc != 0))
        return rc;
    idm_uuid4_from_bytes(r, out);
    return 0;
}

/* The 74 random bits as (hi: top 10 bits, lo: low 64 bits). */
typedef struct r74 {
    uint64_t hi, lo;
} r74;

static r74 r74_from_bytes(const uint8_t b[10])
{
    /* Big-endian, left-aligned: the first 74 of 80 bits. */
    uint64_t top = idm__load_be64(b);
    uint64_t bottom = (uint64_t)b[8] << 8 | b[9];
    r74 r;
    r.hi = top >> 54;
    r.lo = top << 10 | bottom >> 6;
    return r;
}

static void compose7(idm_unix_ms ms, r74 r, idm_uuid *out)
{
    uint64_t rand_a = (r.hi << 2) | (r.lo >> 62);          /* 12 bits */
    uint64_t rand_b = r.lo & UINT64_C(0x3FFFFFFFFFFFFFFF); /* 62 bits */
    idm__store_be64(out->b, (uint64_t)ms << 16 | 0x7000 | rand_a);
    idm__store_be64(out->b + 8, UINT64_C(0x8000000000000000) | rand_b);
}

int idm_uuid7_build(idm_unix_ms ms, const uint8_t rand[10], idm_uuid *out)
{
    idm__clear_detail();
    if (ms < 0 || ms >= MS_LIMIT)
        return idm__fail(IDM_ERANGE, "uuid7: time %lld ms is outside 0 to 2^48-1", (long long)ms);
    compose7(ms, r74_from_bytes(rand), out);
    return 0;
}

struct idm_uuid7_gen {
    /* What idm_uuid7_next writes, first: on one cache line of a generator
     * from idm_uuid7_gen_new (allocated on a line's boundary). */
    idm__spin lock;
    idm__runs runs;         /* idm_uuid7_next's runs (internal.h) */
    idm_unix_ms last_ms;    /* -1 before the first id */
    r74 last;
    /* The fork generation (idm__fork_gen) the lock and state belong to, or
     * a generation | FORK_RESETTING while a thread of that generation
     * resets them; see idm__spin_after_fork. */
    _Atomic uint64_t fork_gen;
    /* What idm_uuid7_next_local reads sits a cache line away from that. */
    char pad_[64];
    const idm_clock *clock; /* NULL: the system clock */
    const idm_rng *rng;     /* NULL: the system rng */
    uint64_t serial;        /* the key of its per-thread states (local.c) */
};

int idm_uuid7_gen_new(idm_uuid7_gen **out, const idm_clock *clock, const idm_rng *rng)
{
    idm_uuid7_gen *g;
    idm__clear_detail();
    if (out == NULL)
        return idm__fail(IDM_EINVAL, "uuid7: no output pointer");
    g = idm__alloc_lines(sizeof *g);
    if (g == NULL)
        return IDM_ENOMEM;
    g->clock = clock == idm_clock_system() ? NULL : clock;
    g->rng = rng;
    g->serial = idm__serial_new();
    idm__spin_init(&g->lock, 0);
    g->last_ms = -1;
    atomic_init(&g->fork_gen, idm__fork_generation());
    *out = g;
    return 0;
}

void idm_uuid7_gen_free(idm_uuid7_gen *g)
{
    free(g);
}

size_t idm_uuid7_gen_shared_size(void)
{
    return sizeof(idm_uuid7_gen);
}

int idm_uuid7_gen_init_shared(idm_uuid7_gen **out, void *mem, size_t size,
                              const idm_clock *clock, const idm_rng *rng)
{
    idm_uuid7_gen *g = mem;
    idm__clear_detail();
    if (out == NULL || mem == NULL || (uintptr_t)mem % 8 != 0 || size < sizeof *g)
        return idm__fail(IDM_EINVAL, "uuid7: shared memory must be %zu bytes, 8-byte aligned",
                         sizeof *g);
    memset(g, 0, sizeof *g);
    g->clock = clock == idm_clock_system() ? NULL : clock;
    g->rng = rng;
    g->serial = idm__serial_new_shared(mem);
    idm__spin_init(&g->lock, 1);
    g->last_ms = -1;
    atomic_init(&g->fork_gen, IDM__FORK_SHARED);
    *out = g;
    return 0;
}

idm__spin *idm__uuid7_gen_lock(idm_uuid7_gen *g)
{
    return &g->lock;
}

/*
 * Increments for the system rng come eight at a time from a small
 * thread-local pool (one draw instead of eight); each is wiped as it is
 * used, and the pool is dropped in a forked child. An injected rng is asked
 * for 4 bytes per id, as uuid.h says, so tests can predict every draw.
 */
static _Thread_local struct inc_pool {
    uint32_t inc[8];
    unsigned left;
    uint64_t gen;
} pool __attribute__((tls_model("initial-exec")));

static int next_increment(const idm_rng *rng, uint64_t gen, uint32_t *inc)
{
    struct inc_pool *p = &pool;
    if (rng != NULL && rng != idm_rng_system())
        return idm__rng_fill(rng, inc, sizeof *inc);
    if (IDM__UNLIKELY(p->left == 0 || p->gen != gen)) {
        int rc = idm__rng_fill(NULL, p->inc, sizeof p->inc);
        if (rc != 0)
            return rc;
        p->left = 8;
        p->gen = gen;
    }
    p->left--;
    *inc = p->inc[p->left];
    p->inc[p->left] = 0;
    return 0;
}

int idm_uuid7_next(idm_uuid7_gen *g, idm_uuid *out)
{
    uint8_t rnd[10];
    uint32_t inc32;
    idm_wall_ns now_ns = idm__clock_ns(g->clock);
    idm_unix_ms now, ms;
    uint64_t gen;
    r74 v;
    int rc;

    /* Another thread minting a run on this generator: wait for its end,
     * then read the clock again (see idm__runs). */
    if (g->clock == NULL)
        now_ns = idm__runs_turn(&g->runs, now_ns);
    now = idm__floordiv(now_ns, IDM__NS_PER_MS);
    if (IDM__UNLIKELY(now < 0 || now >= MS_LIMIT))
        return idm__fail(IDM_ERANGE, "uuid7: the clock reads %lld ms, outside 0 to 2^48-1",
                         (long long)now);
    /* The increment for a later id in the same millisecond, drawn before
     * the lock. A failed draw leaves the state alone. */
    gen = idm__fork_gen_now();
    rc = next_increment(g->rng, gen, &inc32);
    if (IDM__UNLIKELY(rc != 0))
        return rc;

    /* In a forked child, reset the lock and the sequence before taking the
     * lock (see idm__spin_after_fork); otherwise one load and compare. */
    if (IDM__UNLIKELY(atomic_load_explicit(&g->fork_gen, memory_order_acquire) != gen) &&
        atomic_load_explicit(&g->fork_gen, memory_order_relaxed) != IDM__FORK_SHARED)
        idm__spin_after_fork(&g->fork_gen, &g->lock, &g->last_ms);
    idm__spin_lock(&g->lock);
    if (now > g->last_ms) {
    fresh:
        /* A new millisecond: 74 fresh bits, drawn with the lock released;
         * only the first id of a millisecond pays for them. */
        idm__spin_unlock(&g->lock);
        rc = idm__rng_fill(g->rng, rnd, sizeof rnd);
        if (IDM__UNLIKELY(rc != 0))
            return rc;
        idm__spin_lock(&g->lock);
        if (now > g->last_ms) {
            ms = now;
            v = r74_from_bytes(rnd);
            goto done;
        }
        /* Another thread took this millisecond meanwhile: increment. */
    }
    /* Same millisecond, or the clock stepped back: keep the last timestamp
     * and add 1 to 2^32 to the 74-bit value. */
    ms = g->last_ms;
    v.lo = g->last.lo + 1 + inc32;
    v.hi = g->last.hi + (v.lo < g->last.lo);
    if (IDM__UNLIKELY(v.hi > R74_HI_MASK)) {
        /* The 74 bits are spent: move the timestamp one ms ahead. */
        if (ms + 1 >= MS_LIMIT) {
            idm__spin_unlock(&g->lock);
            return idm__fail(IDM_ERANGE, "uuid7: the 48-bit timestamp is exhausted");
        }
        now = ms + 1;
        goto fresh;
    }
done:
    g->last_ms = ms;
    g->last = v;
    idm__runs_mark(&g->runs, now_ns);
    idm__spin_unlock(&g->lock);
    compose7(ms, v, out);
    return 0;
}

/*
 * The calling thread's own sequence for g (local.c keeps it): the same
 * steps as idm_uuid7_next with no lock and no shared write. A state new to
 * this thread (hi IDM__TSEQ_RESTART) starts afresh above its floor.
 */
int idm_uuid7_next_local(idm_uuid7_gen *g, idm_uuid *out)
{
    uint8_t rnd[10];
    uint32_t inc32;
    idm_unix_ms now = idm__clock_ms(g->clock), ms;
    idm__tseq *e;
    r74 v;
    int rc;

    if (IDM__UNLIKELY(now < 0 || now >= MS_LIMIT))
        return idm__fail(IDM_ERANGE, "uuid7: the clock reads %lld ms, outside 0 to 2^48-1",
                         (long long)now);
    /* The increment first, as idm_uuid7_next draws it (uuid.h). */
    rc = next_increment(g->rng, idm__fork_gen_now(), &inc32);
    if (IDM__UNLIKELY(rc != 0))
        return rc;
    e = idm__tseq_find(IDM__TSEQ_UUID7, g->serial);
    if (IDM__UNLIKELY(e == NULL))
        return idm__fail(IDM_ENOMEM, "uuid7: no memory for the thread's sequences");
    if (now > e->last_ms) {
        ms = now;
    } else if (IDM__UNLIKELY(e->hi == IDM__TSEQ_RESTART)) {
        ms = e->last_ms + 1;
    } else {
        /* Same millisecond, or the clock stepped back: as idm_uuid7_next. */
        ms = e->last_ms;
        v.lo = e->lo + 1 + inc32;
        v.hi = e->hi + (v.lo < e->lo);
        if (IDM__LIKELY(v.hi <= R74_HI_MASK))
            goto done;
        ms++;
    }
    if (IDM__UNLIKELY(ms >= MS_LIMIT))
        return idm__fail(IDM_ERANGE, "uuid7: the 48-bit timestamp is exhausted");
    rc = idm__rng_fill(g->rng, rnd, sizeof rnd);
    if (IDM__UNLIKELY(rc != 0))
        return rc;
    v = r74_from_bytes(rnd);
done:
    e->last_ms = ms;
    e->hi = v.hi;
    e->lo = v.lo;
    compose7(ms, v, out);
    return 0;
}

void idm_uuid_format(const idm_uuid *u, char out[IDM_UUID_TEXT_MAX])
{
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = idm__hex[u->b[i] >> 4];
        *p++ = idm__hex[u->b[i] & 15];
    }
    *p = '\0';
}

int idm_uuid_parse(const char *text, idm_uuid *out)
{
    char q[IDM__QUOTE_MAX];
    idm_uuid u;
    size_t pos = 0;
    idm__clear_detail();
    if (text == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "uuid: no text to parse");
    for (int i = 0; i < 16; i++) {
        int h, l;
        if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
            if (text[pos] != '-')
                return idm__fail(IDM_EPARSE,
                                 "uuid: '%s' needs a dash at position %zu (want "
                                 "8-4-4-4-12 hex digits)",
                                 idm__quote(text, q), pos + 1);
            pos++;
        }
        h = idm__unhex(text[pos]);
        l = h < 0 ? -1 : idm__unhex(text[pos + 1]);
        if (h < 0 || l < 0) {
            size_t bad = h < 0 ? pos : pos + 1;
            if (text[bad] == '\0')
                return idm__fail(IDM_EPARSE, "uuid: '%s' has length %zu, not 36", idm__quote(text, q), bad);
            return idm__fail(IDM_EPARSE, "uuid: '%s' has a non-hex character at position %zu",
                             idm__quote(text, q), bad + 1);
        }
        u.b[i] = (uint8_t)(h << 4 | l);
        pos += 2;
    }
    if (text[pos] != '\0')
        return idm__fail(IDM_EPARSE, "uuid: '%s' is longer than 36 characters", idm__quote(text, q));
    *out = u;
    return 0;
}

int idm_uuid_version(const idm_uuid *u)
{
    return u->b[6] >> 4;
}

int idm_uuid_variant(const idm_uuid *u)
{
    uint8_t v = u->b[8];
    if ((v & 0x80) == 0)
        return IDM_UUID_VARIANT_NCS;
    if ((v & 0x40) == 0)
        return IDM_UUID_VARIANT_RFC;
    if ((v & 0x20) == 0)
        return IDM_UUID_VARIANT_MICROSOFT;
    return IDM_UUID_VARIANT_FUTURE;
}

int idm_uuid7_time(const idm_uuid *u, idm_unix_ms *ms)
{
    uint64_t t = 0;
    idm__clear_detail();
    if (idm_uuid_version(u) != 7 || idm_uuid_variant(u) != IDM_UUID_VARIANT_RFC)
        return idm__fail(IDM_EINVAL, "uuid: version %d, variant %d is not a UUIDv7",
                         idm_uuid_version(u), idm_uuid_variant(u));
    for (int i = 0; i < 6; i++)
        t = t << 8 | u->b[i];
    *ms = (idm_unix_ms)t;
    return 0;
}
