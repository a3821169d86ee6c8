/* SPDX-License-Identifier: MIT */
/*
 * Node.js peers for idmint's 128-bit ids (UUIDv7, UUIDv4, ULID).
 *
 *   node bench128.js --dir INSTALL_DIR [--seconds S] [--rounds N] [--ref FILE]
 *
 * As bench.js: INSTALL_DIR holds node_modules with the packages of
 * package.json; each peer runs in a child process of its own: a warm-up,
 * then N rounds (default 3) of a tight loop of generator calls for S seconds
 * (default 1) of process.hrtime, reporting the median round, then an untimed
 * check of ids from the same generator: monotonic generators must strictly
 * increase, the others must not repeat, and every id must have the right
 * form. FILE (written by idm_bench128 --ref-out) gives idmint's figure for
 * the same form (text against text, bytes against bytes).
 */
'use strict';

const { measure, peerRequire, pkgVersion, emit, pad, si, readRef, parseArgs, roundsText, runPeer } =
  require('./harness.js');

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

function uuidTextOk(version) {
  return (id) => {
    const m = UUID_RE.exec(id);
    return m !== null && m[1] === String(version);
  };
}

function uuidBytesOk(version) {
  return (b) => b.length === 16 && b[6] >> 4 === version && (b[8] & 0xc0) === 0x80;
}

/* Bytes written into one reused Buffer: the check keeps a copy of each. */
const copyBuf = (b) => Buffer.from(b);
const same = (x) => x;
const cmpBuf = (a, b) => Buffer.compare(a, b);
const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const keyBuf = (b) => b.toString('hex');

/*
 * Each peer: its package, the call, what it returns, the idmint figure it is
 * compared with (a key of the ref file and the item), whether its ids must
 * increase, and how to check one id.
 */
const PEERS = [
  {
    key: 'uuid-v7',
    pkg: 'uuid',
    call: 'v7()',
    produces: 'string',
    ref: 'uuid7_text_ns',
    item: '10',
    monotonic: true,
    make(req) {
      const { v7 } = req('uuid');
      return () => v7();
    },
    keep: same,
    cmp: cmpStr,
    setKey: same,
    ok: uuidTextOk(7),
  },
  {
    key: 'uuid-v7-buf',
    pkg: 'uuid',
    call: 'v7(undefined, buf)',
    produces: '16 bytes',
    ref: 'uuid7_ns',
    item: '6',
    monotonic: true,
    make(req) {
      const { v7 } = req('uuid');
      const buf = Buffer.alloc(16);
      return () => v7(undefined, buf);
    },
    keep: copyBuf,
    cmp: cmpBuf,
    setKey: keyBuf,
    ok: uuidBytesOk(7),
  },
  {
    key: 'uuid-v4',
    pkg: 'uuid',
    call: 'v4()',
    produces: 'string',
    ref: 'uuid4_text_ns',
    item: '12',
    monotonic: false,
    make(req) {
      const { v4 } = req('uuid');
      return () => v4();
    },
    keep: same,
    cmp: cmpStr,
    setKey: same,
    ok: uuidTextOk(4),
  },
  {
    key: 'uuid-v4-buf',
    pkg: 'uuid',
    call: 'v4(undefined, buf)',
    produces: '16 bytes',
    ref: 'uuid4_ns',
    item: '7',
    monotonic: false,
    make(req) {
      const { v4 } = req('uuid');
      const buf = Buffer.alloc(16);
      return () => v4(undefined, buf);
    },
    keep: copyBuf,
    cmp: cmpBuf,
    setKey: keyBuf,
    ok: uuidBytesOk(4),
  },
  {
    key: 'ulid',
    pkg: 'ulid',
    call: 'ulid()',
    produces: 'string',
    ref: 'ulid_text_ns',
    item: '9',
    monotonic: false,
    make(req) {
      const { ulid } = req('ulid');
      return () => ulid();
    },
    keep: same,
    cmp: cmpStr,
    setKey: same,
    ok: (id) => ULID_RE.test(id),
  },
  {
    key: 'ulid-monotonic',
    pkg: 'ulid',
    call: 'monotonicFactory()()',
    produces: 'string',
    ref: 'ulid_text_ns',
    item: '9',
    monotonic: true,
    make(req) {
      const { monotonicFactory } = req('ulid');
      const next = monotonicFactory();
      return () => next();
    },
    keep: same,
    cmp: cmpStr,
    setKey: same,
    ok: (id) => ULID_RE.test(id),
  },
];

