#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# idmint's UUIDs and ULIDs against the JavaScript implementations most
# people use: the npm packages uuid and ulid, pinned to exact versions. They
# were written by other people from the same specifications, so agreement in
# both directions is evidence that idmint reads the specifications as
# everyone else does.
#
# The packages are installed fresh on every run (npm install, no lock file)
# into $IDM_BUILD_DIR/interop-node, or a temp dir when IDM_BUILD_DIR is not
# set; never into the source tree. If npm cannot install them the test FAILS:
# a missing package is a broken test machine, not a reason to pass.
#
# Checked with node (one count per property over the whole set):
#   - idmint -> npm: 10,000 uuid7 and 10,000 uuid4: validate() is true,
#     version() is 7 / 4, stringify(parse(s)) gives back s. 10,000 ULIDs:
#     ulid's decodeTime() equals idmint decode's unix_ms and lies near the
#     time of minting.
#   - npm -> idmint: 1,000 each of uuid's v7() and v4(), ulid's ulid() and
#     monotonicFactory(): idmint decode accepts them with the right kind,
#     version, variant and time; v7 and ulid with chosen times over the whole
#     48-bit range decode to exactly those times; a monotonic factory's ULIDs
#     of one millisecond decode to 128-bit values one apart.
#   - Malformed and edge input, with each side's verdict asserted; where the
#     two differ a "difference:" line says so.
#
# Usage: bash test_npm_ids.sh /path/to/idmint
# Ends with one line "N passed, N failed"; exits non-zero if any check failed.

set -uo pipefail

UUID_PKG=10.0.0 # the 10.x line: the first with v7(); runs on Node 16 and later
ULID_PKG=2.3.0

BIN=${1:-}
die() {
    echo "test_npm_ids.sh: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}
[ -n "$BIN" ] && [ -x "$BIN" ] || die "no idmint binary given or not executable: '$BIN'"
command -v node >/dev/null 2>&1 || die "node is missing (install nodejs)"
command -v npm >/dev/null 2>&1 || die "npm is missing (install npm)"

T=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$T"' EXIT
export LC_ALL=C

if [ -n "${IDM_BUILD_DIR:-}" ]; then
    NODE_DIR="$IDM_BUILD_DIR/interop-node"
else
    NODE_DIR="$T/node"
fi
mkdir -p "$NODE_DIR" || die "cannot create '$NODE_DIR'"
printf '{"name":"idmint-interop","version":"0.0.0","private":true}\n' >"$NODE_DIR/package.json"
echo "installing uuid@$UUID_PKG ulid@$ULID_PKG with npm"
if ! (cd "$NODE_DIR" && timeout 300 npm install --no-audit --no-fund --no-package-lock \
    --no-save --loglevel=error "uuid@$UUID_PKG" "ulid@$ULID_PKG") >"$T/npm.log" 2>&1; then
    tail -n 20 "$T/npm.log" >&2
    die "npm install of uuid@$UUID_PKG ulid@$ULID_PKG failed (is the npm registry reachable?)"
fi

cat >"$T/check.js" <<'JS'
'use strict';
const { spawnSync } = require('child_process');
const { createRequire } = require('module');
const fs = require('fs');
const path = require('path');

const [BIN, NODE_DIR, UUID_PKG, ULID_PKG] = process.argv.slice(2);
const N = 10000;
const M = 1000;
const SLACK_MS = 5000;
let passed = 0;
let failed = 0;

function check(desc, ok, detail) {
  if (ok) {
    passed++;
    console.log('ok - ' + desc);
  } else {
    failed++;
    console.log('FAIL - ' + desc + (detail ? ': ' + detail : ''));
  }
}

// One check: pred holds for every item and there are `need` of them (an
// empty list never passes). A throwing pred is a failure of that item.
function allOk(desc, items, pred, need) {
  const bad = [];
  for (const x of items) {
    let good;
    try {
      good = pred(x);
    } catch (e) {
      good = false;
    }
    if (!good && bad.push(x) >= 3) break;
  }
  check(desc, items.length === need && bad.length === 0,
        `${items.length} items (want ${need}), first bad: ${JSON.stringify(bad)}`);
}

function throws(f) {
  try {
    f();
    return false;
  } catch (e) {
    return true;
  }
}

function run(args) {
  const p = spawnSync(BIN, args, { encoding: 'latin1', maxBuffer: 1 << 26, timeout: 120000 });
  return { rc: p.status, out: p.stdout || '', err: (p.stderr || '') + (p.error ? String(p.error) : '') };
}

function mint(kind, n) {
  const t0 = Date.now();
  const r = run([kind, '-n', String(n)]);
  const t1 = Date.now();
  const lines = r.out.split('\n');
  const whole = lines.pop() === '';
  check(`idmint ${kind} -n ${n}: exit 0, ${n} lines`, r.rc === 0 && whole && lines.length === n,
        `exit ${r.rc}, ${lines.length} lines, stderr ${JSON.stringify(r.err.slice(0, 200))}`);
  return { ids: lines, t0, t1 };
}

// idmint decode --json over ids, 1000 a run, telling each id's kind from
// its form unless kind is given; [] if any run failed.
function decode(ids, kind) {
  const res = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000);
    const r = run(['decode', '--json', ...(kind ? ['--kind', kind] : []), '--', ...chunk]);
    const lines = r.out.split('\n');
    if (r.rc !== 0 || lines.pop() !== '' || lines.length !== chunk.length) {
      console.log(`  idmint decode failed: exit ${r.rc}, stderr ${JSON.stringify(r.err.slice(0, 200))}`);
      return [];
    }
    for (const l of lines) {
      try {
        res.push(JSON.parse(l));
      } catch (e) {
        res.push(null);
      }
    }
  }
  return res;
}
const zip = (a, b) => a.map((x, i) => [x, b[i]]);

