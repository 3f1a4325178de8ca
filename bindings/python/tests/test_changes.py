"""The changes feed and change listeners."""

import logging
import threading
import time

import pytest

import cblite
from helpers import run_isolated, run_with_timeout


class Recorder:
    """A listener callable that records batches thread-safely."""

    def __init__(self, action=None):
        self.batches = []
        self.lock = threading.Lock()
        self.action = action
        self.threads = set()

    def __call__(self, changes):
        with self.lock:
            self.batches.append(list(changes))
            self.threads.add(threading.get_ident())
        if self.action:
            self.action(changes)

    @property
    def changes(self):
        with self.lock:
            return [c for b in self.batches for c in b]

    @property
    def ids(self):
        return [c.doc_id for c in self.changes]


def settle(db):
    db.wait_notifications(10000)


# ---- the feed ----------------------------------------------------------------------------

def test_changes_feed(coll):
    _, ra = coll.put({"v": 1}, "a")
    coll.put({"v": 1}, "b")
    coll.put({"v": 1}, "c")
    _, ra2 = coll.put({"v": 2}, "a", parent_rev=ra)
    feed = coll.changes()
    results = feed["results"]
    assert [r["id"] for r in results] == ["b", "c", "a"]   # a document appears once
    seqs = [r["seq"] for r in results]
    assert seqs == sorted(seqs) and seqs[-1] == 4
    assert feed["last_seq"] == coll.last_sequence == 4
    assert results[-1]["changes"] == [{"rev": ra2}]
    assert "doc" not in results[0]
    assert not results[0].get("deleted", False)
    # since
    assert [r["id"] for r in coll.changes(since=seqs[0])["results"]] == ["c", "a"]
    assert coll.changes(since=4)["results"] == []
    # limit
    assert [r["id"] for r in coll.changes(limit=2)["results"]] == ["b", "c"]
    # descending
    assert [r["id"] for r in coll.changes(descending=True)["results"]] == ["a", "c", "b"]
    # include_docs
    docs = coll.changes(include_docs=True)["results"]
    assert docs[-1]["doc"] == {"_id": "a", "_rev": ra2, "v": 2}


def test_changes_deleted_and_purged(coll):
    coll.put({"v": 1}, "gone")
    coll.put({"v": 1}, "purged")
    coll.put({"v": 1}, "alive")
    t = coll.delete("gone")
    coll.purge("purged")
    results = coll.changes(include_docs=True)["results"]
    assert [r["id"] for r in results] == ["alive", "gone"]
    gone = results[-1]
    assert gone["deleted"] is True
    assert gone["changes"] == [{"rev": t}]


def test_changes_all_revs(coll):
    _, r1 = coll.put({"v": 1}, "c")
    _, a = coll.put({"v": "a"}, "c", parent_rev=r1)
    _, b = coll.put({"v": "b"}, "c", parent_rev=r1, allow_conflict=True)
    one = coll.changes()["results"][0]["changes"]
    assert one == [{"rev": max(a, b)}]
    every = coll.changes(all_revs=True)["results"][0]["changes"]
    assert sorted(x["rev"] for x in every) == sorted([a, b])


def test_iter_changes_pages(coll):
    for i in range(25):
        coll.put({"i": i}, f"d{i:02d}")
    ids = [r["id"] for r in coll.iter_changes(batch=4)]
    assert ids == [f"d{i:02d}" for i in range(25)]
    seqs = [r["seq"] for r in coll.iter_changes(since=20, batch=3)]
    assert seqs == [21, 22, 23, 24, 25]
    assert list(coll.iter_changes(since=25)) == []
    assert len(list(coll.iter_changes(batch=25))) == 25
    docs = list(coll.iter_changes(batch=7, include_docs=True))
    assert docs[3]["doc"]["i"] == 3


def test_changes_bad_options(coll):
    import ctypes
    from cblite import _lib
    out = ctypes.c_void_p(1)
    err = _lib.cbl_error()
    for opts in (b"nope", b"[]", b'{"limit": "x"}'):
        assert _lib.lib.cbl_collection_changes(coll._h, 0, opts, ctypes.byref(out),
                                               ctypes.byref(err)) == 400, opts
        assert out.value is None


