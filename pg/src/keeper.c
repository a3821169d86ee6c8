/* SPDX-License-Identifier: MIT */
/*
 * The idmint keeper: a background worker that owns the shared generator.
 *
 * It opens the generator in a slot of shared memory, on the state file in
 * the data directory (idmint.state; with a lease, idmint.<field>-<N>.state
 * for worker id N), above the mark kept there (and above the previous
 * holder's mark, with a lease), and publishes it. A clock behind the mark
 * (a restart with the clock set back) is retried until the clock passes it,
 * and backends meanwhile get an error naming how far behind it is.
 *
 * Without a lease the generator is guarded with deadlines that never pass,
 * so that closing can stop every backend at once (idm_snowflake_guard_drop)
 * before the exact mark is stored. With idmint.lease, the lease library's
 * keeper thread (in this process) renews the worker id and feeds the guard;
 * a lost lease retires the generator and the keeper claims again, opening
 * the next generator in the other slot.
 *
 * It also owns idmint_instagram()'s state file (idmint.instagram.state):
 * opened at start, its mark the floor of every residue's time, stored
 * exactly at shutdown.
 *
 * Shutdown (SIGTERM, with the server's): unpublish, stop minting, wait for
 * the backends inside a call to leave, release the lease (recording the
 * final mark), store the exact mark, exit.
 */
#include "idmint_pg.h"
#include "common.h" /* the library's idm__url_mask */

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#define RETRY_MS 100       /* a clock behind the mark: look again */
#define FAIL_RETRY_MS 1000 /* a failed open or claim: try again */
#define DRAIN_MS 5000      /* the longest wait for backends to leave a slot */

static idm_snowflake *g_gen = NULL;
static int g_slot = -1;
static idm_lease *g_lease = NULL;

/* Wait until nobody is inside slot (bounded): false if some still are. */
static bool drain(pg_atomic_uint32 *users)
{
    for (int ms = 0; ms < DRAIN_MS; ms++) {
        if (pg_atomic_read_u32(users) == 0)
            return true;
        pg_usleep(1000);
    }
    return false;
}

/* Stop minting on the current generator and close it: the lease released
 * with the final mark, the exact mark stored. */
static void retire(void)
{
    idmint_shared *sh = idmint_sh;
    int rc;
    if (g_gen == NULL)
        return;
    pg_atomic_write_u32(&sh->current, 0);
    pg_memory_barrier();
    idm_snowflake_guard_drop(g_gen);
    if (!drain(&sh->users[g_slot]))
        elog(WARNING, "idmint keeper: backends still inside the generator after %d ms",
             DRAIN_MS);
    if (g_lease != NULL) {
        rc = idm_lease_close(g_lease);
        if (rc != 0)
            elog(LOG, "idmint keeper: releasing the lease: %s", idm_error_detail());
        g_lease = NULL;
    }
    rc = idm_snowflake_close(g_gen);
    if (rc != 0)
        elog(WARNING, "idmint keeper: storing the exact mark: %s", idm_error_detail());
    sh->gen[g_slot] = NULL;
    g_gen = NULL;
    g_slot = -1;
}

static void state_path(char *buf, size_t len, int field, uint32 worker)
{
    if (field < 0) {
        snprintf(buf, len, "%s/idmint.state", DataDir);
    } else {
        idm_field_info fi;
        idm_layout_field(idmint_cfg.layout, (size_t)field, &fi);
        snprintf(buf, len, "%s/idmint.%s-%u.state", DataDir, fi.name, (unsigned)worker);
    }
}

static void gen_opts(idm_snowflake_opts *o, const char *path)
{
    struct stat st;
    idm_snowflake_opts_init(o);
    o->layout = idmint_cfg.layout;
    memcpy(o->node, idmint_cfg.node, sizeof o->node);
    o->node_set = idmint_cfg.node_set;
    o->backwards = idmint_cfg.backwards;
    o->max_drift_ms = idmint_cfg.max_drift_ms;
    o->max_wait_ms = idmint_cfg.max_wait_ms;
    o->state_path = path;
    /* A missing file is a first start; a corrupt one is refused. */
    o->state_fresh = stat(path, &st) != 0 && errno == ENOENT;
    o->guarded = true;
}

/*
 * The layout the ids of this data directory were minted with, kept in
 * idmint.layout beside the state file: a changed layout or epoch can give
 * new ids the bits of old ones (the same bits mean another time), which no
 * mark prevents, so a change is refused until someone who knows no old id
 * is kept removes the file. 0, or -1 with the state set.
 */
