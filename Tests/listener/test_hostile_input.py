"""Hostile HTTP input against `cblite serve`: malformed requests, huge headers, bad
multipart and JSON bodies, truncated bodies, path tricks, wrong credentials. Each case
must get a 4xx (or a closed connection), never a 5xx or a crash, and the server must keep
answering. Bounded and seeded: the same cases every run."""
import base64
import json
import random
import socket

from conftest import Server, recording


def raw(server, data, read_timeout=5):
    """Sends raw bytes, returns the status code of the answer (None if closed without one)."""
    s = socket.create_connection((server.host, server.port), timeout=read_timeout)
    try:
        s.sendall(data)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:       # the server answered and closed before the last bytes were read
            pass
        reply = b""
        while b"\r\n" not in reply:
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
    except (ConnectionResetError, BrokenPipeError, socket.timeout):
        return None
    finally:
        s.close()
    if not reply.startswith(b"HTTP/1.1 "):
        return None
    return int(reply[9:12])


def request(method, path, body=b"", headers=()):
    head = "%s %s HTTP/1.1\r\nHost: x\r\n" % (method, path)
    for k, v in headers:
        head += "%s: %s\r\n" % (k, v)
    head += "Content-Length: %d\r\n\r\n" % len(body)
    return head.encode("latin-1") + body


def recorded_multipart():
    rec = recording("push-by-couchdb.jsonl")[13]["request"]
    ct = [v for k, v in rec["headers"] if k.lower() == "content-type"][0]
    return ct, base64.b64decode(rec["body"])


def test_hostile_input_never_crashes_or_500s(serve):
    s = serve()
    assert raw(s, request("PUT", "/db")) == 201
    rng = random.Random(1234)
    ct, multipart = recorded_multipart()
    cases = [
        b"\x00\x01\x02garbage\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\n" + b"X: " + b"y" * 200000 + b"\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"PUT /db/t HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":",
        b"PUT /db/t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        request("GET", "/db/../../etc/passwd"),
        request("GET", "/..%2F..%2Fetc%2Fpasswd"),
        request("PUT", "/%2e%2e"),
        request("PUT", "/db%00x"),
        request("GET", "/db/%ff%fe"),
        request("GET", "/db/_local/" + "x" * 5000),
        request("GET", "//db//doc"),
        request("PUT", "/db/doc?rev=not-a-rev", b"{}", [("Content-Type", "application/json")]),
        request("PUT", "/db/doc?new_edits=false", b'{"_rev":"x"}', [("Content-Type", "application/json")]),
        request("POST", "/db/_bulk_docs", b'{"docs":"nope"}', [("Content-Type", "application/json")]),
        request("POST", "/db/_bulk_docs", b'{"docs":[1,2]}', [("Content-Type", "application/json")]),
        request("POST", "/db/_bulk_docs", b'{"new_edits":false,"docs":[{"_id":"a","_rev":"2-x","_revisions":{"start":"2","ids":[1]}}]}', [("Content-Type", "application/json")]),
        request("POST", "/db/_bulk_get", b'{"docs":[{"rev":"1-a"}]}', [("Content-Type", "application/json")]),
        request("POST", "/db/_revs_diff", b'{"a":"b"}', [("Content-Type", "application/json")]),
        request("POST", "/db/_changes?filter=_doc_ids", b'{"doc_ids":[1]}', [("Content-Type", "application/json")]),
        request("GET", "/db/_changes?since=-1"),
        request("GET", "/db/_changes?limit=-5"),
        request("GET", "/db/_changes?heartbeat=abc"),
        request("GET", "/db/doc?open_revs=%5B"),
        request("GET", "/db/_all_docs?startkey=nojson"),
        request("GET", "/_uuids?count=1000000"),
        request("PUT", "/db/doc/att", b"x", [("Content-Encoding", "gzip")]),
        request("GET", "/db/doc/att", headers=[("Range", "bytes=9-1")]),
        request("POST", "/_session", b"name=%zz", [("Content-Type", "application/x-www-form-urlencoded")]),
        request("GET", "/", headers=[("Authorization", "Basic !!!!")]),
        request("PUT", "/db/m?new_edits=false", multipart, [("Content-Type", 'multipart/related; boundary="wrong"')]),
        request("PUT", "/db/m?new_edits=false", multipart[: len(multipart) // 2], [("Content-Type", ct)]),
        request("PUT", "/db/m?new_edits=false", multipart, [("Content-Type", "multipart/related")]),
    ]
    # Random mutations of a real multipart body and of JSON documents.
    for _ in range(60):
        b = bytearray(multipart)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(request("PUT", "/db/m%d?new_edits=false" % rng.randrange(1000), bytes(b), [("Content-Type", ct)]))
    for _ in range(60):
        doc = json.dumps({"_id": "r", "x": [1, {"y": "z" * rng.randrange(50)}], "_attachments": {"a": {"data": "QUJD"}}}).encode()
        b = bytearray(doc)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(request("PUT", "/db/r%d" % rng.randrange(1000), bytes(b), [("Content-Type", "application/json")]))
    for i, case in enumerate(cases):
        status = raw(s, case)
        assert status is None or 200 <= status < 500 or status in (501, 503), "case %d: %r -> %s" % (i, case[:120], status)
        if i % 10 == 0:
            assert raw(s, request("GET", "/_up")) == 200
    assert raw(s, request("GET", "/_up")) == 200


def test_wrong_credentials_are_401_and_do_not_leak(serve):
    s = serve("--user", "admin:secret")
    for auth in ["Basic " + base64.b64encode(b"admin:wrong").decode(), "Basic " + base64.b64encode(b"nobody:secret").decode(),
                 "Basic", "Bearer xyz", "Basic " + base64.b64encode(b"admin").decode()]:
        assert raw(s, request("GET", "/_all_dbs", headers=[("Authorization", auth)])) == 401
    for cookie in ["AuthSession=", "AuthSession=zz", "AuthSession=" + "61" * 40]:
        assert raw(s, request("GET", "/_all_dbs", headers=[("Cookie", cookie)])) == 401
