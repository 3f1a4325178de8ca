"""CouchDB 3.5's answers to the document API (Tests/Fixtures/couchdb-3.5/rest-documents.jsonl),
replayed in order against `cblite serve` (rest_replay.py): every request gets CouchDB's status,
except the ones listed in DIFFERENCES with cblite's status and why (the README's table says the
same)."""
from rest_replay import REDACTED, Replay, basic, same_error

# seq -> (cblite's status, why). Every entry is checked too.
DIFFERENCES = {
    136: (404, "_all_docs/queries (several queries in one request) is not served yet"),
    144: (400, "new_edits not a boolean: CouchDB fails with 500 function_clause"),
    145: (400, "new_edits not a boolean: CouchDB fails with 500 function_clause"),
    155: (400, "a _bulk_get entry without an id fails the request (CouchDB answers that entry's error)"),
    157: (400, "`docs` not a list: CouchDB fails with 500 function_clause"),
    166: (409, "_local documents keep revisions here: a write must name the current one"),
    167: (409, "_local documents keep revisions here: a write must name the current one"),
    188: (400, "_purged_infos is not served yet"),
    191: (400, "_purged_infos_limit is not served yet"),
    192: (400, "_purged_infos_limit is not served yet"),
    194: (400, "_purged_infos_limit is not served yet"),
    197: (400, "_revs_limit not a positive integer: CouchDB fails with 500 function_clause"),
    198: (400, "_revs_limit not a positive integer: CouchDB fails with 500 function_clause"),
    215: (501, "filter=_design is not served yet"),
    216: (501, "filter=_view runs a JavaScript view (issue 28)"),
    218: (404, "a design document's JavaScript filter (issue 28)"),
    219: (404, "a design document's JavaScript filter (issue 28): the same status, another reason"),
    234: (400, "limit not an integer: CouchDB fails with 500 badarg"),
    235: (400, "style not main_only/all_docs: CouchDB fails with 500 badarg"),
    236: (400, "timeout not an integer: CouchDB fails with 500 badarg"),
}


def test_documents_replay_as_couchdb(serve):
    # _security from 237 on: per-database security is replayed with its own section.
    mismatches = Replay(serve(), "rest-documents.jsonl", DIFFERENCES).run(last=236)
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
