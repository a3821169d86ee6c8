/* SPDX-License-Identifier: MIT */
/*
 * The test TCP proxy (tcpproxy.h): one thread, one poll() loop over the
 * listening socket, a wake-up pipe and both sockets of every connection,
 * all non-blocking. Each direction of a connection has one buffer: a side
 * is read only when what was last read from it has been written to the
 * other side, so a slow reader slows its writer and nothing is lost.
 *
 * Modes change under a mutex; the thread reads the mode at the top of each
 * pass, and idm_tcpproxy_set_mode waits until a pass has begun with the new
 * mode, so bytes are never read under an old mode after it returned.
 */
#include "tcpproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PAIRS 64
#define BUF_SIZE 16384

typedef struct pair {
    int fd[2];            /* 0: the client's connection, 1: the target's */
    char buf[2][BUF_SIZE]; /* read from fd[d], to be written to fd[1 - d] */
    size_t len[2], off[2];
    bool eof[2];
} pair;

struct idm_tcpproxy {
    int lfd, port, target;
    int wake[2];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    idm_tcpproxy_mode mode;
    unsigned long long gen, seen_gen;
    bool stop;
    unsigned accepted;
    /* the thread's alone */
    pair *pairs[MAX_PAIRS];
    int npairs;
};

static void pair_close(idm_tcpproxy *px, int i)
{
    pair *p = px->pairs[i];
    close(p->fd[0]);
    close(p->fd[1]);
    free(p);
    px->pairs[i] = px->pairs[--px->npairs];
}

