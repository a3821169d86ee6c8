/* SPDX-License-Identifier: MIT */
/*
 * Leased generators (leased.h): a lease and a generator per worker id held,
 * the current one behind an atomic pointer, a supervisor thread that makes
 * the switches (re-claims after a loss, worker changes after a clock step),
 * and the claim files that let a restart resume a claim.
 *
 * The mint path is one atomic load of the current slot plus the generator's
 * own path. A slot that is no longer current keeps its generator (guard
 * dropped: it mints nothing) until idm_leased_close, because other threads
 * may still be inside it; its lease is closed at the switch.
 *
 * Fork: a leased generator belongs to the process that opened it. In a
 * forked child its generators refuse to mint (IDM_EFORKED: the worker id
 * is the parent's), and idm_leased_close frees the child's copy without
 * the supervisor thread (the parent's), the release of the claim, or a
 * write or unlink of the claim and state files, which stay the parent's.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <idmint/leased.h>

#include "common.h"
#include "lease_internal.h"

#define NS_PER_MS INT64_C(1000000)
/* Claim files one state_dir offers per coordinator and scope: processes
 * running at once from one directory with one coordinator. */
#define CLAIM_SLOTS 64
#define CLAIM_LINE_MAX 640

typedef struct slot {
    struct idm_leased *lg;
    idm_lease *lease; /* NULL once closed (the slot is retired) */
    idm_snowflake *gen;
    uint32_t worker;
    char state_name[96]; /* its generator's state file in the dir; "" none */
    struct slot *next;   /* every slot, for close */
} slot;

enum reason { R_FIRST, R_LOSS, R_CHANGE };

struct idm_leased {
    idm_leased_opts o;
    idm_lease_opts lo;  /* the leases' options (strings below) */
    idm_snowflake_opts go;
    idm_layout *layout; /* go.layout */
    char *url, *holder, *boot_file, *dir;
    char scope[IDM_LEASE_SCOPE_MAX];
    /* The node fields the worker id fills, in layout order: the last takes
     * its low bits (radix[i]: field i's range). */
    int field[IDM_LAYOUT_MAX_FIELDS];
    uint64_t radix[IDM_LAYOUT_MAX_FIELDS];
    unsigned nfields;
    uint64_t key; /* hash of the coordinator and the scope */
    int claim_k;  /* the claim file this process holds, -1: none */
    int claim_fd; /* its lock */
    unsigned state_serial;
    bool change_worker;
    const idm_clock *clock;

    _Atomic(slot *) cur;
    slot *all; /* under mu */

    pthread_mutex_t file_mu; /* the claim file; writer */
    slot *writer;            /* the slot whose renewals are written */

    pthread_mutex_t mu;      /* the supervisor's requests */
    pthread_cond_t cv;       /* a request, stop */
    pthread_cond_t done_cv;  /* a switch ended */
    bool stop, want_loss, want_change, switching;
    slot *lost_slot;         /* the slot whose loss is pending */
    uint64_t switches_done;
    int64_t switch_start_ns;
    int64_t change_after_ns; /* no change tried before this (idm__mono_ns) */
    int64_t retry_at_ns;     /* a failed re-claim is tried again then */
    pthread_t sup;
    bool sup_running;
    pid_t pid; /* the process that opened it: a forked child is another */

    _Atomic uint64_t reclaims, losses, changes, switch_failures;
    _Atomic int64_t last_switch_ns;
    idm_leased_origin origin;
    int last_error;          /* under mu */
    char last_detail[256];
};

void idm_leased_opts_init(idm_leased_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    idm_lease_opts_init(&opts->lease);
    idm_snowflake_opts_init(&opts->gen);
    opts->switch_wait_ms = -1;
}

