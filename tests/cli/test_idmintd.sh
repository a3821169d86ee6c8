#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Black-box tests of the idmintd HTTP service over real sockets: every
# endpoint and format (JSON ids are strings that survive 2^53), the count
# cap and the strict input rules (FAULTS N1), malformed and oversized
# requests (the server keeps serving after each), idle connections closed
# by the server, two servers sharing one lease directory, the clock stepped
# back and forth through an offset file, the clock stepped forward past the
# lease's wall deadline (/healthz follows minting), SIGTERM under load
# (clean exit, no partial body, the lease released with the last tick as
# its mark), bearer tokens (up to 4096 bytes, compared whole), count-max
# lowered to what the layout mints (N5), a lost lease (N6: never minted
# with again, even once another server holds the id) and the
# configuration's errors.
#
# Usage: bash test_idmintd.sh /path/to/build/idmint  (idmintd is its sibling)
# Needs curl and python3. Ends with one line "N passed, N failed"; exits
# non-zero if any check failed. No check measures how long anything took:
# where the behaviour is a deadline (an idle connection closed, a server
# stopped by SIGTERM), the event itself is waited for, with a bound (60 s,
# lib_idmintd.sh's BOUND) that only ends a test whose event never comes,
# and what happened is checked.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"

# metric PORT NAME: the value of the metric line starting with NAME.
metric() {
    curl -sg --max-time 10 "http://127.0.0.1:$1/metrics" 2>/dev/null |
        awk -v m="$2" 'index($0, m " ") == 1 { print $2 }'
}
# health_worker PORT: /healthz's "worker".
health_worker() {
    get "$1" /healthz
    pyj 'j["worker"]'
}
# answers PORT PATH STATUS: a GET of PATH on PORT is answered STATUS now
# (CODE, $T/body and $T/hdr keep that answer).
answers() {
    get "$1" "$2"
    [ "$CODE" = "$3" ]
}

# The raw-socket side, in Python: see each command's docstring.
cat >"$T/h.py" <<'PY'
import http.client, json, select, socket, sys, threading, time
from idmd_http import read_all, read_one, status_of

# Every bound here only ends a client whose answer or close never comes.
BOUND = 60

def conn(port, timeout=BOUND):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s

def one(port, raw, limit=BOUND):
    """Send raw bytes, return the status of the first answer (0: none)."""
    s = conn(port)
    try:
        s.sendall(raw)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    data = read_one(s, limit)
    s.close()
    return status_of(data), data

def cmd_bigheader(port):
    """A 20 KB header: print the status."""
    raw = (b"GET /v1/snowflake HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20480 +
           b"\r\n\r\n")
    st, _ = one(port, raw)
    print(st)

