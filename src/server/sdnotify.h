/* SPDX-License-Identifier: MIT */
/*
 * idmintd's messages to its service manager (systemd's sd_notify protocol,
 * through libsystemd): READY=1 once the listeners are up, STATUS= lines
 * that say what it mints as (the worker id, and what happened to it), and
 * STOPPING=1 when it drains. Without NOTIFY_SOCKET in the environment (not
 * run by systemd with Type=notify) every call does nothing. A message that
 * cannot be sent is not an error: the service goes on.
 */
#ifndef IDMD_SDNOTIFY_H
#define IDMD_SDNOTIFY_H

/* READY=1 and a STATUS= line: printf's format. */
void idmd_notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A STATUS= line: printf's format. */
void idmd_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STOPPING=1 and a STATUS= line saying so. */
void idmd_notify_stopping(void);

#endif /* IDMD_SDNOTIFY_H */
