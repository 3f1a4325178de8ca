"""Shared fixtures for the cblite test-suite.

Run: cd bindings/python && CBLITE_LIBRARY=/work/main/build/lib/libcblite.so.1 \
     python3 -m pytest -q tests
"""

import faulthandler
import gc
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
sys.path.insert(0, PKG_ROOT)

import cblite  # noqa: E402

# A hung test (deadlock in a callback) dumps every thread's stack and ends the run
# instead of hanging forever (pytest-timeout is not available here).
TEST_TIMEOUT_S = 120


@pytest.fixture(autouse=True)
def _watchdog():
    faulthandler.dump_traceback_later(TEST_TIMEOUT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def instance_guard(request):
    """Every test must leave cbl_instance_count() where it found it once its handles
    are closed (the fixtures that close them are torn down before this one)."""
    if request.node.get_closest_marker("no_instance_check"):
        yield
        return
    gc.collect()
    start = cblite.instance_count()
    yield
    gc.collect()
    end = cblite.instance_count()
    assert end == start, f"cbl_instance_count leaked: {start} before, {end} after the test"


def pytest_configure(config):
    config.addinivalue_line("markers", "no_instance_check: skip the instance-count guard")


@pytest.fixture
def dbdir(tmp_path):
    d = tmp_path / "dbs"
    d.mkdir()
    return str(d)


@pytest.fixture
def db(dbdir):
    database = cblite.Database("testdb", dbdir)
    yield database
    database.close()


@pytest.fixture
def coll(db):
    return db.default_collection
