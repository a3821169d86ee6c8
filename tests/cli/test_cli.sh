#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of the idmint command-line program: exact outputs of
# decode, range and layout on known vectors; next's ids (distinct, strictly
# increasing, never repeated across runs, decoding to the node values given,
# in every output format); where state files go; and every bad-usage case
# (exit 2, exactly one stderr line naming the problem, nothing on stdout)
# and runtime failure (exit 1).
#
# Usage: bash test_cli.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need python3 flock timeout mkfifo
mkdir -p "$T/home"
export HOME="$T/home"
export XDG_STATE_HOME="$T/xdg"
unset IDMINT_STATE_DIR

# 64-bit FNV-1a of a string, as 16 lowercase hex digits (bash arithmetic
# wraps modulo 2^64).
fnv1a64() {
    local s=$1 h=-3750763034362895579 i c
    for ((i = 0; i < ${#s}; i++)); do
        printf -v c '%d' "'${s:i:1}"
        h=$(((h ^ c) * 1099511628211))
    done
    printf '%016x' "$h"
}
now_ms() {
    local ms
    ms=$(date +%s%3N 2>/dev/null)
    case $ms in
    *N* | '') echo "$(($(date +%s) * 1000))" ;;
    *) echo "$ms" ;;
    esac
}
# increasing FILE N: FILE holds N lines of strictly increasing numbers.
increasing() { [ "$(wc -l <"$1")" -eq "$2" ] && [ "$(sort -u "$1" | wc -l)" -eq "$2" ] && sort -C -n "$1"; }
# same_nonempty A B: A and B have the same bytes, and some.
same_nonempty() { [ -s "$1" ] && cmp -s "$1" "$2"; }
mode_of() { stat -c %a "$1" 2>/dev/null || stat -f %Lp "$1"; }
# CRC-32 (IEEE) of a string, as 8 lowercase hex digits.
crc32() {
    local s=$1 c=$((0xffffffff)) i b k
    for ((i = 0; i < ${#s}; i++)); do
        printf -v b '%d' "'${s:i:1}"
        c=$((c ^ b))
        for ((k = 0; k < 8; k++)); do
            c=$(((c >> 1) ^ (0xedb88320 & -(c & 1))))
        done
    done
    printf '%08x' $((c ^ 0xffffffff))
}
# state_line MARK: a valid state file's line holding MARK.
state_line() { printf 'idmint-state 1 %s %s\n' "$1" "$(crc32 "idmint-state 1 $1")"; }
# ms_of ID LAYOUT EPOCH: the Unix ms of ID's tick.
ms_of() { "$BIN" decode --json --layout "$2" --epoch "$3" "$1" | sed -E 's/.*"unix_ms":([0-9]+).*/\1/'; }

# Another generator holding a state file's lock is played by this shell: it
# takes the flock(2) lock idmint takes on PATH.lock, on its descriptor 9,
# and lets go when the check says so. Runs under test are started with 9
# closed, so the lock is the shell's alone. Nothing here times anything:
# what a run did is seen in /proc and in what it printed, and the only
# bound (60 s) is there to end a hung run, which then fails its check.
hold_lock() { exec 9>>"$1" && flock -x -n 9; }
drop_lock() { flock -u 9; exec 9>&-; }
# proc_state PID: PSTATE is the state letter of process PID (R, S, Z...),
# or empty once it has been reaped.
proc_state() {
    local line
    PSTATE=
    read -r line 2>/dev/null <"/proc/$1/stat" || return 0
    line=${line##*) }
    PSTATE=${line%% *}
}
# seen_waiting PID: true once run PID is seen asleep in idmint; false if it
# ends first. Until it has the state file's lock, idmint next sleeps only in
# the pause between its tries at a lock another holds, so while this shell
# holds the lock, asleep means waiting for it. (A run that does not wait
# for the lock never sleeps before it fails; one that ignores the lock may
# sleep later, for its clock, and is caught by what it prints.)
seen_waiting() {
    local pid=$1 exe i
    exe=$(readlink -f "$BIN")
    for ((i = 0; i < 6000; i++)); do
        proc_state "$pid"
        case $PSTATE in
        '' | Z | X) return 1 ;;
        S) [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] && return 0 ;;
        esac
        sleep 0.01
    done
    return 1
}
# reap PID: wait for run PID, its status in RC. A run still going after
# 60 s is hung: it is killed, with a note in $T/err.
reap() {
    local pid=$1 i
    for ((i = 0; i < 6000; i++)); do
        proc_state "$pid"
        case $PSTATE in '' | Z | X) break ;; esac
        sleep 0.01
    done
    if [ "$i" -ge 6000 ]; then
        kill "$pid" 2>/dev/null
        echo "(test: still running after 60 s; killed)" >>"$T/err"
    fi
    wait "$pid"
    RC=$?
}
# locked_out DESC LOCK MESSAGE ARGS...: LOCK is held by another generator
# for as long as `idmint ARGS` runs. The run waits for it (seen asleep
# between its tries), then gives up: exit 1, nothing on stdout, one stderr
# line starting with MESSAGE.
locked_out() {
    local desc=$1 lock=$2 msg=$3 pid waited=no
    shift 3
    if ! hold_lock "$lock"; then
        bad "$desc: the test cannot take $lock"
        return
    fi
    "$BIN" "$@" >"$T/out" 2>"$T/err" 9>&- &
    pid=$!
    seen_waiting "$pid" && waited=yes
    reap "$pid"
    drop_lock
    check "$desc: the run waited for the lock (seen asleep between tries)" test "$waited" = yes
    failed_with 1 prefix "$msg" "$desc: idmint $*"
}
# waits_out DESC LOCK STATE ARGS...: `idmint ARGS` (twitter ids, 3 of them)
# starts while another generator holds LOCK. Once the run is seen waiting,
# the holder writes its mark (the clock's ms then) to STATE, as a holder
# does when it stops, and lets go. The run then succeeds, and every id it
# printed is past the holder's mark: it read STATE only after the holder
# was done with it.
waits_out() {
    local desc=$1 lock=$2 state=$3 pid waited=no mark over
    shift 3
    if ! hold_lock "$lock"; then
        bad "$desc: the test cannot take $lock"
        return
    fi
    "$BIN" "$@" >"$T/out" 2>"$T/err" 9>&- &
    pid=$!
    seen_waiting "$pid" && waited=yes
    mark=$(now_ms)
    state_line "$mark" >"$state"
    drop_lock
    reap "$pid"
    check "$desc: the run waited for the lock (seen asleep between tries)" test "$waited" = yes
    check "$desc: then it succeeded with 3 ids, quiet ($(show))" \
        test "$RC" -eq 0 -a ! -s "$T/err" -a "$(grep -Ecx '[0-9]+' "$T/out")" -eq 3
    # shellcheck disable=SC2046
    over=$("$BIN" decode --json $(cat "$T/out") 2>/dev/null | sed -E 's/.*"unix_ms":([0-9]+).*/\1/' |
        awk -v m="$mark" '$1 + 0 > m + 0 { n++ } END { print n + 0 }')
    check "$desc: its 3 ids are past the holder's mark $mark" test "$over" -eq 3
}

TW_TEXT='time:41@1ms,datacenter:5,worker:5,seq:12'
TW_EPOCH=1288834974657
NODES=(--node datacenter=1 --node worker=3)
CUSTOM='time:41@1ms,worker:10,seq:12'
PRESETS='presets: twitter, discord, instagram, sonyflake; or a text form such as time:41@1ms,worker:10,seq:12'

# ---------------------------------------------------------------- global

run --version
check "--version prints 'idmint X.Y.Z', exit 0" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(grep -Ecx 'idmint [0-9]+\.[0-9]+\.[0-9]+' "$T/out")" -eq 1
run --help
check "--help exits 0 with usage on stdout" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(head -n 1 "$T/out")" = 'usage: idmint [--version] [--help] COMMAND [ARGS]'
for c in next decode range layout; do
    check "--help lists $c" grep -Eq "^  $c " "$T/out"
done
usage_exact "idmint: missing command (try 'idmint --help')"
usage_exact "idmint: unknown command 'frob' (try 'idmint --help')" frob
usage_exact "idmint: unknown option '--bogus' (try 'idmint --help')" --bogus
usage_exact "idmint: unexpected argument 'next' after --version" --version next

for c in next decode range layout; do
    for h in --help -h; do
        run "$c" $h
        if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && head -n 1 "$T/out" | grep -q "^usage: idmint $c "; then
            ok
        else
            bad "idmint $c $h: $(show)"
        fi
    done
    "$BIN" "$c" --help >"$T/help1" 2>&1
    "$BIN" help "$c" >"$T/help2" 2>&1
    check "'idmint help $c' equals '$c --help'" same_nonempty "$T/help1" "$T/help2"
    check "'idmint $c --help' output is its usage" grep -q "^usage: idmint $c " "$T/help1"
    # Every subcommand: unknown options, missing option values.
    usage_exact "idmint: $c: unknown option '--bogus'" "$c" --bogus
    usage_exact "idmint: $c: unknown option '--bogus'" "$c" --bogus=1
    usage_exact "idmint: $c: unknown option '-x'" "$c" -x
    usage_exact "idmint: $c: option '--layout' needs a value" "$c" --layout
    usage_exact "idmint: $c: option '--epoch' needs a value" "$c" --epoch
done
# --help wins over other options and mints nothing.
run next -n 5 --help
check "next -n 5 --help prints usage only and mints nothing" \
    test "$RC" -eq 0 -a ! -s "$T/err" -a "$(grep -c '^usage: idmint next ' "$T/out")" -eq 1 -a ! -e "$XDG_STATE_HOME"

# ---------------------------------------------------------------- decode

KNOWN='2006515713438650368 time=2026-01-01T00:00:00.000Z unix_ms=1767225600000 datacenter=0 worker=1 seq=0'
expect_out "$KNOWN" decode 2006515713438650368
expect_out "$KNOWN" decode --layout twitter 2006515713438650368
expect_out "$KNOWN" decode 2006515713438650368 --layout=twitter
expect_out "$KNOWN" decode 0x1bd893690fc01000
expect_out "$KNOWN" decode 0X1BD893690FC01000
expect_out "$KNOWN" decode -- 2006515713438650368
expect_out '{"id":"2006515713438650368","time":"2026-01-01T00:00:00.000Z","unix_ms":1767225600000,"datacenter":0,"worker":1,"seq":0}' \
    decode --json 2006515713438650368
DISCORD='175928847299117063 time=2016-04-30T11:18:25.796Z unix_ms=1462015105796 worker=1 process=0 seq=7'
expect_out "$DISCORD" decode --layout discord 175928847299117063
expect_out "$DISCORD" decode 175928847299117063 --layout discord
expect_out '{"id":"175928847299117063","time":"2016-04-30T11:18:25.796Z","unix_ms":1462015105796,"worker":1,"process":0,"seq":7}' \
    decode --layout discord --json 175928847299117063
expect_out "0 time=2010-11-04T01:42:54.657Z unix_ms=1288834974657 datacenter=0 worker=0 seq=0
9223372036854775807 time=2080-07-10T17:30:30.208Z unix_ms=3487858230208 datacenter=31 worker=31 seq=4095" \
    decode 0 9223372036854775807
expect_out '16908291 time=2014-09-01T00:00:00.010Z unix_ms=1409529600010 seq=2 machine=3' \
    decode --layout sonyflake 16908291
expect_out '{"id":"16908291","time":"2014-09-01T00:00:00.010Z","unix_ms":1409529600010,"seq":2,"machine":3}' \
    decode --layout sonyflake 16908291 --json
expect_out '18446744073709551615 time=2081-04-30T12:54:37.272Z unix_ms=3513243277272 shard=8191 seq=1023' \
    decode --layout instagram 18446744073709551615
expect_out '4194324487 time=2020-01-01T00:00:01.000Z unix_ms=1577836801000 worker=5 seq=7' \
    decode --layout "$CUSTOM" --epoch 2020-01-01 4194324487
expect_out '4194324487 time=2020-01-01T00:00:01.000Z unix_ms=1577836801000 worker=5 seq=7' \
    decode --layout="$CUSTOM" --epoch=1577836800000 4194324487
expect_out '0 time=2020-01-01T00:00:00.000Z unix_ms=1577836800000 datacenter=0 worker=0 seq=0' \
    decode --epoch 2020-01-01T00:00:00Z 0

usage_prefix "idmint: decode: bad ID 'abc': malformed text" decode abc
usage_prefix "idmint: decode: bad ID '-1': malformed text" decode -1
usage_prefix "idmint: decode: bad ID '18446744073709551616': value out of range" decode 18446744073709551616
usage_prefix "idmint: decode: bad ID '1.5': malformed text" decode 1.5
usage_prefix "idmint: decode: bad ID '': malformed text" decode ''
usage_prefix "idmint: decode: bad ID ' 5': malformed text" decode ' 5'
usage_prefix "idmint: decode: bad ID '+5': malformed text" decode +5
usage_prefix "idmint: decode: bad ID '0x': malformed text" decode 0x
usage_prefix "idmint: decode: bad ID '0x1g': malformed text" decode 0x1g
usage_prefix "idmint: decode: bad ID '0x10000000000000000': value out of range" decode 0x10000000000000000
usage_exact "idmint: decode: bad ID '9223372036854775808': it has bits above the 63 bits of layout twitter" \
    decode 9223372036854775808
usage_exact "idmint: decode: bad ID '0x8000000000000000': it has bits above the 63 bits of layout twitter" \
    decode 0x8000000000000000
# All arguments are checked before anything is printed.
usage_prefix "idmint: decode: bad ID 'abc': malformed text" decode 2006515713438650368 0 abc
usage_prefix "idmint: decode: bad ID 'x\x0ay': malformed text" decode $'x\ny'
usage_exact "idmint: decode: no ID given (try 'idmint decode --help')" decode
usage_exact "idmint: decode: no ID given (try 'idmint decode --help')" decode --json
usage_exact "idmint: decode: option '--json' takes no value (got '--json=yes')" decode 1 --json=yes

# ---------------------------------------------------------------- range

RANGE_TW='min=2006515713438646272 max=2006878101304246271
WHERE id BETWEEN 2006515713438646272 AND 2006878101304246271'
expect_out "$RANGE_TW" range 2026-01-01 2026-01-02
expect_out "$RANGE_TW" range 1767225600000 1767312000000
expect_out "$RANGE_TW" range --layout twitter 2026-01-01T00:00:00Z 2026-01-02T01:00:00+01:00
expect_out '{"from":"2026-01-01T00:00:00.000Z","to":"2026-01-02T00:00:00.000Z","min":"2006515713438646272","max":"2006878101304246271"}' \
    range 2026-01-01 --json 2026-01-02
# The bounds decode to the window's first and last millisecond.
expect_out '2006515713438646272 time=2026-01-01T00:00:00.000Z unix_ms=1767225600000 datacenter=0 worker=0 seq=0
2006878101304246271 time=2026-01-01T23:59:59.999Z unix_ms=1767311999999 datacenter=31 worker=31 seq=4095' \
    decode 2006515713438646272 2006878101304246271
# 10 ms ticks: only ticks that start inside the window count.
expect_out 'min=16777216 max=50331647
WHERE id BETWEEN 16777216 AND 50331647' \
    range --layout sonyflake 2014-09-01T00:00:00.005Z 2014-09-01T00:00:00.025Z

usage_exact "idmint: range: empty window: TO '2026-01-01' is not after FROM '2026-01-02'" range 2026-01-02 2026-01-01
usage_exact "idmint: range: empty window: TO '2026-01-01' is not after FROM '2026-01-01'" range 2026-01-01 2026-01-01
usage_prefix "idmint: range: no ids of layout twitter in [2000-01-01, 2000-01-02): value out of range" \
    range 2000-01-01 2000-01-02
usage_prefix "idmint: range: no ids of layout twitter in [2090-01-01, 2090-01-02): value out of range" \
    range 2090-01-01 2090-01-02
usage_prefix "idmint: range: no ids of layout sonyflake in [2014-09-01T00:00:00.001Z, 2014-09-01T00:00:00.005Z): value out of range" \
    range --layout sonyflake 2014-09-01T00:00:00.001Z 2014-09-01T00:00:00.005Z
usage_prefix "idmint: range: bad FROM time 'yesterday': malformed text" range yesterday 2026-01-01
usage_prefix "idmint: range: bad TO time '2026-02-30': " range 2026-01-01 2026-02-30
usage_prefix "idmint: range: bad FROM time '-5': " range -5 2026-01-01
usage_exact "idmint: range: missing FROM and TO (try 'idmint range --help')" range
usage_exact "idmint: range: missing TO (try 'idmint range --help')" range 2026-01-01
usage_exact "idmint: range: unexpected argument '2026-01-03'" range 2026-01-01 2026-01-02 2026-01-03

# ---------------------------------------------------------------- layout

expect_out 'twitter    time:41@1ms,datacenter:5,worker:5,seq:12   epoch 1288834974657 (2010-11-04T01:42:54.657Z)
discord    time:42@1ms,worker:5,process:5,seq:12      epoch 1420070400000 (2015-01-01T00:00:00.000Z)
instagram  time:41@1ms,shard:13,seq:10                epoch 1314220021721 (2011-08-24T21:07:01.721Z)
sonyflake  time:39@10ms,seq:8,machine:16              epoch 1409529600000 (2014-09-01T00:00:00.000Z)' layout
expect_out 'layout:   twitter
text:     time:41@1ms,datacenter:5,worker:5,seq:12
epoch:    1288834974657 (2010-11-04T01:42:54.657Z)
tick:     1 ms
bits:     63 of 64
fields:
  name             kind  bits shift  max
  time             time    41    22  2199023255551
  datacenter       node     5    17  31
  worker           node     5    12  31
  seq              seq     12     0  4095
ids per tick per generator:   4096 (2^12)
ids per second per generator: 4096000
time runs out: 2080-07-10T17:30:30.209Z (unix ms 3487858230209)
sign bit: not used: ids stay positive as signed 64-bit integers' layout twitter
"$BIN" layout twitter >"$T/l1" 2>&1
"$BIN" layout --layout twitter >"$T/l2" 2>&1
check "layout --layout NAME equals layout NAME" same_nonempty "$T/l1" "$T/l2"
run layout instagram
check "layout instagram warns of the sign bit with its date" \
    grep -qx 'sign bit: USED: ids read as signed 64-bit integers (Java long, SQL bigint) are negative from 2046-06-27T17:00:49.497Z (unix ms 2413731649497)' "$T/out"
check "layout instagram: 64 bits" grep -qx 'bits:     64 of 64' "$T/out"
run layout sonyflake
check "layout sonyflake: tick and capacity" \
    grep -qx 'ids per second per generator: 25600' "$T/out"
check "layout sonyflake: seq above machine" grep -Eq '^  seq +seq +8 +16  255$' "$T/out"
run layout twitter --epoch 2020-01-01
check "layout --epoch overrides the preset's" grep -qx 'epoch:    1577836800000 (2020-01-01T00:00:00.000Z)' "$T/out"
run layout "$CUSTOM" --epoch 2020-01-01
check "layout of a text form: its fields" grep -Eq '^  worker +node +10 +12  1023$' "$T/out"
expect_out '{"name":"twitter","text":"time:41@1ms,datacenter:5,worker:5,seq:12","epoch_ms":1288834974657,"epoch":"2010-11-04T01:42:54.657Z","tick_ms":1,"bits":63,"fields":[{"name":"time","kind":"time","bits":41,"shift":22,"max":2199023255551},{"name":"datacenter","kind":"node","bits":5,"shift":17,"max":31},{"name":"worker","kind":"node","bits":5,"shift":12,"max":31},{"name":"seq","kind":"seq","bits":12,"shift":0,"max":4095}],"ids_per_tick":4096,"ids_per_second":4096000,"time_end_ms":3487858230209,"time_end":"2080-07-10T17:30:30.209Z","sign_bit":false,"negative_from_ms":null,"negative_from":null}' \
    layout twitter --json
expect_out '{"name":"instagram","text":"time:41@1ms,shard:13,seq:10","epoch_ms":1314220021721,"epoch":"2011-08-24T21:07:01.721Z","tick_ms":1,"bits":64,"fields":[{"name":"time","kind":"time","bits":41,"shift":23,"max":2199023255551},{"name":"shard","kind":"node","bits":13,"shift":10,"max":8191},{"name":"seq","kind":"seq","bits":10,"shift":0,"max":1023}],"ids_per_tick":1024,"ids_per_second":1024000,"time_end_ms":3513243277273,"time_end":"2081-04-30T12:54:37.273Z","sign_bit":true,"negative_from_ms":2413731649497,"negative_from":"2046-06-27T17:00:49.497Z"}' \
    layout --json --layout instagram
expect_out '{"name":"twitter","text":"time:41@1ms,datacenter:5,worker:5,seq:12","epoch_ms":1288834974657,"epoch":"2010-11-04T01:42:54.657Z"}
{"name":"discord","text":"time:42@1ms,worker:5,process:5,seq:12","epoch_ms":1420070400000,"epoch":"2015-01-01T00:00:00.000Z"}
{"name":"instagram","text":"time:41@1ms,shard:13,seq:10","epoch_ms":1314220021721,"epoch":"2011-08-24T21:07:01.721Z"}
{"name":"sonyflake","text":"time:39@10ms,seq:8,machine:16","epoch_ms":1409529600000,"epoch":"2014-09-01T00:00:00.000Z"}' layout --json
"$BIN" layout sonyflake --json >"$T/lj"
check "layout --json parses as JSON" python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
sys.exit(0 if [f["name"] for f in o["fields"]] == ["time", "seq", "machine"] and o["tick_ms"] == 10 else 1)' "$T/lj"
usage_exact "idmint: layout: unexpected argument 'discord'" layout twitter discord
usage_exact "idmint: layout: give the layout once: 'twitter' or --layout 'discord'" layout twitter --layout discord
usage_exact "idmint: layout: --epoch needs a layout to apply to" layout --epoch 2020-01-01
usage_exact "idmint: layout: unknown layout 'nosuch' ($PRESETS)" layout nosuch

# ------------------------------------- layout and epoch errors, every command

# cmd_args SUB: arguments that make SUB otherwise valid.
cmd_args() {
    case $1 in
    next) printf '%s\n' next --no-state --node worker=1 ;;
    decode) printf '%s\n' decode 1 ;;
    range) printf '%s\n' range 2021-01-01 2021-01-02 ;;
    layout) printf '%s\n' layout ;;
    esac
}
for c in next decode range layout; do
    mapfile -t A < <(cmd_args "$c")
    usage_exact "idmint: $c: unknown layout 'nosuch' ($PRESETS)" "${A[@]}" --layout nosuch
    usage_exact "idmint: $c: bad --layout '': empty layout" "${A[@]}" --layout ''
    usage_exact "idmint: $c: layout '$CUSTOM' is a text form and needs --epoch T (unix ms or ISO-8601)" \
        "${A[@]}" --layout "$CUSTOM"
    for bl in 'time:41@1ms,Worker:5,seq:12' 'time:41@1ms,9lives:5,seq:12' 'time:41@1ms,worker,seq:12' \
        'time:41@1ms,worker:20,seq:12' 'time:41@1ms,worker:10,seq:0' 'time:41@1ms,worker:10' \
        'time:41@0ms,seq:12' 'time:41@1h,seq:12' 'time:41@61s,seq:12' 'time:41,seq:12' \
        'worker:10,time:41@1ms,seq:12' 'time:41@1ms,worker:5,worker:5,seq:12' 'time:41@1ms,seq:12,'; do
        usage_prefix "idmint: $c: bad --layout '$bl': invalid layout (layout: " \
            "${A[@]}" --layout "$bl" --epoch 2020-01-01
    done
    for be in yesterday 2026-02-30 '' -5 2026-01-01T24:00:00Z 1969-12-31; do
        usage_prefix "idmint: $c: bad --epoch '$be': " "${A[@]}" --layout twitter --epoch "$be"
    done
