#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Throwaway etcd servers for idmint's lease tests: one member, or a
# three-member cluster, on free ports of 127.0.0.1, with their data
# directories, logs and pid files inside one directory that the caller made
# and later removes. Nothing outside that directory is touched; the usual
# port 2379 is never assumed.
#
#   etcd-test-server.sh start DIR [MEMBERS]  start 1 (default) or 3 members,
#                              wait until every one is healthy, print the
#                              client endpoints as host:port[,host:port...]
#   etcd-test-server.sh stop DIR     kill every member (and the watcher) and
#                                    wait for them; quiet when none runs
#   etcd-test-server.sh endpoints DIR   print the endpoints again
#   etcd-test-server.sh pid DIR N    print member N's pid (1-based)
#   etcd-test-server.sh leader DIR   print the number of the current leader
#   etcd-test-server.sh kill DIR N   kill -9 member N and wait for it
#   etcd-test-server.sh restart DIR N [wipe]
#                              start member N again on its ports, on its data
#                              directory (kept, or with "wipe" emptied and
#                              bootstrapped as a new cluster: one member only)
#   etcd-test-server.sh start-tls DIR CERTDIR [auth [TOKEN_TTL]]
#                              start one member that serves clients over
#                              HTTPS only, with the certificates that
#                              etcd-test-certs.sh made in CERTDIR (server.pem
#                              for 127.0.0.1, clients must present a
#                              certificate signed by ca.pem); with "auth",
#                              authentication enabled too: a root user (its
#                              password in DIR/root.pw), JWT tokens that
#                              expire TOKEN_TTL (default 2s) after they are
#                              made, whatever their use, so that a test sees
#                              them expire; print the endpoint
#   etcd-test-server.sh user DIR NAME PASSWORD_FILE [PREFIX]
#                              (auth) add the user NAME, its password the
#                              first line of PASSWORD_FILE; with PREFIX, a
#                              role NAME-rw that may read and write the keys
#                              under PREFIX, granted to it
#
# Members run with etcd's default timing (heartbeat 100 ms, election 1 s, so
# the shortest lease etcd grants is 2 s). Each start makes a new cluster
# token, so a wiped member comes back as a different cluster (another
# cluster id), as a real re-bootstrap would.
#
# A watcher process kills the members when the owner dies (the process whose
# pid is in IDM_ETCD_OWNER, by default the caller of this script), so a test
# that crashes does not leave etcd running; IDM_ETCD_OWNER=0 disables it.
#
# Peers always talk plain HTTP; nothing but loopback is used.
set -uo pipefail

me=etcd-test-server.sh

die() {
    echo "$me: $*" >&2
    exit 1
}

# TLS=1 (clients over HTTPS: etcdctl with the test client's certificate),
# TOKEN_TTL (set: JWT tokens of that lifetime) and AUTH=1 (authentication
# enabled: etcdctl as root, its password from the environment, never from
# the command line) come from cluster.conf.
TLS=0
AUTH=0
CERTS=
TOKEN_TTL=

ctl() {
    local tls=() user=
    if [ "$TLS" = 1 ]; then
        tls=(--cacert="$CERTS/ca.pem" --cert="$CERTS/client.pem" --key="$CERTS/client-key.pem")
    fi
    [ "$AUTH" = 1 ] && [ -f "${CONF_DIR:-}/root.pw" ] && user="root:$(cat "$CONF_DIR/root.pw")"
    if [ -n "$user" ]; then
        ETCDCTL_USER=$user ETCDCTL_API=3 etcdctl --dial-timeout=1s --command-timeout=2s \
            "${tls[@]}" "$@"
    else
        ETCDCTL_API=3 etcdctl --dial-timeout=1s --command-timeout=2s "${tls[@]}" "$@"
    fi
}

# scheme: of the client URLs.
scheme() {
    if [ "$TLS" = 1 ]; then echo https; else echo http; fi
}

# random_port: a port below the kernel's ephemeral range. A port from that
# range, once free, can be taken as the source port of any outgoing
# connection (etcd members keep reconnecting to a stopped peer), and then a
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

# load_conf DIR: MEMBERS, TOKEN, CPORTn and PPORTn of the cluster in DIR.
load_conf() {
    [ -f "$1/cluster.conf" ] || die "no cluster was started in '$1'"
    # shellcheck disable=SC1091
    . "$1/cluster.conf"
    CONF_DIR=$1
}

# check_member N: N is a member number of the loaded cluster.
check_member() {
    case $1 in '' | *[!0-9]*) die "'$1' is not a member number" ;; esac
    # shellcheck disable=SC2153 # MEMBERS comes from cluster.conf
    if [ "$1" -lt 1 ] || [ "$1" -gt "$MEMBERS" ]; then
        die "no member $1 (the cluster has $MEMBERS)"
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

peer_list() {
    local i out=""
    for i in $(seq 1 "$MEMBERS"); do
        eval "out=\$out\${out:+,}m$i=http://127.0.0.1:\$PPORT$i"
    done
    printf '%s\n' "$out"
}

