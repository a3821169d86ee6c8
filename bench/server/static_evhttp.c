/* SPDX-License-Identifier: MIT */
/*
 * static_evhttp: minimal libevent evhttp server for the idmintd
 * HTTP-library bake-off.  GET /ping -> "ok" (2 bytes), GET /big -> 20 KiB.
 *
 * THREADS=1: the simple single-threaded variant (one event_base).
 * THREADS>1: one event_base + evhttp per thread, each on its own
 * SO_REUSEPORT listening socket bound to the same address (kernel
 * load-balances accepted connections).  No libevent locking is enabled:
 * each base is touched only by its own thread; shutdown is signalled
 * through a self-pipe watched by every base.
 *
 * usage: static_evhttp PORT [THREADS]
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BIG_LEN (20 * 1024)
#define MAX_THREADS 16

static char big_body[BIG_LEN];
static int stop_pipe[2];

struct worker {
    pthread_t tid;
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct event *stop_ev;
};

static void send_static(struct evhttp_request *req, int code,
                        const char *reason, const char *body, size_t len)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "text/plain");
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    evbuffer_add_reference(out, body, len, NULL, NULL); /* zero-copy */
    evhttp_send_reply(req, code, reason, NULL);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (path != NULL && strcmp(path, "/ping") == 0)
        send_static(req, HTTP_OK, "OK", "ok", 2);
    else if (path != NULL && strcmp(path, "/big") == 0)
        send_static(req, HTTP_OK, "OK", big_body, BIG_LEN);
    else
        send_static(req, HTTP_NOTFOUND, "Not Found", "not found\n", 10);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker *w = arg;
    /* Stop accepting on this thread, then leave the loop.  evhttp 2.1 has
     * no "drain in-flight requests" primitive; evhttp_free() closes them. */
    if (w->bound != NULL)
        evhttp_del_accept_socket(w->http, w->bound);
    w->bound = NULL;
    event_base_loopexit(w->base, NULL);
}

static evutil_socket_t listen_reuseport(unsigned port)
{
    evutil_socket_t fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* libevent's portable wrapper sets SO_REUSEPORT where available. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        evutil_make_listen_socket_reuseable_port(fd) != 0 ||
        /* Linux: accepted sockets inherit TCP_NODELAY from the listener.
         * Without it a >16 KiB reply (bufferevent's max single write) hits
         * Nagle + delayed ACK: ~40 ms per response. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 1024) != 0 || evutil_make_socket_nonblocking(fd) != 0 ||
        evutil_make_socket_closeonexec(fd) != 0) {
        perror("listen_reuseport");
        close(fd);
        return -1;
    }
    return fd;
}

static int worker_init(struct worker *w, unsigned port)
{
    w->base = event_base_new();
    if (w->base == NULL)
        return -1;
    w->http = evhttp_new(w->base);
    if (w->http == NULL)
        return -1;
    evhttp_set_timeout(w->http, 10);
    evhttp_set_max_headers_size(w->http, 8192);
    evhttp_set_max_body_size(w->http, 4096);
    evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_default_content_type(w->http, "text/plain");
    evhttp_set_gencb(w->http, on_request, NULL);
    evutil_socket_t fd = listen_reuseport(port);
    if (fd < 0)
        return -1;
    w->bound = evhttp_accept_socket_with_handle(w->http, fd);
    if (w->bound == NULL)
        return -1;
    w->stop_ev = event_new(w->base, stop_pipe[0], EV_READ, on_stop, w);
    if (w->stop_ev == NULL || event_add(w->stop_ev, NULL) != 0)
        return -1;
    return 0;
}

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    event_base_dispatch(w->base);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [THREADS]\n", argv[0]);
        return 2;
    }
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 2;
    if (n < 1 || n > MAX_THREADS)
        n = 2;
    for (size_t i = 0; i < BIG_LEN; i++)
        big_body[i] = (i % 21 == 20) ? '\n' : (char)('0' + i % 10);

    if (pipe(stop_pipe) != 0) {
        perror("pipe");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    static struct worker w[MAX_THREADS];
    for (unsigned i = 0; i < n; i++) {
        if (worker_init(&w[i], port) != 0) {
            fprintf(stderr, "worker %u init failed\n", i);
            return 1;
        }
    }
    for (unsigned i = 0; i < n; i++)
        pthread_create(&w[i].tid, NULL, worker_run, &w[i]);
    printf("evhttp listening on 127.0.0.1:%u threads=%u\n", port, n);
    fflush(stdout);

    int sig;
    sigwait(&set, &sig);
    /* One byte wakes every base (level-triggered, nobody reads it). */
    ssize_t wr;
    do
        wr = write(stop_pipe[1], "x", 1);
    while (wr < 0 && errno == EINTR);
    for (unsigned i = 0; i < n; i++) {
        pthread_join(w[i].tid, NULL);
        event_free(w[i].stop_ev);
        evhttp_free(w[i].http);
        event_base_free(w[i].base);
    }
    return 0;
}
