"""Mango queries (CouchDB's ``_find``) and json indexes: :meth:`Collection.find`,
:meth:`Collection.explain`, :meth:`Collection.create_index` and friends build on these."""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from ._lib import C
from ._util import call, call_json, cstr
from .query_result import QueryResult

Sort = Iterable[Union[str, Mapping[str, str]]]


def find_query(selector: Mapping[str, Any], *, sort: Optional[Sort] = None,
               fields: Optional[Iterable[str]] = None, limit: Optional[int] = None, skip: Optional[int] = None,
               bookmark: Optional[str] = None, use_index: Optional[Union[str, List[str]]] = None,
               **options: Any) -> bytes:
    """The JSON of a ``_find`` body. ``limit`` None: every match (CouchDB's default is 25)."""
    q: Dict[str, Any] = {"selector": selector, "limit": (1 << 62) if limit is None else limit}
    if sort is not None:
        q["sort"] = list(sort)
    if fields is not None:
        q["fields"] = list(fields)
    if skip is not None:
        q["skip"] = skip
    if bookmark is not None:
        q["bookmark"] = bookmark
    if use_index is not None:
        q["use_index"] = use_index
    q.update(options)
    return json.dumps(q).encode()


class FindResult(QueryResult):
    """The documents a find matched, read lazily a page at a time: iterate it for the
    documents (only the ``fields`` when given). Once read to the end, :attr:`bookmark`
    names the next page, :attr:`warning` CouchDB's warnings and :attr:`execution_stats`
    what the query examined."""

    def __next__(self) -> Dict[str, Any]:  # type: ignore[override]
        row = super().__next__()
        doc: Dict[str, Any] = row.doc or {}
        return doc

    def info(self) -> Dict[str, Any]:
        """``{"bookmark", "warning"?, "execution_stats"}``."""
        result: Dict[str, Any] = call_json(C.cbl_query_result_find_info, self._h())
        return result

    @property
    def bookmark(self) -> str:
        return str(self.info()["bookmark"])

    @property
    def warning(self) -> Optional[str]:
        w = self.info().get("warning")
        return None if w is None else str(w)

    @property
    def execution_stats(self) -> Dict[str, Any]:
        stats: Dict[str, Any] = self.info()["execution_stats"]
        return stats


def index_body(fields: Iterable[Union[str, Mapping[str, str]]], name: Optional[str], ddoc: Optional[str],
               partial_filter_selector: Optional[Mapping[str, Any]]) -> bytes:
    index: Dict[str, Any] = {"fields": list(fields)}
    if partial_filter_selector is not None:
        index["partial_filter_selector"] = partial_filter_selector
    body: Dict[str, Any] = {"index": index, "type": "json"}
    if name is not None:
        body["name"] = name
    if ddoc is not None:
        body["ddoc"] = ddoc
    return json.dumps(body).encode()


def delete_index(handle: int, ddoc: str, name: str) -> None:
    call(C.cbl_collection_delete_index, handle, cstr(ddoc, "ddoc"), cstr(name, "name"))
