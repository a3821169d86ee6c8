#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# `idmint audit` on a table export of 100M ids against the shell's answer to
# the same question, `LC_ALL=C sort -n FILE | uniq -d`, measured in the same
# run on the same file:
#
#     bash bench/audit.sh BUILD_DIR
#
# BUILD_DIR must hold the idmint CLI and bench/audit_gen (bench/run.sh builds
# both). In a temporary directory (removed on exit) audit_gen writes N ids
# (IDM_BENCH_AUDIT_IDS, default 100,000,000), one a line: real Snowflake ids
# of the twitter layout minted by 8 workers, in time order as a table export
# gives them, with 5 ids planted as duplicates at known lines (one of them
# three times). Then, one run each:
#   A1  idmint audit --layout twitter --json FILE        (ids only)
#   S1  sort -n FILE | uniq -d, with sort's defaults
#   S2  sort -n -S 2G --parallel=2 FILE | uniq -d
#   A3  A1 with --memory 256M: the keys spill to sorted runs on disk and are
#       merged (the path for inputs larger than memory)
#   A2  idmint audit on the same ids with the recorded time beside each
#       ("ID|2026-01-02 10:00:00.123456+00", as psql -At prints a row),
#       written after the ids-only file is removed, to keep the disk use
#       down
# The faster of S1 and S2 is the peer. Each row gives the seconds, ids/s,
# peak memory (GNU time's maximum resident set size, else VmHWM read from
# /proc while the program runs) and ids/s as a ratio to the peer's; A1's
# target is a ratio of at least 1.0 (PASS or BELOW). Everything runs with
# LC_ALL=C, and TMPDIR is the temporary directory (sort's and the audit's
# spill files go there).
#
# Checks: the duplicate ids and the lines of every copy that each audit
# reports (--json) equal the planted ones, each audit counts N records and
# exits 1 (duplicates found); uniq -d prints exactly the planted ids. A
# failed check prints WRONG; a program that fails or crashes prints FAILED.
# Exit status: 0, or 1 for WRONG or FAILED (a figure BELOW its target never
# fails the run); 2 for bad usage. Without room on the disk for the files
# (about 65 bytes an id) the benchmark is skipped, saying so, with status 0.
# IDM_BENCH_AUDIT_NO_GNU_TIME=1 reads VmHWM even where GNU time is installed
# (to try that path).
set -u
export LC_ALL=C

