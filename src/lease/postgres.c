/* SPDX-License-Identifier: MIT */
/*
 * The PostgreSQL lease backend (postgres://... or postgresql://..., any
 * libpq connection URI, passed to libpq whole): one row per worker id in the
 * table idmint_workers, in the schema the session's search_path gives (a URI
 * with options=-csearch_path%3Dname keeps several coordinators in one
 * database):
 *
 *   worker      integer primary key: the worker id, 0 to 65535; the row of
 *               worker -1 holds the scope (below) and nothing else
 *   holder      text: who claimed it last
 *   generation  bigint: bumped at every claim, the fencing token
 *               (idm_lease_generation); renewals and the release touch the
 *               row only while it is the claim's (and the holder's)
 *   expires     timestamptz: NULL or past (by the database's clock) = free
 *   mark        bigint: the high-water mark in Unix ms, only ever raised but
 *               by the release, which records the exact final tick
 *   scope       text: only in the row of worker -1
 *
 * One connection per lease, in autocommit, and one statement (one round
 * trip) per operation:
 *
 *   claim    a CTE that records the scope if none is (INSERT ... ON CONFLICT
 *            DO NOTHING), picks the lowest free id with FOR UPDATE SKIP
 *            LOCKED (a row a racing claimant holds locked is skipped; one it
 *            claimed and committed meanwhile is re-checked and found held:
 *            two claimants never get one id), only if the recorded scope is
 *            the claimant's, and claims it: holder, generation + 1, expiry,
 *            mark = GREATEST(mark, the claim's first mark), returning the
 *            previous mark. The answer also carries the recorded scope (a
 *            refusal changes nothing) and how many rows the id range has:
 *            rows are made when the table is created (one per id below the
 *            creator's max_workers), and a claimant asking for more ids
 *            than have rows makes them (INSERT ... ON CONFLICT DO NOTHING)
 *            and claims again.
 *   renew    UPDATE ... SET expires, mark = GREATEST(mark, $m) WHERE worker,
 *            generation and holder are the claim's: no row is IDM_ELEASE (the
 *            id was claimed by another: never renew someone else's claim).
 *   release  the same guarded UPDATE setting expires to NULL (free at once)
 *            and the exact final mark (the generator has stopped).
 *   reattach (a process restarted within its lease, on a new connection)
 *            the renewal's UPDATE guarded by worker and generation only (the
 *            handle, "<worker>:<generation>"; a restarted process has
 *            another holder name, which the row then takes) and by the row
 *            not having expired, the scope recorded or compared as a claim
 *            does it; no row renewed is IDM_ELEASE, a new claim's business.
 *            It also bumps the generation, as a claim does: a saved claim
 *            resumes once. A second process with the same saved handle (or
 *            the first holder, were it still alive) finds the generation
 *            changed and the claim lost, and a fencing store refuses the
 *            writes of the process that crashed.
 *
 * Time. Expiry is judged by the database's clock_timestamp(), the time the
 * statement runs at, not now(), which is its transaction's start (fault row
 * P7: a statement that waited for a lock would see an expired row as held,
 * and write an expiry older than it meant). The holder's deadline is its own
 * (lease.c: the send time of the renewal on its monotonic clock + TTL -
 * margin), so a database clock that jumps forward (P6) can let another
 * claimant take the row early, never both mint the same ids: the new holder
 * starts above the mark the old one recorded, and the old one's next renewal
 * finds the generation changed, the claim lost.
 *
 * Durability: a claim and a mark are acted on once their commit returns, so
 * each session sets synchronous_commit on (remote_apply kept), whatever the
 * URL or the role says; default_transaction_isolation to read committed
 * (the statements rely on its re-check of a row updated meanwhile); the
 * statement_timeout to the claim's budget; and, on servers 14 and later,
 * client_connection_check_interval (a statement left running by a client
 * that gave up is abandoned within a second) and idle_session_timeout 0
 * (the keeper's connection idles between renewals).
 *
 * Deadlines. libpq runs non-blocking (PQconnectStart/PQconnectPoll,
 * PQsendQueryParams, poll() on its socket), every operation within a budget
 * on CLOCK_MONOTONIC whatever clock the lease is given (claim 2/3 TTL, renew
 * and release TTL/3, at least 1 s and 300 ms), so a hung server or network
 * cannot hang the keeper: past the budget the connection is dropped and the
 * operation fails "unknown, try again". A renewal or release whose
 * connection broke (the server ended the session, a restart) is run again
 * once on a new connection within the same budget: both are idempotent under
 * the generation guard and GREATEST. A claim is not (its answer lost, it may
 * have taken an id, which is then free again after the TTL). Host names are
 * resolved by libpq with getaddrinfo, which blocks: give hostaddr to bound
 * that too.
 *
 * The table is created if missing, under a transaction-level advisory lock
 * (racing creators); a role that may not create it is told to create it or
 * be granted CREATE on the schema. Passwords: libpq reads ~/.pgpass or
 * passfile=; one in the URL works but is never shown (every message masks
 * the URL, and libpq's own words are scrubbed of it).
 *
 * Fork: a forked child's copy (lease.c closes it) closes its copy of the
 * socket and leaks its PGconn: PQfinish would send the server a Terminate
 * message on the parent's session and end it.
 *
 * What it does not do: fail over between servers by itself (a multi-host URL
 * with target_session_attrs=read-write is libpq's), or protect against rows
 * deleted or changed by hand while holders live.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "backend.h"
#include "common.h"
#include "postgres_internal.h"
#include "pq.h"

#define TABLE "idmint_workers"
#define MAX_URL 4096
#define INT4OID 23
#define INT8OID 20
#define TEXTOID 25
/* Serialises the table's creation between claimants opening at once
 * ("idmintwk" in ASCII). */
