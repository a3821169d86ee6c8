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

exec 3>&2 # failures go here even where the shell's own stderr is muted
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need psql
SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/pg-test-server.sh"

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    [ -d "$T/pg" ] && bash "$SERVER" stop "$T/pg" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export HOME="$T/home"
export IDMINT_STATE_DIR="$T/state"

TW_EPOCH=2010-11-04T01:42:54.657Z
# 16 ids per ms at most: long runs stay small on disk.
ONE_BIT=time:41@1ms,worker:1,seq:4

note() { printf 'note: %s\n' "$*" >&3; }
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && ends_nl "$1" && grep -q '^idmint: ' "$1"; }

# fails_with STATUS TEXT ARGS...: exit STATUS within 15 s, nothing on
# stdout, exactly one stderr line, starting with "idmint: " and holding
# TEXT, and no "s3cretpw" in it.
fails_with() {
    local status=$1 text=$2 t0 t1
    shift 2
    t0=$(now_ms)
    run "$@"
    t1=$(now_ms)
    if [ "$RC" -eq "$status" ] && [ ! -s "$T/out" ] && one_line "$T/err" &&
        grep -qF -- "$text" "$T/err" && ! grep -q s3cretpw "$T/err" &&
        [ $((t1 - t0)) -lt 15000 ]; then
        ok
    else
        bad "idmint $*: want exit $status within 15 s and one stderr line with [$text], no password; $(show) after $((t1 - t0)) ms"
    fi
}

