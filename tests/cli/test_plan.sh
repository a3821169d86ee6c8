#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of `idmint plan` and `idmint estimate`: exact outputs on
# hand-computed cases (the years-left figures move with the clock and are
# checked by pattern), verdicts, the suggested layout, JSON that parses, and
# bad usage (exit 2, exactly one stderr line naming the option and value,
# nothing on stdout).
#
# Usage: bash test_plan.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
need python3

# line_is N TEXT: line N of the last run's stdout is exactly TEXT.
line_is() { [ "$(sed -n "$1p" "$T/out")" = "$2" ]; }
# line_matches N REGEX: line N of the last run's stdout matches REGEX (ERE).
line_matches() { sed -n "$1p" "$T/out" | grep -Eqx -- "$2"; }
# ran_ok: the last run exited 0 with nothing on stderr.
ran_ok() { [ "$RC" -eq 0 ] && [ ! -s "$T/err" ]; }
# json_ok: the last run's stdout is one JSON object on one line.
json_ok() { [ "$(wc -l <"$T/out")" -eq 1 ] && python3 -m json.tool "$T/out" >/dev/null 2>&1; }
# json_get EXPR: evaluate a Python expression over the parsed object j.
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($1)" "$T/out"; }

# ================================================================ estimate

# The reference case, twitter (time:41@1ms,datacenter:5,worker:5,seq:12):
#   average 200000 / 400 = 500 ids/s; busiest 5 x 500 = 2500 ids/s = 2.5
#   ids/ms; 2.5 of 4096 per tick = 0.061% (printed 0.06%); worker ids
#   400 / 1024 = 39.06%, during deploys 800 / 1024 = 78.1%; 2^41 ms =
#   2199023255552 ms / 31557600000 ms per year = 69.68 years; 10^11 rows x
#   8 bytes = 8 x 10^11 B = 800 GB per index.
REF="layout: twitter (time:41@1ms,datacenter:5,worker:5,seq:12), tick 1 ms
average process: 500 ids/s (200000 ids/s over 400 processes)
busiest process: 2500 ids/s (skew x5) = 2.5 ids/ms; per 1 ms tick: 2.5 of 4096 (0.06% of the sequence space)
worker ids in use: 400 of 1024 (39.1%); during deploys (x2): 800 (78.1%)
time field lifespan: 69.7 years (2^41 ms), runs out 2080-07-10T17:30:30.209Z
index bytes saved against 128-bit keys: 800 GB per index (100000000000 rows x 8 bytes); 800 GB in all (1 index)"
expect_out "$REF" estimate --rate 200000 --processes 400 --skew 5 --rows 100000000000

# The same with --layout twitter, options in another order and = forms.
expect_out "$REF" estimate --rows=100000000000 --layout twitter --skew=5 --processes 400 --rate=2e5

# instagram (time:41@1ms,shard:13,seq:10): 8192 shards. 1e7 ids/s over
# 8000 processes = 1250, x3 = 3750 ids/s = 3.75 per tick of 1024 = 0.366%;
# 8000 / 8192 = 97.66%; during deploys 16000 / 8192 = 195.3%: a warning.
# 1.5e11 rows x 8 = 1.2e12 B = 1.2 TB per index, 3.6 TB for 3.
# The time field: 2^41 ms from 2011-08-24T21:07:01.721Z.
expect_out "layout: instagram (time:41@1ms,shard:13,seq:10), tick 1 ms
average process: 1250 ids/s (10000000 ids/s over 8000 processes)
busiest process: 3750 ids/s (skew x3) = 3.75 ids/ms; per 1 ms tick: 3.75 of 1024 (0.37% of the sequence space)
worker ids in use: 8000 of 8192 (97.7%); during deploys (x2): 16000 (195.3%)
time field lifespan: 69.7 years (2^41 ms), runs out 2081-04-30T12:54:37.273Z
index bytes saved against 128-bit keys: 1.2 TB per index (150000000000 rows x 8 bytes); 3.6 TB in all (3 indexes)
warning: during deploys 16000 processes hold worker ids, more than the layout's 8192" \
    estimate --layout instagram --rate 1e7 --processes 8000 --skew 3 --rows 150000000000 --indexes 3

