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
``include_docs=``, ``update=`` (True, False or "after"), ``prefix_match_level=``,
``sorted=`` (False: rows in any order, the same set);
all-docs queries also take ``all_docs_mode=``). They cross the ABI as one JSON object.

Map functions receive the document as a dict (with ``_id`` and ``_rev``) and an
``emit(key, value)`` function; ``emit(key)`` emits a row without a value. Reduce
functions are "_count", "_sum", "_stats", "_approx_count_distinct" (computed natively) or a callable
``reduce(keys, values, rereduce)`` (keys is None when re-reducing). Callbacks may run on
library threads. A map function that raises on a document is logged on the ``cblite``
logger and that document emits nothing (CouchDB's rule: one bad document does not break
the view); an exception in a reduce function fails the query and is re-raised by it.

Full-text (Couchbase Lite 1.x's text keys): a map function may emit ``emit(TextKey(text),
value)``; ``view.query(full_text="coffee", snippets=True, ranking=True, **options)`` then
yields :class:`~cblite.text_match.TextMatch` rows (``.full_text``, ``.score``,
``.matches``, ``.match_count``, ``.snippet``, ``.value``, ``.doc_id``), best match first
(``ranking=False``: index order). The query syntax is :meth:`Collection.search`'s; words
are folded and stemmed ("cat" finds "cats") and English stop words ignored, unless
:meth:`View.set_text_analyzer` says otherwise. In ordinary queries a text key's row has the
key None. ``limit``, ``skip``, ``descending``, ``include_docs`` and ``update`` apply; key
ranges, ``keys``, grouping and ``reduce=True`` raise BadRequest.

The index is persistent and tagged with a version: when the version changes, the next
query rebuilds the index. By default the version is derived from the code of the map and
reduce functions (:func:`code_version`), so editing them rebuilds the index by itself.
Values a function reads from outside its code (globals, closures, files) are not part of
that: when they change what the function emits, pass an explicit ``version=`` and change
it yourself.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import types
from ctypes import byref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Union, overload

from . import _deep_json
from ._lib import C, MAP_FN, REDUCE_FN, VIEW_FUNCTIONS, cbl_error, enc
from ._shutdown import bury
from ._util import (CALLBACK_SCOPE, ReleasableHandle, call, call_handle, call_json, check,
                    query_options, to_json)
from .errors import CBLiteError, error_for_status
from .live_query import LiveQuery, live_query_count, stop_all_live_queries
from .query_result import QueryResult, Row, raise_pending
from .text_match import TextKey, TextMatch, TextMatchResult

if TYPE_CHECKING:  # annotations only: Collection sits above this module (it opens views)
    from .collection import Collection

__all__ = ["View", "Row", "QueryResult", "LiveQuery", "MapFunction", "ReduceFunction",
           "Emit", "code_version", "live_query_count", "stop_all_live_queries", "TextKey", "TextMatch",
           "TextMatchResult"]

log = logging.getLogger("cblite")

#: The "Views and queries" section of include/cblite.h (declared in ``_lib``).
FUNCTIONS = VIEW_FUNCTIONS

#: ``emit(key, value)`` as given to a map function (``emit(key)``: a row without value).
Emit = Callable[..., None]
#: ``map(doc, emit)``.
MapFunction = Callable[[Dict[str, Any], Emit], Any]
#: ``reduce(keys, values, rereduce)`` (keys is None when rereducing).
ReduceFunction = Callable[[Optional[List[Any]], List[Any], bool], Any]

