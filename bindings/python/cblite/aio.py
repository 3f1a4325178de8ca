"""asyncio: change listeners, live queries and replication events as async iterators.

    import asyncio, cblite
    from cblite import aio

    async def main(db: cblite.Database) -> None:
        async for changes in aio.changes(db):           # lists of cblite.Change
            print([c.doc_id for c in changes])

        view = db.view("by_type")
        view.set_map_reduce(lambda doc, emit: emit(doc.get("type")))
        async for rows in aio.live_query(view, reduce=False):   # lists of cblite.Row
            print(len(rows))

        async for event in aio.replication_events(db.replicate(url)):
            print(event.kind, event.data)

        async for event in aio.peer_events():          # cblite.PeerEvent, until break
            print(event.kind, event.peer["name"])

The library calls back on its own threads; each iterator hands what it receives to the
event loop it was started on (``call_soon_threadsafe``), so the loop never blocks.
Leaving the ``async for`` (``break``, an exception, cancellation) removes the listener or
stops the live query; closing the database ends the iteration.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, List, Optional, Union

from .collection import Collection
from .discovery import DEFAULT_SERVICE_TYPE, PeerBrowser, PeerEvent
from .database import Database
from .listeners import Change, ListenerToken
from .replicator import ReplicationEvent, Replicator
from .views import Row, View

__all__ = ["changes", "live_query", "replication_events", "peer_events"]

_END: Any = object()


async def _drain(queue: "asyncio.Queue[Any]", alive: Any) -> AsyncIterator[Any]:
    """Yields what arrives in `queue` until `_END`, or until `alive()` turns false while
    waiting (checked every half second: the database was closed)."""
    while True:
        try:
            item = await asyncio.wait_for(queue.get(), timeout=0.5)
        except asyncio.TimeoutError:
            if not alive():
                return
            continue
        if item is _END:
            return
        yield item


async def changes(target: Union[Database, Collection],
                  doc_id: Optional[str] = None) -> AsyncIterator[List[Change]]:
    """Yields each batch of changes committed to `target` (a Database: its default
    collection; a Collection), or to the document `doc_id` of it, from now on. Ends when
    the database is closed."""
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Any]" = asyncio.Queue()

    def deliver(batch: List[Change]) -> None:   # on a library thread
        loop.call_soon_threadsafe(queue.put_nowait, batch)

    coll = target.default_collection if isinstance(target, Database) else target
    token: ListenerToken
    if doc_id is not None:
        token = coll.add_document_listener(doc_id, deliver)
    else:
        token = coll.add_change_listener(deliver)
    try:
        async for batch in _drain(queue, lambda: token.active and coll.database.is_open):
            yield batch
    finally:
        token.remove()


async def live_query(view: View, **options: Any) -> AsyncIterator[List[Row]]:
    """Yields the rows of a live query on `view` (options as :meth:`View.live_query`):
    the first result, then each changed one. Stops the live query when the iteration
    ends; ends when the database is closed."""
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Any]" = asyncio.Queue()

    def deliver(rows: List[Row]) -> None:      # on the live query's thread
        loop.call_soon_threadsafe(queue.put_nowait, rows)

    live = view.live_query(deliver, **options)
    try:
        async for rows in _drain(queue, lambda: live.running):
            yield rows
    finally:
        live.stop()


async def replication_events(replicator: Replicator) -> AsyncIterator[ReplicationEvent]:
    """Yields the replicator's events (:meth:`Replicator.events`) without blocking the
    loop; ends after the final ``"stopped"`` status. Leaving the iteration early does not
    stop the replicator."""
    loop = asyncio.get_running_loop()
    while True:
        # The blocking read runs on a worker thread, a second at a time, so that a
        # cancelled iteration leaves no thread waiting for long.
        event = await loop.run_in_executor(None, _next_event, replicator)
        if event is _END:
            return
        if event is not None:
            yield event


def _next_event(replicator: Replicator) -> Any:
    """The next event, None when none came within a second, _END when none will come."""
    try:
        event = replicator._events.get(1.0)
    except TimeoutError:
        return None
    return _END if event is None else event


async def peer_events(service_type: str = DEFAULT_SERVICE_TYPE) -> AsyncIterator[PeerEvent]:
    """Yields the peers of `service_type` as they appear, change and disappear on the
    local network (a :class:`cblite.PeerBrowser`'s events), until the iteration is left or
    browsing fails (the "failed" event is the last). Raises :class:`cblite.Busy` at once
    without the Avahi daemon."""
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Any]" = asyncio.Queue()

    def deliver(event: PeerEvent) -> None:         # on the browser's thread
        loop.call_soon_threadsafe(queue.put_nowait, event)
        if event.kind == "failed":
            loop.call_soon_threadsafe(queue.put_nowait, _END)

    browser = PeerBrowser(service_type, on_event=deliver)
    try:
        async for event in _drain(queue, lambda: browser.is_running):
            yield event
    finally:
        browser.stop()
