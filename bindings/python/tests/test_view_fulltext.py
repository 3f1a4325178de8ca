"""Text keys in views through the bindings (Couchbase Lite 1.x's CBLTextKey): a map
function emits TextKey(text); view.query(full_text=...) yields TextMatch rows ranked, with
their matches as str indexes and snippets; ordinary queries show the key None; updates,
deletes and purges leave no stale match; the view's analyzer; errors."""

import pytest

import cblite
from cblite import TextKey, TextMatch

DOCS = {
    "a": {"text": "coffee coffee coffee beans", "tag": 1},
    "b": {"text": "coffee and tea with milk", "tag": 2},
    "c": {"text": "Un café crème, then coffee", "tag": 3},
    "d": {"text": "The cats were typing", "tag": 4, "more": ["second coffee"]},
}


def text_map(doc, emit):
    if "text" in doc:
        emit(TextKey(doc["text"]), doc.get("tag"))
    for t in doc.get("more", []):
        emit(TextKey(t))
    if "key" in doc:
        emit(doc["key"])


@pytest.fixture
def view(coll):
    for doc_id, body in DOCS.items():
        coll.put(dict(body, _id=doc_id))
    v = coll.view("texts")
    v.set_map_reduce(text_map, version="1")
    yield v
    v.release()


def ids(view, text, **kw):
    with view.query(full_text=text, **kw) as r:
        return [m.doc_id for m in r]


def test_rows_are_ranked_matches(view):
    with view.query(full_text="coffee") as r:
        rows = list(r)
    assert [m.doc_id for m in rows] == ["a", "d", "b", "c"]
    assert all(isinstance(m, TextMatch) for m in rows)
    assert rows[0].full_text == "coffee coffee coffee beans" and rows[0].value == 1
    assert rows[1].full_text == "second coffee" and rows[1].value is None
    assert [m.score for m in rows] == sorted((m.score for m in rows), reverse=True)
    assert rows[0].match_count == 3 and rows[0].snippet is None
    assert ids(view, "coffee", ranking=False) == ["a", "b", "c", "d"]
    assert ids(view, "coffee", ranking=False, descending=True) == ["d", "c", "b", "a"]
    assert ids(view, "coffee", skip=1, limit=2) == ["d", "b"]
    with view.query(full_text="beans", include_docs=True) as r:
        (row,) = list(r)
    assert row.doc["_id"] == "a" and row.sequence > 0


def test_matches_are_str_indexes_and_snippets(view):
    with view.query(full_text="cafe OR coffee", snippets={"open": "[", "close": "]"}) as r:
        (m,) = [x for x in r if x.doc_id == "c"]
    assert [(x.term, m.full_text[x.start:x.end]) for x in m.matches] == [(0, "café"), (1, "coffee")]
    assert m.matches[0].start == 3 and m.matches[0].end == 7
    assert m.snippet == "Un [café] crème, then [coffee]"
    with view.query(full_text="the cat", snippets=True) as r:
        (d,) = list(r)
    assert d.doc_id == "d" and d.snippet == "The <b>cats</b> were typing"
    assert [d.full_text[x.start:x.end] for x in d.matches] == ["cats"]


def test_ordinary_queries_show_null_keys(view, coll):
    coll.put({"_id": "k", "key": "plain"})
    rows = view.rows()
    assert [r.key for r in rows] == [None] * 5 + ["plain"]
    assert [r.value for r in rows if r.doc_id == "a"] == [1]


def test_updates_deletes_and_purges(view, coll):
    doc = coll.get("a")
    doc["text"] = "still water"
    coll.put(doc)
    assert ids(view, "coffee", ranking=False) == ["b", "c", "d"]
    assert ids(view, "water") == ["a"]
    coll.delete("b")
    coll.purge("c")
    assert ids(view, "coffee") == ["d"]
    assert ids(view, "milk OR cafe") == []


def test_the_view_analyzer(view):
    assert ids(view, "cat") == ["d"]
    view.set_text_analyzer("standard")
    assert ids(view, "cat") == []
    assert ids(view, "the") == ["d"]
    view.set_text_analyzer({"stemming": True, "stop_words": ["were"]})
    assert ids(view, "cat") == ["d"] and ids(view, "were") == []
    with pytest.raises(cblite.BadRequest):
        view.set_text_analyzer("klingon")


def test_errors(view):
    with pytest.raises(cblite.BadRequest, match="AND needs a term after it at position 7"):
        view.query(full_text="coffee AND")
    with pytest.raises(cblite.BadRequest, match="cannot be combined"):
        view.query(full_text="coffee", startkey="a")
    with pytest.raises(cblite.BadRequest):
        view.query(full_text="coffee", group=True)
    with pytest.raises(TypeError):
        TextKey(3)  # type: ignore[arg-type]


def test_a_live_full_text_query_follows_the_texts(view, coll):
    """view.live_query(cb, full_text=...) calls back with TextMatch rows, again when a
    text starts or stops matching."""
    import queue
    results = queue.Queue()
    with view.live_query(results.put, full_text="milk", snippets=True) as live:
        first = results.get(timeout=10)
        assert [(m.doc_id, type(m)) for m in first] == [("b", TextMatch)]
        assert first[0].snippet == "coffee and tea with <b>milk</b>"
        coll.put({"_id": "e", "text": "warm milk"})
        live.wait_idle()
        latest = results.get(timeout=10)
        while not results.empty():
            latest = results.get_nowait()
        assert sorted(m.doc_id for m in latest) == ["b", "e"]
        assert all(m.full_text[m.matches[0].start:m.matches[0].end] == "milk" for m in latest)
