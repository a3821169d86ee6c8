/* SPDX-License-Identifier: MIT */
/*
 * idmintd: the HTTP id service. This file sets the service up from its
 * configuration (the layout, a worker id leased for the generator, the
 * 128-bit generators, the ticket store), starts the HTTP layer, logs one
 * line per event to stderr, and on SIGTERM or SIGINT stops accepting,
 * finishes the requests in flight, releases the lease and exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "common.h"
#include "config.h"
#include "http.h"
#include "ordinal.h"
#include "sdnotify.h"
#include "store_within.h"

extern char **environ;

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "idmintd: %s\n", line);
}

/* ------------------------------------------------------------ the clock */

/* "offset-file:PATH": the system clock plus a signed ms offset read from
 * PATH every 20 ms by a thread (tests step the clock by writing the file).
 * The monotonic clock is the system's. */
typedef struct offset_clock {
    idm_clock clock;
    char path[IDMD_PATH_MAX];
    _Atomic int64_t offset_ns;
    _Atomic int stop;
    pthread_t th;
} offset_clock;

static offset_clock g_oc;

static idm_wall_ns oc_wall(void *ctx)
{
    offset_clock *oc = ctx;
    const idm_clock *sys = idm_clock_system();
    return sys->wall_ns(sys->ctx) + atomic_load_explicit(&oc->offset_ns, memory_order_relaxed);
}

static idm_mono_ns oc_mono(void *ctx)
{
    const idm_clock *sys = idm_clock_system();
    (void)ctx;
    return sys->mono_ns(sys->ctx);
}

static void oc_sleep(void *ctx, int64_t ns)
{
    const idm_clock *sys = idm_clock_system();
    (void)ctx;
    sys->sleep_ns(sys->ctx, ns);
}

