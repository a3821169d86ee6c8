#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Several ticket stores as one idmintd setting, Flickr style, and the time
# limit on every PostgreSQL store call of the CLI, over loopback sockets and a
# real PostgreSQL server this script starts (scripts/pg-test-server.sh):
#   - the store key takes up to 16 URLs separated by white space, store k of n
#     in the order given: --check-config shows them masked, one comment line
#     "store k of n (ids = k mod n)" each; a URL given twice, 17 stores, an
#     unknown scheme or a relative sqlite:// path among them is refused (exit
#     2, one line naming the key and which store); a password never reaches
#     the log, --check-config or ps (every URL of the value masked);
#   - two SQLite files: ids of both parities handed out, none twice; one file
#     listed twice under two spellings is refused at start (the same
#     database: exit 1, naming both);
#   - SQLite + PostgreSQL (fault rows P10, one ticket server down, and P8, a
#     store down while blocks drain): both parities; the PostgreSQL server stopped, the
#     SQLite store serves on (even ids), /healthz stays 200 with a warning
#     naming store 1 of 2, /metrics says idmint_store_up 0 for it; restarted
#     while PostgreSQL is still down, idmintd starts and serves from SQLite
#     (the store opened late, the floor file FLOORS/NAME@2.floor standing in
#     for the floors the down store keeps: P9's guard); PostgreSQL back, odd ids come
#     again; no id twice in all of it;
#   - `idmint seq` against a frozen PostgreSQL server (kill -STOP): fails
#     within --store-timeout (and within the library's 5000 ms by default)
#     with "no answer within N ms", never hangs; a frozen store first in the
#     list is passed over within the bound and the next store answers.
# Nothing here measures how long anything took: a hang is caught by a
# generous timeout(1), and the bound is what the error message says.
#
# Usage: bash test_idmintd_stores.sh /path/to/build/idmint (idmintd is its
# sibling). Ends with one line "N passed, N failed"; exits non-zero if any
# check failed.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
IDMD_NEEDS="timeout psql"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"
cd "$T" || exit 1
SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/pg-test-server.sh"
PGDIR=$(mktemp -d) || exit 1
cleanup_all() {
    [ -n "${PGPID:-}" ] && kill -CONT "$PGPID" 2>/dev/null
    bash "$SERVER" stop "$PGDIR" >/dev/null 2>&1
    rm -rf "$PGDIR"
    cleanup
}
trap cleanup_all EXIT

# ids: every id of the last body ({"ids":[...]} or a bare number), one a line.
ids() {
    python3 -c '
import json, sys
t = open(sys.argv[1]).read()
try:
    for i in json.loads(t)["ids"]:
        print(i)
except ValueError:
    print(t.strip())
' "$T/body" 2>/dev/null
}
# take PORT NAME COUNT: one request for COUNT ids of NAME; the ids are added
# to $T/all.ids and kept in $T/last.ids. CODE is the answer's status.
take() {
    get "$1" "/v1/segment/$2?count=$3"
    : >"$T/last.ids"
    [ "$CODE" = 200 ] && ids >"$T/last.ids" && cat "$T/last.ids" >>"$T/all.ids"
}
odd_in() { grep -q '[13579]$' "$1"; }
even_in() { grep -q '[02468]$' "$1"; }
no_dupes() { [ -z "$(sort "$T/all.ids" | uniq -d | head -n 3)" ]; }
# metric PORT LINE-PREFIX: the value of the /metrics line starting so.
metric() {
    get "$1" /metrics
    sed -n "s|^$2[^ ]* ||p" "$T/body" | head -n 1
}

# ================================================= 1. the setting

E="sqlite://$T/even.db"
O="sqlite://$T/odd.db"
"$D" --check-config --data-dir "$T/cc" --store "$E  postgres://u:s3cret@127.0.0.1:1/db" \
    >"$T/out" 2>"$T/err"