done

# ---------------------------------------------------------------- next: errors

# Node fields left out are leased (the embedded default, test_fleet_cli.sh),
# except with --state or --no-state, which name no place for the lease.
LEASE_HINT=" (or neither --state nor --no-state, to lease the missing ones)"
usage_exact "idmint: next: layout twitter needs --node datacenter=N --node worker=N$LEASE_HINT" next --no-state
usage_exact "idmint: next: layout twitter needs --node worker=N$LEASE_HINT" next --node datacenter=1 --state "$T/x.state"
usage_exact "idmint: next: layout $CUSTOM needs --node worker=N$LEASE_HINT" next --layout "$CUSTOM" --epoch 2020-01-01 --no-state
usage_exact "idmint: next: layout discord needs --node worker=N --node process=N$LEASE_HINT" next --layout discord --no-state
usage_exact "idmint: next: --policy change-worker needs a leased worker id (--lease URL, or node fields left for the embedded lease)" next "${NODES[@]}" --policy change-worker
usage_exact "idmint: next: --node worker is given twice" next "${NODES[@]}" --node worker=4
usage_prefix "idmint: next: bad --node 'foo=1' for layout twitter: invalid argument" next "${NODES[@]}" --node foo=1
usage_prefix "idmint: next: bad --node 'seq=1' for layout twitter: invalid argument" next "${NODES[@]}" --node seq=1
usage_prefix "idmint: next: bad --node 'time=1' for layout twitter: invalid argument" next "${NODES[@]}" --node time=1
usage_prefix "idmint: next: bad --node 'foo=1' for layout $CUSTOM: invalid argument (node: " \
    next --layout "$CUSTOM" --epoch 2020-01-01 --node worker=1 --node foo=1
