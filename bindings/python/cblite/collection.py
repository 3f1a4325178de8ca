"""Collections: :class:`Collection`, a database's documents as a mapping, with their
revisions, local documents, attachments, views, changes and replication."""

from __future__ import annotations

import ctypes
import datetime as _dt
import json
import os
import threading
import time
from ctypes import byref, c_void_p
from typing import (TYPE_CHECKING, Any, BinaryIO, Callable, Dict, Iterable, Iterator, List,
                    Mapping, Optional, Tuple, TypeVar, Union, overload)

from . import _deep_json
from ._documents import (MISSING, OUTPUT_ONLY, Body, BulkGetRequests, Doc, Docs, Expiration,
                         body_dict, bulk_get_request, docs_arg, rev_list, revision_options)
from ._lib import (C, CBL_GET_CONFLICTS, CBL_GET_DELETED, CBL_GET_LOCAL_SEQ,
                   CBL_GET_REVISIONS, CBL_PUT_ALLOW_CONFLICT, REVISION_FN, UPDATE_FN,
                   VALIDATE_FN, cbl_error, enc, take_string)
from ._shutdown import bury
from ._util import (CALLBACK_SCOPE, ReleasableHandle, call, call_dict, call_handle, call_i64,
                    call_json, call_list, call_str, call_u64, check, cstr, dumps, json_arg,
                    query_options)
from .blob_reader import BlobReader
from .blob_writer import Data, store_stream
from .errors import BadRequest, CBLiteError, Conflict, NotFound
from .listeners import Change, ListenerToken
from . import mango as _mango
from .mango import FindResult
from . import fulltext as _fulltext
from .fulltext import SearchResult
from .query_result import QueryResult
from .replicator import Auth, Replicator, build_config
from .live_find import LiveFind
from .views import View

if TYPE_CHECKING:  # annotations only: Database sits above this module (it opens collections)
    from .database import Database

__all__ = ["Collection"]

_T = TypeVar("_T")

# Guards the swap of a collection's handle (release racing with release).
_release_lock = threading.Lock()


def _flags(deleted: bool, conflicts: bool, revisions: bool, local_seq: bool) -> int:
    return ((CBL_GET_DELETED if deleted else 0) | (CBL_GET_CONFLICTS if conflicts else 0)
            | (CBL_GET_REVISIONS if revisions else 0) | (CBL_GET_LOCAL_SEQ if local_seq else 0))


def _unix_time(when: Expiration) -> int:
    if when is None:
        return 0
    if isinstance(when, _dt.datetime):
        return int(when.timestamp())
    if isinstance(when, _dt.timedelta):
        return int(time.time() + when.total_seconds())
    if isinstance(when, (int, float)):
        return int(when)
    raise TypeError("expiration must be a unix time, a datetime, a timedelta or None")


def _write_message(buffer: int, size: int, message: str) -> None:
    if not buffer or size <= 0:
        return
    data = message.encode("utf-8", errors="replace")[: size - 1]
    data = data.decode("utf-8", errors="ignore").encode("utf-8")  # no split characters
    ctypes.memmove(buffer, data + b"\0", len(data) + 1)


