"""Internal helpers: status checking and out-parameter plumbing."""

from __future__ import annotations

import json
import threading
from ctypes import byref, c_int64, c_uint32, c_uint64, c_void_p

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

    def __enter__(self):
        callback_state.depth = getattr(callback_state, "depth", 0) + 1

    def __exit__(self, *exc):
        callback_state.depth -= 1
        return False


CALLBACK_SCOPE = CallbackScope()


def message_of(err: cbl_error) -> str:
    return err.message.decode("utf-8", errors="replace")


def check(status: int, err: cbl_error) -> None:
    """Raises the exception matching `status` unless it is CBL_OK."""
    if status != 0:
        raise error_for_status(status, message_of(err), err.detail)


def call(fn, *args) -> None:
    """Calls a status-returning function whose last parameter is ``cbl_error*``."""
    err = cbl_error()
    check(fn(*args, byref(err)), err)


def call_str(fn, *args) -> str | None:
    """Calls a function of the form ``f(..., char** out, cbl_error* err)``; returns *out."""
    out = c_void_p()
    err = cbl_error()
    status = fn(*args, byref(out), byref(err))
    text = take_string(out)  # frees it (it should be NULL on failure anyway)
    check(status, err)
    return text


def call_json(fn, *args):
    """Like :func:`call_str`, parsing the result as JSON."""
    text = call_str(fn, *args)
    return None if text is None else json.loads(text)


def call_u64(fn, *args) -> int:
    out = c_uint64()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    return out.value


def call_u32(fn, *args) -> int:
    out = c_uint32()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    return out.value


def call_i64(fn, *args) -> int:
    out = c_int64()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    return out.value


def call_handle(fn, *args) -> int:
    """Calls ``f(..., T** out, cbl_error* err)`` and returns the handle (an int)."""
    out = c_void_p()
    err = cbl_error()
    check(fn(*args, byref(out), byref(err)), err)
    if not out.value:
        raise error_for_status(500, f"{fn.__name__} returned CBL_OK and a NULL handle")
    return out.value


def dumps(body) -> bytes:
    """Serialises a document body for the library (dict -> compact UTF-8 JSON).

    A str is taken as JSON text, bytes are passed through unchanged.
    """
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8", errors="surrogateescape")
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8", errors="surrogateescape")


def cstr(value, what: str = "argument") -> bytes | None:
    """Encodes a str argument for a ``const char*`` parameter (None stays NULL), raising
    ValueError when it holds a NUL character: C would silently cut the string there, so
    the library would act on another value than the one given."""
    data = enc(value)
    if data is not None and b"\0" in data:
        raise ValueError(f"{what} must not contain NUL characters")
    return data


def json_arg(value, what: str = "argument") -> bytes:
    """A JSON argument: a str is taken as JSON text (NUL-checked as :func:`cstr`), anything
    else is serialised (strings holding NUL are escaped by JSON, so they arrive intact)."""
    if isinstance(value, (str, bytes)):
        return cstr(value, what)
    return dumps(value)


def loads(text):
    return None if text is None else json.loads(text)


class ReleasableHandle:
    """Mixin for wrappers of a library handle with a `release()` method: `close()` is
    `release()`, `with` releases at the end, and garbage collection releases too (errors
    there are swallowed: the interpreter may be shutting down)."""

    def close(self) -> None:
        self.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        self.release()
        return False

    def __del__(self):
        try:
            self.release()
        except BaseException:
            pass
