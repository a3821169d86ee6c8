#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmintd as a systemd service:
#   - `make install` (cmake --install of this build into a temporary
#     DESTDIR) puts the unit into PREFIX/lib/systemd/system and the sysusers
#     file into PREFIX/lib/sysusers.d; the unit's ExecStart names the
#     installed idmintd, it is Type=notify, runs as User=idmint with its state
#     in StateDirectory=idmint (/var/lib/idmint, idmintd's data-dir), and the
#     sysusers file makes that user;
#   - `systemd-analyze verify` of the installed unit, with the installed tree
#     as its root (the system's own units copied in beside it, so that the
#     targets it is ordered against exist, and MANPATH pointing at the
#     installed man pages, so that Documentation= is checked too), passes with
#     no message at all (an unknown or misspelt key is only a warning there);
#   - `systemd-analyze security --offline` rates the unit's hardening at
#     exposure 2.0 or below ("OK");
#   - sd_notify for real: idmintd run with NOTIFY_SOCKET naming a unix
#     datagram socket this script reads (python3) sends READY=1 with a
#     STATUS= line naming its worker id once it listens, and STOPPING=1 on
#     SIGTERM, in that order; without NOTIFY_SOCKET it runs as before.
# Needs no running systemd (a container, as root or not).
#
# Usage: bash test_systemd.sh /path/to/build/idmint (idmintd is its sibling,
# the build directory its directory). Ends with one line "N passed, N
# failed"; exits non-zero if any check failed.

set -u

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
IDMD_NEEDS="cmake systemd-analyze man timeout"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=lib_idmintd.sh
source "$(dirname "$0")/lib_idmintd.sh"
cd "$T" || exit 1
BUILD=$(cd "$(dirname "$BIN")" && pwd)

# ================================================= 1. make install

ROOT="$T/root"
if ! DESTDIR="$ROOT" cmake --install "$BUILD" >"$T/install.log" 2>&1; then
    bad "cmake --install $BUILD into DESTDIR=$ROOT failed: $(tail -c 600 "$T/install.log")"
    finish
fi
UNIT=$(find "$ROOT" -path '*/lib/systemd/system/idmintd.service' | head -n 1)
SYSUSERS=$(find "$ROOT" -path '*/lib/sysusers.d/idmint.conf' | head -n 1)
check "the unit is installed into PREFIX/lib/systemd/system (found: '${UNIT#"$ROOT"}')" test -f "$UNIT"
check "the sysusers file is installed into PREFIX/lib/sysusers.d (found: '${SYSUSERS#"$ROOT"}')" \
    test -f "$SYSUSERS"
[ -f "$UNIT" ] && [ -f "$SYSUSERS" ] || finish
PREFIX=${UNIT#"$ROOT"}
PREFIX=${PREFIX%/lib/systemd/system/idmintd.service}

# key VALUE: the unit sets key=VALUE (a line of its own).
has() { grep -qx -- "$1" "$UNIT"; }
check "ExecStart names the installed idmintd ($PREFIX/bin/idmintd), which is there" \
    eval 'has "ExecStart=$PREFIX/bin/idmintd" && [ -x "$ROOT$PREFIX/bin/idmintd" ]'
for line in Type=notify User=idmint StateDirectory=idmint IDMINT_DATA_DIR=/var/lib/idmint \
    NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes \
    ProtectKernelTunables=yes ProtectKernelModules=yes ProtectKernelLogs=yes \
    ProtectControlGroups=yes "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX" \
    SystemCallFilter=@system-service CapabilityBoundingSet= MemoryDenyWriteExecute=yes \
    LockPersonality=yes RestrictNamespaces=yes RestrictRealtime=yes; do
    case $line in IDMINT_*) line="Environment=$line" ;; esac
    check "the unit has the line '$line'" has "$line"
done
check "the sysusers file makes the system user idmint, home /var/lib/idmint ($(grep -v '^#' "$SYSUSERS"))" \
    grep -Eq '^u[[:space:]]+idmint[[:space:]]+-[[:space:]]+"[^"]*"[[:space:]]+/var/lib/idmint[[:space:]]*$' "$SYSUSERS"

