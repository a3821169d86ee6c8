/* SPDX-License-Identifier: MIT */
/*
 * A TCP proxy for tests that need a network to misbehave: one thread
 * listens on 127.0.0.1 (a free port) and forwards each connection it
 * accepts to a port of 127.0.0.1, both ways, until told otherwise:
 *   FORWARD    bytes flow (the start)
 *   BLACKHOLE  nothing flows in either direction, but every socket stays
 *              open and new connections are still accepted (and connected
 *              onward): a silent network, or a server that stopped
 *              answering. Bytes sent meanwhile wait in the kernel's
 *              buffers and flow again, late, after FORWARD.
 *   CLOSE      every connection is closed at once, and new ones are
 *              accepted and closed (a server that refuses).
 * A mode takes effect before idm_tcpproxy_set_mode returns: no byte read
 * after that is forwarded under the old mode.
 *
 * Not a general proxy: no IPv6, up to 64 connections at once (more are
 * closed), and the peer is always 127.0.0.1.
 */
#ifndef IDM_TCPPROXY_H
#define IDM_TCPPROXY_H

typedef struct idm_tcpproxy idm_tcpproxy;

typedef enum idm_tcpproxy_mode {
    IDM_TCPPROXY_FORWARD,
    IDM_TCPPROXY_BLACKHOLE,
    IDM_TCPPROXY_CLOSE,
} idm_tcpproxy_mode;

/* Start a proxy to 127.0.0.1:target_port; NULL (and a message on stderr)
 * if it cannot listen or start its thread. */
idm_tcpproxy *idm_tcpproxy_start(int target_port);
/* The port it listens on (127.0.0.1). */
int idm_tcpproxy_port(const idm_tcpproxy *px);
void idm_tcpproxy_set_mode(idm_tcpproxy *px, idm_tcpproxy_mode mode);
/* Connections accepted so far. */
unsigned idm_tcpproxy_accepted(idm_tcpproxy *px);
/* Stop the thread and close every socket. NULL is ignored. */
void idm_tcpproxy_stop(idm_tcpproxy *px);

#endif /* IDM_TCPPROXY_H */
