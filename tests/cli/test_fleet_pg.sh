#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The fleet over time on PostgreSQL (postgres://): real `idmint next
# --lease` runs against a real PostgreSQL server that this script starts on
# a free loopback port (scripts/pg-test-server.sh) and always stops, through
# the bodies of lib_fleet.sh:
#
#   - E12r: a holder killed with kill -9 and started again at once resumes
#     its claim by its row's generation (the same worker id, no wait for the
#     row to expire, none for the mark); and a claim resumes once: a dead
#     holder's state directory copied and both copies started at once, the
#     saved claim is confirmed to one (its reattach bumps the generation),
#     the other claims another worker id;
#   - P13: the server stopped (immediate mode) when the holder restarts: it
#     mints under the saved claim up to the saved deadline and stops there;
#     past the deadline, or on another boot, it refuses; with the server
#     started again before the deadline, it reattaches and mints on past it;
#     P14: once the server is back, the row that expired meanwhile is not
#     resumed;
#   - E3 then E4: the row's generation bumped (as another claimant's claim
#     would), then the row deleted, under a running holder: each time it
#     logs the loss and re-claims another worker id, mints on under it, and
#     never under the lost one again.
#
# Usage: bash test_fleet_pg.sh /path/to/idmint
# Needs psql and a PostgreSQL server (Debian's postgresql). Ends with one
# line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need psql xargs
# shellcheck source=lib_fleet.sh
source "$(dirname "$0")/lib_fleet.sh"
SERVER=$SCRIPTS/pg-test-server.sh
COORD=PostgreSQL
FTTL=4000
ROW_RESUME=E12r
ROW_OFFLINE=P13
ROW_STALE=P14

START=$(now_ms)
# The server runs as postgres when this is root: let it in.
mkdir -p "$T/pg"
chmod 755 "$T" "$T/pg"
start_server PORT pg PostgreSQL
psql_c() {
    psql -X -q -At -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"
}
# url SCHEMA: a URL whose search_path is SCHEMA (made afresh).
url() {
    psql_c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $1 CASCADE;
            CREATE SCHEMA $1" >/dev/null
    printf 'postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable' "$PORT"
    printf '&options=-csearch_path%%3D%s\n' "$1"
}
coord_stop() { bash "$SERVER" stop "$T/pg" >/dev/null 2>&1; }
coord_start() {
    bash "$SERVER" restart "$T/pg" >/dev/null 2>"$T/pg.restart.err" ||
        bad "cannot start PostgreSQL again: $(tail -n 3 "$T/pg.restart.err")"
}

# E12r: kill -9 and restart at once.
fleet_resume "$(url resume)"

# E12r: one saved claim, two restarts (a copied state directory).
fleet_twice "$(url twice)"

# P13 (P14): the server stopped at the restart.
fleet_offline "$(url offline)"

# E3: the row claimed by another in the holder's back (its generation
# bumped, its mark kept).
e3_generation() {
    psql_c "UPDATE loss.idmint_workers SET generation = generation + 1 WHERE worker = $1" >/dev/null
}
# E4: the row deleted by hand.
e4_delete() { psql_c "DELETE FROM loss.idmint_workers WHERE worker = $1" >/dev/null; }
fleet_loss "$(url loss)" e3_generation e4_delete

bash "$SERVER" stop "$T/pg"
note "total $(($(now_ms) - START)) ms"
finish
