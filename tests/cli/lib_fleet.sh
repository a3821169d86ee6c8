# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# What the fleet test scripts (tests/cli/test_fleet_{etcd,zk,pg}.sh) share:
# `idmint next --lease URL -v` runs on a real coordinator going through what
# happens to a fleet over time, on top of lib_lease.sh. Not a test itself:
# each script sources it right after lib_lease.sh and, before calling the
# bodies below, sets
#
#   COORD        what the coordinator is called in the notes ("etcd")
#   ROW_RESUME, ROW_OFFLINE, ROW_STALE   the fault rows (docs/FAULTS.md) of
#                this coordinator's table that the bodies show, for the
#                check texts: a restart with the saved claim ("E12r"), the
#                coordinator down at the restart ("E2r"), a saved claim
#                that ran out ("E12x")
#   FTTL         the runs' TTL in ms (2000 to 4000)
#
# and defines coord_stop and coord_start (the coordinator made unreachable,
# and back, keeping its data: SIGSTOP and SIGCONT, or a stopped server
# started again). The bodies:
#
#   fleet_resume URL     a holder killed with kill -9 and started again at
#                        once resumes its claim (ROW_RESUME)
#   fleet_twice URL      a dead holder's state directory copied, both copies
#                        restarted at once: the saved claim is confirmed to
#                        one of them only (ROW_RESUME: a claim resumes once)
#   fleet_offline URL    the coordinator down at the restart: minting up to
#                        the saved deadline and no further; refused after
#                        it, and on another boot; minting on past it once
#                        the coordinator is back (ROW_OFFLINE); a claim that
#                        ran out not resumed once the coordinator is back
#                        (ROW_STALE)
#   fleet_loss URL HOW...   the coordinator drops the claim under a running
#                        holder, once per HOW (a function of the script's:
#                        HOW WORKER drops that worker id's claim): the run
#                        re-claims and mints on under another worker id
#                        (HOW's name starts with its row: e3_..., e4_...)
#
# Every id every run prints is checked: no id twice among all the runs of
# a body, and each worker id's ids increasing in the order they were
# printed, run after run. Runs use lib_lease.sh's SLOW layout (16 ids a
# millisecond at most) with datacenter 1; the lease fills the worker field
# (32 ids). Each body keeps its claim files in a state directory of its own.
# Times in the checks are the ids' own (decoded) against what the claim file
# or the coordinator recorded, never elapsed wall time.

# frun NAME URL ARGS...: `idmint next --lease URL -v` with the fleet's
# layout and TTL in the background (lib_lease.sh's spawn).
frun() {
    local name=$1 url=$2
    shift 2
    spawn "$name" next --lease "$url" --lease-ttl "$FTTL" --layout "$SLOW" --epoch "$TW_EPOCH" \
        --node datacenter=1 -v "$@"
}
# frun_fg URL ARGS...: the same in the foreground (lib.sh's run: $T/out,
# $T/err, RC).
frun_fg() {
    local url=$1
    shift
    run next --lease "$url" --lease-ttl "$FTTL" --layout "$SLOW" --epoch "$TW_EPOCH" \
        --node datacenter=1 -v "$@"
}

# claim_file: the claim file in $IDMINT_STATE_DIR (the one a body's runs
# share), empty if there is none.
claim_file() {
    local f
    for f in "$IDMINT_STATE_DIR"/claim-*; do
        [[ $f =~ /claim-[0-9a-f]+-[0-9]+$ ]] && [ -f "$f" ] && printf '%s\n' "$f" && return 0
    done
    return 1
}
# claim_field KEY: KEY's value in the claim file's line.
claim_field() { field "$(cat "$(claim_file)" 2>/dev/null)" "$1"; }

# wait_renewal PID: wait until the holder PID has rewritten its claim file
# once more (a renewal just went through: the saved deadline is as far
# ahead as it gets), at most 8 s.
wait_renewal() {
    local first
    for _ in $(seq 160); do
        first=$(cat "$(claim_file)" 2>/dev/null) && [ -n "$first" ] && break
        sleep 0.05
    done
    for _ in $(seq 160); do
        [ "$(cat "$(claim_file)" 2>/dev/null)" != "$first" ] && return 0
        exited "$1" && return 1
        sleep 0.05
    done
    return 1
}