/* One line to on_event, never under a lock of lg. */
__attribute__((format(printf, 2, 3))) static void event(idm_leased *lg, const char *fmt, ...)
{
    char line[400];
    va_list ap;
    if (lg->o.on_event == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    lg->o.on_event(lg->o.event_ctx, line);
}

static idm_unix_ms now_ms(const idm_leased *lg)
{
    idm_wall_ns w = lg->clock->wall_ns(lg->clock->ctx);
    return w / NS_PER_MS - (w % NS_PER_MS < 0);
}

/* ---- claim files */

static void claim_path(const idm_leased *lg, int k, const char *suffix, char *out, size_t cap)
{
    snprintf(out, cap, "%s/claim-%016" PRIx64 "-%d%s", lg->dir, lg->key, k, suffix);
}

/* The line: every field a restart needs, then a check of the bytes
 * before it (the lease file coordinator's FNV-1a). */
static int claim_format(const idm_leased *lg, const idm_lease_saved *sv, const char *state_name,
                        char *out, size_t cap)
{
    int n = snprintf(out, cap,
                     "idmint-claim 1 key=%016" PRIx64 " worker=%u generation=%" PRIu64
                     " ttl=%lld mark=%lld mono=%lld wall=%lld boot=%s state=%s handle=%s",
                     lg->key, (unsigned)sv->worker, sv->generation, (long long)sv->ttl_ms,
                     (long long)sv->mark_ms, (long long)sv->mono_deadline,
                     (long long)sv->wall_deadline, sv->boot_id,
                     state_name[0] != '\0' ? state_name : "-", sv->handle);
    if (n < 0 || (size_t)n + 20 >= cap)
        return -1;
    n += snprintf(out + n, cap - (size_t)n, " check=%016" PRIx64 "\n",
                  idm__lease_fnv1a(out, (size_t)n));
    return n;
}

/* Parse a claim line into *sv and state_name; 0, or -1 if it is not one of
 * ours, whole and unchanged. */
static int claim_parse(const idm_leased *lg, const char *line, size_t len, idm_lease_saved *sv,
                       char *state_name, size_t cap)
{
    char copy[CLAIM_LINE_MAX], *check, *end;
    unsigned long long key, gen, sum;
    long long ttl, mark, mono, wall;
    unsigned worker;
    char boot[IDM_LEASE_BOOT_ID_MAX], state[96], handle[IDM_LEASE_HANDLE_MAX];
    if (len == 0 || len >= sizeof copy || line[len - 1] != '\n')
        return -1;
    memcpy(copy, line, len);
    copy[len - 1] = '\0';
    check = strstr(copy, " check=");
    if (check == NULL)
        return -1;
    sum = strtoull(check + 7, &end, 16);
    if (*end != '\0' || sum != idm__lease_fnv1a(copy, (size_t)(check - copy)))
        return -1;
    *check = '\0';
    if (sscanf(copy,
               "idmint-claim 1 key=%llx worker=%u generation=%llu ttl=%lld mark=%lld mono=%lld "
               "wall=%lld boot=%39s state=%95s handle=%159s",
               &key, &worker, &gen, &ttl, &mark, &mono, &wall, boot, state, handle) != 10)
        return -1;
    if (key != lg->key)
        return -1;
    memset(sv, 0, sizeof *sv);
    sv->worker = worker;
    sv->generation = gen;
    sv->ttl_ms = ttl;
    sv->mark_ms = mark;
    sv->mono_deadline = mono;
    sv->wall_deadline = wall;
    snprintf(sv->boot_id, sizeof sv->boot_id, "%s", boot);
    snprintf(sv->handle, sizeof sv->handle, "%s", handle);
    snprintf(state_name, cap, "%s", strcmp(state, "-") == 0 ? "" : state);
    /* A state file name is ours only: no directory in it. */
    if (strchr(state_name, '/') != NULL || strcmp(state_name, "..") == 0)
        return -1;
    return 0;
}

/* Write the claim file: a temporary file, fsync'd, renamed over it, the
 * directory fsync'd, so a crash leaves the old line or the new one. */
static int claim_write(idm_leased *lg, const char *line, size_t len)
{
    char path[IDM_LEASED_DIR_MAX + 64], tmp[IDM_LEASED_DIR_MAX + 72];
    int fd, dfd, rc = 0;
    claim_path(lg, lg->claim_k, "", path, sizeof path);
    claim_path(lg, lg->claim_k, ".tmp", tmp, sizeof tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return idm_error_fail(IDM_EIO, "leased: cannot write claim file %.200s: %s", tmp,
                              strerror(errno));
    if (write(fd, line, len) != (ssize_t)len || fsync(fd) != 0)
        rc = idm_error_fail(IDM_EIO, "leased: cannot write claim file %.200s: %s", tmp,
                            strerror(errno));
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = idm_error_fail(IDM_EIO, "leased: cannot rename %.200s: %s", tmp, strerror(errno));
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    dfd = open(lg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0)
        rc = idm_error_fail(IDM_EIO, "leased: cannot sync directory %.200s: %s", lg->dir,
                            strerror(errno));
    if (dfd >= 0)
        close(dfd);
    return rc;
}

/* The lease's on_renew: keep the renewal in the claim file if this slot
 * is the one written (a slot being replaced is not). */
static int on_renew(void *ctx, const idm_lease_saved *sv)
{
    slot *s = ctx;
    idm_leased *lg = s->lg;
    char line[CLAIM_LINE_MAX];
    int n, rc = 0;
    if (lg->dir == NULL)
        return 0;
    pthread_mutex_lock(&lg->file_mu);
    if (lg->writer == s) {
        n = claim_format(lg, sv, s->state_name, line, sizeof line);
        rc = n < 0 ? idm_error_fail(IDM_EINVAL, "leased: the claim does not fit a claim line")
                   : claim_write(lg, line, (size_t)n);
    }
    pthread_mutex_unlock(&lg->file_mu);
    return rc;
}

static void on_lost(void *ctx)
{
    slot *s = ctx;
    idm_leased *lg = s->lg;
    atomic_fetch_add(&lg->losses, 1);
    pthread_mutex_lock(&lg->mu);
    if (atomic_load(&lg->cur) == s && !lg->want_loss) {
        lg->want_loss = true;
        lg->lost_slot = s;
        lg->switch_start_ns = idm__mono_ns();
        if (lg->o.reclaim)
            lg->switching = true;
        pthread_cond_signal(&lg->cv);
    }
    pthread_mutex_unlock(&lg->mu);
}

/* Take one claim file: the first whose lock is free. Its saved claim, if
 * any and whole, into *sv (returns 1), else 0; -1 with a detail on an
 * error. */
static int claim_take(idm_leased *lg, idm_lease_saved *sv, char *state_name, size_t cap)
{
    char path[IDM_LEASED_DIR_MAX + 64], buf[CLAIM_LINE_MAX], why[160];
    const char *kind;
    for (int k = 0; k < CLAIM_SLOTS; k++) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        ssize_t n;
        int fd;
        claim_path(lg, k, ".lock", path, sizeof path);
        fd = idm__open_regular(path, O_RDWR | O_CREAT, 0600, &kind);
        if (fd < 0)
            return idm_error_fail(IDM_EIO, "leased: claim lock %.200s: %s", path,
                                  kind != NULL ? kind : strerror(errno));
        if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
            int e = errno;
            close(fd);
            if (e == EAGAIN || e == EACCES)
                continue;
            return idm_error_fail(IDM_EIO, "leased: cannot lock %.200s: %s", path, strerror(e));
        }
        lg->claim_k = k;
        lg->claim_fd = fd;
        claim_path(lg, k, "", path, sizeof path);
        n = idm__read_regular(path, buf, sizeof buf, &kind, why, sizeof why);
        if (n < 0 && errno == ENOENT)
            return 0;
        if (n < 0)
            return idm_error_fail(IDM_EIO, "leased: claim file %.200s: %s", path, why);
        return claim_parse(lg, buf, (size_t)n, sv, state_name, cap) == 0 ? 1 : 0;
    }
    return idm_error_fail(IDM_EBUSY, "leased: all %d claim files in %.200s are held by running "
                                     "processes", CLAIM_SLOTS, lg->dir);
}

/* Remove the state files of this coordinator and scope that no claim file
 * names and no generator holds (their lock is free): left by processes
 * whose claims were released, lost or never resumed. */
