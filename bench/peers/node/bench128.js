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

const path = require('path');
const fs = require('fs');
const { createRequire } = require('module');
const { spawnSync } = require('child_process');

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

let sink; // keeps the last id alive so the loop is not dead code

function timed(gen, seconds) {
  let n = 0;
  let thrown = 0;
  let last;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(seconds * 1e9));
  let now;
  for (;;) {
    for (let i = 0; i < 256; i++) {
      try {
        last = gen();
        n++;
      } catch (e) {
        thrown++;
      }
    }
    now = process.hrtime.bigint();
    if (now >= end) break;
  }
  sink = last;
  return { n, thrown, ns: Number(now - t0) };
}

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

function runChild(key, dir, seconds, rounds) {
  const peer = PEERS.find((p) => p.key === key);
  const req = createRequire(path.join(dir, 'package.json'));
  let version = '?';
  try {
    const pj = path.join(dir, 'node_modules', peer.pkg, 'package.json');
    version = JSON.parse(fs.readFileSync(pj, 'utf8')).version;
  } catch (e) {
    /* keep '?' */
  }
  const gen = peer.make(req);
  timed(gen, Math.min(0.5, seconds / 2)); // warm-up: let the JIT settle
  const runs = [];
  for (let r = 0; r < rounds; r++) runs.push(timed(gen, seconds));
  runs.sort((a, b) => a.ns / a.n - b.ns / b.n);
  const t = runs[Math.floor((runs.length - 1) / 2)]; // the median round
  const spread = [runs[0].ns / runs[0].n, runs[runs.length - 1].ns / runs[runs.length - 1].n];
  const c = check(peer, gen, 200000, 0.5);
  process.stdout.write(JSON.stringify({ version, spread, ...t, ...c }) + '\n');
}

function pad(s, n) {
  s = String(s);
  return s.length >= n ? s + ' ' : s + ' '.repeat(n - s.length);
}

function si(x) {
  if (x >= 1e9) return (x / 1e9).toPrecision(4) + 'G';
  if (x >= 1e6) return (x / 1e6).toPrecision(4) + 'M';
  if (x >= 1e3) return (x / 1e3).toPrecision(4) + 'k';
  return x.toPrecision(4);
}

function readRef(file) {
  const ref = {};
  if (!file) return ref;
  try {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const [k, v] = line.trim().split(/\s+/);
      if (k && v !== undefined) ref[k] = Number(v);
    }
  } catch (e) {
    process.stdout.write(`note: no idmint figures (${e.message}); ratios omitted\n`);
  }
  return ref;
}

function main() {
  const args = process.argv.slice(2);
  const opt = { dir: null, seconds: 1, rounds: 3, ref: null, peer: null };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--dir') opt.dir = path.resolve(args[++i]);
    else if (a === '--seconds') opt.seconds = Number(args[++i]);
    else if (a === '--rounds') opt.rounds = Math.max(1, Math.min(9, Number(args[++i]) | 0));
    else if (a === '--ref') opt.ref = args[++i];
    else if (a === '--peer') opt.peer = args[++i];
    else {
      process.stderr.write(`bench128.js: unknown argument ${a}\n`);
      process.exit(1);
    }
  }
  if (!opt.dir || !(opt.seconds > 0)) {
    process.stderr.write('usage: node bench128.js --dir INSTALL_DIR [--seconds S] [--rounds N] [--ref FILE]\n');
    process.exit(1);
  }
  if (opt.peer) {
    runChild(opt.peer, opt.dir, opt.seconds, opt.rounds);
    return;
  }

  const ref = readRef(opt.ref);
  process.stdout.write(`\nNode.js peers, 128-bit ids (node ${process.version}; one child process each: ` +
    `a warm-up, then ${opt.rounds} round${opt.rounds === 1 ? '' : 's'} of ${opt.seconds} s, median round)\n`);
  process.stdout.write(
    pad('peer', 16) + pad('call', 21) + pad('produces', 9) + pad('ns/id', 9) + pad('ids/s', 8) +
    pad('idmint/peer', 19) + pad('spread ns/id', 16) + 'check\n');
  const samples = [];
  for (const peer of PEERS) {
    const r = spawnSync(process.execPath,
      [__filename, '--peer', peer.key, '--dir', opt.dir, '--seconds', String(opt.seconds),
        '--rounds', String(opt.rounds)],
      { encoding: 'utf8', timeout: (opt.seconds * (opt.rounds + 2) + 30) * 1000 });
    const line = (r.stdout || '').trim().split('\n').pop();
    let res = null;
    try {
      res = JSON.parse(line);
    } catch (e) {
      /* below */
    }
    if (r.status !== 0 || !res) {
      const why = ((r.stderr || '').trim().split('\n').find((l) => /Error|error/.test(l)) ||
        (r.error ? r.error.message : `exit ${r.status}`)).trim();
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
