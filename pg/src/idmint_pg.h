/* SPDX-License-Identifier: MIT */
/*
 * The idmint extension's shared state and the pieces that share it:
 *
 *   idmint.c     _PG_init: the settings (GUCs), checked at server start;
 *                the shared memory; the keeper's registration.
 *   keeper.c     the background worker "idmint keeper": it opens the one
 *                shared generator (with the state file in the data
 *                directory, and under a worker-id lease if idmint.lease is
 *                set), publishes it, and closes it at shutdown with the
 *                exact mark.
 *   functions.c  the SQL functions.
 *   instagram.c  idmint_instagram(shard, seq).
 *
 * Backends mint on the shared generator with no lock: a slot's users count
 * brackets each call, so that the keeper reuses a slot's memory only once
 * nobody can be in it (a re-claim after a lost lease opens the next
 * generator in the other slot while the old one drains).
 */
#ifndef IDMINT_PG_H
#define IDMINT_PG_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "datatype/timestamp.h"

#include <idmint/idmint.h>
#include <idmint/lease.h>
#include "state.h" /* the library's state file (src/core), for Instagram's mark */

#define IDMINT_SLOTS 2
#define IDMINT_MESSAGE_MAX 512

/* What the shared generator is doing: idmint_status().ready and the error a
 * backend gets when it is not minting. */
typedef enum idmint_gen_state {
    IDMINT_STARTING = 0,  /* the keeper has not opened it yet */
    IDMINT_READY = 1,     /* minting */
    IDMINT_WAITING = 2,   /* the clock is behind the mark; retried */
    IDMINT_FAILED = 3,    /* opening (or claiming) failed; retried */
    IDMINT_STOPPED = 4    /* the keeper closed it (shutdown) */
} idmint_gen_state;

/* One entry of idmint_instagram's table: the last millisecond (since
 * Instagram's epoch, plus 1; 0 unused) each of the 1,024 sequence residues
 * was minted on, for one (database, sequence, shard). */
typedef struct idmint_ig_entry {
    Oid db;       /* InvalidOid: free */
    Oid seq;
    int32 shard;
    pg_atomic_uint64 seen; /* the highest clock reading of its callers */
    pg_atomic_uint64 last[1024];
} idmint_ig_entry;

typedef struct idmint_shared {
    /* The generator in use: 0 none, else slot + 1. Backends read it, bump
     * the slot's users, and read it again (see idmint_gen_enter). */
    pg_atomic_uint32 current;
    pg_atomic_uint32 users[IDMINT_SLOTS];
    idm_snowflake *gen[IDMINT_SLOTS]; /* in slot memory, valid while current */
    int last_slot;                    /* the keeper's last, -1 none */

    /* Status, under mu (a few stores). */
    slock_t mu;
    idmint_gen_state state;
    char message[IDMINT_MESSAGE_MAX];
    uint64 node[IDM_LAYOUT_MAX_FIELDS];
    uint32 node_set;
    char lease_state[IDMINT_MESSAGE_MAX];
    int keeper_pid;

    /* UUIDv7 and ULID: one monotonic generator each, for every backend. */
    idm_uuid7_gen *uuid7;
    idm_ulid_gen *ulid;

    /* idmint_instagram's table, and its high-water mark: every id it minted
     * has a time at or below ig_limit (Unix ms), which the state file
     * idmint.instagram.state keeps across restarts (ig_floor: the mark found
     * at start). */
    LWLock *ig_lock; /* finding a free entry; raising the mark */
    pg_atomic_uint64 ig_limit;
    int64 ig_floor;
    pg_atomic_uint32 ig_ready; /* the keeper opened the state file */
    pg_atomic_uint32 ig_users; /* backends inside idmint_instagram() */
    pg_atomic_uint32 ig_failed; /* the keeper could not open it: ig_error */
    char ig_error[IDMINT_MESSAGE_MAX];
    int ig_count;    /* entries in ig[] */
    idm__state ig_st;   /* its paths in ig_paths */
    char ig_paths[4 * 4200];
    char *slot_mem[IDMINT_SLOTS]; /* idm_snowflake_shared_size() each */
    idmint_ig_entry *ig;          /* ig_count entries */
} idmint_shared;

extern idmint_shared *idmint_sh;

/* The settings, parsed at start (idmint.c). */
typedef struct idmint_settings {
    idm_layout *layout;       /* idmint.layout with idmint.epoch */
    uint64 node[IDM_LAYOUT_MAX_FIELDS];
    uint32 node_set;          /* from idmint.node */
    int lease_field;          /* the field a lease fills, -1 without one */
    idm_backwards_policy backwards;
    int max_drift_ms;         /* -1: the library's default */
    int max_wait_ms;
    const char *lease_url;    /* NULL or "" without a lease */
    int lease_ttl_ms;         /* 0: the library's default */
    int instagram_sequences;
} idmint_settings;

extern idmint_settings idmint_cfg;

/* Parse the settings into idmint_cfg; false with a message in errbuf. */
bool idmint_settings_load(char *errbuf, size_t len);

/* The layout ids are decoded with (idmint.layout and idmint.epoch), also
 * when not preloaded; NULL with a message in errbuf. */
const idm_layout *idmint_layout_load(char *errbuf, size_t len);

/* Is idmint in shared_preload_libraries (is idmint_sh set)? An ERROR
 * saying how to fix it otherwise. */
void idmint_require_preload(const char *fn);

/* The generator to mint on, its slot entered (*slot), waiting a little for
 * a keeper that is still starting; an ERROR naming why there is none. */
idm_snowflake *idmint_gen_enter(const char *fn, int *slot);
/* The same, at once: NULL (nothing entered) if no generator is published. */
idm_snowflake *idmint_gen_try_enter(int *slot);
void idmint_gen_leave(int slot);

/* Raise the ERROR for a failed idmint call rc (with the library's detail),
 * with the SQLSTATE that fits it. */
void idmint_raise(const char *fn, int rc) pg_attribute_noreturn();

/* Set the status (keeper) and wake backends waiting for it. */
void idmint_set_state(idmint_gen_state st, const char *fmt, ...) pg_attribute_printf(2, 3);

/* Unix ms <-> timestamptz. */
TimestampTz idmint_ms_to_ts(int64 ms);

/* The keeper's entry point (keeper.c). */
PGDLLEXPORT void idmint_keeper_main(Datum arg);

#endif /* IDMINT_PG_H */
