"""Attachments: binary content stored beside the database, referred to from documents.

A revision carries named attachments under ``_attachments`` as metadata stubs
(``content_type``, ``digest``, ``length``, ``revpos``, ``stub``); the content lives in the
database's content-addressed store (equal content is stored once). See the "Attachments"
section of include/cblite.h for the rules; in short:

* a body without an ``_attachments`` key keeps the parent revision's attachments (a
  body-only update copies nothing); ``"_attachments": {}`` removes them all;
* a stub must name content the store has (:class:`PreconditionFailed` otherwise);
* compaction deletes content no kept revision refers to.

Usage::

    rev = coll.set_attachment("doc", "photo.jpg", b"...", content_type="image/jpeg", rev=rev)
    rev = coll.set_attachment("doc", "movie.mp4", path="/videos/m.mp4", rev=rev)  # streamed
    with coll.open_attachment("doc", "movie.mp4") as f:    # an io.RawIOBase, seekable
        header = f.read(64)
    with db.blob_writer() as w:                            # stream from anywhere
        for chunk in source:
            w.write(chunk)
    rev = coll.set_attachment("doc", "stream.bin", digest=w.digest, rev=rev)

This module adds the methods to :class:`cblite.Collection` (and default-collection
shortcuts plus the content-store calls to :class:`cblite.Database`) when imported; the
package imports it.
"""

from __future__ import annotations

import ctypes
import io
import os
from ctypes import POINTER, byref, c_char, c_char_p, c_int32, c_size_t, c_uint64, c_void_p
from typing import BinaryIO, Optional, Union

from . import _lib
from ._lib import C, cbl_error, enc, take_string
from ._util import call, call_handle, call_json, check
from .database import Collection, Database
from .errors import BadRequest

__all__ = ["BlobWriter", "BlobReader", "FUNCTIONS"]

_ERR = POINTER(cbl_error)
_OUT_STR = POINTER(c_void_p)
_OUT_HANDLE = POINTER(c_void_p)
_H = c_void_p
_S = c_char_p
_STATUS = c_int32

