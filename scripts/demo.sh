#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What `make run` does: start idmintd on 127.0.0.1 (port 7070, or
# IDMINT_LISTEN) with its data (worker-id leases, the ticket store) in
# BUILD/var, show one call of each kind, print how to call it, and keep it
# running until Ctrl-C (SIGINT), which stops it cleanly.
#
# Usage: demo.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
cli=$build/idmint
daemon=$build/idmintd
data=$build/var
listen=${IDMINT_LISTEN:-127.0.0.1:7070}
base=http://$listen

mkdir -p "$data"
"$cli" seq create orders --store "sqlite://$data/segments.db" 2>/dev/null || true

"$daemon" --listen "$listen" --data-dir "$data" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 0' INT TERM
for _ in $(seq 1 100); do
    curl -fs "$base/healthz" >/dev/null 2>&1 && break
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "make run: idmintd did not start (is $listen in use? set IDMINT_LISTEN=127.0.0.1:PORT)" >&2
        exit 1
    fi
    sleep 0.05
done

show() {
    echo "\$ curl '$base$1'"
    curl -fsS "$base$1"
    echo
}
echo
echo "== idmintd is running on $base (data in $data; Ctrl-C stops it)"
show "/v1/snowflake?count=3"
show "/v1/snowflake?count=3&format=text"
show "/v1/uuid7?count=2"
show "/v1/segment/orders?count=3"
show "/api/snowflake/get/any"
id=$(curl -fsS "$base/api/snowflake/get/any")
show "/v1/decode/$id"
show "/healthz"
cat <<TXT
More: /v1/uuid4, /v1/ulid, /api/segment/get/orders, /v1/status, /metrics; see idmintd --help.
The console (planner, estimator, collision chart, decoder, live status):
  $base/ui/
Try it yourself:
  curl '$base/v1/snowflake?count=3'
TXT
wait "$pid"
