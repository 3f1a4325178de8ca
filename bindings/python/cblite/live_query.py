"""Live queries: a view query (or a Mango find: live_find.LiveFind) re-run, and its rows
(documents) delivered, whenever its result changes."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ._lib import C, LIVE_FN
from ._shutdown import LIVE_QUERIES, bury
from ._util import CALLBACK_SCOPE, call, call_handle, in_callback, query_options
from .errors import error_for_status
from .query_result import Row, read_rows

if TYPE_CHECKING:  # annotations only: they sit above this module (they start live queries)
    from .collection import Collection
    from .database import Database
    from .views import View

__all__ = ["LiveQuery", "live_query_count", "stop_all_live_queries"]

log = logging.getLogger("cblite")


class LiveQuery:
    """A running live query (:meth:`View.live_query`). :meth:`stop` (or leaving the
    ``with`` block, or closing the database) stops it and returns once no callback runs
    any more."""

    def __init__(self, view: "View", callback: Callable[[List[Any]], Any],
                 options: Dict[str, Any], convert: Optional[Callable[[Row], Any]] = None) -> None:
        self._view: Optional["View"] = view   # keeps the map/reduce trampolines alive
        self._start(view.collection.database, callback,
                    lambda cfunc: call_handle(C.cbl_live_query_start, view._h, query_options(options), cfunc, None),
                    convert)

    def _start(self, db: "Database", callback: Callable[[List[Any]], Any],
               start: Callable[[Any], Optional[int]], convert: Optional[Callable[[Row], Any]] = None) -> None:
        """Starts it; ``convert`` makes what the callback gets of each row (the row itself
        when None)."""
        self._callback = callback
        self._db: Optional["Database"] = db

        def trampoline(_ctx: Any, result: int) -> None:
            with CALLBACK_SCOPE:
                try:
                    rows = read_rows(result)
                    callback([convert(r) for r in rows] if convert else rows)
                except BaseException:
                    try:
                        log.exception("exception in cblite live query callback %r", callback)
                    except BaseException:
                        pass

        self._cfunc: Any = LIVE_FN(trampoline)
        self._handle: Optional[int] = start(self._cfunc)
        LIVE_QUERIES.add(self)
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
        with LIVE_QUERIES.lock:
            handle, self._handle = self._handle, None
            LIVE_QUERIES.discard(self)
        if handle is None:
            return
        C.cbl_live_query_stop(handle)
        if in_callback():
            bury(self._cfunc)  # maybe stopped from inside its own call
        db, self._db = self._db, None
        if db is not None:
            db._live_queries.discard(self)

    def _release_callbacks(self) -> None:
        self.stop()

    def __enter__(self) -> "LiveQuery":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def live_query_count() -> int:
    """Live queries started through these bindings and not stopped."""
    return len(LIVE_QUERIES)


def stop_all_live_queries() -> None:
    """Stops every live query (also run at interpreter exit)."""
    LIVE_QUERIES.stop_all()