# ---- listeners ---------------------------------------------------------------------------

def test_listener_called_after_commit(db):
    coll = db.default_collection
    observed = []

    def check(changes):
        # the change is committed and readable when the listener runs
        for c in changes:
            observed.append(coll.get(c.doc_id)["_rev"] == c.rev_id)

    rec = Recorder(check)
    token = coll.add_change_listener(rec)
    _, rev = coll.put({"v": 1}, "doc")
    settle(db)
    assert rec.ids == ["doc"]
    c = rec.changes[0]
    assert isinstance(c, cblite.Change)
    assert c.rev_id == rev and c.sequence == 1 and c.deleted is False and c.external is False
    assert observed == [True]
    t = coll.delete("doc")
    settle(db)
    last = rec.changes[-1]
    assert last.deleted is True and last.rev_id == t and last.sequence == 2
    token.remove()


def test_listener_once_per_transaction(db):
    rec = Recorder()
    token = db.add_change_listener(rec)
    with db.transaction():
        db.put({"n": 1}, "a")
        db.put({"n": 2}, "b")
        db.put({"n": 3}, "c")
        assert rec.batches == []          # nothing before commit
    settle(db)
    assert len(rec.batches) == 1
    assert [c.doc_id for c in rec.batches[0]] == ["a", "b", "c"]
    assert [c.sequence for c in rec.batches[0]] == [1, 2, 3]
    db.put({"n": 4}, "d")
    db.put({"n": 5}, "e")
    settle(db)
    assert len(rec.batches) == 3
    token.remove()


def test_listener_not_called_on_abort(db):
    rec = Recorder()
    token = db.add_change_listener(rec)
    with pytest.raises(RuntimeError):
        with db.transaction():
            db.put({"n": 1}, "a")
            raise RuntimeError("abort")
    settle(db)
    assert rec.batches == []
    assert "a" not in db
    token.remove()


def test_document_listener_filters(db):
    coll = db.default_collection
    rec = Recorder()
    token = coll.add_document_listener("watched", rec)
    coll.put({"v": 1}, "other")
    _, r = coll.put({"v": 1}, "watched")
    coll.put({"v": 2}, "other2")
    with db.transaction():
        coll.put({"v": 1}, "x")
        coll.put({"v": 2}, "watched", parent_rev=r)
        coll.put({"v": 1}, "y")
    settle(db)
    assert rec.ids == ["watched", "watched"]
    assert all(len(b) == 1 for b in rec.batches)
    token.remove()


def test_collection_listener_only_its_collection(db):
    a = db.create_collection("a")
    b = db.create_collection("b")
    ra, rb, rdef = Recorder(), Recorder(), Recorder()
    ta = a.add_change_listener(ra)
    tb = b.add_change_listener(rb)
    td = db.add_change_listener(rdef)
    a.put({"v": 1}, "in-a")
    b.put({"v": 1}, "in-b")
    db.put({"v": 1}, "in-default")
    settle(db)
    assert ra.ids == ["in-a"] and rb.ids == ["in-b"] and rdef.ids == ["in-default"]
    for t in (ta, tb, td):
        t.remove()


def test_external_flag(db):
    coll = db.default_collection
    rec = Recorder()
    token = coll.add_change_listener(rec)
    _, r1 = coll.put({"v": 1}, "local")
    digest_len = len(r1.split("-", 1)[1])
    remote = "1-" + "a" * digest_len
    coll.put_existing("remote", {"v": 1}, [remote])
    settle(db)
    by_id = {c.doc_id: c for c in rec.changes}
    assert by_id["local"].external is False
    assert by_id["remote"].external is True and by_id["remote"].rev_id == remote
    token.remove()


def test_remove_twice_and_context_manager(db):
    rec = Recorder()
    token = db.add_change_listener(rec)
    assert token.active
    token.remove()
    token.remove()
    assert not token.active
    db.put({"v": 1}, "after")
    settle(db)
    assert rec.batches == []
    with db.add_change_listener(rec) as t2:
        db.put({"v": 1}, "inside")
        settle(db)
    assert not t2.active
    db.put({"v": 1}, "outside")
    settle(db)
    assert rec.ids == ["inside"]