#define CREATE_LOCK "7594315171245619051"
/* Claims run again after a scope recorded meanwhile by a racing claimant
 * (its row not yet in the statement's snapshot) or after making rows. */
#define CLAIM_PASSES 3

static _Atomic uint64_t g_connects, g_round_trips;

uint64_t idm__lease_pg_connects(void)
{
    return atomic_load(&g_connects);
}

uint64_t idm__lease_pg_round_trips(void)
{
    return atomic_load(&g_round_trips);
}

typedef struct pg_be {
    idm__pq pq;         /* the connection, the operation's deadline */
    bool have_table;    /* the setup found the table */
    pid_t pid;          /* the process that opened it */
    int64_t budget_ms;  /* the operation's budget, for messages */
    int64_t claim_budget_ms;
    int64_t renew_budget_ms;
    char url[160];      /* for messages: masked */
    /* the claim */
    bool held;
    uint32_t worker;
    int64_t generation;
    int64_t ttl_ms;
    char holder[64];
} pg_be;

/* -------------------------------------------------------------- helpers */

/* libpq's words msg on one line, the URL's passwords as "***". */
static void pg_line(const pg_be *p, const char *msg, char *out, size_t cap)
{
    idm__text_line(msg, p != NULL ? p->pq.conninfo : NULL, out, cap);
}

static int garbage(const pg_be *p, const char *what, const char *why)
{
    return idm_error_fail(IDM_EIO, "lease: postgres %s: %s: unexpected answer (%s)", p->url, what,
                          why);
}

/* Field (row, col) as an int64 in lo..hi; NULL allowed if null_ok (then
 * *isnull). */
static int field_i64(const pg_be *p, PGresult *res, int row, int col, int64_t lo, int64_t hi,
                     int64_t *out, bool *isnull, const char *what)
{
    int64_t v;
    if (PQgetisnull(res, row, col)) {
        if (isnull == NULL)
            return garbage(p, what, "NULL");
        *isnull = true;
        *out = 0;
        return 0;
    }
    if (isnull != NULL)
        *isnull = false;
    if (idm__pq_parse_i64(PQgetvalue(res, row, col), &v) != 0 || v < lo || v > hi)
        return garbage(p, what, "a number out of range");
    *out = v;
    return 0;
}

/* ------------------------------------------------------- the connection */

static void begin_op(pg_be *p, int64_t budget_ms)
{
    p->budget_ms = budget_ms;
    idm__pq_begin(&p->pq, budget_ms);
}

/* The operation's budget ran out during what: the connection is dropped,
 * and whatever was sent may or may not have happened. */
static int late(pg_be *p, const char *what)
{
    idm__pq_drop(&p->pq);
    return idm_error_fail(IDM_EIO,
                          "lease: postgres %s: %s: no answer within %lld ms (outcome unknown)",
                          p->url, what, (long long)p->budget_ms);
}

/* A new connection within the operation's budget, non-blocking. */
static int pg_connect(void *be)
{
    pg_be *p = be;
    atomic_fetch_add(&g_connects, 1);
    if (idm__pq_start(&p->pq) != 0)
        return idm_error_fail(IDM_ENOMEM, "lease: postgres %s: out of memory connecting", p->url);
    switch (idm__pq_connect(&p->pq, p->pq.deadline)) {
    case IDM__PQ_CONNECTED:
        return 0;
    case IDM__PQ_LATE:
        return late(p, "cannot connect");
    default:
        return idm_error_fail(IDM_EIO, "lease: postgres %s: cannot connect: %.199s", p->url,
                              p->pq.dropped);
    }
}

/* The server's words for a failed statement: its primary message (not
 * the statement's text that a syntax error quotes), else libpq's. */
static const char *words_of(PGresult *res)
{
    const char *m = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    return m != NULL ? m : res != NULL ? PQresultErrorMessage(res) : NULL;
}

/* A failed statement (res may be NULL) as IDM_EIO with the server's or
 * libpq's words. */
static int pg_fail(pg_be *p, PGresult *res, const char *what)
{
    char msg[200];
    const char *text = words_of(res);
    if (res != NULL && PQresultStatus(res) != PGRES_FATAL_ERROR &&
        PQresultStatus(res) != PGRES_NONFATAL_ERROR)
        return garbage(p, what, PQresStatus(PQresultStatus(res)));
    if (text == NULL || *text == '\0')
        text = p->pq.conn != NULL ? PQerrorMessage(p->pq.conn) : p->pq.dropped;
    pg_line(p, text, msg, sizeof msg);
    return idm_error_fail(IDM_EIO, "lease: postgres %s: %s: %s", p->url, what, msg);
}

/* See session_setup; SETUP_SQL_14 is added on servers 14 and later. */
#define SETUP_SQL                                                                  \
    "SELECT CASE current_setting('synchronous_commit')"                            \
    " WHEN 'remote_apply' THEN 'remote_apply'"                                     \
    " ELSE set_config('synchronous_commit', 'on', false) END,"                     \
    " set_config('default_transaction_isolation', 'read committed', false),"       \
    " set_config('statement_timeout', $1, false),"                                 \
    " to_regclass('" TABLE "') IS NOT NULL"
#define SETUP_SQL_14                                                               \
    " set_config('client_connection_check_interval', '1000', false),"              \
    " set_config('idle_session_timeout', '0', false)"

