"""Views (map/reduce indexes with CouchDB collation), queries, all-documents queries and
live queries — the "Views and queries" section of include/cblite.h.

Quick tour::

    import cblite

    with cblite.Database("music", "/tmp/data") as db:
        coll = db.default_collection
        tracks = coll.view("tracks")            # or cblite.views.View(coll, "tracks")
        tracks.set_map_reduce(
            lambda doc, emit: emit([doc["genre"], doc["artist"]], doc["seconds"]),
            reduce="_sum", version="1")
        for row in tracks.query(group_level=1):
            print(row.key, row.value)
        with tracks.live_query(lambda rows: print(rows), reduce=False, limit=10) as live:
            coll.put({"genre": "jazz", "artist": "miles", "seconds": 300})
            live.wait_idle()

Options are CouchDB's names as keyword arguments (``startkey=``, ``endkey=``,
``descending=``, ``limit=``, ``skip=``, ``keys=``, ``key=``, ``inclusive_end=``,
``startkey_docid=``, ``endkey_docid=``, ``reduce=``, ``group=``, ``group_level=``,
``include_docs=``, ``update=`` (True, False or "after"), ``prefix_match_level=``;
all-docs queries also take ``all_docs_mode=``). They cross the ABI as one JSON object.

Map functions receive the document as a dict (with ``_id`` and ``_rev``) and an
``emit(key, value)`` function; ``emit(key)`` emits a row without a value. Reduce
functions are "_count", "_sum", "_stats" (computed natively) or a callable
``reduce(keys, values, rereduce)`` (keys is None when re-reducing). Callbacks may run on
library threads; an exception in one fails the query and is re-raised by it.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int, c_uint64,
                    c_void_p)
from typing import Any, Callable, NamedTuple, Optional

from . import _lib
from ._lib import enc, lib
from ._util import CALLBACK_SCOPE, ReleasableHandle, call, call_handle, call_json, check, in_callback
from ._lib import cbl_error
from .errors import CBLiteError, error_for_status

__all__ = ["View", "Row", "QueryResult", "LiveQuery", "all_docs", "all_docs_query",
           "view_names", "live_query_count", "stop_all_live_queries"]

log = logging.getLogger("cblite")


class cbl_query_row(Structure):
    """``struct cbl_query_row`` (strings valid until the next row)."""

    _fields_ = [
        ("key_json", c_char_p),
        ("value_json", c_char_p),
        ("doc_id", c_char_p),
        ("source_doc_id", c_char_p),
        ("doc_json", c_char_p),
        ("error", c_char_p),
        ("sequence", c_uint64),
    ]


MAP_FN = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
REDUCE_FN = CFUNCTYPE(c_void_p, c_void_p, c_char_p, c_char_p, c_int)
LIVE_FN = CFUNCTYPE(None, c_void_p, c_void_p)

_ERR = POINTER(cbl_error)
_OUT = POINTER(c_void_p)
_FUNCTIONS = {
    "cbl_emit": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "cbl_collection_view": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_view_set_map_reduce": (c_int, [c_void_p, MAP_FN, REDUCE_FN, c_char_p, c_char_p, c_void_p, _ERR]),
    "cbl_view_update": (c_int, [c_void_p, _ERR]),
    "cbl_view_info": (c_int, [c_void_p, _OUT, _ERR]),
    "cbl_view_delete": (c_int, [c_void_p, _ERR]),
    "cbl_view_release": (None, [c_void_p]),
    "cbl_collection_view_names": (c_int, [c_void_p, _OUT, _ERR]),
    "cbl_view_query_json": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_view_query": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_query_result_next": (c_int, [c_void_p, POINTER(cbl_query_row), POINTER(c_int), _ERR]),
    "cbl_query_result_is_stale": (c_int, [c_void_p, POINTER(c_int), _ERR]),
    "cbl_query_result_json": (c_int, [c_void_p, _OUT, _ERR]),
    "cbl_query_result_release": (None, [c_void_p]),
    "cbl_collection_all_docs": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_collection_all_docs_query": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_live_query_start": (c_int, [c_void_p, c_char_p, LIVE_FN, c_void_p, _OUT, _ERR]),
    "cbl_live_query_set_options": (c_int, [c_void_p, c_char_p, _ERR]),
    "cbl_live_query_wait_idle": (c_int, [c_void_p, _ERR]),
    "cbl_live_query_stop": (None, [c_void_p]),
}


class _Fns:
    pass


def _missing(name):
    def stub(*args, **kwargs):
        raise error_for_status(501, f"{name} is not exported by {_lib.library_path}")
    stub.__name__ = name
    return stub


#: The declared functions of this section (also registered in ``_lib.FUNCTIONS`` and on
#: ``_lib.C``, so the header/declaration checks cover them).
F = _Fns()
for _name, (_res, _args) in _FUNCTIONS.items():
    try:
        _fn = getattr(lib, _name)
    except AttributeError:
        _lib.missing_functions.append(_name)
        _fn = _missing(_name)
    else:
        _fn.restype = _res
        _fn.argtypes = _args
    setattr(F, _name, _fn)
    setattr(_lib.C, _name, _fn)
_lib.FUNCTIONS.update(_FUNCTIONS)
_strdup = lib.cbl_strdup
_strdup.restype = c_void_p
_strdup.argtypes = [c_char_p]


def _dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _options(options: dict) -> Optional[bytes]:
    if not options:
        return None
    return _dumps(options)


def _dec(raw):
    return None if raw is None else raw.decode("utf-8", errors="surrogateescape")


def _load(raw):
    return None if raw is None else json.loads(raw.decode("utf-8", errors="surrogateescape"))


class Row(NamedTuple):
    """One query row. ``doc_id`` is None for reduced/grouped rows; ``value`` is None when
    the row was emitted without one; ``doc`` is set with ``include_docs``; ``error`` is
    "not_found" for all-docs ``keys`` misses."""

    key: Any
    value: Any
    doc_id: Optional[str]
    source_doc_id: Optional[str]
    doc: Optional[dict]
    sequence: int
    error: Optional[str] = None


def _row(r: cbl_query_row) -> Row:
    return Row(_load(r.key_json), _load(r.value_json), _dec(r.doc_id), _dec(r.source_doc_id),
               _load(r.doc_json), int(r.sequence), _dec(r.error))


def _read_rows(handle) -> "list[Row]":
    rows = []
    row = cbl_query_row()
    has = c_int(0)
    err = cbl_error()
    while True:
        check(F.cbl_query_result_next(handle, byref(row), byref(has), byref(err)), err)
        if not has.value:
            return rows
        rows.append(_row(row))


class QueryResult(ReleasableHandle):
    """Rows of a query, read lazily (the library pages through the index). Iterate it;
    ``stale`` tells whether re-running could give other rows. Release with
    :meth:`release` (or use it as a context manager; it is also released when garbage
    collected)."""

    def __init__(self, handle: int, owner=None):
        self._handle = handle
        self._owner = owner       # keeps the view (and its callbacks) alive
        self._lock = threading.Lock()

    def _h(self):
        if self._handle is None:
            raise error_for_status(400, "the query result is released")
        return self._handle

    def __iter__(self):
        return self

    def __next__(self) -> Row:
        with self._lock:
            handle = self._h()
            row = cbl_query_row()
            has = c_int(0)
            err = cbl_error()
            status = F.cbl_query_result_next(handle, byref(row), byref(has), byref(err))
            if status == 0 and has.value:
                return _row(row)
        _raise_pending(self._owner)
        check(status, err)
        raise StopIteration

    def rows(self) -> "list[Row]":
        """Every remaining row."""
        return list(self)

    @property
    def stale(self) -> bool:
        out = c_int(0)
        call(F.cbl_query_result_is_stale, self._h(), byref(out))
        return bool(out.value)

    def json(self) -> dict:
        """The remaining rows as the JSON object of :meth:`View.query_json`."""
        return call_json(F.cbl_query_result_json, self._h())

    def release(self) -> None:
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            F.cbl_query_result_release(handle)



_ABSENT = object()
_keepalive: list = []


def _raise_pending(owner) -> None:
    """Re-raises an exception a Python map/reduce callback raised during the last call."""
    if owner is None:
        return
    exc = owner._pending_error
    if exc is not None:
        owner._pending_error = None
        raise exc


class View(ReleasableHandle):
    """A view of a collection. Functions are registered with :meth:`set_map_reduce`;
    the index is persistent and updated incrementally on demand."""

    def __init__(self, collection, name: str):
        self._collection = collection
        self.name = name
        self._handle = call_handle(F.cbl_collection_view, collection._h, enc(name))
        self._map_cb = None
        self._reduce_cb = None
        self._pending_error = None
        self._lock = threading.Lock()

    @property
    def _h(self):
        handle = self._handle
        if handle is None:
            raise error_for_status(400, "the view handle is released")
        return handle

    @property
    def collection(self):
        return self._collection

    def set_map_reduce(self, map_fn: Optional[Callable], reduce=None, version: str = "1") -> None:
        """Registers the map function (None removes the functions) and an optional
        reduce: "_count", "_sum", "_stats" or ``reduce(keys, values, rereduce)``."""
        view = self

        def map_trampoline(_ctx, doc_json, emitter):
            with CALLBACK_SCOPE:
                try:
                    doc = json.loads(doc_json.decode("utf-8", errors="surrogateescape"))

                    def emit(key, value=_ABSENT):
                        err = cbl_error()
                        st = F.cbl_emit(emitter, _dumps(key), None if value is _ABSENT else _dumps(value),
                                        byref(err))
                        check(st, err)

                    map_fn(doc, emit)
                except BaseException as exc:  # never unwind into C: fail the update instead
                    view._pending_error = exc
                    try:
                        F.cbl_emit(emitter, b"\x01 map function raised", None, None)
                    except BaseException:
                        pass

        def reduce_trampoline(_ctx, keys_json, values_json, rereduce):
            with CALLBACK_SCOPE:
                try:
                    keys = None if keys_json is None else json.loads(keys_json.decode("utf-8"))
                    values = json.loads(values_json.decode("utf-8"))
                    return _strdup(_dumps(reduce(keys, values, bool(rereduce))))
                except BaseException as exc:
                    view._pending_error = exc
                    return None

        builtin = None
        map_cb = MAP_FN(map_trampoline) if map_fn is not None else MAP_FN()
        reduce_cb = REDUCE_FN()
        if isinstance(reduce, str):
            builtin = reduce
        elif reduce is not None:
            reduce_cb = REDUCE_FN(reduce_trampoline)
        with self._lock:
            call(F.cbl_view_set_map_reduce, self._h, map_cb, reduce_cb, enc(builtin), enc(version), None)
            self._map_cb, self._reduce_cb = map_cb, reduce_cb
            # Never freed: an index update already running (a live query, "update":"after"
            # on a background thread) may still call a replaced or released view's
            # trampolines. A few hundred bytes per registration.
            _keepalive.append((map_cb, reduce_cb))

    def _call(self, fn, *args):
        self._pending_error = None
        try:
            return fn(*args)
        except CBLiteError:
            _raise_pending(self)
            raise

    def query(self, **options) -> QueryResult:
        """Runs a query; returns a lazily read :class:`QueryResult`."""
        handle = self._call(call_handle, F.cbl_view_query, self._h, _options(options))
        return QueryResult(handle, self)

    def rows(self, **options) -> "list[Row]":
        """The rows of a query as a list."""
        with self.query(**options) as result:
            return result.rows()

    def query_json(self, **options) -> dict:
        """Runs a query; returns ``{"total_rows","offset","update_seq","rows":[...]}``."""
        return self._call(call_json, F.cbl_view_query_json, self._h, _options(options))

    def update(self) -> None:
        """Brings the index up to date now."""
        self._call(call, F.cbl_view_update, self._h)

    def info(self) -> dict:
        """``{"name","last_sequence","total_rows","stale"}``"""
        return call_json(F.cbl_view_info, self._h)

    def delete(self) -> None:
        """Deletes the index (the functions stay registered)."""
        call(F.cbl_view_delete, self._h)

    def live_query(self, callback: Callable[["list[Row]"], Any], **options) -> "LiveQuery":
        """Starts a live query: `callback(rows)` gets the first result, then each changed
        result, on a library thread."""
        return LiveQuery(self, callback, options)

    def release(self) -> None:
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            F.cbl_view_release(handle)


    def __repr__(self) -> str:
        return f"<cblite.View {self.name!r}{'' if self._handle else ' (released)'}>"


_live_lock = threading.Lock()
_live: "dict[int, LiveQuery]" = {}
_graveyard: list = []


class LiveQuery:
    """A running live query. :meth:`stop` (or leaving the ``with`` block) stops it and
    returns once no callback runs any more."""

    def __init__(self, view: View, callback, options: dict):
        self._view = view            # keeps the map/reduce trampolines alive
        self._callback = callback

        def trampoline(_ctx, result):
            with CALLBACK_SCOPE:
                try:
                    rows = _read_rows(result)
                    callback(rows)
                except BaseException:
                    try:
                        log.exception("exception in cblite live query callback %r", callback)
                    except BaseException:
                        pass

        self._cfunc = LIVE_FN(trampoline)
        self._handle = call_handle(F.cbl_live_query_start, view._h, _options(options), self._cfunc, None)
        with _live_lock:
            _live[id(self)] = self

    def _h(self):
        handle = self._handle
        if handle is None:
            raise error_for_status(406, "the live query is stopped")
        return handle

    @property
    def running(self) -> bool:
        return self._handle is not None

    def set_options(self, **options) -> None:
        """Replaces the options; the query re-runs and calls back with its new rows."""
        call(F.cbl_live_query_set_options, self._h(), _options(options))

    def wait_idle(self) -> None:
        """Returns once every change committed so far has been processed (and any
        callback it caused has returned). Not from the live query's own callback."""
        call(F.cbl_live_query_wait_idle, self._h())

    def stop(self) -> None:
        """Stops the live query (idempotent; may be called from its callback)."""
        with _live_lock:
            handle, self._handle = self._handle, None
            _live.pop(id(self), None)
        if handle is None:
            return
        F.cbl_live_query_stop(handle)
        if in_callback():
            _graveyard.append(self._cfunc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def live_query_count() -> int:
    """Live queries started through these bindings and not stopped."""
    with _live_lock:
        return len(_live)


def stop_all_live_queries() -> None:
    """Stops every live query (also run at interpreter exit)."""
    with _live_lock:
        queries = list(_live.values())
    for q in queries:
        try:
            q.stop()
        except Exception:
            pass


atexit.register(stop_all_live_queries)


def all_docs(collection, **options) -> dict:
    """All-documents query as JSON: ``{"total_rows","offset","update_seq","rows":[...]}``.
    ``all_docs_mode``: "all_docs", "include_deleted", "show_conflicts",
    "only_conflicts" or "by_sequence"."""
    return call_json(F.cbl_collection_all_docs, collection._h, _options(options))


def all_docs_query(collection, **options) -> QueryResult:
    """All-documents query read row by row."""
    return QueryResult(call_handle(F.cbl_collection_all_docs_query, collection._h, _options(options)))


def view_names(collection) -> "list[str]":
    """Names of the collection's views that have an index."""
    return call_json(F.cbl_collection_view_names, collection._h)


def _install_collection_methods() -> None:
    """Adds view methods to :class:`cblite.Collection` (only names it does not have)."""
    from .database import Collection
    methods = {
        "view": lambda self, name: View(self, name),
        "all_docs": all_docs,
        "all_docs_query": all_docs_query,
        "view_names": view_names,
    }
    for name, fn in methods.items():
        if not hasattr(Collection, name):
            setattr(Collection, name, fn)


_install_collection_methods()
