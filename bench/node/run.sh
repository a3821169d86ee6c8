#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Node.js binding's benchmark (bindings.js) against its npm peers:
#
#   bench/node/run.sh BUILD_DIR [--seconds S] [--rounds N]
#
# Installs the binding from bindings/node into BUILD_DIR/bench-node-idmint
# (compiled against BUILD_DIR's static libraries, which are built if
# missing), the peers of package.json here into BUILD_DIR/bench-node-bindings
# (from the registry, or npm's cache), and prints the figures with a
# PASS/BELOW line per target. Exits 0 whatever the speed; 1 only if
# something did not run. Skipped (exit 0, saying so) without node or npm.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [--seconds S] [--rounds N]" >&2; exit 2; }
build=$1
shift
for cmd in node npm; do
  command -v "$cmd" >/dev/null 2>&1 || { echo "Node.js binding: skipped: $cmd is not installed"; exit 0; }
done

if [ ! -f "$build/libidmint.a" ] || [ ! -f "$build/libidmint_lease.a" ] || [ ! -f "$build/libidmint_segment.a" ]; then
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j 2 --target idmint_static idmint_lease_static idmint_segment_static >/dev/null
fi
build=$(cd "$build" && pwd)
npm_flags=(--no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=30000)

pkg="$build/bench-node-idmint"
mkdir -p "$pkg"
(cd "$src/bindings/node" && tar cf - --exclude=./node_modules --exclude=./build .) | (cd "$pkg" && tar xf -)
(cd "$pkg" && IDMINT_SOURCE_DIR="$src" IDMINT_BUILD_DIR="$build" \
  npm install "${npm_flags[@]}" --omit=dev --offline >/dev/null)

peers="$build/bench-node-bindings"
mkdir -p "$peers"
cp "$here/package.json" "$peers/package.json"
if ! (cd "$peers" && npm install "${npm_flags[@]}" --no-package-lock --ignore-scripts --prefer-offline >/dev/null); then
  echo "Node.js binding: npm install of the peers failed; the peers missing are skipped"
fi
exec node "$here/bindings.js" --dir "$peers" --idmint "$pkg" "$@"
