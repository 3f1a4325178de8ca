"""Documents, revisions, conflicts, purge, history, pruning, compaction, local docs,
validators, update(), expiration and bad input."""

import ctypes
import json
import re
import threading
import time

import pytest

import cblite
from cblite import _deep_json, _lib
from helpers import eventually, run_with_timeout, strip_meta

REV_RE = re.compile(r"^(\d+)-([0-9a-f]+)$")


def gen(rev):
    return int(rev.split("-", 1)[0])


def fake_rev(generation, fill, like):
    """A syntactically valid revision ID with the same digest length as `like`."""
    digest = like.split("-", 1)[1]
    return f"{generation}-{fill * len(digest)}"


# ---- CRUD ----------------------------------------------------------------------------

def test_put_get_roundtrip(coll):
    doc_id, rev = coll.put({"name": "Ada", "n": 1, "tags": ["x", "y"], "ok": True,
                            "nothing": None, "nested": {"pi": 3.25}}, "ada")
    assert doc_id == "ada"
    assert REV_RE.match(rev) and gen(rev) == 1
    doc = coll.get("ada")
    assert doc == {"_id": "ada", "_rev": rev, "name": "Ada", "n": 1, "tags": ["x", "y"],
                   "ok": True, "nothing": None, "nested": {"pi": 3.25}}
    assert coll["ada"] == doc
    assert "ada" in coll
    assert "nobody" not in coll
    assert coll.count == 1
    assert coll.last_sequence == 1


def test_put_json_text(coll):
    doc_id, rev = coll.put('{"a": [1, 2, {"b": "c"}]}', "txt")
    assert coll["txt"]["a"] == [1, 2, {"b": "c"}]


def test_update_and_stale_parent_conflict(coll):
    _, r1 = coll.put({"v": 1}, "d")
    _, r2 = coll.put({"v": 2}, "d", parent_rev=r1)
    assert gen(r2) == 2
    assert coll["d"]["v"] == 2
    with pytest.raises(cblite.Conflict) as info:
        coll.put({"v": 3}, "d", parent_rev=r1)
    assert info.value.code == 409
    assert coll["d"]["_rev"] == r2
    # "_rev" in the body names the parent when parent_rev is None
    _, r3 = coll.put({"_rev": r2, "v": 3}, "d")
    assert gen(r3) == 3
    with pytest.raises(cblite.Conflict):
        coll.put({"_rev": r2, "v": 4}, "d")


def test_create_existing_is_conflict(coll):
    coll.put({"v": 1}, "d")
    with pytest.raises(cblite.Conflict):
        coll.put({"v": 2}, "d")
    assert coll["d"]["v"] == 1


def test_unknown_parent_is_404(coll):
    _, r1 = coll.put({"v": 1}, "d")
    with pytest.raises(cblite.NotFound):
        coll.put({"v": 2}, "d", parent_rev=fake_rev(1, "a", r1), allow_conflict=True)
    with pytest.raises((cblite.NotFound, cblite.Conflict)):
        coll.put({"v": 2}, "d", parent_rev=fake_rev(1, "a", r1))


def test_generated_uuid_ids(coll):
    ids = set()
    for _ in range(20):
        doc_id, rev = coll.put({"x": 1})
        assert doc_id
        ids.add(doc_id)
        assert coll[doc_id]["x"] == 1
    assert len(ids) == 20
    assert all(not i.startswith("_") for i in ids)
    assert all(len(i) >= 16 for i in ids)


def test_id_from_body(coll):
    doc_id, _ = coll.put({"_id": "frombody", "v": 1})
    assert doc_id == "frombody"
    assert coll["frombody"]["v"] == 1
    with pytest.raises(cblite.BadRequest):
        coll.put({"_id": "other", "v": 1}, "mismatch")
    coll.put({"_id": "same", "v": 1}, "same")


@pytest.mark.parametrize("prop", ["_foo", "_conflicts", "_revisions", "_local_seq", "_x",
                                  "_"])
def test_underscore_properties_rejected(coll, prop):
    with pytest.raises(cblite.BadRequest):
        coll.put({prop: 1, "a": 2}, "d")
    assert "d" not in coll


def test_attachments_metadata_becomes_stubs(coll):
    # Inline data is stored and read back as a stub (more in test_attachments.py).
    att = {"a.txt": {"content_type": "text/plain", "data": "aGk=", "revpos": 1}}
    coll.put({"_attachments": att, "v": 1}, "withatt")
    doc = coll["withatt"]
    assert doc["v"] == 1
    assert doc["_attachments"] == {"a.txt": {"content_type": "text/plain", "length": 2, "revpos": 1,
                                             "digest": "sha1-witfkXg0JglCjW9RssWvTAveakI=",
                                             "md5": "md5-SfaKXIST7CwL9ImCHCH8Ow==",   # CouchDB's digest, beside
                                             "stub": True}}
    with pytest.raises(cblite.BadRequest):
        coll.put({"_attachments": "not an object"}, "badatt")


def test_metadata_properties_accepted(coll):
    _, r1 = coll.put({"_id": "m", "_attachments": {}, "a": 1}, "m")
    _, r2 = coll.put({"_id": "m", "_rev": r1, "_deleted": False, "a": 2})
    assert coll["m"]["a"] == 2
    # nested "_" keys are ordinary data
    coll.put({"inner": {"_private": 1}}, "n")
    assert coll["n"]["inner"] == {"_private": 1}


