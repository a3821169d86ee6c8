/* SPDX-License-Identifier: MIT */
/*
 * The PostgreSQL ticket store (postgres://... or postgresql://..., any libpq
 * URI, passed to libpq whole): one connection per store, in autocommit.
 *
 * A block is taken by ONE statement,
 *   UPDATE idmint_sequences SET next = next + $1
 *    WHERE name = $2 AND k = $4 AND n = $5 AND next <= $3 - $1 RETURNING next - $1
 * Under Read Committed a concurrent updater of the same row waits for the
 * first one's commit and then re-evaluates the WHERE clause against the
 * committed row (EvalPlanQual), so it adds its size to the new value:
 * blocks are disjoint without any explicit locking or retry loop.
 *
 * Deadlines. Every call (open included) must end within the store's
 * timeout (idm_store_set_timeout; IDM_STORE_TIMEOUT_MS unless set), on
 * CLOCK_MONOTONIC, whatever the network or the server does: a server that
 * stopped answering, packets dropped without a reset, a row lock held open
 * elsewhere. statement_timeout cannot do that (it runs on the server, which
 * may be out of reach), and libpq's blocking calls wait as long as the
 * kernel's TCP retries. So libpq runs non-blocking: connections are made
 * with PQconnectStart and PQconnectPoll, statements sent with
 * PQsendQueryParams and PQflush, and answers read with PQconsumeInput,
 * PQisBusy and PQgetResult, each wait a poll() on the socket until the
 * deadline. When the deadline passes the connection is dropped (PQfinish;
 * the next call connects again) and the call fails with IDM_EUNAVAIL, "no
 * answer within N ms": whatever was sent may or may not have run, so a take
 * that timed out is a gap (its block may have committed; it is never used)
 * and is not tried again past the deadline. Dropping the connection also
 * ends its transaction on the server once the server notices: each session
 * sets client_connection_check_interval (servers 14 and later, where the
 * platform has it) so that a statement still waiting there for a lock is
 * abandoned within a second of its client going away. (No cancel request is
 * sent: PQcancel blocks, on a new connection to the same silent server.)
 * connect_timeout (5 s unless the URL sets one) bounds each connection
 * attempt as a whole as well, since libpq leaves it to the caller in
 * non-blocking mode: with a multi-host URL, a host that does not answer at
 * all uses up the attempt, where libpq's blocking connect would move on to
 * the next host after it. Host names are resolved by libpq with
 * getaddrinfo, which blocks: a URL that must be bounded against a silent
 * DNS server gives hostaddr.
 *
 * Connection loss. If a statement fails and the connection is no longer
 * CONNECTION_OK, a new connection is made once (within the same deadline)
 * and the statement is run again from scratch. For a take that is fault row
 * P3 ("connection reset during COMMIT: treat as maybe allocated, discard,
 * allocate again"): the first UPDATE may or may not have committed; if it
 * did, its block is a gap that nobody ever uses, and the retry takes a new
 * block after it. Reads and floor raises (a max, idempotent) retry the same
 * way; create does not (after a lost answer it cannot tell "created" from
 * "existed"): it drops the connection and fails with IDM_EUNAVAIL. A store
 * without a connection makes one at the start of its next call.
 *
 * Parameters go as text through PQsendQueryParams with their types given;
 * every result's status, shape and numbers are checked strictly (an answer
 * that is not what the statement must produce is IDM_EIO).
 *
 * Durability. A block counts as taken when its UPDATE's commit returns, so
 * that commit must be on disk: with synchronous_commit off a crash can lose
 * a committed block that was already handed out, and hand it out again.
 * Every session (the first and each one after a reconnect) therefore sets
 * synchronous_commit to on before it runs anything else, whatever the URL
 * (options=-c synchronous_commit=off), the role or the database set, and
 * keeps only remote_apply, which waits for more. A session that cannot set
 * it runs nothing. (fsync=off on the server is beyond a session's reach.)
 *
 * Identity (pg_identity): the server's system identifier, the
 * database's and the table's OIDs, so that one database reached by two
 * URLs is known as one store.
 *
 * What it does not do: retry elsewhere (high availability is a list of
 * stores, see segment.h), or bound a host name's resolution (see above).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "pq.h"
#include "segment_internal.h"

#define CONNECT_TIMEOUT "connect_timeout=5"
#define MAX_URL 4096
#define INT8OID 20
#define TEXTOID 25
/* How often the server checks that the client of a running statement is
 * still there (client_connection_check_interval, ms). */
