"""Internal helpers: status checking and out-parameter plumbing."""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, TypeVar
from ctypes import byref, c_int64, c_uint32, c_uint64, c_void_p

from . import _deep_json
from ._lib import cbl_error, enc, take_string
from .errors import error_for_status

# Per-thread count of Python callbacks currently running (listeners, validators, ...).
callback_state = threading.local()


def in_callback() -> bool:
    """True while this thread runs a Python callback invoked by the library."""
    return getattr(callback_state, "depth", 0) > 0


class CallbackScope:
    """Marks the current thread as running a library callback."""

    __slots__ = ()

    def __enter__(self) -> None:
        callback_state.depth = getattr(callback_state, "depth", 0) + 1

    def __exit__(self, *exc: Any) -> None:
        callback_state.depth -= 1


CALLBACK_SCOPE = CallbackScope()


def message_of(err: cbl_error) -> str:
    """The error's message as text."""
    message: bytes = err.message
    return message.decode("utf-8", errors="replace")


def check(status: int, err: cbl_error) -> None:
    """Raises the exception matching `status` unless it is CBL_OK."""
    if status != 0:
        raise error_for_status(status, message_of(err), err.detail)


def call(fn: Any, *args: Any) -> None:
    """Calls a status-returning function whose last parameter is ``cbl_error*``."""
    err = cbl_error()
    check(fn(*args, byref(err)), err)


def call_str(fn: Any, *args: Any) -> str:
    """Calls a function of the form ``f(..., char** out, cbl_error* err)``; returns *out
    (a NULL out on success is the library's bug: InternalError)."""
    out = c_void_p()
    err = cbl_error()
    status = fn(*args, byref(out), byref(err))
    text = take_string(out)  # frees it (it should be NULL on failure anyway)
    check(status, err)
    if text is None:
        raise error_for_status(500, f"{getattr(fn, '__name__', fn)} returned no string")
    return text


def call_json(fn: Any, *args: Any) -> Any:
    """Like :func:`call_str`, parsing the result as JSON."""
    return _deep_json.loads(call_str(fn, *args))


def call_dict(fn: Any, *args: Any) -> Dict[str, Any]:
    """:func:`call_json` for a result that is a JSON object."""
    value = call_json(fn, *args)
    if not isinstance(value, dict):
        raise error_for_status(500, f"{getattr(fn, '__name__', fn)}: expected a JSON object")
    return value


def call_list(fn: Any, *args: Any) -> List[Any]:
    """:func:`call_json` for a result that is a JSON array."""
    value = call_json(fn, *args)
    if not isinstance(value, list):
        raise error_for_status(500, f"{getattr(fn, '__name__', fn)}: expected a JSON array")
    return value


def call_u64(fn: Any, *args: Any) -> int:
    out = c_uint64()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    return out.value


def call_u32(fn: Any, *args: Any) -> int:
    out = c_uint32()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    return out.value


def call_i64(fn: Any, *args: Any) -> int:
    out = c_int64()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    return out.value


def call_handle(fn: Any, *args: Any) -> int:
    """Calls ``f(..., T** out, cbl_error* err)`` and returns the handle (an int)."""
    out = c_void_p()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    if not out.value:
        raise error_for_status(500, f"{fn.__name__} returned CBL_OK and a NULL handle")
    return out.value


def check_keys(value: Any) -> None:
    """TypeError for a dict key that is not a str (json.dumps would make a string of it,
    and the key would come back changed). Integers of any size need no check: the
    library keeps every digit of one beyond 64 bits, as CouchDB does. Iterative: deep
    documents do not hit the recursion limit."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for key in v:
                if not isinstance(key, str):
                    raise TypeError(f"JSON object keys must be str, not "
                                    f"{type(key).__name__} ({key!r})")
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)


def dumps(body: Any, what: str = "JSON text") -> bytes:
    """Serialises a value for the library as compact UTF-8 JSON (every JSON argument goes
    through here). A str is taken as JSON text and bytes are passed through (both
    NUL-checked, see :func:`cstr`); anything else is serialised, after
    :func:`check_keys` (a NUL inside a JSON string is escaped, so it arrives intact)."""
    if isinstance(body, (str, bytes)):
        return cstr(body, what)
    return to_json(body)


def to_json(value: Any) -> bytes:
    """Any JSON-able value (a str too) as compact UTF-8 JSON, after
    :func:`check_keys`."""
    check_keys(value)
    return _deep_json.dumps(value).encode("utf-8", errors="surrogateescape")


def cstr(value: "str | bytes | os.PathLike[str] | None", what: str = "argument") -> bytes:
    """Encodes a str argument for a ``const char*`` parameter (see :func:`enc`); None
    stays NULL. ValueError for a NUL in it."""
    return enc(value, what)  # type: ignore[return-value]


def json_arg(value: Any, what: str = "argument") -> bytes:
    """A JSON argument (same as :func:`dumps`)."""
    return dumps(value, what)


def loads(text: Optional[str]) -> Any:
    return None if text is None else _deep_json.loads(text)


_R = TypeVar("_R", bound="ReleasableHandle")


class ReleasableHandle:
    """Mixin for wrappers of a library handle with a `release()` method: `close()` is
    `release()`, `with` releases at the end, and garbage collection releases too (errors
    there are swallowed: the interpreter may be shutting down)."""

    def release(self) -> None:
        """Releases the handle (idempotent)."""
        raise NotImplementedError

    def close(self) -> None:
        """Same as :meth:`release`."""
        self.release()

    def __enter__(self: _R) -> _R:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            self.release()
        except BaseException:
            pass


def query_options(options: Dict[str, Any]) -> Optional[bytes]:
    """Query options (CouchDB's names) as the library's JSON object; None when none."""
    return dumps(options, "query options") if options else None
