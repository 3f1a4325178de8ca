"""Pulling from and pushing to CouchDB 3.5 as it really answered (see couchdb_replay.py):
opaque string sequences, _bulk_get, open_revs multipart with gzip-encoded attachments,
/_session cookies, checkpoints in the peer's _local documents; and the requests the
replicator makes, compared with those CouchDB's own replicator made for the same data.
"""
import base64
import hashlib
import json
import os

import pytest

import cblite
from couchdb_replay import ReplayServer

CONFLICT_WINNER = "2-a43763cb6510199739a3d88e72322572"
CONFLICT_OTHER = "2-0123456789abcdef0123456789abcdef"


@pytest.fixture
def db(tmp_path):
    d = cblite.Database("pulled", directory=str(tmp_path))
    yield d
    d.close()


@pytest.fixture
def source(recordings):
    s = ReplayServer(os.path.join(recordings, "pull-by-couchdb.jsonl"))
    yield s
    s.stop()


def replicate(db, url, **options):
    r = db.replicate(url, **options)
    try:
        assert r.wait(timeout=60), "replication did not finish"
        return r.status()
    finally:
        r.stop()


def recorded_rows(source, index):
    return json.loads(source.rec.changes[index][1])["results"]


def leaves(db):
    return {row["id"]: sorted(c["rev"] for c in row["changes"])
            for row in db.changes(since=0, all_revs=True)["results"]}


def gunzipped_md5(recordings, doc_id, filename):
    for line in open(os.path.join(recordings, "pull-by-couchdb.jsonl"), encoding="utf-8"):
        r = json.loads(line)
        if "open_revs" not in r["request"]["path"] or ("/" + doc_id + "?") not in r["request"]["path"]:
            continue
        stack = list(r["response"].get("multipart") or [])
        while stack:
            p = stack.pop()
            stack.extend(p.get("parts") or [])
            disposition = dict((k.lower(), v) for k, v in p.get("headers", [])).get("content-disposition", "")
            if '"%s"' % filename in disposition:
                return p.get("gunzipped_md5_base64") or p.get("md5_base64")
    return None


def test_pull_from_couchdb_as_recorded(db, source, recordings):
    status = replicate(db, source.url(), direction="pull", document_events=True)
    assert "error" not in status, status
    rows = recorded_rows(source, 0)
    # Every document with the leaves CouchDB listed, the conflict kept as a conflict.
    assert leaves(db) == {row["id"]: sorted(c["rev"] for c in row["changes"]) for row in rows}
    assert status["documents_pulled"] == sum(len(row["changes"]) for row in rows)
    assert db.get("conflicted")["_rev"] == CONFLICT_WINNER      # the same winner as CouchDB
    assert db.get("updated")["_rev"].startswith("4-")
    with pytest.raises(cblite.NotFound):
        db.get("deleted")
    # The text attachment travelled gzip-encoded: stored decoded, as the recorder decoded it.
    coll = db.default_collection
    text = coll.get_attachment("att-text", "readme.txt")
    assert base64.b64encode(hashlib.md5(text).digest()).decode() == gunzipped_md5(recordings, "att-text", "readme.txt")
    binary = coll.get_attachment("att-binary", "data.bin")
    assert len(binary) == 71680
    assert base64.b64encode(hashlib.md5(binary).digest()).decode() == gunzipped_md5(recordings, "att-binary", "data.bin")
    # The checkpoint on the peer: CouchDB's shape, the opaque sequence kept verbatim.
    (checkpoint,) = source.local_docs.values()
    last_seq = json.loads(source.rec.changes[0][1])["last_seq"]
    assert checkpoint["source_last_seq"] == last_seq
    assert checkpoint["history"][0]["recorded_seq"] == last_seq
    assert checkpoint["session_id"] and checkpoint["history"][0]["session_id"] == checkpoint["session_id"]

    # A second run starts from the checkpoint and finds nothing new.
    again = replicate(db, source.url(), direction="pull")
    assert again["documents_pulled"] == 0 and "error" not in again

    # The peer's second recorded run: two new documents and a new attachment on att-binary.
    source.phase = 2
    asked = len(source.received)
    third = replicate(db, source.url(), direction="pull")
    assert "error" not in third, third
    assert third["documents_pulled"] == 3
    assert db.get("extra-01") and db.get("extra-02")
    assert db.get("att-binary")["_rev"].startswith("2-")
    assert sorted(coll.attachment_names("att-binary")) == ["data.bin", "notes.txt"]
    assert len(coll.get_attachment("att-binary", "notes.txt")) == 424
    assert coll.get_attachment("att-binary", "data.bin") == binary
    assert len(source.received) > asked                      # the checkpoint was written again


