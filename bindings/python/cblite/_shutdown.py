"""The one registry of what must stop before the interpreter exits.

Listener tokens, replicators, live queries, the log callback and the validators and
filters of open databases hold Python callbacks that library threads call. Each kind
has a :class:`LiveSet` here, and one exit handler empties them all in a fixed order, so
that no library thread calls into Python while the interpreter tears down.

A callback object the library may still call after it was unregistered (removed from
inside one of its own calls, or replaced while a call may be running) is kept for ever
by :func:`bury` (a few hundred bytes each).

Imports nothing from the package: every module may use it.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Any, List, MutableMapping, Protocol

__all__ = ["Stoppable", "LiveSet", "bury", "LOG_CALLBACK", "DATABASES", "LIVE_QUERIES",
           "REPLICATORS", "LISTENERS", "BROWSERS", "EXIT_ORDER"]


class Stoppable(Protocol):
    """What a registered object does at exit."""

    def _release_callbacks(self) -> None:
        """Makes the library call none of this object's Python callbacks any more
        (returns once no call of them is running)."""


class LiveSet:
    """The live objects of one kind. :attr:`lock` (reentrant) is also the lock under
    which their owners swap their handles, so that an object leaves the set when its
    handle goes."""

    def __init__(self, name: str, weak: bool = False) -> None:
        self.name = name
        self.lock = threading.RLock()
        # Weak for objects that are not stopped but only disarmed at exit (databases):
        # the registry must not keep them open.
        self._items: MutableMapping[int, Stoppable] = (
            weakref.WeakValueDictionary() if weak else {})

    def add(self, obj: Stoppable) -> None:
        with self.lock:
            self._items[id(obj)] = obj

    def discard(self, obj: Stoppable) -> None:
        with self.lock:
            self._items.pop(id(obj), None)

    def __len__(self) -> int:
        with self.lock:
            return len(self._items)

    def snapshot(self) -> List[Stoppable]:
        with self.lock:
            return list(self._items.values())

    def stop_all(self) -> None:
        """Releases every object's callbacks (an object that fails is skipped)."""
        for obj in self.snapshot():
            try:
                obj._release_callbacks()
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"<cblite LiveSet {self.name}: {len(self)}>"


LOG_CALLBACK = LiveSet("log callback")
DATABASES = LiveSet("databases (their validators and filters)", weak=True)
LIVE_QUERIES = LiveSet("live queries")
REPLICATORS = LiveSet("replicators")
LISTENERS = LiveSet("listeners")
BROWSERS = LiveSet("peer browsers")

#: The order the exit handler stops them in.
EXIT_ORDER = (LOG_CALLBACK, DATABASES, LIVE_QUERIES, REPLICATORS, LISTENERS, BROWSERS)

_graveyard: List[Any] = []


def bury(obj: Any) -> None:
    """Keeps `obj` (a callback object the library may still call) alive for ever."""
    _graveyard.append(obj)


def _stop_everything() -> None:
    for live in EXIT_ORDER:
        live.stop_all()


atexit.register(_stop_everything)
