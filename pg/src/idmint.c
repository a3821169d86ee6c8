/* SPDX-License-Identifier: MIT */
/*
 * The idmint extension's start: its settings, checked when the server
 * starts (a bad one stops the start with an error that names it), the shared
 * memory every backend mints from, and the keeper's registration. See
 * idmint_pg.h for how the pieces fit and docs/postgres.md for the user's
 * view.
 */
#include "idmint_pg.h"
#include "common.h" /* the library's idm__url_mask */

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

idmint_shared *idmint_sh = NULL;
idmint_settings idmint_cfg;

/*
 * The settings as PostgreSQL holds them: all text, checked here at start
 * (idmint_settings_load), not by PostgreSQL's own checks, which for a
 * library's settings found in postgresql.conf only warn and keep the
 * default: a server would start minting on a layout nobody asked for.
 * Defined only when preloaded (PostgreSQL takes no PGC_POSTMASTER setting
 * later); otherwise their text is read as PostgreSQL keeps it.
 */
static char *g_layout = NULL;
static char *g_epoch = NULL;
static char *g_node = NULL;
static char *g_backwards = NULL;
static char *g_max_drift = NULL;
static char *g_max_wait = NULL;
static char *g_lease = NULL;
static char *g_lease_field = NULL;
static char *g_lease_ttl = NULL;
static char *g_ig_sequences = NULL;
static bool g_defined = false;
static bool g_loaded = false;

static shmem_request_hook_type prev_shmem_request = NULL;
static shmem_startup_hook_type prev_shmem_startup = NULL;

void _PG_init(void);

/* ------------------------------------------------------------ settings */

/* A setting's text: ours when defined, else what postgresql.conf set (or
 * def). */
static const char *setting(const char *name, const char *var, const char *def)
{
    const char *v = g_defined ? var : GetConfigOption(name, true, false);
    return v != NULL ? v : def;
}

/* An integer setting in [lo, hi] (empty: def); false with errbuf set. */
static bool int_setting(const char *name, const char *var, int def, int lo, int hi, int *out,
                        char *errbuf, size_t len)
{
    const char *t = setting(name, var, "");
    char *end;
    long v;
    if (t[0] == '\0') {
        *out = def;
        return true;
    }
    errno = 0;
    v = strtol(t, &end, 10);
    if (errno != 0 || end == t || *end != '\0' || v < lo || v > hi) {
        snprintf(errbuf, len, "%s = \"%s\": give a whole number from %d to %d", name, t, lo, hi);
        return false;
    }
    *out = (int)v;
    return true;
}

/* Trim spaces at both ends of [s, *end) in place. */
static char *trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* "name=value[,name=value...]" into cfg->node: names of node fields of the
 * layout, each once, values in range. */
static bool parse_node(const char *text, idmint_settings *cfg, char *errbuf, size_t len)
{
    char *copy = pstrdup(text == NULL ? "" : text), *save = NULL, *item;
    bool ok = true;
    for (item = strtok_r(copy, ",", &save); item != NULL && ok; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *name, *value;
        idm_field_info fi;
        uint64_t v;
        int idx;
        if (eq == NULL) {
            snprintf(errbuf, len, "idmint.node: \"%s\" is not name=value", trim(item));
            ok = false;
            break;
        }
        *eq = '\0';
        name = trim(item);
        value = trim(eq + 1);
        idx = idm_layout_field_index(cfg->layout, name);
        if (idx < 0 || idm_layout_field(cfg->layout, (size_t)idx, &fi) != 0 ||
            fi.kind != IDM_FIELD_NODE) {
            snprintf(errbuf, len, "idmint.node: \"%s\" is not a node field of the layout", name);
            ok = false;
        } else if (cfg->node_set & (UINT32_C(1) << idx)) {
            snprintf(errbuf, len, "idmint.node: \"%s\" is given twice", name);
            ok = false;
        } else if (idm_u64_parse(value, &v) != 0) {
            snprintf(errbuf, len, "idmint.node: %s=\"%s\" is not a number", name, value);
            ok = false;
        } else if (v > fi.max) {
            snprintf(errbuf, len, "idmint.node: %s=%llu exceeds %llu (the field has %u bits)",
                     name, (unsigned long long)v, (unsigned long long)fi.max, fi.bits);
            ok = false;
        } else {
            cfg->node[idx] = v;
            cfg->node_set |= UINT32_C(1) << idx;
        }
    }
    pfree(copy);
    return ok;
}

