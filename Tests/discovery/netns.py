"""Two hosts on one link, for DNS-SD tests: network namespaces joined by a veth pair, each
with its own system bus (dbus-daemon) and its own avahi-daemon, as two machines on a LAN.

Needs root (CI runs as root) and iproute2, dbus, avahi-daemon. It never skips: when a step
fails it raises SetupError saying which, and the test fails with it.

    with Link() as link:
        a, b = link.hosts
        a.run(["cblite", ...])          # runs inside host a's namespace, on its bus
        p = b.popen([...])
"""

import os
import shutil
import subprocess
import tempfile
import time


class SetupError(RuntimeError):
    pass


DBUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""

AVAHI_CONFIG = """[server]
host-name={hostname}
use-ipv4=yes
use-ipv6=no
allow-interfaces={interface}
enable-dbus=yes
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
publish-addresses=yes
"""


def _check(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError(f"{what}: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


class Host:
    """One namespace with its bus and Avahi daemon."""

    def __init__(self, netns, address, interface, hostname, directory):
        self.netns, self.address, self.interface, self.hostname = netns, address, interface, hostname
        self.directory = directory
        self.bus = f"unix:path={directory}/system_bus_socket"
        self.processes = []

    def env(self, extra=None):
        e = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus)
        e.update(extra or {})
        return e

    def command(self, argv):
        return ["ip", "netns", "exec", self.netns] + list(argv)

    def run(self, argv, env=None, timeout=60, **kw):
        return subprocess.run(self.command(argv), env=self.env(env), timeout=timeout, capture_output=True, text=True, **kw)

    def popen(self, argv, env=None, **kw):
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        p = subprocess.Popen(self.command(argv), env=self.env(env), text=True, **kw)
        self.processes.append(p)
        return p

    def start_daemons(self):
        with open(f"{self.directory}/dbus.conf", "w") as f:
            f.write(DBUS_CONFIG.format(socket=f"{self.directory}/system_bus_socket"))
        with open(f"{self.directory}/avahi-daemon.conf", "w") as f:
            f.write(AVAHI_CONFIG.format(hostname=self.hostname, interface=self.interface))
        self.dbus = self.popen(["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={self.directory}/dbus.conf"])
        _wait(lambda: os.path.exists(f"{self.directory}/system_bus_socket"), 10, f"dbus-daemon in {self.netns}", self.dbus)
        # The daemon keeps its pid file and socket in /run/avahi-daemon: a private tmpfs there
        # (ip netns exec runs in a mount namespace of its own) lets two daemons run at once.
        log = open(f"{self.directory}/avahi.log", "w")
        self.avahi = self.popen(
            ["sh", "-c", "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && "
                         f"exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f {self.directory}/avahi-daemon.conf"],
            stdout=log, stderr=subprocess.STDOUT)
        _wait(lambda: "Server startup complete" in open(f"{self.directory}/avahi.log").read(), 20,
              f"avahi-daemon in {self.netns} (log: {open(f'{self.directory}/avahi.log').read()[-2000:]})", self.avahi)

    def stop(self):
        for p in reversed(self.processes):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def _wait(ready, seconds, what, process=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        if process is not None and process.poll() is not None:
            break
        time.sleep(0.05)
    raise SetupError(f"{what} did not start")


class Link:
    """Hosts a (10.231.0.1) and b (10.231.0.2) on a veth pair, each namespace with its daemons."""

    def __init__(self):
        if os.geteuid() != 0:
            raise SetupError("the DNS-SD tests need root (network namespaces, daemons); CI runs them as root")
        for tool in ("ip", "dbus-daemon", "avahi-daemon"):
            if shutil.which(tool) is None:
                raise SetupError(f"{tool} is missing (Debian: iproute2, dbus, avahi-daemon; `make deps-build` installs them)")
        tag = f"{os.getpid() % 100000}"
        self.names = [f"cbla{tag}", f"cblb{tag}"]
        self.interfaces = [f"cva{tag}", f"cvb{tag}"]
        self.root = tempfile.mkdtemp(prefix="cblite-dnssd-")
        self.hosts = []

    def __enter__(self):
        try:
            for ns in self.names:
                _check(["ip", "netns", "add", ns], "creating a network namespace")
            _check(["ip", "link", "add", self.interfaces[0], "type", "veth", "peer", "name", self.interfaces[1]], "creating a veth pair")
            for i, (ns, ifname) in enumerate(zip(self.names, self.interfaces)):
                address = f"10.231.0.{i + 1}"
                _check(["ip", "link", "set", ifname, "netns", ns], "moving the veth end")
                _check(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", ifname], "addressing the veth end")
                _check(["ip", "-n", ns, "link", "set", ifname, "up"], "bringing the link up")
                _check(["ip", "-n", ns, "link", "set", "lo", "up"], "bringing loopback up")
                directory = os.path.join(self.root, ns)
                os.makedirs(directory)
                self.hosts.append(Host(ns, address, ifname, f"cblite-{'ab'[i]}", directory))
            for h in self.hosts:
                h.start_daemons()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for h in self.hosts:
            h.stop()
        for ns in self.names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)     # takes the veth pair with it
        shutil.rmtree(self.root, ignore_errors=True)
        return False
