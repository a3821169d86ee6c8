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
JARS=/usr/share/java
TICK_MS=200

die() {
    echo "$me: $*" >&2
    exit 1
}

# random_port: a port below the kernel's ephemeral range. A port from that
# range, once free, can be taken as the source port of any outgoing
# connection (members keep reconnecting to a stopped peer), and then a
# restarted server cannot bind it again.
random_port() {
    local lo=10000 hi
    hi=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ -n "$hi" ] && [ "$hi" -gt $((lo + 1000)) ] || hi=32768
    printf '%s\n' $((lo + (RANDOM * 32768 + RANDOM) % (hi - lo)))
}

# port_busy PORT: something accepts connections on 127.0.0.1:PORT.
port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$(random_port)
        port_busy "$p" && continue
        if command -v ss >/dev/null 2>&1 && ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
            continue
        fi
        printf '%s\n' "$p"
        return 0
    done
    die "no free port found"
}

# load_conf DIR: MEMBERS, CPORTn, PPORTn and EPORTn of the ensemble in DIR.
load_conf() {
    [ -f "$1/cluster.conf" ] || die "no server was started in '$1'"
    # shellcheck disable=SC1091
    . "$1/cluster.conf"
}

# check_member N: N is a member number of the loaded ensemble.
check_member() {
    case $1 in '' | *[!0-9]*) die "'$1' is not a member number" ;; esac
    # shellcheck disable=SC2153 # MEMBERS comes from cluster.conf
    if [ "$1" -lt 1 ] || [ "$1" -gt "$MEMBERS" ]; then
        die "no member $1 (the ensemble has $MEMBERS)"
    fi
}

endpoints() {
    local i out=""
    # shellcheck disable=SC2153 # MEMBERS comes from cluster.conf
    for i in $(seq 1 "$MEMBERS"); do
        eval "out=\$out\${out:+,}127.0.0.1:\$CPORT$i"
    done
    printf '%s\n' "$out"
}

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

# launch DIR N: start member N in the background, record its pid.
launch() {
    local dir=$1 n=$2
    setsid java -Xmx128m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dzookeeper.jmx.log4j.disable=true -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.showDateTime=true \
        -cp "$JARS/zookeeper.jar:$JARS/slf4j-simple.jar" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/m$n/zoo.cfg" \
        >>"$dir/m$n.log" 2>&1 </dev/null &
    printf '%s\n' "$!" >"$dir/m$n.pid"
}

# gone PID: the process has exited (a zombie that nobody has reaped yet
# counts as gone: it holds no port any more).
gone() {
    local state
    kill -0 "$1" 2>/dev/null || return 0
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
    [ -z "$state" ] || [ "$state" = Z ]
}

member_alive() {
    local pid
    pid=$(cat "$1/m$2.pid" 2>/dev/null) || return 1
    [ -n "$pid" ] && ! gone "$pid"
}

# wait_serving DIR N...: until each member serves (srvr names its mode).
wait_serving() {
    local dir=$1 n c ok
    shift
    for _ in $(seq 1 300); do
        ok=1
        for n in "$@"; do
            member_alive "$dir" "$n" || return 1
            eval "c=\$CPORT$n"
            [ -n "$(mode "$c")" ] || ok=0
        done
        [ "$ok" = 1 ] && return 0
        sleep 0.1
    done
    return 1
}

