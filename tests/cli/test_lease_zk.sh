#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of idmint's worker-id leases on the ZooKeeper coordinator
# (zk://host:port[,host:port...]/prefix), with real idmint processes against
# a real ZooKeeper server that this script starts on free loopback ports
# (scripts/zk-test-server.sh) and always stops:
#
#   - churn: 50 `next --lease` processes, 10 at a time, one in five killed
#     with kill -9 mid-run (its id stays held until its session expires),
#     never repeat an id, and each id decodes to the lease's node fields;
#   - lease list and lease hold on zk:// (the holder's record names it);
#   - ZooKeeper unreachable (the server stopped with SIGSTOP): a holder stops
#     minting within its session timeout and exits 1 with one error line;
#   - bad URLs fail with one stderr line (credentials refused and never
#     shown), and an address where nothing listens fails within a bounded
#     time.
#
# Usage: bash test_lease_zk.sh /path/to/idmint
# Needs java and Debian's zookeeper package. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need java timeout
SERVER=$SCRIPTS/zk-test-server.sh

START=$(now_ms)

# ---- bad URLs: nothing to start for these ----

fails_with 2 "no /prefix" next --lease zk:// --node datacenter=1
fails_with 2 "no /prefix" lease list zk://
fails_with 2 "no /prefix" lease hold zk://127.0.0.1:2181
fails_with 2 "no host:port" next --lease zk:///p --node datacenter=1
fails_with 2 "not host:port" next --lease zk://host-without-port/p --node datacenter=1
fails_with 2 "not host:port" lease hold zk://127.0.0.1:0/p
fails_with 2 "ends with '/'" lease list zk://127.0.0.1:2181/p/
fails_with 2 "'.' or '..'" lease list zk://127.0.0.1:2181/p/../q
fails_with 2 "takes no options" lease list "zk://127.0.0.1:2181/p?user=x"
fails_with 2 "credentials" lease list zk://admin:s3cr3t@127.0.0.1:2181/p
check "credentials are never shown [$(peek 300 "$T/err")]" test "$(grep -c s3cr3t "$T/err")" -eq 0
fails_with 1 "no ZooKeeper server answered" next --lease zk://127.0.0.1:1/p --lease-ttl 1000 \
    --node datacenter=1
fails_with 1 "no ZooKeeper server answered" lease hold zk://127.0.0.1:1/p --ttl 1000

# ---- a standalone server ----

start_server EP zk ZooKeeper 1
ZKDIR="$T/zk"
ZKPID=$(bash "$SERVER" pid "$ZKDIR" 1)

# ---- lease hold and list ----

U0="zk://$EP/hold"
spawn h lease hold "$U0" --max 4 --ttl 2000
PH=$SPAWNED
check "hold: holds a worker id [$(peek 300 "$T/h.err")]" wait_out "$T/h.out" "$PH"
WH=$(field "$(head -n 1 "$T/h.out")" worker)
run lease list "$U0"
LH=$(grep "^worker=$WH " "$T/out" | head -n 1)
check "hold: lease list shows it held by the holder [$LH]; $(show)" \
    test "$RC" -eq 0 -a "$(field "$LH" held)" = yes -a "${LH##* holder=*:}" = "$PH"
stop "$PH" TERM
check "hold: the holder exits 0 on SIGTERM, silent (status $STOPPED) [$(peek 300 "$T/h.err")]" \
    test "$STOPPED" -eq 0 -a ! -s "$T/h.err"
run lease list "$U0"
LH=$(grep "^worker=$WH " "$T/out" | head -n 1)
check "hold: released at once [$LH]" test "$(field "$LH" held)" = no

# ---- idmintd on zk:// ----

idmintd_serves "zk://$EP/idmintd" 32

# ---- churn: 50 processes, 10 at a time, one in five killed ----

U2="zk://$EP/churn"
CHURN0=$(now_ms)
churn "$U2" 50 10 40 --lease-ttl 2000 --layout "$SLOW" --epoch "$TW_EPOCH" --node datacenter=1
check "churn: 10 processes were killed mid-run (got $KILLED)" test "$KILLED" -eq 10
churn_workers 100 --layout "$SLOW" --epoch "$TW_EPOCH"
churn_listed "$U2"
note "churn: 50 processes in $(($(now_ms) - CHURN0)) ms, $TOTAL ids"

# ---- ZooKeeper unreachable: a holder stops within its session timeout ----

unreachable "zk://$EP/frozen" "$ZKPID" ZooKeeper 300 "the stop + session timeout"

bash "$SERVER" stop "$ZKDIR"
note "total $(($(now_ms) - START)) ms"
finish
