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

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
SERVER=$SCRIPTS/etcd-test-server.sh

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

start_server E1 e1 etcd 1
ETCD1=$(bash "$SERVER" pid "$T/e1" 1)

# ---- idmintd on etcd:// ----

idmintd_serves "etcd://$E1/idmintd" 32

# ---- 1. expiry: a frozen holder loses its id and stops at its deadline ----

U1="etcd://$E1/expiry"
expiry_hold "$U1"
expiry_freeze "$U1"
[ -n "$FREE_MS" ] && [ $((FREE_MS - STOP_MS)) -lt 1000 ] &&
    bad "expiry: A's id was free $((FREE_MS - STOP_MS)) ms after SIGSTOP, under a second with a 2 s TTL"
while [ "$(now_ms)" -lt $((STOP_MS + 4000)) ]; do sleep 0.1; done # frozen for 4 s
expiry_claim "$U1"
expiry_resume "$U1" 60
expiry_end "$U1"
note "expiry: SIGSTOP at +$((STOP_MS - START)) ms, id free after $((${FREE_MS:-0} - STOP_MS)) ms," \
    "B claimed at +$((CLAIM_MS - START)), SIGCONT at +$((CONT_MS - START)); A $NA ids, B $NB ids"

# ---- 2. churn: 30 processes, 6 at a time, about one in five killed ----

U2="etcd://$E1/churn"
churn "$U2" 30 6 25 --lease-ttl 2000 --node datacenter=1
check "churn: 6 processes were killed mid-run (got $KILLED)" test "$KILLED" -eq 6
churn_workers 60
churn_listed "$U2"

# ---- 4. etcd unreachable: a holder stops within its TTL ----

unreachable "etcd://$E1/frozen" "$ETCD1" etcd 200 "etcd's stop + TTL"

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

start_server E3 e3 "a three-member etcd cluster" 3
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
    spawn "l$k" next --lease "$U3" --lease-ttl "$LTTL" --layout "$SLOW" --epoch "$TW_EPOCH" \
        --node datacenter=1 -n 10000000
    LP[k]=$SPAWNED
done
for k in 0 1 2; do
    check "leader: holder $k mints [$(peek 300 "$T/l$k.err")]" wait_out "$T/l$k.out" "${LP[k]}"
done
# Each holder's worker id, from its record (the record names its pid).
LW=()
for k in 0 1 2; do
    LW[k]=$(worker_of "$U3" "${LP[k]}")
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
        exited "${LP[k]}" && LDIED="$LDIED $k"
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