#: The "Attachments" section of include/cblite.h (merged into ``_lib.FUNCTIONS``).
FUNCTIONS = {
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


_lib.declare(FUNCTIONS)

_CHUNK = 1 << 20
Data = Union[bytes, bytearray, memoryview]


def _pointer(data: Data):
    """(pointer argument, length, keep-alive) for bytes-like data, without copying when
    the buffer allows it."""
    if isinstance(data, bytes):
        return data, len(data), data
    view = memoryview(data).cast("B")
    n = view.nbytes
    if n == 0:
        return None, 0, None
    if not view.readonly:
        arr = (c_char * n).from_buffer(view)
        return ctypes.addressof(arr), n, arr
    b = view.tobytes()
    return b, n, b


def _digest_call(fn, *args) -> str:
    out = c_void_p()
    err = cbl_error()
    status = fn(*args, byref(out), byref(err))
    digest = take_string(out)
    check(status, err)
    return digest


class BlobWriter:
    """Streams content into a database's store in chunks (constant memory).

    ``write`` chunks, then ``finish()`` returns the content's digest (``"sha1-..."``) and
    releases the writer; ``cancel()`` abandons it. As a context manager it finishes when
    the block ends normally (the digest is then in :attr:`digest`) and cancels when the
    block raises. Content stored and never attached is deleted by the next compaction.
    """

    def __init__(self, db: Database):
        self._handle = call_handle(C.cbl_blob_writer_create, db._h)
        self.digest: Optional[str] = None
        self.length = 0

    def write(self, data: Data) -> int:
        """Appends bytes; returns how many."""
        if self._handle is None:
            raise BadRequest("the blob writer is finished or cancelled")
        ptr, n, _keep = _pointer(data)
        call(C.cbl_blob_writer_write, self._handle, ptr, n)
        self.length += n
        return n

    def finish(self) -> str:
        """Makes the content visible in the store; returns its digest."""
        if self._handle is None:
            if self.digest is not None:
                return self.digest
            raise BadRequest("the blob writer is cancelled")
        handle, self._handle = self._handle, None
        self.digest = _digest_call(C.cbl_blob_writer_finish, handle)
        return self.digest

    def cancel(self) -> None:
        """Abandons the content (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_blob_writer_cancel(handle)

    def __enter__(self) -> "BlobWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.finish()
        else:
            self.cancel()
        return False

    def __del__(self):
        try:
            self.cancel()
        except BaseException:
            pass


class BlobReader(io.RawIOBase):
    """A stored attachment as a read-only, seekable binary file (``io.RawIOBase``).

    Reading it from the start to the end checks the content against its digest (the
    read that reaches the end raises InternalError on a mismatch). Wrap it in
    ``io.BufferedReader`` for line reading; close it (or use ``with``) when done."""

    def __init__(self, handle: int):
        super().__init__()
        self._handle = handle
        length = c_uint64()
        err = cbl_error()
        check(C.cbl_blob_reader_length(handle, byref(length), byref(err)), err)
        self._length = length.value
        self._pos = 0

    @property
    def length(self) -> int:
        """The content's length in bytes."""
        return self._length

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._handle is None:
            raise ValueError("I/O operation on closed attachment reader")
        view = memoryview(buffer).cast("B")
        if view.nbytes == 0:
            return 0
        arr = (c_char * view.nbytes).from_buffer(view)
        got = c_size_t()
        err = cbl_error()
        check(C.cbl_blob_reader_read(self._handle, arr, view.nbytes, byref(got), byref(err)), err)
        self._pos += got.value
        return got.value

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if self._handle is None:
            raise ValueError("I/O operation on closed attachment reader")
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        target = base + offset
        if target < 0:
            raise ValueError("negative seek position")
        call(C.cbl_blob_reader_seek, self._handle, target)
        self._pos = target
        return target

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            C.cbl_blob_reader_close(handle)
        super().close()

    def __del__(self):
        try:
            self.close()
        except BaseException:
            pass


# -- content store (Database) ---------------------------------------------------------------

def blob_writer(self: Database) -> BlobWriter:
    """A :class:`BlobWriter` on this database's store."""
    return BlobWriter(self)


def put_blob(self: Database, data: Data) -> str:
    """Stores bytes; returns their digest."""
    ptr, n, _keep = _pointer(data)
    return _digest_call(C.cbl_db_blob_put, self._h, ptr, n)


def import_blob(self: Database, path: Union[str, os.PathLike]) -> str:
    """Stores a copy of a file (streamed); returns its digest."""
    return _digest_call(C.cbl_db_blob_import_file, self._h, enc(path))


def blob_length(self: Database, digest: str) -> int:
    """The length of stored content (NotFound when the store does not have it)."""
    out = c_uint64()
    err = cbl_error()
    check(C.cbl_db_blob_length(self._h, enc(digest), byref(out), byref(err)), err)
    return out.value


def _store_stream(db: Database, stream: BinaryIO) -> str:
    with BlobWriter(db) as w:
        while True:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            w.write(chunk)
    return w.digest


# -- attachments of documents (Collection) ------------------------------------------------

def set_attachment(self: Collection, doc_id: str, name: str,
                   data: Union[Data, BinaryIO, None] = None, *, path=None,
                   digest: Optional[str] = None, content_type: Optional[str] = None,
                   rev: Optional[str] = None) -> str:
    """Sets (adds or replaces) attachment `name`, saving a new revision; returns its ID.

    The content is exactly one of: `data` (bytes-like, or a binary file object, read in
    chunks), `path` (a file, streamed) or `digest` (content already in the store, e.g.
    from a :class:`BlobWriter`). `rev` is the current revision; None creates the
    document (empty body) when it does not exist. `content_type` None keeps the previous
    type of that name, else ``application/octet-stream``."""
    given = [x is not None for x in (data, path, digest)]
    if sum(given) != 1:
        raise TypeError("give exactly one of data, path or digest")
    db = self._db
    if path is not None:
        digest = import_blob(db, path)
    elif data is not None:
        if hasattr(data, "read"):
            digest = _store_stream(db, data)
        else:
            digest = put_blob(db, data)
    out = c_void_p()
    err = cbl_error()
    status = C.cbl_doc_set_attachment(self._h, enc(doc_id), enc(rev), enc(name),
                                      enc(content_type), enc(digest), byref(out), byref(err))
    new_rev = take_string(out)
    check(status, err)
    return new_rev


def remove_attachment(self: Collection, doc_id: str, name: str,
                      rev: Optional[str] = None) -> str:
    """Removes attachment `name` (NotFound when absent), saving a new revision on `rev`
    (None: the current one); returns its ID."""
    out = c_void_p()
    err = cbl_error()
    status = C.cbl_doc_remove_attachment(self._h, enc(doc_id), enc(rev), enc(name),
                                         byref(out), byref(err))
    new_rev = take_string(out)
    check(status, err)
    return new_rev


def attachment_names(self: Collection, doc_id: str) -> "list[str]":
    """The attachment names of the current revision, sorted."""
    return call_json(C.cbl_doc_attachment_names, self._h, enc(doc_id))


def attachments(self: Collection, doc_id: str) -> dict:
    """The ``_attachments`` stubs of the current revision ({} when none)."""
    return self.get(doc_id).get("_attachments", {})


def get_attachment(self: Collection, doc_id: str, name: str) -> bytes:
    """The whole content of an attachment (checked against its digest)."""
    ptr = c_void_p()
    n = c_size_t()
    err = cbl_error()
    status = C.cbl_doc_get_attachment(self._h, enc(doc_id), enc(name), byref(ptr), byref(n),
                                      byref(err))
    try:
        check(status, err)
        return ctypes.string_at(ptr.value, n.value) if n.value else b""
    finally:
        if ptr.value:
            _lib.lib.cbl_free(ptr.value)


def save_attachment(self: Collection, doc_id: str, name: str,
                    path: Union[str, os.PathLike]) -> None:
    """Writes an attachment to the file `path` (streamed; `path` never holds partial
    content)."""
    call(C.cbl_doc_save_attachment_to_file, self._h, enc(doc_id), enc(name), enc(path))


def open_attachment(self: Collection, doc_id: str, name: str) -> BlobReader:
    """A :class:`BlobReader` on an attachment of the current revision."""
    return BlobReader(call_handle(C.cbl_doc_open_attachment, self._h, enc(doc_id), enc(name)))


_COLLECTION_METHODS = (set_attachment, remove_attachment, attachment_names, attachments,
                       get_attachment, save_attachment, open_attachment)

for _fn in _COLLECTION_METHODS:
    setattr(Collection, _fn.__name__, _fn)


def _default_collection_shortcut(fn):
    def method(self: Database, *args, **kwargs):
        return fn(self.default_collection, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = f"Same as ``default_collection.{fn.__name__}``."
    return method


for _fn in _COLLECTION_METHODS:
    setattr(Database, _fn.__name__, _default_collection_shortcut(_fn))
for _fn in (blob_writer, put_blob, import_blob, blob_length):
    setattr(Database, _fn.__name__, _fn)