usage_prefix "idmint: range: no ids of layout $CUSTOM in [2019-01-01, 2019-01-02): value out of range (range: " \
    range --layout "$CUSTOM" --epoch 2020-01-01 2019-01-01 2019-01-02
usage_prefix "idmint: next: bad --node 'worker=32': value out of range" next --node datacenter=1 --node worker=32
usage_prefix "idmint: next: bad --node 'datacenter=99999999999999999999': " next --node datacenter=99999999999999999999 --node worker=1
for bn in worker worker= =3 worker=-1 worker=abc worker=+1 'worker= 1' worker=1.0; do
    usage_prefix "idmint: next: bad --node '$bn': malformed text" next --node datacenter=1 --node "$bn"
done
usage_exact "idmint: next: option '--node' needs a value" next --node
for bc in 0 10000001; do
    usage_exact "idmint: next: bad count '$bc': must be 1 to 10000000" next "${NODES[@]}" -n "$bc"
done
for bc in -1 +5 ' 5' 1e3 '' 5x 0x; do
    usage_prefix "idmint: next: bad count '$bc': malformed text" next "${NODES[@]}" -n "$bc"
done
usage_prefix "idmint: next: bad count '99999999999999999999': value out of range" next "${NODES[@]}" -n 99999999999999999999
usage_prefix "idmint: next: bad count '': malformed text" next "${NODES[@]}" --count=
usage_prefix "idmint: next: bad count '-1': malformed text" next "${NODES[@]}" --count -1
usage_exact "idmint: next: option '-n' needs a value" next "${NODES[@]}" -n
usage_exact "idmint: next: option '--count' needs a value" next "${NODES[@]}" --count
for o in format state policy exhaust; do
    usage_exact "idmint: next: option '--$o' needs a value" next "${NODES[@]}" --$o
