#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The PostgreSQL extension's tests, against throwaway servers that this
# script starts (scripts/pg-test-server.sh) and always stops:
#
#   install     the extension is installed, and the installed idmint.so is
#               the one just built (the path given as $1)
#   regress     pg_regress runs every pg/sql/*.sql against a server with
#               shared_preload_libraries = 'idmint' and idmint.node =
#               'datacenter=1,worker=7'; the diffs are printed on failure
#   a. pgbench  8 sessions fill a primary key from idmint_next(),
#               idmint_uuidv7() and idmint_instagram() (one sequence, also
#               in bursts past 1,024 ids a millisecond): no unique violation
#   b. clock    restarts with the clock set back (libfaketime), after a
#               clean stop and after a crash: an hour back is refused (55000,
#               the clock behind the mark), 5 ms back mints above every
#               earlier id; the same for idmint_instagram and its state file
#   c. settings each bad setting stops the server's start with a log line
#               naming it; a changed layout is refused; a narrow layout's
#               ids; the extension without shared_preload_libraries
#   d. lease    two servers leasing from one file:// directory, then from
#               one etcd, get different worker ids and never mint the same
#               id; a third takes a freed worker id above its mark
#   e. keeper   kill -9 of the "idmint keeper": PostgreSQL restarts every
#               backend, and minting resumes above the earlier ids
#   f. frozen   under a frozen clock, idmint_instagram and Instagram's
#               published function agree bit for bit for 1,024 ids; then
#               theirs repeats and ours runs ahead, then refuses; and past
#               2046-06-27 (the sign bit) it gives no negative id
#
# Each scenario prints what it measured. Runs as root (the servers as
# "postgres") or as a user that may run PostgreSQL. The servers are the
# version pg_config names (PG_BINDIR is set from it).
#
# Usage: bash test_extension.sh /path/to/built/idmint.so
# Ends with one line "N passed, N failed"; exits non-zero if any failed.
# IDM_PG_BENCH_TX (default 50000): pgbench transactions per session.
# IDM_PG_ONLY: the parts to run (default: regress pgbench clock settings
# lease keeper frozen).
set -euo pipefail

SO=${1:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PGS=$ROOT/scripts/pg-test-server.sh
ETCDS=$ROOT/scripts/etcd-test-server.sh
BENCH_TX=${IDM_PG_BENCH_TX:-50000}
export LC_ALL=C PGTZ=UTC
# Servers as pg-test-server.sh makes them by default (fsync off, the true
# clock); a scenario asks for libfaketime itself.
unset IDM_PG_FAKETIME IDM_PG_DURABLE
# The etcd watcher follows this shell, not the $(...) that starts it.
export IDM_ETCD_OWNER=$$

PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); }
bad() {
    FAIL=$((FAIL + 1))
    printf 'FAIL: %s\n' "$*"
}
check() { # check DESCRIPTION COMMAND...
    local desc=$1
    shift
    if "$@"; then ok; else bad "$desc"; fi
}
say() { printf '  %s\n' "$*"; }
FINISHED=0
finish() {
    FINISHED=1
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ]
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

for t in pg_config psql pgbench etcd etcdctl; do
    command -v "$t" >/dev/null 2>&1 || { bad "not on PATH: $t (scripts/deps.sh installs it)"; finish; exit 1; }
done
BINDIR=$(pg_config --bindir)
# The servers must be the version the extension was built for.
export PG_BINDIR=$BINDIR
PGREGRESS="$(dirname "$(pg_config --pgxs)")/../../src/test/regress/pg_regress"

