"""Model classes: typed objects mapped to documents (CBLModel).

    python3 examples/python/models.py [directory]
"""

import datetime
import sys
import tempfile
from typing import List, Optional

import cblite
from cblite.models import Model, save_all


class Person(Model):
    doc_type = "person"
    name: str = ""


class Note(Model):
    doc_type = "note"
    title: str = ""
    created: Optional[datetime.datetime] = None
    author: Optional[Person] = None
    tags: List[str] = []


class VoiceNote(Note):
    doc_type = "voice_note"
    seconds: float = 0.0


def main(directory: str) -> None:
    with cblite.Database("notes", directory) as db:
        alice = Person.create(db, name="alice")
        note = Note.create(db, title="hello", author=alice, tags=["a"],
                           created=datetime.datetime.now(datetime.timezone.utc))
        memo = VoiceNote.create(db, "memo-1", title="memo", seconds=12.5, author=alice)
        memo.set_attachment("memo.ogg", b"OggS...", content_type="audio/ogg")
        print("saved", len(save_all(db)), "models")    # one transaction

        same = Model.get(db, "memo-1")     # the factory picks VoiceNote from "type"
        assert same is memo and isinstance(same, VoiceNote)
        print(type(same).__name__, same.title, same.attachment_names())
        print(db[note.doc_id])             # created is ISO-8601 text, author an ID

        note.tags.append("b")
        note.save()
        try:
            note.title = 42                # type: ignore[assignment]
        except cblite.ModelTypeError as e:
            print("refused:", e)
        memo.delete()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
