"""Views (map/reduce indexes with CouchDB collation), queries, all-documents queries and
live queries — the "Views and queries" section of include/cblite.h.

Quick tour::

    import cblite

    with cblite.Database("music", "/tmp/data") as db:
        coll = db.default_collection
        tracks = coll.view("tracks")            # or cblite.views.View(coll, "tracks")
        tracks.set_map_reduce(
            lambda doc, emit: emit([doc["genre"], doc["artist"]], doc["seconds"]),
            reduce="_sum")          # version: derived from the code
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
library threads. A map function that raises on a document is logged on the ``cblite``
logger and that document emits nothing (CouchDB's rule: one bad document does not break
the view); an exception in a reduce function fails the query and is re-raised by it.

The index is persistent and tagged with a version: when the version changes, the next
query rebuilds the index. By default the version is derived from the code of the map and
reduce functions (:func:`code_version`), so editing them rebuilds the index by itself.
Values a function reads from outside its code (globals, closures, files) are not part of
that: when they change what the function emits, pass an explicit ``version=`` and change
it yourself.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import threading
import types
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int, c_size_t,
                    c_uint64, c_void_p)
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, Tuple, Union

from . import _lib
from ._lib import cbl_error, enc
from ._util import (CALLBACK_SCOPE, ReleasableHandle, call, call_handle, call_json, check,
                    dumps, in_callback, to_json)
from .errors import CBLiteError, error_for_status

if TYPE_CHECKING:
    from .database import Collection, Database

__all__ = ["View", "Row", "QueryResult", "LiveQuery", "MapFunction", "ReduceFunction",
           "Emit", "code_version", "live_query_count", "stop_all_live_queries"]

log = logging.getLogger("cblite")


class cbl_query_row(Structure):
    """``struct cbl_query_row`` (strings valid until the next call reading rows)."""

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
#: The "Views and queries" section of include/cblite.h (merged into ``_lib.FUNCTIONS``).
FUNCTIONS: Dict[str, Any] = {
    "cbl_emit": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "cbl_collection_view": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_view_set_map_reduce": (c_int, [c_void_p, MAP_FN, REDUCE_FN, c_char_p, c_char_p,
                                        c_void_p, _ERR]),
    "cbl_view_update": (c_int, [c_void_p, _ERR]),
    "cbl_view_info": (c_int, [c_void_p, _OUT, _ERR]),
    "cbl_view_delete": (c_int, [c_void_p, _ERR]),
    "cbl_view_release": (None, [c_void_p]),
    "cbl_collection_view_names": (c_int, [c_void_p, _OUT, _ERR]),
    "cbl_view_query_json": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_view_query": (c_int, [c_void_p, c_char_p, _OUT, _ERR]),
    "cbl_query_result_next": (c_int, [c_void_p, POINTER(cbl_query_row), POINTER(c_int), _ERR]),
    "cbl_query_result_next_rows": (c_int, [c_void_p, POINTER(cbl_query_row), c_size_t,
                                           POINTER(c_size_t), _ERR]),
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

_lib.declare(FUNCTIONS)
C = _lib.C

#: ``emit(key, value)`` as given to a map function (``emit(key)``: a row without value).
Emit = Callable[..., None]
#: ``map(doc, emit)``.
MapFunction = Callable[[Dict[str, Any], Emit], Any]
#: ``reduce(keys, values, rereduce)`` (keys is None when rereducing).
ReduceFunction = Callable[[Optional[List[Any]], List[Any], bool], Any]


def query_options(options: Dict[str, Any]) -> Optional[bytes]:
    return dumps(options, "query options") if options else None


def _dec(raw: Optional[bytes]) -> Optional[str]:
    return None if raw is None else raw.decode("utf-8", errors="surrogateescape")


def _load(raw: Optional[bytes]) -> Any:
    return None if raw is None else json.loads(raw.decode("utf-8", errors="surrogateescape"))


class Row(NamedTuple):
    """One query row. ``doc_id`` is None for reduced/grouped rows; ``value`` is None when
    the row was emitted without one; ``doc`` is set with ``include_docs``; ``error`` is
    "not_found" for all-docs ``keys`` misses."""

    key: Any
    value: Any
    doc_id: Optional[str]
    source_doc_id: Optional[str]
    doc: Optional[Dict[str, Any]]
    sequence: int
    error: Optional[str] = None


def _row(r: cbl_query_row) -> Row:
    return Row(_load(r.key_json), _load(r.value_json), _dec(r.doc_id), _dec(r.source_doc_id),
               _load(r.doc_json), int(r.sequence), _dec(r.error))


#: Rows read per call (cbl_query_result_next_rows): one ctypes call per page, not per row.
_PAGE_ROWS = 128
_Page = cbl_query_row * _PAGE_ROWS


class _PageReader:
    """Reads a result's rows a page at a time into one reusable ctypes array; each page is
    converted to :class:`Row` values before the next call (which reuses its strings)."""

    __slots__ = ("page", "count", "err")

    def __init__(self) -> None:
        self.page = _Page()
        self.count = c_size_t(0)
        self.err = cbl_error()

    def read(self, handle: int) -> Tuple[int, List[Row]]:
        """(status, rows of the next page); no rows at the end or on error."""
        status = C.cbl_query_result_next_rows(handle, self.page, _PAGE_ROWS, byref(self.count),
                                              byref(self.err))
        if status != 0:
            return status, []
        page = self.page
        return 0, [_row(page[i]) for i in range(self.count.value)]


def _read_rows(handle: int) -> List[Row]:
    rows: List[Row] = []
    reader = _PageReader()
    while True:
        status, page = reader.read(handle)
        check(status, reader.err)
        if not page:
            return rows
        rows.extend(page)


def _row_json(r: Row, include_docs: bool) -> Dict[str, Any]:
    """A row as the library writes it in a result's JSON (cbl_query_result_json)."""
    if r.error is not None:
        return {"key": r.key, "error": r.error}
    out: Dict[str, Any] = {}
    if r.doc_id is not None:
        out["id"] = r.doc_id
    out["key"] = r.key
    out["value"] = r.value
    if r.doc_id is not None:
        out["seq"] = r.sequence
        if r.source_doc_id is not None and r.source_doc_id != r.doc_id:
            out["source_id"] = r.source_doc_id
        if include_docs:
            out["doc"] = r.doc
    return out


