import os
import subprocess
import tempfile

import pytest


@pytest.fixture
def cli():
    """The `cblite` tool under test ($CBLITE_BIN, as the listener tests take it)."""
    path = os.environ.get("CBLITE_BIN")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set CBLITE_BIN to the cblite tool (make test-discovery does)")
    return path


@pytest.fixture
def tmp():
    with tempfile.TemporaryDirectory(prefix="cblite-disc-") as d:
        yield d


def put(cli, directory, db, doc_id, body, runner=subprocess.run):
    r = runner([cli, "put", "--dir", directory, "--create", db, doc_id, body])
    assert r.returncode == 0, r.stderr
