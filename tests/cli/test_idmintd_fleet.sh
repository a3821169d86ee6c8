#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmintd under load through what happens to a fleet over time, on a real
# etcd (etcd://) that this script starts on a free loopback port
# (scripts/etcd-test-server.sh) and always stops. Three load clients ask
# for 50 ids at a time the whole run, following the servers from restart to
# restart; every id any server answered, in every step, is checked at the
# end of each step: no id twice, and each worker id's ids increasing in the
# order each client got them. All servers share one key prefix, so that
# the coordinator, not luck, keeps their worker ids apart (the clock step
# of step 4 would make ids of two prefixes collide).
#
#   1. E12r: idmintd killed with kill -9 under load and started again at
#      once on its data directory: /healthz "claim":"reattached", the same
#      worker id, and it serves at once: its first ids are below the mark
#      the coordinator held before the kill (no wait for it).
#   2. E28: etcd frozen (SIGSTOP), idmintd killed and started again: it
#      starts, /healthz "claim":"offline" with a warning, serves under the
#      saved claim, no id at or past the saved deadline, then 503 naming
#      the lease. Started again past the deadline, or with another boot id
#      (IDMINT_BOOT_ID_FILE), it refuses to start with one clear line. In a
#      second round etcd comes back before the deadline: the server
#      reattaches (no warning, idmint_lease_offline 0) and serves on under
#      the same worker id past the saved deadline.
#   3. E4: `etcdctl del <prefix>/workers/N` under load (a second server
#      beside it): the loss is logged, the server re-claims another worker
#      id (/healthz reclaims 1, losses 1; /metrics), load goes on; no
#      request sent after the loss was logged is answered under N, and N's
#      mark in etcd covers every id answered under it.
#   4. C15: --policy change-worker, the offset clock stepped back 10 s under
#      load: worker_changes 1, another worker id, the old one released with
#      a mark that covers its ids.
#
# Notes give, for step 3, the time from the loss to the first id under the
# new worker id, as the server logged it and as the clients saw it.
#
# Usage: bash test_idmintd_fleet.sh /path/to/build/idmint  (idmintd is its
# sibling). Needs etcd, etcdctl, curl and python3. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed. No check
# measures how long anything took: deadlines are checked on the times the
# answered ids carry against what the claim file and etcd recorded.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
IDMD_NEEDS="etcd etcdctl timeout"
# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"

SERVER="$(cd "$(dirname "$0")/../.." && pwd)/scripts/etcd-test-server.sh"
# etcd's watcher follows this shell: it dies with it.
export IDM_ETCD_OWNER=$$
EPID=
# The EXIT trap: etcd resumed (a check may end the script while it is
# frozen) and stopped, then lib_idmintd.sh's cleanup (servers, clients, $T).
fleet_cleanup() {
    [ -n "$EPID" ] && kill -CONT "$EPID" 2>/dev/null
    bash "$SERVER" stop "$T/e" >/dev/null 2>&1
    cleanup
}
trap fleet_cleanup EXIT

# Notes are always printed: the switch times are the figures this gives.
note() { printf 'note: %s\n' "$*" >&3; }

TTL=3000
PFX=/fleet
START=$(now_ms)

mkdir -p "$T/e"
if ! EP=$(bash "$SERVER" start "$T/e" 1 2>"$T/e.err"); then
    bad "cannot start etcd: $(tail -n 5 "$T/e.err")"
    finish
fi
EPID=$(bash "$SERVER" pid "$T/e" 1)
URL="etcd://$EP$PFX"
ctl() { ETCDCTL_API=3 etcdctl --endpoints="$EP" --dial-timeout=2s --command-timeout=5s "$@"; }

# The load clients and the queries over what they got, in Python.
cat >"$T/fleet.py" <<'PY'
"""Load clients for idmintd and queries over their answers.

Each answer is one line of the client's log:
  SEND_MS RECV_MS STATUS PORT WHAT
WHAT is the ids (comma-separated) of a 200, else the body's start (spaces
made '_'), or the exception's name (STATUS 0). Ids are decoded with the
twitter layout idmintd serves by default (time:41@1ms since its epoch,
datacenter:5, worker:5, seq:12); the script checks that against idmint
decode."""
import http.client, os, sys, time

EPOCH = 1288834974657