T=$(mktemp -d "${TMPDIR:-/tmp}/idmint-pgext.XXXXXX")
chmod 755 "$T"
SERVERS=()
ETCD_DIR=
cleanup() {
    local rc=$? d
    set +e
    trap - ERR
    # Stopped by a command that failed (set -e) or a signal: still a summary.
    [ "$FINISHED" -eq 1 ] || { FAIL=$((FAIL + 1)); finish; }
    for d in ${SERVERS[@]+"${SERVERS[@]}"}; do "$PGS" stop "$d"; done
    [ -z "$ETCD_DIR" ] || "$ETCDS" stop "$ETCD_DIR"
    rm -rf "$T"
    exit "$rc"
}
trap cleanup EXIT
# A command that fails outside a check stops the script: say which.
set -E
trap 'echo "FAIL: line $LINENO: exit $? of: $BASH_COMMAND"' ERR
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# A watcher in a session of its own stops the servers and removes $T if
# this shell dies without running its traps (kill -9, or a timeout that
# kills its process group). (Being a child of this shell, it must never be
# waited for: every wait below names its pids.)
# shellcheck disable=SC2016 # expanded by the watcher, not here
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
    for d in "$2"/*/; do [ ! -f "$d/data/postmaster.pid" ] || "$3" stop "$d"; done
    rm -rf "$2"' idmint-pgext-watcher $$ "$T" "$PGS" </dev/null >/dev/null 2>&1 &

# ------------------------------------------------------------------ helpers

as_pg() { # run as the servers' owner
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# conf DIR SETTING...: DIR's postgresql.conf as initdb made it, plus SETTINGs.
conf() {
    local dir=$1
    shift
    [ -f "$dir/initdb.conf" ] || cp "$dir/data/postgresql.conf" "$dir/initdb.conf"
    { cat "$dir/initdb.conf"; printf '%s\n' "$@"; } >"$dir/data/postgresql.conf"
}
# new_server NAME SETTING...: a cluster in $T/NAME with SETTINGs, started
# (under libfaketime if IDM_PG_FAKETIME is set); its port in PORT.
new_server() {
    local dir=$T/$1
    shift
    mkdir "$dir"
    SERVERS+=("$dir")
    "$PGS" start "$dir" >/dev/null
    conf "$dir" "$@"
    PORT=$("$PGS" restart "$dir")
}
# start DIR: start DIR's stopped server again; false if it does not start.
start() { "$PGS" restart "$1" >/dev/null 2>"$1/start.err" || { cat "$1/start.err" >&2; false; }; }
stop_clean() { as_pg "$BINDIR/pg_ctl" -D "$1/data" -m fast -w -t 60 stop >/dev/null; }
stop_crash() { "$PGS" stop "$1"; }
# sql PORT SQL [DB]: run SQL, print its rows (unaligned, no headers).
sql() {
    psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d "${3:-postgres}" -c "$2"
}
# sql_error PORT SQL [DB]: "SQLSTATE: message" of the error (or FATAL) SQL raises, or
# "no error: " and its output; the whole error text in $T/err.
sql_error() {
    local out
    : >"$T/err"
    if out=$(psql -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -h 127.0.0.1 -p "$1" \
        -U postgres -d "${3:-postgres}" -c "$2" 2>&1); then
        printf 'no error: %s\n' "$out"
    else
        printf '%s\n' "$out" >"$T/err"
        sed -n 's/^\(ERROR\|FATAL\):  //p' "$T/err" | head -n 1
    fi
}
# wait_minting PORT [SQL]: retry SQL (idmint_next()) for up to 10 s; print
# how many ms it took to succeed; false if it never did.
wait_minting() {
    local t0 q=${2:-SELECT idmint_next()}
    t0=$(now_ms)
    while [ $(($(now_ms) - t0)) -lt 10000 ]; do
        if sql "$1" "$q" >/dev/null 2>&1; then
            echo $(($(now_ms) - t0))
            return 0
        fi
        sleep 0.05
    done
    return 1
}
# state_mark FILE: the mark (Unix ms) of an idmint state file; -1 if none.
state_mark() {
    local m
    m=$(awk '$1 == "idmint-state" { print $3 }' "$1" 2>/dev/null || true)
    echo "${m:--1}"
}
# Unix ms of a twitter id / an Instagram id.
tw_ms() { echo $((($1 >> 22) + 1288834974657)); }
ig_ms() { echo $((($1 >> 23) + 1314220021721)); }
# starts_with TEXT PREFIX
starts_with() { [ "${1#"$2"}" != "$1" ]; }
contains() { [ -z "$2" ] || [ "${1#*"$2"}" != "$1" ]; }
# err_is ERROR SQLSTATE [TEXT]: sql_error's answer is that SQLSTATE (with TEXT).
err_is() { starts_with "$1" "$2:" && contains "$1" "${3:-}"; }
# needs_preload ANSWER: 55000, and the hint names shared_preload_libraries.
needs_preload() { err_is "$1" 55000 && grep -q "HINT:.*shared_preload_libraries" "$T/err"; }
# positive ANSWER: sql_error's answer is a number above 0.
positive() { [[ $1 =~ ^no\ error:\ [1-9][0-9]*$ ]]; }

# ------------------------------------------------------------ installation

installed() {
    local lib share
    echo "install:"
    if [ -z "$SO" ] || [ ! -f "$SO" ]; then
        bad "usage: test_extension.sh /path/to/built/idmint.so (got '$SO')"
        return 1
    fi
    lib=$(pg_config --pkglibdir)/idmint.so
    share=$(pg_config --sharedir)/extension
    if [ ! -f "$lib" ] || [ ! -f "$share/idmint.control" ]; then
        bad "the extension is not installed ($lib, $share/idmint.control): run make -C pg install (as root)"
        return 1
    fi
    if ! cmp -s "$SO" "$lib"; then
        bad "the installed $lib is not the idmint.so just built ($SO): run make -C pg install (as root)"
        return 1
    fi
    for f in idmint.control idmint--1.0.sql; do
        if ! cmp -s "$ROOT/pg/$f" "$share/$f"; then
            bad "the installed $share/$f differs from pg/$f: run make -C pg install (as root)"
            return 1
        fi
    done
    ok
    say "the installed idmint.so, control file and script are the ones built"
}

# ------------------------------------------------------------- pg_regress

# The server of the regression tests (and of the keeper's scenario).
REGRESS_PORT=
regress_server() {
    new_server regress "shared_preload_libraries = 'idmint'" "idmint.node = 'datacenter=1,worker=7'"
    REGRESS_PORT=$PORT
}

scenario_regress() {
    local tests=() f t0 rc=0
    echo "regress:"
    for f in "$ROOT"/pg/sql/*.sql; do
        f=${f##*/}
        tests+=("${f%.sql}")
    done
    mkdir "$T/regress-out"
    t0=$(now_ms)
    "$PGREGRESS" --inputdir="$ROOT/pg" --outputdir="$T/regress-out" --bindir="$BINDIR" \
        --host=127.0.0.1 --port="$REGRESS_PORT" --user=postgres --dbname=contrib_regression \
        "${tests[@]}" >"$T/regress.log" 2>&1 || rc=$?
    grep -E '^test |tests? (passed|failed)' "$T/regress.log" | sed 's/^/  /' || true
    if [ "$rc" -eq 0 ]; then
        ok
        say "${#tests[@]} tests passed in $(($(now_ms) - t0)) ms"
    else
        bad "pg_regress failed (exit $rc); its output and the diffs follow"
        cat "$T/regress.log"
        [ ! -f "$T/regress-out/regression.diffs" ] || cat "$T/regress-out/regression.diffs"
    fi
}

