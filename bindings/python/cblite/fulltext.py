"""Full-text search (SQLite FTS5 in the library): :meth:`Collection.create_text_index`,
:meth:`Collection.search` and friends build on these."""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Union

from ._lib import C
from ._util import call_json
from .errors import error_for_status
from .query_result import QueryResult


class SearchHit(NamedTuple):
    """One document a search found: its ID, its BM25 ``score`` (higher is better), the
    ``snippets`` of the fields that matched (``{"title": "a <b>coffee</b> …"}``), the
    document with ``include_docs``, and its sequence."""

    doc_id: str
    score: float
    snippets: Dict[str, str]
    doc: Optional[Dict[str, Any]]
    sequence: int


class SearchResult(QueryResult):
    """The hits of a search, best first: iterate it for :class:`SearchHit` values.
    :attr:`bookmark` continues after this page (pass it as ``bookmark=``)."""

    def __iter__(self) -> "SearchResult":
        return self

    def __next__(self) -> SearchHit:  # type: ignore[override]
        row = super().__next__()
        return SearchHit(str(row.doc_id), float(row.key), dict(row.value or {}), row.doc, row.sequence)

    def info(self) -> Dict[str, Any]:
        """``{"bookmark": str | None, "total_rows": hits in this page}``."""
        result: Dict[str, Any] = call_json(C.cbl_query_result_search_info, self._h())
        return result

    @property
    def bookmark(self) -> Optional[str]:
        b = self.info()["bookmark"]
        return None if b is None else str(b)


def index_definition(name: str, fields: Iterable[str], ddoc: Optional[str],
                     analyzer: Optional[Union[str, Mapping[str, Any]]], stemming: bool,
                     stop_words: Optional[Iterable[str]], fold_diacritics: bool,
                     partial_filter_selector: Optional[Mapping[str, Any]]) -> bytes:
    """The JSON definition cbl_collection_create_text_index takes."""
    body: Dict[str, Any] = {"name": name, "fields": list(fields)}
    if ddoc is not None:
        body["ddoc"] = ddoc
    if analyzer is not None:
        body["analyzer"] = analyzer if isinstance(analyzer, str) else dict(analyzer)
    else:
        body["analyzer"] = {"fold_diacritics": fold_diacritics, "stemming": stemming,
                            "stop_words": list(stop_words or [])}
    if partial_filter_selector is not None:
        body["partial_filter_selector"] = partial_filter_selector
    return json.dumps(body).encode()


def search_request(query: str, fields: Optional[Iterable[str]], ddoc: Optional[str],
                   selector: Optional[Mapping[str, Any]], limit: Optional[int], skip: int,
                   bookmark: Optional[str], include_docs: bool,
                   snippets: Union[bool, Mapping[str, Any]]) -> bytes:
    """The JSON request cbl_collection_search takes (``limit`` None: every hit)."""
    body: Dict[str, Any] = {"query": query, "limit": 2**31 - 1 if limit is None else limit, "skip": skip,
                            "include_docs": include_docs,
                            "snippets": snippets if isinstance(snippets, bool) else dict(snippets)}
    if fields is not None:
        body["fields"] = [fields] if isinstance(fields, str) else list(fields)
    if ddoc is not None:
        body["ddoc"] = ddoc
    if selector is not None:
        body["selector"] = selector
    if bookmark is not None:
        body["bookmark"] = bookmark
    return json.dumps(body).encode()


def only_index(indexes: List[Dict[str, Any]]) -> str:
    """The name of a collection's only full-text index (a search that names none)."""
    names = sorted({str(i["name"]) for i in indexes})
    if len(names) != 1:
        raise error_for_status(400, "name the full-text index to search: the collection has "
                               + (", ".join(names) if names else "none"))
    return names[0]
