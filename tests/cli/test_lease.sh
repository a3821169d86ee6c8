#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of idmint's worker-id leases with real processes:
# `lease hold` holders get distinct ids, `lease list` shows them, SIGTERM
# releases an id and kill -9 frees it at once with its mark kept; --max
# bounds the ids; `next --lease` under churn (parallel processes, some
# killed with SIGKILL) never repeats an id; processes that all start on a
# lease directory that does not exist yet all succeed; consecutive holders of
# one id hand the mark on; and bad URLs and options fail with one stderr line.
#
# No check measures elapsed time: where the behaviour is a wait or a
# deadline, the check is on what happened (the exit status, the worker id,
# the message), and the loops that wait for it have bounds (60 s) that only
# end a hung run.
#
# Usage: bash test_lease.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
FAILS_WITHIN= # no check here measures elapsed time
ONE_BIT=time:41@1ms,worker:1,seq:12

# wait_exit PID: wait for PID to exit (up to 60 s, which only ends a hung
# run: then it is killed); its exit status in $STOPPED, 137 if killed.
wait_exit() {
    local i
    for i in $(seq 1200); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
    STOPPED=$?
}

# wait_line FILE PID: wait for a complete line in FILE while PID lives (up
# to 60 s, which only ends a hung run); prints the line.
wait_line() {
    local file=$1 pid=$2 i
    for i in $(seq 1200); do
        if [ -s "$file" ] && ends_nl "$file"; then
            head -n 1 "$file"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -s "$file" ] && head -n 1 "$file"
    return 1
}

# ---- the binary knows leases at all (else stop here, failing) ----

run lease --help
if [ "$RC" -eq 0 ] && grep -q 'lease hold URL' "$T/out" && grep -q 'lease list URL' "$T/out"; then
    ok
else
    bad "idmint lease --help: $(show)"
    finish
fi
run next --help
check "next --help names --lease" grep -q -- '--lease URL' "$T/out"
run help lease
check "idmint help lease prints the usage" grep -q 'lease hold URL' "$T/out"

# Every lease directory below is made by idmint itself, on first use, also
# where several processes start on it at once (l0, l2, l3).