done
usage_exact "idmint: next: bad --format 'xml': use dec, hex or json" next "${NODES[@]}" --format xml
usage_exact "idmint: next: bad --format '': use dec, hex or json" next "${NODES[@]}" --format=
usage_exact "idmint: next: bad --policy 'never': use logical, refuse, wait or change-worker" next "${NODES[@]}" --policy never
usage_exact "idmint: next: bad --exhaust 'wrap': use wait or borrow" next "${NODES[@]}" --exhaust wrap
usage_exact "idmint: next: --state and --no-state exclude each other" next "${NODES[@]}" --no-state --state "$T/x.state"
usage_exact "idmint: next: bad --state '': empty path" next "${NODES[@]}" --state ''
usage_exact "idmint: next: unexpected argument '5'" next "${NODES[@]}" 5
usage_exact "idmint: next: option '--no-state' takes no value (got '--no-state=1')" next "${NODES[@]}" --no-state=1
usage_prefix "idmint: next: cannot mint with this layout now: clock is before the layout's epoch" \
    next "${NODES[@]}" --epoch 2200-01-01
usage_prefix "idmint: next: cannot mint with this layout now: clock is before the layout's epoch" \
    next "${NODES[@]}" --epoch $(($(now_ms) + 86400000))
usage_prefix "idmint: next: cannot mint with this layout now: " next "${NODES[@]}" --epoch 2999-01-01
usage_prefix "idmint: next: cannot mint with this layout now: clock is before the layout's epoch" \
    next --layout "$CUSTOM" --node worker=1 --epoch 2200-01-01 --no-state
