#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The multi-region recipe of docs/DEPLOYING.md, on one machine: two
# "regions", each with an etcd of its own (one member each: two three-member
# clusters would be six etcd processes, too slow here for what the test
# shows; a region's cluster losing a member is E8 and E10 in FAULTS.md) and
# two idmintd whose datacenter value is the region's (A: datacenter 1, B:
# datacenter 2), leasing their worker ids from their own region's etcd under
# the region's own prefix. The servers read the recipe's config file keys
# (lease, lease-ttl, node, data-dir) from a config file, as DEPLOYING.md
# writes them. One load client per server asks for 50 ids at a time the
# whole run. Meanwhile:
#
#   1. region A's etcd is killed (kill -9), left down past the first
#      renewal the servers try, and started again on the same data
#      directory and port (FAULTS E11, with a fleet on it): region A answers
#      with ids while its etcd is down, after a renewal failed (within the
#      lease), and still past the TTL after the kill (renewals went on with
#      the restarted etcd);
#   2. region A's etcd is killed and kept down past the TTL: region A's
#      servers stop (503 naming the lease), and no id they answered carries
#      a time at or past the kill + TTL (their last renewal was sent before
#      the kill); region B answers every request all the while; etcd is
#      started again and region A serves again;
#   3. every server is stopped with SIGTERM (the drain of DEPLOYING.md's
#      moves): each exits 0, and `idmint lease list` on region A's prefix
#      shows every worker id released, with a mark at or past the last id
#      region A answered.
#
# Then every id any client got is checked: none twice, by `idmint audit
# --layout twitter` (in the order the clients recorded them) and by
# `sort | uniq -d`; and each id's datacenter field, read by `idmint decode`,
# is its region's. The datacenter values, not the coordinators, keep the
# regions' ids apart: the two etcds hand out the same worker ids.
#
# Usage: bash test_regions.sh /path/to/build/idmint  (idmintd is its
# sibling). Needs etcd, etcdctl, curl and python3. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed. No check
# measures how long anything took: the deadlines are checked on the times
# the answered ids carry.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
IDMD_NEEDS="etcd etcdctl xargs"
# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"

SERVER="$(cd "$(dirname "$0")/../.." && pwd)/scripts/etcd-test-server.sh"
# etcd's watcher follows this shell: it dies with it.
export IDM_ETCD_OWNER=$$
# The EXIT trap: the clients told to stop, both etcds stopped, then
# lib_idmintd.sh's cleanup (servers, clients, $T).
# shellcheck disable=SC2317 # run by the trap
regions_cleanup() {
    : >"$T/stop"
    bash "$SERVER" stop "$T/etcd-a" >/dev/null 2>&1
    bash "$SERVER" stop "$T/etcd-b" >/dev/null 2>&1
    cleanup
}
trap regions_cleanup EXIT

# Notes are always printed: the counts and times are what this gives.
note() { printf 'note: %s\n' "$*" >&3; }

# The regions: datacenter values and prefixes (DEPLOYING.md names each
# prefix after its datacenter value, so that a move carries it along).
DC_A=1
DC_B=2
PFX_A=/idmint/dc-1
PFX_B=/idmint/dc-2
TTL=6000
SERVERS_ALL="a1 a2 b1 b2"
START=$(now_ms)

# ============================================================ the regions
for r in a b; do
    mkdir -p "$T/etcd-$r"
    if ! ep=$(bash "$SERVER" start "$T/etcd-$r" 1 2>"$T/etcd-$r.err"); then
        bad "cannot start region $r's etcd: $(tail -n 5 "$T/etcd-$r.err")"
        finish
    fi
    printf '%s\n' "$ep" >"$T/ep.$r"
done
EP_A=$(cat "$T/ep.a")
EP_B=$(cat "$T/ep.b")
URL_A="etcd://$EP_A$PFX_A"
URL_B="etcd://$EP_B$PFX_B"

# The load client, in Python: ask PORT for 50 ids at a time until STOP
# exists (or BOUND s passed: 300, ctest's timeout; the EXIT trap kills
# it sooner). Each answer is one line of LOG:
#   SEND_MS RECV_MS STATUS FIRST LAST
# FIRST and LAST are the answer's first and last ids (a 200), else "-" and
# the body's start (spaces made '_'). A 200's ids go to IDS (this server's)
# and to ALL (every client's, in the order they were received: one write
# an answer, appended).
cat >"$T/load.py" <<'PY'
import http.client, os, sys, time

