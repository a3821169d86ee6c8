# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154 # me, stand_ins: set by the sourcing script
#
# What functions.sh and btree.sh share: one throwaway PostgreSQL server
# (scripts/pg-test-server.sh, loopback only, in a temporary directory that a
# trap stops and removes, also on failure), set up for the idmint extension
# or, with --stand-ins, for SQL stand-ins of its functions.
#
# Not a command: each script sets `me` (its name, for messages) and
# `stand_ins` (1 with --stand-ins) and sources it, then calls
#   pgb_start [CONF_LINE...]   start the server, check the extension is
#                              installed (unless stand_ins), add CONF_LINEs
#                              and idmint's settings to postgresql.conf,
#                              restart, CREATE EXTENSION; sets pgb_port
#   pgb_sql ARGS...            psql on it, stopping at the first error
#   pgb_val SQL                one value, unaligned
#   pgb_restart                restart the server (its caches go cold)
#   pgb_stop                   stop and remove it (the EXIT trap does it
#                              anyway); pgb_start may then start another
# and may keep files of its own in $pgb_work (a temporary directory of the
# client's, removed by the same trap).

pgb_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pgb_server=$pgb_root/scripts/pg-test-server.sh
pgb_dir=""
pgb_port=""
pgb_work=""

pgb_die() {
    echo "$me: $*" >&2
    exit 1
}

# The client must talk to our server only, whatever the environment says.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
    PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGTZ PGCLIENTENCODING
export PGCONNECT_TIMEOUT=10 LC_ALL=C

pgb_stop() {
    if [ -n "$pgb_dir" ]; then
        bash "$pgb_server" stop "$pgb_dir"
        rm -rf "$pgb_dir"
        pgb_dir=""
    fi
}

pgb_cleanup() {
    pgb_stop
    [ -z "$pgb_work" ] || rm -rf "$pgb_work"
}

pgb_sql() {
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgb_port" -U postgres -d postgres "$@"
}

pgb_val() {
    pgb_sql -A -t -c "$1"
}

pgb_restart() {
    pgb_port=$(bash "$pgb_server" restart "$pgb_dir") || pgb_die "the server did not restart"
}

# pgb_has_extension: the server's extension directory holds idmint.control.
# Asked of the server itself, so that it is the PostgreSQL the script runs.
pgb_has_extension() {
    [ "$(pgb_val "SELECT count(*) FROM pg_available_extensions WHERE name = 'idmint'")" = 1 ]
}

pgb_start() {
    command -v psql >/dev/null 2>&1 || pgb_die "psql is not installed (Debian: postgresql-client)"
    trap pgb_cleanup EXIT
    [ -n "$pgb_work" ] || pgb_work=$(mktemp -d) || pgb_die "cannot make a temporary directory"
    # The server's own directory is apart: as root it is handed to the
    # postgres user.
    pgb_dir=$(mktemp -d) || pgb_die "cannot make a temporary directory"
    trap 'exit 130' INT TERM HUP
    pgb_port=$(bash "$pgb_server" start "$pgb_dir") || pgb_die "the PostgreSQL server did not start"
    if [ "$stand_ins" = 0 ] && ! pgb_has_extension; then
        pgb_die "the idmint extension is not installed in this PostgreSQL (no idmint.control in" \
            "its extension directory, $(pgb_val "SELECT setting FROM pg_config WHERE name = 'SHAREDIR'")/extension):" \
            "build and install it with 'make -C pg install' (as root); --stand-ins runs SQL" \
            "stand-ins instead, for developing this script only"
    fi
    {
        echo
        echo "# $me"
        local line
        for line in "$@"; do
            printf '%s\n' "$line"
        done
        if [ "$stand_ins" = 0 ]; then
            echo "shared_preload_libraries = 'idmint'"
            echo "idmint.node = 'datacenter=1,worker=1'"
        fi
    } >>"$pgb_dir/data/postgresql.conf" || pgb_die "cannot write the server's postgresql.conf"
    pgb_restart
    if [ "$stand_ins" = 0 ]; then
        pgb_sql -c "CREATE EXTENSION idmint" || pgb_die "CREATE EXTENSION idmint failed"
    fi
}
