/* SPDX-License-Identifier: MIT */
/*
 * Worker-id leases (library idmint_lease): a process claims a worker id from
 * a coordinator, and a keeper thread renews the claim and feeds the
 * generator's guard, so the process stops minting before its claim could
 * have expired and never mints above the high-water mark it recorded.
 *
 * Coordinators are chosen by URL:
 *   file:///dir   one lock file per worker id in dir, held with an OFD lock: the
 *                 kernel drops the lock when the process dies, so a crashed
 *                 holder frees its id at once. Each mark is also kept in
 *                 dir/marks/, which removing a lock file does not touch:
 *                 a claimant of an id whose lock file was removed under
 *                 a live holder starts above that holder's mark, and the
 *                 holder's next renewal finds its claim lost. One machine
 *                 only: a directory on a network file system (NFS,
 *                 SMB/CIFS, 9P, FUSE, Ceph, AFS, GFS2, OCFS2, Lustre, ...)
 *                 is refused with IDM_EINVAL.
 *   etcd://host:port[,host:port...]/prefix
 *                 etcd v3 through its HTTP/JSON gateway (libcurl, json-c):
 *                 the taken ids read (and the scope recorded or compared)
 *                 in one transaction, then a lease granted with the TTL,
 *                 worker id N claimed by a transaction that creates
 *                 <prefix>/workers/N bound to it only if absent (the first
 *                 mark recorded in the same transaction, so a claim costs
 *                 3 round trips to the first id at any occupancy; a claim
 *                 refused for its scope, or with every id held, costs 1),
 *                 renewed by keepalive, the mark kept in <prefix>/hwm/N (no
 *                 lease) by transactions guarded on owning the worker key
 *                 that only ever raise it, released by revoking the lease.
 *                 Endpoints are tried in turn on transport errors; every
 *                 answer's cluster id must match the first, or the claim is
 *                 taken as lost. A restarted holder resumes its claim
 *                 (idm_lease_resume) from its handle, "etcd:lease=HEX,
 *                 rev=N,cluster=N", in 2 round trips (3 with
 *                 authentication): a new lease granted, then a
 *                 transaction proving the worker key is still bound to the
 *                 saved lease and unwritten since that revision, which moves
 *                 it to the new lease: a saved claim resumes once, and a
 *                 holder still alive finds its claim lost at its next
 *                 renewal.
 *   etcds://host:port[,host:port...]/prefix[?option=value&...]
 *                 etcd as above over HTTPS, the server's certificate
 *                 verified (its CA and the host name; never a fallback to
 *                 plain HTTP). Options, each optional, others refused:
 *                   cacert=FILE          CA bundle for a private CA
 *                   cert=FILE, key=FILE  a client certificate (mutual TLS;
 *                                        both or neither)
 *                   user=NAME, password-file=FILE
 *                                        etcd authentication (both or
 *                                        neither): the password is read from
 *                                        the file, never from the URL; the
 *                                        token from /v3/auth/authenticate is
 *                                        renewed when etcd says it expired
 *                                        and is never logged (the file is
 *                                        read again at each authentication)
 *                 cacert replaces the system's CAs. etcd 3.4's gateway
 *                 refuses a client certificate that has a Common Name.
 *                 A claim costs one more round trip with authentication
 *                 (the token's), then 3 as over etcd://.
 *   zk://host:port[,host:port...]/prefix
 *                 ZooKeeper (libzookeeper-mt): one session per lease,
 *                 negotiated to the TTL (the TTL granted is the session
 *                 timeout the server grants). Worker id N is the ephemeral
 *                 node <prefix>/workers/N; the free ids come from one
 *                 getChildren; the mark is kept in the persistent node
 *                 <prefix>/hwm/N, raised by versioned setData; the scope in
 *                 <prefix>/scope. A holder stops at the time the server was
 *                 last heard (the send time of the last answered renewal)
 *                 plus the session timeout minus the margin; an expired
 *                 session is a lost claim. Renewals are one multi (the
 *                 worker node's version checked, the mark written); a
 *                 release records the exact final mark and closes the
 *                 session, which removes the worker node at once. The
 *                 first zk:// open turns the C client's own logging off,
 *                 for the whole process.
 *   postgres://... or postgresql://...   (any libpq connection URI)
 *                 PostgreSQL (libpq): the table idmint_workers (in the
 *                 schema the URI's search_path names), created if
 *                 missing, one row
 *                 per worker id with its holder, a generation bumped at
 *                 every claim (idm_lease_generation), the expiry (judged by
 *                 the database's clock_timestamp()) and the mark. Claim,
 *                 renew and release are one statement each; renew and
 *                 release only touch a row whose generation is the claim's.
 *                 Passwords: in ~/.pgpass or passfile=FILE, never needed
 *                 in the URL (one given there is never shown: messages
 *                 mask it).
 *
 * Scope: a coordinator hands out worker ids of one node field of one
 * layout. Two claimants that fill different fields, or use different
 * layouts or epochs, can both be handed "their" id 0 and mint the same ids
 * (datacenter=1 with worker id 0 from one, worker=0 with datacenter id 1
 * from the other). So a claimant says what its worker ids are ids of
 * (opts.scope, built by idm_lease_scope), the first one records that in the
 * coordinator, once and atomically, and every later claimant whose scope
 * differs is refused with IDM_EINVAL before anything changes (no id
 * claimed, no mark moved, on etcd not even a lease granted), with a detail
 * naming both scopes. `idmint next --lease` and idmintd always pass a
 * scope; a claimant without one (opts.scope NULL: library users who know
 * what they do, `idmint lease hold`) is not checked and records nothing.
 * Where the scope lives: dir/scope for file:// (one line, created with
 * link() so that it appears whole or not at all, fsync'd with its
 * directory), <prefix>/scope for etcd:// (created only if absent, in the
 * same transaction that reads the taken ids, and compared again in the
 * claiming transaction). idmint never removes or changes a recorded scope:
 * to reuse a coordinator for another layout, remove it by hand once no
 * holder of the old scope is left.
 *
 * Each lease record keeps its holder's high-water mark: at each renewal the
 * keeper records the highest time the generator may mint before the lease
 * can expire (the renewal's wall time + TTL), and only then lets the
 * generator mint up to it. A new holder reads the mark at claim time and
 * starts above it (idm_lease_mark gives it; pass it as opts.after_ms).
 *
 * After a holder crashed, its mark can be up to a TTL ahead of the clock
 * (it recorded how far it might mint, then died): idm_snowflake_open with
 * after_ms then fails with IDM_ECLOCKBACK under the default policy. Wait
 * until the clock passes idm_lease_mark (at most a TTL, with clocks that
 * agree) and open again, as `idmint next --lease` does. A clean close
 * records the exact last tick, so the next holder need not wait.
 *
 * Use:
 *     char scope[IDM_LEASE_SCOPE_MAX];
 *     idm_lease_scope(layout, "worker", scope, sizeof scope);
 *     lease_opts.scope = scope;                       ids of this field of this layout
 *     idm_lease_open(&lease, &lease_opts);            claims a worker id
 *     opts.node[worker] = idm_lease_worker(lease);    (or idm_snowflake_opts_node)
 *     opts.guarded = true;
 *     opts.after_ms = idm_lease_mark(lease);
 *     idm_snowflake_open(&gen, &opts);
 *     idm_lease_attach(lease, gen);                   first renewal, then the keeper
 *     ... idm_snowflake_next(gen, &id) ...
 *     idm_lease_close(lease);                         stop, record the final mark, release
 *     idm_snowflake_close(gen);
 *
 * Processes: a lease belongs to the process that claimed it. In a forked
 * child, idm_lease_attach fails with IDM_EFORKED and idm_lease_close frees
 * the child's copy without releasing or renewing anything (the parent still
 * holds the id); the generator refuses too (see snowflake.h). Open a
 * generator and claim a worker id in each process.
 *
 * Thread-safety, call by call, on one lease:
 *   idm_lease_worker, _mark, _status_get   any thread, any time, at once.
 *   idm_lease_scope, _open, _list, _scope_recorded   any thread, at once
 *                      (each open claims its own id).
 *   idm_lease_attach   once, by the owner, before any other thread mints on
 *                      the generator it attaches.
 *   idm_lease_close    once, by the owner; other threads may still be in
 *                      idm_snowflake_next / _next_batch on the attached
 *                      generator: close stops them (they fail with
 *                      IDM_ELEASE) and the final mark it records covers every
 *                      id any of them handed out. Do not call
 *                      idm_snowflake_close until those threads have returned.
 *   The keeper thread calls idm_snowflake_guard and _guard_drop, which may run
 *   at the same time as mints.
 */
