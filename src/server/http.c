/* SPDX-License-Identifier: MIT */
/*
 * idmintd's HTTP layer on GNU libmicrohttpd (chosen over libevent's evhttp
 * after measuring both, bench/server/: 1.5 to 2 times the requests a second
 * on two cores, and a connection limit, per-connection memory limit (431
 * for oversized headers), idle timeout and backing off when out of file
 * descriptors built in).
 *
 * Threads: an epoll loop in each of cfg->threads threads (MHD's pool). Each
 * request keeps its raw URI (from MHD's URI log callback, before any
 * unescaping), so the handler sees exactly what was sent and refuses
 * percent-encoding instead of guessing. A body on a GET is read and
 * dropped up to 1 KiB; a larger one is 413.
 *
 * Shutdown: stop accepting (MHD_quiesce_daemon), wait up to 5 s for the
 * requests in flight to be answered, then stop the daemon.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"

#define MAX_BODY 1024
#define DRAIN_MS 5000

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

struct idmd_http {
    struct MHD_Daemon *d;
    idmd_app *app;
    int port;
    _Atomic int inflight;
};

typedef struct req_ctx {
    char *uri;          /* raw request target, as sent */
    int64_t t0;         /* CLOCK_MONOTONIC ns at arrival */
    size_t body;        /* bytes of body seen */
    bool counted;       /* in inflight */
    bool started;       /* the access handler has been called once */
} req_ctx;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    idmd_http *h = cls;
    req_ctx *r = calloc(1, sizeof *r);
    (void)c;
    if (r == NULL)
        return NULL;
    (void)h;
    r->uri = strdup(uri != NULL ? uri : "");
    r->t0 = now_ns();
    return r;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode why)
{
    idmd_http *h = cls;
    req_ctx *r = *con_cls;
    (void)c;
    (void)why;
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

static mhd_result send_response(idmd_http *h, struct MHD_Connection *c, req_ctx *r,
                                idmd_response *rs)
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
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (rs->retry_after_s > 0) {
        snprintf(ra, sizeof ra, "%d", rs->retry_after_s);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (rs->www_authenticate)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (rs->status == 405)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                rs->allow != NULL ? rs->allow : "GET");
    ret = MHD_queue_response(c, (unsigned)rs->status, resp);
    MHD_destroy_response(resp);
    idmd_count(h->app, rs->status, now_ns() - r->t0);
    return ret;
}

static mhd_result on_request(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    idmd_http *h = cls;
    req_ctx *r = *con_cls;
    idmd_response rs;
    idmd_request rq;
    char *q;
    (void)url;
    (void)version;
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
        return MHD_YES;
    }
    if (*upload_size > 0) {
        r->body += *upload_size;
        *upload_size = 0;
        return MHD_YES; /* read on; answered when the body is complete */
    }
    memset(&rs, 0, sizeof rs);
    if (r->body > MAX_BODY) {
        idmd_fail(&rs, 413, NULL, "request body too large (a GET needs none)");
        return send_response(h, c, r, &rs);
    }
    q = strchr(r->uri, '?');
    if (q != NULL)
        *q++ = '\0';
    rq.method = method;
    rq.path = r->uri;
    rq.query = q;
    rq.authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_AUTHORIZATION);
    idmd_handle(h->app, &rq, &rs);
    return send_response(h, c, r, &rs);
}

int idmd_http_start(idmd_http **out, idmd_app *app, const idmd_config *cfg, char *err,
                    size_t errlen)
{
    idmd_http *h = calloc(1, sizeof *h);
    struct sockaddr_storage ss;
    socklen_t sl;
    unsigned timeout_s = (unsigned)((cfg->idle_timeout_ms + 999) / 1000);
    const union MHD_DaemonInfo *info;
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(&ss, 0, sizeof ss);
    if (strchr(cfg->listen_host, ':') != NULL) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)cfg->listen_port);
        if (inet_pton(AF_INET6, cfg->listen_host, &a->sin6_addr) != 1) {
            snprintf(err, errlen, "listen: '%s' is not an IPv6 address", cfg->listen_host);
            free(h);
            return -1;
        }
        sl = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        const char *host = strcmp(cfg->listen_host, "localhost") == 0 ? "127.0.0.1"
                                                                       : cfg->listen_host;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)cfg->listen_port);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
            snprintf(err, errlen, "listen: '%s' is not an IPv4 address", cfg->listen_host);
            free(h);
            return -1;
        }
        sl = sizeof *a;
    }
    (void)sl;
    h->app = app;
    h->d = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC |
            (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
        (uint16_t)cfg->listen_port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->threads, MHD_OPTION_CONNECTION_TIMEOUT,
        timeout_s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->max_request + 8192,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
        MHD_OPTION_NOTIFY_COMPLETED, on_done, h, MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, h,
        MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(err, errlen, "cannot listen on %s:%d (in use, or not an address of this machine)",
                 cfg->listen_host, cfg->listen_port);
        free(h);
        return -1;
    }
    info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info != NULL ? info->port : cfg->listen_port;
    *out = h;
    return 0;
}

int idmd_http_port(const idmd_http *h)
{
    return h->port;
}

void idmd_http_stop(idmd_http *h)
{
    MHD_socket fd;
    int64_t until = now_ns() + (int64_t)DRAIN_MS * 1000000;
    if (h == NULL)
        return;
    fd = MHD_quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    while (atomic_load(&h->inflight) > 0 && now_ns() < until) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(h->d);
    free(h);
}
