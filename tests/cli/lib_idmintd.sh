# SPDX-License-Identifier: MIT
#
# The idmintd helpers shared by test_idmintd.sh and test_idmintd_hostile.sh.
# Not a test itself (the name must not match test_*.sh): each script sources
# it right after lib.sh with
#
#     source "$(dirname "$0")/lib_idmintd.sh"
#
# Sourcing it sets D (the absolute path of the idmintd next to $BIN) and
# stops the script with "0 passed, 1 failed" if there is none or curl,
# python3 or a tool named in IDMD_NEEDS is missing (they are dependencies,
# installed by scripts/deps.sh: a missing one fails, nothing is skipped);
# it replaces lib.sh's
# EXIT trap with one that also kills the servers and clients listed in PIDS,
# unsets the environment's IDMINT_* variables (so that they stay out of the
# servers started here), sets HOME to $T/home and defines the helpers below.
#
# Settings a script may give before sourcing:
#   IDMD_NEEDS  more tools the script needs besides curl and python3,
#               separated by spaces.
# The script writes $T/h.py itself (its raw-socket side, in Python; `h`
# runs it; it imports the $T/idmd_http.py written here) and defines its
# own `metric`.

# No helper measures how long anything took. A wait for an event (a server
# listening, a process exiting, a condition a script polls with wait_until)
# has a generous bound whose only job is to end a test whose event never
# comes; what the scripts check is the event and what it left.

# shellcheck shell=bash disable=SC2034 # STOPPED: for the scripts

D="$(cd "$(dirname "$BIN")" && pwd)/idmintd"
if [ ! -x "$D" ]; then
    bad "no idmintd next to $BIN"
    finish
fi
# shellcheck disable=SC2086 # one word a tool
for tool in curl python3 ${IDMD_NEEDS:-}; do
    if ! command -v "$tool" >/dev/null; then
        bad "$tool is needed and missing (a dependency: scripts/deps.sh installs it)"
        finish
    fi
done

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# Keep the environment's idmintd keys out of the servers started here.
while IFS='=' read -r name _; do
    case $name in IDMINT_*) unset "$name" ;; esac
done < <(env)
export HOME="$T/home"

# note TEXT: printed when IDMD_TEST_VERBOSE is set.
note() { [ -z "${IDMD_TEST_VERBOSE:-}" ] || printf 'note: %s\n' "$*" >&3; }
# now_ms: the wall clock in ms (to compare with the times ids and lease
# marks carry, never to measure how long something took).
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# BOUND: the seconds any wait for an event here may take before the test
# gives up on it (it is no measure: a working server takes a fraction).
BOUND=60