def test_session_authentication_and_a_wrong_password(db, recordings):
    s = ReplayServer(os.path.join(recordings, "pull-by-couchdb.jsonl"), user="admin", password="right")
    try:
        status = replicate(db, s.url(), direction="pull", auth={"type": "session", "username": "admin", "password": "right"})
        assert "error" not in status and status["documents_pulled"] > 20
        wrong = replicate(db, s.url(), direction="pull", auth={"type": "session", "username": "admin", "password": "wrong"})
        assert wrong["activity"] == "stopped" and wrong["error"]["status"] == 401
        basic = replicate(db, s.url("admin:right@"), direction="pull")
        assert "error" not in basic
    finally:
        s.stop()


def test_push_sends_what_couchdbs_replicator_sent(db, source, recordings):
    """The same data pushed to a target: the _bulk_docs documents (id, rev, _revisions)
    and the multipart PUTs carry what CouchDB 3.5's replicator sent for it."""
    assert "error" not in replicate(db, source.url(), direction="pull")
    target = ReplayServer(os.path.join(recordings, "pull-by-couchdb.jsonl"))
    try:
        status = replicate(db, target.url(), direction="push")
        assert "error" not in status, status
        sent = {}
        puts = {}
        for method, path, headers, body in target.received:
            if path.endswith("/_bulk_docs"):
                request = json.loads(body)
                assert request["new_edits"] is False
                for d in request["docs"]:
                    sent[(d["_id"], d["_rev"])] = d
            elif method == "PUT" and "new_edits=false" in path:
                assert headers.get("Content-Type", "").startswith("multipart/related")
                assert int(headers["Content-Length"]) == len(body)
                puts[path.split("?")[0].rsplit("/", 1)[1]] = body
        couch = {}
        couch_puts = set()
        for line in open(os.path.join(recordings, "push-by-couchdb.jsonl"), encoding="utf-8"):
            r = json.loads(line)
            q = r["request"]
            if q["path"].endswith("/_bulk_docs") and r["seq"] < 23:
                for d in json.loads(q["body"])["docs"]:
                    couch[(d["_id"], d["_rev"])] = d
            elif q["method"] == "PUT" and "new_edits=false" in q["path"] and r["seq"] < 23:
                couch_puts.add(q["path"].split("?")[0].rsplit("/", 1)[1])
        assert set(sent) == set(couch)
        for key, d in couch.items():
            assert sent[key]["_revisions"] == d["_revisions"], key
            assert sent[key].get("_deleted", False) == d.get("_deleted", False)
            body = {k: v for k, v in d.items() if not k.startswith("_")}
            assert {k: v for k, v in sent[key].items() if not k.startswith("_")} == body
        # Documents with attachments went one by one as multipart, like CouchDB's.
        assert set(puts) == couch_puts
        for body in puts.values():
            first_json = body.split(b"\r\n\r\n", 1)[1].split(b"\r\n--", 1)[0]
            doc = json.loads(first_json)
            assert all(a.get("follows") or a.get("stub") for a in doc["_attachments"].values())
    finally:
        target.stop()


def test_a_failed_document_is_retried_by_the_next_run(db, source):
    """A document CouchDB could not give (a per-document _bulk_get error) is passed by
    the checkpoint but kept with it: the next run, with no new change, asks for it again."""
    source.broken = {"plain-05"}
    first = replicate(db, source.url(), direction="pull")
    assert "error" not in first, first
    assert first["document_failures"] == 1 and first["documents_to_retry"] == 1
    with pytest.raises(cblite.NotFound):
        db.get("plain-05")
    source.broken = set()
    asked = len(source.changes_asked)
    second = replicate(db, source.url(), direction="pull")
    assert "error" not in second, second
    assert second["documents_pulled"] == 1 and second["documents_to_retry"] == 0
    assert db.get("plain-05")["_rev"] == recorded_rev(source, "plain-05")
    # The feed itself had nothing new: the checkpoint had passed plain-05.
    assert all("since=0" not in path for _, path, _ in source.changes_asked[asked:])
    assert leaves(db) == {row["id"]: sorted(c["rev"] for c in row["changes"]) for row in recorded_rows(source, 0)}


