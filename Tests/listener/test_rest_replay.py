"""CouchDB 3.5's answers to the document API (Tests/Fixtures/couchdb-3.5/rest-documents.jsonl),
replayed in order against `cblite serve` (rest_replay.py): every request gets CouchDB's status,
except the ones listed in DIFFERENCES with cblite's status and why (the README's table says the
same)."""
from rest_replay import Replay

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
    234: (400, "limit not an integer: CouchDB fails with 500 badarg"),
    235: (400, "style not main_only/all_docs: CouchDB fails with 500 badarg"),
    236: (400, "timeout not an integer: CouchDB fails with 500 badarg"),
}


def test_documents_replay_as_couchdb(serve):
    # _security from 237 on: per-database security is replayed with its own section.
    mismatches = Replay(serve(), "rest-documents.jsonl", DIFFERENCES).run(last=236)
    assert not mismatches, "\n".join(mismatches)
