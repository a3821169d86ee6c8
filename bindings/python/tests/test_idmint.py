# SPDX-License-Identifier: MIT
"""Tests of the idmint Python package (unittest; run by run-tests.sh).

The package under test is the one `import idmint` finds: run-tests.sh
installs it into a fresh venv first.
"""
import copy
import ctypes
import datetime as dt
import importlib
import inspect
import os
import pickle
import select
import shutil
import signal
import sysconfig
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

import idmint
from idmint import _native

UTC = dt.timezone.utc
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("IDMINT_SOURCE_DIR",
                            os.path.normpath(os.path.join(HERE, "..", "..", "..")))
ACCELERATED = idmint._native_path == "accelerator"


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="idmint-py-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class TestSnowflake(TempDirCase):
    def test_next_increases_and_decodes(self):
        with idmint.Snowflake(node={"datacenter": 1, "worker": 7}) as g:
            ids = [g.next() for _ in range(100000)]
            self.assertEqual(ids, sorted(set(ids)))
            d = g.decode(ids[-1])
            self.assertEqual(d.nodes, {"datacenter": 1, "worker": 7})
            self.assertEqual(d.layout, "twitter")
            now = dt.datetime.now(UTC)
            self.assertLess(abs((now - d.time).total_seconds()), 5)
            self.assertEqual(g.layout, "time:41@1ms,datacenter:5,worker:5,seq:12")
            self.assertEqual(g.epoch_ms, 1288834974657)

    def test_next_batch(self):
        with idmint.Snowflake(layout="discord", node={"worker": 3, "process": 4}) as g:
            first = g.next()
            batch = g.next_batch(1000)
            self.assertEqual(len(batch), 1000)
            self.assertEqual(batch, sorted(set(batch)))
            self.assertGreater(batch[0], first)
            self.assertEqual(idmint.decode(batch[0], layout="discord").nodes,
                             {"worker": 3, "process": 4})
            with self.assertRaises(idmint.InvalidArgumentError):
                g.next_batch(0)
            with self.assertRaises(TypeError):
                g.next_batch("3")

    def test_custom_layout_and_epoch(self):
        spec = "time:41@1ms,worker:10,seq:12"
        with idmint.Snowflake(layout=spec, epoch="2024-01-01", node={"worker": 5}) as g:
            i = g.next()
            self.assertEqual(g.epoch_ms, 1704067200000)
            d = idmint.decode(i, layout=spec, epoch=dt.datetime(2024, 1, 1, tzinfo=UTC))
            self.assertEqual(d.nodes, {"worker": 5})
            self.assertEqual(d.layout, spec)
        with self.assertRaises(idmint.LayoutError) as cm:
            idmint.Snowflake(layout=spec, node={"worker": 5})
        self.assertIn("epoch", str(cm.exception))
        with self.assertRaises(idmint.LayoutError):
            idmint.Snowflake(layout="time:41@1ms,worker:10,worker:2,seq:11", epoch=0,
                             node={"worker": 1})

    def test_bad_options_raise(self):
        with self.assertRaises(idmint.NodeError) as cm:
            idmint.Snowflake(node={"worker": 7})
        self.assertEqual(cm.exception.code, "IDM_ENODE")
        self.assertIn("datacenter", str(cm.exception))
        with self.assertRaises(idmint.RangeError):
            idmint.Snowflake(node={"datacenter": 1, "worker": 32})
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Snowflake(node={"datacenter": 1, "shard": 1, "worker": 1})
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Snowflake(node={"datacenter": 1, "worker": 1}, backwards="sometimes")
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Snowflake(node={"datacenter": 1, "worker": 1}, exhaust="never")
        # change-worker needs a lease
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Snowflake(node={"datacenter": 1, "worker": 1}, backwards="change-worker")
        with self.assertRaises(idmint.LayoutError):
            idmint.Snowflake(layout="snowflake", node={"worker": 1})
        with self.assertRaises(idmint.EpochError):
            idmint.Snowflake(layout="twitter", epoch="2999-01-01",
                             node={"datacenter": 1, "worker": 1})
        with self.assertRaises(TypeError):
            idmint.Snowflake(layout=5)

    def test_closed_generator_raises(self):
        g = idmint.Snowflake(node={"datacenter": 0, "worker": 0})
        g.next()
        g.close()
        g.close()  # twice is fine
        with self.assertRaises(idmint.InvalidArgumentError):
            g.next()
        with self.assertRaises(idmint.InvalidArgumentError):
            g.next_batch(2)

    def test_state_file(self):
        path = os.path.join(self.dir, "ids.state")
        with idmint.Snowflake(node={"datacenter": 2, "worker": 2}, state=path) as g:
            last = g.next()
            # one generator per state file
            with self.assertRaises(idmint.BusyError) as cm:
                idmint.Snowflake(node={"datacenter": 2, "worker": 2}, state=path)
            self.assertEqual(cm.exception.code, "IDM_EBUSY")
        self.assertTrue(os.path.exists(path))
        with idmint.Snowflake(node={"datacenter": 2, "worker": 2}, state=path) as g:
            self.assertGreater(g.next(), last)
        with open(path, "wb") as f:
            f.write(b"garbage")
        with self.assertRaises(idmint.CorruptError):
            idmint.Snowflake(node={"datacenter": 2, "worker": 2}, state=path)
        with self.assertRaises(idmint.NotFoundError):
            idmint.Snowflake(node={"datacenter": 2, "worker": 2},
                             state=os.path.join(self.dir, "none.state"), state_fresh=False)

    def test_lease_file_coordinator(self):
        url = "file://" + os.path.join(self.dir, "leases")
        with idmint.Snowflake(node={"datacenter": 1}, lease=url) as a, \
                idmint.Snowflake(node={"datacenter": 1}, lease=url,
                                 state=os.path.join(self.dir, "b")) as b:
            self.assertNotEqual(a.worker(), b.worker())
            ia, ib = a.next(), b.next()
            self.assertEqual(a.decode(ia).nodes["worker"], a.worker())
            self.assertEqual(b.decode(ib).nodes["worker"], b.worker())
            self.assertEqual(len(a.next_batch(10)), 10)
        # every node field leased together
        with idmint.Snowflake(lease=url + "2") as c:
            self.assertIsNotNone(c.worker())
            c.next()
        with idmint.Snowflake(lease=url + "3", node={"datacenter": 3},
                              lease_field="worker") as c:
            self.assertEqual(c.decode(c.next()).nodes["datacenter"], 3)
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Snowflake(lease="nosuch://x", node={"datacenter": 1})
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Snowflake(lease=url, node={"datacenter": 1, "worker": 1})
        with self.assertRaises(idmint.InvalidArgumentError):
            # another scope than the one recorded: another layout
            idmint.Snowflake(lease=url, layout="discord", node={"process": 1})


