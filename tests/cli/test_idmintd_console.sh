#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Black-box tests of idmintd's web console side over real sockets: the
# tools' endpoints (/v1/plan, /v1/estimate, /v1/birthday) answer exactly
# what `idmint TOOL --json` prints with the same options, byte for byte;
# their parameters are checked (unknown, repeated, a flag's value, bytes
# outside the value alphabet, percent-encoding, '+') with a 400 naming the
# parameter, and what the CLI refuses is a 400 with the CLI's own message;
# /v1/status's document (the lease from the embedded default coordinator,
# the clock offset following an offset-file clock stepped by the test, ids
# minted and their rates, health the very reason /healthz gives); decode's
# layout= and ObjectIds; the console's static files at /ui/ (no token, the
# CSP, nosniff and no-cache headers, HEAD, 404, the /ui redirect, none on
# the admin listener) while /v1/* needs the bearer token.
#
# Usage: bash test_idmintd_console.sh /path/to/build/idmint  (idmintd is its
# sibling). Needs curl and python3. Ends with one line "N passed, N failed".
# No check measures time: the status is polled until it shows what a step
# of the clock or a mint must make it show (at most lib_idmintd.sh's BOUND).

set -u

exec 3>&2
FAIL_FD=3
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"

UI_SRC="$(cd "$(dirname "$0")/../../src/server/ui" && pwd)"


TOKEN=console-test-token-0123456789
printf '%s\n' "$TOKEN" >"$T/token"
AUTH=(-H "Authorization: Bearer $TOKEN")
# aget PATH [CURL ARGS...]: get with the token, on the server under test.
aget() {
    local path=$1
    shift
    get "$PORT" "$path" "${AUTH[@]}" "$@"
}
# metric NAME: the value of the metric line starting with NAME.
metric() {
    curl -sg --max-time 10 "${AUTH[@]}" "http://127.0.0.1:$PORT/metrics" 2>/dev/null |
        awk -v m="$1" 'index($0, m " ") == 1 { print $2 }'
}

echo 0 >"$T/offset"
start_d con --data-dir "$T/data" --token-file "$T/token" --clock "offset-file:$T/offset" \
    --admin-listen 127.0.0.1:0 || finish
