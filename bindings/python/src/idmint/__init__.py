# SPDX-License-Identifier: MIT
"""idmint for Python: unique, time-ordered ids minted in process.

    import idmint
    with idmint.Snowflake(layout="twitter", node={"datacenter": 1, "worker": 7}) as gen:
        i = gen.next()                     # an int, strictly increasing
    idmint.decode(i).time                  # when it was minted (UTC datetime)
    idmint.uuid7()                         # uuid.UUID, version 7, monotonic
    idmint.ulid()                          # "01J..." (26 characters)

Every call goes to libidmint through ctypes, which releases the GIL for the
call: threads mint in parallel on one generator. Where the optional compiled
accelerator (idmint._speedups) was built, uuid7(), uuid4(), ulid() and
Snowflake.next() call the C functions through it instead, with the same
results and exceptions (the first three keep the GIL through their short C
call, which never waits); IDMINT_PURE=1 in the environment at import keeps
every call on ctypes, and _native_path says which path is in use
("accelerator" or "ctypes"). A generator belongs to the process that
opened it: after os.fork() the child's copy raises ForkedError
(open a generator, with its own worker id, in each process); the module's
uuid7(), uuid4(), ulid() and objectid() reseed by themselves in a child.
"""
import builtins
import datetime as _dt
import os
import threading
import uuid as _uuid
from ctypes import byref, c_int64, c_uint64, c_void_p, cast, create_string_buffer
from typing import (Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple,
                    TypeVar, Union)

from . import _native
from .errors import (BusyError, ClockBackwardsError, CorruptError, EpochError, Error,
                     ExhaustedError, ExistsError, ForkedError, InputOutputError,
                     InvalidArgumentError, LayoutError, LeaseError, NodeError,
                     NoSequenceError, NotFoundError, OutOfMemoryError, ParseError,
                     RandomError, RandomOverflowError, RangeError, TimeOverError,
                     UnavailableError, check as _check, from_code as _from_code)

__all__ = [
    "Snowflake", "Sequence", "Decoded", "decode", "range", "layout_names",
    "uuid7", "uuid4", "ulid", "objectid", "uuid7_time", "ulid_time", "objectid_time",
    "ulid_to_uuid", "uuid_to_ulid", "parse_uuid", "create_sequence", "library_version",
    "Error", "InvalidArgumentError", "OutOfMemoryError", "LayoutError", "ParseError",
    "RangeError", "ClockBackwardsError", "ExhaustedError", "TimeOverError", "EpochError",
    "InputOutputError", "CorruptError", "NotFoundError", "BusyError", "NodeError",
    "RandomError", "RandomOverflowError", "LeaseError", "ExistsError", "NoSequenceError",
    "UnavailableError", "ForkedError",
]
__version__ = "0.1.0"

_lib = _native.core
_UTC = _dt.timezone.utc
Time = Union[_dt.datetime, int, str]

# Bumped in every forked child: objects whose C side has threads of its own
# (leases, segment allocators) must not be closed by a child, which has
# none of those threads.
_fork_gen = 0


def _after_fork() -> None:
    global _fork_gen
    _fork_gen += 1


os.register_at_fork(after_in_child=_after_fork)


def library_version() -> str:
    """The version of the libidmint actually loaded."""
    return _lib.idm_version().decode()


def _address(fn: object) -> int:
    """The address of a C function of the loaded libraries (a ctypes
    function), for the accelerator."""
    return cast(fn, c_void_p).value  # type: ignore[arg-type,return-value]


def _text(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (what, type(value).__name__))
    if "\0" in value:
        raise InvalidArgumentError("%s contains a NUL character" % what)
    return value.encode()


def _ms_of(t: Time, what: str) -> int:
    """Unix ms of a datetime (timezone-aware), an int of ms, or a string in
    idm_time_parse's syntax ("2026-01-01", "2026-01-01T10:00:00Z", ms)."""
    if isinstance(t, bool):
        raise TypeError("%s must be a datetime, int or str, not bool" % what)
    if isinstance(t, int):
        return t
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise InvalidArgumentError("%s: a naive datetime is ambiguous; give one with "
                                       "a tzinfo (datetime.timezone.utc)" % what)
        delta = t - _dt.datetime(1970, 1, 1, tzinfo=_UTC)
        return delta // _dt.timedelta(milliseconds=1)
    if isinstance(t, str):
        out = c_int64()
        _check(_lib.idm_time_parse(_text(t, what), byref(out)), what)
        return out.value
    raise TypeError("%s must be a datetime, int or str, not %s" % (what, type(t).__name__))


