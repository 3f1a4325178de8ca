"""Disk full through the C ABI and over HTTP: 507 (CBL_INSUFFICIENT_STORAGE; CouchDB's
error body with "insufficient_storage"), every write acknowledged before it kept, a sound
database, and the same handle (the same listener) writing again once space is freed."""
import http.client
import json
import os

import cblite
from conftest import fill

BODY = {"s": "x" * 8000}


def test_c_abi_reports_507_and_writes_again_once_space_is_freed(small_disk):
    fill(os.path.join(small_disk, "filler"), 400_000)
    db = cblite.Database("full", small_disk)
    coll = db.default_collection
    acked = {}
    error = None
    for i in range(1000):
        try:
            acked["d%d" % i] = coll.put(dict(BODY), "d%d" % i)[1]
        except cblite.CBLiteError as e:
            error = e
            break
    assert isinstance(error, cblite.InsufficientStorage), error
    assert error.code == 507 and cblite.status_name(507) == "insufficient storage"
    assert len(acked) > 5
    # An attachment and a transaction fail the same way, leaving nothing behind.
    for write in (lambda: coll.set_attachment("att", "a", os.urandom(500_000)),
                  lambda: _transaction(db, coll)):
        try:
            write()
            raise AssertionError("a write on a full disk succeeded")
        except cblite.InsufficientStorage:
            pass
    assert db.integrity_check() == []
    for doc_id, rev in acked.items():
        assert coll.get(doc_id)["_rev"] == rev
    # Space back: the same handle.
    os.unlink(os.path.join(small_disk, "filler"))
    coll.put(dict(BODY), "after")
    coll.set_attachment("att", "a", b"y" * 100_000)
    assert coll.get_attachment("att", "a") == b"y" * 100_000
    assert len(coll) == len(acked) + 2
    assert db.integrity_check() == []
    db.close()
    with cblite.Database("full", small_disk) as again:
        assert len(again.default_collection) == len(acked) + 2
        assert again.integrity_check() == []


def _transaction(db, coll):
    with db.transaction():
        for i in range(30):
            coll.put(dict(BODY), "t%d" % i)


def _request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def test_listener_answers_507_and_serves_again_once_space_is_freed(small_disk):
    with cblite.Server(directory=small_disk) as server:
        port = server.port
        assert _request(port, "PUT", "/db")[0] == 201
        assert _request(port, "PUT", "/db/first", json.dumps(BODY))[0] == 201
        fill(os.path.join(small_disk, "filler"), 300_000)
        acked = []
        status = body = None
        for i in range(1000):
            status, body = _request(port, "PUT", "/db/d%d" % i, json.dumps(BODY))
            if status != 201:
                break
            acked.append("d%d" % i)
        assert status == 507, (status, body)
        assert json.loads(body)["error"] == "insufficient_storage"
        status, body = _request(port, "PUT", "/newdb")
        assert status == 507, (status, body)
        # An attachment upload, standalone and inside a multipart document, is a 507 too.
        status, body = _request(port, "PUT", "/db/att/a.bin", os.urandom(600_000),
                                {"Content-Type": "application/octet-stream"})
        assert status == 507, (status, body)
        data = os.urandom(600_000)
        meta = {"_attachments": {"a.bin": {"follows": True, "content_type": "application/octet-stream",
                                           "length": len(data)}}}
        multipart = (b"--xyz\r\nContent-Type: application/json\r\n\r\n" + json.dumps(meta).encode()
                     + b"\r\n--xyz\r\n\r\n" + data + b"\r\n--xyz--")
        status, body = _request(port, "PUT", "/db/mp", multipart,
                                {"Content-Type": 'multipart/related; boundary="xyz"'})
        assert status == 507, (status, body)
        assert _request(port, "GET", "/db/mp")[0] == 404
        # Reads go on, and so does the rest of the server.
        assert _request(port, "GET", "/db/first")[0] == 200
        for doc_id in acked:
            assert _request(port, "GET", "/db/" + doc_id)[0] == 200
        assert _request(port, "GET", "/_all_dbs")[0] == 200
        os.unlink(os.path.join(small_disk, "filler"))
        assert _request(port, "PUT", "/db/after", json.dumps(BODY))[0] == 201
        assert _request(port, "PUT", "/newdb")[0] == 201
        status, _ = _request(port, "PUT", "/db/att/a.bin", b"z" * 100_000, {"Content-Type": "application/octet-stream"})
        assert status == 201
        assert _request(port, "GET", "/db/att/a.bin")[1] == b"z" * 100_000
    with cblite.Database("db", small_disk, create=False) as db:
        assert db.integrity_check() == []
        assert len(db.default_collection) == len(acked) + 3


def test_listener_on_a_directory_made_read_only(small_disk):
    """A read-only bind mount over the served directory: what needs a new file there
    (a new database, an attachment's file) fails with a clear error; reads go on."""
    import subprocess
    with cblite.Server(directory=small_disk) as server:
        port = server.port
        assert _request(port, "PUT", "/db")[0] == 201
        assert _request(port, "PUT", "/db/doc", json.dumps(BODY))[0] == 201
        r = subprocess.run(["mount", "--bind", "-o", "ro", small_disk, small_disk], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        try:
            status, body = _request(port, "PUT", "/newdb")
            assert status in (403, 500), (status, body)
            assert "read-only" in json.loads(body)["reason"].lower() or "read" in json.loads(body)["reason"].lower(), body
            status, body = _request(port, "PUT", "/db/att/a.bin", b"q" * 10_000, {"Content-Type": "application/octet-stream"})
            assert status == 403, (status, body)
            assert "read-only" in json.loads(body)["reason"], body
            assert _request(port, "GET", "/db/doc")[0] == 200
            assert _request(port, "GET", "/")[0] == 200
        finally:
            subprocess.run(["umount", small_disk], check=False)
        status, _ = _request(port, "PUT", "/db/att/a.bin", b"q" * 10_000, {"Content-Type": "application/octet-stream"})
        assert status == 201


def test_replication_into_a_full_disk_stops_with_507_and_completes_later(small_disk, tmp_path):
    """A pull into a database on a disk that fills up: the replication stops with 507
    (the target's documents and checkpoint as they were), and a new run once space is
    freed brings everything."""
    source = cblite.Database("source", str(tmp_path / "src"))
    src = source.default_collection
    with source.transaction():
        for i in range(300):
            src.put(dict(BODY), "d%03d" % i)
    target = cblite.Database("target", small_disk)
    with cblite.Server() as server:
        server.serve("source", source)
        fill(os.path.join(small_disk, "filler"), 600_000)
        with target.replicate(server.url + "source", direction="pull") as r:
            r.wait(timeout=60)
            status = r.status()
        assert status["activity"] == "stopped", status
        assert status.get("error", {}).get("status") == 507, status
        assert target.integrity_check() == []
        pulled = len(target.default_collection)
        assert pulled < 300, pulled
        os.unlink(os.path.join(small_disk, "filler"))
        with target.replicate(server.url + "source", direction="pull") as r:
            r.wait(timeout=60)
            status = r.status()
        assert "error" not in status, status
        assert len(target.default_collection) == 300
        assert target.integrity_check() == []
    target.close()
    source.close()
