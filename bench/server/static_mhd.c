/* SPDX-License-Identifier: MIT */
/*
 * static_mhd: minimal libmicrohttpd server for the idmintd HTTP-library
 * bake-off.  GET /ping -> "ok" (2 bytes), GET /big -> 20 KiB body.
 *
 * Production-style configuration: epoll, internal thread pool of 2,
 * connection timeout, connection limit, per-connection memory limit
 * (which bounds request header size), loopback-only bind.
 * Shutdown on SIGINT/SIGTERM: quiesce (stop accepting), then stop.
 *
 * usage: static_mhd PORT [THREADS]
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BIG_LEN (20 * 1024)

static struct MHD_Response *ping_resp;
static struct MHD_Response *big_resp;
static struct MHD_Response *nf_resp;
static struct MHD_Response *bad_method_resp;
static char big_body[BIG_LEN];
static int marker;

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    if (*con_cls == NULL) { /* headers parsed; body (if any) follows */
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) { /* discard any request body */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                                  bad_method_resp);
    if (strcmp(url, "/ping") == 0)
        return MHD_queue_response(c, MHD_HTTP_OK, ping_resp);
    if (strcmp(url, "/big") == 0)
        return MHD_queue_response(c, MHD_HTTP_OK, big_resp);
    return MHD_queue_response(c, MHD_HTTP_NOT_FOUND, nf_resp);
}

static struct MHD_Response *mk(const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (r == NULL ||
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "text/plain") != MHD_YES) {
        fprintf(stderr, "response setup failed\n");
        exit(1);
    }
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [THREADS]\n", argv[0]);
        return 2;
    }
    unsigned port = (unsigned)strtoul(argv[1], NULL, 10);
    unsigned threads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 2;

    for (size_t i = 0; i < BIG_LEN; i++)
        big_body[i] = (i % 21 == 20) ? '\n' : (char)('0' + i % 10);
    ping_resp = mk("ok", 2);
    big_resp = mk(big_body, BIG_LEN);
    nf_resp = mk("not found\n", 10);
    bad_method_resp = mk("method not allowed\n", 19);
    MHD_add_response_header(bad_method_resp, MHD_HTTP_HEADER_ALLOW,
                            "GET, HEAD");

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    /* Block signals before the pool threads are created so only the main
     * thread receives them (via sigwait below). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    /* MHD_USE_ITC is required for MHD_quiesce_daemon() with a thread pool. */
    unsigned flags =
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, handler, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)0,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
        MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "MHD_start_daemon failed\n");
        return 1;
    }
    printf("mhd listening on 127.0.0.1:%u threads=%u\n", port, threads);
    fflush(stdout);

    int sig;
    sigwait(&set, &sig);
    /* Graceful-ish: stop accepting; MHD_stop_daemon then closes remaining
     * connections (it does not wait for idle keep-alive clients). */
    MHD_socket ls = MHD_quiesce_daemon(d);
    MHD_stop_daemon(d);
    if (ls != MHD_INVALID_SOCKET)
        close(ls);
    MHD_destroy_response(ping_resp);
    MHD_destroy_response(big_resp);
    MHD_destroy_response(nf_resp);
    MHD_destroy_response(bad_method_resp);
    return 0;
}