static void sweep_states(idm_leased *lg, const char *keep)
{
    char prefix[40], path[IDM_LEASED_DIR_MAX + 128];
    char named[CLAIM_SLOTS][96];
    DIR *d;
    struct dirent *e;
    memset(named, 0, sizeof named);
    for (int k = 0; k < CLAIM_SLOTS; k++) {
        char buf[CLAIM_LINE_MAX], why[160];
        const char *kind;
        idm_lease_saved sv;
        ssize_t n;
        claim_path(lg, k, "", path, sizeof path);
        n = idm__read_regular(path, buf, sizeof buf, &kind, why, sizeof why);
        if (n > 0 && claim_parse(lg, buf, (size_t)n, &sv, named[k], sizeof named[k]) != 0)
            named[k][0] = '\0';
    }
    snprintf(prefix, sizeof prefix, "state-%016" PRIx64 "-", lg->key);
    d = opendir(lg->dir);
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        bool is_named = strcmp(e->d_name, keep) == 0;
        int fd;
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || len < 7 ||
            strcmp(e->d_name + len - 6, ".state") != 0)
            continue;
        for (int k = 0; k < CLAIM_SLOTS && !is_named; k++)
            is_named = strcmp(named[k], e->d_name) == 0;
        if (is_named)
            continue;
        snprintf(path, sizeof path, "%s/%s.lock", lg->dir, e->d_name);
        fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
            snprintf(path, sizeof path, "%s/%s", lg->dir, e->d_name);
            unlink(path);
            snprintf(path, sizeof path, "%s/%s.tmp", lg->dir, e->d_name);
            unlink(path);
            snprintf(path, sizeof path, "%s/%s.lock", lg->dir, e->d_name);
            unlink(path);
        }
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
}

/* ---- slots */

/* The lease options of a new slot s. */
static idm_lease_opts slot_lease_opts(idm_leased *lg, slot *s)
{
    idm_lease_opts lo = lg->lo;
    lo.on_renew = on_renew;
    lo.on_lost = on_lost;
    lo.hook_ctx = s;
    lo.on_claim = NULL;
    return lo;
}

static slot *slot_new(idm_leased *lg)
{
    slot *s = calloc(1, sizeof *s);
    if (s != NULL)
        s->lg = lg;
    return s;
}

/* Whether this process held worker id w before (a retired slot's generator
 * may still have threads in it, and its state file is held). */
static bool held_before(idm_leased *lg, uint32_t w)
{
    bool found = false;
    pthread_mutex_lock(&lg->mu);
    for (slot *s = lg->all; s != NULL && !found; s = s->next)
        found = s->worker == w;
    pthread_mutex_unlock(&lg->mu);
    return found;
}

/* The node values of worker id w: split over the leased fields, the last
 * taking the low digits. */
static void set_nodes(const idm_leased *lg, idm_snowflake_opts *o, uint32_t w)
{
    uint64_t rest = w;
    for (unsigned i = lg->nfields; i-- > 0;) {
        o->node[lg->field[i]] = rest % lg->radix[i];
        o->node_set |= UINT32_C(1) << lg->field[i];
        rest /= lg->radix[i];
    }
}

/* Open s's generator for its worker id above mark (-1: none), its state
 * file fresh (a new claim) or required (a resumed one), and attach s's
 * lease. A state file ahead of the clock (a resumed claim's, at most its
 * lookahead) is waited out. */
static int slot_start(idm_leased *lg, slot *s, idm_unix_ms mark, bool resumed)
{
    idm_snowflake_opts o = lg->go;
    char path[IDM_LEASED_DIR_MAX + 128];
    int64_t waited = 0, bound = o.state_lookahead_ms + IDM_LEASE_MARK_SLACK_MS;
    int rc;
    set_nodes(lg, &o, s->worker);
    o.guarded = true;
    if (mark > o.after_ms)
        o.after_ms = mark;
    if (lg->dir != NULL) {
        if (!resumed && lg->o.state_name != NULL) {
            /* The caller's file for these node values (one another kind of
             * run also keeps): its lock and its mark are shared. */
            rc = lg->o.state_name(lg->o.event_ctx, &o, s->state_name, sizeof s->state_name);
            if (rc == 0 && (s->state_name[0] == '\0' || strchr(s->state_name, '/') != NULL ||
                            strchr(s->state_name, ' ') != NULL || s->state_name[0] == '.'))
                rc = idm_error_fail(IDM_EINVAL, "leased: state file name '%.60s' is not a "
                                                "plain file name",
                                    s->state_name);
            if (rc != 0)
                return rc;
        } else if (!resumed) {
            snprintf(s->state_name, sizeof s->state_name,
                     "state-%016" PRIx64 "-w%u-%ld-%u.state", lg->key, (unsigned)s->worker,
                     (long)getpid(), lg->state_serial++);
        }
        snprintf(path, sizeof path, "%s/%s", lg->dir, s->state_name);
        o.state_path = path;
        /* A new claim's own file is new; a caller's may hold a mark, and a
         * damaged one is refused rather than read as none. */
        o.state_fresh = !resumed && (lg->o.state_name == NULL || access(path, F_OK) != 0);
    }
    if (resumed) {
        /* The state file's mark (what the process before the restart may
         * have minted, at most a lookahead ahead) is waited out, never run
         * ahead of on logical time: a probe that refuses any step back
         * opens once the clock is past it. */
        idm_snowflake_opts probe = o;
        probe.backwards = IDM_BACKWARDS_REFUSE;
        for (;;) {
            rc = idm_snowflake_open(&s->gen, &probe);
            if (rc != IDM_ECLOCKBACK || waited >= bound)
                break;
            lg->clock->sleep_ns(lg->clock->ctx, 10 * NS_PER_MS);
            waited += 10;
        }
        if (rc != 0)
            return rc;
        (void)idm_snowflake_close(s->gen);
        s->gen = NULL;
    }
    /* A caller's file may be held a moment by another run of its own. */
    while ((rc = idm_snowflake_open(&s->gen, &o)) == IDM_EBUSY && lg->o.state_name != NULL &&
           waited < 2000) {
        lg->clock->sleep_ns(lg->clock->ctx, 20 * NS_PER_MS);
        waited += 20;
    }
    if (rc != 0)
        return rc;
    rc = idm_lease_attach(s->lease, s->gen);
    if (rc != 0) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        idm_snowflake_close(s->gen);
        s->gen = NULL;
        return idm_error_fail(rc, "%s", detail);
    }
    return 0;
}