def dec(i):
    return (i >> 22) + EPOCH, (i >> 12) & 31


def load(portfile, out, stopfile, bound):
    """Ask the server whose port is in portfile (read before each request,
    so a restarted server is followed) for 50 ids, again and again, until
    stopfile exists or bound seconds passed."""
    end = time.time() + float(bound)
    conn, port = None, None
    with open(out, "a") as f:
        while time.time() < end and not os.path.exists(stopfile):
            try:
                p = open(portfile).read().strip()
            except OSError:
                p = ""
            if not p:
                time.sleep(0.02)
                continue
            if p != port or conn is None:
                if conn is not None:
                    conn.close()
                port, conn = p, http.client.HTTPConnection("127.0.0.1", int(p), timeout=5)
            t0 = time.time()
            try:
                conn.request("GET", "/v1/snowflake?count=50&format=text")
                r = conn.getresponse()
                body, st = r.read(), r.status
            except Exception as e:  # a killed server, a refused connection
                body, st = type(e).__name__.encode(), 0
                conn.close()
                conn = None
            t1 = time.time()
            if st == 200:
                what = ",".join(body.decode().split())
            else:
                what = "_".join(body.decode(errors="replace").split())[:200] or "-"
            f.write("%d %d %d %s %s\n" % (t0 * 1000, t1 * 1000, st, port, what))
            f.flush()
            # Load, not a flood: the machine runs other tests too.
            time.sleep(0.01 if st == 200 else 0.03)


def answers(files):
    """(client, send, recv, status, port, what) of every whole line."""
    for c, fn in enumerate(files):
        with open(fn) as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                p = line.rstrip("\n").split(" ", 4)
                if len(p) == 5:
                    yield c, int(p[0]), int(p[1]), int(p[2]), p[3], p[4]


def ids(what):
    return [int(x) for x in what.split(",")]


def cmd_span(port, lo, hi, files):
    """Answers from port sent in [lo, hi]: n200 n503 nother min_time
    max_time workers first_503_text."""
    n = {200: 0, 503: 0, 0: 0}
    tmin, tmax, ws, why = None, None, set(), "-"
    for _, s, _, st, p, what in answers(files):
        if p != port or s < int(lo) or s > int(hi):
            continue
        if st == 200:
            n[200] += 1
            for i in ids(what):
                t, w = dec(i)
                ws.add(w)
                tmin = t if tmin is None or t < tmin else tmin
                tmax = t if tmax is None or t > tmax else tmax
        elif st == 503:
            n[503] += 1
            if why == "-":
                why = what
        else:
            n[0] += 1
    print(n[200], n[503], n[0], tmin or 0, tmax or 0,
          ",".join(str(w) for w in sorted(ws)) or "-", why)


def cmd_worker(w, files):
    """Answers under worker w: n first_send last_send first_recv last_recv
    min_time max_time."""
    w = int(w)
    r = None
    for _, s, rc, st, _, what in answers(files):
        if st != 200:
            continue
        xs = [dec(i) for i in ids(what)]
        xs = [t for t, ww in xs if ww == w]
        if not xs:
            continue
        v = [1, s, s, rc, rc, min(xs), max(xs)]
        if r is None:
            r = v
        else:
            r = [r[0] + 1, min(r[1], s), max(r[2], s), min(r[3], rc), max(r[4], rc),
                 min(r[5], v[5]), max(r[6], v[6])]
    print(*(r or [0, 0, 0, 0, 0, 0, 0]))


def cmd_sentafter(w, ms, files):
    """Answers sent at or after ms that hold an id under worker w."""
    w, ms, n = int(w), int(ms), 0
    for _, s, _, st, _, what in answers(files):
        if st == 200 and s >= ms and any(dec(i)[1] == w for i in ids(what)):
            n += 1
    print(n)


def cmd_past(w, ms, files):
    """Ids under worker w whose time is past ms."""
    w, ms, n = int(w), int(ms), 0
    for _, _, _, st, _, what in answers(files):
        if st == 200:
            n += sum(1 for i in ids(what) if dec(i)[1] == w and dec(i)[0] > ms)
    print(n)