class QueryResult(ReleasableHandle):
    """Rows of a query, read lazily (the library pages through the index). Iterate it;
    ``stale`` tells whether re-running could give other rows. Release with
    :meth:`release` (or use it as a context manager; it is also released when garbage
    collected)."""

    def __init__(self, handle: int, owner: Optional["View"] = None,
                 include_docs: bool = False) -> None:
        self._handle: Optional[int] = handle
        self._owner = owner       # keeps the view (and its callbacks) alive
        self._lock = threading.Lock()
        self._reader: Optional[_PageReader] = None
        self._page: List[Row] = []   # rows read from the library, not yet returned
        self._page_at = 0
        self._include_docs = include_docs   # for json() of rows already read

    def _h(self) -> int:
        if self._handle is None:
            raise error_for_status(400, "the query result is released")
        return self._handle

    def __iter__(self) -> "QueryResult":
        return self

    def __next__(self) -> Row:
        with self._lock:
            if self._page_at < len(self._page):
                self._page_at += 1
                return self._page[self._page_at - 1]
            handle = self._h()
            if self._reader is None:
                self._reader = _PageReader()
            status, self._page = self._reader.read(handle)
            self._page_at = 0
            if self._page:
                self._page_at = 1
                return self._page[0]
            err = self._reader.err
        _raise_pending(self._owner)
        check(status, err)
        raise StopIteration

    def rows(self) -> List[Row]:
        """Every remaining row."""
        return list(self)

    @property
    def stale(self) -> bool:
        """True when re-running the query could give other rows."""
        out = c_int(0)
        call(C.cbl_query_result_is_stale, self._h(), byref(out))
        return bool(out.value)

    def json(self) -> Dict[str, Any]:
        """The remaining rows as the JSON object of :meth:`View.query_json`."""
        with self._lock:
            read_ahead = self._page[self._page_at:]
            self._page, self._page_at = [], 0
        result: Dict[str, Any] = call_json(C.cbl_query_result_json, self._h())
        if read_ahead:       # rows of the last page read that iteration has not returned
            result["rows"][:0] = [_row_json(r, self._include_docs) for r in read_ahead]
        return result

    def release(self) -> None:
        """Releases the result (idempotent)."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_query_result_release(handle)


_ABSENT = object()
_keepalive: List[Any] = []


def _raise_pending(owner: Optional["View"]) -> None:
    """Re-raises an exception a Python reduce callback raised during the last call."""
    if owner is None:
        return
    exc = owner._pending_error
    if exc is not None:
        owner._pending_error = None
        raise exc


def _hash_const(h: "hashlib._Hash", value: Any) -> None:
    """Feeds a code object's constant to `h` in a form stable across runs (the order of a
    frozenset's items depends on string hashing, which is randomised per process)."""
    if isinstance(value, types.CodeType):
        _hash_code(h, value)
    elif isinstance(value, (tuple, list)):
        h.update(b"(")
        for item in value:
            _hash_const(h, item)
        h.update(b")")
    elif isinstance(value, frozenset):
        h.update(repr(sorted(repr(v) for v in value)).encode())
    else:
        h.update(repr(value).encode("utf-8", "surrogateescape"))
    h.update(b"\0")