# instagram with more processes than shards: the normal-use warning.
run estimate --layout instagram --rate 1000 --processes 9000
check "estimate: more processes than shards warns" \
    eval 'ran_ok && grep -qx "warning: 9000 processes need more worker ids than the layout'"'"'s 8192" "$T/out"'

# sonyflake (time:39@10ms,seq:8,machine:16): 256 ids per 10 ms tick =
# 25,600 ids/s per machine; 65536 machines. 1e6 ids/s over 100 processes =
# 10000, x4 = 40000 ids/s = 40 ids/ms = 400 per 10 ms tick > 256: a warning
# (156.25%). 100 / 65536 = 0.15%; x1.5 = 150 = 0.23%. 2^39 x 10 ms =
# 174.2 years.
expect_out "layout: sonyflake (time:39@10ms,seq:8,machine:16), tick 10 ms
average process: 10000 ids/s (1000000 ids/s over 100 processes)
busiest process: 40000 ids/s (skew x4) = 40 ids/ms; per 10 ms tick: 400 of 256 (156.2% of the sequence space)
worker ids in use: 100 of 65536 (0.15%); during deploys (x1.5): 150 (0.23%)
time field lifespan: 174.2 years (2^39 ticks of 10 ms), runs out 2188-11-16T03:28:58.880Z
warning: the busiest process needs 400 ids per 10 ms tick, more than the sequence's 256: it will wait for the next tick" \
    estimate --layout sonyflake --rate 1e6 --processes 100 --skew 4 --surge 1.5

# sonyflake at exactly its capacity: 25600 ids/s on one process = 256 per
# tick = 100%, no warning.
run estimate --layout sonyflake --rate 25600 --processes 1
check "estimate: sonyflake at 25600 ids/s fills the sequence, no warning" \
    eval 'ran_ok && line_is 3 "busiest process: 25600 ids/s (skew x1) = 25.6 ids/ms; per 10 ms tick: 256 of 256 (100.0% of the sequence space)" && ! grep -q "^warning:" "$T/out"'

# A decimal surge rounds up processes x surge: 10 x 1.1 = 11 (not 12).
run estimate --rate 100 --processes 10 --surge 1.1
check "estimate: surge 1.1 on 10 processes is 11" \
    eval 'ran_ok && line_is 4 "worker ids in use: 10 of 1024 (0.98%); during deploys (x1.1): 11 (1.1%)"'

# No --rows: no index line.
run estimate --rate 100 --processes 10
check "estimate: without --rows no index line" \
    eval 'ran_ok && [ "$(wc -l <"$T/out")" -eq 5 ] && ! grep -q "^index" "$T/out"'

# A text form with its epoch.
run estimate --layout 'time:41@1ms,worker:10,seq:12' --epoch 1288834974657 --rate 200000 --processes 400 --skew 5
check "estimate: a text form with --epoch" \
    eval 'ran_ok && line_is 1 "layout: custom (time:41@1ms,worker:10,seq:12), tick 1 ms" && line_is 5 "time field lifespan: 69.7 years (2^41 ms), runs out 2080-07-10T17:30:30.209Z"'

# Large totals stay in decimal units: 1e18 rows x 8 B = 8 EB, x 1000 = 8 ZB.
run estimate --rate 1 --processes 1 --rows 1000000000000000000 --indexes 1000
check "estimate: 1e18 rows, 1000 indexes" \
    eval 'ran_ok && line_is 6 "index bytes saved against 128-bit keys: 8 EB per index (1000000000000000000 rows x 8 bytes); 8 ZB in all (1000 indexes)"'