# ================================================= 2. systemd-analyze

# The targets the unit is ordered against (its default dependencies and
# network-online.target) come from the system's units, copied beside it.
SYSUNITS=
for d in /usr/lib/systemd/system /lib/systemd/system; do
    [ -f "$d/multi-user.target" ] && SYSUNITS=$d && break
done
check "the system has systemd's units (the systemd package: scripts/deps.sh)" test -n "$SYSUNITS"
[ -n "$SYSUNITS" ] || finish
mkdir -p "$ROOT/usr/lib/systemd/system"
cp -r "$SYSUNITS"/. "$ROOT/usr/lib/systemd/system/" 2>/dev/null

MANPATH="$ROOT$PREFIX/share/man" timeout -k 5 60 systemd-analyze --root="$ROOT" verify "$UNIT" \
    >"$T/out" 2>"$T/err"
RC=$?
check "systemd-analyze verify of the installed unit: exit 0 and not one message; $(show)" \
    eval '[ "$RC" -eq 0 ] && [ ! -s "$T/out" ] && [ ! -s "$T/err" ]'

timeout -k 5 60 systemd-analyze security --offline=yes --root="$ROOT" --threshold=20 "$UNIT" \
    >"$T/out" 2>"$T/err"
RC=$?
check "systemd-analyze security rates the unit OK (exposure at most 2.0): $(grep -o 'Overall exposure level.*' "$T/out"); rc=$RC $(head -c 300 "$T/err")" \
    test "$RC" -eq 0

# ================================================= 3. sd_notify

cat >"$T/notify.py" <<'PY'
"""Read sd_notify datagrams on a unix socket: one line per message (its
variables joined by '|') until STOPPING=1 or the time limit."""
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
open(path + ".ready", "w").close()
s.settimeout(60)
with open(out, "w") as f:
    try:
        while True:
            d = s.recv(65536).decode("utf-8", "replace")
            f.write(d.replace("\n", "|") + "\n")
            f.flush()
            if "STOPPING=1" in d.split("\n"):
                break
    except socket.timeout:
        f.write("TIMEOUT\n")
PY
SOCK="$T/notify.sock"
python3 "$T/notify.py" "$SOCK" "$T/notify.out" 2>"$T/py.err" &
NPID=$!
PIDS+=("$NPID")
wait_until "$BOUND" test -e "$SOCK.ready" || bad "the notify socket reader did not start: $(cat "$T/py.err")"
msgs() { cat "$T/notify.out" 2>/dev/null; }
NOTIFY_SOCKET="$SOCK" start_d n --data-dir "$T/dn" --node datacenter=1 || finish
wait_until "$BOUND" grep -q READY=1 "$T/notify.out"
WORKER=$(sed -n 's|^idmintd: listening on .*(worker \([0-9]*\),.*|\1|p' "$T/n.log")
check "READY=1 once it listens, with a STATUS= line naming worker $WORKER (got: $(msgs))" \
    eval 'grep -q "^READY=1|STATUS=minting as worker $WORKER " "$T/notify.out"'
check "nothing but READY=1 before SIGTERM (got: $(msgs))" eval '! grep -q STOPPING "$T/notify.out"'
get "$PORT" /v1/snowflake
check "it serves (got $CODE)" test "$CODE" = 200
stop_d "$DPID"
check "exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0
wait_exit "$NPID"
check "STOPPING=1 after READY=1, on SIGTERM (got: $(msgs))" \
    eval '[ "$(sed -n "1s/|.*//p;2s/|.*//p" "$T/notify.out" | tr "\n" " ")" = "READY=1 STOPPING=1 " ]'

# No NOTIFY_SOCKET: the same server, as before.
start_d plain --data-dir "$T/dn" --node datacenter=1 || finish
get "$PORT" /v1/snowflake
check "without NOTIFY_SOCKET it serves as before (got $CODE)" test "$CODE" = 200
stop_d "$DPID"
check "and exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" = 0

finish
