"""cblite.models: typed model classes mapped to documents (the seeds' CBLModel)."""

import datetime
import gc
import sys
from typing import Any, Dict, List, Optional

import pytest

import cblite
from cblite.models import Model, ModelTypeError, model_class_for_type, save_all, save_models


class Person(Model):
    doc_type = "test-person"
    name: str = ""
    age: int = 0


class Note(Model):
    doc_type = "test-note"
    title: str = ""
    created: Optional[datetime.datetime] = None
    day: Optional[datetime.date] = None
    blob: Optional[bytes] = None
    author: Optional[Person] = None
    tags: List[str] = []
    scores: Dict[str, float] = {}
    checked: bool = False
    extra: Any = None


class VoiceNote(Note):
    doc_type = "test-voice-note"
    seconds: float = 0.0


class Untyped(Model):
    text: str = "default"


def test_fields_and_defaults(db):
    assert list(Note.fields()) == ["title", "created", "day", "blob", "author", "tags",
                                   "scores", "checked", "extra"]
    assert list(VoiceNote.fields())[-1] == "seconds"
    a, b = Note.create(db), Note.create(db)
    a.tags.append("x")
    assert b.tags == [] and Note.tags == []          # mutable defaults are copied
    assert a.is_new and a.is_changed and len(a.doc_id) == 32


def test_save_round_trip_with_conversions(db):
    when = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone.utc)
    alice = Person.create(db, "alice", name="Alice", age=30)
    note = Note.create(db, "n1", title="hello", created=when, day=datetime.date(2024, 1, 2),
                       blob=b"\x00\xffbin", author=alice, tags=["a", "b"],
                       scores={"x": 1.5}, checked=True, extra={"free": [1, "json"]})
    alice.save()
    rev = note.save()
    assert rev.startswith("1-") and note.rev == rev and not note.is_changed
    doc = db["n1"]
    assert doc["type"] == "test-note" and doc["author"] == "alice"
    assert doc["created"] == "2024-05-06T07:08:09.123456+00:00" and doc["day"] == "2024-01-02"
    assert doc["blob"] == "AP9iaW4=" and "title" in doc
    # read back in a new handle: new objects, same values
    with cblite.Database("testdb", db.path.rsplit("/", 1)[0]) as other:
        again = Model.get(other, "n1")
        assert type(again) is Note and again is not note
        assert again.created == when and again.day == datetime.date(2024, 1, 2)
        assert again.blob == b"\x00\xffbin" and again.tags == ["a", "b"]
        assert again.scores == {"x": 1.5} and again.checked is True
        assert again.extra == {"free": [1, "json"]}
        assert isinstance(again.author, Person) and again.author.name == "Alice"
        assert again.author is Person.get(other, "alice")


def test_none_is_left_out_and_missing_reads_as_default(db):
    note = Note.create(db, "n", title="t")
    note.save()
    assert "created" not in db["n"] and "author" not in db["n"]
    db.put({"type": "test-note"}, "bare")
    bare = Note.get(db, "bare")
    assert bare.title == "" and bare.tags == [] and bare.created is None


def test_one_object_per_document_per_handle(db):
    Note.create(db, "n", title="t").save()
    a = Note.get(db, "n")
    assert Note.get(db, "n") is a and Model.get(db, "n") is a
    with pytest.raises(ValueError):
        Note.create(db, "n")
    del a
    gc.collect()
    assert Note.get(db, "n").title == "t"           # weakly held: read again when dropped


def test_factory_picks_the_class_from_type(db):
    VoiceNote.create(db, "v", title="voice", seconds=3.5).save()
    Note.create(db, "n", title="text").save()
    assert model_class_for_type("test-voice-note") is VoiceNote
    assert type(Model.get(db, "v")) is VoiceNote and type(Note.get(db, "v")) is VoiceNote
    assert type(Model.get(db, "n")) is Note
    with pytest.raises(ModelTypeError, match="not a VoiceNote"):
        VoiceNote.get(db, "n")
    with pytest.raises(ModelTypeError, match="not a Person"):
        Person.get(db, "v")
    db.put({"type": "test-voice-note", "author": "v"}, "bad-ref")
    with pytest.raises(ModelTypeError, match="not a Person"):
        Model.get(db, "bad-ref")


def test_type_errors_are_clear(db):
    note = Note.create(db)
    with pytest.raises(ModelTypeError, match=r"Note\.title must be str, not int"):
        note.title = 5
    with pytest.raises(ModelTypeError, match=r"Note\.tags\[1\] must be str"):
        note.tags = ["a", 2]
    with pytest.raises(ModelTypeError, match="Person model"):
        note.author = Note.create(db)
    with pytest.raises(ModelTypeError):
        note.checked = 1
    with pytest.raises(ModelTypeError):
        Person.create(db, age=True)
    with pytest.raises(AttributeError, match="no field"):
        note.titel = "typo"
    with pytest.raises(TypeError, match="no field"):
        Note.create(db, titel="typo")
    db.put({"type": "test-note", "title": 7}, "wrong")
    with pytest.raises(ModelTypeError, match=r"document 'wrong' property 'title'"):
        Note.get(db, "wrong")
    db.put({"type": "test-note", "created": "not a date"}, "baddate")
    with pytest.raises(ModelTypeError, match="baddate"):
        Note.get(db, "baddate")


