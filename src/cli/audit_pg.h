/* SPDX-License-Identifier: MIT */
/*
 * `idmint audit --postgres URL --query SQL` (audit_pg.c): the rows of a
 * query, read from PostgreSQL straight into an audit, so a table of a
 * billion ids need not be exported first.
 */
#ifndef IDMINT_AUDIT_PG_H
#define IDMINT_AUDIT_PG_H

#include <stdint.h>

#include "audit.h"

/*
 * Run query on the PostgreSQL server at url (a libpq URI: postgres:// or
 * postgresql://) and add its rows to the audit in the order the server
 * sends them (the query's ORDER BY should be the recorded order). Column 1
 * is the id (bigint, numeric, text, or uuid), column 2, if there is one,
 * the time the row was recorded (timestamptz or timestamp, read as UTC;
 * text in ISO 8601; or a number of Unix ms); NULL in column 2 is a row
 * without a recorded time. Any other number of columns, or a NULL id, is
 * an error.
 *
 * The rows come through a server-side cursor (DECLARE ... NO SCROLL
 * CURSOR, FETCH FORWARD in batches) in a READ ONLY transaction, so memory
 * does not grow with the table and nothing is written. The session runs
 * with TimeZone UTC and DateStyle ISO.
 *
 * Returns 0 with *rows the rows read, or:
 *   IDM_EINVAL  the URL is not a valid PostgreSQL URL, the server refused
 *               the query (its message), or the query's columns are wrong;
 *   IDM_EPARSE  a row the audit refused, as audit_add ("row N: ...");
 *   IDM_EUNAVAIL the server cannot be reached, or the connection was lost;
 *   IDM_ENOMEM, IDM_EIO as audit_add.
 * with a message in err that names what was wrong; a password in url never
 * shows in it. On an error, *rows is the rows added before it.
 *
 * Built without PostgreSQL (IDM_WITH_POSTGRES off), it returns IDM_EINVAL
 * with a message that says so.
 */
int audit_read_postgres(audit *a, const char *url, const char *query, uint64_t *rows,
                        char *err, size_t err_len);

#endif /* IDMINT_AUDIT_PG_H */
