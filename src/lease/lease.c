/* SPDX-License-Identifier: MIT */
/*
 * Leases: URL dispatch to a backend, the claim, and the keeper thread that
 * renews and feeds the generator's guard.
 *
 * The guard's deadlines run from the moment a renewal is sent, not answered
 * (a slow answer must not buy time the coordinator did not give): the send
 * time on the generator's monotonic and wall clocks, plus the TTL, minus the
 * margin. The mark recorded with a renewal is the send's wall time plus the
 * TTL, never lower than a mark already recorded; the generator may mint up
 * to it only after the coordinator has it.
 *
 * Scopes (what a coordinator's worker ids are ids of) are built and checked
 * for form here; each backend records and compares them in its own way,
 * and backend.h words the refusal for all of them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "common.h"
#include "lease_internal.h"

#define NS_PER_MS INT64_C(1000000)

struct idm_lease {
    const idm__lease_backend *ops;
    void *be;
    const idm_clock *clock;
    uint32_t worker;
    idm_unix_ms prev_mark;
    /* What a release records when no generator was attached: the previous
     * holder's mark after a claim (nothing was minted under this one), the
     * saved mark after a resume (the holder before the restart was us). */
    idm_unix_ms floor_mark;
    uint64_t generation; /* the claim's fencing token, 0 if none */
    /* The claim, when it recorded a mark, stands as the first renewal. */
    idm_unix_ms claim_mark;
    idm_mono_ns claim_mono;
    idm_wall_ns claim_wall;
    int64_t ttl_ms;
    int64_t margin_ms;
    idm_snowflake *g;
    pid_t pid; /* the process that claimed: a forked child is another */

    /* For restarts (idm_lease_resume, opts.on_renew): the claim's handle,
     * this boot's id, the hooks, and a copy of the options a reattach in the
     * keeper opens a new backend handle with. */
    char handle[IDM_LEASE_HANDLE_MAX];
    char boot_id[IDM_LEASE_BOOT_ID_MAX];
    int (*on_renew)(void *ctx, const idm_lease_saved *saved);
    void (*on_lost)(void *ctx);
    void *hook_ctx;
    idm_lease_opts opts; /* url, holder, scope: the copies below */
    char *url, *holder_s, *scope_s, *boot_file;
    const char *rest;    /* in url, after "://" */
    /* Resumed without the coordinator (idm_lease_resume's offline case):
     * the saved claim, until the keeper reattaches; be is NULL until a
     * backend handle could be opened. */
    idm_lease_saved saved;
    _Atomic bool offline;

    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;

    /* Written by the keeper (or the owner before the keeper starts). */
    idm_unix_ms recorded;
    _Atomic bool lost;
    _Atomic uint64_t renewals;
    _Atomic uint64_t failures;
    _Atomic int last_error;
    _Atomic int64_t deadline;
    _Atomic int64_t mark_ms;
    _Atomic int64_t renew_ns;
};

/* Free what lease_new allocated (l itself too). */
static void lease_free(idm_lease *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->url);
    free(l->holder_s);
    free(l->scope_s);
    free(l->boot_file);
    free(l);
}

void idm_lease_opts_init(idm_lease_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->max_workers = 1024;
    opts->ttl_ms = IDM_LEASE_TTL_DEFAULT_MS;
    opts->margin_ms = -1;
}

/* The backends by URL scheme: a backend not built keeps its row, so that
 * its URLs are told apart from an unknown scheme. */
