"""The replicator through the bindings (cblite.Replicator over cbl_replicator_*), against
real peers over real sockets: a local database replicates with another one served by
cblite.Server on 127.0.0.1.

Waits are generous polls (up to ~10-30 s) and never fixed sleeps, so that a slow machine
makes the tests slower, not flaky.
"""

import ctypes
import json
import gc
import logging
import os
import socket
import threading
import time

import pytest

import cblite
from cblite import _lib
from cblite import replicator as replicator_module
from helpers import eventually, run_isolated

LIB = _lib.lib
TIMEOUT = 30          # seconds a one-shot replication may take
POLL = 10             # seconds a continuous replication may take to deliver a change


def has(db, doc_id):
    try:
        db.get(doc_id)
        return True
    except cblite.NotFound:
        return False


def free_port():
    """A port nobody listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Peers:
    """A local database, a remote one, and the server that serves the remote as
    "remote"."""

    def __init__(self, dbdir, users=None):
        self.dbdir = dbdir
        self.local = cblite.Database("local", os.path.join(dbdir, "local"))
        self.remote = cblite.Database("remote", os.path.join(dbdir, "remote"))
        options = {"users": users} if users else {}
        self.server = cblite.Server(**options)
        self.server.serve("remote", self.remote)
        self.url = self.server.url + "remote"

    def close(self):
        replicator_module.stop_all_replicators()
        # (1 s: the listener waits for a stopped continuous pull's longpoll otherwise)
        self.server.stop(timeout=1)
        for db in (self.local, self.remote):
            if db.is_open:
                db.close()


@pytest.fixture
def peers(dbdir):
    p = Peers(dbdir)
    yield p
    p.close()


@pytest.fixture
def guarded_peers(dbdir):
    p = Peers(dbdir, users={"alice": "secret"})
    yield p
    p.close()


def run(db, url, **options):
    """A one-shot replication run to its end; returns its final status."""
    with db.replicate(url, **options) as r:
        assert r.wait(timeout=TIMEOUT), "the one-shot replication did not stop"
        status = r.status()
    assert status["activity"] == "stopped"
    return status


def ok(status):
    assert "error" not in status, status
    return status


# ---- declarations ----------------------------------------------------------------------

def test_functions_are_declared_and_exported():
    for name in replicator_module.FUNCTIONS:
        assert name in _lib.FUNCTIONS, name
        assert getattr(LIB, name).argtypes is not None, name
        assert name not in cblite.missing_functions
    start = _lib.FUNCTIONS["cbl_replicator_start"][1]
    assert start[2] is replicator_module.STATUS_FN and start[3] is replicator_module.DOCUMENT_FN
    assert "Replicator" in cblite.__all__ and cblite.Replicator is replicator_module.Replicator
    assert "ReplicationEvent" in cblite.__all__
    assert callable(cblite.Database.replicate) and callable(cblite.Collection.replicate)


# ---- push, pull, both ----------------------------------------------------------------------

def test_push(peers):
    local, remote = peers.local, peers.remote
    for i in range(5):
        local.put({"n": i}, f"doc-{i}")
    status = ok(run(local, peers.url, direction="push"))
    assert status["documents_pushed"] == 5 and status["documents_pulled"] == 0
    assert status["completed"] == status["total"] == 5
    for i in range(5):
        assert remote[f"doc-{i}"]["n"] == i
        assert remote[f"doc-{i}"]["_rev"] == local[f"doc-{i}"]["_rev"]


def test_pull(peers):
    local, remote = peers.local, peers.remote
    for i in range(3):
        remote.put({"n": i}, f"r-{i}")
    local.put({"stays": "here"}, "local-only")
    status = ok(run(local, peers.url, direction="pull"))
    assert status["documents_pulled"] == 3 and status["documents_pushed"] == 0
    assert [local[f"r-{i}"]["n"] for i in range(3)] == [0, 1, 2]
    assert not has(remote, "local-only")        # a pull sends nothing


def test_both_with_a_conflict_then_nothing_to_do(peers):
    local, remote = peers.local, peers.remote
    _, base = local.put({"v": "base"}, "doc")
    ok(run(local, peers.url, direction="push"))
    assert remote["doc"]["_rev"] == base
    _, mine = local.put({"v": "local edit"}, "doc", parent_rev=base)
    _, theirs = remote.put({"v": "remote edit"}, "doc", parent_rev=base)
    assert mine != theirs
    local.put({"from": "local"}, "only-local")
    remote.put({"from": "remote"}, "only-remote")

    status = ok(run(local, peers.url))                    # direction "both" is the default
    assert status["documents_pushed"] == 2 and status["documents_pulled"] == 2
    lc, rc = local.default_collection, remote.default_collection
    assert lc["doc"]["_rev"] == rc["doc"]["_rev"] in (mine, theirs)
    assert sorted(lc.conflicts("doc")) == sorted(rc.conflicts("doc")) == sorted([mine, theirs])
    assert lc.conflicts("doc")[0] == rc.conflicts("doc")[0]          # the same winner
    assert lc["only-remote"]["from"] == "remote" and rc["only-local"]["from"] == "local"

    again = ok(run(local, peers.url))
    assert again["documents_pushed"] == 0 and again["documents_pulled"] == 0


def test_deletes_both_ways(peers):
    local, remote = peers.local, peers.remote
    local.put({"n": 1}, "a")
    remote.put({"n": 2}, "b")
    ok(run(local, peers.url))
    assert has(remote, "a") and has(local, "b")
    gone_a = local.delete_document("a")
    gone_b = remote.delete_document("b")
    events = []
    ok(run(local, peers.url, document_events=True, on_documents=events.extend))
    assert not has(remote, "a") and not has(local, "b")
    assert remote.get("a", deleted=True)["_rev"] == gone_a
    assert local.get("b", deleted=True)["_rev"] == gone_b
    assert {(e["direction"], e["id"], e.get("deleted")) for e in events} == {
        ("push", "a", True), ("pull", "b", True)}


def test_attachments_both_ways(peers):
    local, remote = peers.local, peers.remote
    big = os.urandom(2 * 1024 * 1024 + 17)
    small = b"a small text attachment from the remote side"
    local.set_attachment("photo", "big.bin", big, content_type="application/octet-stream")
    remote.set_attachment("note", "note.txt", small, content_type="text/plain")
    status = ok(run(local, peers.url))
    assert status["documents_pushed"] == 1 and status["documents_pulled"] == 1
    assert remote.get_attachment("photo", "big.bin") == big
    assert local.get_attachment("note", "note.txt") == small
    assert remote.attachments("photo")["big.bin"]["digest"] == \
        local.attachments("photo")["big.bin"]["digest"]
    assert local.attachments("note")["note.txt"]["content_type"] == "text/plain"
    # An update that keeps the attachment does not lose it on the way.
    doc = local["photo"]
    local.put({**doc, "caption": "updated"}, "photo")
    ok(run(local, peers.url, direction="push"))
    assert remote["photo"]["caption"] == "updated"
    assert remote.get_attachment("photo", "big.bin") == big


def test_doc_ids(peers):
    local, remote = peers.local, peers.remote
    for name in ("x", "y", "z"):
        local.put({"name": name}, name)
        remote.put({"name": name}, "r" + name)
    status = ok(run(local, peers.url, doc_ids=["x", "ry"]))
    assert status["documents_pushed"] == 1 and status["documents_pulled"] == 1
    assert has(remote, "x") and not has(remote, "y") and not has(remote, "z")
    assert has(local, "ry") and not has(local, "rx") and not has(local, "rz")


def test_named_push_filter(peers):
    local, remote = peers.local, peers.remote
    seen_params = []

    def by_kind(doc, params):
        seen_params.append(params)
        return doc.get("kind") == params.get("kind")

    local.set_filter("by_kind", by_kind)
    local.put({"kind": "public", "n": 1}, "p1")
    local.put({"kind": "private", "n": 2}, "s1")
    local.put({"kind": "public", "n": 3}, "p2")
    with local.replicate(peers.url, direction="push", filter="by_kind",
                         filter_params={"kind": "public"}) as r:
        assert r.wait(TIMEOUT)
        assert ok(r.status())["documents_pushed"] == 2
        assert has(remote, "p1") and has(remote, "p2") and not has(remote, "s1")
        assert seen_params and all(p == {"kind": "public"} for p in seen_params)
        # The filter applies to what is pending too.
        local.put({"kind": "private", "n": 4}, "s2")
        local.put({"kind": "public", "n": 5}, "p3")
        assert r.pending_document_ids() == ["p3"]
        assert not r.is_document_pending("s2")


def test_unregistered_push_filter_stops_with_404(peers):
    peers.local.put({"n": 1}, "doc")
    status = run(peers.local, peers.url, direction="push", filter="never-registered")
    assert status["error"]["status"] == 404 and "never-registered" in status["error"]["message"]
    assert not has(peers.remote, "doc")


def test_create_target(dbdir):
    served = os.path.join(dbdir, "served")
    os.makedirs(served)
    with cblite.Database("local", os.path.join(dbdir, "local")) as local, \
            cblite.Server(directory=served) as server:
        local.put({"n": 1}, "doc")
        url = server.url + "made-by-push"
        missing = run(local, url, direction="push")
        assert missing["error"]["status"] == 404
        assert not cblite.Database.exists("made-by-push", served)
        ok(run(local, url, direction="push", create_target=True))
        assert cblite.Database.exists("made-by-push", served)
        server.stop()
        with cblite.Database("made-by-push", served, create=False) as made:
            assert made["doc"]["n"] == 1


def test_named_collection(peers):
    local, remote = peers.local, peers.remote
    birds = local.create_collection("birds", scope="zoo")
    remote_birds = remote.create_collection("birds", scope="zoo")
    birds.put({"color": "yellow"}, "tweety")
    local.put({"not": "a bird"}, "default-doc")
    ok(run(local, peers.url + ".zoo.birds", direction="push", collection="zoo.birds"))
    assert remote_birds["tweety"]["color"] == "yellow"
    assert not has(remote, "default-doc")
    remote_birds.put({"color": "blue"}, "bluebird")
    with birds.replicate(peers.url + ".zoo.birds", direction="pull") as r:
        assert r.wait(TIMEOUT) and "error" not in r.status()
    assert birds["bluebird"]["color"] == "blue"


# ---- continuous ----------------------------------------------------------------------------

def test_continuous_both_ways_then_stop(peers):
    local, remote = peers.local, peers.remote
    r = local.replicate(peers.url, continuous=True)
    try:
        assert eventually(lambda: r.status()["activity"] == "idle", POLL), r.status()
        local.put({"written": "locally"}, "from-local")
        assert eventually(lambda: has(remote, "from-local"), POLL), r.status()
        remote.put({"written": "remotely"}, "from-remote")
        assert eventually(lambda: has(local, "from-remote"), POLL), r.status()
        assert local["from-remote"]["_rev"] == remote["from-remote"]["_rev"]
        assert r.is_running
        assert r.wait(timeout=0.3) is False          # continuous: still running
    finally:
        r.stop()
    assert not r.is_running
    assert r.status()["activity"] == "stopped"       # the last status, after release
    assert r.wait() is True
    r.stop()                                         # again: nothing
    # Stopped means stopped: a new change no longer travels.
    local.put({"n": 1}, "after-stop")
    time.sleep(1.5)
    assert not has(remote, "after-stop")


def test_context_manager_stops_a_continuous_replicator(peers):
    with peers.local.replicate(peers.url, continuous=True) as r:
        assert eventually(lambda: r.status()["activity"] == "idle", POLL)
        assert replicator_module.live_replicator_count() >= 1
    assert not r.is_running and r.status()["activity"] == "stopped"
    with pytest.raises(cblite.BadRequest):
        r.pending_document_ids()                   # released


def test_closing_the_database_stops_a_continuous_replicator(peers):
    local, remote = peers.local, peers.remote
    statuses = []
    r = local.replicate(peers.url, continuous=True, on_status=statuses.append)
    assert eventually(lambda: r.status()["activity"] == "idle", POLL)
    assert replicator_module.live_replicator_count() == 1
    local.close()
    assert statuses[-1]["activity"] == "stopped"
    assert not r.is_running
    assert r.wait(timeout=5) is True
    assert r.status()["activity"] == "stopped"
    events = list(r.events(timeout=5))             # ends: nothing more will come
    assert events[-1] == ("status", statuses[-1])
    r.stop()                                       # harmless after close
    r.stop()
    assert replicator_module.live_replicator_count() == 0   # released with the database
    remote.put({"n": 1}, "after-close")            # nothing breaks on the other side
    assert remote["after-close"]["n"] == 1


# ---- status, pending documents, events -----------------------------------------------------

def test_pending_documents_before_and_after_a_push(guarded_peers):
    local, remote = guarded_peers.local, guarded_peers.remote
    for name in ("first", "second", "third"):
        local.put({"name": name}, name)
    # A push refused by the peer (wrong password) sends nothing: everything is pending.
    with local.replicate(guarded_peers.url, direction="push", auth=("alice", "wrong"),
                         remote_uuid="the-remote") as r:
        assert r.wait(TIMEOUT)
        assert r.status()["error"]["status"] == 401
        assert r.pending_document_ids() == ["first", "second", "third"]
        assert r.is_document_pending("second") is True
        assert r.is_document_pending("never-written") is False
    with local.replicate(guarded_peers.url, direction="push", auth=("alice", "secret"),
                         remote_uuid="the-remote") as r:
        assert r.wait(TIMEOUT)
        assert ok(r.status())["documents_pushed"] == 3
        assert r.pending_document_ids() == []
        assert r.is_document_pending("second") is False
        local.put({"name": "fourth"}, "fourth")          # after the run: pending again
        local.put({"name": "second", "v": 2}, "second", parent_rev=local["second"]["_rev"])
        assert r.pending_document_ids() == ["fourth", "second"]
        assert r.is_document_pending("second") and not r.is_document_pending("first")
        with pytest.raises(ValueError):
            r.is_document_pending("nul\0id")
        with pytest.raises(TypeError):
            r.is_document_pending(42)
    assert has(remote, "third") and not has(remote, "fourth")


def test_pending_documents_of_a_pull_replicator_is_an_error(peers):
    with peers.local.replicate(peers.url, direction="pull") as r:
        with pytest.raises(cblite.BadRequest):
            r.pending_document_ids()
        with pytest.raises(cblite.BadRequest):
            r.is_document_pending("x")
        assert r.wait(TIMEOUT)


def test_events_iterator_ends_with_the_stopped_status(peers):
    local = peers.local
    for i in range(3):
        local.put({"n": i}, f"e-{i}")
    r = local.replicate(peers.url, direction="push", document_events=True)
    try:
        events = list(r.events(timeout=TIMEOUT))     # ends by itself: a one-shot run
    finally:
        r.stop()
    assert events, "no events"
    assert all(isinstance(e, cblite.ReplicationEvent) for e in events)
    kinds = {e.kind for e in events}
    assert kinds == {"status", "documents"}
    last = events[-1]
    assert last.kind == "status" and last.data["activity"] == "stopped"
    assert last.data["documents_pushed"] == 3
    assert [e for e in events[:-1] if e.kind == "status" and e.data["activity"] == "stopped"] == []
    pushed = sorted(d["id"] for e in events if e.kind == "documents" for d in e.data)
    assert pushed == ["e-0", "e-1", "e-2"]
    assert list(r.events(timeout=1)) == []           # drained: nothing more


def test_events_of_a_continuous_replicator_end_after_stop(peers):
    r = peers.local.replicate(peers.url, continuous=True)
    assert eventually(lambda: r.status()["activity"] == "idle", POLL)
    drained = []
    with pytest.raises(TimeoutError):        # running and idle: no event ends the iteration
        for event in r.events(timeout=0.5):
            drained.append(event)
    assert drained and drained[0].kind == "status"
    assert drained[-1].data["activity"] == "idle"
    r.stop()
    rest = list(r.events(timeout=POLL))      # finishes once stopped and drained
    assert rest and rest[-1].kind == "status" and rest[-1].data["activity"] == "stopped"


def test_on_documents_with_document_events(peers):
    local, remote = peers.local, peers.remote
    local.put({"n": 1}, "up")
    _, rev = remote.put({"n": 2}, "down")
    batches = []
    threads = set()

    def on_documents(docs):
        threads.add(threading.get_ident())
        batches.append(docs)

    ok(run(local, peers.url, document_events=True, on_documents=on_documents))
    docs = [d for batch in batches for d in batch]
    assert {(d["direction"], d["id"]) for d in docs} == {("push", "up"), ("pull", "down")}
    assert next(d for d in docs if d["id"] == "down")["rev"] == rev
    assert all("error" not in d for d in docs)
    assert threading.get_ident() not in threads      # called on replication threads
    # Without document_events only failures are delivered: none here.
    local.put({"n": 3}, "up-2")
    quiet = []
    ok(run(local, peers.url, on_documents=quiet.append))
    assert quiet == [] and has(remote, "up-2")


def test_on_status_sees_progress_and_the_final_status(peers):
    local = peers.local
    local.put({"n": 1}, "one")
    statuses = []
    with local.replicate(peers.url, direction="push", on_status=statuses.append) as r:
        assert r.wait(TIMEOUT)
        final = r.status()
    assert statuses[-1] == final and final["activity"] == "stopped"
    assert any(s["activity"] in ("connecting", "busy") for s in statuses[:-1])
    assert set(final) >= {"activity", "completed", "total", "documents_pushed",
                          "documents_pulled", "document_failures"}


def test_a_callback_that_raises_does_not_kill_the_replicator(peers, caplog):
    local, remote = peers.local, peers.remote
    calls = {"status": 0, "documents": 0}

    def bad_status(status):
        calls["status"] += 1
        raise RuntimeError("status callback failure")

    def bad_documents(docs):
        calls["documents"] += 1
        raise KeyError("documents callback failure")

    with caplog.at_level(logging.ERROR, logger="cblite"):
        with local.replicate(peers.url, continuous=True, document_events=True,
                             on_status=bad_status, on_documents=bad_documents) as r:
            local.put({"n": 1}, "first")
            assert eventually(lambda: has(remote, "first"), POLL)
            local.put({"n": 2}, "second")             # it goes on after the exceptions
            assert eventually(lambda: has(remote, "second"), POLL)
            remote.put({"n": 3}, "third")
            assert eventually(lambda: has(local, "third"), POLL)
            assert r.is_running and "error" not in r.status()
    assert calls["status"] >= 2 and calls["documents"] >= 2
    messages = [rec.getMessage() for rec in caplog.records]
    assert any("status callback" in m for m in messages)
    assert any("documents callback" in m for m in messages)
    assert any(rec.exc_info and isinstance(rec.exc_info[1], RuntimeError) for rec in caplog.records)


def test_stop_from_inside_a_callback(peers):
    local = peers.local
    holder = {}
    stopped_in = []

    def on_status(status):
        r = holder.get("r")
        if r is not None and status["activity"] == "idle" and not stopped_in:
            stopped_in.append(threading.get_ident())
            r.stop()                                   # returns at once from a callback

    r = local.replicate(peers.url, continuous=True, on_status=on_status)
    holder["r"] = r
    if r.status()["activity"] == "idle" and not stopped_in:   # went idle before we looked
        local.put({"n": 1}, "nudge")
    events = list(r.events(timeout=POLL))
    assert stopped_in and stopped_in[0] != threading.get_ident()
    assert events[-1].kind == "status" and events[-1].data["activity"] == "stopped"
    assert not r.is_running
    r.stop()


def test_callback_objects_outlive_the_callers_references(peers):
    local, remote = peers.local, peers.remote
    got = []
    r = local.replicate(peers.url, continuous=True, document_events=True,
                        on_documents=lambda docs: got.extend(d["id"] for d in docs))
    del r
    gc.collect()
    local.put({"n": 1}, "after-gc")
    assert eventually(lambda: "after-gc" in got, POLL)
    assert has(remote, "after-gc")
    assert replicator_module.live_replicator_count() == 1
    replicator_module.stop_all_replicators()
    assert replicator_module.live_replicator_count() == 0


def test_repr_hides_the_password(guarded_peers):
    url = guarded_peers.url.replace("http://", "http://alice:secret@")
    with guarded_peers.local.replicate(url, direction="pull") as r:
        assert r.wait(TIMEOUT)
        assert ok(r.status())["activity"] == "stopped"
        text = repr(r)
        assert "secret" not in text and "alice" in text and "stopped" in text
        assert r.url == url and r.config["direction"] == "pull"


# ---- failures ------------------------------------------------------------------------------

def test_wrong_password_stops_with_401(guarded_peers):
    local = guarded_peers.local
    local.put({"n": 1}, "doc")
    for options in ({"auth": ("alice", "wrong")},
                    {"auth": {"type": "session", "username": "alice", "password": "wrong"}},
                    {}):                              # no credentials at all
        with local.replicate(guarded_peers.url, **options) as r:
            assert r.wait(TIMEOUT), options
            status = r.status()
        assert status["activity"] == "stopped", options
        assert status["error"]["status"] == 401, (options, status)
        assert status["error"]["message"]
        assert status["documents_pushed"] == 0
    assert not has(guarded_peers.remote, "doc")
    url = guarded_peers.url.replace("http://", "http://alice:wrong@")
    status = run(local, url)
    assert status["error"]["status"] == 401
    # The right password works, given either way.
    ok(run(local, guarded_peers.url, auth=("alice", "secret"), direction="push"))
    assert has(guarded_peers.remote, "doc")


def test_nobody_listening_stops_with_an_error(dbdir):
    with cblite.Database("lonely", dbdir) as db:
        db.put({"n": 1}, "doc")
        statuses = []
        r = db.replicate(f"http://127.0.0.1:{free_port()}/nobody", max_retries=1,
                         retry_initial_ms=50, retry_max_ms=100, on_status=statuses.append)
        try:
            assert r.wait(timeout=TIMEOUT)
            status = r.status()
        finally:
            r.stop()
        assert status["activity"] == "stopped"
        assert status["error"]["status"] == 0 and status["error"]["message"]
        assert statuses[-1]["activity"] == "stopped" and "error" in statuses[-1]


def test_missing_remote_database(peers):
    status = run(peers.local, peers.server.url + "no-such-db", direction="pull")
    assert status["error"]["status"] == 404


# ---- bad input -----------------------------------------------------------------------------

def test_bad_arguments_raise_before_anything_starts(peers):
    db, url = peers.local, peers.url
    db.default_collection                    # opened once, kept by the Database object
    count = cblite.instance_count()
    live = replicator_module.live_replicator_count()
    type_errors = [
        lambda: db.replicate(url, colour="blue"),                 # unknown option
        lambda: db.replicate(42),
        lambda: db.replicate(None),
        lambda: db.replicate(url.encode()),
        lambda: db.replicate(url, continuous="yes"),
        lambda: db.replicate(url, create_target=1),
        lambda: db.replicate(url, batch_size="10"),
        lambda: db.replicate(url, timeout_ms=True),
        lambda: db.replicate(url, doc_ids="abc"),                 # a str is not a list
        lambda: db.replicate(url, doc_ids=["a", 1]),
        lambda: db.replicate(url, channels=5),
        lambda: db.replicate(url, headers={"X-N": 1}),
        lambda: db.replicate(url, headers=["X-N"]),
        lambda: db.replicate(url, filter_params="kind=public"),
        lambda: db.replicate(url, direction=1),
        lambda: db.replicate(url, auth="alice:secret"),
        lambda: db.replicate(url, auth=("alice",)),
        lambda: db.replicate(url, on_status="not callable"),
        lambda: db.replicate(url, on_documents=42),
        lambda: db.replicate(url, collection=42),
        lambda: cblite.Replicator(db, 42),
        lambda: cblite.Replicator("not a collection", {"url": url}),
    ]
    for attempt in type_errors:
        with pytest.raises(TypeError):
            attempt()
    with pytest.raises(ValueError) as info:
        db.replicate(url + "\0/evil")                             # NUL in the URL
    assert not isinstance(info.value, cblite.CBLiteError)         # caught before C
    with pytest.raises(ValueError):
        cblite.Replicator(db, '{"url": "' + url + '"}\0garbage')
    with pytest.raises(cblite.NotFound):
        db.replicate(url, collection="no.such")
    assert cblite.instance_count() == count
    assert replicator_module.live_replicator_count() == live


def test_values_the_library_refuses(peers):
    db, url = peers.local, peers.url
    db.default_collection                    # opened once, kept by the Database object
    count = cblite.instance_count()
    refused = [
        ("not a url", {}),
        ("", {}),
        ("ftp://127.0.0.1/db", {}),
        ("http://", {}),
        ("http://127.0.0.1:99999/db", {}),
        (url, {"direction": "sideways"}),
        (url, {"batch_size": 0}),
        (url, {"timeout_ms": 1}),
        (url, {"heartbeat_ms": 10 ** 9}),
        (url, {"headers": {"Bad Name": "x"}}),
        (url, {"headers": {"X-Evil": "a\r\nInjected: 1"}}),
        (url, {"auth": {"type": "magic"}}),
        (url, {"auth": {"type": "basic", "username": "alice"}}),
        (url, {"tls": {"pinned_sha256": "00" * 32}}),             # tls on an http URL
        ("https://127.0.0.1:1/db", {"tls": {"pinned_sha256": "xyz"}}),
        ("https://127.0.0.1:1/db", {"tls": {"colour": "blue"}}),
        (url, {"channels": ["a"], "pull_filter": "ddoc/f"}),
    ]
    for bad_url, options in refused:
        with pytest.raises(cblite.BadRequest) as info:
            db.replicate(bad_url, **options)
        assert isinstance(info.value, ValueError)
        assert info.value.message, (bad_url, options)
    # The whole configuration given as is: the library refuses unknown keys itself.
    for config in ({"url": url, "colour": "blue"}, {"direction": "push"}, {"url": 5},
                   '{"url": ', "[]"):
        with pytest.raises(cblite.BadRequest):
            cblite.Replicator(db, config)
    assert cblite.instance_count() == count
    # After all that, a good replication still works.
    db.put({"n": 1}, "fine")
    ok(run(db, url, direction="push"))
    assert has(peers.remote, "fine")


def test_closed_database_and_released_collection(peers):
    db, url = peers.local, peers.url
    coll = db.default_collection
    coll.release()
    with pytest.raises(cblite.BadRequest):
        coll.replicate(url)
    db.close()
    with pytest.raises(cblite.BadRequest):
        db.replicate(url)


def test_replicator_of_another_database_object_collection(peers, dbdir):
    other = cblite.Database("other", dbdir)
    try:
        with pytest.raises(ValueError):
            peers.local.replicate(peers.url, collection=other.default_collection)
    finally:
        other.close()


# ---- TLS -------------------------------------------------------------------------------------

def test_tls_with_a_pinned_certificate(dbdir):
    remote_dir = os.path.join(dbdir, "tls-remote")
    with cblite.Database("local", os.path.join(dbdir, "tls-local")) as local, \
            cblite.Database("remote", remote_dir) as remote, \
            cblite.Server(directory=remote_dir, tls={"anonymous": True}) as server:
        assert server.url.startswith("https://")
        local.put({"n": 1}, "secure")
        url = server.url + "remote"
        ok(run(local, url, direction="push", tls={"pinned_sha256": server.tls_fingerprint}))
        assert eventually(lambda: has(remote, "secure"), POLL)
        wrong = "0" * 64
        status = run(local, url, direction="push", tls={"pinned_sha256": wrong},
                     max_retries=0)
        assert "error" in status


# ---- the C functions directly ----------------------------------------------------------------

def test_raw_contract(peers):
    coll = peers.local.default_collection
    err = _lib.cbl_error()
    out = ctypes.c_void_p(0x1234)
    config = ('{"url": "%s", "direction": "push"}' % peers.url).encode()
    none_status = replicator_module.STATUS_FN()
    none_docs = replicator_module.DOCUMENT_FN()
    # Failures leave *out NULL and fill err.
    assert LIB.cbl_replicator_start(coll._h, None, none_status, none_docs, None,
                                    ctypes.byref(out), ctypes.byref(err)) == 400
    assert out.value is None and err.code == 400 and err.message
    out = ctypes.c_void_p(0x1234)
    assert LIB.cbl_replicator_start(None, config, none_status, none_docs, None,
                                    ctypes.byref(out), ctypes.byref(err)) == 400
    assert out.value is None
    assert LIB.cbl_replicator_start(coll._h, config, none_status, none_docs, None,
                                    None, ctypes.byref(err)) == 400
    # Both callbacks may be NULL.
    assert LIB.cbl_replicator_start(coll._h, config, none_status, none_docs, None,
                                    ctypes.byref(out), ctypes.byref(err)) == 0
    handle = out.value
    assert handle
    assert LIB.cbl_replicator_wait(handle, TIMEOUT * 1000, ctypes.byref(err)) == 0
    text = ctypes.c_void_p()
    assert LIB.cbl_replicator_status(handle, ctypes.byref(text), ctypes.byref(err)) == 0
    assert '"stopped"' in _lib.take_string(text)
    pending = ctypes.c_int(7)
    assert LIB.cbl_replicator_is_document_pending(handle, None, ctypes.byref(pending),
                                                  ctypes.byref(err)) == 400
    assert pending.value == 0
    LIB.cbl_replicator_stop(handle)
    # A released handle is invalid; stopping it again, or NULL, is ignored.
    assert LIB.cbl_replicator_wait(handle, 0, ctypes.byref(err)) == 400
    assert LIB.cbl_replicator_status(handle, ctypes.byref(text), ctypes.byref(err)) == 400
    assert text.value is None
    LIB.cbl_replicator_stop(handle)
    LIB.cbl_replicator_stop(None)
    # Another kind of handle given to stop stays valid.
    LIB.cbl_replicator_stop(coll._h)
    assert coll.count == 0


# ---- process lifetime ----------------------------------------------------------------------

def test_exit_with_running_replicators_is_clean(tmp_path):
    """A process that leaves continuous replicators (with Python callbacks) running and
    simply exits: they are stopped at exit, before the interpreter tears down."""
    code = f"""
        import atexit, os, time
        seen = []

        def report():          # registered before cblite's handlers: runs after them
            statuses = [s for s in seen if isinstance(s, dict)]
            print("last activity at exit:", statuses[-1]["activity"], flush=True)

        atexit.register(report)
        import cblite
        d = {str(tmp_path)!r}
        a = cblite.Database("a", os.path.join(d, "a"))
        b = cblite.Database("b", os.path.join(d, "b"))
        server = cblite.Server()
        server.serve("b", b)
        r = a.replicate(server.url + "b", continuous=True, document_events=True,
                        on_status=seen.append, on_documents=seen.append)
        a.put({{"n": 1}}, "doc")
        deadline = time.monotonic() + 10
        while "doc" not in b and time.monotonic() < deadline:
            time.sleep(0.05)
        print("replicated" if "doc" in b else "not replicated", flush=True)
        a.put({{"n": 2}}, "doc-2")          # more work in flight while exiting
    """
    result = run_isolated(code, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "replicated" in result.stdout and "not replicated" not in result.stdout
    assert "Fatal" not in result.stderr and "Traceback" not in result.stderr
    assert "last activity at exit: stopped" in result.stdout, result.stdout


def test_close_the_database_from_a_callback(peers):
    local = peers.local
    closed = threading.Event()

    def on_status(status):
        if status["activity"] == "idle" and not closed.is_set():
            closed.set()
            local.close()

    r = local.replicate(peers.url, continuous=True, on_status=on_status)
    if r.status()["activity"] == "idle" and not closed.is_set():
        peers.remote.put({"n": 1}, "nudge")   # went idle before we looked: wake it
    assert closed.wait(POLL)
    events = list(r.events(timeout=POLL))
    assert events[-1].data["activity"] == "stopped"
    assert not local.is_open and not r.is_running
    r.stop()


# ---- failed documents kept for a retry; empty attachments ------------------------------------

class RefusingPeer:
    """Just enough of CouchDB for a push, on 127.0.0.1: every revision is missing, and
    _bulk_docs refuses those of `refused` (as a validate_doc_update would)."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        self.refused = set()
        self.offered = []                      # the document IDs of every _bulk_docs
        self.checkpoints = {}
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, status, obj):
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self):
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")

            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/db/":
                    return self._answer(200, {"db_name": "db", "update_seq": "0"})
                if path in peer.checkpoints:
                    return self._answer(200, peer.checkpoints[path])
                self._answer(404, {"error": "not_found", "reason": "missing"})

            def do_PUT(self):
                doc = self._body()
                peer.checkpoints[self.path] = dict(doc, _rev="0-1")
                self._answer(201, {"ok": True, "rev": "0-1"})

            def do_POST(self):
                path, req = self.path.split("?")[0], self._body()
                if path == "/db/_revs_diff":
                    return self._answer(200, {k: {"missing": v} for k, v in req.items()})
                if path == "/db/_bulk_docs":
                    peer.offered += [d["_id"] for d in req["docs"]]
                    return self._answer(201, [{"id": d["_id"], "rev": d["_rev"], "error": "forbidden", "reason": "not here"}
                                              for d in req["docs"] if d["_id"] in peer.refused])
                self._answer(404, {"error": "not_found", "reason": "missing"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/db" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_failed_documents_wait_for_a_retry_until_cleared(peers):
    """A revision the peer refuses waits with the checkpoint: listed, counted in the
    status, offered again by the next run (which has no new change), and forgotten by
    clear_failed."""
    peer = RefusingPeer()
    try:
        local = peers.local
        local.put({"n": 1}, "no")
        rev = local["no"]["_rev"]
        peer.refused = {"no"}
        first = run(local, peer.url, direction="push")
        assert first["document_failures"] == 1 and first["documents_to_retry"] == 1
        with local.replicate(peer.url, direction="push") as r:
            assert r.failed_documents() == [{"direction": "push", "id": "no", "rev": rev}]
            assert r.wait(timeout=TIMEOUT)
            assert r.status()["documents_to_retry"] == 1
            assert peer.offered == ["no", "no"]          # offered again: the feed was past it
            r.clear_failed()
            assert r.failed_documents() == [] and r.status()["documents_to_retry"] == 0
        with pytest.raises(cblite.BadRequest):
            r.failed_documents()
        with pytest.raises(cblite.BadRequest):
            r.clear_failed()
        peer.refused = set()
        assert run(local, peer.url, direction="push")["documents_pushed"] == 0
        assert peer.offered == ["no", "no"]              # cleared: not offered again
        # A refusal that goes away: the next run delivers it.
        local.put({"n": 2}, "later")
        peer.refused = {"later"}
        assert run(local, peer.url, direction="push")["documents_to_retry"] == 1
        peer.refused = set()
        again = run(local, peer.url, direction="push")
        assert again["documents_pushed"] == 1 and again["documents_to_retry"] == 0
        assert peer.offered[-1] == "later"
    finally:
        replicator_module.stop_all_replicators()
        peer.stop()


def test_a_clean_run_leaves_nothing_to_retry(peers):
    peers.local.put({"n": 1}, "one")
    with peers.local.replicate(peers.url, direction="push") as r:
        assert r.wait(timeout=TIMEOUT)
        assert r.status()["documents_to_retry"] == 0 and r.failed_documents() == []


def test_an_empty_attachment_travels_inline(peers):
    """An empty attachment is served as "data": "" in the JSON, never as a zero-length
    multipart part (which CouchDB's replicator cannot read), and arrives empty."""
    import urllib.request
    peers.remote.set_attachment("e", "empty.txt", b"", content_type="text/plain")
    ok(run(peers.local, peers.url, direction="pull"))
    assert peers.local.get_attachment("e", "empty.txt") == b""
    request = urllib.request.Request(peers.url + "/e?attachments=true", headers={"Accept": "multipart/related"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
        body = answer.read()
        assert answer.headers.get_content_type() == "application/json"
    assert json.loads(body)["_attachments"]["empty.txt"]["data"] == ""
    peers.local.put({**peers.local["e"], "again": True}, "e")
    ok(run(peers.local, peers.url, direction="push"))
    assert peers.remote.get_attachment("e", "empty.txt") == b""
