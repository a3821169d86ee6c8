/* SPDX-License-Identifier: MIT */
/*
 * Node.js peers for the idmint benchmark.
 *
 *   node bench.js --dir INSTALL_DIR [--seconds S] [--rounds N] [--ref FILE]
 *
 * INSTALL_DIR holds node_modules with the packages of package.json. Each
 * peer runs in a child process of its own (so one peer's JIT state cannot
 * slow another and a crash skips only that peer): a warm-up, then N rounds
 * (default 3) of a tight loop of generator calls for S seconds (default 1) of
 * process.hrtime (monotonic), reporting the median round, then an untimed
 * check that the ids it produced strictly increase. Generation
 * only: ids are not converted or stored in the timed loop; each peer's
 * native output type is printed. FILE (written by idm_bench --ref-out) gives
 * idmint's figures for the ratio columns.
 */
'use strict';

const { measure, peerRequire, pkgVersion, emit, pad, si, readRef, parseArgs, roundsText, runPeer } =
  require('./harness.js');

const TWITTER_EPOCH = 1288834974657;

/*
 * Each peer: its package, the layout it mints (idmint's text form), its
 * ceiling in ids/s (2^seq bits per ms), how to build a generator, and how to
 * turn one id into a BigInt for the check.
 */
const PEERS = {
  '@sapphire/snowflake': {
    layout: 'time:42@1ms,worker:5,process:5,seq:12',
    ceiling: 4096000,
    produces: 'bigint',
    note: 'increment wraps without looking at the clock',
    make(req) {
      const { Snowflake } = req('@sapphire/snowflake');
      const s = new Snowflake(BigInt(TWITTER_EPOCH));
      return () => s.generate();
    },
    big: (id) => id,
  },
  'flake-idgen': {
    layout: 'time:42@1ms,datacenter:5,worker:5,seq:12',
    ceiling: 4096000,
    produces: 'Buffer(8)',
    note: 'throws on a full ms; the loop retries',
    make(req) {
      const FlakeId = req('flake-idgen');
      const f = new FlakeId({ datacenter: 1, worker: 1, epoch: TWITTER_EPOCH });
      return () => f.next();
    },
    big: (id) => id.readBigUInt64BE(0),
  },
  'nodejs-snowflake': {
    layout: 'time:42@1ms,instance:12,seq:10',
    ceiling: 1024000,
    produces: 'bigint',
    note: 'Rust compiled to WebAssembly',
    make(req) {
      const { Snowflake } = req('nodejs-snowflake');
      const s = new Snowflake({ custom_epoch: TWITTER_EPOCH, instance_id: 1 });
      return () => s.getUniqueID();
    },
    big: (id) => id,
  },
  'snowflake-id': {
    layout: 'time:42@1ms,mid:10,seq:12',
    ceiling: 4096000,
    produces: 'string (decimal)',
    note: 'builds the id through binary strings',
    make(req) {
      const mod = req('snowflake-id');
      const Snowflake = mod.default || mod;
      const s = new Snowflake({ mid: 1, offset: TWITTER_EPOCH });
      return () => s.generate();
    },
    big: (id) => BigInt(id),
  },
};

/* Generate up to max ids (or for up to seconds) and count those not above
 * their predecessor: repeats or disorder. */
function check(gen, big, max, seconds) {
  const ids = [];
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  while (ids.length < max) {
    for (let i = 0; i < 256 && ids.length < max; i++) {
      try {
        ids.push(gen());
      } catch (e) {
        /* a full ms: retry, as the timed loop does */
      }
    }
    if (process.hrtime.bigint() >= end) break;
  }
  let bad = 0;
  let prev = -1n;
  for (const id of ids) {
    const b = big(id);
    if (b <= prev) bad++;
    prev = b;
  }
  return { checked: ids.length, bad, sample: String(big(ids[ids.length - 1])) };
}

function runChild(name, opt) {
  const peer = PEERS[name];
  const version = pkgVersion(opt.dir, name);
  const gen = peer.make(peerRequire(opt.dir));
  const { t, spread, sinkType } = measure(gen, opt.seconds, opt.rounds);
  const c = check(gen, peer.big, 500000, 0.5);
  emit({ version, sinkType, spread, ...t, ...c });
}

function main() {
  const opt = parseArgs('bench.js');
  if (opt.peer) {
    runChild(opt.peer, opt);
    return;
  }

  const ref = readRef(opt.ref);
  const idmFrac = ref.twitter_ids_per_s && ref.twitter_ceiling
    ? ref.twitter_ids_per_s / ref.twitter_ceiling : null;
  const idmNs = ref.seq22_ns_per_id || null;

  process.stdout.write(`\nNode.js peers (node ${process.version}; generation only; one child ` +
    `process each: ${roundsText(opt)})\n`);
  process.stdout.write(
    pad('peer', 28) + pad('produces', 17) + pad('ns/id', 9) + pad('ids/s', 8) +
    pad('of ceiling', 18) + pad('idmint/peer', 13) + pad('per call', 9) +
    pad('spread ns/id', 18) + 'check\n');
  const notes = [];
  for (const name of Object.keys(PEERS)) {
    const peer = PEERS[name];
    const { res, why } = runPeer(__filename, name, opt);
    if (!res) {
      process.stdout.write(pad(name, 28) + `skipped: ${why}\n`);
      continue;
    }
    const nsPerId = res.ns / res.n;
    const rate = res.n * 1e9 / res.ns;
    const frac = rate / peer.ceiling;
    const ceil = `${frac.toFixed(3)} of ${si(peer.ceiling)}`;
    /* A peer past its ceiling does not hold to its layout: no same-layout
     * comparison, only the per-call one. */
    const vsSame = frac > 1.01 ? 'n/a (no cap)' : idmFrac ? (idmFrac / frac).toFixed(3) : '-';
    const vsCall = idmNs ? (nsPerId / idmNs).toFixed(2) : '-';
    const chk = res.bad === 0 ? `ok (${res.checked} ids)`
      : `REPEATS: ${res.bad} of ${res.checked} not increasing`;
    process.stdout.write(
      pad(`${name} ${res.version}`, 28) + pad(peer.produces, 17) +
      pad(nsPerId.toFixed(1), 9) + pad(si(rate), 8) + pad(ceil, 18) +
      pad(vsSame, 13) + pad(vsCall, 9) +
      pad(`${res.spread[0].toFixed(1)}..${res.spread[1].toFixed(1)}`, 18) + chk + '\n');
    notes.push(`  ${name}: ${peer.layout}; ${peer.note}` +
      (res.thrown ? `; ${res.thrown} calls threw in the reported round` : '') + `; e.g. ${res.sample}`);
  }
  if (notes.length) {
    process.stdout.write('layouts and notes:\n' + notes.join('\n') + '\n');
    process.stdout.write('idmint/peer = (idmint twitter ids/s / its ceiling) / ' +
      '(peer ids/s / its ceiling); per call = peer ns/id / idmint seq22 ns/id ' +
      '(item 2). > 1: idmint ahead. n/a (no cap): the peer mints past its layout\'s ceiling,\n' +
      'so only the per-call cost compares. REPEATS: the peer handed out an id not above the one before.\n');
  }
}

main();
