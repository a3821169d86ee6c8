/* SPDX-License-Identifier: MIT */
/*
 * idmint_instagram(shard, seq): Instagram's published scheme, in C.
 *
 * Their PL/pgSQL function builds
 *     (now_ms - 1314220021721) << 23 | shard << 10 | nextval(seq) % 1024
 * and so repeats an id whenever one sequence hands out more than 1,024
 * values within one millisecond (nextval % 1024 comes round again on the
 * same millisecond). This one gives the same id for the same nextval and
 * clock whenever theirs is new, and otherwise the residue's next unused
 * millisecond: for each (database, sequence, shard) it keeps the last
 * millisecond each of the 1,024 residues was minted on, and never gives a
 * residue a millisecond at or below its last. So a burst past 1,024 a
 * millisecond runs up to idmint.max_drift_ms (10 ms) ahead of the clock
 * instead of repeating, and beyond that waits for the clock, as Snowflake
 * generators do when a tick's sequence is spent: the scheme mints at most
 * 1,024 ids a millisecond per sequence and shard, and never a repeat. A
 * clock stepped back further than the wait bound (idmint.max_wait_ms, 6 ms)
 * can make up is refused with an error.
 *
 * Across restarts the residues start above a mark kept in the data
 * directory (idmint.instagram.state), raised one second ahead of use and
 * stored exactly at shutdown, so a server restarted with its clock set back
 * does not repeat either.
 */
#include "idmint_pg.h"

#include <time.h>

#include "catalog/pg_class.h"
#include "commands/sequence.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(idmint_instagram);

#define IG_EPOCH INT64CONST(1314220021721)
/* The 41-bit time field shifted by 23 reaches bit 63 at 2^40 ms (in
 * 2046): a bigint turns negative there, so that is where it ends. */
#define IG_TIME_MAX ((INT64CONST(1) << 40) - 1)
/* How long a call waits out a burst (more than 1,024 ids a millisecond
 * from one sequence) before it gives up. */
#define IG_BURST_WAIT_MS 100
#define IG_SHARD_MAX 8191
#define IG_LOOKAHEAD_MS 1000
#define IG_DEFAULT_DRIFT_MS 10
#define IG_DEFAULT_WAIT_MS 6
#define START_WAIT_MS 5000

static int64 wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* As their FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000). */
    return (int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The table entry of (db, seq, shard), taken if new. */
static idmint_ig_entry *entry_for(Oid seq, int32 shard)
{
    idmint_shared *sh = idmint_sh;
    idmint_ig_entry *e = NULL;
    for (int i = 0; i < sh->ig_count; i++) {
        idmint_ig_entry *c = &sh->ig[i];
        /* Entries are written once, under the lock, db last. */
        if (c->db == MyDatabaseId && c->seq == seq && c->shard == shard) {
            pg_read_barrier();
            return c;
        }
    }
    LWLockAcquire(sh->ig_lock, LW_EXCLUSIVE);
    for (int i = 0; i < sh->ig_count && e == NULL; i++) {
        idmint_ig_entry *c = &sh->ig[i];
        if (c->db == MyDatabaseId && c->seq == seq && c->shard == shard)
            e = c;
        else if (c->db == InvalidOid) {
            c->seq = seq;
            c->shard = shard;
            pg_write_barrier();
            c->db = MyDatabaseId;
            e = c;
        }
    }
    LWLockRelease(sh->ig_lock);
    if (e == NULL)
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("idmint_instagram: every one of the %d (database, sequence, shard) "
                               "entries is taken",
                               sh->ig_count),
                        errhint("Raise idmint.instagram_sequences and restart the server.")));
    return e;
}

/* Raise the entry's highest clock reading to now; that highest. */
static int64 note_seen(idmint_ig_entry *e, int64 now)
{
    uint64 s = pg_atomic_read_u64(&e->seen);
    while ((uint64)now > s && !pg_atomic_compare_exchange_u64(&e->seen, &s, (uint64)now))
        ;
    return (uint64)now > s ? now : (int64)s;
}

/* Make sure the mark covers ms: raised a second ahead, written first.
 * 0 or the state file's error. */
static int cover(int64 ms)
{
    idmint_shared *sh = idmint_sh;
    int rc = 0;
    if ((uint64)ms <= pg_atomic_read_u64(&sh->ig_limit))
        return 0;
    LWLockAcquire(sh->ig_lock, LW_EXCLUSIVE);
    if ((uint64)ms > pg_atomic_read_u64(&sh->ig_limit)) {
        rc = idm__state_write(&sh->ig_st, ms + IG_LOOKAHEAD_MS);
        if (rc == 0)
            pg_atomic_write_u64(&sh->ig_limit, (uint64)(ms + IG_LOOKAHEAD_MS));
    }
    LWLockRelease(sh->ig_lock);
    return rc;
}

/* Enter (bump ig_users once the state file is open), as idmint_gen_enter. */
static void enter(void)
{
    idmint_shared *sh = idmint_sh;
    for (int waited = 0;; waited += 10) {
        pg_atomic_fetch_add_u32(&sh->ig_users, 1);
        if (pg_atomic_read_u32(&sh->ig_ready) != 0)
            return;
        pg_atomic_fetch_sub_u32(&sh->ig_users, 1);
        if (pg_atomic_read_u32(&sh->ig_failed) != 0) {
            pg_read_barrier();
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("idmint_instagram: its state file cannot be used: %s",
                                   sh->ig_error)));
        }
        if (waited >= START_WAIT_MS)
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("idmint_instagram: the idmint keeper has not opened "
                            "idmint.instagram.state"),
                     errhint("The server log says why (the keeper's messages).")));
        CHECK_FOR_INTERRUPTS();
        pg_usleep(10000);
    }
}