def cmd_check(files):
    """Every id answered: total, how many repeated, and the first place
    where a worker id's ids did not increase within one client."""
    seen, dups, total, bad = set(), 0, 0, "-"
    last = {}
    for c, _, _, st, p, what in answers(files):
        if st != 200:
            continue
        for i in ids(what):
            total += 1
            if i in seen:
                dups += 1
            seen.add(i)
            k = (c, dec(i)[1])
            if k in last and i <= last[k] and bad == "-":
                bad = "client %d port %s: %d after %d" % (c + 1, p, i, last[k])
            last[k] = i
    print(total, dups, bad)


def cmd_first(files):
    """The first id answered: id unix_ms worker."""
    for _, _, _, st, _, what in answers(files):
        if st == 200:
            i = ids(what)[0]
            print(i, *dec(i))
            return
    print("0 0 0")


if __name__ == "__main__":
    c, a = sys.argv[1], sys.argv[2:]
    if c == "load":
        load(*a)
    elif c == "span":
        cmd_span(a[0], a[1], a[2], a[3:])
    elif c == "worker":
        cmd_worker(a[0], a[1:])
    elif c == "sentafter":
        cmd_sentafter(a[0], a[1], a[2:])
    elif c == "past":
        cmd_past(a[0], a[1], a[2:])
    elif c == "check":
        cmd_check(a)
    elif c == "first":
        cmd_first(a)
    else:
        sys.exit("unknown command " + c)
PY

# q COMMAND ARGS...: a query over every client's answers so far.
q() { python3 "$T/fleet.py" "$@" "$T"/ld1.log "$T"/ld2.log "$T"/ld3.log 2>>"$T/py.err"; }
# span PORT [FROM_MS]: q span, into N200 N503 NOTHER TMIN TMAX WORKERS WHY.
span() {
    # shellcheck disable=SC2034 # some fields are for the messages only
    read -r N200 N503 NOTHER TMIN TMAX WORKERS WHY < <(q span "$1" "${2:-0}" 99999999999999)
}
# served PORT N: the clients have N answers 200 from PORT.
served() { span "$1"; [ "${N200:-0}" -ge "$2" ]; }
# set_port FILE PORT: point the clients reading FILE at PORT.
set_port() { printf '%s\n' "$2" >"$T/$1.tmp" && mv "$T/$1.tmp" "$T/$1"; }
# jf KEY: the top-level KEY of the last body (JSON): a list as JSON, other
# values as they are; fails if the body is no JSON or has no KEY.
jf() {
    python3 -c '
import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2])
if v is None:
    sys.exit(1)
