// SPDX-License-Identifier: MIT
// The Node.js binding of idmint against the npm packages a Node service
// would use instead, in one run (never fails on speed):
//   Snowflake: nextId() against @sapphire/snowflake and flake-idgen, in a
//     burst of 200k ids: ids/s and duplicates. Target: no duplicate, at the
//     layout's cap (4,096 ids a ms: a burst cannot go faster without
//     repeating or running ahead of the clock).
//   UUIDv7: uuidv7() against npm uuid's v7 (target: >= 20x), and for
//     information uuidv4() against uuid's v4 and ulid() against npm ulid.
//
//   node bindings.js --dir PEERS_DIR --idmint PACKAGE_DIR [--seconds S] [--rounds N]
//
// PEERS_DIR holds node_modules with the packages of package.json here;
// PACKAGE_DIR is the installed idmint package (its build/idmint.node built).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const BURST = 200000;
const CAP_PER_MS = 4096;
const UUID7_TARGET = 20;
const TWITTER_EPOCH = 1288834974657;

function args() {
  const a = process.argv.slice(2);
  const o = { dir: null, idmint: null, seconds: 1, rounds: 3 };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '--dir') o.dir = path.resolve(a[++i]);
    else if (a[i] === '--idmint') o.idmint = path.resolve(a[++i]);
    else if (a[i] === '--seconds') o.seconds = Number(a[++i]);
    else if (a[i] === '--rounds') o.rounds = Math.max(1, Math.min(9, Number(a[++i]) | 0));
    else {
      console.error(`bindings.js: unknown argument ${a[i]}`);
      process.exit(1);
    }
  }
  if (!o.dir || !o.idmint || !(o.seconds > 0)) {
    console.error('usage: node bindings.js --dir PEERS_DIR --idmint PACKAGE_DIR [--seconds S] [--rounds N]');
    process.exit(1);
  }
  return o;
}

// The installed version of pkg under dir (read from its package.json: some
// packages' "exports" keep require() away from it), or '?'.
function version(dir, pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

// A burst of n ids as fast as gen gives them (a call that throws is
// retried and counted): ids/s over the burst, and how many repeat.
function burst(gen, key, n) {
  const ids = new Array(n);
  let thrown = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n;) {
    try {
      ids[i] = gen();
      i++;
    } catch {
      thrown++;
    }
  }
  const ns = Number(process.hrtime.bigint() - t0);
  const seen = new Set();
  for (const id of ids) seen.add(key(id));
  return { rate: n / (ns / 1e9), dups: n - seen.size, thrown };
}

// The median of rounds bursts, by rate, after one to warm up the JIT.
function medianBurst(gen, key, rounds) {
  burst(gen, key, BURST);
  const runs = [];
  for (let r = 0; r < rounds; r++) runs.push(burst(gen, key, BURST));
  runs.sort((a, b) => a.rate - b.rate);
  const m = runs[Math.floor((runs.length - 1) / 2)];
  return { ...m, dups: Math.max(...runs.map((r) => r.dups)) };
}

let sink;
// Calls a second (median of rounds after a warm-up) of a tight loop.
function rate(gen, seconds, rounds) {
  const once = (s) => {
    let n = 0;
    const t0 = process.hrtime.bigint();
    const end = t0 + BigInt(Math.round(s * 1e9));
    let now;
    do {
      for (let i = 0; i < 256; i++) sink = gen();
      n += 256;
      now = process.hrtime.bigint();
    } while (now < end);
    return n / (Number(now - t0) / 1e9);
  };
  once(Math.min(0.3, seconds / 2));
  const r = [];
  for (let i = 0; i < rounds; i++) r.push(once(seconds));
  r.sort((a, b) => a - b);
  return r[Math.floor((r.length - 1) / 2)];
}

function fmt(x) {
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)}M`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)}k`;
  return x.toFixed(0);
}

function pad(s, n) {
  s = String(s);
  return s.length >= n ? `${s} ` : s + ' '.repeat(n - s.length);
}

