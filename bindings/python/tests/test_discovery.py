"""Peer discovery through the bindings without an Avahi daemon: clear errors, nothing
else affected. (With daemons, in network namespaces: Tests/discovery, make test-discovery.)"""

import asyncio
import os

import pytest

import cblite
from cblite import aio


@pytest.fixture(autouse=True)
def no_bus(monkeypatch):
    # A system bus nobody listens on: no Avahi daemon can be reached.
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/cblite-no-bus")


def test_browser_without_daemon_raises_busy():
    with pytest.raises(cblite.Busy, match="avahi-daemon"):
        cblite.PeerBrowser()
    with pytest.raises(cblite.BadRequest):
        cblite.PeerBrowser("not-a-type")


def test_async_iterator_without_daemon_raises_busy():
    async def first():
        async for event in aio.peer_events():
            return event
    with pytest.raises(cblite.Busy):
        asyncio.run(first())


def test_server_with_advertise_raises_busy_and_runs_without(tmp_path):
    with pytest.raises(cblite.Busy, match="not reachable"):
        cblite.Server(directory=str(tmp_path), advertise={"name": "tablet"})
    with pytest.raises(cblite.BadRequest, match="advertise"):
        cblite.Server(directory=str(tmp_path), advertise={"name": "tablet", "kind": "x"})
    with cblite.Server(directory=str(tmp_path)) as server:
        assert server.advertisement is None
        assert server.port > 0


def test_peer_event_shape():
    event = cblite.PeerEvent("disappeared", {"name": "x", "type": "_couchdb._tcp", "domain": "local"})
    kind, peer = event
    assert kind == "disappeared" and peer["name"] == "x"
