/* SPDX-License-Identifier: MIT */
/*
 * idmint CLI state files: where `idmint next` keeps its high-water mark by
 * default, and opening a generator on one (retrying while another idmint
 * process holds the file's lock).
 *
 * The default file is DIR/<name>-<hash>.state, where DIR is
 * $IDMINT_STATE_DIR, else $XDG_STATE_HOME/idmint, else
 * $HOME/.local/state/idmint; <name> is the preset name or "custom"; <hash>
 * is the 64-bit FNV-1a hash, as 16 lowercase hex digits, of the key text
 *     <layout text form>;epoch=<epoch unix ms>[;<field>=<value>]...
 * with one ";<field>=<value>" per node field in layout order, e.g.
 *     time:41@1ms,datacenter:5,worker:5,seq:12;epoch=1288834974657;datacenter=1;worker=3
 */
#include "cli.h"

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

char *cli_default_state_path(const char *cmd, const idm_layout *l,
                             const uint64_t *node)
{
    /* The directory. */
    char dir[4096];
    const char *v;
    int n;
    if (set_nonempty("IDMINT_STATE_DIR", &v)) {
        n = snprintf(dir, sizeof dir, "%s", v);
    } else if (set_nonempty("XDG_STATE_HOME", &v) && v[0] == '/') {
        n = snprintf(dir, sizeof dir, "%s/idmint", v);
    } else if (set_nonempty("HOME", &v)) {
        n = snprintf(dir, sizeof dir, "%s/.local/state/idmint", v);
    } else {
        cli_error(cmd, "no state directory: set IDMINT_STATE_DIR, "
                  "XDG_STATE_HOME or HOME, or give --state FILE or "
                  "--no-state");
        return NULL;
    }
    if (n < 0 || (size_t)n >= sizeof dir - 64) {
        cli_error(cmd, "state directory path is too long");
        return NULL;
    }

    /* The key text and its hash. */
    char key[IDM_LAYOUT_TEXT_MAX + 64 +
             IDM_LAYOUT_MAX_FIELDS * (IDM_FIELD_NAME_MAX + CLI_U64_TEXT_MAX + 2)];
    if (idm_layout_format(l, key, IDM_LAYOUT_TEXT_MAX) != 0) {
        cli_lib_error(cmd, IDM_EINVAL, "cannot format the layout");
        return NULL;
    }
    size_t len = strlen(key);
    len += (size_t)snprintf(key + len, sizeof key - len, ";epoch=%lld",
                            (long long)idm_layout_epoch(l));
    size_t count = idm_layout_field_count(l);
    for (size_t i = 0; i < count; i++) {
        idm_field_info f;
        if (idm_layout_field(l, i, &f) != 0 || f.kind != IDM_FIELD_NODE)
            continue;
        char val[CLI_U64_TEXT_MAX];
        cli_u64_dec(node[i], val);
        len += (size_t)snprintf(key + len, sizeof key - len, ";%s=%s",
                                f.name, val);
    }

    if (make_dirs(cmd, dir) != 0)
        return NULL;
    size_t size = strlen(dir) + 64;
    char *path = malloc(size);
    if (path == NULL) {
        cli_error(cmd, "out of memory");
        return NULL;
    }
    snprintf(path, size, "%s/%s-%016llx.state", dir, idm_layout_name(l),
             (unsigned long long)fnv1a64(key));
    return path;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_open_generator(idm_snowflake **out, idm_snowflake_opts *opts)
{
    const int64_t deadline = mono_ms() + 2000;
    for (;;) {
        if (opts->state_path != NULL) {
            struct stat st;
            opts->state_fresh =
                stat(opts->state_path, &st) != 0 && errno == ENOENT;
        }
        int rc = idm_snowflake_open(out, opts);
        if (rc != IDM_EBUSY || mono_ms() >= deadline)
            return rc;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}
