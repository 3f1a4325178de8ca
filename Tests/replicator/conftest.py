"""The replicator against a CouchDB 3.5 peer made of recorded answers (couchdb_replay.py),
through the Python bindings (CBLITE_LIBRARY names the library; default build/lib).

COUCHDB_RECORDINGS names the folder of recordings (default: ../shared/couchdb-3.5 beside
the repository).
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CBLITE_LIBRARY", os.path.join(REPO, "build", "lib", "libcblite.so.1"))


def recordings_dir():
    explicit = os.environ.get("COUCHDB_RECORDINGS")
    if explicit:
        return explicit
    for parent in (os.path.dirname(REPO), os.path.dirname(os.path.dirname(REPO))):
        candidate = os.path.join(parent, "shared", "couchdb-3.5")
        if os.path.isdir(candidate):
            return candidate
    pytest.skip("CouchDB recordings not found (set COUCHDB_RECORDINGS)")


@pytest.fixture
def recordings():
    return recordings_dir()
