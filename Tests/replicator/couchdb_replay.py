"""A CouchDB 3.5 source peer made of recorded answers (Tests/Fixtures/couchdb-3.5).

`pull-by-couchdb.jsonl` holds what a real CouchDB 3.5.0 answered when it was the source
of a replication: its `_changes` feeds with opaque string sequences, `_bulk_get`
documents, `open_revs` as multipart/mixed with gzip-encoded text attachments, `/_session`.
This server answers a replicator's requests with those exact bytes, looked up by what
is asked (document ID and revision), so the replicator under test meets the wire format
of a peer nobody here wrote. It also acts as a target: it keeps `_local` checkpoints,
and records the `_revs_diff`, `_bulk_docs` and multipart `PUT` requests it receives so
tests can compare their shapes with what CouchDB's own replicator sent
(`push-by-couchdb.jsonl`).

Phase 1 serves the data set of the first recorded run; `phase = 2` adds the second
run's changes (extra-01, extra-02, and att-binary rev 2 with a new attachment).
"""
import base64
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _body(entry):
    raw = entry.get("body") or ""
    if entry.get("body_encoding") == "base64":
        return base64.b64decode(raw)
    return raw.encode("utf-8")


class Recordings:
    def __init__(self, path):
        self.records = [json.loads(line) for line in open(path, encoding="utf-8")]
        self.changes = []          # (since, body) in the order recorded
        self.bulk_get = {}         # (id, rev) -> result entry ({"ok": doc})
        self.open_revs = {}        # (id, rev) -> (content type, body bytes)
        self.info = None
        self.session = None
        for r in self.records:
            q, a = r["request"], r["response"]
            path = q["path"]
            if q["method"] == "GET" and re.fullmatch(r"/src1/?", path) and self.info is None:
                self.info = _body(a)
            elif q["method"] == "POST" and path == "/_session" and self.session is None:
                self.session = a
            elif "/_changes?" in path:
                since = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query).get("since", ["0"])[0]
                self.changes.append((since, _body(a)))
            elif "/_bulk_get" in path:
                for res in json.loads(_body(a))["results"]:
                    for d in res["docs"]:
                        if "ok" in d:
                            self.bulk_get[(res["id"], d["ok"]["_rev"])] = d
            elif "open_revs=" in path and q["method"] == "GET":
                doc_id = urllib.parse.unquote(urllib.parse.urlsplit(path).path.split("/", 2)[2])
                qs = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
                rev = json.loads(qs["open_revs"][0])[0]
                self.open_revs[(doc_id, rev)] = (a["content_type"], _body(a))


    def add_document(self, doc, seq):
        """Serves one more document without attachments, as CouchDB answered it elsewhere in
        the recordings (`doc` with `_id` and a generation-1 `_rev`): a row at `seq` at the end
        of the first changes feed, and its `_bulk_get` entry."""
        since, feed = self.changes[0]
        body = json.loads(feed)
        body["results"].append({"seq": seq, "id": doc["_id"], "changes": [{"rev": doc["_rev"]}]})
        self.changes[0] = (since, json.dumps(body).encode())
        start, digest = doc["_rev"].split("-", 1)
        self.bulk_get[(doc["_id"], doc["_rev"])] = {
            "ok": dict(doc, _revisions={"start": int(start), "ids": [digest]})}


