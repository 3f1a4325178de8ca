"""The limits of design documents' JavaScript (``cbl_js_set_limits``)."""

from __future__ import annotations

from ctypes import byref, c_uint32, c_uint64
from typing import Tuple

from ._lib import C
from ._util import call

__all__ = ["set_js_limits", "js_limits"]


def set_js_limits(timeout_ms: int = 5000, memory_bytes: int = 64 << 20) -> None:
    """Sets the time limit of each JavaScript call (0: none) and the memory cap of each
    context (at least 1 MiB); contexts made afterwards take them. Raises BadRequest."""
    call(C.cbl_js_set_limits, timeout_ms, memory_bytes)


def js_limits() -> Tuple[int, int]:
    """The current (timeout_ms, memory_bytes)."""
    timeout, memory = c_uint32(), c_uint64()
    call(C.cbl_js_get_limits, byref(timeout), byref(memory))
    return timeout.value, memory.value
