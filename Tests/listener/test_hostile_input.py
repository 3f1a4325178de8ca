"""Hostile HTTP input against `cblite serve`: malformed requests, huge headers, bad
multipart and JSON bodies, truncated bodies, path tricks, wrong credentials. Each case
must get a 4xx (or a closed connection), never a 5xx or a crash, and the server must keep
answering. Bounded and seeded: the same cases every run."""
import base64
import hashlib
import http.client
import json
import os
import random
import resource
import socket
import tempfile
import threading
import time
import zlib

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
    assert raw(s, request("GET", "/_all_dbs", headers=[("Cookie", "AuthSession=")])) == 401
    # Not a cookie CouchDB could have made: 400, as CouchDB answers ("Please clear your cookies").
    for cookie in ["AuthSession=zz", "AuthSession=" + "61" * 40]:
        assert raw(s, request("GET", "/_all_dbs", headers=[("Cookie", cookie)])) == 400


# ---- slow and many clients, uploads that must be whole (issue 31) ----------------------------
# Each prints its figures (pytest -s shows them): honest requests served during a slowloris
# attack and their p99, clients served out of 500, the server's peak RSS under a gzip bomb and
# a 200 MiB upload.

def raise_fd_limit(wanted):
    """This process's (and so the server's) descriptor limit, raised towards `wanted`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def test_slowloris_does_not_deny_service(serve):
    """200 connections sending their heads a byte a second (reconnecting when cut) against
    128 connection slots: every honest request during the attack is served, quickly."""
    s = serve("--limit", "max_connections=128")
    stop = threading.Event()
    attackers = []

    def attack():
        socks = []
        while not stop.is_set():
            while len(socks) < 200 and not stop.is_set():
                try:
                    c = socket.create_connection((s.host, s.port), timeout=5)
                    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
                    socks.append(c)
                except OSError:
                    break
            for c in list(socks):
                try:
                    c.send(b"X")
                except OSError:          # shed or timed out: reconnect, as an attacker would
                    socks.remove(c)
                    c.close()
            stop.wait(1.0)
        for c in socks:
            c.close()

    t = threading.Thread(target=attack)
    t.start()
    attackers.append(t)
    time.sleep(2)                        # the slots are full of slow heads
    latencies, statuses = [], []
    deadline = time.time() + 8           # past the 5 s header time-box of the first ones
    try:
        while time.time() < deadline:
            t0 = time.perf_counter()
            try:
                statuses.append(s.request("GET", "/_up")[0])
            except OSError as e:
                statuses.append(repr(e))
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.02)
    finally:
        stop.set()
        t.join()
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
    print("slowloris: %d/%d honest requests served, p99 %.1f ms" % (statuses.count(200), len(statuses), p99))
    assert statuses == [200] * len(statuses)
    assert p99 < 250, "p99 %.1f ms" % p99      # ~6 ms measured; the margin is for a loaded CI machine


def test_a_crowd_of_500_keep_alive_clients_is_served(serve):
    """500 concurrent keep-alive clients, 3 GETs each, with the default connection limit
    (sized to the descriptor limit): all of them are served."""
    raise_fd_limit(4096)
    s = serve()
    assert s.request("PUT", "/db")[0] == 201
    assert s.request("PUT", "/db/doc", {"x": 1})[0] == 201
    n = 500
    ready = threading.Barrier(n)
    served = []

    def client():
        conn = http.client.HTTPConnection(s.host, s.port, timeout=30)
        try:
            conn.connect()
            ready.wait(timeout=60)       # all connected before any asks
            for path in ("/db/doc", "/db", "/_up"):
                conn.request("GET", path)
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    return
            served.append(1)
        except (OSError, threading.BrokenBarrierError, http.client.HTTPException):
            pass
        finally:
            conn.close()

    old = threading.stack_size(256 * 1024)
    try:
        threads = [threading.Thread(target=client) for _ in range(n)]
    finally:
        threading.stack_size(old)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("crowd: %d of %d keep-alive clients served" % (len(served), n))
    assert len(served) == n


def test_http09_request_line_is_400_at_once(serve):
    s = serve()
    for line in [b"GET /\r\n", b"GET / HTTP/2.0\r\n", b"GET /_up\n"]:
        t0 = time.time()
        assert raw(s, line, read_timeout=3) == 400, line
        assert time.time() - t0 < 2, line


def test_too_many_headers_are_431(serve):
    s = serve()
    head = b"GET /_up HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(10000)) + b"\r\n"
    assert raw(s, head) == 431
    assert raw(s, b"GET /_up HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(50)) + b"\r\n") == 200


def multipart_doc(att_entry, content, boundary="xyzzy"):
    doc = {"_attachments": {"a.bin": dict({"follows": True, "content_type": "application/octet-stream"}, **att_entry)}}
    body = (b"--" + boundary.encode() + b"\r\nContent-Type: application/json\r\n\r\n" + json.dumps(doc).encode()
            + b"\r\n--" + boundary.encode() + b"\r\nContent-Disposition: attachment; filename=\"a.bin\"\r\n\r\n"
            + content + b"\r\n--" + boundary.encode() + b"--")
    return 'multipart/related; boundary="%s"' % boundary, body


def blob_files(directory):
    """Attachment files (and temporary ones) under the served directory."""
    found = []
    for root, _, files in os.walk(directory):
        if os.sep + "attachments" in root:
            found += [os.path.join(root, f) for f in files]
    return found


def test_multipart_attachments_must_match_their_declaration(serve):
    s = serve()
    assert s.request("PUT", "/db")[0] == 201
    content = os.urandom(1000)
    md5 = "md5-" + base64.b64encode(hashlib.md5(content).digest()).decode()
    for i, (entry, what) in enumerate([({"length": 1001}, "part shorter than its length"),
                                       ({"length": 999}, "part longer than its length"),
                                       ({"length": 1000, "digest": "md5-" + base64.b64encode(hashlib.md5(b"x").digest()).decode()},
                                        "another md5")]):
        ct, body = multipart_doc(entry, content)
        status, _, reply = s.request("PUT", "/db/m%d" % i, body, {"Content-Type": ct})
        assert status == 400, (what, status, reply)
        assert s.request("GET", "/db/m%d" % i)[0] == 404, what
        assert blob_files(s.directory) == [], what
    ct, body = multipart_doc({"length": 1000, "digest": md5}, content)
    assert s.request("PUT", "/db/ok", body, {"Content-Type": ct})[0] == 201
    status, _, back = s.request("GET", "/db/ok/a.bin")
    assert (status, back) == (200, content)


def test_a_client_gone_mid_body_leaves_nothing(serve):
    s = serve()
    assert s.request("PUT", "/db")[0] == 201
    ct, body = multipart_doc({"length": 1 << 20}, os.urandom(1 << 20))
    c = socket.create_connection((s.host, s.port), timeout=10)
    c.sendall(request("PUT", "/db/gone", body, [("Content-Type", ct)])[: len(body) // 2])
    time.sleep(0.5)                      # the attachment is being written
    c.close()
    deadline = time.time() + 10
    while blob_files(s.directory) and time.time() < deadline:
        time.sleep(0.1)
    assert blob_files(s.directory) == []
    assert s.request("GET", "/db/gone")[0] == 404
    assert s.request("GET", "/_up")[0] == 200


def test_a_200_mib_attachment_uploads_over_http_in_bounded_memory(serve):
    """Over the 64 MiB body limit, which does not apply to attachments: streamed to disk."""
    s = serve()
    assert s.request("PUT", "/db")[0] == 201
    size = 200 << 20
    block = os.urandom(1 << 20)
    conn = s.put_streamed("/db/big/blob.bin", (block for _ in range(size >> 20)), size)
    conn.request("HEAD", "/db/big/blob.bin")
    r = conn.getresponse()
    r.read()
    conn.close()
    assert int(r.getheader("Content-Length")) == size
    peak = s.memory_mib("VmHWM")
    print("200 MiB upload: server peak RSS %.1f MiB" % peak)
    assert peak < 80, "peak RSS %.1f MiB" % peak
    # A configured attachment limit refuses it before any byte is stored.
    small = serve("--limit", "max_attachment_bytes=1048576", directory=tempfile.mkdtemp(dir=s.directory))
    assert small.request("PUT", "/db")[0] == 201
    assert raw(small, request("PUT", "/db/big/blob.bin", b"x" * (2 << 20))) == 413


def gzip_bomb(decoded_size):
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    out = [z.compress(zeros) for _ in range(decoded_size >> 20)]
    out.append(z.flush())
    return b"".join(out)


def test_gzip_bombs_inflate_in_bounded_memory(serve):
    s = serve()
    assert s.request("PUT", "/db")[0] == 201
    bomb = gzip_bomb(1 << 30)
    base = s.memory_mib()
    for path in ["/db/bomb", "/db/_bulk_docs", "/db/bomb2"]:
        method = "POST" if path.endswith("_bulk_docs") else "PUT"
        status = raw(s, request(method, path, bomb, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]), read_timeout=60)
        assert status == 413, (path, status)
    peak = s.memory_mib("VmHWM")
    print("1 GiB gzip bombs: server peak RSS %.1f MiB (%.1f before, %.1f after)" % (peak, base, s.memory_mib()))
    # Bounded by the largest JSON body limit (_bulk_docs: max_body_bytes, 64 MiB), not by the bomb.
    assert peak < base + 100, "peak RSS %.1f MiB" % peak
    assert s.memory_mib() < base + 40, "memory not given back: %.1f MiB" % s.memory_mib()
    assert raw(s, request("GET", "/_up")) == 200