print(json.dumps(v) if isinstance(v, (list, dict)) else v)
' "$T/body" "$1" 2>/dev/null
}
# metric PORT NAME: the value of metric NAME.
metric() {
    curl -sg --max-time 10 "http://127.0.0.1:$1/metrics" 2>/dev/null |
        awk -v m="$2" 'index($0, m " ") == 1 { print $2 }'
}
# healthy PORT KEY VALUE: /healthz answers 200 with KEY = VALUE now.
healthy() { get "$1" /healthz && [ "$CODE" = 200 ] && [ "$(jf "$2")" = "$3" ]; }
# unhealthy PORT TEXT: /healthz answers 503 with TEXT in its reason now.
unhealthy() { get "$1" /healthz && [ "$CODE" = 503 ] && grep -qF -- "$2" <<<"$(jf reason)"; }
# claim_file DIR: the claim file idmintd keeps in DIR/claims.
claim_file() {
    local f
    for f in "$1"/claims/claim-*; do
        [[ $f =~ /claim-[0-9a-f]+-[0-9]+$ ]] && [ -f "$f" ] && printf '%s\n' "$f" && return 0
    done
    return 1
}
# claim_field DIR KEY: KEY's value in DIR's claim file.
claim_field() {
    tr ' ' '\n' <"$(claim_file "$1")" 2>/dev/null | sed -n "s/^$2=//p" | head -n 1
}
# changed FILE OLD: FILE's text is no longer OLD.
changed() { [ "$(cat "$1" 2>/dev/null)" != "$2" ]; }
# wait_renewal DIR: wait until the server on DIR has rewritten its claim
# file once more (a renewal went through: the saved deadline is as far
# ahead as it gets).
wait_renewal() {
    local f first
    wait_until "$BOUND" claim_file "$1" >/dev/null
    f=$(claim_file "$1")
    first=$(cat "$f" 2>/dev/null)
    waits "a renewal rewrites the claim file in $1/claims" changed "$f" "$first"
}
# mark_of WORKER: the mark etcd records for WORKER (lease list).
mark_of() {
    "$BIN" lease list "$URL" 2>/dev/null | sed -n "s/^worker=$1 .* mark_ms=\([0-9]*\) .*/\1/p"
}
# serve NAME DIR ARGS...: idmintd on the fleet's lease, data directory DIR
# (lib_idmintd.sh's start_d: DPID, PORT, its log $T/NAME.log).
serve() {
    local name=$1 dir=$2
    shift 2
    start_d "$name" --data-dir "$dir" --lease "$URL" --lease-ttl "$TTL" "$@"
}
# refuses NAME DIR TEXT [ENV=VALUE...]: idmintd on DIR (with ENV) exits
# non-zero by itself, its last line naming the lease, its log saying why
# the saved claim of worker $WA was not resumed (TEXT).
refuses() {
    local name=$1 dir=$2 text=$3 last d
    shift 3
    env "$@" timeout 60 "$D" --listen 127.0.0.1:0 --data-dir "$dir" --lease "$URL" \
        --lease-ttl "$TTL" >"$T/$name.out" 2>"$T/$name.log"
    RC=$?
    last=$(tail -n 1 "$T/$name.log")
    d="$WHAT: $name: idmintd refuses to start (exit $RC), its last line naming the lease"
    check "$d [$last]" test "$RC" -ne 0 -a "$RC" -ne 124 -a ! -s "$T/$name.out" -a \
        "${last#idmintd: lease etcd://}" != "$last"
    d="$WHAT: $name: the log says why the saved claim was not resumed [$text]"
    check "$d [$(cat "$T/$name.log")]" \
        grep -q "^idmintd: lease: the saved claim of worker id $WA was not resumed: .*$text" \
        "$T/$name.log"
}
# ids_ok: every id answered so far, by every server: none twice, each
# worker id's ids increasing in the order each client got them. $WHAT
# names the step in the checks.
ids_ok() {
    local total dups order
    read -r total dups order < <(q check)
    check "$WHAT: ids answered so far: $total, none twice ($dups repeated)" \
        test "${total:-0}" -gt 0 -a "${dups:-1}" -eq 0
    check "$WHAT: each worker id's ids increase per client [$order]" test "$order" = -
    note "$WHAT: $total ids answered so far"
}
# waits DESCRIPTION COMMAND...: one check that COMMAND comes true within
# BOUND s; a failure shows the last answer got (CODE, $T/body).
waits() {
    local d=$1
    shift
    if wait_until "$BOUND" "$@"; then
        ok
    else
        bad "$d (last answer ${CODE:-none} [$(body_short)])"
    fi
}
# log_has NAME TEXT: $T/NAME.log holds TEXT.
log_has() { grep -qF -- "$2" "$T/$1.log"; }

# ================================================= 1. kill -9 under load (E12r)
WHAT="E12r kill -9"
DA=$T/da
serve a1 "$DA" || finish
PA=$DPID
set_port port.a "$PORT"
set_port port.c3 "$PORT"
CL=()
for c in 1 2 3; do
    pf=port.a
    [ "$c" = 3 ] && pf=port.c3
    : >"$T/ld$c.log"
    python3 "$T/fleet.py" load "$T/$pf" "$T/ld$c.log" "$T/stop" 300 2>"$T/ld$c.err" &
    CL+=($!)
    PIDS+=($!)
done
waits "$WHAT: the clients are served" served "$PORT" 30
get "$PORT" /healthz
WA=$(jf worker)
check "$WHAT: /healthz 200, a new claim ($CODE [$(body_short)])" \
    test "$CODE" = 200 -a "$(jf claim)" = claimed -a -n "$WA"
# Worker ids and ids are cross-checked once against idmint decode.
read -r FID FMS FW < <(q first)
DECODED=$("$BIN" decode "$FID" 2>&1)
check "the clients decode ids as idmint does ($FID: $FMS worker $FW; [$DECODED])" \
    grep -q " unix_ms=$FMS datacenter=0 worker=$FW " <<<"$DECODED"
