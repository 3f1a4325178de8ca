"""`cblite serve` from the outside: a real HTTP client, plain and over TLS."""
import base64
import hashlib
import json
import os
import re
import signal
import socket
import threading
import time

from conftest import Server, port_is_free


def test_welcome_headers_and_database_lifecycle(serve):
    s = serve()
    status, h, body = s.request("GET", "/")
    assert status == 200
    assert json.loads(body)["couchdb"] == "Welcome"
    assert h["content-type"] == "application/json"
    assert h["cache-control"] == "must-revalidate"
    assert h["server"].startswith("cblite/")
    assert s.json("PUT", "/db") == (201, {"ok": True})
    status, err = s.json("PUT", "/db")
    assert (status, err["error"]) == (412, "file_exists")
    status, info = s.json("GET", "/db")
    assert status == 200 and info["db_name"] == "db" and info["doc_count"] == 0 and info["doc_del_count"] == 0
    rev = s.json("PUT", "/db/gone", {"x": 1})[1]["rev"]
    assert s.json("PUT", "/db/kept", {"x": 2})[0] == 201
    status, r = s.json("DELETE", "/db/gone?rev=" + rev)
    assert status == 200
    status, info = s.json("GET", "/db")
    assert (info["doc_count"], info["doc_del_count"]) == (1, 1)
    assert s.json("DELETE", "/db/kept?rev=" + s.json("GET", "/db/kept")[1]["_rev"])[0] == 200
    assert s.json("POST", "/db/_purge", {"gone": [r["rev"]]})[0] == 201     # a purged tombstone is not counted
    status, info = s.json("GET", "/db")
    assert (info["doc_count"], info["doc_del_count"]) == (0, 1)
    assert s.json("GET", "/_all_dbs") == (200, ["db"])
    assert s.json("GET", "/nope")[0] == 404


def test_documents_conflicts_and_changes(serve):
    s = serve()
    s.request("PUT", "/db")
    status, r = s.json("PUT", "/db/a", {"n": 1})
    assert status == 201 and r["ok"]
    rev = r["rev"]
    status, err = s.json("PUT", "/db/a", {"n": 2})
    assert (status, err["error"], err["reason"]) == (409, "conflict", "Document update conflict.")
    assert s.json("PUT", "/db/a?rev=" + rev, {"n": 2})[0] == 201
    status, feed = s.json("GET", "/db/_changes?style=all_docs&since=0")
    assert [row["id"] for row in feed["results"]] == ["a"]
    assert set(feed) >= {"results", "last_seq"}

    # longpoll returns as soon as a write lands
    def write_later():
        time.sleep(0.3)
        s.json("PUT", "/db/b", {"late": True})
    t = threading.Thread(target=write_later)
    t.start()
    started = time.time()
    status, feed = s.json("GET", "/db/_changes?feed=longpoll&since=now&timeout=10000")
    t.join()
    assert [row["id"] for row in feed["results"]] == ["b"]
    assert time.time() - started < 5


def test_continuous_feed_streams_lines(serve):
    s = serve()
    s.request("PUT", "/db")
    s.json("PUT", "/db/a", {})
    status, _, body = s.request("GET", "/db/_changes?feed=continuous&since=0&timeout=300")
    lines = [json.loads(l) for l in body.decode().splitlines() if l.strip()]
    assert lines[0]["id"] == "a" and lines[-1]["last_seq"] == 1


