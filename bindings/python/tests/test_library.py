"""Library-level functions, the ctypes declarations, logging."""

import ctypes
import os
import re
import threading

import pytest

import cblite
from cblite import _lib
from helpers import PKG_ROOT

HEADER = os.path.join(os.path.dirname(os.path.dirname(PKG_ROOT)), "include", "cblite.h")


def header_functions():
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    text = text.replace('extern "C" {', "").replace("}", ";")
    names = {}
    for decl in text.split(";"):
        decl = " ".join(decl.split())
        if decl.startswith("typedef"):
            continue
        m = re.search(r"\b(cbl_[a-z0-9_]+)\s*\((.*)\)", decl)
        if m:
            params = m.group(2).strip()
            names[m.group(1)] = 0 if params in ("", "void") else params.count(",") + 1
    return names


def test_every_header_function_is_declared():
    declared = set(_lib.FUNCTIONS)
    arity = header_functions()
    in_header = set(arity)
    assert len(in_header) > 60
    assert in_header - declared == set(), "functions of cblite.h without ctypes declaration"
    assert declared - in_header == set(), "declared functions that are not in cblite.h"
    for name, n in arity.items():
        assert len(_lib.FUNCTIONS[name][1]) == n, name


def test_every_header_function_is_exported():
    assert cblite.missing_functions == []
    for name in _lib.FUNCTIONS:
        fn = getattr(_lib.lib, name)
        assert fn.argtypes is not None, name


def test_loaded_with_cdll():
    assert type(_lib.lib) is ctypes.CDLL
    assert not isinstance(_lib.lib, ctypes.PyDLL)


def test_version():
    v = cblite.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", v), v


def test_version_is_written_once_in_the_header():
    """The header's CBLITE_VERSION is the one source: the library, its number, the Python
    package's metadata and __version__ all agree with it."""
    here = os.path.dirname(os.path.abspath(__file__))
    header = open(os.path.join(here, "..", "..", "..", "include", "cblite.h"), encoding="utf-8").read()
    text = re.search(r'#define CBLITE_VERSION\s+"([^"]+)"', header).group(1)
    number = int(re.search(r"#define CBLITE_VERSION_NUMBER\s+(\d+)", header).group(1))
    major, minor, patch = (int(x) for x in text.split("."))
    assert number == major * 10000 + minor * 100 + patch
    assert cblite.version() == text
    assert cblite.version_number() == number
    assert cblite.__version__ == text
    pyproject = open(os.path.join(here, "..", "pyproject.toml"), encoding="utf-8").read()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == text


def test_storage_versions():
    sv = cblite.storage_versions()
    assert re.match(r"3\.\d+\.\d+", sv["sqlite"])
    assert "sqlcipher" in sv


def test_storage_versions_null_out_is_400():
    err = _lib.cbl_error()
    assert _lib.lib.cbl_storage_versions(None, ctypes.byref(err)) == 400
    assert err.code == 400 and err.message


def test_error_struct_cleared_on_success():
    err = _lib.cbl_error()
    err.code = 999
    err.message = b"stale"
    out = ctypes.c_void_p()
    assert _lib.lib.cbl_storage_versions(ctypes.byref(out), ctypes.byref(err)) == 0
    _lib.take_string(out)
    assert err.code == 0 and err.message == b""


def test_err_may_be_null():
    out = ctypes.c_void_p()
    assert _lib.lib.cbl_storage_versions(ctypes.byref(out), None) == 0
    assert _lib.take_string(out)


def test_free_and_strdup():
    _lib.lib.cbl_free(None)
    p = _lib.lib.cbl_strdup("héllo".encode())
    assert ctypes.string_at(p).decode() == "héllo"
    _lib.lib.cbl_free(p)
    assert _lib.lib.cbl_strdup(None) is None


def test_status_names():
    assert cblite.status_name(404).lower() == "not found"
    for code in (0, 400, 401, 403, 406, 409, 412, 500, 501, 503, 507):
        assert cblite.status_name(code)
    assert cblite.status_name(507) == "insufficient storage"


def test_instance_count_is_an_int():
    assert isinstance(cblite.instance_count(), int)
    # Its absolute value, in a fresh interpreter (this one holds the fixtures' handles):
    # 0 before anything is opened, one per live handle, 0 again once all are released.
    from helpers import run_isolated
    code = """
import sys, tempfile, cblite
counts = [cblite.instance_count()]
with tempfile.TemporaryDirectory() as d:
    db = cblite.Database("counted", d)
    counts.append(cblite.instance_count())
    db.default_collection
    counts.append(cblite.instance_count())
    db.close()
    counts.append(cblite.instance_count())
print(counts)
"""
    r = run_isolated(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 1, 2, 0]"