# JSON: the reference case.
run estimate --rate 200000 --processes 400 --skew 5 --rows 100000000000 --json
check "estimate --json parses" eval 'ran_ok && json_ok'
check "estimate --json facts" \
    test "$(json_get '[j["worker_ids"], j["worker_ids_in_use"], j["worker_ids_during_deploys"], j["busiest_ids_per_ms"], j["seq_per_tick"], j["lifespan_years"], j["bytes_saved_per_index"], j["bytes_saved_total"], j["warnings"]]')" \
    = "[1024, 400, 800, 2.5, 4096, 69.7, 800000000000, 800000000000, []]"
run estimate --layout sonyflake --rate 1e6 --processes 100 --skew 4 --json
check "estimate --json warnings" \
    eval 'ran_ok && json_ok && [ "$(json_get "len(j[\"warnings\"]), j[\"rows\"]")" = "1 None" ]'

# ---- estimate: bad usage
usage_exact "idmint: estimate: missing --rate IDS_PER_S (the fleet's peak ids per second)" \
    estimate --processes 4
usage_exact "idmint: estimate: missing --processes N (the processes minting ids)" \
    estimate --rate 4
usage_exact "idmint: estimate: bad --rate '0': must be above 0 and at most 1e12" \
    estimate --rate 0 --processes 4
usage_exact "idmint: estimate: bad --rate '2e12': must be above 0 and at most 1e12" \
    estimate --rate 2e12 --processes 4
usage_exact "idmint: estimate: bad --rate '1e999': must be above 0 and at most 1e12" \
    estimate --rate 1e999 --processes 4
for bad in abc 1.5x ' 5' '+5' .5 5. 1e nan inf 0x10 ''; do
    usage_exact "idmint: estimate: bad --rate '$bad': not a decimal number (want e.g. 2.5 or 1e6)" \
        estimate --rate "$bad" --processes 4
done
usage_exact "idmint: estimate: bad --rate '-5': not a decimal number (want e.g. 2.5 or 1e6)" \
    estimate --rate -5 --processes 4
usage_exact "idmint: estimate: bad --processes '0': must be 1 to 10000000" \
    estimate --rate 5 --processes 0
usage_exact "idmint: estimate: bad --processes '10000001': must be 1 to 10000000" \
    estimate --rate 5 --processes 10000001
usage_prefix "idmint: estimate: bad --processes '2.5': " \
    estimate --rate 5 --processes 2.5
usage_exact "idmint: estimate: bad --skew '0.5': must be 1 to 1e6" \
    estimate --rate 5 --processes 4 --skew 0.5
usage_exact "idmint: estimate: bad --skew '1000001': must be 1 to 1e6" \
    estimate --rate 5 --processes 4 --skew 1000001
usage_exact "idmint: estimate: bad --surge '0.9': must be 1 to 100" \
    estimate --rate 5 --processes 4 --surge 0.9
usage_exact "idmint: estimate: bad --surge '101': must be 1 to 100" \
    estimate --rate 5 --processes 4 --surge 101
usage_exact "idmint: estimate: bad --rows '0': must be 1 to 1e18" \
    estimate --rate 5 --processes 4 --rows 0
usage_exact "idmint: estimate: bad --rows '1000000000000000001': must be 1 to 1e18" \
    estimate --rate 5 --processes 4 --rows 1000000000000000001
usage_prefix "idmint: estimate: bad --rows '1e9': " \
    estimate --rate 5 --processes 4 --rows 1e9
usage_exact "idmint: estimate: bad --indexes '0': must be 1 to 1000" \
    estimate --rate 5 --processes 4 --rows 5 --indexes 0
usage_exact "idmint: estimate: bad --indexes '1001': must be 1 to 1000" \
    estimate --rate 5 --processes 4 --rows 5 --indexes 1001
usage_exact "idmint: estimate: --indexes needs --rows N" \
    estimate --rate 5 --processes 4 --indexes 2
usage_exact "idmint: estimate: unexpected argument 'extra'" \
    estimate --rate 5 --processes 4 extra