# launch DIR N: start member N in the background, record its pid.
launch() {
    local dir=$1 n=$2 c p s jwt extra=()
    eval "c=\$CPORT$n; p=\$PPORT$n"
    s=$(scheme)
    if [ "$TLS" = 1 ]; then
        extra+=(--cert-file "$CERTS/server.pem" --key-file "$CERTS/server-key.pem"
            --trusted-ca-file "$CERTS/ca.pem" --client-cert-auth)
    fi
    if [ -n "$TOKEN_TTL" ]; then
        jwt="jwt,pub-key=$CERTS/jwt-pub.pem,priv-key=$CERTS/jwt.pem,sign-method=RS256"
        extra+=(--bcrypt-cost 4 --auth-token "$jwt,ttl=$TOKEN_TTL")
    fi
    setsid etcd --name "m$n" --data-dir "$dir/m$n.etcd" "${extra[@]}" \
        --listen-client-urls "$s://127.0.0.1:$c" --advertise-client-urls "$s://127.0.0.1:$c" \
        --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
        --initial-cluster "$(peer_list)" --initial-cluster-token "$TOKEN" \
        --initial-cluster-state new >>"$dir/m$n.log" 2>&1 </dev/null &
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

# wait_healthy DIR N...: until each member answers /health as healthy.
wait_healthy() {
    local dir=$1 n c ok
    shift
    for _ in $(seq 1 200); do
        ok=1
        for n in "$@"; do
            member_alive "$dir" "$n" || return 1
            eval "c=\$CPORT$n"
            ctl --dial-timeout=500ms --command-timeout=1s \
                --endpoints="$(scheme)://127.0.0.1:$c" endpoint health >/dev/null 2>&1 || ok=0
        done
        [ "$ok" = 1 ] && return 0
        sleep 0.1
    done
    return 1
}

start_watcher() {
    local dir=$1 owner=${IDM_ETCD_OWNER:-$PPID}
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
    local dir=$1 members=${2:-1} i try tlsconf=${3:-}
    case $members in 1 | 3) ;; *) die "start: MEMBERS must be 1 or 3, not '$members'" ;; esac
    [ -d "$dir" ] || die "start: '$dir' is not a directory"
    dir=$(cd "$dir" && pwd) || die "start: cannot enter '$dir'"
    case $dir in *[[:space:]]*) die "start: '$dir' holds white space" ;; esac
    [ ! -e "$dir/cluster.conf" ] || die "start: '$dir' already holds a cluster"
    command -v etcd >/dev/null 2>&1 || die "start: no etcd on PATH; install etcd-server"
    command -v etcdctl >/dev/null 2>&1 || die "start: no etcdctl on PATH; install etcd-client"

    for try in 1 2 3 4 5; do
        {
            echo "MEMBERS=$members"
            echo "TOKEN=idmint-test-$$-$RANDOM$RANDOM-$(date +%s%N)"
            [ -z "$tlsconf" ] || printf '%s\n' "$tlsconf"
            for i in $(seq 1 "$members"); do
                echo "CPORT$i=$(free_port)"
                echo "PPORT$i=$(free_port)"
            done
        } >"$dir/cluster.conf.new" || die "start: cannot write in '$dir'"
        mv "$dir/cluster.conf.new" "$dir/cluster.conf"
        load_conf "$dir"
        for i in $(seq 1 "$members"); do
            launch "$dir" "$i"
        done
        [ "$try" = 1 ] && start_watcher "$dir"
        if wait_healthy "$dir" $(seq 1 "$members"); then
            endpoints
            return 0
        fi
        kill_members "$dir"
        if ! grep -q -i "address already in use" "$dir"/m*.log 2>/dev/null; then
            break
        fi
        rm -rf "$dir"/m*.etcd
        : >"$dir/m1.log"
    done
    tail -n 20 "$dir"/m*.log >&2 2>/dev/null
    rm -f "$dir/cluster.conf"
    die "start: etcd did not become healthy (see the log above)"
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
    local dir=$1 i c line
    load_conf "$dir"
    for _ in $(seq 1 50); do
        for i in $(seq 1 "$MEMBERS"); do
            member_alive "$dir" "$i" || continue
            eval "c=\$CPORT$i"
            # Simple format: endpoint, id, version, db size, is leader, ...
            line=$(ctl --endpoints="$(scheme)://127.0.0.1:$c" endpoint status 2>/dev/null) ||
                continue
            if [ "$(printf '%s\n' "$line" | awk -F', ' '{print $5}')" = true ]; then
                printf '%s\n' "$i"
                return 0
            fi
        done
        sleep 0.2
    done
    die "leader: no member is leader"
}

cmd_kill() {
    load_conf "$1"
    check_member "$2"
    kill_one "$1" "$2"
}

