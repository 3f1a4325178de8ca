import XCTest
import Foundation
@testable import CBLiteCore

/// The engine's replication surface (issue 10 §1): revs_diff, inserting a peer's
/// revisions with their history, open_revs / _bulk_get / revision reads, bulk saves,
/// changes by doc IDs and named filters with waiting, local docs listing, purge of
/// leaves and the database uuid. Revision IDs and shapes follow the CouchDB 3.5
/// recordings in Tests/Fixtures/couchdb-3.5 (client-shapes.jsonl, push-by-couchdb.jsonl).
final class ReplicationTests: CBLCollectionTestCase {
    // The recorded data set's revision IDs.
    let plain01 = "1-0c822adc66f98458333e775f90a93a6b"
    let conf1 = "1-d3be72beae043af6e69cf3f780dc4ced"
    let confA = "2-a43763cb6510199739a3d88e72322572"      // "edited here": wins in CouchDB
    let conf0 = "2-0123456789abcdef0123456789abcdef"      // made with new_edits:false
    let attBin1 = "1-fd1cd850126a2c9c3ed93f86df1910c2"
    let attBin2 = "2-47b1ffe7e7d0d40166fb07f3b4e5d8c8"

    // MARK: helpers

    /// A peer's document JSON: `_id`, `_rev` (history[0]), `_revisions` from the history
    /// (newest first), then `extra` members.
    func peerDoc(_ id: String, _ history: [String], _ extra: String = "") -> String {
        let start = RevID(history[0])!.generation
        let ids = history.map { "\"\(RevID($0)!.digest)\"" }.joined(separator: ",")
        var s = "{\"_id\":\"\(id)\",\"_rev\":\"\(history[0])\",\"_revisions\":{\"start\":\(start),\"ids\":[\(ids)]}"
        if !extra.isEmpty { s += "," + extra }
        return s + "}"
    }

    func existing(_ json: String, _ atts: [String: BlobInfo] = [:]) -> Collection.ExistingRevision {
        Collection.ExistingRevision(body: obj(json), attachments: atts)
    }

    /// Inserts one peer revision and asserts it succeeded.
    func insertOK(_ json: String, _ atts: [String: BlobInfo] = [:], file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try coll.insertExistingRevisions([existing(json, atts)])
        XCTAssertEqual(r.count, 1, file: file, line: line)
        XCTAssertNil(r.first?.error, "inserting \(json.prefix(200))", file: file, line: line)
    }

    /// Inserts one peer revision and returns its error (nil: it succeeded).
    func insertError(_ json: String, _ atts: [String: BlobInfo] = [:]) throws -> CBLError? {
        try coll.insertExistingRevisions([existing(json, atts)]).first?.error
    }

