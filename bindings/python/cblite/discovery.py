"""Peer discovery: finding listeners on the local network with DNS-SD (through Avahi).

    # advertise a listener (its name, port, databases, TLS fingerprint):
    with cblite.Server(directory="/data", host="0.0.0.0", users={...},
                       advertise={"name": "Kitchen tablet"}) as server:
        print(server.advertisement)     # {"name": ..., "state": "established", ...}

    # find peers:
    with cblite.PeerBrowser() as browser:
        for event in browser.events(timeout=10):       # PeerEvent(kind, peer)
            if event.kind == "appeared":
                print(event.peer["name"], event.peer["url"], event.peer["databases"])

``aio.peer_events()`` is the same as an async iterator. Without the Avahi daemon (or its
client library) starting raises :class:`cblite.Busy` (503) with a message saying which.
See ``cbl_browser_start`` in include/cblite.h.

Rules kept here (as for replicators): the ctypes callback stays referenced for the
browser's life (for ever when it is stopped from inside its callback); an exception raised
by ``on_event`` is logged on the ``"cblite"`` logger, never propagated into C; every
browser still running is stopped at interpreter exit.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional

from ._lib import BROWSER_FN, C
from ._shutdown import BROWSERS, bury
from ._util import CALLBACK_SCOPE, call_handle, call_list, cstr, in_callback
from .errors import BadRequest

__all__ = ["PeerBrowser", "PeerEvent", "DEFAULT_SERVICE_TYPE"]

log = logging.getLogger("cblite")

#: CouchDB's protocol, the type cblite listeners advertise by default.
DEFAULT_SERVICE_TYPE = "_couchdb._tcp"

_END: Any = object()


class PeerEvent(NamedTuple):
    """``kind`` is "appeared", "updated", "disappeared" or "failed". ``peer`` is the peer's
    object ({"name", "type", "domain", "host", "port", "addresses", "url", "databases",
    "tls", "sha256"?, "txt"}; for "disappeared" only name, type and domain); for "failed"
    it is ``{"message": ...}`` (the daemon went away; nothing follows)."""
    kind: str
    peer: Dict[str, Any]


class PeerBrowser:
    """Browses for services of ``service_type`` until :meth:`stop` (or the end of a
    ``with`` block). ``on_event(PeerEvent)`` is called on the browser's thread; events are
    also queued for :meth:`events`."""

    def __init__(self, service_type: str = DEFAULT_SERVICE_TYPE,
                 on_event: Optional[Callable[[PeerEvent], Any]] = None) -> None:
        self._handle: Optional[int] = None
        self._lock = threading.Lock()
        self._queue: "queue.Queue[Any]" = queue.Queue()

        def trampoline(_context: Any, raw: Optional[bytes]) -> None:
            with CALLBACK_SCOPE:
                try:
                    o = json.loads((raw or b"{}").decode("utf-8", errors="surrogateescape"))
                    event = PeerEvent(o["event"], o.get("peer") or {"message": o.get("message", "")})
                    self._queue.put(event)
                except BaseException:
                    log.exception("cblite: a peer event could not be read: %r", raw)
                    return
                if on_event is not None:
                    try:
                        on_event(event)
                    except BaseException:   # never let anything unwind into C
                        log.exception("cblite: the peer browser's callback %r raised", on_event)

        self._cfunc = BROWSER_FN(trampoline)
        self._handle = call_handle(C.cbl_browser_start, cstr(service_type, "service_type"), self._cfunc, None)
        BROWSERS.add(self)

    @property
    def _h(self) -> int:
        if self._handle is None:
            raise BadRequest("the browser is stopped")
        return self._handle

    @property
    def is_running(self) -> bool:
        """True until stopped."""
        return self._handle is not None

    def peers(self) -> List[Dict[str, Any]]:
        """The peers seen now, by name."""
        return call_list(C.cbl_browser_peers, self._h)

    def events(self, timeout: Optional[float] = None) -> Iterator[PeerEvent]:
        """Yields the events as they arrive, from the first one. Ends when the browser is
        stopped (after the events already received) or, with `timeout`, when that many
        seconds have passed in all. Iterate from one thread."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            try:
                event = self._queue.get(timeout=left)
            except queue.Empty:
                return
            if event is _END:
                return
            yield event

    def __iter__(self) -> Iterator[PeerEvent]:
        return self.events()

    def stop(self) -> None:
        """Stops browsing and releases the handle; waits until no callback runs (at once
        from inside the callback). Idempotent. Ends :meth:`events`."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return
        BROWSERS.discard(self)
        C.cbl_browser_stop(handle)
        if in_callback():
            bury(self._cfunc)      # maybe its own callback, still on the stack
        self._queue.put(_END)

    def _release_callbacks(self) -> None:
        self.stop()

    def __enter__(self) -> "PeerBrowser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<cblite.PeerBrowser {'running' if self._handle else 'stopped'}>"