port, ids_out, all_out, log_out, stop, bound = sys.argv[1:7]
end = time.time() + float(bound)
conn = None
with open(ids_out, "a") as fi, open(all_out, "a") as fa, open(log_out, "a") as fl:
    while time.time() < end and not os.path.exists(stop):
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=5)
        t0 = time.time()
        try:
            conn.request("GET", "/v1/snowflake?count=50&format=text")
            r = conn.getresponse()
            body, st = r.read(), r.status
        except Exception as e:  # a refused connection, a timeout
            body, st = type(e).__name__.encode(), 0
            conn.close()
            conn = None
        t1 = time.time()
        if st == 200:
            ids = body.decode().split()
            text = "".join(i + "\n" for i in ids)
            fi.write(text)
            fi.flush()
            fa.write(text)
            fa.flush()
            what = "%s %s" % (ids[0], ids[-1]) if ids else "- empty"
        else:
            what = "- " + ("_".join(body.decode(errors="replace").split())[:200] or "-")
        fl.write("%d %d %d %s\n" % (t0 * 1000, t1 * 1000, st, what))
        fl.flush()
        # Load, not a flood: the machine runs other tests too.
        time.sleep(0.01 if st == 200 else 0.03)
PY

# conf NAME URL DC: the config file of server NAME (DEPLOYING.md's keys;
# --listen is given as a flag by start_d, which beats the file).
conf() {
    cat >"$T/$1.conf" <<EOF
# region server $1
data-dir = $T/d-$1
lease = $2
lease-ttl = $TTL
node = datacenter=$3
EOF
}
conf a1 "$URL_A" "$DC_A"
conf a2 "$URL_A" "$DC_A"
conf b1 "$URL_B" "$DC_B"
conf b2 "$URL_B" "$DC_B"

: >"$T/all.ids"
for s in $SERVERS_ALL; do
    start_d "$s" --config "$T/$s.conf" || finish
    printf '%s\n' "$DPID" >"$T/pid.$s"
    printf '%s\n' "$PORT" >"$T/port.$s"
    : >"$T/ids.$s"
    : >"$T/log.$s"
    python3 "$T/load.py" "$PORT" "$T/ids.$s" "$T/all.ids" "$T/log.$s" "$T/stop" 300 \
        2>"$T/load.$s.err" &
    PIDS+=($!)
    printf '%s\n' "$!" >"$T/cpid.$s"
done

# answers S LO HI: server S's answers sent in [LO, HI] ms: "N200 NOTHER
# LAST_IDS FIRST_OTHER" (LAST_IDS the last id of each 200, comma-separated,
# "-" if none; FIRST_OTHER the first other answer's status and text).
answers() {
    awk -v lo="$2" -v hi="$3" '
        $1 >= lo && $1 <= hi {
            if ($3 == 200) { n++; last = last (last == "" ? "" : ",") $5 }
            else { o++; if (first == "") first = $3 ":" $5 }
        }
        END { printf "%d %d %s %s\n", n, o, (last == "" ? "-" : last), (first == "" ? "-" : first) }
    ' "$T/log.$1"
}
# served_since S MS: server S answered 200 to a request sent at or after MS.
# shellcheck disable=SC2317 # run by wait_until, as refused_since
served_since() { awk -v lo="$2" '$1 >= lo && $3 == 200 { f = 1 } END { exit !f }' "$T/log.$1"; }
# refused_since S MS: server S answered 503 to a request sent at or after MS.
# shellcheck disable=SC2317
refused_since() { awk -v lo="$2" '$1 >= lo && $3 == 503 { f = 1 } END { exit !f }' "$T/log.$1"; }
# max_ms IDS: the latest time (unix_ms, by idmint decode) of the ids
# (comma-separated), or empty.
max_ms() {
    tr ',' '\n' <<<"$1" | xargs "$BIN" decode --layout twitter 2>/dev/null |
        sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p' | sort -n | tail -n 1
}
# jf KEY: the top-level KEY of the last body (JSON), or fail.
jf() {
    python3 -c '
import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2])
if v is None:
    sys.exit(1)
print(json.dumps(v) if isinstance(v, (list, dict)) else v)
' "$T/body" "$1" 2>/dev/null
}
# waits DESCRIPTION COMMAND...: one check that COMMAND comes true within
# BOUND s.
waits() {
    local d=$1
    shift
    if wait_until "$BOUND" "$@"; then ok; else bad "$d"; fi
}

T0=$(now_ms)
for s in $SERVERS_ALL; do
    waits "$s serves ids [$(tail -n 2 "$T/log.$s" | tr '\n' ' ')]" served_since "$s" "$T0"
