"""The replication surface through the bindings: revs_diff, put_existing_revisions,
save_many, open_revs, bulk_get, purge_revisions, wait_for_changes, local_documents, the
changes options (style, doc_ids, filter, filter_params), Database.uuid and set_filter —
and a replication between two databases done with these calls alone.

Revision IDs are fixed (the CouchDB 3.5 data set of Tests/Fixtures/couchdb-3.5), so results
are compared exactly.
"""

import base64
import ctypes
import json
import logging
import threading
import time

import pytest

import cblite
from cblite import _lib
from helpers import run_with_timeout

D_C1 = "d3be72beae043af6e69cf3f780dc4ced"
D_CA = "a43763cb6510199739a3d88e72322572"
D_CB = "0123456789abcdef0123456789abcdef"
R_C1, R_CA, R_CB = "1-" + D_C1, "2-" + D_CA, "2-" + D_CB
D_DEL1, D_DEL2 = "d83483c8194b6aaeb0b613fddae1f48d", "e84cc1ee936866c8ebfe1abdd0ee390a"
R_DEL = "2-" + D_DEL2
D_ATT1 = "1e1b6dfb2145bc326409e05b4222068f"
R_ATT1 = "1-" + D_ATT1
R_P1 = "1-0c822adc66f98458333e775f90a93a6b"
R_MISS = "9-00000000000000000000000000000009"
HELLO_DIGEST = "sha1-qvTGHdzF6KLavt4PO0gs2a6pQ00="

SEED = [
    {"_id": "conflicted", "_rev": R_C1, "type": "conflicted",
     "_revisions": {"start": 1, "ids": [D_C1]}},
    {"_id": "conflicted", "_rev": R_CA, "type": "conflicted", "value": "edited here",
     "_revisions": {"start": 2, "ids": [D_CA, D_C1]}},
    {"_id": "conflicted", "_rev": R_CB, "type": "conflicted", "value": "edited on another peer",
     "_revisions": {"start": 2, "ids": [D_CB, D_C1]}},
    {"_id": "deleted", "_rev": R_DEL, "_deleted": True,
     "_revisions": {"start": 2, "ids": [D_DEL2, D_DEL1]}},
    {"_id": "att-text", "_rev": R_ATT1, "type": "attachment",
     "_attachments": {"readme.txt": {"content_type": "text/plain", "data": b"hello",
                                     "digest": "md5-XUFAKrxLKna5cZ2REBfFkg=="}}},
    {"_id": "plain-01", "_rev": R_P1, "type": "plain", "n": 1, "title": "Plain document 1"},
]

CA = {"_id": "conflicted", "_rev": R_CA, "type": "conflicted", "value": "edited here"}
CB = {"_id": "conflicted", "_rev": R_CB, "type": "conflicted", "value": "edited on another peer"}
CA_REVS = {**CA, "_revisions": {"start": 2, "ids": [D_CA, D_C1]}}
CB_REVS = {**CB, "_revisions": {"start": 2, "ids": [D_CB, D_C1]}}
DEL_REVS = {"_id": "deleted", "_rev": R_DEL, "_deleted": True,
            "_revisions": {"start": 2, "ids": [D_DEL2, D_DEL1]}}
HELLO_MD5 = "md5-XUFAKrxLKna5cZ2REBfFkg=="    # CouchDB's digest of "hello", kept beside ours
ATT_STUB = {"readme.txt": {"content_type": "text/plain", "digest": HELLO_DIGEST, "length": 5,
                           "md5": HELLO_MD5, "revpos": 1, "stub": True}}


@pytest.fixture
def seeded(coll):
    results = coll.put_existing_revisions(SEED)
    assert results == [{"ok": True, "id": d["_id"], "rev": d["_rev"]} for d in SEED]
    return coll


@pytest.fixture
def db2(dbdir):
    database = cblite.Database("otherdb", dbdir)
    yield database
    database.close()


# ---- declarations ----------------------------------------------------------------------

NEW_FUNCTIONS = ["cbl_local_list", "cbl_collection_revs_diff", "cbl_collection_docs_put_existing",
                 "cbl_collection_docs_save", "cbl_doc_open_revs", "cbl_collection_docs_bulk_get",
                 "cbl_doc_purge_revisions", "cbl_collection_changes_wait", "cbl_db_set_filter", "cbl_db_uuid"]


def test_new_functions_are_declared_and_exported():
    for name in NEW_FUNCTIONS:
        assert name in _lib.FUNCTIONS, name
        assert getattr(_lib.lib, name).argtypes is not None, name
        assert name not in cblite.missing_functions
    assert _lib.FILTER_FN._restype_ is ctypes.c_int
    assert _lib.FILTER_FN._argtypes_ == (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)
    assert _lib.FUNCTIONS["cbl_db_set_filter"][1][2] is _lib.FILTER_FN


def test_raw_out_param_is_null_on_failure(coll):
    out = ctypes.c_void_p(12345)
    err = _lib.cbl_error()
    assert _lib.lib.cbl_revs_diff(coll._h, b"[]", ctypes.byref(out), ctypes.byref(err)) == 400
    assert out.value is None and err.code == 400 and err.message
    changed = ctypes.c_int(7)
    assert _lib.lib.cbl_changes_wait(None, 0, 0, ctypes.byref(changed), ctypes.byref(err)) == 400
    assert changed.value == 0


