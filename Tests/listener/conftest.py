"""Starts `cblite serve` as a subprocess on port 0 and talks to it over real sockets.

CBLITE_BIN names the binary (default: build/bin/cblite of this repository, which
`make cli` builds). CBLITE_SERVE, when set, is the command that replaces `$CBLITE_BIN serve`
(listener.mk sets it to serve_with_bindings.py: the same listener through libcblite.so).
COUCHDB_RECORDINGS names the folder of CouchDB 3.5 recordings (default: the repository's
Tests/Fixtures/couchdb-3.5); a missing recording fails the test that reads it.
"""
import hashlib
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CBLITE_BIN") or os.path.join(REPO, "build", "bin", "cblite")
SERVE = shlex.split(os.environ["CBLITE_SERVE"]) if os.environ.get("CBLITE_SERVE") else [BIN, "serve"]
RECORDINGS = os.environ.get("COUCHDB_RECORDINGS") or os.path.join(REPO, "Tests", "Fixtures", "couchdb-3.5")


def recording(name):
    """The exchanges of one recording file, in order; fails when it is missing (a skip
    would pass without checking anything)."""
    path = os.path.join(RECORDINGS, name)
    if not os.path.isfile(path):
        pytest.fail("CouchDB recording missing: %s (Tests/Fixtures/couchdb-3.5 is part of the repository)" % path,
                    pytrace=False)
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class Server:
    """A running `cblite serve`; `stop()` sends SIGTERM and checks the clean exit."""

    def __init__(self, directory, *args, env=None):
        self.directory = directory
        args, env = Server.password_from_env(list(args), dict(os.environ if env is None else env))
        self.proc = subprocess.Popen([*SERVE, "--dir", directory, "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.fingerprint = None
        deadline = time.time() + 30
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("cblite serve exited: " + self.proc.stderr.read())
            m = re.search(r"listening on (https?)://([^:/]+):(\d+)/", line)
            if m:
                self.scheme, self.host, self.port = m.group(1), m.group(2), int(m.group(3))
                break
        else:
            raise RuntimeError("cblite serve printed no URL")
        if self.scheme == "https":
            fp = self.proc.stdout.readline()
            self.fingerprint = fp.strip().rsplit(" ", 1)[-1]

    @staticmethod
    def password_from_env(args, env):
        """The suites' `--user NAME:PASSWORD` as `cblite serve` takes it: `--user NAME`, the
        password in CBLITE_PASSWORD (never on a command line)."""
        for i, a in enumerate(args[:-1]):
            if a == "--user" and ":" in args[i + 1]:
                args[i + 1], env["CBLITE_PASSWORD"] = args[i + 1].split(":", 1)
        return args, env

    @property
    def url(self):
        return "%s://%s:%d/" % (self.scheme, self.host, self.port)

    def connection(self, timeout=30):
        if self.scheme == "https":
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE      # pinned below instead: the identity is self-signed
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=ctx)
            conn.connect()
            der = conn.sock.getpeercert(binary_form=True)
            assert hashlib.sha256(der).hexdigest() == self.fingerprint, "the certificate is not the pinned one"
            return conn
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        """(status, headers dict with lowercase names, body bytes)."""
        own = conn is None
        conn = conn or self.connection()
        h = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        result = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        if own:
            conn.close()
        return result

    def put_streamed(self, path, chunks, size, timeout=120):
        """PUTs `size` bytes handed over piece by piece (never whole in memory), checks the
        201, and returns the open connection for what the test asks next."""
        conn = self.connection(timeout=timeout)
        conn.putrequest("PUT", path)
        conn.putheader("Content-Type", "application/octet-stream")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        for chunk in chunks:
            conn.send(chunk)
        r = conn.getresponse()
        assert r.status == 201, r.read()
        r.read()
        return conn

    def memory_mib(self, field="VmRSS"):
        """The server's resident memory now (VmRSS) or at its peak so far (VmHWM), in MiB."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            return int(next(l for l in f if l.startswith(field)).split()[1]) / 1024

    def json(self, method, path, body=None, headers=None):
        status, h, data = self.request(method, path, body, headers)
        return status, (json.loads(data) if data.strip() else None)

    def stop(self):
        if self.proc.stdout.closed:
            return self.proc.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)
        self.proc.stdout.close()
        err = self.proc.stderr.read()
        self.proc.stderr.close()
        if self.proc.returncode != 0:
            print("cblite serve exited with %s; its stderr:\n%s" % (self.proc.returncode, err))
        return self.proc.returncode


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="cblite-listener-py-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def serve(workdir):
    """serve(*args) -> Server over the test's directory; stopped at the end."""
    servers = []

    def start(*args, directory=None):
        s = Server(directory or workdir, *args)
        servers.append(s)
        return s

    yield start
    codes = []
    for s in servers:
        try:
            codes.append(s.stop())
        except Exception:            # stop every one of them, whatever happens
            if s.proc.poll() is None:
                s.proc.kill()
            raise
    assert codes == [0] * len(codes)


def port_is_free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