def cmd_bigbody(port):
    """A GET with a 100 KB body: print the status (0: none before a reset)."""
    s = conn(port)
    body = b"x" * 102400
    raw = (b"GET /v1/snowflake HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
    data = b""
    try:
        s.sendall(raw)
        s.sendall(body)
    except OSError:
        pass
    data = read_one(s, BOUND)
    s.close()
    print(status_of(data))

def cmd_garbage(port):
    """A request line of garbage: print the status (0: closed without one)."""
    st, _ = one(port, b"\x01\x02garbage \xff\xfe no http here\r\n\r\n")
    print(st)

def cmd_lineonly(port):
    """A request line, then the connection closed before any header."""
    s = conn(port)
    s.sendall(b"GET /v1/snowflake HTTP/1.1\r\n")
    s.close()
    print("done")

def cmd_halfway(port):
    """Requests cut short: the connection closed mid-line, mid-headers."""
    for raw in (b"GET /v1/snowfl", b"GET /v1/snowflake HTTP/1.1\r\nHost: x\r\nX-A: b"):
        s = conn(port)
        s.sendall(raw)
        s.close()
    s = conn(port)
    s.sendall(b"GET /v1/snowflake HTTP/1.1\r\nHost: x\r\n")
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.close()  # a reset
    print("done")

def parse_responses(data):
    """Split pipelined HTTP/1.1 responses (Content-Length bodies)."""
    out = []
    while data:
        i = data.find(b"\r\n\r\n")
        if i < 0:
            break
        head = data[:i].decode("latin-1").split("\r\n")
        n = 0
        for h in head[1:]:
            k, _, v = h.partition(":")
            if k.strip().lower() == "content-length":
                n = int(v.strip())
        if len(data) < i + 4 + n:
            break
        out.append((int(head[0].split()[1]), data[i + 4:i + 4 + n]))
        data = data[i + 4 + n:]
    return out

def cmd_pipeline(port, n):
    """n requests sent at once on one connection: print answered, ok, distinct ids."""
    n = int(n)
    s = conn(port)
    reqs = b"".join(b"GET /v1/snowflake?count=2 HTTP/1.1\r\nHost: x\r\n\r\n" for _ in range(n - 1))
    reqs += b"GET /v1/snowflake?count=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    s.sendall(reqs)
    data = read_all(s, BOUND)
    s.close()
    rs = parse_responses(data)
    ids = set()
    ok = 0
    for st, body in rs:
        if st == 200:
            ok += 1
            ids.update(json.loads(body)["ids"])
    print(len(rs), ok, len(ids))

def cmd_idle(port):
    """Two idle connections (one silent, one with half a request line), each
    read until the server closes it (or resets it): print for each "closed"
    and the number of bytes that came before, or "open" if the server had
    not closed it after BOUND s."""
    res = ["open", "open"]
    def watch(k, raw):
        s = conn(port)
        got = 0
        if raw:
            s.sendall(raw)
        try:
            while True:
                b = s.recv(4096)
                if not b:
                    break
                got += len(b)
            res[k] = "closed %d" % got
        except ConnectionResetError:
            res[k] = "closed %d" % got
        except socket.timeout:
            pass
        s.close()
    th = [threading.Thread(target=watch, args=(0, b"")),
          threading.Thread(target=watch, args=(1, b"GET /v1/snowfla"))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    print(" ".join(x.replace(" ", "-") for x in res))

def cmd_load(port, outfile, statefile, seconds):
    """4 threads on keep-alive connections asking for 100 ids at a time,
    until the server is gone (or the time is up). Ids to outfile; one JSON
    line of counts to stdout. statefile gets the count of good answers as
    they come (the shell waits on it before the SIGTERM)."""
    seconds = float(seconds)
    lock = threading.Lock()
    st = {"good": 0, "badbody": 0, "other_status": 0, "errors": 0, "refused": 0}
    ids = []
    t_end = time.monotonic() + seconds
    def worker():
        c = None
        refused = 0
        while time.monotonic() < t_end and refused < 3:
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/v1/snowflake?count=100")
                r = c.getresponse()
                body = r.read()  # raises on a body cut short
                refused = 0
                if r.status != 200:
                    with lock:
                        st["other_status"] += 1
                    if r.will_close:
                        c.close(); c = None
                    continue
                try:
                    got = json.loads(body)["ids"]
                    okb = len(got) == 100 and all(isinstance(x, str) for x in got)
                except Exception:
                    okb = False
                with lock:
                    if okb:
                        st["good"] += 1
                        ids.extend(got)
                    else:
                        st["badbody"] += 1
                if r.will_close:
                    c.close(); c = None
            except ConnectionRefusedError:
                with lock:
                    st["refused"] += 1
                refused += 1
                c = None
                time.sleep(0.05)
            except (OSError, http.client.HTTPException):
                with lock:
                    st["errors"] += 1
                if c is not None:
                    c.close()
                c = None
    th = [threading.Thread(target=worker) for _ in range(4)]
    for t in th:
        t.start()
    while any(t.is_alive() for t in th):
        with lock:
            g = st["good"]
        with open(statefile + ".tmp", "w") as f:
            f.write("%d\n" % g)
        import os
        os.replace(statefile + ".tmp", statefile)
        time.sleep(0.05)
    for t in th:
        t.join()
    with open(outfile, "w") as f:
        f.write("\n".join(ids) + ("\n" if ids else ""))
    st["ids"] = len(ids)
    st["unique"] = len(set(ids))
    print(json.dumps(st))

def cmd_full(port):
    """With --max-connections 2: two connections hold every slot (each had
    a request answered, so the server has taken both; then they stay idle);
    a third client's request must wait (in the listen backlog) until the
    server closes an idle one, then be answered. Print ORDER and the third's
    status: ORDER is "after-close" if its answer came only once the server
    had closed an idle connection, "early" if it came while both were still
    open (the limit did not hold), "none" if none came within BOUND s."""
    idle = []
    for _ in range(2):
        i = conn(port)
        i.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        if status_of(read_one(i, BOUND)) != 200:
            print("none 0")
            return
        idle.append(i)
    s = conn(port)
    s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
    closed = 0

    def reap(wait):
        # idle connections the server has closed (EOF or reset) by now
        nonlocal closed
        if not idle:
            return
        r, _, _ = select.select(idle, [], [], wait)
        for i in r:
            try:
                b = i.recv(4096)
            except OSError:
                b = b""
            if not b:
                closed += 1
                idle.remove(i)
                i.close()

    order = "none"
    t_end = time.monotonic() + BOUND
    while time.monotonic() < t_end:
        r, _, _ = select.select(idle + [s], [], [], 1)
        reap(0)
        if s in r:
            # the server closes an idle connection before it takes the
            # third: that close is seen by the time the answer is
            reap(0)
            order = "after-close" if closed > 0 else "early"
            break
    st = status_of(read_one(s, BOUND)) if order != "none" else 0
    s.close()
    for i in idle:
        i.close()
    print(order, st)

cmds = {"full": cmd_full, "bigheader": cmd_bigheader, "bigbody": cmd_bigbody, "garbage": cmd_garbage,
        "halfway": cmd_halfway, "lineonly": cmd_lineonly, "pipeline": cmd_pipeline, "idle": cmd_idle,
        "load": cmd_load}
port = int(sys.argv[2])
cmds[sys.argv[1]](port, *sys.argv[3:])
PY

# ================================================= 1. endpoints and formats

DA="$T/a"
mkdir -p "$DA"
run seq create orders --store "sqlite://$DA/segments.db"
check "seq create orders: $(show)" test "$RC" -eq 0
start_d a --data-dir "$DA" || finish
PORT_A=$PORT PID_A=$DPID

get "$PORT_A" /v1/snowflake
if [ "$CODE" = 200 ] && [ "$(header Content-Type)" = application/json ] &&
    pyj 'len(j["ids"]) == 1 and type(j["ids"][0]) is str and j["ids"][0].isdigit()' >/dev/null; then
    ok
else
    bad "/v1/snowflake: want 200 JSON {\"ids\":[\"<digits>\"]}; got $CODE [$(body_short)]"
fi
SF1=$(pyj 'j["ids"][0]')
# N7: the id is above 2^53 and comes back exactly (a JSON number would not).
check "/v1/snowflake: the id string $SF1 is above 2^53 (a JSON double could not hold it)" \
    python3 -c 'import sys; v = int(sys.argv[1]); sys.exit(not (v > 2**53 and str(v) == sys.argv[1]))' "$SF1"

get "$PORT_A" '/v1/snowflake?count=5&format=text'
if [ "$CODE" = 200 ] && [ "$(header Content-Type | cut -d';' -f1)" = text/plain ] &&
    [ "$(grep -c '^[0-9]\{1,20\}$' "$T/body")" -eq 5 ] && [ "$(wc -l <"$T/body")" -eq 5 ] &&
    sort -c -n -u "$T/body" 2>/dev/null && [ "$(head -n 1 "$T/body")" -gt "$SF1" ]; then
    ok
else
    bad "/v1/snowflake?count=5&format=text: want 5 increasing ids above $SF1, one a line; got $CODE [$(body_short)]"
fi

get "$PORT_A" '/v1/uuid7?count=3'
check "/v1/uuid7?count=3: want 3 version-7 UUID strings; got $CODE [$(body_short)]" \
    pyj 'len(j["ids"]) == 3 and all(__import__("re").fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", x) for x in j["ids"]) and sorted(j["ids"]) == j["ids"] and len(set(j["ids"])) == 3'
U7=$(pyj 'j["ids"][0]')
get "$PORT_A" '/v1/uuid4?count=3'
check "/v1/uuid4?count=3: want 3 version-4 UUID strings; got $CODE [$(body_short)]" \
    pyj 'len(j["ids"]) == 3 and all(__import__("re").fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", x) for x in j["ids"]) and len(set(j["ids"])) == 3'
get "$PORT_A" '/v1/ulid?count=3'
check "/v1/ulid?count=3: want 3 increasing ULIDs; got $CODE [$(body_short)]" \
    pyj 'len(j["ids"]) == 3 and all(__import__("re").fullmatch(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", x) for x in j["ids"]) and sorted(j["ids"]) == j["ids"] and len(set(j["ids"])) == 3'
get "$PORT_A" '/v1/ulid?format=text'
check "/v1/ulid?format=text: want one ULID line; got $CODE [$(body_short)]" \
    test "$CODE" = 200 -a "$(grep -c '^[0-7][0-9A-HJKMNP-TV-Z]\{25\}$' "$T/body")" -eq 1

get "$PORT_A" '/v1/segment/orders?count=3'
if [ "$CODE" = 200 ] && pyj '[int(x) for x in j["ids"]] == [1, 2, 3] and all(type(x) is str for x in j["ids"])' >/dev/null; then
    ok
else
    bad "/v1/segment/orders?count=3 (new sequence): want {\"ids\":[\"1\",\"2\",\"3\"]}; got $CODE [$(body_short)]"
fi
get "$PORT_A" /api/segment/get/orders
check "/api/segment/get/orders (Leaf): want the bare number 4; got $CODE [$(body_short)]" \
    test "$CODE" = 200 -a "$(cat "$T/body")" = 4
get "$PORT_A" '/v1/segment/orders?format=text'
check "/v1/segment/orders?format=text: want 5; got $CODE [$(body_short)]" \
    test "$CODE" = 200 -a "$(tr -d '\n' <"$T/body")" = 5
get "$PORT_A" /v1/segment/nosuchseq
check "/v1/segment/nosuchseq (never created): want 404; got $CODE [$(body_short)]" test "$CODE" = 404
get "$PORT_A" /api/snowflake/get/anykey
LEAF=$(cat "$T/body")
if [ "$CODE" = 200 ] && [[ $LEAF =~ ^[0-9]{1,20}$ ]] && [ "$LEAF" -gt "$SF1" ]; then
    ok
else
    bad "/api/snowflake/get/anykey (Leaf): want a bare number above $SF1; got $CODE [$(body_short)]"
fi

get "$PORT_A" /healthz
if [ "$CODE" = 200 ] && pyj 'j["status"] == "ok" and type(j["worker"]) is int' >/dev/null; then
    ok
else
    bad "/healthz: want 200 {\"status\":\"ok\",...,\"worker\":N}; got $CODE [$(body_short)]"
fi
WA=$(pyj 'j["worker"]')
get "$PORT_A" "/v1/decode/$LEAF"
if [ "$CODE" = 200 ] && pyj "j['id'] == '$LEAF' and j['kind'] == 'snowflake' and j['worker'] == $WA and abs(j['unix_ms'] - $(now_ms)) < 60000" >/dev/null; then
    ok
else
    bad "/v1/decode/$LEAF: want kind snowflake, the same id, worker $WA (from /healthz), a recent unix_ms; got $CODE [$(body_short)]"
fi
get "$PORT_A" "/v1/decode/$U7"
check "/v1/decode/<uuid7>: want kind uuid, version 7; got $CODE [$(body_short)]" \
    pyj "j['id'] == '$U7' and j['kind'] == 'uuid' and j['version'] == 7"
get "$PORT_A" /v1/decode/not-an-id
check "/v1/decode/not-an-id: want 400 with param id; got $CODE [$(body_short)]" \
    test "$CODE" = 400 -a "$(pyj 'j["error"]["param"]')" = id

get "$PORT_A" /metrics
if [ "$CODE" = 200 ] && grep -q '^idmint_ids_minted_total{kind="snowflake"} [0-9]' "$T/body" &&
    grep -q '^idmint_http_requests_total{code="200"} [0-9]' "$T/body"; then
    ok
else
    bad "/metrics: want idmint_ids_minted_total and idmint_http_requests_total lines; got $CODE [$(body_short)]"
fi
MS=$(metric "$PORT_A" 'idmint_ids_minted_total{kind="snowflake"}')
check "/metrics counts the 7 snowflake ids minted so far (got $MS)" test "${MS:-0}" -eq 7

# ================================================= 2. count cap and N1 inputs

get "$PORT_A" '/v1/snowflake?count=10000'
check "count=10000: want 10000 distinct id strings; got $CODE [$(head -c 100 "$T/body")]" \
    pyj 'len(j["ids"]) == 10000 and len(set(j["ids"])) == 10000 and all(type(x) is str for x in j["ids"])'
M0=$(metric "$PORT_A" 'idmint_ids_minted_total{kind="snowflake"}')
get "$PORT_A" '/v1/snowflake?count=10001'
check "count=10001 (above count-max): want 400 with a JSON error naming param count and count-max 10000; got $CODE [$(body_short)]" \
    test "$CODE" = 400 -a "$(pyj 'j["error"]["status"] == 400 and "at most 10000," in j["error"]["message"] and j["error"]["param"]')" = count
N1_OK=1
for v in 0 -1 +5 %205 0x10 1e3 1234567890123456789012345 '' %D9%A1 05 ' 5' '5,' 1.0; do
    vv=${v// /%20}
    get "$PORT_A" "/v1/snowflake?count=$vv"
    if [ "$CODE" != 400 ] || [ "$(pyj 'j["error"]["param"]')" != count ]; then
        bad "count=$vv: want 400 with a JSON error naming param count; got $CODE [$(body_short)]"
        N1_OK=0
    fi
done
check "every malformed count was refused with 400 naming count" test "$N1_OK" -eq 1
get "$PORT_A" '/v1/snowflake?count=1&count=2'
check "count given twice: want 400; got $CODE" test "$CODE" = 400
get "$PORT_A" '/v1/snowflake?bogus=1'
check "unknown parameter: want 400 naming it; got $CODE [$(body_short)]" \
    test "$CODE" = 400 -a "$(pyj 'j["error"]["param"]')" = bogus
get "$PORT_A" '/v1/snowflake?format=xml'
check "format=xml: want 400 naming format; got $CODE" \
    test "$CODE" = 400 -a "$(pyj 'j["error"]["param"]')" = format
M1=$(metric "$PORT_A" 'idmint_ids_minted_total{kind="snowflake"}')
check "refused requests minted nothing (snowflake minted $M0 before, $M1 after)" test "$M0" = "$M1"

# ================================================= 3. malformed input

get "$PORT_A" /nope
check "unknown path: want 404 with a JSON error; got $CODE [$(body_short)]" \
    test "$CODE" = 404 -a "$(pyj 'j["error"]["status"]')" = 404
get "$PORT_A" /v1/snowflake -X POST
ALLOW=$(header Allow)
check "POST: want 405 with an Allow header naming GET; got $CODE, Allow [$ALLOW]" \
    test "$CODE" = 405 -a "${ALLOW#*GET}" != "$ALLOW"
get "$PORT_A" /v1/snowflake -X DELETE
check "DELETE: want 405; got $CODE" test "$CODE" = 405
# HEAD answers without a body: served where it mints nothing.
get "$PORT_A" /healthz -I
check "HEAD /healthz: want 200; got $CODE" test "$CODE" = 200
get "$PORT_A" /ping -I
check "HEAD /ping: want 200; got $CODE" test "$CODE" = 200
M0=$(metric "$PORT_A" 'idmint_ids_minted_total{kind="snowflake"}')
get "$PORT_A" /v1/snowflake -I
ALLOW=$(header Allow)
check "HEAD /v1/snowflake (would mint ids nobody sees): want 405; got $CODE" test "$CODE" = 405
check "HEAD /v1/snowflake minted nothing" \
    test "$M0" = "$(metric "$PORT_A" 'idmint_ids_minted_total{kind="snowflake"}')"
# RFC 9110 15.5.6: a 405's Allow lists the methods the target supports.
check "HEAD /v1/snowflake: the 405's Allow must not list HEAD, which it refused; got Allow [$ALLOW]" \
    test -n "$ALLOW" -a "${ALLOW#*HEAD}" = "$ALLOW"
get "$PORT_A" '/v1/%73nowflake'
check "a percent-encoded path: want 400; got $CODE" test "$CODE" = 400

ST=$(h bigheader "$PORT_A")
check "a 20 KB header (max-request 8192): want 431, as documented; got [${ST:-none}]" test "${ST:-0}" = 431
alive "$PORT_A" "after a 20 KB header"
ST=$(h bigbody "$PORT_A")
check "a GET with a 100 KB body: want 413; got [$ST]" test "${ST:-0}" = 413
alive "$PORT_A" "after a 100 KB body"
ST=$(h garbage "$PORT_A")
check "a request line of garbage: want 400 (or a close without an answer); got [$ST]" \
    test "${ST:-x}" = 400 -o "${ST:-x}" = 0
alive "$PORT_A" "after a garbage request line"
ST=$(h halfway "$PORT_A")
check "connections closed half-way through a request: the client side ran [$ST]" test "$ST" = "done"
alive "$PORT_A" "after connections closed half-way"
read -r NR NOK NIDS <<<"$(h pipeline "$PORT_A" 100)"
check "100 pipelined requests on one connection: want 100 answered 200 with 200 distinct ids; got [${NR:-} ${NOK:-} ${NIDS:-}]" \
    test "${NR:-0}" -eq 100 -a "${NOK:-0}" -eq 100 -a "${NIDS:-0}" -eq 200
alive "$PORT_A" "after pipelining"
check "server a is still running" kill -0 "$PID_A"

# A client that sends a request line and hangs up before the headers are
# complete has no request in flight: SIGTERM stops the server, cleanly.
start_d half --data-dir "$T/half" || finish
PID_H=$DPID
ST=$(h lineonly "$PORT")
alive "$PORT" "after a request line and a hang-up"
stop_d "$PID_H"
check "a request line then a hang-up: SIGTERM stops the server, exit 0, its log ending 'stopped' (exit $STOPPED) [$(tail -n 2 "$T/half.log" | tr '\n' ' ')]" \
    eval '[ "$STOPPED" = 0 ] && [ "$(tail -n 1 "$T/half.log")" = "idmintd: stopped" ]'

# ================================================= 4. idle connections

# (head-timeout an hour: the idle timeout alone closes them)
start_d idle --data-dir "$T/idle" --idle-timeout 1000 --head-timeout 3600000 || finish
PID_I=$DPID
read -r C1 C2 <<<"$(h idle "$PORT")"
check "--idle-timeout 1000: a silent connection is closed by the server, nothing sent on it (got ${C1:-none})" \
    test "${C1:-}" = closed-0
check "--idle-timeout 1000: a connection with half a request line is closed by the server, nothing sent on it (got ${C2:-none})" \
    test "${C2:-}" = closed-0
alive "$PORT" "after idle connections"
stop_d "$PID_I"

# Too many connections (FAULTS N2): memory and connections stay bounded; a
# client over the limit waits for a slot (the idle ones time out), it is
# not refused at once nor kept forever.
start_d full --data-dir "$T/full" --idle-timeout 1000 --head-timeout 3600000 \
    --max-connections 2 || finish
PID_F=$DPID
read -r FORDER FST <<<"$(h full "$PORT")"
check "--max-connections 2 with both held idle: a third client is answered (200) only after the server closed an idle one (got ${FORDER:-none} ${FST:-})" \
    test "${FORDER:-}" = after-close -a "${FST:-0}" = 200
alive "$PORT" "after the connection limit was reached"
stop_d "$PID_F"

# ================================================= 5. two servers, one lease directory

mkdir -p "$T/shared"
start_d s1 --data-dir "$T/s1" --lease "file://$T/shared" || finish
PID_S1=$DPID PORT_S1=$PORT
start_d s2 --data-dir "$T/s2" --lease "file://$T/shared" || finish
PID_S2=$DPID PORT_S2=$PORT
W1=$(health_worker "$PORT_S1")
W2=$(health_worker "$PORT_S2")
check "two servers on one lease directory: distinct worker ids (got [$W1] [$W2])" \
    test -n "$W1" -a -n "$W2" -a "$W1" != "$W2"
: >"$T/two.ids"
for port in "$PORT_S1" "$PORT_S2" "$PORT_S1" "$PORT_S2" "$PORT_S1" "$PORT_S2"; do
    get "$port" '/v1/snowflake?count=1000&format=text'
    [ "$CODE" = 200 ] || bad "two servers: count=1000 on port $port: $CODE [$(body_short)]"
    cat "$T/body" >>"$T/two.ids"
done
NT=$(wc -l <"$T/two.ids")
NU=$(sort -u "$T/two.ids" | wc -l)
check "two servers: 6000 ids, all unique (got $NT, $NU distinct)" test "$NT" -eq 6000 -a "$NU" -eq 6000
# A third server on that directory whose lease would fill another field
# (datacenter, with worker=0) would mint the same ids as one of them: the
# directory records what its worker ids are ids of, and refuses it.
"$D" --listen 127.0.0.1:0 --data-dir "$T/s3" --lease "file://$T/shared" --lease-field datacenter \
    --node worker=0 >"$T/s3.out" 2>"$T/s3.log" &
PID_S3=$!
PIDS+=("$PID_S3")
wait_exit "$PID_S3"
S3=$STOPPED
check "a server for another lease field is refused, naming both scopes (exit $S3) [$(head -c 400 "$T/s3.log")]" \
    test "$S3" != hung -a "$S3" != 0 -a "$(grep -c "hands out ids for 'worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657'; this claimant asks for 'datacenter of" "$T/s3.log")" -eq 1
check "the refused server claimed no worker id" test "$(ls "$T/shared" | grep -c '^worker-')" -eq 2
stop_d "$PID_S1"
check "server s1 exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0
stop_d "$PID_S2"

# ================================================= 6. health and the clock

echo 0 >"$T/offset"
start_d clk --data-dir "$T/clk" --clock "offset-file:$T/offset" || finish
PID_C=$DPID PORT_C=$PORT
get "$PORT_C" '/v1/snowflake?count=50&format=text'
check "clock: minting before the step works ($CODE)" test "$CODE" = 200
BEFORE=$(sort -n "$T/body" | tail -n 1)
# The server reads the offset file on its own schedule: /healthz is asked
# until it answers 503 (at most BOUND s, which only ends a broken run).
echo -5000 >"$T/offset"
H503=0 HREASON=
if wait_until "$BOUND" answers "$PORT_C" /healthz 503; then
    H503=1
    HREASON=$(pyj 'j["reason"]')
fi
check "clock 5 s back: /healthz 503 (last $CODE [$(body_short)])" test "$H503" -eq 1
check "clock 5 s back: the reason mentions the clock [$HREASON]" grep -qi clock <<<"$HREASON"
get "$PORT_C" /v1/snowflake
RA=$(header Retry-After)
check "clock 5 s back: /v1/snowflake 503 with Retry-After; got $CODE, Retry-After [$RA] [$(body_short)]" \
    test "$CODE" = 503 -a -n "$RA"
echo 0 >"$T/offset"
H200=0
wait_until "$BOUND" answers "$PORT_C" /healthz 200 && H200=1
check "clock back to 0: /healthz 200 again (last $CODE [$(body_short)])" test "$H200" -eq 1
get "$PORT_C" '/v1/snowflake?count=5&format=text'
AFTER=$(head -n 1 "$T/body")
if [ "$CODE" = 200 ] && [[ $AFTER =~ ^[0-9]+$ ]] && [ "$AFTER" -gt "$BEFORE" ]; then
    ok
else
    bad "clock back to 0: minting works with ids above $BEFORE; got $CODE [$(body_short)]"
fi
stop_d "$PID_C"
check "clock server exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# ================================================= 6a. policy change-worker (C15)
# The clock stepped back 10 s: past the logical-time bound, the server claims
# another worker id whose mark is behind the clock and mints under it; the
# old id is released with its mark, which covers every id minted under it.

echo 0 >"$T/offset_cw"
start_d cw --data-dir "$T/cw" --lease "file://$T/lcw" --lease-ttl 3000 --policy change-worker \
    --clock "offset-file:$T/offset_cw" || finish
PID_CW=$DPID PORT_CW=$PORT
get "$PORT_CW" '/v1/snowflake?count=200&format=text'
check "change-worker: minting before the step works ($CODE)" test "$CODE" = 200
cp "$T/body" "$T/cw.before"
W0=$(health_worker "$PORT_CW")
LASTMS=$("$BIN" decode "$(sort -n "$T/cw.before" | tail -n 1)" | sed -n 's/.* unix_ms=\([0-9]*\).*/\1/p')
echo -10000 >"$T/offset_cw"
CHANGED=0
for _ in $(seq 100); do
    get "$PORT_CW" '/v1/snowflake?count=200&format=text'
    if [ "$CODE" = 200 ]; then
        W=$("$BIN" decode "$(head -n 1 "$T/body")" | sed -n 's/.* worker=\([0-9]*\).*/\1/p')
        cat "$T/body" >>"$T/cw.after"
        if [ "$W" != "$W0" ]; then
            CHANGED=1
            break
        fi
    fi
    sleep 0.05
done
check "change-worker: clock 10 s back, minting goes on under another worker id than $W0" \
    test "$CHANGED" -eq 1
get "$PORT_CW" /healthz
check "change-worker: /healthz 200 counting one change ($CODE [$(body_short)])" \
    test "$CODE" = 200 -a "$(pyj 'j.get("worker_changes")')" = 1
get "$PORT_CW" /metrics
check "change-worker: /metrics counts it" grep -q '^idmint_worker_changes_total 1$' "$T/body"
check "change-worker: no id twice" \
    test -z "$(cat "$T/cw.before" "$T/cw.after" | sort | uniq -d | head -1)"
"$BIN" lease list "file://$T/lcw" >"$T/cw.list" 2>&1
M0=$(sed -n "s/^worker=$W0 held=no .* mark_ms=\([0-9]*\) .*/\1/p" "$T/cw.list")
check "change-worker: worker $W0 released with a mark ($M0) at or past its last id ($LASTMS)" \
    test -n "$M0" -a "${M0:-0}" -ge "${LASTMS:-1}"
stop_d "$PID_CW"
check "change-worker server exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# ================================================= 6b. the clock stepped forward past the lease

# The wall clock steps 20 minutes forward, past the lease's wall deadline
# (a renewal's send time + TTL - margin, on the wall clock) while monotonic
# time stays well within its own (a machine resumed from suspend looks like
# this): the generator refuses to mint, and /healthz must say so rather than
# 200. The TTL is 10 minutes (renewals every 200 s), so no renewal re-anchors
# the deadline at the stepped time while this runs; with the offset gone the
# wall clock is back within the deadline and both answer 200 again.
echo 0 >"$T/offset_fw"
mkdir -p "$T/lfw"
start_d fwd --data-dir "$T/fwd" --lease "file://$T/lfw" --lease-ttl 600000 \
    --clock "offset-file:$T/offset_fw" || finish
PID_FW=$DPID PORT_FW=$PORT
get "$PORT_FW" /v1/snowflake
check "clock forward: minting works before the step ($CODE)" test "$CODE" = 200
get "$PORT_FW" /healthz
check "clock forward: /healthz 200 before the step ($CODE [$(body_short)])" test "$CODE" = 200
echo 1200000 >"$T/offset_fw"
FW503=0 FWREASON=
if wait_until "$BOUND" answers "$PORT_FW" /healthz 503; then
    FW503=1
    FWREASON=$(pyj 'j["reason"]')
fi
check "clock 20 min forward, past the lease's wall deadline: /healthz 503 (last $CODE [$(body_short)])" \
    test "$FW503" -eq 1
check "clock forward: the reason names the lease's wall-clock deadline [$FWREASON]" \
    eval '[[ $FWREASON == *lease* && $FWREASON == *wall* ]]'
get "$PORT_FW" /v1/snowflake
RA=$(header Retry-After)
check "clock forward: /v1/snowflake 503 with Retry-After; got $CODE, Retry-After [$RA] [$(body_short)]" \
    test "$CODE" = 503 -a -n "$RA"
echo 0 >"$T/offset_fw"
FW200=0
wait_until "$BOUND" answers "$PORT_FW" /healthz 200 && FW200=1
check "clock forward, offset removed: /healthz 200 again (last $CODE [$(body_short)])" \
    test "$FW200" -eq 1
get "$PORT_FW" /v1/snowflake
check "clock forward, offset removed: minting works again ($CODE [$(body_short)])" test "$CODE" = 200
stop_d "$PID_FW"
check "clock-forward server exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# ================================================= 7. SIGTERM during load

mkdir -p "$T/l7"
start_d load --data-dir "$T/load" --lease "file://$T/l7" || finish
PID_L=$DPID PORT_L=$PORT
WL=$(health_worker "$PORT_L")
python3 "$T/h.py" load "$PORT_L" "$T/load.ids" "$T/load.state" "$BOUND" >"$T/load.json" 2>"$T/load.err" &
PID_CL=$!
PIDS+=("$PID_CL")
# the signal comes once the client has had 200 answers
load_going() { [ "$(cat "$T/load.state" 2>/dev/null || echo 0)" -ge 200 ]; }
wait_until "$BOUND" load_going
stop_d "$PID_L"
check "SIGTERM under load: the server exits 0 (got $STOPPED)" test "$STOPPED" = 0
wait_exit "$PID_CL"
LJ=$(cat "$T/load.json")
note "load: $LJ"
check "SIGTERM under load: the client ran ($LJ) [$(head -c 300 "$T/load.err")]" test -n "$LJ"
jv() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], -1))' "${LJ:-{\}}" "$1" 2>/dev/null; }
check "SIGTERM under load: the client got answers before the signal ($LJ)" test "$(jv good)" -ge 100
check "SIGTERM under load: no complete answer had a bad body ($LJ)" test "$(jv badbody)" -eq 0
check "SIGTERM under load: all $(jv ids) ids unique ($LJ)" \
    test "$(jv ids)" -eq "$(jv unique)" -a "$(jv ids)" -eq $(($(jv good) * 100))
