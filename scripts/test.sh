#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, as `make test` runs it: a plain build, then the same
# tests under AddressSanitizer + UndefinedBehaviorSanitizer, then under
# ThreadSanitizer. Each build has its own directory; ctest runs each test in
# its own process with a timeout. Exits non-zero if anything failed.
set -uo pipefail
jobs=${1:-2}
cd "$(dirname "$0")/.."

status=0
run_suite() { # name build-dir cmake-flags...
  local name=$1 dir=$2
  shift 2
  echo "== $name"
  if ! cmake -S . -B "$dir" -DIDM_BENCH=OFF "$@" >/dev/null ||
     ! cmake --build "$dir" -j "$jobs" >/dev/null; then
    echo "$name: build failed" >&2
    cmake --build "$dir" -j 1 2>&1 | tail -40 >&2
    status=1
    return
  fi
  # TSan in GCC 12 cannot map its shadow memory under the high ASLR entropy
  # of recent kernels; running without address randomisation avoids that.
  local wrap=()
  if [ "$name" = tsan ] && command -v setarch >/dev/null 2>&1; then
    wrap=(setarch "$(uname -m)" -R)
  fi
  if ! "${wrap[@]}" ctest --test-dir "$dir" -j "$jobs" --output-on-failure; then
    status=1
  fi
}

run_suite plain build
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite asan build-asan -DIDM_ASAN=ON
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  run_suite tsan build-tsan -DIDM_TSAN=ON

if [ $status -eq 0 ]; then echo "make test: all suites passed"; else echo "make test: FAILED" >&2; fi
exit $status
