"""`/_uuids`, `/_membership`, `/_node/_local/_config` and `_missing_revs` of `cblite serve`,
replayed from CouchDB 3.5's recorded answers (rest-server.jsonl, rest-documents.jsonl):
same statuses, same shapes, the same forms of UUID for each algorithm."""
import json
import re

from conftest import recording


def by_seq(name):
    return {r["seq"]: r for r in recording(name)}


def answer(rec):
    return rec["response"]["status"], json.loads(rec["response"]["body"]) if rec["response"]["body"].strip() else None


def header(rec, name):
    return next((v for k, v in rec["response"]["headers"] if k.lower() == name), None)


def test_config_and_uuid_algorithms_as_couchdb(serve, workdir):
    s = serve()
    rec = by_seq("rest-server.jsonl")
    status, body = s.json("GET", "/_membership")
    assert status == 200 and set(body) == set(answer(rec[1])[1]) and len(body["all_nodes"]) == 1
    assert set(s.json("GET", "/_node/_local")[1]) == set(answer(rec[2])[1])
    for seq in (5, 9, 10, 11, 12, 13):       # uuids empty, unknown values, a node that is down, POST
        q = rec[seq]["request"]
        status, _, raw = s.request(q["method"], q["path"], body=q.get("body"),
                                   headers={"Content-Type": "application/json"} if q.get("body") else None)
        assert (status, json.loads(raw)) == answer(rec[seq]), seq
    q = rec[14]["request"]
    status, _, raw = s.request("PUT", q["path"], body=q["body"], headers={"Content-Type": "application/json"})
    assert (status, json.loads(raw)) == answer(rec[14])
    forms = {16: r"[0-9a-f]{32}", 18: r"[0-9a-f]{32}", 20: r"[0-9a-f]{32}", 23: r"[0-9a-f]{14}-rec-suffix"}
    for put, get in ((15, 16), (17, 18), (19, 20), (21, None), (22, 23)):
        q = rec[put]["request"]
        status, _, raw = s.request("PUT", q["path"], body=q["body"], headers={"Content-Type": "application/json"})
        assert (status, json.loads(raw)) == answer(rec[put]), put
        if get:
            status, h, raw = s.request("GET", rec[get]["request"]["path"])
            uuids = json.loads(raw)["uuids"]
            assert status == 200 and len(uuids) == 3 and all(re.fullmatch(forms[get], u) for u in uuids), (get, uuids)
            for name in ("cache-control", "pragma", "expires"):
                assert h[name] == header(rec[get], name)
            if get == 18:     # sequential: one prefix, growing suffixes
                assert len({u[:26] for u in uuids}) == 1 and uuids == sorted(uuids)
    assert s.json("GET", "/_node/_local/_config/uuids") == answer(rec[24])
    for seq in (25, 26, 27, 28, 29):
        q = rec[seq]["request"]
        status, _, raw = s.request(q["method"], q["path"], body=q.get("body"),
                                   headers={"Content-Type": "application/json"} if q.get("body") else None)
        assert (status, json.loads(raw)) == answer(rec[seq]), seq
    docs = by_seq("rest-documents.jsonl")
    for seq in (5, 6):
        assert s.json("GET", docs[seq]["request"]["path"]) == answer(docs[seq])


def test_missing_revs_as_couchdb(serve):
    s = serve()
    docs = by_seq("rest-documents.jsonl")
    assert s.json("PUT", "/rec_docs")[0] == 201
    # doc-1 at 3-c94e… and multi with 1-7a7e… and 2-cccc… as CouchDB had them.
    body = {"docs": [
        {"_id": "doc-1", "_rev": "3-c94e40876028d8a880feaae106a904ac", "_revisions": {"start": 3, "ids": [
            "c94e40876028d8a880feaae106a904ac", "b", "a"]}},
        {"_id": "multi", "_rev": "2-cccccccccccccccccccccccccccccccc", "_revisions": {"start": 2, "ids": [
            "cccccccccccccccccccccccccccccccc", "7a7e4b29f3af401e69b6f86e4c26b727"]}},
    ], "new_edits": False}
    assert s.json("POST", "/rec_docs/_bulk_docs", body)[0] == 201
    q = docs[162]["request"]
    status, got = s.json("POST", q["path"], json.loads(q["body"]))
    want_status, want = answer(docs[162])
    assert status == want_status
    assert {k: sorted(v) for k, v in got["missing_revs"].items()} == {k: sorted(v) for k, v in want["missing_revs"].items()}
