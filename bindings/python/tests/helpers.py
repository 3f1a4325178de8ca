"""Helpers shared by the tests."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)


def run_isolated(code: str, timeout: float = 60, env_extra=None):
    """Runs Python code in a fresh interpreter (with cblite importable); returns the
    CompletedProcess. Used for things that would crash or pollute this process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if env_extra:
        env.update(env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def run_with_timeout(fn, timeout: float = 30):
    """Runs fn() on a thread; fails the test (instead of hanging) if it does not finish."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            box["exc"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        pytest.fail(f"operation did not finish within {timeout}s (deadlock?)")
    if "exc" in box:
        raise box["exc"]
    return box.get("result")


def strip_meta(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("_id", "_rev")}


def eventually(predicate, timeout: float = 5.0, interval: float = 0.01):
    """Polls predicate() every `interval` seconds until it is true or `timeout` passes;
    returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