def raw_cases(d, c):
    """(description, status, call(out, err)) for every new out-parameter function."""
    lib = _lib.lib
    return [
        ("local_list NULL coll", 400, lambda o, e: lib.cbl_local_list(None, 0, o, e)),
        ("revs_diff array", 400, lambda o, e: lib.cbl_revs_diff(c, b"[]", o, e)),
        ("revs_diff NULL", 400, lambda o, e: lib.cbl_revs_diff(c, None, o, e)),
        ("put_existing bad JSON", 400, lambda o, e: lib.cbl_docs_put_existing(c, b"[", o, e)),
        ("docs_save object", 400, lambda o, e: lib.cbl_docs_save(c, b"{}", o, e)),
        ("open_revs absent", 404, lambda o, e: lib.cbl_doc_open_revs(c, b"none", None, None, o, e)),
        ("open_revs bad option", 400,
         lambda o, e: lib.cbl_doc_open_revs(c, b"doc", None, b'{"x":1}', o, e)),
        ("open_revs NULL id", 400, lambda o, e: lib.cbl_doc_open_revs(c, None, None, None, o, e)),
        ("bulk_get no docs", 400, lambda o, e: lib.cbl_docs_bulk_get(c, b"{}", None, o, e)),
        ("purge_revisions all", 400,
         lambda o, e: lib.cbl_doc_purge_revisions(c, b"doc", b'"all"', o, e)),
        ("changes unknown filter", 404,
         lambda o, e: lib.cbl_collection_changes(c, 0, b'{"filter":"none"}', o, e)),
        ("changes bad style", 400,
         lambda o, e: lib.cbl_collection_changes(c, 0, b'{"style":"x"}', o, e)),
        ("uuid foreign handle", 400, lambda o, e: lib.cbl_db_uuid(c, o, e)),
        ("uuid NULL", 400, lambda o, e: lib.cbl_db_uuid(None, o, e)),
    ]


def test_raw_contract_on_failure(db, coll):
    coll.put({"v": 1}, "doc")
    for what, status, fn in raw_cases(db._h, coll._h):
        out = ctypes.c_void_p(0x1234)
        err = _lib.cbl_error()
        err.code = -7
        assert fn(ctypes.byref(out), ctypes.byref(err)) == status, what
        assert out.value is None, what
        assert err.code == status and err.message, what
        assert fn(ctypes.byref(out), None) == status, what      # err may be NULL
    err = _lib.cbl_error()
    assert _lib.lib.cbl_db_set_filter(coll._h, b"f", _lib.FILTER_FN(), None, ctypes.byref(err)) == 400
    assert _lib.lib.cbl_db_set_filter(db._h, b"", _lib.FILTER_FN(), None, ctypes.byref(err)) == 400
    assert err.code == 400 and err.message


# ---- put_existing_revisions -------------------------------------------------------------

def test_put_existing_revisions(seeded):
    coll = seeded
    assert coll.get("conflicted")["_rev"] == R_CA          # the higher rev-2 ID wins
    assert coll.conflicts("conflicted") == [R_CA, R_CB]
    assert coll.get("deleted", deleted=True) == {"_id": "deleted", "_rev": R_DEL, "_deleted": True}
    assert coll.history("deleted") == [R_DEL, "1-" + D_DEL1]
    assert coll.get_attachment("att-text", "readme.txt") == b"hello"
    assert coll.get("att-text")["_attachments"] == ATT_STUB     # our digest, not the peer's MD5
    seq = coll.last_sequence
    # already held: success, no change; the {"docs": [...]} form ignores new_edits
    assert coll.put_existing_revisions({"new_edits": False, "docs": [
        {"_id": "conflicted", "_rev": R_CB, "value": "other"}]}) == [
        {"ok": True, "id": "conflicted", "rev": R_CB}]
    assert coll.last_sequence == seq
    assert coll.get_revision("conflicted", R_CB)["value"] == "edited on another peer"
    assert coll.put_existing_revisions([]) == []
    # JSON text is accepted as is
    assert coll.put_existing_revisions('[{"_id":"t","_rev":"1-t"}]') == [
        {"ok": True, "id": "t", "rev": "1-t"}]


def test_put_existing_revisions_grafts_history(seeded):
    coll = seeded
    assert coll.put_existing_revisions([
        {"_id": "plain-01", "_rev": "3-cccc", "n": 3,
         "_revisions": {"start": 3, "ids": ["cccc", "bbbb", R_P1[2:]]}}]) == [
        {"ok": True, "id": "plain-01", "rev": "3-cccc"}]
    assert coll.history("plain-01") == ["3-cccc", "2-bbbb", R_P1]
    with pytest.raises(cblite.NotFound):
        coll.get_revision("plain-01", "2-bbbb")               # added without a body
    # no common ancestor: a new root and a conflict
    coll.put_existing_revisions([{"_id": "plain-01", "_rev": "2-zzzz",
                                  "_revisions": {"start": 2, "ids": ["zzzz", "yyyy"]}}])
    assert coll.conflicts("plain-01") == ["3-cccc", "2-zzzz"]