def test_remove_raw_token_twice_is_harmless(dbdir):
    code = f"""
import ctypes
from ctypes import byref, c_void_p
from cblite import _lib
lib = _lib.lib
err = _lib.cbl_error()
db = c_void_p()
assert lib.cbl_db_open(b"raw", {dbdir!r}.encode(), None, byref(db), byref(err)) == 0
cb = _lib.CHANGE_FN(lambda ctx, changes, n: None)
tok = c_void_p()
assert lib.cbl_db_add_change_listener(db, cb, None, byref(tok), byref(err)) == 0
tok2 = c_void_p()
assert lib.cbl_db_add_change_listener(db, cb, None, byref(tok2), byref(err)) == 0
lib.cbl_listener_remove(tok)
lib.cbl_listener_remove(tok)       # twice: harmless
lib.cbl_listener_remove(None)      # NULL: ignored
assert lib.cbl_db_close(db, byref(err)) == 0
lib.cbl_listener_remove(tok2)      # after close: harmless
lib.cbl_listener_remove(tok2)
assert lib.cbl_instance_count() == 0, lib.cbl_instance_count()
print("ok")
"""
    r = run_isolated(code)
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip() == "ok"


def test_remove_inside_callback(db):
    calls = []
    holder = {}

    def once(changes):
        calls.append(changes)
        holder["token"].remove()

    holder["token"] = db.add_change_listener(once)
    run_with_timeout(lambda: db.put({"v": 1}, "first"))
    settle(db)
    db.put({"v": 1}, "second")
    settle(db)
    assert len(calls) == 1
    assert not holder["token"].active


def test_callback_calls_back_into_library(db):
    coll = db.default_collection
    mirrored = []
    counts = []

    def mirror(changes):
        # (an assert here would only be logged: listener exceptions never reach the test)
        for c in changes:
            if c.doc_id.startswith("src-") and not c.deleted:
                body = coll.get(c.doc_id)                   # read
                coll.put({"copy_of": body["_rev"]}, "mirror-" + c.doc_id)   # write
                mirrored.append(c.doc_id)
                counts.append(coll.count)                   # sees its own write

    token = coll.add_change_listener(mirror)
    _, rev = run_with_timeout(lambda: coll.put({"v": 1}, "src-1"))
    settle(db)
    assert mirrored == ["src-1"]
    assert coll["mirror-src-1"]["copy_of"] == rev
    with db.transaction():
        coll.put({"v": 1}, "src-2")
    settle(db)
    assert "mirror-src-2" in coll
    assert mirrored == ["src-1", "src-2"]
    assert counts == [2, 4]
    token.remove()


def test_two_handles_share_notifications(dbdir):
    a = cblite.Database("shared", dbdir)
    b = cblite.Database("shared", dbdir)
    try:
        rec_b = Recorder()
        rec_a = Recorder()
        tb = b.add_change_listener(rec_b)
        ta = a.add_change_listener(rec_a)
        _, rev = a.put({"v": 1}, "from-a")
        a.wait_notifications(10000)
        b.wait_notifications(10000)
        assert rec_b.ids == ["from-a"]
        assert rec_a.ids == ["from-a"]
        assert rec_b.changes[0].rev_id == rev
        cb = b.create_collection("c")
        rec_c = Recorder()
        tc = a.collection("c").add_change_listener(rec_c)
        cb.put({"v": 1}, "in-c")
        b.wait_notifications(10000)
        assert rec_c.ids == ["in-c"]
        for t in (ta, tb, tc):
            t.remove()
    finally:
        a.close()
        b.close()


def test_listener_exception_is_logged_not_raised(db, caplog):
    good = Recorder()
    bad_calls = []

    def bad(changes):
        bad_calls.append(len(changes))
        raise RuntimeError("listener failure")

    t1 = db.add_change_listener(bad)
    t2 = db.add_change_listener(good)
    with caplog.at_level(logging.ERROR, logger="cblite"):
        db.put({"v": 1}, "a")
        db.put({"v": 1}, "b")
        settle(db)
    assert good.ids == ["a", "b"]
    assert sum(bad_calls) == 2
    # one ERROR record on the "cblite" logger per failed call, carrying the exception
    records = [r for r in caplog.records if r.name == "cblite"]
    assert len(records) == len(bad_calls)
    for r in records:
        assert r.levelno == logging.ERROR
        assert "listener" in r.getMessage()
        assert r.exc_info and r.exc_info[0] is RuntimeError
        assert str(r.exc_info[1]) == "listener failure"
    assert db.count == 2
    t1.remove()
    t2.remove()