/*
 * What every session runs first (one round trip): synchronous_commit on
 * (remote_apply kept), read committed, the statement timeout, on servers
 * 14 and later the client check and no idle timeout; and whether the table
 * is there.
 */
static int session_setup(void *be)
{
    static const unsigned types[] = {TEXTOID};
    pg_be *p = be;
    char timeout[24];
    const char *values[] = {timeout};
    bool new_server = PQserverVersion(p->pq.conn) >= 140000, timed_out;
    PGresult *res;
    int rc = 0;
    snprintf(timeout, sizeof timeout, "%lld", (long long)p->claim_budget_ms);
    res = idm__pq_exchange(&p->pq, new_server ? SETUP_SQL "," SETUP_SQL_14 : SETUP_SQL, 1, types,
                           values, &timed_out);
    if (timed_out)
        return late(p, "setting up the session");
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = pg_fail(p, res, "cannot set up the session");
    } else if (PQntuples(res) != 1 || PQnfields(res) < 4) {
        rc = garbage(p, "setting up the session", "shape");
    } else {
        const char *sc = PQgetvalue(res, 0, 0), *t = PQgetvalue(res, 0, 3);
        if (strcmp(sc, "on") != 0 && strcmp(sc, "remote_apply") != 0)
            rc = idm_error_fail(IDM_EIO,
                                "lease: postgres %s: synchronous_commit is '%.20s' after setting "
                                "it on: a claim could be lost in a crash",
                                p->url, sc);
        else if (strcmp(t, "t") != 0 && strcmp(t, "f") != 0)
            rc = garbage(p, "setting up the session", "to_regclass");
        else
            p->have_table = t[0] == 't';
    }
    PQclear(res);
    if (rc != 0) {
        idm__pq_drop(&p->pq);
        return rc;
    }
    p->pq.ready = true;
    return 0;
}

/*
 * Run one statement and return its result if its status is want, else
 * NULL with *rc set. With retry, a statement that failed on a broken
 * connection runs once more on a new one (within the budget): only for
 * statements that may run twice.
 */
static PGresult *run(pg_be *p, const char *sql, int nparams, const unsigned *types,
                     const char *const *values, ExecStatusType want, bool retry,
                     const char *what, int *rc)
{
    PGresult *res;
    switch (idm__pq_run(&p->pq, sql, nparams, types, values, want, retry, &res, rc)) {
    case IDM__PQ_RAN:
        return res;
    case IDM__PQ_NO_SESSION:
        return NULL;
    case IDM__PQ_TIMED_OUT:
        *rc = late(p, what);
        return NULL;
    case IDM__PQ_LOST:
        PQclear(res);
        idm__pq_drop(&p->pq);
        *rc = idm_error_fail(IDM_EIO,
                             "lease: postgres %s: %s: connection lost (outcome unknown): %s",
                             p->url, what, p->pq.dropped);
        return NULL;
    default:
        *rc = pg_fail(p, res, what);
        PQclear(res);
        return NULL;
    }
}

/* ------------------------------------------------------------ the table */

/* Create the table if missing, with a row for each id below max, under an
 * advisory lock held to the end of the (implicit) transaction. */
static int create_table(pg_be *p, uint32_t max)
{
    char sql[1024];
    bool timed_out;
    PGresult *res;
    int rc = 0;
    snprintf(sql, sizeof sql,
             "SELECT pg_advisory_xact_lock(" CREATE_LOCK ");"
             "CREATE TABLE IF NOT EXISTS " TABLE " ("
             " worker integer PRIMARY KEY CHECK (worker BETWEEN -1 AND 65535),"
             " holder text,"
             " generation bigint NOT NULL DEFAULT 0 CHECK (generation >= 0),"
             " expires timestamptz,"
             " mark bigint NOT NULL DEFAULT 0 CHECK (mark >= 0),"
             " scope text);"
             "INSERT INTO " TABLE " (worker) SELECT generate_series(0, %u)"
             " ON CONFLICT DO NOTHING",
             (unsigned)max - 1);
    res = idm__pq_exchange(&p->pq, sql, -1, NULL, NULL, &timed_out);
    if (timed_out)
        return late(p, "creating table " TABLE);
    if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
        p->have_table = true;
    } else if (res != NULL && PQresultErrorField(res, PG_DIAG_SQLSTATE) != NULL &&
               strcmp(PQresultErrorField(res, PG_DIAG_SQLSTATE), "42501") == 0) {
        /* Not allowed: say what would do. */
        char msg[80];
        pg_line(p, words_of(res), msg, sizeof msg);
        rc = idm_error_fail(IDM_EIO,
                            "lease: postgres %.60s: cannot create table " TABLE ": %s (create "
                            "it first, or grant this role CREATE on the schema)",
                            p->url, msg);
    } else {
        rc = pg_fail(p, res, "cannot create table " TABLE);
    }
    PQclear(res);
    return rc;
}

/* Rows for ids up to max - 1 that have none (a table made by hand, or by a
 * claimant of fewer ids). */
static int make_rows(pg_be *p, uint32_t max)
{
    static const unsigned types[] = {INT4OID};
    char s_max[16];
    const char *values[] = {s_max};
    PGresult *res;
    int rc = 0;
    snprintf(s_max, sizeof s_max, "%u", (unsigned)max);
    res = run(p,
              "INSERT INTO " TABLE " (worker) SELECT generate_series(0, $1::integer - 1)"
              " ON CONFLICT DO NOTHING",
              1, types, values, PGRES_COMMAND_OK, true, "cannot add rows to " TABLE, &rc);
    PQclear(res);
    return rc;
}

