"""Two peers in one script: one serves its database, the other replicates with it.

    python3 examples/python/replication.py [directory]
"""

import os
import sys
import tempfile

import cblite


def main(directory: str) -> None:
    with cblite.Database("notes", os.path.join(directory, "a")) as a, \
            cblite.Database("notes", os.path.join(directory, "b")) as b, \
            cblite.Server(users={"alice": "secret"}) as server:
        server.serve("notes", a)
        url = server.url + "notes"
        a.put({"title": "from a"}, "a1")
        b.put({"title": "from b"}, "b1")

        with b.replicate(url, direction="both", auth=("alice", "secret")) as r:
            r.wait(timeout=60)
            status = r.status()
            print(status["activity"], status["documents_pushed"], status["documents_pulled"])
        assert a["b1"]["title"] == "from b" and b["a1"]["title"] == "from a"


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
