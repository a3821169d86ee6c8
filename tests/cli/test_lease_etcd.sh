#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of idmint's worker-id leases on the etcd coordinator
# (etcd://host:port[,host:port...]/prefix), with real idmint processes
# against real etcd members that this script starts on free loopback ports
# (scripts/etcd-test-server.sh) and always stops:
#
#   - expiry: a holder frozen with SIGSTOP for longer than its TTL loses its
#     worker id to another process; once resumed it stops at its deadline,
#     mints nothing after the new holder's claim, and does not overwrite the
#     new holder's record;
#   - churn: 30 `next --lease` processes, 6 at a time, some killed with
#     kill -9 mid-run, never repeat an id;
#   - the leader of a three-member cluster (the member the holders talk to
#     first) is killed while three holders mint: each keeps minting across
#     the election, past any deadline an earlier renewal gave it, under the
#     worker id it held (no two share one), and no id repeats;
#   - etcd unreachable (every member stopped with SIGSTOP): a holder stops
#     minting within its TTL and exits 1 with one error line;
#   - bad URLs fail with one stderr line, and an address where nothing
#     listens fails within a bounded time.
#
# Usage: bash test_lease_etcd.sh /path/to/idmint
# Needs etcd and etcdctl on PATH. Ends with one line "N passed, N failed";
# exits non-zero if any check failed.

set -u

exec 3>&2 # failures go here even where the shell's own stderr is muted
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/etcd-test-server.sh"