class Collection(ReleasableHandle):
    """A collection of a database; a mapping from document IDs to document dicts.

    ``coll[id]`` reads (NotFound, also a KeyError, when absent), ``coll[id] = body``
    saves (the body's ``_rev`` names the parent), ``del coll[id]`` deletes, ``id in
    coll`` tests, ``len(coll)`` counts, iterating yields the IDs of live documents.
    """

    def __init__(self, db: "Database", handle: int):
        self._db = db
        self._handle: Optional[int] = handle
        db._collections.add(self)

    @property
    def _h(self) -> int:
        handle = self._handle
        if handle is None:
            raise BadRequest("the collection handle is released (database closed?)")
        return handle

    def release(self) -> None:
        """Releases the handle (idempotent; done automatically when the database closes).
        Validators registered through this object are removed first."""
        if self._handle is not None and self._db._validators:
            self._db._remove_validators(only=self)
        with _release_lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_collection_release(handle)


    def __repr__(self) -> str:
        try:
            return f"<cblite.Collection {self.scope}.{self.name}>"
        except CBLiteError:
            return "<cblite.Collection (released)>"

    # -- properties ----------------------------------------------------------------------

    @property
    def database(self) -> "Database":
        """The Database this collection belongs to."""
        return self._db

    @property
    def name(self) -> str:
        """The collection's name."""
        return call_str(C.cbl_collection_name, self._h)

    @property
    def scope(self) -> str:
        """The name of the collection's scope."""
        return call_str(C.cbl_collection_scope, self._h)

    @property
    def full_name(self) -> str:
        """``scope.name``"""
        return f"{self.scope}.{self.name}"

    @property
    def count(self) -> int:
        """Number of undeleted documents."""
        return call_u64(C.cbl_collection_count, self._h)

    @property
    def last_sequence(self) -> int:
        """The last sequence assigned in this collection."""
        return call_u64(C.cbl_collection_last_sequence, self._h)

    # -- documents -----------------------------------------------------------------------

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
        """The current revision as a dict with ``_id`` and ``_rev``. When the document is
        absent, purged, or deleted (unless ``deleted=True``, which returns the
        tombstone): `default` when one is given (``coll.get(id, None)``, as
        ``dict.get``), else NotFound (also a KeyError). ``conflicts`` adds
        ``_conflicts``, ``revisions`` adds ``_revisions``, ``local_seq`` adds
        ``_local_seq``."""
        try:
            doc: Doc = call_json(C.cbl_doc_get, self._h, cstr(doc_id, "doc_id"),
                                 _flags(deleted, conflicts, revisions, local_seq))
        except NotFound:
            if default is MISSING:
                raise
            return default
        return doc

    def get_revision(self, doc_id: str, rev_id: str, deleted: bool = True,
                     conflicts: bool = False, revisions: bool = False,
                     local_seq: bool = False) -> Dict[str, Any]:
        """A given kept revision (NotFound when unknown or its body was dropped)."""
        return call_dict(C.cbl_doc_get_revision, self._h, enc(doc_id, "doc_id"), enc(rev_id, "rev_id"),
                         _flags(deleted, conflicts, revisions, local_seq))

    def __getitem__(self, doc_id: str) -> Dict[str, Any]:
        return self.get(doc_id)

    def __contains__(self, doc_id: object) -> bool:
        if not isinstance(doc_id, str):
            return False   # as a dict: a key of another type is not in it
        try:
            self.get(doc_id)
            return True
        except NotFound:
            return False

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[str]:
        """The IDs of the live documents in ID order, as a dict's iteration is its keys."""
        return self.keys()

    def put(self, body: Body, doc_id: Optional[str] = None, parent_rev: Optional[str] = None,
            allow_conflict: bool = False) -> Tuple[str, str]:
        """Saves a new revision; returns ``(doc_id, rev_id)``.

        `body` is a dict (or JSON text); a dict given gets the saved ``_id`` and the new
        ``_rev`` written into it (as CouchDB clients' ``save`` does). `doc_id` None takes the body's ``_id`` or
        generates a UUID. `parent_rev` is the revision replaced (None: the body's
        ``_rev``, or create a new document). Raises Conflict when the parent is not
        current (unless allow_conflict, which creates a branch) or when creating an
        existing document, Forbidden when a validator rejects it."""
        out_id = c_void_p()
        out_rev = c_void_p()
        err = cbl_error()
        status = C.cbl_doc_put(self._h, enc(doc_id, "doc_id"), dumps(body), enc(parent_rev, "parent_rev"),
                               CBL_PUT_ALLOW_CONFLICT if allow_conflict else 0,
                               byref(out_id), byref(out_rev), byref(err))
        new_id = take_string(out_id)
        new_rev = take_string(out_rev)
        check(status, err)
        assert new_id is not None and new_rev is not None
        if isinstance(body, dict):
            # As CouchDB clients' save(): the dict can be changed and saved again.
            body["_id"] = new_id
            body["_rev"] = new_rev
        return new_id, new_rev

    def __setitem__(self, doc_id: str, body: Body) -> None:
        self.put(body, doc_id)

    def delete(self, doc_id: str, rev: Optional[str] = None) -> str:
        """Deletes a document (writes a tombstone on `rev`, None: the current revision).
        Returns the tombstone's revision ID."""
        return call_str(C.cbl_doc_delete, self._h, enc(doc_id, "doc_id"), enc(rev, "rev"))

    def __delitem__(self, doc_id: str) -> None:
        self.delete(doc_id)

    def update(self, doc_id: str, fn: Callable[[Optional[Dict[str, Any]]], Optional[Body]]
               ) -> Optional[str]:
        """Read-modify-write with automatic retry on conflict.

        ``fn(current)`` receives the current revision as a dict (None when the document
        does not exist or is deleted) and returns the new body, or None to cancel. It may
        be called several times. Returns the new revision ID, or None when cancelled.
        An exception raised by fn cancels the update and is re-raised."""
        state: Dict[str, Any] = {"exc": None, "cancelled": False}

        def trampoline(_context: Any, current_json: Optional[bytes], out_new_json: Any) -> int:
            with CALLBACK_SCOPE:
                try:
                    out_new_json[0] = None
                    current = None if current_json is None else _deep_json.loads(current_json)
                    new = fn(current)
                    if new is None:
                        state["cancelled"] = True
                        return 0
                    if isinstance(new, dict):
                        new = {k: v for k, v in new.items() if k not in OUTPUT_ONLY}
                    copy = C.cbl_strdup(dumps(new))
                    if not copy:
                        raise MemoryError("cbl_strdup failed")
                    state["cancelled"] = False
                    out_new_json[0] = copy
                    return 1
                except BaseException as exc:
                    state["exc"] = exc
                    state["cancelled"] = True
                    return 0

        cfunc = UPDATE_FN(trampoline)
        out_rev = c_void_p()
        err = cbl_error()
        status = C.cbl_doc_update(self._h, enc(doc_id, "doc_id"), cfunc, None, byref(out_rev),
                                  byref(err))
        rev = take_string(out_rev)
        exc = state["exc"]
        if isinstance(exc, BaseException):
            raise exc
        if status == 409 and state["cancelled"]:
            return None
        check(status, err)
        return rev

    def purge(self, doc_id: str) -> None:
        """Removes every trace of a document (it leaves the changes feed too)."""
        call(C.cbl_doc_purge, self._h, enc(doc_id, "doc_id"))

    def conflicts(self, doc_id: str) -> List[str]:
        """The undeleted leaf revision IDs, current first ([] for a deleted document)."""
        return call_list(C.cbl_doc_conflicts, self._h, enc(doc_id, "doc_id"))

    def history(self, doc_id: str, rev: Optional[str] = None) -> List[str]:
        """The ancestry of `rev` (None: the current revision), newest first."""
        return call_list(C.cbl_doc_history, self._h, enc(doc_id, "doc_id"), enc(rev, "rev"))

    def revision_tree(self, doc_id: str) -> Dict[str, Any]:
        """The kept revision tree: ``{"id","current","sequence","revisions":[...]}``."""
        return call_dict(C.cbl_doc_revision_tree, self._h, enc(doc_id, "doc_id"))

    def put_existing(self, doc_id: str, body: Body, history: List[str]) -> None:
        """Inserts a revision made elsewhere with its history (new revision first), the
        replicator's path. Listeners see the change as external."""
        hist = history if isinstance(history, (str, bytes)) else json.dumps(list(history))
        call(C.cbl_doc_put_existing, self._h, enc(doc_id, "doc_id"), dumps(body), enc(hist, "hist"))

    def set_expiration(self, doc_id: str, when: Expiration) -> None:
        """Sets when the document expires (is purged): a unix time in seconds, a
        datetime, a timedelta from now, or None to clear."""
        call(C.cbl_doc_set_expiration, self._h, enc(doc_id, "doc_id"), _unix_time(when))

    def get_expiration(self, doc_id: str) -> Optional[int]:
        """The expiration as a unix time, or None when none is set."""
        value = call_i64(C.cbl_doc_get_expiration, self._h, enc(doc_id, "doc_id"))
        return value or None

    # -- local documents -----------------------------------------------------------------

    def get_local(self, local_id: str) -> Dict[str, Any]:
        """A local (non-replicated) document, with ``_id`` and ``_rev``."""
        return call_dict(C.cbl_local_get, self._h, enc(local_id, "local_id"))

    def put_local(self, local_id: str, body: Body, rev: Optional[str] = None) -> str:
        """Saves a local document; `rev` must be its current revision (None to create).
        Returns the new revision ("0-<n>")."""
        return call_str(C.cbl_local_put, self._h, enc(local_id, "local_id"), dumps(body), enc(rev, "rev"))

    def delete_local(self, local_id: str, rev: Optional[str] = None) -> None:
        """Deletes a local document (`rev` None: whatever its revision)."""
        call(C.cbl_local_delete, self._h, enc(local_id, "local_id"), enc(rev, "rev"))

    def local_documents(self, include_docs: bool = False) -> List[Dict[str, Any]]:
        """The local documents by ID: ``[{"id", "rev", "doc"?}, ...]`` (``doc``, with
        ``_id`` and ``_rev``, when include_docs)."""
        return call_list(C.cbl_local_list, self._h, 1 if include_docs else 0)

    # -- replication surface -------------------------------------------------------------
    # CouchDB's JSON shapes in and out (``_revs_diff``, ``_bulk_docs``, ``open_revs``,
    # ``_bulk_get``): per-document problems come back inside the result, as CouchDB
    # reports them; an exception means nothing was done.

    def revs_diff(self, revs: Dict[str, List[str]]) -> Dict[str, Any]:
        """``_revs_diff``: which of a peer's revisions (``{doc_id: [rev, ...]}``) this
        collection lacks. Returns ``{doc_id: {"missing": [...], "possible_ancestors":
        [...]?}}`` for the documents with at least one missing revision only."""
        if isinstance(revs, (str, bytes)):
            return call_dict(C.cbl_collection_revs_diff, self._h, json_arg(revs, "revs_diff request"))
        request = {doc_id: rev_list(r, f"the revisions of {doc_id!r}")
                   for doc_id, r in revs.items()}
        return call_dict(C.cbl_collection_revs_diff, self._h, dumps(request))

    def put_existing_revisions(self, docs: Docs) -> List[Dict[str, Any]]:
        """Inserts revisions made elsewhere (``_bulk_docs`` with ``new_edits=false``) in
        one transaction, without inventing revision IDs. Each doc has ``_id``, ``_rev``,
        optionally ``_revisions`` (``{"start": N, "ids": [...]}``, newest first),
        ``_deleted``, ``_attachments`` with inline ``data`` (base64 text, or bytes which
        are encoded here) or stubs of content held here. Returns one result per
        document, in order: ``{"ok": True, "id", "rev"}`` or ``{"id", "rev"?, "error",
        "reason"}`` (``bad_request``, ``forbidden``, ``file_exists`` for a stub of
        content not held). A revision already held succeeds without change."""
        return call_list(C.cbl_collection_docs_put_existing, self._h, docs_arg(docs, "docs"))

    def save_many(self, docs: Docs) -> List[Dict[str, Any]]:
        """Saves new revisions (``_bulk_docs`` with ``new_edits=true``) in one
        transaction: each doc as :meth:`put` takes it (``_id`` optional, ``_rev`` the
        parent, ``_deleted`` for a tombstone). Results as :meth:`put_existing_revisions`,
        with ``"error": "conflict"`` for a stale or missing parent."""
        return call_list(C.cbl_collection_docs_save, self._h, docs_arg(docs, "docs"))

    def open_revs(self, doc_id: str, revs: Optional[List[str]] = None, *,
                  revisions: bool = False, latest: bool = False, attachments: bool = False,
                  atts_since: Optional[List[str]] = None, conflicts: bool = False,
                  deleted_conflicts: bool = False, revs_info: bool = False,
                  local_seq: bool = False) -> List[Dict[str, Any]]:
        """Reads revisions of one document (``GET /db/doc?open_revs=...``): `revs` a list
        of revision IDs, or None (or ``"all"``) for every leaf, deleted ones included.
        Returns ``[{"ok": doc} | {"missing": rev}, ...]``.

        Options (CouchDB's names in brackets): ``revisions`` adds ``_revisions`` [revs];
        ``latest`` makes a requested non-leaf revision stand for the leaves descending
        from it; ``attachments`` inlines base64 ``data`` for attachments newer than
        ``atts_since`` (revisions the caller has; a non-empty list implies
        ``attachments``, as in CouchDB); ``conflicts``, ``deleted_conflicts``,
        ``revs_info``, ``local_seq`` add those members. Raises NotFound when the document
        does not exist and all leaves were asked for."""
        if revs is None or revs == "all":  # type: ignore[comparison-overlap]
            wanted = None if revs is None else b'"all"'
        else:
            wanted = dumps(rev_list(revs, "revs"))
        opts = revision_options(revisions, latest, attachments, atts_since, conflicts,
                                deleted_conflicts, revs_info, local_seq)
        return call_list(C.cbl_doc_open_revs, self._h, cstr(doc_id, "doc_id"), wanted, opts)

    def bulk_get(self, requests: BulkGetRequests, *, revisions: bool = False, latest: bool = False,
                 attachments: bool = False, atts_since: Optional[List[str]] = None,
                 conflicts: bool = False, deleted_conflicts: bool = False,
                 revs_info: bool = False, local_seq: bool = False) -> Dict[str, Any]:
        """``_bulk_get``: many documents at once. Each request is a dict ``{"id", "rev"?,
        "atts_since"?}``, a document ID, or an ``(id, rev)`` pair; without a rev, the
        current revision (even a tombstone). Options as :meth:`open_revs`. Returns
        ``{"results": [{"id", "docs": [{"ok": doc} | {"error": {"id", "rev", "error",
        "reason"}}]}, ...]}``."""
        opts = revision_options(revisions, latest, attachments, atts_since, conflicts,
                                deleted_conflicts, revs_info, local_seq)
        return call_dict(C.cbl_collection_docs_bulk_get, self._h, bulk_get_request(requests), opts)

    def purge_revisions(self, doc_id: str, revs: List[str]) -> List[str]:
        """CouchDB's ``_purge``: removes the given leaf revisions and the ancestors no
        remaining leaf shares (the whole document when no leaf remains). Unknown and
        non-leaf revisions are ignored. Returns the purged leaf revision IDs (as
        CouchDB's ``_purge`` answers)."""
        return call_list(C.cbl_doc_purge_revisions, self._h, cstr(doc_id, "doc_id"),
                         dumps(rev_list(revs, "revs")))

    def salvage(self, each: Callable[[Dict[str, Any]], Any]) -> Dict[str, Any]:
        """Reads what is still readable from a damaged collection, whose listing and
        changes feed fail at the first damaged page while most documents still read by ID
        (``cbl_collection_salvage``). Calls ``each(revision)`` for every readable leaf
        revision, a dict in CouchDB's open_revs form (``_id``, ``_rev``, ``_revisions``,
        ``_deleted``, attachments inline), which :meth:`put_existing_revisions` takes back
        into another database::

            report = damaged.salvage(lambda rev: target.put_existing_revisions([rev]))

        Returns the report ``{"documents", "revisions", "lost": [{"id", "error"}, ...],
        "unreadable_rows"}``. `each` runs on the calling thread and must not use this
        collection. When it raises, it is not called again and the first exception is
        raised once the scan is over. Open the database with ``read_only=True`` to keep
        it as found. Raises InternalError when nothing could be read at all."""
        if not callable(each):
            raise TypeError("each must be callable")
        raised: List[BaseException] = []

        def trampoline(_context: Any, revision_json: bytes) -> None:
            if raised:
                return
            with CALLBACK_SCOPE:
                try:
                    each(_deep_json.loads(revision_json.decode("utf-8", errors="surrogateescape")))
                except BaseException as e:  # never let anything unwind into C
                    raised.append(e)

        cfunc = REVISION_FN(trampoline)
        report = call_dict(C.cbl_collection_salvage, self._h, cfunc, None)
        if raised:
            raise raised[0]
        return report

    def wait_for_changes(self, since: int, timeout: Optional[float] = 10.0) -> bool:
        """Waits until this collection has a change after sequence `since` (True) or
        `timeout` seconds pass (False); None waits as long as it takes. A commit in this
        process wakes it at once, another process's within half a second. Raises
        BadRequest if the database is closed meanwhile."""
        since = int(since)
        if since < 0:
            raise ValueError("since must be a sequence (>= 0)")
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        changed = ctypes.c_int(0)
        while True:
            # At most a second per call, so that a KeyboardInterrupt is seen meanwhile.
            if deadline is None:
                ms = 1000
            else:
                ms = max(0, min(1000, int((deadline - time.monotonic()) * 1000 + 0.999)))
            err = cbl_error()
            check(C.cbl_collection_changes_wait(self._h, since, ms, byref(changed), byref(err)), err)
            if changed.value:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    # -- mapping ---------------------------------------------------------------------------

    def keys(self) -> Iterator[str]:
        """The IDs of the live documents, in ID (byte) order."""
        for row in self.all_docs_query():
            if row.doc_id is not None:
                yield row.doc_id

    def values(self) -> Iterator[Doc]:
        """The live documents (current revisions, with ``_id`` and ``_rev``), in ID order,
        read page by page."""
        for row in self.all_docs_query(include_docs=True):
            if row.doc is not None:
                yield row.doc

    def items(self) -> Iterator[Tuple[str, Doc]]:
        """``(doc_id, document)`` pairs of the live documents, in ID order."""
        for row in self.all_docs_query(include_docs=True):
            if row.doc_id is not None and row.doc is not None:
                yield row.doc_id, row.doc

    # -- bulk writes ---------------------------------------------------------------------

    def put_many(self, docs: Union[Iterable[Mapping[str, Any]], str, bytes]
                 ) -> List[Dict[str, Any]]:
        """Saves many documents in one transaction (``_bulk_docs``): each as :meth:`put`
        takes it, ``_id`` optional, ``_rev`` the parent, ``_deleted`` for a tombstone.
        Returns one result per document, in order: ``{"ok": True, "id", "rev"}`` or
        ``{"id", "error", "reason"}`` (``"conflict"``, ``"forbidden"``,
        ``"bad_request"``); a failed document does not stop the others. Each dict given
        that was saved gets its new ``_id`` and ``_rev`` written back, so it can be
        changed and saved again."""
        if isinstance(docs, (str, bytes)):
            return self.save_many(docs)   # JSON text: nothing to write back into
        items = list(docs)
        results = self.save_many(items)
        for doc, result in zip(items, results):
            if isinstance(doc, dict) and result.get("ok"):
                doc["_id"] = result["id"]
                doc["_rev"] = result["rev"]
        return results

    def update_many(self, doc_ids: Iterable[str],
                    fn: Callable[[Optional[Doc]], Optional[Body]],
                    max_attempts: int = 10) -> List[Dict[str, Any]]:
        """Read-modify-write of many documents, saved together (``_bulk_docs``), each
        retried on conflict like :meth:`update`.

        ``fn(current)`` gets each document (None when missing or deleted) and returns its
        new body, or None to leave it alone; it may be called again for a document that
        changed meanwhile. Returns one result per ID, in order: ``{"ok": True, "id",
        "rev"}``, ``{"id", "cancelled": True}`` (fn returned None), or ``{"id", "error",
        "reason"}`` (``"conflict"`` after `max_attempts` rounds, ``"forbidden"``, ...).
        An exception raised by fn is re-raised; documents saved in earlier rounds stay
        saved."""
        ids = [cstr(i, "doc_id").decode("utf-8", "surrogateescape") for i in doc_ids]
        if len(set(ids)) != len(ids):
            raise ValueError("update_many: duplicate document IDs")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        results: Dict[str, Dict[str, Any]] = {}
        pending = ids
        for _attempt in range(max_attempts):
            if not pending:
                break
            current: Dict[str, Optional[Doc]] = {}
            for entry in self.bulk_get(pending)["results"]:
                found = [d["ok"] for d in entry["docs"] if "ok" in d]
                doc = found[0] if found else None
                current[entry["id"]] = None if doc is None or doc.get("_deleted") else doc
            batch: List[Doc] = []
            for doc_id in pending:
                cur = current.get(doc_id)
                new = fn(None if cur is None else dict(cur))
                if new is None:
                    results[doc_id] = {"id": doc_id, "cancelled": True}
                    continue
                body = body_dict(new)
                body = {k: v for k, v in body.items() if k not in OUTPUT_ONLY}
                body["_id"] = doc_id
                if cur is not None:
                    body["_rev"] = cur["_rev"]
                batch.append(body)
            pending = []
            for body, result in zip(batch, self.save_many(batch)):
                results[body["_id"]] = result
                if result.get("error") == "conflict":
                    pending.append(body["_id"])
        return [results[i] for i in ids]

    # -- attachments -----------------------------------------------------------------------

    def set_attachment(self, doc_id: str, name: str,
                       data: Union[Data, BinaryIO, None] = None, *,
                       path: Union[str, "os.PathLike[str]", None] = None,
                       digest: Optional[str] = None, content_type: Optional[str] = None,
                       rev: Optional[str] = None) -> str:
        """Sets (adds or replaces) attachment `name`, saving a new revision; returns its
        ID.

        The content is exactly one of: `data` (bytes-like, or a binary file object, read
        in chunks), `path` (a file, streamed) or `digest` (content already in the store,
        e.g. from a :class:`BlobWriter`). `rev` is the revision to change, as for
        :meth:`remove_attachment`: None means the current one (a new document with an
        empty body when there is none), a given revision raises Conflict when it is not
        current. `content_type` None keeps the previous type of that name, else
        ``application/octet-stream``."""
        given = [x is not None for x in (data, path, digest)]
        if sum(given) != 1:
            raise TypeError("give exactly one of data, path or digest")
        cdoc, cname = cstr(doc_id, "doc_id"), cstr(name, "attachment name")
        ctype, crev = enc(content_type, "content_type"), enc(rev, "rev")
        db = self._db
        if path is not None:
            digest = db.import_blob(path)
        elif data is not None:
            if hasattr(data, "read"):
                digest = store_stream(db, data)  # type: ignore[arg-type]
            else:
                digest = db.put_blob(data)
        cdigest = cstr(digest, "digest")
        for _attempt in range(10):
            parent = crev if rev is not None else self._current_rev(doc_id)
            out = c_void_p()
            err = cbl_error()
            status = C.cbl_doc_set_attachment(self._h, cdoc, parent, cname, ctype, cdigest,
                                              byref(out), byref(err))
            new_rev = take_string(out)
            if status == 409 and rev is None:
                continue  # changed since we read its revision: read it again
            check(status, err)
            assert new_rev is not None
            return new_rev
        check(status, err)
        raise Conflict("the document kept changing")  # pragma: no cover

    def _current_rev(self, doc_id: str) -> Optional[bytes]:
        """The current revision as bytes, None when the document is missing or deleted."""
        try:
            return cstr(self.get(doc_id)["_rev"])
        except NotFound:
            return None

    def remove_attachment(self, doc_id: str, name: str, rev: Optional[str] = None) -> str:
        """Removes attachment `name` (NotFound when absent), saving a new revision on
        `rev` (None: the current one; a given revision raises Conflict when it is not
        current); returns its ID."""
        out = c_void_p()
        err = cbl_error()
        status = C.cbl_doc_remove_attachment(self._h, cstr(doc_id, "doc_id"), enc(rev, "rev"),
                                             cstr(name, "attachment name"), byref(out),
                                             byref(err))
        new_rev = take_string(out)
        check(status, err)
        assert new_rev is not None
        return new_rev

    def attachment_names(self, doc_id: str) -> List[str]:
        """The attachment names of the current revision, sorted."""
        names: List[str] = call_json(C.cbl_doc_attachment_names, self._h, cstr(doc_id, "doc_id"))
        return names

    def attachments(self, doc_id: str) -> Dict[str, Dict[str, Any]]:
        """The ``_attachments`` stubs of the current revision ({} when none)."""
        stubs: Dict[str, Dict[str, Any]] = self.get(doc_id).get("_attachments", {})
        return stubs

    def get_attachment(self, doc_id: str, name: str) -> bytes:
        """The whole content of an attachment (checked against its digest)."""
        ptr = c_void_p()
        n = ctypes.c_size_t()
        err = cbl_error()
        status = C.cbl_doc_get_attachment(self._h, cstr(doc_id, "doc_id"),
                                          cstr(name, "attachment name"), byref(ptr), byref(n),
                                          byref(err))
        try:
            check(status, err)
            return ctypes.string_at(ptr.value, n.value) if n.value and ptr.value else b""
        finally:
            if ptr.value:
                C.cbl_free(ptr.value)

    def save_attachment(self, doc_id: str, name: str,
                        path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes an attachment to the file `path` (streamed; `path` never holds partial
        content)."""
        call(C.cbl_doc_save_attachment_to_file, self._h, cstr(doc_id, "doc_id"),
             cstr(name, "attachment name"), cstr(path, "path"))

    def open_attachment(self, doc_id: str, name: str) -> BlobReader:
        """A :class:`BlobReader` (a seekable binary file) on an attachment of the current
        revision."""
        return BlobReader(call_handle(C.cbl_doc_open_attachment, self._h,
                                      cstr(doc_id, "doc_id"), cstr(name, "attachment name")))

    # -- views and queries ---------------------------------------------------------------

    def view(self, name: str) -> View:
        """A handle on the view `name` of this collection (see :class:`View`)."""
        return View(self, name)

    def query(self, view: str, **options: Any) -> QueryResult:
        """Queries the view `view`; ``"DDOC/VIEW"`` names a stored design document's
        JavaScript view, updated and reduced as CouchDB's. Options as :meth:`View.query`."""
        handle = self.view(view)
        try:
            return handle.query(None, **options)
        finally:
            handle.release()

    def view_names(self) -> List[str]:
        """Names of this collection's views that have an index."""
        names: List[str] = call_json(C.cbl_collection_view_names, self._h)
        return names

    def all_docs(self, **options: Any) -> Dict[str, Any]:
        """All-documents query as JSON: ``{"total_rows","offset","update_seq","rows":[...]}``.
        Takes the range options of views with document IDs as keys, ``include_docs``,
        and ``all_docs_mode``: "all_docs", "include_deleted", "show_conflicts",
        "only_conflicts" or "by_sequence"."""
        result: Dict[str, Any] = call_json(C.cbl_collection_all_docs, self._h,
                                           query_options(options))
        return result

    def all_docs_query(self, **options: Any) -> QueryResult:
        """The all-documents query (options as :meth:`all_docs`) read row by row."""
        return QueryResult(call_handle(C.cbl_collection_all_docs_query, self._h,
                                       query_options(options)),
                           include_docs=bool(options.get("include_docs")))

    # -- Mango queries and json indexes ---------------------------------------------------

    def find(self, selector: Mapping[str, Any], *, sort: Optional[Iterable[Any]] = None,
             fields: Optional[Iterable[str]] = None, limit: Optional[int] = None,
             skip: Optional[int] = None, bookmark: Optional[str] = None,
             use_index: Optional[Any] = None, **options: Any) -> FindResult:
        """Runs a Mango query (CouchDB 3.5's ``_find``): iterate the result for the matching
        documents, e.g. ``coll.find({"age": {"$gt": 30}}, sort=[{"age": "asc"}],
        fields=["_id", "age"])``. ``limit`` None returns every match (CouchDB's default is
        25); other options (``execution_stats``, ``conflicts``, ``update``, ...) as CouchDB's.
        A sort no index serves is :class:`BadRequest` ("no_usable_index: ...")."""
        query = _mango.find_query(selector, sort=sort, fields=fields, limit=limit, skip=skip,
                                  bookmark=bookmark, use_index=use_index, **options)
        return FindResult(call_handle(C.cbl_collection_find, self._h, query))

    def live_find(self, selector: Mapping[str, Any], callback: Callable[[List[Dict[str, Any]]], Any],
                  **options: Any) -> "LiveFind":
        """A live :meth:`find`: `callback` gets the list of documents found (on the live
        query's thread), first, then after each committed change that changes it; the
        keyword arguments are :meth:`find`'s. Stop it with ``stop()`` or a ``with`` block,
        e.g. ``with coll.live_find({"age": {"$gt": 30}}, print, sort=["age"]): ...``."""
        return LiveFind(self, callback, _mango.find_query(selector, **options))

    def explain(self, selector: Mapping[str, Any], **options: Any) -> Dict[str, Any]:
        """The plan of :meth:`find` with these arguments, as CouchDB's ``_explain``."""
        result: Dict[str, Any] = call_json(C.cbl_collection_explain, self._h,
                                           _mango.find_query(selector, **options))
        return result

    def create_index(self, fields: Iterable[Any], *, name: Optional[str] = None,
                     ddoc: Optional[str] = None,
                     partial_filter_selector: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """Creates a json index over `fields` (its design document, as CouchDB stores it):
        ``{"result": "created" | "exists", "id", "name"}``."""
        result: Dict[str, Any] = call_json(C.cbl_collection_create_index, self._h,
                                           _mango.index_body(fields, name, ddoc, partial_filter_selector))
        return result

    def delete_index(self, ddoc: str, name: str) -> None:
        """Deletes a json index (:class:`NotFound` when there is none)."""
        _mango.delete_index(self._h, ddoc, name)

    def indexes(self) -> List[Dict[str, Any]]:
        """The indexes as CouchDB lists them (the special ``_all_docs`` one first)."""
        result: Dict[str, Any] = call_json(C.cbl_collection_indexes, self._h)
        indexes: List[Dict[str, Any]] = result["indexes"]
        return indexes

    # -- full-text search ----------------------------------------------------------------

    def create_text_index(self, name: str, fields: Iterable[str], *, ddoc: Optional[str] = None,
                          stemming: bool = False, stop_words: Optional[Iterable[str]] = None,
                          fold_diacritics: bool = True, analyzer: Optional[Any] = None,
                          partial_filter_selector: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """Creates (or redefines) a full-text index over `fields` (dotted paths; strings and
        arrays of strings are indexed), stored as a text index in the design document
        ``_design/<ddoc or name>``: ``{"result": "created" | "exists", "id", "name"}``.
        Words are compared without case and (Latin) diacritics unless ``fold_diacritics``
        is False; ``stemming`` adds English (Porter) stemming; ``stop_words`` are never
        indexed nor searched. ``analyzer`` ("standard", "english", or a dict of those three
        options) replaces them. ``partial_filter_selector``: only matching documents are indexed."""
        result: Dict[str, Any] = call_json(C.cbl_collection_create_text_index, self._h, _fulltext.index_definition(
            name, fields, ddoc, analyzer, stemming, stop_words, fold_diacritics, partial_filter_selector))
        return result

    def delete_text_index(self, name: str, ddoc: Optional[str] = None) -> None:
        """Deletes a full-text index and its stored terms (:class:`NotFound` when there is none)."""
        call(C.cbl_collection_delete_text_index, self._h, cstr(ddoc, "ddoc"), cstr(name, "name"))

    def text_indexes(self) -> List[Dict[str, Any]]:
        """The full-text indexes: ``[{"ddoc", "name", "type": "text", "def": {"fields", "analyzer", ...}}]``."""
        result: List[Dict[str, Any]] = call_json(C.cbl_collection_text_indexes, self._h)
        return result

    def search(self, query: str, *, index: Optional[str] = None, ddoc: Optional[str] = None,
               fields: Optional[Iterable[str]] = None, selector: Optional[Mapping[str, Any]] = None,
               limit: Optional[int] = 25, skip: int = 0, bookmark: Optional[str] = None,
               include_docs: bool = False, snippets: Any = True) -> SearchResult:
        """Searches a full-text index (``index`` may be left out when the collection has
        one): iterate the result for :class:`~cblite.fulltext.SearchHit` values, best
        first, e.g. ``for hit in coll.search("coffee NEAR milk", fields=["body"]):
        print(hit.doc_id, hit.score, hit.snippets)``. The query takes terms, "phrases",
        prefixes (``data*``), AND/OR/NOT, ``a NEAR b``, ``title:term``, ``+a -b`` and
        parentheses; a malformed one is :class:`BadRequest` naming the position.
        ``fields``: unscoped terms match in these fields only; ``selector``: a Mango
        selector the documents must match too; ``limit`` None: every hit; ``snippets``:
        False for none, or ``{"open", "close", "ellipsis", "tokens"}``."""
        name = index if index is not None else _fulltext.only_index(self.text_indexes())
        request = _fulltext.search_request(query, fields, ddoc, selector, limit, skip, bookmark,
                                           include_docs, snippets)
        return SearchResult(call_handle(C.cbl_collection_search, self._h, cstr(name, "index"), request),
                            include_docs=include_docs)

    # -- replication -------------------------------------------------------------------

    def replicate(
            self, url: str, *, direction: str = "both", continuous: bool = False,
            create_target: Optional[bool] = None, filter: Optional[str] = None,
            filter_params: Optional[Mapping[str, Any]] = None, pull_filter: Optional[str] = None,
            pull_filter_params: Optional[Mapping[str, Any]] = None,
            doc_ids: Optional[Iterable[str]] = None, channels: Optional[Iterable[str]] = None,
            headers: Optional[Mapping[str, str]] = None, auth: Optional[Auth] = None,
            remote_uuid: Optional[str] = None, heartbeat_ms: Optional[int] = None,
            batch_size: Optional[int] = None, timeout_ms: Optional[int] = None,
            max_retries: Optional[int] = None, retry_initial_ms: Optional[int] = None,
            retry_max_ms: Optional[int] = None, tls: Optional[Mapping[str, str]] = None,
            document_events: Optional[bool] = None,
            on_status: Optional[Callable[[Dict[str, Any]], Any]] = None,
            on_documents: Optional[Callable[[List[Dict[str, Any]]], Any]] = None) -> Replicator:
        """Starts replicating this collection with the peer database at `url`
        (``http[s]://[user:password@]host[:port]/db``) and returns its :class:`Replicator`.

        Keyword arguments are the keys of ``cbl_replicator_start``'s configuration (None:
        the library's default):

        * ``direction``: ``"push"``, ``"pull"`` or ``"both"``; ``continuous``: run until
          stopped, following changes on both sides (else stop when caught up);
        * ``create_target``: push creates the peer's database when missing;
        * ``filter`` (a name registered with :meth:`Database.set_filter`) and
          ``filter_params``: which local changes are pushed; ``pull_filter`` /
          ``pull_filter_params``: the peer's filter; ``doc_ids`` (both ways); ``channels``
          (Sync Gateway);
        * ``headers`` ({name: value}, sent with every request); ``auth``:
          ``{"type": "basic"|"session", "username", "password"}``, ``{"type": "bearer",
          "token"}``, or a ``(username, password)`` tuple for basic auth (credentials in the
          URL mean basic auth too);
        * ``remote_uuid``: a stable name for the peer in the replication's identity;
        * ``heartbeat_ms``, ``batch_size``, ``timeout_ms``, ``max_retries``,
          ``retry_initial_ms``, ``retry_max_ms``; ``tls``: ``{"pinned_sha256": hex}`` (e.g.
          a :attr:`Server.tls_fingerprint`) or ``{"ca_file": path}``;
        * ``document_events``: deliver every document to ``on_documents``, not only failures.

        ``on_status`` / ``on_documents``: see :class:`Replicator`. Raises TypeError for an
        unknown keyword or a value of the wrong type and ValueError for a NUL in `url`,
        before anything starts; BadRequest (also a ValueError) when the library refuses the
        configuration (invalid URL or value, tls options on an http URL, ...)."""
        config = build_config(
            url, direction=direction, continuous=continuous, create_target=create_target,
            filter=filter, filter_params=filter_params, pull_filter=pull_filter,
            pull_filter_params=pull_filter_params, doc_ids=doc_ids, channels=channels,
            headers=headers, auth=auth, remote_uuid=remote_uuid, heartbeat_ms=heartbeat_ms,
            batch_size=batch_size, timeout_ms=timeout_ms, max_retries=max_retries,
            retry_initial_ms=retry_initial_ms, retry_max_ms=retry_max_ms, tls=tls,
            document_events=document_events)
        return Replicator(self, config, on_status=on_status, on_documents=on_documents)

    # -- validation ----------------------------------------------------------------------

    def set_validator(self, name: str, fn: Optional[Callable[[Dict[str, Any], Optional[Dict[str, Any]]], Any]]
                      ) -> None:
        """Registers ``fn(new, current)`` under `name` (None removes it).

        `new` is the revision about to be saved (with ``_id``, ``_rev``, maybe
        ``_deleted``), `current` the revision it replaces or None. Returning True (or
        None) accepts; returning False rejects with the default message; returning a str
        rejects with that message; raising rejects with the exception's text. The save
        then fails with Forbidden (403). Runs inside the writing transaction: it may read
        through the library but should not write."""
        db = self._db
        key = (id(self), name)
        if fn is None:
            call(C.cbl_collection_set_validator, self._h, enc(name, "name"), VALIDATE_FN(), None)
            db._validators.pop(key, None)
            return

        def trampoline(_context: Any, new_json: bytes, current_json: Optional[bytes],
                       message: int, message_size: int) -> int:
            with CALLBACK_SCOPE:
                try:
                    new = _deep_json.loads(new_json)
                    current = None if current_json is None else _deep_json.loads(current_json)
                    verdict = fn(new, current)
                    if verdict is None or verdict is True:
                        return 1
                    if isinstance(verdict, str):
                        text = verdict
                    elif verdict is False:
                        text = ""
                    else:
                        return 1 if verdict else 0
                except BaseException as exc:
                    text = str(exc) or type(exc).__name__
                try:
                    _write_message(message, message_size, text)
                except BaseException:
                    pass
                return 0

        cfunc = VALIDATE_FN(trampoline)
        call(C.cbl_collection_set_validator, self._h, enc(name, "name"), cfunc, None)
        old = db._validators.get(key)
        if old is not None:
            bury(old[1])  # replaced: a call to it may still be running
        db._validators[key] = (self, cfunc)

    # -- changes -------------------------------------------------------------------------

    def changes(self, since: int = 0, limit: Optional[int] = None, include_docs: bool = False,
                all_revs: bool = False, descending: bool = False, *,
                doc_ids: Optional[List[str]] = None, filter: Optional[str] = None,
                filter_params: Optional[Dict[str, Any]] = None, style: Optional[str] = None) -> Dict[str, Any]:
        """The changes feed after sequence `since`:
        ``{"results": [{"seq", "id", "changes": [{"rev"}], "deleted"?, "doc"?}],
        "last_seq": n}``.

        ``style="all_docs"`` lists every leaf in ``changes`` (as ``all_revs``; "main_only"
        the current revision). ``doc_ids`` keeps only those documents; ``filter`` names a
        filter registered with :meth:`Database.set_filter` (NotFound when none is), given
        ``filter_params``. With doc_ids or a filter, `limit` counts the entries that pass
        and ``last_seq`` is the last sequence examined: resume from it."""
        options: Dict[Any, Any] = {}
        if limit is not None:
            options["limit"] = int(limit)
        if include_docs:
            options["include_docs"] = True
        if all_revs:
            options["all_revs"] = True
        if descending:
            options["descending"] = True
        if style is not None:
            options["style"] = style
        if doc_ids is not None:
            options["doc_ids"] = rev_list(doc_ids, "doc_ids")
        if filter is not None:
            options["filter"] = filter
        if filter_params is not None:
            options["filter_params"] = filter_params
        opts = dumps(options) if options else None
        return call_dict(C.cbl_collection_changes, self._h, int(since), opts)

    def iter_changes(self, since: int = 0, batch: int = 100, include_docs: bool = False,
                     all_revs: bool = False, **options: Any) -> Iterator[Dict[str, Any]]:
        """Iterates over the changes feed after `since`, fetching `batch` entries at a
        time. `options`: ``doc_ids``, ``filter``, ``filter_params``, ``style`` as in
        :meth:`changes`."""
        if batch < 1:
            raise ValueError("batch must be at least 1")
        while True:
            page = self.changes(since, limit=batch, include_docs=include_docs,
                                all_revs=all_revs, **options)
            results = page.get("results", [])
            for entry in results:
                yield entry
            if len(results) < batch:
                return
            since = page.get("last_seq", results[-1]["seq"])

    def add_change_listener(self, fn: Callable[[List[Change]], Any]) -> ListenerToken:
        """Calls ``fn(changes)`` (a list of :class:`Change`) after every committed batch
        of changes of this collection, whichever handle in this process made them."""
        h = self._h
        token = ListenerToken(self._db, fn, "collection change listener")
        return token._register(lambda cfunc: call_handle(
            C.cbl_collection_add_change_listener, h, cfunc, None))

    def add_document_listener(self, doc_id: str, fn: Callable[[List[Change]], Any]) -> ListenerToken:
        """Like :meth:`add_change_listener`, for the changes of one document."""
        h = self._h
        token = ListenerToken(self._db, fn, f"document listener {doc_id!r}")
        return token._register(lambda cfunc: call_handle(
            C.cbl_collection_add_document_listener, h, enc(doc_id, "doc_id"), cfunc, None))
