"""Serves a database with cblite.Server(advertise=...), prints the advertisement as JSON
once established, and stops when stdin closes. Run in a namespace by test_dnssd."""

import json
import os
import sys
import time

import cblite

name, directory = sys.argv[1], sys.argv[2]
served = os.path.join(directory, "py")
db = cblite.Database("pydb", served)
db.close()
with cblite.Server(directory=served, host="0.0.0.0", allow_remote_without_auth=True, advertise={"name": name}) as server:
    deadline = time.monotonic() + 30
    while server.advertisement["state"] == "registering" and time.monotonic() < deadline:
        time.sleep(0.05)
    print(json.dumps(server.advertisement), flush=True)
    sys.stdin.read()
