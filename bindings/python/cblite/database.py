"""Databases: :class:`Database`, an open database and its default collection's shortcuts.

Also re-exports :class:`~cblite.collection.Collection` and
:class:`~cblite.transaction.Transaction`, which lived here before (``cblite.database.X``
keeps working)."""

from __future__ import annotations

import ctypes
import json
import logging
import os
import threading
import weakref
from ctypes import byref, c_void_p
from typing import (Any, BinaryIO, Callable, Dict, Iterable, Iterator, List, Mapping,
                    Optional, Set, Tuple, TypeVar, Union, overload)

from . import _deep_json
from ._documents import MISSING
from ._documents import Body as Body, BulkGetRequests as BulkGetRequests, Doc as Doc
from ._documents import Docs as Docs, Expiration as Expiration
from ._lib import C, FILTER_FN, TRANSACTION_FN, VALIDATE_FN, cbl_error, enc, take_string
from ._shutdown import DATABASES, bury
from ._util import (CALLBACK_SCOPE, call, call_handle, call_list, call_str, call_u32,
                    call_u64, check, cstr, in_callback)
from .blob_reader import BlobReader
from .blob_writer import BlobWriter, Data, data_pointer
from .collection import Collection
from .errors import BadRequest, CBLiteError
from .listeners import Change, ListenerToken
from .live_query import LiveQuery
from .query_result import QueryResult
from .replicator import Replicator
from .transaction import Transaction
from .views import View

__all__ = ["Database", "Collection", "Transaction"]

log = logging.getLogger("cblite")

_T = TypeVar("_T")
#: An encryption key: a password, 32 raw key bytes, or {"password"} / {"raw_hex"}.
EncryptionKey = Union[str, bytes, bytearray, Mapping[str, str]]

# Filters are registered per database file (every handle of it sees them): which
# Database object registered each (bundle path, name) last, so that closing one object
# removes only the filters it still owns. Guarded by _filter_lock.
_filter_lock = threading.Lock()
_filter_owners: Dict[Any, Any] = {}


def _key_object(key: EncryptionKey) -> Dict[str, Any]:
    """An encryption key as the library's JSON object.

    str: a password (stretched by SQLCipher's PBKDF2); bytes of length 32: a raw AES-256
    key; dict: passed as is ({"password": ...} or {"raw_hex": ...})."""
    password = key.get("password") if isinstance(key, Mapping) else key
    if isinstance(password, str) and "\0" in password:
        # the key derivation below the JSON takes a C string: it would cut it there
        raise ValueError("an encryption password must not contain NUL characters")
    if isinstance(key, Mapping):
        return dict(key)
    if isinstance(key, str):
        return {"password": key}
    if isinstance(key, (bytes, bytearray)):
        if len(key) != 32:
            raise ValueError("a raw encryption key is 32 bytes")
        return {"raw_hex": bytes(key).hex()}
    raise TypeError("encryption_key must be a str (password), 32 bytes (raw key) or a dict")


