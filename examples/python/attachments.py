"""Attachments and the content store (blobs).

    python3 examples/python/attachments.py [directory]
"""

import io
import os
import sys
import tempfile

import cblite


def main(directory: str) -> None:
    with cblite.Database("photos", directory) as db:
        db.put({"title": "holiday"}, "album")
        db.set_attachment("album", "cover.jpg", b"\xff\xd8 fake jpeg", content_type="image/jpeg")
        db.set_attachment("album", "notes.txt", io.BytesIO(b"streamed from a file object"))
        print(db.attachment_names("album"), db.attachments("album")["cover.jpg"]["digest"])

        # large content: stream it in chunks into the store, then attach it by digest
        with db.blob_writer() as writer:
            for _ in range(4):
                writer.write(os.urandom(64 * 1024))
        assert writer.digest is not None
        db.set_attachment("album", "raw.bin", digest=writer.digest)

        # read back: all at once, or as a seekable file
        print(db.get_attachment("album", "notes.txt"))
        with db.open_attachment("album", "raw.bin") as f:
            f.seek(-16, io.SEEK_END)
            print("tail", len(f.read()), "of", f.length)

        db.remove_attachment("album", "notes.txt")   # the current revision by default
        print(db.attachment_names("album"))
        db.compact()                                  # drops content nothing refers to


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
