"""The replicator: syncing a collection with a peer over CouchDB's replication protocol.

    with cblite.Server() as server:                       # peer A serves its database
        server.serve("notes", a)
        with b.replicate(server.url + "notes", direction="both") as r:
            r.wait(timeout=30)                            # a one-shot run stops when done
            print(r.status())  # {"activity": "stopped", "documents_pushed": ..., ...}

The peer is another cblite (its listener, :class:`cblite.Server`), Apache CouchDB 2.x/3.x,
PouchDB's server, or anything that speaks CouchDB's replication protocol. See
``cbl_replicator_start`` in include/cblite.h for how it works and the configuration's
keys; :meth:`cblite.Database.replicate` and :meth:`cblite.Collection.replicate` take them
as keyword arguments.

Rules kept here (as for listeners and live queries):

* the ctypes callback objects stay referenced for the replicator's life (and for ever
  when it is stopped from inside one of its own callbacks: the library may still call
  them once more);
* the JSON the library hands to a callback is copied and parsed inside the call;
* an exception raised by a Python callback never propagates into C: it is logged on the
  ``"cblite"`` logger and the replication goes on;
* every replicator still running is stopped at interpreter exit
  (``_shutdown.REPLICATORS``), and closing the
  :class:`~cblite.Database` it replicates stops it and releases its handle.
"""

from __future__ import annotations

import collections
import collections.abc
import json
import logging
import threading
import time
import urllib.parse
from ctypes import byref, c_int
from typing import (TYPE_CHECKING, Any, Callable, Deque, Dict, Iterator, List, Mapping, NamedTuple,
                    Optional, Tuple, Union)

from ._lib import C, DOCUMENT_FN, REPLICATOR_FUNCTIONS, STATUS_FN, cbl_error
from ._shutdown import REPLICATORS, bury
from ._util import CALLBACK_SCOPE, call_dict, call_handle, call_list, check, cstr, dumps, in_callback
from .errors import BadRequest, CBLiteError

if TYPE_CHECKING:  # annotations only: both sit above this module (they start replicators)
    from .collection import Collection
    from .database import Database

__all__ = ["Replicator", "ReplicationEvent", "STATUS_FN", "DOCUMENT_FN", "FUNCTIONS",
           "OPTIONS", "build_config", "live_replicator_count", "stop_all_replicators"]

log = logging.getLogger("cblite")

#: The "Replication" section of include/cblite.h (declared in ``_lib``).
FUNCTIONS = REPLICATOR_FUNCTIONS


# -- configuration ------------------------------------------------------------------------

_BOOL_OPTIONS = ("continuous", "create_target", "document_events")
_INT_OPTIONS = ("heartbeat_ms", "batch_size", "timeout_ms", "max_retries",
                "retry_initial_ms", "retry_max_ms")
_STR_OPTIONS = ("direction", "filter", "pull_filter", "remote_uuid")
_LIST_OPTIONS = ("doc_ids", "channels")
_OBJECT_OPTIONS = ("filter_params", "pull_filter_params", "headers", "tls")

#: The configuration keys of ``cbl_replicator_start`` besides ``url``, which
#: :meth:`Database.replicate` takes as keyword arguments of the same names.
OPTIONS: Tuple[str, ...] = (_STR_OPTIONS + _BOOL_OPTIONS + _INT_OPTIONS + _LIST_OPTIONS
                            + _OBJECT_OPTIONS + ("auth",))

Auth = Union[Mapping[str, Any], Tuple[str, str]]