if [ $# -ne 1 ]; then
    echo "usage: bash bench/audit.sh BUILD_DIR" >&2
    exit 2
fi
build_dir=$1
ids=${IDM_BENCH_AUDIT_IDS:-100000000}
if ! [[ $ids =~ ^[1-9][0-9]{4,11}$ ]]; then
    echo "audit.sh: bad IDM_BENCH_AUDIT_IDS '$ids': must be a whole number, 10000 to 999999999999" >&2
    exit 2
fi
layout=twitter
workers=8
idmint=$build_dir/idmint
gen=$build_dir/bench/audit_gen
for b in "$idmint" "$gen"; do
    if [ ! -x "$b" ]; then
        echo "audit.sh: FAILED: $b was not built (bench/run.sh builds idmint_cli and audit_gen)" >&2
        exit 1
    fi
done

work=$(mktemp -d)
watchers=()
running=() # the programs started in the background, until waited for
# On an interrupt, stop what this script started (GNU time's child too: a
# background job of a script does not get the terminal's SIGINT), then
# remove the files.
cleanup() {
    local p
    for p in ${running[@]+"${running[@]}"} ${watchers[@]+"${watchers[@]}"}; do
        pkill -TERM -P "$p" 2>/dev/null
        kill -TERM "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
export TMPDIR=$work
failed=0

# ---- peak memory: GNU time where it is installed, else VmHWM from /proc
gnu_time=""
if [ -x /usr/bin/time ] && /usr/bin/time --version 2>&1 | grep -q 'GNU'; then
    gnu_time=/usr/bin/time
fi
if [ -n "${IDM_BENCH_AUDIT_NO_GNU_TIME:-}" ]; then
    gnu_time="" # to try the /proc fallback
fi

# watch_hwm PID FILE: the process's VmHWM (KiB), read every 0.1 s until it
# is gone, into FILE. The high-water mark only grows, so the last reading
# misses at most the growth of the last 0.1 s.
watch_hwm() {
    local pid=$1 out=$2 hwm=0 k v rest
    while [ -e "/proc/$pid/status" ]; do
        while read -r k v rest; do
            [ "$k" = "VmHWM:" ] && hwm=$v
        done <"/proc/$pid/status" 2>/dev/null
        sleep 0.1
    done
    echo "$hwm" >"$out"
}

# spawn TAG IN OUT CMD...: start CMD in the background (stdin IN, stdout
# OUT, stderr $work/TAG.err), its peak memory to go to $work/TAG.mem; the
# pid in $spawned.
spawn() {
    local tag=$1 in=$2 out=$3
    shift 3
    if [ -n "$gnu_time" ]; then
        "$gnu_time" -q -f '%M' -o "$work/$tag.mem" "$@" <"$in" >"$out" 2>"$work/$tag.err" &
        spawned=$!
    else
        "$@" <"$in" >"$out" 2>"$work/$tag.err" &
        spawned=$!
        watch_hwm "$spawned" "$work/$tag.mem" &
        watchers+=($!)
    fi
    running+=("$spawned")
}

# finish_watch: after the programs were waited for, wait for the /proc
# watchers (they end with their process).
finish_watch() {
    local w
    running=()
    for w in ${watchers[@]+"${watchers[@]}"}; do
        wait "$w" 2>/dev/null
    done
    watchers=()
}

mem_kib() { # TAG -> KiB (the last number GNU time or the watcher wrote)
    local v
    v=$(grep -E '^[0-9]+$' "$work/$1.mem" 2>/dev/null | tail -n1)
    echo "${v:-0}"
}
human_kib() {
    awk -v k="$1" 'BEGIN { if (k >= 1048576) printf "%.2f GiB", k / 1048576;
        else if (k >= 10240) printf "%.0f MiB", k / 1024;
        else printf "%.1f MiB", k / 1024 }'
}
human_bytes() {
    human_kib "$(($1 / 1024))"
}
elapsed() { # T0 T1 (EPOCHREALTIME) -> seconds
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'
}
why() { # TAG: the program's first line on stderr
    local w
    w=$(grep -m1 -v '^$' "$work/$1.err" 2>/dev/null)
    echo "${w:-no output on stderr}"
}

# ---- the duplicates each tool reports, against the planted ones
# planted.txt: "ID LINE LINE..." per planted id, in numeric order.
expect_pairs() { # -> "ID LINE" per copy, sorted
    awk '{ for (i = 2; i <= NF; i++) print $1, $i }' "$work/planted.txt" | sort -n -k1,1 -k2,2
}
# The audit's JSON is one line; each finding ends its examples with "]"
# (no example holds one), so a finding is '{"kind":"KIND"' up to it.
json_pairs() { # JSON -> "ID LINE" per copy shown in duplicate findings, sorted
    grep -o '{"kind":"duplicate"[^]]*]' "$1" |
        grep -o '"id":"[0-9]*","line":[0-9]*' |
        sed 's/"id":"\([0-9]*\)","line":\([0-9]*\)/\1 \2/' | sort -n -k1,1 -k2,2
}
json_dup_count() { # JSON -> ids seen more than once, over all duplicate findings
    grep -o '{"kind":"duplicate"[^]]*]' "$1" | grep -o '"count":[0-9]*' |
        awk -F: '{ n += $2 } END { print n + 0 }'
}
json_records() {
    grep -o '"records":[0-9]*' "$1" | head -n1 | cut -d: -f2
}

declare -A sec mem status
wrong() {
    echo "WRONG: $*"
    failed=1
}
exit_text() { # STATUS -> "exit status N" or "killed by signal N"
    if [ "$1" -gt 128 ]; then echo "killed by signal $(($1 - 128))"; else echo "exit status $1"; fi
}

# check_audit TAG WHAT RC: the audit's exit status, records and duplicates.
# Returns 1 when anything was wrong (its figures are then not shown).
check_audit() {
    local tag=$1 what=$2 rc=$3 json=$work/$1.json n planted before=$failed
    failed=0
    if [ "$rc" -ne 1 ]; then
        if [ "$rc" -eq 0 ]; then
            wrong "$what: exit status 0 (clean), expected 1 (duplicates)"
        else
            echo "FAILED: $what: $(exit_text "$rc"): $(why "$tag")"
            failed=1
            status[$tag]=FAILED
            return 1
        fi
    fi
    n=$(json_records "$json")
    [ "${n:-}" = "$ids" ] || wrong "$what: ${n:-no} records in its report, expected $ids"
    planted=$(wc -l <"$work/planted.txt")
    n=$(json_dup_count "$json")
    [ "$n" = "$planted" ] || wrong "$what: $n ids seen more than once, expected the $planted planted"
    if ! diff <(expect_pairs) <(json_pairs "$json") >"$work/$tag.diff"; then
        wrong "$what: the duplicate ids and lines differ from the planted ones (< planted, > reported):"
        head -n 20 "$work/$tag.diff"
    fi
    if [ "$failed" -ne 0 ]; then
        status[$tag]=WRONG
        return 1
    fi
    failed=$before
    return 0
}

# ---- one audit: run_audit TAG FILE [OPTION...]; sets secs and rc
run_audit() {
    local tag=$1 file=$2 t0 t1
    shift 2
    t0=$EPOCHREALTIME
    spawn "$tag" /dev/null "$work/$tag.json" "$idmint" audit --layout "$layout" --json "$@" "$file"
    wait "$spawned"
    rc=$?
    t1=$EPOCHREALTIME
    finish_watch
    secs=$(elapsed "$t0" "$t1")
}

# ---- one peer: run_peer TAG SORT_OPTION...; sort and uniq through a FIFO,
# so each is a process of its own (its own peak memory); sets secs and rc
run_peer() {
    local tag=$1 t0 t1 sort_pid uniq_pid src uq
    shift
    rm -f "$work/pipe"
    mkfifo "$work/pipe"
    t0=$EPOCHREALTIME
    spawn "$tag-uniq" "$work/pipe" "$work/$tag.out" uniq -d
    uniq_pid=$spawned
    spawn "$tag-sort" /dev/null "$work/pipe" sort -n "$@" "$work/ids.txt"
    sort_pid=$spawned
    wait "$sort_pid"
    src=$?
    wait "$uniq_pid"
    uq=$?
    t1=$EPOCHREALTIME
    finish_watch
    secs=$(elapsed "$t0" "$t1")
    rc=0
    if [ "$src" -ne 0 ] || [ "$uq" -ne 0 ]; then
        echo "FAILED: sort -n${*:+ $*} FILE | uniq -d: sort $(exit_text "$src") ($(why "$tag-sort")), uniq $(exit_text "$uq")"
        failed=1
        status[$tag]=FAILED
        rc=1
        return
    fi
    if ! diff <(cut -d' ' -f1 "$work/planted.txt") "$work/$tag.out" >"$work/$tag.diff"; then
        wrong "sort -n${*:+ $*} FILE | uniq -d: its output differs from the planted ids (< planted, > printed):"
        head -n 20 "$work/$tag.diff"
        status[$tag]=WRONG
        rc=1
    fi
}

# ---- the disk: the ids file, sort's temporary files and the audit's spill
# files at once (about 20 + 20 + 16 bytes an id), then the file with times
# (about 47 bytes an id) and a spill; 65 bytes an id covers either.
need_kib=$((ids * 65 / 1024))
free_kib=$(df -Pk "$work" | awk 'NR == 2 { print $4 }')
echo
echo "idmint audit against sort -n | uniq -d: $ids ids, layout $layout, $workers workers, 5 planted duplicates"
echo "machine: cpu \"$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')\", $(nproc) cores online, $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${free_kib:-0}" -lt "$need_kib" ]; then
    echo "audit benchmark: skipped: $(human_kib "$free_kib") free in the temporary directory, it needs $(human_kib "$need_kib")"
    exit 0
