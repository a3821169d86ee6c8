#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Everything of docs/btree.md, regenerated: the id functions' figures
# (functions.sh) and the B-tree study's CSVs, plots and tables (btree.sh),
# each on a throwaway server of its own. Needs the extension installed
# (make -C pg install, or `make bench-pg`, which installs it first).
# About 8 minutes on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
doc=$here/../../docs/btree.md
bash "$here/functions.sh" --doc "$doc"
bash "$here/btree.sh"
