"""Reading a stored attachment as a file: :class:`BlobReader` (see
:mod:`cblite.attachments`)."""

from __future__ import annotations

import io
from ctypes import byref, c_char, c_size_t, c_uint64
from typing import Any, Optional

from ._lib import C, cbl_error
from ._util import call, check

__all__ = ["BlobReader"]


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
