"""Prints the events of the peer NAME as JSON lines: "appeared", then "disappeared" (exit
0), through cblite.PeerBrowser's iterator, or with --aio through aio.peer_events() (exits
after "appeared"). Exit 1 when nothing comes within 30 s. Run in a namespace by test_dnssd."""

import asyncio
import json
import sys

import cblite
from cblite import aio


def show(event):
    print(json.dumps({"kind": event.kind, "peer": event.peer}), flush=True)


def threaded(name):
    with cblite.PeerBrowser() as browser:
        for event in browser.events(timeout=30):
            if event.peer.get("name") == name and event.kind in ("appeared", "disappeared"):
                show(event)
                if event.kind == "disappeared":
                    return 0
    return 1


async def asynchronous(name):
    async def first():
        async for event in aio.peer_events():
            if event.kind == "appeared" and event.peer["name"] == name:
                show(event)
                return 0
        return 1
    return await asyncio.wait_for(first(), timeout=30)


if __name__ == "__main__":
    if sys.argv[1] == "--aio":
        sys.exit(asyncio.run(asynchronous(sys.argv[2])))
    sys.exit(threaded(sys.argv[1]))
