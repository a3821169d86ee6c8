#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build and test the Node.js binding against a CMake build of idmint.
#
#   bindings/node/run-tests.sh BUILD_DIR [node --test args...]
#
# Builds the static libraries in BUILD_DIR if they are missing, copies the
# package to BUILD_DIR/bindings-node (the source tree stays clean), runs
# `npm install` there (the addon is compiled by the package's install script;
# the registry is asked only for the test's devDependencies, uuid and ulid,
# and only while npm's cache lacks them), checks that another project can
# install the package from its directory, then runs `node --test`.
# node and npm come from scripts/deps.sh: missing, the test fails.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [node --test args...]" >&2; exit 2; }
build=$1
shift

for cmd in node npm; do
  command -v "$cmd" >/dev/null 2>&1 || { echo "run-tests.sh: $cmd is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
done

if [ ! -f "$build/libidmint.a" ] || [ ! -f "$build/libidmint_lease.a" ] || [ ! -f "$build/libidmint_segment.a" ]; then
  echo "run-tests.sh: building the static libraries in $build"
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j 2 --target idmint_static idmint_lease_static idmint_segment_static >/dev/null
fi
build=$(cd "$build" && pwd)

pkg="$build/bindings-node"
mkdir -p "$pkg"
# Only the package's own files: node_modules and build are made anew there.
(cd "$here" && tar cf - --exclude=./node_modules --exclude=./build .) | (cd "$pkg" && tar xf -)
export IDMINT_SOURCE_DIR="$src" IDMINT_BUILD_DIR="$build"
npm_flags=(--no-audit --no-fund --loglevel=error)
(cd "$pkg" && npm install "${npm_flags[@]}" --prefer-offline)

# As a user would: another project installs the package from its directory
# (npm links it and runs its install script there), offline.
app=$(mktemp -d "${TMPDIR:-/tmp}/idmint-node-app.XXXXXX")
trap 'rm -rf "$app"' EXIT
(cd "$app" && npm init -y >/dev/null && npm install "${npm_flags[@]}" --offline "$pkg" \
  && node -e "const i = require('idmint'); const g = i.createGenerator({ node: { datacenter: 1, worker: 1 } });
              if (!/^[0-9]+$/.test(g.nextId()) || i.uuidv7().length !== 36) process.exit(1); g.close();")
echo "run-tests.sh: npm install of the package from its directory works"

cd "$pkg"
if [ $# -eq 0 ]; then set -- test/*.test.js; fi
exec node --test "$@"