static int check_layout(void)
{
    char path[MAXPGPATH], want[IDM_LAYOUT_TEXT_MAX + 64], have[IDM_LAYOUT_TEXT_MAX + 64];
    char text[IDM_LAYOUT_TEXT_MAX];
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "%s/idmint.layout", DataDir);
    idm_layout_format(idmint_cfg.layout, text, sizeof text);
    snprintf(want, sizeof want, "%s epoch %lld\n", text,
             (long long)idm_layout_epoch(idmint_cfg.layout));
    f = fopen(path, "r");
    if (f != NULL) {
        n = fread(have, 1, sizeof have - 1, f);
        have[n] = '\0';
        fclose(f);
        if (strcmp(have, want) == 0)
            return 0;
        have[strcspn(have, "\n")] = '\0';
        want[strcspn(want, "\n")] = '\0';
        idmint_set_state(IDMINT_FAILED,
                         "idmint.layout and idmint.epoch give %s, but the ids of this data "
                         "directory were minted with %s (%s): new ids could repeat old ones; if "
                         "no id of the old layout is kept anywhere, remove that file",
                         want, have, path);
        return -1;
    }
    if (errno != ENOENT || (f = fopen(path, "w")) == NULL || fputs(want, f) == EOF ||
        fflush(f) != 0 || fsync(fileno(f)) != 0) {
        idmint_set_state(IDMINT_FAILED, "cannot record the layout in %s: %m", path);
        if (f != NULL)
            fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

/* Claim a worker id: 0, or an error with the state set. */
static int claim(idm_lease **out)
{
    char scope[IDM_LEASE_SCOPE_MAX];
    idm_lease_opts lo;
    idm_field_info fi;
    int rc;
    idm_layout_field(idmint_cfg.layout, (size_t)idmint_cfg.lease_field, &fi);
    rc = idm_lease_scope(idmint_cfg.layout, fi.name, scope, sizeof scope);
    if (rc != 0)
        return rc;
    idm_lease_opts_init(&lo);
    lo.url = idmint_cfg.lease_url;
    if (idmint_cfg.lease_ttl_ms > 0)
        lo.ttl_ms = idmint_cfg.lease_ttl_ms;
    lo.scope = scope;
    lo.max_workers = fi.max >= IDM_LEASE_WORKERS_MAX - 1 ? IDM_LEASE_WORKERS_MAX
                                                         : (uint32_t)fi.max + 1;
    rc = idm_lease_open(out, &lo);
    if (rc != 0)
        return rc;
    /* A previous holder that crashed may have recorded a mark up to a TTL
     * ahead: wait it out (bounded by the TTL). */
    rc = idm_lease_wait_mark(*out, NULL, 0);
    if (rc != 0) {
        (void)idm_lease_close(*out);
        *out = NULL;
    }
    return rc;
}

/* Open the generator in the next slot and publish it; the state says why
 * not, and the return value when to look again (ms). */
static long try_open(void)
{
    idmint_shared *sh = idmint_sh;
    int slot = (sh->last_slot + 1) % IDMINT_SLOTS;
    char path[MAXPGPATH];
    idm_snowflake_opts o;
    idm_lease *l = NULL;
    idm_snowflake *g = NULL;
    int rc;

    if (check_layout() != 0)
        return FAIL_RETRY_MS;
    if (!drain(&sh->users[slot])) {
        idmint_set_state(IDMINT_FAILED, "a backend is still inside an earlier generator");
        return FAIL_RETRY_MS;
    }
    if (idmint_cfg.lease_url != NULL) {
        rc = claim(&l);
        if (rc != 0) {
            idmint_set_state(rc == IDM_ECLOCKBACK ? IDMINT_WAITING : IDMINT_FAILED,
                             "claiming a worker id from idmint.lease: %s", idm_error_detail());
            return FAIL_RETRY_MS;
        }
    }
    state_path(path, sizeof path, idmint_cfg.lease_field, l != NULL ? idm_lease_worker(l) : 0);
    gen_opts(&o, path);
    if (l != NULL) {
        o.node[idmint_cfg.lease_field] = idm_lease_worker(l);
        o.node_set |= UINT32_C(1) << idmint_cfg.lease_field;
        o.after_ms = idm_lease_mark(l);
    }
    rc = idm_snowflake_open_shared(&g, sh->slot_mem[slot], idm_snowflake_shared_size(), &o);
    if (rc == 0 && l != NULL)
        rc = idm_lease_attach(l, g);
    else if (rc == 0)
        rc = idm_snowflake_guard(g, INT64_MAX, INT64_MAX, INT64_MAX);
    if (rc != 0) {
        char detail[IDMINT_MESSAGE_MAX];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        if (g != NULL)
            (void)idm_snowflake_close(g);
        if (l != NULL)
            (void)idm_lease_close(l);
        idmint_set_state(rc == IDM_ECLOCKBACK ? IDMINT_WAITING : IDMINT_FAILED, "%s", detail);
        return rc == IDM_ECLOCKBACK ? RETRY_MS : FAIL_RETRY_MS;
    }

    g_gen = g;
    g_slot = slot;
    g_lease = l;
    sh->gen[slot] = g;
    sh->last_slot = slot;
    SpinLockAcquire(&sh->mu);
    memcpy(sh->node, o.node, sizeof sh->node);
    sh->node_set = o.node_set;
    SpinLockRelease(&sh->mu);
    pg_write_barrier();
    pg_atomic_write_u32(&sh->current, (uint32)slot + 1);
    if (l != NULL) {
        char url[512];
        idm__url_mask(idmint_cfg.lease_url, url, sizeof url);
        idmint_set_state(IDMINT_READY, "minting as worker %u, leased from %s",
                         (unsigned)idm_lease_worker(l), url);
    }
    else
        idmint_set_state(IDMINT_READY, "node values from idmint.node");
    elog(LOG, "idmint keeper: minting (state file %s)", path);
    return FAIL_RETRY_MS;
}

/* Follow the lease: its state for idmint_status(); a lost one retired. */
static long watch_lease(void)
{
    idm_lease_status st;
    char text[IDMINT_MESSAGE_MAX];
    idm_lease_status_get(g_lease, &st);
    if (st.lost) {
        elog(LOG, "idmint keeper: the lease on worker %u is lost; claiming again",
             (unsigned)st.worker);
        retire();
        idmint_set_state(IDMINT_STARTING, "the lease on worker %u was lost; claiming again",
                         (unsigned)st.worker);
        return 0;
    }
    snprintf(text, sizeof text, "worker %u: %llu renewals, %llu failed%s%s",
             (unsigned)st.worker, (unsigned long long)st.renewals,
             (unsigned long long)st.failures, st.last_error != 0 ? "; the last: " : "",
             st.last_error != 0 ? idm_strerror(st.last_error) : "");
    SpinLockAcquire(&idmint_sh->mu);
    memcpy(idmint_sh->lease_state, text, sizeof text);
    SpinLockRelease(&idmint_sh->mu);
    return 200;
}

/* ------------------------------------------------ Instagram's state file */

static void instagram_open(void)
{
    idmint_shared *sh = idmint_sh;
    char path[MAXPGPATH];
    struct stat st;
    idm_unix_ms mark = 0;
    bool found = false;
    int rc;
    snprintf(path, sizeof path, "%s/idmint.instagram.state", DataDir);
    rc = idm__state_open(&sh->ig_st, path, stat(path, &st) != 0 && errno == ENOENT, &mark,
                         &found);
    if (rc == 0)
        rc = idm__state_move_paths(&sh->ig_st, sh->ig_paths, sizeof sh->ig_paths);
    if (rc != 0) {
        snprintf(sh->ig_error, sizeof sh->ig_error, "%s", idm_error_detail());
        pg_write_barrier();
        pg_atomic_write_u32(&sh->ig_failed, 1);
        elog(WARNING, "idmint keeper: idmint_instagram() stays off: %s", sh->ig_error);
        return;
    }
    sh->ig_floor = found ? mark : 0;
    pg_atomic_write_u64(&sh->ig_limit, (uint64)sh->ig_floor);
    pg_write_barrier();
    pg_atomic_write_u32(&sh->ig_ready, 1);
}

/* Stop idmint_instagram() and store its exact mark: the latest time any
 * residue was minted on. */
static void instagram_close(void)
{
    idmint_shared *sh = idmint_sh;
    uint64 top = 0;
    if (pg_atomic_read_u32(&sh->ig_ready) == 0)
        return;
    pg_atomic_write_u32(&sh->ig_ready, 0);
    pg_memory_barrier();
    if (!drain(&sh->ig_users)) {
        elog(WARNING, "idmint keeper: backends still in idmint_instagram(); its mark stays "
                      "where it was");
        return;
    }
    for (int i = 0; i < sh->ig_count; i++)
        for (int r = 0; r < 1024; r++) {
            uint64 v = pg_atomic_read_u64(&sh->ig[i].last[r]);
            top = v > top ? v : top;
        }
    if (top < (uint64)sh->ig_floor)
        top = (uint64)sh->ig_floor;
    if (top > 0 && idm__state_write(&sh->ig_st, (idm_unix_ms)top) != 0)
        elog(WARNING, "idmint keeper: storing idmint_instagram()'s mark: %s",
             idm_error_detail());
    idm__state_close(&sh->ig_st);
}

/* ----------------------------------------------------------------- main */

static void keeper_exit(int code, Datum arg)
{
    retire();
    instagram_close();
    if (idmint_sh != NULL)
        idmint_set_state(IDMINT_STOPPED, "the idmint keeper stopped (the server is shutting "
                                         "down, or the keeper is restarting)");
}

void idmint_keeper_main(Datum arg)
{
    char err[512];
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    pqsignal(SIGHUP, SIG_IGN); /* every setting needs a restart */
    BackgroundWorkerUnblockSignals();

    if (!idmint_settings_load(err, sizeof err)) {
        idmint_set_state(IDMINT_FAILED, "%s", err);
        ereport(ERROR, (errmsg("idmint keeper: %s", err)));
    }
    SpinLockAcquire(&idmint_sh->mu);
    idmint_sh->keeper_pid = MyProcPid;
    SpinLockRelease(&idmint_sh->mu);
    before_shmem_exit(keeper_exit, 0);
    instagram_open();

    while (!ShutdownRequestPending) {
        long wait_ms;
        if (g_gen == NULL)
            wait_ms = try_open();
        else if (g_lease != NULL)
            wait_ms = watch_lease();
        else
            wait_ms = 60000;
        if (wait_ms > 0) {
            (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms,
                            PG_WAIT_EXTENSION);
            ResetLatch(MyLatch);
        }
    }
    proc_exit(0); /* keeper_exit closes everything */
}
