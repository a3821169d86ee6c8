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
