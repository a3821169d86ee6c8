#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the documented example twice on one state file: both runs succeed,
# print four increasing ids and the decoded node values, and the second
# run's ids are all above the first run's.
set -uo pipefail
bin=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1" >&2; fail=$((fail + 1)); fi; }

out1=$("$bin" "$d/w7.state"); rc1=$?
out2=$("$bin" "$d/w7.state"); rc2=$?
check "first run exits 0" '[ $rc1 -eq 0 ]'
check "second run exits 0" '[ $rc2 -eq 0 ]'
check "state file written" '[ -s "$d/w7.state" ]'
ids1=$(printf '%s\n' "$out1" | grep -E '^[0-9]+$')
ids2=$(printf '%s\n' "$out2" | grep -E '^[0-9]+$')
check "four ids per run" '[ "$(wc -l <<<"$ids1")" -eq 4 ] && [ "$(wc -l <<<"$ids2")" -eq 4 ]'
check "ids increase within a run" '[ "$(sort -n <<<"$ids1")" = "$ids1" ] && [ "$(sort -nu <<<"$ids1" | wc -l)" -eq 4 ]'
check "second run above the first" '[ "$(head -1 <<<"$ids2")" -gt "$(tail -1 <<<"$ids1")" ]'
check "decoded node values" 'grep -q "datacenter=1 worker=7 seq=0" <<<"$out1"'
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
