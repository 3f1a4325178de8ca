"""Full-text search over HTTP (issue 30): Mango text indexes and `$text` in `_find`."""
import pytest

CORPUS = {
    "a": {"title": "Coffee with milk", "body": "A flat white is coffee and milk", "year": 2001},
    "b": {"title": "Tea", "body": "Green tea, no coffee at all", "year": 1999},
    "c": {"title": "Coffee coffee coffee", "body": "Espresso is strong coffee", "year": 2010},
    "d": {"title": "Water", "body": "Still or sparkling", "year": 2005},
}


@pytest.fixture
def db(serve):
    s = serve()
    assert s.json("PUT", "/db")[0] == 201
    docs = [dict(v, _id=k) for k, v in CORPUS.items()]
    assert s.json("POST", "/db/_bulk_docs", {"docs": docs})[0] == 201
    return s


def text_index(s, **extra):
    body = {"type": "text", "ddoc": "ft", "name": "words",
            "index": {"fields": [{"name": "title", "type": "string"}, {"name": "body", "type": "string"},
                                 {"name": "year", "type": "number"}]}}
    body.update(extra)
    return s.json("POST", "/db/_index", body)


def ids(answer):
    return [d["_id"] for d in answer["docs"]]


def test_text_index_created_listed_deleted(db):
    assert text_index(db) == (200, {"result": "created", "id": "_design/ft", "name": "words"})
    assert text_index(db) == (200, {"result": "exists", "id": "_design/ft", "name": "words"})
    assert db.json("POST", "/db/_index", {"index": {"fields": ["year"]}, "ddoc": "j", "name": "by_year"})[0] == 200
    status, listing = db.json("GET", "/db/_index")
    assert status == 200 and listing["total_rows"] == 3
    assert [(i["ddoc"], i["name"], i["type"]) for i in listing["indexes"]] == [
        (None, "_all_docs", "special"), ("_design/ft", "words", "text"), ("_design/j", "by_year", "json")]
    assert listing["indexes"][1]["def"]["fields"] == [{"title": "string"}, {"body": "string"}]
    assert db.json("DELETE", "/db/_index/ft/text/nope")[0] == 404
    assert db.json("DELETE", "/db/_index/_design/ft/text/words") == (200, {"ok": True})
    assert db.json("GET", "/db/_design/ft")[0] == 404
    assert [i["type"] for i in db.json("GET", "/db/_index")[1]["indexes"]] == ["special", "json"]


def test_text_index_definition_errors(db):
    status, err = db.json("POST", "/db/_index", {"type": "text", "index": {}})
    assert (status, err["error"]) == (400, "invalid_index") and "fields" in err["reason"]
    status, err = db.json("POST", "/db/_index", {"type": "text", "index": {"fields": [{"name": "n", "type": "number"}]}})
    assert (status, err["error"]) == (400, "invalid_index")
    status, err = db.json("POST", "/db/_index", {"type": "text", "index": {"fields": [{"name": "t", "type": "string"}],
                                                                          "analyzer": "klingon"}})
    assert (status, err["error"]) == (400, "invalid_index")


def test_text_find_ranked_and_combined(db):
    text_index(db)
    status, r = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}})
    assert status == 200
    assert ids(r)[0] == "c" and set(ids(r)) == {"a", "b", "c"}
    # With field conditions, at the top or in $and.
    r = db.json("POST", "/db/_find", {"selector": {"$text": "coffee", "year": {"$gt": 2000}}})[1]
    assert ids(r) == ["c", "a"]
    r = db.json("POST", "/db/_find", {"selector": {"$and": [{"$text": "coffee"}, {"year": {"$lt": 2005}}]},
                                      "fields": ["_id", "year"]})[1]
    assert r["docs"] == [{"_id": "a", "year": 2001}, {"_id": "b", "year": 1999}]
    # Phrase, field scope, NOT.
    assert ids(db.json("POST", "/db/_find", {"selector": {"$text": '"flat white"'}})[1]) == ["a"]
    assert set(ids(db.json("POST", "/db/_find", {"selector": {"$text": "title:coffee"}})[1])) == {"a", "c"}
    assert set(ids(db.json("POST", "/db/_find", {"selector": {"$text": "coffee NOT milk"}})[1])) == {"b", "c"}
    # Sorted by a field instead of the score.
    r = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}, "sort": [{"year:number": "desc"}]})[1]
    assert ids(r) == ["c", "a", "b"]
    # A write is seen by the next query; a deleted document is no hit.
    rev = db.json("GET", "/db/c")[1]["_rev"]
    assert db.json("DELETE", "/db/c?rev=" + rev)[0] == 200
    assert db.json("PUT", "/db/e", {"title": "Iced coffee"})[0] == 201
    assert set(ids(db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}})[1])) == {"a", "b", "e"}


