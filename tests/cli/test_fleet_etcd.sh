#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The fleet over time on etcd (etcd:// and etcds://): real `idmint next
# --lease` runs against a real etcd that this script starts on a free
# loopback port (scripts/etcd-test-server.sh) and always stops, through the
# bodies of lib_fleet.sh:
#
#   - E12r: a holder killed with kill -9 and started again at once resumes
#     its claim (the same worker id, no new claim, no wait for the mark);
#     also over etcds:// (TLS, a client certificate, a user whose password
#     is in a file that no claim file or message ever shows); and a claim
#     resumes once: a dead holder's state directory copied and both copies
#     started at once, the saved claim is confirmed to one (its reattach
#     moves the worker key to a new lease), the other claims another
#     worker id;
#   - E2r: etcd frozen (SIGSTOP) when the holder restarts: it mints under
#     the saved claim up to the saved deadline and stops there; past the
#     deadline, or on another boot, it refuses; with etcd back (SIGCONT)
#     before the deadline, it reattaches and mints on past it; E12x: once
#     etcd is back, the claim that ran out meanwhile is not resumed;
#   - C14: a holder in a time namespace (its monotonic clock 100 days
#     ahead) mints ids of the wall clock's time and renews; killed there
#     with etcd frozen, it is not resumed outside the namespace once the
#     saved wall deadline passed, though the saved monotonic one looks
#     100 days away;
#   - E4 then E3: the worker key deleted (`etcdctl del`), then the lease
#     revoked (`etcdctl lease revoke`) under a running holder: each time it
#     logs the loss and re-claims another worker id, mints on under it, and
#     never under the lost one again.
#
# Usage: bash test_fleet_etcd.sh /path/to/idmint
# Needs etcd, etcdctl and openssl on PATH. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need etcd etcdctl openssl xargs
# shellcheck source=lib_fleet.sh
source "$(dirname "$0")/lib_fleet.sh"
SERVER=$SCRIPTS/etcd-test-server.sh
COORD=etcd
FTTL=3000
ROW_RESUME=E12r
ROW_OFFLINE=E2r
ROW_STALE=E12x

START=$(now_ms)
start_server EP e etcd 1
EPID=$(bash "$SERVER" pid "$T/e" 1)
# Resumed by the EXIT trap too, should a check stop the script while etcd
# is frozen.
PIDS+=("$EPID")
coord_stop() { kill -STOP "$EPID"; }
coord_start() { kill -CONT "$EPID"; }
ctl() { ETCDCTL_API=3 etcdctl --endpoints="$EP" --command-timeout=5s "$@"; }

# E12r: kill -9 and restart at once.
fleet_resume "etcd://$EP/fleet-resume"

# E12r (F6): one saved claim, two restarts (a copied state directory).
fleet_twice "etcd://$EP/fleet-twice"

# E2r (E12x): etcd frozen at the restart.
fleet_offline "etcd://$EP/fleet-offline"