def test_buffered_notifications(db):
    rec = Recorder()
    token = db.add_change_listener(rec)
    db.buffer_notifications(True)
    db.put({"v": 1}, "a")
    db.put({"v": 1}, "b")
    settle(db)                 # never waits for buffered changes
    time.sleep(0.2)
    assert rec.batches == []
    db.send_notifications()
    settle(db)
    assert rec.ids == ["a", "b"]
    db.buffer_notifications(False)
    db.put({"v": 1}, "c")
    settle(db)
    assert rec.ids == ["a", "b", "c"]
    token.remove()


def test_buffered_notifications_sent_on_another_thread(db):
    rec = Recorder()
    token = db.add_change_listener(rec)
    db.buffer_notifications(True)
    db.put({"v": 1}, "a")
    t = threading.Thread(target=db.send_notifications)
    t.start()
    t.join(10)
    assert not t.is_alive()
    assert rec.ids == ["a"]
    assert threading.get_ident() not in rec.threads
    db.buffer_notifications(False)
    token.remove()


def test_notifications_from_many_threads_in_commit_order(db):
    rec = Recorder()
    token = db.add_change_listener(rec)

    def writer(k):
        for i in range(20):
            db.put({"i": i}, f"t{k}-{i}")

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    settle(db)
    seqs = [c.sequence for c in rec.changes]
    assert len(seqs) == 80
    assert seqs == sorted(seqs) and seqs == list(range(1, 81))
    token.remove()


def test_wait_notifications_from_callback_does_not_deadlock(db):
    outcomes = []

    def waits(changes):
        # What the callback's own call returned: an exception raised here would only be
        # logged, so it is recorded and checked below.
        t0 = time.monotonic()
        try:
            db.wait_notifications(2000)
            outcomes.append(("ok", time.monotonic() - t0))
        except BaseException as exc:
            outcomes.append((exc, time.monotonic() - t0))

    token = db.add_change_listener(waits)
    run_with_timeout(lambda: db.put({"v": 1}, "a"), timeout=20)
    settle(db)
    token.remove()
    # It never waits for itself (the header): no Busy after the 2 s timeout, at once.
    assert [o for o, _ in outcomes] == ["ok"], outcomes
    assert outcomes[0][1] < 1.0, outcomes


def test_listener_on_expiration_purge(db):
    rec = Recorder()
    coll = db.default_collection
    coll.put({"v": 1}, "exp")
    token = coll.add_change_listener(rec)
    coll.set_expiration("exp", int(time.time()) - 1)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and "exp" not in rec.ids:
        time.sleep(0.1)
    purged = [c for c in rec.changes if c.doc_id == "exp"]
    assert purged, "no notification for the expired document"
    assert purged[-1].deleted is True and purged[-1].rev_id == ""
    token.remove()


def test_interpreter_exit_with_callbacks_in_flight(dbdir):
    """Listeners still registered and a thread writing at exit: the atexit hook removes
    them, so the interpreter exits cleanly."""
    code = f"""
import threading, time, cblite
db = cblite.Database("exiting", {dbdir!r})
count = [0]
def slow(changes):
    count[0] += len(changes)
    time.sleep(0.01)
db.add_change_listener(slow)
db.default_collection.add_document_listener("d5", slow)
db.default_collection.set_validator("ok", lambda new, cur: True)
for d in cblite.LogDomain:
    cblite.set_log_level(d, cblite.LogLevel.DEBUG)
cblite.set_log_callback(lambda domain, level, message: None)
def writer():
    i = 0
    while True:
        try:
            db.put({{"i": i}}, "d%d" % i)
        except Exception:
            pass
        i += 1
t = threading.Thread(target=writer, daemon=True)
t.start()
while count[0] < 20:
    time.sleep(0.01)
print("exiting", flush=True)
"""
    for _ in range(3):
        r = run_isolated(code, timeout=60)
        assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
        assert "exiting" in r.stdout
