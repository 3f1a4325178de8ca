"""Design documents' JavaScript: the engine's limits, and Duktape compiled into the
library (no symbol of it exported, no libduktape needed)."""

import json
import shutil
import subprocess

import pytest

import cblite


def test_limits_round_trip_and_refuse_a_tiny_cap():
    assert cblite.js_limits() == (5000, 64 << 20)
    try:
        cblite.set_js_limits(250, 8 << 20)
        assert cblite.js_limits() == (250, 8 << 20)
        with pytest.raises(cblite.BadRequest, match="memory_bytes"):
            cblite.set_js_limits(100, 1000)
        assert cblite.js_limits() == (250, 8 << 20)
    finally:
        cblite.set_js_limits()
    assert cblite.js_limits() == (5000, 64 << 20)


@pytest.mark.skipif(shutil.which("nm") is None or shutil.which("readelf") is None, reason="binutils")
def test_duktape_is_compiled_in_and_hidden():
    path = cblite.library_path
    exported = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    names = [line.split()[-1] for line in exported.splitlines() if line.strip()]
    assert any(n.startswith("cbl_js_") for n in names)
    assert [n for n in names if n.startswith(("duk_", "cblite_js"))] == []
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    assert "duktape" not in dynamic


def design():
    """A new copy each time (put writes _id and _rev into the dict it is given)."""
    return json.loads(json.dumps(DESIGN))


DESIGN = {
    "views": {
        "by_age": {"map": "function (doc) { if (doc.type == 'person') emit(doc.age, doc.name); }",
                   "reduce": "_count"},
        # Each kind of hostile code fails its own document only: an endless loop, a throw,
        # deep recursion, a huge allocation, eval of a loop, and reaching for I/O (there is
        # no binding: require is the design document's, print does not exist).
        "hostile": {"map": "function (doc) { if (doc.loop) for (;;) {} if (doc.bad) throw 'no';"
                           " if (doc.deep) (function f() { return f() + 1; })();"
                           " if (doc.huge) { var s = 'x'; for (;;) s = s + s; }"
                           " if (doc.evil) eval('for (;;) {}');"
                           " if (doc.io) print(require('fs'));"
                           " emit(doc._id); }"},
    }
}


def _rows(result):
    with result:
        return result.rows()


def _people(coll):
    for i, name in enumerate(["ann", "bob", "cy", "di", "ed"]):
        coll.put({"type": "person", "age": 30 + i % 2, "name": name}, f"p{i}")
    coll.put({"type": "pet", "age": 2}, "pet")


def test_a_design_document_view_by_name_gives_the_native_views_rows(coll):
    _people(coll)
    coll.put(design(), "_design/d")

    def native(doc, emit):
        if doc.get("type") == "person":
            emit(doc["age"], doc["name"])

    nv = coll.view("native")
    nv.set_map_reduce(native, reduce="_count", version="1")

    def strip(rows):
        return [(r.key, r.value, r.doc_id) for r in rows]

    for options in ({"reduce": False}, {}, {"group": True}, {"reduce": False, "descending": True, "limit": 2},
                    {"reduce": False, "sorted": False}):
        assert strip(_rows(coll.query("d/by_age", **options))) == strip(nv.rows(**options)), options
    assert [(r.key, r.value) for r in _rows(coll.database.query("d/by_age", group=True))] == [(30, 3), (31, 2)]
    v = coll.view("d/by_age")
    assert v.rows()[0].value == 5
    v.release()
    nv.release()


def test_a_javascript_reduce_sees_doc_ids_and_ends_with_a_rereduce(coll):
    """CouchDB's reduce arguments: [key, doc ID] pairs, then a final rereduce of the partial
    results, even of one."""
    for i, k in enumerate([1, 2, 2]):
        coll.put({"k": k}, "abc"[i])
    coll.put({"views": {"seen": {
        "map": "function (doc) { emit(doc.k, null); }",
        "reduce": "function (keys, values, rereduce) { return rereduce ? {re: values} : keys; }"}}}, "_design/r")
    assert [r.value for r in _rows(coll.query("r/seen"))] == [{"re": [[[1, "a"], [2, "b"], [2, "c"]]]}]
    assert [(r.key, r.value) for r in _rows(coll.query("r/seen", group=True))] == \
        [(1, {"re": [[[1, "a"]]]}), (2, {"re": [[[2, "b"], [2, "c"]]]})]