# wait_until SECONDS COMMAND...: run COMMAND every 50 ms until it succeeds
# (status 0), or until SECONDS have passed (status 1).
wait_until() {
    local end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# exited PID: the process (a child of this shell) has exited: it is gone,
# or a zombie this shell has not waited for yet (kill -0 still reaches one).
exited() {
    local st
    st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
    [ -z "$st" ] || [ "$st" = Z ]
}

# listening NAME: the port in $T/NAME.log's "listening" line, into PORT.
listening() {
    PORT=$(sed -n 's|^idmintd: listening on http://127\.0\.0\.1:\([0-9]*\) (worker .*|\1|p' "$T/$1.log")
    [ -n "$PORT" ]
}
# up_or_exited NAME PID: NAME is listening, or PID has exited.
up_or_exited() { listening "$1" || exited "$2"; }

# start_d NAME ARGS...: idmintd --listen 127.0.0.1:0 ARGS in the background,
# its stderr in $T/NAME.log; waits (at most BOUND s) for its "listening"
# line, or for it to exit. Sets DPID and PORT (empty if it did not come up).
start_d() {
    local name=$1
    shift
    : >"$T/$name.log"
    "$D" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>>"$T/$name.log" &
    DPID=$!
    PIDS+=("$DPID")
    PORT=
    wait_until "$BOUND" up_or_exited "$name" "$DPID"
    if ! listening "$name"; then
        PORT=
        bad "idmintd $name ($*) did not start: $(head -c 600 "$T/$name.log")"
        return 1
    fi
}

# wait_exit PID: wait for the process (a child of this shell) to exit, its
# status in STOPPED. One that has not exited after BOUND s is a failure: it
# is killed (so the test goes on) and STOPPED is "hung".
wait_exit() {
    if ! wait_until "$BOUND" exited "$1"; then
        bad "process $1 ($(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | head -c 200)) has not exited after $BOUND s"
        kill -9 "$1" 2>/dev/null
        { wait "$1"; } 2>/dev/null
        STOPPED=hung
        return 1
    fi
    { wait "$1"; } 2>/dev/null
    STOPPED=$?
}

# stop_d PID [SIGNAL]: send SIGNAL (TERM), then wait_exit: the exit status
# in STOPPED ("hung", and a failure, if it did not exit).
stop_d() {
    kill -"${2:-TERM}" "$1" 2>/dev/null
    wait_exit "$1"
}

# get PORT PATH [CURL ARGS...]: one request; status in CODE, body in
# $T/body, headers in $T/hdr.
get() {
    local port=$1 path=$2
    shift 2
    CODE=$(curl -sg --max-time 10 -o "$T/body" -D "$T/hdr" -w '%{http_code}' "$@" \
        "http://127.0.0.1:$port$path" 2>/dev/null)
}
# body_short: the start of the last body, for messages.
body_short() { head -c 300 "$T/body" | tr '\n' ' '; }
# alive PORT WHAT: one check that the server on PORT still answers /ping.
alive() {
    get "$1" /ping
    check "$2: the server still answers (/ping $CODE)" test "$CODE" = 200
}
# h COMMAND PORT ARGS...: the script's raw-socket side ($T/h.py); its
# stderr goes to $T/py.err.
h() { python3 "$T/h.py" "$@" 2>>"$T/py.err"; }

# What the scripts' raw-socket sides share: their $T/h.py imports it
# (from idmd_http import ...).
cat >"$T/idmd_http.py" <<'PY'
"""HTTP/1.1 responses read off a raw socket, for the scripts' h.py."""
import socket

def status_of(data):
    """The status code of the response at the start of data (0: none)."""
    line = data.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) >= 2 and line[0].startswith(b"HTTP/") else 0

def one_response(out):
    """True once out holds a whole response (head and Content-Length body)."""
    i = out.find(b"\r\n\r\n")
    if i < 0:
        return False
    n = 0
    for h in out[:i].split(b"\r\n")[1:]:
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v.strip())
    return len(out) >= i + 4 + n

def read_until(s, limit, done):
    """What came until done(what came) is true, the peer closed or reset,
    or the timeout (limit s)."""
    out = b""
    s.settimeout(limit)
    try:
        while not done(out):
            b = s.recv(65536)
            if not b:
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        pass
    return out

def read_one(s, limit=10):
    """One response, or what came before the peer closed, reset or the
    timeout."""
    return read_until(s, limit, one_response)

def read_all(s, limit=10):
    """Everything until the peer closes or the timeout."""
    return read_until(s, limit, lambda out: False)
PY

# The answers the tests save: headers in $T/hdr, the body in $T/body.
# header NAME: the value of header NAME in $T/hdr (case-insensitive).
header() { tr -d '\r' <"$T/hdr" | sed -n "s/^$1: *//Ip" | head -n 1; }
# pyj EXPR: evaluate EXPR with j = the last body parsed as JSON; prints the
# result, fails if the body is no JSON or EXPR is false/raises.
pyj() {
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
r = eval(sys.argv[2])
if r is False or r is None:
    sys.exit(1)
if r is not True:
    print(r)
' "$T/body" "$1" 2>/dev/null
}
