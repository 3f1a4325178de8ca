"""Exceptions raised by cblite, one class per status code of the C library."""

from __future__ import annotations

__all__ = [
    "CBLiteError", "BadRequest", "Unauthorized", "Forbidden", "NotFound",
    "NotAcceptable", "Conflict", "PreconditionFailed", "InternalError",
    "NotImplemented_", "Busy", "DatabaseDamaged", "error_for_status", "STATUS_CLASSES",
]


class CBLiteError(Exception):
    """An error reported by libcblite.

    Attributes:
        code: the cbl_status (an HTTP-like number such as 404).
        message: the library's human-readable message.
        detail: the underlying engine code (SQLite extended result code) or 0.
    """

    code: int = 0

    def __init__(self, message: str = "", code: int | None = None, detail: int = 0):
        if code is not None:
            self.code = code
        self.message = message
        self.detail = detail
        super().__init__(message)

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}" if self.message else f"[{self.code}]"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


class BadRequest(CBLiteError, ValueError):
    """400: invalid argument (NULL, bad UTF-8/JSON, bad name, invalid or closed handle)."""
    code = 400


class Unauthorized(CBLiteError):
    """401: wrong or missing credentials / encryption key."""
    code = 401


class Forbidden(CBLiteError):
    """403: rejected by a validator (the message is the validator's)."""
    code = 403


class NotFound(CBLiteError, KeyError):
    """404: no such database, collection, document or revision.

    Also a :class:`KeyError`, so ``except KeyError`` works for mapping-style access.
    """
    code = 404

    __str__ = CBLiteError.__str__


class NotAcceptable(CBLiteError):
    """406: not possible in the current state (e.g. close with an open transaction)."""
    code = 406


class Conflict(CBLiteError):
    """409: revision conflict (stale parent revision, or the document exists)."""
    code = 409


class PreconditionFailed(CBLiteError):
    """412: already exists (database, collection)."""
    code = 412


class InternalError(CBLiteError):
    """500: storage failure or an unexpected condition."""
    code = 500


class DatabaseDamaged(InternalError):
    """500 with detail CBL_DETAIL_NOT_A_DATABASE or CBL_DETAIL_CORRUPT: the file is not a
    database, is damaged, or is empty or missing in an existing bundle (not Unauthorized:
    an encrypted database without its key raises that)."""

    DETAILS = (26, 11)


class NotImplemented_(CBLiteError, NotImplementedError):
    """501: feature not available in this build (exported as ``cblite.NotImplemented``)."""
    code = 501


class Busy(CBLiteError):
    """503: the database stayed locked longer than the busy timeout."""
    code = 503


class InsufficientStorage(CBLiteError):
    """507: the disk (or the quota) is full. Nothing of the failed call was written,
    everything acknowledged before stays, and the same handle writes again once space
    is freed."""
    code = 507


STATUS_CLASSES = {
    cls.code: cls for cls in (BadRequest, Unauthorized, Forbidden, NotFound, NotAcceptable,
                              Conflict, PreconditionFailed, InternalError, NotImplemented_,
                              Busy, InsufficientStorage)
}


def error_for_status(code: int, message: str = "", detail: int = 0) -> CBLiteError:
    """Builds the exception instance matching a status code."""
    if code == InternalError.code and (detail & 0xFF) in DatabaseDamaged.DETAILS:
        return DatabaseDamaged(message, detail=detail)
    cls = STATUS_CLASSES.get(code)
    if cls is None:
        return CBLiteError(message, code=code, detail=detail)
    return cls(message, detail=detail)