/* ----------------------------------------------------------------- open */

/* url with connect_timeout (5 s) and fallback_application_name added
 * unless it gives them. */
static int conninfo_of(const char *url, const char *masked, char **out)
{
    size_t len = strlen(url);
    char *s;
    if (len > MAX_URL)
        return idm_error_fail(IDM_EINVAL, "lease: URL '%.60s...' is longer than %d bytes", masked,
                              MAX_URL);
    s = malloc(len + 96);
    if (s == NULL)
        return IDM_ENOMEM;
    snprintf(s, len + 96, "%s%s%sfallback_application_name=" IDM__LEASE_PG_APP, url,
             idm__pq_url_sep(url),
             idm__pq_url_sets(url, "connect_timeout=") ? "" : "connect_timeout=5&");
    *out = s;
    return 0;
}

static void pg_free(void *be)
{
    pg_be *p = be;
    if (p == NULL)
        return;
    if (p->pid != getpid()) {
        /* A forked child's copy: PQfinish would say goodbye on the
         * parent's session, which the server would then end. Close our
         * copy of the socket and leave the rest. */
        if (p->pq.conn != NULL && PQsocket(p->pq.conn) >= 0)
            close(PQsocket(p->pq.conn));
    } else {
        PQfinish(p->pq.conn);
    }
    free(p->pq.conninfo);
    free(p);
}

/* A bad port is the URL's mistake, said before any connection. */
static int check_ports(const PQconninfoOption *info, const char *masked)
{
    int n;
    const char *v = idm__pq_bad_port(info, &n);
    if (v == NULL)
        return 0;
    return idm_error_fail(IDM_EINVAL,
                          "lease: '%.80s' is not a valid PostgreSQL URL: port '%.*s' is not 1 "
                          "to 65535",
                          masked, n, v);
}

static int pg_open(void **be, const char *rest, const idm_lease_opts *opts)
{
    const char *url = opts->url;
    char masked[sizeof ((pg_be *)0)->url], msg[200];
    PQconninfoOption *info;
    pg_be *p;
    int rc;
    (void)rest;
    *be = NULL;
    idm__url_mask(url, masked, sizeof masked);
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return IDM_ENOMEM;
    p->pid = getpid();
    p->pq.round_trips = &g_round_trips;
    p->pq.connect = pg_connect;
    p->pq.setup = session_setup;
    p->pq.owner = p;
    snprintf(p->url, sizeof p->url, "%s", masked);
    if ((rc = conninfo_of(url, masked, &p->pq.conninfo)) != 0) {
        pg_free(p);
        return rc;
    }
    /* A URL libpq cannot parse is the caller's mistake, not an unreachable
     * server: parse it first. */
    info = idm__pq_parse(p->pq.conninfo, msg, sizeof msg);
    if (info == NULL) {
        rc = idm_error_fail(IDM_EINVAL, "lease: '%.80s' is not a valid PostgreSQL URL: %s",
                            masked, msg);
        pg_free(p);
        return rc;
    }
    rc = check_ports(info, masked);
    PQconninfoFree(info);
    if (rc != 0) {
        pg_free(p);
        return rc;
    }
    p->claim_budget_ms = opts->ttl_ms * 2 / 3 > 1000 ? opts->ttl_ms * 2 / 3 : 1000;
    p->renew_budget_ms = opts->ttl_ms / 3 > 300 ? opts->ttl_ms / 3 : 300;
    *be = p;
    return 0;
}

/* ---------------------------------------------------------------- claim */

/* See the top. $1 max_workers, $2 holder, $3 TTL ms, $4 the first mark, $5
 * the scope or NULL. The answer, one row: the recorded scope; the id won
 * (NULL if none), its previous mark, its generation and mark now; if none
 * was won, how many rows the id range has. */
static const char claim_sql[] =
    "WITH sc_new AS ("
    " INSERT INTO " TABLE " (worker, scope) SELECT -1, $5::text WHERE $5::text IS NOT NULL"
    " ON CONFLICT (worker) DO NOTHING RETURNING scope),"
    " sc AS (SELECT coalesce((SELECT scope FROM sc_new),"
    " (SELECT scope FROM " TABLE " WHERE worker = -1)) AS rec),"
    " pick AS ("
    " SELECT w.worker, w.mark FROM " TABLE " w"
    " WHERE w.worker >= 0 AND w.worker < $1::integer"
    " AND (w.expires IS NULL OR w.expires <= clock_timestamp())"
    " AND ($5::text IS NULL OR $5::text = (SELECT rec FROM sc))"
    " ORDER BY w.worker LIMIT 1 FOR UPDATE SKIP LOCKED),"
    " won AS ("
    " UPDATE " TABLE " w SET holder = $2::text, generation = w.generation + 1,"
    " expires = clock_timestamp() + $3::bigint * interval '1 millisecond',"
    " mark = GREATEST(w.mark, $4::bigint)"
    " FROM pick WHERE w.worker = pick.worker"
    " RETURNING w.worker, pick.mark AS prev, w.generation, w.mark)"
    " SELECT (SELECT rec FROM sc), won.worker, won.prev, won.generation, won.mark,"
    " CASE WHEN won.worker IS NULL THEN"
    " (SELECT count(*) FROM " TABLE " WHERE worker >= 0 AND worker < $1::integer) END"
    " FROM (SELECT 1) AS one LEFT JOIN won ON true";

