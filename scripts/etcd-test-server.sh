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
# What the shared helpers call things here, and how long they wait.
KIND=cluster GROUP=cluster NAME=etcd READY="become healthy" PORTS="CPORT PPORT"
READY_TRIES=200 LEADER_TRIES=50 LEADER_PAUSE=0.2 OWNER=${IDM_ETCD_OWNER:-$PPID}
USAGE_TAIL=" [wipe] | start-tls DIR CERTDIR [auth [TOKEN_TTL]] | user DIR NAME PASSWORD_FILE [PREFIX]"
# shellcheck source-path=SCRIPTDIR source=test-server-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-server-lib.sh" || exit 1

# TLS=1 (clients over HTTPS: etcdctl with the test client's certificate),
# TOKEN_TTL (set: JWT tokens of that lifetime) and AUTH=1 (authentication
# enabled: etcdctl as root, its password from the environment, never from
# the command line) come from cluster.conf; start-tls has start write them
# there (TLSCONF).
TLS=0
AUTH=0
CERTS=
TOKEN_TTL=
TLSCONF=

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

need_tools() {
    command -v etcd >/dev/null 2>&1 || die "start: no etcd on PATH; install etcd-server"
    command -v etcdctl >/dev/null 2>&1 || die "start: no etcdctl on PATH; install etcd-client"
}

# token: a new cluster token.
token() {
    echo "idmint-test-$$-$RANDOM$RANDOM-$(date +%s%N)"
}

conf_head() {
    echo "TOKEN=$(token)"
    [ -z "$TLSCONF" ] || printf '%s\n' "$TLSCONF"
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

# member_ready PORT: the member answers /health as healthy.
member_ready() {
    ctl --dial-timeout=500ms --command-timeout=1s \
        --endpoints="$(scheme)://127.0.0.1:$1" endpoint health >/dev/null 2>&1
}

is_leader() {
    local line
    # Simple format: endpoint, id, version, db size, is leader, ...
    line=$(ctl --endpoints="$(scheme)://127.0.0.1:$1" endpoint status 2>/dev/null) || return 1
    [ "$(printf '%s\n' "$line" | awk -F', ' '{print $5}')" = true ]
}

wipe_members() {
    rm -rf "$1"/m*.etcd
    : >"$1/m1.log"
}

# restart_option DIR N OPTION: "wipe" empties the member's data directory
# and gives the cluster a new token (a one-member cluster only).
restart_option() {
    if [ "$3" = wipe ]; then
        [ "$MEMBERS" = 1 ] || die "restart: wipe needs a one-member cluster"
        rm -rf "$1/m$2.etcd"
        sed -i "s/^TOKEN=.*/TOKEN=$(token)/" "$1/cluster.conf"
        load_conf "$1"
    elif [ -n "$3" ]; then
        die "restart: unknown option '$3'"
    fi
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
    eps=$(TLSCONF="TLS=1
CERTS=$certs
TOKEN_TTL=$ttl"
        cmd_start "$dir" 1) || exit 1
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
start-tls:?*) cmd_start_tls "$2" "${3:?start-tls needs CERTDIR}" "${4:-}" "${5:-}" ;;
user:?*) cmd_user "$2" "${3:?user needs NAME}" "${4:?user needs PASSWORD_FILE}" "${5:-}" ;;
*) member_command "$@" ;;
esac
