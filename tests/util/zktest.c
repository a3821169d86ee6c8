/* SPDX-License-Identifier: MIT */
/* ZooKeeper test servers and a session of the test's own: see zktest.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "testutil.h"
#include "leasetest.h"
#include "zktest.h"

struct zktest_conn {
    zhandle_t *zh;
};

static char g_script[4096];

/* The script with args (a printf format): see leasetest_script. */
#define script(out, n, ...) leasetest_script(out, n, "IDM_ZK_OWNER", g_script, __VA_ARGS__)

int zktest_start(zktest_server *s, int members)
{
    memset(s, 0, sizeof *s);
    if (leasetest_script_path(g_script, sizeof g_script, "zktest", "zk-test-server.sh") != 0)
        return -1;
    s->dir = idm_test_tmpdir();
    s->members = members;
    if (script(s->eps, sizeof s->eps, "start '%s' %d", s->dir, members) != 0 ||
        s->eps[0] == '\0') {
        fprintf(stderr, "zktest: cannot start ZooKeeper (%d members) with %s\n", members,
                g_script);
        zktest_stop(s);
        return -1;
    }
    return 0;
}

void zktest_stop(zktest_server *s)
{
    if (s->dir == NULL)
        return;
    script(NULL, 0, "stop '%s'", s->dir);
    idm_test_rmtree(s->dir);
    free(s->dir);
    s->dir = NULL;
}

pid_t zktest_member_pid(const zktest_server *s, int n)
{
    char out[64];
    assert_int_equal(script(out, sizeof out, "pid '%s' %d", s->dir, n), 0);
    return (pid_t)atol(out);
}

int zktest_leader(const zktest_server *s)
{
    char out[64];
    assert_int_equal(script(out, sizeof out, "leader '%s'", s->dir), 0);
    return atoi(out);
}

void zktest_kill(const zktest_server *s, int n)
{
    assert_int_equal(script(NULL, 0, "kill '%s' %d", s->dir, n), 0);
}

void zktest_restart(const zktest_server *s, int n)
{
    assert_int_equal(script(NULL, 0, "restart '%s' %d", s->dir, n), 0);
}

/* ----------------------------------------------------- the test's session */

static void quiet(const char *message)
{
    (void)message;
}

static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)type;
    (void)state;
    (void)path;
    (void)ctx;
}

zktest_conn *zktest_connect(const char *eps)
{
    zktest_conn *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->zh = zookeeper_init2(eps, session_watcher, 30000, NULL, NULL, ZOO_NO_LOG_CLIENTENV, quiet);
    assert_non_null(c->zh);
    for (int i = 0; i < 3000 && zoo_state(c->zh) != ZOO_CONNECTED_STATE; i++)
        usleep(10000);
    CHECK(zoo_state(c->zh) == ZOO_CONNECTED_STATE, "no session with ZooKeeper at %s", eps);
    return c;
}

void zktest_close(zktest_conn *c)
{
    if (c == NULL)
        return;
    zookeeper_close(c->zh);
    free(c);
}

int64_t zktest_session(zktest_conn *c)
{
    return zoo_client_id(c->zh)->client_id;
}

typedef struct synced {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
} synced;

static void sync_done(int rc, const char *value, const void *data)
{
    synced *s = (synced *)data;
    (void)value;
    pthread_mutex_lock(&s->mu);
    s->rc = rc;
    s->done = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The member this session talks to may be a follower that has not applied
 * the latest writes yet (ZooKeeper's reads are not linearizable across
 * sessions): sync() brings it up to date with the leader before a read, so
 * a test sees what the library wrote through another session. */
static void catch_up(zktest_conn *c, const char *path)
{
    /* A member killed under the session loses the request: the client
     * moves to another member, and the sync is sent again (for 10 s). */
    for (int tries = 0;; tries++) {
        synced s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0};
        int rc = zoo_async(c->zh, path, sync_done, &s);
        if (rc == ZOK) {
            pthread_mutex_lock(&s.mu);
            while (!s.done)
                pthread_cond_wait(&s.cv, &s.mu);
            pthread_mutex_unlock(&s.mu);
            rc = s.rc;
        }
        if (rc == ZOK)
            return;
        CHECK((rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) && tries < 100,
              "sync %s: %s", path, zerror(rc));
        usleep(100000);
    }
}

