// SPDX-License-Identifier: MIT
//
// The web console's shared code, loaded by every page before the page's
// own script: API calls (with the bearer token, when the server wants one),
// query strings (values go unencoded, so a value the server would refuse is
// reported here instead of sent), the error area, the busy and ready marks
// the browser tests wait on, the output elements (data-key, data-raw) and
// number formatting.
//
// Every figure a page shows comes from the server's JSON: the page formats
// it, never computes it. The formatting mirrors the command line's text
// output (src/cli/cmd_plan.c's fmt_num, fmt_pct and fmt_bytes, and
// src/cli/cmd_birthday.c's fmt_time), so a figure reads the same in both.
//
// Everything hangs off one global, IDM; no framework, no build step.
//
// It also builds what every page shares, so a page's HTML holds only its
// own content: the header (the brand and the navigation to every page) and
// the error area with the token dialog. A page keeps two empty placeholders
// for them, <header class="top" id="top"></header> and <div class="errwrap"
// id="errwrap"></div>, which this fills as soon as it runs. The pages load
// it with defer before their own script, and deferred scripts run in order
// once the document is parsed, so a page's script finds #error, #token-form
// and #nav already there, even at its top level.
'use strict';

// ---- the frame every page shares ----

(() => {
  // The console's pages, in the navigation's order: adding a page is a line
  // here (and the page's file in src/server/ui/).
  const PAGES = [
    ['index.html', 'Overview'],
    ['planner.html', 'Planner'],
    ['estimator.html', 'Estimator'],
    ['collisions.html', 'Collisions'],
    ['decoder.html', 'Decoder'],
    ['status.html', 'Status'],
  ];

  // A new element: its properties and attributes from props (a key that is
  // an element property, e.g. htmlFor, hidden or textContent, is set as one;
  // any other, e.g. aria-label, as an attribute), then its children.
  function frameElement(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k in el) el[k] = v;
      else el.setAttribute(k, String(v));
    }
    for (const child of children) el.appendChild(child);
    return el;
  }

  // This page's file name: the last part of the path, "index.html" for the
  // directory itself (/ui/ serves the index).
  function currentPage() {
    const last = location.pathname.split('/').pop();
    return last === '' ? 'index.html' : last;
  }

  // <div class="top-inner"> with the brand and <nav id="nav">: a link to
  // every page of PAGES, this one marked aria-current="page".
  function buildHeader(top) {
    const here = currentPage();
    const list = frameElement('ul');
    for (const [href, title] of PAGES) {
      const link = frameElement('a', { href, textContent: title });
      if (href === here) link.setAttribute('aria-current', 'page');
      list.appendChild(frameElement('li', {}, link));
    }
    const brand = frameElement('a', { className: 'brand', href: 'index.html' },
      frameElement('img', { src: 'favicon.svg', alt: '', width: 24, height: 24 }),
      document.createTextNode('idmint console'));
    const nav = frameElement('nav', { id: 'nav', 'aria-label': 'Console pages' }, list);
    top.replaceChildren(frameElement('div', { className: 'top-inner' }, brand, nav));
  }

  // <div id="error" role="alert"> (empty and hidden) and the token dialog,
  // <form id="token-form"> (hidden until a call gets 401).
  function buildErrorArea(wrap) {
    const error = frameElement('div', { id: 'error', role: 'alert', hidden: true });
    const input = frameElement('input', {
      id: 'token-input', type: 'password', autocomplete: 'off', spellcheck: false,
    });
    const form = frameElement('form', { id: 'token-form', hidden: true },
      frameElement('p', { id: 'token-note',
        textContent: 'This server wants a bearer token for its API.' }),
      frameElement('div', { className: 'row' },
        frameElement('div', { className: 'field' },
          frameElement('label', { htmlFor: 'token-input', textContent: 'Bearer token' }),
          input),
        frameElement('div', { className: 'field' },
          frameElement('button', { id: 'token-submit', className: 'primary', type: 'submit',
            textContent: 'Use token' }))),
      frameElement('p', { className: 'note',
        textContent: 'Kept in this tab only (session storage) and sent with each API call.' }));
    wrap.replaceChildren(error, form);
  }

  // Fills the placeholders; a page without one gets no header (or no error
  // area) rather than a broken script.
  function buildFrame() {
    const top = document.getElementById('top');
    if (top) buildHeader(top);
    const wrap = document.getElementById('errwrap');
    if (wrap) buildErrorArea(wrap);
  }

  // Now, before the page's own script runs (see above), not on
  // DOMContentLoaded: that fires after every deferred script.
  buildFrame();
})();

