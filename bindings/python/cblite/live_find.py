"""A live find: a Mango query kept up to date by the live queries' one mechanism
(LiveQuery), its callback given the documents found."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List

from ._lib import C
from ._util import call, call_handle
from .live_query import LiveQuery
from .mango import find_query

if TYPE_CHECKING:  # annotations only: it sits above this module (it starts live finds)
    from .collection import Collection

__all__ = ["LiveFind"]


class LiveFind(LiveQuery):
    """A running live find (:meth:`Collection.live_find`): its callback gets the list of
    documents found, first, then whenever it changes. Stopped as a :class:`LiveQuery`."""

    def __init__(self, collection: "Collection", callback: Callable[[List[Dict[str, Any]]], Any],
                 query: bytes) -> None:
        self._view = None
        self._start(collection.database, callback,
                    lambda cfunc: call_handle(C.cbl_collection_live_find, collection._h, query, cfunc, None),
                    lambda row: row.doc)

    def set_options(self, selector: Any = None, **options: Any) -> None:
        """Replaces the query (the arguments of :meth:`Collection.live_find`); it re-runs
        and calls back with the documents it finds."""
        call(C.cbl_live_query_set_options, self._h(), find_query(selector, **options))