/* The field a lease fills: idmint.lease_field, else "worker" if the layout
 * has it, else its last node field. */
static int lease_field(const idmint_settings *cfg, char *errbuf, size_t len)
{
    size_t n = idm_layout_field_count(cfg->layout);
    int found = -1;
    idm_field_info fi;
    const char *want = setting("idmint.lease_field", g_lease_field, "");
    if (want[0] != '\0') {
        int idx = idm_layout_field_index(cfg->layout, want);
        if (idx < 0 || idm_layout_field(cfg->layout, (size_t)idx, &fi) != 0 ||
            fi.kind != IDM_FIELD_NODE) {
            snprintf(errbuf, len, "idmint.lease_field: \"%s\" is not a node field of the layout",
                     want);
            return -2;
        }
        return idx;
    }
    for (size_t i = 0; i < n; i++) {
        idm_layout_field(cfg->layout, i, &fi);
        if (fi.kind != IDM_FIELD_NODE)
            continue;
        if (strcmp(fi.name, "worker") == 0)
            return (int)i;
        found = (int)i;
    }
    if (found < 0)
        snprintf(errbuf, len, "idmint.lease: the layout has no node field for a lease to fill");
    return found < 0 ? -2 : found;
}

bool idmint_settings_load(char *errbuf, size_t len)
{
    idmint_settings cfg;
    idm_unix_ms sign_from;
    const char *layout = setting("idmint.layout", g_layout, "twitter");
    const char *epoch = setting("idmint.epoch", g_epoch, "");
    const char *backwards = setting("idmint.backwards_policy", g_backwards, "logical");
    const char *lease = setting("idmint.lease", g_lease, "");
    int rc;

    if (g_loaded)
        return true;
    memset(&cfg, 0, sizeof cfg);
    if (layout[0] == '\0') {
        snprintf(errbuf, len, "idmint.layout is empty: give a preset (twitter, discord, "
                              "instagram, sonyflake) or a text form such as "
                              "time:41@1ms,worker:10,seq:12");
        return false;
    }
    rc = idm_layout_from_spec(&cfg.layout, layout, epoch[0] != '\0' ? epoch : NULL);
    if (rc != 0) {
        if (epoch[0] != '\0')
            snprintf(errbuf, len, "idmint.layout = \"%s\" with idmint.epoch = \"%s\": %s", layout,
                     epoch, idm_error_detail());
        else
            snprintf(errbuf, len, "idmint.layout = \"%s\": %s", layout, idm_error_detail());
        return false;
    }
    if (idm_layout_sign_bit(cfg.layout, &sign_from)) {
        char when[IDM_TIME_TEXT_MAX];
        idm_time_format(sign_from, when, sizeof when);
        snprintf(errbuf, len,
                 "idmint.layout = \"%s\" uses all 64 bits: PostgreSQL's bigint is signed, and "
                 "its ids would turn negative from %s; use a layout of at most 63 bits",
                 layout, when);
        goto fail;
    }
    if (!parse_node(setting("idmint.node", g_node, ""), &cfg, errbuf, len))
        goto fail;
    if (strcmp(backwards, "logical") == 0)
        cfg.backwards = IDM_BACKWARDS_LOGICAL;
    else if (strcmp(backwards, "refuse") == 0)
        cfg.backwards = IDM_BACKWARDS_REFUSE;
    else if (strcmp(backwards, "wait") == 0)
        cfg.backwards = IDM_BACKWARDS_WAIT;
    else {
        snprintf(errbuf, len, "idmint.backwards_policy = \"%s\": give logical, refuse or wait",
                 backwards);
        goto fail;
    }
    if (!int_setting("idmint.max_drift_ms", g_max_drift, -1, -1, 86400000, &cfg.max_drift_ms,
                     errbuf, len) ||
        !int_setting("idmint.max_wait_ms", g_max_wait, -1, -1, 86400000, &cfg.max_wait_ms, errbuf,
                     len) ||
        !int_setting("idmint.lease_ttl_ms", g_lease_ttl, 0, 0, (int)IDM_LEASE_TTL_MAX_MS,
                     &cfg.lease_ttl_ms, errbuf, len) ||
        !int_setting("idmint.instagram_sequences", g_ig_sequences, 64, 1, 65536,
                     &cfg.instagram_sequences, errbuf, len))
        goto fail;
    if (cfg.lease_ttl_ms != 0 && cfg.lease_ttl_ms < IDM_LEASE_TTL_MIN_MS) {
        snprintf(errbuf, len, "idmint.lease_ttl_ms = %d: give 0 (the default) or %lld to %lld",
                 cfg.lease_ttl_ms, (long long)IDM_LEASE_TTL_MIN_MS, (long long)IDM_LEASE_TTL_MAX_MS);
        goto fail;
    }
    cfg.lease_url = lease[0] != '\0' ? lease : NULL;
    cfg.lease_field = -1;
    if (cfg.lease_url != NULL) {
        char url[512];
        if (idm_lease_url_check(cfg.lease_url) != 0) {
            idm__url_mask(cfg.lease_url, url, sizeof url);
            snprintf(errbuf, len, "idmint.lease = \"%s\": %s", url, idm_error_detail());
            goto fail;
        }
        cfg.lease_field = lease_field(&cfg, errbuf, len);
        if (cfg.lease_field < -1)
            goto fail;
        if (cfg.node_set & (UINT32_C(1) << cfg.lease_field)) {
            idm_field_info fi;
            idm_layout_field(cfg.layout, (size_t)cfg.lease_field, &fi);
            snprintf(errbuf, len,
                     "idmint.node gives %s, which the lease (idmint.lease) fills: leave it out",
                     fi.name);
            goto fail;
        }
    }
    for (size_t i = 0; i < idm_layout_field_count(cfg.layout); i++) {
        idm_field_info fi;
        idm_layout_field(cfg.layout, i, &fi);
        if (fi.kind == IDM_FIELD_NODE && (int)i != cfg.lease_field &&
            !(cfg.node_set & (UINT32_C(1) << i))) {
            snprintf(errbuf, len,
                     "idmint.node has no value for \"%s\": every node field of the layout needs "
                     "one (e.g. idmint.node = '%s=1'), or a lease (idmint.lease) to fill it; "
                     "two servers minting under the same node values mint the same ids",
                     fi.name, fi.name);
            goto fail;
        }
    }
    idmint_cfg = cfg;
    g_loaded = true;
    return true;
fail:
    idm_layout_free(cfg.layout);
    return false;
}

