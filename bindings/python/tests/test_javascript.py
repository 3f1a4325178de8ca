"""Design documents' JavaScript: the engine's limits, and Duktape compiled into the
library (no symbol of it exported, no libduktape needed)."""

import shutil
import subprocess

import pytest

import cblite


def test_limits_round_trip_and_refuse_a_tiny_cap():
    assert cblite.js_limits() == (5000, 64 << 20)
    try:
        cblite.set_js_limits(250, 8 << 20)
        assert cblite.js_limits() == (250, 8 << 20)
        with pytest.raises(cblite.BadRequest, match="memory_bytes"):
            cblite.set_js_limits(100, 1000)
        assert cblite.js_limits() == (250, 8 << 20)
    finally:
        cblite.set_js_limits()
    assert cblite.js_limits() == (5000, 64 << 20)


@pytest.mark.skipif(shutil.which("nm") is None or shutil.which("readelf") is None, reason="binutils")
def test_duktape_is_compiled_in_and_hidden():
    path = cblite.library_path()
    exported = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    names = [line.split()[-1] for line in exported.splitlines() if line.strip()]
    assert any(n.startswith("cbl_js_") for n in names)
    assert [n for n in names if n.startswith(("duk_", "cblite_js"))] == []
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    assert "duktape" not in dynamic