def test_put_existing_revisions_per_document_errors(seeded, coll):
    seq = coll.last_sequence
    results = coll.put_existing_revisions([
        {"_id": "no-rev"},
        {"_rev": "1-x"},
        {"_id": "_design", "_rev": "1-x"},
        {"_id": "nul\x00id", "_rev": "1-x"},
        {"_id": "gap", "_rev": "2-b", "_revisions": {"start": 1, "ids": ["b", "a"]}},
        {"_id": "stub", "_rev": "1-s", "_attachments": {"x": {"stub": True, "digest": "md5-AAAA"}}},
        {"_id": "b64", "_rev": "1-a", "_attachments": {"n": {"data": "!!!"}}},
        {"_id": "reserved", "_rev": "1-a", "_foo": 1},
        {"_id": "good", "_rev": "1-600d"},
    ])
    assert [(r["id"], r.get("error")) for r in results] == [
        ("no-rev", "bad_request"), ("", "bad_request"), ("_design", "bad_request"),
        ("nul\x00id", "bad_request"), ("gap", "bad_request"), ("stub", "missing_stub"),
        ("b64", "bad_request"), ("reserved", "bad_request"), ("good", None)]
    assert all(r["reason"] for r in results if "error" in r)
    assert results[-1] == {"ok": True, "id": "good", "rev": "1-600d"}
    assert coll.last_sequence == seq + 1
    assert "stub" not in coll and "reserved" not in coll


def test_put_existing_revisions_validator_forbidden(coll):
    coll.set_validator("no-evil", lambda new, cur: not new.get("evil") or "no evil here")
    assert coll.put_existing_revisions([{"_id": "e", "_rev": "1-e", "evil": True},
                                        {"_id": "k", "_rev": "1-k"}]) == [
        {"id": "e", "rev": "1-e", "error": "forbidden", "reason": "no evil here"},
        {"ok": True, "id": "k", "rev": "1-k"}]


def test_put_existing_revisions_bad_requests(coll):
    for bad in ("nope", "{}", '{"docs": {}}', "42", '[{"_id":"a","_rev":"1-a"}, 1]', "[null]"):
        with pytest.raises(cblite.BadRequest):
            coll.put_existing_revisions(bad)
    with pytest.raises(cblite.BadRequest):
        coll.put_existing_revisions([{"_id": "a", "_rev": "1-a"}, 5])
    with pytest.raises(TypeError):
        coll.put_existing_revisions({"not_docs": []})
    with pytest.raises(ValueError):
        coll.put_existing_revisions('[{"_id":"a\x00","_rev":"1-a"}]')   # NUL in JSON text
    assert "a" not in coll and coll.last_sequence == 0


# ---- revs_diff --------------------------------------------------------------------------

def test_revs_diff(seeded):
    coll = seeded
    # the answer CouchDB gives to the same request (client-shapes.jsonl seq 8)
    assert coll.revs_diff({
        "plain-01": [R_P1, "2-00000000000000000000000000000001"],
        "conflicted": [R_CA, R_CB, "3-00000000000000000000000000000002"],
        "brand-new-doc": ["1-00000000000000000000000000000003"],
    }) == {
        "plain-01": {"missing": ["2-00000000000000000000000000000001"], "possible_ancestors": [R_P1]},
        "conflicted": {"missing": ["3-00000000000000000000000000000002"],
                       "possible_ancestors": [R_CA, R_CB]},
        "brand-new-doc": {"missing": ["1-00000000000000000000000000000003"]},
    }
    assert coll.revs_diff({"deleted": [R_DEL], "conflicted": (R_C1,)}) == {}
    assert coll.revs_diff({}) == {}
    # a document ID this collection cannot hold: all missing, not a failed request
    assert coll.revs_diff({"_design/x": ["1-a"], "q\"\\\u2028": ["1-a"]}) == {
        "_design/x": {"missing": ["1-a"]}, "q\"\\\u2028": {"missing": ["1-a"]}}
    for bad in ("[]", '{"a": "1-a"}', '{"a": [1]}', "{"):
        with pytest.raises(cblite.BadRequest):
            coll.revs_diff(bad)
    with pytest.raises(TypeError):
        coll.revs_diff({"a": "1-a"})          # a single string is not a list of revisions
    with pytest.raises(ValueError):
        coll.revs_diff('{"a\x00": ["1-a"]}')


# ---- open_revs --------------------------------------------------------------------------