/* Close fd so that the peer gets a reset, as from a refusing server. */
static void close_hard(int fd)
{
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

static int connect_target(int port)
{
    struct sockaddr_in sa;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Blocking: the target is on this machine and answers at once. */
    if (connect(s, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK) != 0) {
        close(s);
        return -1;
    }
    return s;
}

static void accept_one(idm_tcpproxy *px, idm_tcpproxy_mode mode)
{
    int c = accept4(px->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), s;
    pair *p;
    if (c < 0)
        return;
    pthread_mutex_lock(&px->mu);
    px->accepted++;
    pthread_mutex_unlock(&px->mu);
    if (mode == IDM_TCPPROXY_CLOSE || px->npairs == MAX_PAIRS) {
        close_hard(c);
        return;
    }
    if ((s = connect_target(px->target)) < 0) {
        close_hard(c);
        return;
    }
    if ((p = calloc(1, sizeof *p)) == NULL) {
        close(s);
        close_hard(c);
        return;
    }
    p->fd[0] = c;
    p->fd[1] = s;
    px->pairs[px->npairs++] = p;
}

/* Move what is buffered in direction d on. false: the connection is done. */
static bool flush_dir(pair *p, int d)
{
    while (p->len[d] > p->off[d]) {
        ssize_t w = send(p->fd[1 - d], p->buf[d] + p->off[d], p->len[d] - p->off[d],
                         MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (w <= 0)
            return false;
        p->off[d] += (size_t)w;
    }
    p->len[d] = p->off[d] = 0;
    /* The side that ended has been passed on in full: end the other. */
    return !p->eof[d];
}

/* Read from side d if it has something; false: the connection is done. */
static bool read_dir(pair *p, int d)
{
    ssize_t n;
    if (p->len[d] != 0 || p->eof[d])
        return true;
    n = read(p->fd[d], p->buf[d], sizeof p->buf[d]);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0)
        p->eof[d] = true;
    p->len[d] = (size_t)n;
    p->off[d] = 0;
    return flush_dir(p, d);
}

static void *loop(void *arg)
{
    idm_tcpproxy *px = arg;
    struct pollfd pf[2 + 2 * MAX_PAIRS];
    for (;;) {
        idm_tcpproxy_mode mode;
        int n = 0, npolled;
        pthread_mutex_lock(&px->mu);
        mode = px->mode;
        px->seen_gen = px->gen;
        pthread_cond_broadcast(&px->cv);
        if (px->stop) {
            pthread_mutex_unlock(&px->mu);
            break;
        }
        pthread_mutex_unlock(&px->mu);
        if (mode == IDM_TCPPROXY_CLOSE)
            while (px->npairs > 0)
                pair_close(px, px->npairs - 1);
        pf[n++] = (struct pollfd){px->wake[0], POLLIN, 0};
        pf[n++] = (struct pollfd){px->lfd, POLLIN, 0};
        /* In a black hole the connections are not even looked at. */
        npolled = mode == IDM_TCPPROXY_FORWARD ? px->npairs : 0;
        for (int i = 0; i < npolled; i++) {
            pair *p = px->pairs[i];
            for (int d = 0; d < 2; d++) {
                short ev = 0;
                if (p->len[d] == 0 && !p->eof[d])
                    ev |= POLLIN;
                if (p->len[1 - d] > p->off[1 - d])
                    ev |= POLLOUT;
                pf[n++] = (struct pollfd){p->fd[d], ev, 0};
            }
        }
        if (poll(pf, (nfds_t)n, 200) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents != 0) {
            char b[64];
            while (read(px->wake[0], b, sizeof b) > 0)
                ;
        }
        /* Back to front: closing a pair moves the last one into its place. */
        for (int i = npolled - 1; i >= 0; i--) {
            pair *p = px->pairs[i];
            bool ok = true;
            for (int d = 0; d < 2 && ok; d++) {
                short re = pf[2 + 2 * i + d].revents;
                if ((re & (POLLIN | POLLHUP | POLLERR)) != 0)
                    ok = read_dir(p, d);
                if (ok && (re & POLLOUT) != 0)
                    ok = flush_dir(p, 1 - d);
            }
            if (!ok)
                pair_close(px, i);
        }
        if (pf[1].revents != 0)
            accept_one(px, mode);
    }
    return NULL;
}

idm_tcpproxy *idm_tcpproxy_start(int target_port)
{
    idm_tcpproxy *px = calloc(1, sizeof *px);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int one = 1;
    if (px == NULL)
        return NULL;
    px->target = target_port;
    px->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (px->lfd < 0 || pipe2(px->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "tcpproxy: socket or pipe: %s\n", strerror(errno));
        if (px->lfd >= 0)
            close(px->lfd);
        free(px);
        return NULL;
    }
    setsockopt(px->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(px->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(px->lfd, 64) != 0 ||
        getsockname(px->lfd, (struct sockaddr *)&sa, &len) != 0) {
        fprintf(stderr, "tcpproxy: cannot listen: %s\n", strerror(errno));
        goto fail;
    }
    px->port = ntohs(sa.sin_port);
    pthread_mutex_init(&px->mu, NULL);
    pthread_cond_init(&px->cv, NULL);
    px->mode = IDM_TCPPROXY_FORWARD;
    if (pthread_create(&px->thread, NULL, loop, px) != 0) {
        fprintf(stderr, "tcpproxy: cannot start its thread\n");
        pthread_cond_destroy(&px->cv);
        pthread_mutex_destroy(&px->mu);
        goto fail;
    }
    return px;
fail:
    close(px->lfd);
    close(px->wake[0]);
    close(px->wake[1]);
    free(px);
    return NULL;
}

int idm_tcpproxy_port(const idm_tcpproxy *px)
{
    return px->port;
}

/* Under mu: tell the thread, and wait for a pass that sees it. */
static void change_locked(idm_tcpproxy *px)
{
    unsigned long long g = ++px->gen;
    ssize_t w;
    do
        w = write(px->wake[1], "x", 1);
    while (w < 0 && errno == EINTR);
    /* A full pipe (EAGAIN) already wakes the thread. */
    while (px->seen_gen < g)
        pthread_cond_wait(&px->cv, &px->mu);
}

void idm_tcpproxy_set_mode(idm_tcpproxy *px, idm_tcpproxy_mode mode)
{
    pthread_mutex_lock(&px->mu);
    px->mode = mode;
    change_locked(px);
    pthread_mutex_unlock(&px->mu);
}

unsigned idm_tcpproxy_accepted(idm_tcpproxy *px)
{
    unsigned n;
    pthread_mutex_lock(&px->mu);
    n = px->accepted;
    pthread_mutex_unlock(&px->mu);
    return n;
}

void idm_tcpproxy_stop(idm_tcpproxy *px)
{
    if (px == NULL)
        return;
    pthread_mutex_lock(&px->mu);
    px->stop = true;
    change_locked(px);
    pthread_mutex_unlock(&px->mu);
    pthread_join(px->thread, NULL);
    while (px->npairs > 0)
        pair_close(px, px->npairs - 1);
    close(px->lfd);
    close(px->wake[0]);
    close(px->wake[1]);
    pthread_cond_destroy(&px->cv);
    pthread_mutex_destroy(&px->mu);
    free(px);
}