#ifndef IDMINT_LEASE_H
#define IDMINT_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "clock.h"
#include "export.h"
#include "snowflake.h"

typedef struct idm_lease idm_lease;

/* The limits of a lease's time to live, in ms, that idm_lease_open accepts
 * (IDM_EINVAL outside them) and the CLI and idmintd check their settings
 * against; and its default. */
#define IDM_LEASE_TTL_MIN_MS INT64_C(1000)
#define IDM_LEASE_TTL_MAX_MS INT64_C(3600000)
#define IDM_LEASE_TTL_DEFAULT_MS INT64_C(10000)
/* The most worker ids one coordinator hands out (0 .. this - 1): a node
 * field of 16 bits or more is claimed within the first 65536 ids. */
#define IDM_LEASE_WORKERS_MAX UINT32_C(65536)
/* How much longer than the TTL idm_lease_wait_mark waits by default for the
 * clock to pass a previous holder's mark (a holder that died leaves a mark
 * up to a TTL ahead; clocks of two machines may differ a little more). */
#define IDM_LEASE_MARK_SLACK_MS INT64_C(5000)

/* Room for any scope idm_lease_scope builds (and the longest accepted in
 * opts.scope), with its NUL. */
#define IDM_LEASE_SCOPE_MAX 640

/* Room for a claim's handle (idm_lease_saved.handle) with its NUL, and for
 * a boot id (the 36 characters of /proc/sys/kernel/random/boot_id). */