#define CLIENT_CHECK_MS "1000"
/* Serialises table creation between stores opening at once: concurrent
 * CREATE TABLE IF NOT EXISTS can fail on the catalogue's unique index.
 * An arbitrary constant ("idmintsq" in ASCII). */
#define CREATE_LOCK "7596562509622071665"

typedef struct pg_store {
    idm__pq pq;         /* conninfo: the URL with connect_timeout added */
    int64_t timeout_ms; /* the longest a call may take */
    char url[256];      /* for messages; password masked */
} pg_store;

/* -------------------------------------------------------------- helpers */

/* Field (row, col) of res as an int64 in 0 to max. */
static int field_i64(pg_store *p, PGresult *res, int row, int col, int64_t max, int64_t *out,
                     const char *what)
{
    int64_t v;
    const char *txt = PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
    if (txt == NULL || idm__pq_parse_i64(txt, &v) != 0)
        return idm__seg_fail(IDM_EIO, "store %s: %s: column %d is not an integer ('%.30s')",
                             p->url, what, col + 1, txt != NULL ? txt : "NULL");
    if (v < 0 || v > max)
        return idm__seg_fail(IDM_EIO, "store %s: %s: value %lld in column %d is outside 0 to %lld",
                             p->url, what, (long long)v, col + 1, (long long)max);
    *out = v;
    return 0;
}

static int field_kn(pg_store *p, PGresult *res, int row, int col, uint32_t *k, uint32_t *n,
                    const char *what)
{
    int64_t vk = 0, vn = 0;
    int rc;
    if ((rc = field_i64(p, res, row, col, UINT32_MAX, &vk, what)) != 0 ||
        (rc = field_i64(p, res, row, col + 1, UINT32_MAX, &vn, what)) != 0)
        return rc;
    if (vk >= vn)
        return idm__seg_fail(IDM_EIO, "store %s: %s: the row says store %lld of %lld", p->url,
                             what, (long long)vk, (long long)vn);
    *k = (uint32_t)vk;
    *n = (uint32_t)vn;
    return 0;
}

/* The IDM code for a failed statement: the server out of reach, shutting
 * down, out of resources, read-only (a standby after a failover), or the
 * statement cancelled or in a deadlock is IDM_EUNAVAIL (try again or
 * elsewhere); anything else (a table someone changed, a bug) is IDM_EIO. */
static int code_for(const char *sqlstate)
{
    if (sqlstate == NULL)
        return IDM_EUNAVAIL; /* no answer at all: the connection failed */
    if (strncmp(sqlstate, "08", 2) == 0 || strncmp(sqlstate, "53", 2) == 0 ||
        strncmp(sqlstate, "57", 2) == 0 || strncmp(sqlstate, "58", 2) == 0 ||
        strcmp(sqlstate, "40001") == 0 || strcmp(sqlstate, "40P01") == 0 ||
        strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "25006") == 0)
        return IDM_EUNAVAIL;
    return IDM_EIO;
}

static int pg_fail(pg_store *p, PGresult *res, const char *what)
{
    char msg[512];
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *text = res != NULL ? PQresultErrorMessage(res) : NULL;
    if (text == NULL || *text == '\0')
        text = p->pq.conn != NULL ? PQerrorMessage(p->pq.conn) : p->pq.dropped;
    idm__text_line(text, p->pq.conninfo, msg, sizeof msg);
    return idm__seg_fail(code_for(state), "store %s: %s: %s", p->url, what, msg);
}