NO_STATE_YET=no
[ -e "$XDG_STATE_HOME" ] || NO_STATE_YET=yes

# ---------------------------------------------------------------- next: ids

BEFORE=$(now_ms)
run next "${NODES[@]}"
AFTER=$(now_ms)
check "next prints one decimal id" grep -Eqx '[0-9]{1,19}' "$T/out"
check "next: one line, nothing on stderr" test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 1 -a ! -s "$T/err"
ID1=$(cat "$T/out")
check "bad usage of next wrote no state; the first good run did" \
    test "$NO_STATE_YET" = yes -a -d "$XDG_STATE_HOME/idmint"
"$BIN" decode "$ID1" >"$T/dec1"
check "next's id decodes to the node values given" grep -Eq ' datacenter=1 worker=3 seq=[0-9]+$' "$T/dec1"
MS=$(sed -E 's/.* unix_ms=([0-9]+) .*/\1/' "$T/dec1")
# The first run on a new state file mints at the clock: its id's time lies
# between the clock read before the run and after it (1 s either side, as
# now_ms may know whole seconds only). How long the run took is not checked.
check "next's id carries the clock's time during the run ($BEFORE <= $MS <= $AFTER)" \
    test "$MS" -ge $((BEFORE - 1000)) -a "$MS" -le $((AFTER + 1000))

run next "${NODES[@]}" -n 5000
cp "$T/out" "$T/ids5000"
check "next -n 5000: exit 0, quiet, 5000 lines" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(wc -l <"$T/ids5000")" -eq 5000
check "next -n 5000: all decimal" test "$(grep -Ecx '[0-9]{1,19}' "$T/ids5000")" -eq 5000
check "next -n 5000: all distinct" test "$(sort -u "$T/ids5000" | wc -l)" -eq 5000
check "next -n 5000: strictly increasing" increasing "$T/ids5000" 5000
FIRST=$(head -n 1 "$T/ids5000")
check "next -n 5000 follows the previous run" test $((ID1 < FIRST)) -eq 1
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/ids5000") >"$T/dec5000"
check "decode of 5000 ids: 5000 lines" test "$(wc -l <"$T/dec5000")" -eq 5000
check "decode of 5000 ids keeps their order" same_nonempty "$T/ids5000" <(cut -d' ' -f1 "$T/dec5000")
check "every id minted decodes to datacenter=1 worker=3" \
    test "$(grep -Ec ' datacenter=1 worker=3 seq=[0-9]+$' "$T/dec5000")" -eq 5000

# Two runs in a row on one state file never repeat an id.
"$BIN" next "${NODES[@]}" -n 3000 >"$T/runA" 2>"$T/errA"
RA=$?
"$BIN" next "${NODES[@]}" -n 3000 >"$T/runB" 2>"$T/errB"
RB=$?
check "two runs of next -n 3000 succeed" test "$RA" -eq 0 -a "$RB" -eq 0 -a ! -s "$T/errA" -a ! -s "$T/errB" \
    -a "$(grep -Ecx '[0-9]+' "$T/runA")" -eq 3000 -a "$(grep -Ecx '[0-9]+' "$T/runB")" -eq 3000
check "two runs of next -n 3000: 6000 unique ids" test "$(cat "$T/runA" "$T/runB" | sort -u | wc -l)" -eq 6000
LA=$(tail -n 1 "$T/runA")
FB=$(head -n 1 "$T/runB")
check "the second run starts above the first" test $((LA < FB)) -eq 1

# Two runs at once on one state file: one waits for the other's lock.
"$BIN" next "${NODES[@]}" -n 20000 >"$T/parA" 2>"$T/perrA" &
PA=$!
"$BIN" next "${NODES[@]}" -n 20000 >"$T/parB" 2>"$T/perrB" &
PB=$!
wait "$PA"
RA=$?
wait "$PB"
RB=$?
check "two concurrent runs of next both succeed" test "$RA" -eq 0 -a "$RB" -eq 0 -a ! -s "$T/perrA" -a ! -s "$T/perrB"
check "two concurrent runs of next: 40000 unique ids" test "$(cat "$T/parA" "$T/parB" | sort -u | wc -l)" -eq 40000

# The other option forms.
expect_count() { # expect_count N ARGS...: exit 0, N id lines, quiet
    local n=$1
    shift
    run "$@"
    if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && [ "$(grep -Ecx '[0-9]+' "$T/out")" -eq "$n" ] &&
        [ "$(wc -l <"$T/out")" -eq "$n" ]; then
        ok
    else
        bad "idmint $*: want $n ids; $(show)"
    fi
}
expect_count 5 next -n5 "${NODES[@]}"
expect_count 5 next --count=5 --node=datacenter=1 --node=worker=3
expect_count 7 next --node datacenter=1 --count 7 --node worker=3 --format dec
expect_count 10 next "${NODES[@]}" -n 10 --policy refuse --exhaust borrow
expect_count 10 next "${NODES[@]}" -n 10 --policy wait --exhaust wait
expect_count 10 next "${NODES[@]}" -n 10 --policy logical
expect_count 3 next -n 0x3 "${NODES[@]}"
expect_count 3 next -n 003 "${NODES[@]}"

