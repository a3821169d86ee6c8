#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of the etcds:// coordinator (etcd over TLS, with etcd's
# authentication) with the real programs: idmint and idmintd against a
# real etcd that serves clients over HTTPS only, asks for a client
# certificate and has authentication enabled (scripts/etcd-test-server.sh
# start-tls, certificates made by scripts/etcd-test-certs.sh), started on a
# free loopback port and always stopped:
#
#   - `next --lease`, `lease hold` and `lease list` work with the CA, the
#     client certificate and a user whose password is in a file;
#   - idmintd serves ids under a worker id claimed over etcds://;
#   - a wrong password, a wrong CA and a missing client certificate each
#     fail with one error line naming the cause, the password never in it;
#   - the password file's text is in no output and not in ps.
#
# Usage: bash test_lease_etcds.sh /path/to/idmint
# Needs etcd, etcdctl and openssl on PATH. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need etcd etcdctl openssl timeout curl
SERVER=$SCRIPTS/etcd-test-server.sh

START=$(now_ms)
C=$T/certs
mkdir -p "$C"
if ! bash "$SCRIPTS/etcd-test-certs.sh" "$C" >"$T/certs.out" 2>&1; then
    bad "cannot make the certificates: $(tail -n 5 "$T/certs.out")"
    finish
fi
mkdir -p "$T/etcds"
SERVERS+=("$T/etcds")
if ! EP=$(bash "$SERVER" start-tls "$T/etcds" "$C" auth 30s 2>"$T/etcds.err"); then
    bad "cannot start etcd over TLS with auth: $(tail -n 5 "$T/etcds.err")"
    finish
fi
PW=pw-$RANDOM-sekrit
printf '%s\n' "$PW" >"$T/idm.pw"
printf 'not-%s\n' "$PW" >"$T/bad.pw"
if ! bash "$SERVER" user "$T/etcds" idm "$T/idm.pw" /idmint/ >"$T/user.out" 2>&1; then
    bad "cannot add the user: $(tail -n 5 "$T/user.out")"
    finish
fi
SECRET=$PW
Q="cacert=$C/ca.pem&cert=$C/client.pem&key=$C/client-key.pem&user=idm"
URL="etcds://$EP/idmint/cli?$Q&password-file=$T/idm.pw"

# ---- next --lease, lease hold, lease list ----

run next --lease "$URL" --lease-ttl 2000 --layout twitter --node datacenter=1 -n 3
check "next --lease etcds: mints 3 ids; $(show)" test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 3
spawn h lease hold "$URL" --max 4 --ttl 2000
PH=$SPAWNED
check "hold: holds a worker id over etcds [$(peek 300 "$T/h.err")]" wait_out "$T/h.out" "$PH"
check "hold: the password is not in ps" \
    test "$(tr '\0' ' ' <"/proc/$PH/cmdline" | grep -c -- "$PW")" -eq 0
WH=$(field "$(head -n 1 "$T/h.out")" worker)
LH=$(list_line "$URL" "$WH")
check "hold: lease list shows it held [$LH]" test "$(field "$LH" held)" = yes
stop "$PH" TERM
check "hold: exits 0 on SIGTERM, silent (status $STOPPED) [$(peek 300 "$T/h.err")]" \
    test "$STOPPED" -eq 0 -a ! -s "$T/h.err"

# ---- idmintd on etcds:// ----

idmintd_serves "etcds://$EP/idmint/d?$Q&password-file=$T/idm.pw" 32

# ---- refusals: one line each, naming the cause, never the password ----

fails_with 1 "authentication as user 'idm' failed" \
    lease list "etcds://$EP/idmint/cli?$Q&password-file=$T/bad.pw"
fails_with 1 "SSL certificate problem" \
    lease list "etcds://$EP/idmint/cli?cacert=$C/other-ca.pem&cert=$C/client.pem&key=$C/client-key.pem&user=idm&password-file=$T/idm.pw"
fails_with 1 "client certificate" \
    lease list "etcds://$EP/idmint/cli?cacert=$C/ca.pem&user=idm&password-file=$T/idm.pw"
fails_with 2 "unknown option 'password'" lease list "etcds://$EP/idmint/cli?password=$PW"
fails_with 2 "password-file" lease list "etcds://$EP/idmint/cli?$Q"
check "no output held the password" test "$(cat "$T"/*.out "$T"/*.err 2>/dev/null | grep -c -- "$PW")" -eq 0

note "total $(($(now_ms) - START)) ms"
finish
