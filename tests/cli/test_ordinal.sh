#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Worker ids from the platform's ordinal (StatefulSet style), for the CLI and
# idmintd alike: a node value "ordinal" takes the trailing number of the host
# name (web-3 -> 3), "ordinal:VAR" the number in environment variable VAR.
# The host name is injected through IDM_TEST_HOSTNAME (documented as for
# tests), so nothing here depends on the machine's name or on privileges.
#   - the CLI: `idmint next --node worker=ordinal` mints ids that decode with
#     the ordinal as worker; ordinal:VAR likewise; a host name without a
#     trailing number, an unset or non-decimal variable, two ordinal fields,
#     and a number out of the field's range are refused (exit 2, one line);
#   - the lock: while one `idmint next` holds STATE-DIR/ordinal-worker-N.lock,
#     a second one with the same ordinal refuses at once, naming the file and
#     the holder's pid; another ordinal is not held up;
#   - idmintd: node worker=ordinal is resolved by --check-config too (a
#     comment line says from where, and that there is no lease), refused with
#     an explicit lease or lease-field for the same field; a server mints
#     with the ordinal as worker (ids decoded), /healthz says the worker; a
#     second idmintd on the same data-dir with the same ordinal refuses to
#     start (exit 1) naming the lock file and the first one's pid; a restart
#     mints above what the first minted (the state file under data-dir), also
#     right after a kill -9 under load (it waits for the clock to pass the
#     state file's mark).
#
# Usage: bash test_ordinal.sh /path/to/build/idmint (idmintd is its
# sibling). Ends with one line "N passed, N failed"; exits non-zero if any
# check failed.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
IDMD_NEEDS="timeout"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"
cd "$T" || exit 1
export IDMINT_STATE_DIR="$T/state"

# decoded_field FIELD: FIELD of the JSON id in $T/out (idmint next --format json).
decoded_field() {
    python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())[sys.argv[2]])' \
        "$T/out" "$1" 2>/dev/null
}
one_line_err() { [ "$(wc -l <"$T/err")" -eq 1 ]; }

# ================================================= 1. the CLI

IDM_TEST_HOSTNAME=web-3 run next --node datacenter=1 --node worker=ordinal --format json
check "host name web-3: worker=ordinal mints as worker 3; $(show)" \
    eval '[ "$RC" -eq 0 ] && [ "$(decoded_field worker)" = 3 ] && [ "$(decoded_field datacenter)" = 1 ]'
IDM_TEST_HOSTNAME=db-17.example.com run next --node datacenter=0 --node worker=ordinal --format json
check "host name db-17.example.com: its first label's number, 17; $(show)" \
    eval '[ "$RC" -eq 0 ] && [ "$(decoded_field worker)" = 17 ]'
POD_ORDINAL=12 run next --node datacenter=1 --node worker=ordinal:POD_ORDINAL --format json
check "POD_ORDINAL=12: worker=ordinal:POD_ORDINAL mints as worker 12; $(show)" \
    eval '[ "$RC" -eq 0 ] && [ "$(decoded_field worker)" = 12 ]'
ID=$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$T/out")
run decode "$ID"
check "idmint decode of that id says worker=12; $(show)" grep -q "worker=12" "$T/out"

# refused_cli WANT ARGS...: exit 2, one stderr line holding WANT, no output.
refused_cli() {
    local want=$1
    shift
    run "$@"
    check "idmint $* : exit 2, one line with '$want'; $(show)" \
        eval '[ "$RC" -eq 2 ] && [ ! -s "$T/out" ] && one_line_err && grep -qF -- "$want" "$T/err"'
}
IDM_TEST_HOSTNAME=web refused_cli "the host name 'web' (IDM_TEST_HOSTNAME, for tests) does not end in a decimal number" \
    next --node datacenter=1 --node worker=ordinal
unset POD_ORDINAL
refused_cli "the environment variable POD_ORDINAL is not set" \
    next --node datacenter=1 --node worker=ordinal:POD_ORDINAL
POD_ORDINAL=3x refused_cli "POD_ORDINAL='3x' is not a plain decimal number" \
    next --node datacenter=1 --node worker=ordinal:POD_ORDINAL