#define IDM_LEASE_HANDLE_MAX 160
#define IDM_LEASE_BOOT_ID_MAX 40

/*
 * What a holder needs to resume its claim after a restart (idm_lease_resume):
 * given to opts.on_renew at each renewal, before the generator may rely on
 * it, for the caller to keep (a claim file: see <idmint/leased.h>).
 */
typedef struct idm_lease_saved {
    uint32_t worker;
    uint64_t generation;        /* idm_lease_generation */
    char handle[IDM_LEASE_HANDLE_MAX]; /* the coordinator's proof of the claim
                                   (backend.h: etcd's lease id, ZooKeeper's
                                   session, PostgreSQL's generation, file://'s
                                   claim token); "" if it has none */
    idm_unix_ms mark_ms;        /* the mark the coordinator now records */
    int64_t ttl_ms;             /* the TTL granted */
    idm_mono_ns mono_deadline;  /* the guard's deadlines this renewal gives */
    idm_wall_ns wall_deadline;
    char boot_id[IDM_LEASE_BOOT_ID_MAX]; /* the boot mono_deadline belongs to:
                                   a monotonic time means nothing after a
                                   reboot */
} idm_lease_saved;

typedef struct idm_lease_opts {
    const char *url;        /* required: file:///dir, etcd://..., etcds://...,
                               zk://..., postgres://... */
    uint32_t max_workers;   /* ids 0 .. max_workers-1 (at most
                               IDM_LEASE_WORKERS_MAX); default 1024 */
    int64_t ttl_ms;         /* IDM_LEASE_TTL_MIN_MS to _MAX_MS, default
                               IDM_LEASE_TTL_DEFAULT_MS; renewals every
                               ttl/3 */
    int64_t margin_ms;      /* stop minting this long before the lease
                               could expire; default ttl/5, at least 10 ms
                               plus twice the resolution of the clock the
                               guard reads (CLOCK_MONOTONIC_COARSE for the
                               system clock: 10 ms at HZ=100 gives 30 ms) */
    const idm_clock *clock; /* NULL: the system clock; must be the
                               generator's clock */
    const char *holder;     /* written into the record; NULL: host:pid */
    const char *scope;      /* what the worker ids are ids of, from
                               idm_lease_scope (or any printable text of
                               1 to IDM_LEASE_SCOPE_MAX - 1 bytes): the
                               first claimant records it, a claimant with
                               another is refused. NULL: not checked, and
                               nothing recorded */
    /* Called by idm_lease_start (never by idm_lease_open) once the worker
     * id is claimed, before it waits out the previous holder's mark, with
     * on_claim_ctx, the worker id, the mark and how long the wait is to be
     * at the clock's rate (0: no wait): for a note while a long wait runs.
     * NULL: not called. */
    void (*on_claim)(void *ctx, uint32_t worker, idm_unix_ms mark, int64_t wait_ms);
    void *on_claim_ctx;
    /* Called (by attach for the first renewal, then by the keeper thread)
     * after each successful renewal and before the generator may rely on it,
     * with what a restart needs to resume the claim: a caller that keeps it
     * (in a file) writes it here. A nonzero return (an IDM_E... code, with a
     * detail) means it could not be kept: the renewal is then not relied on
     * (the generator stops at the previous deadline, the status reports the
     * error, the keeper tries again). NULL: not called. */
    int (*on_renew)(void *ctx, const idm_lease_saved *saved);
    /* Called once, by the keeper thread, when the coordinator says the claim
     * is gone, after the generator was stopped. NULL: not called. */
    void (*on_lost)(void *ctx);
    void *hook_ctx;             /* the ctx of on_renew and on_lost */
    const char *boot_id_file;   /* NULL: /proc/sys/kernel/random/boot_id;
                                   another file (tests inject a reboot) */
} idm_lease_opts;