# --format hex: 0x and 16 lowercase digits, decoding to the same ids.
run next "${NODES[@]}" -n 50 --format hex
cp "$T/out" "$T/hex"
check "--format hex: 50 ids of 0x + 16 lowercase hex digits" test "$RC" -eq 0 -a "$(grep -Ecx '0x[0-9a-f]{16}' "$T/hex")" -eq 50
# shellcheck disable=SC2046
"$BIN" decode $(cat "$T/hex") >"$T/dechex"
while read -r h; do printf '%d\n' "$h"; done <"$T/hex" >"$T/hexdec"
check "--format hex round-trips through decode" same_nonempty "$T/hexdec" <(cut -d' ' -f1 "$T/dechex")
check "hex ids decode to the node values" test "$(grep -c ' datacenter=1 worker=3 ' "$T/dechex")" -eq 50

# --format json: one object per line, equal to what decode --json says.
run next "${NODES[@]}" -n 200 --format json
cp "$T/out" "$T/json"
check "--format json: 200 lines, quiet" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(wc -l <"$T/json")" -eq 200
sed -E 's/^\{"id":"([0-9]+)".*/\1/' "$T/json" >"$T/jsonids"
# shellcheck disable=SC2046
"$BIN" decode --json $(cat "$T/jsonids") >"$T/decjson"
check "--format json equals decode --json of the same ids" same_nonempty "$T/json" "$T/decjson"
check "--format json parses and agrees with the twitter layout" python3 - "$T/json" <<'EOF'
import datetime, json, sys
epoch = 1288834974657
lines = open(sys.argv[1]).read().splitlines()
ok = len(lines) == 200
for line in lines:
    o = json.loads(line)
    keys = list(o)
    if keys != ["id", "time", "unix_ms", "datacenter", "worker", "seq"]:
        ok = False
    if not isinstance(o["id"], str) or not o["id"].isdigit():
        ok = False
        continue
    v = int(o["id"])
    ms = (v >> 22) + epoch
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    iso = t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)
    if (o["unix_ms"], o["time"], o["datacenter"], o["worker"], o["seq"]) != \
            (ms, iso, (v >> 17) & 31, (v >> 12) & 31, v & 4095):
        ok = False
sys.exit(0 if ok else 1)
EOF

# Other layouts: a text form and sonyflake (10 ms ticks, 256 ids a tick).
run next --layout "$CUSTOM" --epoch 2020-01-01 --node worker=1023 -n 3
cp "$T/out" "$T/custom"
# shellcheck disable=SC2046
"$BIN" decode --layout "$CUSTOM" --epoch 2020-01-01 $(cat "$T/custom") >"$T/deccustom"
check "next on a text layout: 3 ids with worker=1023" test "$RC" -eq 0 -a "$(grep -Ec ' worker=1023 seq=[0-9]+$' "$T/deccustom")" -eq 3
run next --layout sonyflake --node machine=65535 -n 600 --no-state
cp "$T/out" "$T/sony"
check "next sonyflake -n 600: 600 distinct increasing ids" \
    test "$RC" -eq 0 -a "$(sort -u "$T/sony" | wc -l)" -eq 600
check "next sonyflake -n 600: increasing" increasing "$T/sony" 600
# shellcheck disable=SC2046
"$BIN" decode --layout sonyflake $(cat "$T/sony") >"$T/decsony"
check "sonyflake ids decode to machine=65535" test "$(grep -Ec ' seq=[0-9]+ machine=65535$' "$T/decsony")" -eq 600

# The sign bit: warn once, only when an id printed has bit 63 set.
NOWMS=$(now_ms)
SIGNED='time:20@1s,seq:44'
run next --layout "$SIGNED" --epoch $((NOWMS - 7 * 86400000)) -n 3 --no-state
check "ids with bit 63 set: 3 ids printed" test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 3
check "ids with bit 63 set: exactly one warning line" \
    test "$(cat "$T/err")" = "idmint: next: warning: ids have bit 63 set: they read as negative signed 64-bit integers"
check "ids with bit 63 set are above 2^63" test "$(grep -Ecx '1[0-9]{19}' "$T/out")" -eq 3
run next --layout "$SIGNED" --epoch $((NOWMS - 86400000)) -n 3 --no-state
check "a sign-bit layout whose ids are not yet negative: no warning" test "$RC" -eq 0 -a ! -s "$T/err" -a "$(wc -l <"$T/out")" -eq 3
run layout "$SIGNED" --epoch $((NOWMS - 86400000))
check "layout reports the sign bit of a 64-bit layout" grep -q '^sign bit: USED: ' "$T/out"

# ---------------------------------------------------------------- state files

# The file is keyed on what decides the ids: epoch, tick, where the time and
# sequence fields sit, the sequence's width and the node bits.
KEY_TW="ids 1;epoch=$TW_EPOCH;tick=1;time@22;seq:12@0;node=0x0000000000023000"
F_TW="ids-$(fnv1a64 "$KEY_TW").state"
check "the state file is at \$XDG_STATE_HOME/idmint/ids-<hash>.state" test -f "$XDG_STATE_HOME/idmint/$F_TW"
check "the state file holds one mark line" grep -Eqx 'idmint-state 1 [0-9]+ [0-9a-f]{8}' "$XDG_STATE_HOME/idmint/$F_TW"
check "the state directory is mode 700" test "$(mode_of "$XDG_STATE_HOME/idmint")" = 700
check "one state file per layout and node values so far" \
    test "$(find "$XDG_STATE_HOME/idmint" -name '*.state' | wc -l)" -eq 2

# Other node values get another file; the custom layout above has its own.
KEY_C="ids 1;epoch=1577836800000;tick=1;time@22;seq:12@0;node=0x00000000003ff000"
check "a text layout's state file is ids-<hash>.state" test -f "$XDG_STATE_HOME/idmint/ids-$(fnv1a64 "$KEY_C").state"
"$BIN" next --node datacenter=0 --node worker=0 >/dev/null 2>&1
check "other node values: another state file" \
    test -f "$XDG_STATE_HOME/idmint/ids-$(fnv1a64 "ids 1;epoch=$TW_EPOCH;tick=1;time@22;seq:12@0;node=0x0000000000000000").state"

# Without XDG_STATE_HOME (or with a relative one): $HOME/.local/state/idmint.
env -u XDG_STATE_HOME "$BIN" next "${NODES[@]}" >/dev/null 2>&1
check "no XDG_STATE_HOME: \$HOME/.local/state/idmint/ids-<hash>.state" test -f "$HOME/.local/state/idmint/$F_TW"
rm -rf "$HOME/.local"
XDG_STATE_HOME=relative "$BIN" next "${NODES[@]}" >/dev/null 2>&1
check "a relative XDG_STATE_HOME is ignored" test -f "$HOME/.local/state/idmint/$F_TW" -a ! -e relative

