#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmint's UUIDs and ULIDs as Python 3's standard uuid module sees them.
# Python is a second implementation of RFC 9562's layout that nobody here
# wrote, so where it agrees with idmint both are likely right; where it
# disagrees one of them is wrong.
#
# Checked, one count per property over the whole set:
#   - 10,000 uuid7 and 10,000 uuid4 from one run each: uuid.UUID(s) parses
#     every one, str() gives back exactly the text (lower-case canonical),
#     .version is 7 / 4 and .variant is uuid.RFC_4122 (Python's name for
#     RFC 9562's variant); all distinct.
#   - uuid7: the top 48 bits (u.int >> 80) are Unix ms within a few seconds
#     of the time of minting and never decrease in mint order; u.int strictly
#     increases; idmint decode gives the same unix_ms and version 7.
#   - uuid4: each of the 122 bits that are not version or variant is set in
#     about half of the ids (a stuck bit would show), and idmint decode
#     says version 4.
#   - ULIDs: Python decodes the Crockford base32 itself; the 128-bit value as
#     uuid.UUID equals the "uuid" idmint decode prints, its top 48 bits equal
#     both the time of the first 10 characters and idmint's unix_ms, times
#     are near now, the run strictly increases, and text order equals
#     numeric order.
#   - --format hex and binary of uuid7, uuid4 and ulid read back through
#     uuid.UUID(hex=) / uuid.UUID(bytes=).
#   - The other way: UUIDs Python builds (uuid1, uuid3, uuid4, uuid5, v7
#     laid out by hand over the whole 48-bit time range, and each variant)
#     decode in idmint to Python's version, variant and time.
#
# Usage: bash test_python_uuid.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -uo pipefail

BIN=${1:-}
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
    echo "test_python_uuid.sh: no idmint binary given or not executable: '$BIN'" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "test_python_uuid.sh: python3 is missing (install python3)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

T=$(mktemp -d) || { echo "0 passed, 1 failed"; exit 1; }
trap 'rm -rf "$T"' EXIT
export LC_ALL=C

cat >"$T/check.py" <<'PY'
import json
import random
import subprocess
import sys
import time
import uuid

BIN = sys.argv[1]
N = 10000
SLACK_MS = 5000  # "near now": the ids were minted within the run
passed = 0
failed = 0


def check(desc, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + desc)
    else:
        failed += 1
        print("FAIL - %s%s" % (desc, (": " + detail) if detail else ""))


def now_ms():
    return time.time_ns() // 1_000_000


