#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A throwaway PostgreSQL server for idmint's tests: its cluster, socket and
# log live in one directory that the caller made and later removes, and it
# listens on a free port of 127.0.0.1 only, with trust authentication for the
# superuser "postgres". Nothing outside that directory is touched, and no
# system-wide cluster is needed or used.
#
#   pg-test-server.sh start DIR   initdb in DIR, start the server, print its
#                                 port on stdout (also kept in DIR/port)
#   pg-test-server.sh stop DIR    stop it at once (immediate mode); quiet and
#                                 successful when nothing is running. DIR
#                                 itself stays: the caller removes it.
#   pg-test-server.sh restart DIR start a stopped (or crashed) server again
#                                 on its cluster and port; prints the port
#   pg-test-server.sh port DIR    print the port of a started server
#   pg-test-server.sh faketime DIR OFFSET
#                                 move the clock of a server started with
#                                 IDM_PG_FAKETIME to OFFSET (libfaketime's
#                                 form: +60 is a minute ahead, +0 the true
#                                 time); it reads it at its next clock read
#
# With IDM_PG_DURABLE=1 in the environment, start makes a server that
# writes as a production one does (fsync and full_page_writes on), for
# benchmarks whose figures (WAL bytes, write times) depend on it; a restart
# keeps it so.
#
# With IDM_PG_FAKETIME=OFFSET in the environment, start runs the server
# under libfaketime (Debian's faketime package): its wall clock (now(),
# clock_timestamp()) is OFFSET from the true one, read from DIR/faketime
# (see the faketime command), its monotonic clock left alone. A restart
# keeps it so.
#
# Connect with: psql -X -h 127.0.0.1 -p PORT -U postgres -d postgres
#
# PostgreSQL refuses to run as root, so as root the server runs as the
# "postgres" user (runuser) and DIR is handed to that user; DIR's parent
# directories must let that user through (a mktemp -d under /tmp does).
# The binaries are taken from PG_BINDIR if set, else from the newest
# /usr/lib/postgresql/*/bin (Debian's layout), else from PATH.
#
# A typical test:
#   dir=$(mktemp -d)
#   trap 'scripts/pg-test-server.sh stop "$dir"; rm -rf "$dir"' EXIT
#   port=$(scripts/pg-test-server.sh start "$dir") || exit 1
set -uo pipefail

me=pg-test-server.sh
# shellcheck source-path=SCRIPTDIR source=test-server-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-server-lib.sh" || exit 1