class ReplayServer:
    """Serves the recordings on 127.0.0.1 (port 0: any free one) in a thread."""

    def __init__(self, recordings_path, db="src1", user=None, password=None):
        self.rec = Recordings(recordings_path)
        self.db = db
        self.user, self.password = user, password
        self.phase = 1
        self.local_docs = {}
        self.received = []         # (method, path, headers dict, body bytes) of writes
        self.changes_asked = []    # (method, path, body bytes) of every _changes request
        self.broken = set()        # document IDs whose _bulk_get entry is a per-document error
        self.extra_rows = []       # rows added to the first recorded feed (synthesised revisions)
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _read_body(self):
                n = int(self.headers.get("Content-Length") or 0)
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    raise RuntimeError("the replicator sent a chunked body; CouchDB's sends Content-Length")
                return self.rfile.read(n) if n else b""

            def _send(self, status, body, content_type="application/json", headers=()):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Server", "CouchDB/3.5.0 (Erlang OTP/25)")
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status, obj, headers=()):
                self._send(status, (json.dumps(obj) + "\n").encode(), headers=headers)

            def _authorized(self):
                if server.user is None:
                    return True
                auth = self.headers.get("Authorization", "")
                if auth.startswith("Basic "):
                    u, _, p = base64.b64decode(auth[6:]).decode().partition(":")
                    return (u, p) == (server.user, server.password)
                return "AuthSession=recorded" in (self.headers.get("Cookie") or "")

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PUT(self):
                self._handle("PUT")

            def _handle(self, method):
                body = self._read_body()
                url = urllib.parse.urlsplit(self.path)
                qs = urllib.parse.parse_qs(url.query)
                path = url.path
                if path == "/_session" and method == "POST":
                    form = urllib.parse.parse_qs(body.decode())
                    if (form.get("name", [None])[0], form.get("password", [None])[0]) != (server.user, server.password):
                        return self._json(401, {"error": "unauthorized", "reason": "Name or password is incorrect."},
                                          headers=[("Set-Cookie", "AuthSession=; Version=1; Path=/; HttpOnly")])
                    return self._send(200, _body(server.rec.session),
                                      headers=[("Set-Cookie", "AuthSession=recorded; Version=1; Max-Age=600; Path=/; HttpOnly")])
                if not self._authorized():
                    return self._json(401, {"error": "unauthorized", "reason": "Name or password is incorrect."})
                prefix = "/" + server.db
                if not (path == prefix or path.startswith(prefix + "/")):
                    return self._json(404, {"error": "not_found", "reason": "Database does not exist."})
                rest = urllib.parse.unquote(path[len(prefix):].lstrip("/"))
                with server.lock:
                    if method in ("PUT", "POST") and rest not in ("_bulk_get", "_changes"):
                        server.received.append((method, self.path, dict(self.headers.items()), body))
                if rest == "" and method == "GET":
                    return self._send(200, server.rec.info)
                if rest == "" and method == "PUT":
                    return self._json(412, {"error": "file_exists", "reason": "The database could not be created, the file already exists."})
                if rest.startswith("_local/"):
                    if method == "GET":
                        doc = server.local_docs.get(rest)
                        return self._json(200, doc) if doc else self._json(404, {"error": "not_found", "reason": "missing"})
                    doc = json.loads(body)
                    n = int(server.local_docs.get(rest, {}).get("_rev", "0-0").split("-")[1]) + 1
                    doc["_id"], doc["_rev"] = rest, "0-%d" % n
                    server.local_docs[rest] = doc
                    return self._json(201, {"ok": True, "id": rest, "rev": doc["_rev"]})
                if rest == "_changes":
                    with server.lock:
                        server.changes_asked.append((method, self.path, body))
                    return self._changes(qs, json.loads(body) if body else {})
                if rest == "_bulk_get":
                    out = []
                    for d in json.loads(body)["docs"]:
                        if d["id"] in server.broken:
                            out.append({"id": d["id"], "docs": [{"error": {
                                "id": d["id"], "rev": d.get("rev"), "error": "unknown_error", "reason": "function_clause"}}]})
                            continue
                        hit = server.rec.bulk_get.get((d["id"], d.get("rev")))
                        out.append({"id": d["id"], "docs": [hit or {"error": {
                            "id": d["id"], "rev": d.get("rev"), "error": "not_found", "reason": "missing"}}]})
                    return self._json(200, {"results": out})
                if rest == "_revs_diff":
                    req = json.loads(body)
                    return self._json(200, {k: {"missing": v} for k, v in req.items()})
                if rest == "_bulk_docs":
                    return self._json(201, [])
                if rest == "_ensure_full_commit":
                    return self._json(201, {"ok": True, "instance_start_time": "0"})
                if method == "GET" and "open_revs" in qs:
                    rev = json.loads(qs["open_revs"][0])[0]
                    hit = server.rec.open_revs.get((rest, rev))
                    if hit is None:
                        return self._json(404, {"error": "not_found", "reason": "missing"})
                    return self._send(200, hit[1], content_type=hit[0])
                if method == "PUT":
                    return self._json(201, {"ok": True, "id": rest, "rev": qs.get("rev", ["?"])[0]})
                return self._json(404, {"error": "not_found", "reason": "missing"})

            def _changes(self, qs, body):
                since = qs.get("since", ["0"])[0]
                feeds = server.rec.changes[:1] if server.phase == 1 else server.rec.changes
                for recorded_since, recorded in feeds:
                    if recorded_since == since:
                        if server.extra_rows and recorded_since == "0":
                            feed = json.loads(recorded)
                            feed["results"] += server.extra_rows
                            recorded = json.dumps(feed).encode()
                        if qs.get("filter") != ["_doc_ids"]:
                            return self._send(200, recorded)
                        # As CouchDB (client-shapes.jsonl, POST filter=_doc_ids): the rows of
                        # those documents, and "pending" counting the changes before the filter.
                        feed = json.loads(recorded)
                        rows = [r for r in feed["results"] if r["id"] in body.get("doc_ids", [])]
                        return self._json(200, {"results": rows, "last_seq": feed["last_seq"],
                                                "pending": len(feed["results"]) - len(rows)})
                # Caught up: no rows, the same sequence back (opaque, verbatim).
                return self._json(200, {"results": [], "last_seq": since if since != "0" else 0, "pending": 0})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, credentials=""):
        return "http://%s127.0.0.1:%d/%s" % (credentials, self.port, self.db)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
