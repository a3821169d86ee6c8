/* SPDX-License-Identifier: MIT */
/*
 * The runner shared by bench.js and bench128.js: option parsing, the timed
 * loop, warm-up and rounds with the median round, one child process per
 * peer, and the small formatting helpers of their tables.
 */
'use strict';

const path = require('path');
const fs = require('fs');
const { createRequire } = require('module');
const { spawnSync } = require('child_process');

let sink; // keeps the last id alive so the loop is not dead code

/* Call gen in a tight loop for seconds of process.hrtime (monotonic), 256
 * calls between clock reads; a call that throws is counted, not retried. */
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

/* A warm-up, then rounds timed rounds of seconds each: the median round
 * ({ n, thrown, ns }), the fastest and slowest ns/id, and the type of the
 * last id made. */
function measure(gen, seconds, rounds) {
  timed(gen, Math.min(0.5, seconds / 2)); // warm-up: let the JIT settle
  const runs = [];
  for (let r = 0; r < rounds; r++) runs.push(timed(gen, seconds));
  runs.sort((a, b) => a.ns / a.n - b.ns / b.n);
  const t = runs[Math.floor((runs.length - 1) / 2)]; // the median round
  const spread = [runs[0].ns / runs[0].n, runs[runs.length - 1].ns / runs[runs.length - 1].n];
  return { t, spread, sinkType: typeof sink };
}

/* require() as from INSTALL_DIR, where the peers' node_modules are. */
function peerRequire(dir) {
  return createRequire(path.join(dir, 'package.json'));
}

/* The installed version of package pkg under dir, or '?'. */
function pkgVersion(dir, pkg) {
  try {
    const pj = path.join(dir, 'node_modules', pkg, 'package.json');
    return JSON.parse(fs.readFileSync(pj, 'utf8')).version;
  } catch (e) {
    return '?';
  }
}

/* A child's result: one JSON line on stdout, read by runPeer. */
function emit(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
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

/* idmint's figures: "key value" lines of the file written by --ref-out. */
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

/* The command line of script (its file name, for messages):
 * --dir --seconds --rounds --ref, and --peer in a child. Exits 1 on bad
 * usage. */
function parseArgs(script) {
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
      process.stderr.write(`${script}: unknown argument ${a}\n`);
      process.exit(1);
    }
  }
  if (!opt.dir || !(opt.seconds > 0)) {
    process.stderr.write(`usage: node ${script} --dir INSTALL_DIR [--seconds S] [--rounds N] [--ref FILE]\n`);
    process.exit(1);
  }
  return opt;
}

/* "a warm-up, then N rounds of S s, median round", for a table's title. */
function roundsText(opt) {
  return `a warm-up, then ${opt.rounds} round${opt.rounds === 1 ? '' : 's'} of ${opt.seconds} s, median round`;
}

/* Run scriptFile --peer key in a child process of its own: { res } with the
 * child's result, or { why } saying why it gave none. */
function runPeer(scriptFile, key, opt) {
  const r = spawnSync(process.execPath,
    [scriptFile, '--peer', key, '--dir', opt.dir, '--seconds', String(opt.seconds),
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
    return { why };
  }
  return { res };
}

module.exports = {
  measure, peerRequire, pkgVersion, emit, pad, si, readRef, parseArgs, roundsText, runPeer,
};