/* One claim statement's answer. */
typedef struct claim_answer {
    const char *rec; /* the recorded scope, NULL if none */
    bool won;
    int64_t worker, prev, generation, mark, rows;
} claim_answer;

static int read_claim(const pg_be *p, PGresult *res, uint32_t max, idm_unix_ms want,
                      claim_answer *a)
{
    static const char what[] = "claiming a worker id";
    bool none = true;
    int rc;
    memset(a, 0, sizeof *a);
    if (PQntuples(res) != 1 || PQnfields(res) != 6)
        return garbage(p, what, "shape");
    a->rec = PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0);
    if ((rc = field_i64(p, res, 0, 1, 0, (int64_t)max - 1, &a->worker, &none, what)) != 0)
        return rc;
    a->won = !none;
    if (!a->won)
        return field_i64(p, res, 0, 5, 0, INT32_MAX, &a->rows, NULL, what);
    if ((rc = field_i64(p, res, 0, 2, 0, INT64_MAX, &a->prev, NULL, what)) != 0 ||
        (rc = field_i64(p, res, 0, 3, 1, INT64_MAX, &a->generation, NULL, what)) != 0)
        return rc;
    /* Raised to at least the claim's mark, never lowered. */
    return field_i64(p, res, 0, 4, want > a->prev ? want : a->prev, INT64_MAX, &a->mark, NULL,
                     what);
}

static int pg_claim(void *be, uint32_t max_workers, int64_t ttl_ms, const char *holder,
                    const char *scope, idm_unix_ms want, uint32_t *worker,
                    idm_unix_ms *prev_mark, idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    static const unsigned types[] = {INT4OID, TEXTOID, INT8OID, INT8OID, TEXTOID};
    pg_be *p = be;
    char s_max[16], s_ttl[24], s_mark[24];
    const char *values[] = {s_max, holder, s_ttl, s_mark, scope};
    bool made_rows = false;
    int rc = 0;

    if (p->held)
        return idm_error_fail(IDM_EINVAL, "lease: this postgres handle holds a claim already");
    snprintf(s_max, sizeof s_max, "%u", (unsigned)max_workers);
    snprintf(s_ttl, sizeof s_ttl, "%lld", (long long)ttl_ms);
    snprintf(s_mark, sizeof s_mark, "%lld", (long long)want);
    begin_op(p, p->claim_budget_ms);
    if ((rc = idm__pq_ensure(&p->pq)) != 0)
        return rc;
    if (!p->have_table && (rc = create_table(p, max_workers)) != 0)
        return rc;
    for (int pass = 0; pass < CLAIM_PASSES; pass++) {
        claim_answer a;
        /* Not run again on a new connection: its answer lost, it may have
         * claimed an id (free again after the TTL). */
        PGresult *res = run(p, claim_sql, 5, types, values, PGRES_TUPLES_OK, false,
                            "cannot claim a worker id", &rc);
        if (res == NULL)
            return rc;
        rc = read_claim(p, res, max_workers, want, &a);
        if (rc == 0 && scope != NULL && a.rec != NULL && strcmp(a.rec, scope) != 0)
            rc = a.won ? garbage(p, "claiming a worker id", "claimed under another scope")
                       : idm__lease_scope_refuse(p->url, a.rec, strlen(a.rec), scope);
        PQclear(res); /* a.rec is not used past here */
        if (rc != 0)
            return rc;
        if (a.won) {
            p->held = true;
            p->worker = (uint32_t)a.worker;
            p->generation = a.generation;
            p->ttl_ms = ttl_ms;
            snprintf(p->holder, sizeof p->holder, "%s", holder);
            *worker = (uint32_t)a.worker;
            *prev_mark = a.prev;
            *recorded = want;
            *granted_ttl_ms = ttl_ms;
            return 0;
        }
        if (scope != NULL && a.rec == NULL)
            continue; /* recorded by a racing claimant after this statement's snapshot */
        if (a.rows < (int64_t)max_workers && !made_rows) {
            made_rows = true;
            if ((rc = make_rows(p, max_workers)) != 0)
                return rc;
            continue;
        }
        break;
    }
    return idm_error_fail(IDM_EBUSY,
                          "lease: no free worker id: all %u in postgres %.80s " TABLE " are held",
                          (unsigned)max_workers, p->url);
}

/* -------------------------------------------------------- renew, release */

/* The claim's row, while it is the claim's (its worker, generation and
 * holder): renewed (expiry TTL from now, mark raised to mark) or released
 * (no expiry, the exact final mark); else IDM_ELEASE. */
