#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The model of the worker-id lease protocol (tests/model/lease.pml) checked
# with spin: with every rule the search is complete and finds nothing; with
# a rule turned off it must find a counterexample, and the counterexample's
# trail must end at that run's property (unique or tenure), not at another
# assertion or an invalid end state.
#
# Each view of the model is generated and compiled once, in a temporary
# directory (the source tree is never written); each run picks its rules
# through the environment (IDM_MODEL_OFF, IDM_MODEL_CLAIMS, IDM_MODEL_MARGIN,
# IDM_MODEL_JUMP: see lease.pml). Every search is exhaustive (no bitstate,
# no hash compaction). Prints per run the states stored, transitions, depth
# reached and time, then "N passed, N failed"; exits 1 if any run did not
# do what it should.
#
# Usage: bash tests/model/test_model.sh
# Needs spin (scripts/deps.sh installs it) and a C compiler: $CC, or cc.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
model=$here/lease.pml
cc=${CC:-cc}
# Deep enough for every run (the deepest reaches some 16,000 steps); a run
# that hits it fails (below) rather than pass on a cut search.
depth=100000

if ! command -v spin >/dev/null 2>&1; then
  echo "test_model: spin is not on PATH (scripts/deps.sh installs it)" >&2
  exit 1
fi
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "test_model: no C compiler: '$cc' is not on PATH (set CC)" >&2
  exit 1
fi

work=$(mktemp -d -t idmint-model.XXXXXX)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
start=$(date +%s.%N)

# Seconds since $1 (a date +%s.%N), to a tenth.
since() {
  awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}

# Generate and compile view $1 (VIEW_UNIQUE or VIEW_TENURE) in $work/$1.
# -DSAFETY: safety properties only (assertions, invalid end states), the
# only kind the model states; MEMLIM bounds memory to 1 GiB, and a search
# that reaches it is reported as incomplete, never as a pass. -O1: the
# verifier's source is large and -O2 costs more to compile than it saves.
build() {
  local view=$1 dir=$work/$1
  mkdir "$dir"
  cp "$model" "$dir/lease.pml"
  if ! (cd "$dir" && spin -D"$view" -a lease.pml >spin.log 2>&1); then
    echo "test_model: spin -D$view -a lease.pml failed:" >&2
    cat "$dir/spin.log" >&2
    return 1
  fi
  if ! (cd "$dir" && "$cc" -O1 -w -DSAFETY -DMEMLIM=1024 -o pan pan.c >cc.log 2>&1); then
    echo "test_model: compiling the $view verifier failed:" >&2
    cat "$dir/cc.log" >&2
    return 1
  fi
}

t0=$(date +%s.%N)
# The two compiles at once: two cores at most.
build VIEW_UNIQUE & pid_u=$!
build VIEW_TENURE & pid_t=$!
build_ok=1
wait "$pid_u" || build_ok=0
wait "$pid_t" || build_ok=0
if [ "$build_ok" != 1 ]; then
  echo "0 passed, 1 failed"
  exit 1
fi
echo "built both views in $(since "$t0") s"

# A number from pan's output $1: the first field of the line matching $2.
field() {
  printf '%s\n' "$1" | awk -v pat="$2" '$0 ~ pat {print $1; exit}'
}

