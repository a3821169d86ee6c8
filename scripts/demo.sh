#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What `make run` shows: mint a few ids with the twitter preset and decode
# them, then print how to call idmint for more.
set -euo pipefail
bin=$1
state_dir=$(cd "$(dirname "$bin")" && pwd)/demo-state
export IDMINT_STATE_DIR=$state_dir

echo "== minting 5 ids: twitter preset, datacenter 1, worker 1"
mapfile -t ids < <("$bin" next -n 5 --layout twitter --node datacenter=1 --node worker=1)
printf '%s\n' "${ids[@]}"
echo
echo "== decoding them"
"$bin" decode --layout twitter "${ids[@]}"
echo
echo "== the ids of the last minute, for a range scan"
now_ms=$(date +%s%3N)
"$bin" range --layout twitter "$((now_ms - 60000))" "$now_ms"
echo
cat <<TXT
More:
  $bin next -n 10 --layout discord --node worker=3 --node process=1 --format json
  $bin decode --layout sonyflake <id>
  $bin layout instagram          # fields, lifetime, when ids turn negative
  $bin --help
State files (restarts never reuse time) are kept in $state_dir for this demo;
by default idmint keeps them under \${XDG_STATE_HOME:-\$HOME/.local/state}/idmint.
TXT