PIDS=()
CLUSTERS=()
cleanup() {
    local p c
    for p in "${PIDS[@]}"; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    for c in "${CLUSTERS[@]}"; do
        bash "$SERVER" stop "$c" >/dev/null 2>&1
    done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export HOME="$T/home"
export IDMINT_STATE_DIR="$T/state"
# The etcd members' watcher follows this shell: they die with it.
export IDM_ETCD_OWNER=$$

TW_EPOCH=2010-11-04T01:42:54.657Z
# 16 ids per ms at most: long runs stay small on disk.
ONE_BIT=time:41@1ms,worker:1,seq:4
SLOW=time:41@1ms,datacenter:5,worker:5,seq:4

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

# peek N FILE: the first N bytes of FILE, nothing if it is not there yet.
peek() { head -c "$1" "$2" 2>/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
is_num() { [[ $1 =~ ^[0-9]+$ ]]; }
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

# stop PID SIGNAL: send SIGNAL, wait; the exit status in $STOPPED.
stop() {
    kill -"$2" "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
    STOPPED=$?
}

# list_line URL WORKER: the `lease list` line of WORKER.
list_line() { "$BIN" lease list "$1" 2>/dev/null | grep "^worker=$2 " | head -n 1; }

# unix_ms LAYOUT ID: the unix ms of ID.
unix_ms() {
    if [ "$1" = twitter ]; then
        "$BIN" decode "$2"
    else
        "$BIN" decode --layout "$1" --epoch "$TW_EPOCH" "$2"
    fi 2>/dev/null | sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p'
}
max_id() { sort -n "$@" | tail -n 1; }
min_id() { sort -n "$@" | head -n 1; }

START=$(now_ms)

# ---- bad URLs: nothing to start for these ----

fails_with 2 "no /prefix" next --lease etcd:// --node datacenter=1
fails_with 2 "no /prefix" lease list etcd://
fails_with 2 "no /prefix" lease hold etcd://
fails_with 2 "no /prefix" next --lease etcd://127.0.0.1:2379 --node datacenter=1
fails_with 2 "no host:port" next --lease etcd:///p --node datacenter=1
fails_with 2 "not host:port" next --lease etcd://host-without-port/p --node datacenter=1
fails_with 2 "not host:port" lease list etcd://host-without-port/p
fails_with 2 "not host:port" lease hold etcd://127.0.0.1:0/p
fails_with 2 "not host:port" lease hold etcd://127.0.0.1:65536/p
fails_with 1 "etcd unreachable" next --lease etcd://127.0.0.1:1/p --node datacenter=1
fails_with 1 "etcd unreachable" lease list etcd://127.0.0.1:1/p
fails_with 1 "etcd unreachable" lease hold etcd://127.0.0.1:1/p
fails_with 1 "etcd unreachable" next --lease etcd://127.0.0.1:1,127.0.0.1:1/p --node datacenter=1

# ---- a one-member cluster ----

mkdir -p "$T/e1"
CLUSTERS+=("$T/e1")
if ! E1=$(bash "$SERVER" start "$T/e1" 1 2>"$T/e1.err"); then
    bad "cannot start etcd: $(tail -n 5 "$T/e1.err")"
    finish
fi
ETCD1=$(bash "$SERVER" pid "$T/e1" 1)

# ---- 1. expiry: a frozen holder loses its id and stops at its deadline ----

U1="etcd://$E1/expiry"
"$BIN" next --lease "$U1" --lease-ttl 2000 --layout "$ONE_BIT" --epoch "$TW_EPOCH" \
    -n 10000000 >"$T/a.out" 2>"$T/a.err" &
PA=$!
PIDS+=("$PA")
check "expiry: A mints [$(peek 300 "$T/a.err")]" wait_out "$T/a.out" "$PA"
# Which id A holds: its record names its pid.
WA=$("$BIN" lease list "$U1" 2>/dev/null | sed -n "s/^worker=\([01]\) held=yes .* holder=[^ ]*:$PA\$/\1/p")
check "expiry: lease list shows A's id [$WA]" is_num "$WA"
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
# Wait for etcd to drop A's claim (its TTL is 2 s).
FREE_MS=
for _ in $(seq 80); do
    if [ "$(field "$(list_line "$U1" "$WA")" held)" = no ]; then
        FREE_MS=$(now_ms)
        break
    fi
    sleep 0.1
done
check "expiry: A's id is free within 8 s of SIGSTOP" test -n "$FREE_MS"
[ -n "$FREE_MS" ] && [ $((FREE_MS - STOP_MS)) -lt 1000 ] &&
    bad "expiry: A's id was free $((FREE_MS - STOP_MS)) ms after SIGSTOP, under a second with a 2 s TTL"
while [ "$(now_ms)" -lt $((STOP_MS + 4000)) ]; do sleep 0.1; done # frozen for 4 s
CLAIM_MS=$(now_ms)
"$BIN" next --lease "$U1" --lease-ttl 2000 --layout "$ONE_BIT" --epoch "$TW_EPOCH" \
    -n 10000000 -v >"$T/b.out" 2>"$T/b.err" &
PB=$!
PIDS+=("$PB")
wait_out "$T/b.out" "$PB" 140
WB=$(sed -n 's/^idmint: next: lease: worker=\([0-9]*\) .*/\1/p' "$T/b.err")
check "expiry: B takes A's id $WA (got [$WB]; stderr [$(peek 300 "$T/b.err")])" test "$WB" = "$WA"
sleep 0.3
CONT_MS=$(now_ms)
kill -CONT "$PA"
# A must stop by itself, at once: its deadline passed while it was frozen.
wait_gone "$PA" 60
check "expiry: A exits 1 by itself once resumed (status $STOPPED, stderr [$(peek 300 "$T/a.err")])" \
    test "$STOPPED" -eq 1
[ "$STOPPED" -eq 255 ] && stop "$PA" TERM
check "expiry: A's stderr is one line [$(peek 300 "$T/a.err")]" one_line "$T/a.err"
sleep 0.3
# B still holds the id: A's exit did not release or overwrite B's record.
LB=$(list_line "$U1" "$WA")
check "expiry: B still holds the id after A's exit [$LB]" \
    test "$(field "$LB" held)" = yes -a "${LB##* holder=*:}" = "$PB"
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
# The record keeps B's mark, not one A wrote on its way out.
MW=$(field "$(list_line "$U1" "$WA")" mark_ms)
check "expiry: the record's mark ($MW) is B's last id's time ($B_LAST)" test "$MW" = "$B_LAST"
note "expiry: SIGSTOP at +$((STOP_MS - START)) ms, id free after $((${FREE_MS:-0} - STOP_MS)) ms," \
    "B claimed at +$((CLAIM_MS - START)), SIGCONT at +$((CONT_MS - START)); A $NA ids, B $NB ids"

# ---- 2. churn: 30 processes, 6 at a time, about one in five killed ----

U2="etcd://$E1/churn"
mkdir -p "$T/churn"
KILLED=0
for batch in 0 1 2 3 4; do
    pids=()
    victims=()
    for j in 0 1 2 3 4 5; do
        i=$((batch * 6 + j))
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
        wait_out "$T/churn/$((batch * 6 + j)).out" "${pids[j]}" 100
        sleep 0.05
        kill -9 "${pids[j]}" 2>/dev/null
    done
    for j in 0 1 2 3 4 5; do
        i=$((batch * 6 + j))
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
check "churn: 6 processes were killed mid-run (got $KILLED)" test "$KILLED" -eq 6
cat "$T"/churn/*.out >"$T/churn.all"
TOTAL=$(wc -l <"$T/churn.all")
check "churn: every line is an id" test "$(grep -cv '^[0-9]\{1,20\}$' "$T/churn.all")" -eq 0
check "churn: at least 25 x 2000 ids (got $TOTAL)" test "$TOTAL" -ge 50000
DUPS=$(sort "$T/churn.all" | uniq -d | wc -l)
check "churn: all $TOTAL ids unique ($DUPS repeated)" test "$DUPS" -eq 0
SAMPLE=()
for f in "$T"/churn/*.out; do
    [ -s "$f" ] && SAMPLE+=("$(head -n 1 "$f")" "$(tail -n 1 "$f")")
done
"$BIN" decode "${SAMPLE[@]}" >"$T/out" 2>"$T/err"
if [ "$(wc -l <"$T/out")" -eq "${#SAMPLE[@]}" ] && [ "${#SAMPLE[@]}" -ge 60 ] &&
    [ "$(grep -c ' datacenter=1 worker=\([0-9]\|[12][0-9]\|3[01]\) ' "$T/out")" -eq "${#SAMPLE[@]}" ]; then
    ok
else
    bad "churn: decoded ids must have datacenter=1 and worker 0..31; $(head -c 300 "$T/err")"
fi
run lease list "$U2"
check "churn: lease list works, at most 32 records ($(wc -l <"$T/out"))" \
    test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -le 32 -a "$(wc -l <"$T/out")" -ge 1

# ---- 4. etcd unreachable: a holder stops within its TTL ----

U4="etcd://$E1/frozen"
"$BIN" next --lease "$U4" --lease-ttl 2000 --layout "$SLOW" --epoch "$TW_EPOCH" \
    --node datacenter=1 -n 10000000 >"$T/f.out" 2>"$T/f.err" &
PF=$!
PIDS+=("$PF")
check "unreachable: the holder mints [$(peek 300 "$T/f.err")]" wait_out "$T/f.out" "$PF"
sleep 0.8
kill -STOP "$ETCD1"
FSTOP_MS=$(now_ms)
# It must stop by itself: at its deadline, within the TTL, then give up on
# releasing within a bounded time.
wait_gone "$PF" 200
FEND_MS=$(now_ms)
if [ "$STOPPED" -eq 255 ]; then
    bad "unreachable: the holder still runs 10 s after etcd stopped; stderr [$(peek 300 "$T/f.err")]"
    stop "$PF" TERM
fi
kill -CONT "$ETCD1"
check "unreachable: the holder exits 1 (status $STOPPED)" test "$STOPPED" -eq 1
check "unreachable: one stderr line [$(peek 400 "$T/f.err")]" one_line "$T/f.err"
trim "$T/f.out"
F_LAST=$(unix_ms "$SLOW" "$(max_id "$T/f.out")")
check "unreachable: the last id's time ($F_LAST) is before etcd's stop + TTL ($((FSTOP_MS + 2000)))" \
    test "${F_LAST:-99999999999999}" -lt $((FSTOP_MS + 2000))
check "unreachable: the holder minted after etcd stopped (last id $F_LAST, stop $FSTOP_MS)" \
    test "${F_LAST:-0}" -ge "$FSTOP_MS"
note "unreachable: exit $((FEND_MS - FSTOP_MS)) ms after SIGSTOP of etcd; last id at stop+$((${F_LAST:-0} - FSTOP_MS)) ms"
run lease list "$U4"
check "unreachable: etcd answers again after SIGCONT; $(show)" test "$RC" -eq 0

bash "$SERVER" stop "$T/e1"

# ---- 3. the leader of a three-member cluster is killed ----
#
# FAULTS E8: keepalives resume after the election (the new leader extends
# the leases), so a holder whose deadline outlasts the election never stops.
# With a 10 s TTL the deadline is 8 s after a renewal's send, and each
# renewal has TTL/3 = 3.3 s to get through: time enough for an election
# (etcd's default timing: 1 to 2 s). The leader is the first endpoint each
# holder talks to, so its death also forces them over to another member. An
# id with a time past the kill + TTL can only have been minted under a
# renewal sent after the kill (any earlier one covers at most its send +
# 0.8 TTL), and `next` exits at the first refused mint: a holder that mints
# past that point and is still running kept minting across the change.

mkdir -p "$T/e3"
CLUSTERS+=("$T/e3")
if ! E3=$(bash "$SERVER" start "$T/e3" 3 2>"$T/e3.err"); then
    bad "cannot start a three-member etcd cluster: $(tail -n 5 "$T/e3.err")"
    finish
fi
LTTL=10000
LEADER=$(bash "$SERVER" leader "$T/e3")
check "leader: a leader is found [$LEADER]" is_num "$LEADER"
LEADER=${LEADER:-1}
# The endpoints, the leader's first.
LEPS=$(printf '%s\n' "$E3" | tr ',' '\n' | sed -n "${LEADER}p")
for n in 1 2 3; do
    [ "$n" -ne "$LEADER" ] && LEPS="$LEPS,$(printf '%s\n' "$E3" | tr ',' '\n' | sed -n "${n}p")"
done
U3="etcd://$LEPS/leader"
LP=()
for k in 0 1 2; do
    "$BIN" next --lease "$U3" --lease-ttl "$LTTL" --layout "$SLOW" --epoch "$TW_EPOCH" \
        --node datacenter=1 -n 10000000 >"$T/l$k.out" 2>"$T/l$k.err" &
    LP[k]=$!
    PIDS+=("$!")
done
for k in 0 1 2; do
    check "leader: holder $k mints [$(peek 300 "$T/l$k.err")]" wait_out "$T/l$k.out" "${LP[k]}"
done
# Each holder's worker id, from its record (the record names its pid).
LW=()
for k in 0 1 2; do
    LW[k]=$("$BIN" lease list "$U3" 2>/dev/null |
        sed -n "s/^worker=\([0-9]*\) held=yes .* holder=[^ ]*:${LP[k]}\$/\1/p")
    check "leader: holder $k's record [${LW[k]}]" is_num "${LW[k]}"
done
check "leader: three distinct worker ids [${LW[*]}]" \
    test "$(printf '%s\n' "${LW[@]}" | grep -c .)" -eq 3 -a \
    "$(printf '%s\n' "${LW[@]}" | sort -u | grep -c .)" -eq 3
# Member $LEADER is still the leader (an election in between would leave
# nothing to test): it answers that it is.
check "leader: member $LEADER leads when it is killed" \
    test "$(bash "$SERVER" leader "$T/e3")" = "$LEADER"
bash "$SERVER" kill "$T/e3" "$LEADER"
KILL_MS=$(now_ms)
PAST=$((KILL_MS + LTTL))

# last_time K: the time of holder K's last complete line (the one before
# the last, which may be cut short), empty if none yet.
last_time() {
    local id
    id=$(tail -n 2 "$T/l$1.out" 2>/dev/null | head -n 1)
    [ -n "$id" ] && unix_ms "$SLOW" "$id"
}
# Wait until every holder has minted past the kill + TTL, each still
# running; the bound only ends a hung test.
LDONE=()
LDIED=
for _ in $(seq 1200); do
    n=0
    for k in 0 1 2; do
        if [ -z "${LDONE[k]:-}" ]; then
            lt=$(last_time "$k")
            [ -n "$lt" ] && [ "$lt" -gt "$PAST" ] && LDONE[k]=$lt
        fi
        [ -n "${LDONE[k]:-}" ] && n=$((n + 1))
        if ! kill -0 "${LP[k]}" 2>/dev/null ||
            [ "$(sed 's/.*) //' "/proc/${LP[k]}/stat" 2>/dev/null | cut -c1)" = Z ]; then
            LDIED="$LDIED $k"
        fi
    done
    [ -n "$LDIED" ] || [ "$n" -eq 3 ] && break
    sleep 0.05
done
check "leader: no holder stopped across the leader change [stopped:$LDIED; stderr $(for k in 0 1 2; do peek 300 "$T/l$k.err"; done)]" \
    test -z "$LDIED"
for k in 0 1 2; do
    check "leader: holder $k minted past the kill + TTL ($PAST; got ${LDONE[k]:-none})" \
        test -n "${LDONE[k]:-}"
done
# Each keeps its worker id: its record still names it, and holds a mark
# that a renewal sent after the kill recorded (a renewal's mark is its send
# time + TTL).
for k in 0 1 2; do
    LREC=$(list_line "$U3" "${LW[k]}")
    LM=$(field "$LREC" mark_ms)
    check "leader: holder $k still holds worker ${LW[k]} [$LREC]" \
        test "$(field "$LREC" held)" = yes -a "${LREC##* holder=*:}" = "${LP[k]}"
    check "leader: worker ${LW[k]}'s mark ($LM) comes from a renewal after the kill ($PAST)" \
        test "${LM:-0}" -gt "$PAST"
done
for k in 0 1 2; do
    stop "${LP[k]}" TERM
    check "leader: holder $k dies of SIGTERM, silent (status $STOPPED, stderr [$(peek 400 "$T/l$k.err")])" \
        test "$STOPPED" -eq 143 -a ! -s "$T/l$k.err"
    trim "$T/l$k.out"
done
cat "$T"/l[012].out >"$T/leader.all"
LTOTAL=$(wc -l <"$T/leader.all")
check "leader: all $LTOTAL ids unique" test "$(sort "$T/leader.all" | uniq -d | wc -l)" -eq 0
# No two holders share a worker id: every id of holder k carries worker LW[k].
for k in 0 1 2; do
    LN=$(wc -l <"$T/l$k.out")
    LOK=$(xargs -n 20000 "$BIN" decode --layout "$SLOW" --epoch "$TW_EPOCH" <"$T/l$k.out" 2>/dev/null |
        grep -c " datacenter=1 worker=${LW[k]} ")
    check "leader: all $LN ids of holder $k carry worker ${LW[k]} ($LOK do)" \
        test "$LN" -gt 0 -a "$LOK" -eq "$LN"
done
note "leader: member $LEADER killed; the holders' last ids when seen past kill + TTL:" \
    "$(for k in 0 1 2; do [ -n "${LDONE[k]:-}" ] && printf '+%s ' $((LDONE[k] - KILL_MS)) || printf 'none '; done)ms"
run lease list "$U3"
check "leader: lease list works on the surviving members; $(show)" test "$RC" -eq 0
bash "$SERVER" stop "$T/e3"

note "total $(($(now_ms) - START)) ms"
finish