@pytest.mark.parametrize("bad_id", ["", "_design", "_design/", "_designs/x", "_local/x", "_x",
                                    "a\nb", "tab\there", "nul\x01", "x" * 1025])
def test_invalid_doc_ids(coll, bad_id):
    with pytest.raises(cblite.BadRequest):
        coll.put({"a": 1}, bad_id)
    with pytest.raises((cblite.BadRequest, cblite.NotFound)):
        coll.get(bad_id)
    assert coll.count == 0


def test_design_documents_are_ordinary_documents(coll):
    """"_design/NAME" documents are stored, revised, listed and deleted like any other
    (their code is not run)."""
    ddoc = {"language": "javascript", "views": {"v": {"map": "function(doc){ emit(doc._id); }"}}}
    doc_id, r1 = coll.put(dict(ddoc), "_design/app")
    assert doc_id == "_design/app" and coll["_design/app"]["views"] == ddoc["views"]
    with pytest.raises(cblite.Conflict):
        coll.put(dict(ddoc), "_design/app")
    _, r2 = coll.put({"_id": "_design/app", "_rev": r1, "filters": {}})
    r3 = coll.set_attachment("_design/app", "index.html", b"<p>", content_type="text/html")
    assert coll.get_attachment("_design/app", "index.html") == b"<p>"
    coll.put({}, "plain")
    assert [r["id"] for r in coll.all_docs()["rows"]] == ["_design/app", "plain"]
    assert [r["id"] for r in coll.changes()["results"]] == ["_design/app", "plain"]
    coll.delete("_design/app", r3)
    assert "_design/app" not in coll and coll.count == 1
    assert r2 != r3


@pytest.mark.parametrize("good_id", ["x" * 1024, "é" * 512, "with space", "a/b:c",
                                     "emoji-\U0001F600", "日本語"])
def test_valid_doc_ids(coll, good_id):
    doc_id, _ = coll.put({"a": 1}, good_id)
    assert doc_id == good_id
    assert coll[good_id]["_id"] == good_id


def test_identical_changes_give_identical_revs(dbdir):
    a = cblite.Database("peer-a", dbdir)
    b = cblite.Database("peer-b", dbdir)
    try:
        _, ra1 = a.put({"x": 1, "y": [1, 2], "z": {"k": "v"}}, "doc")
        _, rb1 = b.put('{ "z": {"k":"v"},  "y":[1,2], "x":1 }', "doc")   # other key order
        assert ra1 == rb1
        _, ra2 = a.put({"x": 2}, "doc", parent_rev=ra1)
        _, rb2 = b.put({"x": 2}, "doc", parent_rev=rb1)
        assert ra2 == rb2
        ta = a.delete_document("doc")
        tb = b.delete_document("doc")
        assert ta == tb
        # a different change gives a different revision
        _, ra = a.put({"x": 1}, "other")
        _, rb = b.put({"x": 1.5}, "other")
        assert ra != rb
        # the body's metadata does not enter the digest
        _, rc = a.put({"_id": "third", "x": 1})
        _, rd = b.put({"x": 1}, "third")
        assert rc == rd
    finally:
        a.close()
        b.close()


# ---- deletion and tombstones -------------------------------------------------------------

def test_delete_and_deleted_flag(coll):
    _, r1 = coll.put({"v": 1}, "d")
    t = coll.delete("d")
    assert gen(t) == 2
    with pytest.raises(cblite.NotFound):
        coll.get("d")
    assert "d" not in coll
    tomb = coll.get("d", deleted=True)
    assert tomb["_id"] == "d" and tomb["_rev"] == t and tomb["_deleted"] is True
    assert coll.count == 0
    with pytest.raises(cblite.NotFound):
        coll.delete("d")             # already deleted
    with pytest.raises(cblite.NotFound):
        coll.delete("never")
    assert coll.conflicts("d") == []
    assert coll.history("d") == [t, r1]
    # a new revision on the tombstone revives the document
    _, r3 = coll.put({"v": 3}, "d", parent_rev=t)
    assert gen(r3) == 3
    assert coll["d"]["v"] == 3


def test_delete_with_stale_parent_is_conflict(coll):
    _, r1 = coll.put({"v": 1}, "d")
    coll.put({"v": 2}, "d", parent_rev=r1)
    with pytest.raises(cblite.Conflict):
        coll.delete("d", r1)
    assert coll["d"]["v"] == 2


def test_tombstone_with_properties(coll):
    _, r1 = coll.put({"v": 1}, "d")
    _, t = coll.put({"_deleted": True, "reason": "obsolete", "by": "me"}, "d", parent_rev=r1)
    with pytest.raises(cblite.NotFound):
        coll["d"]
    tomb = coll.get("d", deleted=True)
    assert tomb == {"_id": "d", "_rev": t, "_deleted": True, "reason": "obsolete",
                    "by": "me"}
    assert coll.count == 0
    ch = coll.changes()["results"]
    assert ch[-1]["id"] == "d" and ch[-1].get("deleted") is True


def test_purge(coll):
    _, r1 = coll.put({"v": 1}, "p")
    coll.put({"v": 2}, "p", parent_rev=r1)
    coll.put({"v": 1}, "keep")
    coll.purge("p")
    with pytest.raises(cblite.NotFound):
        coll.get("p", deleted=True)
    with pytest.raises(cblite.NotFound):
        coll.history("p")
    with pytest.raises(cblite.NotFound):
        coll.revision_tree("p")
    with pytest.raises(cblite.NotFound):
        coll.purge("p")
    assert [r["id"] for r in coll.changes()["results"]] == ["keep"]
    assert coll.count == 1
    # the ID can be used again from scratch
    _, again = coll.put({"v": 9}, "p")
    assert gen(again) == 1


