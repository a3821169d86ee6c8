# SPDX-License-Identifier: MIT
"""idmintd's web console (/ui/) in a real browser: Debian's chromium,
headless, driven over the Chrome DevTools Protocol (cdp.py, beside this
file), against real idmintd servers this script starts.

Usage: python3 test_console.py BUILD_DIR
  BUILD_DIR holds the built idmint and idmintd. Screenshots of every page at
  desktop and phone widths go to $IDM_SCREENSHOT_DIR if set, else to
  BUILD_DIR/screenshots (scripts/screenshots.sh points it at docs/screenshots).

It starts a one-member etcd (scripts/etcd-test-server.sh, on free loopback
ports, in a temporary directory), idmintd A leased from it with a short
lease (2 s, the least etcd grants), and idmintd B with a bearer token (and
a file lease of its own). What it checks, each check named in the output
(README.md beside this file lists them):
  - every page loads at desktop and phone widths with nothing in the
    browser's console (no console.error, no exception, no CSP violation, no
    failed request, no 4xx/5xx for the page's own files), has the
    navigation, the error area empty, a label for every control, and at
    phone width the device's width and no sideways scrolling;
  - planner: a preset reached with Tab and chosen with Enter, another
    clicked, a field's slider moved with the arrow keys: the figures change
    and equal what `idmint plan --json` says for the layout and epoch the
    page shows it sent (example.* aside: it depends on the time);
  - estimator: the reference case's five figures, and the CLI's values;
  - collisions: five curves, the two marks; dragging the rate slider
    redraws them; the table equals `idmint birthday --json` for the rate
    the page asked about;
  - decoder: a Twitter id, a UUIDv7 and a ULID typed in and submitted with
    Enter decode to what `idmint decode --json` says (and the known times),
    and the Twitter id in a layout chosen on the page as with --layout;
  - token: on B, the page asks for the token, the token typed is sent and
    the calls succeed; another page of B then does not ask again;
  - status: worker id and lease "held" as /v1/status says, minted counts
    rising after ids are minted over HTTP; then etcd is killed and the page
    shows the banner naming the lease and lease.state "lost".
Every wait is bounded (the lease's by a bound derived from its TTL): no
check measures how long anything took.

Ends with "N passed, N failed"; exits 1 if any check failed or none passed.
A missing chromium (or etcd, or a server that does not start) is a failure,
never a skip: they are dependencies (scripts/deps.sh installs them).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

# cdp.py beside this file; no __pycache__ left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ETCD_SERVER = os.path.join(ROOT, "scripts", "etcd-test-server.sh")

PAGES = ["index", "planner", "estimator", "collisions", "decoder", "status"]
# The lease's time to live (ms): the shortest etcd grants, so that a lost
# lease shows soon after etcd is gone.
TTL_MS = 2000
# How often the status page refreshes here (its ?every= parameter, ms).
STATUS_EVERY_MS = 300
TOKEN = "console-test-token-0123456789"
# Any wait for an event that must come (a server up, a page rendered) ends
# a check that never sees it after this many seconds: it measures nothing.
BOUND = 20

TW_EPOCH_MS = 1288834974657
# The ids the decoder is given: a Twitter id; RFC 9562's UUIDv7 example;
# the ULID of the ULID specification's README.
TWITTER_ID = "1541815603606036480"
TWITTER_MS = 1656432460105   # (TWITTER_ID >> 22) + TW_EPOCH_MS
UUID7 = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F"
UUID7_TIME = "2022-02-22T19:22:22.000Z"
ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
ULID_TIME = "2016-07-30T23:54:10.259Z"

# The estimator's reference case, as the page shows it by default.
ESTIMATE_FIGURES = {
    "busiest_ids_per_ms": "2.5 ids/ms",
    "seq_share_pct": "0.06%",
    "worker_ids_in_use_pct": "39.1%",
    "lifespan_years": "69.7 years",
    "bytes_saved_total": "800 GB",
}
ESTIMATE_ARGS = ["--rate", "200000", "--processes", "400", "--skew", "5", "--surge", "2",
                 "--rows", "100000000000", "--indexes", "1", "--layout", "twitter"]
PLAN_KEYS = ["time_end", "years_left", "span_years", "worker_ids", "ids_per_second_per_worker",
             "ids_per_second_fleet", "over_2_53_from", "negative_from", "example.id"]
SCHEMES = {"random32": (32, False), "random64": (64, False), "uuid7": (74, True),
           "uuid4": (122, False), "ulid": (80, True)}


# ---- checks ----

PASSED = 0
FAILED = 0


class Fail(Exception):
    """A check's failure, with the message to print."""


def expect(cond, message):
    if not cond:
        raise Fail(message)


def check(name, fn, *args):
    """Run one named check: it passes if fn returns, fails on any exception
    (its message printed). Returns fn's value, or None."""
    global PASSED, FAILED
    try:
        v = fn(*args)
    except (Fail, cdp.CDPError) as e:
        FAILED += 1
        print("FAIL: %s: %s" % (name, e), flush=True)
        return None
    except Exception as e:  # a bug here, or something nobody expected
        FAILED += 1
        print("FAIL: %s: %s: %s\n%s" % (name, type(e).__name__, e, traceback.format_exc()),
              flush=True)
        return None
    PASSED += 1
    print("ok: %s" % name, flush=True)
    return v


