#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# HTTP library bake-off for idmintd: build static_mhd and static_evhttp
# into a temp dir, start each on a free loopback port, drive it with wrk and
# print req/s and p50/p99 latency per server/config, then stop it.
#
# usage: bench/server/run.sh            (DUR=5s by default; DUR=10s ...)
# needs: cc, pkg-config, libmicrohttpd-dev, libevent-dev, wrk
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dur=${DUR:-5s}
tmp=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT

CFLAGS="-std=c11 -O2 -Wall -Wextra -Werror -pthread"
# shellcheck disable=SC2046
cc $CFLAGS -o "$tmp/static_mhd" "$here/static_mhd.c" $(pkg-config --cflags --libs libmicrohttpd)
# shellcheck disable=SC2046
cc $CFLAGS -o "$tmp/static_evhttp" "$here/static_evhttp.c" $(pkg-config --cflags --libs libevent)

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 20000))
        ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return; }
    done
}

# run_wrk LABEL THREADS CONNS PATH
run_wrk() {
    local out rps p50 p99
    out=$(wrk -t"$2" -c"$3" -d"$dur" --latency "http://127.0.0.1:$port$4")
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
        echo "  warning: $(grep 'Non-2xx\|Socket errors' <<<"$out" | tr -s ' ')" >&2
    fi
    printf '%-22s %-6s %-9s %12s %10s %10s\n' "$1" "$4" "-t$2 -c$3" "$rps" "$p50" "$p99"
}

echo "cores: $(nproc) (wrk shares them with the server); duration $dur per run"
printf '%-22s %-6s %-9s %12s %10s %10s\n' server path load req/s p50 p99
for cfg in "mhd-epoll-pool2:static_mhd 2" \
           "evhttp-reuseport-2thr:static_evhttp 2" \
           "evhttp-single:static_evhttp 1"; do
    label=${cfg%%:*}
    read -r bin nthr <<<"${cfg#*:}"
    port=$(free_port)
    "$tmp/$bin" "$port" "$nthr" >/dev/null &
    pid=$!
    for _ in $(seq 50); do
        curl -fs "http://127.0.0.1:$port/ping" >/dev/null 2>&1 && break
        sleep 0.1
    done
    run_wrk "$label" 2 64 /ping
    run_wrk "$label" 2 16 /ping
    run_wrk "$label" 1 1 /ping
    run_wrk "$label" 2 64 /big
    run_wrk "$label" 2 16 /big
    run_wrk "$label" 1 1 /big
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=
done
