"""Views, queries, all-docs queries and live queries through the Python bindings."""

import ctypes
import os
import random
import threading
import time

import pytest

import cblite
from cblite import views

# CouchDB's collation sample keys, in their documented order.
COUCH_ORDER = [
    None, False, True, 1, 2, 3.0, 4,
    "a", "A", "aa", "b", "B", "ba", "bb",
    ["a"], ["b"], ["b", "c"], ["b", "c", "a"], ["b", "d"], ["b", "d", "e"],
    {"a": 1}, {"a": 2}, {"b": 1}, {"b": 2}, {"b": 2, "a": 1}, {"b": 2, "c": 2},
]


def by_k(doc, emit):
    if "k" in doc:
        if "v" in doc:
            emit(doc["k"], doc["v"])
        else:
            emit(doc["k"])


@pytest.fixture
def view(coll):
    v = coll.view("byK")
    v.set_map_reduce(by_k, version="1")
    yield v
    v.release()


@pytest.fixture
def letters(coll):
    for i, k in enumerate("abcde"):
        coll.put({"k": k, "v": i + 1}, f"d{i + 1}")
    coll.put({"k": "c", "v": 10}, "d6")
    return coll


def ids(v, **o):
    return [r.doc_id for r in v.rows(**o)]


def keys(v, **o):
    return [r.key for r in v.rows(**o)]


def values(v, **o):
    return [r.value for r in v.rows(**o)]


def test_collation_matches_couchdb_sample_order(coll):
    order = list(range(len(COUCH_ORDER)))
    random.shuffle(order)
    for i, n in enumerate(order):
        coll.put({"n": n}, f"d{i:02d}")
    v = coll.view("sample")
    v.set_map_reduce(lambda doc, emit: emit(COUCH_ORDER[doc["n"]]), version="1")
    got = [r.key for r in v.query()]
    assert got == COUCH_ORDER
    # Object keys keep their emitted member order (Python dicts keep insertion order).
    assert list(got[-2].keys()) == ["b", "a"]
    assert [r.key for r in v.query(descending=True)] == list(reversed(COUCH_ORDER))
    v.release()


def test_unicode_strings_use_uca(coll):
    words = ["zebra", "Ärger", "apple", "Apple", "été", "ete", "~tilde", "10", "9", "日本"]
    for i, w in enumerate(words):
        coll.put({"k": w}, f"w{i}")
    v = coll.view("words")
    v.set_map_reduce(by_k, version="1")
    assert keys(v) == ["~tilde", "10", "9", "apple", "Apple", "Ärger", "ete", "été", "zebra", "日本"]
    v.release()


def test_every_option(view, letters):
    v = view
    assert ids(v) == ["d1", "d2", "d3", "d6", "d4", "d5"]
    assert ids(v, key="c") == ["d3", "d6"]
    assert ids(v, keys=["e", "nope", "a"]) == ["d5", "d1"]
    assert ids(v, startkey="b", endkey="d") == ["d2", "d3", "d6", "d4"]
    assert ids(v, startkey="b", endkey="d", inclusive_end=False) == ["d2", "d3", "d6"]
    assert ids(v, startkey="c", startkey_docid="d6") == ["d6", "d4", "d5"]
    assert ids(v, endkey="c", endkey_docid="d3") == ["d1", "d2", "d3"]
    assert ids(v, descending=True, startkey="d", endkey="b") == ["d4", "d6", "d3", "d2"]
    assert ids(v, descending=True, startkey="b", endkey="d") == []
    assert ids(v, limit=2, skip=1) == ["d2", "d3"]
    assert ids(v, descending=True, limit=1) == ["d5"]
    assert values(v, startkey="c", limit=2) == [3, 10]
    row = v.rows(key="a", include_docs=True)[0]
    assert row.doc["_id"] == "d1" and row.doc["v"] == 1
    assert row.source_doc_id == "d1" and row.sequence == 1
    with pytest.raises(cblite.BadRequest):
        v.rows(limit=-1)
    with pytest.raises(cblite.BadRequest):
        v.rows(bogus=True)
    with pytest.raises(cblite.BadRequest):
        v.rows(reduce=True)


