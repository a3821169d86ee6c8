#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The B-tree locality study (docs/btree.md): how the primary key's kind
# decides what inserting costs once its index outgrows shared_buffers.
#
#   bench/pg/btree.sh                       the whole study: docs/btree/*.csv,
#                                           docs/btree/*.svg and the block of
#                                           docs/btree.md between its markers
#   bench/pg/btree.sh --out DIR [--rows N] [--batches B] [--rounds R] [--stand-ins]
#                                           a run of one's own into DIR
#                                           (docs/btree.md is left alone)
#
# The study: a throwaway server (scripts/pg-test-server.sh, loopback,
# stopped and removed by a trap) with shared_buffers = 16MB, far below the
# final primary-key indexes (about 100 to 250 MB at 5M rows). Four tables,
# each (id KEY PRIMARY KEY DEFAULT f(), created timestamptz DEFAULT
# clock_timestamp(), n bigint, payload text), the key in turn
#   snowflake  bigint, idmint_next()
#   uuidv7     uuid, idmint_uuidv7()
#   uuidv4     uuid, gen_random_uuid()
#   ulid       text COLLATE "C", idmint_ulid()
# each filled with N rows (default 5,000,000) in B batches (default 50) of
# INSERT ... SELECT, one table after the other, a CHECKPOINT before each.
# Each batch runs under EXPLAIN (ANALYZE, BUFFERS, WAL): its time, WAL and
# shared buffers hit, read, dirtied and written; after it, the index's size
# and its own pg_statio counters.
#
# The control: the same loads on a new server with shared_buffers = 1GB,
# where every index stays in memory, so that what is the key's own cost and
# what is the cache's can be told apart.
#
# Both run R times (--rounds, default 3), alternating, each on a new
# server, the tables' order turned by one each round; the figures keep
# every round, and the plots and tables take the median. After the last
# round's study load, each table gets an index on created, and a batch's
# worth of rows (a time window from the middle of batch B/2 + 1 to the
# middle of the next, 2% of the table) are found by time: through the
# primary key (idmint_lower_bound for snowflake, bounds built from the ms
# for uuidv7 and ulid) and through the index on created; each scan once
# after a restart (cold shared buffers) and five times more (warm). The
# primary key must find exactly the rows whose ids carry a time in the
# window (read from each id), or the run fails (exit 2) and writes nothing.
#
# The results go to DIR (default docs/btree) as batches.csv, control.csv,
# range.csv and meta.csv, then btree_plot.py draws the SVGs there and, for
# the default DIR, rewrites the block of docs/btree.md between
# <!-- btree:begin --> and <!-- btree:end -->. About 6 minutes on 2 cores.
#
# The idmint extension must be installed (make -C pg install); without it
# the script refuses. --stand-ins (for developing this script only) runs
# SQL stand-ins of its functions (stand-ins.sql) instead and then needs
# --out: stand-in figures never go to docs/.
#
# Exit status: 0 done; 1 could not run; 2 a check failed; 130 interrupted.
set -uo pipefail
me=btree.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
    echo "usage: $me [--out DIR] [--rows N] [--batches B] [--rounds R] [--stand-ins]" >&2
    exit 1
}
stand_ins=0
rows=5000000
batches=50
rounds=3
out=""
while [ $# -gt 0 ]; do
    case $1 in
    --stand-ins) stand_ins=1 ;;
    --rows) [ $# -ge 2 ] || usage; rows=$2; shift ;;
    --batches) [ $# -ge 2 ] || usage; batches=$2; shift ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
    -h | --help) sed -n '3,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$me: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
case $rows in '' | *[!0-9]*) echo "$me: --rows '$rows' is not a number" >&2; exit 1 ;; esac
case $batches in '' | *[!0-9]*) echo "$me: --batches '$batches' is not a number" >&2; exit 1 ;; esac
case $rounds in '' | *[!0-9]* | 0) echo "$me: --rounds '$rounds' is not a count from 1" >&2; exit 1 ;; esac
if [ "$batches" -lt 4 ] || [ $((rows % batches)) -ne 0 ] || [ "$rows" -eq 0 ]; then
    echo "$me: --rows $rows in --batches $batches: need at least 4 batches, and rows a multiple of them" >&2
    exit 1
fi
if [ "$stand_ins" = 1 ] && [ -z "$out" ]; then
    echo "$me: --stand-ins never writes docs/btree: give --out DIR" >&2
    exit 1
fi
doc=""
if [ -z "$out" ]; then
    out=$root/docs/btree
    doc=$root/docs/btree.md
