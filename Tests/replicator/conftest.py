"""The replicator against a CouchDB 3.5 peer made of recorded answers (couchdb_replay.py),
through the Python bindings (CBLITE_LIBRARY names the library; default build/lib).

COUCHDB_RECORDINGS names the folder of recordings (default: the repository's
Tests/Fixtures/couchdb-3.5); when it is missing, every test that reads it fails.
"""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CBLITE_LIBRARY", os.path.join(REPO, "build", "lib", "libcblite.so.1"))
RECORDINGS = os.environ.get("COUCHDB_RECORDINGS") or os.path.join(REPO, "Tests", "Fixtures", "couchdb-3.5")
CBLITE_BIN = os.environ.get("CBLITE_BIN") or os.path.join(REPO, "build", "bin", "cblite")


@pytest.fixture
def recordings():
    # A failure, not a skip: a skip would pass without checking anything.
    if not os.path.isdir(RECORDINGS):
        pytest.fail("CouchDB recordings missing: %s (Tests/Fixtures/couchdb-3.5 is part of the repository)"
                    % RECORDINGS, pytrace=False)
    return RECORDINGS


@pytest.fixture
def cblite_tool():
    """The `cblite` tool (CBLITE_BIN; default build/bin/cblite, made by `make cli`)."""
    if not os.access(CBLITE_BIN, os.X_OK):
        pytest.fail("the cblite tool is missing: %s (make cli)" % CBLITE_BIN, pytrace=False)
    return CBLITE_BIN
