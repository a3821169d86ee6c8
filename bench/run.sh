#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Run idmint's benchmarks and print a summary:
#
#     bash bench/run.sh BUILD_DIR
#
# Builds the idm_bench, idm_bench128, idm_bench_threads, idm_bench_lease and
# idm_bench_seg targets in BUILD_DIR (configuring a Release build there if
# BUILD_DIR is not configured yet), runs them (the Snowflake generator, then
# the 128-bit ids with libuuid as a C peer where it is installed, then the
# generators with 1, 2, 4 and 8 threads at once, then worker-id lease claims
# and renewals with every coordinator: file://, and throwaway servers started
# with scripts/etcd-test-server.sh (plain, and over TLS with certificates from
# scripts/etcd-test-certs.sh), scripts/zk-test-server.sh and
# scripts/pg-test-server.sh, then the segment allocator over SQLite ticket
# stores, then idmint audit on 100M ids against sort -n | uniq -d
# (bench/audit.sh)), installs the Node.js peers of
# bench/peers/node/package.json into BUILD_DIR/bench-node and runs them.
#
# Exit status: 0 unless something could not be built, crashed, or a
# correctness check inside the benchmark failed. A figure below its target
# is reported as BELOW and never changes the exit status; neither does a
# peer that is skipped (no node, no npm, no network, no libuuid, no etcd,
# ZooKeeper or PostgreSQL).
#
# IDM_BENCH_SECONDS (default 1) sets the length of each timed measurement,
# IDM_BENCH_ROUNDS (default 3) how many times each is repeated; figures are
# medians over the rounds.
set -u

if [ $# -ne 1 ]; then
    echo "usage: bash bench/run.sh BUILD_DIR" >&2
    exit 2
fi
build_dir=$1
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src_dir=$(dirname "$bench_dir")
seconds=${IDM_BENCH_SECONDS:-1}
rounds=${IDM_BENCH_ROUNDS:-3}

have() { command -v "$1" >/dev/null 2>&1; }
with_timeout() {
    local secs=$1
    shift
    if have timeout; then timeout "$secs" "$@"; else "$@"; fi
}

# ---- build
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    echo "run.sh: configuring a Release build in $build_dir"
    if ! cmake -S "$src_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null; then
        echo "run.sh: FAILED: could not configure $build_dir" >&2
        exit 1
    fi
fi
if ! cmake --build "$build_dir" --target idm_bench idm_bench128 idm_bench_threads idm_bench_lease idm_bench_seg -j2 >"$build_dir/bench-build.log" 2>&1; then
    cat "$build_dir/bench-build.log" >&2
    echo "run.sh: FAILED: could not build idm_bench, idm_bench128, idm_bench_threads, idm_bench_lease and idm_bench_seg" >&2
    exit 1
fi
bin=$build_dir/bench/idm_bench
bin128=$build_dir/bench/idm_bench128
binthreads=$build_dir/bench/idm_bench_threads
binlease=$build_dir/bench/idm_bench_lease
binseg=$build_dir/bench/idm_bench_seg
for b in "$bin" "$bin128" "$binthreads" "$binlease" "$binseg"; do
    if [ ! -x "$b" ]; then
        echo "run.sh: FAILED: $b was not built (is IDM_BENCH off?)" >&2
        exit 1
    fi
done

work=$(mktemp -d)
# The lease part's throwaway servers, each in its own directory.
etcd_dir=""
etcds_dir=""
zk_dir=""
pg_dir=""
lease_servers_stop() {
    local d
    for d in "$etcd_dir" "$etcds_dir"; do
        [ -n "$d" ] || continue
        bash "$src_dir/scripts/etcd-test-server.sh" stop "$d" >/dev/null 2>&1
        rm -rf "$d"
    done
    if [ -n "$zk_dir" ]; then
        bash "$src_dir/scripts/zk-test-server.sh" stop "$zk_dir" >/dev/null 2>&1
        rm -rf "$zk_dir"
    fi
    if [ -n "$pg_dir" ]; then
        bash "$src_dir/scripts/pg-test-server.sh" stop "$pg_dir" >/dev/null 2>&1
        rm -rf "$pg_dir"
    fi
    etcd_dir=""
    etcds_dir=""
    zk_dir=""
    pg_dir=""
}
cleanup() {
    lease_servers_stop
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
failed=0

# ---- idmint and the C peers
IDM_BENCH_SECONDS=$seconds IDM_BENCH_ROUNDS=$rounds "$bin" --ref-out "$work/ref.txt" | tee "$work/c.txt"
rc=${PIPESTATUS[0]}
case $rc in
    0) c_status="ok" ;;
    2) c_status="FAILED (a correctness check failed: see WRONG above)"; failed=1 ;;
    *) c_status="FAILED (idm_bench exited with status $rc)"; failed=1 ;;
