"""Property tests: random JSON bodies and document IDs round-trip exactly."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cblite

# CBLITE_HYPOTHESIS_EXAMPLES=2000 for a longer run.
EXAMPLES = int(os.environ.get("CBLITE_HYPOTHESIS_EXAMPLES", "200"))

# JSON scalars; floats are finite (JSON has no NaN/Infinity); ints cover the whole signed
# 64-bit range, which the library stores exactly.
scalars = (st.none() | st.booleans()
           | st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=40))

json_values = st.recursive(
    scalars,
    lambda children: (st.lists(children, max_size=6)
                      | st.dictionaries(st.text(max_size=12), children, max_size=6)),
    max_leaves=30,
)

top_keys = st.text(max_size=16).filter(lambda k: not k.startswith("_"))
bodies = st.dictionaries(top_keys, json_values, max_size=8)

doc_ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=60
).filter(lambda s: not s.startswith("_") and 1 <= len(s.encode()) <= 1024)


@pytest.fixture(scope="module")
def prop_db(tmp_path_factory):
    d = tmp_path_factory.mktemp("prop")
    db = cblite.Database("props", str(d))
    db.default_collection            # cached for the whole module (instance-count guard)
    yield db
    db.close()


def strip(doc):
    return {k: v for k, v in doc.items() if k not in ("_id", "_rev")}


def same_json(a, b):
    """Equality that also holds for -0.0 vs 0 and keeps int/float comparisons by value."""
    return a == b


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(body=bodies)
def test_bodies_round_trip(prop_db, body):
    coll = prop_db.default_collection
    doc_id, rev = coll.put(dict(body))
    got = coll.get(doc_id)
    assert got["_id"] == doc_id and got["_rev"] == rev
    assert same_json(strip(got), body)
    # an update with the same body on another document gives the same generation-1 rev
    # (the digest depends on the body, not on the ID)
    _, rev2 = coll.put(dict(body))
    assert rev2 == rev
    # the changes feed's include_docs returns the same body
    feed = coll.changes(since=coll.last_sequence - 2, include_docs=True)["results"]
    docs = {r["id"]: r["doc"] for r in feed}
    assert same_json(strip(docs[doc_id]), body)


@settings(max_examples=max(1, EXAMPLES // 2), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc_id=doc_ids, body=bodies)
def test_ids_round_trip(prop_db, doc_id, body):
    coll = prop_db.create_collection("ids")
    try:
        try:
            existing = coll.get(doc_id, deleted=True)
            parent = existing["_rev"]
        except cblite.NotFound:
            parent = None
        got_id, rev = coll.put(dict(body), doc_id, parent_rev=parent)
        assert got_id == doc_id
        doc = coll[doc_id]
        assert doc["_id"] == doc_id
        assert same_json(strip(doc), body)
        assert doc_id in [r["id"] for r in coll.changes(since=coll.last_sequence - 1)["results"]]
    finally:
        coll.release()


@settings(max_examples=max(1, EXAMPLES // 2), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(big=st.integers(min_value=2 ** 63) | st.integers(max_value=-(2 ** 63) - 1),
       body=bodies)
def test_ints_beyond_64_bits_round_trip_exactly(prop_db, big, body):
    """An int beyond 64 bits comes back as the same int (not a rounded float), wherever
    it sits in the document, through put and put_many."""
    coll = prop_db.default_collection
    nested = dict(body)
    nested["deep"] = {"list": [1, {"n": big}]}
    doc_id, _ = coll.put(nested)
    assert coll[doc_id]["deep"]["list"][1]["n"] == big
    [result] = coll.put_many([{"n": big}])
    assert coll[result["id"]]["n"] == big
