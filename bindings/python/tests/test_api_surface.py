"""The public API as a whole: NUL in any string parameter, integers the library cannot
store, `from cblite import *`, docstrings, and the mapping behaviour of collections."""

import inspect
import io
import typing

import pytest

import cblite

NUL = "x\x00y"

# -- NUL in every string parameter -------------------------------------------------------
# Every string parameter of every public method that reaches C as a `const char*` (or is
# taken as JSON text), one case each: "Class.method:param" -> call(env, bad_string).
# C would cut the string at the NUL and act on another document, attachment, collection,
# etc.; the bindings raise ValueError before the call, as sqlite3 and os do.

CASES = {
    "Database.__init__:name": lambda e, s: cblite.Database(s, e.dbdir),
    "Database.__init__:directory": lambda e, s: cblite.Database("n", e.dbdir + "/" + s),
    "Database.__init__:encryption_key": lambda e, s: cblite.Database("enc", e.dbdir, encryption_key=s),
    "Database.exists:name": lambda e, s: cblite.Database.exists(s, e.dbdir),
    "Database.exists:directory": lambda e, s: cblite.Database.exists("testdb", s),
    "Database.list:directory": lambda e, s: cblite.Database.list(s),
    "Database.delete_named:name": lambda e, s: cblite.Database.delete_named(s, e.dbdir),
    "Database.delete_named:directory": lambda e, s: cblite.Database.delete_named("testdb", s),
    "Database.copy:source_path": lambda e, s: cblite.Database.copy(s, "c", e.dbdir),
    "Database.copy:name": lambda e, s: cblite.Database.copy(e.db.path, s, e.dbdir),
    "Database.copy:directory": lambda e, s: cblite.Database.copy(e.db.path, "c", s),
    "Database.change_encryption_key:key": lambda e, s: e.db.change_encryption_key(s),
    "Database.collection:name": lambda e, s: e.db.collection(s),
    "Database.collection:scope": lambda e, s: e.db.collection("c", s),
    "Database.create_collection:name": lambda e, s: e.db.create_collection(s),
    "Database.create_collection:scope": lambda e, s: e.db.create_collection("c", s),
    "Database.delete_collection:name": lambda e, s: e.db.delete_collection(s),
    "Database.delete_collection:scope": lambda e, s: e.db.delete_collection("c", s),
    "Database.collection_names:scope": lambda e, s: e.db.collection_names(s),
    "Database.set_filter:name": lambda e, s: e.db.set_filter(s, lambda d, p: True),
    "Database.blob_length:digest": lambda e, s: e.db.blob_length(s),
    "Database.import_blob:path": lambda e, s: e.db.import_blob(s),
    "Database.replicate:url": lambda e, s: e.db.replicate("http://127.0.0.1:9/" + s),
    "Database.replicate:collection": lambda e, s: e.db.replicate("http://127.0.0.1:9/x",
                                                                  collection=s),
    "Collection.get:doc_id": lambda e, s: e.coll.get(s),
    "Collection.get_revision:doc_id": lambda e, s: e.coll.get_revision(s, e.rev),
    "Collection.get_revision:rev_id": lambda e, s: e.coll.get_revision("doc", s),
    "Collection.put:doc_id": lambda e, s: e.coll.put({"v": 2}, s, parent_rev=e.rev),
    "Collection.put:parent_rev": lambda e, s: e.coll.put({"v": 2}, "doc", parent_rev=e.rev + s),
    "Collection.put:body": lambda e, s: e.coll.put('{"v": "' + s + '"}', "doc", e.rev),
    "Collection.put_many:docs": lambda e, s: e.coll.put_many('[{"_id": "' + s + '"}]'),
    "Collection.save_many:docs": lambda e, s: e.coll.save_many('[{"_id": "' + s + '"}]'),
    "Collection.update_many:doc_ids": lambda e, s: e.coll.update_many([s], lambda d: {"v": 3}),
    "Collection.delete:doc_id": lambda e, s: e.coll.delete("doc" + s),
    "Collection.delete:rev": lambda e, s: e.coll.delete("doc", e.rev + s),
    "Collection.update:doc_id": lambda e, s: e.coll.update("doc" + s, lambda d: {"v": 3}),
    "Collection.purge:doc_id": lambda e, s: e.coll.purge("doc" + s),
    "Collection.conflicts:doc_id": lambda e, s: e.coll.conflicts(s),
    "Collection.history:doc_id": lambda e, s: e.coll.history(s),
    "Collection.history:rev": lambda e, s: e.coll.history("doc", s),
    "Collection.revision_tree:doc_id": lambda e, s: e.coll.revision_tree(s),
    "Collection.put_existing:doc_id": lambda e, s: e.coll.put_existing(s, {}, ["1-aa"]),
    "Collection.put_existing:body": lambda e, s: e.coll.put_existing("n", '{"a":"' + s + '"}', ["1-aa"]),
    "Collection.put_existing:history": lambda e, s: e.coll.put_existing("n", {}, '["1-' + s + '"]'),
    "Collection.set_expiration:doc_id": lambda e, s: e.coll.set_expiration("doc" + s, 0),
    "Collection.get_expiration:doc_id": lambda e, s: e.coll.get_expiration(s),
    "Collection.get_local:local_id": lambda e, s: e.coll.get_local(s),
    "Collection.put_local:local_id": lambda e, s: e.coll.put_local("loc" + s, {"v": 2}),
    "Collection.put_local:body": lambda e, s: e.coll.put_local("loc", '{"a":"' + s + '"}'),
    "Collection.put_local:rev": lambda e, s: e.coll.put_local("loc", {"v": 2}, s),
    "Collection.delete_local:local_id": lambda e, s: e.coll.delete_local("loc" + s),
    "Collection.delete_local:rev": lambda e, s: e.coll.delete_local("loc", s),
    "Collection.revs_diff:revs": lambda e, s: e.coll.revs_diff('{"' + s + '": ["1-a"]}'),
    "Collection.put_existing_revisions:docs": lambda e, s: e.coll.put_existing_revisions(
        '[{"_id": "' + s + '", "_rev": "1-a"}]'),
    "Collection.open_revs:doc_id": lambda e, s: e.coll.open_revs(s),
    "Collection.bulk_get:requests": lambda e, s: e.coll.bulk_get('{"docs":[{"id":"' + s + '"}]}'),
    "Collection.purge_revisions:doc_id": lambda e, s: e.coll.purge_revisions("doc" + s, [e.rev]),
    "Collection.set_validator:name": lambda e, s: e.coll.set_validator(s, lambda n, c: True),
    "Collection.add_document_listener:doc_id": lambda e, s: e.coll.add_document_listener(
        s, lambda c: None),
    "Collection.set_attachment:doc_id": lambda e, s: e.coll.set_attachment("doc" + s, "a.txt", b"x"),
    "Collection.set_attachment:name": lambda e, s: e.coll.set_attachment("doc", "a.txt" + s, b"x"),
    "Collection.set_attachment:path": lambda e, s: e.coll.set_attachment("doc", "a.txt", path=s),
    "Collection.set_attachment:digest": lambda e, s: e.coll.set_attachment("doc", "a.txt", digest=s),
    "Collection.set_attachment:content_type": lambda e, s: e.coll.set_attachment(
        "doc", "a.txt", b"x", content_type="text/plain" + s),
    "Collection.set_attachment:rev": lambda e, s: e.coll.set_attachment("doc", "a.txt", b"x",
                                                                        rev=e.rev + s),
    "Collection.remove_attachment:doc_id": lambda e, s: e.coll.remove_attachment("doc" + s, "a.txt"),
    "Collection.remove_attachment:name": lambda e, s: e.coll.remove_attachment("doc", "a.txt" + s),
    "Collection.remove_attachment:rev": lambda e, s: e.coll.remove_attachment("doc", "a.txt", e.rev + s),
    "Collection.attachment_names:doc_id": lambda e, s: e.coll.attachment_names("doc" + s),
    "Collection.attachments:doc_id": lambda e, s: e.coll.attachments("doc" + s),
    "Collection.get_attachment:doc_id": lambda e, s: e.coll.get_attachment("doc" + s, "a.txt"),
    "Collection.get_attachment:name": lambda e, s: e.coll.get_attachment("doc", "a.txt" + s),
    "Collection.save_attachment:doc_id": lambda e, s: e.coll.save_attachment(
        "doc" + s, "a.txt", e.dbdir + "/out"),
    "Collection.save_attachment:name": lambda e, s: e.coll.save_attachment(
        "doc", "a.txt" + s, e.dbdir + "/out"),
    "Collection.save_attachment:path": lambda e, s: e.coll.save_attachment("doc", "a.txt", e.dbdir + s),
    "Collection.open_attachment:doc_id": lambda e, s: e.coll.open_attachment("doc" + s, "a.txt"),
    "Collection.open_attachment:name": lambda e, s: e.coll.open_attachment("doc", "a.txt" + s),
    "Collection.view:name": lambda e, s: e.coll.view(s),
    "Collection.query:view": lambda e, s: e.coll.query(s),
    "Collection.delete_index:ddoc": lambda e, s: e.coll.delete_index("d" + s, "n"),
    "Collection.delete_index:name": lambda e, s: e.coll.delete_index("d", "n" + s),
    "Collection.replicate:url": lambda e, s: e.coll.replicate("http://127.0.0.1:9/" + s),
    "Collection.delete_text_index:ddoc": lambda e, s: e.coll.delete_text_index("n", "d" + s),
    "Collection.delete_text_index:name": lambda e, s: e.coll.delete_text_index("n" + s),
    "Collection.search:index": lambda e, s: e.coll.search("x", index="n" + s),
    "View.set_map_reduce:version": lambda e, s: e.view.set_map_reduce(lambda d, emit: None,
                                                                      version=s),
    "View.set_map_reduce:reduce": lambda e, s: e.view.set_map_reduce(lambda d, emit: None,
                                                                     reduce="_sum" + s),
    "Server.serve:name": lambda e, s: e.server().serve(s, e.db),
    "Replicator.__init__:config": lambda e, s: cblite.Replicator(e.coll, '{"url": "' + s + '"}'),
    "Replicator.is_document_pending:doc_id": lambda e, s: e.replicator().is_document_pending(s),
    "Model.get:doc_id": lambda e, s: e.model_class().get(e.db, s),
    "Model.create:doc_id": lambda e, s: e.model_class().create(e.db, s),
    "Model.set_attachment:name": lambda e, s: e.note().set_attachment(s, b"x"),
    "Model.set_attachment:content_type": lambda e, s: e.note().set_attachment("a", b"x", s),
    "Model.get_attachment:name": lambda e, s: e.note().get_attachment(s),
    "Model.remove_attachment:name": lambda e, s: e.note().remove_attachment(s),
}

