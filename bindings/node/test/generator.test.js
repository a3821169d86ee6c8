// SPDX-License-Identifier: MIT
// Snowflake generators: minting, batches, decoding, ranges, state files,
// options and the errors bad input gets.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const idmint = require('..');

const TWITTER = { layout: 'twitter', node: { datacenter: 1, worker: 7 } };

// Ids of one layout and era as decimal strings compare by length, then text.
function less(a, b) {
  return a.length < b.length || (a.length === b.length && a < b);
}

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'idmint-node-'));
}

test('nextId: 1M ids, strictly increasing decimal strings', () => {
  const g = idmint.createGenerator(TWITTER);
  let prev = g.nextId();
  assert.match(prev, /^[1-9][0-9]*$/);
  for (let i = 1; i < 1000000; i++) {
    const id = g.nextId();
    if (!less(prev, id)) assert.fail(`id ${i} ${id} is not above ${prev}`);
    prev = id;
  }
  g.close();
});

test('nextBigInt: 1M ids, strictly increasing, unique', () => {
  const g = idmint.createGenerator(TWITTER);
  const seen = new Set();
  let prev = -1n;
  for (let i = 0; i < 1000000; i++) {
    const id = g.nextBigInt();
    if (id <= prev) assert.fail(`id ${i} ${id} is not above ${prev}`);
    seen.add(id);
    prev = id;
  }
  assert.equal(seen.size, 1000000);
  g.close();
});

test('nextId and nextBigInt share one sequence', () => {
  const g = idmint.createGenerator(TWITTER);
  const a = BigInt(g.nextId());
  const b = g.nextBigInt();
  const c = BigInt(g.nextId());
  assert.ok(a < b && b < c);
  g.close();
});

test('batches: consecutive, increasing, strings and BigInts', () => {
  const g = idmint.createGenerator(TWITTER);
  const s = g.nextBatch(5000);
  assert.equal(s.length, 5000);
  assert.ok(s.every((x) => typeof x === 'string'));
  const b = g.nextBigIntBatch(3);
  assert.ok(b.every((x) => typeof x === 'bigint'));
  const all = [...s.map(BigInt), ...b];
  for (let i = 1; i < all.length; i++) assert.ok(all[i] > all[i - 1]);
  assert.equal(new Set(all).size, all.length);
  for (const n of [0, -1, 1.5, 2e6]) {
    assert.throws(() => g.nextBatch(n), { code: 'IDM_ERANGE' }, `count ${n}`);
  }
  assert.throws(() => g.nextBatch('3'), { code: 'IDM_EINVAL' });
  g.close();
});

test('decode and idToDate give the fields and the time minted', () => {
  const g = idmint.createGenerator(TWITTER);
  const before = Date.now();
  const id = g.nextId();
  const after = Date.now();
  for (const form of [id, BigInt(id)]) {
    const d = g.decode(form);
    assert.equal(d.id, id);
    assert.deepEqual(d.fields, { datacenter: 1, worker: 7 });
    assert.ok(d.unixMs >= before && d.unixMs <= after, `${d.unixMs} in [${before}, ${after}]`);
    assert.ok(d.time instanceof Date && d.time.getTime() === d.unixMs);
    assert.equal(d.tick, d.unixMs - 1288834974657);
    assert.equal(typeof d.sequence, 'number');
    assert.equal(g.idToDate(form).getTime(), d.unixMs);
  }
  // The module-level functions take the layout by options.
  assert.deepEqual(idmint.decode(id, { layout: 'twitter' }), g.decode(id));
  assert.equal(idmint.idToDate(id).getTime(), g.idToDate(id).getTime());
  // A known answer (tests/data/snowflake_vectors.tsv): datacenter 0,
  // worker 1, sequence 0 at 2026-01-01T00:00:00Z.
  const known = idmint.decode('2006515713438650368');
  assert.equal(known.time.toISOString(), '2026-01-01T00:00:00.000Z');
  assert.deepEqual([known.fields, known.sequence], [{ datacenter: 0, worker: 1 }, 0]);
  g.close();
});

