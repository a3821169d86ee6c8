#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of `idmint audit --postgres URL --query SQL` against a
# real PostgreSQL server that this script starts on a free loopback port
# (scripts/pg-test-server.sh) and always stops. The tables hold real ids
# minted by `idmint next` (twitter layout), each row's created_at the id's
# own time plus a few ms, and faults planted in SQL:
#
#   - a clean table: exit 0, "clean", no duplicate; the same with NULL
#     recorded times;
#   - recorded times read right: created_at 5 s after the ids gives a skew
#     of exactly 5000 ms (a time read in the wrong zone would be hours off),
#     and so does that time as timestamp (no time zone) or as Unix ms;
#   - a duplicate row and a clock step (one worker's ids 2 s back in
#     created_at order): exit 1, the duplicate's id and row numbers (as SQL
#     numbers them), a step of about 2000 ms on that worker, in text and in
#     --json (which python3 parses); the report is the one the file audit
#     gives for the same rows as psql -At prints them;
#   - 200000 rows come through the cursor, 10000 a FETCH, in a read-only
#     transaction that is rolled back (the server's statement log, turned
#     on for that session only, shows each statement);
#   - bad input, each exit 2 with one line naming the problem: bad URLs
#     (the password never shown), a syntax error, UPDATE and INSERT, a
#     data-modifying WITH, two statements, a write the read-only
#     transaction refuses, three columns, none, a NULL id, a non-id in
#     column 1 (the row named, row 1 too), a bad recorded time;
#   - nothing listening: exit 1, one line; the connection killed while the
#     query runs: exit 1, one line, the password not in it.
#
# Usage: bash test_audit_pg.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any failed.

set -u

# shellcheck source=lib_lease.sh
source "$(dirname "$0")/lib_lease.sh"
need psql python3
SERVER=$SCRIPTS/pg-test-server.sh
# No message may show the password of the URLs below.
SECRET=s3cretpw
# The twitter layout's epoch, in Unix ms.
TW_MS=1288834974657

START=$(now_ms)

# json EXPR FILE: the value of the Python expression EXPR over the JSON
# document d read from FILE.
json() { python3 -c 'import json, sys; d = json.load(open(sys.argv[2])); print(eval(sys.argv[1]))' "$1" "$2"; }
# mint WORKER N: N ids of datacenter 1 and WORKER.
mint() { "$BIN" next -n "$2" --node datacenter=1 --node "worker=$1" --no-state; }

# ---- bad URLs and no server: nothing to start for these ----

fails_with 2 "not a valid PostgreSQL URL" audit --postgres 'postgres://u:s3cretpw@[::1/db' --query 'SELECT 1'
fails_with 2 "port 'x1' is not 1 to 65535" audit --postgres 'postgresql://u:s3cretpw@h:x1/db' --query 'SELECT 1'
fails_with 2 "not a valid PostgreSQL URL: invalid URI query parameter" \
    audit --postgres 'postgres://u:s3cretpw@h/db?no_such_option=1' --query 'SELECT 1'
fails_with 2 "must start with postgres:// or postgresql://" \
    audit --postgres 'host=h password=s3cretpw' --query 'SELECT 1'
fails_with 1 "cannot connect" audit --postgres 'postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable' --query 'SELECT 1'

# ---- the server and the tables ----