class Database:
    """An open database: the folder ``<directory>/<name>.cblite2``.

    ``Database(name, directory=None, create=True, busy_timeout_ms=None,
    encryption_key=None)`` opens it, creating it unless ``create`` is False (then a
    missing database raises NotFound). ``encryption_key`` opens or creates an encrypted
    database: a str password, 32 raw key bytes, or ``{"password": ...}`` /
    ``{"raw_hex": ...}``; a missing or wrong key raises Unauthorized. ``read_only=True``
    writes nothing (every write raises Forbidden; never creates). A file that is not a
    database, is damaged, or is empty in an existing bundle raises DatabaseDamaged.
    ``directory`` None means :func:`default_directory`. Usable as a context manager,
    which closes it. Methods such as :meth:`get`, :meth:`put`, ``db[id]`` address the
    default collection.

    Closing the database also removes the listeners and validators registered through
    it and releases its Collection objects.
    """

    def __init__(self, name: str, directory: Optional[str] = None, create: bool = True,
                 busy_timeout_ms: Optional[int] = None,
                 encryption_key: Optional[EncryptionKey] = None,
                 read_only: bool = False) -> None:
        self._handle: Optional[int] = None
        self._closing = False
        self._lock = threading.RLock()
        self._tokens: Set[Any] = set()
        self._collections: "weakref.WeakSet[Collection]" = weakref.WeakSet()
        self._validators: Dict[Any, Any] = {}
        self._filters: Dict[Any, Any] = {}          # name -> (owner key, FILTER_FN object)
        self._replicators: "Set[Replicator]" = set()  # running (replicator.py)
        self._live_queries: "Set[LiveQuery]" = set()  # running live queries (live_query.py)
        # One model object per document for this handle (models.py).
        self._models: "weakref.WeakValueDictionary[Tuple[str, str], Any]" = \
            weakref.WeakValueDictionary()
        self._default: Optional[Collection] = None
        self._txn = threading.local()
        options: Dict[Any, Any] = {}
        if not create:
            options["create"] = False
        if busy_timeout_ms is not None:
            options["busy_timeout_ms"] = int(busy_timeout_ms)
        if encryption_key is not None:
            options["encryption_key"] = _key_object(encryption_key)
        if read_only:
            options["read_only"] = True
        opts = json.dumps(options).encode() if options else None
        self._handle = call_handle(C.cbl_db_open, enc(name, "name"), enc(directory, "directory"), opts)
        DATABASES.add(self)

    # -- handle management -------------------------------------------------------------

    @property
    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise BadRequest("the database is closed")
        return handle

    @property
    def is_open(self) -> bool:
        """False once closed or deleted."""
        return self._handle is not None

    def _txn_state(self) -> Any:
        state = self._txn
        if not hasattr(state, "depth"):
            state.depth = 0
            state.aborted = False
        return state

    def _begin_closing(self) -> int:
        with self._lock:
            handle = self._handle
            if handle is None or self._closing:
                return 0
            self._closing = True
            return handle

    def close(self) -> None:
        """Closes the handle (idempotent). Raises NotAcceptable while this handle has a
        transaction open (the database then stays open). Listeners and validators
        registered through this object are removed, its Collection objects released."""
        handle = self._begin_closing()
        if not handle:
            return
        # No Python lock is held during the C call: callbacks may run meanwhile.
        try:
            if self._txn_state().depth == 0:
                self._remove_validators()
                self._remove_filters(handle)
            call(C.cbl_db_close, handle)
        except BaseException:
            self._closing = False
            raise
        self._handle = None
        self._cleanup()

    def delete(self) -> None:
        """Closes the handle and deletes the database's files. Raises Busy when another
        handle in this process still has it open, NotAcceptable in a transaction."""
        handle = self._begin_closing()
        if not handle:
            raise BadRequest("the database is closed")
        err = cbl_error()
        try:
            if self._txn_state().depth == 0:
                self._remove_validators()
                self._remove_filters(handle)
            status = C.cbl_db_delete(handle, byref(err))
            # cbl_db_delete's contract (include/cblite.h): 406 and 503 are found before
            # anything is done and leave the handle open; on success and on 500 (a file
            # could not be removed, after the close) the handle is released.
            released = status in (0, 500)
        finally:
            self._closing = False
        if released:
            self._handle = None
            self._cleanup()
        check(status, err)

    def _remove_validators(self, only: Optional["Collection"] = None) -> None:
        for key, (collection, cfunc) in list(self._validators.items()):
            if only is not None and collection is not only:
                continue
            vname = key[1]
            self._validators.pop(key, None)
            removed = False
            try:
                handle = collection._handle
                if handle is not None:
                    removed = C.cbl_collection_set_validator(
                        handle, enc(vname, "vname"), VALIDATE_FN(), None, None) == 0
            except Exception:
                pass
            if not removed:
                bury(cfunc)  # may still be registered: never free it

    def _remove_filters(self, handle: Optional[int] = None) -> None:
        """Unregisters the filters this object registered and still owns (the library
        waits for their running calls); a filter that cannot be removed keeps its
        callback object alive forever."""
        handle = handle or self._handle
        for name, (key, cfunc) in list(self._filters.items()):
            self._filters.pop(name, None)
            with _filter_lock:
                owned = _filter_owners.get(key) is cfunc
                if owned:
                    del _filter_owners[key]
            if not owned:
                continue  # replaced through another Database object: not ours to remove
            removed = False
            try:
                if handle:
                    removed = C.cbl_db_set_filter(handle, cstr(name), FILTER_FN(), None,
                                                  None) == 0
            except Exception:
                pass
            if not removed or in_callback():
                bury(cfunc)

    def _release_callbacks(self) -> None:
        """At exit: removes the validators and filters registered through this object
        (the database stays open)."""
        try:
            self._remove_validators()
        finally:
            self._remove_filters()

    def _cleanup(self) -> None:
        DATABASES.discard(self)
        # The library stopped this database's replicators when it closed: release them.
        for replicator in list(self._replicators):
            replicator._database_closed()
        self._replicators.clear()
        # A live query's thread would go on watching a closed database: stop it.
        for live in list(self._live_queries):
            try:
                live.stop()
            except Exception:
                pass
        self._live_queries.clear()
        for token in list(self._tokens):
            try:
                token.remove()
            except Exception:
                pass
        self._tokens.clear()
        for collection in list(self._collections):
            collection.release()
        self._default = None

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._handle is not None and not self._tokens:
                self.close()
        except BaseException:
            pass

    def __repr__(self) -> str:
        if self._handle is None:
            return "<cblite.Database (closed)>"
        try:
            return f"<cblite.Database {self.name!r} at {self.path!r}>"
        except CBLiteError:
            return "<cblite.Database>"

    # -- static helpers ----------------------------------------------------------------

    @staticmethod
    def exists(name: str, directory: Optional[str] = None, *, strict: bool = False) -> bool:
        """True when database `name` exists in `directory` (None: the default
        directory), False when not — also when `directory` does not exist. Only the
        file is looked for: an encrypted database counts without its key.

        A name the library rejects (see :class:`Database`) gives False, and so does
        ``directory=None`` when there is no default directory: such a database cannot
        exist. With ``strict=True`` both raise BadRequest instead, so that a mistyped
        name is not taken for a missing database (``cbl_db_exists_v2``)."""
        found = ctypes.c_int(0)
        err = cbl_error()
        status = C.cbl_db_exists_v2(enc(name, "name"), enc(directory, "directory"), byref(found), byref(err))
        if status == 400 and not strict:
            return False
        check(status, err)
        return bool(found.value)

    @staticmethod
    def list(directory: Optional[str] = None) -> List[str]:
        """Sorted names of the databases in `directory`."""
        return call_list(C.cbl_db_list, enc(directory, "directory"))

    @staticmethod
    def delete_named(name: str, directory: Optional[str] = None) -> None:
        """Deletes a database that is not open in this process (NotFound if absent, Busy
        if open)."""
        call(C.cbl_db_delete_named, enc(name, "name"), enc(directory, "directory"))

    @staticmethod
    def copy(source_path: str, name: str, directory: Optional[str] = None) -> None:
        """Installs a prebuilt database: copies the ``.cblite2`` folder `source_path`
        into `directory` as `name` (PreconditionFailed if it exists already)."""
        call(C.cbl_db_copy, enc(source_path, "source_path"), enc(name, "name"), enc(directory, "directory"))

    @staticmethod
    def default_directory() -> str:
        """The default database directory."""
        return call_str(C.cbl_default_directory)

    # -- properties ----------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The database's name."""
        return call_str(C.cbl_db_name, self._h)

    @property
    def path(self) -> str:
        """The path of the database's bundle folder."""
        return call_str(C.cbl_db_path, self._h)

    @property
    def count(self) -> int:
        """Number of undeleted documents in the default collection."""
        return call_u64(C.cbl_db_count, self._h)

    @property
    def last_sequence(self) -> int:
        """Last sequence of the default collection."""
        return call_u64(C.cbl_db_last_sequence, self._h)

    @property
    def max_rev_tree_depth(self) -> int:
        """How many revisions of each branch are kept (default 20; stored in the file)."""
        return call_u32(C.cbl_db_max_rev_tree_depth, self._h)

    @max_rev_tree_depth.setter
    def max_rev_tree_depth(self, depth: int) -> None:
        call(C.cbl_db_set_max_rev_tree_depth, self._h, int(depth))

    @property
    def security(self) -> Optional[Dict[str, Any]]:
        """The database's ``_security`` object (CouchDB's ``{"admins": {"names", "roles"},
        "members": {...}}``, which the listener enforces), or None when none was ever set."""
        value: Optional[Dict[str, Any]] = json.loads(call_str(C.cbl_db_security, self._h))
        return value

    @security.setter
    def security(self, value: Mapping[str, Any]) -> None:
        call(C.cbl_db_set_security, self._h, cstr(json.dumps(value)))

    # -- collections -------------------------------------------------------------------

    @property
    def default_collection(self) -> "Collection":
        """The default collection (``_default._default``)."""
        with self._lock:
            if self._default is None or self._default._handle is None:
                self._default = Collection(self, call_handle(C.cbl_db_default_collection,
                                                             self._h))
            return self._default

    def collection(self, name: str, scope: Optional[str] = None) -> "Collection":
        """Opens an existing collection (NotFound when absent)."""
        return Collection(self, call_handle(C.cbl_db_collection, self._h, enc(scope, "scope"),
                                            enc(name, "name")))

    def create_collection(self, name: str, scope: Optional[str] = None) -> "Collection":
        """Opens a collection, creating it (and its scope) when absent."""
        return Collection(self, call_handle(C.cbl_db_create_collection, self._h,
                                            enc(scope, "scope"), enc(name, "name")))

    def delete_collection(self, name: str, scope: Optional[str] = None) -> None:
        """Deletes a collection and all its documents."""
        call(C.cbl_db_delete_collection, self._h, enc(scope, "scope"), enc(name, "name"))

    def scope_names(self) -> List[str]:
        """Sorted names of the scopes that hold a collection."""
        return call_list(C.cbl_db_scope_names, self._h)

    def collection_names(self, scope: Optional[str] = None) -> List[str]:
        """Sorted names of the collections of a scope (default scope when None)."""
        return call_list(C.cbl_db_collection_names, self._h, enc(scope, "scope"))

    # -- transactions ------------------------------------------------------------------

    def transaction(self) -> Transaction:
        """``with db.transaction():`` — commits at the end of the block, aborts if it
        raises. May be nested."""
        return Transaction(self)

    def begin(self) -> None:
        """Begins a transaction on this thread (prefer :meth:`transaction`)."""
        call(C.cbl_db_begin, self._h)
        self._txn_state().depth += 1

    def commit(self) -> None:
        """Commits the transaction begun with :meth:`begin` (only the outermost of
        nested begins writes)."""
        call(C.cbl_db_commit, self._h)
        state = self._txn_state()
        state.depth = max(0, state.depth - 1)

    def abort(self) -> None:
        """Rolls back the transaction begun with :meth:`begin` (the whole nesting)."""
        call(C.cbl_db_abort, self._h)
        state = self._txn_state()
        state.depth = 0
        state.aborted = False

    def in_transaction(self, fn: Callable[[], Any]) -> bool:
        """Runs ``fn()`` inside a transaction through ``cbl_db_in_transaction``. It
        commits unless fn returns False (abort) or raises (abort, then re-raised).
        Returns True when committed, False when fn asked to abort."""
        box: Dict[Any, Any] = {}

        def body(_context: Any) -> int:
            with CALLBACK_SCOPE:
                try:
                    result = fn()
                    box["result"] = result
                    return 0 if result is False else 1
                except BaseException as exc:  # re-raised after the C call
                    box["exc"] = exc
                    return 0

        cfunc = TRANSACTION_FN(body)
        err = cbl_error()
        status = C.cbl_db_in_transaction(self._h, cfunc, None, byref(err))
        if "exc" in box:
            raise box["exc"]
        if status == 409 and box.get("result", None) is False:
            return False
        check(status, err)
        return True

    # -- notifications -----------------------------------------------------------------

    def add_change_listener(self, fn: Callable[[List[Change]], Any]) -> ListenerToken:
        """Calls ``fn(changes)`` (a list of :class:`Change`) after every committed change
        of the default collection, through any handle of this database in this process."""
        h = self._h
        token = ListenerToken(self, fn, "database change listener")
        return token._register(lambda cfunc: call_handle(C.cbl_db_add_change_listener, h,
                                                         cfunc, None))

    def buffer_notifications(self, enabled: bool = True) -> None:
        """When enabled, changes are queued until :meth:`send_notifications`."""
        call(C.cbl_db_buffer_notifications, self._h, 1 if enabled else 0)

    def send_notifications(self) -> None:
        """Delivers the buffered notifications on this thread."""
        call(C.cbl_db_send_notifications, self._h)

    def wait_notifications(self, timeout_ms: int = 10000) -> None:
        """Returns once every committed change has been delivered; Busy after timeout."""
        call(C.cbl_db_wait_notifications, self._h, int(timeout_ms))

    # -- replication -----------------------------------------------------------------

    @property
    def uuid(self) -> str:
        """The database's stable identity (made at creation, kept in the file): the same
        through every handle and after reopening; another database has another."""
        return call_str(C.cbl_db_uuid, self._h)

    def set_filter(self, name: str,
                   fn: Optional[Callable[[Dict[str, Any], Dict[str, Any]], Any]]) -> None:
        """Registers the changes filter `name` (None removes it), for use as
        ``changes(filter=name, filter_params={...})``.

        ``fn(doc, params)`` receives the changed document's current revision (a dict with
        ``_id``, ``_rev`` and ``_deleted`` for a tombstone) and the caller's
        ``filter_params`` (``{}`` when none), and returns a true value when the change
        passes. An exception raised by fn counts as "does not pass" (it is logged on the
        ``cblite`` logger). It runs on the thread reading the feed.

        Filters belong to the database file: every handle of it in this process sees
        them. Replacing or removing a filter waits for its running calls. Closing this
        Database removes the filters registered through it (unless another Database
        object has registered the same name since). Raises BadRequest for an empty name,
        one over 255 bytes or with control characters; ValueError for a NUL in it."""
        h = self._h
        cname = cstr(name, "filter name")
        key = (self.path, name)
        if fn is None:
            call(C.cbl_db_set_filter, h, cname, FILTER_FN(), None)
            with _filter_lock:
                old = _filter_owners.pop(key, None)
            self._filters.pop(name, None)
            if old is not None and in_callback():
                bury(old)  # may be the very call that removed it
            return
        if not callable(fn):
            raise TypeError("a filter must be callable (or None to remove it)")

        def trampoline(_context: Any, doc_json: bytes, params_json: Optional[bytes]) -> int:
            with CALLBACK_SCOPE:
                try:
                    doc = _deep_json.loads(doc_json.decode("utf-8", errors="surrogateescape"))
                    params = _deep_json.loads(params_json) if params_json else {}
                    return 1 if fn(doc, params) else 0
                except BaseException:  # never let anything unwind into C
                    try:
                        log.exception("exception in cblite changes filter %r", name)
                    except BaseException:
                        pass
                    return 0

        cfunc = FILTER_FN(trampoline)
        call(C.cbl_db_set_filter, h, cname, cfunc, None)
        with _filter_lock:
            old = _filter_owners.get(key)
            _filter_owners[key] = cfunc
        self._filters[name] = (key, cfunc)
        if old is not None and in_callback():
            bury(old)  # replaced from inside a call of it

    # -- encryption ----------------------------------------------------------------------

    @property
    def is_encrypted(self) -> bool:
        """True when the database file is encrypted (it was opened with a key). Raises
        BadRequest once the database is closed (``cbl_db_is_encrypted_v2``)."""
        encrypted = ctypes.c_int(0)
        err = cbl_error()
        check(C.cbl_db_is_encrypted_v2(self._h, byref(encrypted), byref(err)), err)
        return bool(encrypted.value)

    def change_encryption_key(self, key: Optional[EncryptionKey]) -> None:
        """Re-encrypts the database under `key` (same forms as ``encryption_key``), or
        with None decrypts it. All handles of this process follow; no other process may
        have it open meanwhile."""
        data = None if key is None else json.dumps(_key_object(key)).encode()
        call(C.cbl_db_change_encryption_key, self._h, data)

    # -- maintenance -------------------------------------------------------------------

    def compact(self) -> None:
        """Drops bodies of non-leaf revisions, purges expired documents, VACUUMs."""
        call(C.cbl_db_compact, self._h)

    def optimize(self) -> None:
        """Refreshes the query planner's statistics."""
        call(C.cbl_db_optimize, self._h)

    def integrity_check(self, raise_on_problem: bool = False) -> List[str]:
        """Checks the file and the engine's structures. Returns the list of problems
        found ([] when sound). With raise_on_problem, raises InternalError instead."""
        out = c_void_p()
        err = cbl_error()
        status = C.cbl_db_integrity_check(self._h, byref(out), byref(err))
        report = take_string(out)
        problems = _deep_json.loads(report) if report else []
        if status == 0:
            return problems
        if status == 500 and not raise_on_problem:
            return problems or [err.message.decode("utf-8", "replace")]
        check(status, err)
        return problems

    # -- default-collection conveniences -----------------------------------------------

    @overload
    def get(self, doc_id: str, *, deleted: bool = False, conflicts: bool = False,
            revisions: bool = False, local_seq: bool = False) -> Doc: ...

    @overload
    def get(self, doc_id: str, default: _T, *, deleted: bool = False,
            conflicts: bool = False, revisions: bool = False,
            local_seq: bool = False) -> Union[Doc, _T]: ...

    def get(self, doc_id: str, default: Any = MISSING, *, deleted: bool = False,
            conflicts: bool = False, revisions: bool = False,
            local_seq: bool = False) -> Any:
        """Same as ``default_collection.get``."""
        return self.default_collection.get(doc_id, default, deleted=deleted,
                                           conflicts=conflicts, revisions=revisions,
                                           local_seq=local_seq)

    def put(self, body: Body, doc_id: Optional[str] = None, parent_rev: Optional[str] = None,
            allow_conflict: bool = False) -> Tuple[str, str]:
        """Same as ``default_collection.put``."""
        return self.default_collection.put(body, doc_id, parent_rev, allow_conflict)

    def put_many(self, docs: Union[Iterable[Mapping[str, Any]], str, bytes]
                 ) -> List[Dict[str, Any]]:
        """Same as ``default_collection.put_many``."""
        return self.default_collection.put_many(docs)

    def update_many(self, doc_ids: Iterable[str],
                    fn: Callable[[Optional[Doc]], Optional[Body]],
                    max_attempts: int = 10) -> List[Dict[str, Any]]:
        """Same as ``default_collection.update_many``."""
        return self.default_collection.update_many(doc_ids, fn, max_attempts)

    def delete_document(self, doc_id: str, rev: Optional[str] = None) -> str:
        """Same as ``default_collection.delete`` (``db.delete()`` deletes the database)."""
        return self.default_collection.delete(doc_id, rev)

    def update(self, doc_id: str, fn: Callable[[Optional[Doc]], Optional[Body]]
               ) -> Optional[str]:
        """Same as ``default_collection.update``."""
        return self.default_collection.update(doc_id, fn)

    def purge(self, doc_id: str) -> None:
        """Same as ``default_collection.purge``."""
        self.default_collection.purge(doc_id)

    def changes(self, since: int = 0, **options: Any) -> Dict[str, Any]:
        """Same as ``default_collection.changes``."""
        return self.default_collection.changes(since, **options)

    def iter_changes(self, since: int = 0, **options: Any) -> Iterator[Dict[str, Any]]:
        """Same as ``default_collection.iter_changes``."""
        return self.default_collection.iter_changes(since, **options)

    def add_document_listener(self, doc_id: str, fn: Callable[[List[Change]], Any]
                              ) -> ListenerToken:
        """Same as ``default_collection.add_document_listener``."""
        return self.default_collection.add_document_listener(doc_id, fn)

    def keys(self) -> Iterator[str]:
        """Same as ``default_collection.keys``."""
        return self.default_collection.keys()

    def values(self) -> Iterator[Doc]:
        """Same as ``default_collection.values``."""
        return self.default_collection.values()

    def items(self) -> Iterator[Tuple[str, Doc]]:
        """Same as ``default_collection.items``."""
        return self.default_collection.items()

    def set_attachment(self, doc_id: str, name: str,
                       data: Union[Data, BinaryIO, None] = None, *,
                       path: Union[str, "os.PathLike[str]", None] = None,
                       digest: Optional[str] = None, content_type: Optional[str] = None,
                       rev: Optional[str] = None) -> str:
        """Same as ``default_collection.set_attachment``."""
        return self.default_collection.set_attachment(
            doc_id, name, data, path=path, digest=digest, content_type=content_type, rev=rev)

    def remove_attachment(self, doc_id: str, name: str, rev: Optional[str] = None) -> str:
        """Same as ``default_collection.remove_attachment``."""
        return self.default_collection.remove_attachment(doc_id, name, rev)

    def attachment_names(self, doc_id: str) -> List[str]:
        """Same as ``default_collection.attachment_names``."""
        return self.default_collection.attachment_names(doc_id)

    def attachments(self, doc_id: str) -> Dict[str, Dict[str, Any]]:
        """Same as ``default_collection.attachments``."""
        return self.default_collection.attachments(doc_id)

    def get_attachment(self, doc_id: str, name: str) -> bytes:
        """Same as ``default_collection.get_attachment``."""
        return self.default_collection.get_attachment(doc_id, name)

    def save_attachment(self, doc_id: str, name: str,
                        path: Union[str, "os.PathLike[str]"]) -> None:
        """Same as ``default_collection.save_attachment``."""
        self.default_collection.save_attachment(doc_id, name, path)

    def open_attachment(self, doc_id: str, name: str) -> BlobReader:
        """Same as ``default_collection.open_attachment``."""
        return self.default_collection.open_attachment(doc_id, name)

    def view(self, name: str) -> View:
        """Same as ``default_collection.view``."""
        return self.default_collection.view(name)

    def query(self, view: str, **options: Any) -> QueryResult:
        """Same as ``default_collection.query``."""
        return self.default_collection.query(view, **options)

    def view_names(self) -> List[str]:
        """Same as ``default_collection.view_names``."""
        return self.default_collection.view_names()

    def all_docs(self, **options: Any) -> Dict[str, Any]:
        """Same as ``default_collection.all_docs``."""
        return self.default_collection.all_docs(**options)

    def all_docs_query(self, **options: Any) -> QueryResult:
        """Same as ``default_collection.all_docs_query``."""
        return self.default_collection.all_docs_query(**options)

    def replicate(self, url: str, *, collection: Union["Collection", str, None] = None,
                  **options: Any) -> Replicator:
        """Starts replicating a collection of this database — the default one, or
        `collection` (a :class:`Collection` of this database, or its name: ``"name"`` in
        the default scope or ``"scope.name"``) — with the peer database at `url`. Options
        as :meth:`Collection.replicate`; returns the :class:`Replicator`."""
        if collection is None:
            coll = self.default_collection
        elif isinstance(collection, Collection):
            if collection.database is not self:
                raise ValueError("the collection belongs to another Database object")
            coll = collection
        elif isinstance(collection, str):
            scope, _, name = collection.rpartition(".")
            coll = self.collection(name, scope or None)
        else:
            raise TypeError("collection must be a cblite.Collection, a collection name or None")
        return coll.replicate(url, **options)

    # -- content store -------------------------------------------------------------------

    def blob_writer(self) -> BlobWriter:
        """A :class:`BlobWriter` streaming content into this database's store."""
        return BlobWriter(self)

    def put_blob(self, data: Data) -> str:
        """Stores bytes in the content store; returns their digest. Durable when it
        returns; inside a transaction, readable at once on this thread and made durable
        by the commit (before the documents are), discarded by an abort."""
        ptr, n, _keep = data_pointer(data)
        return call_str(C.cbl_db_blob_put, self._h, ptr, n)

    def import_blob(self, path: Union[str, "os.PathLike[str]"]) -> str:
        """Stores a copy of a file (streamed); returns its digest."""
        return call_str(C.cbl_db_blob_import_file, self._h, cstr(path, "path"))

    def blob_length(self, digest: str) -> int:
        """The length of stored content (NotFound when the store does not have it)."""
        return call_u64(C.cbl_db_blob_length, self._h, cstr(digest, "digest"))

    def __getitem__(self, doc_id: str) -> Dict[str, Any]:
        return self.default_collection[doc_id]

    def __setitem__(self, doc_id: str, body: Body) -> None:
        self.default_collection[doc_id] = body

    def __delitem__(self, doc_id: str) -> None:
        del self.default_collection[doc_id]

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self.default_collection

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[str]:
        """The IDs of the live documents of the default collection (as :meth:`keys`)."""
        return iter(self.default_collection)
