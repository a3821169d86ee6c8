/* SPDX-License-Identifier: MIT */
/*
 * sysproxy: TCP proxies between one minter and its coordinator, for the
 * whole-system fault suite's link cuts (FAULTS E5, Z1).
 *
 *   sysproxy PORT...
 *
 * Starts one proxy (tests/util/tcpproxy.c) to each 127.0.0.1:PORT, prints
 * the ports they listen on, in order, on one line, and then obeys signals:
 * SIGUSR1 cuts every link (nothing flows either way, sockets stay open: a
 * silent network), SIGUSR2 heals them, SIGTERM or SIGINT stops.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "tcpproxy.h"

#define MAX_PROXIES 8

int main(int argc, char **argv)
{
    idm_tcpproxy *px[MAX_PROXIES];
    sigset_t set;
    int n = argc - 1, sig = 0;
    if (n < 1 || n > MAX_PROXIES) {
        fprintf(stderr, "usage: sysproxy PORT... (1 to %d ports)\n", MAX_PROXIES);
        return 2;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    /* Blocked before the proxies' threads start, so only sigwait sees them. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < n; i++) {
        char *end;
        long port = strtol(argv[1 + i], &end, 10);
        if (*end != '\0' || port < 1 || port > 65535) {
            fprintf(stderr, "sysproxy: '%s' is not a port\n", argv[1 + i]);
            return 2;
        }
        if (!(px[i] = idm_tcpproxy_start((int)port)))
            return 1;
        printf("%s%d", i ? " " : "", idm_tcpproxy_port(px[i]));
    }
    printf("\n");
    fflush(stdout);
    while (sigwait(&set, &sig) == 0 && sig != SIGTERM && sig != SIGINT) {
        for (int i = 0; i < n; i++)
            idm_tcpproxy_set_mode(px[i], sig == SIGUSR1 ? IDM_TCPPROXY_BLACKHOLE
                                                        : IDM_TCPPROXY_FORWARD);
    }
    for (int i = 0; i < n; i++)
        idm_tcpproxy_stop(px[i]);
    return 0;
}
