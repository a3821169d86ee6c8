#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of `idmint seq` (named sequences in ticket stores): exact
# outputs of create / next / list on SQLite files and on a real PostgreSQL
# server this script starts (scripts/pg-test-server.sh) and stops; odd/even
# stores and failover; 20 concurrent `seq next` processes never sharing an
# id; and every bad input (exit 2, or 1 for a runtime failure, one stderr
# line naming the problem, nothing on stdout, no counter moved). `seq
# create` checks its whole list of stores before writing: one store listed
# twice, under any spelling (., a symbolic or hard link; PostgreSQL URLs in
# another order or form), or a sequence that one store has already, is
# refused and no store gets a row.
#
# Usage: bash test_seq.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any failed.

set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need psql timeout
SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/pg-test-server.sh"

PGDIR=$(mktemp -d) || exit 1
cleanup() {
    bash "$SERVER" stop "$PGDIR" >/dev/null 2>&1
    rm -rf "$PGDIR" "$T"
}
trap cleanup EXIT

A="sqlite://$T/a.db"
E="sqlite://$T/even.db"
O="sqlite://$T/odd.db"

# ------------------------------------------------------------- help, usage

run seq --help
check "seq --help prints the usage" test "$RC" -eq 0 -a ! -s "$T/err" \
    -a "$(head -n 1 "$T/out")" = "usage: idmint seq create NAME --store URL [--store URL...] [--start N]"
run --help
check "idmint --help lists seq" grep -Eq '^  seq ' "$T/out"
usage_exact "idmint: seq: missing subcommand: create, next or list (try 'idmint seq --help')" seq
usage_exact "idmint: seq: unknown subcommand 'frob': create, next or list" seq frob
usage_exact "idmint: seq next: missing NAME (try 'idmint seq --help')" seq next --store "$A"
usage_exact "idmint: seq next: missing --store URL (sqlite:///PATH/FILE.db or postgres://...)" seq next x
usage_exact "idmint: seq create: -n/--count does not apply here" seq create x --store "$A" -n 3
usage_exact "idmint: seq next: --start does not apply here" seq next x --store "$A" --start 3
usage_exact "idmint: seq list: unexpected argument 'x'" seq list x --store "$A"
usage_exact "idmint: seq list: give one --store to list" seq list --store "$A" --store "$E"
usage_exact "idmint: seq next: option '--store' needs a value" seq next x --store

# ------------------------------------------------------------- SQLite

run seq create orders --store "$A"
check "seq create: exit 0, silent" test "$RC" -eq 0 -a ! -s "$T/out" -a ! -s "$T/err"
expect_out $'1\n2\n3' seq next orders -n 3 --store "$A"
expect_out '4' seq next orders --store "$A"
expect_out $'5\n6' seq next orders --count=2 --store="$A"
expect_out 'name=orders next=7 k=0 n=1' seq list --store "$A"
fails_with 1 exact "idmint: seq create: cannot create the sequence: sequence orders exists already in $A" \
    seq create orders --store "$A"
expect_out 'name=orders next=7 k=0 n=1' seq list --store "$A"
run seq create big --store "$A" --start 1000
expect_out '1000' seq next big --store "$A"
expect_out $'{"name":"big","next":"1001","k":0,"n":1}\n{"name":"orders","next":"7","k":0,"n":1}' \
    seq list --store "$A" --json

# Bad input: one line, nothing printed, no counter moved.
fails_with 1 exact "idmint: seq next: cannot take ids: sequence nosuch does not exist in $A" \
    seq next nosuch --store "$A"
usage_exact "idmint: seq next: cannot take ids: sequence: name 'a b' has a character other than letters, digits, '_', '.' and '-' at byte 2" \
    seq next 'a b' --store "$A"
usage_exact "idmint: seq create: cannot create the sequence: sequence: the name is empty" seq create '' --store "$A"
long=$(printf 'x%.0s' $(seq 1 65))
usage_prefix "idmint: seq create: cannot create the sequence: sequence: name 'xxxxxxxxxxxxxxxxxxxx...' is longer than 64 bytes" \
    seq create "$long" --store "$A"