POD_ORDINAL=1 IDM_TEST_HOSTNAME=web-2 refused_cli "only one field may take the ordinal" \
    next --node datacenter=ordinal:POD_ORDINAL --node worker=ordinal
IDM_TEST_HOSTNAME=web-32 refused_cli "worker=32 exceeds 31" next --node datacenter=1 --node worker=ordinal

# The lock: a run that holds worker 5 (blocked writing to a pipe nobody
# reads yet) and a second with the same ordinal.
mkfifo "$T/fifo"
IDM_TEST_HOSTNAME=web-5 "$BIN" next --node datacenter=1 --node worker=ordinal -n 10000000 \
    >"$T/fifo" 2>"$T/holder.err" &
HOLDER=$!
PIDS+=("$HOLDER")
exec 7<"$T/fifo" # the holder runs (and blocks) once its output is open
held() { grep -q "pid $HOLDER " "$IDMINT_STATE_DIR/ordinal-worker-5.lock" 2>/dev/null; }
check "the first run holds state/ordinal-worker-5.lock, which names it" wait_until "$BOUND" held
IDM_TEST_HOSTNAME=web-5 run next --node datacenter=1 --node worker=ordinal
check "a second run with ordinal 5: exit 1 at once, naming the lock file and the holder's pid; $(show)" \
    eval '[ "$RC" -eq 1 ] && [ ! -s "$T/out" ] && one_line_err &&
        grep -qF "$IDMINT_STATE_DIR/ordinal-worker-5.lock is locked by another process (pid $HOLDER idmint next)" "$T/err"'
# One host, another state directory: the host-wide lock (an abstract socket).
IDMINT_STATE_DIR="$T/other-state" IDM_TEST_HOSTNAME=web-5 run next --node datacenter=1 --node worker=ordinal
check "a run with ordinal 5 from another state directory: exit 1, naming the host lock and the holder's pid; $(show)" \
    eval '[ "$RC" -eq 1 ] && [ ! -s "$T/out" ] && one_line_err &&
        grep -qF "worker=5 is taken on this host by process $HOLDER (socket @idmint-ordinal-worker-5)" "$T/err"'
IDM_TEST_HOSTNAME=web-6 run next --node datacenter=1 --node worker=ordinal
check "meanwhile ordinal 6 is not held up; $(show)" test "$RC" -eq 0
kill "$HOLDER" 2>/dev/null
exec 7<&-
wait_exit "$HOLDER"
# (datacenter 2: the holder, killed, left its state file's mark ahead.)
IDM_TEST_HOSTNAME=web-5 run next --node datacenter=2 --node worker=ordinal
check "the holder gone, ordinal 5 is free again; $(show)" test "$RC" -eq 0

# ================================================= 2. idmintd

DD="$T/dd"
IDM_TEST_HOSTNAME=web-9 "$D" --check-config --data-dir "$DD" --node datacenter=2,worker=ordinal \
    >"$T/out" 2>"$T/err"
RC=$?
check "--check-config resolves the ordinal: node as given, a comment line with 9 and no lease; $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -qx "node = datacenter=2,worker=ordinal" "$T/out" &&
        grep -qx "# node: worker=9, the ordinal from host name web-9 (IDM_TEST_HOSTNAME, for tests) (no lease: the platform.s ordinal stands in for it)" "$T/out"'
# refused_d WANT ARGS...: --check-config refuses: exit 2, one line with WANT
# (the host name: $HOST, web-9 unless set).
refused_d() {
    local want=$1
    shift
    IDM_TEST_HOSTNAME=${HOST:-web-9} "$D" --check-config --data-dir "$DD" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    check "idmintd $* : exit 2, one line with '$want'; $(show)" \
        eval '[ "$RC" -eq 2 ] && [ ! -s "$T/out" ] && one_line_err && grep -qF -- "$want" "$T/err"'
}
refused_d "and lease (from --lease) names a coordinator" --node worker=ordinal \
    --lease "file://$T/leases"
refused_d "and lease-field (from --lease-field) names it for the lease" --node worker=ordinal \
    --lease-field worker
