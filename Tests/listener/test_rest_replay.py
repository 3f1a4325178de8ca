"""CouchDB 3.5's answers to the document API (Tests/Fixtures/couchdb-3.5/rest-documents.jsonl),
replayed in order against `cblite serve` (rest_replay.py): every request gets CouchDB's status,
except the ones listed in DIFFERENCES with cblite's status and why (the README's table says the
same), and the headers CouchDB clients read: the request ID, the body time, the `Location` of
every 201, what a 304 carries and the `ETag` of the changes feed."""
import re

from rest_replay import REDACTED, Replay, basic, same_error

# seq -> (cblite's status, why). Every entry is checked too.
DIFFERENCES = {
    144: (400, "new_edits not a boolean: CouchDB fails with 500 function_clause"),
    145: (400, "new_edits not a boolean: CouchDB fails with 500 function_clause"),
    157: (400, "`docs` not a list: CouchDB fails with 500 function_clause"),
    197: (400, "_revs_limit not a positive integer: CouchDB fails with 500 function_clause"),
    198: (400, "_revs_limit not a positive integer: CouchDB fails with 500 function_clause"),
    234: (400, "limit not an integer: CouchDB fails with 500 badarg"),
    235: (400, "style not main_only/all_docs: CouchDB fails with 500 badarg"),
    236: (400, "timeout not an integer: CouchDB fails with 500 badarg"),
}

# The recording's generated document IDs (the uuid algorithm's): compared by form.
GENERATED_ID = re.compile(r"/[0-9a-f]{32}$")


def header_differences(origin):
    """The check hook: the headers of our answer against CouchDB's, by form."""
    def check(rec, status, headers, body):
        theirs = {k.lower(): v for k, v in rec["response"]["headers"]}
        asked = {k.lower(): v for k, v in rec["request"]["headers"]}
        problems = []
        rid = headers.get("x-couch-request-id")
        if "x-couch-request-id" in asked and theirs.get("x-couch-request-id") == asked["x-couch-request-id"]:
            if rid != asked["x-couch-request-id"]:
                problems.append("X-Couch-Request-ID %r not echoed (got %r)" % (asked["x-couch-request-id"], rid))
        elif rid is None or not re.fullmatch(r"[0-9a-f]{10}", rid):
            problems.append("X-Couch-Request-ID %r is not 10 hex digits" % rid)
        if not re.fullmatch(r"\d+", headers.get("x-couchdb-body-time", "")):
            problems.append("no X-CouchDB-Body-Time")
        if status == 201 and "location" in theirs:
            want = re.sub(r"^https?://[^/]+", origin, theirs["location"])
            got = headers.get("location", "")
            if not (got == want or (GENERATED_ID.search(want) and GENERATED_ID.sub("", got) == GENERATED_ID.sub("", want)
                                    and GENERATED_ID.search(got))):
                problems.append("Location %r, CouchDB's form %r" % (got, want))
        if status == 304:
            if headers.get("content-length") != "0":
                problems.append("a 304 without Content-Length: 0")
            extra = {"content-type", "cache-control"} & set(headers)
            if extra:
                problems.append("a 304 with %s" % sorted(extra))
        path = rec["request"]["path"]
        if "/_changes" in path and status == 200 and "etag" in theirs and not re.fullmatch(r'"[0-9A-Z]+"', headers.get("etag", "")):
            problems.append("_changes without CouchDB's ETag form (got %r)" % headers.get("etag"))
        return "; ".join(problems) or None
    return check


def test_documents_replay_as_couchdb(serve):
    # _security from 237 on: per-database security is replayed with its own section.
    server = serve()
    origin = "http://%s:%d" % (server.host, server.port)
    mismatches = Replay(server, "rest-documents.jsonl", DIFFERENCES, check=header_differences(origin)).run(last=236)
    assert not mismatches, "\n".join(mismatches)


# seq -> (cblite's status, why) for the `_security` section (237 on), replayed with users.
SECURITY_DIFFERENCES = {}


def test_security_replays_as_couchdb(serve):
    """237-249: `_security` GET/PUT (its 500 `no_majority` for malformed objects included),
    a members-only database refusing anonymous and unknown users, then the database's
    deletion. The server has CouchDB's admin with the recording's redacted password as its
    password, so the redacted credentials and bodies are the real ones."""
    s = serve("--user", "admin:" + REDACTED)
    admin = {"Authorization": basic("admin", REDACTED)}
    for db in ("rec_docs", "rec_docs%2Fsub"):
        assert s.request("PUT", "/" + db, headers=admin)[0] == 201
    assert s.request("PUT", "/rec_docs/doc-1", {"v": 1}, headers=admin)[0] == 201

    def credentials(rec, headers):
        sent = dict(rec["request"]["headers"])
        if "Authorization" in sent:
            # 241 is CouchDB's request as a user it does not know.
            headers["Authorization"] = basic("rec_nobody", "not-the-password") if rec["seq"] == 241 else admin["Authorization"]
        return headers

    mismatches = Replay(s, "rest-documents.jsonl", SECURITY_DIFFERENCES, headers=credentials,
                        check=same_error).run(first=237)
    assert not mismatches, "\n".join(mismatches)