mkdir -p "$T/pg"
chmod 755 "$T" "$T/pg"
start_server PORT pg PostgreSQL
U="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
# The same server with a password in the URL (trust: it is not checked).
UPW="postgres://postgres:s3cretpw@127.0.0.1:$PORT/postgres?sslmode=disable"
psql_c() { psql -X -q -At -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
# load TABLE FILE [OFFSET_MS]: a table (n bigserial, id bigint, created_at
# timestamptz) of the ids in FILE, in order, each recorded OFFSET_MS
# (default 3) after its own time.
load() {
    psql_c "CREATE TABLE $1 (n bigserial, id bigint, created_at timestamptz)" &&
        psql_c "\\copy $1 (id) FROM '$2'" &&
        psql_c "UPDATE $1 SET created_at = to_timestamp(((id >> 22) + $TW_MS + ${3:-3}) / 1000.0)"
}

mint 2 3000 >"$T/w2" && mint 3 3000 >"$T/w3" && mint 4 2000 >"$T/w4" &&
    mint 5 200000 >"$T/w5" || {
    bad "idmint next failed"
    finish
}
cat "$T/w2" "$T/w3" >"$T/clean.ids"
cat "$T/w2" "$T/w3" "$T/w4" >"$T/faulty.ids"
load clean "$T/clean.ids" && load late "$T/w3" 5000 && load faulty "$T/faulty.ids" &&
    load big "$T/w5" || {
    bad "cannot make the tables"
    finish
}
# The faults: row 100 (worker 2) again after the last row; worker 4's
# second half 2 s back in id time, its rows where they were.
DUP=$(sed -n 100p "$T/w2")
psql_c "UPDATE faulty SET id = id - (2000::bigint << 22) WHERE n > 7000" &&
    psql_c "INSERT INTO faulty (id, created_at) SELECT id, (SELECT max(created_at) FROM faulty) + interval '1 ms' FROM faulty WHERE n = 100" || {
    bad "cannot plant the faults"
    finish
}
FQ="SELECT id, created_at FROM faulty ORDER BY created_at, n"
# The duplicate's row numbers, as SQL numbers them in the same order.
DUP_ROWS=$(psql_c "SELECT string_agg(r::text, ',' ORDER BY r) FROM (SELECT id, row_number() OVER (ORDER BY created_at, n) AS r FROM faulty) x WHERE id = $DUP")

# ---- a clean table ----

CQ="SELECT id, created_at FROM clean ORDER BY created_at, n"
run audit --postgres "$U" --query "$CQ"
if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && [ "$(tail -n 1 "$T/out")" = clean ] &&
    grep -qx '6000 ids, 2 workers, 0 findings' "$T/out" && ! grep -q duplicate "$T/out"; then
    ok
else
    bad "clean table: $(show)"
fi
run audit --json --postgres "$U" --query "SELECT id::text, NULL::timestamptz FROM clean ORDER BY n"
if [ "$RC" -eq 0 ] && [ "$(json 'd["records"], d["clean"]' "$T/out" 2>&1)" = "(6000, True)" ]; then
    ok
else
    bad "clean, NULL recorded times: $(show)"
fi

# Recorded times read right: rows recorded 5 s after their ids. Then the
# same rows with the time as timestamp (no time zone) and as Unix ms: the
# same report.
run audit --postgres "$U" --query "SELECT id, created_at FROM late ORDER BY n"
if [ "$RC" -eq 0 ] && grep -q '^skew \[datacenter=1 worker=3\] at .*by -5000 ms' "$T/out"; then
    ok
else
    bad "recorded times (a skew of 5000 ms): $(show)"
fi
cp "$T/out" "$T/late.want"
run audit --postgres "$U" --query "SELECT id, created_at::timestamp FROM late ORDER BY n"
check "recorded times as timestamp without time zone: $(show)" cmp -s "$T/late.want" "$T/out"
run audit --postgres "$U" --query "SELECT id, (extract(epoch FROM created_at) * 1000)::bigint FROM late ORDER BY n"
check "recorded times as Unix ms: $(show)" cmp -s "$T/late.want" "$T/out"

# ---- a duplicate and a clock step ----

run audit --postgres "$U" --query "$FQ"
r1=${DUP_ROWS%,*}
r2=${DUP_ROWS#*,}
if [ "$RC" -eq 1 ] && grep -q '^duplicate \[datacenter=1 worker=2\]' "$T/out" &&
    grep -q "line $r1: $DUP " "$T/out" && grep -q "line $r2: $DUP " "$T/out" &&
    grep -q '^clock-step \[datacenter=1 worker=4\] at ' "$T/out" && ! grep -qx clean "$T/out"; then
    ok
else
    bad "duplicate and clock step (rows $DUP_ROWS): $(show)"
fi
run audit --json --postgres "$U" --query "$FQ"
cp "$T/out" "$T/faulty.json"
check "--json parses: $(python3 -m json.tool "$T/faulty.json" 2>&1 | head -c 200)" \
    python3 -m json.tool "$T/faulty.json" /dev/null
dup=$(json '[(f["worker"], f["size"], f["count"], [(e["id"], e["line"]) for e in f["examples"]]) for f in d["findings"] if f["kind"] == "duplicate"]' "$T/faulty.json" 2>&1)
if [ "$RC" -eq 1 ] && [ "$dup" = "[('datacenter=1 worker=2', 2, 1, [('$DUP', $r1), ('$DUP', $r2)])]" ] &&
    [ "$(json 'd["records"], d["exit_status"]' "$T/faulty.json" 2>&1)" = "(8001, 1)" ]; then
    ok
else
    bad "duplicate --json (rows $DUP_ROWS): [$dup] $(show)"
fi
# (The duplicate, recorded last, is worker 2's id time going back too.)
step=$(json '[(f["worker"], f["size"]) for f in d["findings"] if f["kind"] == "clock-step" and f["worker"] != "datacenter=1 worker=2"]' "$T/faulty.json" 2>&1)
if [ "$RC" -eq 1 ] && [[ $step =~ ^\[\(\'datacenter=1\ worker=4\',\ (199[0-9]|2000)\)\]$ ]]; then
    ok
else
    bad "clock step of about 2000 ms on worker 4 --json: [$step]"
fi

# The file audit of the same rows as psql -At prints them: the same report.
psql -X -At -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c "$FQ" >"$T/faulty.psql"
"$BIN" audit --json "$T/faulty.psql" >"$T/faulty.file.json" 2>&1
check "the file audit of psql -At's rows gives the same --json: $(diff "$T/faulty.file.json" "$T/faulty.json" | head -c 400)" \
    cmp -s "$T/faulty.file.json" "$T/faulty.json"

# ---- 200000 rows through the cursor ----

# The statement log of this session only (a superuser's option).
ULOG="$U&options=-clog_statement%3Dall%20-capplication_name%3Daudit-big"
t0=$(now_ms)
run audit --postgres "$ULOG" --query "SELECT id, created_at FROM big ORDER BY n"
BIG_MS=$(($(now_ms) - t0))
if [ "$RC" -eq 0 ] && grep -qx '200000 ids, 1 workers, 0 findings' "$T/out"; then
    ok
else
    bad "200000 rows: $(show)"
fi
# The statements it ran, in order, as the log shows them (only that
# session logs statements), runs of one counted.
stmts=$(sed -n 's/.*LOG:  \(statement\|execute [^:]*\): //p' "$T/pg/server.log" |
    grep -E 'idmint_audit|READ ONLY|^ROLLBACK' | uniq -c | sed 's/^ *//' | tr '\n' '|')
want="1 SET TimeZone TO 'UTC'; SET DateStyle TO 'ISO, YMD'; BEGIN TRANSACTION READ ONLY|1 DECLARE idmint_audit NO SCROLL CURSOR FOR SELECT id, created_at FROM big ORDER BY n|21 FETCH FORWARD 10000 FROM idmint_audit|1 ROLLBACK|"
check "200000 rows: the statements [$stmts], want [$want]" test "$stmts" = "$want"

# ---- bad input: exit 2, one line ----

fails_with 2 'the server refused it: syntax error at or near "FROM" (at character 12 of the query)' \
    audit --postgres "$UPW" --query 'SELECT id, FROM clean'
fails_with 2 'syntax error at or near "UPDATE" (at character 1 of the query); only a query that returns rows' \
    audit --postgres "$U" --query 'UPDATE clean SET id = 1 RETURNING id'
fails_with 2 'syntax error at or near "INSERT" (at character 1 of the query); only a query that returns rows' \
    audit --postgres "$U" --query 'INSERT INTO clean (id) VALUES (1) RETURNING id'
fails_with 2 'DECLARE CURSOR must not contain data-modifying statements in WITH' \
    audit --postgres "$U" --query 'WITH x AS (DELETE FROM clean RETURNING id) SELECT id FROM x'
fails_with 2 'cannot insert multiple commands into a prepared statement' \
    audit --postgres "$U" --query 'SELECT id FROM clean; DROP TABLE clean'
psql_c "CREATE SEQUENCE s"
fails_with 2 'the server refused it: cannot execute nextval() in a read-only transaction' \
    audit --postgres "$U" --query "SELECT nextval('s')"
check "nothing was written: clean has 6000 rows, s was never used" \
    test "$(psql_c "SELECT count(*) FROM clean WHERE id <> 1")|$(psql_c "SELECT is_called FROM s")" = "6000|f"
fails_with 2 '--query gives 3 columns: it must give 1 (the id) or 2' \
    audit --postgres "$U" --query 'SELECT id, created_at, n FROM clean'
fails_with 2 '--query gives 0 columns' audit --postgres "$U" --query 'SELECT FROM clean'
fails_with 2 'row 3: the id (column 1) is NULL' \
    audit --postgres "$U" --query "SELECT CASE WHEN n = 3 THEN NULL ELSE id END FROM clean ORDER BY n"
fails_with 2 "row 2: bad id 'abc': not a decimal or 0x hex 64-bit number" \
    audit --postgres "$U" --query "SELECT CASE WHEN n = 2 THEN 'abc' ELSE id::text END FROM clean ORDER BY n"
# A first row whose id is a word is not a CSV header.
fails_with 2 "row 1: bad id 'hello': not a decimal or 0x hex 64-bit number" \
    audit --postgres "$U" --query "SELECT 'hello' UNION ALL SELECT id::text FROM clean"
fails_with 2 "row 12001: bad recorded time 'yesterday'" \
    audit --postgres "$U" --query "SELECT id, CASE WHEN n = 12001 THEN 'yesterday' ELSE created_at::text END FROM big ORDER BY n"

# ---- the connection killed while the query runs: exit 1, one line ----

"$BIN" audit --postgres "$UPW&application_name=audit-kill" \
    --query "SELECT id FROM (SELECT id, pg_sleep(30) FROM clean LIMIT 1) x" >"$T/out" 2>"$T/err" &
KP=$!
PIDS+=("$KP")
seen=
for _ in $(seq 100); do
    seen=$(psql_c "SELECT query FROM pg_stat_activity WHERE application_name = 'audit-kill' AND state = 'active'")
    [ -n "$seen" ] && break
    sleep 0.1
done
check "the running query is a FETCH from the cursor [$seen]" test "$seen" = "FETCH FORWARD 10000 FROM idmint_audit"
psql_c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'audit-kill'" >/dev/null
stop "$KP" 0
RC=$STOPPED
if [ "$RC" -eq 1 ] && [ ! -s "$T/out" ] && one_line "$T/err" &&
    grep -qF -- "--postgres postgres://postgres:***@127.0.0.1:$PORT/" "$T/err" &&
    grep -qF "reading the rows after row 0: terminating connection due to administrator command" "$T/err" &&
    ! grep -qF "$SECRET" "$T/err"; then
    ok
else
    bad "connection killed mid-query: want exit 1, one line; $(show)"
fi

bash "$SERVER" stop "$T/pg"
note "200000 rows audited in $BIG_MS ms; total $(($(now_ms) - START)) ms"
finish
