/* SPDX-License-Identifier: MIT */
/*
 * Leased generators (library idmint_lease): a Snowflake generator whose
 * worker id comes from a coordinator (<idmint/lease.h>), kept minting through
 * what happens to a fleet over time. What idmintd and `idmint next` use.
 *
 * Restart within the lease (opts.state_dir): the process keeps, in a claim
 * file in state_dir, what it needs to resume its claim: the coordinator and
 * scope (as a hash in the file's name and line), the worker id, the
 * coordinator's handle of the claim (etcd's lease, ZooKeeper's session,
 * PostgreSQL's generation, file://'s claim token), the mark, and the
 * guard's deadlines with the boot id they belong to. It is rewritten at each
 * renewal (a temporary file, fsync'd, renamed, the directory fsync'd) before
 * the generator may rely on that renewal; one that cannot be written is a
 * failed renewal. Beside it, the claim's generator keeps a state file (see
 * snowflake.h: every tick it mints is at or below its mark), which is how a
 * restarted process knows what it minted itself. On open, a saved claim is
 * resumed (idm_lease_resume): reattached if the coordinator confirms it, with
 * no new claim and no wait for the coordinator's mark (only for the state
 * file's, at most state_lookahead_ms ahead); minted under, up to its saved
 * deadline and mark, if the coordinator cannot be reached on the same boot,
 * while the keeper reattaches in the background; otherwise a new claim.
 * Several processes share a state_dir: each takes one claim file (claim-
 * <hash>-<k>, an OFD lock on claim-<hash>-<k>.lock held while it runs), so a
 * restarted process resumes one dead process's claim and two live ones never
 * share one. A clean close releases the claim and removes its claim file.
 *
 * Re-claim after a loss (opts.reclaim): when the coordinator says the claim
 * is gone (revoked, deleted, expired), the generator stops at once (the
 * lease does that); a supervisor thread claims another worker id (or the
 * same one, anew), opens a generator for it above its recorded mark, and
 * switches minting to it. Mints in the meantime wait up to switch_wait_ms
 * for the switch, then fail with the error they met (IDM_ELEASE): never an
 * id under the lost worker id after the loss was learned.
 *
 * Change worker id (opts.gen.backwards = IDM_BACKWARDS_CHANGE_WORKER): the
 * generator runs on logical time up to max_drift_ms; a clock step back
 * beyond that makes the supervisor claim another worker id whose recorded
 * mark is below the clock now (holding the unsuitable ones it meets, up to
 * max_tries claims, then releasing them untouched), mint under it at once,
 * and release the old id with its exact final mark. With no such id free,
 * mints keep failing with IDM_ECLOCKBACK (the old id's logical-time bound),
 * and another change is tried after ttl/3. Each change uses up a worker id
 * until its mark is passed: changes are counted (status) and reported
 * (on_event).
 *
 * A worker id this process held before is never taken again for the life of
 * the leased generator (its retired generator is kept until close, since
 * other threads may still be inside it): such a claim is held and skipped
 * like an unsuitable one.
 *
 * Thread-safety: idm_leased_next, _next_batch, _check, _status_get, _layout
 * from any number of threads at once; idm_leased_close once, by the owner,
 * after every minting thread has returned.
 *
 * Fork: a leased generator belongs to the process that opened it (its
 * worker id, claim and threads are that process's). In a forked child,
 * idm_leased_next and _next_batch are IDM_EFORKED, _status_get reports
 * IDM_EFORKED, and idm_leased_close frees the child's copy only (no thread
 * joined, nothing released or written) and returns IDM_EFORKED. A child
 * that mints opens its own, with its own worker id.
 */
#ifndef IDMINT_LEASED_H
#define IDMINT_LEASED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "export.h"
#include "lease.h"
#include "snowflake.h"

typedef struct idm_leased idm_leased;

/* The longest state_dir accepted, in bytes. */
#define IDM_LEASED_DIR_MAX 900