test('range: the ids of a window, for WHERE id BETWEEN', () => {
  const g = idmint.createGenerator(TWITTER);
  const from = new Date(Date.now() - 60000);
  const id = g.nextId();
  const r = g.range(from, Date.now() + 1000);
  assert.ok(!less(id, r.min) && !less(r.max, id), `${id} in [${r.min}, ${r.max}]`);
  const day = idmint.range('2026-01-01', '2026-01-02', { layout: 'twitter' });
  assert.equal(idmint.idToDate(day.min).toISOString(), '2026-01-01T00:00:00.000Z');
  assert.equal(idmint.idToDate(day.max).toISOString(), '2026-01-01T23:59:59.999Z');
  assert.throws(() => g.range(Date.now(), Date.now() - 5), { code: 'IDM_ERANGE' });
  assert.throws(() => g.range('2026-02-30', '2026-03-01'), { code: 'IDM_ERANGE' });
  assert.throws(() => g.range('yesterday', Date.now()), { code: 'IDM_EPARSE' });
  assert.throws(() => g.range({}, Date.now()), { code: 'IDM_EINVAL' });
  g.close();
});

test('layouts: presets, text forms with an epoch, info', () => {
  assert.deepEqual(idmint.layouts().slice().sort(), ['discord', 'instagram', 'sonyflake', 'twitter']);
  const g = idmint.createGenerator({
    layout: 'time:41@1ms,worker:10,seq:12', epoch: new Date('2024-01-01T00:00:00Z'), node: { worker: 5 },
  });
  const info = g.info();
  assert.equal(info.text, 'time:41@1ms,worker:10,seq:12');
  assert.equal(info.epoch, Date.parse('2024-01-01T00:00:00Z'));
  assert.equal(g.decode(g.nextId()).fields.worker, 5);
  g.close();
  for (const epoch of ['2024-01-01', 1704067200000]) {
    const l = new idmint.Layout({ layout: 'time:41@1ms,worker:10,seq:12', epoch });
    assert.equal(l.info().epoch, 1704067200000);
  }
  assert.throws(() => new idmint.Layout(null), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.decode('1', { layout: 'nosuch' }), { code: 'IDM_ELAYOUT' });
  const s = idmint.createGenerator({ layout: 'sonyflake', node: { machine: 3 } });
  assert.equal(s.info().tickMs, 10);
  assert.equal(s.decode(s.nextBigInt()).fields.machine, 3);
  s.close();
});

test('a state file is created, then refuses a second generator', () => {
  const dir = tmpdir();
  const state = path.join(dir, 'ids.state');
  const a = idmint.createGenerator({ ...TWITTER, state });
  const first = a.nextBigInt();
  assert.ok(fs.existsSync(state));
  assert.throws(() => idmint.createGenerator({ ...TWITTER, state }), { code: 'IDM_EBUSY' });
  a.close();
  const b = idmint.createGenerator({ ...TWITTER, state });
  assert.ok(b.nextBigInt() > first);
  assert.ok(b.stats().stateMarkMs >= Number(idmint.decode(first).unixMs));
  b.close();
  fs.writeFileSync(state, 'garbage\n');
  assert.throws(() => idmint.createGenerator({ ...TWITTER, state }), { code: 'IDM_ECORRUPT' });
  fs.rmSync(dir, { recursive: true });
});

