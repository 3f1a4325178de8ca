"""The listener started from Python (cblite.Server over cbl_server_*), spoken to with
http.client over real sockets — and two peers synced through it with the replication
surface: one database pulls another's changes over HTTP."""

import base64
import hashlib
import http.client
import json
import os
import socket
import ssl

import pytest

import cblite


def request(server, method, path, body=None, headers=None, tls=False):
    host, port = "127.0.0.1", server.port
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE      # the anonymous identity is pinned instead
        conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=10)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=10)
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    raw = resp.read()
    peer = conn.sock.getpeercert(binary_form=True) if tls else None
    conn.close()
    return resp.status, (json.loads(raw) if raw else None), peer


def test_serves_a_directory_and_a_given_handle(dbdir, db):
    db.default_collection.put({"n": 1}, doc_id="a")
    other = cblite.Database("elsewhere", directory=os.path.join(dbdir, "other"))
    other.default_collection.put({"n": 2}, doc_id="b")
    with cblite.Server(directory=str(dbdir)) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/"
        assert server.port > 0
        assert server.tls_fingerprint is None
        status, info, _ = request(server, "GET", "/" + db.name)
        assert status == 200 and info["doc_count"] == 1 and info["db_name"] == db.name
        assert request(server, "GET", "/elsewhere")[0] == 404
        server.serve("elsewhere", other)
        status, doc, _ = request(server, "GET", "/elsewhere/b")
        assert status == 200 and doc["n"] == 2
        # A write over HTTP is seen through the application's handle.
        status, res, _ = request(server, "PUT", "/elsewhere/c", {"n": 3})
        assert status == 201 and res["ok"] is True
        assert other.default_collection["c"]["n"] == 3
        # Closing the application's handle stops serving it.
        other.close()
        assert request(server, "GET", "/elsewhere/b")[0] == 404
    with pytest.raises(cblite.BadRequest):
        server.port      # stopped


def test_stop_releases_the_port(dbdir):
    server = cblite.Server(directory=str(dbdir))
    port = server.port
    server.stop()
    server.stop()        # again: nothing
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.close()
    again = cblite.Server(directory=str(dbdir), port=port)
    assert again.port == port
    again.stop()


