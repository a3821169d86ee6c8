/* SPDX-License-Identifier: MIT */
/*
 * `idmint audit --postgres URL --query SQL` (see audit_pg.h): the rows of
 * a query, read from PostgreSQL straight into an audit.
 *
 * The session. The URL is checked first, without connecting (libpq parses
 * it; a bad port is said too), so that a mistake in it is told apart from
 * a server out of reach; it is shown in messages only masked. To it are
 * added, unless it gives them, connect_timeout=5 (the connection attempt,
 * made without blocking, ends by then whatever the network does),
 * fallback_application_name=idmint-audit (so that the audit is known in
 * pg_stat_activity) and TCP keepalives (so that a server that vanished
 * while the query runs is noticed within about two minutes). The query
 * itself has no deadline: the first FETCH of a query that sorts a billion
 * rows may run for a long time, and the server is still there while it
 * does (statement_timeout in the URL's options bounds it, if wanted).
 *
 * Then, in one round trip, the session's TimeZone is set to UTC and its
 * DateStyle to ISO (a timestamptz then comes as "2026-01-02
 * 10:00:00.123456+00", a timestamp without time zone as the same without
 * the offset, both of which the audit reads as UTC) and a READ ONLY
 * transaction begins. The query runs as the cursor's query, alone
 * (DECLARE idmint_audit NO SCROLL CURSOR FOR <query>, sent with the
 * extended protocol, which refuses a second statement): only a query that
 * returns rows can be a cursor's (SELECT, VALUES, TABLE, WITH), and in a
 * read-only transaction nothing it calls can write. What the server
 * refuses is the caller's mistake (IDM_EINVAL, with the server's primary
 * message), unless it says the connection or the server itself failed.
 *
 * The rows. FETCH FORWARD BATCH rows at a time until a FETCH brings none,
 * so that memory holds one batch, whatever the table's size. Each FETCH's
 * result describes the columns, even when it has no rows: 1 or 2 of them,
 * or the query is refused. The values come as text, as psql prints them,
 * and go to audit_add with their row number (1-based over the whole
 * query); the engine's messages, "line N: ...", are given as "row N: ...".
 * A NULL id is an error naming the row; a NULL recorded time is a row
 * without one (audit_add never takes a row for a CSV header).
 *
 * The end. ROLLBACK (nothing was written; it closes the cursor), then the
 * connection is closed; on any error it is closed at once (the server
 * rolls the transaction back). A connection lost on the way is
 * IDM_EUNAVAIL, naming the rows read before it.
 */
#include "audit_pg.h"

#include <stdio.h>
#include <string.h>

#include <idmint/idmint.h>

#ifdef IDM_WITH_POSTGRES

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "pq.h"

/* Rows per FETCH: a batch of short texts is a few hundred KiB. */
#define BATCH "10000"
#define CURSOR "idmint_audit"
#define DECLARE "DECLARE " CURSOR " NO SCROLL CURSOR FOR "
#define CONNECT_TIMEOUT_S 5
#define MAX_URL 4096
/* libpq's connect_timeout, as libpq reads it: at least 2 s. */
#define CONNECT_TIMEOUT_MIN_S 2

/* One reader: the connection, the URL for messages, the rows so far. */
typedef struct reader {
    idm__pq pq;
    char url[256]; /* masked */
    uint64_t rows;
    char *err;
    size_t err_len;
} reader;