esac

# ---- idmint's 128-bit ids and libuuid
IDM_BENCH_SECONDS=$seconds IDM_BENCH_ROUNDS=$rounds "$bin128" --ref-out "$work/ref128.txt" | tee "$work/c128.txt"
rc=${PIPESTATUS[0]}
case $rc in
    0) c128_status="ok" ;;
    2) c128_status="FAILED (a correctness check failed: see WRONG above)"; failed=1 ;;
    *) c128_status="FAILED (idm_bench128 exited with status $rc)"; failed=1 ;;
esac
libuuid_status=$(grep -m1 '^libuuid peer: skipped: ' "$work/c128.txt" | sed 's/^libuuid peer: //')
if [ -z "$libuuid_status" ]; then
    if grep -qE '^P6 .* (PASS|BELOW)$' "$work/c128.txt"; then
        libuuid_status="ran ($(grep -m1 -oE '^libuuid [^:]+' "$work/c128.txt" || echo libuuid))"
    else
        libuuid_status="did not run"
    fi
fi

# ---- the generators with 1, 2, 4 and 8 threads minting at once
IDM_BENCH_SECONDS=$seconds IDM_BENCH_ROUNDS=$rounds "$binthreads" | tee "$work/threads.txt"
rc=${PIPESTATUS[0]}
case $rc in
    0) threads_status="ok" ;;
    2) threads_status="FAILED (a correctness check failed: see WRONG above)"; failed=1 ;;
    *) threads_status="FAILED (idm_bench_threads exited with status $rc)"; failed=1 ;;
esac

# ---- worker-id leases: file:// here; etcd://, etcds:// (HTTPS with client
# certificates), zk:// and postgres:// on throwaway servers started here
lease_args=()
lease_skips=()
# why_from FILE: the helper script's own words for a failed start.
why_from() {
    local why
    why=$(grep -m1 -E '^[a-z-]+\.sh: ' "$1" 2>/dev/null || tail -n1 "$1" 2>/dev/null)
    printf '%s\n' "${why:-no output}"
}
lease_skip() { # FLAG REASON
    lease_args+=("$1" "$2")
    lease_skips+=("${1#--no-} rows skipped: $2")
}
if ! have etcd; then
    lease_skip --no-etcd "etcd is not installed (Debian package etcd-server)"
    lease_skip --no-etcds "etcd is not installed (Debian package etcd-server)"
elif ! have etcdctl; then
    lease_skip --no-etcd "etcdctl is not installed (Debian package etcd-client)"
    lease_skip --no-etcds "etcdctl is not installed (Debian package etcd-client)"
else
    etcd_dir=$(mktemp -d)
    if ep=$(IDM_ETCD_OWNER=$$ bash "$src_dir/scripts/etcd-test-server.sh" start "$etcd_dir" 1 2>"$work/etcd.err"); then
        lease_args+=(--etcd "$ep")
    else
        lease_skip --no-etcd "etcd did not start: $(why_from "$work/etcd.err")"
    fi
    # etcds: one member serving HTTPS only, with certificates made here
    # (a CA, a server certificate for 127.0.0.1, a client certificate).
    certs=$work/certs
    mkdir -p "$certs"
    if ! have openssl; then
        lease_skip --no-etcds "openssl is not installed (Debian package openssl)"
    elif ! bash "$src_dir/scripts/etcd-test-certs.sh" "$certs" 2>"$work/certs.err"; then
        lease_skip --no-etcds "no certificates: $(why_from "$work/certs.err")"
    else
        etcds_dir=$(mktemp -d)
        if ep=$(IDM_ETCD_OWNER=$$ bash "$src_dir/scripts/etcd-test-server.sh" \
            start-tls "$etcds_dir" "$certs" 2>"$work/etcds.err"); then
            lease_args+=(--etcds "$ep" --etcds-cacert "$certs/ca.pem"
                --etcds-cert "$certs/client.pem" --etcds-key "$certs/client-key.pem")
        else
            lease_skip --no-etcds "etcd with TLS did not start: $(why_from "$work/etcds.err")"
        fi
    fi