static int write_row(pg_be *p, idm_unix_ms mark, bool release)
{
    static const unsigned types[] = {INT4OID, INT8OID, TEXTOID, INT8OID, INT8OID};
    const char *what = release ? "cannot release the worker id" : "cannot renew the claim";
    char s_w[16], s_g[24], s_m[24], s_ttl[24];
    const char *values[] = {s_w, s_g, p->holder, s_m, s_ttl};
    int64_t now_mark = 0;
    PGresult *res;
    int rc = 0;
    snprintf(s_w, sizeof s_w, "%u", (unsigned)p->worker);
    snprintf(s_g, sizeof s_g, "%lld", (long long)p->generation);
    snprintf(s_m, sizeof s_m, "%lld", (long long)mark);
    snprintf(s_ttl, sizeof s_ttl, "%lld", (long long)p->ttl_ms);
    /* Either may run twice (retry): a renewal raises, a release sets the
     * same values again. */
    res = run(p,
              release ? "UPDATE " TABLE " SET expires = NULL, mark = $4::bigint"
                        " WHERE worker = $1::integer AND generation = $2::bigint"
                        " AND holder = $3::text RETURNING mark"
                      : "UPDATE " TABLE
                        " SET expires = clock_timestamp() + $5::bigint * interval '1 millisecond',"
                        " mark = GREATEST(mark, $4::bigint)"
                        " WHERE worker = $1::integer AND generation = $2::bigint"
                        " AND holder = $3::text RETURNING mark",
              release ? 4 : 5, types, values, PGRES_TUPLES_OK, true, what, &rc);
    if (res == NULL)
        return rc;
    if (PQnfields(res) != 1 || PQntuples(res) > 1)
        rc = garbage(p, what, "shape");
    else if (PQntuples(res) == 0)
        rc = idm_error_fail(IDM_ELEASE,
                            "lease: postgres %.80s: worker id %u was claimed by another holder "
                            "(generation %lld is gone): the claim is lost",
                            p->url, (unsigned)p->worker, (long long)p->generation);
    else if ((rc = field_i64(p, res, 0, 0, 0, INT64_MAX, &now_mark, NULL, what)) == 0 &&
             (release ? now_mark != mark : now_mark < mark))
        rc = garbage(p, what, "the mark was not recorded");
    PQclear(res);
    return rc;
}

static int pg_renew(void *be, idm_unix_ms mark, int64_t *granted_ttl_ms)
{
    pg_be *p = be;
    int rc;
    if (!p->held)
        return idm_error_fail(IDM_ELEASE, "lease: no claim to renew");
    begin_op(p, p->renew_budget_ms);
    rc = write_row(p, mark, false);
    if (rc == 0)
        *granted_ttl_ms = p->ttl_ms;
    return rc;
}

static int pg_release(void *be, idm_unix_ms mark)
{
    pg_be *p = be;
    int rc;
    if (!p->held)
        return 0;
    begin_op(p, p->renew_budget_ms);
    rc = write_row(p, mark, true);
    p->held = false;
    return rc;
}

/* ------------------------------------------------------------ list, scope */

static int pg_list(void *be, uint32_t max_workers, idm_lease_entry **entries, size_t *count)
{
    static const unsigned types[] = {INT4OID};
    static const char what[] = "cannot list the worker ids";
    pg_be *p = be;
    char s_max[16];
    const char *values[] = {s_max};
    idm_lease_entry *v = NULL;
    PGresult *res;
    int rows, rc = 0;
    *entries = NULL;
    *count = 0;
    begin_op(p, p->claim_budget_ms * 3 / 2);
    if ((rc = idm__pq_ensure(&p->pq)) != 0)
        return rc;
    if (!p->have_table)
        return 0; /* nothing claimed yet */
    snprintf(s_max, sizeof s_max, "%u", (unsigned)max_workers);
    res = run(p,
              "SELECT worker, coalesce(expires > clock_timestamp(), false), coalesce(holder, ''),"
              " mark FROM " TABLE " WHERE worker >= 0 AND worker < $1::integer"
              " AND (holder IS NOT NULL OR mark > 0) ORDER BY worker",
              1, types, values, PGRES_TUPLES_OK, true, what, &rc);
    if (res == NULL)
        return rc;
    rows = PQntuples(res);
    if (PQnfields(res) != 4)
        rc = garbage(p, what, "shape");
    else if (rows > 0 && (v = calloc((size_t)rows, sizeof *v)) == NULL)
        rc = IDM_ENOMEM;
    for (int i = 0; i < rows && rc == 0; i++) {
        int64_t w = 0, m = 0;
        const char *held = PQgetvalue(res, i, 1);
        if ((rc = field_i64(p, res, i, 0, 0, (int64_t)max_workers - 1, &w, NULL, what)) != 0 ||
            (rc = field_i64(p, res, i, 3, 0, INT64_MAX, &m, NULL, what)) != 0)
            break;
        if (strcmp(held, "t") != 0 && strcmp(held, "f") != 0) {
            rc = garbage(p, what, "held");
            break;
        }
        v[i].worker = (uint32_t)w;
        v[i].held = held[0] == 't';
        v[i].mark_ms = m;
        idm__lease_scope_copy(PQgetvalue(res, i, 2), strlen(PQgetvalue(res, i, 2)), v[i].holder,
                              sizeof v[i].holder);
    }
    PQclear(res);
    if (rc != 0) {
        free(v);
        return rc;
    }
    *entries = v;
    *count = (size_t)rows;
    return 0;
}

static int pg_scope(void *be, char *buf, size_t cap)
{
    static const char what[] = "cannot read the scope";
    pg_be *p = be;
    PGresult *res;
    int rc = 0;
    buf[0] = '\0';
    begin_op(p, p->claim_budget_ms * 3 / 2);
    if ((rc = idm__pq_ensure(&p->pq)) != 0)
        return rc;
    if (!p->have_table)
        return 0;
    res = run(p, "SELECT scope FROM " TABLE " WHERE worker = -1", 0, NULL, NULL,
              PGRES_TUPLES_OK, true, what, &rc);
    if (res == NULL)
        return rc;
    if (PQnfields(res) != 1 || PQntuples(res) > 1)
        rc = garbage(p, what, "shape");
    else if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
        rc = idm__lease_scope_text(p->url, PQgetvalue(res, 0, 0),
                                   (size_t)PQgetlength(res, 0, 0), buf, cap);
    PQclear(res);
    return rc;
}

static uint64_t pg_generation(void *be)
{
    return (uint64_t)((pg_be *)be)->generation;
}