def _datetime_of(ms: int) -> _dt.datetime:
    return _dt.datetime(1970, 1, 1, tzinfo=_UTC) + _dt.timedelta(milliseconds=ms)


def _u64_of(value: Union[int, str], what: str = "id") -> int:
    if isinstance(value, bool):
        raise TypeError("%s must be an int or str, not bool" % what)
    if isinstance(value, int):
        if not 0 <= value < 1 << 64:
            raise RangeError("%s: %d is not an unsigned 64-bit integer" % (what, value))
        return value
    if isinstance(value, str):
        out = c_uint64()
        _check(_lib.idm_u64_parse(_text(value, what), byref(out)), what)
        return out.value
    raise TypeError("%s must be an int or str, not %s" % (what, type(value).__name__))


# ------------------------------------------------------------------ layouts

class _Layout:
    """An idm_layout and what Python needs of it. Immutable; never freed
    once cached (layouts are small and few)."""

    __slots__ = ("ptr", "name", "text", "epoch_ms", "fields")

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        buf = create_string_buffer(512)
        _check(_lib.idm_layout_format(ptr, buf, len(buf)), "layout")
        self.text = buf.value.decode()
        self.name = _lib.idm_layout_name(ptr).decode()
        self.epoch_ms = _lib.idm_layout_epoch(ptr)
        fields = []
        info = _native.FieldInfo()
        for i in builtins.range(_lib.idm_layout_field_count(ptr)):
            _check(_lib.idm_layout_field(ptr, i, byref(info)), "layout")
            fields.append((info.name.decode(), info.kind))
        self.fields: List[Tuple[str, int]] = fields

    def node_fields(self) -> List[str]:
        return [name for name, kind in self.fields if kind == 2]


_layouts: Dict[Tuple[str, Optional[str]], _Layout] = {}
_layouts_lock = threading.Lock()


def _epoch_text(epoch: Optional[Time]) -> Optional[str]:
    if epoch is None:
        return None
    return str(_ms_of(epoch, "epoch"))


def _layout(spec: str, epoch: Optional[Time]) -> _Layout:
    """A preset name or a text form ("time:41@1ms,worker:10,seq:12"; it needs
    an epoch), cached."""
    key = (spec, _epoch_text(epoch))
    found = _layouts.get(key)
    if found is not None:
        return found
    ptr = c_void_p()
    etext = key[1].encode() if key[1] is not None else None
    _check(_lib.idm_layout_from_spec(byref(ptr), _text(spec, "layout"), etext),
           "layout %r" % spec)
    made = _Layout(ptr.value)
    with _layouts_lock:
        if key in _layouts:
            _lib.idm_layout_free(ptr)
            return _layouts[key]
        if len(_layouts) < 256:
            _layouts[key] = made
    return made


def layout_names() -> List[str]:
    """The preset layouts: twitter, discord, instagram, sonyflake."""
    names = _lib.idm_layout_preset_names()
    out = []
    i = 0
    while names[i] is not None:
        out.append(names[i].decode())
        i += 1
    return out


class Decoded(NamedTuple):
    """A Snowflake id split into its fields."""
    id: int
    layout: str
    unix_ms: int          # start of the id's tick, ms since 1970
    time: _dt.datetime    # the same, as an aware UTC datetime
    tick: int
    seq: int
    nodes: Dict[str, int]  # the node fields' values by name


def _decode(lay: _Layout, value: Union[int, str]) -> Decoded:
    ident = _u64_of(value)
    d = _native.Decoded()
    _check(_lib.idm_layout_decode(lay.ptr, ident, byref(d)), "decode %d" % ident)
    nodes = {name: d.value[i] for i, (name, kind) in enumerate(lay.fields) if kind == 2}
    return Decoded(ident, lay.name if lay.name != "custom" else lay.text, d.unix_ms,
                   _datetime_of(d.unix_ms), d.tick, d.seq, nodes)


