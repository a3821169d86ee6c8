#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmint's UUIDs in PostgreSQL's uuid type: a second implementation of the
# text form and of the byte order that nobody here wrote, and the database
# most users will store these ids in.
#
# A throwaway server (scripts/pg-test-server.sh, loopback only, in a temp
# dir, stopped and removed by a trap) takes 10,000 uuid7 and 10,000 uuid4
# from the CLI through COPY into a uuid column. Checked in SQL:
#   - row counts; uuid_in accepted every id and uuid_out gives back exactly
#     the text idmint printed; all distinct; version nibble and variant bits.
#   - ORDER BY id on the uuid7 rows is exactly the mint order (PostgreSQL
#     compares uuids bytewise, so v7 must sort by time), by sort and by a
#     b-tree index scan; on the uuid4 rows it is the C-locale text order.
#   - The 48-bit ms read from the bytes in SQL (PostgreSQL 15 has no
#     uuid_extract_timestamp) lie near the time of minting, never decrease
#     in mint order, and equal idmint decode's unix_ms for every id (the
#     decode JSON is read by PostgreSQL's jsonb).
#   - The other way: gen_random_uuid() values decode in idmint as version 4.
#   - Malformed text: for each case, whether uuid_in accepts it and whether
#     idmint decode --kind uuid accepts it, both against what is documented
#     here. They differ on purpose: PostgreSQL also takes braces, no dashes
#     or a dash after any group of four digits; idmint takes only the 8-4-4-4-12
#     form. Cases where they differ print a "difference:" line.
#
# Usage: bash test_postgres_uuid.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -uo pipefail

BIN=${1:-}
PASS=0
FAIL=0

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "test_postgres_uuid.sh: no idmint binary given or not executable: '$BIN'" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PGS="$HERE/../../scripts/pg-test-server.sh"
export LC_ALL=C
N=10000
SLACK_MS=5000

# The client must talk to our server only, whatever the environment says.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
    PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGTZ PGCLIENTENCODING
export PGCONNECT_TIMEOUT=10

T=$(mktemp -d) || { echo "0 passed, 1 failed"; exit 1; }
# The server's own dir is apart from T: as root it is handed to the postgres
# user, who must be able to reach it.
PGDIR=$(mktemp -d) || { rm -rf "$T"; echo "0 passed, 1 failed"; exit 1; }
cleanup() {
    bash "$PGS" stop "$PGDIR"
    rm -rf "$PGDIR" "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ok() { PASS=$((PASS + 1)); }
bad() {
    FAIL=$((FAIL + 1))
    printf 'FAIL: %s\n' "$*" >&2
}
finish() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ] && [ "$PASS" -gt 0 ]
    exit
}
now_ms() { date +%s%3N; }

# eq DESC WANT GOT: one check that GOT equals WANT.
eq() {
    if [ "$2" = "$3" ]; then ok; else bad "$1: want [$2], got [$3]"; fi
}

if ! command -v psql >/dev/null 2>&1; then
    bad "psql is missing (install postgresql-client or postgresql)"
    finish
fi
if ! PORT=$(bash "$PGS" start "$PGDIR"); then
    bad "could not start a throwaway PostgreSQL server"
    finish
fi
ok

sql() { # sql ARGS...: psql against the throwaway server, stop on error
    timeout 120 psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" \
        -U postgres -d postgres "$@"
}
# q QUERY: its result (unaligned, tuples only), or "ERROR" if it failed.
q() {
    local out
    if out=$(sql -c "$1" 2>"$T/sql.err"); then
        printf '%s' "$out"
    else
        printf 'ERROR: %s' "$(head -c 300 "$T/sql.err")"
    fi
}
echo "server: $(q 'SELECT version()')"

# ---- mint and load ----
t0=$(now_ms)
"$BIN" uuid7 -n "$N" >"$T/v7.txt" 2>"$T/v7.err"
rc7=$?
"$BIN" uuid4 -n "$N" >"$T/v4.txt" 2>"$T/v4.err"
rc4=$?
t1=$(now_ms)
eq "idmint uuid7 -n $N: exit status and line count" "0 $N" "$rc7 $(wc -l <"$T/v7.txt")"
eq "idmint uuid4 -n $N: exit status and line count" "0 $N" "$rc4 $(wc -l <"$T/v4.txt")"