/* The most claims held at once while looking for a usable worker id. */
#define CLAIMS_HELD_MAX 64

/* Claim a worker id for reason: one whose mark is behind the clock and that
 * this process never held, among at most max_tries claims of ids it never
 * held (the others held meanwhile, then released untouched). The ids it
 * held before do not count: coordinators hand out the lowest free id, and
 * after many losses those come first at every re-claim; counted, they would
 * use up the tries and the process would never mint again (the fault suite
 * found that). At most CLAIMS_HELD_MAX claims in all. For a change none
 * such is a failure (IDM_ECLOCKBACK); otherwise the one with the lowest
 * mark is kept and its mark waited out. The slot's lease is open on
 * success, its mark in *mark. */
static int claim_usable(idm_leased *lg, slot *s, enum reason why, idm_unix_ms *mark)
{
    idm_lease *held[CLAIMS_HELD_MAX];
    unsigned nheld = 0, tries = lg->o.max_tries != 0 ? lg->o.max_tries : 8;
    idm_lease *pick = NULL;
    idm_lease_opts lo = slot_lease_opts(lg, s);
    int rc = 0;
    for (unsigned t = 0; t < tries && nheld < CLAIMS_HELD_MAX;) {
        idm_lease *l;
        bool before;
        rc = idm_lease_open(&l, &lo);
        if (rc != 0)
            break;
        /* A first claim takes the id the coordinator hands out, as a
         * plain claim does, and waits out its mark below; a switch wants
         * one it can mint under at once. */
        before = why != R_FIRST && held_before(lg, idm_lease_worker(l));
        if (why == R_FIRST || (idm_lease_mark(l) < now_ms(lg) && !before)) {
            pick = l;
            break;
        }
        held[nheld++] = l;
        if (!before)
            t++;
    }
    if (pick == NULL && why != R_CHANGE && nheld > 0 && rc != IDM_EINVAL) {
        /* None behind the clock: the lowest mark, waited out, as a plain
         * claim would (an id this process held is never taken again). */
        unsigned best = nheld;
        for (unsigned i = 0; i < nheld; i++)
            if (!held_before(lg, idm_lease_worker(held[i])) &&
                (best == nheld || idm_lease_mark(held[i]) < idm_lease_mark(held[best])))
                best = i;
        if (best < nheld) {
            pick = held[best];
            held[best] = held[--nheld];
            rc = idm_lease_wait_mark(pick, lg->clock, 0);
            if (rc != 0) {
                held[nheld++] = pick;
                pick = NULL;
            }
        }
    }
    /* Ids were free but none usable (their marks ahead of the clock): that,
     * not the "no free worker id" the last try met, is why. */
    if (pick == NULL && nheld > 0 && rc == IDM_EBUSY)
        rc = 0;
    if (pick == NULL && rc == 0)
        rc = why == R_CHANGE
                 ? idm_error_fail(IDM_ECLOCKBACK,
                                  "leased: no free worker id with a mark behind the clock "
                                  "among %u claimed",
                                  nheld)
                 : idm_error_fail(IDM_EBUSY, "leased: no worker id usable among %u claimed",
                                  nheld);
    {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        for (unsigned i = 0; i < nheld; i++)
            (void)idm_lease_close(held[i]);
        if (rc != 0)
            return idm_error_fail(rc, "%s", detail);
    }
    if (why == R_FIRST && lg->o.lease.on_claim != NULL) {
        idm_unix_ms m = idm_lease_mark(pick), now = now_ms(lg);
        lg->o.lease.on_claim(lg->o.lease.on_claim_ctx, idm_lease_worker(pick), m,
                             m >= now ? m - now + 1 : 0);
    }
    if (why == R_FIRST && (rc = idm_lease_wait_mark(pick, lg->clock, 0)) != 0) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        (void)idm_lease_close(pick);
        return idm_error_fail(rc, "%s", detail);
    }
    s->lease = pick;
    s->worker = idm_lease_worker(pick);
    *mark = idm_lease_mark(pick);
    return 0;
}

/* Make s the slot whose renewals are written; returns the previous one. */
static slot *set_writer(idm_leased *lg, slot *s)
{
    slot *prev;
    pthread_mutex_lock(&lg->file_mu);
    prev = lg->writer;
    lg->writer = s;
    pthread_mutex_unlock(&lg->file_mu);
    return prev;
}

static void slot_add(idm_leased *lg, slot *s)
{
    pthread_mutex_lock(&lg->mu);
    s->next = lg->all;
    lg->all = s;
    pthread_mutex_unlock(&lg->mu);
}

/* A new slot for why, started and current; the old one's lease closed. */
static int switch_to_new(idm_leased *lg, enum reason why)
{
    slot *s = slot_new(lg), *old = atomic_load(&lg->cur), *prev_writer;
    idm_unix_ms mark = 0;
    int rc;
    if (s == NULL)
        return IDM_ENOMEM;
    rc = claim_usable(lg, s, why, &mark);
    if (rc != 0) {
        free(s);
        return rc;
    }
    prev_writer = set_writer(lg, s);
    rc = slot_start(lg, s, mark, false);
    if (rc != 0) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        set_writer(lg, prev_writer);
        (void)idm_lease_close(s->lease);
        free(s);
        return idm_error_fail(rc, "%s", detail);
    }
    slot_add(lg, s);
    /* Counted before it is current: whoever sees the new worker id sees
     * the switch counted. */
    if (why != R_FIRST) {
        atomic_store(&lg->last_switch_ns, idm__mono_ns() - lg->switch_start_ns);
        atomic_fetch_add(&lg->reclaims, 1);
        if (why == R_CHANGE)
            atomic_fetch_add(&lg->changes, 1);
    }
    atomic_store(&lg->cur, s);
    if (old != NULL && old->lease != NULL) {
        /* Released with its exact final mark (a lost one is not released:
         * the coordinator already let it go). Taken out under mu, which
         * idm_leased_status_get reads it under. */
        idm_lease *ol;
        int crc;
        pthread_mutex_lock(&lg->mu);
        ol = old->lease;
        old->lease = NULL;
        pthread_mutex_unlock(&lg->mu);
        crc = idm_lease_close(ol);
        if (crc != 0 && crc != IDM_ELEASE)
            event(lg, "worker id %u: release failed: %s", (unsigned)old->worker,
                  idm_error_detail());
    }
    return 0;
}

