# SPDX-License-Identifier: MIT
# `idmint next` as a fleet member, on the embedded default (node fields not
# given, leased from the file coordinator under the state directory): ids on
# a fresh machine, runs at once never sharing a worker id, a run killed with
# SIGKILL and started again resuming its claim (E12 for file://), claim files
# gone after clean runs, --node still pinning.
# Usage: test_fleet_cli.sh /path/to/idmint
. "$(dirname "$0")/lib.sh"
need awk sort uniq

export IDMINT_STATE_DIR="$T/state"
decode_worker() { "$BIN" decode "$1" --json | sed -n 's/.*"worker":\([0-9]*\).*/\1/p'; }
decode_dc() { "$BIN" decode "$1" --json | sed -n 's/.*"datacenter":\([0-9]*\).*/\1/p'; }

# A fresh machine: one id, no node given.
run next
check "next with no node prints an id (rc=$RC, $(show))" test "$RC" -eq 0 -a -s "$T/out"
ID1=$(cat "$T/out")
check "its worker id is leased: datacenter+worker 0 (got dc=$(decode_dc "$ID1") worker=$(decode_worker "$ID1"))" \
    test "$(decode_dc "$ID1")" = 0 -a "$(decode_worker "$ID1")" = 0
check "a clean run leaves no claim file" test -z "$(ls "$IDMINT_STATE_DIR" | grep -v '\.lock$' | grep '^claim-')"
check "a clean run leaves no state file" test -z "$(ls "$IDMINT_STATE_DIR" | grep '^state-')"

# Runs at once: each its own worker id; no id twice.
for i in 1 2 3 4; do
    "$BIN" next -n 200000 >"$T/c$i.out" 2>"$T/c$i.err" &
done
wait
cat "$T"/c?.out >"$T/all"
check "four runs at once: 800000 ids" test "$(wc -l <"$T/all")" -eq 800000
check "four runs at once: no id twice" test -z "$(sort "$T/all" | uniq -d | head -1)"
W=$(for i in 1 2 3 4; do decode_worker "$(head -1 "$T/c$i.out")"; done | sort -u | wc -l)
check "four runs at once: four worker ids (got $W)" test "$W" -eq 4

# E12 (file://): killed, started again at once: the same worker id, resumed.
"$BIN" next -n 10000000 >"$T/k.out" 2>/dev/null &
P=$!
for _ in $(seq 100); do [ -s "$T/k.out" ] && break; sleep 0.05; done
sleep 0.3
{ kill -9 "$P"; wait "$P"; } 2>/dev/null
LAST=$(tail -n 2 "$T/k.out" | head -1)
check "the killed run left its claim file" test -n "$(ls "$IDMINT_STATE_DIR" | grep '^claim-.*-[0-9]*$')"
run next -v -n 5
check "restarted: resumed (rc=$RC, $(show))" grep -q "resumed the saved claim of worker id $(decode_worker "$LAST")" "$T/err"
FIRST=$(head -1 "$T/out")
check "restarted: the same worker id" test "$(decode_worker "$FIRST")" = "$(decode_worker "$LAST")"
check "restarted: above the killed run's ids ($FIRST > $LAST)" \
    awk -v a="$FIRST" -v b="$LAST" 'BEGIN { exit !(a + 0 > b + 0) }'
check "restarted: no id of the killed run again" test -z "$(cat "$T/k.out" "$T/out" | sort | uniq -d | head -1)"

# --node still pins; the lease fills only what is missing.
run next --node datacenter=3 --node worker=7
check "--node pins both (rc=$RC)" test "$RC" -eq 0 -a "$(decode_worker "$(cat "$T/out")")" = 7
run next --node datacenter=3
check "--node datacenter=3: the worker leased, dc pinned (rc=$RC, $(show))" \
    test "$RC" -eq 0 -a "$(decode_dc "$(cat "$T/out")")" = 3
# A run leasing its node values and a run pinning the same ones, at once:
# they share the state file of those node values (its lock and its mark),
# so no id is minted twice.
rm -rf "$IDMINT_STATE_DIR"
"$BIN" next -n 1000000 >"$T/e1.out" 2>"$T/e1.err" &
"$BIN" next -n 1000000 --node datacenter=0 --node worker=0 >"$T/e2.out" 2>"$T/e2.err"
wait
check "leased and pinned runs at once: 2000000 ids ($(cat "$T/e1.err" "$T/e2.err" | head -c 300))" \
    test "$(cat "$T/e1.out" "$T/e2.out" | wc -l)" -eq 2000000
check "leased and pinned runs at once: no id twice" \
    test -z "$(sort "$T/e1.out" "$T/e2.out" | uniq -d | head -1)"
# Another layout: its own coordinator (a coordinator hands out one scope).
run next --layout discord
check "another layout leases from its own coordinator (rc=$RC, $(show))" test "$RC" -eq 0

finish