fi
if ! have java; then
    lease_skip --no-zk "java is not installed (Debian package zookeeper pulls it in)"
else
    zk_dir=$(mktemp -d)
    if ep=$(IDM_ZK_OWNER=$$ bash "$src_dir/scripts/zk-test-server.sh" \
        start "$zk_dir" 1 2>"$work/zk.err"); then
        lease_args+=(--zk "$ep")
    else
        lease_skip --no-zk "ZooKeeper did not start: $(why_from "$work/zk.err")"
    fi
fi
# Its own temporary directory, not one under $work: as root the server runs
# as the postgres user, which must be let through the parent directories.
pg_dir=$(mktemp -d)
if port=$(bash "$src_dir/scripts/pg-test-server.sh" start "$pg_dir" 2>"$work/pg.err"); then
    lease_args+=(--pg "postgres://postgres@127.0.0.1:$port/postgres")
else
    lease_skip --no-pg "PostgreSQL did not start: $(why_from "$work/pg.err")"
fi
IDM_BENCH_SECONDS=$seconds IDM_BENCH_ROUNDS=$rounds "$binlease" --dir "$work" \
    ${lease_args[@]+"${lease_args[@]}"} | tee "$work/lease.txt"
rc=${PIPESTATUS[0]}
case $rc in
    0) lease_status="ok" ;;
    2) lease_status="FAILED (a correctness check failed: see WRONG above)"; failed=1 ;;
    *) lease_status="FAILED (idm_bench_lease exited with status $rc)"; failed=1 ;;
esac
lease_servers_stop
for skip in ${lease_skips[@]+"${lease_skips[@]}"}; do
    echo "$skip"
    lease_status="$lease_status; $skip"
done

# ---- the segment allocator (SQLite ticket stores in a directory under $work)
IDM_BENCH_SECONDS=$seconds IDM_BENCH_ROUNDS=$rounds "$binseg" --dir "$work" | tee "$work/seg.txt"
rc=${PIPESTATUS[0]}
case $rc in
    0) seg_status="ok" ;;
    2) seg_status="FAILED (a correctness check failed: see WRONG above)"; failed=1 ;;
    *) seg_status="FAILED (idm_bench_seg exited with status $rc)"; failed=1 ;;
esac

# ---- idmintd under wrk (the service: requests a second, latency, batches)
if cmake --build "$build_dir" --target idmintd -j2 >>"$build_dir/bench-build.log" 2>&1; then
    IDM_BENCH_SECONDS=$seconds IDM_BENCH_ROUNDS=$rounds bash "$src_dir/bench/idmintd.sh" "$build_dir" |
        tee "$work/idmintd.txt"
    case ${PIPESTATUS[0]} in
        0) idmintd_status="ok" ;;
        2) idmintd_status="FAILED (an answer was not 2xx: see WRONG above)"; failed=1 ;;
        *) idmintd_status="FAILED (idmintd.sh exited with an error)"; failed=1 ;;
    esac
else
    idmintd_status="FAILED (idmintd did not build)"
    failed=1
fi

# ---- idmint audit against sort -n | uniq -d (a table export of 100M ids)
: >"$work/audit.txt"
if cmake --build "$build_dir" --target idmint_cli audit_gen -j2 >>"$build_dir/bench-build.log" 2>&1; then
    bash "$src_dir/bench/audit.sh" "$build_dir" | tee "$work/audit.txt"
    if [ "${PIPESTATUS[0]}" -eq 0 ]; then
        audit_status="ok"
    else
        audit_status="FAILED (see WRONG or FAILED above)"
        failed=1
    fi
    if grep -q '^audit benchmark: skipped' "$work/audit.txt"; then
        audit_status=$(grep -m1 '^audit benchmark: skipped' "$work/audit.txt" | sed 's/^audit benchmark: //')
    fi