# errors FILE: FILE's stderr lines that are not -v notes (the claim, the
# wait for a mark, the resume, a loss and its re-claim): the errors.
errors() {
    grep -v -e '^idmint: next: lease: ' -e '^idmint: next: claimed worker id ' \
        -e '^idmint: next: waiting [0-9]* ms for the clock to pass ' \
        -e '^idmint: next: resumed the saved claim ' -e '^idmint: next: the saved claim of ' \
        -e '^idmint: next: worker id [0-9]*: the coordinator says the claim is gone' \
        -e '^idmint: next: re-claimed after a loss: ' "$1"
}

# one_error FILE TEXT: FILE has exactly one error line (see errors), and it
# holds TEXT.
one_error() { [ "$(errors "$1" | wc -l)" -eq 1 ] && errors "$1" | grep -qF -- "$2"; }
# said FILE TEXT: FILE has the -v line "idmint: next: TEXT"; said_re FILE
# RE: one that matches the regular expression "idmint: next: RE".
said() { grep -qxF -- "idmint: next: $2" "$1"; }
said_re() { grep -qx -- "idmint: next: $2" "$1"; }
# How a resume is said, after "resumed the saved claim of worker id N ".
CONFIRMED="(the coordinator confirmed it)"
UNREACHED="(the coordinator cannot be reached: minting up to its saved deadline)"

# decode FILE...: each id of FILEs, in order, as "id unix_ms worker seq"
# lines (`idmint decode --json`, many ids a call) on stdout.
decode() {
    local json='^{"id":"\([0-9]*\)",.*"unix_ms":\([0-9]*\),"datacenter":1,'
    json+='"worker":\([0-9]*\),"seq":\([0-9]*\)}$'
    cat "$@" | xargs -r -n 20000 "$BIN" decode --json --layout "$SLOW" --epoch "$TW_EPOCH" |
        sed -n "s/$json/\\1 \\2 \\3 \\4/p"
}
# not_under W FILE: how many of FILE's ids are not under worker id W.
not_under() { decode "$2" | awk -v w="$1" '$3 != w { n++ } END { print n + 0 }'; }

# ids_ok WHAT FILE...: the ids of FILEs (runs in the order they ran) are
# all ids, none twice, and each worker id's (time, seq) rises from one id
# to the next in that order. $T/ids.dec keeps them decoded.
ids_ok() {
    local what=$1 n dups bad_order
    shift
    n=$(cat "$@" | wc -l)
    decode "$@" >"$T/ids.dec"
    check "$what: all $n lines are ids of datacenter 1 ($(wc -l <"$T/ids.dec") decoded)" \
        test "$n" -gt 0 -a "$(wc -l <"$T/ids.dec")" -eq "$n"
    dups=$(cut -d' ' -f1 "$T/ids.dec" | sort | uniq -d | wc -l)
    check "$what: no id twice among $n ($dups repeated)" test "$dups" -eq 0
    bad_order=$(awk '{ if (($3 in ms) && ($2 < ms[$3] || ($2 == ms[$3] && $4 <= sq[$3]))) {
                           print "line " NR ": " $0 " after " ms[$3] "/" sq[$3]; exit }
                       ms[$3] = $2; sq[$3] = $4 }' "$T/ids.dec")
    check "$what: each worker id's ids increase [$bad_order]" test -z "$bad_order"
}

# ms_range FILE: "min max" of the unix_ms of FILE's ids.
ms_range() {
    decode "$1" | awk 'NR == 1 { lo = $2; hi = $2 } { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2 }
                       END { if (NR) print lo, hi }'
}

# snap FILE: the complete lines FILE holds now (a running holder's output
# may end in half a line), into $T/snap.
snap() {
    cp "$1" "$T/snap"
    trim "$T/snap"
}

# kill_holder PID NAME: kill -9 the holder and drop a last line the kill cut
# short from $T/NAME.out.
kill_holder() {
    kill -9 "$1" 2>/dev/null
    { wait "$1"; } 2>/dev/null
    trim "$T/$2.out"
}

# ---- kill -9 and restart at once: the claim resumed ----