def test_open_revs(seeded):
    coll = seeded
    every = [{"ok": CB_REVS}, {"ok": CA_REVS}]       # CouchDB's order: siblings ascending
    assert coll.open_revs("conflicted", revisions=True) == every
    assert coll.open_revs("conflicted", "all", revisions=True) == every
    assert coll.open_revs("conflicted") == [{"ok": CB}, {"ok": CA}]
    assert coll.open_revs("conflicted", [R_CA, R_MISS], revisions=True, latest=True) == [
        {"ok": CA_REVS}, {"missing": R_MISS}]
    assert coll.open_revs("conflicted", [R_C1], latest=True) == [{"ok": CA}, {"ok": CB}]
    assert coll.open_revs("conflicted", [R_C1]) == [
        {"ok": {"_id": "conflicted", "_rev": R_C1, "type": "conflicted"}}]
    assert coll.open_revs("conflicted", []) == []
    assert coll.open_revs("conflicted", [R_CA], revs_info=True, conflicts=True,
                          deleted_conflicts=True, local_seq=True) == [{"ok": {
                              **CA, "_local_seq": 3, "_conflicts": [R_CB],
                              "_revs_info": [{"rev": R_CA, "status": "available"},
                                             {"rev": R_C1, "status": "available"}]}}]
    assert coll.open_revs("deleted", revisions=True) == [{"ok": DEL_REVS}]
    assert coll.open_revs("deleted", ["1-" + D_DEL1]) == [{"missing": "1-" + D_DEL1}]
    # attachments: inline (base64) unless the caller has them (atts_since)
    inline = coll.open_revs("att-text", attachments=True)[0]["ok"]["_attachments"]["readme.txt"]
    assert base64.b64decode(inline["data"]) == b"hello" and "stub" not in inline
    assert coll.open_revs("att-text", attachments=True, atts_since=[R_ATT1]) == [
        {"ok": {"_id": "att-text", "_rev": R_ATT1, "type": "attachment", "_attachments": ATT_STUB}}]
    assert coll.open_revs("att-text")[0]["ok"]["_attachments"] == ATT_STUB
    # unknown document
    with pytest.raises(cblite.NotFound):
        coll.open_revs("no-such-doc")
    assert coll.open_revs("no-such-doc", ["1-a"]) == [{"missing": "1-a"}]
    # bad input
    with pytest.raises(cblite.BadRequest):
        coll.open_revs("_design")
    with pytest.raises(cblite.BadRequest):
        coll.open_revs("conflicted", [5])
    with pytest.raises(TypeError):
        coll.open_revs("conflicted", R_CA)            # a string is not a list of revisions
    with pytest.raises(TypeError):
        coll.open_revs("conflicted", atts_since=R_CA)
    with pytest.raises(ValueError):
        coll.open_revs("confl\x00icted")


# ---- bulk_get ---------------------------------------------------------------------------

def test_bulk_get(seeded):
    coll = seeded
    result = coll.bulk_get([
        {"id": "conflicted"}, ("conflicted", R_CB), "deleted", "no-such-doc",
        {"id": "plain-01", "rev": R_MISS}, {"id": "_bad"},
        {"id": "att-text", "atts_since": [R_ATT1]},
    ], revisions=True, attachments=True)
    assert result == {"results": [
        {"id": "conflicted", "docs": [{"ok": CA_REVS}]},
        {"id": "conflicted", "docs": [{"ok": CB_REVS}]},
        {"id": "deleted", "docs": [{"ok": DEL_REVS}]},
        {"id": "no-such-doc", "docs": [{"error": {"id": "no-such-doc", "rev": "undefined",
                                                  "error": "not_found", "reason": "missing"}}]},
        {"id": "plain-01", "docs": [{"error": {"id": "plain-01", "rev": R_MISS,
                                               "error": "not_found", "reason": "missing"}}]},
        {"id": "_bad", "docs": [{"error": {"id": "_bad", "rev": "undefined", "error": "bad_request",
                                           "reason": "document ID must not start with '_' "
                                                     "(except \"_design/NAME\")"}}]},
        {"id": "att-text", "docs": [{"ok": {
            "_id": "att-text", "_rev": R_ATT1, "type": "attachment", "_attachments": ATT_STUB,
            "_revisions": {"start": 1, "ids": [D_ATT1]}}}]},
    ]}
    assert coll.bulk_get([("conflicted", R_C1)], latest=True) == {
        "results": [{"id": "conflicted", "docs": [{"ok": CA}, {"ok": CB}]}]}
    assert coll.bulk_get([]) == {"results": []}
    assert coll.bulk_get({"docs": [{"id": "plain-01"}]})["results"][0]["docs"][0]["ok"]["n"] == 1
    for bad in ('[]', '{"docs": [{"rev": "1-a"}]}', '{"docs": [{"id": 5}]}'):
        with pytest.raises(cblite.BadRequest):
            coll.bulk_get(bad)
    with pytest.raises(TypeError):
        coll.bulk_get([5])
    with pytest.raises(TypeError):
        coll.bulk_get([("a", "1-a", "extra")])


# ---- save_many --------------------------------------------------------------------------

REV_V1 = "1-6fe86833e77d459ae48447b1b12651c52445b4f6"    # {"v": 1} on no parent


def test_save_many(coll):
    assert coll.save_many([{"_id": "a", "v": 1}, {"_id": "b", "v": 1}]) == [
        {"ok": True, "id": "a", "rev": REV_V1}, {"ok": True, "id": "b", "rev": REV_V1}]
    results = coll.save_many([
        {"_id": "a", "title": "no _rev: conflict"},
        {"_id": "a", "_rev": "1-zz", "v": 2},
        {"_id": "a", "_rev": REV_V1, "v": 2},
        {"_id": "_x"},
        {"_id": "b", "_rev": REV_V1, "_deleted": True},
        {"_id": "missing", "_rev": "1-zz"},
        {"made": "an id"},
    ])
    assert [(r["id"], r.get("error")) for r in results[:6]] == [
        ("a", "conflict"), ("a", "conflict"), ("a", None), ("_x", "bad_request"),
        ("b", None), ("missing", "conflict")]
    assert results[2]["rev"].startswith("2-") and results[4]["rev"].startswith("2-")
    assert results[6]["ok"] is True and len(results[6]["id"]) >= 32
    assert coll.get(results[6]["id"])["made"] == "an id"
    assert coll.get("a")["v"] == 2 and "b" not in coll and "missing" not in coll
    coll.set_validator("v", lambda new, cur: "nope" if new.get("evil") else True)
    assert coll.save_many({"docs": [{"_id": "e", "evil": True}]}) == [
        {"id": "e", "error": "forbidden", "reason": "nope"}]
    with pytest.raises(cblite.BadRequest):
        coll.save_many('[{"_id": "new"}, []]')
    assert "new" not in coll


