"""Scopes and collections."""

import pytest

import cblite


def test_default_collection(db):
    c = db.default_collection
    assert c.name == "_default"
    assert c.scope == "_default"
    assert c.full_name == "_default._default"
    assert c.count == 0
    assert db.scope_names() == ["_default"]
    assert db.collection_names() == ["_default"]
    assert db.collection_names("_default") == ["_default"]
    assert db.collection("_default").name == "_default"


def test_create_open_delete(db):
    with pytest.raises(cblite.NotFound):
        db.collection("birds")
    with pytest.raises(cblite.NotFound):
        db.collection("birds", "zoo")
    birds = db.create_collection("birds", "zoo")
    assert (birds.name, birds.scope) == ("birds", "zoo")
    fish = db.create_collection("fish", "zoo")
    db.create_collection("local")
    assert db.scope_names() == ["_default", "zoo"]
    assert db.collection_names("zoo") == ["birds", "fish"]
    assert db.collection_names() == ["_default", "local"]
    again = db.create_collection("birds", "zoo")       # opens the existing one
    again.put({"a": 1}, "tweety")
    assert birds.count == 1
    assert db.collection("birds", "zoo")["tweety"]["a"] == 1
    with pytest.raises(cblite.NotFound):
        db.collection_names("nope")
    db.delete_collection("birds", "zoo")
    with pytest.raises(cblite.NotFound):
        db.collection("birds", "zoo")
    with pytest.raises(cblite.NotFound):
        birds.count                                       # open handles then fail with 404
    with pytest.raises(cblite.NotFound):
        birds.get("tweety")
    with pytest.raises(cblite.NotFound):
        db.delete_collection("birds", "zoo")
    assert db.collection_names("zoo") == ["fish"]
    db.delete_collection("fish", "zoo")
    assert db.scope_names() == ["_default"]
    assert fish._handle is not None
    fish.release()
    fish.release()


def test_default_collection_cannot_be_deleted(db):
    with pytest.raises(cblite.Forbidden):
        db.delete_collection("_default")
    with pytest.raises(cblite.Forbidden):
        db.delete_collection("_default", "_default")


@pytest.mark.parametrize("name", ["", "_x", "%x", "a b", "a.b", "é", "a/b", "x" * 252])
def test_invalid_collection_names(db, name):
    with pytest.raises(cblite.BadRequest):
        db.create_collection(name)
    with pytest.raises(cblite.BadRequest):
        db.create_collection("ok", name)
    with pytest.raises(cblite.BadRequest):
        db.collection(name)


@pytest.mark.parametrize("name", ["a", "A-b_c%d", "x" * 251, "1st"])
def test_valid_collection_names(db, name):
    c = db.create_collection(name, name)
    assert c.name == name and c.scope == name
    assert db.collection_names(name) == [name]


def test_collections_are_separate_namespaces(db):
    a = db.create_collection("a")
    b = db.create_collection("b")
    a.put({"in": "a"}, "same")
    b.put({"in": "b"}, "same")
    assert a["same"]["in"] == "a"
    assert b["same"]["in"] == "b"
    assert "same" not in db
    assert db.count == 0
    assert a.count == 1 and b.count == 1
    a.delete("same")
    assert b["same"]["in"] == "b"


def test_sequences_per_collection(db):
    a = db.create_collection("a")
    b = db.create_collection("b")
    for i in range(3):
        a.put({"i": i})
    b.put({"i": 0})
    assert a.last_sequence == 3
    assert b.last_sequence == 1
    assert db.last_sequence == 0


def test_collections_persist(dbdir):
    with cblite.Database("cols", dbdir) as db:
        db.create_collection("kept", "s").put({"v": 1}, "d")
    with cblite.Database("cols", dbdir) as db:
        assert db.collection_names("s") == ["kept"]
        assert db.collection("kept", "s")["d"]["v"] == 1


def test_collection_of_closed_database_is_400(dbdir):
    db = cblite.Database("cc", dbdir)
    c = db.create_collection("c")
    db.close()
    with pytest.raises(cblite.BadRequest):
        c.count


def test_collection_handle_survives_python_release_of_others(db):
    c1 = db.create_collection("c")
    c2 = db.collection("c")
    c1.release()
    c2.put({"ok": True}, "x")
    assert c2["x"]["ok"] is True


def test_collection_mapping_protocol(db):
    c = db.create_collection("m")
    c["x"] = {"v": 1}
    assert c["x"]["v"] == 1
    assert "x" in c
    assert len(c) == 1
    c["x"] = {"_rev": c["x"]["_rev"], "v": 2}
    assert c["x"]["v"] == 2
    c["y"] = {"v": 3}
    assert sorted(c) == ["x", "y"]
    del c["x"]
    assert "x" not in c
    assert list(c) == ["y"]
    with pytest.raises(KeyError):
        c["x"]
