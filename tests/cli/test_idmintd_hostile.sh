#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmintd against hostile clients and bad settings, over loopback sockets:
#   - slow clients: a request head trickled a byte at a time is cut off after
#     head-timeout (the idle timeout never fires while bytes come); keep-alive
#     requests that come in time are not; connections over
#     max-connections-per-ip from one address are closed while another
#     address is served; with every connection of the main listener held by
#     slow clients (one more client waits, unanswered, until they let go),
#     the admin listener still answers /healthz and /metrics;
#   - request limits: max-request is the limit on the head as sent (414 for
#     the request line, 431 for the head), answers the HTTP library makes
#     itself are counted in /metrics, conflicting Content-Length headers are
#     400;
#   - settings: every bad setting that used to pass --check-config and fail
#     at start is refused by both with exit 2 and one line naming the
#     source, the key and the value; the instagram and sonyflake presets
#     and the default data directory start out of the box; count-max is
#     held to what the layout can mint in one request.
#
# Usage: bash test_idmintd_hostile.sh /path/to/build/idmint (idmintd is its
# sibling). Needs curl and python3. Every client is bounded in count and
# time; no check measures how long anything took (a bound only ends a client
# whose event never comes). Ends with one line "N passed, N failed"; exits
# non-zero if any check failed.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
IDMD_NEEDS=timeout
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"
cd "$T" || exit 1

# metric PORT NAME: the value of the metric line starting with NAME (0 if none).
metric() {
    curl -sg --max-time 10 "http://127.0.0.1:$1/metrics" 2>/dev/null |
        awk -v m="$2" 'BEGIN { v = 0 } index($0, m " ") == 1 { v = $2 } END { print v }'
}
# not_ok_total PORT: requests answered with anything but 200, per /metrics.
not_ok_total() {
    curl -sg --max-time 10 "http://127.0.0.1:$1/metrics" 2>/dev/null |
        awk 'BEGIN { s = 0 } /^idmint_http_requests_total\{code="/ && !/code="200"/ { s += $2 } END { print s }'
}

# The raw-socket side, in Python: see each command's docstring. Every
# socket has a timeout; every loop a bound.
cat >"$T/h.py" <<'PY'
import os, select, socket, sys, time
from idmd_http import read_one, status_of

