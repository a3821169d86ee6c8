#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ids/s of id functions inside PostgreSQL, as ratios against the PL/pgSQL
# functions people paste into their schemas and against gen_random_uuid():
#
#   bench/pg/functions.sh [--rounds N] [--calls N] [--doc FILE] [--stand-ins]
#
# One throwaway server (scripts/pg-test-server.sh, loopback, stopped and
# removed by a trap) with the idmint extension preloaded (idmint.node =
# 'datacenter=1,worker=1', the default layout twitter). Each function f is
# timed as one statement, SELECT count(f()) FROM generate_series(1, N)
# (N = 1,000,000 calls), run from a PL/pgSQL timer on the server's clock, so
# that no result crosses the wire:
#   idmint_next()                     Snowflake ids, the shared generator
#   idmint_instagram(5, seq)          Instagram's scheme in C
#   idmint_uuidv7(), idmint_ulid()    idmint's 128-bit ids
#   Instagram's PL/pgSQL function     as published in "Sharding & IDs at
#                                     Instagram" (peers.sql)
#   a PL/pgSQL UUIDv7                 RFC 9562's layout (peers.sql)
#   gen_random_uuid()                 PostgreSQL's own UUIDv4
#   count(g) alone                    the statement without an id: the floor
# in rounds (default 5), interleaved, the order rotated each round. Figures
# are medians over the rounds; each ratio is the median of the per-round
# ratios (both sides measured seconds apart). Targets: idmint_next() at
# least 6x Instagram's PL/pgSQL function, idmint_uuidv7() no slower than
# gen_random_uuid(); each prints PASS or MISS.
#
# Before timing, each function's ids are checked (distinct; idmint's in
# increasing order as minted, but for Instagram's scheme, whose sequence
# wraps within a ms; the fields where they should be). A wrong
# id prints WRONG and the run fails: a fast but wrong function is never
# reported as a figure.
#
# With --doc FILE (docs/btree.md), the table, verdicts and notes also
# replace the block of FILE between <!-- functions:begin --> and
# <!-- functions:end -->.
#
# The extension must be installed (make -C pg install), or the script
# refuses; --stand-ins (for developing this script) leaves idmint's
# functions out and times the rest, and takes no --doc.
#
# Exit status: 0 (MISS included: a benchmark reports, it does not fail the
# build); 1 could not run; 2 a check failed; 130 interrupted.
set -uo pipefail
me=functions.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
    echo "usage: $me [--rounds N] [--calls N] [--doc FILE] [--stand-ins]" >&2
    exit 1
}
stand_ins=0
rounds=5
calls=1000000
doc=""
while [ $# -gt 0 ]; do
    case $1 in
    --stand-ins) stand_ins=1 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
    --calls) [ $# -ge 2 ] || usage; calls=$2; shift ;;
    --doc) [ $# -ge 2 ] || usage; doc=$2; shift ;;
    -h | --help) sed -n '3,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$me: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
case $rounds in '' | *[!0-9]* | 0) echo "$me: --rounds '$rounds' is not a count from 1" >&2; exit 1 ;; esac
case $calls in '' | *[!0-9]* | 0) echo "$me: --calls '$calls' is not a count from 1" >&2; exit 1 ;; esac
if [ -n "$doc" ]; then
    [ "$stand_ins" = 0 ] || { echo "$me: --stand-ins never writes a doc: leave out --doc" >&2; exit 1; }
    [ -f "$doc" ] || { echo "$me: --doc '$doc' is not a file" >&2; exit 1; }
    doc=$(cd "$(dirname "$doc")" && pwd)/$(basename "$doc")