for bc in 0 10000001; do
    usage_exact "idmint: seq next: bad count '$bc': must be 1 to 10000000" seq next orders -n "$bc" --store "$A"
done
usage_prefix "idmint: seq next: bad count '-1': malformed text" seq next orders -n -1 --store "$A"
usage_exact "idmint: seq create: bad --start '4611686018427387904': must be 0 to 2^62-1" \
    seq create s2 --start 4611686018427387904 --store "$A"
usage_prefix "idmint: seq create: bad --start 'x': malformed text" seq create s2 --start x --store "$A"
usage_exact "idmint: seq next: cannot take ids: store: 'nourl' is not a URL (want sqlite:///path/file.db or postgres://...)" \
    seq next orders --store nourl
usage_exact "idmint: seq next: cannot take ids: store: unknown scheme in 'foo://x' (known: sqlite://, postgres://, postgresql://)" \
    seq next orders --store foo://x
usage_prefix "idmint: seq next: cannot take ids: store: 'sqlite://rel.db' needs an absolute path" \
    seq next orders --store sqlite://rel.db
expect_out $'name=big next=1001 k=0 n=1\nname=orders next=7 k=0 n=1' seq list --store "$A"
check "bad input created no sequence s2" test "$(grep -c s2 "$T/out")" -eq 0

# A counter at its end: refused, unchanged.
run seq create end --store "$A" --start 4611686018427387900
fails_with 1 prefix "idmint: seq next: cannot take ids: sequence end in $A: a block of 5 from 4611686018427387900 would pass 2^62" \
    seq next end -n 5 --store "$A"
expect_out $'4611686018427387900\n4611686018427387901\n4611686018427387902\n4611686018427387903' \
    seq next end -n 4 --store "$A"

# ------------------------------------------------------------- odd/even

run seq create oe --store "$E" --store "$O"
check "seq create on two stores" test "$RC" -eq 0 -a ! -s "$T/err"
expect_out $'2\n4\n6' seq next oe -n 3 --store "$E" --store "$O"
expect_out 'name=oe next=8 k=0 n=2' seq list --store "$E"
expect_out 'name=oe next=1 k=1 n=2' seq list --store "$O"
usage_exact "idmint: seq next: cannot take ids: sequence oe: store $O is store 1 of 2 for it, not 0 of 2: list the stores in the order they were created with (nothing taken)" \
    seq next oe --store "$O" --store "$E"
expect_out 'name=oe next=1 k=1 n=2' seq list --store "$O"
# The even store unreachable: the odd one answers, with a note.
run seq next oe -n 2 --store "sqlite://$T/nodir/even.db" --store "$O"
check "failover: the odd store answers when the even one is unreachable" \
    test "$RC" -eq 0 -a "$(cat "$T/out" | tr '\n' ' ')" = "1 3 " \
    -a "$(grep -c 'trying the next store' "$T/err")" -eq 1

# ------------------------------------------------------------- a bad list

# One store named twice: refused before any store is written.
D0="sqlite://$T/d0.db"
D1="sqlite://$T/d1.db"
run seq list --store "$D0" # creates the file, for the links
ln -s d0.db "$T/d0-sym.db"
ln "$T/d0.db" "$T/d0-hard.db"
mkdir "$T/sub"
for twin in "$D0" "sqlite://$T/./d0.db" "sqlite://$T/sub/../d0.db" "sqlite://$T//d0.db" \
    "sqlite://$T/d0-sym.db" "sqlite://$T/d0-hard.db"; do
    usage_exact "idmint: seq create: --store $D0 and --store $twin are the same store (stores 1 and 2 of 2): give each store once (nothing created)" \
        seq create dup --store "$D0" --store "$twin"
done
usage_exact "idmint: seq create: --store $D1 and --store sqlite://$T/./d1.db are the same store (stores 2 and 3 of 3): give each store once (nothing created)" \
    seq create dup --store "$D0" --store "$D1" --store "sqlite://$T/./d1.db"
for st in "$D0" "$D1"; do
    run seq list --store "$st"
    check "a refused list: no row in $st" test "$RC" -eq 0 -a ! -s "$T/out" -a ! -s "$T/err"