    /// The recorded `conflicted` document: 1-d3be… then two rev-2 leaves.
    func makeConflicted(_ id: String = "conflicted", bothOrders reversed: Bool = false) throws {
        try insertOK(peerDoc(id, [conf1], #""type":"conflicted","value":"original""#))
        let a = peerDoc(id, [confA, conf1], #""type":"conflicted","value":"edited here""#)
        let z = peerDoc(id, [conf0, conf1], #""type":"conflicted","value":"edited on another peer""#)
        for j in reversed ? [z, a] : [a, z] { try insertOK(j) }
    }

    func describe(_ rs: [OpenRevsResult]) -> [String] {
        rs.map {
            switch $0 {
            case .ok(let r): return (r.deleted ? "deleted " : "ok ") + r.revID
            case .missing(let m): return "missing " + m
            }
        }
    }

    func revisionObject(_ r: OpenRevsResult?, file: StaticString = #filePath, line: UInt = #line) -> JSONObject {
        guard case .ok(let rev)? = r else {
            XCTFail("expected an ok result, got \(String(describing: r))", file: file, line: line)
            return JSONObject()
        }
        return obj(rev.json, file: file, line: line)
    }

    func revisionsValue(_ start: Int, _ ids: [String]) -> JSONValue {
        .object(JSONObject([("start", .int(Int64(start))), ("ids", .array(ids.map { .string($0) }))]))
    }

    func digests(_ revs: [String]) -> [String] { revs.map { RevID($0)!.digest } }

    func currentRev(_ id: String) throws -> String {
        try coll.doc(id, .deleted)["_rev"]?.stringValue ?? ""
    }

    func attStub(_ id: String, _ name: String, rev: String? = nil) throws -> JSONObject {
        let json = try rev.map { try coll.get(docID: id, revID: $0) } ?? coll.get(docID: id)
        return obj(json)["_attachments"]?.objectValue?[name]?.objectValue ?? JSONObject()
    }

    /// Deterministic non-text bytes.
    func binary(_ n: Int, seed: Int = 7) -> [UInt8] {
        (0..<n).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761 &+ seed) >> 11) }
    }

    func readAll(_ reader: BlobReader) throws -> [UInt8] {
        defer { reader.close() }
        var out: [UInt8] = []
        while true {
            let chunk = try reader.read(max: 8192)
            if chunk.isEmpty { return out }
            out += chunk
        }
    }

    func writeBlob(_ bytes: [UInt8]) throws -> BlobInfo {
        let w = try coll.makeAttachmentWriter()
        // In two writes, as a multipart body's part arrives.
        let half = bytes.count / 2
        try w.write(Array(bytes[..<half]))
        try w.write(Array(bytes[half...]))
        return try w.finish()
    }

    // MARK: revs_diff

    func testRevsDiffMatchesCouchDBSample() throws {
        try insertOK(peerDoc("plain-01", [plain01], #""type":"plain","n":1"#))
        try makeConflicted()
        // client-shapes seq 8, request and answer as recorded.
        let diff = try coll.revsDiff([
            ("plain-01", [plain01, "2-00000000000000000000000000000001"]),
            ("conflicted", [confA, conf0, "3-00000000000000000000000000000002"]),
            ("brand-new-doc", ["1-00000000000000000000000000000003"]),
        ])
        XCTAssertEqual(diff, [
            RevsDiffResult(docID: "plain-01", missing: ["2-00000000000000000000000000000001"], possibleAncestors: [plain01]),
            RevsDiffResult(docID: "conflicted", missing: ["3-00000000000000000000000000000002"],
                                      possibleAncestors: [confA, conf0]),
            RevsDiffResult(docID: "brand-new-doc", missing: ["1-00000000000000000000000000000003"], possibleAncestors: []),
        ])
    }

    func testRevsDiffKnownUnknownAndAncestorRules() throws {
        try makeConflicted()
        // Every revision known (leaves and the inner 1-…): the document is omitted.
        XCTAssertEqual(try coll.revsDiff([("conflicted", [confA, conf1, conf0])]), [])
        XCTAssertEqual(try coll.revsDiff([]), [])
        // A missing revision of generation 2: only leaves of a LOWER generation are
        // possible ancestors, and both leaves here are generation 2.
        XCTAssertEqual(try coll.revsDiff([("conflicted", ["2-ffff"])]),
                       [RevsDiffResult(docID: "conflicted", missing: ["2-ffff"], possibleAncestors: [])])
        // A missing revision of generation 1 (an unknown root): none either.
        XCTAssertEqual(try coll.revsDiff([("conflicted", ["1-ffff"])]).first?.possibleAncestors, [])
        // Duplicates are reported once, in request order; the highest missing generation counts.
        XCTAssertEqual(try coll.revsDiff([("conflicted", ["5-b", "1-x", "5-b", confA])]),
                       [RevsDiffResult(docID: "conflicted", missing: ["5-b", "1-x"], possibleAncestors: [confA, conf0])])
        // A deleted leaf is a possible ancestor too.
        try insertOK(peerDoc("t", ["2-dd", "1-aa"], #""_deleted":true"#))
        XCTAssertEqual(try coll.revsDiff([("t", ["3-ee"])]),
                       [RevsDiffResult(docID: "t", missing: ["3-ee"], possibleAncestors: ["2-dd"])])
        // Results come in request order, documents with nothing missing dropped.
        XCTAssertEqual(try coll.revsDiff([("zz", ["1-z"]), ("t", ["2-dd"]), ("aa", ["1-a"])]).map(\.docID), ["zz", "aa"])
        // A malformed rev ID is reported missing, and so is every rev of a doc ID this
        // database cannot hold (a CouchDB design document): that one doc then fails to
        // arrive, instead of the whole batch failing.
        XCTAssertEqual(try coll.revsDiff([("t", ["not-a-rev", "2-dd"])]).first?.missing, ["not-a-rev"])
        XCTAssertEqual(try coll.revsDiff([("_design/app", ["1-a", "2-b", "1-a"]), ("t", ["3-ee"]), ("", ["1-x"])]), [
            RevsDiffResult(docID: "_design/app", missing: ["1-a", "2-b"], possibleAncestors: []),
            RevsDiffResult(docID: "t", missing: ["3-ee"], possibleAncestors: ["2-dd"]),
            RevsDiffResult(docID: "", missing: ["1-x"], possibleAncestors: []),
        ])
    }

    func testRevsDiffAfterPushRun2() throws {
        // push-by-couchdb seq 30: the target holds att-binary 1-…; the peer offers 2-….
        try insertOK(peerDoc("att-binary", [attBin1], #""type":"attachment""#))
        XCTAssertEqual(try coll.revsDiff([("att-binary", [attBin2])]),
                       [RevsDiffResult(docID: "att-binary", missing: [attBin2], possibleAncestors: [attBin1])])
    }

    // MARK: insertExistingRevisions

    func testInsertWithRevisionsObject() throws {
        try insertOK(peerDoc("pushed-by-client", ["3-c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0", "2-b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0",
                                                  "1-a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0"], #""value":"new_edits=false""#))
        let doc = try coll.doc("pushed-by-client")
        XCTAssertEqual(doc["_rev"], .string("3-c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"))
        XCTAssertEqual(doc["value"], .string("new_edits=false"))
        XCTAssertNil(doc["_revisions"], "_revisions is not stored as content")
        XCTAssertEqual(doc.members.count, 3)
        XCTAssertEqual(try coll.history(docID: "pushed-by-client", revID: nil),
                       ["3-c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0", "2-b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", "1-a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0"])
        XCTAssertEqual(try coll.lastSequence, 1)
        XCTAssertEqual(try coll.count, 1)
        // Without _revisions: the revision alone (a root).
        try insertOK(#"{"_id":"solo","_rev":"4-abc","x":1}"#)
        XCTAssertEqual(try coll.history(docID: "solo", revID: nil), ["4-abc"])
        // The list form through putExisting still works, and builds the same tree.
        try coll.putExisting(docID: "listed", json: #"{"value":1}"#, history: ["2-b", "1-a"])
        XCTAssertEqual(try coll.history(docID: "listed", revID: nil), ["2-b", "1-a"])
        // Extending it through the _revisions form merges at 2-b.
        try insertOK(peerDoc("listed", ["3-c", "2-b", "1-a"], #""value":3"#))
        XCTAssertEqual(try coll.history(docID: "listed", revID: nil), ["3-c", "2-b", "1-a"])
        XCTAssertEqual(try coll.conflicts(docID: "listed"), ["3-c"])
        assertSound(db)
    }

    func testBatchFailsPerDocumentInOneTransaction() throws {
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        let missingStub = #""_attachments":{"a.bin":{"content_type":"application/octet-stream","revpos":1,"digest":"md5-BHpffRdxZ2SyZ18soC9AWg==","length":5,"stub":true}}"#
        let batch = [
            existing(peerDoc("good-1", ["1-aa"], #""n":1"#)),
            existing(#"{"_id":"bad-rev","_rev":"nope","n":2}"#),
            existing(#"{"_id":"no-rev","n":2}"#),
            existing(#"{"_id":"mismatch","_rev":"2-x","_revisions":{"start":2,"ids":["y","z"]}}"#),
            existing(#"{"_id":"bad-start","_rev":"2-x","_revisions":{"start":1,"ids":["x","w"]}}"#),
            existing(#"{"_rev":"1-noid","n":3}"#),
            existing(#"{"_id":"_bad-id","_rev":"1-a"}"#),
            existing(peerDoc("stub-missing", ["1-bb"], missingStub)),
            existing(peerDoc("reserved", ["1-cc"], #""_foo":1"#)),
            existing(peerDoc("good-2", ["2-dd", "1-cc"], #""n":2"#)),
        ]
        let results = try coll.insertExistingRevisions(batch)
        XCTAssertEqual(results.map(\.docID), ["good-1", "bad-rev", "no-rev", "mismatch", "bad-start", "", "_bad-id",
                                              "stub-missing", "reserved", "good-2"])
        XCTAssertEqual(results.map { $0.error?.status }, [nil, .badRequest, .badRequest, .badRequest, .badRequest, .badRequest,
                                                           .badRequest, .preconditionFailed, .badRequest, nil])
        XCTAssertEqual(results[0].revID, "1-aa")
        XCTAssertEqual(results[9].revID, "2-dd")
        // The failures left nothing behind; the successes are stored.
        for id in ["bad-rev", "no-rev", "mismatch", "bad-start", "stub-missing", "reserved"] {
            assertStatus(.notFound, try coll.get(docID: id, options: .deleted), id)
        }
        XCTAssertEqual(try coll.doc("good-1")["n"], .int(1))
        XCTAssertEqual(try coll.doc("good-2")["_rev"], .string("2-dd"))
        XCTAssertEqual(try coll.count, 2)
        XCTAssertEqual(try coll.lastSequence, 2)
        // One transaction: one notification batch, both marked external (the replication path).
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 1)
        XCTAssertEqual(rec.events, [
            ChangeEvent(collectionID: coll.id, docID: "good-1", revID: "1-aa", sequence: 1, deleted: false, external: true),
            ChangeEvent(collectionID: coll.id, docID: "good-2", revID: "2-dd", sequence: 2, deleted: false, external: true),
        ])
        assertSound(db)
    }

    func testBatchDocumentRejectedByValidatorFailsAlone() throws {
        try coll.setValidator(name: "no-secrets") { new, _ in new.contains("\"secret\"") ? "no secrets" : nil }
        let results = try coll.insertExistingRevisions([
            existing(peerDoc("ok", ["1-a"], #""v":1"#)),
            existing(peerDoc("hidden", ["2-b", "1-a"], #""secret":1"#)),
            existing(peerDoc("ok2", ["1-c"], #""v":2"#)),
        ])
        XCTAssertEqual(results.map { $0.error?.status }, [nil, .forbidden, nil])
        assertStatus(.notFound, try coll.get(docID: "hidden", options: .deleted))
        XCTAssertEqual(try coll.changes(since: 0).map(\.docID), ["ok", "ok2"])
        XCTAssertEqual(try coll.changes(since: 0).map(\.sequence), [1, 2])
    }

    func testAlreadyKnownRevisionChangesNothing() throws {
        try insertOK(peerDoc("d", ["2-b", "1-a"], #""v":2"#))
        XCTAssertEqual(try coll.lastSequence, 1)
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        // The same revision again (even with a different body), and its known ancestor.
        let again = try coll.insertExistingRevisions([existing(peerDoc("d", ["2-b", "1-a"], #""v":"other""#)),
                                                      existing(peerDoc("d", ["1-a"], #""v":1"#))])
        XCTAssertEqual(again, [WriteResult(docID: "d", revID: "2-b", error: nil),
                               WriteResult(docID: "d", revID: "1-a", error: nil)])
        XCTAssertEqual(try coll.lastSequence, 1, "no new sequence")
        XCTAssertEqual(try coll.doc("d")["v"], .int(2), "the stored body is kept")
        XCTAssertEqual(try coll.changes(since: 0).map(\.sequence), [1])
        XCTAssertEqual(try coll.putExisting(docID: "d", json: #"{"v":2}"#, history: ["2-b", "1-a"]), false)
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 0)
    }

    func testGraftingOntoPrunedTree() throws {
        try db.setMaxRevTreeDepth(3)
        let full = ["5-e", "4-d", "3-c", "2-b", "1-a"]
        try insertOK(peerDoc("g", full, #""v":5"#))
        XCTAssertEqual(try coll.history(docID: "g", revID: nil), ["5-e", "4-d", "3-c"], "pruned to 3")
        // The peer's full history: its oldest IDs (2-b, 1-a) are no longer known here; it
        // merges where the IDs overlap (5-e), with no conflict.
        try insertOK(peerDoc("g", ["7-g", "6-f"] + full, #""v":7"#))
        XCTAssertEqual(try coll.history(docID: "g", revID: nil), ["7-g", "6-f", "5-e"])
        XCTAssertEqual(try coll.conflicts(docID: "g"), ["7-g"])
        XCTAssertEqual(try coll.revisionTree(docID: "g").contains("\"4-d\""), false, "pruned again on the way")
        // A (pruned) peer history that overlaps only in its oldest ID merges there too.
        try insertOK(peerDoc("g", ["9-i", "8-h", "7-g"], #""v":9"#))
        XCTAssertEqual(try coll.history(docID: "g", revID: nil), ["9-i", "8-h", "7-g"])
        XCTAssertEqual(try coll.conflicts(docID: "g"), ["9-i"])
        // No overlap at all: a new root, and so a conflict. CouchDB's winner: the higher
        // generation (10-y over 9-i).
        try insertOK(peerDoc("g", ["10-y", "9-x"], #""v":"other branch""#))
        XCTAssertEqual(try coll.conflicts(docID: "g"), ["10-y", "9-i"])
        XCTAssertEqual(try coll.doc("g")["v"], .string("other branch"))
        XCTAssertEqual(try coll.history(docID: "g", revID: "10-y"), ["10-y", "9-x"])
        XCTAssertEqual(try coll.history(docID: "g", revID: "9-i"), ["9-i", "8-h", "7-g"])
        // revs_diff now offers both leaves below generation 11.
        XCTAssertEqual(try coll.revsDiff([("g", ["11-z"])]).first?.possibleAncestors, ["10-y", "9-i"])
        assertSound(db)
    }

    func testWinnerIsCouchDBsAfterConflictingInserts() throws {
        // Either insertion order: of two rev-2 leaves the higher rev ID string wins (README).
        try makeConflicted("c1")
        try makeConflicted("c2", bothOrders: true)
        for id in ["c1", "c2"] {
            let doc = try coll.doc(id, .conflicts)
            XCTAssertEqual(doc["_rev"], .string(confA), id)
            XCTAssertEqual(doc["value"], .string("edited here"), id)
            XCTAssertEqual(doc["_conflicts"], .array([.string(conf0)]), id)
            XCTAssertEqual(try coll.conflicts(docID: id), [confA, conf0])
        }
        // A deleted leaf of a higher generation loses to an undeleted one.
        try insertOK(peerDoc("c1", ["3-dead", confA, conf1], #""_deleted":true"#))
        XCTAssertEqual(try currentRev("c1"), conf0)
        XCTAssertEqual(try coll.doc("c1")["value"], .string("edited on another peer"))
        XCTAssertEqual(try coll.conflicts(docID: "c1"), [conf0])
        // Deleting that one too: the doc is deleted, the current revision the highest tombstone.
        try insertOK(peerDoc("c1", ["3-0dead", conf0, conf1], #""_deleted":true"#))
        assertStatus(.notFound, try coll.get(docID: "c1"))
        XCTAssertEqual(try currentRev("c1"), "3-dead")
        XCTAssertEqual(try coll.count, 1)
    }

    func testTombstonesThroughDeletedFlag() throws {
        // A tombstone as the first revision known of a document.
        try insertOK(peerDoc("deleted", ["2-e84cc1ee936866c8ebfe1abdd0ee390a", "1-d83483c8194b6aaeb0b613fddae1f48d"], #""_deleted":true"#))
        XCTAssertEqual(try coll.count, 0)
        assertStatus(.notFound, try coll.get(docID: "deleted"))
        let tomb = try coll.doc("deleted", .deleted)
        XCTAssertEqual(tomb["_deleted"], .bool(true))
        XCTAssertEqual(tomb["_rev"], .string("2-e84cc1ee936866c8ebfe1abdd0ee390a"))
        XCTAssertEqual(tomb.members.count, 3)
        // A tombstone on a live document.
        try insertOK(peerDoc("live", ["1-a"], #""v":1"#))
        XCTAssertEqual(try coll.count, 1)
        try insertOK(peerDoc("live", ["2-b", "1-a"], #""_deleted":true"#))
        XCTAssertEqual(try coll.count, 0)
        let feed = try coll.changes(since: 0)
        XCTAssertEqual(feed.map(\.docID), ["deleted", "live"])
        XCTAssertEqual(feed.map(\.deleted), [true, true])
        XCTAssertEqual(feed.map(\.revs), [["2-e84cc1ee936866c8ebfe1abdd0ee390a"], ["2-b"]])
        // _deleted:false is an ordinary revision.
        try insertOK(peerDoc("live", ["3-c", "2-b", "1-a"], #""_deleted":false,"v":3"#))
        XCTAssertEqual(try coll.doc("live")["v"], .int(3))
        XCTAssertEqual(try coll.count, 1)
    }

    func testReadMetadataInBodyIsIgnored() throws {
        try insertOK(peerDoc("m", ["2-b", "1-a"],
                             #""_conflicts":["2-x"],"_deleted_conflicts":["3-y"],"_revs_info":[{"rev":"2-b","status":"available"}],"_local_seq":9,"v":1"#))
        let doc = try coll.doc("m", [.conflicts, .revisions])
        XCTAssertEqual(doc["v"], .int(1))
        XCTAssertNil(doc["_conflicts"], "no conflict was made from the body's _conflicts")
        XCTAssertNil(doc["_deleted_conflicts"])
        XCTAssertNil(doc["_revs_info"])
        XCTAssertNil(doc["_local_seq"])
        XCTAssertEqual(try coll.conflicts(docID: "m"), ["2-b"])
    }

    // MARK: attachments on insert

    func testInlineAttachmentDigestIsOurs() throws {
        let text = Array(String(repeating: "Line: The quick brown fox jumps over the lazy dog.\n", count: 90).utf8)
        try insertOK(peerDoc("att-text", ["1-1e1b6dfb2145bc326409e05b4222068f"],
                             #""type":"attachment","_attachments":{"readme.txt":{"content_type":"text/plain","revpos":1,"digest":"md5-0iQKX1Z9sM7xF8XA5kl3qA==","data":"\#(Base64.encode(text))"}}"#))
        let stub = try attStub("att-text", "readme.txt")
        XCTAssertEqual(stub, JSONObject([("content_type", .string("text/plain")), ("digest", .string(BlobDigest.of(text).string)),
                                         ("length", .int(Int64(text.count))), ("md5", .string("md5-" + Base64.encode(MD5.hash(text)))),
                                         ("revpos", .int(1)), ("stub", .bool(true))]))
        XCTAssertEqual(try coll.attachmentContent(docID: "att-text", name: "readme.txt"), text)
        // Gzip-encoded inline data is refused clearly (the peer must send it decoded).
        let err = try insertError(peerDoc("gz", ["1-a"],
                                          #""_attachments":{"r.txt":{"content_type":"text/plain","revpos":1,"encoding":"gzip","encoded_length":4,"data":"aGk="}}"#))
        XCTAssertEqual(err?.status, .badRequest)
        XCTAssertTrue(err?.message.contains("gzip") ?? false, "\(String(describing: err))")
        assertStatus(.notFound, try coll.get(docID: "gz", options: .deleted))
        // Bad base64 and an attachment with neither data, stub nor follows: 400.
        XCTAssertEqual(try insertError(peerDoc("b64", ["1-a"], #""_attachments":{"x":{"data":"***"}}"#))?.status, .badRequest)
        XCTAssertEqual(try insertError(peerDoc("none", ["1-a"], #""_attachments":{"x":{"content_type":"text/plain"}}"#))?.status, .badRequest)
        // A follows entry whose content the caller did not give: 400.
        XCTAssertEqual(try insertError(peerDoc("nof", ["1-a"], #""_attachments":{"x":{"follows":true,"length":3}}"#))?.status, .badRequest)
        assertSound(db)
    }

    /// push-by-couchdb: run 1 sends att-binary 1-… with data.bin following; run 2 sends
    /// 2-… with data.bin as a stub (revpos 1) and notes.txt following.
    func testFollowsAndStubsAsInPushRun2() throws {
        let data = binary(71_680)
        let notes = Array(String(repeating: "notes line\n", count: 38).utf8) + Array("end.\n\n".utf8)
        let dataInfo = try writeBlob(data)
        XCTAssertEqual(dataInfo.length, 71_680)
        try insertOK(peerDoc("att-binary", [attBin1],
                             #""type":"attachment","about":"application/octet-stream attachment (70 KiB random bytes)","_attachments":{"data.bin":{"content_type":"application/octet-stream","revpos":1,"digest":"md5-BHpffRdxZ2SyZ18soC9AWg==","length":71680,"follows":true}}"#),
                     ["data.bin": dataInfo])
        XCTAssertEqual(try attStub("att-binary", "data.bin")["digest"], .string(BlobDigest.of(data).string))
        XCTAssertEqual(try attStub("att-binary", "data.bin")["revpos"], .int(1))

        let notesInfo = try writeBlob(notes)
        try insertOK(peerDoc("att-binary", [attBin2, attBin1],
                             #""type":"attachment","_attachments":{"notes.txt":{"content_type":"text/plain","revpos":2,"digest":"md5-fYewTkFN5z51ZPpT7uowEA==","length":424,"follows":true,"encoding":"gzip","encoded_length":78},"data.bin":{"content_type":"application/octet-stream","revpos":1,"digest":"md5-BHpffRdxZ2SyZ18soC9AWg==","length":71680,"stub":true}}"#),
                     ["notes.txt": notesInfo])
        XCTAssertEqual(try currentRev("att-binary"), attBin2)
        let infos = try coll.attachments(docID: "att-binary")
        XCTAssertEqual(Set(infos.map(\.name)), ["notes.txt", "data.bin"])
        let bin = try XCTUnwrap(infos.first { $0.name == "data.bin" })
        XCTAssertEqual(bin, AttachmentInfo(name: "data.bin", contentType: "application/octet-stream", digest: BlobDigest.of(data),
                                           length: 71_680, revpos: 1, md5: MD5.hash(data)))
        let nt = try XCTUnwrap(infos.first { $0.name == "notes.txt" })
        XCTAssertEqual(nt, AttachmentInfo(name: "notes.txt", contentType: "text/plain", digest: BlobDigest.of(notes),
                                          length: UInt64(notes.count), revpos: 2, md5: MD5.hash(notes)))
        XCTAssertEqual(try coll.attachmentContent(docID: "att-binary", name: "data.bin"), data)
        XCTAssertEqual(try coll.attachmentContent(docID: "att-binary", name: "notes.txt"), notes)
        let stub = try attStub("att-binary", "notes.txt")
        XCTAssertNil(stub["encoding"], "the peer's encoding is not ours")
        XCTAssertNil(stub["encoded_length"])
        XCTAssertNil(stub["follows"])
        // A stub on a document this database does not hold: 412, and nothing stored.
        let err = try insertError(peerDoc("elsewhere", ["2-b", "1-a"],
                                          #""_attachments":{"data.bin":{"revpos":1,"digest":"md5-BHpffRdxZ2SyZ18soC9AWg==","stub":true}}"#))
        XCTAssertEqual(err?.status, .preconditionFailed)
        // A stub naming our own digest of stored content resolves without a tree.
        try insertOK(peerDoc("by-digest", ["1-q"],
                             #""_attachments":{"copy.bin":{"revpos":1,"digest":"\#(BlobDigest.of(data).string)","stub":true}}"#))
        XCTAssertEqual(try coll.attachmentContent(docID: "by-digest", name: "copy.bin"), data)
        assertSound(db)
    }

    func testStubResolvedByNameAndRevpos() throws {
        let v1 = Array("first content".utf8), v3 = Array("third content!".utf8)
        try insertOK(peerDoc("s", ["1-a"], #""_attachments":{"f":{"content_type":"text/plain","revpos":1,"data":"\#(Base64.encode(v1))"}}"#))
        try insertOK(peerDoc("s", ["2-b", "1-a"], #""_attachments":{"f":{"revpos":1,"stub":true}}"#))
        try insertOK(peerDoc("s", ["3-c", "2-b", "1-a"], #""_attachments":{"f":{"content_type":"text/plain","revpos":3,"data":"\#(Base64.encode(v3))"}}"#))
        XCTAssertEqual(try coll.attachmentContent(docID: "s", name: "f"), v3)
        // A branch from 2-b whose peer kept f at revpos 1: the old content, not 3-c's.
        try insertOK(peerDoc("s", ["3-a", "2-b", "1-a"], #""_attachments":{"f":{"revpos":1,"stub":true}}"#))
        XCTAssertEqual(try coll.attachmentContent(docID: "s", name: "f", revID: "3-a"), v1)
        XCTAssertEqual(try attStub("s", "f", rev: "3-a")["revpos"], .int(1))
        // On 3-c's branch, a stub at revpos 3 is 3-c's content.
        try insertOK(peerDoc("s", ["4-d", "3-c", "2-b", "1-a"], #""_attachments":{"f":{"revpos":3,"stub":true}}"#))
        XCTAssertEqual(try coll.attachmentContent(docID: "s", name: "f", revID: "4-d"), v3)
        XCTAssertEqual(try attStub("s", "f", rev: "4-d")["content_type"], .string("text/plain"))
        XCTAssertEqual(try attStub("s", "f", rev: "4-d")["length"], .int(Int64(v3.count)))
        // A stub naming an attachment no revision has: 412.
        XCTAssertEqual(try insertError(peerDoc("s", ["5-e", "4-d", "3-c", "2-b", "1-a"],
                                               #""_attachments":{"nope":{"revpos":2,"stub":true}}"#))?.status, .preconditionFailed)
        // A stub whose revpos matches no attachment of that name is other content: 412
        // (CouchDB's missing_stub), never the content held under that name.
        XCTAssertEqual(try insertError(peerDoc("s", ["5-e", "4-d", "3-c", "2-b", "1-a"],
                                               #""_attachments":{"f":{"revpos":4,"digest":"md5-AAAAAAAAAAAAAAAAAAAAAA==","stub":true}}"#))?.status,
                       .preconditionFailed)
        XCTAssertEqual(try insertError(peerDoc("s", ["4-x", "3-a", "2-b", "1-a"],
                                               #""_attachments":{"f":{"revpos":3,"stub":true}}"#))?.status, .preconditionFailed,
                       "on 3-a's branch f is revpos 1; 3-c's f at revpos 3 is another branch's content")
        XCTAssertEqual(try coll.history(docID: "s", revID: "4-d"), ["4-d", "3-c", "2-b", "1-a"], "nothing was added")
        // Without a revpos: the attachment of that name on the anchor's branch.
        try insertOK(peerDoc("s", ["5-e", "4-d", "3-c", "2-b", "1-a"], #""_attachments":{"f":{"stub":true}}"#))
        XCTAssertEqual(try coll.attachmentContent(docID: "s", name: "f", revID: "5-e"), v3)
        XCTAssertEqual(try attStub("s", "f", rev: "5-e")["revpos"], .int(3))
        // A stub naming our own digest: that content, the stub's revpos kept.
        try insertOK(peerDoc("s", ["4-y", "3-a", "2-b", "1-a"],
                             #""_attachments":{"f":{"revpos":4,"digest":"\#(BlobDigest.of(v3).string)","stub":true}}"#))
        XCTAssertEqual(try coll.attachmentContent(docID: "s", name: "f", revID: "4-y"), v3)
        XCTAssertEqual(try attStub("s", "f", rev: "4-y")["revpos"], .int(4))
    }

    func testDigestOnlyAttachmentEntries() throws {
        // Our own form: an entry naming stored content by our digest (no data, stub or follows).
        let content = Array("stored before".utf8)
        let digest = try db.blobStore.put(content).digest.string
        try insertOK(peerDoc("d", ["3-c", "2-b", "1-a"], #""_attachments":{"x":{"digest":"\#(digest)","content_type":"text/plain","revpos":0}}"#))
        XCTAssertEqual(try attStub("d", "x"), JSONObject([("content_type", .string("text/plain")), ("digest", .string(digest)),
                                                        ("length", .int(Int64(content.count))), ("md5", .string("md5-" + Base64.encode(MD5.hash(content)))),
                                                        ("revpos", .int(3)), ("stub", .bool(true))]))
        try insertOK(peerDoc("d", ["4-d", "3-c"], #""_attachments":{"x":{"digest":"\#(digest)","revpos":2}}"#))
        XCTAssertEqual(try attStub("d", "x")["revpos"], .int(2), "a peer's revpos within the generation is kept")
        // Content not held: 412; a digest that is not ours and no stub: 400.
        let unknown = BlobDigest.of(Array("never stored".utf8)).string
        XCTAssertEqual(try insertError(peerDoc("e", ["1-a"], #""_attachments":{"x":{"digest":"\#(unknown)"}}"#))?.status, .preconditionFailed)
        XCTAssertEqual(try insertError(peerDoc("e", ["1-a"], #""_attachments":{"x":{"digest":"md5-BHpffRdxZ2SyZ18soC9AWg=="}}"#))?.status, .badRequest)
        assertStatus(.notFound, try coll.get(docID: "e", options: .deleted))
    }

    // MARK: saveDocuments (new_edits=true)

    func testSaveDocumentsPerDocumentResults() throws {
        let existing = try coll.put(docID: "plain-04", json: #"{"title":"there"}"#, parent: nil)
        let toDelete = try coll.put(docID: "gone", json: #"{"v":1}"#, parent: nil)
        let toUpdate = try coll.put(docID: "upd", json: #"{"v":1}"#, parent: nil)
        let rec = ChangeRecorder()
        let token = try coll.addChangeObserver(rec.callback)
        defer { token.remove() }
        let results = try coll.saveDocuments([
            obj(#"{"_id":"plain-04","title":"no _rev: conflict"}"#),
            obj(#"{"_id":"brand-new-bulk","title":"ok"}"#),
            obj(#"{"title":"generated"}"#),
            obj(#"{"_id":"gone","_rev":"\#(toDelete.revID)","_deleted":true}"#),
            obj(#"{"_id":"upd","_rev":"\#(toUpdate.revID)","v":2}"#),
            obj(#"{"_id":"upd","_rev":"\#(toUpdate.revID)","v":3}"#),
            obj(#"{"_id":"_bad","v":1}"#),
            obj(#"{"_id":"never-existed","_rev":"1-abc","v":1}"#),
            obj(#"{"_id":"gone","_rev":"1-stale","v":1}"#),
        ])
        XCTAssertEqual(results.count, 9)
        // client-shapes seq 36: {"id":"plain-04","error":"conflict"} next to {"ok":true,...}. A _rev for a
        // document that does not exist is a conflict too in CouchDB ("old revs specified but none exist").
        XCTAssertEqual(results.map { $0.error?.status }, [.conflict, nil, nil, nil, nil, .conflict, .badRequest, .conflict, .conflict])
        XCTAssertEqual(results[7].docID, "never-existed")
        assertStatus(.notFound, try coll.get(docID: "never-existed", options: .deleted))
        XCTAssertEqual(results[0].docID, "plain-04")
        XCTAssertNil(results[0].revID)
        XCTAssertEqual(results[1].docID, "brand-new-bulk")
        XCTAssertEqual(RevID(results[1].revID ?? "")?.generation, 1)
        XCTAssertEqual(try coll.doc("brand-new-bulk")["_rev"], results[1].revID.map { .string($0) })
        // Generated ID: a UUID.
        let gen = results[2].docID
        XCTAssertEqual(gen.count, 36)
        XCTAssertEqual(try coll.doc(gen)["title"], .string("generated"))
        XCTAssertEqual(RevID(results[3].revID ?? "")?.generation, 2)
        assertStatus(.notFound, try coll.get(docID: "gone"))
        XCTAssertEqual(try coll.doc("gone", .deleted)["_deleted"], .bool(true))
        XCTAssertEqual(try coll.doc("upd")["v"], .int(2), "the second edit of the same parent conflicted")
        XCTAssertEqual(try coll.doc("plain-04")["_rev"], .string(existing.revID))
        XCTAssertEqual(try coll.count, 4)          // plain-04, upd, brand-new-bulk, generated
        try db.waitForNotifications(timeoutMs: 10_000)
        XCTAssertEqual(rec.batchCount, 1, "one transaction")
        XCTAssertEqual(rec.events.map(\.docID), ["brand-new-bulk", gen, "gone", "upd"])
        XCTAssertEqual(rec.events.map(\.external), [false, false, false, false])
    }

    // MARK: revision reads

    func testRevisionOptionsAsCouchDB() throws {
        try makeConflicted()
        // client-shapes seq 38: revs_info, conflicts, deleted_conflicts.
        var o = RevisionOptions()
        o.revsInfo = true
        o.conflicts = true
        o.deletedConflicts = true
        let r = try coll.revision(docID: "conflicted", revID: nil, options: o)
        XCTAssertEqual(r.revID, confA)
        XCTAssertFalse(r.deleted)
        XCTAssertEqual(obj(r.json), obj(#"{"_id":"conflicted","_rev":"\#(confA)","type":"conflicted","value":"edited here","_revs_info":[{"rev":"\#(confA)","status":"available"},{"rev":"\#(conf1)","status":"available"}],"_conflicts":["\#(conf0)"]}"#))
        // _revisions (bulk_get seq 9) and _local_seq.
        var h = RevisionOptions()
        h.revisions = true
        h.localSeq = true
        let other = obj(try coll.revision(docID: "conflicted", revID: conf0, options: h).json)
        XCTAssertEqual(other, obj(#"{"_id":"conflicted","_rev":"\#(conf0)","type":"conflicted","value":"edited on another peer","_revisions":{"start":2,"ids":["0123456789abcdef0123456789abcdef","d3be72beae043af6e69cf3f780dc4ced"]},"_local_seq":3}"#))
        // Without options: the content only.
        XCTAssertEqual(obj(try coll.revision(docID: "conflicted", revID: nil).json).members.count, 4)
        // Errors: unknown doc, unknown rev, bad rev.
        assertStatus(.notFound, try coll.revision(docID: "nope", revID: nil))
        assertStatus(.notFound, try coll.revision(docID: "conflicted", revID: "9-zz"))
        assertStatus(.badRequest, try coll.revision(docID: "conflicted", revID: "junk"))
    }

    func testRevsInfoStatusesAndDeletedConflicts() throws {
        // 1-a and 2-e known only as history (no bodies), 2-b and 2-x live leaves, 3-d a tombstone on 2-e.
        try insertOK(peerDoc("c", ["2-b", "1-a"], #""v":"b""#))
        try insertOK(peerDoc("c", ["2-x", "1-a"], #""v":"x""#))
        try insertOK(peerDoc("c", ["3-d", "2-e", "1-a"], #""_deleted":true"#))
        var o = RevisionOptions()
        o.revsInfo = true
        o.conflicts = true
        o.deletedConflicts = true
        let cur = obj(try coll.revision(docID: "c", revID: nil, options: o).json)
        XCTAssertEqual(cur["_rev"], .string("2-x"))
        XCTAssertEqual(cur["_conflicts"], .array([.string("2-b")]))
        XCTAssertEqual(cur["_deleted_conflicts"], .array([.string("3-d")]))
        XCTAssertEqual(cur["_revs_info"], try jsonValue(#"[{"rev":"2-x","status":"available"},{"rev":"1-a","status":"missing"}]"#))
        let tomb = obj(try coll.revision(docID: "c", revID: "3-d", options: o).json)
        XCTAssertEqual(tomb["_deleted"], .bool(true))
        XCTAssertEqual(tomb["_revs_info"], try jsonValue(#"[{"rev":"3-d","status":"deleted"},{"rev":"2-e","status":"missing"},{"rev":"1-a","status":"missing"}]"#))
        // A revision whose body is not kept: 404.
        assertStatus(.notFound, try coll.revision(docID: "c", revID: "2-e"))
        // The current revision of a deleted document: 404 ("deleted"), the tombstone by ID: ok.
        try insertOK(peerDoc("deleted", ["2-e84cc1ee936866c8ebfe1abdd0ee390a", "1-d83483c8194b6aaeb0b613fddae1f48d"], #""_deleted":true"#))
        assertStatus(.notFound, try coll.revision(docID: "deleted", revID: nil))
        let t = try coll.revision(docID: "deleted", revID: "2-e84cc1ee936866c8ebfe1abdd0ee390a")
        XCTAssertTrue(t.deleted)
        XCTAssertEqual(obj(t.json), obj(#"{"_id":"deleted","_rev":"2-e84cc1ee936866c8ebfe1abdd0ee390a","_deleted":true}"#))
    }

    func testRevisionsHistoryStopsWhereKeptHistoryEnds() throws {
        try db.setMaxRevTreeDepth(3)
        try insertOK(peerDoc("p", ["5-e", "4-d", "3-c", "2-b", "1-a"], #""v":5"#))
        var o = RevisionOptions()
        o.revisions = true
        XCTAssertEqual(obj(try coll.revision(docID: "p", revID: nil, options: o).json)["_revisions"], revisionsValue(5, ["e", "d", "c"]))
        // A new root grafted at generation 9: its history stops at that root.
        try insertOK(peerDoc("p", ["10-y", "9-x"], #""v":10"#))
        XCTAssertEqual(obj(try coll.revision(docID: "p", revID: "10-y", options: o).json)["_revisions"], revisionsValue(10, ["y", "x"]))
        // The get(options: .revisions) path renders the same.
        XCTAssertEqual(try coll.doc("p", .revisions)["_revisions"], revisionsValue(10, ["y", "x"]))
    }

    func testRevisionsHistoryStopsAtAGap() throws {
        // A tree whose parent link skips generations (5-e's parent is 3-c) renders the
        // consecutive part only: _revisions cannot express a gap.
        var tree = RevTree()
        let c = tree.add(RevID("3-c")!, parent: nil, deleted: false, body: Array("{}".utf8))
        let e = tree.add(RevID("5-e")!, parent: c, deleted: false, body: Array("{}".utf8))
        let row = DocumentRow(docID: "g", sequence: 7, flags: [], revID: RevID("5-e")!, body: Array("{}".utf8), revtree: nil)
        var o = RevisionOptions()
        o.revisions = true
        o.revsInfo = true
        func metadata(_ index: Int) throws -> JSONObject {
            JSONObject(try coll.store.read { try coll.metadata($0, tree: tree, index: index, row: row, options: o) })
        }
        let meta = try metadata(e)
        XCTAssertEqual(meta["_revisions"], revisionsValue(5, ["e"]))
        XCTAssertEqual(meta["_revs_info"], try jsonValue(#"[{"rev":"5-e","status":"available"},{"rev":"3-c","status":"available"}]"#))
        XCTAssertEqual(try metadata(c)["_revisions"], revisionsValue(3, ["c"]))
    }

    func testConcurrentInsertsOfConflictingBranches() throws {
        try insertOK(peerDoc("shared", ["1-root"], #""v":0"#))
        let c = coll!
        let failures = Locked<[String]>([])
        runOnThreads(4) { t in
            for i in 0..<10 {
                let body = JSONObject([("_id", .string("shared")), ("_rev", .string("2-t\(t)r\(i)")),
                                       ("_revisions", .object(JSONObject([("start", .int(2)), ("ids", .array([.string("t\(t)r\(i)"), .string("root")]))]))),
                                       ("t", .int(Int64(t)))])
                do {
                    let r = try c.insertExistingRevisions([Collection.ExistingRevision(body: body)])
                    if let e = r.first?.error { failures.with { $0.append("\(e)") } }
                } catch {
                    failures.with { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.get(), [])
        let leaves = try coll.conflicts(docID: "shared")
        XCTAssertEqual(leaves.count, 40)
        XCTAssertEqual(leaves.first, "2-t3r9", "the highest rev ID wins")
        XCTAssertEqual(try coll.lastSequence, 41)
        XCTAssertEqual(try coll.openRevs(docID: "shared", revs: nil).count, 40)
        assertSound(db)
    }

    // MARK: open_revs

    func makeBranchy() throws {
        // c: 1-a → 2-b, 2-x (live) and 1-a → 2-e → 3-d (tombstone). Bodies kept for leaves only.
        try insertOK(peerDoc("c", ["2-b", "1-a"], #""v":"b""#))
        try insertOK(peerDoc("c", ["2-x", "1-a"], #""v":"x""#))
        try insertOK(peerDoc("c", ["3-d", "2-e", "1-a"], #""_deleted":true"#))
    }

    func testOpenRevsAllIncludesDeletedLeaves() throws {
        try makeBranchy()
        let all = try coll.openRevs(docID: "c", revs: nil)
        // CouchDB's order: a depth-first walk with siblings ascending (client-shapes seq 13
        // lists 2-0123… before 2-a437…).
        XCTAssertEqual(describe(all), ["ok 2-b", "deleted 3-d", "ok 2-x"])
        XCTAssertEqual(all.count, 3)
        for r in all {
            let o = revisionObject(r)
            XCTAssertEqual(o["_id"], .string("c"))
            if o["_rev"] == .string("3-d") { XCTAssertEqual(o["_deleted"], .bool(true)) } else { XCTAssertNil(o["_deleted"]) }
        }
        // client-shapes seq 40: a deleted document's open_revs=all is its tombstone.
        try insertOK(peerDoc("deleted", ["2-e84cc1ee936866c8ebfe1abdd0ee390a", "1-d83483c8194b6aaeb0b613fddae1f48d"], #""_deleted":true"#))
        var o = RevisionOptions()
        o.revisions = true
        let t = try coll.openRevs(docID: "deleted", revs: nil, options: o)
        XCTAssertEqual(t.count, 1)
        XCTAssertEqual(revisionObject(t.first), obj(#"{"_id":"deleted","_rev":"2-e84cc1ee936866c8ebfe1abdd0ee390a","_deleted":true,"_revisions":{"start":2,"ids":["e84cc1ee936866c8ebfe1abdd0ee390a","d83483c8194b6aaeb0b613fddae1f48d"]}}"#))
        // Unknown document: 404 for all, every given rev missing otherwise.
        assertStatus(.notFound, try coll.openRevs(docID: "no-such-doc", revs: nil))
        XCTAssertEqual(describe(try coll.openRevs(docID: "no-such-doc", revs: ["1-a", "2-b"])), ["missing 1-a", "missing 2-b"])
        assertStatus(.badRequest, try coll.openRevs(docID: "_bad", revs: nil))
    }

    func testOpenRevsGivenRevsMissingAndLatest() throws {
        try makeConflicted()
        // client-shapes seq 14: a leaf and an unknown rev.
        var o = RevisionOptions()
        o.revisions = true
        o.latest = true
        let r = try coll.openRevs(docID: "conflicted", revs: [confA, "9-00000000000000000000000000000009"], options: o)
        XCTAssertEqual(describe(r), ["ok \(confA)", "missing 9-00000000000000000000000000000009"])
        XCTAssertEqual(revisionObject(r.first), obj(#"{"_id":"conflicted","_rev":"\#(confA)","type":"conflicted","value":"edited here","_revisions":{"start":2,"ids":["a43763cb6510199739a3d88e72322572","d3be72beae043af6e69cf3f780dc4ced"]}}"#))
        // latest: an inner revision stands for its leaf descendants.
        XCTAssertEqual(Set(describe(try coll.openRevs(docID: "conflicted", revs: [conf1], options: o))), ["ok \(confA)", "ok \(conf0)"])
        // Asking for the inner one and a leaf it stands for: each leaf once.
        XCTAssertEqual(describe(try coll.openRevs(docID: "conflicted", revs: [confA, conf1], options: o)).count, 2)
        // Without latest: the inner revision itself (its body is kept here).
        let plain = RevisionOptions()
        XCTAssertEqual(describe(try coll.openRevs(docID: "conflicted", revs: [conf1], options: plain)), ["ok \(conf1)"])
        XCTAssertEqual(revisionObject(try coll.openRevs(docID: "conflicted", revs: [conf1], options: plain).first)["value"], .string("original"))
        // A malformed rev is missing, not an error.
        XCTAssertEqual(describe(try coll.openRevs(docID: "conflicted", revs: ["bogus"])), ["missing bogus"])

        try makeBranchy()
        // Without latest, an inner revision without a body is missing…
        XCTAssertEqual(describe(try coll.openRevs(docID: "c", revs: ["2-e"])), ["missing 2-e"])
        // …and with latest it is its tombstone leaf.
        XCTAssertEqual(describe(try coll.openRevs(docID: "c", revs: ["2-e"], options: o)), ["deleted 3-d"])
        XCTAssertEqual(Set(describe(try coll.openRevs(docID: "c", revs: ["1-a"], options: o))), ["ok 2-b", "ok 2-x", "deleted 3-d"])
    }

    // MARK: attachments on read

    /// att: 1-a with one.txt (revpos 1), 2-b adding two.txt (revpos 2).
    func makeAttachmentDoc() throws -> (one: [UInt8], two: [UInt8]) {
        let one = Array("content of one".utf8), two = binary(3000, seed: 3)
        try insertOK(peerDoc("att", ["1-a"], #""_attachments":{"one.txt":{"content_type":"text/plain","revpos":1,"data":"\#(Base64.encode(one))"}}"#))
        try insertOK(peerDoc("att", ["2-b", "1-a"],
                             #""_attachments":{"one.txt":{"content_type":"text/plain","revpos":1,"stub":true},"two.bin":{"content_type":"application/octet-stream","revpos":2,"data":"\#(Base64.encode(two))"}}"#))
        return (one, two)
    }

    func attEntries(_ json: [UInt8]) -> JSONObject { obj(json)["_attachments"]?.objectValue ?? JSONObject() }

    func testInlineAttachmentsHonorAttsSince() throws {
        let (one, two) = try makeAttachmentDoc()
        var o = RevisionOptions()
        o.attachments = .inline
        let all = attEntries(try coll.revision(docID: "att", revID: nil, options: o).json)
        XCTAssertEqual(all["one.txt"]?.objectValue?["data"], .string(Base64.encode(one)))
        XCTAssertEqual(all["two.bin"]?.objectValue?["data"], .string(Base64.encode(two)))
        XCTAssertNil(all["one.txt"]?.objectValue?["stub"])
        XCTAssertEqual(all["two.bin"]?.objectValue?["digest"], .string(BlobDigest.of(two).string))
        XCTAssertEqual(all["two.bin"]?.objectValue?["revpos"], .int(2))
        XCTAssertEqual(Base64.decode(all["two.bin"]?.objectValue?["data"]?.stringValue?.utf8 ?? "".utf8), two)

        o.attsSince = ["1-a"]
        let since1 = attEntries(try coll.revision(docID: "att", revID: nil, options: o).json)
        XCTAssertEqual(since1["one.txt"]?.objectValue?["stub"], .bool(true))
        XCTAssertNil(since1["one.txt"]?.objectValue?["data"])
        XCTAssertEqual(since1["two.bin"]?.objectValue?["data"], .string(Base64.encode(two)))
        // The newest known ancestor counts; revs not on the revision's ancestry do not.
        o.attsSince = ["1-a", "2-b"]
        let since2 = attEntries(try coll.revision(docID: "att", revID: nil, options: o).json)
        XCTAssertEqual(since2["one.txt"]?.objectValue?["stub"], .bool(true))
        XCTAssertEqual(since2["two.bin"]?.objectValue?["stub"], .bool(true))
        o.attsSince = ["7-zzz", "2-other"]
        let unrelated = attEntries(try coll.revision(docID: "att", revID: nil, options: o).json)
        XCTAssertNotNil(unrelated["one.txt"]?.objectValue?["data"])
        XCTAssertNotNil(unrelated["two.bin"]?.objectValue?["data"])
        // Reading 1-a itself: its own attachment is newer than nothing.
        o.attsSince = []
        let old = attEntries(try coll.revision(docID: "att", revID: "1-a", options: o).json)
        XCTAssertEqual(old.members.map(\.key), ["one.txt"])
        XCTAssertEqual(old["one.txt"]?.objectValue?["data"], .string(Base64.encode(one)))
        // Stubs mode: metadata only, following list empty.
        let stubs = try coll.revision(docID: "att", revID: nil)
        XCTAssertEqual(attEntries(stubs.json)["two.bin"]?.objectValue?["stub"], .bool(true))
        XCTAssertEqual(stubs.followingAttachments, [])
    }

    func testFollowingAttachmentsHonorAttsSince() throws {
        let (one, two) = try makeAttachmentDoc()
        var o = RevisionOptions()
        o.attachments = .follows
        o.attsSince = ["1-a"]
        let r = try coll.revision(docID: "att", revID: nil, options: o)
        XCTAssertEqual(r.followingAttachments.map(\.name), ["two.bin"])
        XCTAssertEqual(r.followingAttachments.first?.digest, BlobDigest.of(two))
        XCTAssertEqual(r.followingAttachments.first?.length, UInt64(two.count))
        let e = attEntries(r.json)
        XCTAssertEqual(e["two.bin"]?.objectValue?["follows"], .bool(true))
        XCTAssertNil(e["two.bin"]?.objectValue?["stub"])
        XCTAssertNil(e["two.bin"]?.objectValue?["data"])
        XCTAssertEqual(e["one.txt"]?.objectValue?["stub"], .bool(true))
        XCTAssertNil(e["one.txt"]?.objectValue?["follows"])
        XCTAssertEqual(try readAll(try coll.openBlob(try XCTUnwrap(r.followingAttachments.first).digest)), two)
        // All of them, in the JSON's order.
        o.attsSince = []
        let all = try coll.revision(docID: "att", revID: nil, options: o)
        XCTAssertEqual(all.followingAttachments.map(\.name), attEntries(all.json).members.map(\.key))
        XCTAssertEqual(Set(all.followingAttachments.map(\.name)), ["one.txt", "two.bin"])
        let oneInfo = try XCTUnwrap(all.followingAttachments.first { $0.name == "one.txt" })
        XCTAssertEqual(try readAll(try coll.openBlob(oneInfo.digest)), one)
        // openBlob of content the store does not hold: 404.
        assertStatus(.notFound, try coll.openBlob(BlobDigest.of(Array("never stored".utf8))))
        // Through openRevs as well.
        o.attsSince = ["1-a"]
        guard case .ok(let viaOpenRevs)? = try coll.openRevs(docID: "att", revs: ["2-b"], options: o).first else {
            return XCTFail("open_revs of 2-b")
        }
        XCTAssertEqual(viaOpenRevs.followingAttachments.map(\.name), ["two.bin"])
    }

    // MARK: bulk get

    func testBulkGetPerRequestResults() throws {
        try makeConflicted()
        _ = try makeAttachmentDoc()
        try insertOK(peerDoc("deleted", ["2-e84cc1ee936866c8ebfe1abdd0ee390a", "1-d83483c8194b6aaeb0b613fddae1f48d"], #""_deleted":true"#))
        var o = RevisionOptions()
        o.revisions = true
        o.attachments = .inline
        let items = try coll.bulkGet([
            .init(id: "conflicted"),
            .init(id: "conflicted", rev: conf0),
            .init(id: "deleted"),
            .init(id: "no-such-doc"),
            .init(id: "conflicted", rev: "9-00000000000000000000000000000009"),
            .init(id: "att", rev: "2-b", attsSince: ["1-a"]),
            .init(id: "att", rev: "2-b"),
            .init(id: "_bad"),
            .init(id: "no-such-doc", rev: "1-a"),
        ], options: o)
        XCTAssertEqual(items.map(\.id), ["conflicted", "conflicted", "deleted", "no-such-doc", "conflicted", "att", "att", "_bad", "no-such-doc"])
        XCTAssertEqual(items.map { $0.error?.status }, [nil, nil, nil, .notFound, nil, nil, nil, .badRequest, nil])
        XCTAssertEqual(describe(items[0].results), ["ok \(confA)"])
        XCTAssertEqual(revisionObject(items[0].results.first)["_revisions"], revisionsValue(2, digests([confA, conf1])))
        XCTAssertEqual(describe(items[1].results), ["ok \(conf0)"])
        XCTAssertEqual(items[1].rev, conf0)
        XCTAssertEqual(describe(items[2].results), ["deleted 2-e84cc1ee936866c8ebfe1abdd0ee390a"])
        XCTAssertEqual(items[3].results.count, 0)
        XCTAssertEqual(describe(items[4].results), ["missing 9-00000000000000000000000000000009"])
        let since = revisionObject(items[5].results.first)["_attachments"]?.objectValue
        XCTAssertEqual(since?["one.txt"]?.objectValue?["stub"], .bool(true), "per-request atts_since")
        XCTAssertNotNil(since?["two.bin"]?.objectValue?["data"])
        let noSince = revisionObject(items[6].results.first)["_attachments"]?.objectValue
        XCTAssertNotNil(noSince?["one.txt"]?.objectValue?["data"], "the options' (empty) atts_since")
        XCTAssertEqual(describe(items[8].results), ["missing 1-a"])
        // latest through bulk get: an inner rev stands for its leaves.
        o.latest = true
        o.attachments = .stubs
        let latest = try coll.bulkGet([.init(id: "conflicted", rev: conf1)], options: o)
        XCTAssertEqual(Set(describe(latest[0].results)), ["ok \(confA)", "ok \(conf0)"])
        // A closed database: the call fails as a whole (as every other call does), not
        // as per-document errors a caller would take for missing documents.
        try db.close()
        assertStatus(.badRequest, try coll.bulkGet([.init(id: "conflicted"), .init(id: "att")]))
    }

    // MARK: changes

    func registerTypeFilter() throws {
        try db.setFilter(name: "by-type") { doc, params in
            guard case .object(let o)? = try? JSONParser.parse(String(decoding: doc, as: UTF8.self)) else { return false }
            return o["type"] != nil && o["type"] == params["type"]
        }
    }

    func testChangesByDocIDs() throws {
        for id in ["a", "b", "c", "d"] { _ = try coll.put(docID: id, json: #"{"id":"\#(id)"}"#, parent: nil) }
        var o = ChangesOptions()
        o.docIDs = ["c", "a", "zz"]
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), ["a", "c"], "in sequence order")
        XCTAssertEqual(try coll.changes(since: 1, options: o).map(\.docID), ["c"])
        o.limit = 1
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), ["a"])
        XCTAssertEqual(try coll.changesPage(since: 0, options: o).lastSequence, 1)
        o.limit = -1
        // last_seq goes past the rows dropped by doc_ids.
        XCTAssertEqual(try coll.changesPage(since: 0, options: o).lastSequence, 4)
        XCTAssertEqual(try coll.changes(since: 0, options: ChangesOptions(json: #"{"doc_ids":["d"]}"#)).map(\.sequence), [4])
        // An ID this database cannot hold matches nothing (CouchDB would list its design doc).
        o.docIDs = ["_design/app", "b"]
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), ["b"])
        o.docIDs = ["_design/app"]
        XCTAssertEqual(try coll.changesPage(since: 0, options: o).lastSequence, 4)
        assertStatus(.badRequest, try ChangesOptions(json: #"{"doc_ids":"a"}"#))
    }

    func testNamedFilterWithParamsAndLimit() throws {
        try registerTypeFilter()
        let types = ["x", "y", "x", "y", "y", "x"]          // seqs 1…6
        for (i, t) in types.enumerated() { _ = try coll.put(docID: "d\(i + 1)", json: #"{"type":"\#(t)"}"#, parent: nil) }
        var o = ChangesOptions()
        o.filter = "by-type"
        o.filterParams = JSONObject([("type", .string("x"))])
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), ["d1", "d3", "d6"])
        o.filterParams = JSONObject([("type", .string("y"))])
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), ["d2", "d4", "d5"])
        // limit counts rows that pass the filter.
        o.limit = 2
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), ["d2", "d4"])
        XCTAssertEqual(try coll.changesPage(since: 0, options: o).lastSequence, 4)
        o.filterParams = JSONObject([("type", .string("x"))])
        o.limit = 1
        XCTAssertEqual(try coll.changesPage(since: 0, options: o).lastSequence, 1)
        // limit 0: no rows, as without a filter.
        o.limit = 0
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.docID), [])
        XCTAssertEqual(try coll.changes(since: 0, options: ChangesOptions(json: #"{"limit":0}"#)).map(\.docID), [])
        XCTAssertEqual(try coll.changesPage(since: 0, options: o).entries.count, 0)
        var byID = ChangesOptions()
        byID.docIDs = ["d2"]
        byID.limit = 0
        XCTAssertEqual(try coll.changes(since: 0, options: byID).map(\.docID), [])
        // Without a limit, last_seq advances past the filtered-out rows at the end.
        o.limit = -1
        let page = try coll.changesPage(since: 3, options: o)
        XCTAssertEqual(page.entries.map(\.docID), ["d6"])
        XCTAssertEqual(page.lastSequence, 6)
        o.filterParams = JSONObject([("type", .string("z"))])
        let none = try coll.changesPage(since: 0, options: o)
        XCTAssertEqual(none.entries.count, 0)
        XCTAssertEqual(none.lastSequence, 6, "nothing passes, yet the caller need not scan them again")
        // Through the JSON options, combined with doc_ids.
        let viaJSON = try ChangesOptions(json: #"{"filter":"by-type","filter_params":{"type":"x"},"doc_ids":["d3","d4","d6"]}"#)
        XCTAssertEqual(try coll.changes(since: 0, options: viaJSON).map(\.docID), ["d3", "d6"])
        // Unknown filter: 404; removing one makes it unknown.
        o.filter = "no-such-filter"
        assertStatus(.notFound, try coll.changes(since: 0, options: o))
        assertStatus(.notFound, try coll.visitChanges(since: 0, options: o) { _ in })
        try db.setFilter(name: "by-type", nil)
        o.filter = "by-type"
        assertStatus(.notFound, try coll.changes(since: 0, options: o))
        assertStatus(.badRequest, try db.setFilter(name: "", nil))
    }

    func testFilterSeesTombstonesAndEveryHandle() throws {
        let seen = Locked<[String]>([])
        try db.setFilter(name: "record") { doc, _ in
            seen.with { $0.append(String(decoding: doc, as: UTF8.self)) }
            return true
        }
        let r = try coll.put(docID: "a", json: #"{"v":1}"#, parent: nil)
        _ = try coll.delete(docID: "a", parent: r.revID)
        var o = ChangesOptions()
        o.filter = "record"
        XCTAssertEqual(try coll.changes(since: 0, options: o).map(\.deleted), [true])
        XCTAssertEqual(seen.get().count, 1)
        XCTAssertEqual(obj(seen.get()[0])["_deleted"], .bool(true))
        // Registered per database file: a second handle sees it.
        let db2 = try open()
        XCTAssertEqual(try db2.defaultCollection().changes(since: 0, options: o).count, 1)
    }

    func testStyleAllDocs() throws {
        try makeBranchy()                      // leaves 2-x (current), 2-b, 3-d (deleted)
        _ = try coll.put(docID: "plain", json: "{}", parent: nil)
        let all = try coll.changes(since: 0, options: ChangesOptions(json: #"{"style":"all_docs"}"#))
        XCTAssertEqual(all.map(\.docID), ["c", "plain"])
        XCTAssertEqual(all[0].revs, ["2-x", "2-b", "3-d"],
                       "the current revision first, then every other leaf: live ones, then deleted ones (CouchDB's doc_info order)")
        XCTAssertEqual(all[1].revs.count, 1)
        let main = try coll.changes(since: 0, options: ChangesOptions(json: #"{"style":"main_only"}"#))
        XCTAssertEqual(main[0].revs, ["2-x"])
        var leaves: [[String]?] = []
        try coll.visitChanges(since: 0, options: ChangesOptions(json: #"{"style":"all_docs"}"#)) { leaves.append($0.leaves) }
        XCTAssertEqual(leaves.first, ["2-x", "2-b", "3-d"])
        assertStatus(.badRequest, try ChangesOptions(json: #"{"style":"everything"}"#))
        // With a filter too (filtering needs the body and the tree together).
        try db.setFilter(name: "all") { _, _ in true }
        let filtered = try coll.changes(since: 0, options: ChangesOptions(json: #"{"style":"all_docs","filter":"all"}"#))
        XCTAssertEqual(filtered.first?.revs, ["2-x", "2-b", "3-d"])
        // A live loser of a higher generation than a tombstone: still live ones first.
        try insertOK(peerDoc("c", ["4-z", "3-y", "2-b", "1-a"], #""v":"z""#))
        XCTAssertEqual(try coll.changes(since: 0, options: ChangesOptions(json: #"{"style":"all_docs","doc_ids":["c"]}"#)).first?.revs,
                       ["4-z", "2-x", "3-d"])
    }

    func testWaitForChanges() throws {
        _ = try coll.put(docID: "first", json: "{}", parent: nil)
        // A change already there: at once.
        XCTAssertTrue(try coll.waitForChanges(after: 0, timeoutMs: 10_000))
        // None: false once the timeout passes.
        let t0 = MonotonicTime.now()
        XCTAssertFalse(try coll.waitForChanges(after: 1, timeoutMs: 300))
        let waited = MonotonicTime.now().nanoseconds - t0.nanoseconds
        XCTAssertGreaterThanOrEqual(waited, 290_000_000)
        XCTAssertLessThan(waited, 3_000_000_000)
        // Another thread commits once this one waits: woken promptly, long before the timeout.
        let c = coll!
        let commits = c.store.commits
        let writer = Thread {
            guard eventually(seconds: 20, { commits.waiting > 0 }) else { return }
            _ = try? c.put(docID: "second", json: "{}", parent: nil)
        }
        writer.start()
        let t1 = MonotonicTime.now()
        XCTAssertTrue(try coll.waitForChanges(after: 1, timeoutMs: 20_000))
        let woke = MonotonicTime.now().nanoseconds - t1.nanoseconds
        XCTAssertLessThan(woke, 2_000_000_000, "woken by the commit, not by a poll or the timeout")
        XCTAssertEqual(try coll.lastSequence, 2)
        // A commit through another handle of the same database wakes it too.
        let db2 = try open()
        let c2 = try db2.defaultCollection()
        let writer2 = Thread {
            guard eventually(seconds: 20, { commits.waiting > 0 }) else { return }
            _ = try? c2.insertExistingRevisions([Collection.ExistingRevision(body: JSONObject([("_id", .string("third")), ("_rev", .string("1-a"))]))])
        }
        writer2.start()
        let t2 = MonotonicTime.now()
        XCTAssertTrue(try coll.waitForChanges(after: 2, timeoutMs: 20_000))
        XCTAssertLessThan(MonotonicTime.now().nanoseconds - t2.nanoseconds, 2_000_000_000)
        XCTAssertEqual(try coll.lastSequence, 3)
        // A write in another collection does not end the wait.
        let other = try db.createCollection(scope: nil, name: "other")
        _ = try other.put(docID: "x", json: "{}", parent: nil)
        XCTAssertFalse(try coll.waitForChanges(after: 3, timeoutMs: 200))
    }

    func testWaitForChangesThrowsOnceClosed() throws {
        _ = try coll.put(docID: "first", json: "{}", parent: nil)
        let c = coll!
        let outcome = Locked<String>("running")
        let done = DispatchSemaphore(value: 0)
        let waiter = Thread {
            do {
                let r = try c.waitForChanges(after: 1, timeoutMs: 30_000)
                outcome.set("returned \(r)")
            } catch let e as CBLError {
                outcome.set("threw \(e.status.rawValue)")
            } catch {
                outcome.set("threw \(error)")
            }
            done.signal()
        }
        waiter.start()
        XCTAssertTrue(eventually(seconds: 20) { c.store.commits.waiting > 0 }, "the waiter never waited")
        XCTAssertEqual(outcome.get(), "running")
        let t0 = MonotonicTime.now()
        try db.close()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertLessThan(MonotonicTime.now().nanoseconds - t0.nanoseconds, 3_000_000_000)
        XCTAssertEqual(outcome.get(), "threw 400")
        assertStatus(.badRequest, try c.waitForChanges(after: 0, timeoutMs: 10))
    }

    // MARK: local documents

    func testLocalDocumentsListing() throws {
        XCTAssertEqual(try coll.localDocuments().count, 0)
        let rb = try coll.putLocal(id: "b-checkpoint", json: #"{"seq":1}"#, parent: nil)
        _ = try coll.putLocal(id: "a-checkpoint", json: #"{"session_id":"s","history":[]}"#, parent: nil)
        _ = try coll.putLocal(id: "b-checkpoint", json: #"{"seq":2}"#, parent: rb)
        _ = try coll.putLocal(id: "c-gone", json: "{}", parent: nil)
        try coll.deleteLocal(id: "c-gone", parent: nil)
        let other = try db.createCollection(scope: nil, name: "other")
        _ = try other.putLocal(id: "elsewhere", json: "{}", parent: nil)
        let list = try coll.localDocuments()
        XCTAssertEqual(list.map(\.id), ["a-checkpoint", "b-checkpoint"])
        XCTAssertEqual(list.map(\.rev), ["0-1", "0-2"])
        XCTAssertEqual(obj(list[1].json), obj(#"{"_id":"b-checkpoint","_rev":"0-2","seq":2}"#))
        XCTAssertEqual(obj(list[0].json)["history"], .array([]))
        XCTAssertEqual(try other.localDocuments().map(\.id), ["elsewhere"])
        XCTAssertEqual(try coll.changes(since: 0).count, 0, "local docs are not in the feed")
        try db.close()
        assertStatus(.badRequest, try coll.localDocuments())
    }

    // MARK: purge of leaves

    func testPurgeOneConflictingLeaf() throws {
        try makeConflicted()
        let seqBefore = try coll.lastSequence
        XCTAssertEqual(try currentRev("conflicted"), confA)
        let purged = try coll.purge(docID: "conflicted", revs: [confA])
        XCTAssertEqual(purged, [confA], "the shared ancestor stays")
        XCTAssertEqual(try currentRev("conflicted"), conf0, "the winner is picked again")
        XCTAssertEqual(try coll.doc("conflicted")["value"], .string("edited on another peer"))
        XCTAssertEqual(try coll.conflicts(docID: "conflicted"), [conf0])
        XCTAssertEqual(try coll.history(docID: "conflicted", revID: nil), [conf0, conf1])
        assertStatus(.notFound, try coll.revision(docID: "conflicted", revID: confA))
        XCTAssertEqual(try coll.count, 1)
        // The doc moves to a new sequence with its new current revision.
        XCTAssertEqual(try coll.lastSequence, seqBefore + 1)
        let feed = try coll.changes(since: 0, options: ChangesOptions(json: #"{"style":"all_docs"}"#))
        XCTAssertEqual(feed.map(\.sequence), [seqBefore + 1])
        XCTAssertEqual(feed.first?.revs, [conf0])
        // The purged revision is missing again for revs_diff.
        XCTAssertEqual(try coll.revsDiff([("conflicted", [confA])]).first?.missing, [confA])
        // Unknown revisions and inner revisions: nothing, no new sequence.
        XCTAssertEqual(try coll.purge(docID: "conflicted", revs: ["9-unknown", "junk"]), [])
        XCTAssertEqual(try coll.purge(docID: "conflicted", revs: [conf1]), [], "not a leaf")
        XCTAssertEqual(try coll.purge(docID: "no-such-doc", revs: [conf1]), [])
        XCTAssertEqual(try coll.lastSequence, seqBefore + 1)
        XCTAssertEqual(try coll.history(docID: "conflicted", revID: nil), [conf0, conf1])
        // The last leaf: the document goes, with its ancestors (only the leaf is named, as CouchDB's).
        XCTAssertEqual(try coll.purge(docID: "conflicted", revs: [conf0]), [conf0])
        assertStatus(.notFound, try coll.get(docID: "conflicted", options: .deleted))
        XCTAssertEqual(try coll.count, 0)
        XCTAssertEqual(try coll.changes(since: 0).count, 0)
        XCTAssertEqual(try coll.revsDiff([("conflicted", [conf0])]).first?.possibleAncestors, [])
        // It can come back, from scratch.
        try insertOK(peerDoc("conflicted", [confA, conf1], #""value":"again""#))
        XCTAssertEqual(try coll.history(docID: "conflicted", revID: nil), [confA, conf1])
        assertSound(db)
    }

    func testPurgeLiveLeafLeavesTombstone() throws {
        try insertOK(peerDoc("p", ["2-live", "1-a"], #""v":1"#))
        try insertOK(peerDoc("p", ["3-dead", "2-b", "1-a"], #""_deleted":true"#))
        XCTAssertEqual(try coll.count, 1)
        XCTAssertEqual(Set(try coll.purge(docID: "p", revs: ["2-live", "2-live"])), ["2-live"])
        assertStatus(.notFound, try coll.get(docID: "p"))
        XCTAssertEqual(try currentRev("p"), "3-dead")
        XCTAssertEqual(try coll.count, 0, "the document is now deleted")
        XCTAssertEqual(try coll.changes(since: 0).map(\.deleted), [true])
        // Both leaves at once, in a branchy tree: everything goes.
        try makeBranchy()
        XCTAssertEqual(Set(try coll.purge(docID: "c", revs: ["2-b", "2-x", "3-d"])), ["2-b", "2-x", "3-d"])
        assertStatus(.notFound, try coll.get(docID: "c", options: .deleted))
        assertSound(db)
    }

    // MARK: purge history (CouchDB's purge_seq and _purged_infos)

    func testPurgeHistoryRecordsEveryRequest() throws {
        try makeConflicted()
        XCTAssertEqual(try coll.purgeSequence, 0)
        XCTAssertEqual(try coll.purgedInfos().count, 0)
        _ = try coll.purge(docID: "conflicted", revs: [confA])
        _ = try coll.purge(docID: "no-such-doc", revs: ["1-ffff"])      // recorded though nothing went
        XCTAssertEqual(try coll.purgeSequence, 2)
        let infos = try coll.purgedInfos()
        XCTAssertEqual(infos.map(\.docID), ["conflicted", "no-such-doc"])
        XCTAssertEqual(infos.map(\.revs), [[confA], ["1-ffff"]])
        // Compaction keeps it; the limit trims the oldest at the next purge, not the sequence.
        try db.compact()
        XCTAssertEqual(try coll.purgeSequence, 2)
        XCTAssertEqual(try db.purgedInfosLimit, 1000)
        try db.setPurgedInfosLimit(2)
        assertStatus(.badRequest, try db.setPurgedInfosLimit(0))
        XCTAssertEqual(try db.purgedInfosLimit, 2)
        _ = try coll.purge(docID: "conflicted", revs: [conf0])
        XCTAssertEqual(try coll.purgeSequence, 3)
        XCTAssertEqual(try coll.purgedInfos().map(\.docID), ["no-such-doc", "conflicted"])
        // Another collection keeps its own.
        let other = try db.createCollection(scope: nil, name: "other")
        XCTAssertEqual(try other.purgeSequence, 0)
        _ = try other.purge(docID: "x", revs: ["1-a"])
        XCTAssertEqual(try other.purgeSequence, 1)
        XCTAssertEqual(try coll.purgeSequence, 3)
        // A deleted collection's history goes with it.
        try db.deleteCollection(scope: nil, name: "other")
        XCTAssertEqual(try db.createCollection(scope: nil, name: "other").purgeSequence, 0)
        assertSound(db)
    }

    /// A file written by a cblite before the purge history: read-only it has none (sequence
    /// 0); the first read-write open adds the table, as it does the rest of the schema.
    func testPurgeHistoryOfAnOlderFile() throws {
        let old = try open("older")
        try old.store.write { conn, _ in try conn.exec("DROP TABLE purge_history") }
        try old.close()
        let reader = try open("older", options: #"{"read_only":true}"#)
        XCTAssertEqual(try reader.defaultCollection().purgeSequence, 0)
        XCTAssertEqual(try reader.defaultCollection().purgedInfos().count, 0)
        try reader.close()
        let writer = try open("older")
        _ = try writer.defaultCollection().purge(docID: "x", revs: ["1-a"])
        XCTAssertEqual(try writer.defaultCollection().purgeSequence, 1)
        try writer.close()
    }

    // MARK: database identity

    func testDatabaseUUID() throws {
        let u = try db.uuid
        XCTAssertEqual(u.count, 36)
        XCTAssertEqual(try db.uuid, u)
        let start = db.instanceStartTime
        XCTAssertLessThan(abs(unixTimeMicrosNow() - start), 600_000_000, "microseconds since 1970, now-ish")
        try db.close()
        assertStatus(.badRequest, try db.uuid)
        let again = try open()
        XCTAssertEqual(try again.uuid, u, "stable across reopen")
        let other = try open("db2")
        XCTAssertNotEqual(try other.uuid, u)
        XCTAssertEqual(try other.uuid.count, 36)
    }
}

/// CouchDB stores a 32-hex-digit revision digest as bytes: upper and lower case are one
/// revision there (issue 11's ninth conflict shape), and so here.
final class RevisionCaseTests: CBLCollectionTestCase {
    func testUpperCaseHexDigestIsTheSameRevisionAsLowerCase() throws {
        XCTAssertEqual(RevID("2-ABCDEF0123456789ABCDEF0123456789")?.string, "2-abcdef0123456789abcdef0123456789")
        // Other digests keep their case (peers may use any printable digest).
        XCTAssertEqual(RevID("2-ABC")?.string, "2-ABC")
        XCTAssertEqual(RevID("2-ABCDEF0123456789ABCDEF012345678G")?.string, "2-ABCDEF0123456789ABCDEF012345678G")
        let lower = "{\"_id\":\"d\",\"_rev\":\"1-abcdef0123456789abcdef0123456789\",\"v\":1}"
        let upper = "{\"_id\":\"d\",\"_rev\":\"1-ABCDEF0123456789ABCDEF0123456789\",\"v\":1}"
        for json in [lower, upper] {
            let r = try coll.insertExistingRevisions([Collection.ExistingRevision(body: obj(json))])
            XCTAssertNil(r[0].error)
        }
        var o = ChangesOptions()
        o.allRevs = true
        XCTAssertEqual(try coll.changes(since: 0, options: o).first?.revs, ["1-abcdef0123456789abcdef0123456789"])
        // Nothing is missing: revs_diff leaves the document out, as CouchDB does.
        XCTAssertTrue(try coll.revsDiff([("d", ["1-ABCDEF0123456789ABCDEF0123456789"])]).isEmpty)
        XCTAssertEqual(try coll.revsDiff([("d", ["1-ABCDEF0123456789ABCDEF012345678A"])]).first?.missing, ["1-abcdef0123456789abcdef012345678a"])
    }
}