const idm_layout *idmint_layout_load(char *errbuf, size_t len)
{
    static idm_layout *decoding = NULL;
    const char *layout, *epoch;
    if (g_loaded)
        return idmint_cfg.layout;
    if (decoding != NULL)
        return decoding;
    layout = setting("idmint.layout", g_layout, "twitter");
    epoch = setting("idmint.epoch", g_epoch, "");
    if (idm_layout_from_spec(&decoding, layout, epoch[0] != '\0' ? epoch : NULL) != 0) {
        snprintf(errbuf, len, "idmint.layout = \"%s\", idmint.epoch = \"%s\": %s", layout,
                 epoch, idm_error_detail());
        decoding = NULL;
    }
    return decoding;
}

/* A text setting, read at server start, checked by idmint_settings_load. */
static void define(const char *name, const char *desc, const char *more, char **var,
                   const char *def, int flags)
{
    DefineCustomStringVariable(name, desc, more, var, def, PGC_POSTMASTER, flags, NULL, NULL,
                               NULL);
}

static void define_settings(void)
{
    define("idmint.layout", "Bit layout of idmint_next()'s ids.",
           "A preset (twitter, discord, instagram, sonyflake) or a text form such as "
           "time:41@1ms,datacenter:5,worker:5,seq:12.",
           &g_layout, "twitter", 0);
    define("idmint.epoch", "Epoch of idmint.layout (empty: the preset's).",
           "Unix ms or a UTC time such as 2020-01-01T00:00:00Z; required for a text-form layout.",
           &g_epoch, "", 0);
    define("idmint.node", "Node field values of this server's ids.",
           "name=value pairs, e.g. datacenter=1,worker=7: every node field of the layout but the "
           "one a lease fills.",
           &g_node, "", 0);
    define("idmint.backwards_policy", "What idmint_next() does when the clock steps back.",
           "logical: mint on from the last tick, up to idmint.max_drift_ms ahead; refuse: an "
           "error until the clock passes the last tick; wait: sleep up to idmint.max_wait_ms.",
           &g_backwards, "logical", 0);
    define("idmint.max_drift_ms", "How far logical time may run ahead of the clock, in ms.",
           "-1 or empty: the default (10 ms, or a tick if longer).", &g_max_drift, "", 0);
    define("idmint.max_wait_ms", "The longest a call sleeps for the clock, in ms.",
           "-1 or empty: the default (5 ms and a tick).", &g_max_wait, "", 0);
    define("idmint.lease", "Lease URL of a coordinator that hands out this server's worker id.",
           "file:///dir, etcd://host:port/prefix, etcds://..., zk://host:port/prefix or "
           "postgres://...; empty: idmint.node is trusted.",
           &g_lease, "", GUC_SUPERUSER_ONLY);
    define("idmint.lease_field", "The node field the lease fills.",
           "Empty: \"worker\" if the layout has it, else its last node field.", &g_lease_field,
           "", 0);
    define("idmint.lease_ttl_ms", "The lease's TTL in ms (0 or empty: 10 s).", NULL, &g_lease_ttl,
           "", 0);
    define("idmint.instagram_sequences",
           "How many (database, sequence, shard) idmint_instagram() tracks (default 64).", NULL,
           &g_ig_sequences, "", 0);
    MarkGUCPrefixReserved("idmint");
    g_defined = true;
}

