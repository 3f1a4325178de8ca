"""Model classes: typed Python objects mapped to documents (the seeds' CBLModel).

Declare a class with annotated fields, dataclass style; each field is a document
property of the same name::

    import datetime
    from typing import List, Optional
    from cblite.models import Model

    class Person(Model):
        doc_type = "person"                # the documents' "type"; registers the class
        name: str = ""

    class Note(Model):
        doc_type = "note"
        title: str = ""
        created: Optional[datetime.datetime] = None   # stored as ISO-8601 text
        thumbnail: Optional[bytes] = None             # stored as base64 text
        author: Optional[Person] = None               # stored as the person's document ID
        tags: List[str] = []                          # copied for each new object

    with cblite.Database("notes", "/tmp/data") as db:
        alice = Person.create(db, name="alice")
        note = Note.create(db, title="hello", author=alice,
                           created=datetime.datetime.now(datetime.timezone.utc))
        note.set_attachment("a.txt", b"text", content_type="text/plain")
        save_all(db)                        # both, in one transaction
        same = Model.get(db, note.doc_id)   # the factory picks Note from "type"
        assert same is note                 # one object per document per Database

Rules (those of CBLModel):

* Field types: ``str``, ``int``, ``float``, ``bool``, ``datetime.datetime`` (ISO-8601
  text; a naive datetime stays naive), ``datetime.date`` ("YYYY-MM-DD"), ``bytes``
  (base64 text; use attachments for large data), another :class:`Model` class (the
  referenced document's ID), ``List[T]``, ``Dict[str, T]``, ``Optional[T]``, ``Any``
  (plain JSON). A field that is None is left out of the document, and a property the
  document lacks reads as the field's default.
* Assigning a value of the wrong type raises :class:`ModelTypeError` (a TypeError) at
  once; a document whose property has the wrong type raises it when read, naming the
  document and the property.
* Properties of the document that are not fields are kept and saved back
  (:meth:`Model.get_property` / :meth:`Model.set_property` reach them).
* :meth:`Model.get` returns the one object of a document for a Database handle; on
  :class:`Model` itself (or a base class) it picks the class registered for the
  document's ``"type"`` (the model factory), which must be a subclass of the class it
  was called on.
* Changes stay in memory until :meth:`Model.save` (or :func:`save_all` /
  :func:`save_models`, one transaction for many); :meth:`Model.revert` drops them;
  :meth:`Model.delete` deletes the document. Attachments set on a model are saved with
  it, in the same revision.
"""

from __future__ import annotations

import base64
import copy
import datetime
import threading
import types
import typing
import uuid
import weakref
from typing import (Any, ClassVar, Dict, Iterable, List, Optional, Set, Tuple, Type,
                    TypeVar, Union)

from ._util import cstr
from .collection import Collection
from .database import Database
from .errors import NotFound

__all__ = ["Model", "ModelTypeError", "save_all", "save_models", "model_class_for_type"]

M = TypeVar("M", bound="Model")

_factory: Dict[str, Type["Model"]] = {}
_factory_lock = threading.Lock()
_MISSING: Any = object()
_NoneType = type(None)
# Optional[T] / Union[...], and T | None (types.UnionType, Python 3.10+)
_UNIONS: Tuple[Any, ...] = (Union, getattr(types, "UnionType", Union))


class ModelTypeError(TypeError):
    """A value whose type does not match its model field (assigned, or read from a
    document)."""


def model_class_for_type(doc_type: str) -> Optional[Type["Model"]]:
    """The model class registered for documents whose ``"type"`` is `doc_type`."""
    with _factory_lock:
        return _factory.get(doc_type)


def _collection(target: Union[Database, Collection]) -> Collection:
    if isinstance(target, Database):
        return target.default_collection
    if isinstance(target, Collection):
        return target
    raise TypeError(f"expected a cblite.Database or Collection, not {type(target).__name__}")


