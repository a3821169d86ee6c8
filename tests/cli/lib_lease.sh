# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the lease test scripts (tests/cli/test_lease*.sh) share, on top of
# lib.sh. Not a test itself: each script sources it in lib.sh's place, right
# after `set -u`, with
#
#     source "$(dirname "$0")/lib_lease.sh"
#
# while its own arguments are still in place. It opens file descriptor 3, a
# copy of stderr that stays visible where the shell's own stderr is muted
# (failures go there), sources lib.sh, and sets up what every lease script
# needs: HOME and IDMINT_STATE_DIR inside $T; PIDS, where each background
# process a script starts goes, and SERVERS, the directories of the test
# servers it started with the script $SERVER (one of $SCRIPTS): the EXIT
# trap resumes and kills the processes and stops the servers. The servers'
# watchers follow this shell (IDM_ETCD_OWNER, IDM_ZK_OWNER): they die with
# it. It then defines the helpers and the checks below, which replace
# lib.sh's fails_with.

exec 3>&2
FAIL_FD=3
SHOW_ERR=600
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts"
SERVER=
PIDS=()
SERVERS=()
cleanup() {
    local p d
    for p in "${PIDS[@]}"; do
        kill -CONT "$p" 2>/dev/null
        kill -9 "$p" 2>/dev/null
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    for d in "${SERVERS[@]}"; do
        bash "$SERVER" stop "$d" >/dev/null 2>&1
    done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export HOME="$T/home"
export IDMINT_STATE_DIR="$T/state"
export IDM_ETCD_OWNER=$$ IDM_ZK_OWNER=$$

TW_EPOCH=2010-11-04T01:42:54.657Z
# 16 ids per ms at most: long runs, and runs killed mid-way, stay small on
# disk. ONE_BIT has two worker ids.
ONE_BIT=time:41@1ms,worker:1,seq:4
SLOW=time:41@1ms,datacenter:5,worker:5,seq:4

note() { printf 'note: %s\n' "$*" >&3; }
# peek N FILE: the first N bytes of FILE, nothing if it is not there yet.
peek() { head -c "$1" "$2" 2>/dev/null; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
is_num() { [[ $1 =~ ^[0-9]+$ ]]; }
# field LINE KEY: the value of KEY=value in LINE.
field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
# one_line FILE: FILE is exactly one line starting with "idmint: ".
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && ends_nl "$1" && grep -q '^idmint: ' "$1"; }
# list_line URL WORKER: the `lease list` line of WORKER.
list_line() { "$BIN" lease list "$1" 2>/dev/null | grep "^worker=$2 " | head -n 1; }
# worker_of URL PID: the worker id held by PID (its record names its pid).
worker_of() {
    "$BIN" lease list "$1" 2>/dev/null | sed -n "s/^worker=\([0-9]*\) held=yes .* holder=[^ ]*:$2\$/\1/p"
}
# unix_ms LAYOUT ID: the unix ms of ID.
unix_ms() {
    "$BIN" decode --layout "$1" --epoch "$TW_EPOCH" "$2" 2>/dev/null |
        sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p'
}
max_id() { sort -n "$@" | tail -n 1; }
min_id() { sort -n "$@" | head -n 1; }

# trim FILE: drop a last line cut short by a kill.
trim() {
    if [ -s "$1" ] && ! ends_nl "$1"; then
        head -n -1 "$1" >"$1.tmp" && mv "$1.tmp" "$1"
    fi
}

# spawn NAME ARGS...: `idmint ARGS` in the background, stdout in
# $T/NAME.out, stderr in $T/NAME.err; its pid in SPAWNED and in PIDS.
spawn() {
    local name=$1
    shift
    "$BIN" "$@" >"$T/$name.out" 2>"$T/$name.err" &
    SPAWNED=$!
    PIDS+=("$SPAWNED")
}

# exited PID: PID is gone, or a zombie.
exited() {
    ! kill -0 "$1" 2>/dev/null || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ]
}