cmd_restart() {
    local dir=$1 n=$2 wipe=${3:-}
    dir=$(cd "$dir" && pwd) || die "restart: cannot enter '$1'"
    load_conf "$dir"
    check_member "$n"
    kill_one "$dir" "$n"
    if [ "$wipe" = wipe ]; then
        [ "$MEMBERS" = 1 ] || die "restart: wipe needs a one-member cluster"
        rm -rf "$dir/m$n.etcd"
        sed -i "s/^TOKEN=.*/TOKEN=idmint-test-$$-$RANDOM$RANDOM-$(date +%s%N)/" "$dir/cluster.conf"
        load_conf "$dir"
    elif [ -n "$wipe" ]; then
        die "restart: unknown option '$wipe'"
    fi
    launch "$dir" "$n"
    wait_healthy "$dir" "$n" || {
        tail -n 20 "$dir/m$n.log" >&2
        die "restart: member $n did not become healthy"
    }
}

# start-tls DIR CERTDIR [auth [TOKEN_TTL]]
cmd_start_tls() {
    local dir=$1 certs=$2 auth=${3:-} ttl=${4:-2s} f eps pw
    [ -d "$certs" ] || die "start-tls: '$certs' is not a directory"
    certs=$(cd "$certs" && pwd) || die "start-tls: cannot enter '$certs'"
    case $certs in *[[:space:],]*) die "start-tls: '$certs' holds white space or a comma" ;; esac
    for f in ca.pem server.pem server-key.pem client.pem client-key.pem jwt.pem jwt-pub.pem; do
        [ -r "$certs/$f" ] || die "start-tls: no $certs/$f (made by etcd-test-certs.sh)"
    done
    case $auth in '' | auth) ;; *) die "start-tls: unknown option '$auth'" ;; esac
    case $ttl in *[!0-9a-z]* | '') die "start-tls: '$ttl' is no duration (2s, 500ms)" ;; esac
    [ "$auth" = auth ] || ttl=
    eps=$(cmd_start "$dir" 1 "TLS=1
CERTS=$certs
TOKEN_TTL=$ttl") || exit 1
    dir=$(cd "$dir" && pwd)
    if [ "$auth" = auth ]; then
        load_conf "$dir"
        pw=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
        (umask 077 && printf '%s\n' "$pw" >"$dir/root.pw")
        printf '%s\n' "$pw" | ctl --endpoints="https://$eps" user add root --interactive=false \
            >/dev/null || die "start-tls: cannot add the root user"
        if ! ctl --endpoints="https://$eps" role add root >/dev/null ||
            ! ctl --endpoints="https://$eps" user grant-role root root >/dev/null ||
            ! ctl --endpoints="https://$eps" auth enable >/dev/null; then
            die "start-tls: cannot enable authentication"
        fi
        sed -i 's/^AUTH=.*//' "$dir/cluster.conf"
        echo "AUTH=1" >>"$dir/cluster.conf"
    fi
    printf '%s\n' "$eps"
}

# user DIR NAME PASSWORD_FILE [PREFIX]
cmd_user() {
    local dir=$1 name=$2 pwfile=$3 prefix=${4:-} eps
    load_conf "$dir"
    [ "$AUTH" = 1 ] || die "user: the server in '$dir' has no authentication"
    [ -r "$pwfile" ] || die "user: cannot read '$pwfile'"
    eps="https://$(endpoints)"
    head -n 1 "$pwfile" | ctl --endpoints="$eps" user add "$name" --interactive=false \
        >/dev/null || die "user: cannot add '$name'"
    [ -n "$prefix" ] || return 0
    if ! ctl --endpoints="$eps" role add "$name-rw" >/dev/null ||
        ! ctl --endpoints="$eps" role grant-permission "$name-rw" readwrite --prefix=true \
            "$prefix" >/dev/null ||
        ! ctl --endpoints="$eps" user grant-role "$name" "$name-rw" >/dev/null; then
        die "user: cannot grant '$name' the keys under '$prefix'"
    fi
}

case "${1:-}:${2:-}" in
start:?*) cmd_start "$2" "${3:-1}" ;;
start-tls:?*) cmd_start_tls "$2" "${3:?start-tls needs CERTDIR}" "${4:-}" "${5:-}" ;;
user:?*) cmd_user "$2" "${3:?user needs NAME}" "${4:?user needs PASSWORD_FILE}" "${5:-}" ;;
stop:?*) cmd_stop "$2" ;;
endpoints:?*) load_conf "$2" && endpoints ;;
pid:?*) cmd_pid "$2" "${3:?pid needs N}" ;;
leader:?*) cmd_leader "$2" ;;
kill:?*) cmd_kill "$2" "${3:?kill needs N}" ;;
restart:?*) cmd_restart "$2" "${3:?restart needs N}" "${4:-}" ;;
*)
    echo "usage: $me start DIR [1|3] | stop DIR | endpoints DIR | pid DIR N | leader DIR |" \
        "kill DIR N | restart DIR N [wipe] | start-tls DIR CERTDIR [auth [TOKEN_TTL]] |" \
        "user DIR NAME PASSWORD_FILE [PREFIX]" >&2
    exit 2
    ;;
esac
