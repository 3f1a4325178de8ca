"""Transactions: :class:`Transaction`, the context manager of ``Database.transaction()``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ._lib import C
from ._util import call
from .errors import CBLiteError, NotAcceptable

if TYPE_CHECKING:  # annotations only: Database sits above this module (it opens transactions)
    from .database import Database

__all__ = ["Transaction"]


class Transaction:
    """Context manager returned by :meth:`Database.transaction`.

    Commits when the block ends normally, aborts when it raises. Blocks nest: only the
    outermost commit writes, and an abort anywhere rolls back the whole nesting (an
    enclosing block that then ends normally raises NotAcceptable)."""

    def __init__(self, db: "Database"):
        self._db = db

    def __enter__(self) -> "Database":
        db = self._db
        state = db._txn_state()
        call(C.cbl_db_begin, db._h)
        if state.depth == 0:
            state.aborted = False
        state.depth += 1
        return db

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        db = self._db
        state = db._txn_state()
        state.depth -= 1
        if state.aborted:
            if state.depth == 0:
                state.aborted = False
            if exc_type is None:
                raise NotAcceptable("the transaction was aborted by a nested block")
            return
        handle = db._handle
        if exc_type is None:
            try:
                call(C.cbl_db_commit, handle)
            except CBLiteError:
                if state.depth == 0:
                    _abort_quietly(handle)
                else:
                    state.aborted = True
                raise
        else:
            _abort_quietly(handle)
            if state.depth > 0:
                state.aborted = True


def _abort_quietly(handle: Optional[int]) -> None:
    if handle:
        C.cbl_db_abort(handle, None)