done
declare -A W
for s in $SERVERS_ALL; do
    get "$(cat "$T/port.$s")" /healthz
    W[$s]=$(jf worker)
    check "$s: /healthz 200 with a worker id ($CODE [$(body_short)])" \
        test "$CODE" = 200 -a -n "${W[$s]}"
done
note "worker ids: a1 ${W[a1]}, a2 ${W[a2]} (region A's etcd), b1 ${W[b1]}, b2 ${W[b2]} (region B's)"
check "region A's servers hold distinct worker ids (${W[a1]}, ${W[a2]})" \
    test "${W[a1]}" != "${W[a2]}"
check "region B's servers hold distinct worker ids (${W[b1]}, ${W[b2]})" \
    test "${W[b1]}" != "${W[b2]}"
# The two etcds know nothing of each other: they hand out the same worker
# ids, and only the datacenter values keep the regions' ids apart.
check "the regions' etcds hand out the same worker ids (A: ${W[a1]} ${W[a2]}, B: ${W[b1]} ${W[b2]})" \
    test "$(printf '%s\n' "${W[a1]}" "${W[a2]}" | sort)" = "$(printf '%s\n' "${W[b1]}" "${W[b2]}" | sort)"
sleep 1

# ============================== 1. region A's etcd restarted under load (E11)
K1=$(now_ms)
bash "$SERVER" kill "$T/etcd-a" 1
# Down past the first renewal the servers try after the kill (renewals go
# every TTL/3) and well before the deadline of the last one that worked
# (its send + TTL - TTL/5, at least K1 + TTL - TTL/3 - TTL/5), the
# clients asking all the while. A server that stopped at the first failed
# renewal would answer nothing from K1 + TTL/3 on.
R1=$((K1 + TTL / 3 + 500))
while [ "$(now_ms)" -lt "$R1" ]; do sleep 0.05; done
R1=$(now_ms)
if ! bash "$SERVER" restart "$T/etcd-a" 1 2>"$T/restart1.err"; then
    bad "1: region A's etcd did not start again: $(tail -n 5 "$T/restart1.err")"
    finish
fi
B1=$(now_ms)
note "1: region A's etcd down for $((B1 - K1)) ms (kill -9, then started on its data directory)"
for s in a1 a2; do
    read -r n o _ first < <(answers "$s" $((K1 + TTL / 3 + 200)) "$R1")
    check "1: $s answered ids while its etcd was down, past a failed renewal ($n answers 200 to requests sent $((TTL / 3 + 200))..$((R1 - K1)) ms after the kill, $o others, first $first)" \
        test "$n" -gt 0
    # Past K1 + TTL, only a renewal sent to the restarted etcd lets it mint.
    waits "1: $s serves past the kill + TTL (renewed on the restarted etcd)" \
        served_since "$s" $((K1 + TTL + 200))
done
for s in a1 a2; do
    get "$(cat "$T/port.$s")" /healthz
    check "1: $s: /healthz 200 after the restart ($CODE [$(body_short)])" test "$CODE" = 200
    note "1: $s: worker $(jf worker) (was ${W[$s]}), losses $(jf losses), reclaims $(jf reclaims)"
done

# ========================== 2. region A's etcd down past the TTL: A stops
K2=$(now_ms)
bash "$SERVER" kill "$T/etcd-a" 1
for s in a1 a2; do
    waits "2: $s stops: 503 once its lease ran out" refused_since "$s" "$K2"
done
# Wait until the TTL has passed since the kill, with answers after it.
while [ "$(now_ms)" -le $((K2 + TTL + 300)) ]; do sleep 0.1; done
E2=$(now_ms)
for s in a1 a2; do
    read -r n o last first < <(answers "$s" "$K2" "$E2")
    m=$(max_ms "$last")
    check "2: $s's ids after the kill all carry times before the kill + TTL ($n answers 200, latest id time ${m:-none}, bound $((K2 + TTL)))" \
        test -z "$m" -o "${m:-0}" -lt $((K2 + TTL))
    check "2: $s answers 503 naming the lease [$first]" \
        grep -qi "lease" <<<"$first"
done
for s in b1 b2; do
    read -r n o _ first < <(answers "$s" "$K2" "$E2")
    check "2: region B answered every request while A's etcd was down ($s: $n 200, $o others, first $first)" \
        test "$n" -gt 0 -a "$o" -eq 0
done
if ! bash "$SERVER" restart "$T/etcd-a" 1 2>"$T/restart2.err"; then
    bad "2: region A's etcd did not start again: $(tail -n 5 "$T/restart2.err")"
    finish