static int say(reader *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A message into the caller's err; returns rc. */
static int say(reader *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->err_len, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- the URL ---- */

/* url with what the reader adds unless url gives it (see the top): a
 * string for free(), or NULL (err said why). */
static char *conninfo_of(reader *r, const char *url, int *rc)
{
    static const char *const extra[] = {
        "connect_timeout=5",          "fallback_application_name=idmint-audit",
        "keepalives_idle=60",         "keepalives_interval=10",
        "keepalives_count=6",
    };
    size_t len = strlen(url), cap = len + 160, used;
    char *s;
    if (len > MAX_URL) {
        *rc = say(r, IDM_EINVAL, "--postgres '%.60s...' is longer than %d bytes", r->url,
                  MAX_URL);
        return NULL;
    }
    if ((s = malloc(cap)) == NULL) {
        *rc = IDM_ENOMEM;
        return NULL;
    }
    memcpy(s, url, len + 1);
    used = len;
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        char key[40];
        size_t k = strcspn(extra[i], "=") + 1;
        memcpy(key, extra[i], k);
        key[k] = '\0';
        if (idm__pq_url_sets(s, key))
            continue;
        used += (size_t)snprintf(s + used, cap - used, "%s%s", idm__pq_url_sep(s), extra[i]);
    }
    return s;
}

/* A bad port is the URL's mistake, said before any connection (as the
 * lease backend does). */
static int check_ports(reader *r, const PQconninfoOption *info)
{
    int n;
    const char *v = idm__pq_bad_port(info, &n);
    if (v == NULL)
        return 0;
    return say(r, IDM_EINVAL,
               "--postgres '%.80s' is not a valid PostgreSQL URL: port '%.*s' is not 1 to "
               "65535",
               r->url, n, v);
}

/* The URL checked and made into r->pq.conninfo, without connecting. */
static int prepare(reader *r, const char *url)
{
    char msg[256];
    int rc = 0;
    if (strncmp(url, "postgres://", 11) != 0 && strncmp(url, "postgresql://", 13) != 0)
        return say(r, IDM_EINVAL,
                   "--postgres '%.80s' is not a valid PostgreSQL URL: it must start with "
                   "postgres:// or postgresql://",
                   r->url);
    /* The URL as given first, so that libpq's words quote it alone. */
    PQconninfoOption *info = idm__pq_parse(url, msg, sizeof msg);
    if (info == NULL)
        return say(r, IDM_EINVAL, "--postgres '%.80s' is not a valid PostgreSQL URL: %s",
                   r->url, msg);
    rc = check_ports(r, info);
    PQconninfoFree(info);
    if (rc != 0 || (r->pq.conninfo = conninfo_of(r, url, &rc)) == NULL)
        return rc;
    /* What was added parses too (a URL that ends in a '#', say, would not). */
    if ((info = idm__pq_parse(r->pq.conninfo, msg, sizeof msg)) == NULL)
        return say(r, IDM_EINVAL, "--postgres '%.80s' is not a valid PostgreSQL URL: %s",
                   r->url, msg);
    PQconninfoFree(info);
    return 0;
}

/* ---- the connection ---- */

/* connect_timeout as libpq reads it from the connection's options, in
 * seconds (at least 2; 0 or less: none, taken as the default here, since
 * a connection made without blocking is bounded by the caller alone). */
static int64_t connect_timeout_s(PGconn *conn)
{
    PQconninfoOption *opts = PQconninfo(conn);
    int64_t s = CONNECT_TIMEOUT_S;
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        int64_t v;
        if (strcmp(o->keyword, "connect_timeout") != 0 || o->val == NULL)
            continue;
        if (idm__pq_parse_i64(o->val, &v) == 0 && v > 0)
            s = v < CONNECT_TIMEOUT_MIN_S ? CONNECT_TIMEOUT_MIN_S : v > 86400 ? 86400 : v;
        break;
    }
    PQconninfoFree(opts);
    return s;
}

static int connect_to(reader *r)
{
    if (idm__pq_start(&r->pq) != 0)
        return say(r, IDM_ENOMEM, "--postgres %s: out of memory connecting", r->url);
    int64_t ct = connect_timeout_s(r->pq.conn);
    switch (idm__pq_connect(&r->pq, idm__mono_ns() + ct * 1000 * IDM__PQ_NS_PER_MS)) {
    case IDM__PQ_CONNECTED:
        /* No deadline for the statements (see the top). */
        r->pq.deadline = INT64_MAX;
        return 0;
    case IDM__PQ_LATE:
        return say(r, IDM_EUNAVAIL,
                   "--postgres %s: cannot connect: no answer within connect_timeout (%" PRId64
                   " s)",
                   r->url, ct);
    case IDM__PQ_BLOCKING:
        return say(r, IDM_EIO, "--postgres %s: cannot make the connection non-blocking: %s",
                   r->url, r->pq.dropped);
    default:
        return say(r, IDM_EUNAVAIL, "--postgres %s: cannot connect: %s", r->url,
                   r->pq.dropped);
    }
}

