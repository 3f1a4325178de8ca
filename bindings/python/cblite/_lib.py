"""Low-level ctypes declarations for libcblite (see include/cblite.h).

Everything here mirrors the C header one to one. The pythonic API lives in the other
modules of the package; use this module directly only for things the high-level API
deliberately hides (raw bytes, NULL arguments, stale handles), e.g. in tests.

Conventions kept here:

* The library is loaded with :class:`ctypes.CDLL` (the GIL is released during calls, so
  callbacks arriving on library threads can run), never ``PyDLL``.
* Every ``char*`` the library hands back through an out-parameter is declared as
  ``c_void_p``, read with :func:`ctypes.string_at` and released with ``cbl_free``
  (see :func:`take_string`).
* Handles are plain ``c_void_p`` values.
* Every ctypes declaration of the package is here: the structures, the callback types
  and every function's signature (:data:`FUNCTIONS`, one entry per function of the
  header); the other modules only call them through :data:`C`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import subprocess
from typing import Any, Callable, Dict, Iterator
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int,
                    c_int32, c_int64, c_size_t, c_uint16, c_uint32, c_uint64, c_void_p)

from .errors import error_for_status

__all__ = [
    "lib", "C", "library_path", "cbl_error", "cbl_change", "missing_functions",
    "cbl_query_row",
    "LOG_FN", "TRANSACTION_FN", "UPDATE_FN", "VALIDATE_FN", "CHANGE_FN", "FILTER_FN", "REVISION_FN",
    "MAP_FN", "REDUCE_FN", "LIVE_FN", "STATUS_FN", "DOCUMENT_FN", "BROWSER_FN",
    "take_string", "new_error", "enc", "FUNCTIONS",
    "ATTACHMENT_FUNCTIONS", "VIEW_FUNCTIONS", "REPLICATOR_FUNCTIONS",
    "CBL_GET_DELETED", "CBL_GET_CONFLICTS", "CBL_GET_REVISIONS", "CBL_GET_LOCAL_SEQ",
    "CBL_PUT_ALLOW_CONFLICT", "CBL_ERROR_MESSAGE_SIZE", "CBL_MAX_JSON_DEPTH",
]

CBL_ERROR_MESSAGE_SIZE = 512
CBL_MAX_JSON_DEPTH = 1000

CBL_GET_DELETED = 0x01
CBL_GET_CONFLICTS = 0x02
CBL_GET_REVISIONS = 0x04
CBL_GET_LOCAL_SEQ = 0x08

CBL_PUT_ALLOW_CONFLICT = 0x01


class cbl_error(Structure):
    """``struct cbl_error``: filled by fallible calls when non-NULL."""

    _fields_ = [
        ("code", c_int32),
        ("detail", c_int32),
        ("message", c_char * CBL_ERROR_MESSAGE_SIZE),
    ]


class cbl_change(Structure):
    """``struct cbl_change``: one change delivered to a listener (valid during the call)."""

    _fields_ = [
        ("doc_id", c_char_p),
        ("rev_id", c_char_p),
        ("sequence", c_uint64),
        ("deleted", c_int32),
        ("external", c_int32),
    ]


class cbl_query_row(Structure):
    """``struct cbl_query_row`` (strings valid until the next call reading rows)."""

    _fields_ = [
        ("key_json", c_char_p),
        ("value_json", c_char_p),
        ("doc_id", c_char_p),
        ("source_doc_id", c_char_p),
        ("doc_json", c_char_p),
        ("error", c_char_p),
        ("sequence", c_uint64),
    ]


# Callback types, one per ``cbl_*_fn`` of the header. Enums are C ints.
LOG_FN = CFUNCTYPE(None, c_void_p, c_int, c_int, c_char_p)
TRANSACTION_FN = CFUNCTYPE(c_int, c_void_p)
UPDATE_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, POINTER(c_void_p))
VALIDATE_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p, c_void_p, c_size_t)
CHANGE_FN = CFUNCTYPE(None, c_void_p, POINTER(cbl_change), c_size_t)
FILTER_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_char_p)
REVISION_FN = CFUNCTYPE(None, c_void_p, c_char_p)
MAP_FN = CFUNCTYPE(None, c_void_p, c_char_p, c_void_p)
REDUCE_FN = CFUNCTYPE(c_void_p, c_void_p, c_char_p, c_char_p, c_int)
LIVE_FN = CFUNCTYPE(None, c_void_p, c_void_p)
#: ``cbl_replicator_status_fn``: (context, status_json).
STATUS_FN = CFUNCTYPE(None, c_void_p, c_char_p)
#: ``cbl_replicator_document_fn``: (context, documents_json).
DOCUMENT_FN = CFUNCTYPE(None, c_void_p, c_char_p)
#: ``cbl_browser_fn``: (context, event_json).
BROWSER_FN = CFUNCTYPE(None, c_void_p, c_char_p)

_ERR = POINTER(cbl_error)
_OUT_STR = POINTER(c_void_p)      # char**  (read as void* so that we can cbl_free it)
_OUT_HANDLE = POINTER(c_void_p)   # cbl_xxx**
_H = c_void_p                     # opaque handle
_S = c_char_p                     # const char* argument
_STATUS = c_int32

# name: (restype, [argtypes]) — one entry for every function of include/cblite.h.
FUNCTIONS: Dict[str, Any] = {
    # Library
    "cbl_version": (c_char_p, []),
    "cbl_version_number": (c_int32, []),
    "cbl_storage_versions": (_STATUS, [_OUT_STR, _ERR]),
    "cbl_free": (None, [c_void_p]),
    "cbl_strdup": (c_void_p, [_S]),
    "cbl_instance_count": (c_int64, []),
    "cbl_status_name": (c_char_p, [_STATUS]),
    # Logging
    "cbl_log_set_callback": (None, [LOG_FN, c_void_p]),
    "cbl_log_set_level": (_STATUS, [c_int, c_int, _ERR]),
    "cbl_log_get_level": (c_int, [c_int]),
    # JavaScript
    "cbl_js_set_limits": (_STATUS, [c_uint32, c_uint64, _ERR]),
    "cbl_js_get_limits": (_STATUS, [POINTER(c_uint32), POINTER(c_uint64), _ERR]),
    # Databases
    "cbl_default_directory": (_STATUS, [_OUT_STR, _ERR]),
    "cbl_db_open": (_STATUS, [_S, _S, _S, _OUT_HANDLE, _ERR]),
    "cbl_db_close": (_STATUS, [_H, _ERR]),
    "cbl_db_delete": (_STATUS, [_H, _ERR]),
    "cbl_db_delete_named": (_STATUS, [_S, _S, _ERR]),
    "cbl_db_exists_v2": (_STATUS, [_S, _S, POINTER(c_int), _ERR]),
    "cbl_db_exists": (c_int, [_S, _S]),            # deprecated: cbl_db_exists_v2
    "cbl_db_list": (_STATUS, [_S, _OUT_STR, _ERR]),
    "cbl_db_copy": (_STATUS, [_S, _S, _S, _ERR]),
    "cbl_db_name": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_db_path": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_db_count": (_STATUS, [_H, POINTER(c_uint64), _ERR]),
    "cbl_db_last_sequence": (_STATUS, [_H, POINTER(c_uint64), _ERR]),
    "cbl_db_max_rev_tree_depth": (_STATUS, [_H, POINTER(c_uint32), _ERR]),
    "cbl_db_set_max_rev_tree_depth": (_STATUS, [_H, c_uint32, _ERR]),
    "cbl_db_security": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_db_set_security": (_STATUS, [_H, _S, _ERR]),
    "cbl_db_begin": (_STATUS, [_H, _ERR]),
    "cbl_db_commit": (_STATUS, [_H, _ERR]),
    "cbl_db_abort": (_STATUS, [_H, _ERR]),
    "cbl_db_in_transaction": (_STATUS, [_H, TRANSACTION_FN, c_void_p, _ERR]),
    "cbl_db_change_encryption_key": (_STATUS, [_H, _S, _ERR]),
    "cbl_db_is_encrypted_v2": (_STATUS, [_H, POINTER(c_int), _ERR]),
    "cbl_db_is_encrypted": (c_int, [_H]),          # deprecated: cbl_db_is_encrypted_v2
    "cbl_db_compact": (_STATUS, [_H, _ERR]),
    "cbl_db_optimize": (_STATUS, [_H, _ERR]),
    "cbl_db_integrity_check": (_STATUS, [_H, _OUT_STR, _ERR]),
    # Scopes and collections
    "cbl_db_default_collection": (_STATUS, [_H, _OUT_HANDLE, _ERR]),
    "cbl_db_collection": (_STATUS, [_H, _S, _S, _OUT_HANDLE, _ERR]),
    "cbl_db_create_collection": (_STATUS, [_H, _S, _S, _OUT_HANDLE, _ERR]),
    "cbl_db_delete_collection": (_STATUS, [_H, _S, _S, _ERR]),
    "cbl_db_scope_names": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_db_collection_names": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_collection_release": (None, [_H]),
    "cbl_collection_name": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_collection_scope": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_collection_count": (_STATUS, [_H, POINTER(c_uint64), _ERR]),
    "cbl_collection_last_sequence": (_STATUS, [_H, POINTER(c_uint64), _ERR]),
    # Documents and revisions
    "cbl_doc_get": (_STATUS, [_H, _S, c_uint32, _OUT_STR, _ERR]),
    "cbl_doc_get_revision": (_STATUS, [_H, _S, _S, c_uint32, _OUT_STR, _ERR]),
    "cbl_doc_put": (_STATUS, [_H, _S, _S, _S, c_uint32, _OUT_STR, _OUT_STR, _ERR]),
    "cbl_doc_delete": (_STATUS, [_H, _S, _S, _OUT_STR, _ERR]),
    "cbl_doc_update": (_STATUS, [_H, _S, UPDATE_FN, c_void_p, _OUT_STR, _ERR]),
    "cbl_doc_purge": (_STATUS, [_H, _S, _ERR]),
    "cbl_doc_conflicts": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_doc_history": (_STATUS, [_H, _S, _S, _OUT_STR, _ERR]),
    "cbl_doc_revision_tree": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_doc_put_existing": (_STATUS, [_H, _S, _S, _S, _ERR]),
    "cbl_doc_set_expiration": (_STATUS, [_H, _S, c_int64, _ERR]),
    "cbl_doc_get_expiration": (_STATUS, [_H, _S, POINTER(c_int64), _ERR]),
    "cbl_collection_set_validator": (_STATUS, [_H, _S, VALIDATE_FN, c_void_p, _ERR]),
    # Local documents
    "cbl_local_get": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_local_put": (_STATUS, [_H, _S, _S, _S, _OUT_STR, _ERR]),
    "cbl_local_delete": (_STATUS, [_H, _S, _S, _ERR]),
    "cbl_local_list": (_STATUS, [_H, c_int, _OUT_STR, _ERR]),
    # Replication surface
    "cbl_collection_revs_diff": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_revs_diff": (_STATUS, [_H, _S, _OUT_STR, _ERR]),            # deprecated: cbl_collection_revs_diff
    "cbl_collection_docs_put_existing": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_docs_put_existing": (_STATUS, [_H, _S, _OUT_STR, _ERR]),            # deprecated: cbl_collection_docs_put_existing
    "cbl_collection_docs_save": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_docs_save": (_STATUS, [_H, _S, _OUT_STR, _ERR]),            # deprecated: cbl_collection_docs_save
    "cbl_doc_open_revs": (_STATUS, [_H, _S, _S, _S, _OUT_STR, _ERR]),
    "cbl_collection_docs_bulk_get": (_STATUS, [_H, _S, _S, _OUT_STR, _ERR]),
    "cbl_docs_bulk_get": (_STATUS, [_H, _S, _S, _OUT_STR, _ERR]),            # deprecated: cbl_collection_docs_bulk_get
    "cbl_doc_purge_revisions": (_STATUS, [_H, _S, _S, _OUT_STR, _ERR]),
    "cbl_collection_changes_wait": (_STATUS, [_H, c_uint64, c_int32, POINTER(c_int), _ERR]),
    "cbl_changes_wait": (_STATUS, [_H, c_uint64, c_int32, POINTER(c_int), _ERR]),            # deprecated: cbl_collection_changes_wait
    "cbl_db_set_filter": (_STATUS, [_H, _S, FILTER_FN, c_void_p, _ERR]),
    "cbl_db_uuid": (_STATUS, [_H, _OUT_STR, _ERR]),
    # Listener (declared one to one; no pythonic wrapper yet)
    "cbl_server_start": (_STATUS, [_S, _OUT_HANDLE, _ERR]),
    "cbl_server_serve": (_STATUS, [_H, _S, _H, _ERR]),
    "cbl_server_port": (_STATUS, [_H, POINTER(c_uint16), _ERR]),
    "cbl_server_url": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_server_tls_fingerprint": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_server_stop": (None, [_H, c_int32]),
    "cbl_server_advertisement": (_STATUS, [_H, _OUT_STR, _ERR]),
    # Discovery
    "cbl_browser_start": (_STATUS, [_S, BROWSER_FN, c_void_p, _OUT_HANDLE, _ERR]),
    "cbl_browser_peers": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_browser_stop": (None, [_H]),
    # Changes
    "cbl_collection_changes": (_STATUS, [_H, c_uint64, _S, _OUT_STR, _ERR]),
    "cbl_collection_salvage": (_STATUS, [_H, REVISION_FN, c_void_p, _OUT_STR, _ERR]),
    "cbl_collection_add_change_listener": (_STATUS, [_H, CHANGE_FN, c_void_p, _OUT_HANDLE, _ERR]),
    "cbl_collection_add_document_listener": (_STATUS, [_H, _S, CHANGE_FN, c_void_p, _OUT_HANDLE, _ERR]),
    "cbl_db_add_change_listener": (_STATUS, [_H, CHANGE_FN, c_void_p, _OUT_HANDLE, _ERR]),
    "cbl_listener_token_remove": (None, [_H]),
    "cbl_listener_remove": (None, [_H]),            # deprecated: cbl_listener_token_remove
    "cbl_db_buffer_notifications": (_STATUS, [_H, c_int, _ERR]),
    "cbl_db_send_notifications": (_STATUS, [_H, _ERR]),
    "cbl_db_wait_notifications": (_STATUS, [_H, c_uint32, _ERR]),
}

#: The "Attachments" section of include/cblite.h.
ATTACHMENT_FUNCTIONS: Dict[str, Any] = {
    "cbl_blob_writer_create": (_STATUS, [_H, _OUT_HANDLE, _ERR]),
    "cbl_blob_writer_write": (_STATUS, [_H, c_void_p, c_size_t, _ERR]),
    "cbl_blob_writer_finish": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_blob_writer_cancel": (None, [_H]),
    "cbl_db_blob_put": (_STATUS, [_H, c_void_p, c_size_t, _OUT_STR, _ERR]),
    "cbl_db_blob_import_file": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_db_blob_length": (_STATUS, [_H, _S, POINTER(c_uint64), _ERR]),
    "cbl_doc_set_attachment": (_STATUS, [_H, _S, _S, _S, _S, _S, _OUT_STR, _ERR]),
    "cbl_doc_remove_attachment": (_STATUS, [_H, _S, _S, _S, _OUT_STR, _ERR]),
    "cbl_doc_attachment_names": (_STATUS, [_H, _S, _OUT_STR, _ERR]),
    "cbl_doc_get_attachment": (_STATUS, [_H, _S, _S, POINTER(c_void_p), POINTER(c_size_t), _ERR]),
    "cbl_doc_save_attachment_to_file": (_STATUS, [_H, _S, _S, _S, _ERR]),
    "cbl_doc_open_attachment": (_STATUS, [_H, _S, _S, _OUT_HANDLE, _ERR]),
    "cbl_blob_reader_read": (_STATUS, [_H, c_void_p, c_size_t, POINTER(c_size_t), _ERR]),
    "cbl_blob_reader_seek": (_STATUS, [_H, c_uint64, _ERR]),
    "cbl_blob_reader_length": (_STATUS, [_H, POINTER(c_uint64), _ERR]),
    "cbl_blob_reader_close": (None, [_H]),
}

#: The "Views and queries" section of include/cblite.h.
VIEW_FUNCTIONS: Dict[str, Any] = {
    "cbl_emitter_emit": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "cbl_emit": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),            # deprecated: cbl_emitter_emit
    "cbl_emitter_emit_text": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "cbl_collection_view": (c_int, [c_void_p, c_char_p, _OUT_HANDLE, _ERR]),
    "cbl_view_set_map_reduce": (c_int, [c_void_p, MAP_FN, REDUCE_FN, c_char_p, c_char_p,
                                        c_void_p, _ERR]),
    "cbl_view_update": (c_int, [c_void_p, _ERR]),
    "cbl_view_info": (c_int, [c_void_p, _OUT_STR, _ERR]),
    "cbl_view_delete": (c_int, [c_void_p, _ERR]),
    "cbl_view_set_text_analyzer": (c_int, [c_void_p, c_char_p, _ERR]),
    "cbl_view_release": (None, [c_void_p]),
    "cbl_collection_view_names": (c_int, [c_void_p, _OUT_STR, _ERR]),
    "cbl_view_query_json": (c_int, [c_void_p, c_char_p, _OUT_STR, _ERR]),
    "cbl_view_query": (c_int, [c_void_p, c_char_p, _OUT_HANDLE, _ERR]),
    "cbl_query_result_next": (c_int, [c_void_p, POINTER(cbl_query_row), POINTER(c_int), _ERR]),
    "cbl_query_result_next_rows": (c_int, [c_void_p, POINTER(cbl_query_row), c_size_t,
                                           POINTER(c_size_t), _ERR]),
    "cbl_query_result_is_stale": (c_int, [c_void_p, POINTER(c_int), _ERR]),
    "cbl_query_result_json": (c_int, [c_void_p, _OUT_STR, _ERR]),
    "cbl_query_result_release": (None, [c_void_p]),
    "cbl_collection_all_docs": (c_int, [c_void_p, c_char_p, _OUT_STR, _ERR]),
    "cbl_collection_all_docs_query": (c_int, [c_void_p, c_char_p, _OUT_HANDLE, _ERR]),
    "cbl_live_query_start": (c_int, [c_void_p, c_char_p, LIVE_FN, c_void_p, _OUT_HANDLE, _ERR]),
    "cbl_live_query_set_options": (c_int, [c_void_p, c_char_p, _ERR]),
    "cbl_live_query_wait_idle": (c_int, [c_void_p, _ERR]),
    "cbl_live_query_stop": (None, [c_void_p]),
    "cbl_collection_find": (c_int, [c_void_p, c_char_p, _OUT_HANDLE, _ERR]),
    "cbl_collection_live_find": (c_int, [c_void_p, c_char_p, LIVE_FN, c_void_p, _OUT_HANDLE, _ERR]),
    "cbl_query_result_find_info": (c_int, [c_void_p, _OUT_STR, _ERR]),
    "cbl_collection_explain": (c_int, [c_void_p, c_char_p, _OUT_STR, _ERR]),
    "cbl_collection_create_index": (c_int, [c_void_p, c_char_p, _OUT_STR, _ERR]),
    "cbl_collection_delete_index": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "cbl_collection_indexes": (c_int, [c_void_p, _OUT_STR, _ERR]),
    "cbl_collection_create_text_index": (c_int, [c_void_p, c_char_p, _OUT_STR, _ERR]),
    "cbl_collection_delete_text_index": (c_int, [c_void_p, c_char_p, c_char_p, _ERR]),
    "cbl_collection_text_indexes": (c_int, [c_void_p, _OUT_STR, _ERR]),
    "cbl_collection_search": (c_int, [c_void_p, c_char_p, c_char_p, _OUT_HANDLE, _ERR]),
    "cbl_query_result_search_info": (c_int, [c_void_p, _OUT_STR, _ERR]),
}

#: The "Replication" section of include/cblite.h.
REPLICATOR_FUNCTIONS: Dict[str, Any] = {
    "cbl_replicator_start": (_STATUS, [_H, _S, STATUS_FN, DOCUMENT_FN, c_void_p, _OUT_HANDLE,
                                       _ERR]),
    "cbl_replicator_status": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_replicator_wait": (_STATUS, [_H, c_int32, _ERR]),
    "cbl_replicator_pending_documents": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_replicator_is_document_pending": (_STATUS, [_H, _S, POINTER(c_int), _ERR]),
    "cbl_replicator_failed_documents": (_STATUS, [_H, _OUT_STR, _ERR]),
    "cbl_replicator_clear_failed": (_STATUS, [_H, _ERR]),
    "cbl_replicator_stop": (None, [_H]),
}


def _bundled() -> "list[str]":
    """The ``libcblite.so*`` files shipped inside the package (a wheel), soname first."""
    here = os.path.dirname(os.path.abspath(__file__))
    local = glob.glob(os.path.join(here, "libcblite.so*"))
    order = {"libcblite.so.1": 0, "libcblite.so": 1}
    return sorted(local, key=lambda p: (order.get(os.path.basename(p), 2), p))


def _pkg_config_candidates() -> "list[str]":
    """The library in the libdir pkg-config reports for ``cblite`` (an installed build)."""
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "cblite"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    libdir = out.stdout.strip()
    if out.returncode != 0 or not libdir:
        return []
    return [os.path.join(libdir, name) for name in ("libcblite.so.1", "libcblite.so")]


def _candidates() -> "Iterator[str]":
    """Where the library is looked for, in order: the copy inside the package (a wheel's),
    $CBLITE_LIBRARY, pkg-config's libdir, then the system's search path. A wheel's copy
    comes first so that an installed wheel always runs with the library it was built
    with; a source checkout has none and uses $CBLITE_LIBRARY."""
    yield from _bundled()
    env = os.environ.get("CBLITE_LIBRARY")
    if env:
        yield env
    yield from _pkg_config_candidates()
    found = ctypes.util.find_library("cblite")
    if found:
        yield found
    yield "libcblite.so.1"


def _load() -> "tuple[ctypes.CDLL, str]":
    errors = []
    for candidate in _candidates():
        try:
            return ctypes.CDLL(candidate), candidate
        except OSError as exc:  # try the next candidate
            errors.append(f"{candidate}: {exc}")
    raise OSError(
        "cblite: cannot load libcblite (set CBLITE_LIBRARY to its path); tried:\n  "
        + "\n  ".join(errors))


lib, library_path = _load()

#: Names of header functions the loaded library does not export (should be empty).
missing_functions: list[str] = []


class _Functions:
    """Namespace of the declared C functions (``C.cbl_db_open(...)``)."""

    def __getattr__(self, name: str) -> Any:
        # Only reached for a function never declared; typed Any for the checkers.
        raise AttributeError(f"cblite: {name} is not declared")


#: The declared functions. A function the library lacks is replaced by a stub that raises
#: :class:`cblite.NotImplemented_` (status 501) so that the rest of the package still works.
C = _Functions()


def _missing_stub(name: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise error_for_status(501, f"{name} is not exported by {library_path}")
    stub.__name__ = name
    return stub


def declare(functions: Dict[str, Any]) -> None:
    """Gives each function of `functions` ({name: (restype, argtypes)}) its ctypes
    signature on `C` and records it in FUNCTIONS; a function the loaded library lacks
    becomes a stub raising a 501 (an older library than the bindings)."""
    for name, (restype, argtypes) in functions.items():
        FUNCTIONS[name] = (restype, argtypes)
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name not in missing_functions:
                missing_functions.append(name)
            setattr(C, name, _missing_stub(name))
            continue
        fn.restype = restype
        fn.argtypes = argtypes
        setattr(C, name, fn)


declare(dict(FUNCTIONS))
declare(ATTACHMENT_FUNCTIONS)
declare(VIEW_FUNCTIONS)
declare(REPLICATOR_FUNCTIONS)


def new_error() -> cbl_error:
    """A zeroed ``cbl_error`` to pass by reference."""
    return cbl_error()


def take_string(ptr: c_void_p | int | None) -> str | None:
    """Reads a library-owned ``char*`` as str and releases it with ``cbl_free``."""
    value = ptr.value if isinstance(ptr, c_void_p) else ptr
    if not value:
        return None
    try:
        return ctypes.string_at(value).decode("utf-8", errors="surrogateescape")
    finally:
        lib.cbl_free(value)


def enc(value: "str | bytes | os.PathLike[str] | os.PathLike[bytes] | None",
        what: str = "a string argument") -> "bytes | None":
    """Encodes a str argument for a ``const char*`` parameter as UTF-8 (None stays NULL,
    bytes pass through). Raises ValueError when it holds a NUL character, as ``sqlite3``
    and ``os`` do: C would silently cut the string there, so the library would act on
    another document, attachment or name than the one given."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        data = value.encode("utf-8", errors="surrogateescape")
    elif isinstance(value, bytes):
        data = value
    else:
        raise TypeError(f"{what}: expected str, got {type(value).__name__}")
    if b"\0" in data:
        raise ValueError(f"{what} must not contain NUL characters")
    return data
