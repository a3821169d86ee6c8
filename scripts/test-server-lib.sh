# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the throwaway test servers' scripts (etcd-test-server.sh,
# zk-test-server.sh, pg-test-server.sh) have in common. Not a command: each
# script sources it after setting `me` (its name, for die). pg-test-server.sh
# uses die, random_port and port_busy only; the member scripts (etcd, zk) run
# 1 or 3 members, each with its pid in DIR/mN.pid and its log in DIR/mN.log,
# their ports in DIR/cluster.conf, and use the rest. Those scripts set
#
#   KIND, GROUP   "cluster" and "cluster" (etcd), "server" and "ensemble"
#                 (zk): what the messages call a started DIR and its members
#   NAME, READY   the server's name and what a member does once it is up
#                 ("become healthy", "start serving"), for the messages
#   PORTS         the names of each member's ports in cluster.conf (CPORT,
#                 the client port, first): CPORTn, PPORTn...
#   READY_TRIES   how many times (100 ms apart) a start waits for a member
#   LEADER_TRIES, LEADER_PAUSE   how often cmd_leader asks the members
#   OWNER         the pid the watcher follows (0: no watcher)
#   USAGE_TAIL    what the usage line adds after "restart DIR N"
#
# and define need_tools (dies if the server cannot run here), conf_head
# (cluster.conf's lines before the ports), launch DIR N (starts member N in
# the background, its pid in DIR/mN.pid), member_ready PORT, is_leader PORT,
# wipe_members DIR MEMBERS (clears what a failed start left before the next
# try) and, if restart takes an option, restart_option DIR N OPTION.

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

# load_conf DIR: MEMBERS and the ports of the members started in DIR.
load_conf() {
    [ -f "$1/cluster.conf" ] || die "no $KIND was started in '$1'"
    # shellcheck disable=SC1091
    . "$1/cluster.conf"
    CONF_DIR=$1
}

# check_member N: N is a member number of the loaded cluster.
check_member() {
    case $1 in '' | *[!0-9]*) die "'$1' is not a member number" ;; esac
    # shellcheck disable=SC2153 # MEMBERS comes from cluster.conf
    if [ "$1" -lt 1 ] || [ "$1" -gt "$MEMBERS" ]; then
        die "no member $1 (the $GROUP has $MEMBERS)"
    fi
}

# client_port N: member N's client port.
client_port() {
    eval "printf '%s\n' \"\$CPORT$1\""
}

endpoints() {
    local i out=""
    # shellcheck disable=SC2153 # MEMBERS comes from cluster.conf
    for i in $(seq 1 "$MEMBERS"); do
        out="$out${out:+,}127.0.0.1:$(client_port "$i")"
    done
    printf '%s\n' "$out"
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

# wait_ready DIR N...: until each member is ready (member_ready).
wait_ready() {
    local dir=$1 n ok
    shift
    for _ in $(seq 1 "$READY_TRIES"); do
        ok=1
        for n in "$@"; do
            member_alive "$dir" "$n" || return 1
            member_ready "$(client_port "$n")" || ok=0
        done
        [ "$ok" = 1 ] && return 0
        sleep 0.1
    done
    return 1
}

# start_watcher DIR: a process that kills the members when OWNER dies, so
# that a test that crashes does not leave them running.
start_watcher() {
    local dir=$1
    [ "$OWNER" = 0 ] && return 0
    # shellcheck disable=SC2016
    setsid bash -c '
        owner=$1 dir=$2
        while kill -0 "$owner" 2>/dev/null; do sleep 1; done
        for f in "$dir"/m*.pid; do
            [ -f "$f" ] || continue
            p=$(cat "$f" 2>/dev/null)
            [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
        done' watcher "$OWNER" "$dir" >/dev/null 2>&1 </dev/null &
    printf '%s\n' "$!" >"$dir/watch.pid"
}

cmd_start() {
    local dir=$1 members=${2:-1} i p try
    case $members in 1 | 3) ;; *) die "start: MEMBERS must be 1 or 3, not '$members'" ;; esac
    [ -d "$dir" ] || die "start: '$dir' is not a directory"
    dir=$(cd "$dir" && pwd) || die "start: cannot enter '$dir'"
    case $dir in *[[:space:]]*) die "start: '$dir' holds white space" ;; esac
    [ ! -e "$dir/cluster.conf" ] || die "start: '$dir' already holds a $KIND"
    need_tools

    for try in 1 2 3 4 5; do
        {
            echo "MEMBERS=$members"
            conf_head
            for i in $(seq 1 "$members"); do
                for p in $PORTS; do
                    echo "$p$i=$(free_port)"
                done
            done
        } >"$dir/cluster.conf.new" || die "start: cannot write in '$dir'"
        mv "$dir/cluster.conf.new" "$dir/cluster.conf"
        load_conf "$dir"
        for i in $(seq 1 "$members"); do
            launch "$dir" "$i"
        done
        [ "$try" = 1 ] && start_watcher "$dir"
        if wait_ready "$dir" $(seq 1 "$members"); then
            endpoints
            return 0
        fi
        kill_members "$dir"
        if ! grep -q -i "address already in use" "$dir"/m*.log 2>/dev/null; then
            break
        fi
        wipe_members "$dir" "$members"
    done
    tail -n 20 "$dir"/m*.log >&2 2>/dev/null
    rm -f "$dir/cluster.conf"
    die "start: $NAME did not $READY (see the log above)"
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
    local dir=$1 i
    load_conf "$dir"
    for _ in $(seq 1 "$LEADER_TRIES"); do
        for i in $(seq 1 "$MEMBERS"); do
            member_alive "$dir" "$i" || continue
            if is_leader "$(client_port "$i")"; then
                printf '%s\n' "$i"
                return 0
            fi
        done
        sleep "$LEADER_PAUSE"
    done
    die "leader: no member is leader"
}

cmd_kill() {
    load_conf "$1"
    check_member "$2"
    kill_one "$1" "$2"
}

# cmd_restart DIR N [OPTION]: start member N again on its ports and data
# directory (restart_option may change them first), wait until it is ready.
cmd_restart() {
    local dir=$1 n=$2
    dir=$(cd "$dir" && pwd) || die "restart: cannot enter '$1'"
    load_conf "$dir"
    check_member "$n"
    kill_one "$dir" "$n"
    if declare -F restart_option >/dev/null; then
        restart_option "$dir" "$n" "${3:-}"
    fi
    launch "$dir" "$n"
    wait_ready "$dir" "$n" || {
        tail -n 20 "$dir/m$n.log" >&2
        die "restart: member $n did not $READY"
    }
}

# member_command ARGS...: run the command the member script was given.
member_command() {
    case "${1:-}:${2:-}" in
    start:?*) cmd_start "$2" "${3:-1}" ;;
    stop:?*) cmd_stop "$2" ;;
    endpoints:?*) load_conf "$2" && endpoints ;;
    pid:?*) cmd_pid "$2" "${3:?pid needs N}" ;;
    leader:?*) cmd_leader "$2" ;;
    kill:?*) cmd_kill "$2" "${3:?kill needs N}" ;;
    restart:?*) cmd_restart "$2" "${3:?restart needs N}" "${4:-}" ;;
    *)
        echo "usage: $me start DIR [1|3] | stop DIR | endpoints DIR | pid DIR N | leader DIR |" \
            "kill DIR N | restart DIR N${USAGE_TAIL:-}" >&2
        exit 2
        ;;
    esac
}