/* ---- statements ---- */

/* Whether a failed statement's SQLSTATE says the connection or the server
 * failed (connection exceptions, shutdown or cancel, out of resources,
 * system errors) rather than the query. */
static bool server_failed(const char *state)
{
    return state == NULL || strncmp(state, "08", 2) == 0 || strncmp(state, "53", 2) == 0 ||
           strncmp(state, "57", 2) == 0 || strncmp(state, "58", 2) == 0;
}

/* The first word of the query, lower-cased into buf (at most cap - 1
 * letters; comments are not skipped). */
static const char *first_word(const char *q, char *buf, size_t cap)
{
    size_t n = 0;
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r' || *q == '(')
        q++;
    for (; n + 1 < cap && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')); q++)
        buf[n++] = (char)(*q | 0x20);
    buf[n] = '\0';
    return buf;
}

/*
 * A statement that did not give what it should: res (NULL if none came).
 * The connection gone, or the server failing, is IDM_EUNAVAIL; anything
 * else the server refused is the query's fault, IDM_EINVAL, with the
 * server's primary message (and, for the DECLARE, where in the query, and
 * a reminder that only a query that returns rows can be read).
 */
static int failed(reader *r, PGresult *res, const char *what, const char *query)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char msg[300], where[64] = "", word[16];
    if (primary == NULL || *primary == '\0')
        primary = r->pq.conn != NULL ? PQerrorMessage(r->pq.conn) : r->pq.dropped;
    idm__text_line(primary, r->pq.conninfo, msg, sizeof msg);
    if (idm__pq_lost(&r->pq) || server_failed(state))
        return say(r, IDM_EUNAVAIL, "--postgres %s: %s after row %" PRIu64 ": %s", r->url, what,
                   r->rows, msg);
    if (res != NULL && PQresultStatus(res) != PGRES_FATAL_ERROR &&
        PQresultStatus(res) != PGRES_NONFATAL_ERROR)
        return say(r, IDM_EIO, "--postgres %s: %s: unexpected answer %s", r->url, what,
                   PQresStatus(PQresultStatus(res)));
    if (query == NULL)
        return say(r, IDM_EINVAL, "--query: %s after row %" PRIu64 ": the server refused it: %s",
                   what, r->rows, msg);
    const char *pos = PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION);
    long p = pos != NULL ? strtol(pos, NULL, 10) - (long)strlen(DECLARE) : 0;
    if (p > 0)
        snprintf(where, sizeof where, " (at character %ld of the query)", p);
    first_word(query, word, sizeof word);
    bool rows = strcmp(word, "select") == 0 || strcmp(word, "with") == 0 ||
                strcmp(word, "values") == 0 || strcmp(word, "table") == 0;
    return say(r, IDM_EINVAL, "--query: the server refused it: %s%s%s", msg, where,
               rows || state == NULL || strcmp(state, "42601") != 0
                   ? ""
                   : "; only a query that returns rows (SELECT, VALUES, TABLE) can be read, "
                     "in a read-only transaction");
}

/* One statement (alone, with the extended protocol; or, with simple, a
 * simple query of several), whose result must be want: the result, or
 * NULL with *rc set. */
static PGresult *exec(reader *r, const char *sql, bool simple, ExecStatusType want,
                      const char *what, const char *query, int *rc)
{
    bool timed_out = false;
    PGresult *res = idm__pq_exchange(&r->pq, sql, simple ? -1 : 0, NULL, NULL, &timed_out);
    if (res != NULL && PQresultStatus(res) == want)
        return res;
    *rc = failed(r, res, what, query);
    PQclear(res);
    return NULL;
}

/* ---- the rows ---- */

/* The engine's "line N: ..." as "row N: ...". */
static void as_row(reader *r, const char *msg)
{
    if (strncmp(msg, "line ", 5) == 0)
        snprintf(r->err, r->err_len, "row %s", msg + 5);
    else
        snprintf(r->err, r->err_len, "%s", msg);
}

