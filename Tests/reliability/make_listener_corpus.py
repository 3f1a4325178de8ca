#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_listener.c into Tests/reliability/corpus_listener/
(checked in). An input is the raw bytes of one or more HTTP requests; an input without
"HTTP/1." is a selector byte (see build_request in fuzz_listener.c) and a body or query.
The harness serves a database "db" holding seed-plain, seed-att (hello.txt, blob.bin),
seed-conflict (leaves 3-c3, 2-b2, deleted 2-d2), seed-deleted, _local/seed-ckpt and doc;
a second listener has the user fuzz:secret."""
import base64, gzip, hashlib, json, os

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_listener")
os.makedirs(here, exist_ok=True)


def req(method, target, body=b"", headers=(), length=True, close=True):
    if isinstance(body, str):
        body = body.encode()
    h = ["%s %s HTTP/1.1" % (method, target), "Host: 127.0.0.1"]
    h += list(headers)
    if close:
        h.append("Connection: close")
    if length and (body or method in ("PUT", "POST")):
        h.append("Content-Length: %d" % len(body))
    return ("\r\n".join(h) + "\r\n\r\n").encode() + body


def js(o):
    return json.dumps(o, separators=(",", ":"))


def gz(b):
    return gzip.compress(b, compresslevel=9, mtime=0)


def chunked(parts):
    return b"".join(b"%x\r\n" % len(p) + p + b"\r\n" for p in parts) + b"0\r\n\r\n"


JSON = "Content-Type: application/json"
text = b"attachment text, gzip-encoded in its part\n" * 3
mp_doc = js({"_id": "mp1", "_rev": "2-abc", "_revisions": {"start": 2, "ids": ["abc", "def"]}, "n": 1,
             "_attachments": {"a.txt": {"content_type": "text/plain", "follows": True, "length": len(text),
                                        "encoding": "gzip", "encoded_length": len(gz(text))}}})
mp_body = (b"--abc\r\nContent-Type: application/json\r\n\r\n" + mp_doc.encode() +
           b"\r\n--abc\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n"
           b"Content-Encoding: gzip\r\n\r\n" + gz(text) + b"\r\n--abc--")
mp_doc2 = js({"title": "multipart", "_attachments": {"b.bin": {"content_type": "application/octet-stream",
                                                               "follows": True, "length": 5}}})
mp_body2 = (b"--XyZ\r\nContent-Type: application/json\r\n\r\n" + mp_doc2.encode() +
            b"\r\n--XyZ\r\n\r\n\x00\x01\x02\xfe\xff\r\n--XyZ--\r\n")

seeds = [
    # reads
    req("GET", "/db/seed-plain"),
    req("GET", "/db/seed-conflict?open_revs=all&revs=true&latest=true", headers=["Accept: multipart/mixed"]),
    req("GET", '/db/seed-att?open_revs=%5B%222-x%22%5D&attachments=true&atts_since=["1-a"]&revs=true',
        headers=["Accept: multipart/related"]),
    req("GET", "/db/seed-att?attachments=true&att_encoding_info=true&conflicts=true&revs_info=true",
        headers=["Accept: multipart/related"]),
    req("GET", "/db/seed-att/hello.txt", headers=["Range: bytes=0-4"]),
    req("GET", "/db/seed-deleted?deleted_conflicts=true&local_seq=true&rev=1-x"),
    # writes: multipart/related (gzip part), new_edits=false and true
    req("PUT", "/db/mp1?new_edits=false", mp_body, headers=['Content-Type: multipart/related; boundary="abc"']),
    req("PUT", "/db/mp2", mp_body2, headers=["Content-Type: multipart/related;boundary=XyZ"]),
    req("POST", "/db/_bulk_docs", js({"new_edits": False, "docs": [
        {"_id": "bd1", "_rev": "3-c", "_revisions": {"start": 3, "ids": ["c", "b", "a"]}, "v": 1},
        {"_id": "bd1", "_rev": "2-x", "_revisions": {"start": 2, "ids": ["x", "a"]}, "_deleted": True},
        {"_id": "bd2", "_rev": "1-z", "_attachments": {"f.bin": {"content_type": "application/octet-stream",
                                                                 "data": base64.b64encode(b"\x00\x01\x02").decode()}}},
        {"_id": "seed-conflict", "_rev": "4-c4", "_revisions": {"start": 4, "ids": ["c4", "c3"]}}]}),
        headers=[JSON]),
    req("POST", "/db/_bulk_docs", js({"docs": [{"_id": "n1", "a": 1}, {"a": [1, {"b": None}]},
                                               {"_id": "seed-plain", "_rev": "3-x"}, {"_id": "_bad"}]}), headers=[JSON]),
    # replication reads
    req("POST", "/db/_revs_diff", js({"seed-conflict": ["3-c3", "4-zz", "2-b2"], "seed-plain": ["1-abc"],
                                      "nope": ["1-a"]}), headers=[JSON]),
    req("POST", "/db/_bulk_get?revs=true&attachments=true",
        js({"docs": [{"id": "seed-conflict", "rev": "2-b2"}, {"id": "seed-att", "atts_since": ["1-a"]},
                     {"id": "missing"}, {"id": "seed-conflict", "rev": "9-nope"}]}),
        headers=[JSON, "Accept: multipart/mixed"]),
    req("GET", "/db/_changes?feed=longpoll&timeout=10&since=now&heartbeat=5"),
    req("GET", "/db/_changes?style=all_docs&include_docs=true&since=0&limit=3&descending=true"),
    req("POST", "/db/_changes?filter=_doc_ids&feed=continuous&timeout=10",
        js({"doc_ids": ["seed-plain", "doc"]}), headers=[JSON]),
    # body framings: chunked, chunked + gzip, pipelined, 100-continue
    req("PUT", "/db/ch1", chunked([b'{"chunked":', b'[1,2,3],"s":"x"}']),
        headers=[JSON, "Transfer-Encoding: chunked"], length=False),
    req("POST", "/db/_bulk_docs", chunked([gz(js({"docs": [{"_id": "gz1", "z": "zip"}]}).encode())]),
        headers=[JSON, "Content-Encoding: gzip", "Transfer-Encoding: chunked"], length=False),
    req("PUT", "/db/pl1", '{"pipelined":1}', headers=[JSON], close=False) + req("GET", "/db/pl1?revs=true"),
    req("PUT", "/db/e1", '{"expect":true}', headers=[JSON, "Expect: 100-continue"]),
    # malformed heads
    b"GET /db/seed-plain HTTP/1.1 extra\r\nHost: x\r\n\r\n",
    b"GET /db/seed-plain HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 7000 + b"\r\n\r\n",
    # local documents, attachments, purge
    req("PUT", "/db/_local/ckpt", js({"lastSequence": "5", "history": [{"session_id": "s", "recorded_seq": 5}]}),
        headers=[JSON]),
    req("PUT", "/db/newatt/file.bin", b"\x89PNG\r\n\x1a\n\x00\x00", headers=["Content-Type: image/png"]),
    req("POST", "/db/_purge", js({"bd1": ["3-c", "2-x"], "seed-conflict": ["2-d2"]}), headers=[JSON]),
    # cookie and basic auth (the listener with users)
    req("POST", "/_session", "name=fuzz&password=secret", headers=["Content-Type: application/x-www-form-urlencoded"]),
    req("GET", "/db/_all_docs?include_docs=true&conflicts=true", headers=["Authorization: Basic ZnV6ejpzZWNyZXQ="]),
]

# Selector-mode inputs (no "HTTP/1.": the harness writes the request head).
sel = [
    bytes([1]) + mp_body.replace(b'"_id":"mp1"', b'"_id":"doc"'),
    bytes([4]) + b"style=all_docs&since=0&limit=5&include_docs=true",
    bytes([0x46]) + b'open_revs=["3-c3","2-d2"]&revs=true&latest=true',
    bytes([0x80]) + gz(js({"docs": [{"_id": "s1", "gz": True}]}).encode()),
]

all_inputs = seeds + sel
assert 15 <= len(all_inputs) <= 30, len(all_inputs)
for s in all_inputs:
    with open(os.path.join(here, hashlib.sha1(s).hexdigest()[:16]), "wb") as f:
        f.write(s)
print("corpus_listener: %d seed inputs (%d raw requests, %d selector inputs) in %s" % (
    len(all_inputs), len(seeds), len(sel), here))