const req = createRequire(path.join(NODE_DIR, 'package.json'));
const pkgVersion = (name) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(NODE_DIR, 'node_modules', name, 'package.json'))).version;
  } catch (e) {
    return 'none';
  }
};
check(`installed uuid@${UUID_PKG} and ulid@${ULID_PKG}`,
      pkgVersion('uuid') === UUID_PKG && pkgVersion('ulid') === ULID_PKG,
      `found uuid@${pkgVersion('uuid')} ulid@${pkgVersion('ulid')}`);
const uuid = req('uuid');
const ULID = req('ulid');

// ---- idmint -> npm ----
for (const [kind, ver] of [['uuid7', 7], ['uuid4', 4]]) {
  const { ids } = mint(kind, N);
  allOk(`${kind}: uuid.validate() is true for every one`, ids, (s) => uuid.validate(s), N);
  allOk(`${kind}: uuid.version() is ${ver}`, ids, (s) => uuid.version(s) === ver, N);
  allOk(`${kind}: uuid.stringify(uuid.parse(s)) === s`, ids, (s) => uuid.stringify(uuid.parse(s)) === s, N);
}
{
  const { ids, t0, t1 } = mint('ulid', N);
  const times = ids.map((s) => { try { return ULID.decodeTime(s); } catch (e) { return -1; } });
  allOk('ulid: ulid.decodeTime() reads every one, near the time of minting', times,
        (t) => t >= t0 - SLACK_MS && t <= t1 + SLACK_MS, N);
  const dec = decode(ids);
  allOk("ulid: idmint decode: kind ulid, same id, unix_ms === ulid.decodeTime()",
        zip(dec, zip(ids, times)),
        ([d, [s, t]]) => d.kind === 'ulid' && d.id === s && d.unix_ms === t && t >= 0, N);
}

