/* SPDX-License-Identifier: MIT */
/*
 * A real PostgreSQL server for one test program: initdb'd in a temporary
 * directory and started on a free loopback port by scripts/pg-test-server.sh
 * (as the postgres user when the test runs as root), stopped and removed at
 * the end or at exit. The script is found from IDM_TEST_DATA (set by ctest).
 */
#ifndef IDM_TEST_PGTEST_H
#define IDM_TEST_PGTEST_H

#include <stddef.h>

/* Find the script (who names the test program in messages): 0, or -1 with
 * a message on stderr. Stops the server at exit, whatever happens. */
int idm_test_pg_init(const char *who);
/* Start the server: its port, or -1 with a message on stderr. */
int idm_test_pg_start(void);
/* Start it under libfaketime, its wall clock offset (libfaketime's form:
 * "+0", "+60" seconds ahead) from the true one: its port, or -1 with a
 * message on stderr. idm_test_pg_faketime moves it. */
int idm_test_pg_start_faketime(const char *offset);
/* Move the clock of a server started with idm_test_pg_start_faketime: the
 * test fails if the script does. */
void idm_test_pg_faketime(const char *offset);
/* Stop it and remove its directory (nothing if it is not running). */
void idm_test_pg_stop(void);
/* Stop it at once (immediate mode, as a crash), keeping its cluster; then
 * start it again on its cluster and port. Each fails the test if the
 * script does. */
void idm_test_pg_halt(void);
void idm_test_pg_restart(void);
/* Run sql in database db with psql; the test fails if psql does. */
void idm_test_pg_sql(const char *db, const char *sql);
/* The first line psql prints for sql in database db (unaligned, no
 * headers), without its newline, in out; the test fails if psql does. */
void idm_test_pg_query(const char *db, const char *sql, char *out, size_t cap);

#endif /* IDM_TEST_PGTEST_H */