def test_prefix_matching(view, coll):
    for i, k in enumerate(["foo", "foolish", "Foolish", "fop", "fong"]):
        coll.put({"k": k}, f"s{i}")
    for i, k in enumerate([[1], [1, "x"], [1, "xtc"], [1, "y"], [2]]):
        coll.put({"k": k}, f"a{i}")
    assert keys(view, startkey="foo", endkey="foo", prefix_match_level=1) == ["foo", "foolish", "Foolish"]
    assert keys(view, startkey=[1], endkey=[1], prefix_match_level=1) == [[1], [1, "x"], [1, "xtc"], [1, "y"]]
    assert keys(view, startkey=[1, "x"], endkey=[1, "x"], prefix_match_level=2) == [[1, "x"], [1, "xtc"]]
    assert keys(view, descending=True, startkey="foo", endkey="foo", prefix_match_level=1) == \
        ["Foolish", "foolish", "foo"]


def test_builtin_reducers_and_grouping(coll, letters):
    v = coll.view("r")
    v.set_map_reduce(by_k, reduce="_sum", version="1")
    assert v.rows()[0].key is None and values(v) == [25]
    assert values(v, reduce=False)[:2] == [1, 2]
    assert values(v, group=True) == [1, 2, 13, 4, 5]
    v.set_map_reduce(by_k, reduce="_count", version="1")
    assert values(v, startkey="b", endkey="c") == [3]
    v.set_map_reduce(by_k, reduce="_stats", version="1")
    assert values(v) == [{"sum": 25, "count": 6, "min": 1, "max": 10, "sumsqr": 155}]
    with pytest.raises(cblite.BadRequest):
        v.set_map_reduce(by_k, reduce="_median", version="1")
    v.set_map_reduce(by_k, reduce="_sum", version="2")
    for i, (g, a, t) in enumerate([("rock", "rh", 300), ("rock", "rh", 200), ("rock", "muse", 100), ("jazz", "miles", 50)]):
        coll.put({"k": [g, a, f"t{i}"], "v": t}, f"t{i}")
    assert [(r.key, r.value) for r in v.query(group_level=2, startkey=[])] == \
        [(["jazz", "miles"], 50), (["rock", "muse"], 100), (["rock", "rh"], 500)]
    assert [(r.key, r.value) for r in v.query(group_level=1)][-2:] == [(["jazz"], 50), (["rock"], 600)]
    assert keys(v, group_level=1)[:5] == ["a", "b", "c", "d", "e"]   # non-array keys at level 1
    assert len(v.rows(group_level=2)) == 3                             # ...left out at level 2
    v.release()


SUM_ERROR = ("The _sum function requires that map values be numbers, arrays of numbers, or objects. "
             "Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided "
             "that the values for all fields are themselves numbers, arrays of numbers, or objects.")


def test_sum_over_objects_and_values_it_cannot_sum(coll):
    """CouchDB's _sum: objects field by field (recursively, with arrays and numbers mixed as
    CouchDB mixes them); strings make the reduced value CouchDB's error object, named after
    the value CouchDB meets first (the group's last row), and the query still succeeds."""
    coll.put({"k": ["o", 1], "v": {"n": 1, "m": {"p": [1, 2]}}}, "o1")
    coll.put({"k": ["o", 2], "v": {"n": 2, "m": {"p": 3}, "x": 7}}, "o2")
    coll.put({"k": ["s", 1], "v": "apple"}, "s1")
    coll.put({"k": ["s", 2], "v": "pea"}, "s2")
    v = coll.view("sums")
    v.set_map_reduce(by_k, reduce="_sum", version="1")
    assert values(v, startkey=["o"], endkey=["o", {}]) == [{"m": {"p": [4, 2]}, "n": 3, "x": 7}]
    error = {"error": "builtin_reduce_error", "reason": SUM_ERROR, "caused_by": "pea"}
    assert [(r.key, r.value) for r in v.query(group_level=1)] == [(["o"], {"m": {"p": [4, 2]}, "n": 3, "x": 7}),
                                                                   (["s"], error)]
    assert values(v) == [error]
    assert values(v, startkey=["s", {}], endkey=["s"], descending=True) == [dict(error, caused_by="apple")]
    coll.put({"k": ["n", 1], "v": 5}, "n1")
    assert values(v, startkey=["n"], endkey=["o", {}]) == [dict(error, caused_by=5)]   # an object's sum meets a number
    v.release()


def test_custom_reduce_with_rereduce(db, coll):
    with db.transaction():
        for i in range(700):
            coll.put({"k": i % 2, "v": i}, f"n{i:04d}")
    calls = {"reduce": 0, "rereduce": 0, "max": 0}

    def reduce(keys, values, rereduce):
        calls["max"] = max(calls["max"], len(values))
        if rereduce:
            assert keys is None
            calls["rereduce"] += 1
            return sum(values)
        assert len(keys) == len(values)
        calls["reduce"] += 1
        return len(values)

    v = coll.view("c")
    v.set_map_reduce(by_k, reduce=reduce, version="1")
    assert values(v) == [700]
    assert calls["rereduce"] > 0 and calls["max"] <= 256
    assert values(v, group=True) == [350, 350]

    def broken(keys, values, rereduce):
        raise ZeroDivisionError("reduce bug")
    v.set_map_reduce(by_k, reduce=broken, version="1")
    with pytest.raises(ZeroDivisionError):
        v.rows()
    v.release()


