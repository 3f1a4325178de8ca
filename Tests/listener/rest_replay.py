"""Replays one of CouchDB 3.5's recordings (Tests/Fixtures/couchdb-3.5/rest-*.jsonl) in order
against a running `cblite serve` and reports where the statuses differ.

Revision IDs are our own digests: each one CouchDB answered is mapped to ours as the answers
come, and later requests name ours. Feeds the recording client cut off itself (continuous,
eventsource without a timeout) are not replayed. Each recording's test file owns its table of
known differences (seq -> (cblite's status, why)); every listed entry must be replayed too."""
import base64
import json
import re

from conftest import recording

# Not inside an escape: in "%5B%2211-…" the revision is "11-…" (after the quote's %22).
REV = re.compile(r"(?:(?<=%22)|(?<![\d%]))\d+-[0-9a-f]{32}")
DROPPED_HEADERS = ("host", "content-length", "authorization", "cookie", "connection")


def replayable(rec):
    q = rec["request"]["path"]
    if rec.get("end") != "complete":
        return False                 # the recording client hung up on a feed
    return not (("feed=continuous" in q or "feed=eventsource" in q) and "timeout=" not in q)


class Replay:
    """One pass over a recording. `headers(rec, headers)` may adjust what is sent (credentials,
    for instance); `check(rec, status, headers, body)` may return a mismatch text of its own
    (headers, shapes) beside the status comparison."""

    def __init__(self, server, name, differences, headers=None, check=None):
        self.server, self.name, self.differences = server, name, differences
        self.adjust_headers, self.check = headers, check
        self.revs = {}

    def ours(self, text):
        return REV.sub(lambda m: self.revs.get(m.group(0), m.group(0)), text) if text else text

    def learn(self, want, got):
        if isinstance(want, dict) and isinstance(got, dict):
            for k in want:
                if k in got:
                    self.learn(want[k], got[k])
        elif isinstance(want, list) and isinstance(got, list):
            for a, b in zip(want, got):
                self.learn(a, b)
        elif isinstance(want, str) and isinstance(got, str) and REV.fullmatch(want) and want != got \
                and re.fullmatch(r"\d+-[0-9a-f]+", got):
            self.revs[want] = got

    def run(self, first=1, last=None):
        """Replays seqs first..last; returns the list of mismatches (empty when all agree)."""
        mismatches, seen = [], set()
        for rec in recording(self.name):
            seq = rec["seq"]
            if seq < first or (last is not None and seq > last) or not replayable(rec):
                continue
            q, want = rec["request"], rec["response"]
            body = q.get("body")
            if body is not None:
                body = base64.b64decode(body) if q.get("body_encoding") == "base64" else self.ours(body).encode()
            headers = {k: self.ours(v) for k, v in q["headers"] if k.lower() not in DROPPED_HEADERS}
            if self.adjust_headers:
                headers = self.adjust_headers(rec, headers)
            conn = self.server.connection(timeout=20)
            conn.request(q["method"], self.ours(q["path"]), body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            got_headers = {k.lower(): v for k, v in r.getheaders()}
            conn.close()
            try:
                self.learn(json.loads(want["body"]), json.loads(data))
            except (TypeError, ValueError):
                pass
            expected = self.differences.get(seq, (want["status"], None))[0]
            if seq in self.differences:
                seen.add(seq)
            if r.status != expected:
                mismatches.append("seq %d %s %s: CouchDB %d, expected %d, got %d %s" % (
                    seq, q["method"], q["path"][:70], want["status"], expected, r.status, data[:160]))
            elif self.check:
                extra = self.check(rec, r.status, got_headers, data)
                if extra:
                    mismatches.append("seq %d %s %s: %s" % (seq, q["method"], q["path"][:70], extra))
        unseen = {s for s in self.differences if s >= first and (last is None or s <= last)} - seen
        if unseen:
            mismatches.append("listed differences not replayed: %s" % sorted(unseen))
        return mismatches


# ---- credentials and the authentication answers ---------------------------------------------
# The recordings' admin password is redacted as "<redacted>", in `Authorization` headers and in
# `_session` bodies alike: a server whose admin has that very password gets the recorded
# requests as they were sent (the headers hook puts the real Basic header back).
REDACTED = "<redacted>"
AUTH_HEADERS = ("www-authenticate", "set-cookie", "location")


def basic(name, password):
    return "Basic " + base64.b64encode(("%s:%s" % (name, password)).encode()).decode()


def same_error(rec, status, headers, body):
    """A `check` for the authentication answers: the same error and reason as CouchDB's, and
    `WWW-Authenticate`, `Set-Cookie` and `Location` present exactly where CouchDB sent them."""
    want = rec["response"]
    sent = {k.lower() for k, _ in want["headers"]}
    for h in AUTH_HEADERS:
        if (h in sent) != (h in headers):
            return "%s %s" % (h, "missing" if h in sent else "not expected: " + headers[h])
    try:
        w, g = json.loads(want["body"]), json.loads(body)
    except (TypeError, ValueError):
        return None
    if isinstance(w, dict) and "error" in w and status < 500:
        if (w.get("error"), w.get("reason")) != (g.get("error"), g.get("reason")):
            return "error %s/%r, CouchDB's %s/%r" % (g.get("error"), g.get("reason"), w["error"], w["reason"])
    return None