// ---- npm -> idmint ----
{
  const t0 = Date.now();
  const ids = [];
  for (let i = 0; i < M; i++) ids.push(uuid.v7());
  const t1 = Date.now();
  const dec = decode(ids);
  allOk('uuid.v7(): idmint decode: kind uuid, version 7, variant rfc9562, same text',
        zip(dec, ids), ([d, s]) => d.kind === 'uuid' && d.version === 7 && d.variant === 'rfc9562' && d.id === s, M);
  // uuid@10 v7() keeps its own counter and may run its time a little ahead
  // of the clock when the counter overflows; 1,000 ids do not get there.
  allOk('uuid.v7(): idmint unix_ms within the time of minting, never decreasing',
        dec.map((d, i) => [d, i === 0 ? null : dec[i - 1]]),
        ([d, prev]) => d.unix_ms >= t0 && d.unix_ms <= t1 && (prev === null || prev.unix_ms <= d.unix_ms), M);

  // Chosen times. uuid@10.0.0 ignores options.msecs unless options.seq is
  // given too (its timestamp comes out 0; fixed in later major versions), so
  // pass a seq.
  const edges = [0, 1, 1645557742000, 2 ** 48 - 1];
  while (edges.length < 100) edges.push(Math.floor(Math.random() * 2 ** 48));
  const chosen = edges.map((ms) => uuid.v7({ msecs: ms, seq: Math.floor(Math.random() * 2 ** 31) }));
  allOk('uuid.v7({msecs, seq}) itself puts msecs in the top 48 bits',
        zip(chosen, edges), ([s, ms]) => parseInt(s.replace(/-/g, '').slice(0, 12), 16) === ms, 100);
  allOk('uuid.v7({msecs}) over the whole 48-bit range: idmint unix_ms === msecs',
        zip(decode(chosen), edges), ([d, ms]) => d.version === 7 && d.unix_ms === ms, 100);
}
{
  const ids = [];
  for (let i = 0; i < M; i++) ids.push(uuid.v4());
  allOk('uuid.v4(): idmint decode: version 4, variant rfc9562, no time, same text',
        zip(decode(ids), ids),
        ([d, s]) => d.kind === 'uuid' && d.version === 4 && d.variant === 'rfc9562' && !('unix_ms' in d) && d.id === s, M);
}
{
  const t0 = Date.now();
  const ids = [];
  for (let i = 0; i < M; i++) ids.push(ULID.ulid());
  const t1 = Date.now();
  allOk('ulid.ulid(): idmint decode: kind ulid, same text, unix_ms === decodeTime(), near now',
        zip(decode(ids), ids),
        ([d, s]) => d.kind === 'ulid' && d.id === s && d.unix_ms === ULID.decodeTime(s) &&
          d.unix_ms >= t0 && d.unix_ms <= t1, M);

  // Random times reach ULIDs that begin with 0X (below), so these go
  // through --kind ulid: this check is about reading the time.
  const edges = [0, 1, 1645557742000, 2 ** 48 - 1];
  while (edges.length < 100) edges.push(Math.floor(Math.random() * 2 ** 48));
  const chosen = edges.map((ms) => ULID.ulid(ms));
  allOk('ulid.ulid(seedTime) over the whole 48-bit range: idmint decode --kind ulid unix_ms === seedTime',
        zip(decode(chosen, 'ulid'), edges), ([d, ms]) => d.kind === 'ulid' && d.unix_ms === ms, 100);
  // A ULID of the years 2980 to 3015 (ms from 29 * 2^40 to 30 * 2^40 - 1)
  // begins with 0X, like a Snowflake-style id in hex. idmint decode's usage
  // says 26 characters are a ULID, and a hex Snowflake-style id has at most
  // 18; the ulid package makes such ULIDs, so without --kind too they must
  // decode as ULIDs.
  const xs = [29 * 2 ** 40, 30 * 2 ** 40 - 1].map((ms) => [ULID.ulid(ms), ms]);
  xs.push([xs[0][0].toLowerCase(), xs[0][1]]);
  allOk('ULIDs beginning with 0X or 0x: idmint decode (no --kind) reads them as ULIDs with their time',
        xs, ([s, ms]) => {
          const d = decode([s]);
          return /^0X/i.test(s) && d.length === 1 && d[0].kind === 'ulid' && d[0].unix_ms === ms;
        }, 3);

  // A monotonic factory given one time: each ULID is the previous plus 1.
  const next = ULID.monotonicFactory();
  const seed = Date.now();
  const mono = [];
  for (let i = 0; i < M; i++) mono.push(next(seed));
  const md = decode(mono);
  const big = md.map((d) => { try { return BigInt('0x' + d.uuid.replace(/-/g, '')); } catch (e) { return null; } });
  allOk('monotonicFactory(): idmint decode: unix_ms === seedTime, uuid form consistent',
        md, (d) => d.kind === 'ulid' && d.unix_ms === seed &&
          BigInt('0x' + d.uuid.replace(/-/g, '')) >> 80n === BigInt(seed), M);
  allOk("monotonicFactory(): idmint's 128-bit values go up by exactly 1",
        big.slice(1).map((b, i) => [big[i], b]), ([a, b]) => a !== null && b === a + 1n, M - 1);
  const unmoved = ULID.monotonicFactory();
  const live = [];
  for (let i = 0; i < M; i++) live.push(unmoved());
  const lb = decode(live).map((d) => BigInt('0x' + d.uuid.replace(/-/g, '')));
  allOk("monotonicFactory() on the clock: idmint's 128-bit values strictly increase",
        lb.slice(1).map((b, i) => [lb[i], b]), ([a, b]) => b > a, M - 1);
}

