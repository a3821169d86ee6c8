#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A shared library exports exactly the symbols listed in a file (default
# tests/data/exported-symbols.txt, for libidmint): a new public function is
# a deliberate change to that list, and nothing internal leaks out.
# Usage: abi_symbols.sh LIBRARY [LIST]
set -euo pipefail
lib=$1
want=${2:-$(dirname "$0")/data/exported-symbols.txt}
got=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRB]$/ {print $3}' | sed 's/@.*//' | sort -u)
if diff -u <(grep -v '^#' "$want" | sort -u) <(printf '%s\n' "$got"); then
  echo "1 passed, 0 failed"
else
  echo "exported symbols differ from $want (- listed, + exported)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
