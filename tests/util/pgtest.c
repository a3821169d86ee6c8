/* SPDX-License-Identifier: MIT */
/* A PostgreSQL server for a test program: see pgtest.h. */
#include "pgtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char g_script[4096];
static const char *g_who = "test";
static char *g_dir;
static int g_port;

int idm_test_pg_init(const char *who)
{
    const char *data = getenv("IDM_TEST_DATA");
    g_who = who;
    if (data == NULL) {
        fprintf(stderr, "%s: IDM_TEST_DATA is not set (run through ctest)\n", who);
        return -1;
    }
    snprintf(g_script, sizeof g_script, "%s/../../scripts/pg-test-server.sh", data);
    if (access(g_script, R_OK) != 0) {
        fprintf(stderr, "%s: no %s\n", who, g_script);
        return -1;
    }
    atexit(idm_test_pg_stop);
    return 0;
}

/* Start with the environment prefix env ("" or "IDM_PG_FAKETIME=... "). */
static int start_with(const char *env)
{
    char cmd[8400], out[64] = "";
    FILE *p;
    g_dir = idm_test_tmpdir();
    /* The server runs as postgres when we are root: let it in. */
    chmod(g_dir, 0755);
    snprintf(cmd, sizeof cmd, "%sbash '%s' start '%s'", env, g_script, g_dir);
    p = popen(cmd, "r");
    if (p == NULL || fgets(out, sizeof out, p) == NULL) {
        if (p != NULL)
            pclose(p);
        fprintf(stderr, "%s: the PostgreSQL server did not start\n", g_who);
        return -1;
    }
    if (pclose(p) != 0 || (g_port = atoi(out)) <= 0) {
        fprintf(stderr, "%s: the PostgreSQL server did not start (%s)\n", g_who, out);
        return -1;
    }
    return g_port;
}

int idm_test_pg_start(void)
{
    return start_with("");
}

int idm_test_pg_start_faketime(const char *offset)
{
    char env[128];
    snprintf(env, sizeof env, "IDM_PG_FAKETIME='%s' ", offset);
    return start_with(env);
}

/* Run the script's command cmd on the server's directory (with arg); the
 * test fails if it does. */
static void script(const char *cmd, const char *arg)
{
    char line[8400];
    assert_non_null(g_dir);
    snprintf(line, sizeof line, "bash '%s' %s '%s' %s >/dev/null", g_script, cmd, g_dir, arg);
    CHECK(system(line) == 0, "%s: pg-test-server.sh %s %s failed", g_who, cmd, arg);
}

void idm_test_pg_faketime(const char *offset)
{
    char arg[128];
    snprintf(arg, sizeof arg, "'%s'", offset);
    script("faketime", arg);
}

void idm_test_pg_halt(void)
{
    script("stop", "");
}

void idm_test_pg_restart(void)
{
    script("restart", "");
}

void idm_test_pg_stop(void)
{
    char cmd[8400];
    if (g_dir == NULL)
        return;
    snprintf(cmd, sizeof cmd, "bash '%s' stop '%s' >/dev/null 2>&1", g_script, g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "%s: stopping the PostgreSQL server failed\n", g_who);
    idm_test_rmtree(g_dir);
    free(g_dir);
    g_dir = NULL;
}

void idm_test_pg_sql(const char *db, const char *sql)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd,
             "psql -X -q -h 127.0.0.1 -p %d -U postgres -d %s -v ON_ERROR_STOP=1 -c \"%s\" "
             ">/dev/null",
             g_port, db, sql);
    CHECK(system(cmd) == 0, "psql failed: %s", sql);
}

void idm_test_pg_query(const char *db, const char *sql, char *out, size_t cap)
{
    char cmd[8400];
    FILE *p;
    snprintf(cmd, sizeof cmd,
             "psql -X -q -At -h 127.0.0.1 -p %d -U postgres -d %s -v ON_ERROR_STOP=1 -c \"%s\"",
             g_port, db, sql);
    p = popen(cmd, "r");
    assert_non_null(p);
    out[0] = '\0';
    if (fgets(out, (int)cap, p) == NULL)
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    CHECK(pclose(p) == 0, "psql failed: %s", sql);
}
