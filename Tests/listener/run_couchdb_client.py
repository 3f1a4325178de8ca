"""Runs the test suite of the PyPI `CouchDB` client (version 1.2, couchdb/tests) against
`cblite serve`, and compares its failures with the expected ones listed, each with its
reason, in couchdb_client_expected_failures.txt. Exits 1 on an unexpected failure.

Usage: python3 run_couchdb_client.py   (CBLITE_BIN names the binary, or CBLITE_SERVE the
command that replaces `cblite serve`, as in conftest.py; the package is installed with pip
when missing.)
"""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from conftest import Server  # noqa: E402


def expected_failures():
    out = {}
    with open(os.path.join(HERE, "couchdb_client_expected_failures.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, _, reason = line.partition(" ")
                out[name] = reason.strip()
    return out


def main():
    if importlib.util.find_spec("couchdb") is None:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "CouchDB==1.2"])
    directory = tempfile.mkdtemp(prefix="cblite-couchdb-client-")
    server = Server(directory)
    os.environ["COUCHDB_URL"] = server.url
    try:
        from couchdb.tests import (client, couch_tests, couchhttp, design, loader, mapping,
                                   multipart, tools, view)
        suite = unittest.TestSuite()
        for mod in (client, design, couchhttp, multipart, mapping, view, couch_tests, tools, loader):
            suite.addTest(mod.suite())
        result = unittest.TextTestRunner(stream=open(os.devnull, "w"), verbosity=0).run(suite)
    finally:
        server.stop()
    failed = {}
    for test, trace in result.failures + result.errors:
        name = test.id().replace("couchdb.tests.", "")
        failed[name] = trace.strip().splitlines()[-1]
    expected = expected_failures()
    unexpected = {n: why for n, why in failed.items() if n not in expected}
    fixed = sorted(n for n in expected if n not in failed)
    for n, why in sorted(unexpected.items()):
        print("UNEXPECTED FAILURE %s: %s" % (n, why))
    for n in fixed:
        print("now passes (remove from the expected list): %s" % n)
    passed = result.testsRun - len(failed)
    print("couchdb client suite: %d run, %d passing, %d expected failures, %d unexpected failures"
          % (result.testsRun, passed, len(failed) - len(unexpected), len(unexpected)))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
