// SPDX-License-Identifier: MIT
// UUIDv7, UUIDv4, ULID and ObjectId: their text, order, parsers and time,
// read back by the npm uuid and ulid packages.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const idmint = require('..');
const uuid = require('uuid');
const { decodeTime } = require('ulid');

const N = 200000;

test('uuidv7: canonical, version 7, strictly increasing, time of now', () => {
  const before = Date.now();
  let prev = '';
  for (let i = 0; i < N; i++) {
    const u = idmint.uuidv7();
    // Lower-case hex: text order is byte order, so increasing text is
    // increasing ids.
    if (!(u > prev)) assert.fail(`uuid ${i} ${u} is not above ${prev}`);
    prev = u;
  }
  const after = Date.now();
  assert.match(prev, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const t = idmint.uuidToDate(prev).getTime();
  assert.ok(t >= before && t <= after + 1, `${t} in [${before}, ${after}]`);
  const p = idmint.parseUuid(prev);
  assert.deepEqual([p.version, p.variant, p.bytes.length, p.unixMs], [7, 2, 16, t]);
});

test('uuidv7 and uuidv4 read back by npm uuid', () => {
  for (let i = 0; i < 1000; i++) {
    const v7 = idmint.uuidv7();
    const v4 = idmint.uuidv4();
    assert.ok(uuid.validate(v7) && uuid.validate(v4));
    assert.equal(uuid.version(v7), 7);
    assert.equal(uuid.version(v4), 4);
    assert.deepEqual(Buffer.from(uuid.parse(v7)), idmint.parseUuid(v7).bytes);
  }
  // And npm uuid's own v7 parsed here: the same time.
  const theirs = uuid.v7();
  const ms = parseInt(theirs.replace(/-/g, '').slice(0, 12), 16);
  assert.equal(idmint.uuidToDate(theirs).getTime(), ms);
  assert.equal(idmint.parseUuid(uuid.v4()).version, 4);
  assert.equal(idmint.parseUuid(uuid.v4()).time, null);
});

test('uuidv4: distinct, random bits', () => {
  const seen = new Set();
  for (let i = 0; i < N; i++) seen.add(idmint.uuidv4());
  assert.equal(seen.size, N);
});

test('ulid: Crockford base32, monotonic, read back by npm ulid', () => {
  const before = Date.now();
  let prev = '';
  for (let i = 0; i < N; i++) {
    const u = idmint.ulid();
    if (!(u > prev)) assert.fail(`ulid ${i} ${u} is not above ${prev}`);
    prev = u;
  }
  const after = Date.now();
  assert.match(prev, /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
  const t = decodeTime(prev);
  assert.ok(t >= before && t <= after + 1);
  assert.equal(idmint.ulidToDate(prev).getTime(), t);
  assert.equal(idmint.parseUlid(prev).unixMs, t);
  // The same 128 bits as a UUID.
  const asUuid = idmint.ulidToUuid(prev);
  // (not an RFC 9562 UUID: no version or variant bits, so npm uuid's
  // validate refuses it; the hex is the ULID's bytes)
  assert.match(asUuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.equal(asUuid.replace(/-/g, ''), idmint.parseUlid(prev).bytes.toString('hex'));
  // npm ulid's ids parse here, with their time.
  const { ulid: theirUlid, monotonicFactory } = require('ulid');
  const theirs = monotonicFactory()(1700000000123);
  assert.equal(idmint.ulidToDate(theirs).getTime(), 1700000000123);
  assert.equal(idmint.parseUlid(theirUlid().toLowerCase()).bytes.length, 16);
});

test('objectId: 24 hex digits, time in seconds, distinct', () => {
  const seen = new Set();
  const before = Math.floor(Date.now() / 1000) * 1000;
  for (let i = 0; i < 10000; i++) seen.add(idmint.objectId());
  assert.equal(seen.size, 10000);
  const o = idmint.objectId();
  assert.match(o, /^[0-9a-f]{24}$/);
  const t = idmint.objectIdToDate(o).getTime();
  assert.ok(t >= before && t <= Date.now());
  assert.equal(idmint.parseObjectId(o).bytes.length, 12);
});

test('parsers reject bad text with the C error name', () => {
  const v7 = idmint.uuidv7();
  for (const [text, code] of [
    ['', 'IDM_EPARSE'], [v7.replace(/-/g, ''), 'IDM_EPARSE'], [`{${v7}}`, 'IDM_EPARSE'],
    [`urn:uuid:${v7}`, 'IDM_EPARSE'], [v7.slice(0, 35) + 'g', 'IDM_EPARSE'], [`${v7}\u0000`, 'IDM_EPARSE'],
    [42, 'IDM_EINVAL'], [undefined, 'IDM_EINVAL']]) {
    assert.throws(() => idmint.parseUuid(text), { code }, `parseUuid(${String(text)})`);
  }
  assert.throws(() => idmint.uuidToDate(idmint.uuidv4()), { code: 'IDM_EINVAL', message: /version 4/ });
  for (const [text, code] of [
    ['01ARZ3NDEKTSV4RRFFQ69G5FA', 'IDM_EPARSE'], ['01ARZ3NDEKTSV4RRFFQ69G5FAVV', 'IDM_EPARSE'],
    ['01ARZ3NDEKTSV4RRFFQ69G5FAU', 'IDM_EPARSE'], ['81ARZ3NDEKTSV4RRFFQ69G5FAV', 'IDM_ERANGE'],
    [null, 'IDM_EINVAL']]) {
    assert.throws(() => idmint.parseUlid(text), { code }, `parseUlid(${String(text)})`);
  }
  for (const text of ['', '6b0fedc0e6b2357710fc103', '6b0fedc0e6b2357710fc103z', '6b0fedc0e6b2357710fc10350']) {
    assert.throws(() => idmint.parseObjectId(text), { code: 'IDM_EPARSE' }, `parseObjectId(${text})`);
  }
});
