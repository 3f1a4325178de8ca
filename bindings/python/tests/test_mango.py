"""Mango through the bindings: each operator against a small reference evaluator written
here independently of the engine (CouchDB 3.5's rules: a condition on a missing field
fails except `$exists: false`, negations need the field, the views' collation), and a
differential property test — random selectors over random documents give the same set
with and without a json index, and the reference's set."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cblite

EXAMPLES = int(os.environ.get("CBLITE_HYPOTHESIS_EXAMPLES", "100"))

# -- the reference ------------------------------------------------------------------------

MISSING, BAD = object(), object()


def lookup(doc, path):
    v = doc
    for p in path.split("."):
        if isinstance(v, dict):
            if p not in v:
                return MISSING
            v = v[p]
        elif isinstance(v, list):
            if not p.isdigit() or int(p) >= len(v):
                return BAD
            v = v[int(p)]
        else:
            return BAD
    return v


def rank(v):
    if v is None:
        return (0,)
    if v is False:
        return (1,)
    if v is True:
        return (2,)
    if isinstance(v, (int, float)):
        return (3, v)
    if isinstance(v, str):          # lowercase ASCII letters only: ICU's order is the code points'
        return (4, v)
    if isinstance(v, list):
        return (5, [rank(x) for x in v])
    return (6, [(k, rank(x)) for k, x in v.items()])


def cmp(a, b):
    ra, rb = rank(a), rank(b)
    return (ra > rb) - (ra < rb)


def type_name(v):
    return {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string",
            list: "array", dict: "object"}[type(v)]


def cond(op, arg, v):
    if op == "$eq": return cmp(v, arg) == 0
    if op == "$ne": return cmp(v, arg) != 0
    if op == "$gt": return cmp(v, arg) > 0
    if op == "$gte": return cmp(v, arg) >= 0
    if op == "$lt": return cmp(v, arg) < 0
    if op == "$lte": return cmp(v, arg) <= 0
    if op == "$in":
        items = v if isinstance(v, list) else [v]
        return any(cmp(i, a) == 0 for a in arg for i in items)
    if op == "$nin": return not cond("$in", arg, v)
    if op == "$type": return type_name(v) == arg
    if op == "$size": return isinstance(v, list) and len(v) == arg
    if op == "$mod": return type(v) is int and int(abs(v) % arg[0]) * (1 if v >= 0 else -1) == arg[1]
    if op == "$exists": return arg
    raise AssertionError(op)


def matches(sel, doc, negated=False):
    """`negated`: under an odd number of $not/$nor, where CouchDB moves the negation down
    to each condition — which then still needs its field."""
    if "$and" in sel or "$or" in sel:
        op, items = next(iter(sel.items()))
        any_ = (op == "$or") != negated
        results = [matches(s, doc, negated) for s in items]
        return any(results) if any_ and items else all(results)
    if "$nor" in sel:
        return matches({"$or": sel["$nor"]}, doc, not negated)      # NOT (a OR b)
    if "$not" in sel:
        return matches(sel["$not"], doc, not negated)
    (field, c), = sel.items()
    (op, arg), = c.items()
    v = lookup(doc, field)
    if v is BAD:
        return False
    if op == "$exists":
        want = arg != negated
        return (v is not MISSING) == want
    if v is MISSING:
        return False
    return cond(op, arg, v) != negated


# -- data ---------------------------------------------------------------------------------

letters = st.text(alphabet="abc", max_size=3)
scalars = st.none() | st.booleans() | st.integers(-5, 5) | letters
values = scalars | st.lists(st.integers(-5, 5) | letters, max_size=3)
docs = st.lists(st.fixed_dictionaries({}, optional={"a": values, "b": values, "c": st.fixed_dictionaries({}, optional={"d": values}) | scalars}),
                min_size=1, max_size=12)

FIELDS = ["a", "b", "c.d"]
leaf = st.one_of(
    st.tuples(st.sampled_from(FIELDS), st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), scalars),
    st.tuples(st.sampled_from(FIELDS), st.sampled_from(["$in", "$nin"]), st.lists(scalars, max_size=3)),
    st.tuples(st.sampled_from(FIELDS), st.just("$exists"), st.booleans()),
    st.tuples(st.sampled_from(FIELDS), st.just("$type"), st.sampled_from(["null", "boolean", "number", "string", "array"])),
    st.tuples(st.sampled_from(FIELDS), st.just("$size"), st.integers(0, 3)),
    st.tuples(st.sampled_from(FIELDS), st.just("$mod"), st.tuples(st.integers(1, 3), st.integers(-2, 2)).map(list)),
).map(lambda t: {t[0]: {t[1]: t[2]}})
selectors = st.recursive(leaf, lambda s: st.one_of(
    st.lists(s, min_size=1, max_size=3).map(lambda l: {"$and": l}),
    st.lists(s, min_size=1, max_size=3).map(lambda l: {"$or": l}),
    st.lists(s, min_size=1, max_size=2).map(lambda l: {"$nor": l}),
    s.map(lambda x: {"$not": x})), max_leaves=5)


@pytest.fixture(scope="module")
def mango_db(tmp_path_factory):
    db = cblite.Database("mango", str(tmp_path_factory.mktemp("mango")))
    yield db
    db.close()


def load(coll, batch):
    for d in list(coll.find({}, fields=["_id", "_rev"])):
        coll.delete(d["_id"], d["_rev"])
    for i, d in enumerate(batch):
        coll.put(dict(d, _id="d%02d" % i))


def found(coll, sel, **kw):
    return sorted(d["_id"] for d in coll.find(sel, fields=["_id"], **kw))


@pytest.mark.no_instance_check
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=docs, sel=selectors)
def test_random_selectors_agree_with_and_without_an_index_and_with_the_reference(mango_db, batch, sel):
    plain = mango_db.default_collection
    try:
        indexed = mango_db.collection("indexed")
    except cblite.NotFound:
        indexed = mango_db.create_collection("indexed")
    if len(indexed.indexes()) == 1:
        indexed.create_index(["a"], ddoc="a", name="a")
        indexed.create_index(["b", "a"], ddoc="ba", name="ba")
    load(plain, batch)
    load(indexed, batch)
    want = sorted("d%02d" % i for i, d in enumerate(batch) if matches(sel, d))
    assert found(plain, sel) == want
    assert found(indexed, sel) == want
    # An index's range is then only a shortcut: the same set when it serves the query.
    ranged = {"$and": [{"a": {"$gt": None}}, sel]}
    assert found(indexed, ranged) == found(plain, ranged)


def test_each_operator_against_the_reference(coll):
    batch = [{"a": 1, "b": "ab", "l": [1, 2]}, {"a": "x", "l": []}, {"a": None, "b": "b", "l": [3]},
             {"b": "c", "c": {"d": 2}}, {"a": [1, "b"], "c": 5}]
    for i, d in enumerate(batch):
        coll.put(dict(d, _id="d%d" % i))
    sels = [{"a": {"$eq": 1}}, {"a": {"$ne": 1}}, {"a": {"$gt": None}}, {"b": {"$gte": "b"}}, {"a": {"$lt": "x"}},
            {"a": {"$lte": 1}}, {"a": {"$in": [1, "b"]}}, {"a": {"$nin": ["x"]}}, {"c": {"$exists": False}},
            {"a": {"$type": "array"}}, {"l": {"$size": 0}}, {"a": {"$mod": [2, 1]}}, {"c.d": {"$exists": True}},
            {"$nor": [{"a": {"$eq": 1}}, {"b": {"$eq": "c"}}]}, {"$not": {"a": {"$gt": 0}}},
            {"$or": [{"c": {"$eq": 5}}, {"b": {"$eq": "ab"}}]}]
    for sel in sels:
        want = sorted("d%d" % i for i, d in enumerate(batch) if matches(sel, d))
        assert found(coll, sel) == want, sel


def test_find_sort_fields_limit_bookmark_explain_and_errors(coll):
    for i in range(30):
        coll.put({"_id": "p%02d" % i, "n": i % 10, "name": "x%02d" % i})
    coll.create_index([{"n": "asc"}], ddoc="by-n", name="n")
    r = coll.find({"n": {"$gte": 7}}, sort=[{"n": "desc"}], fields=["_id", "n"], limit=4)
    assert list(r) == [{"_id": "p29", "n": 9}, {"_id": "p19", "n": 9}, {"_id": "p09", "n": 9}, {"_id": "p28", "n": 8}]
    rest = list(coll.find({"n": {"$gte": 7}}, sort=[{"n": "desc"}], fields=["_id"], bookmark=r.bookmark))
    assert [d["_id"] for d in rest] == ["p18", "p08", "p27", "p17", "p07"]
    r.release()
    plan = coll.explain({"n": {"$gt": 3}})
    assert plan["index"]["name"] == "n" and plan["mrargs"]["start_key"] == [3]
    with pytest.raises(cblite.BadRequest, match="no_usable_index"):
        coll.find({"n": {"$gt": 0}}, sort=["name"])
    with pytest.raises(cblite.BadRequest, match="Invalid operator: \\$foo"):
        coll.find({"n": {"$foo": 0}})
    assert [i["name"] for i in coll.indexes()] == ["_all_docs", "n"]
    coll.delete_index("by-n", "n")
    with pytest.raises(cblite.NotFound):
        coll.delete_index("by-n", "n")


def test_live_find_calls_back_when_the_documents_found_change(coll):
    seen = []
    coll.put({"_id": "lf1", "kind": "live", "v": 1})
    with coll.live_find({"kind": "live", "v": {"$gt": 0}}, seen.append, limit=10) as live:
        live.wait_idle()
        assert [[d["_id"] for d in docs] for docs in seen] == [["lf1"]]
        coll.put({"_id": "lf2", "kind": "live", "v": 2})
        live.wait_idle()
        coll.put({"_id": "other", "kind": "dead", "v": 3})       # found nowhere: no call
        live.wait_idle()
        assert [[d["_id"] for d in docs] for docs in seen] == [["lf1"], ["lf1", "lf2"]]
        live.set_options({"kind": "live", "v": {"$gt": 1}})
        live.wait_idle()
        assert [d["_id"] for d in seen[-1]] == ["lf2"]
        with pytest.raises(cblite.BadRequest, match="Invalid operator"):
            coll.live_find({"v": {"$foo": 1}}, seen.append)
    assert not live.running and cblite.views.live_query_count() == 0