def test_text_find_pages_with_bookmarks(db):
    text_index(db)
    seen = []
    bookmark = None
    for _ in range(4):
        q = {"selector": {"$text": "coffee"}, "limit": 1}
        if bookmark:
            q["bookmark"] = bookmark
        r = db.json("POST", "/db/_find", q)[1]
        seen += ids(r)
        bookmark = r["bookmark"]
    assert seen[0] == "c" and sorted(seen) == ["a", "b", "c"]
    r = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}, "sort": ["year:number"], "limit": 2})[1]
    assert ids(r) == ["b", "a"]
    r = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}, "sort": ["year:number"], "bookmark": r["bookmark"]})[1]
    assert ids(r) == ["c"]
    assert db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}, "skip": 2})[1]["docs"] != []


def test_text_find_errors_and_explain(db):
    status, err = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}})
    assert (status, err["error"]) == (400, "no_usable_index")
    # With a sort no index gives: CouchDB 3.5's own answer.
    status, err = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}, "sort": ["year"]})
    assert (status, err) == (400, {"error": "no_usable_index", "reason": "No index exists for this sort, try indexing by the sort fields."})
    text_index(db)
    status, err = db.json("POST", "/db/_find", {"selector": {"$text": "(coffee"}})
    assert status == 400 and "position 0" in err["reason"]
    status, err = db.json("POST", "/db/_find", {"selector": {"$text": "author:x"}})
    assert status == 400 and "unknown field 'author'" in err["reason"]
    status, err = db.json("POST", "/db/_find", {"selector": {"$or": [{"$text": "coffee"}, {"year": 1}]}})
    assert (status, err["error"]) == (400, "invalid_operator")
    status, err = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}, "bookmark": "garbage"})
    assert status == 400
    text_index(db, name="other")
    status, err = db.json("POST", "/db/_find", {"selector": {"$text": "coffee"}})
    assert (status, err["error"]) == (400, "multiple_text_indexes")
    r = db.json("POST", "/db/_find", {"selector": {"$text": "milk"}, "use_index": ["ft", "other"]})[1]
    assert ids(r) == ["a"]
    status, ex = db.json("POST", "/db/_explain", {"selector": {"$text": "milk", "year": 2001}, "use_index": ["ft", "words"]})
    assert status == 200
    assert (ex["index"]["type"], ex["index"]["name"], ex["query"]) == ("text", "words", "milk")
    assert ex["selector"] == {"year": {"$eq": 2001}}


def test_text_index_fields_must_be_name_type_objects(db):
    status, err = db.json("POST", "/db/_index", {"type": "text", "index": {"fields": ["title"]}})
    assert (status, err["error"]) == (400, "invalid_index_fields_definition")


NOUVEAU = {"nouveau": {"words": {
    "default_analyzer": "standard",
    "index": "function (doc) { if (doc.title) { index('text', 'title', doc.title, {store: true}); }"
             " if (doc.body) index('text', 'body', doc.body); if (doc.year) index('double', 'year', doc.year, {store: true}); }"}}}


def nouveau(s, query, **params):
    from urllib.parse import urlencode
    return s.json("GET", "/db/_design/n/_nouveau/words?" + urlencode(dict(params, q=query)))