# Parameters typed as str that never reach C as a C string: they travel inside JSON
# (where a NUL is escaped and arrives intact), or stay in Python.
NOT_C_STRINGS = {
    "Collection.find:selector", "Collection.find:fields", "Collection.find:bookmark", "Collection.find:options",
    "Collection.explain:selector", "Collection.explain:options", "Collection.create_index:ddoc",
    "Collection.live_find:selector", "Collection.live_find:options",
    "Collection.create_index:name", "Collection.create_index:partial_filter_selector",
    "Collection.create_text_index:ddoc", "Collection.create_text_index:fields", "Collection.create_text_index:name",
    "Collection.create_text_index:partial_filter_selector", "Collection.create_text_index:stop_words",
    "Collection.search:bookmark", "Collection.search:ddoc", "Collection.search:fields", "Collection.search:query",
    "Collection.search:selector",
    "Collection.changes:doc_ids", "Collection.changes:filter", "Collection.changes:style",
    "Collection.changes:filter_params",
    "Collection.bulk_get:atts_since", "Collection.open_revs:revs",
    "Collection.open_revs:atts_since", "Collection.purge_revisions:revs",
    "Collection.replicate:direction", "Collection.replicate:filter",
    "Collection.replicate:filter_params", "Collection.replicate:pull_filter",
    "Collection.replicate:pull_filter_params", "Collection.replicate:doc_ids",
    "Collection.replicate:channels", "Collection.replicate:headers",
    "Collection.replicate:auth", "Collection.replicate:remote_uuid", "Collection.replicate:tls",
    "Collection.iter_changes:options", "Database.changes:options",
    "Database.iter_changes:options", "Database.replicate:options",
    "Server.__init__:options", "Server.__init__:config",
    "View.__init__:name",          # the same as Collection.view:name
    "LiveQuery.__init__:options",  # query options: JSON
    "Collection.all_docs:options", "Collection.all_docs_query:options",
    "Database.all_docs:options", "Database.all_docs_query:options",
    "View.query:options", "View.rows:options", "View.query_json:options",
    "View.query:full_text", "View.query:snippets", "View.set_text_analyzer:analyzer",   # JSON
    "Collection.query:options", "Database.query:options",
    "View.live_query:options", "View.live_query:full_text", "View.live_query:snippets",   # JSON
    "LiveQuery.set_options:options",
    "Model.get_property:name", "Model.set_property:name",   # JSON keys
    "Model.create:values", "Model.will_save:changed", "Model.__init__:doc_id",
}