/* -------------------------------------------------------- shared memory */

#define ALIGN64(n) (((n) + 63) & ~(Size)63)

static Size shmem_size(void)
{
    Size n = ALIGN64(sizeof(idmint_shared)) + 64;
    n = add_size(n, mul_size(IDMINT_SLOTS, ALIGN64(idm_snowflake_shared_size())));
    n = add_size(n, ALIGN64(idm_uuid7_gen_shared_size()));
    n = add_size(n, ALIGN64(idm_ulid_gen_shared_size()));
    n = add_size(n, mul_size((Size)idmint_cfg.instagram_sequences, ALIGN64(sizeof(idmint_ig_entry))));
    return n;
}

static void shmem_request(void)
{
    if (prev_shmem_request)
        prev_shmem_request();
    RequestAddinShmemSpace(shmem_size());
    RequestNamedLWLockTranche("idmint", 1);
}

static void shmem_startup(void)
{
    bool found;
    char *p;
    if (prev_shmem_startup)
        prev_shmem_startup();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    p = ShmemInitStruct("idmint", shmem_size(), &found);
    if (!found) {
        idmint_shared *sh = (idmint_shared *)p;
        char *at = (char *)ALIGN64((uintptr_t)p + sizeof(idmint_shared));
        memset(sh, 0, sizeof *sh);
        pg_atomic_init_u32(&sh->current, 0);
        for (int i = 0; i < IDMINT_SLOTS; i++) {
            pg_atomic_init_u32(&sh->users[i], 0);
            sh->slot_mem[i] = at;
            at += ALIGN64(idm_snowflake_shared_size());
        }
        sh->last_slot = -1;
        SpinLockInit(&sh->mu);
        sh->state = IDMINT_STARTING;
        snprintf(sh->message, sizeof sh->message, "the idmint keeper has not started yet");
        if (idm_uuid7_gen_init_shared(&sh->uuid7, at, idm_uuid7_gen_shared_size(), NULL, NULL) !=
            0)
            elog(FATAL, "idmint: %s", idm_error_detail());
        at += ALIGN64(idm_uuid7_gen_shared_size());
        if (idm_ulid_gen_init_shared(&sh->ulid, at, idm_ulid_gen_shared_size(), NULL, NULL,
                                     true) != 0)
            elog(FATAL, "idmint: %s", idm_error_detail());
        at += ALIGN64(idm_ulid_gen_shared_size());
        sh->ig = (idmint_ig_entry *)at;
        sh->ig_count = idmint_cfg.instagram_sequences;
        for (int i = 0; i < sh->ig_count; i++) {
            sh->ig[i].db = InvalidOid;
            pg_atomic_init_u64(&sh->ig[i].seen, 0);
            for (int r = 0; r < 1024; r++)
                pg_atomic_init_u64(&sh->ig[i].last[r], 0);
        }
        pg_atomic_init_u64(&sh->ig_limit, 0);
        pg_atomic_init_u32(&sh->ig_ready, 0);
        pg_atomic_init_u32(&sh->ig_users, 0);
        pg_atomic_init_u32(&sh->ig_failed, 0);
        sh->ig_lock = &(GetNamedLWLockTranche("idmint"))->lock;
        idmint_sh = sh;
    } else {
        idmint_sh = (idmint_shared *)p;
    }
    LWLockRelease(AddinShmemInitLock);
}

