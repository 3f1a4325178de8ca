"""Attachments: binary content stored beside the database, referred to from documents.

A revision carries named attachments under ``_attachments`` as metadata stubs
(``content_type``, ``digest``, ``length``, ``revpos``, ``stub``); the content lives in the
database's content-addressed store (equal content is stored once). See the "Attachments"
section of include/cblite.h for the rules; in short:

* a body without an ``_attachments`` key keeps the parent revision's attachments (a
  body-only update copies nothing); ``"_attachments": {}`` removes them all;
* a stub must name content the store has (:class:`PreconditionFailed` otherwise);
* compaction deletes content no kept revision refers to;
* stored content is durable when the call returns; stored inside a transaction, it is
  readable and attachable at once on that thread and made durable by the commit, all of
  the transaction's content together, before the documents are committed (an abort
  discards it).

Usage::

    rev = coll.set_attachment("doc", "photo.jpg", b"...", content_type="image/jpeg", rev=rev)
    rev = coll.set_attachment("doc", "movie.mp4", path="/videos/m.mp4", rev=rev)  # streamed
    with coll.open_attachment("doc", "movie.mp4") as f:    # an io.RawIOBase, seekable
        header = f.read(64)
    with db.blob_writer() as w:                            # stream from anywhere
        for chunk in source:
            w.write(chunk)
    rev = coll.set_attachment("doc", "stream.bin", digest=w.digest, rev=rev)

The methods are :class:`cblite.Collection`'s (with default-collection shortcuts and the
content-store calls on :class:`cblite.Database`); this module holds the declarations and
the streaming classes.
"""

from __future__ import annotations

import ctypes
import io
from ctypes import POINTER, byref, c_char, c_char_p, c_int32, c_size_t, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, Optional, Tuple, Union

from . import _lib
from ._lib import C, cbl_error
from ._util import call, call_handle, call_str, check
from .errors import BadRequest

if TYPE_CHECKING:
    from .database import Database

__all__ = ["BlobWriter", "BlobReader", "FUNCTIONS", "Data"]

_ERR = POINTER(cbl_error)
_OUT_STR = POINTER(c_void_p)
_OUT_HANDLE = POINTER(c_void_p)
_H = c_void_p
_S = c_char_p
_STATUS = c_int32

#: The "Attachments" section of include/cblite.h (merged into ``_lib.FUNCTIONS``).
FUNCTIONS: Dict[str, Any] = {
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


def _pointer(data: Data) -> Tuple[Any, int, Any]:
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


class BlobWriter:
    """Streams content into a database's store in chunks (constant memory).

    ``write`` chunks, then ``finish()`` returns the content's digest (``"sha1-..."``) and
    releases the writer; ``cancel()`` abandons it. As a context manager it finishes when
    the block ends normally (the digest is then in :attr:`digest`) and cancels when the
    block raises. Content stored and never attached is deleted by the next compaction.
    """

    def __init__(self, db: "Database") -> None:
        self._handle: Optional[int] = call_handle(C.cbl_blob_writer_create, db._h)
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
        self.digest = call_str(C.cbl_blob_writer_finish, handle)
        return self.digest

    def cancel(self) -> None:
        """Abandons the content (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            C.cbl_blob_writer_cancel(handle)

    def __enter__(self) -> "BlobWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish()
        else:
            self.cancel()

    def __del__(self) -> None:
        try:
            self.cancel()
        except BaseException:
            pass


class BlobReader(io.RawIOBase):
    """A stored attachment as a read-only, seekable binary file (``io.RawIOBase``).

    Reading it from the start to the end checks the content against its digest (the
    read that reaches the end raises InternalError on a mismatch). Wrap it in
    ``io.BufferedReader`` for line reading; close it (or use ``with``) when done."""

    def __init__(self, handle: int) -> None:
        super().__init__()
        self._handle: Optional[int] = handle
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
        """True: the content can be read."""
        return True

    def seekable(self) -> bool:
        """True: :meth:`seek` works."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Reads up to ``len(buffer)`` bytes into it; returns how many (0 at the end)."""
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
        """Moves the read position (``io.SEEK_SET``, ``SEEK_CUR``, ``SEEK_END``)."""
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
        """The read position."""
        return self._pos

    def close(self) -> None:
        """Closes the reader (idempotent)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            C.cbl_blob_reader_close(handle)
        super().close()

    def __del__(self) -> None:
        try:
            self.close()
        except BaseException:
            pass




def store_stream(db: "Database", stream: BinaryIO) -> str:
    """Stores a binary file object's content in chunks; returns its digest."""
    with BlobWriter(db) as w:
        while True:
            chunk = stream.read(_CHUNK)
            if not chunk:
                break
            w.write(chunk)
    assert w.digest is not None
    return w.digest
