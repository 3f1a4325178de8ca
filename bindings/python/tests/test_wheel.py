"""The platform wheel (build_wheel.py, `make wheel`): built from the library under test,
installed with pip into a fresh virtual environment with no $CBLITE_LIBRARY, and used
from there — the library is the wheel's own copy."""

import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from cblite import _lib

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PKG_ROOT))

sys.path.insert(0, PKG_ROOT)
import build_wheel  # noqa: E402

SMOKE = textwrap.dedent("""
    import os, sys, tempfile
    assert "CBLITE_LIBRARY" not in os.environ
    import cblite
    from cblite.models import Model
    here = os.path.dirname(cblite.__file__)
    assert "site-packages" in here and here.startswith(sys.prefix), here
    assert cblite.library_path == os.path.join(here, "libcblite.so.1"), cblite.library_path
    assert os.path.exists(os.path.join(here, "py.typed"))
    assert cblite.missing_functions == [], cblite.missing_functions

    class Note(Model):
        doc_type = "note"
        text: str = ""

    with cblite.Database("smoke", tempfile.mkdtemp()) as db:
        doc = {"n": 1}
        db.put(doc, "a")
        assert db.get("a")["n"] == 1 and doc["_rev"].startswith("1-")
        v = db.view("v")
        v.set_map_reduce(lambda d, emit: emit("n", d["n"]), reduce="_sum")
        assert [r.value for r in v.rows()] == [1]
        v.release()
        db.set_attachment("a", "x.bin", b"\\x00\\x01")
        assert db.get_attachment("a", "x.bin") == b"\\x00\\x01"
        Note.create(db, "note", text="hi").save()
        assert Model.get(db, "note").text == "hi"
    print("wheel ok", cblite.version())
""")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    return build_wheel.build(os.path.realpath(_lib.library_path), str(out))


def test_wheel_is_a_platform_wheel_carrying_the_library(wheel):
    name = os.path.basename(wheel)
    assert name.endswith(f"-py3-none-{build_wheel.platform_tag()}.whl"), name
    assert "none-any" not in name
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert {"cblite/__init__.py", "cblite/py.typed", "cblite/libcblite.so.1",
                "cblite/models.py"} <= names
        info = z.getinfo("cblite/libcblite.so.1")
        assert info.external_attr >> 16 & 0o111            # executable once installed
        dist = [n for n in names if n.endswith(".dist-info/WHEEL")][0]
        wheel_meta = z.read(dist).decode()
        assert "Root-Is-Purelib: false" in wheel_meta and "Tag: py3-none-" in wheel_meta
        record = z.read(dist.replace("WHEEL", "RECORD")).decode()
        assert all(n in record for n in names)
        with open(os.path.realpath(_lib.library_path), "rb") as f:
            assert z.read("cblite/libcblite.so.1") == f.read()


@pytest.mark.no_instance_check
def test_wheel_installs_and_runs_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CBLITE_LIBRARY", "PYTHONPATH", "PYTHONHOME")}
    install = ["install", "--no-index", "--no-deps", "-q", wheel]
    # A venv without its own pip, installed into by this interpreter's pip (--python,
    # pip >= 22.3): fast, and works where ensurepip is not packaged (Debian without
    # python3-venv). Else a venv with pip.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", python, *install],
                         env=env, capture_output=True, text=True, timeout=300)
    if pip.returncode != 0 and "--python" in pip.stderr:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       timeout=300)
        pip = subprocess.run([python, "-m", "pip", *install], env=env, capture_output=True,
                             text=True, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    # from an unrelated directory, so the source tree cannot be imported instead
    run = subprocess.run([python, "-c", SMOKE], env=env, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "wheel ok" in run.stdout
    example = os.path.join(REPO, "examples", "python", "documents.py")
    run = subprocess.run([python, example, str(tmp_path / "ex")], env=env,
                         cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