# --------------------------------------------------------------- a. pgbench

# bench PORT TABLE TX STATEMENT: 8 sessions (2 threads) run TX transactions
# of STATEMENT each; then the table's rows must be distinct.
bench() {
    local port=$1 table=$2 tx=$3 stmt=$4 t0 ms rc=0 rows distinct
    printf '%s\n' "$stmt" >"$T/$table.pgbench"
    t0=$(now_ms)
    pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c 8 -j 2 -t "$tx" -M prepared \
        -f "$T/$table.pgbench" postgres >"$T/$table.bench" 2>&1 || rc=$?
    ms=$(($(now_ms) - t0))
    IFS='|' read -r rows distinct <<<"$(sql "$port" "SELECT count(*), count(DISTINCT id) FROM $table")"
    if [ "$rc" -eq 0 ] && ! grep -q 'duplicate key' "$T/$table.bench"; then
        ok
    else
        bad "pgbench on $table exited $rc: $(grep -m 3 -E 'ERROR|error|failed' "$T/$table.bench" | tr '\n' ' ')"
    fi
    BENCH_ROWS=$rows
    check "$table: $distinct distinct of $rows rows" test "$distinct" -eq "$rows"
    say "$table: 8 sessions x $tx transactions of '$stmt': $rows rows, $distinct distinct, in $ms ms ($((rows * 1000 / (ms > 0 ? ms : 1))) rows/s), pgbench exit $rc"
}

scenario_pgbench() {
    local port want
    echo "a. pgbench:"
    new_server bench "shared_preload_libraries = 'idmint'" "idmint.node = 'datacenter=1,worker=7'"
    port=$PORT
    sql "$port" "CREATE EXTENSION idmint;
        CREATE TABLE snow (id bigint PRIMARY KEY DEFAULT idmint_next());
        CREATE TABLE uuid7 (id uuid PRIMARY KEY DEFAULT idmint_uuidv7());
        CREATE SEQUENCE ig_seq;
        CREATE TABLE ig (id bigint PRIMARY KEY DEFAULT idmint_instagram(5, 'ig_seq'));
        CREATE UNLOGGED TABLE ig_burst (id bigint DEFAULT idmint_instagram(6, 'ig_seq'));
        CREATE TABLE ig_burst_errors (sqlstate text, message text)"
    want=$((8 * BENCH_TX))
    bench "$port" snow "$BENCH_TX" "INSERT INTO snow DEFAULT VALUES;"
    check "snow: $BENCH_ROWS rows, want $want" test "$BENCH_ROWS" -eq "$want"
    bench "$port" uuid7 "$BENCH_TX" "INSERT INTO uuid7 DEFAULT VALUES;"
    check "uuid7: $BENCH_ROWS rows, want $want" test "$BENCH_ROWS" -eq "$want"
    bench "$port" ig "$BENCH_TX" "INSERT INTO ig DEFAULT VALUES;"
    check "ig: $BENCH_ROWS rows, want $want" test "$BENCH_ROWS" -eq "$want"
    burst "$port"
}

# burst PORT: 8 sessions on one sequence, in statements of 2,500 rows into a
# table with no index (so that 2 cores outrun 1,024 ids a millisecond, where
# Instagram's own function repeats): no repeat, at most 1,024 ids a
# millisecond; a statement refused is counted with its SQLSTATE, and a burst
# (the clock sound) may only be refused as one (54000, docs/postgres.md).
burst() {
    local port=$1 t0 ms rows distinct per_ms full n_ms errors states pids=()
    t0=$(now_ms)
    for _ in 1 2 3 4 5 6 7 8; do
        sql "$port" "DO \$\$
            BEGIN
                FOR i IN 1..20 LOOP
                    BEGIN
                        INSERT INTO ig_burst SELECT FROM generate_series(1, 2500);
                    EXCEPTION WHEN OTHERS THEN
                        INSERT INTO ig_burst_errors VALUES (SQLSTATE, SQLERRM);
                    END;
                END LOOP;
            END \$\$" &
        pids+=($!)
    done
    wait "${pids[@]}"
    ms=$(($(now_ms) - t0))
    IFS='|' read -r rows distinct per_ms full n_ms <<<"$(sql "$port" "SELECT
        (SELECT count(*) FROM ig_burst), (SELECT count(DISTINCT id) FROM ig_burst),
        max(n), count(*) FILTER (WHERE n = 1024), count(*)
        FROM (SELECT count(*) AS n FROM ig_burst GROUP BY id >> 23) AS s")"
    errors=$(sql "$port" "SELECT count(*) FROM ig_burst_errors")
    states=$(sql "$port" "SELECT string_agg(DISTINCT sqlstate, ',') FROM ig_burst_errors")
    check "ig_burst: $distinct distinct of $rows rows" test "$distinct" -eq "$rows"
    check "ig_burst: $rows rows and $errors refused statements of 2,500 make 400000" \
        test $((rows + 2500 * errors)) -eq 400000
    check "ig_burst: at most 1,024 ids a millisecond (max $per_ms)" test "$per_ms" -le 1024
    check "ig_burst: refusals of a burst are 54000, not another state ($errors refused: ${states:-none}; $(sql "$port" "SELECT message FROM ig_burst_errors LIMIT 1"))" \
        test "${states:-54000}" = 54000
    say "ig_burst: 8 sessions x 20 statements of 2,500 rows on one sequence: $rows rows, $distinct distinct, in $ms ms; $full of $n_ms milliseconds held the full 1,024 (max $per_ms); $errors statements refused (${states:-none})"
}

# ------------------------------------------------- b. restarts, clock set back