peek() { head -c "$1" "$2" 2>/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
is_num() { [[ $1 =~ ^[0-9]+$ ]]; }
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
trim() {
    if [ -s "$1" ] && ! ends_nl "$1"; then
        head -n -1 "$1" >"$1.tmp" && mv "$1.tmp" "$1"
    fi
}
wait_out() {
    local i
    for i in $(seq "${3:-100}"); do
        [ -s "$1" ] && [ "$(wc -l <"$1")" -ge 1 ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
wait_gone() {
    local i
    for i in $(seq "$2"); do
        if ! kill -0 "$1" 2>/dev/null || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ]; then
            { wait "$1"; } 2>/dev/null
            STOPPED=$?
            return 0
        fi
        sleep 0.05
    done
    STOPPED=255
    return 1
}
stop() {
    kill -"$2" "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
    STOPPED=$?
}
list_line() { "$BIN" lease list "$1" 2>/dev/null | grep "^worker=$2 " | head -n 1; }
unix_ms() {
    "$BIN" decode --layout "$1" --epoch "$TW_EPOCH" "$2" 2>/dev/null |
        sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p'
}
max_id() { sort -n "$@" | tail -n 1; }
min_id() { sort -n "$@" | head -n 1; }

START=$(now_ms)

# ---- bad URLs and no server: nothing to start for these ----

fails_with 2 "not a valid PostgreSQL URL" next --lease 'postgres://u:s3cretpw@[::1/db' --node datacenter=1
fails_with 2 "not a valid PostgreSQL URL" lease list 'postgres://u:s3cretpw@h:1/db?no_such_option=1'
fails_with 2 "port 'x1' is not 1 to 65535" lease hold 'postgresql://u:s3cretpw@h:x1/db'
fails_with 1 "cannot connect" next --lease 'postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable' --node datacenter=1
fails_with 1 "cannot connect" lease list 'postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable'

# ---- the server ----

mkdir -p "$T/pg"
chmod 755 "$T" "$T/pg"
if ! PORT=$(bash "$SERVER" start "$T/pg" 2>"$T/pg.err"); then
    bad "cannot start PostgreSQL: $(tail -n 5 "$T/pg.err")"
    finish
fi
psql_c() { psql -X -q -At -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
# url SCHEMA: a URL whose search_path is SCHEMA (made afresh).
url() {
    psql_c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $1 CASCADE; CREATE SCHEMA $1" >/dev/null
    printf 'postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable&options=-csearch_path%%3D%s\n' "$PORT" "$1"
}

# ---- a password in the URL: never in ps, never in a message ----

UP=$(url pw)
UPW="postgres://postgres:s3cretpw@127.0.0.1:$PORT/postgres?sslmode=disable&options=-csearch_path%3Dpw"
"$BIN" lease hold "$UPW" --max 4 --ttl 2000 >"$T/pw.out" 2>"$T/pw.err" &
PP=$!
PIDS+=("$PP")
check "password: lease hold claims [$(peek 300 "$T/pw.err")]" wait_out "$T/pw.out" "$PP"
check "password: not in ps [$(tr '\0' ' ' <"/proc/$PP/cmdline")]" \
    test "$(tr '\0' ' ' <"/proc/$PP/cmdline" | grep -c s3cretpw)" -eq 0
check "password: lease list shows the holder [$(list_line "$UP" 0)]" \
    test "$(field "$(list_line "$UP" 0)" held)" = yes
stop "$PP" TERM
check "password: the holder exits 0 on SIGTERM, silent (status $STOPPED)" \
    test "$STOPPED" -eq 0 -a ! -s "$T/pw.err"
check "password: released [$(list_line "$UP" 0)]" test "$(field "$(list_line "$UP" 0)" held)" = no

# ---- 1. expiry: a frozen holder loses its id and stops at its deadline ----

U1=$(url expiry)
"$BIN" next --lease "$U1" --lease-ttl 2000 --layout "$ONE_BIT" --epoch "$TW_EPOCH" \
    -n 10000000 >"$T/a.out" 2>"$T/a.err" &
PA=$!
PIDS+=("$PA")
check "expiry: A mints [$(peek 300 "$T/a.err")]" wait_out "$T/a.out" "$PA"
WA=$("$BIN" lease list "$U1" 2>/dev/null | sed -n "s/^worker=\([01]\) held=yes .* holder=[^ ]*:$PA\$/\1/p")
check "expiry: lease list shows A's id [$WA]" is_num "$WA"
GA=$(psql_c "SELECT generation FROM expiry.idmint_workers WHERE worker = ${WA:-0}")
# Another holder takes the other id, so that B must take A's.
"$BIN" lease hold "$U1" --max 2 --ttl 10000 >"$T/h.out" 2>"$T/h.err" &
PH=$!
PIDS+=("$PH")
wait_out "$T/h.out" "$PH"
WH=$(field "$(head -n 1 "$T/h.out")" worker)
check "expiry: the other holder takes the other id [$WA] [$(cat "$T/h.out")]" \
    test -n "$WH" -a -n "$WA" -a "$WH" != "$WA"
sleep 0.3
kill -STOP "$PA"
STOP_MS=$(now_ms)
FREE_MS=
for _ in $(seq 80); do
    if [ "$(field "$(list_line "$U1" "$WA")" held)" = no ]; then
        FREE_MS=$(now_ms)
        break
    fi
    sleep 0.1
done
check "expiry: A's id is free by the database's clock within 8 s of SIGSTOP" test -n "$FREE_MS"
CLAIM_MS=$(now_ms)
"$BIN" next --lease "$U1" --lease-ttl 2000 --layout "$ONE_BIT" --epoch "$TW_EPOCH" \
    -n 10000000 -v >"$T/b.out" 2>"$T/b.err" &
PB=$!
PIDS+=("$PB")
wait_out "$T/b.out" "$PB" 140
WB=$(sed -n 's/^idmint: next: lease: worker=\([0-9]*\) .*/\1/p' "$T/b.err")
check "expiry: B takes A's id $WA (got [$WB]; stderr [$(peek 300 "$T/b.err")])" test "$WB" = "$WA"
GB=$(psql_c "SELECT generation FROM expiry.idmint_workers WHERE worker = ${WA:-0}")
check "expiry: B's claim bumped the generation ($GA -> $GB)" test "${GB:-0}" -gt "${GA:-0}"
sleep 0.3
B_ROW=$(psql_c "SELECT holder, generation FROM expiry.idmint_workers WHERE worker = ${WA:-0}")
kill -CONT "$PA"
wait_gone "$PA" 100
check "expiry: A exits 1 by itself once resumed (status $STOPPED, stderr [$(peek 300 "$T/a.err")])" \
    test "$STOPPED" -eq 1
[ "$STOPPED" -eq 255 ] && stop "$PA" TERM
check "expiry: A's stderr is one line [$(peek 300 "$T/a.err")]" one_line "$T/a.err"
sleep 0.3
LB=$(list_line "$U1" "$WA")
check "expiry: B still holds the id after A's exit [$LB]" \
    test "$(field "$LB" held)" = yes -a "${LB##* holder=*:}" = "$PB"
check "expiry: A's late renewal left B's row alone [$B_ROW]" \
    test "$(psql_c "SELECT holder, generation FROM expiry.idmint_workers WHERE worker = ${WA:-0}")" = "$B_ROW"
stop "$PB" TERM
check "expiry: B dies of SIGTERM (status $STOPPED)" test "$STOPPED" -eq 143
stop "$PH" TERM
trim "$T/a.out"
trim "$T/b.out"
NA=$(wc -l <"$T/a.out")
NB=$(wc -l <"$T/b.out")
check "expiry: A and B minted ($NA, $NB ids)" test "$NA" -gt 0 -a "$NB" -gt 0
check "expiry: all ids of A and B unique" \
    test "$(cat "$T/a.out" "$T/b.out" | sort | uniq -d | wc -l)" -eq 0
A_LAST=$(unix_ms "$ONE_BIT" "$(max_id "$T/a.out")")
B_FIRST=$(unix_ms "$ONE_BIT" "$(min_id "$T/b.out")")
B_LAST=$(unix_ms "$ONE_BIT" "$(max_id "$T/b.out")")
check "expiry: A's last id ($A_LAST) is before SIGSTOP + TTL ($((STOP_MS + 2000)))" \
    test "${A_LAST:-99999999999999}" -lt $((STOP_MS + 2000))
check "expiry: A's last id ($A_LAST) is before B's claim ($CLAIM_MS) and B's first id ($B_FIRST)" \
    test "${A_LAST:-99999999999999}" -lt "$CLAIM_MS" -a "${A_LAST:-99999999999999}" -lt "${B_FIRST:-0}"
MW=$(field "$(list_line "$U1" "$WA")" mark_ms)
check "expiry: the record's mark ($MW) is B's last id's time ($B_LAST)" test "$MW" = "$B_LAST"
note "expiry: id free $((${FREE_MS:-0} - STOP_MS)) ms after SIGSTOP; A $NA ids, B $NB ids"

# ---- 2. churn: 50 processes, 10 at a time, one in five killed ----

U2=$(url churn)
mkdir -p "$T/churn"
KILLED=0
for batch in 0 1 2 3 4; do
    pids=()
    victims=()
    for j in 0 1 2 3 4 5 6 7 8 9; do
        i=$((batch * 10 + j))
        if [ $((i % 5)) -eq 2 ]; then
            n=10000000 # killed mid-run
            victims+=("$j")
        else
            n=2000
        fi
        "$BIN" next --lease "$U2" --lease-ttl 2000 -n "$n" --node datacenter=1 \
            >"$T/churn/$i.out" 2>"$T/churn/$i.err" &
        pids[j]=$!
        PIDS+=("$!")
    done
    for j in "${victims[@]}"; do
        wait_out "$T/churn/$((batch * 10 + j)).out" "${pids[j]}" 100
        sleep 0.05
        kill -9 "${pids[j]}" 2>/dev/null
    done
    for j in 0 1 2 3 4 5 6 7 8 9; do
        i=$((batch * 10 + j))
        { wait "${pids[j]}"; } 2>/dev/null
        st=$?
        if [ $((i % 5)) -eq 2 ]; then
            if [ "$st" -eq 137 ]; then KILLED=$((KILLED + 1)); else
                bad "churn victim $i: want death by kill -9 mid-run, got exit $st [$(peek 300 "$T/churn/$i.err")]"
            fi
            trim "$T/churn/$i.out"
        elif [ "$st" -ne 0 ] || [ "$(wc -l <"$T/churn/$i.out")" -ne 2000 ] ||
            [ -s "$T/churn/$i.err" ]; then
            bad "churn process $i: exit $st, $(wc -l <"$T/churn/$i.out") ids, stderr [$(peek 300 "$T/churn/$i.err")]"
        fi
    done
done 2>/dev/null
check "churn: 10 processes were killed mid-run (got $KILLED)" test "$KILLED" -eq 10
cat "$T"/churn/*.out >"$T/churn.all"
TOTAL=$(wc -l <"$T/churn.all")
check "churn: every line is an id" test "$(grep -cv '^[0-9]\{1,20\}$' "$T/churn.all")" -eq 0
check "churn: at least 40 x 2000 ids (got $TOTAL)" test "$TOTAL" -ge 80000
DUPS=$(sort "$T/churn.all" | uniq -d | wc -l)
check "churn: all $TOTAL ids unique ($DUPS repeated)" test "$DUPS" -eq 0
run lease list "$U2"
check "churn: lease list works, at most 32 records ($(wc -l <"$T/out"))" \
    test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -le 32 -a "$(wc -l <"$T/out")" -ge 1
check "churn: the generations add up to the claims (50)" \
    test "$(psql_c "SELECT sum(generation) FROM churn.idmint_workers")" -eq 50

bash "$SERVER" stop "$T/pg"
note "total $(($(now_ms) - START)) ms"
finish
