#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Process-level tests of segment allocation: real processes (tests/util/
# seq_load.c, one allocator each, several threads) drawing ids from real
# ticket stores, SQLite files and PostgreSQL servers that this script starts
# on free loopback ports (scripts/pg-test-server.sh) and always stops:
#
#   - 8 processes x 4 threads draw 2,000,000 ids from one sequence, in each
#     backend: every id is unique (a checker sorts them all);
#   - kill -9 of consumers mid-block, in a loop: no id twice; the killed
#     processes' blocks are gaps, never handed out again (FAULTS P2);
#   - PostgreSQL stopped mid-run (immediate mode) and started again: the
#     consumers keep going from their buffers, then fail clearly (counted),
#     then recover, with no id twice (P8);
#   - odd/even stores on two PostgreSQL servers, one killed during the run:
#     the survivor carries on, its ids all even, none twice (P10); then a
#     store whose counter was set back (restored from an old backup) is
#     refused at open (P9).
#
# Usage: bash test_seq_load.sh /path/to/idmint
# Needs IDM_SEQ_LOAD (the seq_load binary; ctest sets it) and PostgreSQL's
# server binaries. Ends with one line "N passed, N failed".

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/pg-test-server.sh"
LOAD=${IDM_SEQ_LOAD:-}
if [ -z "$LOAD" ] || [ ! -x "$LOAD" ]; then
    bad "IDM_SEQ_LOAD does not name the seq_load program: '$LOAD'"
    finish
fi

PIDS=()
PGDIRS=()

# wait_lines FILE N PID: wait (30 s at most) until FILE has N lines or the
# process PID ended; sets n to the lines FILE has.
wait_lines() {
    local i
    n=0
    for ((i = 0; i < 600; i++)); do
        n=$(cat "$1" 2>/dev/null | wc -l)
        [ "$n" -lt "$2" ] || return 0
        kill -0 "$3" 2>/dev/null || return 0
        sleep 0.05
    done
}

cleanup() {
    local p d
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    for d in "${PGDIRS[@]}"; do
        bash "$SERVER" stop "$d" >/dev/null 2>&1
        rm -rf "$d"
    done
    rm -rf "$T"
}
trap cleanup EXIT

# pg_start: start a server; sets PGDIR and PGURL.
pg_start() {
    local port
    PGDIR=$(mktemp -d) || return 1
    PGDIRS+=("$PGDIR")
    port=$(bash "$SERVER" start "$PGDIR") || { bad "PostgreSQL did not start"; finish; }
    PGURL="postgres://postgres@127.0.0.1:$port/postgres"
}

# unique_ids FILE...: every line of the files is a distinct integer; sets
# NIDS to their number and MAXID to the largest.
unique_ids() {
    sort -n "$@" >"$T/sorted"
    NIDS=$(wc -l <"$T/sorted")
    MAXID=$(tail -n 1 "$T/sorted")
    [ "$(uniq -d "$T/sorted" | head -n 5 | wc -l)" -eq 0 ]
}

# summary FILE KEY: the value of KEY=... in seq_load's summary line in FILE.
summary() { sed -n "s/.*\b$2=\([0-9]*\).*/\1/p" "$1" | tail -n 1; }

# ---------------------------------------------- 8 x 4 threads, 2M ids

many() { # many URL TAG: 8 processes x 4 threads x 250,000 ids
    local url=$1 tag=$2 i rc=0 pids=()
    "$BIN" seq create big --store "$url" 2>"$T/err" || bad "$tag: seq create: $(cat "$T/err")"
    for i in 1 2 3 4 5 6 7 8; do
        "$LOAD" --name big --store "$url" --threads 4 --count 250000 --out "$T/$tag.$i" \
            2>"$T/$tag.$i.err" &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    check "$tag: 8 processes x 4 threads ran to the end" test "$rc" -eq 0
    if unique_ids "$T/$tag".[1-8]; then ok; else bad "$tag: an id was handed out twice"; fi
    check "$tag: 2,000,000 ids drawn ($NIDS)" test "$NIDS" -eq 2000000
}
many "sqlite://$T/many.db" sqlite
pg_start
PG1=$PGDIR
URL1=$PGURL
many "$URL1" postgres

# ---------------------------------------------- kill -9 mid-block (P2)

churn() { # churn URL TAG: rounds of 3 consumers, one killed with -9 mid-run
    local url=$1 tag=$2 killed=0 round i p pids
    "$BIN" seq create churn --store "$url" 2>"$T/err" || bad "$tag: seq create churn: $(cat "$T/err")"
    for round in 1 2 3 4 5 6; do
        pids=()
        for i in 1 2 3; do
            "$LOAD" --name churn --store "$url" --threads 2 --count 20000 --pace-us 50 \
                --min-block 500 --max-block 500 --stream --out "$T/churn.$tag.$round.$i" \
                2>"$T/churn.$tag.$round.$i.err" &
            pids+=($!)
            PIDS+=($!)
        done
        sleep "0.$((2 + round % 3))"
        kill -9 "${pids[$((round % 3))]}" 2>/dev/null && killed=$((killed + 1))
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    done
    check "$tag: kill -9 loop: $killed consumers killed mid-run" test "$killed" -ge 5
    if unique_ids "$T"/churn."$tag".*.[1-3]; then ok; else bad "$tag: kill -9 loop: an id was handed out twice"; fi
    run seq next churn --store "$url"
    check "$tag: after the kill -9 loop the store hands out above every id seen (a gap, never a repeat)" \
        test "$RC" -eq 0 -a "$(cat "$T/out")" -gt "$MAXID"
    check "$tag: the killed consumers left gaps: $NIDS ids below $MAXID" test "$NIDS" -lt "$MAXID"
}
churn "sqlite://$T/churn.db" sqlite
churn "$URL1" postgres