usage_prefix "idmint: estimate: unknown layout 'nope'" \
    estimate --rate 5 --processes 4 --layout nope
usage_prefix "idmint: estimate: layout 'time:41@1ms,worker:10,seq:12' is a text form and needs --epoch" \
    estimate --rate 5 --processes 4 --layout time:41@1ms,worker:10,seq:12
usage_prefix "idmint: estimate: " estimate --rate 5 --processes 4 --bogus
run estimate --help
check "estimate --help" eval 'ran_ok && line_matches 1 "usage: idmint estimate .*"'

# ==================================================================== plan

# twitter at 2026-01-01 (unix ms 1767225600000): the time field, 2^41 ms
# from 1288834974657, runs out at 3487858230209 = 2080-07-10T17:30:30.209Z.
# 4096 per 1 ms tick = 4,096,000 ids/s per worker; x1024 = 4194304000.
# 2^53: the time field's lowest bit is bit 22, so the first id >= 2^53 has
# time 2^(53-22) = 2^31 = 2147483648 ms (24 d 20:31:23.648) after the
# epoch: 1290982458305 = 2010-11-28T22:14:18.305Z. The example id (worker 1)
# is ((1767225600000 - 1288834974657) << 22) | (1 << 12) =
# 2006515713438650368.
before_s=$(date +%s)
run plan --layout twitter --at 2026-01-01
after_s=$(date +%s)
check "plan twitter: exit 0, no stderr" ran_ok
check "plan twitter: layout line" line_is 1 \
    "layout: twitter (time:41@1ms,datacenter:5,worker:5,seq:12), epoch 1288834974657 (2010-11-04T01:42:54.657Z), tick 1 ms"
check "plan twitter: time runs out" line_matches 2 \
    'time runs out: 2080-07-10T17:30:30\.209Z \(year 2080, [0-9]+\.[0-9] years from now; the field spans 69\.7 years, 2\^41 ms\)'
check "plan twitter: worker ids" line_is 3 \
    "worker ids available: 1024 (datacenter 5 bits + worker 5 bits = 2^10)"
check "plan twitter: ids per worker" line_is 4 \
    "ids per second per worker: 4096000 (4096 per 1 ms tick)"
check "plan twitter: ids per fleet" line_is 5 \
    "ids per second, whole fleet: 4194304000 (x 1024 worker ids available)"
check "plan twitter: 2^53" line_is 6 \
    "ids above 2^53: yes, since 2010-11-28T22:14:18.305Z: JSON consumers must get ids as strings"
check "plan twitter: sign bit" line_is 7 \
    "sign bit: not used: ids stay positive as signed 64-bit integers"
check "plan twitter: example id" line_is 8 \
    "example id: 2006515713438650368 (at 2026-01-01T00:00:00.000Z, datacenter=0 worker=1 seq=0)"
check "plan twitter: decoded" line_is 9 \
    "decoded: 2006515713438650368 time=2026-01-01T00:00:00.000Z unix_ms=1767225600000 datacenter=0 worker=1 seq=0"
check "plan twitter: lifespan verdict" line_matches 10 'lifespan: ok \([0-9]+\.[0-9] years left\)'
check "plan twitter: suggestion keeps its capacity" line_matches 11 \
    'suggested layout: time:41@1ms,worker:10,seq:12 --epoch 1288834974657 \(time runs out 2080-07-10T17:30:30\.209Z, [0-9]+\.[0-9] years from now; lifespan 69\.7 years, 2\^41 ms\)'
check "plan twitter: 11 lines" test "$(wc -l <"$T/out")" -eq 11
# Years left agree with the clock: 2080-07-10 is 54.5 years after 2026-01-01.
# The run read the clock between before_s and after_s, and the figure moves
# by 0.1 every 36.5 days: it is the one at either end of the run.
left_at() { python3 -c "print('%.1f' % ((3487858230209 - $1 * 1000) / 31557600000))"; }
want_left=$(left_at "$before_s")
alt_left=$(left_at $((after_s + 1)))
got_left=$(sed -n '10s/lifespan: ok (\(.*\) years left)/\1/p' "$T/out")
check "plan twitter: years left match the clock ($got_left vs $want_left or $alt_left)" \
    eval '[ "$got_left" = "$want_left" ] || [ "$got_left" = "$alt_left" ]'