RC=$?
check "--check-config with two stores: exit 0, each shown masked, one 'store k of 2' line each; $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -qxF "store = $E  postgres://u:***@127.0.0.1:1/db" "$T/out" &&
        grep -qxF "# store 0 of 2 (ids = 0 mod 2): $E" "$T/out" &&
        grep -qxF "# store 1 of 2 (ids = 1 mod 2): postgres://u:***@127.0.0.1:1/db" "$T/out" &&
        ! grep -q s3cret "$T/out" "$T/err"'
IDMINT_STORE="$E $O" "$D" --check-config --data-dir "$T/cc" >"$T/out" 2>"$T/err"
RC=$?
check "IDMINT_STORE with two stores: --check-config shows them; $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -qxF "store = $E $O" "$T/out"'

# refused VALUE WANT...: --check-config and a start refuse store VALUE: exit
# 2, one stderr line naming --store and holding each WANT, the password never.
refused() {
    local value=$1 mode
    shift
    for mode in check start; do
        local extra=() w ok=1
        [ "$mode" = check ] && extra=(--check-config)
        timeout -k 5 30 "$D" --data-dir "$T/cc" --listen 127.0.0.1:0 "${extra[@]}" \
            --store "$value" >"$T/out" 2>"$T/err"
        RC=$?
        [ "$RC" -eq 2 ] && [ ! -s "$T/out" ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
            grep -qF -- "--store: store '" "$T/err" && ! grep -q s3cret "$T/err" || ok=0
        for w in "$@"; do grep -qF -- "$w" "$T/err" || ok=0; done
        check "store '${value:0:60}...' ($mode): exit 2, one line with: $*; $(show)" test "$ok" = 1
    done
}
refused "$E $O $E" "stores 1 and 3 of 3 are the same URL"
many=""
for i in $(seq 1 17); do many="$many sqlite://$T/s$i.db"; done
refused "$many" "more than 16 stores"
refused "$E foo://x" "store 2 of 2 (foo://x)" "unknown scheme"
refused "$E sqlite://rel/x.db" "store 2 of 2" "absolute path"
refused "$E postgres://u:s3cret@h/db nourl" "store 3 of 3 is not a URL"

# A password in the second URL: not in ps, not in the log (that store does
# not answer: the server starts on the first).
start_d sec --data-dir "$T/dsec" --store "$E postgres://u:s3cret@127.0.0.1:1/db" \
    --store-timeout 500 || finish
check "a running idmintd: the second store's password is not in ps ($(tr '\0' ' ' <"/proc/$DPID/cmdline"))" \
    eval '! tr "\0" " " <"/proc/$DPID/cmdline" | grep -q s3cret &&
        tr "\0" " " <"/proc/$DPID/cmdline" | grep -qF "postgres://u:***@"'
check "nor in the log, which names the store that does not answer" \
    eval '! grep -q s3cret "$T/sec.log" &&
        grep -qF "store 1 of 2: postgres://u:***@127.0.0.1:1/db: not answering now" "$T/sec.log"'
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
# A password in the first URL and in the second.
start_d sec2 --data-dir "$T/dsec2" --store-timeout 500 \
    --store "postgres://v:p4ss@127.0.0.1:1/db postgres://u:s3cret@127.0.0.1:1/db $E" || finish
check "passwords in the first two URLs: neither is in ps nor in the log ($(tr '\0' ' ' <"/proc/$DPID/cmdline"))" \
    eval '! tr "\0" " " <"/proc/$DPID/cmdline" | grep -Eq "s3cret|p4ss" &&
        ! grep -Eq "s3cret|p4ss" "$T/sec2.log"'
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0

# ================================================= 2. two SQLite files

run seq create o --store "$E" --store "$O"
check "seq create o over two SQLite stores: $(show)" test "$RC" -eq 0
: >"$T/all.ids"
start_d s2 --data-dir "$T/d2" --store "$E $O" || finish
check "the log names store 0 of 2 and store 1 of 2" \
    eval 'grep -qF "store 0 of 2 (ids = 0 mod 2): $E" "$T/s2.log" &&
        grep -qF "store 1 of 2 (ids = 1 mod 2): $O" "$T/s2.log"'
for i in $(seq 1 12); do take "$PORT" o 1000; done
for i in $(seq 1 5); do
    get "$PORT" /api/segment/get/o
    [ "$CODE" = 200 ] && ids >>"$T/all.ids"
done
check "two SQLite stores: ids of both parities ($(wc -l <"$T/all.ids") ids)" \
    eval 'odd_in "$T/all.ids" && even_in "$T/all.ids"'
check "two SQLite stores: no id twice" no_dupes
check "two SQLite stores: the floor file is floors/o@2.floor" test -s "$T/d2/floors/o@2.floor"
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0

timeout -k 5 30 "$D" --data-dir "$T/d2" --listen 127.0.0.1:0 --store "$E sqlite://$T/./even.db" \
    >"$T/out" 2>"$T/err"
RC=$?
check "one SQLite file under two spellings: the start fails (exit 1) naming both as the same database; $(show)" \
    eval '[ "$RC" -eq 1 ] && grep -q "stores 0 and 1 of 2 .* are the same database" "$T/err"'

# ================================================= 3. SQLite + PostgreSQL

pgport=$(bash "$SERVER" start "$PGDIR") || { bad "PostgreSQL did not start"; finish; }
P="postgres://postgres@127.0.0.1:$pgport/postgres"
S="sqlite://$T/mixed.db"
run seq create m --store "$S" --store "$P"
check "seq create m over SQLite + PostgreSQL: $(show)" test "$RC" -eq 0
: >"$T/all.ids"
DM="$T/dm"
MIXED=(--data-dir "$DM" --store "$S $P" --store-timeout 1000 --segment-wait 3000)
start_d m1 "${MIXED[@]}" || finish
both() {
    take "$PORT" m 1000
    odd_in "$T/all.ids" && even_in "$T/all.ids"
}
check "SQLite + PostgreSQL: ids of both parities" wait_until 30 both
check "SQLite + PostgreSQL: /metrics says both stores up" \
    eval '[ "$(metric "$PORT" "idmint_store_up{store=\"0\"")" = 1 ] &&
        [ "$(metric "$PORT" "idmint_store_up{store=\"1\"")" = 1 ]'

# P10 (one ticket server down) and P8: PostgreSQL stopped, the SQLite store
# serves on.
bash "$SERVER" stop "$PGDIR" >/dev/null 2>&1
: >"$T/after.ids"
pg_seen_down() {
    take "$PORT" m 1000
    [ "$CODE" = 200 ] && cat "$T/last.ids" >>"$T/after.ids"
    [ "$(metric "$PORT" "idmint_store_up{store=\"1\"")" = 0 ]
}
check "P10: PostgreSQL stopped: /metrics says idmint_store_up 0 for store 1" wait_until 60 pg_seen_down
for i in $(seq 1 5); do
    take "$PORT" m 1000
    check "P10/P8: PostgreSQL stopped: request $i is served (got $CODE [$(body_short)])" test "$CODE" = 200
    cat "$T/last.ids" >>"$T/after.ids"
done
check "P10: PostgreSQL stopped: the ids served since are even (SQLite's): $(grep -m 3 '[13579]$' "$T/after.ids" | tr '\n' ' ')" \
    eval '[ -s "$T/after.ids" ] && ! grep -q "[13579]$" <(tail -n 5000 "$T/after.ids")'
get "$PORT" /healthz
check "P10: PostgreSQL stopped: /healthz 200 warning of store 1 of 2, down (got $CODE [$(body_short)])" \
    eval '[ "$CODE" = 200 ] && grep -q "store 1 of 2 (postgres://postgres@127.0.0.1:$pgport/postgres): down" "$T/body"'
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0

# Restarted while PostgreSQL is still down: it starts, and SQLite serves.
start_d m2 "${MIXED[@]}" || finish
check "P10/P9: restarted with PostgreSQL down: the log says store 1 of 2 is not answering" \
    grep -q "store 1 of 2: postgres://.*: not answering now" "$T/m2.log"
take "$PORT" m 1000
check "P10/P9: restarted with PostgreSQL down: served from SQLite (got $CODE [$(body_short)])" \
    eval '[ "$CODE" = 200 ] && even_in "$T/last.ids" && ! odd_in "$T/last.ids"'
# PostgreSQL back: odd ids again.
bash "$SERVER" restart "$PGDIR" >/dev/null 2>&1 || bad "PostgreSQL did not restart"
odd_again() {
    take "$PORT" m 1000
    odd_in "$T/last.ids"
}
check "P10: PostgreSQL back: odd ids again" wait_until 60 odd_again
check "P10: SQLite + PostgreSQL, through the outage and a restart: no id twice ($(wc -l <"$T/all.ids") ids)" \
    no_dupes
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0

# ================================================= 4. the CLI and a frozen server

run seq create q --store "$P" --store "$S"
check "seq create q (PostgreSQL first): $(show)" test "$RC" -eq 0
PGPID=$(head -n 1 "$(find "$PGDIR" -name postmaster.pid | head -n 1)" 2>/dev/null)
check "the PostgreSQL server's pid is known ($PGPID)" test -n "$PGPID"
kill -STOP "$PGPID"
timeout -k 5 60 "$BIN" seq next q --store "$P" --store-timeout 300 >"$T/out" 2>"$T/err"
RC=$?
check "seq next, PostgreSQL frozen, --store-timeout 300: exit 1, 'no answer within 300 ms'; $(show)" \
    eval '[ "$RC" -eq 1 ] && [ ! -s "$T/out" ] && grep -q "no answer within 300 ms" "$T/err"'
timeout -k 5 60 "$BIN" seq next q --store "$P" --store "$S" --store-timeout 300 >"$T/out" 2>"$T/err"
RC=$?
check "seq next, the frozen store first: passed over within 300 ms, the next store's id (odd); $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -q "no answer within 300 ms.*; trying the next store" "$T/err" &&
        grep -qx "[0-9]*[13579]" "$T/out"'
timeout -k 5 60 "$BIN" seq list --store "$P" --store-timeout 300 >"$T/out" 2>"$T/err"
RC=$?
check "seq list, PostgreSQL frozen, --store-timeout 300: exit 1, 'no answer within 300 ms'; $(show)" \
    eval '[ "$RC" -eq 1 ] && grep -q "no answer within 300 ms" "$T/err"'
timeout -k 5 60 "$BIN" seq next q --store "$P" >"$T/out" 2>"$T/err"
RC=$?
check "seq next, PostgreSQL frozen, no --store-timeout: the library's 5000 ms bound it; $(show)" \
    eval '[ "$RC" -eq 1 ] && grep -q "no answer within 5000 ms" "$T/err"'
kill -CONT "$PGPID"
PGPID=
for bad_ms in 0 3600001 5s; do
    run seq next q --store "$P" --store-timeout "$bad_ms"
    check "--store-timeout $bad_ms: exit 2 naming it; $(show)" \
        eval '[ "$RC" -eq 2 ] && grep -qF "bad --store-timeout '"'$bad_ms'"'" "$T/err"'
done
expect_out_ok() { "$BIN" seq next q --store "$P" --store "$S" --store-timeout 2000 >"$T/out" 2>"$T/err"; }
expect_out_ok
check "PostgreSQL thawed: seq next q answers from it (even id); rc=$? $(cat "$T/out" "$T/err")" \
    grep -qx "[0-9]*[02468]" "$T/out"

finish
