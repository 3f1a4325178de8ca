import CBLiteCore
import CBLiteListener
@testable import CBLiteReplicator
import Glibc
import XCTest

/// Revisions that must not be lost after one failed attempt: failures kept with the
/// checkpoint and retried, a stub CouchDB marks revpos 0, an empty attachment served to
/// a pull, a doc-ids pull that asks for those documents only.
final class FailedRevisionTests: ReplicatorTestCase {
    /// A CouchDB-like source: `_changes` (rows once, then none after "9-x"), `_bulk_get`
    /// and `open_revs` answered by `docs` (id -> JSON of the revision), `_local` kept.
    func couchLikePeer(rows: String, pending: Int? = nil, docs: @escaping @Sendable (String) -> String?,
                       openRevs: (@Sendable (String, String) -> [UInt8]?)? = nil) throws -> FakePeer {
        let local = FakeLocalDocuments()
        return try FakePeer { method, target, body, _ in
            let path = target.split(separator: "?").first.map(String.init) ?? target
            switch (method, path) {
            case ("GET", "/db/"): return FakePeer.response(200, #"{"db_name":"db","update_seq":"9-x"}"#)
            case (_, _) where path.hasPrefix("/db/_local/"): return local.answer(method, path, body)
            case (_, "/db/_changes"):
                if target.contains("since=9-x") { return FakePeer.response(200, #"{"results":[],"last_seq":"9-x","pending":0}"#) }
                return FakePeer.response(200, #"{"results":[\#(rows)],"last_seq":"9-x"\#(pending.map { ",\"pending\":\($0)" } ?? "")}"#)
            case ("POST", "/db/_bulk_get"):
                let request = (try? JSONParser.parseObject(String(decoding: body, as: UTF8.self), what: "test"))?["docs"]?.arrayValue ?? []
                let results = request.compactMap { $0.objectValue?["id"]?.stringValue }.map { id in
                    "{\"id\":\"\(id)\",\"docs\":[" + (docs(id).map { "{\"ok\":\($0)}" } ?? #"{"error":{"id":"\#(id)","error":"not_found","reason":"missing"}}"#) + "]}"
                }
                return FakePeer.response(200, "{\"results\":[\(results.joined(separator: ","))]}")
            case ("GET", _) where target.contains("open_revs="):
                let id = String(path.dropFirst("/db/".count))
                if let answer = openRevs?(id, target) { return answer }
                guard let d = docs(id) else { return FakePeer.response(404, #"{"error":"not_found","reason":"missing"}"#) }
                return FakePeer.response(200, "[{\"ok\":\(d)}]")
            default: return FakePeer.response(404, #"{"error":"not_found","reason":"missing"}"#)
            }
        }
    }

    /// A revision that failed (here: a duplicate key this engine refuses) waits with the
    /// checkpoint: the next run, which finds no new change, tries it again; once the
    /// peer serves it in a form that can be stored, it arrives and the list is empty.
    func testAFailedRevisionIsRetriedByLaterRunsUntilItArrives() throws {
        let fixed = LockedValue(false)
        let peer = try couchLikePeer(rows: #"{"seq":"1-x","id":"good","changes":[{"rev":"1-aaaa"}]},{"seq":"9-x","id":"bad","changes":[{"rev":"1-bbbb"}]}"#,
                                     docs: { id in
            switch id {
            case "good": return #"{"_id":"good","_rev":"1-aaaa","_revisions":{"start":1,"ids":["aaaa"]},"v":1}"#
            case "bad": return fixed.withLock { $0 } ? #"{"_id":"bad","_rev":"1-bbbb","_revisions":{"start":1,"ids":["bbbb"]},"v":2}"#
                : #"{"_id":"bad","_rev":"1-bbbb","_revisions":{"start":1,"ids":["bbbb"]},"v":1,"v":2}"#
            default: return nil
            }
        })
        defer { peer.stop() }
        let first = try replicate("\"direction\":\"pull\"", url: peer.url)
        XCTAssertEqual(first.documentsPulled, 1)
        XCTAssertEqual(first.documentFailures, 1)
        XCTAssertEqual(first.documentsToRetry, 1)
        XCTAssertEqual(first.json["documents_to_retry"], .int(1))

        // The checkpoint is past "bad", yet the next run asks for it by name, and it fails again.
        let r = try makeReplicator("\"direction\":\"pull\"", url: peer.url)
        XCTAssertEqual(r.failedDocuments.map { "\($0.direction) \($0.docID) \($0.revID ?? "")" }, ["pull bad 1-bbbb"])
        XCTAssertEqual(r.status.documentsToRetry, 1)
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 60_000))
        XCTAssertEqual(r.status.total, 0)
        XCTAssertEqual(r.status.documentFailures, 1)
        XCTAssertEqual(r.status.documentsToRetry, 1)
        r.stop()

        fixed.withLock { $0 = true }
        let third = try replicate("\"direction\":\"pull\"", url: peer.url)
        XCTAssertNil(third.errorMessage)
        XCTAssertEqual(third.documentsPulled, 1)
        XCTAssertEqual(third.documentsToRetry, 0)
        XCTAssertEqual(try body(localColl, "bad")["v"], .int(2))
        XCTAssertEqual(try makeReplicator("\"direction\":\"pull\"", url: peer.url).failedDocuments.count, 0)
    }

    /// A pulled revision a local design document's validate_doc_update refuses fails that
    /// document alone, counted as CouchDB's replicator counts doc_write_failures.
    func testAPullRefusedByValidateDocUpdateFailsThatDocumentAlone() throws {
        _ = try localColl.put(docID: "_design/v", json: #"{"validate_doc_update":"function (d) { if (d.forbid) throw({forbidden: 'no'}); }"}"#,
                              parent: nil)
        let peer = try couchLikePeer(rows: #"{"seq":"1-x","id":"good","changes":[{"rev":"1-aaaa"}]},{"seq":"9-x","id":"bad","changes":[{"rev":"1-bbbb"}]}"#,
                                     docs: { id in
            switch id {
            case "good": return #"{"_id":"good","_rev":"1-aaaa","_revisions":{"start":1,"ids":["aaaa"]},"v":1}"#
            case "bad": return #"{"_id":"bad","_rev":"1-bbbb","_revisions":{"start":1,"ids":["bbbb"]},"forbid":true}"#
            default: return nil
            }
        })
        defer { peer.stop() }
        let r = try replicate("\"direction\":\"pull\"", url: peer.url)
        XCTAssertEqual(r.documentsPulled, 1)
        XCTAssertEqual(r.documentFailures, 1)
        XCTAssertEqual(try body(localColl, "good")["v"], .int(1))
        XCTAssertThrowsError(try localColl.get(docID: "bad"))
    }

    /// Cleared failures are not tried again, by this replicator or a later one.
    func testClearedFailuresAreNotRetried() throws {
        let peer = try couchLikePeer(rows: #"{"seq":"9-x","id":"bad","changes":[{"rev":"1-bbbb"}]}"#, docs: { id in
            id == "bad" ? #"{"_id":"bad","_rev":"1-bbbb","_revisions":{"start":1,"ids":["bbbb"]},"v":1,"v":2}"# : nil
        })
        defer { peer.stop() }
        XCTAssertEqual(try replicate("\"direction\":\"pull\"", url: peer.url).documentsToRetry, 1)
        let r = try makeReplicator("\"direction\":\"pull\"", url: peer.url)
        try r.clearFailedDocuments()
        XCTAssertEqual(r.status.documentsToRetry, 0)
        let asked = peer.requests.withLock { $0.count }
        try r.start()
        XCTAssertTrue(r.waitUntilStopped(timeoutMs: 60_000))
        r.stop()
        XCTAssertEqual(r.status.documentFailures, 0)
        XCTAssertFalse(peer.requests.withLock { $0[asked...].contains { $0.target.contains("_bulk_get") || $0.target.contains("open_revs") } })
        XCTAssertEqual(try makeReplicator("\"direction\":\"pull\"", url: peer.url).failedDocuments.count, 0)
    }

    /// A push the peer refuses for one document: that revision is offered again by the
    /// next run (the local feed is past it) and goes once the peer takes it.
    func testARefusedPushIsOfferedAgainByTheNextRun() throws {
        try serve()
        let port = listener.port
        let refuse = LockedValue(true)
        let rev = try put(localColl, "no", "{}")
        let peer = try FakePeer { method, target, body, headers in
            if refuse.withLock({ $0 }), target.hasSuffix("/_bulk_docs") {
                return FakePeer.response(201, #"[{"id":"no","rev":"\#(rev)","error":"forbidden","reason":"not today"}]"#)
            }
            return PeerBehaviourTests.forward(method, target, body, headers, port: port)
        }
        defer { peer.stop() }
        let url = "http://127.0.0.1:\(peer.port)/remote"
        let first = try replicate("\"direction\":\"push\"", url: url)
        XCTAssertEqual(first.documentFailures, 1)
        XCTAssertEqual(first.documentsToRetry, 1)
        refuse.withLock { $0 = false }
        let second = try replicate("\"direction\":\"push\"", url: url)
        XCTAssertEqual(second.documentsPushed, 1)
        XCTAssertEqual(second.documentsToRetry, 0)
        XCTAssertNotNil(try? remoteColl.get(docID: "no"))
    }

    /// CouchDB writes revpos 0 for an attachment given inline with new_edits=false: on a
    /// conflict branch it looks older than what this database has, yet its content is
    /// not here. The revision is fetched again with every attachment and arrives.
    func testAStubWithRevposZeroOnABranchIsFetchedWithItsContent() throws {
        let parent = try put(localColl, "branch", "{\"v\":1}")        // 1-..., where the branches part
        let ours = try put(localColl, "branch", "{\"v\":\"ours\"}", parent: parent)
        let digest = String(parent.split(separator: "-")[1])
        let stub = #"{"_id":"branch","_rev":"2-cccc","_revisions":{"start":2,"ids":["cccc","\#(digest)"]},"v":2,"_attachments":{"a.txt":{"content_type":"text/plain","revpos":0,"digest":"md5-XUFAKrxLKna5cZ2REBfFkg==","length":5,"stub":true}}}"#
        let withContent = stub.replacingOccurrences(of: #""stub":true"#, with: #""follows":true"#)
        let full = LockedValue(0)
        let peer = try couchLikePeer(rows: #"{"seq":"9-x","id":"branch","changes":[{"rev":"2-cccc"}]}"#,
                                     docs: { $0 == "branch" ? stub : nil },
                                     openRevs: { _, target in
            // As CouchDB: what atts_since covers (revpos 0 always is) stays a stub.
            if target.contains("atts_since") { return FakePeer.response(200, "[{\"ok\":\(stub)}]") }
            full.withLock { $0 += 1 }
            let related = "--in\r\nContent-Type: application/json\r\n\r\n\(withContent)\r\n--in\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello\r\n--in--"
            let mixed = "--out\r\nContent-Type: multipart/related; boundary=\"in\"\r\n\r\n\(related)\r\n--out--"
            return FakePeer.response(200, mixed, contentType: "multipart/mixed; boundary=\"out\"")
        })
        defer { peer.stop() }
        let s = try replicate("\"direction\":\"pull\"", url: peer.url)
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentFailures, 0)
        XCTAssertEqual(s.documentsPulled, 1)
        XCTAssertEqual(full.withLock { $0 }, 1)
        XCTAssertEqual(try leaves(localColl)["branch"], [ours, "2-cccc"])
        let rev = try localColl.revision(docID: "branch", revID: "2-cccc", options: { var o = RevisionOptions(); o.attachments = .inline; return o }())
        XCTAssertTrue(String(decoding: rev.json, as: UTF8.self).contains(Base64.encode(Array("hello".utf8))))
    }

    /// An empty attachment is served inline (`"data":""`), never as a zero-length part
    /// CouchDB's replicator cannot read, and arrives empty.
    func testAnEmptyAttachmentIsServedInlineAndArrives() throws {
        try serve()
        let rev = try put(remoteColl, "e", "{}")
        _ = try remoteColl.setAttachment(docID: "e", parent: rev, name: "empty.txt", contentType: "text/plain", bytes: [])
        let port = listener.port
        let answers = LockedValue<[String]>([])
        let peer = try FakePeer { method, target, body, headers in
            let answer = PeerBehaviourTests.forward(method, target, body, headers, port: port)
            if target.contains("open_revs") || target.contains("_bulk_get") { answers.withLock { $0.append(String(decoding: answer ?? [], as: UTF8.self)) } }
            return answer
        }
        defer { peer.stop() }
        let s = try replicate("\"direction\":\"pull\"", url: "http://127.0.0.1:\(peer.port)/remote")
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPulled, 1)
        XCTAssertEqual(try localColl.attachmentContent(docID: "e", name: "empty.txt").count, 0)
        let served = answers.withLock { $0 }
        XCTAssertFalse(served.isEmpty)
        XCTAssertFalse(served.contains { $0.contains("\"follows\":true") }, "\(served)")
        XCTAssertFalse(served.contains { $0.contains("Content-Length: 0\r\n") }, "\(served)")
    }

    /// A doc-ids pull asks for those documents only (POST `filter=_doc_ids`, as CouchDB's
    /// replicator), and its total is theirs, not CouchDB's unfiltered `pending`.
    func testADocIDsPullAsksForThoseDocumentsOnly() throws {
        let peer = try couchLikePeer(rows: #"{"seq":"9-x","id":"a","changes":[{"rev":"1-aaaa"}]}"#, pending: 97, docs: { id in
            id == "a" ? #"{"_id":"a","_rev":"1-aaaa","_revisions":{"start":1,"ids":["aaaa"]}}"# : nil
        })
        defer { peer.stop() }
        let s = try replicate("\"direction\":\"pull\",\"doc_ids\":[\"a\",\"b\"]", url: peer.url)
        XCTAssertNil(s.errorMessage)
        XCTAssertEqual(s.documentsPulled, 1)
        XCTAssertEqual(s.total, 1)
        let changes = peer.requests.withLock { $0.filter { $0.target.contains("/_changes") } }
        XCTAssertFalse(changes.isEmpty)
        for c in changes {
            XCTAssertEqual(c.method, "POST")
            XCTAssertTrue(c.target.contains("filter=_doc_ids"), c.target)
            XCTAssertEqual(String(decoding: c.body, as: UTF8.self), #"{"doc_ids":["a","b"]}"#)
        }
    }
}