function main() {
  const o = args();
  const req = createRequire(path.join(o.dir, 'package.json'));
  const idmint = require(o.idmint);
  const cap = CAP_PER_MS * 1000;
  let pass = 0;
  let below = 0;
  const verdict = (ok) => {
    if (ok) pass++;
    else below++;
    return ok ? 'PASS' : 'BELOW';
  };

  console.log(`== idmint for Node.js against npm peers (node ${process.version}) ==`);
  console.log(`Snowflake: bursts of ${BURST} ids, a warm-up then ${o.rounds}, median by rate; ` +
              `duplicates: the most in any burst; the layouts' cap ${fmt(cap)} ids/s`);
  const rows = [];
  const g = idmint.createGenerator({ layout: 'twitter', node: { datacenter: 1, worker: 1 } });
  rows.push(['idmint nextId()', medianBurst(() => g.nextId(), (x) => x, o.rounds)]);
  rows.push(['idmint nextBigInt()', medianBurst(() => g.nextBigInt(), (x) => x, o.rounds)]);
  try {
    const { Snowflake } = req('@sapphire/snowflake');
    const s = new Snowflake(BigInt(TWITTER_EPOCH));
    rows.push([`@sapphire/snowflake ${version(o.dir, '@sapphire/snowflake')}`,
      medianBurst(() => s.generate(), (x) => x, o.rounds)]);
  } catch (e) {
    console.log(`@sapphire/snowflake: skipped: ${e.message}`);
  }
  try {
    const FlakeId = req('flake-idgen');
    const f = new FlakeId({ datacenter: 1, worker: 1, epoch: TWITTER_EPOCH });
    rows.push([`flake-idgen ${version(o.dir, 'flake-idgen')}`,
      medianBurst(() => f.next(), (b) => b.toString('hex'), o.rounds)]);
  } catch (e) {
    console.log(`flake-idgen: skipped: ${e.message}`);
  }
  const ours = rows[0][1];
  console.log(`${pad('generator', 28)}${pad('ids/s', 10)}${pad('of cap', 8)}${pad('duplicates', 12)}` +
              `${pad('thrown', 8)}idmint nextId() against it`);
  for (const [name, r] of rows) {
    console.log(`${pad(name, 28)}${pad(fmt(r.rate), 10)}${pad(`${(100 * r.rate / cap).toFixed(0)}%`, 8)}` +
                `${pad(`${r.dups} (${(100 * r.dups / BURST).toFixed(1)}%)`, 12)}${pad(r.thrown, 8)}` +
                `${(ours.rate / r.rate).toFixed(2)}x ids/s`);
  }
  g.close();
  console.log(`idmint nextId(), 200k burst: ${ours.dups} duplicates (target 0) ${verdict(ours.dups === 0)}`);
  console.log(`idmint nextId(), 200k burst: ${(100 * ours.rate / cap).toFixed(0)}% of the cap ` +
              `(target >= 90%) ${verdict(ours.rate >= 0.9 * cap)}`);

  console.log('');
  console.log(`128-bit ids: ${o.rounds} rounds of ${o.seconds} s after a warm-up, median`);
  const pairs = [
    ['uuidv7', () => idmint.uuidv7(), 'uuid', (u) => () => u.v7(), UUID7_TARGET],
    ['uuidv4', () => idmint.uuidv4(), 'uuid', (u) => () => u.v4(), 0],
    ['ulid', () => idmint.ulid(), 'ulid', (u) => u.monotonicFactory(), 0],
  ];
  let uuid7Peer = 0;
  for (const [name, ours128, pkg, make, target] of pairs) {
    const a = rate(ours128, o.seconds, o.rounds);
    let line = `${pad(`idmint ${name}()`, 20)}${pad(`${fmt(a)}/s`, 10)}${pad(`${(1e9 / a).toFixed(0)} ns`, 9)}`;
    try {
      const peer = make(req(pkg));
      const b = rate(peer, o.seconds, o.rounds);
      if (name === 'uuidv7') uuid7Peer = b;
      line += `against npm ${pkg} ${version(o.dir, pkg)}: ${fmt(b)}/s ${(1e9 / b).toFixed(0)} ns, ` +
              `${(a / b).toFixed(1)}x`;
      if (target) line += ` (target >= ${target}x) ${verdict(a / b >= target)}`;
    } catch (e) {
      line += `npm ${pkg}: skipped: ${e.message}`;
    }
    console.log(line);
  }
  // The floors every figure above stands on, in this run: a call into a
  // native addon that does nothing, and one read of the clock from
  // JavaScript (a UUIDv7 needs the time of each id; npm uuid's v7 reads
  // Date.now() once an id). A ratio target that asks for less time an id
  // than the addon's floor cannot be met by any native binding.
  const floor = rate(require(path.join(o.idmint, 'build', 'idmint.node'))._callFloor, o.seconds, o.rounds);
  const now = rate(Date.now, o.seconds, o.rounds);
  console.log(`floors: a call into the addon that does nothing ${(1e9 / floor).toFixed(0)} ns; ` +
              `Date.now() ${(1e9 / now).toFixed(0)} ns`);
  if (uuid7Peer) {
    const need = 1e9 / uuid7Peer / UUID7_TARGET;
    console.log(`uuidv7 at ${UUID7_TARGET}x npm uuid's v7 would be ${need.toFixed(0)} ns an id: ` +
                `${(need / (1e9 / floor)).toFixed(2)}x the addon's call floor`);
  }
  console.log(`targets: ${pass} PASS, ${below} BELOW (BELOW is reported, never fatal)`);
}

main();
