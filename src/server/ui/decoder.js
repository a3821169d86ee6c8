// SPDX-License-Identifier: MIT
//
// The decoder: any id through /v1/decode/ID, a Snowflake-style one in the
// server's layout, a preset's or a custom one (text form and epoch), the
// answer's keys as a list (#decode-result: <dd data-key="KEY">). Enter in
// the id field submits.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const request = IDM.latest();

  const LABELS = {
    id: 'Id', kind: 'Kind', layout: 'Layout', time: 'Time', unix_ms: 'Unix ms',
    version: 'UUID version', variant: 'Variant', uuid: 'As a UUID', process: 'Process',
    counter: 'Counter',
  };

  function params() {
    const choice = $('decode-layout').value;
    if (choice === 'server') return [];
    if (choice !== 'custom') return [['layout', choice]];
    const text = $('decode-layout-text').value.trim();
    if (text === '') throw new IDM.InputError('layout: give the text form, e.g. time:41@1ms,worker:10,seq:12');
    return [['layout', text], ['epoch', $('decode-epoch').value.trim()]];
  }

  function show(doc) {
    const dl = $('decode-result');
    dl.replaceChildren();
    for (const [key, v] of Object.entries(doc)) {
      const dt = document.createElement('dt');
      dt.textContent = LABELS[key] || key;
      const dd = document.createElement('dd');
      if (key === 'id' || key === 'uuid' || key === 'process') dd.className = 'mono';
      IDM.put(dd, key, v, IDM.fmtValue(v));
      dl.append(dt, dd);
    }
    $('decode-empty').hidden = true;
  }

  function decode() {
    return IDM.guard(async () => {
      const id = IDM.segment('id', $('id-input').value.trim());
      const doc = await request('/v1/decode/' + id + IDM.query(params()));
      show(doc);
    });
  }

  function custom() {
    $('custom-fields').hidden = $('decode-layout').value !== 'custom';
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('decode-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      decode();
    });
    $('decode-layout').addEventListener('change', custom);
    for (const b of document.querySelectorAll('button.example')) {
      b.addEventListener('click', () => {
        $('id-input').value = b.dataset.id;
        decode();
      });
    }
    custom();
    // Nothing to ask the server until an id is given: the empty form is
    // the first render.
    IDM.ready();
  });
})();
