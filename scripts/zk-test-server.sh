#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Throwaway ZooKeeper servers for idmint's lease tests: one standalone
# server, or a three-member ensemble, on free ports of 127.0.0.1, each with
# its configuration, data directory, log and pid file inside one directory
# that the caller made and later removes. Nothing outside that directory is
# touched; the usual port 2181 is never assumed.
#
#   zk-test-server.sh start DIR [MEMBERS]  start 1 (default) or 3 members,
#                              wait until every one serves, print the client
#                              endpoints as host:port[,host:port...]
#   zk-test-server.sh stop DIR     kill every member (and the watcher) and
#                                  wait for them; quiet when none runs
#   zk-test-server.sh endpoints DIR   print the endpoints again
#   zk-test-server.sh pid DIR N    print member N's pid (1-based)
#   zk-test-server.sh leader DIR   print the number of the current leader
#                                  (1 for a standalone server)
#   zk-test-server.sh kill DIR N   kill -9 member N and wait for it
#   zk-test-server.sh restart DIR N
#                              start member N again on its ports and data
#                              directory, and wait until it serves
#
# Members run the server from Debian's zookeeper package (the jars in
# /usr/share/java, main class QuorumPeerMain) with a small heap, a tick of
# 200 ms (so sessions of 400 ms to 60 s are granted: minSessionTimeout and
# maxSessionTimeout are set), no limit on connections per address, no fsync
# of the transaction log (a throwaway server: speed over durability), the
# admin server off, and the four-letter words srvr, ruok, cons, stat and mntr
# allowed. Each member logs to DIR/mN.log.
#
# A watcher process kills the members when the owner dies (the process whose
# pid is in IDM_ZK_OWNER, by default the caller of this script), so a test
# that crashes does not leave Java running; IDM_ZK_OWNER=0 disables it.
#
# What it does not do: TLS, authentication, dynamic reconfiguration, or
# anything but loopback.
set -uo pipefail

me=zk-test-server.sh
# What the shared helpers call things here, and how long they wait.
KIND=server GROUP=ensemble NAME=ZooKeeper READY="start serving" PORTS="CPORT PPORT EPORT"
READY_TRIES=300 LEADER_TRIES=100 LEADER_PAUSE=0.1 OWNER=${IDM_ZK_OWNER:-$PPID} USAGE_TAIL=
# shellcheck source-path=SCRIPTDIR source=test-server-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-server-lib.sh" || exit 1
JARS=/usr/share/java
TICK_MS=200

need_tools() {
    command -v java >/dev/null 2>&1 || die "start: no java on PATH; install the zookeeper package"
    [ -r "$JARS/zookeeper.jar" ] ||
        die "start: no $JARS/zookeeper.jar; install the zookeeper package"
    [ -r "$JARS/slf4j-simple.jar" ] ||
        die "start: no $JARS/slf4j-simple.jar; install libslf4j-java"
}

conf_head() { :; }

# four PORT WORD: the answer of a four-letter word, empty if none in 2 s.
# shellcheck disable=SC2016 # expanded by the inner shell
four() {
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "%s" "$2" >&3
        cat <&3' four "$1" "$2" 2>/dev/null
}

# mode PORT: standalone, leader or follower, empty if not serving.
mode() {
    four "$1" srvr | sed -n 's/^Mode: //p'
}

# member_ready PORT: the member serves (srvr names its mode).
member_ready() {
    [ -n "$(mode "$1")" ]
}

is_leader() {
    local m
    m=$(mode "$1")
    [ "$m" = leader ] || [ "$m" = standalone ]
}

# write_conf DIR N: member N's zoo.cfg and myid.
write_conf() {
    local dir=$1 n=$2 c i p e
    eval "c=\$CPORT$n"
    mkdir -p "$dir/m$n/data" || die "cannot write in '$dir'"
    {
        echo "tickTime=$TICK_MS"
        echo "initLimit=20"
        echo "syncLimit=5"
        echo "dataDir=$dir/m$n/data"
        echo "clientPort=$c"
        echo "clientPortAddress=127.0.0.1"
        echo "maxClientCnxns=0"
        echo "minSessionTimeout=$((2 * TICK_MS))"
        echo "maxSessionTimeout=60000"
        echo "admin.enableServer=false"
        echo "4lw.commands.whitelist=srvr,ruok,cons,stat,mntr"
        echo "autopurge.purgeInterval=0"
        echo "forceSync=no"
        if [ "$MEMBERS" -gt 1 ]; then
            echo "cnxTimeout=1000"
            for i in $(seq 1 "$MEMBERS"); do
                eval "p=\$PPORT$i; e=\$EPORT$i"
                echo "server.$i=127.0.0.1:$p:$e"
            done
        fi
    } >"$dir/m$n/zoo.cfg"
    echo "$n" >"$dir/m$n/data/myid"
}

# launch DIR N: (re)write member N's configuration (the same each time),
# start it in the background, record its pid.
launch() {
    local dir=$1 n=$2
    write_conf "$dir" "$n"
    setsid java -Xmx128m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dzookeeper.jmx.log4j.disable=true -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.showDateTime=true \
        -cp "$JARS/zookeeper.jar:$JARS/slf4j-simple.jar" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/m$n/zoo.cfg" \
        >>"$dir/m$n.log" 2>&1 </dev/null &
    printf '%s\n' "$!" >"$dir/m$n.pid"
}

wipe_members() {
    local i
    rm -rf "$1"/m[0-9]*/
    for i in $(seq 1 "$2"); do : >"$1/m$i.log"; done
}

member_command "$@"