/* ------------------------------------------------------------ deadlines */

/* The deadline passed during what: the connection is dropped, and what it
 * was doing may or may not have happened (outcome says which of the two
 * matters). */
static int late(pg_store *p, const char *what, const char *outcome)
{
    idm__pq_drop(&p->pq);
    return idm__seg_fail(IDM_EUNAVAIL, "store %s: %s: no answer within %lld ms (%s)", p->url,
                         what, (long long)p->timeout_ms, outcome);
}

/* libpq's connect_timeout for conn in ns (as libpq reads it: at least 2 s,
 * 0 or less for none); 0 for none. */
static int64_t connect_timeout_ns(PGconn *conn)
{
    PQconninfoOption *opts = PQconninfo(conn);
    int64_t ns = 0;
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        int64_t v;
        if (strcmp(o->keyword, "connect_timeout") != 0 || o->val == NULL)
            continue;
        if (idm__pq_parse_i64(o->val, &v) == 0 && v > 0)
            ns = (v < 2 ? 2 : v > 86400 ? 86400 : v) * 1000 * IDM__PQ_NS_PER_MS;
        break;
    }
    PQconninfoFree(opts);
    return ns;
}

/* A new connection (the old one, if any, dropped), made within the call's
 * deadline and connect_timeout; non-blocking from then on. */
static int pg_connect(void *ctx)
{
    pg_store *p = ctx;
    int64_t until = p->pq.deadline, ct;
    bool by_ct = false;
    if (idm__pq_start(&p->pq) != 0)
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory connecting", p->url);
    if ((ct = connect_timeout_ns(p->pq.conn)) > 0 && idm__mono_ns() + ct < until) {
        until = idm__mono_ns() + ct;
        by_ct = true;
    }
    switch (idm__pq_connect(&p->pq, until)) {
    case IDM__PQ_CONNECTED:
        return 0;
    case IDM__PQ_LATE:
        if (by_ct)
            return idm__seg_fail(IDM_EUNAVAIL,
                                 "store %s: cannot connect: no answer within connect_timeout "
                                 "(%lld s)",
                                 p->url, (long long)(ct / 1000 / IDM__PQ_NS_PER_MS));
        return late(p, "cannot connect", "gave up; the next call connects again");
    case IDM__PQ_BLOCKING:
        return idm__seg_fail(IDM_EIO, "store %s: cannot make the connection non-blocking: %s",
                             p->url, p->pq.dropped);
    default:
        return idm__seg_fail(IDM_EUNAVAIL, "store %s: cannot connect: %s", p->url,
                             p->pq.dropped);
    }
}

/*
 * What every session runs first: synchronous_commit on (see the top), or
 * remote_apply if that is what it was; then checked. One statement, in
 * autocommit, so the setting is the session's (a SET in a transaction that
 * rolls back would be undone). Then, best effort, the server's check for
 * clients gone away (see the top): a server that refuses it (a platform
 * without the check) works as before.
 */
static int session_setup(void *ctx)
{
    pg_store *p = ctx;
    bool timed_out = false;
    PGresult *res = idm__pq_exchange(&p->pq,
                                     "SELECT CASE current_setting('synchronous_commit')"
                                     " WHEN 'remote_apply' THEN 'remote_apply'"
                                     " ELSE set_config('synchronous_commit', 'on', false) END",
                                     0, NULL, NULL, &timed_out);
    const char *v;
    int rc = 0;
    if (timed_out)
        return late(p, "setting synchronous_commit to on", "connection dropped");
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = pg_fail(p, res, "cannot set synchronous_commit to on");
    } else {
        v = PQntuples(res) == 1 && PQnfields(res) == 1 && !PQgetisnull(res, 0, 0)
                ? PQgetvalue(res, 0, 0)
                : "";
        if (strcmp(v, "on") != 0 && strcmp(v, "remote_apply") != 0)
            rc = idm__seg_fail(IDM_EIO,
                               "store %s: synchronous_commit is '%.20s' after setting it to on: "
                               "a committed block could be lost in a crash and handed out again",
                               p->url, v);
    }
    PQclear(res);
    if (rc != 0)
        return rc;
    if (PQserverVersion(p->pq.conn) >= 140000) {
        res = idm__pq_exchange(&p->pq,
                               "SELECT set_config('client_connection_check_interval', '"
                               CLIENT_CHECK_MS "', false)",
                               0, NULL, NULL, &timed_out);
        PQclear(res);
        if (timed_out)
            return late(p, "setting client_connection_check_interval", "connection dropped");
        if (idm__pq_lost(&p->pq))
            return pg_fail(p, NULL, "cannot set client_connection_check_interval");
    }
    p->pq.ready = true;
    return 0;
}