static const idm__scheme backends[] = {
    {"file", &idm__lease_file, NULL},
#ifdef IDM_WITH_ETCD
    {"etcd", &idm__lease_etcd, NULL},
    {"etcds", &idm__lease_etcds, NULL},
#else
    {"etcd", NULL, "IDM_WITH_ETCD=OFF"},
    {"etcds", NULL, "IDM_WITH_ETCD=OFF"},
#endif
#ifdef IDM_WITH_ZOOKEEPER
    {"zk", &idm__lease_zk, NULL},
#else
    {"zk", NULL, "IDM_WITH_ZOOKEEPER=OFF"},
#endif
#ifdef IDM_WITH_POSTGRES
    {"postgres", &idm__lease_pg, NULL},
    {"postgresql", &idm__lease_pg, NULL},
#else
    {"postgres", NULL, "IDM_WITH_POSTGRES=OFF"},
    {"postgresql", NULL, "IDM_WITH_POSTGRES=OFF"},
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* What a lease URL looks like, for messages. */
#define LEASE_URL_FORMS                                                                    \
    "file:///dir, etcd://host:port/prefix, etcds://host:port/prefix, "                      \
    "zk://host:port/prefix or postgres://..."

int idm_lease_url_check(const char *url)
{
    const idm__scheme *row;
    return idm__scheme_pick(backends, N_BACKENDS, "lease", LEASE_URL_FORMS, url, &row);
}

/* The backend of url and the rest of it after "://"; a URL in a message is
 * shown with its password masked. */
static int pick_backend(const char *url, const idm__lease_backend **ops, const char **rest)
{
    const idm__scheme *row;
    int rc = idm__scheme_pick(backends, N_BACKENDS, "lease", LEASE_URL_FORMS, url, &row);
    *ops = rc == 0 ? row->backend : NULL;
    *rest = rc == 0 ? strstr(url, "://") + 3 : NULL;
    return rc;
}

/*
 * The guard reads CLOCK_MONOTONIC_COARSE (for the system clock), which lags
 * the true time by up to its resolution, a kernel tick (10 ms at HZ=100),
 * and clocks run at slightly different rates: the margin must cover twice
 * that resolution plus 10 ms. An injected clock is read exactly.
 */
int64_t idm__lease_min_margin_ms(const idm_clock *clock)
{
    int64_t min = 10;
    if (clock == NULL || clock == idm_clock_system()) {
        struct timespec res;
        if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) {
            res.tv_sec = 0;
            res.tv_nsec = 10000000;
        }
        min += 2 * (((int64_t)res.tv_sec * 1000000000 + res.tv_nsec + NS_PER_MS - 1) / NS_PER_MS);
    }
    return min;
}

int idm_lease_scope(const idm_layout *l, const char *field, char *buf, size_t len)
{
    char text[IDM_LAYOUT_TEXT_MAX];
    idm_field_info f;
    int idx, n;
    memset(&f, 0, sizeof f);
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    if (l == NULL || field == NULL || buf == NULL || len == 0)
        return idm_error_fail(IDM_EINVAL, "lease: a scope needs a layout, a field name and a "
                                          "buffer");
    idx = idm_layout_field_index(l, field);
    if (idx < 0)
        return idm_error_fail(IDM_EINVAL, "lease: the layout has no field '%.40s' to lease", field);
    if (idm_layout_field(l, (size_t)idx, &f) != 0 || f.kind != IDM_FIELD_NODE)
        return idm_error_fail(IDM_EINVAL,
                              "lease: '%s' is the layout's %s field; only a node field can be "
                              "leased",
                              field, f.kind == IDM_FIELD_TIME ? "time" : "sequence");
    if (idm_layout_format(l, text, sizeof text) != 0)
        return idm_error_fail(IDM_EINVAL, "lease: the layout has no text form");
    n = snprintf(buf, len, "%s of %s epoch %lld", f.name, text, (long long)idm_layout_epoch(l));
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return idm_error_fail(IDM_EINVAL,
                              "lease: a scope buffer of %zu bytes is too small (%d needed)", len,
                              n + 1);
    }
    return 0;
}

/* A scope in opts: 1 to IDM_LEASE_SCOPE_MAX - 1 printable ASCII bytes. */
static int check_scope(const char *scope)
{
    size_t n = strnlen(scope, IDM_LEASE_SCOPE_MAX);
    if (n == 0 || n >= IDM_LEASE_SCOPE_MAX)
        return idm_error_fail(IDM_EINVAL, "lease: the scope must be 1 to %d bytes, not %s",
                              IDM_LEASE_SCOPE_MAX - 1, n == 0 ? "empty" : "longer");
    for (size_t i = 0; i < n; i++)
        if (scope[i] < ' ' || scope[i] > '~')
            return idm_error_fail(IDM_EINVAL,
                                  "lease: the scope has byte 0x%02x at offset %zu (printable "
                                  "ASCII only)",
                                  (unsigned)(unsigned char)scope[i], i);
    return 0;
}