void _PG_init(void)
{
    char err[512];
    BackgroundWorker w;

    /* Not preloaded (loaded by CREATE EXTENSION or a call): no settings of
     * our own (PostgreSQL takes no PGC_POSTMASTER setting after start);
     * decoding reads their text, minting says it needs preloading. */
    if (!process_shared_preload_libraries_in_progress)
        return;
    define_settings();

    /* Checked now, so that a bad setting stops the server's start. */
    if (!idmint_settings_load(err, sizeof err))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("idmint: %s", err)));

    prev_shmem_request = shmem_request_hook;
    shmem_request_hook = shmem_request;
    prev_shmem_startup = shmem_startup_hook;
    shmem_startup_hook = shmem_startup;

    memset(&w, 0, sizeof w);
    w.bgw_flags = BGWORKER_SHMEM_ACCESS;
    w.bgw_start_time = BgWorkerStart_PostmasterStart;
    w.bgw_restart_time = 1;
    snprintf(w.bgw_library_name, BGW_MAXLEN, "idmint");
    snprintf(w.bgw_function_name, BGW_MAXLEN, "idmint_keeper_main");
    snprintf(w.bgw_name, BGW_MAXLEN, "idmint keeper");
    snprintf(w.bgw_type, BGW_MAXLEN, "idmint keeper");
    RegisterBackgroundWorker(&w);
}

/* -------------------------------------------------------------- helpers */

void idmint_require_preload(const char *fn)
{
    if (idmint_sh == NULL)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("%s: idmint is not in shared_preload_libraries", fn),
                 errhint("Add shared_preload_libraries = 'idmint' to postgresql.conf, with "
                         "idmint.node (or idmint.lease), and restart the server.")));
}

