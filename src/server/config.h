/* SPDX-License-Identifier: MIT */
/*
 * idmintd's configuration: every key has a default, can be set in a config
 * file (key = value lines), overridden by an environment variable
 * (IDMINT_<KEY>, upper case, '-' as '_') and then by a flag (--key VALUE or
 * --key=VALUE). Unknown keys, malformed values and repeated keys in one
 * source are errors that name the key and the source.
 */
#ifndef IDMD_CONFIG_H
#define IDMD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDMD_PATH_MAX 1024
/* The longest bearer token accepted, in bytes (the token file's content
 * without its final newline). */
#define IDMD_TOKEN_MAX 4096
/* Room for every key's source (idmd_config.source), and the longest source
 * kept: a longer one (a config file's long path) keeps its last bytes. */
#define IDMD_KEYS_MAX 32
#define IDMD_SOURCE_MAX 80
/* The store key: up to IDMD_STORES_MAX URLs separated by white space (a URL
 * holds no raw space; a PostgreSQL multi-host URL holds commas), each below
 * IDMD_URL_MAX bytes, the whole below IDMD_STORE_TEXT_MAX. */
#define IDMD_STORES_MAX 16
#define IDMD_URL_MAX (IDMD_PATH_MAX + 32)
#define IDMD_STORE_TEXT_MAX 4096

/* Each field holds the key its comment names; the bounds, defaults and
 * syntax of every key are in one table, config.c's cfg_keys (idmintd
 * --help prints them). */
typedef struct idmd_config {
    char listen_host[256];      /* listen: the host without IPv6 brackets */
    int listen_port;            /*   (port 0: any free port, for tests) */
    char admin_host[256];       /* admin-listen: a second listener serving only
                                   /healthz, /metrics and /ping, with
                                   connections of its own (a flood on listen
                                   cannot starve it); "" = none */
    int admin_port;
    char data_dir[IDMD_PATH_MAX]; /* data-dir */
    char lease[IDMD_PATH_MAX];  /* lease: URL; "" = file://<data-dir>/leases */
    int64_t lease_ttl_ms;       /* lease-ttl */
    char store[IDMD_STORE_TEXT_MAX]; /* store: 1 to IDMD_STORES_MAX URLs separated by
                                   white space, store k of n in the order given
                                   (Flickr's odd/even ticket servers: store k
                                   hands out ids = k mod n); "" =
                                   sqlite://<data-dir>/segments.db
                                   (idmd_config_stores splits it) */
    char layout[256];           /* layout: preset or text form */
    int64_t epoch;              /* epoch: Unix ms; needed for a text layout */
    bool epoch_set;
    char policy[16];            /* policy: logical | refuse | wait */
    char exhaust[16];           /* exhaust: wait | borrow */
    char node[256];             /* node: extra node fields, "datacenter=1,...";
                                   a value may be "ordinal" (the trailing number
                                   of the host name) or "ordinal:VAR" (the
                                   number in environment variable VAR), for at
                                   most one field: see ordinal.h */
    char lease_field[64];       /* lease-field: the node field the lease fills */
    uint32_t count_max;         /* count-max: at most count_max_layout after
                                   idmd_config_check */
    uint32_t count_max_layout;  /* set by idmd_config_check (see there); 0
                                   before the check */
    char token_file[IDMD_PATH_MAX]; /* token-file: a file holding the bearer
                                       token; unset = no authentication (an
                                       empty value is refused from any source) */
    int64_t idle_timeout_ms;    /* idle-timeout */
    int64_t head_timeout_ms;    /* head-timeout: ms a connection has, from its
                                   start or the end of its previous answer, to
                                   send a whole request (head, and a body if
                                   any); a client trickling bytes resets the
                                   idle timeout, not this one */
    size_t max_request;         /* max-request: bytes of request line + headers */
    unsigned threads;           /* threads */
    unsigned max_connections;   /* max-connections */
    unsigned max_connections_per_ip; /* max-connections-per-ip: open connections
                                        from one client address; more are
                                        closed at once */
    char clock[IDMD_PATH_MAX];  /* clock: "system" or "offset-file:PATH", a file
                                   holding a signed ms offset added to the
                                   system's wall clock (tests step the clock) */
    int64_t segment_wait_ms;    /* segment-wait: ms a request waits for a block
                                   (or for its sequence to open) */
    int64_t store_timeout_ms;   /* store-timeout: ms one ticket-store call may
                                   take, a reconnect included
                                   (idm_store_set_timeout) */
    char opaque_key_file[IDMD_PATH_MAX]; /* opaque-key-file: a file holding the
                                           key (32 hex digits) of ?format=opaque;
                                           unset = that format is refused */
    /* Set by idmd_config_check from node: */
    char node_values[256];      /* node with the ordinal resolved ("worker=3"):
                                   what the generator gets */
    char ordinal_field[64];     /* the field given as ordinal; "" if none */
    uint64_t ordinal;           /* its value */
    char ordinal_from[160];     /* where it came from: "host name web-3",
                                   "POD_ORDINAL=3" */
    bool lease_off;             /* the ordinal's field is the one the lease
                                   would fill: no lease (the platform's
                                   ordinal stands in for it; restarts are
                                   covered by a state file under data-dir) */
    char note[512];             /* set by idmd_config_check: what it changed
                                   (see there), "" if nothing; printed as a
                                   comment by idmd_config_print */
    /* Where each key's value came from, for the messages of
     * idmd_config_check: "--key", "IDMINT_KEY" or "FILE:LINE" (its last
     * IDMD_SOURCE_MAX - 1 bytes, after "..."), "" for the default. Indexed
     * like the keys, in idmd_config_print's order. */
    char source[IDMD_KEYS_MAX][IDMD_SOURCE_MAX];
} idmd_config;