/*
 * Run one statement (nparams text parameters of the given types) and
 * return its result if its status is want, else NULL with *rc set. If it
 * fails with the connection broken and retry is set, a new connection is
 * made once and the statement run again as if for the first time, all
 * within the call's deadline; past it, the connection is dropped and the
 * statement's outcome is unknown.
 */
static PGresult *run(pg_store *p, const char *sql, int nparams, const unsigned *types,
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
        *rc = late(p, what, "connection dropped; the outcome is unknown");
        return NULL;
    case IDM__PQ_LOST:
        if (!retry) {
            *rc = pg_fail(p, res, what);
            PQclear(res);
            /* For the next call; this one's outcome is unknown. */
            idm__pq_drop(&p->pq);
            return NULL;
        }
        break;
    default:
        break;
    }
    if (res != NULL && PQresultStatus(res) != PGRES_FATAL_ERROR &&
        PQresultStatus(res) != PGRES_NONFATAL_ERROR)
        *rc = idm__seg_fail(IDM_EIO, "store %s: %s: unexpected answer %s", p->url, what,
                            PQresStatus(PQresultStatus(res)));
    else
        *rc = pg_fail(p, res, what);
    PQclear(res);
    return NULL;
}

/* ------------------------------------------------------------------ ops */

static int pg_create(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    static const unsigned types[] = {TEXTOID, INT8OID, INT8OID, INT8OID};
    pg_store *p = ctx;
    char s_start[24], s_k[16], s_n[16];
    const char *values[] = {name, s_start, s_k, s_n};
    char what[IDM_SEQ_NAME_MAX + 32];
    const char *state;
    bool timed_out = false;
    PGresult *res;
    int rc;
    snprintf(s_start, sizeof s_start, "%" PRId64, start);
    snprintf(s_k, sizeof s_k, "%" PRIu32, k);
    snprintf(s_n, sizeof s_n, "%" PRIu32, n);
    idm__pq_begin(&p->pq, p->timeout_ms);
    rc = idm__pq_ensure(&p->pq);
    if (rc != 0)
        return rc;
    res = idm__pq_exchange(&p->pq,
                           "INSERT INTO " IDM__SEQ_TABLE "(name, next, k, n)"
                           " VALUES($1, $2, $3, $4)",
                           4, types, values, &timed_out);
    if (timed_out) {
        snprintf(what, sizeof what, "creating sequence %s", name);
        return late(p, what, "connection dropped; it may or may not exist now");
    }
    if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
        PQclear(res);
        return 0;
    }
    state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state != NULL && strcmp(state, "23505") == 0) {
        PQclear(res);
        return idm__seg_fail(IDM_EEXIST, "sequence %s exists already in %s", name, p->url);
    }
    if (idm__pq_lost(&p->pq)) {
        /* The INSERT may or may not have committed: say so; the next call
         * connects again. */
        char msg[512];
        idm__text_line(p->pq.conn != NULL ? PQerrorMessage(p->pq.conn) : p->pq.dropped,
                       p->pq.conninfo, msg, sizeof msg);
        PQclear(res);
        idm__pq_drop(&p->pq);
        return idm__seg_fail(IDM_EUNAVAIL,
                             "store %s: connection lost creating sequence %s (it may or may not "
                             "exist now): %s",
                             p->url, name, msg);
    }
    rc = pg_fail(p, res, "cannot create the sequence");
    PQclear(res);
    return rc;
}

