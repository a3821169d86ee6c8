# SPDX-License-Identifier: MIT
"""A small Chrome DevTools Protocol client, Python 3 standard library only.

It drives a headless chromium over --remote-debugging-pipe: the browser
reads commands from its file descriptor 3 and writes replies and events to
its file descriptor 4, each message one JSON document followed by a NUL
byte. No port is opened, nothing listens: the browser talks to this process
only, and dies with the pipes.

    with Browser() as b:
        page = b.new_page()
        page.set_viewport("desktop")
        page.navigate("http://127.0.0.1:PORT/ui/planner.html")
        page.evaluate("document.title")
        page.screenshot("planner.png")
        assert not page.errors, page.errors

Everything here is bounded: every wait has a deadline and fails with a
CDPError saying what was awaited and for how long. The browser is always
killed and its temporary profile directory removed (close(), also called by
the with statement and at interpreter exit), also when a check fails.

A page collects what would show as an error in its console in page.errors,
a list of (kind, text) pairs:
  console     console.error() (and console.assert) calls
  exception   uncaught exceptions and unhandled promise rejections
  log         the browser's own error entries: a Content-Security-Policy
              violation, a resource that failed to load, ...
  network     a request that failed (not one the page cancelled), and a
              4xx or 5xx answer to a request for one of the page's own files
              (an API answer's status is the page's business: it shows it)
"""

import atexit
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