typedef struct idm_leased_opts {
    /* The coordinator: url (required), ttl_ms, margin_ms, holder, scope
     * (NULL: idm_lease_scope of field), boot_id_file. Its max_workers is the
     * field's range (capped at IDM_LEASE_WORKERS_MAX), its clock gen.clock;
     * on_claim is called for the first new claim (as idm_lease_start
     * does); on_renew and on_lost are the leased generator's own (those
     * given are not used). */
    idm_lease_opts lease;
    /* The generator: layout, the other node fields, clock, policies
     * (backwards may be IDM_BACKWARDS_CHANGE_WORKER), max_drift_ms,
     * max_wait_ms, state_lookahead_ms. guarded, after_ms, state_path and
     * state_fresh are set by the leased generator. */
    idm_snowflake_opts gen;
    const char *field;     /* the node field the lease fills (required),
                              or several in the layout's order joined by
                              '+' ("datacenter+worker"), leased together as
                              one number spanning at most
                              IDM_LEASE_WORKERS_MAX ids, the last field
                              taking its low digits; the scope is then
                              "datacenter+worker of <layout> epoch <ms>" */
    const char *state_dir; /* claim and state files (made if missing, one
                              level); NULL: none (a restart claims anew
                              and waits out the coordinator's mark) */
    bool reclaim;          /* claim another worker id after a loss */
    int64_t switch_wait_ms; /* how long a mint waits for a re-claim or a
                               change in progress; < 0: ttl/2 */
    unsigned max_tries;    /* claims of ids this process never held tried
                              for a usable worker id (those it held are
                              skipped without counting; at most 64 claims
                              held at once); 0: 8 */
    /* One line (no newline) for each thing that happens: the claim, a
     * resume, a loss, a re-claim, a change, a failure of one. Called from
     * the opener's thread or the supervisor's; never while a lock of the
     * leased generator is held. NULL: nothing reported. */
    void (*on_event)(void *ctx, const char *line);
    void *event_ctx;       /* the ctx of on_event and state_name */
    /* The state file of a new claim's generator, given its options (the
     * node values set): a plain file name (no '/', no space) in state_dir,
     * into buf, or an IDM_E... error, which fails that claim. For a caller
     * whose other runs keep a state file for the same node values (the
     * CLI's ids-<hash>.state): sharing it shares its lock (never two
     * generators on one set of node values at once) and its mark (each
     * starts above the other's ids). NULL: a file of the leased
     * generator's own per claim (removed once the claim is released). */
    int (*state_name)(void *ctx, const idm_snowflake_opts *gen, char *buf, size_t len);
} idm_leased_opts;

/* How the current claim was made. */
typedef enum idm_leased_origin {
    IDM_LEASED_CLAIMED = 0,  /* a new claim */
    IDM_LEASED_REATTACHED,   /* a saved claim the coordinator confirmed */
    IDM_LEASED_OFFLINE       /* a saved claim, the coordinator unreachable */
} idm_leased_origin;

typedef struct idm_leased_status {
    uint32_t worker;        /* the current worker id */
    bool minting;           /* a generator is current (it may still refuse) */
    idm_leased_origin origin; /* how the current claim was made (a resumed
                               claim confirmed since reads REATTACHED) */
    uint64_t reclaims;      /* worker ids claimed after the first: losses
                               plus changes */
    uint64_t losses;        /* claims the coordinator said were gone */
    uint64_t changes;       /* worker ids changed for a clock step back */
    uint64_t switch_failures; /* re-claims or changes that found no usable id
                               or could not reach the coordinator */
    int64_t last_switch_ns; /* the last switch, from the loss (or the
                               refusal) to the new generator's first
                               possible id, on the real monotonic clock */
    int last_error;         /* the last failed switch's error, 0 if none */
    char last_detail[256];  /* and its detail */
    idm_lease_status lease; /* the current lease's */
} idm_leased_status;

IDM_EXTERN void idm_leased_opts_init(idm_leased_opts *opts);

/*
 * Resume a saved claim or claim a worker id, wait out what must be waited
 * out (the coordinator's mark for a new claim, the state file's for a
 * resumed one), open the generator and attach the lease, as idm_lease_start
 * does. On failure nothing is held: the error of the failing step, with its
 * detail (IDM_EINVAL for bad options, named).
 */
IDM_EXTERN int idm_leased_open(idm_leased **out, const idm_leased_opts *opts);
/* Mint one id (see idm_snowflake_next), under the current worker id. */
IDM_EXTERN int idm_leased_next(idm_leased *lg, uint64_t *id);
/* Mint n consecutive ids under one worker id (see idm_snowflake_next_batch). */
IDM_EXTERN int idm_leased_next_batch(idm_leased *lg, uint64_t *ids, size_t n);
/* Would a mint succeed now (idm_snowflake_check on the current generator)?
 * Under change-worker, a refusal for the clock starts a change. */
IDM_EXTERN int idm_leased_check(idm_leased *lg);
IDM_EXTERN const idm_layout *idm_leased_layout(const idm_leased *lg);
IDM_EXTERN void idm_leased_status_get(idm_leased *lg, idm_leased_status *out);
/* The current generator's counters. */
IDM_EXTERN void idm_leased_stats_get(idm_leased *lg, idm_snowflake_stats *out);
/* Stop the supervisor, close the lease (the final mark, the release), remove
 * the claim file, close every generator. The release's error, if any. */
IDM_EXTERN int idm_leased_close(idm_leased *lg);

#endif /* IDMINT_LEASED_H */