fleet_resume() {
    local url=$1 pa last w line mark first wf first_ms t0 d
    t0=$(now_ms)
    export IDMINT_STATE_DIR=$T/state-resume
    frun ra "$url" -n 10000000
    pa=$SPAWNED
    check "$ROW_RESUME resume: the holder mints [$(peek 300 "$T/ra.err")]" \
        wait_out "$T/ra.out" "$pa"
    check "$ROW_RESUME resume: the holder renews and keeps its claim file" wait_renewal "$pa"
    kill_holder "$pa" ra
    last=$(tail -n 1 "$T/ra.out")
    w=$(decode "$T/ra.out" | sed -n '$p' | cut -d' ' -f3)
    line=$(list_line "$url" "$w")
    mark=$(field "$line" mark_ms)
    check "$ROW_RESUME resume: $COORD still records worker $w held, with a mark [$line]" \
        test "$(field "$line" held)" = yes -a -n "$mark"
    frun_fg "$url" -n 2000
    check "$ROW_RESUME resume: the restart exits 0 with 2000 ids; $(show)" \
        test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 2000
    check "$ROW_RESUME resume: resumed, the coordinator confirmed it; $(show)" \
        said "$T/err" "resumed the saved claim of worker id $w $CONFIRMED"
    check "$ROW_RESUME resume: no new claim, no wait for a mark; $(show)" \
        test -z "$(grep -e 'claimed worker id' -e 'waiting ' "$T/err")" -a -z "$(errors "$T/err")"
    first=$(head -n 1 "$T/out")
    wf=$(decode "$T/out" | sed -n 1p | cut -d' ' -f3)
    first_ms=$(decode "$T/out" | sed -n 1p | cut -d' ' -f2)
    check "$ROW_RESUME resume: the same worker id ($w, got $wf)" test -n "$w" -a "$wf" = "$w"
    check "$ROW_RESUME resume: the first id is above the killed run's last ($first > $last)" \
        test "${first:-0}" -gt "${last:-0}"
    d="no wait: the first id's time ($first_ms) is below the dead run's recorded mark ($mark)"
    check "$ROW_RESUME resume: $d" test "${first_ms:-99999999999999}" -lt "${mark:-0}"
    cp "$T/out" "$T/rb.out"
    ids_ok "$ROW_RESUME resume" "$T/ra.out" "$T/rb.out"
    line=$(list_line "$url" "$w")
    check "$ROW_RESUME resume: released at the clean exit [$line]" test "$(field "$line" held)" = no
    check "$ROW_RESUME resume: the clean exit removed the claim file" test -z "$(claim_file)"
    note "$ROW_RESUME resume ($COORD): worker $w; first id at mark" \
        "-$((${mark:-0} - ${first_ms:-0})) ms; $(($(now_ms) - t0)) ms in all"
}

# ---- one saved claim resumed twice ----

# fleet_twice URL: a holder killed with kill -9; its state directory copied
# (a volume snapshot restored twice, a directory copied to a second host);
# the two copies restarted at once. The coordinator must confirm the saved
# claim to one of them only: the other claims another worker id. No id
# twice among the three runs.
fleet_twice() {
    local url=$1 pa p1 p2 s1 s2 w both
    export IDMINT_STATE_DIR=$T/state-twice
    frun ta "$url" -n 10000000
    pa=$SPAWNED
    check "$ROW_RESUME twice: the holder mints [$(peek 300 "$T/ta.err")]" wait_out "$T/ta.out" "$pa"
    check "$ROW_RESUME twice: the holder renews" wait_renewal "$pa"
    kill_holder "$pa" ta
    w=$(claim_field worker)
    cp -a "$T/state-twice" "$T/state-twice2"
    frun tb "$url" -n 4000
    p1=$SPAWNED
    IDMINT_STATE_DIR=$T/state-twice2 frun tc "$url" -n 4000
    p2=$SPAWNED
    wait_gone "$p1" 400
    s1=$STOPPED
    wait_gone "$p2" 400
    s2=$STOPPED
    cat "$T/tb.err" "$T/tc.err" >"$T/twice.err"
    both=$(cat "$T/twice.err")
    check "$ROW_RESUME twice: both copies exit 0 (status $s1 and $s2) [$both]" \
        test "$s1" -eq 0 -a "$s2" -eq 0
    check "$ROW_RESUME twice: the coordinator confirmed worker $w to one copy only [$both]" \
        test "$(grep -cxF "idmint: next: resumed the saved claim of worker id $w $CONFIRMED" \
            "$T/twice.err")" -eq 1 -a "$(grep -c "resumed the saved claim" "$T/twice.err")" -eq 1
    check "$ROW_RESUME twice: the other claimed anew [$both]" \
        test "$(grep -c "^idmint: next: claimed worker id " "$T/twice.err")" -eq 1
    ids_ok "$ROW_RESUME twice" "$T/ta.out" "$T/tb.out" "$T/tc.out"
}