# run NAME VIEW EXPECT [VAR=VALUE...]: one search of VIEW with the
# environment given; EXPECT is "none" (complete, no error) or the property
# whose assertion must fail (unique or tenure).
run() {
  local name=$1 view=$2 expect=$3 out replay states trans reached secs errors why=""
  shift 3
  local dir=$work/$view
  rm -f "$dir/lease.pml.trail"
  out=$(cd "$dir" && env "$@" ./pan -m"$depth" 2>&1) || true
  errors=$(printf '%s\n' "$out" | sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' | head -1)
  states=$(field "$out" "states, stored")
  trans=$(field "$out" "transitions \\(= stored")
  reached=$(printf '%s\n' "$out" | sed -n 's/.*depth reached \([0-9][0-9]*\),.*/\1/p' | head -1)
  secs=$(printf '%s\n' "$out" | sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' | head -1)

  if [ -z "$errors" ] || [ -z "$states" ]; then
    why="no summary from pan"
  elif printf '%s\n' "$out" | grep -q "max search depth too small"; then
    why="the search hit its depth bound ($depth)"
  elif printf '%s\n' "$out" | grep -qE "reached -DMEMLIM bound|out of memory"; then
    why="the search ran out of memory"
  elif [ "$expect" = none ]; then
    if [ "$errors" != 0 ]; then
      why="errors: $errors ($(printf '%s\n' "$out" | grep -m1 -E '^pan:1:|violated' || true))"
    elif ! printf '%s\n' "$out" | grep -q "Full statespace search"; then
      why="not a full state-space search"
    elif printf '%s\n' "$out" | grep -q "Search not completed"; then
      why="the search did not complete"
    fi
  else
    if [ "$errors" != 1 ]; then
      why="errors: $errors, want 1"
    elif ! printf '%s\n' "$out" | grep -q "^pan:1: assertion violated $expect (at depth"; then
      why="the error is not the assertion of $expect: $(printf '%s\n' "$out" | grep -m1 '^pan:1:' || true)"
    elif [ ! -s "$dir/lease.pml.trail" ]; then
      why="no trail written"
    else
      # Replay the trail in the verifier (it runs the model's embedded C
      # code, which spin's own replay would not): it must end with the
      # property's assertion failing at its last step.
      replay=$(cd "$dir" && env "$@" ./pan -r lease.pml.trail 2>&1) || true
      local at ends
      at=$(printf '%s\n' "$replay" | sed -n "s/^pan:1: assertion violated $expect (at depth \([0-9]*\)).*/\1/p" | head -1)
      ends=$(printf '%s\n' "$replay" | sed -n 's/^spin: trail ends after \([0-9]*\) steps.*/\1/p' | head -1)
      if [ -z "$at" ]; then
        why="the replayed trail does not fail $expect: $(printf '%s\n' "$replay" | grep -m1 -E '^pan:1:|error' || true)"
      elif [ "$at" != "$ends" ]; then
        why="the replayed trail fails $expect at step $at, not its last step (${ends:-?})"
      elif [ "$(printf '%s\n' "$replay" | grep -c '^pan:1:')" != 1 ]; then
        why="the replayed trail reports more than one error"
      fi
    fi
  fi

  local what
  if [ "$expect" = none ]; then what="errors: 0, complete"; else what="errors: 1, $expect violated"; fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
    printf 'ok    %-44s %s; %s states, %s transitions, depth %s, %s s\n' \
      "$name" "$what" "$states" "$trans" "$reached" "$secs"
  else
    failed=$((failed + 1))
    printf 'FAIL  %-44s want %s: %s\n' "$name" "$what" "$why"
    printf '%s\n' "$out" | sed 's/^/      /' | tail -25
  fi
}

# Uniqueness: every rule, then each rule that it rests on turned off, and
# the ones it does not rest on (R1, the mark guard) turned off alone. R2 is
# no part of this view (its wall deadline has no margin: see lease.pml).
run "unique, every rule"                         VIEW_UNIQUE none
run "unique, without R1 (holds: the mark)"       VIEW_UNIQUE none   IDM_MODEL_OFF=R1 IDM_MODEL_CLAIMS=2
run "unique, without the mark guard (holds: R1)" VIEW_UNIQUE none   IDM_MODEL_OFF=MARKGUARD IDM_MODEL_CLAIMS=2
run "unique, without R1 and the mark guard"      VIEW_UNIQUE unique IDM_MODEL_OFF=R1,MARKGUARD IDM_MODEL_CLAIMS=2
run "unique, without R3"                         VIEW_UNIQUE unique IDM_MODEL_OFF=R3 IDM_MODEL_CLAIMS=2
run "unique, without R3's release part"          VIEW_UNIQUE unique IDM_MODEL_OFF=R3r IDM_MODEL_CLAIMS=3
run "unique, without R4"                         VIEW_UNIQUE unique IDM_MODEL_OFF=R4 IDM_MODEL_CLAIMS=2

# Tenure: every rule, then R1 and R2 turned off, a margin short of the
# drift bound, and the coordinator's clock jumping ahead (FAULTS P6: the
# worker id is let go early; uniqueness holds anyway, as the unique view
# lets a claim expire at any moment).
run "tenure, every rule"                         VIEW_TENURE none
run "tenure, without R1"                         VIEW_TENURE tenure IDM_MODEL_OFF=R1
run "tenure, without R2"                         VIEW_TENURE tenure IDM_MODEL_OFF=R2
run "tenure, margin 1 (under the drift bound)"   VIEW_TENURE tenure IDM_MODEL_MARGIN=1
run "tenure, coordinator clock jumps (P6)"       VIEW_TENURE tenure IDM_MODEL_JUMP=1

echo "all runs in $(since "$start") s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
