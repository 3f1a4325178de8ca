import CBLiteCore
@testable import CBLiteListener
import Glibc
import XCTest

/// `POST /_replicate`, `_active_tasks` and `_scheduler/jobs`, answered as CouchDB 3.5
/// answers them (Tests/Fixtures/couchdb-3.5/rest-replicator.jsonl), run by cblite's own
/// replicator between served databases and a peer.
final class ServerReplicationTests: ListenerTestCase {
    private func seed(_ c: TestHTTPClient, _ db: String, count: Int) throws {
        XCTAssertEqual(try c.json("PUT", "/\(db)").status, 201)
        for i in 0..<count { XCTAssertEqual(try c.json("PUT", "/\(db)/d\(i)", #"{"n":\#(i)}"#).status, 201) }
    }

    private func ids(_ c: TestHTTPClient, _ db: String) throws -> [String] {
        try c.json("GET", "/\(db)/_all_docs").object["rows"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? []
    }

    func testOneShotBetweenServedDatabasesAnswersWithCouchDBsHistory() throws {
        try start()
        let c = try client()
        try seed(c, "src", count: 5)
        let r = try c.json("POST", "/_replicate", #"{"source":"src","target":"tgt","create_target":true}"#)
        XCTAssertEqual(r.status, 200, r.text)
        let o = r.object
        XCTAssertEqual(o["ok"], .bool(true))
        XCTAssertNil(o["no_changes"])
        XCTAssertEqual(o["session_id"]?.stringValue?.count, 32)
        let run = try XCTUnwrap(o["history"]?.arrayValue?.first?.objectValue)
        XCTAssertEqual(run["docs_written"], .int(5))
        XCTAssertEqual(run["doc_write_failures"], .int(0))
        XCTAssertTrue(run["start_time"]?.stringValue?.hasSuffix(" GMT") == true, "\(run)")
        XCTAssertEqual(try ids(c, "tgt"), ["d0", "d1", "d2", "d3", "d4"])
        // Again, with the full URLs a CouchDB client gives for the server's own databases.
        let port = listener.port
        let again = try c.json("POST", "/_replicate",
                               #"{"source":"http://127.0.0.1:\#(port)/src","target":{"url":"http://localhost:\#(port)/tgt"}}"#)
        XCTAssertEqual(again.status, 200, again.text)
        XCTAssertEqual(again.object["no_changes"], .bool(true))
        XCTAssertTrue(try c.json("GET", "/_active_tasks").json?.arrayValue?.isEmpty == true, "a finished one-shot job is gone")
    }

    func testContinuousJobIsListedCarriesChangesAndIsCancelled() throws {
        try start()
        let c = try client()
        try seed(c, "src", count: 1)
        let r = try c.json("POST", "/_replicate", #"{"source":"src","target":"tgt","create_target":true,"continuous":true}"#)
        XCTAssertEqual(r.status, 202, r.text)
        let id = try XCTUnwrap(r.object["_local_id"]?.stringValue)
        XCTAssertTrue(id.hasSuffix("+continuous+create_target"), id)
        // The same request again: the running job (200), not a second one.
        let same = try c.json("POST", "/_replicate", #"{"source":"src","target":"tgt","create_target":true,"continuous":true}"#)
        XCTAssertEqual(same.status, 200)
        XCTAssertEqual(same.object["_local_id"], .string(id))
        XCTAssertEqual(try c.json("PUT", "/src/later", #"{"n":9}"#).status, 201)
        let deadline = MonotonicTime.now().adding(milliseconds: 10_000)
        while try c.json("GET", "/tgt/later").status != 200 {
            XCTAssertLessThan(MonotonicTime.now(), deadline, "the continuous job did not carry the new document")
            usleep(100_000)
        }
        let tasks = try XCTUnwrap(c.json("GET", "/_active_tasks").json?.arrayValue)
        XCTAssertEqual(tasks.count, 1)
        XCTAssertEqual(tasks.first?.objectValue?["type"], .string("replication"))
        XCTAssertEqual(tasks.first?.objectValue?["replication_id"], .string(id))
        XCTAssertEqual(tasks.first?.objectValue?["continuous"], .bool(true))
        let jobs = try c.json("GET", "/_scheduler/jobs").object
        XCTAssertEqual(jobs["total_rows"], .int(1))
        XCTAssertEqual(jobs["jobs"]?.arrayValue?.first?.objectValue?["id"], .string(id))
        let encoded = id.replacingOccurrences(of: "+", with: "%2B")
        XCTAssertEqual(try c.json("GET", "/_scheduler/jobs/\(encoded)").object["source"], .string("src"))
        XCTAssertEqual(try c.json("GET", "/_scheduler/jobs/no-such-job").status, 404)
        XCTAssertEqual(try c.json("GET", "/_scheduler/docs").object["total_rows"], .int(0))
        // Cancelled by its ID, then by its specification (gone: 404).
        let cancel = try c.json("POST", "/_replicate", #"{"replication_id":"\#(id)","cancel":true}"#)
        XCTAssertEqual(cancel.status, 200, cancel.text)
        XCTAssertEqual(cancel.object["_local_id"], .string(id))
        let again = try c.json("POST", "/_replicate", #"{"source":"src","target":"tgt","create_target":true,"continuous":true,"cancel":true}"#)
        XCTAssertEqual(again.status, 404)
        XCTAssertEqual(again.object["reason"], .string("missing"))
        XCTAssertTrue(try c.json("GET", "/_active_tasks").json?.arrayValue?.isEmpty == true)
    }

    func testAPullFromAPeerWithCredentialsAndTheListenerStoppingAContinuousJob() throws {
        // The peer: a second listener with a user.
        var template = Array("/tmp/cblite-peer-XXXXXX".utf8CString)
        let peerDir = String(cString: mkdtemp(&template)!)
        defer { _ = system("rm -rf '\(peerDir)'") }
        let peer = try Listener(configuration: #"{"directory":"\#(peerDir)","port":0,"users":{"bob":"pw"}}"#)
        try peer.start()
        defer { peer.stop() }
        let pc = try TestHTTPClient(port: peer.port)
        let auth = [("Authorization", "Basic " + Base64.encode(Array("bob:pw".utf8)))]
        XCTAssertEqual(try pc.json("PUT", "/remote", headers: auth).status, 201)
        XCTAssertEqual(try pc.json("PUT", "/remote/r1", #"{"v":1}"#, headers: auth).status, 201)

        try start()
        let c = try client()
        let body = #"{"source":{"url":"http://127.0.0.1:\#(peer.port)/remote","auth":{"basic":{"username":"bob","password":"pw"}}},"#
            + #""target":"local","create_target":true}"#
        let r = try c.json("POST", "/_replicate", body)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual(try ids(c, "local"), ["r1"])
        // A wrong password: CouchDB's 401.
        let wrong = try c.json("POST", "/_replicate", #"{"source":"http://bob:nope@127.0.0.1:\#(peer.port)/remote","target":"local"}"#)
        XCTAssertEqual(wrong.status, 401, wrong.text)
        XCTAssertEqual(wrong.object["error"], .string("unauthorized"))
        // A continuous pull ends with the listener (stop returns; nothing is left running).
        XCTAssertEqual(try c.json("POST", "/_replicate", String(body.dropLast()) + #","continuous":true}"#).status, 202)
        listener.stop()
        XCTAssertFalse(listener.isRunning)
    }

    func testServedDatabasesBehindUsersReplicateAsTheUserWhoAsked() throws {
        try start(#""users":{"admin":"s3cret"}"#)
        let c = try client()
        let auth = [("Authorization", "Basic " + Base64.encode(Array("admin:s3cret".utf8)))]
        XCTAssertEqual(try c.json("PUT", "/a", headers: auth).status, 201)
        XCTAssertEqual(try c.json("PUT", "/a/x", #"{"v":1}"#, headers: auth).status, 201)
        let r = try c.json("POST", "/_replicate", #"{"source":"a","target":"b","create_target":true}"#, headers: auth)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual(try c.json("GET", "/b/x", headers: auth).status, 200)
        XCTAssertEqual(try c.json("POST", "/_replicate", #"{"source":"a","target":"b"}"#).status, 401, "anonymous: refused")
    }

    /// What CouchDB refuses, refused with its reasons (a few statuses differ: see README).
    func testBadRequestsGetCouchDBsReasons() throws {
        try start()
        let c = try client()
        try seed(c, "src", count: 0)
        func check(_ body: String, _ status: Int, _ reason: String, file: StaticString = #filePath, line: UInt = #line) throws {
            let r = try c.json("POST", "/_replicate", body)
            XCTAssertEqual(r.status, status, r.text, file: file, line: line)
            XCTAssertEqual(r.object["reason"]?.stringValue, reason, file: file, line: line)
        }
        try check(#"{"source":"src","target":"t","doc_ids":["r01"],"filter":"f/g"}"#, 400, "`doc_ids`,`filter`,`selector` are mutually exclusive")
        try check(#"{"source":"src","target":"t","doc_ids":"r01"}"#, 400, "parameter `doc_ids` must be an array")
        try check(#"{"source":"src","target":"t","continuous":"yes"}"#, 400, "parameter `continuous` must be a boolean")
        try check(#"{"source":"src","target":"t","filter":"nofilter"}"#, 400, "Invalid filter. Must match `ddocname/filtername`.")
        try check(#"{}"#, 400, "`source` and `target` are required")
        try check(#"{"source":"http://127.0.0.1:1/a","target":"http://127.0.0.1:2/b"}"#, 400,
                  "cblite replicates between one of its databases and a peer: `source` or `target` must name a database of this listener")
        XCTAssertEqual(try c.json("POST", "/_replicate", #"{"source":"nosuch","target":"http://127.0.0.1:1/b"}"#).status, 404)
        let get = try c.json("GET", "/_replicate")
        XCTAssertEqual(get.status, 400)
        XCTAssertEqual(get.object["reason"], .string("Missing request body"))
        let text = try c.request("POST", "/_replicate", headers: [("Content-Type", "text/plain")], body: Array("{}".utf8))
        XCTAssertEqual(text.status, 415)
        XCTAssertEqual(text.object["error"], .string("bad_content_type"))
        let refused = try c.json("POST", "/_replicate", #"{"source":"src","target":"http://127.0.0.1:1/nothing"}"#)
        XCTAssertEqual(refused.status, 500, refused.text)
        XCTAssertEqual(refused.object["error"], .string("error"))
    }
}

/// CouchDB's `_replicator` database: documents that start, record and stop replications.
final class ReplicatorDatabaseTests: ListenerTestCase {
    private func waitFor(_ what: String, _ c: TestHTTPClient, _ condition: () throws -> Bool) throws {
        let deadline = MonotonicTime.now().adding(milliseconds: 15_000)
        while try !condition() {
            guard MonotonicTime.now() < deadline else { return XCTFail("timed out waiting for \(what)") }
            usleep(50_000)
        }
    }

    func testAOneShotDocumentRunsAndRecordsItsEnd() throws {
        try start()
        let c = try client()
        XCTAssertEqual(try c.json("PUT", "/src").status, 201)
        XCTAssertEqual(try c.json("PUT", "/src/a", #"{"v":1}"#).status, 201)
        let put = try c.json("PUT", "/_replicator/job1", #"{"source":"src","target":"tgt","create_target":true}"#)
        XCTAssertEqual(put.status, 201, put.text)
        try waitFor("the state written back", c) {
            try c.json("GET", "/_replicator/job1").object["_replication_state"] == .string("completed")
        }
        let doc = try c.json("GET", "/_replicator/job1").object
        XCTAssertEqual(doc["_replication_stats"]?.objectValue?["docs_written"], .int(1))
        XCTAssertTrue(doc["_replication_state_time"]?.stringValue?.hasSuffix("Z") == true)
        XCTAssertEqual(try c.json("GET", "/tgt/a").status, 200)
        let entry = try c.json("GET", "/_scheduler/docs/_replicator/job1").object
        XCTAssertEqual(entry["state"], .string("completed"))
        XCTAssertEqual(entry["database"], .string("_replicator"))
        XCTAssertEqual(entry["source"], .string("src"))
        XCTAssertEqual(try c.json("GET", "/_scheduler/docs").object["total_rows"], .int(1))
        XCTAssertEqual(try c.json("GET", "/_scheduler/docs/_replicator/no-such-doc").status, 404)
        XCTAssertEqual(try c.json("GET", "/_scheduler/docs/other/x").object["reason"], .string("Invalid path"))
        XCTAssertTrue(try c.json("GET", "/_all_dbs").json?.arrayValue?.contains(.string("_replicator")) == true)
    }

    func testInvalidDocumentsAreRefusedWithTheReason() throws {
        try start()
        let c = try client()
        let bad = try c.json("PUT", "/_replicator/bad", #"{"source":"src","target":"t","continuous":"yes"}"#)
        XCTAssertEqual(bad.status, 403, bad.text)
        XCTAssertEqual(bad.object["reason"], .string("parameter `continuous` must be a boolean"))
        XCTAssertEqual(try c.json("PUT", "/_replicator/bad2", #"{"source":42,"target":"x"}"#).status, 403)
        XCTAssertEqual(try c.json("GET", "/_replicator/bad").status, 404, "nothing stored")
    }

    func testAContinuousDocumentRunsUntilDeletedAndResumesAfterARestart() throws {
        try start()
        var c = try client()
        XCTAssertEqual(try c.json("PUT", "/src").status, 201)
        let put = try c.json("PUT", "/_replicator/cont", #"{"source":"src","target":"tgt","create_target":true,"continuous":true}"#)
        XCTAssertEqual(put.status, 201)
        try waitFor("the job", c) { try c.json("GET", "/_scheduler/docs/_replicator/cont").object["state"] == .string("running") }
        XCTAssertEqual(try c.json("PUT", "/src/one", #"{"v":1}"#).status, 201)
        try waitFor("the first document", c) { try c.json("GET", "/tgt/one").status == 200 }

        // Restarted: the job resumes from the document.
        let port = listener.port
        listener.stop()
        listener = try Listener(configuration: #"{"directory":"\#(directory)","port":\#(port)}"#)
        try listener.start()
        c = try client()
        XCTAssertEqual(try c.json("PUT", "/src/two", #"{"v":2}"#).status, 201)
        try waitFor("the second document", c) { try c.json("GET", "/tgt/two").status == 200 }

        // Deleted: it stops.
        let rev = try XCTUnwrap(c.json("GET", "/_replicator/cont").object["_rev"]?.stringValue)
        XCTAssertEqual(try c.json("DELETE", "/_replicator/cont?rev=\(rev)").status, 200)
        try waitFor("the job to stop", c) { try c.json("GET", "/_active_tasks").json?.arrayValue?.isEmpty == true }
        XCTAssertEqual(try c.json("GET", "/_scheduler/docs").object["total_rows"], .int(0))
    }
}