static int pg_take(void *ctx, const char *name, int64_t size, uint32_t k, uint32_t n,
                   int64_t limit, int64_t *start)
{
    static const unsigned types[] = {INT8OID, TEXTOID, INT8OID, INT8OID, INT8OID};
    static const unsigned ntypes[] = {TEXTOID};
    pg_store *p = ctx;
    char s_size[24], s_max[24], s_k[24], s_n[24];
    const char *values[] = {s_size, name, s_max, s_k, s_n};
    int64_t next = 0;
    uint32_t vk = 0, vn = 0;
    PGresult *res;
    int rows, rc = 0;
    if (size <= 0 || size > IDM_SEQ_MAX || limit <= 0 || limit > IDM_SEQ_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence %s: block size %lld is outside 1 to 2^62",
                             name, (long long)size);
    snprintf(s_size, sizeof s_size, "%" PRId64, size);
    snprintf(s_max, sizeof s_max, "%" PRId64, limit);
    snprintf(s_k, sizeof s_k, "%u", (unsigned)k);
    snprintf(s_n, sizeof s_n, "%u", (unsigned)n);
    idm__pq_begin(&p->pq, p->timeout_ms);
    /* retry: a take whose answer was lost is abandoned and taken again (P3),
     * within the deadline; a take that runs past it is abandoned. */
    res = run(p,
              "UPDATE " IDM__SEQ_TABLE " SET next = next + $1"
              " WHERE name = $2 AND k = $4 AND n = $5 AND next <= $3 - $1 RETURNING next - $1",
              5, types, values, PGRES_TUPLES_OK, true, "cannot take a block", &rc);
    if (res == NULL)
        return rc;
    rows = PQntuples(res);
    if (PQnfields(res) != 1 || rows > 1)
        rc = idm__seg_fail(IDM_EIO, "store %s: taking a block of %s: %d rows of %d columns",
                           p->url, name, rows, PQnfields(res));
    else if (rows == 1)
        rc = field_i64(p, res, 0, 0, IDM_SEQ_MAX, start, "taking a block");
    PQclear(res);
    if (rc != 0 || rows == 1)
        return rc;
    /* No row: no such sequence, another k of n, or its counter is exhausted.
     * Nothing was taken; this read is only for the message and the code. */
    res = run(p, "SELECT next, k, n FROM " IDM__SEQ_TABLE " WHERE name = $1", 1, ntypes,
              values + 1, PGRES_TUPLES_OK, true, "cannot read the sequence", &rc);
    if (res == NULL)
        return rc;
    if (PQnfields(res) != 3 || PQntuples(res) > 1) {
        rc = idm__seg_fail(IDM_EIO, "store %s: reading sequence %s: %d rows of %d columns",
                           p->url, name, PQntuples(res), PQnfields(res));
    } else if (PQntuples(res) == 0) {
        rc = idm__seg_fail(IDM_ENOSEQ, "sequence %s does not exist in %s", name, p->url);
    } else if ((rc = field_i64(p, res, 0, 0, IDM_SEQ_MAX, &next, "reading the sequence")) == 0 &&
               (rc = field_kn(p, res, 0, 1, &vk, &vn, "reading the sequence")) == 0) {
        if (vk != k || vn != n)
            rc = idm__seg_fail(IDM_EINVAL,
                               "sequence %s: store %s is store %u of %u for it, not %u of %u: "
                               "list the stores in the order they were created with (nothing "
                               "taken)",
                               name, p->url, (unsigned)vk, (unsigned)vn, (unsigned)k,
                               (unsigned)n);
        else
            rc = idm__seg_fail(IDM_ERANGE,
                               "sequence %s in %s: a block of %lld from %lld would pass 2^62 "
                               "(the counter is exhausted)",
                               name, p->url, (long long)size, (long long)next);
    }
    PQclear(res);
    return rc;
}