// ---- malformed and edge input: each side's verdict ----
const G = '017f22e2-79b0-7cc3-98c4-dc0c0c07398f';
const L = '01M8P3HTG23WWEBEPQ355NDM3E';
const idmAccepts = (s, kind) => run(['decode', '--json', '--kind', kind, '--', s]).rc === 0;
const uuidCases = [
  // [text, validate(), idmint decode, note]
  [G, true, true, 'canonical v7'],
  [G.toUpperCase(), true, true, 'upper case'],
  ['00000000-0000-0000-0000-000000000000', true, true, 'nil UUID'],
  ['ffffffff-ffff-ffff-ffff-ffffffffffff', true, true, 'max UUID'],
  ['017f22e2-79b0-7cc3-c8c4-dc0c0c07398f', false, true, 'Microsoft variant (110)'],
  ['017f22e2-79b0-7cc3-08c4-dc0c0c07398f', false, true, 'NCS variant (0xx)'],
  ['017f22e2-79b0-0cc3-98c4-dc0c0c07398f', false, true, 'version 0'],
  ['017f22e2-79b0-9cc3-98c4-dc0c0c07398f', false, true, 'version 9'],
  ['017f22e2-79b0-8cc3-98c4-dc0c0c07398f', true, true, 'version 8'],
  [G.replace(/-/g, ''), false, false, 'no dashes'],
  ['{' + G + '}', false, false, 'in braces'],
  [G.slice(0, 35), false, false, 'one digit short'],
  [G + '0', false, false, 'one digit too many'],
  [G.slice(0, 35) + 'g', false, false, 'non-hex digit'],
];
for (const [s, wantV, wantI, note] of uuidCases) {
  const v = uuid.validate(s);
  const i = idmAccepts(s, 'uuid');
  check(`uuid.validate(${s}) (${note}) is ${wantV}`, v === wantV, `got ${v}`);
  check(`idmint decode --kind uuid ${s} (${note}) ${wantI ? 'accepts' : 'rejects'}`, i === wantI, `got ${i}`);
  if (wantV !== wantI) {
    console.log(`difference: ${s} (${note}): uuid.validate ${wantV}, idmint decode ${wantI ? 'accepts' : 'rejects'}`);
  }
}
const ulidCases = [
  // [text, decodeTime() reads it, idmint decode, note]
  [L, true, true, 'canonical'],
  [L.toLowerCase(), false, true, 'lower case'],
  ['7ZZZZZZZZZZZZZZZZZZZZZZZZZ', true, true, 'largest value'],
  ['8ZZZZZZZZZZZZZZZZZZZZZZZZZ', false, false, 'above 128 bits'],
  ['01M8P3HTGI3WWEBEPQ355NDM3E', false, false, 'I in the time part'],
  ['01M8P3HTGL3WWEBEPQ355NDM3E', false, false, 'L in the time part'],
  ['01M8P3HTGO3WWEBEPQ355NDM3E', false, false, 'O in the time part'],
  ['01M8P3HTGU3WWEBEPQ355NDM3E', false, false, 'U in the time part'],
  // decodeTime() looks at the first 10 characters only.
  ['01M8P3HTG23WWEBEPQ355NDM3U', true, false, 'U in the random part'],
  ['01M8P3HTG23WWEBEPQ355NDM3!', true, false, '! in the random part'],
  [L.slice(0, 25), false, false, '25 characters'],
  [L + '0', false, false, '27 characters'],
];
for (const [s, wantT, wantI, note] of ulidCases) {
  const t = !throws(() => ULID.decodeTime(s));
  const i = idmAccepts(s, 'ulid');
  check(`ulid.decodeTime(${s}) (${note}) ${wantT ? 'reads it' : 'throws'}`, t === wantT, `got ${t}`);
  check(`idmint decode --kind ulid ${s} (${note}) ${wantI ? 'accepts' : 'rejects'}`, i === wantI, `got ${i}`);
  if (wantT !== wantI) {
    console.log(`difference: ${s} (${note}): ulid.decodeTime ${wantT ? 'reads it' : 'throws'}, idmint decode ${wantI ? 'accepts' : 'rejects'}`);
  }
}
// Where both read a ULID, they agree on its time; a lower-case ULID is the
// same ULID to idmint.
{
  const d = decode([L, L.toLowerCase(), '7ZZZZZZZZZZZZZZZZZZZZZZZZZ']);
  check('idmint decode of a ULID in lower case: same id and time as upper case',
        d.length === 3 && d[1].id === L && d[1].unix_ms === d[0].unix_ms && d[0].unix_ms === ULID.decodeTime(L));
  check('largest ULID: idmint unix_ms === decodeTime() === 2^48 - 1',
        d.length === 3 && d[2].unix_ms === 2 ** 48 - 1 && ULID.decodeTime('7ZZZZZZZZZZZZZZZZZZZZZZZZZ') === 2 ** 48 - 1);
}

console.log(`COUNTS ${passed} ${failed}`);
JS

node "$T/check.js" "$BIN" "$NODE_DIR" "$UUID_PKG" "$ULID_PKG" >"$T/node.out" 2>"$T/node.err"
rc=$?
grep -v '^COUNTS ' "$T/node.out"
cat "$T/node.err" >&2
counts=$(grep '^COUNTS ' "$T/node.out" | tail -n 1)
if [ -z "$counts" ]; then
    echo "FAIL - the node checker stopped early (exit $rc)"
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
