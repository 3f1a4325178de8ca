"""What CouchDB 3.5 answers that the replay of its recording (test_rest_replay.py) cannot
show by itself: headers behind a proxy and on answers made below HTTP, the changes feed's
conditional GET, the purge history across compaction and restarts, `_revs_limit`
trimming at once, the members of `_all_docs` rows, and a view's answer streamed."""
import json
import re
import socket

JSON = {"Content-Type": "application/json"}


def test_temporary_views_are_gone_as_in_couchdb_3(serve):
    s = serve()
    s.json("PUT", "/db")
    status, body = s.json("POST", "/db/_temp_view", {"map": "function(doc) { emit(null); }"})
    assert (status, body) == (410, {"error": "gone", "reason": "Temporary views are not supported in CouchDB"})


def test_request_id_on_every_answer_and_location_behind_a_proxy(serve):
    s = serve()
    status, h, _ = s.request("GET", "/", headers={"X-Couch-Request-ID": "mine-1"})
    assert h["x-couch-request-id"] == "mine-1" and h["x-couchdb-body-time"].isdigit()
    assert s.json("PUT", "/db")[0] == 201
    status, h, _ = s.request("PUT", "/db/d", {"v": 1}, headers={"X-Forwarded-Host": "couch.example", "X-Forwarded-Ssl": "on"})
    assert (status, h["location"]) == (201, "https://couch.example/db/d")
    # A request NIO cannot parse is answered below HTTP: it still names a request ID.
    with socket.create_connection((s.host, s.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        head = sock.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 400")
    assert re.search(r"(?im)^x-couch-request-id: [0-9a-f]{10}\r$", head), head


def test_changes_etag_answers_304_until_the_database_changes(serve):
    s = serve()
    s.json("PUT", "/db")
    s.json("PUT", "/db/a", {})
    status, h, _ = s.request("GET", "/db/_changes")
    etag = h["etag"]
    assert re.fullmatch(r'"[0-9A-Z]+"', etag)
    status, h, body = s.request("GET", "/db/_changes?since=1", headers={"If-None-Match": etag})
    assert (status, body, h["content-length"]) == (304, b"", "0")
    s.json("PUT", "/db/b", {})
    status, h, _ = s.request("GET", "/db/_changes", headers={"If-None-Match": etag})
    assert status == 200 and h["etag"] != etag


def test_purge_history_survives_compaction_and_restart(serve, workdir):
    s = serve()
    s.json("PUT", "/db")
    rev = s.json("PUT", "/db/p", {"v": 1})[1]["rev"]
    assert s.json("POST", "/db/_purge", {"p": [rev], "q": ["1-a"]}) == (201, {"purge_seq": None, "purged": {"p": [rev], "q": []}})
    assert s.json("PUT", "/db/_purged_infos_limit", "7", JSON) == (200, {"ok": True})
    assert s.json("POST", "/db/_compact", {})[0] == 202
    s.stop()
    s = serve()
    assert s.json("GET", "/db")[1]["purge_seq"] == 2
    assert s.json("GET", "/db/_purged_infos") == (200, {"purged_infos": [{"id": "p", "revs": [rev]}, {"id": "q", "revs": ["1-a"]}]})
    assert s.json("GET", "/db/_purged_infos_limit") == (200, 7)


def test_revs_limit_trims_the_history_a_read_gives(serve):
    s = serve()
    s.json("PUT", "/db")
    rev = s.json("PUT", "/db/d", {"i": 0})[1]["rev"]
    for i in range(1, 6):
        rev = s.json("PUT", "/db/d?rev=" + rev, {"i": i})[1]["rev"]
    assert len(s.json("GET", "/db/d?revs=true")[1]["_revisions"]["ids"]) == 6
    assert s.json("PUT", "/db/_revs_limit", "3", JSON) == (200, {"ok": True})
    assert len(s.json("GET", "/db/d?revs=true")[1]["_revisions"]["ids"]) == 3
    assert s.json("GET", "/db/_revs_limit") == (200, 3)


def test_all_docs_rows_have_couchdbs_members_only(serve):
    # CouchDB's rows: id, key, value (and doc when asked); no sequence of cblite's own.
    s = serve()
    s.json("PUT", "/db")
    s.json("PUT", "/db/a", {"v": 1})
    for path, members in [("/db/_all_docs", {"id", "key", "value"}),
                          ("/db/_all_docs?include_docs=true", {"id", "key", "value", "doc"})]:
        status, body = s.json("GET", path)
        assert status == 200 and [set(r) for r in body["rows"]] == [members]
    status, body = s.json("POST", "/db/_all_docs", {"keys": ["a", "zz"]})
    assert [set(r) for r in body["rows"]] == [{"id", "key", "value"}, {"key", "error"}]


def test_a_view_answer_streams_with_couchdbs_offset(serve):
    # Written a page at a time (chunked, no Content-Length), as _all_docs is: the answer
    # of a view of any size is never held whole; the offset counts the rows before the
    # first one answered, as CouchDB's does.
    s = serve()
    s.json("PUT", "/db")
    docs = [{"_id": "d%05d" % i, "n": i, "pad": "x" * 100} for i in range(3000)]
    assert s.json("POST", "/db/_bulk_docs", {"docs": docs})[0] == 201
    s.json("PUT", "/db/_design/app", {"views": {"byN": {"map": "function (doc) { emit(doc.n, doc.pad); }"}}})
    status, h, data = s.request("GET", "/db/_design/app/_view/byN?startkey=1000")
    body = json.loads(data)
    assert status == 200 and h.get("transfer-encoding") == "chunked" and "content-length" not in h
    assert (body["total_rows"], body["offset"], len(body["rows"])) == (3000, 1000, 2000)
    assert body["rows"][0] == {"id": "d01000", "key": 1000, "value": "x" * 100}
    status, body = s.json("GET", "/db/_design/app/_view/byN?startkey=5000")
    assert (status, body["offset"], body["rows"]) == (200, 3000, [])
    status, body = s.json("GET", "/db/_design/app/_view/byN?limit=notanumber")
    assert (status, body["error"]) == (400, "query_parse_error")