PID=$DPID
ADMIN=$(sed -n 's|^idmintd: admin: .* on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$T/con.log")

# ================================================= 1. the tools, byte for byte

# same QUERY TOOL ARGS...: GET /v1/TOOL?QUERY is 200 with exactly what
# `idmint TOOL --json ARGS` prints.
same() {
    local q=$1 tool=$2
    shift 2
    "$BIN" "$tool" --json "$@" >"$T/cli" 2>"$T/cli.err"
    local rc=$?
    aget "/v1/$tool${q:+?$q}"
    if [ "$rc" -eq 0 ] && [ "$CODE" = 200 ] && cmp -s "$T/cli" "$T/body" &&
        [ "$(header Content-Type)" = application/json ]; then
        ok
    else
        bad "/v1/$tool?$q: want 200 with idmint $tool --json $* (rc $rc: $(head -c 200 "$T/cli")); got $CODE [$(body_short)]"
    fi
}
same 'layout=twitter&at=2026-01-01T00:00:00Z' plan --layout=twitter --at=2026-01-01T00:00:00Z
same 'layout=sonyflake&workers=300&peak=100000&node=machine=3&at=2030-06-01T12:00:00Z' plan \
    --layout=sonyflake --workers=300 --peak=100000 --node=machine=3 --at=2030-06-01T12:00:00Z
same 'layout=time:41@1ms,datacenter:4,worker:6,seq:12&epoch=2020-01-01T00:00:00Z&node=datacenter=1&node=worker=7&at=1767225600000' \
    plan --layout=time:41@1ms,datacenter:4,worker:6,seq:12 --epoch=2020-01-01T00:00:00Z \
    --node=datacenter=1 --node=worker=7 --at=1767225600000
same 'rate=200000&processes=400&skew=5&surge=2&rows=100000000000&indexes=1&layout=twitter' \
    estimate --rate=200000 --processes=400 --skew=5 --surge=2 --rows=100000000000 --indexes=1 \
    --layout=twitter
same 'rate=5000&processes=20&layout=sonyflake&epoch=2024-01-01' estimate --rate=5000 \
    --processes=20 --layout=sonyflake --epoch=2024-01-01
same 'bits=74&rate=1000&duration=10000y&points=60&per-ms' birthday --bits=74 --rate=1000 \
    --duration=10000y --points=60 --per-ms
same 'bits=64&rate=1000&duration=1y' birthday --bits=64 --rate=1000 --duration=1y
same 'bits=122&rate=1000000&duration=100y&points=2&per-ms=0' birthday --bits=122 --rate=1000000 \
    --duration=100y --points=2
same 'bits=80&rate=1&duration=1d&per-ms=true' birthday --bits=80 --rate=1 --duration=1d --per-ms
aget '/v1/plan?layout=twitter&at=2026-01-01T00:00:00Z' -I
check "HEAD /v1/plan: 200 with the JSON type ($CODE)" test "$CODE" = 200

# ================================================= 2. bad parameters
# refused PATH?QUERY PARAM: 400, a JSON error naming PARAM. N400S counts
# the 400s asked for.
N400S=0
refused() {
    N400S=$((N400S + 1))
    aget "$1"
    local p
    p=$(pyj 'j["error"]["param"]')
    if [ "$CODE" = 400 ] && [ "$p" = "$2" ]; then
        ok
    else
        bad "$1: want 400 naming $2; got $CODE [$(body_short)]"
    fi
}
N400=$(metric 'idmint_http_requests_total{code="400"}')
MINTED=$(metric 'idmint_ids_minted_total{kind="snowflake"}')
refused '/v1/plan?nope=1' nope
refused '/v1/plan?json' json
refused '/v1/plan?help=1' help
refused '/v1/birthday?bits=64&rate=1&duration=1d&plot=chart.svg' plot
refused '/v1/estimate?rate=1&rate=2' rate
refused '/v1/plan?layout=twitter&layout=discord' layout
refused '/v1/birthday?bits=64&rate=1&duration=1d&per-ms&per-ms' per-ms
refused '/v1/birthday?bits=64&rate=1&duration=1d&per-ms=yes' per-ms
refused '/v1/birthday?bits=64&rate=1&duration=1d&per-ms=2' per-ms
refused '/v1/plan?layout=' layout
refused '/v1/plan?at' at
refused '/v1/plan?layout=twit%74er' layout
refused '/v1/plan?at=2026-01-01T00:00:00%2B00:00' at
refused '/v1/plan?at=2026-01-01T00:00:00+00:00' at
refused '/v1/plan?layout="twitter"' layout
refused '/v1/plan?layout=tw%C3%A9' layout
refused "/v1/plan?layout=tw$(printf '\303\251')" layout
refused '/v1/plan?layout=twitter&' ''
N400S=$((N400S + 1))
aget '/v1/plan?nope=1'
check "an unknown parameter's message lists the tool's: [$(body_short)]" \
    grep -q "unknown parameter 'nope' for /v1/plan: it takes layout, epoch, workers, peak, node, at" "$T/body"

# cli_refused QUERY TOOL ARGS...: 400 with the message `idmint TOOL ARGS`
# prints (exit 2), its "idmint: TOOL: " prefix dropped, and no param.
cli_refused() {
    local q=$1 tool=$2
    shift 2
    N400S=$((N400S + 1))
    "$BIN" "$tool" --json "$@" >/dev/null 2>"$T/cli.err"
    local rc=$? want msg p
    want=$(sed "s/^idmint: $tool: //" "$T/cli.err" | head -n 1)
    aget "/v1/$tool?$q"
    msg=$(pyj 'j["error"]["message"]')
    p=$(pyj '"param" in j["error"]' && echo has)
    if [ "$rc" -eq 2 ] && [ "$CODE" = 400 ] && [ "$msg" = "$want" ] && [ -z "$p" ]; then
        ok
    else
        bad "/v1/$tool?$q: want 400 with [$want] (the CLI's rc $rc); got $CODE [$(body_short)]"
    fi
}
cli_refused 'layout=nope' plan --layout=nope
cli_refused 'node=worker=3,' plan --node=worker=3,
cli_refused 'node=nope=1' plan --node=nope=1
cli_refused 'workers=0' plan --workers=0
cli_refused 'rate=-5' estimate --rate=-5
cli_refused 'bits=64&rate=1&duration=1d&points=1' birthday --bits=64 --rate=1 --duration=1d --points=1
cli_refused 'bits=64&rate=1&duration=1d&points=501' birthday --bits=64 --rate=1 --duration=1d \
    --points=501
cli_refused 'bits=64&rate=x' birthday --bits=64 --rate=x
# The platform's ordinal (a lock for the whole process) and a plot (a file
# written) are the CLI's, never the server's.
N400S=$((N400S + 1))
aget '/v1/plan?node=worker=ordinal'
check "plan with node=worker=ordinal: 400, not available here ($CODE [$(body_short)])" \
    pyj '"ordinal" in j["error"]["message"] and "not available here" in j["error"]["message"]'

N400B=$(metric 'idmint_http_requests_total{code="400"}')
MINTEDB=$(metric 'idmint_ids_minted_total{kind="snowflake"}')
check "the 400s are counted in the metrics ($N400 -> $N400B, $N400S asked)" \
    test "$((N400B - N400))" -eq "$N400S"
check "the tools mint nothing ($MINTED -> $MINTEDB)" test "$MINTED" = "$MINTEDB"

# ================================================= 3. decode
# A UUID, a ULID or an ObjectId, however it is spelled: the answer is
# `idmint decode --json`'s, byte for byte.
for id in 507f1f77bcf86cd799439011 507F1F77BCF86CD799439011 \
    017F22E2-79B0-7CC3-98C4-DC0C0C07398F 919108f7-52d1-4320-cbac-f847db4148a8 \
    01arz3ndektsv4rrffq69g5fav 7ZZZZZZZZZZZZZZZZZZZZZZZZZ; do
    aget "/v1/decode/$id"
    "$BIN" decode --json "$id" >"$T/cli"
    check "decode of $id: as idmint decode --json ($CODE [$(body_short)])" cmp -s "$T/cli" "$T/body"
done
refused /v1/decode/01ARZ3NDEKTSV4RRFFQ69G5FAU id
check "a bad ULID: the command's message ($(body_short))" \
    pyj '"bad ULID" in j["error"]["message"] and "Crockford" in j["error"]["message"]'
aget '/v1/decode/1541815603606036480?layout=sonyflake'
check "decode in layout=sonyflake: its fields ($CODE [$(body_short)])" \
    pyj 'j["layout"] == "sonyflake" and j["machine"] == 40960 and j["seq"] == 23 and j["unix_ms"] == 2328523313620'
aget '/v1/decode/1541815603606036480?layout=time:39@10ms,worker:16,seq:8&epoch=2014-09-01T00:00:00Z'
check "decode in a text layout: named by its text ($CODE [$(body_short)])" \
    pyj 'j["layout"] == "time:39@10ms,worker:16,seq:8" and j["worker"] == 6048'
refused '/v1/decode/1?layout=nope' layout
refused '/v1/decode/1?layout=time:41@1ms,seq:22' epoch
refused '/v1/decode/1?epoch=later' epoch

# ================================================= 4. the token and /ui/
get "$PORT" /v1/status
check "/v1/status without the token: 401 ($CODE)" test "$CODE" = 401
get "$PORT" '/v1/plan?layout=twitter'
check "/v1/plan without the token: 401 ($CODE)" test "$CODE" = 401
CSP="default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"
# ui_file PATH FILE TYPE: PATH is 200 without a token, FILE's bytes, TYPE,
# and the console's headers.
ui_file() {
    get "$PORT" "$1"
    local why=
    [ "$CODE" = 200 ] || why="status $CODE"
    cmp -s "$T/body" "$UI_SRC/$2" || why="$why; not the bytes of $2"
    [ "$(header Content-Type)" = "$3" ] || why="$why; type [$(header Content-Type)]"
    [ "$(header Content-Security-Policy)" = "$CSP" ] || why="$why; CSP [$(header Content-Security-Policy)]"
    [ "$(header X-Content-Type-Options)" = nosniff ] || why="$why; no nosniff"
    [ "$(header Cache-Control)" = no-cache ] || why="$why; Cache-Control [$(header Cache-Control)]"
    if [ -z "$why" ]; then ok; else bad "GET $1 (no token): $why"; fi
}
ui_file /ui/ index.html 'text/html; charset=utf-8'
ui_file /ui/index.html index.html 'text/html; charset=utf-8'
ui_file /ui/status.html status.html 'text/html; charset=utf-8'
ui_file '/ui/status.html?every=200' status.html 'text/html; charset=utf-8'
ui_file /ui/console.css console.css 'text/css; charset=utf-8'
ui_file /ui/console.js console.js 'text/javascript; charset=utf-8'
ui_file /ui/favicon.svg favicon.svg 'image/svg+xml'
for f in "$UI_SRC"/*; do
    get "$PORT" "/ui/${f##*/}"
    check "/ui/${f##*/}: 200 with its bytes ($CODE)" cmp -s "$T/body" "$f"
