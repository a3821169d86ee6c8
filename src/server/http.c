/* SPDX-License-Identifier: MIT */
/*
 * idmintd's HTTP layer on GNU libmicrohttpd (chosen over libevent's evhttp
 * after measuring both, bench/server/: 1.5 to 2 times the requests a second
 * on two cores, and a connection limit, per-address connection limit,
 * per-connection memory limit, idle timeout and backing off when out of file
 * descriptors built in).
 *
 * Threads (http.h): an epoll loop in each thread of MHD's pool. Each request
 * keeps its raw URI (from MHD's URI log callback, before any unescaping), so
 * the handler sees exactly what was sent and refuses percent-encoding
 * instead of guessing. A body on a GET is read and dropped up to 1 KiB; a
 * larger one is 413.
 *
 * Slow clients: MHD's idle timeout starts again with every byte, so a
 * client trickling a header byte every few seconds would hold its
 * connection for ever. The watchdog gives every connection head-timeout to
 * send a whole request, from its start or from the end of its previous
 * answer, and shuts the socket down when that passes (MHD then closes it as
 * a client that hung up). No more than max-connections-per-ip connections
 * come from one address. The admin listener's connections of its own answer
 * health checks while slow clients hold every connection of the main one.
 *
 * Limits MHD does not check, checked here once a request's head is in:
 * max-request on the request line and headers as sent (MHD's memory limit
 * is larger: it also holds the answer), 414 for a request line alone over
 * it, 431 for the whole head; Content-Length headers with different values
 * are 400 and close the connection (RFC 9112 6.3; MHD refuses one with
 * Transfer-Encoding itself). Answers MHD makes itself are counted
 * through its error log (on_mhd_log).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common.h"
#include "http.h"

#define MAX_BODY 1024
#define DRAIN_MS 5000
/* Room MHD needs besides the request head: the parsed headers' records and
 * the answer's headers. */
#define MHD_POOL_EXTRA 8192
/* The admin listener's own limits: a few monitoring clients. */
#define ADMIN_CONNECTIONS 64u
#define ADMIN_PER_IP 8u
/* A connection's deadline: none (a request is being answered), or cut. */
#define NO_DEADLINE INT64_C(0)
#define CUT INT64_C(-1)

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

/* One open connection, as the watchdog sees it. */
typedef struct conn {
    struct conn *prev, *next;
    MHD_socket fd;
    /* CLOCK_MONOTONIC ns by which the next request must be complete;
     * NO_DEADLINE while one is answered; CUT once the watchdog shut the
     * socket down. Written by the connection's MHD thread and the watchdog. */
    _Atomic int64_t deadline;
} conn;

typedef struct listener {
    struct MHD_Daemon *d;
    struct idmd_http *h;
    bool admin; /* serves /healthz, /metrics and /ping only */
    int port;
} listener;

struct idmd_http {
    listener main, admin;
    idmd_app *app;
    size_t max_request;
    int64_t head_timeout_ns;
    _Atomic int inflight;
    /* The watchdog and its list of connections (mu guards conns, stop). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn *conns;
    bool stop;
    bool watchdog_started;
    pthread_t watchdog;
};

/* What check_head may find wrong with a request's head. */
enum refusal {
    HEAD_OK,
    HEAD_LINE_TOO_LONG,  /* 414 */
    HEAD_TOO_LARGE,      /* 431 */
    HEAD_LENGTHS_DIFFER  /* 400: Content-Length twice, two values */
};

typedef struct req_ctx {
    char *uri;          /* raw request target, as sent */
    int64_t t0;         /* CLOCK_MONOTONIC ns at arrival */
    size_t body;        /* bytes of body seen */
    bool counted;       /* in inflight */
    bool started;       /* the access handler has been called once */
    /* What check_head found in the head, answered once the request is
     * complete: an answer queued before then is built in what is left of
     * the connection's memory after the head, which a head just under
     * that memory leaves too little of (the client got nothing at all). */
    enum refusal refused;
    size_t head_bytes;  /* of the request line, or of the whole head */
} req_ctx;

/* ------------------------------------------------------------ the watchdog */

static conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    listener *ls = cls;
    idmd_http *h = ls->h;
    conn *k;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci == NULL)
            return;
        k = calloc(1, sizeof *k);
        if (k == NULL) {
            /* Unwatched, it could be held for ever: hang up instead. */
            shutdown(ci->connect_fd, SHUT_RDWR);
            return;
        }
        k->fd = ci->connect_fd;
        atomic_init(&k->deadline, idm__mono_ns() + h->head_timeout_ns);
        pthread_mutex_lock(&h->mu);
        k->next = h->conns;
        if (h->conns != NULL)
            h->conns->prev = k;
        h->conns = k;
        pthread_mutex_unlock(&h->mu);
        *socket_context = k;
        return;
    }
    /* MHD_CONNECTION_NOTIFY_CLOSED comes before MHD closes the socket: once
     * the connection is off the list, the watchdog cannot touch its fd. */
    k = *socket_context;
    if (k == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    if (k->prev != NULL)
        k->prev->next = k->next;
    else
        h->conns = k->next;
    if (k->next != NULL)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&h->mu);
    free(k);
    *socket_context = NULL;
}

