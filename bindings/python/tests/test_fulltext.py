"""Full-text search through the bindings: indexes created, listed and deleted; hits with
scores and snippets in relevance order; the query operators, field scoping, Unicode
folding, stemming and stop words; a selector combined with the text match; paging by
bookmark; incremental updates, deletes and purges; positioned errors."""

import pytest

import cblite
from cblite.fulltext import SearchHit

DOCS = {
    "a": {"title": "Coffee", "body": "coffee beans, coffee grinders and more coffee", "year": 2020},
    "b": {"title": "Breakfast", "body": "toast with coffee and milk", "year": 2021},
    "c": {"title": "Tea", "body": "green tea, no milk", "year": 2022},
    "d": {"title": "Cafés of Paris", "body": "from café to café, and a coffee at the end of a long day", "year": 2023},
}


@pytest.fixture
def notes(coll):
    for doc_id, body in DOCS.items():
        coll.put(dict(body, _id=doc_id))
    assert coll.create_text_index("notes", ["title", "body"])["result"] == "created"
    return coll


def ids(coll, query, **kw):
    with coll.search(query, **kw) as r:
        return [h.doc_id for h in r]


def test_hits_are_ranked_with_scores_and_snippets(notes):
    with notes.search("coffee NEAR milk OR grinders") as r:
        hits = list(r)
    assert [h.doc_id for h in hits] == ["a", "b"]
    assert all(isinstance(h, SearchHit) and h.score > 0 for h in hits)
    assert hits[0].snippets == {"body": "coffee beans, coffee <b>grinders</b> and more coffee"}
    assert hits[1].snippets == {"body": "toast with <b>coffee</b> and <b>milk</b>"}
    assert ids(notes, "coffee") == ["a", "b", "d"]
    scores = [h.score for h in notes.search("coffee")]
    assert scores == sorted(scores, reverse=True)
    hit = next(iter(notes.search("toast milk", include_docs=True, snippets={"open": "[", "close": "]"})))
    assert hit.doc["_id"] == "b" and hit.doc["year"] == 2021 and hit.snippets == {"body": "[toast] with coffee and [milk]"}
    assert next(iter(notes.search("milk", snippets=False))).snippets == {}


def test_operators_fields_folding_and_selector(notes):
    assert ids(notes, '"green tea"') == ["c"]
    assert ids(notes, "milk NOT tea") == ["b"]
    assert ids(notes, "milk -tea") == ["b"]
    assert ids(notes, "gree*") == ["c"]
    assert ids(notes, "title:cafes") == ["d"]                # folded diacritics
    assert ids(notes, "coffee", fields=["title"]) == ["a"]
    assert ids(notes, "coffee", selector={"year": {"$gt": 2020}}) == ["b", "d"]
    assert sorted(ids(notes, "tea OR toast")) == ["b", "c"]


def test_stemming_and_stop_words(coll):
    coll.put({"_id": "r", "text": "the runners were running"})
    coll.create_text_index("plain", ["text"])
    coll.create_text_index("stemmed", ["text"], stemming=True, stop_words=["the", "were"])
    assert ids(coll, "run", index="plain") == []
    assert ids(coll, "run", index="stemmed") == ["r"]
    assert ids(coll, "the", index="plain") == ["r"]
    assert ids(coll, "the", index="stemmed") == []
    names = [(i["name"], i["def"]["analyzer"]["stemming"]) for i in coll.text_indexes()]
    assert names == [("plain", False), ("stemmed", True)]
    with pytest.raises(cblite.BadRequest, match="name the full-text index"):
        coll.search("run")


def test_paging_updates_deletes_and_purges(notes):
    everything = ids(notes, "coffee OR milk OR tea", limit=None)
    pages, bookmark = [], None
    while True:
        with notes.search("coffee OR milk OR tea", limit=2, bookmark=bookmark) as r:
            page = [h.doc_id for h in r]
            bookmark = r.bookmark
        if not page:
            break
        pages += page
    assert pages == everything and len(everything) == 4
    assert ids(notes, "coffee OR milk OR tea", limit=2, skip=1) == everything[1:3]
    notes.put({"_id": "e", "title": "Iced coffee"})
    assert "e" in ids(notes, "iced")
    notes.delete("e", notes.get("e")["_rev"])
    notes.purge("a")
    assert ids(notes, "iced") == [] and ids(notes, "coffee") == ["b", "d"]


def test_errors_name_the_position_and_indexes_are_deleted(notes):
    with pytest.raises(cblite.BadRequest, match="AND needs a term after it at position 7"):
        notes.search("coffee AND")
    with pytest.raises(cblite.BadRequest, match="unknown field 'author'"):
        notes.search("author:x")
    with pytest.raises(cblite.NotFound):
        notes.search("x", index="nope")
    with pytest.raises(cblite.BadRequest):
        notes.create_text_index("bad", [])
    assert notes.create_text_index("notes", ["title", "body"])["result"] == "exists"
    notes.delete_text_index("notes")
    assert notes.text_indexes() == []
    with pytest.raises(cblite.NotFound):
        notes.delete_text_index("notes")
