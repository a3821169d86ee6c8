#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python binding's speed, as ratios, in one run:

    python3 bench/python/bindings.py [BUILD_DIR]

  - idmint.uuid7() against Python's uuid.uuid4() (target: >= 3x as many
    ids a second), on the path in use (the compiled accelerator
    idmint._speedups where it is there, else ctypes; IDMINT_PURE=1 forces
    ctypes) and, with the accelerator, on the ctypes path too;
  - idmint.Snowflake.next() against a bare ctypes call of
    idm_snowflake_next (what the binding adds: the per-thread output, the
    error check, the int), and both against a ctypes call of idm_version
    (the cost of crossing into C at all); the C generator's own cost is
    what the raw call takes above that floor.

Without BUILD_DIR, the idmint package installed in this Python is used;
with it, the package from bindings/python/src over BUILD_DIR's libraries,
its accelerator built into a temporary copy first (setup.py build_ext; if
that fails, no compiler or no Python headers, the run is on ctypes).
Each figure is the best of IDM_BENCH_ROUNDS (default 3) timings of about
IDM_BENCH_SECONDS (default 1) each. A ratio below its target prints BELOW;
the exit status is 0 unless something failed to run.
"""
import atexit
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid


def setup_import():
    if len(sys.argv) > 2:
        sys.exit("usage: bindings.py [BUILD_DIR]")
    if len(sys.argv) == 2:
        os.environ["IDMINT_LIBRARY"] = os.path.abspath(sys.argv[1])
        here = os.path.dirname(os.path.abspath(__file__))
        binding = os.path.normpath(os.path.join(here, "..", "..", "bindings", "python"))
        tmp = tempfile.mkdtemp(prefix="idmint-bench-")
        atexit.register(shutil.rmtree, tmp, True)
        shutil.copytree(os.path.join(binding, "src", "idmint"), os.path.join(tmp, "idmint"))
        r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", tmp,
                            "--build-temp", os.path.join(tmp, "obj")], cwd=binding,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("bindings.py: the accelerator did not build (ctypes only):\n%s"
                  % r.stderr[-2000:])
        sys.path.insert(0, tmp)


setup_import()
import idmint  # noqa: E402
from idmint import _native  # noqa: E402

SECONDS = float(os.environ.get("IDM_BENCH_SECONDS", "1"))
ROUNDS = int(os.environ.get("IDM_BENCH_ROUNDS", "3"))
# 16 sequence bits: 65536 ids a ms, far above what one Python thread mints,
# so no call waits for the next tick and only the call itself is timed.
LAYOUT = "time:41@1ms,worker:6,seq:16"


def ns_per_call(fn):
    """Best over ROUNDS of the ns one call of fn takes (fn runs a loop of
    n calls and is given n)."""
    n = 1000
    while True:  # calibrate: a loop of about a tenth of SECONDS
        t0 = time.perf_counter()
        fn(n)
        took = time.perf_counter() - t0
        if took > SECONDS / 10:
            break
        n *= 4
    n = max(1000, int(n * SECONDS / took))
    best = None
    for _ in range(ROUNDS):
        t0 = time.perf_counter_ns()
        fn(n)
        per = (time.perf_counter_ns() - t0) / n
        best = per if best is None else min(best, per)
    return best


def verdict(ratio, target):
    return "PASS" if ratio >= target else "BELOW"


def main():
    print("idmint %s (library %s), Python %s" % (idmint.__version__, idmint.library_version(),
                                                 sys.version.split()[0]))

    path = idmint._native_path
    accelerated = path == "accelerator"
    print("path: %s" % (path if accelerated else
                        "ctypes (no accelerator, or IDMINT_PURE=1)"))

    def loop(f):
        def run(n):
            for _ in range(n):
                f()
        return run

    t7 = ns_per_call(loop(idmint.uuid7))
    tc = ns_per_call(loop(idmint._uuid7_ctypes)) if accelerated else t7
    t4 = ns_per_call(loop(uuid.uuid4))
    if accelerated:
        print("uuid7(), accelerator: %7.0f ns/id  %6.2f M ids/s" % (t7, 1e3 / t7))
    print("uuid7(), ctypes:      %7.0f ns/id  %6.2f M ids/s" % (tc, 1e3 / tc))
    print("uuid.uuid4():         %7.0f ns/id  %6.2f M ids/s" % (t4, 1e3 / t4))
    if accelerated:
        r = t4 / tc
        print("ratio uuid7/uuid4, ctypes: %.2fx (the fallback; no target)" % r)
    r = t4 / t7
    print("ratio uuid7/uuid4, %s: %.2fx (target >= 3x) %s" % (path, r, verdict(r, 3.0)))

    gen = idmint.Snowflake(layout=LAYOUT, epoch="2024-01-01", node={"worker": 1})
    lib = _native.core
    raw_next = lib.idm_snowflake_next
    version = lib.idm_version
    handle = gen._g
    out = ctypes.c_uint64()

    def loop_next(n, f=gen.next):
        for _ in range(n):
            f()

    def loop_next_ctypes(n, f=idmint._snowflake_next_ctypes, g=gen):
        for _ in range(n):
            f(g)

    def loop_raw(n, f=raw_next, g=handle, o=out):
        for _ in range(n):
            f(g, o)

    def loop_floor(n, f=version):
        for _ in range(n):
            f()

    def loop_empty(n):
        for _ in range(n):
            pass

    tn = ns_per_call(loop_next)
    tnc = ns_per_call(loop_next_ctypes) if accelerated else tn
    tr = ns_per_call(loop_raw)
    tf = ns_per_call(loop_floor)
    te = ns_per_call(loop_empty)
    ids = [gen.next() for _ in range(100000)]
    gen.close()
    if ids != sorted(set(ids)):
        print("bindings.py: FAILED: Snowflake.next() ids not strictly increasing")
        return 1
    if accelerated:
        print("Snowflake.next(), accelerator:     %6.0f ns/id  %6.2f M ids/s" % (tn, 1e3 / tn))
    print("Snowflake.next(), ctypes:          %6.0f ns/id  %6.2f M ids/s" % (tnc, 1e3 / tnc))
    print("ctypes idm_snowflake_next, bare:   %6.0f ns/id" % tr)
    print("ctypes idm_version (the FFI floor): %5.0f ns/call (an empty loop: %.0f ns)" % (tf, te))
    print("  the C generator's own cost, about %.0f ns; the ctypes binding adds %.0f ns to "
          "the bare call" % (max(0.0, tr - tf), tnc - tr))
    r = tr / tnc
    print("ratio bare call/Snowflake.next(), ctypes: %.2f (target >= 0.5: the wrapper at "
          "most doubles the call) %s" % (r, verdict(r, 0.5)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