fi

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# No JIT (it would compile the count for a few ms, the same for every
# function, and shrink every ratio); work_mem holds generate_series's rows.
pgb_start "jit = off" "work_mem = '64MB'" "max_parallel_workers_per_gather = 0"
pgb_sql -f "$here/peers.sql" || pgb_die "loading peers.sql failed"
pgb_sql <<'EOF' || pgb_die "setting up the timer failed"
CREATE SEQUENCE bench_ig_seq;
CREATE TABLE bench_fn (round int, name text, seconds float8);
-- The seconds a statement takes, on the server's monotonic-enough clock.
CREATE FUNCTION bench_time(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    n bigint;
BEGIN
    t0 := clock_timestamp();
    EXECUTE q INTO n;
    RETURN extract(epoch FROM clock_timestamp() - t0);
END;
$$;
EOF

# name|expression|1 if it is idmint's
fns="idmint_next|idmint_next()|1
idmint_instagram|idmint_instagram(5, 'bench_ig_seq')|1
idmint_uuidv7|idmint_uuidv7()|1
idmint_ulid|idmint_ulid()|1
ig_plpgsql|insta5.next_id()|0
uuidv7_plpgsql|bench_uuidv7_plpgsql()|0
gen_random_uuid|gen_random_uuid()|0
floor|g|0"
if [ "$stand_ins" = 1 ]; then
    echo "$me: --stand-ins: idmint's functions are LEFT OUT (not installed or not wanted);" \
        "only the peers are timed, and the targets cannot be judged"
    fns=$(grep '|0$' <<<"$fns")
fi

# ---- checks: each in one statement of 200,000 calls, in call order
wrong=0
check() { # WHAT SQL: SQL answers 'ok' or what is wrong
    local got
    got=$(pgb_val "$2") || { echo "$me: WRONG: $1: the check failed to run" >&2; wrong=1; return; }
    if [ "$got" != ok ]; then
        echo "$me: WRONG: $1: $got" >&2
        wrong=1
    fi
}
# mint EXPR: the ids of 200,000 calls, with their call order g.
mint() {
    echo "(SELECT g, $1 AS id FROM generate_series(1, 200000) AS g) AS m"
}
order="WINDOW w AS (ORDER BY g)"
if [ "$stand_ins" = 0 ]; then
    check "idmint_next()" "SELECT CASE WHEN count(DISTINCT id) <> count(*) THEN 'repeated ids'
        WHEN bool_or(id <= prev) THEN 'ids not increasing in call order'
        WHEN min(idmint_time(id)) < now() - interval '10 s' OR max(idmint_time(id)) > clock_timestamp() + interval '1 s'
          THEN 'times ' || min(idmint_time(id)) || ' .. ' || max(idmint_time(id)) || ', not now'
        ELSE 'ok' END
        FROM (SELECT id, lag(id) OVER w AS prev FROM $(mint 'idmint_next()') $order) AS s"
    # Not in call order: when nextval % 1024 wraps within a ms, the next id
    # is smaller (Instagram's scheme); unique is what it promises.
    check "idmint_instagram(5, seq)" "SELECT CASE WHEN count(DISTINCT id) <> count(*) THEN 'repeated ids'
        WHEN bool_or((id >> 10) & 8191 <> 5) THEN 'shard bits not 5'
        WHEN abs(max(id >> 23) + 1314220021721 - extract(epoch FROM clock_timestamp()) * 1000) > 10000
          THEN 'ms field not now'
        ELSE 'ok' END
        FROM $(mint "idmint_instagram(5, 'bench_ig_seq')")"
    check "idmint_uuidv7()" "SELECT CASE WHEN count(DISTINCT id) <> count(*) THEN 'repeated ids'
        WHEN bool_or(id <= prev) THEN 'ids not increasing in call order'
        WHEN bool_or(substr(id::text, 15, 1) <> '7') THEN 'version nibble not 7'
        WHEN bool_or(substr(id::text, 20, 1) NOT IN ('8', '9', 'a', 'b')) THEN 'variant bits not 10'
        WHEN abs(extract(epoch FROM max(idmint_uuidv7_time(id)) - clock_timestamp())) > 10 THEN 'ms field not now'
        ELSE 'ok' END
        FROM (SELECT id, lag(id) OVER w AS prev FROM $(mint 'idmint_uuidv7()') $order) AS s"
    check "idmint_ulid()" "SELECT CASE WHEN count(DISTINCT id) <> count(*) THEN 'repeated ids'
        WHEN bool_or(id COLLATE \"C\" <= prev COLLATE \"C\") THEN 'ids not increasing in call order'
        WHEN bool_or(id !~ '^[0-7][0-9A-HJKMNP-TV-Z]{25}\$') THEN 'not 26 characters of Crockford base32'
        ELSE 'ok' END
        FROM (SELECT id, lag(id) OVER w AS prev FROM $(mint 'idmint_ulid()') $order) AS s"
fi
# Our own PL/pgSQL UUIDv7: the layout, and the ms read back from the bytes.
check "PL/pgSQL UUIDv7 (peers.sql)" "SELECT CASE WHEN count(DISTINCT id) <> count(*) THEN 'repeated ids'
    WHEN bool_or(substr(id::text, 15, 1) <> '7') THEN 'version nibble not 7'
    WHEN bool_or(substr(id::text, 20, 1) NOT IN ('8', '9', 'a', 'b')) THEN 'variant bits not 10'
    WHEN abs(max(('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint)
             - extract(epoch FROM clock_timestamp()) * 1000) > 10000 THEN 'ms field not now'
    ELSE 'ok' END FROM $(mint 'bench_uuidv7_plpgsql()')"
check "Instagram's PL/pgSQL function (peers.sql)" "SELECT CASE
    WHEN bool_or((id >> 10) & 8191 <> 5) THEN 'shard bits not 5'
    WHEN abs(max(id >> 23) + 1314220021721 - extract(epoch FROM clock_timestamp()) * 1000) > 10000
      THEN 'ms field not now'
    ELSE 'ok' END FROM $(mint 'insta5.next_id()')"
ig_dups=$(pgb_val "SELECT count(*) - count(DISTINCT id) FROM $(mint 'insta5.next_id()')") || exit 1
[ "$wrong" = 0 ] || exit 2

# ---- timing
n_fns=$(wc -l <<<"$fns")
echo "$me: $rounds rounds of $n_fns statements, SELECT count(f()) FROM generate_series(1, $calls), interleaved"
# A warm-up call of each: plans, function caches, the first pages of the
# sequences.
while IFS='|' read -r name expr _; do
    pgb_val "SELECT count($expr) FROM generate_series(1, 10000) AS g" >/dev/null ||
        pgb_die "the warm-up of $name failed"
done <<<"$fns"
for r in $(seq 1 "$rounds"); do
    # rotate the order by a place each round
    rot=$(((r - 1) % n_fns))
    order_fns=$( (tail -n +$((rot + 1)) <<<"$fns"; [ "$rot" -eq 0 ] || head -n "$rot" <<<"$fns"))
    while IFS='|' read -r name expr _; do
        pgb_sql -c "INSERT INTO bench_fn VALUES ($r, '$name',
            bench_time(\$q\$SELECT count($expr) FROM generate_series(1, $calls) AS g\$q\$))" ||
            pgb_die "timing $name failed"
    done <<<"$order_fns"
done

# ---- the table
layout=""
[ "$stand_ins" = 1 ] || layout=$(pgb_val "SELECT layout FROM idmint_status()")
# The Snowflake layout's ceiling: 2^seq ids a tick.
ceiling=$(awk -v l="$layout" 'BEGIN {
    n = split(l, f, ","); seq = -1; tick = 0
    for (i = 1; i <= n; i++) {
        if (f[i] ~ /^seq:/) { seq = substr(f[i], 5) + 0 }
        if (f[i] ~ /^time:[0-9]+@/) {
            t = f[i]; sub(/^time:[0-9]+@/, "", t)
            if (t ~ /ms$/) tick = (t + 0) / 1000; else if (t ~ /us$/) tick = (t + 0) / 1e6; else tick = t + 0
        }
    }
    if (seq >= 0 && tick > 0) printf "%.0f", 2 ^ seq / tick }')
echo
pgb_sql -A -t -F '|' <<EOF >"$pgb_work/table" || pgb_die "reading the results failed"
WITH r AS (
    SELECT round, name, $calls / seconds AS rate FROM bench_fn
), ratio AS (
    SELECT r.name,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY r.rate / ig.rate) AS vs_ig,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY r.rate / g.rate) AS vs_gru
    FROM r JOIN r AS ig ON ig.round = r.round AND ig.name = 'ig_plpgsql'
           JOIN r AS g ON g.round = r.round AND g.name = 'gen_random_uuid'
    GROUP BY r.name
)
SELECT name, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY rate)), round(min(rate)), round(max(rate)),
       round(vs_ig::numeric, 2), round(vs_gru::numeric, 2)