def decode(id: Union[int, str], layout: str = "twitter",
           epoch: Optional[Time] = None) -> Decoded:
    """Split a Snowflake id (an int, or its decimal or 0x text) of a layout."""
    return _decode(_layout(layout, epoch), id)


def range(from_dt: Time, to_dt: Time, layout: str = "twitter",
          epoch: Optional[Time] = None) -> Tuple[int, int]:
    """(min_id, max_id): the ids whose time lies in [from_dt, to_dt), for
    `WHERE id BETWEEN min_id AND max_id`."""
    lay = _layout(layout, epoch)
    lo, hi = c_uint64(), c_uint64()
    _check(_lib.idm_layout_range(lay.ptr, _ms_of(from_dt, "from"), _ms_of(to_dt, "to"),
                                 byref(lo), byref(hi)), "range")
    return lo.value, hi.value


# ---------------------------------------------------------------- Snowflake

_BACKWARDS = {"logical": 0, "refuse": 1, "wait": 2, "change-worker": 3}
_EXHAUST = {"wait": 0, "borrow": 1}


_T = TypeVar("_T", bound="_Closing")


class _Closing:
    """What a handle on a C object with a close() gives: use in a with
    statement, and close() when collected."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Snowflake(_Closing):
    """A Snowflake generator on one layout, for one set of node values.

    node: the node fields' values by name ({"datacenter": 1, "worker": 7}).
    lease: a coordinator URL (file:///dir, etcd://..., zk://...,
        postgres://...): the node fields not given in node are leased there
        together (or lease_field, "worker" or "datacenter+worker"), kept by
        a keeper thread and claimed anew after a loss.
    state: without a lease, a state file (created if missing), so that a
        restart never mints at or below an earlier run's time; with a lease,
        a directory for the claim and state files, so that a restart
        resumes its claim.
    backwards: "logical" (default), "refuse", "wait", or with a lease
        "change-worker"; exhaust: "wait" (default) or "borrow".

    next() and next_batch() may be called from any number of threads at
    once; close() only once they are done.
    """

    def __init__(self, layout: str = "twitter", epoch: Optional[Time] = None,
                 node: Optional[Mapping[str, int]] = None, lease: Optional[str] = None,
                 state: Optional[str] = None, backwards: str = "logical",
                 exhaust: str = "wait", max_drift_ms: Optional[int] = None,
                 max_wait_ms: Optional[int] = None, state_fresh: Optional[bool] = None,
                 lease_field: Optional[str] = None, lease_ttl_ms: Optional[int] = None,
                 reclaim: bool = True) -> None:
        self._g: Optional[int] = None
        self._leased = lease is not None
        self._local = threading.local()
        self._fork = _fork_gen
        lay = _layout(layout, epoch)
        self._layout = lay
        if backwards not in _BACKWARDS:
            raise InvalidArgumentError("backwards: %r is none of %s"
                                       % (backwards, ", ".join(_BACKWARDS)))
        if exhaust not in _EXHAUST:
            raise InvalidArgumentError("exhaust: %r is none of %s"
                                       % (exhaust, ", ".join(_EXHAUST)))
        if self._leased:
            llib = _native.lease_lib()
            lopts = _native.LeasedOpts()
            llib.idm_leased_opts_init(byref(lopts))
            gen = lopts.gen
        else:
            gen = _native.SnowflakeOpts()
            _lib.idm_snowflake_opts_init(byref(gen))
        gen.layout = lay.ptr
        for name, value in (node or {}).items():
            _check(_lib.idm_snowflake_opts_node(byref(gen), _text(name, "node field"),
                                                _u64_of(value, "node %s" % name)),
                   "node %s=%s" % (name, value))
        gen.backwards = _BACKWARDS[backwards]
        gen.exhaust = _EXHAUST[exhaust]
        if max_drift_ms is not None:
            gen.max_drift_ms = max_drift_ms
        if max_wait_ms is not None:
            gen.max_wait_ms = max_wait_ms
        keep = []  # the bytes the C options point at, alive until open returns
        handle = c_void_p()
        if self._leased:
            if lease_field is None:
                given = set(node or {})
                lease_field = "+".join(f for f in lay.node_fields() if f not in given)
                if not lease_field:
                    raise InvalidArgumentError("lease: every node field of layout %s is "
                                               "given in node; leave out the ones to lease"
                                               % lay.text)
            keep += [_text(lease, "lease"), _text(lease_field, "lease_field")]
            lopts.lease.url, lopts.field = keep[0], keep[1]
            if lease_ttl_ms is not None:
                lopts.lease.ttl_ms = lease_ttl_ms
            if state is not None:
                keep.append(_text(os.fspath(state), "state"))
                lopts.state_dir = keep[-1]
            lopts.reclaim = reclaim
            _check(llib.idm_leased_open(byref(handle), byref(lopts)), "lease %s" % lease)
            self._next1 = llib.idm_leased_next
            self._next1_addr = _address(llib.idm_leased_next)
            self._nextn = llib.idm_leased_next_batch
            self._close = llib.idm_leased_close
        else:
            if state is not None:
                path = os.fspath(state)
                keep.append(_text(path, "state"))
                gen.state_path = keep[-1]
                gen.state_fresh = (not os.path.exists(path)) if state_fresh is None \
                    else state_fresh
            _check(_lib.idm_snowflake_open(byref(handle), byref(gen)), "snowflake")
            self._next1 = _lib.idm_snowflake_next
            self._next1_addr = _address(_lib.idm_snowflake_next)
            self._nextn = _lib.idm_snowflake_next_batch
            self._close = _lib.idm_snowflake_close
        self._g = handle.value

    @property
    def layout(self) -> str:
        """The layout's text form, e.g. time:41@1ms,datacenter:5,worker:5,seq:12."""
        return self._layout.text

    @property
    def epoch_ms(self) -> int:
        return self._layout.epoch_ms

    def _handle(self) -> int:
        if self._g is None:
            raise InvalidArgumentError("the generator is closed")
        return self._g

    def next(self) -> int:
        """One id, above every id this generator handed out before."""
        # The ctypes path; with the accelerator, _snowflake_next_accelerated
        # below takes its place.
        try:
            out = self._local.out
        except AttributeError:
            out = self._local.out = c_uint64()
        g = self._g
        if g is None:
            self._handle()
        rc = self._next1(g, out)
        if rc != 0:
            raise _from_code(rc, "next")
        return out.value

    def next_batch(self, n: int) -> List[int]:
        """n consecutive ids with one compare-and-swap, strictly increasing."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("n must be an int")
        if n <= 0:
            raise InvalidArgumentError("next_batch: n must be at least 1, not %d" % n)
        ids = (c_uint64 * n)()
        _check(self._nextn(self._handle(), ids, n), "next_batch(%d)" % n)
        return list(ids)

    def decode(self, id: Union[int, str]) -> Decoded:
        """Split an id of this generator's layout."""
        return _decode(self._layout, id)

    def worker(self) -> Optional[int]:
        """The leased worker id now (None without a lease)."""
        if not self._leased:
            return None
        st = _native.LeasedStatus()
        _native.lease_lib().idm_leased_status_get(self._handle(), byref(st))
        return st.worker

    def close(self) -> None:
        """Store the exact mark (state file), release the lease, free. Only
        once no other thread mints on it. In a forked child nothing of the
        parent's is written or released."""
        g, self._g = self._g, None
        if g is None:
            return
        if self._leased and self._fork != _fork_gen:
            return  # the keeper threads are the parent's: leave the copy
        _check(self._close(g), "close")



# ------------------------------------------------- 128-bit and 96-bit ids

class _PerProcess:
    """A C generator made on first use; the C side reseeds in a forked
    child by itself."""

    def __init__(self, make: str, free: str, *args: object) -> None:
        self.make, self.free, self.args = make, free, args
        self.ptr: Optional[int] = None
        self.cptr: Optional[c_void_p] = None  # the same, for a call without argtypes
        self.lock = threading.Lock()

    def get(self) -> int:
        ptr = self.ptr
        if ptr is None:
            with self.lock:
                if self.ptr is None:
                    p = c_void_p()
                    _check(getattr(_lib, self.make)(byref(p), None, None, *self.args),
                           self.make)
                    self.cptr = c_void_p(p.value)
                    self.ptr = p.value
                ptr = self.ptr
        return ptr  # type: ignore[return-value]

    def cget(self) -> c_void_p:
        self.get()
        return self.cptr  # type: ignore[return-value]


_uuid7_gen = _PerProcess("idm_uuid7_gen_new", "idm_uuid7_gen_free")
_ulid_gen = _PerProcess("idm_ulid_gen_new", "idm_ulid_gen_free", True)
_oid_gen = _PerProcess("idm_objectid_gen_new", "idm_objectid_gen_free")
_tls = threading.local()
_UUID = _uuid.UUID
_SAFE = _uuid.SafeUUID.unknown
_new = object.__new__
# The slots' own setters: uuid.UUID.__setattr__ refuses (UUIDs are
# immutable), and object.__setattr__ looks the name up first.
_set_int = _UUID.__dict__["int"].__set__
_set_safe = _UUID.__dict__["is_safe"].__set__
_from_bytes = int.from_bytes
# idm_uuid7_next without argtypes (lib[name] is a new function object): it
# is handed a c_void_p and a Bytes16, which ctypes passes as they are, and so
# skips converting them on every call.
_uuid7_next = _lib["idm_uuid7_next"]


def _buf16() -> "_native.Bytes16":
    try:
        return _tls.b16
    except AttributeError:
        _tls.b16 = _native.Bytes16()
        return _tls.b16


def _as_uuid(b: object) -> _uuid.UUID:
    # uuid.UUID(int=...) checks and converts in Python; the bytes are
    # already a valid UUID, so set the two slots directly.
    u = _new(_UUID)
    _set_int(u, _from_bytes(b, "big"))  # type: ignore[arg-type]
    _set_safe(u, _SAFE)
    return u


def uuid7() -> _uuid.UUID:
    """A UUIDv7 (RFC 9562): ms timestamp, then monotonic random bits; strictly
    increasing within the process, across threads."""
    try:
        b = _tls.b16
    except AttributeError:
        b = _buf16()
    rc = _uuid7_next(_uuid7_gen.cptr or _uuid7_gen.cget(), b)
    if rc != 0:
        raise _from_code(rc, "uuid7")
    u = _new(_UUID)
    _set_int(u, _from_bytes(b, "big"))
    _set_safe(u, _SAFE)
    return u


def uuid4() -> _uuid.UUID:
    """A UUIDv4 from idmint's CSPRNG."""
    b = _buf16()
    _check(_lib.idm_uuid4(None, b), "uuid4")
    return _as_uuid(b)


def ulid() -> str:
    """A ULID, monotonic within the process (the spec's monotonic mode)."""
    b = _buf16()
    _check(_lib.idm_ulid_next(_ulid_gen.get(), b), "ulid")
    out = create_string_buffer(27)
    _lib.idm_ulid_format(b, out)
    return out.value.decode()


# The ctypes versions, kept under these names whichever path is in use (the
# tests and the benchmark compare the two).
_uuid7_ctypes, _uuid4_ctypes, _ulid_ctypes = uuid7, uuid4, ulid
_snowflake_next_ctypes = Snowflake.next


def _raise(rc: int, context: str) -> None:
    """What the accelerator calls for a nonzero C code: the exception the
    ctypes path raises."""
    raise _from_code(rc, context)


def _snowflake_next_accelerated(self: Snowflake) -> int:
    g = self._g
    if g is None:
        self._handle()
    return _next_u64(self._next1_addr, g)


def _accelerate() -> Tuple[Any, str]:
    """The bound accelerator module and "accelerator", or None and "ctypes"
    (IDMINT_PURE=1, or the package was installed without it: no compiler
    or no Python headers at build time)."""
    if os.environ.get("IDMINT_PURE") == "1":
        return None, "ctypes"
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None, "ctypes"
    _speedups.bind(uuid7_next=_address(_lib.idm_uuid7_next),
                   uuid4=_address(_lib.idm_uuid4),
                   ulid_next=_address(_lib.idm_ulid_next),
                   ulid_format=_address(_lib.idm_ulid_format),
                   uuid7_gen=_uuid7_gen.get, ulid_gen=_ulid_gen.get,
                   uuid_type=_UUID, int_slot=_UUID.__dict__["int"],
                   safe_slot=_UUID.__dict__["is_safe"], safe_unknown=_SAFE,
                   raiser=_raise)
    return _speedups, "accelerator"


_speedups, _native_path = _accelerate()
if _speedups is not None:
    _next_u64 = _speedups.next_u64
    uuid7 = _speedups.uuid7  # noqa: F811
    uuid4 = _speedups.uuid4  # noqa: F811
    ulid = _speedups.ulid  # noqa: F811
    _snowflake_next_accelerated.__doc__ = Snowflake.next.__doc__
    _snowflake_next_accelerated.__name__ = "next"
    _snowflake_next_accelerated.__qualname__ = "Snowflake.next"
    Snowflake.next = _snowflake_next_accelerated  # type: ignore[assignment]


def objectid() -> str:
    """A MongoDB ObjectId as 24 lower-case hex digits."""
    b = _native.Bytes12()
    _check(_lib.idm_objectid_next(_oid_gen.get(), b), "objectid")
    return bytes(b).hex()


def parse_uuid(text: str) -> _uuid.UUID:
    """Strict canonical text (36 characters, dashes in place) to a UUID;
    anything else raises ParseError naming the position."""
    b = _native.Bytes16()
    _check(_lib.idm_uuid_parse(_text(text, "uuid"), b), "uuid %r" % text)
    return _as_uuid(bytes(b))


def _uuid_bytes(u: Union[_uuid.UUID, str]) -> "_native.Bytes16":
    if isinstance(u, str):
        u = parse_uuid(u)
    if not isinstance(u, _uuid.UUID):
        raise TypeError("expected a uuid.UUID or str, not %s" % type(u).__name__)
    return _native.Bytes16.from_buffer_copy(u.bytes)


def uuid7_time(u: Union[_uuid.UUID, str]) -> _dt.datetime:
    """The timestamp of a UUIDv7 (InvalidArgumentError for other versions)."""
    ms = c_int64()
    _check(_lib.idm_uuid7_time(_uuid_bytes(u), byref(ms)), "uuid7_time")
    return _datetime_of(ms.value)


def _ulid_bytes(text: str) -> "_native.Bytes16":
    b = _native.Bytes16()
    _check(_lib.idm_ulid_parse(_text(text, "ulid"), b), "ulid %r" % text)
    return b


def ulid_time(text: str) -> _dt.datetime:
    """The timestamp of a ULID (either case)."""
    return _datetime_of(_lib.idm_ulid_time(_ulid_bytes(text)))


def ulid_to_uuid(text: str) -> _uuid.UUID:
    """The same 128 bits as a UUID."""
    return _as_uuid(bytes(_ulid_bytes(text)))


def uuid_to_ulid(u: Union[_uuid.UUID, str]) -> str:
    """The same 128 bits as a ULID."""
    out = create_string_buffer(27)
    _lib.idm_ulid_format(_uuid_bytes(u), out)
    return out.value.decode()


def objectid_time(text: str) -> _dt.datetime:
    """The timestamp of an ObjectId (whole seconds)."""
    b = _native.Bytes12()
    _check(_lib.idm_objectid_parse(_text(text, "objectid"), b), "objectid %r" % text)
    return _datetime_of(_lib.idm_objectid_time(b))


# -------------------------------------------------------- segment sequences

def _open_stores(stores: Union[str, Iterable[str]]) -> List[int]:
    urls = [stores] if isinstance(stores, str) else list(stores)
    if not urls:
        raise InvalidArgumentError("stores: give at least one ticket store URL")
    slib = _native.segment_lib()
    opened: List[int] = []
    try:
        for url in urls:
            s = c_void_p()
            _check(slib.idm_store_open(byref(s), _text(url, "store")), "store %s" % url)
            opened.append(s.value)
    except BaseException:
        for s in opened:
            slib.idm_store_close(s)
        raise
    return opened


def _seq_name(name: str) -> bytes:
    raw = _text(name, "sequence name")
    if not _native.segment_lib().idm_seq_name_valid(raw):
        raise InvalidArgumentError("sequence name %r: 1 to 64 of [A-Za-z0-9_.-]" % name)
    return raw


def create_sequence(name: str, stores: Union[str, Iterable[str]], start: int = 1) -> None:
    """Create a named counter in each ticket store (sqlite:///path.db,
    postgres://...), store k of n handing out the ids k mod n. ExistsError
    if it exists."""
    raw = _seq_name(name)
    slib = _native.segment_lib()
    opened = _open_stores(stores)
    try:
        for k, s in enumerate(opened):
            _check(slib.idm_store_create(s, raw, start, k, len(opened)),
                   "create sequence %s in store %d of %d" % (name, k, len(opened)))
    finally:
        for s in opened:
            slib.idm_store_close(s)


class Sequence(_Closing):
    """Dense integer ids from a named counter in one or more ticket stores,
    taken in blocks (a crash leaves a gap, never a repeat); next() is one
    atomic add, a background thread fetches the next block. Thread-safe.
    A forked child must open its own (the parent's raises ForkedError)."""

    def __init__(self, name: str, stores: Union[str, Iterable[str]],
                 floor_file: Optional[str] = None, min_block: Optional[int] = None,
                 max_block: Optional[int] = None, wait_ms: Optional[int] = None) -> None:
        self._q: Optional[int] = None
        self._fork = _fork_gen
        self._lib = slib = _native.segment_lib()
        raw = _seq_name(name)
        self._stores = _open_stores(stores)
        opts = _native.SeqOpts()
        slib.idm_seq_opts_init(byref(opts))
        arr = (c_void_p * len(self._stores))(*self._stores)
        opts.name = raw
        opts.stores = arr
        opts.nstores = len(self._stores)
        keep = None
        if floor_file is not None:
            keep = _text(os.fspath(floor_file), "floor_file")
            opts.floor_file = keep
        if min_block is not None:
            opts.min_block = min_block
        if max_block is not None:
            opts.max_block = max_block
        if wait_ms is not None:
            opts.wait_ms = wait_ms
        q = c_void_p()
        rc = slib.idm_seq_open(byref(q), byref(opts))
        if rc != 0:
            err = _from_code(rc, "sequence %s" % name)
            self._close_stores()
            raise err
        self._q = q.value
        self._out = threading.local()
        del keep

    def next(self) -> int:
        if self._fork != _fork_gen:
            raise ForkedError("sequence: opened in the parent process; open one "
                              "in each process")
        try:
            out = self._out.v
        except AttributeError:
            out = self._out.v = c_int64()
        q = self._q
        if q is None:
            raise InvalidArgumentError("the sequence is closed")
        rc = self._lib.idm_seq_next(q, byref(out))
        if rc != 0:
            raise _from_code(rc, "sequence next")
        return out.value

    def stats(self) -> Dict[str, object]:
        if self._q is None:
            raise InvalidArgumentError("the sequence is closed")
        st = _native.SeqStats()
        self._lib.idm_seq_stats_get(self._q, byref(st))
        return {"ids": st.ids, "fetches": st.fetches, "fetch_errors": st.fetch_errors,
                "waits": st.waits, "block": st.block, "left": st.left,
                "last_error": st.last_error,
                "last_detail": st.last_detail.decode("utf-8", "replace"),
                "bad_stores": st.bad_stores, "down_stores": st.down_stores}

    def _close_stores(self) -> None:
        for s in self._stores:
            self._lib.idm_store_close(s)
        self._stores = []

    def close(self) -> None:
        """Abandon the ids in hand (a gap) and close the stores."""
        q, self._q = self._q, None
        if self._fork != _fork_gen:
            self._stores = []  # the prefetch thread is the parent's
            return
        if q is not None:
            self._lib.idm_seq_close(q)
        self._close_stores()