_ABSENT = object()


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
                    doc = _deep_json.loads(doc_json.decode("utf-8", errors="surrogateescape"))
                except BaseException:
                    log.exception("cblite view %r: unreadable document", view.name)
                    return
                rows: List[Any] = []

                def emit(key: Any, value: Any = _ABSENT) -> None:
                    # Checked now, so that the exception points at the emit call.
                    value_json = None if value is _ABSENT else to_json(value)
                    if isinstance(key, TextKey):
                        rows.append((None, enc(key.text, "text key"), value_json))
                    else:
                        rows.append((to_json(key), None, value_json))

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
                    for key_json, text, value_json in rows:
                        err = cbl_error()
                        if text is not None:
                            check(C.cbl_emitter_emit_text(emitter, text, value_json, byref(err)), err)
                        else:
                            check(C.cbl_emitter_emit(emitter, key_json, value_json, byref(err)), err)
                except BaseException as exc:  # the library fails the update too
                    view._pending_error = exc

        def reduce_trampoline(_ctx: Any, keys_json: Optional[bytes], values_json: bytes,
                              rereduce: int) -> Optional[int]:
            with CALLBACK_SCOPE:
                try:
                    assert callable(reduce)
                    keys = None if keys_json is None else _deep_json.loads(keys_json.decode("utf-8"))
                    values = _deep_json.loads(values_json.decode("utf-8"))
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
            bury((map_cb, reduce_cb))
        return version

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._pending_error = None
        try:
            return fn(*args)
        except CBLiteError:
            raise_pending(self)
            raise

    @overload
    def query(self, full_text: None = None, **options: Any) -> QueryResult: ...

    @overload
    def query(self, full_text: str, *, snippets: Union[bool, Mapping[str, Any]] = False,
              ranking: bool = True, **options: Any) -> TextMatchResult: ...

    def query(self, full_text: Optional[str] = None, *, snippets: Union[bool, Mapping[str, Any]] = False,
              ranking: bool = True, **options: Any) -> Union[QueryResult, TextMatchResult]:
        """Runs a query; returns a lazily read :class:`QueryResult`. Options are
        CouchDB's (module documentation).

        With ``full_text`` (a full-text query on the view's text keys): a
        :class:`~cblite.text_match.TextMatchResult` of :class:`~cblite.text_match.TextMatch`
        rows; ``snippets`` True (``<b>``/``</b>`` marks) or ``{"open", "close", "ellipsis",
        "tokens"}``; ``ranking`` False for index order instead of best match first."""
        options = _with_full_text(options, full_text, snippets, ranking)
        handle = self._call(call_handle, C.cbl_view_query, self._h, query_options(options))
        result = QueryResult(handle, self, include_docs=bool(options.get("include_docs")))
        return result if full_text is None else TextMatchResult(result)

    def rows(self, **options: Any) -> List[Row]:
        """The rows of a query as a list."""
        with self.query(None, **options) as result:
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

    def set_text_analyzer(self, analyzer: Union[str, Mapping[str, Any]]) -> None:
        """How text keys are cut into terms: "english" (the default: folded, English
        stemming and stop words, as Couchbase Lite 1.x), "standard" (folded only) or
        ``{"fold_diacritics": True, "stemming": False, "stop_words": [...]}``. Another
        analyzer than the default rebuilds the index at the next update."""
        call(C.cbl_view_set_text_analyzer, self._h, to_json(analyzer if isinstance(analyzer, str) else dict(analyzer)))

    def live_query(self, callback: Callable[[List[Any]], Any], full_text: Optional[str] = None, *,
                   snippets: Union[bool, Mapping[str, Any]] = False, ranking: bool = True,
                   **options: Any) -> "LiveQuery":
        """Starts a live query: ``callback(rows)`` gets the first result, then each
        changed result, on a library thread. It runs until stopped, or until the
        database is closed. With ``full_text`` (as :meth:`query`), the rows are
        :class:`~cblite.text_match.TextMatch` values."""
        options = _with_full_text(options, full_text, snippets, ranking)
        return LiveQuery(self, callback, options, None if full_text is None else TextMatch.from_row)

    def release(self) -> None:
        """Releases the view handle (live queries started on it keep running)."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_view_release(handle)

    def __repr__(self) -> str:
        return f"<cblite.View {self.name!r}{'' if self._handle else ' (released)'}>"


def _with_full_text(options: Dict[str, Any], full_text: Optional[str],
                    snippets: Union[bool, Mapping[str, Any]], ranking: bool) -> Dict[str, Any]:
    """The query options with a full-text query's (none without ``full_text``)."""
    if full_text is None:
        return options
    return dict(options, full_text_query=full_text, full_text_ranking=ranking,
                full_text_snippets=snippets if isinstance(snippets, bool) else dict(snippets))