int idm_lease_boot_id(const char *file, char *buf, size_t len)
{
    char raw[128], why[128];
    const char *kind;
    ssize_t n;
    size_t k = 0;
    if (buf == NULL || len < 2)
        return idm_error_fail(IDM_EINVAL, "lease: no buffer for the boot id");
    buf[0] = '\0';
    if (file == NULL)
        file = "/proc/sys/kernel/random/boot_id";
    n = idm__read_regular(file, raw, sizeof raw - 1, &kind, why, sizeof why);
    if (n < 0)
        return idm_error_fail(IDM_EIO, "lease: boot id file %.100s: %s", file, why);
    for (ssize_t i = 0; i < n && raw[i] != '\n' && k + 1 < len; i++)
        if (raw[i] > ' ' && raw[i] <= '~')
            buf[k++] = raw[i];
    buf[k] = '\0';
    if (k == 0)
        return idm_error_fail(IDM_EIO, "lease: boot id file %.100s holds no boot id", file);
    return 0;
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

/* Check opts, pick the backend and make a lease that holds nothing yet (no
 * backend handle): what open and resume share. */
static int lease_new(idm_lease **out, const idm_lease_opts *opts)
{
    idm_lease *l;
    const idm__lease_backend *ops;
    const char *rest;
    char holder[64];
    int64_t margin;
    int rc;

    if (out == NULL || opts == NULL)
        return idm_error_fail(IDM_EINVAL, "lease: no options");
    if (opts->max_workers == 0 || opts->max_workers > IDM_LEASE_WORKERS_MAX)
        return idm_error_fail(IDM_EINVAL, "lease: max_workers %u is outside 1 to %u",
                              (unsigned)opts->max_workers, (unsigned)IDM_LEASE_WORKERS_MAX);
    if (opts->ttl_ms < IDM_LEASE_TTL_MIN_MS || opts->ttl_ms > IDM_LEASE_TTL_MAX_MS)
        return idm_error_fail(IDM_EINVAL, "lease: TTL %lld ms is outside 1 s to 1 h",
                              (long long)opts->ttl_ms);
    margin = opts->margin_ms >= 0 ? opts->margin_ms : opts->ttl_ms / 5;
    if (margin < idm__lease_min_margin_ms(opts->clock))
        return idm_error_fail(IDM_EINVAL,
                              "lease: margin %lld ms is under the %lld ms minimum (10 ms plus "
                              "twice the resolution of the guard's monotonic clock)",
                              (long long)margin, (long long)idm__lease_min_margin_ms(opts->clock));
    if (margin >= opts->ttl_ms * 2 / 3)
        return idm_error_fail(IDM_EINVAL,
                              "lease: margin %lld ms leaves no time between renewals (TTL %lld ms)",
                              (long long)margin, (long long)opts->ttl_ms);
    if (opts->scope != NULL && (rc = check_scope(opts->scope)) != 0)
        return rc;
    rc = pick_backend(opts->url, &ops, &rest);
    if (rc != 0)
        return rc;
    if (opts->holder != NULL) {
        snprintf(holder, sizeof holder, "%s", opts->holder);
    } else {
        char host[48] = "host";
        gethostname(host, sizeof host - 1);
        snprintf(holder, sizeof holder, "%s:%ld", host, (long)getpid());
    }
    for (char *p = holder; *p != '\0'; p++)
        if (*p <= ' ' || *p > '~')
            *p = '_';

    l = calloc(1, sizeof *l);
    if (l == NULL)
        return IDM_ENOMEM;
    l->ops = ops;
    l->pid = getpid();
    l->clock = opts->clock != NULL ? opts->clock : idm_clock_system();
    l->margin_ms = margin;
    l->ttl_ms = opts->ttl_ms;
    pthread_mutex_init(&l->mu, NULL);
    idm__cond_init_mono(&l->cv);
    l->on_renew = opts->on_renew;
    l->on_lost = opts->on_lost;
    l->hook_ctx = opts->hook_ctx;
    l->opts = *opts;
    l->url = strdup(opts->url);
    l->holder_s = strdup(holder);
    l->scope_s = dup_or_null(opts->scope);
    l->boot_file = dup_or_null(opts->boot_id_file);
    if (l->url == NULL || l->holder_s == NULL || (opts->scope != NULL && l->scope_s == NULL) ||
        (opts->boot_id_file != NULL && l->boot_file == NULL)) {
        lease_free(l);
        return IDM_ENOMEM;
    }
    l->rest = l->url + (rest - opts->url);
    l->opts.url = l->url;
    l->opts.holder = l->holder_s;
    l->opts.scope = l->scope_s;
    l->opts.boot_id_file = l->boot_file;
    /* The boot id, for a restart to know whether the deadlines it saves
     * still mean anything: only needed when they are kept. */
    if (l->on_renew != NULL && (rc = idm_lease_boot_id(l->boot_file, l->boot_id,
                                                        sizeof l->boot_id)) != 0) {
        lease_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

/* The claim's handle, kept for the saved claim ("" if the backend has
 * none). */
static void keep_handle(idm_lease *l)
{
    l->handle[0] = '\0';
    if (l->ops->handle != NULL && l->ops->handle(l->be, l->handle, sizeof l->handle) != 0)
        l->handle[0] = '\0';
    l->generation = l->ops->generation != NULL ? l->ops->generation(l->be) : 0;
}

int idm_lease_open(idm_lease **out, const idm_lease_opts *opts)
{
    idm_lease *l;
    const idm__lease_backend *ops;
    int rc = lease_new(&l, opts);
    if (rc != 0)
        return rc;
    ops = l->ops;
    rc = ops->open(&l->be, l->rest, &l->opts);
    if (rc == 0) {
        /* The claim records the first mark, as a renewal sent now would. */
        l->claim_mono = l->clock->mono_ns(l->clock->ctx);
        l->claim_wall = l->clock->wall_ns(l->clock->ctx);
        rc = ops->claim(l->be, opts->max_workers, opts->ttl_ms, l->holder_s, l->scope_s,
                        l->claim_wall / NS_PER_MS + opts->ttl_ms, &l->worker, &l->prev_mark,
                        &l->claim_mark, &l->ttl_ms);
    }
    if (rc != 0) {
        if (l->be != NULL)
            ops->close(l->be);
        lease_free(l);
        return rc;
    }
    keep_handle(l);
    l->floor_mark = l->prev_mark;
    l->recorded = l->claim_mark > l->prev_mark ? l->claim_mark : l->prev_mark;
    atomic_store(&l->mark_ms, l->recorded);
    *out = l;
    return 0;
}

uint32_t idm_lease_worker(const idm_lease *l)
{
    return l->worker;
}

idm_unix_ms idm_lease_mark(const idm_lease *l)
{
    return l->prev_mark;
}

uint64_t idm_lease_generation(const idm_lease *l)
{
    return l->generation;
}

int idm_lease_resume(idm_lease **out, const idm_lease_opts *opts, const idm_lease_saved *saved,
                     bool *offline)
{
    idm_lease *l;
    idm_mono_ns send_mono, now_mono;
    idm_wall_ns now_wall;
    idm_wall_ns send_wall;
    idm_unix_ms mark, recorded = 0;
    int64_t ttl, t0;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (offline != NULL)
        *offline = false;
    if (out == NULL || opts == NULL || saved == NULL || offline == NULL)
        return idm_error_fail(IDM_EINVAL, "lease: resume needs options, a saved claim and outputs");
    if (saved->worker >= opts->max_workers || saved->handle[0] == '\0' ||
        memchr(saved->handle, '\0', sizeof saved->handle) == NULL || saved->ttl_ms <= 0)
        return idm_error_fail(IDM_EINVAL, "lease: the saved claim of worker id %u is not one "
                                          "(out of range, no handle or no TTL)",
                              (unsigned)saved->worker);
    rc = lease_new(&l, opts);
    if (rc != 0)
        return rc;
    if (l->ops->reattach == NULL || l->ops->handle == NULL) {
        lease_free(l);
        return idm_error_fail(IDM_EINVAL, "lease: this coordinator cannot resume a claim");
    }
    if (l->boot_id[0] == '\0' &&
        (rc = idm_lease_boot_id(l->boot_file, l->boot_id, sizeof l->boot_id)) != 0) {
        lease_free(l);
        return rc;
    }
    l->saved = *saved;
    l->floor_mark = saved->mark_ms;
    l->worker = saved->worker;
    l->generation = saved->generation;
    memcpy(l->handle, saved->handle, sizeof l->handle);
    l->ttl_ms = saved->ttl_ms < opts->ttl_ms ? saved->ttl_ms : opts->ttl_ms;

    ttl = opts->ttl_ms;
    rc = l->ops->open(&l->be, l->rest, &l->opts);
    if (rc == IDM_EINVAL) {
        lease_free(l);
        return rc;
    }
    if (rc == 0) {
        send_mono = l->clock->mono_ns(l->clock->ctx);
        send_wall = l->clock->wall_ns(l->clock->ctx);
        mark = send_wall / NS_PER_MS + ttl;
        if (mark < saved->mark_ms)
            mark = saved->mark_ms;
        t0 = idm__mono_ns();
        rc = l->ops->reattach(l->be, saved->worker, saved->handle, ttl, l->holder_s, l->scope_s,
                              mark, &recorded, &ttl);
        if (rc == 0) {
            /* Confirmed: an ordinary lease whose claim was this reattach
             * (attach takes it as the first renewal). */
            atomic_store(&l->renew_ns, idm__mono_ns() - t0);
            keep_handle(l);
            l->claim_mono = send_mono;
            l->claim_wall = send_wall;
            l->claim_mark = recorded > mark ? recorded : mark;
            l->ttl_ms = ttl;
            l->prev_mark = 0;
            l->recorded = l->claim_mark;
            atomic_store(&l->mark_ms, l->recorded);
            *out = l;
            return 0;
        }
        l->ops->close(l->be);
        l->be = NULL;
        if (rc == IDM_ELEASE || rc == IDM_EINVAL) {
            char detail[256];
            snprintf(detail, sizeof detail, "%s", idm_error_detail());
            lease_free(l);
            return idm_error_fail(rc, "%s", detail);
        }
    }
    /* The coordinator cannot be reached: the saved claim stands, on this
     * boot and before its deadline only. */
    now_mono = l->clock->mono_ns(l->clock->ctx);
    if (strcmp(l->boot_id, saved->boot_id) != 0) {
        lease_free(l);
        return idm_error_fail(IDM_ELEASE,
                              "lease: the coordinator cannot be reached and the saved claim of "
                              "worker id %u is from another boot",
                              (unsigned)saved->worker);
    }
    now_wall = l->clock->wall_ns(l->clock->ctx);
    if (now_mono >= saved->mono_deadline || now_wall >= saved->wall_deadline) {
        /* Whichever passed: a claim saved in another time namespace has its
         * monotonic deadline on another clock (FAULTS C14). */
        int64_t ago = now_mono - saved->mono_deadline;
        if (now_wall - saved->wall_deadline > ago)
            ago = now_wall - saved->wall_deadline;
        lease_free(l);
        return idm_error_fail(IDM_ELEASE,
                              "lease: the coordinator cannot be reached and the saved claim of "
                              "worker id %u ran out %lld ms ago",
                              (unsigned)saved->worker, (long long)(ago / NS_PER_MS));
    }
    l->recorded = saved->mark_ms;
    l->prev_mark = 0;
    atomic_store(&l->mark_ms, saved->mark_ms);
    atomic_store(&l->deadline, saved->mono_deadline);
    atomic_store(&l->offline, true);
    atomic_store(&l->last_error, IDM_EIO);
    *offline = true;
    *out = l;
    return 0;
}

int64_t idm__lease_ttl_ms(const idm_lease *l)
{
    return l->ttl_ms;
}

/* A renewal sent at mono and wall recorded mark, for ttl: the generator
 * may mint up to mark until the deadline. */
static void feed(idm_lease *l, idm_mono_ns mono, idm_wall_ns wall, int64_t ttl, idm_unix_ms mark)
{
    int64_t d = (ttl - l->margin_ms) * NS_PER_MS;
    idm_snowflake_guard(l->g, mono + d, wall + d, mark);
    atomic_store(&l->deadline, mono + d);
    atomic_store(&l->mark_ms, mark);
    atomic_fetch_add(&l->renewals, 1);
}

/* What a restart needs to resume the claim after a renewal sent at mono
 * and wall that recorded mark for ttl: the hook's to keep, before the
 * generator may rely on the renewal. 0, or the hook's error. */
static int keep_saved(idm_lease *l, idm_mono_ns mono, idm_wall_ns wall, int64_t ttl,
                      idm_unix_ms mark)
{
    idm_lease_saved sv;
    int64_t d = (ttl - l->margin_ms) * NS_PER_MS;
    if (l->on_renew == NULL)
        return 0;
    memset(&sv, 0, sizeof sv);
    sv.worker = l->worker;
    sv.generation = l->generation;
    memcpy(sv.handle, l->handle, sizeof sv.handle);
    sv.mark_ms = mark;
    sv.ttl_ms = ttl;
    sv.mono_deadline = mono + d;
    sv.wall_deadline = wall + d;
    memcpy(sv.boot_id, l->boot_id, sizeof sv.boot_id);
    return l->on_renew(l->hook_ctx, &sv);
}

/* A renewal failed with rc: count it; if the coordinator says the claim is
 * gone, stop now, not at the deadline, since someone else may already hold
 * the id. */
static void renew_failed(idm_lease *l, int rc)
{
    atomic_fetch_add(&l->failures, 1);
    atomic_store(&l->last_error, rc);
    if (rc == IDM_ELEASE && !atomic_load(&l->lost)) {
        /* Lost before the guard drops: a mint the drop refuses can see the
         * loss (a leased generator then waits for its re-claim rather than
         * hand its caller IDM_ELEASE before on_lost was even called). */
        atomic_store(&l->lost, true);
        if (l->g != NULL)
            idm_snowflake_guard_drop(l->g);
        if (l->on_lost != NULL)
            l->on_lost(l->hook_ctx);
    }
}

/* A renewal (or reattach) sent at send_mono, send_wall recorded mark for
 * ttl: keep it for restarts, then let the generator mint up to it. */
static int renewed(idm_lease *l, idm_mono_ns send_mono, idm_wall_ns send_wall, int64_t ttl,
                   idm_unix_ms mark)
{
    int rc;
    if (mark > l->recorded)
        l->recorded = mark;
    if (ttl < l->ttl_ms)
        l->ttl_ms = ttl;
    rc = keep_saved(l, send_mono, send_wall, ttl, mark);
    if (rc != 0) {
        renew_failed(l, rc);
        return rc;
    }
    feed(l, send_mono, send_wall, ttl, mark);
    atomic_store(&l->last_error, 0);
    return 0;
}

/* One renewal: record a mark, then let the generator mint up to it. */
static int renew_once(idm_lease *l)
{
    idm_mono_ns send_mono = l->clock->mono_ns(l->clock->ctx);
    idm_wall_ns send_wall = l->clock->wall_ns(l->clock->ctx);
    int64_t ttl = l->ttl_ms;
    idm_unix_ms mark = send_wall / NS_PER_MS + ttl;
    int rc;
    if (mark < l->recorded)
        mark = l->recorded;
    /* The renewal's cost, on the real monotonic clock (an injected clock
     * may stand still): for status, never for a deadline. */
    int64_t t0 = idm__mono_ns();
    rc = l->ops->renew(l->be, mark, &ttl);
    if (rc == 0) {
        atomic_store(&l->renew_ns, idm__mono_ns() - t0);
        return renewed(l, send_mono, send_wall, ttl, mark);
    }
    renew_failed(l, rc);
    return rc;
}

/* Offline (a resumed claim the coordinator has not confirmed yet): open a
 * backend handle if there is none, and reattach the saved claim. 0 once it
 * is confirmed (the lease is then an ordinary one), IDM_ELEASE if the
 * coordinator says it is gone, another error to try again. */
static int reattach_once(idm_lease *l)
{
    idm_mono_ns send_mono;
    idm_wall_ns send_wall;
    idm_unix_ms mark, recorded = 0;
    int64_t ttl = l->ttl_ms, t0;
    int rc = 0;
    if (l->be == NULL)
        rc = l->ops->open(&l->be, l->rest, &l->opts);
    if (rc != 0) {
        l->be = NULL;
        renew_failed(l, rc == IDM_ELEASE ? IDM_EIO : rc);
        return rc;
    }
    send_mono = l->clock->mono_ns(l->clock->ctx);
    send_wall = l->clock->wall_ns(l->clock->ctx);
    mark = send_wall / NS_PER_MS + ttl;
    if (mark < l->recorded)
        mark = l->recorded;
    t0 = idm__mono_ns();
    rc = l->ops->reattach(l->be, l->worker, l->saved.handle, ttl, l->holder_s, l->scope_s, mark,
                          &recorded, &ttl);
    if (rc != 0) {
        /* A handle that failed is not used again: the next try opens a
         * new one (a backend may be left mid-way by an error). */
        l->ops->close(l->be);
        l->be = NULL;
        renew_failed(l, rc);
        return rc;
    }
    atomic_store(&l->renew_ns, idm__mono_ns() - t0);
    keep_handle(l);
    atomic_store(&l->offline, false);
    return renewed(l, send_mono, send_wall, ttl, recorded > mark ? recorded : mark);
}

static int refuse_forked(void)
{
    return idm_error_fail(IDM_EFORKED, "lease: this worker id was claimed by the parent process; "
                                       "a forked child must claim its own");
}

static void *keeper(void *arg)
{
    idm_lease *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stop && !atomic_load(&l->lost)) {
        /* Every TTL/3; after a failure, every TTL/10 until one works. */
        int64_t wait_ms = atomic_load(&l->last_error) == 0 ? l->ttl_ms / 3 : l->ttl_ms / 10;
        /* The condition variable waits on CLOCK_MONOTONIC (idm_lease_open). */
        int64_t until = idm__mono_ns() + wait_ms * NS_PER_MS;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &ts) != ETIMEDOUT)
            ;
        if (l->stop)
            break;
        pthread_mutex_unlock(&l->mu);
        if (atomic_load(&l->offline))
            reattach_once(l);
        else
            renew_once(l);
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int idm_lease_attach(idm_lease *l, idm_snowflake *g)
{
    int rc;
    if (l == NULL || g == NULL || l->g != NULL)
        return idm_error_fail(IDM_EINVAL, "lease: attach needs a lease and a generator, once");
    if (l->pid != getpid())
        return refuse_forked();
    l->g = g;
    /* Claimed a moment ago, with a mark: that was the first renewal (its
     * deadline runs from the claim's start), so the generator may mint now,
     * with no further round trip. */
    if (atomic_load(&l->offline)) {
        /* A resumed claim the coordinator has not confirmed: the saved
         * deadlines and mark, never more, until the keeper reattaches. */
        idm_snowflake_guard(g, l->saved.mono_deadline, l->saved.wall_deadline, l->saved.mark_ms);
        atomic_store(&l->deadline, l->saved.mono_deadline);
        atomic_store(&l->mark_ms, l->saved.mark_ms);
    } else if (l->claim_mark > 0 &&
               l->clock->mono_ns(l->clock->ctx) - l->claim_mono < l->ttl_ms * NS_PER_MS / 6) {
        if ((rc = renewed(l, l->claim_mono, l->claim_wall, l->ttl_ms, l->claim_mark)) != 0) {
            l->g = NULL;
            return rc;
        }
    } else if ((rc = renew_once(l)) != 0) {
        l->g = NULL;
        return rc;
    }
    if (idm__thread_create(&l->thread, keeper, l) != 0) {
        idm_snowflake_guard_drop(g);
        l->g = NULL;
        return idm_error_fail(IDM_ENOMEM, "lease: cannot start the keeper thread");
    }
    l->running = true;
    return 0;
}

void idm_lease_status_get(const idm_lease *l, idm_lease_status *out)
{
    memset(out, 0, sizeof *out);
    out->worker = l->worker;
    out->lost = atomic_load(&l->lost);
    out->renewals = atomic_load(&l->renewals);
    out->failures = atomic_load(&l->failures);
    out->last_error = atomic_load(&l->last_error);
    out->deadline = atomic_load(&l->deadline);
    out->mark_ms = atomic_load(&l->mark_ms);
    out->renew_ns = atomic_load(&l->renew_ns);
    out->offline = atomic_load(&l->offline);
}

int idm_lease_close(idm_lease *l)
{
    idm_unix_ms final;
    int rc = 0;
    if (l == NULL)
        return 0;
    if (l->pid != getpid()) {
        /* A forked child's copy: the claim, the keeper thread (not copied
         * into the child) and the coordinator's record are the parent's.
         * Free the copy without touching them: closing the child's
         * descriptors leaves the parent's locks and connections alone. */
        if (l->be != NULL)
            l->ops->close(l->be);
        /* The mutex and condition variable are the parent's keeper's (a
         * copy of them in use): destroying them here can hang. */
        free(l->url);
        free(l->holder_s);
        free(l->scope_s);
        free(l->boot_file);
        free(l);
        return refuse_forked();
    }
    if (l->running) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_signal(&l->cv);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
    }
    /* Nothing minted under the claim without a generator attached. */
    final = l->g != NULL ? l->prev_mark : l->floor_mark;
    if (l->g != NULL) {
        /* Stop the generator, then record exactly what it minted, so the
         * next holder need not wait out the lookahead. Never below the
         * previous holder's mark. Mints may still be in flight on other
         * threads: the drop and the read of the state that follows are
         * ordered against each mint's CAS and its check of the guard after
         * it (see idm_snowflake_guard_drop), so a mint either shows in the
         * state read here or hands nothing out. A generator that minted
         * nothing reports its epoch (tick 0), which is also the time of an
         * id minted in tick 0: recorded either way. */
        idm_snowflake_stats st;
        idm_snowflake_guard_drop(l->g);
        idm_snowflake_stats_get(l->g, &st);
        if (st.last_unix_ms > final)
            final = st.last_unix_ms;
    }
    /* A resumed claim never confirmed cannot be released: it expires on
     * the coordinator, whose mark (the saved one, the generator's limit)
     * covers every id minted under it. */
    if (!atomic_load(&l->lost) && !atomic_load(&l->offline) && l->be != NULL)
        rc = l->ops->release(l->be, final);
    if (l->be != NULL)
        l->ops->close(l->be);
    lease_free(l);
    return rc;
}

/* A look at url's coordinator without a claim: the listing (entries not
 * NULL) or the recorded scope (into buf). */
static int look(const char *url, uint32_t max_workers, idm_lease_entry **entries, size_t *count,
                char *buf, size_t len)
{
    const idm__lease_backend *ops;
    const char *rest;
    void *be = NULL;
    idm_lease_opts o;
    int rc = pick_backend(url, &ops, &rest);
    idm_lease_opts_init(&o);
    o.url = url;
    if (rc == 0)
        rc = ops->open(&be, rest, &o);
    if (rc == 0 && entries != NULL)
        rc = ops->list(be, max_workers != 0 ? max_workers : o.max_workers, entries, count);
    else if (rc == 0)
        rc = ops->scope(be, buf, len);
    if (be != NULL)
        ops->close(be);
    return rc;
}

int idm_lease_list(const char *url, uint32_t max_workers, idm_lease_entry **entries, size_t *count)
{
    if (entries == NULL || count == NULL)
        return idm_error_fail(IDM_EINVAL, "lease: no output");
    return look(url, max_workers, entries, count, NULL, 0);
}

int idm_lease_scope_recorded(const char *url, char *buf, size_t len)
{
    int rc;
    if (buf == NULL || len == 0)
        return idm_error_fail(IDM_EINVAL, "lease: no buffer for the scope");
    buf[0] = '\0';
    rc = look(url, 0, NULL, NULL, buf, len);
    if (rc != 0)
        buf[0] = '\0';
    return rc;
}
