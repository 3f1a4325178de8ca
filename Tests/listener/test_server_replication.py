"""`POST /_replicate`, `_active_tasks` and `_scheduler/*` of `cblite serve`, replayed from
CouchDB 3.5's recorded answers (Tests/Fixtures/couchdb-3.5/rest-replicator.jsonl): the same
requests, with the recording's database names and URLs mapped to this server's, must get
the same status and answers of the same form (the members CouchDB gives, where cblite has
the value; see DIFFERENCES)."""
import json
import time

from conftest import recording

# What cblite answers differently, and why (also in the README's table).
DIFFERENCES = {
    # CouchDB answers 500 for these malformed requests; cblite says what is wrong with 400.
    "filter without a slash": (500, 400),
    "no source or target": (500, 400),
    # Members of a run's history that name sequences of CouchDB's own (and bulk_get
    # counters): cblite's replicator checkpoints its own way and does not report them.
    "history members": {"start_last_seq", "end_last_seq", "recorded_seq", "bulk_get_docs", "bulk_get_attempts"},
    "answer members": {"source_last_seq"},
}


def exchanges():
    return {r["seq"]: r for r in recording("rest-replicator.jsonl")}


def mapped(body, s):
    """A recorded request body with CouchDB's databases and URLs turned into this server's."""
    text = body.replace("http://admin:<redacted>@127.0.0.1:5984/", s.url).replace("http://127.0.0.1:5984/", s.url)
    return json.loads(text.replace("rec_repl_", "r_"))


def recorded_json(rec):
    return json.loads(rec["response"]["body"])


def test_one_shot_answers_as_couchdb(serve):
    s = serve()
    rec = exchanges()
    assert s.json("PUT", "/r_src")[0] == 201
    for i in range(3):
        assert s.json("PUT", "/r_src/r0%d" % i, {"n": i})[0] == 201
    for seq in (1, 2):     # by names, then by the server's own URLs
        status, body = s.json("POST", "/_replicate", mapped(rec[seq]["request"]["body"], s))
        want = recorded_json(rec[seq])
        assert status == rec[seq]["response"]["status"] == 200, body
        # seq 2 finds nothing left to copy here (CouchDB copied again: it names the databases
        # by URL in the replication ID), hence "no_changes", a member of CouchDB's answers too.
        assert set(body) - {"no_changes"} <= set(want) and set(want) - set(body) <= DIFFERENCES["answer members"], (body, want)
        run, want_run = body["history"][0], want["history"][0]
        assert set(want_run) - set(run) == DIFFERENCES["history members"], run
        assert set(run) <= set(want_run)
        assert run["docs_written"] == (3 if seq == 1 else 0)
    status, body = s.json("POST", "/_replicate", mapped(rec[3]["request"]["body"], s))
    assert status == 200 and body["no_changes"] is True
    ids = [r["id"] for r in s.json("GET", "/r_tgt1/_all_docs")[1]["rows"]]
    assert ids == ["r00", "r01", "r02"]


def test_continuous_jobs_tasks_scheduler_and_cancel_as_couchdb(serve):
    s = serve()
    rec = exchanges()
    assert s.json("PUT", "/r_src")[0] == 201
    assert s.json("PUT", "/r_src/a", {"v": 1})[0] == 201
    status, body = s.json("POST", "/_replicate", mapped(rec[12]["request"]["body"], s))
    assert status == rec[12]["response"]["status"] == 202
    job = body["_local_id"]
    assert set(body) == set(recorded_json(rec[12])) and job.endswith("+continuous+create_target")
    deadline = time.time() + 15
    while s.json("GET", "/r_tgt6/a")[0] != 200:
        assert time.time() < deadline, "the continuous job did not copy the document"
        time.sleep(0.1)
    status, tasks = s.json("GET", "/_active_tasks")
    want_task = recorded_json(rec[13])[0]
    assert status == 200 and len(tasks) == 1
    assert tasks[0]["replication_id"] == job and tasks[0]["type"] == "replication" and tasks[0]["continuous"] is True
    assert set(tasks[0]) <= set(want_task), set(tasks[0]) - set(want_task)
    status, jobs = s.json("GET", "/_scheduler/jobs")
    want_jobs = recorded_json(rec[14])
    assert status == 200 and set(jobs) == set(want_jobs) and jobs["total_rows"] == 1
    assert set(jobs["jobs"][0]) <= set(want_jobs["jobs"][0]) | {"state"}
    status, one = s.json("GET", "/_scheduler/jobs/" + job.replace("+", "%2B"))
    assert status == 200 and one["id"] == job
    for seq in (16, 17):
        status, body = s.json("GET", rec[seq]["request"]["path"])
        assert (status, body) == (rec[seq]["response"]["status"], recorded_json(rec[seq]))
    status, docs = s.json("GET", "/_scheduler/docs")
    assert (status, docs) == (200, recorded_json(rec[18]))
    # Cancelled by the request that started it (seq 19), then gone: 404 missing (seq 20).
    for seq in (19, 20):
        status, body = s.json("POST", "/_replicate", mapped(rec[seq]["request"]["body"], s))
        assert (status, body) == (rec[seq]["response"]["status"], recorded_json(rec[seq]) if seq == 20 else
                                  {"ok": True, "_local_id": job}), seq
    # Another one (seq 21), started twice (the running job again, 200), cancelled by its ID (seq 22's form).
    status, body = s.json("POST", "/_replicate", mapped(rec[21]["request"]["body"], s))
    assert status == 202
    other = body["_local_id"]
    assert other != job
    status, again = s.json("POST", "/_replicate", mapped(rec[21]["request"]["body"], s))
    assert (status, again["_local_id"]) == (200, other)
    status, body = s.json("POST", "/_replicate", {"replication_id": other, "cancel": True})
    assert (status, body) == (rec[22]["response"]["status"], {"ok": True, "_local_id": other})
    assert s.json("GET", "/_active_tasks") == (200, [])