wait_renewal "$DA"
M1=$(mark_of "$WA")
check "$WHAT: etcd holds a mark for worker $WA [$M1]" test -n "$M1"
{ stop_d "$PA" KILL; } 2>/dev/null # the shell's "Killed" muted
K1=$(now_ms)
serve a2 "$DA" || finish
PA=$DPID P2=$PORT
set_port port.a "$PORT"
set_port port.c3 "$PORT"
get "$PORT" /healthz
check "$WHAT: /healthz 200, claim reattached, worker $WA ($CODE [$(body_short)])" \
    test "$CODE" = 200 -a "$(jf claim)" = reattached -a "$(jf worker)" = "$WA"
check "$WHAT: the log says the claim was resumed, confirmed [$(grep 'lease:' "$T/a2.log")]" \
    log_has a2 "lease: resumed the saved claim of worker id $WA (the coordinator confirmed it)"
waits "$WHAT: the restarted server serves the clients" served "$P2" 20
span "$P2"
# A new claim would wait for the mark (the last renewal's send + TTL): the
# resumed one serves at once, below it.
check "$WHAT: served at once: its first id ($TMIN) is below the mark before the kill ($M1)" \
    test "${TMIN:-0}" -gt 0 -a "${TMIN:-0}" -lt "${M1:-0}"
check "$WHAT: its ids are all under worker $WA [$WORKERS]" test "$WORKERS" = "$WA"
note "$WHAT: the restarted server's first id at kill+$((TMIN - K1)) ms," \
    "$((M1 - TMIN)) ms below the mark"
ids_ok

# ================================================= 2. etcd down at the restart (E28)
# Round 1: etcd stays down; the server mints under the saved claim up to its
# deadline, then stops; later starts refuse.
WHAT="E28 etcd down"
wait_renewal "$DA"
kill -STOP "$EPID"
{ stop_d "$PA" KILL; } 2>/dev/null # the shell's "Killed" muted
K2=$(now_ms)
# The saved wall deadline in ns: an id of ms M was minted before it if
# M's first ns is.
WDNS=$(claim_field "$DA" wall)
WD=$((WDNS / 1000000))
WW=$(claim_field "$DA" worker)
check "$WHAT: the claim file has worker $WA and a wall deadline [$WW $WD]" \
    test "$WW" = "$WA" -a "$WD" -gt 0
serve a3 "$DA" || finish
PA=$DPID P3=$PORT
note "$WHAT: the restarted server listens at kill+$(($(now_ms) - K2)) ms," \
    "$((WD - $(now_ms))) ms before the saved deadline"
set_port port.a "$PORT"
set_port port.c3 "$PORT"
get "$PORT" /healthz
check "$WHAT: it starts: /healthz 200, claim offline, worker $WA ($CODE [$(body_short)])" \
    test "$CODE" = 200 -a "$(jf claim)" = offline -a "$(jf worker)" = "$WA"
check "$WHAT: /healthz warns that etcd cannot be reached [$(jf warnings)]" \
    grep -qF "mints on the claim saved before a restart: the coordinator cannot be reached" \
    <<<"$(jf warnings)"
check "$WHAT: /metrics idmint_lease_offline 1" test "$(metric "$P3" idmint_lease_offline)" = 1
check "$WHAT: the log says so [$(grep 'lease:' "$T/a3.log")]" \
    log_has a3 "lease: resumed the saved claim of worker id $WA (the coordinator cannot be reached"
waits "$WHAT: at the deadline /healthz answers 503 naming the lease" \
    unhealthy "$P3" lease
# An answer after the deadline: a request sent now.
NOW=$(now_ms)
got503() { span "$P3" "$NOW"; [ "$N503" -gt 0 ]; }
waits "$WHAT: the clients get 503 after it" got503
check "$WHAT: the 503 names the lease [$WHY]" grep -qi lease <<<"$WHY"
span "$P3"
check "$WHAT: minted while etcd was down ($N200 answers 200) under worker $WA [$WORKERS]" \
    test "$N200" -gt 0 -a "$WORKERS" = "$WA"
check "$WHAT: no id at or past the saved deadline ($WDNS ns; last id $TMAX ms)" \
    test "$((TMAX * 1000000))" -lt "$WDNS"