def test_purge_tombstone(coll):
    coll.put({"v": 1}, "t")
    coll.delete("t")
    coll.purge("t")
    with pytest.raises(cblite.NotFound):
        coll.get("t", deleted=True)


# ---- history, revision tree, get_revision ----------------------------------------------

def test_history_and_revisions(coll):
    revs = [coll.put({"v": 0}, "h")[1]]
    for i in range(1, 4):
        revs.append(coll.put({"v": i}, "h", parent_rev=revs[-1])[1])
    assert [gen(r) for r in revs] == [1, 2, 3, 4]
    assert coll.history("h") == revs[::-1]
    assert coll.history("h", revs[2]) == revs[2::-1]
    assert coll.history("h", revs[2])[1] == revs[1]    # second element is the parent
    doc = coll.get("h", revisions=True)
    assert doc["_revisions"] == {"start": 4, "ids": [r.split("-", 1)[1] for r in revs[::-1]]}
    doc = coll.get("h", local_seq=True)
    assert doc["_local_seq"] == coll.last_sequence
    old = coll.get_revision("h", revs[1])
    assert old["v"] == 1 and old["_rev"] == revs[1] and old["_id"] == "h"
    with pytest.raises(cblite.NotFound):
        coll.get_revision("h", fake_rev(2, "0", revs[0]))
    with pytest.raises(cblite.NotFound):
        coll.history("h", fake_rev(2, "0", revs[0]))
    with pytest.raises(cblite.NotFound):
        coll.history("nope")
    tree = coll.revision_tree("h")
    assert tree["id"] == "h" and tree["current"] == revs[-1]
    assert tree["sequence"] == coll.last_sequence
    by_rev = {r["rev"]: r for r in tree["revisions"]}
    assert set(by_rev) == set(revs)
    assert [r["rev"] for r in tree["revisions"]] == revs[::-1]        # newest first
    assert by_rev[revs[0]]["parent"] is None
    assert by_rev[revs[2]]["parent"] == revs[1]
    assert by_rev[revs[3]]["leaf"] and by_rev[revs[3]]["current"]
    assert not by_rev[revs[1]]["leaf"] and not by_rev[revs[1]]["current"]
    assert all(r["deleted"] is False for r in tree["revisions"])
    assert by_rev[revs[3]]["has_body"]


def test_pruning_at_max_rev_tree_depth(db):
    db.max_rev_tree_depth = 5
    coll = db.default_collection
    revs = [coll.put({"v": 0}, "deep")[1]]
    for i in range(1, 20):
        revs.append(coll.put({"v": i}, "deep", parent_rev=revs[-1])[1])
    hist = coll.history("deep")
    assert len(hist) == 5
    assert hist == revs[::-1][:5]
    assert len(coll.revision_tree("deep")["revisions"]) == 5
    with pytest.raises(cblite.NotFound):
        coll.get_revision("deep", revs[0])
    assert coll.get("deep", revisions=True)["_revisions"]["start"] == 20
    assert len(coll.get("deep", revisions=True)["_revisions"]["ids"]) == 5
    assert db.integrity_check() == []


def test_compaction_drops_ancestor_bodies(db):
    coll = db.default_collection
    _, r1 = coll.put({"v": 1}, "c")
    _, r2 = coll.put({"v": 2}, "c", parent_rev=r1)
    _, r3 = coll.put({"v": 3}, "c", parent_rev=r2)
    _, b2 = coll.put({"v": "branch"}, "c", parent_rev=r1, allow_conflict=True)
    assert coll.get_revision("c", r2)["v"] == 2          # kept until compaction
    db.compact()
    with pytest.raises(cblite.NotFound):
        coll.get_revision("c", r2)
    with pytest.raises(cblite.NotFound):
        coll.get_revision("c", r1)
    assert coll.get_revision("c", r3)["v"] == 3           # leaves keep their bodies
    assert coll.get_revision("c", b2)["v"] == "branch"
    assert coll["c"]["v"] == 3
    assert coll.history("c") == [r3, r2, r1]              # the tree itself is kept
    tree = {r["rev"]: r for r in coll.revision_tree("c")["revisions"]}
    assert not tree[r1]["has_body"] and not tree[r2]["has_body"]
    assert tree[r3]["has_body"] and tree[b2]["has_body"]
    assert db.integrity_check() == []


# ---- conflicts ---------------------------------------------------------------------------

