// SPDX-License-Identifier: MIT
// Leased generators: worker ids from a file:// coordinator, in one process
// and across a cluster of processes (node:cluster).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const cluster = require('node:cluster');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const idmint = require('..');

const PROCESSES = 4;
const IDS = 250000;

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'idmint-node-lease-'));
}

test('two leased generators in one process take two worker ids', () => {
  const dir = tmpdir();
  const lease = `file://${dir}/leases`;
  const opts = { layout: 'twitter', node: { datacenter: 2 }, lease, ttlMs: 2000 };
  const a = idmint.createGenerator(opts);
  const b = idmint.createGenerator({ ...opts, backwards: 'change-worker' });
  const wa = a.info().leasedWorker;
  const wb = b.info().leasedWorker;
  assert.notEqual(wa, wb);
  const ia = a.nextId();
  const ib = b.nextBigInt();
  assert.deepEqual(a.decode(ia).fields, { datacenter: 2, worker: wa });
  assert.deepEqual(b.decode(ib).fields, { datacenter: 2, worker: wb });
  assert.equal(a.nextBatch(10).length, 10);
  assert.equal(a.stats().refusedLease, 0);
  a.close();
  b.close();
  fs.rmSync(dir, { recursive: true });
});

test('lease errors carry the C error name', () => {
  const dir = tmpdir();
  const base = { layout: 'twitter', node: { datacenter: 1 } };
  assert.throws(() => idmint.createGenerator({ ...base, lease: 'gopher://x/y' }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.createGenerator({ ...base, lease: `file://${dir}`, leaseField: 'rack' }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.createGenerator({ ...base, lease: `file://${dir}`, ttlMs: 10 }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.createGenerator({ ...base, lease: `file://${dir}`, state: 'x' }), { code: 'IDM_EINVAL' });
  assert.throws(() => idmint.createGenerator({ layout: 'twitter', lease: `file://${dir}` }), { code: 'IDM_ENODE' });
  fs.rmSync(dir, { recursive: true });
});

test(`a cluster of ${PROCESSES} processes leasing worker ids: every id unique`, async () => {
  const dir = tmpdir();
  cluster.setupPrimary({
    exec: path.join(__dirname, 'fixtures', 'lease-worker.js'),
    silent: false,
  });
  const env = {
    IDMINT_TEST_DIR: dir,
    IDMINT_TEST_LEASE: `file://${dir}/leases`,
    IDMINT_TEST_IDS: String(IDS),
  };
  // Every process holds its lease before any mints (a barrier: each says
  // ready, then all are told go), so all hold at once: distinct worker ids.
  const procs = [];
  let ready = 0;
  const reports = await Promise.all(Array.from({ length: PROCESSES }, () => new Promise((resolve, reject) => {
    const w = cluster.fork(env);
    procs.push(w);
    let report = null;
    w.on('message', (m) => {
      if (m && m.ready) {
        if (++ready === PROCESSES) for (const p of procs) p.send('go');
      } else {
        report = m;
      }
    });
    w.on('exit', (code, signal) => {
      if (code === 0 && report) resolve(report);
      else reject(new Error(`worker exited with ${code ?? signal} and ${report ? 'a' : 'no'} report`));
    });
  })));
  const workers = reports.map((r) => r.worker);
  assert.equal(new Set(workers).size, PROCESSES, `worker ids ${workers}`);
  assert.deepEqual(reports.map((r) => r.still), workers, 'each kept its worker id while minting');
  const seen = new Set();
  const files = fs.readdirSync(dir).filter((f) => f.startsWith('ids-'));
  assert.equal(files.length, PROCESSES);
  for (const f of files) {
    const ids = fs.readFileSync(path.join(dir, f), 'utf8').trim().split('\n').map(BigInt);
    assert.ok(ids.length >= IDS);
    for (let i = 0; i < ids.length; i++) {
      if (i > 0 && ids[i] <= ids[i - 1]) assert.fail(`${f}: id ${i} ${ids[i]} not above ${ids[i - 1]}`);
      if (seen.has(ids[i])) assert.fail(`${f}: id ${ids[i]} minted twice`);
      seen.add(ids[i]);
    }
  }
  fs.rmSync(dir, { recursive: true });
});