static int oc_read(offset_clock *oc)
{
    char buf[64];
    long long ms;
    char *end;
    ssize_t n;
    int fd = open(oc->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    errno = 0;
    ms = strtoll(buf, &end, 10);
    while (*end == '\n' || *end == ' ')
        end++;
    if (errno != 0 || end == buf || *end != '\0' || ms < -86400000000LL || ms > 86400000000LL)
        return -1;
    atomic_store(&oc->offset_ns, (int64_t)ms * 1000000);
    return 0;
}

static void *oc_loop(void *arg)
{
    offset_clock *oc = arg;
    while (!atomic_load(&oc->stop)) {
        struct timespec ts = {0, 20 * 1000000L};
        (void)oc_read(oc);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int clock_setup(const idmd_config *cfg, const idm_clock **out)
{
    if (strcmp(cfg->clock, "system") == 0) {
        *out = idm_clock_system();
        return 0;
    }
    snprintf(g_oc.path, sizeof g_oc.path, "%s", cfg->clock + strlen("offset-file:"));
    if (oc_read(&g_oc) != 0) {
        say("clock: cannot read an offset in ms from %s", g_oc.path);
        return -1;
    }
    g_oc.clock.ctx = &g_oc;
    g_oc.clock.wall_ns = oc_wall;
    g_oc.clock.mono_ns = oc_mono;
    g_oc.clock.sleep_ns = oc_sleep;
    if (pthread_create(&g_oc.th, NULL, oc_loop, &g_oc) != 0) {
        say("clock: cannot start its thread");
        return -1;
    }
    say("clock: the system clock plus the offset in %s (for tests)", g_oc.path);
    *out = &g_oc.clock;
    return 0;
}

/* ---------------------------------------------------------------- setup */

static int make_dir(const char *path)
{
    char tmp[IDMD_PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* DATA-DIR/floors, where each sequence's allocator keeps how far the store
 * has been seen to go (opts.floor_file, FLOORS/NAME.floor: see handler.c):
 * with one store there is no other store to keep it, and a store restored
 * from an old backup would hand out ids again, across restarts too. */
static int floors_dir(idmd_app *app, const idmd_config *cfg)
{
    struct stat st;
    int n = snprintf(app->floors_dir, sizeof app->floors_dir, "%s/floors", cfg->data_dir);
    if (n < 0 || (size_t)n >= sizeof app->floors_dir) {
        say("data-dir %s: too long for its floors directory", cfg->data_dir);
        return -1;
    }
    if (mkdir(app->floors_dir, 0700) != 0 && errno != EEXIST) {
        say("data-dir %s: cannot make the directory %s, where the sequences' floors are kept: "
            "%s",
            cfg->data_dir, app->floors_dir, strerror(errno));
        return -1;
    }
    if (stat(app->floors_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        say("data-dir %s: %s, where the sequences' floors are kept, is not a directory",
            cfg->data_dir, app->floors_dir);
        return -1;
    }
    return 0;
}

/* The bearer token: the whole file without its final line ends, 16 to
 * IDMD_TOKEN_MAX bytes of printable ASCII without spaces, into out (room
 * for IDMD_TOKEN_MAX + 1). A longer token is refused, never cut: a token
 * cut short would let its prefix in. */
static int read_token(const char *path, char *out, size_t *len)
{
    /* room for the longest token, its line ends and a byte that says more */
    static char buf[IDMD_TOKEN_MAX + 64];
    FILE *f = fopen(path, "re");
    size_t n;
    bool more;
    int rc = -1;
    if (f == NULL) {
        say("token-file %s: %s", path, strerror(errno));
        return -1;
    }
    n = fread(buf, 1, sizeof buf, f);
    more = n == sizeof buf;
    if (ferror(f)) {
        say("token-file %s: %s", path, strerror(errno));
        fclose(f);
        goto out;
    }
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (more || n > IDMD_TOKEN_MAX) {
        say("token-file %s: the token is longer than %d bytes, the most accepted", path,
            IDMD_TOKEN_MAX);
        goto out;
    }
    if (n < 16 || memchr(buf, '\0', n) != NULL) {
        say("token-file %s: want a token of 16 to %d bytes of text on one line", path,
            IDMD_TOKEN_MAX);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (buf[i] <= ' ' || buf[i] > '~') {
            say("token-file %s: the token may hold only printable ASCII without spaces", path);
            goto out;
        }
    }
    memcpy(out, buf, n);
    out[n] = '\0';
    *len = n;
    rc = 0;
out:
    memset(buf, 0, sizeof buf); /* the token stays in one place only */
    return rc;
}

/* The node values of cfg->node ("a=1,b=2"; an ordinal resolved by
 * idmd_config_check: node_values) into opts. */
static int set_nodes(const idmd_config *cfg, idm_snowflake_opts *o)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", cfg->node_values);
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        uint64_t v;
        if (eq == NULL)
            return -1;
        *eq = '\0';
        if (idm_u64_parse(eq + 1, &v) != 0 || idm_snowflake_opts_node(o, tok, v) != 0) {
            say("node %s=%s: %s", tok, eq + 1, idm_error_detail());
            return -1;
        }
    }
    return 0;
}

/* The generator's settings from the configuration: the layout, the clock,
 * the policies, the node values given (the leased field is left to the
 * lease); node fields neither gives are 0, said once. */
static int generator_opts(idmd_app *app, const idmd_config *cfg, idm_snowflake_opts *o)
{
    int leased = idm_layout_field_index(app->layout, cfg->lease_field);
    idm_snowflake_opts_init(o);
    o->layout = app->layout;
    o->clock = app->clock;
    o->backwards = strcmp(cfg->policy, "refuse") == 0          ? IDM_BACKWARDS_REFUSE
                   : strcmp(cfg->policy, "wait") == 0          ? IDM_BACKWARDS_WAIT
                   : strcmp(cfg->policy, "change-worker") == 0 ? IDM_BACKWARDS_CHANGE_WORKER
                                                               : IDM_BACKWARDS_LOGICAL;
    o->exhaust = strcmp(cfg->exhaust, "borrow") == 0 ? IDM_EXHAUST_BORROW : IDM_EXHAUST_WAIT;
    if (set_nodes(cfg, o) != 0)
        return -1;
    for (size_t i = 0; i < idm_layout_field_count(app->layout); i++) {
        idm_field_info fi;
        if ((int)i != leased && idm_layout_field(app->layout, i, &fi) == 0 &&
            fi.kind == IDM_FIELD_NODE && !(o->node_set & (UINT32_C(1) << i))) {
            (void)idm_snowflake_opts_node(o, fi.name, 0);
            say("node field %s: not set (key node), 0", fi.name);
        }
    }
    memcpy(app->node, o->node, sizeof app->node); /* for /v1/status */
    return 0;
}

/* Said as soon as the worker id is claimed, before the wait for the
 * previous holder's mark (up to a TTL and more). ctx: the URL, masked. */
static void log_claim(void *ctx, uint32_t worker, idm_unix_ms mark, int64_t wait_ms)
{
    say("lease: worker id %u from %s (previous mark %lld)", (unsigned)worker, (const char *)ctx,
        (long long)mark);
    if (wait_ms > 0)
        say("lease: waiting %lld ms for the clock to pass the previous holder's mark",
            (long long)wait_ms);
}

/* The leased generator's events (resumed, lost, re-claimed, worker
 * changed), one log line each; a new worker id goes to systemd's status. */
static void log_event(void *ctx, const char *line)
{
    const idmd_app *app = ctx;
    say("lease: %s", line);
    if (app->leased != NULL &&
        (strncmp(line, "re-claimed", 10) == 0 || strncmp(line, "clock stepped", 13) == 0)) {
        idm_leased_status st;
        idm_leased_status_get(app->leased, &st);
        idmd_notify_status("minting as worker %u (lease, layout %s; %llu re-claims)",
                           (unsigned)st.worker, idm_layout_name(app->layout),
                           (unsigned long long)st.reclaims);
    }
}

/*
 * Resume the claim a killed idmintd left in DATA-DIR/claims, or claim a
 * worker id and wait out the previous holder's mark; open the generator and
 * keep the lease (leased.h): re-claims after a loss, and with policy
 * change-worker another worker id after a large clock step back.
 */
static int lease_and_generator(idmd_app *app, const idmd_config *cfg)
{
    idm_leased_opts lo;
    idm_snowflake_opts o;
    char url[IDMD_URL_MAX], shown[IDMD_URL_MAX], dir[IDMD_PATH_MAX + 16];
    const char *boot;
    if (generator_opts(app, cfg, &o) != 0)
        return -1;
    idmd_config_lease_url(cfg, url);
    snprintf(dir, sizeof dir, "%s/claims", cfg->data_dir);
    idm__url_mask(url, shown, sizeof shown);
    idm_leased_opts_init(&lo);
    lo.lease.url = url;
    lo.lease.ttl_ms = cfg->lease_ttl_ms;
    /* The coordinator records what its worker ids are ids of (the lease
     * field of this layout) and refuses a server that would mint another
     * field or layout with them. */
    lo.lease.on_claim = log_claim;
    lo.lease.on_claim_ctx = shown;
    /* Tests inject a reboot. */
    boot = getenv("IDMINT_BOOT_ID_FILE");
    lo.lease.boot_id_file = boot != NULL && boot[0] != '\0' ? boot : NULL;
    lo.gen = o;
    lo.field = cfg->lease_field;
    lo.state_dir = dir;
    lo.reclaim = true;
    lo.on_event = log_event;
    lo.event_ctx = app;
    if (idm_leased_open(&app->leased, &lo) != 0) {
        say("lease %s: %s", shown, idm_error_detail());
        return -1;
    }
    app->lease_ttl_ms = cfg->lease_ttl_ms;
    return 0;
}

/* ---------------------------------------------------- the ordinal */

/*
 * A node field from the platform's ordinal (node FIELD=ordinal[:VAR],
 * resolved by idmd_config_check): its lock, DATA-DIR/ordinal-FIELD-N.lock,
 * held for the life of the process, so that a second idmintd on this data
 * directory with the same ordinal refuses to start (ordinal.h).
 */
static int ordinal_lock(const idmd_config *cfg)
{
    char why[700];
    if (cfg->ordinal_field[0] == '\0')
        return 0;
    if (idm__ordinal_lock(cfg->data_dir, cfg->ordinal_field, cfg->ordinal, "idmintd", why,
                          sizeof why) < 0) {
        say("node %s=%llu (the ordinal from %s): %s", cfg->ordinal_field,
            (unsigned long long)cfg->ordinal, cfg->ordinal_from, why);
        return -1;
    }
    say("node: %s=%llu, the ordinal from %s%s", cfg->ordinal_field,
        (unsigned long long)cfg->ordinal, cfg->ordinal_from,
        cfg->lease_off ? "; no lease for it (trusting the platform to give each process its own "
                         "ordinal)"
                       : "");
    return 0;
}

/*
 * The generator when the ordinal fills the field a lease would (lease_off):
 * no coordinator, so what keeps a restart above the ids minted before is a
 * state file, DATA-DIR/ordinal-FIELD-N.state (the generator's high-water
 * mark, as the CLI's default state files), guarded by the ordinal's lock
 * and its own.
 */
#define ORDINAL_MARK_WAIT_MS 10000

static int ordinal_generator(idmd_app *app, const idmd_config *cfg)
{
    idm_snowflake_opts o;
    char path[IDMD_PATH_MAX + 96];
    struct stat st;
    int rc;
    if (generator_opts(app, cfg, &o) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/ordinal-%s-%llu.state", cfg->data_dir, cfg->ordinal_field,
             (unsigned long long)cfg->ordinal);
    o.state_path = path;
    /* Missing: the first start here. A damaged one is refused (its mark
     * cannot be known), as the CLI refuses it. */
    o.state_fresh = stat(path, &st) != 0 && errno == ENOENT;
    /* A process killed while minting leaves a mark up to the generator's
     * reservation ahead of the clock: a restart waits for the clock to pass
     * it (as a lease's new holder waits for the previous mark), for at most
     * ORDINAL_MARK_WAIT_MS; a mark further ahead is refused. */
    int64_t until = idm__mono_ns() + (int64_t)ORDINAL_MARK_WAIT_MS * 1000000;
    bool said = false;
    while ((rc = idm_snowflake_open(&app->gen, &o)) == IDM_ECLOCKBACK && idm__mono_ns() < until) {
        struct timespec pause = {0, 20 * 1000000L};
        if (!said)
            say("generator: waiting for the clock to pass the mark in %s (%s)", path,
                idm_error_detail());
        said = true;
        nanosleep(&pause, NULL);
    }
    if (rc != 0) {
        say("generator (state file %s): %s", path, idm_error_detail());
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------- the stores */

static idm_store *g_stores[IDMD_STORES_MAX];
static size_t g_nstores;

/*
 * The stores of the store key, store k of n in the order given, each
 * opened by its first call (idm__store_open_late) with store-timeout as
 * its bound: a store that is down at start is passed over by the
 * sequences (the others serve, Flickr style) and taken in when it answers.
 * Then the ones that answer now are asked which database they reach: one
 * database listed twice (under two spellings) would be store k and store j
 * of n at once, and is refused, as `idmint seq create` refuses it. A URL
 * this build cannot open (a bad scheme, a bad option) stops the start; so
 * does a single store that does not answer (as before several were
 * possible: a server with nothing to serve segments from says so at once).
 */
static int stores_setup(idmd_app *app, const idmd_config *cfg)
{
    char(*urls)[IDMD_URL_MAX] = calloc(IDMD_STORES_MAX, sizeof *urls);
    char(*ids)[IDM_STORE_IDENTITY_MAX] = calloc(IDMD_STORES_MAX, sizeof *ids);
    size_t n;
    int rc = -1, up = 0;
    if (urls == NULL || ids == NULL) {
        say("store: out of memory");
        goto out;
    }
    n = idmd_config_stores(cfg, urls);
    for (size_t k = 0; k < n; k++) {
        char shown[2 * IDMD_URL_MAX];
        idm__url_mask(urls[k], shown, sizeof shown);
        if (idm__store_open_late(&g_stores[k], urls[k], cfg->store_timeout_ms) != 0) {
            say("store %s: %s", shown, idm_error_detail());
            goto out;
        }
        g_nstores = k + 1;
        if (idm_store_identity(g_stores[k], ids[k], sizeof ids[k]) != 0) {
            if (n == 1) {
                say("store %s: %s", shown, idm_error_detail());
                goto out;
            }
            say("store %zu of %zu: %s: not answering now (%s); the others serve, and it is "
                "asked again on use",
                k, n, shown, idm_error_detail());
            ids[k][0] = '\0';
            continue;
        }
        up++;
        for (size_t j = 0; j < k; j++) {
            if (ids[j][0] != '\0' && strcmp(ids[j], ids[k]) == 0) {
                say("store: stores %zu and %zu of %zu (%s and %s) are the same database: give "
                    "each store once",
                    j, k, n, idm_store_url(g_stores[j]), shown);
                goto out;
            }
        }
        if (n > 1)
            say("store %zu of %zu (ids = %zu mod %zu): %s", k, n, k, n, shown);
        else
            say("store: %s", shown);
    }
    if (up == 0)
        say("store: none of the %zu stores answers now; segment ids are served once one does",
            n);
    if (idmd_stores_set(app, g_stores, g_nstores) != 0) {
        say("store: %zu stores, more than %d", g_nstores, IDMD_STORES_MAX);
        goto out;
    }
    rc = 0;
out:
    free(urls);
    free(ids);
    return rc;
}

static void stores_close(void)
{
    for (size_t k = 0; k < g_nstores; k++)
        idm_store_close(g_stores[k]);
    g_nstores = 0;
}

/* ------------------------------------------------------------ secrets */

/*
 * idm__argv_hide_secrets masks the first URL of an argument; the store key
 * takes several in one ("--store 'sqlite:///a postgres://u:pw@h/db'"): every
 * argument holding white space and a URL is masked URL by URL the same way
 * (copied to the heap, the bytes ps shows overwritten).
 */
static void hide_store_secrets(int argc, char **argv)
{
    /* The copies stay reachable from here: idm__argv_hide_secrets, next,
     * may point argv[i] at a copy of its own (a leak checker would report
     * ours otherwise). */
    static char **kept;
    kept = calloc((size_t)argc, sizeof *kept);
    for (int i = 1; i < argc; i++) {
        size_t n = strlen(argv[i]);
        char *masked, *copy;
        if (strstr(argv[i], "://") == NULL || strcspn(argv[i], " \t\n\r\f\v") == n)
            continue;
        masked = malloc(2 * n + 64);
        if (masked == NULL)
            return;
        idmd_mask_urls(argv[i], masked, 2 * n + 64);
        if (strcmp(masked, argv[i]) == 0 || (copy = strdup(argv[i])) == NULL) {
            free(masked);
            continue;
        }
        memset(argv[i], '*', n);
        memcpy(argv[i], masked, strlen(masked) < n ? strlen(masked) : n);
        argv[i] = copy;
        if (kept != NULL)
            kept[i] = copy;
        free(masked);
    }
}

/* The worker id for messages: the lease's, or the ordinal's. */
static unsigned worker_shown(const idmd_app *app, const idmd_config *cfg)
{
    if (app->leased != NULL) {
        idm_leased_status st;
        idm_leased_status_get(app->leased, &st);
        return (unsigned)st.worker;
    }
    return (unsigned)cfg->ordinal;
}

static int setup(idmd_app *app, const idmd_config *cfg)
{
    int rc;
    app->cfg = cfg;
    if (idmd_seqs_init(app) != 0) {
        say("cannot make the sequence table's lock");
        return -1;
    }
    if (make_dir(cfg->data_dir) != 0) {
        say("data-dir %s: %s", cfg->data_dir, strerror(errno));
        return -1;
    }
    if (clock_setup(cfg, &app->clock) != 0)
        return -1;
    {
        char e[32];
        snprintf(e, sizeof e, "%lld", (long long)cfg->epoch);
        rc = idm_layout_from_spec(&app->layout, cfg->layout, cfg->epoch_set ? e : NULL);
    }
    if (rc != 0) {
        say("layout %s: %s", cfg->layout, idm_error_detail());
        return -1;
    }
    if (ordinal_lock(cfg) != 0)
        return -1;
    if (cfg->lease_off ? ordinal_generator(app, cfg) != 0 : lease_and_generator(app, cfg) != 0)
        return -1;
    if (idm_uuid7_gen_new(&app->uuid7, app->clock, NULL) != 0 ||
        idm_ulid_gen_new(&app->ulid, app->clock, NULL, true) != 0) {
        say("128-bit generators: %s", idm_error_detail());
        return -1;
    }
    if (stores_setup(app, cfg) != 0)
        return -1;
    if (floors_dir(app, cfg) != 0)
        return -1;
    if (cfg->opaque_key_file[0] != '\0') {
        if (idm_opaque_key_load(cfg->opaque_key_file, &app->opaque_key) != 0) {
            say("opaque-key-file: %s", idm_error_detail());
            return -1;
        }
        app->has_opaque = true;
    }
    if (cfg->token_file[0] != '\0') {
        if (read_token(cfg->token_file, app->token, &app->token_len) != 0)
            return -1;
    }
    return 0;
}

/* Nothing mints any more when this runs (the HTTP layer has stopped). The
 * lease goes first: closing the sequences waits for the store calls in
 * progress (each within store-timeout), and the worker id need not. */
static void teardown(idmd_app *app)
{
    if (app->leased != NULL) {
        /* Releases the worker id with the exact last tick; the generators
         * go with it. */
        int rc = idm_leased_close(app->leased);
        if (rc != 0)
            say("lease: release failed: %s", idm_error_detail());
        else
            say("lease: released");
        app->leased = NULL;
    }
    if (app->cfg != NULL)
        idmd_seqs_close(app);
    if (app->gen != NULL)
        idm_snowflake_close(app->gen);
    idm_uuid7_gen_free(app->uuid7);
    idm_ulid_gen_free(app->ulid);
    stores_close(); /* app->store is the first of them */
    app->store = NULL;
    idm_layout_free(app->layout);
    if (g_oc.clock.ctx != NULL) {
        atomic_store(&g_oc.stop, 1);
        pthread_join(g_oc.th, NULL);
    }
}

/* --------------------------------------------------------------- main */

/* READY=1 for systemd (Type=notify), once the listeners are up, with a
 * STATUS= line saying what this process mints as. */
static void notify_ready(const idmd_app *app, const idmd_config *cfg, const idmd_http *http)
{
    if (app->leased != NULL)
        idmd_notify_ready("minting as %s %u (leased, layout %s) on %s:%d", cfg->lease_field,
                          worker_shown(app, cfg), idm_layout_name(app->layout), cfg->listen_host,
                          idmd_http_port(http));
    else
        idmd_notify_ready("minting as %s %llu (the ordinal from %s, layout %s) on %s:%d",
                          cfg->ordinal_field, (unsigned long long)cfg->ordinal,
                          cfg->ordinal_from, idm_layout_name(app->layout), cfg->listen_host,
                          idmd_http_port(http));
}

int main(int argc, char **argv)
{
    static idmd_config cfg;
    static idmd_app app;
    char err[512];
    bool check = false, help = false;
    sigset_t sigs;
    idmd_http *http = NULL;
    int lost_said = 0;

    /* Every URL of a store list first: idm__argv_hide_secrets masks an
     * argument's first URL only, and leaves ps a copy it made. */
    hide_store_secrets(argc, argv);
    idm__argv_hide_secrets(argc, argv);
    if (idmd_config_build(&cfg, argc, argv, environ, &check, &help, err, sizeof err) != 0) {
        fprintf(stderr, "idmintd: %s\n", err);
        return 2;
    }
    if (help) {
        fputs(idmd_config_usage(), stdout);
        return 0;
    }
    /* The same checks for --check-config and a start: a setting that would
     * fail at start fails here, with exit 2. */
    if (idmd_config_check(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "idmintd: %s\n", err);
        return 2;
    }
    if (check) {
        char out[8192];
        idmd_config_print(&cfg, out, sizeof out);
        fputs(out, stdout);
        return 0;
    }
    if (cfg.note[0] != '\0')
        say("%s", cfg.note);

    /* Every thread started from here on inherits the blocked signals; main
     * takes them with sigtimedwait. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    if (setup(&app, &cfg) != 0) {
        teardown(&app);
        return 1;
    }
    /* The monitor (clock watch, rates: /v1/status) from before the first
     * request, so its uptime and clock offset count from here. */
    if (idmd_monitor_init(&app) != 0 || idmd_monitor_start(&app) != 0) {
        say("cannot start the monitor thread");
        idmd_monitor_destroy(&app);
        teardown(&app);
        return 1;
    }
    if (idmd_http_start(&http, &app, &cfg, err, sizeof err) != 0) {
        say("%s", err);
        idmd_monitor_destroy(&app);
        teardown(&app);
        return 1;
    }
    say("listening on http://%s:%d (worker %u, layout %s); try: curl "
        "'http://%s:%d/v1/snowflake?count=3'",
        cfg.listen_host, idmd_http_port(http), worker_shown(&app, &cfg),
        idm_layout_name(app.layout), cfg.listen_host, idmd_http_port(http));
    if (idmd_http_admin_port(http) != 0)
        say("admin: /healthz, /metrics and /ping on http://%s:%d", cfg.admin_host,
            idmd_http_admin_port(http));
    notify_ready(&app, &cfg, http);

    for (;;) {
        struct timespec ts = {1, 0};
        idm_leased_status st;
        int sig = sigtimedwait(&sigs, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            say("%s: stopping (finishing the requests in flight)",
                sig == SIGTERM ? "SIGTERM" : "SIGINT");
            break;
        }
        if (app.leased == NULL) /* an ordinal's worker id: nothing to watch */
            continue;
        /* Losses, re-claims and changes are logged as they happen
         * (log_event); a loss not yet made good is said once more here. */
        idm_leased_status_get(app.leased, &st);
        if (st.lease.lost && !lost_said) {
            say("lease: worker id %u is lost (%s); minting stopped until a re-claim works, "
                "/healthz says 503",
                (unsigned)st.worker, idm_err_name(st.lease.last_error));
            lost_said = 1;
        } else if (!st.lease.lost) {
            lost_said = 0;
        }
    }
    atomic_store(&app.draining, 1);
    idmd_notify_stopping();
    idmd_http_stop(http);
    idmd_monitor_destroy(&app); /* stops its thread first */
    teardown(&app);
    say("stopped");
    return 0;
}