def test_cleared_failures_are_not_retried(db, source):
    source.broken = {"plain-05"}
    assert replicate(db, source.url(), direction="pull")["documents_to_retry"] == 1
    source.broken = set()
    r = db.replicate(source.url(), direction="pull")
    try:
        r.clear_failed()
        assert r.failed_documents() == []
        assert r.wait(timeout=60)
        assert r.status()["documents_pulled"] == 0
    finally:
        r.stop()
    with pytest.raises(cblite.NotFound):
        db.get("plain-05")


def test_doc_ids_pull_asks_for_those_documents_only(db, source):
    wanted = ["plain-01", "conflicted", "deleted", "att-binary"]
    status = replicate(db, source.url(), direction="pull", doc_ids=wanted)
    assert "error" not in status, status
    assert sorted(leaves(db)) == sorted(wanted)
    # CouchDB's replicator's request: POST filter=_doc_ids with the IDs in the body.
    for method, path, body in source.changes_asked:
        assert method == "POST" and "filter=_doc_ids" in path, path
        assert json.loads(body) == {"doc_ids": wanted}
    # CouchDB's "pending" counts the unfiltered feed: the total is the documents' changes.
    assert status["total"] == status["completed"] == 4


def recorded_rev(source, doc_id):
    for row in recorded_rows(source, 0):
        if row["id"] == doc_id:
            return row["changes"][0]["rev"]
    return None


def test_a_revpos_0_attachment_on_a_conflict_branch_arrives(db, source):
    """A third leaf of "conflicted" written to CouchDB with new_edits=false and an inline
    attachment, which CouchDB stores with revpos 0: _bulk_get gives it as a stub that
    looks older than the branch point. The pull fetches it again with its attachments
    (CouchDB's open_revs multipart shape) instead of failing it with 412."""
    rev = "2-fedcba9876543210fedcba9876543210"
    recorded = source.rec.bulk_get[("conflicted", CONFLICT_OTHER)]["ok"]
    parent = "1-" + recorded["_revisions"]["ids"][1]
    content = b"attached inline with new_edits=false\n"
    md5 = base64.b64encode(hashlib.md5(content).digest()).decode()
    att = {"content_type": "text/plain", "revpos": 0, "digest": "md5-" + md5, "length": len(content)}
    doc = {"_id": "conflicted", "_rev": rev, "branch": "third",
           "_revisions": {"start": 2, "ids": [rev[2:], parent[2:]]}}
    source.rec.bulk_get[("conflicted", rev)] = {"ok": dict(doc, _attachments={"note.txt": dict(att, stub=True)})}
    outer, inner = "a" * 32, "b" * 32
    body = json.dumps(dict(doc, _attachments={"note.txt": dict(att, follows=True)})).encode()
    related = (b"--" + inner.encode() + b"\r\nContent-Type: application/json\r\n\r\n" + body +
               b"\r\n--" + inner.encode() + b'\r\nContent-Disposition: attachment; filename="note.txt"\r\n'
               b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(content) + content +
               b"\r\n--" + inner.encode() + b"--")
    source.rec.open_revs[("conflicted", rev)] = (
        'multipart/mixed; boundary="%s"' % outer,
        b"--" + outer.encode() + b'\r\nContent-Type: multipart/related; boundary="' + inner.encode() + b'"\r\n\r\n'
        + related + b"\r\n--" + outer.encode() + b"--")
    source.extra_rows = [{"seq": json.loads(source.rec.changes[0][1])["last_seq"], "id": "conflicted",
                          "changes": [{"rev": rev}]}]
    status = replicate(db, source.url(), direction="pull")
    assert "error" not in status and status["document_failures"] == 0, status
    assert rev in leaves(db)["conflicted"]
    (branch,) = db.default_collection.open_revs("conflicted", [rev], attachments=True)
    assert base64.b64decode(branch["ok"]["_attachments"]["note.txt"]["data"]) == content
    assert db.get("conflicted")["_rev"] == rev          # the highest of three generation-2 leaves
    again = replicate(db, source.url(), direction="pull")
    assert again["documents_pulled"] == 0 and again["documents_to_retry"] == 0