check "SIGTERM under load: the log says the lease was released [$(tail -n 3 "$T/load.log" | tr '\n' ' ')]" \
    grep -q '^idmintd: lease: released$' "$T/load.log"
# The release records the last tick the server minted as the worker id's
# mark; a server that stopped without releasing leaves its last renewal's
# mark, up to a TTL (10 s) ahead of the clock, and the next holder of the
# id must wait for the clock to pass it. So the mark the next server reads
# must cover the last id handed out and not be ahead of the clock when it
# starts: then it need not wait, which needs no stopwatch to see.
MAXL=$(sort -n "$T/load.ids" | tail -n 1)
RESTART_MS=$(now_ms)
start_d load2 --data-dir "$T/load2" --lease "file://$T/l7" || finish
PID_L2=$DPID
W2=$(health_worker "$PORT")
check "after a clean stop: the next server gets worker $WL again (got [$W2])" test "$W2" = "$WL" -a "$WL" = 0
PMARK=$(sed -n 's/^idmintd: lease: worker id [0-9]* from .* (previous mark \([0-9]*\))$/\1/p' "$T/load2.log")
get "$PORT" "/v1/decode/${MAXL:-0}"
MAXL_MS=$(pyj 'j["unix_ms"]')
check "after a clean stop: the mark the next server reads ([$PMARK]) is the last tick minted: at or above the last id's time ([$MAXL_MS]), not ahead of the clock at the restart ($RESTART_MS), so it starts without waiting out the TTL" \
    eval '[[ $PMARK =~ ^[0-9]+$ && $MAXL_MS =~ ^[0-9]+$ ]] && [ "$PMARK" -ge "$MAXL_MS" ] && [ "$PMARK" -le "$RESTART_MS" ]'