note "$WHAT: served $N200 answers offline; last id $((WD - TMAX)) ms before the saved deadline"
{ stop_d "$PA" KILL; } 2>/dev/null # the shell's "Killed" muted
refuses a3x "$DA" "ran out"
echo "00000000-feed-beef-0000-$(printf '%012d' $$)" >"$T/other-boot"
refuses a3b "$DA" "from another boot" IDMINT_BOOT_ID_FILE="$T/other-boot"
kill -CONT "$EPID"
ids_ok

# Round 2: etcd back before the deadline: the server reattaches and serves
# on past it.
serve a4 "$DA" || finish
PA=$DPID
set_port port.a "$PORT"
set_port port.c3 "$PORT"
waits "$WHAT: with etcd back, a server on the same data directory serves" \
    served "$PORT" 10
wait_renewal "$DA"
kill -STOP "$EPID"
{ stop_d "$PA" KILL; } 2>/dev/null # the shell's "Killed" muted
WD=$(($(claim_field "$DA" wall) / 1000000))
WB4=$(claim_field "$DA" worker)
serve a5 "$DA" || finish
PA=$DPID P5=$PORT
set_port port.a "$PORT"
set_port port.c3 "$PORT"
get "$PORT" /healthz
H5=$(body_short)
kill -CONT "$EPID"
check "$WHAT, etcd back: before it, /healthz 200, claim offline, worker $WB4 [$H5]" \
    grep -q '"claim":"offline".*"warnings":\[' <<<"$H5"
# The keeper reattached: claim reattached, no warning, no 503.
reattached() {
    healthy "$P5" claim reattached && ! jf warnings >/dev/null &&
        [ "$(metric "$P5" idmint_lease_offline)" = 0 ]
}
waits "$WHAT, etcd back: it reattaches (/healthz claim reattached, no warning, lease not offline)" \
    reattached
get "$P5" /healthz
check "$WHAT, etcd back: the same worker $WB4, nothing lost or re-claimed" \
    test "$(jf worker)" = "$WB4" -a "$(jf losses)" = 0 -a "$(jf reclaims)" = 0
pastdl() { [ "$(q past "$WB4" "$WD")" -gt 0 ]; }
waits "$WHAT, etcd back: it serves on under worker $WB4 past the saved deadline ($WD)" \
    pastdl
span "$P5"
note "$WHAT, etcd back: $N503 answers 503 and $NOTHER failed while it reattached"
ids_ok

# ================================================= 3. the worker key deleted (E4)
WHAT="E4 etcdctl del"
DB=$T/db
serve b1 "$DB" || finish
PB=$DPID PB1=$PORT
set_port port.c3 "$PORT"
waits "$WHAT: a second server serves a client" served "$PB1" 10
get "$PB1" /healthz
WB=$(jf worker)
get "$P5" /healthz
WA=$(jf worker)
check "$WHAT: the two servers hold distinct worker ids [$WA $WB]" \
    test -n "$WA" -a -n "$WB" -a "$WA" != "$WB"
DEL=$(now_ms)
check "$WHAT: etcdctl del $PFX/workers/$WA deletes one key" \
    test "$(ctl del "$PFX/workers/$WA" 2>&1)" = 1
waits "$WHAT: the server logs the loss" log_has a5 \
    "lease: worker id $WA: the coordinator says the claim is gone; re-claiming"
LOSS=$(now_ms)
reclaimed() { healthy "$P5" reclaims 1; }
waits "$WHAT: /healthz 200 with reclaims 1" reclaimed
WA2=$(jf worker)
check "$WHAT: another worker id, not the other server's [$WA -> $WA2; other $WB]" \
    test -n "$WA2" -a "$WA2" != "$WA" -a "$WA2" != "$WB"
check "$WHAT: /healthz counts one loss, the claim a new one" \
    test "$(jf losses)" = 1 -a "$(jf claim)" = claimed
check "$WHAT: /metrics: one re-claim, one loss, worker $WA2" \
    test "$(metric "$P5" idmint_lease_reclaims_total)" = 1 -a \
    "$(metric "$P5" idmint_lease_losses_total)" = 1 -a \
    "$(metric "$P5" idmint_lease_worker)" = "$WA2"