def test_count_agrees_with_a_counting_reduce_across_pages(db, coll):
    # _count is computed by SQLite; a Python reducer that counts goes row by row. They
    # agree on groups (1 and 1.0 are one key; so are the two spellings of é), ranges and
    # directions, over more rows than an index page holds.
    spellings = [1, 1.0, 2, "a", "A", "\u00e9", "e\u0301", None, [1, 2], {"x": 1}]
    with db.transaction():
        for i in range(5000):
            coll.put({"k": spellings[i % len(spellings)]}, f"p{i:05d}")
    counting = coll.view("counting")
    counting.set_map_reduce(by_k, reduce="_count", version="1")
    python = coll.view("python")
    python.set_map_reduce(by_k, reduce=lambda k, v, rereduce: sum(v) if rereduce else len(v), version="1")
    for options in [{}, {"group": True}, {"group": True, "descending": True},
                    {"startkey": 1, "endkey": "a", "group": True}, {"key": "\u00e9"},
                    {"startkey": 2, "endkey": 1, "descending": True, "inclusive_end": False}]:
        assert values(counting, **options) == values(python, **options), options
    assert values(counting, group=True) == [500, 1000, 500, 500, 500, 1000, 500, 500]
    rows = counting.rows(key=1, reduce=False)
    assert len(rows) == 1000 and [r.doc_id for r in rows] == sorted(r.doc_id for r in rows)
    down = counting.rows(key=1, reduce=False, descending=True, startkey_docid="p04000",
                         endkey_docid="p00500")
    assert [r.doc_id for r in down] == sorted((r.doc_id for r in rows if "p00500" <= r.doc_id <= "p04000"),
                                               reverse=True)
    counting.release()
    python.release()


def test_map_exception_skips_that_document_and_logs(coll, caplog):
    """CouchDB's rule: a map function raising on one document logs it and indexes nothing
    for that document (rows it emitted before raising included); the others are indexed."""
    coll.put({"k": 1}, "a")
    coll.put({"k": "boom"}, "bad")
    coll.put({"k": 3}, "c")
    v = coll.view("bad")

    def fragile(doc, emit):
        emit("before", doc["_id"])
        if doc["k"] == "boom":
            raise RuntimeError("map bug")
        emit(doc["k"])
    v.set_map_reduce(fragile)
    with caplog.at_level("ERROR", logger="cblite"):
        rows = v.rows()
    assert sorted((r.key, r.doc_id) for r in rows if r.key != "before") == [(1, "a"), (3, "c")]
    assert sorted(r.value for r in rows if r.key == "before") == ["a", "c"]
    assert any("map bug" in (r.exc_text or "") or "map function raised" in r.getMessage()
               for r in caplog.records)
    assert "'bad'" in caplog.text
    # fixed later: the document is indexed once it changes
    coll.put({"k": 2}, "bad", parent_rev=coll["bad"]["_rev"])
    assert sorted(r.key for r in v.rows() if r.key != "before") == [1, 2, 3]
    v.release()


def test_emit_of_an_unstorable_value_skips_the_document(coll, caplog):
    coll.put({"k": 1}, "a")
    coll.put({"k": 2}, "b")
    v = coll.view("big")
    v.set_map_reduce(lambda doc, emit: emit(doc["k"], float("nan") if doc["k"] == 2 else 1))
    with caplog.at_level("ERROR", logger="cblite"):
        assert [r.doc_id for r in v.rows()] == ["a"]
    assert "ValueError" in caplog.text
    v.release()


def _map_one(doc, emit):
    emit(doc["k"], 1)


def _map_two(doc, emit):
    emit(doc["k"], 2)