scenario_clock() {
    local dir port max ig e m ig_mark waited max2 ig2 min
    echo "b. restart with the clock set back:"
    IDM_PG_FAKETIME=+0 new_server clock "shared_preload_libraries = 'idmint'" \
        "idmint.node = 'datacenter=1,worker=7'"
    dir=$T/clock
    port=$PORT
    sql "$port" "CREATE EXTENSION idmint; CREATE SEQUENCE ig_seq"
    max=$(sql "$port" "SELECT max(idmint_next()) FROM generate_series(1, 10000)")
    ig=$(sql "$port" "SELECT max(idmint_instagram(1, 'ig_seq')) FROM generate_series(1, 3000)")

    # While running: an hour back is refused, the true time mints on above.
    "$PGS" faketime "$dir" -3600
    e=$(sql_error "$port" "SELECT idmint_next()")
    check "running, clock an hour back: idmint_next() fails with 55000 [$e]" starts_with "$e" "55000:"
    say "running, clock an hour back: $e"
    "$PGS" faketime "$dir" +0
    m=$(sql "$port" "SELECT min(idmint_next()) FROM generate_series(1, 10)")
    check "running, clock back to true: ids go on above ($m > $max)" test "$m" -gt "$max"
    max=$(sql "$port" "SELECT max(idmint_next()) FROM generate_series(1, 1000)")

    # A clean stop stores the exact marks: the last id's time.
    stop_clean "$dir"
    m=$(state_mark "$dir/data/idmint.state")
    check "clean stop: idmint.state's mark $m is the last id's ms $(tw_ms "$max")" \
        test "$m" -eq "$(tw_ms "$max")"
    ig_mark=$(state_mark "$dir/data/idmint.instagram.state")
    check "clean stop: idmint.instagram.state's mark $ig_mark is the last id's ms $(ig_ms "$ig")" \
        test "$ig_mark" -eq "$(ig_ms "$ig")"
    say "clean stop: marks at the last ids' ms (idmint.state $m, idmint.instagram.state $ig_mark)"

    # An hour back: neither mints, and the marks do not move.
    "$PGS" faketime "$dir" -3600
    start "$dir"
    sleep 0.3
    e=$(sql_error "$port" "SELECT idmint_next()")
    check "clean stop, an hour back: idmint_next() fails with 55000, the clock behind the mark [$e]" \
        err_is "$e" 55000 "behind the mark"
    say "an hour back: idmint_next(): $e"
    e=$(sql_error "$port" "SELECT idmint_instagram(1, 'ig_seq')")
    check "clean stop, an hour back: idmint_instagram() fails with 55000 [$e]" starts_with "$e" "55000:"
    say "an hour back: idmint_instagram(): $e"
    e=$(sql "$port" "SELECT ready::text || ' ' || message FROM idmint_status()")
    check "an hour back: idmint_status() says not ready, waiting [$e]" starts_with "$e" "false waiting"
    stop_clean "$dir"
    check "the marks stayed: idmint.state $(state_mark "$dir/data/idmint.state"), instagram $(state_mark "$dir/data/idmint.instagram.state")" \
        test "$(state_mark "$dir/data/idmint.state")" -eq "$m" -a \
        "$(state_mark "$dir/data/idmint.instagram.state")" -eq "$ig_mark"

    # 5 ms back (libfaketime's -0.005): mints, above every earlier id.
    "$PGS" faketime "$dir" -0.005
    start "$dir"
    if waited=$(wait_minting "$port"); then ok; else
        bad "5 ms back after a clean stop: never minted: $(sql_error "$port" "SELECT idmint_next()")"
        return
    fi
    min=$(sql "$port" "SELECT min(idmint_next()) FROM generate_series(1, 1000)")
    max2=$(sql "$port" "SELECT max(idmint_next()) FROM generate_series(1, 1000)")
    check "5 ms back: new ids above the earlier max ($min > $max)" test "$min" -gt "$max"
    min=$(sql "$port" "SELECT min(idmint_instagram(1, 'ig_seq')) FROM generate_series(1, 1000)")
    check "5 ms back: idmint_instagram above its earlier max ($min > $ig)" test "$min" -gt "$ig"
    ig2=$(sql "$port" "SELECT max(idmint_instagram(1, 'ig_seq')) FROM generate_series(1, 1000)")
    say "5 ms back after a clean stop: minting after ${waited} ms, ids above the earlier ones"

    # A crash leaves the marks up to a second ahead of the last use.
    stop_crash "$dir"
    m=$(state_mark "$dir/data/idmint.state")
    ig_mark=$(state_mark "$dir/data/idmint.instagram.state")
    check "crash: idmint.state's mark $m covers the last id's ms $(tw_ms "$max2")" \
        test "$m" -ge "$(tw_ms "$max2")"
    check "crash: idmint.instagram.state's mark $ig_mark covers the last id's ms $(ig_ms "$ig2")" \
        test "$ig_mark" -ge "$(ig_ms "$ig2")"
    say "crash: marks $((m - $(tw_ms "$max2"))) ms and $((ig_mark - $(ig_ms "$ig2"))) ms ahead of the last ids"
    "$PGS" faketime "$dir" -3600
    start "$dir"
    sleep 0.3
    e=$(sql_error "$port" "SELECT idmint_next()")
    check "crash, an hour back: idmint_next() fails with 55000, the clock behind the mark [$e]" \
        err_is "$e" 55000 "behind the mark"
    e=$(sql_error "$port" "SELECT idmint_instagram(1, 'ig_seq')")
    check "crash, an hour back: idmint_instagram() fails with 55000 [$e]" starts_with "$e" "55000:"
    stop_crash "$dir"
    "$PGS" faketime "$dir" -0.005
    start "$dir"
    if waited=$(wait_minting "$port"); then ok; else
        bad "5 ms back after a crash: never minted: $(sql_error "$port" "SELECT idmint_next()")"
        return
    fi
    min=$(sql "$port" "SELECT min(idmint_next()) FROM generate_series(1, 1000)")
    check "crash, 5 ms back: new ids above the earlier max ($min > $max2)" test "$min" -gt "$max2"
    check "crash, 5 ms back: new ids above the mark ($(tw_ms "$min") > $m)" test "$(tw_ms "$min")" -gt "$m"
    if e=$(wait_minting "$port" "SELECT idmint_instagram(1, 'ig_seq')"); then ok; else
        bad "5 ms back after a crash: idmint_instagram never minted: $(sql_error "$port" "SELECT idmint_instagram(1, 'ig_seq')")"
        return
    fi
    min=$(sql "$port" "SELECT min(idmint_instagram(1, 'ig_seq')) FROM generate_series(1, 1000)")
    check "crash, 5 ms back: idmint_instagram above its mark ($(ig_ms "$min") > $ig_mark)" \
        test "$(ig_ms "$min")" -gt "$ig_mark"
    say "5 ms back after a crash: idmint_next() after ${waited} ms, idmint_instagram() after ${e} ms, both above the marks"
    stop_crash "$dir"
}