# ---- purge_revisions --------------------------------------------------------------------

def test_purge_revisions(seeded):
    coll = seeded
    assert coll.purge_revisions("conflicted", [R_CB, "7-nope", R_C1]) == [R_CB]
    assert coll.conflicts("conflicted") == [R_CA]
    assert coll.revs_diff({"conflicted": [R_CB]}) == {"conflicted": {"missing": [R_CB]}}
    assert coll.purge_revisions("conflicted", [R_CB]) == []
    assert coll.purge_revisions("no-such-doc", ["1-a"]) == []
    assert coll.purge_revisions("deleted", (R_DEL,)) == [R_DEL]      # only the leaf is named, as CouchDB's
    with pytest.raises(cblite.NotFound):
        coll.get("deleted", deleted=True)
    assert "deleted" not in [e["id"] for e in coll.changes()["results"]]
    with pytest.raises(cblite.BadRequest):
        coll.purge_revisions("_x", [])
    with pytest.raises(TypeError):
        coll.purge_revisions("conflicted", R_CA)
    with pytest.raises(ValueError):
        coll.purge_revisions("conf\x00licted", [R_CA])
    assert coll.conflicts("conflicted") == [R_CA]


# ---- local_documents ---------------------------------------------------------------------

def test_local_documents(coll):
    assert coll.local_documents() == [] and coll.local_documents(include_docs=True) == []
    rev = coll.put_local("client-checkpoint", {"session_id": "c0ffee", "history": []})
    coll.put_local("client-checkpoint", {"session_id": "c0ffee2", "history": []}, rev)
    coll.put_local('a"b/é', {"x": [1, 2]})
    coll.put_local("gone", {})
    coll.delete_local("gone")
    assert coll.local_documents() == [{"id": 'a"b/é', "rev": "0-1"},
                                      {"id": "client-checkpoint", "rev": "0-2"}]
    assert coll.local_documents(include_docs=True) == [
        {"id": 'a"b/é', "rev": "0-1", "doc": {"_id": 'a"b/é', "_rev": "0-1", "x": [1, 2]}},
        {"id": "client-checkpoint", "rev": "0-2",
         "doc": {"_id": "client-checkpoint", "_rev": "0-2", "session_id": "c0ffee2", "history": []}}]
    assert coll.changes() == {"results": [], "last_seq": 0}


# ---- changes options ---------------------------------------------------------------------

def test_changes_style_and_doc_ids(seeded):
    coll = seeded
    conflicted_all = {"seq": 3, "id": "conflicted", "changes": [{"rev": R_CA}, {"rev": R_CB}]}
    deleted = {"seq": 4, "id": "deleted", "changes": [{"rev": R_DEL}], "deleted": True}
    att = {"seq": 5, "id": "att-text", "changes": [{"rev": R_ATT1}]}
    plain = {"seq": 6, "id": "plain-01", "changes": [{"rev": R_P1}]}
    assert coll.changes(style="all_docs") == {"results": [conflicted_all, deleted, att, plain],
                                              "last_seq": 6}
    assert coll.changes(style="main_only")["results"][0] == {
        "seq": 3, "id": "conflicted", "changes": [{"rev": R_CA}]}
    assert coll.changes(doc_ids=["plain-01", "conflicted", "nope"], style="all_docs") == {
        "results": [conflicted_all, plain], "last_seq": 6}
    assert coll.changes(doc_ids=["deleted", "plain-01"], limit=1) == {"results": [deleted],
                                                                     "last_seq": 4}
    assert coll.changes(4, doc_ids=["deleted", "plain-01"], limit=1) == {"results": [plain],
                                                                        "last_seq": 6}
    assert coll.changes(doc_ids=["_design/x"]) == {"results": [], "last_seq": 6}
    assert [e["id"] for e in coll.iter_changes(batch=1, doc_ids=["plain-01", "deleted"])] == [
        "deleted", "plain-01"]
    with pytest.raises(cblite.BadRequest):
        coll.changes(style="x")
    with pytest.raises(cblite.NotFound):
        coll.changes(filter="nobody")
    with pytest.raises(TypeError):
        coll.changes(doc_ids="plain-01")