def test_conflict_via_allow_conflict_and_winner(coll):
    _, r1 = coll.put({"v": 1}, "c")
    _, a2 = coll.put({"v": "a"}, "c", parent_rev=r1)
    _, b2 = coll.put({"v": "b"}, "c", parent_rev=r1, allow_conflict=True)
    assert gen(a2) == gen(b2) == 2 and a2 != b2
    winner, loser = (a2, b2) if a2 > b2 else (b2, a2)     # tie: higher ASCII revid wins
    doc = coll.get("c", conflicts=True)
    assert doc["_rev"] == winner
    assert doc["_conflicts"] == [loser]
    assert coll.conflicts("c") == [winner, loser]
    assert coll.count == 1
    tree = coll.revision_tree("c")
    assert tree["current"] == winner
    leaves = sorted(r["rev"] for r in tree["revisions"] if r["leaf"])
    assert leaves == sorted([a2, b2])
    # extending the loser to generation 3 makes it the winner
    _, l3 = coll.put({"v": "l3"}, "c", parent_rev=loser, allow_conflict=True)
    assert coll["c"]["_rev"] == l3
    assert coll.conflicts("c") == [l3, winner]
    # deleting the generation-3 leaf: the undeleted generation-2 leaf wins again
    t4 = coll.delete("c", l3)
    assert gen(t4) == 4
    assert coll["c"]["_rev"] == winner
    assert coll.conflicts("c") == [winner]
    # resolve: delete the remaining leaf -> all leaves deleted -> highest deleted wins
    t3 = coll.delete("c", winner)
    assert gen(t3) == 3
    with pytest.raises(cblite.NotFound):
        coll.get("c")
    assert coll.get("c", deleted=True)["_rev"] == t4
    assert coll.conflicts("c") == []


def test_updates_on_the_winner_keep_the_conflict_and_prune(db):
    """Saves on the current revision (one statement each) past the depth limit, on a
    conflicted document and on one with attachments, read back through every view of
    the tree."""
    db.max_rev_tree_depth = 3
    coll = db.default_collection
    _, r1 = coll.put({"v": 1}, "w")
    _, a2 = coll.put({"v": "a"}, "w", parent_rev=r1)
    _, b2 = coll.put({"v": "b"}, "w", parent_rev=r1, allow_conflict=True)
    winner, loser = (a2, b2) if a2 > b2 else (b2, a2)
    revs = [winner]
    for i in range(5):
        revs.append(coll.put({"v": i, "price": 10.50}, "w", parent_rev=revs[-1])[1])
        assert gen(revs[-1]) == gen(revs[-2]) + 1
    assert coll.conflicts("w") == [revs[-1], loser]
    assert coll.history("w") == revs[::-1][:3]
    assert coll.get_revision("w", revs[-2])["v"] == 3       # the ancestor keeps its body
    assert coll.get_revision("w", loser)["v"] == ("a" if loser == a2 else "b")
    assert coll["w"]["price"] == 10.5
    with pytest.raises(cblite.Conflict):
        coll.put({"v": "stale"}, "w", parent_rev=revs[-2])
    # a document with attachments: a body-only update inherits them (the general path)
    _, s1 = coll.put({"v": 1, "_attachments": {"a.txt": {"data": "aGVsbG8=", "content_type": "text/plain"}}}, "att")
    _, s2 = coll.put({"v": 2}, "att", parent_rev=s1)
    assert gen(s2) == 2 and list(coll["att"]["_attachments"]) == ["a.txt"]
    assert db.integrity_check() == []


def test_put_existing_and_winner_rule(coll):
    _, r1 = coll.put({"v": 1}, "e")
    _, r2 = coll.put({"v": 2}, "e", parent_rev=r1)
    lo = fake_rev(2, "0", r1)
    hi = fake_rev(2, "f", r1)
    coll.put_existing("e", {"v": "lo"}, [lo, r1])
    coll.put_existing("e", {"v": "hi"}, [hi, r1])
    assert coll["e"]["_rev"] == max(hi, r2)               # all generation 2: ASCII
    assert coll["e"]["_rev"] == hi
    assert set(coll.conflicts("e")) == {hi, r2, lo}
    assert coll.conflicts("e")[0] == hi
    # already-known revision: no-op
    seq = coll.last_sequence
    coll.put_existing("e", {"v": "hi"}, [hi, r1])
    assert coll.last_sequence == seq
    # higher generation with unknown ancestors: added without bodies, it wins
    g4 = fake_rev(4, "1", r1)
    g3 = fake_rev(3, "2", r1)
    coll.put_existing("e", {"v": "g4"}, [g4, g3, lo])
    assert coll["e"]["_rev"] == g4
    assert coll.history("e", g4) == [g4, g3, lo, r1]
    with pytest.raises(cblite.NotFound):
        coll.get_revision("e", g3)                        # no body for the gap
    # a deleted leaf of higher generation does not beat an undeleted one
    g5 = fake_rev(5, "3", r1)
    coll.put_existing("e", {"_deleted": True},
                      [g5, fake_rev(4, "4", r1), fake_rev(3, "5", r1), hi])
    assert coll["e"]["_rev"] == g4


def test_put_existing_new_document(coll):
    like = coll.put({"x": 1}, "model")[1]
    r3 = fake_rev(3, "c", like)
    r2 = fake_rev(2, "b", like)
    r1 = fake_rev(1, "a", like)
    coll.put_existing("remote", {"from": "elsewhere"}, [r3, r2, r1])
    doc = coll["remote"]
    assert doc == {"_id": "remote", "_rev": r3, "from": "elsewhere"}
    assert coll.history("remote") == [r3, r2, r1]


def test_put_existing_all_deleted_highest_deleted_wins(coll):
    like = coll.put({"x": 1}, "model")[1]
    a = fake_rev(2, "a", like)
    b = fake_rev(3, "b", like)
    c = fake_rev(3, "c", like)
    root = fake_rev(1, "1", like)
    coll.put_existing("z", {"_deleted": True}, [a, root])
    coll.put_existing("z", {"_deleted": True}, [b, fake_rev(2, "5", like), root])
    coll.put_existing("z", {"_deleted": True, "k": 1}, [c, fake_rev(2, "6", like), root])
    with pytest.raises(cblite.NotFound):
        coll.get("z")
    tomb = coll.get("z", deleted=True)
    assert tomb["_rev"] == c and tomb["_deleted"] is True and tomb["k"] == 1
    assert coll.conflicts("z") == []


