"""Documents: save, read, update, bulk writes, transactions, the changes feed.

    python3 examples/python/documents.py [directory]
"""

import sys
import tempfile
from typing import Any, Dict

import cblite


def main(directory: str) -> None:
    with cblite.Database("notes", directory) as db:
        note: Dict[str, Any] = {"title": "shopping", "items": ["milk"]}
        doc_id, rev = db.put(note)                 # an ID is generated; note gets _id/_rev
        assert note["_rev"] == rev

        note["items"].append("eggs")               # change the dict and save it again
        db.put(note)
        print("saved", doc_id, "as", note["_rev"])

        try:
            db.put({"title": "stale"}, doc_id, parent_rev=rev)
        except cblite.Conflict as e:               # 409: rev is no longer current
            print("conflict:", e.message)

        # read-modify-write, retried on conflict
        db.update(doc_id, lambda d: None if d is None else {**d, "items": d["items"] + ["bread"]})
        print("items:", db[doc_id]["items"])
        print("missing:", db.get("nope", None))

        # bulk: one transaction, a result per document
        results = db.put_many([{"_id": f"task-{i}", "done": False} for i in range(3)])
        print("bulk:", [r["ok"] for r in results])
        results = db.update_many(["task-0", "task-1"], lambda d: {**(d or {}), "done": True})
        print("updated:", [r.get("rev") for r in results])

        with db.transaction():                     # one notification batch at commit
            db.put({"n": 1}, "one")
            db.put({"n": 2}, "two")

        for key, doc in db.items():                # live documents in ID order
            print(key, {k: v for k, v in doc.items() if not k.startswith("_")})

        for change in db.iter_changes(since=0):
            print("change", change["seq"], change["id"])
        assert db.count == 6


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