done
# (curl -I writes the head where the body would go: the body's size is
# what curl read after the head)
HEAD=$(curl -sg --max-time 10 -I -o /dev/null -D "$T/hdr" -w '%{http_code} %{size_download}' \
    "http://127.0.0.1:$PORT/ui/")
check "HEAD /ui/: 200, no body, the length of index.html ($HEAD, $(header Content-Length))" \
    test "$HEAD" = "200 0" -a "$(header Content-Length)" = "$(wc -c <"$UI_SRC/index.html")"
get "$PORT" /ui
check "/ui: 301 to /ui/ ($CODE, Location [$(header Location)])" \
    test "$CODE" = 301 -a "$(header Location)" = /ui/
get "$PORT" /ui/nope.html
check "/ui/nope.html: 404 with the headers ($CODE)" \
    test "$CODE" = 404 -a "$(header X-Content-Type-Options)" = nosniff
get "$PORT" /ui/ -X POST
check "POST /ui/: 405 ($CODE)" test "$CODE" = 405
get "$ADMIN" /ui/
check "/ui/ on the admin listener (port $ADMIN): 404 ($CODE)" test -n "$ADMIN" -a "$CODE" = 404

# ================================================= 5. /v1/status
aget /v1/status
check "/v1/status: 200 ($CODE [$(body_short)])" test "$CODE" = 200
VERSION=$("$BIN" --version | awk '{ print $2 }')
check "status: version, now, uptime, health ok" \
    pyj "j['version'] == '$VERSION' and j['now'].endswith('Z') and j['now_ms'] > 0 and j['uptime_s'] >= 0 and j['health'] == {'ok': True, 'reason': None, 'warnings': []}"
