// SPDX-License-Identifier: MIT
//
// The collision chart: P(any collision) against time, both on log scales,
// for five schemes of random ids at a rate the user drags (#rate holds
// log10 of the ids per second). Each curve is the "points" of one
// /v1/birthday answer, drawn as it is; the table #schemes gives each
// scheme's 50% and one-in-a-billion times, the chart's accessible form.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const YEAR_S = 365.25 * 86400;
  const DURATION = '10000y';
  const SCHEMES = [
    { id: 'random32', name: 'Random 32 bits', bits: 32, perMs: false },
    { id: 'random64', name: 'Random 64 bits', bits: 64, perMs: false },
    { id: 'uuid7', name: 'UUIDv7', bits: 74, perMs: true },
    { id: 'uuid4', name: 'UUIDv4', bits: 122, perMs: false },
    { id: 'ulid', name: 'ULID', bits: 80, perMs: true },
  ];
  for (const s of SCHEMES) s.request = IDM.latest();

  // The chart's frame, in viewBox units: one a CSS pixel of the chart's
  // width (so its text reads the same size on a phone as on a desktop),
  // taller than wide below 600 px. Set by size(), before each frame().
  let W = 800;
  let H = 440;
  const M = { left: 64, right: 16, top: 16, bottom: 44 };
  const X0 = 0; // log10(1 s)
  const X1 = Math.log10(10000 * YEAR_S);
  const Y0 = -30; // log10(1e-30)
  const Y1 = 0; // log10(1)
  const px = (lt) => M.left + ((lt - X0) / (X1 - X0)) * (W - M.left - M.right);
  const py = (lp) => H - M.bottom - ((lp - Y0) / (Y1 - Y0)) * (H - M.top - M.bottom);

  // The rate the slider's position stands for, to three digits, in plain
  // decimal (no exponent: the server refuses '+').
  function rateFor(pos) {
    return String(Number((10 ** Number(pos)).toPrecision(3)));
  }

  // ---- the frame: axes, grid, marks, one path per scheme ----

  function size() {
    const w = Math.round($('chart').parentElement.clientWidth) || 800;
    W = Math.max(300, w);
    H = Math.round(W < 600 ? W * 1.0 : Math.min(W * 0.55, 520));
    $('chart').setAttribute('viewBox', `0 0 ${W} ${H}`);
  }

  function frame() {
    const chart = $('chart');
    size();
    chart.replaceChildren();
    const g = IDM.svg('g', {}, chart);
    // Fewer time labels on a narrow chart, where they would overlap.
    const xticks = [[1, '1 s'], [60, '1 min'], [3600, '1 h'], [86400, '1 day'], [YEAR_S, '1 yr'],
      [100 * YEAR_S, '100 yr'], [10000 * YEAR_S, '10000 yr']]
      .filter(([t]) => W >= 600 || (t !== 3600 && t !== 100 * YEAR_S));
    xticks.forEach(([t, label], i) => {
      const x = px(Math.log10(t));
      IDM.svg('line', { class: 'grid-line', x1: x, x2: x, y1: py(Y0), y2: py(Y1) }, g);
      // The last label ends at the frame's edge rather than past it.
      const anchor = i === xticks.length - 1 ? 'end' : 'middle';
      const text = IDM.svg('text', { x, y: H - M.bottom + 18, 'text-anchor': anchor }, g);
      text.textContent = label;
    });
    for (let e = Y0; e <= Y1; e += 6) {
      const y = py(e);
      IDM.svg('line', { class: 'grid-line', x1: px(X0), x2: px(X1), y1: y, y2: y }, g);
      const text = IDM.svg('text', { x: M.left - 6, y: y + 4, 'text-anchor': 'end' }, g);
      text.textContent = e === 0 ? '1' : `1e${e}`;
    }
    IDM.svg('line', { class: 'axis', x1: px(X0), x2: px(X1), y1: py(Y0), y2: py(Y0) }, g);
    IDM.svg('line', { class: 'axis', x1: px(X0), x2: px(X0), y1: py(Y0), y2: py(Y1) }, g);
    const xl = IDM.svg('text', { x: (px(X0) + px(X1)) / 2, y: H - 6, 'text-anchor': 'middle' }, g);
    xl.textContent = 'time (log scale)';
    const yl = IDM.svg('text', { x: 14, y: (py(Y0) + py(Y1)) / 2, 'text-anchor': 'middle',
      transform: `rotate(-90 14 ${(py(Y0) + py(Y1)) / 2})` }, g);
    yl.textContent = 'P(any collision)';
    for (const [id, p, label] of [['mark-50', 0.5, '50%'], ['mark-1e9', 1e-9, 'one in a billion']]) {
      const y = py(Math.log10(p));
      IDM.svg('line', { id, class: 'mark', x1: px(X0), x2: px(X1), y1: y, y2: y }, g);
      const text = IDM.svg('text', { x: px(X0) + 6, y: y + 16, class: 'mark-label' }, g);
      text.textContent = label;
    }
    for (const s of SCHEMES) {
      IDM.svg('path', { class: `curve s-${s.id}`, 'data-scheme': s.id, d: '' }, chart);
    }
  }

  function legend() {
    const ul = $('legend');
    for (const s of SCHEMES) {
      const li = document.createElement('li');
      const sample = IDM.svg('svg', { viewBox: '0 0 40 12', 'aria-hidden': 'true' });
      IDM.svg('line', { class: `curve s-${s.id}`, x1: 0, x2: 40, y1: 6, y2: 6 }, sample);
      li.append(sample, document.createTextNode(`${s.name} (${s.bits} bits${s.perMs ? ' per ms' : ''})`));
      ul.append(li);
    }
  }

  // ---- one scheme's answer ----

  // The path through the answer's points; those below the chart's floor
  // (1e-30) break it (the curve starts where it enters the chart).
  function pathOf(points) {
    let d = '';
    let pen = false;
    for (const [t, p] of points) {
      if (!(t > 0) || !(p >= 1e-30)) {
        pen = false;
        continue;
      }
      const x = px(Math.min(Math.max(Math.log10(t), X0), X1)).toFixed(1);
      const y = py(Math.min(Math.log10(p), Y1)).toFixed(1);
      d += `${pen ? 'L' : 'M'}${x},${y}`;
      pen = true;
    }
    return d;
  }

  let shown = []; // the answers drawn last, redrawn when the width changes

  function show(s, doc) {
    const path = $('chart').querySelector(`path[data-scheme="${s.id}"]`);
    path.setAttribute('d', pathOf(doc.points || []));
    const row = $('schemes').querySelector(`tr[data-scheme="${s.id}"]`);
    const cell = (key, text) => IDM.put(row.querySelector(`[data-key="${key}"]`), key, doc[key], text);
    cell('bits', IDM.fmtNum(doc.bits));
    cell('model', doc.model === 'per-ms' ? 'same ms only' : doc.model === 'random' ? 'any two' : String(doc.model));
    cell('t50_s', IDM.fmtDuration(doc.t50_s));
    cell('t1e9_s', IDM.fmtDuration(doc.t1e9_s));
  }

  function load() {
    const rate = rateFor($('rate').value);
    const out = $('rate-value');
    out.textContent = `${IDM.fmtNum(Number(rate))} ids/s`;
    $('chart').setAttribute('aria-label', `Chance of any collision against time at ${out.textContent}, ` +
      'both on log scales, for random 32 and 64 bits, UUIDv7, UUIDv4 and ULID; the table below ' +
      'gives when each reaches 50% and one in a billion');
    return IDM.guard(async () => {
      const docs = await Promise.all(SCHEMES.map((s) => s.request('/v1/birthday' + IDM.query([
        ['bits', s.bits], ['rate', rate], ['duration', DURATION], ['points', 60], ['per-ms', s.perMs],
      ]))));
      SCHEMES.forEach((s, i) => show(s, docs[i]));
      shown = docs;
      IDM.put(out, 'rate', docs[0].rate, `${IDM.fmtNum(docs[0].rate)} ids/s`);
      IDM.ready();
    });
  }

  document.addEventListener('DOMContentLoaded', () => {
    frame();
    legend();
    let width = W;
    window.addEventListener('resize', IDM.debounce(() => {
      if (Math.round($('chart').parentElement.clientWidth) === width) return;
      frame();
      width = W;
      SCHEMES.forEach((s, i) => shown[i] && show(s, shown[i]));
    }, 150));
    $('rate').addEventListener('input', IDM.debounce(load, 120));
    load();
  });
})();
