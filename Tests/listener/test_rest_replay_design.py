"""CouchDB 3.5's answers to design documents (Tests/Fixtures/couchdb-3.5/rest-design.jsonl)
replayed in order against `cblite serve` (rest_replay.py): every request gets CouchDB's status,
except the ones listed in DIFFERENCES; every view answered 200 gives CouchDB's rows — the same
ids, keys, values (documents without their _rev) in the same order — and its total_rows and
offset; every filtered _changes the same documents."""
import json

from rest_replay import Replay

# seq -> (cblite's status, why). Every entry is checked too.
DIFFERENCES = {
    61: (404, "_changes?filter=NAME without a slash: a filter registered through the API by that name, "
              "and there is none (CouchDB refuses the name with 400)"),
    95: (400, "_stats over non-numbers: the engine's built-in refuses the query (400); CouchDB answers 500"),
}

# seq -> why the rows of a 200 differ (their status is CouchDB's).
ROW_DIFFERENCES = {}


def rows_of(body):
    def row(r):
        out = {k: r[k] for k in ("id", "key", "value", "error") if k in r}
        if isinstance(r.get("doc"), dict):
            out["doc"] = {k: v for k, v in r["doc"].items() if k != "_rev"}
        return out
    shape = {k: body[k] for k in ("total_rows", "offset") if k in body}
    return shape, [row(r) for r in body.get("rows", [])]


def same_rows(rec, status, headers, data):
    """A view's 200 answer: CouchDB's rows (update_seq is CouchDB's opaque string, not
    compared); a filtered _changes: CouchDB's documents."""
    q = rec["request"]
    if status != 200 or rec["response"]["status"] != 200 or rec["seq"] in ROW_DIFFERENCES:
        return None
    if "/_changes?" in q["path"]:
        # CouchDB's feed interleaves its shards (q > 1): the same documents, not the same order.
        want = sorted(r["id"] for r in json.loads(rec["response"]["body"])["results"])
        got = sorted(r["id"] for r in json.loads(data)["results"])
        return None if want == got else "filtered changes differ: CouchDB %s, cblite %s" % (want, got)
    if "/_view/" not in q["path"]:
        return None
    want, got = json.loads(rec["response"]["body"]), json.loads(data)
    if q["path"].endswith("/queries"):
        want, got = [rows_of(r) for r in want["results"]], [rows_of(r) for r in got["results"]]
    else:
        want, got = rows_of(want), rows_of(got)
    if "sorted=false" in q["path"]:
        # Rows in any order (CouchDB's come in its shards' order): the same set.
        key = lambda r: json.dumps(r, sort_keys=True)
        want, got = (want[0], sorted(want[1], key=key)), (got[0], sorted(got[1], key=key))
    if want != got:
        return "rows differ:\n  CouchDB %s\n  cblite  %s" % (json.dumps(want)[:600], json.dumps(got)[:600])
    return None


def test_design_documents_replay_as_couchdb(serve):
    mismatches = Replay(serve(), "rest-design.jsonl", DIFFERENCES, check=same_rows).run()
    assert not mismatches, "\n".join(mismatches)


def test_a_function_whose_expression_never_completes_is_refused_with_400(serve):
    """The write-time check evaluates each function's expression: one that loops past the
    time limit (the default 5 s) is a compilation_error (400), not a 500."""
    s = serve()
    assert s.request("PUT", "/hostile")[0] == 201
    status, body = s.json("PUT", "/hostile/_design/d", {"views": {"v": {"map": "(function () { for (;;) {} })()"}}})
    assert status == 400 and body["error"] == "compilation_error", body
    assert "execution timeout" in body["reason"], body
    assert s.request("GET", "/hostile/_design/d")[0] == 404
