"""CouchDB 3.5's answers to the server endpoints (Tests/Fixtures/couchdb-3.5/rest-server.jsonl),
replayed in order against `cblite serve` with users (rest_replay.py): `_membership`, `_node`,
`_config`, `_uuids`, then `_session` and the anonymous and wrongly authenticated requests
(34-62), whose errors, reasons and `WWW-Authenticate`/`Set-Cookie`/`Location` headers must be
CouchDB's too. Every status is CouchDB's except the ones listed in DIFFERENCES with cblite's
status and why (the README's table says the same)."""
from rest_replay import REDACTED, Replay, basic, same_error

# seq -> (cblite's status, why). Every entry is checked too.
DIFFERENCES = {
    7: (404, "couchdb/single_node is a value of CouchDB's own ini; only values that were set are listed here"),
    8: (412, "the node is named cblite@<host>, not node1@127.0.0.1: another node's name is a 412 nodedown"),
    53: (401, "no Fauxton: a browser (Accept: text/html) is not sent to /_utils/session.html"),
    56: (401, "a Basic header that is not base64: CouchDB fails with 500 badarg"),
    57: (401, "no JWT handler: a Bearer token is no credential (CouchDB's, enabled there, answers 400 Malformed token)"),
}

# The same requests as CouchDB's with another error or reason (status as listed above).
OTHER_REASONS = {53, 56, 57}


def test_server_endpoints_replay_as_couchdb(serve):
    s = serve("--user", "admin:" + REDACTED)
    admin = basic("admin", REDACTED)
    assert s.request("PUT", "/rec_server", headers={"Authorization": admin})[0] == 201
    session = {}

    def credentials(rec, headers):
        seq, sent = rec["seq"], dict(rec["request"]["headers"])
        if "Authorization" in sent:
            headers["Authorization"] = {55: basic("rec_nobody", "not-the-password"),
                                        60: basic("rec_nobody", "not-the-password"),
                                        56: "Basic !!!notbase64", 57: "Bearer not.a.jwt"}.get(seq, admin)
        if "Cookie" in sent:
            # 41 sent a malformed cookie; the others the one a login answered.
            headers["Cookie"] = sent["Cookie"] if seq == 41 else session["cookie"]
        return headers

    def check(rec, status, headers, body):
        if "set-cookie" in headers and not headers["set-cookie"].startswith("AuthSession=;"):
            session["cookie"] = headers["set-cookie"].split(";")[0]
        return None if rec["seq"] in OTHER_REASONS else same_error(rec, status, headers, body)

    mismatches = Replay(s, "rest-server.jsonl", DIFFERENCES, headers=credentials, check=check).run()
    assert not mismatches, "\n".join(mismatches)