# Database methods that are the default collection's: the same code as Collection's.
_SHORTCUTS = {"get", "put", "put_many", "update_many", "delete_document", "update", "purge",
              "add_document_listener", "set_attachment", "remove_attachment",
              "attachment_names", "attachments", "get_attachment", "save_attachment",
              "open_attachment", "view", "query"}


class Env:
    def __init__(self, dbdir, db, coll, view, rev):
        self.dbdir, self.db, self.coll, self.view, self.rev = dbdir, db, coll, view, rev
        self._server = None
        self._replicator = None
        self._model_class = None

    def server(self):
        if self._server is None:
            self._server = cblite.Server()
        return self._server

    def replicator(self):
        if self._replicator is None:
            self._replicator = self.coll.replicate("http://127.0.0.1:9/none", direction="push",
                                                   continuous=True)
        return self._replicator

    def model_class(self):
        if self._model_class is None:
            from cblite.models import Model

            class Note(Model):
                text: str = ""
            self._model_class = Note
        return self._model_class

    def note(self):
        if not hasattr(self, "_note"):
            self._note = self.model_class().create(self.db, "note")
        return self._note

    def close(self):
        if self._replicator is not None:
            self._replicator.stop()
        if self._server is not None:
            self._server.stop()


def _str_params():
    """("Class.method:param") for every parameter of the public API that may be a str."""
    import cblite.models
    classes = [cblite.Database, cblite.Collection, cblite.View, cblite.LiveQuery,
               cblite.Server, cblite.Replicator, cblite.BlobWriter, cblite.QueryResult,
               cblite.models.Model]
    ns = dict(vars(cblite))
    ns.update(vars(cblite.models))
    found = set()
    for cls in classes:
        for name, member in vars(cls).items():
            if name.startswith("_") and name != "__init__":
                continue
            fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
            if not inspect.isfunction(fn):
                continue
            hints = typing.get_type_hints(fn, globalns=fn.__globals__, localns=ns)
            for pname, param in inspect.signature(fn).parameters.items():
                if pname in ("self", "cls"):
                    continue
                hint = repr(hints.get(pname, param.annotation))
                if "Callable" in hint and not hint.startswith("typing.Union[str"):
                    continue   # a callback, not a string
                if "str" in hint or hint == "typing.Any" and param.kind == param.VAR_KEYWORD:
                    found.add(f"{cls.__name__}.{name}:{pname}")
    return found