newids() { read -r NW _ < <(q worker "$WA2"); [ "${NW:-0}" -gt 0 ]; }
waits "$WHAT: the clients get ids under worker $WA2" newids
check "$WHAT: no request sent after the loss was logged is answered under worker $WA" \
    test "$(q sentafter "$WA" "$LOSS")" = 0
read -r _ _ _ _ OLD_LAST _ OLD_MAX < <(q worker "$WA")
read -r _ _ _ NEW_FIRST _ _ _ < <(q worker "$WA2")
MA=$(mark_of "$WA")
check "$WHAT: worker $WA's mark in etcd ($MA) covers its last id ($OLD_MAX)" \
    test -n "$MA" -a "${MA:-0}" -ge "$OLD_MAX"
span "$P5" "$DEL"
# took FILE EVENT FROM TO: the "in N ms" of the event's log line, N.
took() { sed -n "s/^idmintd: lease: $2: worker id $3 -> $4 in \([0-9]*\) ms .*/\1/p" "$T/$1.log"; }
SW=$(took a5 "re-claimed after a loss" "$WA" "$WA2")
check "$WHAT: the log says the re-claim [$SW]" test -n "$SW"
note "$WHAT: loss -> first id under worker $WA2: ${SW:-?} ms (server's log);" \
    "$((NEW_FIRST - OLD_LAST)) ms from the clients' last answer under $WA to the first" \
    "under $WA2;" \
    "del -> first id under $WA2 $((NEW_FIRST - DEL)) ms; $N503 answers 503 since the del"
ids_ok

# ================================================= 4. change-worker (C15)
WHAT="C15 change-worker"
stop_d "$PB"
check "$WHAT: the second server exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
echo 0 >"$T/offset"
serve cw "$T/dc" --policy change-worker --clock "offset-file:$T/offset" || finish
PC=$DPID PC1=$PORT
set_port port.c3 "$PORT"
waits "$WHAT: a change-worker server serves a client" served "$PC1" 20
get "$PC1" /healthz
WC=$(jf worker)
check "$WHAT: its worker id [$WC] is none of the others' [$WA2]" test -n "$WC" -a "$WC" != "$WA2"
echo -10000 >"$T/offset.tmp" && mv "$T/offset.tmp" "$T/offset"
changed1() { healthy "$PC1" worker_changes 1; }
waits "$WHAT: clock 10 s back: /healthz 200 with worker_changes 1" \
    changed1
WC2=$(jf worker)
check "$WHAT: another worker id [$WC -> $WC2], none of the others' [$WA2]" \
    test -n "$WC2" -a "$WC2" != "$WC" -a "$WC2" != "$WA2"
check "$WHAT: /metrics idmint_worker_changes_total 1" \
    test "$(metric "$PC1" idmint_worker_changes_total)" = 1
cwids() { read -r NW _ < <(q worker "$WC2"); [ "${NW:-0}" -gt 0 ]; }
waits "$WHAT: the client gets ids under worker $WC2" cwids
read -r _ _ _ _ _ _ OLD_MAX < <(q worker "$WC")
LC=$("$BIN" lease list "$URL" 2>/dev/null | grep "^worker=$WC ")
check "$WHAT: worker $WC released, its mark covers its last id ($OLD_MAX) [$LC]" \
    test "$(sed -n 's/.* held=\([a-z]*\) .*/\1/p' <<<"$LC")" = no -a \
    "$(sed -n 's/.* mark_ms=\([0-9]*\) .*/\1/p' <<<"$LC")" -ge "${OLD_MAX:-99999999999999}"
CW=$(took cw "clock stepped back; changed worker id" "$WC" "$WC2")
check "$WHAT: the log says the change [$CW]" test -n "$CW"
note "$WHAT: worker id $WC -> $WC2 in ${CW:-?} ms (server's log)"
ids_ok

# ================================================= the end
WHAT="whole run"
touch "$T/stop"
for p in "${CL[@]}"; do wait_exit "$p"; done
for p in "$PA" "$PC"; do
    stop_d "$p"
    check "$WHAT: server $p exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
done
check "$WHAT: the clients wrote nothing on stderr [$(cat "$T"/ld[123].err | head -c 300)]" \
    test -z "$(cat "$T"/ld[123].err)"
ids_ok
bash "$SERVER" stop "$T/e"
note "total $(($(now_ms) - START)) ms"
finish
