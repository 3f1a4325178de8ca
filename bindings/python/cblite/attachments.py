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
content-store calls on :class:`cblite.Database`); the streaming classes are
:class:`BlobWriter` (``blob_writer``) and :class:`BlobReader` (``blob_reader``).
"""

from __future__ import annotations

from ._lib import ATTACHMENT_FUNCTIONS
from .blob_reader import BlobReader
from .blob_writer import BlobWriter, Data

__all__ = ["BlobWriter", "BlobReader", "FUNCTIONS", "Data"]

#: The "Attachments" section of include/cblite.h (declared in ``_lib``).
FUNCTIONS = ATTACHMENT_FUNCTIONS