class TestDecodeRange(unittest.TestCase):
    def test_decode_forms(self):
        i = 2006515713438650368
        d = idmint.decode(i)
        self.assertEqual(idmint.decode(str(i)), d)
        self.assertEqual(idmint.decode(hex(i)), d)
        self.assertEqual(d.unix_ms, 1767225600000)
        self.assertEqual(d.time, dt.datetime(2026, 1, 1, tzinfo=UTC))
        with self.assertRaises(idmint.RangeError):
            idmint.decode(-1)
        with self.assertRaises(idmint.RangeError):
            idmint.decode(1 << 64)
        with self.assertRaises(idmint.ParseError):
            idmint.decode("12a")
        with self.assertRaises(idmint.ParseError):
            idmint.decode(" 12")
        with self.assertRaises(idmint.RangeError):
            idmint.decode("99999999999999999999")
        with self.assertRaises(idmint.RangeError):
            idmint.decode(1 << 63, layout="sonyflake")  # 63 bits
        with self.assertRaises(idmint.LayoutError):
            idmint.decode(1, layout="nosuch")
        with self.assertRaises(TypeError):
            idmint.decode(1.5)

    def test_range(self):
        lo, hi = idmint.range("2026-01-01", "2026-01-02")
        self.assertEqual((lo, hi), idmint.range(dt.datetime(2026, 1, 1, tzinfo=UTC),
                                                dt.datetime(2026, 1, 2, tzinfo=UTC)))
        self.assertEqual((lo, hi), idmint.range(1767225600000, 1767312000000))
        self.assertEqual(idmint.decode(lo).unix_ms, 1767225600000)
        self.assertEqual(idmint.decode(hi).unix_ms, 1767312000000 - 1)
        self.assertEqual(idmint.decode(hi).seq, 4095)
        # a time with an offset is the same instant
        plus2 = dt.timezone(dt.timedelta(hours=2))
        self.assertEqual(idmint.range(dt.datetime(2026, 1, 1, 2, tzinfo=plus2),
                                      "2026-01-02T00:00:00Z"), (lo, hi))
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.range(dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2))
        with self.assertRaises(idmint.RangeError):
            idmint.range("2026-01-02", "2026-01-01")
        with self.assertRaises(idmint.RangeError):
            idmint.range("2000-01-01", "2026-01-01")  # before twitter's epoch
        with self.assertRaises(idmint.RangeError):
            idmint.range("2026-02-30", "2026-03-01")
        with self.assertRaises(idmint.ParseError):
            idmint.range("2026-01-01 junk", "2026-03-01")
        lo_i, hi_i = idmint.range("2026-01-01", "2026-01-02", layout="instagram")
        self.assertEqual(idmint.decode(lo_i, layout="instagram").unix_ms, 1767225600000)

    def test_layout_names(self):
        self.assertEqual(idmint.layout_names(),
                         ["twitter", "discord", "instagram", "sonyflake"])
        self.assertRegex(idmint.library_version(), r"^\d+\.\d+\.\d+$")


