// SPDX-License-Identifier: MIT
// idmint for Node.js: libidmint's generators in process (build/idmint.node).
// This file checks and normalises options and times; minting is the addon's
// methods, called directly (no JavaScript in between).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const native = require(path.join(__dirname, 'build', 'idmint.node'));

// An Error with the C error name as its code, as the addon throws them.
function idmError(code, message, Kind = Error) {
  const e = new Kind(`idmint: ${message}`);
  e.code = code;
  return e;
}

const BACKWARDS = { logical: 0, refuse: 1, wait: 2, 'change-worker': 3 };
const EXHAUST = { wait: 0, borrow: 1 };
const GENERATOR_OPTIONS = new Set([
  'layout', 'epoch', 'node', 'lease', 'leaseField', 'stateDir', 'ttlMs', 'reclaim',
  'holder', 'state', 'stateFresh', 'backwards', 'exhaust', 'maxDriftMs', 'maxWaitMs',
  'stateLookaheadMs',
]);

// A point in time as Unix ms: a Date, a Number of ms, or text in the CLI's
// forms ("2026-01-01", "2026-01-01T10:00:00Z", Unix ms as digits).
function toMs(t, what) {
  if (t instanceof Date) {
    const ms = t.getTime();
    if (Number.isNaN(ms)) throw idmError('IDM_EPARSE', `${what} is an invalid Date`, RangeError);
    return ms;
  }
  if (typeof t === 'number') {
    if (!Number.isSafeInteger(t)) throw idmError('IDM_ERANGE', `${what} must be an integral number of ms`, RangeError);
    return t;
  }
  if (typeof t === 'bigint') return toMs(Number(t), what);
  if (typeof t === 'string') return native.parseTime(t);
  throw idmError('IDM_EINVAL', `${what} must be a Date, a Number of ms or a string`, TypeError);
}

function checkInt(v, what, min, max) {
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw idmError(typeof v === 'number' ? 'IDM_ERANGE' : 'IDM_EINVAL',
      `${what} must be an integer from ${min} to ${max}, not ${String(v)}`,
      typeof v === 'number' ? RangeError : TypeError);
  }
  return v;
}

function choice(table, v, what) {
  if (!Object.prototype.hasOwnProperty.call(table, v)) {
    throw idmError('IDM_EINVAL', `${what} must be one of ${Object.keys(table).join(', ')}, not ${String(v)}`, TypeError);
  }
  return table[v];
}

// Layout options as the addon takes them: the spec and the epoch as text.
function layoutOptions(o) {
  if (o === null || typeof o !== 'object') throw idmError('IDM_EINVAL', 'layout options must be an object', TypeError);
  const out = {};
  if (o.layout !== undefined) {
    if (typeof o.layout !== 'string') throw idmError('IDM_EINVAL', 'layout must be a preset name or a text form', TypeError);
    out.layout = o.layout;
  }
  if (o.epoch !== undefined) out.epoch = String(toMs(o.epoch, 'epoch'));
  return out;
}

function nodeValues(node) {
  if (node === undefined) return undefined;
  if (node === null || typeof node !== 'object') throw idmError('IDM_EINVAL', 'node must be an object such as { worker: 7 }', TypeError);
  const out = {};
  for (const [name, v] of Object.entries(node)) {
    if (typeof v === 'bigint' && v >= 0n) out[name] = v.toString();
    else if (typeof v === 'string') out[name] = v;
    else out[name] = String(checkInt(v, `node value ${name}`, 0, Number.MAX_SAFE_INTEGER));
  }
  return out;
}

function generatorOptions(opts) {
  if (opts === null || typeof opts !== 'object') throw idmError('IDM_EINVAL', 'createGenerator needs an options object', TypeError);
  for (const k of Object.keys(opts)) {
    if (!GENERATOR_OPTIONS.has(k)) throw idmError('IDM_EINVAL', `unknown option '${k}'`, TypeError);
  }
  const o = { ...layoutOptions(opts), node: nodeValues(opts.node) };
  for (const k of ['lease', 'leaseField', 'stateDir', 'holder', 'state']) {
    if (opts[k] === undefined) continue;
    if (typeof opts[k] !== 'string') throw idmError('IDM_EINVAL', `${k} must be a string`, TypeError);
    o[k] = opts[k];
  }
  if (o.lease === undefined) {
    for (const k of ['leaseField', 'stateDir', 'ttlMs', 'reclaim', 'holder']) {
      if (opts[k] !== undefined) throw idmError('IDM_EINVAL', `${k} needs lease`, TypeError);
    }
  } else if (o.state !== undefined) {
    throw idmError('IDM_EINVAL', 'a leased generator keeps its state in stateDir, not state', TypeError);
  }
  if (opts.backwards !== undefined) o.backwards = choice(BACKWARDS, opts.backwards, 'backwards');
  if (opts.exhaust !== undefined) o.exhaust = choice(EXHAUST, opts.exhaust, 'exhaust');
  for (const k of ['maxDriftMs', 'maxWaitMs', 'stateLookaheadMs', 'ttlMs']) {
    if (opts[k] !== undefined) o[k] = checkInt(opts[k], k, 0, 86400000);
  }
  if (opts.reclaim !== undefined) o.reclaim = Boolean(opts.reclaim);
  // A state file is created on first start; one that exists must be sound.
  if (o.state !== undefined) {
    o.stateFresh = opts.stateFresh !== undefined ? Boolean(opts.stateFresh) : !fs.existsSync(o.state);
  }
  return o;
}

