// SPDX-License-Identifier: MIT
//
// The planner: a layout's fields as sliders (and number fields), its tick
// and epoch, the needs (workers, peak), and what /v1/plan says the layout
// gives. A preset is asked for by name and its answer's text form fills the
// rows; after any change the page sends the layout's text form and the
// epoch in unix ms, and shows both (#layout-text, #layout-epoch) so a figure
// can be checked against `idmint plan --layout TEXT --epoch MS`.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const request = IDM.latest();
  // Set by the last answer the page showed (and by the rows).
  let fields = []; // [{name, bits, time}]
  let suggested = null;

  // ---- the layout's text form ----

  // "time:41@1ms,datacenter:5,..." -> [{name, bits, time}], the tick aside
  // (the answer's tick_ms gives it).
  function parseText(text) {
    return text.split(',').map((part) => {
      const [name, rest] = part.split(':');
      const time = rest.includes('@');
      return { name, bits: Number(rest.split('@')[0]), time };
    });
  }

  // The tick as the text form writes it: "1ms", "10ms", "1s".
  function tickText(ms) {
    return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
  }

  function readTick() {
    const v = $('tick').value.trim();
    if (!/^[1-9][0-9]*$/.test(v)) throw new IDM.InputError(`tick: '${v}' is not a whole number of ms (1 or more)`);
    return Number(v);
  }

  function layoutText() {
    const tick = tickText(readTick());
    return fields.map((f) => `${f.name}:${f.bits}${f.time ? '@' + tick : ''}`).join(',');
  }

  // The epoch field as unix ms: digits as they are, an ISO-8601 time (with
  // Z or an offset) read by the browser; anything else is an input error.
  const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d{1,3})?)?(Z|[+-]\d\d:\d\d)$/;
  function epochMs(text, name) {
    const v = text.trim();
    if (/^[0-9]+$/.test(v)) return v;
    if (ISO.test(v)) {
      const ms = Date.parse(v);
      if (Number.isFinite(ms) && ms >= 0) return String(ms);
    }
    throw new IDM.InputError(`${name}: '${v}' is neither unix ms nor an ISO-8601 time ` +
      '(2010-11-04T01:42:54.657Z)');
  }

  function needs() {
    return [['workers', $('workers').value.trim()], ['peak', $('peak').value.trim()]];
  }

  // ---- the rows ----

  function bitsInput(f, type) {
    const el = document.createElement('input');
    el.type = type;
    el.id = (type === 'range' ? 'range-' : 'bits-') + f.name;
    el.min = '1';
    el.max = f.time ? '63' : '32';
    el.step = '1';
    el.value = String(f.bits);
    el.dataset.field = f.name;
    el.dataset.part = 'bits';
    if (type === 'number') el.inputMode = 'numeric';
    return el;
  }

  function renderRows() {
    const box = $('bit-rows');
    box.replaceChildren();
    for (const f of fields) {
      const row = document.createElement('div');
      row.className = 'bitrow';
      const label = document.createElement('label');
      label.htmlFor = 'range-' + f.name;
      label.textContent = `${f.name} bits`;
      const range = bitsInput(f, 'range');
      const num = bitsInput(f, 'number');
      const numLabel = document.createElement('label');
      numLabel.htmlFor = num.id;
      numLabel.className = 'sr-only';
      numLabel.textContent = `${f.name} bits (number)`;
      range.addEventListener('input', () => {
        num.value = range.value;
        f.bits = Number(range.value);
        changed();
      });
      num.addEventListener('input', () => {
        const v = num.value.trim();
        if (!/^[0-9]+$/.test(v)) return; // half typed: wait for a number
        f.bits = Number(v);
        range.value = v;
        changed();
      });
      row.append(label, range, numLabel, num);
      box.append(row);
    }
  }

  // ---- showing an answer ----

  // An ISO time with a space for its 'T', so a narrow card breaks it
  // between the date and the time of day.
  const when = (v) => String(v).replace('T', ' ');
  const never = (what) => (v) => (v === null ? what : when(v));
  const formats = {
    time_end: when,
    'example.time': when,
    'suggested.time_end': when,
    years_left: IDM.fmtYears,
    span_years: IDM.fmtYears,
    worker_ids: IDM.fmtNum,
    ids_per_second_per_worker: (v) => IDM.fmtNum(v) + ' ids/s',
    ids_per_second_fleet: (v) => IDM.fmtNum(v) + ' ids/s',
    over_2_53_from: never('never'),
    negative_from: never('never'),
  };

  function chip(id, label, verdict) {
    const el = $(id);
    if (verdict === undefined || verdict === null) {
      el.hidden = true;
      el.textContent = '';
      el.className = 'chip';
      delete el.dataset.raw;
      delete el.dataset.key;
      return;
    }
    const ok = verdict === 'ok';
    el.hidden = false;
    el.className = 'chip ' + (ok ? 'ok' : 'bad');
    el.dataset.key = 'verdicts.' + id.slice(5);
    el.dataset.raw = JSON.stringify(verdict);
    el.textContent = `${ok ? '\u2713' : '\u2717'} ${label}: ${verdict}`;
  }

  function show(doc) {
    const main = $('main');
    // The figures whose JSON value is null say so in words of their own.
    for (const el of main.querySelectorAll('[data-key]')) {
      if (el.classList.contains('chip')) continue;
      const key = el.dataset.key;
      const v = IDM.pick(doc, key);
      let text;
      if (v === undefined || v === null) {
        if (key === 'time_end') text = `beyond the year 9999 (${IDM.fmtNum(doc.time_end_ms)} ms)`;
        else if (key.startsWith('suggested.')) text = 'no 63-bit layout meets the needs';
        else text = formats[key] ? formats[key](null) : '-';
      } else {
        text = (formats[key] || IDM.fmtValue)(v);
      }
      IDM.put(el, key, v, text);
    }
    const v = doc.verdicts || {};
    chip('chip-lifespan', 'Lifespan', v.lifespan);
    chip('chip-workers', 'Workers', v.workers);
    chip('chip-peak', 'Peak', v.peak);
    suggested = doc.suggested || null;
    $('use-suggested').disabled = suggested === null || suggested.text === doc.text;
  }

  function pressPreset(name) {
    for (const b of document.querySelectorAll('[data-preset]')) {
      b.setAttribute('aria-pressed', String(b.dataset.preset === name));
    }
  }

  // What was sent (no data-key: these are inputs echoed, not figures).
  function showSent(text, epoch) {
    $('layout-text').textContent = text;
    $('layout-epoch').textContent = epoch;
  }

  // ---- asking ----

  // A preset by name: its answer fills the rows, tick and epoch.
  function loadPreset(name) {
    return IDM.guard(async () => {
      const doc = await request('/v1/plan' + IDM.query([['layout', name], ...needs()]));
      fields = parseText(doc.text);
      $('tick').value = String(doc.tick_ms);
      $('epoch').value = doc.epoch || String(doc.epoch_ms);
      renderRows();
      showSent(doc.text, String(doc.epoch_ms));
      pressPreset(name);
      show(doc);
      IDM.ready();
    });
  }

  // The layout as the rows, tick and epoch say.
  function loadCurrent() {
    return IDM.guard(async () => {
      const text = layoutText();
      const epoch = epochMs($('epoch').value, 'epoch');
      const q = IDM.query([['layout', text], ['epoch', epoch], ...needs()]);
      showSent(text, epoch);
      const doc = await request('/v1/plan' + q);
      show(doc);
      IDM.ready();
    });
  }

  const schedule = IDM.debounce(loadCurrent, 120);

  function changed() {
    pressPreset(null);
    schedule();
  }

  document.addEventListener('DOMContentLoaded', () => {
    for (const b of document.querySelectorAll('[data-preset]')) {
      b.addEventListener('click', () => loadPreset(b.dataset.preset));
    }
    for (const id of ['tick', 'epoch', 'workers', 'peak']) $(id).addEventListener('input', changed);
    $('use-suggested').addEventListener('click', () => {
      if (!suggested) return;
      fields = parseText(suggested.text);
      renderRows();
      changed();
    });
    loadPreset('twitter');
  });
})();