def test_nouveau_index_queried(db):
    assert db.json("PUT", "/db/_design/n", NOUVEAU)[0] == 201
    status, r = nouveau(db, "coffee")
    assert status == 200 and r["total_hits"] == 3 and r["total_hits_relation"] == "EQUAL_TO"
    assert [h["id"] for h in r["hits"]][0] == "c"
    hit = next(h for h in r["hits"] if h["id"] == "a")
    assert hit["fields"] == {"title": "Coffee with milk", "year": 2001} and "doc" not in hit
    assert hit["order"][0]["@type"] == "float" and hit["order"][0]["value"] > 0
    # Field-scoped; documents included; POST with a body.
    r = nouveau(db, "title:coffee", include_docs="true")[1]
    assert sorted(h["id"] for h in r["hits"]) == ["a", "c"] and all(h["doc"]["_id"] == h["id"] for h in r["hits"])
    status, r = db.json("POST", "/db/_design/n/_nouveau/words", {"q": "body:espresso"})
    assert status == 200 and [h["id"] for h in r["hits"]] == ["c"]
    # Pages by bookmark.
    r1 = nouveau(db, "coffee", limit=2)[1]
    r2 = nouveau(db, "coffee", limit=2, bookmark=r1["bookmark"])[1]
    assert len(r1["hits"]) == 2 and [h["id"] for h in r1["hits"] + r2["hits"]][0] == "c"
    assert sorted(h["id"] for h in r1["hits"] + r2["hits"]) == ["a", "b", "c"]
    # A deleted document is no hit.
    rev = db.json("GET", "/db/c")[1]["_rev"]
    assert db.json("DELETE", "/db/c?rev=" + rev)[0] == 200
    assert sorted(h["id"] for h in nouveau(db, "coffee")[1]["hits"]) == ["a", "b"]
    status, info = db.json("GET", "/db/_design/n/_nouveau_info/words")
    assert status == 200 and info["name"] == "_design/n/words" and info["search_index"]["num_docs"] == 3


def test_nouveau_design_update_rebuilds(db):
    rev = db.json("PUT", "/db/_design/n", NOUVEAU)[1]["rev"]
    assert nouveau(db, "title:water")[1]["total_hits"] == 1
    changed = {"_rev": rev, "nouveau": {"words": {"index": "function (doc) { index('text', 'default', doc.body || ''); }"}}}
    assert db.json("PUT", "/db/_design/n", changed)[0] == 201
    # Unscoped terms search the `default` field; the old `title` field is gone.
    assert [h["id"] for h in nouveau(db, "sparkling")[1]["hits"]] == ["d"]
    assert nouveau(db, "water")[1]["total_hits"] == 0
    status, err = nouveau(db, "title:water")
    assert status == 400 and "unknown field 'title'" in err["reason"] and "position 0" in err["reason"]


def test_nouveau_errors(db):
    assert db.json("PUT", "/db/_design/n", NOUVEAU)[0] == 201
    # Lucene's syntax the engine cannot do faithfully is refused where it is, never dropped.
    for q, at, words in [("coffee~2", 6, "fuzzy"), ("coffee^2", 6, "boosts"), ("co?fee", 2, "wildcards"),
                         ("*ffee", 0, "leading wildcards"), ("title:[a TO b]", 6, "ranges need"), ("year:x", 5, "number")]:
        status, err = nouveau(db, q)
        assert status == 400 and f"position {at}" in err["reason"] and words in err["reason"], (q, err)
    status, err = nouveau(db, "coffee AND")
    assert status == 400 and "position" in err["reason"]
    assert nouveau(db, "coffee", counts='["title"]')[0] == 400
    assert nouveau(db, "coffee", sort="year")[0] == 400
    assert db.json("GET", "/db/_design/n/_nouveau/words")[0] == 400          # no q
    assert nouveau(db, "coffee", limit=500)[0] == 400
    assert db.json("GET", "/db/_design/n/_nouveau/nope?q=x")[0] == 404
    assert db.json("GET", "/db/_design/none/_nouveau/words?q=x")[0] == 404
    # The index function is compiled when the design document is written.
    status, err = db.json("PUT", "/db/_design/bad", {"nouveau": {"x": {"index": "function (doc) { index("}}})
    assert (status, err["error"]) == (400, "compilation_error")
    status, err = db.json("PUT", "/db/_design/bad", {"nouveau": {"x": {"default_analyzer": "standard"}}})
    assert status == 400