@pytest.mark.parametrize("history", [[], ["1-abc", "2-abc"], ["x"], ["2-a b"], ["-ab"], [1],
                                     "not json", '{"a":1}'],
                         ids=["empty", "ascending", "no-generation", "space-in-digest",
                              "empty-generation", "not-a-string", "not-json", "object"])
def test_put_existing_bad_history(coll, history):
    with pytest.raises(cblite.BadRequest):
        coll.put_existing("bad", {"v": 1}, history)


# ---- local documents -----------------------------------------------------------------

def test_local_documents(coll):
    with pytest.raises(cblite.NotFound):
        coll.get_local("cfg")
    r1 = coll.put_local("cfg", {"a": 1})
    assert r1 == "0-1"
    assert coll.get_local("cfg") == {"_id": "cfg", "_rev": "0-1", "a": 1}
    with pytest.raises(cblite.Conflict):
        coll.put_local("cfg", {"a": 2})                  # exists: needs its revision
    with pytest.raises(cblite.Conflict):
        coll.put_local("cfg", {"a": 2}, "0-7")
    r2 = coll.put_local("cfg", {"a": 2}, r1)
    assert r2 == "0-2"
    assert coll.get_local("cfg")["a"] == 2
    # not documents, not in the feed, not counted
    assert "cfg" not in coll
    assert coll.changes()["results"] == []
    assert coll.count == 0
    with pytest.raises(cblite.Conflict):
        coll.delete_local("cfg", r1)
    coll.delete_local("cfg", r2)
    with pytest.raises(cblite.NotFound):
        coll.get_local("cfg")
    with pytest.raises(cblite.NotFound):
        coll.delete_local("cfg")
    coll.put_local("any", {"z": 1})
    coll.delete_local("any")                             # None: whatever its revision
    with pytest.raises(cblite.NotFound):
        coll.get_local("any")


def test_local_documents_per_collection(db):
    a = db.create_collection("a")
    b = db.create_collection("b")
    a.put_local("x", {"in": "a"})
    with pytest.raises(cblite.NotFound):
        b.get_local("x")


def test_local_bad_json(coll):
    with pytest.raises(cblite.BadRequest):
        coll.put_local("x", "{nope")
    with pytest.raises(cblite.BadRequest):
        coll.put_local("x", "[1]")


# ---- validation ----------------------------------------------------------------------------

def test_validator_rejects_with_message(db):
    coll = db.default_collection
    seen = []

    def validate(new, current):
        seen.append((new, current))
        if new.get("bad"):
            return "bad documents are not allowed"
        if new.get("false"):
            return False
        if new.get("raise"):
            raise ValueError("raised by validator")
        return True

    coll.set_validator("rules", validate)
    _, r1 = coll.put({"ok": 1}, "v")
    assert seen[-1][0]["_id"] == "v" and seen[-1][0]["_rev"] == r1 and seen[-1][1] is None
    with pytest.raises(cblite.Forbidden) as info:
        coll.put({"bad": True}, "v2")
    assert info.value.code == 403
    assert "bad documents are not allowed" in info.value.message
    with pytest.raises(cblite.Forbidden) as info:
        coll.put({"false": True}, "v3")
    assert info.value.message == "rejected by validator rules"
    with pytest.raises(cblite.Forbidden) as info:
        coll.put({"raise": True}, "v4")
    assert "raised by validator" in info.value.message
    assert "v2" not in coll and "v3" not in coll and "v4" not in coll
    # updates see the current revision
    _, r2 = coll.put({"ok": 2}, "v", parent_rev=r1)
    new, current = seen[-1]
    assert new["ok"] == 2 and new["_rev"] == r2
    assert current["_rev"] == r1 and current["ok"] == 1
    # deletions are validated too
    coll.set_validator("nodelete", lambda new, cur: not new.get("_deleted"))
    with pytest.raises(cblite.Forbidden):
        coll.delete("v")
    assert coll["v"]["ok"] == 2
    # and update() and put_existing
    with pytest.raises(cblite.Forbidden):
        coll.update("v", lambda d: {**d, "bad": True})
    with pytest.raises(cblite.Forbidden):
        coll.put_existing("ext", {"bad": True}, [fake_rev(1, "a", r1)])
    # removing validators
    coll.set_validator("nodelete", None)
    coll.set_validator("rules", None)
    coll.put({"bad": True}, "v5")
    coll.delete("v")


def test_validator_long_message_truncated(coll):
    coll.set_validator("long", lambda new, cur: "é" * 2000)
    with pytest.raises(cblite.Forbidden) as info:
        coll.put({"a": 1}, "x")
    assert 0 < len(info.value.message.encode()) < 512
    assert "é" * 20 in info.value.message
    coll.set_validator("long", None)


def test_validator_replaced_by_name(coll):
    coll.set_validator("v", lambda new, cur: "first")
    coll.set_validator("v", lambda new, cur: "second")
    with pytest.raises(cblite.Forbidden) as info:
        coll.put({"a": 1}, "x")
    assert "second" in info.value.message
    coll.set_validator("v", None)