def _hash_code(h: "hashlib._Hash", code: types.CodeType) -> None:
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        _hash_const(h, const)


def _function_code(fn: Callable[..., Any]) -> types.CodeType:
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"cannot derive a view version from {fn!r} (no Python code): "
                        "pass version= explicitly")
    return code


def code_version(map_fn: MapFunction,
                 reduce: Union[str, ReduceFunction, None] = None) -> str:
    """The version :meth:`View.set_map_reduce` uses by default: a hash of the map and
    reduce functions' code (bytecode, constants, names of the globals and attributes they
    use; nested functions included), or of the builtin reduce's name. Editing a function
    changes it, so the index is rebuilt; so may a new Python version (its bytecode
    differs). What the code reads from outside (globals' values, closures, defaults) is
    not included: give ``version=`` when such data changes what is emitted. A callable
    without Python code (a builtin, a C extension) needs an explicit ``version=``
    (TypeError otherwise)."""
    h = hashlib.sha256()
    h.update(b"map\0")
    _hash_code(h, _function_code(map_fn))
    h.update(b"reduce\0")
    if isinstance(reduce, str):
        h.update(reduce.encode("utf-8", "surrogateescape"))
    elif reduce is not None:
        _hash_code(h, _function_code(reduce))
    return "code-" + h.hexdigest()[:32]