static void *watchdog(void *arg)
{
    idmd_http *h = arg;
    /* Cut within an eighth of the timeout, at most 250 ms late. */
    int64_t period = h->head_timeout_ns / 8;
    if (period < 10 * 1000000)
        period = 10 * 1000000;
    if (period > 250 * 1000000)
        period = 250 * 1000000;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        int64_t now = idm__mono_ns(), wake = now + period;
        struct timespec ts = {(time_t)(wake / 1000000000), (long)(wake % 1000000000)};
        for (conn *k = h->conns; k != NULL; k = k->next) {
            int64_t d = atomic_load(&k->deadline);
            if (d > 0 && now >= d && atomic_compare_exchange_strong(&k->deadline, &d, CUT))
                shutdown(k->fd, SHUT_RDWR);
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ------------------------------------------------------------ requests */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    req_ctx *r = calloc(1, sizeof *r);
    (void)cls;
    (void)c;
    if (r == NULL)
        return NULL;
    r->uri = strdup(uri != NULL ? uri : "");
    r->t0 = idm__mono_ns();
    if (r->uri == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode why)
{
    listener *ls = cls;
    idmd_http *h = ls->h;
    req_ctx *r = *con_cls;
    conn *k = conn_of(c);
    int64_t cur = k != NULL ? atomic_load(&k->deadline) : CUT;
    (void)why;
    /* The answer is out (or the request ended): the connection may carry
     * another request, which gets its own head-timeout from now (unless the
     * watchdog has cut the connection). */
    while (cur != CUT &&
           !atomic_compare_exchange_weak(&k->deadline, &cur, idm__mono_ns() + h->head_timeout_ns))
        ;
    if (r == NULL)
        return;
    if (r->counted)
        atomic_fetch_sub(&h->inflight, 1);
    free(r->uri);
    free(r);
    *con_cls = NULL;
}

/* Keep URIs as they are: the handler refuses what it does not expect. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

/*
 * MHD's error log: the answers MHD makes itself (431 or 414 for a head
 * larger than its memory, 400 for a malformed request...) reach no handler;
 * they are counted here, from the one message MHD logs for each, with the
 * status as its first argument. Everything else MHD logs is dropped.
 */
static void on_mhd_log(void *cls, const char *fm, va_list ap)
{
    static const char answered[] = "Error processing request (HTTP response code is %u";
    idmd_http *h = cls;
    if (fm != NULL && strncmp(fm, answered, sizeof answered - 1) == 0) {
        unsigned status = va_arg(ap, unsigned);
        idmd_count(h->app, (int)status, 0);
    }
}

static mhd_result send_response(idmd_http *h, struct MHD_Connection *c, req_ctx *r,
                                idmd_response *rs, bool close_after)
{
    struct MHD_Response *resp;
    mhd_result ret;
    char ra[16];
    if (rs->oom) {
        free(rs->body);
        rs->body = strdup("{\"error\":{\"status\":500,\"message\":\"out of memory\"}}\n");
        rs->len = rs->body != NULL ? strlen(rs->body) : 0;
        rs->status = 500;
        rs->content_type = "application/json";
    }
    resp = MHD_create_response_from_buffer(rs->len, rs->body != NULL ? rs->body : (void *)"",
                                           rs->body != NULL ? MHD_RESPMEM_MUST_FREE
                                                            : MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        free(rs->body);
        return MHD_NO;
    }
    rs->body = NULL; /* MHD frees it */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rs->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                            rs->cache_control != NULL ? rs->cache_control : "no-store");
    if (rs->location != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, rs->location);
    if (rs->csp != NULL)
        MHD_add_response_header(resp, "Content-Security-Policy", rs->csp);
    if (rs->nosniff)
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (rs->retry_after_s > 0) {
        snprintf(ra, sizeof ra, "%d", rs->retry_after_s);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (rs->www_authenticate)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (rs->status == 405)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                rs->allow != NULL ? rs->allow : "GET");
    if (close_after)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(c, (unsigned)rs->status, resp);
    MHD_destroy_response(resp);
    idmd_count(h->app, rs->status, idm__mono_ns() - r->t0);
    return ret;
}

/* What the head's headers add up to, as sent ("Name: value\r\n" each), and
 * whether their Content-Lengths agree (MHD reads the first). */
typedef struct head_scan {
    size_t bytes;
    const char *length;  /* the first Content-Length */
    size_t length_len;
    bool length_conflict; /* another Content-Length with another value */
} head_scan;

static mhd_result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                              size_t key_size, const char *value, size_t value_size)
{
    head_scan *s = cls;
    (void)kind;
    s->bytes += key_size + 2 + value_size + 2;
    if (value == NULL)
        value = "";
    if (key_size == 14 && strncasecmp(key, "Content-Length", 14) == 0) {
        if (s->length == NULL) {
            s->length = value;
            s->length_len = value_size;
        } else if (value_size != s->length_len || memcmp(value, s->length, value_size) != 0) {
            s->length_conflict = true;
        }
    }
    return MHD_YES;
}