def test_filters(seeded, db, dbdir, caplog):
    coll = seeded
    seen = []

    def by_type(doc, params):
        seen.append((doc, params))
        if doc.get("_deleted"):
            return params.get("deleted", False)
        return "type" not in params or doc.get("type") == params["type"]

    db.set_filter("by_type", by_type)
    assert coll.changes(filter="by_type", filter_params={"type": "plain"}) == {
        "results": [{"seq": 6, "id": "plain-01", "changes": [{"rev": R_P1}]}], "last_seq": 6}
    assert len(seen) == 4
    assert seen[0] == ({"_id": "conflicted", "_rev": R_CA, "type": "conflicted",
                        "value": "edited here"}, {"type": "plain"})
    assert seen[1][0] == {"_id": "deleted", "_rev": R_DEL, "_deleted": True}
    assert coll.changes(filter="by_type", limit=2)["results"][1]["id"] == "att-text"
    assert seen[-1][1] == {}                                   # no params: {}
    assert coll.changes(filter="by_type", filter_params={"type": "nothing"}) == {
        "results": [], "last_seq": 6}
    assert [e["id"] for e in coll.changes(3, filter="by_type", filter_params={
        "deleted": True, "n": [1, {"k": "\x00"}]})["results"]] == ["deleted", "att-text", "plain-01"]
    assert seen[-1][1] == {"deleted": True, "n": [1, {"k": "\x00"}]}
    # paging with a filter resumes from last_seq
    assert [e["id"] for e in coll.iter_changes(batch=1, filter="by_type",
                                               filter_params={"type": "plain"})] == ["plain-01"]
    # another handle of the same database sees it
    other = cblite.Database("testdb", dbdir)
    try:
        assert other.changes(filter="by_type", filter_params={"type": "attachment"})[
            "results"][0]["id"] == "att-text"
    finally:
        other.close()
    assert coll.changes(filter="by_type", filter_params={"type": "plain"})["results"]

    # an exception in the filter: the change does not pass; logged; nothing crashes
    def broken(doc, params):
        if doc["_id"] == "plain-01":
            raise RuntimeError("filter failed on purpose")
        return True

    db.set_filter("broken", broken)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="cblite"):
        ids = [e["id"] for e in coll.changes(filter="broken")["results"]]
    assert ids == ["conflicted", "deleted", "att-text"]
    records = [r for r in caplog.records if r.name == "cblite"]
    assert len(records) == 1 and records[0].levelno == logging.ERROR
    assert "broken" in records[0].getMessage()
    assert records[0].exc_info and str(records[0].exc_info[1]) == "filter failed on purpose"
    db.set_filter("garbage", lambda doc, params: object())   # truthy: passes
    assert len(coll.changes(filter="garbage")["results"]) == 4

    # removal
    db.set_filter("by_type", None)
    with pytest.raises(cblite.NotFound):
        coll.changes(filter="by_type")
    db.set_filter("by_type", None)                             # twice: fine
    # names
    db.set_filter("f" * 255, lambda d, p: False)
    assert coll.changes(filter="f" * 255)["results"] == []
    for bad in ("", "f" * 256, "tab\there", "del\x7f"):
        with pytest.raises(cblite.BadRequest):
            db.set_filter(bad, lambda d, p: True)
    with pytest.raises(ValueError):
        db.set_filter("nul\x00name", lambda d, p: True)
    with pytest.raises(TypeError):
        db.set_filter("x", "not callable")


def test_filter_removed_at_close(dbdir):
    db = cblite.Database("filtered", dbdir)
    db.put({"k": 1}, "one")
    db.set_filter("f", lambda d, p: True)
    assert len(db.changes(filter="f")["results"]) == 1
    db.close()
    db = cblite.Database("filtered", dbdir)
    try:
        with pytest.raises(cblite.NotFound):
            db.changes(filter="f")
    finally:
        db.close()


def test_filter_replaced_through_another_object_survives_its_close(dbdir):
    a = cblite.Database("shared", dbdir)
    b = cblite.Database("shared", dbdir)
    try:
        a.put({"k": 1}, "one")
        a.set_filter("f", lambda d, p: False)
        b.set_filter("f", lambda d, p: True)       # replaces a's (one registry per file)
        assert b.changes(filter="f")["results"][0]["id"] == "one"
        a.close()                                  # a no longer owns "f": left alone
        assert b.changes(filter="f")["results"][0]["id"] == "one"
    finally:
        a.close()
        b.close()


def test_filter_removes_itself_from_inside(seeded, db):
    calls = []

    def once(doc, params):
        calls.append(doc["_id"])
        if len(calls) == 1:
            db.set_filter("once", None)
        return True

    db.set_filter("once", once)
    result = run_with_timeout(lambda: db.changes(filter="once"))
    assert len(result["results"]) == 4                   # the running feed finishes with it
    with pytest.raises(cblite.NotFound):
        db.changes(filter="once")


# ---- wait_for_changes ---------------------------------------------------------------------

def test_wait_for_changes(seeded, db, dbdir):
    coll = seeded
    assert coll.wait_for_changes(5, timeout=10) is True
    t0 = time.monotonic()
    assert coll.wait_for_changes(6, timeout=0.3) is False
    assert 0.28 <= time.monotonic() - t0 < 3
    assert coll.wait_for_changes(6, timeout=0) is False
    assert coll.wait_for_changes(6, timeout=-1) is False
    with pytest.raises(ValueError):
        coll.wait_for_changes(-1)

    # a write on another thread, through another handle, wakes it promptly
    other = cblite.Database("testdb", dbdir)
    try:
        wrote = {}

        def writer():
            time.sleep(0.06)
            other.put({"by": "writer"}, "woken")
            wrote["at"] = time.monotonic()

        t = threading.Thread(target=writer)
        t0 = time.monotonic()
        t.start()
        assert coll.wait_for_changes(6, timeout=10) is True
        woke = time.monotonic()
        t.join()
        assert woke - t0 < 5
        assert woke - wrote["at"] < 0.3          # woken by the commit, not a half-second poll
        # waiting without a timeout
        t = threading.Thread(target=lambda: (time.sleep(0.05), other.put({}, "second")))
        t.start()
        assert run_with_timeout(lambda: coll.wait_for_changes(7, timeout=None), 30) is True
        t.join()
    finally:
        other.close()