else
    audit_status="FAILED (idmint or audit_gen did not build)"
    failed=1
fi

# ---- Node.js peers
node_status=""
node_dir=$(cd "$build_dir" && pwd)/bench-node
if ! have node; then
    node_status="skipped: node is not installed"
elif ! have npm; then
    node_status="skipped: npm is not installed"
else
    mkdir -p "$node_dir"
    cp "$bench_dir/peers/node/package.json" "$node_dir/package.json"
    if ! (cd "$node_dir" && with_timeout 300 npm install --no-audit --no-fund \
            --no-package-lock --ignore-scripts --loglevel=error \
            --fetch-retries=1 --fetch-timeout=30000) >"$work/npm.log" 2>&1; then
        why=$(grep -m1 -iE 'err|error' "$work/npm.log" || tail -n1 "$work/npm.log")
        echo
        echo "Node.js peers: npm install failed: ${why:-no output}"
        if [ -d "$node_dir/node_modules" ]; then
            echo "Node.js peers: trying the packages already installed"
        fi
        node_status="npm install failed (${why:-no output})"
    fi
    if [ -d "$node_dir/node_modules" ]; then
        ref_args=()
        [ -s "$work/ref.txt" ] && ref_args=(--ref "$work/ref.txt")
        node "$bench_dir/peers/node/bench.js" --dir "$node_dir" \
            --seconds "$seconds" --rounds "$rounds" "${ref_args[@]}" | tee "$work/node.txt"
        nrc=${PIPESTATUS[0]}
        ref_args=()
        [ -s "$work/ref128.txt" ] && ref_args=(--ref "$work/ref128.txt")
        node "$bench_dir/peers/node/bench128.js" --dir "$node_dir" \
            --seconds "$seconds" --rounds "$rounds" "${ref_args[@]}" | tee "$work/node128.txt"
        nrc128=${PIPESTATUS[0]}
        if [ "$nrc" -ne 0 ]; then
            node_status="FAILED (bench.js exited with status $nrc)"
            failed=1
        elif [ "$nrc128" -ne 0 ]; then
            node_status="FAILED (bench128.js exited with status $nrc128)"
            failed=1
        else
            ran=$(cat "$work/node.txt" "$work/node128.txt" |
                grep -cE ' (ok \([0-9]+ ids\)|(REPEATS|NOT INCREASING|BAD FORM): [0-9]+)' || true)
            skipped=$(cat "$work/node.txt" "$work/node128.txt" | grep -c ' skipped: ' || true)
            node_status="${node_status:+$node_status; }$ran run, $skipped skipped"
        fi
    else
        echo "Node.js peers: skipped (nothing installed)"
        node_status="skipped: ${node_status:-no packages}"
    fi
fi

# ---- summary
echo
echo "== summary =="
grep -m1 '^machine:' "$work/c.txt" || true
grep -hE ' (PASS|BELOW)$' "$work/c.txt" "$work/c128.txt" "$work/threads.txt" "$work/lease.txt" "$work/seg.txt" "$work/idmintd.txt" "$work/audit.txt" || true
pass=$(cat "$work/c.txt" "$work/c128.txt" "$work/threads.txt" "$work/lease.txt" "$work/seg.txt" "$work/idmintd.txt" "$work/audit.txt" | grep -cE ' PASS$' || true)
below=$(cat "$work/c.txt" "$work/c128.txt" "$work/threads.txt" "$work/lease.txt" "$work/seg.txt" "$work/idmintd.txt" "$work/audit.txt" | grep -cE ' BELOW$' || true)
echo "targets: $pass PASS, $below BELOW (BELOW is reported, never fatal)"
echo "idm_bench: $c_status"
echo "idm_bench128: $c128_status"
echo "libuuid peer: $libuuid_status"
echo "idm_bench_threads: $threads_status"
echo "idm_bench_lease: $lease_status"
echo "idm_bench_seg: $seg_status"
echo "idmintd.sh: $idmintd_status"
echo "audit.sh: $audit_status"
echo "Node.js peers: $node_status"
exit "$failed"