# kind, mint order, the text as given, and the same text again for the uuid
# column, so that uuid_in parses exactly what idmint printed.
awk -F '\t' '{ printf "7\t%d\t%s\t%s\n", NR, $0, $0 }' "$T/v7.txt" >"$T/load.tsv"
awk -F '\t' '{ printf "4\t%d\t%s\t%s\n", NR, $0, $0 }' "$T/v4.txt" >>"$T/load.tsv"

if sql >"$T/load.out" 2>&1 <<EOF
CREATE TABLE ids (kind int NOT NULL, ord int NOT NULL, txt text NOT NULL, id uuid NOT NULL);
\copy ids FROM '$T/load.tsv'
EOF
then
    ok
else
    bad "COPY into a uuid column failed: $(head -c 500 "$T/load.out")"
fi

eq "rows loaded (uuid7, uuid4)" "$N|$N" "$(q "SELECT count(*) FILTER (WHERE kind = 7), count(*) FILTER (WHERE kind = 4) FROM ids")"
eq "distinct uuids" "$((2 * N))" "$(q 'SELECT count(DISTINCT id) FROM ids')"
eq "uuid text output differs from idmint's text (rows)" "0|$((2 * N))" \
    "$(q 'SELECT count(*) FILTER (WHERE id::text <> txt), count(*) FROM ids')"
eq "version nibble (uuid_out's 15th character) differs from the kind (rows)" "0|$((2 * N))" \
    "$(q 'SELECT count(*) FILTER (WHERE substr(id::text, 15, 1) <> kind::text), count(*) FROM ids')"
eq "variant not 10 (rows)" "0|$((2 * N))" \
    "$(q "SELECT count(*) FILTER (WHERE substr(id::text, 20, 1) NOT IN ('8', '9', 'a', 'b')), count(*) FROM ids")"

# ---- order ----
q "SELECT txt FROM ids WHERE kind = 7 ORDER BY id" >"$T/pg7.txt"
echo >>"$T/pg7.txt"
if [ -s "$T/v7.txt" ] && cmp -s "$T/v7.txt" "$T/pg7.txt"; then
    ok
else
    bad "uuid7: ORDER BY id is not the mint order (first difference: $(cmp "$T/v7.txt" "$T/pg7.txt" 2>&1 | head -n 1))"
fi
eq "uuid7: rows whose ORDER BY id rank is not their mint rank" "0|$N" \
    "$(q 'SELECT count(*) FILTER (WHERE ord <> rn), count(*) FROM (SELECT ord, row_number() OVER (ORDER BY id) AS rn FROM ids WHERE kind = 7) s')"
# The same through a b-tree index, whose comparisons are uuid_cmp's too.
if sql >"$T/pgidx.txt" 2>"$T/pgidx.err" <<'EOF'
CREATE INDEX ids_id ON ids (id);
ANALYZE ids;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_sort = off;
SELECT txt FROM ids WHERE kind = 7 ORDER BY id;
EOF
then
    if [ -s "$T/v7.txt" ] && cmp -s "$T/v7.txt" "$T/pgidx.txt"; then ok; else bad "uuid7: an index scan ORDER BY id is not the mint order"; fi
else
    bad "index scan query failed: $(head -c 300 "$T/pgidx.err")"
fi
# uuid4 has no order of its own: bytewise order is the C-locale order of the
# lower-case text.
sort "$T/v4.txt" >"$T/v4.sorted"
q "SELECT txt FROM ids WHERE kind = 4 ORDER BY id" >"$T/pg4.txt"
echo >>"$T/pg4.txt"
if [ -s "$T/v4.txt" ] && cmp -s "$T/v4.sorted" "$T/pg4.txt"; then
    ok
else
    bad "uuid4: ORDER BY id is not the bytewise (C-locale text) order"
fi