/* ---- the supervisor */

static void switch_done(idm_leased *lg, enum reason why, slot *old, int rc)
{
    char detail[256];
    snprintf(detail, sizeof detail, "%s", rc != 0 ? idm_error_detail() : "");
    pthread_mutex_lock(&lg->mu);
    lg->switching = false;
    lg->switches_done++;
    if (rc != 0) {
        lg->last_error = rc;
        snprintf(lg->last_detail, sizeof lg->last_detail, "%s", detail);
    }
    pthread_cond_broadcast(&lg->done_cv);
    pthread_mutex_unlock(&lg->mu);
    if (rc == 0) {
        slot *s = atomic_load(&lg->cur);
        int64_t took = atomic_load(&lg->last_switch_ns);
        event(lg, "%s: worker id %u -> %u in %lld ms (%llu re-claims so far)",
              why == R_CHANGE ? "clock stepped back; changed worker id" : "re-claimed after a loss",
              old != NULL ? (unsigned)old->worker : 0u, (unsigned)s->worker,
              (long long)(took / NS_PER_MS), (unsigned long long)atomic_load(&lg->reclaims));
    } else {
        atomic_fetch_add(&lg->switch_failures, 1);
        event(lg, "%s failed: %s", why == R_CHANGE ? "worker id change" : "re-claim", detail);
    }
}

static void *supervisor(void *arg)
{
    idm_leased *lg = arg;
    pthread_mutex_lock(&lg->mu);
    while (!lg->stop) {
        int64_t now = idm__mono_ns();
        enum reason why;
        slot *old;
        int rc;
        if (lg->want_loss && lg->o.reclaim && now >= lg->retry_at_ns) {
            why = R_LOSS;
        } else if (lg->want_change && !lg->want_loss) {
            why = R_CHANGE;
        } else {
            int64_t until = lg->want_loss && lg->o.reclaim ? lg->retry_at_ns
                                                           : now + INT64_C(3600) * 1000000000;
            struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
            pthread_cond_timedwait(&lg->cv, &lg->mu, &ts);
            continue;
        }
        lg->switching = true;
        old = atomic_load(&lg->cur);
        pthread_mutex_unlock(&lg->mu);
        if (why == R_LOSS)
            event(lg, "worker id %u: the coordinator says the claim is gone; re-claiming",
                  old != NULL ? (unsigned)old->worker : 0u);
        rc = switch_to_new(lg, why);
        switch_done(lg, why, old, rc);
        pthread_mutex_lock(&lg->mu);
        if (why == R_LOSS) {
            if (rc == 0)
                lg->want_loss = false;
            else
                lg->retry_at_ns = idm__mono_ns() + lg->lo.ttl_ms * NS_PER_MS / 10;
        } else {
            lg->want_change = false;
            if (rc != 0)
                lg->change_after_ns = idm__mono_ns() + lg->lo.ttl_ms * NS_PER_MS / 3;
        }
    }
    pthread_mutex_unlock(&lg->mu);
    return NULL;
}

/* Ask the supervisor for a worker change away from s (refused for the
 * clock), unless one is under way, s is no longer current, or the last
 * try failed less than ttl/3 ago. Called with mu held. */
static void want_change_locked(idm_leased *lg, slot *s)
{
    if (atomic_load(&lg->cur) != s || lg->want_change || lg->switching ||
        idm__mono_ns() < lg->change_after_ns)
        return;
    lg->want_change = true;
    lg->switching = true;
    lg->switch_start_ns = idm__mono_ns();
    pthread_cond_signal(&lg->cv);
}

/* A mint on s met rc: start a change for a clock step (change-worker), and
 * wait for a switch in progress. true: try again on the new slot. A loss
 * counts as a switch in progress from the moment the lease marks itself
 * lost, which is before its guard refuses mints and before on_lost sets
 * switching: a mint refused in between waits for the re-claim too. */
static bool after_refusal(idm_leased *lg, slot *s, int rc)
{
    bool retry = false, lost = false;
    int64_t wait_ms = lg->o.switch_wait_ms >= 0 ? lg->o.switch_wait_ms : lg->lo.ttl_ms / 2;
    if (rc != IDM_ELEASE && !(rc == IDM_ECLOCKBACK && lg->change_worker))
        return false;
    pthread_mutex_lock(&lg->mu);
    if (rc == IDM_ECLOCKBACK && lg->change_worker)
        want_change_locked(lg, s);
    if (rc == IDM_ELEASE && lg->o.reclaim && s->lease != NULL) {
        idm_lease_status ls;
        idm_lease_status_get(s->lease, &ls);
        lost = ls.lost;
    }
    if ((lg->switching || lost) && atomic_load(&lg->cur) == s && wait_ms > 0) {
        uint64_t seen = lg->switches_done;
        int64_t until = idm__mono_ns() + wait_ms * NS_PER_MS;
        struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        while (lg->switches_done == seen && !lg->stop &&
               pthread_cond_timedwait(&lg->done_cv, &lg->mu, &ts) != ETIMEDOUT)
            ;
    }
    retry = atomic_load(&lg->cur) != s;
    pthread_mutex_unlock(&lg->mu);
    return retry;
}

int idm_leased_next(idm_leased *lg, uint64_t *id)
{
    for (int i = 0;; i++) {
        slot *s = atomic_load_explicit(&lg->cur, memory_order_acquire);
        int rc = idm_snowflake_next(s->gen, id);
        if (__builtin_expect(rc == 0, 1) || i == 2 || !after_refusal(lg, s, rc))
            return rc;
    }
}

