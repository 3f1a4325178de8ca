#!/usr/bin/env python3
"""Builds the platform wheel of the cblite package with libcblite.so inside.

    python3 bindings/python/build_wheel.py --lib build/lib/libcblite.so.0.1.0 --out build/wheel

The wheel is written directly (PEP 427: a zip with the package, the library as
``cblite/libcblite.so.1`` and the ``.dist-info`` files), so building it needs nothing
beyond the standard library — no setuptools, wheel or network. It is tagged
``py3-none-<platform>`` (e.g. ``linux_x86_64``): pure Python, but only for the platform
the library was built for. Prints the wheel's path.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import sysconfig
import zipfile
from typing import List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))


def _project() -> Tuple[str, str, str, str]:
    """(name, version, summary, requires-python) from pyproject.toml (one source)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()

    def field(key: str) -> str:
        m = re.search(rf'^{key}\s*=\s*"([^"]*)"', text, re.M)
        if not m:
            raise SystemExit(f"build_wheel: no {key} in pyproject.toml")
        return m.group(1)
    return field("name"), field("version"), field("description"), field("requires-python")


def platform_tag() -> str:
    """The wheel platform tag of this machine, e.g. ``linux_x86_64``."""
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build(lib: str, out_dir: str) -> str:
    name, version, summary, requires_python = _project()
    tag = f"py3-none-{platform_tag()}"
    dist_info = f"{name}-{version}.dist-info"
    files: List[Tuple[str, bytes]] = []
    package = os.path.join(HERE, "cblite")
    for entry in sorted(os.listdir(package)):
        if entry.endswith(".py") or entry == "py.typed":
            with open(os.path.join(package, entry), "rb") as f:
                files.append((f"cblite/{entry}", f.read()))
    with open(os.path.realpath(lib), "rb") as f:
        files.append(("cblite/libcblite.so.1", f.read()))
    with open(os.path.join(HERE, "README.md"), "rb") as f:
        readme = f.read().decode("utf-8")
    metadata = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                f"Summary: {summary}\nLicense: Apache-2.0\n"
                f"Requires-Python: {requires_python}\n"
                "Classifier: Programming Language :: Python :: 3\n"
                "Classifier: Operating System :: POSIX :: Linux\n"
                "Classifier: Typing :: Typed\n"
                "Description-Content-Type: text/markdown\n\n" + readme)
    wheel = (f"Wheel-Version: 1.0\nGenerator: cblite build_wheel.py\n"
             f"Root-Is-Purelib: false\nTag: {tag}\n")
    files += [(f"{dist_info}/METADATA", metadata.encode("utf-8")),
              (f"{dist_info}/WHEEL", wheel.encode()),
              (f"{dist_info}/top_level.txt", b"cblite\n")]
    record = "\n".join(_record_line(a, d) for a, d in files) + f"\n{dist_info}/RECORD,,\n"
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}-{version}-{tag}.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            # the library must stay executable once installed
            mode = 0o755 if arcname.endswith(".so.1") else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
        z.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)),
                   record)
    os.replace(tmp, path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, help="the libcblite.so to ship")
    parser.add_argument("--out", required=True, help="directory for the wheel")
    args = parser.parse_args()
    print(build(args.lib, args.out))


if __name__ == "__main__":
    main()