/* One worker id's record, as idm_lease_list reports it. */
typedef struct idm_lease_entry {
    uint32_t worker;
    bool held;              /* a live process holds it now */
    idm_unix_ms mark_ms;    /* the last recorded high-water mark, 0 if none */
    char holder[64];        /* the last holder's description */
} idm_lease_entry;

/* Status of a held lease, for health checks. */
typedef struct idm_lease_status {
    uint32_t worker;
    bool lost;              /* the coordinator says the claim is gone */
    uint64_t renewals;      /* successful renewals (a claim that recorded
                               the first mark counts as one) */
    uint64_t failures;      /* failed renewals */
    int last_error;         /* the last renewal's error, 0 if it worked */
    idm_mono_ns deadline;   /* the guard's monotonic deadline */
    idm_unix_ms mark_ms;    /* the mark last recorded */
    int64_t renew_ns;       /* how long the last successful renewal took,
                               from its send to its answer (0 before the
                               first; the claim's mark counts as none) */
    bool offline;           /* a resumed claim the coordinator has not
                               confirmed yet (idm_lease_resume) */
} idm_lease_status;

IDM_EXTERN void idm_lease_opts_init(idm_lease_opts *opts);

/*
 * The scope of worker ids that fill node field `field` of layout l, into
 * buf: "<field> of <layout text> epoch <epoch ms>", e.g.
 *     worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657
 * The layout's canonical text form (idm_layout_format: the tick included),
 * so a preset and its text form with the same epoch give the same scope.
 * IDM_EINVAL with a detail if field is not a node field of l, or if len is
 * below what the scope needs (IDM_LEASE_SCOPE_MAX always suffices); buf is
 * then "" (if len > 0). Thread-safe.
 */