class TestUuidUlid(unittest.TestCase):
    def test_uuid7(self):
        us = [idmint.uuid7() for _ in range(100000)]
        self.assertEqual(us, sorted(set(us)))
        u = us[-1]
        self.assertIsInstance(u, uuid.UUID)
        self.assertEqual(u.version, 7)
        self.assertEqual(u.variant, uuid.RFC_4122)
        # Python's uuid module reads it back the same, in every form
        self.assertEqual(uuid.UUID(str(u)), u)
        self.assertEqual(uuid.UUID(bytes=u.bytes), u)
        self.assertEqual(uuid.UUID(int=u.int), u)
        self.assertEqual(hash(uuid.UUID(u.hex)), hash(u))
        self.assertEqual(u.is_safe, uuid.SafeUUID.unknown)
        # its time is now, to the ms
        t = idmint.uuid7_time(u)
        self.assertLess(abs((dt.datetime.now(UTC) - t).total_seconds()), 5)
        self.assertEqual(t, idmint.uuid7_time(str(u)))
        self.assertEqual(int(t.timestamp() * 1000), u.int >> 80)

    def test_uuid4(self):
        us = {idmint.uuid4() for _ in range(10000)}
        self.assertEqual(len(us), 10000)
        for u in list(us)[:100]:
            self.assertEqual(u.version, 4)
            self.assertEqual(u.variant, uuid.RFC_4122)
            self.assertEqual(uuid.UUID(str(u)), u)
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.uuid7_time(idmint.uuid4())
        # a version-7 UUID from the standard library's constructor works too
        self.assertEqual(idmint.uuid7_time(uuid.UUID("017f22e2-79b0-7cc3-98c4-dc0c0c07398f")),
                         dt.datetime(2022, 2, 22, 19, 22, 22, tzinfo=UTC))

    def test_parse_uuid_strict(self):
        s = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"
        self.assertEqual(idmint.parse_uuid(s), uuid.UUID(s))
        self.assertEqual(idmint.parse_uuid(s.upper()), uuid.UUID(s))
        for bad in ("{" + s + "}", "urn:uuid:" + s, s.replace("-", ""), s[:-1], s + " ",
                    s[:8] + "x" + s[9:], ""):
            with self.assertRaises(idmint.ParseError, msg=bad):
                idmint.parse_uuid(bad)
        with self.assertRaises(TypeError):
            idmint.uuid7_time(42)

    def test_ulid(self):
        ls = [idmint.ulid() for _ in range(50000)]
        self.assertEqual(ls, sorted(set(ls)))
        s = ls[-1]
        self.assertRegex(s, r"^[0-9A-HJKMNP-TV-Z]{26}$")
        t = idmint.ulid_time(s)
        self.assertLess(abs((dt.datetime.now(UTC) - t).total_seconds()), 5)
        u = idmint.ulid_to_uuid(s)
        self.assertEqual(idmint.uuid_to_ulid(u), s)
        self.assertEqual(idmint.uuid_to_ulid(str(u)), s)
        self.assertEqual(idmint.ulid_time(s.lower()), t)
        # the spec's example
        self.assertEqual(idmint.ulid_time("01ARZ3NDEKTSV4RRFFQ69G5FAV"),
                         dt.datetime(2016, 7, 30, 23, 54, 10, 259000, tzinfo=UTC))
        for bad in ("01ARZ3NDEKTSV4RRFFQ69G5FA", "01ARZ3NDEKTSV4RRFFQ69G5FAI",
                    "01ARZ3NDEKTSV4RRFFQ69G5FAU", ""):
            with self.assertRaises(idmint.ParseError, msg=bad):
                idmint.ulid_time(bad)
        with self.assertRaises(idmint.RangeError):
            idmint.ulid_time("8ZZZZZZZZZZZZZZZZZZZZZZZZZ")

    def test_objectid(self):
        o = idmint.objectid()
        self.assertRegex(o, r"^[0-9a-f]{24}$")
        self.assertLess(abs((dt.datetime.now(UTC) - idmint.objectid_time(o)).total_seconds()),
                        5)
        self.assertNotEqual(o, idmint.objectid())
        with self.assertRaises(idmint.ParseError):
            idmint.objectid_time("xyz")