fi

# ---- the ids
t0=$EPOCHREALTIME
if ! "$gen" --out "$work/ids.txt" --planted "$work/planted.txt" --count "$ids" \
    --layout "$layout" --workers "$workers" >"$work/gen.out" 2>"$work/gen.err"; then
    echo "FAILED: audit_gen: $(why gen)"
    exit 1
fi
t1=$EPOCHREALTIME
start_ms=$(sed -n 's/.*start_ms=\([0-9]*\).*/\1/p' "$work/gen.out")
ids_bytes=$(stat -c %s "$work/ids.txt")
echo "input: $(human_bytes "$ids_bytes") of ids ($(elapsed "$t0" "$t1") s to write), minted over $(awk -v s="$start_ms" -v e="$(sed -n 's/.*end_ms=\([0-9]*\).*/\1/p' "$work/gen.out")" 'BEGIN { printf "%.0f min", (e - s) / 60000 }') ending a minute ago; planted (id: lines):"
awk '{ printf "  %s:", $1; for (i = 2; i <= NF; i++) printf " %s", $i; print "" }' "$work/planted.txt"
if [ -n "$gnu_time" ]; then
    echo "peak memory: GNU time's maximum resident set size"
else
    echo "peak memory: VmHWM in /proc, read every 0.1 s (GNU time is not installed)"
fi
sort_threads=$(nproc)
[ "$sort_threads" -gt 8 ] && sort_threads=8
echo "sort: $(sort --version | head -n1); its defaults here: --parallel=$sort_threads (the cores online, at most 8), a buffer it sizes from the input and the free memory"
if [ "$ids" -le 8388608 ]; then
    echo "note: A3 spills only above 8388608 ids (256 MiB at 32 bytes an id, audit.h); here it sorts in memory"
fi
echo "running A1, S1, S2, A3, then A2 (one run each)..."