check "status: the layout" \
    pyj "j['layout'] == {'name': 'twitter', 'text': 'time:41@1ms,datacenter:5,worker:5,seq:12', 'epoch_ms': 1288834974657, 'epoch': '2010-11-04T01:42:54.657Z', 'tick_ms': 1}"
check "status: the lease held, from the default coordinator [$(body_short)]" \
    pyj "j['lease']['state'] == 'held' and j['lease']['coordinator'] == 'file://$T/data/leases' and j['lease']['field'] == 'worker' and j['lease']['lost_reason'] is None and j['worker_id'] == j['node']['worker'] and j['node']['datacenter'] == 0 and j['lease']['ttl_ms'] == 10000 and j['lease']['renewals'] >= 1 and j['lease']['last_error'] is None"
check "status: the deadline ahead, in wall time" \
    pyj "0 < j['lease']['deadline_in_ms'] <= 10000 and __import__('datetime').datetime.strptime(j['lease']['deadline'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=__import__('datetime').timezone.utc).timestamp() * 1000 - j['now_ms'] - j['lease']['deadline_in_ms'] in range(-2, 3)"
check "status: the clock, minted and rates keys" \
    pyj "set(j['clock']) == {'offset_ms', 'last_step_ms', 'steps', 'drift_ppm', 'stepped', 'drifting'} and set(j['minted']) == {'snowflake', 'segment', 'uuid7', 'uuid4', 'ulid', 'total'} and j['rates']['interval_s'] == 1 and len(j['rates']['ids_per_s']) <= 60"

