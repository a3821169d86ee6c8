/* SPDX-License-Identifier: MIT */
/*
 * The per-thread states behind idm_uuid7_next_local and
 * idm_ulid_next_local (see internal.h): generator serials, and each
 * thread's small cache of sequences; and the generators' line-aligned
 * allocation. The minting itself is in uuid.c and
 * ulid.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static _Atomic uint64_t next_serial = 1;

uint64_t idm__serial_new(void)
{
    return atomic_fetch_add_explicit(&next_serial, 1, memory_order_relaxed);
}

void *idm__alloc_lines(size_t size)
{
    size_t rounded = (size + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded);
    if (p != NULL)
        memset(p, 0, rounded);
    return p;
}

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/*
 * A generator in shared memory is used by processes whose counters all
 * start at 1, and may be initialised again in place: its serial must
 * differ from every process-local one (the top bit) and from the one of
 * any earlier initialisation (the wall and monotonic clocks in ns, the
 * process id, this process's counter and the address, mixed). Never
 * fails, unlike a draw from the rng.
 */
uint64_t idm__serial_new_shared(const void *mem)
{
    struct timespec wall, mono;
    uint64_t h;
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    h = mix64((uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec);
    h = mix64(h ^ ((uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec));
    h = mix64(h ^ (uint64_t)getpid());
    h = mix64(h ^ idm__serial_new());
    h = mix64(h ^ (uint64_t)(uintptr_t)mem);
    return IDM__SERIAL_SHARED | (h >> 1);
}

_Thread_local idm__tseq_thread *idm__tseq_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t tls_key;
static pthread_once_t tls_key_once = PTHREAD_ONCE_INIT;

static void free_thread(void *p)
{
    free(p);
    /* Runs in the exiting thread: a later destructor that mints gets a
     * new block instead of this freed one. */
    idm__tseq_tls = NULL;
}

static void make_key(void)
{
    pthread_key_create(&tls_key, free_thread);
}

/* No state, no floor: a new thread's, or a forked child's (the parent's
 * sequences must not go on in the child). */
static void reset(idm__tseq_thread *t)
{
    memset(t->set, 0, sizeof t->set);
    for (int k = 0; k < IDM__TSEQ_KINDS; k++)
        for (int i = 0; i < IDM__TSEQ_SETS; i++) {
            for (int w = 0; w < IDM__TSEQ_WAYS; w++)
                t->set[k][i].way[w].last_ms = -1;
            t->set[k][i].floor_ms = -1;
        }
    t->fork_gen = idm__fork_generation();
}

idm__tseq *idm__tseq_find_slow(int kind, uint64_t serial)
{
    idm__tseq_thread *t = idm__tseq_tls;
    idm__tseq_set *set;
    idm__tseq found;
    int w;

    if (IDM__UNLIKELY(t == NULL)) {
        t = malloc(sizeof *t);
        if (t == NULL)
            return NULL;
        pthread_once(&tls_key_once, make_key);
        pthread_setspecific(tls_key, t);
        idm__tseq_tls = t;
        reset(t);
    } else if (IDM__UNLIKELY(t->fork_gen != idm__fork_gen_now())) {
        reset(t);
    }
    set = &t->set[kind][serial % IDM__TSEQ_SETS];
    for (w = 0; w < IDM__TSEQ_WAYS; w++)
        if (set->way[w].serial == serial || set->way[w].serial == 0)
            break;
    if (w < IDM__TSEQ_WAYS && set->way[w].serial == serial) {
        found = set->way[w];
    } else {
        if (w == IDM__TSEQ_WAYS) {
            /* Full: drop the least recently used state. Unless every state
             * here minted in this ms (more generators than ways in turn
             * within one ms), its last ms is behind the clock, and the
             * floor stays there too. */
            w = IDM__TSEQ_WAYS - 1;
            if (set->way[w].last_ms > set->floor_ms)
                set->floor_ms = set->way[w].last_ms;
            if (set->way[w].serial > set->dropped_serial)
                set->dropped_serial = set->way[w].serial;
        }
        /* Start afresh: above the floor if this generator may have been
         * dropped here before. */
        found.serial = serial;
        found.last_ms = serial <= set->dropped_serial ? set->floor_ms : -1;
        found.hi = IDM__TSEQ_RESTART;
        found.lo = 0;
    }
    /* Most recently used first. */
    memmove(&set->way[1], &set->way[0], (size_t)w * sizeof set->way[0]);
    set->way[0] = found;
    return &set->way[0];
}
