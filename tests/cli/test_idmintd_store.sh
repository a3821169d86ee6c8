#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmintd and its ticket store (issue 13), over loopback sockets:
#   - store-timeout: --check-config shows it (5000 by default, the value
#     given otherwise); a value out of 1..3600000 is refused by
#     --check-config and by a start alike, exit 2 with one stderr line
#     naming where it came from, the key and the value;
#   - the floors directory: a start makes DATA-DIR/floors (mode 0700); each
#     sequence in use keeps how far the store has handed it out in
#     floors/NAME.floor, so a restart on the same store goes on, and a
#     restart on the store restored from a copy taken before those blocks
#     is refused for that sequence (500, nothing handed out) while other
#     sequences and kinds are served; a file where floors should be stops
#     the start with a message naming it.
# Nothing here waits for a time to pass: every step is a request answered
# or a process started or stopped.
#
# Usage: bash test_idmintd_store.sh /path/to/build/idmint (idmintd is its
# sibling). Needs curl and python3. Ends with one line "N passed, N
# failed"; exits non-zero if any check failed.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
IDMD_NEEDS="timeout stat"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"
cd "$T" || exit 1

# ids_are WANT: the last body is {"ids":[...]} with exactly these ids
# (space-separated).
ids_are() {
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if " ".join(j["ids"]) == sys.argv[2] else 1)
' "$T/body" "$1" 2>/dev/null
}

# ================================================= 1. store-timeout

"$D" --check-config --data-dir "$T/cc" >"$T/out" 2>"$T/err"
RC=$?
check "--check-config: exit 0 and store-timeout = 5000 (the default); $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -qx "store-timeout = 5000" "$T/out"'
IDMINT_STORE_TIMEOUT=250 "$D" --check-config --data-dir "$T/cc" >"$T/out" 2>"$T/err"
RC=$?
check "IDMINT_STORE_TIMEOUT=250 --check-config: store-timeout = 250; $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -qx "store-timeout = 250" "$T/out"'
for bad_value in 0 3600001 5s -1; do
    for mode in check start; do
        extra=()
        [ "$mode" = check ] && extra=(--check-config)
        timeout -k 5 20 "$D" --data-dir "$T/cc" --listen 127.0.0.1:0 "${extra[@]}" \
            --store-timeout "$bad_value" >"$T/out" 2>"$T/err"
        RC=$?
        check "--store-timeout $bad_value ($mode): exit 2, one stderr line naming the flag, key and value; $(show)" \
            eval '[ "$RC" -eq 2 ] && [ ! -s "$T/out" ] && one_err_line &&
                grep -qF -- "--store-timeout: store-timeout '"'$bad_value'"'" "$T/err"'
    done
done

# ================================================= 2. the floors directory

DA="$T/a"
mkdir -p "$DA" "$T/backup"
run seq create orders --store "sqlite://$DA/segments.db"
check "seq create orders: $(show)" test "$RC" -eq 0
run seq create other --store "sqlite://$DA/segments.db"
check "seq create other: $(show)" test "$RC" -eq 0
# The store as it is now: no block taken yet (a backup restored later).
cp -p "$DA"/segments.db* "$T/backup/"

start_d a --data-dir "$DA" || finish
check "a start makes DATA-DIR/floors, mode 0700 (got $(stat -c %a "$DA/floors" 2>&1))" \
    eval '[ -d "$DA/floors" ] && [ "$(stat -c %a "$DA/floors")" = 700 ]'
get "$PORT" '/v1/segment/orders?count=3'
check "/v1/segment/orders?count=3: want 1 2 3; got $CODE [$(body_short)]" \
    eval '[ "$CODE" = 200 ] && ids_are "1 2 3"'
check "the sequence's floor is kept in floors/orders.floor (floors: $(cd "$DA/floors" && echo ./*))" \
    test -f "$DA/floors/orders.floor" -a -s "$DA/floors/orders.floor"
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# A restart on the same store goes on above what was handed out.
start_d a2 --data-dir "$DA" || finish
get "$PORT" /api/segment/get/orders
check "a restart on the same store: orders goes on above 3 (got $CODE [$(body_short)])" \
    eval '[ "$CODE" = 200 ] && [ "$(cat "$T/body")" -gt 3 ]'
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# The store restored from the copy taken before any block: its counter went
# back below what this data directory saw it hand out.
rm -f "$DA"/segments.db*
cp -p "$T/backup"/segments.db* "$DA/"
start_d a3 --data-dir "$DA" || finish
get "$PORT" '/v1/segment/orders?count=3'
check "a rewound store: orders is 500, refused, not ids handed out again (got $CODE [$(body_short)])" \
    eval '[ "$CODE" = 500 ] && grep -q "sequence orders" "$T/body" && grep -q "below" "$T/body"'
get "$PORT" /api/segment/get/orders
check "a rewound store: orders is still refused (got $CODE [$(body_short)])" test "$CODE" = 500
get "$PORT" '/v1/segment/other?count=2'
check "a rewound store: another sequence, never handed out here, is served (got $CODE [$(body_short)])" \
    eval '[ "$CODE" = 200 ] && ids_are "1 2"'
get "$PORT" /v1/snowflake
check "a rewound store: Snowflake ids are served (got $CODE)" test "$CODE" = 200
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# A file where the floors directory goes: the start fails, naming it.
DF="$T/f"
mkdir -p "$DF"
: >"$DF/floors"
timeout -k 5 20 "$D" --data-dir "$DF" --listen 127.0.0.1:0 >"$T/out" 2>"$T/err"
RC=$?
check "a file at DATA-DIR/floors: the start fails (exit 1) naming it; $(show)" \
    eval '[ "$RC" -eq 1 ] && grep -qF "$DF/floors" "$T/err" && grep -q "not a directory" "$T/err"'

finish
