/* SPDX-License-Identifier: MIT */
/*
 * idmintd's HTTP layer: listens, reads requests within the configured
 * limits (request size, idle timeout, time to a whole request, connections
 * in all and from one address), hands each to idmd_handle and writes the
 * answer. With admin-listen, a second listener serves /healthz, /metrics
 * and /ping on connections of its own. One file, one HTTP library.
 */
#ifndef IDMD_HTTP_H
#define IDMD_HTTP_H

#include <stddef.h>

#include "app.h"

typedef struct idmd_http idmd_http;

/* Listen on cfg's address (and admin address, if any) and serve app from
 * cfg->threads threads (one more for the admin listener, one for the
 * watchdog of slow connections). 0, or -1 with err naming the key and what
 * failed (the address in use, say). */
int idmd_http_start(idmd_http **out, idmd_app *app, const idmd_config *cfg, char *err,
                    size_t errlen);
/* The port listened on (useful with listen port 0). */
int idmd_http_port(const idmd_http *h);
/* The admin listener's port, 0 if there is none. */
int idmd_http_admin_port(const idmd_http *h);
/* Stop accepting connections, let the requests in flight finish, close
 * every connection and free h. */
void idmd_http_stop(idmd_http *h);

#endif /* IDMD_HTTP_H */