def test_nouveau_sorted_by_field_values(db):
    sortable = {"nouveau": {"words": {"index": NOUVEAU["nouveau"]["words"]["index"].replace(
        "index('text', 'title', doc.title, {store: true});", "index('text', 'title', doc.title, {store: true}); index('string', 'name', doc.title);")}}}
    assert db.json("PUT", "/db/_design/n", sortable)[0] == 201
    r = nouveau(db, "coffee", sort="-year<double>")[1]
    assert [h["id"] for h in r["hits"]] == ["c", "a", "b"]
    assert r["hits"][0]["order"][0] == {"@type": "double", "value": 2010}
    # A text field has no sort value (as in Lucene): 400.
    assert nouveau(db, "coffee", sort='["title<string>"]')[0] == 400
    r = nouveau(db, "coffee", sort='["name<string>"]', limit=2)[1]
    assert [h["id"] for h in r["hits"]] == ["c", "a"] and r["total_hits"] == 3      # "Coffee coffee…" < "Coffee with…"
    r = nouveau(db, "coffee", sort='["name<string>"]', bookmark=r["bookmark"])[1]
    assert [h["id"] for h in r["hits"]] == ["b"]
    assert [h["id"] for h in nouveau(db, "coffee", sort="-<score>")[1]["hits"]][0] == "c"


def test_nouveau_ranges_and_values_of_double_fields(db):
    assert db.json("PUT", "/db/_design/n", NOUVEAU)[0] == 201
    r = nouveau(db, "year:[2001 TO 2005]")[1]
    assert sorted(h["id"] for h in r["hits"]) == ["a", "d"] and r["total_hits"] == 2
    assert [h["id"] for h in nouveau(db, "year:{2001 TO 2005]")[1]["hits"]] == ["d"]
    assert [h["id"] for h in nouveau(db, "coffee AND year:[2000 TO *]")[1]["hits"]] == ["c", "a"]
    assert [h["id"] for h in nouveau(db, "year:1999")[1]["hits"]] == ["b"]
    assert sorted(h["id"] for h in nouveau(db, "coffee -year:[* TO 2000}")[1]["hits"]) == ["a", "c"]
    # Phrase slop: the words within N words of each other.
    assert [h["id"] for h in nouveau(db, '"flat coffee"~3')[1]["hits"]] == ["a"]
    assert nouveau(db, '"flat coffee"~1')[1]["total_hits"] == 0


def test_mango_nouveau_index(db):
    body = {"type": "nouveau", "ddoc": "mn", "name": "words",
            "index": {"fields": [{"name": "title", "type": "string"}, {"name": "year", "type": "number"}]}}
    assert db.json("POST", "/db/_index", body) == (200, {"result": "created", "id": "_design/mn", "name": "words"})
    assert db.json("POST", "/db/_index", body) == (200, {"result": "exists", "id": "_design/mn", "name": "words"})
    ddoc = db.json("GET", "/db/_design/mn")[1]
    assert ddoc["language"] == "query" and ddoc["nouveau"]["words"]["index"]["fields"] == body["index"]["fields"]
    listing = db.json("GET", "/db/_index")[1]["indexes"]
    assert [(i["ddoc"], i["name"], i["type"]) for i in listing] == [(None, "_all_docs", "special"), ("_design/mn", "words", "nouveau")]
    assert listing[1]["def"]["fields"] == [{"title": "string"}, {"year": "number"}]
    # $text (with ranges of its number fields) and the selector's other conditions.
    r = db.json("POST", "/db/_find", {"selector": {"$text": "coffee AND year:[2000 TO *]", "title": {"$gt": "A"}}})[1]
    assert ids(r) == ["c", "a"]
    status, ex = db.json("POST", "/db/_explain", {"selector": {"$text": "coffee"}})
    assert status == 200 and ex["index"]["type"] == "nouveau" and ex["index"]["name"] == "words"
    # The Nouveau endpoint serves it too.
    status, r = db.json("GET", "/db/_design/mn/_nouveau/words?q=" + "year:%5B* TO 2000%5D".replace(" ", "%20"))
    assert status == 200 and [h["id"] for h in r["hits"]] == ["b"]
    assert db.json("DELETE", "/db/_index/mn/nouveau/words") == (200, {"ok": True})
    assert db.json("GET", "/db/_design/mn")[0] == 404
    assert db.json("DELETE", "/db/_index/mn/nouveau/words")[0] == 404
