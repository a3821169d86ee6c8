/* SPDX-License-Identifier: MIT */
/*
 * Randomness. Everything in idmint that needs random bytes asks an idm_rng,
 * so tests can inject one and nothing reads the system's random source
 * behind the caller's back.
 *
 * The system generator is a ChaCha20 keystream with fast key erasure: each
 * thread keeps its own state, seeded from getrandom(2), refilled a block of
 * keystream at a time and rekeyed from its own output after every refill (so
 * bytes already handed out cannot be recovered from the state), and reseeded
 * from getrandom(2) every 1 MiB of output, also within one long request.
 * After fork() the child reseeds before its first byte, so parent and child
 * never emit the same bytes.
 */
#ifndef IDMINT_RNG_H
#define IDMINT_RNG_H

#include <stddef.h>
#include <stdint.h>
#include "export.h"

/*
 * A random source: fill writes n bytes to buf and returns 0, or a negative
 * IDM_E* code. It must be safe to call from any thread at once.
 */
typedef struct idm_rng {
    void *ctx;
    int (*fill)(void *ctx, void *buf, size_t n);
} idm_rng;

/* The system CSPRNG described above. Static object; thread-safe. */
IDM_EXTERN const idm_rng *idm_rng_system(void);

/* n random bytes from the system CSPRNG; IDM_ERANDOM if getrandom fails. */
IDM_EXTERN int idm_random_bytes(void *buf, size_t n);

#endif /* IDMINT_RNG_H */