int idm_leased_next_batch(idm_leased *lg, uint64_t *ids, size_t n)
{
    for (int i = 0;; i++) {
        slot *s = atomic_load_explicit(&lg->cur, memory_order_acquire);
        int rc = idm_snowflake_next_batch(s->gen, ids, n);
        if (rc == 0 || i == 2 || !after_refusal(lg, s, rc))
            return rc;
    }
}

int idm_leased_check(idm_leased *lg)
{
    slot *s = atomic_load_explicit(&lg->cur, memory_order_acquire);
    int rc = idm_snowflake_check(s->gen);
    if (rc == IDM_ECLOCKBACK && lg->change_worker) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        pthread_mutex_lock(&lg->mu);
        want_change_locked(lg, s);
        pthread_mutex_unlock(&lg->mu);
        return idm_error_fail(rc, "%s", detail);
    }
    return rc;
}

const idm_layout *idm_leased_layout(const idm_leased *lg)
{
    return lg->layout;
}

void idm_leased_status_get(idm_leased *lg, idm_leased_status *out)
{
    slot *s = atomic_load(&lg->cur);
    bool has_lease;
    memset(out, 0, sizeof *out);
    out->worker = s->worker;
    if (lg->pid != getpid()) {
        /* A forked child: mu may have been held at fork; it mints nothing. */
        out->last_error = IDM_EFORKED;
        snprintf(out->last_detail, sizeof out->last_detail,
                 "leased: opened in the parent process; a forked child must open its own");
        return;
    }
    /* A switch takes the old slot's lease out under mu. */
    pthread_mutex_lock(&lg->mu);
    has_lease = s->lease != NULL;
    if (has_lease)
        idm_lease_status_get(s->lease, &out->lease);
    out->minting = !lg->switching && !(lg->want_loss && lg->o.reclaim);
    out->last_error = lg->last_error;
    snprintf(out->last_detail, sizeof out->last_detail, "%s", lg->last_detail);
    pthread_mutex_unlock(&lg->mu);
    /* How the current claim was made: a switch makes a new claim; a
     * resumed claim the coordinator has since confirmed is reattached. */
    out->origin = atomic_load(&lg->reclaims) > 0 ? IDM_LEASED_CLAIMED : lg->origin;
    if (out->origin == IDM_LEASED_OFFLINE && has_lease && !out->lease.offline)
        out->origin = IDM_LEASED_REATTACHED;
    out->reclaims = atomic_load(&lg->reclaims);
    out->losses = atomic_load(&lg->losses);
    out->changes = atomic_load(&lg->changes);
    out->switch_failures = atomic_load(&lg->switch_failures);
    out->last_switch_ns = atomic_load(&lg->last_switch_ns);
    if (out->lease.lost)
        out->minting = false;
}

void idm_leased_stats_get(idm_leased *lg, idm_snowflake_stats *out)
{
    idm_snowflake_stats_get(atomic_load(&lg->cur)->gen, out);
}

/* ---- open and close */

/* Free everything; the state files of the slots are removed but keep's
 * (NULL: none), which a claim file left for a restart names. */
/* The claim descriptor and the memory left once the slots are gone. */
static void leased_free_rest(idm_leased *lg)
{
    if (lg->claim_fd >= 0)
        close(lg->claim_fd);
    idm_layout_free(lg->layout);
    free(lg->url);
    free(lg->holder);
    free(lg->boot_file);
    free(lg->dir);
    free(lg);
}

static void leased_free_keep(idm_leased *lg, const slot *keep)
{
    slot *s = lg->all;
    while (s != NULL) {
        slot *next = s->next;
        if (s->lease != NULL)
            (void)idm_lease_close(s->lease);
        idm_snowflake_close(s->gen);
        /* Only the files named here (state-...): a caller's are its own. */
        if (lg->dir != NULL && s != keep && strncmp(s->state_name, "state-", 6) == 0) {
            char path[IDM_LEASED_DIR_MAX + 128];
            static const char *const ends[] = {"", ".tmp", ".lock"};
            for (size_t i = 0; i < 3; i++) {
                snprintf(path, sizeof path, "%s/%s%s", lg->dir, s->state_name, ends[i]);
                unlink(path);
            }
        }
        free(s);
        s = next;
    }
    pthread_cond_destroy(&lg->cv);
    pthread_cond_destroy(&lg->done_cv);
    pthread_mutex_destroy(&lg->mu);
    pthread_mutex_destroy(&lg->file_mu);
    leased_free_rest(lg);
}

/* On a failed open: nothing of ours is in the claim file yet but a resumed
 * claim's state file, which stays for the next try (kept unless the slot is
 * in the list: a slot is listed only once it started). */
static void leased_free(idm_leased *lg)
{
    leased_free_keep(lg, atomic_load(&lg->cur));
}

/* The leased fields, "worker" or "datacenter+worker": node fields of l,
 * each once, in layout order; the scope (idm_lease_scope's form, the names
 * joined by '+') and how many worker ids they span (*span). */