const IDM = (() => {
  const TOKEN_KEY = 'idmint-token';

  // ---- the error area (#error: empty and hidden when there is none) ----

  function showError(message) {
    const el = document.getElementById('error');
    if (!el) return;
    el.textContent = message;
    el.hidden = false;
  }

  function clearError() {
    const el = document.getElementById('error');
    if (!el) return;
    el.textContent = '';
    el.hidden = true;
  }

  // An error in what the user typed: shown in #error, never sent.
  class InputError extends Error {}

  // ---- busy and ready marks ----

  let inFlight = 0;

  function setBusy(delta) {
    inFlight += delta;
    document.body.dataset.busy = inFlight > 0 ? '1' : '0';
  }

  // After a page's first successful render.
  function ready() {
    document.body.dataset.ready = '1';
  }

  // ---- query strings ----

  // The bytes the server takes in a value as they are; it refuses
  // percent-encoding, so a value with any other byte cannot be sent.
  const VALUE_OK = /^[A-Za-z0-9._~:@,-]*$/;

  // "?a=1&b=x" from [[name, value], ...] (or an object of name: value).
  // A value of true is a flag ("name=1"); null, undefined, false and ""
  // leave the parameter out. A value with a byte the server refuses throws
  // an InputError naming the parameter and the byte.
  function query(params) {
    const pairs = Array.isArray(params) ? params : Object.entries(params);
    const parts = [];
    for (const [name, raw] of pairs) {
      if (raw === null || raw === undefined || raw === false || raw === '') continue;
      if (raw === true) {
        parts.push(name + '=1');
        continue;
      }
      const value = String(raw);
      if (!VALUE_OK.test(value)) {
        const bad = [...value].find((c) => !VALUE_OK.test(c));
        const shown = bad === ' ' ? 'a space' : bad === '+' ? "'+' (write Z for UTC)" : `'${bad}'`;
        throw new InputError(`${name}: '${value}' holds ${shown}; a value may hold only ` +
          'letters, digits and . _ ~ : @ , -');
      }
      parts.push(name + '=' + value);
    }
    return parts.length > 0 ? '?' + parts.join('&') : '';
  }

  // A path segment (an id in /v1/decode/ID), checked as a value is.
  function segment(name, value) {
    if (value === '') throw new InputError(`${name}: empty`);
    query([[name, value]]);
    return value;
  }

  // ---- the token dialog ----

  let tokenWaiters = [];

  function tokenForm() {
    return document.getElementById('token-form');
  }

  // Shows #token-form and resolves once a token is submitted.
  function askToken(again) {
    const form = tokenForm();
    if (!form) return Promise.reject(new Error('the server wants a bearer token'));
    form.hidden = false;
    const note = document.getElementById('token-note');
    if (note) {
      note.textContent = again ? 'That token was refused: try again.'
        : 'This server wants a bearer token for its API.';
    }
    const input = document.getElementById('token-input');
    if (input) input.focus();
    return new Promise((resolve) => tokenWaiters.push(resolve));
  }

  function wireTokenForm() {
    const form = tokenForm();
    if (!form) return;
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const input = document.getElementById('token-input');
      const token = input ? input.value.trim() : '';
      if (token === '') return;
      sessionStorage.setItem(TOKEN_KEY, token);
      if (input) input.value = '';
      form.hidden = true;
      const waiters = tokenWaiters;
      tokenWaiters = [];
      waiters.forEach((w) => w());
    });
  }

  // ---- API calls ----

  // The message of a JSON error answer: {"error": "..."} or
  // {"error": {"message": "...", "param": "..."}}.
  function errorText(status, body) {
    let e = body && body.error;
    if (e && typeof e === 'object') {
      const p = e.param ? ` (${e.param})` : '';
      e = (e.message || JSON.stringify(e)) + p;
    }
    return e ? String(e) : `the server answered ${status}`;
  }

  // GET path (already holding its query) as JSON. Resolves to the parsed
  // answer; rejects with an Error whose message is the server's. With
  // signal, an aborted call rejects with an AbortError the caller ignores.
  async function api(path, signal) {
    let refused = false;
    for (;;) {
      const headers = { Accept: 'application/json' };
      const token = sessionStorage.getItem(TOKEN_KEY);
      if (token) headers.Authorization = 'Bearer ' + token;
      setBusy(1);
      let rs;
      let body = null;
      try {
        rs = await fetch(path, { headers, signal, cache: 'no-store' });
        const text = await rs.text();
        try {
          body = text === '' ? null : JSON.parse(text);
        } catch (_) {
          body = null;
        }
      } finally {
        setBusy(-1);
      }
      if (rs.status === 401) {
        await askToken(refused || token !== null);
        refused = true;
        continue;
      }
      if (!rs.ok) throw new Error(errorText(rs.status, body));
      if (body === null) throw new Error(`the server's answer to ${path} is not JSON`);
      return body;
    }
  }

  // Runs fn (async); its failures go to #error, an aborted call is ignored.
  // Resolves to fn's value, or undefined after a failure.
  async function guard(fn) {
    try {
      const v = await fn();
      clearError();
      return v;
    } catch (err) {
      if (err && err.name === 'AbortError') return undefined;
      showError(err instanceof InputError ? 'Input: ' + err.message : String(err.message || err));
      return undefined;
    }
  }

  // Calls of which only the latest matters (a slider's): starting one
  // aborts the one before.
  function latest() {
    let ctl = null;
    return (path) => {
      if (ctl) ctl.abort();
      ctl = new AbortController();
      return api(path, ctl.signal);
    };
  }

  // fn, called ms after the last of a burst of calls. The page counts as
  // busy while a call waits, so a test that moved a slider and waits for
  // busy "0" sees the answer to the move, not the figures before it.
  function debounce(fn, ms) {
    let timer = 0;
    return (...args) => {
      if (timer === 0) setBusy(1);
      clearTimeout(timer);
      timer = setTimeout(() => {
        timer = 0;
        // The call's own requests mark busy before this unmarks it.
        try {
          fn(...args);
        } finally {
          setBusy(-1);
        }
      }, ms);
    };
  }

  // ---- output elements ----

  // The value at a dotted key path ("example.id") of obj.
  function pick(obj, path) {
    return path.split('.').reduce((o, k) => (o === null || o === undefined ? undefined : o[k]), obj);
  }

  // Sets el's figure: data-key, data-raw (the JSON value as JSON.stringify
  // gives it) and its text.
  function put(el, key, value, text) {
    el.dataset.key = key;
    el.dataset.raw = JSON.stringify(value === undefined ? null : value);
    el.textContent = text;
  }

  // Fills every [data-key] element under root from doc, each formatted by
  // formats[key] (or fmtValue).
  function fill(root, doc, formats) {
    for (const el of root.querySelectorAll('[data-key]')) {
      const key = el.dataset.key;
      const v = pick(doc, key);
      const f = (formats && formats[key]) || fmtValue;
      put(el, key, v, v === null || v === undefined ? '-' : f(v));
    }
  }

  // ---- number formatting (the CLI's rules) ----

  // C's "%.Df": as toFixed, but an exact tie (306.5 to no decimals) goes
  // to the even digit as glibc's printf rounds it ("306"), where toFixed
  // rounds it up ("307"). A double's exact decimal expansion is short enough
  // for toFixed(100) to hold it whole wherever a tie can occur.
  function cFixed(v, d) {
    const s = v.toFixed(d);
    if (!Number.isFinite(v) || Math.abs(v) >= 1e21) return s;
    const exact = Math.abs(v).toFixed(100);
    const dot = exact.indexOf('.');
    if (!/^50*$/.test(exact.slice(dot + 1 + d))) return s;
    const kept = exact.slice(0, d > 0 ? dot + 1 + d : dot);
    if (Number(kept[kept.length - 1]) % 2 === 1) return s; // odd: up, as toFixed
    return (v < 0 ? '-' : '') + kept;
  }

  // C's "%.Pe": "1.845e+19", "1.2e-05" (the exponent of two digits at least).
  function cExp(v, p) {
    const s = v.toExponential(p);
    const m = /^(-?[0-9.]+)e([+-])(\d+)$/.exec(s);
    if (!m) return s;
    return `${m[1]}e${m[2]}${m[3].padStart(2, '0')}`;
  }

  // C's "%.Pg": P significant digits, exponent form when the exponent is
  // below -4 or at least P; trailing zeros dropped.
  function cG(v, p) {
    if (v === 0) return '0';
    if (!Number.isFinite(v)) return String(v);
    const P = p === 0 ? 1 : p;
    const x = Number(v.toExponential(P - 1).split('e')[1]);
    let s;
    if (x < -4 || x >= P) {
      s = cExp(v, P - 1);
      s = s.replace(/\.?0+e/, 'e');
    } else {
      s = cFixed(v, P - 1 - x);
      if (s.includes('.')) s = s.replace(/\.?0+$/, '');
    }
    return s;
  }

  // cmd_plan.c's trim_zeros: a fraction's trailing zeros and a bare point.
  function trimZeros(s) {
    if (!s.includes('.') || s.includes('e')) return s;
    return s.replace(/0+$/, '').replace(/\.$/, '');
  }

  // cmd_plan.c's fmt_num: whole numbers below 2^53 exactly, others to a
  // few digits ("2.5", "1365333.3", "0.00012", "1.845e+19").
  function fmtNum(v) {
    if (typeof v !== 'number') return String(v);
    let s;
    if (v >= 9007199254740992) s = cG(v, 4);
    else if (Number.isInteger(v) && v >= 0) s = String(v);
    else if (v >= 1000) s = cFixed(v, 1);
    else if (v >= 0.001) s = cG(v, 4);
    else s = cG(v, 3);
    return trimZeros(s);
  }

  // cmd_plan.c's fmt_pct: one decimal from 1%, two below, two significant
  // digits below 0.01% (three from a million %).
  function fmtPct(p) {
    if (typeof p !== 'number') return String(p);
    if (p >= 1e6) return cG(p, 3) + '%';
    if (p >= 1 || p === 0) return cFixed(p, 1) + '%';
    if (p >= 0.01) return cFixed(p, 2) + '%';
    return cG(p, 2) + '%';
  }

  // cmd_plan.c's fmt_bytes: decimal units ("800 GB", "2.4 TB", "12.5 kB").
  function fmtBytes(b) {
    if (typeof b !== 'number') return String(b);
    const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB'];
    let u = 0;
    while (u + 1 < units.length && b >= 999.5) {
      b /= 1000;
      u++;
    }
    let s;
    if (b >= 100 || u === 0) s = cFixed(b, 0);
    else if (b >= 10) s = cFixed(b, 1);
    else s = cFixed(b, 2);
    return trimZeros(s) + ' ' + units[u];
  }

  // "%.1f years" as the CLI writes lifespans.
  function fmtYears(y) {
    return typeof y === 'number' ? cFixed(y, 1) + ' years' : String(y);
  }

  // cmd_birthday.c's fmt3: three significant digits, plain from 0.001 to
  // 999999, else "%.2e"; trailing zeros dropped.
  function fmt3(v) {
    const a = Math.abs(v);
    let s;
    if (a >= 1e-3 && a < 999999.5) {
      let dec = 2 - Math.floor(Math.log10(a));
      if (dec < 0) dec = 0;
      s = cFixed(v, dec);
      if (dec > 0 && Math.abs(Number(s)) >= 10 ** (3 - dec)) s = cFixed(v, dec - 1);
    } else if (v === 0) {
      return '0';
    } else {
      s = cExp(v, 2);
    }
    // strip_zeros: the fraction's trailing zeros, before any exponent.
    return s.replace(/(\.\d*?)0+(e|$)/, '$1$2').replace(/\.(e|$)/, '$1');
  }

  // cmd_birthday.c's fmt_time: seconds, hours, days or years.
  function fmtDuration(s) {
    if (typeof s !== 'number' || !Number.isFinite(s) || s > 1e300) return 'never (more than 1e300 s)';
    const YEAR_S = 365.25 * 86400;
    let v;
    let unit;
    if (s < 3600) [v, unit] = [s, 'seconds'];
    else if (s < 86400) [v, unit] = [s / 3600, 'hours'];
    else if (s < YEAR_S) [v, unit] = [s / 86400, 'days'];
    else [v, unit] = [s / YEAR_S, 'years'];
    const num = fmt3(v);
    return num === '1' ? '1 ' + unit.slice(0, -1) : `${num} ${unit}`;
  }

  // A probability: "%.2e" as the CLI's P(collision), plain from 0.001.
  function fmtProb(p) {
    if (typeof p !== 'number') return String(p);
    return p >= 0.001 || p === 0 ? fmt3(p) : cExp(p, 2);
  }

  // Any JSON value, for the figures without a rule of their own.
  function fmtValue(v) {
    if (v === null || v === undefined) return '-';
    if (typeof v === 'number') return fmtNum(v);
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }

  // ---- SVG ----

  const SVG_NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs, parent) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    if (parent) parent.appendChild(el);
    return el;
  }

  // ---- start ----

  document.addEventListener('DOMContentLoaded', () => {
    document.body.dataset.busy = '0';
    clearError();
    wireTokenForm();
    // A page with nothing to ask the server (the index) is rendered as is.
    if (document.body.dataset.static === '1') ready();
  });

  return {
    InputError, showError, clearError, ready, query, segment, api, guard, latest, debounce,
    pick, put, fill, cG, fmtNum, fmtPct, fmtBytes, fmtYears, fmt3, fmtDuration, fmtProb,
    fmtValue, svg,
  };
})();
