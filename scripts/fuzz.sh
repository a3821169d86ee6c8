#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each libFuzzer target for a while (default 60 s each) with clang, then
# merge into tests/fuzz/corpus/<target> only the inputs that add coverage.
# Not part of make test: the corpus it grows is replayed there by every build.
set -euo pipefail
secs=${1:-60}
cd "$(dirname "$0")/.."
command -v clang >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang)" >&2; exit 1; }
CC=clang cmake -S . -B build-fuzz -DIDM_FUZZ=ON -DIDM_BENCH=OFF -DIDM_ASAN=ON >/dev/null
# shellcheck disable=SC2046 # one word a target
cmake --build build-fuzz -j "$(nproc)" --target $(for s in tests/fuzz/fuzz_*.c; do basename "$s" .c; done) >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for src in tests/fuzz/fuzz_*.c; do
  t=$(basename "$src" .c)
  t=${t#fuzz_}
  echo "== fuzz_$t for ${secs}s"
  mkdir -p "$work/$t"
  max_len=256
  [ "$t" = etcd ] && max_len=1024 # whole gateway answers
  build-fuzz/tests/fuzz_$t -max_total_time="$secs" -max_len="$max_len" "$work/$t" tests/fuzz/corpus/$t 2>&1 | tail -2
  build-fuzz/tests/fuzz_$t -merge=1 tests/fuzz/corpus/$t "$work/$t" 2>&1 | tail -1
done