static void leave(void)
{
    pg_atomic_fetch_sub_u32(&idmint_sh->ig_users, 1);
}

Datum idmint_instagram(PG_FUNCTION_ARGS)
{
    int32 shard = PG_GETARG_INT32(0);
    Oid seq = PG_GETARG_OID(1);
    idmint_shared *sh;
    idmint_ig_entry *e;
    int64 n, now, seen, drift, wait_max, waited = 0, want = 0, ahead = 0;
    bool burst = false;
    uint64 old;
    int r, rc;

    idmint_require_preload("idmint_instagram");
    sh = idmint_sh;
    if (shard < 0 || shard > IG_SHARD_MAX)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("idmint_instagram: shard %d is outside 0 to %d (13 bits)", shard,
                               IG_SHARD_MAX)));
    if (get_rel_relkind(seq) != RELKIND_SEQUENCE) {
        if (get_rel_name(seq) == NULL)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                            errmsg("idmint_instagram: there is no relation with OID %u", seq)));
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("idmint_instagram: \"%s\" is not a sequence", get_rel_name(seq))));
    }
    n = nextval_internal(seq, true);
    if (n < 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("idmint_instagram: sequence \"%s\" gave " INT64_FORMAT
                               "; Instagram's ids need values of 0 and up",
                               get_rel_name(seq), n)));
    r = (int)(n % 1024);
    e = entry_for(seq, shard);
    drift = idmint_cfg.max_drift_ms >= 0 ? idmint_cfg.max_drift_ms : IG_DEFAULT_DRIFT_MS;

    wait_max = idmint_cfg.max_wait_ms >= 0 ? idmint_cfg.max_wait_ms : IG_DEFAULT_WAIT_MS;

    enter();
    now = wall_ms();
    seen = note_seen(e, now);
    old = pg_atomic_read_u64(&e->last[r]);
    for (;;) {
        want = now;
        if ((uint64)want <= old)
            want = (int64)old + 1;
        if (want <= sh->ig_floor)
            want = sh->ig_floor + 1;
        ahead = want - now;
        if (now < IG_EPOCH || want - IG_EPOCH > IG_TIME_MAX)
            break;
        if (ahead > drift) {
            /* The residue's milliseconds are taken up to past the drift
             * bound. A clock behind what this entry's callers read before
             * (or behind the restart's mark) stepped back: wait only as
             * long as the policy's bound. Otherwise it is a burst of more
             * than 1,024 ids a millisecond: wait for the clock, as a
             * Snowflake generator does for a spent tick. */
            int64 bound = now + drift < seen || now <= sh->ig_floor ? wait_max : IG_BURST_WAIT_MS;
            burst = bound == IG_BURST_WAIT_MS;
            if (ahead - drift > bound - waited)
                break;
            pg_usleep((ahead - drift) * 1000L);
            waited += ahead - drift;
            now = wall_ms();
            seen = note_seen(e, now);
            old = pg_atomic_read_u64(&e->last[r]);
            continue;
        }
        if (pg_atomic_compare_exchange_u64(&e->last[r], &old, (uint64)want))
            break;
        /* old now holds the residue's new last: decide again */
    }
    if (ahead > drift || want - IG_EPOCH > IG_TIME_MAX || now < IG_EPOCH) {
        leave();
        if (now < IG_EPOCH)
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("idmint_instagram: the clock reads " INT64_FORMAT
                                   " ms, before Instagram's epoch",
                                   now)));
        if (want - IG_EPOCH > IG_TIME_MAX)
            ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                            errmsg("idmint_instagram: the time field has run out: from "
                                   "2046-06-27T17:00:49.497Z its ids would set bit 63 and turn "
                                   "negative as bigints")));
        if (burst)
            ereport(ERROR,
                    (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                     errmsg("idmint_instagram: residue %d of sequence \"%s\" (shard %d) stayed "
                            INT64_FORMAT " ms ahead of the clock for %d ms: more than 1,024 ids "
                            "a millisecond came from this sequence all that time",
                            r, get_rel_name(seq), shard, ahead, IG_BURST_WAIT_MS),
                     errdetail("No id was handed out; the sequence value taken is a gap.")));
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("idmint_instagram: residue %d of sequence \"%s\" (shard %d) would mint "
                        INT64_FORMAT " ms ahead of the clock, past idmint.max_drift_ms (" INT64_FORMAT
                        " ms) even after waiting " INT64_FORMAT " ms",
                        r, get_rel_name(seq), shard, ahead, drift, waited),
                 errdetail("The clock stepped back (or the server restarted with its clock set "
                           "back); no id was handed out, and the sequence value taken is a "
                           "gap.")));
    }
    rc = cover(want);
    leave();
    if (rc != 0)
        idmint_raise("idmint_instagram", rc);
    PG_RETURN_INT64(((want - IG_EPOCH) << 23) | ((int64)shard << 10) | r);
}