def test_every_string_parameter_has_a_nul_case():
    found = _str_params()
    shortcuts = {k for k in found if k.split(".")[1].split(":")[0] in _SHORTCUTS
                 and k.startswith("Database.")}
    missing = sorted(found - set(CASES) - NOT_C_STRINGS - shortcuts)
    assert not missing, f"string parameters without a NUL test: {missing}"
    stale = sorted(set(CASES) - found)
    assert not stale, f"NUL cases for parameters that do not exist: {stale}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_nul_in_a_string_parameter_raises_value_error(case, dbdir, db, coll):
    rev = coll.put({"v": 1}, "doc")[1]
    rev = coll.set_attachment("doc", "a.txt", b"content", rev=rev)
    coll.put_local("loc", {"v": 1})
    view = coll.view("v")
    env = Env(dbdir, db, coll, view, rev)
    seq = coll.last_sequence
    try:
        with pytest.raises(ValueError, match="NUL"):
            CASES[case](env, NUL)
    finally:
        env.close()
        view.release()
    # nothing was written, nothing lost
    assert coll.last_sequence == seq
    assert coll["doc"]["_rev"] == rev and coll.get_attachment("doc", "a.txt") == b"content"
    assert coll.get_local("loc")["v"] == 1
    assert db.collection_names() == ["_default"]
    assert cblite.Database.list(dbdir) == ["testdb"]


