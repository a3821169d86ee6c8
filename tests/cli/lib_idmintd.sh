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
# python3 or a tool named in IDMD_NEEDS is missing; it replaces lib.sh's
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

# shellcheck shell=bash disable=SC2034 # START_MS, STOPPED, STOP_MS: for the scripts

D="$(cd "$(dirname "$BIN")" && pwd)/idmintd"
if [ ! -x "$D" ]; then
    bad "no idmintd next to $BIN"
    finish
fi
# shellcheck disable=SC2086 # one word a tool
for tool in curl python3 ${IDMD_NEEDS:-}; do
    if ! command -v "$tool" >/dev/null; then
        bad "$tool is needed"
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

# note TEXT: printed when IDMD_TEST_VERBOSE is set (timings, for tuning).
note() { [ -z "${IDMD_TEST_VERBOSE:-}" ] || printf 'note: %s\n' "$*" >&3; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# start_d NAME ARGS...: idmintd --listen 127.0.0.1:0 ARGS in the background,
# its stderr in $T/NAME.log; waits up to 10 s for its "listening" line. Sets
# DPID and PORT (empty if it did not come up) and START_MS (ms it took).
start_d() {
    local name=$1 t0
    shift
    t0=$(now_ms)
    : >"$T/$name.log"
    "$D" --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>>"$T/$name.log" &
    DPID=$!
    PIDS+=("$DPID")
    PORT=
    for _ in $(seq 200); do
        PORT=$(sed -n 's|^idmintd: listening on http://127\.0\.0\.1:\([0-9]*\) (worker .*|\1|p' "$T/$name.log")
        [ -n "$PORT" ] && break
        kill -0 "$DPID" 2>/dev/null || break
        sleep 0.05
    done
    START_MS=$(($(now_ms) - t0))
    if [ -z "$PORT" ]; then
        bad "idmintd $name ($*) did not start: $(head -c 600 "$T/$name.log")"
        return 1
    fi
}

# stop_d PID [SIGNAL]: signal (TERM), wait; exit status in STOPPED, ms in STOP_MS.
stop_d() {
    local t0
    t0=$(now_ms)
    kill -"${2:-TERM}" "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
    STOPPED=$?
    STOP_MS=$(($(now_ms) - t0))
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