def test_validator_sees_other_handles_writes(dbdir):
    a = cblite.Database("val", dbdir)
    b = cblite.Database("val", dbdir)
    try:
        a.default_collection.set_validator("even", lambda new, cur:
                                           new.get("n", 0) % 2 == 0 or "odd")
        b.put({"n": 2}, "two")
        with pytest.raises(cblite.Forbidden):
            b.put({"n": 3}, "three")
    finally:
        a.close()
        b.close()


def test_validator_only_for_its_collection(db):
    a = db.create_collection("a")
    b = db.create_collection("b")
    a.set_validator("none", lambda new, cur: False)
    b.put({"x": 1}, "ok")
    with pytest.raises(cblite.Forbidden):
        a.put({"x": 1}, "no")
    a.set_validator("none", None)


def test_validator_may_read(coll):
    coll.put({"limit": 2}, "config")

    def validate(new, current):
        if new["_id"] == "config":
            return True
        return new.get("n", 0) <= coll.get("config")["limit"]

    coll.set_validator("limit", validate)
    run_with_timeout(lambda: coll.put({"n": 1}, "one"))
    with pytest.raises(cblite.Forbidden):
        run_with_timeout(lambda: coll.put({"n": 5}, "five"))
    coll.set_validator("limit", None)


def test_set_validator_bad_args(coll):
    err = _lib.cbl_error()
    assert _lib.lib.cbl_collection_set_validator(coll._h, None, _lib.VALIDATE_FN(), None,
                                                 ctypes.byref(err)) == 400


# ---- update() ------------------------------------------------------------------------------

def test_update_creates_modifies_cancels(coll):
    calls = []

    def create(current):
        calls.append(current)
        return {"n": 1}

    rev = coll.update("u", create)
    assert calls == [None]
    assert coll["u"] == {"_id": "u", "_rev": rev, "n": 1}

    def inc(current):
        assert current["_id"] == "u" and current["_rev"] == coll["u"]["_rev"]
        current["n"] += 1
        return current                                     # with _id/_rev: stripped

    rev2 = coll.update("u", inc)
    assert gen(rev2) == 2 and coll["u"]["n"] == 2
    assert coll.update("u", lambda cur: None) is None      # cancelled
    assert coll["u"]["_rev"] == rev2

    class Boom(Exception):
        pass

    def boom(current):
        raise Boom()

    with pytest.raises(Boom):
        coll.update("u", boom)
    assert coll["u"]["_rev"] == rev2
    # after deletion the callback sees None again
    coll.delete("u")
    seen = []
    coll.update("u", lambda cur: seen.append(cur) or {"n": 100})
    assert seen == [None]
    assert coll["u"]["n"] == 100


def test_update_returns_json_text(coll):
    coll.update("t", lambda cur: '{"text": true}')
    assert coll["t"]["text"] is True


def test_update_raw_cancel_is_409(coll):
    err = _lib.cbl_error()
    out = ctypes.c_void_p(99)
    cancel = _lib.UPDATE_FN(lambda ctx, cur, out_json: 0)
    status = _lib.lib.cbl_doc_update(coll._h, b"raw", cancel, None, ctypes.byref(out),
                                     ctypes.byref(err))
    assert status == 409 and out.value is None
    assert "cancel" in err.message.decode()


def test_update_retry_with_concurrent_writer(coll):
    coll.put({"count": 0}, "shared")
    attempts = []

    def writer(current_rev):
        coll.put({"count": 10, "writer": True}, "shared", parent_rev=current_rev)

    def fn(current):
        attempts.append(dict(current))
        if len(attempts) == 1:
            # another writer gets there first: this attempt must conflict
            t = threading.Thread(target=writer, args=(current["_rev"],))
            t.start()
            t.join(20)
            assert not t.is_alive()
        body = {k: v for k, v in current.items() if not k.startswith("_")}
        body["count"] += 1
        body["updater"] = True
        return body

    rev = run_with_timeout(lambda: coll.update("shared", fn))
    assert len(attempts) == 2
    assert attempts[1]["writer"] is True and attempts[1]["count"] == 10
    final = coll["shared"]
    assert final["_rev"] == rev and gen(rev) == 3
    assert final["count"] == 11 and final["writer"] is True and final["updater"] is True


def test_update_many_threads(coll):
    coll.put({"n": 0}, "counter")

    def bump():
        for _ in range(10):
            coll.update("counter", lambda cur: {"n": cur["n"] + 1})

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    assert coll["counter"]["n"] == 40


# ---- expiration --------------------------------------------------------------------------

def _purged(coll, doc_id):
    try:
        coll.get(doc_id, deleted=True)
    except cblite.NotFound:
        return True
    return False


def _wait_gone(coll, doc_id):
    return eventually(lambda: _purged(coll, doc_id), timeout=15.0, interval=0.1)


def test_expiration_get_set(coll):
    coll.put({"a": 1}, "e")
    assert coll.get_expiration("e") is None
    when = int(time.time()) + 3600
    coll.set_expiration("e", when)
    assert coll.get_expiration("e") == when
    import datetime
    dt = datetime.datetime.fromtimestamp(when + 60, tz=datetime.timezone.utc)
    coll.set_expiration("e", dt)
    assert coll.get_expiration("e") == when + 60
    coll.set_expiration("e", None)
    assert coll.get_expiration("e") is None
    with pytest.raises(cblite.NotFound):
        coll.set_expiration("missing", when)
    with pytest.raises(cblite.NotFound):
        coll.get_expiration("missing")


