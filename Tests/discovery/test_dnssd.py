"""DNS-SD between two hosts: network namespaces joined by a veth pair, each with its own
system bus and Avahi daemon (netns.Link). One advertises a listener, the other finds it
by name through the tool, the C library and the Python bindings, syncs with it by that
name, and sees it go when the listener stops. Runs as root (CI does); it fails, never
skips, when the namespaces or daemons cannot be set up."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import netns

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(scope="module")
def link():
    with netns.Link() as l:
        yield l


def serve(host, cli, directory, name, *extra):
    """`cblite serve --advertise NAME` on `host`, reachable from the link; returns the
    process and its first JSON line ({"url", "advertised", ...})."""
    config = os.path.join(directory, "listener.json")
    os.makedirs(directory, exist_ok=True)
    with open(config, "w") as f:
        json.dump({"allow_remote_without_auth": True}, f)
    p = host.popen([cli, "serve", "--dir", directory, "--host", "0.0.0.0", "--port", "0", "--config", config,
                    "--advertise", name, "--json", *extra])
    line = p.stdout.readline()
    assert line, p.stderr.read()
    return p, json.loads(line)


def stop(p):
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err


def peers(host, cli, timeout=3):
    r = host.run([cli, "peers", "--json", "--timeout", str(timeout)])
    assert r.returncode == 0, r.stderr
    return {p["name"]: p for p in json.loads(r.stdout)}


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what} within {seconds} s")


def test_advertise_browse_sync_by_name_and_withdraw(link, cli):
    a, b = link.hosts
    served = os.path.join(a.directory, "served")
    r = a.run([cli, "put", "--dir", served, "--create", "notes", "n1", '{"from":"a"}'])
    assert r.returncode == 0, r.stderr
    server, started = serve(a, cli, served, "Kitchen tablet")
    try:
        assert started["advertised"] == "Kitchen tablet"
        port = int(started["url"].rsplit(":", 1)[1].strip("/"))
        found = peers(b, cli)
        p = found["Kitchen tablet"]
        assert p["type"] == "_couchdb._tcp" and p["port"] == port
        assert p["addresses"] == [a.address] and p["url"] == f"http://{a.address}:{port}/"
        assert p["databases"] == ["notes"] and p["tls"] is False and p["host"] == "cblite-a.local"

        # A database created or deleted over HTTP: the TXT record follows.
        def http(method, path):
            code = ("import sys, urllib.request; r = urllib.request.urlopen(urllib.request.Request("
                    "sys.argv[1], method=sys.argv[2])); print(r.status)")
            r = a.run([sys.executable, "-c", code, f"http://127.0.0.1:{port}/{path}", method])
            assert r.returncode == 0, r.stderr
        http("PUT", "recipes")
        wait_for(lambda: peers(b, cli, timeout=1).get("Kitchen tablet", {}).get("databases") == ["notes", "recipes"], 15,
                 "the created database advertised")
        http("DELETE", "recipes")
        wait_for(lambda: peers(b, cli, timeout=1).get("Kitchen tablet", {}).get("databases") == ["notes"], 15,
                 "the deleted database withdrawn from the record")

        # b syncs with a by name: a's document comes, b's goes.
        local = os.path.join(b.directory, "local")
        r = b.run([cli, "put", "--dir", local, "--create", "notes", "n2", '{"from":"b"}'])
        assert r.returncode == 0, r.stderr
        r = b.run([cli, "sync", "--dir", local, "notes", "peer:Kitchen tablet"])
        assert r.returncode == 0, r.stderr
        assert "documents pulled: 1" in r.stdout and "documents pushed: 1" in r.stdout
        r = a.run([cli, "get", "--dir", served, "notes", "n2"])
        assert r.returncode == 0 and '"from":"b"' in r.stdout.replace(" ", "")
        # peer:NAME/DB names the peer's database; an unknown name is a clear 404.
        r = b.run([cli, "pull", "--dir", local, "--create-target", "copy", "peer:Kitchen tablet/notes"])
        assert r.returncode == 0, r.stderr
        r = b.run([cli, "pull", "--dir", local, "notes", "peer:Nobody here"], timeout=60)
        assert r.returncode == 2 and "no peer named" in r.stderr

        # The peers' own callbacks (Python bindings, in b's namespace) see it go on stop.
        watcher = b.popen([sys.executable, os.path.join(HERE, "watch_peer.py"), "Kitchen tablet"],
                          env={"PYTHONPATH": os.path.join(ROOT, "bindings", "python")})
        assert json.loads(watcher.stdout.readline())["kind"] == "appeared"
    finally:
        stop(server)
    out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    assert json.loads(out.splitlines()[0])["kind"] == "disappeared"
    wait_for(lambda: "Kitchen tablet" not in peers(b, cli, timeout=1), 10, "the advertisement withdrawn")


def test_a_name_taken_on_the_network_is_renamed(link, cli):
    a, b = link.hosts
    first, started_a = serve(a, cli, os.path.join(a.directory, "one"), "Same name")
    try:
        assert started_a["advertised"] == "Same name"
        second, started_b = serve(b, cli, os.path.join(b.directory, "two"), "Same name")
        try:
            assert started_b["advertised"] == "Same name #2"
            found = peers(a, cli)
            assert found["Same name"]["addresses"] == [a.address]
            assert found["Same name #2"]["addresses"] == [b.address]
        finally:
            stop(second)
    finally:
        stop(first)


def test_tls_peer_is_pinned_to_its_advertised_fingerprint(link, cli):
    a, b = link.hosts
    served = os.path.join(a.directory, "tls")
    r = a.run([cli, "put", "--dir", served, "--create", "secure", "s1", "{}"])
    assert r.returncode == 0, r.stderr
    server, started = serve(a, cli, served, "Secure one", "--tls-anonymous")
    try:
        p = peers(b, cli)["Secure one"]
        assert p["tls"] is True and p["sha256"] == started["tls_sha256"] and p["url"].startswith("https://")
        local = os.path.join(b.directory, "tls-local")
        r = b.run([cli, "pull", "--dir", local, "--create-target", "secure", "peer:Secure one"])
        assert r.returncode == 0, r.stderr
        # Told to pin another certificate, the pull is refused.
        r = b.run([cli, "pull", "--dir", local, "--pinned-cert", "0" * 64, "secure", "peer:Secure one"])
        assert r.returncode == 1
    finally:
        stop(server)


def test_c_library_advertises_and_browses(link, cli):
    """Tests/c/test_discovery through the .so: advertise in a, browse in b until the peer
    appears and, once a stops, disappears."""
    a, b = link.hosts
    program = os.environ.get("CBLITE_TEST_DISCOVERY") or os.path.join(ROOT, "build", "tests", "test_discovery")
    assert os.access(program, os.X_OK), f"{program} is missing (make test-discovery builds it)"
    advertiser = a.popen([program, "advertise", "From C"], stdin=subprocess.PIPE)   # text mode (Host.popen)
    advertised = json.loads(advertiser.stdout.readline() or "null")
    assert advertised and advertised["name"] == "From C" and advertised["state"] == "established", advertiser.stderr.read()
    browser = b.popen([program, "browse", "From C"])
    appeared = json.loads(browser.stdout.readline())
    assert appeared["event"] == "appeared" and appeared["peer"]["port"] == advertised["port"]
    assert appeared["peer"]["databases"] == ["notes"]
    advertiser.stdin.write("serve\n")                  # serves "given" by handle: the TXT follows
    advertiser.stdin.flush()
    assert advertiser.stdout.readline().strip() == "served"
    updated = json.loads(browser.stdout.readline())
    assert updated["event"] == "updated" and sorted(updated["peer"]["databases"]) == ["given", "notes"]
    out, err = advertiser.communicate(input="", timeout=20)      # closing stdin stops it
    assert advertiser.returncode == 0, out + err
    out, err = browser.communicate(timeout=40)
    assert browser.returncode == 0, out + err
    assert json.loads(out.splitlines()[0])["event"] == "disappeared", out


def test_python_async_iterator_and_server_option(link, cli):
    """cblite.Server(advertise=...) in a, aio.peer_events() in b."""
    a, b = link.hosts
    env = {"PYTHONPATH": os.path.join(ROOT, "bindings", "python")}
    advertiser = a.popen([sys.executable, os.path.join(HERE, "advertise_python.py"), "From Python", a.directory],
                         env=env, stdin=subprocess.PIPE)
    advertised = json.loads(advertiser.stdout.readline() or "null")
    assert advertised and advertised["name"] == "From Python", advertiser.stderr.read()
    r = b.run([sys.executable, os.path.join(HERE, "watch_peer.py"), "--aio", "From Python"], env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    event = json.loads(r.stdout.splitlines()[0])
    assert event["kind"] == "appeared" and event["peer"]["databases"] == ["pydb"]
    out, err = advertiser.communicate(input="", timeout=20)
    assert advertiser.returncode == 0, err