def test_version_is_derived_from_the_code(coll):
    """Without version=, editing the map function rebuilds the index; the same code
    keeps it; an explicit version is honoured as given."""
    coll.put({"k": 1}, "a")
    v = coll.view("derived")
    first = v.set_map_reduce(_map_one)
    assert first == cblite.code_version(_map_one)
    assert [r.value for r in v.rows()] == [1]
    assert v.set_map_reduce(_map_one) == first            # same code: same version
    info = v.info()
    assert [r.value for r in v.rows()] == [1] and v.info()["last_sequence"] == info["last_sequence"]
    second = v.set_map_reduce(_map_two)                   # new code: new version, rebuilt
    assert second != first
    assert [r.value for r in v.rows()] == [2]
    assert v.set_map_reduce(_map_two, reduce="_sum") != second     # reduce is part of it
    assert v.set_map_reduce(_map_two, reduce="_count") != v.set_map_reduce(_map_two, reduce="_sum")
    # an explicit version wins: changing the code under the same version serves the old index
    assert v.set_map_reduce(_map_one, version="7") == "7"
    assert [r.value for r in v.rows(reduce=False)] == [1]
    v.set_map_reduce(_map_two, version="7")
    assert [r.value for r in v.rows(reduce=False)] == [1]
    v.release()


def test_code_version_is_stable_across_processes_and_needs_code():
    """The derived version must not depend on hash randomisation (frozenset constants)."""
    import subprocess
    import sys
    code = ("import cblite\n"
            "def m(doc, emit):\n"
            "    if doc.get('t') in {'a', 'b', 'c', 'd'}: emit(doc['t'], [1, 'x', None])\n"
            "print(cblite.code_version(m, lambda k, v, r: sum(v)))\n")
    outs = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed,
                   PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                capture_output=True, text=True).stdout)
    assert len(outs) == 1
    with pytest.raises(TypeError, match="version="):
        cblite.code_version(len)


def test_live_query_stops_when_the_database_closes(dbdir):
    db = cblite.Database("livedb", dbdir)
    coll = db.default_collection
    coll.put({"k": 1}, "a")
    v = coll.view("byK")
    v.set_map_reduce(by_k)
    calls = []
    live = v.live_query(lambda rows: calls.append(len(rows)))
    live.wait_idle()
    assert live.running and views.live_query_count() >= 1
    before = views.live_query_count()
    v.release()
    db.close()
    assert not live.running
    assert views.live_query_count() == before - 1
    with pytest.raises(cblite.CBLiteError):
        live.wait_idle()
    live.stop()                       # harmless afterwards


def test_incremental_updates(db, coll, view):
    mapped = []

    def counting(doc, emit):
        mapped.append(doc["_id"])
        by_k(doc, emit)
    view.set_map_reduce(counting, version="1")
    for i in range(5):
        coll.put({"k": i}, f"d{i}")
    assert keys(view) == [0, 1, 2, 3, 4]
    assert len(mapped) == 5
    assert keys(view) == [0, 1, 2, 3, 4] and len(mapped) == 5
    doc = coll.get("d1")
    coll.put({"k": 10}, "d1", parent_rev=doc["_rev"])
    coll.delete("d2")
    coll.purge("d3")
    assert keys(view, update=False) == [0, 1, 2, 4]          # purge already applied
    assert keys(view) == [0, 4, 10]
    assert mapped[5:] == ["d1"]
    # Conflicts: the winning revision is indexed.
    coll.put_existing("cx", {"k": "base"}, ["1-a"])
    coll.put_existing("cx", {"k": "low"}, ["2-b", "1-a"])
    coll.put_existing("cx", {"k": "high"}, ["2-c", "1-a"])
    assert keys(view, startkey="") == ["high"]
    # Version change: rebuilt.
    view.set_map_reduce(lambda doc, emit: emit("x"), version="2")
    assert keys(view) == ["x"] * 4
    info = view.info()
    assert info["total_rows"] == 4 and info["stale"] is False
    assert coll.view_names() == ["byK"]
    view.delete()
    assert coll.view_names() == []
    assert keys(view, update=False) == []


def test_number_index_is_kept_and_its_first_strings_collate_by_icu(dbdir):
    """An index of number keys needs no collator: reopened, it is read as it is. Its first
    string keys collate by ICU among the numbers ("a" < "b" < "C", where code points put
    "C" first) without a rebuild; reopened again, still none."""
    mapped = []

    def counting(doc, emit):
        mapped.append(doc["_id"])
        by_k(doc, emit)

    def reopen():
        db = cblite.Database("numbers", dbdir)
        v = db.default_collection.view("byK")
        v.set_map_reduce(counting, version="1")
        return db, v

    db, v = reopen()
    for i in range(3):
        db.default_collection.put({"k": i}, f"d{i}")
    assert keys(v) == [0, 1, 2] and len(mapped) == 3
    v.release()
    db.close()
    db, v = reopen()
    assert keys(v) == [0, 1, 2] and len(mapped) == 3           # not rebuilt
    for k in ["b", "C", "a"]:
        db.default_collection.put({"k": k}, f"s{k}")
    assert keys(v) == [0, 1, 2, "a", "b", "C"] and len(mapped) == 6
    v.release()
    db.close()
    db, v = reopen()
    assert keys(v) == [0, 1, 2, "a", "b", "C"] and len(mapped) == 6
    v.release()
    db.close()