def test_bad_requests_answer_as_couchdb(serve):
    s = serve()
    rec = exchanges()
    assert s.json("PUT", "/r_src")[0] == 201
    for seq in (11, 48):
        status, body = s.json("POST", "/_replicate", mapped(rec[seq]["request"]["body"], s))
        assert (status, body) == (rec[seq]["response"]["status"], recorded_json(rec[seq])), seq
    status, body = s.json("POST", "/_replicate", mapped(rec[47]["request"]["body"], s))
    assert (rec[47]["response"]["status"], status) == DIFFERENCES["filter without a slash"]
    assert body["reason"] == recorded_json(rec[47])["reason"]
    status, body = s.json("POST", "/_replicate", {})
    assert (rec[44]["response"]["status"], status) == DIFFERENCES["no source or target"]
    status, _, raw = s.request("GET", "/_replicate")
    assert (status, json.loads(raw)) == (rec[49]["response"]["status"], recorded_json(rec[49]))
    status, _, raw = s.request("POST", "/_replicate", body="{}", headers={"Content-Type": "text/plain"})
    assert (status, json.loads(raw)) == (rec[50]["response"]["status"], recorded_json(rec[50]))
    assert s.json("PUT", "/r_tgt1")[0] == 201
    status, body = s.json("POST", "/_replicate", mapped(rec[46]["request"]["body"], s))
    assert (status, body["error"]) == (500, "error")


def test_between_served_databases_over_tls_with_users(serve):
    s = serve("--tls-anonymous", "--user", "admin:s3cret")
    auth = {"Authorization": "Basic YWRtaW46czNjcmV0"}
    assert s.json("PUT", "/a", headers=auth)[0] == 201
    assert s.json("PUT", "/a/x", {"v": 1}, headers=auth)[0] == 201
    status, body = s.json("POST", "/_replicate", {"source": "a", "target": "b", "create_target": True}, headers=auth)
    assert status == 200, body
    assert s.json("GET", "/b/x", headers=auth)[1]["v"] == 1
    assert s.json("POST", "/_replicate", {"source": "a", "target": "b"})[0] == 401


def wait_until(what, condition, timeout=15):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.05)


def test_replicator_database_as_couchdb(serve):
    """seq 23-39: jobs as `_replicator` documents, their state in the document and in
    `_scheduler/docs`, invalid ones refused, deletion stopping them."""
    s = serve()
    rec = exchanges()
    assert s.json("PUT", "/r_src")[0] == 201
    assert s.json("PUT", "/r_src/a", {"v": 1})[0] == 201
    status, body = s.json("PUT", "/_replicator/rec_job_1", mapped(rec[23]["request"]["body"], s))
    assert status == rec[23]["response"]["status"] and set(body) == set(recorded_json(rec[23]))
    wait_until("the state written back",
               lambda: s.json("GET", "/_replicator/rec_job_1")[1].get("_replication_state") == "completed")
    doc, want = s.json("GET", "/_replicator/rec_job_1")[1], recorded_json(rec[25])
    assert {k for k in want if k.startswith("_replication")} == {k for k in doc if k.startswith("_replication")}
    assert set(doc["_replication_stats"]) <= set(want["_replication_stats"])
    status, entry = s.json("GET", "/_scheduler/docs/_replicator/rec_job_1")
    want = recorded_json(rec[26])
    assert status == 200 and entry["state"] == want["state"] == "completed"
    assert set(entry) <= set(want) | {"info"}, set(entry) - set(want)
    # A document that cannot run: CouchDB's 403 with the reason inside its Erlang term.
    for seq in (30, 31):
        status, body = s.json("PUT", rec[seq]["request"]["path"].replace("rec_repl_", "r_"),
                              mapped(rec[seq]["request"]["body"], s))
        assert (status, body["error"]) == (403, "forbidden"), body
        assert body["reason"].strip("`") in recorded_json(rec[seq])["reason"] or seq == 30
    # A continuous one runs until its document is deleted.
    status, body = s.json("PUT", "/_replicator/rec_job_cont", mapped(rec[32]["request"]["body"], s))
    assert status == 201
    wait_until("the job", lambda: s.json("GET", "/_scheduler/docs/_replicator/rec_job_cont")[1].get("state") == "running")
    status, docs = s.json("GET", "/_scheduler/docs/_replicator")
    assert status == 200 and set(docs) == set(recorded_json(rec[34])) and docs["total_rows"] == 2
    for seq in (35, 36):
        status, body = s.json("GET", rec[seq]["request"]["path"].replace("rec_", "r_"))
        assert (status, body) == (rec[seq]["response"]["status"], recorded_json(rec[seq])), seq
    rev = s.json("GET", "/_replicator/rec_job_cont")[1]["_rev"]
    status, body = s.json("DELETE", "/_replicator/rec_job_cont?rev=" + rev)
    assert status == rec[37]["response"]["status"] == 200
    wait_until("the job to stop", lambda: s.json("GET", "/_active_tasks")[1] == [])
