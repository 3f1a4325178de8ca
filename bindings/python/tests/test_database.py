"""Opening, naming, listing, copying and deleting databases."""

import ctypes
import os

import pytest

import cblite
from cblite import _lib
from helpers import run_isolated


def test_open_creates(dbdir):
    assert not cblite.Database.exists("fresh", dbdir)
    with cblite.Database("fresh", dbdir) as db:
        assert db.name == "fresh"
        assert os.path.realpath(db.path).rstrip("/") == \
            os.path.realpath(os.path.join(dbdir, "fresh.cblite2"))
        assert os.path.isdir(db.path)
        assert db.count == 0
        assert db.last_sequence == 0
        assert db.is_open
    assert not db.is_open
    assert cblite.Database.exists("fresh", dbdir)


def test_open_existing_only(dbdir):
    with pytest.raises(cblite.NotFound) as info:
        cblite.Database("missing", dbdir, create=False)
    assert info.value.code == 404 and info.value.message
    assert not cblite.Database.exists("missing", dbdir)
    with cblite.Database("present", dbdir) as db:
        db.put({"x": 1}, "doc")
    with cblite.Database("present", dbdir, create=False, busy_timeout_ms=500) as db:
        assert db["doc"]["x"] == 1


def test_data_persists(dbdir):
    with cblite.Database("persist", dbdir) as db:
        db.put({"x": 1}, "a")
        db.put({"x": 2}, "b")
        seq = db.last_sequence
    with cblite.Database("persist", dbdir) as db:
        assert db.count == 2
        assert db.last_sequence == seq
        assert db["b"]["x"] == 2


@pytest.mark.parametrize("name", ["Bad", "1abc", "../x", "", "a b", "é", "_x", "x" * 240,
                                  "a\nb", ".hidden", "/abs"])
def test_invalid_names(dbdir, name):
    with pytest.raises(cblite.BadRequest):
        cblite.Database(name, dbdir)
    assert not cblite.Database.exists(name, dbdir)
    assert os.listdir(dbdir) == []


@pytest.mark.parametrize("name", ["a", "abc123", "a_$()+-", "x" * 239, "a/b", "a/b/c"])
def test_valid_names(dbdir, name):
    with cblite.Database(name, dbdir) as db:
        assert db.name == name
        path = os.path.realpath(db.path)
        assert os.path.dirname(path.rstrip("/")) == os.path.realpath(dbdir)
    assert cblite.Database.exists(name, dbdir)
    assert name in cblite.Database.list(dbdir)


def test_slash_stays_inside_dir(dbdir):
    with cblite.Database("a/b", dbdir) as db:
        path = os.path.realpath(db.path)
    assert os.path.realpath(dbdir) == os.path.dirname(path.rstrip("/"))
    assert os.listdir(dbdir) == ["a:b.cblite2"]


def test_name_bytes_limit_counts_bytes(dbdir):
    with pytest.raises(cblite.BadRequest):
        cblite.Database("a" * 240, dbdir)


def test_list_exists_delete_named(dbdir):
    assert cblite.Database.list(dbdir) == []
    for n in ("zeta", "alpha", "mid"):
        cblite.Database(n, dbdir).close()
    assert cblite.Database.list(dbdir) == ["alpha", "mid", "zeta"]
    assert cblite.Database.exists("mid", dbdir)
    cblite.Database.delete_named("mid", dbdir)
    assert not cblite.Database.exists("mid", dbdir)
    assert cblite.Database.list(dbdir) == ["alpha", "zeta"]
    with pytest.raises(cblite.NotFound):
        cblite.Database.delete_named("mid", dbdir)
    with pytest.raises(cblite.BadRequest):
        cblite.Database.delete_named("Bad", dbdir)


def test_list_ignores_other_files(dbdir):
    open(os.path.join(dbdir, "notes.txt"), "w").close()
    os.mkdir(os.path.join(dbdir, "folder"))
    cblite.Database("real", dbdir).close()
    assert cblite.Database.list(dbdir) == ["real"]


def test_delete_named_while_open_is_busy(dbdir):
    with cblite.Database("busy", dbdir):
        with pytest.raises(cblite.Busy):
            cblite.Database.delete_named("busy", dbdir)
    cblite.Database.delete_named("busy", dbdir)


def test_delete(dbdir):
    db = cblite.Database("todelete", dbdir)
    db.put({"a": 1}, "x")
    path = db.path
    db.delete()
    assert not db.is_open
    assert not os.path.exists(path)
    assert not cblite.Database.exists("todelete", dbdir)
    with pytest.raises(cblite.BadRequest):
        db.count


