#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `idmint next` with every class of tick the layouts allow (1 ms, 10 ms,
# 1 s, 2 s, 60 s), with the state file and under a file:// lease: two runs
# one after the other, the second usually within the first's tick, both
# succeed, their ids strictly increase and the second run's ids are in a
# later tick. Ticks over 1 s once failed at once with the state file (its
# lookahead was 1 s, under one tick). Under a lease the TTL must be at least
# twice the tick (no id may be minted past the mark the lease records, and
# the next tick can start a whole tick ahead): a shorter one is refused up
# front with exit 2, where it once failed the second run within a tick.
#
# The long ticks do not make the test long: each layout's epoch is chosen so
# that the clock is at a known place in its tick (3 s before its end, so
# that a second run waits at most that long for the next tick; or 1 s after
# its start, with --exhaust borrow, so that both runs are in one tick by
# construction). Nothing here measures time.
#
# Usage: bash test_next_ticks.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export HOME="$T/home"
export IDMINT_STATE_DIR="$T/state"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# epoch_at TICK_MS OFFSET_MS: an epoch that puts the clock OFFSET_MS into
# tick 1000 of a layout with TICK_MS ticks.
epoch_at() { echo $(($(now_ms) - 1000 * $1 - $2)); }

# ms_list LAYOUT EPOCH FILE: the Unix ms of each id's tick in FILE, in order.
ms_list() {
    # shellcheck disable=SC2046
    "$BIN" decode --json --layout "$1" --epoch "$2" $(cat "$3") |
        sed -E 's/.*"unix_ms":([0-9]+).*/\1/'
}

# two_runs NAME LAYOUT EPOCH ARGS...: `next -n 5 ARGS` twice, one run after
# the other. Both exit 0 and are quiet, the 10 ids strictly increase, and
# the second run's first id is in a later tick than the first run's last.
# Leaves the runs' ids in $T/NAME.1 and $T/NAME.2.
two_runs() {
    local name=$1 layout=$2 epoch=$3 i rc1 rc2
    shift 3
    "$BIN" next --layout "$layout" --epoch "$epoch" -n 5 "$@" >"$T/$name.1" 2>"$T/$name.err1"
    rc1=$?
    "$BIN" next --layout "$layout" --epoch "$epoch" -n 5 "$@" >"$T/$name.2" 2>"$T/$name.err2"
    rc2=$?
    if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && [ ! -s "$T/$name.err1" ] && [ ! -s "$T/$name.err2" ] &&
        [ "$(wc -l <"$T/$name.1")" -eq 5 ] && [ "$(wc -l <"$T/$name.2")" -eq 5 ]; then
        ok
    else
        bad "$name: want two runs of 5 ids; got rc=$rc1 [$(cat "$T/$name.err1")]" \
            "then rc=$rc2 [$(cat "$T/$name.err2")]"
        return
    fi
    cat "$T/$name.1" "$T/$name.2" >"$T/$name.all"
    if [ "$(sort -u "$T/$name.all" | wc -l)" -eq 10 ] && sort -C -n "$T/$name.all"; then
        ok
    else
        bad "$name: the 10 ids of two runs do not strictly increase: $(tr '\n' ' ' <"$T/$name.all")"
    fi
    local last1 first2
    last1=$(ms_list "$layout" "$epoch" "$T/$name.1" | tail -n 1)
    first2=$(ms_list "$layout" "$epoch" "$T/$name.2" | head -n 1)
    check "$name: the second run starts in a later tick ($last1 then $first2)" \
        test "$first2" -gt "$last1"
}

layout_of() { echo "time:41@$1,worker:10,seq:12"; }

# ---------------------------------------------------------------- state file

# 1 ms and 10 ms: runs cannot share a tick often; they must still follow.
for tick in 1ms 10ms; do
    two_runs "state-$tick" "$(layout_of "$tick")" "$(epoch_at 10 0)" --node worker=7
done
# 1 s and 2 s: 100 ms into a tick; the second run waits for the next one.
two_runs state-1s "$(layout_of 1s)" "$(epoch_at 1000 100)" --node worker=7
two_runs state-2s "$(layout_of 2s)" "$(epoch_at 2000 100)" --node worker=7
# 60 s: 3 s before the tick ends, default policies (the second run waits).
two_runs state-60s "$(layout_of 60s)" "$(epoch_at 60000 57000)" --node worker=7
# 60 s: 1 s into the tick, --exhaust borrow: both runs in tick 1000, the
# second minting tick 1001 at once.
E=$(epoch_at 60000 1000)
two_runs state-60s-borrow "$(layout_of 60s)" "$E" --node worker=7 --exhaust borrow --state "$T/s60.state"
check "60 s, borrow: the first run's ids are in tick 1000" \
    test "$(ms_list "$(layout_of 60s)" "$E" "$T/state-60s-borrow.1" | sort -u)" = $((E + 1000 * 60000))
check "60 s, borrow: the second run's ids are in tick 1001" \
    test "$(ms_list "$(layout_of 60s)" "$E" "$T/state-60s-borrow.2" | sort -u)" = $((E + 1001 * 60000))
check "60 s: the state file's mark is the second run's tick" \
    grep -Eqx "idmint-state 1 $((E + 1001 * 60000)) [0-9a-f]{8}" "$T/s60.state"

# ---------------------------------------------------------------- lease

# The default TTL (10 s) serves ticks up to 5 s.
for tick in 1ms 10ms; do
    two_runs "lease-$tick" "$(layout_of "$tick")" "$(epoch_at 10 0)" --lease "file://$T/lease-$tick"
done
two_runs lease-1s "$(layout_of 1s)" "$(epoch_at 1000 100)" --lease "file://$T/lease-1s"
two_runs lease-2s "$(layout_of 2s)" "$(epoch_at 2000 100)" --lease "file://$T/lease-2s"

# A tick longer than half the TTL: refused before anything is claimed.
L60=$(layout_of 60s)
E=$(epoch_at 60000 57000)
run next --layout "$L60" --epoch "$E" --lease "file://$T/lease-60s-short"
if [ "$RC" -eq 2 ] && [ ! -s "$T/out" ] && one_err_line &&
    [ "$(cat "$T/err")" = "idmint: next: tick 60000 ms is too long for --lease-ttl 10000 (the default): ids are never minted past the mark the lease records (a renewal's time + the TTL), and the next tick starts up to one tick ahead of the clock; set --lease-ttl to at least 120000 (twice the tick)" ]; then
    ok
else
    bad "60 s tick, default TTL: want exit 2 naming the tick, the TTL and what to set; $(show)"
fi
check "60 s tick, default TTL: no lease was claimed" test ! -e "$T/lease-60s-short"
fails_with 2 exact "idmint: next: tick 60000 ms is too long for --lease-ttl 119999: ids are never minted past the mark the lease records (a renewal's time + the TTL), and the next tick starts up to one tick ahead of the clock; set --lease-ttl to at least 120000 (twice the tick)" \
    next --layout "$L60" --epoch "$E" --lease "file://$T/lease-60s-short" --lease-ttl 119999
fails_with 2 prefix "idmint: next: tick 2000 ms is too long for --lease-ttl 3999: " \
    next --layout "$(layout_of 2s)" --epoch "$E" --lease "file://$T/lease-2s-short" --lease-ttl 3999
check "a refused TTL claimed nothing" test ! -e "$T/lease-60s-short" -a ! -e "$T/lease-2s-short"
# Twice the tick: two runs within one 60 s tick.
two_runs lease-60s "$L60" "$E" --lease "file://$T/lease-60s" --lease-ttl 120000

finish