fi
case $out in /*) ;; *) out=$PWD/$out ;; esac
command -v python3 >/dev/null 2>&1 || { echo "$me: python3 is not installed" >&2; exit 1; }

per=$((rows / batches))
keys="snowflake uuidv7 uuidv4 ulid"
control_sb=1GB
started=$(date +%s)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

# start_server SHARED_BUFFERS: a server for the study, its tables made.
# WAL buffers as large as a big server's (by default they follow
# shared_buffers down to 512kB); no autovacuum (it would read the tables and
# indexes in the middle of a batch); no JIT (it compiles nothing here but
# takes time to decide so); work_mem enough for generate_series to stay in
# memory; no parallel plans (one statement at a time is what is measured).
start_server() {
    # A server that writes as production ones do: fsync, and full page
    # writes (a page's first change after a checkpoint logs its image),
    # which is where a random key costs its WAL.
    IDM_PG_DURABLE=1 pgb_start "shared_buffers = '$1'" "wal_buffers = '16MB'" "autovacuum = off" "jit = off" \
        "work_mem = '32MB'" "max_parallel_workers_per_gather = 0"
    if [ "$stand_ins" = 1 ]; then
        echo "$me: STAND-INS: the idmint functions are SQL stand-ins (stand-ins.sql); these figures are not idmint's"
        pgb_sql -f "$here/stand-ins.sql" || pgb_die "loading stand-ins.sql failed"
    fi
    pgb_sql -f "$here/btree.sql" || pgb_die "loading btree.sql failed"
}

# record KEY BATCH: the sizes and the index's counters after a batch. The
# statistics a backend gathers reach the shared counters when it goes idle
# (at most once a second, unless forced), so a forced flush comes first.
record() {
    cat <<EOF
SELECT pg_stat_force_next_flush();
UPDATE bench_batches SET index_bytes = pg_relation_size('bt_$1_pkey'),
    table_bytes = pg_relation_size('bt_$1'),
    idx_blks_read = (SELECT idx_blks_read FROM pg_statio_user_indexes WHERE indexrelname = 'bt_$1_pkey'),
    idx_blks_hit = (SELECT idx_blks_hit FROM pg_statio_user_indexes WHERE indexrelname = 'bt_$1_pkey')
  WHERE key = '$1' AND batch = $2;
EOF
}

# load_script KEY: the psql script that fills bt_KEY batch by batch.
load_script() {
    local b lo
    echo "CHECKPOINT;"
    echo "INSERT INTO bench_batches (key, batch, rows) VALUES ('$1', 0, 0);"
    record "$1" 0
    for b in $(seq 1 "$batches"); do
        lo=$(((b - 1) * per + 1))
        cat <<EOF
INSERT INTO bench_batches (key, batch, rows, started) VALUES ('$1', $b, $((b * per)), clock_timestamp());
UPDATE bench_batches SET plan = bench_explain(\$q\$INSERT INTO bt_$1 (n, payload)
    SELECT g, md5(g::text) FROM generate_series($lo, $((lo + per - 1))) AS g\$q\$)
  WHERE key = '$1' AND batch = $b;
UPDATE bench_batches SET finished = clock_timestamp() WHERE key = '$1' AND batch = $b;
EOF
        record "$1" "$b"
    done
}

# load_all: fill every table.
load_all() {
    local key t
    for key in $keys; do
        t=$(date +%s)
        load_script "$key" | pgb_sql -o /dev/null -f - || pgb_die "loading bt_$key failed"
        echo "$me: bt_$key: $rows rows in $(($(date +%s) - t)) s (shared_buffers $(pgb_val "SHOW shared_buffers"))"
    done
}

# export_batches FILE ROUND: bench_batches as CSV, a row a batch. Buffer
# counts are EXPLAIN's for the whole INSERT (table and index); idx_read and
# idx_hit the primary key's alone (pg_statio_user_indexes, which counts a
# new page as a read).
export_batches() {
    pgb_sql <<EOF || pgb_die "writing $(basename "$1") failed"
CREATE VIEW bench_batches_out AS
SELECT $2 AS round, key, batch, rows, insert_ms, wall_ms, index_bytes, table_bytes, wal_bytes,
       wal_records, wal_fpi, shared_hit, shared_read, shared_dirtied, shared_written, idx_read, idx_hit
FROM (SELECT key, batch, rows,
             round((plan->0->>'Execution Time')::numeric, 1) AS insert_ms,
             round(extract(epoch FROM finished - started)::numeric * 1000, 1) AS wall_ms,
             index_bytes, table_bytes,
             (plan->0->'Plan'->>'WAL Bytes')::bigint AS wal_bytes,
             (plan->0->'Plan'->>'WAL Records')::bigint AS wal_records,
             (plan->0->'Plan'->>'WAL FPI')::bigint AS wal_fpi,
             (plan->0->'Plan'->>'Shared Hit Blocks')::bigint AS shared_hit,
             (plan->0->'Plan'->>'Shared Read Blocks')::bigint AS shared_read,
             (plan->0->'Plan'->>'Shared Dirtied Blocks')::bigint AS shared_dirtied,
             (plan->0->'Plan'->>'Shared Written Blocks')::bigint AS shared_written,
             idx_blks_read - lag(idx_blks_read) OVER w AS idx_read,
             idx_blks_hit - lag(idx_blks_hit) OVER w AS idx_hit
      FROM bench_batches WINDOW w AS (PARTITION BY key ORDER BY batch)) AS s
WHERE batch > 0 ORDER BY $order, batch;
\copy (SELECT * FROM bench_batches_out) TO '$1' CSV HEADER
EOF
}

# bounds KEY: the window's ends, "a|b": the created times of its first row
# and of the row after its last, to the ms. The window runs from the middle
# of one batch to the middle of the next, so that rows were minted in the
# very milliseconds of its ends: a bound a ms off would be seen.
bounds() {
    pgb_val "SELECT (SELECT date_trunc('milliseconds', created) FROM bt_$1 WHERE n = $win_lo) || '|' ||
                    (SELECT date_trunc('milliseconds', created) FROM bt_$1 WHERE n = $((win_lo + per)))"
}

# expect KEY A B: how many rows of bt_KEY carry a time in [A, B) in their
# id, read from the id itself (idmint_time, or the first 48 bits or 10
# characters) among the rows created within 100 ms of the window; what the
# primary key's range must find.
expect() {
    local t
    case $1 in
    snowflake) t="idmint_time(id) >= '$2' AND idmint_time(id) < '$3'" ;;
    uuidv7) t="bench_uuidv7_ms(id) >= bench_ms_ceil('$2') AND bench_uuidv7_ms(id) < bench_ms_ceil('$3')" ;;
    ulid) t="bench_ulid_ms(id) >= bench_ms_ceil('$2') AND bench_ulid_ms(id) < bench_ms_ceil('$3')" ;;
    esac
    pgb_val "SELECT count(*) FROM bt_$1 WHERE created >= timestamptz '$2' - interval '100 ms'
             AND created < timestamptz '$3' + interval '100 ms' AND $t"
}

# range KEY ACCESS QUERY: the scan once after a restart, then 5 times warm.
range() {
    local r
    # A checkpoint first: the restart stops the server in immediate mode,
    # and the start replays the WAL written since the last one.
    pgb_sql -c "CHECKPOINT" || pgb_die "CHECKPOINT failed"
    pgb_restart
    for r in 0 1 2 3 4 5; do
        pgb_sql -c "INSERT INTO bench_range SELECT '$1', '$2', $r, bench_explain(\$q\$$3\$q\$)" ||
            pgb_die "the range scan of bt_$1 through $2 failed"
    done
}

# range_scans: the window's rows found by time, each way, checked, and
# range.csv written.
range_scans() {
    local key ab a b pk sel want got bad=0
    for key in $keys; do
        pgb_sql -c "CREATE INDEX bt_${key}_created ON bt_$key (created)" -c "ANALYZE bt_$key" ||
            pgb_die "indexing bt_$key (created) failed"
    done
    for key in $keys; do
        ab=$(bounds "$key") || exit 1
        a=${ab%|*}
        b=${ab#*|}
        case $key in
        snowflake) pk="id >= idmint_lower_bound('$a') AND id < idmint_lower_bound('$b')" ;;
        uuidv7) pk="id >= bench_uuidv7_bound('$a') AND id < bench_uuidv7_bound('$b')" ;;
        ulid) pk="id >= bench_ulid_bound('$a') AND id < bench_ulid_bound('$b')" ;;
        *) pk="" ;;
        esac
        sel="SELECT count(*), max(payload) FROM bt_$key WHERE"
        if [ -n "$pk" ]; then
            range "$key" pk "$sel $pk"
            want=$(expect "$key" "$a" "$b") || pgb_die "counting bt_$key's ids in the window failed"
            got=$(pgb_val "SELECT plan->0->'Plan'->'Plans'->0->>'Actual Rows' FROM bench_range
                           WHERE key = '$key' AND access = 'pk' AND run = 0")
            if [ "$got" != "$want" ]; then
                echo "$me: WRONG: bt_$key's primary key range [$a, $b) found $got rows;" \
                    "$want ids carry a time in it" >&2
                bad=1
            fi
        fi
        range "$key" created "$sel created >= '$a' AND created < '$b'"
    done
    [ "$bad" = 0 ] || exit 2

    pgb_sql <<EOF || pgb_die "writing range.csv failed"
CREATE VIEW bench_range_out AS
SELECT key, access, i.indexrelname AS index, pg_relation_size(i.indexrelid) AS index_bytes,
       c.found AS rows, c.node, c.touched AS cold_buffers, c.read AS cold_read, c.ms AS cold_ms,
       w.touched AS warm_buffers, w.ms AS warm_ms
FROM (SELECT key, access, plan->0->'Plan'->'Plans'->0->>'Node Type' AS node,
             (plan->0->'Plan'->'Plans'->0->>'Actual Rows')::bigint AS found,
             (plan->0->'Plan'->>'Shared Hit Blocks')::bigint
               + (plan->0->'Plan'->>'Shared Read Blocks')::bigint AS touched,
             (plan->0->'Plan'->>'Shared Read Blocks')::bigint AS read,
             round((plan->0->>'Execution Time')::numeric, 2) AS ms
      FROM bench_range WHERE run = 0) AS c
JOIN (SELECT key, access,
             percentile_disc(0.5) WITHIN GROUP (ORDER BY (plan->0->'Plan'->>'Shared Hit Blocks')::bigint
               + (plan->0->'Plan'->>'Shared Read Blocks')::bigint) AS touched,
             round(percentile_cont(0.5) WITHIN GROUP (ORDER BY (plan->0->>'Execution Time')::float8)::numeric, 2) AS ms
      FROM bench_range WHERE run > 0 GROUP BY key, access) AS w USING (key, access)
JOIN pg_stat_user_indexes AS i
  ON i.relname = 'bt_' || key AND i.indexrelname = 'bt_' || key || CASE access WHEN 'pk' THEN '_pkey' ELSE '_created' END
ORDER BY $order, access DESC;
\copy (SELECT * FROM bench_range_out) TO '$pgb_work/range.csv' CSV HEADER
EOF
}

# write_meta: what the run was, from the study's server.
write_meta() {
    local s
    {
        echo "name,value"
        echo "postgres,\"$(pgb_val "SELECT split_part(version(), ' ', 2)")\""
        echo "keys,snowflake uuidv7 uuidv4 ulid"
        echo "rows,$rows"
        echo "batches,$batches"
        echo "batch_rows,$per"
        echo "rounds,$rounds"
        echo "window_rows,$win_lo-$((win_lo + per - 1))"
        echo "control_shared_buffers,$control_sb"
        for s in shared_buffers wal_buffers work_mem max_wal_size checkpoint_timeout \
            full_page_writes fsync synchronous_commit autovacuum jit; do
            echo "$s,$(pgb_val "SELECT current_setting('$s')")"
        done
        if [ "$stand_ins" = 1 ]; then
            echo "functions,STAND-INS (stand-ins.sql)"
        else
            echo "functions,idmint $(pgb_val "SELECT extversion FROM pg_extension WHERE extname = 'idmint'")"
            echo "layout,\"$(pgb_val "SELECT layout FROM idmint_status()")\""
        fi
        echo "cores,$(nproc 2>/dev/null || echo '?')"
        echo "cpu,\"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)\""
        echo "date,$(date -u +%Y-%m-%d)"
    } >"$pgb_work/meta.csv" || pgb_die "writing meta.csv failed"
}

order="array_position(ARRAY['snowflake', 'uuidv7', 'uuidv4', 'ulid'], key)"
# The window: from the middle of batch B/2 + 1 to the middle of the next.
win_lo=$(((batches / 2) * per + per / 2 + 1))

# ---- the rounds: in each, the study's server (16MB), then the control's,
# each new. The tables go in an order turned by one each round, so that a
# slow spell of the machine does not always fall on the same key. The last
# round also runs the range scans.
for r in $(seq 1 "$rounds"); do
    [ "$r" = 1 ] || keys="${keys#* } ${keys%% *}"
    echo "$me: round $r of $rounds"
    start_server 16MB
    load_all
    export_batches "$pgb_work/batches-$r.csv" "$r"
    if [ "$r" = "$rounds" ]; then
        range_scans
        write_meta
    fi
    pgb_stop
    start_server "$control_sb"
    load_all
    export_batches "$pgb_work/control-$r.csv" "$r"
    pgb_stop
done

# ---- the results: the rounds' CSV files joined, the plots and the doc
for f in batches control; do
    {
        head -n 1 "$pgb_work/$f-1.csv"
        for r in $(seq 1 "$rounds"); do
            tail -n +2 "$pgb_work/$f-$r.csv"
        done
    } >"$pgb_work/$f.csv" || pgb_die "joining $f.csv failed"
done
echo "seconds,$(($(date +%s) - started))" >>"$pgb_work/meta.csv"
mkdir -p "$out" || pgb_die "cannot create '$out'"
cp "$pgb_work/batches.csv" "$pgb_work/control.csv" "$pgb_work/range.csv" "$pgb_work/meta.csv" "$out/" ||
    pgb_die "cannot write to '$out'"
plot_args=("$out")
[ -z "$doc" ] || plot_args+=(--doc "$doc")
python3 "$here/btree_plot.py" "${plot_args[@]}" || pgb_die "btree_plot.py failed"
echo "$me: done in $(($(date +%s) - started)) s: $out${doc:+ and $doc}"