class View(ReleasableHandle):
    """A view of a collection (``coll.view(name)``). Functions are registered with
    :meth:`set_map_reduce`; the index is persistent and updated incrementally on
    demand. See the module's documentation for query options and versions."""

    def __init__(self, collection: "Collection", name: str) -> None:
        self._collection = collection
        #: The view's name.
        self.name = name
        self._handle: Optional[int] = call_handle(C.cbl_collection_view, collection._h,
                                                  enc(name, "view name"))
        self._map_cb: Any = None
        self._reduce_cb: Any = None
        self._pending_error: Optional[BaseException] = None
        self._lock = threading.Lock()

    @property
    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise error_for_status(400, "the view handle is released")
        return handle

    @property
    def collection(self) -> "Collection":
        """The collection this view indexes."""
        return self._collection

    def set_map_reduce(self, map_fn: Optional[MapFunction],
                       reduce: Union[str, ReduceFunction, None] = None,
                       version: Optional[str] = None) -> str:
        """Registers the map function (None removes the functions) and an optional
        reduce: "_count", "_sum", "_stats" or ``reduce(keys, values, rereduce)``.

        ``version`` None (the default) derives it from the functions' code
        (:func:`code_version`); a given string is used as is — change it whenever what
        the functions emit changes. Returns the version used.

        A map function raising on a document is logged on the ``cblite`` logger and
        that document emits nothing (rows it emitted before raising are dropped)."""
        view = self
        if version is None:
            version = "none" if map_fn is None else code_version(map_fn, reduce)
        cversion = enc(version, "version")

        def map_trampoline(_ctx: Any, doc_json: bytes, emitter: int) -> None:
            with CALLBACK_SCOPE:
                try:
                    doc = json.loads(doc_json.decode("utf-8", errors="surrogateescape"))
                except BaseException:
                    log.exception("cblite view %r: unreadable document", view.name)
                    return
                rows: List[Any] = []

                def emit(key: Any, value: Any = _ABSENT) -> None:
                    # Checked now, so that the exception points at the emit call.
                    rows.append((to_json(key), None if value is _ABSENT else to_json(value)))

                try:
                    assert map_fn is not None
                    map_fn(doc, emit)
                except BaseException:
                    # CouchDB's rule: log, and index nothing for this document.
                    try:
                        log.exception("cblite view %r: map function raised on document "
                                      "%r; the document is skipped", view.name,
                                      doc.get("_id") if isinstance(doc, dict) else None)
                    except BaseException:
                        pass
                    return
                try:
                    for key_json, value_json in rows:
                        err = cbl_error()
                        check(C.cbl_emit(emitter, key_json, value_json, byref(err)), err)
                except BaseException as exc:  # the library fails the update too
                    view._pending_error = exc

        def reduce_trampoline(_ctx: Any, keys_json: Optional[bytes], values_json: bytes,
                              rereduce: int) -> Optional[int]:
            with CALLBACK_SCOPE:
                try:
                    assert callable(reduce)
                    keys = None if keys_json is None else json.loads(keys_json.decode("utf-8"))
                    values = json.loads(values_json.decode("utf-8"))
                    out: Optional[int] = C.cbl_strdup(to_json(reduce(keys, values, bool(rereduce))))
                    return out
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
            call(C.cbl_view_set_map_reduce, self._h, map_cb, reduce_cb,
                 enc(builtin, "reduce"), cversion, None)
            self._map_cb, self._reduce_cb = map_cb, reduce_cb
            # Never freed: an index update already running (a live query, "update":"after"
            # on a background thread) may still call a replaced or released view's
            # trampolines. A few hundred bytes per registration.
            _keepalive.append((map_cb, reduce_cb))
        return version

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._pending_error = None
        try:
            return fn(*args)
        except CBLiteError:
            _raise_pending(self)
            raise

    def query(self, **options: Any) -> QueryResult:
        """Runs a query; returns a lazily read :class:`QueryResult`. Options are
        CouchDB's (module documentation)."""
        handle = self._call(call_handle, C.cbl_view_query, self._h, query_options(options))
        return QueryResult(handle, self, include_docs=bool(options.get("include_docs")))

    def rows(self, **options: Any) -> List[Row]:
        """The rows of a query as a list."""
        with self.query(**options) as result:
            return result.rows()

    def query_json(self, **options: Any) -> Dict[str, Any]:
        """Runs a query; returns ``{"total_rows","offset","update_seq","rows":[...]}``."""
        result: Dict[str, Any] = self._call(call_json, C.cbl_view_query_json, self._h,
                                            query_options(options))
        return result

    def update(self) -> None:
        """Brings the index up to date now."""
        self._call(call, C.cbl_view_update, self._h)

    def info(self) -> Dict[str, Any]:
        """``{"name","last_sequence","total_rows","stale"}``"""
        result: Dict[str, Any] = call_json(C.cbl_view_info, self._h)
        return result

    def delete(self) -> None:
        """Deletes the index (the functions stay registered)."""
        call(C.cbl_view_delete, self._h)

    def live_query(self, callback: Callable[[List[Row]], Any], **options: Any) -> "LiveQuery":
        """Starts a live query: ``callback(rows)`` gets the first result, then each
        changed result, on a library thread. It runs until stopped, or until the
        database is closed."""
        return LiveQuery(self, callback, options)

    def release(self) -> None:
        """Releases the view handle (live queries started on it keep running)."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_view_release(handle)

    def __repr__(self) -> str:
        return f"<cblite.View {self.name!r}{'' if self._handle else ' (released)'}>"


_live_lock = threading.Lock()
_live: Dict[int, "LiveQuery"] = {}
_graveyard: List[Any] = []


class LiveQuery:
    """A running live query (:meth:`View.live_query`). :meth:`stop` (or leaving the
    ``with`` block, or closing the database) stops it and returns once no callback runs
    any more."""

    def __init__(self, view: View, callback: Callable[[List[Row]], Any],
                 options: Dict[str, Any]) -> None:
        self._view = view            # keeps the map/reduce trampolines alive
        self._callback = callback
        self._db: Optional["Database"] = view.collection.database

        def trampoline(_ctx: Any, result: int) -> None:
            with CALLBACK_SCOPE:
                try:
                    rows = _read_rows(result)
                    callback(rows)
                except BaseException:
                    try:
                        log.exception("exception in cblite live query callback %r", callback)
                    except BaseException:
                        pass

        self._cfunc: Any = LIVE_FN(trampoline)
        self._handle: Optional[int] = call_handle(C.cbl_live_query_start, view._h,
                                                  query_options(options), self._cfunc, None)
        with _live_lock:
            _live[id(self)] = self
        self._db._live_queries.add(self)

    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise error_for_status(406, "the live query is stopped")
        return handle

    @property
    def running(self) -> bool:
        """True until stopped (also by closing the database)."""
        return self._handle is not None

    def set_options(self, **options: Any) -> None:
        """Replaces the options; the query re-runs and calls back with its new rows."""
        call(C.cbl_live_query_set_options, self._h(), query_options(options))

    def wait_idle(self) -> None:
        """Returns once every change committed so far has been processed (and any
        callback it caused has returned). Not from the live query's own callback."""
        call(C.cbl_live_query_wait_idle, self._h())

    def stop(self) -> None:
        """Stops the live query (idempotent; may be called from its callback)."""
        with _live_lock:
            handle, self._handle = self._handle, None
            _live.pop(id(self), None)
        if handle is None:
            return
        C.cbl_live_query_stop(handle)
        if in_callback():
            _graveyard.append(self._cfunc)
        db, self._db = self._db, None
        if db is not None:
            db._live_queries.discard(self)

    def __enter__(self) -> "LiveQuery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


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