class Layout extends native.Layout {
  constructor(opts = {}) {
    super(layoutOptions(opts));
  }

  range(from, to) {
    const [min, max] = super.range(toMs(from, 'from'), toMs(to, 'to'));
    return { min, max };
  }
}

class Generator extends native.Generator {
  constructor(opts) {
    super(generatorOptions(opts));
  }

  range(from, to) {
    const [min, max] = super.range(toMs(from, 'from'), toMs(to, 'to'));
    return { min, max };
  }
}

function createGenerator(opts = {}) {
  return new Generator(opts);
}

// Layouts for decode, idToDate and range without a generator, by options.
const layouts = new Map();
function layoutFor(opts = {}) {
  const key = `${opts.layout ?? ''}\u0000${opts.epoch instanceof Date ? opts.epoch.getTime() : opts.epoch ?? ''}`;
  let l = layouts.get(key);
  if (!l) {
    l = new Layout(opts);
    if (layouts.size > 64) layouts.clear();
    layouts.set(key, l);
  }
  return l;
}

function uuidToDate(text) {
  const u = native.parseUuid(text);
  if (u.unixMs === null) throw idmError('IDM_EINVAL', `${text} is a version ${u.version} UUID: only UUIDv7 carries a time`, TypeError);
  return new Date(u.unixMs);
}

function parseUuid(text) {
  const u = native.parseUuid(text);
  return { ...u, time: u.unixMs === null ? null : new Date(u.unixMs) };
}

function parseUlid(text) {
  const u = native.parseUlid(text);
  return { ...u, time: new Date(u.unixMs) };
}

function parseObjectId(text) {
  const o = native.parseObjectId(text);
  return { ...o, time: new Date(o.unixMs) };
}

function storeList(stores) {
  const list = typeof stores === 'string' ? [stores] : stores;
  if (!Array.isArray(list) || list.length === 0) throw idmError('IDM_EINVAL', 'stores must be a URL or a non-empty array of URLs', TypeError);
  return list;
}

// Create a sequence in every store (store k of n hands out ids = k mod n);
// true if it was created, false if it existed.
function createSequence(name, { stores, start = 1 } = {}) {
  return native.createSequence(name, storeList(stores), checkInt(start, 'start', 0, Number.MAX_SAFE_INTEGER));
}

class Sequence extends native.Sequence {
  constructor(opts) {
    if (opts === null || typeof opts !== 'object') throw idmError('IDM_EINVAL', 'openSequence needs an options object', TypeError);
    const o = { name: opts.name, stores: storeList(opts.stores) };
    if (opts.floorFile !== undefined) o.floorFile = opts.floorFile;
    for (const k of ['minBlock', 'maxBlock', 'waitMs']) {
      if (opts[k] !== undefined) o[k] = checkInt(opts[k], k, 1, Number.MAX_SAFE_INTEGER);
    }
    if (opts.create) createSequence(opts.name, { stores: o.stores, start: opts.start ?? 1 });
    super(o);
  }
}

function openSequence(opts) {
  return new Sequence(opts);
}

module.exports = {
  createGenerator,
  Generator,
  Layout,
  layouts: () => native.presets(),
  decode: (id, opts) => layoutFor(opts).decode(id),
  idToDate: (id, opts) => layoutFor(opts).idToDate(id),
  range: (from, to, opts) => layoutFor(opts).range(from, to),
  uuidv7: native.uuidv7,
  uuidv4: native.uuidv4,
  ulid: native.ulid,
  objectId: native.objectId,
  parseUuid,
  parseUlid,
  parseObjectId,
  uuidToDate,
  ulidToDate: (text) => new Date(native.parseUlid(text).unixMs),
  objectIdToDate: (text) => new Date(native.parseObjectId(text).unixMs),
  ulidToUuid: (text) => native.parseUlid(text).uuid,
  createSequence,
  openSequence,
  Sequence,
};
