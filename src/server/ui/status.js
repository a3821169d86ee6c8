// SPDX-License-Identifier: MIT
//
// The status page: /v1/status every 2 s (?every=MS shortens it, 200 ms at
// least), its figures by data-key, a banner when the server is not healthy
// (the health reason: clock back, lease lost, store down...), its warnings
// and a bar chart of the ids minted per second over the last minute.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  function every() {
    const v = new URLSearchParams(location.search).get('every');
    if (v === null || !/^[0-9]+$/.test(v)) return 2000;
    return Math.max(200, Number(v));
  }

  // Whole numbers as they are, others to four digits (figures may be
  // negative here, which the CLI's fmt_num never sees).
  function num(v) {
    return Number.isInteger(v) ? String(v) : IDM.cG(v, 4);
  }

  function uptime(s) {
    const d = Math.floor(s / 86400);
    const h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60);
    const parts = [];
    if (d > 0) parts.push(`${d} d`);
    if (d > 0 || h > 0) parts.push(`${h} h`);
    if (d > 0 || h > 0 || m > 0) parts.push(`${m} min`);
    parts.push(`${s % 60} s`);
    return parts.join(' ');
  }

  const ms = (v) => `${num(v)} ms`;
  const perS = (v) => `${num(v)} ids/s`;
  const FORMATS = {
    uptime_s: uptime,
    'lease.deadline_in_ms': (v) => (v < 0 ? `${ms(v)} (passed)` : ms(v)),
    'clock.offset_ms': ms,
    'clock.last_step_ms': ms,
    'clock.drift_ppm': (v) => `${num(v)} ppm`,
    'rates.last': perS,
    'rates.avg_60s': perS,
  };

  // What a null (or missing) figure means, in words.
  function absent(doc, key) {
    if (key === 'worker_id') return 'none (no lease)';
    if (key.startsWith('lease.') && !doc.lease) return key === 'lease.state' ? 'no lease' : '-';
    return '-';
  }

  function fmt(key, v) {
    if (typeof v === 'number') return (FORMATS[key] || num)(v);
    return (FORMATS[key] || IDM.fmtValue)(v);
  }

  function banner(health) {
    const el = $('banner');
    if (!health || health.ok) {
      el.hidden = true;
      el.className = 'banner';
      el.textContent = '';
      return;
    }
    el.hidden = false;
    el.className = 'banner bad';
    el.textContent = 'Not minting: ' + (health.reason || 'the server reports it is not healthy');
  }

  function warnings(health) {
    const list = $('warnings');
    list.replaceChildren();
    const ws = (health && health.warnings) || [];
    for (const w of ws) {
      const li = document.createElement('li');
      li.textContent = 'Warning: ' + w;
      list.append(li);
    }
    $('no-warnings').hidden = ws.length > 0;
  }

  // One bar a second, oldest on the left; the tallest bar is the top.
  function chart(rates) {
    const box = $('rate-chart');
    box.replaceChildren();
    // One viewBox unit a CSS pixel, so the label reads the same on a phone.
    const W = Math.max(300, Math.round(box.parentElement.clientWidth) || 800);
    const H = 180;
    box.setAttribute('viewBox', `0 0 ${W} ${H}`);
    const pad = { left: 8, right: 8, top: 24, bottom: 8 };
    const values = (rates && rates.ids_per_s) || [];
    const max = Math.max(1, ...values);
    const slot = (W - pad.left - pad.right) / 60;
    IDM.svg('line', { class: 'axis', x1: pad.left, x2: W - pad.right, y1: H - pad.bottom,
      y2: H - pad.bottom }, box);
    // The newest second sits at the right edge.
    const first = 60 - values.length;
    values.forEach((v, i) => {
      const h = (v / max) * (H - pad.top - pad.bottom);
      IDM.svg('rect', { class: 'bar', x: (pad.left + (first + i) * slot + 1).toFixed(1),
        y: (H - pad.bottom - h).toFixed(1), width: Math.max(1, slot - 2).toFixed(1),
        height: h.toFixed(1) }, box);
    });
    const top = IDM.svg('text', { x: pad.left, y: 14 }, box);
    const peak = Math.max(0, ...values);
    top.textContent = values.length === 0 ? 'no samples yet'
      : peak === 0 ? `no ids minted in the last ${values.length} s` : `peak ${num(peak)} ids/s`;
    box.setAttribute('aria-label', values.length > 0
      ? `Ids minted per second over the last ${values.length} s: peak ${num(peak)}, last ` +
        `${num(values[values.length - 1])}`
      : 'Ids minted per second: no samples yet');
  }

  function show(doc) {
    for (const el of $('main').querySelectorAll('[data-key]')) {
      const key = el.dataset.key;
      const v = IDM.pick(doc, key);
      IDM.put(el, key, v, v === null || v === undefined ? absent(doc, key) : fmt(key, v));
    }
    banner(doc.health);
    warnings(doc.health);
    chart(doc.rates);
    $('updated').textContent = doc.now ? `Last answer: ${doc.now}.` : '';
  }

  async function poll(period) {
    await IDM.guard(async () => {
      const doc = await IDM.api('/v1/status');
      show(doc);
      IDM.ready();
    });
    setTimeout(() => poll(period), period);
  }

  document.addEventListener('DOMContentLoaded', () => {
    const period = every();
    $('every').textContent = IDM.fmtNum(period / 1000);
    poll(period);
  });
})();