done
# The sequence in one of the stores already: refused before the others.
run seq create dup --store "$D1"
fails_with 1 exact "idmint: seq create: cannot create the sequence: sequence dup exists already in $D1 (as store 0 of 1; nothing created)" \
    seq create dup --store "$D0" --store "$D1"
run seq list --store "$D0"
check "the sequence in the second store: no row in the first" test "$RC" -eq 0 -a ! -s "$T/out"
expect_out 'name=dup next=1 k=0 n=1' seq list --store "$D1"
# Two files: created in both.
run seq create two --store "$D0" --store "sqlite://$T/sub/d2.db"
check "seq create on two different files" test "$RC" -eq 0 -a ! -s "$T/err"
expect_out 'name=two next=2 k=0 n=2' seq list --store "$D0"
expect_out 'name=two next=1 k=1 n=2' seq list --store "sqlite://$T/sub/d2.db"

# ------------------------------------------------------------- PostgreSQL

port=$(bash "$SERVER" start "$PGDIR") || { bad "PostgreSQL did not start"; finish; }
P="postgres://postgres@127.0.0.1:$port/postgres"
run seq create tickets --store "$P" --start 100
check "postgres: seq create" test "$RC" -eq 0 -a ! -s "$T/err"
expect_out $'100\n101' seq next tickets -n 2 --store "$P"
expect_out 'name=tickets next=102 k=0 n=1' seq list --store "postgresql://postgres@127.0.0.1:$port/postgres"
fails_with 1 prefix "idmint: seq create: cannot create the sequence: sequence tickets exists already in" \
    seq create tickets --store "$P"
# One database under two URLs (another form, parameters in another order):
# refused, no row; another database on the same server is another store.
P1="$P?sslmode=disable&application_name=one"
P2="postgresql://127.0.0.1:$port/postgres?application_name=two&user=postgres&sslmode=disable"
usage_exact "idmint: seq create: --store $P1 and --store $P2 are the same store (stores 1 and 2 of 2): give each store once (nothing created)" \
    seq create pgdup --store "$P1" --store "$P2"
usage_exact "idmint: seq create: --store $P and --store $P2 are the same store (stores 1 and 3 of 3): give each store once (nothing created)" \
    seq create pgdup --store "$P" --store "$D0" --store "$P2"
expect_out 'name=tickets next=102 k=0 n=1' seq list --store "$P"
run seq list --store "$D0"
check "a refused list with PostgreSQL: no row in the SQLite store" \
    test "$RC" -eq 0 -a "$(grep -c pgdup "$T/out")" -eq 0
psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "CREATE DATABASE other" >/dev/null 2>&1 ||
    bad "psql: cannot create database other"
run seq create pgtwo --store "$P" --store "postgres://postgres@127.0.0.1:$port/other"
check "seq create on two databases of one server" test "$RC" -eq 0 -a ! -s "$T/err"
expect_out 'name=pgtwo next=1 k=1 n=2' seq list --store "postgres://postgres@127.0.0.1:$port/other"
pids=()
for i in $(seq 1 20); do
    "$BIN" seq next tickets -n 100 --store "$P" >"$T/c.$i" 2>"$T/c.$i.err" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
check "postgres: 20 concurrent seq next -n 100 succeed" test "$rc" -eq 0
check "postgres: their 2000 ids are distinct and dense (102..2101)" \
    test "$(sort -n "$T"/c.[0-9]* | uniq | wc -l)" -eq 2000 -a "$(sort -n "$T"/c.[0-9]* | head -n 1)" -eq 102 \
    -a "$(sort -n "$T"/c.[0-9]* | tail -n 1)" -eq 2101
# The server stopped: the run fails, naming the store. Not timed; the 60 s
# bound only ends a run that hangs (timeout's status 124 then fails the
# check).
bash "$SERVER" stop "$PGDIR" >/dev/null 2>&1
timeout 60 "$BIN" seq next tickets --store "$P" >"$T/out" 2>"$T/err"
RC=$?
failed_with 1 prefix "idmint: seq next: cannot take ids: store $P: cannot connect:" \
    "an unreachable server: idmint seq next tickets --store $P"

finish
