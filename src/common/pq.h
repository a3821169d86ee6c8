/* SPDX-License-Identifier: MIT */
/*
 * libpq within a deadline, for the two PostgreSQL backends (the ticket
 * store and the lease coordinator): a connection made with PQconnectStart
 * and PQconnectPoll, statements sent with PQsendQueryParams and PQflush,
 * answers read with PQconsumeInput, PQisBusy and PQgetResult, each wait a
 * poll() on the socket until a deadline on CLOCK_MONOTONIC, so that no
 * server or network can hang a call past it. (libpq's blocking calls wait
 * as long as the kernel's TCP retries; statement_timeout runs on the
 * server, which may be out of reach.)
 *
 * Header-only, static inline: libidmint itself never links libpq, and
 * every file of src/common/ is compiled into every library. Included only
 * by the backends that link libpq. Nothing here sets an error detail: the
 * callers name what failed in their own words.
 */
#ifndef IDM_COMMON_PQ_H
#define IDM_COMMON_PQ_H

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <libpq-fe.h>

#include "common.h"

#define IDM__PQ_NS_PER_MS INT64_C(1000000)

/* One connection and the deadline of the call in progress. */
typedef struct idm__pq {
    PGconn *conn;      /* NULL: none (dropped; the next call connects) */
    bool ready;        /* this session has run its setup */
    int64_t deadline;  /* the call in progress must end by then (monotonic ns) */
    char *conninfo;    /* the URL libpq connects with; its passwords never shown */
    char dropped[512]; /* why the connection was last dropped: libpq's words, one line */
    _Atomic uint64_t *round_trips; /* if not NULL, counts every statement sent */
    /* The owner's: a new connection made (0, else its error), and the
     * session set up on it (0 and ready, else its error). */
    int (*connect)(void *owner);
    int (*setup)(void *owner);
    void *owner;
} idm__pq;

/* Strictly a decimal int64 as PostgreSQL prints one: an optional '-', then
 * digits, nothing else, no overflow. */
static inline int idm__pq_parse_i64(const char *s, int64_t *out)
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

/* Whether url's query sets key (given with its '=', "connect_timeout="). */
static inline bool idm__pq_url_sets(const char *url, const char *key)
{
    const char *q = strchr(url, '?');
    size_t n = strlen(key);
    if (q == NULL)
        return false;
    if (strncmp(q + 1, key, n) == 0)
        return true;
    for (const char *s = strstr(q, key); s != NULL; s = strstr(s + 1, key))
        if (s[-1] == '&')
            return true;
    return false;
}

/* What goes between url and one more query parameter: "?" if it has no
 * query, "" if it ends in a separator ("...?" or "...?a=b&"), else "&". */
static inline const char *idm__pq_url_sep(const char *url)
{
    size_t len = strlen(url);
    if (strchr(url, '?') == NULL)
        return "?";
    return url[len - 1] == '?' || url[len - 1] == '&' ? "" : "&";
}

/* Parse conninfo without connecting: a URL libpq cannot parse is the
 * caller's mistake, not an unreachable server. NULL with libpq's words in
 * msg (one line, passwords masked) if it cannot; else the options, for
 * PQconninfoFree. */
static inline PQconninfoOption *idm__pq_parse(const char *conninfo, char *msg, size_t cap)
{
    char *err = NULL;
    PQconninfoOption *info = PQconninfoParse(conninfo, &err);
    if (info == NULL)
        idm__text_line(err != NULL ? err : "out of memory", conninfo, msg, cap);
    PQfreemem(err);
    return info;
}

/* libpq checks port numbers only when it connects: a bad one is the
 * URL's mistake, to be said before any connection. Each of a multi-host
 * list (comma-separated, empty for the default) 1 to 65535. NULL if all
 * are; else the first bad one, *n its length. */
static inline const char *idm__pq_bad_port(const PQconninfoOption *info, int *n)
{
    for (const PQconninfoOption *o = info; o->keyword != NULL; o++) {
        const char *v = o->val;
        if (strcmp(o->keyword, "port") != 0 || v == NULL)
            continue;
        while (*v != '\0') {
            size_t len = strcspn(v, ",");
            long port = 0;
            for (size_t i = 0; i < len && port <= 65535; i++)
                port = v[i] >= '0' && v[i] <= '9' ? port * 10 + (v[i] - '0') : 65536;
            if (len > 0 && (port < 1 || port > 65535)) {
                *n = (int)(len < 12 ? len : 12);
                return v;
            }
            v += len + (v[len] == ',');
        }
    }
    return NULL;
}

