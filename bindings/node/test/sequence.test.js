// SPDX-License-Identifier: MIT
// Segment sequences from ticket stores, by the CLI's store URLs.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const idmint = require('..');

test('a sequence on two sqlite stores: dense, unique, store k of 2 gives k mod 2', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idmint-node-seq-'));
  const stores = [`sqlite://${dir}/a.db`, `sqlite://${dir}/b.db`];
  assert.equal(idmint.createSequence('orders', { stores, start: 1 }), true);
  assert.equal(idmint.createSequence('orders', { stores }), false);
  const q = idmint.openSequence({ name: 'orders', stores, floorFile: path.join(dir, 'orders.floor'), minBlock: 10 });
  const ids = [];
  for (let i = 0; i < 50; i++) ids.push(BigInt(q.next()));
  ids.push(q.nextBigInt());
  assert.equal(new Set(ids).size, ids.length);
  assert.ok(ids.every((x) => x >= 0n && x < 10000n), ids.join(' '));
  assert.ok(q.stats().ids >= 51);
  q.close();
  assert.throws(() => q.next(), { code: 'IDM_EINVAL' });
  // Reopened: above everything handed out before.
  const r = idmint.openSequence({ name: 'orders', stores, floorFile: path.join(dir, 'orders.floor') });
  const again = BigInt(r.next());
  assert.ok(!ids.includes(again));
  r.close();
  // One store, created on open.
  const one = idmint.openSequence({ name: 'tickets', stores: `sqlite://${dir}/c.db`, create: true, start: 100 });
  assert.equal(one.next(), '100');
  assert.equal(one.next(), '101');
  one.close();
  fs.rmSync(dir, { recursive: true });
});

test('sequence errors carry the C error name', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idmint-node-seq-'));
  const store = `sqlite://${dir}/a.db`;
  assert.throws(() => idmint.openSequence({ name: 'none', stores: [store] }), { code: 'IDM_ENOSEQ' });
  assert.throws(() => idmint.openSequence({ name: 'x', stores: ['gopher://h/x'] }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.openSequence({ name: 'x', stores: [] }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.createSequence('bad name!', { stores: [store] }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.openSequence(null), { code: 'IDM_EINVAL' });
  fs.rmSync(dir, { recursive: true });
});