get "$PORT" /v1/snowflake?format=text
check "after a clean stop: the next holder mints above the last one's ids ($(cat "$T/body") > $MAXL)" \
    test "$CODE" = 200 -a "$(cat "$T/body")" -gt "${MAXL:-0}"
stop_d "$PID_L2"

# ================================================= 8. bearer token

TOKEN=Zq7Xw2Lp9Rt4Vb6Nm3Kc8Hs5Jd1Fg0Ya
printf '%s\n' "$TOKEN" >"$T/token"
start_d tok --data-dir "$T/tok" --token-file "$T/token" || finish
PID_TK=$DPID PORT_TK=$PORT
get "$PORT_TK" /v1/snowflake
WWW=$(header WWW-Authenticate)
check "token: no Authorization: want 401 with WWW-Authenticate: Bearer; got $CODE [$WWW]" \
    test "$CODE" = 401 -a "${WWW%% *}" = Bearer
get "$PORT_TK" /v1/snowflake -H "Authorization: Bearer ${TOKEN%?}x"
check "token: a wrong token: want 401; got $CODE" test "$CODE" = 401
get "$PORT_TK" /v1/snowflake -H "Authorization: Bearer ${TOKEN}x"
check "token: the token plus a byte: want 401; got $CODE" test "$CODE" = 401
get "$PORT_TK" /v1/snowflake -H "Authorization: Basic $TOKEN"
check "token: another scheme: want 401; got $CODE" test "$CODE" = 401
get "$PORT_TK" /v1/snowflake -H "Authorization: Bearer $TOKEN"
check "token: the right token: want 200 with one id; got $CODE [$(body_short)]" \
    pyj 'len(j["ids"]) == 1'