find_bindir() {
    if [ -n "${PG_BINDIR:-}" ]; then
        [ -x "$PG_BINDIR/pg_ctl" ] || die "PG_BINDIR='$PG_BINDIR' has no pg_ctl"
        printf '%s\n' "$PG_BINDIR"
        return
    fi
    local best="" bestv=-1 d v
    for d in /usr/lib/postgresql/*/bin; do
        [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] || continue
        v=${d#/usr/lib/postgresql/}
        v=${v%/bin}
        case $v in *[!0-9]*) continue ;; esac
        if [ "$v" -gt "$bestv" ]; then
            best=$d
            bestv=$v
        fi
    done
    if [ -n "$best" ]; then
        printf '%s\n' "$best"
        return
    fi
    if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v pg_ctl)"
        return
    fi
    die "no PostgreSQL server binaries (initdb, pg_ctl) found; install postgresql"
}

# find_faketime: the path of libfaketime.so.1.
find_faketime() {
    local f
    for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
        /usr/local/lib/faketime/libfaketime.so.1; do
        [ -r "$f" ] && { printf '%s\n' "$f"; return 0; }
    done
    die "IDM_PG_FAKETIME is set but libfaketime.so.1 is not installed (Debian: faketime)"
}

# as_owner CMD...: run CMD as the user that owns the cluster.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# pg_start BINDIR DIR PORT: start the cluster in DIR on PORT and wait.
# fsync is off (these servers never outlive the machine's uptime, and the OS
# keeps what was written), but synchronous_commit stays on: a commit
# reported is in the WAL the server wrote, so stopping the server in
# immediate mode (a crash) loses none of them, as the ticket-store tests
# need (a block taken must never be handed out again after a restart).
pg_start() {
    local pre=()
    if [ -f "$2/faketime" ]; then
        pre=(env "LD_PRELOAD=$(find_faketime)" "FAKETIME_TIMESTAMP_FILE=$2/faketime"
            FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
    fi
    local writes="-c fsync=off -c full_page_writes=off"
    [ ! -f "$2/durable" ] || writes="-c fsync=on -c full_page_writes=on"
    as_owner ${pre[@]+"${pre[@]}"} "$1/pg_ctl" -D "$2/data" -l "$2/server.log" -w -t 60 \
        -o "-k $2/sock -h 127.0.0.1 -p $3 -c listen_addresses=127.0.0.1 $writes -c synchronous_commit=on" \
        start >"$2/pg_ctl.log" 2>&1
}

cmd_start() {
    local dir=$1 bin port
    [ -d "$dir" ] || die "start: '$dir' is not a directory"
    dir=$(cd "$dir" && pwd) || die "start: cannot enter '$dir'"
    case $dir in *[[:space:]]*) die "start: '$dir' holds white space, which the server's options cannot carry" ;; esac
    [ ! -e "$dir/data" ] || die "start: '$dir' already holds a cluster"
    bin=$(find_bindir) || exit 1

    mkdir -p "$dir/sock" || die "start: cannot create '$dir/sock'"
    if [ "${IDM_PG_DURABLE:-0}" = 1 ]; then
        : >"$dir/durable" || die "start: cannot write '$dir/durable'"
    fi
    if [ -n "${IDM_PG_FAKETIME:-}" ]; then
        find_faketime >/dev/null || exit 1
        printf '%s\n' "$IDM_PG_FAKETIME" >"$dir/faketime" || die "start: cannot write '$dir/faketime'"
    fi
    if [ "$(id -u)" -eq 0 ]; then
        getent passwd postgres >/dev/null ||
            die "start: running as root and there is no 'postgres' user to run the server as"
        chown -R postgres: "$dir" || die "start: cannot hand '$dir' to postgres"
        runuser -u postgres -- test -w "$dir" ||
            die "start: user postgres cannot write '$dir' (its parent directories must let it through)"
    fi

    if ! as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
        --locale=C --no-sync >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        die "start: initdb failed"
    fi

    # Pick a random port that nothing listens on; if another process takes it
    # before the server binds, starting fails and the next try takes another.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        port=$(random_port)
        port_busy "$port" && continue
        if pg_start "$bin" "$dir" "$port"; then
            printf '%s\n' "$port" >"$dir/port"
            printf '%s\n' "$port"
            return 0
        fi
        # A failed start may leave a server half up; make sure it is down.
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
        grep -q -i "could not bind\|address already in use" "$dir/server.log" 2>/dev/null || break
    done
    cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null
    die "start: the server did not start (see the log above)"
}

cmd_stop() {
    local dir=$1 bin pid
    [ -f "$dir/data/postmaster.pid" ] || return 0
    bin=$(find_bindir) || bin=""
    if [ -n "$bin" ] &&
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1; then
        return 0
    fi
    # pg_ctl is gone or failed: signal the postmaster named in its pid file.
    pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null)
    case $pid in '' | *[!0-9]*) return 0 ;; esac
    kill -QUIT "$pid" 2>/dev/null || return 0
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null
    return 0
}

cmd_restart() {
    local dir=$1 bin port
    [ -d "$dir/data" ] && [ -s "$dir/port" ] || die "restart: no cluster was started in '$1'"
    dir=$(cd "$dir" && pwd) || die "restart: cannot enter '$1'"
    [ ! -f "$dir/data/postmaster.pid" ] || cmd_stop "$dir"
    bin=$(find_bindir) || exit 1
    port=$(cat "$dir/port")
    if ! pg_start "$bin" "$dir" "$port"; then
        cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null
        die "restart: the server did not start on port $port"
    fi
    printf '%s\n' "$port"
}

cmd_port() {
    [ -s "$1/port" ] || die "port: no server was started in '$1'"
    cat "$1/port"
}

cmd_faketime() {
    [ -f "$1/faketime" ] || die "faketime: the server in '$1' was not started with IDM_PG_FAKETIME"
    # Written whole, then renamed: libfaketime never reads half a line.
    printf '%s\n' "$2" >"$1/faketime.new" && chmod 644 "$1/faketime.new" &&
        mv -f "$1/faketime.new" "$1/faketime" || die "faketime: cannot write '$1/faketime'"
}

case "${1:-}:${2:-}" in
start:?*) cmd_start "$2" ;;
stop:?*) cmd_stop "$2" ;;
restart:?*) cmd_restart "$2" ;;
port:?*) cmd_port "$2" ;;
faketime:?*) [ -n "${3:-}" ] || die "faketime: no OFFSET"; cmd_faketime "$2" "$3" ;;
*)
    echo "usage: $me start DIR | stop DIR | restart DIR | port DIR | faketime DIR OFFSET" >&2
    exit 2
    ;;
esac