def test_delete_with_other_handle_open_is_busy(dbdir):
    a = cblite.Database("shared", dbdir)
    b = cblite.Database("shared", dbdir)
    try:
        with pytest.raises(cblite.Busy):
            a.delete()
    finally:
        b.close()
        a.close()
    assert cblite.Database.exists("shared", dbdir)


def test_copy_prebuilt(dbdir, tmp_path):
    src_dir = str(tmp_path / "bundle")
    os.mkdir(src_dir)
    with cblite.Database("prebuilt", src_dir) as db:
        for i in range(5):
            db.put({"i": i}, f"doc{i}")
        src_path = db.path
        rev = db["doc3"]["_rev"]
    cblite.Database.copy(src_path, "installed", dbdir)
    assert cblite.Database.exists("installed", dbdir)
    with cblite.Database("installed", dbdir) as db:
        assert db.name == "installed"
        assert db.count == 5
        assert db["doc3"] == {"_id": "doc3", "_rev": rev, "i": 3}
        db.put({"i": 99}, "new")
    # the source is untouched
    with cblite.Database("prebuilt", src_dir) as db:
        assert "new" not in db


def test_copy_target_exists_is_412(dbdir, tmp_path):
    src_dir = str(tmp_path / "bundle")
    os.mkdir(src_dir)
    with cblite.Database("prebuilt", src_dir) as db:
        src_path = db.path
    cblite.Database("taken", dbdir).close()
    with pytest.raises(cblite.PreconditionFailed):
        cblite.Database.copy(src_path, "taken", dbdir)


def test_copy_missing_source_is_404(dbdir, tmp_path):
    with pytest.raises(cblite.NotFound):
        cblite.Database.copy(str(tmp_path / "nothing.cblite2"), "x", dbdir)
    empty = tmp_path / "empty.cblite2"
    empty.mkdir()
    with pytest.raises(cblite.NotFound):
        cblite.Database.copy(str(empty), "y", dbdir)
    assert not cblite.Database.exists("x", dbdir)
    assert not cblite.Database.exists("y", dbdir)


def test_copy_bad_name_is_400(dbdir, tmp_path):
    src_dir = str(tmp_path / "bundle")
    os.mkdir(src_dir)
    with cblite.Database("prebuilt", src_dir) as db:
        src_path = db.path
    with pytest.raises(cblite.BadRequest):
        cblite.Database.copy(src_path, "Bad", dbdir)


def test_max_rev_tree_depth(dbdir):
    with cblite.Database("depth", dbdir) as db:
        assert db.max_rev_tree_depth == 20
        db.max_rev_tree_depth = 7
        assert db.max_rev_tree_depth == 7
        with pytest.raises(cblite.BadRequest):
            db.max_rev_tree_depth = 0
        with pytest.raises(cblite.BadRequest):
            db.max_rev_tree_depth = 100001
        db.max_rev_tree_depth = 100000
        db.max_rev_tree_depth = 1
        assert db.max_rev_tree_depth == 1
    with cblite.Database("depth", dbdir) as db:
        assert db.max_rev_tree_depth == 1, "the depth is stored in the database"


def test_close_is_idempotent_and_closed_db_raises(dbdir):
    db = cblite.Database("closing", dbdir)
    coll = db.default_collection
    db.close()
    db.close()
    for op in (lambda: db.count, lambda: db.name, lambda: db.path, lambda: db.get("x"),
               lambda: db.put({"a": 1}), lambda: db.last_sequence, lambda: db.compact(),
               lambda: db.collection_names(), lambda: coll.count,
               lambda: db.add_change_listener(lambda c: None), lambda: db.begin()):
        with pytest.raises(cblite.BadRequest):
            op()