def conn(port, src=None, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s

def closed_after(s, limit=10):
    """True if the peer closes (or resets) within limit s, reading on."""
    s.settimeout(limit)
    try:
        while s.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

def send_status(port, raw):
    s = conn(port)
    try:
        s.sendall(raw)
    except OSError:
        pass
    st = status_of(read_one(s))
    s.close()
    return st

def cmd_head(port, size):
    """A GET /ping whose request line and headers are exactly size bytes as
    sent: print the status."""
    size = int(size)
    start = b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Pad: "
    pad = size - len(start) - 4
    raw = start + b"a" * pad + b"\r\n\r\n"
    assert len(raw) == size
    print(send_status(port, raw))

def cmd_line(port, size):
    """A request line of exactly size bytes (with its CRLF), then Host:
    print the status."""
    size = int(size)
    start, end = b"GET /ping?", b" HTTP/1.1\r\n"
    raw = start + b"a" * (size - len(start) - len(end)) + end
    assert len(raw) == size
    print(send_status(port, raw + b"Host: x\r\n\r\n"))

def cmd_framing(port, which):
    """Content-Length framing: print the status and whether the server
    closed the connection after it."""
    heads = {
        "conflict": b"Content-Length: 0\r\nContent-Length: 5\r\n",
        "same": b"Content-Length: 0\r\nContent-Length: 0\r\n",
        "te": b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
    }
    s = conn(port)
    s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n" + heads[which] + b"\r\nhello")
    st = status_of(read_one(s))
    print(st, "closed" if closed_after(s, 10) else "open")
    s.close()

def cmd_trickle(port, every, bound):
    """A request head sent a byte every `every` s, for at most `bound` s:
    print "cut" if the server closed the connection first, else "held"."""
    every, bound = float(every), float(bound)
    s = conn(port)
    s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    t0 = time.monotonic()
    res = "held"
    while time.monotonic() - t0 < bound:
        r, _, _ = select.select([s], [], [], every)
        if r:
            try:
                if not s.recv(4096):
                    res = "cut"
                    break
            except OSError:
                res = "cut"
                break
        try:
            s.send(b"a")
        except OSError:
            res = "cut"
            break
    print(res, "%.2f" % (time.monotonic() - t0))
    s.close()

def cmd_keepalive(port, n, pause):
    """n requests on one keep-alive connection, pause s apart: print how
    many were answered 200."""
    n, pause = int(n), float(pause)
    s = conn(port)
    ok = 0
    for i in range(n):
        if i:
            time.sleep(pause)
        try:
            s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            break
        if status_of(read_one(s)) == 200:
            ok += 1
    s.close()
    print(ok)

def cmd_flood(port, n, src, want_closed, ready, done, bound):
    """n slow clients from address src, each trickling a header byte every
    0.5 s. Once want_closed of them were closed by the server, write "open
    closed" to the file ready; go on until the file done exists (at most
    bound s); print "open closed" and close them all."""
    n, want_closed, bound = int(n), int(want_closed), float(bound)
    socks = []
    for _ in range(n):
        s = conn(port, src)
        s.setblocking(False)
        try:
            s.send(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            pass
        socks.append(s)
    closed = set()
    t0 = time.monotonic()
    said = False
    next_byte = t0 + 0.5
    while time.monotonic() - t0 < bound and not os.path.exists(done):
        live = [s for s in socks if s not in closed]
        r, _, _ = select.select(live, [], [], 0.1) if live else ([], [], [])
        for s in r:
            try:
                if not s.recv(4096):
                    closed.add(s)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(s)
        if time.monotonic() >= next_byte:
            next_byte += 0.5
            for s in socks:
                if s not in closed:
                    try:
                        s.send(b"a")
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed.add(s)
        if not said and len(closed) >= want_closed:
            with open(ready + ".tmp", "w") as f:
                f.write("%d %d\n" % (n - len(closed), len(closed)))
            os.replace(ready + ".tmp", ready)
            said = True
    print(n - len(closed), len(closed))
    for s in socks:
        s.close()

def cmd_hold(port, n, ready, done, bound):
    """n clients that each have a /ping answered on a keep-alive connection
    (so the server has taken every one of them), then send half of their
    next request and stop there: slow clients holding n connections. Then
    one more client sends a whole /ping. Write "held K" (K: how many had
    their first /ping answered) to the file ready and wait until the file
    done exists (at most bound s). Then print whether the extra client had
    been answered by then ("answered" or "unanswered"), let the n go, and
    print the extra client's status once it comes (0: none within bound)."""
    n, bound = int(n), float(bound)
    held = []
    for _ in range(n):
        s = conn(port, timeout=bound)
        s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        if status_of(read_one(s, bound)) == 200:
            s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            held.append(s)
        else:
            s.close()
    extra = conn(port, timeout=bound)
    extra.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
    with open(ready + ".tmp", "w") as f:
        f.write("held %d\n" % len(held))
    os.replace(ready + ".tmp", ready)
    t0 = time.monotonic()
    while time.monotonic() - t0 < bound and not os.path.exists(done):
        time.sleep(0.05)
    r, _, _ = select.select([extra], [], [], 0)
    early = "answered" if r else "unanswered"
    for s in held:
        s.close()
    print(early, status_of(read_one(extra, bound)))
    extra.close()

def cmd_freeport(port):
    """A free loopback port (for the admin listener)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()

cmds = {"head": cmd_head, "line": cmd_line, "framing": cmd_framing, "trickle": cmd_trickle,
        "keepalive": cmd_keepalive, "flood": cmd_flood, "hold": cmd_hold,
        "freeport": cmd_freeport}
cmds[sys.argv[1]](int(sys.argv[2]), *sys.argv[3:])
PY

# ready_or_exited FILE PID: FILE has something in it, or PID has exited.
ready_or_exited() { [ -s "$1" ] || exited "$2"; }

# flood_start PORT N SRC WANT_CLOSED: slow clients in the background (at most
# BOUND s); waits until WANT_CLOSED of them were closed by the server.
# flood_end: lets them go; their final "open closed" in FLOOD.
flood_start() {
    rm -f "$T/flood.ready" "$T/flood.done"
    python3 "$T/h.py" flood "$1" "$2" "$3" "$4" "$T/flood.ready" "$T/flood.done" "$BOUND" \
        >"$T/flood.out" 2>>"$T/py.err" &
    FLOOD_PID=$!
    PIDS+=("$FLOOD_PID")
    wait_until "$BOUND" ready_or_exited "$T/flood.ready" "$FLOOD_PID"
    FLOOD_READY=$(cat "$T/flood.ready" 2>/dev/null)
}
flood_end() {
    touch "$T/flood.done"
    wait_exit "$FLOOD_PID"
    FLOOD=$(cat "$T/flood.out")
}

# ================================================= 1. slow clients

# A head trickled a byte every 0.2 s never lets the 30 s idle timeout fire;
# head-timeout cuts it (the bound only ends the client if it does not).
start_d slow --data-dir "$T/slow" --head-timeout 1000 --idle-timeout 30000 || finish
PID=$DPID
read -r RES SECS <<<"$(h trickle "$PORT" 0.2 "$BOUND")"
note "trickle: $RES after $SECS s"
check "head-timeout 1000: a head trickled a byte every 0.2 s is cut off (got [${RES:-} after ${SECS:-?} s])" \
    test "${RES:-}" = cut
# Requests that each come in time share one connection as before.
N=$(h keepalive "$PORT" 5 0.4)
check "head-timeout 1000: 5 keep-alive requests 0.4 s apart are all answered (got ${N:-0})" \
    test "${N:-0}" -eq 5
alive "$PORT" "after a slow client"
stop_d "$PID"
check "the slow-client server exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# More slow clients from one address than max-connections-per-ip: the rest
# are closed at once, and another address is still served.
start_d perip --data-dir "$T/perip" --max-connections-per-ip 4 --head-timeout 60000 \
    --idle-timeout 60000 || finish
PID=$DPID
flood_start "$PORT" 10 127.0.0.2 6
get "$PORT" /healthz
check "10 slow clients from 127.0.0.2 (4 allowed): /healthz from 127.0.0.1 answers 200 (got $CODE [$(body_short)])" \
    test "$CODE" = 200
get "$PORT" /healthz --interface 127.0.0.2
check "10 slow clients from 127.0.0.2 (4 allowed): one more from 127.0.0.2 is not served (got ${CODE:-none})" \
    test "${CODE:-000}" != 200
flood_end
read -r OPEN CLOSED <<<"$FLOOD"
check "--max-connections-per-ip 4: of 10 slow clients from one address 4 stay, 6 are closed (ready [$FLOOD_READY], end [$FLOOD])" \
    test "${OPEN:-0}" -eq 4 -a "${CLOSED:-0}" -eq 6
alive "$PORT" "after the per-address limit"
stop_d "$PID"

# Every connection of the main listener held by slow clients: the admin
# listener answers health checks and metrics, and nothing else. The slow
# clients each had a request answered first, so the server is known to have
# taken all 8; a 9th client's request must wait until they let go: it is
# still unanswered once the admin listener has answered three requests, and
# answered after.
APORT=$(h freeport 0)
start_d admin --data-dir "$T/admin" --threads 1 --max-connections 8 --max-connections-per-ip 100 \
    --head-timeout 60000 --idle-timeout 60000 --admin-listen "127.0.0.1:$APORT" || finish
PID=$DPID
rm -f "$T/hold.ready" "$T/hold.done"
python3 "$T/h.py" hold "$PORT" 8 "$T/hold.ready" "$T/hold.done" "$BOUND" >"$T/hold.out" 2>>"$T/py.err" &
HOLD_PID=$!
PIDS+=("$HOLD_PID")
wait_until "$BOUND" ready_or_exited "$T/hold.ready" "$HOLD_PID"
HOLD_READY=$(cat "$T/hold.ready" 2>/dev/null)
check "8 slow clients hold every connection of the main listener (max-connections 8): each had a request answered, then began another (got [${HOLD_READY:-}])" \
    test "${HOLD_READY:-}" = "held 8"
get "$APORT" /healthz
check "main listener full: /healthz on admin-listen answers 200 (got $CODE [$(body_short)])" \
    test "$CODE" = 200
get "$APORT" /metrics
check "main listener full: /metrics on admin-listen answers 200 (got $CODE)" \
    test "$CODE" = 200 -a -n "$(grep '^idmint_http_requests_total' "$T/body")"
get "$APORT" /v1/snowflake
check "admin-listen mints nothing: /v1/snowflake there is 404 (got $CODE [$(body_short)])" \
    test "$CODE" = 404
touch "$T/hold.done"
wait_exit "$HOLD_PID"
HOLD=$(cat "$T/hold.out")
check "main listener full: a 9th client's /ping was unanswered while the 8 held their connections, and answered (200) once they let go (got [$HOLD])" \
    test "$HOLD" = "unanswered 200"
stop_d "$PID"
check "the admin server exits 0 on SIGTERM under a flood (got $STOPPED)" test "$STOPPED" -eq 0

# ================================================= 2. request limits

start_d lim --data-dir "$T/lim" || finish
PORT_L=$PORT PID_L=$DPID
C431=$(metric "$PORT_L" 'idmint_http_requests_total{code="431"}')
ST=$(h head "$PORT_L" 8192)
check "max-request 8192: a head of exactly 8192 bytes is served (got ${ST:-none})" test "${ST:-0}" = 200
ST=$(h head "$PORT_L" 8193)
check "max-request 8192: a head of 8193 bytes is 431 (got ${ST:-none})" test "${ST:-0}" = 431
ST=$(h head "$PORT_L" 16000)
check "max-request 8192: a head of 16000 bytes is 431 (got ${ST:-none})" test "${ST:-0}" = 431
# A head that ends within the last ~200 bytes of the library's memory for
# the connection (max-request + 8 KiB) leaves it no room to write any
# answer: it closes the connection instead. Refused either way.
ST=$(h head "$PORT_L" 16192)
check "max-request 8192: a head of 16192 bytes is not served (got ${ST:-none}: 431, or closed unanswered)" \
    test "${ST:-0}" = 431 -o "${ST:-0}" = 0
ST=$(h head "$PORT_L" 40000)
check "max-request 8192: a head of 40000 bytes is 431 (got ${ST:-none})" test "${ST:-0}" = 431
C431B=$(metric "$PORT_L" 'idmint_http_requests_total{code="431"}')
check "/metrics counts the four 431s, the HTTP library's own among them (${C431:-?} before, ${C431B:-?} after)" \
    test "$((C431B - C431))" -eq 4
NOK=$(not_ok_total "$PORT_L")
ST=$(h line "$PORT_L" 9000)
check "max-request 8192: a request line of 9000 bytes is 414 (got ${ST:-none})" test "${ST:-0}" = 414
ST=$(h line "$PORT_L" 40000)
check "max-request 8192: a request line of 40000 bytes is 414 (got ${ST:-none})" test "${ST:-0}" = 414
NOK2=$(not_ok_total "$PORT_L")
check "/metrics counts both 414s, the HTTP library's own among them ($NOK answers not 200 before, $NOK2 after)" \
    test "$((NOK2 - NOK))" -eq 2
read -r ST CL <<<"$(h framing "$PORT_L" conflict)"
check "Content-Length 0 and Content-Length 5: 400, connection closed (got ${ST:-none} ${CL:-})" \
    test "${ST:-0}" = 400 -a "${CL:-}" = closed
read -r ST CL <<<"$(h framing "$PORT_L" te)"
check "Content-Length with Transfer-Encoding: 400, connection closed (got ${ST:-none} ${CL:-})" \
    test "${ST:-0}" = 400 -a "${CL:-}" = closed
read -r ST CL <<<"$(h framing "$PORT_L" same)"
check "Content-Length 0 twice (the same value): served (got ${ST:-none})" test "${ST:-0}" = 200
alive "$PORT_L" "after the request limits"
stop_d "$PID_L"

# max-request is the key's value, not a built-in one.
start_d lim2 --data-dir "$T/lim2" --max-request 2048 || finish
ST=$(h head "$PORT" 2048)
check "max-request 2048: a head of 2048 bytes is served (got ${ST:-none})" test "${ST:-0}" = 200
ST=$(h head "$PORT" 2049)
check "max-request 2048: a head of 2049 bytes is 431 (got ${ST:-none})" test "${ST:-0}" = 431
stop_d "$DPID"

# ================================================= 3. bad settings: exit 2

FUTURE=$(($(date +%s) * 1000 + 86400000))
mkfifo "$T/token.fifo"
: >"$T/token.empty"
python3 -c 'import sys; sys.stdout.write("t" * 4097 + "\n")' >"$T/token.long"
printf 'sonyflake-count = 1\n' >"$T/unused"
printf '# a comment\ncount-max = 600\nlayout = sonyflake\n' >"$T/count.conf"

# refused DESCRIPTION NEEDLES [VAR=VALUE...] ARGS...: --check-config and a
# start with ARGS (and the variables) both exit 2, print nothing on stdout
# and the same one stderr line, which holds every '|'-separated needle.
# ARGS get --data-dir, and --listen 127.0.0.1:0 unless they give --listen.
refused() {
    local desc=$1 needles=$2 mode line_check= line_start= okay=1 a
    local -a envs=() args=(--data-dir "$T/dd") n
    shift 2
    while [ $# -gt 0 ] && [[ $1 == IDMINT_*=* ]]; do
        envs+=("$1")
        shift
    done
    [[ " $* " == *" --listen "* ]] || args+=(--listen 127.0.0.1:0)
    for mode in check start; do
        a=("${args[@]}")
        [ "$mode" = check ] && a+=(--check-config)
        timeout -k 5 20 env "${envs[@]}" "$D" "${a[@]}" "$@" >"$T/out" 2>"$T/err"
        RC=$?
        if [ "$RC" -ne 2 ] || [ -s "$T/out" ] || ! one_err_line; then
            bad "$desc ($mode): want exit 2 and one stderr line; $(show)"
            okay=0
            continue
        fi
        # (the clock's reading, in some messages, moves between the runs)
        a=$(sed 's/(the clock reads [0-9-]*)/(the clock reads N)/' "$T/err")
        if [ "$mode" = check ]; then line_check=$a; else line_start=$a; fi
        IFS='|' read -r -a n <<<"$needles"
        for needle in "${n[@]}"; do
            if ! grep -qF -- "$needle" "$T/err"; then
                bad "$desc ($mode): the message lacks [$needle]: $(cat "$T/err")"
                okay=0
            fi
        done
    done
    if [ "$okay" -eq 1 ] && [ "$line_check" != "$line_start" ]; then
        bad "$desc: --check-config and a start say different things: [$line_check] [$line_start]"
        okay=0
    fi
    [ "$okay" -eq 1 ] && ok
}

refused "an unknown node field" "--node: node 'datacentre=1'|no field 'datacentre'" \
    --node datacentre=1
refused "a node value out of range" "--node: node 'datacenter=32'|exceeds 31" --node datacenter=32
refused "a lease-field the layout lacks" "--lease-field: lease-field 'worker'|layout instagram" \
    --layout instagram --lease-field worker
refused "--node on the field the lease fills" "--node: node 'worker=5'|gives worker" \
    --node worker=5
refused "a missing token file" "--token-file: token-file '$T/none'|No such file" \
    --token-file "$T/none"
refused "a FIFO as the token file (no hang)" "token-file '$T/token.fifo'|not a regular file" \
    --token-file "$T/token.fifo"
refused "an empty token file" "token-file '$T/token.empty'|empty" --token-file "$T/token.empty"
refused "a token over 4096 bytes" "token-file '$T/token.long'|longer than 4096 bytes" \
    --token-file "$T/token.long"
refused "an epoch in the future" "--epoch: epoch '$FUTURE'|in the future" --epoch "$FUTURE"
refused "a relative file:// lease" "--lease: lease 'file://var/leases'|absolute" \
    --lease file://var/leases
refused "a relative sqlite:// store" "--store: store 'sqlite://segments.db'|absolute" \
    --store sqlite://segments.db
refused "count-max above what instagram can mint in one request" \
    "IDMINT_COUNT_MAX: count-max '8000'|at most 6144" IDMINT_COUNT_MAX=8000 --layout instagram
refused "count-max above what sonyflake can mint, from a file" \
    "$T/count.conf:2: count-max '600'|at most 256" --config "$T/count.conf"
refused "admin-listen on listen's address" \
    "--admin-listen: admin-listen '127.0.0.1:7070'|same address as listen (from --listen)" \
    --listen 127.0.0.1:7070 --admin-listen 127.0.0.1:7070

# ================================================= 4. out of the box

# instagram and sonyflake name their node field shard and machine: the
# lease fills it; count-max comes down to what one request can get.
"$D" --check-config --layout sonyflake >"$T/out" 2>"$T/err"
RC=$?
check "--check-config --layout sonyflake: exit 0 (got $RC; $(head -c 300 "$T/err"))" test "$RC" -eq 0
check "--check-config --layout sonyflake: lease-field = machine" grep -qx 'lease-field = machine' "$T/out"
check "--check-config --layout sonyflake: count-max = 256" grep -qx 'count-max = 256' "$T/out"
check "--check-config --layout sonyflake says count-max was lowered ($(grep '^#' "$T/out"))" \
    grep -q '^# count-max: the default 10000 lowered to 256' "$T/out"
for preset in instagram:6144 sonyflake:256; do
    name=${preset%%:*} most=${preset#*:}
    start_d "$name" --data-dir "$T/$name" --layout "$name" || continue
    get "$PORT" /healthz
    check "--layout $name starts and is healthy (got $CODE [$(body_short)])" test "$CODE" = 200
    ALL=1
    for _ in 1 2 3 4 5; do
        get "$PORT" "/v1/snowflake?count=$most&format=text"
        [ "$CODE" = 200 ] && [ "$(wc -l <"$T/body")" -eq "$most" ] || ALL=0
    done
    check "--layout $name: count=$most (its count-max) is served, 5 times in a row (last $CODE [$(body_short)])" \
        test "$ALL" -eq 1
    get "$PORT" "/v1/snowflake?count=$((most + 1))"
    check "--layout $name: count=$((most + 1)) is refused as over count-max, not 503 for ever (got $CODE)" \
        test "$CODE" = 400
    stop_d "$DPID"
    check "--layout $name: exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0
done

# The default data directory (./var) is relative: it is made absolute, so
# the lease and store URLs made from it are too.
mkdir -p "$T/cwd"
(cd "$T/cwd" && exec "$D" --check-config) >"$T/out" 2>"$T/err"
check "--check-config with the default data-dir shows it absolute: $(grep '^data-dir' "$T/out")" \
    grep -qx "data-dir = $T/cwd/var" "$T/out"
cd "$T/cwd" || exit 1
start_d cwd || finish
cd "$T" || exit 1
get "$PORT" /v1/snowflake
check "the default data-dir: idmintd starts and mints (got $CODE)" test "$CODE" = 200
check "the default data-dir: its leases are under ./var" test -d "$T/cwd/var/leases"
stop_d "$DPID"

finish