get "$PORT_TK" /healthz -H "Authorization: Bearer $TOKEN"
check "token: /healthz with the token: want 200; got $CODE" test "$CODE" = 200
stop_d "$PID_TK"
not_in_log() { ! grep -qF "$TOKEN" "$T/tok.log" "$T/tok.out"; }
check "token: the token never appears in the server's log or stdout" not_in_log

# Long tokens are kept and compared whole (they were cut to 255 bytes: the
# first 255 bytes of a longer token passed, the token itself did not); a
# token file longer than 4096 bytes is refused at start, never cut.
mktoken() { python3 -c 'import sys; print("".join(chr(33 + (i * 7 + i // 94) % 94) for i in range(int(sys.argv[1]))))' "$1"; }
for LEN in 305 4096; do
    LT=$(mktoken "$LEN")
    printf '%s\n' "$LT" >"$T/token$LEN"
    start_d "tok$LEN" --data-dir "$T/tok$LEN" --token-file "$T/token$LEN" || finish
    PID_LT=$DPID PORT_LT=$PORT
    get "$PORT_LT" /v1/snowflake -H "Authorization: Bearer $LT"
    check "a $LEN-byte token: the token itself: want 200; got $CODE [$(body_short)]" \
        test "$CODE" = 200
    for PRE in 255 $((LEN - 1)); do
        get "$PORT_LT" /v1/snowflake -H "Authorization: Bearer ${LT:0:PRE}"
        check "a $LEN-byte token: its first $PRE bytes: want 401; got $CODE" test "$CODE" = 401
    done
    C=${LT:255:1}
    [ "$C" = A ] && R=B || R=A
    get "$PORT_LT" /v1/snowflake -H "Authorization: Bearer ${LT:0:255}$R${LT:256}"
    check "a $LEN-byte token: byte 256 changed: want 401; got $CODE" test "$CODE" = 401
    get "$PORT_LT" /v1/snowflake -H "Authorization: Bearer ${LT}x"
    check "a $LEN-byte token: one byte more: want 401; got $CODE" test "$CODE" = 401
    stop_d "$PID_LT"