def test_stale_and_update_after(coll, view):
    coll.put({"k": 1}, "a")
    result = view.query()
    assert [r.key for r in result] == [1]
    coll.put({"k": 2}, "b")
    result2 = view.query(update=False)
    assert result2.stale
    assert [r.key for r in result2] == [1]
    assert keys(view, update="after") == [1]
    view.update()
    assert keys(view, update=False) == [1, 2]
    fresh = view.query()
    assert not fresh.stale
    fresh.release()


def test_redirect_null_key_and_absent_values(coll):
    coll.put({"title": "post"}, "post1")
    coll.put({"post": "post1"}, "like1")
    coll.put({"x": 1}, "n")
    v = coll.view("likes")

    def m(doc, emit):
        if "post" in doc:
            emit("like", {"_id": doc["post"]})
        elif "x" in doc:
            emit(None)
    v.set_map_reduce(m, version="1")
    rows = v.rows(include_docs=True)
    assert rows[0].key is None and rows[0].value is None and rows[0].doc_id == "n"
    assert rows[1].doc_id == "post1" and rows[1].source_doc_id == "like1"
    assert rows[1].doc["title"] == "post"
    out = v.query_json()
    assert out["rows"][1]["source_id"] == "like1"
    v.release()


def test_all_docs_modes(coll):
    for d in ["b", "a", "c", "d"]:
        coll.put({}, d)
    coll.delete("c")
    coll.put_existing("e", {"n": 1}, ["1-x"])
    coll.put_existing("e", {"n": 2}, ["2-y", "1-x"])
    coll.put_existing("e", {"n": 3}, ["2-z", "1-x"])

    def ids_of(**o):
        return [r["id"] for r in coll.all_docs(**o)["rows"]]
    assert ids_of() == ["a", "b", "d", "e"]
    assert ids_of(all_docs_mode="include_deleted") == ["a", "b", "c", "d", "e"]
    assert ids_of(all_docs_mode="only_conflicts") == ["e"]
    shown = coll.all_docs(all_docs_mode="show_conflicts")["rows"]
    assert shown[-1]["value"] == {"rev": "2-z", "_conflicts": ["2-y"]}
    assert ids_of(descending=True, skip=1, limit=2) == ["d", "b"]
    assert ids_of(startkey="b", endkey="d", inclusive_end=False) == ["b"]
    keyed = coll.all_docs(keys=["d", "zz", "c"], include_docs=True)["rows"]
    assert keyed[1] == {"key": "zz", "error": "not_found"}
    assert keyed[2]["value"]["deleted"] is True and keyed[2]["doc"] is None
    assert keyed[0]["doc"]["_id"] == "d"
    by_seq = [r.sequence for r in coll.all_docs_query(all_docs_mode="by_sequence", startkey=2, endkey=5)]
    assert by_seq == [2, 4, 5]
    with coll.all_docs_query() as result:
        assert not result.stale
        coll.put({}, "z")
        assert result.stale
    with pytest.raises(cblite.BadRequest):
        coll.all_docs(all_docs_mode="nope")


class Collector:
    def __init__(self):
        self.lock = threading.Lock()
        self.results = []

    def __call__(self, rows):
        with self.lock:
            self.results.append([(r.key, r.value) for r in rows])

    @property
    def count(self):
        with self.lock:
            return len(self.results)

    @property
    def last(self):
        with self.lock:
            return self.results[-1]


def test_live_query_fires_only_on_relevant_changes(db, coll, view):
    for i in range(5):
        coll.put({"k": i}, f"d{i}")
    got = Collector()
    with view.live_query(got, startkey=1, endkey=3) as live:
        live.wait_idle()
        assert got.count == 1 and got.last == [(1, None), (2, None), (3, None)]
        coll.put({"k": 100}, "far")                   # outside the range
        coll.put({"other": True}, "nokey")            # emits nothing
        other = db.create_collection("other")
        other.put({"k": 2}, "o")                      # another collection
        live.wait_idle()
        assert got.count == 1
        coll.put({"k": 2, "v": "x"}, "mid")
        live.wait_idle()
        assert got.count == 2 and (2, "x") in got.last
        coll.purge("mid")
        live.wait_idle()
        assert got.count == 3 and got.last == [(1, None), (2, None), (3, None)]
        live.set_options(descending=True, limit=1)
        live.wait_idle()
        assert got.count == 4 and got.last == [(100, None)]
        assert views.live_query_count() >= 1
    assert not live.running
    coll.put({"k": 1000}, "after")             # would change its rows (descending, limit 1)
    db.wait_notifications(5000)
    time.sleep(0.3)                            # time a live query would take to deliver
    assert got.count == 4
    with pytest.raises(cblite.NotAcceptable):
        live.wait_idle()


