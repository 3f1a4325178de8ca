"""Views (map/reduce), query options and a live query.

    python3 examples/python/views.py [directory]
"""

import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List

import cblite


def by_genre(doc: Dict[str, Any], emit: Callable[..., None]) -> None:
    if doc.get("type") == "track":
        emit([doc["genre"], doc["artist"]], doc["seconds"])


def main(directory: str) -> None:
    with cblite.Database("music", directory) as db:
        db.put_many([
            {"type": "track", "genre": "jazz", "artist": "miles", "seconds": 300},
            {"type": "track", "genre": "jazz", "artist": "coltrane", "seconds": 420},
            {"type": "track", "genre": "rock", "artist": "queen", "seconds": 200},
        ])
        tracks = db.view("tracks")
        version = tracks.set_map_reduce(by_genre, reduce="_sum")  # version from the code
        print("view version", version)

        # grouped totals per genre
        for row in tracks.query(group_level=1):
            print("genre", row.key, "seconds", row.value)
        # map rows only, a key range, newest first, with documents
        for row in tracks.rows(reduce=False, startkey=["jazz"], endkey=["jazz", {}],
                               descending=False, include_docs=True, limit=10):
            assert row.doc is not None
            print(row.key, row.doc_id, row.doc["seconds"])
        print("all docs:", [r["id"] for r in db.all_docs(limit=5)["rows"]])

        # a live query calls back with the new rows after each relevant change
        seen: List[int] = []
        changed = threading.Event()

        def on_rows(rows: List[cblite.Row]) -> None:
            seen.append(len(rows))
            changed.set()

        with tracks.live_query(on_rows, reduce=False) as live:
            live.wait_idle()
            db.put({"type": "track", "genre": "pop", "artist": "abba", "seconds": 180})
            live.wait_idle()
        print("live query results:", seen)
        assert seen[-1] == 4
        tracks.release()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
