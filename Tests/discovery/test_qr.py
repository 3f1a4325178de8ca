"""`cblite serve --qr`: the URL drawn on the terminal decodes back to the same URL (zbarimg,
Debian's zbar-tools, reading the half blocks rendered to an image), with the TLS
certificate's fingerprint as #sha256=, which `cblite sync` takes as the certificate to pin."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import put

# Each character cell is two modules, top and bottom; a block is light (drawn for a dark terminal).
CELLS = {"█": (1, 1), "▀": (1, 0), "▄": (0, 1), " ": (0, 0)}


def serve_qr(cli, directory, *extra):
    """Starts `cblite serve --qr`; returns (process, QR lines, URL line, other lines)."""
    p = subprocess.Popen([cli, "serve", "--dir", directory, "--port", "0", "--qr", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    lines = []
    while True:
        line = p.stdout.readline()
        assert line, f"serve ended: {p.stderr.read()}"
        line = line.rstrip("\n")
        if re.match(r"^https?://", line):
            break
        lines.append(line)
    qr = [l for l in lines if l and set(l) <= set(CELLS)]
    return p, qr, line, [l for l in lines if l not in qr]


def decode(qr_lines, tmp):
    """Renders the blocks to a PGM image (light modules white, a white margin) and decodes it."""
    scale, margin = 6, 4
    rows = []
    for line in qr_lines:
        top = [CELLS[c][0] for c in line]
        bottom = [CELLS[c][1] for c in line]
        rows += [top, bottom]
    width = max(len(r) for r in rows) + 2 * margin
    pixels = [[1] * width for _ in range(margin)]
    pixels += [[1] * margin + r + [1] * (width - margin - len(r)) for r in rows]
    pixels += [[1] * width for _ in range(margin)]
    path = os.path.join(tmp, "qr.pgm")
    with open(path, "wb") as f:
        f.write(b"P5 %d %d 255\n" % (width * scale, len(pixels) * scale))
        for row in pixels:
            line = bytes(255 if v else 0 for v in row for _ in range(scale))
            f.write(line * scale)
    zbar = shutil.which("zbarimg")
    if zbar is None:
        pytest.fail("zbarimg is missing (Debian: zbar-tools; `make deps-build` installs it)")
    r = subprocess.run([zbar, "--raw", "-q", path], capture_output=True, text=True)
    assert r.returncode == 0, f"zbarimg could not read the QR code: {r.stderr}"
    return r.stdout.strip()


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)
    assert p.returncode == 0


def test_qr_decodes_to_the_url(cli, tmp):
    p, qr, url, others = serve_qr(cli, tmp)
    try:
        assert others[0].startswith("cblite listening on ")
        assert url == others[0][len("cblite listening on "):]
        assert len(qr) >= 10 and all(len(l) == len(qr[0]) for l in qr)
        assert decode(qr, tmp) == url
    finally:
        stop(p)


def test_qr_carries_the_tls_fingerprint_that_sync_pins(cli, tmp):
    served = os.path.join(tmp, "served")
    put(cli, served, "notes", "n1", '{"from":"server"}', runner=lambda a: subprocess.run(a, capture_output=True, text=True))
    p, qr, url, others = serve_qr(cli, served, "--tls-anonymous")
    try:
        fingerprint = next(l.split(": ")[1] for l in others if l.startswith("TLS certificate SHA-256: "))
        assert url.endswith("#sha256=" + fingerprint) and url.startswith("https://127.0.0.1:")
        assert decode(qr, tmp) == url
        # The URL as scanned (the database's name added before the fragment) pins the certificate.
        base, fragment = url.split("#")
        local = os.path.join(tmp, "local")
        r = subprocess.run([cli, "pull", "--dir", local, "--create-target", "notes", f"{base}notes#{fragment}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "documents pulled: 1" in r.stdout
        # Another fingerprint is refused, as --pinned-cert's would be.
        r = subprocess.run([cli, "pull", "--dir", local, "notes", f"{base}notes#sha256={'0' * 64}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r.stdout + r.stderr
        r = subprocess.run([cli, "pull", "--dir", local, "--pinned-cert", "1" * 64, "notes", f"{base}notes#{fragment}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 64 and "different certificates" in r.stderr
    finally:
        stop(p)