def test_wait_for_changes_database_closed_meanwhile(dbdir):
    db = cblite.Database("waited", dbdir)
    coll = db.default_collection
    box = {}

    def wait():
        try:
            box["result"] = coll.wait_for_changes(0, timeout=20)
        except cblite.CBLiteError as exc:
            box["exc"] = exc

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    db.close()
    t.join(10)
    assert not t.is_alive()
    assert time.monotonic() - t0 < 3
    assert isinstance(box.get("exc"), cblite.BadRequest)


# ---- uuid ----------------------------------------------------------------------------------

def test_uuid(db, db2, dbdir):
    u = db.uuid
    assert isinstance(u, str) and len(u) >= 16 and u == db.uuid
    assert db2.uuid != u
    again = cblite.Database("testdb", dbdir)
    try:
        assert again.uuid == u
    finally:
        again.close()


# ---- closed handles, NUL -------------------------------------------------------------------

def test_closed_database_and_released_collection(dbdir):
    db = cblite.Database("closing", dbdir)
    coll = db.default_collection
    raw = coll._handle
    db.close()
    calls = [
        lambda: coll.revs_diff({}), lambda: coll.put_existing_revisions([]),
        lambda: coll.save_many([]), lambda: coll.open_revs("a"), lambda: coll.bulk_get([]),
        lambda: coll.purge_revisions("a", []), lambda: coll.wait_for_changes(0, 0),
        lambda: coll.local_documents(), lambda: coll.changes(style="all_docs"),
        lambda: db.uuid, lambda: db.set_filter("f", lambda d, p: True),
        lambda: db.set_filter("f", None),
    ]
    for fn in calls:
        with pytest.raises(cblite.BadRequest):
            fn()
    # the raw (released) handle: 400 from the library itself, out-parameter NULL
    out = ctypes.c_void_p(99)
    err = _lib.cbl_error()
    assert _lib.lib.cbl_docs_save(raw, b"[]", ctypes.byref(out), ctypes.byref(err)) == 400
    assert out.value is None


def test_deleted_collection_is_not_found(db):
    c = db.create_collection("gone", scope="s")
    c.put_existing_revisions([{"_id": "a", "_rev": "1-a"}])
    db.delete_collection("gone", scope="s")
    for fn in (lambda: c.revs_diff({"a": ["1-a"]}), lambda: c.open_revs("a", ["1-a"]),
               lambda: c.put_existing_revisions([]), lambda: c.local_documents(),
               lambda: c.wait_for_changes(0, 0)):
        with pytest.raises(cblite.NotFound):
            fn()


def test_nul_in_c_strings_raises_value_error(seeded, db):
    coll = seeded
    for fn in (lambda: coll.open_revs("conflicted\x00"),
               lambda: coll.purge_revisions("conflicted\x00", [R_CB]),
               lambda: coll.revs_diff('{"conflicted":["' + R_CB + '"]}\x00'),
               lambda: coll.save_many('[{"_id":"x"}]\x00junk'),
               lambda: coll.bulk_get('{"docs":[]}\x00'),
               lambda: db.set_filter("by\x00type", lambda d, p: True)):
        with pytest.raises(ValueError):
            fn()
    assert coll.conflicts("conflicted") == [R_CA, R_CB]       # nothing was done
    # inside JSON values a NUL is data, escaped on the way
    assert coll.revs_diff({"a\x00b": ["1-a"]}) == {"a\x00b": {"missing": ["1-a"]}}


# ---- a replication with these calls alone ---------------------------------------------------

def replicate(source: cblite.Collection, target: cblite.Collection, since: int = 0,
              use_bulk_get: bool = True) -> int:
    """One-shot push of `source` into `target` as CouchDB's replicator does it; returns the
    checkpoint (the source's last_seq)."""
    feed = source.changes(since, style="all_docs")
    diff = target.revs_diff({e["id"]: [c["rev"] for c in e["changes"]] for e in feed["results"]})
    docs = []
    if use_bulk_get:
        requests = [{"id": doc_id, "rev": rev, "atts_since": d.get("possible_ancestors", [])}
                    for doc_id, d in diff.items() for rev in d["missing"]]
        if requests:
            for item in source.bulk_get(requests, revisions=True, attachments=True,
                                        latest=True)["results"]:
                for entry in item["docs"]:
                    assert "ok" in entry, entry
                    docs.append(entry["ok"])
    else:
        for doc_id, d in diff.items():
            for entry in source.open_revs(doc_id, d["missing"], revisions=True, attachments=True,
                                          latest=True, atts_since=d.get("possible_ancestors")):
                assert "ok" in entry, entry
                docs.append(entry["ok"])
    if docs:
        results = target.put_existing_revisions(docs)
        assert [r.get("error") for r in results] == [None] * len(docs), results
    # the checkpoint, kept as a local document on both sides
    return feed["last_seq"]


def tree_of(coll, doc_id):
    t = coll.revision_tree(doc_id)
    return t["current"], {(r["rev"], r["parent"], r["deleted"], r["leaf"]) for r in t["revisions"]}