refused_d "worker=9, the ordinal from host name web-9 (IDM_TEST_HOSTNAME, for tests): node: worker=9 exceeds 7" --node worker=ordinal --layout \
    "time:41@1ms,worker:3,seq:19" --epoch 0
HOST=web refused_d "the host name 'web' (IDM_TEST_HOSTNAME, for tests) does not end in a decimal number" \
    --node worker=ordinal
refused_d "only one field may take the ordinal" --node "datacenter=ordinal,worker=ordinal:X"

IDM_TEST_HOSTNAME=web-9 start_d o1 --data-dir "$DD" --node datacenter=2,worker=ordinal || finish
FIRST=$DPID
check "the log says worker 9 from the ordinal, with no lease" \
    eval 'grep -q "node: worker=9, the ordinal from host name web-9" "$T/o1.log" &&
        grep -q "listening on .*(worker 9," "$T/o1.log"'
get "$PORT" '/v1/snowflake?count=5'
python3 -c 'import json,sys; [print(i) for i in json.load(open(sys.argv[1]))["ids"]]' "$T/body" >"$T/first.ids"
LAST=$(tail -n 1 "$T/first.ids")
run decode "$LAST"
check "idmintd's ids decode with worker=9, datacenter=2; $(show)" \
    eval '[ "$RC" -eq 0 ] && grep -q "datacenter=2 worker=9" "$T/out"'
get "$PORT" /healthz
check "/healthz says worker 9 (got $CODE [$(body_short)])" \
    eval '[ "$CODE" = 200 ] && grep -q "\"worker\":9" "$T/body"'
FIRST_PORT=$PORT

# A second idmintd on this data-dir with the same ordinal.
IDM_TEST_HOSTNAME=web-9 timeout -k 5 30 "$D" --listen 127.0.0.1:0 --data-dir "$DD" \
    --node datacenter=2,worker=ordinal >"$T/out" 2>"$T/err"
RC=$?
check "a second idmintd with ordinal 9: exit 1, naming the lock file and the first one's pid; $(show)" \
    eval '[ "$RC" -eq 1 ] && grep -qF "$DD/ordinal-worker-9.lock is locked by another process (pid $FIRST idmintd)" "$T/err"'
alive "$FIRST_PORT" "the first idmintd"
stop_d "$FIRST"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
check "its state file is under data-dir: ordinal-worker-9.state" test -s "$DD/ordinal-worker-9.state"

# A restart goes on above what the first minted.
IDM_TEST_HOSTNAME=web-9 start_d o2 --data-dir "$DD" --node datacenter=2,worker=ordinal || finish
get "$PORT" /v1/snowflake
NEXT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ids"][0])' "$T/body")
check "a restart mints above the first run's ids ($NEXT > $LAST)" \
    python3 -c 'import sys; sys.exit(0 if int(sys.argv[1]) > int(sys.argv[2]) else 1)' "$NEXT" "$LAST"
# kill -9 under load, restarted at once: the state file's mark may be ahead
# of the clock (the generator reserves ahead); the restart waits for the
# clock to pass it, then mints above every id the killed one answered.
: >"$T/killed.ids"
for i in $(seq 1 30); do
    get "$PORT" '/v1/snowflake?count=4000'
    python3 -c 'import json,sys; [print(i) for i in json.load(open(sys.argv[1]))["ids"]]' \
        "$T/body" >>"$T/killed.ids" 2>/dev/null
done
stop_d "$DPID" KILL
IDM_TEST_HOSTNAME=web-9 start_d o3 --data-dir "$DD" --node datacenter=2,worker=ordinal || finish
get "$PORT" /v1/snowflake
NEXT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ids"][0])' "$T/body")
MAX=$(sort -n "$T/killed.ids" | tail -n 1)
check "kill -9 and a restart at once: it starts and mints above all $(wc -l <"$T/killed.ids") ids answered before ($NEXT > $MAX)" \
    python3 -c 'import sys; sys.exit(0 if int(sys.argv[1]) > int(sys.argv[2]) else 1)' "$NEXT" "$MAX"
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0

finish