def test_closed_handle_through_c_is_400(dbdir):
    """A released database handle passed to the C API returns 400, it does not crash.
    Run in a child process so that a crash cannot take the test-suite down."""
    code = f"""
import ctypes
from ctypes import byref, c_void_p, c_uint64
from cblite import _lib
lib = _lib.lib
err = _lib.cbl_error()
db = c_void_p()
assert lib.cbl_db_open(b"stale", {dbdir!r}.encode(), None, byref(db), byref(err)) == 0
coll = c_void_p()
assert lib.cbl_db_default_collection(db, byref(coll), byref(err)) == 0
assert lib.cbl_db_close(db, byref(err)) == 0
n = c_uint64(7)
assert lib.cbl_db_count(db, byref(n), byref(err)) == 400, err.code
assert err.code == 400 and err.message, err.message
assert n.value == 0
assert lib.cbl_db_close(db, byref(err)) == 400
# collection of a closed database: 400
assert lib.cbl_collection_count(coll, byref(n), byref(err)) == 400, err.code
out = c_void_p(1234)
assert lib.cbl_doc_get(coll, b"x", 0, byref(out), byref(err)) == 400
assert out.value is None
lib.cbl_collection_release(coll)
# released collection handle: 400
assert lib.cbl_collection_count(coll, byref(n), byref(err)) == 400
lib.cbl_collection_release(coll)   # ignored
lib.cbl_collection_release(None)   # ignored
# a pointer that never was a handle
bogus = ctypes.create_string_buffer(256)
assert lib.cbl_db_count(ctypes.addressof(bogus), byref(n), byref(err)) == 400
assert lib.cbl_db_count(None, byref(n), byref(err)) == 400
assert lib.cbl_instance_count() == 0, lib.cbl_instance_count()
print("ok")
"""
    r = run_isolated(code)
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip() == "ok"


def test_open_null_and_bad_arguments(dbdir):
    lib = _lib.lib
    err = _lib.cbl_error()
    out = ctypes.c_void_p(1234)
    assert lib.cbl_db_open(None, dbdir.encode(), None, ctypes.byref(out),
                           ctypes.byref(err)) == 400
    assert out.value is None and err.code == 400 and err.message
    assert lib.cbl_db_open(b"ok", dbdir.encode(), None, None, ctypes.byref(err)) == 400
    for opts in (b"not json", b"[1]", b'{"create": "yes"}', b'{"busy_timeout_ms": "x"}'):
        out = ctypes.c_void_p(1234)
        assert lib.cbl_db_open(b"ok", dbdir.encode(), opts, ctypes.byref(out),
                               ctypes.byref(err)) == 400, opts
        assert out.value is None
    # invalid UTF-8 in a name
    assert lib.cbl_db_open(b"ab\xff", dbdir.encode(), None, ctypes.byref(out),
                           ctypes.byref(err)) == 400
    assert not lib.cbl_db_exists(None, dbdir.encode())
    assert not lib.cbl_db_exists(b"Bad", dbdir.encode())


def test_open_options_json(dbdir):
    lib = _lib.lib
    err = _lib.cbl_error()
    out = ctypes.c_void_p()
    assert lib.cbl_db_open(b"opts", dbdir.encode(), b'{"create": false}', ctypes.byref(out),
                           ctypes.byref(err)) == 404
    assert lib.cbl_db_open(b"opts", dbdir.encode(),
                           b'{"create": true, "busy_timeout_ms": 250}',
                           ctypes.byref(out), ctypes.byref(err)) == 0
    assert lib.cbl_db_close(out, ctypes.byref(err)) == 0


def test_not_a_database(dbdir):
    bundle = os.path.join(dbdir, "junk.cblite2")
    os.mkdir(bundle)
    for fname in ("db.sqlite3", "junk.sqlite3", "db.sqlite"):
        with open(os.path.join(bundle, fname), "wb") as f:
            f.write(b"this is not an SQLite database" * 100)
    # Refused — 500 (not a database), or 401: random bytes cannot be told apart from an
    # encrypted database — or opened as a fresh database; never a crash. When opened it
    # must be usable.
    try:
        with cblite.Database("junk", dbdir, create=False) as db:
            db.put({"a": 1}, "x")
    except cblite.CBLiteError as exc:
        assert exc.code in (500, 401, 404), exc


def test_two_handles_one_database(dbdir):
    a = cblite.Database("twice", dbdir)
    b = cblite.Database("twice", dbdir)
    try:
        a.put({"v": 1}, "doc")
        assert b["doc"]["v"] == 1
        assert b.count == 1
        _, rev = b.put({"v": 2}, "doc", parent_rev=a["doc"]["_rev"])
        assert a["doc"]["_rev"] == rev
    finally:
        a.close()
        b.close()


def test_close_with_transaction_open_is_406(dbdir):
    db = cblite.Database("txclose", dbdir)
    db.begin()
    db.put({"a": 1}, "x")
    with pytest.raises(cblite.NotAcceptable):
        db.close()
    assert db.is_open
    with pytest.raises(cblite.NotAcceptable):
        db.delete()
    assert db.is_open
    db.commit()
    db.close()
    with cblite.Database("txclose", dbdir) as db:
        assert "x" in db