# Verdicts and the suggestion for --workers 300 --peak 100000: node bits
# ceil(log2 300) = 9; 100000 ids/s x 1 ms = 100 per tick, ceil(log2 100) =
# 7 seq bits; time 63 - 9 - 7 = 47 bits: 2^47 ms = 4459.7 years, to
# 1288834974657 + 2^47 = 142026323329985 = 6470-08-20T04:28:49.985Z.
run plan --workers 300 --peak 100000 --at 2026-01-01
check "plan: 300 workers, 100000 ids/s: ok" \
    eval 'ran_ok && line_is 6 "ids per second, 300 workers: 1228800000 (x 300)" && line_is 12 "workers: ok (need 300, have 1024)" && line_is 13 "peak: ok (need 100000 ids/s per worker, the sequence gives 4096000)"'
check "plan: suggested layout for 300 workers, 100000 ids/s" line_matches 14 \
    'suggested layout: time:47@1ms,worker:9,seq:7 --epoch 1288834974657 \(time runs out 6470-08-20T04:28:49\.985Z, [0-9]+\.[0-9] years from now; lifespan 4459\.7 years, 2\^47 ms\)'
run plan --layout twitter --workers 2000 --peak 5000000 --at 2026-01-01
check "plan: NOT ENOUGH workers" eval 'ran_ok && line_is 12 "workers: NOT ENOUGH (need 2000, have 1024)"'
check "plan: peak NOT COVERED" eval 'line_is 13 "peak: NOT COVERED (need 5000000 ids/s per worker, the sequence gives 4096000)"'
# 2000 workers: 11 bits; 5000 per tick: 13 bits; time 39 bits.
check "plan: suggestion for 2000 workers, 5e6 ids/s" line_matches 14 \
    'suggested layout: time:39@1ms,worker:11,seq:13 --epoch 1288834974657 \(time runs out 2028-04-05T23:39:48\.545Z, .*'
# Exactly at the limits: 1024 workers and 4096000 ids/s are ok.
run plan --workers 1024 --peak 4096000 --at 2026-01-01
check "plan: exactly 1024 workers and 4096000 ids/s are ok" \
    eval 'ran_ok && line_is 12 "workers: ok (need 1024, have 1024)" && line_is 13 "peak: ok (need 4096000 ids/s per worker, the sequence gives 4096000)"'
# A fractional peak: 0.5 ids/s at 1 ms is under one id per tick: 1 bit.
run plan --workers 1 --peak 0.5 --at 2026-01-01
check "plan: tiny needs still get 1 node bit and 1 seq bit" \
    eval 'ran_ok && line_matches 14 "suggested layout: time:61@1ms,worker:1,seq:1 --epoch 1288834974657 \(time runs out after year 9999, .*"'

# instagram (time:41@1ms,shard:13,seq:10, 64 bits): the sign bit turns on
# when the time field's top bit sets, 2^40 ms after 1314220021721:
# 2046-06-27T17:00:49.497Z. 2^53: time shift 23, 2^30 ms after the epoch =
# 2011-09-06T07:22:43.545Z. Example: ((1767225600000 - 1314220021721) << 23)
# | (1 << 10) = 3800086217995846656.
run plan --layout instagram --at 2026-01-01
check "plan instagram: exit 0" ran_ok
check "plan instagram: shards" line_is 3 "worker ids available: 8192 (shard 13 bits = 2^13)"
check "plan instagram: ids per worker" line_is 4 "ids per second per worker: 1024000 (1024 per 1 ms tick)"
check "plan instagram: 2^53" line_is 6 \
    "ids above 2^53: yes, since 2011-09-06T07:22:43.545Z: JSON consumers must get ids as strings"