class TestErrors(unittest.TestCase):
    def test_every_c_code_has_its_class(self):
        lib = _native.core
        for errno in range(-1, -22, -1):
            cls = idmint.errors.BY_ERRNO[errno]
            self.assertTrue(issubclass(cls, idmint.Error))
            self.assertEqual(cls.code, lib.idm_err_name(errno).decode())
            self.assertIs(getattr(idmint, cls.__name__), cls)
        self.assertEqual(lib.idm_err_name(-22), b"IDM_UNKNOWN")
        e = idmint.errors.from_code(-99, "x")
        self.assertIs(type(e), idmint.Error)
        self.assertEqual((e.code, e.errno), ("IDM_UNKNOWN", -99))
        self.assertTrue(issubclass(idmint.ParseError, ValueError))
        self.assertFalse(issubclass(idmint.ClockBackwardsError, ValueError))


def _start_forked(child):
    """Fork a process that runs child(write_fd) and exits 0, or writes
    "ERROR ..." to write_fd and exits 1 if child raised (it never returns
    into unittest). Returns (pid, finish); finish() reads all the child
    wrote and reaps it: (wait status, text)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            child(w)
        except BaseException as e:
            os.write(w, ("ERROR %r\n" % e).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)

    def finish():
        with os.fdopen(r, "rb") as f:
            data = f.read().decode()
        _, status = os.waitpid(pid, 0)
        return status, data
    return pid, finish


def _manual_clock_uuid7_gen(start_ms):
    """A uuid7 generator on a manual clock at start_ms, for a C error on
    demand (a clock before 1970: IDM_ERANGE; the manual clock counts ns in
    an int64, so it cannot reach 2^48 ms, the other bound); (gen, free)."""
    lib = _native.core
    P = ctypes.c_void_p
    new_clock = lib["idm_manual_clock_new"]
    new_clock.argtypes = [ctypes.POINTER(P), ctypes.c_int64, ctypes.c_bool]
    clock_of = lib["idm_manual_clock_clock"]
    clock_of.restype, clock_of.argtypes = P, [P]
    free_clock = lib["idm_manual_clock_free"]
    free_clock.restype, free_clock.argtypes = None, [P]
    mc, gen = P(), P()
    assert new_clock(ctypes.byref(mc), start_ms, False) == 0
    assert lib.idm_uuid7_gen_new(ctypes.byref(gen), clock_of(mc), None) == 0

    def free():
        lib.idm_uuid7_gen_free(gen)
        free_clock(mc)
    return gen.value, free


class TestNativePath(unittest.TestCase):
    """The optional accelerator (idmint._speedups) against the ctypes path,
    whose functions the package keeps as _uuid7_ctypes and friends."""

    def test_path_reported_and_pure_honoured(self):
        self.assertIn(idmint._native_path, ("accelerator", "ctypes"))
        if os.environ.get("IDMINT_PURE") == "1":
            self.assertEqual(idmint._native_path, "ctypes")
            self.assertIs(idmint.uuid7, idmint._uuid7_ctypes)
        try:
            importlib.import_module("idmint._speedups")
            built = "accelerator"
        except ImportError:
            built = "ctypes"
        if os.environ.get("IDMINT_PURE") != "1":
            self.assertEqual(idmint._native_path, built)
        code = "import idmint; print(idmint._native_path, idmint.uuid7.__name__)"
        for pure, want in (("1", "ctypes"), ("0", built), ("", built)):
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=dict(os.environ, IDMINT_PURE=pure),
                               cwd=tempfile.gettempdir(), check=True)
            self.assertEqual(r.stdout.split(), [want, "uuid7"], pure)

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_accelerated_functions_in_use(self):
        from idmint import _speedups
        self.assertIs(idmint.uuid7, _speedups.uuid7)
        self.assertIs(idmint.uuid4, _speedups.uuid4)
        self.assertIs(idmint.ulid, _speedups.ulid)
        self.assertIs(idmint.Snowflake.next, idmint._snowflake_next_accelerated)
        self.assertEqual(idmint.uuid7.__doc__, inspect.getdoc(idmint._uuid7_ctypes))

    def _same_kind(self, a, c):
        """a (accelerator) and c (ctypes) are UUIDs alike in every way."""
        for u in (a, c):
            self.assertIs(type(u), uuid.UUID)
            self.assertIs(type(u.int), int)
            self.assertIs(u.is_safe, uuid.SafeUUID.unknown)
            self.assertEqual(u.variant, uuid.RFC_4122)
            self.assertFalse(hasattr(u, "__dict__"))
            self.assertRegex(str(u), r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                     r"[0-9a-f]{4}-[0-9a-f]{12}$")
            # what uuid.UUID's own constructor makes of the same value
            std = uuid.UUID(str(u))
            self.assertEqual(std, u)
            self.assertEqual((std.int, std.is_safe, std.bytes, std.hex, std.urn),
                             (u.int, u.is_safe, u.bytes, u.hex, u.urn))
            self.assertEqual(hash(u), hash(std))
            self.assertEqual(hash(u), hash(u.int))
            self.assertEqual(repr(u), repr(std))
            self.assertEqual({u: 1}[std], 1)
            back = pickle.loads(pickle.dumps(u))
            self.assertIs(type(back), uuid.UUID)
            self.assertEqual((back, back.is_safe), (u, u.is_safe))
            self.assertEqual(copy.deepcopy(u), u)
            with self.assertRaises(TypeError):
                u.int = 5  # still immutable
        self.assertEqual(a.version, c.version)

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_uuid7_same_kind_as_ctypes(self):
        a, c = idmint.uuid7(), idmint._uuid7_ctypes()
        self._same_kind(a, c)
        self.assertEqual(a.version, 7)
        # one generator behind both paths: still increasing across them
        self.assertLess(a, c)
        self.assertLess(c, idmint.uuid7())
        self.assertEqual(idmint.uuid7_time(a).year, dt.datetime.now(UTC).year)
        a4, c4 = idmint.uuid4(), idmint._uuid4_ctypes()
        self._same_kind(a4, c4)
        self.assertEqual(a4.version, 4)
        la, lc = idmint.ulid(), idmint._ulid_ctypes()
        self.assertIs(type(la), str)
        self.assertRegex(la, r"^[0-9A-HJKMNP-TV-Z]{26}$")
        self.assertLess(la, lc)
        self.assertLess(lc, idmint.ulid())

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_uuid7_monotonic_100k(self):
        us = [idmint.uuid7() for _ in range(100000)]
        self.assertTrue(all(x < y for x, y in zip(us, us[1:])))
        self.assertEqual(len({u.int for u in us}), 100000)

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_uuid7_four_threads_both_paths(self):
        out = [None] * 4

        def run(k):
            fast, slow = idmint.uuid7, idmint._uuid7_ctypes
            out[k] = [fast() if i % 3 else slow() for i in range(30000)]

        ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for us in out:
            self.assertTrue(all(x < y for x, y in zip(us, us[1:])))
        self.assertEqual(len({u for us in out for u in us}), 120000)

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_uuid7_after_fork_unique(self):
        before = [idmint.uuid7() for _ in range(1000)]

        def mint(w):
            os.write(w, ("\n".join(str(idmint.uuid7()) for _ in range(20000)) + "\n").encode())

        _, finish = _start_forked(mint)
        mine = [idmint.uuid7() for _ in range(20000)]
        status, text = finish()
        self.assertEqual(status, 0, text[-500:])
        child = [uuid.UUID(x) for x in text.split()]
        self.assertEqual(len(child), 20000)
        self.assertEqual(len(set(before) | set(mine) | set(child)), 41000)

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_c_error_raises_the_same_exception(self):
        from idmint import _speedups
        lib = _native.core
        for start_ms in (-5, -86400000):
            gen, free = _manual_clock_uuid7_gen(start_ms)
            try:
                with self.assertRaises(idmint.RangeError) as cm:
                    _speedups.uuid7_from(gen)
                fast = cm.exception
                rc = lib.idm_uuid7_next(gen, _native.Bytes16())
                slow = idmint.errors.from_code(rc, "uuid7")
            finally:
                free()
            self.assertIs(type(fast), type(slow))
            self.assertEqual((str(fast), fast.code, fast.errno),
                             (str(slow), slow.code, slow.errno))
            self.assertEqual(fast.errno, -5)
            self.assertIn(str(start_ms), str(fast))

    @unittest.skipUnless(ACCELERATED, "the ctypes path is in use")
    def test_snowflake_error_through_the_accelerator(self):
        """A Snowflake's copy in a forked child: the C library refuses it
        (IDM_EFORKED); both paths raise the same ForkedError."""
        g = idmint.Snowflake(node={"datacenter": 3, "worker": 3})
        first = g.next()

        def both_paths(w):
            got = []
            for f in (g.next, lambda: idmint._snowflake_next_ctypes(g)):
                try:
                    got.append("minted %d" % f())
                except idmint.Error as e:
                    got.append("%s|%s|%s" % (type(e).__name__, e.code, e))
            os.write(w, "\n".join(got).encode())

        status, text = _start_forked(both_paths)[1]()
        self.assertEqual(status, 0, text)
        got = text.split("\n")
        self.assertEqual(len(got), 2, got)
        self.assertTrue(got[0].startswith("ForkedError|IDM_EFORKED|"), got)
        self.assertEqual(got[0], got[1])
        self.assertGreater(g.next(), first)
        g.close()
        with self.assertRaises(idmint.InvalidArgumentError):
            g.next()

    @unittest.skipUnless(shutil.which("cc"), "no C compiler")
    def test_speedups_compile_warning_free(self):
        src = os.path.join(SOURCE_DIR, "bindings", "python", "src", "idmint", "_speedups.c")
        inc = sysconfig.get_paths()["include"]
        if not os.path.exists(src):
            self.skipTest("no %s (set IDMINT_SOURCE_DIR)" % src)
        if not os.path.exists(os.path.join(inc, "Python.h")):
            self.skipTest("no Python headers")
        with open(src) as f:
            self.assertTrue(f.readline().startswith("/* SPDX-License-Identifier: MIT */"))
        r = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                            "-I", inc, src], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class TestSequence(TempDirCase):
    def test_sqlite_sequence(self):
        url = "sqlite://" + os.path.join(self.dir, "t.db")
        idmint.create_sequence("orders", url, start=100)
        with self.assertRaises(idmint.ExistsError):
            idmint.create_sequence("orders", url)
        with idmint.Sequence("orders", [url],
                             floor_file=os.path.join(self.dir, "orders.floor")) as q:
            got = [q.next() for _ in range(2500)]
            self.assertEqual(got, list(range(100, 2600)))
            st = q.stats()
            self.assertEqual(st["ids"], 2500)
            self.assertGreaterEqual(st["fetches"], 1)
        with idmint.Sequence("orders", url) as q:
            self.assertGreater(q.next(), 2599)  # the rest of a block is a gap
        with self.assertRaises(idmint.NoSequenceError):
            idmint.Sequence("nosuch", url)
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Sequence("bad name", url)
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Sequence("orders", "mysql://x/y")
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Sequence("orders", [])

    def test_two_stores_odd_even(self):
        urls = ["sqlite://" + os.path.join(self.dir, "a.db"),
                "sqlite://" + os.path.join(self.dir, "b.db")]
        idmint.create_sequence("tickets", urls)
        with idmint.Sequence("tickets", urls) as q:
            got = [q.next() for _ in range(100)]
        self.assertEqual(len(set(got)), 100)
        with self.assertRaises(idmint.InvalidArgumentError):
            idmint.Sequence("tickets", list(reversed(urls)))


class TestConcurrency(TempDirCase):
    PER = 50000

    def test_four_threads_one_generator(self):
        g = idmint.Snowflake(node={"datacenter": 4, "worker": 4})
        out = [None] * 4

        def run(k):
            out[k] = [g.next() for _ in range(self.PER)] + g.next_batch(100)

        ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        g.close()
        for ids in out:
            self.assertEqual(ids, sorted(ids))  # each thread sees them increase
        every = [i for ids in out for i in ids]
        self.assertEqual(len(set(every)), 4 * (self.PER + 100))

    def test_four_threads_uuid7_ulid(self):
        out = [None] * 4

        def run(k):
            out[k] = ([idmint.uuid7() for _ in range(20000)],
                      [idmint.ulid() for _ in range(5000)])

        ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for us, ls in out:
            self.assertEqual(us, sorted(us))
            self.assertEqual(ls, sorted(ls))
        self.assertEqual(len({u for us, _ in out for u in us}), 80000)
        self.assertEqual(len({s for _, ls in out for s in ls}), 20000)

    def _barrier(self):
        """In a child of _fork_children(barrier=True): say ready, then wait
        until every child has said so."""
        os.write(self._ready_w, b"r")
        if os.read(self._go_r, 1) != b"g":
            raise RuntimeError("no go from the parent")

    def _fork_children(self, child, barrier=False):
        """Run child(k, write_fd) in 4 forked processes; their output lines.
        With barrier, each child calls self._barrier() once, and none goes on
        until all 4 have."""
        procs = []
        ready_r, self._ready_w = os.pipe()
        self._go_r, go_w = os.pipe()
        for k in range(4):
            procs.append(_start_forked(lambda w, k=k: child(k, w)))
        if barrier:
            got = b""
            while len(got) < 4:
                readable, _, _ = select.select([ready_r], [], [], 60)
                if not readable:
                    for pid, _ in procs:
                        os.kill(pid, signal.SIGKILL)
                    self.fail("the forked children did not all reach the barrier")
                got += os.read(ready_r, 4 - len(got))
            os.write(go_w, b"gggg")
        for fd in (ready_r, self._ready_w, self._go_r, go_w):
            os.close(fd)
        lines = []
        for _, finish in procs:
            status, data = finish()
            self.assertEqual(status, 0, data[-500:])
            lines.extend(data.split())
        return lines

    def test_four_forked_processes_leasing(self):
        url = "file://" + os.path.join(self.dir, "leases")
        parent = idmint.Snowflake(node={"datacenter": 9}, lease=url)
        mine = parent.next()
        before = idmint.uuid7()

        def child(k, w):
            # the parent's generator refuses here
            try:
                parent.next()
                os.write(w, b"ERROR parent's generator minted in a child\n")
            except idmint.ForkedError:
                pass
            parent.close()  # frees nothing of the parent's
            with idmint.Snowflake(node={"datacenter": 9}, lease=url) as g:
                # all 4 hold their leases at once: 4 worker ids
                self._barrier()
                ids = [g.next() for _ in range(self.PER)]
            us = [idmint.uuid7() for _ in range(1000)]
            assert ids == sorted(ids)
            os.write(w, ("\n".join(map(str, ids)) + "\n").encode())
            os.write(w, ("\n".join(map(str, us)) + "\n").encode())

        lines = self._fork_children(child, barrier=True)
        self.assertFalse([x for x in lines if x.startswith("ERROR")], lines[:5])
        sf = [int(x) for x in lines if "-" not in x]
        us = [uuid.UUID(x) for x in lines if "-" in x]
        self.assertEqual(len(sf), 4 * self.PER)
        self.assertEqual(len(set(sf) | {mine}), 4 * self.PER + 1)
        workers = {idmint.decode(i).nodes["worker"] for i in sf}
        self.assertEqual(len(workers), 4)
        self.assertNotIn(idmint.decode(mine).nodes["worker"], workers)
        self.assertEqual(len(set(us) | {before}), 4001)
        self.assertGreater(parent.next(), mine)  # still the parent's
        parent.close()

    def test_forked_children_and_sequences(self):
        url = "sqlite://" + os.path.join(self.dir, "t.db")
        idmint.create_sequence("s", url)
        q = idmint.Sequence("s", url)
        got = [q.next()]

        def refuse(k, w):
            try:
                q.next()
                os.write(w, b"ERROR parent's sequence used in a child\n")
            except idmint.ForkedError:
                pass
            q.close()  # touches nothing of the parent's

        lines = self._fork_children(refuse)
        self.assertEqual(lines, [])
        got.append(q.next())

        # Children open their own allocators on the same file while the
        # parent's goes on taking blocks (its prefetch thread may be inside
        # SQLite at the fork: fork waits for it to leave).
        stop = threading.Event()

        def parent_takes():
            while not stop.is_set():
                got.extend(q.next() for _ in range(100))
                time.sleep(0.0005)

        t = threading.Thread(target=parent_takes)
        t.start()
        try:
            def child(k, w):
                with idmint.Sequence("s", url) as mine:
                    os.write(w, ("\n".join(str(mine.next()) for _ in range(500)) + "\n").encode())

            lines = self._fork_children(child)
        finally:
            stop.set()
            t.join()
        q.close()
        self.assertFalse([x for x in lines if x.startswith("ERROR")], lines[:5])
        values = [int(x) for x in lines] + got
        self.assertEqual(len(values), 2000 + len(got))
        self.assertEqual(len(set(values)), len(values))


class TestPackage(unittest.TestCase):
    def test_typed_marker(self):
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(idmint.__file__),
                                                    "py.typed")))

    def test_bad_library_path_is_an_import_error(self):
        env = dict(os.environ, IDMINT_LIBRARY="/nonexistent/libidmint.so")
        r = subprocess.run([sys.executable, "-c", "import idmint"], env=env,
                           capture_output=True, text=True, cwd=tempfile.gettempdir())
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("IDMINT_LIBRARY", r.stderr)

    @unittest.skipUnless(shutil.which("cc"), "no C compiler")
    def test_struct_layouts_match_the_headers(self):
        """Every ctypes structure has the C struct's size and field offsets."""
        inc = os.path.join(SOURCE_DIR, "include")
        if not os.path.exists(os.path.join(inc, "idmint", "leased.h")):
            self.skipTest("no idmint headers at %s (set IDMINT_SOURCE_DIR)" % inc)
        lines = ["#include <stddef.h>", "#include <stdio.h>",
                 "#include <idmint/idmint.h>", "#include <idmint/leased.h>",
                 "#include <idmint/segment.h>", "int main(void) {"]
        expect = []
        for cname, cls in _native.STRUCTS.items():
            lines.append('printf("%%zu\\n", sizeof(%s));' % cname)
            expect.append("%s size %d" % (cname, _ctypes_sizeof(cls)))
            for fname, _ in cls._fields_:
                lines.append('printf("%%zu\\n", offsetof(%s, %s));' % (cname, fname))
                expect.append("%s.%s %d" % (cname, fname, getattr(cls, fname).offset))
        lines.append("return 0; }")
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "abi.c"), os.path.join(d, "abi")
            with open(src, "w") as f:
                f.write("\n".join(lines))
            subprocess.run(["cc", "-std=c11", "-I", inc, "-o", exe, src], check=True)
            got = subprocess.run([exe], check=True, capture_output=True,
                                 text=True).stdout.split()
        got_lines = [e.rsplit(" ", 1)[0] + " " + g for e, g in zip(expect, got)]
        self.assertEqual(got_lines, expect)


def _ctypes_sizeof(cls):
    import ctypes
    return ctypes.sizeof(cls)


if __name__ == "__main__":
    unittest.main()