fi
B2=$(now_ms)
for s in a1 a2; do
    waits "2: $s serves again once its etcd is back" served_since "$s" "$B2"
    get "$(cat "$T/port.$s")" /healthz
    note "2: $s: worker $(jf worker) (was ${W[$s]}), losses $(jf losses), reclaims $(jf reclaims)"
done
sleep 0.5

# ======================================= 3. drain: SIGTERM, clean release
: >"$T/stop"
for s in $SERVERS_ALL; do
    wait_exit "$(cat "$T/cpid.$s")"
done
# The last id each region A server answered, against the marks.
LAST_A=$(for s in a1 a2; do awk '$3 == 200 { l = $5 } END { if (l != "") print l }' "$T/log.$s"; done |
    paste -sd, -)
for s in $SERVERS_ALL; do
    stop_d "$(cat "$T/pid.$s")" TERM
    check "3: $s exits 0 on SIGTERM (status $STOPPED)" test "$STOPPED" = 0
done
"$BIN" lease list "$URL_A" >"$T/list.a" 2>"$T/list.a.err"
check "3: region A's prefix lists its worker ids, none held [$(tr '\n' ' ' <"$T/list.a")$(cat "$T/list.a.err")]" \
    test -s "$T/list.a" -a "$(grep -c 'held=yes' "$T/list.a")" -eq 0
MARK_A=$(sed -n 's/.* mark_ms=\([0-9]*\).*/\1/p' "$T/list.a" | sort -n | tail -n 1)
LAST_MS=$(max_ms "$LAST_A")
check "3: region A's highest mark ($MARK_A) is at or past its last id's time ($LAST_MS)" \
    test -n "$MARK_A" -a -n "$LAST_MS" -a "${MARK_A:-0}" -ge "${LAST_MS:-1}"

# ================================================== every id, every region
TOTAL=$(wc -l <"$T/all.ids")
N200=$(cat "$T"/log.?? | awk '$3 == 200 { n++ } END { print n + 0 }')
note "ids: $TOTAL from $N200 answers (a1 $(wc -l <"$T/ids.a1"), a2 $(wc -l <"$T/ids.a2"), b1 $(wc -l <"$T/ids.b1"), b2 $(wc -l <"$T/ids.b2"))"
check "every answer's 50 ids were collected ($TOTAL ids, $N200 answers)" \
    test "$TOTAL" -gt 0 -a "$TOTAL" -eq $((N200 * 50))
DUPS=$(sort "$T/all.ids" | uniq -d | wc -l)
check "no id twice across both regions (sort | uniq -d: $DUPS repeated, e.g. $(sort "$T/all.ids" | uniq -d | head -n 3 | tr '\n' ' '))" \
    test "$DUPS" -eq 0
"$BIN" audit --layout twitter "$T/all.ids" >"$T/audit.out" 2>"$T/audit.err"
RC=$?
check "idmint audit --layout twitter finds every id unique, no clock step (exit $RC: $(head -c 600 "$T/audit.out") $(head -c 300 "$T/audit.err"))" \
    test "$RC" -eq 0
# region_ok S DC: every id of server S decodes (idmint decode) with
# datacenter DC; the counts of each datacenter value in $T/dc.S.
region_ok() {
    xargs "$BIN" decode --layout twitter <"$T/ids.$1" 2>"$T/dc.$1.err" |
        sed -n 's/.* datacenter=\([0-9]*\) .*/\1/p' | sort | uniq -c >"$T/dc.$1"
    [ ! -s "$T/dc.$1.err" ] &&
        [ "$(awk '{ print $2 }' "$T/dc.$1")" = "$2" ] &&
        [ "$(awk '{ n += $1 } END { print n + 0 }' "$T/dc.$1")" -eq "$(wc -l <"$T/ids.$1")" ]
}
# regions S DC: check that every id of server S has datacenter DC.
regions() {
    local rc=0
    region_ok "$1" "$2" || rc=1
    check "$1: every id has datacenter $2 (count and value: [$(tr -s ' \n' ' ' <"$T/dc.$1")]$(head -c 200 "$T/dc.$1.err"))" \
        test "$rc" -eq 0
}
regions a1 "$DC_A"
regions a2 "$DC_A"
regions b1 "$DC_B"
regions b2 "$DC_B"

bash "$SERVER" stop "$T/etcd-a"
bash "$SERVER" stop "$T/etcd-b"
note "total $(($(now_ms) - START)) ms"
finish