# IDMINT_STATE_DIR comes first; missing directories are created.
IDMINT_STATE_DIR="$T/sd/deep" "$BIN" next "${NODES[@]}" >/dev/null 2>&1
check "IDMINT_STATE_DIR: <dir>/ids-<hash>.state" test -f "$T/sd/deep/$F_TW"
check "IDMINT_STATE_DIR is created mode 700" test "$(mode_of "$T/sd/deep")" = 700

# One layout, many spellings: the preset, its text form with the epoch, the
# preset with its own epoch given again (also as ISO-8601), and spellings
# that differ only in names (a node field renamed, a wider time field) mint
# the same ids, so they share one state file and its lock.
SPELLINGS=(
    "--layout twitter --node datacenter=1 --node worker=3"
    "--layout $TW_TEXT --epoch $TW_EPOCH --node datacenter=1 --node worker=3"
    "--layout twitter --epoch $TW_EPOCH --node datacenter=1 --node worker=3"
    "--layout twitter --epoch 2010-11-04T01:42:54.657Z --node datacenter=1 --node worker=3"
    "--layout time:41@1ms,dc:5,worker:5,seq:12 --epoch $TW_EPOCH --node dc=1 --node worker=3"
    "--layout time:42@1ms,datacenter:5,worker:5,seq:12 --epoch $TW_EPOCH --node datacenter=1 --node worker=3"
)
for sp in "${SPELLINGS[@]}"; do
    # shellcheck disable=SC2086
    IDMINT_STATE_DIR="$T/spell" "$BIN" next $sp -n 10 >>"$T/spell.ids" 2>"$T/spell.err" ||
        bad "next $sp: $(cat "$T/spell.err")"
    check "next $sp: its state file is ids-<hash> of what decides the ids" \
        test "$(cd "$T/spell" && echo *.state)" = "$F_TW"
done
check "all spellings in a row: 60 ids, none repeated, increasing" increasing "$T/spell.ids" 60

# The spellings at once, 300,000 ids each (before, each spelling had its own
# file and lock, and about half of all ids repeated): one waits for the
# other's lock, and no id repeats.
for i in 0 1 2; do
    # shellcheck disable=SC2086
    IDMINT_STATE_DIR="$T/conc" "$BIN" next ${SPELLINGS[$i]} -n 300000 >"$T/conc$i" 2>"$T/concerr$i" &
    CPID[i]=$!
done
for i in 0 1 2; do
    wait "${CPID[i]}"
    check "spelling $i at once with the others: exit 0, quiet, 300000 ids" \
        test $? -eq 0 -a ! -s "$T/concerr$i" -a "$(wc -l <"$T/conc$i")" -eq 300000
done
check "three spellings at once: 900000 ids, none repeated" \
    test "$(sort -u "$T/conc0" "$T/conc1" "$T/conc2" | wc -l)" -eq 900000

# A state file an earlier build named for these ids (<preset or custom>-
# <hash of text form, epoch, node values>.state) keeps its mark and its
# lock after the upgrade, whichever spelling wrote it.
OLD_HASH=$(fnv1a64 "$TW_TEXT;epoch=$TW_EPOCH;datacenter=1;worker=3")
mkdir -p "$T/old1"
state_line $(($(now_ms) + 3600000)) >"$T/old1/custom-$OLD_HASH.state"
IDMINT_STATE_DIR="$T/old1" fails_with 1 prefix "idmint: next: cannot start the generator: " \
    next --layout twitter "${NODES[@]}"
check "an earlier build's file with a mark an hour ahead stops the run, named" \
    grep -q "behind the mark in $T/old1/custom-$OLD_HASH.state" "$T/err"
check "... and no new file was made" test ! -e "$T/old1/$F_TW"
# With a 1 s tick: epoch set so that the clock is 50 ms into a tick, and an
# earlier build's mark at that tick's start: the run starts at the next tick.
L1S='time:41@1s,worker:10,seq:12'
NOW=$(now_ms)
E1S=$((NOW - 100000 * 1000 - 50))
K1S_OLD="$L1S;epoch=$E1S;worker=5"
mkdir -p "$T/old2"
state_line $((E1S + 100000 * 1000)) >"$T/old2/custom-$(fnv1a64 "$K1S_OLD").state"
IDMINT_STATE_DIR="$T/old2" run next --layout "$L1S" --epoch "$E1S" --node worker=5 -n 3
check "an earlier build's file: the run succeeds" test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 3 -a ! -s "$T/err"
FIRST_MS=$(ms_of "$(head -n 1 "$T/out")" "$L1S" "$E1S")
check "an earlier build's mark is honoured: the first id is past its tick" \
    test "$FIRST_MS" -gt $((E1S + 100000 * 1000))
check "an earlier build's file is left in place, its mark not lowered" \
    grep -Eqx "idmint-state 1 $((E1S + 100000 * 1000)) [0-9a-f]{8}" "$T/old2/custom-$(fnv1a64 "$K1S_OLD").state"
check "the new file is beside it" test -f "$T/old2/ids-$(fnv1a64 "ids 1;epoch=$E1S;tick=1000;time@22;seq:12@0;node=0x0000000000005000").state"
# An older idmint running on its file holds its lock (until this run has
# ended): we wait, then fail, naming that file.
IDMINT_STATE_DIR="$T/old2" locked_out "an earlier build's file, locked" \
    "$T/old2/custom-$(fnv1a64 "$K1S_OLD").state.lock" \
    "idmint: next: state file '$T/old2/custom-$(fnv1a64 "$K1S_OLD").state': state file is locked by another generator" \
    next --layout "$L1S" --epoch "$E1S" --node worker=5

# --state FILE, and runs on it follow each other.
"$BIN" next "${NODES[@]}" --state "$T/explicit.state" -n 100 >"$T/s1"
"$BIN" next "${NODES[@]}" --state "$T/explicit.state" -n 100 >"$T/s2"
check "--state FILE creates FILE" grep -Eqx 'idmint-state 1 [0-9]+ [0-9a-f]{8}' "$T/explicit.state"
check "--state FILE: runs on it never repeat" test "$(cat "$T/s1" "$T/s2" | sort -u | wc -l)" -eq 200
check "--state FILE: the second run starts above the first" test $(($(tail -n 1 "$T/s1") < $(head -n 1 "$T/s2"))) -eq 1

