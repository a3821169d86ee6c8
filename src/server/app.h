/* SPDX-License-Identifier: MIT */
/*
 * idmintd's application: what a request is handled against (the generator,
 * its lease, the 128-bit generators, the segment allocators, counters), and
 * the request handler itself, which knows nothing of sockets: a request
 * (method, path, query, Authorization) in, a response (status, type, body,
 * extra headers) out. The HTTP layer (http.c) only moves bytes; the fuzz
 * target and the unit tests call idmd_handle directly.
 */
#ifndef IDMD_APP_H
#define IDMD_APP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <idmint/idmint.h>
#include <idmint/lease.h>
#include <idmint/segment.h>

#include "config.h"

enum { IDMD_K_SNOWFLAKE, IDMD_K_SEGMENT, IDMD_K_UUID7, IDMD_K_UUID4, IDMD_K_ULID, IDMD_K_N };

/* Status codes counted one by one; others go to "other". */
#define IDMD_CODES(X) X(200) X(400) X(401) X(404) X(405) X(408) X(413) X(414) X(429) X(431) X(500) X(503)
enum {
#define IDMD_CODE_ENUM(c) IDMD_C_##c,
    IDMD_CODES(IDMD_CODE_ENUM)
#undef IDMD_CODE_ENUM
    IDMD_C_OTHER,
    IDMD_C_N
};

/* Latency histogram bounds, microseconds (the last bucket is +Inf). */
#define IDMD_LAT_BUCKETS 10

typedef struct idmd_metrics {
    _Atomic uint64_t minted[IDMD_K_N];
    _Atomic uint64_t requests[IDMD_C_N];
    _Atomic uint64_t lat[IDMD_LAT_BUCKETS + 1];
    _Atomic uint64_t lat_sum_us;
    _Atomic uint64_t exhaustion_refusals; /* 503s for a full sequence */
    _Atomic uint64_t clock_refusals;      /* 503s for a clock gone back */
    _Atomic uint64_t lease_refusals;      /* 503s for the lease */
} idmd_metrics;

/* A sequence in use: its allocator, opened on first use (all of them share
 * the store's one prefetch thread). */
typedef struct idmd_seq_slot {
    char name[IDM_SEQ_NAME_MAX + 1];
    idm_seq *q;
} idmd_seq_slot;

typedef struct idmd_app {
    const idmd_config *cfg;
    const idm_clock *clock;    /* the generator's */
    idm_layout *layout;
    idm_snowflake *gen;
    idm_lease *lease;          /* NULL: none (tests) */
    int64_t lease_ttl_ms, lease_margin_ms;
    idm_uuid7_gen *uuid7;
    idm_ulid_gen *ulid;
    idm_store *store;          /* NULL: no segments */
    pthread_mutex_t seq_mu;    /* guards seqs, nseqs, seqs_cap */
    idmd_seq_slot *seqs;       /* the sequences in use, sorted by name; no
                                  limit but the store's sequences (it grows;
                                  idmd_seqs_close frees it) */
    size_t nseqs, seqs_cap;
    bool has_opaque;           /* ?format=opaque: ids under opaque_key */
    idm_opaque_key opaque_key;
    char token[IDMD_TOKEN_MAX + 1]; /* the whole bearer token; "": no
                                       authentication */
    size_t token_len;
    idmd_metrics m;
    _Atomic int draining;      /* shutting down: health says so */
} idmd_app;

typedef struct idmd_request {
    const char *method;
    const char *path;          /* without the query */
    const char *query;         /* after '?', NULL if none */
    const char *authorization; /* the header's value, NULL if none */
} idmd_request;

typedef struct idmd_response {
    int status;
    const char *content_type;
    char *body;                /* malloc'd, len bytes (NUL-terminated) */
    size_t len, cap;
    int retry_after_s;         /* > 0: a Retry-After header */
    bool www_authenticate;     /* a WWW-Authenticate: Bearer header */
    const char *allow;         /* 405: the methods the path serves */
    bool oom;                  /* the body could not grow: send 500 */
} idmd_response;

/* Handle one request; rs must be zeroed (or reset) first; the caller frees
 * rs->body. Thread-safe. */
void idmd_handle(idmd_app *app, const idmd_request *rq, idmd_response *rs);

/* Make rs an error answer, {"error":{"status":S,"param":P,"message":M}}
 * (param may be NULL), for the handler and the HTTP layer alike. */
void idmd_fail(idmd_response *rs, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Count a response and its latency in the metrics. */
void idmd_count(idmd_app *app, int status, int64_t latency_ns);

/* Close every segment allocator and free the table (at shutdown). */
void idmd_seqs_close(idmd_app *app);

#endif /* IDMD_APP_H */