static int pg_list(void *ctx, idm_seq_info **out, size_t *count)
{
    pg_store *p = ctx;
    idm_seq_info *v = NULL;
    PGresult *res;
    int rows, rc = 0;
    *out = NULL;
    *count = 0;
    idm__pq_begin(&p->pq, p->timeout_ms);
    /* COLLATE "C": byte order, whatever the database's collation, as SQLite. */
    res = run(p, "SELECT name, next, k, n FROM " IDM__SEQ_TABLE " ORDER BY name COLLATE \"C\"", 0,
              NULL, NULL, PGRES_TUPLES_OK, true, "cannot list the sequences", &rc);
    if (res == NULL)
        return rc;
    rows = PQntuples(res);
    if (PQnfields(res) != 4)
        rc = idm__seg_fail(IDM_EIO, "store %s: listing: %d columns, not 4", p->url,
                           PQnfields(res));
    else if (rows > 0 && (v = calloc((size_t)rows, sizeof *v)) == NULL)
        rc = idm__seg_fail(IDM_ENOMEM, "store %s: out of memory listing", p->url);
    for (int i = 0; i < rows && rc == 0; i++) {
        const char *name = PQgetisnull(res, i, 0) ? NULL : PQgetvalue(res, i, 0);
        size_t len = name != NULL ? strlen(name) : 0;
        if (len == 0 || len > IDM_SEQ_NAME_MAX) {
            rc = idm__seg_fail(IDM_EIO, "store %s: a sequence's name is not 1 to %d bytes",
                               p->url, IDM_SEQ_NAME_MAX);
            break;
        }
        memcpy(v[i].name, name, len + 1);
        if ((rc = field_i64(p, res, i, 1, IDM_SEQ_MAX, &v[i].next, "listing")) == 0)
            rc = field_kn(p, res, i, 2, &v[i].k, &v[i].n, "listing");
    }
    PQclear(res);
    if (rc != 0) {
        free(v);
        return rc;
    }
    *out = v;
    *count = (size_t)rows;
    return 0;
}

static int pg_floor_get(void *ctx, const char *name, uint32_t k, int64_t *floor)
{
    static const unsigned types[] = {TEXTOID, INT8OID};
    pg_store *p = ctx;
    char s_k[16];
    const char *values[] = {name, s_k};
    PGresult *res;
    int rc = 0;
    snprintf(s_k, sizeof s_k, "%" PRIu32, k);
    idm__pq_begin(&p->pq, p->timeout_ms);
    res = run(p, "SELECT floor FROM " IDM__FLOOR_TABLE " WHERE name = $1 AND k = $2", 2, types,
              values, PGRES_TUPLES_OK, true, "cannot read a floor", &rc);
    if (res == NULL)
        return rc;
    if (PQnfields(res) != 1 || PQntuples(res) > 1)
        rc = idm__seg_fail(IDM_EIO, "store %s: reading a floor of %s: %d rows of %d columns",
                           p->url, name, PQntuples(res), PQnfields(res));
    else if (PQntuples(res) == 0)
        *floor = 0; /* never recorded */
    else
        rc = field_i64(p, res, 0, 0, IDM_SEQ_MAX, floor, "reading a floor");
    PQclear(res);
    return rc;
}