def test_expired_in_past_gets_purged(coll):
    coll.put({"a": 1}, "old")
    coll.put({"a": 2}, "stays")
    coll.set_expiration("old", int(time.time()) - 1)
    assert _wait_gone(coll, "old"), "document expired in the past was not purged"
    assert "stays" in coll
    assert "old" not in [r["id"] for r in coll.changes()["results"]]


def test_expires_in_near_future(db):
    coll = db.default_collection
    coll.put({"a": 1}, "soon")
    coll.set_expiration("soon", int(time.time()) + 2)
    assert "soon" in coll
    assert _wait_gone(coll, "soon"), "document did not expire"


def test_expiration_in_other_collection(db):
    c = db.create_collection("ttl")
    c.put({"a": 1}, "x")
    c.set_expiration("x", int(time.time()) + 1)
    assert _wait_gone(c, "x")


def test_expiration_purged_on_open(dbdir):
    with cblite.Database("ttlopen", dbdir) as db:
        db.put({"a": 1}, "x")
        db.put({"a": 1}, "y")
        db.default_collection.set_expiration("x", int(time.time()) + 1)
    time.sleep(2.1)
    with cblite.Database("ttlopen", dbdir) as db:
        with pytest.raises(cblite.NotFound):
            db.get("x", deleted=True)
        assert "y" in db


def test_compact_purges_expired(db):
    coll = db.default_collection
    coll.put({"a": 1}, "x")
    coll.set_expiration("x", int(time.time()) - 10)
    db.compact()
    with pytest.raises(cblite.NotFound):
        coll.get("x", deleted=True)


# ---- bad input ---------------------------------------------------------------------------

@pytest.mark.parametrize("body", ["{not json", '{"a":}', "", "[1, 2]", "3", '"str"', "null",
                                  "true", '{"a": 1} trailing', '{"a": NaN}'])
def test_invalid_bodies(coll, body):
    with pytest.raises(cblite.BadRequest):
        coll.put(body, "bad")
    assert "bad" not in coll


def test_invalid_utf8_raw(coll):
    lib = _lib.lib
    err = _lib.cbl_error()
    out_id = ctypes.c_void_p(1)
    out_rev = ctypes.c_void_p(1)
    st = lib.cbl_doc_put(coll._h, b"u", b'{"a":"\xff\xfe"}', None, 0, ctypes.byref(out_id),
                         ctypes.byref(out_rev), ctypes.byref(err))
    assert st == 400 and err.code == 400 and err.message
    assert out_id.value is None and out_rev.value is None
    st = lib.cbl_doc_put(coll._h, b"\xc3\x28", b'{"a":1}', None, 0, None, None,
                         ctypes.byref(err))
    assert st == 400
    out = ctypes.c_void_p()
    assert lib.cbl_doc_get(coll._h, b"bad\xff", 0, ctypes.byref(out), ctypes.byref(err)) == 400
    # overlong encoding and a lone surrogate encoded in UTF-8 are not valid UTF-8 either
    for raw in (b'{"a":"\xc0\xaf"}', b'{"a":"\xed\xa0\x80"}'):
        assert lib.cbl_doc_put(coll._h, b"u", raw, None, 0, None, None,
                               ctypes.byref(err)) == 400, raw
    assert coll.count == 0


def test_null_arguments(coll):
    lib = _lib.lib
    err = _lib.cbl_error()
    out = ctypes.c_void_p(1)
    h = coll._h
    assert lib.cbl_doc_get(h, None, 0, ctypes.byref(out), ctypes.byref(err)) == 400
    assert out.value is None
    assert lib.cbl_doc_get(h, b"x", 0, None, ctypes.byref(err)) == 400
    assert lib.cbl_doc_put(h, b"x", None, None, 0, None, None, ctypes.byref(err)) == 400
    assert lib.cbl_doc_delete(h, None, None, None, ctypes.byref(err)) == 400
    assert lib.cbl_doc_purge(h, None, ctypes.byref(err)) == 400
    assert lib.cbl_doc_update(h, b"x", _lib.UPDATE_FN(), None, None, ctypes.byref(err)) == 400
    assert lib.cbl_doc_put_existing(h, b"x", b"{}", None, ctypes.byref(err)) == 400
    assert lib.cbl_doc_history(h, None, None, ctypes.byref(out), ctypes.byref(err)) == 400
    assert lib.cbl_local_put(h, None, b"{}", None, None, ctypes.byref(err)) == 400
    assert lib.cbl_collection_changes(h, 0, None, None, ctypes.byref(err)) == 400
    assert lib.cbl_collection_add_change_listener(h, _lib.CHANGE_FN(), None,
                                                  ctypes.byref(out), ctypes.byref(err)) == 400
    assert out.value is None
    assert lib.cbl_doc_get(None, b"x", 0, ctypes.byref(out), ctypes.byref(err)) == 400
    # err may always be NULL
    assert lib.cbl_doc_get(h, b"nothing", 0, ctypes.byref(out), None) == 404
    assert coll.count == 0


def test_error_messages_filled(coll):
    err = _lib.cbl_error()
    out = ctypes.c_void_p()
    st = _lib.lib.cbl_doc_get(coll._h, b"absent", 0, ctypes.byref(out), ctypes.byref(err))
    assert st == 404 and err.code == 404 and err.message
    with pytest.raises(cblite.NotFound) as info:
        coll.get("absent")
    assert info.value.message and str(info.value).startswith("[404]")