FROM r JOIN ratio USING (name) GROUP BY name, vs_ig, vs_gru;
EOF

what() {
    case $1 in
    idmint_next) echo "idmint_next()" ;;
    idmint_instagram) echo "idmint_instagram(5, seq)" ;;
    idmint_uuidv7) echo "idmint_uuidv7()" ;;
    idmint_ulid) echo "idmint_ulid()" ;;
    ig_plpgsql) echo "Instagram's PL/pgSQL function" ;;
    uuidv7_plpgsql) echo "PL/pgSQL UUIDv7 (RFC 9562)" ;;
    gen_random_uuid) echo "gen_random_uuid()" ;;
    floor) echo "count(g), no id: the floor" ;;
    esac
}
commas() { sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta' <<<"$1"; }
# Each row: function|ids/s|spread|x IG|x gen_random_uuid, for the terminal
# and the doc alike.
rows=()
while IFS='|' read -r name _ _; do
    IFS='|' read -r _ med lo hi vig vgru < <(grep "^$name|" "$pgb_work/table")
    rows+=("$(what "$name")|$(commas "$med")|$(commas "$lo") - $(commas "$hi")|$vig|$vgru")
done <<<"$fns"

notes=()
if [ -n "$layout" ] && [ -n "$ceiling" ]; then
    med=$(awk -F '|' '$1 == "idmint_next" { print $2 }' "$pgb_work/table")
    notes+=("idmint.layout is $layout: at most $(commas "$ceiling") ids/s (a full tick waits for the next);
idmint_next() ran at $(awk -v a="$med" -v b="$ceiling" 'BEGIN { printf "%.0f", 100 * a / b }')% of that")
fi
if [ "$ig_dups" -gt 0 ]; then
    notes+=("Instagram's PL/pgSQL function repeated $ig_dups ids in 200,000 calls (more than 1,024 in a ms)")
else
    notes+=("Instagram's PL/pgSQL function repeated no id in 200,000 calls (it stayed under 1,024 a ms;
past that it would: it does not wait)")
fi
notes+=("idmint_instagram mints at most 1,024 ids a ms per sequence and shard (1,024,000 ids/s): it waits
rather than repeat")

verdicts=()
verdict() { # NAME COLUMN TARGET TEXT
    local v
    v=$(awk -F '|' -v n="$1" -v c="$2" '$1 == n { print $c }' "$pgb_work/table")
    if awk -v v="$v" -v t="$3" 'BEGIN { exit !(v >= t) }'; then
        verdicts+=("PASS  $4: ${v}x (target >= ${3}x)")
    else
        verdicts+=("MISS  $4: ${v}x (target >= ${3}x)")
    fi
}
if [ "$stand_ins" = 1 ]; then
    verdicts+=("targets: not judged (idmint's functions left out: --stand-ins)")
else
    verdict idmint_next 5 6 "idmint_next() against Instagram's PL/pgSQL function"
    verdict idmint_uuidv7 6 1 "idmint_uuidv7() against gen_random_uuid()"
fi

fmt='%-32s %12s %27s %14s %18s\n'
# shellcheck disable=SC2059 # the format is ours
printf "$fmt" "function" "ids/s" "spread (min - max)" "x PL/pgSQL IG" "x gen_random_uuid"
for row in "${rows[@]}"; do
    IFS='|' read -r -a f <<<"$row"
    # shellcheck disable=SC2059
    printf "$fmt" "${f[@]}"
done
echo
for n in "${notes[@]}"; do
    echo "note: ${n//$'\n'/ }"
done
printf '%s\n' "${verdicts[@]}"

# ---- the doc's block
[ -n "$doc" ] || exit 0
{
    echo "<!-- Written by bench/pg/functions.sh --doc: edits here are overwritten. -->"
    echo
    echo "Run of $(date -u +%Y-%m-%d): PostgreSQL $(pgb_val "SELECT split_part(version(), ' ', 2)")," \
        "idmint $(pgb_val "SELECT extversion FROM pg_extension WHERE extname = 'idmint'"), $(nproc) cores;" \
        "\`SELECT count(f()) FROM generate_series(1, $calls)\`, $rounds rounds interleaved;" \
        "ids/s the median over the rounds, each ratio the median of the rounds' ratios."
    echo
    echo "| function | ids/s | spread (min - max) | against Instagram's PL/pgSQL | against gen_random_uuid() |"
    echo "|---|--:|--:|--:|--:|"
    for row in "${rows[@]}"; do
        IFS='|' read -r -a f <<<"$row"
        echo "| ${f[0]} | ${f[1]} | ${f[2]} | ${f[3]}x | ${f[4]}x |"
    done
    echo
    for v in "${verdicts[@]}"; do
        echo "- ${v/  /: }"
    done
    for n in "${notes[@]}"; do
        echo "- ${n//$'\n'/ }"
    done
} >"$pgb_work/block" || pgb_die "writing the doc's block failed"
awk -v blockfile="$pgb_work/block" '
    $0 == "<!-- functions:begin -->" { print; while ((getline l < blockfile) > 0) print l; skip = 1; found++; next }
    $0 == "<!-- functions:end -->" { skip = 0; found++ }
    !skip { print }
    END { if (found != 2) exit 3 }' "$doc" >"$pgb_work/doc" ||
    pgb_die "$doc has no block between <!-- functions:begin --> and <!-- functions:end --> to rewrite"
cp "$pgb_work/doc" "$doc" || pgb_die "cannot write '$doc'"
echo "$me: wrote the figures into $doc"