IDM_EXTERN int idm_lease_scope(const idm_layout *l, const char *field, char *buf, size_t len);

/* 0 if url names a coordinator of this build (its scheme known and built
 * in), else IDM_EINVAL with idm_lease_open's detail for it. Connects to
 * nothing and checks nothing past the scheme: for checking settings. */
IDM_EXTERN int idm_lease_url_check(const char *url);

/*
 * Claim a free worker id. IDM_EINVAL (with a detail) for a bad URL or
 * option, a file:// directory on a network file system, or if the
 * coordinator records another scope than opts.scope
 * ("... hands out ids for '<recorded>'; this claimant asks for '<ours>'":
 * nothing was claimed or changed), IDM_EBUSY if every id is held ("no free
 * worker id"), IDM_EIO if the coordinator cannot be used (including a
 * record or scope file that is not a regular file, or cannot be read).
 */
IDM_EXTERN int idm_lease_open(idm_lease **out, const idm_lease_opts *opts);
/*
 * Resume the claim saved (by opts.on_renew) before a restart, for the same
 * coordinator and scope (opts.url, opts.scope: the caller's to match):
 *   - the coordinator confirms the claim is still that one (backend.h's
 *     reattach): 0, *offline false; the claim is renewed at once, and the
 *     lease acts as one idm_lease_open made, with idm_lease_mark 0: there is
 *     no previous holder to wait for, and the caller's own local record
 *     (a generator's state file) covers what it minted itself.
 *   - the coordinator says it is not: IDM_ELEASE with a detail; nothing held.
 *   - the coordinator cannot be reached (any other error), on the same
 *     boot (boot ids equal) with the saved monotonic deadline not yet
 *     passed on opts.clock: 0, *offline true. The lease stands on the saved
 *     claim: idm_lease_attach feeds the generator the saved deadlines and
 *     mark (never more) and starts the keeper, which tries to reattach
 *     every ttl/10 and, once it can, renews as usual; a coordinator that
 *     then says the claim is gone makes it lost. On another boot, or past
 *     the deadline: IDM_ELEASE with a detail naming which, nothing held.
 * IDM_EINVAL for bad options or a saved claim that is not one (worker id out
 * of range, no handle, a backend that cannot reattach).
 */
IDM_EXTERN int idm_lease_resume(idm_lease **out, const idm_lease_opts *opts,
                                const idm_lease_saved *saved, bool *offline);
/* The boot id of this boot from file (NULL: /proc/sys/kernel/random/boot_id)
 * into buf (IDM_LEASE_BOOT_ID_MAX): its first line, printable bytes only.
 * IDM_EIO with a detail if it cannot be read. */
IDM_EXTERN int idm_lease_boot_id(const char *file, char *buf, size_t len);
IDM_EXTERN uint32_t idm_lease_worker(const idm_lease *l);
/* The claim's fencing token: a number that rises at every claim of this
 * worker id by any holder (and at every resume: idm_lease_resume), for a store
 * that must refuse writes of an older holder. postgres://: the row's
 * generation; zk://: the worker node's czxid;
 * etcd:// and etcds://: the worker key's revision as of the claim or the
 * last resume (its create revision for a claim); file://: 0 (the
 * coordinator has none). */
IDM_EXTERN uint64_t idm_lease_generation(const idm_lease *l);
/* The previous holder's high-water mark (0 if none): start above it. */
IDM_EXTERN idm_unix_ms idm_lease_mark(const idm_lease *l);
/*
 * Start feeding g (opened with opts.guarded and the same clock), so that g
 * may mint when this returns 0, then a keeper thread renewing every ttl/3.
 * The claim recorded a first mark: right after idm_lease_open (within
 * ttl/6) that stands as the first renewal and attach sends nothing; later,
 * attach renews first. If a renewal fails, g stops at its deadline; once a renewal
 * works again, g resumes; if the coordinator says the claim is gone, g stops
 * at once and the status reports it lost.
 */