def test_users_basic_auth_and_session_cookie(serve):
    s = serve("--user", "admin:pw")
    assert s.json("GET", "/db")[0] == 404           # a missing database, whoever asks (CouchDB's rule)
    assert s.json("GET", "/_all_dbs")[0] == 401
    bad = "Basic " + base64.b64encode(b"admin:wrong").decode()
    status, err = s.json("GET", "/_all_dbs", headers={"Authorization": bad})
    assert (status, err["reason"]) == (401, "Name or password is incorrect.")
    good = "Basic " + base64.b64encode(b"admin:pw").decode()
    assert s.json("PUT", "/db", headers={"Authorization": good})[0] == 201
    assert s.json("GET", "/db")[0] == 401
    status, h, body = s.request("POST", "/_session", "name=admin&password=pw",
                                {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and json.loads(body)["ok"]
    cookie = h["set-cookie"].split(";")[0]
    assert cookie.startswith("AuthSession=") and len(cookie) > 20
    status, who = s.json("GET", "/_session", headers={"Cookie": cookie})
    assert who["userCtx"]["name"] == "admin"
    assert s.json("GET", "/db", headers={"Cookie": cookie})[0] == 200


def test_unauthorized_before_the_body_is_read(serve):
    s = serve("--user", "admin:pw")
    assert s.json("PUT", "/db", headers={"Authorization": "Basic " + base64.b64encode(b"admin:pw").decode()})[0] == 201
    sock = socket.create_connection((s.host, s.port), timeout=10)
    sock.sendall(b"PUT /db/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n")
    reply = sock.recv(4096).decode()
    sock.close()
    assert reply.startswith("HTTP/1.1 401")


def test_read_only(serve, workdir):
    s = serve()
    s.request("PUT", "/db")
    s.stop()
    s = serve("--read-only")
    assert s.json("GET", "/db")[0] == 200
    assert s.json("PUT", "/db/x", {})[0] == 403
    assert s.json("POST", "/db/_bulk_docs", {"docs": [{}]})[0] == 403


def test_tls_with_the_anonymous_identity_pinned(serve, workdir):
    s = serve("--tls-anonymous")
    assert s.url.startswith("https://")
    assert len(s.fingerprint) == 64
    status, _, body = s.request("GET", "/")          # connection() checks the pin
    assert status == 200
    assert s.json("PUT", "/db")[0] == 201
    assert s.json("PUT", "/db/doc", {"over": "tls"})[0] == 201
    first = s.fingerprint
    s.stop()
    again = serve("--tls-anonymous")
    assert again.fingerprint == first               # kept beside the databases
    assert again.json("GET", "/db/doc")[1]["over"] == "tls"


def test_sigterm_stops_cleanly_and_releases_the_port(serve):
    s = serve()
    s.request("PUT", "/db")
    port = s.port
    assert not port_is_free(port)
    assert s.stop() == 0
    assert port_is_free(port)


def test_large_attachment_is_streamed_in_bounded_memory(serve):
    s = serve()
    s.request("PUT", "/db")
    size = 64 * 1024 * 1024
    block = os.urandom(1 << 20)
    digest = hashlib.sha256()

    def body():
        for _ in range(size >> 20):
            digest.update(block)
            yield block

    conn = s.put_streamed("/db/big/blob.bin", body(), size)
    conn.request("GET", "/db/big/blob.bin")
    r = conn.getresponse()
    assert int(r.getheader("Content-Length")) == size
    back = hashlib.sha256()
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        back.update(chunk)
    conn.close()
    assert back.hexdigest() == digest.hexdigest()
    # The server's peak resident memory stays well under the attachment's size.
    peak = s.memory_mib("VmHWM")
    assert peak < size >> 20, "peak RSS %d MB for a %d MB attachment" % (peak, size >> 20)


def test_malformed_requests_are_400_and_the_server_survives(serve):
    s = serve()
    for raw in [b"NONSENSE\r\n\r\n", b"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n",
                b"PUT /db HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"]:
        sock = socket.create_connection((s.host, s.port), timeout=10)
        sock.sendall(raw)
        reply = sock.recv(4096).decode(errors="replace")
        sock.close()
        assert reply == "" or reply.startswith("HTTP/1.1 400"), reply[:80]
    assert s.json("GET", "/_up") == (200, {"status": "ok"})


def max_json_depth():
    header = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "include", "cblite.h")
    return int(re.search(r"#define CBL_MAX_JSON_DEPTH\s+(\d+)", open(header, encoding="utf-8").read()).group(1))


def test_documents_nested_to_the_limit(serve):
    """A document nested CBL_MAX_JSON_DEPTH levels is stored and served whole (as text: it
    is deeper than Python's json module reads); one level more is a 400 naming the limit."""
    limit = max_json_depth()
    s = serve()
    s.request("PUT", "/db")
    members = '"a":' + "[" * (limit - 1) + "]" * (limit - 1)
    status, _, data = s.request("PUT", "/db/deep", "{" + members + "}", {"Content-Type": "application/json"})
    assert status == 201, data[:200]
    status, _, data = s.request("GET", "/db/deep")
    assert status == 200 and data.rstrip().endswith((members + "}").encode())
    status, _, data = s.request("PUT", "/db/deeper", '{"a":' + "[" * limit + "]" * limit + "}",
                                {"Content-Type": "application/json"})
    assert status == 400 and json.loads(data)["error"] == "bad_request"
    assert ("nesting deeper than %d" % limit) in json.loads(data)["reason"]
    assert s.request("GET", "/db/deeper")[0] == 404
    # In _bulk_docs (two levels down in the request): each document is held to the limit.
    docs = [('{"_id":"b-%s","_rev":"1-a",' % name) + m + "}"
            for name, m in (("at", members), ("over", '"a":' + "[" * limit + "]" * limit))]
    status, _, data = s.request("POST", "/db/_bulk_docs", '{"new_edits":false,"docs":[%s]}' % ",".join(docs),
                                {"Content-Type": "application/json"})
    assert status == 201, data[:200]
    (failed,) = json.loads(data)                      # new_edits=false: only the failures
    assert failed["id"] == "b-over" and ("nesting deeper than %d" % limit) in failed["reason"]
    assert s.request("GET", "/db/b-at")[0] == 200 and s.request("GET", "/db/b-over")[0] == 404