def test_database_shortcuts_refuse_nul_too(db):
    db.put({"v": 1}, "doc")
    for call in (lambda: db.get("doc\x00x"), lambda: db.put({"v": 2}, "doc\x00x"),
                 lambda: db.delete_document("doc\x00x"), lambda: db["doc\x00x"],
                 lambda: db.set_attachment("doc\x00x", "a", b"x"),
                 lambda: db.update("doc\x00", lambda d: d), lambda: "doc\x00" in db):
        with pytest.raises(ValueError, match="NUL"):
            call()
    assert db["doc"]["v"] == 1 and db.count == 1


def test_nul_in_a_password_given_as_a_dict(dbdir, db):
    for call in (lambda: cblite.Database("enc", dbdir, encryption_key={"password": NUL}),
                 lambda: db.change_encryption_key({"password": NUL})):
        with pytest.raises(ValueError, match="NUL"):
            call()
    assert cblite.Database.list(dbdir) == ["testdb"] and not db.is_encrypted


def test_nul_inside_json_values_is_data(coll):
    """Inside a dict body a NUL is ordinary data: JSON escapes it, it arrives intact."""
    coll.put({"s": "a\x00b", "k\x00": 1}, "doc")
    assert coll["doc"]["s"] == "a\x00b" and coll["doc"]["k\x00"] == 1


# -- integers ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2 ** 63, -(2 ** 63) - 1, 2 ** 64, 10 ** 30])
def test_ints_beyond_64_bits_round_trip_on_every_write_path(coll, n):
    coll.put({"n": n}, "d")
    assert coll["d"]["n"] == n
    coll.put({"a": [{"n": n}]}, "d", parent_rev=coll["d"]["_rev"])
    assert coll["d"]["a"] == [{"n": n}]
    coll.put_many([{"_id": "x", "n": n}])
    assert coll["x"]["n"] == n
    coll.put_local("l", {"n": n})
    assert coll.get_local("l")["n"] == n
    coll.update("d", lambda d: {"n": -n})
    assert coll["d"]["n"] == -n and type(coll["d"]["n"]) is int


@pytest.mark.parametrize("key", [1, 1.5, True, None])
def test_non_string_keys_are_refused_not_converted(coll, key):
    """json.dumps would store {1: "a"} as {"1": "a"}: the key would come back changed."""
    with pytest.raises(TypeError, match="keys must be str"):
        coll.put({"nested": [{key: "a"}]}, "d")
    with pytest.raises(TypeError, match="keys must be str"):
        coll.put({key: "a"}, "d")
    assert "d" not in coll


@pytest.mark.parametrize("n", [2 ** 63 - 1, -(2 ** 63), 2 ** 53 + 1, 0, -1])
def test_ints_within_64_bits_round_trip_exactly(coll, n):
    coll.put({"n": n, "l": [n]}, "d")
    got = coll["d"]
    assert got["n"] == n and type(got["n"]) is int and got["l"] == [n]


