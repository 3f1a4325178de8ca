"""cblite — Python bindings (ctypes) for libcblite, an embedded, syncable JSON document
database in the model of Couchbase Lite.

Quick tour::

    import cblite

    with cblite.Database("notes", "/tmp/data") as db:
        doc_id, rev = db.put({"title": "hello"})
        db.update(doc_id, lambda d: {**d, "title": "hello again"})
        with db.transaction():
            db.put({"n": 1}, "one")
            db.put({"n": 2}, "two")
        print(db["one"], len(db))

The library is found through $CBLITE_LIBRARY (a path), else a ``libcblite.so*`` next to
this package, else the system's library search path.
"""

# Module layers, one public type per module; a module imports only from layers below
# its own at run time (tests/test_layering.py checks it). A type of a higher layer that
# a signature names is imported under TYPE_CHECKING only.
#   0  errors, _shutdown (what must stop at exit), _deep_json (JSON of any depth)
#   1  _lib (every ctypes declaration)
#   2  _util
#   3  _documents, log, javascript, listeners (ListenerToken), server (Server), discovery (PeerBrowser),
#      blob_reader (BlobReader), blob_writer (BlobWriter), query_result (QueryResult),
#      transaction (Transaction), replicator (Replicator)
#   4  attachments (re-exports), live_query (LiveQuery), mango (FindResult),
#      fulltext (SearchResult), text_match (TextMatch)
#   5  views (View), live_find (LiveFind)
#   6  collection (Collection)
#   7  database (Database)
#   8  models (Model), aio
from ._lib import library_path, missing_functions
from .collection import Collection
from .database import Database
from .transaction import Transaction
from .server import Server
from .discovery import PeerBrowser, PeerEvent
from .replicator import ReplicationEvent, Replicator
from .attachments import BlobReader, BlobWriter
from .errors import (BadRequest, Busy, CBLiteError, Conflict, DatabaseDamaged, Forbidden,
                     InsufficientStorage, InternalError, NotAcceptable, NotFound, NotImplemented_,
                     PreconditionFailed, Unauthorized, error_for_status)
from .listeners import Change, ListenerToken, live_listener_count, remove_all_listeners
from . import aio, models, views
from .models import Model, ModelTypeError
from .views import LiveQuery, QueryResult, Row, View, code_version
from .text_match import TextKey, TextMatch
from .log import (LogDomain, LogLevel, default_directory, get_log_callback, get_log_level,
                  instance_count, set_log_callback, set_log_level, status_name,
                  storage_versions, version, version_number)
from .javascript import js_limits, set_js_limits
from .live_find import LiveFind

#: 501, as ``cblite.NotImplemented``. Left out of ``__all__``: ``from cblite import *``
#: must not replace the builtin ``NotImplemented``.
NotImplemented = NotImplemented_  # noqa: A001

__version__ = "0.1.0"

__all__ = [
    "Database", "Collection", "Transaction", "Server", "Replicator", "ReplicationEvent",
    "Change", "ListenerToken", "BlobReader", "BlobWriter", "View", "Row", "QueryResult",
    "LiveQuery", "code_version", "views", "models", "aio", "Model", "ModelTypeError",
    "CBLiteError", "BadRequest", "Unauthorized", "Forbidden", "NotFound", "NotAcceptable",
    "Conflict", "PreconditionFailed", "InternalError", "NotImplemented_",
    "Busy", "InsufficientStorage", "DatabaseDamaged", "error_for_status",
    "LogDomain", "LogLevel", "set_log_level", "get_log_level", "set_log_callback",
    "get_log_callback", "version", "version_number", "storage_versions", "instance_count", "status_name",
    "default_directory", "library_path", "missing_functions", "live_listener_count",
    "remove_all_listeners", "set_js_limits", "js_limits", "PeerBrowser", "PeerEvent", "LiveFind",
    "TextKey", "TextMatch",
]