def test_hostile_map_functions_fail_their_document_only(coll):
    cblite.set_js_limits(200, 8 << 20)
    try:
        coll.put({"n": 1}, "a")
        for kind in ("loop", "bad", "deep", "huge", "evil", "io"):
            coll.put({kind: True}, kind)
        coll.put({"n": 2}, "z")
        coll.put(design(), "_design/d")
        assert [r.doc_id for r in _rows(coll.query("d/hostile"))] == ["a", "z"]
        # A function whose expression loops as it is evaluated is refused when written
        # (400, as not compiling), not a 500.
        with pytest.raises(cblite.BadRequest, match="execution timeout"):
            coll.put({"views": {"v": {"map": "(function () { for (;;) {} })()"}}}, "_design/loop")
    finally:
        cblite.set_js_limits()


PUBLIC = {"filters": {"pub": "function (doc, req) { return doc.kind == req.query.kind; }"}}


def _ids(db):
    return sorted(k for k in db.keys() if not k.startswith("_design/"))


def test_design_filters_in_changes_and_both_directions_of_replication(dbdir):
    import os
    local = cblite.Database("local", os.path.join(dbdir, "l"))
    remote = cblite.Database("remote", os.path.join(dbdir, "r"))
    server = cblite.Server()
    try:
        server.serve("remote", remote)
        url = server.url + "remote"
        for db, prefix in ((local, "l"), (remote, "r")):
            db.put(json.loads(json.dumps(PUBLIC)), "_design/app")
            for i, kind in enumerate(["public", "private", "public"]):
                db.put({"kind": kind}, f"{prefix}{i}")
        feed = local.default_collection.changes(filter="app/pub", filter_params={"kind": "public"})
        assert [r["id"] for r in feed["results"]] == ["l0", "l2"]
        assert [r["id"] for r in local.default_collection.changes(filter="_design")["results"]] == ["_design/app"]
        # Push runs the filter here; pull names it to the peer (our listener runs it there).
        with local.replicate(url, direction="push", filter="app/pub", filter_params={"kind": "public"}) as r:
            assert r.wait(30)
        assert _ids(remote) == ["l0", "l2", "r0", "r1", "r2"]
        with local.replicate(url, direction="pull", pull_filter="app/pub", pull_filter_params={"kind": "public"}) as r:
            assert r.wait(30)
        assert _ids(local) == ["l0", "l1", "l2", "r0", "r2"]
    finally:
        server.stop(timeout=1)
        local.close()
        remote.close()


VALIDATOR = ("function (newDoc, oldDoc, userCtx, secObj) {"
             " if (newDoc.forbid) throw({forbidden: 'no ' + newDoc._id});"
             " if (newDoc.login) throw({unauthorized: 'log in'});"
             " if (newDoc.other) throw('plain');"
             " if (newDoc.show) throw({forbidden: JSON.stringify({old: oldDoc, user: userCtx, sec: secObj})}); }")


def test_validate_doc_update_refuses_writes_as_couchdb(coll):
    coll.put({"v": 1}, "d")
    coll.put({"validate_doc_update": VALIDATOR}, "_design/v")
    with pytest.raises(cblite.Forbidden, match="no x"):
        coll.put({"forbid": True}, "x")
    with pytest.raises(cblite.Unauthorized, match="log in"):
        coll.put({"login": True}, "x")
    with pytest.raises(cblite.InternalError, match="plain"):
        coll.put({"other": True}, "x")
    with pytest.raises(cblite.Forbidden) as seen:
        coll.put({"show": True}, "d", coll.get("d")["_rev"])
    shown = json.loads(seen.value.message)
    assert shown["old"]["v"] == 1 and shown["old"]["_id"] == "d"
    assert shown["user"] == {"db": coll.database.name, "name": None, "roles": ["_admin"]}
    assert shown["sec"] == {}
    # A replicated batch fails the refused document alone.
    results = coll.put_existing_revisions([{"_id": "p", "_rev": "1-aa", "forbid": 1}, {"_id": "q", "_rev": "1-bb"}])
    assert [r.get("error") for r in results][1] is None and results[0].get("error")
    with pytest.raises(cblite.NotFound):
        coll.get("p")
    assert coll.get("q")["_rev"] == "1-bb"
    # Design documents are not run through it; removing it lifts it.
    coll.put({"forbid": True}, "_design/other")
    coll.delete("_design/v")
    coll.put({"forbid": True}, "x")
