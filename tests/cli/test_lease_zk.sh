#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of idmint's worker-id leases on the ZooKeeper coordinator
# (zk://host:port[,host:port...]/prefix), with real idmint processes against
# a real ZooKeeper server that this script starts on free loopback ports
# (scripts/zk-test-server.sh) and always stops:
#
#   - churn: 50 `next --lease` processes, 10 at a time, one in five killed
#     with kill -9 mid-run (its id stays held until its session expires),
#     never repeat an id, and each id decodes to the lease's node fields;
#   - lease list and lease hold on zk:// (the holder's record names it);
#   - ZooKeeper unreachable (the server stopped with SIGSTOP): a holder stops
#     minting within its session timeout and exits 1 with one error line;
#   - bad URLs fail with one stderr line (credentials refused and never
#     shown), and an address where nothing listens fails within a bounded
#     time.
#
# Usage: bash test_lease_zk.sh /path/to/idmint
# Needs java and Debian's zookeeper package. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed.

set -u

exec 3>&2 # failures go here even where the shell's own stderr is muted
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need java timeout
SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/zk-test-server.sh"

PIDS=()
ZKDIR=
ZKPID=
cleanup() {
    local p
    [ -n "$ZKPID" ] && kill -CONT "$ZKPID" 2>/dev/null
    for p in "${PIDS[@]}"; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    [ -n "$ZKDIR" ] && bash "$SERVER" stop "$ZKDIR" >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export HOME="$T/home"
export IDMINT_STATE_DIR="$T/state"
# The server's watcher follows this shell: it dies with it.
export IDM_ZK_OWNER=$$

note() { printf 'note: %s\n' "$*" >&3; }
# one_line FILE: FILE is exactly one line starting with "idmint: ".
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && ends_nl "$1" && grep -q '^idmint: ' "$1"; }

# fails_with STATUS TEXT ARGS...: exit STATUS within 15 s, nothing on
# stdout, exactly one stderr line, starting with "idmint: " and holding TEXT.
fails_with() {
    local status=$1 text=$2 t0 t1
    shift 2
    t0=$(now_ms)
    run "$@"
    t1=$(now_ms)
    if [ "$RC" -eq "$status" ] && [ ! -s "$T/out" ] && one_line "$T/err" &&
        grep -qF -- "$text" "$T/err" && [ $((t1 - t0)) -lt 15000 ]; then
        ok
    else
        bad "idmint $*: want exit $status within 15 s and one stderr line with [$text]; $(show) after $((t1 - t0)) ms"
    fi
}