def _registry(coll: Collection) -> "weakref.WeakValueDictionary[Tuple[str, str], Model]":
    registry: "weakref.WeakValueDictionary[Tuple[str, str], Model]" = coll.database._models
    return registry


# -- conversions between field values and JSON --------------------------------------------

def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is None and isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "").replace("datetime.", "")


def _to_json(tp: Any, value: Any, where: str) -> Any:
    """A field value as JSON, checking its type against `tp`."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in _UNIONS:
        args = typing.get_args(tp)
        if value is None:
            if _NoneType in args:
                return None
            raise ModelTypeError(f"{where} must be {_type_name(tp)}, not None")
        others = [a for a in args if a is not _NoneType]
        if len(others) == 1:   # Optional[T]: T's own message
            return _to_json(others[0], value, where)
        for arg in others:
            try:
                return _to_json(arg, value, where)
            except ModelTypeError:
                continue
        raise ModelTypeError(f"{where} must be {_type_name(tp)}, not {type(value).__name__}")
    if origin in (list, List):
        (item,) = typing.get_args(tp) or (Any,)
        if not isinstance(value, (list, tuple)):
            raise ModelTypeError(f"{where} must be a list, not {type(value).__name__}")
        return [_to_json(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, Dict):
        _key, item = typing.get_args(tp) or (str, Any)
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ModelTypeError(f"{where} must be a dict with str keys, "
                                 f"not {type(value).__name__}")
        return {k: _to_json(item, v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Model):
        if not isinstance(value, tp):
            raise ModelTypeError(f"{where} must be a {tp.__name__} model, "
                                 f"not {type(value).__name__}")
        return value.doc_id
    if tp is datetime.datetime:
        if not isinstance(value, datetime.datetime):
            raise ModelTypeError(f"{where} must be a datetime, not {type(value).__name__}")
        return value.isoformat()
    if tp is datetime.date:
        if not isinstance(value, datetime.date) or isinstance(value, datetime.datetime):
            raise ModelTypeError(f"{where} must be a date, not {type(value).__name__}")
        return value.isoformat()
    if tp is bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ModelTypeError(f"{where} must be bytes, not {type(value).__name__}")
        return base64.b64encode(bytes(value)).decode("ascii")
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ModelTypeError(f"{where} must be a float, not {type(value).__name__}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelTypeError(f"{where} must be an int, not {type(value).__name__}")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ModelTypeError(f"{where} must be {tp.__name__}, not {type(value).__name__}")
        return value
    raise ModelTypeError(f"{where}: unsupported field type {_type_name(tp)}")


def _from_json(tp: Any, value: Any, where: str, coll: Collection) -> Any:
    """A document's JSON value as the field's type (ModelTypeError when it does not fit)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in _UNIONS:
        args = typing.get_args(tp)
        if value is None and _NoneType in args:
            return None
        others = [a for a in args if a is not _NoneType]
        if len(others) == 1:   # Optional[T]: T's own message
            return _from_json(others[0], value, where, coll)
        for arg in others:
            if arg is _NoneType:
                continue
            try:
                return _from_json(arg, value, where, coll)
            except (ModelTypeError, ValueError):
                continue
        raise ModelTypeError(f"{where}: {value!r} is not a {_type_name(tp)}")
    if origin in (list, List):
        (item,) = typing.get_args(tp) or (Any,)
        if not isinstance(value, list):
            raise ModelTypeError(f"{where}: {value!r} is not a list")
        return [_from_json(item, v, f"{where}[{i}]", coll) for i, v in enumerate(value)]
    if origin in (dict, Dict):
        _key, item = typing.get_args(tp) or (str, Any)
        if not isinstance(value, dict):
            raise ModelTypeError(f"{where}: {value!r} is not an object")
        return {k: _from_json(item, v, f"{where}[{k!r}]", coll) for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, Model):
        if not isinstance(value, str):
            raise ModelTypeError(f"{where}: {value!r} is not a document ID")
        return tp._for_reference(coll, value)
    try:
        if tp is datetime.datetime and isinstance(value, str):
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if tp is datetime.date and isinstance(value, str):
            return datetime.date.fromisoformat(value)
        if tp is bytes and isinstance(value, str):
            return base64.b64decode(value.encode("ascii"), validate=True)
    except ValueError as exc:
        raise ModelTypeError(f"{where}: {value!r} is not a valid "
                             f"{_type_name(tp)} ({exc})") from None
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp in (str, bool) and isinstance(value, tp):
        return value
    raise ModelTypeError(f"{where}: {value!r} is not a {_type_name(tp)}")


