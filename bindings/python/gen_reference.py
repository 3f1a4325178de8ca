#!/usr/bin/env python3
"""Writes REFERENCE.md, the API reference generated from the package's docstrings.

    CBLITE_LIBRARY=.../libcblite.so.1 python3 bindings/python/gen_reference.py [--check]

--check compares instead of writing (exit status 1 when REFERENCE.md is out of date);
the tests run it so the reference always matches the code.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cblite  # noqa: E402
import cblite.aio  # noqa: E402
import cblite.models  # noqa: E402
import cblite.views  # noqa: E402

OUTPUT = os.path.join(HERE, "REFERENCE.md")
MODULES = [cblite, cblite.views, cblite.models, cblite.aio]


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _doc(obj: Any) -> str:
    # the object's own docstring: an inherited one would differ between Python versions
    doc = obj.fget.__doc__ if isinstance(obj, property) and obj.fget else obj.__doc__
    return inspect.cleandoc(doc or "")


def _member_lines(cls: type) -> List[str]:
    lines: List[str] = []
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, property):
            lines += [f"#### `{cls.__name__}.{name}` (property)", "", _doc(member), ""]
        elif isinstance(member, (staticmethod, classmethod)) or inspect.isfunction(member):
            fn = getattr(member, "__func__", member)
            if name == "__init__" and not _doc(fn):
                continue
            label = cls.__name__ if name == "__init__" else f"{cls.__name__}.{name}"
            lines += [f"#### `{label}{_signature(fn)}`", "", _doc(fn), ""]
    return lines


def render() -> str:
    lines = ["# cblite Python API reference", "",
             "Generated from the docstrings by `gen_reference.py`; do not edit.", ""]
    seen = set()
    for module in MODULES:
        lines += [f"## `{module.__name__}`", "", _doc(module), ""]
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or inspect.ismodule(obj):
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                lines += [f"### class `{name}`", "", _doc(obj), ""]
                if obj.__module__ != "cblite.errors" and not issubclass(obj, tuple):
                    lines += _member_lines(obj)
            else:
                lines += [f"### `{name}{_signature(obj)}`", "", _doc(obj), ""]
    text = "\n".join(lines)
    # addresses and the machine's paths must not make the file differ between runs
    return text.replace(HERE, "<package>").rstrip() + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv[1:]:
        with open(OUTPUT, encoding="utf-8") as f:
            if f.read() != text:
                print("REFERENCE.md is out of date: run gen_reference.py", file=sys.stderr)
                return 1
        return 0
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(OUTPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
