#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of idmint's worker-id leases on the PostgreSQL coordinator
# (postgres://... and postgresql://..., any libpq URI), with real idmint
# processes against a real PostgreSQL server that this script starts on a
# free loopback port (scripts/pg-test-server.sh) and always stops:
#
#   - bad URLs fail with one stderr line (exit 2), an address where nothing
#     listens fails with one (exit 1); a password in the URL shows in
#     neither, nor in `ps` of a running holder;
#   - expiry (E5 as it applies here): a holder frozen with SIGSTOP for
#     longer than its TTL loses its worker id to another process (whose
#     claim bumps the row's generation); once resumed it has stopped at its
#     deadline, minted nothing after the new holder's claim, and exits 1
#     without taking the row back (holder and generation stay the new
#     holder's). The renewal guard itself is shown by test_lease_pg's
#     e3_taken_over, where the old holder lives on to renew;
#   - churn (E12): 50 `next --lease` processes, 10 at a time, one in five
#     killed with kill -9 mid-run, never repeat an id.
#
# Usage: bash test_lease_pg.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need psql
SERVER=$SCRIPTS/pg-test-server.sh
# No message may show the password of the URLs below.
SECRET=s3cretpw

START=$(now_ms)

# ---- bad URLs and no server: nothing to start for these ----

fails_with 2 "not a valid PostgreSQL URL" next --lease 'postgres://u:s3cretpw@[::1/db' --node datacenter=1
fails_with 2 "not a valid PostgreSQL URL" lease list 'postgres://u:s3cretpw@h:1/db?no_such_option=1'
fails_with 2 "port 'x1' is not 1 to 65535" lease hold 'postgresql://u:s3cretpw@h:x1/db'
fails_with 1 "cannot connect" next --lease 'postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable' --node datacenter=1
fails_with 1 "cannot connect" lease list 'postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable'

# ---- the server ----

# The server runs as postgres when this is root: let it in.
mkdir -p "$T/pg"
chmod 755 "$T" "$T/pg"
start_server PORT pg PostgreSQL
psql_c() { psql -X -q -At -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
# url SCHEMA: a URL whose search_path is SCHEMA (made afresh).
url() {
    psql_c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $1 CASCADE; CREATE SCHEMA $1" >/dev/null
    printf 'postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable&options=-csearch_path%%3D%s\n' "$PORT" "$1"
}

# ---- a password in the URL: never in ps, never in a message ----

UP=$(url pw)
UPW="postgres://postgres:s3cretpw@127.0.0.1:$PORT/postgres?sslmode=disable&options=-csearch_path%3Dpw"
spawn pw lease hold "$UPW" --max 4 --ttl 2000
PP=$SPAWNED
check "password: lease hold claims [$(peek 300 "$T/pw.err")]" wait_out "$T/pw.out" "$PP"
check "password: not in ps [$(tr '\0' ' ' <"/proc/$PP/cmdline")]" \
    test "$(tr '\0' ' ' <"/proc/$PP/cmdline" | grep -c s3cretpw)" -eq 0
check "password: lease list shows the holder [$(list_line "$UP" 0)]" \
    test "$(field "$(list_line "$UP" 0)" held)" = yes
stop "$PP" TERM
check "password: the holder exits 0 on SIGTERM, silent (status $STOPPED)" \
    test "$STOPPED" -eq 0 -a ! -s "$T/pw.err"
check "password: released [$(list_line "$UP" 0)]" test "$(field "$(list_line "$UP" 0)" held)" = no

# ---- idmintd on postgres:// ----

idmintd_serves "$(url d)" 32

# ---- 1. expiry: a frozen holder loses its id and stops at its deadline ----

U1=$(url expiry)
# row COLUMNS: COLUMNS of the row of A's id.
row() { psql_c "SELECT $1 FROM expiry.idmint_workers WHERE worker = ${WA:-0}"; }
expiry_hold "$U1"
GA=$(row generation)
expiry_freeze "$U1" " by the database's clock"
expiry_claim "$U1"
GB=$(row generation)
check "expiry: B's claim bumped the generation ($GA -> $GB)" test "${GB:-0}" -gt "${GA:-0}"
B_ROW=$(row "holder, generation")
expiry_resume "$U1" 100
check "expiry: A's late renewal left B's row alone [$B_ROW]" test "$(row "holder, generation")" = "$B_ROW"
expiry_end "$U1"
note "expiry: id free $((${FREE_MS:-0} - STOP_MS)) ms after SIGSTOP; A $NA ids, B $NB ids"

# ---- 2. churn: 50 processes, 10 at a time, one in five killed ----

U2=$(url churn)
# Plain claims (--no-state: no claim file resumed), so every run bumps the
# generation once.
churn "$U2" 50 10 40 --lease-ttl 2000 --node datacenter=1 --no-state
check "churn: 10 processes were killed mid-run (got $KILLED)" test "$KILLED" -eq 10
churn_listed "$U2"
check "churn: the generations add up to the claims (50)" \
    test "$(psql_c "SELECT sum(generation) FROM churn.idmint_workers")" -eq 50

bash "$SERVER" stop "$T/pg"
note "total $(($(now_ms) - START)) ms"
finish