# ---- time, from the bytes ----
MS="('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint"
eq "uuid7: ms from the bytes outside [mint start - ${SLACK_MS}, mint end + ${SLACK_MS}] (rows)" "0|$N" \
    "$(q "SELECT count(*) FILTER (WHERE $MS NOT BETWEEN $t0 - $SLACK_MS AND $t1 + $SLACK_MS), count(*) FROM ids WHERE kind = 7")"
eq "uuid7: ms decreasing in mint order (rows)" "0|$N" \
    "$(q "SELECT count(*) FILTER (WHERE ms < prev), count(*) FROM (SELECT $MS AS ms, lag($MS) OVER (ORDER BY ord) AS prev FROM ids WHERE kind = 7) s")"

# idmint decode's JSON for every uuid7, read by PostgreSQL's jsonb.
: >"$T/dec7.json"
drc=0
split -l 1000 "$T/v7.txt" "$T/chunk7."
for f in "$T"/chunk7.*; do
    [ -s "$f" ] || continue
    mapfile -t ids <"$f"
    "$BIN" decode --json "${ids[@]}" >>"$T/dec7.json" 2>>"$T/dec7.err" || drc=$?
done
eq "idmint decode --json of every uuid7: exit status and lines" "0 $N" "$drc $(wc -l <"$T/dec7.json")"
if sql >"$T/dec.out" 2>&1 <<EOF
CREATE TABLE dec (j jsonb NOT NULL);
\copy dec FROM '$T/dec7.json'
EOF
then
    ok
else
    bad "loading idmint decode's JSON into jsonb failed: $(head -c 300 "$T/dec.out")"
fi
eq "uuid7: idmint decode's unix_ms <> ms from the bytes in SQL, or version <> 7 (rows; joined rows)" "0|$N" \
    "$(q "SELECT count(*) FILTER (WHERE (d.j->>'unix_ms')::bigint IS DISTINCT FROM $MS OR d.j->>'version' IS DISTINCT FROM '7'), count(*) FROM dec d JOIN ids i ON i.id = (d.j->>'id')::uuid AND i.kind = 7")"

