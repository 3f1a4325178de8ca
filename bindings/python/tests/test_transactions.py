"""Transactions: commit, abort, nesting, threads."""

import ctypes
import threading

import pytest

import cblite
from cblite import _lib


def test_commit(db):
    with db.transaction() as same:
        assert same is db
        db.put({"n": 1}, "a")
        db.put({"n": 2}, "b")
        assert db.count == 2          # visible inside the transaction
    assert db.count == 2
    assert db.last_sequence == 2


def test_abort_leaves_no_trace(db):
    db.put({"n": 0}, "before")
    seq = db.last_sequence
    notified = []
    token = db.add_change_listener(notified.append)
    with pytest.raises(ValueError):
        with db.transaction():
            _, r = db.put({"n": 1}, "a")
            db.put({"n": 2}, "before", parent_rev=db["before"]["_rev"])
            db.default_collection.put_local("loc", {"x": 1})
            raise ValueError("boom")
    db.wait_notifications(5000)
    assert "a" not in db
    with pytest.raises(cblite.NotFound):
        db.get("a", deleted=True)
    assert db["before"]["n"] == 0
    assert db.last_sequence == seq
    assert db.count == 1
    assert [r["id"] for r in db.changes()["results"]] == ["before"]
    with pytest.raises(cblite.NotFound):
        db.default_collection.get_local("loc")
    assert notified == []
    token.remove()
    # the database is usable afterwards, sequences continue
    db.put({"n": 3}, "after")
    assert db.last_sequence == seq + 1


def test_nested_commit(db):
    with db.transaction():
        db.put({"n": 1}, "outer")
        with db.transaction():
            db.put({"n": 2}, "inner")
        db.put({"n": 3}, "outer2")
    assert {"outer", "inner", "outer2"} <= set(db.default_collection)


def test_nested_abort_rolls_back_everything(db):
    with pytest.raises(KeyError):
        with db.transaction():
            db.put({"n": 1}, "outer")
            with db.transaction():
                db.put({"n": 2}, "inner")
                raise KeyError("inner failure")
    assert "outer" not in db and "inner" not in db
    assert db.last_sequence == 0


def test_nested_abort_caught_inside_outer(db):
    with pytest.raises(cblite.NotAcceptable):
        with db.transaction():
            db.put({"n": 1}, "outer")
            try:
                with db.transaction():
                    db.put({"n": 2}, "inner")
                    raise RuntimeError("inner")
            except RuntimeError:
                pass
    assert "outer" not in db
    # and the state is clean for the next transaction
    with db.transaction():
        db.put({"n": 1}, "next")
    assert "next" in db


def test_raw_begin_commit_abort_errors(db):
    lib = _lib.lib
    err = _lib.cbl_error()
    assert lib.cbl_db_commit(db._h, ctypes.byref(err)) == 406
    assert err.code == 406 and err.message
    assert lib.cbl_db_abort(db._h, ctypes.byref(err)) == 406
    db.begin()
    db.begin()
    db.put({"n": 1}, "x")
    db.commit()                      # inner: nothing written yet
    db.commit()                      # outermost
    assert "x" in db
    with pytest.raises(cblite.NotAcceptable):
        db.commit()
    db.begin()
    db.begin()
    db.put({"n": 1}, "y")
    db.abort()                       # ends the whole nesting
    with pytest.raises(cblite.NotAcceptable):
        db.commit()
    assert "y" not in db


def test_commit_from_another_thread_is_406(db):
    db.begin()
    box = {}

    def other():
        try:
            db.commit()
        except cblite.CBLiteError as exc:
            box["code"] = exc.code
        try:
            db.abort()
        except cblite.CBLiteError as exc:
            box["abort"] = exc.code

    t = threading.Thread(target=other)
    t.start()
    t.join(10)
    assert not t.is_alive()
    assert box == {"code": 406, "abort": 406}
    db.put({"n": 1}, "mine")
    db.commit()
    assert "mine" in db


def test_other_thread_waits_for_transaction(db):
    order = []
    started = threading.Event()

    def other():
        started.set()
        db.put({"n": 2}, "other")            # waits for the transaction
        order.append("other")

    with db.transaction():
        db.put({"n": 1}, "mine")
        t = threading.Thread(target=other)
        t.start()
        assert started.wait(5)
        t.join(0.3)
        assert t.is_alive()                  # still waiting for this transaction
        order.append("commit")
    t.join(10)
    assert not t.is_alive()
    assert order == ["commit", "other"]
    assert "other" in db and "mine" in db