void idmint_set_state(idmint_gen_state st, const char *fmt, ...)
{
    static idmint_gen_state logged = IDMINT_STARTING;
    char buf[IDMINT_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    SpinLockAcquire(&idmint_sh->mu);
    idmint_sh->state = st;
    memcpy(idmint_sh->message, buf, sizeof buf);
    SpinLockRelease(&idmint_sh->mu);
    /* The server's log hears of each change of state (not of each retry:
     * a clock behind the mark is looked at ten times a second). */
    if (st != logged && st != IDMINT_READY)
        elog(LOG, "idmint keeper: not minting: %s", buf);
    logged = st;
}

/* How long a backend waits for a keeper that is still starting. */
#define START_WAIT_MS 5000

idm_snowflake *idmint_gen_try_enter(int *slot)
{
    idmint_shared *sh = idmint_sh;
    for (;;) {
        uint32 cur = pg_atomic_read_u32(&sh->current);
        if (cur == 0)
            return NULL;
        /* A full barrier, then the check: the keeper moves current first
         * and reads users after, so one of us sees the other. */
        pg_atomic_fetch_add_u32(&sh->users[cur - 1], 1);
        if (pg_atomic_read_u32(&sh->current) == cur) {
            *slot = (int)cur - 1;
            return sh->gen[cur - 1];
        }
        pg_atomic_fetch_sub_u32(&sh->users[cur - 1], 1);
    }
}

idm_snowflake *idmint_gen_enter(const char *fn, int *slot)
{
    idmint_shared *sh = idmint_sh;
    int waited = 0;
    idmint_require_preload(fn);
    for (;;) {
        idm_snowflake *g = idmint_gen_try_enter(slot);
        idmint_gen_state st;
        char msg[IDMINT_MESSAGE_MAX];
        if (g != NULL)
            return g;
        SpinLockAcquire(&sh->mu);
        st = sh->state;
        memcpy(msg, sh->message, sizeof msg);
        SpinLockRelease(&sh->mu);
        /* A keeper on its way (starting, restarting, claiming again after a
         * lost lease) is waited for, briefly; a known refusal is not. */
        if ((st == IDMINT_STARTING || st == IDMINT_STOPPED) && waited < START_WAIT_MS) {
            CHECK_FOR_INTERRUPTS();
            pg_usleep(10000);
            waited += 10;
            continue;
        }
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s: idmint's generator is not minting: %s", fn, msg),
                        errhint("SELECT * FROM idmint_status() shows its state; the idmint "
                                "keeper retries by itself.")));
    }
}

void idmint_gen_leave(int slot)
{
    pg_atomic_fetch_sub_u32(&idmint_sh->users[slot], 1);
}

void idmint_raise(const char *fn, int rc)
{
    int code;
    const char *detail = idm_error_detail();
    switch (rc) {
    case IDM_ERANGE:
        code = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
        break;
    case IDM_EPARSE:
        code = ERRCODE_INVALID_TEXT_REPRESENTATION;
        break;
    case IDM_EINVAL:
    case IDM_ELAYOUT:
    case IDM_ENODE:
        code = ERRCODE_INVALID_PARAMETER_VALUE;
        break;
    case IDM_ENOMEM:
        code = ERRCODE_OUT_OF_MEMORY;
        break;
    case IDM_EEXHAUSTED:
    case IDM_ETIMEOVER:
    case IDM_EOVERFLOW:
        code = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
        break;
    case IDM_EIO:
        code = ERRCODE_IO_ERROR;
        break;
    default: /* the clock, the lease, the epoch: the generator's state */
        code = ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
        break;
    }
    ereport(ERROR, (errcode(code), errmsg("%s: %s", fn, detail != NULL && detail[0] != '\0'
                                                            ? detail
                                                            : idm_strerror(rc))));
    pg_unreachable();
}

TimestampTz idmint_ms_to_ts(int64 ms)
{
    return (TimestampTz)((ms - (int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400000) *
                         1000);
}