check "plan instagram: sign bit" line_matches 7 \
    'sign bit: USED: ids read as signed 64-bit integers \(Java long, SQL bigint\) turn negative from 2046-06-27T17:00:49\.497Z \([0-9]+\.[0-9] years from now\)'
check "plan instagram: example" line_is 8 \
    "example id: 3800086217995846656 (at 2026-01-01T00:00:00.000Z, shard=1 seq=0)"
# After the sign date it says "since".
run plan --layout instagram --at 2050-01-01
check "plan instagram at 2050: the example id has bit 63 set" \
    eval 'ran_ok && line_matches 8 "example id: (9[0-9]{18}|1[0-9]{19}) \(at 2050-01-01T00:00:00\.000Z, shard=1 seq=0\)"'

# sonyflake (time:39@10ms,seq:8,machine:16): 256 per 10 ms tick = 25600
# ids/s per machine; 65536 machines. 2^53: time shift 24, 2^29 ticks of
# 10 ms after 2014-09-01 = 2014-11-02T03:18:29.120Z. Example: tick
# (1767225600000 - 1409529600000) / 10 = 35769600000, << 24, | machine 1
# = 600114305433600001.
run plan --layout sonyflake --at 2026-01-01 --peak 100000 --workers 300
check "plan sonyflake: exit 0" ran_ok
check "plan sonyflake: time runs out" line_matches 2 \
    'time runs out: 2188-11-16T03:28:58\.880Z \(year 2188, [0-9]+\.[0-9] years from now; the field spans 174\.2 years, 2\^39 ticks of 10 ms\)'
check "plan sonyflake: machines" line_is 3 "worker ids available: 65536 (machine 16 bits = 2^16)"
check "plan sonyflake: ids per worker" line_is 4 "ids per second per worker: 25600 (256 per 10 ms tick)"
check "plan sonyflake: 2^53" line_is 7 \
    "ids above 2^53: yes, since 2014-11-02T03:18:29.120Z: JSON consumers must get ids as strings"
check "plan sonyflake: example" line_is 9 \
    "example id: 600114305433600001 (at 2026-01-01T00:00:00.000Z, machine=1 seq=0)"
check "plan sonyflake: decoded" line_is 10 \
    "decoded: 600114305433600001 time=2026-01-01T00:00:00.000Z unix_ms=1767225600000 seq=0 machine=1"
check "plan sonyflake: peak NOT COVERED" line_is 13 \
    "peak: NOT COVERED (need 100000 ids/s per worker, the sequence gives 25600)"
# 100000 ids/s x 10 ms = 1000 per tick: 10 bits; 300 workers: 9 bits; time
# 44 ticks of 10 ms.
check "plan sonyflake: suggestion at 10 ms" line_matches 14 \
    'suggested layout: time:44@10ms,worker:9,seq:10 --epoch 1409529600000 \(time runs out 7589-05-29T15:27:24\.160Z, .*lifespan 5574\.6 years, 2\^44 ticks of 10 ms\)'

# A layout of 53 bits or fewer never passes 2^53; one without node fields.
run plan --layout 'time:40@1ms,seq:13' --epoch 2020-01-01 --at 2026-01-01
check "plan: 53 bits never pass 2^53; no node fields" \
    eval 'ran_ok && line_is 3 "worker ids available: 1 (no node fields: one generator per layout and epoch)" && line_is 6 "ids above 2^53: never (the layout uses 53 bits): JSON numbers hold every id" && line_is 8 "example id: 1551473049600000 (at 2026-01-01T00:00:00.000Z, seq=0)"'
# A future 2^53 date: 54 bits, time shift 10 -> 2^43 ms after 2025-01-01.
run plan --layout 'time:44@1ms,worker:2,seq:8' --epoch 2025-01-01 --at 2026-01-01
check "plan: 2^53 not yet" \
    eval 'ran_ok && line_matches 6 "ids above 2\^53: not yet; from 2303-09-[0-9]{2}T.*Z \([0-9]+\.[0-9] years from now\): JSON consumers must get ids as strings"'