# The viewports the console is checked at: a desktop window, and a phone
# (CSS pixels; a phone's screen has two device pixels to the CSS pixel).
VIEWPORTS = {
    "desktop": {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    "phone": {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True},
}

# Keys Input.dispatchKeyEvent is given for key(): the DOM key, code and
# Windows virtual key code the browser needs to act on them.
KEYS = {
    "Tab": ("Tab", "Tab", 9),
    "Enter": ("Enter", "Enter", 13),
    "ArrowLeft": ("ArrowLeft", "ArrowLeft", 37),
    "ArrowUp": ("ArrowUp", "ArrowUp", 38),
    "ArrowRight": ("ArrowRight", "ArrowRight", 39),
    "ArrowDown": ("ArrowDown", "ArrowDown", 40),
    "Home": ("Home", "Home", 36),
    "End": ("End", "End", 35),
}

# How long one command may take to be answered, by default (seconds).
COMMAND_TIMEOUT = 30


class CDPError(Exception):
    """A command the browser refused, a wait that passed its deadline, or a
    browser that went away."""


class BrowserMissing(CDPError):
    """No chromium to run: a dependency (scripts/deps.sh installs it)."""


def find_chromium():
    """The chromium to run: $IDM_CHROMIUM if set, else chromium on PATH."""
    exe = os.environ.get("IDM_CHROMIUM") or shutil.which("chromium")
    if not exe or not os.access(exe, os.X_OK):
        raise BrowserMissing("no chromium on PATH (a dependency: scripts/deps.sh installs the "
                             "Debian package chromium)")
    return exe


def _high(fd):
    """fd moved to a number above 9 (close-on-exec, as os.pipe makes them)."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class Browser:
    """One headless chromium and the pipe to it."""

    def __init__(self, exe=None, extra_args=()):
        self.exe = exe or find_chromium()
        self.extra_args = list(extra_args)
        self.proc = None
        self.tmp = None
        self.wfd = self.rfd = None
        self.buf = b""
        self.next_id = 0
        self.replies = {}
        self.pages = {}          # sessionId -> Page
        self.stderr_path = None

    # ---- life ----

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix="idm-chromium-")
        atexit.register(self.close)
        # to_r/to_w: commands, browser side fd 3; from_r/from_w: replies,
        # browser side fd 4.
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # The browser's ends are moved above 9 first, so that the shell's
        # redirections below never overwrite one with the other.
        to_r, from_w = _high(to_r), _high(from_w)
        # --no-sandbox: the sandbox refuses to run as root, as CI does; the
        # pages are the project's own, served from loopback.
        args = [self.exe, "--headless=new", "--no-sandbox", "--remote-debugging-pipe",
                "--user-data-dir=" + os.path.join(self.tmp, "profile"), "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage",
                "--disable-component-update", "--disable-default-apps", "--mute-audio",
                "--hide-scrollbars", "--password-store=basic", "--use-mock-keychain",
                "--font-render-hinting=none", "--lang=en-US"] + self.extra_args + ["about:blank"]
        # The pipe ends go to the browser under their own numbers (pass_fds);
        # bash placed in front (dash takes one-digit descriptors only) moves
        # them to 3 and 4, where the browser looks for them, and closes the
        # originals. The Debian chromium is a shell script that execs the
        # browser: the descriptors pass through it.
        shell = 'exec "$0" "$@" 3<&%d 4>&%d %d<&- %d>&-' % (to_r, from_w, to_r, from_w)
        self.stderr_path = os.path.join(self.tmp, "chromium.log")
        with open(self.stderr_path, "wb") as err:
            try:
                self.proc = subprocess.Popen(["bash", "-c", shell] + args,
                                             stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                             pass_fds=(to_r, from_w), start_new_session=True)
            finally:
                os.close(to_r)
                os.close(from_w)
        self.wfd, self.rfd = to_w, from_r
        os.set_blocking(self.rfd, False)
        # The first command answered says the browser is up.
        self.send("Browser.getVersion", timeout=30)
        return self

    def close(self):
        """Kill the browser (its whole process group) and remove its profile."""
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, 9)
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        for fd in (self.wfd, self.rfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.wfd = self.rfd = None
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def log_tail(self, n=800):
        """The end of the browser's own stderr, for a failure message."""
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except (OSError, TypeError):
            return ""

    # ---- messages ----

    def _write(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        while data:
            try:
                n = os.write(self.wfd, data)
            except BrokenPipeError:
                raise CDPError("the browser went away: " + self.log_tail()) from None
            data = data[n:]

    def _dispatch(self, msg):
        if "id" in msg:
            self.replies[msg["id"]] = msg
            return
        page = self.pages.get(msg.get("sessionId"))
        if page is not None:
            page._event(msg["method"], msg.get("params", {}))

    def pump(self, until):
        """Read and dispatch what the browser sent, waiting at most until
        the monotonic time until for a first message; returns whether
        anything came."""
        came = False
        while True:
            left = max(0.0, until - time.monotonic())
            r, _, _ = select.select([self.rfd], [], [], 0 if came else left)
            if not r:
                return came
            try:
                chunk = os.read(self.rfd, 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                raise CDPError("the browser closed its pipe: " + self.log_tail())
            self.buf += chunk
            *msgs, self.buf = self.buf.split(b"\0")
            for m in msgs:
                self._dispatch(json.loads(m))
            came = True

    def send(self, method, params=None, session=None, timeout=COMMAND_TIMEOUT):
        """Send a command and wait (at most timeout s) for its answer: the
        result, or a CDPError with the browser's message."""
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._write(msg)
        end = time.monotonic() + timeout
        while mid not in self.replies:
            if time.monotonic() >= end:
                raise CDPError("%s: no answer from the browser after %g s" % (method, timeout))
            self.pump(end)
        reply = self.replies.pop(mid)
        if "error" in reply:
            raise CDPError("%s: %s" % (method, reply["error"].get("message", reply["error"])))
        return reply.get("result", {})

    def new_page(self):
        """A new tab, attached in flat mode (its commands carry its
        sessionId), with the domains the page's checks use enabled."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        self.pages[session] = page
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(domain + ".enable")
        return page


class Page:
    """One tab: navigation, script, input, screenshots, and its errors."""

    def __init__(self, browser, target, session):
        self.browser = browser
        self.target = target
        self.session = session
        self.errors = []
        self.origin = None       # scheme://host:port of the page's own files
        self.requests = {}       # requestId -> url, for loadingFailed
        self.loaded = False
        self.doc_status = None   # the HTTP status of the page's document

    def send(self, method, params=None, timeout=COMMAND_TIMEOUT):
        return self.browser.send(method, params, self.session, timeout)

    # ---- events: what counts as an error ----

    def _own_file(self, url):
        """A file of the page's own (its origin, not an API call)."""
        return self.origin is not None and url.startswith(self.origin + "/") and "/v1/" not in url

    def _event(self, method, p):
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = p.get("args", [])
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in args)
            self.errors.append(("console", text))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            ex = d.get("exception", {})
            self.errors.append(("exception", "%s %s (%s:%s)" % (
                d.get("text", ""), ex.get("description", ""), d.get("url", ""),
                d.get("lineNumber", ""))))
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            if e.get("level") == "error":
                self.errors.append(("log", "%s %s" % (e.get("text", ""), e.get("url", ""))))
        elif method == "Network.requestWillBeSent":
            self.requests[p.get("requestId")] = p.get("request", {}).get("url", "")
        elif method == "Network.loadingFailed":
            if not p.get("canceled"):
                self.errors.append(("network", "%s: %s" % (
                    self.requests.get(p.get("requestId"), "?"), p.get("errorText", ""))))
        elif method == "Network.responseReceived":
            r = p.get("response", {})
            if p.get("type") == "Document":
                self.doc_status = r.get("status", 0)
            if r.get("status", 0) >= 400 and self._own_file(r.get("url", "")):
                self.errors.append(("network", "%s: HTTP %s" % (r.get("url"), r.get("status"))))
        elif method == "Page.loadEventFired":
            self.loaded = True

    def errors_text(self, errors=None):
        errs = self.errors if errors is None else errors
        return "; ".join("%s: %s" % e for e in errs)[:1500]

    # ---- waiting ----

    def wait_for(self, expr, what, timeout=15, interval=0.05):
        """Evaluate expr until it gives a truthy value (returned), at most
        timeout s; past that a CDPError naming what was awaited, with the
        last value seen and the page's errors."""
        end = time.monotonic() + timeout
        last = None
        while True:
            last = self.evaluate(expr)
            if last:
                return last
            if time.monotonic() >= end:
                errs = "; page errors: " + self.errors_text() if self.errors else ""
                raise CDPError("waited %g s for %s; last value %r%s" % (timeout, what, last, errs))
            self.browser.pump(min(end, time.monotonic() + interval))

    def settle(self, seconds):
        """Let the page run for a while, taking in its events (not a check:
        for a screenshot or a debounce that must have started)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.browser.pump(end)

    def navigate(self, url, ready=True, timeout=20):
        """Load url; wait for its load event and, with ready, for the page
        to say it rendered (document.body.dataset.ready == "1"). The error
        list starts empty for each page."""
        self.errors = []
        self.requests = {}
        self.loaded = False
        self.doc_status = None
        scheme, _, rest = url.partition("://")
        self.origin = scheme + "://" + rest.split("/", 1)[0]
        r = self.send("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise CDPError("navigating to %s: %s" % (url, r["errorText"]))
        end = time.monotonic() + timeout
        while not self.loaded:
            if time.monotonic() >= end:
                raise CDPError("%s: no load event after %g s" % (url, timeout))
            self.browser.pump(end)
        if self.doc_status is not None and self.doc_status >= 400:
            raise CDPError("%s: HTTP %d" % (url, self.doc_status))
        if ready:
            self.wait_for("document.body && document.body.dataset.ready === '1'",
                          "%s to set document.body.dataset.ready to 1" % url,
                          max(1.0, end - time.monotonic()))

    def wait_idle(self, timeout=10):
        """Wait until the page has no request in flight
        (document.body.dataset.busy is not "1")."""
        self.wait_for("document.body.dataset.busy !== '1'", "the page to be idle (data-busy not 1)",
                      timeout)

    # ---- script ----

    def evaluate(self, expr, timeout=COMMAND_TIMEOUT):
        """The value of a JavaScript expression (promises awaited), as JSON
        gives it; an exception in it is a CDPError."""
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError("evaluating %s: %s" % (expr[:200], d.get("exception", {}).get(
                "description", d.get("text"))))
        return r.get("result", {}).get("value")

    def js(self, fmt, *args):
        """evaluate() of fmt with each %s replaced by the JSON of an arg."""
        return self.evaluate(fmt % tuple(json.dumps(a) for a in args))

    # ---- input ----

    def key(self, name, times=1):
        """Press and release a key (Tab, Enter, arrows, Home, End) on the
        focused element, times times."""
        key, code, vk = KEYS[name]
        for _ in range(times):
            base = {"key": key, "code": code, "windowsVirtualKeyCode": vk,
                    "nativeVirtualKeyCode": vk}
            down = dict(base, type="rawKeyDown")
            if name == "Enter":
                down = dict(base, type="keyDown", text="\r")
            self.send("Input.dispatchKeyEvent", down)
            self.send("Input.dispatchKeyEvent", dict(base, type="keyUp"))

    def type_text(self, text):
        """Type text into the focused element."""
        self.send("Input.insertText", {"text": text})

    def focus(self, selector):
        if not self.js("(() => { const e = document.querySelector(%s); if (!e) return false; "
                       "e.focus(); return document.activeElement === e; })()", selector):
            raise CDPError("cannot focus %s (missing or not focusable)" % selector)

    def rect(self, selector):
        """The element's box in CSS pixels of the viewport, scrolled into view."""
        r = self.js("(() => { const e = document.querySelector(%s); if (!e) return null; "
                    "e.scrollIntoView({block: 'center'}); const b = e.getBoundingClientRect(); "
                    "return [b.left, b.top, b.width, b.height]; })()", selector)
        if not r:
            raise CDPError("no element %s" % selector)
        return r

    def mouse(self, kind, x, y, buttons=1):
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                               "buttons": buttons, "clickCount": 1})

    def click(self, selector):
        """A real mouse click in the middle of the element."""
        left, top, w, h = self.rect(selector)
        x, y = left + w / 2, top + h / 2
        self.mouse("mouseMoved", x, y, 0)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y, 0)

    def drag(self, selector, frm, to, steps=8):
        """Press the mouse at fraction frm of the element's width (middle
        height), move it to fraction to in steps, release it: a slider's
        thumb dragged."""
        left, top, w, h = self.rect(selector)
        y = top + h / 2
        x0, x1 = left + w * frm, left + w * to
        self.mouse("mouseMoved", x0, y, 0)
        self.mouse("mousePressed", x0, y)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * i / steps, y)
        self.mouse("mouseReleased", x1, y, 0)

    # ---- looks ----

    def set_viewport(self, name):
        """Emulate a viewport of VIEWPORTS (desktop or phone)."""
        v = VIEWPORTS[name]
        self.send("Emulation.setDeviceMetricsOverride", dict(v, screenWidth=v["width"],
                                                              screenHeight=v["height"]))
        self.send("Emulation.setTouchEmulationEnabled", {"enabled": v["mobile"]})

    def screenshot(self, path):
        """The whole page (not only the viewport) as a PNG file."""
        m = self.send("Page.getLayoutMetrics")
        size = m.get("cssContentSize") or m["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                 "clip": clip}, timeout=60)
        data = base64.b64decode(r["data"])
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return len(data)
