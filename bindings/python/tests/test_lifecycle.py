"""Object lifetimes in the bindings: garbage collection, dropped tokens, races between
listener removal and delivery."""

import gc
import random
import threading
import time

import pytest

import cblite
from helpers import run_isolated


def test_collection_objects_are_released_when_collected(db):
    db.create_collection("c")
    gc.collect()
    base = cblite.instance_count()
    for _ in range(200):
        c = db.collection("c")
        assert c.count == 0
        del c
    gc.collect()
    assert cblite.instance_count() == base


def test_unclosed_database_is_closed_when_collected(dbdir):
    gc.collect()
    base = cblite.instance_count()
    db = cblite.Database("forgotten", dbdir)
    db.default_collection.put({"a": 1}, "x")
    assert cblite.instance_count() > base
    del db
    gc.collect()
    assert cblite.instance_count() == base
    with cblite.Database("forgotten", dbdir) as again:
        assert "x" in again


def test_listener_lives_without_a_reference_to_its_token(db):
    seen = []
    db.add_change_listener(lambda changes: seen.extend(c.doc_id for c in changes))
    gc.collect()
    db.put({"a": 1}, "x")
    db.wait_notifications(5000)
    assert seen == ["x"]
    assert cblite.live_listener_count() >= 1
    # closing the database removes it (and the instance guard checks the count)


def test_validator_removed_when_its_collection_object_is_released(db):
    c = db.create_collection("v")
    c.set_validator("no", lambda new, cur: False)
    other = db.collection("v")
    with pytest.raises(cblite.Forbidden):
        other.put({"a": 1}, "x")
    assert "x" not in other
    c.release()
    other.put({"a": 1}, "x")
    assert "x" in other


def test_validators_removed_on_close(dbdir):
    a = cblite.Database("valclose", dbdir)
    b = cblite.Database("valclose", dbdir)
    try:
        a.default_collection.set_validator("no", lambda new, cur: False)
        with pytest.raises(cblite.Forbidden):
            b.put({"a": 1}, "x")
        assert "x" not in b
        a.close()
        b.put({"a": 1}, "x")
        assert "x" in b
    finally:
        a.close()
        b.close()


def test_add_remove_listeners_while_writing(db):
    """Listeners are added and removed on one thread while another writes: no crash, no
    call after remove() returned."""
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        while not stop.is_set():
            try:
                db.put({"i": i}, f"w{i}")
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    late_calls = []
    rounds = 0
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            state = {"removed": False}

            def cb(changes, state=state):
                if state["removed"]:
                    late_calls.append(changes)
                time.sleep(random.random() / 1000)

            token = db.add_change_listener(cb)
            time.sleep(random.random() / 200)
            token.remove()
            state["removed"] = True
            rounds += 1
    finally:
        stop.set()
        t.join(30)
    assert not t.is_alive()
    db.wait_notifications(10000)
    assert not errors
    assert rounds > 0 and db.count > 0        # listeners came and went while writes went on
    assert late_calls == []


def test_remove_from_another_thread_during_callback(db):
    """remove() from another thread waits until the running callback has returned."""
    entered = threading.Event()
    finished = []

    def slow(changes):
        entered.set()
        time.sleep(0.3)
        finished.append(True)

    token = db.add_change_listener(slow)
    writer = threading.Thread(target=lambda: db.put({"a": 1}, "x"))
    writer.start()
    assert entered.wait(10)
    token.remove()                      # must block until slow() returned
    assert finished == [True]
    writer.join(10)
    assert not writer.is_alive() and "x" in db


def test_the_exit_registry_holds_every_callback_holder(dbdir):
    """Each kind of object that holds Python callbacks registers in cblite._shutdown while
    it holds them, and the exit handler releases them all (the database stays open)."""
    code = f"""
import cblite
from cblite import _shutdown as s
db = cblite.Database("registry", {dbdir!r})
db.default_collection.set_validator("no", lambda new, cur: False)
db.set_filter("all", lambda doc, params: True)
token = db.add_change_listener(lambda changes: None)
view = db.default_collection.view("v")
view.set_map_reduce(lambda doc, emit: emit(doc["_id"]))
live = view.live_query(lambda rows: None)
cblite.set_log_callback(lambda domain, level, message: None)
sizes = {{live_set.name: len(live_set) for live_set in s.EXIT_ORDER}}
assert sizes == {{s.LOG_CALLBACK.name: 1, s.DATABASES.name: 1, s.LIVE_QUERIES.name: 1,
                  s.REPLICATORS.name: 0, s.LISTENERS.name: 1, s.BROWSERS.name: 0}}, sizes
s._stop_everything()
assert [len(live_set) for live_set in s.EXIT_ORDER] == [0, 1, 0, 0, 0, 0]
assert not token.active and not live.running and cblite.get_log_callback() is None
db.put({{"a": 1}}, "x")           # the validator is gone, the database still open
assert "x" in db and db.is_open
db.close()
assert len(s.DATABASES) == 0
print("ok")
"""
    r = run_isolated(code, timeout=60)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr[-3000:]