IDM_EXTERN int idm_lease_attach(idm_lease *l, idm_snowflake *g);
IDM_EXTERN void idm_lease_status_get(const idm_lease *l, idm_lease_status *out);
/* Stop the keeper, stop g, record the final mark (the last tick g minted)
 * and release the worker id. Frees l. Returns the release's error, if any:
 * IDM_ELEASE if only then the claim is found gone (a file:// lock file
 * removed), and nothing is recorded, since another holder's mark may be
 * above the final one (the marks recorded before cover every id minted). */
IDM_EXTERN int idm_lease_close(idm_lease *l);

/*
 * Wait, sleeping on clock c (NULL: the system clock), until c's wall clock
 * is past l's previous-holder mark (idm_lease_mark). max_wait_ms <= 0 means
 * the default, the lease's TTL + IDM_LEASE_MARK_SLACK_MS. 0 at once if the
 * mark is already behind; IDM_ECLOCKBACK with a detail naming the mark and
 * how far ahead it still is if the clock has not passed it after
 * max_wait_ms (a damaged record, or a clock far behind the previous
 * holder's), or at once if the mark is further ahead than the wait has
 * left, since at the clock's rate it cannot pass it in time: nothing is
 * minted and the lease is still held.
 */
IDM_EXTERN int idm_lease_wait_mark(const idm_lease *l, const idm_clock *c, int64_t max_wait_ms);

/*
 * Lease to generator in one call, what `idmint next --lease` and idmintd do:
 *   1. check gen_opts (the layout, the other node fields, the clock, the
 *      policies) by opening and closing a generator with worker id 0, so a
 *      bad setting is refused before anything is claimed;
 *   2. claim a worker id for node field `field` of gen_opts->layout
 *      (idm_lease_open with lease_opts, its scope set by idm_lease_scope
 *      unless lease_opts->scope is given, its max_workers the field's range
 *      capped at IDM_LEASE_WORKERS_MAX (lease_opts->max_workers is not
 *      used), its clock gen_opts->clock);
 *   3. wait out the previous holder's mark (idm_lease_wait_mark, default
 *      bound);
 *   4. open the generator with that worker id, guarded, above the mark;
 *   5. attach the lease to it (the first renewal).
 * On success *lease and *gen are set (close the lease, then the generator,
 * as for idm_lease_attach). On failure nothing is held (a claimed id is
 * released), both are NULL, and the error is the failing step's with its
 * detail: IDM_EINVAL for a field that is not a node field of the layout.
 * gen_opts is not changed (a copy gets the worker id).
 */
IDM_EXTERN int idm_lease_start(idm_lease **lease, idm_snowflake **gen,
                               const idm_lease_opts *lease_opts,
                               const idm_snowflake_opts *gen_opts, const char *field);

/* Every worker id that has a record, held or not, into a malloc'd array
 * (free it with free()); for file://, an id with a lock file or a mark in
 * dir/marks, its mark the higher of the two (held is false for an id with
 * only a mark left). The scope is not in it: see idm_lease_scope_recorded. */
IDM_EXTERN int idm_lease_list(const char *url, uint32_t max_workers, idm_lease_entry **entries,
                              size_t *count);

/* The scope the coordinator at url records, into buf ("" if none is
 * recorded yet); non-printable bytes of a scope not written by idmint read
 * as '?'. IDM_EINVAL if len cannot hold it (IDM_LEASE_SCOPE_MAX suffices for
 * any scope idmint records), IDM_EIO if it cannot be read. Changes nothing
 * (but creates a file:// directory that does not exist, as idm_lease_list
 * does). */
IDM_EXTERN int idm_lease_scope_recorded(const char *url, char *buf, size_t len);

#endif /* IDMINT_LEASE_H */
