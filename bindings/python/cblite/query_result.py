"""Query results: the rows of a view query or an all-documents query, read lazily."""

from __future__ import annotations

import threading
from ctypes import byref, c_int, c_size_t
from typing import Any, Dict, List, NamedTuple, Optional, Protocol, Tuple

from . import _deep_json
from ._lib import C, cbl_error, cbl_query_row
from ._util import ReleasableHandle, call, call_json, check
from .errors import error_for_status

__all__ = ["Row", "QueryResult"]


class ErrorSource(Protocol):
    """What a result's owner (a View) offers: the exception a Python reduce function
    raised during the last call, to re-raise instead of the library's status."""

    _pending_error: Optional[BaseException]


def _dec(raw: Optional[bytes]) -> Optional[str]:
    return None if raw is None else raw.decode("utf-8", errors="surrogateescape")


def _load(raw: Optional[bytes]) -> Any:
    return None if raw is None else _deep_json.loads(raw.decode("utf-8", errors="surrogateescape"))


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


def read_rows(handle: int) -> List[Row]:
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

    def __init__(self, handle: int, owner: Optional[ErrorSource] = None,
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
        raise_pending(self._owner)
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


def raise_pending(owner: Optional[ErrorSource]) -> None:
    """Re-raises an exception a Python reduce callback raised during the last call."""
    if owner is None:
        return
    exc = owner._pending_error
    if exc is not None:
        owner._pending_error = None
        raise exc