def assert_same(source, target):
    ids = sorted(e["id"] for e in source.changes()["results"])
    assert ids == sorted(e["id"] for e in target.changes()["results"])
    for doc_id in ids:
        assert tree_of(source, doc_id) == tree_of(target, doc_id), doc_id
        s = source.get(doc_id, deleted=True, conflicts=True)
        t = target.get(doc_id, deleted=True, conflicts=True)
        assert s == t, doc_id
        for name in (s.get("_attachments") or {}):
            assert source.get_attachment(doc_id, name) == target.get_attachment(doc_id, name)
        for leaf in source.conflicts(doc_id):
            assert source.get_revision(doc_id, leaf) == target.get_revision(doc_id, leaf)
    assert source.revs_diff({d: [r for r, *_ in tree_of(source, d)[1]] for d in ids}) == {}
    diff = target.revs_diff({d: [r for r, *_ in tree_of(source, d)[1]] for d in ids})
    assert diff == {}, diff


@pytest.mark.parametrize("use_bulk_get", [True, False], ids=["bulk_get", "open_revs"])
def test_round_trip_between_two_databases(db, db2, use_bulk_get):
    src, dst = db.default_collection, db2.default_collection
    # history of several revisions
    _, r1 = src.put({"n": 1}, "plain")
    _, r2 = src.put({"n": 2}, "plain", r1)
    src.put({"n": 3}, "plain", r2)
    # a conflict: two branches on one parent, the higher rev ID wins
    _, c1 = src.put({"v": 0}, "branched")
    src.put({"v": "left"}, "branched", c1)
    src.put({"v": "right"}, "branched", c1, allow_conflict=True)
    assert len(src.conflicts("branched")) == 2
    # a tombstone
    _, d1 = src.put({"bye": True}, "deleted")
    src.delete("deleted", d1)
    # an inline attachment (and a binary one)
    src.put({"_attachments": {"readme.txt": {"content_type": "text/plain",
                                             "data": base64.b64encode(b"hello").decode()},
                              "blob.bin": {"content_type": "application/octet-stream",
                                           "data": base64.b64encode(bytes(range(256))).decode()}},
             "kind": "att"}, "att")
    # revisions made elsewhere, with a deleted leaf among live ones
    src.put_existing_revisions(SEED)

    checkpoint = replicate(src, dst, 0, use_bulk_get)
    assert checkpoint == src.last_sequence
    assert_same(src, dst)
    assert dst.get("branched")["_rev"] == src.get("branched")["_rev"]
    assert dst.get_attachment("att", "blob.bin") == bytes(range(256))
    dst.put_local("checkpoint", {"last_seq": checkpoint})

    # round 2: new changes only, an attachment added beside an unchanged one (sent with
    # atts_since: the unchanged one travels as a stub), a conflict resolved, a new tombstone
    att = src.get("att")
    src.put({**{k: v for k, v in att.items() if k != "_rev"},
             "_attachments": {**att["_attachments"],
                              "notes.txt": {"content_type": "text/plain",
                                            "data": base64.b64encode(b"notes").decode()}}},
            "att", att["_rev"])
    winner, loser = src.conflicts("branched")
    src.delete("branched", loser)
    src.put({"v": "merged"}, "branched", winner)
    src.delete("plain")
    assert dst.revs_diff({"att": [src.get("att")["_rev"]]})["att"]["possible_ancestors"] == [
        att["_rev"]]
    sent = src.bulk_get([{"id": "att", "rev": src.get("att")["_rev"], "atts_since": [att["_rev"]]}],
                        attachments=True, revisions=True)["results"][0]["docs"][0]["ok"]["_attachments"]
    assert sent["readme.txt"]["stub"] is True and "data" not in sent["readme.txt"]
    assert base64.b64decode(sent["notes.txt"]["data"]) == b"notes"
    since = dst.get_local("checkpoint")["last_seq"]
    assert len(src.changes(since)["results"]) == 3
    replicate(src, dst, since, use_bulk_get)
    assert_same(src, dst)
    assert dst.get_attachment("att", "notes.txt") == b"notes"
    assert dst.get_attachment("att", "readme.txt") == b"hello"
    assert dst.conflicts("branched") == [src.get("branched")["_rev"]]
    with pytest.raises(cblite.NotFound):
        dst.get("plain")
    # nothing left to send, and the reverse direction has nothing either
    assert replicate(src, dst, src.last_sequence, use_bulk_get) == src.last_sequence
    replicate(dst, src, 0, use_bulk_get)
    assert_same(src, dst)


def test_filter_may_read_the_database(seeded, db):
    coll = seeded

    def same_type_as_plain(doc, params):
        return doc.get("type") == coll.get("plain-01")["type"]   # a read inside the call

    db.set_filter("reads", same_type_as_plain)
    result = run_with_timeout(lambda: coll.changes(filter="reads"))
    assert [e["id"] for e in result["results"]] == ["plain-01"]


def test_bulk_get_on_deleted_collection_is_not_found(db):
    c = db.create_collection("gone", scope="s")
    c.put_existing_revisions([{"_id": "a", "_rev": "1-a"}])
    db.delete_collection("gone", scope="s")
    with pytest.raises(cblite.NotFound):
        c.bulk_get(["a"])