start_watcher() {
    local dir=$1 owner=${IDM_ZK_OWNER:-$PPID}
    [ "$owner" = 0 ] && return 0
    # shellcheck disable=SC2016
    setsid bash -c '
        owner=$1 dir=$2
        while kill -0 "$owner" 2>/dev/null; do sleep 1; done
        for f in "$dir"/m*.pid; do
            [ -f "$f" ] || continue
            p=$(cat "$f" 2>/dev/null)
            [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
        done' watcher "$owner" "$dir" >/dev/null 2>&1 </dev/null &
    printf '%s\n' "$!" >"$dir/watch.pid"
}

cmd_start() {
    local dir=$1 members=${2:-1} i try
    case $members in 1 | 3) ;; *) die "start: MEMBERS must be 1 or 3, not '$members'" ;; esac
    [ -d "$dir" ] || die "start: '$dir' is not a directory"
    dir=$(cd "$dir" && pwd) || die "start: cannot enter '$dir'"
    case $dir in *[[:space:]]*) die "start: '$dir' holds white space" ;; esac
    [ ! -e "$dir/cluster.conf" ] || die "start: '$dir' already holds a server"
    command -v java >/dev/null 2>&1 || die "start: no java on PATH; install the zookeeper package"
    [ -r "$JARS/zookeeper.jar" ] ||
        die "start: no $JARS/zookeeper.jar; install the zookeeper package"
    [ -r "$JARS/slf4j-simple.jar" ] ||
        die "start: no $JARS/slf4j-simple.jar; install libslf4j-java"

    for try in 1 2 3 4 5; do
        {
            echo "MEMBERS=$members"
            for i in $(seq 1 "$members"); do
                echo "CPORT$i=$(free_port)"
                echo "PPORT$i=$(free_port)"
                echo "EPORT$i=$(free_port)"
            done
        } >"$dir/cluster.conf.new" || die "start: cannot write in '$dir'"
        mv "$dir/cluster.conf.new" "$dir/cluster.conf"
        load_conf "$dir"
        for i in $(seq 1 "$members"); do
            write_conf "$dir" "$i"
            launch "$dir" "$i"
        done
        [ "$try" = 1 ] && start_watcher "$dir"
        if wait_serving "$dir" $(seq 1 "$members"); then
            endpoints
            return 0
        fi
        kill_members "$dir"
        if ! grep -q -i "address already in use" "$dir"/m*.log 2>/dev/null; then
            break
        fi
        rm -rf "$dir"/m[0-9]*/
        for i in $(seq 1 "$members"); do : >"$dir/m$i.log"; done
    done
    tail -n 20 "$dir"/m*.log >&2 2>/dev/null
    rm -f "$dir/cluster.conf"
    die "start: ZooKeeper did not start serving (see the log above)"
}

# kill_one DIR N: kill -9 member N (resuming it first if stopped), wait.
kill_one() {
    local pid
    pid=$(cat "$1/m$2.pid" 2>/dev/null) || return 0
    [ -n "$pid" ] || return 0
    kill -CONT "$pid" 2>/dev/null
    kill -9 "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 200); do
        gone "$pid" && return 0
        sleep 0.02
    done
    return 0
}

kill_members() {
    local f n
    for f in "$1"/m*.pid; do
        [ -f "$f" ] || continue
        n=${f##*/m}
        n=${n%.pid}
        kill_one "$1" "$n"
    done
}

cmd_stop() {
    local dir=$1 w
    [ -d "$dir" ] || return 0
    w=$(cat "$dir/watch.pid" 2>/dev/null)
    [ -n "$w" ] && kill "$w" 2>/dev/null
    kill_members "$dir"
    rm -f "$dir"/m*.pid "$dir/watch.pid"
    return 0
}

cmd_pid() {
    local dir=$1 n=$2
    load_conf "$dir"
    check_member "$n"
    [ -s "$dir/m$n.pid" ] || die "pid: no member $n in '$dir'"
    cat "$dir/m$n.pid"
}

cmd_leader() {
    local dir=$1 i c m
    load_conf "$dir"
    for _ in $(seq 1 100); do
        for i in $(seq 1 "$MEMBERS"); do
            member_alive "$dir" "$i" || continue
            eval "c=\$CPORT$i"
            m=$(mode "$c")
            if [ "$m" = leader ] || [ "$m" = standalone ]; then
                printf '%s\n' "$i"
                return 0
            fi
        done
        sleep 0.1
    done
    die "leader: no member is leader"
}

cmd_kill() {
    load_conf "$1"
    check_member "$2"
    kill_one "$1" "$2"
}

cmd_restart() {
    local dir=$1 n=$2
    dir=$(cd "$dir" && pwd) || die "restart: cannot enter '$1'"
    load_conf "$dir"
    check_member "$n"
    kill_one "$dir" "$n"
    launch "$dir" "$n"
    wait_serving "$dir" "$n" || {
        tail -n 20 "$dir/m$n.log" >&2
        die "restart: member $n did not start serving"
    }
}

case "${1:-}:${2:-}" in
start:?*) cmd_start "$2" "${3:-1}" ;;
stop:?*) cmd_stop "$2" ;;
endpoints:?*) load_conf "$2" && endpoints ;;
pid:?*) cmd_pid "$2" "${3:?pid needs N}" ;;
leader:?*) cmd_leader "$2" ;;
kill:?*) cmd_kill "$2" "${3:?kill needs N}" ;;
restart:?*) cmd_restart "$2" "${3:?restart needs N}" ;;
*)
    echo "usage: $me start DIR [1|3] | stop DIR | endpoints DIR | pid DIR N | leader DIR |" \
        "kill DIR N | restart DIR N" >&2
    exit 2
    ;;
esac