# C14: a holder in a time namespace (unshare --time) whose monotonic and boot clocks are 100 days
# ahead of the machine's. Its ids carry the wall clock's time and it keeps
# its lease (renewed on the offset clock). Killed there with etcd frozen, and
# started again outside the namespace after the lease's TTL: the saved
# monotonic deadline, read on another clock, looks 100 days away; the saved
# wall deadline has passed, and the saved claim is not resumed: refused.
c14_timens() {
    local url="etcd://$EP/fleet-timens" real=$BIN t0 t1 range lo hi up
    # As root, a time namespace of its own; otherwise in a user namespace of
    # its own too, which needs no privilege (but is refused in a chroot).
    local ns="--time --monotonic 8640000 --boottime 8640000"
    [ "$(id -u)" -eq 0 ] || ns="--user --map-root-user $ns"
    # shellcheck disable=SC2086 # ns: words
    up=$(unshare $ns cat /proc/uptime 2>&1)
    if ! [[ ${up%%.*} =~ ^[0-9]+$ ]] || [ "${up%%.*}" -lt 8640000 ]; then
        bad "C14: a time namespace moves the boot clock 100 days ($up)"
        return # the rest would only fail for the same reason
    fi
    ok
    printf '#!/bin/sh\nexec unshare --fork --kill-child=KILL %s "%s" "$@"\n' "$ns" "$real" \
        >"$T/idmint-timens"
    chmod +x "$T/idmint-timens"
    export IDMINT_STATE_DIR=$T/state-timens
    t0=$(now_ms)
    BIN=$T/idmint-timens
    offline_kill "$url" ta
    BIN=$real
    is_num "$SAVED_DL" || return # offline_kill said why
    t1=$(now_ms)
    sleep 0.3 # the killed namespace's child follows its parent (--kill-child)
    range=$(ms_range "$T/ta.out")
    lo=${range% *}
    hi=${range#* }
    check "C14: the namespace's ids carry the wall clock's time ($lo..$hi within $t0..$t1)" \
        test "${lo:-0}" -ge "$t0" -a "${hi:-99999999999999}" -le "$t1"
    while [ "$(now_ms)" -le "$SAVED_DL" ]; do sleep 0.1; done
    frun_fg "$url" -n 5
    check "C14: restarted outside the namespace past the wall deadline: refused, no id; $(show)" \
        test "$RC" -ne 0 -a ! -s "$T/out"
    check "C14: the saved claim was not resumed: it ran out (a while ago, not ahead); $(show)" \
        said_re "$T/err" \
        "the saved claim of worker id $SAVED_W was not resumed: .*ran out [0-9]* ms ago; claiming anew"
    coord_start
}
c14_timens

# E4: the worker key deleted by hand (the lease lives on).
e4_del() { ctl del "/fleet-loss/workers/$1" >/dev/null; }
# E3: the holder's lease revoked (its id from the claim file's handle,
# "etcd:lease=HEX,...").
e3_revoke() {
    local h
    h=$(claim_field handle)
    h=${h#etcd:lease=}
    ctl lease revoke "${h%%,*}" >/dev/null
}
fleet_loss "etcd://$EP/fleet-loss" e4_del e3_revoke

bash "$SERVER" stop "$T/e"

# E12r over etcds://: TLS, a client certificate, etcd authentication.
C=$T/certs
mkdir -p "$C"
if ! bash "$SCRIPTS/etcd-test-certs.sh" "$C" >"$T/certs.out" 2>&1; then
    bad "cannot make the certificates: $(tail -n 5 "$T/certs.out")"
    finish
fi
mkdir -p "$T/etcds"
SERVERS+=("$T/etcds")
if ! ES=$(bash "$SERVER" start-tls "$T/etcds" "$C" auth 30s 2>"$T/etcds.err"); then
    bad "cannot start etcd over TLS with auth: $(tail -n 5 "$T/etcds.err")"
    finish
fi
PW=pw-$RANDOM-sekrit
printf '%s\n' "$PW" >"$T/idm.pw"
if ! bash "$SERVER" user "$T/etcds" idm "$T/idm.pw" /idmint/ >"$T/user.out" 2>&1; then
    bad "cannot add the user: $(tail -n 5 "$T/user.out")"
    finish
fi
COORD=etcds
Q="cacert=$C/ca.pem&cert=$C/client.pem&key=$C/client-key.pem&user=idm"
fleet_resume "etcds://$ES/idmint/fleet?$Q&password-file=$T/idm.pw"
check "etcds: the password is in no claim file, state file or output" \
    test "$(cat "$T"/state-*/* "$T"/*.out "$T"/*.err "$T/out" "$T/err" 2>/dev/null |
        grep -c -- "$PW")" -eq 0
bash "$SERVER" stop "$T/etcds"

note "total $(($(now_ms) - START)) ms"
finish
