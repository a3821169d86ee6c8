/* SPDX-License-Identifier: MIT */
/*
 * ObjectIds per MongoDB's specification: 4 bytes of Unix seconds, a 5-byte
 * value random per process, a 3-byte counter from a random start.
 *
 * The process value and the fork generation it belongs to share one atomic
 * word, (value << 24) | generation mod 2^24, so a forked child notices with
 * one load that it needs a value of its own, and draws one lock-free.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct idm_objectid_gen {
    const idm_clock *clock;
    const idm_rng *rng;
    _Atomic uint64_t process; /* 40-bit value << 24 | fork generation */
    _Atomic uint32_t counter;
};

void idm_objectid_build(uint32_t seconds, const uint8_t process[5], uint32_t counter,
                        idm_objectid *out)
{
    out->b[0] = (uint8_t)(seconds >> 24);
    out->b[1] = (uint8_t)(seconds >> 16);
    out->b[2] = (uint8_t)(seconds >> 8);
    out->b[3] = (uint8_t)seconds;
    memcpy(out->b + 4, process, 5);
    out->b[9] = (uint8_t)(counter >> 16);
    out->b[10] = (uint8_t)(counter >> 8);
    out->b[11] = (uint8_t)counter;
}

/* Draw a process value and counter start for fork generation gen. */
static int draw(idm_objectid_gen *g, uint64_t gen, uint64_t *word)
{
    uint8_t r[8];
    uint64_t v = 0;
    int rc = idm__rng_fill(g->rng, r, sizeof r);
    if (rc != 0)
        return rc;
    for (int i = 0; i < 5; i++)
        v = v << 8 | r[i];
    *word = v << 24 | (gen & 0xFFFFFF);
    atomic_store_explicit(&g->counter, (uint32_t)r[5] << 16 | (uint32_t)r[6] << 8 | r[7],
                          memory_order_relaxed);
    return 0;
}

int idm_objectid_gen_new(idm_objectid_gen **out, const idm_clock *clock, const idm_rng *rng)
{
    idm_objectid_gen *g;
    uint64_t word;
    int rc;
    idm__clear_detail();
    if (out == NULL)
        return idm__fail(IDM_EINVAL, "objectid: no output pointer");
    g = calloc(1, sizeof *g);
    if (g == NULL)
        return IDM_ENOMEM;
    g->clock = clock == idm_clock_system() ? NULL : clock;
    g->rng = rng;
    rc = draw(g, idm__fork_generation(), &word);
    if (rc != 0) {
        free(g);
        return rc;
    }
    atomic_store(&g->process, word);
    *out = g;
    return 0;
}

void idm_objectid_gen_free(idm_objectid_gen *g)
{
    free(g);
}

int idm_objectid_next(idm_objectid_gen *g, idm_objectid *out)
{
    idm_unix_ms now = idm__clock_ms(g->clock);
    uint64_t gen = idm__fork_gen_now();
    uint64_t word = atomic_load_explicit(&g->process, memory_order_acquire);
    uint8_t process[5];
    uint32_t c;

    if (IDM__UNLIKELY(now < 0 || now / 1000 > UINT32_MAX))
        return idm__fail(IDM_ERANGE, "objectid: the clock reads %lld ms, outside 1970 to 2106",
                         (long long)now);
    if (IDM__UNLIKELY((word & 0xFFFFFF) != (gen & 0xFFFFFF))) {
        /* A forked child: a process value of its own. If two threads race
         * here, one CAS wins and both use its value. */
        uint64_t fresh;
        int rc = draw(g, gen, &fresh);
        if (rc != 0)
            return rc;
        if (atomic_compare_exchange_strong(&g->process, &word, fresh))
            word = fresh;
    }
    c = atomic_fetch_add_explicit(&g->counter, 1, memory_order_relaxed);
    for (int i = 0; i < 5; i++)
        process[i] = (uint8_t)(word >> (56 - 8 * i));
    idm_objectid_build((uint32_t)(now / 1000), process, c & 0xFFFFFF, out);
    return 0;
}

void idm_objectid_format(const idm_objectid *o, char out[IDM_OBJECTID_TEXT_MAX])
{
    for (int i = 0; i < 12; i++) {
        out[2 * i] = idm__hex[o->b[i] >> 4];
        out[2 * i + 1] = idm__hex[o->b[i] & 15];
    }
    out[24] = '\0';
}

int idm_objectid_parse(const char *text, idm_objectid *out)
{
    char q[IDM__QUOTE_MAX];
    idm_objectid o;
    idm__clear_detail();
    if (text == NULL || out == NULL)
        return idm__fail(IDM_EINVAL, "objectid: no text to parse");
    for (int i = 0; i < 24; i++) {
        int d = idm__unhex(text[i]);
        if (d < 0) {
            if (text[i] == '\0')
                return idm__fail(IDM_EPARSE, "objectid: '%s' has length %d, not 24", idm__quote(text, q), i);
            return idm__fail(IDM_EPARSE, "objectid: '%s' has a non-hex character at position %d",
                             idm__quote(text, q), i + 1);
        }
        if (i % 2 == 0)
            o.b[i / 2] = (uint8_t)(d << 4);
        else
            o.b[i / 2] |= (uint8_t)d;
    }
    if (text[24] != '\0')
        return idm__fail(IDM_EPARSE, "objectid: '%s' is longer than 24 characters", idm__quote(text, q));
    *out = o;
    return 0;
}

idm_unix_ms idm_objectid_time(const idm_objectid *o)
{
    uint32_t s = (uint32_t)o->b[0] << 24 | (uint32_t)o->b[1] << 16 | (uint32_t)o->b[2] << 8 | o->b[3];
    return (idm_unix_ms)s * 1000;
}
