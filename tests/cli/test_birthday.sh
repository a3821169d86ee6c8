#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Tests of `idmint birthday`: the known birthday-bound figures (64 random
# bits: 50% after about 5.06e9 ids; UUIDv4's 122 bits: after about
# 2.71e18), tiny probabilities against the same formula computed
# independently in python3, the exact product for small cases, the per-ms
# model (also under and across one millisecond, where the ids of a part of a
# millisecond are the plain birthday problem: against the model recomputed
# in 100-digit decimals, and 48 bits at 1e9/s reaching 1e-9 after about the
# 751 ids of fully random 48 bits), the SVG chart (parses as XML, a path per
# series, the legend), --points (count, log-spaced times from 1 s to the
# duration, P rising to p_collision, the text table), and every bad-usage
# case (exit 2, one stderr line, nothing on stdout).
#
# Usage: bash test_birthday.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -u

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

need python3

# pycheck DESCRIPTION PYTHON: run PYTHON with the last run's stdout as the
# JSON object J (json.load); passes if it prints "ok".
pycheck() {
    local desc=$1 code=$2 got
    got=$(python3 -c "import json, math, sys
J = json.load(open(sys.argv[1]))
$code" "$T/out" 2>&1)
    if [ "$RC" -eq 0 ] && [ ! -s "$T/err" ] && [ "$got" = ok ]; then
        ok
    else
        bad "$desc: $got; $(show)"
    fi
}

YEAR=31557600

# ---------------------------------------------------------------- known figures

run birthday --bits 64 --rate 1e6 --json
pycheck "64 bits: 50% after about 5.06e9 ids" '
r = J["t50_ids"] / 5.06e9
print("ok" if abs(r - 1) < 0.02 and J["model"] == "random" and J["bits"] == 64
      else "t50_ids=%r" % J["t50_ids"])'
pycheck "64 bits: t50 seconds = ids / rate" '
print("ok" if abs(J["t50_s"] * 1e6 / J["t50_ids"] - 1) < 1e-9 else J)'

run birthday --bits 122 --rate 1e6 --json
pycheck "122 bits (UUIDv4): 50% after about 2.71e18 ids" '
r = J["t50_ids"] / 2.71e18
print("ok" if abs(r - 1) < 0.02 else "t50_ids=%r" % J["t50_ids"])'
pycheck "122 bits: 1e-9 after sqrt(2 * 2^122 * -log1p(-1e-9)) ids" '
want = (1 + math.sqrt(1 + 8 * 2.0**122 * -math.log1p(-1e-9))) / 2
print("ok" if abs(J["t1e9_ids"] / want - 1) < 1e-9 else J["t1e9_ids"])'

# ---------------------------------------------------------------- tiny values

run birthday --bits 122 --rate 1e6 --duration 1y --json
pycheck "122 bits at 1e6/s for 1 year: P = -expm1(-n(n-1)/2^123)" '
n = 1e6 * 365.25 * 86400
want = -math.expm1(-n * (n - 1) / 2 / 2.0**122)
got = J["p_collision"]
print("ok" if abs(got / want - 1) < 1e-6 and J["ids"] == n and 1e-11 < got < 1e-9
      else "got %r want %r" % (got, want))'

run birthday --bits 128 --rate 1 --duration 3600s --json
pycheck "128 bits, 3600 ids: P near 1e-32 keeps its digits" '
n = 3600
want = -math.expm1(-n * (n - 1) / 2 / 2.0**128)
got = J["p_collision"]
print("ok" if abs(got / want - 1) < 1e-6 else "got %r want %r" % (got, want))'

# ---------------------------------------------------------------- exact product

for args in "8 1 20" "8 2 30s" "16 10 1m" "40 1000 10m"; do
    set -- $args
    run birthday --bits "$1" --rate "$2" --duration "$3" --json
    pycheck "exact product: --bits $1 --rate $2 --duration $3" '
from fractions import Fraction
bits = J["bits"]; n = int(J["ids"])
space = 2**bits
if n <= 2000:  # exactly, in fractions
    none = Fraction(1)
    for i in range(n):
        none *= Fraction(space - i, space)
    want = float(1 - none)
else:  # the same product as a correctly rounded sum of logarithms
    want = -math.expm1(math.fsum(math.log1p(-i / space) for i in range(n)))
got = J["p_collision"]
print("ok" if J["method"] == "exact-product" and abs(got / want - 1) < 1e-9
      else "got %r want %r (n=%d)" % (got, want, n))'
done

run birthday --bits 8 --rate 1 --duration 1h --json
pycheck "8 bits: 50% at the first whole count the exact product reaches it" '
bits = 8; space = 2**bits
none = 1.0; n = 0
while 1 - none < 0.5:
    none *= (space - n) / space
    n += 1
print("ok" if J["t50_ids"] == n and J["t50_s"] == n and J["p_collision"] == 1
      else "t50_ids %r want %d" % (J["t50_ids"], n))'

run birthday --bits 4 --rate 1 --duration 17 --json
pycheck "more ids than values: P = 1" 'print("ok" if J["p_collision"] == 1 else J)'

run birthday --bits 64 --rate 0.5 --duration 3s --json
pycheck "one id (rate x duration rounds down): P = 0" '
print("ok" if J["p_collision"] == 0 and J["ids"] == 1 else J)'

# ---------------------------------------------------------------- per-ms

# Per-ms below and around one millisecond. The first id comes at the start
# of a millisecond, so j whole ms and a part f of one: the ids of the part
# share one millisecond, and under 1 ms it is the plain birthday problem over
# the bits (P grows as t^2), not a fraction of a whole millisecond's chance.
# PERMS: the model again, in 100-digit decimal arithmetic, and the time at
# which it reaches a probability, by bisection on the time.
PERMS='
from decimal import Decimal as D, getcontext
getcontext().prec = 100
def g(bits, ids):  # ln P(no collision) among Poisson(ids) ids of one ms
    l = D(ids) / D(2) ** bits
    return D(2) ** bits * ((1 + l).ln() - l)
def log_none(bits, rate, t):
    ms = D(str(t)) * 1000
    j = int(ms)
    k = D(str(rate)) / 1000
    return j * g(bits, k) + g(bits, k * (ms - j))
def time_to(bits, rate, p):
    target = D(1 - p).ln() if p >= 1e-6 else -(D(p) + D(p) ** 2 / 2)
    lo, hi = 0.0, 1.0
    while log_none(bits, rate, hi) > target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if log_none(bits, rate, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi
def close(a, b, rel):
    return abs(a / b - 1) < rel
'

run birthday --bits 74 --rate 1e6 --duration 100y --per-ms --json
pycheck "per-ms, 74 bits at 1e6/s for 100 years" '
k = 1e6 / 1000; M = 100 * 365.25 * 86400 * 1000
q = -math.expm1(-k * k / 2 / 2.0**74)
want = -math.expm1(M * math.log1p(-q))
got = J["p_collision"]
t50 = math.log1p(-0.5) / math.log1p(-q) / 1000
print("ok" if abs(got / want - 1) < 1e-6 and abs(J["t50_s"] / t50 - 1) < 1e-6
      and J["model"] == "per-ms"
      else "got %r want %r; t50 %r want %r" % (got, want, J["t50_s"], t50))'

run birthday --bits 80 --rate 500 --duration 30d --per-ms --json
pycheck "per-ms, k < 1 per ms (Poisson): ULID 80 bits at 500/s for 30 days" '
k = 0.5; M = 30 * 86400 * 1000
want = -math.expm1(-M * k * k / 2 / 2.0**80)
got = J["p_collision"]
print("ok" if abs(got / want - 1) < 1e-6 else "got %r want %r" % (got, want))'

run birthday --bits 8 --rate 1e5 --duration 1s --per-ms --json
pycheck "per-ms, many ids per value: the Poisson-exact form" "$PERMS"'
lam = 100 / 256.0
per_ms = 256 * (math.log1p(lam) - lam)
want = -math.expm1(1000 * per_ms)
# 50% within the first ms: the mean count x of one ms with g(x) = ln 0.5
t50 = time_to(8, 1e5, 0.5)
got = J["p_collision"]
print("ok" if abs(got - want) < 1e-12 and close(J["t50_s"], t50, 1e-9) and t50 < 0.001
      else "got %r want %r; t50 %r want %r" % (got, want, J["t50_s"], t50))'

run birthday --bits 48 --rate 1e9 --per-ms --json
pycheck "per-ms, 48 bits at 1e9/s: 1e-9 after about 750 ids, like fully random 48 bits (751)" "$PERMS"'
want = time_to(48, 1e9, 1e-9)
space = 2 ** 48; none = 1.0; n = 0
while 1 - none < 1e-9:  # the random model: the first whole count
    none *= (space - n) / space
    n += 1
ok = (close(J["t1e9_s"], want, 1e-9) and close(J["t1e9_ids"], n, 0.002)
      and close(J["t1e9_ids"], J["t1e9_s"] * 1e9, 1e-12) and n == 751)
print("ok" if ok else "t1e9_s %r want %r; ids %r, random %d" % (J["t1e9_s"], want, J["t1e9_ids"], n))'
run birthday --bits 48 --rate 1e9 --per-ms
check "per-ms text: 48 bits at 1e9/s: 1e-9 after 750 ids, in 7.5e-07 s" test "$RC" -eq 0 -a ! -s "$T/err" \
    -a "$(grep -c '^1e-9 after: *7.5e-07 seconds (750 ids)$' "$T/out")" -eq 1
run birthday --bits 48 --rate 1e9 --per-ms --duration 5e-7 --json
pycheck "per-ms, 48 bits at 1e9/s for 0.5 us (500 ids in one ms): P as the plain birthday bound" "$PERMS"'
want = float(-(log_none(48, 1e9, 5e-7).exp() - 1))
plain = 500 * 499 / 2 / 2.0 ** 48
print("ok" if close(J["p_collision"], want, 1e-9) and close(J["p_collision"], plain, 0.01)
      else "got %r want %r (n(n-1)/2^49 %r)" % (J["p_collision"], want, plain))'

# 20 bits at 1e6/s: 1000 ids per ms, P(one ms) = 38%; 50% after 1.4 ms.
prev=0
for d in 0.0001 0.0005 0.000999 0.001 0.0010001 0.0015 0.002 0.0025 0.01; do
    run birthday --bits 20 --rate 1e6 --per-ms --duration "$d" --json
    pycheck "per-ms, 20 bits at 1e6/s for $d s: j whole ms and a part of one" "$PERMS"'
want = float(-(log_none(20, 1e6, J["duration_s"]).exp() - 1))
prev = '"$prev"'
print("ok" if close(J["p_collision"], want, 1e-9) and J["p_collision"] > prev
      else "got %r want %r (the shorter duration gave %r)" % (J["p_collision"], want, prev))'
    prev=$(python3 -c 'import json, sys; print(repr(json.load(open(sys.argv[1]))["p_collision"]))' "$T/out")
done
for case in "20 1e6" "16 1e6" "24 1e6" "40 1e9" "74 1e12" "80 1e15" "8 1e3"; do
    read -r bits rate <<<"$case"
    run birthday --bits "$bits" --rate "$rate" --per-ms --json
    pycheck "per-ms, $bits bits at $rate/s: t50 and t1e9 where the model reaches them" "$PERMS"'
t50 = time_to('"$bits"', '"$rate"', 0.5)
t9 = time_to('"$bits"', '"$rate"', 1e-9)
print("ok" if close(J["t50_s"], t50, 1e-9) and close(J["t1e9_s"], t9, 1e-9)
      else "t50 %r want %r; t1e9 %r want %r" % (J["t50_s"], t50, J["t1e9_s"], t9))'
done

# ---------------------------------------------------------------- durations

for d in "3600:3600" "3600s:3600" "90m:5400" "2h:7200" "30d:2592000" "1.5y:47336400" "5y:157788000" "10000y:315576000000"; do
    run birthday --bits 64 --rate 1 --duration "${d%%:*}" --json
    pycheck "--duration ${d%%:*} is ${d#*:} s" "print('ok' if J['duration_s'] == ${d#*:} else J['duration_s'])"
done
run birthday --bits 64 --rate 1 --json
pycheck "default duration 5y" "print('ok' if J['duration_s'] == 5 * $YEAR else J['duration_s'])"

# ---------------------------------------------------------------- text output

run birthday --bits 64 --rate 1e6
check "text: 64 bits at 1e6/s" test "$RC" -eq 0 -a ! -s "$T/err" \
    -a "$(grep -c '^50% after: *1.4 hours (5.06e+09 ids)$' "$T/out")" -eq 1 \
    -a "$(grep -c '^P(collision): *1.00e+00$' "$T/out")" -eq 1 \
    -a "$(grep -c '^1e-9 after: *0.192 seconds (192078 ids)$' "$T/out")" -eq 1
run birthday --bits 122 --rate 1e6
check "text: 122 bits shows P in 3 digits and '1 in N'" test "$RC" -eq 0 \
    -a "$(grep -Ec '^P\(collision\): *2\.34e-09 \(1 in 4\.27e\+08\)$' "$T/out")" -eq 1 \
    -a "$(grep -c '(2.71e+18 ids)$' "$T/out")" -eq 1
run birthday --bits 122 --rate 1e6
cp "$T/out" "$T/out1"
run birthday --rate 1e6 --bits 122
check "same output for the same input" cmp -s "$T/out" "$T/out1"
run birthday --help
check "--help exits 0 with usage" test "$RC" -eq 0 -a ! -s "$T/err" \
    -a "$(head -n 1 "$T/out")" = 'usage: idmint birthday --bits B --rate IDS_PER_S [--duration D]'

# ---------------------------------------------------------------- SVG

run birthday --bits 64 --rate 1e6 --plot "$T/p.svg"
check "--plot: exit 0, file written, no .tmp left" test "$RC" -eq 0 -a ! -s "$T/err" \
    -a -s "$T/p.svg" -a ! -e "$T/p.svg.tmp"
got=$(python3 - "$T/p.svg" <<'EOF' 2>&1
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
errs = []
if root.tag != ns + "svg" or root.get("version") != "1.1":
    errs.append("root %s version %s" % (root.tag, root.get("version")))
paths = [p for p in root.iter(ns + "path") if p.get("class") == "series"]
if len(paths) != 7:
    errs.append("%d series paths" % len(paths))
for p in paths:
    d = p.get("d")
    if not d.startswith("M") or d.count(" L") < 10:
        errs.append("short path %r" % d[:40])
text = " ".join("".join(t.itertext()) for t in root.iter(ns + "text"))
for want in ["32 bits", "48 bits", "64 bits", "80 bits", "96 bits",
             "122 bits (UUIDv4)", "74 bits per ms (UUIDv7)", "1e-18", "1e-9",
             "1 s", "100 years", "Chance of any id collision"]:
    if want not in text:
        errs.append("no text %r" % want)
if root.find(ns + "title") is None:
    errs.append("no title")
print("ok" if not errs else "; ".join(errs))
EOF
)
check "--plot: valid SVG 1.1 XML, 7 series paths, axes, legend ($got)" test "$got" = ok

run birthday --bits 64 --rate 1e6 --plot "$T/p2.svg"
check "--plot output is deterministic" cmp -s "$T/p.svg" "$T/p2.svg"

run birthday --bits 80 --per-ms --rate 1e3 --plot "$T/p3.svg" --json
got=$(python3 -c '
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
paths = [p for p in root.iter(ns + "path") if p.get("class") == "series"]
text = " ".join("".join(t.itertext()) for t in root.iter(ns + "text"))
print("ok" if len(paths) == 8 and "80 bits per ms (ULID)" in text else (len(paths), text))
' "$T/p3.svg" 2>&1)
check "--plot adds this run's model when it is not a default series ($got)" test "$got" = ok
pycheck "--json names the plot" 'print("ok" if J["plot"].endswith("p3.svg") else J)'

# An existing file is replaced whole.
printf 'old' >"$T/p4.svg"
run birthday --bits 64 --rate 1 --plot "$T/p4.svg"
check "--plot replaces an existing file" test "$RC" -eq 0 -a "$(head -c 5 "$T/p4.svg")" = '<?xml'

fails_with 1 prefix "idmint: birthday: cannot write --plot '$T/nodir/p.svg': No such file or directory" \
    birthday --bits 64 --rate 1 --plot "$T/nodir/p.svg"

# ---------------------------------------------------------------- --points

# pts_check DESCRIPTION N T0: the last run's "points": N of them, the first
# at T0 s and the last at duration_s, log-spaced (the same ratio from each
# to the next), P never falling (and rising over the curve), the last P
# exactly p_collision.
pts_check() {
    pycheck "$1" "
P = J['points']; n = $2; t0 = $3
ts = [p[0] for p in P]; ps = [p[1] for p in P]
ratios = [math.log(b / a) for a, b in zip(ts, ts[1:])]
errs = []
if len(P) != n or any(len(p) != 2 for p in P): errs.append('count %d' % len(P))
elif ts[0] != t0: errs.append('first t %r' % ts[0])
elif ts[-1] != J['duration_s']: errs.append('last t %r' % ts[-1])
elif max(ratios) - min(ratios) > 1e-9 * max(ratios): errs.append('not log-spaced %r' % ts)
elif any(b < a for a, b in zip(ps, ps[1:])) or not (ps[-1] > ps[0] or ts[-1] == ts[0]): errs.append('P %r' % ps)
elif ps[-1] != J['p_collision']: errs.append('last P %r' % ps[-1])
print('ok' if not errs else errs)"
}
run birthday --bits 32 --rate 10 --duration 1h --points 5 --json
pts_check "--points 5: random 32 bits (exact product), 1 s to 1 h" 5 1
pycheck "--points: the first P is the exact product of 10 ids" '
want = -math.expm1(sum(math.log1p(-i / 2.0**32) for i in range(10)))
print("ok" if abs(J["points"][0][1] / want - 1) < 1e-12 else J["points"][0])'
run birthday --bits 64 --rate 1e6 --duration 5y --points 60 --json
pts_check "--points 60: random 64 bits (approximation), 1 s to 5 y" 60 1
run birthday --bits 74 --per-ms --rate 1e6 --duration 10000y --points 500 --json
pts_check "--points 500 (the most): per-ms 74 bits, 1 s to 10000 y" 500 1
run birthday --bits 80 --per-ms --rate 1e9 --duration 0.5 --points 3 --json
pts_check "--points under 1 s: from a thousandth of the duration" 3 0.0005
run birthday --bits 32 --rate 10 --duration 1 --points 2 --json
pts_check "--points 2 over 1 s: both at 1 s" 2 1
run birthday --bits 32 --rate 10 --duration 1h --json
pycheck "without --points: no points member" 'print("ok" if "points" not in J else J)'
run birthday --bits 32 --rate 10 --duration 1h --points 5
check "--points text: the other lines, then a 5-row table" test "$RC" -eq 0 -a ! -s "$T/err" \
    -a "$(sed -n '10,16p' "$T/out" | tr -s ' ')" = "points:
 time (s) P(collision)
 1 1.05e-08
 7.75 6.81e-07
 60 4.18e-05
 465 2.51e-03
 3600 1.40e-01" -a "$(sed -n 6p "$T/out")" = "P(collision):  1.40e-01" -a "$(wc -l <"$T/out")" -eq 16
run birthday --bits 32 --rate 10 --duration 1h
head -n 9 "$T/out" >"$T/nopts"
run birthday --bits 32 --rate 10 --duration 1h --points 5
head -n 9 "$T/out" >"$T/pts"
check "--points text: the lines before the table unchanged" cmp -s "$T/nopts" "$T/pts"

# ---------------------------------------------------------------- bad usage

BITS_MSG="must be an integer from 1 to 256"
RATE_MSG="must be a number of ids per second above 0 and at most 1e15"
DUR_MSG="must be above 0 and at most 10000y, in seconds or with a unit s, m, h, d or y (3600, 30d, 5y)"
for b in 0 257 abc -1 1.5 '' ' 64' 64x 0x40 +64 1000; do
    usage_exact "idmint: birthday: bad --bits '$b': $BITS_MSG" birthday --bits "$b" --rate 1
done
for r in 0 -1 1e16 abc inf nan 0x10 '' 1e-400 1e400 '1 ' 1,5 1e6x -0; do
    usage_exact "idmint: birthday: bad --rate '$r': $RATE_MSG" birthday --bits 64 --rate "$r"
done
for d in 0 0s 5x x y '' -1d 10001y 1e400 inf 1.5.y 5yy 3600ms; do
    usage_exact "idmint: birthday: bad --duration '$d': $DUR_MSG" birthday --bits 64 --rate 1 --duration "$d"
done
for p in 0 1 501 1000; do
    usage_exact "idmint: birthday: bad --points '$p': must be 2 to 500" birthday --bits 64 --rate 1 --points "$p"
done
for p in abc -3 2.5 ''; do
    usage_prefix "idmint: birthday: bad --points '$p': malformed text" birthday --bits 64 --rate 1 --points "$p"
done
usage_exact "idmint: birthday: missing --bits and --rate (try 'idmint birthday --help')" birthday
usage_exact "idmint: birthday: missing --bits (try 'idmint birthday --help')" birthday --rate 1
usage_exact "idmint: birthday: missing --rate (try 'idmint birthday --help')" birthday --bits 64
usage_exact "idmint: birthday: option '--bits' needs a value" birthday --rate 1 --bits
usage_exact "idmint: birthday: unknown option '--bit'" birthday --bit 64 --rate 1
usage_exact "idmint: birthday: unexpected argument 'extra'" birthday --bits 64 --rate 1 extra
usage_exact "idmint: birthday: option '--per-ms' takes no value (got '--per-ms=1')" birthday --bits 64 --rate 1 --per-ms=1
usage_exact "idmint: birthday: bad --plot '': empty path" birthday --bits 64 --rate 1 --plot ''
# Checked before anything is written.
usage_exact "idmint: birthday: bad --duration '0': $DUR_MSG" birthday --bits 64 --rate 1 --duration 0 --plot "$T/never.svg"
check "a bad option writes no plot" test ! -e "$T/never.svg" -a ! -e "$T/never.svg.tmp"

finish