done
mktoken 4097 >"$T/token4097"
timeout 30 "$D" --listen 127.0.0.1:0 --data-dir "$T/tok4097" --token-file "$T/token4097" \
    >"$T/out" 2>"$T/err"
RC=$?
check "a 4097-byte token file: refused at start, naming the 4096-byte limit (exit $RC) [$(head -c 300 "$T/err")]" \
    eval '[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && grep -q 4096 "$T/err"'

# ================================================= 9. count-max and the layout (N5)

# With 4 ids a tick and a wait bound of 5 ms + a tick, a request for 1000
# ids could never be minted: it was a 503 with Retry-After, forever. The
# configuration lowers count-max to what the layout always mints in one
# request (--check-config shows it); count-max is minted, again and again,
# never a 503, and more is a 400 naming count-max.
EXL='time:41@1ms,datacenter:5,worker:5,seq:2'
CMX=$("$D" --check-config --layout "$EXL" --epoch 2020-01-01 2>/dev/null | sed -n 's/^count-max = //p')
check "count-max for a layout of 4 ids a tick: --check-config shows it lowered below 1000 (got [$CMX])" \
    test "${CMX:-10000}" -lt 1000
CMX=${CMX:-10000}
start_d ex --data-dir "$T/ex" --layout "$EXL" --epoch 2020-01-01 || finish
PID_EX=$DPID PORT_EX=$PORT
for C in 1000 $((CMX + 1)); do
    get "$PORT_EX" "/v1/snowflake?count=$C"
    check "count=$C with count-max $CMX: want 400 naming count and 'at most $CMX'; got $CODE [$(body_short)]" \
        eval '[ "$CODE" = 400 ] && [ "$(pyj "j[\"error\"][\"param\"]")" = count ] && pyj "\"at most $CMX,\" in j[\"error\"][\"message\"]" >/dev/null'
