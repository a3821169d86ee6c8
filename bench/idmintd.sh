#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmintd under load, with wrk (Debian package wrk) on loopback: requests a
# second and latency for single ids over keep-alive connections, ids a
# second with batches of 1,000, and the same load on /ping (a static answer
# of the same server: the framework's ceiling), so the id path is read as a
# ratio to it. wrk and idmintd share the machine's cores.
#
#   bash bench/idmintd.sh BUILD_DIR
#
# Rows (each run IDM_BENCH_SECONDS x 4 seconds, default 4 s; the median of
# IDM_BENCH_ROUNDS rounds, default 3, interleaved):
#   H0  GET /ping                          64 connections: the ceiling
#   H1  GET /v1/snowflake (1 id, JSON)     64 connections: req/s, p99
#   H2  GET /api/snowflake/get/x (Leaf)    64 connections
#   H3  GET /v1/snowflake (1 id)           8 connections: p99 at light load
#   H4  GET /v1/snowflake?count=1000&format=text, 16 connections: ids/s
# Targets: H1 >= 100k req/s, H3 p99 < 1 ms, H4 >= 10M ids/s. The layout is
# time:41@1ms,worker:2,seq:20 (1,048,576 ids a ms: a single-worker layout
# of 12 sequence bits caps any server at 4,096,000 ids/s).
set -uo pipefail
build=$(cd "${1:?usage: idmintd.sh BUILD_DIR}" && pwd)
daemon=$build/idmintd
secs=$(awk -v s="${IDM_BENCH_SECONDS:-1}" 'BEGIN { printf "%d", (s * 4 < 1) ? 1 : s * 4 }')
rounds=${IDM_BENCH_ROUNDS:-3}
command -v wrk >/dev/null || { echo "idmintd.sh: wrk is not installed (Debian package wrk)"; exit 0; }
[ -x "$daemon" ] || { echo "idmintd.sh: $daemon not built"; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

"$daemon" --listen 127.0.0.1:0 --data-dir "$work/var" --threads 2 \
    --layout 'time:41@1ms,worker:2,seq:20' --epoch 2024-01-01 --count-max 1000 \
    2>"$work/log" &
pid=$!
port=""
for _ in $(seq 1 100); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$work/log" | head -n 1)
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || { echo "idmintd.sh: idmintd did not start:"; cat "$work/log"; exit 1; }
base=http://127.0.0.1:$port

# run ROW CONNS THREADS PATH: one wrk run; appends "req/s p50_us p99_us" to $work/ROW
run() {
    local row=$1 c=$2 t=$3 path=$4 out rps p50 p99
    out=$(wrk -t"$t" -c"$c" -d"${secs}s" --latency "$base$path" 2>&1)
    if grep -q "Non-2xx" <<<"$out"; then
        echo "idmintd.sh: WRONG: $path answered non-2xx:"
        echo "$out"
        exit 2
    fi
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
    echo "$rps $(to_us "$p50") $(to_us "$p99")" >>"$work/$row"
}
to_us() { # 1.23ms / 456.00us / 1.5s -> microseconds
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1000 }
        else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000000 }
        else print -1 }'
}
med() { # med FILE COLUMN
    awk -v c="$2" '{print $c}' "$1" | sort -g | awk '{v[NR] = $1} END { print v[int((NR + 1) / 2)] }'
}

echo
echo "idmintd under wrk: $rounds rounds of ${secs}s runs, loopback, 2 server threads, wrk on the same cores"
for r in $(seq 1 "$rounds"); do
    echo "round $r of $rounds..."
    run H0 64 2 /ping
    run H1 64 2 /v1/snowflake
    run H2 64 2 /api/snowflake/get/x
    run H3 8 1 /v1/snowflake
    run H4 16 2 '/v1/snowflake?count=1000&format=text'
done

h0=$(med "$work/H0" 1)
row() { # row ID WHAT FIG RATIO TARGET VERDICT
    printf '%-3s %-44s %-16s %-34s %-14s %s\n' "$1" "$2" "$3" "$4" "$5" "$6"
}
printf '\n%-3s %-44s %-16s %-34s %-14s %s\n' "#" "what" "figure" "ratio / latency" "target" ""
row H0 "GET /ping, 64 conns (framework ceiling)" "$(printf '%.0f req/s' "$h0")" \
    "p50 $(med "$work/H0" 2) us, p99 $(med "$work/H0" 3) us" "" ""
for id in H1 H2; do
    v=$(med "$work/$id" 1)
    what="GET /v1/snowflake (1 id), 64 conns"
    [ "$id" = H2 ] && what="GET /api/snowflake/get/x (Leaf), 64 conns"
    verdict=BELOW
    awk -v v="$v" 'BEGIN { exit !(v >= 100000) }' && verdict=PASS
    row "$id" "$what" "$(printf '%.0f req/s' "$v")" \
        "$(awk -v a="$v" -v b="$h0" 'BEGIN { printf "%.2f of /ping", a / b }'), p99 $(med "$work/$id" 3) us" \
        ">= 100k req/s" "$verdict"
done
p99=$(med "$work/H3" 3)
verdict=BELOW
awk -v v="$p99" 'BEGIN { exit !(v < 1000) }' && verdict=PASS
row H3 "GET /v1/snowflake (1 id), 8 conns" "$(printf '%.0f req/s' "$(med "$work/H3" 1)")" \
    "p50 $(med "$work/H3" 2) us, p99 $p99 us" "p99 < 1 ms" "$verdict"
v=$(med "$work/H4" 1)
ids=$(awk -v v="$v" 'BEGIN { printf "%.0f", v * 1000 }')
verdict=BELOW
awk -v v="$ids" 'BEGIN { exit !(v >= 10000000) }' && verdict=PASS
row H4 "GET /v1/snowflake?count=1000, 16 conns" "$(awk -v v="$ids" 'BEGIN { printf "%.1fM ids/s", v / 1e6 }')" \
    "$(printf '%.0f req/s' "$v"), p99 $(med "$work/H4" 3) us" ">= 10M ids/s" "$verdict"