def test_instance_count_returns_to_start(dbdir):
    start = cblite.instance_count()
    db = cblite.Database("counted", dbdir)
    assert cblite.instance_count() == start + 1
    coll = db.create_collection("things")
    default = db.default_collection
    assert cblite.instance_count() == start + 3
    token = coll.add_change_listener(lambda changes: None)
    token2 = db.add_change_listener(lambda changes: None)
    assert cblite.instance_count() == start + 5
    token.remove()
    assert cblite.instance_count() == start + 4
    del default
    db.close()   # releases collections and removes remaining listeners
    assert not token2.active
    assert cblite.instance_count() == start


def test_exception_classes():
    for code, cls in [(400, cblite.BadRequest), (401, cblite.Unauthorized),
                      (403, cblite.Forbidden), (404, cblite.NotFound),
                      (406, cblite.NotAcceptable), (409, cblite.Conflict),
                      (412, cblite.PreconditionFailed), (500, cblite.InternalError),
                      (501, cblite.NotImplemented), (503, cblite.Busy),
                      (507, cblite.InsufficientStorage)]:
        exc = cblite.error_for_status(code, "msg")
        assert type(exc) is cls and isinstance(exc, cblite.CBLiteError)
        assert exc.code == code and exc.message == "msg"
    assert isinstance(cblite.NotFound("x"), KeyError)


# ---- logging ---------------------------------------------------------------------------

@pytest.fixture
def restore_log_levels():
    saved = {d: cblite.get_log_level(d) for d in cblite.LogDomain}
    yield
    cblite.set_log_callback(None)
    for d, level in saved.items():
        cblite.set_log_level(d, level)


def test_log_levels(restore_log_levels):
    for d in cblite.LogDomain:
        assert cblite.get_log_level(d) in list(cblite.LogLevel)
    cblite.set_log_level(cblite.LogDomain.STORAGE, cblite.LogLevel.VERBOSE)
    assert cblite.get_log_level(cblite.LogDomain.STORAGE) == cblite.LogLevel.VERBOSE
    cblite.set_log_level("storage", "error")
    assert cblite.get_log_level("storage") == cblite.LogLevel.ERROR
    with pytest.raises(cblite.BadRequest):
        cblite.set_log_level(99, cblite.LogLevel.INFO)
    with pytest.raises(cblite.BadRequest):
        cblite.set_log_level(cblite.LogDomain.DATABASE, 42)
    assert _lib.lib.cbl_log_get_level(99) == cblite.LogLevel.NONE