static int pg_floor_raise(void *ctx, const char *name, uint32_t k, int64_t floor)
{
    static const unsigned types[] = {TEXTOID, INT8OID, INT8OID};
    pg_store *p = ctx;
    char s_k[16], s_floor[24];
    const char *values[] = {name, s_k, s_floor};
    PGresult *res;
    int rc = 0;
    if (floor < 0 || floor > IDM_SEQ_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence %s: floor %lld is outside 0 to 2^62", name,
                             (long long)floor);
    snprintf(s_k, sizeof s_k, "%" PRIu32, k);
    snprintf(s_floor, sizeof s_floor, "%" PRId64, floor);
    idm__pq_begin(&p->pq, p->timeout_ms);
    /* A raise, never a lowering: running it twice (a retry) is harmless. */
    res = run(p,
              "INSERT INTO " IDM__FLOOR_TABLE "(name, k, floor) VALUES($1, $2, $3)"
              " ON CONFLICT (name, k) DO UPDATE"
              " SET floor = GREATEST(" IDM__FLOOR_TABLE ".floor, EXCLUDED.floor)",
              3, types, values, PGRES_COMMAND_OK, true, "cannot raise a floor", &rc);
    PQclear(res);
    return rc;
}

static void pg_close(void *ctx)
{
    pg_store *p = ctx;
    if (p == NULL)
        return;
    PQfinish(p->pq.conn);
    free(p->pq.conninfo);
    free(p);
}

static void pg_set_timeout(void *ctx, int64_t ms)
{
    ((pg_store *)ctx)->timeout_ms = ms;
}

static const idm_store_ops ops = {pg_create, pg_take, pg_list, pg_floor_get, pg_floor_raise,
                                  pg_close};

/*
 * "postgres:SYSID:DB:TABLE": the cluster's system identifier (a physical
 * standby shares its primary's: the same store), the database's OID and
 * the sequences table's (the URL's search_path may name another schema's).
 * Where pg_control_system() may not be called (revoked; before 9.6), the
 * server's address and port stand in for the system identifier: one server
 * reached by two addresses is then not known as one.
 */
static int pg_identity(void *ctx, char *out, size_t cap)
{
    static const char *const queries[] = {
        "SELECT 'postgres:' || (SELECT system_identifier FROM pg_control_system())"
        " || ':' || (SELECT oid FROM pg_database WHERE datname = current_database())"
        " || ':' || to_regclass('" IDM__SEQ_TABLE "')::oid",
        "SELECT 'postgres-at:' || coalesce(host(inet_server_addr()), 'socket')"
        " || ':' || current_setting('port')"
        " || ':' || (SELECT oid FROM pg_database WHERE datname = current_database())"
        " || ':' || to_regclass('" IDM__SEQ_TABLE "')::oid",
    };
    pg_store *p = ctx;
    int rc = 0;
    idm__pq_begin(&p->pq, p->timeout_ms);
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        PGresult *res = run(p, queries[i], 0, NULL, NULL, PGRES_TUPLES_OK, true,
                            "cannot read the store's identity", &rc);
        const char *v;
        if (res == NULL) {
            /* Not allowed or not there: the next query; else the error. */
            if (i + 1 < sizeof queries / sizeof queries[0] && !idm__pq_lost(&p->pq))
                continue;
            return rc;
        }
        v = PQntuples(res) == 1 && PQnfields(res) == 1 && !PQgetisnull(res, 0, 0)
                ? PQgetvalue(res, 0, 0)
                : NULL;
        if (v == NULL || strlen(v) >= cap) {
            PQclear(res);
            return idm__seg_fail(IDM_EIO, "store %s: reading its identity: unexpected answer",
                                 p->url);
        }
        memcpy(out, v, strlen(v) + 1);
        PQclear(res);
        return 0;
    }
    return rc;
}

/* ----------------------------------------------------------------- open */

/* The URL with connect_timeout=5 added unless it sets one, as libpq's
 * blocking connect had it: a connection attempt ends within 5 s also under
 * a longer store timeout (and within the store timeout if that is shorter). */
static int with_timeout(const char *url, const char *masked, char *out, size_t cap)
{
    int n = idm__pq_url_sets(url, "connect_timeout=")
                ? snprintf(out, cap, "%s", url)
                : snprintf(out, cap, "%s%s" CONNECT_TIMEOUT, url, idm__pq_url_sep(url));
    if (n < 0 || (size_t)n >= cap)
        return idm__seg_fail(IDM_EINVAL, "store: URL '%.60s...' is longer than %zu bytes", masked,
                             cap - 32);
    return 0;
}