static int add_row(reader *r, audit *a, PGresult *res, int i, int cols)
{
    char msg[512];
    uint64_t row = r->rows + 1;
    if (PQgetisnull(res, i, 0))
        return say(r, IDM_EPARSE, "row %" PRIu64 ": the id (column 1) is NULL", row);
    const char *id = PQgetvalue(res, i, 0);
    const char *rec = cols == 2 && !PQgetisnull(res, i, 1) ? PQgetvalue(res, i, 1) : NULL;
    msg[0] = '\0';
    int rc = audit_add(a, id, rec, row, msg, sizeof msg);
    if (rc != 0) {
        if (msg[0] != '\0')
            as_row(r, msg);
        return rc;
    }
    r->rows = row;
    return 0;
}

/* FETCH until a batch comes empty. */
static int read_rows(reader *r, audit *a)
{
    int rc = 0;
    for (;;) {
        PGresult *res = exec(r, "FETCH FORWARD " BATCH " FROM " CURSOR, false, PGRES_TUPLES_OK,
                             "reading the rows", NULL, &rc);
        if (res == NULL)
            return rc;
        int cols = PQnfields(res), n = PQntuples(res);
        if (cols < 1 || cols > 2) {
            PQclear(res);
            return say(r, IDM_EINVAL,
                       "--query gives %d columns: it must give 1 (the id) or 2 (the id, then "
                       "the time its row was recorded)",
                       cols);
        }
        for (int i = 0; i < n && rc == 0; i++)
            rc = add_row(r, a, res, i, cols);
        PQclear(res);
        if (rc != 0 || n == 0)
            return rc;
    }
}

/* The whole read on a connection made: the session, the cursor, the rows,
 * the ROLLBACK. */
static int run_query(reader *r, audit *a, const char *query)
{
    int rc = 0;
    PGresult *res = exec(r,
                         "SET TimeZone TO 'UTC'; SET DateStyle TO 'ISO, YMD';"
                         " BEGIN TRANSACTION READ ONLY",
                         true, PGRES_COMMAND_OK, "starting a read-only transaction", NULL, &rc);
    if (res == NULL)
        return rc;
    PQclear(res);
    size_t n = strlen(DECLARE) + strlen(query) + 1;
    char *sql = malloc(n);
    if (sql == NULL)
        return IDM_ENOMEM;
    snprintf(sql, n, DECLARE "%s", query);
    res = exec(r, sql, false, PGRES_COMMAND_OK, "declaring the cursor", query, &rc);
    free(sql);
    if (res == NULL)
        return rc;
    PQclear(res);
    if ((rc = read_rows(r, a)) != 0)
        return rc;
    res = exec(r, "ROLLBACK", false, PGRES_COMMAND_OK, "ending the transaction", NULL, &rc);
    PQclear(res);
    return res == NULL ? rc : 0;
}

int audit_read_postgres(audit *a, const char *url, const char *query, uint64_t *rows,
                        char *err, size_t err_len)
{
    reader r;
    memset(&r, 0, sizeof r);
    r.err = err;
    r.err_len = err_len;
    idm__url_mask(url, r.url, sizeof r.url);
    int rc = prepare(&r, url);
    if (rc == 0)
        rc = connect_to(&r);
    if (rc == 0)
        rc = run_query(&r, a, query);
    /* Closed on success and on error alike: on an error the server rolls
     * the transaction back. */
    if (r.pq.conn != NULL)
        PQfinish(r.pq.conn);
    free(r.pq.conninfo);
    *rows = r.rows;
    return rc;
}

#else /* !IDM_WITH_POSTGRES */

int audit_read_postgres(audit *a, const char *url, const char *query, uint64_t *rows,
                        char *err, size_t err_len)
{
    (void)a;
    (void)url;
    (void)query;
    *rows = 0;
    snprintf(err, err_len,
             "--postgres: this idmint was built without PostgreSQL (IDM_WITH_POSTGRES=OFF)");
    return IDM_EINVAL;
}

#endif /* IDM_WITH_POSTGRES */