/* The checks on a request's head, once it is in, into r->refused. */
static void check_head(idmd_http *h, struct MHD_Connection *c, req_ctx *r, const char *method,
                       const char *version)
{
    head_scan s = {0};
    size_t line = strlen(method) + 1 + strlen(r->uri) + 1 + strlen(version) + 2;
    r->head_bytes = line;
    if (line > h->max_request) {
        r->refused = HEAD_LINE_TOO_LONG;
        return;
    }
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, scan_header, &s);
    r->head_bytes = line + s.bytes + 2;
    if (r->head_bytes > h->max_request)
        r->refused = HEAD_TOO_LARGE;
    else if (s.length_conflict)
        r->refused = HEAD_LENGTHS_DIFFER;
}

/*
 * The answer for what check_head found. True if the connection must close
 * after it: after a framing error its bytes cannot be trusted (what MHD
 * read as the body may be the next request, RFC 9112 6.3).
 */
static bool refusal(const idmd_http *h, const req_ctx *r, idmd_response *rs)
{
    if (r->refused == HEAD_LINE_TOO_LONG) {
        idmd_fail(rs, 414, NULL, "the request line is %zu bytes, over max-request (%zu)",
                  r->head_bytes, h->max_request);
        return false;
    }
    if (r->refused == HEAD_TOO_LARGE) {
        idmd_fail(rs, 431, NULL,
                  "the request line and headers are %zu bytes, over max-request (%zu)",
                  r->head_bytes, h->max_request);
        return false;
    }
    idmd_fail(rs, 400, NULL, "Content-Length headers with different values");
    return true;
}

static mhd_result on_request(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    listener *ls = cls;
    idmd_http *h = ls->h;
    req_ctx *r = *con_cls;
    idmd_response rs = {0};
    idmd_request rq;
    conn *k;
    char *q;
    (void)url;
    (void)upload;
    if (r == NULL) /* no context: out of memory in on_uri */
        return MHD_NO;
    if (!r->started) {
        /* The headers are in; a body, if any, follows. Answering before it
         * is read would make MHD close the connection (no keep-alive).
         * From here the request is in flight (a client that hung up before
         * its headers were complete never was). */
        r->started = true;
        r->counted = true;
        atomic_fetch_add(&h->inflight, 1);
        check_head(h, c, r, method, version);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        r->body += *upload_size;
        *upload_size = 0;
        return MHD_YES; /* read on; answered when the body is complete */
    }
    /* The whole request is in, in time: no deadline while it is answered (or
     * the watchdog cut it: then nothing is minted for a client that is gone). */
    if ((k = conn_of(c)) != NULL && atomic_exchange(&k->deadline, NO_DEADLINE) == CUT)
        return MHD_NO;
    if (r->refused != HEAD_OK) {
        bool close_after = refusal(h, r, &rs);
        return send_response(h, c, r, &rs, close_after);
    }
    if (r->body > MAX_BODY) {
        idmd_fail(&rs, 413, NULL, "request body too large (a GET needs none)");
        return send_response(h, c, r, &rs, false);
    }
    q = strchr(r->uri, '?');
    if (q != NULL)
        *q++ = '\0';
    if (ls->admin && !idmd_route_admin(r->uri)) {
        idmd_fail(&rs, 404, NULL, "this listener (admin-listen) serves /healthz, /metrics and "
                                  "/ping only");
        return send_response(h, c, r, &rs, false);
    }
    rq = (idmd_request){method, r->uri, q,
                        MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_AUTHORIZATION)};
    idmd_handle(h->app, &rq, &rs);
    return send_response(h, c, r, &rs, false);
}

/* ------------------------------------------------------------ listeners */