def test_maintenance(db):
    for i in range(20):
        db.put({"i": i, "pad": "x" * 100}, f"d{i}")
    db.compact()
    db.optimize()
    assert db.integrity_check() == []
    assert db.integrity_check(raise_on_problem=True) == []
    assert db.count == 20


def test_compact_in_transaction_is_406(db):
    with db.transaction():
        with pytest.raises(cblite.NotAcceptable):
            db.compact()


def test_integrity_check_report_is_json(db):
    out = ctypes.c_void_p()
    err = _lib.cbl_error()
    assert _lib.lib.cbl_db_integrity_check(db._h, ctypes.byref(out), ctypes.byref(err)) == 0
    assert _lib.take_string(out) == "[]"
    assert _lib.lib.cbl_db_integrity_check(db._h, None, None) == 0


def test_busy_timeout(dbdir):
    """A write through another handle waits at most its busy timeout, then raises Busy."""
    import threading
    import time
    a = cblite.Database("locked", dbdir)
    b = cblite.Database("locked", dbdir, busy_timeout_ms=300)
    ready = threading.Event()
    release = threading.Event()

    def holder():
        with a.transaction():
            a.put({"held": True}, "h")
            ready.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert ready.wait(10)
        t0 = time.monotonic()
        with pytest.raises(cblite.Busy):
            b.put({"x": 1}, "blocked")
        elapsed = time.monotonic() - t0
        assert 0.2 <= elapsed < 2, f"waited {elapsed:.2f}s with busy_timeout_ms=300"
    finally:
        release.set()
        t.join()
        try:
            b.put({"x": 2}, "after")
            assert "h" in b
        finally:
            a.close()
            b.close()


def test_other_process_sees_writes_and_busy_timeout(dbdir):
    """Two processes on one database: writes are visible across them, and a write
    blocked by the other process's transaction fails with Busy after the timeout."""
    import subprocess
    import sys
    import time
    from helpers import PKG_ROOT
    with cblite.Database("multi", dbdir) as db:
        db.put({"from": "parent"}, "p")
    child = f"""
import sys, time, cblite
db = cblite.Database("multi", {dbdir!r})
assert db["p"]["from"] == "parent"
db.put({{"from": "child"}}, "c")
db.begin()
db.put({{"held": True}}, "held")
print("holding", flush=True)
sys.stdin.readline()
db.commit()
db.close()
print("done", flush=True)
"""
    env = dict(os.environ, PYTHONPATH=PKG_ROOT)
    # Opened before the other process takes the lock (open itself may need it: 503).
    db = cblite.Database("multi", dbdir, busy_timeout_ms=300)
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        assert proc.stdout.readline().strip() == "holding", proc.stderr.read()
        assert db["c"]["from"] == "child"
        assert "held" not in db               # not committed yet
        t0 = time.monotonic()
        try:
            db.put({"x": 1}, "blocked")
            raise AssertionError("write succeeded while another process held the lock")
        except cblite.Busy:
            pass
        elapsed = time.monotonic() - t0
        assert 0.2 <= elapsed < 5, elapsed
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        assert db["held"]["held"] is True
        db.put({"x": 1}, "blocked")
    finally:
        db.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        stderr = proc.stderr.read()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert proc.returncode == 0, stderr


def test_empty_directory_is_refused(dbdir):
    """"" names no directory: open, list and a strict exists raise BadRequest (the lenient
    exists answers False), as a missing directory does not."""
    with pytest.raises(cblite.BadRequest):
        cblite.Database.list("")
    with pytest.raises(cblite.BadRequest):
        cblite.Database.exists("db", "", strict=True)
    assert cblite.Database.exists("db", "") is False
    with pytest.raises(cblite.BadRequest):
        cblite.Database("db", "")
    assert cblite.Database.list(dbdir + "/missing") == []


def test_security_object(dbdir):
    with cblite.Database("secured", dbdir) as db:
        assert db.security is None
        with pytest.raises(cblite.BadRequest):
            db.security = {"members": {"names": "bob"}}
        db.security = {"members": {"names": ["bob"], "roles": []}, "admins": {"roles": ["boss"]}}
    with cblite.Database("secured", dbdir) as db:
        assert db.security == {"members": {"names": ["bob"], "roles": []}, "admins": {"roles": ["boss"]}}