/* Server notices and warnings ("table exists, skipping", a shutdown's
 * "terminating connection") are not errors: a library does not print them
 * on the caller's stderr. */
static inline void idm__pq_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* A call starts: it must end within budget_ms from now. */
static inline void idm__pq_begin(idm__pq *c, int64_t budget_ms)
{
    c->deadline = idm__mono_ns() + budget_ms * IDM__PQ_NS_PER_MS;
}

/* Wait until fd is ready for events (POLLIN, POLLOUT) or until (monotonic
 * ns) passes. The events that came (an error or a hang-up counts: libpq
 * finds out what it was), 0 when until passed, -1 if fd cannot be waited
 * on. */
static inline int idm__pq_wait(int fd, short events, int64_t until)
{
    if (fd < 0)
        return -1;
    for (;;) {
        struct pollfd pf = {fd, events, 0};
        int64_t left = until - idm__mono_ns();
        int r;
        if (left <= 0)
            return 0;
        /* Rounded up: waking early would only poll again. */
        left = (left + IDM__PQ_NS_PER_MS - 1) / IDM__PQ_NS_PER_MS;
        r = poll(&pf, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0)
            return pf.revents != 0 ? pf.revents : events;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* Drop the connection (the next call makes a new one), keeping libpq's
 * last words in c->dropped. */
static inline void idm__pq_drop(idm__pq *c)
{
    if (c->conn != NULL) {
        const char *m = PQerrorMessage(c->conn);
        if (m != NULL && *m != '\0')
            idm__text_line(m, c->conninfo, c->dropped, sizeof c->dropped);
        PQfinish(c->conn);
    }
    c->conn = NULL;
    c->ready = false;
}

/* The connection is gone, or was never made. */
static inline bool idm__pq_lost(const idm__pq *c)
{
    return c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK;
}

/* Start a new connection (the old one, if any, dropped): 0, or -1 if
 * libpq could not (out of memory). idm__pq_connect makes it. */
static inline int idm__pq_start(idm__pq *c)
{
    idm__pq_drop(c);
    c->conn = PQconnectStart(c->conninfo);
    if (c->conn == NULL)
        return -1;
    PQsetNoticeProcessor(c->conn, idm__pq_quiet, NULL);
    return 0;
}

/* What idm__pq_connect did. */
enum {
    IDM__PQ_CONNECTED,
    IDM__PQ_LATE,     /* until passed first: the attempt is dropped */
    IDM__PQ_FAILED,   /* no connection: c->dropped says why */
    IDM__PQ_BLOCKING, /* connected, but not made non-blocking: c->dropped says why */
};

/* Make the connection idm__pq_start began, by until; non-blocking from
 * then on. Anything but IDM__PQ_CONNECTED leaves none. */
static inline int idm__pq_connect(idm__pq *c, int64_t until)
{
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    bool connected;
    /* PQconnectStart has begun: libpq asks to be polled as after WRITING. */
    while (PQstatus(c->conn) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
           st != PGRES_POLLING_FAILED) {
        int ev = st == PGRES_POLLING_READING   ? POLLIN
                 : st == PGRES_POLLING_WRITING ? POLLOUT
                                               : 0; /* ACTIVE: poll libpq again now */
        if (ev != 0) {
            /* The socket changes from host to host: ask each time. */
            int r = idm__pq_wait(PQsocket(c->conn), (short)ev, until);
            if (r == 0) {
                idm__pq_drop(c);
                return IDM__PQ_LATE;
            }
            if (r < 0)
                break; /* libpq's message says why */
        }
        st = PQconnectPoll(c->conn);
    }
    connected = PQstatus(c->conn) == CONNECTION_OK && st == PGRES_POLLING_OK;
    if (connected && PQsetnonblocking(c->conn, 1) == 0)
        return IDM__PQ_CONNECTED;
    idm__text_line(PQerrorMessage(c->conn), c->conninfo, c->dropped, sizeof c->dropped);
    PQfinish(c->conn);
    c->conn = NULL;
    return connected ? IDM__PQ_BLOCKING : IDM__PQ_FAILED;
}

/*
 * One round trip on the connection, within the call's deadline: sql with
 * nparams text parameters of the given types (the extended protocol, one
 * statement), or with nparams < 0 as a simple query (several statements;
 * no parameters). Returns its result: the last, or the first error if one
 * came (as PQexec does). NULL when there is none: the deadline passed
 * (*timed_out; the connection is still there, for the caller to drop) or
 * the connection failed (libpq's words in its error message or, dropped,
 * in c->dropped).
 */
static inline PGresult *idm__pq_exchange(idm__pq *c, const char *sql, int nparams,
                                         const unsigned *types, const char *const *values,
                                         bool *timed_out)
{
    PGconn *conn = c->conn;
    PGresult *res = NULL, *r;
    int ev;
    *timed_out = false;
    if (c->round_trips != NULL)
        atomic_fetch_add(c->round_trips, 1);
    if (!(nparams >= 0 ? PQsendQueryParams(conn, sql, nparams, types, values, NULL, NULL, 0)
                       : PQsendQuery(conn, sql)))
        return NULL;
    /* Send it all; the server may answer meanwhile (read what comes so
     * that neither side waits on a full buffer). */
    for (;;) {
        int f = PQflush(conn);
        if (f == 0)
            break;
        if (f < 0)
            return NULL;
        ev = idm__pq_wait(PQsocket(conn), POLLIN | POLLOUT, c->deadline);
        if (ev == 0) {
            *timed_out = true;
            return NULL;
        }
        if (ev < 0)
            return NULL;
        if ((ev & POLLIN) != 0 && !PQconsumeInput(conn))
            break; /* lost: PQgetResult reports it */
    }
    /* Read every result, until PQgetResult says there is no more. */
    for (;;) {
        while (!PQisBusy(conn)) {
            ExecStatusType st;
            if ((r = PQgetResult(conn)) == NULL)
                return res;
            st = PQresultStatus(r);
            if (res != NULL && PQresultStatus(res) == PGRES_FATAL_ERROR) {
                PQclear(r);
            } else {
                PQclear(res);
                res = r;
            }
            /* No statement here copies: a session in COPY is not ours to
             * finish. Dropped; the caller finds the answer unexpected. */
            if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) {
                idm__pq_drop(c);
                return res;
            }
        }
        ev = idm__pq_wait(PQsocket(conn), POLLIN, c->deadline);
        if (ev == 0) {
            PQclear(res);
            *timed_out = true;
            return NULL;
        }
        /* Lost? libpq reports that as a result once the connection is
         * marked bad; if it is not (still busy), PQgetResult could block:
         * drop it instead, keeping its message. */
        if ((ev < 0 || !PQconsumeInput(conn)) && PQisBusy(conn)) {
            PQclear(res);
            idm__pq_drop(c);
            return NULL;
        }
    }
}

/* What idm__pq_run found. */
enum {
    IDM__PQ_RAN,        /* *res has the status wanted */
    IDM__PQ_NO_SESSION, /* idm__pq_ensure failed: *rc says why */
    IDM__PQ_TIMED_OUT,  /* the deadline passed: the connection is there, for the caller to drop */
    IDM__PQ_LOST,       /* the connection broke (again, if retry): the outcome is unknown */
    IDM__PQ_REFUSED,    /* any other answer, *res (NULL if none came) */
};

/* A connection with a session set up: made again if it was lost or
 * dropped (within the call's deadline). 0, or the owner's error. */
static inline int idm__pq_ensure(idm__pq *c)
{
    int rc;
    if (idm__pq_lost(c) && (rc = c->connect(c->owner)) != 0)
        return rc;
    return c->ready ? 0 : c->setup(c->owner);
}

/*
 * Run one statement (as idm__pq_exchange) on a connection with a session
 * (idm__pq_ensure; if it fails, *rc is its error). If it
 * fails with the connection broken and retry is set, the statement runs
 * once more as if for the first time, on a new connection, within the same
 * deadline: only for statements that may run twice. *res: the result, for
 * the caller to clear, when IDM__PQ_RAN, IDM__PQ_LOST or IDM__PQ_REFUSED.
 */
static inline int idm__pq_run(idm__pq *c, const char *sql, int nparams, const unsigned *types,
                              const char *const *values, ExecStatusType want, bool retry,
                              PGresult **res, int *rc)
{
    for (int attempt = 0;; attempt++) {
        bool timed_out = false;
        *res = NULL;
        if ((*rc = idm__pq_ensure(c)) != 0)
            return IDM__PQ_NO_SESSION;
        *res = idm__pq_exchange(c, sql, nparams, types, values, &timed_out);
        if (timed_out)
            return IDM__PQ_TIMED_OUT;
        if (*res != NULL && PQresultStatus(*res) == want)
            return IDM__PQ_RAN;
        if (!idm__pq_lost(c))
            return IDM__PQ_REFUSED;
        if (!retry || attempt > 0)
            return IDM__PQ_LOST;
        PQclear(*res);
    }
}

#endif /* IDM_COMMON_PQ_H */
