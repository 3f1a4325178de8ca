"""The listener: serving databases over HTTP(S) with CouchDB's REST API.

    with cblite.Server(directory="/data", port=0, users={"alice": "secret"}) as server:
        print(server.url)          # http://127.0.0.1:<port>/
        server.serve("notes", db)  # an open Database, in addition to the directory's

Other peers (another cblite, CouchDB's replicator, PouchDB, curl, CouchDB client
libraries) can then read, write and replicate the databases it serves. See
``cbl_server_start`` in include/cblite.h for the configuration's keys.
"""

from __future__ import annotations

from ctypes import byref, c_uint16
from typing import Any, Dict, Mapping, Optional

from ._lib import C, cbl_error
from ._util import call, call_dict, call_handle, call_str, check, cstr, json_arg
from .errors import BadRequest, NotFound

__all__ = ["Server"]


class Server:
    """A running listener; stopped by :meth:`stop`, by leaving a ``with`` block, or
    when garbage-collected.

    The configuration is the JSON object of ``cbl_server_start``, given as ``config``
    and/or as keyword arguments (which win): ``host``, ``port`` (0, the default here:
    any free port), ``directory``, ``users`` ({name: password}), ``read_only``,
    ``allow_remote_without_auth``, ``tls`` ({"anonymous": True} or
    {"cert_pem_file": ..., "key_pem_file": ...}), ``limits``, ``advertise``
    ({"name": ..., "type"?: "_couchdb._tcp"}: published with DNS-SD while it runs, see
    :mod:`cblite.discovery`; raises :class:`cblite.Busy` when Avahi is not there).
    """

    def __init__(self, config: Optional[Mapping[str, Any]] = None, **options: Any) -> None:
        settings = dict(config or {})
        settings.update(options)
        settings.setdefault("port", 0)
        self._handle: Optional[int] = None
        self._served: Dict[str, Any] = {}          # keeps served Database objects alive while served
        self._handle = call_handle(C.cbl_server_start, json_arg(settings, "config"))

    @property
    def _h(self) -> int:
        if self._handle is None:
            raise BadRequest("the server is stopped")
        return self._handle

    @property
    def is_running(self) -> bool:
        """True until stopped."""
        return self._handle is not None

    @property
    def port(self) -> int:
        """The bound TCP port (the one the system chose for port 0)."""
        out = c_uint16()
        err = cbl_error()
        check(C.cbl_server_port(self._h, byref(out), byref(err)), err)
        return out.value

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:5984/``."""
        return call_str(C.cbl_server_url, self._h) or ""

    @property
    def tls_fingerprint(self) -> Optional[str]:
        """SHA-256 of the TLS certificate (64 lowercase hex digits), for clients that pin
        it; None when the server speaks plain HTTP."""
        try:
            return call_str(C.cbl_server_tls_fingerprint, self._h)
        except NotFound:
            return None

    @property
    def advertisement(self) -> Optional[Dict[str, Any]]:
        """The DNS-SD advertisement ({"name" (another one after a conflict on the
        network), "type", "port", "txt", "state": "registering" | "established" |
        "failed", "error"?}), or None when the server is not advertised."""
        try:
            return call_dict(C.cbl_server_advertisement, self._h)
        except NotFound:
            return None

    def serve(self, name: str, db: Any) -> None:
        """Serves the open :class:`~cblite.Database` ``db`` as ``name`` (None stops serving
        the handle given before under that name). Closing the database stops serving it."""
        handle = None if db is None else db._h
        call(C.cbl_server_serve, self._h, cstr(name, "name"), handle)
        if db is None:
            self._served.pop(name, None)
        else:
            self._served[name] = db

    def stop(self, timeout: float = 5.0) -> None:
        """Stops accepting connections, waits up to ``timeout`` seconds for requests in
        flight, closes connections and the databases it opened, and frees the port.
        Calling it again does nothing."""
        handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_server_stop(handle, int(max(0.0, timeout) * 1000))
        self._served.clear()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            self.stop(timeout=0)
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<cblite.Server {self.url if self._handle else 'stopped'}>"