# -- the package's namespace ------------------------------------------------------------

def test_star_import_does_not_shadow_builtins():
    import builtins
    ns: dict = {}
    exec("from cblite import *", ns)
    shadowed = [name for name in ns if name != "__builtins__" and hasattr(builtins, name)]
    assert shadowed == []
    assert cblite.NotImplemented is cblite.NotImplemented_   # still reachable by name
    assert set(cblite.__all__) <= set(dir(cblite))


def _public_objects():
    import cblite.aio
    import cblite.models
    modules = [cblite, cblite.views, cblite.models, cblite.aio]
    seen = set()
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue   # modules; type aliases (documented by #: comments)
            seen.add(id(obj))
            yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_") or attr in ("code", "MAX_QUEUED_EVENTS"):
                        continue
                    if obj.__module__ == "cblite.errors" or issubclass(obj, tuple):
                        continue
                    if callable(member) or isinstance(member, (property, staticmethod,
                                                               classmethod)):
                        yield f"{module.__name__}.{name}.{attr}", member


def test_every_public_name_has_a_docstring():
    undocumented = []
    for name, obj in _public_objects():
        doc = obj.__doc__ if not isinstance(obj, (staticmethod, classmethod)) else obj.__func__.__doc__
        if isinstance(obj, property):
            doc = obj.fget.__doc__ if obj.fget else None
        if not (doc and doc.strip()):
            undocumented.append(name)
    assert undocumented == []


def test_methods_are_defined_in_their_classes():
    """Nothing is attached to a class from another module at import time (mypy and IDEs
    would not see it)."""
    for cls in (cblite.Database, cblite.Collection, cblite.View):
        for attr, member in vars(cls).items():
            fn = getattr(member, "__func__", member)
            if inspect.isfunction(fn):
                assert fn.__qualname__.startswith(cls.__name__ + "."), (cls, attr)
                assert fn.__module__ == cls.__module__, (cls, attr)


# -- mapping behaviour ------------------------------------------------------------------

def test_get_with_default(coll):
    coll.put({"v": 1}, "a")
    assert coll.get("a")["v"] == 1
    assert coll.get("missing", None) is None
    assert coll.get("missing", {"v": 0}) == {"v": 0}
    with pytest.raises(cblite.NotFound):
        coll.get("missing")
    with pytest.raises(KeyError):
        coll["missing"]
    coll.delete("a")
    assert coll.get("a", "gone") == "gone"
    assert coll.get("a", None, deleted=True)["_deleted"] is True


def test_keys_values_items(db, coll):
    for i in (3, 1, 2):
        coll.put({"n": i}, f"d{i}")
    coll.put({"n": 9}, "dead")
    coll.delete("dead")
    assert list(coll.keys()) == ["d1", "d2", "d3"] == list(coll) == list(db)
    assert [d["n"] for d in coll.values()] == [1, 2, 3]
    assert [(k, d["_id"], d["n"]) for k, d in coll.items()] == [
        ("d1", "d1", 1), ("d2", "d2", 2), ("d3", "d3", 3)]
    assert all(d["_rev"].startswith("1-") for d in db.values())
    assert list(db.keys()) == list(coll.keys()) and dict(db.items()) == dict(coll.items())


def test_put_writes_id_and_rev_back(coll):
    doc = {"title": "first"}
    doc_id, rev = coll.put(doc)
    assert doc == {"title": "first", "_id": doc_id, "_rev": rev}
    doc["title"] = "second"
    _, rev2 = coll.put(doc)                      # saved again on its own revision
    assert doc["_rev"] == rev2 and rev2.startswith("2-")
    stale = dict(doc, _rev=rev)
    with pytest.raises(cblite.Conflict):
        coll.put(stale)
    assert stale["_rev"] == rev                  # unchanged on failure
    coll["named"] = named = {"v": 1}
    assert named["_id"] == "named" and named["_rev"].startswith("1-")