# ---------------------------------------------- PostgreSQL down mid-run (P8)

"$BIN" seq create down --store "$URL1" 2>"$T/err" || bad "seq create down: $(cat "$T/err")"
# 2 threads at 1 ms an id draw blocks of B = 3,000 ids. The allocator opens
# with block 1 current and block 2 as its spare, and asks for block 3 only
# when block 2 has under 20 % left. So once B + 50 ids are out, block 2 is
# current and nothing else is held: the stop comes with about 1.5 s of ids
# in hand (an outage at a fixed time after the start could land at the end
# of a block on a slow machine, with nothing left to hand out), and the 3 s
# outage outlasts them.
B=3000
"$LOAD" --name down --store "$URL1" --threads 2 --count 15000 --pace-us 1000 \
    --min-block $B --max-block $B --wait-ms 300 --tolerate 20000 --stream \
    --out "$T/down" 2>"$T/down.err" &
lp=$!
PIDS+=("$lp")
wait_lines "$T/down" $((B + 50)) "$lp"
check "P8: block 2 was reached before the outage ($n ids out)" \
    test "$n" -ge $((B + 50)) -a "$n" -lt $((B * 2))
bash "$SERVER" stop "$PG1" >/dev/null 2>&1
stopped_at=$(wc -l <"$T/down")
sleep 3
during=$(wc -l <"$T/down")
bash "$SERVER" restart "$PG1" >/dev/null 2>"$T/err" || bad "PostgreSQL did not restart: $(cat "$T/err")"
wait "$lp"
rc=$?
check "P8: the consumer ran to the end across the outage (rc $rc)" test "$rc" -eq 0
check "P8: it kept minting from its buffers after the stop ($stopped_at then $during)" \
    test "$during" -gt "$stopped_at"
errs=$(summary "$T/down.err" errors)
ferrs=$(summary "$T/down.err" fetch_errors)
check "P8: with the store down and the buffers empty, next failed (errors=$errs, fetch_errors=$ferrs)" \
    test "${errs:-0}" -gt 0 -a "${ferrs:-0}" -gt 0
if unique_ids "$T/down"; then ok; else bad "P8: an id was handed out twice"; fi
check "P8: 15,000 ids in the end ($NIDS)" test "$NIDS" -eq 15000

# ---------------------------------------------- odd/even, one killed (P10, P9)

pg_start
PG2=$PGDIR
URL2=$PGURL
run seq create oe --store "$URL1" --store "$URL2"
check "odd/even: seq create on two stores" test "$RC" -eq 0
"$LOAD" --name oe --store "$URL1" --store "$URL2" --threads 2 --count 60000 --pace-us 100 \
    --min-block 1000 --max-block 1000 --wait-ms 500 --tolerate 20000 --stream \
    --out "$T/oe" 2>"$T/oe.err" &
lp=$!
PIDS+=("$lp")
# Stop one server once blocks from both were handed out (the first two
# blocks come one from each store), not at a fixed time after the start.
wait_lines "$T/oe" 2100 "$lp"
check "P10: blocks from both stores were in use before the kill ($n ids out)" test "$n" -ge 2100
bash "$SERVER" stop "$PG2" >/dev/null 2>&1
before=$(wc -l <"$T/oe")
wait "$lp"
rc=$?
check "P10: with one ticket server killed the consumer carried on (rc $rc)" test "$rc" -eq 0
if unique_ids "$T/oe"; then ok; else bad "P10: an id was handed out twice"; fi
check "P10: 60,000 ids ($NIDS)" test "$NIDS" -eq 60000
odd=$(awk '$1 % 2 == 1' "$T/oe" | wc -l)
check "P10: both stores served before the kill ($odd odd ids)" test "$odd" -gt 0
late_odd=$(tail -n +$((before + 4000)) "$T/oe" | awk '$1 % 2 == 1' | wc -l)
check "P10: after the kill only the even store served ($late_odd odd ids late)" test "$late_odd" -eq 0

# P9: store 1's server comes back from an "old backup": its counter set back.
bash "$SERVER" restart "$PG2" >/dev/null 2>"$T/err" || bad "PostgreSQL 2 did not restart: $(cat "$T/err")"
port2=$(bash "$SERVER" port "$PG2")
psql -X -q -h 127.0.0.1 -p "$port2" -U postgres -d postgres \
    -c "UPDATE idmint_sequences SET next = 0 WHERE name = 'oe'" >/dev/null 2>&1 ||
    bad "P9: could not set the counter back"
"$LOAD" --name oe --store "$URL1" --store "$URL2" --count 10 --out "$T/p9" 2>"$T/p9.err"
rc=$?
check "P9: a store whose counter went back is refused at open (rc $rc: $(head -c 300 "$T/p9.err"))" \
    test "$rc" -ne 0 -a ! -s "$T/p9"
check "P9: the refusal names the floor" grep -qi "floor\|backup" "$T/p9.err"

finish