done
FULL=0
for _ in 1 2 3 4 5; do
    get "$PORT_EX" "/v1/snowflake?count=$CMX"
    if pyj "len(j['ids']) == $CMX" >/dev/null; then
        FULL=$((FULL + 1))
    else
        note "count=$CMX: $CODE [$(body_short)]"
    fi
done
check "count=count-max ($CMX) back to back: 5 of 5 answered 200 with $CMX ids, no 503 (got $FULL)" \
    test "$FULL" -eq 5
SMALL=0
for _ in 1 2 3 4 5; do
    get "$PORT_EX" '/v1/snowflake?count=2'
    pyj 'len(j["ids"]) == 2' >/dev/null && SMALL=$((SMALL + 1))
done
check "small requests keep working ($SMALL of 5)" test "$SMALL" -eq 5
get "$PORT_EX" /api/snowflake/get/x
check "Leaf's endpoint mints one ($CODE [$(body_short)])" test "$CODE" = 200
get "$PORT_EX" /healthz
check "count-max: /healthz stays 200 ($CODE)" test "$CODE" = 200
stop_d "$PID_EX"

# ================================================= 10. lease lost (N6, E4)
# The lock file removed under a running server: the next renewal finds the
# claim gone, minting under worker id 0 stops at once, and the server
# re-claims another worker id (never 0 again) and serves under it.

