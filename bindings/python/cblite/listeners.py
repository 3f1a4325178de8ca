"""Change listeners: Python callables registered with the library.

Rules kept here:

* every CFUNCTYPE object stays referenced while its listener is registered;
* the ``cbl_change`` strings are copied inside the callback (they are only valid
  during the call);
* an exception raised by a Python callback never propagates into C: it is logged on
  the ``"cblite"`` logger;
* every live listener is removed at interpreter exit (``_shutdown.LISTENERS``), which
  waits for in-flight callbacks, so a callback can never run while the interpreter
  tears down.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, NamedTuple, Optional

from ._lib import C, CHANGE_FN
from ._shutdown import LISTENERS, bury
from ._util import CALLBACK_SCOPE, in_callback

__all__ = ["Change", "ListenerToken", "live_listener_count"]

log = logging.getLogger("cblite")

class Change(NamedTuple):
    """One change delivered to a listener."""

    doc_id: str
    #: the document's current revision after the change ("" when purged)
    rev_id: str
    sequence: int
    #: True when the current revision is a tombstone, or the document was purged
    deleted: bool
    #: True when the revision was inserted with put_existing (replication)
    external: bool


def _decode(raw: Optional[bytes]) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="surrogateescape")


def _make_trampoline(callback: Callable[[List[Change]], object], what: str) -> Any:
    def trampoline(_context: Any, changes: Any, count: int) -> None:
        with CALLBACK_SCOPE:
            try:
                batch = []
                for i in range(count):
                    c = changes[i]
                    batch.append(Change(_decode(c.doc_id), _decode(c.rev_id), int(c.sequence),
                                        bool(c.deleted), bool(c.external)))
                callback(batch)
            except BaseException:  # never let anything unwind into C
                try:
                    log.exception("exception in cblite %s %r", what, callback)
                except BaseException:
                    pass
    return CHANGE_FN(trampoline)


class ListenerToken:
    """A registered listener. Call :meth:`remove` (or use it as a context manager) to
    unregister it. Removing twice is harmless; removing from inside the listener's own
    callback works."""

    def __init__(self, owner: Any, callback: Callable[[List[Change]], Any],
                 description: str) -> None:
        self._owner = owner           # the Database: keeps it alive while registered
        self._callback = callback
        self._description = description
        self._cfunc = _make_trampoline(callback, description)
        self._handle: Optional[int] = None

    def _register(self, register_fn: Callable[[Any], int]) -> "ListenerToken":
        handle = register_fn(self._cfunc)
        with LISTENERS.lock:
            self._handle = handle
            LISTENERS.add(self)
        self._owner._tokens.add(self)
        return self

    @property
    def active(self) -> bool:
        """True until the listener is removed."""
        return self._handle is not None

    @property
    def callback(self) -> Callable[[List[Change]], Any]:
        """The registered callable."""
        return self._callback

    def remove(self) -> None:
        """Unregisters the listener. Returns once no call of it is running (unless called
        from inside that call). Idempotent."""
        with LISTENERS.lock:
            handle, self._handle = self._handle, None
            LISTENERS.discard(self)
        if handle is None:
            return
        C.cbl_listener_token_remove(handle)
        if in_callback():
            bury(self._cfunc)  # removed from inside its own call: it is still running
        self._cfunc = None
        owner, self._owner = self._owner, None
        if owner is not None:
            owner._tokens.discard(self)

    def _release_callbacks(self) -> None:
        self.remove()

    def __enter__(self) -> "ListenerToken":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "active" if self.active else "removed"
        return f"<cblite.ListenerToken {self._description} {state}>"


def live_listener_count() -> int:
    """Number of listeners registered through these bindings and not yet removed."""
    return len(LISTENERS)


def remove_all_listeners() -> None:
    """Removes every live listener (also run automatically at interpreter exit)."""
    LISTENERS.stop_all()