static int parse_fields(idm_leased *lg, const idm_layout *l, const char *spec, uint64_t *span)
{
    char names[256], *save = NULL, *tok;
    char text[IDM_LAYOUT_TEXT_MAX];
    int last = -1, n;
    if (strlen(spec) >= sizeof names || spec[0] == '\0')
        return idm_error_fail(IDM_EINVAL, "leased: bad field list '%.60s'", spec);
    snprintf(names, sizeof names, "%s", spec);
    *span = 1;
    lg->nfields = 0;
    for (tok = strtok_r(names, "+", &save); tok != NULL; tok = strtok_r(NULL, "+", &save)) {
        char one[IDM_LEASE_SCOPE_MAX];
        idm_field_info f;
        int idx;
        int rc = idm_lease_scope(l, tok, one, sizeof one); /* a node field of l */
        if (rc != 0)
            return rc;
        idx = idm_layout_field_index(l, tok);
        if (idx <= last || lg->nfields >= IDM_LAYOUT_MAX_FIELDS ||
            idm_layout_field(l, (size_t)idx, &f) != 0)
            return idm_error_fail(IDM_EINVAL, "leased: the fields '%.60s' must each be named "
                                              "once, in the layout's order", spec);
        last = idx;
        lg->field[lg->nfields] = idx;
        lg->radix[lg->nfields] = f.max + 1;
        lg->nfields++;
        *span = f.max + 1 > IDM_LEASE_WORKERS_MAX || *span * (f.max + 1) > IDM_LEASE_WORKERS_MAX
                    ? IDM_LEASE_WORKERS_MAX + 1
                    : *span * (f.max + 1);
    }
    if (lg->nfields == 0)
        return idm_error_fail(IDM_EINVAL, "leased: bad field list '%.60s'", spec);
    if (lg->nfields > 1 && *span > IDM_LEASE_WORKERS_MAX)
        return idm_error_fail(IDM_EINVAL, "leased: the fields '%.60s' span more than %u worker "
                                          "ids", spec, (unsigned)IDM_LEASE_WORKERS_MAX);
    if (lg->nfields == 1)
        return idm_lease_scope(l, spec, lg->scope, sizeof lg->scope);
    if (idm_layout_format(l, text, sizeof text) != 0)
        return idm_error_fail(IDM_EINVAL, "leased: the layout has no text form");
    n = snprintf(lg->scope, sizeof lg->scope, "%s of %s epoch %lld", spec, text,
                 (long long)idm_layout_epoch(l));
    if (n < 0 || (size_t)n >= sizeof lg->scope)
        return idm_error_fail(IDM_EINVAL, "leased: the scope of '%.60s' is too long", spec);
    return 0;
}

/* The checks idm_lease_start makes before anything is claimed: the field,
 * the generator's settings (opened and closed with worker id 0). */
static int check_opts(idm_leased *lg, const idm_leased_opts *opts)
{
    idm_snowflake_opts o;
    idm_snowflake *g = NULL;
    uint64_t span = 1;
    int rc;
    if (opts->field == NULL || opts->gen.layout == NULL || opts->lease.url == NULL)
        return idm_error_fail(IDM_EINVAL, "leased: needs a lease URL, a layout and a field");
    if (opts->state_dir != NULL &&
        (opts->state_dir[0] != '/' || strlen(opts->state_dir) >= IDM_LEASED_DIR_MAX))
        return idm_error_fail(IDM_EINVAL, "leased: the state directory must be an absolute path "
                                          "under %d bytes", IDM_LEASED_DIR_MAX);
    rc = parse_fields(lg, opts->gen.layout, opts->field, &span);
    if (rc != 0)
        return rc;
    o = opts->gen;
    lg->change_worker = o.backwards == IDM_BACKWARDS_CHANGE_WORKER;
    if (lg->change_worker)
        o.backwards = IDM_BACKWARDS_LOGICAL;
    set_nodes(lg, &o, 0);
    o.state_path = NULL;
    rc = idm_snowflake_open(&g, &o);
    if (rc != 0)
        return rc;
    (void)idm_snowflake_close(g);
    lg->go = o;
    lg->lo = opts->lease;
    lg->lo.max_workers = span >= IDM_LEASE_WORKERS_MAX ? IDM_LEASE_WORKERS_MAX : (uint32_t)span;
    lg->lo.clock = opts->gen.clock;
    return 0;
}

/* Resume the saved claim sv into a first slot; 0, or an error (then
 * nothing is held and a new claim follows). */
static int resume(idm_leased *lg, const idm_lease_saved *sv, const char *state_name)
{
    slot *s = slot_new(lg);
    idm_lease_opts lo;
    bool offline = false;
    int rc;
    if (s == NULL)
        return IDM_ENOMEM;
    if (state_name[0] == '\0') {
        free(s);
        return idm_error_fail(IDM_ENOENT, "leased: the saved claim names no state file");
    }
    lo = slot_lease_opts(lg, s);
    rc = idm_lease_resume(&s->lease, &lo, sv, &offline);
    if (rc != 0) {
        free(s);
        return rc;
    }
    s->worker = sv->worker;
    snprintf(s->state_name, sizeof s->state_name, "%s", state_name);
    set_writer(lg, s);
    rc = slot_start(lg, s, -1, true);
    if (rc != 0) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        set_writer(lg, NULL);
        (void)idm_lease_close(s->lease);
        free(s);
        return idm_error_fail(rc, "%s", detail);
    }
    lg->origin = offline ? IDM_LEASED_OFFLINE : IDM_LEASED_REATTACHED;
    slot_add(lg, s);
    atomic_store(&lg->cur, s);
    return 0;
}

