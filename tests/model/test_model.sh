#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The model check of the lease protocol (tests/model/lease.pml): spin
# explores every state of the model with all its rules, where neither
# assertion may fail, then with each rule removed in turn, where spin must
# find the counterexample that rule prevents:
#   all rules            errors: 0 (the whole state space, no depth limit hit)
#   -DNO_R1, -DNO_R2     the lease assertion fails (a process passes its
#                        deadline check after its claim was freed)
#   -DNO_R3, -DNO_R4     the ids assertion fails (a tick minted twice)
#   -DNO_R1 -DNO_R2 -DNO_LEASE_ASSERT   errors: 0 (the marks alone keep
#                        ids unique)
# Each run is built and run in a temp dir (the source tree is never
# written); the states stored, transitions, depth and time of each are
# printed. Needs spin and a C compiler on PATH (scripts/deps.sh installs
# spin): a missing one fails the test. Exits non-zero if any expectation
# fails.
set -euo pipefail

MODEL=$(cd "$(dirname "$0")" && pwd)/lease.pml
CC=${CC:-cc}
command -v spin >/dev/null 2>&1 || { echo "FAIL: spin is not on PATH (scripts/deps.sh installs it)" >&2; exit 1; }
command -v "$CC" >/dev/null 2>&1 || { echo "FAIL: no C compiler ($CC) on PATH" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

# run NAME EXPECT DEFINES...: EXPECT is "none", "lease" or "ids".
run() {
    local name=$1 expect=$2 dir=$T/$1 out t0 t1 errors got
    shift 2
    mkdir -p "$dir"
    cp "$MODEL" "$dir/lease.pml"
    t0=$(date +%s%N)
    (cd "$dir" && spin "$@" -a lease.pml >spin.log 2>&1 &&
        "$CC" -O2 -w -DSAFETY -DCOLLAPSE -o pan pan.c >cc.log 2>&1) || {
        echo "FAIL: $name: the model did not build"; cat "$dir"/*.log; fail=$((fail + 1)); return; }
    (cd "$dir" && ./pan -m100000 >pan.log 2>&1) || true
    t1=$(date +%s%N)
    out=$dir/pan.log
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | head -n 1)
    got=none
    if grep -q 'assertion violated (holder==c\[i\])' "$out"; then got=lease
    elif grep -q 'assertion violated (watch!=(t+1))' "$out"; then got=ids
    elif [ "${errors:-x}" != 0 ]; then got="other ($(grep -m1 -E 'violated|invalid|error' "$out"))"
    fi
    printf '%-28s %s states, %s transitions, depth %s, %d ms: errors %s (%s)\n' "$name" \
        "$(awk '/states, stored/ { print $1; exit }' "$out")" \
        "$(awk '/transitions \(= stored\+matched\)/ { print $1; exit }' "$out")" \
        "$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$out" | head -n 1)" \
        $(((t1 - t0) / 1000000)) "${errors:-?}" "$got"
    if grep -q 'max search depth too small' "$out"; then
        echo "FAIL: $name: the search hit its depth limit"; fail=$((fail + 1)); return
    fi
    if [ "$got" != "$expect" ] || { [ "$expect" = none ] && [ "$errors" != 0 ]; }; then
        echo "FAIL: $name: expected $expect, got $got"; sed -n '1,12p' "$out"; fail=$((fail + 1))
        return
    fi
    pass=$((pass + 1))
}

run all-rules none
run without-R1 lease -DNO_R1
run without-R2 lease -DNO_R2
run without-R3 ids -DNO_R3
run without-R4 ids -DNO_R4
run marks-alone none -DNO_R1 -DNO_R2 -DNO_LEASE_ASSERT
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