def test_in_transaction(db):
    def body():
        db.put({"n": 1}, "a")
        db.put({"n": 2}, "b")

    assert db.in_transaction(body) is True
    assert db.count == 2

    def abort():
        db.put({"n": 3}, "c")
        return False

    assert db.in_transaction(abort) is False
    assert "c" not in db

    def raises():
        db.put({"n": 4}, "d")
        raise LookupError("nope")

    with pytest.raises(LookupError):
        db.in_transaction(raises)
    assert "d" not in db
    assert db.count == 2


def test_in_transaction_raw_409(db):
    err = _lib.cbl_error()
    fn = _lib.TRANSACTION_FN(lambda ctx: 0)
    assert _lib.lib.cbl_db_in_transaction(db._h, fn, None, ctypes.byref(err)) == 409
    ok = _lib.TRANSACTION_FN(lambda ctx: 1)
    assert _lib.lib.cbl_db_in_transaction(db._h, ok, None, ctypes.byref(err)) == 0
    assert err.code == 0


def test_transaction_across_collections(db):
    c = db.create_collection("c")
    with pytest.raises(RuntimeError):
        with db.transaction():
            c.put({"n": 1}, "x")
            db.put({"n": 1}, "y")
            raise RuntimeError()
    assert "x" not in c and "y" not in db
    with db.transaction():
        c.put({"n": 1}, "x")
        db.put({"n": 1}, "y")
    assert "x" in c and "y" in db


def test_transaction_on_closed_db(dbdir):
    db = cblite.Database("closedtx", dbdir)
    db.close()
    with pytest.raises(cblite.BadRequest):
        with db.transaction():
            pass


def test_write_burst_with_a_reader_survives_close_and_reopen(dbdir):
    """Large transactions, well past the WAL's 1,000-frame checkpoint threshold, with a
    reader thread beside them: the log is copied back off the committing thread, stays
    bounded, and is removed at close; every document is there after reopening."""
    import os
    pad = "x" * 3000
    wal = os.path.join(dbdir, "burst.cblite2", "db.sqlite3-wal")
    stop = threading.Event()
    seen = {"reads": 0, "errors": []}
    max_wal = 0
    with cblite.Database("burst", dbdir) as db:
        db.put({"pad": pad}, "first")

        def reader():
            while not stop.is_set():
                try:
                    assert db["first"]["pad"] == pad
                    seen["reads"] += 1
                except Exception as e:  # reported below
                    seen["errors"].append(e)
                    return

        t = threading.Thread(target=reader)
        t.start()
        try:
            for n in range(6):
                with db.transaction():
                    for i in range(400):
                        db.put({"pad": pad, "i": i}, f"b{n}-{i}")
                max_wal = max(max_wal, os.path.getsize(wal) if os.path.exists(wal) else 0)
        finally:
            stop.set()
            t.join()
        assert seen["errors"] == [] and seen["reads"] > 0
    assert 0 < max_wal < 40 * 1024 * 1024
    assert not os.path.exists(wal)
    with cblite.Database("burst", dbdir) as db:
        assert db.count == 2401
        assert db["b5-399"]["i"] == 399
        assert db.integrity_check() == []


def test_library_threads_run_only_while_they_have_work(dbdir):
    """A single-threaded program that stops writing is single-threaded again: the thread
    that copies the write-ahead log ends once the copies are made, and the expiration
    timer's runs only while an expiration is pending. Counted by the kernel
    (/proc/self/status), in a fresh interpreter with no other threads."""
    from helpers import run_isolated
    r = run_isolated(f"""
        import time, cblite
        def threads():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("Threads:"))
        def back_to(n):
            for _ in range(100):
                if threads() <= n:
                    return True
                time.sleep(0.05)
            return threads() <= n
        before = threads()
        pad = "x" * 3000
        with cblite.Database("idle", {dbdir!r}) as db:
            # back_to: the open's reads may keep a read lock (and its thread) for a moment
            assert back_to(before), "no expiration: no timer thread"
            for n in range(3):
                with db.transaction():
                    for i in range(400):
                        db.put({{"pad": pad}}, f"d{{n}}-{{i}}")
            assert back_to(before), "the log copied: its thread ended"
            coll = db.default_collection
            coll.set_expiration("d0-0", int(time.time()) + 1)
            assert back_to(before + 1) and threads() == before + 1, "the timer runs for the pending expiration"
            for _ in range(100):
                if "d0-0" not in coll:
                    break
                time.sleep(0.05)
            assert "d0-0" not in coll
            assert back_to(before), "nothing pending: the timer ended"
            assert db.count == 1199
        assert back_to(before)
        print("ok")
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