# -- models -------------------------------------------------------------------------------

class Model:
    """Base class of model classes: one object per document (see the module's
    documentation). Subclasses declare annotated fields with defaults and, to take part in
    the factory, a ``doc_type`` class attribute (the documents' ``"type"``)."""

    #: The documents' ``"type"`` for this class (None: not registered, no "type" written).
    doc_type: ClassVar[Optional[str]] = None
    _fields_cache: ClassVar[Optional[Dict[str, Any]]] = None
    _collection: Collection
    _doc_id: str
    _rev: Optional[str]
    _extra: Dict[str, Any]
    _saved: Optional[Dict[str, Any]]                 # the JSON last read or saved
    _attachments: Dict[str, Dict[str, Any]]          # name -> stub
    _pending_atts: Dict[str, Optional[Tuple[bytes, Optional[str]]]]  # None: removal
    _deleted: bool

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields_cache = None
        doc_type = cls.__dict__.get("doc_type")
        if doc_type is not None:
            if not isinstance(doc_type, str):
                raise TypeError(f"{cls.__name__}.doc_type must be a str")
            with _factory_lock:
                _factory[doc_type] = cls

    # -- fields ------------------------------------------------------------------------

    @classmethod
    def fields(cls) -> Dict[str, Any]:
        """The persistent fields: ``{name: type}`` of the annotated attributes (not
        ClassVar, not starting with ``_``), the base classes' first."""
        cached = cls.__dict__.get("_fields_cache")
        if cached is not None:
            return dict(cached)
        hints = typing.get_type_hints(cls)
        fields: Dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name in getattr(klass, "__annotations__", {}):
                if name.startswith("_") or name in Model.__annotations__:
                    continue
                tp = hints.get(name)
                if typing.get_origin(tp) is ClassVar:
                    continue
                fields[name] = tp
        cls._fields_cache = fields
        return dict(fields)

    def __init__(self, collection: Collection, doc_id: str) -> None:
        # Use create() / get(): the constructor does not register the object.
        object.__setattr__(self, "_collection", collection)
        object.__setattr__(self, "_doc_id", doc_id)
        object.__setattr__(self, "_rev", None)
        object.__setattr__(self, "_extra", {})
        object.__setattr__(self, "_saved", None)        # the JSON last read or saved
        object.__setattr__(self, "_attachments", {})    # name -> stub dict
        object.__setattr__(self, "_pending_atts", {})   # name -> (bytes, type) | None
        object.__setattr__(self, "_deleted", False)
        for name in type(self).fields():
            object.__setattr__(self, name, copy.deepcopy(getattr(type(self), name, None)))

    def __setattr__(self, name: str, value: Any) -> None:
        fields = type(self).fields()
        if name in fields:
            _to_json(fields[name], value, f"{type(self).__name__}.{name}")
        elif not name.startswith("_") and not hasattr(type(self), name):
            raise AttributeError(f"{type(self).__name__} has no field {name!r} "
                                 "(set_property() sets other document properties)")
        object.__setattr__(self, name, value)

    # -- instances ---------------------------------------------------------------------

    @classmethod
    def create(cls: Type[M], target: Union[Database, Collection],
               doc_id: Optional[str] = None, **values: Any) -> M:
        """A new model for a new document (saved by :meth:`save`): `doc_id` None makes
        a UUID, so that other models can refer to it before it is saved. Field values
        as keyword arguments (TypeError for an unknown one). Saving raises Conflict when
        the document exists already."""
        coll = _collection(target)
        doc_id = doc_id if doc_id is not None else uuid.uuid4().hex
        cstr(doc_id, "doc_id")
        key = (coll.full_name, doc_id)
        registry = _registry(coll)
        if key in registry:
            raise ValueError(f"a model object for document {doc_id!r} exists already "
                             "(use get())")
        model = cls(coll, doc_id)
        for name, value in values.items():
            if name not in cls.fields():
                raise TypeError(f"{cls.__name__} has no field {name!r}")
            setattr(model, name, value)
        registry[key] = model
        return model

    @classmethod
    def get(cls: Type[M], target: Union[Database, Collection], doc_id: str) -> M:
        """The model object of an existing document — the same object every time for a
        Database handle. Called on :class:`Model` (or a base class), the class is the one
        registered for the document's ``"type"``; ModelTypeError when that class is not
        a subclass of `cls`, or when a property does not fit its field. NotFound when
        the document does not exist."""
        coll = _collection(target)
        cstr(doc_id, "doc_id")
        registry = _registry(coll)
        existing = registry.get((coll.full_name, doc_id))
        if existing is not None:
            if not isinstance(existing, cls):
                raise ModelTypeError(f"document {doc_id!r} is a {type(existing).__name__}, "
                                     f"not a {cls.__name__}")
            return existing
        doc = coll.get(doc_id)
        model = cls._instantiate(coll, doc_id, doc)
        return model

    @classmethod
    def _instantiate(cls: Type[M], coll: Collection, doc_id: str,
                     doc: Optional[Dict[str, Any]]) -> M:
        klass: Type[Model] = cls
        doc_type = doc.get("type") if doc is not None else None
        if isinstance(doc_type, str):
            registered = model_class_for_type(doc_type)
            if registered is not None:
                if not issubclass(registered, cls):
                    raise ModelTypeError(
                        f"document {doc_id!r} has type {doc_type!r} ({registered.__name__}), "
                        f"not a {cls.__name__}")
                klass = registered
        model = klass(coll, doc_id)
        _registry(coll)[(coll.full_name, doc_id)] = model  # before loading: cycles end here
        if doc is not None:
            try:
                model._load(doc)
            except BaseException:
                _registry(coll).pop((coll.full_name, doc_id), None)
                raise
        assert isinstance(model, cls)
        return model

    @classmethod
    def _for_reference(cls: Type[M], coll: Collection, doc_id: str) -> M:
        """The model a reference names: the registered object, else read (a document
        that does not exist yet gives an unsaved model of this class)."""
        existing = _registry(coll).get((coll.full_name, doc_id))
        if existing is not None:
            if not isinstance(existing, cls):
                raise ModelTypeError(f"document {doc_id!r} is a {type(existing).__name__}, "
                                     f"not a {cls.__name__}")
            return existing
        return cls._instantiate(coll, doc_id, coll.get(doc_id, None))

    def _load(self, doc: Dict[str, Any]) -> None:
        fields = type(self).fields()
        values: Dict[str, Any] = {}
        for name, tp in fields.items():
            if name in doc and doc[name] is not None:
                values[name] = _from_json(tp, doc[name], f"document {self._doc_id!r} "
                                          f"property {name!r} ({type(self).__name__}.{name})",
                                          self._collection)
            else:
                values[name] = copy.deepcopy(getattr(type(self), name, None))
        for name, value in values.items():
            object.__setattr__(self, name, value)
        extra = {k: v for k, v in doc.items() if k not in fields and not k.startswith("_")}
        object.__setattr__(self, "_extra", extra)
        object.__setattr__(self, "_rev", doc.get("_rev"))
        object.__setattr__(self, "_attachments", dict(doc.get("_attachments", {})))
        object.__setattr__(self, "_pending_atts", {})
        object.__setattr__(self, "_saved", self.properties_to_save())

    # -- state -------------------------------------------------------------------------

    @property
    def doc_id(self) -> str:
        """The document's ID."""
        return self._doc_id

    @property
    def rev(self) -> Optional[str]:
        """The revision last read or saved (None: never saved)."""
        return self._rev

    @property
    def collection(self) -> Collection:
        """The collection holding the document."""
        return self._collection

    @property
    def is_new(self) -> bool:
        """True until the document is first saved (or when it does not exist)."""
        return self._rev is None

    @property
    def is_changed(self) -> bool:
        """True when the object differs from the document (fields, properties or
        attachments)."""
        return self._pending_atts != {} or self._saved != self.properties_to_save()

    def changed_fields(self) -> Set[str]:
        """The names of the fields and properties that differ from the document."""
        now = self.properties_to_save()
        saved = self._saved or {}
        return {k for k in set(now) | set(saved) if now.get(k, _MISSING) != saved.get(k, _MISSING)}

    def properties_to_save(self) -> Dict[str, Any]:
        """The document body the object would save (without ``_id``/``_rev``/attachments):
        the fields as JSON (None left out), the other properties, and ``"type"``."""
        body = dict(self._extra)
        for name, tp in type(self).fields().items():
            value = getattr(self, name)
            where = f"{type(self).__name__}.{name}"
            if value is None:
                _to_json(tp, value, where)   # None must be allowed by the type
                body.pop(name, None)
                continue
            body[name] = _to_json(tp, value, where)
        if type(self).doc_type is not None:
            body["type"] = type(self).doc_type
        return body

    def get_property(self, name: str, default: Any = None) -> Any:
        """A document property that is not a field (raw JSON)."""
        if name in type(self).fields():
            return getattr(self, name)
        return self._extra.get(name, default)

    def set_property(self, name: str, value: Any) -> None:
        """Sets a document property that is not a field (raw JSON; None removes it)."""
        if name in type(self).fields():
            setattr(self, name, value)
        elif value is None:
            self._extra.pop(name, None)
        else:
            self._extra[name] = value

    # -- attachments -------------------------------------------------------------------

    def attachment_names(self) -> List[str]:
        """The attachment names, changes not saved yet included, sorted."""
        names = set(self._attachments)
        for name, pending in self._pending_atts.items():
            if pending is None:
                names.discard(name)
            else:
                names.add(name)
        return sorted(names)

    def get_attachment(self, name: str) -> bytes:
        """An attachment's content (one set but not saved yet included). NotFound when
        absent."""
        cstr(name, "attachment name")
        if name in self._pending_atts:
            pending = self._pending_atts[name]
            if pending is None:
                raise NotFound(f"attachment {name!r} is removed")
            data: bytes = pending[0]
            return data
        if name not in self._attachments or self._rev is None:
            raise NotFound(f"no attachment {name!r}")
        return self._collection.get_attachment(self._doc_id, name)

    def set_attachment(self, name: str, data: bytes,
                       content_type: Optional[str] = None) -> None:
        """Sets an attachment, saved with the next :meth:`save`."""
        cstr(name, "attachment name")
        cstr(content_type, "content_type")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ModelTypeError(f"attachment data must be bytes, not {type(data).__name__}")
        self._pending_atts[name] = (bytes(data), content_type)

    def remove_attachment(self, name: str) -> None:
        """Removes an attachment with the next :meth:`save` (NotFound when absent)."""
        cstr(name, "attachment name")
        if name not in self.attachment_names():
            raise NotFound(f"no attachment {name!r}")
        self._pending_atts[name] = None

    def _body(self) -> Dict[str, Any]:
        body = self.properties_to_save()
        if self._pending_atts:
            db = self._collection.database
            stubs = {k: dict(v, stub=True) for k, v in self._attachments.items()}
            for name, pending in self._pending_atts.items():
                if pending is None:
                    stubs.pop(name, None)
                    continue
                data, content_type = pending
                stub: Dict[str, Any] = {"stub": True, "digest": db.put_blob(data)}
                if content_type is not None:
                    stub["content_type"] = content_type
                stubs[name] = stub
            body["_attachments"] = stubs
        body["_id"] = self._doc_id
        if self._rev is not None:
            body["_rev"] = self._rev
        return body

    def _saved_as(self, rev: str) -> None:
        object.__setattr__(self, "_rev", rev)
        if self._pending_atts:
            object.__setattr__(self, "_attachments",
                               dict(self._collection.get(self._doc_id).get("_attachments", {})))
            object.__setattr__(self, "_pending_atts", {})
        object.__setattr__(self, "_saved", self.properties_to_save())

    # -- saving ------------------------------------------------------------------------

    def will_save(self, changed: Set[str]) -> None:
        """Called just before the object is saved, with the changed names; override it
        to adjust fields (e.g. a modification time)."""

    def save(self) -> str:
        """Saves the object as a new revision of its document (on the revision it last
        read or saved: Conflict when the document changed meanwhile). Returns the new
        revision ID; does nothing (and returns the current one) when nothing changed."""
        if self._deleted:
            raise NotFound(f"document {self._doc_id!r} was deleted through this model")
        if not self.is_changed and self._rev is not None:
            return self._rev
        self.will_save(self.changed_fields())
        _id, rev = self._collection.put(self._body())
        self._saved_as(rev)
        return rev

    def revert(self) -> None:
        """Drops unsaved changes: reads the document again (a new object's fields go
        back to their defaults)."""
        doc = self._collection.get(self._doc_id, None)
        if doc is None:
            fresh = type(self)(self._collection, self._doc_id)
            for name in type(self).fields():
                object.__setattr__(self, name, getattr(fresh, name))
            object.__setattr__(self, "_extra", {})
            object.__setattr__(self, "_pending_atts", {})
            return
        self._load(doc)

    def delete(self) -> str:
        """Deletes the document (a tombstone on the revision last read or saved);
        returns the tombstone's revision. The object is no longer usable."""
        if self._rev is None:
            raise NotFound(f"document {self._doc_id!r} was never saved")
        rev = self._collection.delete(self._doc_id, self._rev)
        object.__setattr__(self, "_rev", rev)
        object.__setattr__(self, "_deleted", True)
        _registry(self._collection).pop((self._collection.full_name, self._doc_id), None)
        return rev

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in type(self).fields())
        return f"<{type(self).__name__} {self._doc_id!r} {fields}>"