# minted: the counts and a rate move after minting
aget '/v1/snowflake?count=500'
aget '/v1/uuid7?count=20'
aget '/v1/ulid?count=3'
# status_shows EXPR: /v1/status answers 200 and EXPR holds of it.
status_shows() { aget /v1/status && [ "$CODE" = 200 ] && pyj "$1" >/dev/null; }
check "status: minted counts the ids [$(body_short)]" \
    status_shows "j['minted']['snowflake'] == 500 and j['minted']['uuid7'] == 20 and j['minted']['ulid'] == 3 and j['minted']['total'] == 523"
check "status: a rate above 0 within $BOUND s [$(body_short)]" \
    wait_until "$BOUND" status_shows "max(j['rates']['ids_per_s'] + [0]) > 0"
check "status: avg_60s and last are numbers" \
    pyj "isinstance(j['rates']['avg_60s'], (int, float)) and isinstance(j['rates']['last'], (int, float)) and j['rates']['avg_60s'] > 0"

# the clock: stepped 5 s back through the offset file, the status follows
echo -5000 >"$T/offset"
check "status: the offset -5000 ms and a step within $BOUND s [$(body_short)]" \
    wait_until "$BOUND" status_shows "j['clock']['offset_ms'] in range(-5100, -4899) and j['clock']['steps'] >= 1 and j['clock']['stepped'] and j['clock']['last_step_ms'] in range(-5100, -4899)"
# health: the clock is behind the last tick; /v1/status gives /healthz's reason
get "$PORT" /healthz "${AUTH[@]}"
HREASON=$(pyj 'j["reason"]' | tr -d 0-9)
aget /v1/status
SREASON=$(pyj 'j["health"]["reason"]' | tr -d 0-9)
# (the reasons name how far behind the clock is when asked: digits aside)
check "status: health not ok with /healthz's reason [$HREASON] [$SREASON]" \
    test -n "$HREASON" -a "$HREASON" = "$SREASON"
check "status: health ok false" pyj "j['health']['ok'] is False"
echo 0 >"$T/offset"
check "status: the offset back to 0, two steps, health ok within $BOUND s [$(body_short)]" \
    wait_until "$BOUND" status_shows "j['clock']['offset_ms'] in range(-100, 101) and j['clock']['steps'] >= 2 and j['clock']['last_step_ms'] in range(4899, 5101) and j['health']['ok']"

get "$PORT" /v1/status -I "${AUTH[@]}"
check "HEAD /v1/status: 200 ($CODE)" test "$CODE" = 200

stop_d "$PID"
check "idmintd exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
check "the token never appears in the log" sh -c "! grep -q '$TOKEN' '$T/con.log'"

# ================================================= 6. a lease lost and re-claimed
# A file:// coordinator named by the lease key; its lock file removed under
# the server: the next renewal finds the claim gone, the server re-claims,
# and the status counts the loss and shows the new worker id held.
mkdir -p "$T/l6"
start_d lost --data-dir "$T/lost" --lease "file://$T/l6" --lease-ttl 1000 || finish
PID=$DPID
aget /v1/status
check "status: the lease key's coordinator, worker 0 held [$(body_short)]" \
    pyj "j['lease']['coordinator'] == 'file://$T/l6' and j['worker_id'] == 0 and j['lease']['state'] == 'held' and j['lease']['ttl_ms'] == 1000 and j['lease']['losses'] == 0"
rm -f "$T/l6/worker-0000.lease"
check "status: the loss counted, another worker id held within $BOUND s [$(body_short)]" \
    wait_until "$BOUND" status_shows "j['lease']['losses'] == 1 and j['lease']['reclaims'] == 1 and j['worker_id'] not in (None, 0) and j['node']['worker'] == j['worker_id'] and j['lease']['state'] == 'held'"
stop_d "$PID"

finish