# ---- the coordinator down at the restart ----

# offline_kill URL NAME: a holder (NAME) mints and renews; right after a
# renewal the coordinator is stopped and the holder killed with kill -9.
# Its worker id, saved mark and saved wall deadline (ms) in SAVED_W,
# SAVED_MARK, SAVED_DL.
offline_kill() {
    local url=$1 name=$2 pa
    frun "$name" "$url" -n 10000000
    pa=$SPAWNED
    check "$ROW_OFFLINE offline: holder $name mints [$(peek 300 "$T/$name.err")]" \
        wait_out "$T/$name.out" "$pa"
    check "$ROW_OFFLINE offline: holder $name renews" wait_renewal "$pa"
    coord_stop
    kill_holder "$pa" "$name"
    SAVED_W=$(claim_field worker)
    SAVED_MARK=$(claim_field mark)
    SAVED_DL=$(claim_field wall)
    # No claim file: empty, and the checks that use it fail (never an
    # arithmetic error, which would end the caller's whole command).
    [ -n "$SAVED_DL" ] && SAVED_DL=$((SAVED_DL / 1000000))
    check "$ROW_OFFLINE offline: the claim file of $name holds a worker id, a mark and a deadline" \
        is_num "$SAVED_W$SAVED_MARK"
}

fleet_offline() {
    local url=$1 pb n range lo hi t_d ne st t0 d
    t0=$(now_ms)
    # 1. Minting up to the saved deadline, then a refusal after it.
    export IDMINT_STATE_DIR=$T/state-offline1
    offline_kill "$url" oa
    frun ob "$url" -n 10000000
    pb=$SPAWNED
    wait_gone "$pb" $((FTTL / 10 + 200))
    [ "$STOPPED" -eq 255 ] && stop "$pb" TERM
    check "$ROW_OFFLINE offline: resumed, the coordinator unreachable [$(peek 600 "$T/ob.err")]" \
        said "$T/ob.err" "resumed the saved claim of worker id $SAVED_W $UNREACHED"
    n=$(wc -l <"$T/ob.out")
    check "$ROW_OFFLINE offline: it minted ($n ids) and then exits 1 (status $STOPPED)" \
        test "$n" -gt 0 -a "$STOPPED" -eq 1
    check "$ROW_OFFLINE offline: one error line, naming the lease [$(errors "$T/ob.err")]" \
        one_error "$T/ob.err" lease
    range=$(ms_range "$T/ob.out")
    lo=${range% *}
    hi=${range#* }
    # An id of the deadline's own ms was minted before it (within that ms).
    d="every id's time ($lo..$hi) is within the saved deadline ($SAVED_DL) and mark ($SAVED_MARK)"
    check "$ROW_OFFLINE offline: $d" \
        test "${hi:-99999999999999}" -le "$SAVED_DL" -a "${hi:-99999999999999}" -le "$SAVED_MARK"
    check "$ROW_OFFLINE offline: all under the saved worker id $SAVED_W" \
        test "$(not_under "$SAVED_W" "$T/ob.out")" -eq 0
    note "$ROW_OFFLINE offline ($COORD): minted $n ids up to" \
        "$((SAVED_DL - ${hi:-0})) ms before the saved deadline"
    ids_ok "$ROW_OFFLINE offline" "$T/oa.out" "$T/ob.out"
    # Past the deadline, the coordinator still down: refused.
    frun_fg "$url" -n 5
    check "$ROW_OFFLINE offline: restarted past the deadline: refused, no id; $(show)" \
        test "$RC" -ne 0 -a ! -s "$T/out"
    check "$ROW_OFFLINE offline: past the deadline: the saved claim ran out; $(show)" \
        said_re "$T/err" \
        "the saved claim of worker id $SAVED_W was not resumed: .*ran out .*; claiming anew"
    check "$ROW_OFFLINE offline: past the deadline: one clear error [$(errors "$T/err")]" \
        one_error "$T/err" "cannot claim a worker id"
    coord_start

    # 2. Another boot, before the deadline: refused.
    export IDMINT_STATE_DIR=$T/state-offline2
    offline_kill "$url" oc
    printf '00000000-0000-4000-8000-%012d\n' "$RANDOM" >"$T/other-boot"
    t_d=$(now_ms)
    IDMINT_BOOT_ID_FILE=$T/other-boot frun_fg "$url" -n 5
    check "$ROW_OFFLINE offline: another boot: refused, no id; $(show)" \
        test "$RC" -ne 0 -a ! -s "$T/out"
    check "$ROW_OFFLINE offline: another boot: not resumed for the boot; $(show)" \
        said_re "$T/err" \
        "the saved claim of worker id $SAVED_W was not resumed: .*from another boot; claiming anew"
    check "$ROW_OFFLINE offline: another boot: one clear error [$(errors "$T/err")]" \
        one_error "$T/err" "cannot claim a worker id"
    check "$ROW_OFFLINE offline: another boot: tried before the saved deadline ($t_d < $SAVED_DL)" \
        test "$t_d" -lt "$SAVED_DL"
    coord_start

    # 3. Resumed offline, the coordinator back before the deadline: the
    # keeper reattaches and minting goes on past the saved deadline, to the
    # end of a bounded run (16 ids a ms: at least FTTL of minting, from a
    # start at most FTTL/3 after the kill, to a deadline at 0.8 FTTL).
    export IDMINT_STATE_DIR=$T/state-offline3
    offline_kill "$url" od
    ne=$((16 * FTTL))
    frun oe "$url" -n "$ne"
    wait_out "$T/oe.out" "$SPAWNED"
    coord_start
    st=$SPAWNED
    wait_gone "$st" 400
    [ "$STOPPED" -eq 255 ] && stop "$st" TERM
    check "$ROW_OFFLINE offline+back: resumed offline [$(peek 600 "$T/oe.err")]" \
        said "$T/oe.err" "resumed the saved claim of worker id $SAVED_W $UNREACHED"
    n=$(wc -l <"$T/oe.out")
    d="exits 0 with its $ne ids (status $STOPPED, $n ids, errors [$(errors "$T/oe.err")])"
    check "$ROW_OFFLINE offline+back: $d" \
        test "$STOPPED" -eq 0 -a "$n" -eq "$ne" -a -z "$(errors "$T/oe.err")"
    range=$(ms_range "$T/oe.out")
    hi=${range#* }
    d="minted past the saved deadline (last id $hi, deadline $SAVED_DL)"
    check "$ROW_OFFLINE offline+back: $d" test "${hi:-0}" -gt "$SAVED_DL"
    check "$ROW_OFFLINE offline+back: all under the saved worker id $SAVED_W" \
        test "$(not_under "$SAVED_W" "$T/oe.out")" -eq 0
    ids_ok "$ROW_OFFLINE offline+back" "$T/od.out" "$T/oe.out"
    check "$ROW_OFFLINE offline+back: released at the clean exit [$(list_line "$url" "$SAVED_W")]" \
        test "$(field "$(list_line "$url" "$SAVED_W")" held)" = no
    note "$ROW_OFFLINE offline+back ($COORD): last id $((${hi:-0} - SAVED_DL)) ms past the" \
        "saved deadline"

    # 4. The first round's saved claim, long run out, with the coordinator
    # back: the coordinator does not confirm it, so a normal claim follows,
    # above every id before it.
    export IDMINT_STATE_DIR=$T/state-offline1
    frun_fg "$url" -n 2000
    cp "$T/out" "$T/of.out"
    check "$ROW_STALE stale: a claim that ran out is not resumed; $(show)" \
        said_re "$T/err" "the saved claim of worker id [0-9]* was not resumed: .*; claiming anew"
    check "$ROW_STALE stale: claimed anew, 2000 ids; $(show)" \
        test "$RC" -eq 0 -a "$(wc -l <"$T/out")" -eq 2000 -a -z "$(errors "$T/err")" -a \
        -n "$(grep '^idmint: next: claimed worker id ' "$T/err")"
    # Every holder of the four rounds, in the order they ran.
    ids_ok "$ROW_OFFLINE offline, all runs" "$T"/o[abcdef].out
    note "$ROW_OFFLINE offline ($COORD): $(($(now_ms) - t0)) ms in all"
}

# ---- the coordinator drops the claim under a running holder ----

# fleet_loss URL HOW...: a holder mints; each HOW in turn drops the claim of
# its current worker id (HOW WORKER; the holder's pid in LOSS_PID) and the
# holder must log the loss, re-claim another worker id and mint on under
# it; then SIGTERM. HOW's name starts with the fault row it injects
# (e4_del: E4), which the checks cite.
fleet_loss() {
    local url=$1 p k=0 how row w nw took line act first_new last_old cur seq t0 d
    t0=$(now_ms)
    shift
    export IDMINT_STATE_DIR=$T/state-loss
    frun la "$url" -n 10000000
    p=$SPAWNED
    # shellcheck disable=SC2034 # for the script's HOW functions
    LOSS_PID=$p
    check "loss: the holder mints [$(peek 300 "$T/la.err")]" wait_out "$T/la.out" "$p"
    w=$(sed -n 's/^idmint: next: claimed worker id \([0-9]*\)$/\1/p' "$T/la.err")
    check "loss: the holder says its worker id [$w]" is_num "$w"
    seq=$w
    for how in "$@"; do
        k=$((k + 1))
        row=${how%%_*}
        row=${row^^}
        sleep 0.3
        act=$(now_ms)
        "$how" "$w"
        line=
        for _ in $(seq 200); do
            line=$(grep '^idmint: next: re-claimed after a loss: ' "$T/la.err" | sed -n "${k}p")
            [ -n "$line" ] && break
            exited "$p" && break
            sleep 0.05
        done
        nw=$(printf '%s\n' "$line" | sed -n "s/.*: worker id $w -> \([0-9]*\) in [0-9]* ms .*/\1/p")
        took=$(printf '%s\n' "$line" | sed -n 's/.* in \([0-9]*\) ms .*/\1/p')
        check "$row loss $k ($how): the loss of worker $w is logged [$(peek 800 "$T/la.err")]" \
            said "$T/la.err" "worker id $w: the coordinator says the claim is gone; re-claiming"
        check "$row loss $k ($how): re-claimed: worker id $w -> another [$line]" \
            test -n "$nw" -a "$nw" != "$w" -a -n "$took"
        [ -n "$nw" ] || break
        # Ids under the new worker id, then on to the next loss.
        for _ in $(seq 100); do
            snap "$T/la.out"
            [ "$(decode "$T/snap" | sed -n '$p' | cut -d' ' -f3)" = "$nw" ] && break
            sleep 0.05
        done
        sleep 0.2
        snap "$T/la.out"
        decode "$T/snap" >"$T/la.dec"
        first_new=$(awk -v w="$nw" '$3 == w { print $2; exit }' "$T/la.dec")
        last_old=$(awk -v w="$w" '$3 == w { m = $2 } END { print m }' "$T/la.dec")
        check "$row loss $k ($how): mints under worker $nw [$first_new]" is_num "$first_new"
        # The loss was learned took ms before the new generator could mint:
        # at or before first_new - took (+1 for the ms cut). No id under the
        # lost worker id after that.
        d="the last id under $w ($last_old) is from before the loss was learned"
        check "$row loss $k ($how): $d (<= $first_new - $took + 1)" \
            test "${last_old:-99999999999999}" -le $((${first_new:-0} - ${took:-0} + 1))
        note "$row loss $k ($COORD, $how): worker $w -> $nw in $took ms (loss learned to the" \
            "new generator); $((${first_new:-0} - act)) ms from the $how to the first id under $nw"
        w=$nw
        seq="$seq $nw"
    done
    stop "$p" TERM
    check "loss: the holder dies of SIGTERM (status $STOPPED), no error [$(errors "$T/la.err")]" \
        test "$STOPPED" -eq 143 -a -z "$(errors "$T/la.err")"
    trim "$T/la.out"
    cur=$(decode "$T/la.out" | cut -d' ' -f3 | uniq | tr '\n' ' ')
    check "loss: the worker ids in the order printed are $seq, each once (got $cur)" \
        test "$cur" = "$seq "
    ids_ok loss "$T/la.out"
    note "loss ($COORD): $(($(now_ms) - t0)) ms in all"
}