def test_an_empty_attachment_served_to_couchdbs_pull(tmp_path, recordings):
    """CouchDB's replicator asks for a document with attachments as recorded (open_revs,
    Accept: multipart/mixed, no atts_since); it cannot read a zero-length part, so the
    listener sends an empty attachment inline ("data": "") and no part for it."""
    import urllib.request
    served = cblite.Database("served", directory=str(tmp_path))
    server = cblite.Server()
    try:
        server.serve("src1", served)
        served.put({"about": "an empty attachment"}, "att-empty")
        served.set_attachment("att-empty", "empty.txt", b"", content_type="text/plain")
        # Not a compressible type: its part travels as it is (text would go gzip-encoded).
        served.set_attachment("att-empty", "full.txt", b"not empty", content_type="application/octet-stream")
        rev = served["att-empty"]["_rev"]
        (asked,) = [json.loads(line)["request"] for line in open(os.path.join(recordings, "pull-by-couchdb.jsonl"), encoding="utf-8")
                    if json.loads(line)["seq"] == 17]
        path = asked["path"].replace("att-text", "att-empty").replace("1-1e1b6dfb2145bc326409e05b4222068f", rev)
        headers = {k: v for k, v in asked["headers"] if k.lower() in ("accept", "user-agent")}
        with urllib.request.urlopen(urllib.request.Request(server.url.rstrip("/") + path, headers=headers), timeout=30) as answer:
            content_type, body = answer.headers["Content-Type"], answer.read()
        assert content_type.startswith("multipart/mixed")
        assert b"Content-Length: 0\r\n" not in body
        start = body.index(b"{")
        doc = json.JSONDecoder().raw_decode(body[start:].decode("utf-8", "replace"))[0]
        assert doc["_attachments"]["empty.txt"]["data"] == ""
        assert doc["_attachments"]["full.txt"].get("follows") is True
        assert b"not empty" in body
    finally:
        server.stop(timeout=1)
        served.close()


def test_create_target_with_a_wrong_password_leaves_nothing(tmp_path, recordings, cblite_tool):
    """`cblite pull --create-target` refused by the peer (401) leaves no new database
    behind; with the right password the database is made and filled."""
    import subprocess
    s = ReplayServer(os.path.join(recordings, "pull-by-couchdb.jsonl"), user="admin", password="right")
    try:
        def pull(password):
            env = dict(os.environ, CBLITE_PASSWORD=password)
            return subprocess.run([cblite_tool, "pull", "--dir", str(tmp_path), "made", s.url(), "--user", "admin",
                                   "--create-target"], env=env, capture_output=True, text=True, timeout=120)
        wrong = pull("wrong")
        assert wrong.returncode == 1 and "401" in wrong.stdout, wrong
        assert not (tmp_path / "made.cblite2").exists()
        right = pull("right")
        assert right.returncode == 0, right
        assert (tmp_path / "made.cblite2").exists()
        assert "documents pulled: %d" % sum(len(r["changes"]) for r in recorded_rows(s, 0)) in right.stdout
    finally:
        s.stop()


def recorded_answer(recordings, name, seq):
    for line in open(os.path.join(recordings, name), encoding="utf-8"):
        r = json.loads(line)
        if r["seq"] == seq:
            return r["response"]
    raise AssertionError("no record #%d in %s" % (seq, name))


def test_a_design_document_in_the_source_is_pulled_and_pushed_back(db, source, recordings):
    """A source holding a design document (CouchDB's answer for `_design/app`,
    rest-design.jsonl #6, at a design document's changes sequence, rest-documents.jsonl
    #215): it is stored with CouchDB's revision, nothing fails, and a push sends it back
    with that revision."""
    ddoc = json.loads(recorded_answer(recordings, "rest-design.jsonl", 6)["body"])
    assert ddoc["_id"] == "_design/app" and "views" in ddoc
    seq = json.loads(recorded_answer(recordings, "rest-documents.jsonl", 215)["body"])["results"][0]["seq"]
    source.rec.add_document(ddoc, seq)
    status = replicate(db, source.url(), direction="pull", document_events=True)
    assert "error" not in status, status
    assert status["document_failures"] == 0
    assert db.get("_design/app") == ddoc
    assert db.default_collection.all_docs(startkey="_design/", endkey="_design0")["rows"][0]["id"] == "_design/app"
    target = ReplayServer(os.path.join(recordings, "pull-by-couchdb.jsonl"))
    try:
        assert "error" not in replicate(db, target.url(), direction="push")
        sent = [d for method, path, headers, body in target.received if path.endswith("/_bulk_docs")
                for d in json.loads(body)["docs"]]
        (back,) = [d for d in sent if d["_id"] == "_design/app"]
        assert back["_rev"] == ddoc["_rev"] and back["views"] == ddoc["views"]
    finally:
        target.stop()
