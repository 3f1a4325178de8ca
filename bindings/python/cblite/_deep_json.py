"""JSON for documents nested deeper than Python's json module goes.

The library stores documents nested up to its limit (`_lib.CBL_MAX_JSON_DEPTH` levels,
far beyond what real data needs); Python's json module recurses once per level and raises
RecursionError near the interpreter's recursion limit (about 1,000 levels, fewer when the
caller is itself deep in calls). These functions use the
json module, and only when it gives up, an iterative reader and writer of their own: any
document the library holds reads and writes on any thread, whatever the recursion limit.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import NUMBER_RE
from typing import Any, List, Tuple, Union

_SPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = (("true", True), ("false", False), ("null", None))


def loads(text: Union[str, bytes]) -> Any:
    """json.loads, and for text nested too deep for it, the iterative reader."""
    try:
        return json.loads(text)
    except RecursionError:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", errors="surrogateescape")
        return _read(text)


def dumps(value: Any) -> str:
    """Compact JSON (json.dumps with ensure_ascii=False, no NaN), and for a value nested
    too deep for it, the iterative writer."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except RecursionError:
        return _write(value)


def _error(text: str, pos: int, what: str) -> json.JSONDecodeError:
    return json.JSONDecodeError(what, text, pos)


def _skip(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]


def _key(text: str, pos: int) -> Tuple[str, int]:
    """An object's key and the position of its value."""
    if not text.startswith('"', pos):
        raise _error(text, pos, "Expecting property name enclosed in double quotes")
    key, pos = scanstring(text, pos + 1)
    pos = _skip(text, pos)
    if not text.startswith(":", pos):
        raise _error(text, pos, "Expecting ':' delimiter")
    return key, _skip(text, pos + 1)


def _read(text: str) -> Any:
    """One JSON value, its containers kept on a list instead of the call stack."""
    open_: List[Tuple[Any, Any]] = []      # (container being filled, key of its next member or None)
    pos = _skip(text, 0)
    while True:
        c = text[pos:pos + 1]
        # The value that starts here: a container is opened (continue), a scalar read.
        if c == "{":
            pos = _skip(text, pos + 1)
            if not text.startswith("}", pos):
                key, pos = _key(text, pos)
                open_.append(({}, key))
                continue
            value: Any = {}
            pos += 1
        elif c == "[":
            pos = _skip(text, pos + 1)
            if not text.startswith("]", pos):
                open_.append(([], None))
                continue
            value = []
            pos += 1
        elif c == '"':
            value, pos = scanstring(text, pos + 1)
        else:
            m = NUMBER_RE.match(text, pos)
            if m:
                integer, frac, exp = m.groups()
                value = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
                pos = m.end()
            else:
                for word, literal in _LITERALS:
                    if text.startswith(word, pos):
                        value, pos = literal, pos + len(word)
                        break
                else:
                    raise _error(text, pos, "Expecting value")
        # Put the value in its container, closing every container that ends after it.
        while True:
            if not open_:
                pos = _skip(text, pos)
                if pos != len(text):
                    raise _error(text, pos, "Extra data")
                return value
            container, key = open_[-1]
            if key is None:
                container.append(value)
            else:
                container[key] = value
            pos = _skip(text, pos)
            c = text[pos:pos + 1]
            if c == ",":
                pos = _skip(text, pos + 1)
                if key is not None:
                    key, pos = _key(text, pos)
                    open_[-1] = (container, key)
                break
            if c != ("]" if key is None else "}"):
                raise _error(text, pos, "Expecting ',' delimiter")
            pos += 1
            open_.pop()
            value = container


class _Raw(str):
    """Text the writer emits as it is (brackets, separators, keys)."""


def _write(value: Any) -> str:
    """Compact JSON, the values still to write kept on a list instead of the call stack."""
    out: List[str] = []
    todo: List[Any] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Raw):
            out.append(item)
        elif isinstance(item, dict):
            todo.append(_Raw("}"))
            members = list(item.items())
            for i in range(len(members) - 1, -1, -1):
                key, member = members[i]
                if not isinstance(key, str):
                    raise TypeError(f"keys must be str, not {type(key).__name__}")
                todo.append(member)
                todo.append(_Raw(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":"))
            todo.append(_Raw("{"))
        elif isinstance(item, (list, tuple)):
            todo.append(_Raw("]"))
            for i in range(len(item) - 1, -1, -1):
                todo.append(item[i])
                if i:
                    todo.append(_Raw(","))
            todo.append(_Raw("["))
        else:
            out.append(json.dumps(item, ensure_ascii=False, allow_nan=False))
    return "".join(out)