peek() { head -c "$1" "$2" 2>/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# trim FILE: drop a last line cut short by a kill.
trim() {
    if [ -s "$1" ] && ! ends_nl "$1"; then
        head -n -1 "$1" >"$1.tmp" && mv "$1.tmp" "$1"
    fi
}

# wait_out FILE PID [TRIES]: wait (50 ms steps, default 5 s) until FILE has
# a complete line while PID lives.
wait_out() {
    local i
    for i in $(seq "${3:-100}"); do
        [ -s "$1" ] && [ "$(wc -l <"$1")" -ge 1 ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# wait_gone PID TRIES: wait (50 ms steps) for PID to exit; its status in
# $STOPPED (255 if it did not exit in time).
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

TW_EPOCH=2010-11-04T01:42:54.657Z
# 16 ids per ms at most: runs killed mid-way stay small on disk.
SLOW=time:41@1ms,datacenter:5,worker:5,seq:4
unix_ms() {
    "$BIN" decode --layout "$SLOW" --epoch "$TW_EPOCH" "$1" 2>/dev/null |
        sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p'
}
max_id() { sort -n "$@" | tail -n 1; }

START=$(now_ms)

# ---- bad URLs: nothing to start for these ----

fails_with 2 "no /prefix" next --lease zk:// --node datacenter=1
fails_with 2 "no /prefix" lease list zk://
fails_with 2 "no /prefix" lease hold zk://127.0.0.1:2181
fails_with 2 "no host:port" next --lease zk:///p --node datacenter=1
fails_with 2 "not host:port" next --lease zk://host-without-port/p --node datacenter=1
fails_with 2 "not host:port" lease hold zk://127.0.0.1:0/p
fails_with 2 "ends with '/'" lease list zk://127.0.0.1:2181/p/
fails_with 2 "'.' or '..'" lease list zk://127.0.0.1:2181/p/../q
fails_with 2 "takes no options" lease list "zk://127.0.0.1:2181/p?user=x"
fails_with 2 "credentials" lease list zk://admin:s3cr3t@127.0.0.1:2181/p
check "credentials are never shown [$(peek 300 "$T/err")]" test "$(grep -c s3cr3t "$T/err")" -eq 0
fails_with 1 "no ZooKeeper server answered" next --lease zk://127.0.0.1:1/p --lease-ttl 1000 \
    --node datacenter=1
fails_with 1 "no ZooKeeper server answered" lease hold zk://127.0.0.1:1/p --ttl 1000

# ---- a standalone server ----

ZKDIR="$T/zk"
mkdir -p "$ZKDIR"
if ! EP=$(bash "$SERVER" start "$ZKDIR" 1 2>"$T/zk.err"); then
    bad "cannot start ZooKeeper: $(tail -n 5 "$T/zk.err")"
    finish
fi
ZKPID=$(bash "$SERVER" pid "$ZKDIR" 1)

# ---- lease hold and list ----

U0="zk://$EP/hold"
"$BIN" lease hold "$U0" --max 4 --ttl 2000 >"$T/h.out" 2>"$T/h.err" &
PH=$!
PIDS+=("$PH")
check "hold: holds a worker id [$(peek 300 "$T/h.err")]" wait_out "$T/h.out" "$PH"
WH=$(field "$(head -n 1 "$T/h.out")" worker)
run lease list "$U0"
LH=$(grep "^worker=$WH " "$T/out" | head -n 1)
check "hold: lease list shows it held by the holder [$LH]; $(show)" \
    test "$RC" -eq 0 -a "$(field "$LH" held)" = yes -a "${LH##* holder=*:}" = "$PH"
stop "$PH" TERM
check "hold: the holder exits 0 on SIGTERM, silent (status $STOPPED) [$(peek 300 "$T/h.err")]" \
    test "$STOPPED" -eq 0 -a ! -s "$T/h.err"
run lease list "$U0"
LH=$(grep "^worker=$WH " "$T/out" | head -n 1)
check "hold: released at once [$LH]" test "$(field "$LH" held)" = no

# ---- churn: 50 processes, 10 at a time, one in five killed ----

U2="zk://$EP/churn"
mkdir -p "$T/churn"
KILLED=0
CHURN0=$(now_ms)
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
        "$BIN" next --lease "$U2" --lease-ttl 2000 -n "$n" --layout "$SLOW" --epoch "$TW_EPOCH" \
            --node datacenter=1 >"$T/churn/$i.out" 2>"$T/churn/$i.err" &
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
SAMPLE=()
for f in "$T"/churn/*.out; do
    [ -s "$f" ] && SAMPLE+=("$(head -n 1 "$f")" "$(tail -n 1 "$f")")
done
"$BIN" decode --layout "$SLOW" --epoch "$TW_EPOCH" "${SAMPLE[@]}" >"$T/out" 2>"$T/err"
if [ "$(wc -l <"$T/out")" -eq "${#SAMPLE[@]}" ] && [ "${#SAMPLE[@]}" -ge 100 ] &&
    [ "$(grep -c ' datacenter=1 worker=\([0-9]\|[12][0-9]\|3[01]\) ' "$T/out")" -eq "${#SAMPLE[@]}" ]; then
    ok
else
    bad "churn: decoded ids must have datacenter=1 and worker 0..31; $(head -c 300 "$T/err")"
fi
run lease list "$U2"
check "churn: lease list works, at most 32 records ($(wc -l <"$T/out")); $(show)" \
    test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -le 32 -a "$(wc -l <"$T/out")" -ge 1
note "churn: 50 processes in $(($(now_ms) - CHURN0)) ms, $TOTAL ids"

# ---- ZooKeeper unreachable: a holder stops within its session timeout ----

U4="zk://$EP/frozen"
"$BIN" next --lease "$U4" --lease-ttl 2000 --layout "$SLOW" --epoch "$TW_EPOCH" \
    --node datacenter=1 -n 10000000 >"$T/f.out" 2>"$T/f.err" &
PF=$!
PIDS+=("$PF")
check "unreachable: the holder mints [$(peek 300 "$T/f.err")]" wait_out "$T/f.out" "$PF"
sleep 0.8
kill -STOP "$ZKPID"
FSTOP_MS=$(now_ms)
wait_gone "$PF" 300
FEND_MS=$(now_ms)
if [ "$STOPPED" -eq 255 ]; then
    bad "unreachable: the holder still runs 15 s after ZooKeeper stopped; stderr [$(peek 300 "$T/f.err")]"
    stop "$PF" TERM
fi
kill -CONT "$ZKPID"
check "unreachable: the holder exits 1 (status $STOPPED)" test "$STOPPED" -eq 1
check "unreachable: one stderr line [$(peek 400 "$T/f.err")]" one_line "$T/f.err"
trim "$T/f.out"
F_LAST=$(unix_ms "$(max_id "$T/f.out")")
check "unreachable: the last id's time ($F_LAST) is before the stop + session timeout ($((FSTOP_MS + 2000)))" \
    test "${F_LAST:-99999999999999}" -lt $((FSTOP_MS + 2000))
check "unreachable: the holder minted after ZooKeeper stopped (last id $F_LAST, stop $FSTOP_MS)" \
    test "${F_LAST:-0}" -ge "$FSTOP_MS"
note "unreachable: exit $((FEND_MS - FSTOP_MS)) ms after SIGSTOP; last id at stop+$((${F_LAST:-0} - FSTOP_MS)) ms"
run lease list "$U4"
check "unreachable: ZooKeeper answers again after SIGCONT; $(show)" test "$RC" -eq 0

bash "$SERVER" stop "$ZKDIR"
note "total $(($(now_ms) - START)) ms"
finish
