/* SPDX-License-Identifier: MIT */
/*
 * What the postgres:// lease backend (postgres.c) shows its tests and the
 * benchmark: hidden functions of idmint_lease, never exported, not
 * installed.
 */
#ifndef IDM_LEASE_POSTGRES_INTERNAL_H
#define IDM_LEASE_POSTGRES_INTERNAL_H

#include <stdint.h>

/* The application_name every lease session gives the server (unless the
 * URL names one): how an administrator, or a test, finds them in
 * pg_stat_activity. */
#define IDM__LEASE_PG_APP "idmint-lease"

/* Counts since the program started, over every postgres:// lease handle:
 * connections made (each a TCP connection and libpq's start-up exchange)
 * and round trips of statements sent (a session's setup counts one, the
 * table's creation one, each claim, renewal, release, listing one). */
uint64_t idm__lease_pg_connects(void);
uint64_t idm__lease_pg_round_trips(void);

#endif /* IDM_LEASE_POSTGRES_INTERNAL_H */