def finish():
    print("%d passed, %d failed" % (PASSED, FAILED), flush=True)
    sys.exit(0 if FAILED == 0 and PASSED > 0 else 1)


def wait_until(fn, what, bound=BOUND, interval=0.05):
    """fn() until it gives a truthy value (returned), at most bound s."""
    end = time.monotonic() + bound
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() >= end:
            raise Fail("waited %g s for %s" % (bound, what))
        time.sleep(interval)


# ---- the servers ----

class Servers:
    """etcd and the idmintd servers, in one temporary directory; stop()
    kills whatever still runs and removes the directory."""

    def __init__(self, build):
        self.build = build
        self.idmint = os.path.join(build, "idmint")
        self.idmintd = os.path.join(build, "idmintd")
        self.tmp = tempfile.mkdtemp(prefix="idm-console-")
        self.procs = []
        self.etcd_dir = None
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("IDMINT_")}
        self.env["HOME"] = os.path.join(self.tmp, "home")
        self.env["LC_ALL"] = "C"
        # etcd's watcher follows this process: etcd dies with it.
        self.env["IDM_ETCD_OWNER"] = str(os.getpid())
        os.makedirs(self.env["HOME"])

    def etcd(self, *args):
        return subprocess.run(["bash", ETCD_SERVER] + list(args), env=self.env, capture_output=True,
                              text=True, timeout=120)

    def start_etcd(self):
        """A one-member etcd; its client endpoint host:port."""
        self.etcd_dir = os.path.join(self.tmp, "etcd")
        os.makedirs(self.etcd_dir)
        r = self.etcd("start", self.etcd_dir, "1")
        expect(r.returncode == 0, "cannot start etcd: %s" % (r.stderr or r.stdout)[-600:])
        return r.stdout.strip()

    def kill_etcd(self):
        r = self.etcd("kill", self.etcd_dir, "1")
        expect(r.returncode == 0, "cannot kill etcd: %s" % (r.stderr or r.stdout)[-600:])

    def start_idmintd(self, name, *args):
        """idmintd NAME on a free loopback port; its base URL once it says
        it listens."""
        data = os.path.join(self.tmp, name)
        os.makedirs(data)
        log = os.path.join(self.tmp, name + ".log")
        with open(log, "wb") as err:
            p = subprocess.Popen([self.idmintd, "--listen", "127.0.0.1:0", "--data-dir", data]
                                 + list(args), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                 env=self.env)
        self.procs.append(p)
        pat = re.compile(r"^idmintd: listening on (http://127\.0\.0\.1:[0-9]+) ", re.M)

        def up():
            with open(log, errors="replace") as f:
                m = pat.search(f.read())
            if m:
                return m.group(1)
            if p.poll() is not None:
                with open(log, errors="replace") as f:
                    raise Fail("idmintd %s exited %s: %s" % (name, p.returncode, f.read()[-600:]))
            return None
        return wait_until(up, "idmintd %s to listen" % name)

    def cli(self, *args):
        """The built idmint's --json answer, parsed."""
        r = subprocess.run([self.idmint] + list(args), env=self.env, capture_output=True,
                           text=True, timeout=60)
        expect(r.returncode == 0, "idmint %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                                r.stderr.strip()[:400]))
        return json.loads(r.stdout)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.etcd_dir is not None:
            self.etcd("stop", self.etcd_dir)
        shutil.rmtree(self.tmp, ignore_errors=True)


def http_get(url, token=None):
    """(status, parsed JSON body or None)."""
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


class Minter:
    """A light, steady load on a server (50 ids every 100 ms) while the test
    runs, so that the status page has rates to draw."""

    def __init__(self, base):
        self.base = base
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stopped.wait(0.1):
            try:
                http_get(self.base + "/v1/snowflake?count=50")
            except OSError:
                pass

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopped.set()
        self.thread.join(timeout=15)


# ---- page helpers ----

def figures(page, root="#main"):
    """Every [data-key] element under root: {key: (raw JSON text, text)}."""
    return page.js("""(() => { const out = {};
        for (const e of document.querySelector(%s).querySelectorAll('[data-key]'))
          out[e.dataset.key] = [e.dataset.raw === undefined ? null : e.dataset.raw,
                                e.textContent.trim()];
        return out; })()""", root) or {}


def pick(doc, path):
    """The value at a dotted key path of a JSON document (KeyError if none)."""
    v = doc
    for k in path.split("."):
        if not isinstance(v, dict) or k not in v:
            raise KeyError(path)
        v = v[k]
    return v


def raw_value(key, raw):
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        raise Fail("%s: data-raw %r is not JSON" % (key, raw)) from None


def compare_to_cli(figs, doc, what, skip=(), close=()):
    """Every figure whose key the CLI's document has equals its value there
    (keys in close may differ by 0.1: a time-dependent figure rounded to
    0.1 may cross a rounding step between the two runs). Returns the keys
    compared."""
    compared, bad = [], []
    for key, (raw, _text) in sorted(figs.items()):
        if any(key == s or key.startswith(s + ".") for s in skip):
            continue
        try:
            want = pick(doc, key)
        except KeyError:
            continue
        got = raw_value(key, raw)
        ok = got == want
        num = (int, float)
        if not ok and key in close and isinstance(got, num) and isinstance(want, num):
            ok = abs(got - want) <= 0.1 + 1e-9
        if not ok:
            bad.append("%s: page %s, CLI %s" % (key, raw, json.dumps(want)))
        compared.append(key)
    expect(not bad, "%s: figures differ from the CLI's: %s" % (what, "; ".join(bad)))
    return compared


def no_errors(page, what, allow=None):
    errs = [e for e in page.errors if not (allow and allow(e))]
    expect(not errs, "%s: console errors: %s" % (what, page.errors_text(errs)))


def fonts_ready(page):
    page.evaluate("document.fonts.ready.then(() => true)")


def settle_idle(page, extra=0.3):
    """Wait until no request is in flight, then for any debounced request
    to have started and ended too."""
    page.wait_idle(BOUND)
    page.settle(extra)
    page.wait_idle(BOUND)


# ---- the checks ----

def page_loads(page, base, name, view, shots):
    """One page at one width: loads, no console error, its common parts."""
    page.set_viewport(view)
    url = base + "/ui/" + ("" if name == "index" else name + ".html")
    if name == "status":
        url += "?every=%d" % STATUS_EVERY_MS
    page.navigate(url, timeout=BOUND)
    settle_idle(page)
    if name == "collisions":
        page.wait_for("document.querySelectorAll('#chart path[data-scheme]').length === 5 && "
                      "[...document.querySelectorAll('#chart path[data-scheme]')]"
                      ".every(p => (p.getAttribute('d') || '').length > 0)",
                      "the five curves to be drawn", BOUND)
    if name == "status":
        # A few refreshes: the rate chart has points.
        page.settle(3 * STATUS_EVERY_MS / 1000)
    fonts_ready(page)
    no_errors(page, url)
    common = page.js("""(() => {
      const out = [];
      const nav = document.getElementById('nav');
      if (!nav || nav.tagName !== 'NAV') out.push('no <nav id="nav">');
      else {
        const norm = (h) => h.replace(/[?#].*$/, '').replace(/index\\.html$/, '');
        const want = %s.map((p) => norm(new URL(p === 'index' ? './' : p + '.html',
                                                location.href).href));
        const links = [...nav.querySelectorAll('a[href]')].map((a) => norm(a.href));
        for (const w of want) if (!links.includes(w)) out.push('nav has no link to ' + w);
        const cur = [...nav.querySelectorAll('[aria-current="page"]')];
        if (cur.length !== 1 || norm(cur[0].href || '') !== norm(location.href))
          out.push('aria-current="page" is not on this page\\'s link alone (' +
                   cur.map((c) => c.getAttribute('href')).join(',') + ')');
      }
      const main = document.getElementById('main');
      if (!main || main.tagName !== 'MAIN') out.push('no <main id="main">');
      const err = document.getElementById('error');
      if (!err) out.push('no #error');
      else {
        if (err.getAttribute('role') !== 'alert') out.push('#error has no role="alert"');
        if (!(err.hidden || getComputedStyle(err).display === 'none'))
          out.push('#error is shown: ' + err.textContent);
        if (err.textContent.trim() !== '') out.push('#error holds ' + err.textContent);
      }
      for (const el of document.querySelectorAll('input, select, textarea, button')) {
        if (el.type === 'hidden') continue;
        const named = (el.labels && el.labels.length > 0) || el.getAttribute('aria-label') ||
          el.getAttribute('aria-labelledby') || el.getAttribute('title') ||
          (el.tagName === 'BUTTON' && el.textContent.trim() !== '');
        if (!named) out.push('no label for ' + el.outerHTML.slice(0, 120));
      }
      const form = document.getElementById('token-form');
      if (!form) out.push('no #token-form');
      else if (!(form.hidden || getComputedStyle(form).display === 'none'))
        out.push('#token-form is shown on a server without a token');
      return out; })()""" % json.dumps(PAGES))
    expect(not common, "%s at %s width: %s" % (url, view, "; ".join(common)))
    if view == "phone":
        w = page.evaluate("[window.innerWidth, document.documentElement.scrollWidth]")
        expect(w[0] == cdp.VIEWPORTS["phone"]["width"],
               "%s: at phone width the page is laid out %d px wide, not the device's %d (content "
               "wider than the screen, or no <meta name=viewport content=\"width=device-width\">)"
               % (url, w[0], cdp.VIEWPORTS["phone"]["width"]))
        expect(w[1] <= w[0], "%s: at phone width the page is %d px wide: it scrolls sideways"
               % (url, w[1]))
    if shots:
        page.screenshot(os.path.join(shots, "%s-%s.png" % (name, view)))


def plan_cli(srv, page):
    """`idmint plan --json` for what the planner shows it sent."""
    sent = page.evaluate("""(() => ({
        text: document.getElementById('layout-text').textContent.trim(),
        epoch: document.getElementById('layout-epoch').textContent.trim(),
        workers: (document.getElementById('workers') || {}).value || '',
        peak: (document.getElementById('peak') || {}).value || ''}))()""")
    expect(sent["text"] and re.fullmatch(r"-?[0-9]+", sent["epoch"] or ""),
           "#layout-text / #layout-epoch do not show a layout and a unix ms epoch: %r" % sent)
    args = ["plan", "--json", "--layout", sent["text"], "--epoch", sent["epoch"]]
    if sent["workers"]:
        args += ["--workers", sent["workers"]]
    if sent["peak"]:
        args += ["--peak", sent["peak"]]
    return sent, srv.cli(*args)


def planner_matches(srv, page, what):
    sent, doc = plan_cli(srv, page)
    figs = figures(page)
    missing = [k for k in PLAN_KEYS if k not in figs]
    expect(not missing, "%s: no figure with data-key %s" % (what, ", ".join(missing)))
    compare_to_cli(figs, doc, what + " (" + sent["text"] + ")", skip=("example",),
                   close=("years_left", "suggested.years_left"))
    # The verdict chips: the verdict string (as is, or as JSON).
    for chip in ("lifespan", "workers", "peak"):
        raw = page.js("(() => { const e = document.getElementById(%s); return e ? "
                      "(e.dataset.raw === undefined ? null : e.dataset.raw) : false; })()",
                      "chip-" + chip)
        expect(raw is not False, "%s: no #chip-%s" % (what, chip))
        want = doc.get("verdicts", {}).get(chip)
        if want is None:
            expect(raw in (None, "", "null"), "%s: #chip-%s says %r; the CLI gives no verdict"
                   % (what, chip, raw))
        else:
            expect(raw in (want, json.dumps(want)), "%s: #chip-%s data-raw %r; the CLI says %r"
                   % (what, chip, raw, want))
    return figs, sent


def planner(srv, page, base):
    def load():
        page.set_viewport("desktop")
        page.navigate(base + "/ui/planner.html", timeout=BOUND)
        settle_idle(page)
        presets = page.evaluate("[...document.querySelectorAll('button[data-preset]')]"
                                ".map((b) => b.dataset.preset)")
        expect(sorted(presets) == ["discord", "instagram", "sonyflake", "twitter"],
               "preset buttons: %r" % presets)
        planner_matches(srv, page, "planner as loaded")
    check("planner: the four presets, the figures as loaded are the CLI's", load)

    def keyboard_preset():
        # From the top of the page, Tab to the instagram preset, then Enter.
        page.evaluate("document.activeElement && document.activeElement.blur(), true")
        for _ in range(60):
            page.key("Tab")
            if page.evaluate("document.activeElement && document.activeElement.dataset"
                             " && document.activeElement.dataset.preset || ''") == "instagram":
                break
        else:
            raise Fail("60 Tabs never reached the instagram preset button")
        page.key("Enter")
        want = srv.cli("plan", "--json", "--layout", "instagram")
        page.wait_for("document.getElementById('layout-text').textContent.trim() === %s"
                      % json.dumps(want["text"]), "#layout-text to become instagram's "
                      + want["text"], BOUND)
        settle_idle(page)
        planner_matches(srv, page, "instagram preset")
    check("planner: a preset reached with Tab and chosen with Enter", keyboard_preset)

    def click_preset():
        page.click("button[data-preset='twitter']")
        want = srv.cli("plan", "--json", "--layout", "twitter")
        page.wait_for("document.getElementById('layout-text').textContent.trim() === %s"
                      % json.dumps(want["text"]), "#layout-text to become twitter's", BOUND)
        settle_idle(page)
        planner_matches(srv, page, "twitter preset clicked")
    check("planner: the twitter preset clicked shows the CLI's figures", click_preset)

    def slider():
        # The figures before the move, as the page shows them (whatever
        # the checks before found).
        settle_idle(page)
        before_figs = figures(page)
        before_sent = {"text": page.evaluate(
            "document.getElementById('layout-text').textContent.trim()")}
        missing = [k for k in PLAN_KEYS if k not in before_figs]
        expect(not missing, "no figure with data-key %s before the move" % ", ".join(missing))
        sel = "input[type=range][data-field='worker'][data-part='bits']"
        v0 = page.js("(() => { const e = document.querySelector(%s); "
                     "return e ? e.value : null; })()", sel)
        expect(v0 is not None, "no %s" % sel)
        page.focus(sel)
        page.key("ArrowLeft", 2)
        page.key("ArrowRight")
        v1 = page.js("document.querySelector(%s).value", sel)
        expect(int(v1) == int(v0) - 1, "the worker slider went from %s to %s, not one down "
               "(two ArrowLeft, one ArrowRight)" % (v0, v1))
        num = page.js("(() => { const e = document.querySelector("
                      "\"input[type=number][data-field='worker'][data-part='bits']\"); "
                      "return e ? e.value : null; })()")
        expect(num == v1, "the worker's number input says %r, the slider %r" % (num, v1))
        page.wait_for("document.getElementById('layout-text').textContent.trim() !== %s"
                      % json.dumps(before_sent["text"]), "#layout-text to change", BOUND)
        settle_idle(page)
        after_figs, after_sent = planner_matches(srv, page, "worker slider moved")
        expect(re.search(r"(^|,)worker:%d(,|$)" % int(v1), after_sent["text"]),
               "#layout-text %r does not have worker:%s" % (after_sent["text"], v1))
        changed = [k for k in PLAN_KEYS if not k.startswith("example.")
                   and before_figs[k][0] != after_figs[k][0]]
        expect(changed, "no figure changed when the slider moved: %r" % after_figs)
        no_errors(page, "planner")
    check("planner: a slider moved with the arrow keys changes the figures to the CLI's", slider)


def estimator(srv, page, base):
    page.set_viewport("desktop")
    page.navigate(base + "/ui/estimator.html", timeout=BOUND)
    settle_idle(page)
    defaults = page.evaluate("""(() => { const o = {};
        for (const id of ['rate', 'processes', 'skew', 'surge', 'rows', 'indexes', 'layout']) {
          const e = document.getElementById(id); o[id] = e ? e.value : null; }
        return o; })()""")
    want = {"rate": "200000", "processes": "400", "skew": "5", "surge": "2",
            "rows": "100000000000", "indexes": "1", "layout": "twitter"}
    expect(defaults == want, "the inputs' defaults are %r, not the reference case %r"
           % (defaults, want))
    figs = figures(page)
    bad = ["%s: %r (want %r)" % (k, figs.get(k, (None, None))[1], t)
           for k, t in ESTIMATE_FIGURES.items() if figs.get(k, (None, None))[1] != t]
    expect(not bad, "reference case figures: " + "; ".join(bad))
    doc = srv.cli("estimate", "--json", *ESTIMATE_ARGS)
    compared = compare_to_cli(figs, doc, "estimator")
    expect(set(ESTIMATE_FIGURES) <= set(compared), "compared only %r" % compared)
    # A fleet whose shares are no round numbers (108 of 1024 worker ids is
    # 10.546875%: rounded twice it would read 10.6%): the percentages the
    # page shows are the ones the command's text prints.
    page.evaluate("""(() => { for (const [id, v] of [['processes', '108'], ['skew', '3'],
                                                      ['surge', '1.5']]) {
        const e = document.getElementById(id); e.value = v;
        e.dispatchEvent(new Event('input', {bubbles: true})); } })()""")
    page.wait_for("(document.querySelector('[data-key=worker_ids_in_use_pct]') || {dataset: {}})"
                  ".dataset.raw.startsWith('10.5')", "the estimator to answer for 108 processes",
                  BOUND)
    settle_idle(page)
    figs = figures(page)
    args = ["--rate", "200000", "--processes", "108", "--skew", "3", "--surge", "1.5",
            "--rows", "100000000000", "--indexes", "1"]
    r = subprocess.run([srv.idmint, "estimate"] + args, env=srv.env, capture_output=True,
                       text=True, timeout=60)
    expect(r.returncode == 0, "idmint estimate: exit %d" % r.returncode)
    text = r.stdout
    for key in ("worker_ids_in_use_pct", "worker_ids_during_deploys_pct", "seq_share_pct"):
        shown = figs.get(key, (None, ""))[1]
        expect(shown and "(" + shown in text,
               "%s: the page shows %r, not in the command's text:\n%s" % (key, shown, text))
    expect("(10.5%)" in text, "the command's text does not say 10.5%%:\n%s" % text)
    no_errors(page, "estimator")


def collisions(srv, page, base):
    page.set_viewport("desktop")
    page.navigate(base + "/ui/collisions.html", timeout=BOUND)
    settle_idle(page)
    shape = page.evaluate("""(() => {
        const svg = document.getElementById('chart');
        const paths = [...document.querySelectorAll('#chart path[data-scheme]')];
        return {svg: !!svg && svg.tagName.toLowerCase() === 'svg',
                role: svg && svg.getAttribute('role'), label: svg && svg.getAttribute('aria-label'),
                schemes: paths.map((p) => p.dataset.scheme).sort(),
                empty: paths.filter((p) => !(p.getAttribute('d') || '').match(/[0-9]/)).length,
                m50: !!document.querySelector('#chart #mark-50, #mark-50'),
                m1e9: !!document.querySelector('#chart #mark-1e9, #mark-1e9'),
                rows: document.querySelectorAll('#schemes tbody tr').length,
                range: (() => { const r = document.getElementById('rate');
                                return r && [r.type, r.min, r.max, r.step]; })()}; })()""")
    expect(shape["svg"] and shape["role"] == "img" and shape["label"],
           "<svg id=chart role=img aria-label=...>: %r" % shape)
    expect(shape["schemes"] == sorted(SCHEMES), "curves: %r" % shape["schemes"])
    expect(shape["empty"] == 0, "%d curves are empty" % shape["empty"])
    expect(shape["m50"] and shape["m1e9"], "marks #mark-50 / #mark-1e9 missing: %r" % shape)
    expect(shape["rows"] == 5, "#schemes has %d rows, not 5" % shape["rows"])
    expect(shape["range"] and shape["range"][0] == "range" and float(shape["range"][1]) == 0
           and float(shape["range"][2]) == 9, "#rate is not a 0..9 range: %r" % shape["range"])

    def state():
        return page.evaluate("""({v: document.getElementById('rate').value,
            shown: (document.getElementById('rate-value') || {}).textContent,
            d: [...document.querySelectorAll('#chart path[data-scheme]')]
                 .map((p) => p.dataset.scheme + ' ' + p.getAttribute('d')).sort()})""")
    s0 = state()
    # Drag the thumb from where it is to 0.3 of the track away.
    frac = float(s0["v"]) / 9
    to = frac - 0.3 if frac > 0.5 else frac + 0.3
    page.drag("#rate", frac, to)
    page.wait_for("document.getElementById('rate').value !== %s" % json.dumps(s0["v"]),
                  "the rate slider to move when dragged", BOUND)
    settle_idle(page)
    s1 = state()
    expect(s1["shown"] != s0["shown"], "#rate-value still says %r after the drag" % s1["shown"])
    same = [a.split(" ")[0] for a, b in zip(s0["d"], s1["d"]) if a == b]
    expect(not same, "curves not redrawn after the rate moved from %s to %s: %s"
           % (s0["v"], s1["v"], ", ".join(same)))
    # The table against the CLI, for the rate the page asked the server
    # about (the last /v1/birthday request of each scheme).
    asked = {}
    for url in page.requests.values():
        if "/v1/birthday?" in url:
            pairs = url.split("?", 1)[1].split("&")
            q = dict(kv.split("=", 1) if "=" in kv else (kv, "") for kv in pairs)
            asked[(q.get("bits"), "per-ms" in q)] = q
    rows = page.evaluate("""[...document.querySelectorAll('#schemes tbody tr')].map((tr) => {
        const o = {}; for (const e of tr.querySelectorAll('[data-key]')) o[e.dataset.key] =
          [e.dataset.raw, e.textContent.trim()]; return o; })""")
    compared = 0
    kinds = sorted((raw_value("bits", r.get("bits", ["null"])[0]),
                    raw_value("model", r.get("model", ["null"])[0]) == "per-ms") for r in rows)
    expect(kinds == sorted(SCHEMES.values()), "the table's rows are (bits, per ms) %r, not %r"
           % (kinds, sorted(SCHEMES.values())))
    for row in rows:
        bits = raw_value("bits", row.get("bits", ["null"])[0])
        model = raw_value("model", row.get("model", ["null"])[0])
        q = asked.get((str(bits), model == "per-ms"))
        expect(q is not None, "no /v1/birthday request for the row %r (asked: %r)"
               % (row, list(asked)))
        args = ["birthday", "--json", "--bits", q["bits"], "--rate", q["rate"], "--duration",
                q.get("duration", "10000y")]
        if "per-ms" in q:
            args.append("--per-ms")
        doc = srv.cli(*args)
        keys = compare_to_cli({k: v for k, v in row.items()}, doc, "collisions row bits %s" % bits)
        expect(any(k.startswith("t50") for k in keys) and any(k.startswith("t1e9") for k in keys),
               "row bits %s: no t50 / t1e9 figure compared (keys %r)" % (bits, sorted(row)))
        compared += 1
    expect(compared == 5, "compared %d rows" % compared)
    no_errors(page, "collisions")


def decode_one(srv, page, ident, time_want, layout="server"):
    """ident typed into #id-input, with #decode-layout set to layout, and
    submitted with Enter: the result is `idmint decode --json`'s (with
    --layout for a preset) and its time is time_want."""
    page.js("(() => { const s = document.getElementById('decode-layout'); "
            "if (s) { s.value = %s; s.dispatchEvent(new Event('change')); } "
            "const i = document.getElementById('id-input'); i.value = ''; return true; })()",
            layout)
    page.focus("#id-input")
    page.type_text(ident)
    page.key("Enter")
    want = srv.cli("decode", "--json", *([] if layout == "server" else ["--layout", layout]), ident)
    page.wait_for("(() => { const e = document.querySelector("
                  "\"#decode-result [data-key='unix_ms']\"); return !!e && e.dataset.raw === %s; "
                  "})()" % json.dumps(json.dumps(want["unix_ms"])),
                  "#decode-result to show %s's unix_ms %s" % (ident, want["unix_ms"]), BOUND)
    settle_idle(page)
    figs = figures(page, "#decode-result")
    expect("time" in figs, "no time in the result: %r" % figs)
    expect(raw_value("time", figs["time"][0]) == time_want,
           "%s: time %s, want %s" % (ident, figs["time"][0], time_want))
    expect(time_want in figs["time"][1] or time_want.replace("T", " ").replace("Z", "")
           in figs["time"][1], "%s: the time shown reads %r" % (ident, figs["time"][1]))
    # Every field the command prints is on the page, with its value: the id
    # in its canonical text (a UUID typed in upper case shows in lower
    # case), a UUID's variant, a ULID's UUID form.
    keys = compare_to_cli(figs, want, "decode " + ident)
    missing = [k for k in want if k not in keys]
    expect(not missing, "decode %s: the page does not show %s (it shows %r)"
           % (ident, ", ".join(missing), sorted(figs)))


def decoder(srv, page, base, shots):
    def load():
        page.set_viewport("desktop")
        page.navigate(base + "/ui/decoder.html", timeout=BOUND)
        settle_idle(page)
        ctl = page.evaluate("['decode-form', 'id-input', 'decode-layout', 'decode-layout-text', "
                            "'decode-epoch', 'decode-submit', 'decode-result']"
                            ".filter((id) => !document.getElementById(id))")
        expect(not ctl, "decoder.html has no #%s" % ", #".join(ctl))
    check("decoder: loads with its form", load)
    def twitter():
        # The CLI's answer, checked against the id's known time first.
        tw = srv.cli("decode", "--json", TWITTER_ID)
        expect(tw["unix_ms"] == TWITTER_MS, "idmint decode %s: %r" % (TWITTER_ID, tw))
        decode_one(srv, page, TWITTER_ID, tw["time"])
    check("decoder: a Twitter id (the server's layout)", twitter)
    check("decoder: RFC 9562's UUIDv7", decode_one, srv, page, UUID7, UUID7_TIME)
    check("decoder: a ULID", decode_one, srv, page, ULID, ULID_TIME)

    def discord():
        # The same Twitter id read in another layout chosen on the page.
        d = srv.cli("decode", "--json", "--layout", "discord", TWITTER_ID)
        expect(d["unix_ms"] != TWITTER_MS, "idmint decode --layout discord: %r" % d)
        decode_one(srv, page, TWITTER_ID, d["time"], "discord")
    check("decoder: the Twitter id in the discord layout chosen on the page", discord)
    if shots:
        # The page's screenshots show an id decoded (those of the page as
        # loaded, empty, are replaced).
        def shoot():
            decode_one(srv, page, TWITTER_ID, srv.cli("decode", "--json", TWITTER_ID)["time"])
            for view in ("desktop", "phone"):
                page.set_viewport(view)
                page.settle(0.2)
                fonts_ready(page)
                page.screenshot(os.path.join(shots, "decoder-%s.png" % view))
            page.set_viewport("desktop")
        check("decoder: screenshots with the Twitter id decoded", shoot)
    check("decoder: no console error", no_errors, page, "decoder")


def token(srv, page, base_b):
    def allow(e):
        # The 401 the first call gets is the browser's to log.
        return e[0] == "log" and "401" in e[1]
    page.set_viewport("desktop")
    page.navigate(base_b + "/ui/planner.html", ready=False, timeout=BOUND)
    page.wait_for("(() => { const f = document.getElementById('token-form'); return !!f && "
                  "!f.hidden && getComputedStyle(f).display !== 'none'; })()",
                  "the token form to be shown after a 401", BOUND)
    expect(page.evaluate("document.body.dataset.ready") != "1", "the page is ready without a token")
    info = page.evaluate("""(() => { const i = document.getElementById('token-input');
        return i && {type: i.type,
          label: [...(i.labels || [])].map((l) => l.textContent.trim()).join(' ')
            || i.getAttribute('aria-label')}; })()""")
    expect(info and info["type"] == "password" and "token" in (info["label"] or "").lower(),
           "#token-input: %r (want type password, labelled Bearer token)" % info)
    page.focus("#token-input")
    page.type_text(TOKEN)
    page.click("#token-submit")
    page.wait_for("document.body.dataset.ready === '1'", "the planner to render once the token "
                  "is given", BOUND)
    settle_idle(page)
    figs = figures(page)
    expect("worker_ids" in figs, "no figures after the token: %r" % figs)
    no_errors(page, "planner with a token", allow)
    hidden = page.evaluate("(() => { const f = document.getElementById('token-form'); "
                           "return f.hidden || getComputedStyle(f).display === 'none'; })()")
    expect(hidden, "the token form is still shown")
    # Another page of the same server, in the same tab: the token kept for
    # the session is sent at once.
    page.navigate(base_b + "/ui/estimator.html", timeout=BOUND)
    settle_idle(page)
    no_errors(page, "estimator with the token kept")
    expect(figures(page).get("busiest_ids_per_ms", (None, None))[1] == "2.5 ids/ms",
           "the estimator with the token kept shows no figures")


def status(srv, page, base, shots, minter):
    def held():
        page.set_viewport("desktop")
        page.navigate(base + "/ui/status.html?every=%d" % STATUS_EVERY_MS, timeout=BOUND)
        settle_idle(page)
        st, doc = http_get(base + "/v1/status")
        expect(st == 200 and isinstance(doc, dict), "/v1/status answered %s" % st)
        expect(isinstance(doc.get("worker_id"), int), "/v1/status worker_id %r"
               % doc.get("worker_id"))
        figs = figures(page)
        for k in ("worker_id", "layout.name", "layout.text", "lease.state", "lease.deadline",
                  "lease.deadline_in_ms", "lease.renewals", "lease.failures", "clock.offset_ms",
                  "clock.drift_ppm", "minted.snowflake", "rates.last", "uptime_s"):
            expect(k in figs, "no figure with data-key %s" % k)
        expect(raw_value("worker_id", figs["worker_id"][0]) == doc["worker_id"],
               "worker_id %s; /v1/status says %s" % (figs["worker_id"][0], doc["worker_id"]))
        expect(figs["worker_id"][1] == str(doc["worker_id"]), "worker_id reads %r"
               % figs["worker_id"][1])
        expect(raw_value("lease.state", figs["lease.state"][0]) == "held",
               "lease.state %s, not \"held\"" % figs["lease.state"][0])
        expect(raw_value("layout.name", figs["layout.name"][0]) == "twitter", "layout.name %s"
               % figs["layout.name"][0])
        banner = page.evaluate("(() => { const b = document.getElementById('banner'); return b && "
                               "[b.getAttribute('role'), b.hidden || getComputedStyle(b).display "
                               "=== 'none', b.textContent.trim()]; })()")
        expect(banner and banner[0] == "alert", "#banner with role=alert: %r" % banner)
        expect(banner[1], "#banner is shown while healthy: %r" % banner[2])
        expect(page.evaluate("!!document.querySelector('svg#rate-chart[role=img]')"),
               "no <svg id=rate-chart role=img>")
    check("status: worker id and lease held, as /v1/status says; no banner", held)

    def minted():
        before = raw_value("minted.snowflake", figures(page)["minted.snowflake"][0])
        for _ in range(5):
            s, body = http_get(base + "/v1/snowflake?count=200")
            expect(s == 200, "/v1/snowflake answered %s" % s)
        page.wait_for("(() => { const e = document.querySelector("
                      "\"[data-key='minted.snowflake']\"); "
                      "return e && JSON.parse(e.dataset.raw) >= %d; })()" % (before + 1000),
                      "minted.snowflake to rise from %d by 1000 or more" % before, BOUND)
        page.wait_for("(() => { const e = document.querySelector(\"[data-key='minted.total']\");"
                      " return !e || JSON.parse(e.dataset.raw) >= %d; })()" % (before + 1000),
                      "minted.total to follow", BOUND)
        no_errors(page, "status")
    check("status: the minted count rises after ids are minted over HTTP", minted)

    def lost():
        minter.stop()
        srv.kill_etcd()
        # The lease lasts TTL_MS past its last renewal: lost by then, seen
        # at the page's next refresh. The bound is generous (5 TTLs and
        # some), never a measure.
        bound = 5 * TTL_MS / 1000 + 5
        page.wait_for("(() => { const b = document.getElementById('banner'); return !!b && "
                      "!b.hidden && getComputedStyle(b).display !== 'none' && "
                      "b.classList.contains('bad')"
                      " && /lease/i.test(b.textContent); })()",
                      "the banner to show, naming the lease, after etcd was killed", bound)
        page.wait_for("(() => { const e = document.querySelector(\"[data-key='lease.state']\");"
                      " return !!e && e.dataset.raw === '\"lost\"'; })()",
                      "lease.state to become \"lost\"", bound)
        page.settle(2 * STATUS_EVERY_MS / 1000)
        no_errors(page, "status with the lease lost")
        if shots:
            for view in ("desktop", "phone"):
                page.set_viewport(view)
                page.settle(STATUS_EVERY_MS / 1000)
                fonts_ready(page)
                page.screenshot(os.path.join(shots, "status-lost-%s.png" % view))
    check("status: etcd killed: the banner names the lease, lease.state lost", lost)


def main():
    if len(sys.argv) != 2:
        print("usage: python3 test_console.py BUILD_DIR", file=sys.stderr)
        print("0 passed, 1 failed")
        sys.exit(1)
    build = os.path.abspath(sys.argv[1])
    shots = os.environ.get("IDM_SCREENSHOT_DIR") or os.path.join(build, "screenshots")
    shots = os.path.abspath(shots)
    srv = Servers(build)
    browser = None
    minter = None
    # A TERM (ctest's timeout) ends the run through the cleanup below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        def setup():
            for exe in (srv.idmint, srv.idmintd):
                expect(os.access(exe, os.X_OK), "no %s (build it first)" % exe)
            for tool in ("etcd", "etcdctl"):
                expect(shutil.which(tool), "%s is needed and missing (a dependency: scripts/"
                       "deps.sh installs it)" % tool)
            cdp.find_chromium()
            ep = srv.start_etcd()
            token_file = os.path.join(srv.tmp, "token")
            with open(token_file, "w") as f:
                f.write(TOKEN + "\n")
            os.chmod(token_file, 0o600)
            a = srv.start_idmintd("a", "--lease", "etcd://%s/console" % ep,
                                  "--lease-ttl", str(TTL_MS))
            b = srv.start_idmintd("b", "--token-file", token_file)
            return a, b
        bases = check("setup: etcd, idmintd leased from it, idmintd with a token, chromium", setup)
        if bases is None:
            finish()
        base_a, base_b = bases
        os.makedirs(shots, exist_ok=True)
        minter = Minter(base_a)
        minter.start()
        browser = check("chromium starts, headless, driven over its pipe", cdp.Browser().start)
        if browser is None:
            finish()
        page = browser.new_page()
        for name in PAGES:
            for view in ("desktop", "phone"):
                check("%s page at %s width: loads, no console error, nav, labels" % (name, view),
                      page_loads, page, base_a, name, view, shots)
        planner(srv, page, base_a)
        check("estimator: the reference case's five figures and the CLI's values",
              estimator, srv, page, base_a)
        check("collisions: five curves, two marks, redrawn when the rate is dragged, table = CLI",
              collisions, srv, page, base_a)
        decoder(srv, page, base_a, shots)
        # A new tab: a session of its own (no token kept from before).
        check("token: the page asks, the token typed is sent, calls succeed",
              token, srv, browser.new_page(), base_b)
        status(srv, page, base_a, shots, minter)
    finally:
        if minter is not None:
            minter.stop()
        if browser is not None:
            browser.close()
        srv.stop()
    finish()


if __name__ == "__main__":
    main()
