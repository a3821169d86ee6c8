# SPDX-License-Identifier: MIT
"""idmint's exceptions: one class per C error code, all under idmint.Error.

Each carries .code, the C name ("IDM_ECLOCKBACK"), and .errno, the negative
C code; the message is the C library's detail line (which field, value or file
was wrong), or where there is none, the call and the code's message. Errors about a value the caller gave
also subclass ValueError, so code that catches ValueError keeps working.
"""
from typing import Dict, Optional, Type

from . import _native


class Error(Exception):
    """Any failure reported by libidmint."""

    code = "IDM_UNKNOWN"
    errno = 0

    def __init__(self, message: str, errno: Optional[int] = None,
                 code: Optional[str] = None) -> None:
        super().__init__(message)
        if errno is not None:
            self.errno = errno
        if code is not None:
            self.code = code


def _define(name: str, code: str, errno: int, *bases: type) -> Type[Error]:
    return type(name, (Error,) + bases, {"code": code, "errno": errno,
                                         "__module__": __name__})


InvalidArgumentError = _define("InvalidArgumentError", "IDM_EINVAL", -1, ValueError)
OutOfMemoryError = _define("OutOfMemoryError", "IDM_ENOMEM", -2, MemoryError)
LayoutError = _define("LayoutError", "IDM_ELAYOUT", -3, ValueError)
ParseError = _define("ParseError", "IDM_EPARSE", -4, ValueError)
RangeError = _define("RangeError", "IDM_ERANGE", -5, ValueError)
ClockBackwardsError = _define("ClockBackwardsError", "IDM_ECLOCKBACK", -6)
ExhaustedError = _define("ExhaustedError", "IDM_EEXHAUSTED", -7)
TimeOverError = _define("TimeOverError", "IDM_ETIMEOVER", -8)
EpochError = _define("EpochError", "IDM_EEPOCH", -9)
InputOutputError = _define("InputOutputError", "IDM_EIO", -10)
CorruptError = _define("CorruptError", "IDM_ECORRUPT", -11)
NotFoundError = _define("NotFoundError", "IDM_ENOENT", -12)
BusyError = _define("BusyError", "IDM_EBUSY", -13)
NodeError = _define("NodeError", "IDM_ENODE", -14, ValueError)
RandomError = _define("RandomError", "IDM_ERANDOM", -15)
RandomOverflowError = _define("RandomOverflowError", "IDM_EOVERFLOW", -16)
LeaseError = _define("LeaseError", "IDM_ELEASE", -17)
ExistsError = _define("ExistsError", "IDM_EEXIST", -18)
NoSequenceError = _define("NoSequenceError", "IDM_ENOSEQ", -19)
UnavailableError = _define("UnavailableError", "IDM_EUNAVAIL", -20)
ForkedError = _define("ForkedError", "IDM_EFORKED", -21)

BY_ERRNO: Dict[int, Type[Error]] = {
    cls.errno: cls for cls in (
        InvalidArgumentError, OutOfMemoryError, LayoutError, ParseError, RangeError,
        ClockBackwardsError, ExhaustedError, TimeOverError, EpochError,
        InputOutputError, CorruptError, NotFoundError, BusyError, NodeError,
        RandomError, RandomOverflowError, LeaseError, ExistsError, NoSequenceError,
        UnavailableError, ForkedError)
}


def from_code(rc: int, context: str = "") -> Error:
    """The exception for C return code rc, with the calling thread's detail.
    Call it right after the failing call, on the same thread: the detail is
    the C library's thread-local line."""
    lib = _native.core
    detail = (lib.idm_error_detail() or b"").decode("utf-8", "replace")
    # The C detail names the part, the field and the value already; without
    # one, say which call failed and the code's message.
    if detail:
        message = detail
    else:
        message = lib.idm_strerror(rc).decode()
        if context:
            message = "%s: %s" % (context, message)
    cls = BY_ERRNO.get(rc)
    if cls is None:
        return Error(message, rc, lib.idm_err_name(rc).decode())
    return cls(message)


def check(rc: int, context: str = "") -> None:
    if rc != 0:
        raise from_code(rc, context)