/* Up to max ids (or seconds) from the same generator, untimed: count ids of
 * the wrong form, ids not above their predecessor (monotonic peers) and
 * repeats (all). */
function check(peer, gen, max, seconds) {
  const ids = [];
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  while (ids.length < max) {
    for (let i = 0; i < 256 && ids.length < max; i++) ids.push(peer.keep(gen()));
    if (process.hrtime.bigint() >= end) break;
  }
  let badForm = 0;
  let notIncreasing = 0;
  const seen = new Set();
  let repeats = 0;
  for (let i = 0; i < ids.length; i++) {
    if (!peer.ok(ids[i])) badForm++;
    if (peer.monotonic && i > 0 && peer.cmp(ids[i], ids[i - 1]) <= 0) notIncreasing++;
    const k = peer.setKey(ids[i]);
    if (seen.has(k)) repeats++;
    else seen.add(k);
  }
  const last = ids[ids.length - 1];
  return {
    checked: ids.length,
    badForm,
    notIncreasing,
    repeats,
    sample: Buffer.isBuffer(last) ? last.toString('hex') : String(last),
  };
}

function runChild(key, opt) {
  const peer = PEERS.find((p) => p.key === key);
  const version = pkgVersion(opt.dir, peer.pkg);
  const gen = peer.make(peerRequire(opt.dir));
  const { t, spread } = measure(gen, opt.seconds, opt.rounds);
  const c = check(peer, gen, 200000, 0.5);
  emit({ version, spread, ...t, ...c });
}

function main() {
  const opt = parseArgs('bench128.js');
  if (opt.peer) {
    runChild(opt.peer, opt);
    return;
  }

  const ref = readRef(opt.ref);
  process.stdout.write(`\nNode.js peers, 128-bit ids (node ${process.version}; one child process each: ` +
    `${roundsText(opt)})\n`);
  process.stdout.write(
    pad('peer', 16) + pad('call', 21) + pad('produces', 9) + pad('ns/id', 9) + pad('ids/s', 8) +
    pad('idmint/peer', 19) + pad('spread ns/id', 16) + 'check\n');
  const samples = [];
  for (const peer of PEERS) {
    const { res, why } = runPeer(__filename, peer.key, opt);
    if (!res) {
      process.stdout.write(pad(peer.pkg, 16) + pad(peer.call, 21) + `skipped: ${why}\n`);
      continue;
    }
    const nsPerId = res.ns / res.n;
    const rate = res.n * 1e9 / res.ns;
    const vs = ref[peer.ref] ? `${(nsPerId / ref[peer.ref]).toFixed(1)} (item ${peer.item})` : '-';
    const problems = [];
    if (res.badForm) problems.push(`BAD FORM: ${res.badForm}`);
    if (res.notIncreasing) problems.push(`NOT INCREASING: ${res.notIncreasing}`);
    if (res.repeats) problems.push(`REPEATS: ${res.repeats}`);
    const chk = problems.length === 0 ? `ok (${res.checked} ids)`
      : `${problems.join(', ')} of ${res.checked} ids`;
    process.stdout.write(
      pad(`${peer.pkg} ${res.version}`, 16) + pad(peer.call, 21) + pad(peer.produces, 9) +
      pad(nsPerId.toFixed(1), 9) + pad(si(rate), 8) + pad(vs, 19) +
      pad(`${res.spread[0].toFixed(1)}..${res.spread[1].toFixed(1)}`, 16) + chk + '\n');
    samples.push(`${peer.call} ${res.sample}`);
    if (res.thrown) samples.push(`  (${peer.call}: ${res.thrown} calls threw in the reported round)`);
  }
  process.stdout.write('idmint/peer = peer ns/id / idmint ns/id of the item named, the same form ' +
    '(text or 16 bytes); > 1: idmint faster.\n' +
    'check: untimed, from the same generator: monotonic calls must strictly increase, none may repeat, ' +
    'all must have the right form.\n');
  if (samples.length) process.stdout.write('e.g. ' + samples.join('; ') + '\n');
}

main();