/* The tables, created only if missing: a role that may use but not create
 * them still opens the store. */
static int ensure_tables(pg_store *p)
{
    bool timed_out = false, exist;
    PGresult *res;
    int rc = 0;
    res = run(p,
              "SELECT to_regclass('" IDM__SEQ_TABLE "') IS NOT NULL"
              " AND to_regclass('" IDM__FLOOR_TABLE "') IS NOT NULL",
              0, NULL, NULL, PGRES_TUPLES_OK, true, "cannot look for the tables", &rc);
    if (res == NULL)
        return rc;
    if (PQntuples(res) != 1 || PQnfields(res) != 1)
        rc = idm__seg_fail(IDM_EIO, "store %s: looking for the tables: unexpected answer",
                           p->url);
    exist = rc == 0 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    if (rc != 0 || exist)
        return rc;
    /* One statement string: simple query protocol, one transaction. */
    res = idm__pq_exchange(&p->pq,
                           "BEGIN;"
                           "SELECT pg_advisory_xact_lock(" CREATE_LOCK ");"
                           "CREATE TABLE IF NOT EXISTS " IDM__SEQ_TABLE
                           "(name TEXT PRIMARY KEY, next BIGINT NOT NULL,"
                           " k BIGINT NOT NULL, n BIGINT NOT NULL);"
                           "CREATE TABLE IF NOT EXISTS " IDM__FLOOR_TABLE
                           "(name TEXT NOT NULL, k BIGINT NOT NULL, floor BIGINT NOT NULL,"
                           " PRIMARY KEY (name, k));"
                           "COMMIT",
                           -1, NULL, NULL, &timed_out);
    if (timed_out)
        return late(p, "creating the tables", "connection dropped; they may or may not exist now");
    if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK)
        rc = pg_fail(p, res, "cannot create the tables");
    PQclear(res);
    return rc;
}

/* Open a store for url: the URL checked (libpq parses it; connect_timeout
 * added) and masked for messages, then connected. */
static int pg_open(void **ctx, const char *url, int64_t timeout_ms)
{
    char masked[256], full[MAX_URL], msg[512];
    PQconninfoOption *info;
    pg_store *p;
    int rc;
    idm__url_mask(url, masked, sizeof masked);
    if (strncmp(url, "postgres://", 11) != 0 && strncmp(url, "postgresql://", 13) != 0)
        return idm__seg_fail(IDM_EINVAL, "store: '%.80s' is not a postgres:// URL", masked);
    if ((rc = with_timeout(url, masked, full, sizeof full)) != 0)
        return rc;
    /* A URL libpq cannot parse is the caller's mistake (IDM_EINVAL), not an
     * unreachable server: parse it first, without connecting. */
    info = idm__pq_parse(full, msg, sizeof msg);
    if (info == NULL)
        return idm__seg_fail(IDM_EINVAL, "store: '%.80s' is not a valid PostgreSQL URL: %s",
                             masked, msg);
    PQconninfoFree(info);
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", masked);
    snprintf(p->url, sizeof p->url, "%s", masked);
    p->timeout_ms = timeout_ms;
    p->pq.connect = pg_connect;
    p->pq.setup = session_setup;
    p->pq.owner = p;
    p->pq.conninfo = strdup(full);
    if (p->pq.conninfo == NULL) {
        free(p);
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", masked);
    }
    /* Opening is one call: connecting, the session, the tables. */
    idm__pq_begin(&p->pq, p->timeout_ms);
    if ((rc = idm__pq_ensure(&p->pq)) != 0 || (rc = ensure_tables(p)) != 0) {
        pg_close(p);
        return rc;
    }
    *ctx = p;
    return 0;
}

const idm__store_backend idm__store_postgres = {&ops, pg_open, pg_set_timeout, pg_identity};