/* ------------------------------------------------------------- restarts */

/* The claim's handle: "<worker>:<generation>". The generation alone names
 * a claim only within its row (every row counts its own claims from 1), so
 * the worker id is part of it: a handle given with another worker id is
 * refused rather than matched against that row's own count. */
static int pg_handle(void *be, char *buf, size_t len)
{
    pg_be *p = be;
    int n;
    if (!p->held)
        return idm_error_fail(IDM_EINVAL, "lease: this postgres handle holds no claim");
    n = snprintf(buf, len, "%u:%lld", (unsigned)p->worker, (long long)p->generation);
    if (n < 0 || (size_t)n >= len)
        return idm_error_fail(IDM_EINVAL, "lease: a postgres claim's handle needs %d bytes", n + 1);
    return 0;
}

/* Decimal digits s[0..n), 1 to 19 of them without a leading zero, as a
 * value in 1..max: 0, else -1. */
static int parse_positive(const char *s, size_t n, int64_t max, int64_t *out)
{
    int64_t v = 0;
    if (n == 0 || n > 19 || s[0] == '0')
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (max - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* A handle of pg_handle's form: its worker id (0 to 65535) and generation
 * (1 to INT64_MAX - 1: a resume bumps it), in decimal without leading
 * zeros. 0, else -1. */
static int parse_handle(const char *h, uint32_t *worker, int64_t *generation)
{
    const char *colon = strchr(h, ':');
    int64_t w = 0;
    if (colon == NULL)
        return -1;
    if (!(colon - h == 1 && h[0] == '0') &&
        parse_positive(h, (size_t)(colon - h), IDM_LEASE_WORKERS_MAX - 1, &w) != 0)
        return -1;
    if (parse_positive(colon + 1, strlen(colon + 1), INT64_MAX - 1, generation) != 0)
        return -1;
    *worker = (uint32_t)w;
    return 0;
}

/* See pg_reattach. $1 worker, $2 generation, $3 holder, $4 TTL ms, $5 mark,
 * $6 the scope or NULL. The answer, one row: the recorded scope; the mark
 * now recorded and the new generation if the claim was resumed (else NULL);
 * and, for the detail of a refusal only, the row as the statement's
 * snapshot saw it: whether there is one, its generation, whether it had
 * expired (by clock_timestamp()). */
static const char reattach_sql[] =
    "WITH sc_new AS ("
    " INSERT INTO " TABLE " (worker, scope) SELECT -1, $6::text WHERE $6::text IS NOT NULL"
    " ON CONFLICT (worker) DO NOTHING RETURNING scope),"
    " sc AS (SELECT coalesce((SELECT scope FROM sc_new),"
    " (SELECT scope FROM " TABLE " WHERE worker = -1)) AS rec),"
    " up AS ("
    " UPDATE " TABLE " w SET holder = $3::text, generation = w.generation + 1,"
    " expires = clock_timestamp() + $4::bigint * interval '1 millisecond',"
    " mark = GREATEST(w.mark, $5::bigint)"
    " WHERE w.worker = $1::integer AND w.generation = $2::bigint"
    " AND w.expires > clock_timestamp()"
    " AND ($6::text IS NULL OR $6::text = (SELECT rec FROM sc))"
    " RETURNING w.mark, w.generation)"
    " SELECT (SELECT rec FROM sc), (SELECT mark FROM up), cur.worker IS NOT NULL,"
    " cur.generation, coalesce(cur.expires <= clock_timestamp(), true),"
    " (SELECT generation FROM up)"
    " FROM (SELECT 1) AS one LEFT JOIN " TABLE " cur ON cur.worker = $1::integer";

/* Why reattach_sql renewed nothing, from the row its snapshot saw. */
static int reattach_refused(const pg_be *p, uint32_t worker, int64_t gen, bool exists,
                            bool no_gen, int64_t cur_gen, bool expired)
{
    if (!exists || no_gen)
        return idm_error_fail(IDM_ELEASE,
                              "lease: postgres %.80s: worker id %u has no row: its claim "
                              "(generation %lld) is gone",
                              p->url, (unsigned)worker, (long long)gen);
    if (cur_gen != gen)
        return idm_error_fail(IDM_ELEASE,
                              "lease: postgres %.80s: worker id %u was claimed or resumed again "
                              "since (generation %lld, the saved claim's %lld): the claim is gone",
                              p->url, (unsigned)worker, (long long)cur_gen, (long long)gen);
    /* The row's newest version, which the UPDATE re-checked, may be newer
     * than the snapshot: a release or a claim that committed meanwhile. */
    return idm_error_fail(IDM_ELEASE,
                          "lease: postgres %.80s: worker id %u's claim (generation %lld) %s: "
                          "the claim is gone",
                          p->url, (unsigned)worker, (long long)gen,
                          expired ? "expired or was released"
                                  : "was released, claimed or resumed meanwhile");
}

/*
 * Resume the claim of worker (handle: pg_handle's "<worker>:<generation>")
 * in one statement: the row is renewed, its holder made ours, its mark
 * raised and its generation bumped, only while its generation is the
 * handle's, it has not expired (clock_timestamp()) and the recorded scope
 * is ours. No row resumed is IDM_ELEASE (the UPDATE's WHERE, re-checked on
 * the row's newest version, is the coordinator's word: two processes
 * resuming one saved claim at once, one waits for the other's commit and
 * finds the generation changed), but for a scope that differs
 * (idm__lease_scope_refuse: nothing changed) or one recorded by a racing
 * claimant after the statement's snapshot (run again). Not run again on a
 * new connection (the bump would refuse our own lost success): a broken
 * connection is IDM_EIO, outcome unknown, and if the first did resume, the
 * next try is refused and the row is free again after the TTL. Within the
 * renewal's budget, the connection and the session's setup included: a
 * fresh handle connects here (open connects to nothing), so a server down
 * or frozen fails it with IDM_EIO within TTL/3 (at least 300 ms).
 */
static int pg_reattach(void *be, uint32_t worker, const char *handle, int64_t ttl_ms,
                       const char *holder, const char *scope, idm_unix_ms mark,
                       idm_unix_ms *recorded, int64_t *granted_ttl_ms)
{
    static const unsigned types[] = {INT4OID, INT8OID, TEXTOID, INT8OID, INT8OID, TEXTOID};
    static const char what[] = "cannot reattach the claim";
    pg_be *p = be;
    char s_w[16], s_g[24], s_ttl[24], s_m[24];
    const char *values[] = {s_w, s_g, holder, s_ttl, s_m, scope};
    uint32_t hw = 0;
    int64_t gen = 0;
    int rc = 0;

    if (p->held)
        return idm_error_fail(IDM_EINVAL, "lease: this postgres handle holds a claim already");
    if (parse_handle(handle, &hw, &gen) != 0)
        return idm_error_fail(IDM_EINVAL,
                              "lease: '%.40s' is not a postgres claim's handle "
                              "(<worker>:<generation>)",
                              handle);
    if (hw != worker)
        return idm_error_fail(IDM_ELEASE,
                              "lease: postgres %.80s: the saved claim is of worker id %u, not "
                              "%u: no claim of %u to resume",
                              p->url, (unsigned)hw, (unsigned)worker, (unsigned)worker);
    snprintf(s_w, sizeof s_w, "%u", (unsigned)worker);
    snprintf(s_g, sizeof s_g, "%lld", (long long)gen);
    snprintf(s_ttl, sizeof s_ttl, "%lld", (long long)ttl_ms);
    snprintf(s_m, sizeof s_m, "%lld", (long long)mark);
    begin_op(p, p->renew_budget_ms);
    if ((rc = idm__pq_ensure(&p->pq)) != 0)
        return rc;
    if (!p->have_table)
        return idm_error_fail(IDM_ELEASE,
                              "lease: postgres %.80s has no table " TABLE
                              ": worker id %u's claim (generation %lld) is not there",
                              p->url, (unsigned)worker, (long long)gen);
    for (int pass = 0; pass < 2; pass++) {
        int64_t now_mark = 0, cur_gen = 0, new_gen = 0;
        bool none = true, no_gen = true, no_new = true;
        const char *rec, *exists, *expired;
        PGresult *res = run(p, reattach_sql, 6, types, values, PGRES_TUPLES_OK, false, what, &rc);
        if (res == NULL)
            return rc;
        if (PQntuples(res) != 1 || PQnfields(res) != 6) {
            rc = garbage(p, what, "shape");
            PQclear(res);
            return rc;
        }
        rec = PQgetisnull(res, 0, 0) ? NULL : PQgetvalue(res, 0, 0);
        exists = PQgetvalue(res, 0, 2);
        expired = PQgetvalue(res, 0, 4);
        /* Raised to at least our mark, never lowered. */
        rc = field_i64(p, res, 0, 1, mark, INT64_MAX, &now_mark, &none, what);
        if (rc == 0)
            rc = field_i64(p, res, 0, 3, 0, INT64_MAX, &cur_gen, &no_gen, what);
        /* Bumped from the handle's, or nothing resumed. */
        if (rc == 0)
            rc = field_i64(p, res, 0, 5, gen + 1, gen + 1, &new_gen, &no_new, what);
        if (rc == 0 && no_new != none)
            rc = garbage(p, what, "a mark without a generation");
        if (rc == 0 && ((strcmp(exists, "t") != 0 && strcmp(exists, "f") != 0) ||
                        (strcmp(expired, "t") != 0 && strcmp(expired, "f") != 0)))
            rc = garbage(p, what, "a boolean");
        if (rc != 0) {
            PQclear(res);
            return rc;
        }
        if (scope != NULL && rec != NULL && strcmp(rec, scope) != 0)
            rc = !none ? garbage(p, what, "reattached under another scope")
                       : idm__lease_scope_refuse(p->url, rec, strlen(rec), scope);
        else if (none && scope != NULL && rec == NULL)
            rc = 1; /* recorded by a racing claimant after the snapshot: again */
        else if (none)
            rc = reattach_refused(p, worker, gen, exists[0] == 't', no_gen, cur_gen,
                                  expired[0] == 't');
        PQclear(res); /* rec is not used past here */
        if (rc == 1)
            continue;
        if (rc != 0)
            return rc;
        p->held = true;
        p->worker = worker;
        p->generation = new_gen;
        p->ttl_ms = ttl_ms;
        snprintf(p->holder, sizeof p->holder, "%s", holder);
        *recorded = now_mark;
        *granted_ttl_ms = ttl_ms;
        return 0;
    }
    /* Twice no scope seen, and none recorded: not an answer to act on. */
    return idm_error_fail(IDM_EIO,
                          "lease: postgres %.80s: the recorded scope changed while the claim "
                          "was reattached (outcome unknown)",
                          p->url);
}

const idm__lease_backend idm__lease_pg = {
    pg_open,  pg_claim, pg_renew,      pg_release, pg_list,
    pg_scope, pg_free,  pg_generation, pg_handle,  pg_reattach,
};