def _check_option(key: str, value: Any) -> Any:
    """`value` as JSON for option `key`, raising TypeError for a value of the wrong type
    (whether a value of the right type is acceptable is the library's to say: it answers
    BadRequest, which is also a ValueError)."""
    if key in _BOOL_OPTIONS:
        if not isinstance(value, bool):
            raise TypeError(f"replicator option {key!r} must be a bool, "
                            f"not {type(value).__name__}")
        return value
    if key in _INT_OPTIONS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"replicator option {key!r} must be an int, "
                            f"not {type(value).__name__}")
        return value
    if key in _STR_OPTIONS:
        if not isinstance(value, str):
            raise TypeError(f"replicator option {key!r} must be a str, "
                            f"not {type(value).__name__}")
        return value
    if key in _LIST_OPTIONS:
        if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Iterable):
            raise TypeError(f"replicator option {key!r} must be a list of str, "
                            f"not {type(value).__name__}")
        items = list(value)
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"replicator option {key!r} must be a list of str; it "
                                f"holds a {type(item).__name__}")
        return items
    if key in _OBJECT_OPTIONS:
        if not isinstance(value, collections.abc.Mapping):
            raise TypeError(f"replicator option {key!r} must be a dict, "
                            f"not {type(value).__name__}")
        if key == "headers":
            for name, text in value.items():
                if not isinstance(name, str) or not isinstance(text, str):
                    raise TypeError("replicator option 'headers' maps str names to str values")
        return dict(value)
    if key == "auth":
        if isinstance(value, tuple):
            if len(value) != 2 or not all(isinstance(v, str) for v in value):
                raise TypeError("replicator option 'auth' as a tuple is (username, password)")
            return {"type": "basic", "username": value[0], "password": value[1]}
        if not isinstance(value, collections.abc.Mapping):
            raise TypeError("replicator option 'auth' must be a dict (or a (username, "
                            f"password) tuple), not {type(value).__name__}")
        return dict(value)
    raise TypeError(f"unknown replicator option {key!r}")


def build_config(url: str, **options: Any) -> Dict[str, Any]:
    """The JSON configuration of ``cbl_replicator_start`` for `url` and `options` (the
    keys of :data:`OPTIONS`; None means "the library's default" and is left out).

    Raises TypeError for an unknown option or a value of the wrong type, ValueError for
    a NUL character in `url`. Values are checked by the library when the replicator
    starts (BadRequest)."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    cstr(url, "url")
    config: Dict[str, Any] = {"url": url}
    for key, value in options.items():
        if key not in OPTIONS:
            raise TypeError(f"unknown replicator option {key!r}")
        if value is None:
            continue
        config[key] = _check_option(key, value)
    return config


def _redacted(url: str) -> str:
    """`url` without the password (for repr and logs)."""
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "<invalid url>"


# -- events ----------------------------------------------------------------------------------

class ReplicationEvent(NamedTuple):
    """One event of a replicator, as :meth:`Replicator.events` yields it.

    ``kind`` is ``"status"`` (``data``: the status dict, as :meth:`Replicator.status`
    returns it) or ``"documents"`` (``data``: a list of ``{"direction": "push"|"pull",
    "id", "rev"?, "deleted"?, "error": {"status", "message"}?}``)."""

    kind: str
    data: Any


class _EventQueue:
    """The events the library's callbacks deliver, in order, for :meth:`Replicator.events`
    (a bounded buffer: the oldest are dropped when nobody reads them), and the last
    status seen. Shared by the callbacks and the Replicator, never referring to the
    latter, so that an abandoned Replicator can be collected."""

    def __init__(self, capacity: int) -> None:
        self.cond = threading.Condition()
        self.items: Deque[ReplicationEvent] = collections.deque(maxlen=capacity)
        self.dropped = 0
        self.ended = False                       # no event will come any more
        self.last_status: Optional[Dict[str, Any]] = None

    def put(self, event: ReplicationEvent, final: bool = False) -> None:
        with self.cond:
            if len(self.items) == self.items.maxlen:
                self.dropped += 1
            self.items.append(event)
            if event.kind == "status":
                self.last_status = event.data
            if final:
                self.ended = True
            self.cond.notify_all()

    def end(self) -> None:
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def get(self, timeout: Optional[float]) -> Optional[ReplicationEvent]:
        """The next event; None when none will come; TimeoutError after `timeout` seconds
        without one."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self.cond:
            while not self.items and not self.ended:
                if deadline is None:
                    self.cond.wait(1.0)
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no replication event within the timeout")
                self.cond.wait(remaining)
            return self.items.popleft() if self.items else None