# wait_out FILE PID [TRIES]: wait (50 ms steps, default 5 s) until FILE has
# a complete line while PID lives.
wait_out() {
    local i
    for i in $(seq "${3:-100}"); do
        [ -s "$1" ] && [ "$(wc -l <"$1")" -ge 1 ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# wait_gone PID TRIES: wait (50 ms steps) for PID to exit; its status in
# $STOPPED (255 if it did not exit in time).
wait_gone() {
    local i
    for i in $(seq "$2"); do
        if exited "$1"; then
            { wait "$1"; } 2>/dev/null
            STOPPED=$?
            return 0
        fi
        sleep 0.05
    done
    STOPPED=255
    return 1
}

# stop PID SIGNAL: send SIGNAL, wait; the exit status in $STOPPED.
stop() {
    kill -"$2" "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
    STOPPED=$?
}

# start_server VAR DIR WHAT ARGS...: `$SERVER start $T/DIR ARGS` (DIR made
# if need be, and stopped on exit); what it prints in VAR. If it fails, that
# is a failed check ("cannot start WHAT") and the script ends.
start_server() {
    local var=$1 dir=$T/$2 what=$3 out
    shift 3
    mkdir -p "$dir"
    SERVERS+=("$dir")
    if ! out=$(bash "$SERVER" start "$dir" "$@" 2>"$dir.err"); then
        bad "cannot start $what: $(tail -n 5 "$dir.err")"
        finish
    fi
    printf -v "$var" '%s' "$out"
}

# fails_with STATUS TEXT ARGS...: exit STATUS, nothing on stdout, exactly
# one stderr line, starting with "idmint: " and holding TEXT; within
# FAILS_WITHIN ms (a script whose checks measure no time empties it) and,
# where SECRET is set, without SECRET in the line.
FAILS_WITHIN=15000
SECRET=
fails_with() {
    local status=$1 text=$2 t0 ms
    shift 2
    t0=$(now_ms)
    run "$@"
    ms=$(($(now_ms) - t0))
    if [ "$RC" -eq "$status" ] && [ ! -s "$T/out" ] && one_line "$T/err" &&
        grep -qF -- "$text" "$T/err" && { [ -z "$SECRET" ] || ! grep -qF -- "$SECRET" "$T/err"; } &&
        { [ -z "$FAILS_WITHIN" ] || [ "$ms" -lt "$FAILS_WITHIN" ]; }; then
        ok
    else
        bad "idmint $*: want exit $status${FAILS_WITHIN:+ within $((FAILS_WITHIN / 1000)) s} and one stderr line with [$text]${SECRET:+, no password}; $(show)${FAILS_WITHIN:+ after $ms ms}"
    fi
}

# ---- churn: processes of `next --lease`, some killed with kill -9 ----

# churn URL PROCS BATCH MIN ARGS...: PROCS `idmint next --lease URL ARGS`
# processes, BATCH at a time. Process i, where i % 5 is 2, mints without
# end and is killed with kill -9 once it minted a line (waited for up to
# CHURN_WAIT steps of 50 ms, default 100): it must die of it; every other
# process mints 2000 ids and must exit 0, silent. Every line must be an id,
# at least MIN x 2000 of them, all unique. Leaves each process's ids in
# $T/churn/i.out (a last line cut by the kill dropped), all of them in
# $T/churn.all, how many in TOTAL, and how many victims died of the kill in
# KILLED, for the caller to check.
churn() {
    local url=$1 procs=$2 batch=$3 min=$4 b i n st pids victims dups
    shift 4
    mkdir -p "$T/churn"
    KILLED=0
    # The shell reports each job killed by SIGKILL on its stderr: muted here.
    for ((b = 0; b < procs; b += batch)); do
        pids=()
        victims=()
        for ((i = b; i < b + batch; i++)); do
            n=2000
            [ $((i % 5)) -eq 2 ] && n=10000000 && victims+=("$i") # killed mid-run
            spawn "churn/$i" next --lease "$url" -n "$n" "$@"
            pids[i]=$SPAWNED
        done
        for i in "${victims[@]}"; do
            wait_out "$T/churn/$i.out" "${pids[i]}" "${CHURN_WAIT:-100}"
            sleep 0.05
            kill -9 "${pids[i]}" 2>/dev/null
        done
        for ((i = b; i < b + batch; i++)); do
            { wait "${pids[i]}"; } 2>/dev/null
            st=$?
            if [ $((i % 5)) -eq 2 ]; then
                if [ "$st" -eq 137 ]; then KILLED=$((KILLED + 1)); else
                    bad "churn victim $i: want death by kill -9 mid-run, got exit $st [$(peek 300 "$T/churn/$i.err")]"
                fi
                trim "$T/churn/$i.out"
            elif [ "$st" -ne 0 ] || [ "$(wc -l <"$T/churn/$i.out")" -ne 2000 ] ||
                [ -s "$T/churn/$i.err" ]; then
                bad "churn process $i: exit $st, $(wc -l <"$T/churn/$i.out") ids, stderr [$(peek 300 "$T/churn/$i.err")]"
            fi
        done
    done 2>/dev/null
    cat "$T"/churn/*.out >"$T/churn.all"
    TOTAL=$(wc -l <"$T/churn.all")
    check "churn: every line is an id" test "$(grep -cv '^[0-9]\{1,20\}$' "$T/churn.all")" -eq 0
    check "churn: at least $min x 2000 ids (got $TOTAL)" test "$TOTAL" -ge $((min * 2000))
    dups=$(sort "$T/churn.all" | uniq -d | wc -l)
    check "churn: all $TOTAL ids unique ($dups repeated)" test "$dups" -eq 0
}

# churn_workers MIN ARGS...: the first and last id of every churn process
# (at least MIN ids), decoded with ARGS, have datacenter=1 and a worker id
# of 0 to 31.
churn_workers() {
    local min=$1 f sample=() workers
    shift
    for f in "$T"/churn/*.out; do
        [ -s "$f" ] && sample+=("$(head -n 1 "$f")" "$(tail -n 1 "$f")")
    done
    "$BIN" decode "$@" "${sample[@]}" >"$T/out" 2>"$T/err"
    workers=$(sed -n 's/.* worker=\([0-9]*\) .*/\1/p' "$T/out" | sort -nu | tr '\n' ' ')
    if [ "$(wc -l <"$T/out")" -eq "${#sample[@]}" ] && [ "${#sample[@]}" -ge "$min" ] &&
        [ "$(grep -c ' datacenter=1 worker=\([0-9]\|[12][0-9]\|3[01]\) ' "$T/out")" -eq "${#sample[@]}" ]; then
        ok
    else
        bad "churn: decoded ids must have datacenter=1 and worker 0..31; workers [$workers]; $(head -c 300 "$T/err")"
    fi
}

# churn_listed URL: `lease list URL` works after the churn, with 1 to 32
# records.
churn_listed() {
    run lease list "$1"
    check "churn: lease list works, at most 32 records ($(wc -l <"$T/out")); $(show)" \
        test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -le 32 -a "$(wc -l <"$T/out")" -ge 1
}

# ---- expiry: a holder frozen with SIGSTOP past its TTL loses its id ----
#
# On a coordinator URL, in this order: expiry_hold, expiry_freeze,
# expiry_claim, expiry_resume and expiry_end; a script checks what its
# coordinator keeps in between.

# expiry_hold URL: holder A (`next --lease`, a 2 s TTL, ONE_BIT) mints, its
# worker id in WA; holder H (`lease hold`) takes the other id (WH), so that
# B must take A's.
expiry_hold() {
    spawn a next --lease "$1" --lease-ttl 2000 --layout "$ONE_BIT" --epoch "$TW_EPOCH" -n 10000000
    PA=$SPAWNED
    check "expiry: A mints [$(peek 300 "$T/a.err")]" wait_out "$T/a.out" "$PA"
    WA=$(worker_of "$1" "$PA")
    check "expiry: lease list shows A's id [$WA]" is_num "$WA"
    spawn h lease hold "$1" --max 2 --ttl 10000
    PH=$SPAWNED
    wait_out "$T/h.out" "$PH"
    WH=$(field "$(head -n 1 "$T/h.out")" worker)
    check "expiry: the other holder takes the other id [$WA] [$(cat "$T/h.out")]" \
        test -n "$WH" -a -n "$WA" -a "$WH" != "$WA"
}

# expiry_freeze URL [WHOSE]: A stopped with SIGSTOP (at STOP_MS) until the
# coordinator drops its claim (at FREE_MS, empty if not within 8 s); WHOSE
# says by whose clock, in the check.
expiry_freeze() {
    sleep 0.3
    kill -STOP "$PA"
    STOP_MS=$(now_ms)
    FREE_MS=
    for _ in $(seq 80); do
        if [ "$(field "$(list_line "$1" "$WA")" held)" = no ]; then
            FREE_MS=$(now_ms)
            break
        fi
        sleep 0.1
    done
    check "expiry: A's id is free${2:-} within 8 s of SIGSTOP" test -n "$FREE_MS"
}

# expiry_claim URL: B (`next --lease -v`) claims at CLAIM_MS and takes A's
# id.
expiry_claim() {
    CLAIM_MS=$(now_ms)
    spawn b next --lease "$1" --lease-ttl 2000 --layout "$ONE_BIT" --epoch "$TW_EPOCH" -n 10000000 -v
    PB=$SPAWNED
    wait_out "$T/b.out" "$PB" 140
    WB=$(sed -n 's/^idmint: next: lease: worker=\([0-9]*\) .*/\1/p' "$T/b.err")
    check "expiry: B takes A's id $WA (got [$WB]; stderr [$(peek 300 "$T/b.err")])" test "$WB" = "$WA"
}

# expiry_resume URL TRIES: A resumed (SIGCONT at CONT_MS) must stop by
# itself, at once (its deadline passed while it was frozen): exit 1 within
# TRIES steps of 50 ms, with one stderr line. B still holds the id: A's exit
# did not release or overwrite B's record.
expiry_resume() {
    sleep 0.3
    CONT_MS=$(now_ms)
    kill -CONT "$PA"
    wait_gone "$PA" "$2"
    check "expiry: A exits 1 by itself once resumed (status $STOPPED, stderr [$(peek 300 "$T/a.err")])" \
        test "$STOPPED" -eq 1
    [ "$STOPPED" -eq 255 ] && stop "$PA" TERM
    check "expiry: A's stderr is one line [$(peek 300 "$T/a.err")]" one_line "$T/a.err"
    sleep 0.3
    LB=$(list_line "$1" "$WA")
    check "expiry: B still holds the id after A's exit [$LB]" \
        test "$(field "$LB" held)" = yes -a "${LB##* holder=*:}" = "$PB"
}

# expiry_end URL: B dies of SIGTERM; A and B minted (NA and NB ids), none
# twice, A's last id before its SIGSTOP + TTL, B's claim and B's first id;
# the record keeps B's mark, not one A wrote on its way out.
expiry_end() {
    local a_last b_first b_last mw
    stop "$PB" TERM
    check "expiry: B dies of SIGTERM (status $STOPPED)" test "$STOPPED" -eq 143
    stop "$PH" TERM
    trim "$T/a.out"
    trim "$T/b.out"
    NA=$(wc -l <"$T/a.out")
    NB=$(wc -l <"$T/b.out")
    check "expiry: A and B minted ($NA, $NB ids)" test "$NA" -gt 0 -a "$NB" -gt 0
    check "expiry: all ids of A and B unique" \
        test "$(cat "$T/a.out" "$T/b.out" | sort | uniq -d | wc -l)" -eq 0
    a_last=$(unix_ms "$ONE_BIT" "$(max_id "$T/a.out")")
    b_first=$(unix_ms "$ONE_BIT" "$(min_id "$T/b.out")")
    b_last=$(unix_ms "$ONE_BIT" "$(max_id "$T/b.out")")
    check "expiry: A's last id ($a_last) is before SIGSTOP + TTL ($((STOP_MS + 2000)))" \
        test "${a_last:-99999999999999}" -lt $((STOP_MS + 2000))
    check "expiry: A's last id ($a_last) is before B's claim ($CLAIM_MS) and B's first id ($b_first)" \
        test "${a_last:-99999999999999}" -lt "$CLAIM_MS" -a "${a_last:-99999999999999}" -lt "${b_first:-0}"
    mw=$(field "$(list_line "$1" "$WA")" mark_ms)
    check "expiry: the record's mark ($mw) is B's last id's time ($b_last)" test "$mw" = "$b_last"
}

# ---- unreachable: the coordinator stopped with SIGSTOP under a holder ----

# unreachable URL PID NAME TRIES BOUND: a holder (`next --lease`, a 2 s
# TTL) mints, then the server (PID, called NAME) is stopped. The holder
# must stop by itself, at its deadline within the TTL, then give up on
# releasing within TRIES steps of 50 ms: exit 1 with one stderr line, its
# last id before BOUND (what the stop + TTL is called) and after the stop.
# The server answers again once resumed.
unreachable() {
    local url=$1 pid=$2 name=$3 tries=$4 bound=$5 stop_ms end_ms last
    spawn f next --lease "$url" --lease-ttl 2000 --layout "$SLOW" --epoch "$TW_EPOCH" \
        --node datacenter=1 -n 10000000
    check "unreachable: the holder mints [$(peek 300 "$T/f.err")]" wait_out "$T/f.out" "$SPAWNED"
    sleep 0.8
    kill -STOP "$pid"
    stop_ms=$(now_ms)
    wait_gone "$SPAWNED" "$tries"
    end_ms=$(now_ms)
    if [ "$STOPPED" -eq 255 ]; then
        bad "unreachable: the holder still runs $((tries / 20)) s after $name stopped; stderr [$(peek 300 "$T/f.err")]"
        stop "$SPAWNED" TERM
    fi
    kill -CONT "$pid"
    check "unreachable: the holder exits 1 (status $STOPPED)" test "$STOPPED" -eq 1
    check "unreachable: one stderr line [$(peek 400 "$T/f.err")]" one_line "$T/f.err"
    trim "$T/f.out"
    last=$(unix_ms "$SLOW" "$(max_id "$T/f.out")")
    check "unreachable: the last id's time ($last) is before $bound ($((stop_ms + 2000)))" \
        test "${last:-99999999999999}" -lt $((stop_ms + 2000))
    check "unreachable: the holder minted after $name stopped (last id $last, stop $stop_ms)" \
        test "${last:-0}" -ge "$stop_ms"
    note "unreachable: exit $((end_ms - stop_ms)) ms after SIGSTOP of $name;" \
        "last id at stop+$((${last:-0} - stop_ms)) ms"
    run lease list "$url"
    check "unreachable: $name answers again after SIGCONT; $(show)" test "$RC" -eq 0
}

# idmintd_serves URL WORKERS ARGS...: idmintd (next to $BIN) with --lease
# URL and ARGS comes up on a loopback port, says its worker id, serves
# Snowflake ids that carry it (decoded with --layout twitter), shows it held
# in `lease list`, and on SIGTERM exits 0 and releases it at once. The check
# texts start with "idmintd: ". WORKERS: how many worker ids the layout's
# lease field has (the id must be below it).
idmintd_serves() {
    local url=$1 workers=$2 d pid port w ids id got line i
    shift 2
    d="$(cd "$(dirname "$BIN")" && pwd)/idmintd"
    "$d" --listen 127.0.0.1:0 --data-dir "$T/idmintd" --lease "$url" --lease-ttl 2000 \
        --layout twitter --node datacenter=1 "$@" >"$T/idmintd.out" 2>"$T/idmintd.log" &
    pid=$!
    PIDS+=("$pid")
    port=
    for i in $(seq 200); do
        port=$(sed -n 's|^idmintd: listening on http://127\.0\.0\.1:\([0-9]*\) (worker \([0-9]*\).*|\1|p' \
            "$T/idmintd.log")
        [ -n "$port" ] && break
        exited "$pid" && break
        sleep 0.05
    done
    if [ -z "$port" ]; then
        bad "idmintd: comes up with --lease $url: $(peek 600 "$T/idmintd.log")"
        return
    fi
    ok
    w=$(sed -n 's|^idmintd: listening on http://127\.0\.0\.1:[0-9]* (worker \([0-9]*\).*|\1|p' \
        "$T/idmintd.log")
    check "idmintd: says a worker id below $workers [$w]" test -n "$w" -a "${w:-0}" -lt "$workers"
    ids=$(curl -s --max-time 10 "http://127.0.0.1:$port/v1/snowflake?count=3")
    id=$(printf '%s' "$ids" | sed -n 's/^{"ids":\["\([0-9]*\)".*/\1/p')
    got=
    [ -n "$id" ] && got=$("$BIN" decode --layout twitter "$id" 2>/dev/null | tr ' ' '\n' |
        sed -n 's/^worker=//p' | head -n 1)
    check "idmintd: serves ids under worker $w [$ids -> worker=$got]" test -n "$got" -a "$got" = "$w"
    line=$(list_line "$url" "$w")
    check "idmintd: lease list shows worker $w held [$line]" test "$(field "$line" held)" = yes
    stop "$pid" TERM
    check "idmintd: exits 0 on SIGTERM (status $STOPPED) [$(peek 300 "$T/idmintd.log")]" \
        test "$STOPPED" -eq 0
    line=$(list_line "$url" "$w")
    check "idmintd: released at once [$line]" test "$(field "$line" held)" = no
}
