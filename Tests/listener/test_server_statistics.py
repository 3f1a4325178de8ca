"""`/_node/_local/_stats` and `/_node/_local/_versions` in CouchDB 3.5's shapes
(rest-server.jsonl seqs 3 and 31-33): the counters count what was asked and answered, the
request-time histogram summarises real times, an unknown statistic is 200 null."""
import json

from conftest import recording


def couchdb_answer(seq):
    rec = next(r for r in recording("rest-server.jsonl") if r["seq"] == seq)
    return json.loads(rec["response"]["body"])


def stat(s, path):
    status, body = s.json("GET", "/_node/_local/_stats/" + path)
    assert status == 200
    return body


def test_counters_count_requests_by_method_and_status(serve):
    s = serve()
    gets, created, missing = stat(s, "couchdb/httpd_request_methods/GET")["value"], \
        stat(s, "couchdb/httpd_status_codes/201")["value"], stat(s, "couchdb/httpd_status_codes/404")["value"]
    puts = stat(s, "couchdb/httpd_request_methods/PUT")["value"]
    requests = stat(s, "couchdb/httpd/requests")["value"]
    assert s.request("PUT", "/stats_db")[0] == 201
    for _ in range(3):
        assert s.request("GET", "/stats_db/no_such_doc")[0] == 404
    # A request is counted once its answer is made, so each stat() above counts itself
    # only in later answers: the 5 stat() GETs, then the 3 GETs of a missing document.
    assert stat(s, "couchdb/httpd_request_methods/GET")["value"] == gets + 5 + 3
    assert stat(s, "couchdb/httpd_request_methods/PUT")["value"] == puts + 1
    assert stat(s, "couchdb/httpd_status_codes/201")["value"] == created + 1
    assert stat(s, "couchdb/httpd_status_codes/404")["value"] == missing + 3
    # Since `requests` was read: that stat(), the PUT, 3 GETs and the 4 stat() checks above.
    assert stat(s, "couchdb/httpd/requests")["value"] == requests + 1 + 1 + 3 + 4
    assert stat(s, "couchdb/open_databases")["value"] >= 1


def test_shapes_are_couchdbs(serve):
    s = serve()
    s.request("GET", "/_up")
    want = couchdb_answer(32)
    got = stat(s, "couchdb/httpd_request_methods/GET")
    assert set(got) == set(want) and got["type"] == want["type"] and got["desc"] == want["desc"]
    assert stat(s, "couchdb/no_such_stat") is None                      # CouchDB: 200 null
    hist, want = stat(s, "couchdb/request_time"), couchdb_answer(31)
    assert (hist["type"], hist["desc"]) == (want["type"], want["desc"])
    assert set(hist["value"]) == set(want["value"])
    v = hist["value"]
    assert v["n"] >= 1 and 0 < v["min"] <= v["median"] <= v["max"]
    assert [p for p, _ in v["percentile"]] == [p for p, _ in want["value"]["percentile"]]
    assert sum(c for _, c in v["histogram"]) == v["n"]
    whole = s.json("GET", "/_node/_local/_stats")[1]
    assert set(whole["couchdb"]) >= {"httpd", "httpd_request_methods", "httpd_status_codes", "request_time"}
    assert s.request("POST", "/_node/_local/_stats")[0] == 405


def test_versions_name_the_engines_inside(serve):
    s = serve()
    status, got = s.json("GET", "/_node/_local/_versions")
    want = couchdb_answer(3)
    assert status == 200
    assert got["javascript_engine"]["name"] == "duktape" and got["javascript_engine"]["version"].count(".") == 2
    # The collation driver is the same library as CouchDB's, described with the same keys.
    assert set(got["collation_driver"]) == set(want["collation_driver"])
    assert got["collation_driver"]["name"] == "libicu"
    assert all(got["collation_driver"][k] for k in want["collation_driver"])
