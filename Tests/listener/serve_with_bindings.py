"""`cblite serve` through libcblite.so: the listener as users embed it (cblite.Server of the
Python bindings), behind the command line and output of `cblite serve`, so that the outside
suites run unchanged against it (conftest.py starts it when CBLITE_SERVE names this script).

Takes the `cblite serve` options the suites use: --dir, --host, --port, --user NAME (the
password in CBLITE_PASSWORD), --read-only, --tls-anonymous. Prints "cblite listening on <url>" (and the TLS
certificate's SHA-256), serves until SIGINT or SIGTERM, then stops as `cblite serve` does
(requests in flight get 5 s) and prints "cblite stopped". CBLITE_LIBRARY names the library.
"""
import argparse
import os
import signal
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bindings", "python"))

import cblite  # noqa: E402


def configuration(argv):
    p = argparse.ArgumentParser(prog="serve_with_bindings.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--host")
    p.add_argument("--port", type=int, default=5984)
    p.add_argument("--user")
    p.add_argument("--read-only", action="store_true")
    p.add_argument("--tls-anonymous", action="store_true")
    a = p.parse_args(argv)
    config = {"directory": a.dir, "port": a.port}
    if a.host:
        config["host"] = a.host
    if a.user:
        if not os.environ.get("CBLITE_PASSWORD"):
            p.error("--user takes the password from CBLITE_PASSWORD")
        config["users"] = {a.user: os.environ["CBLITE_PASSWORD"]}
    if a.read_only:
        config["read_only"] = True
    if a.tls_anonymous:
        config["tls"] = {"anonymous": True}
    return config


def main(argv):
    config = configuration(argv)
    # Blocked before the library starts its threads, so that only sigwait receives them.
    signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    server = cblite.Server(config)
    print("cblite listening on " + server.url, flush=True)
    if server.tls_fingerprint:
        print("TLS certificate SHA-256: " + server.tls_fingerprint, flush=True)
    signal.sigwait(signals)
    server.stop(timeout=5.0)
    print("cblite stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