def test_put_many_per_document_results(coll):
    a, b = {"_id": "a", "v": 1}, {"v": 2}
    results = coll.put_many([a, b])
    assert [r["ok"] for r in results] == [True, True]
    assert a["_rev"] == results[0]["rev"] and b["_id"] == results[1]["id"]
    a["v"] = 10
    stale = {"_id": b["_id"], "_rev": "1-" + "0" * 32, "v": 3}
    results = coll.put_many([a, stale, {"_id": "_bad"}])
    assert results[0]["ok"] is True and a["_rev"].startswith("2-")
    assert results[1] == {"id": b["_id"], "error": "conflict", "reason": results[1]["reason"]}
    assert results[2]["error"] == "bad_request"
    assert stale["_rev"] == "1-" + "0" * 32           # a failed document is not changed
    assert coll["a"]["v"] == 10 and coll[b["_id"]]["v"] == 2


def test_update_many(coll):
    coll.put({"n": 1}, "a")
    coll.put({"n": 2}, "b")
    coll.put({"n": 3}, "gone")
    coll.delete("gone")

    def bump(doc):
        if doc is None:
            return {"n": 0}
        if doc["n"] == 2:
            return None
        return {**doc, "n": doc["n"] + 100}
    results = coll.update_many(["a", "b", "gone", "new"], bump)
    assert [r.get("ok") for r in results] == [True, None, True, True]
    assert results[1] == {"id": "b", "cancelled": True}
    assert coll["a"]["n"] == 101 and coll["b"]["n"] == 2
    assert coll["gone"]["n"] == 0 and coll["new"]["n"] == 0
    with pytest.raises(ValueError, match="duplicate"):
        coll.update_many(["a", "a"], bump)


def test_update_many_retries_a_conflicting_document(coll):
    coll.put({"n": 1}, "a")
    calls = []

    def racing(doc):
        calls.append(doc["n"])
        if len(calls) == 1:   # another writer gets in between the read and the save
            coll.put({"n": 50}, "a", parent_rev=doc["_rev"])
        return {"n": doc["n"] + 1}
    assert coll.update_many(["a"], racing)[0]["ok"] is True
    assert calls == [1, 50] and coll["a"]["n"] == 51


def test_update_many_gives_up_with_conflict(coll):
    coll.put({"n": 1}, "a")

    def always_racing(doc):
        coll.put({"n": doc["n"] + 1}, "a", parent_rev=doc["_rev"])
        return {"n": -1}
    result = coll.update_many(["a"], always_racing, max_attempts=3)[0]
    assert result["error"] == "conflict" and coll["a"]["n"] == 4


def test_attachment_revisions_taken_the_same_way(coll):
    rev = coll.set_attachment("d", "a", b"1")            # creates the document
    rev = coll.set_attachment("d", "b", b"2")            # current revision by default
    rev = coll.remove_attachment("d", "a")               # same
    with pytest.raises(cblite.Conflict):
        coll.set_attachment("d", "c", b"3", rev="1-" + "0" * 32)
    with pytest.raises(cblite.Conflict):
        coll.remove_attachment("d", "b", rev="1-" + "0" * 32)
    rev = coll.set_attachment("d", "c", io.BytesIO(b"3"), rev=rev)
    assert coll.attachment_names("d") == ["b", "c"] and coll["d"]["_rev"] == rev


def test_close_stops_listeners_replicators_and_live_queries(dbdir):
    db = cblite.Database("lifetimes", dbdir)
    coll = db.default_collection
    coll.put({"k": 1}, "a")
    view = coll.view("v")
    view.set_map_reduce(lambda d, emit: emit(d["k"]))
    live = view.live_query(lambda rows: None)
    token = db.add_change_listener(lambda changes: None)
    replicator = db.replicate("http://127.0.0.1:9/none", direction="push", continuous=True)
    view.release()
    db.close()
    assert not live.running and not token.active and not replicator.is_running
    assert cblite.views.live_query_count() == 0
