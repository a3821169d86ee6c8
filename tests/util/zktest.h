/* SPDX-License-Identifier: MIT */
/*
 * What the ZooKeeper lease tests share: throwaway servers started with
 * scripts/zk-test-server.sh (a standalone server or a three-member
 * ensemble, in a temporary directory, killed by the script's watcher if the
 * test process dies), and a plain ZooKeeper session of the test's own
 * (the C client's synchronous calls) to look at and change nodes behind the
 * backend's back. Every call that fails the test does so with cmocka.
 */
#ifndef IDM_ZKTEST_H
#define IDM_ZKTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A running server or ensemble: its directory and client endpoints. */
typedef struct zktest_server {
    char *dir;
    char eps[512]; /* host:port[,host:port...] */
    int members;
} zktest_server;

/* Start members (1 or 3) servers: 0, or -1 with a message on stderr (no
 * script, no java, no start). */
int zktest_start(zktest_server *s, int members);
/* Stop them (resuming any stopped first) and remove the directory; safe to
 * call twice or on a server never started. */
void zktest_stop(zktest_server *s);
pid_t zktest_member_pid(const zktest_server *s, int n);
/* The member that leads (1 for a standalone server). */
int zktest_leader(const zktest_server *s);
void zktest_kill(const zktest_server *s, int n);
void zktest_restart(const zktest_server *s, int n);

/* The test's own session. */
typedef struct zktest_conn zktest_conn;
zktest_conn *zktest_connect(const char *eps);
void zktest_close(zktest_conn *c);

/* The node's data into buf (NUL-terminated, cut to cap - 1) and, if not
 * NULL, its ephemeral owner and czxid: the ZooKeeper error (0: ZOK,
 * ZNONODE...). */
int zktest_get(zktest_conn *c, const char *path, char *buf, size_t cap, int64_t *owner,
               int64_t *czxid);
bool zktest_exists(zktest_conn *c, const char *path);
/* The node's data version, -1 if there is no such node. */
int32_t zktest_version(zktest_conn *c, const char *path);
/* Set data (any version); create it, persistent, with its parents, if it is
 * not there. */
void zktest_put(zktest_conn *c, const char *path, const char *data);
/* Create a node (and missing parents, persistent): ephemeral ones belong to
 * this session. Its ZooKeeper error. */
int zktest_create(zktest_conn *c, const char *path, const char *data, bool ephemeral);
/* Delete a node (any version): its ZooKeeper error. */
int zktest_delete(zktest_conn *c, const char *path);
/* Ephemeral nodes dir/from .. dir/(to - 1) of this session, pipelined; dir
 * is created first if missing. */
void zktest_create_many(zktest_conn *c, const char *dir, int from, int to);
/* This session's id. */
int64_t zktest_session(zktest_conn *c);

#endif /* IDM_ZKTEST_H */
