"""A real full disk, through libcblite.so (the C ABI, by the Python bindings) and its
listener: a small tmpfs mounted by the tests. Mounting needs root; CI runs as root
(CI=true), and there not being able to mount fails instead of skipping.
CBLITE_LIBRARY names the library (default build/lib)."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))
os.environ.setdefault("CBLITE_LIBRARY", os.path.join(REPO, "build", "lib", "libcblite.so.1"))


def _cannot(why):
    if os.environ.get("CI") == "true":
        pytest.fail("the disk-full tests must mount a tmpfs in CI: %s" % why, pytrace=False)
    pytest.skip("the disk-full tests mount a tmpfs: %s" % why)


@pytest.fixture
def small_disk(tmp_path):
    """A mounted tmpfs of 3 MiB; returns its path (unmounted afterwards)."""
    if os.geteuid() != 0:
        _cannot("not root")
    path = tmp_path / "disk"
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        _cannot("mount failed: " + r.stderr.strip())
    yield str(path)
    subprocess.run(["umount", "-l", str(path)], check=False)


def fill(path, leave_bytes):
    """Writes a file taking all of the file system's free space but `leave_bytes`."""
    st = os.statvfs(os.path.dirname(path))
    size = max(0, st.f_bavail * st.f_frsize - leave_bytes)
    with open(path, "wb") as f:
        chunk = b"\x55" * 65536
        while size > 0:
            size -= f.write(chunk[:min(size, len(chunk))])
