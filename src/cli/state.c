/* SPDX-License-Identifier: MIT */
/*
 * idmint CLI state files: where `idmint next` keeps its high-water mark by
 * default, and opening a generator on one (retrying while another idmint
 * process holds the file's lock).
 *
 * The default file is DIR/ids-<hash>.state, where DIR is $IDMINT_STATE_DIR,
 * else $XDG_STATE_HOME/idmint, else $HOME/.local/state/idmint; <hash> is the
 * 64-bit FNV-1a hash, as 16 lowercase hex digits, of the key text
 *     ids 1;epoch=<ms>;tick=<ms>;time@<shift>;seq:<bits>@<shift>;node=<hex>
 * which holds exactly what decides the ids a generator mints: the epoch and
 * tick, where the time and sequence fields sit, the sequence's width, and
 * the bits the node values set (0x and 16 lowercase hex digits), e.g.
 *     ids 1;epoch=1288834974657;tick=1;time@22;seq:12@0;node=0x0000000000023000
 * for twitter with datacenter=1, worker=3. No name is in it: not a preset's,
 * not a field's, and not the time field's width (which only says when the
 * ids run out). Every spelling of one layout and its node values, and every
 * layout that mints the same ids, shares one file and one lock.
 *
 * Earlier builds named the file <name>-<hash>.state, <name> being the
 * preset name or "custom" and <hash> that of
 *     <layout text form>;epoch=<epoch unix ms>[;<field>=<value>]...
 * so that two spellings of one layout had two files and two locks, and ran
 * at once on the same ids. Such a file, if present, still holds a mark that
 * must be honoured: cli_legacy_state_paths lists the ones the layout and
 * node values could have used, and `idmint next` opens a generator on each
 * (taking its lock, so that an older idmint cannot run on it meanwhile) and
 * starts above its mark.
 */
#include "cli.h"
#include "common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3u;
    }
    return h;
}

/* mkdir -p, creating missing directories with mode 0700. */
static int make_dirs(const char *cmd, const char *path)
{
    char *p = strdup(path);
    if (p == NULL) {
        cli_error(cmd, "out of memory");
        return -1;
    }
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            cli_error(cmd, "cannot create state directory '%s': %s", p,
                      strerror(errno));
            free(p);
            return -1;
        }
        *s = saved;
        if (saved == '\0')
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cli_error(cmd, "state directory '%s' is not a directory", path);
        free(p);
        return -1;
    }
    free(p);
    return 0;
}

static bool set_nonempty(const char *name, const char **out)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        return false;
    *out = v;
    return true;
}

/* The default state directory into dir (size bytes, with room for a file
 * name after it); false after printing why not. */
static bool state_dir(const char *cmd, char *dir, size_t size)
{
    const char *v;
    int n;
    if (set_nonempty("IDMINT_STATE_DIR", &v)) {
        n = snprintf(dir, size, "%s", v);
    } else if (set_nonempty("XDG_STATE_HOME", &v) && v[0] == '/') {
        n = snprintf(dir, size, "%s/idmint", v);
    } else if (set_nonempty("HOME", &v)) {
        n = snprintf(dir, size, "%s/.local/state/idmint", v);
    } else {
        cli_error(cmd, "no state directory: set IDMINT_STATE_DIR, "
                  "XDG_STATE_HOME or HOME, or give --state FILE or "
                  "--no-state");
        return false;
    }
    if (n < 0 || (size_t)n >= size - 64) {
        cli_error(cmd, "state directory path is too long");
        return false;
    }
    return true;
}

char *cli_state_dir(const char *cmd)
{
    char dir[4096];
    char *out;
    if (!state_dir(cmd, dir, sizeof dir) || make_dirs(cmd, dir) != 0)
        return NULL;
    /* Absolute: leases name their directory by it. */
    out = realpath(dir, NULL);
    if (out == NULL)
        cli_error(cmd, "state directory '%s': %s", dir, strerror(errno));
    return out;
}

char *cli_embedded_lease_url(const char *cmd, const char *dir, const idm_layout *l,
                             const char *fields)
{
    char text[IDM_LAYOUT_TEXT_MAX], key[IDM_LAYOUT_TEXT_MAX + 320];
    char *url;
    if (idm_layout_format(l, text, sizeof text) != 0)
        text[0] = '\0';
    snprintf(key, sizeof key, "lease 1;%s;epoch=%lld;%s", text, (long long)idm_layout_epoch(l),
             fields);
    url = malloc(strlen(dir) + 64);
    if (url != NULL) {
        sprintf(url, "%s/leases", dir);
        if (make_dirs(cmd, url) != 0) {
            free(url);
            return NULL;
        }
    }
    if (url == NULL) {
        cli_error(cmd, "out of memory");
        return NULL;
    }
    sprintf(url, "file://%s/leases/%016llx", dir, (unsigned long long)fnv1a64(key));
    return url;
}