def run(args, binary=False):
    """Run idmint; (status, stdout, stderr)."""
    try:
        p = subprocess.run([BIN] + args, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return -1, b"" if binary else "", str(e)
    out = p.stdout if binary else p.stdout.decode("ascii", "replace")
    return p.returncode, out, p.stderr.decode("utf-8", "replace")


def mint(kind, n, fmt="text"):
    """Mint n ids; a list of lines (text, hex) or of byte strings (binary),
    with the wall clock in ms just before and just after."""
    before = now_ms()
    rc, out, err = run([kind, "-n", str(n), "--format", fmt], binary=True)
    after = now_ms()
    if fmt == "binary":
        size = 12 if kind == "objectid" else 16
        ids = [out[i:i + size] for i in range(0, len(out), size)]
        whole = len(out) % size == 0
    else:
        text = out.decode("ascii", "replace")
        ids = text.split("\n")
        whole = ids[-1] == ""
        ids = ids[:-1] if whole else ids
    check("idmint %s -n %d --format %s: exit 0, %d whole ids" % (kind, n, fmt, n),
          rc == 0 and whole and len(ids) == n,
          "exit %s, %d ids, stderr %r" % (rc, len(ids), err[:200]))
    return ids, before, after


def decode(ids):
    """idmint decode --json over ids in chunks: a list of dicts (None where
    a line did not parse), or None if a run failed."""
    res = []
    for i in range(0, len(ids), 1000):
        chunk = ids[i:i + 1000]
        rc, out, err = run(["decode", "--json"] + chunk)
        lines = out.split("\n")
        if rc != 0 or lines[-1] != "" or len(lines) - 1 != len(chunk):
            print("  idmint decode failed: exit %s, stderr %r" % (rc, err[:200]))
            return None
        for line in lines[:-1]:
            try:
                res.append(json.loads(line))
            except ValueError:
                res.append(None)
    return res


def first_bad(items, pred, limit=3):
    bad = []
    for x in items:
        try:
            good = pred(x)
        except Exception as e:  # a parse error is a failure of that item
            good = False
            x = (x, repr(e))
        if not good:
            bad.append(x)
            if len(bad) >= limit:
                break
    return bad


def all_ok(desc, items, pred, need=None):
    """One check: pred holds for every item, and there are `need` items (so
    an empty list never passes)."""
    need = N if need is None else need
    bad = first_bad(items, pred)
    check(desc, len(items) == need and not bad,
          "%d items (want %d), first bad: %r" % (len(items), need, bad))


def parse(s):
    return uuid.UUID(s)


def strictly_increasing(xs):
    return all(a < b for a, b in zip(xs, xs[1:]))


def nondecreasing(xs):
    return all(a <= b for a, b in zip(xs, xs[1:]))


# ---- uuid7 ----
v7, t0, t1 = mint("uuid7", N)
all_ok("uuid7: uuid.UUID parses every one", v7, parse)
p7 = []
for s in v7:
    try:
        p7.append(uuid.UUID(s))
    except ValueError:
        p7.append(None)
pairs7 = list(zip(v7, p7))
all_ok("uuid7: str(uuid.UUID(s)) == s (lower-case canonical)", pairs7,
       lambda p: str(p[1]) == p[0])
all_ok("uuid7: .version == 7", p7, lambda u: u.version == 7)
all_ok("uuid7: .variant == uuid.RFC_4122", p7, lambda u: u.variant == uuid.RFC_4122)
ms7 = [u.int >> 80 if u else -1 for u in p7]
all_ok("uuid7: top 48 bits are ms within %d ms of the minting" % SLACK_MS, ms7,
       lambda m: t0 - SLACK_MS <= m <= t1 + SLACK_MS)
check("uuid7: ms never decrease in mint order", len(ms7) == N and nondecreasing(ms7))
ints7 = [u.int if u else -1 for u in p7]
check("uuid7: u.int strictly increases in mint order",
      len(ints7) == N and strictly_increasing(ints7))
d7 = decode(v7) or []
all_ok("uuid7: idmint decode: kind uuid, version 7, variant rfc9562",
       d7, lambda d: d["kind"] == "uuid" and d["version"] == 7
       and d["variant"] == "rfc9562")
all_ok("uuid7: idmint decode's unix_ms == Python's u.int >> 80",
       list(zip(d7, ms7)), lambda p: p[0]["unix_ms"] == p[1] >= 0)

# ---- uuid4 ----
v4, _, _ = mint("uuid4", N)
p4 = []
for s in v4:
    try:
        p4.append(uuid.UUID(s))
    except ValueError:
        p4.append(None)
all_ok("uuid4: uuid.UUID parses every one", v4, parse)
all_ok("uuid4: str(uuid.UUID(s)) == s (lower-case canonical)",
       list(zip(v4, p4)), lambda p: str(p[1]) == p[0])
all_ok("uuid4: .version == 4", p4, lambda u: u.version == 4)
all_ok("uuid4: .variant == uuid.RFC_4122", p4, lambda u: u.variant == uuid.RFC_4122)
check("uuid4: all distinct", len(set(v4)) == N == len(v4))
# Bit balance: with 10,000 ids a fair bit is set 5000 +- 50 (one sigma)
# times; 400 is eight sigma. Version (bits 76-79) and variant (62-63) are fixed.
fixed = set(range(76, 80)) | {62, 63}
counts = [0] * 128
for u in p4:
    if u is not None:
        x = u.int
        for b in range(128):
            counts[b] += (x >> b) & 1
skewed = [(b, counts[b]) for b in range(128)
          if b not in fixed and abs(counts[b] - N // 2) > 400]
check("uuid4: each of the 122 random bits is set in about half the ids",
      len(p4) == N and not skewed, "skewed bits (bit, count): %r" % skewed[:5])
d4 = decode(v4) or []
all_ok("uuid4: idmint decode: kind uuid, version 4, variant rfc9562, no time",
       d4, lambda d: d["kind"] == "uuid" and d["version"] == 4
       and d["variant"] == "rfc9562" and "unix_ms" not in d)

# ---- ULIDs, decoded by Python from Crockford base32 ----
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
VALUE = {c: i for i, c in enumerate(CROCKFORD)}


def b32(s):
    v = 0
    for c in s:
        v = v * 32 + VALUE[c]
    return v


ul, u0, u1 = mint("ulid", N)
all_ok("ulid: 26 characters of upper-case Crockford base32, at most 7ZZ...",
       ul, lambda s: len(s) == 26 and all(c in VALUE for c in s) and s[0] <= "7")
vals = []
for s in ul:
    try:
        vals.append(b32(s))
    except KeyError:
        vals.append(-1)
uforms = []
for v in vals:
    try:
        uforms.append(uuid.UUID(int=v))
    except ValueError:
        uforms.append(None)
all_ok("ulid: its 128 bits make a uuid.UUID", uforms, lambda u: u is not None)
ulms = [b32(s[:10]) if len(s) == 26 and vals[i] >= 0 else -1
        for i, s in enumerate(ul)]
all_ok("ulid: UUID form's top 48 bits == the time of the first 10 characters",
       list(zip(uforms, ulms)), lambda p: p[0].int >> 80 == p[1])
all_ok("ulid: time within %d ms of the minting" % SLACK_MS, ulms,
       lambda m: u0 - SLACK_MS <= m <= u1 + SLACK_MS)
check("ulid: 128-bit value strictly increases in mint order",
      len(vals) == N and strictly_increasing(vals))
check("ulid: text order == mint order", len(ul) == N and sorted(ul) == ul)
dl = decode(ul) or []
all_ok("ulid: idmint decode: kind ulid, unix_ms == Python's time",
       list(zip(dl, ulms)), lambda p: p[0]["kind"] == "ulid"
       and p[0]["unix_ms"] == p[1])
all_ok("ulid: idmint decode's uuid == str(uuid.UUID(int=value))",
       list(zip(dl, uforms)), lambda p: p[0]["uuid"] == str(p[1]))
all_ok("ulid: idmint's uuid form parses in Python with top 48 bits == unix_ms",
       dl, lambda d: uuid.UUID(d["uuid"]).int >> 80 == d["unix_ms"])
# A ULID's UUID form is just its bits: it need not have a version or variant.

# ---- hex and binary output, read back by Python ----
M = 1000
for kind, ver in (("uuid7", 7), ("uuid4", 4)):
    hx, h0, h1 = mint(kind, M, "hex")
    hu = []
    for s in hx:
        try:
            hu.append(uuid.UUID(hex=s))
        except ValueError:
            hu.append(None)
    all_ok("%s --format hex: 32 lower-case digits, uuid.UUID(hex=) gives version %d, "
           "RFC variant, .hex == line" % (kind, ver), list(zip(hx, hu)),
           lambda p: len(p[0]) == 32 and p[1].hex == p[0] and p[1].version == ver
           and p[1].variant == uuid.RFC_4122, need=M)
    bn, b0, b1 = mint(kind, M, "binary")
    bu = [uuid.UUID(bytes=b) if len(b) == 16 else None for b in bn]
    all_ok("%s --format binary: uuid.UUID(bytes=) gives version %d, RFC variant"
           % (kind, ver), bu,
           lambda u: u.version == ver and u.variant == uuid.RFC_4122, need=M)
    if ver == 7:
        all_ok("uuid7 --format hex and binary: times near now, strictly increasing",
               [hu, bu], lambda us: len(us) == M and strictly_increasing([u.int for u in us])
               and all(h0 - SLACK_MS <= u.int >> 80 <= b1 + SLACK_MS for u in us),
               need=2)
hx, h0, h1 = mint("ulid", M, "hex")
all_ok("ulid --format hex: uuid.UUID(hex=) top 48 bits near now, increasing",
       [hx], lambda xs: len(xs) == M and all(len(s) == 32 and s == s.lower() for s in xs)
       and strictly_increasing([uuid.UUID(hex=s).int for s in xs])
       and all(h0 - SLACK_MS <= uuid.UUID(hex=s).int >> 80 <= h1 + SLACK_MS for s in xs),
       need=1)
bn, b0, b1 = mint("ulid", M, "binary")
all_ok("ulid --format binary: uuid.UUID(bytes=) top 48 bits near now, increasing",
       [bn], lambda bs: len(bs) == M and all(len(b) == 16 for b in bs)
       and strictly_increasing([uuid.UUID(bytes=b).int for b in bs])
       and all(b0 - SLACK_MS <= uuid.UUID(bytes=b).int >> 80 <= b1 + SLACK_MS for b in bs),
       need=1)

# ---- the other way: UUIDs Python makes, decoded by idmint ----
rng = random.Random()
seed = rng.randrange(1 << 32)
rng.seed(seed)
print("  (random seed %d)" % seed)
made = []  # (text, Python's UUID)
for _ in range(100):
    made.append(uuid.uuid4())
for i in range(20):
    made.append(uuid.uuid1())
    made.append(uuid.uuid3(uuid.NAMESPACE_DNS, "host%d.example" % i))
    made.append(uuid.uuid5(uuid.NAMESPACE_URL, "urn:idmint:%d" % i))
# Random 128-bit values: every version nibble and every variant.
for _ in range(200):
    made.append(uuid.UUID(int=rng.getrandbits(128)))
VARIANT = {uuid.RESERVED_NCS: "ncs", uuid.RFC_4122: "rfc9562",
           uuid.RESERVED_MICROSOFT: "microsoft", uuid.RESERVED_FUTURE: "future"}
dm = decode([str(u) for u in made]) or []
all_ok("Python's uuid1/3/4/5 and random UUIDs: idmint decode gives the same text",
       list(zip(dm, made)), lambda p: p[0]["kind"] == "uuid" and p[0]["id"] == str(p[1]),
       need=len(made))
# Python's .version is None outside the RFC variant; compare the nibble then.
all_ok("... the same version nibble as Python's (u.version, or the nibble "
       "for non-RFC variants)", list(zip(dm, made)),
       lambda p: p[0]["version"] == (p[1].version if p[1].variant == uuid.RFC_4122
                                     else (p[1].int >> 76) & 15), need=len(made))
all_ok("... the same variant as Python's .variant",
       list(zip(dm, made)), lambda p: p[0]["variant"] == VARIANT[p[1].variant],
       need=len(made))
# UUIDv7 laid out by hand per RFC 9562 over the whole 48-bit time range,
# with Python checking the layout: idmint must read the same ms.
hand = []
for ms in [0, 1, (1 << 48) - 1, 1645557742000] + [rng.getrandbits(48) for _ in range(196)]:
    x = (ms << 80) | (7 << 76) | (rng.getrandbits(12) << 64) | (2 << 62) | rng.getrandbits(62)
    u = uuid.UUID(int=x)
    hand.append((u, ms))
all_ok("hand-made v7 (Python: version 7, RFC variant) over the whole ms range",
       hand, lambda p: p[0].version == 7 and p[0].variant == uuid.RFC_4122
       and p[0].int >> 80 == p[1], need=200)
dh = decode([str(u) for u, _ in hand]) or []
all_ok("... idmint decode: version 7 and unix_ms == the ms put in",
       list(zip(dh, hand)), lambda p: p[0]["version"] == 7
       and p[0]["unix_ms"] == p[1][1], need=200)

print("COUNTS %d %d" % (passed, failed))
PY

python3 "$T/check.py" "$BIN" >"$T/py.out" 2>"$T/py.err"
rc=$?
grep -v '^COUNTS ' "$T/py.out"
cat "$T/py.err" >&2
counts=$(grep '^COUNTS ' "$T/py.out" | tail -n 1)
if [ -z "$counts" ]; then
    echo "FAIL - the Python checker stopped early (exit $rc)"
    echo "0 passed, 1 failed"
    exit 1
fi
read -r _ PASS FAIL <<<"$counts"
if [ "$rc" -ne 0 ] && [ "$FAIL" -eq 0 ]; then
    FAIL=1
fi
if [ "$PASS" -eq 0 ]; then
    FAIL=$((FAIL + 1))
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
