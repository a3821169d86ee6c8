// SPDX-License-Identifier: MIT
//
// The estimator: the fleet's figures as fields, /v1/estimate's answer as the
// five headline figures (formatted as `idmint estimate` prints them: "2.5
// ids/ms", "0.06%", "39.1%", "69.7 years", "800 GB"), the rest of the
// document in a table, and its warnings. Asks again as the fields change.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const request = IDM.latest();
  const INPUTS = ['rate', 'processes', 'skew', 'surge', 'rows', 'indexes'];

  // The headline figures, as the CLI's text output writes each.
  const HEADLINE = {
    busiest_ids_per_ms: (v) => IDM.fmtNum(v) + ' ids/ms',
    seq_share_pct: IDM.fmtPct,
    worker_ids_in_use_pct: IDM.fmtPct,
    lifespan_years: IDM.fmtYears,
    bytes_saved_total: IDM.fmtBytes,
  };

  // The rest of the document: a label and a format per key.
  const REST = [
    ['layout', 'Layout', String],
    ['text', 'Text form', String],
    ['tick_ms', 'Tick', (v) => `${v} ms`],
    ['rate', 'Fleet rate', (v) => IDM.fmtNum(v) + ' ids/s'],
    ['processes', 'Processes', IDM.fmtNum],
    ['skew', 'Skew', (v) => 'x' + IDM.fmtNum(v)],
    ['surge', 'Deploy surge', (v) => 'x' + IDM.fmtNum(v)],
    ['average_ids_per_second', 'Average process', (v) => IDM.fmtNum(v) + ' ids/s'],
    ['busiest_ids_per_second', 'Busiest process', (v) => IDM.fmtNum(v) + ' ids/s'],
    ['busiest_ids_per_tick', 'Busiest process per tick', IDM.fmtNum],
    ['seq_per_tick', 'Sequence per tick', IDM.fmtNum],
    ['worker_ids', 'Worker ids', IDM.fmtNum],
    ['worker_ids_in_use', 'Worker ids in use', IDM.fmtNum],
    ['worker_ids_during_deploys', 'Worker ids during deploys', IDM.fmtNum],
    ['worker_ids_during_deploys_pct', 'Of the worker ids, during deploys', IDM.fmtPct],
    ['time_bits', 'Time bits', IDM.fmtNum],
    ['time_end', 'Time runs out', String],
    ['time_end_ms', 'Time runs out (unix ms)', IDM.fmtNum],
    ['rows', 'Rows', IDM.fmtNum],
    ['indexes', 'Indexes', IDM.fmtNum],
    ['bytes_saved_per_index', 'Index bytes saved, per index', IDM.fmtBytes],
  ];

  function params() {
    const v = (id) => $(id).value.trim();
    const p = [];
    for (const id of INPUTS) {
      // --indexes needs --rows: without rows, indexes means nothing.
      if (id === 'indexes' && v('rows') === '') continue;
      p.push([id, v(id)]);
    }
    if (v('rate') === '') throw new IDM.InputError('rate: give the fleet\'s peak ids per second');
    if (v('processes') === '') throw new IDM.InputError('processes: give the number of processes');
    p.push(['layout', $('layout').value]);
    return p;
  }

  function show(doc) {
    for (const el of document.querySelectorAll('.figures [data-key]')) {
      const key = el.dataset.key;
      const v = doc[key];
      IDM.put(el, key, v, v === null || v === undefined ? '- (give rows)' : HEADLINE[key](v));
    }
    const body = $('all-figures');
    body.replaceChildren();
    const seen = new Set(['warnings', ...Object.keys(HEADLINE)]);
    const rows = REST.filter(([k]) => k in doc);
    // Keys this page has no label for still show, by their JSON name.
    for (const k of Object.keys(doc)) {
      if (!seen.has(k) && !REST.some(([r]) => r === k)) rows.push([k, k, IDM.fmtValue]);
    }
    for (const [key, label, fmt] of rows) {
      const tr = document.createElement('tr');
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = label;
      const td = document.createElement('td');
      td.className = 'val';
      const v = doc[key];
      IDM.put(td, key, v, v === null ? '-' : fmt(v));
      const code = document.createElement('td');
      code.className = 'mono note key-col';
      code.textContent = key;
      tr.append(th, td, code);
      body.append(tr);
    }
    const list = $('warnings');
    list.replaceChildren();
    for (const w of doc.warnings || []) {
      const li = document.createElement('li');
      li.textContent = 'Warning: ' + w;
      list.append(li);
    }
    $('no-warnings').hidden = (doc.warnings || []).length > 0;
  }

  function load() {
    return IDM.guard(async () => {
      const doc = await request('/v1/estimate' + IDM.query(params()));
      show(doc);
      IDM.ready();
    });
  }

  document.addEventListener('DOMContentLoaded', () => {
    const later = IDM.debounce(load, 150);
    for (const id of INPUTS) $(id).addEventListener('input', later);
    $('layout').addEventListener('change', load);
    $('estimate-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      load();
    });
    load();
  });
})();