/* The key text of the file name (see the top of this file). */
static void ids_key(const idm_layout *l, const uint64_t *node, char *key,
                    size_t size)
{
    unsigned time_shift = 0, seq_bits = 0, seq_shift = 0;
    uint64_t node_bits = 0;
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0)
            continue;
        if (f.kind == IDM_FIELD_TIME) {
            time_shift = f.shift;
        } else if (f.kind == IDM_FIELD_SEQ) {
            seq_bits = f.bits;
            seq_shift = f.shift;
        } else {
            node_bits |= (node[i] & f.max) << f.shift;
        }
    }
    char hex[CLI_U64_TEXT_MAX];
    cli_u64_hex(node_bits, hex);
    snprintf(key, size, "ids 1;epoch=%lld;tick=%lld;time@%u;seq:%u@%u;node=%s",
             (long long)idm_layout_epoch(l), (long long)idm_layout_tick_ms(l),
             time_shift, seq_bits, seq_shift, hex);
}

/* The key text of the earlier builds' file names, or false if the layout
 * cannot be formatted (cannot happen: size holds any layout's key). */
static bool legacy_key(const idm_layout *l, const uint64_t *node, char *key,
                       size_t size)
{
    if (idm_layout_format(l, key, IDM_LAYOUT_TEXT_MAX) != 0)
        return false;
    size_t len = strlen(key);
    len += (size_t)snprintf(key + len, size - len, ";epoch=%lld",
                            (long long)idm_layout_epoch(l));
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        char val[CLI_U64_TEXT_MAX];
        cli_u64_dec(node[i], val);
        len += (size_t)snprintf(key + len, size - len, ";%s=%s", f.name, val);
    }
    return true;
}

char *cli_default_state_path(const char *cmd, const idm_layout *l,
                             const uint64_t *node)
{
    char dir[4096];
    if (!state_dir(cmd, dir, sizeof dir))
        return NULL;
    char key[256];
    ids_key(l, node, key, sizeof key);
    if (make_dirs(cmd, dir) != 0)
        return NULL;
    size_t size = strlen(dir) + 64;
    char *path = malloc(size);
    if (path == NULL) {
        cli_error(cmd, "out of memory");
        return NULL;
    }
    snprintf(path, size, "%s/ids-%016llx.state", dir,
             (unsigned long long)fnv1a64(key));
    return path;
}

char **cli_legacy_state_paths(const char *cmd, const idm_layout *l,
                              const uint64_t *node)
{
    char dir[4096];
    char key[IDM_LAYOUT_TEXT_MAX + 64 +
             IDM_LAYOUT_MAX_FIELDS * (IDM_FIELD_NAME_MAX + CLI_U64_TEXT_MAX + 2)];
    if (!state_dir(cmd, dir, sizeof dir))
        return NULL;
    if (!legacy_key(l, node, key, sizeof key)) {
        cli_lib_error(cmd, IDM_EINVAL, "cannot format the layout");
        return NULL;
    }
    uint64_t hash = fnv1a64(key);

    /* The earlier name was the layout's preset name or "custom"; the hash
     * covers the text form, the epoch and the node values, so a file under
     * any of those names with this hash was written for these ids. */
    const char *const *presets = idm_layout_preset_names();
    size_t names = 1;
    while (presets[names - 1] != NULL)
        names++;
    char **paths = calloc(names + 1, sizeof *paths);
    if (paths == NULL) {
        cli_error(cmd, "out of memory");
        return NULL;
    }
    size_t found = 0;
    for (size_t i = 0; i < names; i++) {
        const char *name = i + 1 < names ? presets[i] : "custom";
        size_t size = strlen(dir) + strlen(name) + 32;
        char *path = malloc(size);
        if (path == NULL) {
            cli_error(cmd, "out of memory");
            cli_free_paths(paths);
            return NULL;
        }
        snprintf(path, size, "%s/%s-%016llx.state", dir, name,
                 (unsigned long long)hash);
        struct stat st;
        if (stat(path, &st) == 0)
            paths[found++] = path;
        else
            free(path);
    }
    return paths;
}

void cli_free_paths(char **paths)
{
    if (paths == NULL)
        return;
    for (char **p = paths; *p != NULL; p++)
        free(*p);
    free(paths);
}

int cli_open_generator(idm_snowflake **out, idm_snowflake_opts *opts)
{
    const int64_t deadline = idm__mono_ns() + INT64_C(2000000000); /* 2 s */
    for (;;) {
        if (opts->state_path != NULL) {
            struct stat st;
            opts->state_fresh =
                stat(opts->state_path, &st) != 0 && errno == ENOENT;
        }
        int rc = idm_snowflake_open(out, opts);
        if (rc != IDM_EBUSY || idm__mono_ns() >= deadline)
            return rc;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}