/* host:port into ss; false if host is no address. */
static bool make_addr(const char *host, int port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (strchr(host, ':') != NULL) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host, &a->sin6_addr) == 1;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        return inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host,
                         &a->sin_addr) == 1;
    }
}

static int listen_on(listener *ls, const idmd_config *cfg, const char *key, const char *host,
                     int port, unsigned threads, unsigned max_conn, unsigned per_ip, char *err,
                     size_t errlen)
{
    struct sockaddr_storage ss;
    const union MHD_DaemonInfo *info;
    unsigned timeout_s = (unsigned)((cfg->idle_timeout_ms + 999) / 1000);
    if (!make_addr(host, port, &ss)) {
        snprintf(err, errlen, "%s: '%s' is not an IP address", key, host);
        return -1;
    }
    /* The logger first: options are read in order, and MHD logs about
     * some of them (a pool of 1 thread is no pool) as it reads them. */
    ls->d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG |
            (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
        (uint16_t)port, NULL, NULL, on_request, ls, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log,
        ls->h, MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_s, MHD_OPTION_CONNECTION_LIMIT, max_conn,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)cfg->max_request + MHD_POOL_EXTRA, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, ls, MHD_OPTION_NOTIFY_COMPLETED, on_done, ls,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, ls, MHD_OPTION_UNESCAPE_CALLBACK,
        no_unescape, ls, MHD_OPTION_END);
    if (ls->d == NULL) {
        snprintf(err, errlen, "%s: cannot listen on %s:%d (in use, or not an address of this "
                              "machine)",
                 key, host, port);
        return -1;
    }
    info = MHD_get_daemon_info(ls->d, MHD_DAEMON_INFO_BIND_PORT);
    ls->port = info != NULL ? info->port : port;
    return 0;
}

static void free_http(idmd_http *h)
{
    if (h->main.d != NULL)
        MHD_stop_daemon(h->main.d);
    if (h->admin.d != NULL)
        MHD_stop_daemon(h->admin.d);
    if (h->watchdog_started) {
        pthread_mutex_lock(&h->mu);
        h->stop = true;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->watchdog, NULL);
    }
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

int idmd_http_start(idmd_http **out, idmd_app *app, const idmd_config *cfg, char *err,
                    size_t errlen)
{
    idmd_http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->app = app;
    h->max_request = cfg->max_request;
    h->head_timeout_ns = cfg->head_timeout_ms * 1000000;
    h->main.h = h;
    h->admin.h = h;
    h->admin.admin = true;
    pthread_mutex_init(&h->mu, NULL);
    idm__cond_init_mono(&h->cv);
    if (pthread_create(&h->watchdog, NULL, watchdog, h) != 0) {
        snprintf(err, errlen, "cannot start the connection watchdog thread");
        free_http(h);
        return -1;
    }
    h->watchdog_started = true;
    if (listen_on(&h->main, cfg, "listen", cfg->listen_host, cfg->listen_port, cfg->threads,
                  cfg->max_connections, cfg->max_connections_per_ip, err, errlen) != 0 ||
        (cfg->admin_host[0] != '\0' &&
         listen_on(&h->admin, cfg, "admin-listen", cfg->admin_host, cfg->admin_port, 1,
                   ADMIN_CONNECTIONS, ADMIN_PER_IP, err, errlen) != 0)) {
        free_http(h);
        return -1;
    }
    *out = h;
    return 0;
}

int idmd_http_port(const idmd_http *h)
{
    return h->main.port;
}

int idmd_http_admin_port(const idmd_http *h)
{
    return h->admin.d != NULL ? h->admin.port : 0;
}

void idmd_http_stop(idmd_http *h)
{
    MHD_socket fd[2] = {MHD_INVALID_SOCKET, MHD_INVALID_SOCKET}; /* main, admin */
    int64_t until = idm__mono_ns() + (int64_t)DRAIN_MS * 1000000;
    if (h == NULL)
        return;
    /* New connections are refused at once (shutdown stops a listening
     * socket), but the sockets are closed only once the daemons have
     * stopped: a daemon without a thread pool takes its socket out of its
     * epoll set in its own thread, some time after MHD_quiesce_daemon
     * returns, and the number must not be reused before. */
    fd[0] = MHD_quiesce_daemon(h->main.d);
    if (h->admin.d != NULL)
        fd[1] = MHD_quiesce_daemon(h->admin.d);
    for (int i = 0; i < 2; i++)
        if (fd[i] != MHD_INVALID_SOCKET)
            shutdown(fd[i], SHUT_RDWR);
    while (atomic_load(&h->inflight) > 0 && idm__mono_ns() < until) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    free_http(h);
    for (int i = 0; i < 2; i++)
        if (fd[i] != MHD_INVALID_SOCKET)
            close(fd[i]);
}