int idm_leased_open(idm_leased **out, const idm_leased_opts *opts)
{
    idm_leased *lg;
    idm_lease_saved sv;
    char state_name[96] = "", *keybuf;
    int rc, saved = 0;

    if (out == NULL || opts == NULL)
        return idm_error_fail(IDM_EINVAL, "leased: no options");
    *out = NULL;
    lg = calloc(1, sizeof *lg);
    if (lg == NULL)
        return IDM_ENOMEM;
    lg->claim_fd = -1;
    lg->claim_k = -1;
    lg->pid = getpid();
    pthread_mutex_init(&lg->mu, NULL);
    pthread_mutex_init(&lg->file_mu, NULL);
    idm__cond_init_mono(&lg->cv);
    idm__cond_init_mono(&lg->done_cv);
    lg->o = *opts;
    rc = check_opts(lg, opts);
    if (rc == 0)
        rc = idm_layout_dup(&lg->layout, opts->gen.layout);
    if (rc != 0) {
        char detail[256];
        snprintf(detail, sizeof detail, "%s", idm_error_detail());
        leased_free(lg);
        return idm_error_fail(rc, "%s", detail);
    }
    lg->go.layout = lg->layout;
    lg->clock = opts->gen.clock != NULL ? opts->gen.clock : idm_clock_system();
    lg->url = strdup(opts->lease.url);
    lg->holder = opts->lease.holder != NULL ? strdup(opts->lease.holder) : NULL;
    lg->boot_file = opts->lease.boot_id_file != NULL ? strdup(opts->lease.boot_id_file) : NULL;
    lg->dir = opts->state_dir != NULL ? strdup(opts->state_dir) : NULL;
    if (lg->url == NULL || (opts->lease.holder != NULL && lg->holder == NULL) ||
        (opts->lease.boot_id_file != NULL && lg->boot_file == NULL) ||
        (opts->state_dir != NULL && lg->dir == NULL)) {
        leased_free(lg);
        return IDM_ENOMEM;
    }
    if (opts->lease.scope != NULL)
        snprintf(lg->scope, sizeof lg->scope, "%s", opts->lease.scope);
    lg->lo.url = lg->url;
    lg->lo.holder = lg->holder;
    lg->lo.scope = lg->scope;
    lg->lo.boot_id_file = lg->boot_file;
    lg->o.lease = lg->lo;
    lg->o.gen = lg->go;
    lg->o.state_dir = lg->dir;
    /* The key of the claim files: this coordinator and this scope. */
    keybuf = malloc(strlen(lg->url) + strlen(lg->scope) + 2);
    if (keybuf == NULL) {
        leased_free(lg);
        return IDM_ENOMEM;
    }
    sprintf(keybuf, "%s\n%s", lg->url, lg->scope);
    lg->key = idm__lease_fnv1a(keybuf, strlen(keybuf));
    free(keybuf);

    if (lg->dir != NULL) {
        if (mkdir(lg->dir, 0700) != 0 && errno != EEXIST) {
            rc = idm_error_fail(IDM_EIO, "leased: cannot make the state directory %.200s: %s",
                                lg->dir, strerror(errno));
            leased_free(lg);
            return rc;
        }
        saved = claim_take(lg, &sv, state_name, sizeof state_name);
        if (saved < 0) {
            char detail[256];
            snprintf(detail, sizeof detail, "%s", idm_error_detail());
            leased_free(lg);
            return idm_error_fail(saved, "%s", detail);
        }
        sweep_states(lg, state_name);
    }
    lg->switch_start_ns = idm__mono_ns();
    char why_not[200] = "";
    if (saved == 1) {
        rc = resume(lg, &sv, state_name);
        if (rc != 0)
            snprintf(why_not, sizeof why_not, "%s", idm_error_detail());
        if (rc == 0)
            event(lg, "resumed the saved claim of worker id %u (%s)", (unsigned)sv.worker,
                  lg->origin == IDM_LEASED_OFFLINE
                      ? "the coordinator cannot be reached: minting up to its saved deadline"
                      : "the coordinator confirmed it");
        else
            event(lg, "the saved claim of worker id %u was not resumed: %s; claiming anew",
                  (unsigned)sv.worker, idm_error_detail());
    }
    if (atomic_load(&lg->cur) == NULL) {
        rc = switch_to_new(lg, R_FIRST);
        if (rc != 0) {
            /* Both ways failed: say why the saved claim was not used too
             * (another boot, past its deadline), since that is what a
             * restart with the coordinator down runs into. */
            char detail[256];
            snprintf(detail, sizeof detail, "%s", idm_error_detail());
            leased_free(lg);
            if (why_not[0] != '\0')
                return idm_error_fail(rc, "lease: the saved claim of worker id %u was not "
                                          "resumed (%.100s), and a new claim failed: %.90s",
                                      (unsigned)sv.worker, why_not, detail);
            return idm_error_fail(rc, "%s", detail);
        }
        lg->origin = IDM_LEASED_CLAIMED;
        event(lg, "claimed worker id %u", (unsigned)atomic_load(&lg->cur)->worker);
    }
    if (idm__thread_create(&lg->sup, supervisor, lg) != 0) {
        leased_free(lg);
        return idm_error_fail(IDM_ENOMEM, "leased: cannot start the supervisor thread");
    }
    lg->sup_running = true;
    *out = lg;
    return 0;
}

/* idm_leased_close in a forked child: only the forking thread is here, so
 * the supervisor and the leases' keepers are not, and any of the mutexes
 * and condition variables may have been copied held or waited on: none is
 * locked or destroyed (glibc's condition variable destroy waits for the
 * waiters it counts), their memory is freed with the rest. Each lease and
 * generator frees its child's copy and writes nothing (their own fork
 * checks); closing the child's descriptors of the claim lock and the state
 * files leaves the parent's locks, which belong to the open file
 * descriptions the parent still has. No file is written or removed. The
 * list of slots may miss one a switch was adding at fork (left, never
 * freed). */
static int leased_close_child(idm_leased *lg)
{
    slot *s = lg->all;
    while (s != NULL) {
        slot *next = s->next;
        if (s->lease != NULL)
            (void)idm_lease_close(s->lease);
        (void)idm_snowflake_close(s->gen);
        free(s);
        s = next;
    }
    leased_free_rest(lg);
    return idm_error_fail(IDM_EFORKED, "leased: opened in the parent process, whose worker id "
                                       "and claim it keeps; a forked child must open its own");
}

int idm_leased_close(idm_leased *lg)
{
    slot *cur;
    int rc = 0;
    if (lg == NULL)
        return 0;
    if (lg->pid != getpid())
        return leased_close_child(lg);
    if (lg->sup_running) {
        pthread_mutex_lock(&lg->mu);
        lg->stop = true;
        pthread_cond_broadcast(&lg->cv);
        pthread_cond_broadcast(&lg->done_cv);
        pthread_mutex_unlock(&lg->mu);
        pthread_join(lg->sup, NULL);
    }
    cur = atomic_load(&lg->cur);
    set_writer(lg, NULL);
    bool keep = true;
    if (cur != NULL && cur->lease != NULL) {
        bool lost;
        idm_lease_status st;
        idm_lease_status_get(cur->lease, &st);
        lost = st.lost;
        rc = idm_lease_close(cur->lease);
        cur->lease = NULL;
        /* Released (or lost): nothing left to resume. A claim never
         * confirmed (offline) keeps its file: it stays the coordinator's
         * until its TTL, and a restart may still resume it. */
        if (lg->dir != NULL && lg->claim_k >= 0 && (rc == 0 || lost) && !st.offline) {
            char path[IDM_LEASED_DIR_MAX + 64];
            claim_path(lg, lg->claim_k, "", path, sizeof path);
            unlink(path);
            keep = false;
        }
    }
    leased_free_keep(lg, keep ? cur : NULL);
    return rc;
}
