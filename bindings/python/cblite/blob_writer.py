"""Streaming content into a database's store: :class:`BlobWriter` (see
:mod:`cblite.attachments`)."""

from __future__ import annotations

import ctypes
from ctypes import c_char
from typing import TYPE_CHECKING, Any, BinaryIO, Optional, Tuple, Union

from ._lib import C
from ._util import call, call_handle, call_str
from .errors import BadRequest

if TYPE_CHECKING:  # annotations only: Database sits above this module (it makes writers)
    from .database import Database

__all__ = ["BlobWriter", "Data", "store_stream"]

_CHUNK = 1 << 20
#: Bytes-like content.
Data = Union[bytes, bytearray, memoryview]


def data_pointer(data: Data) -> Tuple[Any, int, Any]:
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
        ptr, n, _keep = data_pointer(data)
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