def _log_callback_error(what: str, fn: Any) -> None:
    try:
        log.exception("exception in cblite replicator %s %r", what, fn)
    except BaseException:
        pass


def _make_callbacks(events: _EventQueue, on_status: Optional[Callable[[Dict[str, Any]], Any]],
                    on_documents: Optional[Callable[[List[Dict[str, Any]]], Any]]
                    ) -> Tuple[Any, Any]:
    """The CFUNCTYPE objects given to cbl_replicator_start."""

    def status_trampoline(_context: Any, raw: Optional[bytes]) -> None:
        with CALLBACK_SCOPE:
            try:
                text = (raw or b"{}").decode("utf-8", errors="surrogateescape")
                status = json.loads(text)
                events.put(ReplicationEvent("status", status),
                           final=status.get("activity") == "stopped")
            except BaseException:
                _log_callback_error("status event", raw)
                return
            if on_status is not None:
                try:
                    on_status(json.loads(text))      # the caller's own copy
                except BaseException:  # never let anything unwind into C
                    _log_callback_error("status callback", on_status)

    def documents_trampoline(_context: Any, raw: Optional[bytes]) -> None:
        with CALLBACK_SCOPE:
            try:
                text = (raw or b"[]").decode("utf-8", errors="surrogateescape")
                events.put(ReplicationEvent("documents", json.loads(text)))
            except BaseException:
                _log_callback_error("document event", raw)
                return
            if on_documents is not None:
                try:
                    on_documents(json.loads(text))
                except BaseException:
                    _log_callback_error("documents callback", on_documents)

    return STATUS_FN(status_trampoline), DOCUMENT_FN(documents_trampoline)


# -- the replicator --------------------------------------------------------------------------

def _replicated_collection(target: Any) -> "Collection":
    """The collection a replicator is given: a Collection, or a Database's default one.
    Both classes sit above this module (they start replicators), so they are recognised
    by their members, not imported: a Database has a default collection, a Collection
    belongs to a database."""
    cls = type(target)
    if isinstance(getattr(cls, "default_collection", None), property):
        target = target.default_collection
        cls = type(target)
    if not (isinstance(getattr(cls, "database", None), property)
            and callable(getattr(cls, "replicate", None))):
        raise TypeError("a replicator replicates a cblite.Collection (or a Database's "
                        f"default collection), not {cls.__name__}")
    collection: "Collection" = target
    return collection


