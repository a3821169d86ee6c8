# SPDX-License-Identifier: MIT
"""ctypes declarations of libidmint, libidmint_lease and libidmint_segment.

Where the libraries come from, first match wins:
  1. IDMINT_LIBRARY: the path of libidmint.so (or of a directory holding
     it); the lease and segment libraries are taken from the same directory.
  2. A copy inside the package (idmint/_lib/), put there when the package was
     built with IDMINT_BUILD_DIR set to an idmint build directory.
  3. The dynamic loader's usual search (an installed libidmint.so.0:
     `make install` and ldconfig).
libidmint is loaded first, by path, so that the other two find it by its
SONAME even from a directory the loader would not search.

The structures below mirror the public headers field by field; the tests
compare their sizes and offsets with the C compiler's.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_bool, c_char, c_char_p,
                    c_int, c_int64, c_size_t, c_uint, c_uint8, c_uint32,
                    c_uint64, c_void_p)

SONAME_MAJOR = 0
LAYOUT_MAX_FIELDS = 16
LEASE_HANDLE_MAX = 160
LEASE_BOOT_ID_MAX = 40
SEQ_NAME_MAX = 64
SEQ_DETAIL_MAX = 320


def _candidates(stem):
    """Paths to try for lib<stem>.so, in the order the module doc gives."""
    soname = "lib%s.so.%d" % (stem, SONAME_MAJOR)
    env = os.environ.get("IDMINT_LIBRARY")
    if env:
        d = env if os.path.isdir(env) else os.path.dirname(env)
        if stem == "idmint" and not os.path.isdir(env):
            return [env]
        return [os.path.join(d, soname), os.path.join(d, "lib%s.so" % stem)]
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib", soname)
    if os.path.exists(bundled):
        return [bundled]
    return [soname, "lib%s.so" % stem]


def _load(stem, mode):
    tried = []
    for path in _candidates(stem):
        try:
            return ctypes.CDLL(path, mode=mode)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("idmint: cannot load lib%s: tried %s; set IDMINT_LIBRARY to "
                      "the path of libidmint.so" % (stem, "; ".join(tried)))


core = _load("idmint", ctypes.RTLD_GLOBAL)
_lease = None
_segment = None


def lease_lib():
    """libidmint_lease, loaded on first use (it pulls in the coordinators'
    client libraries)."""
    global _lease
    if _lease is None:
        _lease = _declare_lease(_load("idmint_lease", ctypes.RTLD_LOCAL))
    return _lease


def segment_lib():
    """libidmint_segment, loaded on first use."""
    global _segment
    if _segment is None:
        _segment = _declare_segment(_load("idmint_segment", ctypes.RTLD_LOCAL))
    return _segment


# ---------------------------------------------------------------- structures

class Decoded(Structure):
    _fields_ = [("unix_ms", c_int64), ("tick", c_uint64), ("seq", c_uint64),
                ("value", c_uint64 * LAYOUT_MAX_FIELDS)]


class FieldInfo(Structure):
    _fields_ = [("name", c_char_p), ("kind", c_int), ("bits", c_uint),
                ("shift", c_uint), ("max", c_uint64)]


class SnowflakeOpts(Structure):
    _fields_ = [("layout", c_void_p),
                ("node", c_uint64 * LAYOUT_MAX_FIELDS),
                ("node_set", c_uint32),
                ("clock", c_void_p),
                ("backwards", c_int),
                ("exhaust", c_int),
                ("max_drift_ms", c_int64),
                ("max_wait_ms", c_int64),
                ("state_path", c_char_p),
                ("state_fresh", c_bool),
                ("state_lookahead_ms", c_int64),
                ("guarded", c_bool),
                ("after_ms", c_int64),
                ("local_block", c_uint32)]


class SnowflakeStats(Structure):
    _fields_ = [("refused_backwards", c_uint64), ("refused_exhausted", c_uint64),
                ("waits", c_uint64), ("ahead_mints", c_uint64),
                ("max_backwards_ms", c_int64), ("last_backwards_ms", c_int64),
                ("last_unix_ms", c_int64), ("state_mark_ms", c_int64),
                ("state_writes", c_uint64), ("state_error", c_int),
                ("refused_lease", c_uint64), ("lease_limit_ms", c_int64)]


class LeaseOpts(Structure):
    _fields_ = [("url", c_char_p),
                ("max_workers", c_uint32),
                ("ttl_ms", c_int64),
                ("margin_ms", c_int64),
                ("clock", c_void_p),
                ("holder", c_char_p),
                ("scope", c_char_p),
                ("on_claim", c_void_p),
                ("on_claim_ctx", c_void_p),
                ("on_renew", c_void_p),
                ("on_lost", c_void_p),
                ("hook_ctx", c_void_p),
                ("boot_id_file", c_char_p)]


class LeaseStatus(Structure):
    _fields_ = [("worker", c_uint32), ("lost", c_bool), ("renewals", c_uint64),
                ("failures", c_uint64), ("last_error", c_int),
                ("deadline", c_int64), ("mark_ms", c_int64),
                ("renew_ns", c_int64), ("offline", c_bool)]


class LeasedOpts(Structure):
    _fields_ = [("lease", LeaseOpts),
                ("gen", SnowflakeOpts),
                ("field", c_char_p),
                ("state_dir", c_char_p),
                ("reclaim", c_bool),
                ("switch_wait_ms", c_int64),
                ("max_tries", c_uint),
                ("on_event", c_void_p),
                ("event_ctx", c_void_p),
                ("state_name", c_void_p)]


class LeasedStatus(Structure):
    _fields_ = [("worker", c_uint32), ("minting", c_bool), ("origin", c_int),
                ("reclaims", c_uint64), ("losses", c_uint64), ("changes", c_uint64),
                ("switch_failures", c_uint64), ("last_switch_ns", c_int64),
                ("last_error", c_int), ("last_detail", c_char * 256),
                ("lease", LeaseStatus)]


class SeqOpts(Structure):
    _fields_ = [("name", c_char_p),
                ("stores", POINTER(c_void_p)),
                ("nstores", c_size_t),
                ("min_block", c_int64),
                ("max_block", c_int64),
                ("target_ms", c_int64),
                ("prefetch_pct", c_int),
                ("wait_ms", c_int64),
                ("clock", c_void_p),
                ("floor_file", c_char_p)]


class SeqStats(Structure):
    _fields_ = [("ids", c_uint64), ("fetches", c_uint64), ("fetch_errors", c_uint64),
                ("waits", c_uint64), ("wait_ns", c_uint64), ("block", c_int64),
                ("left", c_int64), ("last_error", c_int),
                ("last_detail", c_char * SEQ_DETAIL_MAX),
                ("bad_stores", c_size_t), ("bad_detail", c_char * SEQ_DETAIL_MAX),
                ("down_stores", c_size_t), ("call_ms", c_int64),
                ("call_store", c_size_t)]


class SeqInfo(Structure):
    _fields_ = [("name", c_char * (SEQ_NAME_MAX + 1)), ("next", c_int64),
                ("k", c_uint32), ("n", c_uint32)]


Bytes16 = c_uint8 * 16
Bytes12 = c_uint8 * 12

# ---------------------------------------------------------------- prototypes


def _proto(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def _declare_core(lib):
    P = c_void_p
    _proto(lib, "idm_version", c_char_p)
    _proto(lib, "idm_strerror", c_char_p, c_int)
    _proto(lib, "idm_err_name", c_char_p, c_int)
    _proto(lib, "idm_error_detail", c_char_p)
    _proto(lib, "idm_layout_preset_names", POINTER(c_char_p))
    _proto(lib, "idm_layout_from_spec", c_int, POINTER(P), c_char_p, c_char_p)
    _proto(lib, "idm_layout_free", None, P)
    _proto(lib, "idm_layout_format", c_int, P, c_char_p, c_size_t)
    _proto(lib, "idm_layout_name", c_char_p, P)
    _proto(lib, "idm_layout_epoch", c_int64, P)
    _proto(lib, "idm_layout_tick_ms", c_int64, P)
    _proto(lib, "idm_layout_field_count", c_size_t, P)
    _proto(lib, "idm_layout_field", c_int, P, c_size_t, POINTER(FieldInfo))
    _proto(lib, "idm_layout_field_index", c_int, P, c_char_p)
    _proto(lib, "idm_layout_time_end", c_int64, P)
    _proto(lib, "idm_layout_decode", c_int, P, c_uint64, POINTER(Decoded))
    _proto(lib, "idm_layout_compose", c_int, P, c_int64, POINTER(c_uint64),
           c_uint64, POINTER(c_uint64))
    _proto(lib, "idm_layout_range", c_int, P, c_int64, c_int64,
           POINTER(c_uint64), POINTER(c_uint64))
    _proto(lib, "idm_time_parse", c_int, c_char_p, POINTER(c_int64))
    _proto(lib, "idm_u64_parse", c_int, c_char_p, POINTER(c_uint64))
    _proto(lib, "idm_snowflake_opts_init", None, POINTER(SnowflakeOpts))
    _proto(lib, "idm_snowflake_opts_node", c_int, POINTER(SnowflakeOpts), c_char_p,
           c_uint64)
    _proto(lib, "idm_snowflake_open", c_int, POINTER(P), POINTER(SnowflakeOpts))
    _proto(lib, "idm_snowflake_close", c_int, P)
    _proto(lib, "idm_snowflake_next", c_int, P, POINTER(c_uint64))
    _proto(lib, "idm_snowflake_next_batch", c_int, P, POINTER(c_uint64), c_size_t)
    _proto(lib, "idm_snowflake_check", c_int, P)
    _proto(lib, "idm_snowflake_layout", P, P)
    _proto(lib, "idm_snowflake_stats_get", None, P, POINTER(SnowflakeStats))
    _proto(lib, "idm_uuid4", c_int, P, Bytes16)
    _proto(lib, "idm_uuid7_gen_new", c_int, POINTER(P), P, P)
    _proto(lib, "idm_uuid7_gen_free", None, P)
    _proto(lib, "idm_uuid7_next", c_int, P, Bytes16)
    _proto(lib, "idm_uuid_parse", c_int, c_char_p, Bytes16)
    _proto(lib, "idm_uuid7_time", c_int, Bytes16, POINTER(c_int64))
    _proto(lib, "idm_ulid_gen_new", c_int, POINTER(P), P, P, c_bool)
    _proto(lib, "idm_ulid_gen_free", None, P)
    _proto(lib, "idm_ulid_next", c_int, P, Bytes16)
    _proto(lib, "idm_ulid_format", None, Bytes16, c_char_p)
    _proto(lib, "idm_ulid_parse", c_int, c_char_p, Bytes16)
    _proto(lib, "idm_ulid_time", c_int64, Bytes16)
    _proto(lib, "idm_objectid_gen_new", c_int, POINTER(P), P, P)
    _proto(lib, "idm_objectid_gen_free", None, P)
    _proto(lib, "idm_objectid_next", c_int, P, Bytes12)
    _proto(lib, "idm_objectid_format", None, Bytes12, c_char_p)
    _proto(lib, "idm_objectid_parse", c_int, c_char_p, Bytes12)
    _proto(lib, "idm_objectid_time", c_int64, Bytes12)
    return lib


def _declare_lease(lib):
    P = c_void_p
    _proto(lib, "idm_leased_opts_init", None, POINTER(LeasedOpts))
    _proto(lib, "idm_leased_open", c_int, POINTER(P), POINTER(LeasedOpts))
    _proto(lib, "idm_leased_next", c_int, P, POINTER(c_uint64))
    _proto(lib, "idm_leased_next_batch", c_int, P, POINTER(c_uint64), c_size_t)
    _proto(lib, "idm_leased_check", c_int, P)
    _proto(lib, "idm_leased_layout", P, P)
    _proto(lib, "idm_leased_status_get", None, P, POINTER(LeasedStatus))
    _proto(lib, "idm_leased_close", c_int, P)
    _proto(lib, "idm_lease_url_check", c_int, c_char_p)
    return lib


def _declare_segment(lib):
    P = c_void_p
    _proto(lib, "idm_store_open", c_int, POINTER(P), c_char_p)
    _proto(lib, "idm_store_close", None, P)
    _proto(lib, "idm_store_create", c_int, P, c_char_p, c_int64, c_uint32, c_uint32)
    _proto(lib, "idm_store_set_timeout", c_int, P, c_int64)
    _proto(lib, "idm_seq_name_valid", c_int, c_char_p)
    _proto(lib, "idm_seq_opts_init", None, POINTER(SeqOpts))
    _proto(lib, "idm_seq_open", c_int, POINTER(P), POINTER(SeqOpts))
    _proto(lib, "idm_seq_next", c_int, P, POINTER(c_int64))
    _proto(lib, "idm_seq_stats_get", None, P, POINTER(SeqStats))
    _proto(lib, "idm_seq_close", None, P)
    return lib


_declare_core(core)

# The struct types by C name, for the tests' ABI check.
STRUCTS = {
    "idm_decoded": Decoded,
    "idm_field_info": FieldInfo,
    "idm_snowflake_opts": SnowflakeOpts,
    "idm_snowflake_stats": SnowflakeStats,
    "idm_lease_opts": LeaseOpts,
    "idm_lease_status": LeaseStatus,
    "idm_leased_opts": LeasedOpts,
    "idm_leased_status": LeasedStatus,
    "idm_seq_opts": SeqOpts,
    "idm_seq_stats": SeqStats,
    "idm_seq_info": SeqInfo,
}