run_audit A1 "$work/ids.txt"
check_audit A1 "A1 idmint audit" "$rc" && { sec[A1]=$secs; mem[A1]=$(mem_kib A1); }
run_peer S1
[ "$rc" -eq 0 ] && { sec[S1]=$secs; mem[S1]=$(($(mem_kib S1-sort) + $(mem_kib S1-uniq))); }
run_peer S2 -S 2G --parallel=2
[ "$rc" -eq 0 ] && { sec[S2]=$secs; mem[S2]=$(($(mem_kib S2-sort) + $(mem_kib S2-uniq))); }
run_audit A3 "$work/ids.txt" --memory 256M
check_audit A3 "A3 idmint audit --memory 256M" "$rc" && { sec[A3]=$secs; mem[A3]=$(mem_kib A3); }
rm -f "$work/ids.txt" "$work/pipe"

# The same ids with their recorded times (same start, same lines).
t0=$EPOCHREALTIME
if "$gen" --out "$work/rows.txt" --planted "$work/planted2.txt" --count "$ids" \
    --layout "$layout" --workers "$workers" --times --start "$start_ms" \
    >"$work/gen2.out" 2>"$work/gen2.err"; then
    t1=$EPOCHREALTIME
    rows_bytes=$(stat -c %s "$work/rows.txt")
    if ! cmp -s "$work/planted.txt" "$work/planted2.txt"; then
        wrong "audit_gen --times planted other ids or lines than without --times"
        status[A2]=WRONG
    fi
    echo "input with times: $(human_bytes "$rows_bytes") ($(elapsed "$t0" "$t1") s to write), e.g. $(head -n1 "$work/rows.txt")"
    run_audit A2 "$work/rows.txt"
    check_audit A2 "A2 idmint audit (with times)" "$rc" && { sec[A2]=$secs; mem[A2]=$(mem_kib A2); }
    rm -f "$work/rows.txt"
else
    echo "FAILED: audit_gen --times: $(why gen2)"
    failed=1
fi

# ---- the table
peer=""
for p in S1 S2; do
    [ -n "${sec[$p]:-}" ] || continue
    if [ -z "$peer" ] || awk -v a="${sec[$p]}" -v b="${sec[$peer]}" 'BEGIN { exit !(a < b) }'; then
        peer=$p
    fi
done
rate() { awk -v n="$ids" -v s="$1" 'BEGIN { printf "%.2fM ids/s", n / s / 1e6 }'; }
row() { # ID WHAT SECONDS IDS/S MEMORY RATIO TARGET VERDICT
    printf '%-3s %-46s %-10s %-15s %-10s %-14s %-8s %s\n' "$@"
}
echo
row "#" "what" "seconds" "ids/s" "peak mem" "ratio vs peer" "target" ""
for r in A1 A2 A3 S1 S2; do
    case $r in
        A1) what="idmint audit FILE (ids only)" ;;
        A2) what="idmint audit FILE (id|recorded time)" ;;
        A3) what="idmint audit --memory 256M FILE (spills)" ;;
        S1) what="sort -n FILE | uniq -d (sort's defaults)" ;;
        S2) what="sort -n -S 2G --parallel=2 FILE | uniq -d" ;;
    esac
    if [ -z "${sec[$r]:-}" ]; then
        row "$r" "$what" "-" "-" "-" "-" "" "${status[$r]:-FAILED}"
        continue
    fi
    ratio="-"
    [ -n "$peer" ] && ratio=$(awk -v a="${sec[$r]}" -v b="${sec[$peer]}" 'BEGIN { printf "%.2fx", b / a }')
    [ "$r" = "$peer" ] && ratio="$ratio (peer)"
    target="" verdict=""
    if [ "$r" = A1 ] && [ -n "$peer" ]; then
        target=">= 1.0x"
        verdict=BELOW
        awk -v a="${sec[A1]}" -v b="${sec[$peer]}" 'BEGIN { exit !(b / a >= 1.0) }' && verdict=PASS
    fi
    row "$r" "$what" "${sec[$r]} s" "$(rate "${sec[$r]}")" "$(human_kib "${mem[$r]}")" "$ratio" "$target" "$verdict"
done
echo "files: ids only $(human_bytes "$ids_bytes"), with times $(human_bytes "${rows_bytes:-0}"); peak memory of S1, S2: sort's and uniq's added"
echo "peer: ${peer:-none} (the faster of S1 and S2); ratio = the row's ids/s over the peer's"
if [ "$failed" -eq 0 ]; then
    echo "checks: ok (each audit: $ids records, exit status 1, the 5 planted ids on their $(awk '{ n += NF - 1 } END { print n }' "$work/planted.txt") lines; uniq -d: the 5 planted ids)"
fi
exit "$failed"