def test_live_query_stops_itself_from_its_callback(db, coll, view):
    coll.put({"k": 1}, "a")
    seen = []
    done = threading.Event()
    holder = {}

    def cb(rows):
        seen.append(len(rows))
        if len(rows) >= 2:
            holder["live"].stop()
            done.set()
    holder["live"] = view.live_query(cb)
    holder["live"].wait_idle()
    coll.put({"k": 2}, "b")
    assert done.wait(30)
    assert seen == [1, 2]
    coll.put({"k": 3}, "c")                    # would change its rows
    db.wait_notifications(5000)
    time.sleep(0.3)                            # time a live query would take to deliver
    assert seen == [1, 2]


def test_live_query_needs_a_map(coll):
    v = coll.view("none")
    with pytest.raises(cblite.NotAcceptable):
        v.live_query(lambda rows: None)
    v.release()


def test_keys_come_back_exactly_and_equal_keys_follow_document_ids(coll):
    """Keys come back as emitted whether the index keeps their JSON or makes it from the key
    (integers, null, booleans, arrays of them); equal keys are ordered by document ID; a
    document may emit a key twice; updates and deletes take their old rows out."""
    texts = {"t0": 2 ** 60 + 1, "t1": 1.5, "t2": -0.0, "t3": [1, [2, None]], "t4": "s", "t5": True, "t6": None,
             "t7": 10 ** 15}
    for doc_id, k in texts.items():
        coll.put({"k": k}, doc_id)
    for doc_id in ["m3", "m1", "m2"]:
        coll.put({"k": 7}, doc_id)
    coll.put({"k": 7, "twice": True}, "m0")

    def twice(doc, emit):
        if "k" in doc:
            emit(doc["k"])
            if doc.get("twice"):
                emit(doc["k"], "again")
    v = coll.view("twice")
    v.set_map_reduce(twice, reduce="_count", version="1")
    try:
        got = keys(v, reduce=False)
        assert got == [None, True, 0, 1.5, 7, 7, 7, 7, 7, 10 ** 15, 2 ** 60 + 1, "s", [1, [2, None]]]
        assert isinstance(got[10], int) and got[10] == 2 ** 60 + 1          # not rounded through a double
        assert [r.key for r in v.rows(group=True)] == [None, True, 0, 1.5, 7, 10 ** 15, 2 ** 60 + 1, "s", [1, [2, None]]]
        assert ids(v, key=7, reduce=False) == ["m0", "m0", "m1", "m2", "m3"]
        assert values(v, key=7, reduce=False) == [None, "again", None, None, None]
        coll.put({"k": 8}, "m1", parent_rev=coll.get("m1")["_rev"])
        coll.delete("m0")
        assert ids(v, key=7, reduce=False) == ["m2", "m3"]
        assert ids(v, startkey=7, endkey=8, reduce=False) == ["m2", "m3", "m1"]
        assert [r.value for r in v.rows(key=7)] == [2]
    finally:
        v.release()


def test_map_sees_documents_as_read_and_shuffled_updates_keep_id_order(coll):
    """The map function gets each document as a read gives it (IDs that need escaping,
    bodies with and without members), never a deleted one; integer keys of up to 15 digits
    come back exactly; equal keys of documents updated in a shuffled order (sequences no
    longer in ID order) come back in document-ID order from a build."""
    doc_ids = ["plain", 'quo"te', "back\\slash", "unicod\u00e9"]
    for i, doc_id in enumerate(doc_ids):
        coll.put({} if i == 0 else {"j": i, "s": 'x"y'}, doc_id)
    coll.put({"k": 1}, "gone")
    coll.delete("gone")
    seen = {}

    def keep(doc, emit):
        seen[doc["_id"]] = doc
        emit([-5, 0, 123456789012345, -123456789012345][len(seen) % 4])
    v = coll.view("docs")
    v.set_map_reduce(keep, version="1")
    try:
        assert sorted(keys(v)) == sorted([-5, 0, 123456789012345, -123456789012345])
        assert seen == {doc_id: coll.get(doc_id) for doc_id in doc_ids}
    finally:
        v.release()

    for i in range(300):
        coll.put({"k": i % 3}, "s%03d" % i)
    shuffled = list(range(300))
    random.Random(42).shuffle(shuffled)
    for i in shuffled:
        doc_id = "s%03d" % i
        coll.put({"k": i % 3, "u": 1}, doc_id, parent_rev=coll.get(doc_id)["_rev"])

    def by_k(doc, emit):
        if "k" in doc:
            emit(doc["k"])
    v = coll.view("byK")
    v.set_map_reduce(by_k, version="1")
    try:
        assert ids(v, key=1, reduce=False) == ["s%03d" % i for i in range(1, 300, 3)]
        assert ids(v, reduce=False) == sorted(["s%03d" % i for i in range(300)], key=lambda d: (int(d[1:]) % 3, d))
    finally:
        v.release()