def test_default_log_level_is_warning():
    code = """
import cblite
print(int(cblite.get_log_level(cblite.LogDomain.DATABASE)))
"""
    from helpers import run_isolated
    r = run_isolated(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(int(cblite.LogLevel.WARNING))


def test_log_callback_receives_messages(restore_log_levels, dbdir):
    messages = []
    lock = threading.Lock()

    def on_log(domain, level, message):
        with lock:
            messages.append((domain, level, message))

    for d in cblite.LogDomain:
        cblite.set_log_level(d, cblite.LogLevel.DEBUG)
    cblite.set_log_callback(on_log)
    assert cblite.get_log_callback() is on_log
    with cblite.Database("logged", dbdir) as db:
        db.put({"a": 1}, "doc")
        db.compact()
    cblite.set_log_callback(None)
    with lock:
        got = list(messages)
    assert got, "no log message at DEBUG level for open/put/compact/close"
    for domain, level, message in got:
        assert isinstance(message, str)
        assert int(level) >= int(cblite.LogLevel.DEBUG)
    n = len(got)
    with cblite.Database("logged", dbdir) as db:
        db.put({"a": 2}, "doc2")
    assert len(messages) == n, "callback still called after removal"


def test_log_callback_exception_is_swallowed(restore_log_levels, dbdir, capfd):
    calls = []
    lock = threading.Lock()

    def bad(domain, level, message):
        with lock:
            calls.append(message)
        raise RuntimeError("log callback failure")

    for d in cblite.LogDomain:
        cblite.set_log_level(d, cblite.LogLevel.DEBUG)
    cblite.set_log_callback(bad)
    with cblite.Database("logged2", dbdir) as db:
        db.put({"a": 1}, "doc")          # the operations go on despite the exceptions
        assert db["doc"]["a"] == 1
    cblite.set_log_callback(None)
    with lock:
        n = len(calls)
    assert n > 0, "the log callback was never called"
    # set_log_callback's promise: the exception is printed (to stderr) and swallowed.
    err = capfd.readouterr().err
    assert err.count("cblite: exception in log callback") == n
    assert "RuntimeError: log callback failure" in err
    with cblite.Database("logged2", dbdir) as db:
        assert db.count == 1
    assert len(calls) == n, "callback still called after removal"


def test_default_directory_env(monkeypatch, tmp_path):
    target = tmp_path / "defaultdir"
    monkeypatch.setenv("CBLITE_DIR", str(target))
    assert os.path.realpath(cblite.default_directory()) == os.path.realpath(str(target))
    with cblite.Database("indefault") as db:
        assert os.path.realpath(db.path).startswith(os.path.realpath(str(target)))
    assert cblite.Database.exists("indefault")
    assert "indefault" in cblite.Database.list()
    cblite.Database.delete_named("indefault")
    monkeypatch.delenv("CBLITE_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert os.path.realpath(cblite.default_directory()) == \
        os.path.realpath(str(tmp_path / "xdg" / "cblite"))


def test_library_found_next_to_package(tmp_path):
    """Without $CBLITE_LIBRARY the package looks for libcblite.so* beside itself."""
    import shutil
    from helpers import run_isolated
    pkg = tmp_path / "cblite"
    shutil.copytree(os.path.join(PKG_ROOT, "cblite"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "libcblite.so*"))
    shutil.copy(os.path.realpath(_lib.library_path), pkg / "libcblite.so.1")
    env = dict(os.environ)
    code = f"""
import os, sys
os.environ.pop("CBLITE_LIBRARY", None)
sys.path.insert(0, {str(tmp_path)!r})
import cblite
assert cblite.__file__.startswith({str(tmp_path)!r}), cblite.__file__
print(cblite.library_path)
print(cblite.version())
"""
    r = run_isolated(code, env_extra={"CBLITE_LIBRARY": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(pkg / "libcblite.so.1")


def _copy_package(tmp_path, with_library):
    import shutil
    pkg = tmp_path / "cblite"
    shutil.copytree(os.path.join(PKG_ROOT, "cblite"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "libcblite.so*"))
    if with_library:
        shutil.copy(os.path.realpath(_lib.library_path), pkg / "libcblite.so.1")
    return pkg


_WHICH = """
import os, sys
sys.path.insert(0, {root!r})
import cblite
assert cblite.__file__.startswith({root!r}), cblite.__file__
print(cblite.library_path)
"""


def test_bundled_library_comes_before_cblite_library(tmp_path):
    """A wheel's own copy wins over $CBLITE_LIBRARY, so an installed wheel always runs
    with the library it was built with."""
    from helpers import run_isolated
    pkg = _copy_package(tmp_path, with_library=True)
    r = run_isolated(_WHICH.format(root=str(tmp_path)),
                     env_extra={"CBLITE_LIBRARY": "/nonexistent/libcblite.so.1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(pkg / "libcblite.so.1")


def test_library_found_through_pkg_config(tmp_path):
    """Without a bundled copy and without $CBLITE_LIBRARY (or with one that does not
    load), the libdir pkg-config reports for cblite is used."""
    import shutil
    from helpers import run_isolated
    _copy_package(tmp_path, with_library=False)
    libdir = tmp_path / "prefix" / "lib"
    libdir.mkdir(parents=True)
    shutil.copy(os.path.realpath(_lib.library_path), libdir / "libcblite.so.1")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "pkg-config"
    fake.write_text('#!/bin/sh\n[ "$1 $2" = "--variable=libdir cblite" ] && '
                    f'echo {libdir} && exit 0\nexit 1\n')
    fake.chmod(0o755)
    path = str(bindir) + os.pathsep + os.environ.get("PATH", "")
    for library in ("", "/nonexistent/libcblite.so.1"):
        r = run_isolated(_WHICH.format(root=str(tmp_path)),
                         env_extra={"CBLITE_LIBRARY": library, "PATH": path})
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0] == str(libdir / "libcblite.so.1")