# JSON.
run plan --workers 300 --peak 100000 --at 2026-01-01 --json
check "plan --json parses" eval 'ran_ok && json_ok'
check "plan --json facts" \
    test "$(json_get '[j["worker_ids"], j["ids_per_second_per_worker"], j["over_2_53"], j["over_2_53_from"], j["sign_bit"], j["example"]["id"], j["example"]["worker"], j["verdicts"], j["suggested"]["text"], j["suggested"]["span_years"]]')" \
    = "[1024, 4096000, True, '2010-11-28T22:14:18.305Z', False, '2006515713438650368', 1, {'lifespan': 'ok', 'workers': 'ok', 'peak': 'ok'}, 'time:47@1ms,worker:9,seq:7', 4459.7]"
run plan --layout instagram --workers 9000 --peak 2e6 --at 2026-01-01 --json
check "plan --json instagram" \
    test "$(json_get '[j["sign_bit"], j["negative_from"], j["verdicts"]["workers"], j["verdicts"]["peak"], type(j["example"]["id"]).__name__]')" \
    = "[True, '2046-06-27T17:00:49.497Z', 'NOT ENOUGH', 'NOT COVERED', 'str']"

# ---- plan: bad usage
usage_exact "idmint: plan: bad --workers '0': must be 1 to 4294967296" plan --workers 0
usage_exact "idmint: plan: bad --workers '4294967297': must be 1 to 4294967296" plan --workers 4294967297
usage_prefix "idmint: plan: bad --workers 'x': " plan --workers x
usage_exact "idmint: plan: bad --peak '0': must be above 0 and at most 1e12" plan --peak 0
usage_exact "idmint: plan: bad --peak '1e13': must be above 0 and at most 1e12" plan --peak 1e13
usage_exact "idmint: plan: bad --peak 'fast': not a decimal number (want e.g. 2.5 or 1e6)" plan --peak fast
usage_prefix "idmint: plan: bad --at 'yesterday': " plan --at yesterday
usage_exact "idmint: plan: bad --at '2000-01-01': before the layout's epoch, 2010-11-04T01:42:54.657Z" \
    plan --at 2000-01-01
usage_exact "idmint: plan: bad --at '2090-01-01': at or past the layout's end, 2080-07-10T17:30:30.209Z" \
    plan --at 2090-01-01
usage_exact "idmint: plan: unexpected argument 'twitter'" plan twitter
usage_prefix "idmint: plan: unknown layout 'nope'" plan --layout nope
usage_prefix "idmint: plan: bad --epoch 'x'" plan --epoch x
usage_prefix "idmint: plan: " plan --bogus
run plan --help
check "plan --help" eval 'ran_ok && line_matches 1 "usage: idmint plan .*"'
run --help
check "idmint --help lists plan and estimate" \
    eval 'grep -q "^  plan " "$T/out" && grep -q "^  estimate " "$T/out"'

# --node: the example id for a given worker (2026-01-01 is the Twitter API's
# example time; datacenter 3, worker 7: 2006515713438650368 | 3<<17 | 7<<12).
run plan --layout twitter --at 2026-01-01 --node datacenter=3 --node worker=7
check "plan --node: the example id carries the node values given" \
    grep -qx 'example id: 2006515713439068160 (at 2026-01-01T00:00:00.000Z, datacenter=3 worker=7 seq=0)' "$T/out"
usage_exact "idmint: plan: bad --node 'worker=99': value out of range (node: worker=99 exceeds 31 (5 bits))" \
    plan --layout twitter --at 2026-01-01 --node worker=99
usage_exact "idmint: plan: bad --node 'bogus=1': invalid argument (node: the layout has no field 'bogus')" \
    plan --layout twitter --at 2026-01-01 --node bogus=1

finish
