"""Library-level functions: version, storage versions, instance count, logging."""

from __future__ import annotations

import enum
import json
import sys
import threading
from typing import Any, Callable, Dict, Optional, Union

from ._lib import C, LOG_FN
from ._shutdown import LOG_CALLBACK
from ._util import CALLBACK_SCOPE, call, call_str

__all__ = ["LogDomain", "LogLevel", "set_log_level", "get_log_level", "set_log_callback",
           "version", "storage_versions", "instance_count", "status_name",
           "default_directory"]


class LogDomain(enum.IntEnum):
    """``cbl_log_domain``."""
    DATABASE = 0
    STORAGE = 1
    CHANGES = 2
    QUERY = 3
    REPLICATION = 4
    LISTENER = 5


class LogLevel(enum.IntEnum):
    """``cbl_log_level``."""
    DEBUG = 0
    VERBOSE = 1
    INFO = 2
    WARNING = 3
    ERROR = 4
    NONE = 5


def _domain(domain: Union[LogDomain, int, str]) -> int:
    if isinstance(domain, str):
        return LogDomain[domain.upper()]
    return int(domain)


def _level(level: Union[LogLevel, int, str]) -> int:
    if isinstance(level, str):
        return LogLevel[level.upper()]
    return int(level)


def set_log_level(domain: Union[LogDomain, int, str], level: Union[LogLevel, int, str]) -> None:
    """Sets the minimum level of a log domain. `domain`/`level` are :class:`LogDomain` /
    :class:`LogLevel` values, ints or names (``"database"``, ``"debug"``). Raises
    BadRequest for an unknown domain or level."""
    call(C.cbl_log_set_level, _domain(domain), _level(level))


def get_log_level(domain: Union[LogDomain, int, str]) -> Union[LogLevel, int]:
    """The current level of a domain (:class:`LogLevel`; NONE for an unknown domain)."""
    value: int = C.cbl_log_get_level(_domain(domain))
    try:
        return LogLevel(value)
    except ValueError:
        return value


class _InstalledCallback:
    """The Python log callback while it is installed (removed at exit)."""

    def __init__(self, fn: Callable[[LogDomain, LogLevel, str], object], cfunc: Any) -> None:
        self.fn = fn
        self.cfunc = cfunc      # the registered CFUNCTYPE object, kept alive while installed

    def _release_callbacks(self) -> None:
        if _installed is self:
            set_log_callback(None)


_log_lock = threading.Lock()
_installed: Optional[_InstalledCallback] = None


def set_log_callback(fn: Optional[Callable[[LogDomain, LogLevel, str], object]]) -> None:
    """Installs `fn(domain, level, message)` as the log callback, or with None removes it
    (messages then go to stderr). The callback may run on any thread, must not call
    set_log_callback itself, and exceptions it raises are printed and swallowed."""
    global _installed
    if fn is None:
        cfunc = LOG_FN()  # NULL
    else:
        def trampoline(_context: Any, domain: int, level: int, message: Optional[bytes]) -> None:
            with CALLBACK_SCOPE:
                try:
                    try:
                        d: Union[LogDomain, int] = LogDomain(domain)
                    except ValueError:
                        d = domain
                    try:
                        lv: Union[LogLevel, int] = LogLevel(level)
                    except ValueError:
                        lv = level
                    text = "" if message is None else message.decode("utf-8", "replace")
                    fn(d, lv, text)  # type: ignore[arg-type]
                except BaseException:
                    try:
                        import traceback
                        sys.stderr.write("cblite: exception in log callback:\n")
                        traceback.print_exc()
                    except BaseException:
                        pass
        cfunc = LOG_FN(trampoline)
    with _log_lock:
        # Returns when no call to the previous callback is running: then it can be freed.
        C.cbl_log_set_callback(cfunc, None)
        old, _installed = _installed, (None if fn is None else _InstalledCallback(fn, cfunc))
        if old is not None:
            LOG_CALLBACK.discard(old)
        if _installed is not None:
            LOG_CALLBACK.add(_installed)


def get_log_callback() -> Optional[Callable[[LogDomain, LogLevel, str], object]]:
    """The Python log callback currently installed, or None."""
    installed = _installed
    return None if installed is None else installed.fn


def version() -> str:
    """The library's version string, e.g. "0.1.0"."""
    raw = C.cbl_version()
    return "" if raw is None else raw.decode("utf-8", "replace")


def version_number() -> int:
    """The library's version as major * 10000 + minor * 100 + patch (e.g. 100 for 0.1.0)."""
    return int(C.cbl_version_number())


def storage_versions() -> Dict[str, Any]:
    """The SQLite / SQLCipher versions compiled into the library, e.g.
    ``{"sqlite": "3.46.1", "sqlcipher": "4.6.1 community"}``."""
    versions: Dict[str, Any] = json.loads(call_str(C.cbl_storage_versions))
    return versions


def instance_count() -> int:
    """Number of live library handles (databases, collections, listener tokens)."""
    return int(C.cbl_instance_count())


def status_name(status: int) -> str:
    """A short English name for a status code ("not found")."""
    raw = C.cbl_status_name(int(status))
    return "" if raw is None else raw.decode("utf-8", "replace")


def default_directory() -> str:
    """The default database directory: $CBLITE_DIR, else $XDG_DATA_HOME/cblite, else
    $HOME/.local/share/cblite."""
    return call_str(C.cbl_default_directory)
