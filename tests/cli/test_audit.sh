#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tests of `idmint audit` end to end, on files made from `idmint next`
# output: a clean file (exit 0, "clean"; per worker its ids and busiest
# tick), a planted duplicate and a clock
# step (exit 1, the right worker and lines, in text and in --json parsed by
# python3), recorded times in psql's form (id|created_at) and as CSV, an id
# from the future, --plot (an SVG), stdin and "-", and bad input: a
# non-number, a UUID in a file of Snowflake ids, a bad recorded time, an
# unknown layout, a missing file (exit 2, one line "FILE:LINE: what") and
# an empty file (clean); rows recorded out of mint order and --step-ms;
# --memory (2.1M ids spilled to sorted runs on disk, the same report; a
# TMPDIR where no spill file can be made); --postgres/--query misuse;
# the randomness of ULIDs (a counter for a random part, and real ones).
#
# Usage: bash test_audit.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

need python3

export IDMINT_STATE_DIR="$T/state"

# mint WORKER N: N ids of datacenter 1 and WORKER (twitter layout).
mint() { "$BIN" next -n "$2" --node datacenter=1 --node "worker=$1" --no-state; }

# json EXPR FILE: the value of the Python expression EXPR over the JSON
# document d read from FILE.
json() { python3 -c 'import json, sys; d = json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }

# with_rec FILE OFFSET SEP: each twitter id of FILE followed by SEP and its
# own time plus OFFSET ms (a recorded time).
with_rec() {
    python3 -c '
import sys
off, sep = int(sys.argv[2]), sys.argv[3]
for line in open(sys.argv[1]):
    i = int(line)
    print("%d%s%d" % (i, sep, (i >> 22) + 1288834974657 + off))' "$1" "$2" "$3"
}

mint 2 3000 >"$T/a" && mint 3 3000 >"$T/b" && mint 2 3000 >"$T/a2" || {
    bad "idmint next failed"
    finish
}

# A clean file: exit 0, the summary and "clean".
cat "$T/a" "$T/b" >"$T/clean"
run audit "$T/clean"
if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && [ "$(tail -n 1 "$T/out")" = clean ] &&
    grep -qx '6000 ids, 2 workers, 0 findings' "$T/out"; then ok; else bad "clean file: $(show)"; fi

# Per worker, in --json: its ids, time span and busiest tick against the
# sequence's 4096; in the text, the busiest of all.
run audit --json "$T/clean"
pw=$(json '[(w["worker"], w["ids"], w["capacity"], 0 < w["busiest_tick"] <= 3000, w["first_ms"] <= w["busiest_at_ms"] <= w["last_ms"]) for w in d["per_worker"]]' "$T/out" 2>&1)
if [ "$RC" -eq 0 ] && [ "$pw" = "[('datacenter=1 worker=2', 3000, 4096, True, True), ('datacenter=1 worker=3', 3000, 4096, True, True)]" ] &&
    "$BIN" audit "$T/clean" | grep -q '^busiest tick: [0-9]* ids of 4096 \[datacenter=1 worker=[23]\] at 20'; then
    ok
else
    bad "per worker: [$pw] $(show)"
fi

# stdin, and "-" as a file, give the same report.
"$BIN" audit "$T/clean" >"$T/want" 2>/dev/null
"$BIN" audit <"$T/clean" >"$T/got1" 2>/dev/null
check "audit from stdin" cmp -s "$T/want" "$T/got1"
"$BIN" audit - <"$T/clean" >"$T/got2" 2>/dev/null
check "audit -" cmp -s "$T/want" "$T/got2"

# A planted duplicate: line 100 again at the end (line 6001).
{ cat "$T/clean"; sed -n 100p "$T/a"; } >"$T/dup"
dupid=$(sed -n 100p "$T/a")
run audit "$T/dup"
if [ "$RC" -eq 1 ] && grep -q '^duplicate \[datacenter=1 worker=2\]' "$T/out" &&
    grep -q "line 100: $dupid " "$T/out" && grep -q "line 6001: $dupid " "$T/out" &&
    ! grep -qx clean "$T/out"; then ok; else bad "duplicate: $(show)"; fi
run audit --json "$T/dup"
if [ "$RC" -eq 1 ] &&
    [ "$(json '[(f["kind"], f["worker"], f["size"], f["count"], [e["line"] for e in f["examples"]]) for f in d["findings"] if f["kind"] == "duplicate"]' "$T/out")" = \
      "[('duplicate', 'datacenter=1 worker=2', 2, 1, [100, 6001])]" ] &&
    [ "$(json 'd["records"], d["workers"], d["clean"]' "$T/out")" = "(6001, 2, False)" ]; then
    ok
else
    bad "duplicate --json: $(show)"
fi

# A clock step: worker 2's later ids before its earlier ones.
cat "$T/a2" "$T/a" >"$T/step"
run audit --json "$T/step"
step=$(json '[(f["worker"], f["size"] > 0, [e["line"] for e in f["examples"]][1]) for f in d["findings"] if f["kind"] == "clock-step"]' "$T/out" 2>&1)
if [ "$RC" -eq 1 ] && [ "$step" = "[('datacenter=1 worker=2', True, 3001)]" ]; then
    ok
else
    bad "clock step --json: [$step] $(show)"
fi
run audit "$T/step"
if [ "$RC" -eq 1 ] && grep -q '^clock-step \[datacenter=1 worker=2\] at ' "$T/out"; then
    ok
else
    bad "clock step: $(show)"
fi

# Recorded times as psql -At gives them (id|created_at, ISO with +00), and
# as CSV with a header: clean, and the plot is an SVG.
python3 -c '
import sys, datetime
for line in open(sys.argv[1]):
    i = int(line)
    ms = (i >> 22) + 1288834974657 + 3
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    print("%d|%s+00" % (i, t.strftime("%Y-%m-%d %H:%M:%S.%f")))' "$T/clean" >"$T/psql"
run audit --plot "$T/plot.svg" "$T/psql"
if [ "$RC" -eq 0 ] && [ "$(tail -n 1 "$T/out")" = clean ] && [ -s "$T/plot.svg" ] &&
    head -c 5 "$T/plot.svg" | grep -q '^<?xml' && grep -q '<svg' "$T/plot.svg" &&
    grep -q '<polyline' "$T/plot.svg"; then
    ok
else
    bad "psql form and --plot: $(show)"
fi
{ echo "id,created_at"; with_rec "$T/clean" 2 ,; } >"$T/csv"
run audit "$T/csv"
if [ "$RC" -eq 0 ] && grep -qx '6000 ids, 2 workers, 0 findings' "$T/out"; then ok; else bad "csv: $(show)"; fi

# Ids 2 min ahead of their rows: from the future (not an exit-1 finding);
# with --future-ms 200000, nothing.
with_rec "$T/b" -120000 ' ' >"$T/future"
run audit --json "$T/future"
fut=$(json '[(f["worker"], f["size"], f["count"]) for f in d["findings"] if f["kind"] == "future"]' "$T/out" 2>&1)
if [ "$RC" -eq 0 ] && [ "$fut" = "[('datacenter=1 worker=3', 120000, 3000)]" ]; then
    ok
else
    bad "future: [$fut] $(show)"
fi
run audit --future-ms 200000 "$T/future"
if [ "$RC" -eq 0 ] && ! grep -q '^future' "$T/out"; then ok; else bad "--future-ms: $(show)"; fi

# The same with 5 s instead: a skew of the whole file (exit 0).
with_rec "$T/b" -5000 '	' >"$T/skew"
run audit "$T/skew"
if [ "$RC" -eq 0 ] && grep -q '^skew \[datacenter=1 worker=3\] at .*by 5000 ms' "$T/out"; then
    ok
else
    bad "skew: $(show)"
fi

# Bad input: exit 2, no report, one line naming the file and line.
{ head -n 2 "$T/a"; echo xyz; } >"$T/nonnum"
usage_exact "idmint: audit: $T/nonnum:3: bad id 'xyz': not a decimal or 0x hex 64-bit number" \
    audit "$T/nonnum"
{ head -n 1 "$T/a"; echo 019b7517-6000-7000-8000-000000000001; } >"$T/mixed"
usage_exact "idmint: audit: $T/mixed:2: '019b7517-6000-7000-8000-000000000001' looks like a UUID, in a file of Snowflake ids" \
    audit "$T/mixed"
{ head -n 1 "$T/a"; echo "$(sed -n 2p "$T/a"),yesterday"; } >"$T/badrec"
usage_exact "idmint: audit: $T/badrec:2: bad recorded time 'yesterday': use ISO 8601 or Unix ms" \
    audit "$T/badrec"
usage_exact "idmint: audit: stdin:3: bad id 'xyz': not a decimal or 0x hex 64-bit number" \
    audit <"$T/nonnum"
# 2^64-1 is an id (one that does not fit the layout); 2^64 is not.
echo 18446744073709551616 >"$T/over"
usage_exact "idmint: audit: $T/over:1: bad id '18446744073709551616': not a decimal or 0x hex 64-bit number" \
    audit "$T/over"
echo 18446744073709551615 >"$T/max"
run audit --json "$T/max"
if [ "$RC" -eq 0 ] && [ "$(json '[f["kind"] for f in d["findings"]]' "$T/out")" = "['before-epoch', 'workers']" ]; then
    ok
else
    bad "2^64-1: $(show)"
fi
usage_prefix "idmint: audit: unknown layout 'nosuch'" audit --layout nosuch "$T/a"
usage_exact "idmint: audit: $T/nope: cannot open: No such file or directory" audit "$T/nope"
usage_prefix "idmint: audit: bad --kind 'zz'" audit --kind zz "$T/a"
# A bad line in the second file: no report for the first.
usage_prefix "idmint: audit: $T/nonnum:3: " audit "$T/a" "$T/nonnum"

# Two files: the report numbers the lines across both (line 1 of the
# second, a copy of line 1 of the first, is line 6001).
first=$(head -n 1 "$T/a")
run audit "$T/clean" "$T/a"
if [ "$RC" -eq 1 ] && grep -q "line 1: $first " "$T/out" && grep -q "line 6001: $first " "$T/out"; then
    ok
else
    bad "two files: $(show)"
fi

# An empty file: nothing to say.
: >"$T/empty"
expect_out $'0 ids, 0 workers, 0 findings\nclean' audit "$T/empty"

# ULIDs: a duplicate found among 128-bit ids.
"$BIN" ulid -n 50 >"$T/ulids" 2>/dev/null && sed -n 7p "$T/ulids" >>"$T/ulids"
run audit --json "$T/ulids"
if [ "$RC" -eq 1 ] &&
    [ "$(json '[(f["kind"], f["count"], [e["line"] for e in f["examples"]]) for f in d["findings"]]' "$T/out")" = \
      "[('duplicate', 1, [7, 51])]" ]; then
    ok
else
    bad "ulid duplicate: $(show)"
fi

# The same id spelled two ways (decimal, and 0x hex) is one id twice
# (a duplicate's lines show the id in decimal).
hexid=$(printf '0x%X' "$(sed -n 5p "$T/a")")
{ cat "$T/a"; echo "$hexid"; } >"$T/spelled"
run audit "$T/spelled"
if [ "$RC" -eq 1 ] && grep -q "line 5: $(sed -n 5p "$T/a") " "$T/out" &&
    grep -q "line 3001: $(sed -n 5p "$T/a") " "$T/out"; then
    ok
else
    bad "decimal and hex of one id: $(show)"
fi

# Rows recorded out of mint order (racing inserts): worker 4's id of ms
# T+3 recorded before its id of ms T, both at T+3. Trusted as mint order,
# a clock step of 3 ms (exit 1); --step-ms 5 says the order may be off by
# 5 ms: clean; --step-ms 2 does not cover it.
python3 -c '
E = 1288834974657
T = 1767225600000
ids = [((T + m - E) << 22) | (1 << 17) | (4 << 12) for m in range(0, 400, 2)]
out = []
for k in range(0, len(ids) - 1, 2):
    out.append((ids[k + 1], T + 2 * k + 3))
    out.append((ids[k], T + 2 * k + 3))
for i, r in out:
    print("%d,%d" % (i, r))' >"$T/racing"
run audit --json "$T/racing"
if [ "$RC" -eq 1 ] && [ "$(json '[f["size"] for f in d["findings"] if f["kind"] == "clock-step"][:1]' "$T/out")" = "[2]" ]; then
    ok
else
    bad "racing rows, no --step-ms: $(show)"
fi
run audit --step-ms 5 "$T/racing"
if [ "$RC" -eq 0 ] && [ "$(tail -n 1 "$T/out")" = clean ]; then ok; else bad "--step-ms 5: $(show)"; fi
run audit --step-ms 1 "$T/racing"
if [ "$RC" -eq 1 ] && grep -q '^clock-step \[datacenter=1 worker=4\]' "$T/out"; then
    ok
else
    bad "--step-ms 1: $(show)"
fi
usage_prefix "idmint: audit: bad --step-ms '-1'" audit --step-ms -1 "$T/a"

# --memory: the duplicate check's keys spill to sorted runs on disk past
# it. 2.1M ids with --memory 64M (2M ids held) and a duplicate at the end:
# the same report as in memory; with TMPDIR where no file can be made,
# exit 1 and why.
mint 5 2100000 >"$T/big" && sed -n 17p "$T/big" >>"$T/big"
"$BIN" audit "$T/big" >"$T/big.want" 2>&1
run audit --memory 64M "$T/big"
if [ "$RC" -eq 1 ] && cmp -s "$T/out" "$T/big.want" &&
    grep -q "line 2100001: $(sed -n 17p "$T/big") " "$T/out"; then
    ok
else
    bad "--memory 64M (spilled): $(show)"
fi
TMPDIR=$T/no/such/dir run audit --memory 64M "$T/big"
if [ "$RC" -eq 1 ] && grep -q "cannot make a spill file in $T/no/such/dir" "$T/err" &&
    [ ! -s "$T/out" ]; then
    ok
else
    bad "spill to a missing TMPDIR: $(show)"
fi
rm -f "$T/big"
usage_exact "idmint: audit: bad --memory '1M': must be at least 64M" audit --memory 1M "$T/a"
usage_exact "idmint: audit: bad --memory '2X': must be a size in bytes, or with K, M, G or T" \
    audit --memory 2X "$T/a"
usage_exact "idmint: audit: bad --memory '': must be a size in bytes, or with K, M, G or T" \
    audit --memory '' "$T/a"

# --postgres and --query go together, and not with files.
usage_exact "idmint: audit: --postgres needs --query" audit --postgres postgres://h/db
usage_exact "idmint: audit: --query needs --postgres" audit --query 'SELECT 1'
usage_exact "idmint: audit: '$T/a': give either files or --postgres, not both" \
    audit --postgres postgres://h/db --query 'SELECT 1' "$T/a"

# ULIDs whose random part is a counter of its last byte, one a millisecond:
# 72 of 80 random bits never change (a finding, not exit 1); real ULIDs
# over as many milliseconds, none.
python3 -c '
A = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
T = 1767225600000
for i in range(200):
    v = (T + i) << 80 | (i & 0xff)
    print("".join(A[(v >> (5 * (25 - k))) & 31] for k in range(26)))' >"$T/badrand"
run audit --json "$T/badrand"
if [ "$RC" -eq 0 ] &&
    [ "$(json '[(f["kind"], f["size"], f["limit"], f["count"]) for f in d["findings"]]' "$T/out")" = \
      "[('randomness', 72, 80, 200)]" ]; then
    ok
else
    bad "randomness: $(show)"
fi
for i in $(seq 1 70); do "$BIN" ulid; sleep 0.002; done >"$T/goodrand" 2>/dev/null
run audit "$T/goodrand"
if [ "$RC" -eq 0 ] && [ "$(tail -n 1 "$T/out")" = clean ]; then ok; else bad "real ULIDs: $(show)"; fi

finish
