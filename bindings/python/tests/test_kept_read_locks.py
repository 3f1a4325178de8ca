"""Reads in a run keep their write-ahead log read lock between transactions while no other
process has the database open: the system shows the lock held after a run, released once
reads stop, and never kept while another process has the database open. Read from
/proc/locks: this process's locks on the -shm file's read-mark bytes (123..127); every
process attached to the file holds byte 128."""

import os
import subprocess
import sys
import time

import cblite
from helpers import eventually

HOLDER = """
import os, sys, time, cblite
with cblite.Database(sys.argv[1], sys.argv[2], create=False) as db:
    db.get("d1")
    print("open", flush=True)
    sys.stdin.readline()
"""


def _locks(shm, pid, first, last):
    ino = os.stat(shm).st_ino
    n = 0
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "->" in fields or len(fields) < 8 or fields[1] != "POSIX":
                continue
            start, end = int(fields[6]), fields[7]
            stop = float("inf") if end == "EOF" else int(end)
            if int(fields[4]) == pid and int(fields[5].rsplit(":", 1)[1]) == ino and start <= last and stop >= first:
                n += 1
    return n


def _read_marks(shm):
    return _locks(shm, os.getpid(), 123, 127)


def _read_run(db, reads=300):
    for i in range(reads):
        assert db[f"d{i % 100}"]["n"] == i % 100


def _read_run_keeps_a_lock(db, shm):
    """Runs of reads (five at most) until one ends with its lock kept: a run that a loaded
    machine pauses for longer than the run's window releases its lock, as it should."""
    for _ in range(5):
        _read_run(db)
        if _read_marks(shm) == 1:
            return True
    return False


def test_a_run_of_reads_keeps_its_lock_only_while_alone(dbdir):
    with cblite.Database("kept", dbdir) as db:
        with db.transaction():
            for i in range(100):
                db.put({"n": i}, f"d{i}")
        shm = os.path.join(db.path, "db.sqlite3-shm")
        assert eventually(lambda: _read_marks(shm) == 0)

        assert _read_run_keeps_a_lock(db, shm), "kept for the next read"
        assert eventually(lambda: _read_marks(shm) == 0), "released once reads stop"

        env = dict(os.environ)
        env["PYTHONPATH"] = os.path.dirname(os.path.dirname(cblite.__file__)) + os.pathsep + env.get("PYTHONPATH", "")
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, "kept", dbdir], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "open"
            assert _locks(shm, holder.pid, 128, 128) == 1, "the other process is attached"
            time.sleep(0.05)                      # past the period a check of other processes holds
            _read_run(db)
            assert _read_marks(shm) == 0, "nothing kept beside another process"
        finally:
            holder.stdin.write("\n")
            holder.stdin.close()
            assert holder.wait(timeout=30) == 0

        time.sleep(0.05)
        assert _read_run_keeps_a_lock(db, shm), "alone again: kept again"
        assert eventually(lambda: _read_marks(shm) == 0)