mkdir -p "$T/l10"
start_d lost --data-dir "$T/lost" --lease "file://$T/l10" --lease-ttl 1000 || finish
PID_LO=$DPID PORT_LO=$PORT
get "$PORT_LO" '/v1/snowflake?count=100&format=text'
check "lease lost: minting works first ($CODE)" test "$CODE" = 200
cp "$T/body" "$T/lost.before"
check "lease lost: the lock file worker-0000.lease exists" test -e "$T/l10/worker-0000.lease"
rm -f "$T/l10/worker-0000.lease"
# the next renewal finds the claim gone; the server re-claims
RECLAIMED=0
for _ in $(seq 100); do
    get "$PORT_LO" /healthz
    if [ "$CODE" = 200 ] && [ "$(pyj 'j.get("reclaims", 0)')" = 1 ]; then
        RECLAIMED=1
        break
    fi
    sleep 0.1
done
check "lease lost: /healthz reports one re-claim ($CODE [$(body_short)])" test "$RECLAIMED" -eq 1
WNEW=$(pyj 'j["worker"]')
check "lease lost: re-claimed another worker id than 0 (got [$WNEW])" test -n "$WNEW" -a "$WNEW" != 0
check "lease lost: /healthz counts the loss" test "$(pyj 'j["losses"]')" = 1
get "$PORT_LO" /metrics
check "lease lost: /metrics counts the re-claim" grep -q '^idmint_lease_reclaims_total 1$' "$T/body"
check "lease lost: /metrics shows the new worker id" grep -q "^idmint_lease_worker $WNEW\$" "$T/body"
# Another server now claims worker id 0 (its lock file is free) and mints
# with it: the old holder must never mint under 0 again.
start_d lost2 --data-dir "$T/lost2" --lease "file://$T/l10" --lease-ttl 1000 || finish
PID_LO2=$DPID PORT_LO2=$PORT
WLO2=$(health_worker "$PORT_LO2")
check "lease lost: a new server claims the freed worker id 0 (got [$WLO2])" test "$WLO2" = 0
get "$PORT_LO2" '/v1/snowflake?count=100&format=text'
check "lease lost: the new holder of worker 0 mints ($CODE)" test "$CODE" = 200
cp "$T/body" "$T/lost2.ids"
get "$PORT_LO" '/v1/snowflake?count=100&format=text'
check "lease lost: the old holder mints under its new worker id ($CODE)" test "$CODE" = 200
cp "$T/body" "$T/lost.after"
OLDW=$(for id in $(head -n 5 "$T/lost.after"); do "$BIN" decode "$id" | sed -n 's/.* worker=\([0-9]*\).*/\1/p'; done | sort -u)
check "lease lost: the old holder's ids carry worker $WNEW only (got [$OLDW])" test "$OLDW" = "$WNEW"
check "lease lost: no id twice among both servers' ids" \
    test -z "$(cat "$T/lost.before" "$T/lost.after" "$T/lost2.ids" | sort | uniq -d | head -1)"
stop_d "$PID_LO2"
check "lease lost: the new holder exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
alive "$PORT_LO" "lease lost"
check "lease lost: the server is still running" kill -0 "$PID_LO"
stop_d "$PID_LO"
check "lease lost: exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0

# ================================================= 11. configuration

"$D" --check-config >"$T/out" 2>"$T/err"
RC=$?
MISSING=
for k in listen data-dir lease lease-ttl store layout epoch policy node lease-field count-max \
    token-file idle-timeout max-request threads max-connections clock segment-wait store-timeout; do
    grep -q "^$k = " "$T/out" || MISSING="$MISSING $k"
done
check "--check-config: exit 0 and a 'key = value' line for every key (missing:$MISSING); $(show)" \
    test "$RC" -eq 0 -a -z "$MISSING"
"$D" --check-config --count-max 7 --listen 127.0.0.1:9 >"$T/out" 2>"$T/err"
check "--check-config shows flags' values" grep -q '^count-max = 7$' "$T/out"
"$D" --bogus 1 >"$T/out" 2>"$T/err"
RC=$?
check "an unknown flag: exit 2 with one stderr line naming it; $(show)" \
    eval '[ "$RC" -eq 2 ] && one_err_line && grep -q -- "--bogus" "$T/err" && [ ! -s "$T/out" ]'
IDMINT_BOGUS=1 "$D" >"$T/out" 2>"$T/err"
RC=$?
check "IDMINT_BOGUS=1: exit 2 with one stderr line naming it; $(show)" \
    eval '[ "$RC" -eq 2 ] && one_err_line && grep -q IDMINT_BOGUS "$T/err" && [ ! -s "$T/out" ]'
"$D" --count-max 0 >"$T/out" 2>"$T/err"
RC=$?
check "--count-max 0: exit 2 with one stderr line naming count-max; $(show)" \
    eval '[ "$RC" -eq 2 ] && one_err_line && grep -q count-max "$T/err"'
"$D" --listen "127.0.0.1:$PORT_A" --data-dir "$T/busy" >"$T/out" 2>"$T/err" &
PB=$!
PIDS+=("$PB")
wait_exit "$PB"
RC=$STOPPED
check "--listen on a port in use: exit 1 with a message naming the address; $(show)" \
    eval '[ "$RC" = 1 ] && grep -q "127.0.0.1:$PORT_A" "$T/err"'
alive "$PORT_A" "after another server failed to take its port"

stop_d "$PID_A"
check "server a exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
check "server a's log ends with 'stopped'" test "$(tail -n 1 "$T/a.log")" = "idmintd: stopped"

finish