class Replicator:
    """A running replication of a collection with a peer's database.

    Usually made by :meth:`Database.replicate` or :meth:`Collection.replicate`; the
    constructor takes the collection (or a Database: its default collection) and the
    whole JSON configuration of ``cbl_replicator_start`` as a dict (or JSON text),
    passed as is: the library checks it (BadRequest for a malformed or unknown key).

    ``on_status(status)`` is called with the status dict whenever it changes, and
    ``on_documents(documents)`` with each batch of document events (failures always,
    successes with ``document_events=True``), both on the library's replication threads.
    They may call any method, :meth:`stop` included. An exception they raise is logged
    on the ``"cblite"`` logger; the replication goes on. The same events are also
    queued for :meth:`events`.

    A one-shot replication stops by itself when it has caught up (or failed: see the
    status's ``"error"``); a continuous one runs until :meth:`stop`, leaving a ``with``
    block, or closing the database. Call :meth:`stop` in any case to release the
    handle (closing the database does it too)."""

    #: How many events :meth:`events` keeps for a reader that is not reading (the oldest
    #: are dropped beyond that; the final status is always the newest).
    MAX_QUEUED_EVENTS = 10000

    def __init__(self, collection: Union["Collection", "Database"],
                 config: Union[Mapping[str, Any], str, bytes], *,
                 on_status: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 on_documents: Optional[Callable[[List[Dict[str, Any]]], Any]] = None) -> None:
        self._handle: Optional[int] = None
        self._cfuncs: Optional[Tuple[Any, Any]] = None
        collection = _replicated_collection(collection)
        for name, fn in (("on_status", on_status), ("on_documents", on_documents)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None")
        if isinstance(config, (str, bytes)):
            data = cstr(config, "config")
            try:  # the library judges it; this copy only serves .config and repr
                parsed = json.loads(data)
            except ValueError:
                parsed = None
            self._config: Dict[str, Any] = dict(parsed) if isinstance(parsed, dict) else {}
        elif isinstance(config, collections.abc.Mapping):
            self._config = dict(config)
            data = dumps(self._config)
        else:
            raise TypeError(f"config must be a dict or JSON text, not {type(config).__name__}")
        self._collection = collection
        self._db: "Database" = collection.database
        self._lock = threading.Lock()
        self._events = _EventQueue(self.MAX_QUEUED_EVENTS)
        self._cfuncs = _make_callbacks(self._events, on_status, on_documents)
        self._handle = call_handle(C.cbl_replicator_start, collection._h, data,
                                   self._cfuncs[0], self._cfuncs[1], None)
        REPLICATORS.add(self)
        replicators = getattr(self._db, "_replicators", None)
        if replicators is not None:
            replicators.add(self)
        if not self._db.is_open:  # closed meanwhile: its close may have missed us
            self.stop()

    # -- state -------------------------------------------------------------------------

    @property
    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise BadRequest("the replicator is stopped")
        return handle

    @property
    def collection(self) -> "Collection":
        """The local collection replicated."""
        return self._collection

    @property
    def database(self) -> "Database":
        """The local database replicated."""
        return self._db

    @property
    def config(self) -> Dict[str, Any]:
        """A copy of the configuration given to the library."""
        config: Dict[str, Any] = json.loads(json.dumps(self._config))
        return config

    @property
    def url(self) -> str:
        """The peer's database URL (as configured, credentials included)."""
        return str(self._config.get("url", ""))

    @property
    def is_running(self) -> bool:
        """False once the replication has stopped (by itself, by :meth:`stop`, or because
        the database was closed)."""
        if self._handle is None:
            return False
        last = self._events.last_status
        if last is not None and last.get("activity") == "stopped":
            return False
        try:
            return self.status().get("activity") != "stopped"
        except CBLiteError:
            return False

    def status(self) -> Dict[str, Any]:
        """The current status: ``{"activity": "connecting"|"busy"|"idle"|"offline"|
        "stopped", "completed", "total", "documents_pushed", "documents_pulled",
        "document_failures", "documents_to_retry", "error": {"status", "message"}?}``
        (``documents_to_retry``: see :meth:`failed_documents`; ``error.status`` 0: the
        network failed, no answer). After :meth:`stop`, the last status reported."""
        handle = self._handle
        if handle is not None:
            try:
                return call_dict(C.cbl_replicator_status, handle)
            except BadRequest:
                if self._handle is not None:
                    raise
        last = self._events.last_status
        if last is None:
            raise BadRequest("the replicator is stopped")
        copy: Dict[str, Any] = json.loads(json.dumps(last))
        return copy

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the replication has stopped (a one-shot one stops when done or
        failed), up to `timeout` seconds (None: as long as it takes). Returns True when
        it has stopped, False at the timeout. Not from the replicator's own callbacks
        (they would wait for themselves)."""
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0 or None")
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        while True:
            handle = self._handle
            if handle is None:
                return True
            # At most a second per call, so that a KeyboardInterrupt is seen meanwhile.
            if deadline is None:
                ms = 1000
            else:
                ms = max(0, min(1000, int((deadline - time.monotonic()) * 1000 + 0.999)))
            err = cbl_error()
            status = C.cbl_replicator_wait(handle, ms, byref(err))
            if status == 0:
                return True
            if status == 503:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                continue
            if status == 400 and self._handle is None:
                return True  # stopped (and released) by another thread meanwhile
            check(status, err)

    def pending_document_ids(self) -> List[str]:
        """The IDs of documents with local changes the push has not sent yet, in change
        order (the filter and doc_ids apply). Raises BadRequest when the replicator does
        not push, or is stopped."""
        return call_list(C.cbl_replicator_pending_documents, self._h)

    def is_document_pending(self, doc_id: str) -> bool:
        """True when `doc_id` has a local change the push has not sent yet. Raises as
        :meth:`pending_document_ids`; ValueError for a NUL in `doc_id`."""
        if not isinstance(doc_id, str):
            raise TypeError(f"doc_id must be a str, not {type(doc_id).__name__}")
        out = c_int(0)
        err = cbl_error()
        check(C.cbl_replicator_is_document_pending(self._h, cstr(doc_id, "doc_id"),
                                                   byref(out), byref(err)), err)
        return bool(out.value)

    def failed_documents(self) -> List[Dict[str, Any]]:
        """The revisions that failed to replicate and wait to be tried again by the next
        session or run of the same replication, as ``[{"direction", "id", "rev"}, ...]``
        (kept with the checkpoint; the status's ``documents_to_retry`` counts them).
        Raises BadRequest once the replicator is stopped."""
        return call_list(C.cbl_replicator_failed_documents, self._h)

    def clear_failed(self) -> None:
        """Forgets the failed revisions waiting to be retried, both directions, in the
        checkpoint too (a retry already under way still finishes). Raises BadRequest
        once the replicator is stopped."""
        err = cbl_error()
        check(C.cbl_replicator_clear_failed(self._h, byref(err)), err)

    def events(self, timeout: Optional[float] = None) -> Iterator[ReplicationEvent]:
        """Yields the replicator's events as they arrive — :class:`ReplicationEvent`
        ``(kind, data)`` with kind ``"status"`` or ``"documents"`` — from the first one
        (events not read yet are kept, up to :attr:`MAX_QUEUED_EVENTS`). Ends after the
        replication has stopped and every event has been yielded, the last being the
        status whose activity is ``"stopped"``. `timeout`: raise TimeoutError when no
        event comes for that many seconds (None: wait as long as it takes). Each event
        goes to one reader: iterate from one thread."""
        while True:
            event = self._events.get(timeout)
            if event is None:
                return
            yield event

    def stop(self) -> None:
        """Stops the replication, waits until its threads have ended (at once when called
        from one of its callbacks: it stops right after), and releases the handle.
        Idempotent; harmless after the replication has stopped by itself or its database
        was closed."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is None:
            return
        REPLICATORS.discard(self)
        replicators = getattr(self._db, "_replicators", None)
        if replicators is not None:
            replicators.discard(self)
        C.cbl_replicator_stop(handle)
        if in_callback():
            # Maybe one of this replicator's: the library goes on a little (the final
            # status arrives later, which ends events()).
            bury(self._cfuncs)
        else:
            # Every replication thread has ended: nothing more will be delivered.
            self._events.end()

    def _release_callbacks(self) -> None:
        self.stop()

    def _database_closed(self) -> None:
        """Called by Database.close: the library has stopped the replication already;
        release the handle."""
        try:
            self.stop()
        except Exception:
            pass

    def __enter__(self) -> "Replicator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        direction = self._config.get("direction", "both")
        mode = "continuous" if self._config.get("continuous") else "one-shot"
        if self._handle is None:
            state = "stopped"
        else:
            try:
                state = self.status().get("activity", "?")
            except CBLiteError:
                state = "?"
        return (f"<cblite.Replicator {direction} {mode} {_redacted(self.url)} "
                f"({state})>")


def live_replicator_count() -> int:
    """Replicators started through these bindings whose handle is not released yet."""
    return len(REPLICATORS)


def stop_all_replicators() -> None:
    """Stops every replicator (also run at interpreter exit, so that no replication
    thread calls into Python while the interpreter tears down)."""
    REPLICATORS.stop_all()