# ------------------------------------------------------------- c. settings

# refused DIR WHAT PATTERN... : DIR's server does not start, and one
# FATAL (or ERROR) line of its log matches every PATTERN (fixed strings).
refused() {
    local dir=$1 what=$2 from line p all
    shift 2
    from=$(($(wc -c <"$dir/server.log") + 1))
    if start "$dir"; then
        bad "settings: the server started with $what"
        stop_crash "$dir"
        return
    fi
    line=""
    while IFS= read -r l; do
        all=1
        for p in "$@"; do contains "$l" "$p" || all=0; done
        if [ "$all" -eq 1 ]; then line=$l; break; fi
    done < <(tail -c +"$from" "$dir/server.log" | grep -E '(FATAL|ERROR|PANIC): ' || true)
    if [ -n "$line" ]; then
        ok
        say "refused $what: ${line#*]}"
    else
        bad "settings: $what: no FATAL line naming $* in the log: $(tail -c +"$from" "$dir/server.log" | grep -E 'FATAL|ERROR|WARNING' | head -n 3 | tr '\n' ' ')"
    fi
}

scenario_settings() {
    local dir=$T/settings port e
    local pre="shared_preload_libraries = 'idmint'" node="idmint.node = 'datacenter=1,worker=7'"
    echo "c. settings:"
    mkdir "$T/lease-c"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$T/lease-c"
    new_server settings "$pre" "$node"
    port=$PORT
    sql "$port" "CREATE EXTENSION idmint; SELECT idmint_next()" >/dev/null
    stop_clean "$dir"

    conf "$dir" "$pre" "$node" "idmint.layout = 'nonsense'"
    refused "$dir" "idmint.layout 'nonsense'" idmint.layout nonsense
    conf "$dir" "$pre" "idmint.node = 'worker=1'" "idmint.layout = 'time:42@1ms,worker:10,seq:12'" \
        "idmint.epoch = '2020-01-01T00:00:00Z'"
    refused "$dir" "a 64-bit text layout" idmint.layout "64 bits"
    conf "$dir" "$pre" "$node" "idmint.epoch = 'tomorrow'"
    refused "$dir" "idmint.epoch 'tomorrow'" idmint.epoch tomorrow
    conf "$dir" "$pre"
    refused "$dir" "no idmint.node" idmint.node datacenter
    conf "$dir" "$pre" "idmint.node = 'datacenter=1,worker=99'"
    refused "$dir" "worker=99" idmint.node 99
    conf "$dir" "$pre" "idmint.node = 'color=1'"
    refused "$dir" "color=1" idmint.node color
    conf "$dir" "$pre" "idmint.node = 'datacenter=1,worker=1,worker=2'"
    refused "$dir" "worker=1,worker=2" idmint.node twice
    conf "$dir" "$pre" "$node" "idmint.lease = 'gopher://x'"
    refused "$dir" "idmint.lease 'gopher://x'" idmint.lease gopher
    conf "$dir" "$pre" "$node" "idmint.max_drift_ms = '-5'"
    refused "$dir" "idmint.max_drift_ms -5" idmint.max_drift_ms -5
    conf "$dir" "$pre" "$node" "idmint.backwards_policy = 'sometimes'"
    refused "$dir" "idmint.backwards_policy 'sometimes'" idmint.backwards_policy sometimes
    conf "$dir" "$pre" "$node" "idmint.lease = 'file://$T/lease-c'"
    refused "$dir" "idmint.lease with idmint.node giving worker" idmint.lease idmint.node worker

    # Another layout on a data directory that minted with twitter: refused
    # until its idmint.layout file is removed.
    conf "$dir" "$pre" "idmint.layout = 'time:38@1ms,worker:4,seq:8'" \
        "idmint.epoch = '2024-01-01T00:00:00Z'" "idmint.node = 'worker=3'"
    if start "$dir"; then ok; else bad "settings: the narrow layout did not start: $(cat "$dir/start.err")"; fi
    e=$(sql_error "$port" "SELECT idmint_next()")
    check "a changed layout: idmint_next() fails with 55000 naming the idmint.layout file [$e]" \
        err_is "$e" 55000 idmint.layout
    say "a changed layout: $e"
    # A narrow layout's decoding: an id with bits above its 50 is refused.
    e=$(sql_error "$port" "SELECT idmint_time(1::bigint << 50)")
    check "narrow layout: an id above its 50 bits fails with 22003 [$e]" \
        err_is "$e" 22003 "does not fit"
    say "narrow layout, 1 << 50: $e"
    e=$(sql_error "$port" "SELECT * FROM idmint_decode((1::bigint << 50) - 1)")
    check "narrow layout: its largest id decodes [$e]" starts_with "$e" "no error"
    stop_clean "$dir"
    rm -f "$dir/data/idmint.layout"
    start "$dir"
    # (A start above that should have been refused, and was stopped as a
    # crash, may have left the mark up to a second ahead.)
    wait_minting "$port" >/dev/null || true
    e=$(sql_error "$port" "SELECT (idmint_decode(id)).node::text || ' ' || (id < (1::bigint << 50))::text
        FROM (SELECT idmint_next() AS id) AS s")
    check "narrow layout, its file removed: mints worker 3 ids below 2^50 [$e]" \
        test "$e" = 'no error: {"worker": 3} true'
    stop_clean "$dir"

    # Without shared_preload_libraries: the extension installs, minting
    # says what to do, decoding works.
    conf "$dir"
    start "$dir"
    sql "$port" "CREATE DATABASE nopreload"
    e=$(sql_error "$port" "CREATE EXTENSION idmint" nopreload)
    check "no preload: CREATE EXTENSION works [$e]" starts_with "$e" "no error"
    e=$(sql_error "$port" "SELECT idmint_next()" nopreload)
    check "no preload: idmint_next() fails with 55000 and the hint [$e / $(grep HINT "$T/err" 2>/dev/null || true)]" \
        needs_preload "$e"
    say "no preload: idmint_next(): $e"
    e=$(sql_error "$port" "SELECT idmint_time(175928847299117063, 'discord')" nopreload)
    check "no preload: idmint_time with a preset works [$e]" \
        test "$e" = "no error: 2016-04-30 11:18:25.796+00"
    e=$(sql_error "$port" "SELECT node FROM idmint_decode(1344795471369408554)" nopreload)
    check "no preload: idmint_decode with the server's layout works [$e]" \
        test "$e" = 'no error: {"worker": 17, "datacenter": 3}'
    e=$(sql_error "$port" "SELECT idmint_lower_bound('2021-01-01 00:00:00.123+00')" nopreload)
    check "no preload: idmint_lower_bound works [$e]" test "$e" = "no error: 1344795471368945664"
    say "no preload: decoding: $e"
    stop_crash "$dir"
}

# ---------------------------------------------------------------- d. leases

# lease_pair URL A B: servers A and B (running, on URL) mint under
# different worker ids and never the same id.
lease_pair() {
    local url=$1 a=$2 b=$3 pa pb wa wb da db dup pids
    pa=$(cat "$T/$a/port")
    pb=$(cat "$T/$b/port")
    if ! wait_minting "$pa" >/dev/null || ! wait_minting "$pb" >/dev/null; then
        bad "lease $url: $a or $b never minted: $(sql "$pa" "SELECT message FROM idmint_status()") / $(sql "$pb" "SELECT message FROM idmint_status()")"
        return 1
    fi
    wa=$(sql "$pa" "SELECT node->>'worker' FROM idmint_status()")
    wb=$(sql "$pb" "SELECT node->>'worker' FROM idmint_status()")
    check "lease $url: $a and $b hold different worker ids ($wa, $wb)" test "$wa" != "$wb"
    # Both at once.
    sql "$pa" "SELECT idmint_next() FROM generate_series(1, 50000)" >"$T/$a.ids" &
    pids=($!)
    sql "$pb" "SELECT idmint_next() FROM generate_series(1, 50000)" >"$T/$b.ids" &
    pids+=($!)
    wait "${pids[@]}"
    da=$(sql "$pa" "SELECT string_agg(DISTINCT (idmint_decode(id)).node->>'worker', ',')
        FROM unnest(ARRAY[$(head -n 1 "$T/$a.ids"), $(tail -n 1 "$T/$a.ids")]::bigint[]) AS id")
    db=$(sql "$pb" "SELECT string_agg(DISTINCT (idmint_decode(id)).node->>'worker', ',')
        FROM unnest(ARRAY[$(head -n 1 "$T/$b.ids"), $(tail -n 1 "$T/$b.ids")]::bigint[]) AS id")
    check "lease $url: $a's ids decode to its worker $wa ($da)" test "$da" = "$wa"
    check "lease $url: $b's ids decode to its worker $wb ($db)" test "$db" = "$wb"
    dup=$(sort "$T/$a.ids" "$T/$b.ids" | uniq -d | wc -l)
    check "lease $url: $dup ids minted by both" test "$dup" -eq 0
    say "$url: $a worker $wa, $b worker $wb; $(cat "$T/$a.ids" "$T/$b.ids" | wc -l) ids at once, $dup in common"
}

scenario_lease() {
    local leases=$T/leases url ep pa pc wa wc amax cmin
    local pre="shared_preload_libraries = 'idmint'" node="idmint.node = 'datacenter=1'"
    echo "d. leases:"
    mkdir "$leases"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$leases"
    url="file://$leases"
    new_server la "$pre" "$node" "idmint.lease = '$url'"
    new_server lb "$pre" "$node" "idmint.lease = '$url'"
    sql "$(cat "$T/la/port")" "CREATE EXTENSION idmint"
    sql "$(cat "$T/lb/port")" "CREATE EXTENSION idmint"
    lease_pair "file://" la lb || return 0
    pa=$(cat "$T/la/port")
    wa=$(sql "$pa" "SELECT node->>'worker' FROM idmint_status()")
    amax=$(sql "$pa" "SELECT max(idmint_next()) FROM generate_series(1, 1000)")
    stop_clean "$T/la"
    new_server lc "$pre" "$node" "idmint.lease = '$url'"
    pc=$PORT
    sql "$pc" "CREATE EXTENSION idmint"
    if wait_minting "$pc" >/dev/null; then ok; else
        bad "lease: the third server never minted: $(sql "$pc" "SELECT message FROM idmint_status()")"
        return
    fi
    wc=$(sql "$pc" "SELECT node->>'worker' FROM idmint_status()")
    cmin=$(sql "$pc" "SELECT min(idmint_next()) FROM generate_series(1, 1000)")
    if [ "$wc" = "$wa" ]; then
        check "lease: the third server took the freed worker $wa above its last id ($cmin > $amax)" \
            test "$cmin" -gt "$amax"
        say "file://: a stopped cleanly (last id $amax); c took its worker $wa and mints above it ($cmin)"
    else
        ok
        say "file://: a stopped cleanly; c took worker $wc, not a's $wa"
    fi

    # The lease lost under a running server (its lock file removed, FAULTS
    # X8): the keeper hears it at the next renewal, stops minting, claims
    # again, and mints above every id of the lost claim.
    amax=$(sql "$pc" "SELECT max(idmint_next()) FROM generate_series(1, 1000)")
    rm -f "$leases/worker-$(printf %04d "$wc").lease"
    for _ in $(seq 150); do
        grep -q "is lost; claiming again" "$T/lc/server.log" && break
        sleep 0.1
    done
    check "lease lost: the keeper heard it (server.log)" \
        grep -q "is lost; claiming again" "$T/lc/server.log"
    if wait_minting "$pc" >/dev/null; then ok; else
        bad "lease lost: no minting after the re-claim: $(sql "$pc" "SELECT message FROM idmint_status()")"
        return
    fi
    wa=$(sql "$pc" "SELECT node->>'worker' FROM idmint_status()")
    cmin=$(sql "$pc" "SELECT min(idmint_next()) FROM generate_series(1, 1000)")
    check "lease lost: minting again as worker $wa, above every id of the lost claim ($cmin > $amax)" \
        test "$cmin" -gt "$amax"
    say "file://: c's lock file removed: claimed again as worker $wa, ids above the lost claim's"

    # The same with etcd, on b and c.
    ETCD_DIR=$T/etcd
    mkdir "$ETCD_DIR"
    ep=$("$ETCDS" start "$ETCD_DIR" | tail -n 1)
    url="etcd://$ep/idmint-pg-test"
    stop_clean "$T/lb"
    stop_clean "$T/lc"
    conf "$T/lb" "$pre" "$node" "idmint.lease = '$url'"
    conf "$T/lc" "$pre" "$node" "idmint.lease = '$url'"
    start "$T/lb"
    start "$T/lc"
    lease_pair "etcd://" lb lc || return 0
    stop_clean "$T/lb"
    stop_clean "$T/lc"
    "$ETCDS" stop "$ETCD_DIR"
    ETCD_DIR=
}

# ---------------------------------------------------------- e. keeper killed

scenario_keeper() {
    local port=$REGRESS_PORT dir=$T/regress pm k1 k2 max ig waited min e
    echo "e. keeper killed:"
    sql "$port" "CREATE EXTENSION IF NOT EXISTS idmint; CREATE SEQUENCE IF NOT EXISTS keeper_seq" \
        >/dev/null 2>&1
    max=$(sql "$port" "SELECT max(idmint_next()) FROM generate_series(1, 10000)")
    ig=$(sql "$port" "SELECT max(idmint_instagram(1, 'keeper_seq')) FROM generate_series(1, 1000)")
    pm=$(head -n 1 "$dir/data/postmaster.pid")
    k1=$(pgrep -P "$pm" -f 'idmint keeper' || true)
    if [ -z "$k1" ]; then
        bad "keeper: no 'idmint keeper' process under postmaster $pm"
        return
    fi
    kill -9 "$k1"
    sleep 0.2
    if waited=$(wait_minting "$port"); then ok; else
        bad "keeper: no minting after kill -9: $(sql_error "$port" "SELECT idmint_next()")"
        return
    fi
    k2=$(pgrep -P "$pm" -f 'idmint keeper' || true)
    check "keeper: a new keeper ($k2, was $k1)" test -n "$k2" -a "$k2" != "$k1"
    check "keeper: the postmaster restarted every backend (server.log)" \
        grep -q 'terminating any other active server processes\|all server processes terminated' "$dir/server.log"
    min=$(sql "$port" "SELECT min(idmint_next()) FROM generate_series(1, 1000)")
    check "keeper: ids after the crash above the earlier ones ($min > $max)" test "$min" -gt "$max"
    e=$(wait_minting "$port" "SELECT idmint_instagram(1, 'keeper_seq')") || e=never
    min=$(sql "$port" "SELECT min(idmint_instagram(1, 'keeper_seq')) FROM generate_series(1, 1000)")
    check "keeper: Instagram ids after the crash above the earlier ones ($min > $ig)" test "$min" -gt "$ig"
    say "kill -9 of keeper $k1: all backends restarted, minting again after $waited ms (instagram: $e ms) under keeper $k2, ids above the earlier ones"
}

# ---------------------------------------------------------- f. frozen clock

scenario_frozen() {
    local dir port frozen_ms want e r n nd first_err ahead next_ms
    echo "f. frozen clock, Instagram's function and ours:"
    IDM_PG_FAKETIME=+0 new_server frozen "shared_preload_libraries = 'idmint'" \
        "idmint.node = 'datacenter=1,worker=7'"
    dir=$T/frozen
    port=$PORT
    # Instagram's function as published (insta5.next_id()), the one copy.
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres \
        -f "$ROOT/pg/sql/include/instagram_published.sql" >/dev/null
    sql "$port" "CREATE EXTENSION idmint;
        CREATE SEQUENCE our_seq;
        CREATE TABLE calls (i int PRIMARY KEY, ours bigint, theirs bigint, err text)"
    # libfaketime: an absolute time (no '+', '-' or '@') stands still.
    "$PGS" faketime "$dir" "2026-01-01 00:00:00"
    frozen_ms=$(sql "$port" "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)")
    sleep 0.05
    r=$(sql "$port" "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)")
    check "frozen: the server's clock stands still ($frozen_ms, 50 ms later $r)" \
        test "$r" = "$frozen_ms"
    sql "$port" "DO \$\$
        DECLARE
            o bigint;
            e text;
        BEGIN
            FOR i IN 1..11270 LOOP
                e := NULL;
                BEGIN
                    o := idmint_instagram(5, 'our_seq');
                EXCEPTION WHEN OTHERS THEN
                    o := NULL;
                    e := SQLSTATE || ': ' || SQLERRM;
                END;
                INSERT INTO calls VALUES (i, o, insta5.next_id(), e);
            END LOOP;
        END \$\$"
    "$PGS" faketime "$dir" +0
    want="((($frozen_ms - 1314220021721) << 23) | (5 << 10) | (i % 1024))"
    r=$(sql "$port" "SELECT count(*) FILTER (WHERE ours = theirs),
                            count(*) FILTER (WHERE theirs = $want)
                     FROM calls WHERE i <= 1024")
    check "frozen: the first 1,024 agree bit for bit, with the formula too ($r)" test "$r" = "1024|1024"
    IFS='|' read -r r n <<<"$(sql "$port" "SELECT c.theirs, c.theirs = f.theirs
        FROM calls AS c, calls AS f WHERE c.i = 1025 AND f.i = 1")"
    check "frozen: Instagram's 1,025th id repeats its 1st ($r, $n)" test "$n" = t
    say "frozen at $(sql "$port" "SELECT 'epoch'::timestamptz + $frozen_ms * interval '1 ms'"): ids 1 to 1,024 the same bit for bit; Instagram's 1,025th, $r, is its 1st again"
    r=$(sql "$port" "SELECT count(DISTINCT theirs), count(*) FILTER (WHERE i <= 2048) FROM calls
                     WHERE i <= 2048")
    say "Instagram's function: ${r%%|*} distinct ids in ${r#*|} calls"
    r=$(sql "$port" "SELECT count(ours), count(DISTINCT ours), min(i) FILTER (WHERE ours IS NULL),
                            max((ours >> 23) + 1314220021721) - $frozen_ms,
                            count(*) FILTER (WHERE i = 1025 AND ours = $want + (1::bigint << 23))
                     FROM calls")
    IFS='|' read -r n nd first_err ahead next_ms <<<"$r"
    check "frozen: ours are all distinct ($nd of $n)" test "$n" -eq "$nd"
    check "frozen: our 1,025th takes its residue's next millisecond" test "$next_ms" -eq 1
    check "frozen: ours mint 11 ms of 1,024 (up to idmint.max_drift_ms ahead), then refuse: $n minted, first refusal at call $first_err, $ahead ms ahead" \
        test "$n" -eq 11264 -a "$first_err" = 11265 -a "$ahead" -eq 10
    e=$(sql "$port" "SELECT err FROM calls WHERE i = 11265")
    check "frozen: the refusal is 54000, a burst the clock did not catch up with [$e]" \
        err_is "$e" 54000 "more than 1,024 ids a millisecond"
    r=$(sql "$port" "SELECT count(*) FROM calls WHERE i > 11264 AND ours IS NOT NULL")
    check "frozen: no id after the first refusal ($r)" test "$r" -eq 0
    say "ours: $nd distinct ids, the 1,025th on the next millisecond, up to $ahead ms ahead of the clock; call $first_err: $e"

    # Past 2046-06-27 17:00:49.496 UTC an Instagram id needs the sign bit:
    # refused (54000, the time field run out), never negative.
    sql "$port" "CREATE SEQUENCE late_seq"
    "$PGS" faketime "$dir" "2046-06-27 17:00:49"
    e=$(sql_error "$port" "SELECT idmint_instagram(5, 'late_seq')")
    check "2046-06-27 17:00:49: the last second of Instagram ids gives a positive id [$e]" \
        positive "$e"
    "$PGS" faketime "$dir" "2046-06-27 17:00:50"
    e=$(sql_error "$port" "SELECT idmint_instagram(5, 'late_seq')")
    check "2046-06-27 17:00:50: idmint_instagram() refuses with 54000, no negative id [$e]" \
        starts_with "$e" "54000:"
    say "frozen at 2046-06-27 17:00:50 (past the sign bit): $e"
    "$PGS" faketime "$dir" +0
    stop_crash "$dir"
}

# ------------------------------------------------------------------- main

T0=$(now_ms)
if installed; then
    regress_server
    for s in ${IDM_PG_ONLY:-regress pgbench clock settings lease keeper frozen}; do
        t=$(now_ms)
        "scenario_$s"
        say "($s: $(($(now_ms) - t)) ms)"
    done
fi
echo "total: $(($(now_ms) - T0)) ms"
trap - ERR
finish