def test_other_properties_are_kept(db):
    db.put({"text": "x", "unknown": {"a": 1}}, "u")
    u = Untyped.get(db, "u")
    assert u.get_property("unknown") == {"a": 1}
    u.text = "y"
    u.set_property("more", [1])
    u.save()
    assert {k: v for k, v in db["u"].items() if not k.startswith("_")} == {
        "text": "y", "unknown": {"a": 1}, "more": [1]}


def test_save_conflict_revert_and_delete(db):
    p = Person.create(db, "p", name="a")
    p.save()
    db.put({**db["p"], "name": "changed elsewhere"}, "p")
    p.name = "mine"
    with pytest.raises(cblite.Conflict):
        p.save()
    p.revert()
    assert p.name == "changed elsewhere" and not p.is_changed
    p.age = 5
    assert p.changed_fields() == {"age"}
    rev = p.save()
    assert rev.startswith("3-") and db["p"]["age"] == 5
    assert p.save() == rev                               # nothing changed: no new revision
    p.delete()
    assert "p" not in db
    with pytest.raises(cblite.NotFound):
        p.save()


def test_will_save_hook(db):
    class Stamped(Model):
        body: str = ""
        saved_count: int = 0
        seen: List[str] = []

        def will_save(self, changed):
            self.saved_count += 1
            self.seen = sorted(changed)

    s = Stamped.create(db, "s", body="a")
    s.save()
    assert db["s"]["saved_count"] == 1 and "body" in db["s"]["seen"]
    s.body = "b"
    s.save()
    assert db["s"]["saved_count"] == 2 and db["s"]["seen"] == ["body"]


def test_attachments_on_models(db):
    n = Note.create(db, "att", title="t")
    n.set_attachment("a.txt", b"hello", content_type="text/plain")
    assert n.attachment_names() == ["a.txt"] and n.get_attachment("a.txt") == b"hello"
    rev = n.save()
    assert db.attachment_names("att") == ["a.txt"]
    assert db.get_attachment("att", "a.txt") == b"hello"
    assert db["att"]["_attachments"]["a.txt"]["content_type"] == "text/plain"
    assert rev.startswith("1-")                       # body and attachment: one revision
    n.title = "t2"
    n.save()
    assert db.attachment_names("att") == ["a.txt"]    # kept by a body-only save
    n.set_attachment("b.bin", b"\x00")
    n.remove_attachment("a.txt")
    n.save()
    assert db.attachment_names("att") == ["b.bin"] and n.get_attachment("b.bin") == b"\x00"
    with pytest.raises(cblite.NotFound):
        n.get_attachment("a.txt")
    with pytest.raises(cblite.NotFound):
        n.remove_attachment("nope")
    with pytest.raises(ModelTypeError):
        n.set_attachment("c", "text")


def test_batch_save(db):
    people = [Person.create(db, f"p{i}", name=str(i)) for i in range(5)]
    people[0].save()
    results = save_models(people)
    assert len(results) == 4 and all(r["ok"] for r in results)
    assert all(not p.is_changed for p in people) and db.count == 5
    people[1].name = "x"
    people[3].name = "y"
    db.put({**db["p3"], "name": "elsewhere"}, "p3")
    results = save_all(db)
    assert [r.get("ok", r.get("error")) for r in results] == [True, "conflict"]
    assert db["p1"]["name"] == "x" and people[3].is_changed


def test_models_in_a_collection(db):
    coll = db.create_collection("people")
    p = Person.create(coll, "p", name="in coll")
    p.save()
    assert coll["p"]["name"] == "in coll" and "p" not in db
    assert Person.get(coll, "p") is p
    with pytest.raises(TypeError):
        Person.get("not a db", "p")
    coll.release()


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | None needs Python 3.10")
def test_pep604_and_builtin_generic_annotations(db):
    ns = {}
    exec("from cblite.models import Model\n"
         "class Modern(Model):\n"
         "    count: int | None = None\n"
         "    names: list[str] = []\n"
         "    scores: dict[str, float] = {}\n", ns)
    modern = ns["Modern"].create(db, "m", count=3, names=["a"], scores={"x": 1.0})
    modern.save()
    with pytest.raises(ModelTypeError, match="count must be an int"):
        modern.count = "three"
    modern.count = None
    modern.save()
    assert "count" not in db["m"] and db["m"]["names"] == ["a"]
