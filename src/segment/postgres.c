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
 * Connection loss. If a statement fails and the connection is no longer
 * CONNECTION_OK, the connection is reset once (PQreset) and the statement
 * is run again from scratch. For a take that is fault row P3 ("connection
 * reset during COMMIT: treat as maybe allocated, discard, allocate again"):
 * the first UPDATE may or may not have committed; if it did, its block is a
 * gap that nobody ever uses, and the retry takes a new block after it.
 * Reads and floor raises (a max, idempotent) retry the same way; create does
 * not (after a lost answer it cannot tell "created" from "existed"): it
 * resets and fails with IDM_EUNAVAIL. A store whose reset failed tries to
 * reconnect at the start of its next call.
 *
 * Parameters go as text through PQexecParams with their types given; every
 * result's status, shape and numbers are checked strictly (an answer that
 * is not what the statement must produce is IDM_EIO).
 *
 * Durability. A block counts as taken when its UPDATE's commit returns, so
 * that commit must be on disk: with synchronous_commit off a crash can lose
 * a committed block that was already handed out, and hand it out again.
 * Every session (the first and each one after a reset) therefore sets
 * synchronous_commit to on before it runs anything else, whatever the URL
 * (options=-c synchronous_commit=off), the role or the database set, and
 * keeps only remote_apply, which waits for more. A session that cannot set
 * it runs nothing. (fsync=off on the server is beyond a session's reach.)
 *
 * Identity (idm__postgres_identity): the server's system identifier, the
 * database's and the table's OIDs, so that one database reached by two
 * URLs is known as one store.
 *
 * What it does not do: time a statement out (a take blocked behind a row
 * lock that someone else holds open waits; set statement_timeout in the URL's
 * options, e.g. ?options=-c%20statement_timeout%3D5000, to bound it), or
 * retry elsewhere (high availability is a list of stores, see segment.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "segment_internal.h"

#define CONNECT_TIMEOUT "connect_timeout=5"
#define MAX_URL 4096
#define INT8OID 20
#define TEXTOID 25
/* Serialises table creation between stores opening at once: concurrent
 * CREATE TABLE IF NOT EXISTS can fail on the catalogue's unique index.
 * An arbitrary constant ("idmintsq" in ASCII). */
#define CREATE_LOCK "7596562509622071665"

typedef struct pg_store {
    PGconn *conn;
    bool ready; /* this session has run session_setup */
    char url[256]; /* for messages; password masked */
} pg_store;

/* -------------------------------------------------------------- helpers */

/* msg on one line: runs of white space (libpq's messages end in a newline
 * and may hold a tab-indented hint) become one space, none at the ends. */
static void one_line(const char *msg, char *out, size_t cap)
{
    size_t n = 0;
    bool space = false;
    if (cap == 0)
        return;
    for (const char *c = msg != NULL ? msg : ""; *c != '\0' && n + 1 < cap; c++) {
        if (*c == ' ' || *c == '\n' || *c == '\t' || *c == '\r') {
            space = n > 0;
            continue;
        }
        if (space && n + 2 < cap)
            out[n++] = ' ';
        space = false;
        out[n++] = *c;
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, cap, "no message");
}

/* The URL for messages: a password in postgres://user:pass@host is masked
 * (as store.c does), and a password=... option too. */
static void mask_url(const char *url, char *out, size_t cap)
{
    const char *at = strchr(url, '@'), *scheme = strstr(url, "://");
    const char *colon = scheme != NULL ? strchr(scheme + 3, ':') : NULL;
    const char *pw;
    if (at != NULL && colon != NULL && colon < at)
        snprintf(out, cap, "%.*s:***%s", (int)(colon - url), url, at);
    else
        snprintf(out, cap, "%s", url);
    pw = strstr(out, "password=");
    if (pw != NULL) {
        size_t off = (size_t)(pw - out) + strlen("password=");
        const char *amp = strchr(out + off, '&');
        char tail[256];
        snprintf(tail, sizeof tail, "%s", amp != NULL ? amp : "");
        snprintf(out + off, cap - off, "***%s", tail);
    }
}

/* Strictly a decimal int64 as PostgreSQL prints one: an optional '-', then
 * digits, nothing else, no overflow. */
static int parse_i64(const char *s, int64_t *out)
{
    bool neg = false;
    uint64_t v = 0, lim;
    if (s == NULL || *s == '\0')
        return -1;
    if (*s == '-') {
        neg = true;
        s++;
    }
    if (*s == '\0')
        return -1;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (v > (lim - (uint64_t)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

/* Field (row, col) of res as an int64 in 0 to max. */
static int field_i64(pg_store *p, PGresult *res, int row, int col, int64_t max, int64_t *out,
                     const char *what)
{
    int64_t v;
    const char *txt = PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
    if (txt == NULL || parse_i64(txt, &v) != 0)
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
        text = PQerrorMessage(p->conn);
    one_line(text, msg, sizeof msg);
    return idm__seg_fail(code_for(state), "store %s: %s: %s", p->url, what, msg);
}

/* Reset the connection: a new session, which must be set up again. */
static void reset(pg_store *p)
{
    p->ready = false;
    PQreset(p->conn);
}

/*
 * What every session runs first: synchronous_commit on (see the top), or
 * remote_apply if that is what it was; then checked. One statement, in
 * autocommit, so the setting is the session's (a SET in a transaction that
 * rolls back would be undone).
 */
static int session_setup(pg_store *p)
{
    PGresult *res = PQexec(p->conn,
                           "SELECT CASE current_setting('synchronous_commit')"
                           " WHEN 'remote_apply' THEN 'remote_apply'"
                           " ELSE set_config('synchronous_commit', 'on', false) END");
    const char *v;
    int rc;
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = pg_fail(p, res, "cannot set synchronous_commit to on");
        PQclear(res);
        return rc;
    }
    v = PQntuples(res) == 1 && PQnfields(res) == 1 && !PQgetisnull(res, 0, 0)
            ? PQgetvalue(res, 0, 0)
            : "";
    if (strcmp(v, "on") != 0 && strcmp(v, "remote_apply") != 0) {
        rc = idm__seg_fail(IDM_EIO,
                           "store %s: synchronous_commit is '%.20s' after setting it to on: "
                           "a committed block could be lost in a crash and handed out again",
                           p->url, v);
        PQclear(res);
        return rc;
    }
    PQclear(res);
    p->ready = true;
    return 0;
}

/* Bring a broken connection back, once; set up a new session. */
static int reconnect(pg_store *p)
{
    char msg[512];
    if (PQstatus(p->conn) != CONNECTION_OK) {
        reset(p);
        if (PQstatus(p->conn) != CONNECTION_OK) {
            one_line(PQerrorMessage(p->conn), msg, sizeof msg);
            return idm__seg_fail(IDM_EUNAVAIL, "store %s: cannot reconnect: %s", p->url, msg);
        }
    }
    return p->ready ? 0 : session_setup(p);
}

/*
 * Run one statement (nparams text parameters of the given types) and
 * return its result if its status is want, else NULL with *rc set. If it
 * fails with the connection broken and retry is set, the connection is
 * reset once and the statement run again as if for the first time.
 */
static PGresult *run(pg_store *p, const char *sql, int nparams, const unsigned *types,
                     const char *const *values, ExecStatusType want, bool retry,
                     const char *what, int *rc)
{
    *rc = reconnect(p);
    if (*rc != 0)
        return NULL;
    for (int attempt = 0;; attempt++) {
        PGresult *res = PQexecParams(p->conn, sql, nparams, types, values, NULL, NULL, 0);
        if (res != NULL && PQresultStatus(res) == want)
            return res;
        if (PQstatus(p->conn) != CONNECTION_OK && attempt == 0) {
            if (!retry) {
                *rc = pg_fail(p, res, what);
                PQclear(res);
                /* For the next call; this one's outcome is unknown. */
                reset(p);
                return NULL;
            }
            PQclear(res);
            if ((*rc = reconnect(p)) != 0)
                return NULL;
            continue;
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
}

/* ------------------------------------------------------------------ ops */

static int pg_create(void *ctx, const char *name, int64_t start, uint32_t k, uint32_t n)
{
    static const unsigned types[] = {TEXTOID, INT8OID, INT8OID, INT8OID};
    pg_store *p = ctx;
    char s_start[24], s_k[16], s_n[16];
    const char *values[] = {name, s_start, s_k, s_n};
    PGresult *res;
    int rc;
    snprintf(s_start, sizeof s_start, "%" PRId64, start);
    snprintf(s_k, sizeof s_k, "%" PRIu32, k);
    snprintf(s_n, sizeof s_n, "%" PRIu32, n);
    rc = reconnect(p);
    if (rc != 0)
        return rc;
    res = PQexecParams(p->conn,
                       "INSERT INTO " IDM__SEQ_TABLE "(name, next, k, n) VALUES($1, $2, $3, $4)",
                       4, types, values, NULL, NULL, 0);
    if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
        PQclear(res);
        return 0;
    }
    if (res != NULL) {
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (state != NULL && strcmp(state, "23505") == 0) {
            PQclear(res);
            return idm__seg_fail(IDM_EEXIST, "sequence %s exists already in %s", name, p->url);
        }
    }
    if (PQstatus(p->conn) != CONNECTION_OK) {
        /* The INSERT may or may not have committed: say so, and reconnect
         * for the next call. */
        char msg[512];
        one_line(PQerrorMessage(p->conn), msg, sizeof msg);
        PQclear(res);
        reset(p);
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
    int64_t v = 0, next = 0;
    uint32_t vk = 0, vn = 0;
    PGresult *res;
    int rc;
    if (size <= 0 || size > IDM_SEQ_MAX || limit <= 0 || limit > IDM_SEQ_MAX)
        return idm__seg_fail(IDM_EINVAL, "sequence %s: block size %lld is outside 1 to 2^62",
                             name, (long long)size);
    snprintf(s_size, sizeof s_size, "%" PRId64, size);
    snprintf(s_max, sizeof s_max, "%" PRId64, limit);
    snprintf(s_k, sizeof s_k, "%u", (unsigned)k);
    snprintf(s_n, sizeof s_n, "%u", (unsigned)n);
    /* retry: a take whose answer was lost is abandoned and taken again (P3). */
    res = run(p,
              "UPDATE " IDM__SEQ_TABLE " SET next = next + $1"
              " WHERE name = $2 AND k = $4 AND n = $5 AND next <= $3 - $1 RETURNING next - $1",
              5, types, values, PGRES_TUPLES_OK, true, "cannot take a block", &rc);
    if (res == NULL)
        return rc;
    if (PQnfields(res) != 1 || PQntuples(res) > 1) {
        rc = idm__seg_fail(IDM_EIO, "store %s: taking a block of %s: %d rows of %d columns",
                           p->url, name, PQntuples(res), PQnfields(res));
        PQclear(res);
        return rc;
    }
    if (PQntuples(res) == 1) {
        rc = field_i64(p, res, 0, 0, IDM_SEQ_MAX, &v, "taking a block");
        PQclear(res);
        if (rc != 0)
            return rc;
        *start = v;
        return 0;
    }
    PQclear(res);
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
    /* COLLATE "C": byte order, whatever the database's collation, as SQLite. */
    res = run(p, "SELECT name, next, k, n FROM " IDM__SEQ_TABLE " ORDER BY name COLLATE \"C\"", 0,
              NULL, NULL, PGRES_TUPLES_OK, true, "cannot list the sequences", &rc);
    if (res == NULL)
        return rc;
    if (PQnfields(res) != 4) {
        rc = idm__seg_fail(IDM_EIO, "store %s: listing: %d columns, not 4", p->url,
                           PQnfields(res));
        PQclear(res);
        return rc;
    }
    rows = PQntuples(res);
    if (rows > 0 && (v = calloc((size_t)rows, sizeof *v)) == NULL) {
        PQclear(res);
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory listing", p->url);
    }
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
    /* A raise, never a lowering: running it twice (a retry) is harmless. */
    res = run(p,
              "INSERT INTO " IDM__FLOOR_TABLE "(name, k, floor) VALUES($1, $2, $3)"
              " ON CONFLICT (name, k) DO UPDATE"
              " SET floor = GREATEST(" IDM__FLOOR_TABLE ".floor, EXCLUDED.floor)",
              3, types, values, PGRES_COMMAND_OK, true, "cannot raise a floor", &rc);
    PQclear(res);
    return rc;
}

/* Server notices and warnings (a shutdown's "terminating connection") are
 * not errors: a library does not print them on the caller's stderr. */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static void pg_close(void *ctx)
{
    pg_store *p = ctx;
    if (p == NULL)
        return;
    PQfinish(p->conn);
    free(p);
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
int idm__postgres_identity(void *ctx, char *out, size_t cap)
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
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        PGresult *res = run(p, queries[i], 0, NULL, NULL, PGRES_TUPLES_OK, true,
                            "cannot read the store's identity", &rc);
        const char *v;
        if (res == NULL) {
            /* Not allowed or not there: the next query; else the error. */
            if (i + 1 < sizeof queries / sizeof queries[0] &&
                PQstatus(p->conn) == CONNECTION_OK)
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

/* The URL with connect_timeout=5 added unless it sets one, so that an
 * unreachable host fails in seconds rather than the TCP timeout. */
static int with_timeout(const char *url, const char *masked, char *out, size_t cap)
{
    const char *q = strchr(url, '?');
    const char *sep;
    int n;
    if (q != NULL && (strncmp(q + 1, "connect_timeout=", 16) == 0 ||
                      strstr(q, "&connect_timeout=") != NULL)) {
        n = snprintf(out, cap, "%s", url);
    } else {
        /* "...?" or "...?a=b&" already end in a separator. */
        size_t len = strlen(url);
        sep = q == NULL ? "?" : (url[len - 1] == '?' || url[len - 1] == '&') ? "" : "&";
        n = snprintf(out, cap, "%s%s" CONNECT_TIMEOUT, url, sep);
    }
    if (n < 0 || (size_t)n >= cap)
        return idm__seg_fail(IDM_EINVAL, "store: URL '%.60s...' is longer than %zu bytes", masked,
                             cap - 32);
    return 0;
}

static int pg_open(void **ctx, const char *url)
{
    char masked[256], full[MAX_URL], msg[512];
    char *err = NULL;
    PQconninfoOption *info;
    pg_store *p;
    PGresult *res;
    int rc = 0;
    mask_url(url, masked, sizeof masked);
    if (strncmp(url, "postgres://", 11) != 0 && strncmp(url, "postgresql://", 13) != 0)
        return idm__seg_fail(IDM_EINVAL, "store: '%.80s' is not a postgres:// URL", masked);
    if ((rc = with_timeout(url, masked, full, sizeof full)) != 0)
        return rc;
    /* A URL libpq cannot parse is the caller's mistake (IDM_EINVAL), not an
     * unreachable server: parse it first, without connecting. */
    info = PQconninfoParse(full, &err);
    if (info == NULL) {
        one_line(err != NULL ? err : "out of memory", msg, sizeof msg);
        PQfreemem(err);
        return idm__seg_fail(IDM_EINVAL, "store: '%.80s' is not a valid PostgreSQL URL: %s",
                             masked, msg);
    }
    PQconninfoFree(info);
    p = calloc(1, sizeof *p);
    if (p == NULL)
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", masked);
    snprintf(p->url, sizeof p->url, "%s", masked);
    p->conn = PQconnectdb(full);
    if (p->conn == NULL) {
        free(p);
        return idm__seg_fail(IDM_ENOMEM, "store %s: out of memory", masked);
    }
    PQsetNoticeProcessor(p->conn, quiet, NULL);
    if (PQstatus(p->conn) != CONNECTION_OK) {
        one_line(PQerrorMessage(p->conn), msg, sizeof msg);
        rc = idm__seg_fail(IDM_EUNAVAIL, "store %s: cannot connect: %s", masked, msg);
        pg_close(p);
        return rc;
    }
    if ((rc = session_setup(p)) != 0)
        goto fail;
    /* Create the tables only if missing: a role that may use but not create
     * them still opens the store. */
    res = run(p,
              "SELECT to_regclass('" IDM__SEQ_TABLE "') IS NOT NULL"
              " AND to_regclass('" IDM__FLOOR_TABLE "') IS NOT NULL",
              0, NULL, NULL, PGRES_TUPLES_OK, true, "cannot look for the tables", &rc);
    if (res == NULL)
        goto fail;
    if (PQntuples(res) != 1 || PQnfields(res) != 1) {
        PQclear(res);
        rc = idm__seg_fail(IDM_EIO, "store %s: looking for the tables: unexpected answer",
                           masked);
        goto fail;
    }
    if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
        PQclear(res);
        /* One statement string: simple query protocol, one transaction. */
        res = PQexec(p->conn,
                     "BEGIN;"
                     "SELECT pg_advisory_xact_lock(" CREATE_LOCK ");"
                     "CREATE TABLE IF NOT EXISTS " IDM__SEQ_TABLE
                     "(name TEXT PRIMARY KEY, next BIGINT NOT NULL,"
                     " k BIGINT NOT NULL, n BIGINT NOT NULL);"
                     "CREATE TABLE IF NOT EXISTS " IDM__FLOOR_TABLE
                     "(name TEXT NOT NULL, k BIGINT NOT NULL, floor BIGINT NOT NULL,"
                     " PRIMARY KEY (name, k));"
                     "COMMIT");
        if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK) {
            rc = pg_fail(p, res, "cannot create the tables");
            PQclear(res);
            goto fail;
        }
    }
    PQclear(res);
    *ctx = p;
    return 0;
fail:
    pg_close(p);
    return rc;
}

const idm__store_backend idm__store_postgres = {"postgres", &ops, pg_open};