/* Fill c with the defaults. */
void idmd_config_defaults(idmd_config *c);

/*
 * Build the configuration from argv (argv[0] is the program), the
 * environment and the config file named by --config FILE (or IDMINT_CONFIG):
 * defaults < file < environment < flags. Sets *check_only for
 * --check-config, *help for --help (both meaningful only when it returns
 * 0; with --help it returns 0 without looking at anything else). 0, or -1
 * with err holding one line naming the key, the source and what is wrong.
 */
int idmd_config_build(idmd_config *c, int argc, char **argv, char **envp, bool *check_only,
                      bool *help, char *err, size_t errlen);

/* Set one key from text; source names where it came from ("flag",
 * "IDMINT_LISTEN", "FILE:LINE"). 0, or -1 with err. */
int idmd_config_set(idmd_config *c, const char *key, const char *value, const char *source,
                    char *err, size_t errlen);

/*
 * Every check of the settings that can be made without starting anything,
 * one function for --check-config and for a start, so that what one passes
 * the other does not refuse. On failure err holds one line naming the
 * source, the key, its value and what is wrong, and it returns -1: idmintd
 * exits 2.
 *
 * What it checks: the layout and epoch (an epoch in the future, a time field
 * already run out); node against the layout (unknown fields, values that do
 * not fit, the field the lease fills; an ordinal resolved from the host name
 * or its variable, and held against the field's range too); lease-field (a
 * node field of the layout); count-max against what the layout can mint in
 * one request; the lease URL and every store URL (known schemes; file:// and
 * sqlite:// take absolute paths); data-dir (a directory if it exists); token-file (a readable
 * regular file holding one token of 16 to IDMD_TOKEN_MAX printable bytes,
 * without spaces, then only line ends); opaque-key-file (a
 * readable regular file holding a key); clock's offset file; admin-listen
 * apart from listen. Files are opened without blocking (a FIFO is refused,
 * not waited on).
 *
 * What it fills in: node_values, ordinal_field, ordinal, ordinal_from and
 * lease_off from node (an ordinal for the field the lease would fill, with
 * neither lease nor lease-field set, turns the lease off; with either set
 * it is refused as two sources for one field). For settings left to their
 * defaults: data-dir made
 * absolute (the lease and store URLs derived from it must be); lease-field
 * resolved as the CLI does (worker, shard or machine, whichever the layout
 * has first, else its only node field); count-max lowered to
 * count_max_layout, said in note. It sets count_max_layout, the most ids one
 * request can always get from the layout within the generator's wait bound
 * (an all-or-nothing batch of more could only be refused). Calling it again
 * on its result changes nothing.
 */
int idmd_config_check(idmd_config *c, char *err, size_t errlen);

/* Every key with its value, one "key = value" line each (the token file's
 * path, never the token; a URL's password as ***), for --check-config and
 * the log. len: 8192 holds the longest configuration; less is cut. */
void idmd_config_print(const idmd_config *c, char *out, size_t len);

/* The usage text (--help): every key's flag, variable, meaning, bounds and
 * default, made from the key table the first time it is asked for. */
const char *idmd_config_usage(void);

/* The store URLs, store k at urls[k]: the store key split at white space,
 * or the one made from data-dir when it is empty. Their count (at least 1
 * once idmd_config_check passed). */
size_t idmd_config_stores(const idmd_config *c, char (*urls)[IDMD_URL_MAX]);

/* The lease coordinator's URL: the lease key, or the one made from data-dir
 * (file://DATA-DIR/leases) when it is empty. */
void idmd_config_lease_url(const idmd_config *c, char url[IDMD_URL_MAX]);

/* text (a value that may hold several URLs separated by white space) with
 * every URL's password masked (idm__url_mask, one URL at a time), into out
 * (always terminated, cut to cap). */
void idmd_mask_urls(const char *text, char *out, size_t cap);

/* ---- the ticket stores (handler.c) ---- */

struct idmd_app;
struct idm_store;

/*
 * The stores the store key names, for app's sequences: stores[0..n-1],
 * store k of n (1 to IDMD_STORES_MAX, copied; the caller keeps and closes
 * the stores after idmd_seqs_close). stores[0] is also app->store. Each
 * sequence is opened over all of them (idm_seq_opts.stores), with its floor
 * file FLOORS/NAME.floor (one store) or FLOORS/NAME@N.floor (N stores: a
 * record belongs to one number of stores); /healthz and /metrics report
 * each store's calls (idm__store_health). Without it (the unit tests),
 * app->store alone serves. 0, or -1 for n out of range.
 */
int idmd_stores_set(struct idmd_app *app, struct idm_store *const *stores, size_t n);

#endif /* IDMD_CONFIG_H */
