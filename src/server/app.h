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
#include <idmint/leased.h>
#include <idmint/segment.h>

#include "config.h"
#include "monitor.h"

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

/*
 * The sequences: a table of slots, one a name, sorted by name. A slot is
 * made by the first request for its name and opened on a thread of its own
 * (idm_seq_open makes store round trips: none is ever made under seq_mu, so
 * /healthz, /metrics and the sequences already open never wait for one).
 * Requests for it wait at most segment-wait for the open to end. The slot
 * is in the table before its allocator opens, so an allocator once opened
 * always finds its place (none is opened and dropped, which would abandon
 * its block); an open allocator stays until shutdown.
 */
typedef enum idmd_seq_state {
    IDMD_SEQ_OPENING, /* its opener thread is in idm_seq_open */
    IDMD_SEQ_OPEN,    /* q serves */
    IDMD_SEQ_FAILED   /* the open failed: rc and detail, at since_ns */
} idmd_seq_state;

/* At most this many opens at once (each is a thread waiting on the store):
 * a request for one more new name is 503 at once. */
#define IDMD_OPENERS_MAX 8
/* A failed open is remembered this long, in ms: requests for the name get
 * its error without asking the store again (a dead store is not asked once
 * a request). Not for IDM_ENOSEQ: a name the store does not have takes no
 * room, and a sequence made meanwhile is found at once. */
#define IDMD_SEQ_RETRY_MS 1000

struct idmd_app;

typedef struct idmd_seq_slot {
    /* Fixed while the slot exists. */
    char name[IDM_SEQ_NAME_MAX + 1];
    struct idmd_app *app;
    idm_store *store;          /* the store when the slot was made */
    char floor_file[IDMD_PATH_MAX + 96]; /* opts.floor_file; "": none */
    /* Under seq_mu. */
    idmd_seq_state state;
    idm_seq *q;                /* IDMD_SEQ_OPEN: the allocator */
    int64_t wait_ms;           /* opening: the allocator's opts.wait_ms */
    int64_t since_ns;          /* CLOCK_MONOTONIC: the open began (opening)
                                  or failed (failed) */
    int rc;                    /* failed: the open's error, and its detail */
    char detail[256];
    unsigned users;            /* requests waiting on this slot */
    bool has_opener;           /* opener was started and not yet joined */
    pthread_t opener;
} idmd_seq_slot;

typedef struct idmd_app {
    const idmd_config *cfg;
    const idm_clock *clock;    /* the generator's */
    idm_layout *layout;
    idm_snowflake *gen;        /* a generator without a lease (the platform's
                                  ordinal; tests); NULL under leased */
    idm_leased *leased;        /* the leased generator (leased.h): resumes,
                                  re-claims, changes worker id; NULL: gen */
    idm_lease *lease;          /* a plain lease on gen (tests); NULL: none */
    int64_t lease_ttl_ms, lease_margin_ms;
    idm_uuid7_gen *uuid7;
    idm_ulid_gen *ulid;
    const idm_rng *uuid4_rng;  /* UUIDv4s' random bytes; NULL: the system's
                                  (a test sets one to see what is drawn) */
    idm_store *store;          /* NULL: no segments */
    /* The sequence table (idmd_seqs_init): seq_mu guards everything from
     * seqs to open_failures and the slots' state (never a store call). */
    pthread_mutex_t seq_mu;
    pthread_cond_t seq_cv;     /* (CLOCK_MONOTONIC) an open ended, a request
                                  stopped waiting */
    idmd_seq_slot **seqs;      /* the sequences in use, sorted by name; no
                                  limit but the store's sequences (it grows;
                                  idmd_seqs_close frees it) */
    size_t nseqs, seqs_cap;
    unsigned nopening;         /* slots opening (opener threads running) */
    bool seqs_closed;          /* idmd_seqs_close has begun: no more opens */
    uint64_t open_failures;    /* opens that failed, IDM_ENOSEQ aside */
    char floors_dir[IDMD_PATH_MAX + 16]; /* each sequence's floor file is
                                  FLOORS_DIR/NAME.floor; "": none (tests) */
    bool has_opaque;           /* ?format=opaque: ids under opaque_key */
    idm_opaque_key opaque_key;
    char token[IDMD_TOKEN_MAX + 1]; /* the whole bearer token; "": no
                                       authentication */
    size_t token_len;
    idmd_metrics m;
    _Atomic int draining;      /* shutting down: health says so */
    /* For /v1/status: the generator's node values by field index (the
     * leased field's is the lease's worker id, read when asked). */
    uint64_t node[IDM_LAYOUT_MAX_FIELDS];
    idmd_monitor mon;          /* the clock watch and rates (monitor.h);
                                  mon.ready false: none (status shows 0s) */
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
    const char *location;      /* a Location header (redirects) */
    const char *csp;           /* a Content-Security-Policy header */
    bool nosniff;              /* X-Content-Type-Options: nosniff */
    const char *cache_control; /* Cache-Control; NULL: no-store */
    bool oom;                  /* the body could not grow: send 500 */
} idmd_response;

/* Handle one request; rs must be zeroed (or reset) first; the caller frees
 * rs->body. Thread-safe. */
void idmd_handle(idmd_app *app, const idmd_request *rq, idmd_response *rs);

/* Whether path (without the query) is an endpoint the admin listener
 * serves (/healthz, /metrics, /ping: the routes marked admin). */
bool idmd_route_admin(const char *path);

/* Make rs an error answer, {"error":{"status":S,"param":P,"message":M}}
 * (param may be NULL), for the handler and the HTTP layer alike. */
void idmd_fail(idmd_response *rs, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Count a response and its latency in the metrics. */
void idmd_count(idmd_app *app, int status, int64_t latency_ns);

/* Initialise the sequence table's mutex and condition variable (the
 * table itself starts empty, zeroed). 0, or -1 if they cannot be made. */
int idmd_seqs_init(idmd_app *app);

/* At shutdown, once no request is in flight (the HTTP layer stopped): no
 * sequence is opened from now on; waits for the opens in progress to end
 * (each store call has a deadline: idm_store_set_timeout; a custom store's
 * calls are its own to bound), then closes every allocator and frees the
 * table. /healthz and /metrics answer meanwhile. Calling it again does
 * nothing more; seq_mu and seq_cv stay (the caller destroys them). */
void idmd_seqs_close(idmd_app *app);

#endif /* IDMD_APP_H */