# ---- the other way: PostgreSQL's own version 4 UUIDs ----
q "CREATE TABLE pg4 AS SELECT gen_random_uuid() AS id FROM generate_series(1, 1000); SELECT id FROM pg4" >"$T/pg-v4.txt"
echo >>"$T/pg-v4.txt"
mapfile -t pgv4 <"$T/pg-v4.txt"
if [ ${#pgv4[@]} -eq 1000 ] && "$BIN" decode --json "${pgv4[@]}" >"$T/pg-v4.json" 2>"$T/pg-v4.err" &&
    sql >"$T/dec4.out" 2>&1 <<EOF
CREATE TABLE dec4 (j jsonb NOT NULL);
\copy dec4 FROM '$T/pg-v4.json'
EOF
then
    eq "gen_random_uuid(): idmint decode gives kind uuid, version 4, variant rfc9562, no time (rows; joined rows)" "1000|1000" \
        "$(q "SELECT count(*) FILTER (WHERE j->>'kind' = 'uuid' AND j->>'version' = '4' AND j->>'variant' = 'rfc9562' AND NOT j ? 'unix_ms'), count(*) FROM dec4 d JOIN pg4 p ON p.id = (d.j->>'id')::uuid")"
else
    bad "idmint decode of 1000 gen_random_uuid() values failed: $(head -c 300 "$T/pg-v4.err" "$T/dec4.out" 2>/dev/null)"
fi

# ---- malformed text: PostgreSQL's uuid_in against idmint's parser ----
# Each case: TEXT|PG|IDMINT|NOTE, PG and IDMINT being A (accepts) or R
# (rejects). No case holds a single quote (they go into SQL literals) or a |.
G=017f22e2-79b0-7cc3-98c4-dc0c0c07398f
cases=(
    "$G|A|A|canonical lower case"
    "017F22E2-79B0-7CC3-98C4-DC0C0C07398F|A|A|upper case"
    "017f22E2-79b0-7Cc3-98c4-Dc0c0c07398F|A|A|mixed case"
    "017f22e279b0-7cc3-98c4-dc0c0c07398f|A|R|dash at 8 missing"
    "017f22e2-79b07cc3-98c4-dc0c0c07398f|A|R|dash at 13 missing"
    "017f22e2-79b0-7cc3-98c4dc0c0c07398f|A|R|dash at 23 missing"
    "017f22e279b07cc398c4dc0c0c07398f|A|R|no dashes (32 hex digits)"
    "{$G}|A|R|in braces"
    "017f-22e2-79b0-7cc3-98c4-dc0c-0c07-398f|A|R|a dash after every 4 digits"
    "017f22e2-79b0-7cc3-98c4-dc0c0c07-398f|A|R|an extra dash between groups of 4"
    "{$G|R|R|opening brace only"
    "urn:uuid:$G|R|R|urn:uuid: prefix"
    " $G|R|R|leading space"
    "$G |R|R|trailing space"
    "${G%?}|R|R|one digit short"
    "${G}f|R|R|one digit too many"
    "${G%?}g|R|R|non-hex digit"
    "017f22e-279b0-7cc3-98c4-dc0c0c07398f|R|R|dash one place early"
    "017f22e2--79b0-7cc3-98c4-dc0c0c07398f|R|R|double dash"
    "017f22e2_79b0_7cc3_98c4_dc0c0c07398f|R|R|underscores for dashes"
    "-017f22e279b0-7cc3-98c4-dc0c0c07398f|R|R|leading dash"
    "|R|R|empty"
)
{
    echo "CREATE FUNCTION pg_verdict(t text) RETURNS text LANGUAGE plpgsql AS \$\$"
    echo "BEGIN RETURN 'A ' || t::uuid::text;"
    echo "EXCEPTION WHEN invalid_text_representation THEN RETURN 'R ' || SQLSTATE || ' ' || SQLERRM; END \$\$;"
    echo "SELECT n || '|' || pg_verdict(c) FROM (VALUES"
    sep=""
    for i in "${!cases[@]}"; do
        IFS='|' read -r text _ <<<"${cases[$i]}"
        [ "${text#*\'}" = "$text" ] || { echo "test_postgres_uuid.sh: a case holds a quote" >&2; exit 1; }
        printf "%s (%d, '%s')\n" "$sep" "$i" "$text"
        sep=","
    done
    echo ") v(n, c) ORDER BY n;"
} >"$T/cases.sql"
declare -A pgv=()
if sql -f "$T/cases.sql" >"$T/cases.out" 2>"$T/cases.err"; then
    while IFS='|' read -r n verdict; do
        pgv[$n]=$verdict
    done <"$T/cases.out"
else
    bad "malformed-text query failed: $(head -c 300 "$T/cases.err")"
fi
for i in "${!cases[@]}"; do
    IFS='|' read -r text want_pg want_idm note <<<"${cases[$i]}"
    got_pg=${pgv[$i]:-none}
    "$BIN" decode --json --kind uuid -- "$text" >"$T/case.out" 2>"$T/case.err"
    drc=$?
    case $want_pg in
    A) [ "$got_pg" = "A $G" ] ;; # every accepted case spells G
    R) [ "${got_pg#R 22P02 invalid input syntax for type uuid}" != "$got_pg" ] ;;
    *) false ;;
    esac && ok || bad "PostgreSQL on [$text] ($note): want $want_pg, got [$got_pg]"
    case $want_idm in
    A) [ "$drc" -eq 0 ] && [ "$(wc -l <"$T/case.out")" -eq 1 ] && grep -q "\"id\":\"$G\"" "$T/case.out" &&
        grep -q '"version":7[,}]' "$T/case.out" ;;
    R) [ "$drc" -eq 2 ] && [ ! -s "$T/case.out" ] && grep -q "bad UUID" "$T/case.err" ;;
    *) false ;;
    esac && ok || bad "idmint decode --kind uuid on [$text] ($note): want $want_idm, got exit $drc [$(head -c 200 "$T/case.out")] [$(head -c 200 "$T/case.err")]"
    if [ "$want_pg" != "$want_idm" ]; then
        echo "difference: [$text] ($note): PostgreSQL $( [ "$want_pg" = A ] && echo accepts || echo rejects ), idmint $( [ "$want_idm" = A ] && echo accepts || echo rejects )"
    fi
done

finish
