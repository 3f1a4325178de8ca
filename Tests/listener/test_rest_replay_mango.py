"""CouchDB 3.5's answers to Mango (Tests/Fixtures/couchdb-3.5/rest-mango.jsonl): `_index`,
`_find` with every operator, sort, fields, bookmarks, `execution_stats`, `_explain` and the
errors, replayed in order against `cblite serve` (rest_replay.py). Beside the statuses, each
answer is compared with CouchDB's: the documents found, in order (bodies without `_rev`,
whose digests are ours), the warnings and statistics, the error names and texts, the index
listings and the plans `_explain` shows (with the other indexes it considered, their
ranks and reasons) — except as DIFFERENCES and SHAPE_DIFFERENCES say."""
import json
import re

from rest_replay import Replay

# seq -> (cblite's status, why). Every entry is checked too.
DIFFERENCES = {
    10: (400, "text indexes are served (full-text search): this one's fields are not {name, type} objects, as CouchDB with its search service refuses them; without it, 503"),
    81: (400, "$mod with a 0 divisor is refused as a bad argument; CouchDB fails the query with 500 badarith"),
}

# seq -> why the answer's body differs (the status is still compared).
SHAPE_DIFFERENCES = {
    10: (400, "text indexes are served (full-text search): this one's fields are not {name, type} objects, as CouchDB with its search service refuses them; without it, 503"),
    12: "a body that is not JSON: the same error name, another parser's reason",
    84: "a body that is not JSON: the same error name, another parser's reason",
}

HEX = re.compile(r"^(_design/)?[0-9a-f]{40}$")


def unnamed(v):
    """An index name or design document ID CouchDB made from its digest of the definition
    (an Erlang term's): cblite digests the JSON, so both become one placeholder."""
    return "<digest>" if isinstance(v, str) and HEX.match(v) else v


def index_entry(i):
    return {**i, "ddoc": unnamed(i.get("ddoc")), "name": unnamed(i.get("name"))}


def comparable(path, body):
    if "error" in body:
        return {"error": body["error"], "reason": body.get("reason")}
    if path.endswith("/_find"):
        out = {"docs": [{k: v for k, v in d.items() if k != "_rev"} for d in body["docs"]],
               "warning": body.get("warning")}
        if "execution_stats" in body:
            out["execution_stats"] = {k: v for k, v in body["execution_stats"].items() if k != "execution_time_ms"}
        return out
    if path.endswith("/_explain"):
        m = body["mrargs"]
        return {"index": index_entry(body["index"]), "selector": body["selector"], "fields": body["fields"],
                "limit": body["limit"], "skip": body["skip"], "opts": body["opts"],
                "mrargs": {k: m[k] for k in ("start_key", "end_key", "direction", "include_docs")},
                "covering": body["covering"],
                "index_candidates": [{"index": index_entry(c["index"]), "analysis": c["analysis"]}
                                     for c in body["index_candidates"]]}
    if "/_index" in path and "indexes" in body:
        return {"total_rows": body["total_rows"], "indexes": [index_entry(i) for i in body["indexes"]]}
    if "/_index" in path and "result" in body:
        return {k: unnamed(v) for k, v in body.items()}
    return None


# CouchDB's bookmark -> ours, learned from each pair of answers: a later request that
# continues from CouchDB's continues from ours (each reads only its own).
BOOKMARKS = {}


class MangoReplay(Replay):
    def ours(self, text):
        text = super().ours(text)
        for theirs, mine in BOOKMARKS.items():
            text = text.replace(theirs, mine) if text else text
        return text


def check(rec, status, headers, data):
    seq, path = rec["seq"], rec["request"]["path"]
    if seq in SHAPE_DIFFERENCES or seq in DIFFERENCES or not ("/_find" in path or "/_index" in path or "/_explain" in path):
        return None
    theirs, mine = json.loads(rec["response"]["body"]), json.loads(data)
    if isinstance(theirs, dict) and isinstance(mine, dict) and "bookmark" in theirs and "bookmark" in mine:
        BOOKMARKS[theirs["bookmark"]] = mine["bookmark"]
    want = comparable(path, theirs)
    got = comparable(path, mine)
    if want != got:
        return "CouchDB %s\n   cblite %s" % (json.dumps(want)[:1500], json.dumps(got)[:1500])
    return None


def test_mango_replays_as_couchdb(serve):
    mismatches = MangoReplay(serve(), "rest-mango.jsonl", DIFFERENCES, check=check).run()
    assert not mismatches, "\n".join(mismatches)
