#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The fleet over time on ZooKeeper (zk://): real `idmint next --lease` runs
# against a real ZooKeeper server that this script starts on free loopback
# ports (scripts/zk-test-server.sh) and always stops, through the bodies of
# lib_fleet.sh:
#
#   - Z3r: a holder killed with kill -9 and started again at once resumes
#     its claim through its saved session (the same worker id, no wait for
#     the dead session to expire, none for the mark); and a claim resumes
#     once: a dead holder's state directory copied and both copies started
#     at once, the saved claim is confirmed to one (its reattach moves the
#     worker node to a session of its own), the other claims another worker
#     id;
#   - E2r: the server frozen (SIGSTOP) when the holder restarts: it mints
#     under the saved claim up to the saved deadline and stops there; past
#     the deadline, or on another boot, it refuses; with the server back
#     (SIGCONT) before the deadline, it reattaches the saved session and
#     mints on past it; Z2r: once the server is back, the session that
#     expired meanwhile is not resumed;
#   - E3 then E4: the holder's session ended behind its back (the server
#     then tells its client the session expired, as after Z2's partition),
#     then its worker node deleted, under a running holder: each time it
#     logs the loss and re-claims another worker id, mints on under it,
#     and never under the lost one again.
#
# The session is expired the way ZooKeeper's own tests do it: a second
# client (a small Java program on the server's own client jar, started once)
# connects with the session's id and password, taken from the holder's
# claim file, and closes it; the server then ends the session, and the
# holder's client, on reconnecting, is told it expired. The holder is
# stopped (SIGSTOP) for the moment of the takeover, far shorter than its
# deadline, since its client would otherwise take the session straight
# back. The worker node is deleted by the same program on a session of its
# own.
#
# Usage: bash test_fleet_zk.sh /path/to/idmint
# Needs java and Debian's zookeeper package. Ends with one line
# "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need java xargs mkfifo
# shellcheck source=lib_fleet.sh
source "$(dirname "$0")/lib_fleet.sh"
SERVER=$SCRIPTS/zk-test-server.sh
COORD=ZooKeeper
FTTL=3000
ROW_RESUME=Z3r
ROW_OFFLINE=E2r
ROW_STALE=Z2r

START=$(now_ms)

# The session killer: reads "expire ID-PASSWORD" or "delete PATH" lines,
# answers "done" or "failed: why" for each.
cat >"$T/ZkKill.java" <<'EOF'
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class ZkKill {
    static ZooKeeper connect(String ep, long id, byte[] pw) throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        Watcher w = e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected)
                up.countDown();
        };
        ZooKeeper zk = pw == null ? new ZooKeeper(ep, 4000, w) : new ZooKeeper(ep, 4000, w, id, pw);
        if (!up.await(10, TimeUnit.SECONDS))
            throw new Exception("no connection to " + ep);
        return zk;
    }

    public static void main(String[] a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        connect(a[0], 0, null).close(); // warm up: classes loaded, a session made
        System.out.println("ready");
        for (String line; (line = in.readLine()) != null;) {
            String[] c = line.trim().split(" ");
            try {
                if (c[0].equals("expire")) {
                    String[] h = c[1].split("-");
                    byte[] pw = new byte[h[1].length() / 2];
                    for (int i = 0; i < pw.length; i++)
                        pw[i] = (byte) Integer.parseInt(h[1].substring(2 * i, 2 * i + 2), 16);
                    connect(a[0], Long.parseUnsignedLong(h[0], 16), pw).close();
                } else {
                    ZooKeeper zk = connect(a[0], 0, null);
                    zk.delete(c[1], -1);
                    zk.close();
                }
                System.out.println("done");
            } catch (Exception e) {
                System.out.println("failed: " + e);
            }
            System.out.flush();
        }
    }
}
EOF

start_server EP zk ZooKeeper 1
ZKPID=$(bash "$SERVER" pid "$T/zk" 1)
# Resumed by the EXIT trap too, should a check stop the script while the
# server is frozen.
PIDS+=("$ZKPID")
coord_stop() { kill -STOP "$ZKPID"; }
coord_start() { kill -CONT "$ZKPID"; }

# The killer starts now (its JVM warms up while the first bodies run).
mkfifo "$T/zk.in"
java -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
    -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
    "$T/ZkKill.java" "$EP" <"$T/zk.in" >"$T/zk.out" 2>"$T/zk.err" &
KPID=$!
PIDS+=("$KPID")
exec 5>"$T/zk.in"

# killer COMMAND: send COMMAND, wait (at most 15 s) for its answer; 0 if it
# was done. Once the killer is gone, nothing is sent (a write would raise
# SIGPIPE).
KDONE=0
killer() {
    kill -0 "$KPID" 2>/dev/null || return 1
    KDONE=$((KDONE + 1))
    (
        trap '' PIPE
        printf '%s\n' "$*" >&5
    ) || return 1
    for _ in $(seq 300); do
        [ "$(grep -c -e '^done$' -e '^failed' "$T/zk.out")" -ge "$KDONE" ] && break
        sleep 0.05
    done
    [ "$(grep -e '^done$' -e '^failed' "$T/zk.out" | sed -n "${KDONE}p")" = "done" ]
}

# Z3r: kill -9 and restart at once.
fleet_resume "zk://$EP/fleet-resume"

# Z3r: one saved claim, two restarts (a copied state directory).
fleet_twice "zk://$EP/fleet-twice"

# E2r (Z2r): the server frozen at the restart.
fleet_offline "zk://$EP/fleet-offline"

# E3: the holder's session ended behind its back while it is healthy.
e3_expire() {
    local h rc
    h=$(claim_field handle)
    for _ in $(seq 200); do grep -q '^ready$' "$T/zk.out" && break; sleep 0.05; done
    if ! grep -q '^ready$' "$T/zk.out"; then
        bad "E3: the session killer is not ready [$(peek 300 "$T/zk.err")]"
        return
    fi
    kill -STOP "$LOSS_PID"
    killer expire "$h"
    rc=$?
    kill -CONT "$LOSS_PID"
    check "E3: the holder's session was taken over and closed [$(tail -n 1 "$T/zk.out")]" \
        test "$rc" -eq 0
}
# E4: the worker node deleted by hand.
e4_delete() {
    local rc
    killer delete "/fleet-loss/workers/$1"
    rc=$?
    check "E4: the worker node was deleted [$(tail -n 1 "$T/zk.out")]" test "$rc" -eq 0
}
fleet_loss "zk://$EP/fleet-loss" e3_expire e4_delete

exec 5>&-
bash "$SERVER" stop "$T/zk"
note "total $(($(now_ms) - START)) ms"
finish