# ---- first use by several processes at once ----
# Eight processes (four `next --lease`, two `lease hold`, two `lease list`)
# start on a lease directory that does not exist yet. A shim (LD_PRELOAD)
# holds each one's mkdir of that directory until all eight have come to it,
# so that none made it before every one had looked for it: the interleaving
# in which a process once failed with "File exists". All must succeed.
cat >"$T/mkdir_gate.c" <<'EOF_C'
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Entries in dir: the processes that came to the gated mkdir. */
static int arrived(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A mkdir of $GATE_PATH leaves a file in $GATE_DIR, then waits until
 * $GATE_N have (60 s at most: only ends a hung run). */
int mkdir(const char *path, mode_t mode)
{
    const char *want = getenv("GATE_PATH"), *dir = getenv("GATE_DIR"), *n = getenv("GATE_N");
    if (want != NULL && dir != NULL && n != NULL && strcmp(path, want) == 0) {
        char me[4200];
        int fd;
        snprintf(me, sizeof me, "%s/%ld", dir, (long)getpid());
        fd = open(me, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0)
            close(fd);
        for (int i = 0; i < 60000 && arrived(dir) < atoi(n); i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}
EOF_C
if ! "${CC:-gcc}" -shared -fPIC -O1 -o "$T/mkdir_gate.so" "$T/mkdir_gate.c" 2>"$T/cc.err"; then
    bad "cannot build the mkdir shim with ${CC:-gcc}: $(head -c 300 "$T/cc.err")"
fi
mkdir "$T/gate"
# A sanitizer build's runtime must come first in LD_PRELOAD (AddressSanitizer
# refuses to start otherwise): the one the binary links, as ldd finds it.
SAN_RT=$(ldd "$BIN" 2>/dev/null | awk '/lib(asan|tsan|ubsan)\.so/ { print $3; exit }')
# env execs idmint: $! is idmint's pid.
GATED=(env "LD_PRELOAD=${SAN_RT:+$SAN_RT:}$T/mkdir_gate.so${LD_PRELOAD:+:$LD_PRELOAD}"
    "GATE_PATH=$T/l0" "GATE_DIR=$T/gate" GATE_N=8 "$BIN")
U0="file://$T/l0"
FP=()
for i in 1 2 3 4; do
    "${GATED[@]}" next --lease "$U0" --node datacenter=1 -n 100 >"$T/f$i.out" 2>"$T/f$i.err" &
    FP+=("$!")
done
for i in 5 6; do
    "${GATED[@]}" lease hold "$U0" >"$T/f$i.out" 2>"$T/f$i.err" &
    FP+=("$!")
done
for i in 7 8; do
    "${GATED[@]}" lease list "$U0" >"$T/f$i.out" 2>"$T/f$i.err" &
    FP+=("$!")
done
PIDS+=("${FP[@]}")
F5=$(wait_line "$T/f5.out" "${FP[4]}")
F6=$(wait_line "$T/f6.out" "${FP[5]}")
FIRST_OK=1
for i in 1 2 3 4 7 8; do
    wait_exit "${FP[i - 1]}"
    if [ "$STOPPED" -ne 0 ] || [ -s "$T/f$i.err" ]; then
        bad "first use at once, process $i: exit $STOPPED, stderr [$(head -c 300 "$T/f$i.err")]"
        FIRST_OK=0
    fi
done
for i in 5 6; do
    stop "${FP[i - 1]}" TERM
    if [ "$STOPPED" -ne 0 ] || [ -s "$T/f$i.err" ]; then
        bad "first use at once, holder $i: exit $STOPPED, stderr [$(head -c 300 "$T/f$i.err")]"
        FIRST_OK=0
    fi
done
check "first use at once: every process succeeded" test "$FIRST_OK" -eq 1
CAME=$(find "$T/gate" -type f | wc -l)
check "first use at once: all eight came to the mkdir before it was made ($CAME)" test "$CAME" -eq 8
check "first use at once: 400 unique ids" test "$(cat "$T"/f[1-4].out | sort -u | grep -c '^[0-9]')" -eq 400
# (A `next` may be done and have released its id before another claims:
# only the two holders are sure to hold theirs at once.)
if is_num "$(field "$F5" worker)" && is_num "$(field "$F6" worker)" &&
    [ "$(field "$F5" worker)" != "$(field "$F6" worker)" ]; then
    ok
else
    bad "first use at once: want two holders with two worker ids; got [$F5] [$F6]"
fi
check "first use at once: the directory idmint made is private" test "$(stat -c %a "$T/l0")" = 700

# ---- two holders, list, SIGTERM, kill -9 ----

U="file://$T/l1"
# A first `next --lease` takes worker 0 and leaves the time of its id as the
# record's mark.
run next --lease "$U" --node datacenter=1
ID0=$(cat "$T/out")
M0=$("$BIN" decode "$ID0" 2>/dev/null | sed -n 's/.* unix_ms=\([0-9]*\) .*worker=0 .*/\1/p')
LL=$(list_line "$U" 0)
if [ "$RC" -eq 0 ] && [ -n "$M0" ] && [ "$(field "$LL" held)" = no ] &&
    [ "$(field "$LL" mark_ms)" = "$M0" ]; then
    ok
else
    bad "next --lease: want worker 0 released with mark_ms = its id's time [$M0]; [$LL]; $(show)"
fi

spawn h1 lease hold "$U"
P1=$SPAWNED
spawn h2 lease hold "$U"
P2=$SPAWNED
L1=$(wait_line "$T/h1.out" "$P1")
L2=$(wait_line "$T/h2.out" "$P2")
# Which holder got worker 0 is up to the race: PA holds 0, PB holds 1.
if [ "$(field "$L1" worker)" = 0 ]; then
    PA=$P1 LA=$L1 PB=$P2 LB=$L2
else
    PA=$P2 LA=$L2 PB=$P1 LB=$L1
fi
if [ "$LA" = "worker=0 mark_ms=$M0" ] && [ "$LB" = "worker=1 mark_ms=0" ]; then
    ok
else
    bad "two holders: want [worker=0 mark_ms=$M0] and [worker=1 mark_ms=0]; got [$L1] [$L2]"
fi
check "holders print nothing on stderr" test ! -s "$T/h1.err" -a ! -s "$T/h2.err"

run lease list "$U"
if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && [ "$(wc -l <"$T/out")" -eq 2 ] &&
    grep -Eq "^worker=0 held=yes mark=[0-9T:.Z-]+ mark_ms=[0-9]+ holder=[^ ]+:$PA$" "$T/out" &&
    grep -Eq "^worker=1 held=yes mark=[0-9T:.Z-]+ mark_ms=[0-9]+ holder=[^ ]+:$PB$" "$T/out"; then
    ok
else
    bad "lease list with two holders: $(show)"
fi
run lease list --json "$U"
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$T/out")" -eq 2 ] &&
    grep -Eq "^\{\"worker\":0,\"held\":true,\"mark\":\"[^\"]+\",\"mark_ms\":[0-9]+,\"holder\":\"[^\"]+:$PA\"\}$" "$T/out" &&
    grep -Eq "^\{\"worker\":1,\"held\":true,\"mark\":\"[^\"]+\",\"mark_ms\":[0-9]+,\"holder\":\"[^\"]+:$PB\"\}$" "$T/out"; then
    ok
else
    bad "lease list --json with two holders: $(show)"
fi
# A held record's mark is its holder's last renewal (or claim) plus the TTL
# (the default, 10 s): at least a TTL past the id minted before it started.
M1=$(field "$(list_line "$U" 1)" mark_ms)
if is_num "$M0" && is_num "$M1" && [ "$M1" -ge $((M0 + 10000)) ]; then
    ok
else
    bad "a holder's recorded mark: want its claim's time + the TTL or later, at least $M0 + 10000; got [$M1]"
fi

# SIGTERM: exit 0, the id is free, its record keeps its mark (a holder that
# minted nothing leaves it as it found it).
stop "$PA" TERM
check "lease hold exits 0 on SIGTERM (got $STOPPED)" test "$STOPPED" -eq 0
LL=$(list_line "$U" 0)
if [ "$(field "$LL" held)" = no ] && [ "$(field "$LL" mark_ms)" = "$M0" ] &&
    [ "$(field "$LL" mark)" != - ]; then
    ok
else
    bad "after SIGTERM: want worker=0 held=no with mark_ms=$M0; got [$LL]"
fi
# The freed id is claimed again, and the claimer sees its mark.
spawn h3 lease hold "$U"
P3=$SPAWNED
L3=$(wait_line "$T/h3.out" "$P3")
check "re-claim after SIGTERM: want [worker=0 mark_ms=$M0], got [$L3]" \
    test "$L3" = "worker=0 mark_ms=$M0"

# kill -9: the id is free at once and the next holder starts from the dead
# holder's last recorded mark (or a later one it recorded meanwhile).
M2=$(field "$(list_line "$U" 1)" mark_ms)
check "holder's recorded mark is a number [$M2]" is_num "$M2"
stop "$PB" 9
LL=$(list_line "$U" 1)
M2K=$(field "$LL" mark_ms)
if [ "$(field "$LL" held)" = no ] && is_num "$M2K" && [ "$M2K" -ge "${M2:-0}" ]; then
    ok
else
    bad "after kill -9: want worker=1 held=no mark_ms>=$M2; got [$LL]"
fi
# A file:// id is never freed by expiry, only by the kernel dropping a dead
# holder's lock, and a claim never waits for a held id (it takes the next
# free one): worker 1, not 2, means its holder's death freed it.
spawn h4 lease hold "$U"
P4=$SPAWNED
L4=$(wait_line "$T/h4.out" "$P4")
M4=$(field "$L4" mark_ms)
if [ "$(field "$L4" worker)" = 1 ] && is_num "$M4" && [ "$M4" -ge "${M2:-0}" ]; then
    ok
else
    bad "claim after kill -9: want worker=1 with mark_ms >= $M2; got [$L4]"
fi
stop "$P3" TERM
check "third holder exits 0 on SIGTERM" test "$STOPPED" -eq 0
stop "$P4" INT
check "lease hold exits 0 on SIGINT" test "$STOPPED" -eq 0
run lease list "$U"
check "no id held once all holders stopped" test "$RC" -eq 0 -a "$(grep -c 'held=no' "$T/out")" -eq 2

# ---- --max 2: a third holder fails at once ----

U2="file://$T/l2"
spawn m1 lease hold --max 2 "$U2"
PM1=$SPAWNED
spawn m2 lease hold --max 2 "$U2"
PM2=$SPAWNED
LM1=$(wait_line "$T/m1.out" "$PM1")
LM2=$(wait_line "$T/m2.out" "$PM2")
check "two holders under --max 2 get 0 and 1 [$LM1] [$LM2]" \
    test "$(printf '%s\n%s\n' "$(field "$LM1" worker)" "$(field "$LM2" worker)" | sort | tr '\n' ' ')" = "0 1 "
# The third exits by itself, refused, while both ids are still held (a
# holder waiting for a free id would be killed by wait_exit: status 137).
"$BIN" lease hold --max 2 "$U2" >"$T/out" 2>"$T/err" &
PX=$!
PIDS+=("$PX")
wait_exit "$PX"
RC=$STOPPED
if [ "$RC" -eq 1 ] && [ ! -s "$T/out" ] && one_err_line && grep -q 'no free worker id' "$T/err" &&
    kill -0 "$PM1" 2>/dev/null && kill -0 "$PM2" 2>/dev/null; then
    ok
else
    bad "third holder under --max 2: want exit 1 with 'no free worker id' while both holders live; $(show)"
fi
# next --lease on a layout with a 1-bit worker field: only ids 0 and 1.
fails_with 1 'no free worker id' next --lease "$U2" --layout "$ONE_BIT" --epoch "$TW_EPOCH"
stop "$PM1" TERM
stop "$PM2" TERM

# ---- churn: 50 processes, 10 at a time, about one in five killed ----

U3="file://$T/l3"
# 4096 ids a ms at most: a victim takes 2.4 s at least, and is killed long
# before (waited for up to 60 s, which only ends a hung run).
CHURN_WAIT=1200 churn "$U3" 50 10 40 --lease-ttl 1000 --node datacenter=1
check "churn: at least 5 processes were killed mid-run (got $KILLED)" test "$KILLED" -ge 5
churn_workers 80
run lease list "$U3"
check "churn: no id held afterwards" test "$RC" -eq 0 -a "$(grep -c 'held=yes' "$T/out")" -eq 0
check "churn: no more than 32 records" test "$(wc -l <"$T/out")" -le 32

# ---- sequential reuse: the mark goes from holder to holder ----

U4="file://$T/l4"
mkdir -p "$T/seq"
SEQ_OK=1
PREV_LAST=
PREV_W=
SAME=0
for i in $(seq 1 20); do
    if ! "$BIN" next --lease "$U4" --layout "$ONE_BIT" --epoch "$TW_EPOCH" -n 5000 \
        >"$T/seq/$i.out" 2>"$T/seq/$i.err" || [ "$(wc -l <"$T/seq/$i.out")" -ne 5000 ]; then
        bad "sequential run $i: $(head -c 300 "$T/seq/$i.err")"
        SEQ_OK=0
        continue
    fi
    FIRST=$(head -n 1 "$T/seq/$i.out")
    LAST=$(tail -n 1 "$T/seq/$i.out")
    W=$("$BIN" decode --layout "$ONE_BIT" --epoch "$TW_EPOCH" "$FIRST" | sed -n 's/.* worker=\([0-9]*\) .*/\1/p')
    if [ -n "$PREV_W" ] && [ "$W" = "$PREV_W" ]; then
        SAME=$((SAME + 1))
        if [ "$FIRST" -le "$PREV_LAST" ]; then
            bad "sequential run $i (worker $W): first id $FIRST not above the previous holder's last $PREV_LAST"
            SEQ_OK=0
        fi
    fi
    PREV_LAST=$LAST
    PREV_W=$W
done
check "sequential: consecutive runs shared a worker id ($SAME times)" test "$SAME" -ge 10
check "sequential: every handoff started above the previous holder" test "$SEQ_OK" -eq 1
cat "$T"/seq/*.out >"$T/seq.all"
check "sequential: 100000 ids" test "$(wc -l <"$T/seq.all")" -eq 100000
check "sequential: all ids unique" test "$(sort "$T/seq.all" | uniq -d | wc -l)" -eq 0

# Holders that run ahead of the clock (--exhaust borrow mints up to 10 ms
# ahead): the next holder of the id must start above the previous holder's
# ids even though the clock has not reached them yet.
U4B="file://$T/l4b"
AHEAD_OK=1
PREV_LAST=
for i in $(seq 1 10); do
    if ! "$BIN" next --lease "$U4B" --layout "$ONE_BIT" --epoch "$TW_EPOCH" -n 40000 \
        --exhaust borrow >"$T/seq/b$i.out" 2>"$T/seq/b$i.err"; then
        bad "borrowing run $i: $(head -c 300 "$T/seq/b$i.err")"
        AHEAD_OK=0
        continue
    fi
    FIRST=$(head -n 1 "$T/seq/b$i.out")
    if [ -n "$PREV_LAST" ] && [ "$FIRST" -le "$PREV_LAST" ]; then
        bad "borrowing run $i: first id $FIRST not above the previous holder's last $PREV_LAST"
        AHEAD_OK=0
    fi
    PREV_LAST=$(tail -n 1 "$T/seq/b$i.out")
done
check "borrowing: every handoff started above the previous holder" test "$AHEAD_OK" -eq 1
check "borrowing: 400000 unique ids" \
    test "$(cat "$T"/seq/b*.out | sort -u | wc -l)" -eq 400000

# ---- next --lease: SIGTERM releases with the exact last tick ----

U5="file://$T/l5"
spawn term next --lease "$U5" -n 10000000 --node datacenter=2
PT=$SPAWNED
wait_out "$T/term.out" "$PT" 1200 # it mints: its handlers are in place
sleep 0.1
stop "$PT" TERM
LAST=$(tail -n 1 "$T/term.out")
LL=$(list_line "$U5" 0)
MT=$(field "$LL" mark_ms)
LT=$("$BIN" decode "$LAST" | sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p')
if [ "$STOPPED" -eq 143 ] && [ ! -s "$T/term.err" ] && [ "$(field "$LL" held)" = no ] &&
    [ -n "$LT" ] && [ "$MT" = "$LT" ]; then
    ok
else
    bad "next --lease on SIGTERM: want death by SIGTERM and mark_ms = last id's time $LT; exit $STOPPED, [$LL], stderr [$(head -c 300 "$T/term.err")]"
fi
# The clean stop recorded the last id's time, not its lookahead: the next
# holder is handed that mark and has nothing to wait for (-v would say
# "waiting N ms for the clock to pass the previous holder's mark").
run next --lease "$U5" --node datacenter=2 -v
if [ "$RC" -eq 0 ] && [ "$(wc -l <"$T/out")" -eq 1 ] && [ "$(cat "$T/out")" -gt "$LAST" ] &&
    grep -q "^idmint: next: lease: worker=0 mark_ms=$LT\$" "$T/err" && ! grep -q waiting "$T/err"; then
    ok
else
    bad "next --lease -v after a clean stop: want mark_ms=$LT and one id above $LAST without waiting; $(show)"
fi

# kill -9 mid-run: the next holder of the id waits for the clock to pass the
# dead holder's mark (at most its TTL ahead), then mints above its ids. It is
# killed as soon as it mints, with its mark still about 3 s (its TTL) ahead:
# the next claim, a moment later, still has to wait (a TTL of 1 s could run
# out first on a loaded machine, and then there is no wait to see).
U7="file://$T/l7"
# Without claim files (--no-state): a plain claim; a restart that resumes
# its claim instead is in test_fleet_cli.sh.
spawn k9 next --lease "$U7" --lease-ttl 3000 -n 10000000 --node datacenter=2 --no-state
PK=$SPAWNED
wait_out "$T/k9.out" "$PK" 1200
stop "$PK" 9
MK=$(field "$(list_line "$U7" 0)" mark_ms)
head -n -1 "$T/k9.out" >"$T/k9.ids" # the last line may be cut short
run next --lease "$U7" --node datacenter=2 -n 3 -v --no-state
FIRST=$(head -n 1 "$T/out")
MAXK=$(sort -n "$T/k9.ids" | tail -n 1)
# The wait ended with the clock past the mark: the first id's time is above it.
TF=$("$BIN" decode "$FIRST" 2>/dev/null | sed -n 's/.* unix_ms=\([0-9]*\) .*/\1/p')
if [ "$STOPPED" -eq 137 ] && [ "$RC" -eq 0 ] && [ "$(wc -l <"$T/out")" -eq 3 ] && is_num "$MK" &&
    grep -q "^idmint: next: lease: worker=0 mark_ms=$MK\$" "$T/err" &&
    grep -q "^idmint: next: waiting [0-9]* ms for the clock to pass the previous holder's mark\$" "$T/err" &&
    [ -n "$MAXK" ] && [ "$FIRST" -gt "$MAXK" ] && is_num "$TF" && [ "$TF" -gt "$MK" ]; then
    ok
else
    bad "next --lease after kill -9: want a wait for mark $MK, then ids above $MAXK and after the mark (first at $TF); $(show)"
fi
check "--lease keeps no ids-*.state file (only claim files)" \
    test -z "$(ls "$T/state" 2>/dev/null | grep '^ids-')"

# ---- layouts: which field a lease fills ----
# A coordinator hands out worker ids of one field of one layout (its scope):
# each layout here gets a directory of its own.

U6="file://$T/l6"
run next --lease "file://$T/l6i" --layout instagram -n 2 --format json
check "instagram: the lease fills shard [$(head -c 200 "$T/out")]" \
    test "$RC" -eq 0 -a "$(grep -c '"shard":0,' "$T/out")" -eq 2
run next --lease "file://$T/l6s" --layout sonyflake -n 2 --format json
check "sonyflake: the lease fills machine [$(head -c 200 "$T/out")]" \
    test "$RC" -eq 0 -a "$(grep -c '"machine":0}' "$T/out")" -eq 2
run next --lease "file://$T/l6d" --layout discord --node process=3 -n 1 --format json
check "discord: the lease fills worker [$(head -c 200 "$T/out")]" \
    test "$RC" -eq 0 -a "$(grep -c '"worker":0,"process":3,' "$T/out")" -eq 1
fails_with 2 '--lease-field NAME' next --lease "$U6" --layout time:41@1ms,node:10,seq:12 --epoch "$TW_EPOCH"
fails_with 2 'no node field' next --lease "$U6" --layout time:41@1ms,seq:12 --epoch "$TW_EPOCH"
run next --lease "file://$T/l6n" --layout time:41@1ms,node:10,seq:12 --epoch "$TW_EPOCH" --lease-field node -n 1 --format json
check "--lease-field node [$(head -c 200 "$T/out")]" \
    test "$RC" -eq 0 -a "$(grep -c '"node":0,' "$T/out")" -eq 1
fails_with 2 "bad --lease-field 'seq'" next --lease "$U6" --lease-field seq --node datacenter=1
fails_with 2 "bad --lease-field 'nope'" next --lease "$U6" --lease-field nope --node datacenter=1

# ---- scope: one coordinator, one field of one layout ----
# Two runs on one lease directory that would fill different fields (the
# worker field with datacenter=1, or the datacenter field with worker=0)
# would both mint datacenter=1, worker=0: the second is refused, naming
# both scopes, and claims nothing. Two spellings of one layout share it.
# A directory of its own (l7 above recorded a scope already).

U8="file://$T/l8"
run next --lease "$U8" --node datacenter=1 -n 1
check "the first claimant records its scope [$(show)]" test "$RC" -eq 0 -a -f "$T/l8/scope"
fails_with 2 "hands out ids for 'worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974657'; this claimant asks for 'datacenter of" \
    next --lease "$U8" --lease-field datacenter --node worker=0 -n 1
fails_with 2 "this claimant asks for 'worker of time:41@1ms,datacenter:5,worker:5,seq:12 epoch 1288834974658'" \
    next --lease "$U8" --layout twitter --epoch 1288834974658 --node datacenter=1 -n 1
fails_with 2 "this claimant asks for 'worker of time:41@1ms,worker:10,seq:12" \
    next --lease "$U8" --layout time:41@1ms,worker:10,seq:12 --epoch "$TW_EPOCH" -n 1
check "a refused claimant claimed nothing" test "$(ls "$T/l8" | grep -c '^worker-')" -eq 1
run next --lease "$U8" --layout time:41@1ms,datacenter:5,worker:5,seq:12 --epoch 1288834974657 --node datacenter=2 -n 1
check "the same layout spelled out shares the coordinator [$(show)]" test "$RC" -eq 0

# ---- bad input: exit status and one stderr line ----

fails_with 2 "'nope' is not a URL" lease list nope
fails_with 2 "'nope' is not a URL" lease hold nope
fails_with 2 "unknown scheme" lease hold http://x
fails_with 2 "unknown scheme" lease list http://x
fails_with 2 "absolute directory" lease hold file://relative
fails_with 2 "'nope' is not a URL" next --lease nope --node datacenter=1
fails_with 2 "unknown scheme" next --lease http://x --node datacenter=1
fails_with 2 "absolute directory" next --lease file://relative --node datacenter=1
: >"$T/plain"
fails_with 1 "cannot use directory" lease hold "file://$T/missing/a/b"
fails_with 1 "cannot use directory" lease list "file://$T/plain/sub"
fails_with 1 "cannot use directory" next --lease "file://$T/missing/a/b" --node datacenter=1
fails_with 2 "not a directory" lease hold "file://$T/plain"
fails_with 2 "--lease and --state exclude each other" next --lease "$U6" --state "$T/s" --node datacenter=1
fails_with 2 "--node worker and --lease exclude each other" next --lease "$U6" --node worker=3 --node datacenter=1
fails_with 2 "needs --node datacenter=N" next --lease "$U6"
fails_with 2 "--lease-ttl needs --lease URL" next --lease-ttl 5000 --node datacenter=1 --node worker=1
fails_with 2 "--lease-field needs --lease URL" next --lease-field worker --node datacenter=1 --node worker=1
fails_with 2 "bad --lease-ttl '500'" next --lease "$U6" --lease-ttl 500 --node datacenter=1
fails_with 2 "bad --lease-ttl 'x'" next --lease "$U6" --lease-ttl x --node datacenter=1
fails_with 2 "bad --ttl '3600001'" lease hold "$U6" --ttl 3600001
fails_with 2 "bad --max '0'" lease hold "$U6" --max 0
fails_with 2 "bad --max '65537'" lease list "$U6" --max 65537
fails_with 2 "missing URL" lease list
fails_with 2 "unexpected argument 'y'" lease list "$U6" y
fails_with 2 "unknown option '--ttl'" lease list "$U6" --ttl 2000
fails_with 2 "unknown option '--json'" lease hold "$U6" --json
fails_with 2 "missing subcommand" lease
fails_with 2 "unknown subcommand 'grab'" lease grab "$U6"
check "bad input left no holder behind" test "$("$BIN" lease list "$U6" | grep -c 'held=yes')" -eq 0

finish