def test_users_and_read_only(dbdir, db):
    with cblite.Server(directory=str(dbdir), users={"alice": "secret"}, read_only=True) as server:
        assert request(server, "GET", "/" + db.name)[0] == 401
        bad = {"Authorization": "Basic " + base64.b64encode(b"alice:wrong").decode()}
        assert request(server, "GET", "/" + db.name, headers=bad)[0] == 401
        good = {"Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()}
        assert request(server, "GET", "/" + db.name, headers=good)[0] == 200
        status, body, _ = request(server, "PUT", f"/{db.name}/x", {"n": 1}, headers=good)
        assert status == 403 and body["error"] == "forbidden"
        assert "x" not in db.default_collection


def test_tls_with_a_pinned_anonymous_identity(dbdir, db):
    with cblite.Server(directory=str(dbdir), tls={"anonymous": True}) as server:
        fingerprint = server.tls_fingerprint
        assert server.url.startswith("https://") and len(fingerprint) == 64
        status, info, cert = request(server, "GET", "/" + db.name, tls=True)
        assert status == 200 and info["db_name"] == db.name
        assert hashlib.sha256(cert).hexdigest() == fingerprint
    with cblite.Server(directory=str(dbdir), tls={"anonymous": True}) as again:
        assert again.tls_fingerprint == fingerprint      # made once, kept in the directory


def test_bad_configurations(dbdir):
    with pytest.raises(cblite.BadRequest):
        cblite.Server(directory=str(dbdir), colour="blue")
    with pytest.raises(cblite.BadRequest):
        cblite.Server(directory=str(dbdir), port="80")
    with pytest.raises(cblite.BadRequest):   # JSON carries the NUL; the listener refuses it
        cblite.Server(directory=str(dbdir) + "\0x")
    with pytest.raises(cblite.BadRequest):
        cblite.Server(directory=str(dbdir), users={"al\0ice": "x"})
    with cblite.Server(directory=str(dbdir)) as first:
        with pytest.raises(cblite.CBLiteError):
            cblite.Server(directory=str(dbdir), port=first.port)


def test_hardening_limits_cross_the_abi(dbdir, db):
    """The limits of issue 31 given from Python reach the listener: a header-count cap
    (431), an attachment limit apart from the body limit (413 past it, and an attachment
    larger than max_body_bytes within it), and short header and body time-boxes."""
    limits = {"max_header_count": 5, "max_attachment_bytes": 200_000, "max_body_bytes": 100_000, "header_timeout_ms": 300,
              "body_timeout_ms": 300, "body_min_bytes_per_second": 1000}
    with cblite.Server(directory=str(dbdir), limits=limits) as server:
        many = {"X-%d" % i: "y" for i in range(6)}
        assert request(server, "GET", "/" + db.name, headers=many)[0] == 431
        put = {"Content-Type": "application/octet-stream"}
        assert request(server, "PUT", f"/{db.name}/d/big", b"x" * 150_000, headers=put)[0] == 201
        assert request(server, "PUT", f"/{db.name}/e/big", b"x" * 250_000, headers=put)[0] == 413
        assert len(db.default_collection.get_attachment("d", "big")) == 150_000
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")       # and never the end of the head
        assert slow.recv(100) == b""                              # cut off by the time-box
        slow.close()
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        slow.sendall(f"PUT /{db.name}/s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: 50\r\n\r\n{".encode())           # and the rest never comes
        assert slow.recv(100) == b""                              # cut off: the body is too slow
        slow.close()
    with pytest.raises(cblite.BadRequest):
        cblite.Server(directory=str(dbdir), limits={"max_header_count": 0})


def test_two_peers_sync_over_http(dbdir):
    """Peer A serves its database; peer B pulls everything A has — revisions, a conflict,
    a tombstone, an attachment — using only HTTP to A and the replication surface on B,
    the way a replicator does. Afterwards both hold the same trees and winners."""
    with cblite.Database("peer-a", directory=os.path.join(dbdir, "a")) as a, \
            cblite.Database("peer-b", directory=os.path.join(dbdir, "b")) as b:
        pull_over_http(a, b)


def pull_over_http(a, b):
    ca, cb = a.default_collection, b.default_collection
    _, r1 = ca.put({"v": 1}, doc_id="doc")
    ca.put({"v": 2}, doc_id="doc", parent_rev=r1)
    ca.put_existing_revisions([{"_id": "doc", "_rev": "2-ffff", "v": "theirs",
                                "_revisions": {"start": 2, "ids": ["ffff", r1.split("-")[1]]}}])
    _, gone = ca.put({"x": 1}, doc_id="gone")
    ca.delete("gone", gone)
    ca.put({"_attachments": {"t.txt": {"content_type": "text/plain",
                                       "data": base64.b64encode(b"hello").decode()}}}, doc_id="att")
    with cblite.Server(directory=os.path.dirname(a.path)) as server:
        status, feed, _ = request(server, "GET", "/peer-a/_changes?style=all_docs&since=0")
        assert status == 200
        wanted = {row["id"]: [c["rev"] for c in row["changes"]] for row in feed["results"]}
        status, diff, _ = request(server, "POST", "/peer-a/_revs_diff", wanted)   # asked of A: nothing missing
        assert status == 200 and diff == {}
        missing = cb.revs_diff(wanted)
        assert set(missing) == {"doc", "gone", "att"}
        docs = [{"id": doc_id, "rev": rev} for doc_id, entry in missing.items() for rev in entry["missing"]]
        status, got, _ = request(server, "POST", "/peer-a/_bulk_get?revs=true&attachments=true", {"docs": docs})
        assert status == 200
        revisions = [item["ok"] for result in got["results"] for item in result["docs"]]
        assert len(revisions) == len(docs)
        results = cb.put_existing_revisions(revisions)
        assert all("error" not in r for r in results), results
        assert request(server, "PUT", "/peer-a/_local/pull-from-a", {"last_seq": feed["last_seq"]})[0] == 201
    for doc_id in ("doc", "gone", "att"):
        assert cb.open_revs(doc_id) == ca.open_revs(doc_id)
    assert cb["doc"]["_rev"] == ca["doc"]["_rev"]
    assert cb.revs_diff(wanted) == {}
    assert cb.get_attachment("att", "t.txt") == b"hello"


def test_uuid_algorithm_setting_and_server_side_replication(dbdir, db):
    """The "uuids" setting (CouchDB's algorithms) and POST /_replicate between two
    databases of the server, through cbl_server_start."""
    db.default_collection.put({"n": 1}, doc_id="a")
    with cblite.Server(directory=str(dbdir), uuids={"algorithm": "utc_id", "utc_id_suffix": "-py"}) as server:
        status, body, _ = request(server, "GET", "/_uuids?count=2")
        assert status == 200 and all(u.endswith("-py") and len(u) == 17 for u in body["uuids"])
        status, body, _ = request(server, "POST", "/_replicate", {"source": db.name, "target": "copy", "create_target": True})
        assert status == 200 and body["ok"] is True and body["history"][0]["docs_written"] == 1
        assert request(server, "GET", "/copy/a")[1]["n"] == 1
    with pytest.raises(cblite.BadRequest):
        cblite.Server(directory=str(dbdir), uuids={"algorithm": "nonsense"})