# -- rows read a page at a time (cbl_query_result_next_rows) ------------------------------

def _count_calls(monkeypatch, name):
    """Counts the calls of one C function made through the bindings."""
    calls = []
    real = getattr(cblite._lib.C, name)

    def counted(*args):
        calls.append(1)
        return real(*args)
    monkeypatch.setattr(cblite._lib.C, name, counted)
    return calls


def test_rows_are_read_a_page_per_call(db, coll, monkeypatch):
    with db.transaction():
        for i in range(1000):
            coll.put({"k": i % 2}, f"p{i:05d}")
    v = coll.view("mod2")
    v.set_map_reduce(by_k, reduce="_count", version="1")
    expected = [(r["id"], r["key"]) for r in v.query_json(reduce=False)["rows"]]
    pages = _count_calls(monkeypatch, "cbl_query_result_next_rows")
    singles = _count_calls(monkeypatch, "cbl_query_result_next")
    assert [(r.doc_id, r.key) for r in v.query(reduce=False)] == expected
    assert singles == []
    assert len(pages) == -(-1000 // cblite.query_result._PAGE_ROWS) + 1      # the last call finds the end
    # Grouped and reduced rows, include_docs and all-docs results read in pages too.
    assert [(r.key, r.value) for r in v.query(group=True)] == [(0, 500), (1, 500)]
    assert [r.value for r in v.rows()] == [1000]
    docs = v.rows(key=1, reduce=False, include_docs=True)
    assert len(docs) == 500 and all(r.doc["_id"] == r.doc_id for r in docs)
    all_docs = list(coll.all_docs_query(include_docs=True))
    assert [r.doc_id for r in all_docs] == [f"p{i:05d}" for i in range(1000)]
    assert all(r.doc["k"] == i % 2 for i, r in enumerate(all_docs))
    assert singles == []
    v.release()


def test_json_after_partial_iteration_keeps_the_rows_read_ahead(db, coll):
    with db.transaction():
        for i in range(300):
            coll.put({"k": i % 3, "v": i}, f"p{i:05d}")
    v = coll.view("mod3")
    v.set_map_reduce(by_k, version="1")
    for options in [{}, {"include_docs": True}, {"descending": True, "skip": 5}]:
        whole = v.query_json(**options)
        with v.query(**options) as result:
            first = [next(result) for _ in range(7)]
            assert [r.doc_id for r in first] == [r["id"] for r in whole["rows"][:7]]
            rest = result.json()
            assert rest["rows"] == whole["rows"][7:], options
            assert list(result) == []
    with coll.all_docs_query() as result:
        next(result)
        assert result.json()["rows"] == coll.all_docs()["rows"][1:]
    v.release()


def test_next_rows_refuses_bad_arguments(coll, view, letters):
    lib = cblite._lib.lib
    result = view.query()
    handle = result._h()
    page = (cblite._lib.cbl_query_row * 4)()
    count = ctypes.c_size_t(99)
    err = cblite._lib.cbl_error()
    assert lib.cbl_query_result_next_rows(handle, None, 4, ctypes.byref(count), ctypes.byref(err)) == 400
    assert count.value == 0
    assert lib.cbl_query_result_next_rows(handle, page, 0, ctypes.byref(count), ctypes.byref(err)) == 400
    assert lib.cbl_query_result_next_rows(handle, page, 4, None, ctypes.byref(err)) == 400
    assert lib.cbl_query_result_next_rows(handle, page, 2**64 - 1, ctypes.byref(count), ctypes.byref(err)) == 400
    assert b"capacity" in err.message
    assert lib.cbl_query_result_next_rows(None, page, 4, ctypes.byref(count), ctypes.byref(err)) == 400
    # Nothing was read by the refused calls: a page of 4, then the other 2 rows.
    assert lib.cbl_query_result_next_rows(handle, page, 4, ctypes.byref(count), ctypes.byref(err)) == 0
    assert count.value == 4 and [page[i].doc_id for i in range(4)] == [b"d1", b"d2", b"d3", b"d6"]
    assert [r.doc_id for r in result] == ["d4", "d5"]
    result.release()
    count.value = 99
    assert lib.cbl_query_result_next_rows(handle, page, 4, ctypes.byref(count), ctypes.byref(err)) == 400
    assert count.value == 0


def test_rows_across_index_pages_inside_one_document(db, coll):
    # Each document emits its key three times: index pages (2,048 rows) then end inside
    # a document's rows of one key, and the next page continues from that row. Every
    # query is checked against the rows worked out from what the map emitted.
    with db.transaction():
        for i in range(1500):
            coll.put({"k": i % 2}, f"t{i:05d}")

    def thrice(doc, emit):
        for n in range(3):
            emit(doc["k"], n)

    v = coll.view("thrice")
    v.set_map_reduce(thrice, version="1")
    every = sorted((i % 2, f"t{i:05d}", n) for i in range(1500) for n in range(3))

    def expected(descending=False, start=None, end=None, inclusive_end=True, skip=0, limit=None):
        def place(row, bound):   # the row against a (key, docid or None) bound, in scan order
            key, doc = bound
            c = (row[0] > key) - (row[0] < key)
            if c == 0 and doc is not None:
                c = (row[1] > doc) - (row[1] < doc)
            return -c if descending else c
        rows = [r for r in (every[::-1] if descending else every)
                if (start is None or place(r, start) >= 0)
                and (end is None or place(r, end) < 0 or (place(r, end) == 0 and inclusive_end))]
        rows = rows[skip:]
        return rows if limit is None else rows[:limit]

    def got(**options):
        return [(r.key, r.doc_id, r.value) for r in v.rows(**options)]

    assert got() == expected() and len(every) == 4500
    assert got(descending=True) == expected(descending=True)
    assert got(key=1) == expected(start=(1, None), end=(1, None))
    assert got(startkey=0, startkey_docid="t00100", endkey=1, endkey_docid="t01201") == \
        expected(start=(0, "t00100"), end=(1, "t01201"))
    assert got(startkey=1, startkey_docid="t01201", endkey=0, endkey_docid="t00100", descending=True,
               inclusive_end=False) == expected(True, (1, "t01201"), (0, "t00100"), False)
    assert len(expected(start=(0, "t00100"), end=(1, "t01201"))) > 2048
    assert got(startkey=1, startkey_docid="t00003") == expected(start=(1, "t00003"))
    assert got(skip=2040, limit=20) == expected(skip=2040, limit=20)
    assert got(skip=2047, limit=3000, descending=True) == expected(True, skip=2047, limit=3000)
    assert got(keys=[1, 0], descending=True) == \
        [r for r in every[::-1] if r[0] == 1] + [r for r in every[::-1] if r[0] == 0]
    v.release()


def test_redirected_rows_among_plain_rows_across_pages(db, coll):
    # Every other row redirects to a long document ID, which the result stores as it
    # lends the row (growing its memory many times a page); the plain rows between them
    # and every row of a page must stay right.
    long = "x" * 200
    with db.transaction():
        for i in range(3000):
            coll.put({"k": i, "to": f"{long}-{i}"} if i % 2 == 0 else {"k": i}, f"r{i:05d}")

    def m(doc, emit):
        if "to" in doc:
            emit(doc["k"], {"_id": doc["to"]})
        else:
            emit(doc["k"])
    v = coll.view("redirects")
    v.set_map_reduce(m, version="1")
    rows = v.rows()
    assert [r.key for r in rows] == list(range(3000))
    assert [r.source_doc_id for r in rows] == [f"r{i:05d}" for i in range(3000)]
    assert [r.doc_id for r in rows] == [f"{long}-{i}" if i % 2 == 0 else f"r{i:05d}" for i in range(3000)]
    assert [r.value is None for r in rows] == [i % 2 == 1 for i in range(3000)]
    v.release()


def test_big_integer_keys_collate_by_value_and_keep_their_digits(coll, view):
    for i, k in enumerate(["a", 2e19, 18446744073709551617, 1e19, -12345678901234567890123, 5]):
        coll.put({"k": k, "v": 1}, f"d{i}")
    assert keys(view) == [-12345678901234567890123, 5, 1e19, 18446744073709551617, 2e19, "a"]
    assert ids(view, key=18446744073709551617) == ["d2"]