# A symbolic link to a state file is written through, not replaced, and
# its lock is the real file's: a run through the link and a run through the
# real path exclude each other.
mkdir -p "$T/real" "$T/links"
"$BIN" next "${NODES[@]}" --state "$T/real/s.state" -n 5 >"$T/l0"
ln -s ../real/s.state "$T/links/s.state"
"$BIN" next "${NODES[@]}" --state "$T/links/s.state" -n 5 >"$T/l1" 2>"$T/lerr"
check "a run through a link: exit 0, quiet" test $? -eq 0 -a ! -s "$T/lerr"
check "the link is still a link to the real file" test -L "$T/links/s.state" -a "$(readlink "$T/links/s.state")" = ../real/s.state
check "the real file holds the mark of the run through the link" \
    test "$(sed -E 's/^idmint-state 1 ([0-9]+) .*/\1/' "$T/real/s.state")" -ge \
    "$(ms_of "$(tail -n 1 "$T/l1")" twitter "$TW_EPOCH")"
check "nothing was made beside the link" test "$(cd "$T/links" && echo *)" = s.state
"$BIN" next "${NODES[@]}" --state "$T/real/s.state" -n 5 >"$T/l2"
cat "$T/l0" "$T/l1" "$T/l2" >"$T/l012"
check "runs through the link and the real path: 15 ids, increasing" increasing "$T/l012" 15
# A dangling link: the file is made where it points.
ln -s ../real/new.state "$T/links/new.state"
"$BIN" next "${NODES[@]}" --state "$T/links/new.state" -n 5 >/dev/null 2>"$T/lerr"
check "a dangling link: the file is made at its target, the link kept" \
    test -f "$T/real/new.state" -a -L "$T/links/new.state" -a ! -s "$T/lerr"
# The real file's lock, held: a run through the link waits for it.
locked_out "a run through a link, the real file's lock held" "$T/real/s.state.lock" \
    "idmint: next: state file '$T/links/s.state': state file is locked by another generator" \
    next "${NODES[@]}" --state "$T/links/s.state"

# A FIFO (or anything else not a regular file) is refused at once, never
# waited on; nothing is created beside it.
mkfifo "$T/fifo.state"
timeout 10 "$BIN" next "${NODES[@]}" --state "$T/fifo.state" >"$T/out" 2>"$T/err"
RC=$?
check "--state FIFO: exit 1 at once (no hang), one line naming it" \
    test "$RC" -eq 1 -a ! -s "$T/out" -a "$(wc -l <"$T/err")" -eq 1 -a \
    "$(cat "$T/err")" = "idmint: next: state file '$T/fifo.state': state file input/output error (state: $T/fifo.state is not a regular file (it is a FIFO))"
check "--state FIFO: no lock file made" test ! -e "$T/fifo.state.lock"
mkdir -p "$T/fifolock"
mkfifo "$T/fifolock/s.state.lock"
timeout 10 "$BIN" next "${NODES[@]}" --state "$T/fifolock/s.state" >"$T/out" 2>"$T/err"
RC=$?
check "a FIFO as the lock file: exit 1 at once, named" \
    test "$RC" -eq 1 -a ! -s "$T/out" -a "$(wc -l <"$T/err")" -eq 1 -a \
    "$(grep -c "lock file $T/fifolock/s.state.lock is not a regular file (it is a FIFO)" "$T/err")" -eq 1
mkdir -p "$T/fifodef"
mkfifo "$T/fifodef/$F_TW"
IDMINT_STATE_DIR="$T/fifodef" timeout 10 "$BIN" next "${NODES[@]}" >"$T/out" 2>"$T/err"
RC=$?
check "a FIFO as the default state file: exit 1 at once, named" \
    test "$RC" -eq 1 -a "$(grep -c "is not a regular file (it is a FIFO)" "$T/err")" -eq 1
fails_with 1 exact "idmint: next: state file '$T/real': state file input/output error (state: $T/real is not a regular file (it is a directory))" \
    next "${NODES[@]}" --state "$T/real"

# --no-state writes nothing.
XDG_STATE_HOME="$T/xdg-none" "$BIN" next "${NODES[@]}" --no-state -n 10 >"$T/ns" 2>"$T/nserr"
check "--no-state mints and writes no state file" \
    test "$(grep -Ecx '[0-9]+' "$T/ns")" -eq 10 -a ! -s "$T/nserr" -a ! -e "$T/xdg-none"

# Runtime failures: exit 1, one stderr line.
fails_with 1 prefix "idmint: next: state file '$T/nodir/x.state': state file input/output error" \
    next "${NODES[@]}" --state "$T/nodir/x.state"
touch "$T/plainfile"
IDMINT_STATE_DIR="$T/plainfile" fails_with 1 exact "idmint: next: state directory '$T/plainfile' is not a directory" \
    next "${NODES[@]}"
printf 'garbage\n' >"$T/corrupt.state"
fails_with 1 prefix "idmint: next: state file '$T/corrupt.state': state file is corrupt" \
    next "${NODES[@]}" --state "$T/corrupt.state"
check "the corrupt-file message says when deleting it is safe; the file is left alone" \
    test "$(grep -c "; delete it only if you are sure no ids with a time ahead of now were minted with it$" "$T/err")" -eq 1 \
    -a "$(cat "$T/corrupt.state")" = garbage

# /dev/full is on every Linux machine: a write there fails with ENOSPC.
"$BIN" next "${NODES[@]}" -n 3 >/dev/full 2>"$T/err"
RC=$?
check "next to a full disk: exit 1, one line" \
    test "$RC" -eq 1 -a "$(grep -c "^idmint: next: cannot write the output: " "$T/err")" -eq 1 -a "$(wc -l <"$T/err")" -eq 1
"$BIN" decode 1 >/dev/full 2>"$T/err"
RC=$?
check "decode to a full disk: exit 1, one line with the reason [$(cat "$T/err")]" \
    test "$RC" -eq 1 -a "$(cat "$T/err")" = "idmint: decode: cannot write the output: $(python3 -c 'import os,errno; print(os.strerror(errno.ENOSPC))')"
# A reader that goes away ends next quietly, with status 1.
"$BIN" next "${NODES[@]}" -n 1000000 2>"$T/err" | head -n 1 >"$T/out"
RC=${PIPESTATUS[0]}
check "next into a closed pipe: exit 1, no message, the first id read" \
    test "$RC" -eq 1 -a ! -s "$T/err" -a "$(grep -Ecx '[0-9]+' "$T/out")" -eq 1

# A state file locked by another generator: next waits for the lock; held
# past its bound (2 s, not timed here), the run fails; let go while the run
# waits, the run goes on from the holder's mark.
locked_out "a state file locked throughout" "$XDG_STATE_HOME/idmint/$F_TW.lock" \
    "idmint: next: state file '$XDG_STATE_HOME/idmint/$F_TW': state file is locked by another generator" \
    next "${NODES[@]}"
waits_out "a state file locked, then let go" "$XDG_STATE_HOME/idmint/$F_TW.lock" \
    "$XDG_STATE_HOME/idmint/$F_TW" next "${NODES[@]}" -n 3

finish