test('policies are accepted by name; stats count', () => {
  const g = idmint.createGenerator({ ...TWITTER, backwards: 'refuse', exhaust: 'borrow', maxDriftMs: 20 });
  g.nextBatch(10000);
  const st = g.stats();
  assert.equal(st.refusedBackwards, 0);
  assert.ok(st.lastUnixMs > 0);
  g.close();
  assert.throws(() => idmint.createGenerator({ ...TWITTER, backwards: 'sideways' }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.createGenerator({ ...TWITTER, backwards: 'change-worker' }), { code: 'IDM_EINVAL' });
});

test('bad options and ids throw with the C error name', () => {
  const cases = [
    [{ layout: 'twitter', node: { worker: 7 } }, 'IDM_ENODE'],
    [{ layout: 'twitter', node: { datacenter: 1, worker: 32 } }, 'IDM_ERANGE'],
    [{ layout: 'twitter', node: { datacenter: 1, worker: 1, rack: 2 } }, 'IDM_EINVAL'],
    [{ layout: 'twitter', node: { datacenter: 1, worker: -1 } }, 'IDM_ERANGE'],
    [{ layout: 'twitter', node: { datacenter: 1, worker: 'x' } }, 'IDM_EPARSE'],
    [{ layout: 'nosuch', node: { worker: 1 } }, 'IDM_ELAYOUT'],
    [{ layout: 'time:41@1ms,worker:10,seq:12', node: { worker: 1 } }, 'IDM_ELAYOUT'],
    [{ layout: 'time:41@1ms,worker:10,seq:30', epoch: 0, node: { worker: 1 } }, 'IDM_ELAYOUT'],
    [{ layout: 'twitter', epoch: Date.now() + 86400000, node: { datacenter: 1, worker: 1 } }, 'IDM_EEPOCH'],
    [{ ...TWITTER, wrokers: 3 }, 'IDM_EINVAL'],
    [{ ...TWITTER, state: path.join(tmpdir(), 'missing.state'), stateFresh: false }, 'IDM_ENOENT'],
    [{ ...TWITTER, state: path.join(tmpdir(), 'no', 'such', 'dir', 'f') }, 'IDM_EIO'],
    [{ ...TWITTER, ttlMs: 5000 }, 'IDM_EINVAL'],
    [{ ...TWITTER, lease: 'gopher://x' }, 'IDM_EINVAL'],
    [{ layout: 42 }, 'IDM_EINVAL'],
  ];
  for (const [opts, code] of cases) {
    assert.throws(() => idmint.createGenerator(opts), (e) => {
      assert.ok(e instanceof Error);
      assert.equal(e.code, code, `${JSON.stringify(opts)}: ${e.message}`);
      assert.match(e.message, /^idmint: /);
      return true;
    });
  }
  const g = idmint.createGenerator(TWITTER);
  for (const [id, code] of [['12a', 'IDM_EPARSE'], ['', 'IDM_EPARSE'], ['-1', 'IDM_EPARSE'],
    ['18446744073709551616', 'IDM_ERANGE'], [-1n, 'IDM_ERANGE'], [2n ** 64n, 'IDM_ERANGE'],
    [2 ** 60, 'IDM_ERANGE'], [1.5, 'IDM_ERANGE'], [null, 'IDM_EINVAL'], [{}, 'IDM_EINVAL'],
    ['18446744073709551615', 'IDM_ERANGE'] /* bit 63: beyond twitter's 63 bits */]) {
    assert.throws(() => g.decode(id), { code }, `decode(${String(id)})`);
  }
  assert.throws(() => g.idToDate('x'), { code: 'IDM_EPARSE' });
  g.close();
  assert.throws(() => g.nextId(), { code: 'IDM_EINVAL', message: /closed/ });
  assert.throws(() => g.nextBigInt(), { code: 'IDM_EINVAL', message: /closed/ });
  assert.throws(() => idmint.Generator.prototype.nextId.call(g), { code: 'IDM_EINVAL', message: /closed/ });
  assert.throws(() => g.nextBatch(2), { code: 'IDM_EINVAL' });
  g.close(); // twice is fine
});

// nextId and nextBigInt are the object's own bound functions (no unwrap per
// call): one kept after its generator was collected still mints, from the
// same generator, and the prototype's methods mint from any generator.
test('a method kept after its generator is collected still mints', async () => {
  const v8 = require('node:v8');
  const vm = require('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  let g = idmint.createGenerator(TWITTER);
  const next = g.nextId;
  const nextBig = g.nextBigInt;
  const a = next();
  g = null;
  for (let i = 0; i < 10; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const b = next();
  const c = nextBig();
  assert.ok(less(a, b), `${b} is not above ${a}`);
  assert.ok(c > BigInt(b), `${c} is not above ${b}`);
  const h = idmint.createGenerator(TWITTER);
  const d = idmint.Generator.prototype.nextId.call(h);
  assert.ok(less(d, h.nextId()));
  assert.ok(Object.prototype.hasOwnProperty.call(h, 'nextId'));
  h.close();
});

// The decimal text the addon makes for ids, at every length: decode()
// gives each id back as text, from 0 to the layout's largest (63 bits).
test('ids as text at every length, 0 to 2^63 - 1', () => {
  const g = idmint.createGenerator(TWITTER);
  const ids = [0n, 2n ** 63n - 1n];
  for (let p = 1n; p < 2n ** 63n; p *= 10n) ids.push(p - 1n, p, p + 1n, p * 5n);
  for (const v of ids) {
    if (v >= 2n ** 63n) continue;
    assert.equal(g.decode(v).id, v.toString(), `decode(${v}).id`);
    assert.equal(g.decode(v.toString()).id, v.toString());
  }
  for (let i = 0; i < 1000; i++) {
    const t = g.nextId();
    assert.equal(t, BigInt(t).toString());
  }
  g.close();
});