def save_models(models: Iterable[Model]) -> List[Dict[str, Any]]:
    """Saves the changed models among `models` together: one transaction per collection
    (``_bulk_docs``). Returns one result per changed model, in order, as
    :meth:`cblite.Collection.put_many` (``{"ok": True, "id", "rev"}`` or ``{"id",
    "error", "reason"}``); the saved models get their new revisions."""
    changed = [m for m in models if m.is_changed or m.is_new]
    for m in changed:
        if m._deleted:
            raise NotFound(f"document {m.doc_id!r} was deleted through its model")
        m.will_save(m.changed_fields())
    by_coll: Dict[int, List[Model]] = {}
    for m in changed:
        by_coll.setdefault(id(m.collection), []).append(m)
    results: Dict[int, Dict[str, Any]] = {}
    for group in by_coll.values():
        coll = group[0].collection
        for m, result in zip(group, coll.save_many([m._body() for m in group])):
            results[id(m)] = result
            if result.get("ok"):
                m._saved_as(result["rev"])
    return [results[id(m)] for m in changed]


def save_all(db: Database) -> List[Dict[str, Any]]:
    """Saves every changed model object of this Database handle (CBLModel's
    ``saveAllModels``); results as :func:`save_models`."""
    return save_models(list(db._models.values()))
