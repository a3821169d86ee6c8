#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite, as `make test` runs it: a plain build, then a build
# without the optional backends, then the tests under AddressSanitizer +
# UndefinedBehaviorSanitizer, then under ThreadSanitizer, then each libFuzzer
# target for a bounded number of runs. Each build has its own directory;
# ctest runs each test in its own process with a timeout. Exits non-zero if
# anything failed.
set -uo pipefail
jobs=${1:-2}
cd "$(dirname "$0")/.."

status=0
# CTEST_ARGS: more arguments for ctest (the sanitizer builds leave out the
# fault suite and the model: see below).
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
  # The PostgreSQL extension's test (label pg) runs the installed extension
  # and first checks that it is this build's: install it into the server's
  # directories (the plain build only: the others leave it out).
  if [ -f "$dir/pg/idmint.so" ]; then
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    if ! "${sudo[@]}" make -s -C "$dir/pg" -f "$PWD/pg/Makefile" install >"$dir/pg/install.log" 2>&1; then
      cat "$dir/pg/install.log" >&2
      echo "$name: installing the PostgreSQL extension failed" >&2
      status=1
    fi
  fi
  # TSan in GCC 12 cannot map its shadow memory under the high ASLR entropy
  # of recent kernels; running without address randomisation avoids that.
  local wrap=()
  if [ "$name" = tsan ] && command -v setarch >/dev/null 2>&1; then
    wrap=(setarch "$(uname -m)" -R)
  fi
  # Twice as many tests at once as cores: most of them wait (on servers they
  # started, on leases and clocks) far more than they compute; a plain run
  # used a third of two cores with two at once.
  # shellcheck disable=SC2086 # CTEST_ARGS: words
  if ! "${wrap[@]}" ctest --test-dir "$dir" -j "$((jobs * 2))" --output-on-failure \
         ${CTEST_ARGS:-}; then
    status=1
  fi
}

run_suite plain build-plain -DCMAKE_BUILD_TYPE=Release

# Without the optional backends: the libraries and programs build, link no
# client library, and refuse a left-out backend's URLs naming its option.
minimal_suite() {
  echo "== minimal"
  local dir=build-minimal
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DIDM_TESTS=OFF -DIDM_BENCH=OFF \
         -DIDM_WITH_ETCD=OFF -DIDM_WITH_SQLITE=OFF -DIDM_WITH_POSTGRES=OFF \
         -DIDM_WITH_ZOOKEEPER=OFF >/dev/null ||
     ! cmake --build "$dir" -j "$jobs" >/dev/null; then
    echo "minimal: build failed" >&2
    cmake --build "$dir" -j 1 2>&1 | tail -40 >&2
    status=1
    return
  fi
  bash tests/build/test_minimal.sh "$dir" || status=1
}
minimal_suite
# The sanitizer builds run every test but the whole-system fault suite
# (label system: a fleet of the plain build's programs under a nemesis; its
# checker's own test runs) and the model check (label model: spin's
# verifier, no idmint code in it), which the plain build ran.
CTEST_ARGS="-LE ^(system|model)$" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_suite asan build-asan -DIDM_ASAN=ON
CTEST_ARGS="-LE ^(system|model)$" TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  run_suite tsan build-tsan -DIDM_TSAN=ON

# libFuzzer: every parser's target, built with clang under ASan+UBSan, runs a
# bounded number of inputs from its kept corpus on. New inputs go to a temp
# dir, so the source tree is never written.
fuzz_suite() {
  echo "== fuzz"
  local dir=build-fuzz runs=${IDM_FUZZ_RUNS:-200000} passed=0 failed=0 targets
  targets=$(for src in tests/fuzz/fuzz_*.c; do basename "$src" .c; done)
  # shellcheck disable=SC2086 # one word a target
  if ! CC=clang cmake -S . -B "$dir" -DIDM_FUZZ=ON -DIDM_ASAN=ON -DIDM_BENCH=OFF >/dev/null ||
     ! cmake --build "$dir" -j "$jobs" --target $targets >/dev/null; then
    echo "fuzz: build failed" >&2
    cmake --build "$dir" -j 1 2>&1 | tail -40 >&2
    status=1
    return
  fi
  local work
  work=$(mktemp -d)
  for src in tests/fuzz/fuzz_*.c; do
    local t
    t=$(basename "$src" .c)
    mkdir -p "$work/$t"
    local max_len=256
    [ "$t" = fuzz_etcd ] && max_len=1024 # whole gateway answers
    if "$dir/tests/$t" -runs="$runs" -max_total_time=120 -max_len="$max_len" \
         "$work/$t" "tests/fuzz/corpus/${t#fuzz_}" >"$work/$t.log" 2>&1; then
      echo "fuzz: $t: $(grep -o 'Done [0-9]* runs' "$work/$t.log")"
      passed=$((passed + 1))
    else
      echo "fuzz: $t FAILED" >&2
      tail -40 "$work/$t.log" >&2
      failed=$((failed + 1))
      status=1
    fi
  done
  rm -rf "$work"
  echo "fuzz: $passed passed, $failed failed"
}
fuzz_suite

if [ $status -eq 0 ]; then echo "make test: all suites passed"; else echo "make test: FAILED" >&2; fi
exit $status
