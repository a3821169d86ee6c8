#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Credentials in coordinator and store URLs never reach ps(1), an error or
# a printed configuration: a password given as user:password@ or as a
# password= option is blanked in /proc/PID/cmdline as soon as idmint or
# idmintd starts, and every message masks it as ***.
#
# The processes are kept alive by a listener on a loopback port that takes
# connections and never answers (the client waits for its connect timeout),
# so their command lines can be read while they run.
#
# Usage: bash test_credentials.sh /path/to/idmint
set -u
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need python3 timeout

D="$(cd "$(dirname "$BIN")" && pwd)/idmintd"
SECRET=hunter2pw
LPID=""
cleanup() {
    [ -n "$LPID" ] && kill "$LPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

# A silent listener: accepts, reads, never writes. Its port in $T/port.
python3 - "$T/port" <<'EOF' &
import socket, sys, threading, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
def hold(c):
    held.append(c)
    try:
        while c.recv(4096):
            pass
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=hold, args=(c,), daemon=True).start()
EOF
LPID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
P=$(cat "$T/port" 2>/dev/null)
[ -n "$P" ] || { bad "the silent listener did not start"; finish; }

# cmdline_of PID: its command line, NULs as spaces ("" once it is gone).
cmdline_of() { { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null; }

# hidden DESC CMD...: CMD runs in the background (waiting on the listener);
# within 2 s its command line shows the URL masked, not the secret;
# after it ends, its stderr does not hold the secret either.
hidden() {
    local desc=$1 pid line seen="" i
    shift
    "$@" >"$T/out" 2>"$T/err" </dev/null &
    pid=$!
    # From exec until main has run, the command line is as given: wait for
    # the mask, and fail if the secret is still there after 2 s.
    for i in $(seq 40); do
        line=$(cmdline_of "$pid")
        case $line in
            *"$SECRET"*) seen=secret ;;
            *'***'*) seen=masked; break ;;
            *) seen="gone or other" ;;
        esac
        sleep 0.05
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ "$seen" = masked ]; then ok; else bad "$desc: ps shows [$line] ($seen)"; fi
    if grep -q "$SECRET" "$T/out" "$T/err"; then
        bad "$desc: the output holds the password: $(cat "$T/out" "$T/err")"
    else
        ok
    fi
}

hidden "idmint lease list postgres://user:password@" \
    "$BIN" lease list "postgres://idm:$SECRET@127.0.0.1:$P/db?connect_timeout=3"
hidden "idmint next --lease postgresql://...?password=" \
    "$BIN" next --layout sonyflake --lease "postgresql://idm@127.0.0.1:$P/db?connect_timeout=3&password=$SECRET"
hidden "idmint seq next --store postgres://user:password@" \
    "$BIN" seq next --store "postgres://idm:$SECRET@127.0.0.1:$P/db?connect_timeout=3" orders
hidden "idmintd --lease postgres://user:password@" \
    "$D" --listen 127.0.0.1:0 --data-dir "$T/d" \
    --lease "postgres://idm:$SECRET@127.0.0.1:$P/db?connect_timeout=3"

# nothing_leaks DESC CMD...: CMD fails with an error, and neither output
# holds the secret.
nothing_leaks() {
    local desc=$1 rc
    shift
    timeout 20 "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    if grep -q "$SECRET" "$T/out" "$T/err"; then
        bad "$desc: the password shows: $(cat "$T/out" "$T/err")"
    elif [ "$rc" -eq 0 ] || [ ! -s "$T/err" ]; then
        bad "$desc: want a failure with an error; exit $rc, stderr [$(cat "$T/err")]"
    else
        ok
    fi
}
nothing_leaks "a refused lease URL" \
    "$BIN" lease list "nosuch://idm:$SECRET@127.0.0.1:1/x"
nothing_leaks "an unknown etcds option holding a password" \
    "$BIN" lease list "etcds://127.0.0.1:1/idmint?password=$SECRET"
nothing_leaks "a lease coordinator that refuses connections" \
    "$BIN" lease list "postgres://idm:$SECRET@127.0.0.1:1/db?connect_timeout=2"
nothing_leaks "idmintd with a store that refuses connections" \
    "$D" --listen 127.0.0.1:0 --data-dir "$T/d" \
    --store "postgres://idm:$SECRET@127.0.0.1:1/db?connect_timeout=2"
# A configuration that is fine: printed, with the password masked.
"$D" --check-config --data-dir "$T/d" --lease "postgres://idm:$SECRET@127.0.0.1:1/db" \
    >"$T/out" 2>"$T/err"
if grep -q "$SECRET" "$T/out" "$T/err" || ! grep -q 'lease *= *postgres://idm:\*\*\*@' "$T/out"; then
    bad "idmintd --check-config: want the lease URL printed masked: $(cat "$T/out" "$T/err")"
else
    ok
fi

finish