int zktest_get(zktest_conn *c, const char *path, char *buf, size_t cap, int64_t *owner,
               int64_t *czxid)
{
    struct Stat st;
    int len = (int)cap - 1, rc;
    memset(&st, 0, sizeof st);
    catch_up(c, path);
    rc = zoo_get(c->zh, path, 0, buf, &len, &st);
    if (rc == ZOK)
        buf[len < 0 ? 0 : len] = '\0';
    else if (cap > 0)
        buf[0] = '\0';
    if (owner != NULL)
        *owner = st.ephemeralOwner;
    if (czxid != NULL)
        *czxid = st.czxid;
    return rc;
}

bool zktest_exists(zktest_conn *c, const char *path)
{
    struct Stat st;
    int rc;
    catch_up(c, path);
    rc = zoo_exists(c->zh, path, 0, &st);
    CHECK(rc == ZOK || rc == ZNONODE, "exists %s: %s", path, zerror(rc));
    return rc == ZOK;
}

int32_t zktest_version(zktest_conn *c, const char *path)
{
    struct Stat st;
    int rc;
    catch_up(c, path);
    rc = zoo_exists(c->zh, path, 0, &st);
    CHECK(rc == ZOK || rc == ZNONODE, "exists %s: %s", path, zerror(rc));
    return rc == ZOK ? st.version : -1;
}

static void make_parents(zktest_conn *c, const char *path)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s != '\0'; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        {
            int rc = zoo_create(c->zh, p, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
            CHECK(rc == ZOK || rc == ZNODEEXISTS, "create %s: %s", p, zerror(rc));
        }
        *s = '/';
    }
}

int zktest_create(zktest_conn *c, const char *path, const char *data, bool ephemeral)
{
    make_parents(c, path);
    return zoo_create(c->zh, path, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                      ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT, NULL, 0);
}

void zktest_put(zktest_conn *c, const char *path, const char *data)
{
    int rc = zoo_set(c->zh, path, data, (int)strlen(data), -1);
    if (rc == ZNONODE)
        rc = zktest_create(c, path, data, false);
    CHECK(rc == ZOK, "set %s: %s", path, zerror(rc));
}

int zktest_delete(zktest_conn *c, const char *path)
{
    return zoo_delete(c->zh, path, -1);
}

typedef struct many {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left, failed, first_err;
} many;

static void many_done(int rc, const char *value, const void *data)
{
    many *m = (many *)data;
    (void)value;
    pthread_mutex_lock(&m->mu);
    if (rc != ZOK && m->failed++ == 0)
        m->first_err = rc;
    if (--m->left == 0)
        pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

void zktest_create_many(zktest_conn *c, const char *dir, int from, int to)
{
    char probe[1024];
    many m;
    snprintf(probe, sizeof probe, "%s/x", dir);
    make_parents(c, probe);
    pthread_mutex_init(&m.mu, NULL);
    pthread_cond_init(&m.cv, NULL);
    m.left = to - from;
    m.failed = 0;
    m.first_err = 0;
    for (int i = from; i < to; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%d", dir, i);
        assert_int_equal(zoo_acreate(c->zh, path, "zombie", 6, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
                                     many_done, &m),
                         ZOK);
    }
    pthread_mutex_lock(&m.mu);
    while (m.left > 0)
        pthread_cond_wait(&m.cv, &m.mu);
    pthread_mutex_unlock(&m.mu);
    CHECK(m.failed == 0, "%d creates under %s failed, the first with %s", m.failed, dir,
          zerror(m.first_err));
    pthread_mutex_destroy(&m.mu);
    pthread_cond_destroy(&m.cv);
}