def test_unicode_content(coll):
    body = {"text": "héllo wörld ✓ 日本語 \U0001F600", "ctl": "tab\tnl\nnul\u0000",
            "quote": "\"'\\", "ключ": "значение"}
    coll.put(body, "uni")
    assert strip_meta(coll["uni"]) == strip_meta(body)


def test_large_document(coll):
    body = {"items": [{"i": i, "s": "x" * 50} for i in range(5000)]}
    coll.put(body, "big")
    assert strip_meta(coll["big"]) == strip_meta(body)


def test_numbers(coll):
    body = {"int": 42, "neg": -7, "zero": 0, "big": 2 ** 53, "float": 0.1, "exp": 1.5e300,
            "small": 5e-324, "negf": -2.5, "third": 1 / 3}
    coll.put(body, "nums")
    got = strip_meta(coll["nums"])
    assert got == strip_meta(body)
    assert isinstance(got["int"], int)
    assert isinstance(got["float"], float)


def test_int64_extremes(coll):
    body = {"max64": 2 ** 63 - 1, "min64": -2 ** 63, "near": 2 ** 53 + 1}
    coll.put(body, "i64")
    assert strip_meta(coll["i64"]) == strip_meta(body)


# ---- CouchDB fidelity: numbers and winners (issue 34) ----------------------------------

BIG = [18446744073709551617, 12345678901234567890123, -12345678901234567890123, 2**63, -(2**63) - 1, 10**120]


def test_integers_of_any_size_round_trip_exactly(coll):
    _, rev = coll.put({"big": BIG, "one": BIG[0]}, "big")
    doc = coll.get("big")
    assert doc["big"] == BIG and doc["one"] == BIG[0]
    assert all(type(n) is int for n in doc["big"])
    # A second revision keeps them too, and a replica made from it has the same body.
    coll.put({"_rev": rev, "big": BIG[::-1]}, "big")
    assert coll.get("big")["big"] == BIG[::-1]


def test_conflict_winner_is_couchdbs_between_32_and_40_hex_digests(coll):
    couch = "3-4dc79c95e1a2b3c4d5e6f708192a3b4c"
    ours = "3-748efd35aa5e1b2c3d4e5f60718293a4b5c6d7e8"
    coll.put_existing("mixed", {"side": "root"}, ["2-root", "1-root"])
    coll.put_existing("mixed", {"side": "ours"}, [ours, "2-root", "1-root"])
    coll.put_existing("mixed", {"side": "couchdb"}, [couch, "2-root", "1-root"])
    doc = coll.get("mixed", conflicts=True)
    assert doc["_rev"] == couch, "CouchDB picks its 32-hex leaf (0x4D > '7'); so must we"
    assert doc["side"] == "couchdb"
    assert doc["_conflicts"] == [ours]


def test_replication_state_members_are_kept_as_content(coll):
    """CouchDB's `_replicator` documents carry `_replication_*` members: stored, returned."""
    body = {"source": "a", "target": "b", "_replication_state": "completed",
            "_replication_state_time": "2026-11-28T15:37:12Z", "_replication_stats": {"docs_written": 8}}
    coll.put(body, "job")
    doc = coll.get("job")
    assert doc["_replication_state"] == "completed" and doc["_replication_stats"] == {"docs_written": 8}
    with pytest.raises(cblite.BadRequest):
        coll.put({"_replication_other": 1}, "no")


def _nested(depth):
    """{"a": [[...]]} nested `depth` levels (the dict is the first), built without recursion."""
    inner: list = []
    for _ in range(depth - 2):
        inner = [inner]
    return {"a": inner}


def _depth(value):
    depth, level = 0, [value]
    while level:
        depth += 1
        level = [v for x in level for v in (x.values() if isinstance(x, dict) else x)
                 if isinstance(v, (dict, list))]
    return depth


def test_documents_nested_to_the_limit_round_trip(coll):
    """The library's limit is beyond Python's json module (RecursionError near 1,000 levels):
    the bindings read and write such documents anyway, as dicts and as JSON text, on any
    thread; one level more is the library's 400, and nothing is stored."""
    limit = _lib.CBL_MAX_JSON_DEPTH
    text = "{\"a\":" + "[" * (limit - 1) + "]" * (limit - 1) + "}"
    with pytest.raises(RecursionError):               # what the bindings work around
        json.loads(text)
    doc = _nested(limit)
    assert _depth(doc) == limit
    coll.put(doc, "deep")
    got = coll["deep"]
    same = lambda a, b: _deep_json.dumps(a) == _deep_json.dumps(b)   # == recurses as json does
    assert _depth(got) == limit and same(got["a"], doc["a"])
    coll.put(text, "deep-text")
    assert same(coll["deep-text"]["a"], doc["a"])
    seen = []
    t = threading.Thread(target=lambda: seen.append(same(coll.get("deep")["a"], doc["a"])))
    t.start()
    t.join()
    assert seen == [True]
    with pytest.raises(cblite.BadRequest, match="nesting deeper than %d" % limit):
        coll.put(_nested(limit + 1), "too-deep")
    with pytest.raises(cblite.BadRequest, match="nesting deeper than %d" % limit):
        coll.put("{\"a\":" + "[" * limit + "]" * limit + "}", "too-deep")
    assert "too-deep" not in coll
