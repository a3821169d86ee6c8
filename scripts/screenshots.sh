#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerate the web console's screenshots in docs/screenshots/: build
# idmint and idmintd (in BUILD_DIR, default build; configured there first
# if it is not yet), then run the browser test (tests/browser/
# test_console.py), which drives headless chromium over every page at
# desktop and phone widths and saves a PNG of each, plus the status page
# after its lease was lost (status-lost-*.png). The PNGs go to a temporary
# directory first and replace those in docs/screenshots/ only if every
# check passed, so a broken console never lands in the docs.
#
# Usage: scripts/screenshots.sh [BUILD_DIR]
# Needs what the test needs: chromium, a font, etcd (scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${JOBS:-2}

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DIDM_BENCH=OFF >/dev/null
fi
if ! cmake --build "$build" -j "$jobs" --target idmint_cli idmintd >"$build/screenshots-build.log" 2>&1; then
    cat "$build/screenshots-build.log" >&2
    echo "screenshots.sh: the build failed" >&2
    exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! IDM_SCREENSHOT_DIR=$out python3 tests/browser/test_console.py "$build"; then
    echo "screenshots.sh: the browser test failed; docs/screenshots/ left as it was" >&2
    exit 1
fi
mkdir -p docs/screenshots
rm -f docs/screenshots/*.png
cp "$out"/*.png docs/screenshots/
echo "screenshots.sh: $(ls "$out"/*.png | wc -l) screenshots written to docs/screenshots/"
